/*
 * galley.h -- public interface of the Galley parallel file system client.
 *
 * A Galley *file* has a fixed number of *subfiles*, each living entirely on
 * one I/O server (galleyd).  A subfile holds any number of named *forks*:
 * independent, growable byte sequences.  This header is all an application
 * sees; it never needs MPI.
 *
 * Conventions
 *   - Every function named for an action returns 0 (or a non-negative id or
 *     count) on success and a negative error code on failure.  Error codes
 *     are negative errno values (-ENOENT, -EEXIST, ...) or the project codes
 *     below; gfs_strerror() turns either into a message.
 *   - Identifiers (file ids, fork ids, striped ids, handles) are
 *     non-negative ints, not pointers.  Once closed (or released) an id
 *     answers GFS_EBADID, also when a new object takes its place (until
 *     that place has been reused 1024 times), and an id of one kind is
 *     refused where another kind is expected.
 *   - Every function is thread-safe.  gfs_init/gfs_finalize are reference
 *     counted: each successful gfs_init needs one gfs_finalize.
 *   - A request to a dead or unreachable server fails with GFS_ETIMEDOUT or
 *     GFS_ESERVERDOWN within the configured timeout (GALLEY_TIMEOUT seconds,
 *     default 30); no call waits forever.
 */
#ifndef GALLEY_H
#define GALLEY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GFS_VERSION_MAJOR 0
#define GFS_VERSION_MINOR 1

/* Limits shared with the servers. */
#define GFS_NAME_MAX 255      /* bytes in a file name, excluding NUL      */
#define GFS_FORK_NAME_MAX 127 /* bytes in a fork name, excluding NUL      */
#define GFS_MAX_SUBFILES 256  /* subfiles in one file (one per server)    */
#define GFS_MAX_SERVERS 256   /* servers in a cluster file                */
#define GFS_ATTR_MAX 4096     /* bytes of attribute text on a file record */

/*
 * Project error codes (negative, outside the errno range).  X(name, value,
 * message).  Standard conditions use negative errno values instead.
 */
#define GFS_ERROR_TABLE(X)                                                     \
    X(GFS_ENOTINIT, -1001, "galley client not initialised (call gfs_init)")    \
    X(GFS_ENOCLUSTER, -1002, "no cluster file (set GALLEY_CLUSTER)")           \
    X(GFS_EBADCLUSTER, -1003, "malformed cluster file")                        \
    X(GFS_ESERVERDOWN, -1004, "I/O server unreachable or connection lost")     \
    X(GFS_ETIMEDOUT, -1005, "I/O server did not answer within the timeout")    \
    X(GFS_EPROTO, -1006, "protocol error (malformed or unexpected message)")   \
    X(GFS_EVERSION, -1007, "server speaks another protocol version")           \
    X(GFS_EBADID, -1008, "unknown or closed file, fork or handle id")          \
    X(GFS_ESTALE, -1009, "fork or file was removed on the server")             \
    X(GFS_ETOOBIG, -1010, "request larger than the server accepts")            \
    X(GFS_ELAYOUT, -1011, "file has no (or an invalid) striped layout")        \
    X(GFS_EBUSY, -1012, "resource busy (name being created or deleted)")       \
    X(GFS_EAUTH, -1020,                                                        \
      "cluster secret missing or wrong (the key file "                         \
      "beside the cluster file, or GALLEY_KEY)")                               \
    X(GFS_ECONNLIMIT, -1021, "I/O server has too many connections")            \
    X(GFS_EDIRECT, -1022,                                                      \
      "direct access refused: the server is on another host, runs as "         \
      "another user, or is too old")                                           \
    X(GFS_ESTALEGEN, -1030,                                                    \
      "the file's layout changed (a copy went stale or was resynced): "        \
      "reopen it")                                                             \
    X(GFS_ENOCOPY, -1031, "no in-sync copy of the data is reachable")          \
    X(GFS_ECHECKSUM, -1040,                                                    \
      "data failed its checksum on the I/O server's disk (the server "         \
      "logs the chunk)")                                                       \
    X(GFS_ECHECKSUM_WIRE, -1041,                                               \
      "data failed its checksum in transit, also when sent again")

enum gfs_error {
#define GFS_X_ENUM(name, value, msg) name = value,
    GFS_ERROR_TABLE(GFS_X_ENUM)
#undef GFS_X_ENUM
};

/* Message for any code returned by this library (negative errno included). */
const char *gfs_strerror(int err);

/* ------------------------------------------------------------------------
 * Initialisation
 * ------------------------------------------------------------------------ */

/*
 * Read the cluster file and prepare connections (made lazily).
 * cluster_file: path, or NULL for $GALLEY_CLUSTER, then
 * $HOME/.galley/cluster, then /etc/galley/cluster.
 * Format: one "host:port" per line; blank lines and '#' comments ignored;
 * line order is the server number (0, 1, ...).
 * Errors: GFS_ENOCLUSTER, GFS_EBADCLUSTER, -ENOMEM.
 * Undo with gfs_finalize().
 */
int gfs_init(const char *cluster_file);

/* Close every open fork and file, then the connections. */
int gfs_finalize(void);

/* Number of servers in the cluster (after gfs_init). */
int gfs_num_servers(void);

/* Round trip to server `server`; 0 when it answers. */
int gfs_ping(int server);

