/*
 * route.c -- how a request's data moves, decided here and nowhere else
 * (route.h lists the cases; the units named there carry them out).
 *
 * The rules, and why:
 *
 * - A replicated fork's transfer goes to every copy (repl_io.c); each
 *   copy's transfer goes through its server, never a transport's whole
 *   path: the copies' acknowledgement rule (repl.c) is the servers'.
 * - A checksummed fork's chunks carry their data in the stream with its
 *   CRC, never by cross-memory attach (no CRC would cover that copy).
 *   Its whole transfers may still go direct: the direct transport keeps
 *   the CRCs itself (csfile.h), or declines to the stream.
 * - A connection inherited from a parent process (fork() without exec)
 *   takes only the stream: the grants and the memory that the direct
 *   and cross-memory-attach paths name are the parent's.
 * - On the direct path, reads always go direct (pieces close together are
 *   read as one span and copied out, as ROMIO's data sieving does);
 *   writes whose pieces average at least GALLEY_DIRECT_WRITE_MIN bytes
 *   (default 512) over the whole transfer go direct, a pwritev per run
 *   of adjacent pieces.  Writes of smaller pieces are sieved there too,
 *   as ROMIO's ufs: does: a span is read, patched and written back, one
 *   system call pair for thousands of 16-byte pieces where one pwrite
 *   each costs more than the round trip that carries them all to the
 *   server.  That is safe only under locks (the fork in locked mode,
 *   servers/direct.c), so sparse small pieces (range over
 *   GC_SIEVE_SPARSE times their bytes) and a checksummed fork's small
 *   pieces go to the server instead; so do all small pieces with
 *   GALLEY_DIRECT_SIEVE=0.  The case covers the whole transfer, so the
 *   pieces of one write land in list order (a later one wins where they
 *   overlap).
 * - A striped open's small first op (one transfer within one stripe
 *   unit: a small file's read or write, striped_io.c small_first) goes
 *   through the server even on the direct path: its fork has no
 *   descriptor yet, and asking for one and giving it back at close are
 *   two round trips where the server's copy (cross-memory attach) adds
 *   none.  The open's next transfer to the fork asks for the descriptor.
 * - A single-range read of a striped file goes by its reader (a preadv
 *   per subfile it touches) when the file's forks are neither checksummed nor
 *   replicated (a copy's reads fail over, which the reader cannot) and
 *   the range is at most GC_FAST_UNITS pieces; GALLEY_FAST_READ=0 sends
 *   them all through an op (for measuring).
 */
#include "route.h"

/* ... unless their range is this many times their bytes or more (sparse:
 * a span per piece) */
#define GC_SIEVE_SPARSE 64

enum gc_way gc_route_fork(const gc_fork *k)
{
    return k->ncopy > 1 ? GC_WAY_COPIES : GC_WAY_ANY;
}

enum gc_way gc_route_copy(void)
{
    return GC_WAY_SERVER;
}

bool gc_route_offered(const gc_conn *c, const gc_xfer *x)
{
    return x->way == GC_WAY_ANY && gc_conn_owned(c);
}

bool gc_route_stream(const gc_conn *c, const gc_chunk *ch)
{
    return ch->csum || !gc_conn_owned(c);
}

enum gc_whole gc_route_whole(int op, const gc_xfer *x, uint64_t *bytesp,
                             uint64_t *endp)
{
    bool write = op == GFS_WRITE;
    uint64_t bytes = 0, end = 0, start = UINT64_MAX, nonempty = 0;
    if (x->shaped) { /* learnt when the pieces were cut (gc_xfer) */
        bytes = x->bytes;
        end = x->hi;
        start = x->lo;
        nonempty = x->n;
    }
    for (size_t i = 0; !x->shaped && i < x->n; i++)
        if (x->pieces[i].len) {
            bytes += x->pieces[i].len;
            nonempty++;
            if (gp_end(&x->pieces[i]) > end)
                end = gp_end(&x->pieces[i]);
            if (x->pieces[i].off < start)
                start = x->pieces[i].off;
        }
    *bytesp = bytes;
    *endp = end;
    if (!bytes)
        return GC_WHOLE_NOTHING;
    if (x->once)
        return GC_WHOLE_SERVER;
    if (!write)
        return GC_WHOLE_READ;
    uint64_t min = (uint64_t)g_config_int(G_CFG_DIRECT_WRITE_MIN);
    if (bytes / nonempty >= min)
        return GC_WHOLE_WRITE;
    if (x->csum || !g_config_bool(G_CFG_DIRECT_SIEVE) ||
        (end - start) / GC_SIEVE_SPARSE > bytes)
        return GC_WHOLE_SERVER;
    return GC_WHOLE_SIEVE;
}

bool gc_route_fast_on(void)
{
    return g_config_bool(G_CFG_FAST_READ);
}

bool gc_route_fast(const gc_fork *k)
{
    return !k->csum && k->ncopy <= 1;
}
