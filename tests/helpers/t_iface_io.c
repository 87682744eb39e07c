/*
 * t_iface_io.c -- byte-exact checks of every blocking data interface
 * against a model kept in memory: simple-strided, nested-strided (2 and 3
 * levels), nested-batched (simple and nested entries mixed), list I/O with
 * zero-length and overlapping pieces (a later piece wins), negative memory
 * strides, a strided request of 1,000,000 pieces, and plain / list I/O on
 * striped files with a 200-byte stripe unit.  Run by
 * tests/test_interfaces.py.
 *
 *   strided|nested|batch|listio|million|striped NAME
 *
 * The expected bytes are computed by independent code (t_iface_model.h:
 * a recursive walk over the stride levels; here: the striping formula of
 * galley.h), never by the library's own expansion.
 *
 * Threads: single-threaded.
 */
#include <errno.h>

#include "t_iface_model.h"
#include "thelp.h"

/* A file of nsub subfiles with fork "f" in each, opened; -1 on failure. */
static int make_forks(const char *name, int nsub, int *kids)
{
    if (!EXPECT_EQ(gfs_create_file(name, nsub, NULL), 0))
        return -1;
    int fid = (int)EXPECT_OK(gfs_open_file(name));
    if (fid < 0)
        return -1;
    EXPECT_EQ(gfs_all_create(fid, "f"), 0);
    if (EXPECT_OK(gfs_all_open(fid, "f", kids)) < 0)
        return -1;
    return fid;
}

/* ------------------------------------------------------ simple-strided -- */

static void strided(const char *name)
{
    int kid;
    if (make_forks(name, 1, &kid) < 0)
        return;
    model m;
    model_init(&m, 1 << 20);
    unsigned char *src = t_xmalloc(1 << 18), *got = t_xmalloc(1 << 18),
                  *want = t_xmalloc(1 << 18);
    t_fill(src, 1 << 18, 1);

    /* Gaps in the file and in memory. */
    gfs_stride l = {500, 13, 9};
    EXPECT_EQ(gfs_write_strided(kid, 3, src, 7, 500, 13, 9), 500 * 7);
    ref_apply(&m, GFS_WRITE, src, 3, 7, 1, &l);
    check_fork(kid, &m, "strided, gaps in file and memory");

    /* Read back packed, and with a wide memory stride. */
    memset(got, 0xee, 500 * 7);
    EXPECT_EQ(gfs_read_strided(kid, 3, got, 7, 500, 13, 7), 500 * 7);
    l = (gfs_stride){500, 13, 7};
    ref_apply(&m, GFS_READ, want, 3, 7, 1, &l);
    EXPECT_MEM(got, want, 500 * 7, "strided read packed");
    memset(got, 0xee, 500 * 11);
    memset(want, 0xee, 500 * 11);
    EXPECT_EQ(gfs_read_strided(kid, 3, got, 7, 500, 13, 11), 500 * 7);
    l = (gfs_stride){500, 13, 11};
    ref_apply(&m, GFS_READ, want, 3, 7, 1, &l);
    EXPECT_MEM(got, want, 500 * 11, "strided read, memory gaps untouched");

    /* Negative memory stride: piece i comes from the end of the buffer. */
    unsigned char *last = src + 5000 + 299 * 16;
    EXPECT_EQ(gfs_write_strided(kid, 8000, last, 16, 300, 40, -16), 300 * 16);
    l = (gfs_stride){300, 40, -16};
    ref_apply(&m, GFS_WRITE, last, 8000, 16, 1, &l);
    check_fork(kid, &m, "strided write, negative memory stride");
    memset(got, 0xee, 300 * 20);
    memset(want, 0xee, 300 * 20);
    l = (gfs_stride){300, 40, -20};
    EXPECT_EQ(gfs_read_strided(kid, 8000, got + 299 * 20, 16, 300, 40, -20),
              300 * 16);
    ref_apply(&m, GFS_READ, want + 299 * 20, 8000, 16, 1, &l);
    EXPECT_MEM(got, want, 300 * 20, "strided read, negative memory stride");

    /* File stride 0: every piece lands on the same bytes, the last wins. */
    EXPECT_EQ(gfs_write_strided(kid, 30000, src + 20000, 10, 5, 0, 10), 50);
    l = (gfs_stride){5, 0, 10};
    ref_apply(&m, GFS_WRITE, src + 20000, 30000, 10, 1, &l);
    EXPECT_MEM(m.b + 30000, src + 20040, 10, "model: last piece wins");
    check_fork(kid, &m, "strided write, file stride 0");
    memset(got, 0xee, 50);
    EXPECT_EQ(gfs_read_strided(kid, 30000, got, 10, 5, 0, 10), 50);
    for (int i = 0; i < 5; i++)
        EXPECT_MEM(got + 10 * i, src + 20040, 10, "file stride 0 read");

    /* File stride smaller than the piece: overlapping pieces, later wins. */
    EXPECT_EQ(gfs_write_strided(kid, 31000, src + 21000, 10, 50, 4, 10), 500);
    l = (gfs_stride){50, 4, 10};
    ref_apply(&m, GFS_WRITE, src + 21000, 31000, 10, 1, &l);
    check_fork(kid, &m, "strided write, overlapping pieces");

    /* Contiguous in the file, gaps in memory; memory stride 0. */
    EXPECT_EQ(gfs_write_strided(kid, 33000, src + 30000, 24, 100, 24, 48),
              2400);
    l = (gfs_stride){100, 24, 48};
    ref_apply(&m, GFS_WRITE, src + 30000, 33000, 24, 1, &l);
    EXPECT_EQ(gfs_write_strided(kid, 37000, src + 40000, 5, 77, 9, 0), 385);
    l = (gfs_stride){77, 9, 0};
    ref_apply(&m, GFS_WRITE, src + 40000, 37000, 5, 1, &l);
    check_fork(kid, &m, "strided write, contiguous file / memory stride 0");

    /* Zero-length: size 0 or count 0 move nothing and change nothing. */
    EXPECT_EQ(gfs_write_strided(kid, 90000, src, 0, 100, 10, 10), 0);
    EXPECT_EQ(gfs_write_strided(kid, 90000, src, 10, 0, 10, 10), 0);
    EXPECT_EQ(gfs_read_strided(kid, 0, got, 0, 100, 10, 10), 0);
    check_fork(kid, &m, "zero-length strided requests");

    /* Reads past the end of the fork: zeros, count * size reported. */
    int64_t end = m.size;
    memset(got, 0xee, 64 * 8);
    EXPECT_EQ(gfs_read_strided(kid, end - 100, got, 8, 64, 5, 8), 64 * 8);
    l = (gfs_stride){64, 5, 8};
    ref_apply(&m, GFS_READ, want, end - 100, 8, 1, &l);
    EXPECT_MEM(got, want, 64 * 8, "strided read across end of fork");
    EXPECT_TRUE(t_all_zero(got + 20 * 8, 44 * 8));

    /* Argument errors. */
    EXPECT_EQ(gfs_write_strided(kid, 0, src, 4, 10, -8, 4), -EINVAL);
    EXPECT_EQ(gfs_write_strided(kid, 0, src, 4, -1, 8, 4), -EINVAL);
    EXPECT_EQ(gfs_read_strided(kid, -4, got, 4, 10, 8, 4), -EINVAL);
    check_fork(kid, &m, "after rejected requests");
    free(src);
    free(got);
    free(want);
    free(m.b);
}

