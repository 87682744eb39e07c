/*
 * ns_lease.c -- record leases of the NameServer (nameserver.c states the
 * table they hang on), and NS_LEASE, NS_RENEW, NS_LET_GO.
 *
 * A client that holds a record lease may answer a stat or an open of
 * the name from its cache, without asking (libgalley/rcache.c).  So a
 * change of the record by anyone else (NS_REMOVE, NS_SETATTR,
 * NS_REPL_SET) first recalls the leases of the other clients and waits
 * until each is acknowledged or has run out (a client that stopped
 * renewing: at most lease_ms).  A client keeps one NS_RENEW waiting here
 * (wait_ms, on a connection of its own, so its handler thread may block
 * in it): a recall answers it at once, and the client acknowledges in
 * the next one, a round trip after the recall.  The holder's own lease (the
 * same client id on this connection) goes at once: its library dropped it
 * first. While a recall is waiting, no new lease is granted on that name.  The
 * leases live in memory only: for lease_ms after a start, a change of a
 * record that was there at the start waits as if a lease were live (a
 * restarted server does not know who held one; a record made since has
 * only the leases it granted), and a renewal from a client it does not
 * know says so
 * (known 0: the client drops every lease it had here).
 */
#include "ns_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static ns_client *client_find(uint64_t id)
{
    for (size_t i = 0; i < ns.nclient; i++)
        if (ns.client[i].id == id)
            return &ns.client[i];
    return NULL;
}

static ns_client *client_get(uint64_t id)
{
    ns_client *k = client_find(id);
    if (k)
        return k;
    /* reuse the slot of a client long gone (nothing recalled left) */
    int64_t now = g_now_ms();
    for (size_t i = 0; i < ns.nclient; i++) {
        k = &ns.client[i];
        if (k->until + 10 * ns.lease_ms < now && !k->nrecall) {
            free(k->recall);
            memset(k, 0, sizeof(*k));
            k->id = id;
            return k;
        }
    }
    if (ns.nclient == ns.capclient) {
        size_t cap = ns.capclient ? ns.capclient * 2 : 16;
        ns_client *n = realloc(ns.client, cap * sizeof(*n));
        if (!n)
            return NULL;
        ns.client = n;
        ns.capclient = cap;
    }
    k = &ns.client[ns.nclient++];
    memset(k, 0, sizeof(*k));
    k->id = id;
    return k;
}

/* Grant client `id` a lease on committed entry e: the lease in ms, or 0
 * (none: leases off, a replicated record, a recall waiting, no memory). */
uint32_t ns_lease_grant(gsrv_conn *c, ns_ent *e, uint64_t id)
{
    if (!ns.lease_ms || !id || e->repl)
        return 0;
    for (uint32_t i = 0; i < e->nhold; i++)
        if (e->hold[i].rseq)
            return 0;
    ns_client *k = client_get(id);
    if (!k)
        return 0;
    bool have = false;
    for (uint32_t i = 0; i < e->nhold && !have; i++)
        if (e->hold[i].client == id) {
            e->hold[i].gen = k->gen; /* (one it let go is granted anew) */
            have = true;
        }
    if (!have) {
        if (e->nhold == e->caphold) {
            uint32_t cap = e->caphold ? e->caphold * 2 : 2;
            ns_hold *n = realloc(e->hold, cap * sizeof(*n));
            if (!n)
                return 0;
            e->hold = n;
            e->caphold = cap;
        }
        e->hold[e->nhold++] = (ns_hold){.client = id, .gen = k->gen};
    }
    k->until = g_now_ms() + ns.lease_ms;
    c->md_client = id;
    return (uint32_t)ns.lease_ms;
}

static void hold_del(ns_ent *e, uint32_t i)
{
    e->hold[i] = e->hold[--e->nhold];
}

/* Recall hold d of client k on name: its NS_RENEW answers with it.  No
 * memory: the lease runs out instead (ns.lock). */
static void recall_one(ns_client *k, ns_hold *d, const char *name)
{
    if (k->nrecall == k->caprecall) {
        size_t cap = k->caprecall ? k->caprecall * 2 : 8;
        struct ns_recall *n = realloc(k->recall, cap * sizeof(*n));
        if (n) {
            k->recall = n;
            k->caprecall = cap;
        }
    }
    char *copy = strdup(name);
    if (k->nrecall < k->caprecall && copy) {
        d->rseq = ++k->seq;
        d->frozen = k->until;
        k->recall[k->nrecall++] =
            (struct ns_recall){.name = copy, .seq = d->rseq};
        pthread_cond_broadcast(&ns.recall); /* its NS_RENEW */
    } else {
        free(copy);
        d->rseq = ~0ull;
        d->frozen = k->until;
    }
}

