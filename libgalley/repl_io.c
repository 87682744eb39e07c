/*
 * repl_io.c -- a replicated file's data path (repl.c states the rules):
 * the copies a handle opens, failover of a read to another copy, the
 * writers' lock and layout generation around every write, and a transfer
 * sent to every copy in sync (writes) or to one after another (reads).
 *
 * Threads: any (repl.c).
 */
#include "repl_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ forks --- */

/* Open copy c of the fork on its server, checking the server is the one
 * the copy was made on. */
int gc_repl_copy_open(const gp_record *rec, int s, int c, const char *fork,
                      uint64_t *fkid)
{
    const gp_repl *p = &rec->repl;
    int server = (int)p->server[s][c];
    uint64_t dsid = 0;
    int rc = gc_repl_server_dsid(server, &dsid);
    if (!rc && dsid != p->dsid[s][c])
        rc = GFS_ESTALE; /* its data directory is not the one we wrote */
    gp_FORK_OPEN_rep m;
    if (!rc)
        rc = gc_FORK_OPEN_call(
            gc_server_conn(server),
            &(gp_FORK_OPEN_req){.hid = p->hid[s][c], .fork = fork}, &m, NULL);
    if (!rc)
        *fkid = m.fkid;
    return rc;
}

static void copies_close(gc_fork *k)
{
    for (int c = 0; c < k->ncopy; c++)
        if (k->cfkid[c]) {
            gc_FORK_CLOSE_call(gc_server_conn(k->cserver[c]),
                               &(gp_FORK_CLOSE_req){.fkid = k->cfkid[c]}, NULL,
                               NULL);
            k->cfkid[c] = 0;
        }
}

/* Point the fork's (server, fkid) at its first usable copy. */
static int copies_primary(gc_fork *k)
{
    for (int c = 0; c < k->ncopy; c++)
        if (k->cfkid[c]) {
            k->server = k->cserver[c];
            k->fkid = k->cfkid[c];
            return 0;
        }
    return GFS_ENOCOPY;
}

/* Open every copy in sync of (rec, subfile s) fork `name` into k. */
static int copies_open(const gp_record *rec, int s, const char *name,
                       gc_fork *k)
{
    int first = 0;
    k->ncopy = rec->repl.ncopy;
    k->gen = rec->repl.gen;
    k->cmiss = 0;
    snprintf(k->name, sizeof(k->name), "%s", name);
    for (int c = 0; c < k->ncopy; c++) {
        k->cserver[c] = (int)rec->repl.server[s][c];
        k->cfkid[c] = 0;
        if (rec->repl.state[s][c] != GP_COPY_INSYNC)
            continue;
        gc_conn *conn = gc_server_conn(k->cserver[c]);
        int rc = gc_repl_copy_open(rec, s, c, name, &k->cfkid[c]);
        k->cepoch[c] = gc_conn_epoch(conn);
        if (rc)
            k->cmiss |= (uint8_t)(1u << c);
        if (rc && !first)
            first = rc;
    }
    if (copies_primary(k)) {
        copies_close(k);
        return first == -ENOENT ? first : GFS_ENOCOPY;
    }
    return 0;
}

int gc_repl_fork_open(int fid, int subfile, const char *name, gc_fork *k)
{
    gc_file *f = malloc(sizeof(*f));
    if (!f)
        return -ENOMEM;
    int rc = gc_file_get(fid, f);
    if (!rc && (subfile < 0 || (uint32_t)subfile >= f->rec.nsub))
        rc = -EINVAL;
    if (!rc)
        rc = copies_open(&f->rec, subfile, name, k);
    free(f);
    return rc;
}

void gc_repl_fork_close(const gc_fork *k)
{
    gc_fork c = *k;
    copies_close(&c);
}

bool gc_repl_file(int fid)
{
    gc_file *f = malloc(sizeof(*f));
    bool r = f && !gc_file_get(fid, f) && f->rec.repl.ncopy > 1;
    free(f);
    return r;
}

