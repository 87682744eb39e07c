/*
 * handler.c -- handler threads, one per connected client (the paper's CP
 * threads): read a frame, dispatch it, send the reply, repeat.
 *
 * Threads: gsrv_handler_main runs on its own thread per connection; the
 * connection's state (opens, receive buffer) is touched by that thread
 * only.  Locks: none of its own; the ops it calls take theirs.  When the
 * connection ends (peer closed, error, server stopping) the thread closes
 * every fork the connection had open, releases its name reservations and
 * byte-range locks, and frees the connection.
 *
 * Framing defences (never a crash, never a partial request applied but
 * the one named below):
 *   - bad magic: the stream cannot be trusted, the connection is closed;
 *   - other protocol version: GFS_EVERSION reply, then close;
 *   - payload longer than the frame limit (twice the data limit plus
 *     GP_FRAME_SLACK, at most GP_MAX_PAYLOAD): GFS_ETOOBIG reply, the
 *     payload is read and discarded, the connection goes on;
 *   - a frame begun but not continued for the frame timeout (--frame-
 *     timeout), or no authenticated request within it: close;
 *   - before a connection has proven the cluster secret (auth.c): every
 *     request but AUTH / AUTH_PROVE gets GFS_EAUTH, a frame over
 *     GP_FRAME_SLACK bytes GFS_EAUTH and a close; a wrong proof: close;
 *   - a connection past --max-conns: GFS_ECONNLIMIT, then close;
 *   - a truncated frame (peer gone mid-frame): close, no reply; a large
 *     IO_WRITE is handled while it arrives (gsrv_rx_*, io_write.c), and
 *     if it is cut off in its data, the windows already written stay;
 *   - non-zero status in a request, malformed payload, trailing bytes:
 *     GFS_EPROTO (or the decoder's code, e.g. -ENAMETOOLONG);
 *   - unknown opcode: -ENOSYS.
 * Every length is checked before anything is allocated.  Requests are
 * handled in arrival order; replies echo the opcode and request id.
 */
#include "gsrv_internal.h"
#include "gsend.h"
#include "gspin.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* receive buffer kept between requests: a 1 MiB write with its
 * descriptor (a fresh buffer per frame costs a mapping, its page faults
 * and an unmap: a tenth of such a request over TCP) */
#define KEEP_BUF ((1u << 20) + GP_FRAME_SLACK)
#define LINGER_MS 1000 /* at most this long draining a closing peer */
#define LINGER_BYTES (4u << 20)
#define SLOW_MS 2000 /* requests slower than this are logged */

/* The dispatch table, from the one list of opcodes. */
static const struct {
    const char *name;
    gsrv_op_fn fn;
} optab[] = {
#define GSRV_X_TAB(name, code, doc) [code] = {#name, gsrv_op_##name},
    GP_OPCODES(GSRV_X_TAB)
#undef GSRV_X_TAB
};

#define NOPS (sizeof(optab) / sizeof(optab[0]))

static const char *optab_name(unsigned op)
{
    return op < NOPS && optab[op].name ? optab[op].name : "?";
}

/* ------------------------------------------------------------ sending ---- */

int gsrv_out_flush(gsrv_out *o)
{
    struct iovec *iov = o->iov;
    int n = o->n;
    if (o->rmem) { /* into the client's memory; nothing for the socket */
        if (n > 0 && !o->err)
            o->err = gsrv_rmem_xfer(o->rmem, true, iov, (size_t)n);
        n = 0;
    }
    if (n > 0 && !o->err)
        o->err = gp_send_all(o->fd, iov, n);
    o->n = 0;
    o->used = 0;
    return o->err;
}

void gsrv_out_add(gsrv_out *o, const void *p, size_t len)
{
    if (o->err || len == 0)
        return;
    if (len < GSRV_OUT_SMALL) {
        uint8_t *dst = o->bounce + o->used;
        bool extend = o->n && (uint8_t *)o->iov[o->n - 1].iov_base +
                                      o->iov[o->n - 1].iov_len ==
                                  dst;
        if (o->used + len > sizeof(o->bounce) ||
            (!extend && o->n == GSRV_IOV_BATCH)) {
            gsrv_out_flush(o);
            dst = o->bounce;
            extend = false;
        }
        memcpy(dst, p, len);
        o->used += len;
        if (extend) {
            o->iov[o->n - 1].iov_len += len;
            return;
        }
        p = dst;
    } else if (o->n == GSRV_IOV_BATCH) {
        gsrv_out_flush(o);
    }
    o->iov[o->n].iov_base = (void *)p;
    o->iov[o->n].iov_len = len;
    o->n++;
}

