/*
 * sfio_bench.c -- the SFIO paper's all-to-all write experiment (Gabrielyan
 * & Hersch, section 4), scaled down: P writer processes write one striped
 * file (stripe unit 200 bytes) spread over K servers, for K = 1 .. 4, with
 * the three SFIO write calls side by side:
 *
 *   mwrite    the unoptimised path: one request per stripe fragment
 *   mwritec   one call per block: fragments sorted and merged per server,
 *             one transfer per server
 *   mwriteb   -b blocks per call (multi-block), the same optimisation over
 *             all of them
 *
 * Access pattern (all-to-all): the logical file is cut into blocks of -B
 * bytes; writer p writes blocks p, p+P, p+2P, ...  A block covers -B/200
 * stripe units, so every writer's data is interleaved over every server,
 * and every server receives from every writer.  As in the paper the size
 * per server is fixed (-s), so the file grows with K; and by default the
 * number of writers equals the number of servers (-p to fix it).
 *
 * Writers are fork()ed processes (not threads), each with its own client
 * library and connections, like separate compute nodes; a pipe barrier
 * starts them together, each reports its start and end times
 * (CLOCK_MONOTONIC), and MB/s = file bytes / (last end - first start),
 * MB = 10^6 bytes.  Writes are timed until acknowledged (data in the
 * servers' caches; no sync), as the paper times them.  After each run a
 * separate process reads the file back with mreadc and compares every
 * byte; a mismatch is reported in the "check" column.  The parent process
 * never initialises the client library (it only forks and times).
 *
 * Threads: every process is single-threaded apart from the library's.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "galley.h"
#include "galley_sfio.h"

#define UNIT 200
#define MAX_K 4
#define MAX_P 64
#define MAX_REPS 50

enum method { M_WRITE, M_WRITEC, M_WRITEB, NMETHODS };
static const char *method_name[NMETHODS] = {"mwrite", "mwritec", "mwriteb"};

typedef struct config {
    const char *cluster;
    int kmax;
    int writers;        /* 0: as many as servers */
    int64_t per_server; /* bytes per subfile */
    int64_t block;      /* bytes per block */
    int batch;          /* mwriteb: blocks per call */
    int reps;
} config;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Byte x of the file: a function of its logical offset. */
static unsigned char pattern(int64_t x)
{
    uint64_t v = (uint64_t)x * 0x9e3779b97f4a7c15ULL;
    return (unsigned char)(v >> 56);
}

/* ------------------------------------------------------ child process -- */

typedef struct report {
    int rc;        /* 0 or a negative error */
    double t0, t1; /* start after the barrier, end of the last write */
} report;

static int child_init(const config *cf)
{
    int rc = gfs_init(cf->cluster);
    if (rc)
        fprintf(stderr, "sfio_bench[%ld]: gfs_init: %s\n", (long)getpid(),
                gfs_strerror(rc));
    return rc;
}

