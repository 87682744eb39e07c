/*
 * io.c -- the one data path.  Every data interface (plain, list, striped,
 * and later strided and non-blocking) ends in gc_transfer: pieces of forks
 * become wire extents (file-adjacent neighbours merged), cut into requests
 * no larger than what the server said it can buffer, pipelined a few deep
 * per server and run concurrently across servers.  Write data goes from
 * user memory to the socket (vectored send); read data is scattered by the
 * connection's reader straight into user memory.
 *
 * Threads: any; the calling thread submits and waits.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define GC_WINDOW 4            /* requests in flight per transfer       */
#define GC_MAX_CHUNK_SEGS (1u << 20) /* wire extents per request        */

/* One request of a transfer, built from pieces [from..] of the xfer. */
typedef struct chunk {
    gc_req req;
    int xi;         /* index of its gc_xfer */
    gp_wbuf desc;   /* fkid, nseg, segs */
    struct iovec *iov;
    int niov;
    uint64_t bytes;
} chunk;

typedef struct cursor {
    size_t piece;   /* next piece */
    uint64_t done;  /* bytes of that piece already sent */
    uint64_t limit; /* server data limit */
    int inflight;
    bool started;
} cursor;

static void chunk_free(chunk *c)
{
    if (!c)
        return;
    gc_req_release(&c->req);
    gp_wbuf_free(&c->desc);
    free(c->iov);
    free(c);
}

/* Build the next request of x from the cursor; NULL with *err = 0 when
 * there is nothing left. */
static chunk *chunk_build(const gc_xfer *x, cursor *cur, int *err)
{
    *err = 0;
    while (cur->piece < x->n && x->pieces[cur->piece].len == 0)
        cur->piece++;
    if (cur->piece >= x->n)
        return NULL;
    chunk *c = calloc(1, sizeof(*c));
    if (!c) {
        *err = -ENOMEM;
        return NULL;
    }
    gp_wbuf_init(&c->desc);
    gp_wbuf segs;
    gp_wbuf_init(&segs);
    size_t cap = 16;
    c->iov = malloc(sizeof(*c->iov) * cap);
    uint32_t nseg = 0;
    uint64_t seg_off = 0, seg_len = 0;

    while (cur->piece < x->n && c->iov) {
        const gc_piece *p = &x->pieces[cur->piece];
        if (p->len == 0) {
            cur->piece++;
            continue;
        }
        uint64_t room = cur->limit - c->bytes;
        if (room == 0)
            break;
        uint64_t off = p->off + cur->done;
        uint64_t take = p->len - cur->done;
        if (take > room)
            take = room;
        bool extend = nseg > 0 && seg_off + seg_len == off;
        if (!extend && nseg == GC_MAX_CHUNK_SEGS)
            break;
        if (extend) {
            seg_len += take;
        } else {
            if (nseg > 0) {
                gp_seg s = {.kind = GP_SEG_EXTENT, .off = seg_off,
                            .size = seg_len};
                gp_put_seg(&segs, &s);
            }
            nseg++;
            seg_off = off;
            seg_len = take;
        }
        char *mem = p->mem + cur->done;
        if (c->niov > 0 &&
            (char *)c->iov[c->niov - 1].iov_base +
                    c->iov[c->niov - 1].iov_len == mem) {
            c->iov[c->niov - 1].iov_len += take;
        } else {
            if ((size_t)c->niov == cap) {
                cap *= 2;
                struct iovec *nv = realloc(c->iov, sizeof(*nv) * cap);
                if (!nv) {
                    free(c->iov);
                    c->iov = NULL;
                    break;
                }
                c->iov = nv;
            }
            c->iov[c->niov++] = (struct iovec){mem, take};
        }
        c->bytes += take;
        cur->done += take;
        if (cur->done == p->len) {
            cur->piece++;
            cur->done = 0;
        }
    }
    if (nseg > 0) {
        gp_seg s = {.kind = GP_SEG_EXTENT, .off = seg_off, .size = seg_len};
        gp_put_seg(&segs, &s);
    }
    gp_put_u64(&c->desc, x->fkid);
    gp_put_u32(&c->desc, nseg);
    if (!segs.err && segs.len) {
        gp_wbuf *d = &c->desc;
        size_t at = d->len;
        for (size_t i = 0; i < segs.len; i++)
            gp_put_u8(d, 0); /* reserve, then copy in one go */
        if (!d->err)
            memcpy(d->data + at, segs.data, segs.len);
    }
    int e = segs.err ? segs.err : c->desc.err;
    gp_wbuf_free(&segs);
    if (!c->iov)
        e = -ENOMEM;
    if (e) {
        chunk_free(c);
        *err = e;
        return NULL;
    }
    return c;
}

static int chunk_submit(int op, const gc_xfer *x, chunk *c)
{
    gc_conn *conn = gc_server_conn(x->server);
    memset(&c->req, 0, sizeof(c->req));
    if (op == GFS_READ) {
        c->req.prefix_len = 8;
        c->req.riov = c->iov;
        c->req.riovcnt = c->niov;
        c->req.rdata = c->bytes;
        return gc_submit(conn, GP_OP_IO_READ, c->desc.data, c->desc.len,
                         NULL, 0, 0, &c->req);
    }
    return gc_submit(conn, GP_OP_IO_WRITE, c->desc.data, c->desc.len, c->iov,
                     c->niov, c->bytes, &c->req);
}

