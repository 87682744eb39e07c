/*
 * t_iface_sfio.c -- the SFIO layer against a real cluster: mwrite, mwritec
 * and mwriteb produce the same file and mread, mreadc and mreadb the same
 * bytes; mchsize truncates and extends; mdelete/mcreate; merror counts
 * errors per server and kind, including against a server stopped by the
 * test (the "stopped" scenario prints "KILL <server>" and waits for a line
 * on stdin before going on).  Run by tests/test_interfaces.py.
 *
 *   same|chsize|delete|argerr|stopped NAME
 *
 * Threads: single-threaded.
 */
#include <errno.h>

#include "galley_sfio.h"
#include "thelp.h"

#define UNIT 200

/* merror() into a fresh array of gfs_num_servers() * MERR_NKINDS. */
static unsigned long *errs(void)
{
    int n = gfs_num_servers();
    unsigned long *e = t_xmalloc(sizeof(*e) * (size_t)n * MERR_NKINDS);
    memset(e, 0xff, sizeof(*e) * (size_t)n * MERR_NKINDS);
    merror(e);
    return e;
}

static unsigned long total_errs(const unsigned long *e)
{
    unsigned long t = 0;
    for (int i = 0; i < gfs_num_servers() * MERR_NKINDS; i++)
        t += e[i];
    return t;
}

static const char *kind_name[MERR_NKINDS] = {
    "open", "close", "creat", "unlink", "ftruncate", "lseek", "write", "read"};

/* "ERRCOUNT label srv:kind=n ..." for every non-zero counter. */
static void print_errs(const char *label, const unsigned long *e)
{
    printf("ERRCOUNT %s", label);
    for (int s = 0; s < gfs_num_servers(); s++)
        for (int k = 0; k < MERR_NKINDS; k++)
            if (e[s * MERR_NKINDS + k])
                printf(" %d:%s=%lu", s, kind_name[k], e[s * MERR_NKINDS + k]);
    printf("\n");
    fflush(stdout);
}

/* The bytes of subfile s of striped file `name`, read through galley.h. */
static int64_t subfile_bytes(const char *name, int s, unsigned char **out)
{
    int sid = gfs_striped_open(name);
    if (sid < 0) {
        *out = NULL;
        return sid;
    }
    int kid = gfs_striped_kid(sid, s);
    int64_t n = gfs_fork_size(kid);
    *out = t_xmalloc((size_t)(n > 0 ? n : 1));
    if (n > 0 && gfs_read(kid, 0, *out, n) != n)
        n = -EIO;
    gfs_striped_close(sid);
    return n;
}

/* ---------------------------------------------------------------- same -- */

/* Blocks of D (offsets off..off+len) with sizes 1..997, each in its own
 * buffer, in a shuffled order. */
typedef struct blocks {
    unsigned n;
    long *off;
    char **buf;
    unsigned *size;
} blocks;

static void make_blocks(blocks *b, long off, unsigned len, uint64_t seed)
{
    unsigned cap = len + 1;
    b->off = t_xmalloc(sizeof(long) * cap);
    b->buf = t_xmalloc(sizeof(char *) * cap);
    b->size = t_xmalloc(sizeof(unsigned) * cap);
    b->n = 0;
    uint64_t st = seed;
    for (unsigned at = 0; at < len;) {
        unsigned sz = 1 + (unsigned)(t_rand(&st) % 997);
        if (sz > len - at)
            sz = len - at;
        b->off[b->n] = off + at;
        b->size[b->n] = sz;
        b->buf[b->n] = t_xmalloc(sz);
        b->n++;
        at += sz;
    }
    for (unsigned i = b->n - 1; i > 0; i--) {
        unsigned j = (unsigned)(t_rand(&st) % (i + 1));
        long o = b->off[i];
        b->off[i] = b->off[j];
        b->off[j] = o;
        unsigned s = b->size[i];
        b->size[i] = b->size[j];
        b->size[j] = s;
        char *p = b->buf[i];
        b->buf[i] = b->buf[j];
        b->buf[j] = p;
    }
}

static void free_blocks(blocks *b)
{
    for (unsigned i = 0; i < b->n; i++)
        free(b->buf[i]);
    free(b->off);
    free(b->buf);
    free(b->size);
}

