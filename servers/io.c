/*
 * io.c -- IO_READ and IO_WRITE: the one data path.
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
 *    bytes are never expanded (2^24 empty pieces cost nothing), and for a write
 *    the data must be exactly the rest of the payload (else GFS_EPROTO).
 * 2. Expand (gp_seg_expand, extent.h) into pieces in list order;
 *    zero-length pieces are dropped (they move nothing).  A piece is a
 *    gx_ext of 24 bytes: offset, length, and where its data starts in the
 *    payload / reply ("src"), which is also its position in list order.
 * 3. Sort by offset (gx_sort) and coalesce adjacent or overlapping pieces
 *    into extents (gx_extent_at) before touching the cache.  For writes, an
 *    extent whose pieces overlap is resolved first (gx_resolve): its pieces
 *    are applied in list order into a scratch buffer (a later piece wins)
 *    and replaced by one piece.
 * 4. Blocks: the extents are walked block by block; a window of at most
 *    gsrv_cache_window() distinct blocks is requested from the
 *    CacheManager at a time.  For a write, a block that is only partly
 *    written and holds valid data (below the old fork size) must be read;
 *    others need no disk read.  The new data is copied into the blocks and
 *    the touched byte range of every block is written through by the
 *    DiskManager before the next window -- and before the reply.  A
 *    failure acknowledges nothing: the file is cut back to the old size,
 *    the cache is trimmed to it and the fork size is unchanged.  An
 *    IO_WRITE of GSRV_RX_STREAM_MIN bytes or more is handled while its
 *    frame is still arriving (handler.c, gsrv_rx_*): once its description
 *    is here, and when its pieces in offset order are also its data's
 *    order (disjoint, not bypassed), its data goes from the socket
 *    straight into the blocks, STREAM_WINDOW blocks at a time, so one
 *    window is written through while the client still sends the next and
 *    the data is copied once less; with pieces of STREAM_SPLICE_MIN bytes
 *    or more on average (and no checksums) it goes from the socket to the
 *    file by the kernel (gsrv_rx_to_file: splice, one copy, into the page
 *    cache), and the blocks that held any of those bytes are taken out of
 *    the cache first.  Any other write receives the whole frame first.  A frame
 * cut off mid-data fails like a failed disk write: nothing acknowledged, the
 * window in hand dropped, the file cut back to the old size; the windows
 * written before it stay written, as the bytes of a local write() interrupted
 * by a crash may.
 * 5. Reads reply u64 fork size, then every piece's bytes in the original
 *    list order, zeros past the end of the fork.  Pieces of
 *    STREAM_SPLICE_MIN bytes or more on average (not IO_READV, not
 *    checksummed) are sent from the file by the kernel (sendfile): the
 *    cache writes through, so the file holds every acknowledged byte, and
 *    the shared lock keeps writers out until the bytes have left.  When all
 * blocks fit in one window the reply is sent straight from the cache buffers
 * with writev (no staging copy); otherwise window by window into a staging
 *    buffer (bounded by the data limit).
 * 6. IO_READV / IO_WRITEV (same-host clients, gproto.h) name the data in
 *    the client's memory instead (cma.c).  Writes of pieces of 512 bytes
 *    or more on average are copied straight from the client into the
 *    cache blocks window by window; smaller (or overlapping) pieces are
 *    copied in with one process_vm_readv into the connection's staging
 *    buffer first, since an iovec per 16-byte piece costs more than a
 *    second copy.  Reads go straight from the blocks into the client's
 *    memory (large pieces: window by window; small: through the reply
 *    path of 5, which gathers tiny pieces in a bounce buffer).
 * 7. A fork whose file same-host clients write themselves (direct.c:
 *    f->direct_w > 0) bypasses 3-5's cache: after sort and resolve, a
 *    write goes to the file with exactly its pieces' bytes (gx_fd_write,
 *    fdio.h), never a block with the bytes around them, which a direct
 *    writer may have changed -- except in locked mode, where it writes
 *    under OFD locks and may sieve like the locked holders (direct.c),
 *    and for a checksummed fork, never in locked mode, whose writes and
 *    reads take its chunk locks (csum.c, bypass); a read comes from the
 *    file into one reply buffer (gx_fd_read); the size is the file's.  A
 *    failed write rolls nothing back (the file may hold direct writes
 *    past our old size).
 * 8. IO_CWRITE / IO_CREAD (checksummed forks, csum.c): a write's data is
 *    checked against the client's CRC before anything else is done, and
 *    the window's chunk checksums are stored before its blocks are
 *    written through (write_windows) and settled after; a block the cache
 *    reads from disk is checked in cache.c, whatever the opcode.  While
 *    same-host clients hold a checksummed fork (7), its reads and writes
 *    go through csum.c's bypass calls (chunk-locked and checked as the
 *    clients' are), with the rwlock exclusive for reads too.  IO_CREAD always
 * takes the staged path of 5, so its CRC covers exactly the bytes sent.
 */
