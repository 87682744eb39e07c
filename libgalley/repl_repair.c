/*
 * repl_repair.c -- bringing a replicated file's copies back in sync
 * (repl.c states the rules): a span repaired from a good copy after a
 * failed check, a whole copy resynced (gfs_resync), and a scrub that
 * checks every chunk of a fork's copies and repairs the bad ones.
 *
 * Threads: any (repl.c); gc_repl_local_writers holds this process's own
 * writers off while a copy is rewritten.
 */
#include "repl_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------- repair --- */

/* The checksum chunk (servers/csum.c rule 2): a repair rewrites whole
 * ones, so the bad copy's server replaces each chunk without reading it
 * (the cache does not read a block a write covers) and makes its CRC
 * anew from the good bytes. */
#define REPAIR_CHUNK 32768u
#define REPAIR_STEP (4u << 20) /* bytes moved at a time (whole chunks) */

/* The writers' lock held exclusively (resync, repair): on every copy in
 * sync of subfile 0, as each was when taken.  The server's locks of one
 * connection never conflict with each other, so this process's own
 * writers (other threads, non-blocking calls) are held off by
 * gc_repl_local_writers, which every replicated write holds shared. */
typedef struct xlock {
    int n;
    int server[GP_MAX_COPIES];
    uint64_t hid[GP_MAX_COPIES];
} xlock;

pthread_rwlock_t gc_repl_local_writers = PTHREAD_RWLOCK_INITIALIZER;

static int xlock_take(const gp_record *rec, xlock *l)
{
    const gp_repl *p = &rec->repl;
    pthread_rwlock_wrlock(&gc_repl_local_writers);
    l->n = 0;
    for (int c = 0; c < p->ncopy; c++)
        if (p->state[0][c] == GP_COPY_INSYNC &&
            !gc_range_lock((int)p->server[0][c], p->hid[0][c], GC_LOCK_BLOCKS,
                           true, REPL_LOCK_OFF, 1, true)) {
            l->server[l->n] = (int)p->server[0][c];
            l->hid[l->n++] = p->hid[0][c];
        }
    if (!l->n)
        pthread_rwlock_unlock(&gc_repl_local_writers);
    return l->n ? 0 : GFS_ENOCOPY;
}

static void xlock_drop(const xlock *l)
{
    for (int i = 0; i < l->n; i++)
        gc_range_lock(l->server[i], l->hid[i], GC_LOCK_BLOCKS, false,
                      REPL_LOCK_OFF, 1, true);
    pthread_rwlock_unlock(&gc_repl_local_writers);
}

/* Move [off, off + len) of fork `fork` of subfile s from copy `from`
 * (read) to copy `to` (written), both opened afresh; the span is cut at
 * the source's end.  *src_err: the error was the source's. */
static int span_move(const gp_record *rec, int s, const char *fork, int from,
                     int to, uint64_t off, uint64_t len, char *buf,
                     bool *src_err)
{
    bool csum = gc_rec_checksummed(rec);
    int fs = (int)rec->repl.server[s][from], ts = (int)rec->repl.server[s][to];
    uint64_t ff = 0, tf = 0;
    *src_err = true;
    int rc = gc_repl_copy_open(rec, s, from, fork, &ff);
    gp_ext p = {off, len, {buf}};
    gc_xfer t = {.server = fs,
                 .fkid = ff,
                 .csum = csum,
                 .pieces = &p,
                 .n = 1,
                 .way = gc_route_copy()};
    if (!rc)
        rc = gc_transfer_plain(GFS_READ, &t, 1);
    if (!rc) {
        *src_err = false;
        p.len = t.fork_size <= off        ? 0
                : t.fork_size - off < len ? t.fork_size - off
                                          : len;
        rc = gc_repl_copy_open(rec, s, to, fork, &tf);
    }
    if (!rc && p.len) {
        t.server = ts;
        t.fkid = tf;
        rc = gc_transfer_plain(GFS_WRITE, &t, 1);
    }
    if (tf)
        gc_FORK_CLOSE_call(gc_server_conn(ts), &(gp_FORK_CLOSE_req){.fkid = tf},
                           NULL, NULL);
    if (ff)
        gc_FORK_CLOSE_call(gc_server_conn(fs), &(gp_FORK_CLOSE_req){.fkid = ff},
                           NULL, NULL);
    return rc;
}

