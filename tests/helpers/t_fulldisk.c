/*
 * t_fulldisk.c -- existing files read back through the C API while a
 * server's disk is full (tests/test_fulldisk.py).
 *
 *   t_fulldisk setctr NAME KEY VALUE
 *       set counter KEY of striped file NAME (before the disk fills)
 *   t_fulldisk sparse NAME SUBFILE UNITS LOCAL
 *       write random bytes into the first UNITS stripe units of striped
 *       file NAME except those of subfile SUBFILE, which stay holes, and
 *       the file's bytes (zeros in the holes) into LOCAL
 *   t_fulldisk read NAME LOCAL [NAME LOCAL]...
 *       for each file: gfs_striped_stat, open, size, every fork's size
 *       (all bytes but the holes: stripe units of LOCAL that are zeros),
 *       read all and compare with LOCAL, the shared file pointer set to 0
 *       (as an MPI open does), close; gfs_open_file, gfs_stat_file and
 *       the attribute the file's layout is in, gfs_close_file
 */
#include "thelp.h"

static unsigned char *slurp(const char *path, int64_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    if (f && fseek(f, 0, SEEK_END) == 0 && (*len = ftell(f)) >= 0 &&
        fseek(f, 0, SEEK_SET) == 0) {
        buf = t_xmalloc((size_t)*len);
        if (fread(buf, 1, (size_t)*len, f) != (size_t)*len) {
            free(buf);
            buf = NULL;
        }
    }
    if (f)
        fclose(f);
    return buf;
}

/* Bytes of want[0..len) in stripe units of `unit` bytes that are all
 * zeros: holes (random data never has such a unit). */
static int64_t hole_bytes(const unsigned char *want, int64_t len, int64_t unit)
{
    int64_t holes = 0;
    for (int64_t a = 0; a < len; a += unit) {
        int64_t n = len - a < unit ? len - a : unit;
        holes += t_all_zero(want + a, (size_t)n) ? n : 0;
    }
    return holes;
}

static void read_back(const char *name, const char *local)
{
    int64_t len = 0, size = -1;
    unsigned char *want = slurp(local, &len);
    if (!EXPECT_TRUE(want != NULL))
        return;
    gfs_layout lay;
    if (EXPECT_OK(gfs_striped_stat(name, &size, &lay)) >= 0)
        EXPECT_EQ(size, len);

    int sid = (int)EXPECT_OK(gfs_striped_open(name));
    if (sid >= 0) {
        EXPECT_EQ(gfs_striped_size(sid), len);
        int64_t forks = 0;
        for (int i = 0; i < lay.nsubfiles; i++) {
            int64_t n = EXPECT_OK(gfs_fork_size(gfs_striped_kid(sid, i)));
            forks += n > 0 ? n : 0;
        }
        /* nothing past the end, nothing stored for the holes */
        EXPECT_EQ(forks, len - hole_bytes(want, len, lay.unit));
        unsigned char *got = t_xmalloc((size_t)len + 1);
        if (EXPECT_EQ(gfs_striped_read(sid, 0, got, len + 1), len))
            EXPECT_MEM(got, want, (size_t)len, name);
        free(got);
        EXPECT_OK(gfs_striped_fetch_set(sid, "mpi.shared_fp", 0));
        EXPECT_EQ(gfs_striped_fetch_add(sid, "mpi.shared_fp", 0), 0);
        EXPECT_OK(gfs_striped_close(sid));
    }

    int fid = (int)EXPECT_OK(gfs_open_file(name));
    if (fid >= 0) {
        gfs_file_stat st;
        if (EXPECT_OK(gfs_stat_file(fid, &st)) >= 0)
            EXPECT_EQ(st.nsubfiles, lay.nsubfiles);
        EXPECT_OK(gfs_close_file(fid));
    }
    free(want);
}

static void sparse(const char *name, int hole, int units, const char *local)
{
    int sid = (int)EXPECT_OK(gfs_striped_open(name));
    gfs_layout lay;
    if (sid < 0 || EXPECT_OK(gfs_striped_layout(sid, &lay)) < 0)
        return;
    size_t len = (size_t)units * (size_t)lay.unit;
    unsigned char *buf = t_xmalloc(len);
    memset(buf, 0, len);
    srand(7);
    for (int u = 0; u < units; u++) {
        int64_t off = (int64_t)u * lay.unit;
        if (gfs_layout_locate(lay.nsubfiles, lay.unit, off, NULL, NULL) == hole)
            continue;
        for (int64_t k = 0; k < lay.unit; k++)
            buf[off + k] = (unsigned char)(1 + rand() % 255);
        EXPECT_EQ(gfs_striped_write(sid, off, buf + off, lay.unit), lay.unit);
    }
    EXPECT_OK(gfs_striped_close(sid));
    FILE *f = fopen(local, "wb");
    EXPECT_TRUE(f && fwrite(buf, 1, len, f) == len && fclose(f) == 0);
    free(buf);
}

int main(int argc, char **argv)
{
    const char *use = "setctr NAME KEY VALUE | sparse NAME SUBFILE UNITS "
                      "LOCAL | read NAME LOCAL...";
    if (argc < 2)
        return t_usage(argv[0], use);
    t_init();
    if (!strcmp(argv[1], "setctr") && argc == 5) {
        int sid = (int)EXPECT_OK(gfs_striped_open(argv[2]));
        if (sid >= 0) {
            EXPECT_OK(gfs_striped_fetch_set(sid, argv[3], atoll(argv[4])));
            EXPECT_OK(gfs_striped_close(sid));
        }
    } else if (!strcmp(argv[1], "sparse") && argc == 6) {
        sparse(argv[2], atoi(argv[3]), atoi(argv[4]), argv[5]);
    } else if (!strcmp(argv[1], "read") && argc >= 4 && argc % 2 == 0) {
        for (int i = 2; i + 1 < argc; i += 2)
            read_back(argv[i], argv[i + 1]);
        printf("read back %d files\n", (argc - 2) / 2);
    } else {
        return t_usage(argv[0], use);
    }
    gfs_finalize();
    return t_finish();
}
