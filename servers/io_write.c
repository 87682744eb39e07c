/*
 * io_write.c -- IO_WRITE, IO_WRITEV and IO_CWRITE: the write dispatcher.
 * It decodes the request (io.c, rules 1-3), takes the fork's rwlock
 * exclusively, sorts the pieces, picks the write strategy once
 * (write_mode), readies the data and hands the request to its unit:
 *
 *   WRITE_BYPASS  write_bypass.c  same-host clients write the fork's file
 *                 themselves (direct.c): exactly the pieces' bytes to the
 *                 file, no cache; checksummed and locked-mode forks too.
 *   WRITE_SPLICE  write_splice.c  a frame still arriving, pieces in order,
 *                 disjoint, of STREAM_SPLICE_MIN bytes or more on average,
 *                 no checksums: socket to file by the kernel (splice).
 *   WRITE_STREAM  write_cache.c   a frame still arriving otherwise in
 *                 order and disjoint: into the cache blocks from the
 *                 socket, STREAM_WINDOW blocks at a time.
 *   WRITE_CACHE   write_cache.c   every other write (the frame arrived
 *                 whole, or IO_WRITEV): into the cache blocks window by
 *                 window from the payload or the client's memory.
 *
 * Only an IO_WRITE of GSRV_RX_STREAM_MIN bytes or more is handed over
 * while its frame is still arriving (handler.c, gsrv_rx_*); it is decoded
 * once its description is here, and any write that is not streamed
 * receives its whole frame before its data is touched.
 *
 * IO_WRITEV (same-host, cma.c): pieces of GSRV_CMA_DIRECT_MIN bytes or
 * more on average, disjoint and not bypassed, are copied straight from the
 * client into the cache blocks window by window (q->direct); smaller or
 * overlapping pieces are copied in with one process_vm_readv into the
 * connection's staging buffer first (pull_data), since an iovec per
 * 16-byte piece costs more than a second copy.
 *
 * IO_CWRITE (checksummed forks, csum.c): the data is checked against the
 * client's CRC before anything else is done (GFS_ECHECKSUM_WIRE); a fork's
 * first IO_CWRITE makes it checksummed (not while direct writers hold it:
 * GFS_EDIRECT).
 *
 * A failure acknowledges nothing: the file is cut back to the old size,
 * the cache is trimmed to it and the fork size is unchanged (but for
 * WRITE_BYPASS, which rolls nothing back: the file may hold direct
 * writes past our old size).  A frame cut off mid-data fails the same
 * way; the windows written before it stay written, as the bytes of a
 * local write() interrupted by a crash may.
 *
 * Threads: handler threads.  Locks: the fork's rwlock exclusively, from
 * before its size is read until the reply is encoded.
 */
#include "io_internal.h"

#include "crc32c.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The write strategies (see above). */
enum write_mode { WRITE_BYPASS, WRITE_SPLICE, WRITE_STREAM, WRITE_CACHE };

/* A local write's data, copied from the client's memory in one go: for
 * small pieces (one iovec each would cost more than a second copy) and
 * for pieces that overlap (resolved from a buffer).  The connection's
 * buffer is reused up to GSRV_STAGE_KEEP bytes (a fresh large allocation
 * is mapped anew, and faulting its pages in costs more than the copy). */
static int pull_data(gsrv_conn *c, io_req *q)
{
    if (q->bytes == 0)
        return 0;
    uint8_t *buf;
    if (q->bytes <= GSRV_STAGE_KEEP) {
        if (!c->stage && !(c->stage = malloc(GSRV_STAGE_KEEP)))
            return -ENOMEM;
        buf = c->stage;
    } else {
        buf = q->pulled = malloc(q->bytes);
        if (!buf)
            return -ENOMEM;
    }
    struct iovec lv = {buf, q->bytes};
    int rc = gsrv_rmem_xfer(&q->rmem, false, &lv, 1);
    q->data = buf;
    return rc;
}

/* A write whose frame is still arriving (gsrv_rx_*): has its description
 * -- everything before the data -- arrived whole? */
static bool head_arrived(const gsrv_conn *c, const gp_rbuf *req)
{
    gp_rbuf r = *req; /* at the segments: the fields are decoded */
    r.len = c->rx_have;
    uint32_t nseg = gp_get_u32(&r);
    for (uint32_t i = 0; i < nseg && !r.err; i++) {
        gp_seg s;
        gp_get_seg(&r, &s);
    }
    return !r.err;
}

/* The strategy for q, picked once: the fork locked exclusively, its
 * pieces (at least one) sorted; in_order: they were listed in offset
 * order, so their data arrives in the order the blocks are written. */
static enum write_mode write_mode(const gsrv_conn *c, const io_req *q,
                                  bool in_order)
{
    if (gsrv_fork_direct(q->f)) /* direct.c, rule 2 */
        return WRITE_BYPASS;
    if (!gsrv_rx_partial(c) || !in_order || !gp_disjoint(q->it, q->n))
        return WRITE_CACHE; /* the data is needed whole first */
    if (q->f->cfd < 0 && q->bytes / q->n >= STREAM_SPLICE_MIN)
        return WRITE_SPLICE;
    return WRITE_STREAM;
}

/* Decode the request (a frame still arriving: once its description is
 * here), check IO_CWRITE's CRC, and pull a local write's small pieces in
 * before the fork's lock is taken.  0 or the request's error. */
