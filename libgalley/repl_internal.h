/*
 * repl_internal.h -- private to the replication units (repl.c,
 * repl_io.c, repl_repair.c): what they share.
 */
#ifndef GALLEY_REPL_INTERNAL_H
#define GALLEY_REPL_INTERNAL_H

#include "internal.h"
#include "route.h"

#define REPL_GEN_KEY "galley.repl.gen"
/* the writers' lock: one block number nobody claims */
#define REPL_LOCK_OFF (UINT64_MAX - 1)

/* repl.c: the record */
void gc_repl_record_heal(const char *name, const gp_record *rec);
void gc_repl_counter_publish(const gp_record *rec);
int gc_repl_record_set(const char *name, int sub, int copy, int state,
                       uint64_t hid, uint64_t dsid, gp_record *out);
void gc_repl_cache_record(const char *name, const gp_record *rec);
int gc_repl_server_dsid(int server, uint64_t *dsid);
/* repl_io.c */
int gc_repl_copy_open(const gp_record *rec, int s, int c, const char *fork,
                      uint64_t *fkid);
/* repl_repair.c: this process's replicated writers hold it shared, a
 * repair or resync exclusively (repl_repair.c: xlock) */
extern pthread_rwlock_t gc_repl_local_writers;
void gc_repl_repair_after_read(int kid, int c, const gc_xfer *x);

#endif /* GALLEY_REPL_INTERNAL_H */
