/*
 * ns_ops.c -- the NameServer's handlers (NS_RESERVE, NS_COMMIT,
 * NS_COMMIT_LEASE, NS_RELEASE, NS_LOOKUP, NS_REMOVE, NS_LIST, NS_SETATTR,
 * NS_REPL_SET; the lease ops are ns_lease.c's) over the table of names
 * (nameserver.c states the scheme).
 *
 * Threads: handler threads.  Each takes ns.lock (a leaf lock) around its
 * look-up and change, record write included; the handler waits for the
 * metadata log after (handler.c).
 */
#include "ns_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int gsrv_do_NS_RESERVE(gsrv_conn *c, const gp_NS_RESERVE_req *m,
                       gp_NS_RESERVE_rep *r, gsrv_call *k)
{
    int rc;
    uint64_t h;
    ns_ent *e = ns_lock_find(m->name, NULL, &h);
    if (e) {
        rc = -EEXIST;
    } else {
        rc = ns_insert(m->name, h, &e);
        if (!rc)
            e->owner = c->id;
    }
    pthread_mutex_unlock(&ns.lock);
    return rc;
}

/* NS_COMMIT, and (client != 0) a lease on the record for that client. */
static int commit(gsrv_conn *c, const char *name, const gp_record *rec,
                  uint64_t client, uint32_t *lease)
{
    int rc = 0;
    uint64_t h;
    bool created = false;
    ns_ent *e = ns_lock_find(name, NULL, &h);
    if (e && e->committed) {
        rc = -EEXIST;
        goto out_unlock;
    }
    if (!e) {
        rc = ns_insert(name, h, &e);
        if (rc)
            goto out_unlock;
        created = true;
    }
    uint64_t id = ns.next_id;
    rc = ns_ent_set_record(e, rec, rec->attrs, rec->attrlen);
    if (!rc)
        rc = ns_write_record(id, name, rec);
    if (rc) {
        if (created) {
            ns_unlink(e);
        } else {
            ns_ent_free_record(e); /* stays a reservation */
        }
        goto out_unlock;
    }
    ns.next_id++;
    ns_mark_committed(e, id);
    if (client)
        *lease = ns_lease_grant(c, e, client);
out_unlock:
    pthread_mutex_unlock(&ns.lock);
    return rc;
}

int gsrv_do_NS_COMMIT(gsrv_conn *c, const gp_NS_COMMIT_req *m,
                      gp_NS_COMMIT_rep *r, gsrv_call *k)
{
    return commit(c, m->name, m->rec, 0, NULL);
}

int gsrv_do_NS_COMMIT_LEASE(gsrv_conn *c, const gp_NS_COMMIT_LEASE_req *m,
                            gp_NS_COMMIT_LEASE_rep *r, gsrv_call *k)
{
    int rc = m->client ? commit(c, m->name, m->rec, m->client, &r->lease_ms)
                       : -EINVAL;
    r->epoch = ns.epoch;
    return rc;
}

int gsrv_do_NS_RELEASE(gsrv_conn *c, const gp_NS_RELEASE_req *m,
                       gp_NS_RELEASE_rep *r, gsrv_call *k)
{
    int rc = 0;
    ns_ent *e = ns_lock_find(m->name, NULL, NULL);
    if (e && !e->committed)
        ns_unlink(e);
    else
        rc = -ENOENT; /* nothing reserved under that name */
    pthread_mutex_unlock(&ns.lock);
    return rc;
}

int gsrv_do_NS_LOOKUP(gsrv_conn *c, const gp_NS_LOOKUP_req *m,
                      gp_NS_LOOKUP_rep *r, gsrv_call *k)
{
    ns_ent *e = ns_lock_record(m->name, NULL, r->rec);
    pthread_mutex_unlock(&ns.lock);
    return e ? 0 : -ENOENT;
}

