/*
 * internal.h -- private to libgalley.  Nothing here is visible to users
 * (the shared library exports only gfs_* symbols).
 *
 * Layers inside the client, each using only the one below:
 *   lifecycle.c                     gfs_init / gfs_finalize: composes the
 *                                   units below
 *   files.c / forks.c / striped.c   the API of galley.h (each gfs_* over an
 *   local_layout.c / nb.c ...       internal gc_* entry point; the layers
 *                                   call only those, never a gfs_*)
 *   calls.c                         one call per message (from gmsg.h)
 *   io.c                            the one data path: transfers of pieces
 *                                   to forks, chunked, pipelined, per server
 *   transport*.c (transport.h)      how a connection moves requests, replies
 *                                   and data: TCP, Unix inline, Unix + CMA
 *   conn.c                          connections, framing, reply dispatch
 *   client.c                        process-wide state, the id tables
 *   proto/gproto.c                  encode/decode (shared with galleyd)
 */
#ifndef GALLEY_INTERNAL_H
#define GALLEY_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "extent.h"
#include "galley.h"
#include "gclock.h"
#include "gconfig.h"
#include "gproto.h"
#include "handle.h"

/* ------------------------------------------------------------- conn.c -- */

typedef struct gc_conn gc_conn;

enum gc_req_state {
    GC_REQ_IDLE,
    GC_REQ_PENDING,
    GC_REQ_RECEIVING,
    GC_REQ_DONE
};

/*
 * One request in flight.  The caller owns the struct (stack or heap) from
 * gc_submit until gc_wait returns; then gc_req_release frees the reply.
 */
typedef struct gc_req {
    uint64_t reqid;
    int state;
    int status; /* reply status, or a local error */
    uint16_t opcode;
    gc_conn *conn;
    uint64_t submit_ns;
    /* Small replies land here (malloc'd by the reader). */
    uint8_t *reply;
    uint32_t replylen;
    /* Data replies: the first `prefix_len` bytes go to `prefix`, the rest
     * scatter straight into riov (user memory). */
    uint32_t prefix_len;
    uint8_t prefix[16];
    struct iovec *riov;
    int riovcnt;
    uint64_t rdata;
    struct gc_req *next; /* pending list of the connection */
} gc_req;

/* Connection to server i (created at init, connected lazily). */
gc_conn *gc_conn_new(int server, const char *host, const char *port);
/* A control connection to like's server: requests only, on a stream
 * transport (no probe, no forks registered on it), so a request may wait
 * there without holding up like's (rcache.c's lease renewals).  It is
 * connected once, by its first request: after a break its requests fail
 * instead of connecting again. */
gc_conn *gc_conn_new_control(const gc_conn *like);
void gc_conn_free(gc_conn *c);
/* In a child after fork(): forget the parent's stream, reply engine and
 * waiting requests without a word on the stream (the parent still uses
 * it); the next request connects afresh (conn.c). */
void gc_conn_after_fork(gc_conn *c);
/* The cluster secret (auth.c): gc_auth_load finds the key for the cluster
 * file at cluster_path (or $GALLEY_KEY) in gfs_init; gc_auth_unload
 * forgets it in gfs_finalize.  gc_auth_handshake runs the AUTH exchange
 * (gauth.h) on a new connection through call (conn.c's synchronous
 * request): 0 when authenticated or when we have no key; GFS_EAUTH when
 * the server is not ours; a transport error otherwise. */
typedef int (*gc_auth_call)(void *arg, uint16_t op, const gp_wbuf *w,
                            uint8_t *out, size_t outmax, uint32_t *outlen);
void gc_auth_load(const char *cluster_path);
/* Lock leases (lease.c): count locks this process holds on server
 * (delta +1 after LOCK, -1 after UNLOCK); while any are held a thread
 * renews them.  gc_lease_stop ends it (gfs_finalize). */
void gc_lease_hold(int server, int delta);
/* POSIX locks: the server's count of this connection's locks (PLOCK and
 * PRELEASE replies). */
void gc_lease_posix(int server, uint32_t held);
void gc_lease_stop(void);
/* In a child after fork(): it holds none of its parent's locks. */
void gc_lease_after_fork(void);
void gc_auth_unload(void);
int gc_auth_handshake(gc_auth_call call, void *arg);

