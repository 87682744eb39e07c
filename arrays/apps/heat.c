/*
 * heat.c -- a 2-D heat-diffusion (Jacobi) solver that checkpoints and
 * writes timesteps through the Panda-style array library.
 *
 * The N x N field T is distributed (BLOCK,BLOCK) over a process grid, with
 * one ghost cell on each side for the halo exchange; a static conductivity
 * field K (4-byte floats) is checkpointed with it.  Each step:
 *
 *   T'(i,j) = T + 0.2 * K(i,j) * (T(i-1,j) + T(i+1,j) + T(i,j-1) + T(i,j+1) - 4
 * T)
 *
 * with fixed boundary values outside the grid (a sine profile on the top
 * edge, 0 elsewhere).  Every point is computed by the same expression in
 * the same order whatever the decomposition, so the final field -- and the
 * checksum printed at the end, an order-independent sum over the bit
 * patterns -- is bit-identical for any process count, and for a run
 * restarted from a checkpoint.
 *
 * usage: heat --path P [options]        (mpiexec -n NP heat ...)
 *   --path P          base name: P.ts (timesteps of T), P.ckpt (checkpoints
 *                     of T and K); any MPI-IO name: galley:/x, ufs:/dir/x
 *   -n N              grid size (default 256)
 *   --steps S         steps to run in total (default 100)
 *   --ckpt-every K    checkpoint every K steps (default 20, 0 = never)
 *   --ts-every T      write a timestep every T steps (default 10, 0 = never)
 *   --restart         continue from the newest checkpoint if there is one
 *   --grid PxQ        process grid (default: chosen from the process count)
 *   --disk L          disk layout of both arrays (default BLOCK,*@4)
 *   --hint KEY=VALUE  an MPI_Info hint for the data files (repeatable)
 *   --dump FILE       write the final field (row-major doubles) to FILE
 *   --delay MS        sleep MS milliseconds per step (for kill tests)
 *
 * Output (rank 0): parameters, "restart found at step N" or "no checkpoint
 * found", one line per timestep and checkpoint, then
 * "final checksum XXXXXXXXXXXXXXXX after S steps".
 * Exit status 0, or 1 after an I/O error (message on stderr), 2 bad usage.
 */
#include "galley_array.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int me, nprocs;

#define SAY(...)                                                               \
    do {                                                                       \
        if (me == 0) {                                                         \
            printf(__VA_ARGS__);                                               \
            fflush(stdout);                                                    \
        }                                                                      \
    } while (0)

static void die(const char *what, int rc)
{
    if (me == 0)
        fprintf(stderr, "heat: %s: %s: %s\n", what, ga_strerror(rc),
                ga_errmsg());
    MPI_Finalize();
    exit(1);
}

static void usage(const char *msg)
{
    if (me == 0)
        fprintf(
            stderr,
            "heat: %s\nusage: heat --path P [-n N] [--steps S] "
            "[--ckpt-every K] [--ts-every T] [--restart] [--grid PxQ] "
            "[--disk LAYOUT] [--hint KEY=VALUE] [--dump FILE] [--delay MS]\n",
            msg);
    MPI_Finalize();
    exit(2);
}

/* Deterministic pseudo-random value in [0, 1) from a global index. */
static double hash01(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return (double)(x >> 11) / 9007199254740992.0;
}

static double top_edge(int64_t j, int64_t n)
{
    return 100.0 * sin(M_PI * (double)(j + 1) / (double)(n + 1));
}

typedef struct field {
    int64_t n;      /* global extent */
    int64_t r0, c0; /* global index of the first owned row / column */
    int64_t nr, nc; /* owned rows / columns */
    int64_t ld;     /* row length with ghosts: nc + 2 */
    int up, down, left, right;
    MPI_Datatype column;
} field;

#define AT(buf, f, i, j) ((buf)[((i) + 1) * (f)->ld + (j) + 1])

/* Ghost cells on the global boundary hold the boundary values. */
static void set_boundary(double *u, const field *f)
{
    for (int64_t j = -1; j <= f->nc; j++) {
        if (f->r0 == 0)
            AT(u, f, -1, j) = (f->c0 + j >= 0 && f->c0 + j < f->n)
                                  ? top_edge(f->c0 + j, f->n)
                                  : 0.0;
        if (f->r0 + f->nr == f->n)
            AT(u, f, f->nr, j) = 0.0;
    }
    for (int64_t i = 0; i < f->nr; i++) {
        if (f->c0 == 0)
            AT(u, f, i, -1) = 0.0;
        if (f->c0 + f->nc == f->n)
            AT(u, f, i, f->nc) = 0.0;
    }
}

