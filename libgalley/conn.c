/*
 * conn.c -- one TCP connection per server, framing, and reply dispatch.
 *
 * Threads and locks
 *   - Any application thread may call gc_submit / gc_wait.  Sending a
 *     frame holds c->send_lock for the whole frame (frames never
 *     interleave); several requests may be outstanding on one connection.
 *   - One reader thread per live connection receives reply frames, finds
 *     the waiting gc_req by request id, and scatters read data straight
 *     into the user's iovecs.  It holds c->lock only to look up and to
 *     complete a request, never while blocked in recv.
 *   - On a cross-memory-attach connection replies are small (the data moves
 *     without the socket), and there is no reader thread: a thread waiting
 *     in gc_wait (or polling in gc_test) reads the frames itself, one
 *     waiter at a time (c->reading), completing whichever request each
 *     frame answers (leader/follower).  That saves a thread wake-up per
 *     request, the largest cost of a small request's round trip.
 *   - Lock order: c->send_lock before c->lock; gc_g.lock is never taken
 *     while holding c->lock (reconnect collects fork handles first).
 *
 * Transports (gproto.h)
 *   - GALLEY_TRANSPORT=auto (default): a server whose address is on this
 *     host and network namespace answers on its abstract Unix socket; we
 *     use that, and if CMA_PROBE succeeds, data moves by cross-memory
 *     attach (IO_READV / IO_WRITEV, built in io.c) instead of through the
 *     socket.  Otherwise TCP.  local: the Unix socket or nothing (data by
 *     CMA when allowed, else inline over the socket); tcp: TCP only.
 *   - A child after fork() must not let the server copy into its parent's
 *     memory: CMA is used only by the process that connected.
 *
 * Failure model
 *   - A request fails with GFS_ETIMEDOUT when the connection shows no
 *     progress (no byte received) for the timeout while it waits, and with
 *     GFS_ESERVERDOWN when the connection breaks.  Either way the socket is
 *     shut down so the reader releases every pending request; the next
 *     request reconnects (re-registering the client's open forks on that
 *     server), so a restarted server is used again transparently.
 */
#include "internal.h"
#include "dial.h"
#include "gsend.h"

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

struct gc_conn {
    int server;
    char host[256];
    char port[16];

    pthread_mutex_t send_lock;
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t cv;
    int fd;      /* -1 when not connected */
    bool broken; /* reader hit an error; reconnect on next use */
    bool reader_live;
    pthread_t reader;
    gc_req *pending;
    uint64_t next_reqid;
    uint64_t data_limit;
    uint64_t last_rx_ns;
    bool local;     /* connected over the same-host socket */
    bool cma;       /* ... and the server can reach our memory */
    bool self_read; /* no reader thread: waiters read (see below) */
    bool reading;   /* a waiter is reading a frame right now */
    pid_t owner;    /* the process that connected */
};

static void fail_pending_locked(gc_conn *c, int err);

uint64_t gc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

gc_conn *gc_conn_new(int server, const char *host, const char *port)
{
    gc_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->server = server;
    snprintf(c->host, sizeof(c->host), "%s", host);
    snprintf(c->port, sizeof(c->port), "%s", port);
    pthread_mutex_init(&c->send_lock, NULL);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->fd = -1;
    c->next_reqid = 1;
    return c;
}

/* Stop the reader and close the socket.  Called without c->lock. */
static void conn_shutdown(gc_conn *c)
{
    pthread_mutex_lock(&c->lock);
    bool live = c->reader_live;
    if (c->fd >= 0)
        shutdown(c->fd, SHUT_RDWR);
    while (c->reading) /* a waiter reading the old socket: let it fail */
        pthread_cond_wait(&c->cv, &c->lock);
    pthread_mutex_unlock(&c->lock);
    if (live)
        pthread_join(c->reader, NULL);
    pthread_mutex_lock(&c->lock);
    c->reader_live = false;
    if (c->pending) /* no reader thread failed them (self_read) */
        fail_pending_locked(c, GFS_ESERVERDOWN);
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    pthread_mutex_unlock(&c->lock);
}

