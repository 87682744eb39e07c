/*
 * transport_direct.c -- same host, same user: this process reads and writes
 * the server's fork files itself (servers/direct.c is the other half and
 * states the coherence rules).  After Linux NFS LOCALIO and HDFS
 * short-circuit reads: the server opens the fork's file and passes the
 * descriptor over a Unix socket (SCM_RIGHTS); data then moves with
 * preadv / pwritev, one copy and no round trip, exactly as for a local
 * file.
 *
 * Taken at connect when the same-host socket's server grants descriptors
 * to this process (DIRECT_OPEN with fkid 0: same uid by SO_PEERCRED) and
 * cross-memory attach works (the messages that still go to the server
 * move their data that way); otherwise the next transport (local+cma)
 * takes the connection -- or, with GALLEY_TRANSPORT=direct, the connect
 * fails with GFS_EDIRECT.
 *
 * A direct transfer is moved whole by direct_xfer (transport.h: xfer),
 * from gc_transfer's list of pieces straight to preadv / pwritev: no
 * chunk, no wire descriptor built and decoded again, no reply, no
 * allocation for up to SMALL_PIECES pieces, and the fork() check
 * (route.c) reads a cached pid.  Chunks reach this transport only for transfers
 * direct_xfer declined; they go to the server by cross-memory attach.
 *
 * Which transfers come here whole, and in which case (preadv, pwritev,
 * a sieve, or back to chunks), route.c decides (gc_route_offered,
 * gc_route_whole); this file carries the case out.  A sieve (small write
 * pieces: a span read, patched and written back) is safe only while
 * nobody else writes the span, so it asks for the fork in locked mode
 * (DIRECT_WOPEN with sieve, servers/direct.c): then every writer of the
 * file, the server included, takes an OFD lock on what it writes
 * (fdio.h: g_fd_write_locked), and a writer killed mid-span leaves no
 * lock behind.  Where a writer that takes no locks holds the fork (a
 * plain direct writer), locked mode is refused and the pieces go to the
 * server by cross-memory attach.  Forks are never put in locked mode by
 * large writes, so a lone 4 KiB write pays no lock.
 *
 * The first direct write of a fork asks for a writable descriptor, which makes
 * the server bypass its cache for that fork until it is released; a fork only
 * read gets a read-only one and changes nothing there.  A transfer over
 * several forks (a striped call) asks for all the descriptors it lacks at
 * once (direct_prepare: the requests, then the replies), so it waits for
 * one round trip, not one per server.
 *
 * Checksummed forks (x->csum): the grant comes from DIRECT_COPEN with the
 * fork's CRC sidecar beside the file, and the data moves through
 * common/csfile.c (chunk locks on the sidecar, CRCs from and checks before
 * the application's buffer) instead of g_fd_*; a list of overlapping
 * write pieces, and a chunk that fails its check, go to the server
 * (which then says so and logs it), and so do small pieces, never sieved
 * here (servers/direct.c, rule 7: such a fork is never in locked mode).
 *
 * Descriptors (transport_direct_grants.c): asked for lazily, on a fork's
 * first direct request, over a separate authenticated Unix-socket
 * connection per server (the "grant channel": ancillary data needs
 * recvmsg, and the connection's reply engines stay as they are -- HDFS
 * keeps its descriptor-passing socket apart too); received close-on-exec;
 * closed when the fork is closed (the release op, from gc_fork_close
 * through gc_transports_release, which also reports the bytes moved, for
 * the server's IO_STATS) and at gfs_finalize (the shutdown op).  The
 * server ties the grants to the channel: when the channel breaks (server
 * restart) they are void, so every request first checks that the channel
 * is still up (one poll) and asks again if not.  A child after fork()
 * starts with none (transport_direct_grants.c) and asks for its own over
 * its own connection (lifecycle.c).
 *
 * Threads: any.  One mutex (gc_dg.lock) guards the grant table and
 * channels and is held across a channel's round trip (rare: once per fork); the
 * data itself moves with no lock held, the grant pinned by its use count
 * and its descriptor picked under the lock.  Only a release (and
 * shutdown) waits for a grant's use to end, and it looks the grant up
 * again after every wait: threads closing opens of one fork share its
 * grant.  A grant forgotten while in use is dropped by its last user.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POLLRDHUP, MSG_CMSG_CLOEXEC */
#endif
#include "transport_direct.h"
#include "route.h"

