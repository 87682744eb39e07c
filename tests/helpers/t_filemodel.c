/*
 * t_filemodel.c -- the Galley file model against a real cluster: subfile
 * counts and placement, forks of different sizes per subfile, the all_
 * variants, deferred delete of open forks and files, attributes, truncate,
 * listing.  Run by tests/test_filemodel.py; see usage() for the scenarios.
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <unistd.h>

#include "thelp.h"

static void usage_exit(const char *prog)
{
    fprintf(stderr,
            "usage: %s SCENARIO NAME\n"
            "scenarios: subfiles servers forks all deferred deferred-wait\n"
            "           delete-open attrs truncate list statfs\n",
            prog);
    exit(2);
}

static int open_or_fail(const char *name)
{
    int fid = (int)EXPECT_OK(gfs_open_file(name));
    if (fid < 0) {
        printf("cannot continue without %s\n", name);
        exit(t_finish());
    }
    return fid;
}

/* Write a whole fork with pattern `seed`; returns the fork's id (open). */
static int make_fork(int fid, int sub, const char *fork, size_t size,
                     uint64_t seed)
{
    EXPECT_EQ(gfs_create_fork(fid, sub, fork), 0);
    int kid = (int)EXPECT_OK(gfs_open_fork(fid, sub, fork));
    if (kid < 0)
        return kid;
    unsigned char *buf = t_xmalloc(size);
    t_fill(buf, size, seed);
    EXPECT_EQ(gfs_write(kid, 0, buf, (int64_t)size), (int64_t)size);
    free(buf);
    return kid;
}

/* Read a whole fork through kid and compare with pattern `seed`. */
static void check_fork(int kid, size_t size, uint64_t seed, const char *what)
{
    unsigned char *want = t_xmalloc(size), *got = t_xmalloc(size + 64);
    t_fill(want, size, seed);
    EXPECT_EQ(gfs_fork_size(kid), (int64_t)size);
    EXPECT_EQ(gfs_read(kid, 0, got, (int64_t)size + 64), (int64_t)size);
    EXPECT_MEM(got, want, size, what);
    EXPECT_TRUE(t_all_zero(got + size, 64));
    free(want);
    free(got);
}

/* ---------------------------------------------------------- listings ---- */

#define MAXF 64
struct forklist {
    int n;
    char name[MAXF][GFS_FORK_NAME_MAX + 1];
    uint64_t size[MAXF];
};

static int add_fork(const char *name, uint64_t size, void *arg)
{
    struct forklist *l = arg;
    if (l->n < MAXF) {
        snprintf(l->name[l->n], sizeof(l->name[0]), "%s", name);
        l->size[l->n] = size;
        l->n++;
    }
    return 0;
}

static int64_t fork_listed(int fid, int sub, const char *fork)
{
    struct forklist l = {0};
    int rc = (int)EXPECT_OK(gfs_list_forks(fid, sub, add_fork, &l));
    if (rc < 0)
        return rc;
    for (int i = 0; i < l.n; i++)
        if (!strcmp(l.name[i], fork))
            return (int64_t)l.size[i];
    return -ENOENT;
}

/* --------------------------------------------------------- scenarios ---- */

/* Files of 1..nservers subfiles: distinct servers, stat agrees. */
static void subfiles(const char *prefix)
{
    int ns = gfs_num_servers();
    printf("servers %d\n", ns);
    EXPECT_TRUE(ns >= 1);
    for (int k = 1; k <= ns; k++) {
        char name[256];
        snprintf(name, sizeof(name), "%s.%d", prefix, k);
        if (!EXPECT_EQ(gfs_create_file(name, k, NULL), 0))
            continue;
        int fid = open_or_fail(name);
        gfs_file_stat st;
        memset(&st, 0xff, sizeof(st));
        EXPECT_EQ(gfs_stat_file(fid, &st), 0);
        EXPECT_EQ(st.nsubfiles, k);
        printf("file %d servers", k);
        for (int i = 0; i < st.nsubfiles && i < GFS_MAX_SUBFILES; i++) {
            printf(" %d", st.servers[i]);
            EXPECT_TRUE(st.servers[i] >= 0 && st.servers[i] < ns);
            for (int j = 0; j < i; j++)
                EXPECT_TRUE(st.servers[i] != st.servers[j]);
        }
        printf("\n");
        /* Every subfile takes forks. */
        for (int i = 0; i < k; i++)
            EXPECT_EQ(gfs_create_fork(fid, i, "f"), 0);
        EXPECT_EQ(gfs_create_fork(fid, k, "f"), -EINVAL);
        EXPECT_EQ(gfs_close_file(fid), 0);
    }
}

