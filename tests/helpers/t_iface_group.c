/*
 * t_iface_group.c -- GFS-GROUP's flush rules, observed through
 * gfs_group_get_stats, and the data it moves, against a real cluster:
 * fork change, read/write change, request-count and size thresholds
 * (defaults and set), doneio / testio / waitio, the send and nosend
 * policies, the policy from GALLEY_GROUP_POLICY, and errors.  Run by
 * tests/test_interfaces.py; one scenario per process (the group is
 * per-process state).
 *
 *   fork|op|count|size|done|nosend|send|env|errors NAME
 *
 * Threads: single-threaded.
 */
#include <errno.h>

#include "galley_group.h"
#include "thelp.h"

/* Between polls: leave the cores to the servers (2-core machines). */
static void nap(void)
{
    struct timespec ts = {0, 100 * 1000};
    nanosleep(&ts, NULL);
}

static gfs_group_stats S(void)
{
    gfs_group_stats st;
    memset(&st, 0xff, sizeof(st));
    EXPECT_EQ(gfs_group_get_stats(&st), 0);
    return st;
}

/* All counters at once: requests, groups, and flushes by cause. */
#define EXPECT_STATS(req, grp, fork, op, count, size, call, send)              \
    do {                                                                       \
        gfs_group_stats s_ = S();                                              \
        EXPECT_EQ(s_.requests, req);                                           \
        EXPECT_EQ(s_.groups, grp);                                             \
        EXPECT_EQ(s_.flush_fork, fork);                                        \
        EXPECT_EQ(s_.flush_op, op);                                            \
        EXPECT_EQ(s_.flush_count, count);                                      \
        EXPECT_EQ(s_.flush_size, size);                                        \
        EXPECT_EQ(s_.flush_call, call);                                        \
        EXPECT_EQ(s_.flush_send, send);                                        \
    } while (0)

/* File of 2 subfiles; forks "g" in both and "h" in subfile 0.
 * kids[0] = g@0, kids[1] = g@1, kids[2] = h@0. */
static void forks3(const char *name, int *kids)
{
    EXPECT_EQ(gfs_create_file(name, 2, NULL), 0);
    int fid = (int)EXPECT_OK(gfs_open_file(name));
    if (fid < 0)
        exit(t_finish());
    EXPECT_EQ(gfs_all_create(fid, "g"), 0);
    EXPECT_EQ(gfs_create_fork(fid, 0, "h"), 0);
    int k2[2];
    EXPECT_OK(gfs_all_open(fid, "g", k2));
    kids[0] = k2[0];
    kids[1] = k2[1];
    kids[2] = (int)EXPECT_OK(gfs_open_fork(fid, 0, "h"));
}

/* The fork must hold exactly want[0..n). */
static void check_fork(int kid, const unsigned char *want, int64_t n,
                       const char *what)
{
    EXPECT_EQ(gfs_fork_size(kid), n);
    unsigned char *got = t_xmalloc((size_t)n);
    EXPECT_EQ(gfs_read(kid, 0, got, n), n);
    EXPECT_MEM(got, want, (size_t)n, what);
    free(got);
}

/* n writes of sz bytes to kid: element i at file offset i*sz from
 * src + i*sz (a column written element by element). */
static void put_column(int kid, const unsigned char *src, int n, int64_t sz,
                       int64_t first)
{
    for (int i = 0; i < n; i++)
        EXPECT_EQ(gfs_group_write(kid, (first + i) * sz, src + i * sz, sz), 0);
}

/* ---------------------------------------------------------- scenarios -- */

