/*
 * group.c -- GFS-GROUP split-phase library (see galley_group.h).
 *
 * Pending requests of one fork and one direction accumulate as pieces;
 * a flush turns them into one prepared list op and hands it to nb.c's
 * workers.  Groups already in flight are kept as handles and polled.
 *
 * Threads: any; g_lock serialises every call (one group per process).
 */
#include "galley_group.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct group {
    bool inited;
    int policy;
    int64_t max_requests, max_bytes;
    /* pending */
    int kid, op;
    gp_ext *p;
    size_t n, cap;
    int64_t bytes;
    /* in flight */
    gfs_handle *fl;
    size_t nfl, flcap;
    int first_error;
    gfs_group_stats st;
} group;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static group g;

static void group_init(void)
{
    if (g.inited)
        return;
    g.inited = true;
    g.max_requests = 1024;
    g.max_bytes = 16 << 20;
    g.kid = -1;
    g.policy = (int)g_config_int(G_CFG_GROUP_POLICY);
}

/* Reap finished groups without blocking; keep the first error. */
static void reap(void)
{
    size_t k = 0;
    for (size_t i = 0; i < g.nfl; i++) {
        int64_t res;
        int done = gc_nb_test(g.fl[i], &res);
        if (done == 0) {
            g.fl[k++] = g.fl[i];
            continue;
        }
        if (done < 0)
            res = done;
        if (res < 0 && !g.first_error)
            g.first_error = (int)res;
    }
    g.nfl = k;
}

/* Submit the pending requests as one list I/O.  *why counts the cause. */
static int flush(uint64_t *why)
{
    if (g.n == 0)
        return 0;
    if (g.nfl == g.flcap) {
        size_t cap = g.flcap ? g.flcap * 2 : 16;
        gfs_handle *nf = realloc(g.fl, sizeof(*nf) * cap);
        if (!nf)
            return -ENOMEM;
        g.fl = nf;
        g.flcap = cap;
    }
    gfs_handle h = gc_nb_new();
    if (h < 0)
        return h;
    gc_op *o = NULL;
    int rc = gc_op_fork(&o, g.kid, g.op, g.p, g.n, g.bytes);
    /* gc_op_fork owns the pieces now, success or not */
    (*why)++;
    g.st.groups++;
    if (g.n > g.st.max_pending)
        g.st.max_pending = g.n;
    g.p = NULL;
    g.n = g.cap = 0;
    g.bytes = 0;
    rc = gc_nb_start(h, rc, o);
    g.fl[g.nfl++] = h; /* even on error: the handle holds the result */
    return rc;
}

static int group_add(int kid, int op, int64_t offset, void *buf, int64_t size)
{
    gc_fork k;
    int rc = gc_fork_get(kid, &k);
    if (rc)
        return rc;
    if (!gc_range_ok(offset, size) || (size && !buf))
        return -EINVAL;
    pthread_mutex_lock(&g_lock);
    group_init();
    if (g.n > 0 && g.kid != kid)
        rc = flush(&g.st.flush_fork);
    else if (g.n > 0 && g.op != op)
        rc = flush(&g.st.flush_op);
    if (!rc && g.n == g.cap) {
        size_t cap = g.cap ? g.cap * 2 : 64;
        gp_ext *np = realloc(g.p, sizeof(*np) * cap);
        if (!np)
            rc = -ENOMEM;
        else {
            g.p = np;
            g.cap = cap;
        }
    }
    if (!rc) {
        g.kid = kid;
        g.op = op;
        g.p[g.n++] = (gp_ext){(uint64_t)offset, (uint64_t)size, {buf}};
        g.bytes += size;
        g.st.requests++;
        if ((int64_t)g.n >= g.max_requests)
            rc = flush(&g.st.flush_count);
        else if (g.bytes >= g.max_bytes)
            rc = flush(&g.st.flush_size);
        else if (g.policy == GFS_GROUP_SEND) {
            reap();
            if (g.nfl == 0)
                rc = flush(&g.st.flush_send);
        }
    }
    pthread_mutex_unlock(&g_lock);
    return rc;
}

int gfs_group_read(int kid, int64_t offset, void *buf, int64_t size)
{
    return group_add(kid, GFS_READ, offset, buf, size);
}

int gfs_group_write(int kid, int64_t offset, const void *buf, int64_t size)
{
    return group_add(kid, GFS_WRITE, offset, (void *)buf, size);
}

int gfs_group_doneio(void)
{
    pthread_mutex_lock(&g_lock);
    group_init();
    int rc = flush(&g.st.flush_call);
    pthread_mutex_unlock(&g_lock);
    return rc;
}

int gfs_group_testio(void)
{
    pthread_mutex_lock(&g_lock);
    group_init();
    reap();
    int rc;
    if (g.first_error) {
        rc = g.first_error;
        g.first_error = 0;
    } else {
        if (g.policy == GFS_GROUP_SEND && g.nfl == 0 && g.n > 0)
            flush(&g.st.flush_send);
        rc = g.n == 0 && g.nfl == 0;
    }
    pthread_mutex_unlock(&g_lock);
    return rc;
}

int gfs_group_waitio(void)
{
    pthread_mutex_lock(&g_lock);
    group_init();
    int rc = flush(&g.st.flush_call);
    for (size_t i = 0; i < g.nfl; i++) {
        int64_t res = gc_nb_wait(g.fl[i]);
        if (res < 0 && !g.first_error)
            g.first_error = (int)res;
    }
    g.nfl = 0;
    if (!rc)
        rc = g.first_error;
    g.first_error = 0;
    pthread_mutex_unlock(&g_lock);
    return rc;
}

int gfs_group_set_policy(int policy)
{
    if (policy != GFS_GROUP_SEND && policy != GFS_GROUP_NOSEND)
        return -EINVAL;
    pthread_mutex_lock(&g_lock);
    group_init();
    g.policy = policy;
    pthread_mutex_unlock(&g_lock);
    return 0;
}

int gfs_group_get_policy(void)
{
    pthread_mutex_lock(&g_lock);
    group_init();
    int p = g.policy;
    pthread_mutex_unlock(&g_lock);
    return p;
}

int gfs_group_set_limits(int64_t max_requests, int64_t max_bytes)
{
    if (max_requests < 1 || max_bytes < 1)
        return -EINVAL;
    pthread_mutex_lock(&g_lock);
    group_init();
    g.max_requests = max_requests;
    g.max_bytes = max_bytes;
    pthread_mutex_unlock(&g_lock);
    return 0;
}

int gfs_group_get_stats(gfs_group_stats *st)
{
    if (!st)
        return -EINVAL;
    pthread_mutex_lock(&g_lock);
    *st = g.st;
    pthread_mutex_unlock(&g_lock);
    return 0;
}

void gfs_group_reset_stats(void)
{
    pthread_mutex_lock(&g_lock);
    memset(&g.st, 0, sizeof(g.st));
    pthread_mutex_unlock(&g_lock);
}
