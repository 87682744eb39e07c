/*
 * io.c -- IO_READ and IO_WRITE (and their forms IO_READV / IO_WRITEV,
 * IO_CREAD / IO_CWRITE): the one data path's request machinery, shared by
 * the read path (io_read.c) and the write path (io_write.c, which picks
 * one of the write strategies write_cache.c, write_splice.c,
 * write_bypass.c; its comment lists them).
 *
 * Threads: handler threads.  Locks: the fork's rwlock (shared for reads,
 * exclusive for writes, held from before the size is read until the reply
 * data has left), then cache.lock and disk.lock inside the cache and disk
 * calls.  No subtab.lock or ns.lock is held here.
 *
 * A request names fork bytes as segments (extents or nested strides):
 *
 *   u64 fkid, u32 nseg, nseg x seg [, data]           (see gproto.h)
 *
 * 1. Decode: every segment is decoded and measured (gp_seg_measure) before
 *    anything is allocated; limits: GP_MAX_SEGMENTS, GP_MAX_PIECES, data
 *    bytes <= the advertised data limit and non-empty pieces <= data limit
 *    / GP_PIECE_DIVISOR (else GFS_ETOOBIG), so a request's memory is
 *    bounded by its frame plus 16 bytes per piece; segments that move no
 *    bytes are never expanded (2^24 empty pieces cost nothing), and for a
 *    write the data must be exactly the rest of the payload (else
 *    GFS_EPROTO).
 * 2. Expand (gp_seg_expand, extent.h) into pieces in list order;
 *    zero-length pieces are dropped (they move nothing).  A piece is a
 *    gp_ext of 24 bytes: offset, length, and where its data starts in the
 *    payload / reply ("src"), which is also its position in list order.
 * 3. Sort by offset (gp_sort) and coalesce adjacent or overlapping pieces
 *    into extents (gp_extent_at) before touching the cache.  For writes, an
 *    extent whose pieces overlap is resolved first (gp_resolve): its pieces
 *    are applied in list order into a scratch buffer (a later piece wins)
 *    and replaced by one piece.
 * 4. Blocks: the extents are walked block by block; a window of at most
 *    gsrv_cache_window() distinct blocks is requested from the
 *    CacheManager at a time.  For a write, a block that is only partly
 *    written and holds valid data (below the old fork size) must be read;
 *    others need no disk read.  The bytes move between the blocks and the
 *    pieces' data one window at a time (copy_window): a write's from the
 *    payload, the socket (a frame still arriving) or the client's memory;
 *    a read's into a staging buffer or the client's memory.
 * 5. IO_READV / IO_WRITEV (same-host clients, gproto.h) name the data in
 *    the client's memory instead (cma.c); IO_CREAD / IO_CWRITE carry the
 *    data's CRC (csum.c).  The read and write paths state what they do
 *    with them.
 */
#include "io_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SEG_MIN_BYTES 17 /* smallest encoded segment: u8 + 2 x u64 */

/* ------------------------------------------------------------ decode ---- */

int gsrv_io_decode(gp_rbuf *r, io_req *q)
{
    uint32_t nseg = gp_get_u32(r);
    if (r->err)
        return r->err;
    if (nseg > GP_MAX_SEGMENTS ||
        (uint64_t)nseg * SEG_MIN_BYTES > gp_remaining(r))
        return GFS_EPROTO;

    /* pass 1: decode and measure, allocate nothing */
    size_t pos0 = r->pos;
    uint64_t npieces = 0, bytes = 0;
    bool badoff = false;
    for (uint32_t i = 0; i < nseg; i++) {
        gp_seg s;
        uint64_t p, b;
        gp_get_seg(r, &s);
        if (r->err)
            return r->err;
        if (!gp_seg_measure(&s, &p, &b)) {
            badoff = true; /* decode the rest: malformed beats too large */
            continue;
        }
        if (b == 0)
            continue; /* moves nothing: neither counted nor expanded */
        npieces += p;
        if (npieces > GP_MAX_PIECES)
            return GFS_EPROTO;
        bytes = b > UINT64_MAX - bytes ? UINT64_MAX : bytes + b;
    }
    if (q->cma) {
        int rc = gsrv_rmem_decode(r, &q->rmem, bytes, !badoff);
        if (rc)
            return rc;
    } else if (q->write) {
        size_t rest = gp_remaining(r);
        if (!badoff && bytes != rest)
            return GFS_EPROTO;
        q->data = r->data + r->pos;
        r->pos = r->len; /* the data is the rest of the payload */
    }
    int rc = gp_decode_end(r);
    if (rc)
        return rc;
    if (badoff)
        return -EFBIG; /* offsets beyond GP_MAX_OFFSET or overflowing */
    if (bytes > gsrv_g.data_limit ||
        npieces > gsrv_g.data_limit / GP_PIECE_DIVISOR)
        return GFS_ETOOBIG;
    q->bytes = bytes;
    if (npieces == 0)
        return 0;

    /* pass 2: expand into pieces, numbered in list order */
    gp_ext *pc = malloc(npieces * sizeof(*pc));
    if (!pc)
        return -ENOMEM;
    gp_rbuf r2 = *r;
    r2.pos = pos0;
    r2.err = 0;
    uint64_t k = 0;
    for (uint32_t i = 0; i < nseg; i++) {
        gp_seg s;
        uint64_t p, b;
        gp_get_seg(&r2, &s);
        if (gp_seg_measure(&s, &p, &b) && b)
            gp_seg_expand(&s, pc, &k);
    }
    q->it = pc;
    q->n = gp_number(pc, (size_t)k);
    return 0;
}

