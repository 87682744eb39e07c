/*
 * io.c -- the one data path.  Every data interface (plain, list, striped,
 * and later strided and non-blocking) ends in gc_transfer: pieces of forks
 * become wire extents (file-adjacent neighbours merged), cut into requests
 * no larger than what the server said it can buffer, pipelined a few deep
 * per server and run concurrently across servers.  Write data goes from
 * user memory to the socket (vectored send); read data is scattered by the
 * connection straight into user memory -- or, on a same-host connection
 * with cross-memory attach, the request names the user memory and the
 * server copies: which form a request takes is its transport's business
 * (transport.h: gc_conn_io_submit); this file only builds the chunks.
 * A transport that moves a whole transfer itself (the direct transport:
 * the client holds the fork's file) is offered each transfer first
 * (transport.h: xfer) and no chunk is built for the ones it takes.
 *
 * Threads: any; the calling thread submits and waits.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* gettid */
#endif
#include "internal.h"
#include "route.h"
#include "transport.h"

#include "crc32c.h"
#include "gfault.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GC_WINDOW 4                  /* requests in flight per transfer       */
#define GC_MAX_CHUNK_SEGS (1u << 20) /* wire extents per request        */
/* checksummed requests damaged in transit are sent again this often */
#define GC_CSUM_RESENDS 2

/* One request of a transfer (transport.h), built from pieces [from..]
 * of the xfer. */
typedef struct chunk {
    gc_chunk ch;
    int xi; /* index of its gc_xfer */
    int resends;
    /* test-only (GALLEY_TEST_FLIP_WIRE): the damaged copy sent first, and
     * the real iovecs to send again */
    uint8_t *flipped;
    struct iovec *real_iov;
    int real_niov;
} chunk;

/* The test-only fault switch (servers/csum.c documents it): flip one bit
 * of the data of the first N checksummed writes this process sends.  Only
 * in the test build (common/gfault.h); otherwise always false. */
static bool fault_flip(void)
{
    static long left = -1;
    return g_fault_take(&left, G_CFG_TEST_FLIP_WIRE);
}

/* Test-only: send a copy of the data with one bit flipped (the CRC in the
 * descriptor is the real data's); resending restores the real iovecs. */
static void fault_damage(chunk *c)
{
    if (!c->ch.bytes || !(c->flipped = malloc(c->ch.bytes)))
        return;
    uint64_t at = 0;
    for (int i = 0; i < c->ch.niov; i++) {
        memcpy(c->flipped + at, c->ch.iov[i].iov_base, c->ch.iov[i].iov_len);
        at += c->ch.iov[i].iov_len;
    }
    c->flipped[c->ch.bytes / 2] ^= 0x10;
    c->real_iov = c->ch.iov;
    c->real_niov = c->ch.niov;
    c->ch.iov = malloc(sizeof(*c->ch.iov));
    if (!c->ch.iov) {
        c->ch.iov = c->real_iov;
        c->real_iov = NULL;
        return;
    }
    c->ch.iov[0] = (struct iovec){c->flipped, c->ch.bytes};
    c->ch.niov = 1;
}

static void fault_undo(chunk *c)
{
    if (!c->real_iov)
        return;
    free(c->ch.iov);
    c->ch.iov = c->real_iov;
    c->ch.niov = c->real_niov;
    c->real_iov = NULL;
}

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
    gc_req_release(&c->ch.req);
    gp_wbuf_free(&c->ch.desc);
    fault_undo(c);
    free(c->ch.iov);
    free(c->ch.rcopy);
    free(c->flipped);
    free(c);
}

/* The head of a chunk's descriptor: IO_READ, IO_WRITE and their V forms
 * begin alike (gmsg.h: fkid, then the segs tail); the transport picks the
 * opcode (transport.h).  A checksummed fork's are IO_CREAD / IO_CWRITE,
 * the latter with the CRC of the data. */
static void head_encode(gp_wbuf *d, int op, const gc_xfer *x, uint32_t crc)
{
    if (x->csum && op == GFS_WRITE)
        gp_IO_CWRITE_req_encode(
            d, &(gp_IO_CWRITE_req){.fkid = x->fkid, .crc = crc});
    else if (x->csum)
        gp_IO_CREAD_req_encode(d, &(gp_IO_CREAD_req){.fkid = x->fkid});
    else if (op == GFS_WRITE)
        gp_IO_WRITE_req_encode(d, &(gp_IO_WRITE_req){.fkid = x->fkid});
    else
        gp_IO_READ_req_encode(d, &(gp_IO_READ_req){.fkid = x->fkid});
}