/* Rewrite the chunks covering [off, off + len) of copy `bad` of fork
 * `fork` of subfile s of file `name` from another copy in sync, under
 * the writers' lock held exclusively (no write lands between the read of
 * the good copy and the write of the bad one) and from the record read
 * under it (so only a copy the current generation holds in sync is
 * written, as any replicated write).  0: repaired; GFS_ESTALE: the copy
 * is no longer in sync (resync's, not ours); GFS_ENOCOPY: no other copy
 * gave good bytes (left for scrub: every read of the chunk still fails
 * over); another error: the bad copy's server refused the write, and the
 * copy is recorded stale (resync rebuilds it) -- or left as it was when
 * even that record cannot be written.  *rec_out (may be NULL): the
 * record the repair was decided on. */
static int repair_span(const char *name, int s, const char *fork, int bad,
                       uint64_t off, uint64_t len, gp_record *rec_out)
{
    uint64_t lo = off / REPAIR_CHUNK * REPAIR_CHUNK;
    uint64_t hi = (off + len + REPAIR_CHUNK - 1) / REPAIR_CHUNK * REPAIR_CHUNK;
    uint64_t step = hi - lo < REPAIR_STEP ? hi - lo : REPAIR_STEP;
    gp_record *rec = malloc(sizeof(*rec));
    char *buf = malloc(step ? step : 1);
    xlock l = {0};
    int rc = rec && buf ? gc_repl_lookup(name, rec) : -ENOMEM;
    if (!rc)
        rc = xlock_take(rec, &l);
    if (!rc) /* the record again, under the lock */
        rc = gc_repl_lookup(name, rec);
    const gp_repl *p = &rec->repl;
    if (!rc && ((uint32_t)s >= rec->nsub || bad >= p->ncopy))
        rc = -EINVAL;
    if (!rc && p->state[s][bad] != GP_COPY_INSYNC)
        rc = GFS_ESTALE;
    int moved = 0;
    for (uint64_t o = lo; !rc && !moved && o < hi; o += step) {
        uint64_t n = hi - o < step ? hi - o : step;
        moved = GFS_ENOCOPY;
        for (int c = 0; c < p->ncopy && moved; c++) {
            if (c == bad || p->state[s][c] != GP_COPY_INSYNC)
                continue;
            bool src_err;
            moved = span_move(rec, s, fork, c, bad, o, n, buf, &src_err);
            if (moved && !src_err) {
                /* the bad copy's server failed the write: stale, as a
                 * replicated write's failed copy */
                gp_record *out = malloc(sizeof(*out));
                int m = out ? gc_repl_record_set(name, s, bad, GP_COPY_STALE, 0,
                                                 0, out)
                            : -ENOMEM;
                if (!m)
                    gc_repl_cache_record(name, out);
                free(out);
                break;
            }
            if (moved)
                moved = GFS_ENOCOPY; /* that source failed too: the next */
        }
    }
    if (!rc)
        rc = moved;
    if (l.n)
        xlock_drop(&l);
    if (rec_out && rec)
        *rec_out = *rec;
    free(rec);
    free(buf);
    return rc;
}

/* After a repair of copy c of fork kid: this handle uses the copy again
 * when its copies are still those of the record repaired from; else the
 * next write records it stale first (gc_repl_settle), as any copy in sync
 * this handle does not hold. */
static void handle_restore(int kid, int c, const gp_record *rec, bool ok)
{
    gc_fork k;
    if (gc_fork_get(kid, &k))
        return;
    uint64_t fkid = 0;
    if (ok && k.gen == rec->repl.gen &&
        gc_repl_copy_open(rec, k.subfile, c, k.name, &fkid))
        fkid = 0;
    pthread_mutex_lock(&gc_g.lock);
    gc_fork *t = gc_idtab_at(&gc_g.forks, kid);
    if (t && fkid && !t->cfkid[c] && t->gen == rec->repl.gen) {
        t->cfkid[c] = fkid;
        t->cepoch[c] = gc_conn_epoch(gc_server_conn(t->cserver[c]));
        t->cmiss &= (uint8_t) ~(1u << c);
        fkid = 0;
    }
    pthread_mutex_unlock(&gc_g.lock);
    if (fkid)
        gc_FORK_CLOSE_call(gc_server_conn(k.cserver[c]),
                           &(gp_FORK_CLOSE_req){.fkid = fkid}, NULL, NULL);
}