/* ------------------------------------------------------ nested-strided -- */

static void nested(const char *name)
{
    int kid;
    if (make_forks(name, 1, &kid) < 0)
        return;
    model m;
    model_init(&m, 1 << 20);
    enum { R = 50, C = 60, E = 8, BASE = 100 };
    unsigned char *src = t_xmalloc(1 << 18), *got = t_xmalloc(1 << 18),
                  *want = t_xmalloc(1 << 18);
    t_fill(src, 1 << 18, 2);

    /* Two levels: the whole matrix written row-major, then a 40x40
     * submatrix overwritten from a column-major (transposed) buffer. */
    EXPECT_EQ(gfs_write(kid, BASE, src, R * C * E), R * C * E);
    model_put(&m, BASE, src, R * C * E);
    gfs_stride two[2] = {{40, C * E, E}, {40, E, 40 * E}};
    int64_t off2 = BASE + (5 * C + 10) * E;
    EXPECT_EQ(gfs_write_nested(kid, off2, src + 50000, E, 2, two), 40 * 40 * E);
    ref_apply(&m, GFS_WRITE, src + 50000, off2, E, 2, two);
    check_fork(kid, &m, "nested 2 levels, transposed memory");

    /* Read it back row-major with the rows reversed in memory. */
    gfs_stride rev[2] = {{40, C * E, -40 * E}, {40, E, E}};
    memset(got, 0xee, 40 * 40 * E);
    unsigned char *gend = got + 39 * 40 * E;
    EXPECT_EQ(gfs_read_nested(kid, off2, gend, E, 2, rev), 40 * 40 * E);
    ref_apply(&m, GFS_READ, want + 39 * 40 * E, off2, E, 2, rev);
    EXPECT_MEM(got, want, 40 * 40 * E, "nested 2 levels, rows reversed");
    /* and the transposed read gives back what was written */
    memset(got, 0xee, 40 * 40 * E);
    EXPECT_EQ(gfs_read_nested(kid, off2, got, E, 2, two), 40 * 40 * E);
    EXPECT_MEM(got, src + 50000, 40 * 40 * E, "nested 2 levels read back");

    /* Three levels: a 3-D array A x B x Cc of 4-byte elements; in a 4x4
     * block of (a, b), two runs of 3 elements (c = 0..2 and 5..7) --
     * pieces of 12 bytes -- written from a buffer where a varies fastest. */
    enum { A = 6, B = 7, CC = 8, E3 = 4, BASE3 = 40000 };
    gfs_stride three[3] = {{4, B * CC * E3, 3 * E3},
                           {4, CC * E3, 4 * 3 * E3},
                           {2, 5 * E3, 16 * 3 * E3}};
    int64_t off3 = BASE3 + ((1 * B + 2) * CC + 0) * E3;
    EXPECT_EQ(gfs_write_nested(kid, off3, src + 90000, 3 * E3, 3, three),
              32 * 3 * E3);
    ref_apply(&m, GFS_WRITE, src + 90000, off3, 3 * E3, 3, three);
    check_fork(kid, &m, "nested 3 levels");

    /* Read back packed in natural order (a, b, run). */
    gfs_stride nat[3] = {{4, B * CC * E3, 8 * 3 * E3},
                         {4, CC * E3, 2 * 3 * E3},
                         {2, 5 * E3, 3 * E3}};
    memset(got, 0xee, 32 * 3 * E3);
    EXPECT_EQ(gfs_read_nested(kid, off3, got, 3 * E3, 3, nat), 32 * 3 * E3);
    ref_apply(&m, GFS_READ, want, off3, 3 * E3, 3, nat);
    EXPECT_MEM(got, want, 32 * 3 * E3, "nested 3 levels, natural order");

    /* Three levels with a negative memory stride in the middle level and
     * pieces overlapping across the outer level (fstride < span). */
    gfs_stride ov[3] = {{3, 20, 400}, {5, 8, -40}, {4, 2, 10}};
    int64_t off4 = 60000;
    unsigned char *ovsrc = src + 120000 + 4 * 40;
    EXPECT_EQ(gfs_write_nested(kid, off4, ovsrc, 6, 3, ov), 60 * 6);
    ref_apply(&m, GFS_WRITE, ovsrc, off4, 6, 3, ov);
    check_fork(kid, &m, "nested 3 levels, overlaps and negative stride");

    /* Four levels, one with count 1, one with file stride 0 (re-reads). */
    gfs_stride four[4] = {
        {2, 3000, 1000}, {1, 999, 0}, {3, 0, 300}, {5, 50, 20}};
    memset(got, 0xee, 3000);
    memset(want, 0xee, 3000);
    EXPECT_EQ(gfs_read_nested(kid, BASE, got, 20, 4, four), 2 * 3 * 5 * 20);
    ref_apply(&m, GFS_READ, want, BASE, 20, 4, four);
    EXPECT_MEM(got, want, 3000, "nested 4 levels read");

    /* A level with count 0 moves nothing. */
    gfs_stride zero[2] = {{10, 100, 10}, {0, 10, 1}};
    EXPECT_EQ(gfs_write_nested(kid, 0, src, 4, 2, zero), 0);
    /* Argument errors. */
    EXPECT_EQ(gfs_write_nested(kid, 0, src, 4, 0, two), -EINVAL);
    EXPECT_EQ(gfs_write_nested(kid, 0, src, 4, GFS_MAX_LEVELS + 1, two),
              -EINVAL);
    gfs_stride neg[2] = {{10, 100, 10}, {3, -1, 1}};
    EXPECT_EQ(gfs_write_nested(kid, 0, src, 4, 2, neg), -EINVAL);
    check_fork(kid, &m, "after empty and rejected nested requests");
    free(src);
    free(got);
    free(want);
    free(m.b);
}