static gsrv_out *conn_out(gsrv_conn *c)
{
    if (!c->out)
        c->out = malloc(sizeof(*c->out));
    return c->out;
}

/* A local request's read data: straight into the client's memory (CMA)
 * before the reply goes out.  Returns 0 or the copy's error (the reply
 * then says so). */
static int push_data(gsrv_conn *c, gsrv_reply *rep)
{
    gsrv_out *o = conn_out(c);
    if (!o)
        return -ENOMEM;
    if (gsrv_conn_hung_up(c))
        return -ECONNRESET; /* the client gave up: its memory may be gone */
    o->fd = -1;
    o->rmem = rep->rmem;
    o->err = 0;
    o->n = 0;
    o->used = 0;
    rep->send(o, rep->arg);
    int rc = gsrv_out_flush(o);
    o->rmem = NULL;
    rep->send = NULL;
    rep->datalen = 0;
    return rc;
}

/* A small reply with a descriptor (DIRECT_OPEN): header and payload in
 * one sendmsg whose first byte carries fd (SCM_RIGHTS), the rest as
 * usual.  0 or -errno. */
static int send_with_fd(gsrv_conn *c, const uint8_t *hb, const gp_wbuf *w,
                        int fd)
{
    struct iovec iov[2] = {{(void *)hb, GP_HDR_SIZE}, {w->data, w->len}};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof(ctl));
    struct msghdr mh = {.msg_iov = iov,
                        .msg_iovlen = w->len ? 2 : 1,
                        .msg_control = ctl.buf,
                        .msg_controllen = sizeof(ctl.buf)};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    ssize_t r;
    do
        r = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return -errno;
    size_t total = GP_HDR_SIZE + w->len;
    if ((size_t)r == total)
        return 0;
    /* the rest, without the descriptor (already sent with byte 0) */
    struct iovec rest[2];
    int n = 0;
    size_t done = (size_t)r;
    if (done < GP_HDR_SIZE)
        rest[n++] = (struct iovec){(void *)(hb + done), GP_HDR_SIZE - done};
    size_t wdone = done > GP_HDR_SIZE ? done - GP_HDR_SIZE : 0;
    if (w->len > wdone)
        rest[n++] = (struct iovec){w->data + wdone, w->len - wdone};
    return gp_send_all(c->fd, rest, n);
}

/* Send a reply.  Returns 0 or -errno (the connection is then unusable). */
static int send_reply(gsrv_conn *c, const gp_hdr *req, int status,
                      gsrv_reply *rep)
{
    uint8_t hb[GP_HDR_SIZE];
    gp_hdr h = {
        .magic = GP_MAGIC,
        .version = GP_VERSION,
        .opcode = req->opcode,
        .reqid = req->reqid,
        .status = status,
        .length = 0,
    };
    if (status == 0 && rep)
        h.length = (uint32_t)(rep->w.len + rep->datalen);
    gp_hdr_encode(&h, hb);
    if (status == 0 && rep && rep->pass_fd >= 0)
        return send_with_fd(c, hb, &rep->w, rep->pass_fd);

    gsrv_out *o = conn_out(c);
    if (!o)
        return -ENOMEM;
    o->fd = c->fd;
    o->rmem = NULL;
    o->err = 0;
    o->n = 0;
    o->used = 0;
    gsrv_out_add(o, hb, sizeof(hb));
    if (status == 0 && rep) {
        gsrv_out_add(o, rep->w.data, rep->w.len);
        if (rep->send)
            rep->send(o, rep->arg);
    }
    return gsrv_out_flush(o);
}

