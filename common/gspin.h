/*
 * gspin.h -- the one polling policy of client and server for a reply or
 * a request expected within microseconds on a same-host socket.
 *
 * Polling before sleeping saves the wake-up of a halted CPU, which on a
 * virtual machine costs more than the request (a Unix-socket ping-pong
 * between two sleeping processes took 70-88 us on an idle 2-core VM
 * here, a polled null request 6 us), and the poller yields between polls
 * so that other pollers -- MPI ranks waiting in a barrier -- get the CPU
 * at once.  But a yield hands the CPU to a thread that does not poll (a
 * compiler, a computing rank) for its whole time slice: then the poller
 * sees its answer milliseconds late, where a thread asleep in recv is
 * woken at once (a null request with six busy loops on two cores: 168-224
 * us polling, 38-48 us sleeping; with three MPI ranks in a barrier and
 * nothing else: 8-21 us polling, 154-159 us sleeping).  So a poll phase
 * in which a yield came back only after G_SPIN_SLICE_US counts against
 * polling; two such phases among the last four stop polling for
 * G_SPIN_BACKOFF_MS, after which polling is tried again.  (On an idle
 * or MPI-only host under one yield in a thousand takes that long; with
 * threads that do not yield, most do.)
 *
 * Threads: any (the history is shared through atomics; a lost update
 * only delays a decision).
 */
#ifndef GALLEY_GSPIN_H
#define GALLEY_GSPIN_H

#include <stdbool.h>

#define G_SPIN_SLICE_US 1000 /* a yield this long: the CPU went elsewhere */
#define G_SPIN_BACKOFF_MS 200

/* True unless polling is backed off (see above). */
bool g_spin_allowed(void);

/* Poll fd for input for up to spin_us microseconds (yielding between
 * polls), if g_spin_allowed; > 0 when fd is readable, 0 when the caller
 * should block, < 0 on a poll error. */
int g_spin_readable(int fd, unsigned spin_us);

#endif
