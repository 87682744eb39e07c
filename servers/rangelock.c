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
 *
 * POSIX locks (PLOCK, PGETLK, PRELEASE: fcntl, lockf and flock through
 * libgalley-posix.so and galley mount) live in the same table.  A POSIX
 * lock belongs to (connection, owner): owner 0 is the client process,
 * others its open file descriptions (or, from a FUSE daemon, the kernel's
 * lock owners), so two owners of one connection conflict as two processes
 * would, while a LOCK lock (no owner) still never conflicts with its own
 * connection.  An owner holds at most one lock per byte: PLOCK replaces
 * the owner's locks over its range (trimming and splitting those that
 * stick out) and merges it with touching locks of the same type, as the
 * kernel does, so F_GETLK and unlocks of sub-ranges answer as fcntl does.
 * GP_PLOCK_WHOLE locks (flock) are a space of their own.  A PLOCK that
 * must wait conflicts with another connection's lock waits as LOCK does
 * but for at most PLOCK_WAIT_MS (a waiting handler holds up its
 * connection's other requests -- in a FUSE daemon, other processes'); one
 * that conflicts only with its own connection's locks answers -EAGAIN at
 * once, since their unlock can only come after it on this connection.
 * Deadlocks between POSIX owners are not detected (no EDEADLK).
 */
#include "gsrv_internal.h"
#include "gclock.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#define LOCK_POLL_MS 200  /* re-check for a hung-up client this often */
#define LOCK_WAIT_MS 1000 /* then answer -EAGAIN; the client asks again */
#define PLOCK_WAIT_MS 200 /* the same for PLOCK with GP_PLOCK_WAIT */

typedef struct rlock {
    struct rlock *next;
    uint64_t conn;
    uint64_t hid;
    uint64_t start, end; /* end == UINT64_MAX: to the end */
    bool excl;
    bool posix;          /* PLOCK: held by (conn, owner); LOCK: by conn */
    bool whole;          /* GP_PLOCK_WHOLE (flock): apart from range locks */
    int space;           /* SPACE_BYTES, or SPACE_BLOCKS (BLOCK_LOCK) */
    uint64_t owner;      /* posix only */
    uint32_t pid;        /* posix only: what PGETLK reports */
    uint64_t renewed_ns; /* the holder's last request (monotonic) */
} rlock;

/* Who asks: LOCK (posix false) or PLOCK/PGETLK for an owner. */
/* The lock spaces: byte ranges (LOCK, PLOCK) and block numbers (BLOCK_LOCK,
 * the locality layout's claims).  Locks of different spaces never conflict,
 * so no byte offset is given up to claims. */
enum { SPACE_BYTES, SPACE_BLOCKS };

typedef struct asker {
    uint64_t conn, owner;
    bool posix, whole;
    int space;
} asker;

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

/* Is l the asker's own (never a conflict)?  A connection's LOCK locks are
 * its own for every request of it; POSIX owners of one connection are
 * distinct holders. */
static bool own_lock(const rlock *l, const asker *a)
{
    if (l->conn != a->conn)
        return false;
    return !a->posix || !l->posix || l->owner == a->owner;
}

/* The first lock that keeps the asker from [start, end) (excl or shared). */
static rlock *first_conflict(const asker *a, uint64_t hid, uint64_t start,
                             uint64_t end, bool excl)
{
    for (rlock *l = locktab.head; l; l = l->next)
        if (l->hid == hid && l->space == a->space && l->whole == a->whole &&
            !own_lock(l, a) && l->start < end && start < l->end &&
            (excl || l->excl))
            return l;
    return NULL;
}

