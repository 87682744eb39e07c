/*
 * cache.c -- the CacheManager (paper, section 4.2.2).
 *
 * Threads: the CacheManager thread (cm_main) services block lists while
 * several are queued (one alone is served by its handler thread); handler
 * threads call gsrv_cache_get/put/trim/drop_fork; the DiskManager thread
 * calls read_done.  Everything here is guarded by cache.lock, which is
 * taken after a fork's rwlock and before disk.lock (see gsrv_internal.h);
 * the CacheManager never holds it while calling into the DiskManager.
 *
 * Blocks are 32 KB, keyed by (fkid, block number).  A hash table finds
 * resident blocks.  A block in use has a reference count > 0 and is never
 * evicted; a block nobody uses sits on the global LRU list (a block joins
 * the list's most-recently-used end when its last reference goes), so the
 * list head is exactly "the first buffer in the LRU list with a reference
 * count of 0" of the paper and eviction is O(1).
 *
 * Each handler has at most one request at a time (the paper's "separate
 * list of requested disk blocks for each thread").  Requests sit on a ring;
 * the CacheManager thread takes one block from each request in turn
 * (round-robin, for fairness between clients).  A hit is ready at once; a
 * miss gets a buffer (a new one while the cache is below its nominal size,
 * else the LRU block) and is handed to the DiskManager, unless the caller
 * said the block will be wholly overwritten or lies past the end of the
 * fork, in which case it is zero-filled (or left as is) and ready at once.
 * The CacheManager collects the reads of one pass and submits them
 * together, so the DiskManager can order and merge them.  When no request
 * is queued, a handler serves its own list the same way on its own thread
 * (gsrv_cache_get), sparing two thread wake-ups.
 *
 * Nothing in the cache is ever dirty: writes go through to the Unix file
 * (write_cache.c) before they are acknowledged, so eviction never writes.
 *
 * Over-commit: when every buffer is referenced, a miss allocates a new
 * buffer anyway instead of blocking (blocking could deadlock: the holders
 * may be waiting for this very CacheManager).  The cache then exceeds its
 * nominal size; extra buffers are freed as soon as their last reference
 * goes.  How far it can exceed is bounded because each request holds at
 * most gsrv_cache_window() blocks at a time (io.c walks larger requests
 * window by window).
 */
#include "gsrv_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CM_BATCH 512 /* disk reads collected per CacheManager pass */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t work;  /* CacheManager: a request arrived / stop    */
    pthread_cond_t ready; /* handlers: a list was looked up or a block
                           * was read                                  */
    gsrv_htable tab;      /* resident blocks by (fkid, bno); fixed size */
    gsrv_block lru;       /* sentinel: lnext = least recently used */
    size_t nominal;       /* nominal size in blocks */
    size_t nblocks;       /* allocated blocks */
    size_t window;
    uint64_t hits, misses;
    gsrv_creq *ring; /* next request to serve, NULL if none */
    bool stop;
    bool running;
    pthread_t thread;
} cache = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .work = PTHREAD_COND_INITIALIZER,
    .ready = PTHREAD_COND_INITIALIZER,
};

/* Handed out when even a block header cannot be allocated. */
static gsrv_block enomem_block = {.state = GSRV_BLK_ERROR, .err = -ENOMEM};

/* ------------------------------------------------------------ blocks ---- */

static uint64_t block_hash(uint64_t fkid, uint64_t bno)
{
    uint64_t h = (fkid * 0x9e3779b97f4a7c15ull) ^ (bno * 0xc2b2ae3d27d4eb4full);
    h ^= h >> 29;
    return h;
}

static gsrv_block *lookup(uint64_t fkid, uint64_t bno)
{
    for (gsrv_hlink *l = gsrv_ht_chain(&cache.tab, block_hash(fkid, bno)); l;
         l = l->next) {
        gsrv_block *b = GSRV_HT_ENTRY(l, gsrv_block, hlink);
        if (b->fkid == fkid && b->bno == bno && !b->discard)
            return b;
    }
    return NULL;
}

static void hash_insert(gsrv_block *b)
{
    gsrv_ht_insert(&cache.tab, &b->hlink, block_hash(b->fkid, b->bno));
}

