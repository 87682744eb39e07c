/*
 * t_failover.c -- clients facing dead, killed and restarted servers.  Run
 * by tests/test_failures.py, which does the killing and restarting.
 *
 *   writer NAME SERVER BLOCK MAXSEC
 *        create NAME (1 subfile on SERVER), then write BLOCK-byte blocks
 *        one after another, printing "ACK i" after each acknowledged write,
 *        until a write fails ("ERR code message seconds") or MAXSEC pass
 *        ("NOERR").  Exit 0 after ERR.
 *   verify NAME LAST BLOCK
 *        every block 0..LAST reads back with its pattern
 *   ping SERVER
 *        "PING rc seconds"
 *   create-release PREFIX SERVER
 *        SERVER is down: creating files that need it fails with
 *        GFS_ESERVERDOWN/GFS_ETIMEDOUT and leaves no subfile header or
 *        record behind on the live servers
 *   reconnect NAME SERVER
 *        write a fork on SERVER, print READY, wait for a line on stdin
 *        (pytest restarts SERVER meanwhile), then reopen and read back in
 *        the same process
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <unistd.h>

#include "thelp.h"

static void pattern(unsigned char *buf, size_t n, int64_t block)
{
    t_fill(buf, n, (uint64_t)block + 1);
    memcpy(buf, &block, sizeof(block) < n ? sizeof(block) : n);
}

static bool down(int64_t rc)
{
    return rc == GFS_ESERVERDOWN || rc == GFS_ETIMEDOUT;
}

static int writer(const char *name, int server, int64_t block, double maxsec)
{
    const int servers[1] = {server};
    if (!EXPECT_EQ(gfs_create_file(name, 1, servers), 0))
        return t_finish();
    int fid = (int)EXPECT_OK(gfs_open_file(name));
    EXPECT_EQ(gfs_create_fork(fid, 0, "w"), 0);
    int kid = (int)EXPECT_OK(gfs_open_fork(fid, 0, "w"));
    if (kid < 0)
        return t_finish();
    unsigned char *buf = t_xmalloc((size_t)block);
    double start = t_now();
    printf("WRITING\n");
    fflush(stdout);
    for (int64_t i = 0;; i++) {
        pattern(buf, (size_t)block, i);
        double t0 = t_now();
        int64_t rc = gfs_write(kid, i * block, buf, block);
        if (rc != block) {
            printf("ERR %" PRId64 " %s %.3f\n", rc, t_err(rc), t_now() - t0);
            fflush(stdout);
            EXPECT_TRUE(down(rc));
            /* The client stays usable: later calls fail cleanly too. */
            int64_t again = gfs_write(kid, i * block, buf, block);
            printf("AGAIN %" PRId64 " %s\n", again, t_err(again));
            break;
        }
        printf("ACK %" PRId64 "\n", i);
        fflush(stdout);
        if (t_now() - start > maxsec) {
            printf("NOERR\n");
            break;
        }
        usleep(500); /* bounded rate: at most ~2000 blocks a second */
    }
    free(buf);
    gfs_finalize(); /* may report the dead server; not checked */
    return t_finish();
}

static int verify(const char *name, int64_t last, int64_t block)
{
    t_init();
    int fid = (int)EXPECT_OK(gfs_open_file(name));
    int kid = (int)EXPECT_OK(gfs_open_fork(fid, 0, "w"));
    if (kid < 0)
        return t_finish();
    int64_t size = gfs_fork_size(kid);
    printf("fork size %" PRId64 " (acknowledged %" PRId64 " bytes)\n", size,
           (last + 1) * block);
    EXPECT_TRUE(size >= (last + 1) * block);
    unsigned char *want = t_xmalloc((size_t)block);
    unsigned char *got = t_xmalloc((size_t)block);
    int bad = 0;
    for (int64_t i = 0; i <= last && bad < 5; i++) {
        pattern(want, (size_t)block, i);
        memset(got, 0xee, (size_t)block);
        int64_t rc = gfs_read(kid, i * block, got, block);
        if (rc != block || memcmp(got, want, (size_t)block)) {
            t_fail(__FILE__, __LINE__,
                   "acknowledged block %" PRId64 " lost: read %" PRId64 " %s",
                   i, rc, t_err(rc));
            bad++;
        }
    }
    t_checks++;
    if (!bad)
        printf("VERIFIED %" PRId64 " blocks\n", last + 1);
    free(want);
    free(got);
    EXPECT_EQ(gfs_finalize(), 0);
    return t_finish();
}

static int ping(int server)
{
    t_init();
    double t0 = t_now();
    int rc = gfs_ping(server);
    printf("PING %d %s %.3f\n", rc, t_err(rc), t_now() - t0);
    gfs_finalize();
    return 0;
}

struct totals {
    uint64_t records, subfiles;
};

