/*
 * t_striped.c -- SFIO-style striped files against a real cluster: the
 * layout formula is what lands in each subfile's fork, 100000 logical
 * pieces of 16 bytes through gfs_striped_listio, logical size, truncate.
 * Run by tests/test_striped.py.
 *
 *   layout NAME   unit 16 over 4 subfiles: check fork sizes and fork bytes
 *                 against the formula in galley.h
 *   listio NAME   100000 shuffled 16-byte logical pieces, byte-exact
 *   size NAME     logical size, truncate (shrink, extend), reads past EOF
 *   rangeio NAME  the two-list form: file ranges and memory segments cut
 *                 independently, byte-exact both ways; bad lists refused
 *                 with nothing written; the segment count the drivers use
 *   math -        the pure layout arithmetic
 *
 * Threads: single-threaded.
 */
#include <errno.h>

#include "thelp.h"

#define NSUB 4

static int64_t model_fork_size(int nsub, int64_t unit, int sub, int64_t size)
{
    int64_t n = 0;
    for (int64_t x = 0; x < size; x++)
        n += (x / unit) % nsub == sub;
    return n;
}

static void math(void)
{
    const int64_t units[] = {1, 16, 4096};
    for (int nsub = 1; nsub <= 5; nsub++)
        for (size_t u = 0; u < 3; u++)
            for (int64_t size = 0;
                 size<3 * nsub * units[u] + 7; size += units[u]> 16 ? 1023
                                                                    : 1) {
                int64_t fs[8];
                for (int s = 0; s < nsub; s++) {
                    fs[s] = gfs_layout_fork_size(nsub, units[u], s, size);
                    if (!EXPECT_EQ(fs[s],
                                   model_fork_size(nsub, units[u], s, size)))
                        printf("  nsub %d unit %" PRId64 " size %" PRId64 "\n",
                               nsub, units[u], size);
                }
                if (!EXPECT_EQ(gfs_layout_logical_size(nsub, units[u], fs),
                               size))
                    printf("  nsub %d unit %" PRId64 " size %" PRId64 "\n",
                           nsub, units[u], size);
            }
    /* Large sizes: no overflow. */
    int64_t big = (int64_t)1 << 50;
    int64_t fs[NSUB], sum = 0;
    for (int s = 0; s < NSUB; s++)
        sum += fs[s] = gfs_layout_fork_size(NSUB, 65536, s, big + 3);
    EXPECT_EQ(sum, big + 3);
    EXPECT_EQ(gfs_layout_logical_size(NSUB, 65536, fs), big + 3);
}

static int open_striped(const char *name, int64_t unit)
{
    if (!EXPECT_EQ(gfs_create_striped(name, NSUB, NULL, unit, "data"), 0))
        return -1;
    int sid = (int)EXPECT_OK(gfs_striped_open(name));
    if (sid < 0)
        return -1;
    gfs_layout l;
    memset(&l, 0, sizeof(l));
    EXPECT_EQ(gfs_striped_layout(sid, &l), 0);
    EXPECT_EQ(l.nsubfiles, NSUB);
    EXPECT_EQ(l.unit, unit);
    EXPECT_TRUE(!strcmp(l.fork, "data"));
    EXPECT_EQ(l.kind, GFS_LAYOUT_STRIPED);
    return sid;
}

