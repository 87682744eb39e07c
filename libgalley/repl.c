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
 * same-host direct path (route.h: a replicated fork's transfer is
 * GC_WAY_COPIES, each copy's GC_WAY_SERVER, never taken whole).
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
 * This unit: the record and create, delete and the copies report;
 * repl_io.c: a handle's copies, failover, writers and transfers;
 * repl_repair.c: repair, resync and scrub (repl_internal.h: what they
 * share).
 *
 * Threads: any; the fork table through client.c, network through conn.c.
 */
#include "repl_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int gc_repl_record_sync(const char *name)
{
    bool *which = calloc((size_t)gc_g.nservers, sizeof(*which));
    if (!which)
        return -ENOMEM;
    for (int j = 0; j < nrec(); j++)
        which[record_server(name, j)] = true;
    int ok = 0, rc = gc_log_sync(which, &ok);
    free(which);
    return ok >= quorum() ? 0 : rc; /* (a lost copy's server fails nothing) */
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
void gc_repl_record_heal(const char *name, const gp_record *rec)
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
void gc_repl_counter_publish(const gp_record *rec)
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
int gc_repl_record_set(const char *name, int sub, int copy, int state,
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
            gc_repl_counter_publish(out);
        return rc;
    }
    return GFS_ESTALEGEN;
}

/* Update the cached record of every open file id of `name`. */
void gc_repl_cache_record(const char *name, const gp_record *rec)
{
    pthread_mutex_lock(&gc_g.lock);
    for (int fid = -1; (fid = gc_idtab_next(&gc_g.files, fid)) >= 0;) {
        gc_file *f = gc_file_at(fid);
        if (f && strcmp(f->name, name) == 0 && f->rec.repl.gen < rec->repl.gen)
            gp_record_copy(&f->rec, rec);
    }
    pthread_mutex_unlock(&gc_g.lock);
}

int gc_repl_server_dsid(int server, uint64_t *dsid)
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
                rc = gc_repl_server_dsid((int)p->server[s][c], &p->dsid[s][c]);
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