static void fork_change(const char *name)
{
    int k[3];
    forks3(name, k);
    unsigned char src[4][160];
    for (int c = 0; c < 4; c++)
        t_fill(src[c], sizeof(src[c]), 100 + (uint64_t)c);
    gfs_group_reset_stats();
    put_column(k[0], src[0], 10, 16, 0);
    EXPECT_STATS(10, 0, 0, 0, 0, 0, 0, 0); /* nothing sent yet */
    put_column(k[1], src[1], 10, 16, 0);   /* other server */
    EXPECT_STATS(20, 1, 1, 0, 0, 0, 0, 0);
    put_column(k[2], src[2], 10, 16, 0); /* same server, other fork */
    EXPECT_STATS(30, 2, 2, 0, 0, 0, 0, 0);
    put_column(k[0], src[3], 10, 16, 10); /* back to the first */
    EXPECT_STATS(40, 3, 3, 0, 0, 0, 0, 0);
    EXPECT_EQ(gfs_group_waitio(), 0);
    EXPECT_STATS(40, 4, 3, 0, 0, 0, 1, 0);
    EXPECT_EQ(S().max_pending, 10);
    unsigned char k0[320];
    memcpy(k0, src[0], 160);
    memcpy(k0 + 160, src[3], 160);
    check_fork(k[0], k0, 320, "fork g@0");
    check_fork(k[1], src[1], 160, "fork g@1");
    check_fork(k[2], src[2], 160, "fork h@0");
}

static void op_change(const char *name)
{
    int k[3];
    forks3(name, k);
    unsigned char src[1000], img[1000], got[1000];
    t_fill(src, sizeof(src), 7);
    memset(img, 0, sizeof(img));
    EXPECT_EQ(gfs_write(k[0], 0, src, 500), 500);
    memcpy(img, src, 500);
    gfs_group_reset_stats();
    memset(got, 0xee, sizeof(got));
    /* reads of bytes written before; writes elsewhere; reads again */
    for (int i = 0; i < 5; i++)
        EXPECT_EQ(gfs_group_read(k[0], i * 50, got + i * 50, 50), 0);
    EXPECT_STATS(5, 0, 0, 0, 0, 0, 0, 0);
    for (int i = 0; i < 5; i++)
        EXPECT_EQ(gfs_group_write(k[0], 500 + i * 50, src + 500 + i * 50, 50),
                  0);
    EXPECT_STATS(10, 1, 0, 1, 0, 0, 0, 0);
    for (int i = 5; i < 10; i++)
        EXPECT_EQ(gfs_group_read(k[0], i * 50, got + i * 50, 50), 0);
    EXPECT_STATS(15, 2, 0, 2, 0, 0, 0, 0);
    EXPECT_EQ(gfs_group_waitio(), 0);
    EXPECT_STATS(15, 3, 0, 2, 0, 0, 1, 0);
    EXPECT_MEM(got, src, 500, "group reads around a write group");
    memcpy(img + 500, src + 500, 250);
    check_fork(k[0], img, 750, "after read/write/read groups");
}

static void count_limit(const char *name)
{
    int k[3];
    forks3(name, k);
    enum { N = 2048 + 105 };
    unsigned char *src = t_xmalloc(N * 16);
    t_fill(src, N * 16, 8);
    /* Default request limit: 1024. */
    gfs_group_reset_stats();
    put_column(k[0], src, 2048, 16, 0);
    EXPECT_STATS(2048, 2, 0, 0, 2, 0, 0, 0);
    EXPECT_EQ(S().max_pending, 1024);
    EXPECT_EQ(gfs_group_waitio(), 0); /* nothing pending: no flush */
    EXPECT_STATS(2048, 2, 0, 0, 2, 0, 0, 0);
    /* Limit 10: 100 requests give 10 groups; 105 give 10 + 1. */
    EXPECT_EQ(gfs_group_set_limits(10, INT64_C(1) << 40), 0);
    gfs_group_reset_stats();
    put_column(k[1], src, 100, 16, 0);
    EXPECT_STATS(100, 10, 0, 0, 10, 0, 0, 0);
    EXPECT_EQ(gfs_group_waitio(), 0);
    EXPECT_STATS(100, 10, 0, 0, 10, 0, 0, 0);
    EXPECT_EQ(S().max_pending, 10);
    gfs_group_reset_stats();
    put_column(k[2], src, 105, 16, 0);
    EXPECT_STATS(105, 10, 0, 0, 10, 0, 0, 0);
    EXPECT_EQ(gfs_group_waitio(), 0);
    EXPECT_STATS(105, 11, 0, 0, 10, 0, 1, 0);
    check_fork(k[0], src, 2048 * 16, "default limit");
    check_fork(k[1], src, 100 * 16, "limit 10");
    check_fork(k[2], src, 105 * 16, "limit 10, 105 requests");
    free(src);
}

