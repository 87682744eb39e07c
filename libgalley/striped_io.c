/*
 * striped_io.c -- a striped file's I/O: a request split into
 * fragments per subfile, each subfile's fragments sorted by fork offset
 * (adjacent ones merge into one wire extent in io.c), one transfer per
 * server straight from/to user memory; and single-range reads that skip
 * the op where this process holds the forks (fast reads).
 *
 * Threads: any; gc_st_lock only around table access (striped_internal.h).
 */
#include "striped_internal.h"
#include "route.h"

#include "gclock.h"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------ fragmenting ---- */

static int64_t striped_read_result(gc_op *o);
static int64_t local_read_result(gc_op *o);
static int striped_op(gc_striped *s, int sid, gc_op **out, int op,
                      const gc_pieces *pc);

int gc_op_striped(gc_op **out, int sid, int op, const gc_pieces *p)
{
    gc_striped s;
    int rc = gc_st_get(sid, &s);
    if (rc)
        return rc;
    rc = s.loc ? gc_local_op(s.loc, sid, out, op, p, s.kids)
               : striped_op(&s, sid, out, op, p);
    if (!rc && op == GFS_READ && gc_pieces_single(p)) {
        /* a single-range read answers the bytes before the end of file */
        (*out)->finish = s.loc ? local_read_result : striped_read_result;
        (*out)->off = (int64_t)gc_pieces_first(p);
        (*out)->ns = s.lay.nsubfiles;
        (*out)->unit = s.lay.unit;
    }
    return rc;
}

/* The first pass over checked pieces: how many fragments each subfile
 * gets, and (segs != NULL) how many wire segments they fold into in list
 * order (gp_folder, as io.c sends them). */
static void split_count(const gfs_layout *lay, const gc_pieces *pc, size_t *cnt,
                        int64_t *segs)
{
    unsigned ns = (unsigned)lay->nsubfiles; /* 1..GFS_MAX_SUBFILES */
    uint64_t unit = (uint64_t)lay->unit;
    gp_folder fold[GFS_MAX_SUBFILES];
    memset(cnt, 0, ns * sizeof(cnt[0]));
    for (unsigned i = 0; i < ns && segs; i++)
        gp_folder_init(&fold[i], NULL, 0);
    gc_pieces cur = *pc;
    gp_cursor gc = gp_cursor_init(unit, ns);
    uint64_t x, left;
    char *mem;
    while (gc_pieces_next(&cur, &x, &mem, &left)) {
        while (left > 0) {
            uint64_t foff, len;
            unsigned sub = gp_cursor_locate(&gc, x, &foff, &len);
            if (len > left)
                len = left;
            if (segs)
                gp_folder_add(&fold[sub], foff, len);
            cnt[sub]++;
            x += len;
            left -= len;
        }
    }
    for (unsigned i = 0; i < ns && segs; i++)
        *segs += (int64_t)gp_folder_end(&fold[i]);
}

/*
 * The first read (or write) of a striped open that touches only some of
 * its subfiles (a 4 KiB call touches one; but an open's small first op,
 * small_first, readies nothing else): its transport gets ready for
 * every subfile's fork at once (gc_conn_prepare; the direct transport asks
 * each server for the fork's descriptor in one round trip, where the
 * calls that reach the other subfiles later would each wait for one).
 * The forks not touched are offered with the pieces of the first touched
 * one (their size decides what is asked for: a writable or a locked-mode
 * descriptor), so a process that writes any subfile of a file holds a
 * writable descriptor of every one, as it would after one large call.
 * Once per open and op (striped_op opened every fork for that first
 * call); nothing for forks whose transport has no prepare.
 */
static void striped_ask_all(const gc_striped *s, int sid, int op,
                            const gc_op *o)
{
    unsigned ns = (unsigned)s->lay.nsubfiles, bit = 1u << op;
    if (ns < 2 || ns > GC_PREPARE_MAX || o->nx == 0 || o->nx >= ns ||
        (s->asked & bit))
        return;
    pthread_mutex_lock(&gc_st_lock);
    gc_striped *t = gc_idtab_at(&gc_st_tab, sid);
    bool first = t && !(t->asked & bit);
    if (first)
        t->asked |= bit;
    pthread_mutex_unlock(&gc_st_lock);
    if (!first)
        return;
    gc_xfer all[GC_PREPARE_MAX];
    size_t n = 0;
    for (unsigned i = 0; i < ns; i++) {
        gc_fork k;
        if (gc_fork_get(s->kids[i], &k) == 0)
            all[n++] = gc_xfer_of(&k, s->kids[i], o->x[0].pieces, o->x[0].n);
    }
    gc_conn_prepare(op, all, n);
}

