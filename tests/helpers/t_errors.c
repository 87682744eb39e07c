/*
 * t_errors.c -- bad arguments get the documented error codes and change
 * nothing.  Run by tests/test_errors.py, one scenario per call:
 *
 *   notinit            calls before gfs_init            -> GFS_ENOTINIT
 *   clusterfile DIR    missing / malformed cluster files
 *   names NAME         over-long names, empty names     ->
 * -ENAMETOOLONG/-EINVAL exists NAME        creating what exists             ->
 * -EEXIST missing NAME       opening/deleting what is absent  -> -ENOENT counts
 * NAME        bad subfile counts and server lists -> -EINVAL io NAME negative
 * sizes/offsets, bad lists -> -EINVAL ids NAME           unknown or closed ids
 * -> GFS_EBADID strerror -         every code has its own message
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <unistd.h>

#include "thelp.h"

static int setup(const char *name, int nsub, int *kid)
{
    if (!EXPECT_EQ(gfs_create_file(name, nsub, NULL), 0))
        return -1;
    int fid = (int)EXPECT_OK(gfs_open_file(name));
    if (fid < 0)
        return -1;
    EXPECT_EQ(gfs_create_fork(fid, 0, "f"), 0);
    *kid = (int)EXPECT_OK(gfs_open_fork(fid, 0, "f"));
    return fid;
}

static void notinit(void)
{
    char buf[8];
    int kids[1];
    EXPECT_EQ(gfs_open_file("x"), GFS_ENOTINIT);
    EXPECT_EQ(gfs_create_file("x", 1, NULL), GFS_ENOTINIT);
    EXPECT_EQ(gfs_delete_file("x"), GFS_ENOTINIT);
    EXPECT_EQ(gfs_read(0, 0, buf, 8), GFS_ENOTINIT);
    EXPECT_EQ(gfs_write(0, 0, buf, 8), GFS_ENOTINIT);
    EXPECT_EQ(gfs_ping(0), GFS_ENOTINIT);
    EXPECT_EQ(gfs_all_open(0, "f", kids), GFS_ENOTINIT);
    EXPECT_EQ(gfs_finalize(), GFS_ENOTINIT);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        t_fail(__FILE__, __LINE__, "cannot write %s", path);
        return;
    }
    fputs(text, f);
    fclose(f);
}

static void clusterfile(const char *dir)
{
    char path[4096];
    int rc;
    snprintf(path, sizeof(path), "%s/does-not-exist", dir);
    rc = gfs_init(path);
    printf("missing cluster file: %d %s\n", rc, gfs_strerror(rc));
    EXPECT_TRUE(rc == GFS_ENOCLUSTER || rc == -ENOENT);
    if (rc >= 0)
        gfs_finalize();

    static const char *bad[] = {
        "this is not an address\n", "127.0.0.1\n",     "127.0.0.1:99999\n",
        "127.0.0.1:-5\n",           "127.0.0.1:12x\n", ":1234\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(path, sizeof(path), "%s/bad%zu", dir, i);
        write_file(path, bad[i]);
        rc = gfs_init(path);
        printf("cluster file %zu: %d %s\n", i, rc, gfs_strerror(rc));
        if (!EXPECT_EQ(rc, GFS_EBADCLUSTER))
            printf("  content: %s", bad[i]);
        if (rc >= 0)
            gfs_finalize();
    }
    /* Nothing but comments: no server at all. */
    snprintf(path, sizeof(path), "%s/empty", dir);
    write_file(path, "# nothing here\n\n");
    rc = gfs_init(path);
    printf("empty cluster file: %d %s\n", rc, gfs_strerror(rc));
    EXPECT_TRUE(rc == GFS_EBADCLUSTER || rc == GFS_ENOCLUSTER);
    if (rc >= 0)
        gfs_finalize();
    /* Comments and blank lines around a good line are fine. */
    snprintf(path, sizeof(path), "%s/commented", dir);
    write_file(path, "# one server\n\n127.0.0.1:1\n\n");
    rc = gfs_init(path);
    EXPECT_EQ(rc, 0);
    if (rc >= 0) {
        EXPECT_EQ(gfs_num_servers(), 1);
        EXPECT_EQ(gfs_finalize(), 0);
    }
}

