/*
 * t_structured.c -- the paper's other data interfaces against a real
 * cluster, each checked byte for byte against a model in memory:
 * simple-strided, nested-strided, nested-batched, non-blocking handles,
 * GFS-GROUP split-phase I/O, the SFIO layer, and the striped-file
 * coordination services.  Run by tests/test_structured.py.
 *
 *   strided|nested|batch|nb|group|sfio|coord NAME
 *
 * Threads: single-threaded.
 */
#include <errno.h>

#include "galley_group.h"
#include "galley_sfio.h"
#include "thelp.h"

static int one_fork(const char *name, int nsub, int *kids)
{
    if (!EXPECT_EQ(gfs_create_file(name, nsub, NULL), 0))
        return -1;
    int fid = (int)EXPECT_OK(gfs_open_file(name));
    if (fid < 0)
        return -1;
    EXPECT_EQ(gfs_all_create(fid, "s"), 0);
    if (EXPECT_OK(gfs_all_open(fid, "s", kids)) < 0)
        return -1;
    return fid;
}

/* Compare the whole fork with model[0..size). */
static void check_image(int kid, const unsigned char *model, int64_t size,
                        const char *what)
{
    EXPECT_EQ(gfs_fork_size(kid), size);
    unsigned char *img = t_xmalloc((size_t)size);
    memset(img, 0xee, (size_t)size);
    EXPECT_EQ(gfs_read(kid, 0, img, size), size);
    EXPECT_MEM(img, model, (size_t)size, what);
    free(img);
}

static void strided(const char *name)
{
    int kid;
    int fid = one_fork(name, 1, &kid);
    if (fid < 0)
        return;
    enum { N = 1000, SZ = 7, FS = 20, OFF = 3 };
    unsigned char src[N * SZ], got[N * SZ], model[OFF + N * FS] = {0};
    t_fill(src, sizeof(src), 71);
    EXPECT_EQ(gfs_write_strided(kid, OFF, src, SZ, N, FS, SZ), N * SZ);
    for (int i = 0; i < N; i++)
        memcpy(model + OFF + i * FS, src + i * SZ, SZ);
    int64_t size = OFF + (N - 1) * FS + SZ;
    check_image(kid, model, size, "strided write");
    /* Read back with a negative memory stride: pieces land reversed. */
    memset(got, 0xee, sizeof(got));
    EXPECT_EQ(gfs_read_strided(kid, OFF, got + (N - 1) * SZ, SZ, N, FS, -SZ),
              N * SZ);
    int bad = 0;
    for (int i = 0; i < N && !bad; i++)
        bad = memcmp(got + (N - 1 - i) * SZ, src + i * SZ, SZ) != 0;
    EXPECT_TRUE(!bad);
    /* Memory stride larger than the piece: gaps in memory untouched. */
    unsigned char wide[N * 10];
    memset(wide, 0xee, sizeof(wide));
    EXPECT_EQ(gfs_read_strided(kid, OFF, wide, SZ, N, FS, 10), N * SZ);
    bad = 0;
    for (int i = 0; i < N && !bad; i++)
        bad = memcmp(wide + i * 10, src + i * SZ, SZ) != 0 ||
              wide[i * 10 + SZ] != 0xee;
    EXPECT_TRUE(!bad);
    /* Count 0 moves nothing; negative arguments are refused. */
    EXPECT_EQ(gfs_write_strided(kid, 0, src, SZ, 0, FS, SZ), 0);
    EXPECT_EQ(gfs_write_strided(kid, 0, src, SZ, 10, -FS, SZ), -EINVAL);
    EXPECT_EQ(gfs_write_strided(kid, -1, src, SZ, 10, FS, SZ), -EINVAL);
    EXPECT_EQ(gfs_write_strided(kid, 0, src, -1, 10, FS, SZ), -EINVAL);
    check_image(kid, model, size, "after refused requests");
    EXPECT_EQ(gfs_close_file(fid), 0);
}

static void nested(const char *name)
{
    int kid;
    int fid = one_fork(name, 1, &kid);
    if (fid < 0)
        return;
    const gfs_stride lv[3] = {{4, 1000, 300}, {5, 100, 60}, {6, 10, 10}};
    const int64_t size = 8, off = 17;
    unsigned char src[1200], got[1200], model[4096] = {0};
    t_fill(src, sizeof(src), 81);
    EXPECT_EQ(gfs_write_nested(kid, off, src, size, 3, lv), 4 * 5 * 6 * size);
    int64_t end = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 5; b++)
            for (int c = 0; c < 6; c++) {
                int64_t fo = off + a * 1000 + b * 100 + c * 10;
                memcpy(model + fo, src + a * 300 + b * 60 + c * 10,
                       (size_t)size);
                if (fo + size > end)
                    end = fo + size;
            }
    check_image(kid, model, end, "nested write");
    memset(got, 0xee, sizeof(got));
    EXPECT_EQ(gfs_read_nested(kid, off, got, size, 3, lv), 4 * 5 * 6 * size);
    int bad = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 5; b++)
            for (int c = 0; c < 6; c++) {
                int64_t mo = a * 300 + b * 60 + c * 10;
                bad += memcmp(got + mo, src + mo, (size_t)size) != 0;
            }
    EXPECT_EQ(bad, 0);
    EXPECT_EQ(gfs_write_nested(kid, 0, src, size, 0, lv), -EINVAL);
    EXPECT_EQ(gfs_write_nested(kid, 0, src, size, GFS_MAX_LEVELS + 1, lv),
              -EINVAL);
    EXPECT_EQ(gfs_close_file(fid), 0);
}

