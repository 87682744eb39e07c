/*
 * lease.c -- keeping byte-range locks alive (servers/rangelock.c).
 *
 * A server lets another client take over a lock whose holder has sent it
 * nothing for its lock lease (galleyd --lock-lease, default 30 s).  Any
 * request renews; so that a process that holds a lock while it computes
 * never loses it, a renewal thread sends a PING every
 * GALLEY_LOCK_RENEW_MS (default 1000) milliseconds to each server where
 * this process holds locks.  A process that is stopped or hung sends
 * nothing, and its locks expire.
 *
 * LOCK locks are counted here (gc_lease_hold); for POSIX locks, which split
 * and merge on the server, each PLOCK / PRELEASE reply says how many the
 * connection still holds there (gc_lease_posix).
 *
 * Threads: gc_lease_hold and gc_lease_posix are called by any application
 * thread after LOCK / UNLOCK / PLOCK / PRELEASE; it starts the (detached)
 * renewal thread on the first lock held, and the thread exits when none are.
 * gc_lease_stop (gfs_finalize, before the connections go) waits until it has.
 * Locks: lease.lock guards everything here; it is never held across a
 * request.
 */
#include "internal.h"
#include "gclock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    int *held;       /* LOCK locks held per server */
    uint32_t *posix; /* POSIX locks held per server (the server's count) */
    int nheld;
    long total;
    bool running, stop;
    pthread_t thread;
} lease = {.lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void *renewer(void *arg)
{
    long ms = (long)g_config_int(G_CFG_LOCK_RENEW_MS);
    pthread_mutex_lock(&lease.lock);
    while (!lease.stop && lease.total > 0) {
        struct timespec ts = g_deadline_ms(ms);
        pthread_cond_timedwait(&lease.cv, &lease.lock, &ts);
        if (lease.stop || lease.total == 0)
            break;
        int n = lease.nheld;
        int *which = malloc(sizeof(int) * (size_t)(n ? n : 1));
        int k = 0;
        for (int i = 0; which && i < n; i++)
            if (lease.held[i] > 0 || lease.posix[i] > 0)
                which[k++] = i;
        pthread_mutex_unlock(&lease.lock);
        for (int i = 0; i < k; i++) {
            gc_conn *c = gc_server_conn(which[i]);
            if (!c)
                continue;
            /* errors: the next try */
            gc_PING_call(c, &(gp_PING_req){}, NULL, NULL);
        }
        free(which);
        pthread_mutex_lock(&lease.lock);
    }
    lease.running = false;
    pthread_cond_broadcast(&lease.cv);
    pthread_mutex_unlock(&lease.lock);
    return NULL;
}

/* Make room for server (lease.lock held); false if out of memory. */
static bool ensure_server(int server)
{
    if (server < lease.nheld)
        return true;
    int n = server + 1;
    int *p = realloc(lease.held, sizeof(int) * (size_t)n);
    if (!p)
        return false;
    lease.held = p;
    uint32_t *q = realloc(lease.posix, sizeof(uint32_t) * (size_t)n);
    if (!q)
        return false;
    lease.posix = q;
    memset(p + lease.nheld, 0, sizeof(int) * (size_t)(n - lease.nheld));
    memset(q + lease.nheld, 0, sizeof(uint32_t) * (size_t)(n - lease.nheld));
    lease.nheld = n;
    return true;
}

/* Start the renewal thread if locks are held and it is not running
 * (lease.lock held). */
static void maybe_start(void)
{
    if (lease.total > 0 && !lease.running) {
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        lease.stop = false;
        lease.running = pthread_create(&lease.thread, &at, renewer, NULL) == 0;
        pthread_attr_destroy(&at);
    }
}

void gc_lease_after_fork(void)
{
    pthread_mutex_init(&lease.lock, NULL); /* the only thread now */
    pthread_cond_init(&lease.cv, NULL);
    for (int i = 0; i < lease.nheld; i++) {
        lease.held[i] = 0;
        lease.posix[i] = 0;
    }
    lease.total = 0;
    lease.running = false; /* the renewal thread is the parent's */
    lease.stop = false;
}

void gc_lease_hold(int server, int delta)
{
    if (server < 0)
        return;
    pthread_mutex_lock(&lease.lock);
    if (!ensure_server(server)) {
        pthread_mutex_unlock(&lease.lock);
        return; /* no renewals: the lock still works within a lease */
    }
    if (delta < 0 && lease.held[server] + delta < 0)
        delta = -lease.held[server];
    lease.held[server] += delta;
    lease.total += delta;
    maybe_start();
    pthread_mutex_unlock(&lease.lock);
}

void gc_lease_posix(int server, uint32_t held)
{
    if (server < 0)
        return;
    pthread_mutex_lock(&lease.lock);
    if (ensure_server(server)) {
        lease.total += (held > 0) - (lease.posix[server] > 0);
        lease.posix[server] = held;
        maybe_start();
    }
    pthread_mutex_unlock(&lease.lock);
}

void gc_lease_stop(void)
{
    pthread_mutex_lock(&lease.lock);
    lease.stop = true;
    pthread_cond_broadcast(&lease.cv);
    while (lease.running)
        pthread_cond_wait(&lease.cv, &lease.lock);
    free(lease.held);
    lease.held = NULL;
    free(lease.posix);
    lease.posix = NULL;
    lease.nheld = 0;
    lease.total = 0;
    lease.stop = false;
    pthread_mutex_unlock(&lease.lock);
}