void gc_conn_free(gc_conn *c)
{
    if (!c)
        return;
    conn_shutdown(c);
    pthread_mutex_destroy(&c->send_lock);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cv);
    free(c);
}

/* ------------------------------------------------------- raw socket I/O -- */

/* Full send of an iovec array (modified in place).  MSG_NOSIGNAL: a dead
 * peer gives EPIPE, not SIGPIPE. */
static int send_all(int fd, struct iovec *iov, int cnt)
{
    int rc = gp_send_all(fd, iov, cnt);
    if (rc == 0)
        return 0;
    return (rc == -EAGAIN || rc == -EWOULDBLOCK) ? GFS_ETIMEDOUT
                                                 : GFS_ESERVERDOWN;
}

static int recv_all_iov(gc_conn *c, struct iovec *iov, int cnt)
{
    while (cnt > 0) {
        while (cnt > 0 && iov->iov_len == 0) {
            iov++;
            cnt--;
        }
        if (cnt == 0)
            break;
        ssize_t k = readv(c->fd, iov, cnt > IOV_MAX ? IOV_MAX : cnt);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return GFS_ESERVERDOWN;
        __atomic_store_n(&c->last_rx_ns, gc_now_ns(), __ATOMIC_RELAXED);
        while (cnt > 0 && (size_t)k >= iov->iov_len) {
            k -= (ssize_t)iov->iov_len;
            iov++;
            cnt--;
        }
        if (cnt > 0) {
            iov->iov_base = (char *)iov->iov_base + k;
            iov->iov_len -= (size_t)k;
        }
    }
    return 0;
}

static int recv_all(gc_conn *c, void *buf, size_t n)
{
    struct iovec v = {buf, n};
    return recv_all_iov(c, &v, 1);
}

/* Discard n bytes (a reply we cannot place). */
static int recv_discard(gc_conn *c, uint64_t n)
{
    char tmp[65536];
    while (n > 0) {
        size_t k = n > sizeof(tmp) ? sizeof(tmp) : (size_t)n;
        int rc = recv_all(c, tmp, k);
        if (rc)
            return rc;
        n -= k;
    }
    return 0;
}

/* ----------------------------------------------------------- reader ---- */

static gc_req *take_pending(gc_conn *c, uint64_t reqid)
{
    for (gc_req **pp = &c->pending; *pp; pp = &(*pp)->next) {
        if ((*pp)->reqid == reqid) {
            gc_req *r = *pp;
            *pp = r->next;
            r->next = NULL;
            return r;
        }
    }
    return NULL;
}

/* Receive one reply frame's payload into r.  Returns 0 or a connection
 * error (the stream is then unusable). */
static int receive_into(gc_conn *c, const gp_hdr *h, gc_req *r)
{
    if (!r)
        return recv_discard(c, h->length);
    if (h->status == 0 && r->riov) {
        /* data reply: prefix, then exactly rdata bytes into user memory */
        if (h->length != r->prefix_len + r->rdata) {
            int rc = recv_discard(c, h->length);
            r->status = GFS_EPROTO;
            return rc ? rc : GFS_EPROTO;
        }
        int rc = recv_all(c, r->prefix, r->prefix_len);
        if (!rc)
            rc = recv_all_iov(c, r->riov, r->riovcnt);
        return rc;
    }
    if (h->length) {
        r->reply = malloc(h->length);
        if (!r->reply) {
            r->status = -ENOMEM;
            return recv_discard(c, h->length);
        }
        int rc = recv_all(c, r->reply, h->length);
        if (rc)
            return rc;
        r->replylen = h->length;
    }
    return 0;
}

/* Read one reply frame and complete the request it answers.  Called with
 * no lock held, by the reader thread or the reading waiter.  Returns 0 or
 * a connection error (the stream is then unusable). */
