/*
 * files_delete.c -- removing a file: its record first, then its subfiles
 * (a file of one copy's in the background, queued to the reclaimer
 * thread; a replicated file's at once), gfs_finalize's wait for the queue.
 *
 * Threads: any; the reclaim queue under its own lock (rq.lock), never
 * held across a network call.
 */
#include "internal.h"

#include "gclock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ----------------------------------------------------------- delete --- */

/* The subfile deletes of removed files of one copy.  A remove waits for
 * its record only: its subfiles' header ids are queued here, and a
 * thread sends the queue, at most every GC_RECLAIM_MS (or at once when
 * GP_MAX_DELETES wait), as one SUB_DELETE_MANY per server, whose deletes
 * share one log commit there, after a LOG_SYNC of every server; gfs_finalize
 * sends what is left and waits (gc_reclaim_wait).  The record goes first: a
 * process that dies before its subfiles are gone leaves orphans, which `galley
 * fsck --repair` removes, never a file half there.  A server without
 * SUB_DELETE_MANY gets one SUB_DELETE per header. */
#define GC_RECLAIM_MS 100

typedef struct rq_item {
    uint32_t server;
    uint64_t hid;
} rq_item;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    rq_item *q; /* queued, not yet sent */
    size_t n, cap;
    pid_t pid; /* the process whose queue it is */
    bool running, stop;
    pthread_t thread;
} rq = {.lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* Every server's log durable (LOG_SYNC), before subfiles go: a removal
 * answered before its log's fdatasync (galleyd --commit written) is on
 * disk before its subfiles are deleted, so a machine crash can never
 * bring back a record whose subfiles are gone.  A server that fails to
 * answer is not waited for again: its deletes go anyway. */
static void records_durable(void)
{
    gc_log_sync(NULL, NULL);
}

/* Delete the n headers of q (one server each), a batch per server at once
 * (no lock held). */
static void reclaim_send(const rq_item *q, size_t n)
{
    int ns = gc_g.nservers;
    if (n)
        records_durable();
    size_t *cnt = calloc((size_t)ns, sizeof(*cnt));
    gc_pending *p = calloc((size_t)ns, sizeof(*p));
    gp_wbuf *b = calloc((size_t)ns, sizeof(*b));
    if (!cnt || !p || !b) {
        free(cnt);
        free(p);
        free(b);
        return; /* orphans for fsck */
    }
    for (size_t done = 0; done < n;) {
        /* up to GP_MAX_DELETES per server in this round */
        size_t next = done;
        for (int s = 0; s < ns; s++) {
            gp_wbuf_init(&b[s]);
            cnt[s] = 0;
        }
        for (; next < n; next++) {
            uint32_t s = q[next].server;
            if (s >= (uint32_t)ns)
                continue;
            if (cnt[s] == GP_MAX_DELETES)
                break;
            gp_put_u64(&b[s], q[next].hid);
            cnt[s]++;
        }
        for (int s = 0; s < ns; s++)
            if (cnt[s])
                gc_SUB_DELETE_MANY_send(
                    gc_server_conn(s),
                    &(gp_SUB_DELETE_MANY_req){.hids = b[s].data,
                                              .hids_len = (uint32_t)b[s].len},
                    &p[s]);
        for (int s = 0; s < ns; s++) {
            if (!cnt[s])
                continue;
            int rc = gc_SUB_DELETE_MANY_recv(&p[s], NULL, NULL);
            if (rc == -ENOSYS) /* an older server: one at a time */
                for (size_t i = done; i < next; i++)
                    if (q[i].server == (uint32_t)s)
                        gc_SUB_DELETE_call(
                            gc_server_conn(s),
                            &(gp_SUB_DELETE_req){.hid = q[i].hid}, NULL, NULL);
            /* other errors: orphans for `galley fsck` */
        }
        for (int s = 0; s < ns; s++)
            gp_wbuf_free(&b[s]);
        done = next;
    }
    free(cnt);
    free(p);
    free(b);
}

static void *reclaimer(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&rq.lock);
    while (!rq.stop) {
        if (!rq.n) {
            pthread_cond_wait(&rq.cv, &rq.lock);
            continue;
        }
        /* let a batch gather (every remove's queueing wakes this) */
        struct timespec ts = g_deadline_ms(GC_RECLAIM_MS);
        while (!rq.stop && rq.n < GP_MAX_DELETES &&
               pthread_cond_timedwait(&rq.cv, &rq.lock, &ts) != ETIMEDOUT)
            ;
        rq_item *q = rq.q;
        size_t n = rq.n;
        rq.q = NULL;
        rq.n = rq.cap = 0;
        pthread_mutex_unlock(&rq.lock);
        reclaim_send(q, n);
        free(q);
        pthread_mutex_lock(&rq.lock);
    }
    rq.running = false;
    pthread_cond_broadcast(&rq.cv);
    pthread_mutex_unlock(&rq.lock);
    return NULL;
}

/* A forked child: its parent's queue and thread are not its own
 * (rq.lock). */
