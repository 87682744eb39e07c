/*
 * io_read.c -- IO_READ, IO_READV and IO_CREAD: the read path (io.c states
 * the rules the request follows up to its windows of blocks).
 *
 * Threads: handler threads.  Locks: the fork's rwlock shared (exclusive
 * for a checksummed fork that same-host clients hold), until the reply's
 * data has left or been staged.
 *
 * Reads reply u64 fork size, then every piece's bytes in the original
 * list order, zeros past the end of the fork.  The ways, picked in io_read:
 *   - a fork whose file same-host clients write themselves (direct.c:
 *     f->direct_w > 0): from its file, not the cache, into one reply
 *     buffer (g_fd_read, or csum.c's bypass read for a checksummed fork:
 *     chunk-locked and checked as the clients' are); the size is the
 *     file's;
 *   - pieces of STREAM_SPLICE_MIN bytes or more on average (not IO_READV,
 *     not checksummed): sent from the file by the kernel (sendfile): the
 *     cache writes through, so the file holds every acknowledged byte,
 *     and the shared lock keeps writers out until the bytes have left;
 *   - all blocks in one window: sent straight from the cache buffers with
 *     writev (no staging copy), or into the client's memory (IO_READV);
 *   - IO_READV with pieces of GSRV_CMA_DIRECT_MIN bytes or more on
 *     average: window by window straight from the blocks into the
 *     client's memory;
 *   - otherwise window by window into a staging buffer (bounded by the
 *     data limit).  IO_CREAD always takes this way, so its CRC covers
 *     exactly the bytes sent; a block the cache reads from disk is checked
 *     against its checksums in cache.c, whatever the opcode.
 */
#include "io_internal.h"
#include "fdio.h"

#include "crc32c.h"
#include "gfault.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t zeros[65536];

/* Zero-copy reply: walk the pieces in list order, pointing iovecs at the
 * cache blocks (or at zeros past the end of the fork). */
