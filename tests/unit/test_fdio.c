/*
 * test_fdio.c -- common/fdio.c's reads and writes against a byte model on
 * a real file: sorted pieces with every kind of gap (none, overlapping,
 * small enough to be bridged by a sieved read, too large, around the
 * bridging budget G_FD_SIEVE_GAP) and pieces reaching past the end of
 * the file, which read as zeros and set eof.
 *
 * Threads: single-threaded.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdio.h"
#include "utest.h"

#define FSIZE (3u << 20)
#define BASE 4096u /* the fork's byte x is the file's byte BASE + x */

static uint8_t model(uint64_t x)
{
    return x < FSIZE ? (uint8_t)(x * 2654435761u >> 13) : 0;
}

static uint32_t rnd_s = 12345;
static uint32_t rnd(uint32_t n)
{
    rnd_s = rnd_s * 1103515245u + 12345u;
    return (rnd_s >> 8) % n;
}

/* n sorted pieces whose gaps are drawn around gap (overlaps too) */
static size_t make_pieces(gp_ext *e, size_t n, uint32_t len, uint32_t gap,
                          uint64_t start, char *mem)
{
    uint64_t at = start;
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t l = len ? len : 1 + rnd(9000);
        if (rnd(8) == 0)
            l = 0; /* empty pieces are allowed */
        e[i].off = at;
        e[i].len = l;
        e[i].mem = mem + used;
        used += l;
        int64_t g = gap == UINT32_MAX ? (int64_t)rnd(10000) - 2000 : gap;
        if (g < -(int64_t)l)
            g = -(int64_t)l; /* sorted by offset: overlap, never go back */
        at = (uint64_t)((int64_t)at + (int64_t)l + g);
    }
    return used;
}

static void check_read(int fd, const gp_ext *e, size_t n, char *mem,
                       size_t used)
{
    memset(mem, 0x5a, used);
    bool eof = false, want_eof = false;
    CHECK_EQ(g_fd_read(fd, BASE, e, n, &eof), 0);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        for (uint64_t b = 0; b < e[i].len; b++)
            bad += (uint8_t)e[i].mem[b] != model(e[i].off + b);
        if (e[i].len && e[i].off + e[i].len > FSIZE)
            want_eof = true;
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(eof, want_eof);
}

int main(void)
{
    char path[] = "/tmp/test_fdio.XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    unlink(path);
    uint8_t *img = malloc(FSIZE);
    for (uint64_t x = 0; x < FSIZE; x++)
        img[x] = model(x);
    CHECK(pwrite(fd, img, FSIZE, BASE) == (ssize_t)FSIZE);

    enum { N = 600 };
    gp_ext e[N];
    char *mem = malloc((size_t)N * 9000);
    /* piece size, gap: around the bridging budget, both sides of it */
    static const uint32_t cases[][2] = {
        {16, 16},
        {16, 48},
        {200, 600},
        {4096, 4096},
        {4096, 0},
        {2048, 2048},
        {2047, 2049},
        {2048, 2049},
        {1, 4095},
        {1, 4096},
        {4096, 1},
        {100, 10000},
        {0, UINT32_MAX},
        {0, UINT32_MAX},
        /* every length the small-piece copy treats apart: 1-3, 4-7, 8-16 */
        {2, 7},
        {3, 5},
        {5, 11},
        {7, 9},
        {8, 8},
        {12, 4},
        {15, 17},
        {17, 15},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        size_t used =
            make_pieces(e, N, cases[c][0], cases[c][1], rnd(5000), mem);
        check_read(fd, e, N, mem, used);
    }
    /* reaching past the end of the file: zeros, and eof */
    size_t used = make_pieces(e, 64, 0, UINT32_MAX, FSIZE - 100000, mem);
    check_read(fd, e, 64, mem, used);

    /* writes: exactly the pieces' bytes, a later piece winning where they
     * overlap; then read back through the model */
    for (int round = 0; round < 4; round++) {
        used = make_pieces(e, N, round < 2 ? 16 * (round + 1) : 0,
                           round < 2 ? 16 : UINT32_MAX, rnd(5000), mem);
        for (size_t i = 0; i < used; i++)
            mem[i] = (char)rnd(256);
        int rc = round & 1 ? g_fd_write_locked(fd, BASE, e, N, true)
                           : g_fd_write(fd, BASE, e, N);
        CHECK_EQ(rc, 0);
        for (size_t i = 0; i < N; i++)
            for (uint64_t b = 0; b < e[i].len; b++)
                if (e[i].off + b < FSIZE)
                    img[e[i].off + b] = (uint8_t)e[i].mem[b];
        uint8_t *back = malloc(FSIZE);
        CHECK(pread(fd, back, FSIZE, BASE) == (ssize_t)FSIZE);
        CHECK(memcmp(back, img, FSIZE) == 0);
        free(back);
    }
    free(mem);
    free(img);
    close(fd);
    return utest_exit("test_fdio");
}