void gsrv_out_file(gsrv_out *o, int fd, uint64_t off, size_t len, uint64_t end)
{
    static const uint8_t zeros[4096];
    if (o->err || len == 0)
        return;
    if (o->rmem) {
        o->err = -EINVAL;
        return;
    }
    size_t in = off >= end ? 0 : end - off < len ? (size_t)(end - off) : len;
    if (in && gsrv_out_flush(o)) /* what was queued goes first */
        return;
    while (in) {
        off_t p = (off_t)off;
        ssize_t w = sendfile(o->fd, fd, &p, in);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            o->err = -errno;
            return;
        }
        if (w == 0) /* past the file's end */
            break;
        off += (uint64_t)w;
        in -= (size_t)w;
        len -= (size_t)w;
    }
    for (size_t k; len; len -= k) {
        k = len < sizeof(zeros) ? len : sizeof(zeros);
        gsrv_out_add(o, zeros, k);
    }
}

/* ---------------------------------------------------------- receiving ---- */

/* Read exactly n bytes, waiting at most first_ms for the first byte and
 * rest_ms for each later one (-1: forever).  0: done; 1: clean end of
 * stream before the first byte; -ETIMEDOUT when a wait passes; other
 * negative: error or end of stream in the middle. */
static int recv_timed(int fd, void *buf, size_t n, int first_ms, int rest_ms)
{
    uint8_t *p = buf;
    size_t got = 0;
    while (got < n) {
        int ms = got ? rest_ms : first_ms;
        /* with a time limit: take what has arrived, poll only when
         * nothing has (a poll per recv doubles the calls of a large frame) */
        ssize_t r = recv(fd, p + got, n - got, ms >= 0 ? MSG_DONTWAIT : 0);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && ms >= 0) {
            struct pollfd pf = {.fd = fd, .events = POLLIN};
            if (poll(&pf, 1, ms) == 0)
                return -ETIMEDOUT;
            continue;
        }
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            return got == 0 ? 1 : -ECONNRESET;
        got += (size_t)r;
    }
    return 0;
}

/* The frame being received failed (a negative error, or 1: the end of
 * the stream): remembered, so the connection closes without a reply. */
int gsrv_rx_fail(gsrv_conn *c, int rc)
{
    c->rx_err = rc < 0 ? rc : -ECONNRESET;
    if (rc == -ETIMEDOUT)
        gsrv_log(1, "%s: half a frame for %d ms, closing", c->peer,
                 gsrv_g.frame_timeout_ms);
    return c->rx_err;
}

/* The rest of a frame being received: at most the frame timeout per wait;
 * the end of the stream is an error here. */
int gsrv_rx_recv(gsrv_conn *c, void *dst, size_t n)
{
    if (c->rx_err)
        return c->rx_err;
    int rc = recv_timed(c->fd, dst, n, gsrv_g.frame_timeout_ms,
                        gsrv_g.frame_timeout_ms);
    if (rc)
        return gsrv_rx_fail(c, rc);
    c->rx_pos += n;
    return 0;
}

int gsrv_rx_fill(gsrv_conn *c, size_t upto)
{
    if (upto > c->rx_len || c->rx_have != c->rx_pos)
        return -EPROTO; /* a caller's mistake: bytes went elsewhere */
    if (upto <= c->rx_have)
        return 0;
    int rc = gsrv_rx_recv(c, c->buf + c->rx_have, upto - c->rx_have);
    if (!rc)
        c->rx_have = upto;
    return rc;
}

int gsrv_rx_into(gsrv_conn *c, size_t pos, void *dst, size_t n)
{
    if (pos + n > c->rx_len)
        return -EPROTO;
    uint8_t *d = dst;
    if (pos < c->rx_have) { /* arrived with the prefix */
        size_t k = c->rx_have - pos < n ? c->rx_have - pos : n;
        memcpy(d, c->buf + pos, k);
        d += k;
        pos += k;
        n -= k;
    }
    if (n == 0)
        return 0;
    if (pos != c->rx_pos)
        return -EPROTO; /* out of order: a caller's mistake */
    return gsrv_rx_recv(c, d, n);
}

/* Read and drop n bytes. */
static int drain(int fd, uint64_t n)
{
    uint8_t scratch[16384];
    while (n) {
        size_t k = n < sizeof(scratch) ? (size_t)n : sizeof(scratch);
        int rc = recv_timed(fd, scratch, k, gsrv_g.frame_timeout_ms,
                            gsrv_g.frame_timeout_ms);
        if (rc)
            return rc < 0 ? rc : -ECONNRESET;
        n -= k;
    }
    return 0;
}

