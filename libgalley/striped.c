/*
 * striped.c -- SFIO-style striped linear files on top of forks: the layout
 * the MPI-IO driver and `galley put/get` use.  A request is split into
 * fragments per subfile, each subfile's fragments are sorted by fork offset
 * (adjacent ones merge into one wire extent in io.c), and one transfer per
 * server runs straight from/to user memory.
 *
 * Threads: any; the striped-id table has its own lock (st_lock), taken
 * only around table access, never across network calls.
 */
#include "internal.h"
#include "layout.h"
#include "transport.h"

#include "gclock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct gc_striped {
    int fid;
    gfs_layout lay;
    int kids[GFS_MAX_SUBFILES]; /* -1: not opened yet (st_forks) */
    gc_local *loc;  /* the locality layout's maps, NULL when striped */
    unsigned asked; /* bit 1 << op: striped_ask_all done for op */
    gc_dreader *rd; /* its forks' direct descriptors (fast_read), or NULL */
    uint64_t rd_ns; /* when rd was last built (0: never) */
} gc_striped;

static pthread_mutex_t st_lock = PTHREAD_MUTEX_INITIALIZER;
static gc_idtab st_tab =
    GC_IDTAB_INIT(&st_lock, gc_striped, GC_KIND_STRIPED, 8);

static int st_get(int sid, gc_striped *out)
{
    int rc = gc_check_init();
    return rc ? rc : gc_idtab_get(&st_tab, sid, out);
}

void gc_striped_shutdown(void)
{
    pthread_mutex_lock(&st_lock);
    for (int sid = -1; (sid = gc_idtab_next(&st_tab, sid)) >= 0;) {
        gc_striped *t = gc_idtab_at(&st_tab, sid);
        gc_local_free(t->loc);
        gc_direct_reader_free(t->rd); /* before the grants: their bytes */
    }
    gc_idtab_clear(&st_tab); /* ids from before stay unknown */
    pthread_mutex_unlock(&st_lock);
}

/* ------------------------------------------------------- lazy forks -- */
/*
 * A striped file of one copy opened under a lease (its record cannot
 * change unseen: rcache.c) opens no fork at open: each subfile's fork is
 * opened by the first call that needs it, here, the one place this layer
 * turns a subfile into a fork id.  So an open and a close of a leased
 * file send nothing, and a close releases only the forks its I/O opened.
 * When another process removes the name, the lease's recall reaches this
 * process first, and the forks still missing are opened before it is
 * acknowledged (gc_striped_pin): the subfiles' servers then keep an open
 * file's data until its close, as they do for forks opened at open.
 * GALLEY_MD_LAZY=0 opens every fork at open, as before.
 */

static bool lazy_on(void)
{
    static int on = -1; /* (read once) */
    if (on < 0) {
        const char *e = getenv("GALLEY_MD_LAZY");
        on = !(e && strcmp(e, "0") == 0);
    }
    return on;
}

/* Make s->kids[i] an open fork for every subfile i with want[i] (want
 * NULL: every subfile).  The missing ones are opened at once (one round
 * trip) and published in sid's table entry; when two threads race, one
 * set is kept and the other closed.  Runs on the calling thread (a
 * non-blocking op's worker too): connection calls only, no lock held
 * across them. */
static int st_forks(int sid, gc_striped *s, const bool *want, bool *failed)
{
    int n = s->lay.nsubfiles, nn = 0;
    int subs[GFS_MAX_SUBFILES], kids[GFS_MAX_SUBFILES];
    for (int i = 0; i < n; i++)
        if (s->kids[i] < 0 && (!want || want[i]))
            nn++;
    if (!nn)
        return 0;
    /* another thread may have opened some since s was copied */
    pthread_mutex_lock(&st_lock);
    gc_striped *t = gc_idtab_at(&st_tab, sid);
    bool live = t != NULL;
    if (live)
        memcpy(s->kids, t->kids, (size_t)n * sizeof(*s->kids));
    pthread_mutex_unlock(&st_lock);
    if (!live)
        return GFS_EBADID;
    nn = 0;
    for (int i = 0; i < n; i++)
        if (s->kids[i] < 0 && (!want || want[i]))
            subs[nn++] = i;
    if (!nn)
        return 0;
    int rc = gc_forks_open(s->fid, s->lay.fork, nn, subs, kids);
    if (rc) {
        for (int j = 0; failed && j < nn; j++)
            failed[subs[j]] = kids[j] < 0; /* whose open failed */
        return rc;
    }
    int extra[GFS_MAX_SUBFILES], nextra = 0;
    pthread_mutex_lock(&st_lock);
    t = gc_idtab_at(&st_tab, sid);
    for (int j = 0; j < nn; j++) {
        int i = subs[j];
        if (t && t->kids[i] < 0)
            t->kids[i] = kids[j];
        else
            extra[nextra++] = kids[j]; /* another thread's won, or closed */
        s->kids[i] = t ? t->kids[i] : -1;
    }
    pthread_mutex_unlock(&st_lock);
    gc_all_close(nextra, extra);
    return t ? 0 : GFS_EBADID;
}

void gc_striped_pin(const char *name)
{
    int cap = 0, n = 0, *sids = NULL;
    pthread_mutex_lock(&st_lock);
    for (int sid = -1; (sid = gc_idtab_next(&st_tab, sid)) >= 0;) {
        gc_striped *t = gc_idtab_at(&st_tab, sid);
        bool missing = false;
        for (int i = 0; t && i < t->lay.nsubfiles && !missing; i++)
            missing = t->kids[i] < 0;
        if (!missing)
            continue;
        if (n == cap) {
            int *ns = realloc(sids, (size_t)(cap ? cap * 2 : 16) * sizeof(*ns));
            if (!ns)
                break;
            sids = ns;
            cap = cap ? cap * 2 : 16;
        }
        sids[n++] = sid;
    }
    pthread_mutex_unlock(&st_lock);
    gc_file *f = n ? malloc(sizeof(*f)) : NULL;
    gc_striped *s = n ? malloc(sizeof(*s)) : NULL;
    for (int j = 0; j < n && f && s; j++)
        if (gc_idtab_get(&st_tab, sids[j], s) == 0 &&
            gc_file_get(s->fid, f) == 0 && strcmp(f->name, name) == 0)
            st_forks(sids[j], s, NULL,
                     NULL); /* (an error: as before, at I/O) */
    free(f);
    free(s);
    free(sids);
}

/* ------------------------------------------------------ create / open -- */