static void send_from_cache(gsrv_out *o, void *arg)
{
    io_req *q = arg;
    for (size_t i = 0; i < q->n && !o->err; i++) {
        const gp_ext *it = &q->it[i];
        uint64_t pos = it->off, e = gp_end(it);
        size_t k = 0;
        while (pos < e) {
            if (pos >= q->size) {
                uint64_t z = e - pos < sizeof(zeros) ? e - pos : sizeof(zeros);
                gsrv_out_add(o, zeros, z);
                pos += z;
                continue;
            }
            if (k >= q->nb || q->bno[k] != pos / BS)
                k = gsrv_io_find_block(q, pos / BS);
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

/* IO_CREAD's reply field crc: the CRC of the data as it leaves (the
 * test-only fault switch GALLEY_TEST_FLIP_WIRE flips a bit after: csum.c;
 * only in galleyd-test, common/gfault.h). */
static void cread_crc(io_req *q, uint32_t *crc)
{
    static long flips_left = -1;
    *crc = g_crc32c(0, q->staged, q->bytes);
    if (q->bytes && g_fault_take(&flips_left, G_CFG_TEST_FLIP_WIRE))
        q->staged[q->bytes / 2] ^= 0x10;
}

/* Every window of a read (the first one already filled): its bytes from
 * the blocks to q->staged or (direct) to the client's memory. */
static int read_windows(io_req *q)
{
    int rc;
    do {
        rc = gsrv_io_get_window(q);
        if (!rc)
            rc = gsrv_io_copy_window(q);
        gsrv_io_put_window(q, false);
    } while (!rc && gsrv_io_fill_window(q));
    return rc;
}

/* Zeros for the bytes the pieces ask past the end of the fork: into
 * q->staged or (direct) the client's memory. */
static int read_zeros(io_req *q)
{
    for (size_t i = 0; i < q->n; i++) {
        const gp_ext *it = &q->it[i];
        for (uint64_t a = it->off > q->size ? it->off : q->size;
             a < gp_end(it);) {
            uint64_t z = gp_end(it) - a;
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
static int read_bypass(gsrv_conn *c, io_req *q, gsrv_reply *rep, uint32_t *crc)
{
    int rc = -ENOMEM;
    q->staged = malloc(q->bytes);
    if (q->staged)
        rc = gp_sort(q->it, q->n); /* src keeps each piece's reply place */
    if (rc)
        goto out_free;
    for (size_t i = 0; i < q->n; i++)
        q->it[i].mem = (char *)q->staged + q->it[i].src;
    rc = q->f->cfd >= 0 ? gsrv_csum_bypass_read(q->f, q->it, q->n)
                        : g_fd_read(q->f->fd, 0, q->it, q->n, NULL);
    if (rc)
        goto out_free;
    if (crc)
        cread_crc(q, crc);
    pthread_rwlock_unlock(&q->f->rw);
    q->locked = false;
    gsrv_iostat_count(c, false, q->bytes);
    rep->datalen = q->bytes;
    rep->send = send_staged;
    rep->cleanup = gsrv_io_free;
    rep->arg = q;
    rep->rmem = q->cma ? &q->rmem : NULL;
    return 0;
out_free:
    gsrv_io_free(q);
    return rc;
}

int gsrv_conn_opened(const gsrv_conn *c, uint64_t *fkid)
{
    if (!(*fkid & GP_FKID_OPENED))
        return 0;
    if (g_fault_int(G_CFG_TEST_FORGET_OPENS) > 0)
        return GFS_ESTALE; /* (test build: the client's second try) */
    uint64_t r = *fkid & ~GP_FKID_OPENED;
    unsigned n = c->nopened < GP_OPENED_KEPT ? c->nopened : GP_OPENED_KEPT;
    for (unsigned i = 0; i < n; i++)
        if (c->opened[i].reqid == r) {
            *fkid = c->opened[i].fkid;
            return c->opened[i].status;
        }
    return GFS_ESTALE;
}

/* A read of fork fkid (IO_READ; cma: IO_READV; crc: IO_CREAD, the data's
 * CRC in *crc): its reply's size in *size, its data set up in k->rep. */
static int io_read(gsrv_conn *c, uint64_t fkid, gsrv_call *k, bool cma,
                   uint64_t *size, uint32_t *crc)
{
    int rc = gsrv_conn_opened(c, &fkid);
    if (rc)
        return rc;
    gsrv_reply *rep = k->rep;
    io_req *q = gsrv_io_new(c, false, cma, crc, &rc);
    if (!q)
        return rc;
    bool cwire = q->cwire;
    rc = gsrv_io_decode(k->tail, q);
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
    *size = q->size;
    if (cwire && q->n == 0) /* else once its data is ready */
        cread_crc(q, crc);
    if (q->n == 0)
        goto out_free;
    if (gsrv_fork_direct(q->f)) /* direct.c, rule 2: from the file */
        return read_bypass(c, q, rep, crc);

    if (!cma && !cwire && q->f->cfd < 0 &&
        q->bytes / q->n >= STREAM_SPLICE_MIN) {
        /* large pieces over a socket: sent from the file, which holds
         * every acknowledged byte (the cache writes through), the lock
         * held until they have left */
        rep->datalen = q->bytes;
        rep->send = send_from_file;
        rep->cleanup = gsrv_io_free;
        rep->arg = q;
        gsrv_iostat_count(c, false, q->bytes);
        return 0;
    }
    bool in_order = gp_sorted(q->it, q->n);
    rc = in_order ? 0 : gp_sort(q->it, q->n);
    if (!rc)
        rc = gsrv_io_alloc_window(q);
    if (rc)
        goto out_free;
    gsrv_io_fill_window(q);
    /* IO_CREAD: always staged, its CRC computed over what is sent */
    if (!cwire && !q->have_ext && q->inext >= q->n) {
        /* every block fits in one window: send from the cache */
        rc = gsrv_io_get_window(q);
        if (!rc && !in_order)
            rc = gp_sort_src(q->it, q->n); /* the reply is in list order */
        if (rc)
            goto out_free;
        rep->datalen = q->bytes;
        rep->send = send_from_cache;
        rep->cleanup = gsrv_io_free;
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
        cread_crc(q, crc);
    pthread_rwlock_unlock(&q->f->rw);
    q->locked = false;
    rep->datalen = q->bytes;
    rep->send = send_staged;
    rep->cleanup = gsrv_io_free;
    rep->arg = q;
    rep->rmem = cma ? &q->rmem : NULL;
    gsrv_iostat_count(c, false, q->bytes);
    return 0;

out_free:
    if (!rc) /* nothing to read, or read straight into the client */
        gsrv_iostat_count(c, false, q->bytes);
    gsrv_io_free(q);
    return rc;
}

int gsrv_do_IO_READ(gsrv_conn *c, const gp_IO_READ_req *m, gp_IO_READ_rep *r,
                    gsrv_call *k)
{
    return io_read(c, m->fkid, k, false, &r->size, NULL);
}

int gsrv_do_IO_READV(gsrv_conn *c, const gp_IO_READV_req *m, gp_IO_READV_rep *r,
                     gsrv_call *k)
{
    return io_read(c, m->fkid, k, true, &r->size, NULL);
}

int gsrv_do_IO_CREAD(gsrv_conn *c, const gp_IO_CREAD_req *m, gp_IO_CREAD_rep *r,
                     gsrv_call *k)
{
    return io_read(c, m->fkid, k, false, &r->size, &r->crc);
}
