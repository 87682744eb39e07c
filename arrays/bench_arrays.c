/*
 * bench_arrays.c -- the Panda-on-Galley experiment, scaled to one machine.
 *
 * One timestep of a 2-D array of doubles of several sizes, written and read
 * back with the array library, with the memory distributions (*,*),
 * (BLOCK,*), (*,BLOCK), (BLOCK,BLOCK) over the processes and the disk
 * distribution (BLOCK,*) over 1..4 servers (subfiles: striping_factor = the
 * number of chunks, striping_unit = one chunk).  In the same run and with
 * the same arrays:
 *
 *   ufs        the library writing to a local directory (ROMIO ufs:) --
 *              the baseline;
 *   segmented  plain MPI-IO on galley:, each process writing (reading) one
 *              contiguous segment of size/nprocs bytes with
 *              MPI_File_write_at_all, same striping and hints as the
 *              library gives its galley files -- the best case for
 *              the same bytes; the ratio (BLOCK,BLOCK)/segmented is printed
 *              (target >= 0.8).
 *
 * Each figure is size / mean time over --reps repetitions, the time taken
 * between two barriers around the call, as in the paper; beside it the
 * paper's coefficient (max - min) / mean.  Files are created and opened
 * before timing (ga_group_prepare); nothing is synced (MPI_File_sync).  The
 * servers' caches are not flushed between write and read.
 *
 * usage: mpiexec -n 4 bench_arrays [--galley NAME] [--local DIR]
 *          [--sizes 16,64] [--servers 1,2,3,4] [--reps 3]
 *          [--dists '*,*;BLOCK,*;*,BLOCK;BLOCK,BLOCK'] [--cb server|two_phase]
 *          [--hint KEY=VALUE]...
 *   --galley NAME   base name on galley (default /bench_arrays); needs
 *                   GALLEY_CLUSTER; "-" skips the galley runs
 *   --local DIR     directory for the ufs baseline (default $TMPDIR or /tmp)
 *   --cb, --hint    galley_cb and other MPI_Info hints for every data file
 *                   (galley and ufs; e.g. --hint romio_cb_write=disable)
 */
#include "galley_array.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXL 16

static int me, nprocs;
static int reps = 3;
static const char *cb = NULL;
static char *hint_kv[MAXL];
static int nhints;

typedef struct result {
    double w, wc, r, rc; /* MB/s and coefficients; < 0: not measured */
} result;

static void die(const char *what, int rc)
{
    if (me == 0)
        fprintf(stderr, "bench_arrays: %s: %s: %s\n", what, ga_strerror(rc),
                ga_errmsg());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static int parse_list(const char *s, int *out)
{
    int n = 0;
    while (*s && n < MAXL) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v <= 0)
            return -1;
        out[n++] = (int)v;
        s = *end == ',' ? end + 1 : end;
        if (end == s && *s)
            return -1;
    }
    return n;
}

static void stats(const double *t, double mb, double *rate, double *coef)
{
    double sum = 0, lo = t[0], hi = t[0];
    for (int i = 0; i < reps; i++) {
        sum += t[i];
        lo = t[i] < lo ? t[i] : lo;
        hi = t[i] > hi ? t[i] : hi;
    }
    double mean = sum / reps;
    *rate = mb / mean;
    *coef = (hi - lo) / mean;
}

static MPI_Info hints(int nserv, int64_t unit)
{
    MPI_Info info;
    char v[32];
    MPI_Info_create(&info);
    if (cb)
        MPI_Info_set(info, "galley_cb", cb);
    for (int i = 0; i < nhints; i++) {
        char *eq = strchr(hint_kv[i], '=');
        *eq = 0;
        MPI_Info_set(info, hint_kv[i], eq + 1);
        *eq = '=';
    }
    if (nserv > 0) {
        /* the striping and aggregators the library gives its galley files */
        int f1, f2;
        snprintf(v, sizeof(v), "%d", nserv);
        MPI_Info_set(info, "striping_factor", v);
        snprintf(v, sizeof(v), "%lld", (long long)unit);
        MPI_Info_set(info, "striping_unit", v);
        MPI_Info_get(info, "cb_nodes", sizeof(v) - 1, v, &f1);
        MPI_Info_get(info, "cb_config_list", sizeof(v) - 1, v, &f2);
        if (!f1 && !f2) {
            snprintf(v, sizeof(v), "%d", nserv < nprocs ? nserv : nprocs);
            MPI_Info_set(info, "cb_nodes", v);
            MPI_Info_set(info, "cb_config_list", "*:*");
        }
        MPI_Info_get(info, "romio_cb_write", sizeof(v) - 1, v, &f1);
        if (!f1)
            MPI_Info_set(info, "romio_cb_write", "disable");
        MPI_Info_get(info, "romio_cb_read", sizeof(v) - 1, v, &f1);
        if (!f1)
            MPI_Info_set(info, "romio_cb_read", "disable");
    }
    return info;
}

