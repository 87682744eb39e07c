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
 * sieving does); writes whose pieces average at least GC_DIRECT_WRITE_MIN
 * bytes over the whole transfer go direct, a pwritev per run of adjacent
 * pieces (per transfer, so all of one write takes one path and, where
 * pieces overlap, the later one wins).  Writes of smaller pieces are
 * sieved here too, as ROMIO's ufs: does: a span of pieces is read,
 * patched and written back, one system call pair for thousands of 16-byte
 * pieces where one pwrite each costs more than the round trip that
 * carries them all to the server.  That is safe only while nobody else
 * writes the span, so these writes ask for the fork in locked mode
 * (DIRECT_WOPEN with sieve, servers/direct.c): then every writer of the
 * file, the server included, takes an OFD lock on what it writes
 * (fdio.h: gx_fd_write_locked), and a writer killed mid-span leaves no
 * lock behind.  Where a writer that takes no locks holds the fork (a
 * plain direct writer), locked mode is refused and small pieces go to the
 * server by cross-memory attach, as they did before; so do sparse ones
 * (range over GC_SIEVE_SPARSE times their bytes).  Forks are never put in
 * locked mode by large writes, so a lone 4 KiB write pays no lock.
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
 * proto/csfile.c (chunk locks on the sidecar, CRCs from and checks before
 * the application's buffer) instead of gx_fd_*; a list of overlapping
 * write pieces, and a chunk that fails its check, go to the server
 * (which then says so and logs it), and so do small pieces, never sieved
 * here (servers/direct.c, rule 7: such a fork is never in locked mode).
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
 * data itself moves with no lock held, the grant pinned by its use count
 * and its descriptor picked under the lock.  Only a release (and
 * shutdown) waits for a grant's use to end, and it looks the grant up
 * again after every wait: threads closing opens of one fork share its
 * grant.  A grant forgotten while in use is dropped by its last user.
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
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* Writes whose pieces average fewer bytes are sieved (see top);
 * GALLEY_DIRECT_WRITE_MIN overrides it (for measuring). */
#define GC_DIRECT_WRITE_MIN 512
/* ... unless their range is this many times their bytes or more (sparse:
 * a span per piece), then they go to the server */
#define GC_SIEVE_SPARSE 64

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

/* GALLEY_DIRECT_SIEVE=0 sends small-piece writes to the server instead
 * (for measuring) */
static bool sieve_on(void)
{
    static int v;
    return gc_env_on(&v, "GALLEY_DIRECT_SIEVE");
}

/* What a transfer needs of a grant. */
enum { G_READ, G_WRITE, G_SIEVE };

typedef struct dgrant {
    int server;
    uint64_t fkid;
    int rfd, wfd; /* read-only / writable descriptor, or -1 */
    bool locked;  /* wfd is in locked mode: every write locks */
    int cfd;      /* a checksummed fork's CRC sidecar (DIRECT_COPEN), or -1 */
    bool cs;      /* granted by DIRECT_COPEN: its CRCs are ours to keep */
    /* held around each transfer that takes locks of an open file
     * description: a checksummed grant's chunk locks on its sidecar
     * (csfile.h), a locked-mode grant's OFD locks on the file that shut
     * other processes out of a sieved span.  This process's threads share
     * those descriptions, so the locks never shut them out of each other. */
    pthread_mutex_t xlock;
    uint64_t base;  /* the fork's byte 0 in the file (never changes) */
    int inuse;      /* requests moving data through it now */
    bool gone;      /* forgotten while in use: on D.gone, dropped by its
                     * last grant_put */
    uint64_t wrote; /* bytes moved, reported at release */
    uint64_t read;
    struct dgrant *next;
} dgrant;

static void grant_free(dgrant *g)
{
    pthread_mutex_destroy(&g->xlock);
    free(g);
}

typedef struct dchan {
    int fd; /* -1: not connected */
    uint64_t reqid;
    uint64_t checked_ns; /* when we last saw it up */
} dchan;

/* How often a request looks whether its grant channel is still up (a poll
 * per request would cost a fifth of a 4 KiB pwrite). */
#define GC_DIRECT_CHECK_NS 1000000ull

struct gc_dreader; /* readers, below */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t idle; /* a grant's inuse dropped to 0 */
    dgrant *grants;
    dgrant *gone; /* forgotten, still in use (forget_server_locked) */
    dchan *chan;  /* by server */
    int nchan;
    /* raised (atomically, under lock) whenever a server's grants are
     * forgotten: a reader built before holds descriptors the server no
     * longer counts as granted, and stops reading through them */
    uint64_t epoch;
    struct gc_dreader *readers; /* every live reader (a child closes
                                 * its copies of their descriptors) */
} D = {.lock = PTHREAD_MUTEX_INITIALIZER, .idle = PTHREAD_COND_INITIALIZER};

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

