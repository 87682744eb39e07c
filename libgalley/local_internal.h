/*
 * local_internal.h -- private to the locality layout's three files:
 * local_layout.c (maps, open, claims, truncate), local_io.c (turning a
 * list request into transfers) and local_create.c (create, templates).  See
 * local_layout.c for the layout itself.
 *
 * Threads: gc_local.lock guards every field of an open local file; the
 * functions below that take a gc_local expect it held.
 */
#ifndef GALLEY_LOCAL_INTERNAL_H
#define GALLEY_LOCAL_INTERNAL_H

#include "internal.h"

#define MAP_SUFFIX ".map"
#define SLOT_BYTES 16
#define SLOTS_KEY "galley.local.slots"
#define TOMBSTONE UINT64_MAX /* a slot given up by truncate */
#define READ_CHUNK (1 << 20)
#define MAP_CHUNK (16 << 10) /* bytes of one map read in a refresh */

typedef struct blk {
    uint64_t key; /* g + 1; 0 = empty hash cell */
    int sub;
    uint64_t slot;
    uint64_t len;
} blk;

struct gc_local {
    pthread_mutex_t lock;
    int nsub;
    uint64_t bsize;
    char fork[GFS_FORK_NAME_MAX + 1]; /* the data fork (FORK.map: the map) */
    int me;                           /* subfile of my server, or -1 */
    int servers[GFS_MAX_SUBFILES];
    uint64_t hids[GFS_MAX_SUBFILES];
    int mkids[GFS_MAX_SUBFILES];        /* map forks */
    uint64_t scanned[GFS_MAX_SUBFILES]; /* slots read up to the first gap */
    blk *tab;
    size_t cap, used;
    uint64_t maxend; /* logical end known so far */
};

/* A block a request touches, and how far it writes it. */
typedef struct want {
    uint64_t g;
    uint64_t end; /* bytes of the block this request writes up to */
} want;

/* The known block g, or NULL. */
blk *gc_local_find(gc_local *l, uint64_t g);
/* Read the maps again (all of them when full). */
int gc_local_refresh(gc_local *l, bool full);
/* Order of want by block number (qsort). */
int gc_local_want_cmp(const void *a, const void *b);
/* Give blocks w[0..n) (sorted, distinct, not yet known) a home. */
int gc_local_claim(gc_local *l, want *w, size_t n);
/* Raise the recorded lengths of known blocks this write extends. */
int gc_local_raise_lengths(gc_local *l, const want *w, size_t n);
/* FETCH_ADD of delta on counter key of subfile s's header (its own
 * server); the value before. */
int64_t gc_local_slot_add(gc_local *l, int s, const char *key, int64_t delta);

/* A map slot's little-endian 64-bit fields. */
static inline void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

#endif /* GALLEY_LOCAL_INTERNAL_H */
