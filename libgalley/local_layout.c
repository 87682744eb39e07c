/*
 * local_layout.c -- the locality layout ("local"): variable data
 * distribution after the TreadMarks parallel file subsystem.
 *
 * A `local` file is a linear byte stream cut into blocks of B bytes (the
 * layout's block size, attribute galley.stripe_unit).  Block g lives on
 * the server of the host of the process that first wrote it, and stays
 * there when rewritten.  Each subfile keeps, beside its data fork FORK, the
 * paper's block map as a fork FORK.map: slot k of the map (16 bytes at
 * offset 16 k: u64 g + 1, u64 bytes of the block written so far) says that
 * the data fork's bytes [k B, (k + 1) B) hold block g.  The map's number
 * of slots is the paper's "local count"; the slots of all maps together
 * give the total.  The next free slot of a subfile is the FETCH_ADD
 * counter "galley.local.slots" of its header, so processes sharing a
 * server never take the same slot.  Map and data are forks, so they are
 * durable exactly like every other fork (written through, fsync on sync).
 *
 * Clients read every map at open and keep a hash of block -> (subfile,
 * slot, length); a block missing from it makes the client read the maps'
 * new slots again before it concludes the block is a hole (zeros).
 *
 * First write of a block.  The block must get exactly one home even when
 * processes on two hosts write parts of it at once, so claims are
 * serialised by an exclusive lock at the file's home server (subfile 0)
 * over the claimed block numbers (BLOCK_LOCK: a lock space apart from
 * byte ranges, so claims and gfs_striped_lock never meet): under the
 * lock the client reads the maps' new slots again, and only blocks still
 * nobody's are claimed, on its own server.  Rewrites of known blocks take no
 * lock and no extra request, except to raise a block's recorded length (one
 * small write to the map of the block's own server).
 *
 * Which server is "mine": a server is on this host when the connection to
 * it is the same-host socket or a TCP connection whose two ends have the
 * same address.  With several on this host, the process takes the one at
 * its node-local rank modulo their number (GALLEY_LOCAL_RANK, else
 * MPI_LOCALRANKID from MPICH's hydra, OMPI_COMM_WORLD_LOCAL_RANK,
 * SLURM_LOCALID; default 0).  A process with no server on its host places
 * new blocks round robin by block number, as striping would.
 *
 * Templates: gfs_create_layout(..., "template:NAME") creates a local file
 * whose maps are NAME's with every length 0: each block is placed where
 * NAME has it before anything is written (the paper's reuse of a learned
 * distribution).
 *
 * Requests (a list request -> one transfer per subfile) are in
 * local_io.c; creating a local file and applying a template in
 * local_create.c, the one file of the layout above striped.c (it opens
 * striped files); the types the three share in local_internal.h.  This
 * file and local_io.c are below striped.c: it calls them, never the
 * other way.
 *
 * Threads: any; one mutex per open local file (gc_local.lock) is held
 * across the whole of a request's preparation, network calls included
 * (claims must see one consistent map).  It never nests inside st_lock.
 */
#include "internal.h"
#include "local_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------- the hash ---- */

