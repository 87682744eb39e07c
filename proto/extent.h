/*
 * extent.h -- the one piece type inside client and server, and what both
 * do with lists of pieces.  Compiled into libgalley and galleyd with the
 * rest of proto/; no I/O, no allocation except where stated.
 *
 * Three piece types exist end to end: gfs_list_entry at the API
 * (galley.h), gp_seg on the wire (gproto.h) and gp_ext in between.  A
 * request's path through this module:
 *
 *   client: pieces (gp_ext, ref = memory) -> gp_order -> gp_folder into
 *           gp_seg, extents merged and equal strides folded
 *   server: gp_seg -> gp_seg_expand (gp_ext) -> gp_number (ref = data
 *           position, list order) -> gp_sort -> gp_extent_at / gp_resolve
 *
 * Overlap semantics (the file's rule, not an accident of sorting): pieces
 * of one write that overlap are applied in list order, so a later piece
 * wins; reads of overlapping pieces each get the bytes.
 *
 * Threads: pure functions on caller-owned arrays.
 */
#ifndef GALLEY_EXTENT_H
#define GALLEY_EXTENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gproto.h"

/* len bytes at fork offset off.  ref says where the bytes are: the
 * client's memory (mem), or the position of the piece's data in the
 * request's data stream, which is also its list order (src). */
typedef struct gp_ext {
    uint64_t off;
    uint64_t len;
    union {
        char *mem;
        uint64_t src;
    };
} gp_ext;

/* End of a piece (off + len; callers keep both below GP_MAX_OFFSET). */
static inline uint64_t gp_end(const gp_ext *e)
{
    return e->off + e->len;
}

/* Append the expansion of a segment to out[*n ...], in list order (off and
 * len; ref is left as it is, gp_number sets it); the caller sized out by
 * gp_seg_measure (gproto.h). */
void gp_seg_expand(const gp_seg *s, gp_ext *out, uint64_t *n);

/* Drop empty pieces and number the others by their data position: src of
 * each is the sum of the lengths before it.  Returns the new count. */
size_t gp_number(gp_ext *e, size_t n);

/* True when the pieces are in offset order (ties allowed). */
bool gp_sorted(const gp_ext *e, size_t n);

/* True when every piece starts at or after the end of the one before
 * (sorted and no two overlap). */
bool gp_disjoint(const gp_ext *e, size_t n);

/* Sort by offset, stably (pieces at one offset keep list order).  Uses a
 * scratch array of n pieces: 0, or -ENOMEM with e unchanged. */
int gp_sort(gp_ext *e, size_t n);
/* Back to list order: sort by src (numbered pieces).  0 or -ENOMEM. */
int gp_sort_src(gp_ext *e, size_t n);

/*
 * Order a subfile's pieces for the wire: by offset when that changes no
 * outcome.  Reads are always sorted; writes stay in list order when their
 * pieces overlap (the server applies overlapping pieces in request order).
 * Without memory for sorting the list order is kept: always correct,
 * perhaps slower.
 */
void gp_order(gp_ext *e, size_t n, bool write);

/* In a list sorted by offset, the extent that starts at piece i: pieces
 * [i, return value) that touch or overlap, covering [*off, *end);
 * *overlap (if not NULL) when some of them overlap. */
size_t gp_extent_at(const gp_ext *e, size_t n, size_t i, uint64_t *off,
                    uint64_t *end, bool *overlap);

/*
 * A write's overlaps, resolved: in a list sorted by offset whose src are
 * positions in data, every extent with overlapping pieces is replaced by
 * one piece holding the bytes of applying them in list order.  Its data
 * is in *resolved (malloc'd here when needed, NULL otherwise; the caller
 * frees) and its src is `flag` | position in *resolved.  0 or -ENOMEM.
 */
int gp_resolve(gp_ext *e, size_t *n, const uint8_t *data, uint8_t **resolved,
               uint64_t flag);

/*
 * Folding pieces into wire segments, the one rule and the one loop around
 * it for every list of pieces going to the wire (the client's file side,
 * io.c; its memory side on a cross-memory-attach connection,
 * transport_cma.c; the count the drivers decide aggregation with,
 * striped.c).  The segment being built is an extent or a strided segment
 * of one level; a piece joins it when it can (file-adjacent to an extent:
 * a longer extent; the same size at the same stride: one more strided
 * piece), else it starts the next.  Backward or overlapping pieces are
 * never folded, so list order is kept.
 *
 * With out, the folder writes the wire's segment list there (gmsg.h segs
 * and mem: u32 count, then the segments, gp_put_seg); out NULL: it only
 * counts.  Pieces are added in list order; max (0: none) bounds the
 * segments: gp_folder_add returns false, taking nothing, when the piece
 * would start segment max + 1.  gp_folder_end appends the open segment,
 * fills in the count and answers it.
 */
typedef struct gp_folder {
    gp_wbuf *out;
    size_t count_at; /* where in out the count goes */
    uint64_t max;
    uint64_t nseg; /* segments appended or open */
    bool open;
    gp_seg s;
} gp_folder;

void gp_folder_init(gp_folder *f, gp_wbuf *out, uint64_t max);
bool gp_folder_add(gp_folder *f, uint64_t off, uint64_t len);
uint64_t gp_folder_end(gp_folder *f);

#endif /* GALLEY_EXTENT_H */
