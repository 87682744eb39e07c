/*
 * handle.c -- the one id table (see handle.h for the id format).
 *
 * A slot array with a generation each, a FIFO free list threaded through
 * the free slots, and the objects by value in a parallel array.  Freed
 * slots go to the tail of the free list and new objects take the head, so
 * slots are reused in turn: a stale id mostly lands on a free slot, and a
 * generation wraps only after GC_ID_GEN_BITS worth of reuses of every slot
 * on the list.
 *
 * Threads: none of its own; callers hold t->lock (handle.h), except in the
 * three calls at the end, which take it.
 */
#include "handle.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "galley.h"

#define GEN_MASK ((1u << GC_ID_GEN_BITS) - 1)

static int make_id(const gc_idtab *t, int slot)
{
    unsigned id = (unsigned)slot | (unsigned)t->kind << GC_ID_SLOT_BITS |
                  (unsigned)t->slot[slot].gen
                      << (GC_ID_SLOT_BITS + GC_ID_KIND_BITS);
    return (int)id;
}

/* The slot of a live object named by id, or -1. */
static int live_slot(const gc_idtab *t, int id)
{
    if (id < 0 || GC_ID_KIND(id) != t->kind)
        return -1;
    int s = GC_ID_SLOT(id);
    if (s >= t->cap || !t->slot[s].live ||
        t->slot[s].gen != (unsigned)GC_ID_GEN(id))
        return -1;
    return s;
}

static void push_free(gc_idtab *t, int s)
{
    t->slot[s].next = -1;
    if (t->free_tail >= 0)
        t->slot[t->free_tail].next = s;
    else
        t->free_head = s;
    t->free_tail = s;
}

/* Double the table (at least first_cap slots); new slots join the free
 * list in order. */
static int grow(gc_idtab *t)
{
    if (t->cap >= GC_ID_MAX_SLOTS)
        return -EMFILE;
    int cap = t->cap ? t->cap * 2 : (t->first_cap > 0 ? t->first_cap : 16);
    if (cap > GC_ID_MAX_SLOTS)
        cap = GC_ID_MAX_SLOTS;
    gc_idslot *ns = realloc(t->slot, sizeof(*ns) * (size_t)cap);
    if (!ns)
        return -ENOMEM;
    t->slot = ns;
    unsigned char *no = realloc(t->obj, t->objsize * (size_t)cap);
    if (!no)
        return -ENOMEM; /* the larger slot array is harmless */
    t->obj = no;
    for (int s = t->cap; s < cap; s++) {
        t->slot[s] = (gc_idslot){.gen = 0, .live = 0, .next = -1};
        push_free(t, s);
    }
    t->cap = cap;
    return 0;
}

int gc_idtab_add(gc_idtab *t, const void *obj)
{
    if (t->free_head < 0) {
        int rc = grow(t);
        if (rc)
            return rc;
    }
    int s = t->free_head;
    t->free_head = t->slot[s].next;
    if (t->free_head < 0)
        t->free_tail = -1;
    t->slot[s].live = 1;
    t->slot[s].next = -1;
    memcpy(t->obj + (size_t)s * t->objsize, obj, t->objsize);
    t->nlive++;
    return make_id(t, s);
}

void *gc_idtab_at(gc_idtab *t, int id)
{
    int s = live_slot(t, id);
    return s < 0 ? NULL : t->obj + (size_t)s * t->objsize;
}

static void free_slot(gc_idtab *t, int s)
{
    t->slot[s].live = 0;
    t->slot[s].gen = (uint16_t)((t->slot[s].gen + 1) & GEN_MASK);
    t->nlive--;
    push_free(t, s);
}

int gc_idtab_remove(gc_idtab *t, int id)
{
    int s = live_slot(t, id);
    if (s < 0)
        return GFS_EBADID;
    free_slot(t, s);
    return 0;
}

int gc_idtab_next(const gc_idtab *t, int id)
{
    int s = id < 0 ? 0 : GC_ID_SLOT(id) + 1;
    for (; s < t->cap; s++)
        if (t->slot[s].live)
            return make_id(t, s);
    return -1;
}

int gc_idtab_count(const gc_idtab *t)
{
    return t->nlive;
}

void gc_idtab_clear(gc_idtab *t)
{
    for (int s = 0; s < t->cap; s++)
        if (t->slot[s].live)
            free_slot(t, s);
}

void gc_idtab_destroy(gc_idtab *t)
{
    free(t->slot);
    free(t->obj);
    t->slot = NULL;
    t->obj = NULL;
    t->cap = t->nlive = 0;
    t->free_head = t->free_tail = -1;
}

/* ------------------------------------------------ calls that lock ---- */

int gc_idtab_get(gc_idtab *t, int id, void *out)
{
    pthread_mutex_lock(t->lock);
    void *p = gc_idtab_at(t, id);
    if (p)
        memcpy(out, p, t->objsize);
    pthread_mutex_unlock(t->lock);
    return p ? 0 : GFS_EBADID;
}

int gc_idtab_insert(gc_idtab *t, const void *obj)
{
    pthread_mutex_lock(t->lock);
    int id = gc_idtab_add(t, obj);
    pthread_mutex_unlock(t->lock);
    return id;
}

int gc_idtab_take(gc_idtab *t, int id, void *out)
{
    pthread_mutex_lock(t->lock);
    int s = live_slot(t, id);
    if (s >= 0) {
        if (out)
            memcpy(out, t->obj + (size_t)s * t->objsize, t->objsize);
        free_slot(t, s);
    }
    pthread_mutex_unlock(t->lock);
    return s < 0 ? GFS_EBADID : 0;
}