static void batch(const char *name)
{
    int kid;
    int fid = one_fork(name, 1, &kid);
    if (fid < 0)
        return;
    unsigned char src[4096], model[8192] = {0};
    t_fill(src, sizeof(src), 91);
    gfs_batch_entry e[3];
    memset(e, 0, sizeof(e));
    e[0].file_offset = 0; /* plain piece */
    e[0].mem_offset = 0;
    e[0].size = 500;
    e[1].file_offset = 100; /* nested over the plain one: wins */
    e[1].mem_offset = 1000;
    e[1].size = 4;
    e[1].nlevels = 2;
    e[1].levels[0] = (gfs_stride){3, 400, 100};
    e[1].levels[1] = (gfs_stride){10, 8, 4};
    e[2].file_offset = 5000; /* strided far away */
    e[2].mem_offset = 2000;
    e[2].size = 16;
    e[2].nlevels = 1;
    e[2].levels[0] = (gfs_stride){20, 32, 16};
    int64_t total = 500 + 3 * 10 * 4 + 20 * 16;
    EXPECT_EQ(gfs_batch_io(kid, GFS_WRITE, 3, e, src), total);
    memcpy(model, src, 500);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 10; b++)
            memcpy(model + 100 + a * 400 + b * 8, src + 1000 + a * 100 + b * 4,
                   4);
    for (int a = 0; a < 20; a++)
        memcpy(model + 5000 + a * 32, src + 2000 + a * 16, 16);
    check_image(kid, model, 5000 + 19 * 32 + 16, "batched write");
    unsigned char got[4096];
    memset(got, 0xee, sizeof(got));
    EXPECT_EQ(gfs_batch_io(kid, GFS_READ, 1, &e[2], got), 320);
    EXPECT_MEM(got + 2000, src + 2000, 320, "batched read");
    EXPECT_EQ(gfs_close_file(fid), 0);
}

static void nb(const char *name)
{
    int kids[4];
    int fid = one_fork(name, 4, kids);
    if (fid < 0)
        return;
    enum { SZ = 1 << 20 };
    unsigned char *src[4], *got[4];
    gfs_handle h[4];
    int64_t res[4];
    for (int s = 0; s < 4; s++) {
        src[s] = t_xmalloc(SZ);
        got[s] = t_xmalloc(SZ);
        t_fill(src[s], SZ, 100 + s);
        h[s] = gfs_new_handle();
        EXPECT_TRUE(h[s] >= 0);
        EXPECT_EQ(gfs_nb_write(h[s], kids[s], 0, src[s], SZ - s), 0);
    }
    EXPECT_EQ(gfs_waitall(4, h, res), 0);
    for (int s = 0; s < 4; s++)
        EXPECT_EQ(res[s], SZ - s);
    /* Reads: poll with gfs_test until each is done. */
    for (int s = 0; s < 4; s++) {
        memset(got[s], 0xee, SZ);
        h[s] = gfs_new_handle();
        EXPECT_EQ(gfs_nb_read(h[s], kids[s], 0, got[s], SZ), 0);
    }
    double end = t_now() + 60;
    int done = 0;
    bool fin[4] = {false, false, false, false};
    while (done < 4 && t_now() < end) {
        for (int s = 0; s < 4; s++) {
            if (fin[s])
                continue;
            int rc = gfs_test(h[s], &res[s]);
            EXPECT_TRUE(rc == 0 || rc == 1);
            if (rc != 0) {
                fin[s] = true;
                done++;
            }
        }
    }
    EXPECT_EQ(done, 4);
    for (int s = 0; s < 4; s++) {
        EXPECT_EQ(res[s], SZ - s);
        EXPECT_MEM(got[s], src[s], SZ - s, "non-blocking read");
        EXPECT_TRUE(t_all_zero(got[s] + SZ - s, s));
    }
    /* A list request and a strided one on the same handle kinds. */
    gfs_list_entry le[2] = {{10, 0, 5}, {0, 5, 5}};
    unsigned char lb[10];
    gfs_handle hl = gfs_new_handle();
    EXPECT_EQ(gfs_nb_listio(hl, kids[1], GFS_READ, 2, le, lb), 0);
    EXPECT_EQ(gfs_wait(hl), 10);
    EXPECT_MEM(lb, src[1] + 10, 5, "nb list piece 0");
    EXPECT_MEM(lb + 5, src[1], 5, "nb list piece 1");
    /* Errors come back through wait; a released handle is unknown. */
    gfs_handle hb = gfs_new_handle();
    int rc = gfs_nb_read(hb, 99999, 0, lb, 10);
    if (rc == 0)
        EXPECT_EQ(gfs_wait(hb), GFS_EBADID);
    else
        EXPECT_EQ(rc, GFS_EBADID);
    EXPECT_TRUE(gfs_wait(hl) < 0);
    for (int s = 0; s < 4; s++) {
        free(src[s]);
        free(got[s]);
    }
    EXPECT_EQ(gfs_close_file(fid), 0);
}

