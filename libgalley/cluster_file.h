/*
 * cluster_file.h -- finding and reading the cluster file (cluster_file.c).
 * Private to libgalley, except that the `galley` tool and `galley mount`
 * compile cluster_file.c into themselves to read the same addresses
 * gfs_init reads, and the POSIX library finds the same file with
 * gc_cluster_search.
 */
#ifndef GALLEY_CLUSTER_FILE_H
#define GALLEY_CLUSTER_FILE_H

#include "gconfig.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* The cluster file gfs_init reads: `given` if non-empty, else
 * $GALLEY_CLUSTER, else ~/.galley/cluster if readable(path) says it can
 * be read, else /etc/galley/cluster.  The result is `given`, the
 * environment's string, a constant, or buf (len bytes).  The one
 * statement of the search order: libgalley probes with fopen
 * (gc_cluster_find); the POSIX library, which intercepts the C library's
 * file calls, passes its own unintercepted access(). */
static inline const char *gc_cluster_search(const char *given, char *buf,
                                            size_t len,
                                            bool (*readable)(const char *))
{
    if (given && *given)
        return given;
    const char *env = g_config_str(G_CFG_CLUSTER);
    if (env)
        return env;
    const char *home = getenv("HOME");
    if (home) {
        snprintf(buf, len, "%s/.galley/cluster", home);
        if (readable(buf))
            return buf;
    }
    return "/etc/galley/cluster";
}

/* gc_cluster_search probing with fopen. */
const char *gc_cluster_find(const char *given, char *buf, size_t len);

/* Read cluster file `path`: one "host:port" (or "[v6addr]:port") per
 * line, '#' comments and blank lines ignored.  On success *hosts and
 * *ports are *n malloc'ed strings each (in arrays the caller frees, with
 * each string).  Returns 0, GFS_ENOCLUSTER (cannot open), GFS_EBADCLUSTER
 * (a bad line, more than GFS_MAX_SERVERS, or no server) or -ENOMEM. */
int gc_cluster_parse(const char *path, char ***hosts, char ***ports, int *n);

#endif