static void same(const char *name)
{
    enum { OFF = 37, LEN = 100000 };
    unsigned char *d = t_xmalloc(LEN), *got = t_xmalloc(OFF + LEN + 100);
    t_fill(d, LEN, 51);
    char nm[3][300];
    MFILE *f[3];
    for (int i = 0; i < 3; i++) {
        snprintf(nm[i], sizeof(nm[i]), "%s.%c", name, "ACB"[i]);
        f[i] = mopen(nm[i], UNIT);
        if (!EXPECT_TRUE(f[i] != NULL)) {
            printf("  mopen: %s\n", gfs_strerror(mlasterror()));
            exit(t_finish());
        }
    }
    /* three ways of writing the same bytes */
    EXPECT_EQ(mwrite(f[0], OFF, (const char *)d, LEN), LEN);
    EXPECT_EQ(mwritec(f[1], OFF, (const char *)d, LEN), LEN);
    blocks b;
    make_blocks(&b, OFF, LEN, 52);
    for (unsigned i = 0; i < b.n; i++)
        memcpy(b.buf[i], d + (b.off[i] - OFF), b.size[i]);
    EXPECT_EQ(mwriteb(f[2], b.n, b.off, b.buf, b.size), LEN);
    free_blocks(&b);

    /* every subfile identical across the three files */
    for (int s = 0; s < gfs_num_servers(); s++) {
        unsigned char *x[3];
        int64_t n[3];
        for (int i = 0; i < 3; i++)
            n[i] = subfile_bytes(nm[i], s, &x[i]);
        EXPECT_TRUE(n[0] > 0);
        EXPECT_EQ(n[1], n[0]);
        EXPECT_EQ(n[2], n[0]);
        if (n[0] > 0 && n[1] == n[0] && n[2] == n[0]) {
            EXPECT_MEM(x[1], x[0], (size_t)n[0], "mwritec subfile vs mwrite");
            EXPECT_MEM(x[2], x[0], (size_t)n[0], "mwriteb subfile vs mwrite");
        }
        for (int i = 0; i < 3; i++)
            free(x[i]);
    }

    /* three ways of reading, from each file */
    unsigned char zeros[OFF] = {0};
    for (int i = 0; i < 3; i++) {
        memset(got, 0xee, OFF + LEN);
        EXPECT_EQ(mread(f[i], 0, (char *)got, OFF + LEN), OFF + LEN);
        EXPECT_MEM(got, zeros, OFF, "mread hole");
        EXPECT_MEM(got + OFF, d, LEN, "mread");
        memset(got, 0xee, OFF + LEN);
        EXPECT_EQ(mreadc(f[i], 0, (char *)got, OFF + LEN), OFF + LEN);
        EXPECT_MEM(got, zeros, OFF, "mreadc hole");
        EXPECT_MEM(got + OFF, d, LEN, "mreadc");
        make_blocks(&b, 0, OFF + LEN, 60 + (uint64_t)i);
        EXPECT_EQ(mreadb(f[i], b.n, b.off, b.buf, b.size), OFF + LEN);
        memset(got, 0xee, OFF + LEN);
        for (unsigned j = 0; j < b.n; j++)
            memcpy(got + b.off[j], b.buf[j], b.size[j]);
        free_blocks(&b);
        EXPECT_MEM(got, zeros, OFF, "mreadb hole");
        EXPECT_MEM(got + OFF, d, LEN, "mreadb");
        /* short reads at the end of the file */
        memset(got, 0xee, 100);
        EXPECT_EQ(mread(f[i], OFF + LEN - 10, (char *)got, 100), 10);
        EXPECT_MEM(got, d + LEN - 10, 10, "mread at EOF");
        EXPECT_TRUE(t_all_zero(got + 10, 90));
        memset(got, 0xee, 100);
        EXPECT_EQ(mreadc(f[i], OFF + LEN - 10, (char *)got, 100), 10);
        EXPECT_MEM(got, d + LEN - 10, 10, "mreadc at EOF");
        EXPECT_TRUE(t_all_zero(got + 10, 90));
        EXPECT_EQ(mreadc(f[i], OFF + LEN + 5, (char *)got, 100), 0);
    }
    /* an existing file keeps its own stripe unit */
    EXPECT_EQ(mclose(f[0]), 0);
    f[0] = mopen(nm[0], 999);
    EXPECT_TRUE(f[0] != NULL);
    int sid = (int)EXPECT_OK(gfs_striped_open(nm[0]));
    gfs_layout lay;
    EXPECT_EQ(gfs_striped_layout(sid, &lay), 0);
    EXPECT_EQ(lay.unit, UNIT);
    EXPECT_EQ(lay.nsubfiles, gfs_num_servers());
    gfs_striped_close(sid);
    memset(got, 0xee, LEN);
    EXPECT_EQ(mreadc(f[0], OFF, (char *)got, LEN), LEN);
    EXPECT_MEM(got, d, LEN, "reopened");
    unsigned long *e = errs();
    EXPECT_EQ(total_errs(e), 0);
    free(e);
    for (int i = 0; i < 3; i++)
        EXPECT_EQ(mclose(f[i]), 0);
    free(d);
    free(got);
}