static void live_totals(int ns, int dead, struct totals *t)
{
    memset(t, 0, sizeof(*t));
    for (int s = 0; s < ns; s++) {
        if (s == dead)
            continue;
        gfs_server_stat st;
        if (EXPECT_EQ(gfs_stat_server(s, &st), 0)) {
            t->records += st.nrecords;
            t->subfiles += st.nsubfiles;
        }
    }
}

static int create_release(const char *prefix, int dead)
{
    t_init();
    int ns = gfs_num_servers();
    struct totals before, after;
    live_totals(ns, dead, &before);
    /* Names hash to different metadata servers; each create needs the
     * dead server for one subfile, so the live ones must undo their part. */
    for (int i = 0; i < 8; i++) {
        char name[300];
        snprintf(name, sizeof(name), "%s.%d", prefix, i);
        double t0 = t_now();
        int rc = gfs_create_file(name, ns, NULL);
        printf("CREATE %s %d %s %.3f\n", name, rc, t_err(rc), t_now() - t0);
        EXPECT_TRUE(down(rc));
        rc = gfs_open_file(name);
        EXPECT_TRUE(rc == -ENOENT || down(rc));
    }
    live_totals(ns, dead, &after);
    printf("live servers: records %" PRIu64 " -> %" PRIu64
           ", subfile headers %" PRIu64 " -> %" PRIu64 "\n",
           before.records, after.records, before.subfiles, after.subfiles);
    EXPECT_EQ(after.records, before.records);
    EXPECT_EQ(after.subfiles, before.subfiles);
    gfs_finalize();
    return t_finish();
}

static int reconnect(const char *name, int server)
{
    t_init();
    const int servers[1] = {server};
    unsigned char data[65536], got[65536];
    t_fill(data, sizeof(data), 61);
    EXPECT_EQ(gfs_create_file(name, 1, servers), 0);
    int fid = (int)EXPECT_OK(gfs_open_file(name));
    EXPECT_EQ(gfs_create_fork(fid, 0, "r"), 0);
    int kid = (int)EXPECT_OK(gfs_open_fork(fid, 0, "r"));
    EXPECT_EQ(gfs_write(kid, 0, data, sizeof(data)), (int64_t)sizeof(data));
    printf("READY\n");
    fflush(stdout);
    char line[64];
    if (!fgets(line, sizeof(line), stdin))
        printf("stdin closed\n");
    /* The fork id from before the restart: served again or a clean error. */
    int64_t rc = gfs_read(kid, 0, got, sizeof(got));
    printf("OLDKID %" PRId64 " %s\n", rc, t_err(rc));
    EXPECT_TRUE(rc == (int64_t)sizeof(got) || rc == GFS_ESTALE || down(rc) ||
                rc == GFS_EBADID);
    if (rc == (int64_t)sizeof(got))
        EXPECT_MEM(got, data, sizeof(got), "old fork id after restart");
    gfs_close_file(fid); /* may fail for the stale ids */
    /* A fresh open in the same process must work (a few tries: the first
     * call may still see the broken connection). */
    int64_t k2 = -1;
    for (int attempt = 0; attempt < 3; attempt++) {
        fid = gfs_open_file(name);
        k2 = fid >= 0 ? gfs_open_fork(fid, 0, "r") : fid;
        printf("REOPEN attempt %d: %" PRId64 " %s\n", attempt, k2, t_err(k2));
        if (k2 >= 0)
            break;
        if (fid >= 0)
            gfs_close_file(fid);
        sleep(1);
    }
    if (EXPECT_OK(k2) >= 0) {
        memset(got, 0xee, sizeof(got));
        EXPECT_EQ(gfs_read((int)k2, 0, got, sizeof(got)), (int64_t)sizeof(got));
        EXPECT_MEM(got, data, sizeof(got), "fork after server restart");
        EXPECT_EQ(gfs_write((int)k2, sizeof(data), data, 100), 100);
        EXPECT_EQ(gfs_fork_size((int)k2), (int64_t)sizeof(data) + 100);
        EXPECT_EQ(gfs_close_file(fid), 0);
    }
    printf("DONE\n");
    gfs_finalize();
    return t_finish();
}

int main(int argc, char **argv)
{
    const char *use = "writer NAME SERVER BLOCK MAXSEC | verify NAME LAST "
                      "BLOCK | ping SERVER | create-release PREFIX SERVER | "
                      "reconnect NAME SERVER";
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 6 && !strcmp(argv[1], "writer")) {
        t_init();
        return writer(argv[2], atoi(argv[3]), atoll(argv[4]), atof(argv[5]));
    }
    if (argc >= 5 && !strcmp(argv[1], "verify"))
        return verify(argv[2], atoll(argv[3]), atoll(argv[4]));
    if (argc >= 3 && !strcmp(argv[1], "ping"))
        return ping(atoi(argv[2]));
    if (argc >= 4 && !strcmp(argv[1], "create-release"))
        return create_release(argv[2], atoi(argv[3]));
    if (argc >= 4 && !strcmp(argv[1], "reconnect"))
        return reconnect(argv[2], atoi(argv[3]));
    return t_usage(argv[0], use);
}