#include "csfile.h"
#include "dial.h"
#include "fdio.h"
#include "gfault.h"
#include "gsend.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ readers -- */
/*
 * A reader: the descriptors of a striped open's forks, for its
 * single-range reads (striped_io.c: fast_read).  A small read that goes
 * through an op -- the pieces placed per subfile, a transfer, its
 * grant pinned and released under gc_dg.lock, the result worked out from
 * the fork sizes -- costs about as much again as the pread that moves
 * its bytes; a reader's read is that pread and nothing else that takes
 * a lock.
 *
 * Its descriptors are this process's own duplicates of its grants' (the
 * writable one where held: the same file either way), made when the
 * reader is built and closed when it is freed, so a grant closed or
 * forgotten meanwhile never leaves a reader with a descriptor number that
 * now names another file.  The rules that keep it as correct as a
 * grant's read (direct_xfer):
 *   - reads only: the server's cache is write-through, so the file holds
 *     every write it acknowledged (servers/direct.c), and direct writes
 *     are in the file when they return;
 *   - a read of exactly the bytes asked for, or it declines (the op path
 *     then reads again and says where the file ends: a short pread is
 *     the fork's end, and a striped file's end depends on all of them);
 *   - not for checksummed forks (their reads check CRCs: csfile.h);
 *   - the grant channel is looked at as often as direct_xfer looks
 *     (GC_DIRECT_CHECK_NS), and when any server's grants are forgotten
 *     (gc_dg.epoch) every reader built before declines until rebuilt;
 *   - its bytes are counted, and added to the grant's at free, so the
 *     server's IO_STATS get them at the fork's release, as direct_xfer's;
 *   - a child after fork() closes its copies (atfork_child): its reads
 *     decline until a reader is built again from its own grants.
 */
typedef struct dreader {
    gc_reader head;       /* its ops: gc_transport_direct's */
    struct dreader *next; /* gc_dg.readers */
    uint64_t epoch;       /* gc_dg.epoch when built */
    uint64_t checked_ns;  /* when the channels were last looked at
                           * (g_coarse_ns: GC_DIRECT_CHECK_NS then
                           * means "at the first tick after") */
    int inuse;            /* reads in flight (direct_reader_pin) */
    size_t n;
    struct dread_fork {
        int server;
        uint64_t fkid;
        int fd; /* -1: none (not granted, checksummed) */
        uint64_t base;
        uint64_t bytes; /* read through it, not yet added to the grant */
    } f[];
} dreader;

/* Larger reads take the op path (a pread may return less than asked for
 * over 2 GiB). */
#define GC_DREAD_MAX (1ull << 30)

static gc_reader *direct_reader_open(const int *servers, const uint64_t *fkids,
                                     size_t n)
{
    dreader *r = calloc(1, sizeof(*r) + n * sizeof(r->f[0]));
    if (!r)
        return NULL;
    size_t held = 0;
    pthread_mutex_lock(&gc_dg.lock);
    r->head.ops = &gc_transport_direct;
    r->epoch = gc_dg.epoch;
    r->checked_ns = g_coarse_ns();
    r->n = n;
    for (size_t i = 0; i < n; i++) {
        dgrant *g = servers[i] >= 0
                        ? gc_dg_grant_find_locked(servers[i], fkids[i])
                        : NULL;
        int fd = !g || g->cs ? -1 : g->wfd >= 0 ? g->wfd : g->rfd;
        r->f[i] = (struct dread_fork){
            .server = servers[i],
            .fkid = fkids[i],
            .fd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1,
            .base = g ? g->base : 0};
        held += r->f[i].fd >= 0;
    }
    if (held) {
        r->next = gc_dg.readers;
        gc_dg.readers = r;
    }
    pthread_mutex_unlock(&gc_dg.lock);
    if (!held) {
        free(r);
        return NULL;
    }
    return &r->head;
}

/* The channels of r's servers looked at (gc_dg_chan_check_locked): is r still
 * good? */
static bool reader_check(dreader *r, uint64_t now)
{
    pthread_mutex_lock(&gc_dg.lock);
    uint64_t precise = g_now_ns(); /* the channels' clock */
    for (size_t i = 0; i < r->n; i++)
        if (r->f[i].fd >= 0)
            gc_dg_chan_check_locked(r->f[i].server, precise);
    __atomic_store_n(&r->checked_ns, now, __ATOMIC_RELAXED);
    bool ok = gc_dg.epoch == r->epoch;
    pthread_mutex_unlock(&gc_dg.lock);
    return ok;
}

