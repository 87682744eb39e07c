/*
 * striped.c -- SFIO-style striped linear files on top of forks: the layout
 * the MPI-IO driver and `galley put/get` use.  A request is split into
 * fragments per subfile, each subfile's fragments are sorted by fork offset
 * (adjacent ones merge into one wire extent in io.c), and one transfer per
 * server runs straight from/to user memory.  This unit: the table of
 * striped opens, lazy forks, create, open, close, export/import; the I/O
 * is striped_io.c's, sizes striped_size.c's, locks and counters
 * striped_lock.c's (striped_internal.h: what they share).
 *
 * Threads: any; the striped-id table has its own lock (gc_st_lock), taken
 * only around table access, never across network calls.
 */
#include "striped_internal.h"

#include "gclock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

pthread_mutex_t gc_st_lock = PTHREAD_MUTEX_INITIALIZER;
gc_idtab gc_st_tab = GC_IDTAB_INIT(&gc_st_lock, gc_striped, GC_KIND_STRIPED, 8);

int gc_st_get(int sid, gc_striped *out)
{
    int rc = gc_check_init();
    return rc ? rc : gc_idtab_get(&gc_st_tab, sid, out);
}

void gc_striped_shutdown(void)
{
    pthread_mutex_lock(&gc_st_lock);
    for (int sid = -1; (sid = gc_idtab_next(&gc_st_tab, sid)) >= 0;) {
        gc_striped *t = gc_idtab_at(&gc_st_tab, sid);
        gc_local_free(t->loc);
        gc_reader_free(t->rd); /* before the grants: their bytes */
    }
    gc_idtab_clear(&gc_st_tab); /* ids from before stay unknown */
    pthread_mutex_unlock(&gc_st_lock);
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
    return g_config_bool(G_CFG_MD_LAZY); /* (read once) */
}

/* Forks kids, opened for subfiles subs of open sid, in its table entry
 * (and in s, a copy of it, unless NULL); a subfile another thread opened
 * meanwhile keeps that one, and ours is closed. */
static int publish(int sid, gc_striped *s, int nn, const int *subs,
                   const int *kids)
{
    int extra[GFS_MAX_SUBFILES], nextra = 0;
    pthread_mutex_lock(&gc_st_lock);
    gc_striped *t = gc_idtab_at(&gc_st_tab, sid);
    for (int j = 0; j < nn; j++) {
        int i = subs[j];
        if (t && t->kids[i] < 0)
            t->kids[i] = kids[j];
        else
            extra[nextra++] = kids[j]; /* another thread's won, or closed */
        if (s)
            s->kids[i] = t ? t->kids[i] : -1;
    }
    pthread_mutex_unlock(&gc_st_lock);
    gc_all_close(nextra, extra);
    return t ? 0 : GFS_EBADID;
}

/* Make s->kids[i] an open fork for every subfile i with want[i] (want
 * NULL: every subfile).  The missing ones are opened at once (one round
 * trip) and published in sid's table entry; when two threads race, one
 * set is kept and the other closed.  Runs on the calling thread (a
 * non-blocking op's worker too): connection calls only, no lock held
 * across them. */
int gc_st_forks(int sid, gc_striped *s, const bool *want, bool *failed)
{
    int n = s->lay.nsubfiles, nn = 0;
    int subs[GFS_MAX_SUBFILES], kids[GFS_MAX_SUBFILES];
    for (int i = 0; i < n; i++)
        if (s->kids[i] < 0 && (!want || want[i]))
            nn++;
    if (!nn)
        return 0;
    /* another thread may have opened some since s was copied */
    pthread_mutex_lock(&gc_st_lock);
    gc_striped *t = gc_idtab_at(&gc_st_tab, sid);
    bool live = t != NULL;
    if (live)
        memcpy(s->kids, t->kids, (size_t)n * sizeof(*s->kids));
    pthread_mutex_unlock(&gc_st_lock);
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
    return publish(sid, s, nn, subs, kids);
}

