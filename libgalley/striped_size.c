/*
 * striped_size.c -- a striped file's size: of an open (its forks'
 * sizes), of a name (gfs_striped_stat), truncate and sync.
 *
 * Threads: any; gc_st_lock only around table access (striped_internal.h).
 */
#include "striped_internal.h"

#include "gclock.h"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

/* --------------------------------------------------------- size -------- */

/* The logical size of a striped file whose forks have these sizes
 * (each >= 0, as the server answers them). */
int64_t gc_st_logical_size(const gfs_layout *lay, const int64_t *sizes)
{
    uint64_t u[GFS_MAX_SUBFILES];
    for (int i = 0; i < lay->nsubfiles; i++)
        u[i] = (uint64_t)sizes[i];
    return (int64_t)gp_logical_size((uint64_t)lay->unit,
                                    (unsigned)lay->nsubfiles, u);
}

static int list_sizes(const char *name, const gp_record *r, const char *fork,
                      gp_record *look, int *lookrc, int64_t *sizes,
                      int64_t *mtime);

/* Every fork's size: asked of the open forks (FORK_SIZE) when this id
 * has opened them all, else listed by the record's header ids (FORK_LIST,
 * as a stat does: no fork opened for it; a subfile gone from its server
 * while this id has its fork open -- removed by another process -- is
 * then asked through the forks).  *mtime (when mtime): the
 * newest of their modification times (ns; 0: none written). */
int gc_st_fork_sizes(int sid, gc_striped *s, int64_t *sizes, int64_t *mtime)
{
    bool all = true;
    for (int i = 0; i < s->lay.nsubfiles; i++)
        all = all && s->kids[i] >= 0;
    if (!all) {
        gc_file *f = malloc(sizeof(*f));
        int rc = f ? gc_file_get(s->fid, f) : -ENOMEM;
        if (!rc)
            rc = list_sizes(f->name, &f->rec, s->lay.fork, NULL, NULL, sizes,
                            mtime);
        free(f);
        if (rc != GFS_ESTALE)
            return rc;
    }
    int rc = gc_st_forks(sid, s, NULL, NULL);
    if (rc)
        return rc;
    gc_fork k[GFS_MAX_SUBFILES];
    for (int i = 0; i < s->lay.nsubfiles; i++) {
        int rc = gc_fork_get(s->kids[i], &k[i]);
        if (rc)
            return rc;
    }
    int64_t mt[GFS_MAX_SUBFILES];
    rc = gc_fork_sizes(k, s->lay.nsubfiles, sizes, mt);
    if (mtime)
        *mtime = 0;
    for (int i = 0; !rc && mtime && i < s->lay.nsubfiles; i++)
        if (mt[i] > *mtime)
            *mtime = mt[i];
    return rc;
}

/* name's record into rec: the one leased here (no request), else looked
 * up (and leased); 0 or a gfs error. */
static int record_of(const char *name, gp_record *rec)
{
    if (gc_rcache_leased(name, rec, NULL, NULL) == RC_LEASED)
        return 0;
    return gc_lease_lookup(name, rec);
}

/* *mtime (open file fid's data's) becomes the file's modification time,
 * with the one set in its name's record now (else the one it was opened
 * with), as gfs_striped_mode reads its mode.  0 or a gfs error. */
static int set_mtime_of(int fid, int64_t *mtime)
{
    gc_file *f = malloc(sizeof(*f));
    gp_record *rec = malloc(sizeof(*rec));
    int rc = f && rec ? gc_file_get(fid, f) : -ENOMEM;
    if (!rc)
        *mtime = gc_mtime_of(record_of(f->name, rec) ? &f->rec : rec, *mtime);
    free(f);
    free(rec);
    return rc;
}

/* An open file's size, and (when mtime) its modification time (0 for
 * the locality layout: not kept). */