static uint64_t nsub_on(int server)
{
    gfs_server_stat st;
    if (EXPECT_EQ(gfs_stat_server(server, &st), 0))
        return st.nsubfiles;
    return UINT64_MAX;
}

/* Explicit placement: the subfiles land on exactly the named servers, in
 * the order given. */
static void servers(const char *prefix)
{
    int ns = gfs_num_servers();
    if (!EXPECT_TRUE(ns >= 4))
        return;
    const int sets[][4] = {{3, 1}, {2}, {3, 2, 1, 0}, {1, 3, 0}};
    const int counts[] = {2, 1, 4, 3};
    for (int c = 0; c < 4; c++) {
        char name[256];
        uint64_t before[GFS_MAX_SERVERS], after;
        for (int s = 0; s < ns; s++)
            before[s] = nsub_on(s);
        snprintf(name, sizeof(name), "%s.%d", prefix, c);
        if (!EXPECT_EQ(gfs_create_file(name, counts[c], sets[c]), 0))
            continue;
        int fid = open_or_fail(name);
        gfs_file_stat st;
        EXPECT_EQ(gfs_stat_file(fid, &st), 0);
        EXPECT_EQ(st.nsubfiles, counts[c]);
        printf("file %d servers", c);
        for (int i = 0; i < st.nsubfiles && i < GFS_MAX_SUBFILES; i++) {
            printf(" %d", st.servers[i]);
            EXPECT_EQ(st.servers[i], sets[c][i]);
        }
        printf("\n");
        /* The servers' own counts of subfile headers moved accordingly. */
        for (int s = 0; s < ns; s++) {
            bool chosen = false;
            for (int i = 0; i < counts[c]; i++)
                chosen |= sets[c][i] == s;
            after = nsub_on(s);
            if (!EXPECT_EQ(after - before[s], chosen ? 1 : 0))
                printf("  server %d: subfile headers %" PRIu64 " -> %" PRIu64
                       "\n",
                       s, before[s], after);
        }
        EXPECT_EQ(gfs_close_file(fid), 0);
    }
}

/* Forks are independent per subfile: different names and sizes. */
static void forks(const char *name)
{
    if (!EXPECT_EQ(gfs_create_file(name, 4, NULL), 0))
        return;
    int fid = open_or_fail(name);
    size_t size[4];
    int kid[4];
    for (int s = 0; s < 4; s++) {
        size[s] = 1000u * (s + 1) * (s + 1) * (s + 1) + s; /* 1000..64003 */
        kid[s] = make_fork(fid, s, s == 3 ? "other" : "data", size[s], s);
    }
    int extra = make_fork(fid, 1, "extra", 10, 99);
    int empty = (int)EXPECT_OK(gfs_create_fork(fid, 2, "empty"));
    (void)empty;
    for (int s = 0; s < 4; s++) {
        struct forklist l = {0};
        EXPECT_EQ(gfs_list_forks(fid, s, add_fork, &l), 0);
        for (int i = 0; i < l.n; i++)
            printf("sub %d fork %s size %" PRIu64 "\n", s, l.name[i],
                   l.size[i]);
        EXPECT_EQ(l.n, s == 1 || s == 2 ? 2 : 1);
        EXPECT_EQ(fork_listed(fid, s, s == 3 ? "other" : "data"),
                  (int64_t)size[s]);
    }
    EXPECT_EQ(fork_listed(fid, 1, "extra"), 10);
    EXPECT_EQ(fork_listed(fid, 2, "empty"), 0);
    EXPECT_EQ(fork_listed(fid, 0, "extra"), -ENOENT);
    EXPECT_EQ(fork_listed(fid, 3, "data"), -ENOENT);
    EXPECT_EQ(gfs_open_fork(fid, 3, "data"), -ENOENT);
    for (int s = 0; s < 4; s++) {
        char what[64];
        snprintf(what, sizeof(what), "subfile %d", s);
        check_fork(kid[s], size[s], s, what);
        EXPECT_EQ(gfs_close_fork(kid[s]), 0);
    }
    check_fork(extra, 10, 99, "extra");
    /* A second open of the same fork sees the same bytes. */
    int again = (int)EXPECT_OK(gfs_open_fork(fid, 2, "data"));
    check_fork(again, size[2], 2, "subfile 2 reopened");
    EXPECT_EQ(gfs_close_fork(again), 0);
    EXPECT_EQ(gfs_close_file(fid), 0);
    /* And another open of the file. */
    fid = open_or_fail(name);
    again = (int)EXPECT_OK(gfs_open_fork(fid, 3, "other"));
    check_fork(again, size[3], 3, "subfile 3 after reopening the file");
    EXPECT_EQ(gfs_close_file(fid), 0); /* closes `again` too */
    EXPECT_EQ(gfs_close_fork(again), GFS_EBADID);
}