int gc_create_striped(const char *name, int nsubfiles, const int *servers,
                      int64_t unit, const char *fork, int ncopy)
{
    if (!fork)
        fork = GFS_DEFAULT_STRIPE_FORK;
    if (unit <= 0)
        unit = GFS_DEFAULT_STRIPE_UNIT;
    int rc = gc_check_name(fork, GFS_FORK_NAME_MAX);
    if (rc)
        return rc;
    if (strchr(fork, '\n') || unit > (INT64_C(1) << 40))
        return -EINVAL;
    char attrs[512];
    snprintf(attrs, sizeof(attrs),
             "galley.stripe_unit=%" PRId64 "\ngalley.stripe_fork=%s\n", unit,
             fork);
    /* the record, every subfile and its fork: two round trips */
    return gc_create_file_fork(name, nsubfiles, servers, attrs, fork, ncopy);
}

static bool is_local_layout(const gp_record *rec);

/* The striped layout kept in a file's record: 0 or GFS_ELAYOUT. */
static int layout_of(const gp_record *rec, gfs_layout *lay)
{
    char v[GFS_FORK_NAME_MAX + 1];
    if (gc_attr_lookup(rec->attrs, "galley.stripe_unit", v, sizeof(v)) < 0)
        return GFS_ELAYOUT;
    char *end;
    long long unit = strtoll(v, &end, 10);
    if (*end || unit <= 0)
        return GFS_ELAYOUT;
    if (gc_attr_lookup(rec->attrs, "galley.stripe_fork", lay->fork,
                       sizeof(lay->fork)) <= 0)
        return GFS_ELAYOUT;
    lay->unit = unit;
    lay->nsubfiles = (int)rec->nsub;
    lay->kind = is_local_layout(rec) ? GFS_LAYOUT_LOCAL : GFS_LAYOUT_STRIPED;
    return 0;
}

static bool is_local_layout(const gp_record *rec)
{
    char v[32];
    return gc_attr_lookup(rec->attrs, "galley.layout", v, sizeof(v)) > 0 &&
           strcmp(v, "local") == 0;
}

/* May a striped file with record rec, opened as name, open its forks
 * lazily: one copy, the striped layout, and rec held under a lease. */
static bool lazy_ok(const char *name, const gp_record *rec,
                    const gfs_layout *lay)
{
    if (!lazy_on() || rec->repl.ncopy > 1 || lay->kind != GFS_LAYOUT_STRIPED)
        return false;
    gp_record *r = malloc(sizeof(*r));
    bool ok = r && gc_rcache_leased(name, r, NULL) == RC_LEASED &&
              gc_record_same(r, rec);
    free(r);
    return ok;
}

/* Make a striped id for an open file id (taking ownership of fid), with
 * its forks opened here, or (kids) already, or (leased record) at their
 * first use (st_forks). */
static int striped_from_fid(int fid, const int *kids)
{
    gc_striped s = {.fid = fid};
    gc_file f;
    int rc = gc_file_get(fid, &f);
    if (!rc)
        rc = layout_of(&f.rec, &s.lay);
    if (rc)
        goto out_close;
    if (kids)
        memcpy(s.kids, kids, (size_t)s.lay.nsubfiles * sizeof(*kids));
    else if (lazy_ok(f.name, &f.rec, &s.lay))
        for (int i = 0; i < s.lay.nsubfiles; i++)
            s.kids[i] = -1;
    else
        rc = gc_all_open(fid, s.lay.fork, s.kids);
    if (rc)
        goto out_close;
    rc = gc_local_open(fid, &s.lay, &s.loc);
    if (rc)
        goto out_close;

    int sid = gc_idtab_insert(&st_tab, &s);
    if (sid < 0) {
        gc_local_free(s.loc);
        rc = sid; /* (its forks go with fid) */
        goto out_close;
    }
    return sid;

out_close:
    gc_file_close(fid); /* and the forks registered with it */
    return rc;
}

/* Open with a record from the cache (rcache.c): the lookup and every
 * subfile's FORK_OPEN go at once (one round trip), and the forks are
 * kept when the record that comes back is the cached one.  Otherwise
 * they are closed and the open goes on from the fresh record. */
static int open_cached(const char *name, const gp_record *cached, bool leased)
{
    gfs_layout lay;
    int n = (int)cached->nsub;
    gp_record *rec = calloc(1, sizeof(*rec));
    gc_pending *p = calloc((size_t)n + 1, sizeof(*p));
    uint64_t *fkid = calloc((size_t)n, sizeof(*fkid));
    int *ok = calloc((size_t)n, sizeof(*ok));
    int kids[GFS_MAX_SUBFILES];
    int rc = !rec || !p || !fkid || !ok ? -ENOMEM : layout_of(cached, &lay);
    if (rc)
        goto out_free;
    if (!leased) /* a leased record is the record: not asked again */
        gc_NS_LOOKUP_send(gc_server_conn(gc_meta_server(name)),
                          &(gp_NS_LOOKUP_req){.name = name}, &p[n]);
    for (int i = 0; i < n; i++)
        gc_FORK_OPEN_send(
            gc_server_conn((int)cached->server[i]),
            &(gp_FORK_OPEN_req){.hid = cached->hid[i], .fork = lay.fork},
            &p[i]);
    if (leased)
        memcpy(rec, cached, sizeof(*rec));
    else
        rc = gc_NS_LOOKUP_recv(&p[n], &(gp_NS_LOOKUP_rep){.rec = rec}, NULL);
    bool same = !rc && gc_record_same(rec, cached);
    for (int i = 0; i < n; i++) {
        gp_FORK_OPEN_rep m = {0};
        ok[i] = gc_FORK_OPEN_recv(&p[i], &m, NULL) == 0;
        fkid[i] = m.fkid;
        same = same && ok[i];
    }
    int fid = same ? gc_file_register(name, rec) : -1;
    for (int i = 0; i < n && fid >= 0; i++) {
        gc_fork k = {.fid = fid,
                     .subfile = i,
                     .server = (int)rec->server[i],
                     .fkid = fkid[i]};
        kids[i] = gc_fork_register(&k);
        if (kids[i] < 0) {
            rc = kids[i];
            gc_file_close(fid); /* closes the forks registered so far */
            fid = -1;
            same = false;
        } else {
            ok[i] = 0; /* the fork id owns it now */
        }
    }
    /* the forks nobody owns: closed on the server, all at once */
    for (int i = 0; i < n; i++)
        if (ok[i])
            gc_FORK_CLOSE_send(gc_server_conn((int)cached->server[i]),
                               &(gp_FORK_CLOSE_req){.fkid = fkid[i]}, &p[i]);
    for (int i = 0; i < n; i++)
        if (ok[i])
            gc_FORK_CLOSE_recv(&p[i], NULL, NULL);
    if (same) {
        rc = striped_from_fid(fid, kids);
    } else if (!rc && rec->repl.ncopy > 1) {
        /* now a replicated file: its record from a majority (repl.c) */
        gc_rcache_drop(name);
        fid = gc_file_open(name);
        rc = fid < 0 ? fid : striped_from_fid(fid, NULL);
    } else if (!rc) {
        /* the file changed since it was cached: from the fresh record */
        gc_rcache_put(name, rec);
        fid = gc_file_register(name, rec);
        rc = fid < 0 ? fid : striped_from_fid(fid, NULL);
    } else {
        gc_rcache_drop(name);
    }
out_free:
    free(rec);
    free(p);
    free(fkid);
    free(ok);
    return rc;
}

