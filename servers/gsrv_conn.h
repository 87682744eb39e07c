/*
 * gsrv_conn.h -- private to galleyd (servers/): connections and their
 * framing (handler.c, the write paths' receive calls), the registry
 * (gsrv_globals.c), the cluster secret (auth.c), replies and cross-memory
 * attach (cma.c).  The op table is gsrv_stubs.h's.
 * Included by gsrv_internal.h (after its constants and globals), never
 * on its own.
 */
#ifndef GSRV_CONN_H
#define GSRV_CONN_H

/* ------------------------------------------------------------------------
 * Connections (handler.c)
 * ------------------------------------------------------------------------ */
typedef struct gsrv_open {
    uint64_t fkid;
    uint32_t count;
} gsrv_open;

typedef struct gsrv_conn {
    int fd;
    uint64_t id;   /* unique, never 0 */
    bool local;    /* same-host (Unix socket) connection */
    pid_t pid;     /* local: the client's pid (SO_PEERCRED), or 0 */
    uid_t uid;     /* local: the client's uid (SO_PEERCRED) ... */
    bool has_cred; /* ... when the kernel told us */
    int pidfd;     /* local: a pidfd of that process, or -1 */
    char peer[80];
    /* forks opened by this connection, sorted by fkid (handler thread only) */
    gsrv_open *opens;
    size_t nopens, capopens;
    /* the request being served, and its last FORK_OPENs by request id, a
     * ring (gmsg.h GP_FKID_OPENED; handler thread only) */
    uint64_t reqid;
    struct gsrv_opened {
        uint64_t reqid, fkid; /* fkid 0: the open failed with status */
        int status;
    } opened[GP_OPENED_KEPT];
    unsigned nopened; /* opens noted in all: the next goes at % KEPT */
    /* receive buffer, and the frame being received (handler.c, gsrv_rx_*):
     * its payload length, the bytes read from the socket so far, and how
     * many of those are in buf (the rest went where the write path put
     * them) */
    uint8_t *buf;
    size_t bufcap;
    size_t rx_len, rx_pos, rx_have;
    int rx_err;     /* the socket failed mid-frame: close, no reply */
    int rx_pipe[2]; /* write_splice.c's pipe, when rx_piped > 0 */
    int rx_piped;   /* 0: not made yet; 1: made; -1: cannot be */
    size_t rx_pipe_sz;
    /* local writes: the data copied in from the client (io_write.c); NULL or
     * GSRV_STAGE_KEEP bytes */
    uint8_t *stage;
    struct gsrv_out *out;          /* reply batch, allocated on first use */
    struct gsrv_conn *prev, *next; /* registry in gsrv_globals.c */
    /* the cluster secret (auth.c) */
    uint8_t auth_state;
    bool auth_failed;   /* a wrong proof: close after the reply */
    bool over_cap;      /* past --max-conns: answer GFS_ECONNLIMIT, close */
    bool holds_locks;   /* has taken a byte-range lock (lease renewals) */
    uint64_t md_client; /* the client id of its record leases, or 0 */
    /* fork descriptors handed to this client (direct.c) */
    struct gsrv_grant *grants;
    size_t ngrants, capgrants;
    uint8_t auth_cnonce[32], auth_snonce[32];
} gsrv_conn;

/* The cluster secret (auth.c).  gsrv_auth_init runs once on the main
 * thread after the data directory is open: key_path is --key or NULL;
 * 0, or a negative error after printing why. */
int gsrv_auth_init(const char *key_path);
bool gsrv_auth_required(void);
/* May connection c send a request with this opcode now? */
bool gsrv_auth_allows(const gsrv_conn *c, unsigned opcode);

/* Largest frame payload a connection may send (gproto.h). */
static inline uint64_t gsrv_frame_limit(void)
{
    return 2 * gsrv_g.data_limit + GP_FRAME_SLACK;
}

/* Thread body of a handler; takes ownership of c (frees it at the end). */
void *gsrv_handler_main(void *c);