static int read_frame(gc_conn *c)
{
    uint8_t hb[GP_HDR_SIZE];
    gp_hdr h;
    int err = recv_all(c, hb, sizeof(hb));
    if (err)
        return err;
    gp_hdr_decode(hb, &h);
    if (h.magic != GP_MAGIC || h.version != GP_VERSION ||
        h.length > GP_MAX_PAYLOAD)
        return GFS_EPROTO;
    pthread_mutex_lock(&c->lock);
    gc_req *r = take_pending(c, h.reqid);
    if (r)
        r->state = GC_REQ_RECEIVING;
    pthread_mutex_unlock(&c->lock);

    if (r && h.opcode != r->opcode) {
        err = GFS_EPROTO;
    } else {
        if (r)
            r->status = h.status;
        err = receive_into(c, &h, r);
    }
    if (r) {
        pthread_mutex_lock(&c->lock);
        if (err && r->status == 0)
            r->status = err;
        r->state = GC_REQ_DONE;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->lock);
    }
    return err;
}

/* The connection is gone: fail everyone still waiting.  c->lock held. */
static void fail_pending_locked(gc_conn *c, int err)
{
    c->broken = true;
    for (gc_req *r = c->pending; r; r = r->next) {
        r->status = err == GFS_EPROTO ? GFS_EPROTO : GFS_ESERVERDOWN;
        r->state = GC_REQ_DONE;
    }
    c->pending = NULL;
    pthread_cond_broadcast(&c->cv);
}

static void *reader_main(void *arg)
{
    gc_conn *c = arg;
    int err;
    while ((err = read_frame(c)) == 0)
        ;
    pthread_mutex_lock(&c->lock);
    fail_pending_locked(c, err);
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* A waiter's turn at reading (self_read connections): wait up to wait_ms
 * for a frame and read it.  Called with c->lock held and c->reading false;
 * returns with c->lock held. */
static void read_turn(gc_conn *c, int wait_ms)
{
    c->reading = true;
    int fd = c->fd;
    pthread_mutex_unlock(&c->lock);
    struct pollfd p = {fd, POLLIN, 0};
    int k = 0;
    if (wait_ms > 0) {
        /* Spin briefly before sleeping: a reply that lands while this
         * thread still runs needs no wake-up of a halted CPU, which costs
         * more than the whole request on a virtual machine.  sched_yield
         * hands the CPU over at once when others want it. */
        uint64_t end = gc_now_ns() + (uint64_t)gc_spin_us() * 1000;
        while ((k = poll(&p, 1, 0)) == 0 && gc_now_ns() < end)
            sched_yield();
    }
    if (k == 0)
        k = poll(&p, 1, wait_ms);
    int err = 0;
    if (k > 0)
        err = read_frame(c);
    pthread_mutex_lock(&c->lock);
    c->reading = false;
    if (err)
        fail_pending_locked(c, err);
    pthread_cond_broadcast(&c->cv); /* the next waiter may read */
}

/* --------------------------------------------------------- connecting -- */

/* One synchronous request on a fresh socket, before the reader runs. */
static int handshake_call(gc_conn *c, uint16_t op, const gp_wbuf *w,
                          uint8_t *out, size_t outmax, uint32_t *outlen)
{
    uint8_t hb[GP_HDR_SIZE];
    gp_hdr h = {GP_MAGIC, GP_VERSION, op, 0, 0, (uint32_t)w->len};
    gp_hdr_encode(&h, hb);
    struct iovec v[2] = {{hb, sizeof(hb)}, {w->data, w->len}};
    int rc = send_all(c->fd, v, w->len ? 2 : 1);
    if (rc)
        return rc;
    struct timeval tv = {gc_timeout_ms() / 1000,
                         (gc_timeout_ms() % 1000) * 1000};
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    rc = recv_all(c, hb, sizeof(hb));
    if (rc)
        return errno == EAGAIN ? GFS_ETIMEDOUT : rc;
    gp_hdr_decode(hb, &h);
    if (h.magic != GP_MAGIC)
        return GFS_EPROTO;
    if (h.version != GP_VERSION)
        return GFS_EVERSION;
    if (h.length > outmax)
        return GFS_EPROTO;
    rc = recv_all(c, out, h.length);
    if (rc)
        return rc;
    *outlen = h.length;
    struct timeval zero = {0, 0};
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &zero, sizeof(zero));
    return h.status;
}

