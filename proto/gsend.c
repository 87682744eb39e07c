/*
 * gsend.c -- the one "write all of it" loop (see gsend.h).
 *
 * Threads: reentrant; no state, no locks.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "gsend.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

/* Drop the first k bytes of iov[0..*cnt): whole entries (also empty ones)
 * leave with their length set to 0, the first partly sent one is
 * advanced. */
static struct iovec *consume(struct iovec *iov, int *cnt, size_t k)
{
    while (*cnt > 0 && k >= iov->iov_len) {
        k -= iov->iov_len;
        iov->iov_len = 0;
        iov++;
        (*cnt)--;
    }
    if (*cnt > 0) {
        iov->iov_base = (char *)iov->iov_base + k;
        iov->iov_len -= k;
    }
    return iov;
}

/* The loop itself: sendmsg on a socket, writev on anything else. */
static int put_all(int fd, struct iovec *iov, int cnt, bool sock)
{
    iov = consume(iov, &cnt, 0); /* leading empty entries */
    while (cnt > 0) {
        int n = cnt > IOV_MAX ? IOV_MAX : cnt;
        ssize_t k;
        if (sock) {
            struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
            k = sendmsg(fd, &m, MSG_NOSIGNAL);
        } else {
            k = writev(fd, iov, n);
        }
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        iov = consume(iov, &cnt, (size_t)k);
    }
    return 0;
}

int gp_send_all(int fd, struct iovec *iov, int cnt)
{
    return put_all(fd, iov, cnt, true);
}

int gp_write_all(int fd, const void *buf, size_t len)
{
    struct iovec v = {.iov_base = (void *)buf, .iov_len = len};
    return put_all(fd, &v, 1, false);
}
