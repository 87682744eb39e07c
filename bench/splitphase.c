/*
 * splitphase.c -- the experiment of the split-phase GFS-GROUP paper
 * (Khanna & Kotz, PCS-TR97-312, section 4), scaled down.
 *
 * One client, four servers.  A file of 4 subfiles (on servers 0..3) gets
 * one fork, "matrix", in every subfile.  A matrix of ROWS x COLS elements
 * is written column by column: column c goes to the fork of subfile c % 4,
 * at fork offset ((c / 4) * ROWS + r) * E for element r -- "the first
 * column to the first subfile, the next column to the next subfile, and
 * so on".  Every program fills (write) or checks (read) a buffer of four
 * columns -- one per server -- and must finish that group of columns before
 * reusing the buffer.  Programs:
 *
 *   synchronous    gfs_write / gfs_read per element, one at a time
 *   sync-listio    one blocking gfs_listio per column (the paper's
 *                  "synchronous": no overlap between servers)
 *   asynchronous   gfs_nb_write / gfs_nb_read per element, at most -w
 *                  requests outstanding, all waited for after each group
 *                  of four columns
 *   async-listio   one gfs_nb_listio per column, waited for after each
 *                  group (the paper's "asynchronous": what group-nosend
 *                  does, written by hand)
 *   group-nosend   gfs_group_write / gfs_group_read per element,
 *                  gfs_group_waitio after each group; policy nosend
 *   group-send     the same with policy send
 *
 * Two cases, as in the paper: 16-byte elements (paper: 4096 x 4096) and
 * 16384-byte elements (paper: 128 x 128), both 256 MB there; here scaled
 * down (-a, -b) so that a run fits a small shared machine.
 *
 * Timing, as in the paper: a write run ends after gfs_sync of the four
 * forks ("after flushing the caches"), before closing; reads are timed to
 * the last completed group.  Filling an element (the "computation") is
 * timed; checking what was read is not (its time is subtracted).  Before
 * every write run the forks are truncated to zero (not timed); the read
 * run that follows reads what that write run wrote, so reads come from
 * the servers' caches (the paper read from disk).  Each program runs -r
 * times; mean and standard deviation are printed, write and read side by
 * side.
 *
 * Threads: single-threaded (the library's workers run non-blocking and
 * group requests).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "galley.h"
#include "galley_group.h"

#define NSERV 4
#define FORK_NAME "matrix"
#define MAX_REPS 50

enum prog {
    P_SYNC,
    P_SYNC_LIST,
    P_ASYNC,
    P_ASYNC_LIST,
    P_NOSEND,
    P_SEND,
    NPROGS
};
static const char *prog_name[NPROGS] = {"synchronous",  "sync-listio",
                                        "asynchronous", "async-listio",
                                        "group-nosend", "group-send"};

typedef struct matrix_case {
    int64_t rows, cols, esize;
} matrix_case;

typedef struct config {
    const char *cluster;
    int reps;
    int window;
    matrix_case mc[2];
    bool run[NPROGS];
} config;

/* What one program did in one case, over the repetitions. */
typedef struct result {
    double w[MAX_REPS], r[MAX_REPS];
    int n;
    bool bad;         /* a read returned wrong data or an error */
    uint64_t wgroups; /* group programs: groups of the last write run */
    uint64_t rgroups;
} result;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what, int64_t rc)
{
    fprintf(stderr, "splitphase: %s: %s\n", what,
            rc < 0 ? gfs_strerror((int)rc) : "failed");
    exit(1);
}

/* ------------------------------------------------------- the matrix ---- */

/* Element (r, c): a 16-byte stamp, then a byte pattern. */
static void fill_elem(unsigned char *p, int64_t r, int64_t c, int64_t e)
{
    uint64_t a = (uint64_t)r << 32 | (uint64_t)c;
    uint64_t b = a * 0x9e3779b97f4a7c15ULL ^ 0x5bd1e995ULL;
    memcpy(p, &a, 8);
    memcpy(p + 8, &b, 8);
    if (e > 16)
        memset(p + 16, (int)((r * 131 + c * 7) & 0xff), (size_t)(e - 16));
}

static bool check_elem(const unsigned char *p, int64_t r, int64_t c, int64_t e)
{
    unsigned char want[16];
    fill_elem(want, r, c, 16);
    if (memcmp(p, want, 16) != 0)
        return false;
    unsigned char v = (unsigned char)((r * 131 + c * 7) & 0xff);
    for (int64_t i = 16; i < e; i++)
        if (p[i] != v)
            return false;
    return true;
}

