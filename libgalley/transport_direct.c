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
 * allocation for up to SMALL_PIECES pieces, and the fork check reads a
 * cached pid (conn.c).  Chunks reach this transport only for transfers
 * direct_xfer declined; they go to the server by cross-memory attach.
 *
 * Per transfer, measured (bench/README.md): reads always go direct (pieces
 * close together are read as one span and copied out, as ROMIO's data
 * sieving does); writes go direct when their pieces average at least
 * GC_DIRECT_WRITE_MIN bytes over the whole transfer (per transfer, so
 * all of one write takes one path and, where pieces overlap, the later
 * one wins).  Smaller pieces
 * go to the server by cross-memory attach: one pwrite per 16-byte piece costs
 * more than the round trip that carries a million of them, and the server,
 * unlike this process, may merge them with the bytes around them in its cache.
 * The first direct write of a fork asks for a writable descriptor, which makes
 * the server bypass its cache for that fork until it is released; a fork only
 * read gets a read-only one and changes nothing there.
 *
 * Checksummed forks (x->csum): the grant comes from DIRECT_COPEN with the
 * fork's CRC sidecar beside the file, and the data moves through
 * proto/csfile.c (chunk locks on the sidecar, CRCs from and checks before
 * the application's buffer) instead of gx_fd_*; a list of overlapping
 * write pieces, and a chunk that fails its check, go to the server
 * (which then says so and logs it).
 *
 * Descriptors: asked for lazily, on a fork's first direct request, over a
 * separate authenticated Unix-socket connection per server (the "grant
 * channel": ancillary data needs recvmsg, and the connection's reply
 * engines stay as they are -- HDFS keeps its descriptor-passing socket
 * apart too); received close-on-exec; closed when the fork is closed
 * (gc_direct_release from gc_fork_close, which also reports the bytes
 * moved, for the server's IO_STATS) and at gfs_finalize.  The server
 * ties the grants to the channel: when the channel breaks (server
 * restart) they are void, so every request first checks that the channel
 * is still up (one poll) and asks again if not.  A child after fork()
 * uses the server path (its connection is its parent's).
 *
 * Threads: any.  One mutex (D.lock) guards the grant table and channels
 * and is held across a channel's round trip (rare: once per fork); the
 * data itself moves with no lock held, the grant pinned by its use count.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POLLRDHUP, MSG_CMSG_CLOEXEC */
#endif
#include "transport.h"

#include "csfile.h"
#include "dial.h"
#include "fdio.h"
#include "gsend.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* Writes whose pieces average fewer bytes go to the server (see top);
 * GALLEY_DIRECT_WRITE_MIN overrides it (for measuring). */
#define GC_DIRECT_WRITE_MIN 512

static uint64_t write_min(void)
{
    static uint64_t v; /* 0: not read yet */
    uint64_t m = __atomic_load_n(&v, __ATOMIC_RELAXED);
    if (!m) {
        const char *t = getenv("GALLEY_DIRECT_WRITE_MIN");
        long x = t && *t ? atol(t) : GC_DIRECT_WRITE_MIN;
        m = x > 0 ? (uint64_t)x : 1;
        __atomic_store_n(&v, m, __ATOMIC_RELAXED);
    }
    return m;
}

typedef struct dgrant {
    int server;
    uint64_t fkid;
    int rfd, wfd; /* read-only / writable descriptor, or -1 */
    int cfd;      /* a checksummed fork's CRC sidecar (DIRECT_COPEN), or -1 */
    bool cs;      /* granted by DIRECT_COPEN: its CRCs are ours to keep */
    /* cs: held around each transfer, because this process's threads share
     * one open file description of the sidecar, and its chunk locks
     * (csfile.h) are the description's, not the thread's */
    pthread_mutex_t cs_lock;
    uint64_t base;  /* the fork's byte 0 in the file */
    int inuse;      /* requests moving data through it now */
    uint64_t wrote; /* bytes moved, reported at release */
    uint64_t read;
    struct dgrant *next;
} dgrant;

typedef struct dchan {
    int fd; /* -1: not connected */
    uint64_t reqid;
    uint64_t checked_ns; /* when we last saw it up */
} dchan;

/* How often a request looks whether its grant channel is still up (a poll
 * per request would cost a fifth of a 4 KiB pwrite). */
#define GC_DIRECT_CHECK_NS 1000000ull

static struct {
    pthread_mutex_t lock;
    pthread_cond_t idle; /* a grant's inuse dropped to 0 */
    dgrant *grants;
    dchan *chan; /* by server */
    int nchan;
} D = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0};

/* ------------------------------------------------------ grant channel -- */

/* recv exactly n bytes; a descriptor that arrives with them goes to *fdp
 * (received close-on-exec), a second one is closed. */
static int chan_recv(int fd, void *buf, size_t n, int *fdp)
{
    uint8_t *p = buf;
    while (n) {
        union {
            struct cmsghdr h;
            char buf[CMSG_SPACE(sizeof(int))];
        } ctl;
        struct iovec v = {p, n};
        struct msghdr mh = {.msg_iov = &v,
                            .msg_iovlen = 1,
                            .msg_control = ctl.buf,
                            .msg_controllen = sizeof(ctl.buf)};
        ssize_t r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return errno == EAGAIN ? GFS_ETIMEDOUT : GFS_ESERVERDOWN;
        if (r == 0)
            return GFS_ESERVERDOWN;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm;
             cm = CMSG_NXTHDR(&mh, cm)) {
            if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                continue;
            int got;
            memcpy(&got, CMSG_DATA(cm), sizeof(got));
            if (fdp && *fdp < 0)
                *fdp = got;
            else
                close(got);
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* One synchronous request on a grant channel; a descriptor in the reply
 * goes to *fdp (if not NULL; else closed).  The reply's status, or a
 * transport error (the channel is then closed). */
static int chan_call_fd(dchan *ch, uint16_t op, const gp_wbuf *w, uint8_t *out,
                        size_t outmax, uint32_t *outlen, int *fdp)
{
    uint8_t hb[GP_HDR_SIZE];
    uint64_t id = ++ch->reqid;
    gp_hdr h = {GP_MAGIC, GP_VERSION, op, id, 0, (uint32_t)w->len};
    gp_hdr_encode(&h, hb);
    struct iovec v[2] = {{hb, sizeof(hb)}, {w->data, w->len}};
    int rc = gp_send_all(ch->fd, v, w->len ? 2 : 1) ? GFS_ESERVERDOWN : 0;
    int fd = -1;
    if (!rc)
        rc = chan_recv(ch->fd, hb, sizeof(hb), &fd);
    if (!rc) {
        gp_hdr_decode(hb, &h);
        if (h.magic != GP_MAGIC || h.reqid != id || h.length > outmax)
            rc = GFS_EPROTO;
        else if (h.version != GP_VERSION)
            rc = GFS_EVERSION;
    }
    if (!rc)
        rc = chan_recv(ch->fd, out, h.length, &fd);
    if (rc) {
        if (fd >= 0)
            close(fd);
        close(ch->fd);
        ch->fd = -1;
        return rc;
    }
    *outlen = h.length;
    if (fdp && h.status == 0)
        *fdp = fd;
    else if (fd >= 0)
        close(fd);
    return h.status;
}

static int chan_auth_call(void *arg, uint16_t op, const gp_wbuf *w,
                          uint8_t *out, size_t outmax, uint32_t *outlen)
{
    return chan_call_fd(arg, op, w, out, outmax, outlen, NULL);
}

/* Drop every grant on server (its channel is gone: the server has
 * released them).  Waits for requests still using them. */
static void forget_server_locked(int server)
{
    for (;;) {
        dgrant *g = D.grants;
        while (g && g->server != server)
            g = g->next;
        if (!g)
            return;
        if (g->inuse) { /* the list may change while we wait: look again */
            pthread_cond_wait(&D.idle, &D.lock);
            continue;
        }
        dgrant **pp = &D.grants;
        while (*pp != g)
            pp = &(*pp)->next;
        *pp = g->next;
        if (g->rfd >= 0)
            close(g->rfd);
        if (g->wfd >= 0)
            close(g->wfd);
        if (g->cfd >= 0)
            close(g->cfd);
        free(g);
    }
}

/* A child after fork() starts with no grants and no channels: its copies
 * of the descriptors are closed (the parent's stay open), and it never
 * speaks on its parent's grant channels. */
static void atfork_prepare(void)
{
    pthread_mutex_lock(&D.lock); /* the tables are consistent at fork */
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&D.lock);
}

/* Close every grant channel and forget the table (D.lock held, or the
 * only thread: a child after fork). */
static void chans_close_all(void)
{
    for (int i = 0; i < D.nchan; i++)
        if (D.chan[i].fd >= 0)
            close(D.chan[i].fd);
    free(D.chan);
    D.chan = NULL;
    D.nchan = 0;
}

static void atfork_child(void)
{
    pthread_mutex_unlock(&D.lock); /* taken by this thread in prepare */
    pthread_cond_init(&D.idle, NULL);
    while (D.grants) {
        dgrant *g = D.grants;
        D.grants = g->next;
        if (g->rfd >= 0)
            close(g->rfd);
        if (g->wfd >= 0)
            close(g->wfd);
        if (g->cfd >= 0)
            close(g->cfd);
        free(g);
    }
    chans_close_all();
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_register(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* Server's grant channel, connected and authenticated; NULL with *rc. */
static dchan *chan_get_locked(gc_conn *c, int *rc)
{
    int server;
    const char *host, *port;
    gc_conn_address(c, &server, &host, &port);
    if (server >= D.nchan) {
        int n = server + 1;
        dchan *p = realloc(D.chan, (size_t)n * sizeof(*p));
        if (!p) {
            *rc = -ENOMEM;
            return NULL;
        }
        for (int i = D.nchan; i < n; i++)
            p[i] = (dchan){.fd = -1};
        D.chan = p;
        D.nchan = n;
    }
    dchan *ch = &D.chan[server];
    uint64_t now = gc_now_ns();
    if (ch->fd >= 0 && now - ch->checked_ns >= GC_DIRECT_CHECK_NS) {
        /* grants live as long as the channel: a server that restarted
         * knows nothing of ours, so they must be asked for again */
        ch->checked_ns = now;
        struct pollfd p = {.fd = ch->fd, .events = POLLRDHUP};
        if (poll(&p, 1, 0) > 0 &&
            (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
            close(ch->fd);
            ch->fd = -1;
            forget_server_locked(server);
        }
    }
    if (ch->fd < 0) {
        *rc = gc_dial_local(host, port, &ch->fd);
        if (*rc)
            return NULL;
        struct timeval tv = {gc_timeout_ms() / 1000,
                             (gc_timeout_ms() % 1000) * 1000};
        setsockopt(ch->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        *rc = gc_auth_handshake(chan_auth_call, ch);
        if (*rc) {
            if (ch->fd >= 0)
                close(ch->fd);
            ch->fd = -1;
            return NULL;
        }
    }
    *rc = 0;
    return ch;
}

/* ------------------------------------------------------------- grants -- */

static dgrant *grant_find_locked(int server, uint64_t fkid)
{
    for (dgrant *g = D.grants; g; g = g->next)
        if (g->server == server && g->fkid == fkid)
            return g;
    return NULL;
}

/* Pin a descriptor of fork fkid on c's server, writable if write: asked
 * for if we have none.  0 with *gp (release with grant_put), or an error
 * (GFS_EDIRECT: refused). */
/* One DIRECT_OPEN (cs false) or DIRECT_COPEN part `part` on ch: 0 with
 * *fd and *m, or an error. */
static int grant_ask(dchan *ch, uint64_t fkid, bool write, bool cs, int part,
                     int *fd, gp_DIRECT_OPEN_rep *m)
{
    gp_wbuf w;
    gp_wbuf_init(&w);
    if (cs)
        gp_DIRECT_COPEN_req_encode(
            &w, &(gp_DIRECT_COPEN_req){
                    .fkid = fkid, .write = write, .part = (uint8_t)part});
    else
        gp_DIRECT_OPEN_req_encode(
            &w, &(gp_DIRECT_OPEN_req){.fkid = fkid, .write = write});
    uint8_t out[64];
    uint32_t outlen = 0;
    *fd = -1;
    int rc = w.err
                 ? w.err
                 : chan_call_fd(ch, cs ? GP_OP_DIRECT_COPEN : GP_OP_DIRECT_OPEN,
                                &w, out, sizeof(out), &outlen, fd);
    gp_wbuf_free(&w);
    if (!rc) { /* the two replies have one form */
        gp_rbuf r;
        gp_rbuf_init(&r, out, outlen);
        if (*fd < 0 || gp_DIRECT_OPEN_rep_decode(&r, m))
            rc = GFS_EPROTO;
    }
    if (rc && *fd >= 0) {
        close(*fd);
        *fd = -1;
    }
    return rc;
}

static int grant_get(gc_conn *c, uint64_t fkid, bool write, bool cs,
                     dgrant **gp)
{
    int server;
    const char *host, *port;
    gc_conn_address(c, &server, &host, &port);
    pthread_once(&atfork_once, atfork_register);
    pthread_mutex_lock(&D.lock);
    int rc;
    dchan *ch = chan_get_locked(c, &rc); /* also drops void grants */
    dgrant *g = grant_find_locked(server, fkid);
    if (g && g->cs != cs) { /* another kind than asked: the server path */
        rc = GFS_EDIRECT;
        goto out_unlock;
    }
    if (g && (write ? g->wfd >= 0 : g->wfd >= 0 || g->rfd >= 0))
        goto out_pin;
    if (!ch)
        goto out_unlock;
    gp_DIRECT_OPEN_rep m = {0};
    int fd = -1, cfd = g ? g->cfd : -1;
    rc = grant_ask(ch, fkid, write, cs, 0, &fd, &m);
    if (!rc && cs && cfd < 0) {
        gp_DIRECT_OPEN_rep cm;
        rc = grant_ask(ch, fkid, write, cs, 1, &cfd, &cm);
        if (rc) { /* the file's grant without its sidecar: given back */
            close(fd);
            fd = -1;
            gp_wbuf w;
            gp_wbuf_init(&w);
            gp_DIRECT_CLOSE_req_encode(
                &w, &(gp_DIRECT_CLOSE_req){.fkid = fkid, .write = write});
            uint8_t out[16];
            uint32_t outlen;
            if (!w.err && ch->fd >= 0)
                chan_call_fd(ch, GP_OP_DIRECT_CLOSE, &w, out, sizeof(out),
                             &outlen, NULL);
            gp_wbuf_free(&w);
        }
    }
    bool fresh = !g;
    if (!rc && fresh && !(g = calloc(1, sizeof(*g))))
        rc = -ENOMEM;
    if (rc) {
        if (fd >= 0)
            close(fd);
        if (cfd >= 0 && (!g || cfd != g->cfd))
            close(cfd);
        goto out_unlock;
    }
    if (fresh) {
        *g = (dgrant){.server = server,
                      .fkid = fkid,
                      .rfd = -1,
                      .wfd = -1,
                      .cfd = -1,
                      .cs = cs};
        pthread_mutex_init(&g->cs_lock, NULL);
        g->next = D.grants;
        D.grants = g;
    }
    g->base = m.base;
    g->cfd = cfd;
    if (write)
        g->wfd = fd;
    else
        g->rfd = fd;
out_pin:
    g->inuse++;
    *gp = g;
    rc = 0;
out_unlock:
    pthread_mutex_unlock(&D.lock);
    return rc;
}

static void grant_put(dgrant *g, bool write, uint64_t bytes)
{
    pthread_mutex_lock(&D.lock);
    if (write)
        g->wrote += bytes;
    else
        g->read += bytes;
    if (--g->inuse == 0)
        pthread_cond_broadcast(&D.idle);
    pthread_mutex_unlock(&D.lock);
}

/* Close g's descriptors and tell the server (with the bytes moved). */
static void grant_close_locked(dgrant *g)
{
    dchan *ch = g->server < D.nchan ? &D.chan[g->server] : NULL;
    if (g->cfd >= 0) { /* no grant of its own: goes with the file's */
        close(g->cfd);
        g->cfd = -1;
    }
    for (int k = 0; k < 2; k++) {
        int *fd = k ? &g->wfd : &g->rfd;
        if (*fd < 0)
            continue;
        close(*fd);
        *fd = -1;
        if (!ch || ch->fd < 0)
            continue; /* the server dropped it with the channel */
        gp_wbuf w;
        gp_wbuf_init(&w);
        gp_DIRECT_CLOSE_req_encode(&w, &(gp_DIRECT_CLOSE_req){
                                           .fkid = g->fkid,
                                           .write = (uint8_t)k,
                                           .written = g->wrote,
                                           .read = g->read,
                                       });
        g->wrote = g->read = 0; /* reported once */
        uint8_t out[16];
        uint32_t outlen;
        if (!w.err)
            chan_call_fd(ch, GP_OP_DIRECT_CLOSE, &w, out, sizeof(out), &outlen,
                         NULL);
        gp_wbuf_free(&w);
    }
}

void gc_direct_release(int server, uint64_t fkid)
{
    pthread_mutex_lock(&D.lock);
    dgrant **pp = &D.grants;
    while (*pp && ((*pp)->server != server || (*pp)->fkid != fkid))
        pp = &(*pp)->next;
    dgrant *g = *pp;
    if (g) {
        while (g->inuse)
            pthread_cond_wait(&D.idle, &D.lock);
        /* the list may have changed while we waited */
        for (pp = &D.grants; *pp != g; pp = &(*pp)->next)
            ;
        *pp = g->next;
        grant_close_locked(g);
        free(g);
    }
    pthread_mutex_unlock(&D.lock);
}

void gc_direct_shutdown(void)
{
    pthread_mutex_lock(&D.lock);
    while (D.grants) {
        dgrant *g = D.grants;
        while (g->inuse)
            pthread_cond_wait(&D.idle, &D.lock);
        if (g != D.grants)
            continue;
        D.grants = g->next;
        grant_close_locked(g);
        free(g);
    }
    chans_close_all();
    pthread_mutex_unlock(&D.lock);
}

/* -------------------------------------------------------------- data -- */

/* The test-only crash points of a same-host client's checksummed write
 * (csfile.h: gp_cs_write's between): GALLEY_TEST_CLIENT_CRASH_AFTER_CRC=1
 * exits between its CRCs and its data, =2 halfway through its data (a
 * chunk half written).  galleyd's is GALLEY_TEST_CRASH_AFTER_CRC
 * (servers/csum.c). */
static long crash_stage(void)
{
    static long v = -1;
    long s = __atomic_load_n(&v, __ATOMIC_RELAXED);
    if (s < 0) {
        const char *t = getenv("GALLEY_TEST_CLIENT_CRASH_AFTER_CRC");
        s = t ? atol(t) : 0;
        __atomic_store_n(&v, s, __ATOMIC_RELAXED);
    }
    return s;
}

static void crash_point(int stage)
{
    if (crash_stage() == stage + 1)
        _exit(99);
}

/* Pieces per transfer sorted on the stack (more: one allocation). */
#define SMALL_PIECES 16

/*
 * The whole transfer, here and now, from its list of pieces to preadv /
 * pwritev (transport.h: xfer): no chunk, no wire descriptor, no reply;
 * no allocation for a list of up to SMALL_PIECES pieces.  Writes keep
 * list order where pieces overlap (a later one wins); reads are sorted
 * (gx_fd_read sieves pieces close together).
 */
static int direct_xfer(gc_conn *c, int op, gc_xfer *x)
{
    if (!gc_conn_owned(c)) /* a child after fork(): not our grants */
        return GC_DECLINE;
    bool write = op == GFS_WRITE;
    uint64_t bytes = 0, end = 0, nonempty = 0;
    for (size_t i = 0; i < x->n; i++)
        if (x->pieces[i].len) {
            bytes += x->pieces[i].len;
            nonempty++;
            if (gx_end(&x->pieces[i]) > end)
                end = gx_end(&x->pieces[i]);
        }
    if (!bytes) /* as the chunk path: no request at all */
        return 0;
    /* tiny pieces: the server batches them better (the whole transfer
     * takes one path, so its pieces land in list order) */
    if (write && bytes / nonempty < write_min())
        return GC_DECLINE;
    dgrant *g = NULL;
    int rc = grant_get(c, x->fkid, write, x->csum, &g);
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
    const gx_ext *e = x->pieces;
    size_t n = x->n;
    gx_ext small[SMALL_PIECES], *sorted = NULL;
    if (!gx_sorted(e, n)) {
        sorted = n <= SMALL_PIECES ? small : malloc(n * sizeof(*sorted));
        if (sorted) {
            memcpy(sorted, e, n * sizeof(*sorted));
            /* writes: sorted and disjoint, so neighbours merge; where
             * pieces overlap, list order */
            if (gx_sort(sorted, n) == 0 && (!write || gx_disjoint(sorted, n)))
                e = sorted;
        }
        if (!write && e == x->pieces)
            rc = -ENOMEM;
    }
    int fd = write ? g->wfd : g->wfd >= 0 ? g->wfd : g->rfd;
    uint64_t size = end; /* at least; only reads need it */
    bool eof = !write;
    uint64_t bad;
    if (!rc && g->cs &&
        (g->base || (write && (!gx_sorted(e, n) || !gx_disjoint(e, n))))) {
        rc = GC_DECLINE; /* a layout or an overlap csfile.h does not take */
    } else if (!rc && g->cs) { /* keeping the CRCs (csfile.h) */
        pthread_mutex_lock(&g->cs_lock);
        rc = write ? gp_cs_write(fd, g->cfd, e, n, &bad,
                                 crash_stage() > 0 ? crash_point : NULL)
                   : gp_cs_read(fd, g->cfd, e, n, &bad);
        pthread_mutex_unlock(&g->cs_lock);
    } else if (!rc && write) {
        rc = gx_fd_write(fd, g->base, e, n);
    } else if (!rc) {
        eof = false;
        rc = gx_fd_read(fd, g->base, e, n, &eof);
    }
    if (!rc && !write) {
        struct stat st;
        if (eof && fstat(fd, &st) == 0)
            size = (uint64_t)st.st_size > g->base
                       ? (uint64_t)st.st_size - g->base
                       : 0;
    }
    grant_put(g, write, rc ? 0 : bytes);
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

/* A chunk reaches the direct transport only when direct_xfer declined its
 * transfer: the server moves it, by cross-memory attach. */
static int direct_io_submit(gc_conn *c, int op, gc_chunk *ch)
{
    return gc_transport_cma.io_submit(c, op, ch);
}

/* -------------------------------------------------------------- probe -- */

/* Cross-memory attach must work (requests of tiny pieces use it), and the
 * server must grant this process descriptors. */
static int direct_probe(gc_hs_call call, void *arg)
{
    bool forced = gc_transport() == GFS_TRANSPORT_DIRECT;
    int rc = gc_transport_cma.probe(call, arg);
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
    .io_submit = direct_io_submit,
    .xfer = direct_xfer,
    .same_host = gc_unix_same_host,
};