int gc_striped_open(const char *name)
{
    int rc = gc_check_init();
    if (!rc)
        rc = gc_check_name(name, GFS_NAME_MAX);
    if (rc)
        return rc;
    gp_record *cached = calloc(1, sizeof(*cached));
    int hit = cached ? gc_rcache_leased(name, cached, NULL) : RC_NONE;
    if (hit != RC_NONE) {
        gfs_layout lay;
        if (layout_of(cached, &lay) == 0 && hit == RC_LEASED && lazy_on() &&
            lay.kind == GFS_LAYOUT_STRIPED) {
            /* the record under a lease, forks at first use: no request */
            int fid = gc_file_register(name, cached);
            free(cached);
            return fid < 0 ? fid : striped_from_fid(fid, NULL);
        }
        if (layout_of(cached, &lay) == 0) {
            rc = open_cached(name, cached, hit == RC_LEASED);
            free(cached);
            return rc;
        }
    }
    free(cached);
    int fid = gc_file_open(name);
    return fid < 0 ? fid : striped_from_fid(fid, NULL);
}

#define EXPORT_MAGIC 0x47455850u /* "GEXP" */

int gfs_striped_export(int sid, void *buf, size_t len)
{
    gc_striped s;
    int rc = st_get(sid, &s);
    if (rc)
        return rc;
    gc_file f;
    rc = gc_file_get(s.fid, &f);
    if (rc)
        return rc;
    gp_wbuf w;
    gp_wbuf_init(&w);
    gp_put_u32(&w, EXPORT_MAGIC);
    gp_put_str(&w, f.name);
    gp_put_record(&w, &f.rec);
    rc = w.err;
    if (!rc && w.len > len)
        rc = -ERANGE;
    if (!rc) {
        if (buf)
            memcpy(buf, w.data, w.len);
        rc = (int)w.len;
    }
    gp_wbuf_free(&w);
    return rc;
}

