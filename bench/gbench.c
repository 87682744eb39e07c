/*
 * gbench.c -- list I/O versus one call per piece, side by side in one run.
 *
 * For K = 1 .. min(4, servers) a file of K subfiles on servers 0..K-1 is
 * created with one fork ("gbench") in every subfile.  For each piece size S
 * the benchmark moves N pieces of S bytes, non-contiguous in the fork
 * (stride 2*S, so every piece is separated from the next by a hole of S
 * bytes), spread round-robin over the K forks: fork j gets pieces
 * j, j+K, j+2K, ... at fork offsets 0, 2S, 4S, ...
 *
 * Each fork is driven by its own thread, so all K servers work at once,
 * and both methods get the same concurrency:
 *   list   one gfs_listio call per fork carrying all of that fork's pieces
 *   calls  one gfs_write / gfs_read call per piece, in file order
 * Every case writes with both methods and reads back with both, checks the
 * bytes read against the bytes written, and prints pieces/s and MB/s
 * (MB = 10^6 bytes) for both methods in the same row, with their ratio.
 * Before each write phase the forks are truncated to zero (not timed).
 *
 * N per size is min(-N, -T / S) rounded down to a multiple of K, so every
 * case moves a bounded amount of data and the whole run is quick.
 *
 * Threads: the main thread sets up; one worker per fork runs a phase,
 * started together by a barrier.  Only galley.h calls are shared, and the
 * library is thread-safe.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "galley.h"

#define MAX_K 4
#define FORK_NAME "gbench"

static const int64_t default_sizes[] = {16, 200, 4096, 65536, 1048576};

typedef struct config {
    const char *cluster;
    int kmax;
    int64_t nmax;  /* most pieces per case        */
    int64_t cmax;  /* most pieces per fork for the per-call method */
    int64_t total; /* most bytes per case         */
    int reps;      /* best of this many per phase */
    int nsizes;
    int64_t sizes[16];
} config;

enum phase { W_LIST, W_CALLS, R_LIST, R_CALLS, NPHASES };
static const char *phase_name[NPHASES] = {"write/list", "write/calls",
                                          "read/list", "read/calls"};

/* One fork's share of a case. */
typedef struct worker {
    pthread_t tid;
    pthread_barrier_t *start;
    int kid;
    int op;       /* GFS_READ or GFS_WRITE */
    bool list;    /* one gfs_listio, else one call per piece */
    int64_t m;    /* pieces on this fork */
    int64_t cm;   /* pieces the per-call method moves (<= m) */
    int64_t size; /* bytes per piece */
    gfs_list_entry *ent;
    uint8_t *wbuf; /* m * size bytes to write */
    uint8_t *rbuf; /* m * size bytes read back */
    double begin;  /* when this worker passed the barrier */
    double end;    /* when this worker finished */
    int64_t rc;    /* 0 or the first error */
} worker;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *work(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(w->start);
    w->begin = now_s();
    uint8_t *buf = w->op == GFS_WRITE ? w->wbuf : w->rbuf;
    w->rc = 0;
    if (w->list) {
        int64_t r = gfs_listio(w->kid, w->op, w->m, w->ent, buf);
        if (r < 0)
            w->rc = r;
        else if (r != w->m * w->size)
            w->rc = -EIO;
    } else {
        for (int64_t i = 0; i < w->cm; i++) {
            int64_t r;
            if (w->op == GFS_WRITE)
                r = gfs_write(w->kid, w->ent[i].file_offset,
                              buf + w->ent[i].mem_offset, w->size);
            else
                r = gfs_read(w->kid, w->ent[i].file_offset,
                             buf + w->ent[i].mem_offset, w->size);
            if (r < 0) {
                w->rc = r;
                break;
            }
            if (r != w->size) {
                w->rc = -EIO;
                break;
            }
        }
    }
    w->end = now_s();
    return NULL;
}

