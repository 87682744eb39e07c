/*
 * striped_lock.c -- a striped file's byte-range locks (gfs_striped_lock,
 * gfs_striped_plock*) and named counters (gfs_striped_fetch_*), held at the
 * file's home server.
 *
 * Threads: any; gc_st_lock only around table access (striped_internal.h).
 */
#include "striped_internal.h"

#include "gclock.h"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------- locks and counters ------- */

/* Subfile 0's server and header id of striped file sid: home of a file's
 * locks/counters.  -EINVAL when the sid is good but bad_args (the caller's
 * check of its other arguments) is true. */
static int home_of(int sid, bool bad_args, int *server, uint64_t *hid)
{
    gc_striped s;
    int rc = gc_st_get(sid, &s);
    if (rc)
        return rc;
    if (bad_args)
        return -EINVAL;
    gc_file f;
    rc = gc_file_get(s.fid, &f);
    if (rc)
        return rc;
    *server = (int)f.rec.server[0];
    *hid = f.rec.hid[0];
    return 0;
}

int gc_range_lock(int server, uint64_t hid, int space, bool lock, uint64_t off,
                  uint64_t len, bool excl)
{
    gc_conn *c = gc_server_conn(server);
    uint8_t x = excl ? 1 : 0;
    for (;;) {
        int rc;
        if (space == GC_LOCK_BLOCKS && lock)
            rc = gc_BLOCK_LOCK_call(
                c,
                &(gp_BLOCK_LOCK_req){
                    .hid = hid, .off = off, .len = len, .excl = x},
                NULL, NULL);
        else if (space == GC_LOCK_BLOCKS)
            rc = gc_BLOCK_UNLOCK_call(
                c, &(gp_BLOCK_UNLOCK_req){.hid = hid, .off = off, .len = len},
                NULL, NULL);
        else if (lock)
            rc = gc_LOCK_call(
                c,
                &(gp_LOCK_req){.hid = hid, .off = off, .len = len, .excl = x},
                NULL, NULL);
        else
            rc = gc_UNLOCK_call(
                c, &(gp_UNLOCK_req){.hid = hid, .off = off, .len = len}, NULL,
                NULL);
        /* The server answers -EAGAIN after waiting a while, so a long
         * wait for a lock never looks like a dead server: ask again. */
        if (rc != -EAGAIN) {
            if (lock && rc == 0)
                gc_lease_hold(server, 1); /* renewed meanwhile (lease.c) */
            else if (!lock && (rc == 0 || rc == -ENOLCK))
                gc_lease_hold(server, -1);
            return rc;
        }
    }
}

int64_t gc_counter(int server, uint64_t hid, const char *key, bool set,
                   uint64_t value)
{
    gc_conn *c = gc_server_conn(server);
    uint64_t old;
    int rc;
    if (set) {
        gp_FETCH_SET_rep m = {0};
        rc = gc_FETCH_SET_call(
            c, &(gp_FETCH_SET_req){.hid = hid, .key = key, .value = value}, &m,
            NULL);
        old = m.old;
    } else {
        gp_FETCH_ADD_rep m = {0};
        rc = gc_FETCH_ADD_call(
            c, &(gp_FETCH_ADD_req){.hid = hid, .key = key, .delta = value}, &m,
            NULL);
        old = m.old;
    }
    if (rc)
        return rc;
    return old <= INT64_MAX ? (int64_t)old : GFS_EPROTO;
}

static int lock_call(int sid, bool lock, int64_t offset, int64_t len,
                     int exclusive)
{
    int server;
    uint64_t hid;
    int rc = home_of(sid, offset < 0 || len < 0, &server, &hid);
    if (rc)
        return rc;
    uint64_t ulen = len == 0 ? GP_MAX_OFFSET - (uint64_t)offset : (uint64_t)len;
    return gc_range_lock(server, hid, GC_LOCK_BYTES, lock, (uint64_t)offset,
                         ulen, exclusive != 0);
}

int gfs_striped_lock(int sid, int64_t offset, int64_t len, int exclusive)
{
    return lock_call(sid, true, offset, len, exclusive);
}

