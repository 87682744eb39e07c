/*
 * gsrv_internal.h -- private to galleyd (servers/).  Nothing here is part of
 * any contract with the client; the wire protocol is proto/gproto.h.
 *
 * One I/O node (the paper's IOP) is made of these units, one file each:
 *
 *   galleyd.c     main thread: arguments, data directory, listening sockets
 *                 (TCP and the same-host Unix socket), accept loop, one
 *                 handler thread per client, clean exit.
 *   handler.c     handler threads (the paper's CP threads): frames in,
 *                 dispatch through a table built from GP_OPCODES, replies
 *                 out with writev.  PING and STATFS live here.
 *   nameserver.c  the NameServer: file records (NS_* opcodes).
 *   subfile.c     the subfile table: subfiles and their fork tables in
 *                 memory, fork reference counts, the listing for fsck.
 *   subfile_disk.c  subfile headers on disk, removal, start-up recovery.
 *   subfile_ops.c   SUB_* and FORK_* handlers (all but the data path).
 *   counters.c    FETCH_ADD / FETCH_SET: a subfile's named counters.
 *   io.c          IO_READ / IO_WRITE (and their same-host forms IO_READV /
 *                 IO_WRITEV): decode, expand, sort, coalesce, move data
 *                 between the socket (or the client's memory) and cache
 *                 blocks.
 *   cma.c         cross-memory attach: copies to and from a same-host
 *                 client's memory (process_vm_readv/writev).
 *   direct.c      DIRECT_OPEN / DIRECT_WOPEN / DIRECT_CLOSE: a same-host
 *                 client of our uid gets a fork's file descriptor and moves
 *                 data itself; the coherence rule the cache and io.c keep
 *                 meanwhile, and locked mode (writers take OFD locks).
 *   csum.c        checksummed forks: the CRC32C of every 32 KiB chunk in a
 *                 sidecar file, checked on every disk read; SCRUB.
 *   cache.c       the CacheManager thread: 32 KB blocks, hash, global LRU,
 *                 reference counts, round-robin service of per-client lists
 *                 (a lone list is served by its handler thread).
 *   disk.c        the DiskManager thread: C-SCAN ordered preads on the
 *                 forks' Unix files; write-through pwritev on the handler
 *                 threads.
 *   rangelock.c   LOCK / UNLOCK: byte-range locks on a subfile;
 *                 BLOCK_LOCK / BLOCK_UNLOCK: the same over block numbers.
 *   meta.c        crash-safe metadata files (write temp, rename; logged)
 *   metatab.c     the metadata table: NameServer records and subfile
 *                 headers, in memory, in DIR/meta.tab and in the log
 *   wal.c         the metadata log: group commit, replay at start-up
 *                 and the start-up recovery scan of their directories.
 *   htable.c      the one hash table (subfiles, NameServer, cache).
 *
 * Threads: main, one handler per connection, one CacheManager, one
 * DiskManager.
 *
 * Locking order (a thread holding a lock may only take locks further down
 * the list; the ones marked "leaf" are never held while taking another):
 *
 *   1. fork->rw      per-fork rwlock: IO_READ shared; IO_WRITE and
 *                    FORK_TRUNCATE exclusive.  Held across cache waits and
 *                    disk write-through.
 *   2. cache.lock    CacheManager state (cache.c).
 *   3. disk.lock     DiskManager queue (disk.c).
 *   separately: subtab.meta -> subtab.lock (subfile.c).  subtab.meta
 *                    serialises metadata changes and is held across their
 *                    fsyncs; subtab.lock guards the in-memory tables and is
 *                    held only briefly (the data path takes it in
 *                    gsrv_fork_get, so it never waits for an fsync).
 *   leaf: ns.lock (nameserver.c), subtab.lock, locktab.lock (rangelock.c),
 *         conns.lock (galleyd.c).
 *
 * No thread holds subtab.meta, subtab.lock or ns.lock while waiting for the
 * cache or the disk, or takes a fork's rwlock under them; forks are freed
 * (which takes cache.lock) only after both subtab locks are released.  The
 * DiskManager calls completion callbacks with no lock held.
 */
#ifndef GSRV_INTERNAL_H
#define GSRV_INTERNAL_H