/* gfs_all_create/open/close/delete. */
static void all(const char *name)
{
    if (!EXPECT_EQ(gfs_create_file(name, 4, NULL), 0))
        return;
    int fid = open_or_fail(name);
    int kids[4] = {-1, -1, -1, -1};
    EXPECT_EQ(gfs_all_create(fid, "a"), 0);
    EXPECT_EQ(gfs_all_create(fid, "a"), -EEXIST);
    EXPECT_OK(gfs_all_open(fid, "a", kids));
    for (int s = 0; s < 4; s++) {
        EXPECT_TRUE(kids[s] >= 0);
        for (int j = 0; j < s; j++)
            EXPECT_TRUE(kids[s] != kids[j]);
        size_t n = 777u * (s + 1);
        unsigned char *buf = t_xmalloc(n);
        t_fill(buf, n, 40 + s);
        EXPECT_EQ(gfs_write(kids[s], 0, buf, (int64_t)n), (int64_t)n);
        free(buf);
    }
    EXPECT_EQ(gfs_all_close(4, kids), 0);
    EXPECT_EQ(gfs_fork_size(kids[0]), GFS_EBADID);
    for (int s = 0; s < 4; s++) {
        EXPECT_EQ(fork_listed(fid, s, "a"), 777 * (s + 1));
        int k = (int)EXPECT_OK(gfs_open_fork(fid, s, "a"));
        char what[64];
        snprintf(what, sizeof(what), "all_ fork of subfile %d", s);
        check_fork(k, 777u * (s + 1), 40 + s, what);
        EXPECT_EQ(gfs_close_fork(k), 0);
    }
    EXPECT_EQ(gfs_all_delete(fid, "a"), 0);
    for (int s = 0; s < 4; s++) {
        EXPECT_EQ(fork_listed(fid, s, "a"), -ENOENT);
        EXPECT_EQ(gfs_open_fork(fid, s, "a"), -ENOENT);
    }
    EXPECT_EQ(gfs_all_delete(fid, "a"), -ENOENT);
    EXPECT_EQ(gfs_all_open(fid, "a", kids), -ENOENT);
    /* all_create after all_delete starts empty forks again. */
    EXPECT_EQ(gfs_all_create(fid, "a"), 0);
    EXPECT_OK(gfs_all_open(fid, "a", kids));
    for (int s = 0; s < 4; s++)
        EXPECT_EQ(gfs_fork_size(kids[s]), 0);
    EXPECT_EQ(gfs_all_close(4, kids), 0);
    EXPECT_EQ(gfs_close_file(fid), 0);
}

/* One client deletes a fork it has open: it keeps reading it; new opens
 * fail; after the close it is gone and the name is free again. */
static void deferred(const char *name)
{
    if (!EXPECT_EQ(gfs_create_file(name, 2, NULL), 0))
        return;
    int fid = open_or_fail(name);
    int kid = make_fork(fid, 1, "d", 5000, 7);
    EXPECT_EQ(gfs_delete_fork(fid, 1, "d"), 0);
    check_fork(kid, 5000, 7, "deleted fork while open");
    EXPECT_EQ(gfs_open_fork(fid, 1, "d"), -ENOENT);
    EXPECT_EQ(gfs_close_fork(kid), 0);
    EXPECT_EQ(gfs_open_fork(fid, 1, "d"), -ENOENT);
    EXPECT_EQ(fork_listed(fid, 1, "d"), -ENOENT);
    EXPECT_EQ(gfs_delete_fork(fid, 1, "d"), -ENOENT);
    EXPECT_EQ(gfs_create_fork(fid, 1, "d"), 0);
    int k2 = (int)EXPECT_OK(gfs_open_fork(fid, 1, "d"));
    EXPECT_EQ(gfs_fork_size(k2), 0);
    EXPECT_EQ(gfs_close_fork(k2), 0);
    EXPECT_EQ(gfs_close_file(fid), 0);
}