static int auth_call(void *arg, uint16_t op, const gp_wbuf *w, uint8_t *out,
                     size_t outmax, uint32_t *outlen)
{
    return handshake_call(arg, op, w, out, outmax, outlen);
}

/* Connect, check the version, learn the data limit, re-register the
 * client's open forks on this server.  Called with send_lock held and the
 * reader stopped. */
static int connect_locked(gc_conn *c)
{
    int mode = gc_transport();
    int rc = GFS_ESERVERDOWN;
    c->local = c->cma = false;
    if (mode != GFS_TRANSPORT_TCP) {
        rc = gc_dial_local(c->host, c->port, &c->fd);
        c->local = rc == 0;
    }
    if (rc && mode != GFS_TRANSPORT_LOCAL)
        rc = gc_dial_tcp(c->host, c->port, gc_timeout_ms(), &c->fd);
    if (rc)
        return rc;
    c->owner = getpid();
    uint8_t out[64];
    uint32_t outlen = 0;
    gp_wbuf w;
    gp_wbuf_init(&w);
    gp_PING_req_encode(&w, &(gp_PING_req){});
    rc = gc_auth_handshake(auth_call, c); /* the cluster secret (auth.c) */
    if (!rc)
        rc = handshake_call(c, GP_OP_PING, &w, out, sizeof(out), &outlen);
    if (rc)
        goto out_close;
    gp_rbuf r;
    gp_rbuf_init(&r, out, outlen);
    gp_PING_rep ping;
    int bad = gp_PING_rep_decode(&r, &ping);
    if (bad || ping.version != GP_VERSION || ping.data_limit < 4096) {
        rc = bad ? GFS_EPROTO : GFS_EVERSION;
        goto out_close;
    }
    c->data_limit = ping.data_limit;
    if (c->local) {
        /* may the server copy our memory?  (ptrace rules, other user) */
        volatile uint64_t src = 0x47414c4c4559434dull ^ (uint64_t)gc_now_ns();
        volatile uint64_t dst = 0;
        gp_CMA_PROBE_req_encode(
            &w, &(gp_CMA_PROBE_req){.src = (uint64_t)(uintptr_t)&src,
                                    .dst = (uint64_t)(uintptr_t)&dst});
        int k =
            handshake_call(c, GP_OP_CMA_PROBE, &w, out, sizeof(out), &outlen);
        c->cma = k == 0 && dst == src;
        gp_wbuf_free(&w);
        if (k == GFS_ESERVERDOWN || k == GFS_ETIMEDOUT || k == GFS_EPROTO ||
            k == GFS_EVERSION) {
            rc = k;
            goto out_close;
        }
    }

    uint64_t *fk = NULL;
    int nfk = 0;
    rc = gc_open_handles(c->server, &fk, &nfk);
    if (rc)
        goto out_close;
    for (int i = 0; i < nfk; i++) {
        gp_wbuf_free(&w);
        gp_FORK_REOPEN_req_encode(&w, &(gp_FORK_REOPEN_req){.fkid = fk[i]});
        int k =
            handshake_call(c, GP_OP_FORK_REOPEN, &w, out, sizeof(out), &outlen);
        /* a fork deleted meanwhile stays stale; its next use reports it */
        if (k && k != GFS_ESTALE && k != -ENOENT) {
            rc = k;
            break;
        }
    }
    free(fk);
    if (rc)
        goto out_close;
    gp_wbuf_free(&w);

    c->broken = false;
    c->last_rx_ns = gc_now_ns();
    c->self_read = c->cma;
    if (c->self_read) {
        /* a reading waiter must not block forever mid-frame */
        struct timeval tv = {gc_timeout_ms() / 1000,
                             (gc_timeout_ms() % 1000) * 1000};
        setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        return 0;
    }
    if (pthread_create(&c->reader, NULL, reader_main, c) != 0) {
        rc = -ENOMEM;
        goto out_close;
    }
    c->reader_live = true;
    return 0;

out_close:
    gp_wbuf_free(&w);
    close(c->fd);
    c->fd = -1;
    return rc;
}