/* Linux extensions used: accept4, pipe2, POLLRDHUP, preadv/pwritev, rwlock
 * writer preference.  This header comes first in every servers/ file. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "galley.h"
#include "gproto.h"
#include "gerror.h"
#include "extent.h"
#include "htable.h"

/* ------------------------------------------------------------------------
 * Limits and constants
 * ------------------------------------------------------------------------ */
#define GSRV_BLOCK_SIZE 32768u /* cache and disk block (paper: 32 KB) */
#define GSRV_DEFAULT_CACHE_MB 64
#define GSRV_MAX_CACHE_MB (1u << 20)
#define GSRV_MIN_DATA_LIMIT 4096u
#define GSRV_MAX_FORK_INDEX 0xffffu /* fork index is the low 16 bits    */
#define GSRV_MAX_HID ((UINT64_C(1) << 48) - 1)
#define GSRV_MAX_COUNTERS 4096 /* FETCH_ADD keys per subfile       */
#define GSRV_MAX_OPENS_PER_CONN (1u << 20)
#define GSRV_MAX_LOCKS_PER_CONN 65536
#define GSRV_MAX_META_FILE (64u << 20) /* largest metadata file we load    */
#define GSRV_IOV_BATCH 1024            /* iovecs per writev/sendmsg        */
#define GSRV_STAGE_KEEP (1u << 20)     /* local writes: staging kept per conn */
#define GSRV_CMA_DIRECT_MIN                                                    \
    512 /* local writes: mean piece size from                                  \
         * which data goes straight into the                                   \
         * cache blocks                       */

/* fkid = (hid << 16) | fork index: handles survive server restarts. */
static inline uint64_t gsrv_fkid(uint64_t hid, uint32_t idx)
{
    return (hid << 16) | idx;
}
static inline uint64_t gsrv_fkid_hid(uint64_t fkid)
{
    return fkid >> 16;
}
static inline uint32_t gsrv_fkid_idx(uint64_t fkid)
{
    return (uint32_t)(fkid & 0xffffu);
}

/* ------------------------------------------------------------------------
 * Global server state (galleyd.c)
 * ------------------------------------------------------------------------ */
typedef struct gsrv_globals {
    int dfd;             /* the data directory, opened O_DIRECTORY      */
    uint64_t data_limit; /* advertised per-request data limit (bytes)   */
    int verbose;
    unsigned spin_us;      /* local connections: poll this long before recv */
    volatile int stopping; /* set once on SIGTERM/SIGINT               */
    unsigned max_conns;    /* connections served at once (--max-conns)    */
    int frame_timeout_ms;  /* a begun frame or an unauthenticated
                            * connection may stall this long (--frame-timeout) */
    int lock_lease_ms;     /* a lock's holder must show life this often */
} gsrv_globals;

#define GSRV_DEFAULT_MAX_CONNS 1024
#define GSRV_DEFAULT_FRAME_TIMEOUT_S 30
#define GSRV_DEFAULT_LOCK_LEASE_S 30
#define GSRV_OVERCAP_HANDLERS 16 /* refusals answered at once past the cap */

extern gsrv_globals gsrv_g;

/* Log a line to stderr ("galleyd[pid]: ..."): level 0 always, 1 with -v,
 * 2 with -vv. */
void gsrv_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Message for a galley.h error code or a negative errno: the one lookup in
 * proto/gerror.c, the same text the client's gfs_strerror gives. */
#define gsrv_strerror(err) gp_strerror(err)

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
    /* receive buffer, and the frame being received (handler.c, gsrv_rx_*):
     * its payload length, the bytes read from the socket so far, and how
     * many of those are in buf (the rest went where io.c put them) */
    uint8_t *buf;
    size_t bufcap;
    size_t rx_len, rx_pos, rx_have;
    int rx_err;     /* the socket failed mid-frame: close, no reply */
    int rx_pipe[2]; /* gsrv_rx_to_file's pipe, when rx_piped > 0 */
    int rx_piped;   /* 0: not made yet; 1: made; -1: cannot be */
    size_t rx_pipe_sz;
    /* local writes: the data copied in from the client (io.c); NULL or
     * GSRV_STAGE_KEEP bytes */
    uint8_t *stage;
    struct gsrv_out *out;          /* reply batch, allocated on first use */
    struct gsrv_conn *prev, *next; /* registry in galleyd.c */
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

