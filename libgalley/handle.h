/*
 * handle.h -- the one id table of the client: file ids, fork ids, striped
 * file ids and non-blocking handles are all slots of a gc_idtab.
 *
 * An id is a non-negative int made of three fields:
 *
 *     bits  0..17  slot         index into the table (262,144 per kind)
 *     bits 18..20  kind         GC_KIND_*, never 0
 *     bits 21..30  generation   bumped each time the slot is freed
 *
 * so an id names one object for that object's whole life: once it is
 * closed, the id is refused (GFS_EBADID) even after its slot holds a new
 * object, and an id of one kind (a striped id) is refused where another
 * (a fork id) is expected.  Free slots are reused oldest-freed first, so
 * a stale id could alias a new object only after its slot has been reused
 * 1024 times (the generation wraps), and the free slots are taken in turn.
 * Numbers below 2^18, such as 0, 4096 or 99999, have kind 0 and are never
 * ids.
 *
 * Objects are stored by value (objsize bytes each) in one array that grows
 * by doubling, so a pointer from gc_idtab_at is good only while the lock is
 * held and nothing is added.
 *
 * Threads: a table does not lock by itself.  Each table names the mutex of
 * its owner (client.c: gc_g.lock for files and forks; striped.c: st_lock;
 * nb.c: nb_lock), and every gc_idtab_* call without "takes the lock" in its
 * comment must be made holding it.  No call blocks; only gc_idtab_add
 * allocates (when the table grows).
 */
#ifndef GALLEY_HANDLE_H
#define GALLEY_HANDLE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define GC_ID_SLOT_BITS 18
#define GC_ID_KIND_BITS 3
#define GC_ID_GEN_BITS 10
#define GC_ID_MAX_SLOTS (1 << GC_ID_SLOT_BITS)

/* The fields of an id (for tests and messages; tables do the checking). */
#define GC_ID_SLOT(id) ((int)((unsigned)(id) & (GC_ID_MAX_SLOTS - 1)))
#define GC_ID_KIND(id)                                                         \
    ((int)(((unsigned)(id) >> GC_ID_SLOT_BITS) & ((1u << GC_ID_KIND_BITS) - 1)))
#define GC_ID_GEN(id)                                                          \
    ((int)((unsigned)(id) >> (GC_ID_SLOT_BITS + GC_ID_KIND_BITS)))

enum gc_kind {
    GC_KIND_FILE = 1,    /* gfs_open_file        */
    GC_KIND_FORK = 2,    /* gfs_open_fork        */
    GC_KIND_STRIPED = 3, /* gfs_striped_open     */
    GC_KIND_NB = 4,      /* gfs_new_handle       */
};

typedef struct gc_idslot {
    uint16_t gen; /* generation of the slot's current (or next) object */
    uint8_t live; /* holds an object */
    int32_t next; /* free list link (slot), -1 = end */
} gc_idslot;

typedef struct gc_idtab {
    pthread_mutex_t *lock; /* the owner's mutex; guards everything below */
    size_t objsize;
    int kind;      /* enum gc_kind */
    int first_cap; /* slots at the first growth */
    int cap;       /* slots allocated */
    int nlive;
    int free_head; /* oldest free slot, -1 none */
    int free_tail; /* newest free slot, -1 none */
    gc_idslot *slot;
    unsigned char *obj; /* cap * objsize bytes */
} gc_idtab;

/* A table of objects of `type`, guarded by *lockp, starting at cap slots. */
#define GC_IDTAB_INIT(lockp, type, kindv, cap)                                 \
    {                                                                          \
        .lock = (lockp), .objsize = sizeof(type), .kind = (kindv),             \
        .first_cap = (cap), .free_head = -1, .free_tail = -1                   \
    }

/* Store a copy of *obj in a free slot; returns its id, or -ENOMEM, or
 * -EMFILE when all GC_ID_MAX_SLOTS slots are live. */
int gc_idtab_add(gc_idtab *t, const void *obj);

/* The live object named by id, or NULL (negative, unknown, closed, or of
 * another kind). */
void *gc_idtab_at(gc_idtab *t, int id);

/* Free the object named by id (its id becomes stale); 0 or GFS_EBADID. */
int gc_idtab_remove(gc_idtab *t, int id);

/* The id of the first live object in a slot after id's slot (id -1: from
 * the first slot), or -1.  id need not be live, so a loop may remove the
 * object it is at:  for (id = -1; (id = gc_idtab_next(t, id)) >= 0;). */
int gc_idtab_next(const gc_idtab *t, int id);

/* Number of live objects. */
int gc_idtab_count(const gc_idtab *t);

/* Free every object (their ids become stale).  The generations are kept,
 * so ids from before stay refused after the table fills again. */
void gc_idtab_clear(gc_idtab *t);

/* Free the table's memory and forget its generations. */
void gc_idtab_destroy(gc_idtab *t);

/* Takes the lock: copy the object named by id to *out; 0 or GFS_EBADID. */
int gc_idtab_get(gc_idtab *t, int id, void *out);

/* Takes the lock: gc_idtab_add. */
int gc_idtab_insert(gc_idtab *t, const void *obj);

/* Takes the lock: copy the object named by id to *out (if out is not
 * NULL) and free it, at once, so of two threads closing one id exactly
 * one gets it; 0 or GFS_EBADID. */
int gc_idtab_take(gc_idtab *t, int id, void *out);

#endif /* GALLEY_HANDLE_H */
