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

int main(int argc, char **argv)
{
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
    if (argc != 4) {
        fprintf(stderr, "usage: t_mdstorm create|remove|check PREFIX COUNT\n");
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
    gfs_finalize();
    return t_finish();
}
