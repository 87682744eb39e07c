/*
 * write_bypass.c -- the write strategy for a fork whose file same-host
 * clients write themselves (direct.c: f->direct_w > 0): no cache; exactly
 * the pieces' bytes go to the file (g_fd_write, fdio.h), never a block
 * with the bytes around them, which a direct writer may have changed.
 *
 *   - a checksummed fork (never in locked mode, direct.c rule 7): csum.c's
 *     bypass write, chunk-locked and checked as the clients' writes are;
 *   - locked mode (direct.c rules 4-6): under OFD locks, which also lets
 *     it sieve like the locked holders (the pieces are sorted and
 *     resolved, so disjoint);
 *   - otherwise g_fd_write.
 *
 * The fork's size is then its file's.  A failure rolls nothing back (the
 * file may hold direct writes past our old size): io_write.c skips its
 * roll-back for this strategy.
 *
 * Threads: handler threads; the fork's rwlock held exclusively.
 */
#include "io_internal.h"
#include "fdio.h"

int gsrv_write_bypass(io_req *q)
{
    for (size_t i = 0; i < q->n; i++)
        q->it[i].mem = (char *)gsrv_io_item_data(q, &q->it[i]);
    int rc = q->f->cfd >= 0 ? gsrv_csum_bypass_write(q->f, q->it, q->n)
             : gsrv_fork_locked(q->f)
                 ? g_fd_write_locked(q->f->fd, 0, q->it, q->n, true)
                 : g_fd_write(q->f->fd, 0, q->it, q->n);
    if (!rc)
        q->size = gsrv_fork_size(q->f);
    return rc;
}