/* Make sure the connection is up.  Called with send_lock held. */
static int ensure_connected(gc_conn *c)
{
    pthread_mutex_lock(&c->lock);
    bool up = c->fd >= 0 && !c->broken;
    pthread_mutex_unlock(&c->lock);
    if (up)
        return 0;
    conn_shutdown(c);
    return connect_locked(c);
}

int gc_conn_data_limit(gc_conn *c, uint64_t *limit, bool *cma)
{
    pthread_mutex_lock(&c->send_lock);
    int rc = ensure_connected(c);
    if (!rc) {
        *limit = c->data_limit;
        if (cma)
            *cma = c->cma && c->owner == getpid();
    }
    pthread_mutex_unlock(&c->send_lock);
    return rc;
}

int gc_conn_transport(gc_conn *c)
{
    pthread_mutex_lock(&c->send_lock);
    int rc = ensure_connected(c);
    if (!rc)
        rc = c->cma     ? GFS_TRANSPORT_LOCAL_CMA
             : c->local ? GFS_TRANSPORT_LOCAL
                        : GFS_TRANSPORT_TCP;
    pthread_mutex_unlock(&c->send_lock);
    return rc;
}

/* ------------------------------------------------------- submit / wait -- */

int gc_submit(gc_conn *c, uint16_t opcode, const void *desc, size_t desclen,
              const struct iovec *data, int ndata, size_t datalen, gc_req *req)
{
    req->conn = c;
    req->opcode = opcode;
    req->status = 0;
    req->reply = NULL;
    req->replylen = 0;
    req->next = NULL;
    if (desclen + datalen > GP_MAX_PAYLOAD) {
        req->state = GC_REQ_DONE;
        return req->status = GFS_ETOOBIG;
    }
    struct iovec stackv[66];
    struct iovec *v = stackv;
    if (ndata + 2 > (int)(sizeof(stackv) / sizeof(stackv[0]))) {
        v = malloc(sizeof(*v) * (size_t)(ndata + 2));
        if (!v) {
            req->state = GC_REQ_DONE;
            return req->status = -ENOMEM;
        }
    }
    uint8_t hb[GP_HDR_SIZE];

    pthread_mutex_lock(&c->send_lock);
    int rc = ensure_connected(c);
    if (rc)
        goto out_unlock;
    pthread_mutex_lock(&c->lock);
    req->reqid = c->next_reqid++;
    req->state = GC_REQ_PENDING;
    req->submit_ns = gc_now_ns();
    req->next = c->pending;
    c->pending = req;
    int fd = c->fd;
    pthread_mutex_unlock(&c->lock);

    gp_hdr h = {GP_MAGIC,   GP_VERSION, opcode,
                req->reqid, 0,          (uint32_t)(desclen + datalen)};
    gp_hdr_encode(&h, hb);
    int n = 0;
    v[n++] = (struct iovec){hb, sizeof(hb)};
    if (desclen)
        v[n++] = (struct iovec){(void *)desc, desclen};
    for (int i = 0; i < ndata; i++)
        if (data[i].iov_len)
            v[n++] = data[i];
    rc = send_all(fd, v, n);
    if (rc) {
        /* The frame may be half sent: the stream is unusable. */
        pthread_mutex_lock(&c->lock);
        c->broken = true;
        shutdown(fd, SHUT_RDWR);
        pthread_mutex_unlock(&c->lock);
    }
out_unlock:
    pthread_mutex_unlock(&c->send_lock);
    if (v != stackv)
        free(v);
    if (rc) {
        pthread_mutex_lock(&c->lock);
        if (req->state == GC_REQ_PENDING)
            take_pending(c, req->reqid);
        if (req->state != GC_REQ_RECEIVING && req->state != GC_REQ_DONE) {
            req->state = GC_REQ_DONE;
            req->status = rc;
        }
        pthread_mutex_unlock(&c->lock);
        /* the reader may own it; gc_wait sorts that out */
        return rc;
    }
    return 0;
}

