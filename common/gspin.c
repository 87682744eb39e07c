/*
 * gspin.c -- the polling policy of gspin.h.
 */
#include "gspin.h"
#include "gclock.h"

#include <poll.h>
#include <sched.h>
#include <stdint.h>

static unsigned history;       /* last poll phases, 1: a slow yield */
static uint64_t backoff_until; /* no polling before this (ns) */

bool g_spin_allowed(void)
{
    return g_now_ns() >= __atomic_load_n(&backoff_until, __ATOMIC_RELAXED);
}

/* One poll phase ended; slow: a yield in it came back late. */
static void phase_end(bool slow, uint64_t now)
{
    unsigned h = __atomic_load_n(&history, __ATOMIC_RELAXED);
    h = ((h << 1) | slow) & 0xfu;
    if (__builtin_popcount(h) >= 2) {
        __atomic_store_n(&backoff_until,
                         now + (uint64_t)G_SPIN_BACKOFF_MS * 1000000ull,
                         __ATOMIC_RELAXED);
        h = 0; /* after the back-off, polling starts with a clean slate */
    }
    __atomic_store_n(&history, h, __ATOMIC_RELAXED);
}

int g_spin_readable(int fd, unsigned spin_us)
{
    if (!spin_us)
        return 0;
    uint64_t t = g_now_ns();
    if (t < __atomic_load_n(&backoff_until, __ATOMIC_RELAXED))
        return 0;
    uint64_t end = t + (uint64_t)spin_us * 1000;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    bool slow = false;
    int k;
    while ((k = poll(&p, 1, 0)) == 0 && t < end && !slow) {
        sched_yield();
        uint64_t t2 = g_now_ns();
        slow = t2 - t >= (uint64_t)G_SPIN_SLICE_US * 1000;
        t = t2;
    }
    if (k == 0 && slow)
        k = poll(&p, 1, 0); /* it may have come while we were away */
    phase_end(slow, t);
    return k;
}