/* -------------------------------------------------------------- chsize -- */

/* Each subfile's fork must be exactly as long as the layout implies. */
static void check_fork_sizes(const char *name, int64_t size)
{
    int sid = gfs_striped_open(name);
    if (!EXPECT_OK(sid) && sid < 0)
        return;
    EXPECT_EQ(gfs_striped_size(sid), size);
    int ns = gfs_num_servers();
    int64_t row = (int64_t)UNIT * ns;
    for (int s = 0; s < ns; s++) {
        int64_t part = size % row - (int64_t)s * UNIT;
        part = part < 0 ? 0 : part > UNIT ? UNIT : part;
        EXPECT_EQ(gfs_fork_size(gfs_striped_kid(sid, s)),
                  size / row * UNIT + part);
    }
    gfs_striped_close(sid);
}

static void chsize(const char *name)
{
    enum { LEN = 50000 };
    unsigned char *d = t_xmalloc(LEN), *got = t_xmalloc(LEN + 100);
    t_fill(d, LEN, 53);
    MFILE *f = mopen(name, UNIT);
    if (!EXPECT_TRUE(f != NULL))
        return;
    EXPECT_EQ(mwritec(f, 0, (const char *)d, LEN), LEN);
    check_fork_sizes(name, LEN);
    /* truncate in the middle of a stripe unit */
    EXPECT_EQ(mchsize(f, 12345), 0);
    check_fork_sizes(name, 12345);
    memset(got, 0xee, LEN);
    EXPECT_EQ(mreadc(f, 0, (char *)got, LEN), 12345);
    EXPECT_MEM(got, d, 12345, "after truncate");
    EXPECT_TRUE(t_all_zero(got + 12345, LEN - 12345));
    memset(got, 0xee, LEN);
    EXPECT_EQ(mread(f, 0, (char *)got, LEN), 12345);
    EXPECT_MEM(got, d, 12345, "after truncate (mread)");
    EXPECT_TRUE(t_all_zero(got + 12345, LEN - 12345));
    /* extend: zeros where the old data was */
    EXPECT_EQ(mchsize(f, 30001), 0);
    check_fork_sizes(name, 30001);
    memset(got, 0xee, LEN);
    EXPECT_EQ(mreadc(f, 0, (char *)got, 30001), 30001);
    EXPECT_MEM(got, d, 12345, "after extend");
    EXPECT_TRUE(t_all_zero(got + 12345, 30001 - 12345));
    /* write past the end (forks holding only the hole stay short, so
     * only the logical size is checked), then truncate to a row boundary */
    EXPECT_EQ(mwritec(f, 40000, (const char *)d, 100), 100);
    int sid = gfs_striped_open(name);
    EXPECT_EQ(gfs_striped_size(sid), 40100);
    gfs_striped_close(sid);
    EXPECT_EQ(mchsize(f, 8 * UNIT * gfs_num_servers()), 0);
    check_fork_sizes(name, 8 * UNIT * gfs_num_servers());
    EXPECT_EQ(mchsize(f, 0), 0);
    check_fork_sizes(name, 0);
    EXPECT_EQ(mreadc(f, 0, (char *)got, 100), 0);
    unsigned long *e = errs();
    EXPECT_EQ(total_errs(e), 0);
    free(e);
    EXPECT_EQ(mclose(f), 0);
    free(d);
    free(got);
}

/* Argument errors are refused, and -- as they never reach a server --
 * are not counted against any server. */