bool gc_test(gc_req *req)
{
    gc_conn *c = req->conn;
    if (!c)
        return true;
    pthread_mutex_lock(&c->lock);
    if (req->state != GC_REQ_DONE && c->self_read && !c->reading &&
        !c->broken && c->fd >= 0)
        read_turn(c, 0); /* progress without waiting */
    bool done = req->state == GC_REQ_DONE;
    pthread_mutex_unlock(&c->lock);
    return done;
}

int gc_wait(gc_req *req)
{
    gc_conn *c = req->conn;
    if (!c)
        return req->status;
    uint64_t tmo = (uint64_t)gc_timeout_ms() * 1000000ull;
    pthread_mutex_lock(&c->lock);
    while (req->state != GC_REQ_DONE) {
        uint64_t now = gc_now_ns();
        uint64_t last = __atomic_load_n(&c->last_rx_ns, __ATOMIC_RELAXED);
        if (last < req->submit_ns)
            last = req->submit_ns;
        if (last > now)
            last = now; /* the reader stamped after we read the clock */
        if (now - last >= tmo) {
            /* No progress on this connection for the whole timeout: treat
             * the server as dead.  Shutting the socket down makes the
             * reader fail every other pending request too; a request the
             * reader is filling is completed (with an error) by it. */
            c->broken = true;
            if (c->fd >= 0)
                shutdown(c->fd, SHUT_RDWR);
            if (req->state == GC_REQ_PENDING) {
                take_pending(c, req->reqid);
                req->state = GC_REQ_DONE;
                req->status = GFS_ETIMEDOUT;
                break;
            }
        }
        uint64_t wait_ns = last + tmo > now ? last + tmo - now : 1000000;
        if (wait_ns > 200000000ull)
            wait_ns = 200000000ull;
        if (c->self_read && !c->reading) {
            if (c->broken || c->fd < 0) {
                fail_pending_locked(c, GFS_ESERVERDOWN); /* nobody else will */
                if (req->state != GC_REQ_DONE) {
                    req->state = GC_REQ_DONE;
                    req->status = GFS_ESERVERDOWN;
                }
            } else {
                read_turn(c, (int)(wait_ns / 1000000) + 1);
            }
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t t = (uint64_t)ts.tv_nsec + wait_ns;
        ts.tv_sec += (time_t)(t / 1000000000ull);
        ts.tv_nsec = (long)(t % 1000000000ull);
        pthread_cond_timedwait(&c->cv, &c->lock, &ts);
    }
    pthread_mutex_unlock(&c->lock);
    return req->status;
}

void gc_req_release(gc_req *req)
{
    if (!req)
        return;
    free(req->reply);
    req->reply = NULL;
    req->replylen = 0;
}

int gc_call(gc_conn *c, uint16_t opcode, const gp_wbuf *desc, gc_req *req)
{
    memset(req, 0, sizeof(*req));
    if (desc->err) {
        req->state = GC_REQ_DONE;
        return req->status = desc->err;
    }
    int rc = gc_submit(c, opcode, desc->data, desc->len, NULL, 0, 0, req);
    if (rc && req->state == GC_REQ_DONE)
        return rc;
    return gc_wait(req);
}

/* For the locality layout: is this server on our host?  The same-host
 * socket says so; on TCP (GALLEY_TRANSPORT=tcp), a connection whose two
 * ends have one address does. */
bool gc_conn_same_host(gc_conn *c)
{
    pthread_mutex_lock(&c->send_lock);
    bool same = false;
    if (ensure_connected(c) == 0) {
        struct sockaddr_storage me, peer;
        socklen_t ml = sizeof(me), pl = sizeof(peer);
        same = c->local ||
               (getsockname(c->fd, (struct sockaddr *)&me, &ml) == 0 &&
                getpeername(c->fd, (struct sockaddr *)&peer, &pl) == 0 &&
                gc_same_ip(&me, &peer));
    }
    pthread_mutex_unlock(&c->send_lock);
    return same;
}
