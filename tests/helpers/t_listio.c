/*
 * t_listio.c -- list I/O (gfs_listio) and plain I/O, byte-exact, against a
 * real cluster.  Run by tests/test_listio.py.
 *
 *   big NAME [NPIECES [PIECE]]  a 4-subfile file on servers 0..3; on every
 *        subfile's fork write NPIECES (100000) pieces of PIECE (16) bytes at
 *        shuffled, gapped offsets in one call, read them back in another
 *        order and as one plain read; gaps must be zeros
 *   overlap NAME   overlapping write pieces: the later piece wins
 *   zero NAME      zero-size pieces and empty lists
 *   beyond NAME    reads past the end: short counts, zeros
 *   large NAME     single requests bigger than the server's data limit
 *   spans NAME     one write list of large pieces overlapping across many
 *        32 KB cache blocks (a later piece wins) and a read list
 *
 * Threads: single-threaded.
 */
#include <errno.h>

#include "thelp.h"

static int open_fork(const char *name, int nsub, const int *servers,
                     const char *fork, int *kids)
{
    if (!EXPECT_EQ(gfs_create_file(name, nsub, servers), 0))
        return -1;
    int fid = (int)EXPECT_OK(gfs_open_file(name));
    if (fid < 0)
        return -1;
    EXPECT_EQ(gfs_all_create(fid, fork), 0);
    if (EXPECT_OK(gfs_all_open(fid, fork, kids)) < 0)
        return -1;
    return fid;
}

