/*
 * gsrv_internal.h -- private to galleyd (servers/).  Nothing here is part of
 * any contract with the client; the wire protocol is proto/gproto.h.
 *
 * One I/O node (the paper's IOP) is made of these units, one file each
 * (the lower ones never depend on the higher ones' globals: every unit
 * may depend on gsrv_globals.c, none on galleyd.c):
 *
 *   gsrv_globals.c  the globals every unit reads (gsrv_g), logging, the
 *                 registry of live connections.
 *   galleyd.c     main thread: arguments, data directory, listening sockets
 *                 (TCP and the same-host Unix socket), accept loop, one
 *                 handler thread per client, clean exit.
 *   handler.c     handler threads (the paper's CP threads): frames in
 *                 (also a large write's while it is handled, gsrv_rx_*),
 *                 dispatch through a table built from GP_OPCODES, replies
 *                 out with writev.  PING, STATFS and CMA_PROBE live here.
 *   stubs.c       the op of every message, made from gmsg.h: decode the
 *                 request, call the message's body (gsrv_do_NAME, in the
 *                 unit that owns it), encode the reply (gsrv_stubs.h).
 *   nameserver.c  the NameServer: the table of names, its records in the
 *                 metadata table, start-up load (ns_internal.h).
 *   ns_ops.c      the NS_* handlers but the lease ones.
 *   ns_lease.c    record leases: NS_LEASE / NS_RENEW / NS_LET_GO.
 *   subfile.c     the subfile table: subfiles and their fork tables in
 *                 memory, fork reference counts, the listing for fsck.
 *   subfile_disk.c  subfile headers on disk, removal, start-up recovery.
 *   subfile_ops.c   SUB_* and FORK_* handlers (all but the data path).
 *   counters.c    FETCH_ADD / FETCH_SET: a subfile's named counters.
 *   io.c          the data path's requests (io_internal.h): decode,
 *                 expand, sort, coalesce, windows of cache blocks.
 *   io_read.c     IO_READ / IO_READV / IO_CREAD.
 *   io_write.c    IO_WRITE / IO_WRITEV / IO_CWRITE: picks one strategy:
 *   write_cache.c   through the cache blocks, window by window (from the
 *                   payload, the client's memory, or the socket);
 *   write_splice.c  from the socket to the file by splice;
 *   write_bypass.c  straight to the file while direct writers hold it.
 *   cma.c         cross-memory attach: copies to and from a same-host
 *                 client's memory (process_vm_readv/writev).
 *   direct.c      DIRECT_OPEN / DIRECT_WOPEN / DIRECT_CLOSE: a same-host
 *                 client of our uid gets a fork's file descriptor and moves
 *                 data itself; the coherence rule the cache and the data
 *                 path keep meanwhile, and locked mode (writers take OFD
 *                 locks).
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
 *   auth.c, repl.c, iostats.c: the cluster secret, the data directory's
 *                 id, data counters by where the client is.
 *
 * This header holds the constants and globals; it includes the rest of
 * the shared declarations by subject: gsrv_conn.h (connections, framing,
 * replies, cross-memory attach), gsrv_stubs.h (the op table and the
 * messages' bodies), gsrv_meta.h (metadata
 * files, table, log, NameServer) and gsrv_data.h (forks, disk, checksums,
 * cache, locks, direct access).
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
 *         conns.lock (gsrv_globals.c).
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
 * Global server state (gsrv_globals.c; galleyd.c's main fills it in)
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
    bool commit_sync;      /* --commit synced: replies wait for fdatasync */
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

/* The rest, by subject (each also private to servers/). */
#include "gsrv_conn.h"
#include "gsrv_stubs.h"
#include "gsrv_meta.h"
#include "gsrv_data.h"

#endif /* GSRV_INTERNAL_H */