/* Send a request on a grant channel: its id, or 0 (the channel is then
 * closed). */
static uint64_t chan_send(dchan *ch, uint16_t op, const gp_wbuf *w)
{
    uint8_t hb[GP_HDR_SIZE];
    uint64_t id = ++ch->reqid;
    gp_hdr h = {GP_MAGIC, GP_VERSION, op, id, 0, (uint32_t)w->len};
    gp_hdr_encode(&h, hb);
    struct iovec v[2] = {{hb, sizeof(hb)}, {w->data, w->len}};
    if (gp_send_all(ch->fd, v, w->len ? 2 : 1) == 0)
        return id;
    close(ch->fd);
    ch->fd = -1;
    return 0;
}

/* The reply to request id (the next one on the channel; 0: the send
 * failed); a descriptor in it goes to *fdp (if not NULL; else closed).
 * The reply's status, or a transport error (the channel is then
 * closed). */
static int chan_finish(dchan *ch, uint64_t id, uint8_t *out, size_t outmax,
                       uint32_t *outlen, int *fdp)
{
    if (!id || ch->fd < 0)
        return GFS_ESERVERDOWN;
    uint8_t hb[GP_HDR_SIZE];
    gp_hdr h;
    int fd = -1;
    int rc = chan_recv(ch->fd, hb, sizeof(hb), &fd);
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

/* One synchronous request on a grant channel (chan_send, chan_finish). */
static int chan_call_fd(dchan *ch, uint16_t op, const gp_wbuf *w, uint8_t *out,
                        size_t outmax, uint32_t *outlen, int *fdp)
{
    return chan_finish(ch, chan_send(ch, op, w), out, outmax, outlen, fdp);
}

static int chan_auth_call(void *arg, uint16_t op, const gp_wbuf *w,
                          uint8_t *out, size_t outmax, uint32_t *outlen)
{
    return chan_call_fd(arg, op, w, out, outmax, outlen, NULL);
}

/* Take g, which is on the list at *head, off it. */
static void grant_unlink(dgrant **head, dgrant *g)
{
    while (*head != g)
        head = &(*head)->next;
    *head = g->next;
}

/* Close a grant's descriptors (no word to the server) and free it. */
static void grant_drop(dgrant *g)
{
    if (g->rfd >= 0)
        close(g->rfd);
    if (g->wfd >= 0)
        close(g->wfd);
    if (g->cfd >= 0)
        close(g->cfd);
    grant_free(g);
}

/* Drop every grant on server (its channel is gone: the server has
 * released them).  Never waits (its callers keep pointers into D.chan and
 * requests in flight on other channels): a grant still in use leaves the
 * table now, void, and its last grant_put drops it. */
static void forget_server_locked(int server)
{
    __atomic_add_fetch(&D.epoch, 1, __ATOMIC_RELEASE);
    for (dgrant **pp = &D.grants; *pp;) {
        dgrant *g = *pp;
        if (g->server != server) {
            pp = &g->next;
            continue;
        }
        *pp = g->next;
        if (g->inuse) {
            g->gone = true;
            g->next = D.gone;
            D.gone = g;
        } else
            grant_drop(g);
    }
}

/* Readers (below): a child after fork() closes its copies. */
static void readers_forget_all(void);

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
    dgrant *lists[] = {D.grants, D.gone}; /* the gone: their copies too */
    for (int k = 0; k < 2; k++)
        while (lists[k]) {
            dgrant *g = lists[k];
            lists[k] = g->next;
            grant_drop(g);
        }
    D.grants = D.gone = NULL;
    readers_forget_all();
    chans_close_all();
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_register(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* Is server's grant channel still up?  Looked at once per
 * GC_DIRECT_CHECK_NS: grants live as long as the channel, and a server
 * that restarted knows nothing of ours, so they must be asked for again
 * (the channel closed and its grants forgotten here). */
static void chan_check_locked(int server, uint64_t now)
{
    dchan *ch = server < D.nchan ? &D.chan[server] : NULL;
    if (!ch || ch->fd < 0 || now - ch->checked_ns < GC_DIRECT_CHECK_NS)
        return;
    ch->checked_ns = now;
    struct pollfd p = {.fd = ch->fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
        close(ch->fd);
        ch->fd = -1;
        forget_server_locked(server);
    }
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
    chan_check_locked(server, g_now_ns());
    if (ch->fd < 0) {
        /* a channel that served before was closed by a failed call: the
         * grants and readers it left are void too */
        if (ch->reqid)
            forget_server_locked(server);
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

/* Do we hold what `need` asks for of (server, fkid), checksummed (cs) or
 * not?  1: yes, 0: ask the server, GFS_EDIRECT: no, and asking would be
 * refused (a grant of the other kind than asked; G_SIEVE while we hold a
 * writable descriptor not in locked mode): the server path serves it. */
static int grant_have_locked(const dgrant *g, int need, bool cs)
{
    if (!g)
        return 0;
    if (g->cs != cs || (g->wfd >= 0 && need == G_SIEVE && !g->locked))
        return GFS_EDIRECT;
    return need != G_READ ? g->wfd >= 0 : g->wfd >= 0 || g->rfd >= 0;
}

/* Send the request for `need` of fork fkid on ch: its id, or 0.  cs: a
 * checksummed fork's DIRECT_COPEN, part 0 (the file) or 1 (its sidecar);
 * its clients never sieve. */
static uint64_t grant_ask(dchan *ch, uint64_t fkid, int need, bool cs, int part)
{
    gp_wbuf w;
    gp_wbuf_init(&w);
    uint16_t op;
    if (cs) {
        op = GP_OP_DIRECT_COPEN;
        gp_DIRECT_COPEN_req_encode(
            &w, &(gp_DIRECT_COPEN_req){.fkid = fkid,
                                       .write = need != G_READ,
                                       .part = (uint8_t)part});
    } else if (need != G_READ) {
        /* writable: DIRECT_WOPEN, which says whether the fork is in
         * locked mode (servers/direct.c) */
        op = GP_OP_DIRECT_WOPEN;
        gp_DIRECT_WOPEN_req_encode(
            &w, &(gp_DIRECT_WOPEN_req){.fkid = fkid, .sieve = need == G_SIEVE});
    } else {
        op = GP_OP_DIRECT_OPEN;
        gp_DIRECT_OPEN_req_encode(&w, &(gp_DIRECT_OPEN_req){.fkid = fkid});
    }
    uint64_t id = w.err ? 0 : chan_send(ch, op, &w);
    gp_wbuf_free(&w);
    return id;
}

/* The reply to grant_ask's request id (part 0): its descriptor kept in
 * the table, 0 with *gp, or an error (GFS_EDIRECT: refused). */
static int grant_take_locked(dchan *ch, uint64_t id, int server, uint64_t fkid,
                             int need, bool cs, dgrant **gp)
{
    bool write = need != G_READ;
    uint8_t out[64];
    uint32_t outlen = 0;
    int fd = -1;
    int rc = chan_finish(ch, id, out, sizeof(out), &outlen, &fd);
    gp_DIRECT_WOPEN_rep m = {0};
    if (!rc) {
        gp_rbuf r;
        gp_rbuf_init(&r, out, outlen);
        gp_DIRECT_OPEN_rep ro; /* DIRECT_COPEN's has its form */
        if (fd < 0 || (write && !cs ? gp_DIRECT_WOPEN_rep_decode(&r, &m)
                                    : gp_DIRECT_OPEN_rep_decode(&r, &ro)))
            rc = GFS_EPROTO;
        else if (!write || cs)
            m.base = ro.base;
    }
    dgrant *g = grant_find_locked(server, fkid);
    bool fresh = !g;
    if (!rc && fresh && !(g = calloc(1, sizeof(*g))))
        rc = -ENOMEM;
    if (rc) {
        if (fd >= 0)
            close(fd);
        return rc;
    }
    if (fresh) {
        *g = (dgrant){.server = server,
                      .fkid = fkid,
                      .rfd = -1,
                      .wfd = -1,
                      .cfd = -1,
                      .cs = cs,
                      .base = m.base};
        pthread_mutex_init(&g->xlock, NULL);
        g->next = D.grants;
        D.grants = g;
    }
    if (write) {
        g->wfd = fd;
        g->locked = m.locked != 0;
    } else
        g->rfd = fd;
    *gp = g;
    return 0;
}

/* A checksummed grant g just given for `need`: its sidecar (DIRECT_COPEN
 * part 1) if we lack it; without it the file's grant is given back.  0 or
 * an error. */
static int grant_sidecar_locked(dchan *ch, dgrant *g, int need)
{
    if (g->cfd >= 0)
        return 0;
    bool write = need != G_READ;
    uint8_t out[64];
    uint32_t outlen = 0;
    int cfd = -1;
    int rc = chan_finish(ch, grant_ask(ch, g->fkid, need, true, 1), out,
                         sizeof(out), &outlen, &cfd);
    if (!rc) {
        gp_rbuf r;
        gp_rbuf_init(&r, out, outlen);
        gp_DIRECT_COPEN_rep cm;
        if (cfd < 0 || gp_DIRECT_COPEN_rep_decode(&r, &cm))
            rc = GFS_EPROTO;
    }
    if (!rc) {
        g->cfd = cfd;
        return 0;
    }
    if (cfd >= 0)
        close(cfd);
    int *fd = write ? &g->wfd : &g->rfd;
    close(*fd);
    *fd = -1;
    gp_wbuf w;
    gp_wbuf_init(&w);
    gp_DIRECT_CLOSE_req_encode(
        &w, &(gp_DIRECT_CLOSE_req){.fkid = g->fkid, .write = write});
    if (!w.err && ch->fd >= 0)
        chan_call_fd(ch, GP_OP_DIRECT_CLOSE, &w, out, sizeof(out), &outlen,
                     NULL);
    gp_wbuf_free(&w);
    return rc;
}

/* Pin a descriptor of fork fkid on c's server for `need` (G_READ,
 * G_WRITE, G_SIEVE: writable and in locked mode), of a checksummed fork
 * (cs, DIRECT_COPEN: with its sidecar) or not: asked for if we have none.
 * 0 with *gp (release with grant_put) and the descriptor to use in *fdp
 * (read here: another thread may make a read-only grant writable while
 * this one's transfer runs), or an error (GFS_EDIRECT: refused). */
static int grant_get(gc_conn *c, uint64_t fkid, int need, bool cs, dgrant **gp,
                     int *fdp)
{
    int server;
    const char *host, *port;
    gc_conn_address(c, &server, &host, &port);
    pthread_once(&atfork_once, atfork_register);
    pthread_mutex_lock(&D.lock);
    int rc;
    dchan *ch = chan_get_locked(c, &rc); /* also drops void grants */
    dgrant *g = grant_find_locked(server, fkid);
    int have = grant_have_locked(g, need, cs);
    if (have < 0 || (!have && !ch)) {
        rc = have < 0 ? have : rc;
        goto out_unlock;
    }
    if (!have) {
        rc = grant_take_locked(ch, grant_ask(ch, fkid, need, cs, 0), server,
                               fkid, need, cs, &g);
        if (!rc && cs)
            rc = grant_sidecar_locked(ch, g, need);
    }
    if (!rc) {
        g->inuse++;
        *gp = g;
        *fdp = need != G_READ || g->wfd >= 0 ? g->wfd : g->rfd;
    }
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
    if (--g->inuse == 0 && g->gone) {
        grant_unlink(&D.gone, g);
        grant_drop(g);
    } else if (!g->inuse)
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

/* Release (server, fkid)'s grant once no request uses it.  Other threads
 * may release, forget or ask for it again while we wait (two opens of a
 * fork share its grant), so it is looked up afresh after every wait: no
 * pointer into the table is kept across one. */
void gc_direct_release(int server, uint64_t fkid)
{
    pthread_mutex_lock(&D.lock);
    dgrant *g;
    while ((g = grant_find_locked(server, fkid)) && g->inuse)
        pthread_cond_wait(&D.idle, &D.lock);
    if (g) {
        grant_unlink(&D.grants, g);
        grant_close_locked(g);
        grant_free(g);
    }
    pthread_mutex_unlock(&D.lock);
}

void gc_direct_shutdown(void)
{
    pthread_mutex_lock(&D.lock);
    while (D.grants) {
        dgrant *g = D.grants;
        if (g->inuse) { /* the table may change meanwhile: look again */
            pthread_cond_wait(&D.idle, &D.lock);
            continue;
        }
        D.grants = g->next;
        grant_close_locked(g);
        grant_free(g);
    }
    chans_close_all();
    pthread_mutex_unlock(&D.lock);
}

/* ------------------------------------------------------------ readers -- */
/*
 * A reader: the descriptors of a striped open's forks, for its
 * single-range reads (striped.c: fast_read).  A 4 KiB read that goes
 * through an op -- the pieces placed per subfile, a transfer, its
 * grant pinned and released under D.lock, the result worked out from
 * the fork sizes -- costs about as much again as the pread that moves
 * its bytes (bench/latency); a reader's read is that
 * pread and nothing else that takes a lock.
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
 *     (D.epoch) every reader built before declines until rebuilt;
 *   - its bytes are counted, and added to the grant's at free, so the
 *     server's IO_STATS get them at the fork's release, as direct_xfer's;
 *   - a child after fork() closes its copies (atfork_child): its reads
 *     decline and go the server path, as every child's.
 */
typedef struct gc_dreader {
    struct gc_dreader *next; /* D.readers */
    uint64_t epoch;          /* D.epoch when built */
    uint64_t checked_ns;     /* when the channels were last looked at
                              * (g_coarse_ns: GC_DIRECT_CHECK_NS then
                              * means "at the first tick after") */
    int inuse;               /* reads in flight (gc_direct_reader_pin) */
    size_t n;
    struct dread_fork {
        int server;
        uint64_t fkid;
        int fd; /* -1: none (not granted, checksummed) */
        uint64_t base;
        uint64_t bytes; /* read through it, not yet added to the grant */
    } f[];
} gc_dreader;

/* Larger reads take the op path (a pread may return less than asked for
 * over 2 GiB). */
#define GC_DREAD_MAX (1ull << 30)

gc_dreader *gc_direct_reader(const int *servers, const uint64_t *fkids,
                             size_t n)
{
    gc_dreader *r = calloc(1, sizeof(*r) + n * sizeof(r->f[0]));
    if (!r)
        return NULL;
    size_t held = 0;
    pthread_mutex_lock(&D.lock);
    r->epoch = D.epoch;
    r->checked_ns = g_coarse_ns();
    r->n = n;
    for (size_t i = 0; i < n; i++) {
        dgrant *g =
            servers[i] >= 0 ? grant_find_locked(servers[i], fkids[i]) : NULL;
        int fd = !g || g->cs ? -1 : g->wfd >= 0 ? g->wfd : g->rfd;
        r->f[i] = (struct dread_fork){
            .server = servers[i],
            .fkid = fkids[i],
            .fd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1,
            .base = g ? g->base : 0};
        held += r->f[i].fd >= 0;
    }
    if (held) {
        r->next = D.readers;
        D.readers = r;
    }
    pthread_mutex_unlock(&D.lock);
    if (!held) {
        free(r);
        return NULL;
    }
    return r;
}

/* The channels of r's servers looked at (chan_check_locked): is r still
 * good? */
static bool reader_check(gc_dreader *r, uint64_t now)
{
    pthread_mutex_lock(&D.lock);
    uint64_t precise = g_now_ns(); /* the channels' clock */
    for (size_t i = 0; i < r->n; i++)
        if (r->f[i].fd >= 0)
            chan_check_locked(r->f[i].server, precise);
    __atomic_store_n(&r->checked_ns, now, __ATOMIC_RELAXED);
    bool ok = D.epoch == r->epoch;
    pthread_mutex_unlock(&D.lock);
    return ok;
}

int gc_direct_reader_read(gc_dreader *r, size_t i, uint64_t off, void *buf,
                          uint64_t len)
{
    const struct dread_fork *f = &r->f[i];
    if (f->fd < 0 || len > GC_DREAD_MAX || off > GP_MAX_OFFSET ||
        __atomic_load_n(&D.epoch, __ATOMIC_ACQUIRE) != r->epoch)
        return GC_DECLINE;
    uint64_t now = g_coarse_ns();
    if (now - __atomic_load_n(&r->checked_ns, __ATOMIC_RELAXED) >=
            GC_DIRECT_CHECK_NS &&
        !reader_check(r, now))
        return GC_DECLINE;
    ssize_t got = pread(f->fd, buf, (size_t)len, (off_t)(f->base + off));
    return got == (ssize_t)len ? 0 : GC_DECLINE;
}

void gc_direct_reader_count(gc_dreader *r, size_t i, uint64_t bytes)
{
    __atomic_add_fetch(&r->f[i].bytes, bytes, __ATOMIC_RELAXED);
}

void gc_direct_reader_pin(gc_dreader *r)
{
    __atomic_add_fetch(&r->inuse, 1, __ATOMIC_ACQUIRE);
}

void gc_direct_reader_unpin(gc_dreader *r)
{
    __atomic_sub_fetch(&r->inuse, 1, __ATOMIC_RELEASE);
}

bool gc_direct_reader_whole(const gc_dreader *r)
{
    if (__atomic_load_n(&D.epoch, __ATOMIC_ACQUIRE) != r->epoch)
        return false;
    for (size_t i = 0; i < r->n; i++)
        if (r->f[i].fd < 0)
            return false;
    return true;
}

/* Its descriptors closed, its bytes dropped (D.lock held, or the only
 * thread: a child after fork). */
static void readers_forget(gc_dreader *r)
{
    for (size_t i = 0; i < r->n; i++) {
        if (r->f[i].fd >= 0)
            close(r->f[i].fd);
        r->f[i].fd = -1;
        r->f[i].bytes = 0;
    }
}

static void readers_forget_all(void)
{
    for (gc_dreader *r = D.readers; r; r = r->next) {
        readers_forget(r);
        r->inuse = 0; /* the threads that had it pinned are not here */
    }
}

void gc_direct_reader_free(gc_dreader *r)
{
    if (!r)
        return;
    /* unpinned by now, but for a read in flight on another thread (whose
     * pread ends in microseconds) */
    while (__atomic_load_n(&r->inuse, __ATOMIC_ACQUIRE))
        sched_yield();
    pthread_mutex_lock(&D.lock);
    gc_dreader **pp = &D.readers;
    while (*pp && *pp != r)
        pp = &(*pp)->next;
    if (*pp)
        *pp = r->next;
    for (size_t i = 0; i < r->n; i++) {
        dgrant *g = r->f[i].bytes
                        ? grant_find_locked(r->f[i].server, r->f[i].fkid)
                        : NULL;
        if (g)
            g->read += r->f[i].bytes; /* reported at its release */
        r->f[i].bytes = 0;
    }
    readers_forget(r);
    pthread_mutex_unlock(&D.lock);
    free(r);
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
/* What x needs of its fork's grant (G_*), with its bytes and end; -1: no
 * bytes (nothing to do), -2: the server's (declined). */
static int xfer_need(int op, const gc_xfer *x, uint64_t *bytesp, uint64_t *endp)
{
    bool write = op == GFS_WRITE;
    uint64_t bytes = 0, end = 0, start = UINT64_MAX, nonempty = 0;
    if (x->shaped) { /* learnt when the pieces were cut (gc_xfer) */
        bytes = x->bytes;
        end = x->hi;
        start = x->lo;
        nonempty = x->n;
    }
    for (size_t i = 0; !x->shaped && i < x->n; i++)
        if (x->pieces[i].len) {
            bytes += x->pieces[i].len;
            nonempty++;
            if (gx_end(&x->pieces[i]) > end)
                end = gx_end(&x->pieces[i]);
            if (x->pieces[i].off < start)
                start = x->pieces[i].off;
        }
    *bytesp = bytes;
    *endp = end;
    if (!bytes)
        return -1;
    /* small pieces: sieved under locks, or else the server's (the whole
     * transfer takes one path, so its pieces land in list order); a
     * checksummed fork's always the server's, which never sieves them
     * (servers/direct.c, rule 7) */
    bool sieve = write && bytes / nonempty < write_min();
    if (sieve &&
        (x->csum || !sieve_on() || (end - start) / GC_SIEVE_SPARSE > bytes))
        return -2;
    return sieve ? G_SIEVE : write ? G_WRITE : G_READ;
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
    pthread_once(&atfork_once, atfork_register);
    pthread_mutex_lock(&D.lock);
    for (size_t i = 0; i < nx && na < GC_PREPARE_MAX; i++) {
        uint64_t bytes, end;
        int need = cs[i] && gc_conn_owned(cs[i]) && !x[i].csum
                       ? xfer_need(op, &x[i], &bytes, &end)
                       : -1;
        int server, rc;
        const char *host, *port;
        if (need < 0)
            continue;
        gc_conn_address(cs[i], &server, &host, &port);
        bool asking = false; /* one request per channel at a time */
        for (size_t k = 0; k < na; k++)
            asking = asking || ask[k].server == server;
        dchan *ch = asking ? NULL : chan_get_locked(cs[i], &rc);
        if (!ch || grant_have_locked(grant_find_locked(server, x[i].fkid), need,
                                     false) != 0)
            continue;
        uint64_t id = grant_ask(ch, x[i].fkid, need, false, 0);
        if (id)
            ask[na++] = (struct dask){server, need, x[i].fkid, id};
    }
    for (size_t k = 0; k < na; k++) { /* failures: xfer asks again */
        dgrant *g;
        grant_take_locked(&D.chan[ask[k].server], ask[k].id, ask[k].server,
                          ask[k].fkid, ask[k].need, false, &g);
    }
    pthread_mutex_unlock(&D.lock);
}

static int direct_xfer(gc_conn *c, int op, gc_xfer *x)
{
    if (!gc_conn_owned(c)) /* a child after fork(): not our grants */
        return GC_DECLINE;
    bool write = op == GFS_WRITE;
    uint64_t bytes, end;
    int need = xfer_need(op, x, &bytes, &end);
    if (need == -1) /* as the chunk path: no request at all */
        return 0;
    if (need == -2)
        return GC_DECLINE;
    dgrant *g = NULL;
    int fd = -1;
    int rc = grant_get(c, x->fkid, need, x->csum, &g, &fd);
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
    bool ordered = x->shaped && x->ordered; /* sorted and disjoint */
    if (!ordered && !gx_sorted(e, n)) {
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
    uint64_t size = end; /* at least; only reads need it */
    bool eof = !write;
    uint64_t bad;
    if (!rc && g->cs &&
        (g->base ||
         (write && !ordered && (!gx_sorted(e, n) || !gx_disjoint(e, n))))) {
        rc = GC_DECLINE; /* a layout or an overlap csfile.h does not take */
    } else if (!rc && g->cs) { /* keeping the CRCs (csfile.h) */
        pthread_mutex_lock(&g->xlock);
        rc = write ? gp_cs_write(fd, g->cfd, e, n, &bad,
                                 crash_stage() > 0 ? crash_point : NULL)
                   : gp_cs_read(fd, g->cfd, e, n, &bad);
        pthread_mutex_unlock(&g->xlock);
    } else if (!rc && write && g->locked) {
        pthread_mutex_lock(&g->xlock);
        rc = gx_fd_write_locked(fd, g->base, e, n, true);
        pthread_mutex_unlock(&g->xlock);
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
    .prepare = direct_prepare,
    .same_host = gc_unix_same_host,
};