static void layout(const char *name)
{
    const int64_t unit = 16, size = 1600000 + 5; /* 100000 units and a bit */
    int sid = open_striped(name, unit);
    if (sid < 0)
        return;
    unsigned char *src = t_xmalloc(size), *got = t_xmalloc(size);
    t_fill(src, size, 31);
    EXPECT_EQ(gfs_striped_write(sid, 0, src, size), size);
    EXPECT_EQ(gfs_striped_size(sid), size);
    /* Each subfile's fork holds exactly its units, in order. */
    for (int s = 0; s < NSUB; s++) {
        int kid = gfs_striped_kid(sid, s);
        EXPECT_TRUE(kid >= 0);
        int64_t fsz = gfs_layout_fork_size(NSUB, unit, s, size);
        EXPECT_EQ(gfs_fork_size(kid), fsz);
        memset(got, 0xee, (size_t)fsz);
        EXPECT_EQ(gfs_read(kid, 0, got, fsz), fsz);
        int bad = 0;
        for (int64_t x = s * unit; x < size && bad < 3; x += NSUB * unit) {
            int64_t off = (x / (unit * NSUB)) * unit;
            int64_t len = size - x < unit ? size - x : unit;
            if (memcmp(got + off, src + x, (size_t)len)) {
                t_fail(__FILE__, __LINE__,
                       "subfile %d fork offset %" PRId64
                       " does not hold logical byte %" PRId64,
                       s, off, x);
                bad++;
            }
        }
        printf("subfile %d: %" PRId64 " bytes, layout %s\n", s, fsz,
               bad ? "WRONG" : "ok");
    }
    memset(got, 0xee, size);
    EXPECT_EQ(gfs_striped_read(sid, 0, got, size), size);
    EXPECT_MEM(got, src, size, "striped read");
    /* Unaligned logical ranges. */
    memset(got, 0xee, 1000);
    EXPECT_EQ(gfs_striped_read(sid, 7, got, 999), 999);
    EXPECT_MEM(got, src + 7, 999, "unaligned read");
    EXPECT_EQ(gfs_striped_close(sid), 0);
    free(src);
    free(got);
}

static void listio(const char *name)
{
    /* Four 16-byte pieces per 64-byte stripe unit: the library must
     * merge the fragments that meet in one subfile. */
    const int64_t n = 100000, p = 16, size = n * p;
    int sid = open_striped(name, 64);
    if (sid < 0)
        return;
    unsigned char *src = t_xmalloc(size), *got = t_xmalloc(size);
    unsigned char *model = t_xmalloc(size);
    gfs_list_entry *e = t_xmalloc(sizeof(*e) * n);
    t_fill(src, size, 41);
    uint64_t st = 3;
    int64_t *slot = t_xmalloc(sizeof(*slot) * n);
    for (int64_t i = 0; i < n; i++)
        slot[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(t_rand(&st) % (uint64_t)(i + 1)), t = slot[i];
        slot[i] = slot[j];
        slot[j] = t;
    }
    for (int64_t i = 0; i < n; i++) {
        e[i].file_offset = slot[i] * p;
        e[i].mem_offset = i * p;
        e[i].size = p;
        memcpy(model + slot[i] * p, src + i * p, (size_t)p);
    }
    double t0 = t_now();
    EXPECT_EQ(gfs_striped_listio(sid, GFS_WRITE, n, e, src), size);
    printf("wrote %" PRId64 " pieces of %" PRId64 " bytes in %.2f s\n", n, p,
           t_now() - t0);
    EXPECT_EQ(gfs_striped_size(sid), size);
    memset(got, 0xee, size);
    EXPECT_EQ(gfs_striped_read(sid, 0, got, size), size);
    EXPECT_MEM(got, model, size, "logical file after list write");
    memset(got, 0xee, size);
    EXPECT_EQ(gfs_striped_listio(sid, GFS_READ, n, e, got), size);
    EXPECT_MEM(got, src, size, "list read");
    EXPECT_EQ(gfs_striped_close(sid), 0);
    /* Reopened: same bytes. */
    sid = (int)EXPECT_OK(gfs_striped_open(name));
    memset(got, 0xee, size);
    EXPECT_EQ(gfs_striped_read(sid, 0, got, size), size);
    EXPECT_MEM(got, model, size, "after reopen");
    EXPECT_EQ(gfs_striped_close(sid), 0);
    free(src);
    free(got);
    free(model);
    free(e);
    free(slot);
}