static int direct_reader_read(gc_reader *rh, size_t i, uint64_t off,
                              const struct iovec *iov, int n)
{
    dreader *r = (dreader *)rh;
    const struct dread_fork *f = &r->f[i];
    uint64_t len = 0;
    for (int k = 0; k < n; k++)
        len += iov[k].iov_len;
    if (f->fd < 0 || len > GC_DREAD_MAX || off > GP_MAX_OFFSET ||
        __atomic_load_n(&gc_dg.epoch, __ATOMIC_ACQUIRE) != r->epoch)
        return GC_DECLINE;
    uint64_t now = g_coarse_ns();
    if (now - __atomic_load_n(&r->checked_ns, __ATOMIC_RELAXED) >=
            GC_DIRECT_CHECK_NS &&
        !reader_check(r, now))
        return GC_DECLINE;
    ssize_t got = preadv(f->fd, iov, n, (off_t)(f->base + off));
    return got == (ssize_t)len ? 0 : GC_DECLINE;
}

static void direct_reader_count(gc_reader *rh, size_t i, uint64_t bytes)
{
    dreader *r = (dreader *)rh;
    __atomic_add_fetch(&r->f[i].bytes, bytes, __ATOMIC_RELAXED);
}

static void direct_reader_pin(gc_reader *rh)
{
    dreader *r = (dreader *)rh;
    __atomic_add_fetch(&r->inuse, 1, __ATOMIC_ACQUIRE);
}

static void direct_reader_unpin(gc_reader *rh)
{
    dreader *r = (dreader *)rh;
    __atomic_sub_fetch(&r->inuse, 1, __ATOMIC_RELEASE);
}

static bool direct_reader_whole(const gc_reader *rh)
{
    const dreader *r = (const dreader *)rh;
    if (__atomic_load_n(&gc_dg.epoch, __ATOMIC_ACQUIRE) != r->epoch)
        return false;
    for (size_t i = 0; i < r->n; i++)
        if (r->f[i].fd < 0)
            return false;
    return true;
}

/* Its descriptors closed, its bytes dropped (gc_dg.lock held, or the only
 * thread: a child after fork). */
static void readers_forget(dreader *r)
{
    for (size_t i = 0; i < r->n; i++) {
        if (r->f[i].fd >= 0)
            close(r->f[i].fd);
        r->f[i].fd = -1;
        r->f[i].bytes = 0;
    }
}

void gc_dg_readers_forget_all(void)
{
    for (dreader *r = gc_dg.readers; r; r = r->next) {
        readers_forget(r);
        r->inuse = 0; /* the threads that had it pinned are not here */
    }
}

static void direct_reader_free(gc_reader *rh)
{
    dreader *r = (dreader *)rh;
    if (!r)
        return;
    /* unpinned by now, but for a read in flight on another thread (whose
     * pread ends in microseconds) */
    while (__atomic_load_n(&r->inuse, __ATOMIC_ACQUIRE))
        sched_yield();
    pthread_mutex_lock(&gc_dg.lock);
    dreader **pp = &gc_dg.readers;
    while (*pp && *pp != r)
        pp = &(*pp)->next;
    if (*pp)
        *pp = r->next;
    for (size_t i = 0; i < r->n; i++) {
        dgrant *g = r->f[i].bytes
                        ? gc_dg_grant_find_locked(r->f[i].server, r->f[i].fkid)
                        : NULL;
        if (g)
            g->read += r->f[i].bytes; /* reported at its release */
        r->f[i].bytes = 0;
    }
    readers_forget(r);
    pthread_mutex_unlock(&gc_dg.lock);
    free(r);
}

/* -------------------------------------------------------------- data -- */

/* The test-only crash points of a same-host client's checksummed write
 * (csfile.h: g_cs_write's between): GALLEY_TEST_CLIENT_CRASH_AFTER_CRC=1
 * exits between its CRCs and its data, =2 halfway through its data (a
 * chunk half written).  galleyd's is GALLEY_TEST_CRASH_AFTER_CRC
 * (servers/csum.c).  Only in the test build (common/gfault.h): without
 * it the switch reads 0 and no write is given a crash point. */
static void crash_point(int stage)
{
    if (g_fault_int(G_CFG_TEST_CLIENT_CRASH_AFTER_CRC) == stage + 1)
        _exit(99);
}

/* Pieces per transfer sorted on the stack (more: one allocation). */
#define SMALL_PIECES 16

/*
 * The whole transfer, here and now, from its list of pieces to preadv /
 * pwritev (transport.h: xfer): no chunk, no wire descriptor, no reply;
 * no allocation for a list of up to SMALL_PIECES pieces.  Writes keep
 * list order where pieces overlap (a later one wins); reads are sorted
 * (g_fd_read sieves pieces close together).
 */