static void names(const char *name)
{
    char longname[GFS_NAME_MAX + 2], maxname[GFS_NAME_MAX + 1];
    memset(longname, 'L', GFS_NAME_MAX + 1);
    longname[GFS_NAME_MAX + 1] = '\0';
    snprintf(maxname, sizeof(maxname), "%s", name);
    size_t n = strlen(maxname);
    memset(maxname + n, 'M', GFS_NAME_MAX - n);
    maxname[GFS_NAME_MAX] = '\0';

    EXPECT_EQ(gfs_create_file(longname, 1, NULL), -ENAMETOOLONG);
    EXPECT_EQ(gfs_open_file(longname), -ENAMETOOLONG);
    EXPECT_EQ(gfs_delete_file(longname), -ENAMETOOLONG);
    EXPECT_EQ(gfs_create_striped(longname, 1, NULL, 4096, "data"),
              -ENAMETOOLONG);
    EXPECT_EQ(gfs_create_file("", 1, NULL), -EINVAL);
    /* Exactly GFS_NAME_MAX bytes is allowed. */
    EXPECT_EQ(gfs_create_file(maxname, 1, NULL), 0);
    int fid = (int)EXPECT_OK(gfs_open_file(maxname));

    char longfork[GFS_FORK_NAME_MAX + 2], maxfork[GFS_FORK_NAME_MAX + 1];
    memset(longfork, 'f', GFS_FORK_NAME_MAX + 1);
    longfork[GFS_FORK_NAME_MAX + 1] = '\0';
    memset(maxfork, 'g', GFS_FORK_NAME_MAX);
    maxfork[GFS_FORK_NAME_MAX] = '\0';
    EXPECT_EQ(gfs_create_fork(fid, 0, longfork), -ENAMETOOLONG);
    EXPECT_EQ(gfs_open_fork(fid, 0, longfork), -ENAMETOOLONG);
    EXPECT_EQ(gfs_all_create(fid, longfork), -ENAMETOOLONG);
    EXPECT_EQ(gfs_create_fork(fid, 0, ""), -EINVAL);
    EXPECT_EQ(gfs_create_fork(fid, 0, maxfork), 0);
    int kid = (int)EXPECT_OK(gfs_open_fork(fid, 0, maxfork));
    EXPECT_EQ(gfs_write(kid, 0, "abc", 3), 3);
    EXPECT_EQ(gfs_close_fork(kid), 0);
    EXPECT_EQ(gfs_close_file(fid), 0);
    EXPECT_EQ(gfs_delete_file(maxname), 0);
    EXPECT_EQ(gfs_open_file(maxname), -ENOENT);
    /* NULL names are bad arguments, not crashes. */
    EXPECT_EQ(gfs_create_file(NULL, 1, NULL), -EINVAL);
    EXPECT_EQ(gfs_open_file(NULL), -EINVAL);
}

static void exists(const char *name)
{
    int kid;
    int fid = setup(name, 2, &kid);
    if (fid < 0)
        return;
    EXPECT_EQ(gfs_create_file(name, 2, NULL), -EEXIST);
    EXPECT_EQ(gfs_create_file(name, 1, NULL), -EEXIST);
    EXPECT_EQ(gfs_create_striped(name, 2, NULL, 4096, "data"), -EEXIST);
    EXPECT_EQ(gfs_create_fork(fid, 0, "f"), -EEXIST);
    EXPECT_EQ(gfs_all_create(fid, "f"), -EEXIST);
    /* The failed creates changed nothing. */
    gfs_file_stat st;
    EXPECT_EQ(gfs_stat_file(fid, &st), 0);
    EXPECT_EQ(st.nsubfiles, 2);
    EXPECT_EQ(gfs_write(kid, 0, "xyz", 3), 3);
    EXPECT_EQ(gfs_fork_size(kid), 3);
    EXPECT_EQ(gfs_close_file(fid), 0);
}

