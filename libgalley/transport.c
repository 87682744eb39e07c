/*
 * transport.c -- the transports in the order conn.c tries them, the calls
 * that reach every transport's per-fork state through its table, and what
 * the transports whose data travels in the stream share (see
 * transport.h).
 *
 * Threads: any; no state.
 */
#include "transport.h"

#include <string.h>
#include <sys/socket.h>

#include "dial.h"

const gc_transport_ops *const gc_transports[] = {
    &gc_transport_direct,
    &gc_transport_cma,
    &gc_transport_unix,
    &gc_transport_tcp,
    NULL,
};

bool gc_transport_allowed(const gc_transport_ops *t, int mode)
{
    switch (mode) {
    case GFS_TRANSPORT_TCP:
        return t->stream == GC_STREAM_TCP;
    case GFS_TRANSPORT_LOCAL:
        return t->stream == GC_STREAM_UNIX && t->kind != GFS_TRANSPORT_DIRECT;
    case GFS_TRANSPORT_DIRECT:
        return t->kind == GFS_TRANSPORT_DIRECT;
    default:
        return true;
    }
}

void gc_transports_release(int server, uint64_t fkid)
{
    for (const gc_transport_ops *const *t = gc_transports; *t; t++)
        if ((*t)->release)
            (*t)->release(server, fkid);
}

void gc_transports_shutdown(void)
{
    for (const gc_transport_ops *const *t = gc_transports; *t; t++)
        if ((*t)->shutdown)
            (*t)->shutdown();
}

gc_reader *gc_reader_open(const int *servers, const uint64_t *fkids, size_t n)
{
    for (const gc_transport_ops *const *t = gc_transports; *t; t++) {
        gc_reader *r =
            (*t)->reader_open ? (*t)->reader_open(servers, fkids, n) : NULL;
        if (r)
            return r;
    }
    return NULL;
}

void gc_reader_free(gc_reader *r)
{
    if (r)
        r->ops->reader_free(r);
}

int gc_stream_io_submit(gc_conn *c, int op, gc_chunk *ch)
{
    if (op == GFS_READ) {
        /* the reply's size field (and crc), then the data */
        ch->req.prefix_len = ch->csum ? 12 : 8;
        ch->req.riov = ch->rcopy ? ch->rcopy : ch->iov;
        ch->req.riovcnt = ch->niov;
        ch->req.rdata = ch->bytes;
        return gc_submit(c, ch->csum ? GP_OP_IO_CREAD : GP_OP_IO_READ,
                         ch->desc.data, ch->desc.len, NULL, 0, 0, &ch->req);
    }
    return gc_submit(c, ch->csum ? GP_OP_IO_CWRITE : GP_OP_IO_WRITE,
                     ch->desc.data, ch->desc.len, ch->iov, ch->niov, ch->bytes,
                     &ch->req);
}

bool gc_same_address(int fd)
{
    struct sockaddr_storage me, peer;
    socklen_t ml = sizeof(me), pl = sizeof(peer);
    return getsockname(fd, (struct sockaddr *)&me, &ml) == 0 &&
           getpeername(fd, (struct sockaddr *)&peer, &pl) == 0 &&
           gc_same_ip(&me, &peer);
}

bool gc_unix_same_host(int fd)
{
    (void)fd;
    return true;
}
