/*
 * t_checksum.c -- checksummed files (gfs_set_checksum; servers/csum.c)
 * through the public API, for tests/test_checksum.py.
 *
 *   model NAME       a striped file (2 subfiles, a 50000-byte unit, so
 *                    stripes cut chunks anywhere) made checksummed, then
 *                    writes of every shape against a model in memory:
 *                    whole and partial 32 KiB chunks, single bytes, runs
 *                    across chunks and stripes, a write far past the end
 *                    (a hole), list I/O with overlapping pieces, a
 *                    truncate that cuts a chunk and one that grows; each
 *                    step read back whole and compared; every fork then
 *                    scrubbed clean.  Bad algorithm names are refused.
 *   overwrite NAME OFF LEN SEED [second]
 *                    write LEN bytes of t_fill(SEED) at OFF of striped
 *                    file NAME; prints "ok" or "error CODE MESSAGE" and
 *                    exits 0 / 1.  second: the write is the open's second
 *                    op (a byte read at 0 first), which takes the path
 *                    GALLEY_TRANSPORT gives; an open's small first op
 *                    goes through the server (libgalley/route.c)
 *   scrub NAME       gfs_scrub_fork on every subfile's data fork: prints
 *                    "chunks C bad B first F" per fork (or "error ...")
 *   pieces NAME K N PIECE COUNT ROUNDS
 *                    writer K of N: ROUNDS times, its COUNT pieces of
 *                    PIECE bytes at (j x N + K) x PIECE, one write each,
 *                    data t_fill(piece_seed(K, round, j)); "ok" / "error"
 *   checkpieces NAME N PIECE COUNT ROUNDS
 *                    read the file back whole: every writer's last round
 *                    there?  "ok", "error CODE ..." or "bad at OFF"
 *   loop NAME LEN    write bytes 0..LEN of t_fill(1), then t_fill(2), and
 *                    so on, printing "round R" after each, until killed
 *   chunks NAME LEN  read 0..LEN in 32 KiB chunks, one read each: a line
 *                    of one letter per chunk: A (t_fill(1)'s bytes), B
 *                    (t_fill(2)'s), M (some of each), E (the read failed;
 *                    then "error CODE" on the next line)
 *
 * Threads: single-threaded.
 */
#include "thelp.h"

#include <errno.h>

#define UNIT 50000
#define MAXSZ (3 << 20)

static unsigned char model[MAXSZ];
static int64_t msize;

static void check_whole(int sid, const char *what)
{
    static unsigned char got[MAXSZ];
    EXPECT_EQ(gfs_striped_size(sid), msize);
    memset(got, 0xee, sizeof(got));
    int64_t r = gfs_striped_read(sid, 0, got, msize);
    if (EXPECT_EQ(r, msize))
        EXPECT_MEM(got, model, (size_t)msize, what);
}

static void put(int sid, int64_t off, int64_t len, uint64_t seed)
{
    unsigned char *b = malloc((size_t)len);
    t_fill(b, (size_t)len, seed);
    EXPECT_EQ(gfs_striped_write(sid, off, b, len), len);
    memcpy(model + off, b, (size_t)len);
    if (off + len > msize)
        msize = off + len;
    free(b);
}