static void size_(const char *name)
{
    int sid = open_striped(name, 4096);
    if (sid < 0)
        return;
    unsigned char src[50000], got[60000];
    t_fill(src, sizeof(src), 51);
    EXPECT_EQ(gfs_striped_size(sid), 0);
    EXPECT_EQ(gfs_striped_write(sid, 0, src, 50000), 50000);
    EXPECT_EQ(gfs_striped_size(sid), 50000);
    memset(got, 0xee, sizeof(got));
    EXPECT_EQ(gfs_striped_read(sid, 49000, got, 5000), 1000);
    EXPECT_MEM(got, src + 49000, 1000, "tail");
    EXPECT_TRUE(t_all_zero(got + 1000, 4000));
    EXPECT_EQ(gfs_striped_truncate(sid, 10001), 0);
    EXPECT_EQ(gfs_striped_size(sid), 10001);
    EXPECT_EQ(gfs_striped_truncate(sid, 30000), 0);
    EXPECT_EQ(gfs_striped_size(sid), 30000);
    memset(got, 0xee, sizeof(got));
    EXPECT_EQ(gfs_striped_read(sid, 0, got, 40000), 30000);
    EXPECT_MEM(got, src, 10001, "kept part");
    EXPECT_TRUE(t_all_zero(got + 10001, 40000 - 10001));
    /* A write far past the end of a sparse logical file. */
    EXPECT_EQ(gfs_striped_write(sid, 1000000, src, 3), 3);
    EXPECT_EQ(gfs_striped_size(sid), 1000003);
    EXPECT_EQ(gfs_striped_sync(sid), 0);
    EXPECT_EQ(gfs_striped_truncate(sid, -1), -EINVAL);
    EXPECT_EQ(gfs_striped_close(sid), 0);
}

/* Cut [0, total) into pieces of 1..maxp bytes (at least one), returning
 * how many; sizes into sz. */
static int64_t cut(int64_t total, int maxp, uint64_t *st, int64_t *sz)
{
    int64_t n = 0;
    for (int64_t at = 0; at < total; n++) {
        int64_t k = 1 + (int64_t)(t_rand(st) % (uint64_t)maxp);
        if (k > total - at)
            k = total - at;
        sz[n] = k;
        at += k;
    }
    return n;
}

