/*
 * layout.c -- arithmetic of the striped linear layout (no servers).
 *
 * Logical byte x of a file striped over nsub subfiles with stripe unit u
 * lives in subfile (x / u) % nsub at fork offset (x / (u * nsub)) * u + x % u.
 *
 * The arithmetic itself is proto/layout.h's (gl_*), shared with the rest
 * of the client; these are its public face for programs that see only
 * galley.h (the MPI-IO driver).
 *
 * Threads: pure functions.
 */
#include "internal.h"
#include "layout.h"

int64_t gfs_layout_fork_size(int nsub, int64_t unit, int subfile, int64_t size)
{
    if (nsub < 1 || unit < 1 || subfile < 0 || subfile >= nsub || size < 0)
        return -22; /* -EINVAL */
    int64_t row = unit * nsub;
    int64_t full = size / row, rem = size % row;
    int64_t part = rem - (int64_t)subfile * unit;
    if (part < 0)
        part = 0;
    if (part > unit)
        part = unit;
    return full * unit + part;
}

int64_t gfs_layout_logical_size(int nsub, int64_t unit, const int64_t *fsizes)
{
    if (nsub < 1 || unit < 1 || !fsizes)
        return -22;
    int64_t size = 0;
    for (int s = 0; s < nsub; s++) {
        if (fsizes[s] < 0)
            return -22;
        if (fsizes[s] == 0)
            continue;
        int64_t last = fsizes[s] - 1;
        int64_t x = ((last / unit) * nsub + s) * unit + last % unit;
        if (x + 1 > size)
            size = x + 1;
    }
    return size;
}

int gfs_layout_locate(int nsub, int64_t unit, int64_t offset,
                      int64_t *fork_offset, int64_t *room)
{
    if (nsub < 1 || unit < 1 || offset < 0)
        return -22; /* -EINVAL */
    uint64_t foff, r;
    unsigned sub =
        gl_locate((uint64_t)unit, (unsigned)nsub, (uint64_t)offset, &foff, &r);
    if (fork_offset)
        *fork_offset = (int64_t)foff;
    if (room)
        *room = (int64_t)r;
    return (int)sub;
}