static void hash_remove(gsrv_block *b)
{
    gsrv_ht_remove(&cache.tab, &b->hlink);
}

static void lru_remove(gsrv_block *b)
{
    b->lprev->lnext = b->lnext;
    b->lnext->lprev = b->lprev;
    b->lprev = b->lnext = NULL;
}

static void lru_append(gsrv_block *b)
{
    b->lprev = cache.lru.lprev;
    b->lnext = &cache.lru;
    cache.lru.lprev->lnext = b;
    cache.lru.lprev = b;
}

static gsrv_block *block_alloc(void)
{
    gsrv_block *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    void *data;
    if (posix_memalign(&data, 4096, GSRV_BLOCK_SIZE)) {
        free(b);
        return NULL;
    }
    b->data = data;
    cache.nblocks++;
    return b;
}

static void block_free(gsrv_block *b)
{
    if (!b || b == &enomem_block)
        return;
    free(b->data);
    free(b);
    cache.nblocks--;
}

/* A buffer for a new block: fresh below the nominal size, else the LRU
 * block, else (everything referenced) fresh anyway. */
static gsrv_block *take_lru(void)
{
    gsrv_block *b = cache.lru.lnext;
    if (b == &cache.lru)
        return NULL;
    lru_remove(b);
    hash_remove(b);
    return b;
}

static gsrv_block *get_buffer(void)
{
    gsrv_block *b = NULL;
    if (cache.nblocks >= cache.nominal)
        b = take_lru();
    if (!b)
        b = block_alloc();
    if (!b)
        b = take_lru(); /* out of memory below the nominal size */
    return b;
}

/* The last reference went. */
static void release(gsrv_block *b)
{
    if (b->discard || b->state != GSRV_BLK_READY ||
        cache.nblocks > cache.nominal) {
        if (!b->discard)
            hash_remove(b);
        block_free(b);
        return;
    }
    lru_append(b);
}

/* Take a block out of service: no new lookup finds it; freed now if
 * unreferenced, else at its last release. */
static void evict(gsrv_block *b)
{
    if (b->discard)
        return;
    hash_remove(b);
    b->discard = true;
    if (b->refs == 0) {
        lru_remove(b);
        block_free(b);
    }
}

/* ------------------------------------------------- CacheManager thread ---- */

static void read_done(gsrv_dreq *d, int err)
{
    gsrv_block *b = d->arg;
    /* a checksummed fork's block is served only once it matches its
     * checksum (csum.c rule 5): else an error block, never cached */
    if (!err && d->cfd >= 0)
        err = gsrv_csum_verify(d->cfd, d->fkid, d->bno, d->buf);
    pthread_mutex_lock(&cache.lock);
    b->state = err ? GSRV_BLK_ERROR : GSRV_BLK_READY;
    b->err = err;
    pthread_cond_broadcast(&cache.ready);
    pthread_mutex_unlock(&cache.lock);
}

/* Look up block i of q; returns a disk read to issue, or NULL. */
static gsrv_dreq *serve_one(gsrv_creq *q, size_t i)
{
    gsrv_block *b = lookup(q->fkid, q->bno[i]);
    if (b) {
        cache.hits++;
        if (b->refs++ == 0)
            lru_remove(b);
        q->blk[i] = b;
        return NULL;
    }
    cache.misses++;
    b = get_buffer();
    if (!b) {
        q->blk[i] = &enomem_block;
        return NULL;
    }
    b->fkid = q->fkid;
    b->bno = q->bno[i];
    b->refs = 1;
    b->err = 0;
    b->discard = false;
    hash_insert(b);
    q->blk[i] = b;
    if (q->miss[i] != GSRV_MISS_READ) {
        if (q->miss[i] == GSRV_MISS_ZERO)
            memset(b->data, 0, GSRV_BLOCK_SIZE);
        b->state = GSRV_BLK_READY;
        return NULL;
    }
    b->state = GSRV_BLK_LOADING;
    gsrv_dreq *d = &b->dreq;
    memset(d, 0, sizeof(*d));
    d->fkid = q->fkid;
    d->bno = q->bno[i];
    d->fd = q->fd;
    d->op = GSRV_DISK_READ;
    d->lo = 0;
    d->hi = GSRV_BLOCK_SIZE;
    d->buf = b->data;
    d->cfd = q->cfd;
    d->done = read_done;
    d->arg = b;
    return d;
}