/* ------------------------------------------------------------ windows ---- */

/* The window holds at most the cache's window of blocks, and no more than
 * the request can touch: a one-piece request must not pay for zeroing a
 * window sized for a 32 MB one.  Items are sorted by offset here. */
int gsrv_io_alloc_window(io_req *q)
{
    size_t W = gsrv_cache_window(), need = 0;
    uint64_t last = UINT64_MAX; /* last block counted */
    for (size_t i = 0; i < q->n && need < W; i++) {
        uint64_t b0 = q->it[i].off / BS, b1 = (gp_end(&q->it[i]) - 1) / BS;
        if (last != UINT64_MAX && b0 <= last)
            b0 = last + 1;
        if (b1 >= b0 && (last == UINT64_MAX || b1 > last)) {
            need += (size_t)(b1 - b0 + 1);
            last = b1;
        }
    }
    if (need < W)
        W = need ? need : 1;
    if (q->stream && W > STREAM_WINDOW)
        W = STREAM_WINDOW;
    q->W = W;
    q->bno = malloc(W * sizeof(*q->bno));
    q->miss = malloc(W);
    q->span = malloc(W * sizeof(*q->span));
    q->blk = calloc(W, sizeof(*q->blk));
    if (!q->bno || !q->miss || !q->span || !q->blk)
        return -ENOMEM;
    if (q->write) {
        q->dreq = calloc(W, sizeof(*q->dreq));
        q->dptr = malloc(W * sizeof(*q->dptr));
        if (!q->dreq || !q->dptr)
            return -ENOMEM;
    }
    return 0;
}

/* Account bytes [a, e) of block slot k (write bookkeeping). */
static void account(io_req *q, size_t k, uint64_t a, uint64_t e)
{
    uint64_t bs = q->bno[k] * BS;
    struct io_span *sp = &q->span[k];
    uint32_t lo = (uint32_t)(a - bs), hi = (uint32_t)(e - bs);
    if (lo < sp->lo)
        sp->lo = lo;
    if (hi > sp->hi)
        sp->hi = hi;
    sp->covall += hi - lo; /* extents are disjoint: no double count */
    /* covered bytes among the block's valid (below old size) ones */
    uint64_t vend = q->size > bs ? q->size : bs;
    if (vend > bs + BS)
        vend = bs + BS;
    uint64_t ca = a, ce = e < vend ? e : vend;
    if (ce > ca)
        sp->cov += (uint32_t)(ce - ca);
}

/* Fill the next window: up to W blocks in ascending order.  Returns the
 * number of blocks (0: no more). */
size_t gsrv_io_fill_window(io_req *q)
{
    size_t nb = 0;
    bool first = true;
    for (;;) {
        if (!q->have_ext) {
            if (q->inext >= q->n)
                break;
            q->elast =
                gp_extent_at(q->it, q->n, q->inext, &q->eoff, &q->eend, NULL);
            q->efirst = q->inext;
            q->inext = q->elast;
            q->ebno = q->eoff / BS;
            q->have_ext = true;
        }
        if (first) {
            q->wfirst = q->efirst;
            first = false;
        }
        q->wlast = q->elast;
        uint64_t lastb = (q->eend - 1) / BS;
        while (q->ebno <= lastb) {
            uint64_t b = q->ebno;
            if (b * BS >= q->limit) { /* reads: the rest is past the end */
                q->inext = q->n;
                q->have_ext = false;
                goto out;
            }
            size_t k;
            if (nb && q->bno[nb - 1] == b) {
                k = nb - 1; /* shared with the previous extent */
            } else {
                if (nb == q->W)
                    goto out; /* resume at block b of this extent */
                k = nb++;
                q->bno[k] = b;
                q->span[k] = (struct io_span){.lo = GSRV_BLOCK_SIZE};
            }
            uint64_t a = q->eoff > b * BS ? q->eoff : b * BS;
            uint64_t e = q->eend < (b + 1) * BS ? q->eend : (b + 1) * BS;
            account(q, k, a, e);
            q->ebno++;
        }
        q->have_ext = false;
    }
out:
    /* what the cache must do on a miss */
    for (size_t k = 0; k < nb; k++) {
        uint64_t bs = q->bno[k] * BS;
        uint64_t valid = q->size > bs ? q->size - bs : 0;
        if (valid > BS)
            valid = BS;
        if (!q->write)
            q->miss[k] = GSRV_MISS_READ;
        else if (q->span[k].covall == BS)
            q->miss[k] = GSRV_MISS_ANY; /* wholly overwritten */
        else if (q->span[k].cov == valid)
            q->miss[k] = GSRV_MISS_ZERO; /* no valid byte survives */
        else
            q->miss[k] = GSRV_MISS_READ;
    }
    q->nb = nb;
    return nb;
}