static void argerr(const char *name)
{
    MFILE *f = mopen(name, UNIT);
    if (!EXPECT_TRUE(f != NULL))
        return;
    char buf[100] = {0};
    unsigned long *e = errs(); /* reset */
    free(e);
    static const char *what[] = {"mwrite(-1)", "mread(-1)", "mwritec(-1)",
                                 "mreadc(-1)", "mchsize(-1)"};
    for (int i = 0; i < 5; i++) {
        long rc = i == 0   ? mwrite(f, -1, buf, 10)
                  : i == 1 ? mread(f, -1, buf, 10)
                  : i == 2 ? mwritec(f, -1, buf, 10)
                  : i == 3 ? mreadc(f, -1, buf, 10)
                           : mchsize(f, -1);
        if (!EXPECT_EQ(rc, -EINVAL))
            printf("  (%s)\n", what[i]);
        e = errs();
        print_errs(what[i], e);
        if (!EXPECT_EQ(total_errs(e), 0))
            printf("  (%s counted against servers)\n", what[i]);
        free(e);
    }
    EXPECT_EQ(mclose(f), 0);
}

/* -------------------------------------------------------------- delete -- */

static void delete_(const char *name)
{
    unsigned long *e = errs(); /* reset */
    free(e);
    EXPECT_EQ(mcreate(name), 0);
    int fid = (int)EXPECT_OK(gfs_open_file(name));
    gfs_file_stat st;
    EXPECT_EQ(gfs_stat_file(fid, &st), 0);
    EXPECT_EQ(st.nsubfiles, gfs_num_servers());
    gfs_close_file(fid);
    int meta = st.servers[0]; /* the server the name hashes to */
    EXPECT_EQ(mcreate(name), -EEXIST);
    MFILE *f = mopen(name, 0);
    EXPECT_TRUE(f != NULL);
    EXPECT_EQ(mwritec(f, 0, "hello", 5), 5);
    EXPECT_EQ(mclose(f), 0);
    EXPECT_EQ(mdelete(name), 0);
    EXPECT_EQ(gfs_open_file(name), -ENOENT);
    EXPECT_EQ(gfs_striped_open(name), -ENOENT);
    EXPECT_EQ(mdelete(name), -ENOENT);
    e = errs();
    print_errs("delete", e);
    int ns = gfs_num_servers();
    for (int s = 0; s < ns; s++)
        for (int k = 0; k < MERR_NKINDS; k++) {
            unsigned long want =
                s == meta && (k == MERR_CREAT || k == MERR_UNLINK) ? 1 : 0;
            if (!EXPECT_EQ(e[s * MERR_NKINDS + k], want))
                printf("  (server %d, %s)\n", s, kind_name[k]);
        }
    free(e);
    /* merror reset the counters */
    e = errs();
    EXPECT_EQ(total_errs(e), 0);
    free(e);
    /* mopen creates the file again, empty, with the default unit */
    f = mopen(name, 0);
    EXPECT_TRUE(f != NULL);
    char got[5];
    EXPECT_EQ(mreadc(f, 0, got, 5), 0);
    int sid = gfs_striped_open(name);
    gfs_layout lay;
    EXPECT_EQ(gfs_striped_layout(sid, &lay), 0);
    EXPECT_EQ(lay.unit, GFS_DEFAULT_STRIPE_UNIT);
    gfs_striped_close(sid);
    EXPECT_EQ(mclose(f), 0);
    EXPECT_EQ(mdelete(name), 0);
}

/* ------------------------------------------------------------- stopped -- */