/*
 * How this client reaches server `server` (connects if needed):
 * GFS_TRANSPORT_TCP, GFS_TRANSPORT_LOCAL (same-host Unix socket, data
 * inline), GFS_TRANSPORT_LOCAL_CMA (same-host socket, data copied by the
 * server straight between this process's memory and its cache) or
 * GFS_TRANSPORT_DIRECT (same host and same user: this process reads and
 * writes the server's fork files itself through descriptors the server
 * passes it; requests of tiny pieces still go to the server by
 * cross-memory attach).  GALLEY_TRANSPORT=auto (default: direct where the
 * server grants it, else local, else TCP), direct (fail with GFS_EDIRECT
 * where refused), local (the same-host socket without direct access; fail
 * rather than use TCP) or tcp chooses; any other value makes gfs_init
 * fail with -EINVAL.  Errors: -EINVAL (no such server), GFS_ENOTINIT,
 * GFS_ESERVERDOWN, GFS_ETIMEDOUT, GFS_EDIRECT.
 */
enum {
    GFS_TRANSPORT_AUTO = 0,
    GFS_TRANSPORT_TCP = 1,
    GFS_TRANSPORT_LOCAL = 2,
    GFS_TRANSPORT_LOCAL_CMA = 3,
    GFS_TRANSPORT_DIRECT = 4,
};
int gfs_server_transport(int server);

/* Per-server request timeout in milliseconds (default from GALLEY_TIMEOUT). */
int gfs_set_timeout_ms(int ms);

/* ------------------------------------------------------------------------
 * Files
 * ------------------------------------------------------------------------ */

/*
 * Create a file of `nsubfiles` subfiles.  servers: NULL (the library picks
 * distinct servers, starting from the one the name hashes to) or an array
 * of nsubfiles distinct server numbers.  Three steps: reserve the name at
 * its metadata server, create a subfile header on each server, commit the
 * record; a failure in any step releases what was done.
 * Errors: -EEXIST, -EINVAL (bad count, duplicate/unknown server, name
 * empty), -ENAMETOOLONG, GFS_ESERVERDOWN, GFS_ETIMEDOUT, -ENOSPC.
 */
int gfs_create_file(const char *name, int nsubfiles, const int *servers);

/* Open an existing file; returns a file id >= 0.  Errors: -ENOENT, ...
 * Undo with gfs_close_file(). */
int gfs_open_file(const char *name);

/* Close a file id (its still-open forks are closed too). */
int gfs_close_file(int fid);

/* Delete a file and all its forks.  Forks still open somewhere are removed
 * at their last close.  Errors: -ENOENT, GFS_ESERVERDOWN, ... */
int gfs_delete_file(const char *name);

/* What gfs_stat_file reports. */
typedef struct gfs_file_stat {
    int nsubfiles;
    int servers[GFS_MAX_SUBFILES]; /* server number of each subfile */
} gfs_file_stat;

int gfs_stat_file(int fid, gfs_file_stat *st);

/*
 * Replicated files: every subfile has R copies (1..GFS_MAX_REPLICAS), each
 * on another server.  A write returns success only when every copy in
 * sync has it, or when a copy that failed has first been recorded stale
 * in the file's record (else it fails with -EIO); reads come from any
 * copy in sync and try the next on an error.  Stale copies are brought
 * back by gfs_resync (`galley resync`).  Replicated forks never take the
 * same-host direct path.  libgalley/repl.c states the rules.
 */
#define GFS_MAX_REPLICAS 3
enum { GFS_COPY_INSYNC = 0, GFS_COPY_STALE = 1 };
typedef struct gfs_copies {
    int replicas;   /* R */
    int nsubfiles;  /* rows of server / state used */
    int64_t gen;    /* the record's layout generation */
    int insync_min; /* copies in sync of the worst subfile */
    int server[GFS_MAX_SUBFILES][GFS_MAX_REPLICAS];
    int state[GFS_MAX_SUBFILES][GFS_MAX_REPLICAS];       /* GFS_COPY_* */
    uint64_t header[GFS_MAX_SUBFILES][GFS_MAX_REPLICAS]; /* on its server */
} gfs_copies;

/* gfs_create_striped with R = replicas copies of every subfile
 * (1: the same as gfs_create_striped).  -EINVAL unless 1 <= replicas <=
 * GFS_MAX_REPLICAS and replicas <= the number of servers. */
int gfs_create_striped_replicas(const char *name, int nsubfiles,
                                const int *servers, int64_t unit,
                                const char *fork, int replicas);
/* R of an open striped file (1: not replicated), from its open record. */
int gfs_striped_replicas(int sid);
/* The copies of file `name` as its newest record says (not a cached one). */
int gfs_copies_of(const char *name, gfs_copies *out);
/* Bring the stale copies of `name` up to date from a copy in sync (a
 * whole copy each; a server whose data directory was wiped gets a new
 * header); *fixed (may be NULL): copies made in sync.  Copies whose
 * server is still down stay stale.  Writers wait meanwhile; readers go
 * on. */
int gfs_resync(const char *name, int *fixed);

/*
 * List file names starting with `prefix` ("" for all), gathered from every
 * server, sorted.  Calls fn(name, arg) for each; stops early and returns
 * fn's value if it returns non-zero.  Returns 0 or a negative error.
 */
int gfs_list_files(const char *prefix, int (*fn)(const char *name, void *arg),
                   void *arg);