/* ------------------------------------------------- a fork opened ahead -- */
/*
 * An open's small first op (striped_io.c small_first) touches one fork,
 * which it would open first -- a FORK_OPEN waited for -- and then move
 * its bytes: two round trips.  Instead the FORK_OPEN is sent and not
 * waited for, and the op's transfer, sent after it on the same
 * connection, names the fork by that request (gmsg.h GP_FKID_OPENED):
 * one round trip for both.  The open's answer is read once the transfer
 * is done (ahead_end, the op's `after`), and the fork published as
 * gc_st_forks would.  A server that does not remember the open (GFS_ESTALE
 * where the open succeeded) gets the transfer again under the fork's
 * handle.
 */
struct gc_ahead {
    gc_pending p;
    int sid, sub;
    gc_fork k; /* the fork; k.fkid the reference until answered */
};

int gc_st_ahead(int sid, const gc_striped *s, int sub, gc_fork *k,
                gc_ahead **out)
{
    gc_file f;
    int rc = gc_file_get(s->fid, &f);
    if (rc)
        return rc;
    if (f.rec.repl.ncopy > 1 || sub >= (int)f.rec.nsub)
        return GC_DECLINE; /* a copy's open is several: gc_st_forks */
    gc_ahead *a = calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    int server = (int)f.rec.server[sub];
    gc_FORK_OPEN_send(
        gc_server_conn(server),
        &(gp_FORK_OPEN_req){.hid = f.rec.hid[sub], .fork = s->lay.fork}, &a->p);
    if (a->p.rc) { /* not sent: the receive answers that error */
        gp_FORK_OPEN_rep m;
        rc = gc_FORK_OPEN_recv(&a->p, &m, NULL);
        free(a);
        return rc;
    }
    a->sid = sid;
    a->sub = sub;
    a->k = (gc_fork){.fid = s->fid,
                     .subfile = sub,
                     .server = server,
                     .fkid = GP_FKID_OPENED | a->p.q.reqid,
                     .csum = gc_rec_checksummed(&f.rec)};
    *k = a->k;
    *out = a;
    return 0;
}

/* The open's answer read (its result; *fkid the fork's handle), its fork
 * published.  Frees a. */
static int ahead_answer(gc_ahead *a, uint64_t *fkid)
{
    gp_FORK_OPEN_rep m = {0};
    int rc = gc_FORK_OPEN_recv(&a->p, &m, NULL);
    *fkid = m.fkid;
    if (!rc) {
        gc_fork k = a->k;
        k.fkid = m.fkid;
        int kid = gc_fork_register(&k);
        if (kid >= 0)
            publish(a->sid, NULL, 1, &a->sub, &kid);
        else
            gc_fork_close_at(k.server, m.fkid);
    }
    free(a);
    return rc;
}

static int ahead_end(gc_op *o, int rc)
{
    gc_ahead *a = o->after_arg;
    o->after = NULL;
    o->after_arg = NULL;
    uint64_t ref = a->k.fkid, fkid;
    int opened = ahead_answer(a, &fkid);
    if (rc && opened) /* the open's error is the transfer's cause (its
                       * connection lost: the transfer went on a new one) */
        return rc == -ECANCELED ? rc : opened;
    if (rc == GFS_ESTALE) { /* the server did not remember the open */
        for (size_t i = 0; i < o->nx; i++)
            if (o->x[i].fkid == ref)
                o->x[i].fkid = fkid;
        rc = gc_transfer(o->op, o->x, o->nx);
    }
    return rc;
}

void gc_st_ahead_attach(gc_op *o, gc_ahead *a)
{
    uint64_t fkid;
    if (!o) {
        ahead_answer(a, &fkid);
        return;
    }
    o->after = ahead_end;
    o->after_arg = a;
}