/* What x needs of its fork's grant (G_*), with its bytes and end, from
 * route.c's case; -1: no bytes (nothing to do), -2: the server's. */
static int xfer_need(int op, const gc_xfer *x, uint64_t *bytes, uint64_t *end)
{
    switch (gc_route_whole(op, x, bytes, end)) {
    case GC_WHOLE_NOTHING:
        return -1;
    case GC_WHOLE_READ:
        return G_READ;
    case GC_WHOLE_WRITE:
        return G_WRITE;
    case GC_WHOLE_SIEVE:
        return G_SIEVE;
    default:
        return -2;
    }
}

/* transport.h: prepare.  The requests for every missing grant first, one
 * per server, then their replies.  Checksummed forks are left to
 * direct_xfer: their grant is two requests in turn (the file, then its
 * sidecar). */
static void direct_prepare(int op, gc_xfer *x, gc_conn *const *cs, size_t nx)
{
    struct dask {
        int server, need;
        uint64_t fkid, id;
    } ask[GC_PREPARE_MAX];
    size_t na = 0;
    gc_dg_atfork_once();
    pthread_mutex_lock(&gc_dg.lock);
    for (size_t i = 0; i < nx && na < GC_PREPARE_MAX; i++) {
        uint64_t bytes, end;
        int need =
            cs[i] && !x[i].csum ? xfer_need(op, &x[i], &bytes, &end) : -1;
        int server, rc;
        const char *host, *port;
        if (need < 0)
            continue;
        gc_conn_address(cs[i], &server, &host, &port);
        bool asking = false; /* one request per channel at a time */
        for (size_t k = 0; k < na; k++)
            asking = asking || ask[k].server == server;
        dchan *ch = asking ? NULL : gc_dg_chan_get_locked(cs[i], &rc);
        if (!ch ||
            gc_dg_grant_have_locked(gc_dg_grant_find_locked(server, x[i].fkid),
                                    need, false) != 0)
            continue;
        uint64_t id = gc_dg_grant_ask(ch, x[i].fkid, need, false, 0);
        if (id)
            ask[na++] = (struct dask){server, need, x[i].fkid, id};
    }
    for (size_t k = 0; k < na; k++) { /* failures: xfer asks again */
        dgrant *g;
        gc_dg_grant_take_locked(&gc_dg.chan[ask[k].server], ask[k].id,
                                ask[k].server, ask[k].fkid, ask[k].need, false,
                                &g);
    }
    pthread_mutex_unlock(&gc_dg.lock);
}

static int direct_xfer(gc_conn *c, int op, gc_xfer *x)
{
    bool write = op == GFS_WRITE;
    uint64_t bytes, end;
    int need = xfer_need(op, x, &bytes, &end);
    if (need == -1) /* as the chunk path: no request at all */
        return 0;
    if (need == -2)
        return GC_DECLINE;
    dgrant *g = NULL;
    int fd = -1;
    int rc = gc_dg_grant_get(c, x->fkid, need, x->csum, &g, &fd);
    /* refused for this fork (servers/direct.c: fork_direct_ok), in every
     * mode: the server path serves it; other failures too unless direct
     * access is forced */
    if (rc == GFS_EDIRECT || (rc && gc_transport() != GFS_TRANSPORT_DIRECT))
        return GC_DECLINE;
    if (rc == -ENOSYS && x->csum) /* a server without DIRECT_COPEN */
        return GC_DECLINE;
    if (rc) {
        x->status = rc;
        return 0;
    }
    const gp_ext *e = x->pieces;
    size_t n = x->n;
    gp_ext small[SMALL_PIECES], *sorted = NULL;
    bool ordered = x->shaped && x->ordered; /* sorted and disjoint */
    if (!ordered && !gp_sorted(e, n)) {
        sorted = n <= SMALL_PIECES ? small : malloc(n * sizeof(*sorted));
        if (sorted) {
            memcpy(sorted, e, n * sizeof(*sorted));
            /* writes: sorted and disjoint, so neighbours merge; where
             * pieces overlap, list order */
            if (gp_sort(sorted, n) == 0 && (!write || gp_disjoint(sorted, n)))
                e = sorted;
        }
        if (!write && e == x->pieces)
            rc = -ENOMEM;
    }
    uint64_t size = end; /* at least; only reads need it */
    bool eof = !write;
    uint64_t bad;
    if (!rc && g->cs &&
        (g->base ||
         (write && !ordered && (!gp_sorted(e, n) || !gp_disjoint(e, n))))) {
        rc = GC_DECLINE; /* a layout or an overlap csfile.h does not take */
    } else if (!rc && g->cs) { /* keeping the CRCs (csfile.h) */
        pthread_mutex_lock(&g->xlock);
        rc = write
                 ? g_cs_write(fd, g->cfd, e, n, &bad,
                              g_fault_int(G_CFG_TEST_CLIENT_CRASH_AFTER_CRC) > 0
                                  ? crash_point
                                  : NULL)
                 : g_cs_read(fd, g->cfd, e, n, &bad);
        pthread_mutex_unlock(&g->xlock);
    } else if (!rc && write && g->locked) {
        pthread_mutex_lock(&g->xlock);
        rc = g_fd_write_locked(fd, g->base, e, n, true);
        pthread_mutex_unlock(&g->xlock);
    } else if (!rc && write) {
        rc = g_fd_write(fd, g->base, e, n);
    } else if (!rc) {
        eof = false;
        rc = g_fd_read(fd, g->base, e, n, &eof);
    }
    if (!rc && !write) {
        struct stat st;
        if (eof && fstat(fd, &st) == 0)
            size = (uint64_t)st.st_size > g->base
                       ? (uint64_t)st.st_size - g->base
                       : 0;
    }
    gc_dg_grant_put(g, write, rc ? 0 : bytes);
    if (sorted && sorted != small)
        free(sorted);
    /* a chunk that failed its check: the server path says so and logs
     * it (a write wrote nothing of that chunk's run) */
    if (rc == GC_DECLINE || rc == GFS_ECHECKSUM)
        return GC_DECLINE;
    x->status = rc;
    x->fork_size = rc ? 0 : size;
    return 0;
}