/* Writer p of P: open, wait at the barrier, write its blocks, report. */
static int writer(const config *cf, const char *name, int method, int p, int P,
                  int64_t fsize, int ready_fd, int go_fd, int rep_fd)
{
    report r = {0, 0, 0};
    int64_t nblocks = fsize / cf->block;
    int64_t mine = nblocks > p ? (nblocks - p + P - 1) / P : 0;
    char *buf = malloc((size_t)(mine * cf->block + 1));
    long *offs = malloc(sizeof(long) * (size_t)(mine + 1));
    char **bufs = malloc(sizeof(char *) * (size_t)(mine + 1));
    unsigned *sizes = malloc(sizeof(unsigned) * (size_t)(mine + 1));
    MFILE *f = NULL;
    r.rc = child_init(cf);
    if (!r.rc && (!buf || !offs || !bufs || !sizes))
        r.rc = -ENOMEM;
    if (!r.rc) {
        for (int64_t i = 0; i < mine; i++) {
            int64_t off = (p + i * P) * cf->block;
            offs[i] = (long)off;
            bufs[i] = buf + i * cf->block;
            sizes[i] = (unsigned)cf->block;
            for (int64_t j = 0; j < cf->block; j++)
                bufs[i][j] = (char)pattern(off + j);
        }
        f = mopen(name, UNIT);
        if (!f)
            r.rc = mlasterror() ? mlasterror() : -EIO;
    }
    char c = 1;
    if (write(ready_fd, &c, 1) != 1 || read(go_fd, &c, 1) < 0)
        r.rc = r.rc ? r.rc : -EIO;
    r.t0 = now_s();
    for (int64_t i = 0; i < mine && !r.rc;) {
        long k;
        if (method == M_WRITEB) {
            unsigned n =
                (unsigned)(mine - i < cf->batch ? mine - i : cf->batch);
            k = mwriteb(f, n, offs + i, bufs + i, sizes + i);
            if (k != (long)n * cf->block)
                r.rc = k < 0 ? (int)k : -EIO;
            i += n;
            continue;
        }
        k = method == M_WRITE
                ? mwrite(f, offs[i], bufs[i], (unsigned)cf->block)
                : mwritec(f, offs[i], bufs[i], (unsigned)cf->block);
        if (k != cf->block)
            r.rc = k < 0 ? (int)k : -EIO;
        i++;
    }
    r.t1 = now_s();
    if (f)
        mclose(f);
    gfs_finalize();
    if (write(rep_fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
        return 1;
    free(buf);
    free(offs);
    free(bufs);
    free(sizes);
    return r.rc ? 1 : 0;
}

/* Create the file on servers 0..k-1 (deleting an old one). */
static int setup(const config *cf, const char *name, int k)
{
    int rc = child_init(cf);
    if (rc)
        return 1;
    gfs_delete_file(name);
    int servers[MAX_K] = {0, 1, 2, 3};
    rc = gfs_create_striped(name, k, servers, UNIT, NULL);
    if (rc)
        fprintf(stderr, "sfio_bench: create %s: %s\n", name, gfs_strerror(rc));
    gfs_finalize();
    return rc ? 1 : 0;
}

/* Read the whole file back and compare; exit 0 if every byte matches.
 * With remove, delete the file afterwards. */
static int verify(const config *cf, const char *name, int64_t fsize,
                  bool remove)
{
    if (child_init(cf))
        return 2;
    int bad = 0;
    MFILE *f = mopen(name, UNIT);
    const int64_t CH = 4 << 20;
    unsigned char *b = malloc((size_t)CH);
    if (!f || !b)
        bad = 2;
    for (int64_t at = 0; at < fsize && !bad; at += CH) {
        int64_t n = fsize - at < CH ? fsize - at : CH;
        long k = mreadc(f, (long)at, (char *)b, (unsigned)n);
        if (k != n) {
            bad = 1;
            break;
        }
        for (int64_t j = 0; j < n; j++)
            if (b[j] != pattern(at + j)) {
                bad = 1;
                break;
            }
    }
    if (f)
        mclose(f);
    if (remove)
        mdelete(name);
    gfs_finalize();
    free(b);
    return bad;
}

/* ------------------------------------------------------------ parent --- */

/* The number of servers in the cluster (capped at 99), as an exit
 * status; 0 if the cluster file cannot be read. */
static int count_servers(const config *cf)
{
    if (child_init(cf))
        return 0;
    int n = gfs_num_servers();
    gfs_finalize();
    return n < 0 ? 0 : n > 99 ? 99 : n;
}

enum job { JOB_COUNT, JOB_SETUP, JOB_VERIFY };

/* Run a job in a child process (the parent never initialises the
 * library, so fork() is always safe); the child's exit status, or -1. */
static int in_child(int job, const config *cf, const char *name, int k,
                    int64_t fsize)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0)
        _exit(job == JOB_COUNT   ? count_servers(cf)
              : job == JOB_SETUP ? setup(cf, name, k)
                                 : verify(cf, name, fsize, true));
    int st = -1;
    if (pid < 0 || waitpid(pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* One timed run: P writers; MB/s, or a negative value on failure. */
static double timed_run(const config *cf, const char *name, int method, int P,
                        int64_t fsize)
{
    int ready[2], go[2], rep[2];
    if (pipe(ready) || pipe(go) || pipe(rep))
        return -1;
    fflush(stdout);
    pid_t pids[MAX_P];
    int started = 0;
    for (int p = 0; p < P; p++) {
        pid_t pid = fork();
        if (pid == 0) {
            close(ready[0]);
            close(go[1]);
            close(rep[0]);
            _exit(
                writer(cf, name, method, p, P, fsize, ready[1], go[0], rep[1]));
        }
        if (pid < 0)
            break;
        pids[started++] = pid;
    }
    close(ready[1]);
    close(go[0]);
    close(rep[1]);
    /* barrier: every writer has opened the file */
    char c;
    int n = 0;
    while (n < started && read(ready[0], &c, 1) == 1)
        n++;
    for (int p = 0; p < started; p++)
        if (write(go[1], &c, 1) != 1)
            break;
    close(go[1]);
    double t0 = INFINITY, t1 = 0;
    bool ok = started == P;
    report r;
    int got = 0;
    while (read(rep[0], &r, sizeof(r)) == (ssize_t)sizeof(r)) {
        got++;
        if (r.rc) {
            fprintf(stderr, "sfio_bench: writer failed: %s\n",
                    gfs_strerror(r.rc));
            ok = false;
        }
        t0 = r.t0 < t0 ? r.t0 : t0;
        t1 = r.t1 > t1 ? r.t1 : t1;
    }
    for (int p = 0; p < started; p++) {
        int st;
        waitpid(pids[p], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st))
            ok = false;
    }
    close(ready[0]);
    close(rep[0]);
    if (!ok || got != P || t1 <= t0)
        return -1;
    return (double)fsize / (t1 - t0) / 1e6;
}

static bool parse_size(const char *s, int64_t *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v <= 0)
        return false;
    int64_t m = 1;
    if (*end == 'K' || *end == 'k')
        m = 1 << 10, end++;
    else if (*end == 'M' || *end == 'm')
        m = 1 << 20, end++;
    else if (*end == 'G' || *end == 'g')
        m = 1 << 30, end++;
    if (*end)
        return false;
    *out = (int64_t)(v * (double)m);
    return *out > 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: sfio_bench [-c CLUSTER] [-k K] [-p P] [-s BYTES] "
               "[-B BYTES] [-b N] [-r R]\n"
               "  -c FILE   cluster file (default $GALLEY_CLUSTER)\n"
               "  -k K      most servers (1..4, default 4)\n"
               "  -p P      writer processes (default: as many as servers)\n"
               "  -s BYTES  bytes per server (subfile), K/M/G (default 2M)\n"
               "  -B BYTES  block size (default 20000: 100 stripe units)\n"
               "  -b N      mwriteb: blocks per call (default 64)\n"
               "  -r R      runs of every case; the mean is printed, the best "
               "in brackets (default 3)\n");
}