int gfs_striped_import(const void *buf, size_t len)
{
    int rc = gc_check_init();
    if (rc)
        return rc;
    if (!buf)
        return -EINVAL;
    gp_record *rec = calloc(1, sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    char name[GFS_NAME_MAX + 1];
    gp_rbuf r;
    gp_rbuf_init(&r, buf, len);
    if (gp_get_u32(&r) != EXPORT_MAGIC)
        r.err = -EINVAL;
    gp_get_str(&r, name, GFS_NAME_MAX);
    gp_get_record(&r, rec);
    rc = gp_done(&r) ? 0 : -EINVAL;
    int fid = rc ? rc : gc_file_register(name, rec);
    free(rec);
    return fid < 0 ? fid : striped_from_fid(fid, NULL);
}

/* ------------------------------------------- locks and counters ------- */

/* Subfile 0's server and header id: home of a file's locks/counters. */
static int home_of(const gc_striped *s, int *server, uint64_t *hid)
{
    gc_file f;
    int rc = gc_file_get(s->fid, &f);
    if (rc)
        return rc;
    *server = (int)f.rec.server[0];
    *hid = f.rec.hid[0];
    return 0;
}

int gc_range_lock(int server, uint64_t hid, int space, bool lock, uint64_t off,
                  uint64_t len, bool excl)
{
    gc_conn *c = gc_server_conn(server);
    uint8_t x = excl ? 1 : 0;
    for (;;) {
        int rc;
        if (space == GC_LOCK_BLOCKS && lock)
            rc = gc_BLOCK_LOCK_call(
                c,
                &(gp_BLOCK_LOCK_req){
                    .hid = hid, .off = off, .len = len, .excl = x},
                NULL, NULL);
        else if (space == GC_LOCK_BLOCKS)
            rc = gc_BLOCK_UNLOCK_call(
                c, &(gp_BLOCK_UNLOCK_req){.hid = hid, .off = off, .len = len},
                NULL, NULL);
        else if (lock)
            rc = gc_LOCK_call(
                c,
                &(gp_LOCK_req){.hid = hid, .off = off, .len = len, .excl = x},
                NULL, NULL);
        else
            rc = gc_UNLOCK_call(
                c, &(gp_UNLOCK_req){.hid = hid, .off = off, .len = len}, NULL,
                NULL);
        /* The server answers -EAGAIN after waiting a while, so a long
         * wait for a lock never looks like a dead server: ask again. */
        if (rc != -EAGAIN) {
            if (lock && rc == 0)
                gc_lease_hold(server, 1); /* renewed meanwhile (lease.c) */
            else if (!lock && (rc == 0 || rc == -ENOLCK))
                gc_lease_hold(server, -1);
            return rc;
        }
    }
}

int64_t gc_counter(int server, uint64_t hid, const char *key, bool set,
                   uint64_t value)
{
    gc_conn *c = gc_server_conn(server);
    uint64_t old;
    int rc;
    if (set) {
        gp_FETCH_SET_rep m = {0};
        rc = gc_FETCH_SET_call(
            c, &(gp_FETCH_SET_req){.hid = hid, .key = key, .value = value}, &m,
            NULL);
        old = m.old;
    } else {
        gp_FETCH_ADD_rep m = {0};
        rc = gc_FETCH_ADD_call(
            c, &(gp_FETCH_ADD_req){.hid = hid, .key = key, .delta = value}, &m,
            NULL);
        old = m.old;
    }
    if (rc)
        return rc;
    return old <= INT64_MAX ? (int64_t)old : GFS_EPROTO;
}

static int lock_call(int sid, bool lock, int64_t offset, int64_t len,
                     int exclusive)
{
    gc_striped s;
    int rc = st_get(sid, &s);
    if (rc)
        return rc;
    if (offset < 0 || len < 0)
        return -EINVAL;
    int server;
    uint64_t hid;
    rc = home_of(&s, &server, &hid);
    if (rc)
        return rc;
    uint64_t ulen = len == 0 ? GP_MAX_OFFSET - (uint64_t)offset : (uint64_t)len;
    return gc_range_lock(server, hid, GC_LOCK_BYTES, lock, (uint64_t)offset,
                         ulen, exclusive != 0);
}

int gfs_striped_lock(int sid, int64_t offset, int64_t len, int exclusive)
{
    return lock_call(sid, true, offset, len, exclusive);
}

int gfs_striped_unlock(int sid, int64_t offset, int64_t len)
{
    return lock_call(sid, false, offset, len, 0);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

int gfs_striped_plock(int sid, const gfs_plock *lk, int flags)
{
    gc_striped s;
    int rc = st_get(sid, &s);
    if (rc)
        return rc;
    if (!lk || lk->start < 0 || lk->len < 0 || lk->type < GFS_PLOCK_UNLOCK ||
        lk->type > GFS_PLOCK_EXCL ||
        (flags & ~(GFS_PLOCK_WAIT | GFS_PLOCK_WHOLE)))
        return -EINVAL;
    int server;
    uint64_t hid;
    rc = home_of(&s, &server, &hid);
    if (rc)
        return rc;
    /* The server waits a fraction of a second, then -EAGAIN: ask again.
     * An -EAGAIN that came at once (a conflict with another owner of this
     * process, whose unlock the server cannot see coming) is retried after
     * a pause that grows to 50 ms. */
    long pause = 1;
    for (;;) {
        int64_t t0 = g_now_ms();
        gp_PLOCK_rep m;
        rc = gc_PLOCK_call(gc_server_conn(server),
                           &(gp_PLOCK_req){.hid = hid,
                                           .owner = lk->owner,
                                           .off = (uint64_t)lk->start,
                                           .len = (uint64_t)lk->len,
                                           .type = (uint8_t)lk->type,
                                           .flags = (uint8_t)flags,
                                           .pid = (uint32_t)lk->pid},
                           &m, NULL);
        if (!rc) {
            gc_lease_posix(server, m.held);
            return 0;
        }
        if (rc != -EAGAIN || !(flags & GFS_PLOCK_WAIT))
            return rc;
        if (g_now_ms() - t0 < 20) {
            sleep_ms(pause);
            pause = pause < 50 ? pause * 2 : 50;
        }
    }
}

int gfs_striped_plock_test(int sid, gfs_plock *lk, int flags)
{
    gc_striped s;
    int rc = st_get(sid, &s);
    if (rc)
        return rc;
    if (!lk || lk->start < 0 || lk->len < 0 || lk->type < GFS_PLOCK_SHARED ||
        lk->type > GFS_PLOCK_EXCL || (flags & ~GFS_PLOCK_WHOLE))
        return -EINVAL;
    int server;
    uint64_t hid;
    rc = home_of(&s, &server, &hid);
    if (rc)
        return rc;
    gp_PGETLK_rep m;
    rc = gc_PGETLK_call(gc_server_conn(server),
                        &(gp_PGETLK_req){.hid = hid,
                                         .owner = lk->owner,
                                         .off = (uint64_t)lk->start,
                                         .len = (uint64_t)lk->len,
                                         .type = (uint8_t)lk->type,
                                         .flags = (uint8_t)flags},
                        &m, NULL);
    if (rc)
        return rc;
    if (m.type > GP_PLOCK_EXCL || m.off > INT64_MAX || m.len > INT64_MAX)
        return GFS_EPROTO;
    lk->type = m.type;
    if (m.type != GP_PLOCK_UNLOCK) {
        lk->start = (int64_t)m.off;
        lk->len = (int64_t)m.len;
        lk->pid = (int32_t)m.pid;
    }
    return 0;
}

int gfs_striped_plock_release(int sid, uint64_t owner)
{
    gc_striped s;
    int rc = st_get(sid, &s);
    if (rc)
        return rc;
    int server;
    uint64_t hid;
    rc = home_of(&s, &server, &hid);
    if (rc)
        return rc;
    gp_PRELEASE_rep m;
    rc = gc_PRELEASE_call(gc_server_conn(server),
                          &(gp_PRELEASE_req){.hid = hid, .owner = owner}, &m,
                          NULL);
    if (!rc)
        gc_lease_posix(server, m.held);
    return rc;
}

/* FETCH_ADD or FETCH_SET of counter key on the file's home server. */
static int64_t counter_call(int sid, const char *key, bool set, int64_t value)
{
    gc_striped s;
    int rc = st_get(sid, &s);
    if (rc)
        return rc;
    rc = gc_check_name(key, GFS_FORK_NAME_MAX);
    if (rc)
        return rc;
    gc_file *f = malloc(sizeof(*f));
    rc = f ? gc_file_get(s.fid, f) : -ENOMEM;
    int64_t r = rc;
    if (!rc && f->rec.repl.ncopy > 1)
        r = gc_repl_counter(&f->rec, key, set, (uint64_t)value);
    else if (!rc)
        r = gc_counter((int)f->rec.server[0], f->rec.hid[0], key, set,
                       (uint64_t)value);
    free(f);
    return r;
}

int64_t gfs_striped_fetch_add(int sid, const char *key, int64_t delta)
{
    return counter_call(sid, key, false, delta);
}

int64_t gfs_striped_fetch_set(int sid, const char *key, int64_t value)
{
    if (value < 0)
        return -ERANGE;
    return counter_call(sid, key, true, value);
}

int gc_striped_close(int sid)
{
    gc_striped s;
    int rc = gc_check_init();
    if (rc)
        return rc;
    rc = gc_idtab_take(&st_tab, sid, &s);
    if (rc)
        return rc;
    gc_local_free(s.loc);
    gc_direct_reader_free(s.rd); /* its bytes, before the forks' release */
    /* closing the file closes its forks */
    return gc_file_close(s.fid);
}

int gc_striped_layout(int sid, gfs_layout *layout)
{
    gc_striped s;
    int rc = st_get(sid, &s);
    if (rc)
        return rc;
    if (!layout)
        return -EINVAL;
    *layout = s.lay;
    return 0;
}

int gc_striped_kid(int sid, int subfile)
{
    gc_striped s;
    int rc = st_get(sid, &s);
    if (rc)
        return rc;
    if (subfile < 0 || subfile >= s.lay.nsubfiles)
        return -EINVAL;
    bool want[GFS_MAX_SUBFILES] = {false};
    want[subfile] = true;
    rc = st_forks(sid, &s, want, NULL);
    return rc ? rc : s.kids[subfile];
}

int gfs_striped_checksum(int sid)
{
    gc_striped s;
    int rc = st_get(sid, &s);
    gc_file *f = rc ? NULL : malloc(sizeof(*f));
    if (!rc)
        rc = f ? gc_file_get(s.fid, f) : -ENOMEM;
    if (!rc) /* (what gc_fork_register gives its forks) */
        rc = gc_rec_checksummed(&f->rec) ? 1 : 0;
    free(f);
    return rc;
}

/* --------------------------------------------------------- size -------- */

/* The logical size of a striped file whose forks have these sizes
 * (each >= 0, as the server answers them). */
static int64_t logical_size(const gfs_layout *lay, const int64_t *sizes)
{
    uint64_t u[GFS_MAX_SUBFILES];
    for (int i = 0; i < lay->nsubfiles; i++)
        u[i] = (uint64_t)sizes[i];
    return (int64_t)gl_logical_size((uint64_t)lay->unit,
                                    (unsigned)lay->nsubfiles, u);
}

static int list_sizes(const char *name, const gp_record *r, const char *fork,
                      gp_record *look, int *lookrc, int64_t *sizes);

/* Every fork's size: asked of the open forks (FORK_SIZE), or, when this
 * id has opened none yet, listed by the record's header ids (FORK_LIST,
 * as a stat does: no fork opened for it). */
static int fork_sizes(int sid, gc_striped *s, int64_t *sizes)
{
    bool none = true;
    for (int i = 0; i < s->lay.nsubfiles; i++)
        none = none && s->kids[i] < 0;
    if (none) {
        gc_file *f = malloc(sizeof(*f));
        int rc = f ? gc_file_get(s->fid, f) : -ENOMEM;
        if (!rc)
            rc = list_sizes(f->name, &f->rec, s->lay.fork, NULL, NULL, sizes);
        free(f);
        return rc;
    }
    int rc = st_forks(sid, s, NULL, NULL);
    if (rc)
        return rc;
    gc_fork k[GFS_MAX_SUBFILES];
    for (int i = 0; i < s->lay.nsubfiles; i++) {
        int rc = gc_fork_get(s->kids[i], &k[i]);
        if (rc)
            return rc;
    }
    return gc_fork_sizes(k, s->lay.nsubfiles, sizes);
}

int64_t gc_striped_size(int sid)
{
    gc_striped s;
    int rc = st_get(sid, &s);
    if (rc)
        return rc;
    if (s.loc)
        return gc_local_size(s.loc);
    int64_t sizes[GFS_MAX_SUBFILES];
    rc = fork_sizes(sid, &s, sizes);
    if (rc)
        return rc;
    return logical_size(&s.lay, sizes);
}

/* Size of subfile i's fork `fork` from a FORK_LIST reply. */
static int size_in_list(gc_pending *p, const char *fork, int64_t *size)
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
            found = it.size <= INT64_MAX ? 0 : GFS_EPROTO;
            *size = (int64_t)it.size;
        }
    }
    rc = gc_tail_end(&t);
    return rc ? rc : found;
}

