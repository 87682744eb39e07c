/*
 * nb.c -- non-blocking requests: handles, a queue of prepared ops, and a
 * small pool of worker threads that run them (so requests progress while
 * the application computes; "progress is not wait").
 *
 * A gfs_nb_* call validates and prepares its op in the caller's thread
 * (argument arrays are consumed there), then queues it.  Each worker runs
 * one op at a time through io.c's gc_transfer, which itself keeps several
 * requests in flight per server; with several workers, requests to
 * different servers and forks, and several to one server, proceed at once.
 *
 * Handles are ids of a handle.c table: a released handle stays unknown
 * after its slot serves a new one.  The queue links handles by id.
 *
 * Threads: callers and workers.  nb_lock guards the handle table and the
 * queue; it is never held while an op runs.  A pointer into the table is
 * looked up again after every wait on a condition (another thread's
 * gfs_new_handle may have moved the table meanwhile).
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { H_NEW = 1, H_QUEUED, H_DONE };

typedef struct nb_handle {
    int state;
    int64_t result;
    gc_op *op;
    int next; /* queue link (a handle), -1 = end */
} nb_handle;

static pthread_mutex_t nb_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t nb_work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t nb_done = PTHREAD_COND_INITIALIZER;
static gc_idtab nb_tab = GC_IDTAB_INIT(&nb_lock, nb_handle, GC_KIND_NB, 64);
static int q_head = -1, q_tail = -1;
static pthread_t *nb_workers;
static int nb_nworkers;
static bool nb_stop;

static void *worker_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&nb_lock);
    for (;;) {
        while (q_head < 0 && !nb_stop)
            pthread_cond_wait(&nb_work, &nb_lock);
        if (q_head < 0 && nb_stop)
            break;
        /* A queued handle is not released before it is done. */
        int h = q_head;
        nb_handle *p = gc_idtab_at(&nb_tab, h);
        q_head = p->next;
        if (q_head < 0)
            q_tail = -1;
        gc_op *o = p->op;
        p->op = NULL;
        pthread_mutex_unlock(&nb_lock);
        int64_t res = gc_op_run(o);
        pthread_mutex_lock(&nb_lock);
        p = gc_idtab_at(&nb_tab, h);
        p->result = res;
        p->state = H_DONE;
        pthread_cond_broadcast(&nb_done);
    }
    pthread_mutex_unlock(&nb_lock);
    return NULL;
}

/* Start the pool on first use.  nb_lock held. */
static int ensure_workers(void)
{
    if (nb_nworkers > 0)
        return 0;
    int n = (int)g_config_int(G_CFG_NB_THREADS);
    nb_workers = calloc((size_t)n, sizeof(*nb_workers));
    if (!nb_workers)
        return -ENOMEM;
    nb_stop = false;
    for (int i = 0; i < n; i++) {
        if (pthread_create(&nb_workers[i], NULL, worker_main, NULL) != 0) {
            if (i == 0) {
                free(nb_workers);
                nb_workers = NULL;
                return -ENOMEM;
            }
            n = i;
            break;
        }
    }
    nb_nworkers = n;
    return 0;
}

void gc_nb_after_fork(void)
{
    pthread_mutex_init(&nb_lock, NULL); /* the only thread now */
    pthread_cond_init(&nb_work, NULL);
    pthread_cond_init(&nb_done, NULL);
    nb_workers = NULL; /* the parent's threads: not here to join */
    nb_nworkers = 0;
    nb_stop = false;
    q_head = q_tail = -1;
    for (int h = -1; (h = gc_idtab_next(&nb_tab, h)) >= 0;) {
        nb_handle *p = gc_idtab_at(&nb_tab, h);
        if (p->state != H_QUEUED)
            continue;
        if (p->op) /* still queued: never run here */
            gc_op_free(p->op);
        p->op = NULL;
        p->result = GFS_ESERVERDOWN;
        p->state = H_DONE;
    }
}

