/*
 * cluster_file.h -- finding and reading the cluster file (cluster_file.c).
 * Private to libgalley, except that the `galley` tool compiles
 * cluster_file.c into itself to read the same addresses gfs_init reads.
 */
#ifndef GALLEY_CLUSTER_FILE_H
#define GALLEY_CLUSTER_FILE_H

#include <stddef.h>

/* The cluster file gfs_init reads: `given` if non-empty, else
 * $GALLEY_CLUSTER, else ~/.galley/cluster if it can be opened, else
 * /etc/galley/cluster.  The result is `given`, the environment's string,
 * a constant, or buf (len bytes). */
const char *gc_cluster_find(const char *given, char *buf, size_t len);

/* Read cluster file `path`: one "host:port" (or "[v6addr]:port") per
 * line, '#' comments and blank lines ignored.  On success *hosts and
 * *ports are *n malloc'ed strings each (in arrays the caller frees, with
 * each string).  Returns 0, GFS_ENOCLUSTER (cannot open), GFS_EBADCLUSTER
 * (a bad line, more than GFS_MAX_SERVERS, or no server) or -ENOMEM. */
int gc_cluster_parse(const char *path, char ***hosts, char ***ports, int *n);

#endif
