/*
 * pieces.c -- a request's pieces from either public form, read once: the
 * paired list (gfs_list_entry: file offset, memory offset from buf, size)
 * or the two independent lists (gfs_range file ranges, gfs_memseg memory
 * segments).  The striped and local layouts cut the runs it yields
 * straight into their per-server fragments; nothing else copies the list.
 *
 * Threads: a cursor belongs to its caller.
 */
#include "internal.h"

#include <errno.h>

gc_pieces gc_pieces_paired(int64_t n, const gfs_list_entry *e, void *buf)
{
    return (gc_pieces){.nr = n, .e = e, .buf = buf};
}

gc_pieces gc_pieces_lists(int64_t nr, const gfs_range *r, int64_t nseg,
                          const gfs_memseg *seg)
{
    return (gc_pieces){.nr = nr, .r = r, .nseg = nseg, .seg = seg};
}

gc_pieces gc_pieces_ranges(int64_t nr, const gfs_range *r)
{
    return (gc_pieces){.nr = nr, .r = r, .count_only = true};
}

int gc_pieces_check(const gc_pieces *p, int64_t *total)
{
    int64_t t = 0, m = 0;
    *total = 0;
    if (p->nr < 0 || (p->nr && !p->e && !p->r))
        return -EINVAL;
    for (int64_t i = 0; i < p->nr; i++) {
        int64_t off = p->e ? p->e[i].file_offset : p->r[i].offset;
        int64_t size = p->e ? p->e[i].size : p->r[i].size;
        if (!gc_range_ok(off, size) ||
            (p->e && (p->e[i].mem_offset < 0 || (size && !p->buf))))
            return -EINVAL;
        t += size;
    }
    if (!p->e && !p->count_only) {
        if (p->nseg < 0 || (p->nseg && !p->seg))
            return -EINVAL;
        for (int64_t j = 0; j < p->nseg; j++) {
            if (p->seg[j].size < 0 || (p->seg[j].size && !p->seg[j].addr) ||
                (uint64_t)p->seg[j].size > GP_MAX_OFFSET - (uint64_t)m)
                return -EINVAL;
            m += p->seg[j].size;
        }
        if (m != t)
            return -EINVAL;
    }
    *total = t;
    return 0;
}

bool gc_pieces_single(const gc_pieces *p)
{
    return p->nr == 1 && (p->e || p->nseg == 1);
}

uint64_t gc_pieces_first(const gc_pieces *p)
{
    if (p->nr == 0)
        return 0;
    return (uint64_t)(p->e ? p->e[0].file_offset : p->r[0].offset);
}