static int write_decode(gsrv_conn *c, gp_rbuf *req, io_req *q, uint64_t fkid)
{
    int rc = 0;
    if (gsrv_rx_partial(c) && !head_arrived(c, req))
        rc = gsrv_rx_fill(c, req->len);
    if (!rc)
        rc = gsrv_io_decode(req, q);
    /* the data as the client computed it, or nothing is written */
    if (!rc && q->cwire && g_crc32c(0, q->data, q->bytes) != q->crc) {
        gsrv_log(0, "fork %llx: write data failed its checksum in transit",
                 (unsigned long long)fkid);
        rc = GFS_ECHECKSUM_WIRE;
    }
    /* small pieces: copy the data in before taking the fork's lock */
    if (!rc && q->cma && q->n && q->bytes / q->n < GSRV_CMA_DIRECT_MIN)
        rc = pull_data(c, q);
    return rc;
}

/* The data of a write in mode: the rest of a frame that is not streamed,
 * and a local write's data that is not copied straight into the blocks.
 * 0 or an error. */
static int write_data(gsrv_conn *c, gp_rbuf *req, io_req *q,
                      enum write_mode mode)
{
    int rc = 0;
    if (gsrv_rx_partial(c)) {
        q->stream = mode == WRITE_SPLICE || mode == WRITE_STREAM;
        q->dpos = (size_t)(q->data - req->data);
        if (!q->stream && (rc = gsrv_rx_fill(c, req->len)))
            return rc;
    }
    if (q->cma && !q->data) {
        /* large pieces: straight from the client into the cache blocks */
        if (mode == WRITE_BYPASS || !gp_disjoint(q->it, q->n))
            rc = pull_data(c, q);
        else
            q->direct = true;
    }
    return rc;
}

/* A write to fork fkid (IO_WRITE; cma: IO_WRITEV; crc: IO_CWRITE, the
 * data's CRC): the fork's size after in *size. */
static int io_write(gsrv_conn *c, uint64_t fkid, gsrv_call *k, bool cma,
                    const uint32_t *crc, uint64_t *size)
{
    int rc = gsrv_conn_opened(c, &fkid);
    if (rc)
        return rc;
    gp_rbuf *req = k->tail;
    io_req *q = gsrv_io_new(c, true, cma, crc, &rc);
    if (!q)
        return rc;
    rc = write_decode(c, req, q, fkid);
    if (rc)
        goto out_free;
    rc = gsrv_fork_get(fkid, GSRV_FORK_WRITE, &q->f);
    if (rc)
        goto out_free;
    pthread_rwlock_wrlock(&q->f->rw);
    q->locked = true;
    q->size = gsrv_fork_size(q->f);
    q->limit = UINT64_MAX;
    if (q->cwire && q->f->cfd < 0) { /* its first: checksummed from now on */
        rc = gsrv_fork_direct(q->f) ? GFS_EDIRECT : gsrv_csum_create(q->f);
        if (rc)
            goto out_free;
    }
    if (q->n == 0)
        goto out_reply;

    bool in_order = gp_sorted(q->it, q->n);
    rc = in_order ? 0 : gp_sort(q->it, q->n);
    if (rc)
        goto out_free;
    enum write_mode mode = write_mode(c, q, in_order);
    rc = write_data(c, req, q, mode);
    if (rc)
        goto out_free;
    rc = gp_resolve(q->it, &q->n, q->data, &q->resolved, IO_RESOLVED);
    if (!rc && mode == WRITE_BYPASS) {
        rc = gsrv_write_bypass(q); /* rolls nothing back */
        if (rc)
            goto out_free;
        goto out_reply;
    }
    /* after resolving, pieces are disjoint and sorted: the last ends last */
    uint64_t end = q->n ? gp_end(&q->it[q->n - 1]) : 0;
    if (!rc)
        rc = mode == WRITE_SPLICE ? gsrv_write_splice(c, q)
                                  : gsrv_write_cache(q);
    if (rc) {
        /* acknowledge nothing: back to the old size, cache included */
        if (end > q->size) {
            if (ftruncate(q->f->fd, (off_t)q->size) < 0)
                gsrv_log(0, "fork %llx: cannot roll back to %llu bytes: %s",
                         (unsigned long long)fkid, (unsigned long long)q->size,
                         strerror(errno));
            gsrv_cache_trim(fkid, q->size, end);
        }
        goto out_free;
    }
    if (end > q->size) {
        q->size = end;
        gsrv_fork_set_size(q->f, end);
    }
out_reply:
    gsrv_iostat_count(c, true, q->bytes);
    *size = q->size;
out_free:
    gsrv_io_free(q);
    return rc;
}

int gsrv_do_IO_WRITE(gsrv_conn *c, const gp_IO_WRITE_req *m, gp_IO_WRITE_rep *r,
                     gsrv_call *k)
{
    return io_write(c, m->fkid, k, false, NULL, &r->size);
}

int gsrv_do_IO_WRITEV(gsrv_conn *c, const gp_IO_WRITEV_req *m,
                      gp_IO_WRITEV_rep *r, gsrv_call *k)
{
    return io_write(c, m->fkid, k, true, NULL, &r->size);
}

int gsrv_do_IO_CWRITE(gsrv_conn *c, const gp_IO_CWRITE_req *m,
                      gp_IO_CWRITE_rep *r, gsrv_call *k)
{
    return io_write(c, m->fkid, k, false, &m->crc, &r->size);
}
