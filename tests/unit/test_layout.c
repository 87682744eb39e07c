/*
 * test_layout.c -- the striped-layout arithmetic of galley.h
 * (gfs_layout_fork_size, gfs_layout_logical_size) against a byte-by-byte
 * model of the layout.  Needs no servers.
 *
 * The layout (galley.h): logical byte x lives in subfile (x / unit) % nsub
 * at fork offset (x / (unit * nsub)) * unit + x % unit.
 *
 *  - exhaustive: for nsub 1..5 and many units (1 .. 64K, including 200),
 *    every logical size from 0 to a few full stripes, the model is built
 *    one byte at a time and compared with both functions;
 *  - fork sizes that no prefix produces (holes, unequal forks): the
 *    logical size is one past the highest logical byte any fork holds;
 *  - huge sizes against a 128-bit closed form (no overflow);
 *  - invalid arguments are refused with a negative code.
 *
 * Threads: single-threaded.
 */
#include <stdlib.h>
#include <string.h>

#include "galley.h"
#include "utest.h"

#define MAX_NSUB 5

/* Where logical byte x lives. */
static void locate(int nsub, int64_t unit, int64_t x, int *sub, int64_t *off)
{
    *sub = (int)((x / unit) % nsub);
    *off = (x / (unit * nsub)) * unit + x % unit;
}

/* Logical offset of fork byte `off` of subfile `sub`. */
static int64_t logical_of(int nsub, int64_t unit, int sub, int64_t off)
{
    return ((off / unit) * nsub + sub) * unit + off % unit;
}

/*
 * Exhaustive: grow the logical file one byte at a time; after each byte
 * the model holds, per subfile, the bytes held and the highest fork offset
 * plus one.  Compare the library at every size.
 */
static void exhaustive(int nsub, int64_t unit, int64_t maxsize)
{
    int64_t held[MAX_NSUB] = {0}, end[MAX_NSUB] = {0};
    int bad_fork = 0, bad_logical = 0, bad_model = 0;
    for (int64_t size = 0;; size++) {
        /* model state is now for logical size `size` */
        int64_t sum = 0;
        for (int s = 0; s < nsub; s++) {
            int64_t got = gfs_layout_fork_size(nsub, unit, s, size);
            if (got != held[s] && bad_fork++ < 5)
                fprintf(stderr,
                        "fork_size(nsub=%d, unit=%lld, sub=%d, size=%lld) = "
                        "%lld, model %lld\n",
                        nsub, (long long)unit, s, (long long)size,
                        (long long)got, (long long)held[s]);
            /* for a prefix, bytes held == highest offset + 1 */
            if (held[s] != end[s])
                bad_model++;
            sum += held[s];
        }
        if (sum != size)
            bad_model++;
        int64_t ls = gfs_layout_logical_size(nsub, unit, held);
        if (ls != size && bad_logical++ < 5)
            fprintf(stderr,
                    "logical_size(nsub=%d, unit=%lld, forks of size %lld) = "
                    "%lld\n",
                    nsub, (long long)unit, (long long)size, (long long)ls);
        if (size == maxsize)
            break;
        int sub;
        int64_t off;
        locate(nsub, unit, size, &sub, &off);
        held[sub]++;
        if (off + 1 > end[sub])
            end[sub] = off + 1;
    }
    CHECK_MSG(bad_fork == 0, "nsub %d unit %lld: %d fork sizes wrong", nsub,
              (long long)unit, bad_fork);
    CHECK_MSG(bad_logical == 0, "nsub %d unit %lld: %d logical sizes wrong",
              nsub, (long long)unit, bad_logical);
    CHECK_EQ(bad_model, 0);
}

static void test_exhaustive(void)
{
    static const int64_t units[] = {1, 2, 3, 7, 16, 200, 333, 4096, 65536};
    for (int nsub = 1; nsub <= MAX_NSUB; nsub++)
        for (size_t u = 0; u < sizeof(units) / sizeof(*units); u++) {
            int64_t unit = units[u];
            /* three full stripes, most of a fourth, and a little more */
            exhaustive(nsub, unit, 3 * unit * nsub + unit + 3);
        }
}

/* Fork sizes not produced by a prefix: holes and unequal forks. */
static int64_t model_logical(int nsub, int64_t unit, const int64_t *fs)
{
    int64_t max = 0;
    for (int s = 0; s < nsub; s++)
        for (int64_t o = 0; o < fs[s]; o++) {
            int64_t x = logical_of(nsub, unit, s, o) + 1;
            if (x > max)
                max = x;
        }
    return max;
}