/*
 * Build the next request of x from the cursor; NULL with *err = 0 when
 * there is nothing left.  The file side is folded straight into the
 * descriptor after its head (gp_folder, extent.h): file-adjacent pieces
 * merge into one extent, equal-size pieces at a constant file stride
 * become one strided segment, so regular patterns stay compact on the
 * wire whatever interface produced them.  Memory is the client's
 * business: every piece keeps its own iovec unless memory-contiguous too
 * (the kernel's readv/writev and the CRC take iovecs; a cross-memory-
 * attach connection folds them in turn, transport_cma.c).
 */
static chunk *chunk_build(int op, const gc_xfer *x, cursor *cur, int *err)
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
    gp_wbuf *d = &c->ch.desc;
    gp_wbuf_init(d);
    head_encode(d, op, x, 0); /* a CWRITE's CRC is filled in below */
    gp_folder segs;
    gp_folder_init(&segs, d, GC_MAX_CHUNK_SEGS);
    size_t cap = 16;
    c->ch.iov = malloc(sizeof(*c->ch.iov) * cap);
    uint64_t npieces = 0; /* at most limit / GP_PIECE_DIVISOR (gproto.h) */

    while (cur->piece < x->n && c->ch.iov) {
        const gp_ext *p = &x->pieces[cur->piece];
        if (p->len == 0) {
            cur->piece++;
            continue;
        }
        uint64_t room = cur->limit - c->ch.bytes;
        if (room == 0 || npieces++ == cur->limit / GP_PIECE_DIVISOR)
            break;
        uint64_t off = p->off + cur->done;
        uint64_t take = p->len - cur->done;
        if (take > room)
            take = room;
        if (!gp_folder_add(&segs, off, take))
            break;
        char *mem = p->mem + cur->done;
        if (c->ch.niov > 0 && (char *)c->ch.iov[c->ch.niov - 1].iov_base +
                                      c->ch.iov[c->ch.niov - 1].iov_len ==
                                  mem) {
            c->ch.iov[c->ch.niov - 1].iov_len += take;
        } else {
            if ((size_t)c->ch.niov == cap) {
                cap *= 2;
                struct iovec *nv = realloc(c->ch.iov, sizeof(*nv) * cap);
                if (!nv) {
                    free(c->ch.iov);
                    c->ch.iov = NULL;
                    break;
                }
                c->ch.iov = nv;
            }
            c->ch.iov[c->ch.niov++] = (struct iovec){mem, take};
        }
        c->ch.bytes += take;
        cur->done += take;
        if (cur->done == p->len) {
            cur->piece++;
            cur->done = 0;
        }
    }
    gp_folder_end(&segs);
    c->ch.csum = x->csum;
    if (x->csum && op == GFS_WRITE && c->ch.iov && !d->err) {
        /* the CRC of the data, computed here from the caller's buffer,
         * into the head written before it was known (same length) */
        size_t end = d->len;
        d->len = 0;
        head_encode(d, op, x, g_crc32c_iov(0, c->ch.iov, c->ch.niov));
        d->len = end;
    }
    int e = d->err;
    if (!c->ch.iov)
        e = -ENOMEM;
    if (e) {
        chunk_free(c);
        *err = e;
        return NULL;
    }
    if (x->csum && op == GFS_WRITE && fault_flip())
        fault_damage(c);
    return c;
}

static int chunk_submit(int op, const gc_xfer *x, chunk *c)
{
    memset(&c->ch.req, 0, sizeof(c->ch.req));
    if (c->ch.csum && op == GFS_READ) {
        if (!c->ch.rcopy &&
            !(c->ch.rcopy = malloc(sizeof(*c->ch.iov) * (size_t)c->ch.niov))) {
            c->ch.req.state = GC_REQ_DONE;
            return c->ch.req.status = -ENOMEM;
        }
        memcpy(c->ch.rcopy, c->ch.iov, sizeof(*c->ch.iov) * (size_t)c->ch.niov);
    }
    return gc_conn_io_submit(gc_server_conn(x->server), op, &c->ch);
}

/* A checksummed read's data, landed in the caller's memory: does it match
 * the CRC the server sent?  If not, it is wiped before anyone sees it. */