static void group(const char *name)
{
    int kids[2];
    int fid = one_fork(name, 2, kids);
    if (fid < 0)
        return;
    enum { N = 1000, SZ = 24 };
    static unsigned char src[N * SZ], got[N * SZ];
    t_fill(src, sizeof(src), 111);
    gfs_group_stats st;
    EXPECT_EQ(gfs_group_set_policy(GFS_GROUP_NOSEND), 0);
    EXPECT_EQ(gfs_group_get_policy(), GFS_GROUP_NOSEND);
    EXPECT_EQ(gfs_group_set_limits(100, (int64_t)1 << 30), 0);
    gfs_group_reset_stats();
    /* 1000 writes to one fork, in reverse order: 10 groups by count. */
    for (int i = N - 1; i >= 0; i--)
        EXPECT_EQ(gfs_group_write(kids[0], (int64_t)i * SZ, src + i * SZ, SZ),
                  0);
    EXPECT_EQ(gfs_group_waitio(), 0);
    EXPECT_EQ(gfs_group_get_stats(&st), 0);
    printf("writes: requests %" PRIu64 " groups %" PRIu64 " by count %" PRIu64
           " max pending %" PRIu64 "\n",
           st.requests, st.groups, st.flush_count, st.max_pending);
    EXPECT_EQ(st.requests, N);
    EXPECT_EQ(st.flush_count, N / 100);
    EXPECT_EQ(st.max_pending, 100);
    check_image(kids[0], src, N * SZ, "group writes");
    /* Alternating forks: every change of fork flushes. */
    gfs_group_reset_stats();
    for (int i = 0; i < 10; i++)
        EXPECT_EQ(gfs_group_write(kids[i % 2], i * SZ, src + i * SZ, SZ), 0);
    EXPECT_EQ(gfs_group_waitio(), 0);
    EXPECT_EQ(gfs_group_get_stats(&st), 0);
    EXPECT_EQ(st.flush_fork, 9);
    /* Reads after writes on one fork: the change of operation flushes. */
    gfs_group_reset_stats();
    memset(got, 0xee, sizeof(got));
    EXPECT_EQ(gfs_group_write(kids[1], 0, "abc", 3), 0);
    for (int i = 0; i < N; i++)
        EXPECT_EQ(gfs_group_read(kids[0], (int64_t)i * SZ, got + i * SZ, SZ),
                  0);
    EXPECT_EQ(gfs_group_waitio(), 0);
    EXPECT_EQ(gfs_group_testio(), 1);
    EXPECT_MEM(got, src, sizeof(src), "group reads");
    EXPECT_EQ(gfs_group_get_stats(&st), 0);
    EXPECT_EQ(st.requests, N + 1);
    /* The send policy also completes everything. */
    EXPECT_EQ(gfs_group_set_policy(GFS_GROUP_SEND), 0);
    for (int i = 0; i < N; i++)
        EXPECT_EQ(gfs_group_write(kids[1], (int64_t)i * SZ, src + i * SZ, SZ),
                  0);
    EXPECT_EQ(gfs_group_waitio(), 0);
    check_image(kids[1], src, N * SZ, "send policy writes");
    EXPECT_EQ(gfs_group_write(99999, 0, src, 1), GFS_EBADID);
    EXPECT_EQ(gfs_group_write(kids[0], -1, src, 1), -EINVAL);
    EXPECT_EQ(gfs_group_set_limits(0, 10), -EINVAL);
    EXPECT_EQ(gfs_close_file(fid), 0);
}