/* Connections made so far to this server (each reconnect adds one): a
 * handle opened at one epoch may be meeting a restarted server at
 * another (repl.c). */
uint32_t gc_conn_epoch(gc_conn *c);
/* Data limit the server advertised (connects if needed). */
int gc_conn_data_limit(gc_conn *c, uint64_t *limit);
/* Send one request of a transfer in the form the connection's transport
 * moves data in (transport.h; connects if needed). */
struct gc_chunk;
int gc_conn_io_submit(gc_conn *c, int op, struct gc_chunk *ch);
/* Move a whole transfer at once if the connection's transport can
 * (transport.h: xfer): 0 with x->status and x->fork_size set, or
 * GC_DECLINE (transport.h: send it as chunks). */
struct gc_xfer;
int gc_conn_xfer(gc_conn *c, int op, struct gc_xfer *x);
/* Before a transfer's xfers are offered one by one (gc_conn_xfer): their
 * transport may get ready for all of them at once (transport.h:
 * prepare).  Transfers of 2 to GC_PREPARE_MAX forks. */
#define GC_PREPARE_MAX 16
void gc_conn_prepare(int op, struct gc_xfer *x, size_t nx);
/* GFS_TRANSPORT_* of the connection (connects if needed), or an error. */
int gc_conn_transport(gc_conn *c);

/*
 * Send a request: a frame whose payload is `desc` (encoded fields) followed
 * by the user's data iovecs (vectored send, no staging copy).  `req` must be
 * zeroed or prepared by the caller (riov / prefix_len for data replies).
 * req NULL posts the request: nobody waits for its reply, which is
 * discarded when it arrives (a fork's close, forks.c).
 */
int gc_submit(gc_conn *c, uint16_t opcode, const void *desc, size_t desclen,
              const struct iovec *data, int ndata, size_t datalen, gc_req *req);
/* Wait for the reply (bounded by the timeout); returns req->status. */
int gc_wait(gc_req *req);
/* Non-blocking check: true when the reply (or an error) has arrived. */
bool gc_test(gc_req *req);
void gc_req_release(gc_req *req);

/* Convenience: submit, wait, and leave the reply in req. */
int gc_call(gc_conn *c, uint16_t opcode, const gp_wbuf *desc, gc_req *req);

/* ------------------------------------------------------------ calls.c -- */

/*
 * The client call of every message NAME of gmsg.h, generated like its
 * codecs:
 *
 *   int gc_NAME_call(gc_conn *c, const gp_NAME_req *in, gp_NAME_rep *out,
 *                    gc_tail *tail);
 *
 * encodes *in, sends it on c, waits (conn.c's timeout) and decodes the
 * reply into *out (NULL: not wanted; a rec field must point at storage).
 * Returns 0, the server's status, a connection error, or GFS_EPROTO for a
 * malformed reply.  A reply with a list tail is read by passing `tail`:
 * on success the reply stays in it, tail->r positioned at the items, and
 * the caller ends with gc_tail_end (checks nothing is left over, frees).
 * With tail NULL the reply must hold nothing past its fields.
 */
typedef struct gc_tail {
    gc_req q;
    gp_rbuf r;
} gc_tail;
typedef int (*gp_msg_decode_fn)(gp_rbuf *r, void *m);
#define GC_X_CALL_DECLARE(name, code, note)                                    \
    int gc_##name##_call(gc_conn *c, const gp_##name##_req *in,                \
                         gp_##name##_rep *out, gc_tail *tail);
GP_OPCODES(GC_X_CALL_DECLARE)
#undef GC_X_CALL_DECLARE
/*
 * The same call in two halves, for fanning a request out to several
 * servers before waiting for any (one round trip for all):
 *
 *   void gc_NAME_send(gc_conn *c, const gp_NAME_req *in, gc_pending *p);
 *   int  gc_NAME_recv(gc_pending *p, gp_NAME_rep *out, gc_tail *tail);
 *
 * Every send must be followed by its recv (which frees p's resources);
 * recv returns what gc_NAME_call would, and leaves a tail as it does.
 */
typedef struct gc_pending {
    gc_req q;
    gp_wbuf w;
    int rc;
} gc_pending;
#define GC_X_HALVES_DECLARE(name, code, note)                                  \
    void gc_##name##_send(gc_conn *c, const gp_##name##_req *in,               \
                          gc_pending *p);                                      \
    int gc_##name##_recv(gc_pending *p, gp_##name##_rep *out, gc_tail *tail);