/* ----------------------------------------------------- nested-batched -- */

/* Random batches of overlapping strided entries, later wins. */
static void batch_random(int kid, model *m, unsigned char *src)
{
    uint64_t st = 99;
    for (int round = 0; round < 5; round++) {
        gfs_batch_entry rb[40];
        memset(rb, 0, sizeof(rb));
        int64_t moff = 0;
        for (int i = 0; i < 40; i++) {
            gfs_batch_entry *b = &rb[i];
            b->file_offset = (int64_t)(t_rand(&st) % 20000);
            b->size = (int64_t)(t_rand(&st) % 40);
            b->nlevels = (int)(t_rand(&st) % 4);
            int64_t pieces = 1;
            for (int l = 0; l < b->nlevels; l++) {
                b->levels[l].count = 1 + (int64_t)(t_rand(&st) % 5);
                b->levels[l].fstride = (int64_t)(t_rand(&st) % 120);
                pieces *= b->levels[l].count;
            }
            /* packed memory, innermost level fastest */
            int64_t ms = b->size;
            for (int l = b->nlevels - 1; l >= 0; l--) {
                b->levels[l].mstride = ms;
                ms *= b->levels[l].count;
            }
            b->mem_offset = moff;
            moff += pieces * b->size;
        }
        EXPECT_EQ(gfs_batch_io(kid, GFS_WRITE, 40, rb, src),
                  batch_bytes(40, rb));
        batch_apply(m, GFS_WRITE, src, 40, rb);
        check_fork(kid, m, "random overlapping batch");
    }
}

