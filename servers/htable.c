/*
 * htable.c -- galleyd's one hash table (see htable.h).
 *
 * Threads: any; the table's owner holds its own lock around every call.
 */
#include "htable.h"

#include <errno.h>
#include <stdlib.h>

int gsrv_ht_init(gsrv_htable *t, size_t nbuckets, bool grow)
{
    t->bucket = calloc(nbuckets, sizeof(*t->bucket));
    if (!t->bucket)
        return -ENOMEM;
    t->nbuckets = nbuckets;
    t->n = 0;
    t->grow = grow;
    return 0;
}

void gsrv_ht_fini(gsrv_htable *t)
{
    if (!t)
        return;
    free(t->bucket);
    t->bucket = NULL;
    t->nbuckets = 0;
    t->n = 0;
}

static size_t slot(const gsrv_htable *t, uint64_t hash)
{
    return (size_t)hash & (t->nbuckets - 1);
}

/* Double the buckets, moving every chain; on failure nothing changes. */
static void grow(gsrv_htable *t)
{
    size_t nb = t->nbuckets * 2;
    gsrv_hlink **b = calloc(nb, sizeof(*b));
    if (!b)
        return;
    for (size_t i = 0; i < t->nbuckets; i++) {
        gsrv_hlink *l = t->bucket[i];
        while (l) {
            gsrv_hlink *next = l->next;
            size_t k = (size_t)l->hash & (nb - 1);
            l->next = b[k];
            b[k] = l;
            l = next;
        }
    }
    free(t->bucket);
    t->bucket = b;
    t->nbuckets = nb;
}

void gsrv_ht_insert(gsrv_htable *t, gsrv_hlink *l, uint64_t hash)
{
    if (t->grow && t->n >= t->nbuckets)
        grow(t);
    size_t k = slot(t, hash);
    l->hash = hash;
    l->next = t->bucket[k];
    t->bucket[k] = l;
    t->n++;
}

void gsrv_ht_remove(gsrv_htable *t, gsrv_hlink *l)
{
    if (!t->nbuckets)
        return;
    for (gsrv_hlink **pp = &t->bucket[slot(t, l->hash)]; *pp; pp = &(*pp)->next)
        if (*pp == l) {
            *pp = l->next;
            l->next = NULL;
            t->n--;
            return;
        }
}

gsrv_hlink *gsrv_ht_chain(const gsrv_htable *t, uint64_t hash)
{
    return t->nbuckets ? t->bucket[slot(t, hash)] : NULL;
}

gsrv_hlink *gsrv_ht_next(const gsrv_htable *t, gsrv_ht_iter *it)
{
    while (!it->next) {
        if (it->bucket >= t->nbuckets)
            return NULL;
        it->next = t->bucket[it->bucket++];
    }
    gsrv_hlink *l = it->next;
    it->next = l->next;
    return l;
}
