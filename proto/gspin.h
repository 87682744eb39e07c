/*
 * gspin.h -- the one polling policy of client and server for a reply or
 * a request expected within microseconds on a same-host socket.
 *
 * Polling before sleeping saves the wake-up of a halted CPU, which on a
 * virtual machine costs more than the request -- but only while every
 * runnable thread of the host has a CPU.  Once the host is
 * oversubscribed (MPI ranks busy-polling in a barrier, four ranks and
 * their servers on two cores), a poller that yields is put behind every
 * other runnable thread and sees its answer a scheduler round late,
 * where a thread asleep in recv is woken with the scheduler's preference
 * for a sleeper; and a poller that does not yield takes the CPU its peer
 * needs.  Measured (bench/README.md, issue 24 round 5): a null request
 * at load 6 took 362 us polling on both sides and 48 us with neither.
 * So polling is allowed only while the host's runnable threads
 * (/proc/loadavg's fourth field, sampled at most every
 * GP_SPIN_SAMPLE_MS) are no more than its online CPUs.
 *
 * Threads: any (the sample is shared through atomics; two threads may
 * both sample, harmlessly).
 */
#ifndef GALLEY_GSPIN_H
#define GALLEY_GSPIN_H

#include <stdbool.h>

#define GP_SPIN_SAMPLE_MS 5

/* True when polling may not take a CPU a runnable thread is waiting for
 * (also when /proc/loadavg cannot be read: the policy before sampling). */
bool gp_spin_allowed(void);

/* Poll fd for input for up to spin_us microseconds (yielding between
 * polls), if gp_spin_allowed; > 0 when fd is readable, 0 when the caller
 * should block, < 0 on a poll error. */
int gp_spin_readable(int fd, unsigned spin_us);

#endif