static size_t hash_of(uint64_t key, size_t cap)
{
    key ^= key >> 33;
    key *= UINT64_C(0xff51afd7ed558ccd);
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

blk *gc_local_find(gc_local *l, uint64_t g)
{
    if (!l->cap)
        return NULL;
    for (size_t i = hash_of(g + 1, l->cap);; i = (i + 1) & (l->cap - 1)) {
        if (l->tab[i].key == g + 1)
            return &l->tab[i];
        if (!l->tab[i].key)
            return NULL;
    }
}

static int grow(gc_local *l)
{
    size_t cap = l->cap ? l->cap * 2 : 1024;
    blk *nt = calloc(cap, sizeof(*nt));
    if (!nt)
        return -ENOMEM;
    for (size_t i = 0; i < l->cap; i++)
        if (l->tab[i].key) {
            size_t j = hash_of(l->tab[i].key, cap);
            while (nt[j].key)
                j = (j + 1) & (cap - 1);
            nt[j] = l->tab[i];
        }
    free(l->tab);
    l->tab = nt;
    l->cap = cap;
    return 0;
}

/* Record block g at (sub, slot).  A block already known elsewhere keeps
 * its first home (claims are serialised, so this only guards against a
 * damaged map). */
static int insert(gc_local *l, uint64_t g, int sub, uint64_t slot, uint64_t len)
{
    blk *b = gc_local_find(l, g);
    if (!b) {
        if ((l->used + 1) * 2 > l->cap) {
            int rc = grow(l);
            if (rc)
                return rc;
        }
        size_t i = hash_of(g + 1, l->cap);
        while (l->tab[i].key)
            i = (i + 1) & (l->cap - 1);
        b = &l->tab[i];
        *b = (blk){g + 1, sub, slot, len};
        l->used++;
    } else if (b->sub == sub && b->slot == slot && len > b->len) {
        b->len = len;
    }
    if (b->sub == sub && b->slot == slot && b->len &&
        g * l->bsize + b->len > l->maxend)
        l->maxend = g * l->bsize + b->len;
    return 0;
}

/* ------------------------------------------------------- the maps ------ */

static uint64_t get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/*
 * Read the maps' slots from where each was last read without a gap (all
 * of every map when `full`, forgetting what was known: truncate may have
 * given blocks up).  A slot still zero was taken by a writer that has not
 * filled it in yet: reading resumes there next time.
 */
int gc_local_refresh(gc_local *l, bool full)
{
    if (full) {
        if (l->tab)
            memset(l->tab, 0, sizeof(*l->tab) * l->cap);
        l->used = 0;
        l->maxend = 0;
        memset(l->scanned, 0, sizeof(l->scanned));
    }
    /* every map at once: one round trip per MAP_CHUNK of new slots, not
     * one per map (a claim does this under its lock).  The reads run on
     * this thread (gc_forks_read), never through the non-blocking
     * workers: a single-range read's finish gets here on a worker. */
    int n = l->nsub, rc = 0;
    uint8_t *buf = malloc((size_t)n * MAP_CHUNK);
    uint64_t *slot = malloc(sizeof(*slot) * (size_t)n);
    bool *gap = calloc((size_t)n, sizeof(*gap));
    int *kids = malloc(sizeof(*kids) * (size_t)n);
    int *sub = malloc(sizeof(*sub) * (size_t)n);
    int64_t *offs = malloc(sizeof(*offs) * (size_t)n);
    int64_t *got = malloc(sizeof(*got) * (size_t)n);
    if (!buf || !slot || !gap || !kids || !sub || !offs || !got)
        rc = -ENOMEM;
    int nr = 0; /* maps still being read: sub[0..nr) */
    for (int s = 0; s < n && !rc; s++) {
        slot[s] = l->scanned[s];
        sub[nr++] = s;
    }
    while (nr > 0 && !rc) {
        for (int i = 0; i < nr; i++) {
            kids[i] = l->mkids[sub[i]];
            offs[i] = (int64_t)(slot[sub[i]] * SLOT_BYTES);
        }
        rc = gc_forks_read(nr, kids, offs, (char *)buf, MAP_CHUNK, got);
        int more = 0;
        for (int i = 0; i < nr && !rc; i++) {
            int s = sub[i];
            const uint8_t *b = buf + (size_t)i * MAP_CHUNK;
            for (int64_t k = 0; k + SLOT_BYTES <= got[i] && !rc;
                 k += SLOT_BYTES, slot[s]++) {
                uint64_t key = get_le64(b + k);
                if (key == 0) {
                    gap[s] = true;
                    continue;
                }
                if (!gap[s])
                    l->scanned[s] = slot[s] + 1;
                if (key != TOMBSTONE)
                    rc = insert(l, key - 1, s, slot[s], get_le64(b + k + 8));
            }
            if (got[i] == MAP_CHUNK)
                sub[more++] = s;
        }
        nr = more;
    }
    free(buf);
    free(slot);
    free(gap);
    free(kids);
    free(sub);
    free(offs);
    free(got);
    return rc;
}

int64_t gc_local_slot_add(gc_local *l, int s, const char *key, int64_t delta)
{
    return gc_counter(l->servers[s], l->hids[s], key, false, (uint64_t)delta);
}

/* ------------------------------------------------------ open / close --- */

/* GALLEY_LOCAL_RANK, else the launchers' own variables, else 0. */
static int local_rank(void)
{
    int own = (int)g_config_int(G_CFG_LOCAL_RANK); /* -1: none */
    if (own >= 0)
        return own;
    static const char *vars[] = {"MPI_LOCALRANKID",
                                 "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        char *end;
        if (v && *v) {
            long r = strtol(v, &end, 10);
            if (!*end && r >= 0 && r < (1L << 30))
                return (int)r;
        }
    }
    return 0;
}

bool gc_is_local_layout(int fid)
{
    char v[32];
    return gc_file_attr(fid, "galley.layout", v, sizeof(v)) > 0 &&
           strcmp(v, "local") == 0;
}

int gc_local_open(int fid, const gfs_layout *lay, gc_local **out)
{
    *out = NULL;
    if (!gc_is_local_layout(fid))
        return 0;
    gc_file f;
    int rc = gc_file_get(fid, &f);
    if (rc)
        return rc;
    gc_local *l = calloc(1, sizeof(*l));
    if (!l)
        return -ENOMEM;
    pthread_mutex_init(&l->lock, NULL);
    l->nsub = lay->nsubfiles;
    l->bsize = (uint64_t)lay->unit;
    snprintf(l->fork, sizeof(l->fork), "%s", lay->fork);
    char mapfork[GFS_FORK_NAME_MAX + 1];
    if (snprintf(mapfork, sizeof(mapfork), "%s" MAP_SUFFIX, lay->fork) >=
        (int)sizeof(mapfork)) {
        rc = -ENAMETOOLONG;
        goto out_free;
    }
    int nlocal = 0, locals[GFS_MAX_SUBFILES];
    for (int s = 0; s < l->nsub; s++) {
        l->servers[s] = (int)f.rec.server[s];
        l->hids[s] = f.rec.hid[s];
        if (gc_conn_same_host(gc_server_conn(l->servers[s])))
            locals[nlocal++] = s;
    }
    l->me = nlocal ? locals[local_rank() % nlocal] : -1;
    rc = gc_all_open(fid, mapfork, l->mkids);
    if (rc)
        goto out_free;
    rc = gc_local_refresh(l, true);
    if (rc) {
        gc_all_close(l->nsub, l->mkids);
        goto out_free;
    }
    *out = l;
    return 0;
out_free:
    pthread_mutex_destroy(&l->lock);
    free(l);
    return rc;
}

void gc_local_free(gc_local *l)
{
    if (!l)
        return;
    pthread_mutex_destroy(&l->lock);
    free(l->tab);
    free(l);
}

/* ---------------------------------------------------------- claims ----- */

int gc_local_want_cmp(const void *a, const void *b)
{
    const want *x = a, *y = b;
    return x->g < y->g ? -1 : x->g > y->g;
}

/* Give blocks w[0..n) (sorted, distinct, not yet known) a home. */
int gc_local_claim(gc_local *l, want *w, size_t n)
{
    uint64_t lo = w[0].g, hi = w[n - 1].g;
    /* at the file's home (subfile 0's header), in the block-number lock
     * space: no byte offset is given up to claims */
    int rc = gc_range_lock(l->servers[0], l->hids[0], GC_LOCK_BLOCKS, true, lo,
                           hi - lo + 1, true);
    if (rc)
        return rc;
    /* someone may have claimed them meanwhile */
    rc = gc_local_refresh(l, false);
    uint64_t *count = calloc((size_t)l->nsub, sizeof(*count));
    uint8_t *ent = malloc(n * SLOT_BYTES);
    int *dest = malloc(n * sizeof(*dest));
    if (!rc && (!count || !ent || !dest))
        rc = -ENOMEM;
    for (size_t i = 0; i < n && !rc; i++) {
        dest[i] = -1;
        if (gc_local_find(l, w[i].g))
            continue;
        dest[i] = l->me >= 0 ? l->me : (int)(w[i].g % (uint64_t)l->nsub);
        count[dest[i]]++;
    }
    for (int s = 0; s < l->nsub && !rc; s++) {
        if (!count[s])
            continue;
        int64_t base = gc_local_slot_add(l, s, SLOTS_KEY, (int64_t)count[s]);
        if (base < 0) {
            rc = (int)base;
            break;
        }
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (dest[i] == s) {
                put_le64(ent + m * SLOT_BYTES, w[i].g + 1);
                put_le64(ent + m * SLOT_BYTES + 8, w[i].end);
                m++;
            }
        int64_t wr = gc_fork_rw(l->mkids[s], GFS_WRITE, base * SLOT_BYTES, ent,
                                (int64_t)(m * SLOT_BYTES));
        if (wr < 0) {
            rc = (int)wr;
            break;
        }
        m = 0;
        for (size_t i = 0; i < n && !rc; i++)
            if (dest[i] == s)
                rc = insert(l, w[i].g, s, (uint64_t)base + m++, w[i].end);
    }
    free(count);
    free(ent);
    free(dest);
    int urc = gc_range_lock(l->servers[0], l->hids[0], GC_LOCK_BLOCKS, false,
                            lo, hi - lo + 1, false);
    return rc ? rc : urc;
}

/* Must this write record that it extends block w?  Only the last block's
 * length says anything (the logical size); a block below one known to
 * hold bytes is left alone, which spares small appending writes a map
 * update each.  (Truncate sets the new last block's length itself.) */
static bool must_raise(const gc_local *l, const blk *b, const want *w)
{
    return b && w->end > b->len && l->maxend <= (w->g + 1) * l->bsize;
}

/* Raise the recorded lengths of known blocks this write extends: one small
 * list write per owning subfile. */
int gc_local_raise_lengths(gc_local *l, const want *w, size_t n)
{
    gfs_list_entry *le = malloc(sizeof(*le) * (n ? n : 1));
    uint8_t *val = malloc(8 * (n ? n : 1));
    int rc = le && val ? 0 : -ENOMEM;
    for (int s = 0; s < l->nsub && !rc; s++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            blk *b = gc_local_find(l, w[i].g);
            if (b && b->sub == s && must_raise(l, b, &w[i])) {
                put_le64(val + 8 * m, w[i].end);
                le[m] = (gfs_list_entry){(int64_t)(b->slot * SLOT_BYTES + 8),
                                         (int64_t)(8 * m), 8};
                m++;
            }
        }
        if (m) {
            int64_t r =
                gc_fork_listio(l->mkids[s], GFS_WRITE, (int64_t)m, le, val);
            if (r < 0)
                rc = (int)r;
        }
    }
    for (size_t i = n; i-- > 0 && !rc;) { /* highest first, as decided */
        blk *b = gc_local_find(l, w[i].g);
        if (must_raise(l, b, &w[i])) {
            b->len = w[i].end;
            if (w[i].g * l->bsize + b->len > l->maxend)
                l->maxend = w[i].g * l->bsize + b->len;
        }
    }
    free(le);
    free(val);
    return rc;
}