static void batch(const char *name)
{
    int kid;
    if (make_forks(name, 1, &kid) < 0)
        return;
    model m;
    model_init(&m, 1 << 20);
    unsigned char *src = t_xmalloc(1 << 18), *got = t_xmalloc(1 << 18),
                  *want = t_xmalloc(1 << 18);
    t_fill(src, 1 << 18, 3);

    gfs_batch_entry e[9];
    memset(e, 0, sizeof(e));
    /* simple piece */
    e[0] = (gfs_batch_entry){.file_offset = 0, .mem_offset = 0, .size = 100};
    /* simple-strided */
    e[1] = (gfs_batch_entry){.file_offset = 1000,
                             .mem_offset = 100,
                             .size = 10,
                             .nlevels = 1,
                             .levels = {{20, 30, 10}}};
    /* nested, 2 levels */
    e[2] = (gfs_batch_entry){.file_offset = 3000,
                             .mem_offset = 300,
                             .size = 4,
                             .nlevels = 2,
                             .levels = {{5, 100, 24}, {6, 8, 4}}};
    /* zero-size simple piece */
    e[3] = (gfs_batch_entry){.file_offset = 50, .mem_offset = 0, .size = 0};
    /* a level with count 0 */
    e[4] = (gfs_batch_entry){.file_offset = 60,
                             .mem_offset = 0,
                             .size = 9,
                             .nlevels = 1,
                             .levels = {{0, 5, 5}}};
    /* simple piece overlapping e[0] and e[1]: later wins */
    e[5] = (gfs_batch_entry){.file_offset = 90, .mem_offset = 500, .size = 930};
    /* 3 levels overlapping e[2] partially */
    e[6] = (gfs_batch_entry){.file_offset = 3002,
                             .mem_offset = 2000,
                             .size = 3,
                             .nlevels = 3,
                             .levels = {{2, 200, 300}, {3, 8, 30}, {4, 2, 5}}};
    /* negative memory stride; mem_offset points at the last piece */
    e[7] = (gfs_batch_entry){.file_offset = 6000,
                             .mem_offset = 3000 + 49 * 12,
                             .size = 12,
                             .nlevels = 1,
                             .levels = {{50, 20, -12}}};
    /* simple piece entirely inside e[7]'s range, after it */
    e[8] =
        (gfs_batch_entry){.file_offset = 6105, .mem_offset = 4000, .size = 33};
    int64_t total = batch_bytes(9, e);
    EXPECT_EQ(gfs_batch_io(kid, GFS_WRITE, 9, e, src), total);
    batch_apply(&m, GFS_WRITE, src, 9, e);
    check_fork(kid, &m, "batch write, mixed entries");

    /* Read with a different memory layout: everything packed. */
    gfs_batch_entry r[6];
    memset(r, 0, sizeof(r));
    r[0] = (gfs_batch_entry){.file_offset = 0, .mem_offset = 0, .size = 1500};
    r[1] = (gfs_batch_entry){.file_offset = 1000,
                             .mem_offset = 1500,
                             .size = 10,
                             .nlevels = 1,
                             .levels = {{20, 30, 10}}};
    r[2] = (gfs_batch_entry){.file_offset = 3000,
                             .mem_offset = 1700,
                             .size = 8,
                             .nlevels = 2,
                             .levels = {{5, 100, 48}, {6, 8, 8}}};
    r[3] =
        (gfs_batch_entry){.file_offset = 6000, .mem_offset = 2000, .size = 0};
    r[4] = (gfs_batch_entry){.file_offset = 5990,
                             .mem_offset = 2000 + 59 * 17,
                             .size = 17,
                             .nlevels = 1,
                             .levels = {{60, 17, -17}}};
    r[5] = (gfs_batch_entry){.file_offset = 6900,
                             .mem_offset = 4000,
                             .size = 300}; /* past the end: zeros */
    memset(got, 0xee, 5000);
    memset(want, 0xee, 5000);
    EXPECT_EQ(gfs_batch_io(kid, GFS_READ, 6, r, got), batch_bytes(6, r));
    batch_apply(&m, GFS_READ, want, 6, r);
    EXPECT_MEM(got, want, 5000, "batch read, other layout");

    batch_random(kid, &m, src);
    EXPECT_EQ(gfs_batch_io(kid, GFS_WRITE, 0, NULL, NULL), 0);
    free(src);
    free(got);
    free(want);
    free(m.b);
}