/* Run one phase on all k workers; returns seconds or a negative error. */
static double run_phase(worker *ws, int k, int op, bool list, int64_t *err)
{
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)k + 1);
    for (int j = 0; j < k; j++) {
        ws[j].start = &start;
        ws[j].op = op;
        ws[j].list = list;
        if (op == GFS_READ)
            memset(ws[j].rbuf, 0, (size_t)(ws[j].m * ws[j].size));
        if (pthread_create(&ws[j].tid, NULL, work, &ws[j]) != 0) {
            fprintf(stderr, "gbench: cannot start a thread\n");
            exit(1);
        }
    }
    pthread_barrier_wait(&start);
    /* The clock starts when the first worker starts (the main thread may
     * be scheduled late after the barrier) and stops at the last finish. */
    double t0 = 1e300, t1 = 0;
    *err = 0;
    for (int j = 0; j < k; j++) {
        pthread_join(ws[j].tid, NULL);
        if (ws[j].begin < t0)
            t0 = ws[j].begin;
        if (ws[j].end > t1)
            t1 = ws[j].end;
        if (ws[j].rc && !*err)
            *err = ws[j].rc;
    }
    pthread_barrier_destroy(&start);
    return t1 - t0;
}

static bool verify(const worker *ws, int k, bool list)
{
    for (int j = 0; j < k; j++) {
        int64_t m = list ? ws[j].m : ws[j].cm; /* pieces are packed */
        if (memcmp(ws[j].wbuf, ws[j].rbuf, (size_t)(m * ws[j].size)))
            return false;
    }
    return true;
}

/* Deterministic pattern, different per fork and per fill. */
static void fill(uint8_t *p, size_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (uint8_t)x;
    }
}