/* True when the peer has closed or reset the connection (non-blocking). */
bool gsrv_conn_hung_up(const gsrv_conn *c);

/* Receiving while handling (handler.c).  A large IO_WRITE is handed to io.c
 * once its first bytes have arrived (GSRV_RX_PREFIX), so that its data can
 * go from the socket straight into the cache blocks, window by window,
 * while the client is still sending the rest: io.c's write-through of one
 * window overlaps the network's delivery of the next.  Every other frame
 * arrives whole before it is handled.
 *   gsrv_rx_partial: has part of the frame not been read yet?
 *   gsrv_rx_fill:    make buf hold the frame's bytes [0, upto) (only while
 *                    no bytes have gone elsewhere);
 *   gsrv_rx_into:    the frame's bytes [pos, pos + n) into dst: those
 *                    already in buf are copied, the rest must be the next
 *                    bytes on the socket.
 * Both return 0 or a negative error; after an error the connection closes
 * without a reply (c->rx_err). */
#define GSRV_RX_PREFIX 4096u
#define GSRV_RX_STREAM_MIN (256u << 10) /* smaller writes arrive whole */
static inline bool gsrv_rx_partial(const gsrv_conn *c)
{
    return c->rx_pos < c->rx_len;
}
int gsrv_rx_fill(gsrv_conn *c, size_t upto);
int gsrv_rx_into(gsrv_conn *c, size_t pos, void *dst, size_t n);
/* The frame's bytes [pos, pos + n) into file fd at offset off, moved by
 * the kernel (splice through a pipe: the socket's pages are not copied
 * into the server's memory, only into the file's page cache).  0, or a
 * negative error: a receive error (c->rx_err set) or the file's (e.g.
 * -ENOSPC; the bytes are still taken off the socket). */
int gsrv_rx_to_file(gsrv_conn *c, size_t pos, int fd, uint64_t off, size_t n);

/* Connection registry (galleyd.c): every live connection, so that a clean
 * exit can shut their sockets down. */
void gsrv_conn_register(gsrv_conn *c);
void gsrv_conn_unregister(gsrv_conn *c);

/* ------------------------------------------------------------------------
 * Replies (handler.c)
 *
 * An op fills rep->w with the reply payload and returns 0, or returns a
 * negative error code (the reply then has an empty payload).  An op that
 * sends bulk data after rep->w sets datalen, send and cleanup: the handler
 * calls send(out, arg) after the small payload, then cleanup(arg) whether
 * or not sending worked (cleanup is also called if send is never reached).
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

/* Every opcode has exactly one handler, declared here from the X-macro so a
 * missing one fails at link time. */
typedef int (*gsrv_op_fn)(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep);
#define GSRV_X_PROTO(name, code, doc)                                          \
    int gsrv_op_##name(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep);
GP_OPCODES(GSRV_X_PROTO)
#undef GSRV_X_PROTO

/* ------------------------------------------------------------------------
 * Metadata files (meta.c) -- all paths are relative to gsrv_g.dfd.
 * ------------------------------------------------------------------------ */

/* Replace `rel` atomically with buf[0..len): write rel.tmp, (fsync), rename,
 * (fsync the parent directory).  durable=false skips both fsyncs (the result
 * still survives a kill -9 of galleyd, not a machine crash). */
int gsrv_meta_write(const char *rel, const void *buf, size_t len, bool durable);
/* Read a whole metadata file of at most max bytes; *buf is malloc'd (free
 * it).  -ENOENT, -EFBIG, -EIO, ... */
int gsrv_meta_read(const char *rel, uint8_t **buf, size_t *len, size_t max);
/* fsync a directory (relative path, "." for the data directory). */
int gsrv_meta_sync_dir(const char *rel);
/* Unlink; 0 if it did not exist. */
int gsrv_meta_unlink(const char *rel);
/* True for names ending in ".tmp" (leftovers of an interrupted write). */
bool gsrv_meta_is_tmp(const char *name);
/* Parse a decimal u64 that makes up the whole of s[0..n) (n == 0: all of s);
 * false if s is not such a number. */
bool gsrv_parse_u64(const char *s, size_t n, uint64_t *out);