/* Record / forget an open of fkid on this connection. */
int gsrv_conn_add_open(gsrv_conn *c, uint64_t fkid);
/* 0, or GFS_EBADID if the connection has no open of fkid. */
int gsrv_conn_drop_open(gsrv_conn *c, uint64_t fkid);
/* The FORK_OPEN being served ended with status (fkid: the fork's). */
void gsrv_conn_note_open(gsrv_conn *c, uint64_t fkid, int status);
/* An IO request's *fkid as the fork's handle (GP_FKID_OPENED: the one
 * this connection's open opened): 0, the open's error, or GFS_ESTALE
 * (io_read.c, where the test build's GALLEY_TEST_FORGET_OPENS is). */
int gsrv_conn_opened(const gsrv_conn *c, uint64_t *fkid);

/* True when the peer has closed or reset the connection (non-blocking). */
bool gsrv_conn_hung_up(const gsrv_conn *c);

/* Receiving while handling (handler.c).  A large IO_WRITE is handed to the
 * write path (io_write.c) once its first bytes have arrived
 * (GSRV_RX_PREFIX), so that its data can go from the socket straight into
 * the cache blocks, window by window, while the client is still sending
 * the rest: the write-through of one window overlaps the network's
 * delivery of the next.  Every other frame arrives whole before it is
 * handled.
 *   gsrv_rx_partial: has part of the frame not been read yet?
 *   gsrv_rx_fill:    make buf hold the frame's bytes [0, upto) (only while
 *                    no bytes have gone elsewhere);
 *   gsrv_rx_into:    the frame's bytes [pos, pos + n) into dst: those
 *                    already in buf are copied, the rest must be the next
 *                    bytes on the socket;
 *   gsrv_rx_recv:    the next n bytes on the socket into dst (at most the
 *                    frame timeout per wait; the end of the stream is an
 *                    error), counted in rx_pos;
 *   gsrv_rx_fail:    the frame failed (a negative error, or 1: the end of
 *                    the stream): remembered in rx_err, returned.
 * They return 0 or a negative error; after an error the connection closes
 * without a reply (c->rx_err). */
#define GSRV_RX_PREFIX 4096u
#define GSRV_RX_STREAM_MIN (256u << 10) /* smaller writes arrive whole */
static inline bool gsrv_rx_partial(const gsrv_conn *c)
{
    return c->rx_pos < c->rx_len;
}
int gsrv_rx_fill(gsrv_conn *c, size_t upto);
int gsrv_rx_into(gsrv_conn *c, size_t pos, void *dst, size_t n);
int gsrv_rx_recv(gsrv_conn *c, void *dst, size_t n);
int gsrv_rx_fail(gsrv_conn *c, int rc);
/* The connection ends: close its splice pipe, if it has one
 * (write_splice.c). */
void gsrv_write_splice_drop_conn(gsrv_conn *c);

/* Connection registry (gsrv_globals.c): every live connection, so that a
 * clean exit can shut their sockets down.  register gives c its id;
 * unregister closes its socket. */
void gsrv_conn_register(gsrv_conn *c);
void gsrv_conn_unregister(gsrv_conn *c);
size_t gsrv_conn_count(void);      /* connections live now */
void gsrv_conn_shutdown_all(void); /* shut every socket down */
void gsrv_conn_wait_idle(void);    /* until none is live */

/* ------------------------------------------------------------------------
 * Replies (handler.c)
 *
 * An op fills rep->w with the reply payload and returns 0, or returns a
 * negative error code (the reply then has an empty payload); the ops are
 * stubs.c's, their bodies write through gsrv_call (gsrv_stubs.h).  A body
 * that sends bulk data after rep->w sets datalen, send and cleanup: the
 * handler calls send(out, arg) after the small payload, then cleanup(arg)
 * whether or not sending worked (cleanup is also called if send is never
 * reached).
 * ------------------------------------------------------------------------ */
#define GSRV_OUT_SMALL 512    /* pieces below this are copied ...  */
#define GSRV_OUT_BOUNCE 32768 /* ... into a bounce buffer this big */

/* ------------------------------------------------------------------------
 * Cross-memory attach (cma.c): the client's memory a local request names.
 * ------------------------------------------------------------------------ */
