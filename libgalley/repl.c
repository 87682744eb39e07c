/*
 * repl.c -- replicated files: R copies (1..3) of every subfile, each on
 * another server, written by the client to every copy in sync and read
 * from any of them.
 *
 * The record.  A file's record (proto/gproto.h, gp_repl) lists, per
 * subfile, every copy: server, subfile header, the id of the server's
 * data directory when the copy was made or last resynced (dsid, REPL_ID),
 * and a state, in sync or stale; and a layout generation, raised by one
 * on every change.  The metadata server stores a change only when its
 * generation is above the stored one (NS_REPL_SET), so of two clients
 * deciding from one record exactly one wins and the other reloads and
 * decides again.  The record of a replicated file itself has three
 * copies (as many as there are servers, below three): on the name's
 * metadata server and the servers after it.  A change is stored on a
 * majority of them or fails (-EIO), and a lookup reads a majority and
 * takes the highest generation, so every lookup sees the last change;
 * a file whose metadata server is lost still opens and is written while
 * a majority answers (gc_repl_lookup).  A record copy that missed a
 * change, or was lost with a wiped server, is put back by resync.
 *
 * Acknowledgement rule.  A write (gc_repl_transfer) goes to every copy
 * this handle holds in sync.  It returns success only when every one of
 * them has it, or when each copy that failed (error, timeout, a server
 * restarted under the handle) has first been recorded stale with a new
 * generation (gc_repl_failover).  When that record cannot be written
 * either, the write fails with -EIO; when no copy took the write it
 * fails with the copies' error.  Never a success on fewer copies than
 * the record claims.
 *
 * Reads go to one copy in sync; on any error of that copy the next copy
 * in sync is tried (gc_repl_failover, the one place where "this copy
 * failed, try the next" is decided -- for reads it forgets the copy for
 * this handle, for writes it also marks it stale in the record).  A
 * stale copy is never opened, so never read.
 *
 * Fencing.  (1) The record's generation: NS_REPL_SET refuses an update
 * made from an older record (GFS_ESTALEGEN).  (2) Writers and resync:
 * every write to a replicated file holds a shared lock (the block-lock
 * space, far past any block the locality layout claims, so it never
 * meets a user's byte-range lock) on subfile 0's first copy in sync, and
 * under it compares the file's generation counter (galley.repl.gen on
 * that header) with the generation its copies were chosen at; when they
 * differ it reloads the record and reopens its copies before writing.
 * Resync holds the same lock exclusively while it copies and until the
 * copy is recorded in sync and the counter raised, so no writer can
 * write the old set of copies while a copy is being brought back, and
 * none can miss the copy once it is back.  The server's locks of one
 * connection never conflict, so within one process a rwlock
 * (local_writers) does the same between its writers and a resync or
 * repair it runs.  (3) A copy whose server
 * restarted under a handle (its connection's epoch changed) is never used
 * again by that handle: a restarted server may hold a copy that went
 * stale while it was down, and only the record says which.
 *
 * Wiped servers.  Every copy carries its server's data-directory id.  A
 * copy whose server answers another id (its directory was wiped and made
 * again) is not opened, and resync rebuilds it on a fresh header there.
 *
 * Resync (gc_repl_resync, `galley resync`): for every stale copy (or one
 * whose server's id changed) a whole-copy copy from a copy in sync:
 * every fork, truncated to the source's size and rewritten (with CRCs for
 * a checksummed file, so the copy stays checksummed); then the copy is
 * recorded in sync with the server's current id.  Whole copy because
 * nothing records which ranges a stale copy missed.  Subfile counters
 * and locks are not copied (see Counters below).  A file with nothing
 * stale and every server answering its copies' ids is left alone without
 * taking the writers' lock.  After a restart the launcher runs it by
 * itself: `galley-cluster restart-server` (and `start` of a cluster that
 * ran before) starts `galley resync` of every file in the background.
 *
 * Repair of a checksum failure (repair_span).  A read that finds a copy
 * failing its checksum (GFS_ECHECKSUM) reads the next copy in sync (the
 * failover); when that one gives the bytes, the chunks the read touched
 * (32 KiB, servers/csum.c) are rewritten on the bad copy from a good
 * copy, whole, so the bad copy's server replaces them without reading
 * them and makes their CRCs anew.  It is a replicated write and follows
 * their rules: under the writers' lock held exclusively (no write lands
 * between the read of the good copy and the write of the bad one), from
 * the record read under that lock (only a copy in sync at the current
 * generation is written, its data-directory id checked).  When the bad
 * copy's server refuses the write, the copy is recorded stale (resync
 * rebuilds it); when no copy has good bytes, or even the stale record
 * cannot be written, the chunk is left as it is: every read of it still
 * fails over, never returns it, and `galley scrub` reports it.  The
 * caller's read has the good bytes whatever the repair's outcome.  Scrub
 * (gc_repl_scrub, `galley scrub`) checks every copy of a fork and
 * repairs each failing chunk the same way.
 *
 * Not replicated: files of the locality layout (refused at create), the
 * same-host direct path (replicated forks always take the server path:
 * gc_conn_xfer, conn.c, declines a transfer with rkid or server_path
 * for the direct whole-transfer path; server_path, set only here, goes
 * with their chunks).
 *
 * Counters (FETCH_SET / FETCH_ADD: the MPI-IO shared file pointer, reset
 * at every MPI open) of a replicated file go to every copy in sync of
 * subfile 0 and are answered by the first that answers
 * (gc_repl_counter), so an MPI open and a shared pointer work while copy
 * 0's server is down.  Resync does not copy counters (there is no list of
 * them): a copy brought back answers the values it had, until the next
 * MPI open resets them.  Byte-range locks still live on copy 0's server
 * alone.  A create that meets a down server answers -EEXIST when the
 * name's record is still found (a replicated file's record outlives its
 * metadata server), so MPI_MODE_CREATE opens of an existing file work.
 *
 * A copy a read failed over from is dropped by that handle and marked
 * in its cmiss, so the handle's next write records it stale before
 * writing (as a copy that failed to open): a write never silently skips
 * a copy the record holds in sync.  A repaired copy is taken back.
 *
 * Threads: any; the fork table through client.c, network through conn.c.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPL_GEN_KEY "galley.repl.gen"
/* the writers' lock: one block number nobody claims */
#define REPL_LOCK_OFF (UINT64_MAX - 1)

