/*
 * test_spin.c -- common/gspin.c, the polling policy: no polling asked for
 * means none; input already there is left to read; and on a host made
 * oversubscribed here by threads that never yield (three busy children
 * per online CPU) polling backs off within a few poll phases, so that a
 * long poll asked for then returns at once.
 *
 * Threads: single-threaded (the busy load is child processes).
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gspin.h"
#include "utest.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

int main(void)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    /* no polling asked for: the caller blocks, whatever the host */
    CHECK_EQ(g_spin_readable(sv[0], 0), 0);
    /* input already there, polling allowed or not: never an error, and
     * the input is left for the caller to read */
    CHECK(write(sv[1], "x", 1) == 1);
    int k = g_spin_readable(sv[0], 1000);
    CHECK(k == 0 || k == 1);
    char c;
    CHECK(read(sv[0], &c, 1) == 1 && c == 'x');

    /* oversubscribed: more runnable threads than CPUs at every sample */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int nbusy = (int)(3 * (cpus > 0 ? cpus : 1));
    pid_t *kids = calloc((size_t)nbusy, sizeof(*kids));
    CHECK(kids != NULL);
    for (int i = 0; kids && i < nbusy; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            alarm(30); /* never outlive a test run gone wrong */
            for (volatile unsigned long x = 0;; x++)
                ;
        }
        CHECK(kids[i] > 0);
    }
    sleep_ms(50); /* let them all become runnable */
    /* polls that find nothing: their yields come back a time slice
     * late, so within a few of them polling is backed off */
    int phases = 0;
    while (g_spin_allowed() && phases < 50) {
        CHECK_EQ(g_spin_readable(sv[0], 50000), 0);
        phases++;
    }
    CHECK(!g_spin_allowed());
    CHECK(phases >= 2);
    if (phases >= 50)
        fprintf(stderr, "still polling after %d phases\n", phases);
    /* two seconds of polling asked for while backed off: back at once
     * (the bound is generous: the call polls nothing) */
    double t0 = now_s();
    k = g_spin_readable(sv[0], 2000000);
    double dt = now_s() - t0;
    CHECK_EQ(k, 0);
    CHECK(dt < 1.0);
    if (dt >= 1.0)
        fprintf(stderr, "refused poll took %.3f s\n", dt);
    for (int i = 0; kids && i < nbusy; i++)
        if (kids[i] > 0) {
            kill(kids[i], SIGKILL);
            waitpid(kids[i], NULL, 0);
        }
    free(kids);
    close(sv[0]);
    close(sv[1]);
    return utest_exit("test_spin");
}