static void remove_files(const char *path, int ngroup_files)
{
    char f[1024];
    if (me == 0) {
        snprintf(f, sizeof(f), "%s.schema", path);
        MPI_File_delete(f, MPI_INFO_NULL);
        if (ngroup_files) {
            snprintf(f, sizeof(f), "%s.A", path);
            MPI_File_delete(f, MPI_INFO_NULL);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* One timestep of the array through the library; nserv 0 = ufs. */
static result run_array(const char *path, int64_t rows, int64_t cols,
                        const char *dist, int nserv)
{
    result res;
    ga_layout mem, disk;
    char dtext[32];
    snprintf(dtext, sizeof(dtext), "BLOCK,*@%d", nserv > 0 ? nserv : 4);
    if (ga_layout_parse(dist, &mem) || ga_layout_parse(dtext, &disk))
        die("layout", -22);
    int64_t dims[2] = {rows, cols};
    ga_array_spec spec = {"A", 2, dims, 8, &mem, &disk, NULL};
    ga_array *a;
    int rc = ga_array_create(MPI_COMM_WORLD, &spec, &a);
    if (rc)
        die("array", rc);
    int64_t cnt[2];
    int64_t bytes = ga_array_local(a, cnt, NULL);
    double *buf = ga_array_alloc(a);
    if (bytes && !buf)
        die("alloc", -12);
    for (int64_t i = 0; i < bytes / 8; i++)
        buf[i] = (double)(me * 1000003 + i);
    MPI_Info info = hints(0, 0); /* the library adds the striping itself */
    ga_group *g;
    rc =
        ga_group_create(MPI_COMM_WORLD, GA_TIMESTEP, path, GA_CREATE, info, &g);
    if (!rc)
        rc = ga_group_insert(g, a);
    if (!rc)
        rc = ga_group_prepare(g);
    if (rc)
        die(path, rc);
    double tw[64] = {0}, tr[64] = {0};
    double mb = (double)rows * cols * 8 / 1048576.0;
    for (int i = 0; i < reps; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        rc = ga_timestep(g, i);
        if (rc < 0)
            die("timestep", rc);
        MPI_Barrier(MPI_COMM_WORLD);
        tw[i] = MPI_Wtime() - t0;
    }
    for (int i = 0; i < reps; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        rc = ga_timestep_read(g, i, NULL);
        if (rc < 0)
            die("timestep read", rc);
        MPI_Barrier(MPI_COMM_WORLD);
        tr[i] = MPI_Wtime() - t0;
    }
    /* a quick check that the read brought the data back */
    int bad = 0;
    for (int64_t i = 0; i < bytes / 8; i++)
        bad += buf[i] != (double)(me * 1000003 + i);
    if (bad)
        die("read back: wrong data", -5);
    stats(tw, mb, &res.w, &res.wc);
    stats(tr, mb, &res.r, &res.rc);
    rc = ga_group_free(g);
    if (rc)
        die("close", rc);
    ga_array_free(a);
    MPI_Info_free(&info);
    remove_files(path, 1);
    return res;
}

/* Each process one contiguous segment, plain MPI-IO. */
static result run_segmented(const char *path, int64_t total, int nserv)
{
    result res;
    int64_t seg = total / nprocs;
    char *buf = malloc((size_t)seg);
    memset(buf, me + 1, (size_t)seg);
    MPI_Info info = hints(nserv, nserv > 0 ? (total + nserv - 1) / nserv : 0);
    MPI_File fh;
    if (me == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    int e = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                          info, &fh);
    if (e != MPI_SUCCESS)
        die("open segmented", GA_EMPI);
    double tw[64] = {0}, tr[64] = {0}, mb = (double)total / 1048576.0;
    for (int i = 0; i < reps; i++) {
        MPI_Offset off = (MPI_Offset)i * total + (MPI_Offset)me * seg;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        e = MPI_File_write_at_all(fh, off, buf, (int)seg, MPI_BYTE,
                                  MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
        tw[i] = MPI_Wtime() - t0;
        if (e != MPI_SUCCESS)
            die("segmented write", GA_EMPI);
    }
    for (int i = 0; i < reps; i++) {
        MPI_Offset off = (MPI_Offset)i * total + (MPI_Offset)me * seg;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        e = MPI_File_read_at_all(fh, off, buf, (int)seg, MPI_BYTE,
                                 MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
        tr[i] = MPI_Wtime() - t0;
        if (e != MPI_SUCCESS)
            die("segmented read", GA_EMPI);
    }
    MPI_File_close(&fh);
    if (me == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    MPI_Info_free(&info);
    free(buf);
    stats(tw, mb, &res.w, &res.wc);
    stats(tr, mb, &res.r, &res.rc);
    return res;
}

static void cell(double v, double c)
{
    if (v < 0)
        printf(" %15s", "-");
    else
        printf(" %8.1f (%.2f)", v, c);
}

/* ------------------------------------------------------------- driver --- */

typedef struct config {
    const char *gbase, *ldir;
    int sizes[MAXL], nsizes, servers[MAXL], nservers;
    char dists[8][64];
    int ndists;
    int galley; /* galley runs wanted (--galley is not "-") */
} config;

/* Figures: size x (dists + segmented) x (servers + ufs). */
typedef result table[MAXL][9][MAXL + 1];

/* End the run before any measurement (bad usage). */
static void quit(int status)
{
    MPI_Finalize();
    exit(status);
}

/* The command line into *c (and the globals reps, cb, hint_kv); a bad one
 * ends the run with status 2. */
static void parse_args(int argc, char **argv, config *c)
{
    const char *dists_text = "*,*;BLOCK,*;*,BLOCK;BLOCK,BLOCK";
    *c = (config){.gbase = "/bench_arrays",
                  .ldir = getenv("TMPDIR"),
                  .sizes = {16, 64},
                  .nsizes = 2,
                  .servers = {1, 2, 3, 4},
                  .nservers = 4};
    if (!c->ldir)
        c->ldir = "/tmp";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--galley"))
            c->gbase = v, i++;
        else if (!strcmp(a, "--local"))
            c->ldir = v, i++;
        else if (!strcmp(a, "--sizes"))
            c->nsizes = parse_list(v, c->sizes), i++;
        else if (!strcmp(a, "--servers"))
            c->nservers = parse_list(v, c->servers), i++;
        else if (!strcmp(a, "--reps"))
            reps = atoi(v), i++;
        else if (!strcmp(a, "--dists"))
            dists_text = v, i++;
        else if (!strcmp(a, "--cb"))
            cb = v, i++;
        else if (!strcmp(a, "--hint") && strchr(v, '=') && nhints < MAXL)
            hint_kv[nhints++] = argv[++i];
        else {
            if (me == 0)
                fprintf(stderr,
                        "bench_arrays: unknown option %s (see the source "
                        "header for usage)\n",
                        a);
            quit(2);
        }
    }
    if (c->nsizes < 1 || c->nservers < 1 || reps < 1 || reps > 64) {
        if (me == 0)
            fprintf(stderr, "bench_arrays: bad --sizes, --servers or --reps\n");
        quit(2);
    }
    char tmp[512];
    snprintf(tmp, sizeof(tmp), "%s", dists_text);
    for (char *t = strtok(tmp, ";"); t && c->ndists < 8; t = strtok(NULL, ";"))
        snprintf(c->dists[c->ndists++], sizeof(c->dists[0]), "%s", t);
    c->galley = strcmp(c->gbase, "-") != 0;
}

static void print_header(const config *c)
{
    printf("bench_arrays: %d processes, 2-D arrays of 8-byte elements "
           "(rows 2048), "
           "one timestep, %d repetitions\n",
           nprocs, reps);
    printf("  memory distributions:");
    for (int d = 0; d < c->ndists; d++)
        printf(" (%s)", c->dists[d]);
    printf("\n  disk distribution (BLOCK,*) over S chunks = S servers "
           "(striping_factor S, striping_unit one chunk)\n");
    printf("  galley hints (the library's defaults unless --hint/--cb): "
           "romio_cb_write=disable romio_cb_read=disable cb_nodes=S "
           "cb_config_list=*:*\n");
    printf("  galley: %s (galley_cb %s); ufs baseline: ufs:%s (disk (BLOCK,*) "
           "over 4 chunks)\n",
           c->galley ? c->gbase : "skipped", cb ? cb : "default", c->ldir);
    for (int i = 0; i < nhints; i++)
        printf("  hint %s\n", hint_kv[i]);
    printf("  segmented: each process one contiguous size/%d segment, "
           "MPI_File_write_at_all/read_at_all on galley:, same striping\n",
           nprocs);
    printf("  MB/s = size / mean time between barriers; (coef) = "
           "(max-min)/mean; "
           "caches not flushed\n");
    fflush(stdout);
}

/* Every run of one size (index si): the library per distribution on galley
 * (each server count) and ufs, then the segmented baseline. */
static void measure_size(const config *c, int si, table res)
{
    int64_t rows = 2048, cols = (int64_t)c->sizes[si] * 64; /* 8-byte elems */
    int ndists = c->ndists, nservers = c->nservers;
    for (int d = 0; d <= ndists; d++)
        for (int k = 0; k <= nservers; k++)
            res[si][d][k].w = res[si][d][k].r = -1;
    char path[1024];
    for (int d = 0; d < ndists; d++) {
        if (c->galley)
            for (int k = 0; k < nservers; k++) {
                snprintf(path, sizeof(path), "galley:%s.%d.%d.%d", c->gbase,
                         c->sizes[si], d, c->servers[k]);
                res[si][d][k] =
                    run_array(path, rows, cols, c->dists[d], c->servers[k]);
            }
        snprintf(path, sizeof(path), "ufs:%s/bench_arrays.%d.%d", c->ldir,
                 c->sizes[si], d);
        res[si][d][nservers] = run_array(path, rows, cols, c->dists[d], 0);
    }
    if (c->galley)
        for (int k = 0; k < nservers; k++) {
            snprintf(path, sizeof(path), "galley:%s.seg.%d.%d", c->gbase,
                     c->sizes[si], c->servers[k]);
            res[si][ndists][k] =
                run_segmented(path, rows * cols * 8, c->servers[k]);
        }
    snprintf(path, sizeof(path), "ufs:%s/bench_arrays.seg.%d", c->ldir,
             c->sizes[si]);
    res[si][ndists][nservers] = run_segmented(path, rows * cols * 8, 0);
}

/* The write and read tables (rank 0). */
static void print_rates(const config *c, table res)
{
    for (int pass = 0; pass < 2; pass++) {
        printf("\n%s MB/s\n%-8s %-14s", pass ? "read" : "write", "size MB",
               "memory");
        for (int k = 0; k < c->nservers; k++)
            printf("    galley S=%d", c->servers[k]);
        printf(" %15s\n", "ufs");
        for (int si = 0; si < c->nsizes; si++)
            for (int d = 0; d <= c->ndists; d++) {
                char name[80];
                if (d < c->ndists)
                    snprintf(name, sizeof(name), "(%s)", c->dists[d]);
                else
                    snprintf(name, sizeof(name), "segmented");
                printf("%-8d %-14s", c->sizes[si], name);
                for (int k = 0; k <= c->nservers; k++) {
                    result *r = &res[si][d][k];
                    cell(pass ? r->r : r->w, pass ? r->rc : r->wc);
                }
                printf("\n");
            }
    }
}

/* (BLOCK,BLOCK) / segmented on galley, when both were run (rank 0). */
static void print_ratios(const config *c, table res)
{
    int bb = -1;
    for (int d = 0; d < c->ndists; d++)
        if (!strcasecmp(c->dists[d], "BLOCK,BLOCK"))
            bb = d;
    if (bb < 0 || !c->galley)
        return;
    printf("\n(BLOCK,BLOCK) / segmented on galley (target >= "
           "0.8)\n%-8s %-6s",
           "size MB", "");
    for (int k = 0; k < c->nservers; k++)
        printf("  S=%d  ", c->servers[k]);
    printf("\n");
    for (int pass = 0; pass < 2; pass++)
        for (int si = 0; si < c->nsizes; si++) {
            printf("%-8d %-6s", c->sizes[si], pass ? "read" : "write");
            for (int k = 0; k < c->nservers; k++) {
                result *a = &res[si][bb][k], *s = &res[si][c->ndists][k];
                printf("  %5.2f ", pass ? a->r / s->r : a->w / s->w);
            }
            printf("\n");
        }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    config c;
    parse_args(argc, argv, &c);
    if (me == 0)
        print_header(&c);
    table res;
    for (int si = 0; si < c.nsizes; si++)
        measure_size(&c, si, res);
    if (me == 0) {
        print_rates(&c, res);
        print_ratios(&c, res);
        fflush(stdout);
    }
    MPI_Finalize();
    return 0;
}