int gfs_striped_unlock(int sid, int64_t offset, int64_t len)
{
    return lock_call(sid, false, offset, len, 0);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

int gfs_striped_plock(int sid, const gfs_plock *lk, int flags)
{
    int server;
    uint64_t hid;
    int rc =
        home_of(sid,
                !lk || lk->start < 0 || lk->len < 0 ||
                    lk->type < GFS_PLOCK_UNLOCK || lk->type > GFS_PLOCK_EXCL ||
                    (flags & ~(GFS_PLOCK_WAIT | GFS_PLOCK_WHOLE)),
                &server, &hid);
    if (rc)
        return rc;
    /* The server waits a fraction of a second, then -EAGAIN: ask again.
     * An -EAGAIN that came at once (a conflict with another owner of this
     * process, whose unlock the server cannot see coming) is retried after
     * a pause that grows to 50 ms. */
    long pause = 1;
    for (;;) {
        int64_t t0 = g_now_ms();
        gp_PLOCK_rep m;
        rc = gc_PLOCK_call(gc_server_conn(server),
                           &(gp_PLOCK_req){.hid = hid,
                                           .owner = lk->owner,
                                           .off = (uint64_t)lk->start,
                                           .len = (uint64_t)lk->len,
                                           .type = (uint8_t)lk->type,
                                           .flags = (uint8_t)flags,
                                           .pid = (uint32_t)lk->pid},
                           &m, NULL);
        if (!rc) {
            gc_lease_posix(server, m.held);
            return 0;
        }
        if (rc != -EAGAIN || !(flags & GFS_PLOCK_WAIT))
            return rc;
        if (g_now_ms() - t0 < 20) {
            sleep_ms(pause);
            pause = pause < 50 ? pause * 2 : 50;
        }
    }
}

int gfs_striped_plock_test(int sid, gfs_plock *lk, int flags)
{
    int server;
    uint64_t hid;
    int rc = home_of(
        sid,
        !lk || lk->start < 0 || lk->len < 0 || lk->type < GFS_PLOCK_SHARED ||
            lk->type > GFS_PLOCK_EXCL || (flags & ~GFS_PLOCK_WHOLE),
        &server, &hid);
    if (rc)
        return rc;
    gp_PGETLK_rep m;
    rc = gc_PGETLK_call(gc_server_conn(server),
                        &(gp_PGETLK_req){.hid = hid,
                                         .owner = lk->owner,
                                         .off = (uint64_t)lk->start,
                                         .len = (uint64_t)lk->len,
                                         .type = (uint8_t)lk->type,
                                         .flags = (uint8_t)flags},
                        &m, NULL);
    if (rc)
        return rc;
    if (m.type > GP_PLOCK_EXCL || m.off > INT64_MAX || m.len > INT64_MAX)
        return GFS_EPROTO;
    lk->type = m.type;
    if (m.type != GP_PLOCK_UNLOCK) {
        lk->start = (int64_t)m.off;
        lk->len = (int64_t)m.len;
        lk->pid = (int32_t)m.pid;
    }
    return 0;
}

int gfs_striped_plock_release(int sid, uint64_t owner)
{
    int server;
    uint64_t hid;
    int rc = home_of(sid, false, &server, &hid);
    if (rc)
        return rc;
    gp_PRELEASE_rep m;
    rc = gc_PRELEASE_call(gc_server_conn(server),
                          &(gp_PRELEASE_req){.hid = hid, .owner = owner}, &m,
                          NULL);
    if (!rc)
        gc_lease_posix(server, m.held);
    return rc;
}

/* FETCH_ADD or FETCH_SET of counter key on the file's home server. */
static int64_t counter_call(int sid, const char *key, bool set, int64_t value)
{
    gc_striped s;
    int rc = gc_st_get(sid, &s);
    if (rc)
        return rc;
    rc = gc_check_name(key, GFS_FORK_NAME_MAX);
    if (rc)
        return rc;
    gc_file *f = malloc(sizeof(*f));
    rc = f ? gc_file_get(s.fid, f) : -ENOMEM;
    int64_t r = rc;
    if (!rc && f->rec.repl.ncopy > 1)
        r = gc_repl_counter(&f->rec, key, set, (uint64_t)value);
    else if (!rc)
        r = gc_counter((int)f->rec.server[0], f->rec.hid[0], key, set,
                       (uint64_t)value);
    free(f);
    return r;
}

int64_t gfs_striped_fetch_add(int sid, const char *key, int64_t delta)
{
    return counter_call(sid, key, false, delta);
}

int64_t gfs_striped_fetch_set(int sid, const char *key, int64_t value)
{
    if (value < 0)
        return -ERANGE;
    return counter_call(sid, key, true, value);
}
