/*
 * latency.c -- the round trip of one small request: gfs_striped_write /
 * gfs_striped_read of S bytes (one server: the range lies in one stripe)
 * beside pwrite / pread of the same size on a local file, in one run.
 *
 *   latency [-c CLUSTER] [-s BYTES] [-n CALLS] [-r REPEATS] [-d LOCALDIR]
 *
 * Each method issues N calls at consecutive offsets (write all, then read
 * all, bytes checked); the figure is the median over R repeats of the mean
 * time per call, in microseconds.  The transport in use is printed
 * (GALLEY_TRANSPORT chooses it).  A third row: a null request (gfs_ping:
 * a frame to the server and its empty reply) beside a ping-pong of a
 * frame-sized message between two processes over a Unix socket pair.
 */
#include "galley.h"
#include "bench_stats.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
    return bench_now_s() * 1e6;
}

static const char *transport_name(int t)
{
    switch (t) {
    case GFS_TRANSPORT_DIRECT:
        return "direct (the fork's file, by descriptor)";
    case GFS_TRANSPORT_LOCAL_CMA:
        return "local (Unix socket + cross-memory attach)";
    case GFS_TRANSPORT_LOCAL:
        return "local (Unix socket)";
    case GFS_TRANSPORT_TCP:
        return "tcp";
    default:
        return gfs_strerror(t);
    }
}

/* Mean round trip of n 32-byte messages to a child that echoes them over
 * a Unix socket pair, in microseconds; < 0 on failure. */
static double pingpong_us(long n)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        char b[32];
        close(sv[0]);
        while (read(sv[1], b, sizeof(b)) == (ssize_t)sizeof(b) &&
               write(sv[1], b, sizeof(b)) == (ssize_t)sizeof(b))
            ;
        _exit(0);
    }
    close(sv[1]);
    char b[32] = {0};
    double t0 = now_us();
    long i;
    for (i = 0; i < n; i++)
        if (write(sv[0], b, sizeof(b)) != (ssize_t)sizeof(b) ||
            read(sv[0], b, sizeof(b)) != (ssize_t)sizeof(b))
            break;
    double t = (now_us() - t0) / n;
    close(sv[0]);
    if (pid > 0)
        waitpid(pid, NULL, 0);
    return i == n ? t : -1;
}

int main(int argc, char **argv)
{
    const char *cluster = NULL, *dir = "/tmp";
    long size = 4096, n = 2000;
    int reps = 5, opt;
    while ((opt = getopt(argc, argv, "c:s:n:r:d:")) != -1) {
        switch (opt) {
        case 'c':
            cluster = optarg;
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
        case 'd':
            dir = optarg;
            break;
        default:
            fprintf(stderr,
                    "usage: %s [-c CLUSTER] [-s BYTES] [-n CALLS] "
                    "[-r REPEATS] [-d LOCALDIR]\n",
                    argv[0]);
            return 2;
        }
    }
    if (size <= 0 || size > (1 << 20) || n <= 0 || reps <= 0 || reps > 100) {
        fprintf(stderr, "latency: bad arguments\n");
        return 2;
    }
    int rc = gfs_init(cluster);
    if (rc) {
        fprintf(stderr, "latency: gfs_init: %s\n", gfs_strerror(rc));
        return 1;
    }
    char name[64], lpath[4096];
    snprintf(name, sizeof(name), "/latency.%d", (int)getpid());
    snprintf(lpath, sizeof(lpath), "%s/latency.%d", dir, (int)getpid());
    /* one subfile: every call is one request to one server */
    int srv0 = 0;
    rc = gfs_create_striped(name, 1, &srv0, 1 << 30, NULL);
    int sid = rc ? rc : gfs_striped_open(name);
    int fd = open(lpath, O_CREAT | O_TRUNC | O_RDWR, 0600);
    if (sid < 0 || fd < 0) {
        fprintf(stderr, "latency: cannot create %s / %s: %s\n", name, lpath,
                sid < 0 ? gfs_strerror(sid) : "open failed");
        return 1;
    }
    char *wb = malloc((size_t)size), *rb = malloc((size_t)size);
    for (long i = 0; i < size; i++)
        wb[i] = (char)(i * 7 + 1);
    double *t[6];
    for (int k = 0; k < 6; k++)
        t[k] = calloc((size_t)reps, sizeof(double));
    int bad = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = now_us();
        for (long i = 0; i < n; i++)
            if (gfs_striped_write(sid, i * size, wb, size) != size)
                bad++;
        t[0][r] = (now_us() - t0) / n;
        t0 = now_us();
        for (long i = 0; i < n; i++)
            if (gfs_striped_read(sid, i * size, rb, size) != size ||
                memcmp(rb, wb, (size_t)size))
                bad++;
        t[1][r] = (now_us() - t0) / n;
        t0 = now_us();
        for (long i = 0; i < n; i++)
            if (pwrite(fd, wb, (size_t)size, (off_t)(i * size)) != size)
                bad++;
        t[2][r] = (now_us() - t0) / n;
        t0 = now_us();
        for (long i = 0; i < n; i++)
            if (pread(fd, rb, (size_t)size, (off_t)(i * size)) != size ||
                memcmp(rb, wb, (size_t)size))
                bad++;
        t[3][r] = (now_us() - t0) / n;
        t0 = now_us();
        for (long i = 0; i < n; i++)
            if (gfs_ping(0) != 0)
                bad++;
        t[4][r] = (now_us() - t0) / n;
        t[5][r] = pingpong_us(n);
        if (t[5][r] < 0)
            bad++;
    }
    double gw = bench_median(t[0], reps), gr = bench_median(t[1], reps);
    double lw = bench_median(t[2], reps), lr = bench_median(t[3], reps);
    double gn = bench_median(t[4], reps), pp = bench_median(t[5], reps);
    printf("latency: %ld calls of %ld bytes, median of %d repeats; server 0 "
           "over %s\n",
           n, size, reps, transport_name(gfs_server_transport(0)));
    printf("%-8s %12s %12s %8s\n", "op", "galley us", "local us", "ratio");
    printf("%-8s %12.2f %12.2f %7.2fx\n", "write", gw, lw, gw / lw);
    printf("%-8s %12.2f %12.2f %7.2fx\n", "read", gr, lr, gr / lr);
    printf("%-8s %12.2f %12.2f %7.2fx   (local: Unix socket ping-pong)\n",
           "null", gn, pp, gn / pp);
    gfs_striped_close(sid);
    gfs_delete_file(name);
    close(fd);
    unlink(lpath);
    gfs_finalize();
    if (bad) {
        fprintf(stderr, "latency: %d calls failed or read back wrong data\n",
                bad);
        return 1;
    }
    return 0;
}
