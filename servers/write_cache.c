/*
 * write_cache.c -- the write strategy through the cache (io_write.c picks
 * it for every write that is neither bypassed nor spliced): the pieces'
 * data into the cache blocks, window by window, and each window written
 * through before the next and before the reply.
 *
 * The data comes from the payload, from the client's memory (IO_WRITEV
 * with large pieces: q->direct, cma.c), or -- an IO_WRITE whose frame is
 * still arriving (q->stream) -- from the socket as each window needs it
 * (gsrv_rx_into), STREAM_WINDOW blocks at a time, so one window is written
 * through while the client still sends the next and the data is copied
 * once less (io.c's copy_window moves it).
 *
 * A block that is only partly written and holds valid data (below the old
 * fork size) is read first (io.c, rule 4); the touched byte range of every
 * block is written through by the DiskManager (gsrv_disk_write_wait).  A
 * checksummed fork's new chunk checksums are stored before its blocks are
 * written through and settled after (csum.c rule 4).  On a failure the
 * window in hand is dropped from the cache; the dispatcher rolls the file
 * back (io_write.c).
 *
 * Threads: handler threads; the fork's rwlock held exclusively.
 */
#include "io_internal.h"

#include <string.h>

static int write_windows(io_req *q)
{
    while (gsrv_io_fill_window(q)) {
        int rc = gsrv_io_get_window(q);
        if (rc) {
            gsrv_io_put_window(q, true);
            return rc;
        }
        rc = gsrv_io_copy_window(q);
        if (rc) { /* the blocks may hold part of the data: drop them */
            gsrv_io_put_window(q, true);
            return rc;
        }
        for (size_t k = 0; k < q->nb; k++) {
            gsrv_dreq *d = &q->dreq[k];
            memset(d, 0, sizeof(*d));
            d->fkid = q->f->fkid;
            d->bno = q->bno[k];
            d->fd = q->f->fd;
            d->lo = q->span[k].lo;
            d->hi = q->span[k].hi;
            d->buf = q->blk[k]->data;
            d->cfd = -1;
            q->dptr[k] = d;
        }
        /* a checksummed fork: the new chunks' checksums before their
         * data (csum.c rule 4) */
        rc = q->f->cfd >= 0 ? gsrv_csum_update(q->f, q->bno, q->blk, q->nb) : 0;
        if (!rc)
            rc = gsrv_disk_write_wait(q->dptr, q->nb);
        if (!rc && q->f->cfd >= 0)
            rc = gsrv_csum_settled(q->f, q->bno, q->nb);
        gsrv_io_put_window(q, rc != 0);
        if (rc)
            return rc;
    }
    return 0;
}

int gsrv_write_cache(io_req *q)
{
    int rc = gsrv_io_alloc_window(q);
    return rc ? rc : write_windows(q);
}