/*
 * The start-up recovery scan of one metadata directory (the NameServer's
 * ns/, the subfiles' sub/ and each sub/HID/).  For every entry of sc->dir
 * whose name does not start with '.': a temp file (gsrv_meta_is_tmp) is
 * unlinked when sc->remove_tmp; a name "<n><suffix>" (n in canonical
 * decimal, gsrv_parse_u64) goes to sc->numbered; any other name to
 * sc->other.  Callbacks get the directory's descriptor for unlinkat and
 * return 0 to go on; anything else stops the scan and is returned.
 * Returns 0, a callback's stop value, or -errno when the directory cannot
 * be opened.  Main thread, at start-up.
 */
typedef struct gsrv_scan gsrv_scan;
struct gsrv_scan {
    const char *dir;    /* relative to the data directory */
    const char *suffix; /* of numbered names; "" for bare numbers */
    bool remove_tmp;
    int (*numbered)(gsrv_scan *sc, int dfd, const char *name, uint64_t n);
    int (*other)(gsrv_scan *sc, int dfd, const char *name);
    void *arg; /* the caller's */
};
int gsrv_meta_scan(gsrv_scan *sc);
/* mkdir / rmdir of a metadata directory (logged like the files). */
int gsrv_meta_mkdir(const char *rel);
int gsrv_meta_rmdir(const char *rel);
/* fsync a directory now, whatever the log holds (FORK_SYNC: a data
 * file's entry). */
int gsrv_dir_fsync(const char *rel);
/* Replace rel durably (fsync'd file and directory), never logged: the
 * metadata table's own file (metatab.c). */
int gsrv_meta_replace(const char *rel, const void *buf, size_t len);

/* ---------------------------------------------------------- metatab.c -- */

/* The metadata table (metatab.c states the scheme): NameServer records
 * and subfile headers as values named by the path they had as files.
 * put/del are logged like the files of meta.c (the handler waits). */
int gsrv_tab_load(void); /* DIR/meta.tab, before the log is replayed */
int gsrv_tab_put(const char *key, const void *val, size_t len);
void gsrv_tab_del(const char *key);
/* A copy of key's value (*val malloc'd): 0, -ENOENT or -ENOMEM. */
int gsrv_tab_get(const char *key, uint8_t **val, size_t *len);
bool gsrv_tab_has(const char *key);
/* fn(key, arg) for every key that starts with prefix, in key order, over
 * a copy of the keys (fn may change the table); stops at fn's first
 * non-zero return, which is returned. */
int gsrv_tab_each(const char *prefix, int (*fn)(const char *key, void *arg),
                  void *arg);
/* Start-up: the value of metadata file `path` (a data directory written
 * before the table), under the key `path`; the file is unlinked once a
 * table that holds it is saved. */
int gsrv_tab_import(const char *path);
/* Write DIR/meta.tab (durable); then unlink the files imported. */
int gsrv_tab_save(void);
bool gsrv_tab_dirty(void); /* changed since the last save, while not logging */
uint64_t gsrv_tab_bytes(void);
void gsrv_tab_fini(void);

/* ------------------------------------------------------------- wal.c -- */

/* The metadata log (group commit; wal.c states the scheme).  meta.c logs
 * every durable change; the handler waits before it replies. */
enum {
    GSRV_WAL_PUT = 1,
    GSRV_WAL_DEL,
    GSRV_WAL_MKDIR,
    GSRV_WAL_RMDIR,
    GSRV_WAL_TPUT, /* a metadata table value (metatab.c) */
    GSRV_WAL_TDEL
};
/* Replay DIR/wal into the data directory and empty it (before the
 * start-up scans); then log from gsrv_wal_start on. */
int gsrv_wal_replay(void);
int gsrv_wal_start(void);
/* Make everything logged durable, empty the log, stop logging. */
void gsrv_wal_close(void);
bool gsrv_wal_on(void);
/* Append a change already made in the file system (owner's lock held). */
void gsrv_wal_log(int op, const char *path, const void *data, size_t len);
/* Wait until every change this thread logged is durable: 0 or an error. */
int gsrv_wal_wait(void);

/* ------------------------------------------------------------------------
 * NameServer (nameserver.c)
 * ------------------------------------------------------------------------ */