/* Every subfile's fork list at once, and (look) the record's lookup with
 * them: sizes[i] is the size of fork `fork` in subfile i.  0 or the
 * first error of the lists; the lookup's own result in *lookrc. */
static int list_sizes(const char *name, const gp_record *r, const char *fork,
                      gp_record *look, int *lookrc, int64_t *sizes)
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
    for (int i = 0; i < n; i++) {
        int k = size_in_list(&p[i], fork, &sizes[i]);
        if (k && !rc)
            rc = k;
    }
    free(p);
    return rc;
}

/* A striped file's logical size by name, without opening its forks: the
 * record, then every subfile's fork list at once (two round trips; one
 * when the record is cached: the lookup goes with the lists, whose
 * answers count only if the record is still the cached one).  The
 * locality layout's size needs its block maps: opened as for I/O. */
int gc_striped_stat(const char *name, int64_t *size, gfs_layout *layout)
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
    int64_t total = 0;
    if (!cached) {
        rc = -ENOMEM;
        goto out_free;
    }
    int hit = gc_rcache_leased(name, cached, &total);
    if (hit == RC_LEASED && total >= 0 && layout_of(cached, &lay) == 0 &&
        !is_local_layout(cached))
        goto out_done; /* the record and its size under a lease: no
                        * request (rcache.c says what that guarantees) */
    rec = malloc(sizeof(*rec));
    sizes = calloc(GFS_MAX_SUBFILES, sizeof(*sizes));
    if (!rec || !sizes) {
        rc = -ENOMEM;
        goto out_free;
    }
    bool known = false; /* rec holds the metadata server's record */
    if (hit == RC_LEASED && layout_of(cached, &lay) == 0 &&
        !is_local_layout(cached)) {
        from = cached; /* the record under a lease: no lookup, only sizes */
        goto ask_sizes;
    }
    total = 0;
    if (hit != RC_NONE && layout_of(cached, &lay) == 0 &&
        !is_local_layout(cached)) {
        int lookrc;
        int k = list_sizes(name, cached, lay.fork, rec, &lookrc, sizes);
        if (lookrc) {
            gc_rcache_drop(name);
            rc = lookrc;
            goto out_free;
        }
        if (!k && gc_record_same(rec, cached))
            goto out_size;
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
    rc = layout_of(rec, &lay);
    if (rc)
        goto out_free;
    if (is_local_layout(rec) || rec->repl.ncopy > 1) {
        /* the locality layout's block maps, a replicated file's copies
         * in sync: opened as for I/O */
        int fid = gc_file_register(name, rec);
        int sid = fid < 0 ? fid : striped_from_fid(fid, NULL); /* takes fid */
        if (sid < 0) {
            rc = sid;
            goto out_free;
        }
        total = gc_striped_size(sid);
        gc_striped_close(sid);
        rc = total < 0 ? (int)total : 0;
        goto out_done;
    }
ask_sizes:;
    int64_t t0 = g_now_ms();
    uint64_t closes = gc_rcache_closes();
    rc = list_sizes(name, from, lay.fork, NULL, NULL, sizes);
    if (rc)
        goto out_free;
    total = logical_size(&lay, sizes);
    if (total >= 0) /* (kept only under a lease) */
        gc_rcache_size(name, total, t0, closes);
    rc = total < 0 ? (int)total : 0;
    goto out_done;
out_size:
    total = logical_size(&lay, sizes);
    rc = total < 0 ? (int)total : 0;
out_done:
    if (!rc && size)
        *size = total;
    if (!rc && layout)
        *layout = lay;
out_free:
    free(rec);
    free(cached);
    free(sizes);
    return rc;
}

int gfs_striped_stat(const char *name, int64_t *size, gfs_layout *layout)
{
    return gc_striped_stat(name, size, layout);
}

int gc_striped_truncate(int sid, int64_t size)
{
    gc_striped s;
    int rc = st_get(sid, &s);
    if (rc)
        return rc;
    if (size < 0)
        return -EINVAL;
    if (s.loc)
        return gc_local_truncate(s.loc, sid, s.kids, size);
    rc = st_forks(sid, &s, NULL, NULL);
    if (rc)
        return rc;
    for (int i = 0; i < s.lay.nsubfiles; i++) {
        uint64_t fs =
            gl_fork_size((uint64_t)s.lay.unit, (unsigned)s.lay.nsubfiles,
                         (unsigned)i, (uint64_t)size);
        int k = gc_fork_truncate(s.kids[i], (int64_t)fs);
        if (k && !rc)
            rc = k;
    }
    return rc;
}

int gfs_striped_sync(int sid)
{
    gc_striped s;
    int rc = st_get(sid, &s);
    if (!rc)
        rc = st_forks(sid, &s, NULL, NULL); /* (other processes' writes too) */
    if (rc)
        return rc;
    rc = gc_forks_sync(s.kids, s.lay.nsubfiles);
    if (s.loc && !rc)
        rc = gc_local_sync(s.loc);
    return rc;
}

