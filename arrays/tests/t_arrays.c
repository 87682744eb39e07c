/*
 * t_arrays.c -- MPI test program for the array library, driven by
 * test_arrays.py.  Every element's bytes are a hash of (array, global
 * index, step), so any process count and memory layout can check what
 * another one wrote.  Besides reading back through the library, rank 0
 * reads the data files raw and checks each element sits where the disk
 * layout says (ga_disk_offset), independently of the datatypes.
 *
 *   t_arrays write-ts  path=P mem=L disk=L dims=AxB esize=E steps=S [ghost=G]
 *   t_arrays read-ts   path=P mem=L dims=AxB esize=E steps=S [ghost=G] [disk=L]
 *   t_arrays write-ckpt path=P mem=L disk=L dims=AxB esize=E count=K [append=1]
 *   t_arrays restart   path=P mem=L dims=AxB esize=E [disk=L] [expect=STEP]
 *   t_arrays fault-loop path=P kind=ckpt|ts ready=F [out=F] [warm=N]
 * [seconds=S] t_arrays export    path=P mem=L dims=AxB esize=E t_arrays errors
 * path=P
 *
 * Two arrays are used: "A" (the given shape and element size) and "B"
 * (1-D, 1000 elements of 4 bytes, BLOCK).  Prints "PASS n checks" when
 * every check held (exit 0), FAIL lines otherwise (exit 1).
 */
#include "ga_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int me, nprocs, checks, failures;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        checks++;                                                              \
        if (!(cond)) {                                                         \
            failures++;                                                        \
            if (failures < 20) {                                               \
                printf("FAIL rank %d %s:%d: ", me, __FILE__, __LINE__);        \
                printf(__VA_ARGS__);                                           \
                printf("\n");                                                  \
                fflush(stdout);                                                \
            }                                                                  \
        }                                                                      \
    } while (0)

#define OK(call)                                                               \
    do {                                                                       \
        int rc_ = (call);                                                      \
        CHECK(rc_ >= 0, "%s -> %d %s: %s", #call, rc_, ga_strerror(rc_),       \
              ga_errmsg());                                                    \
        if (rc_ < 0)                                                           \
            finish();                                                          \
    } while (0)

