/*
 * datapath.h -- private to libgalley, included by internal.h: the data
 * path's types and calls -- a transfer to one fork (gc_xfer), an op over
 * many (gc_op), the pieces of a call (gc_pieces) -- and the striped op
 * that makes them from a striped call.
 */
#ifndef GALLEY_DATAPATH_H
#define GALLEY_DATAPATH_H

/* --------------------------------------------------------------- io.c -- */

/* A piece of a transfer is a gp_ext (extent.h): len bytes at fork offset
 * off <-> mem. */

/* A transfer to one fork (one server). */
typedef struct gc_xfer {
    int server;
    uint64_t fkid;
    bool csum;   /* gc_fork.csum: IO_CWRITE / IO_CREAD, CRCs checked */
    int rkid;    /* a replicated fork: its id + 1 (repl.c), else 0 */
    uint8_t way; /* enum gc_way: how it moves (route.h) */
    int sub;     /* striped ops: the subfile it belongs to */
    const gp_ext *pieces;
    size_t n; /* pieces move in this order; file-adjacent neighbours
               * are merged into one wire extent */
    /* What the op that cut the pieces learnt of them on the way, so the
     * transports need not pass over them again (shaped false: not known;
     * gc_xfer_of).  ordered: sorted by offset and disjoint; bytes in all,
     * over [lo, hi); every piece non-empty. */
    bool shaped, ordered;
    uint64_t bytes, lo, hi;
    /* the only transfer of a striped open's small first op (striped_io.c
     * small_first): through its server (route.c) */
    bool once;
    /* results */
    int status;
    uint64_t fork_size;
} gc_xfer;

/*
 * The one data path.  Moves every transfer (concurrently across servers,
 * pipelined within one), splitting by each server's data limit.  Returns 0
 * or the first error; each xfer's status and fork_size are filled in.
 */
int gc_transfer(int op, gc_xfer *x, size_t nx);
/* The same for transfers to exactly the (server, fkid) they name
 * (gc_transfer hands replicated forks to gc_repl_transfer, which fans
 * them out to their copies through this). */
int gc_transfer_plain(int op, gc_xfer *x, size_t nx);
/* The transfer of pieces to fork k (id kid), its way from route.c. */
gc_xfer gc_xfer_of(const gc_fork *k, int kid, const gp_ext *pieces, size_t n);

/*
 * A prepared data operation: the transfers it needs (pieces owned by the
 * op) and how to turn their outcome into the caller's result.  Blocking
 * calls prepare and run at once; non-blocking ones prepare in the caller
 * and run in a worker (nb.c).
 */
typedef struct gc_op gc_op;
struct gc_op {
    int op; /* GFS_READ or GFS_WRITE */
    gc_xfer *x;
    size_t nx;
    gp_ext *store; /* every piece of every xfer */
    int64_t total; /* bytes asked for */
    int64_t off;   /* single-range reads: the range, for EOF */
    int sid;       /* striped ops: the striped file */
    int ns;        /* striped single-range reads: subfiles and stripe */
    int64_t unit;  /* unit of the file (for EOF without asking again) */
    bool one;      /* x and store live in o's own allocation */
    /* The result of a successful op, computed by the layer that made it
     * (single-range reads answer the bytes before the end of the fork or
     * file: io.c, striped.c), so io.c never calls up into it; NULL: the
     * bytes asked for */
    int64_t (*finish)(gc_op *o);
    /* What the layer that made the op started with it and finishes after
     * its transfers (striped.c: a fork opened ahead), called with their
     * result -- or by gc_op_free, with -ECANCELED, if the op never ran --
     * and returning the op's; NULL: nothing. */
    int (*after)(gc_op *o, int rc);
    void *after_arg;
};

/* An op with room for nx transfers and nstore pieces, in one allocation
 * (zeroed but for the pieces); NULL when out of memory. */
gc_op *gc_op_alloc(size_t nx, size_t nstore);
/* Run a prepared op and free it; returns bytes or a negative error. */
int64_t gc_op_run(gc_op *o);
void gc_op_free(gc_op *o);

/* Prepare I/O of n pieces (taking ownership of `pieces`) on fork kid. */
int gc_op_fork(gc_op **out, int kid, int op, gp_ext *pieces, size_t n,
               int64_t total);
/* Prepare plain / list I/O on a fork (io.c). */
int gc_prep_rw(gc_op **o, int kid, int op, int64_t offset, void *buf,
               int64_t size);
int gc_prep_listio(gc_op **o, int kid, int op, int64_t n,
                   const gfs_list_entry *entries, void *buf);
/* Prepare structured requests (structured.c). */
int gc_prep_batch(gc_op **o, int kid, int op, int64_t n,
                  const gfs_batch_entry *e, void *buf);