static int cread_check(chunk *c, uint32_t crc)
{
    if (g_crc32c_iov(0, c->ch.iov, c->ch.niov) == crc)
        return 0;
    for (int i = 0; i < c->ch.niov; i++)
        memset(c->ch.iov[i].iov_base, 0, c->ch.iov[i].iov_len);
    return GFS_ECHECKSUM_WIRE;
}

/* Wait for a chunk and fold its result into its xfer.  A checksummed
 * request whose data was damaged in transit (either way) is sent again,
 * at most GC_CSUM_RESENDS times: writes are idempotent, and the server
 * wrote nothing of a damaged one.  (A resent write lands after requests
 * of its transfer that followed it; only pieces that overlap across two
 * requests of one transfer could tell.  A read's CRC is of the data in
 * order, so a read whose pieces overlap in memory would fail it.) */
static void chunk_finish(chunk *c, gc_xfer *x, int op)
{
    int rc;
again:
    rc = gc_wait(&c->ch.req);
    if (!rc) {
        gp_rbuf r;
        if (c->ch.req.riov)
            gp_rbuf_init(&r, c->ch.req.prefix, c->ch.req.prefix_len);
        else
            gp_rbuf_init(&r, c->ch.req.reply, c->ch.req.replylen);
        uint64_t fs = 0;
        switch (c->ch.req.opcode) { /* read data is not in r: a tail */
#define IO_REP(OP)                                                             \
    case GP_OP_##OP: {                                                         \
        gp_##OP##_rep m;                                                       \
        gp_##OP##_rep_decode(&r, &m);                                          \
        fs = m.size;                                                           \
        break;                                                                 \
    }
            IO_REP(IO_READ)
            IO_REP(IO_WRITE)
            IO_REP(IO_READV)
            IO_REP(IO_WRITEV)
            IO_REP(IO_CWRITE)
#undef IO_REP
        case GP_OP_IO_CREAD: {
            gp_IO_CREAD_rep m;
            gp_IO_CREAD_rep_decode(&r, &m);
            fs = m.size;
            if (!r.err)
                rc = cread_check(c, m.crc);
            break;
        }
        default:
            r.err = GFS_EPROTO;
        }
        if (gp_decode_end(&r))
            rc = GFS_EPROTO;
        else if (!rc)
            x->fork_size = fs;
    }
    if (rc == GFS_ECHECKSUM_WIRE && c->resends < GC_CSUM_RESENDS) {
        c->resends++;
        fault_undo(c);
        free(c->flipped);
        c->flipped = NULL;
        if (op == GFS_WRITE && fault_flip())
            fault_damage(c); /* test-only: damaged again */
        gc_req_release(&c->ch.req);
        chunk_submit(op, x, c);
        goto again;
    }
    if (rc && !x->status)
        x->status = rc;
}

/* The transfers not done[] as chunks: pipelined a few deep per transfer,
 * concurrently across them. */
