/*
 * galley_mount.c -- `galley mount` / `galley umount`.
 *
 * mount execs galley-fuse (fuse/galley_fuse.c), looked for as
 * $GALLEY_FUSE, then beside the running binary, then in the build tree
 * (so a build-tree galley runs the daemon built with it), then in the
 * configured bindir; the daemon checks the cluster, mounts,
 * and detaches, so `galley mount` returns once DIR is usable.  A build
 * configured without libfuse3 says so.
 *
 * umount runs `fusermount3 -u DIR`; if that fails (e.g. the daemon was
 * killed and the mount only answers ENOTCONN) it detaches the mount
 * lazily (`fusermount3 -u -z`, else umount2(MNT_DETACH) as root).
 *
 * Threads: single-threaded (runs before exec).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "galley_cli.h"
#include "galley_mount.h"
#include "gconfig.h"

#ifndef GALLEY_HAVE_FUSE
#define GALLEY_HAVE_FUSE 0
#endif

static int executable(const char *p)
{
    return access(p, X_OK) == 0;
}

static int find_daemon(char *buf, size_t len)
{
    const char *env = g_config_str(G_CFG_FUSE);
    if (env) {
        snprintf(buf, len, "%s", env);
        return executable(buf) ? 0 : -1;
    }
    static const char *const rel[] = {"/", "/../../fuse/", "/../fuse/"};
    if (find_beside_exe(buf, len, rel, sizeof(rel) / sizeof(*rel),
                        "galley-fuse", executable, false) == 0)
        return 0;
#ifdef GALLEY_BINDIR
    snprintf(buf, len, "%s/galley-fuse", GALLEY_BINDIR);
    if (executable(buf))
        return 0;
#endif
    return -1;
}

int galley_mount(const char *cluster, int timeout_s, int argc, char **argv)
{
    if (!GALLEY_HAVE_FUSE) {
        fprintf(stderr, "galley: this galley was built without FUSE "
                        "(install libfuse3-dev and fuse3, then rebuild)\n");
        return 1;
    }
    if (argc < 1) {
        fprintf(stderr, "usage: galley mount [-n NSUB] [-u UNIT] [--cache] "
                        "[--all-users] [-f] DIR\n");
        return 2;
    }
    char daemon[PATH_MAX];
    if (find_daemon(daemon, sizeof(daemon)) < 0) {
        fprintf(stderr, "galley: cannot find galley-fuse (set GALLEY_FUSE)\n");
        return 1;
    }
    char **args = calloc((size_t)argc + 4, sizeof(*args));
    if (!args)
        return 1;
    int n = 0;
    args[n++] = daemon;
    char abs[PATH_MAX];
    if (cluster) {
        args[n++] = "-c";
        args[n++] = realpath(cluster, abs) ? abs : (char *)cluster;
    }
    for (int i = 0; i < argc; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    if (timeout_s > 0) {
        char t[32];
        snprintf(t, sizeof(t), "%d", timeout_s);
        setenv("GALLEY_TIMEOUT", t, 1);
    }
    execv(daemon, args);
    fprintf(stderr, "galley: cannot run %s: %s\n", daemon, strerror(errno));
    return 1;
}

/* Run argv; its exit status, or -1 if it could not run. */
static int run_quiet(char *const argv[], int quiet)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (quiet)
            freopen("/dev/null", "w", stderr);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int galley_umount(int argc, char **argv)
{
    if (argc != 1) {
        fprintf(stderr, "usage: galley umount DIR\n");
        return 2;
    }
    char *dir = argv[0];
    char *plain[] = {"fusermount3", "-u", dir, NULL};
    if (run_quiet(plain, 1) == 0)
        return 0;
    char *lazy[] = {"fusermount3", "-u", "-z", dir, NULL};
    if (run_quiet(lazy, 1) == 0 || umount2(dir, MNT_DETACH) == 0)
        return 0;
    fprintf(stderr, "galley: cannot unmount %s: %s\n", dir, strerror(errno));
    return 1;
}