static void finish(void)
{
    int f = failures, all;
    MPI_Allreduce(&f, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int c = checks, call;
    MPI_Allreduce(&c, &call, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0) {
        if (all)
            printf("FAIL %d of %d checks\n", all, call);
        else
            printf("PASS %d checks\n", call);
        fflush(stdout);
    }
    MPI_Finalize();
    exit(all ? 1 : 0);
}

/* ------------------------------------------------------------ args --- */

static const char *arg(int argc, char **argv, const char *key, const char *dflt)
{
    size_t n = strlen(key);
    for (int i = 2; i < argc; i++)
        if (!strncmp(argv[i], key, n) && argv[i][n] == '=')
            return argv[i] + n + 1;
    return dflt;
}

static int parse_dims(const char *s, int64_t *dims)
{
    int r = 0;
    while (*s && r < GA_MAX_RANK) {
        char *end;
        dims[r++] = strtoll(s, &end, 10);
        s = *end == 'x' ? end + 1 : end;
        if (end == s && *s)
            break;
    }
    return r;
}

/* ---------------------------------------------------------- values --- */

static uint8_t value(int array, int64_t lin, int b, int64_t step)
{
    uint64_t z = (uint64_t)lin * 0x9e3779b97f4a7c15ull +
                 (uint64_t)b * 0xbf58476d1ce4e5b9ull +
                 (uint64_t)step * 0x94d049bb133111ebull +
                 (uint64_t)array * 0x2545f4914f6cdd1dull;
    z ^= z >> 31;
    z *= 0xd6e8feb86cd762b5ull;
    z ^= z >> 29;
    return (uint8_t)z;
}

typedef struct arr {
    ga_array *a;
    int id, rank, esize;
    int64_t dims[GA_MAX_RANK], count[GA_MAX_RANK], alloc[GA_MAX_RANK];
    int ghost;
    uint8_t *buf;
    size_t bufsize;
} arr;

#define GHOST_FILL 0xEE

/* Visit every owned element: fn(lin global index, pointer to element). */
static void each(arr *x, void (*fn)(arr *, int64_t, uint8_t *, int64_t),
                 int64_t step)
{
    int r = x->rank;
    int64_t total = 1;
    for (int d = 0; d < r; d++)
        total *= x->count[d];
    if (!x->buf)
        return;
    int64_t idx[GA_MAX_RANK] = {0};
    for (int64_t n = 0; n < total; n++) {
        int64_t lin = 0, pos = 0;
        for (int d = 0; d < r; d++) {
            lin = lin * x->dims[d] + ga_array_global_index(x->a, d, idx[d]);
            pos = pos * x->alloc[d] + idx[d] + x->ghost;
        }
        fn(x, lin, x->buf + pos * x->esize, step);
        for (int d = r - 1; d >= 0; d--) {
            if (++idx[d] < x->count[d])
                break;
            idx[d] = 0;
        }
    }
}

static void fill_one(arr *x, int64_t lin, uint8_t *p, int64_t step)
{
    for (int b = 0; b < x->esize; b++)
        p[b] = value(x->id, lin, b, step);
}

static void check_one(arr *x, int64_t lin, uint8_t *p, int64_t step)
{
    int bad = 0;
    for (int b = 0; b < x->esize; b++)
        bad += p[b] != value(x->id, lin, b, step);
    CHECK(!bad, "array %d element %lld step %lld wrong", x->id, (long long)lin,
          (long long)step);
}

static void clear_one(arr *x, int64_t lin, uint8_t *p, int64_t step)
{
    memset(p, GHOST_FILL, (size_t)x->esize);
}

static void fill(arr *x, int64_t step)
{
    if (x->buf)
        memset(x->buf, GHOST_FILL, x->bufsize);
    each(x, fill_one, step);
}

static void verify(arr *x, int64_t step)
{
    /* the owned cells hold step's values and the ghosts are untouched */
    if (!x->buf)
        return;
    each(x, check_one, step);
    uint8_t *copy = malloc(x->bufsize);
    memcpy(copy, x->buf, x->bufsize);
    uint8_t *save = x->buf;
    x->buf = copy;
    each(x, clear_one, 0);
    int64_t nonghost = 0;
    for (size_t i = 0; i < x->bufsize; i++)
        nonghost += copy[i] != GHOST_FILL;
    x->buf = save;
    free(copy);
    CHECK(nonghost == 0, "array %d: %lld ghost bytes overwritten", x->id,
          (long long)nonghost);
}

static void make(arr *x, int id, const char *name, int rank,
                 const int64_t *dims, int esize, const char *mem,
                 const char *disk, int ghost)
{
    ga_layout lm, ld;
    ga_array_spec spec = {name, rank, dims, esize, NULL, NULL, NULL};
    int gh[GA_MAX_RANK];
    memset(x, 0, sizeof(*x));
    if (mem) {
        OK(ga_layout_parse(mem, &lm));
        spec.mem = &lm;
    }
    if (disk) {
        OK(ga_layout_parse(disk, &ld));
        spec.disk = &ld;
    }
    for (int d = 0; d < GA_MAX_RANK; d++)
        gh[d] = ghost;
    spec.ghost = gh;
    OK(ga_array_create(MPI_COMM_WORLD, &spec, &x->a));
    x->id = id;
    x->rank = rank;
    x->esize = esize;
    x->ghost = ghost;
    memcpy(x->dims, dims, sizeof(int64_t) * (size_t)rank);
    int64_t bytes = ga_array_local(x->a, x->count, x->alloc);
    x->bufsize = (size_t)esize;
    for (int d = 0; d < rank; d++)
        x->bufsize *= (size_t)x->alloc[d];
    if (bytes > 0) {
        x->buf = malloc(x->bufsize);
        ga_array_bind(x->a, x->buf);
    }
}

static void drop(arr *x)
{
    ga_array_free(x->a);
    free(x->buf);
}

/* Rank 0: the data file `file` holds, at `base`, every element of x at
 * step `step` where the disk layout puts it. */
static void raw_check(arr *x, const char *file, const ga_layout *disk_in,
                      MPI_Offset base_index, int64_t step)
{
    if (me != 0)
        return;
    ga_shape s = {x->rank, {0}, x->esize};
    memcpy(s.dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    ga_layout disk = *disk_in;
    CHECK(ga_layout_resolve(&disk, &s, 1, false) == 0, "disk layout");
    int64_t slot = ga_slot_bytes(&disk, &s), span = slot * disk.units;
    uint8_t *data = malloc((size_t)span);
    MPI_File fh;
    int e =
        MPI_File_open(MPI_COMM_SELF, file, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(e == MPI_SUCCESS, "raw open %s", file);
    if (e != MPI_SUCCESS) {
        free(data);
        return;
    }
    MPI_Status st;
    memset(data, 0, (size_t)span);
    MPI_File_read_at(fh, base_index * span, data, (int)span, MPI_BYTE, &st);
    MPI_File_close(&fh);
    int64_t total = 1, bad = 0;
    for (int d = 0; d < x->rank; d++)
        total *= x->dims[d];
    int64_t gi[GA_MAX_RANK];
    for (int64_t lin = 0; lin < total; lin++) {
        int64_t t = lin;
        for (int d = x->rank - 1; d >= 0; d--) {
            gi[d] = t % x->dims[d];
            t /= x->dims[d];
        }
        int64_t off = ga_disk_offset(&disk, &s, slot, gi);
        for (int b = 0; b < x->esize; b++)
            bad += data[off + b] != value(x->id, lin, b, step);
    }
    free(data);
    CHECK(bad == 0, "raw %s index %lld: %lld bytes misplaced", file,
          (long long)base_index, (long long)bad);
}

static char *fname(const char *path, const char *suffix)
{
    static char buf[4096];
    snprintf(buf, sizeof(buf), "%s%s", path, suffix);
    return buf;
}

/* ------------------------------------------------------- scenarios --- */

static const int64_t BDIMS[1] = {1000};

static void write_ts(int argc, char **argv)
{
    const char *path = arg(argc, argv, "path", NULL);
    const char *mem = arg(argc, argv, "mem", NULL);
    const char *disk = arg(argc, argv, "disk", NULL);
    int64_t dims[GA_MAX_RANK];
    int rank = parse_dims(arg(argc, argv, "dims", "64x48"), dims);
    int esize = atoi(arg(argc, argv, "esize", "8"));
    int steps = atoi(arg(argc, argv, "steps", "3"));
    int ghost = atoi(arg(argc, argv, "ghost", "0"));
    arr A, B;
    make(&A, 1, "A", rank, dims, esize, mem, disk, ghost);
    make(&B, 2, "B", 1, BDIMS, 4, "BLOCK", "BLOCK@3", 0);
    ga_group *g;
    OK(ga_group_create(MPI_COMM_WORLD, GA_TIMESTEP, path, GA_CREATE,
                       MPI_INFO_NULL, &g));
    OK(ga_group_insert(g, A.a));
    OK(ga_group_insert(g, B.a));
    for (int i = 0; i < steps; i++) {
        fill(&A, 10 * i);
        fill(&B, 10 * i);
        int idx = ga_timestep(g, 10 * i);
        CHECK(idx == i, "timestep index %d, want %d (%s)", idx, i, ga_errmsg());
    }
    CHECK(ga_timestep_count(g) == steps, "count");
    /* read back in the same layout */
    for (int i = 0; i < steps; i++) {
        int64_t step = -1;
        fill(&A, -1);
        OK(ga_timestep_read(g, i, &step));
        CHECK(step == 10 * i, "step number %lld", (long long)step);
        verify(&A, step);
    }
    OK(ga_group_free(g));
    ga_layout ld;
    ga_layout_parse(disk ? disk : "*", &ld);
    if (!disk)
        ld.rank = rank;
    for (int i = 0; i < steps; i++)
        raw_check(&A, fname(path, ".A"), &ld, i, 10 * i);
    drop(&A);
    drop(&B);
}

static void read_ts(int argc, char **argv)
{
    const char *path = arg(argc, argv, "path", NULL);
    const char *mem = arg(argc, argv, "mem", NULL);
    int64_t dims[GA_MAX_RANK];
    int rank = parse_dims(arg(argc, argv, "dims", "64x48"), dims);
    int esize = atoi(arg(argc, argv, "esize", "8"));
    int steps = atoi(arg(argc, argv, "steps", "3"));
    int ghost = atoi(arg(argc, argv, "ghost", "0"));
    arr A, B;
    /* our disk layout is ignored: the stored one wins */
    make(&A, 1, "A", rank, dims, esize, mem, NULL, ghost);
    make(&B, 2, "B", 1, BDIMS, 4, "CYCLIC(7)", NULL, 0);
    ga_group *g;
    OK(ga_group_create(MPI_COMM_WORLD, GA_TIMESTEP, path, GA_APPEND,
                       MPI_INFO_NULL, &g));
    OK(ga_group_insert(g, A.a));
    OK(ga_group_insert(g, B.a));
    CHECK(ga_timestep_count(g) == steps, "count %d want %d",
          ga_timestep_count(g), steps);
    for (int i = steps - 1; i >= 0; i--) {
        int64_t step = -1;
        fill(&A, -1);
        fill(&B, -1);
        OK(ga_timestep_read(g, i, &step));
        CHECK(step == 10 * i, "step number %lld", (long long)step);
        verify(&A, step);
        verify(&B, step);
    }
    /* append one more step in this layout, then rewind it away again */
    fill(&A, 10 * steps);
    fill(&B, 10 * steps);
    CHECK(ga_timestep(g, 10 * steps) == steps, "append after reopen: %s",
          ga_errmsg());
    CHECK(ga_timestep_count(g) == steps + 1, "count after append");
    fill(&A, -1);
    OK(ga_timestep_read(g, steps, NULL));
    verify(&A, 10 * steps);
    CHECK(ga_timestep_rewind(g, 10 * (steps - 1)) == steps, "rewind");
    CHECK(ga_timestep_read(g, steps, NULL) == GA_ENOSTEP, "rewound step gone");
    OK(ga_group_free(g));
    /* reopen: the rewound step stays gone */
    OK(ga_group_create(MPI_COMM_WORLD, GA_TIMESTEP, path, GA_APPEND,
                       MPI_INFO_NULL, &g));
    OK(ga_group_insert(g, A.a));
    OK(ga_group_insert(g, B.a));
    CHECK(ga_timestep_count(g) == steps, "count after rewind and reopen");
    OK(ga_group_free(g));
    drop(&A);
    drop(&B);
}

static void write_ckpt(int argc, char **argv)
{
    const char *path = arg(argc, argv, "path", NULL);
    const char *mem = arg(argc, argv, "mem", NULL);
    const char *disk = arg(argc, argv, "disk", NULL);
    int64_t dims[GA_MAX_RANK];
    int rank = parse_dims(arg(argc, argv, "dims", "64x48"), dims);
    int esize = atoi(arg(argc, argv, "esize", "8"));
    int count = atoi(arg(argc, argv, "count", "3"));
    int append = atoi(arg(argc, argv, "append", "0"));
    int64_t first = atoll(arg(argc, argv, "first", "1"));
    arr A, B;
    make(&A, 1, "A", rank, dims, esize, mem, disk, 0);
    make(&B, 2, "B", 1, BDIMS, 4, "BLOCK", "BLOCK@2", 0);
    ga_group *g;
    OK(ga_group_create(MPI_COMM_WORLD, GA_CHECKPOINT, path,
                       append ? GA_APPEND : GA_CREATE, MPI_INFO_NULL, &g));
    OK(ga_group_insert(g, A.a));
    OK(ga_group_insert(g, B.a));
    for (int i = 0; i < count; i++) {
        int64_t step = 100 * (first + i);
        fill(&A, step);
        fill(&B, step);
        int c = ga_checkpoint(g, step);
        CHECK(c == 0 || c == 1, "checkpoint: %s", ga_errmsg());
        if (me == 0)
            printf("checkpoint %lld copy %d\n", (long long)step, c);
        fflush(stdout);
    }
    OK(ga_group_free(g));
    drop(&A);
    drop(&B);
}

/* Checkpoints (kind=ckpt: steps 100, 200, ...) or timesteps (kind=ts:
 * steps 0, 10, ...) in a loop until the first error, which the test
 * causes by killing or stopping a server once rank 0 has created the file
 * ready=F (after warm=N calls).  Every rank then frees the group and
 * prints
 *   RESULT rank=R ok=N rc=RC t_err=T free=RC
 * after a line "ERROR rank=R <the error's first line>" when a call failed.
 * ok: calls that succeeded; t_err: CLOCK_REALTIME when the failing call
 * returned; the same lines go to the file out.R when out= is given.  The
 * checks are the test's. */
static void fault_loop(int argc, char **argv)
{
    const char *path = arg(argc, argv, "path", NULL);
    const char *ready = arg(argc, argv, "ready", NULL);
    int ckpt = !strcmp(arg(argc, argv, "kind", "ckpt"), "ckpt");
    int warm = atoi(arg(argc, argv, "warm", "2"));
    double seconds = atof(arg(argc, argv, "seconds", "60"));
    int64_t dims[GA_MAX_RANK];
    int rank = parse_dims(arg(argc, argv, "dims", "64x48"), dims);
    arr A, B;
    make(&A, 1, "A", rank, dims, 8, arg(argc, argv, "mem", "BLOCK,BLOCK"),
         arg(argc, argv, "disk", "BLOCK,*@4"), 0);
    make(&B, 2, "B", 1, BDIMS, 4, "BLOCK", "BLOCK@2", 0);
    ga_group *g;
    OK(ga_group_create(MPI_COMM_WORLD, ckpt ? GA_CHECKPOINT : GA_TIMESTEP, path,
                       GA_CREATE, MPI_INFO_NULL, &g));
    OK(ga_group_insert(g, A.a));
    OK(ga_group_insert(g, B.a));
    int ok = 0, rc = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0;; i++) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > seconds)
            break;
        int64_t step = ckpt ? 100 * (i + 1) : 10 * i;
        fill(&A, step);
        fill(&B, step);
        rc = ckpt ? ga_checkpoint(g, step) : ga_timestep(g, step);
        if (rc < 0)
            break;
        ok++;
        if (me == 0 && ready && ok == warm) {
            FILE *f = fopen(ready, "w");
            if (f)
                fclose(f);
        }
    }
    clock_gettime(CLOCK_REALTIME, &t);
    double t_err = rc < 0 ? t.tv_sec + t.tv_nsec * 1e-9 : 0;
    char line[1024] = "";
    if (rc < 0) {
        /* the message's first line only: the error stack follows it */
        const char *msg = ga_errmsg();
        snprintf(line, sizeof(line), "ERROR rank=%d %.*s\n", me,
                 (int)strcspn(msg, "\n"), msg);
    }
    int frc = ga_group_free(g);
    size_t n = strlen(line);
    snprintf(line + n, sizeof(line) - n,
             "RESULT rank=%d ok=%d rc=%d t_err=%.6f free=%d\n", me, ok,
             rc < 0 ? rc : 0, t_err, frc);
    fputs(line, stdout);
    /* and to a file of its own: mpiexec may interleave the ranks' output */
    const char *out = arg(argc, argv, "out", NULL);
    if (out) {
        char fn[4096];
        snprintf(fn, sizeof(fn), "%s.%d", out, me);
        FILE *f = fopen(fn, "w");
        if (f) {
            fputs(line, f);
            fclose(f);
        }
    }
    drop(&A);
    drop(&B);
}