static void test_arbitrary_forks(void)
{
    static const int64_t units[] = {1, 3, 200, 512};
    int bad = 0;
    for (int t = 0; t < 20000; t++) {
        int nsub = 1 + (int)(utest_rnd() % MAX_NSUB);
        int64_t unit = units[utest_rnd() % 4];
        int64_t fs[MAX_NSUB];
        for (int s = 0; s < nsub; s++) {
            switch (utest_rnd() % 4) {
            case 0:
                fs[s] = 0;
                break;
            case 1:
                fs[s] = (int64_t)(utest_rnd() % 4) * unit;
                break; /* boundary */
            default:
                fs[s] = (int64_t)(utest_rnd() % (5 * (uint64_t)unit + 2));
            }
        }
        int64_t want = model_logical(nsub, unit, fs);
        int64_t got = gfs_layout_logical_size(nsub, unit, fs);
        if (got != want && bad++ < 5)
            fprintf(stderr,
                    "logical_size(nsub=%d, unit=%lld, {%lld,%lld,%lld,%lld,"
                    "%lld}[:nsub]) = %lld, model %lld\n",
                    nsub, (long long)unit, (long long)fs[0],
                    (long long)(nsub > 1 ? fs[1] : 0),
                    (long long)(nsub > 2 ? fs[2] : 0),
                    (long long)(nsub > 3 ? fs[3] : 0),
                    (long long)(nsub > 4 ? fs[4] : 0), (long long)got,
                    (long long)want);
    }
    CHECK_EQ(bad, 0);

    /* Worked examples, unit 200, 3 subfiles. */
    int64_t a[3] = {0, 0, 0};
    CHECK_EQ(gfs_layout_logical_size(3, 200, a), 0);
    int64_t b[3] = {0, 0, 1}; /* first byte of subfile 2 = logical 400 */
    CHECK_EQ(gfs_layout_logical_size(3, 200, b), 401);
    int64_t c[3] = {201, 0, 0}; /* byte 200 of subfile 0 = logical 600 */
    CHECK_EQ(gfs_layout_logical_size(3, 200, c), 601);
    int64_t d[3] = {200, 200, 150};
    CHECK_EQ(gfs_layout_logical_size(3, 200, d), 550);
    CHECK_EQ(gfs_layout_fork_size(3, 200, 0, 550), 200);
    CHECK_EQ(gfs_layout_fork_size(3, 200, 2, 550), 150);
    CHECK_EQ(gfs_layout_fork_size(3, 200, 0, 601), 201);
    CHECK_EQ(gfs_layout_fork_size(3, 200, 1, 601), 200);
}

/* Huge values against a 128-bit closed form. */
static int64_t ref_fork_size(int nsub, int64_t unit, int sub, int64_t size)
{
    __int128 row = (__int128)unit * nsub;
    __int128 full = size / row, rem = size % row;
    __int128 part = rem - (__int128)sub * unit;
    if (part < 0)
        part = 0;
    if (part > unit)
        part = unit;
    return (int64_t)(full * unit + part);
}

static void test_huge(void)
{
    int bad = 0;
    for (int t = 0; t < 200000; t++) {
        int nsub = 1 + (int)(utest_rnd() % MAX_NSUB);
        int64_t unit;
        switch (t % 3) {
        case 0:
            unit = 1 + (int64_t)(utest_rnd() % 1000);
            break;
        case 1:
            unit = (int64_t)1 << (utest_rnd() % 31);
            break;
        default:
            unit = 1 + (int64_t)(utest_rnd() % ((uint64_t)1 << 40));
            break;
        }
        int64_t size =
            (int64_t)(utest_rnd() >> (2 + utest_rnd() % 62)); /* < 2^62 */
        if (t % 5 == 0) /* near a stripe boundary */
            size = (int64_t)((uint64_t)size / ((uint64_t)unit * nsub) *
                             ((uint64_t)unit * nsub)) +
                   (int64_t)(utest_rnd() % 3) - 1;
        if (size < 0)
            size = 0;
        int64_t fs[MAX_NSUB];
        for (int s = 0; s < nsub; s++) {
            fs[s] = gfs_layout_fork_size(nsub, unit, s, size);
            if (fs[s] != ref_fork_size(nsub, unit, s, size) && bad++ < 5)
                fprintf(stderr,
                        "fork_size(nsub=%d, unit=%lld, sub=%d, size=%lld) = "
                        "%lld, want %lld\n",
                        nsub, (long long)unit, s, (long long)size,
                        (long long)fs[s],
                        (long long)ref_fork_size(nsub, unit, s, size));
        }
        int64_t ls = gfs_layout_logical_size(nsub, unit, fs);
        if (ls != size && bad++ < 5)
            fprintf(stderr,
                    "logical_size(nsub=%d, unit=%lld) of size %lld gave "
                    "%lld\n",
                    nsub, (long long)unit, (long long)size, (long long)ls);
    }
    CHECK_EQ(bad, 0);

    /* The largest stripe arithmetic that fits. */
    int64_t big = INT64_MAX / 2;
    CHECK_EQ(gfs_layout_fork_size(1, 65536, 0, big), big);
    int64_t one[1] = {big};
    CHECK_EQ(gfs_layout_logical_size(1, 65536, one), big);
}

static void test_invalid(void)
{
    int64_t fs[GFS_MAX_SUBFILES + 1];
    memset(fs, 0, sizeof(fs));
    CHECK(gfs_layout_fork_size(0, 65536, 0, 100) < 0);
    CHECK(gfs_layout_fork_size(-1, 65536, 0, 100) < 0);
    CHECK(gfs_layout_fork_size(2, 0, 0, 100) < 0);
    CHECK(gfs_layout_fork_size(2, -200, 0, 100) < 0);
    CHECK(gfs_layout_fork_size(2, 200, -1, 100) < 0);
    CHECK(gfs_layout_fork_size(2, 200, 2, 100) < 0);
    CHECK(gfs_layout_fork_size(2, 200, 0, -1) < 0);
    CHECK(gfs_layout_logical_size(0, 200, fs) < 0);
    CHECK(gfs_layout_logical_size(2, 0, fs) < 0);
    CHECK(gfs_layout_logical_size(2, -1, fs) < 0);
    fs[1] = -5;
    CHECK(gfs_layout_logical_size(2, 200, fs) < 0);
    fs[1] = 0;
    /* Arguments at the limits are fine. */
    CHECK_EQ(gfs_layout_fork_size(GFS_MAX_SUBFILES, 1, GFS_MAX_SUBFILES - 1,
                                  GFS_MAX_SUBFILES),
             1);
    CHECK_EQ(gfs_layout_logical_size(GFS_MAX_SUBFILES, 1, fs), 0);
}

int main(void)
{
    utest_rng_state = 0x9E3779B97F4A7C15ull; /* this test's own cases */
    test_exhaustive();
    test_arbitrary_forks();
    test_huge();
    test_invalid();
    return utest_exit("test_layout");
}
