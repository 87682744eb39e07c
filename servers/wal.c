/*
 * wal.c -- the metadata log: durability of metadata changes by group
 * commit (after the write-ahead logs of GekkoFS's RocksDB and of ext4's
 * journal), instead of an fsync of every file and directory per change.
 *
 * Threads: gsrv_wal_replay/start/close on the main thread (before any handler
 * starts, after they all stopped); the rest on any thread.  wal.lock is a
 * leaf lock, taken with the metadata owners' locks (ns.lock, subtab.meta)
 * held: a change is appended in the order its owner made it.
 *
 * The scheme:
 *
 *   A metadata change (meta.c: a file replaced, a file or directory made
 *   or removed, done in the file system at once without any fsync; or
 *   metatab.c: a value of the metadata table set or deleted, in memory) is
 *   appended as a record to an in-memory batch while the caller still
 *   holds its owner's lock, so the log has the changes of each file and
 *   value in the order they were made.  The thread remembers the record's
 *   number; the handler calls gsrv_wal_wait before it sends the reply.
 *   The first waiter whose record is not yet written becomes the leader:
 *   it takes the whole batch (its own records and those of every thread
 *   that appended meanwhile), writes it to DIR/wal with one write, and
 *   wakes the others, whose records were in it.  What the reply then
 *   waits for is the commit policy (galleyd --commit):
 *
 *   - written (the default): the reply follows the log's write, which a
 *     kill -9 of galleyd cannot undo.  The committer thread makes the log
 *     durable with one fdatasync after another while anything written is
 *     not yet durable, so a machine crash loses at most the changes of
 *     the last fdatasync or two (a few hundred microseconds of them), as
 *     ext4 or XFS lose the metadata changes of their last journal commit;
 *     gsrv_wal_sync (LOG_SYNC, FORK_SYNC: fsync, MPI_File_sync) waits
 *     for it.
 *   - synced: the leader also runs the fdatasync before it wakes anyone,
 *     so every acknowledged change survives a machine crash.  Many
 *     clients changing metadata at once cost one fsync per batch.
 *
 *   A record is: u32 body length, u64 FNV-1a of the body, and the body:
 *   u8 op (PUT: a file's whole new contents; DEL: unlink; MKDIR; RMDIR;
 *   TPUT: a table value; TDEL), the path relative to the data directory
 *   or the table's key (a name meta.c or its caller made, never a
 *   user's), and for PUT and TPUT the contents.  Replay (gsrv_wal_replay,
 *   after the table file is loaded and before the start-up scans of
 *   nameserver.c and subfile_disk.c, which then see the replayed state
 *   and finish interrupted creates and deletes) applies the records in
 *   order up to the first torn or corrupt one, saves the table, makes the
 *   result durable (syncfs) and empties the log.  Applying a record again
 *   is harmless, so a crash during replay just replays again; a table
 *   that cannot be saved then (a full disk) keeps the log, which the next
 *   records follow.
 *
 *   When the log passes WAL_CHECKPOINT bytes (plus the table's size, so a
 *   checkpoint costs at most about what was logged, up to half of
 *   WAL_MAX_REPLAY) the committer (with --commit synced, the leader)
 *   saves the table, makes the data directory durable (syncfs: every
 *   other change the log holds is already in the file system) and empties
 *   the log.  The log keeps WAL_RESERVE bytes of disk allocated ahead of
 *   its end, so on a full disk its records still go in (a remove is
 *   logged, and then frees space); when the log cannot be written at all
 *   the leader cuts it back to where it was and makes the batch durable
 *   by a checkpoint.
 *
 * What a crash can lose (docs/durability.md): a kill -9 of
 * galleyd loses no change that was acknowledged (the reply follows the
 * log's write; a table value not yet written is lost with its request,
 * never answered); a machine crash loses what the committer had not yet
 * made durable (written), or no acknowledged change (synced).
 */