/* A read of fork kid found copy c failing its checksum and got the bytes
 * from another copy: the chunks the read touched are rewritten. */
void gc_repl_repair_after_read(int kid, int c, const gc_xfer *x)
{
    gc_fork k;
    gc_file *f = malloc(sizeof(*f));
    gp_record *rec = malloc(sizeof(*rec));
    if (!f || !rec || gc_fork_get(kid, &k) || gc_file_get(k.fid, f) || !x->n) {
        free(f);
        free(rec);
        return;
    }
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < x->n; i++) {
        if (x->pieces[i].off < lo)
            lo = x->pieces[i].off;
        if (x->pieces[i].off + x->pieces[i].len > hi)
            hi = x->pieces[i].off + x->pieces[i].len;
    }
    int rc = repair_span(f->name, k.subfile, k.name, c, lo, hi - lo, rec);
    handle_restore(kid, c, rec, rc == 0);
    free(f);
    free(rec);
}

/* ----------------------------------------------------------- resync --- */

#define RESYNC_CHUNK (4u << 20)

/* Copy fork `fork` (size bytes) from (src server, hid) to (dst, hid). */
static int copy_fork(int ss, uint64_t shid, int ds, uint64_t dhid,
                     const char *fork, uint64_t size, bool csum, char *buf)
{
    gc_conn *sc = gc_server_conn(ss), *dc = gc_server_conn(ds);
    int rc = gc_FORK_CREATE_call(
        dc, &(gp_FORK_CREATE_req){.hid = dhid, .fork = fork}, NULL, NULL);
    if (rc && rc != -EEXIST)
        return rc;
    gp_FORK_OPEN_rep so, dopen;
    rc = gc_FORK_OPEN_call(sc, &(gp_FORK_OPEN_req){.hid = shid, .fork = fork},
                           &so, NULL);
    if (rc)
        return rc;
    rc = gc_FORK_OPEN_call(dc, &(gp_FORK_OPEN_req){.hid = dhid, .fork = fork},
                           &dopen, NULL);
    if (rc)
        goto out_src;
    rc = gc_FORK_TRUNCATE_call(
        dc, &(gp_FORK_TRUNCATE_req){.fkid = dopen.fkid, .size = size}, NULL,
        NULL);
    for (uint64_t off = 0; !rc && off < size; off += RESYNC_CHUNK) {
        uint64_t len = size - off < RESYNC_CHUNK ? size - off : RESYNC_CHUNK;
        gp_ext p = {off, len, {buf}};
        gc_xfer t = {.server = ss,
                     .fkid = so.fkid,
                     .csum = csum, /* a checksummed copy stays one */
                     .pieces = &p,
                     .n = 1,
                     .way = gc_route_copy()};
        rc = gc_transfer_plain(GFS_READ, &t, 1);
        if (!rc) {
            t.server = ds;
            t.fkid = dopen.fkid;
            rc = gc_transfer_plain(GFS_WRITE, &t, 1);
        }
    }
    if (!rc)
        rc = gc_FORK_SYNC_call(dc, &(gp_FORK_SYNC_req){.fkid = dopen.fkid},
                               NULL, NULL);
    gc_FORK_CLOSE_call(dc, &(gp_FORK_CLOSE_req){.fkid = dopen.fkid}, NULL,
                       NULL);
out_src:
    gc_FORK_CLOSE_call(sc, &(gp_FORK_CLOSE_req){.fkid = so.fkid}, NULL, NULL);
    return rc;
}

/* The forks of header hid on server: names and sizes (caller frees). */
static int fork_list(int server, uint64_t hid, gp_FORK_item **out, size_t *n)
{
    gc_tail t;
    gp_FORK_LIST_rep m;
    *out = NULL;
    *n = 0;
    int rc = gc_FORK_LIST_call(gc_server_conn(server),
                               &(gp_FORK_LIST_req){.hid = hid}, &m, &t);
    if (rc)
        return rc;
    gp_FORK_item *v = calloc(m.n ? m.n : 1, sizeof(*v));
    if (!v)
        t.r.err = -ENOMEM;
    for (uint32_t i = 0; v && i < m.n && !t.r.err; i++)
        gp_FORK_item_decode(&t.r, &v[i]);
    rc = gc_tail_end(&t);
    if (rc) {
        free(v);
        return rc;
    }
    *out = v;
    *n = m.n;
    return 0;
}

