/*
 * transport.h -- private to libgalley: how a connection (conn.c) moves its
 * requests, replies and data.  Each transport is one unit behind one ops
 * table (after Mercury's struct na_class_ops), chosen once at connect; no
 * code outside a unit asks which transport a connection has.
 *
 *   transport_direct.c  same host, same user: the data of a transfer moves
 *                       with preadv/pwritev on the fork's file, whose
 *                       descriptor the server passed (SCM_RIGHTS, on a
 *                       grant channel of its own); a transfer is moved
 *                       whole (xfer), no request built; tiny-piece
 *                       writes and everything
 *                       else go through cross-memory attach's forms
 *   transport_tcp.c     TCP: data inline in the frames, a reader thread
 *   transport_unix.c    same-host abstract Unix socket, data inline (the
 *                       kernel refused cross-memory attach), reader thread
 *   transport_cma.c     the same socket; a data request names the client's
 *                       memory (IO_READV / IO_WRITEV) and the server copies
 *                       with process_vm_readv/writev; waiters read their
 *                       own replies (no reader thread)
 *   transport.c         the order they are tried in, and what the stream
 *                       transports share (inline data requests)
 *
 * Choosing (conn.c connect_locked, through gc_transports[]): candidates
 * are tried best first, among those GALLEY_TRANSPORT allows (auto: all;
 * direct: direct; local: the Unix-socket ones but direct; tcp: TCP).  A
 * candidate's stream is dialled (once for candidates sharing it), the
 * version and authentication handshake runs on it, then the candidate's
 * probe says whether this connection can use it (GC_DECLINE: try the
 * next).
 *
 * Some of a transport's state is per fork, not per connection (the direct
 * transport's descriptors: asked for on a fork's first data request, kept
 * on the unit's own grant channels).  The ops release and shutdown reach
 * it (gc_transports_release when a fork closes, gc_transports_shutdown at
 * gfs_finalize), and the reader ops give a striped open the forks'
 * descriptors for its single-range reads (gc_reader_open).  Checksummed
 * chunks bypass io_submit for the stream path every transport has
 * (conn.c gc_conn_io_submit): no cross-memory copy may go uncovered by a
 * CRC.
 *
 * Threads: dial, probe and start run while conn.c connects (the
 * connection's send_lock held, nothing in flight); io_submit and same_host
 * with no conn lock held; progress with c->lock held, as documented there.
 */
#ifndef GALLEY_TRANSPORT_H
#define GALLEY_TRANSPORT_H

#include "internal.h"

/* A probe's answer: this connection cannot use the transport; the next
 * candidate is tried on the same stream or a new one. */
#define GC_DECLINE 1

enum gc_stream { GC_STREAM_UNIX, GC_STREAM_TCP };

/*
 * One request of a transfer (io.c builds it): the file side already in
 * wire form in desc (fkid, segment count, segments: the common head of
 * IO_READ, IO_WRITE and their V forms, gmsg.h) and the memory side as
 * iovecs, `bytes` in all.  The transport adds what its data form needs
 * and sends; the reply is decoded by io.c from req whatever the opcode.
 */
typedef struct gc_chunk {
    gc_req req;
    gp_wbuf desc;
    struct iovec *iov;
    int niov;
    uint64_t bytes;
    /* a checksummed fork's request (IO_CWRITE / IO_CREAD, desc already
     * in that form): its data travels in the stream whatever the
     * transport (route.h: gc_route_stream) */
    bool csum;
    /* csum reads: a copy of iov for the reply to land through (receiving
     * advances the iovecs it fills; the CRC is checked over iov after) */
    struct iovec *rcopy;
} gc_chunk;

/* The handshake's synchronous request on a fresh stream (conn.c); the
 * same signature as auth.c's. */
typedef gc_auth_call gc_hs_call;

typedef struct gc_transport_ops gc_transport_ops;

/* A reader (the reader ops below): its transport's own structure, whose
 * first member is this head, so the owner reaches its ops through it. */
typedef struct gc_reader {
    const gc_transport_ops *ops;
} gc_reader;

struct gc_transport_ops {
    const char *name; /* for messages: "tcp", "local", "local+cma" */
    int kind;         /* GFS_TRANSPORT_* that gfs_server_transport answers */
    int stream;       /* enum gc_stream: what dial opens */

    /* Open the stream to host:port: 0 with *fd, or an error. */
    int (*dial)(const char *host, const char *port, int *fd);
    /* After the handshake on the stream: 0 to take this transport,
     * GC_DECLINE, or a connection error (the connect fails).  NULL:
     * always taken. */
    int (*probe)(gc_hs_call call, void *arg);

    /* Replies.  start: once connected (the stream is idle): begin
     * receiving.  progress: a waiter whose reply has not
     * come, with c->lock held (and returning with it held), lets replies
     * progress for up to wait_ns (0: do not block). */
    int (*start)(gc_conn *c);
    void (*progress)(gc_conn *c, uint64_t wait_ns);

    /* Send one request of a transfer (op GFS_READ or GFS_WRITE) with its
     * data, or naming it; errors surface in gc_wait(&ch->req). */
    int (*io_submit)(gc_conn *c, int op, gc_chunk *ch);

