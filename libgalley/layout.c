/*
 * layout.c -- arithmetic of the striped linear layout (no servers).
 *
 * Logical byte x of a file striped over nsub subfiles with stripe unit u
 * lives in subfile (x / u) % nsub at fork offset (x / (u * nsub)) * u + x % u.
 *
 * The arithmetic itself is proto/layout.h's (gp_*), shared with the rest
 * of the client; these are its public face for programs that see only
 * galley.h (the MPI-IO driver).
 *
 * Threads: pure functions.
 */
#include "internal.h"
#include "layout.h"

#include <errno.h>

int64_t gfs_layout_fork_size(int nsub, int64_t unit, int subfile, int64_t size)
{
    if (nsub < 1 || unit < 1 || subfile < 0 || subfile >= nsub || size < 0)
        return -EINVAL;
    return (int64_t)gp_fork_size((uint64_t)unit, (unsigned)nsub,
                                 (unsigned)subfile, (uint64_t)size);
}

int64_t gfs_layout_logical_size(int nsub, int64_t unit, const int64_t *fsizes)
{
    if (nsub < 1 || nsub > GFS_MAX_SUBFILES || unit < 1 || !fsizes)
        return -EINVAL;
    uint64_t u[GFS_MAX_SUBFILES];
    for (int s = 0; s < nsub; s++) {
        if (fsizes[s] < 0)
            return -EINVAL;
        u[s] = (uint64_t)fsizes[s];
    }
    return (int64_t)gp_logical_size((uint64_t)unit, (unsigned)nsub, u);
}

int gfs_layout_locate(int nsub, int64_t unit, int64_t offset,
                      int64_t *fork_offset, int64_t *room)
{
    if (nsub < 1 || unit < 1 || offset < 0)
        return -EINVAL;
    uint64_t foff, r;
    unsigned sub =
        gp_locate((uint64_t)unit, (unsigned)nsub, (uint64_t)offset, &foff, &r);
    if (fork_offset)
        *fork_offset = (int64_t)foff;
    if (room)
        *room = (int64_t)r;
    return (int)sub;
}
