/*
 * frame.c -- requests and replies on a connection: a frame per request
 * (gp_hdr, gproto.h), replies matched to their requests by id, and the
 * two reply engines.  Below both conn.c and the transports: a transport's
 * io_submit sends through gc_submit, and its start / progress ops are one
 * of the engines here.
 *
 * Threads and locks
 *   - Any application thread may call gc_submit / gc_wait.  Sending a
 *     frame holds c->send_lock for the whole frame (frames never
 *     interleave); several requests may be outstanding on one connection.
 *   - Replies are read by one of two engines, the transport's choice:
 *     a reader thread per connection that receives reply frames, finds
 *     the waiting gc_req by request id and scatters read data straight
 *     into the user's iovecs (holding c->lock only to look up and to
 *     complete a request, never while blocked in recv); or no thread: a
 *     waiter in gc_wait (or gc_test) reads the frames itself, one at a
 *     time (c->reading), completing whichever request each frame answers
 *     (leader/follower), which saves a thread wake-up per request.
 *   - Lock order: c->send_lock before c->lock.
 *
 * Failure model
 *   - A request fails with GFS_ETIMEDOUT when the connection shows no
 *     progress (no byte received) for the timeout while it waits, and with
 *     GFS_ESERVERDOWN when the connection breaks.  Either way the socket is
 *     shut down so the reader releases every pending request; the next
 *     request reconnects (gc_submit: conn_connect.c, re-registering the
 *     client's open forks on that server), so a restarted server is used
 *     again transparently.
 */
#include "internal.h"
#include "gsend.h"
#include "gspin.h"
#include "conn_internal.h"

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The stream failed: reconnect at the next use (c->lock held).  What was
 * posted on it is nobody's to wait for: the server drops what the
 * connection held. */
void gc_cn_mark_broken_locked(gc_conn *c)
{
    c->broken = true;
    c->posted = 0;
    gc_cn_set_ready(c, 0);
}

/* ------------------------------------------------------- raw socket I/O -- */

/* Full send of an iovec array (modified in place).  MSG_NOSIGNAL: a dead
 * peer gives EPIPE, not SIGPIPE. */
int gc_cn_send_all(int fd, struct iovec *iov, int cnt)
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
        __atomic_store_n(&c->last_rx_ns, g_now_ns(), __ATOMIC_RELAXED);
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

int gc_cn_recv_all(gc_conn *c, void *buf, size_t n)
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
        int rc = gc_cn_recv_all(c, tmp, k);
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
        int rc = gc_cn_recv_all(c, r->prefix, r->prefix_len);
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
        int rc = gc_cn_recv_all(c, r->reply, h->length);
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
    int err = gc_cn_recv_all(c, hb, sizeof(hb));
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
    else if (c->posted) /* a posted request's reply (replies come in
                         * order; a stray one is discarded all the same) */
        c->posted--;
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
void gc_cn_fail_pending_locked(gc_conn *c, int err)
{
    gc_cn_mark_broken_locked(c);
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
    gc_cn_fail_pending_locked(c, err);
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* A waiter's turn at reading (the waiter engine): wait up to wait_ms
 * for a frame and read it.  Called with c->lock held and c->reading false;
 * returns with c->lock held. */
static void read_turn(gc_conn *c, int wait_ms)
{
    c->reading = true;
    int fd = c->fd;
    pthread_mutex_unlock(&c->lock);
    struct pollfd p = {fd, POLLIN, 0};
    int k = 0;
    /* Poll briefly before sleeping, unless polling is backed off
     * (common/gspin.h: the policy, and when it backs off). */
    if (wait_ms > 0)
        k = g_spin_readable(fd, (unsigned)gc_spin_us());
    if (k == 0)
        k = poll(&p, 1, wait_ms);
    int err = 0;
    if (k > 0)
        err = read_frame(c);
    pthread_mutex_lock(&c->lock);
    c->reading = false;
    if (err)
        gc_cn_fail_pending_locked(c, err);
    pthread_cond_broadcast(&c->cv); /* the next waiter may read */
}

/* Wait on c->cv for up to wait_ns.  c->lock held. */
static void cv_wait(gc_conn *c, uint64_t wait_ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t t = (uint64_t)ts.tv_nsec + wait_ns;
    ts.tv_sec += (time_t)(t / 1000000000ull);
    ts.tv_nsec = (long)(t % 1000000000ull);
    pthread_cond_timedwait(&c->cv, &c->lock, &ts);
}

int gc_replies_reader_start(gc_conn *c)
{
    if (pthread_create(&c->reader, NULL, reader_main, c) != 0)
        return -ENOMEM;
    c->reader_live = true;
    return 0;
}

void gc_replies_reader_progress(gc_conn *c, uint64_t wait_ns)
{
    if (wait_ns) /* the reader completes it and broadcasts */
        cv_wait(c, wait_ns);
}

int gc_replies_waiter_start(gc_conn *c)
{
    /* a reading waiter must not block forever mid-frame */
    struct timeval tv = {gc_timeout_ms() / 1000,
                         (gc_timeout_ms() % 1000) * 1000};
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return 0;
}

void gc_replies_waiter_progress(gc_conn *c, uint64_t wait_ns)
{
    if (c->reading) { /* another waiter reads: it broadcasts each frame */
        if (wait_ns)
            cv_wait(c, wait_ns);
    } else if (c->broken || c->fd < 0) {
        gc_cn_fail_pending_locked(c, GFS_ESERVERDOWN); /* nobody else will */
    } else {
        read_turn(c, wait_ns ? (int)(wait_ns / 1000000) + 1 : 0);
    }
}

/* Let replies progress for a waiter (c->lock held). */
static void progress(gc_conn *c, uint64_t wait_ns)
{
    if (c->ops)
        c->ops->progress(c, wait_ns);
    else if (wait_ns)
        cv_wait(c, wait_ns);
}

/* ------------------------------------------------------- submit / wait -- */

int gc_submit(gc_conn *c, uint16_t opcode, const void *desc, size_t desclen,
              const struct iovec *data, int ndata, size_t datalen, gc_req *req)
{
    gc_req posted; /* req NULL: a request nobody waits for, never pending */
    bool post = !req;
    if (post)
        req = &posted;
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
    int rc = gc_cn_ensure_connected(c);
    if (rc)
        goto out_unlock;
    pthread_mutex_lock(&c->lock);
    req->reqid = c->next_reqid++;
    req->state = GC_REQ_PENDING;
    req->submit_ns = g_now_ns();
    if (!post) { /* a posted request's reply finds no request: discarded */
        req->next = c->pending;
        c->pending = req;
    } else {
        c->posted++;
    }
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
    rc = gc_cn_send_all(fd, v, n);
    if (rc) {
        /* The frame may be half sent: the stream is unusable. */
        pthread_mutex_lock(&c->lock);
        gc_cn_mark_broken_locked(c);
        shutdown(fd, SHUT_RDWR);
        pthread_mutex_unlock(&c->lock);
    }
out_unlock:
    pthread_mutex_unlock(&c->send_lock);
    if (v != stackv)
        free(v);
    if (rc && !post) {
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
    if (req->state != GC_REQ_DONE && !c->broken && c->fd >= 0)
        progress(c, 0); /* without waiting */
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
        uint64_t now = g_now_ns();
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
            gc_cn_mark_broken_locked(c);
            c->silent_ns = now;
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
        progress(c, wait_ns);
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