static void reclaim_check_fork(void)
{
    if (rq.pid == getpid())
        return;
    free(rq.q);
    rq.q = NULL;
    rq.n = rq.cap = 0;
    rq.running = rq.stop = false;
    rq.pid = getpid();
}

void gc_reclaim_wait(void)
{
    pthread_mutex_lock(&rq.lock);
    reclaim_check_fork();
    rq.stop = true;
    pthread_cond_broadcast(&rq.cv);
    while (rq.running)
        pthread_cond_wait(&rq.cv, &rq.lock);
    rq_item *q = rq.q;
    size_t n = rq.n;
    rq.q = NULL;
    rq.n = rq.cap = 0;
    rq.stop = false;
    pthread_mutex_unlock(&rq.lock);
    reclaim_send(q, n);
    free(q);
}

/* Queue the subfile deletes of rec (one copy): 0, or -ENOMEM (then
 * nothing was queued). */
static int reclaim_queue(const gp_record *rec)
{
    pthread_mutex_lock(&rq.lock);
    reclaim_check_fork();
    int rc = 0;
    if (rq.n + rec->nsub > rq.cap) {
        size_t cap = rq.cap ? rq.cap * 2 : 256;
        while (cap < rq.n + rec->nsub)
            cap *= 2;
        rq_item *q = realloc(rq.q, cap * sizeof(*q));
        if (!q)
            rc = -ENOMEM;
        else {
            rq.q = q;
            rq.cap = cap;
        }
    }
    if (!rc && !rq.running && !rq.stop) {
        if (pthread_create(&rq.thread, NULL, reclaimer, NULL) == 0) {
            pthread_detach(rq.thread);
            rq.running = true;
        } else {
            rc = -EAGAIN;
        }
    }
    for (uint32_t i = 0; !rc && i < rec->nsub; i++)
        rq.q[rq.n++] = (rq_item){.server = rec->server[i], .hid = rec->hid[i]};
    if (!rc)
        pthread_cond_broadcast(&rq.cv);
    pthread_mutex_unlock(&rq.lock);
    return rc;
}

int gc_file_delete(const char *name)
{
    gp_record *rec;
    int rc = gc_named_record(name, &rec);
    if (rc)
        return rc;
    /* The record goes first (the name is free at once); subfile headers
     * follow: a file of one copy's in the background (reclaim_send), a
     * replicated file's before the answer.  A subfile on a dead server
     * stays behind as an orphan on that server rather than blocking the
     * delete (reported for a replicated file's first copy... see below;
     * not for a file of one copy, whose record is already gone). */
    gc_striped_pin(name); /* (its own open files keep their data) */
    gc_rcache_drop(name);
    rc = gc_NS_REMOVE_call(gc_server_conn(gc_meta_server(name)),
                           &(gp_NS_REMOVE_req){.name = name},
                           &(gp_NS_REMOVE_rep){.rec = rec}, NULL);
    if (rc == GFS_ESERVERDOWN || rc == GFS_ETIMEDOUT) {
        /* its metadata server is lost: the record's other copies */
        int k = gc_repl_lookup(name, rec);
        if (!k && rec->repl.ncopy > 1)
            rc = 0;
    }
    if (rc)
        goto out_free;
    /* A replicated file: its record's other copies, then every copy of
     * every subfile with the rest. */
    int ncopy = rec->repl.ncopy > 1 ? rec->repl.ncopy : 1;
    if (ncopy > 1)
        gc_repl_remove_others(name);
    else if (reclaim_queue(rec) == 0)
        goto out_free; /* one copy: its subfiles go in the background */
    /* every subfile (and copy) at once: one round trip */
    records_durable();
    uint32_t n = rec->nsub * (uint32_t)ncopy;
    gc_pending *p = calloc(n ? n : 1, sizeof(*p));
    bool *sent = calloc(n ? n : 1, sizeof(*sent));
    if (!p || !sent) {
        free(p);
        free(sent);
        rc = -ENOMEM;
        goto out_free;
    }
    for (uint32_t i = 0; i < rec->nsub; i++)
        for (int c = 0; c < ncopy; c++) {
            uint32_t server = c ? rec->repl.server[i][c] : rec->server[i];
            uint64_t hid = c ? rec->repl.hid[i][c] : rec->hid[i];
            if (server >= (uint32_t)gc_g.nservers || (c && !hid))
                continue;
            sent[i * (uint32_t)ncopy + (uint32_t)c] = true;
            gc_SUB_DELETE_send(gc_server_conn((int)server),
                               &(gp_SUB_DELETE_req){.hid = hid},
                               &p[i * (uint32_t)ncopy + (uint32_t)c]);
        }
    for (uint32_t j = 0; j < n; j++) {
        if (!sent[j])
            continue;
        int k = gc_SUB_DELETE_recv(&p[j], NULL, NULL);
        if (k && k != -ENOENT && !rc && ncopy <= 1)
            rc = k; /* (a replicated file's copy may be on a lost server) */
    }
    free(sent);
    free(p);
out_free:
    free(rec);
    return rc;
}