#include "gsrv_internal.h"
#include "fnv.h"
#include "gsend.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WAL_FILE "wal"
#ifndef WAL_CHECKPOINT
#define WAL_CHECKPOINT (8u << 20) /* empty the log past this size */
#endif
#define WAL_RESERVE (8u << 20)        /* disk space the log keeps ahead */
#define WAL_MAX_REPLAY (256ull << 20) /* a log larger than this is refused */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int fd;              /* DIR/wal (O_APPEND); -1: not logging (start-up) */
    int replayed_fd;     /* DIR/wal between replay and start */
    gp_wbuf batch;       /* records appended, not yet written */
    uint64_t last;       /* number of the last record appended */
    uint64_t written;    /* every record up to this one is in DIR/wal */
    uint64_t synced;     /* every record up to this one is durable */
    bool flushing;       /* a leader is writing a batch, or a checkpoint runs */
    bool committing;     /* the committer is in its fdatasync */
    bool stop;           /* the committer's end (gsrv_wal_close) */
    int commit_err;      /* the committer's last failure, 0 once it succeeds */
    pthread_cond_t work; /* the committer waits here for written > synced */
    pthread_t committer; /* running while logging, unless commit_sync */
    uint64_t size;       /* bytes in DIR/wal */
    uint64_t nrecords, nbatches, ncommits, ncheckpoints;
} wal = {.lock = PTHREAD_MUTEX_INITIALIZER,
         .cond = PTHREAD_COND_INITIALIZER,
         .work = PTHREAD_COND_INITIALIZER,
         .fd = -1,
         .replayed_fd = -1};

/* The last record this thread appended and has not waited for. */
static __thread uint64_t my_pending;

bool gsrv_wal_on(void)
{
    return wal.fd >= 0;
}

static bool path_ok(const char *p)
{
    return p[0] && p[0] != '/' && !strstr(p, "..");
}

void gsrv_wal_log(int op, const char *path, const void *data, size_t len)
{
    gp_wbuf body;
    gp_wbuf_init(&body);
    gp_put_u8(&body, (uint8_t)op);
    gp_put_str(&body, path);
    if (op == GSRV_WAL_PUT || op == GSRV_WAL_TPUT)
        gp_put_blob(&body, data, (uint32_t)len);
    pthread_mutex_lock(&wal.lock);
    if (wal.fd >= 0) {
        gp_put_u64(&wal.batch, g_fnv1a_bytes(body.data, body.len));
        gp_put_blob(&wal.batch, body.data, (uint32_t)body.len);
        my_pending = ++wal.last;
        wal.nrecords++;
    }
    pthread_mutex_unlock(&wal.lock);
    gp_wbuf_free(&body);
}

/* Room for the log's next WAL_RESERVE bytes, taken now (beyond its end:
 * the file's size does not change), so that its appends need no new
 * blocks: on a full disk a remove is still logged, and frees its space.
 * Best effort (a disk that is full already, a file system without
 * fallocate). */
static void reserve(int fd)
{
    if (fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, WAL_RESERVE) < 0)
        gsrv_log(1, "wal: cannot reserve room for the log: %s",
                 strerror(errno));
}

/* Make the data directory durable and empty the log (wal.flushing held,
 * wal.lock not).  0 or the error of syncfs. */
static int checkpoint(void)
{
    int rc = gsrv_tab_save(); /* the table first: the log holds its changes */
    if (rc)
        return rc;
    if (syncfs(gsrv_g.dfd) < 0)
        return -errno;
    if (ftruncate(wal.fd, 0) == 0) {
        reserve(wal.fd); /* (the truncate gave the room back) */
        pthread_mutex_lock(&wal.lock);
        wal.size = 0;
        wal.ncheckpoints++;
        pthread_mutex_unlock(&wal.lock);
    }
    return 0;
}

/* Is the log past its checkpoint size?  (wal.lock not held: wal.lock is
 * a leaf lock, and the table's size is under the table's own.) */
static bool log_big(void)
{
    /* (the table's size, so a checkpoint costs about what was logged,
     * but never so much that the log outgrows what a start replays) */
    uint64_t tab = gsrv_tab_bytes();
    uint64_t limit =
        WAL_CHECKPOINT + (tab < WAL_MAX_REPLAY / 2 ? tab : WAL_MAX_REPLAY / 2);
    pthread_mutex_lock(&wal.lock);
    bool big = wal.size > limit;
    pthread_mutex_unlock(&wal.lock);
    return big;
}

/* A checkpoint (flushing held, wal.lock not) whose failure is logged:
 * the log keeps the records. */