/* ------------------------------------------------------ fragmenting ---- */

static int64_t striped_read_result(gc_op *o);
static int64_t local_read_result(gc_op *o);
static int striped_op(gc_striped *s, int sid, gc_op **out, int op,
                      const gc_pieces *pc);

int gc_op_striped(gc_op **out, int sid, int op, const gc_pieces *p)
{
    gc_striped s;
    int rc = st_get(sid, &s);
    if (rc)
        return rc;
    rc = s.loc ? gc_local_op(s.loc, sid, out, op, p, s.kids)
               : striped_op(&s, sid, out, op, p);
    if (!rc && op == GFS_READ && gc_pieces_single(p)) {
        /* a single-range read answers the bytes before the end of file */
        (*out)->finish = s.loc ? local_read_result : striped_read_result;
        (*out)->off = (int64_t)gc_pieces_first(p);
        (*out)->ns = s.lay.nsubfiles;
        (*out)->unit = s.lay.unit;
    }
    return rc;
}

/* The first pass over checked pieces: how many fragments each subfile
 * gets, and (segs != NULL) how many wire segments they fold into in list
 * order (gx_folder, as io.c sends them). */
static void split_count(const gfs_layout *lay, const gc_pieces *pc, size_t *cnt,
                        int64_t *segs)
{
    unsigned ns = (unsigned)lay->nsubfiles; /* 1..GFS_MAX_SUBFILES */
    uint64_t unit = (uint64_t)lay->unit;
    gx_folder fold[GFS_MAX_SUBFILES];
    memset(cnt, 0, ns * sizeof(cnt[0]));
    for (unsigned i = 0; i < ns && segs; i++)
        gx_folder_init(&fold[i], NULL, 0);
    gc_pieces cur = *pc;
    gl_cursor gc = gl_cursor_init(unit, ns);
    uint64_t x, left;
    char *mem;
    while (gc_pieces_next(&cur, &x, &mem, &left)) {
        while (left > 0) {
            uint64_t foff, len;
            unsigned sub = gl_cursor_locate(&gc, x, &foff, &len);
            if (len > left)
                len = left;
            if (segs)
                gx_folder_add(&fold[sub], foff, len);
            cnt[sub]++;
            x += len;
            left -= len;
        }
    }
    for (unsigned i = 0; i < ns && segs; i++)
        *segs += (int64_t)gx_folder_end(&fold[i]);
}

/*
 * The first read (or write) of a striped open that touches only some of
 * its subfiles (a 4 KiB call touches one): its transport gets ready for
 * every subfile's fork at once (gc_conn_prepare; the direct transport asks
 * each server for the fork's descriptor in one round trip, where the
 * calls that reach the other subfiles later would each wait for one).
 * The forks not touched are offered with the pieces of the first touched
 * one (their size decides what is asked for: a writable or a locked-mode
 * descriptor), so a process that writes any subfile of a file holds a
 * writable descriptor of every one, as it would after one large call.
 * Once per open and op (striped_op opened every fork for that first
 * call); nothing for forks whose transport has no prepare.
 */
static void striped_ask_all(const gc_striped *s, int sid, int op,
                            const gc_op *o)
{
    unsigned ns = (unsigned)s->lay.nsubfiles, bit = 1u << op;
    if (ns < 2 || ns > GC_PREPARE_MAX || o->nx == 0 || o->nx >= ns ||
        (s->asked & bit))
        return;
    pthread_mutex_lock(&st_lock);
    gc_striped *t = gc_idtab_at(&st_tab, sid);
    bool first = t && !(t->asked & bit);
    if (first)
        t->asked |= bit;
    pthread_mutex_unlock(&st_lock);
    if (!first)
        return;
    gc_xfer all[GC_PREPARE_MAX];
    size_t n = 0;
    for (unsigned i = 0; i < ns; i++) {
        gc_fork k;
        if (gc_fork_get(s->kids[i], &k) == 0)
            all[n++] = gc_xfer_of(&k, s->kids[i], o->x[0].pieces, o->x[0].n);
    }
    gc_conn_prepare(op, all, n);
}

/* The striped layout's op: each subfile's pieces, one transfer per
 * server.  Two passes over the pieces: count each subfile's fragments,
 * then place them straight where the op keeps them (one allocation for
 * all, however many subfiles). */
static int striped_op(gc_striped *s, int sid, gc_op **out, int op,
                      const gc_pieces *pc)
{
    int64_t total;
    if ((op != GFS_READ && op != GFS_WRITE) || gc_pieces_check(pc, &total))
        return -EINVAL;
    unsigned ns = (unsigned)s->lay.nsubfiles; /* 1..GFS_MAX_SUBFILES */
    uint64_t unit = (uint64_t)s->lay.unit;
    size_t cnt[GFS_MAX_SUBFILES], at[GFS_MAX_SUBFILES];
    split_count(&s->lay, pc, cnt, NULL);
    /* arrays of GFS_MAX_SUBFILES, used (so set) for [0, ns) only: a 4 KiB
     * call must not clear kilobytes of stack */
    bool want[GFS_MAX_SUBFILES], failed[GFS_MAX_SUBFILES];
    for (unsigned i = 0; i < ns; i++) {
        want[i] = cnt[i] > 0;
        failed[i] = false;
    }
    /* the forks it touches, opened; the first call of an op tries to open
     * every one at once (striped_ask_all then readies them all), but a
     * subfile it does not touch (its server down) fails it no more than
     * it would have failed a call that opened only what it touches */
    int rc = -1;
    if (!(s->asked & (1u << op)))
        rc = st_forks(sid, s, NULL, failed);
    bool touched_failed = false; /* then that is the call's error: asking
                                  * again would wait out its server's
                                  * timeout a second time */
    for (unsigned i = 0; rc && i < ns; i++)
        touched_failed = touched_failed || (failed[i] && want[i]);
    if (rc && !touched_failed)
        rc = st_forks(sid, s, want, NULL);
    if (rc)
        return rc;
    gc_pieces cur;
    uint64_t x, left;
    char *mem;
    size_t nfrag = 0;
    for (unsigned i = 0; i < ns; i++) {
        at[i] = nfrag;
        nfrag += cnt[i];
    }
    gc_op *o = gc_op_alloc(ns, nfrag);
    if (!o)
        return -ENOMEM;
    /* each subfile's bytes, range and order, learnt while placing its
     * pieces (gc_xfer: shaped) */
    uint64_t bytes[GFS_MAX_SUBFILES], lo[GFS_MAX_SUBFILES],
        hi[GFS_MAX_SUBFILES];
    bool ordered[GFS_MAX_SUBFILES];
    for (unsigned i = 0; i < ns; i++) {
        bytes[i] = hi[i] = 0;
        lo[i] = UINT64_MAX;
        ordered[i] = true;
    }
    cur = *pc;
    gl_cursor gc = gl_cursor_init(unit, ns);
    while (gc_pieces_next(&cur, &x, &mem, &left)) {
        while (left > 0) {
            uint64_t foff, len;
            unsigned sub = gl_cursor_locate(&gc, x, &foff, &len);
            if (len > left)
                len = left;
            o->store[at[sub]++] = (gx_ext){.off = foff, .len = len, .mem = mem};
            bytes[sub] += len;
            if (foff < hi[sub])
                ordered[sub] = false; /* before the end of one placed */
            else
                hi[sub] = foff + len;
            if (foff < lo[sub])
                lo[sub] = foff;
            x += len;
            mem += len;
            left -= len;
        }
    }
    gx_ext *p = o->store;
    for (unsigned i = 0; i < ns && !rc; i++) {
        if (cnt[i] == 0)
            continue;
        if (!ordered[i]) {
            gx_order(p, cnt[i], op == GFS_WRITE);
            hi[i] = 0;
            for (size_t k = 0; k < cnt[i]; k++)
                if (gx_end(&p[k]) > hi[i])
                    hi[i] = gx_end(&p[k]);
        }
        gc_fork k;
        rc = gc_fork_get(s->kids[i], &k);
        if (rc)
            break;
        gc_xfer *t = &o->x[o->nx++];
        *t = gc_xfer_of(&k, s->kids[i], p, cnt[i]);
        t->sub = (int)i;
        t->shaped = true;
        t->ordered = ordered[i] || gx_disjoint(p, cnt[i]); /* as gx_order left
                                                            * them */
        t->bytes = bytes[i];
        t->lo = lo[i];
        t->hi = hi[i];
        p += cnt[i];
    }
    if (rc) {
        gc_op_free(o);
        return rc;
    }
    striped_ask_all(s, sid, op, o);
    o->op = op;
    o->total = total;
    o->sid = sid;
    *out = o;
    return 0;
}

