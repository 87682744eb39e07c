/*
 * fdio.c -- pieces to and from a file descriptor (see fdio.h).
 *
 * Threads: any.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif
#define FD_IOV 256 /* iovecs per system call (on the stack) */

/* Drop `done` bytes from the front of iov[0..*cnt). */
static struct iovec *iov_advance(struct iovec *iov, int *cnt, size_t done)
{
    while (*cnt > 0 && done >= iov->iov_len) {
        done -= iov->iov_len;
        iov++;
        (*cnt)--;
    }
    if (*cnt > 0) {
        iov->iov_base = (char *)iov->iov_base + done;
        iov->iov_len -= done;
    }
    return iov;
}

/* preadv until every byte is in or the file ends; the bytes past its end
 * are zeroed.  1 when the file ended, 0, or -errno. */
static int preadv_full(int fd, struct iovec *iov, int cnt, uint64_t off)
{
    while (cnt > 0) {
        ssize_t r = preadv(fd, iov, cnt, (off_t)off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0) {
            for (int i = 0; i < cnt; i++)
                memset(iov[i].iov_base, 0, iov[i].iov_len);
            return 1;
        }
        off += (uint64_t)r;
        iov = iov_advance(iov, &cnt, (size_t)r);
    }
    return 0;
}

static int pwritev_full(int fd, struct iovec *iov, int cnt, uint64_t off)
{
    while (cnt > 0) {
        ssize_t r = pwritev(fd, iov, cnt, (off_t)off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        off += (uint64_t)r;
        iov = iov_advance(iov, &cnt, (size_t)r);
    }
    return 0;
}

/* Append [p, p + len) to iov[0..*cnt), merging with the last one when
 * memory-contiguous; false when the array is full. */
static bool iov_push(struct iovec *iov, int *cnt, char *p, size_t len)
{
    if (*cnt && (char *)iov[*cnt - 1].iov_base + iov[*cnt - 1].iov_len == p) {
        iov[*cnt - 1].iov_len += len;
        return true;
    }
    if (*cnt == FD_IOV)
        return false;
    iov[(*cnt)++] = (struct iovec){p, len};
    return true;
}

int g_fd_write(int fd, uint64_t base, const gp_ext *e, size_t n)
{
    struct iovec iov[FD_IOV];
    size_t i = 0;
    while (i < n) {
        if (e[i].len == 0) {
            i++;
            continue;
        }
        int cnt = 0;
        uint64_t start = e[i].off, end = start;
        while (i < n && (e[i].len == 0 ||
                         (e[i].off == end &&
                          iov_push(iov, &cnt, e[i].mem, (size_t)e[i].len)))) {
            end += e[i].len;
            i++;
        }
        int rc = pwritev_full(fd, iov, cnt, base + start);
        if (rc)
            return rc;
    }
    return 0;
}

/* The sieving buffer, kept per thread: a fresh 4 MiB allocation is a new
 * mapping whose page faults cost a third of reading into it. */
static __thread char *t_bounce;
static __thread size_t t_bcap;

static void bounce_release(void *p)
{
    free(p);
}

static pthread_key_t bounce_key;
static pthread_once_t bounce_once = PTHREAD_ONCE_INIT;

static void bounce_key_make(void)
{
    pthread_key_create(&bounce_key, bounce_release);
}

/* At least len bytes of this thread's buffer, or NULL. */
static char *bounce_get(size_t len)
{
    if (len <= t_bcap)
        return t_bounce;
    pthread_once(&bounce_once, bounce_key_make);
    free(t_bounce);
    t_bcap = len < G_FD_SIEVE_MAX ? G_FD_SIEVE_MAX : len;
    t_bounce = malloc(t_bcap);
    if (!t_bounce)
        t_bcap = 0;
    pthread_setspecific(bounce_key, t_bounce); /* freed at thread exit */
    return t_bounce;
}

/* memcpy, without a call for pieces of up to 16 bytes (fixed-size copies
 * the compiler inlines, overlapping for lengths between): millions of
 * 16-byte pieces are a strided read's common case. */
static inline void copy_out(char *to, const char *from, size_t len)
{
    if (len > 16) {
        memcpy(to, from, len);
    } else if (len >= 8) {
        memcpy(to, from, 8);
        memcpy(to + len - 8, from + len - 8, 8);
    } else if (len >= 4) {
        memcpy(to, from, 4);
        memcpy(to + len - 4, from + len - 4, 4);
    } else {
        for (size_t b = 0; b < len; b++)
            to[b] = from[b];
    }
}

int g_fd_read(int fd, uint64_t base, const gp_ext *e, size_t n, bool *eof)
{
    struct iovec iov[FD_IOV];
    int rc = 0;
    size_t i = 0;
    while (i < n && rc >= 0) {
        if (e[i].len == 0) {
            i++;
            continue;
        }
        /* a cluster [i, k): pieces close enough to read as one span */
        uint64_t start = e[i].off, end = gp_end(&e[i]);
        bool adjacent = true; /* every piece starts where the last ended */
        size_t k = i + 1;
        /* a gap is bridged when it and the piece after it fit in
         * G_FD_SIEVE_GAP (fdio.h: the copy it costs against a system
         * call) */
        while (k < n && (e[k].off <= end ||
                         e[k].off - end + e[k].len <= G_FD_SIEVE_GAP)) {
            uint64_t ke = gp_end(&e[k]);
            uint64_t ne = ke > end ? ke : end;
            if (ne - start > G_FD_SIEVE_MAX)
                break;
            if (e[k].off != end)
                adjacent = false;
            end = ne;
            k++;
        }
        if (adjacent) {
            /* straight into the pieces' memory */
            size_t j = i;
            while (j < k && rc >= 0) {
                int cnt = 0;
                uint64_t at = e[j].off;
                while (j < k && iov_push(iov, &cnt, e[j].mem, (size_t)e[j].len))
                    j++;
                int r = preadv_full(fd, iov, cnt, base + at);
                if (r > 0 && eof)
                    *eof = true;
                rc = r < 0 ? r : rc;
            }
        } else {
            size_t span = (size_t)(end - start);
            char *bounce = bounce_get(span);
            if (!bounce) {
                rc = -ENOMEM;
                break;
            }
            struct iovec one = {bounce, span};
            int r = preadv_full(fd, &one, 1, base + start);
            if (r < 0) {
                rc = r;
                break;
            }
            if (r > 0 && eof)
                *eof = true;
            for (size_t j = i; j < k; j++)
                copy_out(e[j].mem, bounce + (e[j].off - start),
                         (size_t)e[j].len);
        }
        i = k;
    }
    return rc < 0 ? rc : 0;
}

/* Take (F_WRLCK) or drop (F_UNLCK) an OFD lock on [off, off + len) of
 * fd's open file description, waiting for other descriptions' locks. */
static int ofd_lock(int fd, short type, uint64_t off, uint64_t len)
{
    struct flock fl = {.l_type = type,
                       .l_whence = SEEK_SET,
                       .l_start = (off_t)off,
                       .l_len = (off_t)len};
    while (fcntl(fd, F_OFD_SETLKW, &fl) < 0)
        if (errno != EINTR)
            return -errno;
    return 0;
}

/* pieces [i, k) of e written under the lock already held on [start, end):
 * sieved (the span read, the pieces copied in, the span written) or
 * piece by piece. */
static int write_cluster(int fd, uint64_t base, const gp_ext *e, size_t i,
                         size_t k, uint64_t start, uint64_t end, bool sieve)
{
    if (!sieve)
        return g_fd_write(fd, base, e + i, k - i);
    size_t span = (size_t)(end - start);
    char *bounce = bounce_get(span);
    if (!bounce)
        return g_fd_write(fd, base, e + i, k - i);
    struct iovec one = {bounce, span};
    int r = preadv_full(fd, &one, 1, base + start);
    if (r < 0)
        return r;
    for (size_t j = i; j < k; j++)
        if (e[j].len)
            memcpy(bounce + (e[j].off - start), e[j].mem, (size_t)e[j].len);
    one = (struct iovec){bounce, span};
    return pwritev_full(fd, &one, 1, base + start);
}

int g_fd_write_locked(int fd, uint64_t base, const gp_ext *e, size_t n,
                      bool sieve)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < n; i++)
        if (e[i].len) {
            lo = e[i].off < lo ? e[i].off : lo;
            hi = gp_end(&e[i]) > hi ? gp_end(&e[i]) : hi;
        }
    if (hi == 0)
        return 0;
    if (!gp_sorted(e, n) || !gp_disjoint(e, n)) {
        /* overlapping or out of order: list order, under one lock */
        int rc = ofd_lock(fd, F_WRLCK, base + lo, hi - lo);
        if (rc)
            return rc;
        rc = g_fd_write(fd, base, e, n);
        int u = ofd_lock(fd, F_UNLCK, base + lo, hi - lo);
        return rc ? rc : u;
    }
    size_t i = 0;
    while (i < n) {
        if (e[i].len == 0) {
            i++;
            continue;
        }
        /* a cluster [i, k): pieces close enough to write as one span */
        uint64_t start = e[i].off, end = gp_end(&e[i]);
        size_t k = i + 1, pieces = 1;
        bool adjacent = true;
        while (k < n && e[k].off <= end + G_FD_SIEVE_GAP &&
               gp_end(&e[k]) - start <= G_FD_WSIEVE_MAX) {
            if (e[k].len) {
                adjacent = adjacent && e[k].off == end;
                end = gp_end(&e[k]);
                pieces++;
            }
            k++;
        }
        int rc = ofd_lock(fd, F_WRLCK, base + start, end - start);
        if (rc)
            return rc;
        rc = write_cluster(fd, base, e, i, k, start, end,
                           sieve && !adjacent && pieces >= G_FD_WSIEVE_PIECES);
        int u = ofd_lock(fd, F_UNLCK, base + start, end - start);
        if (rc || u)
            return rc ? rc : u;
        i = k;
    }
    return 0;
}