GP_OPCODES(GC_X_HALVES_DECLARE)
#undef GC_X_HALVES_DECLARE
void gc_pending_submit(gc_conn *c, uint16_t opcode, gc_pending *p);
int gc_pending_finish(gc_pending *p, gp_msg_decode_fn decode, void *out,
                      gc_tail *tail);
/* The generated calls' common end (decode, keep or release). */
int gc_call_finish(gc_req *q, int rc, gp_msg_decode_fn decode, void *out,
                   gc_tail *tail);
/* 0, or GFS_EPROTO when the tail was not read to its end; frees. */
int gc_tail_end(gc_tail *tail);

/* ----------------------------------------------------------- client.c -- */

typedef struct gc_fork {
    int fid; /* owning file id, or -1 */
    int subfile;
    int server;
    uint64_t fkid; /* server's handle; of a replicated file: the first
                    * usable copy's (what size, truncate... talk to) */
    bool csum;     /* its file is checksummed: data moves with CRCs */
    /* Replicated files (repl.c): the copies of this fork; ncopy <= 1
     * for a file of one copy (the rest unused). */
    int ncopy;
    int cserver[GP_MAX_COPIES];
    uint64_t cfkid[GP_MAX_COPIES];  /* 0: not used by this handle */
    uint32_t cepoch[GP_MAX_COPIES]; /* gc_conn_epoch at open */
    uint8_t cmiss; /* bit c: in sync in the record, but not opened here
                    * (a write records it stale first: gc_repl_settle) */
    uint64_t gen;  /* record generation at open */
    char name[GFS_FORK_NAME_MAX + 1];
} gc_fork;

typedef struct gc_file {
    char name[GFS_NAME_MAX + 1];
    gp_record rec;
} gc_file;

typedef struct gc_client {
    pthread_mutex_t lock; /* guards the tables below and refs */
    int refs;
    int nservers;
    gc_conn **conns;
    int timeout_ms;
    int transport;
    int spin_us;
    gc_idtab files; /* gc_file by file id (handle.h), under lock */
    gc_idtab forks; /* gc_fork by fork id */
} gc_client;

extern gc_client gc_g;

/* Fail with GFS_ENOTINIT unless initialised. */
int gc_check_init(void);
int gc_num_servers(void); /* gfs_num_servers */
int gc_ping(int server);  /* gfs_ping */
gc_conn *gc_server_conn(int server);
/* False once the connection's stream has failed or closed (until the next
 * request reconnects): the server then holds none of its opens, since it
 * drops a lost connection's opens itself and a reconnect registers only
 * the forks still open.  Closing a fork skips the server then, instead of
 * reconnecting to a server that just timed out only to close the fork. */
bool gc_conn_holds_opens(gc_conn *c);
/* Send encoded request w on c without waiting for its reply (gc_submit
 * with no request; the reply is discarded when read): a fork's close.
 * Past GC_POST_MAX unread replies it waits for them (conn.c). */
int gc_conn_post(gc_conn *c, uint16_t opcode, const gp_wbuf *w);
/* Once the server has served every request posted on c: one round trip,
 * none when every posted request's reply has been read already;
 * gfs_finalize fences every connection, so what a process closed is
 * closed at the servers when it has finalized. */
int gc_conn_fence(gc_conn *c);
int gc_timeout_ms(void);
/* GALLEY_SPIN_US: how long a waiter polls for its reply before sleeping
 * (same-host connections; default 50, 0 never spins). */
int gc_spin_us(void);
/* GALLEY_TRANSPORT: GFS_TRANSPORT_AUTO, _LOCAL or _TCP. */
int gc_transport(void);

/* Metadata server of a name (hash of the name). */
int gc_meta_server(const char *name);
/* LOG_SYNC to every server s with which[s] (which NULL: every server),
 * at once (calls.c): the metadata they answered durable.  0 or the first
 * error; *nok (may be NULL): how many answered 0. */
int gc_log_sync(const bool *which, int *nok);
/* LOG_SYNC to one server; its log's counts (may be NULL). */
int gc_log_sync_one(int server, uint64_t *records, uint64_t *commits);