static void shuffle(int64_t *v, int64_t n, uint64_t seed)
{
    uint64_t st = seed;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(t_rand(&st) % (uint64_t)(i + 1));
        int64_t t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

static void big(const char *name, int64_t n, int64_t p)
{
    const int servers[4] = {0, 1, 2, 3};
    int kids[4];
    int fid = open_fork(name, 4, servers, "lio", kids);
    if (fid < 0)
        return;
    size_t bytes = (size_t)(n * p);
    unsigned char *src[4];
    gfs_list_entry *ents = t_xmalloc(sizeof(*ents) * (size_t)n);
    int64_t *slot = t_xmalloc(sizeof(*slot) * (size_t)n);

    for (int s = 0; s < 4; s++) {
        src[s] = t_xmalloc(bytes);
        t_fill(src[s], bytes, 1000 + s);
        /* Piece i goes to slot perm[i]; slots are 2p apart (a gap of p
         * bytes between pieces), shifted by s so subfiles differ. */
        for (int64_t i = 0; i < n; i++)
            slot[i] = i;
        shuffle(slot, n, 77 + s);
        for (int64_t i = 0; i < n; i++) {
            ents[i].file_offset = slot[i] * 2 * p + s;
            ents[i].mem_offset = i * p;
            ents[i].size = p;
        }
        double t0 = t_now();
        EXPECT_EQ(gfs_listio(kids[s], GFS_WRITE, n, ents, src[s]), n * p);
        printf("subfile %d: wrote %" PRId64 " pieces of %" PRId64
               " bytes in %.2f s\n",
               s, n, p, t_now() - t0);
    }
    for (int s = 0; s < 4; s++) {
        int64_t size = (n - 1) * 2 * p + s + p;
        EXPECT_EQ(gfs_fork_size(kids[s]), size);
        /* Read the pieces back with the list reversed: piece i lands at
         * memory offset (n-1-i)*p. */
        for (int64_t i = 0; i < n; i++)
            slot[i] = i;
        shuffle(slot, n, 77 + s);
        for (int64_t i = 0; i < n; i++) {
            int64_t k = n - 1 - i;
            ents[i].file_offset = slot[k] * 2 * p + s;
            ents[i].mem_offset = i * p;
            ents[i].size = p;
        }
        unsigned char *got = t_xmalloc(bytes);
        memset(got, 0xee, bytes);
        EXPECT_EQ(gfs_listio(kids[s], GFS_READ, n, ents, got), n * p);
        int bad = 0;
        for (int64_t i = 0; i < n && bad < 5; i++) {
            int64_t k = n - 1 - i;
            if (memcmp(got + i * p, src[s] + k * p, (size_t)p)) {
                t_fail(__FILE__, __LINE__,
                       "subfile %d: list read piece %" PRId64 " (file offset "
                       "%" PRId64 ") differs",
                       s, k, ents[i].file_offset);
                bad++;
            }
        }
        /* The whole fork in one plain read: pieces in their slots, zero
         * gaps. */
        unsigned char *img = t_xmalloc((size_t)size);
        memset(img, 0xee, (size_t)size);
        EXPECT_EQ(gfs_read(kids[s], 0, img, size), size);
        EXPECT_TRUE(t_all_zero(img, (size_t)s));
        for (int64_t j = 0; j < n && bad < 5; j++) {
            const unsigned char *gap = img + j * 2 * p + s + p;
            if (j < n - 1 && !t_all_zero(gap, (size_t)p)) {
                t_fail(__FILE__, __LINE__,
                       "subfile %d: gap after slot %" PRId64 " not zero", s, j);
                bad++;
            }
        }
        /* Slot contents against the source. */
        for (int64_t i = 0; i < n; i++)
            slot[i] = i;
        shuffle(slot, n, 77 + s);
        for (int64_t i = 0; i < n && bad < 5; i++) {
            if (memcmp(img + slot[i] * 2 * p + s, src[s] + i * p, (size_t)p)) {
                t_fail(__FILE__, __LINE__,
                       "subfile %d: plain read: piece %" PRId64 " wrong", s, i);
                bad++;
            }
        }
        t_checks++;
        if (!bad)
            printf("subfile %d: %" PRId64 " pieces read back byte-exact\n", s,
                   n);
        free(img);
        free(got);
        free(src[s]);
    }
    EXPECT_EQ(gfs_all_close(4, kids), 0);
    EXPECT_EQ(gfs_close_file(fid), 0);
    free(ents);
    free(slot);
}

/* Apply write pieces to a model in list order. */
static void model_apply(unsigned char *model, const gfs_list_entry *e,
                        int64_t n, const unsigned char *buf)
{
    for (int64_t i = 0; i < n; i++)
        memcpy(model + e[i].file_offset, buf + e[i].mem_offset,
               (size_t)e[i].size);
}

static void overlap(const char *name)
{
    int kid;
    int fid = open_fork(name, 1, NULL, "o", &kid);
    if (fid < 0)
        return;
    /* Three pieces over one range: A [0,100), B [50,150), C [25,75). */
    unsigned char buf[300], model[4096] = {0}, got[4096];
    memset(buf, 'A', 100);
    memset(buf + 100, 'B', 100);
    memset(buf + 200, 'C', 100);
    gfs_list_entry e3[3] = {{0, 0, 100}, {50, 100, 100}, {25, 200, 50}};
    EXPECT_EQ(gfs_listio(kid, GFS_WRITE, 3, e3, buf), 250);
    model_apply(model, e3, 3, buf);
    EXPECT_EQ(gfs_read(kid, 0, got, 150), 150);
    EXPECT_MEM(got, model, 150, "A/B/C overlap");
    printf("overlap ABC: %.25s|%.25s|%.25s|%.25s|%.50s\n", got, got + 25,
           got + 50, got + 75, got + 100);

    /* 2000 random overlapping pieces inside 4 KB, one list. */
    enum { N = 2000 };
    static gfs_list_entry e[N];
    static unsigned char data[N * 64];
    uint64_t st = 5;
    t_fill(data, sizeof(data), 6);
    memset(model, 0, sizeof(model));
    model_apply(model, e3, 3, buf);
    int64_t total = 0;
    for (int i = 0; i < N; i++) {
        e[i].size = (int64_t)(t_rand(&st) % 65);
        e[i].file_offset = (int64_t)(t_rand(&st) % (4096 - 64));
        e[i].mem_offset = (int64_t)i * 64;
        total += e[i].size;
    }
    /* The same offset twice in a row as well. */
    e[N - 1].file_offset = e[N - 2].file_offset;
    e[N - 1].size = e[N - 2].size = 64;
    total = 0;
    for (int i = 0; i < N; i++)
        total += e[i].size;
    EXPECT_EQ(gfs_listio(kid, GFS_WRITE, N, e, data), total);
    model_apply(model, e, N, data);
    int64_t size = gfs_fork_size(kid);
    memset(got, 0xee, sizeof(got));
    EXPECT_EQ(gfs_read(kid, 0, got, size), size);
    EXPECT_MEM(got, model, (size_t)size, "random overlapping pieces");

    /* Overlapping read pieces each get their bytes. */
    gfs_list_entry r[3] = {{10, 0, 100}, {20, 100, 100}, {15, 200, 50}};
    unsigned char rb[250];
    EXPECT_EQ(gfs_listio(kid, GFS_READ, 3, r, rb), 250);
    EXPECT_MEM(rb, model + 10, 100, "read piece 0");
    EXPECT_MEM(rb + 100, model + 20, 100, "read piece 1");
    EXPECT_MEM(rb + 200, model + 15, 50, "read piece 2");

    /* Overlapping memory: two write pieces from the same buffer bytes. */
    gfs_list_entry m[2] = {{5000, 0, 64}, {6000, 0, 64}};
    EXPECT_EQ(gfs_listio(kid, GFS_WRITE, 2, m, data), 128);
    EXPECT_EQ(gfs_read(kid, 6000, rb, 64), 64);
    EXPECT_MEM(rb, data, 64, "shared memory piece");
    EXPECT_EQ(gfs_close_file(fid), 0);
}

static void zero(const char *name)
{
    int kid;
    int fid = open_fork(name, 1, NULL, "z", &kid);
    if (fid < 0)
        return;
    unsigned char buf[1024], got[1024];
    t_fill(buf, sizeof(buf), 3);
    EXPECT_EQ(gfs_listio(kid, GFS_WRITE, 0, NULL, buf), 0);
    EXPECT_EQ(gfs_write(kid, 0, buf, 0), 0);
    EXPECT_EQ(gfs_fork_size(kid), 0);
    gfs_list_entry e[6] = {{0, 0, 0},    {0, 0, 100},     {100, 100, 0},
                           {50, 999, 0}, {100, 100, 100}, {200, 1024, 0}};
    EXPECT_EQ(gfs_listio(kid, GFS_WRITE, 6, e, buf), 200);
    EXPECT_EQ(gfs_fork_size(kid), 200);
    memset(got, 0xee, sizeof(got));
    EXPECT_EQ(gfs_read(kid, 0, got, 200), 200);
    EXPECT_MEM(got, buf, 200, "pieces around zero-size ones");
    memset(got, 0xee, sizeof(got));
    EXPECT_EQ(gfs_listio(kid, GFS_READ, 6, e, got), 200);
    EXPECT_MEM(got, buf, 200, "read list with zero-size pieces");
    EXPECT_EQ(got[200], 0xee); /* nothing written past the pieces */
    /* Only zero-size pieces: nothing moves, size unchanged. */
    gfs_list_entry z[3] = {{10, 0, 0}, {150, 5, 0}, {20, 7, 0}};
    EXPECT_EQ(gfs_listio(kid, GFS_WRITE, 3, z, buf), 0);
    EXPECT_EQ(gfs_listio(kid, GFS_READ, 3, z, got), 0);
    EXPECT_EQ(gfs_read(kid, 0, got, 0), 0);
    EXPECT_EQ(gfs_fork_size(kid), 200);
    EXPECT_EQ(gfs_close_file(fid), 0);
}

static void beyond(const char *name)
{
    int kid;
    int fid = open_fork(name, 1, NULL, "b", &kid);
    if (fid < 0)
        return;
    unsigned char data[1000], got[4096];
    t_fill(data, sizeof(data), 9);
    EXPECT_EQ(gfs_write(kid, 0, data, 1000), 1000);
    /* Straddling the end: short count, zeros after. */
    memset(got, 0xee, sizeof(got));
    EXPECT_EQ(gfs_read(kid, 900, got, 500), 100);
    EXPECT_MEM(got, data + 900, 100, "tail");
    EXPECT_TRUE(t_all_zero(got + 100, 400));
    /* Entirely past the end. */
    memset(got, 0xee, sizeof(got));
    EXPECT_EQ(gfs_read(kid, 5000, got, 300), 0);
    EXPECT_TRUE(t_all_zero(got, 300));
    EXPECT_EQ(gfs_read(kid, 1000, got, 10), 0);
    EXPECT_EQ(gfs_read(kid, (int64_t)1 << 40, got, 10), 0);
    /* List pieces beyond the end read as zeros. */
    gfs_list_entry e[3] = {{990, 0, 20}, {3000, 20, 100}, {0, 120, 10}};
    memset(got, 0xee, sizeof(got));
    int64_t rc = gfs_listio(kid, GFS_READ, 3, e, got);
    printf("list read beyond end returned %" PRId64 "\n", rc);
    EXPECT_EQ(rc, 130);
    EXPECT_MEM(got, data + 990, 10, "piece across the end");
    EXPECT_TRUE(t_all_zero(got + 10, 110));
    EXPECT_MEM(got + 120, data, 10, "piece before the end");
    /* Reading never changes the size. */
    EXPECT_EQ(gfs_fork_size(kid), 1000);
    /* Writing past the end leaves a zero hole. */
    EXPECT_EQ(gfs_write(kid, 3000, data, 10), 10);
    EXPECT_EQ(gfs_fork_size(kid), 3010);
    memset(got, 0xee, sizeof(got));
    EXPECT_EQ(gfs_read(kid, 0, got, 4096), 3010);
    EXPECT_MEM(got, data, 1000, "head");
    EXPECT_TRUE(t_all_zero(got + 1000, 2000));
    EXPECT_MEM(got + 3000, data, 10, "after the hole");
    EXPECT_TRUE(t_all_zero(got + 3010, 4096 - 3010));
    EXPECT_EQ(gfs_close_file(fid), 0);
}

static void large(const char *name)
{
    int kid;
    int fid = open_fork(name, 1, NULL, "L", &kid);
    if (fid < 0)
        return;
    const int64_t size = 48 << 20; /* above the 32 MB default data limit */
    unsigned char *src = t_xmalloc((size_t)size),
                  *got = t_xmalloc((size_t)size);
    t_fill(src, (size_t)size, 12);
    EXPECT_EQ(gfs_write(kid, 0, src, size), size);
    memset(got, 0xee, (size_t)size);
    EXPECT_EQ(gfs_read(kid, 0, got, size), size);
    EXPECT_MEM(got, src, (size_t)size, "48 MB plain");
    /* One 40 MB piece and some small ones in one list. */
    gfs_list_entry e[3] = {{size, 0, 40 << 20},
                           {1, (40 << 20), 4096},
                           {(int64_t)5 << 30, (40 << 20) + 4096, 8}};
    EXPECT_EQ(gfs_listio(kid, GFS_WRITE, 3, e, src), (40 << 20) + 4096 + 8);
    EXPECT_EQ(gfs_fork_size(kid), ((int64_t)5 << 30) + 8);
    memset(got, 0xee, (size_t)size);
    EXPECT_EQ(gfs_listio(kid, GFS_READ, 3, e, got), (40 << 20) + 4096 + 8);
    EXPECT_MEM(got, src, (size_t)(40 << 20) + 4096 + 8, "40 MB list");
    EXPECT_EQ(gfs_read(kid, 0, got, 1), 1);
    EXPECT_EQ(got[0], src[0]);
    EXPECT_EQ(gfs_close_file(fid), 0);
    free(src);
    free(got);
}

/* Large pieces in list order, overlapping across many cache blocks (the
 * server resolves such an extent whole; the direct path writes them in
 * list order): each later piece wins where they overlap. */
static void spans(const char *name)
{
    int kid;
    int fid = open_fork(name, 1, NULL, "s", &kid);
    if (fid < 0)
        return;
    enum { SPAN = 600000, N = 7 };
    gfs_list_entry e[N] = {
        {0, 0, SPAN},               /* everything */
        {100000, SPAN, 150000},     /* inside it */
        {65530, SPAN + 150000, 12}, /* across a block boundary */
        {200000, SPAN + 150012, 300000},
        {250000, SPAN + 450012, 1},  /* one byte inside the last */
        {599990, SPAN + 450013, 30}, /* past the end of the first */
        {131072, SPAN + 450043, 65536},
    };
    size_t dbytes = SPAN + 450043 + 65536;
    unsigned char *src = t_xmalloc(dbytes), *model = t_xmalloc(SPAN + 64),
                  *got = t_xmalloc(SPAN + 64);
    t_fill(src, dbytes, 31);
    memset(model, 0, SPAN + 64);
    int64_t total = 0;
    for (int i = 0; i < N; i++)
        total += e[i].size;
    EXPECT_EQ(gfs_listio(kid, GFS_WRITE, N, e, src), total);
    model_apply(model, e, N, src);
    EXPECT_EQ(gfs_fork_size(kid), 600020);
    memset(got, 0xee, SPAN + 64);
    EXPECT_EQ(gfs_read(kid, 0, got, 600020), 600020);
    EXPECT_MEM(got, model, 600020, "overlapping spans, one read");
    /* the same bytes back through a list of pieces out of order */
    gfs_list_entry r[3] = {
        {300000, 0, 300020}, {0, 300020, 70000}, {70000, 370020, 230000}};
    memset(got, 0xee, SPAN + 64);
    EXPECT_EQ(gfs_listio(kid, GFS_READ, 3, r, got), 600020);
    EXPECT_MEM(got, model + 300000, 300020, "read list, piece 0");
    EXPECT_MEM(got + 300020, model, 300000, "read list, pieces 1-2");
    printf("spans: %d pieces, %lld bytes, read back byte-exact\n", N,
           (long long)total);
    EXPECT_EQ(gfs_close_file(fid), 0);
    free(src);
    free(model);
    free(got);
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return t_usage(argv[0],
                       "big|overlap|zero|beyond|large|spans NAME [N [P]]");
    t_init();
    if (!strcmp(argv[1], "big"))
        big(argv[2], argc > 3 ? atoll(argv[3]) : 100000,
            argc > 4 ? atoll(argv[4]) : 16);
    else if (!strcmp(argv[1], "overlap"))
        overlap(argv[2]);
    else if (!strcmp(argv[1], "zero"))
        zero(argv[2]);
    else if (!strcmp(argv[1], "beyond"))
        beyond(argv[2]);
    else if (!strcmp(argv[1], "large"))
        large(argv[2]);
    else if (!strcmp(argv[1], "spans"))
        spans(argv[2]);
    else
        return t_usage(argv[0],
                       "big|overlap|zero|beyond|large|spans NAME [N [P]]");
    EXPECT_EQ(gfs_finalize(), 0);
    return t_finish();
}