/* ---------------------------------------------------------- helpers ---- */

bool gsrv_conn_hung_up(const gsrv_conn *c)
{
    struct pollfd p = {.fd = c->fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) <= 0)
        return false;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

static size_t open_pos(const gsrv_conn *c, uint64_t fkid)
{
    size_t lo = 0, hi = c->nopens;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c->opens[mid].fkid < fkid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void gsrv_conn_note_open(gsrv_conn *c, uint64_t fkid, int status)
{
    c->opened[c->nopened++ % GP_OPENED_KEPT] = (struct gsrv_opened){
        .reqid = c->reqid, .fkid = status ? 0 : fkid, .status = status};
}

int gsrv_conn_add_open(gsrv_conn *c, uint64_t fkid)
{
    size_t i = open_pos(c, fkid);
    if (i < c->nopens && c->opens[i].fkid == fkid) {
        if (c->opens[i].count == UINT32_MAX)
            return -EMFILE;
        c->opens[i].count++;
        return 0;
    }
    if (c->nopens >= GSRV_MAX_OPENS_PER_CONN)
        return -EMFILE;
    if (c->nopens == c->capopens) {
        size_t cap = c->capopens ? c->capopens * 2 : 16;
        gsrv_open *p = realloc(c->opens, cap * sizeof(*p));
        if (!p)
            return -ENOMEM;
        c->opens = p;
        c->capopens = cap;
    }
    memmove(&c->opens[i + 1], &c->opens[i],
            (c->nopens - i) * sizeof(*c->opens));
    c->opens[i] = (gsrv_open){.fkid = fkid, .count = 1};
    c->nopens++;
    return 0;
}

int gsrv_conn_drop_open(gsrv_conn *c, uint64_t fkid)
{
    size_t i = open_pos(c, fkid);
    if (i >= c->nopens || c->opens[i].fkid != fkid)
        return GFS_EBADID;
    if (--c->opens[i].count == 0) {
        memmove(&c->opens[i], &c->opens[i + 1],
                (c->nopens - i - 1) * sizeof(*c->opens));
        c->nopens--;
    }
    return 0;
}

/* ------------------------------------------------------------- ops ---- */

int gsrv_do_PING(gsrv_conn *c, const gp_PING_req *m, gp_PING_rep *r,
                 gsrv_call *k)
{
    *r = (gp_PING_rep){.version = GP_VERSION,
                       .data_limit = gsrv_g.data_limit,
                       .pid = (uint64_t)getpid()};
    return 0;
}

int gsrv_do_STATFS(gsrv_conn *c, const gp_STATFS_req *m, gp_STATFS_rep *r,
                   gsrv_call *k)
{
    struct statvfs sv;
    if (fstatvfs(gsrv_g.dfd, &sv) < 0)
        return -errno;
    uint64_t nsub, nforks, used, hits, misses;
    gsrv_sub_stats(&nsub, &nforks, &used);
    gsrv_cache_stats(&hits, &misses);
    *r = (gp_STATFS_rep){.bytes_used = used,
                         .bytes_free = (uint64_t)sv.f_bavail * sv.f_frsize,
                         .bytes_total = (uint64_t)sv.f_blocks * sv.f_frsize,
                         .nrecords = gsrv_ns_count(),
                         .nsubfiles = nsub,
                         .nforks = nforks,
                         .cache_hits = hits,
                         .cache_misses = misses};
    return 0;
}

/* Can the server reach this client's memory?  Copies 8 bytes from src to
 * dst in the client (gproto.h). */
int gsrv_do_CMA_PROBE(gsrv_conn *c, const gp_CMA_PROBE_req *probe,
                      gp_CMA_PROBE_rep *r, gsrv_call *k)
{
    gsrv_rmem m;
    int rc = gsrv_rmem_init(&m, c);
    if (rc)
        return rc;
    uint8_t v[8];
    struct iovec lv = {v, sizeof(v)};
    gsrv_mseg seg = {.addr = probe->src, .size = sizeof(v), .count = 1};
    m.s = &seg;
    m.n = 1;
    m.bytes = sizeof(v);
    rc = gsrv_rmem_xfer(&m, false, &lv, 1);
    if (!rc) {
        seg.addr = probe->dst;
        m.pos = 0;
        rc = gsrv_rmem_xfer(&m, true, &lv, 1);
    }
    free(m.bl); /* m.s is ours: not gsrv_rmem_free */
    free(m.br);
    return rc;
}

/* ------------------------------------------------------------- loop ---- */

/* Handle one request whose payload is in c->buf; returns 0 to go on or a
 * negative value when the connection must end. */
static int handle(gsrv_conn *c, const gp_hdr *h)
{
    gsrv_reply rep;
    memset(&rep, 0, sizeof(rep));
    rep.pass_fd = -1;
    gp_wbuf_init(&rep.w);
    gp_rbuf r;
    gp_rbuf_init(&r, c->buf, h->length);

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    c->reqid = h->reqid;
    int status;
    if (c->over_cap)
        status = GFS_ECONNLIMIT;
    else if (!gsrv_auth_allows(c, h->opcode))
        status = GFS_EAUTH;
    else if (h->status != 0)
        status = GFS_EPROTO;
    else if (h->opcode >= NOPS || !optab[h->opcode].fn)
        status = -ENOSYS;
    else
        status = optab[h->opcode].fn(c, &r, &rep);
    /* a frame the op did not read to its end: the rest, then the reply
     * (after a failed receive: no reply, the connection closes) */
    if (!c->rx_err && gsrv_rx_partial(c))
        gsrv_rx_recv(c, c->buf + c->rx_pos, c->rx_len - c->rx_pos);
    int rc;
    if (c->rx_err) {
        gsrv_log(1, "%s: %s: frame cut off after %zu of %zu bytes: %s", c->peer,
                 optab_name(h->opcode), c->rx_pos, c->rx_len,
                 gsrv_strerror(c->rx_err));
        rc = status = c->rx_err; /* no reply: the connection closes */
    } else {
        /* the metadata this request changed is durable before the reply */
        int durable = gsrv_wal_wait();
        if (status == 0 && durable)
            status = durable;

        if (status == 0 && rep.w.err)
            status = rep.w.err == -E2BIG ? GFS_ETOOBIG : rep.w.err;
        if (status == 0 && rep.rmem && rep.send)
            status = push_data(c, &rep);
        if (status == 0 && rep.w.len + rep.datalen > GP_MAX_PAYLOAD)
            status = GFS_ETOOBIG;
        if (status && gsrv_g.verbose > 1)
            gsrv_log(2, "%s: %s -> %s", c->peer, optab_name(h->opcode),
                     gsrv_strerror(status));
        rc = send_reply(c, h, status, &rep);
    }
    if (rep.cleanup)
        rep.cleanup(rep.arg);
    if (rep.pass_fd >= 0) /* the client has its own copy now (or none) */
        close(rep.pass_fd);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long ms = (long)(t1.tv_sec - t0.tv_sec) * 1000 +
              (t1.tv_nsec - t0.tv_nsec) / 1000000;
    gsrv_log(3, "%s: %s reqid %llu len %u -> %d (%u bytes) %ld ms", c->peer,
             optab_name(h->opcode), (unsigned long long)h->reqid, h->length,
             status, status ? 0u : (unsigned)(rep.w.len + rep.datalen), ms);
    if (ms >= SLOW_MS && h->opcode != GP_OP_LOCK &&
        h->opcode != GP_OP_BLOCK_LOCK)
        gsrv_log(0, "%s: slow request: %s took %ld ms (status %d)", c->peer,
                 optab_name(h->opcode), ms, status);
    gp_wbuf_free(&rep.w);
    if (!rc && (c->over_cap || c->auth_failed))
        rc = -EACCES; /* answered; now close */
    return rc;
}

/* Close politely: send FIN first, then read and drop what the client still
 * sends (briefly).  Closing a socket with unread input makes the kernel
 * send RST, which can destroy a reply -- e.g. GFS_EVERSION -- before the
 * client has read it. */
static void linger_close(int fd)
{
    uint8_t scratch[16384];
    size_t total = 0;
    shutdown(fd, SHUT_WR);
    for (int rounds = 0; rounds < 10 && total < LINGER_BYTES; rounds++) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, LINGER_MS / 10) <= 0)
            break;
        ssize_t r = recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT);
        if (r <= 0 && !(r < 0 && errno == EINTR))
            break;
        if (r > 0)
            total += (size_t)r;
    }
}