/* Collect the answers of the subfile deletes the last remove left
 * running (files.c; gfs_finalize, before the connections go). */
void gc_reclaim_wait(void);
/* A name's record, as gc_repl_lookup, kept in the record cache with a
 * lease when the metadata server grants one (files.c). */
int gc_lease_lookup(const char *name, gp_record *rec);
/* fn for every name with the prefix, in order, each once: every server's
 * NS_LIST, asked at once (files.c; gfs_list_files checks its arguments). */
int gc_list_names(const char *prefix, int (*fn)(const char *, void *),
                  void *arg);
/* gc_list_names, or the names of the last listing when it was of prefix
 * and is less than age_ms old (stat-ahead: a directory read just before
 * its stats is not read again; a name made or removed since may be
 * missing or still there). */
int gc_list_names_recent(const char *prefix, int64_t age_ms,
                         int (*fn)(const char *, void *), void *arg);
/* NS_LOOKUP of name at server into *rec (files.c). */
int gc_lookup(int server, const char *name, gp_record *rec);

/* Table helpers (lock held by caller unless noted). */
int gc_file_get(int fid, gc_file *out); /* copies under the lock */
/* The file of fid in its table (gc_g.lock held; the table holds pointers:
 * a record is large), or NULL. */
gc_file *gc_file_at(int fid);
/* A record's attribute text (client.c): the value of `key`; its length,
 * -ENOENT or -ERANGE. */
int gc_attr_lookup(const char *attrs, const char *key, char *value, size_t len);
/* Checksummed files (gfs_set_checksum): the record's attribute. */
#define GC_CHECKSUM_ATTR "galley.checksum"
bool gc_rec_checksummed(const gp_record *rec);
/* gc_attr_lookup(key) on fid's record, under the lock: its return, or
 * GFS_EBADID / GFS_ENOTINIT. */
int gc_file_attr(int fid, const char *key, char *out, size_t len);
int gc_fork_get(int kid, gc_fork *out); /* copies under the lock */
/* A new fork id for *k (returns kid); its csum is set here, from the
 * record of file k->fid, whatever *k says. */
int gc_fork_register(const gc_fork *k);
void gc_fork_unregister(int kid);
/* The first open fork after kid (-1: the first of all), copied to *out;
 * its id, or -1 when there is none.  Takes the lock. */
int gc_fork_next(int kid, gc_fork *out);

/* For reconnects: every open fork handle on `server` (caller frees). */
int gc_open_handles(int server, uint64_t **fkids, int *n);

/* Validate a file or fork name. */
int gc_check_name(const char *name, size_t max);
/* The client is started and `name` is a valid file name: *rec is a zeroed
 * record for the caller to fill and free.  0, or the error (*rec NULL). */
int gc_named_record(const char *name, gp_record **rec);

/* ------------------------------------------------------------ files.c -- */

/*
 * Entry points below the public API.  libgalley's own layers (striped.c,
 * the locality layout, files and forks themselves) call these, never a
 * gfs_* function: each gfs_* of galley.h is a thin wrapper over one of
 * them or is implemented in place and called by nobody inside.  All run
 * on the calling thread (never through the non-blocking workers), so they
 * are safe on a worker too.
 */
int gc_file_open(const char *name);
int gc_file_close(int fid); /* closes the forks opened through fid */
int gc_file_delete(const char *name);
/* forks.c */
int gc_fork_create(int fid, int subfile, const char *name);
int gc_fork_open(int fid, int subfile, const char *name); /* a kid */
int gc_fork_close(int kid);
/* Tell server that this process closed its fork fkid, posted, not waited
 * for (forks.c: why that is safe); nothing when the connection failed
 * since, as the server dropped its opens then. */
void gc_fork_close_at(int server, uint64_t fkid);
int gc_fork_delete(int fid, int subfile, const char *name);
int gc_fork_truncate(int kid, int64_t size);
int gc_fork_sync(int kid);
/* FORK_SYNC of n (<= GFS_MAX_SUBFILES) forks at once: the first error. */
int gc_forks_sync(const int *kids, int n);
int gc_all_create(int fid, const char *name);
int gc_all_open(int fid, const char *name, int *kids);
/* The forks `name` of subfiles subs[0..n-1] of file fid, all at once (one
 * round trip): kids[j] for subs[j]; on an error none stays open. */