/* ------------------------------------------------------------ list I/O -- */

static void listio(const char *name)
{
    int kid;
    if (make_forks(name, 1, &kid) < 0)
        return;
    model m;
    model_init(&m, 1 << 20);
    unsigned char *src = t_xmalloc(1 << 20), *got = t_xmalloc(1 << 20),
                  *want = t_xmalloc(1 << 20);
    t_fill(src, 1 << 20, 4);

    /* Hand-made overlaps: identical range, partial, contained, covering,
     * descending adjacent, and zero-length pieces between them. */
    gfs_list_entry h[] = {
        {100, 0, 50},    {100, 50, 50},  /* identical: second wins     */
        {200, 100, 40},  {220, 140, 40}, /* partial overlap            */
        {300, 200, 100}, {330, 300, 10}, /* contained, after the large */
        {500, 310, 10},  {480, 320, 60}, /* covering, after the small  */
        {0, 380, 0},     {700, 380, 0},  /* zero-length                */
        {900, 380, 20},  {880, 400, 20}, /* descending, adjacent       */
        {860, 420, 20},  {5000, 440, 0}, /* zero-length past the end   */
    };
    int64_t nh = (int64_t)(sizeof(h) / sizeof(h[0]));
    EXPECT_EQ(gfs_listio(kid, GFS_WRITE, nh, h, src), list_bytes(nh, h));
    list_apply(&m, GFS_WRITE, src, nh, h);
    EXPECT_MEM(m.b + 100, src + 50, 50, "model: identical range");
    check_fork(kid, &m, "list write, hand-made overlaps");
    /* a zero-length piece past the end does not extend the fork */
    EXPECT_EQ(gfs_fork_size(kid), 920);

    /* Random overlapping writes with zero-length pieces, several rounds. */
    uint64_t st = 7;
    for (int round = 0; round < 6; round++) {
        int n = round == 5 ? 20000 : 2000;
        gfs_list_entry *e = t_xmalloc(sizeof(*e) * (size_t)n);
        int64_t moff = 0;
        for (int i = 0; i < n; i++) {
            int64_t sz = (int64_t)(t_rand(&st) % 300);
            if (t_rand(&st) % 8 == 0)
                sz = 0;
            e[i].file_offset = (int64_t)(t_rand(&st) % 30000);
            e[i].size = sz;
            /* memory in a scrambled order too */
            e[i].mem_offset = (int64_t)(t_rand(&st) % ((1 << 20) - 300));
            moff += sz;
        }
        (void)moff;
        EXPECT_EQ(gfs_listio(kid, GFS_WRITE, n, e, src), list_bytes(n, e));
        list_apply(&m, GFS_WRITE, src, n, e);
        check_fork(kid, &m, "random overlapping list write");
        free(e);
    }

    /* Random reads (non-overlapping in memory), some past the end. */
    {
        int n = 3000;
        gfs_list_entry *e = t_xmalloc(sizeof(*e) * (size_t)n);
        int64_t moff = 0;
        for (int i = 0; i < n; i++) {
            e[i].file_offset = (int64_t)(t_rand(&st) % 31000);
            e[i].size = (int64_t)(t_rand(&st) % 200);
            e[i].mem_offset = moff;
            moff += e[i].size;
        }
        memset(got, 0xee, (size_t)moff);
        memset(want, 0xee, (size_t)moff);
        EXPECT_EQ(gfs_listio(kid, GFS_READ, n, e, got), moff);
        list_apply(&m, GFS_READ, want, n, e);
        EXPECT_MEM(got, want, (size_t)moff, "random list read");
        free(e);
    }

    /* Empty and rejected lists. */
    EXPECT_EQ(gfs_listio(kid, GFS_WRITE, 0, NULL, src), 0);
    gfs_list_entry bad[2] = {{0, 0, 10}, {-5, 0, 10}};
    EXPECT_EQ(gfs_listio(kid, GFS_WRITE, 2, bad, src), -EINVAL);
    bad[1] = (gfs_list_entry){0, -1, 10};
    EXPECT_EQ(gfs_listio(kid, GFS_WRITE, 2, bad, src), -EINVAL);
    EXPECT_EQ(gfs_listio(kid, 7, 1, bad, src), -EINVAL);
    check_fork(kid, &m, "after rejected lists");
    free(src);
    free(got);
    free(want);
    free(m.b);
}