static void size_limit(const char *name)
{
    int k[3];
    forks3(name, k);
    const int64_t MB = 1 << 20;
    unsigned char *src = t_xmalloc((size_t)(18 * MB));
    t_fill(src, (size_t)(18 * MB), 9);
    /* Default size limit 16 MB: three 6 MB requests reach it. */
    gfs_group_reset_stats();
    put_column(k[0], src, 2, 6 * MB, 0);
    EXPECT_STATS(2, 0, 0, 0, 0, 0, 0, 0);
    put_column(k[0], src + 12 * MB, 1, 6 * MB, 2);
    EXPECT_STATS(3, 1, 0, 0, 0, 1, 0, 0);
    EXPECT_EQ(gfs_group_waitio(), 0);
    check_fork(k[0], src, 18 * MB, "default size limit");
    /* Size limit 1000: 100-byte requests flush every 10th. */
    EXPECT_EQ(gfs_group_set_limits(1 << 20, 1000), 0);
    gfs_group_reset_stats();
    put_column(k[1], src, 95, 100, 0);
    EXPECT_STATS(95, 9, 0, 0, 0, 9, 0, 0);
    EXPECT_EQ(gfs_group_waitio(), 0);
    EXPECT_STATS(95, 10, 0, 0, 0, 9, 1, 0);
    EXPECT_EQ(S().max_pending, 10);
    check_fork(k[1], src, 9500, "size limit 1000");
    /* One request over the limit goes out alone. */
    gfs_group_reset_stats();
    EXPECT_EQ(gfs_group_write(k[2], 0, src, 5000), 0);
    EXPECT_STATS(1, 1, 0, 0, 0, 1, 0, 0);
    EXPECT_EQ(S().max_pending, 1);
    EXPECT_EQ(gfs_group_waitio(), 0);
    check_fork(k[2], src, 5000, "one big request");
    free(src);
}

static void done(const char *name)
{
    int k[3];
    forks3(name, k);
    unsigned char src[2000], got[2000];
    t_fill(src, sizeof(src), 10);
    gfs_group_reset_stats();
    EXPECT_EQ(gfs_group_doneio(), 0); /* nothing pending: no group */
    EXPECT_EQ(gfs_group_testio(), 1);
    put_column(k[0], src, 20, 100, 0);
    EXPECT_STATS(20, 0, 0, 0, 0, 0, 0, 0);
    EXPECT_EQ(gfs_group_doneio(), 0);
    EXPECT_STATS(20, 1, 0, 0, 0, 0, 1, 0);
    /* testio until done; then a plain read sees the data */
    int t = 0;
    double give_up = t_now() + 60;
    while ((t = gfs_group_testio()) == 0 && t_now() < give_up)
        nap();
    EXPECT_EQ(t, 1);
    check_fork(k[0], src, 2000, "after doneio + testio");
    /* reads gathered and completed by waitio, in any order of pieces */
    memset(got, 0xee, sizeof(got));
    for (int i = 19; i >= 0; i--)
        EXPECT_EQ(gfs_group_read(k[0], i * 100, got + i * 100, 100), 0);
    EXPECT_EQ(gfs_group_waitio(), 0);
    EXPECT_MEM(got, src, sizeof(src), "group reads after waitio");
    EXPECT_STATS(40, 2, 0, 0, 0, 0, 2, 0);
    EXPECT_EQ(gfs_group_testio(), 1);
}

