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
 * plain / checksummed (1.00x: checksums cost nothing).  Two times: the
 * wall clock, and this process's CPU time (user + system), which a
 * loaded machine inflates far less (a long call is preempted, a short
 * one mostly not); on the direct path the process does all the work, on
 * the others the server's share is not in it.  The transport in
 * use is printed (GALLEY_TRANSPORT chooses it: the same-host direct path
 * by default, where the client computes and checks every chunk's CRC
 * itself, common/csfile.h).
 */
#include "galley.h"
#include "bench_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
    return bench_now_s() * 1e6;
}

static double cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* n calls of size bytes at consecutive offsets; the mean wall and CPU
 * us per call into *wall and *cpu, or -1 when a call failed or read back
 * wrong bytes (the check is not timed). */
static int run(int sid, int write, long n, long size, char *buf,
               const char *want, double *wall, double *cpu)
{
    double t = 0, c = 0;
    for (long i = 0; i < n; i++) {
        double t0 = now_us(), c0 = cpu_us();
        int64_t r = write ? gfs_striped_write(sid, i * size, buf, size)
                          : gfs_striped_read(sid, i * size, buf, size);
        t += now_us() - t0;
        c += cpu_us() - c0;
        if (r != size || (!write && memcmp(buf, want, (size_t)size)))
            return -1;
    }
    *wall = t / (double)n;
    *cpu = c / (double)n;
    return 0;
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
    double *t[8]; /* [write plain, write crc, read plain, read crc] x
                   * [wall, cpu] */
    for (int k = 0; k < 8; k++)
        t[k] = calloc((size_t)reps, sizeof(double));
    int bad = 0;
    for (int r = 0; r < reps; r++)
        for (int op = 1; op >= 0; op--) /* writes, then reads */
            for (int j = 0; j < 2; j++) {
                int k = (r + j) % 2; /* which file first: alternating */
                memcpy(buf, want, (size_t)size);
                int i = 2 * (1 - op) + k;
                bad += run(sid[k], op, n, size, buf, want, &t[i][r],
                           &t[4 + i][r]) != 0;
            }
    double m[8];
    for (int k = 0; k < 8; k++)
        m[k] = bench_median(t[k], reps);
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
    printf("%-6s %10s %10s %7s | %10s %10s %7s\n", "op", "plain us",
           "crc32c us", "ratio", "plain cpu", "crc32c cpu", "ratio");
    for (int op = 0; op < 2; op++)
        printf("%-6s %10.2f %10.2f %6.2fx | %10.2f %10.2f %6.2fx\n",
               op ? "read" : "write", m[2 * op], m[2 * op + 1],
               m[2 * op] / m[2 * op + 1], m[4 + 2 * op], m[5 + 2 * op],
               m[4 + 2 * op] / m[5 + 2 * op]);
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