static void restart(int argc, char **argv)
{
    const char *path = arg(argc, argv, "path", NULL);
    const char *mem = arg(argc, argv, "mem", NULL);
    const char *disk = arg(argc, argv, "disk", NULL);
    int64_t dims[GA_MAX_RANK];
    int rank = parse_dims(arg(argc, argv, "dims", "64x48"), dims);
    int esize = atoi(arg(argc, argv, "esize", "8"));
    int64_t expect = atoll(arg(argc, argv, "expect", "-1"));
    int ghost = atoi(arg(argc, argv, "ghost", "0"));
    arr A, B;
    make(&A, 1, "A", rank, dims, esize, mem, NULL, ghost);
    make(&B, 2, "B", 1, BDIMS, 4, "CYCLIC(3)", NULL, 0);
    ga_group *g;
    OK(ga_group_create(MPI_COMM_WORLD, GA_RESTART, path, 0, MPI_INFO_NULL, &g));
    OK(ga_group_insert(g, A.a));
    OK(ga_group_insert(g, B.a));
    fill(&A, -1);
    fill(&B, -1);
    int64_t step = -1;
    int c = ga_restart(g, &step);
    CHECK(c == 0 || c == 1, "restart: %d %s", c, ga_errmsg());
    if (expect >= 0)
        CHECK(step == expect, "restart step %lld, want %lld", (long long)step,
              (long long)expect);
    if (me == 0)
        printf("restart step %lld copy %d\n", (long long)step, c);
    verify(&A, step);
    verify(&B, step);
    OK(ga_group_free(g));
    if (disk && c >= 0) {
        ga_layout ld;
        ga_layout_parse(disk, &ld);
        char suf[16];
        snprintf(suf, sizeof(suf), ".A.%d", c);
        raw_check(&A, fname(path, suf), &ld, 0, step);
    }
    drop(&A);
    drop(&B);
}

