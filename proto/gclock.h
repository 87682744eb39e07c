/*
 * gclock.h -- absolute deadlines for pthread_cond_timedwait, once for
 * client and server: the lease renewal threads (libgalley/lease.c,
 * rcache.c), the NameServer's lease recalls and the range-lock waits
 * (servers/nameserver.c, rangelock.c).
 *
 * Threads: pure functions.
 */
#ifndef GALLEY_GCLOCK_H
#define GALLEY_GCLOCK_H

#include <time.h>

/* ts += ms milliseconds, normalised. */
static inline void g_ts_add_ms(struct timespec *ts, long ms)
{
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* The CLOCK_REALTIME instant ms milliseconds from now (the clock
 * pthread_cond_timedwait uses by default). */
static inline struct timespec g_deadline_ms(long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    g_ts_add_ms(&ts, ms);
    return ts;
}

#endif