int gc_forks_open(int fid, const char *name, int n, const int *subs, int *kids);
int gc_all_close(int nkids, const int *kids);
/* io.c: plain and list I/O on a fork; bytes moved or an error (a read
 * answers the bytes before the fork's end, as gfs_read). */
int64_t gc_fork_rw(int kid, int op, int64_t offset, void *buf, int64_t size);
int64_t gc_fork_listio(int kid, int op, int64_t n,
                       const gfs_list_entry *entries, void *buf);
/* io.c: one read of len bytes from each of n forks at once (one
 * gc_transfer: concurrent across servers): fork kids[i] at offs[i] into
 * buf + i * len; got[i] the bytes before that fork's end.  0 or the first
 * error. */
int gc_forks_read(int n, const int *kids, const int64_t *offs, char *buf,
                  int64_t len, int64_t *got);
/* striped.c */
/* (extra: NULL, or more attribute lines, "key=value\n" each: a symbolic
 * link's target, an owner, a special file's type; nodes.c) */
int gc_create_striped(const char *name, int nsubfiles, const int *servers,
                      int64_t unit, const char *fork, int ncopy, unsigned mode,
                      const char *extra);
int gc_striped_open(const char *name); /* a striped id */
int gc_striped_close(int sid);
int gc_striped_layout(int sid, gfs_layout *layout);
int gc_striped_kid(int sid, int subfile);
int64_t gc_striped_size(int sid);
int gc_striped_truncate(int sid, int64_t size);
/* List I/O on a striped id (gfs_striped_listio, _read, _write, and the
 * SFIO interface): gc_op_striped, then run. */
int64_t gc_striped_listio(int sid, int op, int64_t n,
                          const gfs_list_entry *entries, void *buf);
/* Open every fork not opened yet of the striped ids open on `name` (a
 * recall of its lease, or this process's own remove, is coming). */
void gc_striped_pin(const char *name);
/* Lock (lock) or unlock [off, off + len) of subfile header hid on server,
 * in the byte-range space (LOCK: gfs_striped_lock) or the block-number
 * space (BLOCK_LOCK: the locality layout's claims); retries the server's
 * -EAGAIN, keeps the lease count (lease.c). */
enum gc_lock_space { GC_LOCK_BYTES, GC_LOCK_BLOCKS };
int gc_range_lock(int server, uint64_t hid, int space, bool lock, uint64_t off,
                  uint64_t len, bool excl);
/* FETCH_SET (set) or FETCH_ADD of counter key of header hid on server:
 * the old value or an error. */
int64_t gc_counter(int server, uint64_t hid, const char *key, bool set,
                   uint64_t value);

/* A file id for a record already known (open, or import). */
int gc_file_register(const char *name, const gp_record *rec);
/* gfs_create_file with an initial attribute text ("k=v\n" lines). */
int gc_create_file(const char *name, int nsubfiles, const int *servers,
                   const char *attrs, int ncopy);
/* The same with a first fork `fork` (NULL: none) in every subfile. */
int gc_create_file_fork(const char *name, int nsubfiles, const int *servers,
                        const char *attrs, const char *fork, int ncopy);

/* The data path's types and calls (io.c, pieces.c, the striped op):
 * datapath.h. */
#include "datapath.h"

/* ----------------------------------------------------------- rcache.c -- */

/* Records this process knows, by name (rcache.c): hints that let an open
 * or a stat ask the subfiles' servers before the record is back. */
void gc_rcache_put(const char *name, const gp_record *rec);
bool gc_rcache_get(const char *name, gp_record *rec);
void gc_rcache_drop(const char *name);
/* Stop the lease renewals, forget everything (gfs_finalize). */
void gc_rcache_clear(void);
/* Register rc_lock's fork handlers (once, from gfs_init): a child after
 * fork() finds it free and the table whole. */
void gc_rcache_atfork(void);
/* Record leases (rcache.c, servers/nameserver.c).  This process's client
 * id for NS_LEASE / NS_COMMIT_LEASE (`sent` below is g_now_ms, gclock.h). */
uint64_t gc_rcache_client(void);
/* Keep rec for name with a lease of lease_ms from `server` (the request
 * sent at `sent`; its start `epoch`), and its size (or -1); lease_ms 0:
 * as gc_rcache_put. */