/*
 * Shrink: blocks wholly past `size` give their slots up (tombstones; the
 * space is not reused) and the block holding `size` is cut there and its
 * tail zeroed, so growing again reads zeros.  Grow: one zero byte at
 * size - 1, written like any other byte.
 */
int gc_local_truncate(gc_local *l, int sid, const int *kids, int64_t size)
{
    if (size < 0)
        return -EINVAL;
    int64_t cur = gc_local_size(l);
    if (cur < 0)
        return (int)cur;
    if (size > cur) {
        char zero = 0;
        gfs_list_entry e = {size - 1, 0, 1};
        gc_pieces p = gc_pieces_paired(1, &e, &zero);
        gc_op *o;
        int rc = gc_local_op(l, sid, &o, GFS_WRITE, &p, kids);
        if (rc)
            return rc;
        int64_t r = gc_op_run(o);
        return r < 0 ? (int)r : 0;
    }
    uint64_t B = l->bsize, keep = ((uint64_t)size + B - 1) / B;
    int rc = 0;
    uint8_t tomb[SLOT_BYTES];
    put_le64(tomb, TOMBSTONE);
    put_le64(tomb + 8, 0);
    char *zeros = calloc(1, B);
    if (!zeros)
        return -ENOMEM;
    pthread_mutex_lock(&l->lock);
    for (size_t i = 0; i < l->cap && !rc; i++) {
        blk *b = &l->tab[i];
        if (!b->key)
            continue;
        uint64_t g = b->key - 1;
        int64_t r = 0;
        if (g >= keep) {
            r = gc_fork_rw(l->mkids[b->sub], GFS_WRITE,
                           (int64_t)(b->slot * SLOT_BYTES), tomb, SLOT_BYTES);
        } else if (g == keep - 1 && (uint64_t)size % B &&
                   b->len > (uint64_t)size % B) {
            uint64_t cut = (uint64_t)size % B;
            uint8_t v[8];
            put_le64(v, cut);
            r = gc_fork_rw(kids[b->sub], GFS_WRITE,
                           (int64_t)(b->slot * B + cut), zeros,
                           (int64_t)(B - cut));
            if (r >= 0)
                r = gc_fork_rw(l->mkids[b->sub], GFS_WRITE,
                               (int64_t)(b->slot * SLOT_BYTES + 8), v, 8);
        }
        if (r < 0)
            rc = (int)r;
    }
    if (!rc)
        rc = gc_local_refresh(l, true);
    /* the new last block records exactly where the file ends now (its
     * length may have been left lower by must_raise) */
    bool absent = false;
    if (!rc && size > 0) {
        uint64_t g = ((uint64_t)size - 1) / B;
        blk *b = gc_local_find(l, g);
        if (b && b->len != (uint64_t)size - g * B) {
            uint8_t v[8];
            put_le64(v, (uint64_t)size - g * B);
            int64_t r = gc_fork_rw(l->mkids[b->sub], GFS_WRITE,
                                   (int64_t)(b->slot * SLOT_BYTES + 8), v, 8);
            if (r < 0)
                rc = (int)r;
            else
                rc = gc_local_refresh(l, true);
        }
        absent = !b;
    }
    pthread_mutex_unlock(&l->lock);
    free(zeros);
    if (!rc && absent) {
        /* a hole at the new end: one zero byte there claims the block */
        char zero = 0;
        gfs_list_entry e = {size - 1, 0, 1};
        gc_pieces p = gc_pieces_paired(1, &e, &zero);
        gc_op *o;
        rc = gc_local_op(l, sid, &o, GFS_WRITE, &p, kids);
        if (!rc) {
            int64_t r = gc_op_run(o);
            rc = r < 0 ? (int)r : 0;
        }
    }
    return rc;
}

