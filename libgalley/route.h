/*
 * route.h -- private to libgalley: the one place that decides how a
 * request's data moves.  route.c turns a fork's state (replicated,
 * checksummed), the connection (this process's, or inherited across
 * fork()) and the shape of a transfer into a plan; io.c, conn.c,
 * repl_io.c, striped_io.c and the transports carry the plan out and never
 * look at those states to choose again.  The cases, in the order a
 * request meets them:
 *
 *   1. a single-range read of a striped file: its reader (one preadv per
 *      subfile, transport_direct.c) when gc_route_fast allows, else
 *      an op (striped_io.c);
 *   2. a transfer to a replicated fork: GC_WAY_COPIES, to every copy
 *      (repl_io.c), each copy's transfer GC_WAY_SERVER;
 *   3. any other transfer: GC_WAY_ANY; its connection's transport may
 *      take it whole (gc_route_offered; the direct transport, which then
 *      asks gc_route_whole: preadv / pwritev, a sieve under locks, or back
 *      to chunks, as a striped open's small first op always goes), else
 *      io.c cuts it into chunks;
 *   4. a chunk: the transport's own form (cross-memory attach, or the
 *      stream) unless gc_route_stream says the stream: a checksummed
 *      fork's (its CRC travels with the data) or a connection inherited
 *      from a parent process (its memory and grants are not this one's).
 */
#ifndef GALLEY_ROUTE_H
#define GALLEY_ROUTE_H

#include "internal.h"
#include "transport.h"

/* How a transfer to one fork moves (gc_xfer.way), fixed when the transfer
 * is made: gc_route_fork, gc_route_copy. */
enum gc_way {
    GC_WAY_ANY = 0, /* the connection's transport: whole, or chunks */
    GC_WAY_SERVER,  /* chunks through the server, never taken whole: a copy
                     * of a replicated file, whose server applies the
                     * copies' acknowledgement rule (repl.c) */
    GC_WAY_COPIES   /* every copy of a replicated fork (repl_io.c) */
};

/* The way of a transfer to fork k. */
enum gc_way gc_route_fork(const gc_fork *k);
/* The way of a transfer to one copy of a replicated fork. */
enum gc_way gc_route_copy(void);

/* May c's transport take x whole (transport.h: xfer, prepare)? */
bool gc_route_offered(const gc_conn *c, const gc_xfer *x);
/* Does a chunk's data travel in the stream whatever c's transport? */
bool gc_route_stream(const gc_conn *c, const gc_chunk *ch);

/* What the direct transport does with a transfer offered whole. */
enum gc_whole {
    GC_WHOLE_NOTHING, /* no bytes: done, as the chunk path would be */
    GC_WHOLE_SERVER,  /* declined: chunks to the server */
    GC_WHOLE_READ,    /* preadv (pieces close together read as one span) */
    GC_WHOLE_WRITE,   /* pwritev per run of adjacent pieces */
    GC_WHOLE_SIEVE    /* small pieces: spans read, patched, written back
                       * under OFD locks (the fork in locked mode) */
};
/* The direct transport's case for x, with its bytes and end offset. */
enum gc_whole gc_route_whole(int op, const gc_xfer *x, uint64_t *bytes,
                             uint64_t *end);

/* A single-range read of a striped file cut into more pieces than this
 * takes an op instead of the reader (striped_io.c). */
#define GC_FAST_UNITS 16
/* Do single-range reads go by a striped file's reader at all? */
bool gc_route_fast_on(void);
/* May the reader read fork k (neither checksummed nor replicated)? */
bool gc_route_fast(const gc_fork *k);

#endif /* GALLEY_ROUTE_H */