static void exchange(double *u, const field *f)
{
    MPI_Sendrecv(&AT(u, f, 0, 0), (int)f->nc, MPI_DOUBLE, f->up, 1,
                 &AT(u, f, f->nr, 0), (int)f->nc, MPI_DOUBLE, f->down, 1,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&AT(u, f, f->nr - 1, 0), (int)f->nc, MPI_DOUBLE, f->down, 2,
                 &AT(u, f, -1, 0), (int)f->nc, MPI_DOUBLE, f->up, 2,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&AT(u, f, 0, 0), 1, f->column, f->left, 3, &AT(u, f, 0, f->nc),
                 1, f->column, f->right, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&AT(u, f, 0, f->nc - 1), 1, f->column, f->right, 4,
                 &AT(u, f, 0, -1), 1, f->column, f->left, 4, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
}

static void step(const double *u, double *v, const float *k, const field *f)
{
    for (int64_t i = 0; i < f->nr; i++)
        for (int64_t j = 0; j < f->nc; j++) {
            double c = AT(u, f, i, j);
            double lap = AT(u, f, i - 1, j) + AT(u, f, i + 1, j) +
                         AT(u, f, i, j - 1) + AT(u, f, i, j + 1) - 4.0 * c;
            AT(v, f, i, j) = c + 0.2 * (double)AT(k, f, i, j) * lap;
        }
}

static uint64_t checksum(const double *u, const field *f)
{
    uint64_t local = 0, all = 0;
    for (int64_t i = 0; i < f->nr; i++)
        for (int64_t j = 0; j < f->nc; j++) {
            uint64_t bits;
            double x = AT(u, f, i, j);
            memcpy(&bits, &x, sizeof(bits));
            uint64_t lin = (uint64_t)((f->r0 + i) * f->n + f->c0 + j);
            uint64_t z = bits ^ (lin * 0x9e3779b97f4a7c15ull);
            z = (z ^ (z >> 29)) * 0xbf58476d1ce4e5b9ull;
            local += z ^ (z >> 32);
        }
    MPI_Allreduce(&local, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return all;
}

/* ------------------------------------------------------------ options --- */

typedef struct options {
    const char *path, *grid, *disk_text, *dump;
    int64_t n, steps, ckpt_every, ts_every;
    int do_restart, delay_ms;
    MPI_Info info; /* --hint: for the data files */
} options;

/* --hint KEY=VALUE into o->info. */
static void add_hint(options *o, const char *v)
{
    char key[256];
    const char *eq = strchr(v, '=');
    if (!eq || eq == v || (size_t)(eq - v) >= sizeof(key))
        usage("--hint wants KEY=VALUE");
    memcpy(key, v, (size_t)(eq - v));
    key[eq - v] = 0;
    MPI_Info_set(o->info, key, eq + 1);
}

/* The command line into *o; a bad one ends the run (usage, status 2). */
static void parse_args(int argc, char **argv, options *o)
{
    *o = (options){.disk_text = "BLOCK,*@4",
                   .n = 256,
                   .steps = 100,
                   .ckpt_every = 20,
                   .ts_every = 10};
    MPI_Info_create(&o->info);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define VALUE()                                                                \
    do {                                                                       \
        if (!v)                                                                \
            usage("option needs a value");                                     \
        i++;                                                                   \
    } while (0)
        if (!strcmp(a, "--path")) {
            VALUE();
            o->path = v;
        } else if (!strcmp(a, "-n")) {
            VALUE();
            o->n = atoll(v);
        } else if (!strcmp(a, "--steps")) {
            VALUE();
            o->steps = atoll(v);
        } else if (!strcmp(a, "--ckpt-every")) {
            VALUE();
            o->ckpt_every = atoll(v);
        } else if (!strcmp(a, "--ts-every")) {
            VALUE();
            o->ts_every = atoll(v);
        } else if (!strcmp(a, "--restart")) {
            o->do_restart = 1;
        } else if (!strcmp(a, "--grid")) {
            VALUE();
            o->grid = v;
        } else if (!strcmp(a, "--disk")) {
            VALUE();
            o->disk_text = v;
        } else if (!strcmp(a, "--hint")) {
            VALUE();
            add_hint(o, v);
        } else if (!strcmp(a, "--dump")) {
            VALUE();
            o->dump = v;
        } else if (!strcmp(a, "--delay")) {
            VALUE();
            o->delay_ms = atoi(v);
        } else {
            usage("unknown option");
        }
#undef VALUE
    }
    if (!o->path)
        usage("--path is required");
    if (o->n < 2 || o->steps < 0 || o->ckpt_every < 0 || o->ts_every < 0 ||
        o->delay_ms < 0)
        usage("bad numeric option");
}

/* ------------------------------------------------------------- set-up --- */

/* The arrays T (doubles) and K (floats), (BLOCK,BLOCK) over every
 * process with one ghost cell each side. */
static void make_arrays(const options *o, ga_array **T, ga_array **K)
{
    ga_layout mem, disk;
    char memtext[64];
    if (o->grid)
        snprintf(memtext, sizeof(memtext), "BLOCK,BLOCK@%s", o->grid);
    else
        snprintf(memtext, sizeof(memtext), "BLOCK,BLOCK");
    if (ga_layout_parse(memtext, &mem))
        usage("bad --grid");
    if (ga_layout_parse(o->disk_text, &disk))
        usage("bad --disk layout");
    int64_t dims[2] = {o->n, o->n};
    int ghost[2] = {1, 1};
    ga_array_spec st = {"T", 2, dims, sizeof(double), &mem, &disk, ghost};
    ga_array_spec sk = {"K", 2, dims, sizeof(float), &mem, &disk, ghost};
    int rc = ga_array_create(MPI_COMM_WORLD, &st, T);
    if (rc)
        die("array T", rc);
    rc = ga_array_create(MPI_COMM_WORLD, &sk, K);
    if (rc)
        die("array K", rc);
    const ga_layout *ml = ga_array_mem_layout(*T);
    if (ml->units != nprocs) {
        if (me == 0)
            fprintf(stderr,
                    "heat: the process grid %dx%d must use all %d processes\n",
                    ml->grid[0], ml->grid[1], nprocs);
        MPI_Finalize();
        exit(2);
    }
}

/* This process's block of T and its neighbours in the process grid. */
static void setup_field(ga_array *T, int64_t n, field *f)
{
    const ga_layout *ml = ga_array_mem_layout(T);
    int64_t cnt[2], alloc[2];
    ga_array_local(T, cnt, alloc);
    int bad = cnt[0] < 1 || cnt[1] < 1, anybad;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (anybad) {
        if (me == 0)
            fprintf(stderr,
                    "heat: grid %dx%d leaves a process without points of "
                    "the %lldx%lld field\n",
                    ml->grid[0], ml->grid[1], (long long)n, (long long)n);
        MPI_Finalize();
        exit(2);
    }
    f->n = n;
    f->nr = cnt[0];
    f->nc = cnt[1];
    f->ld = alloc[1];
    f->r0 = ga_array_global_index(T, 0, 0);
    f->c0 = ga_array_global_index(T, 1, 0);
    int P = ml->grid[0], Q = ml->grid[1], pr = me / Q, pc = me % Q;
    f->up = pr > 0 ? me - Q : MPI_PROC_NULL;
    f->down = pr < P - 1 ? me + Q : MPI_PROC_NULL;
    f->left = pc > 0 ? me - 1 : MPI_PROC_NULL;
    f->right = pc < Q - 1 ? me + 1 : MPI_PROC_NULL;
    MPI_Type_vector((int)f->nr, 1, (int)f->ld, MPI_DOUBLE, &f->column);
    MPI_Type_commit(&f->column);
}

/* The initial field and the conductivity: functions of the global index
 * only, so any decomposition starts from the same values. */
static void init_values(double *u, float *k, const field *f)
{
    for (int64_t i = 0; i < f->nr; i++)
        for (int64_t j = 0; j < f->nc; j++) {
            uint64_t lin = (uint64_t)((f->r0 + i) * f->n + f->c0 + j);
            AT(u, f, i, j) = hash01(lin);
            AT(k, f, i, j) =
                (float)(0.5 + 0.5 * hash01(lin ^ 0x5555555555555555ull));
        }
}

/* The groups (PATH.ckpt with T and K, PATH.ts with T), restarting from
 * the newest checkpoint into u (and k, bound to K) with --restart.
 * Returns the step to start from. */
static int64_t open_groups(const options *o, ga_array *T, ga_array *K,
                           double *u, ga_group **ts, ga_group **ck)
{
    char *tsp = malloc(strlen(o->path) + 8), *ckp = malloc(strlen(o->path) + 8);
    sprintf(tsp, "%s.ts", o->path);
    sprintf(ckp, "%s.ckpt", o->path);
    int64_t start = 0;
    int rc, flags = o->do_restart ? GA_APPEND : GA_CREATE;
    *ts = *ck = NULL;
    if (o->ckpt_every > 0 || o->do_restart) {
        rc = ga_group_create(MPI_COMM_WORLD, GA_CHECKPOINT, ckp, flags, o->info,
                             ck);
        if (rc)
            die("checkpoint group", rc);
        if ((rc = ga_group_insert(*ck, T)) || (rc = ga_group_insert(*ck, K)))
            die("checkpoint group", rc);
    }
    if (o->do_restart) {
        ga_array_bind(T, u);
        rc = ga_restart(*ck, &start);
        if (rc == GA_ENOCKPT) {
            SAY("no checkpoint found: starting at step 0\n");
            start = 0;
        } else if (rc < 0) {
            die("restart", rc);
        } else {
            SAY("restart found at step %lld (copy %d)\n", (long long)start, rc);
        }
    }
    if (o->ts_every > 0) {
        rc = ga_group_create(MPI_COMM_WORLD, GA_TIMESTEP, tsp, flags, o->info,
                             ts);
        if (rc)
            die("timestep group", rc);
        if ((rc = ga_group_insert(*ts, T)))
            die("timestep group", rc);
        if (o->do_restart) {
            rc = ga_timestep_rewind(*ts, start);
            if (rc < 0)
                die("timestep rewind", rc);
        }
    }
    free(tsp);
    free(ckp);
    return start;
}

/* ---------------------------------------------------------- time loop --- */

/* Steps start..steps-1, writing timesteps and checkpoints on the way; *u
 * holds the newest field on return.  Returns the seconds taken. */
static double run_steps(const options *o, const field *f, ga_array *T,
                        ga_group *ts, ga_group *ck, int64_t start, double **u,
                        double **v, const float *k)
{
    set_boundary(*u, f);
    set_boundary(*v, f);
    double t0 = MPI_Wtime();
    for (int64_t s = start; s < o->steps; s++) {
        exchange(*u, f);
        step(*u, *v, k, f);
        double *t = *u;
        *u = *v;
        *v = t;
        int64_t done = s + 1;
        ga_array_bind(T, *u);
        if (ts && done % o->ts_every == 0) {
            int rc = ga_timestep(ts, done);
            if (rc < 0)
                die("timestep", rc);
            SAY("step %lld: timestep %d written\n", (long long)done, rc);
        }
        if (ck && o->ckpt_every > 0 && done % o->ckpt_every == 0) {
            int rc = ga_checkpoint(ck, done);
            if (rc < 0)
                die("checkpoint", rc);
            SAY("checkpoint written at step %lld (copy %d)\n", (long long)done,
                rc);
        }
        if (o->delay_ms) {
            struct timespec ts_ = {o->delay_ms / 1000,
                                   (long)(o->delay_ms % 1000) * 1000000L};
            nanosleep(&ts_, NULL);
        }
    }
    return MPI_Wtime() - t0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    options o;
    parse_args(argc, argv, &o);
    ga_array *T, *K;
    make_arrays(&o, &T, &K);
    field f;
    setup_field(T, o.n, &f);

    int64_t alloc[2];
    ga_array_local(T, NULL, alloc);
    size_t cells = (size_t)alloc[0] * (size_t)alloc[1];
    double *u = calloc(cells, sizeof(double)),
           *v = calloc(cells, sizeof(double));
    float *k = ga_array_alloc(K);
    if (!u || !v || !k) {
        fprintf(stderr, "heat: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    init_values(u, k, &f);

    const ga_layout *ml = ga_array_mem_layout(T);
    char dl[128];
    ga_layout_format(ga_array_disk_layout(T), dl, sizeof(dl));
    SAY("heat: %lldx%lld grid on %d processes (%dx%d), %lld steps, checkpoint "
        "every "
        "%lld, timestep every %lld\n",
        (long long)o.n, (long long)o.n, nprocs, ml->grid[0], ml->grid[1],
        (long long)o.steps, (long long)o.ckpt_every, (long long)o.ts_every);
    SAY("heat: path %s, disk layout %s\n", o.path, dl);

    ga_group *ts, *ck;
    int64_t start = open_groups(&o, T, K, u, &ts, &ck);
    double secs = run_steps(&o, &f, T, ts, ck, start, &u, &v, k);

    uint64_t sum = checksum(u, &f);
    int rc;
    if (o.dump) {
        ga_array_bind(T, u);
        rc = ga_array_export(T, o.dump, MPI_INFO_NULL);
        if (rc)
            die("dump", rc);
        SAY("final field written to %s\n", o.dump);
    }
    SAY("final checksum %016llx after %lld steps (%.2f s)\n",
        (unsigned long long)sum, (long long)o.steps, secs);

    if ((rc = ga_group_free(ts)) || (rc = ga_group_free(ck)))
        die("close", rc);
    ga_array_free(T);
    ga_array_free(K);
    MPI_Type_free(&f.column);
    MPI_Info_free(&o.info);
    free(u);
    free(v);
    MPI_Finalize();
    return 0;
}