int gc_local_sync(gc_local *l)
{
    return gc_forks_sync(l->mkids, l->nsub);
}

/* ------------------------------------------------------- public API ---- */

int gc_local_stat(gc_local *l, gfs_local_stat *st)
{
    memset(st, 0, sizeof(*st));
    pthread_mutex_lock(&l->lock);
    int rc = gc_local_refresh(l, true);
    if (!rc) {
        st->nsubfiles = l->nsub;
        st->block_size = (int64_t)l->bsize;
        st->me = l->me;
        st->size = (int64_t)l->maxend;
        for (int s = 0; s < l->nsub; s++)
            st->servers[s] = l->servers[s];
        for (size_t i = 0; i < l->cap; i++)
            if (l->tab[i].key) {
                st->blocks[l->tab[i].sub]++;
                st->total_blocks++;
            }
    }
    pthread_mutex_unlock(&l->lock);
    return rc;
}

int gfs_server_io_stats(int server, gfs_server_io *st)
{
    int rc = gc_check_init();
    if (rc)
        return rc;
    if (!st || server < 0 || server >= gc_g.nservers)
        return -EINVAL;
    gp_IO_STATS_rep m;
    rc = gc_IO_STATS_call(gc_server_conn(server), &(gp_IO_STATS_req){}, &m,
                          NULL);
    if (!rc) {
        st->written_local = m.written_local;
        st->written_remote = m.written_remote;
        st->read_local = m.read_local;
        st->read_remote = m.read_remote;
    }
    return rc;
}
