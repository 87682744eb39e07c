/*
 * transport_unix.c -- the same-host abstract Unix socket with data inline:
 * what a same-host client gets when the kernel will not let the server
 * copy its memory (another user, ptrace rules; transport_cma.c declined).
 * Frames as over TCP, without TCP's stack.
 *
 * Threads: as transport.h.
 */
#include "transport.h"

#include "dial.h"

const gc_transport_ops gc_transport_unix = {
    .name = "local",
    .kind = GFS_TRANSPORT_LOCAL,
    .stream = GC_STREAM_UNIX,
    .dial = gc_dial_local,
    .probe = NULL,
    .start = gc_replies_reader_start,
    .progress = gc_replies_reader_progress,
    .io_submit = gc_stream_io_submit,
    .same_host = gc_unix_same_host,
};