static int64_t size_mtime(int sid, int64_t *mtime)
{
    gc_striped s;
    int rc = gc_st_get(sid, &s);
    if (mtime)
        *mtime = 0;
    if (rc)
        return rc;
    if (s.loc)
        return gc_local_size(s.loc);
    int64_t sizes[GFS_MAX_SUBFILES];
    rc = gc_st_fork_sizes(sid, &s, sizes, mtime);
    if (!rc && mtime)
        rc = set_mtime_of(s.fid, mtime);
    if (rc)
        return rc;
    return gc_st_logical_size(&s.lay, sizes);
}

int64_t gc_striped_size(int sid)
{
    return size_mtime(sid, NULL);
}

int gfs_striped_size_mtime(int sid, int64_t *size, int64_t *mtime_ns)
{
    int64_t n = size_mtime(sid, mtime_ns);
    if (n < 0)
        return (int)n;
    if (size)
        *size = n;
    return 0;
}

/* Size and modification time of subfile i's fork `fork` from a
 * FORK_LIST reply. */
static int size_in_list(gc_pending *p, const char *fork, int64_t *size,
                        int64_t *mtime)
{
    gc_tail t;
    gp_FORK_LIST_rep m;
    int rc = gc_FORK_LIST_recv(p, &m, &t);
    if (rc)
        return rc;
    int found = -ENOENT;
    for (uint32_t i = 0; i < m.n && !t.r.err; i++) {
        gp_FORK_item it;
        if (gp_FORK_item_decode(&t.r, &it))
            break;
        if (strcmp(it.fork, fork) == 0) {
            found =
                it.size <= INT64_MAX && it.mtime <= INT64_MAX ? 0 : GFS_EPROTO;
            *size = (int64_t)it.size;
            *mtime = (int64_t)it.mtime;
        }
    }
    rc = gc_tail_end(&t);
    return rc ? rc : found;
}

/* Every subfile's fork list at once, and (look) the record's lookup with
 * them: sizes[i] is the size of fork `fork` in subfile i, *mtime (when
 * mtime) the newest of theirs modification times.  0 or the first error
 * of the lists; the lookup's own result in *lookrc. */
