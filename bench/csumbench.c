/*
 * csumbench.c -- what end-to-end checksums cost a single client, without
 * MPI: a checksummed file (gfs_set_checksum) beside a plain one on the
 * same server, one process, one run.
 *
 *   csumbench [-c CLUSTER] [-s BYTES] [-n CALLS] [-r REPEATS]
 *
 * Both files have one subfile on server 0.  Each repeat writes N calls
 * of S bytes at consecutive offsets to the plain file, then to the
 * checksummed one, then reads both back (bytes checked), alternating
 * which goes first so neither always finds the caches warmer; the figure
 * is the median over R repeats of the time per call, and the ratio is
 * plain / checksummed (1.00x: checksums cost nothing).  The transport in
 * use is printed (GALLEY_TRANSPORT chooses it: the same-host direct path
 * by default, where the client computes and checks every chunk's CRC
 * itself, proto/csfile.h).
 */
#include "galley.h"
#include "bench_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double now_us(void)
{
    return bench_now_s() * 1e6;
}

/* n calls of size bytes at consecutive offsets; the mean us per call, or
 * -1 when a call failed or read back wrong bytes. */
static double run(int sid, int write, long n, long size, char *buf,
                  const char *want)
{
    double t0 = now_us();
    for (long i = 0; i < n; i++) {
        int64_t r = write ? gfs_striped_write(sid, i * size, buf, size)
                          : gfs_striped_read(sid, i * size, buf, size);
        if (r != size || (!write && memcmp(buf, want, (size_t)size)))
            return -1;
    }
    return (now_us() - t0) / (double)n;
}

int main(int argc, char **argv)
{
    const char *cluster = NULL;
    long size = 1 << 20, n = 16;
    int reps = 9, opt;
    while ((opt = getopt(argc, argv, "c:s:n:r:")) != -1) {
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
        default:
            fprintf(stderr,
                    "usage: %s [-c CLUSTER] [-s BYTES] [-n CALLS] "
                    "[-r REPEATS]\n",
                    argv[0]);
            return 2;
        }
    }
    if (size <= 0 || size > (16 << 20) || n <= 0 || reps <= 0 || reps > 1000) {
        fprintf(stderr, "csumbench: bad arguments\n");
        return 2;
    }
    int rc = gfs_init(cluster);
    if (rc) {
        fprintf(stderr, "csumbench: gfs_init: %s\n", gfs_strerror(rc));
        return 1;
    }
    char name[2][64];
    int sid[2], srv0 = 0;
    for (int k = 0; k < 2; k++) { /* 0: plain, 1: checksummed */
        snprintf(name[k], sizeof(name[k]), "/csumbench.%d.%d", (int)getpid(),
                 k);
        rc = gfs_create_striped(name[k], 1, &srv0, 1 << 30, NULL);
        int fid = rc ? rc : gfs_open_file(name[k]);
        if (fid >= 0 && k)
            rc = gfs_set_checksum(fid, "crc32c");
        if (fid >= 0)
            gfs_close_file(fid);
        sid[k] = rc ? rc : fid < 0 ? fid : gfs_striped_open(name[k]);
        if (sid[k] < 0) {
            fprintf(stderr, "csumbench: cannot create %s: %s\n", name[k],
                    gfs_strerror(sid[k]));
            return 1;
        }
    }
    char *buf = malloc((size_t)size), *want = malloc((size_t)size);
    for (long i = 0; i < size; i++)
        want[i] = (char)(i * 7 + 1);
    double *t[4];
    for (int k = 0; k < 4; k++)
        t[k] = calloc((size_t)reps, sizeof(double));
    int bad = 0;
    for (int r = 0; r < reps; r++)
        for (int op = 1; op >= 0; op--) /* writes, then reads */
            for (int j = 0; j < 2; j++) {
                int k = (r + j) % 2; /* which file first: alternating */
                memcpy(buf, want, (size_t)size);
                double v = run(sid[k], op, n, size, buf, want);
                bad += v < 0;
                t[2 * (1 - op) + k][r] = v;
            }
    double pw = bench_median(t[0], reps), cw = bench_median(t[1], reps);
    double pr = bench_median(t[2], reps), cr = bench_median(t[3], reps);
    const char *tn[] = {[GFS_TRANSPORT_DIRECT] = "direct",
                        [GFS_TRANSPORT_LOCAL_CMA] = "local+cma",
                        [GFS_TRANSPORT_LOCAL] = "local",
                        [GFS_TRANSPORT_TCP] = "tcp"};
    int tr = gfs_server_transport(0);
    printf("csumbench: %ld calls of %ld bytes, median of %d repeats; "
           "transport %s\n",
           n, size, reps,
           tr >= 0 && tr < (int)(sizeof(tn) / sizeof(*tn)) && tn[tr] ? tn[tr]
                                                                     : "?");
    printf("%-6s %12s %12s %8s\n", "op", "plain us", "crc32c us", "ratio");
    printf("%-6s %12.2f %12.2f %7.2fx\n", "write", pw, cw, pw / cw);
    printf("%-6s %12.2f %12.2f %7.2fx\n", "read", pr, cr, pr / cr);
    for (int k = 0; k < 2; k++) {
        gfs_striped_close(sid[k]);
        gfs_delete_file(name[k]);
    }
    gfs_finalize();
    if (bad) {
        fprintf(stderr, "csumbench: %d runs failed or read back wrong data\n",
                bad);
        return 1;
    }
    return 0;
}