/* -------------------------------------------------------- the record -- */

static int record_server(const char *name, int j)
{
    return (gc_meta_server(name) + j) % gc_g.nservers;
}

/* Record copies of a replicated file, and how many make a majority. */
static int nrec(void)
{
    return gc_g.nservers < GP_MAX_COPIES ? gc_g.nservers : GP_MAX_COPIES;
}

static int quorum(void)
{
    return nrec() / 2 + 1;
}

int gc_repl_lookup(const char *name, gp_record *rec)
{
    int rc = gc_lookup(record_server(name, 0), name, rec);
    if (!rc && rec->repl.ncopy <= 1)
        return 0; /* one copy: the metadata server's record is the record */
    if (rc && rc != GFS_ESERVERDOWN && rc != GFS_ETIMEDOUT && rc != -ENOENT)
        return rc;
    /* a replicated file, or the metadata server is down or answered no
     * such file (its data directory may have been wiped): a majority */
    gp_record *other = malloc(sizeof(*other));
    if (!other)
        return -ENOMEM;
    int votes = rc ? 0 : 1, down = rc == -ENOENT ? 0 : !!rc;
    int first = rc;
    for (int j = 1; j < nrec(); j++) {
        int k = gc_lookup(record_server(name, j), name, other);
        if (k == GFS_ESERVERDOWN || k == GFS_ETIMEDOUT)
            down++;
        if (k || other->repl.ncopy <= 1)
            continue;
        votes++;
        if (rc || other->repl.gen > rec->repl.gen) {
            memcpy(rec, other, sizeof(*rec));
            rc = 0;
        }
    }
    free(other);
    if (!rc && votes < quorum())
        return GFS_ENOCOPY; /* the newest record may be on those down */
    if (rc && !down)
        return -ENOENT;
    return rc ? first : 0;
}