/*
 * File attributes: small "key=value" strings kept in the file's record at
 * its metadata server (the striped layout lives here).  Keys are 1-63 bytes
 * of [A-Za-z0-9_.]; values up to 1023 bytes without newlines.
 * gfs_get_attr copies the value (NUL-terminated) and returns its length, or
 * -ENOENT if the key is absent, -ERANGE if len is too small.
 */
int gfs_set_attr(int fid, const char *key, const char *value);
int gfs_get_attr(int fid, const char *key, char *value, size_t len);

/*
 * End-to-end checksums, per file (default off): algo "crc32c" or "none",
 * stored as the attribute galley.checksum.  Set it right after creating
 * the file, before any data is written; forks opened afterwards (by any
 * client) move their data with CRC32C: computed by the client from the
 * caller's buffer, checked by the server before it writes, stored beside
 * the data in 32 KiB chunks of each fork, checked again when read from
 * the server's disk and, for the data sent back, by the client before the
 * call returns.  Such forks never use the same-host direct or
 * cross-memory paths (their data travels in the request).  Errors of
 * reads and writes of checksummed files: GFS_ECHECKSUM (a chunk on a
 * server's disk does not match its checksum: the call fails, the server
 * logs the chunk), GFS_ECHECKSUM_WIRE (data damaged in transit twice
 * more after the first time: sent again up to two times).
 * gfs_set_checksum: 0, -EINVAL (unknown algo), those of gfs_set_attr.
 */
int gfs_set_checksum(int fid, const char *algo);

/* Verify every stored chunk of fork kid on its server's disk (not its
 * cache): *chunks checked, *bad failing (each logged by the server),
 * *first_bad the first failing chunk number (-1: none); a chunk is 32 KiB
 * of the fork.  0, -ENODATA (not a checksummed fork: nothing stored
 * yet), GFS_EBADID, ... */
int gfs_scrub_fork(int kid, int64_t *chunks, int64_t *bad, int64_t *first_bad);
/* The same for every copy of fork kid of a replicated file (R > 1) that
 * this handle holds in sync, and each failing chunk is rewritten from
 * another copy in sync (whole 32 KiB chunks, with the writers of the file
 * held off meanwhile, as when a read meets a failing chunk).  fn (may be
 * NULL) is called once per failing chunk met: the copy, its server, the
 * chunk number, and 0 (repaired) or why it was not (GFS_ENOCOPY: no copy
 * had good bytes; another error: that copy's server refused the write and
 * the copy is now recorded stale).  *chunks: checked over the copies;
 * *bad: failing; *repaired.  -EINVAL for a fork of one copy (use
 * gfs_scrub_fork), -ENODATA when no copy stores checksums yet. */
typedef void (*gfs_scrub_fn)(int copy, int server, int64_t chunk, int result,
                             void *arg);
int gfs_scrub_fork_repair(int kid, int64_t *chunks, int64_t *bad,
                          int64_t *repaired, gfs_scrub_fn fn, void *arg);

/* ------------------------------------------------------------------------
 * Forks
 * ------------------------------------------------------------------------ */

/* Create fork `name` in subfile `subfile` (0-based).  Errors: -EEXIST,
 * -EINVAL, -ENAMETOOLONG, GFS_EBADID. */
int gfs_create_fork(int fid, int subfile, const char *name);

/* Open a fork; returns a fork id ("kid") >= 0.  Undo with gfs_close_fork. */
int gfs_open_fork(int fid, int subfile, const char *name);

int gfs_close_fork(int kid);

/* Delete a fork; if open anywhere it is marked and removed at its last
 * close (new opens fail with -ENOENT meanwhile). */
int gfs_delete_fork(int fid, int subfile, const char *name);

/* The all_ variants act on every subfile of the file. */
int gfs_all_create(int fid, const char *name);
/* Opens the fork in every subfile; kids[i] receives subfile i's fork id. */
int gfs_all_open(int fid, const char *name, int *kids);
int gfs_all_close(int nkids, const int *kids);
int gfs_all_delete(int fid, const char *name);

/* List the forks of one subfile: fn(name, size, arg) for each. */
int gfs_list_forks(int fid, int subfile,
                   int (*fn)(const char *name, uint64_t size, void *arg),
                   void *arg);

/* Current size of an open fork in bytes (>= 0) or a negative error. */
int64_t gfs_fork_size(int kid);

/* Set a fork's size (shrink or extend with zeros). */
int gfs_truncate_fork(int kid, int64_t size);

/* ------------------------------------------------------------------------
 * Data
 * ------------------------------------------------------------------------ */

/*
 * Plain I/O on one fork at `offset`.  gfs_write returns size.  gfs_read
 * returns the number of bytes that lay before the end of the fork (short at
 * end of fork); the remainder of buf is filled with zeros.
 * Errors: -EINVAL (negative offset/size), GFS_EBADID, GFS_ESERVERDOWN,
 * GFS_ETIMEDOUT, -ENOSPC, -EIO.
 */
int64_t gfs_read(int kid, int64_t offset, void *buf, int64_t size);
int64_t gfs_write(int kid, int64_t offset, const void *buf, int64_t size);

/* One piece of a list request: `size` bytes at fork offset `file_offset`
 * to or from buf + `mem_offset`. */
typedef struct gfs_list_entry {
    int64_t file_offset;
    int64_t mem_offset;
    int64_t size;
} gfs_list_entry;

enum gfs_op { GFS_READ = 0, GFS_WRITE = 1 };