static void rangeio(const char *name)
{
    const int64_t total = 200000, span = 2 * total;
    int sid = open_striped(name, 64);
    if (sid < 0)
        return;
    uint64_t st = 7;
    int64_t *rs = t_xmalloc(sizeof(*rs) * total);
    int64_t *ms = t_xmalloc(sizeof(*ms) * total);
    int64_t nr = cut(total, 300, &st, rs), nm = cut(total, 97, &st, ms);
    /* ranges in shuffled order over a sparse span, one gap before each */
    gfs_range *r = t_xmalloc(sizeof(*r) * nr);
    int64_t *order = t_xmalloc(sizeof(*order) * nr);
    for (int64_t i = 0; i < nr; i++)
        order[i] = i;
    for (int64_t i = nr - 1; i > 0; i--) {
        int64_t j = (int64_t)(t_rand(&st) % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    int64_t *start = t_xmalloc(sizeof(*start) * nr);
    for (int64_t i = 0, at = 0; i < nr; i++) { /* slot i's offset */
        at += (int64_t)(t_rand(&st) % 3);
        start[i] = at;
        at += rs[i];
        EXPECT_TRUE(at <= span);
    }
    for (int64_t i = 0; i < nr; i++)
        r[i] = (gfs_range){start[order[i]], rs[order[i]]};
    /* memory segments: every other slice of a buffer twice the size,
     * backwards, so no two segments are neighbours */
    unsigned char *mem = t_xmalloc(2 * total), *src = t_xmalloc(total);
    unsigned char *model = t_xmalloc(span), *got = t_xmalloc(span);
    gfs_memseg *m = t_xmalloc(sizeof(*m) * nm);
    t_fill(src, total, 61);
    memset(mem, 0, 2 * total);
    for (int64_t j = 0, at = 2 * total, d = 0; j < nm; j++) {
        at -= 2 * ms[j];
        m[j] = (gfs_memseg){mem + at, ms[j]};
        memcpy(mem + at, src + d, (size_t)ms[j]);
        d += ms[j];
    }
    /* the model: the data stream's bytes in range order */
    memset(model, 0, span);
    for (int64_t i = 0, d = 0; i < nr; i++) {
        memcpy(model + r[i].offset, src + d, (size_t)r[i].size);
        d += r[i].size;
    }
    EXPECT_EQ(gfs_striped_rangeio(sid, GFS_WRITE, nr, r, nm, m), total);
    int64_t end = 0;
    for (int64_t i = 0; i < nr; i++)
        if (r[i].offset + r[i].size > end)
            end = r[i].offset + r[i].size;
    EXPECT_EQ(gfs_striped_size(sid), end);
    memset(got, 0xee, span);
    EXPECT_EQ(gfs_striped_read(sid, 0, got, end), end);
    EXPECT_MEM(got, model, end, "logical file after two-list write");
    /* read back into other segments, non-blocking */
    memset(mem, 0xee, 2 * total);
    gfs_handle h = gfs_new_handle();
    EXPECT_EQ(gfs_nb_striped_rangeio(h, sid, GFS_READ, nr, r, nm, m), 0);
    EXPECT_EQ(gfs_wait(h), total);
    for (int64_t j = 0, d = 0; j < nm; j++) {
        EXPECT_MEM(m[j].addr, src + d, ms[j], "two-list read");
        d += ms[j];
    }
    /* bad lists: refused before anything moves */
    gfs_range bad = {end, 10};
    gfs_memseg short_ = {src, 9}, null_ = {NULL, 10}, ok = {src, 10};
    EXPECT_EQ(gfs_striped_rangeio(sid, GFS_WRITE, 1, &bad, 1, &short_),
              -EINVAL);
    EXPECT_EQ(gfs_striped_rangeio(sid, GFS_WRITE, 1, &bad, 1, &null_), -EINVAL);
    gfs_range neg = {-1, 10};
    EXPECT_EQ(gfs_striped_rangeio(sid, GFS_WRITE, 1, &neg, 1, &ok), -EINVAL);
    EXPECT_EQ(gfs_striped_rangeio(sid, GFS_WRITE, 1, &bad, -1, &ok), -EINVAL);
    EXPECT_EQ(gfs_striped_size(sid), end);
    /* one range into one segment reads up to the end of file; into two
     * segments it answers the total, as a list does */
    gfs_range tail = {end - 5, 20};
    gfs_memseg one = {got, 20}, two[2] = {{got, 8}, {got + 100, 12}};
    EXPECT_EQ(gfs_striped_rangeio(sid, GFS_READ, 1, &tail, 1, &one), 5);
    EXPECT_MEM(got, model + end - 5, 5, "tail");
    EXPECT_EQ(gfs_striped_rangeio(sid, GFS_READ, 1, &tail, 2, two), 20);
    /* segments by the folding rule: 16 pieces of 16 bytes at a constant
     * stride are one strided segment, a break in the stride starts
     * another, adjacent ranges are one extent */
    gfs_range str[16];
    for (int i = 0; i < 16; i++)
        str[i] = (gfs_range){64 * i, 16};
    EXPECT_EQ(gfs_striped_segments(sid, 16, str), 1);
    str[15].offset += 1;
    EXPECT_EQ(gfs_striped_segments(sid, 16, str), 2);
    gfs_range adj[2] = {{0, 100}, {100, 7}};
    EXPECT_EQ(gfs_striped_segments(sid, 2, adj), 1);
    EXPECT_EQ(gfs_striped_segments(sid, 1, &neg), -EINVAL);
    EXPECT_EQ(gfs_striped_close(sid), 0);
    free(rs);
    free(ms);
    free(r);
    free(order);
    free(start);
    free(mem);
    free(src);
    free(model);
    free(got);
    free(m);
}

int main(int argc, char **argv)
{
    const char *use = "layout|listio|size|rangeio NAME | math";
    if (argc < 2)
        return t_usage(argv[0], use);
    if (!strcmp(argv[1], "math")) {
        math();
        return t_finish();
    }
    if (argc < 3)
        return t_usage(argv[0], use);
    t_init();
    if (!strcmp(argv[1], "layout"))
        layout(argv[2]);
    else if (!strcmp(argv[1], "listio"))
        listio(argv[2]);
    else if (!strcmp(argv[1], "size"))
        size_(argv[2]);
    else if (!strcmp(argv[1], "rangeio"))
        rangeio(argv[2]);
    else
        return t_usage(argv[0], use);
    EXPECT_EQ(gfs_finalize(), 0);
    return t_finish();
}
