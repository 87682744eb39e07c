/*
 * htable.h -- galleyd's one hash table: intrusive, chained, power-of-two
 * buckets, keyed by a 64-bit hash the caller computes.  Used by the
 * subfile table (subfile.c), the NameServer (nameserver.c) and the block
 * cache (cache.c).
 *
 * An object embeds a gsrv_hlink and is found again with GSRV_HT_ENTRY.  The
 * table never allocates or frees objects and never compares keys: a
 * lookup walks the chain of a hash (gsrv_ht_chain) and the caller compares
 * its own key, so equal hashes of different keys are fine.  A table made
 * to grow doubles its buckets when it holds as many objects as buckets; a
 * failed growth only makes chains longer.
 *
 * Threads: none of its own and no locks; the owner's lock guards every
 * call.
 */
#ifndef GSRV_HTABLE_H
#define GSRV_HTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gsrv_hlink {
    struct gsrv_hlink *next; /* chain; NULL when not in a table */
    uint64_t hash;
} gsrv_hlink;

typedef struct gsrv_htable {
    gsrv_hlink **bucket;
    size_t nbuckets; /* power of two; 0 before init and after fini */
    size_t n;        /* objects in the table */
    bool grow;
} gsrv_htable;

/* The object that embeds link `l` as its member `member`. */
#define GSRV_HT_ENTRY(l, type, member)                                         \
    ((type *)((char *)(l)-offsetof(type, member)))

/* Make t empty with nbuckets buckets (a power of two, > 0); grow says
 * whether it may double them later.  0 or -ENOMEM.  Free with
 * gsrv_ht_fini. */
int gsrv_ht_init(gsrv_htable *t, size_t nbuckets, bool grow);

/* Free the bucket array (not the objects: take them out first, e.g. with
 * gsrv_ht_next).  NULL-safe; t may be initialised again afterwards. */
void gsrv_ht_fini(gsrv_htable *t);

/* Add l with the given hash at the head of its chain.  Always succeeds on
 * an initialised table. */
void gsrv_ht_insert(gsrv_htable *t, gsrv_hlink *l, uint64_t hash);

/* Take l out of t.  Does nothing when l is not in t. */
void gsrv_ht_remove(gsrv_htable *t, gsrv_hlink *l);

/* The first link of the chain that holds `hash` (follow ->next; links of
 * other hashes may share the chain: compare l->hash and the key). */
gsrv_hlink *gsrv_ht_chain(const gsrv_htable *t, uint64_t hash);

/* Visit every link: start with a zeroed cursor, call until NULL.  The
 * link returned may be removed (or freed) before the next call; nothing
 * else may change the table meanwhile. */
typedef struct gsrv_ht_iter {
    size_t bucket;
    gsrv_hlink *next;
} gsrv_ht_iter;
gsrv_hlink *gsrv_ht_next(const gsrv_htable *t, gsrv_ht_iter *it);

#endif