/*
 * List I/O: n pieces in one call, the one data path every other interface
 * is built on.  The server sorts and coalesces pieces before touching its
 * cache and disks; pieces move in whatever order the file system chooses.
 * Overlapping write pieces: the result is as if the pieces were applied in
 * list order (a later piece wins).  Zero-size pieces are allowed.  Read
 * pieces beyond the end of the fork read as zeros.
 * Returns the total bytes transferred (sum of sizes) or a negative error.
 * Large requests are split into transfers no bigger than the server's
 * advertised limit.
 */
int64_t gfs_listio(int kid, int op, int64_t n, const gfs_list_entry *entries,
                   void *buf);

/* Make every acknowledged write to the fork (and its subfile's metadata)
 * durable against a machine crash. */
int gfs_sync(int kid);

/* ------------------------------------------------------------------------
 * Structured requests (paper section 5.3).  Each becomes list I/O in one
 * place and travels as one request per server: runs of equal-size pieces
 * at a constant file stride are sent as one strided descriptor, never as
 * one entry per piece.  File offsets and strides must be >= 0; memory
 * strides may be negative.  All return the bytes moved (count * size) or a
 * negative error.
 * ------------------------------------------------------------------------ */

#define GFS_MAX_LEVELS 8

/* Simple-strided: `count` pieces of `size` bytes; piece i is at fork
 * offset offset + i * fstride and at buf + i * mstride. */
int64_t gfs_read_strided(int kid, int64_t offset, void *buf, int64_t size,
                         int64_t count, int64_t fstride, int64_t mstride);
int64_t gfs_write_strided(int kid, int64_t offset, const void *buf,
                          int64_t size, int64_t count, int64_t fstride,
                          int64_t mstride);

/* One level of a nested-strided request. */
typedef struct gfs_stride {
    int64_t count;
    int64_t fstride;
    int64_t mstride;
} gfs_stride;

/* Nested-strided: pieces of `size` bytes at
 * offset + sum(i_k * levels[k].fstride), buf + sum(i_k * levels[k].mstride)
 * for every index vector, levels[0] outermost (1..GFS_MAX_LEVELS levels). */
int64_t gfs_read_nested(int kid, int64_t offset, void *buf, int64_t size,
                        int nlevels, const gfs_stride *levels);
int64_t gfs_write_nested(int kid, int64_t offset, const void *buf, int64_t size,
                         int nlevels, const gfs_stride *levels);

/* Nested-batched: a list of simple (nlevels 0) or nested-strided pieces,
 * memory relative to buf, applied in list order. */
typedef struct gfs_batch_entry {
    int64_t file_offset;
    int64_t mem_offset;
    int64_t size;
    int nlevels;
    gfs_stride levels[GFS_MAX_LEVELS];
} gfs_batch_entry;

int64_t gfs_batch_io(int kid, int op, int64_t n, const gfs_batch_entry *e,
                     void *buf);

/* ------------------------------------------------------------------------
 * Non-blocking I/O.  gfs_new_handle() gives a handle; one gfs_nb_* call
 * starts a request on it and returns at once (0 or an argument error);
 * gfs_wait / gfs_test / gfs_waitall complete it and release the handle.
 * Requests to different servers and forks proceed concurrently; several
 * may be outstanding on one server.  Buffers must stay valid until the
 * request completes; argument arrays (entries, levels) are copied.
 * ------------------------------------------------------------------------ */

typedef int gfs_handle;

/* A new handle >= 0, or -ENOMEM / GFS_ENOTINIT. */
gfs_handle gfs_new_handle(void);

int gfs_nb_read(gfs_handle h, int kid, int64_t offset, void *buf, int64_t size);
int gfs_nb_write(gfs_handle h, int kid, int64_t offset, const void *buf,
                 int64_t size);
int gfs_nb_listio(gfs_handle h, int kid, int op, int64_t n,
                  const gfs_list_entry *entries, void *buf);
int gfs_nb_read_strided(gfs_handle h, int kid, int64_t offset, void *buf,
                        int64_t size, int64_t count, int64_t fstride,
                        int64_t mstride);
int gfs_nb_write_strided(gfs_handle h, int kid, int64_t offset, const void *buf,
                         int64_t size, int64_t count, int64_t fstride,
                         int64_t mstride);
int gfs_nb_read_nested(gfs_handle h, int kid, int64_t offset, void *buf,
                       int64_t size, int nlevels, const gfs_stride *levels);
int gfs_nb_write_nested(gfs_handle h, int kid, int64_t offset, const void *buf,
                        int64_t size, int nlevels, const gfs_stride *levels);
int gfs_nb_batch_io(gfs_handle h, int kid, int op, int64_t n,
                    const gfs_batch_entry *e, void *buf);
/* Striped files too (see below). */
int gfs_nb_striped_listio(gfs_handle h, int sid, int op, int64_t n,
                          const gfs_list_entry *entries, void *buf);

/* Wait for the request on h; returns what the blocking call would have
 * returned (bytes or a negative error) and releases h. */
int64_t gfs_wait(gfs_handle h);
/* 1 if done (its result stored in *result, h released), 0 if not yet,
 * negative for a bad handle. */
int gfs_test(gfs_handle h, int64_t *result);
/* Wait for all; results[i] (if results != NULL) as gfs_wait.  Returns 0 or
 * the first negative result. */
int gfs_waitall(int n, const gfs_handle *handles, int64_t *results);

