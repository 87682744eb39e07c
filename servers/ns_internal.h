/*
 * ns_internal.h -- private to the NameServer of galleyd: nameserver.c (the
 * table of names, the records in the metadata table, start-up),
 * ns_lease.c (record leases, NS_LEASE / NS_RENEW / NS_LET_GO) and
 * ns_ops.c (the other NS_* handlers).  nameserver.c's comment states the
 * scheme; every function here but ns_lock_find and ns_lock_record is
 * called with ns.lock held.
 */
#ifndef GSRV_NS_INTERNAL_H
#define GSRV_NS_INTERNAL_H

#include "gsrv_internal.h"
#include "fnv.h"
#include "gclock.h"
#include "htable.h"

/* The copies of a replicated file's record (nameserver.c). */
typedef struct ns_repl ns_repl;

typedef struct ns_ent {
    gsrv_hlink hlink; /* in ns.tab, keyed by g_fnv1a(name) */
    char *name;
    bool committed;
    bool loaded;    /* there at this start: a lease from before may hold */
    uint64_t id;    /* record file id, when committed */
    uint64_t owner; /* reserving connection, when not committed */
    uint32_t nsub;
    uint32_t *server;
    uint64_t *hid;
    char *attrs; /* NUL-terminated, attrlen bytes */
    uint32_t attrlen;
    ns_repl *repl;        /* NULL: one copy (ns_repl_* below) */
    struct ns_hold *hold; /* record leases on it (leases below) */
    uint32_t nhold, caphold;
} ns_ent;

/* A client's lease on one record: live while its client renews (until),
 * or, once recalled, until the client's expiry at the recall (frozen) or
 * the client acknowledges the recall (then it is gone), or the client
 * lets its leases go (NS_LET_GO: gen). */
typedef struct ns_hold {
    uint64_t client;
    uint32_t gen;   /* its client's gen when granted */
    uint64_t rseq;  /* 0, or the recall's number (ns_client.seq) */
    int64_t frozen; /* recalled: live until then at most (ms, monotonic) */
} ns_hold;

/* A client holding record leases here, by its id (NS_LEASE ...). */
typedef struct ns_client {
    uint64_t id;
    int64_t until; /* its leases are live until then (ms, monotonic) */
    uint32_t gen;  /* NS_LET_GOs so far: holds of an earlier gen are gone */
    uint64_t seq;  /* last recall number */
    struct ns_recall {
        char *name;
        uint64_t seq;
    } * recall; /* names recalled, not yet acknowledged */
    size_t nrecall, caprecall;
    int64_t dir_recall_at; /* its last recall of a directory (ns_lease.c) */
} ns_client;

typedef struct ns_table {
    pthread_mutex_t lock;
    pthread_cond_t cv;     /* a lease acknowledged (NS_RENEW) */
    pthread_cond_t recall; /* a name recalled, or a client let go */
    int64_t lease_ms;      /* granted lease; 0: no leases */
    int64_t grace;         /* until then, changes wait as if leases were live */
    uint64_t epoch; /* this start's (random): leases of others are gone */
    ns_client *client;
    size_t nclient, capclient;
    gsrv_htable tab;  /* ns_ent by name */
    size_t nreserved; /* entries not committed: reservations in progress */
    uint64_t ncommitted;
    uint64_t next_id;
} ns_table;

extern ns_table ns;

/* The entries (nameserver.c). */
ns_ent *ns_find(const char *name, uint64_t h);
/* A handler's prologue on one name: take ns.lock; when brk (a change by
 * that connection), recall the leases other clients hold on the name
 * first (ns_lease_break); then find its entry (NULL: none).  *h, when h,
 * gets the name's hash.  Returns with ns.lock held. */
ns_ent *ns_lock_find(const char *name, gsrv_conn *brk, uint64_t *h);
/* ns_lock_find, then a committed entry's record into rec: the entry, or
 * NULL when the name has no committed record (-ENOENT to the client).
 * Returns with ns.lock held. */
ns_ent *ns_lock_record(const char *name, gsrv_conn *brk, gp_record *rec);
/* New entry in the table (not committed, no record). */
int ns_insert(const char *name, uint64_t h, ns_ent **out);
/* Out of the table and freed. */
void ns_unlink(ns_ent *e);
/* An entry becomes a committed record. */
void ns_mark_committed(ns_ent *e, uint64_t id);
/* Copy rec's servers/hids and the given attrs into compact arrays. */
int ns_ent_set_record(ns_ent *e, const gp_record *rec, const char *attrs,
                      uint32_t attrlen);
void ns_ent_free_record(ns_ent *e);
/* Fill a gp_record from an entry (only the used slots). */
void ns_ent_to_record(const ns_ent *e, gp_record *rec);
/* Attribute text as gp_get_record accepts it: no NUL. */
int ns_check_attrs(const uint8_t *p, uint32_t n);

/* The records in the metadata table (nameserver.c).  write: record `id`
 * for (name, rec with attrs); replace: give e the record rec (attributes
 * included), on disk and then in memory, so memory always matches the
 * disk; remove: record `id`. */
int ns_write_record(uint64_t id, const char *name, const gp_record *rec);
int ns_ent_replace(ns_ent *e, const gp_record *rec);
int ns_remove_record(uint64_t id);

/* Record leases (ns_lease.c).  grant: client `id` a lease on committed
 * entry e: the lease in ms, or 0 (none: leases off, a replicated record,
 * a recall waiting, no memory).  break: recall the leases of other
 * clients on `name` and wait until none is live; the connection's own
 * goes at once; ns.lock is dropped while waiting, so the entry may be
 * gone or another after: find it again. */
uint32_t ns_lease_grant(gsrv_conn *c, ns_ent *e, uint64_t id);
void ns_lease_break(gsrv_conn *c, const char *name, uint64_t h);

#endif /* GSRV_NS_INTERNAL_H */