static void model_run(const char *name)
{
    EXPECT_OK(gfs_create_striped(name, 2, NULL, UNIT, "data"));
    int fid = EXPECT_OK(gfs_open_file(name));
    EXPECT_EQ(gfs_set_checksum(fid, "md5"), -EINVAL);
    EXPECT_EQ(gfs_set_checksum(fid, NULL), -EINVAL);
    EXPECT_OK(gfs_set_checksum(fid, "crc32c"));
    char v[16];
    EXPECT_EQ(gfs_get_attr(fid, "galley.checksum", v, sizeof(v)), 6);
    gfs_close_file(fid);

    int sid = EXPECT_OK(gfs_striped_open(name));
    put(sid, 0, 300000, 1); /* whole and partial chunks, both subfiles */
    check_whole(sid, "first write");
    put(sid, 40000, 1, 2);  /* one byte inside a chunk */
    put(sid, 32767, 2, 3);  /* across a chunk boundary */
    put(sid, 49990, 20, 4); /* across a stripe boundary */
    put(sid, 100, 70000, 5);
    check_whole(sid, "small overwrites");
    put(sid, 2000000, 5000, 6); /* past the end: a hole of zeros */
    check_whole(sid, "hole");
    /* list I/O, overlapping pieces: the later wins */
    unsigned char buf[3000];
    t_fill(buf, sizeof(buf), 7);
    gfs_list_entry e[3] = {
        {1000, 0, 1000}, {1500, 1000, 1000}, {1200, 2000, 1000}};
    EXPECT_EQ(gfs_striped_listio(sid, GFS_WRITE, 3, e, buf), 3000);
    for (int i = 0; i < 3; i++)
        memcpy(model + e[i].file_offset, buf + e[i].mem_offset,
               (size_t)e[i].size);
    check_whole(sid, "list I/O");
    /* cut inside a chunk, then grow again: zeros come back */
    EXPECT_OK(gfs_striped_truncate(sid, 123457));
    memset(model + 123457, 0, (size_t)(msize - 123457));
    msize = 123457;
    check_whole(sid, "truncated");
    EXPECT_OK(gfs_striped_truncate(sid, 400000));
    msize = 400000;
    check_whole(sid, "grown");
    put(sid, 123000, 1000, 8); /* a write into the cut chunk */
    check_whole(sid, "after truncate");
    for (int s = 0; s < 2; s++) {
        int64_t chunks, bad, first;
        EXPECT_OK(
            gfs_scrub_fork(gfs_striped_kid(sid, s), &chunks, &bad, &first));
        EXPECT_TRUE(chunks > 0);
        EXPECT_EQ(bad, 0);
        EXPECT_EQ(first, -1);
    }
    gfs_striped_close(sid);
}

static int overwrite(const char *name, int64_t off, int64_t len, uint64_t seed,
                     bool second)
{
    int sid = gfs_striped_open(name);
    if (sid < 0) {
        printf("error %d %s\n", sid, gfs_strerror(sid));
        return 1;
    }
    unsigned char *b = malloc((size_t)len + 1);
    int64_t w = second ? gfs_striped_read(sid, 0, b, 1) : 0;
    t_fill(b, (size_t)len, seed);
    if (w >= 0)
        w = gfs_striped_write(sid, off, b, len);
    free(b);
    gfs_striped_close(sid);
    if (w != len) {
        printf("error %" PRId64 " %s\n", w, t_err(w));
        return 1;
    }
    printf("ok\n");
    return 0;
}

static int scrub(const char *name)
{
    int sid = gfs_striped_open(name);
    if (sid < 0) {
        printf("error %d %s\n", sid, gfs_strerror(sid));
        return 1;
    }
    gfs_layout l;
    int rc = gfs_striped_layout(sid, &l);
    for (int s = 0; s < l.nsubfiles && !rc; s++) {
        int64_t chunks, bad, first;
        rc = gfs_scrub_fork(gfs_striped_kid(sid, s), &chunks, &bad, &first);
        if (rc)
            printf("error %d %s\n", rc, gfs_strerror(rc));
        else
            printf("chunks %" PRId64 " bad %" PRId64 " first %" PRId64 "\n",
                   chunks, bad, first);
    }
    gfs_striped_close(sid);
    return rc ? 1 : 0;
}

static uint64_t piece_seed(int64_t k, int64_t round, int64_t j)
{
    return (uint64_t)(k * 1000003 + round * 1009 + j + 1);
}

static int pieces(const char *name, int64_t k, int64_t n, int64_t piece,
                  int64_t count, int64_t rounds)
{
    int sid = gfs_striped_open(name);
    unsigned char *b = malloc((size_t)piece);
    int64_t w = sid < 0 ? sid : 0;
    for (int64_t r = 0; r < rounds && w >= 0; r++)
        for (int64_t j = 0; j < count && w >= 0; j++) {
            t_fill(b, (size_t)piece, piece_seed(k, r, j));
            w = gfs_striped_write(sid, (j * n + k) * piece, b, piece);
            if (w == piece)
                w = 0;
            else if (w >= 0)
                w = -EIO;
        }
    free(b);
    if (sid >= 0)
        gfs_striped_close(sid);
    if (w < 0) {
        printf("error %" PRId64 " %s\n", w, t_err(w));
        return 1;
    }
    printf("ok\n");
    return 0;
}