/* Client k's other leases on files of name's directory, recalled with
 * the one on name (at most every NS_DIR_RECALL_MS for a client; ns.lock):
 * a process removing or changing a directory's files one after another
 * (rm -r, mdtest's remove phase) then waits for one acknowledgement of
 * another process's leases there, not one per file, as a change in a
 * directory revokes what other Lustre clients hold on it.  The holder
 * asks again for what it uses afterwards (one NS_LEASE, or a stat-ahead
 * fetch).  The scan goes over the whole table, hence the limit. */
#define NS_DIR_RECALL_MS 100
static void recall_dir(ns_client *k, const char *name)
{
    int64_t now = g_now_ms();
    if (now - k->dir_recall_at < NS_DIR_RECALL_MS)
        return;
    k->dir_recall_at = now;
    const char *slash = strrchr(name, '/');
    size_t dlen = slash ? (size_t)(slash - name) + 1 : 0;
    gsrv_ht_iter it = {0};
    for (gsrv_hlink *l; (l = gsrv_ht_next(&ns.tab, &it));) {
        ns_ent *e = GSRV_HT_ENTRY(l, ns_ent, hlink);
        if (!e->nhold || strncmp(e->name, name, dlen) != 0 ||
            strchr(e->name + dlen, '/'))
            continue;
        for (uint32_t i = 0; i < e->nhold; i++) {
            ns_hold *d = &e->hold[i];
            if (d->client == k->id && !d->rseq && d->gen == k->gen &&
                now < k->until)
                recall_one(k, d, e->name);
        }
    }
}

/* Recall the leases of other clients on `name` and wait until none is
 * live; the connection's own goes at once.  Called and returns with
 * ns.lock held; the entry may be gone or another after: find it again. */
void ns_lease_break(gsrv_conn *c, const char *name, uint64_t h)
{
    for (;;) {
        int64_t now = g_now_ms();
        ns_ent *e = ns_find(name, h);
        bool wait = e && e->loaded && now < ns.grace; /* (made since: none) */
        for (uint32_t i = 0; e && i < e->nhold;) {
            ns_hold *d = &e->hold[i];
            ns_client *k = client_find(d->client);
            if (!k || d->client == c->md_client || d->gen != k->gen ||
                now >= (d->rseq ? d->frozen : k->until)) {
                hold_del(e, i); /* its own, let go, or run out */
                continue;
            }
            if (!d->rseq)
                recall_dir(k, name);
            if (!d->rseq)
                recall_one(k, d, name);
            wait = true;
            i++;
        }
        if (!wait)
            return;
        struct timespec ts = g_deadline_ms(20);
        pthread_cond_timedwait(&ns.cv, &ns.lock, &ts);
    }
}

/* Client k acknowledged its recalls up to `acked`: those leases go. */
static void lease_acked(ns_client *k, uint64_t acked)
{
    size_t j = 0;
    for (size_t i = 0; i < k->nrecall; i++) {
        struct ns_recall *r = &k->recall[i];
        if (r->seq > acked) {
            k->recall[j++] = *r;
            continue;
        }
        ns_ent *e = ns_find(r->name, g_fnv1a(r->name));
        for (uint32_t x = 0; e && x < e->nhold; x++)
            if (e->hold[x].client == k->id && e->hold[x].rseq == r->seq) {
                hold_del(e, x);
                break;
            }
        free(r->name);
    }
    k->nrecall = j;
    pthread_cond_broadcast(&ns.cv);
}

/* name's record into *rec and a lease on it for client (*lease_ms, 0:
 * none), or -ENOENT. */
static int lease_one(gsrv_conn *c, const char *name, uint64_t client,
                     gp_record *rec, uint32_t *lease_ms)
{
    ns_ent *e = ns_lock_record(name, NULL, rec);
    *lease_ms = e ? ns_lease_grant(c, e, client) : 0;
    pthread_mutex_unlock(&ns.lock);
    return e ? 0 : -ENOENT;
}

int gsrv_do_NS_LEASE(gsrv_conn *c, const gp_NS_LEASE_req *m, gp_NS_LEASE_rep *r,
                     gsrv_call *k)
{
    if (!m->client)
        return -EINVAL;
    int rc = lease_one(c, m->name, m->client, r->rec, &r->lease_ms);
    r->epoch = ns.epoch;
    return rc;
}

/* Each name's record and a lease on it, as NS_LEASE of each (stat-ahead:
 * libgalley/statahead.c). */
