/*
 * thelp.h -- small shared pieces of the pytest helper programs.
 *
 * Each helper is a focused scenario run by tests/test_*.py against a real
 * cluster (GALLEY_CLUSTER names its cluster file).  Checks print one line
 * per failure ("FAIL file:line: ...") and count it; they never jump, so a
 * scenario reports every broken expectation, not only the first.  A helper
 * exits with t_finish(): 0 when every check passed, 1 otherwise; pytest
 * asserts on the exit code and on the lines printed.
 *
 * Threads: single-threaded programs.
 */
#ifndef THELP_H
#define THELP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "galley.h"

static int t_failures;
static int t_checks;

static inline void t_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    printf("FAIL %s:%d: ", file, line);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    t_failures++;
}

static inline const char *t_err(int64_t v)
{
    return v < 0 && v > INT32_MIN ? gfs_strerror((int)v) : "";
}

static inline bool t_expect_eq(int64_t got, int64_t want, const char *gexpr,
                               const char *file, int line)
{
    t_checks++;
    if (got == want)
        return true;
    t_fail(file, line, "%s = %" PRId64 " %s, expected %" PRId64 " %s", gexpr,
           got, t_err(got), want, t_err(want));
    return false;
}

static inline bool t_expect_true(bool ok, const char *expr, const char *file,
                                 int line)
{
    t_checks++;
    if (ok)
        return true;
    t_fail(file, line, "expected %s", expr);
    return false;
}

/* Checks; each evaluates to true when it held. */
#define EXPECT_EQ(got, want)                                                   \
    t_expect_eq((int64_t)(got), (int64_t)(want), #got, __FILE__, __LINE__)
#define EXPECT_TRUE(cond) t_expect_true((cond), #cond, __FILE__, __LINE__)
/* A call that must succeed (return >= 0); evaluates to its result. */
#define EXPECT_OK(call) t_expect_ok((int64_t)(call), #call, __FILE__, __LINE__)

static inline int64_t t_expect_ok(int64_t rc, const char *expr,
                                  const char *file, int line)
{
    t_checks++;
    if (rc < 0)
        t_fail(file, line, "%s failed: %" PRId64 " %s", expr, rc, t_err(rc));
    return rc;
}

/* Compare n bytes; reports the first difference. */
static inline bool t_expect_mem(const void *got, const void *want, size_t n,
                                const char *what, const char *file, int line)
{
    t_checks++;
    const unsigned char *g = got, *w = want;
    for (size_t i = 0; i < n; i++) {
        if (g[i] != w[i]) {
            t_fail(file, line, "%s: byte %zu of %zu is 0x%02x, expected 0x%02x",
                   what, i, n, g[i], w[i]);
            return false;
        }
    }
    return true;
}
#define EXPECT_MEM(got, want, n, what)                                         \
    t_expect_mem((got), (want), (n), (what), __FILE__, __LINE__)

static inline bool t_all_zero(const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i])
            return false;
    return true;
}

/* Print the verdict and return the exit status. */
static inline int t_finish(void)
{
    if (t_failures)
        printf("FAILED %d of %d checks\n", t_failures, t_checks);
    else
        printf("PASS %d checks\n", t_checks);
    fflush(stdout);
    return t_failures ? 1 : 0;
}

/* Deterministic pseudo-random bytes (splitmix64). */
static inline uint64_t t_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline void t_fill(void *buf, size_t n, uint64_t seed)
{
    uint64_t st = seed * 7919 + 1;
    unsigned char *p = buf;
    size_t i = 0;
    while (i < n) {
        uint64_t r = t_rand(&st);
        for (int k = 0; k < 8 && i < n; k++, i++)
            p[i] = (unsigned char)(r >> (8 * k));
    }
}

static inline void *t_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        printf("FAIL out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

static inline double t_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* gfs_init(NULL) (GALLEY_CLUSTER) or exit with a message. */
static inline void t_init(void)
{
    int rc = gfs_init(NULL);
    if (rc < 0) {
        printf("FAIL gfs_init: %d %s\n", rc, gfs_strerror(rc));
        exit(1);
    }
}

/* Usage error: exit status 2. */
static inline int t_usage(const char *prog, const char *text)
{
    fprintf(stderr, "usage: %s %s\n", prog, text);
    return 2;
}

#endif /* THELP_H */