void gc_nb_shutdown(void)
{
    pthread_mutex_lock(&nb_lock);
    nb_stop = true;
    pthread_cond_broadcast(&nb_work);
    int n = nb_nworkers;
    pthread_t *w = nb_workers;
    nb_nworkers = 0;
    nb_workers = NULL;
    pthread_mutex_unlock(&nb_lock);
    for (int i = 0; i < n; i++)
        pthread_join(w[i], NULL);
    free(w);
    pthread_mutex_lock(&nb_lock);
    gc_idtab_clear(&nb_tab); /* handles from before stay unknown */
    q_head = q_tail = -1;
    pthread_mutex_unlock(&nb_lock);
}

gfs_handle gc_nb_new(void)
{
    int rc = gc_check_init();
    if (rc)
        return rc;
    nb_handle nh = {.state = H_NEW, .next = -1};
    return gc_idtab_insert(&nb_tab, &nh);
}

/*
 * Queue op o on handle h.  If preparation failed (rc < 0) the handle
 * completes at once with that result, so gfs_wait reports it; the call
 * itself also returns it.
 */
int gc_nb_start(gfs_handle h, int rc, gc_op *o)
{
    pthread_mutex_lock(&nb_lock);
    nb_handle *p = gc_idtab_at(&nb_tab, h);
    if (!p || p->state != H_NEW) {
        pthread_mutex_unlock(&nb_lock);
        if (!rc)
            gc_op_free(o);
        return GFS_EBADID;
    }
    if (!rc)
        rc = ensure_workers();
    if (rc) {
        if (o)
            gc_op_free(o);
        p->state = H_DONE;
        p->result = rc;
        pthread_mutex_unlock(&nb_lock);
        return rc;
    }
    p->state = H_QUEUED;
    p->op = o;
    p->next = -1;
    if (q_tail >= 0)
        ((nb_handle *)gc_idtab_at(&nb_tab, q_tail))->next = h;
    else
        q_head = h;
    q_tail = h;
    pthread_cond_signal(&nb_work);
    pthread_mutex_unlock(&nb_lock);
    return 0;
}

/* ---------------------------------------------------------- complete --- */

int64_t gc_nb_wait(gfs_handle h)
{
    pthread_mutex_lock(&nb_lock);
    nb_handle *p = gc_idtab_at(&nb_tab, h);
    if (!p) {
        pthread_mutex_unlock(&nb_lock);
        return GFS_EBADID;
    }
    if (p->state == H_NEW) {
        /* never started: nothing to wait for */
        gc_idtab_remove(&nb_tab, h);
        pthread_mutex_unlock(&nb_lock);
        return 0;
    }
    /* another thread waiting on h may release it first: then h is gone */
    while (p && p->state != H_DONE) {
        pthread_cond_wait(&nb_done, &nb_lock);
        p = gc_idtab_at(&nb_tab, h);
    }
    int64_t res = p ? p->result : GFS_EBADID;
    if (p)
        gc_idtab_remove(&nb_tab, h);
    pthread_mutex_unlock(&nb_lock);
    return res;
}

int gc_nb_test(gfs_handle h, int64_t *result)
{
    pthread_mutex_lock(&nb_lock);
    nb_handle *p = gc_idtab_at(&nb_tab, h);
    if (!p) {
        pthread_mutex_unlock(&nb_lock);
        return GFS_EBADID;
    }
    int done = p->state == H_DONE || p->state == H_NEW;
    if (done) {
        if (result)
            *result = p->state == H_DONE ? p->result : 0;
        gc_idtab_remove(&nb_tab, h);
    }
    pthread_mutex_unlock(&nb_lock);
    return done;
}

int gfs_waitall(int n, const gfs_handle *handles, int64_t *results)
{
    if (n < 0 || (n && !handles))
        return -EINVAL;
    int rc = 0;
    for (int i = 0; i < n; i++) {
        int64_t r = gc_nb_wait(handles[i]);
        if (results)
            results[i] = r;
        if (r < 0 && !rc)
            rc = (int)r;
    }
    return rc;
}