int gsrv_do_NS_LEASE_MANY(gsrv_conn *c, const gp_NS_LEASE_MANY_req *m,
                          gp_NS_LEASE_MANY_rep *r, gsrv_call *k)
{
    if (!m->client)
        return -EINVAL;
    const char *names = (const char *)m->names, *end = names + m->names_len;
    if (m->names_len && end[-1])
        return -EINVAL; /* (the last name unterminated) */
    uint32_t n = 0;
    for (const char *p = names; p < end; p += strlen(p) + 1, n++)
        if (strlen(p) > GFS_NAME_MAX || n == GP_MAX_LEASES)
            return -EINVAL;
    gp_record *rec = malloc(sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    r->n = n;
    r->epoch = ns.epoch;
    gp_wbuf *w = gsrv_reply_fields(k);
    for (const char *p = names; p < end; p += strlen(p) + 1) {
        gp_LEASED_item it;
        int rc = lease_one(c, p, m->client, rec, &it.lease_ms);
        it.err = (uint32_t)-rc;
        gp_LEASED_item_encode(w, &it);
        if (!rc)
            gp_put_record(w, rec);
    }
    free(rec);
    return 0;
}

/* NS_RENEW and NS_LET_GO: ns.lock taken, and the known client of id (or
 * NULL); -EINVAL (nothing locked) for id 0, which names no client. */
static int lock_client(uint64_t id, ns_client **k)
{
    if (!id)
        return -EINVAL;
    pthread_mutex_lock(&ns.lock);
    *k = client_find(id);
    return 0;
}

/* Hold an NS_RENEW of client id until a name of its is recalled, it let
 * its leases go, the server stops, or wait_ms (at most half a lease) went
 * by; its leases are renewed again then.  The client, found again (the
 * table may have moved), or NULL (ns.lock held). */
static ns_client *renew_wait(uint64_t id, uint32_t wait_ms)
{
    int64_t ms = wait_ms < ns.lease_ms / 2 ? wait_ms : ns.lease_ms / 2;
    int64_t end = g_now_ms() + ms;
    ns_client *k = client_find(id);
    uint32_t gen = k ? k->gen : 0;
    while (k && !k->nrecall && k->gen == gen && !gsrv_g.stopping) {
        int64_t left = end - g_now_ms();
        if (left <= 0)
            break;
        /* (a stop is seen within 100 ms: it signals nothing here) */
        struct timespec ts = g_deadline_ms(left < 100 ? left : 100);
        pthread_cond_timedwait(&ns.recall, &ns.lock, &ts);
        k = client_find(id);
    }
    if (k)
        k->until = g_now_ms() + ns.lease_ms;
    return k;
}

int gsrv_do_NS_RENEW(gsrv_conn *c, const gp_NS_RENEW_req *m, gp_NS_RENEW_rep *r,
                     gsrv_call *call)
{
    ns_client *k;
    int rc = lock_client(m->client, &k);
    if (rc)
        return rc;
    uint8_t known = k != NULL;
    if (k)
        lease_acked(k, m->acked);
    else
        k = client_get(m->client);
    if (k)
        k->until = g_now_ms() + ns.lease_ms;
    c->md_client = m->client;
    if (known && m->wait_ms && !k->nrecall)
        k = renew_wait(m->client, m->wait_ms);
    uint32_t n = k ? (uint32_t)k->nrecall : 0;
    *r = (gp_NS_RENEW_rep){.lease_ms = (uint32_t)ns.lease_ms,
                           .epoch = ns.epoch,
                           .known = known,
                           .seq = k ? k->seq : 0,
                           .n = n};
    gp_wbuf *w = gsrv_reply_fields(call);
    for (uint32_t i = 0; i < n; i++)
        gp_NAME_item_encode(w, &(gp_NAME_item){.name = k->recall[i].name});
    pthread_mutex_unlock(&ns.lock);
    return 0;
}

/* NS_LET_GO: a client lets every lease it holds here go (it used none of
 * them for a while, or it ends: libgalley/rcache.c), and with them the
 * recalls it has not acknowledged: a change waiting for them goes on at
 * once.  Its later renewals and leases never bring the old ones back
 * (gen). */
int gsrv_do_NS_LET_GO(gsrv_conn *c, const gp_NS_LET_GO_req *m,
                      gp_NS_LET_GO_rep *r, gsrv_call *call)
{
    ns_client *k;
    int rc = lock_client(m->client, &k);
    if (rc)
        return rc;
    if (k) {
        lease_acked(k, k->seq);             /* (wakes the changes waiting) */
        k->gen++;                           /* and the others are gone */
        pthread_cond_broadcast(&ns.recall); /* its NS_RENEW answers */
    }
    pthread_mutex_unlock(&ns.lock);
    return 0;
}