static int transfer_chunks(int op, gc_xfer *x, size_t nx, const bool *done)
{
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
        if (done[i])
            continue;
        int rc = gc_conn_data_limit(gc_server_conn(x[i].server), &cur[i].limit);
        if (rc)
            x[i].status = rc;
    }
    for (;;) {
        /* fill every transfer's window */
        for (size_t i = 0; i < nx; i++) {
            while (!done[i] && !x[i].status && cur[i].inflight < GC_WINDOW) {
                int err;
                chunk *c = chunk_build(op, &x[i], &cur[i], &err);
                if (!c) {
                    if (err)
                        x[i].status = err;
                    break;
                }
                c->xi = (int)i;
                /* errors surface in wait */
                chunk_submit(op, &x[i], c);
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
        chunk_finish(c, &x[c->xi], op);
        cur[c->xi].inflight--;
        chunk_free(c);
    }
    free(cur);
    free(q);
    return 0;
}

#define SMALL_NX 16 /* transfers per call tracked without allocation */

int gc_transfer(int op, gc_xfer *x, size_t nx)
{
    for (size_t i = 0; i < nx; i++)
        if (x[i].way == GC_WAY_COPIES)
            return gc_repl_transfer(op, x, nx);
    return gc_transfer_plain(op, x, nx);
}

gc_xfer gc_xfer_of(const gc_fork *k, int kid, const gp_ext *pieces, size_t n)
{
    return (gc_xfer){.server = k->server,
                     .fkid = k->fkid,
                     .csum = k->csum,
                     .rkid = k->ncopy > 1 ? kid + 1 : 0,
                     .way = gc_route_fork(k),
                     .pieces = pieces,
                     .n = n};
}

/* Where a process starts its walk over a call's transfers (one per fork,
 * so per subfile of a striped call): its own place, from its thread id.
 * Processes that write one striped file in step (MPI ranks) would
 * otherwise all write subfile 0's file, then all subfile 1's, ...: a
 * buffered write holds its file's inode lock, so on a busy machine they
 * queue behind a holder the scheduler has preempted.  The transfers are
 * independent (one fork each), so their order changes nothing but who
 * waits. */
static size_t start_of(size_t nx)
{
    static __thread unsigned t_start; /* 0: not known yet */
    if (nx < 2)
        return 0;
    if (!t_start)
        t_start = (unsigned)gettid() | 0x80000000u;
    return (t_start & 0x7fffffffu) % nx;
}

int gc_transfer_plain(int op, gc_xfer *x, size_t nx)
{
    if (op != GFS_READ && op != GFS_WRITE)
        return -EINVAL;
    bool dsmall[SMALL_NX], *done = nx <= SMALL_NX ? dsmall : malloc(nx);
    if (!done)
        return -ENOMEM;
    /* a transport that moves a whole transfer at once takes it first
     * (transport.h: xfer; the direct transport: no chunk, no wire
     * descriptor); the others are cut into chunks */
    size_t left = 0, rot = start_of(nx);
    gc_conn_prepare(op, x, nx);
    for (size_t j = 0; j < nx; j++) {
        size_t i = (j + rot) % nx;
        x[i].status = 0;
        x[i].fork_size = 0;
        gc_conn *c = gc_server_conn(x[i].server);
        if (!c)
            x[i].status = -EINVAL;
        done[i] = !c || gc_conn_xfer(c, op, &x[i]) == 0;
        left += !done[i];
    }
    int rc = left ? transfer_chunks(op, x, nx, done) : 0;
    for (size_t i = 0; i < nx && !rc; i++)
        rc = x[i].status;
    if (done != dsmall)
        free(done);
    return rc;
}

/* ---------------------------------------------------------- ops ------- */

gc_op *gc_op_alloc(size_t nx, size_t nstore)
{
    size_t xoff = (sizeof(gc_op) + 15) & ~(size_t)15;
    size_t soff = xoff + ((nx * sizeof(gc_xfer) + 15) & ~(size_t)15);
    char *m = malloc(soff + (nstore ? nstore : 1) * sizeof(gp_ext));
    if (!m)
        return NULL;
    memset(m, 0, soff);
    gc_op *o = (gc_op *)m;
    o->x = (gc_xfer *)(m + xoff);
    o->store = (gp_ext *)(m + soff);
    o->one = true;
    return o;
}

void gc_op_free(gc_op *o)
{
    if (!o)
        return;
    if (o->after)
        o->after(o, -ECANCELED);
    if (!o->one) {
        free(o->x);
        free(o->store);
    }
    free(o);
}

int64_t gc_op_run(gc_op *o)
{
    int rc = gc_transfer(o->op, o->x, o->nx);
    if (o->after)
        rc = o->after(o, rc);
    int64_t res = rc ? rc : o->finish ? o->finish(o) : o->total;
    gc_op_free(o);
    return res;
}

/* Of len bytes read at off from a fork of fork_size bytes, those that lay
 * before its end. */
static int64_t before_end(uint64_t fork_size, int64_t off, int64_t len)
{
    uint64_t avail = fork_size > (uint64_t)off ? fork_size - (uint64_t)off : 0;
    return avail < (uint64_t)len ? (int64_t)avail : len;
}

/* A single-range fork read's result. */
static int64_t fork_read_result(gc_op *o)
{
    return before_end(o->x[0].fork_size, o->off, o->total);
}

int gc_op_fork(gc_op **out, int kid, int op, gp_ext *pieces, size_t n,
               int64_t total)
{
    gc_fork k;
    int rc = gc_fork_get(kid, &k);
    gc_op *o = rc ? NULL : calloc(1, sizeof(*o));
    gc_xfer *x = o ? calloc(1, sizeof(*x)) : NULL;
    if (!rc && !x)
        rc = -ENOMEM;
    if (rc) {
        free(o);
        free(pieces);
        return rc;
    }
    *x = gc_xfer_of(&k, kid, pieces, n);
    *o = (gc_op){.op = op, .x = x, .nx = 1, .store = pieces, .total = total};
    *out = o;
    return 0;
}

/* ---------------------------------------------------------- fork I/O --- */

/* Prepare list I/O on a fork (shared by gfs_listio and gfs_nb_listio). */
int gc_prep_listio(gc_op **o, int kid, int op, int64_t n,
                   const gfs_list_entry *entries, void *buf)
{
    if ((op != GFS_READ && op != GFS_WRITE) || n < 0 || (n && !entries))
        return -EINVAL;
    if ((uint64_t)n > GP_MAX_PIECES)
        return GFS_ETOOBIG;
    gp_ext *p = malloc(sizeof(*p) * (size_t)(n ? n : 1));
    if (!p)
        return -ENOMEM;
    int64_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        const gfs_list_entry *e = &entries[i];
        if (!gc_range_ok(e->file_offset, e->size) || e->mem_offset < 0 ||
            (e->size && !buf)) {
            free(p);
            return -EINVAL;
        }
        p[i].off = (uint64_t)e->file_offset;
        p[i].len = (uint64_t)e->size;
        p[i].mem = (char *)buf + e->mem_offset;
        total += e->size;
    }
    return gc_op_fork(o, kid, op, p, (size_t)n, total);
}