static bool ts_before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec ||
           (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* Remove the locks whose holders have sent nothing for the lease, except
 * conn's own (locktab.lock held).  True when some went. */
static bool expire_locks(uint64_t conn)
{
    uint64_t lease = (uint64_t)gsrv_g.lock_lease_ms * 1000000ull;
    uint64_t now = g_now_ns();
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
    uint64_t now = g_now_ns();
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

/* Wait (locktab.lock held) until the asker may hold [start, end), for at
 * most wait_ms (0: not at all); expired leases of others are removed on
 * the way.  0, -EAGAIN, or GFS_ESERVERDOWN (server stopping, client gone). */
static int wait_compatible(gsrv_conn *c, const asker *a, uint64_t hid,
                           uint64_t start, uint64_t end, bool excl,
                           long wait_ms)
{
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    g_ts_add_ms(&deadline, wait_ms);
    for (;;) {
        rlock *l = first_conflict(a, hid, start, end, excl);
        if (!l)
            return 0;
        if (expire_locks(a->conn) && !first_conflict(a, hid, start, end, excl))
            return 0;
        if (gsrv_g.stopping)
            return GFS_ESERVERDOWN;
        if (gsrv_conn_hung_up(c))
            return GFS_ESERVERDOWN; /* nobody will read it */
        /* Another owner of this very connection: its unlock can only come
         * after this request, so waiting here would wait for nothing. */
        l = first_conflict(a, hid, start, end, excl);
        if (l && l->conn == a->conn)
            return -EAGAIN;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        if (wait_ms <= 0 || ts_before(&deadline, &ts))
            return -EAGAIN;
        g_ts_add_ms(&ts, LOCK_POLL_MS);
        if (ts_before(&deadline, &ts))
            ts = deadline;
        pthread_cond_timedwait(&locktab.cond, &locktab.lock, &ts);
    }
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
    asker a = {.conn = c->id, .space = space};

    pthread_mutex_lock(&locktab.lock);
    ensure_init();
    if (count_conn(c->id) >= GSRV_MAX_LOCKS_PER_CONN) {
        rc = -ENOLCK;
        goto out_unlock;
    }
    rc = wait_compatible(c, &a, hid, l->start, l->end, l->excl, LOCK_WAIT_MS);
    if (rc)
        goto out_unlock;
    l->renewed_ns = g_now_ns();
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
        if (l->conn == c->id && !l->posix && l->hid == hid &&
            l->space == space && l->start == start && l->end == end) {
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

int gsrv_do_LOCK(gsrv_conn *c, const gp_LOCK_req *m, gp_LOCK_rep *r,
                 gsrv_call *k)
{
    return lock(c, SPACE_BYTES, m->hid, m->off, m->len, m->excl);
}

int gsrv_do_UNLOCK(gsrv_conn *c, const gp_UNLOCK_req *m, gp_UNLOCK_rep *r,
                   gsrv_call *k)
{
    return unlock(c, SPACE_BYTES, m->hid, m->off, m->len);
}

int gsrv_do_BLOCK_LOCK(gsrv_conn *c, const gp_BLOCK_LOCK_req *m,
                       gp_BLOCK_LOCK_rep *r, gsrv_call *k)
{
    return lock(c, SPACE_BLOCKS, m->hid, m->off, m->len, m->excl);
}

int gsrv_do_BLOCK_UNLOCK(gsrv_conn *c, const gp_BLOCK_UNLOCK_req *m,
                         gp_BLOCK_UNLOCK_rep *r, gsrv_call *k)
{
    return unlock(c, SPACE_BLOCKS, m->hid, m->off, m->len);
}

/* Take every lock of connection conn out of the table (locktab.lock
 * held), or, with posix, only its POSIX locks of that owner on that
 * subfile; waiters are woken.  The locks taken out, a list for
 * free_locks. */
static rlock *unlink_locks(uint64_t conn, const rlock *posix)
{
    rlock *dead = NULL;
    rlock **pp = &locktab.head;
    while (*pp) {
        rlock *l = *pp;
        if (l->conn == conn &&
            (!posix ||
             (l->posix && l->owner == posix->owner && l->hid == posix->hid))) {
            *pp = l->next;
            l->next = dead;
            dead = l;
        } else {
            pp = &l->next;
        }
    }
    if (dead)
        pthread_cond_broadcast(&locktab.cond);
    return dead;
}

static void free_locks(rlock *dead)
{
    while (dead) {
        rlock *next = dead->next;
        free(dead);
        dead = next;
    }
}

void gsrv_locks_drop_conn(uint64_t conn_id)
{
    pthread_mutex_lock(&locktab.lock);
    ensure_init();
    rlock *dead = unlink_locks(conn_id, NULL);
    pthread_mutex_unlock(&locktab.lock);
    free_locks(dead);
}

void gsrv_locks_wake_all(void)
{
    pthread_mutex_lock(&locktab.lock);
    ensure_init();
    pthread_cond_broadcast(&locktab.cond);
    pthread_mutex_unlock(&locktab.lock);
}

/* ------------------------------------------------------------------------
 * POSIX locks: PLOCK, PGETLK, PRELEASE
 * ------------------------------------------------------------------------ */

static bool owner_lock(const rlock *l, const asker *a, uint64_t hid)
{
    return l->posix && l->conn == a->conn && l->owner == a->owner &&
           l->hid == hid && l->whole == a->whole;
}

static uint32_t count_posix(uint64_t conn)
{
    uint32_t n = 0;
    for (rlock *l = locktab.head; l; l = l->next)
        n += l->conn == conn && l->posix;
    return n;
}

/* Set the asker's lock state over [start, end) to type (locktab.lock
 * held, compatibility checked): the owner's locks there are trimmed, split
 * or removed, and a new lock is merged with touching ones of its type.
 * spare[0..1] are preallocated nodes; used ones are set to NULL. */
static void plock_apply(const asker *a, uint64_t hid, uint64_t start,
                        uint64_t end, int type, uint32_t pid, rlock **spare)
{
    uint64_t now = g_now_ns();
    rlock **pp = &locktab.head;
    while (*pp) {
        rlock *l = *pp;
        if (!owner_lock(l, a, hid) || l->end <= start || end <= l->start) {
            pp = &l->next;
            continue;
        }
        if (l->start < start && l->end > end) { /* split: keep both ends */
            rlock *tail = spare[0];
            spare[0] = NULL;
            *tail = *l;
            tail->start = end;
            tail->next = l->next;
            l->next = tail;
            l->end = start;
            pp = &tail->next;
        } else if (l->start < start) {
            l->end = start;
            pp = &l->next;
        } else if (l->end > end) {
            l->start = end;
            pp = &l->next;
        } else {
            *pp = l->next;
            free(l);
        }
    }
    if (type == GP_PLOCK_UNLOCK)
        return;
    bool excl = type == GP_PLOCK_EXCL;
    /* Merge with the owner's touching locks of the same type. */
    pp = &locktab.head;
    while (*pp) {
        rlock *l = *pp;
        if (owner_lock(l, a, hid) && l->excl == excl &&
            (l->end == start || l->start == end)) {
            if (l->end == start)
                start = l->start;
            else
                end = l->end;
            *pp = l->next;
            free(l);
        } else {
            pp = &l->next;
        }
    }
    rlock *n = spare[1];
    spare[1] = NULL;
    *n = (rlock){.conn = a->conn,
                 .hid = hid,
                 .start = start,
                 .end = end,
                 .excl = excl,
                 .posix = true,
                 .whole = a->whole,
                 .owner = a->owner,
                 .pid = pid,
                 .renewed_ns = now,
                 .next = locktab.head};
    locktab.head = n;
}

/* The fields PLOCK and PGETLK share (POSIX_REQ(m) of either request), and
 * what posix_check makes of them: the asker and its range. */
typedef struct posix_req {
    uint64_t hid, owner, off, len;
    uint8_t type, flags;
    asker a;
    uint64_t start, end;
} posix_req;
#define POSIX_REQ(m)                                                           \
    ((posix_req){.hid = (m)->hid,                                              \
                 .owner = (m)->owner,                                          \
                 .off = (m)->off,                                              \
                 .len = (m)->len,                                              \
                 .type = (m)->type,                                            \
                 .flags = (m)->flags})

/* PLOCK's and PGETLK's prologue: the type at least min_type and at most
 * GP_PLOCK_EXCL, no flag but those of flags (else -EINVAL); the subfile
 * there (else GFS_ESTALE); p's asker (an owner of c) and range set. */
static int posix_check(gsrv_conn *c, posix_req *p, uint8_t min_type,
                       uint8_t flags)
{
    if (p->type < min_type || p->type > GP_PLOCK_EXCL || (p->flags & ~flags))
        return -EINVAL;
    if (!gsrv_sub_exists(p->hid))
        return GFS_ESTALE;
    p->a = (asker){.conn = c->id,
                   .owner = p->owner,
                   .posix = true,
                   .whole = (p->flags & GP_PLOCK_WHOLE) != 0};
    range_of(p->off, p->len, &p->start, &p->end);
    return 0;
}

int gsrv_do_PLOCK(gsrv_conn *c, const gp_PLOCK_req *m, gp_PLOCK_rep *r,
                  gsrv_call *k)
{
    posix_req p = POSIX_REQ(m);
    int rc =
        posix_check(c, &p, GP_PLOCK_UNLOCK, GP_PLOCK_WAIT | GP_PLOCK_WHOLE);
    if (rc)
        return rc;
    rlock *spare[2] = {calloc(1, sizeof(rlock)), calloc(1, sizeof(rlock))};
    if (!spare[0] || !spare[1]) {
        rc = -ENOMEM;
        goto out_free;
    }
    pthread_mutex_lock(&locktab.lock);
    ensure_init();
    if (p.type != GP_PLOCK_UNLOCK) {
        if (count_conn(c->id) + 2 > GSRV_MAX_LOCKS_PER_CONN) {
            rc = -ENOLCK;
            goto out_unlock;
        }
        rc = wait_compatible(c, &p.a, p.hid, p.start, p.end,
                             p.type == GP_PLOCK_EXCL,
                             (p.flags & GP_PLOCK_WAIT) ? PLOCK_WAIT_MS : 0);
        if (rc)
            goto out_unlock;
    }
    plock_apply(&p.a, p.hid, p.start, p.end, p.type, m->pid, spare);
    /* Anything released or downgraded may let a waiter in. */
    pthread_cond_broadcast(&locktab.cond);
    r->held = count_posix(c->id);
    if (r->held)
        c->holds_locks = true;
out_unlock:
    pthread_mutex_unlock(&locktab.lock);
out_free:
    free(spare[0]);
    free(spare[1]);
    return rc;
}

int gsrv_do_PGETLK(gsrv_conn *c, const gp_PGETLK_req *m, gp_PGETLK_rep *r,
                   gsrv_call *k)
{
    posix_req p = POSIX_REQ(m);
    int rc = posix_check(c, &p, GP_PLOCK_SHARED, GP_PLOCK_WHOLE);
    if (rc)
        return rc;
    r->type = GP_PLOCK_UNLOCK;
    pthread_mutex_lock(&locktab.lock);
    ensure_init();
    expire_locks(c->id);
    rlock *l =
        first_conflict(&p.a, p.hid, p.start, p.end, p.type == GP_PLOCK_EXCL);
    if (l) {
        r->type = l->excl ? GP_PLOCK_EXCL : GP_PLOCK_SHARED;
        r->off = l->start;
        r->len = l->end == UINT64_MAX ? 0 : l->end - l->start;
        /* A LOCK lock has no process to name: report -1, as for an open
         * file description's lock. */
        r->pid = l->posix ? l->pid : UINT32_MAX;
    }
    pthread_mutex_unlock(&locktab.lock);
    return 0;
}

int gsrv_do_PRELEASE(gsrv_conn *c, const gp_PRELEASE_req *m, gp_PRELEASE_rep *r,
                     gsrv_call *k)
{
    pthread_mutex_lock(&locktab.lock);
    ensure_init();
    rlock *dead =
        unlink_locks(c->id, &(rlock){.owner = m->owner, .hid = m->hid});
    r->held = count_posix(c->id);
    pthread_mutex_unlock(&locktab.lock);
    free_locks(dead);
    return 0;
}