/* ------------------------------------------------------------------------
 * Server statistics (for `galley df`)
 * ------------------------------------------------------------------------ */
typedef struct gfs_server_stat {
    uint64_t bytes_used;   /* bytes in fork data files             */
    uint64_t bytes_free;   /* free bytes on the server's data disk */
    uint64_t bytes_total;  /* size of the server's data disk       */
    uint64_t nrecords;     /* file records held by its NameServer  */
    uint64_t nsubfiles;    /* subfile headers held                 */
    uint64_t nforks;       /* forks held                           */
    uint64_t cache_hits;   /* CacheManager block hits              */
    uint64_t cache_misses; /* CacheManager block misses            */
} gfs_server_stat;

int gfs_stat_server(int server, gfs_server_stat *st);

/* Make every metadata change a server has answered so far durable against
 * a machine crash: its log's fdatasync, which galleyd --commit written
 * (the default) runs right behind its answers (docs/durability.md).
 * server -1: every server, at once.  records and commits (may be NULL;
 * one server only): the server's log counts after it, the changes
 * logged and the fdatasyncs that made them durable.  0 or a gfs error. */
int gfs_sync_metadata(int server, uint64_t *records, uint64_t *commits);

/* ------------------------------------------------------------------------
 * Striped linear files (SFIO-style; the MPI-IO layout)
 *
 * A logical byte stream striped cyclically over fork `fork` of every
 * subfile with stripe unit `unit` bytes: logical byte x lives in subfile
 * (x / unit) % nsub at fork offset (x / (unit * nsub)) * unit + x % unit.
 * The layout is stored as attributes of the file record
 * ("galley.stripe_unit", "galley.stripe_fork").
 * ------------------------------------------------------------------------ */

#define GFS_DEFAULT_STRIPE_UNIT 65536
#define GFS_DEFAULT_STRIPE_FORK "data"

/* Create a file with the striped layout and its fork in every subfile.
 * unit <= 0 means GFS_DEFAULT_STRIPE_UNIT; fork NULL means
 * GFS_DEFAULT_STRIPE_FORK. */
int gfs_create_striped(const char *name, int nsubfiles, const int *servers,
                       int64_t unit, const char *fork);

/* Open a striped file; returns a striped id ("sid") >= 0.  Undo with
 * gfs_striped_close. Errors: -ENOENT, GFS_ELAYOUT, ... */
int gfs_striped_open(const char *name);
int gfs_striped_close(int sid);

/* The layout of an open striped file.  kind: GFS_LAYOUT_STRIPED, or
 * GFS_LAYOUT_LOCAL for the locality layout (gfs_create_layout "local":
 * unit is its block size; see "Locality layout" below). */
enum gfs_layout_kind { GFS_LAYOUT_STRIPED = 0, GFS_LAYOUT_LOCAL = 1 };
typedef struct gfs_layout {
    int nsubfiles;
    int64_t unit;
    char fork[GFS_FORK_NAME_MAX + 1];
    int kind;
} gfs_layout;

int gfs_striped_layout(int sid, gfs_layout *layout);

/* Logical size (>= 0), computed from the fork sizes of every subfile. */
int64_t gfs_striped_size(int sid);

/* A striped file's logical size (and, unless NULL, its layout) by name,
 * without opening it: the record and every subfile's fork sizes in two
 * round trips.  0, -ENOENT, GFS_ELAYOUT (not a striped file), ... */
int gfs_striped_stat(const char *name, int64_t *size, gfs_layout *layout);

/* Modification times.  A striped file's is the newest of its subfiles'
 * data files' (each server's clock, so writes through any path count;
 * ns since the epoch), or 0 while none of them has data (never
 * written).  gfs_striped_stat with it, and an open file's size with it
 * (0 for the locality layout, which keeps none). */
int gfs_striped_stat_mtime(const char *name, int64_t *size, gfs_layout *layout,
                           int64_t *mtime_ns);
int gfs_striped_size_mtime(int sid, int64_t *size, int64_t *mtime_ns);

/* Set a striped file's modification time, as utimensat does (touch -d,
 * cp -p, rsync -t, a stage-in): it is kept in the record (attribute
 * "galley.mtime", "NS:DATA", with the data's time DATA when it was set)
 * and shows while the data keeps that time; the next write to the file
 * makes the data's time show again.  Other processes' cached records of
 * the name are recalled first. */
#define GFS_MTIME_ATTR "galley.mtime"
int gfs_set_mtime(const char *name, int64_t mtime_ns);
/* Set the access time (attribute "galley.atime", ns; shown as set until
 * set again: no read changes it) and the modification time (as
 * gfs_set_mtime) at once; -1 leaves one as it is. */
#define GFS_ATIME_ATTR "galley.atime"
int gfs_set_times(const char *name, int64_t atime_ns, int64_t mtime_ns);

/* Permission bits (07777).  A file's are kept in its record (attribute
 * "galley.mode", octal); a file created without one has GFS_DEFAULT_MODE.
 * Owners: gfs_create_node below.  gfs_chmod sets them
 * (other processes' cached records of the name are recalled first);
 * gfs_create_striped_mode creates with them; gfs_striped_mode gives an
 * open file's with its type, as st_mode's (S_IFREG, S_IFLNK for a
 * symbolic link's own record: below, or a special file's: gfs_node),
 * from its name's record now, else the one it was opened with. */