/* A single-range read reports the bytes before the logical end of file.
 * The forks it touched told us their sizes; the others are asked only if
 * those do not already show the range is inside the file. */
static int64_t striped_read_result(gc_op *o)
{
    gfs_layout lay = {.nsubfiles = o->ns, .unit = o->unit};
    int64_t sizes[GFS_MAX_SUBFILES];
    memset(sizes, 0, sizeof(sizes[0]) * (size_t)o->ns);
    for (size_t j = 0; j < o->nx; j++)
        sizes[o->x[j].sub] = (int64_t)o->x[j].fork_size;
    int64_t end = o->off + o->total;
    int64_t lower = logical_size(&lay, sizes);
    if (lower < end) {
        gc_striped s;
        int rc = st_get(o->sid, &s);
        if (!rc)
            rc = fork_sizes(o->sid, &s, sizes);
        if (rc)
            return rc;
        lower = logical_size(&s.lay, sizes);
    }
    if (lower <= o->off)
        return 0;
    return lower < end ? lower - o->off : o->total;
}

/* The same for a file of the locality layout (local_io.c). */
static int64_t local_read_result(gc_op *o)
{
    gc_striped s;
    int rc = st_get(o->sid, &s);
    return rc ? rc : gc_local_read_result(s.loc, o);
}

/* ------------------------------------------------------- fast reads -- */
/*
 * A read of one range into one buffer -- the MPI-IO driver's contiguous
 * calls, ROMIO's sieve windows, `galley exec`'s read() -- skips the op
 * when this process holds every fork it touches directly: the range is
 * cut at stripe units and each piece is one pread on the fork's file
 * (transport_direct.c: readers, which says why that is as correct as an
 * op's direct read).  Anything else -- a piece not held, a short read
 * (the end of a fork: the op path works out the file's end), a grant
 * forgotten -- declines, and the op path reads the whole range.  The op
 * around a 4 KiB pread costs nearly as much as the pread itself
 * (bench/latency).
 *
 * The reader is built after a single-range read took the op path (so its
 * grants exist: the op asked for them), at most once per
 * GC_FAST_REBUILD_NS while it lacks a fork or after grants were
 * forgotten, and freed at close.
 */
#define GC_FAST_REBUILD_NS 10000000ull
/* A range in more pieces than this takes the op, whose direct read is
 * one preadv per subfile: one process reading a 4-subfile file in calls
 * of 4 KiB took 0.98 us here against 1.33 through the op (and 0.83 on
 * ufs:), 47008 B 7.6 against 8.4 us, 256 KiB 32-34 against 35-37 us;
 * 1 MiB (16 units) 127 us either way; 32 MiB 4.3-5.3 ms here against
 * 4.1-4.2 ms through the op.  A file of one subfile is one piece. */
#define GC_FAST_UNITS 16

/* GALLEY_FAST_READ=0 sends them all through the op (for measuring) */
static bool fast_on(void)
{
    static int v;
    return gc_env_on(&v, "GALLEY_FAST_READ");
}

static int fast_read(int sid, int64_t off, void *buf, int64_t len)
{
    if (!fast_on() || len <= 0 || !gc_range_ok(off, len))
        return GC_DECLINE;
    pthread_mutex_lock(&st_lock);
    gc_striped *t = gc_idtab_at(&st_tab, sid);
    gc_dreader *r = t ? t->rd : NULL;
    gfs_layout lay = {0};
    if (r) {
        gc_direct_reader_pin(r); /* freed only after the table lets go */
        lay = t->lay;
    }
    pthread_mutex_unlock(&st_lock);
    if (!r)
        return GC_DECLINE;
    /* pieces cut at stripe units, where consecutive units of one subfile
     * that are consecutive in its fork (a file of one subfile) are one
     * pread: a 1 MiB call on such a file is one system call, not 16 */
    unsigned subs[GC_FAST_UNITS];
    uint64_t foffs[GC_FAST_UNITS], lens[GC_FAST_UNITS];
    size_t np = 0;
    int rc = 0;
    gl_cursor gc = gl_cursor_init((uint64_t)lay.unit, (unsigned)lay.nsubfiles);
    uint64_t x = (uint64_t)off, left = (uint64_t)len;
    while (left && !rc) {
        uint64_t foff, n;
        unsigned sub = gl_cursor_locate(&gc, x, &foff, &n);
        if (n > left)
            n = left;
        if (np && subs[np - 1] == sub && foffs[np - 1] + lens[np - 1] == foff)
            lens[np - 1] += n;
        else if (np == GC_FAST_UNITS)
            rc = GC_DECLINE;
        else {
            subs[np] = sub;
            foffs[np] = foff;
            lens[np++] = n;
        }
        x += n;
        left -= n;
    }
    char *mem = buf; /* the pieces lie end to end in buf, in range order */
    for (size_t i = 0; i < np && !rc; mem += lens[i++])
        rc = gc_direct_reader_read(r, subs[i], foffs[i], mem, lens[i]);
    for (size_t i = 0; i < np && !rc; i++) /* all read: counted */
        gc_direct_reader_count(r, subs[i], lens[i]);
    gc_direct_reader_unpin(r);
    return rc;
}

