/*
 * striped_internal.h -- private to the striped layer (striped.c and the
 * units cut from it: striped_lock.c, striped_size.c, striped_io.c): a
 * striped open's table entry, the table, and what the units share.
 *
 * Threads: gc_st_lock guards gc_st_tab; it is taken only around table
 * access, never across network calls.
 */
#ifndef GALLEY_STRIPED_INTERNAL_H
#define GALLEY_STRIPED_INTERNAL_H

#include "internal.h"
#include "layout.h"
#include "transport.h"

typedef struct gc_striped {
    int fid;
    gfs_layout lay;
    int kids[GFS_MAX_SUBFILES]; /* -1: not opened yet (st_forks) */
    gc_local *loc;  /* the locality layout's maps, NULL when striped */
    unsigned asked; /* bit 1 << op: striped_ask_all done for op */
    gc_reader *rd;  /* its forks' reader (fast_read), or NULL */
    uint64_t rd_ns; /* when rd was last built (0: never) */
} gc_striped;

extern pthread_mutex_t gc_st_lock;
extern gc_idtab gc_st_tab;

/* A copy of open sid's entry (striped.c). */
int gc_st_get(int sid, gc_striped *out);
/* Open the forks of the subfiles s wants (want NULL: every subfile) that
 * are not open yet; failed[i] set for those that could not be
 * (striped.c: lazy forks). */
int gc_st_forks(int sid, gc_striped *s, const bool *want, bool *failed);
/* Subfile sub's fork opened ahead of the op that moves its bytes
 * (striped.c: a fork opened ahead): the FORK_OPEN sent, *k the fork with
 * a handle naming that request, *a what attaching it to the op (or
 * gc_st_ahead_attach(NULL, a), when there is no op) finishes.
 * GC_DECLINE: open it with gc_st_forks. */
typedef struct gc_ahead gc_ahead;
int gc_st_ahead(int sid, const gc_striped *s, int sub, gc_fork *k,
                gc_ahead **a);
void gc_st_ahead_attach(gc_op *o, gc_ahead *a);
/* The layout a record describes, and whether it is the locality layout
 * (striped.c). */
int gc_st_layout_of(const gp_record *rec, gfs_layout *lay);
bool gc_st_is_local_layout(const gp_record *rec);
/* A striped open of file fid, its forks kids (NULL: none opened yet)
 * (striped.c). */
int gc_st_from_fid(int fid, const int *kids);
/* The logical size of a striped file whose forks have these sizes, and
 * the sizes of open s's forks (striped_size.c). */
int64_t gc_st_logical_size(const gfs_layout *lay, const int64_t *sizes);
int gc_st_fork_sizes(int sid, gc_striped *s, int64_t *sizes, int64_t *mtimes);
/* Stat-ahead: called by a stat whose record or size is not cached; true
 * when it fetched name's directory, so that the cache may now hold it
 * (statahead.c). */
bool gc_statahead(const char *name);

#endif /* GALLEY_STRIPED_INTERNAL_H */