static void missing(const char *name)
{
    char other[300];
    snprintf(other, sizeof(other), "%s.absent", name);
    EXPECT_EQ(gfs_open_file(other), -ENOENT);
    EXPECT_EQ(gfs_delete_file(other), -ENOENT);
    EXPECT_EQ(gfs_striped_open(other), -ENOENT);
    int kid;
    int fid = setup(name, 2, &kid);
    if (fid < 0)
        return;
    int kids[2];
    EXPECT_EQ(gfs_open_fork(fid, 0, "nofork"), -ENOENT);
    EXPECT_EQ(gfs_open_fork(fid, 1, "f"), -ENOENT); /* only on subfile 0 */
    EXPECT_EQ(gfs_delete_fork(fid, 1, "f"), -ENOENT);
    EXPECT_EQ(gfs_all_open(fid, "nofork", kids), -ENOENT);
    EXPECT_EQ(gfs_all_delete(fid, "nofork"), -ENOENT);
    /* A plain file has no striped layout. */
    EXPECT_EQ(gfs_striped_open(name), GFS_ELAYOUT);
    EXPECT_EQ(gfs_close_file(fid), 0);
}

static void counts(const char *name)
{
    int ns = gfs_num_servers();
    int too_many[GFS_MAX_SUBFILES + 1];
    for (int i = 0; i <= GFS_MAX_SUBFILES; i++)
        too_many[i] = i % (ns > 0 ? ns : 1);
    EXPECT_EQ(gfs_create_file(name, ns + 1, NULL), -EINVAL);
    EXPECT_EQ(gfs_create_file(name, 0, NULL), -EINVAL);
    EXPECT_EQ(gfs_create_file(name, -1, NULL), -EINVAL);
    EXPECT_EQ(gfs_create_file(name, GFS_MAX_SUBFILES + 1, too_many), -EINVAL);
    const int dup[2] = {1, 1};
    EXPECT_EQ(gfs_create_file(name, 2, dup), -EINVAL);
    const int out[2] = {0, ns};
    EXPECT_EQ(gfs_create_file(name, 2, out), -EINVAL);
    const int neg[1] = {-1};
    EXPECT_EQ(gfs_create_file(name, 1, neg), -EINVAL);
    EXPECT_EQ(gfs_create_striped(name, ns + 1, NULL, 4096, "data"), -EINVAL);
    /* (unit <= 0 and fork NULL mean the defaults, as in SFIO's mopen) */
    EXPECT_EQ(gfs_create_striped(name, 1, NULL, (int64_t)1 << 50, "data"),
              -EINVAL);
    EXPECT_EQ(gfs_create_striped(name, 1, NULL, 4096, "two\nlines"), -EINVAL);
    EXPECT_EQ(gfs_create_striped(name, 1, NULL, 4096, ""), -EINVAL);
    /* None of the failures left the name reserved. */
    EXPECT_EQ(gfs_open_file(name), -ENOENT);
    EXPECT_EQ(gfs_create_file(name, ns, NULL), 0);
    int fid = (int)EXPECT_OK(gfs_open_file(name));
    EXPECT_EQ(gfs_create_fork(fid, ns, "f"), -EINVAL);
    EXPECT_EQ(gfs_create_fork(fid, -1, "f"), -EINVAL);
    EXPECT_EQ(gfs_open_fork(fid, 99, "f"), -EINVAL);
    EXPECT_EQ(gfs_delete_fork(fid, ns, "f"), -EINVAL);
    EXPECT_EQ(gfs_close_file(fid), 0);
    EXPECT_TRUE(gfs_ping(ns) < 0);
    EXPECT_TRUE(gfs_ping(-1) < 0);
}

