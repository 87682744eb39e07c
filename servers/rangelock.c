/*
 * rangelock.c -- LOCK / UNLOCK: byte-range locks on a subfile, held by a
 * connection (for MPI-IO atomic mode and similar); BLOCK_LOCK /
 * BLOCK_UNLOCK: the same over block numbers, in a space of their own (the
 * locality layout's claims: neither space ever waits on the other).
 *
 * Threads: handler threads.  locktab.lock is a leaf lock; LOCK waits on
 * locktab.cond while holding nothing else.
 *
 * Semantics:
 *   - A lock covers [off, off + len); len == 0 (or a range running past
 *     2^64) means "to the end of the subfile, whatever its size", as in
 *     fcntl.
 *   - Shared locks (excl = 0) are compatible with each other; an exclusive
 *     lock conflicts with any overlapping lock of another connection.
 *     Locks of the same connection never conflict with each other (the
 *     connection is the owner, like a process for fcntl locks), so the
 *     threads of one client cannot deadlock their own connection.
 *   - LOCK waits until the range is compatible, but at most LOCK_WAIT_MS:
 *     then it answers -EAGAIN and the client asks again, so that a long
 *     wait for a lock never looks like a dead server to a client with a
 *     request timeout.  The wait also ends if the client hangs up or the
 *     server stops (the handler then drops the connection and with it
 *     every lock it holds).
 *   - UNLOCK releases one lock of this connection with exactly that
 *     (hid, off, len); -ENOLCK if there is none.  Every lock of a
 *     connection is released when it drops.
 *   - LOCK on a subfile that does not exist (or is deleted) gives
 *     GFS_ESTALE; -ENOLCK past GSRV_MAX_LOCKS_PER_CONN locks.
 *
 * Leases: a lock lives as long as its holder shows signs of life.  Every
 * request a connection sends renews the leases of all its locks
 * (gsrv_locks_renew, from the handler), and libgalley sends one a second
 * to each server where it holds locks (libgalley/lease.c), so a running
 * client -- even one that computes for an hour between LOCK and UNLOCK --
 * keeps them.  A holder that sends nothing for --lock-lease seconds
 * (default 30: stopped, swapped out, hung) loses them when another
 * connection waits for a conflicting lock: that waiter removes the expired
 * locks (logged) and proceeds; the holder's later UNLOCK answers -ENOLCK.
 *
 * Since one handler thread serves a connection in order, a LOCK that waits
 * also holds up the connection's later requests (for at most LOCK_WAIT_MS
 * per attempt).
 */
#include "gsrv_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#define LOCK_POLL_MS 200  /* re-check for a hung-up client this often */
#define LOCK_WAIT_MS 1000 /* then answer -EAGAIN; the client asks again */

/* The lock spaces: byte ranges (LOCK) and block numbers (BLOCK_LOCK, the
 * locality layout's claims).  Locks of different spaces never conflict. */
enum { SPACE_BYTES, SPACE_BLOCKS };

typedef struct rlock {
    struct rlock *next;
    uint64_t conn;
    uint64_t hid;
    int space;
    uint64_t start, end; /* end == UINT64_MAX: to the end */
    bool excl;
    uint64_t renewed_ns; /* the holder's last request (monotonic) */
} rlock;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool init;
    rlock *head;
} locktab = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void range_of(uint64_t off, uint64_t len, uint64_t *start, uint64_t *end)
{
    *start = off;
    *end = (len == 0 || len > UINT64_MAX - off) ? UINT64_MAX : off + len;
}

/* Lazily set up the condvar on the monotonic clock (under locktab.lock). */
static void ensure_init(void)
{
    if (locktab.init)
        return;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&locktab.cond, &ca);
    pthread_condattr_destroy(&ca);
    locktab.init = true;
}

static bool conflicts(const rlock *x)
{
    for (rlock *l = locktab.head; l; l = l->next)
        if (l->hid == x->hid && l->space == x->space && l->conn != x->conn &&
            l->start < x->end && x->start < l->end && (x->excl || l->excl))
            return true;
    return false;
}

