/*
 * stream.c -- large calls to a server on another host beside a plain TCP
 * stream between the same two hosts, in one run.
 *
 *   stream -l PORT                       the peer: serve stream runs until
 *                                        killed
 *   stream [-c CLUSTER] -p HOST:PORT [-s BYTES] [-n CALLS] [-r REPEATS]
 *
 * The peer runs on the server's host; the measuring side, on another,
 * writes N calls of S bytes at consecutive offsets of a one-subfile file
 * on server 0 (gfs_striped_write), reads them back (bytes checked), then
 * sends the same number of bytes to the peer over one TCP connection and
 * receives them back from it (one byte of answer at the end of the send,
 * so the time covers the bytes' arrival).  Each figure is the median over
 * R repeats, in MB/s; the ratio is galley / TCP stream.
 */
#include "galley.h"
#include "bench_stats.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int put_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int get_all(int fd, char *p, size_t n)
{
    while (n) {
        ssize_t r = recv(fd, p, n, 0);
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* The peer: per connection, a header (u64 bytes, u64 chunk), then the
 * bytes arrive (answered with one byte) and go back. */
static int peer(const char *port)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE},
                    *ai;
    if (getaddrinfo(NULL, port, &hints, &ai))
        return 1;
    int ls = socket(ai->ai_family, SOCK_STREAM, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ls < 0 || bind(ls, ai->ai_addr, ai->ai_addrlen) || listen(ls, 4)) {
        perror("stream: listen");
        return 1;
    }
    freeaddrinfo(ai);
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0)
            continue;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        uint64_t h[2];
        char *buf = NULL;
        if (get_all(fd, (char *)h, sizeof(h)) == 0 && h[1] &&
            h[1] <= 64 << 20 && (buf = malloc(h[1]))) {
            int ok = 1;
            for (uint64_t left = h[0]; ok && left;
                 left -= h[1] < left ? h[1] : left)
                ok = get_all(fd, buf, h[1] < left ? h[1] : left) == 0;
            char a = 1;
            ok = ok && put_all(fd, &a, 1) == 0;
            for (uint64_t left = h[0]; ok && left;
                 left -= h[1] < left ? h[1] : left)
                ok = put_all(fd, buf, h[1] < left ? h[1] : left) == 0;
        }
        free(buf);
        close(fd);
    }
}

/* One stream run to host:port: *wt / *rt seconds to send / receive n
 * chunks of size bytes.  0 or -1. */
static int tcp_run(const char *host, const char *port, char *buf, long size,
                   long n, double *wt, double *rt)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM},
                    *ai;
    if (getaddrinfo(host, port, &hints, &ai))
        return -1;
    int fd = socket(ai->ai_family, SOCK_STREAM, 0), one = 1;
    int rc = fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) ? -1 : 0;
    freeaddrinfo(ai);
    if (rc)
        return -1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    uint64_t h[2] = {(uint64_t)size * (uint64_t)n, (uint64_t)size};
    char a;
    rc = put_all(fd, (char *)h, sizeof(h));
    double t0 = bench_now_s();
    for (long i = 0; !rc && i < n; i++)
        rc = put_all(fd, buf, (size_t)size);
    rc = rc ? rc : get_all(fd, &a, 1);
    *wt = bench_now_s() - t0;
    t0 = bench_now_s();
    for (long i = 0; !rc && i < n; i++)
        rc = get_all(fd, buf, (size_t)size);
    *rt = bench_now_s() - t0;
    close(fd);
    return rc;
}

int main(int argc, char **argv)
{
    const char *cluster = NULL, *peer_at = NULL, *listen_port = NULL;
    long size = 1 << 20, n = 64;
    int reps = 5, opt;
    while ((opt = getopt(argc, argv, "c:p:l:s:n:r:")) != -1) {
        switch (opt) {
        case 'c':
            cluster = optarg;
            break;
        case 'p':
            peer_at = optarg;
            break;
        case 'l':
            listen_port = optarg;
            break;
        case 's':
            size = atol(optarg);
            break;
        case 'n':
            n = atol(optarg);
            break;
        case 'r':
            reps = atoi(optarg);
            break;
        default:
            goto usage;
        }
    }
    if (listen_port)
        return peer(listen_port);
    char host[256], *colon;
    if (!peer_at || strlen(peer_at) >= sizeof(host))
        goto usage;
    strcpy(host, peer_at);
    colon = strrchr(host, ':');
    if (!colon)
        goto usage;
    *colon = '\0';
    if (size <= 0 || size > (64 << 20) || n <= 0 || reps <= 0 || reps > 100)
        goto usage;
    int rc = gfs_init(cluster);
    if (rc) {
        fprintf(stderr, "stream: gfs_init: %s\n", gfs_strerror(rc));
        return 1;
    }
    char name[64];
    snprintf(name, sizeof(name), "/stream.%d", (int)getpid());
    int srv0 = 0;
    rc = gfs_create_striped(name, 1, &srv0, 1 << 30, NULL);
    int sid = rc ? rc : gfs_striped_open(name);
    if (sid < 0) {
        fprintf(stderr, "stream: %s: %s\n", name, gfs_strerror(sid));
        return 1;
    }
    char *wb = malloc((size_t)size), *rb = malloc((size_t)size);
    for (long i = 0; i < size; i++)
        wb[i] = (char)(i * 7 + 3);
    double *t[4];
    for (int k = 0; k < 4; k++)
        t[k] = calloc((size_t)reps, sizeof(double));
    int bad = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now_s();
        for (long i = 0; i < n; i++)
            if (gfs_striped_write(sid, i * size, wb, size) != size)
                bad++;
        t[0][r] = bench_now_s() - t0;
        t0 = bench_now_s();
        for (long i = 0; i < n; i++)
            if (gfs_striped_read(sid, i * size, rb, size) != size ||
                memcmp(rb, wb, (size_t)size))
                bad++;
        t[1][r] = bench_now_s() - t0;
        if (tcp_run(host, colon + 1, rb, size, n, &t[2][r], &t[3][r]))
            bad++;
    }
    double mb = (double)size * (double)n / 1e6;
    double gw = mb / bench_median(t[0], reps),
           gr = mb / bench_median(t[1], reps);
    double sw = mb / bench_median(t[2], reps),
           sr = mb / bench_median(t[3], reps);
    printf("stream: %ld calls of %ld bytes, median of %d repeats; server 0 "
           "over %s\n",
           n, size, reps,
           gfs_server_transport(0) == GFS_TRANSPORT_TCP ? "tcp" : "same host");
    printf("%-8s %12s %12s %8s\n", "op", "galley MB/s", "TCP MB/s", "ratio");
    printf("%-8s %12.1f %12.1f %7.2fx\n", "write", gw, sw, gw / sw);
    printf("%-8s %12.1f %12.1f %7.2fx\n", "read", gr, sr, gr / sr);
    gfs_striped_close(sid);
    gfs_delete_file(name);
    gfs_finalize();
    if (bad) {
        fprintf(stderr, "stream: %d calls failed or read back wrong data\n",
                bad);
        return 1;
    }
    return 0;
usage:
    fprintf(stderr,
            "usage: %s -l PORT\n       %s [-c CLUSTER] -p HOST:PORT "
            "[-s BYTES] [-n CALLS] [-r REPEATS]\n",
            argv[0], argv[0]);
    return 2;
}