static void conn_end(gsrv_conn *c)
{
    for (size_t i = 0; i < c->nopens; i++)
        gsrv_fork_close(c->opens[i].fkid, c->opens[i].count);
    gsrv_ns_drop_conn(c->id);
    gsrv_locks_drop_conn(c->id);
    gsrv_direct_drop_conn(c);
    gsrv_log(1, "%s: disconnected", c->peer);
    gsrv_conn_unregister(c); /* closes the socket */
    if (c->pidfd >= 0)
        close(c->pidfd);
    free(c->opens);
    gsrv_write_splice_drop_conn(c);
    free(c->buf);
    free(c->stage);
    free(c->out);
    free(c);
}

void *gsrv_handler_main(void *arg)
{
    gsrv_conn *c = arg;
    uint8_t hb[GP_HDR_SIZE];

    gsrv_log(1, "%s: connected", c->peer);
    for (;;) {
        /* a same-host client usually sends its next request within
         * microseconds: poll for it briefly unless polling is backed off
         * (common/gspin.h) */
        if (c->local)
            g_spin_readable(c->fd, gsrv_g.spin_us);
        /* between frames a client may idle as long as it likes, once it
         * has authenticated; within a frame it must keep sending */
        int idle_ms = -1;
        if (c->over_cap)
            idle_ms = 1000;
        else if (!gsrv_auth_allows(c, GP_OP_PING))
            idle_ms = gsrv_g.frame_timeout_ms;
        int rc =
            recv_timed(c->fd, hb, sizeof(hb), idle_ms, gsrv_g.frame_timeout_ms);
        if (rc) {
            if (rc == -ETIMEDOUT)
                gsrv_log(1, "%s: %s for %d ms, closing", c->peer,
                         idle_ms >= 0 ? "no authenticated request"
                                      : "half a frame header",
                         gsrv_g.frame_timeout_ms);
            break; /* closed, truncated header, or stalled */
        }
        gp_hdr h;
        gp_hdr_decode(hb, &h);
        if (h.magic != GP_MAGIC) {
            gsrv_log(1, "%s: bad magic, closing", c->peer);
            break;
        }
        if (h.version != GP_VERSION) {
            gsrv_log(1, "%s: protocol version %u, closing", c->peer, h.version);
            send_reply(c, &h, GFS_EVERSION, NULL);
            break;
        }
        if (h.length > GP_FRAME_SLACK && !gsrv_auth_allows(c, GP_OP_PING)) {
            /* nobody we know: no large buffers, no draining */
            send_reply(c, &h, GFS_EAUTH, NULL);
            break;
        }
        if (h.length > GP_MAX_PAYLOAD || h.length > gsrv_frame_limit()) {
            if (send_reply(c, &h, GFS_ETOOBIG, NULL) || drain(c->fd, h.length))
                break;
            continue;
        }
        if (h.length > c->bufcap) {
            free(c->buf);
            c->bufcap = 0;
            c->buf = malloc(h.length);
            if (!c->buf) {
                if (send_reply(c, &h, -ENOMEM, NULL) || drain(c->fd, h.length))
                    break;
                continue;
            }
            c->bufcap = h.length;
        }
        /* a large write is handled from its first bytes (gsrv_rx_*) */
        size_t now = h.length;
        if (h.opcode == GP_OP_IO_WRITE && h.status == 0 &&
            h.length >= GSRV_RX_STREAM_MIN && !c->over_cap &&
            gsrv_auth_allows(c, h.opcode))
            now = GSRV_RX_PREFIX;
        c->rx_len = h.length;
        c->rx_pos = c->rx_have = 0;
        c->rx_err = 0;
        if (gsrv_rx_fill(c, now))
            break; /* truncated or stalled payload */
        if (c->holds_locks)
            gsrv_locks_renew(c->id); /* any request is a sign of life */
        if (handle(c, &h))
            break;
        if (c->bufcap > KEEP_BUF) {
            free(c->buf);
            c->buf = NULL;
            c->bufcap = 0;
        }
    }
    linger_close(c->fd);
    conn_end(c);
    return NULL;
}
