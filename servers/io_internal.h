/*
 * io_internal.h -- private to the data path of galleyd: io.c (the shared
 * request machinery), io_read.c, and io_write.c with its write strategies
 * (write_cache.c, write_splice.c, write_bypass.c).  io.c's comment states
 * the rules; io_write.c's lists the write strategies.
 */
#ifndef GSRV_IO_INTERNAL_H
#define GSRV_IO_INTERNAL_H

#include "gsrv_internal.h"
#include "extent.h"

#define BS ((uint64_t)GSRV_BLOCK_SIZE)
#define IO_RESOLVED (UINT64_C(1) << 63) /* src flag: data in q->resolved */
/* blocks per window of a write whose data is still arriving: one window is
 * written through while the next arrives */
#define STREAM_WINDOW 8
/* ... and the mean piece size from which such a write's data is spliced
 * from the socket to the file instead (fewer system calls per byte below
 * it: the copy through the blocks is cheaper); also the mean piece size
 * from which a read is sent from the file (sendfile) */
#define STREAM_SPLICE_MIN (64u << 10)

typedef struct io_req {
    gsrv_fork *f;
    bool locked;
    bool write;
    bool cma;       /* IO_READV / IO_WRITEV: data in client memory */
    bool cwire;     /* IO_CREAD / IO_CWRITE: the data's CRC travels too */
    uint32_t crc;   /* IO_CWRITE: the CRC the client sent */
    gsrv_rmem rmem; /* cma: where the data stream lives */
    bool direct;    /* cma: copied straight between the blocks and
                     * the client's memory */
    gsrv_conn *conn;
    bool stream;     /* write: the data is received from the socket into
                      * the blocks as the windows need it (gsrv_rx_into) */
    size_t dpos;     /* stream: where the data starts in the frame */
    uint8_t *pulled; /* cma write: the data, copied in (malloc'd) */
    gp_ext *it;      /* the pieces, numbered (gp_number) */
    size_t n;
    uint64_t bytes;      /* sum of piece lengths */
    const uint8_t *data; /* write: the payload's data part */
    uint8_t *resolved;   /* write: data of resolved overlapping extents */
    uint8_t *staged;     /* read: reply data when not sent from the cache */
    uint64_t size;       /* fork size the request works against */
    uint64_t limit;      /* blocks at or past this offset are not fetched */
    /* the current window of blocks */
    size_t W, nb;
    uint64_t *bno;       /* the window's blocks, for the cache (gsrv_creq) */
    uint8_t *miss;       /* enum gsrv_miss of each, for the cache */
    gsrv_block **blk;    /* what the cache gives */
    struct io_span {     /* a write's bytes in each block */
        uint32_t lo, hi; /* the range written */
        uint32_t cov;    /* bytes written among the block's valid ones */
        uint32_t covall; /* bytes written in the block */
    } * span;
    gsrv_dreq *dreq;
    gsrv_dreq **dptr;
    bool held; /* blk[0..nb) referenced */
    /* walk over extents: the current extent [eoff, eend) made of items
     * [efirst, elast), and the next block of it to emit */
    size_t inext;
    bool have_ext;
    uint64_t eoff, eend, ebno;
    size_t efirst, elast;
    size_t wfirst, wlast; /* items of the extents the window covers */
} io_req;

/* A request of connection c (cma: IO_READV / IO_WRITEV; crc non-NULL:
 * IO_CREAD / IO_CWRITE, and *crc the CRC the request carries, or 0);
 * NULL with *rc set when it cannot be had.  gsrv_io_free (a reply's
 * cleanup too) releases everything it holds: the window's blocks, the
 * fork's lock and reference, its buffers. */
io_req *gsrv_io_new(gsrv_conn *c, bool write, bool cma, const uint32_t *crc,
                    int *rc);
void gsrv_io_free(void *arg);

/* Decoding (rules 1-2): the tail of the request, whose fields (the
 * fork's handle, IO_CWRITE's CRC) the op has decoded (stubs.c): the
 * segments and the data or `mem` list, expanded into q->it.  0 or the
 * request's error. */
int gsrv_io_decode(gp_rbuf *r, io_req *q);

/* A write piece's data: in the payload, or in q->resolved. */
static inline const uint8_t *gsrv_io_item_data(const io_req *q,
                                               const gp_ext *it)
{
    if (it->src & IO_RESOLVED)
        return q->resolved + (it->src & ~IO_RESOLVED);
    return q->data + it->src;
}

/* Windows of blocks (rule 4), over pieces sorted by offset:
 *   alloc_window: size the window (at most the cache's, no more than the
 *                 request touches; STREAM_WINDOW for a stream);
 *   fill_window:  the next window's blocks (0: no more);
 *   get_window:   take them from the cache (always referenced after);
 *   put_window:   release them (discard: out of the cache too);
 *   find_block:   the window's slot of block b;
 *   copy_window:  move the window's bytes between the blocks and the
 *                 pieces' data (the payload, the socket, the client's
 *                 memory, or q->staged). */
int gsrv_io_alloc_window(io_req *q);
size_t gsrv_io_fill_window(io_req *q);
int gsrv_io_get_window(io_req *q);
void gsrv_io_put_window(io_req *q, bool discard);
size_t gsrv_io_find_block(const io_req *q, uint64_t b);
int gsrv_io_copy_window(io_req *q);

/* The write strategies io_write.c picks from (fork locked exclusively,
 * pieces sorted, disjoint and resolved; 0 or an error, after which the
 * dispatcher rolls back what the strategy says may be rolled back). */
int gsrv_write_cache(io_req *q);                /* write_cache.c */
int gsrv_write_splice(gsrv_conn *c, io_req *q); /* write_splice.c */
int gsrv_write_bypass(io_req *q);               /* write_bypass.c */

#endif /* GSRV_IO_INTERNAL_H */