int gsrv_io_get_window(io_req *q)
{
    gsrv_creq cr = {
        .fkid = q->f->fkid,
        .fd = q->f->fd,
        .cfd = q->f->cfd,
        .n = q->nb,
        .bno = q->bno,
        .miss = q->miss,
        .blk = q->blk,
    };
    int rc = gsrv_cache_get(&cr);
    q->held = true;
    return rc;
}

void gsrv_io_put_window(io_req *q, bool discard)
{
    if (!q->held)
        return;
    gsrv_cache_put(q->blk, q->nb, discard);
    q->held = false;
}

size_t gsrv_io_find_block(const io_req *q, uint64_t b)
{
    size_t lo = 0, hi = q->nb;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (q->bno[mid] < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo; /* q->bno[lo] == b by construction */
}

/* Move the bytes of items [wfirst, wlast) that fall in the window between
 * the blocks and the items' data (staged reads: q->staged; direct local
 * writes: the client's memory).  0, or the cross-memory copy's error. */
int gsrv_io_copy_window(io_req *q)
{
    uint64_t wlo = q->bno[0] * BS, whi = (q->bno[q->nb - 1] + 1) * BS;
    if (whi > q->limit)
        whi = q->limit;
    size_t k = 0; /* items are sorted by offset: blocks only move forward */
    for (size_t i = q->wfirst; i < q->wlast; i++) {
        const gp_ext *it = &q->it[i];
        uint64_t a = it->off > wlo ? it->off : wlo;
        uint64_t e = gp_end(it) < whi ? gp_end(it) : whi;
        if (a >= e)
            continue;
        if (q->bno[k] > a / BS) /* an overlapping piece starting earlier */
            k = gsrv_io_find_block(q, a / BS);
        uint64_t pos = a;
        while (pos < e) {
            while (q->bno[k] < pos / BS)
                k++;
            uint32_t in = (uint32_t)(pos % BS);
            uint64_t c = BS - in < e - pos ? BS - in : e - pos;
            if (q->direct)
                gsrv_rmem_copy_at(&q->rmem, it->src + (pos - it->off),
                                  q->blk[k]->data + in, c);
            else if (q->stream) {
                int rc =
                    gsrv_rx_into(q->conn, q->dpos + it->src + (pos - it->off),
                                 q->blk[k]->data + in, c);
                if (rc)
                    return rc;
            } else if (q->write)
                memcpy(q->blk[k]->data + in,
                       gsrv_io_item_data(q, it) + (pos - it->off), c);
            else
                memcpy(q->staged + it->src + (pos - it->off),
                       q->blk[k]->data + in, c);
            pos += c;
        }
    }
    return q->direct ? gsrv_rmem_flush(&q->rmem) : 0;
}

/* ------------------------------------------------------------ cleanup ---- */

void gsrv_io_free(void *arg)
{
    io_req *q = arg;
    if (!q)
        return;
    gsrv_io_put_window(q, false);
    if (q->locked)
        pthread_rwlock_unlock(&q->f->rw);
    gsrv_fork_put(q->f);
    gsrv_rmem_free(&q->rmem);
    free(q->pulled);
    free(q->it);
    free(q->resolved);
    free(q->staged);
    free(q->bno);
    free(q->miss);
    free(q->span);
    free(q->blk);
    free(q->dreq);
    free(q->dptr);
    free(q);
}

/* A request of connection c; NULL with *rc set when it cannot be had. */
io_req *gsrv_io_new(gsrv_conn *c, bool write, bool cma, const uint32_t *crc,
                    int *rc)
{
    gsrv_rmem m;
    *rc = cma ? gsrv_rmem_init(&m, c) : 0;
    if (*rc)
        return NULL;
    io_req *q = calloc(1, sizeof(*q));
    if (!q) {
        *rc = -ENOMEM;
        return NULL;
    }
    q->write = write;
    q->conn = c;
    q->cma = cma;
    q->cwire = crc != NULL;
    q->crc = crc ? *crc : 0;
    if (cma)
        q->rmem = m;
    return q;
}