/* The first op of an open that stays within one stripe unit of one
 * subfile (a small file's read or write, a record): it opens only that
 * fork and readies no other, so a small file's open, I/O and close ask
 * one server.  Any later op opens and readies every fork at once, as a
 * larger first op does. */
static bool small_first(const gc_striped *s, const size_t *cnt, unsigned ns,
                        int64_t total)
{
    unsigned touched = 0;
    for (unsigned i = 0; i < ns; i++) {
        if (s->kids[i] >= 0)
            return false; /* not the first */
        touched += cnt[i] > 0;
    }
    return touched == 1 && total <= s->lay.unit;
}

/* The striped layout's op: each subfile's pieces, one transfer per
 * server.  Two passes over the pieces: count each subfile's fragments,
 * then place them straight where the op keeps them (one allocation for
 * all, however many subfiles). */
static int striped_op(gc_striped *s, int sid, gc_op **out, int op,
                      const gc_pieces *pc)
{
    int64_t total;
    if ((op != GFS_READ && op != GFS_WRITE) || gc_pieces_check(pc, &total))
        return -EINVAL;
    unsigned ns = (unsigned)s->lay.nsubfiles; /* 1..GFS_MAX_SUBFILES */
    uint64_t unit = (uint64_t)s->lay.unit;
    size_t cnt[GFS_MAX_SUBFILES], at[GFS_MAX_SUBFILES];
    split_count(&s->lay, pc, cnt, NULL);
    /* arrays of GFS_MAX_SUBFILES, used (so set) for [0, ns) only: a 4 KiB
     * call must not clear kilobytes of stack */
    bool want[GFS_MAX_SUBFILES], failed[GFS_MAX_SUBFILES];
    for (unsigned i = 0; i < ns; i++) {
        want[i] = cnt[i] > 0;
        failed[i] = false;
    }
    /* the forks it touches, opened; the first call of an op (but a small
     * first op) tries to open every one at once (striped_ask_all then
     * readies them all), but a subfile it does not touch (its server
     * down) fails it no more than it would have failed a call that opened
     * only what it touches.  A small first op's one fork is opened ahead
     * of its transfer (striped.c): one round trip for both. */
    int rc = -1;
    bool small = small_first(s, cnt, ns, total);
    gc_ahead *ahead = NULL;
    gc_fork ak;
    unsigned asub = 0;
    if (small) {
        while (cnt[asub] == 0)
            asub++;
        rc = gc_st_ahead(sid, s, (int)asub, &ak, &ahead);
        if (rc && rc != GC_DECLINE)
            return rc;
    } else if (!(s->asked & (1u << op)))
        rc = gc_st_forks(sid, s, NULL, failed);
    bool touched_failed = false; /* then that is the call's error: asking
                                  * again would wait out its server's
                                  * timeout a second time */
    for (unsigned i = 0; rc && i < ns; i++)
        touched_failed = touched_failed || (failed[i] && want[i]);
    if (rc && !touched_failed)
        rc = gc_st_forks(sid, s, want, NULL);
    if (rc)
        return rc;
    gc_pieces cur;
    uint64_t x, left;
    char *mem;
    size_t nfrag = 0;
    for (unsigned i = 0; i < ns; i++) {
        at[i] = nfrag;
        nfrag += cnt[i];
    }
    gc_op *o = gc_op_alloc(ns, nfrag);
    if (ahead) /* its answer is read after the transfer, or if none runs */
        gc_st_ahead_attach(o, ahead);
    if (!o)
        return -ENOMEM;
    /* each subfile's bytes, range and order, learnt while placing its
     * pieces (gc_xfer: shaped) */
    uint64_t bytes[GFS_MAX_SUBFILES], lo[GFS_MAX_SUBFILES],
        hi[GFS_MAX_SUBFILES];
    bool ordered[GFS_MAX_SUBFILES];
    for (unsigned i = 0; i < ns; i++) {
        bytes[i] = hi[i] = 0;
        lo[i] = UINT64_MAX;
        ordered[i] = true;
    }
    cur = *pc;
    gp_cursor gc = gp_cursor_init(unit, ns);
    while (gc_pieces_next(&cur, &x, &mem, &left)) {
        while (left > 0) {
            uint64_t foff, len;
            unsigned sub = gp_cursor_locate(&gc, x, &foff, &len);
            if (len > left)
                len = left;
            o->store[at[sub]++] = (gp_ext){.off = foff, .len = len, .mem = mem};
            bytes[sub] += len;
            if (foff < hi[sub])
                ordered[sub] = false; /* before the end of one placed */
            else
                hi[sub] = foff + len;
            if (foff < lo[sub])
                lo[sub] = foff;
            x += len;
            mem += len;
            left -= len;
        }
    }
    gp_ext *p = o->store;
    for (unsigned i = 0; i < ns && !rc; i++) {
        if (cnt[i] == 0)
            continue;
        if (!ordered[i]) {
            gp_order(p, cnt[i], op == GFS_WRITE);
            hi[i] = 0;
            for (size_t k = 0; k < cnt[i]; k++)
                if (gp_end(&p[k]) > hi[i])
                    hi[i] = gp_end(&p[k]);
        }
        gc_fork k;
        if (ahead && i == asub)
            k = ak;
        else
            rc = gc_fork_get(s->kids[i], &k);
        if (rc)
            break;
        gc_xfer *t = &o->x[o->nx++];
        *t = gc_xfer_of(&k, s->kids[i], p, cnt[i]);
        t->sub = (int)i;
        t->once = small;
        t->shaped = true;
        t->ordered = ordered[i] || gp_disjoint(p, cnt[i]); /* as gp_order left
                                                            * them */
        t->bytes = bytes[i];
        t->lo = lo[i];
        t->hi = hi[i];
        p += cnt[i];
    }
    if (rc) {
        gc_op_free(o);
        return rc;
    }
    if (!small)
        striped_ask_all(s, sid, op, o);
    o->op = op;
    o->total = total;
    o->sid = sid;
    *out = o;
    return 0;
}