static void checkpoint_logged(void)
{
    int k = checkpoint();
    if (k)
        gsrv_log(0, "wal: checkpoint: %s", gsrv_strerror(k));
}

/* Write one batch, and with --commit synced make it durable (the leader;
 * wal.lock held on entry and exit). */
static int flush_batch(void)
{
    wal.flushing = true;
    gp_wbuf b = wal.batch;
    gp_wbuf_init(&wal.batch);
    uint64_t upto = wal.last;
    uint64_t before = wal.size, blen = b.len;
    bool sync = gsrv_g.commit_sync;
    pthread_mutex_unlock(&wal.lock);

    int rc = b.err;
    if (!rc)
        rc = gp_write_all(wal.fd, b.data, b.len);
    if (!rc && sync && fdatasync(wal.fd) < 0)
        rc = -errno;
    gp_wbuf_free(&b);
    bool durable = sync;
    if (rc) {
        /* No room for the log (or it failed): cut it back to its last
         * whole record and make the batch durable the slow way. */
        gsrv_log(1, "wal: %s; the batch is made durable by syncfs",
                 gsrv_strerror(rc));
        if (ftruncate(wal.fd, (off_t)before) < 0)
            gsrv_log(0, "wal: cannot cut the log back: %s", strerror(errno));
        rc = checkpoint();
        durable = true;
    } else {
        pthread_mutex_lock(&wal.lock);
        wal.size = before + blen;
        pthread_mutex_unlock(&wal.lock);
        if (sync && log_big())
            checkpoint_logged(); /* (written: the committer's) */
    }

    pthread_mutex_lock(&wal.lock);
    if (!rc) {
        wal.written = upto;
        if (durable && wal.synced < upto)
            wal.synced = upto;
        wal.nbatches++;
        pthread_cond_signal(&wal.work);
    }
    wal.flushing = false;
    pthread_cond_broadcast(&wal.cond);
    return rc;
}

/* The committer (--commit written): an fdatasync of the log whenever
 * something written is not durable yet, then the checkpoint when the log
 * has grown past its size. */
static void *committer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&wal.lock);
    for (;;) {
        while (!wal.stop && wal.synced >= wal.written)
            pthread_cond_wait(&wal.work, &wal.lock);
        if (wal.stop)
            break;
        uint64_t upto = wal.written; /* those bytes are in the file */
        wal.committing = true;
        pthread_mutex_unlock(&wal.lock);
        int rc = fdatasync(wal.fd) < 0 ? -errno : 0;
        pthread_mutex_lock(&wal.lock);
        wal.committing = false;
        if (rc) {
            /* (EIO from the disk): the next round tries again; a waiter
             * of gsrv_wal_sync gets the error */
            if (rc != wal.commit_err)
                gsrv_log(0, "wal: fdatasync: %s", gsrv_strerror(rc));
            wal.commit_err = rc;
            pthread_cond_broadcast(&wal.cond);
            pthread_mutex_unlock(&wal.lock);
            usleep(10000);
            pthread_mutex_lock(&wal.lock);
            continue;
        }
        wal.commit_err = 0;
        if (wal.synced < upto)
            wal.synced = upto;
        wal.ncommits++;
        pthread_cond_broadcast(&wal.cond);
        pthread_mutex_unlock(&wal.lock);
        bool big = log_big();
        pthread_mutex_lock(&wal.lock);
        if (big) {
            /* after the batch being written, none meanwhile */
            while (wal.flushing && !wal.stop)
                pthread_cond_wait(&wal.cond, &wal.lock);
            if (wal.stop)
                break;
            wal.flushing = true; /* (only a checkpoint shrinks the log) */
            pthread_mutex_unlock(&wal.lock);
            checkpoint_logged();
            pthread_mutex_lock(&wal.lock);
            wal.flushing = false;
            pthread_cond_broadcast(&wal.cond);
        }
    }
    pthread_mutex_unlock(&wal.lock);
    return NULL;
}

/* Wait (wal.lock held) until every record up to want is written, leading
 * a batch when nobody does. */