int gc_repl_fork_each(int fid, int subfile, const char *name, int what)
{
    gc_file *f = malloc(sizeof(*f));
    if (!f)
        return -ENOMEM;
    int rc = gc_file_get(fid, f);
    if (!rc && (subfile < 0 || (uint32_t)subfile >= f->rec.nsub))
        rc = -EINVAL;
    const gp_repl *p = &f->rec.repl;
    int ok = 0, first = 0;
    for (int c = 0; !rc && c < p->ncopy; c++) {
        if (p->state[subfile][c] != GP_COPY_INSYNC)
            continue; /* resync makes its forks */
        gc_conn *conn = gc_server_conn((int)p->server[subfile][c]);
        uint64_t hid = p->hid[subfile][c];
        int k = what == GC_REPL_CREATE
                    ? gc_FORK_CREATE_call(
                          conn, &(gp_FORK_CREATE_req){.hid = hid, .fork = name},
                          NULL, NULL)
                    : gc_FORK_DELETE_call(
                          conn, &(gp_FORK_DELETE_req){.hid = hid, .fork = name},
                          NULL, NULL);
        if (!k)
            ok++;
        else if (!first)
            first = k;
        /* a copy that cannot make the fork is stale from now on */
        if (k && what == GC_REPL_CREATE && k != -EEXIST) {
            gp_record *rec = malloc(sizeof(*rec));
            int m = rec ? gc_repl_record_set(f->name, subfile, c, GP_COPY_STALE,
                                             0, 0, rec)
                        : -ENOMEM;
            if (!m)
                gc_repl_cache_record(f->name, rec);
            free(rec);
            if (m && !rc)
                rc = -EIO;
        }
    }
    if (!rc && !ok)
        rc = first;
    free(f);
    return rc;
}

/* -------------------------------------------------------- failover --- */

/* A per-copy error worth trying another copy for; a caller's mistake
 * would fail on every copy alike. */
static bool copy_error(int err)
{
    return err != -EINVAL && err != -EFAULT && err != GFS_EBADID &&
           err != GFS_ENOTINIT;
}

int gc_repl_failover(int kid, int copy, int err, int op)
{
    gc_fork k;
    int rc = gc_fork_get(kid, &k);
    if (rc)
        return rc;
    if (copy < 0 || copy >= k.ncopy)
        return -EINVAL;
    if (!copy_error(err))
        return err;
    if (op == GFS_WRITE) {
        /* the acknowledgement rule: stale in the record first */
        gc_file *f = malloc(sizeof(*f));
        gp_record *rec = malloc(sizeof(*rec));
        rc = f && rec ? gc_file_get(k.fid, f) : -ENOMEM;
        if (!rc)
            rc = gc_repl_record_set(f->name, k.subfile, copy, GP_COPY_STALE, 0,
                                    0, rec);
        if (!rc)
            gc_repl_cache_record(f->name, rec);
        free(f);
        free(rec);
        if (rc)
            return -EIO;
    }
    /* this handle never uses the copy again */
    pthread_mutex_lock(&gc_g.lock);
    gc_fork *t = gc_idtab_at(&gc_g.forks, kid);
    uint64_t drop = 0;
    if (t && t->cfkid[copy]) {
        drop = t->cfkid[copy];
        t->cfkid[copy] = 0;
    }
    if (t && op == GFS_WRITE)
        t->cmiss &= (uint8_t) ~(1u << copy);
    else if (t && drop)
        t->cmiss |= (uint8_t)(1u << copy); /* a write of this handle records
                                            * it stale first: it no longer
                                            * goes there */
    int next = t ? copies_primary(t) : GFS_EBADID;
    int nc = GFS_ENOCOPY;
    for (int c = 0; t && c < t->ncopy; c++)
        if (t->cfkid[c] && t->cserver[c] == t->server) {
            nc = c;
            break;
        }
    pthread_mutex_unlock(&gc_g.lock);
    if (drop)
        gc_FORK_CLOSE_call(gc_server_conn(k.cserver[copy]),
                           &(gp_FORK_CLOSE_req){.fkid = drop}, NULL, NULL);
    return next ? next : nc;
}

/* ---------------------------------------------------------- writers --- */

int gc_repl_settle(int kid)
{
    gc_fork k;
    int rc = gc_fork_get(kid, &k);
    for (int c = 0; !rc && c < k.ncopy; c++)
        if (k.cmiss & (1u << c)) {
            int f = gc_repl_failover(kid, c, GFS_ESERVERDOWN, GFS_WRITE);
            if (f == -EIO)
                return f;
        }
    return rc;
}

/* Reopen the copies of every open fork of file fid from the newest
 * record (after a resync or another client's stale mark). */
