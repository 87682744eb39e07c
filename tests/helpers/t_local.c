/*
 * t_local.c -- the locality layout ("local") from one process's view; run
 * by tests/test_local_layout.py, several copies at once for the races.
 *
 *   t_local create NAME LAYOUT UNIT      create (LAYOUT local|template:X)
 *   t_local write NAME TOTAL PIECE W K   writer K of W: pieces K, K+W, ...
 *                                        of PIECE bytes of [0, TOTAL)
 *   t_local verify NAME TOTAL            every byte of [0, TOTAL) is the
 *                                        pattern; size is TOTAL; a read
 *                                        past the end is short
 *   t_local stat NAME                    "me S" "blocks B0 B1 .." "size N"
 *   t_local truncate NAME SIZE
 *   t_local hole NAME                    a block never written reads zeros
 *   t_local far NAME                     create; bytes written far past
 *                                        2^60 read back (every offset is
 *                                        the file's, none the claims')
 *   t_local lockall NAME                 hold an exclusive byte-range lock
 *                                        over the whole file: "locked",
 *                                        then unlock at a line on stdin
 *   t_local nbtail NAME                  8 concurrent non-blocking reads
 *                                        that reach past the end, through
 *                                        an id opened before the writes
 *
 * The pattern: byte x of the file is pat(x), whatever wrote it.  Exit 0
 * when every check held (thelp.h).
 */
#include "thelp.h"

static uint8_t pat(int64_t x)
{
    uint64_t v = (uint64_t)x * UINT64_C(2654435761);
    return (uint8_t)(v >> 11) ^ (uint8_t)x;
}

static int open_or_die(const char *name)
{
    int sid = gfs_striped_open(name);
    if (sid < 0) {
        printf("FAIL open %s: %s\n", name, gfs_strerror(sid));
        exit(1);
    }
    return sid;
}

static int do_write(const char *name, int64_t total, int64_t piece, int w,
                    int k)
{
    int sid = open_or_die(name);
    char *buf = malloc((size_t)piece);
    for (int64_t p = k; p * piece < total; p += w) {
        int64_t off = p * piece, n = total - off < piece ? total - off : piece;
        for (int64_t i = 0; i < n; i++)
            buf[i] = (char)pat(off + i);
        EXPECT_EQ(gfs_striped_write(sid, off, buf, n), n);
    }
    free(buf);
    EXPECT_EQ(gfs_striped_close(sid), 0);
    return t_finish();
}

static int do_verify(const char *name, int64_t total)
{
    int sid = open_or_die(name);
    char *buf = malloc((size_t)total + 100);
    EXPECT_EQ(gfs_striped_size(sid), total);
    EXPECT_EQ(gfs_striped_read(sid, 0, buf, total + 100), total);
    int64_t bad = 0;
    for (int64_t i = 0; i < total; i++)
        if ((uint8_t)buf[i] != pat(i) && bad++ < 5)
            printf("FAIL byte %" PRId64 ": %u, expected %u\n", i,
                   (uint8_t)buf[i], pat(i));
    EXPECT_EQ(bad, 0);
    free(buf);
    EXPECT_EQ(gfs_striped_close(sid), 0);
    return t_finish();
}

static int do_stat(const char *name)
{
    int sid = open_or_die(name);
    gfs_local_stat st;
    EXPECT_EQ(gfs_striped_local_stat(sid, &st), 0);
    printf("me %d\nblocks", st.me);
    for (int i = 0; i < st.nsubfiles; i++)
        printf(" %" PRId64, st.blocks[i]);
    printf("\ntotal %" PRId64 "\nsize %" PRId64 "\n", st.total_blocks, st.size);
    EXPECT_EQ(gfs_striped_close(sid), 0);
    return t_finish();
}

static int do_hole(const char *name)
{
    int sid = open_or_die(name);
    gfs_layout lay;
    EXPECT_EQ(gfs_striped_layout(sid, &lay), 0);
    EXPECT_EQ(lay.kind, GFS_LAYOUT_LOCAL);
    int64_t u = lay.unit;
    char *buf = malloc((size_t)u);
    memset(buf, 'x', (size_t)u);
    /* blocks 0 and 2 written, 1 never */
    EXPECT_EQ(gfs_striped_write(sid, 0, buf, u), u);
    EXPECT_EQ(gfs_striped_write(sid, 2 * u, buf, u), u);
    memset(buf, 7, (size_t)u);
    EXPECT_EQ(gfs_striped_read(sid, u, buf, u), u);
    int64_t nz = 0;
    for (int64_t i = 0; i < u; i++)
        nz += buf[i] != 0;
    EXPECT_EQ(nz, 0);
    EXPECT_EQ(gfs_striped_size(sid), 3 * u);
    free(buf);
    EXPECT_EQ(gfs_striped_close(sid), 0);
    return t_finish();
}