int gsrv_ns_init(void); /* load DIR/ns */
/* DIR/dsid: this data directory's id, made on first use (repl.c). */
int gsrv_repl_init(void);
void gsrv_ns_fini(void);
void gsrv_ns_drop_conn(uint64_t conn_id); /* release its reservations */
uint64_t gsrv_ns_count(void);

/* ------------------------------------------------------------------------
 * Subfiles and forks (subfile.c)
 * ------------------------------------------------------------------------ */
typedef struct gsrv_fork gsrv_fork;

struct gsrv_fork {
    uint64_t fkid;
    pthread_rwlock_t rw; /* see the locking order above */
    int fd;              /* data file, opened on first use; -1 until then,
                          * and while it has none (never written: empty);
                          * set once, under subtab.lock */
    int cfd;             /* its checksums (csum.c), opened with fd; -1: not
                          * a checksummed fork; set under rw exclusive */
    uint64_t size;       /* authoritative; read/written with __atomic ops,
                          * changed only under rw held exclusively */
    /* the rest is guarded by subtab.lock */
    char *name;
    uint32_t index;
    uint32_t opens;       /* opens over all connections */
    uint32_t refs;        /* gsrv_fork_get references */
    uint32_t direct_w;    /* writable descriptors held by clients (direct.c);
                           * changed under rw held exclusively, read with
                           * __atomic ops: while > 0 the cache is bypassed
                           * and the file's size is the fork's */
    uint32_t direct_lk;   /* of those, held in locked mode (direct.c): while
                           * > 0 every writer of the file takes an OFD
                           * lock on what it writes; same rules */
    bool deleted;         /* marked; removed at the last close */
    bool gone;            /* out of its subfile's table; freed at refs == 0 */
    gsrv_fork *reap_next; /* subfile.c: freed after subtab.lock is dropped */
};

int gsrv_sub_init(void); /* load DIR/sub, finish deferred deletions */
void gsrv_sub_fini(void);

/* Look up a fork by handle (live or marked deleted) and take a reference;
 * opens its data file if needed.  A live fork's data file is made for
 * GSRV_FORK_WRITE; for GSRV_FORK_READ a fork without one (never written)
 * keeps f->fd at -1 and its size at 0, so a read-only use makes nothing
 * and needs no disk space (the fork's rwlock orders it with a writer that
 * makes the file: a size above 0 read under it comes with f->fd).
 * GFS_ESTALE if it does not exist.  Undo with gsrv_fork_put. */
enum { GSRV_FORK_READ, GSRV_FORK_WRITE };
int gsrv_fork_get(uint64_t fkid, int use, gsrv_fork **out);
void gsrv_fork_put(gsrv_fork *f); /* NULL-safe */

/* Close `count` opens of fkid (connection drop or FORK_CLOSE); removes a
 * deleted fork at its last close. */
void gsrv_fork_close(uint64_t fkid, uint32_t count);

/* True when hid names a subfile that is not deleted. */
bool gsrv_sub_exists(uint64_t hid);

/* For fsck (SUB_LIST, subfile_ops.c): up to max subfiles with hid > after,
 * sorted by hid, live and marked; free with gsrv_sub_info_free. */
typedef struct gsrv_sub_info {
    uint64_t hid;
    char *filename;
    uint32_t subidx;
    bool deleted;
} gsrv_sub_info;
int gsrv_sub_list(uint64_t after, size_t max, gsrv_sub_info **out, size_t *n);
void gsrv_sub_info_free(gsrv_sub_info *v, size_t n);

/* For STATFS. */
void gsrv_sub_stats(uint64_t *nsubfiles, uint64_t *nforks,
                    uint64_t *bytes_used);

/* True while clients hold writable descriptors of the fork (direct.c). */
static inline bool gsrv_fork_direct(const gsrv_fork *f)
{
    return __atomic_load_n(&f->direct_w, __ATOMIC_ACQUIRE) != 0;
}
/* True while the fork is in locked mode (direct.c): its writes take OFD
 * locks (fdio.h: gx_fd_write_locked).  Read under f->rw. */
static inline bool gsrv_fork_locked(const gsrv_fork *f)
{
    return __atomic_load_n(&f->direct_lk, __ATOMIC_ACQUIRE) != 0;
}
/* The size of the fork's file (fstat), for forks that direct writers may
 * grow behind our back; f->size if that fails. */
