/*
 * local_io.c -- the locality layout's requests: a list request on a local
 * file becomes one transfer per subfile (gc_local_op), and a single-range
 * read's result is cut at the logical end (gc_local_read_result).
 *
 * Threads: any; gc_local.lock is held from the blocks' lookup (and a
 * write's claims) until every piece has its fork offset.
 */
#include "layout.h"
#include "local_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Cut a list request into pieces of at most one block each, in list
 * order; a piece's off is its logical offset until place() makes it a
 * fork offset. */
static int cut_blocks(uint64_t B, const gc_pieces *pc, gp_ext **out,
                      size_t *nout, int64_t *total)
{
    gp_ext *fr = NULL;
    size_t nfr = 0, capfr = 0;
    int rc = gc_pieces_check(pc, total);
    gc_pieces cur = *pc;
    uint64_t x, left;
    char *mem;
    while (!rc && gc_pieces_next(&cur, &x, &mem, &left)) {
        while (left > 0) {
            if (nfr == capfr) {
                capfr = capfr ? capfr * 2 : 64;
                gp_ext *nf = realloc(fr, sizeof(*nf) * capfr);
                if (!nf) {
                    rc = -ENOMEM;
                    break;
                }
                fr = nf;
            }
            uint64_t within, len;
            gp_block(B, x, &within, &len);
            if (len > left)
                len = left;
            fr[nfr++] = (gp_ext){.off = x, .len = len, .mem = mem};
            x += len;
            mem += len;
            left -= len;
        }
    }
    *out = fr;
    *nout = nfr;
    return rc;
}

/* The distinct blocks the pieces touch, by block number, each with how
 * far the request writes it. */
static int touched_blocks(uint64_t B, const gp_ext *fr, size_t nfr, want **out,
                          size_t *nout)
{
    want *w = malloc(sizeof(*w) * (nfr ? nfr : 1));
    if (!w)
        return -ENOMEM;
    size_t nw = 0;
    for (size_t i = 0; i < nfr; i++)
        w[i] = (want){fr[i].off / B, fr[i].off % B + fr[i].len};
    qsort(w, nfr, sizeof(*w), gc_local_want_cmp);
    for (size_t i = 0; i < nfr; i++) {
        if (nw && w[nw - 1].g == w[i].g) {
            if (w[i].end > w[nw - 1].end)
                w[nw - 1].end = w[i].end;
        } else {
            w[nw++] = w[i];
        }
    }
    *out = w;
    *nout = nw;
    return 0;
}

/* Under l->lock: know every block the request touches.  A read that
 * misses reads the maps again; a write claims its new blocks and raises
 * the written lengths. */
static int prepare_blocks(gc_local *l, int op, const want *w, size_t nw)
{
    size_t nmiss = 0;
    for (size_t i = 0; i < nw; i++)
        if (!gc_local_find(l, w[i].g))
            nmiss++;
    /* a miss: the maps may have grown (a write's claim reads them again
     * under its lock, so only a read does it here) */
    if (op == GFS_READ)
        return nmiss ? gc_local_refresh(l, false) : 0;
    want *miss = malloc(sizeof(*miss) * (nw ? nw : 1));
    if (!miss)
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < nw; i++)
        if (!gc_local_find(l, w[i].g))
            miss[k++] = w[i];
    int rc = k ? gc_local_claim(l, miss, k) : 0;
    free(miss);
    return rc ? rc : gc_local_raise_lengths(l, w, nw);
}

/* Under l->lock: each piece's subfile (-1 for a hole, whose memory reads
 * as zeros) and fork offset, slot * B + offset in the block. */
static void place(gc_local *l, gp_ext *fr, size_t nfr, int *subof)
{
    uint64_t B = l->bsize;
    for (size_t i = 0; i < nfr; i++) {
        blk *b = gc_local_find(l, fr[i].off / B);
        subof[i] = b ? b->sub : -1;
        if (b)
            fr[i].off = b->slot * B + fr[i].off % B;
        else
            memset(fr[i].mem, 0, fr[i].len);
    }
}

/* The transfers of the op: per subfile, its pieces in list order. */
static int fill_xfers(gc_local *l, gc_op *o, const gp_ext *fr, size_t nfr,
                      const int *subof, const int *kids)
{
    size_t at = 0;
    for (int s = 0; s < l->nsub; s++) {
        size_t first = at;
        for (size_t i = 0; i < nfr; i++)
            if (subof[i] == s)
                o->store[at++] = fr[i];
        if (at == first)
            continue;
        gc_fork k;
        int rc = gc_fork_get(kids[s], &k);
        if (rc)
            return rc;
        o->x[o->nx++] = gc_xfer_of(&k, kids[s], o->store + first, at - first);
    }
    return 0;
}

int gc_local_op(gc_local *l, int sid, gc_op **out, int op, const gc_pieces *p,
                const int *kids)
{
    if (op != GFS_READ && op != GFS_WRITE)
        return -EINVAL;
    gp_ext *fr;
    size_t nfr, nw = 0;
    int64_t total;
    want *w = NULL;
    int rc = cut_blocks(l->bsize, p, &fr, &nfr, &total);
    if (!rc)
        rc = touched_blocks(l->bsize, fr, nfr, &w, &nw);

    pthread_mutex_lock(&l->lock);
    if (!rc)
        rc = prepare_blocks(l, op, w, nw);
    gc_op *o = rc ? NULL : gc_op_alloc((size_t)l->nsub, nfr);
    if (!rc && !o)
        rc = -ENOMEM;
    int *subof = rc ? NULL : malloc(sizeof(*subof) * (nfr ? nfr : 1));
    if (!rc && !subof)
        rc = -ENOMEM;
    if (!rc)
        place(l, fr, nfr, subof);
    pthread_mutex_unlock(&l->lock);
    if (!rc)
        rc = fill_xfers(l, o, fr, nfr, subof, kids);
    free(subof);
    free(fr);
    free(w);
    if (rc) {
        gc_op_free(o);
        return rc;
    }
    o->op = op;
    o->total = total;
    o->sid = sid;
    *out = o;
    return 0;
}

int64_t gc_local_size(gc_local *l)
{
    pthread_mutex_lock(&l->lock);
    int rc = gc_local_refresh(l, true);
    int64_t size = rc ? rc : (int64_t)l->maxend;
    pthread_mutex_unlock(&l->lock);
    return size;
}

int64_t gc_local_read_result(gc_local *l, gc_op *o)
{
    int64_t end = o->off + o->total;
    pthread_mutex_lock(&l->lock);
    int64_t lower = (int64_t)l->maxend;
    pthread_mutex_unlock(&l->lock);
    if (lower < end) {
        lower = gc_local_size(l);
        if (lower < 0)
            return lower;
    }
    if (lower <= o->off)
        return 0;
    return lower < end ? lower - o->off : o->total;
}