/* A single-range read past the end finishes by asking the file's size;
 * through a second id opened before the blocks were written, the maps it
 * read at open are stale, so the finish reads them again.  Eight at once
 * keep every non-blocking worker (GALLEY_NB_THREADS, 4) finishing: the
 * finish must not need a worker itself. */
static int do_nbtail(const char *name)
{
    enum { B = 65536, NB = 32, NR = 8 };
    EXPECT_EQ(gfs_create_layout(name, 4, NULL, B, NULL, "local"), 0);
    int rd = open_or_die(name), wr = open_or_die(name);
    char *buf = malloc((size_t)NB * B);
    for (int64_t i = 0; i < (int64_t)NB * B; i++)
        buf[i] = (char)pat(i);
    EXPECT_EQ(gfs_striped_write(wr, 0, buf, (int64_t)NB * B), (int64_t)NB * B);
    char *out = malloc((size_t)NR * B);
    memset(out, 0x5a, (size_t)NR * B);
    gfs_list_entry e[NR];
    gfs_handle h[NR];
    for (int i = 0; i < NR; i++) {
        e[i] = (gfs_list_entry){(int64_t)B * (NB + i) - 100, 0, B};
        h[i] = gfs_new_handle();
        EXPECT_EQ(gfs_nb_striped_listio(h[i], rd, GFS_READ, 1, &e[i],
                                        out + (size_t)i * B),
                  0);
    }
    int64_t res[NR];
    EXPECT_EQ(gfs_waitall(NR, h, res), 0);
    /* the first reaches 100 bytes into the file, the others none */
    EXPECT_EQ(res[0], 100);
    for (int i = 1; i < NR; i++)
        EXPECT_EQ(res[i], 0);
    EXPECT_EQ(memcmp(out, buf + (size_t)NB * B - 100, 100), 0);
    EXPECT_EQ(gfs_striped_size(rd), (int64_t)NB * B);
    free(out);
    free(buf);
    EXPECT_EQ(gfs_striped_close(wr), 0);
    EXPECT_EQ(gfs_striped_close(rd), 0);
    return t_finish();
}

static int do_far(const char *name)
{
    EXPECT_EQ(gfs_create_layout(name, 0 + gfs_num_servers(), NULL, 4096, NULL,
                                "local"),
              0);
    int sid = open_or_die(name);
    int64_t at = (INT64_C(1) << 61) + 5;
    char buf[100], back[100];
    for (int i = 0; i < 100; i++)
        buf[i] = (char)pat(at + i);
    EXPECT_EQ(gfs_striped_write(sid, at, buf, 100), 100);
    EXPECT_EQ(gfs_striped_read(sid, at, back, 100), 100);
    EXPECT_EQ(memcmp(buf, back, 100), 0);
    EXPECT_EQ(gfs_striped_size(sid), at + 100);
    EXPECT_EQ(gfs_striped_close(sid), 0);
    return t_finish();
}

static int do_lockall(const char *name)
{
    int sid = open_or_die(name);
    EXPECT_EQ(gfs_striped_lock(sid, 0, 0, 1), 0);
    printf("locked\n");
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof(line), stdin))
        printf("FAIL stdin closed\n");
    EXPECT_EQ(gfs_striped_unlock(sid, 0, 0), 0);
    EXPECT_EQ(gfs_striped_close(sid), 0);
    return t_finish();
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: see the top of t_local.c\n");
        return 2;
    }
    EXPECT_EQ(gfs_init(NULL), 0);
    const char *cmd = argv[1], *name = argv[2];
    int rc = 2;
    if (!strcmp(cmd, "create") && argc == 5) {
        EXPECT_EQ(gfs_create_layout(name, 0 + gfs_num_servers(), NULL,
                                    atoll(argv[4]), NULL, argv[3]),
                  0);
        rc = t_finish();
    } else if (!strcmp(cmd, "write") && argc == 7) {
        rc = do_write(name, atoll(argv[3]), atoll(argv[4]), atoi(argv[5]),
                      atoi(argv[6]));
    } else if (!strcmp(cmd, "verify") && argc == 4) {
        rc = do_verify(name, atoll(argv[3]));
    } else if (!strcmp(cmd, "stat")) {
        rc = do_stat(name);
    } else if (!strcmp(cmd, "truncate") && argc == 4) {
        int sid = open_or_die(name);
        EXPECT_EQ(gfs_striped_truncate(sid, atoll(argv[3])), 0);
        EXPECT_EQ(gfs_striped_close(sid), 0);
        rc = t_finish();
    } else if (!strcmp(cmd, "hole")) {
        rc = do_hole(name);
    } else if (!strcmp(cmd, "far")) {
        rc = do_far(name);
    } else if (!strcmp(cmd, "lockall")) {
        rc = do_lockall(name);
    } else if (!strcmp(cmd, "nbtail")) {
        rc = do_nbtail(name);
    }
    gfs_finalize();
    return rc;
}