/* ------------------------------------------------------- one run ------- */

typedef struct run_state {
    const config *cf;
    const matrix_case *mc;
    int kids[NSERV];
    unsigned char *buf;  /* NSERV columns, each contiguous */
    gfs_list_entry *ent; /* one column's list (rows entries) */
    gfs_handle *ring;    /* asynchronous: outstanding handles */
    double check_time;   /* time spent checking reads (subtracted) */
    bool bad;
} run_state;

static int64_t elem_off(const matrix_case *mc, int64_t r, int64_t c)
{
    return ((c / NSERV) * mc->rows + r) * mc->esize;
}

static unsigned char *elem_mem(run_state *s, int64_t r, int64_t c)
{
    return s->buf + ((c % NSERV) * s->mc->rows + r) * s->mc->esize;
}

/* Check the columns c0..c1-1 now in the buffer (not timed). */
static void check_group(run_state *s, int64_t c0, int64_t c1)
{
    double t = now_s();
    for (int64_t c = c0; c < c1; c++)
        for (int64_t r = 0; r < s->mc->rows; r++)
            if (!check_elem(elem_mem(s, r, c), r, c, s->mc->esize))
                s->bad = true;
    s->check_time += now_s() - t;
}

static void column_list(run_state *s, int64_t c)
{
    for (int64_t r = 0; r < s->mc->rows; r++)
        s->ent[r] = (gfs_list_entry){
            elem_off(s->mc, r, c),
            ((c % NSERV) * s->mc->rows + r) * s->mc->esize, s->mc->esize};
}

/* One program, one direction, the whole matrix.  Returns seconds. */
static double run_prog(run_state *s, int prog, int op)
{
    const matrix_case *mc = s->mc;
    const int64_t E = mc->esize;
    int W = s->cf->window, head = 0, inflight = 0;
    int64_t rc;
    s->check_time = 0;
    if (prog == P_NOSEND || prog == P_SEND) {
        gfs_group_set_policy(prog == P_SEND ? GFS_GROUP_SEND
                                            : GFS_GROUP_NOSEND);
        gfs_group_reset_stats();
    }
    double t0 = now_s();
    for (int64_t c0 = 0; c0 < mc->cols; c0 += NSERV) {
        int64_t c1 = c0 + NSERV < mc->cols ? c0 + NSERV : mc->cols;
        gfs_handle lh[NSERV];
        for (int64_t c = c0; c < c1; c++) {
            int kid = s->kids[c % NSERV];
            if (op == GFS_WRITE)
                for (int64_t r = 0; r < mc->rows; r++)
                    fill_elem(elem_mem(s, r, c), r, c, E);
            switch (prog) {
            case P_SYNC:
                for (int64_t r = 0; r < mc->rows; r++) {
                    rc = op == GFS_WRITE ? gfs_write(kid, elem_off(mc, r, c),
                                                     elem_mem(s, r, c), E)
                                         : gfs_read(kid, elem_off(mc, r, c),
                                                    elem_mem(s, r, c), E);
                    if (rc != E)
                        die("gfs_write/gfs_read", rc);
                }
                break;
            case P_SYNC_LIST:
                column_list(s, c);
                rc = gfs_listio(kid, op, mc->rows, s->ent, s->buf);
                if (rc != mc->rows * E)
                    die("gfs_listio", rc);
                break;
            case P_ASYNC:
                for (int64_t r = 0; r < mc->rows; r++) {
                    if (inflight == W) {
                        rc = gfs_wait(s->ring[head]);
                        if (rc != E)
                            die("gfs_wait", rc);
                        head = (head + 1) % W;
                        inflight--;
                    }
                    gfs_handle h = gfs_new_handle();
                    if (h < 0)
                        die("gfs_new_handle", h);
                    rc = op == GFS_WRITE
                             ? gfs_nb_write(h, kid, elem_off(mc, r, c),
                                            elem_mem(s, r, c), E)
                             : gfs_nb_read(h, kid, elem_off(mc, r, c),
                                           elem_mem(s, r, c), E);
                    if (rc)
                        die("gfs_nb_write/gfs_nb_read", rc);
                    s->ring[(head + inflight) % W] = h;
                    inflight++;
                }
                break;
            case P_ASYNC_LIST: {
                column_list(s, c); /* the list is copied by the call */
                lh[c - c0] = gfs_new_handle();
                rc = gfs_nb_listio(lh[c - c0], kid, op, mc->rows, s->ent,
                                   s->buf);
                if (rc)
                    die("gfs_nb_listio", rc);
                break;
            }
            default:
                for (int64_t r = 0; r < mc->rows; r++) {
                    rc = op == GFS_WRITE
                             ? gfs_group_write(kid, elem_off(mc, r, c),
                                               elem_mem(s, r, c), E)
                             : gfs_group_read(kid, elem_off(mc, r, c),
                                              elem_mem(s, r, c), E);
                    if (rc)
                        die("gfs_group_write/gfs_group_read", rc);
                }
            }
        }
        /* the group of columns must be complete before the buffer is
         * refilled (write) or used (read) */
        switch (prog) {
        case P_ASYNC:
            while (inflight > 0) {
                rc = gfs_wait(s->ring[head]);
                if (rc != E)
                    die("gfs_wait", rc);
                head = (head + 1) % W;
                inflight--;
            }
            break;
        case P_ASYNC_LIST: {
            int64_t res[NSERV];
            rc = gfs_waitall((int)(c1 - c0), lh, res);
            if (rc)
                die("gfs_waitall", rc);
            break;
        }
        case P_NOSEND:
        case P_SEND:
            rc = gfs_group_waitio();
            if (rc)
                die("gfs_group_waitio", rc);
            break;
        default:
            break;
        }
        if (op == GFS_READ)
            check_group(s, c0, c1);
    }
    if (op == GFS_WRITE)
        for (int i = 0; i < NSERV; i++)
            if ((rc = gfs_sync(s->kids[i])) != 0)
                die("gfs_sync", rc);
    return now_s() - t0 - s->check_time;
}

