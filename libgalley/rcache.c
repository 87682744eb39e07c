/*
 * rcache.c -- the records this process created or looked up, by name, so
 * that an open or a stat of a file it knows need not wait for the record
 * before asking the subfiles' servers: it sends the lookup and the
 * subfile requests (with the cached header ids) at once, and uses the
 * answers only when the record that comes back is the cached one (same
 * servers, same header ids, same attributes).  Otherwise it throws them
 * away and goes on from the fresh record: the cache saves round trips,
 * never decides anything (striped.c).  A replicated file's record is
 * never kept (gc_rcache_put drops it): which of its copies are in sync is
 * part of it, and only a majority lookup (repl.c) may say.
 *
 * A direct-mapped table of RC_SLOTS entries by the name's hash; an entry
 * holds only the used part of a record.  Cleared at gfs_finalize.
 *
 * Threads: any; rc_lock, a leaf lock, around every access.
 */
#include "internal.h"
#include "fnv.h"

#include <stdlib.h>
#include <string.h>

#define RC_SLOTS 4096

typedef struct rc_ent {
    char *name;
    uint32_t nsub, attrlen;
    uint32_t *server;
    uint64_t *hid;
    char *attrs;
} rc_ent;

static pthread_mutex_t rc_lock = PTHREAD_MUTEX_INITIALIZER;
static rc_ent rc_tab[RC_SLOTS];

static void ent_clear(rc_ent *e)
{
    free(e->name);
    free(e->server);
    free(e->hid);
    free(e->attrs);
    memset(e, 0, sizeof(*e));
}

static rc_ent *slot(const char *name)
{
    return &rc_tab[g_fnv1a(name) % RC_SLOTS];
}

void gc_rcache_put(const char *name, const gp_record *rec)
{
    if (rec->repl.ncopy > 1) {
        /* a replicated file's record is the newest of a majority of its
         * copies (repl.c: gc_repl_lookup), and which of its copies are in
         * sync is part of it: never taken from here */
        gc_rcache_drop(name);
        return;
    }
    rc_ent n = {0};
    n.name = strdup(name);
    n.server = malloc((rec->nsub ? rec->nsub : 1) * sizeof(*n.server));
    n.hid = malloc((rec->nsub ? rec->nsub : 1) * sizeof(*n.hid));
    n.attrs = malloc((size_t)rec->attrlen + 1);
    if (!n.name || !n.server || !n.hid || !n.attrs) {
        ent_clear(&n);
        gc_rcache_drop(name); /* never keep an older one instead */
        return;
    }
    n.nsub = rec->nsub;
    n.attrlen = rec->attrlen;
    memcpy(n.server, rec->server, rec->nsub * sizeof(*n.server));
    memcpy(n.hid, rec->hid, rec->nsub * sizeof(*n.hid));
    memcpy(n.attrs, rec->attrs, (size_t)rec->attrlen + 1);
    pthread_mutex_lock(&rc_lock);
    rc_ent *e = slot(name);
    ent_clear(e);
    *e = n;
    pthread_mutex_unlock(&rc_lock);
}

bool gc_rcache_get(const char *name, gp_record *rec)
{
    bool hit = false;
    pthread_mutex_lock(&rc_lock);
    rc_ent *e = slot(name);
    if (e->name && strcmp(e->name, name) == 0) {
        rec->nsub = e->nsub;
        rec->attrlen = e->attrlen;
        memcpy(rec->server, e->server, e->nsub * sizeof(*e->server));
        memcpy(rec->hid, e->hid, e->nsub * sizeof(*e->hid));
        memcpy(rec->attrs, e->attrs, (size_t)e->attrlen + 1);
        hit = true;
    }
    pthread_mutex_unlock(&rc_lock);
    return hit;
}

void gc_rcache_drop(const char *name)
{
    pthread_mutex_lock(&rc_lock);
    rc_ent *e = slot(name);
    if (e->name && strcmp(e->name, name) == 0)
        ent_clear(e);
    pthread_mutex_unlock(&rc_lock);
}

void gc_rcache_clear(void)
{
    pthread_mutex_lock(&rc_lock);
    for (size_t i = 0; i < RC_SLOTS; i++)
        ent_clear(&rc_tab[i]);
    pthread_mutex_unlock(&rc_lock);
}

bool gc_record_same(const gp_record *a, const gp_record *b)
{
    /* (a replicated record is never cached: never the same) */
    return a->repl.ncopy <= 1 && b->repl.ncopy <= 1 && a->nsub == b->nsub &&
           a->attrlen == b->attrlen &&
           memcmp(a->server, b->server, a->nsub * sizeof(*a->server)) == 0 &&
           memcmp(a->hid, b->hid, a->nsub * sizeof(*a->hid)) == 0 &&
           memcmp(a->attrs, b->attrs, a->attrlen) == 0;
}