static int refresh_file(int fid, const char *name, gp_record *rec)
{
    int rc = gc_repl_lookup(name, rec);
    if (rc)
        return rc;
    gc_repl_cache_record(name, rec);
    gc_fork k;
    for (int kid = -1; (kid = gc_fork_next(kid, &k)) >= 0;) {
        if (k.fid != fid || k.ncopy <= 1 || k.gen == rec->repl.gen)
            continue;
        gc_fork n = k;
        int r = copies_open(rec, k.subfile, k.name, &n);
        if (r)
            return r;
        pthread_mutex_lock(&gc_g.lock);
        gc_fork *t = gc_idtab_at(&gc_g.forks, kid);
        if (t) {
            gc_fork old = *t;
            *t = n;
            n = old;
        }
        pthread_mutex_unlock(&gc_g.lock);
        copies_close(&n); /* the old set (or the new one, if gone) */
    }
    return 0;
}

typedef struct wlock {
    int fid, server;
    uint64_t hid;
} wlock;

/* Take the writers' shared lock of file fid and bring its forks' copies
 * to the current generation. */
static int write_begin(int fid, wlock *w)
{
    gc_file *f = malloc(sizeof(*f));
    gp_record *rec = malloc(sizeof(*rec));
    int rc = f && rec ? gc_file_get(fid, f) : -ENOMEM;
    w->fid = fid;
    w->server = -1;
    for (int c = 0; !rc && c < f->rec.repl.ncopy; c++) {
        if (f->rec.repl.state[0][c] != GP_COPY_INSYNC)
            continue;
        int server = (int)f->rec.repl.server[0][c];
        uint64_t hid = f->rec.repl.hid[0][c];
        if (gc_range_lock(server, hid, GC_LOCK_BLOCKS, true, REPL_LOCK_OFF, 1,
                          false))
            continue;
        w->server = server;
        w->hid = hid;
        int64_t gen = gc_counter(server, hid, REPL_GEN_KEY, false, 0);
        if (gen < 0) {
            rc = (int)gen;
            break;
        }
        gc_fork k;
        bool behind = (uint64_t)gen > f->rec.repl.gen;
        for (int kid = -1; !behind && (kid = gc_fork_next(kid, &k)) >= 0;)
            behind = k.fid == fid && k.ncopy > 1 && k.gen < (uint64_t)gen;
        if (behind)
            rc = refresh_file(fid, f->name, rec);
        for (int kid = -1; !rc && (kid = gc_fork_next(kid, &k)) >= 0;)
            if (k.fid == fid && k.cmiss)
                rc = gc_repl_settle(kid);
        break;
    }
    if (!rc && w->server < 0)
        rc = GFS_ENOCOPY;
    free(f);
    free(rec);
    return rc;
}

static void write_end(const wlock *w)
{
    if (w->server >= 0)
        gc_range_lock(w->server, w->hid, GC_LOCK_BLOCKS, false, REPL_LOCK_OFF,
                      1, false);
}

/* ---------------------------------------------------------- transfer -- */

typedef struct clone {
    size_t xi; /* the caller's transfer */
    int kid, copy;
    uint32_t epoch;
} clone;

/* Fill y with transfers of x to the copies of their forks: every usable
 * copy (writes) or the first usable copy not yet failed (reads). */
static size_t clones_make(int op, const gc_xfer *x, size_t nx, gc_xfer *y,
                          clone *cl, const bool *done)
{
    size_t ny = 0;
    for (size_t i = 0; i < nx; i++) {
        if (done[i])
            continue;
        gc_fork k;
        if (!x[i].rkid || gc_fork_get(x[i].rkid - 1, &k) || k.ncopy <= 1) {
            y[ny] = x[i];
            cl[ny++] = (clone){.xi = i, .kid = -1, .copy = -1};
            continue;
        }
        for (int c = 0; c < k.ncopy; c++) {
            if (!k.cfkid[c])
                continue;
            y[ny] = x[i];
            y[ny].server = k.cserver[c];
            y[ny].fkid = k.cfkid[c];
            y[ny].way = gc_route_copy();
            cl[ny++] = (clone){
                .xi = i, .kid = x[i].rkid - 1, .copy = c, .epoch = k.cepoch[c]};
            if (op == GFS_READ)
                break;
        }
    }
    return ny;
}

