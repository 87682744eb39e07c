/*
 * write_splice.c -- the write strategy from the socket to the file
 * (io_write.c picks it for an IO_WRITE whose frame is still arriving,
 * whose pieces are disjoint and listed in offset order, of
 * STREAM_SPLICE_MIN bytes or more on average, on a fork without
 * checksums that no same-host client holds).
 *
 * Each piece's bytes go from the socket to the fork's file by the kernel
 * (splice through the connection's pipe: one copy, into the page cache,
 * none through the server's memory); the bytes that arrived with the
 * frame's prefix are written from the receive buffer.  The cache blocks
 * that held any of those bytes are taken out of the cache first
 * (gsrv_cache_forget), so none keeps older bytes.  A file error (e.g.
 * -ENOSPC) still takes the piece's bytes off the socket, so that the
 * connection stays usable and the error is answered; a receive error
 * closes the connection (handler.c).  The dispatcher rolls the file back
 * after either (io_write.c).
 *
 * Threads: handler threads; the fork's rwlock held exclusively.  The pipe
 * is the connection's (made at its first use, closed with it).
 */
#include "io_internal.h"
#include "fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define RX_PIPE_BYTES (1 << 20) /* the connection's pipe, when allowed */

/* Write n bytes at off (fdio.h); 0 or -errno. */
static int pwrite_all(int fd, const uint8_t *p, size_t n, uint64_t off)
{
    gp_ext e = {.off = off, .len = n, .mem = (char *)p};
    return g_fd_write(fd, 0, &e, 1);
}

/* The connection's pipe for rx_to_file, made at its first use and
 * widened to the largest size allowed; false when there can be none. */
static bool rx_pipe(gsrv_conn *c)
{
    if (c->rx_piped == 0) {
        c->rx_piped = -1;
        if (pipe2(c->rx_pipe, O_CLOEXEC) == 0) {
            (void)fcntl(c->rx_pipe[1], F_SETPIPE_SZ, RX_PIPE_BYTES);
            int sz = fcntl(c->rx_pipe[1], F_GETPIPE_SZ);
            c->rx_pipe_sz = sz > 0 ? (size_t)sz : 65536;
            c->rx_piped = 1;
        }
    }
    return c->rx_piped > 0;
}

/* Bytes waiting on the socket, after waiting at most the frame timeout
 * for one: > 0, or a negative error (the peer gone: -ECONNRESET). */
static ssize_t rx_wait(gsrv_conn *c)
{
    for (;;) {
        struct pollfd pf = {.fd = c->fd, .events = POLLIN};
        int k = poll(&pf, 1, gsrv_g.frame_timeout_ms);
        if (k < 0 && errno == EINTR)
            continue;
        if (k == 0)
            return -ETIMEDOUT;
        int avail = 0;
        if (k < 0 || ioctl(c->fd, FIONREAD, &avail) < 0)
            return -errno;
        return avail > 0 ? avail : -ECONNRESET; /* readable, empty: closed */
    }
}

/* The frame's bytes [pos, pos + n) into file fd at offset off, moved by
 * the kernel (splice through a pipe: the socket's pages are not copied
 * into the server's memory, only into the file's page cache).  0, or a
 * negative error: a receive error (c->rx_err set) or the file's (e.g.
 * -ENOSPC; the bytes are still taken off the socket). */
static int rx_to_file(gsrv_conn *c, size_t pos, int fd, uint64_t off, size_t n)
{
    if (pos + n > c->rx_len)
        return -EPROTO;
    int ferr = 0;           /* the file's first error; the bytes still leave */
    if (pos < c->rx_have) { /* arrived with the prefix */
        size_t k = c->rx_have - pos < n ? c->rx_have - pos : n;
        ferr = pwrite_all(fd, c->buf + pos, k, off);
        pos += k;
        off += k;
        n -= k;
    }
    if (n && pos != c->rx_pos)
        return -EPROTO;     /* out of order: a caller's mistake */
    if (n && !rx_pipe(c)) { /* no pipe: through the buffer */
        int rc = gsrv_rx_recv(c, c->buf + pos, n);
        if (rc)
            return rc;
        return ferr ? ferr : pwrite_all(fd, c->buf + pos, n, off);
    }
    while (n) {
        if (c->rx_err)
            return c->rx_err;
        ssize_t avail = rx_wait(c);
        if (avail < 0)
            return gsrv_rx_fail(c, (int)avail);
        size_t want = n < (size_t)avail ? n : (size_t)avail;
        if (want > c->rx_pipe_sz)
            want = c->rx_pipe_sz;
        /* no more than has arrived: the splice cannot block */
        ssize_t got =
            splice(c->fd, NULL, c->rx_pipe[1], NULL, want, SPLICE_F_MOVE);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return gsrv_rx_fail(c, got < 0 ? -errno : 1);
        c->rx_pos += (size_t)got;
        size_t left = (size_t)got;
        while (left && !ferr) {
            loff_t o = (loff_t)off;
            ssize_t w =
                splice(c->rx_pipe[0], NULL, fd, &o, left, SPLICE_F_MOVE);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                ferr = w < 0 ? -errno : -EIO;
                break;
            }
            off += (uint64_t)w;
            left -= (size_t)w;
        }
        if (left) { /* the file failed: empty the pipe (the bytes' own
                     * place in buf is free) */
            for (size_t k = 0; k < left;) {
                ssize_t r = read(c->rx_pipe[0], c->buf + pos + k, left - k);
                if (r < 0 && errno == EINTR)
                    continue;
                if (r <= 0)
                    return gsrv_rx_fail(c, -EIO); /* cannot go on */
                k += (size_t)r;
            }
        }
        pos += (size_t)got;
        n -= (size_t)got;
    }
    return ferr;
}

int gsrv_write_splice(gsrv_conn *c, io_req *q)
{
    int rc = 0;
    for (size_t i = 0; i < q->n && !rc; i++) {
        gsrv_cache_forget(q->f->fkid, q->it[i].off, gp_end(&q->it[i]));
        rc = rx_to_file(c, q->dpos + q->it[i].src, q->f->fd, q->it[i].off,
                        q->it[i].len);
    }
    return rc;
}

void gsrv_write_splice_drop_conn(gsrv_conn *c)
{
    if (c->rx_piped > 0) {
        close(c->rx_pipe[0]);
        close(c->rx_pipe[1]);
    }
}
