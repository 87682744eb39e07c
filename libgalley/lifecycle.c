/*
 * lifecycle.c -- gfs_init and gfs_finalize: the composition of the units
 * above client.c.  Init reads the cluster file and the settings and makes
 * a connection object per server (connected lazily, conn.c); finalize
 * stops what runs in the background (non-blocking workers, the reclaimer,
 * lease renewal), drops the striped opens, the record cache and the forks
 * still open, then every transport's per-fork state, and empties the
 * state client.c keeps.
 *
 * Threads: any; gc_g.lock guards the reference count (client.c).
 */
#include "internal.h"
#include "cluster_file.h"
#include "transport.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Finding and parsing the cluster file: cluster_file.c.  The settings
 * come from the environment (common/gconfig.c): GALLEY_TRANSPORT at every
 * gfs_init, GALLEY_TIMEOUT, GALLEY_SPIN_US and GALLEY_KEY (auth.c) at each
 * one that starts the client. */

/* A child after fork() uses Galley with connections of its own: the
 * parent's streams, threads and locks are forgotten here, before the
 * child's code runs (the record cache, the reclaimer and the direct
 * transport's grants do the same for themselves: rcache.c,
 * files_delete.c, transport_direct_grants.c).  The open files and forks
 * stay open: the child's first request to a server re-registers them on
 * its own connection (conn_connect.c). */
static void after_fork_child(void)
{
    pthread_mutex_init(&gc_g.lock, NULL); /* the only thread now */
    for (int i = 0; gc_g.conns && i < gc_g.nservers; i++)
        gc_conn_after_fork(gc_g.conns[i]);
    gc_nb_after_fork();
    gc_lease_after_fork();
}

static void after_fork_register(void)
{
    pthread_atfork(NULL, NULL, after_fork_child);
    gc_rcache_atfork();
}

int gfs_init(const char *cluster_file)
{
    static pthread_once_t after_fork_once = PTHREAD_ONCE_INIT;
    pthread_once(&after_fork_once, after_fork_register);
    /* GALLEY_TRANSPORT: -EINVAL for a name that is not one */
    int transport = (int)g_config_int(G_CFG_TRANSPORT);
    if (transport < 0)
        return transport;
    pthread_mutex_lock(&gc_g.lock);
    if (gc_g.refs > 0) {
        gc_g.refs++;
        pthread_mutex_unlock(&gc_g.lock);
        return 0;
    }
    char buf[4096];
    const char *path = gc_cluster_find(cluster_file, buf, sizeof(buf));
    char **hosts = NULL, **ports = NULL;
    int n = 0;
    int rc = gc_cluster_parse(path, &hosts, &ports, &n);
    if (rc)
        goto out_unlock;
    gc_g.conns = calloc((size_t)n, sizeof(*gc_g.conns));
    if (!gc_g.conns) {
        rc = -ENOMEM;
        goto out_free_names;
    }
    for (int i = 0; i < n; i++) {
        gc_g.conns[i] = gc_conn_new(i, hosts[i], ports[i]);
        if (!gc_g.conns[i]) {
            for (int j = 0; j < i; j++)
                gc_conn_free(gc_g.conns[j]);
            free(gc_g.conns);
            gc_g.conns = NULL;
            rc = -ENOMEM;
            goto out_free_names;
        }
    }
    gc_g.nservers = n;
    gc_g.timeout_ms = (int)g_config_int(G_CFG_TIMEOUT);
    gc_g.transport = transport;
    gc_g.spin_us = (int)g_config_int(G_CFG_SPIN_US);
    gc_g.refs = 1;
    gc_auth_load(path);
out_free_names:
    for (int i = 0; i < n; i++) {
        free(hosts[i]);
        free(ports[i]);
    }
    free(hosts);
    free(ports);
out_unlock:
    pthread_mutex_unlock(&gc_g.lock);
    return rc;
}

int gfs_finalize(void)
{
    pthread_mutex_lock(&gc_g.lock);
    if (gc_g.refs == 0) {
        pthread_mutex_unlock(&gc_g.lock);
        return GFS_ENOTINIT;
    }
    if (gc_g.refs > 1) {
        gc_g.refs--;
        pthread_mutex_unlock(&gc_g.lock);
        return 0;
    }
    pthread_mutex_unlock(&gc_g.lock);

    /* Let queued non-blocking requests finish, then stop the workers. */
    gc_nb_shutdown();
    gc_reclaim_wait();
    gc_lease_stop();
    gc_striped_shutdown();
    gc_rcache_clear();

    /* Close forks still open (best effort: servers also close a dropped
     * connection's opens). */
    gc_fork k;
    for (int kid = -1; (kid = gc_fork_next(kid, &k)) >= 0;)
        gc_fork_close(kid);
    for (int i = 0; i < gc_g.nservers; i++)
        gc_conn_fence(gc_g.conns[i]); /* the closes posted: served */
    gc_transports_shutdown();

    pthread_mutex_lock(&gc_g.lock);
    gc_g.refs = 0;
    for (int i = 0; i < gc_g.nservers; i++)
        gc_conn_free(gc_g.conns[i]);
    gc_auth_unload();
    free(gc_g.conns);
    /* The tables keep their generations: ids from before stay stale. */
    for (int fid = -1; (fid = gc_idtab_next(&gc_g.files, fid)) >= 0;)
        free(gc_file_at(fid));
    gc_idtab_clear(&gc_g.files);
    gc_idtab_clear(&gc_g.forks);
    gc_g.conns = NULL;
    gc_g.nservers = 0;
    pthread_mutex_unlock(&gc_g.lock);
    return 0;
}