/* Wait for a chunk and fold its result into its xfer. */
static void chunk_finish(chunk *c, gc_xfer *x)
{
    int rc = gc_wait(&c->req);
    if (!rc) {
        gp_rbuf r;
        if (c->req.riov)
            gp_rbuf_init(&r, c->req.prefix, c->req.prefix_len);
        else
            gp_rbuf_init(&r, c->req.reply, c->req.replylen);
        uint64_t fs = gp_get_u64(&r);
        if (!gp_done(&r))
            rc = GFS_EPROTO;
        else
            x->fork_size = fs;
    }
    if (rc && !x->status)
        x->status = rc;
}

int gc_transfer(int op, gc_xfer *x, size_t nx)
{
    if (op != GFS_READ && op != GFS_WRITE)
        return -EINVAL;
    cursor *cur = calloc(nx ? nx : 1, sizeof(*cur));
    /* FIFO of chunks in flight */
    size_t qcap = nx * GC_WINDOW + 1, qhead = 0, qlen = 0;
    chunk **q = calloc(qcap, sizeof(*q));
    if (!cur || !q) {
        free(cur);
        free(q);
        return -ENOMEM;
    }
    for (size_t i = 0; i < nx; i++) {
        x[i].status = 0;
        x[i].fork_size = 0;
        if (!gc_server_conn(x[i].server)) {
            x[i].status = -EINVAL;
            continue;
        }
        int rc = gc_conn_data_limit(gc_server_conn(x[i].server),
                                    &cur[i].limit);
        if (rc)
            x[i].status = rc;
    }
    for (;;) {
        /* fill every transfer's window */
        for (size_t i = 0; i < nx; i++) {
            while (!x[i].status && cur[i].inflight < GC_WINDOW) {
                int err;
                chunk *c = chunk_build(&x[i], &cur[i], &err);
                if (!c) {
                    if (err)
                        x[i].status = err;
                    break;
                }
                c->xi = (int)i;
                chunk_submit(op, &x[i], c); /* errors surface in wait */
                cur[i].inflight++;
                q[(qhead + qlen) % qcap] = c;
                qlen++;
            }
        }
        if (qlen == 0)
            break;
        chunk *c = q[qhead];
        qhead = (qhead + 1) % qcap;
        qlen--;
        chunk_finish(c, &x[c->xi]);
        cur[c->xi].inflight--;
        chunk_free(c);
    }
    int rc = 0;
    for (size_t i = 0; i < nx && !rc; i++)
        rc = x[i].status;
    free(cur);
    free(q);
    return rc;
}

/* ---------------------------------------------------------- fork I/O --- */

static bool range_ok(int64_t off, int64_t size)
{
    return off >= 0 && size >= 0 && (uint64_t)off <= GP_MAX_OFFSET &&
           (uint64_t)size <= GP_MAX_OFFSET - (uint64_t)off;
}

int64_t gfs_listio(int kid, int op, int64_t n, const gfs_list_entry *entries,
                   void *buf)
{
    gc_fork k;
    int rc = gc_fork_get(kid, &k);
    if (rc)
        return rc;
    if ((op != GFS_READ && op != GFS_WRITE) || n < 0 || (n && !entries))
        return -EINVAL;
    if ((uint64_t)n > GP_MAX_PIECES)
        return GFS_ETOOBIG;
    gc_piece *p = malloc(sizeof(*p) * (size_t)(n ? n : 1));
    if (!p)
        return -ENOMEM;
    int64_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        const gfs_list_entry *e = &entries[i];
        if (!range_ok(e->file_offset, e->size) || e->mem_offset < 0 ||
            (e->size && !buf)) {
            free(p);
            return -EINVAL;
        }
        p[i].off = (uint64_t)e->file_offset;
        p[i].len = (uint64_t)e->size;
        p[i].mem = (char *)buf + e->mem_offset;
        total += e->size;
    }
    gc_xfer x = {.server = k.server, .fkid = k.fkid, .pieces = p,
                 .n = (size_t)n};
    rc = gc_transfer(op, &x, 1);
    free(p);
    return rc ? rc : total;
}

int64_t gfs_read(int kid, int64_t offset, void *buf, int64_t size)
{
    gc_fork k;
    int rc = gc_fork_get(kid, &k);
    if (rc)
        return rc;
    if (!range_ok(offset, size) || (size && !buf))
        return -EINVAL;
    gc_piece p = {(uint64_t)offset, (uint64_t)size, buf};
    gc_xfer x = {.server = k.server, .fkid = k.fkid, .pieces = &p, .n = 1};
    if (size == 0)
        return 0;
    rc = gc_transfer(GFS_READ, &x, 1);
    if (rc)
        return rc;
    if (x.fork_size <= (uint64_t)offset)
        return 0;
    uint64_t avail = x.fork_size - (uint64_t)offset;
    return avail < (uint64_t)size ? (int64_t)avail : size;
}

int64_t gfs_write(int kid, int64_t offset, const void *buf, int64_t size)
{
    gc_fork k;
    int rc = gc_fork_get(kid, &k);
    if (rc)
        return rc;
    if (!range_ok(offset, size) || (size && !buf))
        return -EINVAL;
    if (size == 0)
        return 0;
    gc_piece p = {(uint64_t)offset, (uint64_t)size, (char *)buf};
    gc_xfer x = {.server = k.server, .fkid = k.fkid, .pieces = &p, .n = 1};
    rc = gc_transfer(GFS_WRITE, &x, 1);
    return rc ? rc : size;
}