/* Two clients: this process holds the fork open while pytest deletes it
 * with the CLI.  Protocol on stdout: READY, then (after a line on stdin)
 * READ/REOPEN/CLOSED lines. */
static void deferred_wait(const char *name)
{
    if (!EXPECT_EQ(gfs_create_file(name, 1, NULL), 0))
        return;
    int fid = open_or_fail(name);
    int kid = make_fork(fid, 0, "d", 70000, 11);
    printf("READY\n");
    fflush(stdout);
    char line[64];
    if (!fgets(line, sizeof(line), stdin))
        printf("stdin closed\n");
    check_fork(kid, 70000, 11, "fork deleted by another client");
    printf("READ done\n");
    int rc = gfs_open_fork(fid, 0, "d");
    printf("REOPEN %d\n", rc);
    EXPECT_EQ(rc, -ENOENT);
    rc = gfs_close_fork(kid);
    printf("CLOSED %d\n", rc);
    EXPECT_EQ(rc, 0);
    EXPECT_EQ(fork_listed(fid, 0, "d"), -ENOENT);
    EXPECT_EQ(gfs_close_file(fid), 0);
}

/* Deleting a whole file while one of its forks is open. */
static void delete_open(const char *name)
{
    if (!EXPECT_EQ(gfs_create_file(name, 2, NULL), 0))
        return;
    int fid = open_or_fail(name);
    int kid = make_fork(fid, 0, "x", 9000, 21);
    EXPECT_EQ(gfs_delete_file(name), 0);
    EXPECT_EQ(gfs_open_file(name), -ENOENT);
    check_fork(kid, 9000, 21, "fork of a deleted file, still open");
    EXPECT_EQ(gfs_close_fork(kid), 0);
    gfs_close_file(fid); /* may report the file gone; either is fine */
    EXPECT_EQ(gfs_delete_file(name), -ENOENT);
    /* The name is free again and the new file starts empty. */
    EXPECT_EQ(gfs_create_file(name, 2, NULL), 0);
    fid = open_or_fail(name);
    EXPECT_EQ(fork_listed(fid, 0, "x"), -ENOENT);
    EXPECT_EQ(gfs_open_fork(fid, 0, "x"), -ENOENT);
    EXPECT_EQ(gfs_close_file(fid), 0);
}

static void attrs(const char *name)
{
    if (!EXPECT_EQ(gfs_create_file(name, 1, NULL), 0))
        return;
    int fid = open_or_fail(name);
    char v[64];
    EXPECT_EQ(gfs_set_attr(fid, "user.color", "blue"), 0);
    EXPECT_EQ(gfs_get_attr(fid, "user.color", v, sizeof(v)), 4);
    EXPECT_TRUE(!strcmp(v, "blue"));
    EXPECT_EQ(gfs_set_attr(fid, "user.color", "green"), 0);
    EXPECT_EQ(gfs_get_attr(fid, "user.color", v, sizeof(v)), 5);
    EXPECT_TRUE(!strcmp(v, "green"));
    EXPECT_EQ(gfs_get_attr(fid, "user.color", v, 3), -ERANGE);
    EXPECT_EQ(gfs_get_attr(fid, "user.none", v, sizeof(v)), -ENOENT);
    EXPECT_EQ(gfs_set_attr(fid, "bad key!", "x"), -EINVAL);
    EXPECT_EQ(gfs_set_attr(fid, "", "x"), -EINVAL);
    EXPECT_EQ(gfs_set_attr(fid, "user.nl", "two\nlines"), -EINVAL);
    EXPECT_EQ(gfs_close_file(fid), 0);
    /* Attributes live in the record: another open sees them. */
    fid = open_or_fail(name);
    EXPECT_EQ(gfs_get_attr(fid, "user.color", v, sizeof(v)), 5);
    EXPECT_TRUE(!strcmp(v, "green"));
    EXPECT_EQ(gfs_close_file(fid), 0);
}

