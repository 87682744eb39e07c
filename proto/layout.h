/*
 * layout.h -- striping arithmetic, once: where a logical byte of a striped
 * linear file lives, and back.  Header-only (static inline) so that the
 * client's layers, SFIO and the unit tests share one definition without a
 * call per fragment; the MPI-IO driver, which sees only galley.h, reaches
 * the same code through gfs_layout_locate (libgalley/layout.c).
 *
 * Logical byte x of a file striped over nsub subfiles with stripe unit u
 * lives in subfile (x / u) % nsub at fork offset
 * (x / (u * nsub)) * u + x % u.  The locality layout cuts the same stream
 * into blocks of u bytes (gp_block).
 *
 * Threads: pure functions.
 */
#ifndef GALLEY_LAYOUT_H
#define GALLEY_LAYOUT_H

#include <stdint.h>

/* Subfile of logical byte x; *foff its fork offset and *room the bytes
 * from x to the end of its stripe unit (x .. x + *room - 1 are
 * consecutive in that fork).  unit >= 1, nsub >= 1. */
static inline unsigned gp_locate(uint64_t unit, unsigned nsub, uint64_t x,
                                 uint64_t *foff, uint64_t *room)
{
    uint64_t blk = x / unit, within = x % unit;
    *foff = (blk / nsub) * unit + within;
    *room = unit - within;
    return (unsigned)(blk % nsub);
}

/* gp_locate for a walk over increasing (or nearby) offsets: the stripe
 * unit of the last look-up is kept, so offsets inside it cost no
 * division.  Start with gp_cursor_init. */
typedef struct gp_cursor {
    uint64_t unit;
    unsigned nsub, sub;
    uint64_t lo, hi; /* the unit's logical range [lo, hi); empty at first */
    uint64_t fbase;  /* its first byte's fork offset */
} gp_cursor;

static inline gp_cursor gp_cursor_init(uint64_t unit, unsigned nsub)
{
    return (gp_cursor){.unit = unit, .nsub = nsub, .lo = 1, .hi = 0};
}

static inline unsigned gp_cursor_locate(gp_cursor *c, uint64_t x,
                                        uint64_t *foff, uint64_t *room)
{
    if (x < c->lo || x >= c->hi) {
        uint64_t r;
        c->sub = gp_locate(c->unit, c->nsub, x, &c->fbase, &r);
        c->fbase -= c->unit - r; /* back to the unit's first byte */
        c->lo = x - (c->unit - r);
        c->hi = x + r;
    }
    *foff = c->fbase + (x - c->lo);
    *room = c->hi - x;
    return c->sub;
}

/* Logical offset of fork offset foff of subfile sub (gp_locate's
 * inverse); the caller keeps it below 2^63. */
static inline uint64_t gp_logical(uint64_t unit, unsigned nsub, unsigned sub,
                                  uint64_t foff)
{
    return ((foff / unit) * nsub + sub) * unit + foff % unit;
}

/* Bytes of subfile sub's fork in a file of `size` logical bytes. */
static inline uint64_t gp_fork_size(uint64_t unit, unsigned nsub, unsigned sub,
                                    uint64_t size)
{
    uint64_t row = unit * nsub, full = size / row, rem = size % row;
    uint64_t before = (uint64_t)sub * unit;
    uint64_t part = rem > before ? rem - before : 0;
    return full * unit + (part > unit ? unit : part);
}

/* Logical size of a file whose subfiles' forks hold sizes[0..nsub) bytes:
 * one past the highest logical byte any of them holds. */
static inline uint64_t gp_logical_size(uint64_t unit, unsigned nsub,
                                       const uint64_t *sizes)
{
    uint64_t size = 0;
    for (unsigned s = 0; s < nsub; s++)
        if (sizes[s] && gp_logical(unit, nsub, s, sizes[s] - 1) + 1 > size)
            size = gp_logical(unit, nsub, s, sizes[s] - 1) + 1;
    return size;
}

/* The locality layout's block of logical byte x: block number, offset in
 * it, and the bytes from x to the block's end. */
static inline uint64_t gp_block(uint64_t unit, uint64_t x, uint64_t *within,
                                uint64_t *room)
{
    *within = x % unit;
    *room = unit - *within;
    return x / unit;
}

#endif /* GALLEY_LAYOUT_H */
