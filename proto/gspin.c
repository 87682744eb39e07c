/*
 * gspin.c -- the polling policy of gspin.h.
 */
#include "gspin.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Runnable threads of the host now, from /proc/loadavg
 * ("0.50 0.40 0.30 R/T LASTPID"); -1 if it cannot be read. */
static long runnable_now(void)
{
    char buf[128];
    int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    char *p = buf;
    for (int field = 0; field < 3; field++) {
        while (*p && *p != ' ')
            p++;
        while (*p == ' ')
            p++;
    }
    char *end;
    long r = strtol(p, &end, 10);
    return end != p && *end == '/' ? r : -1;
}

static uint64_t next_sample_ns; /* atomics only */
static int allowed = 1;

bool gp_spin_allowed(void)
{
    uint64_t now = now_ns();
    if (now >= __atomic_load_n(&next_sample_ns, __ATOMIC_RELAXED)) {
        __atomic_store_n(&next_sample_ns,
                         now + (uint64_t)GP_SPIN_SAMPLE_MS * 1000000ull,
                         __ATOMIC_RELAXED);
        static long cpus;
        if (!__atomic_load_n(&cpus, __ATOMIC_RELAXED)) {
            long c = sysconf(_SC_NPROCESSORS_ONLN);
            __atomic_store_n(&cpus, c > 0 ? c : 1, __ATOMIC_RELAXED);
        }
        long r = runnable_now();
        __atomic_store_n(&allowed,
                         r < 0 || r <= __atomic_load_n(&cpus, __ATOMIC_RELAXED),
                         __ATOMIC_RELAXED);
    }
    return __atomic_load_n(&allowed, __ATOMIC_RELAXED);
}

int gp_spin_readable(int fd, unsigned spin_us)
{
    if (!spin_us || !gp_spin_allowed())
        return 0;
    uint64_t end = now_ns() + (uint64_t)spin_us * 1000;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int k;
    while ((k = poll(&p, 1, 0)) == 0 && now_ns() < end)
        sched_yield();
    return k;
}