#define GFS_DEFAULT_MODE 0644
#define GFS_MODE_ATTR "galley.mode"
int gfs_create_striped_mode(const char *name, int nsubfiles, const int *servers,
                            int64_t unit, const char *fork, unsigned mode);
int gfs_chmod(const char *name, unsigned mode);
int gfs_striped_mode(int sid, unsigned *mode);

/* Symbolic links: a name whose record holds a target (attribute
 * "galley.symlink", 1-1023 bytes, no newline), made at once with the
 * record (an empty striped file underneath); a longer target (up to
 * GFS_LINK_MAX, PATH_MAX less its NUL) is that file's bytes instead, the
 * record holding its length ("galley.symlink_len").  Galley never follows
 * one: the preload and the mount do.  gfs_readlink copies the target (not
 * NUL-terminated, at most len bytes) and returns its length; -EINVAL for
 * a name that is not a link.  gfs_symlink: -EEXIST, -ENAMETOOLONG, ... */
#define GFS_LINK_ATTR "galley.symlink"
#define GFS_LINK_MAX 4095
int gfs_symlink(const char *target, const char *name);
int gfs_readlink(const char *name, char *buf, size_t len);

/* Owners and special files, as a POSIX file system keeps them.  A name
 * made with gfs_create_node keeps its owner (attribute "galley.owner",
 * "UID:GID", either -1 when not known); one made without (the other
 * create calls: the C API, MPI-IO) has none, and the preload and the mount
 * show it as their caller's.  A special file (a FIFO, socket, character
 * or block device: mknod) is a name whose record holds its type and
 * device number (attribute "galley.node", "p", "s", "c:RDEV" or
 * "b:RDEV"; "d" for the marker that keeps a directory's mode and owner,
 * docs/posix.md), an empty striped file of one subfile underneath: Galley
 * never opens one (on a mount the kernel does: a FIFO there is a pipe
 * between the processes of one host).  gfs_chown sets the owner (-1
 * keeps that part; other processes' cached records of the name are
 * recalled first).  A name made with gfs_create_node also shows the time
 * it was made as its modification time until its data is first written
 * (GFS_MTIME_ATTR).  Change time: every record keeps the last time
 * gfs_chmod, gfs_chown, gfs_set_mtime or gfs_create_node changed it
 * (attribute "galley.ctime", ns), and a file's change time is the later
 * of that and its modification time (gfs_striped_info.ctime_ns). */
#define GFS_OWNER_ATTR "galley.owner"
#define GFS_NODE_ATTR "galley.node"
#define GFS_CTIME_ATTR "galley.ctime"
typedef struct gfs_node {
    unsigned mode;    /* type (0 or S_IFREG: a striped file; S_IFIFO,
                       * S_IFSOCK, S_IFCHR, S_IFBLK, S_IFDIR, S_IFLNK) and
                       * permission bits */
    int64_t uid, gid; /* -1: none kept */
    uint64_t rdev;    /* a device's number (S_IFCHR, S_IFBLK) */
    const char *link; /* S_IFLNK: the target (as gfs_symlink's) */
} gfs_node;
int gfs_create_node(const char *name, int nsubfiles, const int *servers,
                    int64_t unit, const char *fork, const gfs_node *node);
int gfs_chown(const char *name, int64_t uid, int64_t gid);
/* An open file's mode (as gfs_striped_mode's) and owner (when uid and gid
 * are not NULL) from one read of its record. */
int gfs_striped_mode_owner(int sid, unsigned *mode, int64_t *uid, int64_t *gid);

/* All stat shows of a striped file, by name, in one call (the round trips
 * of gfs_striped_stat).  mode: the type and permission bits as st_mode's,
 * S_IFREG, S_IFLNK for a symbolic link (size: its target's length), or a
 * special file's type (gfs_node). */
typedef struct gfs_striped_info {
    int64_t size;
    int64_t mtime_ns; /* as gfs_striped_stat_mtime's */
    unsigned mode;
    gfs_layout layout;
    int64_t uid, gid; /* the owner kept (gfs_node), -1: none */
    uint64_t rdev;    /* a device's number */
    int64_t ctime_ns; /* change time (gfs_node), 0: none kept, never
                       * written */
    int64_t atime_ns; /* access time set (gfs_set_times), 0: none */
} gfs_striped_info;
int gfs_striped_stat_all(const char *name, gfs_striped_info *st);
/* The same of an open file (fstat): its forks' sizes, and its name's
 * record now (else the one it was opened with). */
int gfs_striped_stat_open(int sid, gfs_striped_info *st);
/* What a name's record alone says, in one round trip (none while it is
 * leased): type, mode, owner, layout, the times kept in it; size 0 and
 * no data time asked (for names that hold no bytes: a directory's
 * marker). */
int gfs_stat_record(const char *name, gfs_striped_info *st);

/* Set the logical size: shrink or extend (with zeros) every subfile's fork. */
int gfs_striped_truncate(int sid, int64_t size);

/*
 * Read/write logical ranges.  gfs_striped_listio moves n (logical offset,
 * memory offset, size) pieces in one call: split into per-server fragments,
 * sorted and merged, one transfer per server (split only by the server's
 * buffer limit).  A single-range read (gfs_striped_read, or listio with
 * n == 1) returns the bytes before the logical end of file; a list of
 * several pieces returns the total, as gfs_listio does (bytes past the end
 * read as zeros).
 */
int64_t gfs_striped_read(int sid, int64_t offset, void *buf, int64_t size);
int64_t gfs_striped_write(int sid, int64_t offset, const void *buf,
                          int64_t size);