/* Put the newest record back on every record copy that lacks it (lost
 * with a wiped server, or older: missed a change while down). */
static void record_heal(const char *name, const gp_record *rec)
{
    gp_record *other = malloc(sizeof(*other));
    for (int j = 0; other && j < nrec(); j++) {
        gc_conn *c = gc_server_conn(record_server(name, j));
        int k = gc_lookup(record_server(name, j), name, other);
        if (k == -ENOENT)
            gc_NS_COMMIT_call(
                c, &(gp_NS_COMMIT_req){.name = name, .rec = (gp_record *)rec},
                NULL, NULL);
        else if (!k && other->repl.gen < rec->repl.gen)
            gc_NS_REPL_SET_call(
                c, &(gp_NS_REPL_SET_req){.name = name, .rec = (gp_record *)rec},
                NULL, NULL);
    }
    free(other);
}

/* Store rec (its generation already raised) on every record copy that
 * answers; 0 when a majority took it, GFS_ESTALEGEN when one had a
 * record as new (the caller looks up and decides again), else -EIO. */
static int record_store(const char *name, const gp_record *rec)
{
    int ok = 0;
    for (int j = 0; j < nrec(); j++) {
        gp_NS_REPL_SET_rep m;
        int k = gc_NS_REPL_SET_call(
            gc_server_conn(record_server(name, j)),
            &(gp_NS_REPL_SET_req){.name = name, .rec = (gp_record *)rec}, &m,
            NULL);
        if (!k)
            ok++;
        else if (k == GFS_ESTALEGEN)
            return k;
    }
    return ok >= quorum() ? 0 : -EIO;
}

/* The generation counter on subfile 0's copies in sync (a hint for
 * writers, the record decides); best effort. */
static void counter_publish(const gp_record *rec)
{
    for (int c = 0; c < rec->repl.ncopy; c++)
        if (rec->repl.state[0][c] == GP_COPY_INSYNC)
            gc_counter((int)rec->repl.server[0][c], rec->repl.hid[0][c],
                       REPL_GEN_KEY, true, rec->repl.gen);
}

int64_t gc_repl_counter(const gp_record *rec, const char *key, bool set,
                        uint64_t value)
{
    int64_t first = GFS_ENOCOPY;
    bool got = false;
    for (int c = 0; c < rec->repl.ncopy; c++) {
        if (rec->repl.state[0][c] != GP_COPY_INSYNC)
            continue;
        int64_t r = gc_counter((int)rec->repl.server[0][c], rec->repl.hid[0][c],
                               key, set, value);
        if (!got && (r >= 0 || first == GFS_ENOCOPY))
            first = r;
        got = got || r >= 0;
    }
    return first;
}

/* Set copy `copy` of subfile `sub` of file `name` to `state` (with its
 * header and data-directory id when hid != 0), from the newest record,
 * retrying while another client wins.  *out: the record stored. */
static int record_set(const char *name, int sub, int copy, int state,
                      uint64_t hid, uint64_t dsid, gp_record *out)
{
    for (int tries = 0; tries < 16; tries++) {
        int rc = gc_repl_lookup(name, out);
        if (rc)
            return rc;
        gp_repl *p = &out->repl;
        if ((uint32_t)sub >= out->nsub || copy >= p->ncopy)
            return -EINVAL;
        if (p->state[sub][copy] == state && !hid)
            return 0; /* someone did it */
        p->state[sub][copy] = (uint8_t)state;
        if (hid) {
            p->hid[sub][copy] = hid;
            p->dsid[sub][copy] = dsid;
            if (copy == 0)
                out->hid[sub] = hid; /* the record's own is copy 0 */
        }
        p->gen++;
        rc = record_store(name, out);
        if (rc == GFS_ESTALEGEN)
            continue;
        if (!rc)
            counter_publish(out);
        return rc;
    }
    return GFS_ESTALEGEN;
}