/* -------------------------------------------------------------- probe -- */

/* Cross-memory attach must work (requests of tiny pieces use it), and the
 * server must grant this process descriptors. */
static int direct_probe(gc_hs_call call, void *arg)
{
    bool forced = gc_transport() == GFS_TRANSPORT_DIRECT;
    int rc = gc_cma_probe(call, arg);
    if (rc == GC_DECLINE)
        return forced ? GFS_EDIRECT : GC_DECLINE;
    if (rc)
        return rc;
    gp_wbuf w;
    gp_wbuf_init(&w);
    gp_DIRECT_OPEN_req_encode(&w, &(gp_DIRECT_OPEN_req){.fkid = 0});
    uint8_t out[64];
    uint32_t outlen = 0;
    int k = w.err ? w.err
                  : call(arg, GP_OP_DIRECT_OPEN, &w, out, sizeof(out), &outlen);
    gp_wbuf_free(&w);
    if (k == GFS_ESERVERDOWN || k == GFS_ETIMEDOUT || k == GFS_EPROTO ||
        k == GFS_EVERSION)
        return k;
    if (k == 0)
        return 0;
    return forced ? GFS_EDIRECT : GC_DECLINE; /* another uid, old server */
}

/* The same-host socket; with GALLEY_TRANSPORT=direct, its absence where
 * the server answers on TCP (another host) is a refusal, said as such. */
static int direct_dial(const char *host, const char *port, int *fd)
{
    int rc = gc_dial_local(host, port, fd);
    if (!rc || gc_transport() != GFS_TRANSPORT_DIRECT)
        return rc;
    int tfd;
    rc = gc_dial_tcp(host, port, gc_timeout_ms(), &tfd);
    if (rc)
        return rc; /* nobody there at all */
    close(tfd);
    return GFS_EDIRECT;
}

const gc_transport_ops gc_transport_direct = {
    .name = "direct",
    .kind = GFS_TRANSPORT_DIRECT,
    .stream = GC_STREAM_UNIX,
    .dial = direct_dial,
    .probe = direct_probe,
    .start = gc_replies_waiter_start,
    .progress = gc_replies_waiter_progress,
    /* chunks: transfers direct_xfer declined, which the server moves by
     * cross-memory attach */
    .io_submit = gc_cma_io_submit,
    .xfer = direct_xfer,
    .prepare = direct_prepare,
    .same_host = gc_unix_same_host,
    .release = gc_dg_release,
    .shutdown = gc_dg_shutdown,
    .reader_open = direct_reader_open,
    .reader_read = direct_reader_read,
    .reader_count = direct_reader_count,
    .reader_pin = direct_reader_pin,
    .reader_unpin = direct_reader_unpin,
    .reader_whole = direct_reader_whole,
    .reader_free = direct_reader_free,
};