int64_t gfs_striped_listio(int sid, int op, int64_t n,
                           const gfs_list_entry *entries, void *buf);

/*
 * The same request as two independent lists, as an MPI driver holds it
 * after flattening a file view and a memory type: `nr` file ranges
 * (logical offsets) and `nseg` memory segments (addresses).  The bytes of
 * the ranges, in list order, move to or from the bytes of the segments, in
 * list order; a range may span several segments and a segment several
 * ranges, and both totals must be equal (else -EINVAL).  Nothing is copied
 * on the way but the per-server fragments.  A read of one range into one
 * segment (nr == nseg == 1) returns the bytes before the logical end of
 * file, as gfs_striped_read; any other request returns the total.
 */
typedef struct gfs_range {
    int64_t offset;
    int64_t size;
} gfs_range;

typedef struct gfs_memseg {
    void *addr;
    int64_t size;
} gfs_memseg;

int64_t gfs_striped_rangeio(int sid, int op, int64_t nr, const gfs_range *r,
                            int64_t nseg, const gfs_memseg *seg);
int gfs_nb_striped_rangeio(gfs_handle h, int sid, int op, int64_t nr,
                           const gfs_range *r, int64_t nseg,
                           const gfs_memseg *seg);

/* How many segments (extents and strided runs) the ranges of such a
 * request fold into in list order over the logical file, by the data
 * path's folding rule (the per-server split may break strides further).
 * The figure an MPI driver weighs aggregation by.  sid: an open striped
 * file.  >= 0 or a negative error. */
int64_t gfs_striped_segments(int sid, int64_t nr, const gfs_range *r);
int gfs_striped_sync(int sid);

/* The fork id of subfile i's fork of an open striped file. */
int gfs_striped_kid(int sid, int subfile);

/* 1 when the open striped file's data moves with checksums
 * (gfs_set_checksum before it was opened), 0 when not, or an error. */
int gfs_striped_checksum(int sid);

/*
 * Share an open striped file with other processes without asking the
 * metadata server again (an MPI driver opens on one rank and broadcasts):
 * gfs_striped_export writes a self-contained description into buf and
 * returns its length (or the length needed, -ERANGE, if len is too small);
 * gfs_striped_import opens the described file and returns a sid.
 */
#define GFS_EXPORT_MAX 32768 /* room for 256 subfiles of 3 copies */
int gfs_striped_export(int sid, void *buf, size_t len);
int gfs_striped_import(const void *buf, size_t len);

/*
 * Coordination services kept on the server of subfile 0:
 * a byte-range lock over logical offsets (blocks until granted; released
 * by unlock or when the process's connection drops; a dead server still
 * gives an error within the timeout), and an atomic counter per key
 * (shared file pointers).  len 0 means "to the end of the file".
 */
int gfs_striped_lock(int sid, int64_t offset, int64_t len, int exclusive);
int gfs_striped_unlock(int sid, int64_t offset, int64_t len);
/*
 * POSIX locks (fcntl, lockf and flock semantics) in the same lock service,
 * for libgalley-posix.so and galley mount.  A lock is held by this process
 * and an owner: owner 0 stands for the process itself (fcntl F_SETLK,
 * lockf: every sid of the file in this process shares those locks), other
 * values for whatever the caller chooses (an open file description: fcntl
 * F_OFD_SETLK, flock); two owners conflict like two processes.
 *
 * gfs_striped_plock sets owner's lock over [start, start + len) (len 0: to
 * the end) to type GFS_PLOCK_UNLOCK, _SHARED or _EXCL, replacing, trimming
 * or splitting the owner's locks there as fcntl does; unlocking what is
 * not locked succeeds.  flags: GFS_PLOCK_WAIT blocks until granted, else a
 * conflict returns -EAGAIN; GFS_PLOCK_WHOLE selects flock's locks, a space
 * apart from byte ranges (start 0, len 0).  pid is what
 * gfs_striped_plock_test reports to others (-1: none).  Locks are released
 * by unlock, gfs_striped_plock_release, or when this process's connection
 * to the file's first server drops (exit, kill).  -EINVAL for a negative
 * start or len or a bad type or flag.
 *
 * gfs_striped_plock_test: lk->owner, type (SHARED or EXCL), start and len
 * say what would be asked; on return lk describes the first lock of
 * another owner or process that conflicts (type, start, len: 0 = to the
 * end, pid) or lk->type is GFS_PLOCK_UNLOCK.  flags: GFS_PLOCK_WHOLE.
 *
 * gfs_striped_plock_release drops every lock of owner on the file (both
 * spaces): what closing a descriptor does.
 */
#define GFS_PLOCK_UNLOCK 0
#define GFS_PLOCK_SHARED 1
#define GFS_PLOCK_EXCL 2
#define GFS_PLOCK_WAIT 1
#define GFS_PLOCK_WHOLE 2
typedef struct gfs_plock {
    uint64_t owner;
    int type;
    int64_t start, len;
    int32_t pid;
} gfs_plock;
int gfs_striped_plock(int sid, const gfs_plock *lk, int flags);
int gfs_striped_plock_test(int sid, gfs_plock *lk, int flags);
int gfs_striped_plock_release(int sid, uint64_t owner);
/* Atomically add delta to counter `key` (created as 0); returns the old
 * value (>= 0) or a negative error.  A counter stays within 0 ..
 * INT64_MAX: an add that would leave it answers -ERANGE and changes
 * nothing. */