static int truncate_all(worker *ws, int k)
{
    for (int j = 0; j < k; j++) {
        int rc = gfs_truncate_fork(ws[j].kid, 0);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static void fmt_size(int64_t s, char *out, size_t len)
{
    if (s >= 1048576 && s % 1048576 == 0)
        snprintf(out, len, "%" PRId64 "M", s / 1048576);
    else if (s >= 1024 && s % 1024 == 0)
        snprintf(out, len, "%" PRId64 "K", s / 1024);
    else
        snprintf(out, len, "%" PRId64, s);
}

static void die(const char *what, int64_t rc)
{
    fprintf(stderr, "gbench: %s: %s\n", what, gfs_strerror((int)rc));
}

/*
 * One case: K forks, piece size S, N pieces.  Prints one row.
 * Returns 0, 1 on a data mismatch, or a negative error.
 */
static int run_case(const config *cf, const int *kids, int k, int64_t size,
                    int64_t n)
{
    worker ws[MAX_K];
    int ret = 0;
    memset(ws, 0, sizeof(ws));
    for (int j = 0; j < k; j++) {
        int64_t m = n / k;
        ws[j].kid = kids[j];
        ws[j].m = m;
        ws[j].cm = cf->cmax > 0 && cf->cmax < m ? cf->cmax : m;
        ws[j].size = size;
        ws[j].ent = calloc((size_t)m, sizeof(gfs_list_entry));
        ws[j].wbuf = malloc((size_t)(m * size));
        ws[j].rbuf = malloc((size_t)(m * size));
        if (!ws[j].ent || !ws[j].wbuf || !ws[j].rbuf) {
            ret = -ENOMEM;
            goto out_free;
        }
        for (int64_t i = 0; i < m; i++) {
            ws[j].ent[i].file_offset = i * 2 * size;
            ws[j].ent[i].mem_offset = i * size;
            ws[j].ent[i].size = size;
        }
    }

    double best[NPHASES];
    bool ok = true;
    for (int p = 0; p < NPHASES; p++)
        best[p] = 1e30;
    for (int r = 0; r < cf->reps; r++) {
        for (int pair = 0; pair < 2; pair++) {
            bool list = pair == 0;
            int wp = list ? W_LIST : W_CALLS, rp = list ? R_LIST : R_CALLS;
            int64_t err;
            for (int j = 0; j < k; j++)
                fill(ws[j].wbuf, (size_t)(ws[j].m * size),
                     (uint64_t)(((r * 2 + pair) * MAX_K + j) * 977 + size));
            int rc = truncate_all(ws, k);
            if (rc < 0) {
                die("truncate", rc);
                ret = rc;
                goto out_free;
            }
            double t = run_phase(ws, k, GFS_WRITE, list, &err);
            if (err) {
                die(phase_name[wp], err);
                ret = (int)err;
                goto out_free;
            }
            if (t < best[wp])
                best[wp] = t;
            t = run_phase(ws, k, GFS_READ, list, &err);
            if (err) {
                die(phase_name[rp], err);
                ret = (int)err;
                goto out_free;
            }
            if (t < best[rp])
                best[rp] = t;
            if (!verify(ws, k, list))
                ok = false;
        }
    }

    char sz[24];
    fmt_size(size, sz, sizeof(sz));
    double pieces = (double)(n / k * k), cpieces = (double)(ws[0].cm * k);
    double bytes = pieces * (double)size, cbytes = cpieces * (double)size;
    printf("%2d %6s %6" PRId64, k, sz, n);
    for (int pair = 0; pair < 2; pair++) {
        int lp = pair == 0 ? W_LIST : R_LIST,
            cp = pair == 0 ? W_CALLS : R_CALLS;
        double lrate = pieces / best[lp], crate = cpieces / best[cp];
        printf(" |%10.0f %8.1f %10.0f %8.1f %6.1fx", lrate,
               bytes / best[lp] / 1e6, crate, cbytes / best[cp] / 1e6,
               lrate / crate);
    }
    printf(" | %s\n", ok ? "ok" : "DATA MISMATCH");
    fflush(stdout);
    if (!ok)
        ret = 1;
out_free:
    for (int j = 0; j < k; j++) {
        free(ws[j].ent);
        free(ws[j].wbuf);
        free(ws[j].rbuf);
    }
    return ret;
}

/* One K: create the file, run every size, delete the file. */
static int run_k(const config *cf, int k)
{
    char name[64];
    int servers[MAX_K], kids[MAX_K];
    int ret = 0;
    snprintf(name, sizeof(name), "gbench.%ld.k%d", (long)getpid(), k);
    for (int j = 0; j < k; j++)
        servers[j] = j;
    int rc = gfs_create_file(name, k, servers);
    if (rc < 0) {
        die("create file", rc);
        return rc;
    }
    int fid = gfs_open_file(name);
    if (fid < 0) {
        die("open file", fid);
        ret = fid;
        goto out_delete;
    }
    rc = gfs_all_create(fid, FORK_NAME);
    if (rc < 0) {
        die("create forks", rc);
        ret = rc;
        goto out_close;
    }
    rc = gfs_all_open(fid, FORK_NAME, kids);
    if (rc < 0) {
        die("open forks", rc);
        ret = rc;
        goto out_close;
    }
    for (int s = 0; s < cf->nsizes; s++) {
        int64_t size = cf->sizes[s];
        int64_t n = cf->total / size;
        if (n > cf->nmax)
            n = cf->nmax;
        n = n / k * k;
        if (n < k)
            n = k;
        rc = run_case(cf, kids, k, size, n);
        if (rc < 0) {
            ret = rc;
            break;
        }
        if (rc > 0)
            ret = 1;
    }
    gfs_all_close(k, kids);
out_close:
    gfs_close_file(fid);
out_delete:
    rc = gfs_delete_file(name);
    if (rc < 0)
        die("delete file", rc);
    return ret;
}

static bool parse_size(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || v <= 0 || end == s)
        return false;
    int shift = 0;
    if (*end == 'k' || *end == 'K')
        shift = 10, end++;
    else if (*end == 'm' || *end == 'M')
        shift = 20, end++;
    else if (*end == 'g' || *end == 'G')
        shift = 30, end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || v > (INT64_MAX >> shift))
        return false;
    *out = (int64_t)v << shift;
    return true;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: gbench [-c CLUSTERFILE] [-k MAXSERVERS] [-N MAXPIECES]\n"
               "              [-T MAXBYTES] [-C MAXCALLS] [-r REPS] "
               "[-s SIZE,SIZE,...]\n"
               "  -c  cluster file (default $GALLEY_CLUSTER)\n"
               "  -k  largest number of servers to use, 1..4 (default 4)\n"
               "  -N  most pieces per case (default 4096)\n"
               "  -T  most bytes per case, K/M/G allowed (default 16M)\n"
               "  -C  most pieces per fork for the one-call-per-piece baseline "
               "(its\n"
               "      rate is measured on those; default all)\n"
               "  -r  repetitions per phase, best one reported (default 3)\n"
               "  -s  piece sizes (default 16,200,4K,64K,1M)\n");
}