/* A single-range read reports the bytes before the logical end of file.
 * The forks it touched told us their sizes; the others are asked only if
 * those do not already show the range is inside the file. */
static int64_t striped_read_result(gc_op *o)
{
    gfs_layout lay = {.nsubfiles = o->ns, .unit = o->unit};
    int64_t sizes[GFS_MAX_SUBFILES];
    memset(sizes, 0, sizeof(sizes[0]) * (size_t)o->ns);
    for (size_t j = 0; j < o->nx; j++)
        sizes[o->x[j].sub] = (int64_t)o->x[j].fork_size;
    int64_t end = o->off + o->total;
    int64_t lower = gc_st_logical_size(&lay, sizes);
    if (lower < end) {
        gc_striped s;
        int rc = gc_st_get(o->sid, &s);
        if (!rc)
            rc = gc_st_fork_sizes(o->sid, &s, sizes, NULL);
        if (rc)
            return rc;
        lower = gc_st_logical_size(&s.lay, sizes);
    }
    if (lower <= o->off)
        return 0;
    return lower < end ? lower - o->off : o->total;
}

/* The same for a file of the locality layout (local_io.c). */
static int64_t local_read_result(gc_op *o)
{
    gc_striped s;
    int rc = gc_st_get(o->sid, &s);
    return rc ? rc : gc_local_read_result(s.loc, o);
}

/* ------------------------------------------------------- fast reads -- */
/*
 * A read of one range into one buffer -- the MPI-IO driver's contiguous
 * calls, ROMIO's sieve windows, `galley exec`'s read() -- skips the op
 * when this process holds every fork it touches directly: the range is
 * cut at stripe units, and each subfile's pieces, end to end in its
 * fork, are one preadv on the fork's file (transport_direct.c: readers, which
 * says why that is as correct as an op's direct read).  Anything else -- a
 * piece not held, a short read (the end of a fork: the op path works out the
 * file's end), a grant forgotten -- declines, and the op path reads the whole
 * range.  The op around a small pread (pieces placed per subfile, a transfer,
 * its grant pinned and released under a lock, the result worked out from the
 * fork sizes) costs about as much as the pread itself; a fast read is the
 * preads and nothing else that takes a lock.
 *
 * The reader is built after a single-range read took the op path (so its
 * grants exist: the op asked for them), at most once per
 * GC_FAST_REBUILD_NS while it lacks a fork or after grants were
 * forgotten, and freed at close.
 */
