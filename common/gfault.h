/*
 * gfault.h -- the test-only fault switches client and server share, there
 * only in the test build.
 *
 * GALLEY_TEST_FLIP_WIRE=N (servers/csum.c documents it) flips a bit in
 * the data of the first N checksummed messages a process sends;
 * GALLEY_TEST_CRASH_AFTER_CRC and GALLEY_TEST_CLIENT_CRASH_AFTER_CRC stop
 * galleyd and a same-host client between a write's checksums and its
 * data; GALLEY_TEST_FORGET_OPENS makes galleyd remember no open for the
 * IO requests that name one (gmsg.h GP_FKID_OPENED), as a server that
 * has forgotten it, or predates it, answers.  The code that acts on them is
 * compiled only with -DGALLEY_TEST_HOOKS: into servers/galleyd-test and the
 * test build of libgalley that tests/helpers/t_checksum links
 * (servers/local.mk, libgalley/local.mk).  Without it, as in the installed
 * galleyd and libgalley, every call below is a constant (false, 0) and the code
 * behind it compiles to nothing: the variables do nothing there.
 *
 * Threads: any (a countdown is taken through atomics).
 */
#ifndef GFAULT_H
#define GFAULT_H

#include "gconfig.h"

#include <stdbool.h>

#ifdef GALLEY_TEST_HOOKS
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

/* The value of the switch id (0 when unset). */
static inline long long g_fault_int(enum g_cfg_id id)
{
    return g_config_int(id);
}
#else
static inline bool g_fault_take(long *left, enum g_cfg_id id)
{
    (void)left;
    (void)id;
    return false;
}

static inline long long g_fault_int(enum g_cfg_id id)
{
    (void)id;
    return 0;
}
#endif

#endif