/* ------------------------------------------------------------ output --- */

static void mean_sd(const double *v, int n, double *mean, double *sd)
{
    double m = 0, q = 0;
    for (int i = 0; i < n; i++)
        m += v[i];
    m /= n;
    for (int i = 0; i < n; i++)
        q += (v[i] - m) * (v[i] - m);
    *mean = m;
    *sd = n > 1 ? sqrt(q / (n - 1)) : 0;
}

static void fmt_mb(char *out, size_t len, int64_t bytes)
{
    if (bytes >= (1 << 20))
        snprintf(out, len, "%.1f MB", bytes / 1048576.0);
    else
        snprintf(out, len, "%.0f KB", bytes / 1024.0);
}

/* MB/s with enough digits to tell small rates apart. */
static void fmt_rate(char *out, size_t len, double mbs)
{
    snprintf(out, len, mbs < 1 ? "%.3f" : mbs < 100 ? "%.1f" : "%.0f", mbs);
}

static void print_table(const config *cf, result res[2][NPROGS])
{
    char h[2][96];
    for (int k = 0; k < 2; k++) {
        char mb[32];
        const matrix_case *mc = &cf->mc[k];
        fmt_mb(mb, sizeof(mb), mc->rows * mc->cols * mc->esize);
        snprintf(h[k], sizeof(h[k]),
                 "%" PRId64 " B el., %" PRId64 "x%" PRId64 " (%s)", mc->esize,
                 mc->rows, mc->cols, mb);
    }
    printf("\nTimes in seconds, mean (std dev) of %d runs; MB/s = matrix "
           "bytes / mean time.\n\n",
           cf->reps);
    printf("%-13s | %-43s | %-43s\n", "", h[0], h[1]);
    printf("%-13s | %-21s %-21s | %-21s %-21s\n", "program", "write", "read",
           "write", "read");
    printf("%.13s-+-%.43s-+-%.43s\n",
           "----------------------------------------------------------",
           "----------------------------------------------------------",
           "----------------------------------------------------------");
    for (int p = 0; p < NPROGS; p++) {
        if (!cf->run[p])
            continue;
        printf("%-13s |", prog_name[p]);
        for (int k = 0; k < 2; k++) {
            result *r = &res[k][p];
            double bytes =
                (double)(cf->mc[k].rows * cf->mc[k].cols * cf->mc[k].esize);
            double wm, ws, rm, rs;
            mean_sd(r->w, r->n, &wm, &ws);
            mean_sd(r->r, r->n, &rm, &rs);
            char a[48], b[48], wr[16], rr[16];
            fmt_rate(wr, sizeof(wr), bytes / wm / 1e6);
            fmt_rate(rr, sizeof(rr), bytes / rm / 1e6);
            snprintf(a, sizeof(a), "%.3f (%.3f) %s", wm, ws, wr);
            snprintf(b, sizeof(b), "%.3f (%.3f) %s%s", rm, rs, rr,
                     r->bad ? "!" : "");
            printf(" %-21s %-21s%s", a, b, k == 0 ? " |" : "\n");
        }
    }
    printf("\n(columns: seconds, (std dev), MB/s; '!' = data read back was "
           "wrong)\n");
    printf("\nGFS-GROUP list I/O requests per run (write / read), from "
           "gfs_group_get_stats:\n");
    for (int p = P_NOSEND; p <= P_SEND; p++) {
        if (!cf->run[p])
            continue;
        printf("  %-13s", prog_name[p]);
        for (int k = 0; k < 2; k++)
            printf("  %s: %" PRIu64 " / %" PRIu64 " (of %" PRId64 " requests)",
                   k ? "large" : "small", res[k][p].wgroups, res[k][p].rgroups,
                   cf->mc[k].rows * cf->mc[k].cols);
        printf("\n");
    }
}

