/*
 * dial.c -- a connected socket to one server: its same-host (abstract
 * Unix) socket when it has one here, else TCP with a connect timeout; and
 * whether two socket addresses are one host.  conn.c decides which to try
 * (GALLEY_TRANSPORT) and owns the socket afterwards.
 *
 * Threads: any; no shared state (conn.c calls with the connection's
 * send_lock held).
 */
#include "internal.h"
#include "dial.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Either transport's socket: a send never blocks past the timeout, and
 * buffers big enough for pipelined requests. */
static void set_stream_options(int fd, int timeout_ms)
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    int buf = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
}

int gc_fd_high(int fd)
{
    if (fd < 0 || fd >= GC_FD_HIGH)
        return fd;
    int hi = fcntl(fd, F_DUPFD_CLOEXEC, GC_FD_HIGH);
    if (hi < 0)
        return fd; /* (a low limit on descriptors) */
    close(fd);
    return hi;
}

/* A connected socket to the abstract address gp_local_addr(hostport), or
 * -1. */
static int connect_abstract(const char *hostport)
{
    struct sockaddr_un sa;
    int len = gp_local_addr(&sa, hostport);
    if (len < 0)
        return -1;
    int fd = gc_fd_high(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sa, (socklen_t)len) == 0)
        return fd;
    close(fd);
    return -1;
}

/* Is the address one of this host's (in this network namespace)?  Only
 * then may a wildcard-bound local server stand for it: binding to it
 * succeeds exactly when it is ours. */
static bool is_own_address(const struct addrinfo *a)
{
    struct sockaddr_storage ss;
    if (a->ai_addrlen > sizeof(ss))
        return false;
    memcpy(&ss, a->ai_addr, a->ai_addrlen);
    if (ss.ss_family == AF_INET)
        ((struct sockaddr_in *)&ss)->sin_port = 0;
    else if (ss.ss_family == AF_INET6)
        ((struct sockaddr_in6 *)&ss)->sin6_port = 0;
    else
        return false;
    int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    bool own = bind(fd, (struct sockaddr *)&ss, a->ai_addrlen) == 0;
    close(fd);
    return own;
}

int gc_dial_local(const char *host, const char *port, int *fdp)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    if (getaddrinfo(host, port, &hints, &res) != 0 || !res)
        return GFS_ESERVERDOWN;
    int rc = GFS_ESERVERDOWN;
    for (struct addrinfo *a = res; a && rc; a = a->ai_next) {
        char h[NI_MAXHOST], hp[NI_MAXHOST + 24];
        if (getnameinfo(a->ai_addr, a->ai_addrlen, h, sizeof(h), NULL, 0,
                        NI_NUMERICHOST))
            continue;
        snprintf(hp, sizeof(hp), a->ai_family == AF_INET6 ? "[%s]:%s" : "%s:%s",
                 h, port);
        int fd = connect_abstract(hp);
        if (fd < 0 && is_own_address(a)) {
            /* a server on this host listening on a wildcard address */
            snprintf(hp, sizeof(hp), "*:%s", port);
            fd = connect_abstract(hp);
        }
        if (fd >= 0) {
            *fdp = fd;
            rc = 0;
        }
    }
    freeaddrinfo(res);
    if (!rc)
        set_stream_options(*fdp, gc_timeout_ms());
    return rc;
}

int gc_dial_tcp(const char *host, const char *port, int timeout_ms, int *fdp)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0 || !res)
        return GFS_ESERVERDOWN;
    int fd = -1, rc = GFS_ESERVERDOWN;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = gc_fd_high(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0));
        if (fd < 0)
            continue;
        int fl = fcntl(fd, F_GETFL);
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
        int k = connect(fd, a->ai_addr, a->ai_addrlen);
        if (k < 0 && errno == EINPROGRESS) {
            struct pollfd p = {fd, POLLOUT, 0};
            k = poll(&p, 1, timeout_ms);
            if (k == 1) {
                int e = 0;
                socklen_t el = sizeof(e);
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el);
                k = e ? -1 : 0;
            } else {
                rc = k == 0 ? GFS_ETIMEDOUT : GFS_ESERVERDOWN;
                k = -1;
            }
        }
        if (k == 0) {
            fcntl(fd, F_SETFL, fl);
            rc = 0;
            break;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (rc)
        return rc;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    set_stream_options(fd, timeout_ms);
    *fdp = fd;
    return 0;
}

bool gc_same_ip(const struct sockaddr_storage *a,
                const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family)
        return false;
    if (a->ss_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (a->ss_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)b)->sin6_addr,
                      sizeof(struct in6_addr)) == 0;
    return false;
}