/* Bring copy c of subfile s up to date from copy src. */
static int resync_copy(const char *name, const gp_record *rec, int s, int c,
                       int src, char *buf)
{
    const gp_repl *p = &rec->repl;
    int ds = (int)p->server[s][c], ss = (int)p->server[s][src];
    uint64_t dsid = 0, hid = p->hid[s][c];
    int rc = gc_repl_server_dsid(ds, &dsid);
    if (rc)
        return rc;
    if (dsid != p->dsid[s][c] || !hid) {
        /* a new data directory: a fresh header there */
        gp_SUB_CREATE_rep m;
        rc = gc_SUB_CREATE_call(
            gc_server_conn(ds),
            &(gp_SUB_CREATE_req){.filename = name, .subfile = (uint32_t)s}, &m,
            NULL);
        if (rc)
            return rc;
        hid = m.hid;
    }
    gp_FORK_item *sv, *dv;
    size_t sn, dn;
    rc = fork_list(ss, p->hid[s][src], &sv, &sn);
    if (rc)
        return rc;
    rc = fork_list(ds, hid, &dv, &dn);
    for (size_t i = 0; !rc && i < dn; i++) {
        bool keep = false;
        for (size_t j = 0; j < sn; j++)
            keep = keep || strcmp(dv[i].fork, sv[j].fork) == 0;
        if (!keep)
            rc = gc_FORK_DELETE_call(
                gc_server_conn(ds),
                &(gp_FORK_DELETE_req){.hid = hid, .fork = dv[i].fork}, NULL,
                NULL);
    }
    for (size_t j = 0; !rc && j < sn; j++)
        rc = copy_fork(ss, p->hid[s][src], ds, hid, sv[j].fork, sv[j].size,
                       gc_rec_checksummed(rec), buf);
    free(sv);
    free(dv);
    if (rc)
        return rc;
    gp_record *out = malloc(sizeof(*out));
    rc = out ? gc_repl_record_set(name, s, c, GP_COPY_INSYNC, hid, dsid, out)
             : -ENOMEM;
    free(out);
    return rc;
}

/* A copy recorded stale, or one whose server answers another data
 * directory than the copy's (wiped); a server that does not answer
 * counts as needing it (resync decides under the lock). */
static bool resync_needed(const gp_record *rec)
{
    const gp_repl *p = &rec->repl;
    uint64_t seen[GP_MAX_COPIES * 4] = {0};
    int seen_server[GP_MAX_COPIES * 4], nseen = 0;
    for (uint32_t s = 0; s < rec->nsub; s++)
        for (int c = 0; c < p->ncopy; c++) {
            if (p->state[s][c] != GP_COPY_INSYNC)
                return true;
            int server = (int)p->server[s][c];
            uint64_t dsid = 0;
            int i = 0;
            while (i < nseen && seen_server[i] != server)
                i++;
            if (i < nseen) {
                dsid = seen[i];
            } else if (gc_repl_server_dsid(server, &dsid)) {
                return true;
            } else if (nseen < GP_MAX_COPIES * 4) {
                seen_server[nseen] = server;
                seen[nseen++] = dsid;
            }
            if (dsid != p->dsid[s][c])
                return true;
        }
    return false;
}