void gc_rcache_lease(const char *name, const gp_record *rec, int server,
                     int64_t sent, uint32_t lease_ms, uint64_t epoch,
                     int64_t size);
/* RC_NONE, RC_HINT (rec as gc_rcache_get) or RC_LEASED (rec is the
 * record); *size (when size) the size a stat may answer, or -1, and
 * *mtime (when mtime) the modification time that goes with it. */
enum { RC_NONE, RC_HINT, RC_LEASED };
int gc_rcache_leased(const char *name, gp_record *rec, int64_t *size,
                     int64_t *mtime);
/* Whether a stat of name would be answered from here (leased, a size). */
bool gc_rcache_has_size(const char *name);
/* The size (and modification time) of a leased entry, asked for at `at`
 * when gc_rcache_closes was `closes` (kept only if no file id was closed
 * since); ahead: by stat-ahead, which gc_rcache_ahead_used counts the
 * first stat answered from. */
uint64_t gc_rcache_closes(void);
void gc_rcache_size(const char *name, int64_t size, int64_t mtime, int64_t at,
                    uint64_t closes, bool ahead);
uint64_t gc_rcache_ahead_used(void);
/* A file id of this process opened (+1) or closed (-1) name. */
void gc_rcache_opened(const char *name, int delta);
/* Same servers, header ids and attributes. */
bool gc_record_same(const gp_record *a, const gp_record *b);

/* Expand a list / nested / batched request into pieces (structured.c). */
int gc_expand_batch(int64_t n, const gfs_batch_entry *e, char *buf,
                    gp_ext **out, size_t *np, int64_t *total);

/* Fork-size request for many forks at once (concurrently); with mtimes,
 * each fork's modification time too (ns, 0: never written). */
int gc_fork_sizes(const gc_fork *forks, int n, int64_t *sizes, int64_t *mtimes);

/* ------------------------------------------------------------------------
 * The locality layout (local_layout.c)
 * ------------------------------------------------------------------------ */
typedef struct gc_local gc_local;

/* True when the conn's server is on this host (same-host socket, or a TCP
 * connection whose two ends have one address).  Connects if needed. */
bool gc_conn_same_host(gc_conn *c);

bool gc_is_local_layout(int fid);
int gc_striped_stat(const char *name, gfs_striped_info *st);
/* A record's permission bits (its GFS_MODE_ATTR, else GFS_DEFAULT_MODE). */
unsigned gc_mode_of(const gp_record *rec);
/* A record's owner (GFS_OWNER_ATTR; -1: none kept) and type: S_IFREG,
 * or a special file's (GFS_NODE_ATTR, with its device number; nodes.c). */
void gc_owner_of(const gp_record *rec, int64_t *uid, int64_t *gid);
/* A record's change time: the later of its GFS_CTIME_ATTR and the data's
 * modification time `data` (nodes.c). */
int64_t gc_ctime_of(const gp_record *rec, int64_t data);
/* A record's access time set (GFS_ATIME_ATTR), or 0 (nodes.c). */
int64_t gc_atime_of(const gp_record *rec);
unsigned gc_node_of(const gp_record *rec, uint64_t *rdev);
/* A record's link target (gfs_readlink's answer) into buf: its length,
 * or -EINVAL for no link.  A target over GC_LINK_INLINE bytes is the
 * link's data (its length in GC_LINK_DATA_ATTR; nodes.c): its length,
 * nothing copied (gc_link_data_len says which). */
#define GC_LINK_INLINE 1023
#define GC_LINK_DATA_ATTR "galley.symlink_len"
int gc_link_of(const gp_record *rec, char *buf, size_t len);
int gc_link_data_len(const gp_record *rec);
/* Read a link target kept as the data of name (gfs_readlink). */
int gc_link_read_data(const char *name, int n, char *buf, size_t len);
/* A file's modification time: the one set in its record (GFS_MTIME_ATTR)
 * while its data's is still `data`, the time it was set at; else data. */
int64_t gc_mtime_of(const gp_record *rec, int64_t data);
/* Set attribute key of name's record and its change time (GFS_CTIME_ATTR)
 * in one NS_SETATTR (leases recalled; files.c). */
int gc_set_attr_changed(const char *name, const char *key, const char *value);
/* The same for n (at most 3) keys at once. */
int gc_set_attrs_changed(const char *name, int n, const char *const *key,
                         const char *const *value);
