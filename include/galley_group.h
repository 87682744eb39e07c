/*
 * galley_group.h -- GFS-GROUP, the split-phase group I/O library
 * (split-phase-gfs-group paper), on top of galley.h.
 *
 * gfs_group_read/gfs_group_write only record a request; requests gather
 * into one list I/O that is submitted (non-blocking) when
 *   - the fork changes, or the operation changes (reads and writes are
 *     never mixed in one group),
 *   - the pending count reaches the request limit (default 1024) or the
 *     pending bytes reach the size limit (default 16 MB),
 *   - gfs_group_doneio() or gfs_group_waitio() is called,
 *   - or, under the "send" policy, whenever no group is in flight.
 * The policy is chosen at run time: gfs_group_set_policy(), or the
 * environment variable GALLEY_GROUP_POLICY=send|nosend (default nosend).
 * Buffers belong to the library until gfs_group_waitio() returns (or
 * gfs_group_testio() reports completion).
 *
 * Threads: one group per process, safe to call from any thread (a mutex
 * serialises the calls).
 */
#ifndef GALLEY_GROUP_H
#define GALLEY_GROUP_H

#include "galley.h"

#ifdef __cplusplus
extern "C" {
#endif

enum gfs_group_policy { GFS_GROUP_NOSEND = 0, GFS_GROUP_SEND = 1 };

/* Record a request (0, or an argument error such as -EINVAL/GFS_EBADID). */
int gfs_group_read(int kid, int64_t offset, void *buf, int64_t size);
int gfs_group_write(int kid, int64_t offset, const void *buf, int64_t size);

/* Submit what is pending; do not wait. */
int gfs_group_doneio(void);
/* 1 when nothing is pending or in flight, 0 if work remains, or the first
 * error of a completed group (reported once). */
int gfs_group_testio(void);
/* Submit what is pending and wait for everything; 0 or the first error. */
int gfs_group_waitio(void);

int gfs_group_set_policy(int policy);
int gfs_group_get_policy(void);
/* Flush thresholds (>= 1 each). */
int gfs_group_set_limits(int64_t max_requests, int64_t max_bytes);

/* Counters, for tests and benchmarks (reset with gfs_group_reset_stats). */
typedef struct gfs_group_stats {
    uint64_t requests;    /* gfs_group_read/write calls recorded */
    uint64_t groups;      /* list I/O requests submitted        */
    uint64_t flush_fork;  /* flushes caused by a fork change    */
    uint64_t flush_op;    /* ... by a read/write change         */
    uint64_t flush_count; /* ... by the request limit           */
    uint64_t flush_size;  /* ... by the size limit              */
    uint64_t flush_call;  /* ... by doneio / waitio             */
    uint64_t flush_send;  /* ... by the send policy (idle)      */
    uint64_t max_pending; /* largest group submitted (requests) */
} gfs_group_stats;

int gfs_group_get_stats(gfs_group_stats *st);
void gfs_group_reset_stats(void);

#ifdef __cplusplus
}
#endif
#endif /* GALLEY_GROUP_H */