static void nosend(const char *name)
{
    int k[3];
    forks3(name, k);
    unsigned char src[800];
    t_fill(src, sizeof(src), 11);
    EXPECT_EQ(gfs_group_set_policy(GFS_GROUP_NOSEND), 0);
    EXPECT_EQ(gfs_group_get_policy(), GFS_GROUP_NOSEND);
    gfs_group_reset_stats();
    put_column(k[0], src, 50, 16, 0);
    EXPECT_STATS(50, 0, 0, 0, 0, 0, 0, 0);
    /* testio never sends under nosend: work stays pending */
    for (int i = 0; i < 20; i++)
        EXPECT_EQ(gfs_group_testio(), 0);
    EXPECT_STATS(50, 0, 0, 0, 0, 0, 0, 0);
    EXPECT_EQ(gfs_group_waitio(), 0);
    EXPECT_STATS(50, 1, 0, 0, 0, 0, 1, 0);
    check_fork(k[0], src, 800, "nosend");
}

static void send(const char *name)
{
    int k[3];
    forks3(name, k);
    const int64_t BIG = 8 << 20; /* under the 16 MB size limit */
    unsigned char *src = t_xmalloc((size_t)BIG);
    t_fill(src, (size_t)BIG, 12);
    EXPECT_EQ(gfs_group_set_policy(GFS_GROUP_SEND), 0);
    EXPECT_EQ(gfs_group_get_policy(), GFS_GROUP_SEND);
    gfs_group_reset_stats();
    /* Nothing in flight: the first request goes out at once. */
    EXPECT_EQ(gfs_group_write(k[0], 0, src, 16), 0);
    EXPECT_STATS(1, 1, 0, 0, 0, 0, 0, 1);
    EXPECT_EQ(gfs_group_waitio(), 0);
    EXPECT_STATS(1, 1, 0, 0, 0, 0, 0, 1);

    /* A big write goes out alone; small ones behind it wait while it is
     * in flight and are sent by testio once the library is idle, without
     * doneio or waitio. */
    gfs_group_reset_stats();
    EXPECT_EQ(gfs_group_write(k[1], 0, src, BIG), 0);
    EXPECT_STATS(1, 1, 0, 0, 0, 0, 0, 1);
    for (int i = 0; i < 50; i++)
        EXPECT_EQ(gfs_group_write(k[1], BIG + i * 100, src + i * 100, 100), 0);
    gfs_group_stats mid = S();
    int t;
    double give_up = t_now() + 60;
    while ((t = gfs_group_testio()) == 0 && t_now() < give_up)
        nap();
    EXPECT_EQ(t, 1);
    gfs_group_stats st = S();
    EXPECT_EQ(st.requests, 51);
    EXPECT_EQ(st.flush_call, 0);
    EXPECT_EQ(st.flush_count + st.flush_size + st.flush_fork + st.flush_op, 0);
    EXPECT_EQ(st.groups, st.flush_send);
    EXPECT_TRUE(st.groups >= 2 && st.groups <= 51);
    printf("INFO send: groups after the 51 calls %" PRIu64 ", after testio "
           "%" PRIu64 " (largest %" PRIu64 " requests)\n",
           mid.groups, st.groups, st.max_pending);
    unsigned char *img = t_xmalloc((size_t)BIG + 5000);
    memcpy(img, src, (size_t)BIG);
    memcpy(img + BIG, src, 5000);
    check_fork(k[1], img, BIG + 5000, "send: big + small");
    free(img);

    /* Idle again: the next request goes out at once. */
    uint64_t g0 = st.groups;
    EXPECT_EQ(gfs_group_write(k[2], 0, src, 10), 0);
    EXPECT_EQ(S().groups, g0 + 1);
    EXPECT_EQ(gfs_group_waitio(), 0);
    /* Under nosend, the same calls send nothing. */
    EXPECT_EQ(gfs_group_set_policy(GFS_GROUP_NOSEND), 0);
    gfs_group_reset_stats();
    EXPECT_EQ(gfs_group_write(k[2], 10, src, 10), 0);
    EXPECT_EQ(gfs_group_testio(), 0);
    EXPECT_STATS(1, 0, 0, 0, 0, 0, 0, 0);
    EXPECT_EQ(gfs_group_waitio(), 0);
    unsigned char twice[20];
    memcpy(twice, src, 10);
    memcpy(twice + 10, src, 10);
    check_fork(k[2], twice, 20, "send then nosend");
    free(src);
}

