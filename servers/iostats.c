/*
 * iostats.c -- how many data bytes this server has written and read for
 * clients on its own host and for clients on other hosts (IO_STATS).
 *
 * The locality layout (libgalley/local_layout.c) promises that a writer's
 * blocks land on its own host's server; these counters are how a test or
 * an operator checks that promise without trusting the client: the server
 * classifies each connection itself.  A same-host Unix socket is local; a
 * TCP connection is local when its peer address is the address the
 * connection arrived on (the client used one of this host's addresses,
 * loopback included, from this host's network namespace); anything else
 * is another host.
 *
 * Threads: any handler thread; the counters are atomics, no lock.
 */
#include "gsrv_internal.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

enum { ST_WR_LOCAL, ST_WR_REMOTE, ST_RD_LOCAL, ST_RD_REMOTE, ST_N };

static uint64_t counters[ST_N];

/* Same host: the peer's IP is the IP the connection was accepted on. */
static bool peer_is_local(const gsrv_conn *c)
{
    if (c->local)
        return true;
    struct sockaddr_storage me, peer;
    socklen_t ml = sizeof(me), pl = sizeof(peer);
    if (getsockname(c->fd, (struct sockaddr *)&me, &ml) < 0 ||
        getpeername(c->fd, (struct sockaddr *)&peer, &pl) < 0)
        return false;
    if (me.ss_family != peer.ss_family)
        return false;
    if (me.ss_family == AF_INET)
        return ((struct sockaddr_in *)&me)->sin_addr.s_addr ==
               ((struct sockaddr_in *)&peer)->sin_addr.s_addr;
    if (me.ss_family == AF_INET6)
        return memcmp(&((struct sockaddr_in6 *)&me)->sin6_addr,
                      &((struct sockaddr_in6 *)&peer)->sin6_addr,
                      sizeof(struct in6_addr)) == 0;
    return me.ss_family == AF_UNIX;
}

void gsrv_iostat_count(gsrv_conn *c, bool write, uint64_t bytes)
{
    if (!bytes)
        return;
    int k = (write ? ST_WR_LOCAL : ST_RD_LOCAL) + (peer_is_local(c) ? 0 : 1);
    __atomic_fetch_add(&counters[k], bytes, __ATOMIC_RELAXED);
}

int gsrv_do_IO_STATS(gsrv_conn *c, const gp_IO_STATS_req *m, gp_IO_STATS_rep *r,
                     gsrv_call *k)
{
    uint64_t v[ST_N];
    for (int i = 0; i < ST_N; i++)
        v[i] = __atomic_load_n(&counters[i], __ATOMIC_RELAXED);
    *r = (gp_IO_STATS_rep){.written_local = v[ST_WR_LOCAL],
                           .written_remote = v[ST_WR_REMOTE],
                           .read_local = v[ST_RD_LOCAL],
                           .read_remote = v[ST_RD_REMOTE]};
    return 0;
}