/* The wall clock, ns since the epoch (nodes.c). */
int64_t gc_wall_ns(void);
/* *out = NULL for a file of another layout; else its maps, read now. */
int gc_local_open(int fid, const gfs_layout *lay, gc_local **out);
void gc_local_free(gc_local *l);
/* The gc_op of a list request on a local file (claims new blocks first). */
int gc_local_op(gc_local *l, int sid, gc_op **out, int op, const gc_pieces *p,
                const int *kids);
int64_t gc_local_size(gc_local *l);
int64_t gc_local_read_result(gc_local *l, gc_op *o);
int gc_local_truncate(gc_local *l, int sid, const int *kids, int64_t size);
int gc_local_sync(gc_local *l);
int gc_local_stat(gc_local *l, gfs_local_stat *st);
/* The local-layout state of an open striped id (*out NULL for a striped
 * file), or GFS_EBADID / GFS_ENOTINIT. */
int gc_striped_local(int sid, gc_local **out);

/* ------------------------------------------------------------- repl.c -- */

/* Replicated files; repl.c's opening comment states the rules. */
/* The newest of a name's record copies (the metadata server first). */
int gc_repl_lookup(const char *name, gp_record *rec);
/* Create: choose the copies' servers of rec (copy 0 = rec's servers) */
int gc_repl_place(gp_record *rec, int ncopy);
/* The logs of the servers holding name's record copies durable
 * (LOG_SYNC): 0 once a majority of them answered, as its writes need. */
int gc_repl_record_sync(const char *name);
/* ... make copies 1.. of subfiles *made.. and note every copy's server id
 * (*made: subfiles done, for the undo) */
int gc_repl_create_copies(const char *name, gp_record *rec, const char *fork,
                          int *made);
void gc_repl_delete_copies(const gp_record *rec, int nsub);
/* ... and store the record's other copies after the first is committed. */
int gc_repl_commit_others(const char *name, const gp_record *rec);
void gc_repl_remove_others(const char *name);
/* NS_SETATTR on the record's other copies (gc_set_attr). */
void gc_repl_setattr_others(const char *name, const char *attrs, size_t len);
/* True for a file id of R > 1. */
bool gc_repl_file(int fid);
/* Open the copies in sync of a fork into k (its ncopy, cserver...);
 * close them. */
int gc_repl_fork_open(int fid, int subfile, const char *name, gc_fork *k);
void gc_repl_fork_close(const gc_fork *k);
/* FORK_CREATE / FORK_DELETE on every copy in sync. */
enum { GC_REPL_CREATE, GC_REPL_DELETE };
int gc_repl_fork_each(int fid, int subfile, const char *name, int what);
/* The one failover: copy `copy` of fork kid failed with err in op
 * (GFS_READ / GFS_WRITE; any per-copy error alike: server down, timeout,
 * a bad checksum).  A write first records the copy stale (-EIO when that
 * cannot be done); then this handle forgets the copy.  Returns the next
 * usable copy's index, GFS_ENOCOPY when none is left, or err itself when
 * it is not the copy's fault (-EINVAL...). */
int gc_repl_failover(int kid, int copy, int err, int op);
/* Before a change through fork kid: record stale the copies the record
 * has in sync that this handle could not open (0, or -EIO). */
int gc_repl_settle(int kid);
/* gc_transfer for transfers of replicated forks (rkid). */
int gc_repl_transfer(int op, gc_xfer *x, size_t nx);
/* Bring every stale copy of name (or one on a wiped server) up to date;
 * *fixed: copies made in sync. */
int gc_repl_resync(const char *name, int *fixed);
int gc_repl_copies(const char *name, gfs_copies *out);
/* FETCH_SET / FETCH_ADD of a replicated file's counter: on every copy in
 * sync of subfile 0, the answer of the first that answers. */
int64_t gc_repl_counter(const gp_record *rec, const char *key, bool set,
                        uint64_t value);
/* Scrub and repair every copy of a replicated fork (gfs_scrub_fork_repair). */
int gc_repl_scrub(int kid, int64_t *chunks, int64_t *bad, int64_t *repaired,
                  gfs_scrub_fn fn, void *arg);

#endif /* GALLEY_INTERNAL_H */