/* Update the cached record of every open file id of `name`. */
static void cache_record(const char *name, const gp_record *rec)
{
    pthread_mutex_lock(&gc_g.lock);
    for (int fid = -1; (fid = gc_idtab_next(&gc_g.files, fid)) >= 0;) {
        gc_file *f = gc_file_at(fid);
        if (f && strcmp(f->name, name) == 0 && f->rec.repl.gen < rec->repl.gen)
            gp_record_copy(&f->rec, rec);
    }
    pthread_mutex_unlock(&gc_g.lock);
}

static int server_dsid(int server, uint64_t *dsid)
{
    gp_REPL_ID_rep m;
    int rc =
        gc_REPL_ID_call(gc_server_conn(server), &(gp_REPL_ID_req){}, &m, NULL);
    if (!rc)
        *dsid = m.dsid;
    return rc;
}

/* --------------------------------------------------------- create ---- */

int gc_repl_place(gp_record *rec, int ncopy)
{
    int n = gc_g.nservers;
    if (ncopy < 1 || ncopy > GP_MAX_COPIES || ncopy > n)
        return -EINVAL;
    gp_repl *p = &rec->repl;
    p->ncopy = (uint8_t)ncopy;
    p->gen = 1;
    /* copy c of subfile s on the c-th server after copy 0's: distinct
     * for one subfile, spread over the cluster */
    for (uint32_t s = 0; s < rec->nsub; s++)
        for (int c = 0; c < ncopy; c++) {
            p->server[s][c] = (rec->server[s] + (uint32_t)c) % (uint32_t)n;
            p->hid[s][c] = 0;
            p->dsid[s][c] = 0;
            p->state[s][c] = GP_COPY_INSYNC;
        }
    return 0;
}

int gc_repl_create_copies(const char *name, gp_record *rec, const char *fork,
                          int *made)
{
    gp_repl *p = &rec->repl;
    int rc = 0;
    for (; *made < (int)rec->nsub; (*made)++) {
        int s = *made;
        p->hid[s][0] = rec->hid[s];
        for (int c = 0; c < p->ncopy && !rc; c++) {
            if (c > 0 && fork) { /* with its first fork, as copy 0 */
                gp_SUB_CREATE_FORK_rep m;
                rc = gc_SUB_CREATE_FORK_call(
                    gc_server_conn((int)p->server[s][c]),
                    &(gp_SUB_CREATE_FORK_req){
                        .filename = name, .subfile = (uint32_t)s, .fork = fork},
                    &m, NULL);
                if (!rc)
                    p->hid[s][c] = m.hid;
            } else if (c > 0) {
                gp_SUB_CREATE_rep m;
                rc = gc_SUB_CREATE_call(
                    gc_server_conn((int)p->server[s][c]),
                    &(gp_SUB_CREATE_req){.filename = name,
                                         .subfile = (uint32_t)s},
                    &m, NULL);
                if (!rc)
                    p->hid[s][c] = m.hid;
            }
            if (!rc)
                rc = server_dsid((int)p->server[s][c], &p->dsid[s][c]);
        }
        if (rc)
            return rc;
    }
    return 0;
}

void gc_repl_delete_copies(const gp_record *rec, int nsub)
{
    for (int s = 0; s < nsub; s++)
        for (int c = 1; c < rec->repl.ncopy; c++)
            if (rec->repl.hid[s][c])
                gc_SUB_DELETE_call(
                    gc_server_conn((int)rec->repl.server[s][c]),
                    &(gp_SUB_DELETE_req){.hid = rec->repl.hid[s][c]}, NULL,
                    NULL);
}