static void truncate_(const char *name)
{
    if (!EXPECT_EQ(gfs_create_file(name, 1, NULL), 0))
        return;
    int fid = open_or_fail(name);
    int kid = make_fork(fid, 0, "t", 10000, 5);
    unsigned char want[10000], got[20000];
    t_fill(want, sizeof(want), 5);
    EXPECT_EQ(gfs_truncate_fork(kid, 4000), 0);
    EXPECT_EQ(gfs_fork_size(kid), 4000);
    memset(got, 0xee, sizeof(got));
    EXPECT_EQ(gfs_read(kid, 0, got, 10000), 4000);
    EXPECT_MEM(got, want, 4000, "after shrinking");
    EXPECT_TRUE(t_all_zero(got + 4000, 6000));
    EXPECT_EQ(gfs_truncate_fork(kid, 20000), 0);
    EXPECT_EQ(gfs_fork_size(kid), 20000);
    memset(got, 0xee, sizeof(got));
    EXPECT_EQ(gfs_read(kid, 0, got, 20000), 20000);
    EXPECT_MEM(got, want, 4000, "after extending");
    EXPECT_TRUE(t_all_zero(got + 4000, 16000));
    EXPECT_EQ(gfs_truncate_fork(kid, 0), 0);
    EXPECT_EQ(gfs_fork_size(kid), 0);
    EXPECT_EQ(fork_listed(fid, 0, "t"), 0);
    EXPECT_EQ(gfs_close_file(fid), 0);
}

struct names {
    int n;
    char name[16][GFS_NAME_MAX + 1];
};

static int add_name(const char *name, void *arg)
{
    struct names *l = arg;
    if (l->n < 16)
        snprintf(l->name[l->n], sizeof(l->name[0]), "%s", name);
    l->n++;
    return 0;
}

static int stop_at_second(const char *name, void *arg)
{
    int *n = arg;
    return ++*n == 2 ? 7 : 0;
}

static void list(const char *prefix)
{
    const char *leaf[] = {"c", "a", "b/x", "b"};
    char name[300];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof(name), "%s/%s", prefix, leaf[i]);
        EXPECT_EQ(gfs_create_file(name, 1, NULL), 0);
    }
    snprintf(name, sizeof(name), "%s.other", prefix);
    EXPECT_EQ(gfs_create_file(name, 1, NULL), 0);
    struct names l = {0};
    snprintf(name, sizeof(name), "%s/", prefix);
    EXPECT_EQ(gfs_list_files(name, add_name, &l), 0);
    const char *want[] = {"a", "b", "b/x", "c"};
    if (EXPECT_EQ(l.n, 4))
        for (int i = 0; i < 4; i++) {
            char w[300];
            snprintf(w, sizeof(w), "%s/%s", prefix, want[i]);
            printf("listed %s\n", l.name[i]);
            EXPECT_TRUE(!strcmp(l.name[i], w));
        }
    int seen = 0;
    EXPECT_EQ(gfs_list_files(name, stop_at_second, &seen), 7);
    EXPECT_EQ(seen, 2);
    l.n = 0;
    EXPECT_EQ(gfs_list_files(prefix, add_name, &l), 0);
    EXPECT_EQ(l.n, 5);
    l.n = 0;
    EXPECT_EQ(gfs_list_files("no-such-prefix-at-all/", add_name, &l), 0);
    EXPECT_EQ(l.n, 0);
}

static void statfs_(const char *unused)
{
    int ns = gfs_num_servers();
    for (int s = 0; s < ns; s++) {
        gfs_server_stat st;
        EXPECT_EQ(gfs_stat_server(s, &st), 0);
        printf("server %d total %" PRIu64 " free %" PRIu64 " used %" PRIu64
               " records %" PRIu64 " subfiles %" PRIu64 " forks %" PRIu64 "\n",
               s, st.bytes_total, st.bytes_free, st.bytes_used, st.nrecords,
               st.nsubfiles, st.nforks);
        EXPECT_TRUE(st.bytes_total > 0);
        EXPECT_TRUE(st.bytes_free <= st.bytes_total);
        EXPECT_EQ(gfs_ping(s), 0);
    }
    gfs_server_stat st;
    EXPECT_TRUE(gfs_stat_server(ns, &st) < 0);
}

int main(int argc, char **argv)
{
    if (argc != 3)
        usage_exit(argv[0]);
    static const struct {
        const char *name;
        void (*fn)(const char *);
    } scen[] = {
        {"subfiles", subfiles},
        {"servers", servers},
        {"forks", forks},
        {"all", all},
        {"deferred", deferred},
        {"deferred-wait", deferred_wait},
        {"delete-open", delete_open},
        {"attrs", attrs},
        {"truncate", truncate_},
        {"list", list},
        {"statfs", statfs_},
    };
    for (size_t i = 0; i < sizeof(scen) / sizeof(scen[0]); i++) {
        if (!strcmp(argv[1], scen[i].name)) {
            t_init();
            scen[i].fn(argv[2]);
            EXPECT_EQ(gfs_finalize(), 0);
            return t_finish();
        }
    }
    usage_exit(argv[0]);
    return 2;
}