void gc_striped_pin(const char *name)
{
    int cap = 0, n = 0, *sids = NULL;
    pthread_mutex_lock(&gc_st_lock);
    for (int sid = -1; (sid = gc_idtab_next(&gc_st_tab, sid)) >= 0;) {
        gc_striped *t = gc_idtab_at(&gc_st_tab, sid);
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
    pthread_mutex_unlock(&gc_st_lock);
    gc_file *f = n ? malloc(sizeof(*f)) : NULL;
    gc_striped *s = n ? malloc(sizeof(*s)) : NULL;
    for (int j = 0; j < n && f && s; j++)
        if (gc_idtab_get(&gc_st_tab, sids[j], s) == 0 &&
            gc_file_get(s->fid, f) == 0 && strcmp(f->name, name) == 0)
            gc_st_forks(sids[j], s, NULL,
                        NULL); /* (an error: as before, at I/O) */
    free(f);
    free(s);
    free(sids);
}

/* ------------------------------------------------------ create / open -- */

int gc_create_striped(const char *name, int nsubfiles, const int *servers,
                      int64_t unit, const char *fork, int ncopy, unsigned mode,
                      const char *extra)
{
    if (!fork)
        fork = GFS_DEFAULT_STRIPE_FORK;
    if (unit <= 0)
        unit = GFS_DEFAULT_STRIPE_UNIT;
    int rc = gc_check_name(fork, GFS_FORK_NAME_MAX);
    if (rc)
        return rc;
    if (strchr(fork, '\n') || unit > (INT64_C(1) << 40) || mode > 07777)
        return -EINVAL;
    char attrs[GP_ATTR_MAX + 1];
    int n = snprintf(attrs, sizeof(attrs),
                     "galley.stripe_unit=%" PRId64 "\ngalley.stripe_fork=%s\n",
                     unit, fork);
    if (mode != GFS_DEFAULT_MODE) /* (the default: no line) */
        n += snprintf(attrs + n, sizeof(attrs) - (size_t)n,
                      GFS_MODE_ATTR "=%o\n", mode);
    if (extra) /* (checked by the caller; at most a few lines) */
        snprintf(attrs + n, sizeof(attrs) - (size_t)n, "%s", extra);
    /* the record, every subfile and its fork: two round trips */
    return gc_create_file_fork(name, nsubfiles, servers, attrs, fork, ncopy);
}

/* The striped layout kept in a file's record: 0 or GFS_ELAYOUT. */
int gc_st_layout_of(const gp_record *rec, gfs_layout *lay)
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
    lay->kind =
        gc_st_is_local_layout(rec) ? GFS_LAYOUT_LOCAL : GFS_LAYOUT_STRIPED;
    return 0;
}

bool gc_st_is_local_layout(const gp_record *rec)
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
    bool ok = r && gc_rcache_leased(name, r, NULL, NULL) == RC_LEASED &&
              gc_record_same(r, rec);
    free(r);
    return ok;
}

/* Make a striped id for an open file id (taking ownership of fid), with
 * its forks opened here, or (kids) already, or (leased record) at their
 * first use (gc_st_forks). */