#define GC_FAST_REBUILD_NS 10000000ull
/* A range in more than GC_FAST_UNITS pieces takes the op (route.h),
 * whose direct read is one preadv per subfile: past a few stripe units the
 * op's fixed cost is small beside the bytes moved, and one preadv per
 * subfile makes fewer system calls than a pread per unit.  A file of one
 * subfile is one piece. */

static int fast_read(int sid, int64_t off, void *buf, int64_t len)
{
    if (!gc_route_fast_on() || len <= 0 || !gc_range_ok(off, len))
        return GC_DECLINE;
    pthread_mutex_lock(&gc_st_lock);
    gc_striped *t = gc_idtab_at(&gc_st_tab, sid);
    gc_reader *r = t ? t->rd : NULL;
    gfs_layout lay = {0};
    if (r) {
        r->ops->reader_pin(r); /* freed only after the table lets go */
        lay = t->lay;
    }
    pthread_mutex_unlock(&gc_st_lock);
    if (!r)
        return GC_DECLINE;
    /* pieces cut at stripe units, where consecutive units of one subfile
     * that are consecutive in its fork (a file of one subfile) are one
     * piece: a 1 MiB call on such a file is one system call, not 16 */
    unsigned subs[GC_FAST_UNITS];
    uint64_t foffs[GC_FAST_UNITS], lens[GC_FAST_UNITS];
    char *mems[GC_FAST_UNITS];
    bool done[GC_FAST_UNITS];
    size_t np = 0;
    char *mem = buf; /* the pieces lie end to end in buf, in range order */
    int rc = 0;
    gp_cursor gc = gp_cursor_init((uint64_t)lay.unit, (unsigned)lay.nsubfiles);
    uint64_t x = (uint64_t)off, left = (uint64_t)len;
    while (left && !rc) {
        uint64_t foff, n;
        unsigned sub = gp_cursor_locate(&gc, x, &foff, &n);
        if (n > left)
            n = left;
        if (np && subs[np - 1] == sub && foffs[np - 1] + lens[np - 1] == foff)
            lens[np - 1] += n;
        else if (np == GC_FAST_UNITS)
            rc = GC_DECLINE;
        else {
            subs[np] = sub;
            foffs[np] = foff;
            mems[np] = mem;
            done[np] = false;
            lens[np++] = n;
        }
        x += n;
        mem += n;
        left -= n;
    }
    /* each subfile's pieces at consecutive fork offsets, one preadv: a
     * 1 MiB call on 4 subfiles of 64 KiB units reads each fork's 256 KiB
     * once (4 system calls, not 16) */
    for (size_t i = 0; i < np && !rc; i++) {
        if (done[i])
            continue;
        struct iovec v[GC_FAST_UNITS];
        int nv = 0;
        uint64_t end = foffs[i];
        for (size_t j = i; j < np; j++)
            if (!done[j] && subs[j] == subs[i] && foffs[j] == end) {
                v[nv++] = (struct iovec){mems[j], (size_t)lens[j]};
                end += lens[j];
                done[j] = true;
            }
        rc = r->ops->reader_read(r, subs[i], foffs[i], v, nv);
    }
    for (size_t i = 0; i < np && !rc; i++) /* all read: counted */
        r->ops->reader_count(r, subs[i], lens[i]);
    r->ops->reader_unpin(r);
    return rc;
}

/* After a single-range read took the op path: the file's reader built
 * (again) if it has none, lacks a fork or is out of date, and it may. */
