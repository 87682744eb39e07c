/*
 * gfault.h -- the test-only fault switches client and server share: a
 * countdown read once from the environment, taken one at a time by any
 * thread.  GALLEY_TEST_FLIP_WIRE=N (servers/csum.c documents it) flips a
 * bit in the data of the first N checksummed messages a process sends.
 * Never set in production: unset, every call answers false.
 */
#ifndef GFAULT_H
#define GFAULT_H

#include "gconfig.h"

#include <stdbool.h>

/* True for the first N calls with this *left (initialise it to -1), N
 * being the value of the variable id (0 when unset, never below 0). */
static inline bool g_fault_take(long *left, enum g_cfg_id id)
{
    long n = __atomic_load_n(left, __ATOMIC_RELAXED);
    if (n < 0) {
        n = (long)g_config_int(id);
        __atomic_store_n(left, n, __ATOMIC_RELAXED);
    }
    while (n > 0)
        if (__atomic_compare_exchange_n(left, &n, n - 1, false,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            return true;
    return false;
}

#endif