static void io(const char *name)
{
    int kid;
    int fid = setup(name, 1, &kid);
    if (fid < 0)
        return;
    unsigned char data[100], got[100];
    t_fill(data, sizeof(data), 1);
    EXPECT_EQ(gfs_write(kid, 0, data, 100), 100);
    EXPECT_EQ(gfs_write(kid, -1, data, 10), -EINVAL);
    EXPECT_EQ(gfs_write(kid, 0, data, -10), -EINVAL);
    EXPECT_EQ(gfs_read(kid, -100, got, 10), -EINVAL);
    EXPECT_EQ(gfs_read(kid, 0, got, -1), -EINVAL);
    int64_t rc = gfs_write(kid, INT64_MAX - 5, data, 10); /* end overflows */
    if (!EXPECT_TRUE(rc == -EINVAL || rc == -EFBIG))
        printf("  write at INT64_MAX-5: %" PRId64 " %s\n", rc, t_err(rc));
    EXPECT_EQ(gfs_truncate_fork(kid, -1), -EINVAL);
    gfs_list_entry e[2] = {{0, 0, 10}, {20, 10, 10}};
    EXPECT_EQ(gfs_listio(kid, GFS_WRITE, -1, e, data), -EINVAL);
    EXPECT_EQ(gfs_listio(kid, 7, 2, e, data), -EINVAL);
    EXPECT_EQ(gfs_listio(kid, GFS_WRITE, 2, NULL, data), -EINVAL);
    e[1].size = -10;
    EXPECT_EQ(gfs_listio(kid, GFS_WRITE, 2, e, data), -EINVAL);
    e[1].size = 10;
    e[1].file_offset = -20;
    EXPECT_EQ(gfs_listio(kid, GFS_WRITE, 2, e, data), -EINVAL);
    EXPECT_EQ(gfs_listio(kid, GFS_READ, 2, e, got), -EINVAL);
    e[1].file_offset = 20;
    e[1].mem_offset = -10;
    EXPECT_EQ(gfs_listio(kid, GFS_WRITE, 2, e, data), -EINVAL);
    /* The rejected requests changed nothing. */
    EXPECT_EQ(gfs_fork_size(kid), 100);
    EXPECT_EQ(gfs_read(kid, 0, got, 100), 100);
    EXPECT_MEM(got, data, 100, "fork after rejected requests");
    EXPECT_EQ(gfs_close_file(fid), 0);
}

