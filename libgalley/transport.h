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
 * The direct transport's descriptors are per fork, not per connection:
 * asked for on a fork's first data request, forgotten when the fork
 * closes and all closed at gc_finalize (gc_direct_release and
 * gc_direct_shutdown, below: the two hooks outside the table; grants
 * are keyed by fork and held on the direct unit's own grant channels,
 * not by a connection, so no per-connection op fits them).  Checksummed chunks
 * bypass io_submit for the stream path every transport has (conn.c
 * gc_conn_io_submit): no cross-memory copy may go uncovered by a CRC.
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
     * transport (gc_conn_io_submit, conn.c) */
    bool csum;
    /* csum reads: a copy of iov for the reply to land through (receiving
     * advances the iovecs it fills; the CRC is checked over iov after) */
    struct iovec *rcopy;
    /* a copy of a replicated file: the server moves the data (repl.c) */
    bool server_path;
} gc_chunk;

/* The handshake's synchronous request on a fresh stream (conn.c); the
 * same signature as auth.c's. */
typedef gc_auth_call gc_hs_call;

typedef struct gc_transport_ops {
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
} gc_transport_ops;

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

/* The direct transport's descriptors (transport_direct.c): forget the
 * fork's (fkid on server) and report its byte counts to the server before
 * the fork is closed there (forks.c); gc_direct_shutdown closes them all
 * (gfs_finalize). */
void gc_direct_release(int server, uint64_t fkid);
void gc_direct_shutdown(void);

/* A striped open's reader (transport_direct.c, "readers"): its forks'
 * descriptors, duplicated from the direct grants this process holds, for
 * single-range reads that skip the op machinery (striped.c: fast_read).
 * Built for forks (servers[i], fkids[i]) [0, n) (server -1: none); NULL
 * when none is held. */
typedef struct gc_dreader gc_dreader;
gc_dreader *gc_direct_reader(const int *servers, const uint64_t *fkids,
                             size_t n);
/* Exactly len bytes of fork i at off into buf: 0, or GC_DECLINE (not
 * held, too large, grants forgotten, or fewer bytes there: the op path
 * reads it).  Between pin and unpin, which the owner's table lock orders
 * before free. */
int gc_direct_reader_read(gc_dreader *r, size_t i, uint64_t off, void *buf,
                          uint64_t len);
/* Bytes read through fork i, for the server's IO_STATS. */
void gc_direct_reader_count(gc_dreader *r, size_t i, uint64_t bytes);
void gc_direct_reader_pin(gc_dreader *r);
void gc_direct_reader_unpin(gc_dreader *r);
/* Every fork held, and no grant forgotten since it was built? */
bool gc_direct_reader_whole(const gc_dreader *r);
/* Waits for reads in flight; adds its bytes to the grants (before their
 * forks close: gc_direct_release reports them). */
void gc_direct_reader_free(gc_dreader *r);

#endif /* GALLEY_TRANSPORT_H */