int gc_repl_resync(const char *name, int *fixed)
{
    *fixed = 0;
    gp_record *rec = malloc(sizeof(*rec));
    char *buf = malloc(RESYNC_CHUNK);
    int rc = rec && buf ? gc_repl_lookup(name, rec) : -ENOMEM;
    if (rc || rec->repl.ncopy <= 1)
        goto out;
    gp_repl *p = &rec->repl;
    if (!resync_needed(rec))
        goto out; /* nothing stale: no writer waits */
    /* the writers' lock, exclusively, on every copy in sync of subfile 0 */
    xlock l;
    rc = xlock_take(rec, &l);
    if (rc)
        goto out;
    /* the record again, under the lock */
    rc = gc_repl_lookup(name, rec);
    for (uint32_t s = 0; !rc && s < rec->nsub; s++) {
        int src = -1;
        for (int c = 0; c < p->ncopy && src < 0; c++) {
            uint64_t dsid = 0;
            if (p->state[s][c] == GP_COPY_INSYNC &&
                !gc_repl_server_dsid((int)p->server[s][c], &dsid) &&
                dsid == p->dsid[s][c])
                src = c;
        }
        if (src < 0) {
            rc = GFS_ENOCOPY;
            break;
        }
        for (int c = 0; c < p->ncopy && !rc; c++) {
            uint64_t dsid = 0;
            int k = gc_repl_server_dsid((int)p->server[s][c], &dsid);
            if (k)
                continue; /* still down: stays as it is */
            if (p->state[s][c] == GP_COPY_INSYNC && dsid == p->dsid[s][c])
                continue;
            rc = resync_copy(name, rec, (int)s, c, src, buf);
            if (!rc) {
                (*fixed)++;
                rc = gc_repl_lookup(name, rec);
            }
        }
    }
    if (!rc) {
        gc_repl_record_heal(name, rec);
        gc_repl_counter_publish(rec);
        gc_repl_cache_record(name, rec);
    }
    xlock_drop(&l);
out:
    free(rec);
    free(buf);
    return rc;
}

/* ------------------------------------------------------------ scrub --- */

static int scrub_copy(int server, uint64_t fkid, gp_SCRUB_rep *m)
{
    return gc_SCRUB_call(gc_server_conn(server), &(gp_SCRUB_req){.fkid = fkid},
                         m, NULL);
}

int gc_repl_scrub(int kid, int64_t *chunks, int64_t *bad, int64_t *repaired,
                  gfs_scrub_fn fn, void *arg)
{
    gc_fork k;
    int rc = gc_fork_get(kid, &k);
    if (rc)
        return rc;
    if (k.ncopy <= 1)
        return -EINVAL;
    gc_file *f = malloc(sizeof(*f));
    rc = f ? gc_file_get(k.fid, f) : -ENOMEM;
    *chunks = *bad = *repaired = 0;
    int scrubbed = 0;
    for (int c = 0; !rc && c < k.ncopy; c++) {
        if (gc_fork_get(kid, &k) || !k.cfkid[c])
            continue; /* not in sync for this handle: resync's */
        gp_SCRUB_rep m;
        int r = scrub_copy(k.cserver[c], k.cfkid[c], &m);
        if (r == -ENODATA)
            continue; /* nothing stored with checksums there yet */
        if (r) {
            rc = r;
            break;
        }
        scrubbed++;
        *chunks += (int64_t)m.chunks;
        /* repair the first failing chunk, scrub again: the server names
         * one chunk per scrub; no progress on a chunk ends it */
        uint64_t last = UINT64_MAX;
        while (m.bad && m.first_bad != last) {
            last = m.first_bad;
            (*bad)++;
            r = repair_span(f->name, k.subfile, k.name, c,
                            m.first_bad * REPAIR_CHUNK, REPAIR_CHUNK, NULL);
            if (fn)
                fn(c, k.cserver[c], (int64_t)m.first_bad, r, arg);
            if (r)
                break;
            (*repaired)++;
            if (scrub_copy(k.cserver[c], k.cfkid[c], &m))
                break;
        }
        if (m.bad && m.first_bad == last && !r) {
            (*repaired)--; /* rewritten, and still failing */
            r = GFS_ECHECKSUM;
        }
        if (m.bad > 1 && r)
            *bad += (int64_t)m.bad - 1; /* failing, not reached */
    }
    free(f);
    if (!rc && !scrubbed)
        rc = -ENODATA;
    return rc;
}

int gfs_scrub_fork_repair(int kid, int64_t *chunks, int64_t *bad,
                          int64_t *repaired, gfs_scrub_fn fn, void *arg)
{
    int rc = gc_check_init();
    if (rc)
        return rc;
    if (!chunks || !bad || !repaired)
        return -EINVAL;
    return gc_repl_scrub(kid, chunks, bad, repaired, fn, arg);
}