uint64_t gsrv_fork_file_size(const gsrv_fork *f);
static inline uint64_t gsrv_fork_size(const gsrv_fork *f)
{
    if (gsrv_fork_direct(f))
        return gsrv_fork_file_size(f);
    return __atomic_load_n(&f->size, __ATOMIC_ACQUIRE);
}
static inline void gsrv_fork_set_size(gsrv_fork *f, uint64_t size)
{
    __atomic_store_n(&f->size, size, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------------------
 * DiskManager (disk.c)
 * ------------------------------------------------------------------------ */
enum { GSRV_DISK_READ = 0, GSRV_DISK_WRITE = 1 };

typedef struct gsrv_dreq gsrv_dreq;

struct gsrv_dreq {
    uint64_t fkid; /* with bno: the C-SCAN key */
    uint64_t bno;
    int fd;
    int op;             /* GSRV_DISK_READ / GSRV_DISK_WRITE */
    uint32_t lo, hi;    /* byte range within the block (reads: 0..BLOCK) */
    unsigned char *buf; /* the block's GSRV_BLOCK_SIZE bytes */
    int cfd;            /* reads: >= 0, check the block against these
                         * checksums (csum.c) before it is ready */
    /* Called by the DiskManager thread, no lock held, err 0 or -errno. */
    void (*done)(gsrv_dreq *d, int err);
    void *arg;
    gsrv_dreq *prev, *next; /* queue links (disk.c) */
};

int gsrv_disk_start(void);
void gsrv_disk_stop(void); /* after the queue has drained */
/* Queue n requests (any order; they are sorted into the scan). */
void gsrv_disk_submit(gsrv_dreq **reqs, size_t n);
/* Write n block ranges through to their files now, on the calling thread
 * (consecutive blocks merged); 0 or the first error. */
int gsrv_disk_write_wait(gsrv_dreq **reqs, size_t n);

/* ------------------------------------------------------------------------
 * Checksummed forks (csum.c states the rules)
 * ------------------------------------------------------------------------ */
/* Open the fork's sidecar if it has one (f->cfd, else -1): 0 or -errno. */
int gsrv_csum_open(gsrv_fork *f);
/* Make the fork checksummed (rw held exclusively); 0 if it is. */
int gsrv_csum_create(gsrv_fork *f);
/* Remove a deleted fork's sidecar (none: nothing). */
void gsrv_csum_unlink(uint64_t fkid);
/* Check a block read from disk: 0, GFS_ECHECKSUM (logged) or -errno. */
int gsrv_csum_verify(int cfd, uint64_t fkid, uint64_t bno, const uint8_t *blk);
/* Before blocks bno[0..n) (ascending, holding the new data) are written
 * through: their new entries (rw held exclusively). */
struct gsrv_block;
int gsrv_csum_update(gsrv_fork *f, const uint64_t *bno, struct gsrv_block **blk,
                     size_t n);
/* After they are written: the entries of blocks bno[0..n) settled. */
int gsrv_csum_settled(gsrv_fork *f, const uint64_t *bno, size_t n);
/* A same-host writer died holding the fork: settle what it was writing
 * (rw held exclusively). */
void gsrv_csum_settle_dead(gsrv_fork *f);
/* After the data file was truncated to size (rw held exclusively). */
int gsrv_csum_truncate(gsrv_fork *f, uint64_t size);
/* While same-host clients hold the fork (gsrv_fork_direct): pieces
 * (gx_ext.mem; writes sorted and disjoint, reads sorted) to or from its
 * file, chunk-locked and checked as they do (proto/csfile.h), rw held
 * exclusively.  0, GFS_ECHECKSUM (logged) or -errno. */
struct gx_ext;
int gsrv_csum_bypass_write(gsrv_fork *f, const struct gx_ext *e, size_t n);
int gsrv_csum_bypass_read(gsrv_fork *f, const struct gx_ext *e, size_t n);
/* Test-only: should this checksummed reply's data get a flipped bit? */
bool gsrv_csum_fault_flip(void);

/* ------------------------------------------------------------------------
 * CacheManager (cache.c)
 * ------------------------------------------------------------------------ */
enum { GSRV_BLK_LOADING = 0, GSRV_BLK_READY = 1, GSRV_BLK_ERROR = 2 };

typedef struct gsrv_block gsrv_block;

struct gsrv_block {
    uint64_t fkid, bno;
    unsigned char *data; /* GSRV_BLOCK_SIZE bytes */
    /* below: cache.lock */
    uint32_t refs;
    int state;
    int err;
    bool discard;              /* free at the last release instead of caching */
    gsrv_hlink hlink;          /* in the cache's table by (fkid, bno) */
    gsrv_block *lprev, *lnext; /* LRU list, only while refs == 0 */
    gsrv_dreq dreq;            /* the read that fills it */
};

/* What a cache miss on a block of a request does. */
enum gsrv_miss {
    GSRV_MISS_READ = 0, /* read it from disk */
    GSRV_MISS_ZERO = 1, /* no valid byte survives the write: zeros */
    GSRV_MISS_ANY = 2,  /* wholly overwritten: contents irrelevant */
};

/*
 * One handler's block list (the paper: "a separate list of requested disk
 * blocks for each thread").  The handler fills fkid, fd, n, bno[] (sorted,
 * distinct) and miss[] (enum gsrv_miss: a block that will be wholly
 * overwritten or lies past the fork's end needs no disk read), then calls
 * gsrv_cache_get; blk[] receives referenced blocks.
 */
typedef struct gsrv_creq {
    uint64_t fkid;
    int fd;
    int cfd; /* the fork's checksums (csum.c), or -1 */
    size_t n;
    const uint64_t *bno;
    const uint8_t *miss; /* enum gsrv_miss */
    gsrv_block **blk;
    /* CacheManager bookkeeping */
    size_t next;                     /* blocks looked up so far */
    struct gsrv_creq *rprev, *rnext; /* round-robin ring */
} gsrv_creq;

int gsrv_cache_start(size_t cache_mb);
void gsrv_cache_stop(void);
/* Submit the list and wait until every block is ready; every blk[i] is
 * referenced on return (also on error): release with gsrv_cache_put.
 * Returns 0 or the first block's read error. */
int gsrv_cache_get(gsrv_creq *q);
/* Drop references; discard=true also evicts the blocks (their contents
 * may not match the disk). */
void gsrv_cache_put(gsrv_block **blk, size_t n, bool discard);
/* Forget every cached block of a fork (deleted fork). */
void gsrv_cache_drop_fork(uint64_t fkid);
/* The fork shrank or rolled back to `size`: drop blocks past it and zero
 * the tail of the block containing it.  Caller holds fork->rw exclusively. */
void gsrv_cache_trim(uint64_t fkid, uint64_t size, uint64_t oldsize);
/* Take the blocks of fork fkid that hold any byte of [off, end) out of the
 * cache: the caller writes those bytes to the file without it (io.c),
 * holding the fork's lock exclusively. */
void gsrv_cache_forget(uint64_t fkid, uint64_t off, uint64_t end);
void gsrv_cache_stats(uint64_t *hits, uint64_t *misses);
/* Most blocks one request should hold at once. */
size_t gsrv_cache_window(void);

/* ------------------------------------------------------------------------
 * Byte-range locks (rangelock.c)
 * ------------------------------------------------------------------------ */
void gsrv_locks_drop_conn(uint64_t conn_id);
void gsrv_locks_wake_all(void); /* on shutdown */
/* A sign of life from connection conn_id: renew its locks' leases. */
void gsrv_locks_renew(uint64_t conn_id);

/* ------------------------------------------------------------------------
 * Data counters by where the client is (iostats.c)
 * ------------------------------------------------------------------------ */
/* Count `bytes` of a successful read or write request on connection c,
 * as same-host (Unix socket, or TCP from one of this host's addresses)
 * or other-host traffic.  Any thread; lock-free. */
void gsrv_iostat_count(gsrv_conn *c, bool write, uint64_t bytes);

/* ------------------------------------------------------------------------
 * Direct access (direct.c)
 * ------------------------------------------------------------------------ */
/* The connection ends: release every descriptor grant it holds. */
void gsrv_direct_drop_conn(gsrv_conn *c);

#endif /* GSRV_INTERNAL_H */