    /* Move a whole transfer here and now, from its list of pieces, with
     * no request built (the direct transport: pieces straight to
     * preadv / pwritev): 0 with x->status and x->fork_size set as
     * chunks would have, or GC_DECLINE, when io.c cuts it into chunks for
     * io_submit.  Whatever decides between the two decides for the whole
     * transfer, so the pieces of one write land in list order (a later
     * one wins where they overlap).  NULL: always declines. */
    int (*xfer)(gc_conn *c, int op, gc_xfer *x);

    /* Get ready for a transfer of nx forks before xfer is offered each
     * (gc_conn_prepare): cs[i] is x[i]'s connection when it is this
     * transport's and x[i] may be taken whole, else NULL.  The direct
     * transport asks every server for the descriptors the transfer will
     * need at once, so a striped call waits for one round trip, not one
     * per server.  Best effort; NULL: nothing to do. */
    void (*prepare)(int op, gc_xfer *x, gc_conn *const *cs, size_t nx);

    /* Is the server on this host?  (The locality layout's "mine".) */
    bool (*same_host)(int fd);

    /* Per-fork state kept outside connections (optional, NULL: none).
     * release: forget fork fkid of server and report what it moved to
     * the server, before the fork is closed there (forks.c); shutdown:
     * drop all of it (gfs_finalize). */
    void (*release)(int server, uint64_t fkid);
    void (*shutdown)(void);

    /* Readers (optional, NULL: none): a striped open's forks' descriptors
     * for single-range reads that skip the op machinery (striped.c:
     * fast_read).  reader_open builds one for forks (servers[i],
     * fkids[i]) [0, n) (server -1: none), NULL when the transport holds
     * none of them.  reader_read: exactly the iovecs' bytes of fork i at
     * off into them (n at most GC_FAST_UNITS), 0, or GC_DECLINE (not
     * held, too large, grants forgotten, or fewer bytes there: the op
     * path reads it); only between reader_pin
     * and reader_unpin, which the owner's table lock orders before
     * reader_free.  reader_count: bytes read through fork i, for the
     * server's IO_STATS.  reader_whole: every fork held and nothing
     * forgotten since it was built?  reader_free: waits for reads in
     * flight and hands its byte counts to the per-fork state (release
     * reports them). */
    gc_reader *(*reader_open)(const int *servers, const uint64_t *fkids,
                              size_t n);
    int (*reader_read)(gc_reader *r, size_t i, uint64_t off,
                       const struct iovec *iov, int n);
    void (*reader_count)(gc_reader *r, size_t i, uint64_t bytes);
    void (*reader_pin)(gc_reader *r);
    void (*reader_unpin)(gc_reader *r);
    bool (*reader_whole)(const gc_reader *r);
    void (*reader_free)(gc_reader *r);
};

/* The candidates, best first, NULL-terminated (transport.c). */
extern const gc_transport_ops *const gc_transports[];
/* May GALLEY_TRANSPORT `mode` (GFS_TRANSPORT_*) use t? */
bool gc_transport_allowed(const gc_transport_ops *t, int mode);

extern const gc_transport_ops gc_transport_direct; /* transport_direct.c */
extern const gc_transport_ops gc_transport_tcp;    /* transport_tcp.c */
extern const gc_transport_ops gc_transport_unix;   /* transport_unix.c */
extern const gc_transport_ops gc_transport_cma;    /* transport_cma.c */

/* Shared by the transports whose data travels in the stream (TCP, Unix
 * inline), and the form of every checksummed request: IO_WRITE (IO_CWRITE)
 * with the data after the descriptor, IO_READ (IO_CREAD) with the reply's
 * data scattered straight into the chunk's iovecs. */
int gc_stream_io_submit(gc_conn *c, int op, gc_chunk *ch);
/* The cross-memory-attach forms (transport_cma.c), shared with the direct
 * transport, whose requests to the server take them: the probe (may the
 * server copy our memory?) and a chunk's request naming its memory. */
int gc_cma_probe(gc_hs_call call, void *arg);
int gc_cma_io_submit(gc_conn *c, int op, gc_chunk *ch);
/* The abstract Unix socket exists only on its server's host: true. */
bool gc_unix_same_host(int fd);
/* Same-host by addresses: a stream whose two ends have one IP address. */
bool gc_same_address(int fd);

/* The two reply engines (conn.c), for the transports to pick from:
 * a reader thread per connection that completes requests as frames
 * arrive; or no thread, the waiters taking turns at reading (leader /
 * follower), which saves a wake-up per request when data does not travel
 * in the stream. */
int gc_replies_reader_start(gc_conn *c);
void gc_replies_reader_progress(gc_conn *c, uint64_t wait_ns);
int gc_replies_waiter_start(gc_conn *c);
void gc_replies_waiter_progress(gc_conn *c, uint64_t wait_ns);

/* Did this process open the connection?  (A child after fork() must not
 * let the server copy into its parent's memory.) */
bool gc_conn_owned(const gc_conn *c);
/* The server number and address the connection was made for (fixed for
 * its life). */
void gc_conn_address(const gc_conn *c, int *server, const char **host,
                     const char **port);

/* Through every transport's table (transport.c): release (server, fkid)'s
 * per-fork state; shut all of it down; build a reader from the first
 * transport that holds any of the forks (NULL: none does). */
void gc_transports_release(int server, uint64_t fkid);
void gc_transports_shutdown(void);
gc_reader *gc_reader_open(const int *servers, const uint64_t *fkids, size_t n);
/* r's reader_free, NULL allowed. */
void gc_reader_free(gc_reader *r);

#endif /* GALLEY_TRANSPORT_H */
