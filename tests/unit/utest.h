/*
 * utest.h -- a minimal assert-style harness for the C unit tests.
 *
 * CHECK(cond) records a failure (file, line, expression) and carries on, so
 * one run shows every broken case.  CHECK_EQ compares two integers and
 * prints both values.  utest_exit() prints a summary and returns the
 * process exit status automake's test driver expects (0 pass, 1 fail).
 *
 * Threads: single-threaded test programs only.
 */
#ifndef UTEST_H
#define UTEST_H

#include <inttypes.h>
#include <stdio.h>

static int utest_checks;
static int utest_failures;

/* Print at most this many failure lines; the count is always exact. */
#define UTEST_MAX_REPORTS 50

#define CHECK(cond)                                                            \
    do {                                                                       \
        utest_checks++;                                                        \
        if (!(cond)) {                                                         \
            if (utest_failures++ < UTEST_MAX_REPORTS)                          \
                fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__,       \
                        #cond);                                                \
        }                                                                      \
    } while (0)

#define CHECK_EQ(a, b)                                                         \
    do {                                                                       \
        long long utest_a_ = (long long)(a), utest_b_ = (long long)(b);        \
        utest_checks++;                                                        \
        if (utest_a_ != utest_b_) {                                            \
            if (utest_failures++ < UTEST_MAX_REPORTS)                          \
                fprintf(stderr, "%s:%d: FAIL: %s == %s (%lld != %lld)\n",      \
                        __FILE__, __LINE__, #a, #b, utest_a_, utest_b_);       \
        }                                                                      \
    } while (0)

/* Like CHECK but adds a printf-style note describing the case. */
#define CHECK_MSG(cond, ...)                                                   \
    do {                                                                       \
        utest_checks++;                                                        \
        if (!(cond)) {                                                         \
            if (utest_failures++ < UTEST_MAX_REPORTS) {                        \
                fprintf(stderr, "%s:%d: FAIL: %s: ", __FILE__, __LINE__,       \
                        #cond);                                                \
                fprintf(stderr, __VA_ARGS__);                                  \
                fputc('\n', stderr);                                           \
            }                                                                  \
        }                                                                      \
    } while (0)

/* A xorshift64 generator: the same sequence on every run (a test may set
 * utest_rng_state first to choose its own). */
static uint64_t utest_rng_state = 0x243F6A8885A308D3ull;

static inline uint64_t utest_rnd(void)
{
    uint64_t x = utest_rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    utest_rng_state = x;
    return x;
}

static inline uint64_t utest_rnd_below(uint64_t n)
{
    return n ? utest_rnd() % n : 0;
}

static inline int utest_exit(const char *name)
{
    printf("%s: %d checks, %d failures\n", name, utest_checks, utest_failures);
    return utest_failures ? 1 : 0;
}

#endif /* UTEST_H */
