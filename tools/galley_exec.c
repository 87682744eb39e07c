/*
 * galley_exec.c -- `galley exec`: find libgalley-posix.so and exec the
 * command with it first in LD_PRELOAD.
 *
 * The library is looked for, in order: $GALLEY_POSIX_LIB; <bindir>/../lib
 * beside the running binary (an installed or moved prefix); the build tree
 * (tools/.libs/../../posix/.libs, so a build-tree galley uses the library
 * built with it); the libdir this tool was configured with.
 *
 * Threads: single-threaded (runs before exec).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "galley_cli.h"
#include "galley_exec.h"
#include "gconfig.h"

#define LIBNAME "libgalley-posix.so"

static int readable(const char *p)
{
    return p && *p && access(p, R_OK) == 0;
}

/* Write the library's path into buf; 0 or -1 when not found. */
static int find_lib(char *buf, size_t len)
{
    const char *env = g_config_str(G_CFG_POSIX_LIB);
    if (env) {
        snprintf(buf, len, "%s", env);
        return readable(buf) ? 0 : -1;
    }
    static const char *const rel[] = {"/../lib/", "/../../posix/.libs/",
                                      "/../posix/.libs/"};
    if (find_beside_exe(buf, len, rel, sizeof(rel) / sizeof(*rel), LIBNAME,
                        readable, true) == 0)
        return 0;
#ifdef GALLEY_LIBDIR
    snprintf(buf, len, "%s/%s", GALLEY_LIBDIR, LIBNAME);
    if (readable(buf))
        return 0;
#endif
    return -1;
}

/* Append one -m DIR[=GALLEYDIR] to GALLEY_POSIX_MOUNTS; an absolute DIR
 * is required (the library maps absolute paths only). */
static int add_mount(const char *m)
{
    if (m[0] != '/') {
        fprintf(stderr,
                "galley: exec -m needs an absolute directory, not "
                "'%s'\n",
                m);
        return -1;
    }
    const char *old = g_config_str(G_CFG_POSIX_MOUNTS); /* NULL: none */
    size_t n = strlen(m) + (old ? strlen(old) : 0) + 2;
    char *v = malloc(n);
    if (!v)
        return -1;
    snprintf(v, n, "%s%s%s", old ? old : "", old ? "," : "", m);
    setenv("GALLEY_POSIX_MOUNTS", v, 1);
    free(v);
    return 0;
}

int galley_exec(const char *cluster, int timeout_s, int argc, char **argv)
{
    while (argc > 1 && strcmp(argv[0], "-m") == 0) {
        if (add_mount(argv[1]) < 0)
            return 2;
        argc -= 2;
        argv += 2;
    }
    if (argc > 0 && strcmp(argv[0], "--") == 0) {
        argc--;
        argv++;
    }
    if (argc < 1) {
        fprintf(stderr, "galley: exec needs a command: galley exec -- CMD "
                        "[ARGS...]\n");
        return 2;
    }
    char lib[PATH_MAX];
    if (find_lib(lib, sizeof(lib)) < 0) {
        fprintf(stderr, "galley: cannot find %s (set GALLEY_POSIX_LIB)\n",
                LIBNAME);
        return 127;
    }
    const char *old = getenv("LD_PRELOAD");
    size_t n = strlen(lib) + (old ? strlen(old) : 0) + 2;
    char *pre = malloc(n);
    if (!pre) {
        perror("galley");
        return 1;
    }
    snprintf(pre, n, "%s%s%s", lib, old && *old ? ":" : "", old ? old : "");
    setenv("LD_PRELOAD", pre, 1);
    free(pre);
    if (cluster) {
        char abs[PATH_MAX];
        setenv("GALLEY_CLUSTER", realpath(cluster, abs) ? abs : cluster, 1);
    }
    if (timeout_s > 0) {
        char t[32];
        snprintf(t, sizeof(t), "%d", timeout_s);
        setenv("GALLEY_TIMEOUT", t, 1);
    }
    execvp(argv[0], argv);
    fprintf(stderr, "galley: cannot run '%s': %s\n", argv[0], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}