#include "gsrv_internal.h"
#include "fdio.h"

#include "crc32c.h"
#include "extent.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BS ((uint64_t)GSRV_BLOCK_SIZE)
#define SEG_MIN_BYTES 17 /* smallest encoded segment: u8 + 2 x u64 */
#define IO_RESOLVED (UINT64_C(1) << 63) /* src flag: data in q->resolved */
/* blocks per window of a write whose data is still arriving: one window is
 * written through while the next arrives */
#define STREAM_WINDOW 8
/* ... and the mean piece size from which such a write's data is spliced
 * from the socket to the file instead (fewer system calls per byte below
 * it: the copy through the blocks is cheaper) */
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
    gx_ext *it;      /* the pieces, numbered (gx_number) */
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

static const uint8_t zeros[65536];

/* ------------------------------------------------------------ decode ---- */

/* The fields of IO_READ / IO_WRITE / IO_READV / IO_WRITEV before their
 * tails (gmsg.h), and of their replies before any data. */
#define IO_MSGS(X, write, cma)                                                 \
    if (write && cma)                                                          \
        X(IO_WRITEV);                                                          \
    else if (write)                                                            \
        X(IO_WRITE);                                                           \
    else if (cma)                                                              \
        X(IO_READV);                                                           \
    else                                                                       \
        X(IO_READ);

static int decode_head(gp_rbuf *r, io_req *q, uint64_t *fkid)
{
    int rc;
    bool write = q->write, cma = q->cma;
    if (q->cwire && write) {
        gp_IO_CWRITE_req m;
        rc = gp_IO_CWRITE_req_decode(r, &m);
        *fkid = m.fkid;
        q->crc = m.crc;
        return rc;
    }
    if (q->cwire) {
        gp_IO_CREAD_req m;
        rc = gp_IO_CREAD_req_decode(r, &m);
        *fkid = m.fkid;
        return rc;
    }
#define IO_REQ(OP)                                                             \
    do {                                                                       \
        gp_##OP##_req m;                                                       \
        rc = gp_##OP##_req_decode(r, &m);                                      \
        *fkid = m.fkid;                                                        \
    } while (0)
    IO_MSGS(IO_REQ, write, cma)
#undef IO_REQ
    return rc;
}

static void encode_reply_head(gp_wbuf *w, const io_req *q, uint64_t size)
{
    bool write = q->write, cma = q->cma;
    if (q->cwire && write) {
        gp_IO_CWRITE_rep_encode(w, &(gp_IO_CWRITE_rep){.size = size});
        return;
    }
#define IO_REP(OP) gp_##OP##_rep_encode(w, &(gp_##OP##_rep){.size = size})
    IO_MSGS(IO_REP, write, cma)
#undef IO_REP
}

static int decode(gp_rbuf *r, io_req *q)
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
    gx_ext *pc = malloc(npieces * sizeof(*pc));
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
    q->n = gx_number(pc, (size_t)k);
    return 0;
}

/* ------------------------------------------------------------ pieces ---- */

static const uint8_t *item_data(const io_req *q, const gx_ext *it)
{
    if (it->src & IO_RESOLVED)
        return q->resolved + (it->src & ~IO_RESOLVED);
    return q->data + it->src;
}

/* ------------------------------------------------------------ windows ---- */

/* The window holds at most the cache's window of blocks, and no more than
 * the request can touch: a one-piece request must not pay for zeroing a
 * window sized for a 32 MB one.  Items are sorted by offset here. */