static int list_sizes(const char *name, const gp_record *r, const char *fork,
                      gp_record *look, int *lookrc, int64_t *sizes,
                      int64_t *mtime)
{
    int n = (int)r->nsub, rc = 0;
    gc_pending *p = calloc((size_t)n + 1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    if (look)
        gc_NS_LOOKUP_send(gc_server_conn(gc_meta_server(name)),
                          &(gp_NS_LOOKUP_req){.name = name}, &p[n]);
    for (int i = 0; i < n; i++)
        gc_FORK_LIST_send(gc_server_conn((int)r->server[i]),
                          &(gp_FORK_LIST_req){.hid = r->hid[i]}, &p[i]);
    if (look)
        *lookrc =
            gc_NS_LOOKUP_recv(&p[n], &(gp_NS_LOOKUP_rep){.rec = look}, NULL);
    if (mtime)
        *mtime = 0;
    for (int i = 0; i < n; i++) {
        int64_t mt = 0;
        int k = size_in_list(&p[i], fork, &sizes[i], &mt);
        if (k && !rc)
            rc = k;
        if (mtime && mt > *mtime)
            *mtime = mt;
    }
    free(p);
    return rc;
}

/* A record's type, as st_mode's. */
static unsigned type_of(const gp_record *rec, uint64_t *rdev)
{
    char t[1];
    unsigned type = gc_node_of(rec, rdev);
    return gc_link_of(rec, t, 0) >= 0 ? S_IFLNK : type;
}

/* All stat shows of a record, with its data's size and time (data: 0 for
 * none asked). */
static void info_of(const gp_record *rec, const gfs_layout *lay, int64_t size,
                    int64_t data, gfs_striped_info *st)
{
    uint64_t rdev;
    unsigned type = type_of(rec, &rdev);
    *st = (gfs_striped_info){.size = size,
                             .mtime_ns = gc_mtime_of(rec, data),
                             .mode = type | gc_mode_of(rec),
                             .layout = *lay,
                             .rdev = rdev,
                             .ctime_ns = gc_ctime_of(rec, data),
                             .atime_ns = gc_atime_of(rec)};
    gc_owner_of(rec, &st->uid, &st->gid);
}

/* A striped file's logical size by name, without opening its forks: the
 * record, then every subfile's fork list at once (two round trips; one
 * when the record is cached: the lookup goes with the lists, whose
 * answers count only if the record is still the cached one).  The
 * locality layout's size needs its block maps: opened as for I/O. */
static int striped_stat(const char *name, gfs_striped_info *st, bool data);

int gc_striped_stat(const char *name, gfs_striped_info *st)
{
    return striped_stat(name, st, false);
}

/* gc_striped_stat; with data, the data's modification time (not the one
 * set with gfs_set_mtime). */
static int striped_stat(const char *name, gfs_striped_info *st, bool data)
{
    int rc = gc_check_init();
    if (!rc)
        rc = gc_check_name(name, GFS_NAME_MAX);
    if (rc)
        return rc;
    gp_record *rec = NULL;
    gp_record *cached = malloc(sizeof(*cached));
    gp_record *from = NULL; /* the record whose subfiles are asked */
    int64_t *sizes = NULL;
    gfs_layout lay;
    int64_t total = 0, mt = 0;
    if (!cached) {
        rc = -ENOMEM;
        goto out_free;
    }
    bool asked = true; /* (a request was made: stat-ahead may follow) */
    int hit = gc_rcache_leased(name, cached, &total, &mt);
    if (hit == RC_LEASED && total >= 0 && gc_st_layout_of(cached, &lay) == 0 &&
        !gc_st_is_local_layout(cached)) {
        from = cached;
        asked = false;
        goto out_done; /* the record and its size under a lease: no
                        * request (rcache.c says what that guarantees) */
    }
    rec = malloc(sizeof(*rec));
    sizes = calloc(GFS_MAX_SUBFILES, sizeof(*sizes));
    if (!rec || !sizes) {
        rc = -ENOMEM;
        goto out_free;
    }
    bool known = false; /* rec holds the metadata server's record */
    if (hit == RC_LEASED && gc_st_layout_of(cached, &lay) == 0 &&
        !gc_st_is_local_layout(cached)) {
        from = cached; /* the record under a lease: no lookup, only sizes */
        goto ask_sizes;
    }
    total = 0;
    if (hit != RC_NONE && gc_st_layout_of(cached, &lay) == 0 &&
        !gc_st_is_local_layout(cached)) {
        int lookrc;
        int k = list_sizes(name, cached, lay.fork, rec, &lookrc, sizes, &mt);
        if (lookrc) {
            gc_rcache_drop(name);
            rc = lookrc;
            goto out_free;
        }
        if (!k && gc_record_same(rec, cached)) {
            from = cached;
            goto out_size;
        }
        gc_rcache_put(name, rec); /* changed: from the fresh record */
        known = true;
    }
    if (!known || rec->repl.ncopy > 1) {
        /* not cached, or replicated: the record of a majority of its
         * copies (repl.c), the metadata server's for one copy */
        rc = gc_lease_lookup(name, rec);
        if (rc)
            goto out_free;
    }
    from = rec;
    rc = gc_st_layout_of(rec, &lay);
    if (rc)
        goto out_free;
    if (gc_st_is_local_layout(rec) || rec->repl.ncopy > 1) {
        /* the locality layout's block maps, a replicated file's copies
         * in sync: opened as for I/O */
        int fid = gc_file_register(name, rec);
        int sid = fid < 0 ? fid : gc_st_from_fid(fid, NULL); /* takes fid */
        if (sid < 0) {
            rc = sid;
            goto out_free;
        }
        total = size_mtime(sid, &mt);
        gc_striped_close(sid);
        rc = total < 0 ? (int)total : 0;
        goto out_done;
    }
ask_sizes:;
    int64_t t0 = g_now_ms();
    uint64_t closes = gc_rcache_closes();
    rc = list_sizes(name, from, lay.fork, NULL, NULL, sizes, &mt);
    if (rc)
        goto out_free;
    total = gc_st_logical_size(&lay, sizes);
    if (total >= 0) /* (kept only under a lease) */
        gc_rcache_size(name, total, mt, t0, closes, false);
    rc = total < 0 ? (int)total : 0;
    goto out_done;
out_size:
    total = gc_st_logical_size(&lay, sizes);
    rc = total < 0 ? (int)total : 0;
out_done:;
    char link[GFS_LINK_MAX];
    int linklen = rc ? -1 : gc_link_of(from, link, sizeof(link));
    if (!rc) {
        info_of(from, &lay, total, mt, st);
        if (data) /* (the data's own time, not one set) */
            st->mtime_ns = mt;
        if (linklen >= 0) {
            st->size = linklen;
            st->mode = S_IFLNK | 0777;
        }
    }
    if (!rc && asked)
        gc_statahead(name); /* (the next stats of its directory) */
out_free:
    free(rec);
    free(cached);
    free(sizes);
    return rc;
}

int gfs_striped_stat_mtime(const char *name, int64_t *size, gfs_layout *layout,
                           int64_t *mtime_ns)
{
    gfs_striped_info st;
    int rc = gc_striped_stat(name, &st);
    if (rc)
        return rc;
    if (size)
        *size = st.size;
    if (layout)
        *layout = st.layout;
    if (mtime_ns)
        *mtime_ns = st.mtime_ns;
    return 0;
}

int gfs_striped_stat(const char *name, int64_t *size, gfs_layout *layout)
{
    return gfs_striped_stat_mtime(name, size, layout, NULL);
}

int gfs_striped_stat_all(const char *name, gfs_striped_info *st)
{
    return st ? gc_striped_stat(name, st) : -EINVAL;
}

int gc_striped_truncate(int sid, int64_t size)
{
    gc_striped s;
    int rc = gc_st_get(sid, &s);
    if (rc)
        return rc;
    if (size < 0)
        return -EINVAL;
    if (s.loc)
        return gc_local_truncate(s.loc, sid, s.kids, size);
    rc = gc_st_forks(sid, &s, NULL, NULL);
    if (rc)
        return rc;
    for (int i = 0; i < s.lay.nsubfiles; i++) {
        uint64_t fs =
            gp_fork_size((uint64_t)s.lay.unit, (unsigned)s.lay.nsubfiles,
                         (unsigned)i, (uint64_t)size);
        int k = gc_fork_truncate(s.kids[i], (int64_t)fs);
        if (k && !rc)
            rc = k;
    }
    return rc;
}

/* The logs of the servers holding file fid's record: its creation and
 * attributes durable (LOG_SYNC; a replicated record's copies by a
 * majority, repl.c).  0 or a gfs error. */
static int sync_record(int fid)
{
    gc_file *f = malloc(sizeof(*f));
    int rc = f ? gc_file_get(fid, f) : -ENOMEM;
    if (!rc)
        rc = f->rec.repl.ncopy > 1
                 ? gc_repl_record_sync(f->name)
                 : gc_log_sync_one(gc_meta_server(f->name), NULL, NULL);
    free(f);
    return rc;
}

int gfs_striped_sync(int sid)
{
    gc_striped s;
    int rc = gc_st_get(sid, &s);
    if (!rc)
        rc = gc_st_forks(sid, &s, NULL,
                         NULL); /* (other processes' writes too) */
    if (rc)
        return rc;
    rc = gc_forks_sync(s.kids, s.lay.nsubfiles);
    if (s.loc && !rc)
        rc = gc_local_sync(s.loc);
    if (!rc) /* the record's servers' logs (the forks' made theirs) */
        rc = sync_record(s.fid);
    return rc;
}

/* An open file's record now: its name's, so another process's gfs_chmod
 * or gfs_chown shows, else (a removed name) the one it was opened with;
 * *out is malloc'ed (the caller frees it).  0 or a gfs error. */
static int record_now(int sid, gp_record **out)
{
    gc_striped s;
    int rc = gc_st_get(sid, &s);
    gc_file *f = rc ? NULL : malloc(sizeof(*f));
    gp_record *rec = rc ? NULL : malloc(sizeof(*rec));
    if (!rc && (!f || !rec))
        rc = -ENOMEM;
    if (!rc)
        rc = gc_file_get(s.fid, f);
    if (!rc && record_of(f->name, rec))
        memcpy(rec, &f->rec, sizeof(*rec));
    free(f);
    if (rc) {
        free(rec);
        rec = NULL;
    }
    *out = rec;
    return rc;
}

int gfs_striped_mode_owner(int sid, unsigned *mode, int64_t *uid, int64_t *gid)
{
    gp_record *rec;
    int rc = record_now(sid, &rec);
    if (rc)
        return rc;
    uint64_t rdev;
    if (mode)
        *mode = type_of(rec, &rdev) | gc_mode_of(rec);
    if (uid && gid)
        gc_owner_of(rec, uid, gid);
    free(rec);
    return 0;
}

int gfs_striped_mode(int sid, unsigned *mode)
{
    return gfs_striped_mode_owner(sid, mode, NULL, NULL);
}

int gfs_striped_stat_open(int sid, gfs_striped_info *st)
{
    gc_striped s;
    int rc = st ? gc_st_get(sid, &s) : -EINVAL;
    if (rc)
        return rc;
    int64_t data = 0, size;
    if (s.loc) {
        size = gc_local_size(s.loc);
    } else {
        int64_t sizes[GFS_MAX_SUBFILES];
        rc = gc_st_fork_sizes(sid, &s, sizes, &data);
        size = rc ? rc : gc_st_logical_size(&s.lay, sizes);
    }
    if (size < 0)
        return (int)size;
    gp_record *rec;
    rc = record_now(sid, &rec);
    if (rc)
        return rc;
    info_of(rec, &s.lay, size, data, st);
    free(rec);
    return 0;
}

/* name's record (record_of) into *out, malloc'ed (the caller frees it);
 * 0 or a gfs error. */
static int record_by_name(const char *name, gp_record **out)
{
    int rc = gc_check_init();
    if (!rc)
        rc = gc_check_name(name, GFS_NAME_MAX);
    gp_record *rec = rc ? NULL : malloc(sizeof(*rec));
    if (!rc && !rec)
        rc = -ENOMEM;
    if (!rc)
        rc = record_of(name, rec);
    if (rc) {
        free(rec);
        rec = NULL;
    }
    *out = rec;
    return rc;
}

int gfs_stat_record(const char *name, gfs_striped_info *st)
{
    gp_record *rec;
    int rc = st ? record_by_name(name, &rec) : -EINVAL;
    if (rc)
        return rc;
    gfs_layout lay;
    rc = gc_st_layout_of(rec, &lay);
    if (!rc)
        info_of(rec, &lay, 0, 0, st);
    free(rec);
    return rc;
}

int gfs_readlink(const char *name, char *buf, size_t len)
{
    gp_record *rec;
    int rc = record_by_name(name, &rec);
    if (rc)
        return rc;
    int in_data = gc_link_data_len(rec);
    rc = in_data > 0 ? gc_link_read_data(name, in_data, buf, len)
                     : gc_link_of(rec, buf, len);
    free(rec);
    return rc;
}

int gfs_set_mtime(const char *name, int64_t mtime_ns)
{
    return mtime_ns < 0 ? -EINVAL : gfs_set_times(name, -1, mtime_ns);
}

int gfs_set_times(const char *name, int64_t atime_ns, int64_t mtime_ns)
{
    gfs_striped_info st;
    int rc = atime_ns < -1 || mtime_ns < -1 ? -EINVAL
                                            : striped_stat(name, &st, true);
    if (rc)
        return rc;
    char mv[48], av[24];
    const char *keys[2], *values[2];
    int n = 0;
    if (mtime_ns >= 0) { /* (with the data's time now) */
        snprintf(mv, sizeof(mv), "%" PRId64 ":%" PRId64, mtime_ns, st.mtime_ns);
        keys[n] = GFS_MTIME_ATTR;
        values[n++] = mv;
    }
    if (atime_ns >= 0) {
        snprintf(av, sizeof(av), "%" PRId64, atime_ns);
        keys[n] = GFS_ATIME_ATTR;
        values[n++] = av;
    }
    return n ? gc_set_attrs_changed(name, n, keys, values) : 0;
}