/* Prepare plain I/O of one range on a fork. */
int gc_prep_rw(gc_op **o, int kid, int op, int64_t offset, void *buf,
               int64_t size)
{
    if (!gc_range_ok(offset, size) || (size && !buf))
        return -EINVAL;
    gp_ext *p = malloc(sizeof(*p));
    if (!p)
        return -ENOMEM;
    *p = (gp_ext){(uint64_t)offset, (uint64_t)size, {buf}};
    int rc = gc_op_fork(o, kid, op, p, size ? 1 : 0, size);
    if (!rc && op == GFS_READ) {
        (*o)->finish = fork_read_result;
        (*o)->off = offset;
    }
    return rc;
}

/* ------------------------------------------- entry points below the API */

int64_t gc_fork_listio(int kid, int op, int64_t n,
                       const gfs_list_entry *entries, void *buf)
{
    gc_op *o;
    int rc = gc_prep_listio(&o, kid, op, n, entries, buf);
    return rc ? rc : gc_op_run(o);
}

int64_t gc_fork_rw(int kid, int op, int64_t offset, void *buf, int64_t size)
{
    gc_op *o;
    int rc = gc_prep_rw(&o, kid, op, offset, buf, size);
    return rc ? rc : gc_op_run(o);
}

int gc_forks_read(int n, const int *kids, const int64_t *offs, char *buf,
                  int64_t len, int64_t *got)
{
    if (n < 0 || len < 0)
        return -EINVAL;
    gc_xfer *x = calloc((size_t)(n ? n : 1), sizeof(*x));
    gp_ext *p = calloc((size_t)(n ? n : 1), sizeof(*p));
    int rc = x && p ? 0 : -ENOMEM;
    for (int i = 0; i < n && !rc; i++) {
        gc_fork k;
        rc = gc_fork_get(kids[i], &k);
        if (!rc && !gc_range_ok(offs[i], len))
            rc = -EINVAL;
        p[i] = (gp_ext){
            (uint64_t)offs[i], (uint64_t)len, {buf + (size_t)i * (size_t)len}};
        x[i] = gc_xfer_of(&k, kids[i], &p[i], 1);
    }
    if (!rc)
        rc = gc_transfer(GFS_READ, x, (size_t)n);
    for (int i = 0; i < n && !rc; i++)
        got[i] = before_end(x[i].fork_size, offs[i], len);
    free(x);
    free(p);
    return rc;
}

/* ------------------------------------------------------- public API --- */

int64_t gfs_listio(int kid, int op, int64_t n, const gfs_list_entry *entries,
                   void *buf)
{
    return gc_fork_listio(kid, op, n, entries, buf);
}

int64_t gfs_read(int kid, int64_t offset, void *buf, int64_t size)
{
    return gc_fork_rw(kid, GFS_READ, offset, buf, size);
}

int64_t gfs_write(int kid, int64_t offset, const void *buf, int64_t size)
{
    return gc_fork_rw(kid, GFS_WRITE, offset, (void *)buf, size);
}