/* ------------------------------------------------------ 1,000,000 pieces */

static void million(const char *name)
{
    int kid;
    if (make_forks(name, 1, &kid) < 0)
        return;
    const int64_t N = 1000000, S = 16, FS = 32, MS = 24;
    unsigned char *src = t_xmalloc((size_t)(N * S));
    unsigned char *got = t_xmalloc((size_t)(N * MS));
    t_fill(src, (size_t)(N * S), 5);
    double t0 = t_now();
    EXPECT_EQ(gfs_write_strided(kid, 0, src, S, N, FS, S), N * S);
    double t1 = t_now();
    EXPECT_EQ(gfs_fork_size(kid), (N - 1) * FS + S);
    /* Read back into memory with gaps (a different memory stride). */
    memset(got, 0xee, (size_t)(N * MS));
    double t2 = t_now();
    EXPECT_EQ(gfs_read_strided(kid, 0, got, S, N, FS, MS), N * S);
    double t3 = t_now();
    int64_t bad = -1;
    for (int64_t i = 0; i < N && bad < 0; i++)
        if (memcmp(got + i * MS, src + i * S, (size_t)S) != 0 ||
            got[i * MS + S] != 0xee)
            bad = i;
    t_checks++;
    if (bad >= 0)
        t_fail(__FILE__, __LINE__, "million: piece %" PRId64 " wrong", bad);
    /* The holes between pieces read as zeros. */
    unsigned char head[4096];
    EXPECT_EQ(gfs_read(kid, 0, head, sizeof(head)), (int64_t)sizeof(head));
    bool ok = true;
    for (int i = 0; i < 4096; i++) {
        int64_t p = i / FS, in = i % FS;
        unsigned char w = in < S ? src[p * S + in] : 0;
        ok &= head[i] == w;
    }
    EXPECT_TRUE(ok);
    /* The tail piece, by a plain read. */
    unsigned char tail[16];
    EXPECT_EQ(gfs_read(kid, (N - 1) * FS, tail, S), S);
    EXPECT_MEM(tail, src + (N - 1) * S, (size_t)S, "last piece");
    /* The same pattern as a list of 1,000,000 entries, new data: the
     * wire form does not depend on the interface that produced it. */
    gfs_list_entry *e = t_xmalloc(sizeof(*e) * (size_t)N);
    for (int64_t i = 0; i < N; i++)
        e[i] = (gfs_list_entry){i * FS, i * S, S};
    t_fill(src, (size_t)(N * S), 6);
    double t4 = t_now();
    EXPECT_EQ(gfs_listio(kid, GFS_WRITE, N, e, src), N * S);
    double t5 = t_now();
    memset(got, 0xee, (size_t)(N * MS));
    EXPECT_EQ(gfs_read_strided(kid, 0, got, S, N, FS, MS), N * S);
    bad = -1;
    for (int64_t i = 0; i < N && bad < 0; i++)
        if (memcmp(got + i * MS, src + i * S, (size_t)S) != 0)
            bad = i;
    t_checks++;
    if (bad >= 0)
        t_fail(__FILE__, __LINE__, "million list: piece %" PRId64 " wrong",
               bad);
    free(e);
    printf("INFO million: strided write %.3f s, read %.3f s; list write "
           "%.3f s (%" PRId64 " pieces of %" PRId64 " B)\n",
           t1 - t0, t3 - t2, t5 - t4, N, S);
    free(src);
    free(got);
}

/* ------------------------------------------------------------- striped -- */

/* Logical byte x of (nsub, unit): subfile and fork offset (galley.h). */
static void locate(int nsub, int64_t unit, int64_t x, int *sub, int64_t *fo)
{
    *sub = (int)((x / unit) % nsub);
    *fo = (x / (unit * nsub)) * unit + x % unit;
}

/*
 * Every subfile's fork must hold the model's bytes.  A fork ends at the
 * last byte written to it, so a fork whose tail stripe units were never
 * written is shorter than the logical size implies: its size may be less
 * than that bound, but everything past it must be a hole (zeros in the
 * model), and the fork holding the last logical byte ends exactly there.
 */