/* Prints the policy chosen from GALLEY_GROUP_POLICY and shows it acting. */
static void env(const char *name)
{
    int k[3];
    forks3(name, k);
    int p = gfs_group_get_policy();
    const char *e = getenv("GALLEY_GROUP_POLICY");
    printf("POLICY %s\n", p == GFS_GROUP_SEND ? "send" : "nosend");
    EXPECT_EQ(p, e && !strcmp(e, "send") ? GFS_GROUP_SEND : GFS_GROUP_NOSEND);
    unsigned char src[16];
    t_fill(src, sizeof(src), 13);
    gfs_group_reset_stats();
    EXPECT_EQ(gfs_group_write(k[0], 0, src, 16), 0);
    EXPECT_EQ(S().groups, p == GFS_GROUP_SEND ? 1 : 0);
    EXPECT_EQ(gfs_group_waitio(), 0);
    check_fork(k[0], src, 16, "env policy");
    /* gfs_group_set_policy overrides the environment */
    int other = p == GFS_GROUP_SEND ? GFS_GROUP_NOSEND : GFS_GROUP_SEND;
    EXPECT_EQ(gfs_group_set_policy(other), 0);
    EXPECT_EQ(gfs_group_get_policy(), other);
}

static void errors(const char *name)
{
    int k[3];
    forks3(name, k);
    unsigned char src[100];
    t_fill(src, sizeof(src), 14);
    EXPECT_EQ(gfs_group_set_policy(7), -EINVAL);
    EXPECT_EQ(gfs_group_set_limits(0, 100), -EINVAL);
    EXPECT_EQ(gfs_group_set_limits(100, 0), -EINVAL);
    EXPECT_EQ(gfs_group_get_stats(NULL), -EINVAL);
    gfs_group_reset_stats();
    EXPECT_EQ(gfs_group_write(99999, 0, src, 10), GFS_EBADID);
    EXPECT_EQ(gfs_group_write(k[0], -1, src, 10), -EINVAL);
    EXPECT_EQ(gfs_group_read(k[0], 0, src, -10), -EINVAL);
    EXPECT_STATS(0, 0, 0, 0, 0, 0, 0, 0);
    /* A fork closed while its requests are pending: waitio reports the
     * error once, the next waitio is clean. */
    EXPECT_EQ(gfs_group_write(k[2], 0, src, 10), 0);
    EXPECT_EQ(gfs_close_fork(k[2]), 0);
    EXPECT_EQ(gfs_group_waitio(), GFS_EBADID);
    EXPECT_EQ(gfs_group_waitio(), 0);
    EXPECT_EQ(gfs_group_testio(), 1);
    /* the library still works afterwards */
    EXPECT_EQ(gfs_group_write(k[0], 0, src, 100), 0);
    EXPECT_EQ(gfs_group_waitio(), 0);
    check_fork(k[0], src, 100, "after an error");
}

int main(int argc, char **argv)
{
    const char *use = "fork|op|count|size|done|nosend|send|env|errors NAME";
    if (argc < 3)
        return t_usage(argv[0], use);
    static const struct {
        const char *name;
        void (*fn)(const char *);
    } scen[] = {
        {"fork", fork_change}, {"op", op_change}, {"count", count_limit},
        {"size", size_limit},  {"done", done},    {"nosend", nosend},
        {"send", send},        {"env", env},      {"errors", errors}};
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