static int alloc_window(io_req *q)
{
    size_t W = gsrv_cache_window(), need = 0;
    uint64_t last = UINT64_MAX; /* last block counted */
    for (size_t i = 0; i < q->n && need < W; i++) {
        uint64_t b0 = q->it[i].off / BS, b1 = (gx_end(&q->it[i]) - 1) / BS;
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
static size_t fill_window(io_req *q)
{
    size_t nb = 0;
    bool first = true;
    for (;;) {
        if (!q->have_ext) {
            if (q->inext >= q->n)
                break;
            q->elast =
                gx_extent_at(q->it, q->n, q->inext, &q->eoff, &q->eend, NULL);
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

static int get_window(io_req *q)
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

static void put_window(io_req *q, bool discard)
{
    if (!q->held)
        return;
    gsrv_cache_put(q->blk, q->nb, discard);
    q->held = false;
}

static size_t find_block(const io_req *q, uint64_t b)
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
static int copy_window(io_req *q)
{
    uint64_t wlo = q->bno[0] * BS, whi = (q->bno[q->nb - 1] + 1) * BS;
    if (whi > q->limit)
        whi = q->limit;
    size_t k = 0; /* items are sorted by offset: blocks only move forward */
    for (size_t i = q->wfirst; i < q->wlast; i++) {
        const gx_ext *it = &q->it[i];
        uint64_t a = it->off > wlo ? it->off : wlo;
        uint64_t e = gx_end(it) < whi ? gx_end(it) : whi;
        if (a >= e)
            continue;
        if (q->bno[k] > a / BS) /* an overlapping piece starting earlier */
            k = find_block(q, a / BS);
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
                memcpy(q->blk[k]->data + in, item_data(q, it) + (pos - it->off),
                       c);
            else
                memcpy(q->staged + it->src + (pos - it->off),
                       q->blk[k]->data + in, c);
            pos += c;
        }
    }
    return q->direct ? gsrv_rmem_flush(&q->rmem) : 0;
}

/* ------------------------------------------------------------ cleanup ---- */

static void io_free(void *arg)
{
    io_req *q = arg;
    if (!q)
        return;
    put_window(q, false);
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
static io_req *io_new(gsrv_conn *c, bool write, bool cma, bool cwire, int *rc)
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
    q->cwire = cwire;
    if (cma)
        q->rmem = m;
    return q;
}

/* ------------------------------------------------------------- write ---- */

static int write_windows(io_req *q)
{
    while (fill_window(q)) {
        int rc = get_window(q);
        if (rc) {
            put_window(q, true);
            return rc;
        }
        rc = copy_window(q);
        if (rc) { /* the blocks may hold part of the data: drop them */
            put_window(q, true);
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
        put_window(q, rc != 0);
        if (rc)
            return rc;
    }
    return 0;
}

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
static bool head_arrived(const gsrv_conn *c, const gp_rbuf *req, io_req *q)
{
    gp_rbuf r = *req;
    r.len = c->rx_have;
    uint64_t fkid;
    if (decode_head(&r, q, &fkid))
        return false;
    uint32_t nseg = gp_get_u32(&r);
    for (uint32_t i = 0; i < nseg && !r.err; i++) {
        gp_seg s;
        gp_get_seg(&r, &s);
    }
    return !r.err;
}

static int io_write(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep, bool cma,
                    bool cwire)
{
    int rc;
    io_req *q = io_new(c, true, cma, cwire, &rc);
    if (!q)
        return rc;
    uint64_t fkid;
    /* a frame still arriving: decoded once its description is here */
    if (gsrv_rx_partial(c) && !head_arrived(c, req, q))
        rc = gsrv_rx_fill(c, req->len);
    if (!rc)
        rc = decode_head(req, q, &fkid);
    if (!rc)
        rc = decode(req, q);
    /* the data as the client computed it, or nothing is written */
    if (!rc && cwire && gp_crc32c(0, q->data, q->bytes) != q->crc) {
        gsrv_log(0, "fork %llx: write data failed its checksum in transit",
                 (unsigned long long)fkid);
        rc = GFS_ECHECKSUM_WIRE;
    }
    /* small pieces: copy the data in before taking the fork's lock */
    if (!rc && cma && q->n && q->bytes / q->n < GSRV_CMA_DIRECT_MIN)
        rc = pull_data(c, q);
    if (rc)
        goto out_free;
    rc = gsrv_fork_get(fkid, GSRV_FORK_WRITE, &q->f);
    if (rc)
        goto out_free;
    pthread_rwlock_wrlock(&q->f->rw);
    q->locked = true;
    q->size = gsrv_fork_size(q->f);
    q->limit = UINT64_MAX;
    if (cwire && q->f->cfd < 0) { /* its first: checksummed from now on */
        rc = gsrv_fork_direct(q->f) ? GFS_EDIRECT : gsrv_csum_create(q->f);
        if (rc)
            goto out_free;
    }
    if (q->n == 0)
        goto out_reply;

    /* pieces in offset order as listed: their data arrives in the order
     * the blocks are written */
    bool in_order = gx_sorted(q->it, q->n);
    rc = in_order ? 0 : gx_sort(q->it, q->n);
    if (rc)
        goto out_free;
    bool bypass = gsrv_fork_direct(q->f); /* direct.c, rule 2 */
    if (gsrv_rx_partial(c)) {
        /* data still arriving: received into the blocks window by window
         * (rule 4) when nothing needs it all first */
        q->stream = !bypass && in_order && gx_disjoint(q->it, q->n);
        q->dpos = (size_t)(q->data - req->data);
        if (!q->stream && (rc = gsrv_rx_fill(c, req->len)))
            goto out_free;
    }
    if (cma && !q->data) {
        /* large pieces: straight from the client into the cache blocks */
        if (bypass || !gx_disjoint(q->it, q->n))
            rc = pull_data(c, q);
        else
            q->direct = true;
        if (rc)
            goto out_free;
    }
    rc = gx_resolve(q->it, &q->n, q->data, &q->resolved, IO_RESOLVED);
    if (!rc && bypass) {
        /* direct writers hold the fork: exactly these bytes to the file,
         * no cache (a failure rolls nothing back: the file may hold their
         * bytes past our old size) */
        for (size_t i = 0; i < q->n; i++)
            q->it[i].mem = (char *)item_data(q, &q->it[i]);
        /* checksummed: chunk-locked and checked (csum.c, bypass); such a
         * fork is never in locked mode (direct.c, rule 7).  In locked
         * mode (rules 4-6) under OFD locks, which also lets us sieve:
         * sorted and resolved, so disjoint */
        rc = q->f->cfd >= 0 ? gsrv_csum_bypass_write(q->f, q->it, q->n)
             : gsrv_fork_locked(q->f)
                 ? gx_fd_write_locked(q->f->fd, 0, q->it, q->n, true)
                 : gx_fd_write(q->f->fd, 0, q->it, q->n);
        if (rc)
            goto out_free;
        q->size = gsrv_fork_size(q->f);
        goto out_reply;
    }
    /* after resolving, pieces are disjoint and sorted: the last ends last */
    uint64_t end = q->n ? gx_end(&q->it[q->n - 1]) : 0;
    if (!rc && q->stream && q->f->cfd < 0 &&
        q->bytes / q->n >= STREAM_SPLICE_MIN) {
        /* large pieces still arriving: from the socket to the file by
         * the kernel, no block in between (none may keep older bytes) */
        for (size_t i = 0; i < q->n && !rc; i++) {
            gsrv_cache_forget(fkid, q->it[i].off, gx_end(&q->it[i]));
            rc = gsrv_rx_to_file(c, q->dpos + q->it[i].src, q->f->fd,
                                 q->it[i].off, q->it[i].len);
        }
    } else {
        if (!rc)
            rc = alloc_window(q);
        if (!rc)
            rc = write_windows(q);
    }
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
    encode_reply_head(&rep->w, q, q->size);
out_free:
    io_free(q);
    return rc;
}

int gsrv_op_IO_WRITE(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    return io_write(c, req, rep, false, false);
}

int gsrv_op_IO_WRITEV(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    return io_write(c, req, rep, true, false);
}

int gsrv_op_IO_CWRITE(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    return io_write(c, req, rep, false, true);
}

/* -------------------------------------------------------------- read ---- */

/* Zero-copy reply: walk the pieces in list order, pointing iovecs at the
 * cache blocks (or at zeros past the end of the fork). */
static void send_from_cache(gsrv_out *o, void *arg)
{
    io_req *q = arg;
    for (size_t i = 0; i < q->n && !o->err; i++) {
        const gx_ext *it = &q->it[i];
        uint64_t pos = it->off, e = gx_end(it);
        size_t k = 0;
        while (pos < e) {
            if (pos >= q->size) {
                uint64_t z = e - pos < sizeof(zeros) ? e - pos : sizeof(zeros);
                gsrv_out_add(o, zeros, z);
                pos += z;
                continue;
            }
            if (k >= q->nb || q->bno[k] != pos / BS)
                k = find_block(q, pos / BS);
            uint32_t in = (uint32_t)(pos % BS);
            uint64_t c = BS - in;
            if (c > e - pos)
                c = e - pos;
            if (c > q->size - pos)
                c = q->size - pos;
            gsrv_out_add(o, q->blk[k]->data + in, c);
            pos += c;
        }
    }
}

/* Large pieces: from the file by the kernel (gsrv_out_file), in list
 * order, zeros past the fork's end. */
static void send_from_file(gsrv_out *o, void *arg)
{
    io_req *q = arg;
    for (size_t i = 0; i < q->n && !o->err; i++)
        gsrv_out_file(o, q->f->fd, q->it[i].off, q->it[i].len, q->size);
}

static void send_staged(gsrv_out *o, void *arg)
{
    io_req *q = arg;
    gsrv_out_add(o, q->staged, q->bytes);
}

/* IO_CREAD's reply head: the size and the CRC of the data as it leaves
 * (the test-only fault switch flips a bit after: csum.c). */
static void encode_cread_head(gp_wbuf *w, io_req *q)
{
    uint32_t crc = gp_crc32c(0, q->staged, q->bytes);
    gp_IO_CREAD_rep_encode(w, &(gp_IO_CREAD_rep){.size = q->size, .crc = crc});
    if (q->bytes && gsrv_csum_fault_flip())
        q->staged[q->bytes / 2] ^= 0x10;
}

/* Every window of a read (the first one already filled): its bytes from
 * the blocks to q->staged or (direct) to the client's memory. */
static int read_windows(io_req *q)
{
    int rc;
    do {
        rc = get_window(q);
        if (!rc)
            rc = copy_window(q);
        put_window(q, false);
    } while (!rc && fill_window(q));
    return rc;
}

/* Zeros for the bytes the pieces ask past the end of the fork: into
 * q->staged or (direct) the client's memory. */
static int read_zeros(io_req *q)
{
    for (size_t i = 0; i < q->n; i++) {
        const gx_ext *it = &q->it[i];
        for (uint64_t a = it->off > q->size ? it->off : q->size;
             a < gx_end(it);) {
            uint64_t z = gx_end(it) - a;
            if (!q->direct) {
                memset(q->staged + it->src + (a - it->off), 0, z);
                break;
            }
            if (z > sizeof(zeros))
                z = sizeof(zeros);
            gsrv_rmem_copy_at(&q->rmem, it->src + (a - it->off), (void *)zeros,
                              z);
            a += z;
        }
    }
    return q->direct ? gsrv_rmem_flush(&q->rmem) : 0;
}

/* A read of a fork that direct writers hold: from its file, not the
 * cache, into one reply buffer. */
static int read_bypass(gsrv_conn *c, io_req *q, gsrv_reply *rep)
{
    int rc = -ENOMEM;
    q->staged = malloc(q->bytes);
    if (q->staged)
        rc = gx_sort(q->it, q->n); /* src keeps each piece's reply place */
    if (rc)
        goto out_free;
    for (size_t i = 0; i < q->n; i++)
        q->it[i].mem = (char *)q->staged + q->it[i].src;
    rc = q->f->cfd >= 0 ? gsrv_csum_bypass_read(q->f, q->it, q->n)
                        : gx_fd_read(q->f->fd, 0, q->it, q->n, NULL);
    if (rc)
        goto out_free;
    if (q->cwire)
        encode_cread_head(&rep->w, q);
    pthread_rwlock_unlock(&q->f->rw);
    q->locked = false;
    gsrv_iostat_count(c, false, q->bytes);
    rep->datalen = q->bytes;
    rep->send = send_staged;
    rep->cleanup = io_free;
    rep->arg = q;
    rep->rmem = q->cma ? &q->rmem : NULL;
    return 0;
out_free:
    io_free(q);
    return rc;
}

static int io_read(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep, bool cma,
                   bool cwire)
{
    int rc;
    io_req *q = io_new(c, false, cma, cwire, &rc);
    if (!q)
        return rc;
    uint64_t fkid;
    rc = decode_head(req, q, &fkid);
    if (!rc)
        rc = decode(req, q);
    if (rc)
        goto out_free;
    rc = gsrv_fork_get(fkid, GSRV_FORK_READ, &q->f); /* none: all zeros */
    if (rc)
        goto out_free;
    /* counted once the reply is ready, like a write: a failed read moved
     * nothing */
    pthread_rwlock_rdlock(&q->f->rw);
    if (q->f->cfd >= 0 && gsrv_fork_direct(q->f)) {
        /* checksummed, same-host clients: exclusively (csum.c, bypass) */
        pthread_rwlock_unlock(&q->f->rw);
        pthread_rwlock_wrlock(&q->f->rw);
    }
    q->locked = true;
    q->size = gsrv_fork_size(q->f);
    q->limit = q->size;
    if (cwire && q->n == 0)
        encode_cread_head(&rep->w, q);
    else if (!cwire) /* IO_CREAD's: once its data is ready */
        encode_reply_head(&rep->w, q, q->size);
    if (q->n == 0)
        goto out_free;
    if (gsrv_fork_direct(q->f)) /* direct.c, rule 2: from the file */
        return read_bypass(c, q, rep);

    if (!cma && !cwire && q->f->cfd < 0 &&
        q->bytes / q->n >= STREAM_SPLICE_MIN) {
        /* large pieces over a socket: sent from the file, which holds
         * every acknowledged byte (the cache writes through), the lock
         * held until they have left */
        rep->datalen = q->bytes;
        rep->send = send_from_file;
        rep->cleanup = io_free;
        rep->arg = q;
        gsrv_iostat_count(c, false, q->bytes);
        return 0;
    }
    bool in_order = gx_sorted(q->it, q->n);
    rc = in_order ? 0 : gx_sort(q->it, q->n);
    if (!rc)
        rc = alloc_window(q);
    if (rc)
        goto out_free;
    fill_window(q);
    /* IO_CREAD: always staged, its CRC computed over what is sent */
    if (!cwire && !q->have_ext && q->inext >= q->n) {
        /* every block fits in one window: send from the cache */
        rc = get_window(q);
        if (!rc && !in_order)
            rc = gx_sort_src(q->it, q->n); /* the reply is in list order */
        if (rc)
            goto out_free;
        rep->datalen = q->bytes;
        rep->send = send_from_cache;
        rep->cleanup = io_free;
        rep->arg = q;
        rep->rmem = cma ? &q->rmem : NULL;
        gsrv_iostat_count(c, false, q->bytes);
        return 0;
    }

    if (!cwire && cma && q->bytes / q->n >= GSRV_CMA_DIRECT_MIN) {
        /* large pieces: window by window straight into the client */
        q->direct = true;
        q->rmem.push = true;
        if (gsrv_conn_hung_up(c)) { /* its memory may be gone */
            rc = -ECONNRESET;
            goto out_free;
        }
        rc = read_windows(q);
        if (!rc)
            rc = read_zeros(q);
        goto out_free;
    }

    /* staged: window by window into one reply buffer */
    q->staged = malloc(q->bytes);
    if (!q->staged) {
        rc = -ENOMEM;
        goto out_free;
    }
    rc = q->nb ? read_windows(q) : 0; /* none: all past the end */
    if (!rc)
        rc = read_zeros(q);
    if (rc)
        goto out_free;
    if (cwire)
        encode_cread_head(&rep->w, q);
    pthread_rwlock_unlock(&q->f->rw);
    q->locked = false;
    rep->datalen = q->bytes;
    rep->send = send_staged;
    rep->cleanup = io_free;
    rep->arg = q;
    rep->rmem = cma ? &q->rmem : NULL;
    gsrv_iostat_count(c, false, q->bytes);
    return 0;

out_free:
    if (!rc) /* nothing to read, or read straight into the client */
        gsrv_iostat_count(c, false, q->bytes);
    io_free(q);
    return rc;
}

int gsrv_op_IO_READ(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    return io_read(c, req, rep, false, false);
}

int gsrv_op_IO_READV(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    return io_read(c, req, rep, true, false);
}

int gsrv_op_IO_CREAD(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    return io_read(c, req, rep, false, true);
}