static void sfio(const char *name)
{
    MFILE *f = mopen(name, 16);
    if (!EXPECT_TRUE(f != NULL)) {
        printf("mopen: %d %s\n", mlasterror(), gfs_strerror(mlasterror()));
        return;
    }
    enum { SZ = 100000 };
    static char src[SZ], got[SZ];
    t_fill(src, SZ, 121);
    EXPECT_EQ(mwrite(f, 0, src, SZ), SZ);
    memset(got, 0, SZ);
    EXPECT_EQ(mreadc(f, 0, got, SZ), SZ);
    EXPECT_MEM(got, src, SZ, "mwrite then mreadc");
    t_fill(src, SZ, 122);
    EXPECT_EQ(mwritec(f, 0, src, SZ), SZ);
    memset(got, 0, SZ);
    EXPECT_EQ(mread(f, 0, got, SZ), SZ);
    EXPECT_MEM(got, src, SZ, "mwritec then mread");
    char a[10] = "0123456789", b[5] = "abcde";
    long offs[2] = {50, 7};
    char *bufs[2] = {a, b};
    unsigned sizes[2] = {10, 5};
    EXPECT_EQ(mwriteb(f, 2, offs, bufs, sizes), 15);
    memcpy(src + 50, a, 10);
    memcpy(src + 7, b, 5);
    char ra[10], rb[5];
    char *rbufs[2] = {ra, rb};
    EXPECT_EQ(mreadb(f, 2, offs, rbufs, sizes), 15);
    EXPECT_MEM(ra, a, 10, "mreadb 0");
    EXPECT_MEM(rb, b, 5, "mreadb 1");
    EXPECT_EQ(mchsize(f, 1000), 0);
    memset(got, 0x55, SZ);
    EXPECT_EQ(mreadc(f, 0, got, 2000), 1000);
    EXPECT_MEM(got, src, 1000, "after mchsize");
    EXPECT_EQ(mclose(f), 0);
    unsigned long ioerr[GFS_MAX_SERVERS * MERR_NKINDS];
    merror(ioerr);
    unsigned long errs = 0;
    for (int i = 0; i < gfs_num_servers() * MERR_NKINDS; i++)
        errs += ioerr[i];
    EXPECT_EQ(errs, 0);
    EXPECT_EQ(mdelete(name), 0);
    EXPECT_EQ(gfs_open_file(name), -ENOENT);
    EXPECT_EQ(mdelete(name), -ENOENT);
}

static void coord(const char *name)
{
    if (!EXPECT_EQ(gfs_create_striped(name, 4, NULL, 4096, "data"), 0))
        return;
    int sid = (int)EXPECT_OK(gfs_striped_open(name));
    EXPECT_EQ(gfs_striped_fetch_add(sid, "ptr", 5), 0);
    EXPECT_EQ(gfs_striped_fetch_add(sid, "ptr", 7), 5);
    EXPECT_EQ(gfs_striped_fetch_add(sid, "other", 1), 0);
    EXPECT_EQ(gfs_striped_fetch_add(sid, "ptr", 0), 12);
    EXPECT_EQ(gfs_striped_lock(sid, 0, 100, 1), 0);
    EXPECT_EQ(gfs_striped_unlock(sid, 0, 100), 0);
    EXPECT_EQ(gfs_striped_lock(sid, 0, 0, 0), 0);
    EXPECT_EQ(gfs_striped_unlock(sid, 0, 0), 0);
    EXPECT_EQ(gfs_striped_lock(sid, -1, 10, 1), -EINVAL);
    /* Export/import: a second sid on the same file without a lookup. */
    unsigned char data[10000], got[10000], blob[GFS_EXPORT_MAX];
    t_fill(data, sizeof(data), 131);
    EXPECT_EQ(gfs_striped_write(sid, 0, data, sizeof(data)),
              (int64_t)sizeof(data));
    int n = (int)EXPECT_OK(gfs_striped_export(sid, blob, sizeof(blob)));
    if (n > 0) {
        int sid2 = (int)EXPECT_OK(gfs_striped_import(blob, (size_t)n));
        memset(got, 0, sizeof(got));
        EXPECT_EQ(gfs_striped_read(sid2, 0, got, sizeof(got)),
                  (int64_t)sizeof(got));
        EXPECT_MEM(got, data, sizeof(got), "imported sid");
        EXPECT_EQ(gfs_striped_close(sid2), 0);
        blob[0] ^= 0xff;
        EXPECT_TRUE(gfs_striped_import(blob, (size_t)n) < 0);
        EXPECT_TRUE(gfs_striped_import(blob, 3) < 0);
    }
    EXPECT_EQ(gfs_striped_close(sid), 0);
}

int main(int argc, char **argv)
{
    const char *use = "strided|nested|batch|nb|group|sfio|coord NAME";
    if (argc < 3)
        return t_usage(argv[0], use);
    static const struct {
        const char *name;
        void (*fn)(const char *);
    } scen[] = {{"strided", strided}, {"nested", nested}, {"batch", batch},
                {"nb", nb},           {"group", group},   {"sfio", sfio},
                {"coord", coord}};
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