static void fast_build(int sid)
{
    gc_striped s;
    if (!gc_route_fast_on() || gc_st_get(sid, &s) || s.loc)
        return;
    pthread_mutex_lock(&gc_st_lock); /* rd is freed only after the table
                                      * lets go of it */
    gc_striped *t = gc_idtab_at(&gc_st_tab, sid);
    bool whole = t && t->rd && t->rd->ops->reader_whole(t->rd);
    pthread_mutex_unlock(&gc_st_lock);
    uint64_t now = g_now_ns();
    if (whole)
        return;
    if (s.rd_ns && now - s.rd_ns < GC_FAST_REBUILD_NS)
        return;
    unsigned ns = (unsigned)s.lay.nsubfiles;
    int servers[GFS_MAX_SUBFILES];
    uint64_t fkids[GFS_MAX_SUBFILES];
    for (unsigned i = 0; i < ns; i++) {
        gc_fork k;
        bool ok = s.kids[i] >= 0 && gc_fork_get(s.kids[i], &k) == 0 &&
                  gc_route_fast(&k);
        servers[i] = ok ? k.server : -1;
        fkids[i] = ok ? k.fkid : 0;
    }
    gc_reader *r = gc_reader_open(servers, fkids, ns), *old = r;
    pthread_mutex_lock(&gc_st_lock);
    t = gc_idtab_at(&gc_st_tab, sid);
    if (t && t->rd == s.rd && t->rd_ns == s.rd_ns) { /* nobody raced us */
        old = t->rd;
        t->rd = r;
        t->rd_ns = now;
    }
    pthread_mutex_unlock(&gc_st_lock);
    gc_reader_free(old);
}

/* One range into one buffer: fast_read, or the op (and then the reader
 * built for the next). */
static int64_t striped_read1(int sid, int64_t off, void *buf, int64_t len)
{
    if (fast_read(sid, off, buf, len) == 0)
        return len;
    gc_op *o;
    gfs_list_entry e = {off, 0, len};
    gc_pieces p = gc_pieces_paired(1, &e, buf);
    int rc = gc_op_striped(&o, sid, GFS_READ, &p);
    int64_t got = rc ? rc : gc_op_run(o);
    if (got >= 0)
        fast_build(sid);
    return got;
}

int64_t gc_striped_listio(int sid, int op, int64_t n,
                          const gfs_list_entry *entries, void *buf)
{
    if (op == GFS_READ && n == 1 && entries && entries[0].mem_offset >= 0 &&
        buf)
        return striped_read1(sid, entries[0].file_offset,
                             (char *)buf + entries[0].mem_offset,
                             entries[0].size);
    gc_op *o;
    gc_pieces p = gc_pieces_paired(n, entries, buf);
    int rc = gc_op_striped(&o, sid, op, &p);
    return rc ? rc : gc_op_run(o);
}

int64_t gfs_striped_listio(int sid, int op, int64_t n,
                           const gfs_list_entry *entries, void *buf)
{
    return gc_striped_listio(sid, op, n, entries, buf);
}

int64_t gfs_striped_rangeio(int sid, int op, int64_t nr, const gfs_range *r,
                            int64_t nseg, const gfs_memseg *seg)
{
    if (op == GFS_READ && nr == 1 && nseg == 1 && r && seg &&
        r[0].size == seg[0].size && seg[0].addr)
        return striped_read1(sid, r[0].offset, seg[0].addr, r[0].size);
    gc_op *o;
    gc_pieces p = gc_pieces_lists(nr, r, nseg, seg);
    int rc = gc_op_striped(&o, sid, op, &p);
    return rc ? rc : gc_op_run(o);
}

int64_t gfs_striped_segments(int sid, int64_t nr, const gfs_range *r)
{
    gc_striped s;
    int rc = gc_st_get(sid, &s);
    if (rc)
        return rc;
    gc_pieces p = gc_pieces_ranges(nr, r);
    int64_t total, segs = 0;
    rc = gc_pieces_check(&p, &total);
    if (rc)
        return rc;
    /* in logical order, as one subfile: the figure the drivers' choice of
     * aggregation is made on (per server, a stride that crosses stripe
     * units breaks at every unit, which would make 200-byte strided
     * records look fragmented enough to aggregate, the slower path for
     * them) */
    gfs_layout one = {.nsubfiles = 1, .unit = INT64_MAX};
    size_t cnt[GFS_MAX_SUBFILES];
    split_count(&one, &p, cnt, &segs);
    return segs;
}

int64_t gfs_striped_read(int sid, int64_t offset, void *buf, int64_t size)
{
    gfs_list_entry e = {offset, 0, size};
    return gc_striped_listio(sid, GFS_READ, 1, &e, buf);
}

int64_t gfs_striped_write(int sid, int64_t offset, const void *buf,
                          int64_t size)
{
    gfs_list_entry e = {offset, 0, size};
    return gc_striped_listio(sid, GFS_WRITE, 1, &e, (void *)buf);
}