static void add_ms(struct timespec *ts, long ms)
{
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static bool ts_before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec ||
           (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Remove the locks whose holders have sent nothing for the lease, except
 * conn's own (locktab.lock held).  True when some went. */
static bool expire_locks(uint64_t conn)
{
    uint64_t lease = (uint64_t)gsrv_g.lock_lease_ms * 1000000ull;
    uint64_t now = now_ns();
    bool any = false;
    rlock **pp = &locktab.head;
    while (*pp) {
        rlock *l = *pp;
        if (l->conn != conn && now - l->renewed_ns > lease) {
            gsrv_log(0,
                     "lock lease expired: connection %llu held "
                     "[%llu, %llu) of sub/%llu without a sign of life for "
                     "%d s",
                     (unsigned long long)l->conn, (unsigned long long)l->start,
                     (unsigned long long)l->end, (unsigned long long)l->hid,
                     gsrv_g.lock_lease_ms / 1000);
            *pp = l->next;
            free(l);
            any = true;
        } else {
            pp = &l->next;
        }
    }
    return any;
}

void gsrv_locks_renew(uint64_t conn_id)
{
    uint64_t now = now_ns();
    pthread_mutex_lock(&locktab.lock);
    for (rlock *l = locktab.head; l; l = l->next)
        if (l->conn == conn_id)
            l->renewed_ns = now;
    pthread_mutex_unlock(&locktab.lock);
}

static size_t count_conn(uint64_t conn)
{
    size_t n = 0;
    for (rlock *l = locktab.head; l; l = l->next)
        n += l->conn == conn;
    return n;
}

static int lock(gsrv_conn *c, int space, uint64_t hid, uint64_t off,
                uint64_t len, uint8_t excl)
{
    int rc = 0;
    if (excl > 1)
        return -EINVAL;
    if (!gsrv_sub_exists(hid))
        return GFS_ESTALE;
    rlock *l = calloc(1, sizeof(*l));
    if (!l)
        return -ENOMEM;
    l->conn = c->id;
    l->hid = hid;
    l->space = space;
    l->excl = excl;
    range_of(off, len, &l->start, &l->end);

    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    add_ms(&deadline, LOCK_WAIT_MS);

    pthread_mutex_lock(&locktab.lock);
    ensure_init();
    if (count_conn(c->id) >= GSRV_MAX_LOCKS_PER_CONN) {
        rc = -ENOLCK;
        goto out_unlock;
    }
    while (conflicts(l) && !(expire_locks(c->id) && !conflicts(l))) {
        if (gsrv_g.stopping) {
            rc = GFS_ESERVERDOWN;
            goto out_unlock;
        }
        if (gsrv_conn_hung_up(c)) {
            rc = GFS_ESERVERDOWN; /* nobody will read it */
            goto out_unlock;
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        if (ts_before(&deadline, &ts)) {
            rc = -EAGAIN;
            goto out_unlock;
        }
        add_ms(&ts, LOCK_POLL_MS);
        if (ts_before(&deadline, &ts))
            ts = deadline;
        pthread_cond_timedwait(&locktab.cond, &locktab.lock, &ts);
    }
    l->renewed_ns = now_ns();
    l->next = locktab.head;
    locktab.head = l;
    l = NULL;
    c->holds_locks = true;
out_unlock:
    pthread_mutex_unlock(&locktab.lock);
    free(l);
    return rc;
}

static int unlock(gsrv_conn *c, int space, uint64_t hid, uint64_t off,
                  uint64_t len)
{
    uint64_t start, end;
    range_of(off, len, &start, &end);
    rlock *found = NULL;
    pthread_mutex_lock(&locktab.lock);
    ensure_init();
    for (rlock **pp = &locktab.head; *pp; pp = &(*pp)->next) {
        rlock *l = *pp;
        if (l->conn == c->id && l->hid == hid && l->space == space &&
            l->start == start && l->end == end) {
            *pp = l->next;
            found = l;
            break;
        }
    }
    if (found)
        pthread_cond_broadcast(&locktab.cond);
    pthread_mutex_unlock(&locktab.lock);
    if (!found)
        return -ENOLCK;
    free(found);
    return 0;
}

int gsrv_op_LOCK(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    (void)rep;
    gp_LOCK_req m;
    int rc = gp_LOCK_req_decode(req, &m);
    return rc ? rc : lock(c, SPACE_BYTES, m.hid, m.off, m.len, m.excl);
}

int gsrv_op_UNLOCK(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    (void)rep;
    gp_UNLOCK_req m;
    int rc = gp_UNLOCK_req_decode(req, &m);
    return rc ? rc : unlock(c, SPACE_BYTES, m.hid, m.off, m.len);
}

int gsrv_op_BLOCK_LOCK(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    (void)rep;
    gp_BLOCK_LOCK_req m;
    int rc = gp_BLOCK_LOCK_req_decode(req, &m);
    return rc ? rc : lock(c, SPACE_BLOCKS, m.hid, m.off, m.len, m.excl);
}

int gsrv_op_BLOCK_UNLOCK(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    (void)rep;
    gp_BLOCK_UNLOCK_req m;
    int rc = gp_BLOCK_UNLOCK_req_decode(req, &m);
    return rc ? rc : unlock(c, SPACE_BLOCKS, m.hid, m.off, m.len);
}

void gsrv_locks_drop_conn(uint64_t conn_id)
{
    rlock *dead = NULL;
    pthread_mutex_lock(&locktab.lock);
    ensure_init();
    rlock **pp = &locktab.head;
    while (*pp) {
        rlock *l = *pp;
        if (l->conn == conn_id) {
            *pp = l->next;
            l->next = dead;
            dead = l;
        } else {
            pp = &l->next;
        }
    }
    if (dead)
        pthread_cond_broadcast(&locktab.cond);
    pthread_mutex_unlock(&locktab.lock);
    while (dead) {
        rlock *next = dead->next;
        free(dead);
        dead = next;
    }
}

void gsrv_locks_wake_all(void)
{
    pthread_mutex_lock(&locktab.lock);
    ensure_init();
    pthread_cond_broadcast(&locktab.cond);
    pthread_mutex_unlock(&locktab.lock);
}