/* Parse the command line into cf; -1 to go on, else the exit status. */
static int parse_opts(int argc, char **argv, config *cf)
{
    int opt;
    while ((opt = getopt(argc, argv, "c:k:p:s:B:b:r:h")) != -1) {
        switch (opt) {
        case 'c':
            cf->cluster = optarg;
            break;
        case 'k':
            cf->kmax = atoi(optarg);
            if (cf->kmax < 1 || cf->kmax > MAX_K)
                goto bad;
            break;
        case 'p':
            cf->writers = atoi(optarg);
            if (cf->writers < 1 || cf->writers > MAX_P)
                goto bad;
            break;
        case 's':
            if (!parse_size(optarg, &cf->per_server))
                goto bad;
            break;
        case 'B':
            if (!parse_size(optarg, &cf->block) || cf->block > (1 << 30))
                goto bad;
            break;
        case 'b':
            cf->batch = atoi(optarg);
            if (cf->batch < 1)
                goto bad;
            break;
        case 'r':
            cf->reps = atoi(optarg);
            if (cf->reps < 1 || cf->reps > MAX_REPS)
                goto bad;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
        bad:
            usage(stderr);
            return 2;
        }
    }
    return -1;
}

/* One row of the table: every method cf->reps times on K = k servers.
 * Returns 0 (all verified), 1 (a run failed or read back wrong) or -1
 * (setup failed: stop). */