int64_t gfs_striped_fetch_add(int sid, const char *key, int64_t delta);
/* Atomically replace counter `key` by value (>= 0, else -ERANGE); returns
 * the old value (0 for a new key) or a negative error.  One request: a
 * reset that concurrent adds and sets cannot tear. */
int64_t gfs_striped_fetch_set(int sid, const char *key, int64_t value);

/* Pure layout arithmetic (no servers needed). */
/* Bytes of logical range [0, size) that subfile `subfile` holds. */
int64_t gfs_layout_fork_size(int nsub, int64_t unit, int subfile, int64_t size);
/* Logical size implied by subfile fork sizes fsizes[0..nsub-1]; -EINVAL
 * unless 1 <= nsub <= GFS_MAX_SUBFILES, unit >= 1 and every size >= 0. */
int64_t gfs_layout_logical_size(int nsub, int64_t unit, const int64_t *fsizes);
/* Where logical byte `offset` lives: returns its subfile (or -EINVAL for
 * nsub < 1, unit < 1, offset < 0); *fork_offset (if not NULL) is its
 * offset in that subfile's fork and *room (if not NULL) the bytes from it
 * to the end of its stripe unit, all in that fork. */
int gfs_layout_locate(int nsub, int64_t unit, int64_t offset,
                      int64_t *fork_offset, int64_t *room);

/* ------------------------------------------------------------------------
 * The locality layout ("local"; variable data distribution)
 *
 * A linear byte stream in blocks of `unit` bytes like a striped file, but
 * block g lives on the server of the host of the process that first
 * wrote it and stays there; each subfile keeps a block map (fork
 * FORK.map) saying which blocks its data fork holds.  Every gfs_striped_*
 * call works on such files; readers find any block through the maps.
 * See libgalley/local_layout.c.  A process's own server: one on its host,
 * chosen by node-local rank (GALLEY_LOCAL_RANK, MPI_LOCALRANKID,
 * OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID) when several are.
 * ------------------------------------------------------------------------ */

/* Create a file of layout `layout`: NULL or "striped" (gfs_create_striped),
 * "local", or "template:NAME": a local file whose blocks are placed where
 * the local file NAME has them (its servers and block size; nsubfiles,
 * servers and unit are then ignored).  Errors: those of
 * gfs_create_striped, -EINVAL (unknown layout), GFS_ELAYOUT (the template
 * is not a local file), -ENOENT (no template). */
int gfs_create_layout(const char *name, int nsubfiles, const int *servers,
                      int64_t unit, const char *fork, const char *layout);

/* The placement of an open local file. */
typedef struct gfs_local_stat {
    int nsubfiles;
    int64_t block_size;
    int64_t size;                     /* logical size */
    int me;                           /* subfile this process writes new
                                       * blocks to, -1: none on its host */
    int servers[GFS_MAX_SUBFILES];    /* server of each subfile */
    int64_t blocks[GFS_MAX_SUBFILES]; /* blocks placed in each subfile */
    int64_t total_blocks;
} gfs_local_stat;

/* Fill *st for striped id sid (reads every map; st NULL: only ask).
 * -EINVAL if the file is not a local file. */
int gfs_striped_local_stat(int sid, gfs_local_stat *st);

/* Data bytes a server has written and read for clients on its own host
 * and on other hosts, since it started (the server decides which is
 * which). */
typedef struct gfs_server_io {
    uint64_t written_local;
    uint64_t written_remote;
    uint64_t read_local;
    uint64_t read_remote;
} gfs_server_io;

int gfs_server_io_stats(int server, gfs_server_io *st);

/* ------------------------------------------------------------------------
 * Consistency check (galley fsck)
 * ------------------------------------------------------------------------ */

enum {
    GFS_FSCK_ORPHAN = 1,       /* a subfile header no record names (an rm
                                * interrupted by a dead server)          */
    GFS_FSCK_DANGLING = 2,     /* a record names a header its server lacks */
    GFS_FSCK_MISMATCH = 3,     /* the header names another file or index */
    GFS_FSCK_UNREACHABLE = 4,  /* a server did not answer (status)       */
    GFS_FSCK_REPAIRED = 5,     /* an orphan was removed (not a problem)  */
    GFS_FSCK_NOT_REPAIRED = 6, /* removing an orphan failed (status)     */
    GFS_FSCK_DEGRADED = 7,     /* a replicated file's subfile has fewer
                                * copies in sync than asked (server, hid:
                                * a stale copy; `galley resync`)         */
};

typedef struct gfs_fsck_item {
    int kind; /* GFS_FSCK_* */
    int server;
    uint64_t hid;                /* the subfile header id on that server */
    char name[GFS_NAME_MAX + 1]; /* the file it belongs (or belonged) to */
    uint32_t subfile;
    int status; /* UNREACHABLE, NOT_REPAIRED: the error */
} gfs_fsck_item;

typedef void (*gfs_fsck_fn)(const gfs_fsck_item *item, void *arg);

/*
 * Compare every server's file records with every server's subfile
 * headers; call fn for each finding.  repair != 0 removes orphans (never
 * while some server does not answer; a file being created is never taken
 * for one).  Returns the number of problems found (repaired orphans
 * included, GFS_FSCK_REPAIRED items not counted), or a negative error.
 */
int gfs_fsck(int repair, gfs_fsck_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* GALLEY_H */