int gc_prep_nested(gc_op **o, int kid, int op, int64_t offset, void *buf,
                   int64_t size, int nlevels, const gfs_stride *levels);
int gc_prep_strided(gc_op **o, int kid, int op, int64_t offset, void *buf,
                    int64_t size, int64_t count, int64_t fstride,
                    int64_t mstride);
/* Hand a prepared op to the non-blocking workers under handle h (nb.c). */
int gc_nb_start(gfs_handle h, int rc, gc_op *o);
/* The handles' entry points below gfs_new_handle, gfs_wait, gfs_test. */
gfs_handle gc_nb_new(void);
int64_t gc_nb_wait(gfs_handle h);
int gc_nb_test(gfs_handle h, int64_t *result);
/* Stop the workers (gfs_finalize). */
void gc_nb_shutdown(void);
/* In a child after fork(): no workers (they are the parent's threads);
 * the parent's requests still in flight fail with GFS_ESERVERDOWN. */
void gc_nb_after_fork(void);
/* A request's pieces from either public form, read in list order
 * (pieces.c): paired entries relative to buf, or two independent lists of
 * file ranges and memory segments.  A cursor: copy it to read again. */
typedef struct gc_pieces {
    int64_t nr;              /* entries, or file ranges */
    const gfs_list_entry *e; /* the paired form, or NULL */
    char *buf;               /* its memory base */
    const gfs_range *r;      /* the two-list form */
    int64_t nseg;
    const gfs_memseg *seg;
    bool count_only; /* ranges without memory: never moved */
    int64_t i, j;    /* cursor: range (entry) i, segment j */
    uint64_t ri, mj; /* bytes of each already yielded */
} gc_pieces;
gc_pieces gc_pieces_paired(int64_t n, const gfs_list_entry *e, void *buf);
gc_pieces gc_pieces_lists(int64_t nr, const gfs_range *r, int64_t nseg,
                          const gfs_memseg *seg);
/* Ranges without memory: only where the pieces are counted, never moved
 * (gfs_striped_segments). */
gc_pieces gc_pieces_ranges(int64_t nr, const gfs_range *r);
/* Every range valid, memory for every byte (the two lists' totals equal);
 * *total the bytes.  0 or -EINVAL. */
int gc_pieces_check(const gc_pieces *p, int64_t *total);
/* May a request name the file range [off, off + size)? */
static inline bool gc_range_ok(int64_t off, int64_t size)
{
    return off >= 0 && size >= 0 && (uint64_t)off <= GP_MAX_OFFSET &&
           (uint64_t)size <= GP_MAX_OFFSET - (uint64_t)off;
}
/* The next run contiguous in file and memory (never empty); false at the
 * end.  Only after gc_pieces_check. */
__attribute__((always_inline)) static inline bool
gc_pieces_next(gc_pieces *p, uint64_t *off, char **mem, uint64_t *len)
{
    if (p->e) {
        while (p->i < p->nr && p->e[p->i].size == 0)
            p->i++;
        if (p->i == p->nr)
            return false;
        const gfs_list_entry *e = &p->e[p->i++];
        *off = (uint64_t)e->file_offset;
        *mem = p->buf + e->mem_offset;
        *len = (uint64_t)e->size;
        return true;
    }
    while (p->i < p->nr && (uint64_t)p->r[p->i].size == p->ri) {
        p->i++;
        p->ri = 0;
    }
    if (p->count_only) { /* ranges only: no memory */
        if (p->i == p->nr)
            return false;
        *off = (uint64_t)p->r[p->i].offset;
        *mem = NULL;
        *len = (uint64_t)p->r[p->i++].size;
        return true;
    }
    while (p->j < p->nseg && (uint64_t)p->seg[p->j].size == p->mj) {
        p->j++;
        p->mj = 0;
    }
    if (p->i == p->nr || p->j == p->nseg)
        return false;
    uint64_t rl = (uint64_t)p->r[p->i].size - p->ri;
    uint64_t ml = (uint64_t)p->seg[p->j].size - p->mj;
    *off = (uint64_t)p->r[p->i].offset + p->ri;
    *mem = (char *)p->seg[p->j].addr + p->mj;
    *len = rl < ml ? rl : ml;
    p->ri += *len;
    p->mj += *len;
    return true;
}
/* One range into one piece of memory (a single-range request, whose read
 * answers the bytes before the end). */
bool gc_pieces_single(const gc_pieces *p);
/* The first range's offset (0 for none). */
uint64_t gc_pieces_first(const gc_pieces *p);

/* Prepare list I/O on a striped file. */
int gc_op_striped(gc_op **out, int sid, int op, const gc_pieces *p);
/* Forget every striped id (gfs_finalize; their forks close after). */
void gc_striped_shutdown(void);

#endif /* GALLEY_DATAPATH_H */