static void ids(const char *name)
{
    int kid;
    int fid = setup(name, 2, &kid);
    if (fid < 0)
        return;
    char buf[16] = {0};
    gfs_list_entry e = {0, 0, 4};
    gfs_file_stat st;
    const int unknown[] = {99999, 4096, -1};
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
        int bad = unknown[i];
        EXPECT_EQ(gfs_read(bad, 0, buf, 4), GFS_EBADID);
        EXPECT_EQ(gfs_write(bad, 0, buf, 4), GFS_EBADID);
        EXPECT_EQ(gfs_listio(bad, GFS_READ, 1, &e, buf), GFS_EBADID);
        EXPECT_EQ(gfs_fork_size(bad), GFS_EBADID);
        EXPECT_EQ(gfs_truncate_fork(bad, 0), GFS_EBADID);
        EXPECT_EQ(gfs_sync(bad), GFS_EBADID);
        EXPECT_EQ(gfs_close_fork(bad), GFS_EBADID);
        EXPECT_EQ(gfs_close_file(bad), GFS_EBADID);
        EXPECT_EQ(gfs_stat_file(bad, &st), GFS_EBADID);
        EXPECT_EQ(gfs_create_fork(bad, 0, "g"), GFS_EBADID);
        EXPECT_EQ(gfs_open_fork(bad, 0, "f"), GFS_EBADID);
        EXPECT_EQ(gfs_all_create(bad, "g"), GFS_EBADID);
        EXPECT_EQ(gfs_striped_close(bad), GFS_EBADID);
        EXPECT_EQ(gfs_striped_size(bad), GFS_EBADID);
        EXPECT_EQ(gfs_set_attr(bad, "k", "v"), GFS_EBADID);
    }
    /* Closed ids are unknown ids. */
    EXPECT_EQ(gfs_write(kid, 0, "abcd", 4), 4);
    EXPECT_EQ(gfs_close_fork(kid), 0);
    EXPECT_EQ(gfs_close_fork(kid), GFS_EBADID);
    EXPECT_EQ(gfs_read(kid, 0, buf, 4), GFS_EBADID);
    EXPECT_EQ(gfs_write(kid, 0, buf, 4), GFS_EBADID);
    EXPECT_EQ(gfs_fork_size(kid), GFS_EBADID);
    int kids[2] = {kid, kid};
    EXPECT_EQ(gfs_all_close(2, kids), GFS_EBADID);
    EXPECT_EQ(gfs_close_file(fid), 0);
    EXPECT_EQ(gfs_close_file(fid), GFS_EBADID);
    EXPECT_EQ(gfs_stat_file(fid, &st), GFS_EBADID);
    EXPECT_EQ(gfs_create_fork(fid, 0, "g"), GFS_EBADID);
    /* The data written before the close is there. */
    fid = (int)EXPECT_OK(gfs_open_file(name));
    kid = (int)EXPECT_OK(gfs_open_fork(fid, 0, "f"));
    EXPECT_EQ(gfs_read(kid, 0, buf, 8), 4);
    EXPECT_MEM(buf, "abcd", 4, "fork f");
    EXPECT_EQ(gfs_close_file(fid), 0);
}

static void strerror_(void)
{
    static const int codes[] = {
#define GFS_X_CODE(name, value, msg) name,
        GFS_ERROR_TABLE(GFS_X_CODE)
#undef GFS_X_CODE
    };
    size_t n = sizeof(codes) / sizeof(codes[0]);
    for (size_t i = 0; i < n; i++) {
        const char *m = gfs_strerror(codes[i]);
        if (!EXPECT_TRUE(m && *m))
            continue;
        printf("%d %s\n", codes[i], m);
        for (size_t j = 0; j < i; j++)
            EXPECT_TRUE(strcmp(m, gfs_strerror(codes[j])) != 0);
    }
    EXPECT_TRUE(strstr(gfs_strerror(-ENOENT), "No such file") != NULL);
    EXPECT_TRUE(gfs_strerror(-EEXIST) && *gfs_strerror(-EEXIST));
    EXPECT_TRUE(gfs_strerror(-123456) && *gfs_strerror(-123456));
    EXPECT_TRUE(gfs_strerror(0) != NULL);
    EXPECT_TRUE(gfs_strerror(12345) != NULL);
}

int main(int argc, char **argv)
{
    const char *use = "notinit|clusterfile DIR|names|exists|missing|counts|"
                      "io|ids|strerror NAME";
    if (argc < 2)
        return t_usage(argv[0], use);
    const char *s = argv[1], *name = argc > 2 ? argv[2] : "";
    if (!strcmp(s, "notinit")) {
        notinit();
        return t_finish();
    }
    if (!strcmp(s, "strerror")) {
        strerror_();
        return t_finish();
    }
    if (!strcmp(s, "clusterfile")) {
        clusterfile(name);
        return t_finish();
    }
    t_init();
    if (!strcmp(s, "names"))
        names(name);
    else if (!strcmp(s, "exists"))
        exists(name);
    else if (!strcmp(s, "missing"))
        missing(name);
    else if (!strcmp(s, "counts"))
        counts(name);
    else if (!strcmp(s, "io"))
        io(name);
    else if (!strcmp(s, "ids"))
        ids(name);
    else
        return t_usage(argv[0], use);
    EXPECT_EQ(gfs_finalize(), 0);
    return t_finish();
}