static void export(int argc, char **argv)
{
    const char *path = arg(argc, argv, "path", NULL);
    const char *mem = arg(argc, argv, "mem", NULL);
    int64_t dims[GA_MAX_RANK];
    int rank = parse_dims(arg(argc, argv, "dims", "64x48"), dims);
    int esize = atoi(arg(argc, argv, "esize", "8"));
    arr A;
    make(&A, 1, "A", rank, dims, esize, mem, NULL, 1);
    fill(&A, 5);
    OK(ga_array_export(A.a, path, MPI_INFO_NULL));
    ga_layout whole;
    memset(&whole, 0, sizeof(whole));
    whole.rank = rank;
    raw_check(&A, path, &whole, 0, 5);
    drop(&A);
}

static void errors(int argc, char **argv)
{
    const char *path = arg(argc, argv, "path", NULL);
    int64_t dims[2] = {16, 16};
    arr A;
    make(&A, 1, "A", 2, dims, 8, "BLOCK,*", "BLOCK,*@2", 0);
    ga_group *g;
    char p[4096];

    /* restart with nothing there */
    snprintf(p, sizeof(p), "%s.none", path);
    OK(ga_group_create(MPI_COMM_WORLD, GA_RESTART, p, 0, MPI_INFO_NULL, &g));
    OK(ga_group_insert(g, A.a));
    CHECK(ga_restart(g, NULL) == GA_ENOCKPT, "restart of nothing");
    OK(ga_group_free(g));

    /* bad arguments */
    CHECK(ga_group_create(MPI_COMM_WORLD, GA_TIMESTEP, path, 0, MPI_INFO_NULL,
                          &g) == -EINVAL,
          "no flags");
    ga_layout l;
    CHECK(ga_layout_parse("BLOCK,BLOCK@3x3", &l) == 0, "parse");
    ga_array *bad;
    ga_array_spec spec = {"bad", 2, dims, 8, &l, NULL, NULL};
    CHECK(ga_array_create(MPI_COMM_WORLD, &spec, &bad) == GA_ELAYOUT ||
              nprocs >= 9,
          "9-process grid on %d", nprocs);
    spec.mem = NULL;
    spec.name = "bad name";
    CHECK(ga_array_create(MPI_COMM_WORLD, &spec, &bad) == -EINVAL, "bad name");

    /* a timestep group, then opened with the wrong kind or wrong arrays */
    snprintf(p, sizeof(p), "%s.ts", path);
    OK(ga_group_create(MPI_COMM_WORLD, GA_TIMESTEP, p, GA_CREATE, MPI_INFO_NULL,
                       &g));
    OK(ga_group_insert(g, A.a));
    CHECK(ga_group_insert(g, A.a) == -EEXIST, "double insert");
    CHECK(ga_checkpoint(g, 1) == GA_ESTATE, "checkpoint on a timestep group");
    fill(&A, 1);
    OK(ga_timestep(g, 1));
    CHECK(ga_timestep_read(g, 5, NULL) == GA_ENOSTEP, "no step 5");
    CHECK(ga_group_insert(g, A.a) == GA_ESTATE, "insert after write");
    OK(ga_group_free(g));
    int rc =
        ga_group_create(MPI_COMM_WORLD, GA_RESTART, p, 0, MPI_INFO_NULL, &g);
    CHECK(rc == GA_ESCHEMA, "timestep schema opened for restart: %d", rc);
    if (me == 0)
        printf("message: %s\n", ga_errmsg());
    int64_t other[2] = {16, 17};
    arr C;
    make(&C, 1, "A", 2, other, 8, "BLOCK,*", NULL, 0);
    OK(ga_group_create(MPI_COMM_WORLD, GA_TIMESTEP, p, GA_APPEND, MPI_INFO_NULL,
                       &g));
    CHECK(ga_group_insert(g, C.a) == GA_EMISMATCH, "different extents");
    OK(ga_group_free(g));
    drop(&C);

    /* a corrupt schema is an error, not a crash */
    if (me == 0) {
        MPI_File fh;
        snprintf(p, sizeof(p), "%s.ts.schema", path);
        MPI_File_open(MPI_COMM_SELF, p, MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
        MPI_File_write_at(fh, 40, "\x01garbage", 8, MPI_BYTE,
                          MPI_STATUS_IGNORE);
        MPI_File_close(&fh);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    snprintf(p, sizeof(p), "%s.ts", path);
    rc = ga_group_create(MPI_COMM_WORLD, GA_TIMESTEP, p, GA_APPEND,
                         MPI_INFO_NULL, &g);
    CHECK(rc == GA_ESCHEMA, "corrupt schema: %d", rc);
    if (me == 0)
        printf("message: %s\n", ga_errmsg());
    /* memory not bound */
    ga_array *nb;
    spec.name = "nb";
    OK(ga_array_create(MPI_COMM_WORLD, &spec, &nb));
    snprintf(p, sizeof(p), "%s.nb", path);
    OK(ga_group_create(MPI_COMM_WORLD, GA_TIMESTEP, p, GA_CREATE, MPI_INFO_NULL,
                       &g));
    OK(ga_group_insert(g, nb));
    CHECK(ga_timestep(g, 0) == GA_ESTATE, "unbound memory");
    OK(ga_group_free(g));
    ga_array_free(nb);
    drop(&A);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 3 || !arg(argc, argv, "path", NULL)) {
        if (me == 0)
            fprintf(stderr, "usage: t_arrays SCENARIO path=P [key=value...]\n");
        MPI_Finalize();
        return 2;
    }
    const char *s = argv[1];
    if (!strcmp(s, "write-ts"))
        write_ts(argc, argv);
    else if (!strcmp(s, "read-ts"))
        read_ts(argc, argv);
    else if (!strcmp(s, "write-ckpt"))
        write_ckpt(argc, argv);
    else if (!strcmp(s, "restart"))
        restart(argc, argv);
    else if (!strcmp(s, "fault-loop"))
        fault_loop(argc, argv);
    else if (!strcmp(s, "export"))
        export(argc, argv);
    else if (!strcmp(s, "errors"))
        errors(argc, argv);
    else {
        if (me == 0)
            fprintf(stderr, "t_arrays: unknown scenario %s\n", s);
        MPI_Finalize();
        return 2;
    }
    finish();
    return 0;
}