int gc_repl_transfer(int op, gc_xfer *x, size_t nx)
{
    size_t cap = nx * GP_MAX_COPIES;
    gc_xfer *y = calloc(cap, sizeof(*y));
    clone *cl = calloc(cap, sizeof(*cl));
    bool *done = calloc(nx, sizeof(*done));
    int *ok = calloc(nx, sizeof(*ok));
    uint8_t *csbad = calloc(nx, 1); /* reads: copies failing a checksum */
    int *cskid = calloc(nx, sizeof(*cskid));
    wlock *locks = calloc(nx, sizeof(*locks));
    size_t nlocks = 0;
    int rc = y && cl && done && ok && locks && csbad && cskid ? 0 : -ENOMEM;

    for (size_t i = 0; i < nx && !rc; i++) {
        x[i].status = 0;
        x[i].fork_size = 0;
    }
    /* writers: the shared lock of each file, once (and this process's
     * own, which the server's cannot give: see xlock) */
    bool local = op == GFS_WRITE && !rc;
    if (local)
        pthread_rwlock_rdlock(&gc_repl_local_writers);
    for (size_t i = 0; i < nx && !rc && op == GFS_WRITE; i++) {
        gc_fork k;
        if (!x[i].rkid || gc_fork_get(x[i].rkid - 1, &k))
            continue;
        bool have = false;
        for (size_t j = 0; j < nlocks; j++)
            have = have || locks[j].fid == k.fid;
        if (!have) {
            rc = write_begin(k.fid, &locks[nlocks]);
            if (locks[nlocks].server >= 0)
                nlocks++;
        }
    }

    /* writes: one round to every usable copy; reads: a round per copy
     * until each transfer has its data from one */
    for (int round = 0; !rc && round <= GP_MAX_COPIES; round++) {
        size_t ny = clones_make(op, x, nx, y, cl, done);
        if (!ny)
            break;
        gc_transfer_plain(op, y, ny);
        for (size_t j = 0; j < ny; j++) {
            size_t i = cl[j].xi;
            int st = y[j].status;
            if (cl[j].kid >= 0 && !st &&
                gc_conn_epoch(gc_server_conn(y[j].server)) != cl[j].epoch)
                st = GFS_ESERVERDOWN; /* restarted under us: not trusted */
            if (!st) {
                ok[i]++;
                if (y[j].fork_size > x[i].fork_size)
                    x[i].fork_size = y[j].fork_size;
                if (op == GFS_READ)
                    done[i] = true;
                continue;
            }
            if (!x[i].status)
                x[i].status = st; /* the first error */
            if (cl[j].kid < 0) {
                done[i] = true;
                continue;
            }
            if (op == GFS_READ && st == GFS_ECHECKSUM) {
                csbad[i] |= (uint8_t)(1u << cl[j].copy);
                cskid[i] = cl[j].kid;
            }
            int f = gc_repl_failover(cl[j].kid, cl[j].copy, st, op);
            if (f == -EIO) {
                x[i].status = -EIO; /* could not record it stale */
                done[i] = true;
            } else if (f < 0 && op == GFS_READ) {
                done[i] = true; /* no copy left (or not a copy's fault) */
            }
        }
        if (op == GFS_WRITE) {
            for (size_t i = 0; i < nx; i++)
                if (ok[i] && x[i].status != -EIO)
                    x[i].status = 0; /* the failed copies are stale now */
            break;
        }
        for (size_t i = 0; i < nx; i++)
            if (!done[i])
                x[i].status = 0; /* another copy comes next round */
    }
    for (size_t j = 0; j < nlocks; j++)
        write_end(&locks[j]);
    if (local)
        pthread_rwlock_unlock(&gc_repl_local_writers);
    /* a copy that failed its checksum where another gave the bytes: the
     * chunks read are rewritten from a good copy (the caller has its
     * bytes whatever the repair's outcome) */
    for (size_t i = 0; i < nx && !rc && op == GFS_READ; i++)
        for (int c = 0; csbad[i] && c < GP_MAX_COPIES; c++)
            if (ok[i] && !x[i].status && (csbad[i] & (1u << c)))
                gc_repl_repair_after_read(cskid[i], c, &x[i]);
    for (size_t i = 0; i < nx && !rc; i++)
        if (x[i].status)
            rc = x[i].status;
    free(y);
    free(cl);
    free(done);
    free(ok);
    free(csbad);
    free(cskid);
    free(locks);
    return rc;
}
