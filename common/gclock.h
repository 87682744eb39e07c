/*
 * gclock.h -- the clocks of client and server, once: absolute deadlines
 * for pthread_cond_timedwait (the lease renewal threads, libgalley/lease.c
 * and rcache.c; the NameServer's lease recalls and the range-lock waits,
 * servers/nameserver.c and rangelock.c), and the monotonic clock in
 * nanoseconds and milliseconds (timeouts, leases, the polling policy).
 *
 * Threads: pure functions.
 */
#ifndef GALLEY_GCLOCK_H
#define GALLEY_GCLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC now, in nanoseconds. */
static inline uint64_t g_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* CLOCK_MONOTONIC_COARSE now, in nanoseconds: the same clock to the last
 * scheduler tick, a fraction of g_now_ns's cost (checks made on every
 * call of a hot path: libgalley/transport_direct.c, readers). */
static inline uint64_t g_coarse_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* CLOCK_MONOTONIC now, in milliseconds. */
static inline int64_t g_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

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