static void ring_insert(gsrv_creq *q)
{
    if (!cache.ring) {
        q->rnext = q->rprev = q;
        cache.ring = q;
        return;
    }
    /* just before the cursor: served last in the current round */
    q->rnext = cache.ring;
    q->rprev = cache.ring->rprev;
    q->rprev->rnext = q;
    cache.ring->rprev = q;
}

static void ring_remove(gsrv_creq *q)
{
    if (q->rnext == q) {
        cache.ring = NULL;
    } else {
        q->rprev->rnext = q->rnext;
        q->rnext->rprev = q->rprev;
        if (cache.ring == q)
            cache.ring = q->rnext;
    }
    q->rnext = q->rprev = NULL;
}

static void *cm_main(void *arg)
{
    gsrv_dreq *batch[CM_BATCH];

    pthread_mutex_lock(&cache.lock);
    for (;;) {
        while (!cache.ring && !cache.stop)
            pthread_cond_wait(&cache.work, &cache.lock);
        if (!cache.ring)
            break;
        size_t nb = 0;
        bool finished = false;
        while (cache.ring && nb < CM_BATCH) {
            gsrv_creq *q = cache.ring;
            gsrv_dreq *d = serve_one(q, q->next++);
            if (d)
                batch[nb++] = d;
            if (q->next == q->n) {
                ring_remove(q); /* advances the cursor */
                finished = true;
            } else {
                cache.ring = q->rnext; /* round-robin */
            }
        }
        if (finished)
            pthread_cond_broadcast(&cache.ready);
        pthread_mutex_unlock(&cache.lock);
        if (nb)
            gsrv_disk_submit(batch, nb);
        pthread_mutex_lock(&cache.lock);
    }
    pthread_mutex_unlock(&cache.lock);
    return NULL;
}

/* ------------------------------------------------------------ public ---- */

int gsrv_cache_start(size_t cache_mb)
{
    cache.nominal = cache_mb * ((1u << 20) / GSRV_BLOCK_SIZE);
    if (cache.nominal < 16)
        cache.nominal = 16;
    size_t nb = 1024;
    while (nb < cache.nominal)
        nb *= 2;
    if (gsrv_ht_init(&cache.tab, nb, false))
        return -ENOMEM;
    cache.lru.lnext = cache.lru.lprev = &cache.lru;
    size_t w = (size_t)(gsrv_g.data_limit / GSRV_BLOCK_SIZE) + 2;
    if (w > cache.nominal)
        w = cache.nominal;
    cache.window = w < 16 ? 16 : w;
    cache.stop = false;
    int rc = pthread_create(&cache.thread, NULL, cm_main, NULL);
    if (rc) {
        gsrv_ht_fini(&cache.tab);
        return -rc;
    }
    cache.running = true;
    return 0;
}

void gsrv_cache_stop(void)
{
    if (!cache.running)
        return;
    pthread_mutex_lock(&cache.lock);
    cache.stop = true;
    pthread_cond_signal(&cache.work);
    pthread_mutex_unlock(&cache.lock);
    pthread_join(cache.thread, NULL);
    cache.running = false;
    gsrv_ht_iter it = {0};
    for (gsrv_hlink *l; (l = gsrv_ht_next(&cache.tab, &it));)
        block_free(GSRV_HT_ENTRY(l, gsrv_block, hlink));
    gsrv_ht_fini(&cache.tab);
}

size_t gsrv_cache_window(void)
{
    return cache.window;
}

