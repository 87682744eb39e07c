/*
 * t_mdstorm.c -- a metadata storm for the crash tests (tests/
 * test_metadata.py): one process creating or removing striped files as
 * fast as it can while the test kills a server.
 *
 *   t_mdstorm create PREFIX COUNT   gfs_create_striped PREFIX.<i> (every
 *                                   server, 64 KiB unit), i = 0..COUNT-1
 *   t_mdstorm remove PREFIX COUNT   gfs_delete_file PREFIX.<i>
 *   t_mdstorm check  PREFIX COUNT   gfs_striped_stat of each: "have" or
 *                                   "none", and whether it opens
 *
 * create and remove print "ok NAME" for every call that returned success
 * (flushed at once: the test trusts exactly these lines) and "err NAME
 * MESSAGE" for the others; they stop after 20 failures in a row (the
 * server is gone).  check prints "have NAME" (stat and open both work),
 * "none NAME" (both say -ENOENT) or "FAIL ..." for anything else: a
 * half-made file is one that shows in one and not the other.
 *
 *   t_mdstorm cache NAME RMCMD PUTCMD LOCALFILE
 *
 * checks that records this process cached never hide what another
 * process did: NAME removed (RMCMD) and made again (PUTCMD, LOCALFILE's
 * bytes) by shell commands meanwhile.
 *
 *   t_mdstorm lease NAME SELF       record leases (libgalley/rcache.c)
 *                                   against other processes: SELF is
 *                                   this program, run for the others
 *   t_mdstorm write NAME BYTES      open NAME, write BYTES bytes of 'w'
 *   t_mdstorm setattr NAME KEY VAL  gfs_set_attr on NAME
 *   t_mdstorm rm NAME               gfs_delete_file NAME
 *   t_mdstorm lazy NAME SELF        forks opened at their first use
 *                                   (libgalley/striped.c) against other
 *                                   processes' writes and removes
 *   t_mdstorm rmhold PREFIX COUNT   remove PREFIX.<i>, print "removed",
 *                                   wait for stdin to close (a remover
 *                                   killed before its subfile deletes
 *                                   were all sent)
 *   t_mdstorm hold NAME             create NAME and stat it (a lease),
 *                                   print "held", wait for a line on
 *                                   stdin ("touch NAME2": create and
 *                                   stat NAME2, print "touched", wait
 *                                   again; "exit": exit(0) at once,
 *                                   without gfs_finalize), stat again:
 *                                   "have SIZE" or "none"
 *
 * Threads: single-threaded.
 */
#include "thelp.h"

#include <errno.h>

/* The record cache (libgalley/rcache.c) against another process: NAME
 * removed, then made again with other bytes, by `galley` (cmd_rm,
 * cmd_put) while this process holds its record in the cache. */
static void cache_scenario(const char *name, const char *cmd_rm,
                           const char *cmd_put, const char *local)
{
    int64_t size = -1;
    EXPECT_OK(gfs_create_striped(name, gfs_num_servers(), NULL, 65536, NULL));
    EXPECT_OK(gfs_striped_stat(name, &size, NULL));
    EXPECT_EQ(size, 0);
    EXPECT_EQ(system(cmd_rm), 0);
    EXPECT_EQ(gfs_striped_stat(name, &size, NULL), -ENOENT);
    EXPECT_EQ(gfs_striped_open(name), -ENOENT);

    EXPECT_OK(gfs_create_striped(name, gfs_num_servers(), NULL, 65536, NULL));
    int sid = EXPECT_OK(gfs_striped_open(name)); /* cached again */
    if (sid >= 0)
        gfs_striped_close(sid);
    EXPECT_EQ(system(cmd_rm), 0);
    EXPECT_EQ(system(cmd_put), 0); /* new subfiles, new bytes */
    FILE *f = fopen(local, "rb");
    char want[4096], got[4096];
    size_t n = f ? fread(want, 1, sizeof(want), f) : 0;
    if (f)
        fclose(f);
    EXPECT_TRUE(n > 0);
    EXPECT_OK(gfs_striped_stat(name, &size, NULL));
    EXPECT_EQ(size, (int64_t)n);
    sid = EXPECT_OK(gfs_striped_open(name));
    if (sid >= 0) {
        EXPECT_EQ(gfs_striped_read(sid, 0, got, (int64_t)n), (int64_t)n);
        EXPECT_MEM(got, want, n, "bytes of the file made again");
        gfs_striped_close(sid);
    }
}

