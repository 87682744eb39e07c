/*
 * gsrv_data.h -- private to galleyd (servers/): the data side:
 * subfiles and forks (subfile*.c), the DiskManager (disk.c), checksums
 * (csum.c), the CacheManager (cache.c), byte-range locks (rangelock.c),
 * counters by client place (iostats.c), direct access (direct.c).
 * Included by gsrv_internal.h (after its constants and globals), never
 * on its own.
 */
#ifndef GSRV_DATA_H
#define GSRV_DATA_H

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
 * locks (fdio.h: g_fd_write_locked).  Read under f->rw. */
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
/* The modification time of the fork's data file (ns since the epoch; the
 * kernel's, so direct writers' writes count), 0 while it has none
 * (subfile.c; subtab.lock or a reference held). */
uint64_t gsrv_fork_mtime(uint64_t hid, const gsrv_fork *f);
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
 * (gp_ext.mem; writes sorted and disjoint, reads sorted) to or from its
 * file, chunk-locked and checked as they do (common/csfile.h), rw held
 * exclusively.  0, GFS_ECHECKSUM (logged) or -errno. */
struct gp_ext;
int gsrv_csum_bypass_write(gsrv_fork *f, const struct gp_ext *e, size_t n);
int gsrv_csum_bypass_read(gsrv_fork *f, const struct gp_ext *e, size_t n);

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
 * cache: the caller writes those bytes to the file without it (write_splice.c),
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

#endif /* GSRV_DATA_H */