typedef struct gsrv_mseg {
    uint64_t addr;   /* in the client's address space */
    uint64_t size;   /* bytes per piece */
    uint64_t count;  /* pieces (1: an extent) */
    uint64_t stride; /* between piece starts */
    uint64_t cum;    /* stream offset of its first byte */
} gsrv_mseg;

typedef struct gsrv_rmem {
    pid_t pid;
    int pidfd;    /* the connection's: copies stop once it has exited */
    gsrv_mseg *s; /* the `mem` segments, in stream order */
    size_t n;
    uint64_t bytes;        /* stream bytes they hold */
    uint64_t pos;          /* gsrv_rmem_xfer: the next stream byte */
    bool push;             /* queued copies go to the client (reads) */
    struct iovec *bl, *br; /* queued copies: local, remote */
    int bn;
    int err;
} gsrv_rmem;

/* Set m up for connection c's client: 0, or -EOPNOTSUPP when c cannot
 * do cross-memory attach (TCP, or the peer's process not pinned). */
int gsrv_rmem_init(gsrv_rmem *m, const gsrv_conn *c);
/* Decode a `mem` list (gproto.h: segments in the client's address space,
 * extents or one-level strides) into m (m->pid is the caller's); with
 * check, they must hold exactly `bytes` (else GFS_EPROTO).  Free with
 * gsrv_rmem_free (also after an error). */
int gsrv_rmem_decode(gp_rbuf *r, gsrv_rmem *m, uint64_t bytes, bool check);
void gsrv_rmem_free(gsrv_rmem *m); /* NULL-safe */
/* Queue a copy between stream bytes [pos, pos + len) and local memory
 * (into it, or out of it when m->push), in any order; gsrv_rmem_flush
 * performs what is queued and returns 0 or the first error (-EFAULT,
 * -EPERM, -ESRCH, -ENOMEM). */
void gsrv_rmem_copy_at(gsrv_rmem *m, uint64_t pos, void *local, size_t len);
int gsrv_rmem_flush(gsrv_rmem *m);
/* Copy the bytes of local[0..nl) to (push) or from the client's memory at
 * m's position, advancing it.  0, or -EFAULT (bad address, or the client
 * named less memory than there is data), -EPERM, -ESRCH. */
int gsrv_rmem_xfer(gsrv_rmem *m, bool push, const struct iovec *local,
                   size_t nl);

typedef struct gsrv_out {
    int fd;
    gsrv_rmem *rmem; /* non-NULL: flush copies into the client's memory */
    int err;
    int n;
    size_t used; /* bytes of bounce[] queued */
    struct iovec iov[GSRV_IOV_BATCH];
    uint8_t bounce[GSRV_OUT_BOUNCE];
} gsrv_out;

/* Queue len bytes at p.  Large pieces are sent from where they are (the
 * memory must stay valid until gsrv_out_flush returns); pieces smaller
 * than GSRV_OUT_SMALL are copied and gathered, because one iovec per tiny
 * piece costs more than the copy.  Flushes when a batch is full. */
void gsrv_out_add(gsrv_out *o, const void *p, size_t len);
/* Send everything queued; returns 0 or -errno (also kept in o->err). */
int gsrv_out_flush(gsrv_out *o);
/* Queue len bytes of file fd from offset off, sent by the kernel from the
 * page cache (sendfile: not copied through the server's memory); bytes at
 * or past end, or past the file's end, go as zeros.  Not for a reply into
 * client memory. */
void gsrv_out_file(gsrv_out *o, int fd, uint64_t off, size_t len, uint64_t end);

typedef struct gsrv_reply {
    gp_wbuf w;
    uint64_t datalen;
    gsrv_rmem *rmem; /* set: the data goes into the client's memory (CMA)
                      * before the reply, which then carries rep->w only */
    void (*send)(gsrv_out *o, void *arg);
    void (*cleanup)(void *arg);
    void *arg;
    int pass_fd; /* >= 0: sent with the reply (SCM_RIGHTS), then closed;
                  * handle() sets it to -1 before the op runs */
} gsrv_reply;

/* Validate a file name as stored by the NameServer (1..GFS_NAME_MAX bytes,
 * no NUL, no newline): 0 or -EINVAL. */
int gsrv_check_name(const char *name);

#endif /* GSRV_CONN_H */