static void check_subfiles(int sid, const model *m, int nsub, int64_t unit,
                           const char *what)
{
    EXPECT_EQ(gfs_striped_size(sid), m->size);
    int last_sub = -1;
    if (m->size > 0) {
        int64_t fo;
        locate(nsub, unit, m->size - 1, &last_sub, &fo);
    }
    for (int s = 0; s < nsub; s++) {
        int kid = gfs_striped_kid(sid, s);
        int64_t bound = 0;
        unsigned char *exp = t_xmalloc((size_t)m->size);
        memset(exp, 0, (size_t)m->size);
        for (int64_t x = 0; x < m->size; x++) {
            int sub;
            int64_t fo;
            locate(nsub, unit, x, &sub, &fo);
            if (sub == s) {
                exp[fo] = m->b[x];
                bound = fo + 1;
            }
        }
        int64_t fs = gfs_fork_size(kid);
        bool ok = fs >= 0 && fs <= bound &&
                  t_all_zero(exp + fs, (size_t)(bound - fs));
        if (s == last_sub)
            ok &= fs == bound;
        if (!EXPECT_TRUE(ok)) {
            printf("  (%s: subfile %d size %" PRId64 ", bound %" PRId64 ")\n",
                   what, s, fs, bound);
            free(exp);
            continue;
        }
        unsigned char *img = t_xmalloc((size_t)fs);
        EXPECT_EQ(gfs_read(kid, 0, img, fs), fs);
        if (!EXPECT_MEM(img, exp, (size_t)fs, what))
            printf("  (subfile %d)\n", s);
        free(img);
        free(exp);
    }
    /* and the logical view */
    unsigned char *img = t_xmalloc((size_t)m->size);
    EXPECT_EQ(gfs_striped_read(sid, 0, img, m->size), m->size);
    EXPECT_MEM(img, m->b, (size_t)m->size, what);
    free(img);
}

/* Overlapping striped list writes, later wins: hand-made first (the
 * same range twice; a piece inside an earlier one; one that starts in
 * another subfile and overlaps on this one), then random rounds. */
static void striped_overlap(int sid, model *m, int nsub, int64_t U,
                            unsigned char *src, uint64_t *st)
{
    {
        gfs_list_entry h[] = {{1000, 0, 600},   {1000, 600, 600},
                              {1150, 1200, 20}, {1100, 1220, 400},
                              {1399, 1620, 3},  {0, 2000, 0}};
        int64_t nh = (int64_t)(sizeof(h) / sizeof(h[0]));
        EXPECT_EQ(gfs_striped_listio(sid, GFS_WRITE, nh, h, src),
                  list_bytes(nh, h));
        list_apply(m, GFS_WRITE, src, nh, h);
        check_subfiles(sid, m, nsub, U, "striped overlapping (hand-made)");
    }
    for (int round = 0; round < 4; round++) {
        int n = 500;
        gfs_list_entry e[500];
        for (int i = 0; i < n; i++) {
            e[i].file_offset = (int64_t)(t_rand(st) % 40000);
            e[i].size = (int64_t)(t_rand(st) % 700);
            if (t_rand(st) % 10 == 0)
                e[i].size = 0;
            e[i].mem_offset = (int64_t)(t_rand(st) % ((1 << 20) - 700));
        }
        EXPECT_EQ(gfs_striped_listio(sid, GFS_WRITE, n, e, src),
                  list_bytes(n, e));
        list_apply(m, GFS_WRITE, src, n, e);
        check_subfiles(sid, m, nsub, U, "striped overlapping (random)");
    }
}

/* Non-blocking striped list read of scattered pieces. */
static void striped_nb(int sid, model *m, unsigned char *got,
                       unsigned char *want, uint64_t *st)
{
    gfs_list_entry e[300];
    int64_t at = 0;
    for (int i = 0; i < 300; i++) {
        e[i] = (gfs_list_entry){(int64_t)(t_rand(st) % 42000), at,
                                (int64_t)(t_rand(st) % 450)};
        at += e[i].size;
    }
    memset(got, 0xee, (size_t)at);
    gfs_handle hd = gfs_new_handle();
    EXPECT_EQ(gfs_nb_striped_listio(hd, sid, GFS_READ, 300, e, got), 0);
    EXPECT_EQ(gfs_wait(hd), at);
    list_apply(m, GFS_READ, want, 300, e);
    EXPECT_MEM(got, want, (size_t)at, "nb striped list read");
}