static int run_row(const config *cf, const char *name, int k)
{
    int P = cf->writers ? cf->writers : k;
    int64_t fsize = cf->per_server * k / cf->block * cf->block;
    double mean[NMETHODS], best[NMETHODS];
    bool ok = true;
    for (int m = 0; m < NMETHODS; m++) {
        double sum = 0, top = 0;
        for (int r = 0; r < cf->reps; r++) {
            if (in_child(JOB_SETUP, cf, name, k, 0) != 0) {
                fprintf(stderr, "sfio_bench: setup failed\n");
                return -1;
            }
            double v = timed_run(cf, name, m, P, fsize);
            if (v < 0) {
                ok = false;
                v = 0;
            }
            if (in_child(JOB_VERIFY, cf, name, k, fsize) != 0)
                ok = false;
            sum += v;
            top = v > top ? v : top;
        }
        mean[m] = sum / cf->reps;
        best[m] = top;
    }
    char cell[NMETHODS][32];
    for (int m = 0; m < NMETHODS; m++)
        snprintf(cell[m], sizeof(cell[m]), "%7.2f [%7.2f]", mean[m], best[m]);
    printf("%2d %2d %9.2f | %-17s %-17s %-17s | %7.1fx %7.1fx | %s\n", k, P,
           fsize / 1e6, cell[0], cell[1], cell[2],
           mean[0] > 0 ? mean[1] / mean[0] : 0,
           mean[0] > 0 ? mean[2] / mean[0] : 0, ok ? "ok" : "FAILED");
    fflush(stdout);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    config cf = {.cluster = NULL,
                 .kmax = MAX_K,
                 .writers = 0,
                 .per_server = 2 << 20,
                 .block = 20000,
                 .batch = 64,
                 .reps = 3};
    int ret = parse_opts(argc, argv, &cf);
    if (ret >= 0)
        return ret;
    if (!cf.cluster)
        cf.cluster = getenv("GALLEY_CLUSTER");
    /* How many servers: ask in a child (the parent stays uninitialised). */
    int nserv = in_child(JOB_COUNT, &cf, NULL, 0, 0);
    if (nserv < 1) {
        fprintf(stderr, "sfio_bench: cannot read the cluster file\n");
        return 1;
    }
    if (cf.kmax > nserv)
        cf.kmax = nserv;

    char name[64];
    snprintf(name, sizeof(name), "sfio_bench.%ld", (long)getpid());
    printf("sfio_bench: SFIO all-to-all writes, stripe unit %d bytes\n", UNIT);
    printf("  writers: %s fork()ed processes; servers K = 1..%d (subfiles "
           "on servers 0..K-1)\n",
           cf.writers ? "fixed number of" : "K (as many as servers)", cf.kmax);
    if (cf.writers)
        printf("  writers P = %d\n", cf.writers);
    printf("  %" PRId64
           " bytes per server (file = K x that); blocks of %" PRId64
           " bytes (%" PRId64 " stripe units), writer p writes "
           "blocks p, p+P, ...\n",
           cf.per_server, cf.block, cf.block / UNIT);
    printf("  mwriteb: %d blocks per call; runs per case: %d; MB = 10^6 "
           "bytes; no sync\n\n",
           cf.batch, cf.reps);
    char head[NMETHODS][32];
    for (int m = 0; m < NMETHODS; m++)
        snprintf(head[m], sizeof(head[m]), "%s MB/s", method_name[m]);
    printf("%2s %2s %9s | %-17s %-17s %-17s | %8s %8s | %s\n", "K", "P",
           "file MB", head[0], head[1], head[2], "c/plain", "b/plain", "check");
    printf("---------------+-------------------------------------------------"
           "----+-------------------+------\n");
    int status = 0;
    for (int k = 1; k <= cf.kmax; k++) {
        int row = run_row(&cf, name, k);
        if (row < 0)
            return 1;
        if (row)
            status = 1;
    }
    printf("\n(mean of %d runs, best in brackets; c/plain and b/plain = "
           "mwritec and mwriteb over mwrite)\n",
           cf.reps);
    return status;
}