static int checkpieces(const char *name, int64_t n, int64_t piece,
                       int64_t count, int64_t rounds)
{
    int sid = gfs_striped_open(name);
    size_t len = (size_t)(n * piece * count);
    unsigned char *got = malloc(len), *want = malloc((size_t)piece);
    int64_t r = sid < 0 ? sid : gfs_striped_read(sid, 0, got, (int64_t)len);
    int ret = 0;
    if (r != (int64_t)len) {
        printf("error %" PRId64 " %s\n", r, t_err(r));
        ret = 1;
    }
    for (int64_t j = 0; j < count && !ret; j++)
        for (int64_t k = 0; k < n && !ret; k++) {
            int64_t off = (j * n + k) * piece;
            t_fill(want, (size_t)piece, piece_seed(k, rounds - 1, j));
            if (memcmp(got + off, want, (size_t)piece)) {
                printf("bad at %" PRId64 "\n", off);
                ret = 1;
            }
        }
    if (!ret)
        printf("ok\n");
    free(got);
    free(want);
    if (sid >= 0)
        gfs_striped_close(sid);
    return ret;
}

static int loop(const char *name, int64_t len)
{
    int sid = gfs_striped_open(name);
    if (sid < 0) {
        printf("error %d %s\n", sid, gfs_strerror(sid));
        return 1;
    }
    unsigned char *b[2] = {malloc((size_t)len), malloc((size_t)len)};
    t_fill(b[0], (size_t)len, 1);
    t_fill(b[1], (size_t)len, 2);
    for (int64_t r = 0;; r++) {
        int64_t w = gfs_striped_write(sid, 0, b[r % 2], len);
        if (w != len) {
            printf("error %" PRId64 " %s\n", w, t_err(w));
            return 1;
        }
        printf("round %" PRId64 "\n", r);
        fflush(stdout);
    }
}

static int chunks(const char *name, int64_t len)
{
    int sid = gfs_striped_open(name);
    if (sid < 0) {
        printf("error %d %s\n", sid, gfs_strerror(sid));
        return 1;
    }
    enum { C = 32768 };
    unsigned char *a = malloc((size_t)len), *b = malloc((size_t)len);
    unsigned char got[C];
    t_fill(a, (size_t)len, 1);
    t_fill(b, (size_t)len, 2);
    int64_t err = 0;
    for (int64_t off = 0; off < len; off += C) {
        size_t n = (size_t)(len - off < C ? len - off : C);
        int64_t r = gfs_striped_read(sid, off, got, (int64_t)n);
        char ch = r != (int64_t)n            ? 'E'
                  : !memcmp(got, a + off, n) ? 'A'
                  : !memcmp(got, b + off, n) ? 'B'
                                             : 'M';
        for (size_t i = 0; ch == 'M' && i < n; i++)
            if (got[i] != a[off + i] && got[i] != b[off + i])
                ch = 'X'; /* a byte neither write had */
        if (ch == 'E' && !err)
            err = r;
        putchar(ch);
    }
    putchar('\n');
    if (err)
        printf("error %" PRId64 " %s\n", err, t_err(err));
    free(a);
    free(b);
    gfs_striped_close(sid);
    return err ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *use =
        "model NAME | overwrite NAME OFF LEN SEED | scrub NAME | pieces NAME "
        "K N PIECE COUNT ROUNDS | checkpieces NAME N PIECE COUNT ROUNDS | loop "
        "NAME LEN | chunks NAME LEN";
    if (argc < 3)
        return t_usage(argv[0], use);
    t_init();
    int ret;
    if (!strcmp(argv[1], "model")) {
        model_run(argv[2]);
        ret = t_finish();
    } else if (!strcmp(argv[1], "overwrite") &&
               (argc == 6 || (argc == 7 && !strcmp(argv[6], "second")))) {
        ret = overwrite(argv[2], atoll(argv[3]), atoll(argv[4]),
                        (uint64_t)atoll(argv[5]), argc == 7);
    } else if (!strcmp(argv[1], "scrub")) {
        ret = scrub(argv[2]);
    } else if (!strcmp(argv[1], "pieces") && argc == 8) {
        ret = pieces(argv[2], atoll(argv[3]), atoll(argv[4]), atoll(argv[5]),
                     atoll(argv[6]), atoll(argv[7]));
    } else if (!strcmp(argv[1], "checkpieces") && argc == 7) {
        ret = checkpieces(argv[2], atoll(argv[3]), atoll(argv[4]),
                          atoll(argv[5]), atoll(argv[6]));
    } else if (!strcmp(argv[1], "loop") && argc == 4) {
        ret = loop(argv[2], atoll(argv[3]));
    } else if (!strcmp(argv[1], "chunks") && argc == 4) {
        ret = chunks(argv[2], atoll(argv[3]));
    } else {
        return t_usage(argv[0], use);
    }
    gfs_finalize();
    return ret;
}
