/*
 * transport_cma.c -- the same-host Unix socket with cross-memory attach:
 * a data request names the client's memory (IO_READV / IO_WRITEV, the
 * memory folded into strided segments like the file side) and the server
 * copies with process_vm_readv / process_vm_writev straight between it and
 * its cache blocks; no socket carries the data.  Taken when CMA_PROBE
 * shows the server can do that (same user, ptrace rules), checked once
 * per connection.  Replies are small, so waiters read their own (no
 * reader thread: a wake-up saved per request).
 *
 * Threads: as transport.h.
 */
#include "transport.h"

#include "dial.h"

/* May the server copy our memory?  It copies a random word from src to
 * dst in this process. */
int gc_cma_probe(gc_hs_call call, void *arg)
{
    volatile uint64_t src = 0x47414c4c4559434dull ^ (uint64_t)g_now_ns();
    volatile uint64_t dst = 0;
    gp_wbuf w;
    gp_wbuf_init(&w);
    gp_CMA_PROBE_req_encode(
        &w, &(gp_CMA_PROBE_req){.src = (uint64_t)(uintptr_t)&src,
                                .dst = (uint64_t)(uintptr_t)&dst});
    uint8_t out[64];
    uint32_t outlen = 0;
    int k = w.err ? w.err
                  : call(arg, GP_OP_CMA_PROBE, &w, out, sizeof(out), &outlen);
    gp_wbuf_free(&w);
    if (k == GFS_ESERVERDOWN || k == GFS_ETIMEDOUT || k == GFS_EPROTO ||
        k == GFS_EVERSION)
        return k; /* the stream is gone or not ours */
    return k == 0 && dst == src ? 0 : GC_DECLINE;
}

int gc_cma_io_submit(gc_conn *c, int op, gc_chunk *ch)
{
    /* The data stays where it is: name it (gproto.h `mem`), folded like
     * the file side, so a million 16-byte pieces of memory with gaps are
     * one strided segment, not a million addresses. */
    gp_wbuf *d = &ch->desc;
    gp_folder mem;
    gp_folder_init(&mem, d, 0);
    for (int i = 0; i < ch->niov; i++)
        gp_folder_add(&mem, (uint64_t)(uintptr_t)ch->iov[i].iov_base,
                      ch->iov[i].iov_len);
    gp_folder_end(&mem);
    if (d->err) {
        ch->req.state = GC_REQ_DONE;
        return ch->req.status = d->err;
    }
    return gc_submit(c, op == GFS_READ ? GP_OP_IO_READV : GP_OP_IO_WRITEV,
                     d->data, d->len, NULL, 0, 0, &ch->req);
}

const gc_transport_ops gc_transport_cma = {
    .name = "local+cma",
    .kind = GFS_TRANSPORT_LOCAL_CMA,
    .stream = GC_STREAM_UNIX,
    .dial = gc_dial_local,
    .probe = gc_cma_probe,
    .start = gc_replies_waiter_start,
    .progress = gc_replies_waiter_progress,
    .io_submit = gc_cma_io_submit,
    .same_host = gc_unix_same_host,
};