/* Leased records and sizes against other processes (SELF runs them). */
static void lease_scenario(const char *name, const char *self)
{
    char cmd[8192];
    int64_t size = -1;
    EXPECT_OK(gfs_create_striped(name, gfs_num_servers(), NULL, 65536, NULL));
    EXPECT_OK(gfs_striped_stat(name, &size, NULL)); /* leased, size 0 */
    EXPECT_EQ(size, 0);

    /* another process writes: seen at once after this one opens (close
     * to open), whatever the cached size */
    snprintf(cmd, sizeof(cmd), "%s write %s 5000", self, name);
    EXPECT_EQ(system(cmd), 0);
    int sid = EXPECT_OK(gfs_striped_open(name));
    if (sid >= 0)
        gfs_striped_close(sid);
    EXPECT_OK(gfs_striped_stat(name, &size, NULL));
    EXPECT_EQ(size, 5000);

    /* this process writes: seen at once, open or closed */
    sid = EXPECT_OK(gfs_striped_open(name));
    char buf[7000];
    memset(buf, 'm', sizeof(buf));
    if (sid >= 0) {
        EXPECT_EQ(gfs_striped_write(sid, 0, buf, sizeof(buf)),
                  (int64_t)sizeof(buf));
        EXPECT_OK(gfs_striped_stat(name, &size, NULL));
        EXPECT_EQ(size, 7000);
        gfs_striped_close(sid);
    }
    EXPECT_OK(gfs_striped_stat(name, &size, NULL));
    EXPECT_EQ(size, 7000);

    /* another process changes the record's attributes: it is not kept
     * waiting for this one's lease, and this one sees the change */
    snprintf(cmd, sizeof(cmd), "%s setattr %s color blue", self, name);
    EXPECT_EQ(system(cmd), 0);
    int fid = EXPECT_OK(gfs_open_file(name));
    char v[64] = "";
    if (fid >= 0) {
        EXPECT_EQ(gfs_get_attr(fid, "color", v, sizeof(v)), 4);
        gfs_close_file(fid);
    }
    EXPECT_TRUE(strcmp(v, "blue") == 0);

    /* another process removes it while the lease holds: the lease is
     * recalled first, and neither stat nor open finds it after */
    EXPECT_OK(gfs_striped_stat(name, &size, NULL));
    snprintf(cmd, sizeof(cmd), "%s rm %s", self, name);
    EXPECT_EQ(system(cmd), 0);
    EXPECT_EQ(gfs_striped_stat(name, &size, NULL), -ENOENT);
    EXPECT_EQ(gfs_striped_open(name), -ENOENT);
}

/* Read n bytes at 0 through sid: all of them equal to c. */
static void expect_bytes(int sid, int64_t n, char c, const char *what)
{
    char *buf = malloc((size_t)n + 1), *want = malloc((size_t)n + 1);
    if (!buf || !want) {
        free(buf);
        free(want);
        EXPECT_TRUE(false);
        return;
    }
    memset(want, c, (size_t)n);
    memset(buf, 0, (size_t)n + 1);
    EXPECT_EQ(gfs_striped_read(sid, 0, buf, n + 1), n);
    EXPECT_MEM(buf, want, (size_t)n, what);
    free(buf);
    free(want);
}

/* Forks opened at their first use: an open of a leased record sends
 * nothing, and what an open file reads must not change for it. */