int gsrv_do_NS_REMOVE(gsrv_conn *c, const gp_NS_REMOVE_req *m,
                      gp_NS_REMOVE_rep *r, gsrv_call *k)
{
    ns_ent *e = ns_lock_record(m->name, c, r->rec); /* others' leases first */
    int rc = e ? ns_remove_record(e->id) : -ENOENT;
    if (!rc)
        ns_unlink(e);
    pthread_mutex_unlock(&ns.lock);
    return rc;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int gsrv_do_NS_LIST(gsrv_conn *c, const gp_NS_LIST_req *m, gp_NS_LIST_rep *r,
                    gsrv_call *k)
{
    int rc = 0;
    const char *prefix = m->prefix;
    size_t plen = strlen(prefix);

    pthread_mutex_lock(&ns.lock);
    size_t n = 0;
    uint64_t bytes = 4;
    char **names = malloc((ns.ncommitted ? ns.ncommitted : 1) * sizeof(*names));
    if (!names) {
        rc = -ENOMEM;
        goto out_unlock;
    }
    gsrv_ht_iter it = {0};
    for (gsrv_hlink *l; (l = gsrv_ht_next(&ns.tab, &it));) {
        ns_ent *e = GSRV_HT_ENTRY(l, ns_ent, hlink);
        if (e->committed && strncmp(e->name, prefix, plen) == 0) {
            names[n++] = e->name;
            bytes += 2 + strlen(e->name);
        }
    }
    if (n > GP_MAX_NAMES || bytes > GP_MAX_PAYLOAD) {
        rc = GFS_ETOOBIG;
        goto out_free_names;
    }
    qsort(names, n, sizeof(*names), cmp_name);
    r->n = (uint32_t)n;
    gp_wbuf *w = gsrv_reply_fields(k);
    for (size_t i = 0; i < n; i++)
        gp_NAME_item_encode(w, &(gp_NAME_item){.name = names[i]});
out_free_names:
    free(names);
out_unlock:
    pthread_mutex_unlock(&ns.lock);
    return rc;
}

int gsrv_do_NS_SETATTR(gsrv_conn *c, const gp_NS_SETATTR_req *m,
                       gp_NS_SETATTR_rep *r, gsrv_call *k)
{
    uint32_t alen = m->attrs_len;
    int rc = ns_check_attrs(m->attrs, alen);
    if (rc)
        return rc;
    gp_record *rec = malloc(sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    ns_ent *e = ns_lock_record(m->name, c, rec); /* others' leases first */
    if (e) {
        if (alen)
            memcpy(rec->attrs, m->attrs, alen);
        rec->attrs[alen] = '\0';
        rec->attrlen = alen;
        rc = ns_ent_replace(e, rec);
    } else {
        rc = -ENOENT;
    }
    pthread_mutex_unlock(&ns.lock);
    free(rec);
    return rc;
}

/* The copies of a replicated file: replaced only by a newer generation
 * (gmsg.h), so that of two clients deciding from the same record one
 * wins and the other decides again from the new one.  Only the replica
 * part changes (and copy 0's header, rebuilt by resync on a wiped
 * server): the servers of copy 0 and the attributes stay. */
int gsrv_do_NS_REPL_SET(gsrv_conn *c, const gp_NS_REPL_SET_req *m,
                        gp_NS_REPL_SET_rep *r, gsrv_call *k)
{
    const gp_record *in = m->rec;
    gp_record *rec = malloc(sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    int rc = 0;
    uint64_t gen = 0;
    ns_ent *e = ns_lock_find(m->name, NULL, NULL);
    if (e && e->committed && !e->repl && e->nhold) {
        /* one copy so far: other clients may hold it leased */
        ns_lease_break(c, m->name, g_fnv1a(m->name));
        e = ns_find(m->name, g_fnv1a(m->name));
    }
    if (!e || !e->committed) {
        rc = -ENOENT;
        goto out_unlock;
    }
    ns_ent_to_record(e, rec);
    gen = rec->repl.gen;
    if (rec->repl.ncopy <= 1 || in->repl.ncopy != rec->repl.ncopy ||
        in->nsub != rec->nsub ||
        memcmp(in->server, rec->server, rec->nsub * sizeof(*rec->server))) {
        rc = -EINVAL; /* not this file's layout */
        goto out_unlock;
    }
    if (in->repl.gen <= rec->repl.gen) {
        rc = GFS_ESTALEGEN;
        goto out_unlock;
    }
    rec->repl = in->repl;
    /* copy 0's header moves when its server's directory was rebuilt */
    memcpy(rec->hid, in->hid, rec->nsub * sizeof(*rec->hid));
    rc = ns_ent_replace(e, rec);
    if (rc)
        goto out_unlock;
    gen = rec->repl.gen;
out_unlock:
    pthread_mutex_unlock(&ns.lock);
    r->gen = gen;
    free(rec);
    return rc;
}