int gc_repl_commit_others(const char *name, const gp_record *rec)
{
    for (int j = 1; j < nrec(); j++) {
        int rc = gc_NS_COMMIT_call(
            gc_server_conn(record_server(name, j)),
            &(gp_NS_COMMIT_req){.name = name, .rec = (gp_record *)rec}, NULL,
            NULL);
        if (rc)
            return rc;
    }
    return 0;
}

void gc_repl_remove_others(const char *name)
{
    gp_record *rec = malloc(sizeof(*rec));
    if (!rec)
        return;
    for (int j = 1; j < nrec(); j++)
        gc_NS_REMOVE_call(gc_server_conn(record_server(name, j)),
                          &(gp_NS_REMOVE_req){.name = name},
                          &(gp_NS_REMOVE_rep){.rec = rec}, NULL);
    free(rec);
}

void gc_repl_setattr_others(const char *name, const char *attrs, size_t len)
{
    for (int j = 1; j < nrec(); j++)
        gc_NS_SETATTR_call(gc_server_conn(record_server(name, j)),
                           &(gp_NS_SETATTR_req){
                               .name = name,
                               .attrs = (const uint8_t *)attrs,
                               .attrs_len = (uint32_t)len,
                           },
                           NULL, NULL);
}

/* ------------------------------------------------------------ forks --- */

/* Open copy c of the fork on its server, checking the server is the one
 * the copy was made on. */
static int copy_open(const gp_record *rec, int s, int c, const char *fork,
                     uint64_t *fkid)
{
    const gp_repl *p = &rec->repl;
    int server = (int)p->server[s][c];
    uint64_t dsid = 0;
    int rc = server_dsid(server, &dsid);
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
        int rc = copy_open(rec, s, c, name, &k->cfkid[c]);
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
            int m =
                rec ? record_set(f->name, subfile, c, GP_COPY_STALE, 0, 0, rec)
                    : -ENOMEM;
            if (!m)
                cache_record(f->name, rec);
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
            rc = record_set(f->name, k.subfile, copy, GP_COPY_STALE, 0, 0, rec);
        if (!rc)
            cache_record(f->name, rec);
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
    cache_record(name, rec);
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
 * local_writers, which every replicated write holds shared. */
typedef struct xlock {
    int n;
    int server[GP_MAX_COPIES];
    uint64_t hid[GP_MAX_COPIES];
} xlock;

static pthread_rwlock_t local_writers = PTHREAD_RWLOCK_INITIALIZER;

static int xlock_take(const gp_record *rec, xlock *l)
{
    const gp_repl *p = &rec->repl;
    pthread_rwlock_wrlock(&local_writers);
    l->n = 0;
    for (int c = 0; c < p->ncopy; c++)
        if (p->state[0][c] == GP_COPY_INSYNC &&
            !gc_range_lock((int)p->server[0][c], p->hid[0][c], GC_LOCK_BLOCKS,
                           true, REPL_LOCK_OFF, 1, true)) {
            l->server[l->n] = (int)p->server[0][c];
            l->hid[l->n++] = p->hid[0][c];
        }
    if (!l->n)
        pthread_rwlock_unlock(&local_writers);
    return l->n ? 0 : GFS_ENOCOPY;
}

static void xlock_drop(const xlock *l)
{
    for (int i = 0; i < l->n; i++)
        gc_range_lock(l->server[i], l->hid[i], GC_LOCK_BLOCKS, false,
                      REPL_LOCK_OFF, 1, true);
    pthread_rwlock_unlock(&local_writers);
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
    int rc = copy_open(rec, s, from, fork, &ff);
    gx_ext p = {off, len, {buf}};
    gc_xfer t = {.server = fs,
                 .fkid = ff,
                 .csum = csum,
                 .pieces = &p,
                 .n = 1,
                 .server_path = true};
    if (!rc)
        rc = gc_transfer_plain(GFS_READ, &t, 1);
    if (!rc) {
        *src_err = false;
        p.len = t.fork_size <= off        ? 0
                : t.fork_size - off < len ? t.fork_size - off
                                          : len;
        rc = copy_open(rec, s, to, fork, &tf);
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
                int m = out ? record_set(name, s, bad, GP_COPY_STALE, 0, 0, out)
                            : -ENOMEM;
                if (!m)
                    cache_record(name, out);
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
        copy_open(rec, k.subfile, c, k.name, &fkid))
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
static void repair_after_read(int kid, int c, const gc_xfer *x)
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
            y[ny].server_path = true; /* never the direct path */
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
        pthread_rwlock_rdlock(&local_writers);
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
        pthread_rwlock_unlock(&local_writers);
    /* a copy that failed its checksum where another gave the bytes: the
     * chunks read are rewritten from a good copy (the caller has its
     * bytes whatever the repair's outcome) */
    for (size_t i = 0; i < nx && !rc && op == GFS_READ; i++)
        for (int c = 0; csbad[i] && c < GP_MAX_COPIES; c++)
            if (ok[i] && !x[i].status && (csbad[i] & (1u << c)))
                repair_after_read(cskid[i], c, &x[i]);
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
        gx_ext p = {off, len, {buf}};
        gc_xfer t = {.server = ss,
                     .fkid = so.fkid,
                     .csum = csum, /* a checksummed copy stays one */
                     .pieces = &p,
                     .n = 1,
                     .server_path = true};
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
    int rc = server_dsid(ds, &dsid);
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
    rc = out ? record_set(name, s, c, GP_COPY_INSYNC, hid, dsid, out) : -ENOMEM;
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
            } else if (server_dsid(server, &dsid)) {
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
                !server_dsid((int)p->server[s][c], &dsid) &&
                dsid == p->dsid[s][c])
                src = c;
        }
        if (src < 0) {
            rc = GFS_ENOCOPY;
            break;
        }
        for (int c = 0; c < p->ncopy && !rc; c++) {
            uint64_t dsid = 0;
            int k = server_dsid((int)p->server[s][c], &dsid);
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
        record_heal(name, rec);
        counter_publish(rec);
        cache_record(name, rec);
    }
    xlock_drop(&l);