static void lazy_scenario(const char *name, const char *self)
{
    char cmd[8192];
    int64_t size = -1;
    int n = gfs_num_servers();
    EXPECT_OK(gfs_create_striped(name, n, NULL, 65536, NULL)); /* leased */

    /* opened, never written, closed */
    int sid = EXPECT_OK(gfs_striped_open(name));
    if (sid >= 0)
        EXPECT_OK(gfs_striped_close(sid));
    EXPECT_OK(gfs_striped_stat(name, &size, NULL));
    EXPECT_EQ(size, 0);

    /* a reader opening after a writer (another process) sees its size and
     * its bytes: first through the size, then through a read */
    snprintf(cmd, sizeof(cmd), "%s write %s 5000", self, name);
    EXPECT_EQ(system(cmd), 0);
    sid = EXPECT_OK(gfs_striped_open(name));
    if (sid >= 0) {
        EXPECT_EQ(gfs_striped_size(sid), 5000);
        expect_bytes(sid, 5000, 'w', "a writer's bytes, read after it");
        EXPECT_OK(gfs_striped_close(sid));
    }
    sid = EXPECT_OK(gfs_striped_open(name));
    if (sid >= 0) {
        expect_bytes(sid, 5000, 'w', "read first, size after");
        EXPECT_EQ(gfs_striped_size(sid), 5000);
        EXPECT_OK(gfs_striped_close(sid));
    }

    /* open here, nothing read yet; another process removes the name: the
     * file open here still reads what it held until it is closed */
    sid = EXPECT_OK(gfs_striped_open(name));
    snprintf(cmd, sizeof(cmd), "%s rm %s", self, name);
    EXPECT_EQ(system(cmd), 0);
    EXPECT_EQ(gfs_striped_stat(name, &size, NULL), -ENOENT);
    if (sid >= 0) {
        EXPECT_EQ(gfs_striped_size(sid), 5000);
        expect_bytes(sid, 5000, 'w', "an open file removed by another");
        EXPECT_OK(gfs_striped_close(sid));
    }
    EXPECT_EQ(gfs_striped_open(name), -ENOENT);

    /* the same with this process's own remove */
    EXPECT_OK(gfs_create_striped(name, n, NULL, 65536, NULL));
    snprintf(cmd, sizeof(cmd), "%s write %s 3000", self, name);
    EXPECT_EQ(system(cmd), 0);
    sid = EXPECT_OK(gfs_striped_open(name));
    EXPECT_OK(gfs_delete_file(name));
    if (sid >= 0) {
        expect_bytes(sid, 3000, 'w', "an open file removed by itself");
        EXPECT_OK(gfs_striped_close(sid));
    }
    EXPECT_EQ(gfs_striped_open(name), -ENOENT);
}

/* Create and stat NAME, then wait for a line on stdin; stat again. */
static void hold(const char *name)
{
    int64_t size = -1;
    EXPECT_OK(gfs_create_striped(name, gfs_num_servers(), NULL, 65536, NULL));
    EXPECT_OK(gfs_striped_stat(name, &size, NULL));
    printf("held\n");
    fflush(stdout);
    char line[GFS_NAME_MAX + 16];
    for (;;) {
        if (!fgets(line, sizeof(line), stdin))
            return;
        line[strcspn(line, "\n")] = '\0';
        if (strcmp(line, "exit") == 0)
            exit(0); /* as the preload's processes end */
        if (strncmp(line, "touch ", 6) != 0)
            break;
        /* another file at the same server, leased (the first request
         * after a server restart may find the connection lost) */
        int rc =
            gfs_create_striped(line + 6, gfs_num_servers(), NULL, 65536, NULL);
        if (rc)
            rc = gfs_create_striped(line + 6, gfs_num_servers(), NULL, 65536,
                                    NULL);
        EXPECT_TRUE(rc == 0 || rc == -EEXIST);
        EXPECT_OK(gfs_striped_stat(line + 6, &size, NULL));
        printf("touched\n");
        fflush(stdout);
    }
    int rc = gfs_striped_stat(name, &size, NULL);
    int sid = gfs_striped_open(name);
    if (sid >= 0)
        gfs_striped_close(sid);
    if (rc == 0 && sid >= 0)
        printf("have %" PRId64 "\n", size);
    else if (rc == -ENOENT && sid == -ENOENT)
        printf("none\n");
    else
        printf("FAIL stat %s open %s\n", gfs_strerror(rc),
               sid >= 0 ? "ok" : gfs_strerror(sid));
}

static int one_file(int argc, char **argv)
{
    int rc = gfs_init(NULL);
    if (rc) {
        printf("FAIL gfs_init: %s\n", gfs_strerror(rc));
        return 1;
    }
    const char *mode = argv[1], *name = argv[2];
    if (strcmp(mode, "lease") == 0) {
        lease_scenario(name, argv[3]);
    } else if (strcmp(mode, "lazy") == 0) {
        lazy_scenario(name, argv[3]);
    } else if (strcmp(mode, "hold") == 0) {
        hold(name);
    } else if (strcmp(mode, "write") == 0) {
        int n = atoi(argv[3]);
        char *buf = malloc((size_t)n);
        int sid = EXPECT_OK(gfs_striped_open(name));
        if (buf && sid >= 0) {
            memset(buf, 'w', (size_t)n);
            EXPECT_EQ(gfs_striped_write(sid, 0, buf, n), (int64_t)n);
            EXPECT_OK(gfs_striped_close(sid));
        }
        free(buf);
    } else if (strcmp(mode, "rm") == 0) {
        EXPECT_OK(gfs_delete_file(name));
    } else if (strcmp(mode, "setattr") == 0 && argc == 5) {
        int fid = EXPECT_OK(gfs_open_file(name));
        if (fid >= 0) {
            EXPECT_OK(gfs_set_attr(fid, argv[3], argv[4]));
            gfs_close_file(fid);
        }
    }
    gfs_finalize();
    return t_finish();
}