/* ----------------------------------------------------------- starts ---- */

int gfs_nb_read(gfs_handle h, int kid, int64_t offset, void *buf, int64_t size)
{
    gc_op *o = NULL;
    int rc = gc_prep_rw(&o, kid, GFS_READ, offset, buf, size);
    return gc_nb_start(h, rc, o);
}

int gfs_nb_write(gfs_handle h, int kid, int64_t offset, const void *buf,
                 int64_t size)
{
    gc_op *o = NULL;
    int rc = gc_prep_rw(&o, kid, GFS_WRITE, offset, (void *)buf, size);
    return gc_nb_start(h, rc, o);
}

int gfs_nb_listio(gfs_handle h, int kid, int op, int64_t n,
                  const gfs_list_entry *entries, void *buf)
{
    gc_op *o = NULL;
    int rc = gc_prep_listio(&o, kid, op, n, entries, buf);
    return gc_nb_start(h, rc, o);
}

int gfs_nb_read_strided(gfs_handle h, int kid, int64_t offset, void *buf,
                        int64_t size, int64_t count, int64_t fstride,
                        int64_t mstride)
{
    gc_op *o = NULL;
    int rc = gc_prep_strided(&o, kid, GFS_READ, offset, buf, size, count,
                             fstride, mstride);
    return gc_nb_start(h, rc, o);
}

int gfs_nb_write_strided(gfs_handle h, int kid, int64_t offset, const void *buf,
                         int64_t size, int64_t count, int64_t fstride,
                         int64_t mstride)
{
    gc_op *o = NULL;
    int rc = gc_prep_strided(&o, kid, GFS_WRITE, offset, (void *)buf, size,
                             count, fstride, mstride);
    return gc_nb_start(h, rc, o);
}

int gfs_nb_read_nested(gfs_handle h, int kid, int64_t offset, void *buf,
                       int64_t size, int nlevels, const gfs_stride *levels)
{
    gc_op *o = NULL;
    int rc =
        gc_prep_nested(&o, kid, GFS_READ, offset, buf, size, nlevels, levels);
    return gc_nb_start(h, rc, o);
}

int gfs_nb_write_nested(gfs_handle h, int kid, int64_t offset, const void *buf,
                        int64_t size, int nlevels, const gfs_stride *levels)
{
    gc_op *o = NULL;
    int rc = gc_prep_nested(&o, kid, GFS_WRITE, offset, (void *)buf, size,
                            nlevels, levels);
    return gc_nb_start(h, rc, o);
}

int gfs_nb_batch_io(gfs_handle h, int kid, int op, int64_t n,
                    const gfs_batch_entry *e, void *buf)
{
    gc_op *o = NULL;
    int rc = gc_prep_batch(&o, kid, op, n, e, buf);
    return gc_nb_start(h, rc, o);
}

int gfs_nb_striped_listio(gfs_handle h, int sid, int op, int64_t n,
                          const gfs_list_entry *entries, void *buf)
{
    gc_op *o = NULL;
    gc_pieces p = gc_pieces_paired(n, entries, buf);
    int rc = gc_op_striped(&o, sid, op, &p);
    return gc_nb_start(h, rc, o);
}

int gfs_nb_striped_rangeio(gfs_handle h, int sid, int op, int64_t nr,
                           const gfs_range *r, int64_t nseg,
                           const gfs_memseg *seg)
{
    gc_op *o = NULL;
    gc_pieces p = gc_pieces_lists(nr, r, nseg, seg);
    int rc = gc_op_striped(&o, sid, op, &p);
    return gc_nb_start(h, rc, o);
}

/* ------------------------------------------------------- public API --- */

gfs_handle gfs_new_handle(void)
{
    return gc_nb_new();
}

int64_t gfs_wait(gfs_handle h)
{
    return gc_nb_wait(h);
}

int gfs_test(gfs_handle h, int64_t *result)
{
    return gc_nb_test(h, result);
}
