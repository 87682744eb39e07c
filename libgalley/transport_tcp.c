/*
 * transport_tcp.c -- TCP: the transport of remote clients, and of every
 * client under GALLEY_TRANSPORT=tcp.  Data travels in the frames (IO_WRITE
 * carries it after its descriptor; IO_READ's reply is scattered straight
 * into the caller's memory by the connection's reader thread).
 *
 * Threads: as transport.h.
 */
#include "transport.h"

#include "dial.h"

static int tcp_dial(const char *host, const char *port, int *fd)
{
    return gc_dial_tcp(host, port, gc_timeout_ms(), fd);
}

const gc_transport_ops gc_transport_tcp = {
    .name = "tcp",
    .kind = GFS_TRANSPORT_TCP,
    .stream = GC_STREAM_TCP,
    .dial = tcp_dial,
    .probe = NULL,
    .start = gc_replies_reader_start,
    .progress = gc_replies_reader_progress,
    .io_submit = gc_stream_io_submit,
    /* a TCP connection whose two ends have one address is on this host */
    .same_host = gc_same_address,
};