int gsrv_cache_get(gsrv_creq *q)
{
    if (q->n == 0)
        return 0;
    int err = 0;
    pthread_mutex_lock(&cache.lock);
    if (!cache.ring) {
        /* Nobody is queued, so round-robin has nobody to be fair to: the
         * handler serves its own list here instead of waking the
         * CacheManager and sleeping until it is done (two thread wake-ups
         * per request, most of a small request's cost). */
        gsrv_dreq *batch[CM_BATCH];
        size_t nb = 0;
        for (q->next = 0; q->next < q->n;) {
            gsrv_dreq *d = serve_one(q, q->next++);
            if (d)
                batch[nb++] = d;
            if (nb == CM_BATCH || (nb && q->next == q->n)) {
                pthread_mutex_unlock(&cache.lock);
                gsrv_disk_submit(batch, nb);
                nb = 0;
                pthread_mutex_lock(&cache.lock);
            }
        }
    } else {
        q->next = 0;
        ring_insert(q);
        pthread_cond_signal(&cache.work);
        while (q->next < q->n)
            pthread_cond_wait(&cache.ready, &cache.lock);
    }
    for (size_t i = 0; i < q->n; i++) {
        gsrv_block *b = q->blk[i];
        while (b->state == GSRV_BLK_LOADING)
            pthread_cond_wait(&cache.ready, &cache.lock);
        if (b->state == GSRV_BLK_ERROR && !err)
            err = b->err ? b->err : -EIO;
    }
    pthread_mutex_unlock(&cache.lock);
    return err;
}

void gsrv_cache_put(gsrv_block **blk, size_t n, bool discard)
{
    pthread_mutex_lock(&cache.lock);
    for (size_t i = 0; i < n; i++) {
        gsrv_block *b = blk[i];
        if (!b || b == &enomem_block)
            continue;
        if (discard && !b->discard) {
            hash_remove(b);
            b->discard = true;
        }
        if (--b->refs == 0)
            release(b);
    }
    pthread_mutex_unlock(&cache.lock);
}

void gsrv_cache_drop_fork(uint64_t fkid)
{
    pthread_mutex_lock(&cache.lock);
    gsrv_ht_iter it = {0};
    for (gsrv_hlink *l; (l = gsrv_ht_next(&cache.tab, &it));) {
        gsrv_block *b = GSRV_HT_ENTRY(l, gsrv_block, hlink);
        if (b->fkid == fkid)
            evict(b);
    }
    pthread_mutex_unlock(&cache.lock);
}

/* Evict fork fkid's blocks first..last: block by block, or for a range
 * longer than the table, by one walk of the table.  cache.lock held. */
static void evict_range(uint64_t fkid, uint64_t first, uint64_t last)
{
    if (last - first < cache.tab.nbuckets) {
        for (uint64_t bno = first; bno <= last; bno++) {
            gsrv_block *b = lookup(fkid, bno);
            if (b)
                evict(b);
        }
        return;
    }
    gsrv_ht_iter it = {0};
    for (gsrv_hlink *l; (l = gsrv_ht_next(&cache.tab, &it));) {
        gsrv_block *b = GSRV_HT_ENTRY(l, gsrv_block, hlink);
        if (b->fkid == fkid && b->bno >= first && b->bno <= last)
            evict(b);
    }
}

void gsrv_cache_trim(uint64_t fkid, uint64_t size, uint64_t oldsize)
{
    uint64_t first = size / GSRV_BLOCK_SIZE; /* block holding `size` */
    uint32_t keep = (uint32_t)(size % GSRV_BLOCK_SIZE);
    uint64_t last = oldsize ? (oldsize - 1) / GSRV_BLOCK_SIZE : 0;

    pthread_mutex_lock(&cache.lock);
    if (keep) {
        gsrv_block *b = lookup(fkid, first);
        if (b && b->state == GSRV_BLK_READY)
            memset(b->data + keep, 0, GSRV_BLOCK_SIZE - keep);
        first++;
    }
    /* nothing cached can lie past the new end when it did not shrink */
    if (oldsize > size && first <= last)
        evict_range(fkid, first, last);
    pthread_mutex_unlock(&cache.lock);
}

void gsrv_cache_forget(uint64_t fkid, uint64_t off, uint64_t end)
{
    if (end <= off)
        return;
    pthread_mutex_lock(&cache.lock);
    evict_range(fkid, off / GSRV_BLOCK_SIZE, (end - 1) / GSRV_BLOCK_SIZE);
    pthread_mutex_unlock(&cache.lock);
}

void gsrv_cache_stats(uint64_t *hits, uint64_t *misses)
{
    pthread_mutex_lock(&cache.lock);
    *hits = cache.hits;
    *misses = cache.misses;
    pthread_mutex_unlock(&cache.lock);
}