out:
    free(rec);
    free(buf);
    return rc;
}

/* ------------------------------------------------------------ report --- */

int gc_repl_copies(const char *name, gfs_copies *out)
{
    int rc = gc_check_init();
    if (!rc)
        rc = gc_check_name(name, GFS_NAME_MAX);
    if (rc)
        return rc;
    if (!out)
        return -EINVAL;
    gp_record *rec = malloc(sizeof(*rec));
    rc = rec ? gc_repl_lookup(name, rec) : -ENOMEM;
    if (!rc) {
        memset(out, 0, sizeof(*out));
        const gp_repl *p = &rec->repl;
        out->replicas = p->ncopy;
        out->nsubfiles = (int)rec->nsub;
        out->gen = (int64_t)p->gen;
        out->insync_min = p->ncopy;
        for (uint32_t s = 0; s < rec->nsub; s++) {
            int n = 0;
            for (int c = 0; c < p->ncopy; c++) {
                out->server[s][c] = (int)p->server[s][c];
                out->state[s][c] = p->state[s][c];
                out->header[s][c] = p->hid[s][c];
                n += p->state[s][c] == GP_COPY_INSYNC;
            }
            if (n < out->insync_min)
                out->insync_min = n;
        }
    }
    free(rec);
    return rc;
}

int gfs_copies_of(const char *name, gfs_copies *out)
{
    return gc_repl_copies(name, out);
}

int gfs_resync(const char *name, int *fixed)
{
    int n = 0;
    int rc = gc_check_init();
    if (!rc)
        rc = gc_check_name(name, GFS_NAME_MAX);
    if (!rc)
        rc = gc_repl_resync(name, &n);
    if (fixed)
        *fixed = n;
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