static int wait_written(uint64_t want)
{
    int rc = 0;
    while (wal.fd >= 0 && wal.written < want && !rc) {
        if (wal.flushing)
            pthread_cond_wait(&wal.cond, &wal.lock);
        else
            rc = flush_batch();
    }
    return rc;
}

/* Wait (wal.lock held) until every record up to want is durable: with
 * --commit synced leading batches (each written and synced), else for the
 * committer. */
static int wait_synced(uint64_t want)
{
    int rc = wait_written(want);
    while (!rc && wal.fd >= 0 && wal.synced < want) {
        if (gsrv_g.commit_sync) {
            if (wal.flushing)
                pthread_cond_wait(&wal.cond, &wal.lock);
            else
                rc = flush_batch();
            continue;
        }
        pthread_cond_signal(&wal.work);
        if (wal.commit_err && !wal.committing) {
            rc = wal.commit_err; /* its last fdatasync failed */
            break;
        }
        pthread_cond_wait(&wal.cond, &wal.lock);
    }
    return rc;
}

int gsrv_wal_wait(void)
{
    uint64_t want = my_pending;
    if (!want)
        return 0;
    my_pending = 0;
    pthread_mutex_lock(&wal.lock);
    int rc = gsrv_g.commit_sync ? wait_synced(want) : wait_written(want);
    pthread_mutex_unlock(&wal.lock);
    return rc;
}

int gsrv_wal_sync(uint64_t *records, uint64_t *commits)
{
    my_pending = 0; /* (this covers them) */
    pthread_mutex_lock(&wal.lock);
    int rc = wait_synced(wal.last);
    if (records)
        *records = wal.nrecords;
    if (commits)
        *commits = wal.ncommits + (gsrv_g.commit_sync ? wal.nbatches : 0);
    pthread_mutex_unlock(&wal.lock);
    return rc;
}

int gsrv_do_LOG_SYNC(gsrv_conn *c, const gp_LOG_SYNC_req *m, gp_LOG_SYNC_rep *r,
                     gsrv_call *k)
{
    (void)c;
    (void)m;
    (void)k;
    return gsrv_wal_sync(&r->records, &r->commits);
}

/* ------------------------------------------------------------ replay -- */

static int apply(int op, const char *path, const uint8_t *data, uint32_t len)
{
    switch (op) {
    case GSRV_WAL_PUT:
        return gsrv_meta_write(path, data, len, false);
    case GSRV_WAL_DEL:
        return unlinkat(gsrv_g.dfd, path, 0) < 0 && errno != ENOENT ? -errno
                                                                    : 0;
    case GSRV_WAL_MKDIR:
        return mkdirat(gsrv_g.dfd, path, 0755) < 0 && errno != EEXIST ? -errno
                                                                      : 0;
    case GSRV_WAL_TPUT:
        return gsrv_tab_put(path, data, len);
    case GSRV_WAL_TDEL:
        gsrv_tab_del(path);
        return 0;
    case GSRV_WAL_RMDIR:
        /* not empty: the start-up scan removes a directory without header */
        return unlinkat(gsrv_g.dfd, path, AT_REMOVEDIR) < 0 &&
                       errno != ENOENT && errno != ENOTEMPTY
                   ? -errno
                   : 0;
    }
    return GFS_EPROTO;
}

static int replay(const uint8_t *buf, size_t len, uint64_t *napplied)
{
    gp_rbuf r;
    gp_rbuf_init(&r, buf, len);
    char path[256];
    *napplied = 0;
    while (r.pos < r.len) {
        size_t at = r.pos;
        uint64_t sum = gp_get_u64(&r);
        uint32_t blen;
        const uint8_t *b = gp_get_blob(&r, &blen, GSRV_MAX_META_FILE + 4096);
        if (r.err || g_fnv1a_bytes(b, blen) != sum) {
            gsrv_log(0,
                     "wal: torn or corrupt record at byte %zu of %zu: "
                     "the log ends there",
                     at, len);
            return 0;
        }
        gp_rbuf body;
        gp_rbuf_init(&body, b, blen);
        uint8_t op = gp_get_u8(&body);
        gp_get_str(&body, path, sizeof(path) - 1);
        uint32_t dlen = 0;
        const uint8_t *data = NULL;
        if (op == GSRV_WAL_PUT || op == GSRV_WAL_TPUT)
            data = gp_get_blob(&body, &dlen, GSRV_MAX_META_FILE);
        if (!gp_done(&body) || !path_ok(path)) {
            gsrv_log(0, "wal: malformed record at byte %zu: the log ends there",
                     at);
            return 0;
        }
        int rc = apply(op, path, data, dlen);
        if (rc == -ENOMEM)
            return rc;
        if (rc && rc != -ENOENT)
            gsrv_log(0, "wal: replay %s: %s", path, gsrv_strerror(rc));
        (*napplied)++;
    }
    return 0;
}