/* Parse the command line into cf; -1 to go on, else the exit status. */
static int parse_opts(int argc, char **argv, config *cf)
{
    int opt;
    while ((opt = getopt(argc, argv, "c:k:N:T:C:r:s:h")) != -1) {
        switch (opt) {
        case 'c':
            cf->cluster = optarg;
            break;
        case 'k':
            cf->kmax = atoi(optarg);
            if (cf->kmax < 1 || cf->kmax > MAX_K) {
                fprintf(stderr, "gbench: -k must be 1..%d\n", MAX_K);
                return 2;
            }
            break;
        case 'N':
            if (!parse_size(optarg, &cf->nmax)) {
                fprintf(stderr, "gbench: bad -N '%s'\n", optarg);
                return 2;
            }
            break;
        case 'C':
            if (!parse_size(optarg, &cf->cmax) || cf->cmax < 1) {
                fprintf(stderr, "gbench: bad -C '%s'\n", optarg);
                return 2;
            }
            break;
        case 'T':
            if (!parse_size(optarg, &cf->total)) {
                fprintf(stderr, "gbench: bad -T '%s'\n", optarg);
                return 2;
            }
            break;
        case 'r':
            cf->reps = atoi(optarg);
            if (cf->reps < 1) {
                fprintf(stderr, "gbench: -r must be >= 1\n");
                return 2;
            }
            break;
        case 's': {
            char *save = NULL, *copy = strdup(optarg);
            for (char *t = strtok_r(copy, ",", &save); t;
                 t = strtok_r(NULL, ",", &save)) {
                if (cf->nsizes >= 16 ||
                    !parse_size(t, &cf->sizes[cf->nsizes])) {
                    fprintf(stderr, "gbench: bad size list '%s'\n", optarg);
                    free(copy);
                    return 2;
                }
                cf->nsizes++;
            }
            free(copy);
            break;
        }
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    return -1;
}

/* What is about to be measured, and the table's heading (stdout). */
static void print_header(const config *cf, const char *cl, int nserv, int kmax)
{
    printf("gbench: list I/O vs one call per piece on Galley forks\n");
    printf("cluster file:   %s (%d servers; using 1..%d)\n",
           cl ? cl : "(library default)", nserv, kmax);
    printf("piece sizes:   ");
    for (int s = 0; s < cf->nsizes; s++) {
        char sz[24];
        fmt_size(cf->sizes[s], sz, sizeof(sz));
        printf(" %s", sz);
    }
    printf(" bytes\n");
    printf("pieces N:       min(%" PRId64 ", %" PRId64
           " / size), a multiple of K\n",
           cf->nmax, cf->total);
    printf("placement:      K subfiles on servers 0..K-1, one fork each; "
           "piece i on fork i%%K,\n"
           "                stride 2*size within a fork (non-contiguous); "
           "one thread per fork\n");
    printf("methods:        list = one gfs_listio per fork; calls = one "
           "gfs_write/gfs_read per piece\n");
    printf("timing:         best of %d; MB = 10^6 bytes; x = list speed / "
           "calls speed\n\n",
           cf->reps);
    printf("%2s %6s %6s | %-46s | %-46s |\n", "", "", "", "WRITE", "READ");
    printf("%2s %6s %6s", "K", "size", "N");
    for (int i = 0; i < 2; i++)
        printf(" |%10s %8s %10s %8s %7s", "list pc/s", "MB/s", "calls pc/s",
               "MB/s", "x");
    printf(" | check\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    config cf = {.cluster = NULL,
                 .kmax = MAX_K,
                 .nmax = 4096,
                 .cmax = 0,
                 .total = 16 << 20,
                 .reps = 3,
                 .nsizes = 0};
    int ret = parse_opts(argc, argv, &cf);
    if (ret >= 0)
        return ret;
    if (cf.nsizes == 0) {
        cf.nsizes = (int)(sizeof(default_sizes) / sizeof(*default_sizes));
        memcpy(cf.sizes, default_sizes, sizeof(default_sizes));
    }

    int rc = gfs_init(cf.cluster);
    if (rc < 0) {
        die("cannot start the galley client", rc);
        return 1;
    }
    int nserv = gfs_num_servers();
    int kmax = cf.kmax < nserv ? cf.kmax : nserv;
    const char *cl = cf.cluster ? cf.cluster : getenv("GALLEY_CLUSTER");

    print_header(&cf, cl, nserv, kmax);

    ret = 0;
    for (int k = 1; k <= kmax; k++) {
        rc = run_k(&cf, k);
        if (rc < 0) {
            ret = 1;
            break;
        }
        if (rc > 0)
            ret = 1;
    }
    gfs_finalize();
    return ret;
}