/* Every server's log made durable (gfs_sync_metadata): one line a
 * server, "server S records R commits C". */
static int log_sync(void)
{
    int rc = gfs_init(NULL);
    if (rc) {
        printf("FAIL gfs_init: %s\n", gfs_strerror(rc));
        return 1;
    }
    int n = gfs_num_servers();
    uint64_t r = 0, k = 0;
    EXPECT_OK(gfs_sync_metadata(-1, NULL, NULL));
    EXPECT_EQ(gfs_sync_metadata(-1, &r, NULL), -EINVAL);
    EXPECT_EQ(gfs_sync_metadata(-2, NULL, NULL), -EINVAL);
    EXPECT_EQ(gfs_sync_metadata(n, NULL, NULL), -EINVAL);
    for (int s = 0; s < n; s++) {
        if (EXPECT_OK(gfs_sync_metadata(s, &r, &k)) == 0)
            printf("server %d records %" PRIu64 " commits %" PRIu64 "\n", s, r,
                   k);
    }
    gfs_finalize();
    return t_finish();
}

int main(int argc, char **argv)
{
    if (argc >= 3 &&
        (strcmp(argv[1], "lease") == 0 || strcmp(argv[1], "hold") == 0 ||
         strcmp(argv[1], "lazy") == 0 || strcmp(argv[1], "write") == 0 ||
         strcmp(argv[1], "rm") == 0 || strcmp(argv[1], "setattr") == 0))
        return one_file(argc, argv);
    if (argc == 6 && strcmp(argv[1], "cache") == 0) {
        int rc = gfs_init(NULL);
        if (rc) {
            printf("FAIL gfs_init: %s\n", gfs_strerror(rc));
            return 1;
        }
        cache_scenario(argv[2], argv[3], argv[4], argv[5]);
        gfs_finalize();
        return t_finish();
    }
    if (argc == 2 && strcmp(argv[1], "logsync") == 0)
        return log_sync();
    if (argc != 4) {
        fprintf(stderr, "usage: t_mdstorm create|remove|check PREFIX COUNT\n"
                        "       t_mdstorm logsync\n");
        return 2;
    }
    const char *mode = argv[1], *prefix = argv[2];
    int count = atoi(argv[3]);
    int rc = gfs_init(NULL);
    if (rc) {
        printf("FAIL gfs_init: %s\n", gfs_strerror(rc));
        return 1;
    }
    int n = gfs_num_servers(), failed = 0;
    char name[GFS_NAME_MAX + 1];
    for (int i = 0; i < count && failed < 20; i++) {
        snprintf(name, sizeof(name), "%s.%d", prefix, i);
        if (strcmp(mode, "check") == 0) {
            int64_t size = -1;
            int st = gfs_striped_stat(name, &size, NULL);
            int sid = gfs_striped_open(name);
            if (sid >= 0)
                gfs_striped_close(sid);
            if (st == 0 && sid >= 0 && size == 0)
                printf("have %s\n", name);
            else if (st == -ENOENT && sid == -ENOENT)
                printf("none %s\n", name);
            else
                t_fail(__FILE__, __LINE__,
                       "%s: stat %s (size %" PRId64 "), open %s", name,
                       gfs_strerror(st), size,
                       sid >= 0 ? "ok" : gfs_strerror(sid));
            t_checks++;
            continue;
        }
        if (strcmp(mode, "create") == 0)
            rc = gfs_create_striped(name, n, NULL, 65536, NULL);
        else if (strcmp(mode, "rmhold") == 0)
            rc = EXPECT_OK(gfs_delete_file(name));
        else
            rc = gfs_delete_file(name);
        if (rc) {
            printf("err %s %s\n", name, gfs_strerror(rc));
            failed++;
        } else {
            printf("ok %s\n", name);
            failed = 0;
        }
        fflush(stdout);
    }
    if (strcmp(mode, "rmhold") == 0) {
        printf("removed\n");
        fflush(stdout);
        char line[64];
        while (fgets(line, sizeof(line), stdin))
            ;
    }
    gfs_finalize();
    return t_finish();
}