int gsrv_wal_replay(void)
{
    int fd = openat(gsrv_g.dfd, WAL_FILE,
                    O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) < 0)
        rc = -errno;
    else if ((uint64_t)st.st_size > WAL_MAX_REPLAY)
        rc = -EFBIG;
    if (!rc && st.st_size > 0) {
        uint8_t *buf;
        size_t len;
        uint64_t n = 0;
        rc = gsrv_meta_read(WAL_FILE, &buf, &len, WAL_MAX_REPLAY);
        if (!rc) {
            rc = replay(buf, len, &n);
            free(buf);
        }
        int saved = rc ? rc : gsrv_tab_save(); /* what went to the table */
        if (!rc && syncfs(gsrv_g.dfd) < 0)
            rc = -errno;
        if (!rc && !saved && ftruncate(fd, 0) < 0)
            rc = -errno;
        if (!rc)
            gsrv_log(0, "wal: replayed %" PRIu64 " records", n);
        if (!rc && saved) {
            /* (a full disk): the log stays, and is what holds them; the
             * next records follow it, and the next start replays all */
            gsrv_log(0, "wal: %s: %s; the log is kept", "meta.tab",
                     gsrv_strerror(saved));
            wal.size = (uint64_t)st.st_size;
        }
    }
    if (rc) {
        close(fd);
        return rc;
    }
    wal.replayed_fd = fd;
    return 0;
}

int gsrv_wal_start(void)
{
    if (wal.replayed_fd < 0)
        return -EBADF;
    /* what the start-up scans changed in the table (not logged: they
     * would do it again); a table that cannot be saved now (a full disk)
     * stays dirty, for the first checkpoint */
    int rc = gsrv_tab_dirty() ? gsrv_tab_save() : 0;
    if (rc)
        gsrv_log(0, "wal: %s: %s; saved at the next checkpoint", "meta.tab",
                 gsrv_strerror(rc));
    gp_wbuf_init(&wal.batch);
    reserve(wal.replayed_fd);
    wal.fd = wal.replayed_fd;
    wal.replayed_fd = -1;
    if (!gsrv_g.commit_sync) {
        rc = pthread_create(&wal.committer, NULL, committer_main, NULL);
        if (rc) {
            gsrv_log(0,
                     "wal: no committer thread (%s): replies wait for "
                     "the log's fdatasync",
                     strerror(rc));
            gsrv_g.commit_sync = true;
        }
    }
    return 0;
}

void gsrv_wal_close(void)
{
    if (wal.replayed_fd >= 0) {
        close(wal.replayed_fd);
        wal.replayed_fd = -1;
    }
    if (wal.fd < 0)
        return;
    pthread_mutex_lock(&wal.lock);
    wait_written(wal.last);
    /* the committer's end; then a clean stop leaves an empty log */
    wal.stop = true;
    pthread_cond_signal(&wal.work);
    pthread_cond_broadcast(&wal.cond);
    pthread_mutex_unlock(&wal.lock);
    if (!gsrv_g.commit_sync)
        pthread_join(wal.committer, NULL);
    pthread_mutex_lock(&wal.lock);
    wal.flushing = true;
    pthread_mutex_unlock(&wal.lock);
    checkpoint();
    gsrv_log(0,
             "wal: %" PRIu64 " records in %" PRIu64 " group commits, %" PRIu64
             " fdatasyncs by the committer, %" PRIu64 " checkpoints",
             wal.nrecords, wal.nbatches, wal.ncommits, wal.ncheckpoints);
    close(wal.fd);
    wal.fd = -1;
    wal.flushing = false;
    gp_wbuf_free(&wal.batch);
}