/* ------------------------------------------------------------ main ----- */

static bool parse_dims(const char *s, int64_t *r, int64_t *c)
{
    char *end;
    long long a = strtoll(s, &end, 10);
    if (*end != 'x' || a < 1)
        return false;
    long long b = strtoll(end + 1, &end, 10);
    if (*end || b < 1)
        return false;
    *r = a;
    *c = b;
    return true;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: splitphase [-c CLUSTER] [-r REPS] [-w WINDOW] "
            "[-a ROWSxCOLS] [-b ROWSxCOLS] [-p LIST]\n"
            "  -c FILE   cluster file (default $GALLEY_CLUSTER); needs 4 "
            "servers\n"
            "  -r N      runs of every program (default 3)\n"
            "  -w N      asynchronous: requests outstanding (default 64)\n"
            "  -a RxC    16-byte-element matrix (default 256x256; paper "
            "4096x4096)\n"
            "  -b RxC    16 KB-element matrix (default 32x32; paper "
            "128x128)\n"
            "  -p LIST   programs, comma-separated (default all): "
            "synchronous,sync-listio,\n"
            "            asynchronous,async-listio,group-nosend,group-send\n");
}

/* Parse the command line into cf; -1 to go on, else the exit status. */
static int parse_opts(int argc, char **argv, config *cf)
{
    int opt;
    while ((opt = getopt(argc, argv, "c:r:w:a:b:p:h")) != -1) {
        switch (opt) {
        case 'c':
            cf->cluster = optarg;
            break;
        case 'r':
            cf->reps = atoi(optarg);
            if (cf->reps < 1 || cf->reps > MAX_REPS) {
                fprintf(stderr, "splitphase: -r: 1..%d\n", MAX_REPS);
                return 2;
            }
            break;
        case 'w':
            cf->window = atoi(optarg);
            if (cf->window < 1 || cf->window > 100000) {
                fprintf(stderr, "splitphase: -w: 1..100000\n");
                return 2;
            }
            break;
        case 'a':
        case 'b':
            if (!parse_dims(optarg, &cf->mc[opt - 'a'].rows,
                            &cf->mc[opt - 'a'].cols)) {
                fprintf(stderr, "splitphase: -%c: expected ROWSxCOLS\n", opt);
                return 2;
            }
            break;
        case 'p': {
            for (int p = 0; p < NPROGS; p++)
                cf->run[p] = false;
            char *list = strdup(optarg), *save = NULL;
            for (char *t = strtok_r(list, ",", &save); t;
                 t = strtok_r(NULL, ",", &save)) {
                int p = 0;
                while (p < NPROGS && strcmp(t, prog_name[p]))
                    p++;
                if (p == NPROGS) {
                    fprintf(stderr, "splitphase: unknown program '%s'\n", t);
                    return 2;
                }
                cf->run[p] = true;
            }
            free(list);
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
    return -1;
}

/* What is about to be measured (stdout). */
static void print_header(const config *cf)
{
    printf("splitphase: the GFS-GROUP paper's matrix experiment, scaled "
           "down\n");
    printf("  servers %d (one fork per server; column c -> server c %% 4), "
           "one client\n",
           NSERV);
    for (int k = 0; k < 2; k++) {
        char mb[32];
        fmt_mb(mb, sizeof(mb),
               cf->mc[k].rows * cf->mc[k].cols * cf->mc[k].esize);
        printf("  case %d: %" PRId64 " x %" PRId64 " matrix of %" PRId64
               "-byte elements = %s (paper: %s, 256 MB)\n",
               k + 1, cf->mc[k].rows, cf->mc[k].cols, cf->mc[k].esize, mb,
               k ? "128 x 128" : "4096 x 4096");
    }
    printf("  buffer: 4 columns; runs per program: %d; asynchronous window: "
           "%d requests\n",
           cf->reps, cf->window);
    printf("  writes timed to gfs_sync of the 4 forks; reads of what was "
           "just written (server cache)\n");
    fflush(stdout);
}

/* Run every selected program cf->reps times on matrix case k of the
 * file fid, into res (one result per program). */
static void run_case(config *cf, int fid, int k, result *res)
{
    int rc;
    matrix_case *mc = &cf->mc[k];
    run_state s = {.cf = cf, .mc = mc};
    if ((rc = gfs_all_open(fid, FORK_NAME, s.kids)) != 0)
        die("gfs_all_open", rc);
    s.buf = malloc((size_t)(NSERV * mc->rows * mc->esize));
    s.ent = malloc(sizeof(*s.ent) * (size_t)mc->rows);
    s.ring = malloc(sizeof(*s.ring) * (size_t)cf->window);
    if (!s.buf || !s.ent || !s.ring)
        die("out of memory", -ENOMEM);
    for (int rep = 0; rep < cf->reps; rep++) {
        for (int p = 0; p < NPROGS; p++) {
            if (!cf->run[p])
                continue;
            for (int i = 0; i < NSERV; i++)
                if ((rc = gfs_truncate_fork(s.kids[i], 0)) != 0)
                    die("gfs_truncate_fork", rc);
            result *r = &res[p];
            s.bad = false;
            r->w[r->n] = run_prog(&s, p, GFS_WRITE);
            gfs_group_stats gs;
            gfs_group_get_stats(&gs);
            r->wgroups = gs.groups;
            memset(s.buf, 0, (size_t)(NSERV * mc->rows * mc->esize));
            r->r[r->n] = run_prog(&s, p, GFS_READ);
            gfs_group_get_stats(&gs);
            r->rgroups = gs.groups;
            r->bad |= s.bad;
            r->n++;
            fprintf(stderr,
                    "  case %d run %d %-13s write %.3f s read "
                    "%.3f s%s\n",
                    k + 1, rep + 1, prog_name[p], r->w[r->n - 1],
                    r->r[r->n - 1], s.bad ? " WRONG DATA" : "");
        }
    }
    gfs_all_close(NSERV, s.kids);
    free(s.buf);
    free(s.ent);
    free(s.ring);
}

int main(int argc, char **argv)
{
    config cf = {.cluster = NULL,
                 .reps = 3,
                 .window = 64,
                 .mc = {{256, 256, 16}, {32, 32, 16384}}};
    for (int p = 0; p < NPROGS; p++)
        cf.run[p] = true;
    int ret = parse_opts(argc, argv, &cf);
    if (ret >= 0)
        return ret;
    int rc = gfs_init(cf.cluster);
    if (rc)
        die("gfs_init", rc);
    if (gfs_num_servers() < NSERV) {
        fprintf(stderr, "splitphase: needs %d servers, the cluster has %d\n",
                NSERV, gfs_num_servers());
        return 1;
    }
    char name[64];
    snprintf(name, sizeof(name), "splitphase.%ld", (long)getpid());
    int servers[NSERV] = {0, 1, 2, 3};
    if ((rc = gfs_create_file(name, NSERV, servers)) != 0)
        die("gfs_create_file", rc);
    int fid = gfs_open_file(name);
    if (fid < 0)
        die("gfs_open_file", fid);
    if ((rc = gfs_all_create(fid, FORK_NAME)) != 0)
        die("gfs_all_create", rc);

    print_header(&cf);

    static result res[2][NPROGS];
    for (int k = 0; k < 2; k++)
        run_case(&cf, fid, k, res[k]);
    print_table(&cf, res);
    gfs_close_file(fid);
    gfs_delete_file(name);
    gfs_finalize();
    bool bad = false;
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < NPROGS; p++)
            bad |= res[k][p].bad;
    return bad ? 1 : 0;
}