/* After a single-range read took the op path: the file's reader built
 * (again) if it has none, lacks a fork or is out of date, and it may. */
static void fast_build(int sid)
{
    gc_striped s;
    if (!fast_on() || st_get(sid, &s) || s.loc)
        return;
    pthread_mutex_lock(&st_lock); /* rd is freed only after the table
                                   * lets go of it */
    gc_striped *t = gc_idtab_at(&st_tab, sid);
    bool whole = t && t->rd && gc_direct_reader_whole(t->rd);
    pthread_mutex_unlock(&st_lock);
    uint64_t now = g_now_ns();
    if (whole)
        return;
    if (s.rd_ns && now - s.rd_ns < GC_FAST_REBUILD_NS)
        return;
    unsigned ns = (unsigned)s.lay.nsubfiles;
    int servers[GFS_MAX_SUBFILES];
    uint64_t fkids[GFS_MAX_SUBFILES];
    for (unsigned i = 0; i < ns; i++) {
        gc_fork k;
        bool ok = s.kids[i] >= 0 && gc_fork_get(s.kids[i], &k) == 0 &&
                  !k.csum && k.ncopy <= 1; /* a copy's reads fail over */
        servers[i] = ok ? k.server : -1;
        fkids[i] = ok ? k.fkid : 0;
    }
    gc_dreader *r = gc_direct_reader(servers, fkids, ns), *old = r;
    pthread_mutex_lock(&st_lock);
    t = gc_idtab_at(&st_tab, sid);
    if (t && t->rd == s.rd && t->rd_ns == s.rd_ns) { /* nobody raced us */
        old = t->rd;
        t->rd = r;
        t->rd_ns = now;
    }
    pthread_mutex_unlock(&st_lock);
    gc_direct_reader_free(old);
}

/* One range into one buffer: fast_read, or the op (and then the reader
 * built for the next). */
static int64_t striped_read1(int sid, int64_t off, void *buf, int64_t len)
{
    if (fast_read(sid, off, buf, len) == 0)
        return len;
    gc_op *o;
    gfs_list_entry e = {off, 0, len};
    gc_pieces p = gc_pieces_paired(1, &e, buf);
    int rc = gc_op_striped(&o, sid, GFS_READ, &p);
    int64_t got = rc ? rc : gc_op_run(o);
    if (got >= 0)
        fast_build(sid);
    return got;
}

int64_t gc_striped_listio(int sid, int op, int64_t n,
                          const gfs_list_entry *entries, void *buf)
{
    if (op == GFS_READ && n == 1 && entries && entries[0].mem_offset >= 0 &&
        buf)
        return striped_read1(sid, entries[0].file_offset,
                             (char *)buf + entries[0].mem_offset,
                             entries[0].size);
    gc_op *o;
    gc_pieces p = gc_pieces_paired(n, entries, buf);
    int rc = gc_op_striped(&o, sid, op, &p);
    return rc ? rc : gc_op_run(o);
}

int64_t gfs_striped_listio(int sid, int op, int64_t n,
                           const gfs_list_entry *entries, void *buf)
{
    return gc_striped_listio(sid, op, n, entries, buf);
}

int64_t gfs_striped_rangeio(int sid, int op, int64_t nr, const gfs_range *r,
                            int64_t nseg, const gfs_memseg *seg)
{
    if (op == GFS_READ && nr == 1 && nseg == 1 && r && seg &&
        r[0].size == seg[0].size && seg[0].addr)
        return striped_read1(sid, r[0].offset, seg[0].addr, r[0].size);
    gc_op *o;
    gc_pieces p = gc_pieces_lists(nr, r, nseg, seg);
    int rc = gc_op_striped(&o, sid, op, &p);
    return rc ? rc : gc_op_run(o);
}

int64_t gfs_striped_segments(int sid, int64_t nr, const gfs_range *r)
{
    gc_striped s;
    int rc = st_get(sid, &s);
    if (rc)
        return rc;
    gc_pieces p = gc_pieces_ranges(nr, r);
    int64_t total, segs = 0;
    rc = gc_pieces_check(&p, &total);
    if (rc)
        return rc;
    /* in logical order, as one subfile: the figure the drivers' choice of
     * aggregation was tuned with (per server, a stride that crosses stripe
     * units breaks at every unit, and 200-byte strided records would be
     * aggregated, measured slower) */
    gfs_layout one = {.nsubfiles = 1, .unit = INT64_MAX};
    size_t cnt[GFS_MAX_SUBFILES];
    split_count(&one, &p, cnt, &segs);
    return segs;
}

int gfs_create_striped(const char *name, int nsubfiles, const int *servers,
                       int64_t unit, const char *fork)
{
    return gc_create_striped(name, nsubfiles, servers, unit, fork, 1);
}

int gfs_create_striped_replicas(const char *name, int nsubfiles,
                                const int *servers, int64_t unit,
                                const char *fork, int replicas)
{
    return gc_create_striped(name, nsubfiles, servers, unit, fork, replicas);
}

int gfs_striped_replicas(int sid)
{
    gc_striped s;
    int rc = st_get(sid, &s);
    if (rc)
        return rc;
    gc_file *f = malloc(sizeof(*f));
    rc = f ? gc_file_get(s.fid, f) : -ENOMEM;
    if (!rc)
        rc = f->rec.repl.ncopy > 1 ? f->rec.repl.ncopy : 1;
    free(f);
    return rc;
}

int gfs_striped_open(const char *name)
{
    return gc_striped_open(name);
}

int gfs_striped_layout(int sid, gfs_layout *layout)
{
    return gc_striped_layout(sid, layout);
}

int gfs_striped_kid(int sid, int subfile)
{
    return gc_striped_kid(sid, subfile);
}

int64_t gfs_striped_size(int sid)
{
    return gc_striped_size(sid);
}

int gfs_striped_truncate(int sid, int64_t size)
{
    return gc_striped_truncate(sid, size);
}

int gfs_striped_close(int sid)
{
    return gc_striped_close(sid);
}

int64_t gfs_striped_read(int sid, int64_t offset, void *buf, int64_t size)
{
    gfs_list_entry e = {offset, 0, size};
    return gc_striped_listio(sid, GFS_READ, 1, &e, buf);
}

int64_t gfs_striped_write(int sid, int64_t offset, const void *buf,
                          int64_t size)
{
    gfs_list_entry e = {offset, 0, size};
    return gc_striped_listio(sid, GFS_WRITE, 1, &e, (void *)buf);
}

int gc_striped_local(int sid, gc_local **out)
{
    gc_striped s;
    int rc = st_get(sid, &s);
    *out = rc ? NULL : s.loc;
    return rc;
}
