/*
 * structured.c -- simple-strided, nested-strided and nested-batched
 * requests (Galley paper section 5.3).  All three are one shape: a batch of
 * entries, each a piece or a nested stride; gc_expand_batch turns a batch
 * into the pieces of list I/O, and io.c's chunk builder folds regular runs
 * back into strided wire segments, so a strided request is compact on the
 * wire however many pieces it has.
 *
 * Threads: any; no shared state.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Checks one entry; *npieces receives its piece count. */
static int entry_check(const gfs_batch_entry *e, bool have_buf,
                       uint64_t *npieces)
{
    if (e->file_offset < 0 || e->size < 0 || e->nlevels < 0 ||
        e->nlevels > GFS_MAX_LEVELS)
        return -EINVAL;
    uint64_t n = 1, reach = (uint64_t)e->file_offset;
    for (int l = 0; l < e->nlevels; l++) {
        const gfs_stride *s = &e->levels[l];
        if (s->count < 0 || s->fstride < 0)
            return -EINVAL;
        if (s->count == 0) {
            *npieces = 0;
            return 0;
        }
        if (n > GP_MAX_PIECES / (uint64_t)s->count)
            return GFS_ETOOBIG;
        n *= (uint64_t)s->count;
        uint64_t span = (uint64_t)(s->count - 1);
        if (s->fstride && span > GP_MAX_OFFSET / (uint64_t)s->fstride)
            return -EINVAL;
        span *= (uint64_t)s->fstride;
        if (span > GP_MAX_OFFSET - reach)
            return -EINVAL;
        reach += span;
    }
    if ((uint64_t)e->size > GP_MAX_OFFSET - reach)
        return -EINVAL;
    if (e->size && !have_buf)
        return -EINVAL;
    *npieces = e->size ? n : 0;
    return 0;
}

int gc_expand_batch(int64_t n, const gfs_batch_entry *e, char *buf,
                    gp_ext **out, size_t *np, int64_t *total)
{
    if (n < 0 || (n && !e))
        return -EINVAL;
    uint64_t count = 0;
    int64_t bytes = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t k;
        int rc = entry_check(&e[i], buf != NULL, &k);
        if (rc)
            return rc;
        if (k > GP_MAX_PIECES - count)
            return GFS_ETOOBIG;
        count += k;
        bytes += (int64_t)k * e[i].size;
    }
    gp_ext *p = malloc(sizeof(*p) * (count ? count : 1));
    if (!p)
        return -ENOMEM;
    size_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        const gfs_batch_entry *b = &e[i];
        if (b->size == 0)
            continue;
        int L = b->nlevels;
        bool empty = false;
        for (int l = 0; l < L; l++)
            empty |= b->levels[l].count == 0;
        if (empty)
            continue;
        int64_t idx[GFS_MAX_LEVELS] = {0};
        for (;;) {
            uint64_t off = (uint64_t)b->file_offset;
            char *mem = buf + b->mem_offset;
            for (int l = 0; l < L; l++) {
                off += (uint64_t)(idx[l] * b->levels[l].fstride);
                mem += idx[l] * b->levels[l].mstride;
            }
            p[at++] = (gp_ext){off, (uint64_t)b->size, {mem}};
            int l = L - 1;
            while (l >= 0 && ++idx[l] == b->levels[l].count) {
                idx[l] = 0;
                l--;
            }
            if (l < 0)
                break;
        }
    }
    *out = p;
    *np = at;
    *total = bytes;
    return 0;
}

/* ------------------------------------------------------ preparation ---- */

int gc_prep_batch(gc_op **o, int kid, int op, int64_t n,
                  const gfs_batch_entry *e, void *buf)
{
    if (op != GFS_READ && op != GFS_WRITE)
        return -EINVAL;
    gp_ext *p;
    size_t np;
    int64_t total;
    int rc = gc_expand_batch(n, e, buf, &p, &np, &total);
    if (rc)
        return rc;
    return gc_op_fork(o, kid, op, p, np, total);
}

int gc_prep_nested(gc_op **o, int kid, int op, int64_t offset, void *buf,
                   int64_t size, int nlevels, const gfs_stride *levels)
{
    if (nlevels < 1 || nlevels > GFS_MAX_LEVELS || !levels)
        return -EINVAL;
    gfs_batch_entry b = {
        .file_offset = offset, .size = size, .nlevels = nlevels};
    memcpy(b.levels, levels, sizeof(*levels) * (size_t)nlevels);
    return gc_prep_batch(o, kid, op, 1, &b, buf);
}

int gc_prep_strided(gc_op **o, int kid, int op, int64_t offset, void *buf,
                    int64_t size, int64_t count, int64_t fstride,
                    int64_t mstride)
{
    gfs_stride l = {count, fstride, mstride};
    return gc_prep_nested(o, kid, op, offset, buf, size, 1, &l);
}

/* ---------------------------------------------------------- blocking --- */

/* Run what a prep function made, or pass its error on. */
static int64_t run(int rc, gc_op *o)
{
    return rc ? rc : gc_op_run(o);
}

int64_t gfs_read_strided(int kid, int64_t offset, void *buf, int64_t size,
                         int64_t count, int64_t fstride, int64_t mstride)
{
    gc_op *o = NULL;
    int rc = gc_prep_strided(&o, kid, GFS_READ, offset, buf, size, count,
                             fstride, mstride);
    return run(rc, o);
}

int64_t gfs_write_strided(int kid, int64_t offset, const void *buf,
                          int64_t size, int64_t count, int64_t fstride,
                          int64_t mstride)
{
    gc_op *o = NULL;
    int rc = gc_prep_strided(&o, kid, GFS_WRITE, offset, (void *)buf, size,
                             count, fstride, mstride);
    return run(rc, o);
}

int64_t gfs_read_nested(int kid, int64_t offset, void *buf, int64_t size,
                        int nlevels, const gfs_stride *levels)
{
    gc_op *o = NULL;
    int rc =
        gc_prep_nested(&o, kid, GFS_READ, offset, buf, size, nlevels, levels);
    return run(rc, o);
}

int64_t gfs_write_nested(int kid, int64_t offset, const void *buf, int64_t size,
                         int nlevels, const gfs_stride *levels)
{
    gc_op *o = NULL;
    int rc = gc_prep_nested(&o, kid, GFS_WRITE, offset, (void *)buf, size,
                            nlevels, levels);
    return run(rc, o);
}

int64_t gfs_batch_io(int kid, int op, int64_t n, const gfs_batch_entry *e,
                     void *buf)
{
    gc_op *o = NULL;
    int rc = gc_prep_batch(&o, kid, op, n, e, buf);
    return run(rc, o);
}