static void stopped(const char *name)
{
    int ns = gfs_num_servers();
    MFILE *f = mopen(name, UNIT);
    if (!EXPECT_TRUE(f != NULL))
        return;
    int64_t row = (int64_t)UNIT * ns, len = 4 * row;
    unsigned char *d = t_xmalloc((size_t)len), *got = t_xmalloc((size_t)len);
    t_fill(d, (size_t)len, 54);
    EXPECT_EQ(mwritec(f, 0, (const char *)d, (unsigned)len), len);
    int fid = (int)EXPECT_OK(gfs_open_file(name));
    gfs_file_stat st;
    EXPECT_EQ(gfs_stat_file(fid, &st), 0);
    gfs_close_file(fid);
    int dead = st.servers[2], ok0 = st.servers[0];
    unsigned long *e = errs();
    free(e);

    printf("KILL %d\n", dead);
    fflush(stdout);
    char line[64];
    if (!fgets(line, sizeof(line), stdin)) {
        printf("FAIL no go-ahead on stdin\n");
        exit(1);
    }
    gfs_set_timeout_ms(3000);

    /* Unoptimised path: one request per fragment, so the failing server
     * is known exactly. */
    long r = mwrite(f, 2 * UNIT, (const char *)d, UNIT); /* subfile 2 */
    EXPECT_TRUE(r == GFS_ESERVERDOWN || r == GFS_ETIMEDOUT);
    EXPECT_EQ(mlasterror(), r);
    e = errs();
    print_errs("mwrite(subfile 2)", e);
    for (int s = 0; s < ns; s++)
        for (int k = 0; k < MERR_NKINDS; k++)
            EXPECT_EQ(e[s * MERR_NKINDS + k],
                      s == dead && k == MERR_WRITE ? 1 : 0);
    free(e);
    r = mread(f, 2 * UNIT + 10, (char *)got, 10);
    EXPECT_TRUE(r == GFS_ESERVERDOWN || r == GFS_ETIMEDOUT);
    e = errs();
    print_errs("mread(subfile 2)", e);
    for (int s = 0; s < ns; s++)
        for (int k = 0; k < MERR_NKINDS; k++)
            EXPECT_EQ(e[s * MERR_NKINDS + k],
                      s == dead && k == MERR_READ ? 1 : 0);
    free(e);

    /* Ranges on live servers still work and count nothing. */
    EXPECT_EQ(mwrite(f, 0, (const char *)d, UNIT), UNIT);
    EXPECT_EQ(mwritec(f, UNIT, (const char *)d + UNIT, UNIT), UNIT);
    memset(got, 0xee, UNIT);
    EXPECT_EQ(mreadc(f, 0, (char *)got, UNIT), UNIT);
    EXPECT_MEM(got, d, UNIT, "live subfile 0");
    e = errs();
    EXPECT_EQ(total_errs(e), 0);
    free(e);

    /* Optimised calls touching only the dead server's subfile. */
    r = mwritec(f, row + 2 * UNIT, (const char *)d, UNIT);
    EXPECT_TRUE(r == GFS_ESERVERDOWN || r == GFS_ETIMEDOUT);
    e = errs();
    print_errs("mwritec(subfile 2)", e);
    EXPECT_TRUE(e[dead * MERR_NKINDS + MERR_WRITE] >= 1);
    free(e);
    r = mreadc(f, 2 * UNIT, (char *)got, UNIT);
    EXPECT_TRUE(r == GFS_ESERVERDOWN || r == GFS_ETIMEDOUT);
    e = errs();
    print_errs("mreadc(subfile 2)", e);
    EXPECT_TRUE(e[dead * MERR_NKINDS + MERR_READ] >= 1);
    free(e);
    /* mwriteb with a block on subfile 0 and one on subfile 2 */
    long offs[2] = {0, 2 * UNIT};
    char *bufs[2] = {(char *)d, (char *)d + 2 * UNIT};
    unsigned sizes[2] = {UNIT, UNIT};
    r = mwriteb(f, 2, offs, bufs, sizes);
    EXPECT_TRUE(r == GFS_ESERVERDOWN || r == GFS_ETIMEDOUT);
    e = errs();
    print_errs("mwriteb(subfiles 0+2)", e);
    EXPECT_TRUE(e[dead * MERR_NKINDS + MERR_WRITE] >= 1);
    free(e);
    printf("SERVERS dead=%d live0=%d\n", dead, ok0);
    int rc = mclose(f);
    printf("INFO mclose with a dead server: %d (%s)\n", rc,
           rc ? gfs_strerror(rc) : "ok");
    free(d);
    free(got);
}

int main(int argc, char **argv)
{
    const char *use = "same|chsize|delete|argerr|stopped NAME";
    if (argc < 3)
        return t_usage(argv[0], use);
    static const struct {
        const char *name;
        void (*fn)(const char *);
    } scen[] = {{"same", same},
                {"chsize", chsize},
                {"delete", delete_},
                {"argerr", argerr},
                {"stopped", stopped}};
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