static void striped_one(const char *base, int nsub)
{
    char name[300];
    snprintf(name, sizeof(name), "%s.%d", base, nsub);
    const int64_t U = 200;
    if (!EXPECT_EQ(gfs_create_striped(name, nsub, NULL, U, NULL), 0))
        return;
    int sid = (int)EXPECT_OK(gfs_striped_open(name));
    if (sid < 0)
        return;
    gfs_layout lay;
    EXPECT_EQ(gfs_striped_layout(sid, &lay), 0);
    EXPECT_EQ(lay.unit, U);
    EXPECT_EQ(lay.nsubfiles, nsub);
    model m;
    model_init(&m, 1 << 20);
    unsigned char *src = t_xmalloc(1 << 20), *got = t_xmalloc(1 << 20),
                  *want = t_xmalloc(1 << 20);
    t_fill(src, 1 << 20, 6 + (uint64_t)nsub);

    /* Plain writes crossing units, subfiles and a whole row. */
    static const int64_t pw[][2] = {{150, 1000},  {0, 1},     {199, 2},
                                    {799, 2},     {599, 402}, {17, 12345},
                                    {20000, 200}, {20400, 1}};
    int64_t moff = 0;
    for (size_t i = 0; i < sizeof(pw) / sizeof(pw[0]); i++) {
        EXPECT_EQ(gfs_striped_write(sid, pw[i][0], src + moff, pw[i][1]),
                  pw[i][1]);
        model_put(&m, pw[i][0], src + moff, pw[i][1]);
        moff += pw[i][1];
    }
    check_subfiles(sid, &m, nsub, U, "striped plain writes");
    /* Plain reads at awkward places, one across the logical end. */
    static const int64_t pr[][2] = {
        {199, 2}, {150, 1000}, {1, 798}, {20390, 5}, {20300, 300}};
    for (size_t i = 0; i < sizeof(pr) / sizeof(pr[0]); i++) {
        memset(got, 0xee, (size_t)pr[i][1]);
        int64_t expect =
            pr[i][0] + pr[i][1] <= m.size ? pr[i][1] : m.size - pr[i][0];
        EXPECT_EQ(gfs_striped_read(sid, pr[i][0], got, pr[i][1]), expect);
        model_get(&m, pr[i][0], want, pr[i][1]);
        EXPECT_MEM(got, want, (size_t)pr[i][1], "striped plain read");
    }
    memset(got, 0xee, 100);
    EXPECT_EQ(gfs_striped_read(sid, m.size + 1000, got, 100), 0);
    EXPECT_TRUE(t_all_zero(got, 100));

    /* List write: 150-byte pieces at stride 170 (crossing units and
     * subfiles), 250-byte pieces (longer than a unit), zero-length ones,
     * memory in reverse order. */
    {
        int n = 0;
        gfs_list_entry e[400];
        int64_t mo = 300000;
        for (int i = 0; i < 120; i++) {
            e[n++] = (gfs_list_entry){333 + i * 170, mo - (i + 1) * 150, 150};
            if (i % 10 == 0)
                e[n++] = (gfs_list_entry){333 + i * 170 + 160, 0, 0};
        }
        for (int i = 0; i < 40; i++)
            e[n++] = (gfs_list_entry){30000 + i * 777, 400000 + i * 250, 250};
        EXPECT_EQ(gfs_striped_listio(sid, GFS_WRITE, n, e, src),
                  list_bytes(n, e));
        list_apply(&m, GFS_WRITE, src, n, e);
        check_subfiles(sid, &m, nsub, U, "striped list write");

        /* read the same pieces into packed memory */
        int64_t at = 0;
        for (int i = 0; i < n; i++) {
            e[i].mem_offset = at;
            at += e[i].size;
        }
        memset(got, 0xee, (size_t)at);
        EXPECT_EQ(gfs_striped_listio(sid, GFS_READ, n, e, got), at);
        list_apply(&m, GFS_READ, want, n, e);
        EXPECT_MEM(got, want, (size_t)at, "striped list read");
    }

    uint64_t st = 11 + (uint64_t)nsub;
    striped_overlap(sid, &m, nsub, U, src, &st);
    striped_nb(sid, &m, got, want, &st);
    EXPECT_EQ(gfs_striped_close(sid), 0);
    EXPECT_EQ(gfs_delete_file(name), 0);
    free(src);
    free(got);
    free(want);
    free(m.b);
}

static void striped(const char *name)
{
    striped_one(name, 4);
    striped_one(name, 3);
    striped_one(name, 1);
}

/* ---------------------------------------------------------------- main -- */

int main(int argc, char **argv)
{
    const char *use = "strided|nested|batch|listio|million|striped NAME";
    if (argc < 3)
        return t_usage(argv[0], use);
    static const struct {
        const char *name;
        void (*fn)(const char *);
    } scen[] = {{"strided", strided}, {"nested", nested},
                {"batch", batch},     {"listio", listio},
                {"million", million}, {"striped", striped}};
    for (size_t i = 0; i < sizeof(scen) / sizeof(scen[0]); i++) {
        if (!strcmp(argv[1], scen[i].name)) {
            t_init();
            scen[i].fn(argv[2]);
            EXPECT_EQ(gfs_finalize(), 0);
            return t_finish();
        }
    }
    return t_usage(argv[0], use);
}