int gc_st_from_fid(int fid, const int *kids)
{
    gc_striped s = {.fid = fid};
    gc_file f;
    int rc = gc_file_get(fid, &f);
    if (!rc)
        rc = gc_st_layout_of(&f.rec, &s.lay);
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

    int sid = gc_idtab_insert(&gc_st_tab, &s);
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

/* Open with a record from the cache (rcache.c), for a file whose forks
 * are opened at open (GALLEY_MD_LAZY=0, a layout other than striped):
 * the lookup and every subfile's FORK_OPEN go at once (one round trip),
 * and the forks are kept when the record that comes back is the cached
 * one.  Otherwise they are closed and the open goes on from the fresh
 * record.  A striped file whose cached record is only a hint (its lease
 * let go or run out) is opened as a name not cached is: one NS_LEASE
 * brings the record under a lease again, and the forks open at their
 * first use, where this path would open and ready every one. */
static int open_cached(const char *name, const gp_record *cached, bool leased)
{
    gfs_layout lay;
    int n = (int)cached->nsub;
    gp_record *rec = calloc(1, sizeof(*rec));
    gc_pending *p = calloc((size_t)n + 1, sizeof(*p));
    uint64_t *fkid = calloc((size_t)n, sizeof(*fkid));
    int *ok = calloc((size_t)n, sizeof(*ok));
    int kids[GFS_MAX_SUBFILES];
    int rc =
        !rec || !p || !fkid || !ok ? -ENOMEM : gc_st_layout_of(cached, &lay);
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
    /* the forks nobody owns: closed on the server, as any fork is */
    for (int i = 0; i < n; i++)
        if (ok[i])
            gc_fork_close_at((int)cached->server[i], fkid[i]);
    if (same) {
        rc = gc_st_from_fid(fid, kids);
    } else if (!rc && rec->repl.ncopy > 1) {
        /* now a replicated file: its record from a majority (repl.c) */
        gc_rcache_drop(name);
        fid = gc_file_open(name);
        rc = fid < 0 ? fid : gc_st_from_fid(fid, NULL);
    } else if (!rc) {
        /* the file changed since it was cached: from the fresh record */
        gc_rcache_put(name, rec);
        fid = gc_file_register(name, rec);
        rc = fid < 0 ? fid : gc_st_from_fid(fid, NULL);
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
    int hit = cached ? gc_rcache_leased(name, cached, NULL, NULL) : RC_NONE;
    if (hit != RC_NONE) {
        gfs_layout lay;
        bool known = gc_st_layout_of(cached, &lay) == 0;
        bool lazy = known && lazy_on() && lay.kind == GFS_LAYOUT_STRIPED;
        if (lazy && hit == RC_LEASED) {
            /* the record under a lease, forks at first use: no request */
            int fid = gc_file_register(name, cached);
            free(cached);
            return fid < 0 ? fid : gc_st_from_fid(fid, NULL);
        }
        if (known && !lazy) {
            rc = open_cached(name, cached, hit == RC_LEASED);
            free(cached);
            return rc;
        }
    }
    free(cached);
    int fid = gc_file_open(name);
    return fid < 0 ? fid : gc_st_from_fid(fid, NULL);
}

#define EXPORT_MAGIC 0x47455850u /* "GEXP" */

int gfs_striped_export(int sid, void *buf, size_t len)
{
    gc_striped s;
    int rc = gc_st_get(sid, &s);
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
    return fid < 0 ? fid : gc_st_from_fid(fid, NULL);
}

int gc_striped_close(int sid)
{
    gc_striped s;
    int rc = gc_check_init();
    if (rc)
        return rc;
    rc = gc_idtab_take(&gc_st_tab, sid, &s);
    if (rc)
        return rc;
    gc_local_free(s.loc);
    gc_reader_free(s.rd); /* its bytes, before the forks' release */
    /* closing the file closes its forks */
    return gc_file_close(s.fid);
}

int gc_striped_layout(int sid, gfs_layout *layout)
{
    gc_striped s;
    int rc = gc_st_get(sid, &s);
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
    int rc = gc_st_get(sid, &s);
    if (rc)
        return rc;
    if (subfile < 0 || subfile >= s.lay.nsubfiles)
        return -EINVAL;
    bool want[GFS_MAX_SUBFILES] = {false};
    want[subfile] = true;
    rc = gc_st_forks(sid, &s, want, NULL);
    return rc ? rc : s.kids[subfile];
}

int gfs_striped_checksum(int sid)
{
    gc_striped s;
    int rc = gc_st_get(sid, &s);
    gc_file *f = rc ? NULL : malloc(sizeof(*f));
    if (!rc)
        rc = f ? gc_file_get(s.fid, f) : -ENOMEM;
    if (!rc) /* (what gc_fork_register gives its forks) */
        rc = gc_rec_checksummed(&f->rec) ? 1 : 0;
    free(f);
    return rc;
}

int gfs_create_striped(const char *name, int nsubfiles, const int *servers,
                       int64_t unit, const char *fork)
{
    return gc_create_striped(name, nsubfiles, servers, unit, fork, 1,
                             GFS_DEFAULT_MODE, NULL);
}

int gfs_create_striped_mode(const char *name, int nsubfiles, const int *servers,
                            int64_t unit, const char *fork, unsigned mode)
{
    return gc_create_striped(name, nsubfiles, servers, unit, fork, 1, mode,
                             NULL);
}

int gfs_symlink(const char *target, const char *name)
{
    return gfs_create_node(
        name, 1, NULL, 0, NULL,
        &(gfs_node){
            .mode = S_IFLNK | 0777, .uid = -1, .gid = -1, .link = target});
}

int gfs_create_striped_replicas(const char *name, int nsubfiles,
                                const int *servers, int64_t unit,
                                const char *fork, int replicas)
{
    return gc_create_striped(name, nsubfiles, servers, unit, fork, replicas,
                             GFS_DEFAULT_MODE, NULL);
}

int gfs_striped_replicas(int sid)
{
    gc_striped s;
    int rc = gc_st_get(sid, &s);
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

int gc_striped_local(int sid, gc_local **out)
{
    gc_striped s;
    int rc = gc_st_get(sid, &s);
    *out = rc ? NULL : s.loc;
    return rc;
}
