/*
 * nameserver.c -- the NameServer: records of the files whose names hash to
 * this server (the client hashes; the server stores what it is sent).
 *
 * Threads: the NS_* ops run on handler threads; gsrv_ns_init/fini on the
 * main thread.  Takes ns.lock (a leaf lock) around every access to the
 * table, including the record writes: they are not made durable here (the
 * handler waits for the metadata log, wal.c, after the lock is dropped),
 * and this keeps "check, write, log, publish" atomic.
 *
 * A name is in one of two states:
 *   reserved   in memory only, owned by the connection that reserved it and
 *              released when that connection drops (a client that dies in
 *              the middle of a create leaves nothing behind);
 *   committed  a record "ns/<id>.rec" in the metadata table (metatab.c),
 *              where <id> is a number chosen here (a record file of that
 *              name in a data directory from before the table is
 *              imported at start-up).
 * NS_COMMIT replaces a reservation (whoever holds it) and fails with
 * -EEXIST only if a committed record exists.
 *
 * A request's name was checked as it was decoded (gmsg.h: kind name), so
 * no handler checks it again.
 */
#include "gsrv_internal.h"
#include "fnv.h"
#include "gclock.h"
#include "htable.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define NS_MAGIC 0x52534e47u /* "GNSR" */
#define NS_FORMAT 2          /* 1: before replicated files (no replica part) */

/* The copies of a replicated file's record (gp_repl: servers, headers,
 * data-directory ids, states, generation), kept apart from the rest of
 * the entry; NULL for a file of one copy. */
typedef struct ns_repl {
    uint8_t ncopy;
    uint64_t gen;
    uint32_t nsub;
    uint32_t (*server)[GP_MAX_COPIES];
    uint64_t (*hid)[GP_MAX_COPIES];
    uint64_t (*dsid)[GP_MAX_COPIES];
    uint8_t (*state)[GP_MAX_COPIES];
} ns_repl;

static void ns_repl_free(ns_repl *p)
{
    if (!p)
        return;
    free(p->server);
    free(p->hid);
    free(p->dsid);
    free(p->state);
    free(p);
}

/* A compact copy of rec's replica part; *out NULL for one copy. */
static int ns_repl_from(const gp_record *rec, ns_repl **out)
{
    *out = NULL;
    if (rec->repl.ncopy <= 1)
        return 0;
    ns_repl *p = calloc(1, sizeof(*p));
    size_t n = rec->nsub;
    if (p) {
        p->server = malloc(n * sizeof(*p->server));
        p->hid = malloc(n * sizeof(*p->hid));
        p->dsid = malloc(n * sizeof(*p->dsid));
        p->state = malloc(n * sizeof(*p->state));
    }
    if (!p || !p->server || !p->hid || !p->dsid || !p->state) {
        ns_repl_free(p);
        return -ENOMEM;
    }
    p->ncopy = rec->repl.ncopy;
    p->gen = rec->repl.gen;
    p->nsub = rec->nsub;
    memcpy(p->server, rec->repl.server, n * sizeof(*p->server));
    memcpy(p->hid, rec->repl.hid, n * sizeof(*p->hid));
    memcpy(p->dsid, rec->repl.dsid, n * sizeof(*p->dsid));
    memcpy(p->state, rec->repl.state, n * sizeof(*p->state));
    *out = p;
    return 0;
}

/* Fill rec's replica part (rec's nsub, servers and hids already set). */
static void ns_repl_to(const ns_repl *p, gp_record *rec)
{
    gp_repl *r = &rec->repl;
    if (!p) {
        r->ncopy = 1;
        r->gen = 0;
        for (uint32_t i = 0; i < rec->nsub; i++) {
            r->server[i][0] = rec->server[i];
            r->hid[i][0] = rec->hid[i];
            r->dsid[i][0] = 0;
            r->state[i][0] = GP_COPY_INSYNC;
        }
        return;
    }
    size_t n = p->nsub;
    r->ncopy = p->ncopy;
    r->gen = p->gen;
    memcpy(r->server, p->server, n * sizeof(*p->server));
    memcpy(r->hid, p->hid, n * sizeof(*p->hid));
    memcpy(r->dsid, p->dsid, n * sizeof(*p->dsid));
    memcpy(r->state, p->state, n * sizeof(*p->state));
}

typedef struct ns_ent {
    gsrv_hlink hlink; /* in ns.tab, keyed by g_fnv1a(name) */
    char *name;
    bool committed;
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
 * the client acknowledges the recall (then it is gone). */
typedef struct ns_hold {
    uint64_t client;
    uint64_t rseq;  /* 0, or the recall's number (ns_client.seq) */
    int64_t frozen; /* recalled: live until then at most (ms, monotonic) */
} ns_hold;

/* A client holding record leases here, by its id (NS_LEASE ...). */
typedef struct ns_client {
    uint64_t id;
    int64_t until; /* its leases are live until then (ms, monotonic) */
    uint64_t seq;  /* last recall number */
    struct ns_recall {
        char *name;
        uint64_t seq;
    } * recall; /* names recalled, not yet acknowledged */
    size_t nrecall, caprecall;
} ns_client;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cv; /* a lease acknowledged (NS_RENEW) */
    int64_t lease_ms;  /* granted lease; 0: no leases */
    int64_t grace;     /* until then, changes wait as if leases were live */
    uint64_t epoch;    /* this start's (random): leases of others are gone */
    ns_client *client;
    size_t nclient, capclient;
    gsrv_htable tab;  /* ns_ent by name */
    size_t nreserved; /* entries not committed: reservations in progress */
    uint64_t ncommitted;
    uint64_t next_id;
} ns = {.lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* ----------------------------------------------------------- helpers ---- */

int gsrv_check_name(const char *name)
{
    return strlen(name) <= GFS_NAME_MAX && gp_name_ok(name) ? 0 : -EINVAL;
}

/* Attribute text as gp_get_record accepts it: no NUL. */
static int check_attrs(const uint8_t *p, uint32_t n)
{
    if (n > GP_ATTR_MAX)
        return GFS_EPROTO;
    if (n && memchr(p, '\0', n))
        return GFS_EPROTO;
    return 0;
}

static void ent_free_record(ns_ent *e)
{
    free(e->server);
    free(e->hid);
    free(e->attrs);
    ns_repl_free(e->repl);
    e->repl = NULL;
    e->server = NULL;
    e->hid = NULL;
    e->attrs = NULL;
    e->nsub = 0;
    e->attrlen = 0;
}

static void ent_free(ns_ent *e)
{
    if (!e)
        return;
    ent_free_record(e);
    free(e->hold);
    free(e->name);
    free(e);
}

/* Copy rec's servers/hids and the given attrs into compact arrays. */
static int ent_set_record(ns_ent *e, const gp_record *rec, const char *attrs,
                          uint32_t attrlen)
{
    uint32_t *server = malloc(rec->nsub * sizeof(*server));
    uint64_t *hid = malloc(rec->nsub * sizeof(*hid));
    char *a = malloc((size_t)attrlen + 1);
    ns_repl *repl = NULL;
    if (!server || !hid || !a || ns_repl_from(rec, &repl)) {
        free(server);
        free(hid);
        free(a);
        return -ENOMEM;
    }
    memcpy(server, rec->server, rec->nsub * sizeof(*server));
    memcpy(hid, rec->hid, rec->nsub * sizeof(*hid));
    if (attrlen)
        memcpy(a, attrs, attrlen);
    a[attrlen] = '\0';
    ent_free_record(e);
    e->nsub = rec->nsub;
    e->server = server;
    e->hid = hid;
    e->attrs = a;
    e->attrlen = attrlen;
    e->repl = repl;
    return 0;
}

/* Fill a gp_record from an entry (only the used slots). */
static void ent_to_record(const ns_ent *e, gp_record *rec)
{
    rec->nsub = e->nsub;
    memcpy(rec->server, e->server, e->nsub * sizeof(*e->server));
    memcpy(rec->hid, e->hid, e->nsub * sizeof(*e->hid));
    rec->attrlen = e->attrlen;
    memcpy(rec->attrs, e->attrs, (size_t)e->attrlen + 1);
    ns_repl_to(e->repl, rec);
}

static ns_ent *find(const char *name, uint64_t h)
{
    for (gsrv_hlink *l = gsrv_ht_chain(&ns.tab, h); l; l = l->next) {
        ns_ent *e = GSRV_HT_ENTRY(l, ns_ent, hlink);
        if (l->hash == h && strcmp(e->name, name) == 0)
            return e;
    }
    return NULL;
}

/* New entry in the table (not committed, no record). */
static int insert(const char *name, uint64_t h, ns_ent **out)
{
    ns_ent *e = calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    e->name = strdup(name);
    if (!e->name) {
        free(e);
        return -ENOMEM;
    }
    gsrv_ht_insert(&ns.tab, &e->hlink, h); /* a full table: longer chains */
    ns.nreserved++;
    *out = e;
    return 0;
}

static void unlink_ent(ns_ent *e)
{
    gsrv_ht_remove(&ns.tab, &e->hlink);
    if (e->committed)
        ns.ncommitted--;
    else
        ns.nreserved--;
    ent_free(e);
}

/* An entry becomes a committed record. */
static void mark_committed(ns_ent *e, uint64_t id)
{
    e->committed = true;
    e->id = id;
    e->owner = 0;
    ns.ncommitted++;
    ns.nreserved--;
}

/* ------------------------------------------------------------ leases ---- */
/*
 * Record leases: a client that holds one may answer a stat or an open of
 * the name from its cache, without asking (libgalley/rcache.c).  So a
 * change of the record by anyone else (NS_REMOVE, NS_SETATTR,
 * NS_REPL_SET) first recalls the leases of the other clients and waits
 * until each is acknowledged (the client's next NS_RENEW, at most
 * GALLEY_MD_RENEW_MS later) or has run out (a client that stopped
 * renewing: at most lease_ms).  The holder's own lease (the same client
 * id on this connection) goes at once: its library dropped it first.
 * While a recall is waiting, no new lease is granted on that name.  The
 * leases live in memory only: for lease_ms after a start, every change
 * waits as if a lease were live (a restarted server does not know who
 * held one), and a renewal from a client it does not know says so
 * (known 0: the client drops every lease it had here).
 */
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
static uint32_t lease_grant(gsrv_conn *c, ns_ent *e, uint64_t id)
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
        have = e->hold[i].client == id;
    if (!have) {
        if (e->nhold == e->caphold) {
            uint32_t cap = e->caphold ? e->caphold * 2 : 2;
            ns_hold *n = realloc(e->hold, cap * sizeof(*n));
            if (!n)
                return 0;
            e->hold = n;
            e->caphold = cap;
        }
        e->hold[e->nhold++] = (ns_hold){.client = id};
    }
    k->until = g_now_ms() + ns.lease_ms;
    c->md_client = id;
    return (uint32_t)ns.lease_ms;
}

static void hold_del(ns_ent *e, uint32_t i)
{
    e->hold[i] = e->hold[--e->nhold];
}

/* Recall the leases of other clients on `name` and wait until none is
 * live; the connection's own goes at once.  Called and returns with
 * ns.lock held; the entry may be gone or another after: find it again. */
static void lease_break(gsrv_conn *c, const char *name, uint64_t h)
{
    for (;;) {
        int64_t now = g_now_ms();
        ns_ent *e = find(name, h);
        bool wait = now < ns.grace;
        for (uint32_t i = 0; e && i < e->nhold;) {
            ns_hold *d = &e->hold[i];
            ns_client *k = client_find(d->client);
            if (!k || d->client == c->md_client ||
                now >= (d->rseq ? d->frozen : k->until)) {
                hold_del(e, i); /* its own, or run out */
                continue;
            }
            if (!d->rseq) {
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
                } else {
                    free(copy); /* no memory: it runs out instead */
                    d->rseq = ~0ull;
                    d->frozen = k->until;
                }
            }
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
        ns_ent *e = find(r->name, g_fnv1a(r->name));
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

static void rec_path(uint64_t id, char *out, size_t len)
{
    snprintf(out, len, "ns/%" PRIu64 ".rec", id);
}

/* Write record `id` for (name, rec with attrs): a value of the metadata
 * table (metatab.c). */
static int write_record(uint64_t id, const char *name, const gp_record *rec)
{
    gp_wbuf w;
    char path[64];

    gp_wbuf_init(&w);
    gp_put_u32(&w, NS_MAGIC);
    gp_put_u16(&w, NS_FORMAT);
    gp_put_str(&w, name);
    gp_put_record(&w, rec);
    int rc = w.err;
    if (!rc) {
        rec_path(id, path, sizeof(path));
        rc = gsrv_tab_put(path, w.data, w.len);
    }
    gp_wbuf_free(&w);
    return rc;
}

/* Give e the record rec (attributes included), on disk and then in
 * memory: allocated first, then the file, then published, so memory
 * always matches the disk.  Called with ns.lock held. */
static int ent_replace(ns_ent *e, const gp_record *rec)
{
    ns_ent fresh = {0};
    int rc = ent_set_record(&fresh, rec, rec->attrs, rec->attrlen);
    if (rc)
        return rc;
    rc = write_record(e->id, e->name, rec);
    if (rc) {
        ent_free_record(&fresh);
        return rc;
    }
    ent_free_record(e);
    e->nsub = fresh.nsub;
    e->server = fresh.server;
    e->hid = fresh.hid;
    e->attrs = fresh.attrs;
    e->attrlen = fresh.attrlen;
    e->repl = fresh.repl;
    return 0;
}

static int remove_record(uint64_t id)
{
    char path[64];
    rec_path(id, path, sizeof(path));
    gsrv_tab_del(path);
    return 0;
}

/* ------------------------------------------------------------- load ---- */

static int load_one(uint64_t id, const char *key, gp_record *rec)
{
    char name[GFS_NAME_MAX + 1];
    uint8_t *buf;
    size_t len;
    gp_rbuf r;

    int rc = gsrv_tab_get(key, &buf, &len);
    if (rc)
        return rc;
    gp_rbuf_init(&r, buf, len);
    uint32_t magic = gp_get_u32(&r);
    uint16_t fmt = gp_get_u16(&r);
    gp_get_str(&r, name, GFS_NAME_MAX);
    if (fmt == 1) {
        gp_get_record_base(&r, rec);
        gp_repl_single(rec);
    } else {
        gp_get_record(&r, rec);
    }
    if (!gp_done(&r) || magic != NS_MAGIC || (fmt != 1 && fmt != NS_FORMAT) ||
        gsrv_check_name(name)) {
        rc = GFS_EPROTO;
        goto out_free_buf;
    }
    uint64_t h = g_fnv1a(name);
    if (find(name, h)) {
        gsrv_log(0, "%s: duplicate record for a name, ignored", key);
        goto out_free_buf;
    }
    ns_ent *e;
    rc = insert(name, h, &e);
    if (rc)
        goto out_free_buf;
    rc = ent_set_record(e, rec, rec->attrs, rec->attrlen);
    if (rc) {
        unlink_ent(e);
        goto out_free_buf;
    }
    mark_committed(e, id);
out_free_buf:
    free(buf);
    return rc;
}

/* gsrv_meta_scan: ns/<id>.rec, a record file of a data directory written
 * before the metadata table: its value goes into the table. */
static int scan_record(gsrv_scan *sc, int dfd, const char *n, uint64_t id)
{
    char path[300];
    snprintf(path, sizeof(path), "ns/%s", n);
    int e = gsrv_tab_import(path);
    if (e == -ENOMEM)
        return e;
    if (e)
        gsrv_log(0, "%s: %s, not served (left in place)", path,
                 gsrv_strerror(e));
    return 0;
}

/* gsrv_meta_scan: anything else in ns/. */
static int scan_other(gsrv_scan *sc, int dfd, const char *n)
{
    gsrv_log(0, "ns/%s: not a record file, ignored", n);
    return 0;
}

/* gsrv_tab_each over "ns/": "ns/<id>.rec", one record. */
static int load_key(const char *key, void *arg)
{
    uint64_t id;
    size_t kl = strlen(key);
    if (kl <= 7 || strcmp(key + kl - 4, ".rec") != 0 ||
        !gsrv_parse_u64(key + 3, kl - 7, &id)) {
        gsrv_log(0, "%s: not a record, ignored", key);
        return 0;
    }
    /* past every record, readable or not: never overwrite one */
    if (id >= ns.next_id)
        ns.next_id = id + 1;
    int e = load_one(id, key, arg);
    if (e == -ENOMEM)
        return e;
    if (e)
        gsrv_log(0, "%s: %s record, not served (left in place)", key,
                 e == GFS_EPROTO ? "corrupt" : gsrv_strerror(e));
    return 0;
}

int gsrv_ns_init(void)
{
    int rc = 0;
    gp_record *rec = NULL;

    if (mkdirat(gsrv_g.dfd, "ns", 0755) < 0 && errno != EEXIST)
        return -errno;
    rc = gsrv_ht_init(&ns.tab, 1024, true);
    if (rc)
        return rc;
    ns.next_id = 1;
    const char *ml = getenv("GALLEY_MD_LEASE_MS");
    ns.lease_ms = ml ? atol(ml) : 3000;
    if (ns.lease_ms < 0 || ns.lease_ms > 600000)
        ns.lease_ms = 3000;
    ns.grace = g_now_ms() + ns.lease_ms;
    if (getrandom(&ns.epoch, sizeof(ns.epoch), 0) != sizeof(ns.epoch))
        ns.epoch = (uint64_t)g_now_ms() ^ ((uint64_t)getpid() << 40);
    rec = malloc(sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    gsrv_scan sc = {.dir = "ns",
                    .suffix = ".rec",
                    .remove_tmp = true,
                    .numbered = scan_record,
                    .other = scan_other,
                    .arg = rec};
    rc = gsrv_meta_scan(&sc); /* record files from before the table */
    if (!rc)
        rc = gsrv_tab_each("ns/", load_key, rec);
    if (!rc)
        gsrv_log(1, "nameserver: %" PRIu64 " records", ns.ncommitted);
    free(rec);
    return rc;
}

void gsrv_ns_fini(void)
{
    gsrv_ht_iter it = {0};
    for (gsrv_hlink *l; (l = gsrv_ht_next(&ns.tab, &it));)
        ent_free(GSRV_HT_ENTRY(l, ns_ent, hlink));
    gsrv_ht_fini(&ns.tab);
    for (size_t i = 0; i < ns.nclient; i++) {
        for (size_t j = 0; j < ns.client[i].nrecall; j++)
            free(ns.client[i].recall[j].name);
        free(ns.client[i].recall);
    }
    free(ns.client);
    ns.client = NULL;
    ns.nclient = ns.capclient = 0;
    ns.nreserved = 0;
    ns.ncommitted = 0;
}

void gsrv_ns_drop_conn(uint64_t conn_id)
{
    pthread_mutex_lock(&ns.lock);
    gsrv_ht_iter it = {0};
    for (gsrv_hlink *l; ns.nreserved && (l = gsrv_ht_next(&ns.tab, &it));) {
        ns_ent *e = GSRV_HT_ENTRY(l, ns_ent, hlink);
        if (!e->committed && e->owner == conn_id)
            unlink_ent(e);
    }
    pthread_mutex_unlock(&ns.lock);
}

uint64_t gsrv_ns_count(void)
{
    pthread_mutex_lock(&ns.lock);
    uint64_t n = ns.ncommitted;
    pthread_mutex_unlock(&ns.lock);
    return n;
}

/* -------------------------------------------------------------- ops ---- */

int gsrv_op_NS_RESERVE(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    gp_NS_RESERVE_req m;
    int rc = gp_NS_RESERVE_req_decode(req, &m);
    const char *name = m.name;
    if (rc)
        return rc;
    uint64_t h = g_fnv1a(name);
    pthread_mutex_lock(&ns.lock);
    ns_ent *e = find(name, h);
    if (e) {
        rc = -EEXIST;
    } else {
        rc = insert(name, h, &e);
        if (!rc)
            e->owner = c->id;
    }
    pthread_mutex_unlock(&ns.lock);
    return rc;
}

/* NS_COMMIT, and (client != 0) a lease on the record for that client. */
static int commit(gsrv_conn *c, const char *name, gp_record *rec,
                  uint64_t client, uint32_t *lease)
{
    int rc = 0;
    uint64_t h = g_fnv1a(name);
    bool created = false;
    pthread_mutex_lock(&ns.lock);
    ns_ent *e = find(name, h);
    if (e && e->committed) {
        rc = -EEXIST;
        goto out_unlock;
    }
    if (!e) {
        rc = insert(name, h, &e);
        if (rc)
            goto out_unlock;
        created = true;
    }
    uint64_t id = ns.next_id;
    rc = ent_set_record(e, rec, rec->attrs, rec->attrlen);
    if (!rc)
        rc = write_record(id, name, rec);
    if (rc) {
        if (created) {
            unlink_ent(e);
        } else {
            ent_free_record(e); /* stays a reservation */
        }
        goto out_unlock;
    }
    ns.next_id++;
    mark_committed(e, id);
    if (client)
        *lease = lease_grant(c, e, client);
out_unlock:
    pthread_mutex_unlock(&ns.lock);
    return rc;
}

int gsrv_op_NS_COMMIT(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    gp_record *rec = malloc(sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    gp_NS_COMMIT_req m = {.rec = rec};
    int rc = gp_NS_COMMIT_req_decode(req, &m);
    if (!rc)
        rc = commit(c, m.name, rec, 0, NULL);
    free(rec);
    return rc;
}

int gsrv_op_NS_COMMIT_LEASE(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    gp_record *rec = malloc(sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    gp_NS_COMMIT_LEASE_req m = {.rec = rec};
    uint32_t lease = 0;
    int rc = gp_NS_COMMIT_LEASE_req_decode(req, &m);
    if (!rc)
        rc = m.client ? commit(c, m.name, rec, m.client, &lease) : -EINVAL;
    if (!rc)
        gp_NS_COMMIT_LEASE_rep_encode(
            &rep->w,
            &(gp_NS_COMMIT_LEASE_rep){.lease_ms = lease, .epoch = ns.epoch});
    free(rec);
    return rc;
}

int gsrv_op_NS_RELEASE(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    gp_NS_RELEASE_req m;
    int rc = gp_NS_RELEASE_req_decode(req, &m);
    const char *name = m.name;
    if (rc)
        return rc;
    uint64_t h = g_fnv1a(name);
    pthread_mutex_lock(&ns.lock);
    ns_ent *e = find(name, h);
    if (e && !e->committed)
        unlink_ent(e);
    else
        rc = -ENOENT; /* nothing reserved under that name */
    pthread_mutex_unlock(&ns.lock);
    return rc;
}

int gsrv_op_NS_LOOKUP(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    gp_NS_LOOKUP_req m;
    int rc = gp_NS_LOOKUP_req_decode(req, &m);
    const char *name = m.name;
    if (rc)
        return rc;
    gp_record *rec = malloc(sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    pthread_mutex_lock(&ns.lock);
    ns_ent *e = find(name, g_fnv1a(name));
    if (e && e->committed)
        ent_to_record(e, rec);
    else
        rc = -ENOENT;
    pthread_mutex_unlock(&ns.lock);
    if (!rc)
        gp_NS_LOOKUP_rep_encode(&rep->w, &(gp_NS_LOOKUP_rep){.rec = rec});
    free(rec);
    return rc;
}

int gsrv_op_NS_LEASE(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    gp_NS_LEASE_req m;
    int rc = gp_NS_LEASE_req_decode(req, &m);
    if (!rc && !m.client)
        rc = -EINVAL;
    if (rc)
        return rc;
    gp_record *rec = malloc(sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    uint32_t lease = 0;
    pthread_mutex_lock(&ns.lock);
    ns_ent *e = find(m.name, g_fnv1a(m.name));
    if (e && e->committed) {
        ent_to_record(e, rec);
        lease = lease_grant(c, e, m.client);
    } else {
        rc = -ENOENT;
    }
    pthread_mutex_unlock(&ns.lock);
    if (!rc)
        gp_NS_LEASE_rep_encode(&rep->w, &(gp_NS_LEASE_rep){.lease_ms = lease,
                                                           .epoch = ns.epoch,
                                                           .rec = rec});
    free(rec);
    return rc;
}

int gsrv_op_NS_RENEW(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    gp_NS_RENEW_req m;
    int rc = gp_NS_RENEW_req_decode(req, &m);
    if (!rc && !m.client)
        rc = -EINVAL;
    if (rc)
        return rc;
    pthread_mutex_lock(&ns.lock);
    ns_client *k = client_find(m.client);
    uint8_t known = k != NULL;
    if (k)
        lease_acked(k, m.acked);
    else
        k = client_get(m.client);
    if (k)
        k->until = g_now_ms() + ns.lease_ms;
    c->md_client = m.client;
    uint32_t n = k ? (uint32_t)k->nrecall : 0;
    gp_NS_RENEW_rep_encode(&rep->w,
                           &(gp_NS_RENEW_rep){.lease_ms = (uint32_t)ns.lease_ms,
                                              .epoch = ns.epoch,
                                              .known = known,
                                              .seq = k ? k->seq : 0,
                                              .n = n});
    for (uint32_t i = 0; i < n; i++)
        gp_NAME_item_encode(&rep->w,
                            &(gp_NAME_item){.name = k->recall[i].name});
    pthread_mutex_unlock(&ns.lock);
    return 0;
}

/* NS_LET_GO: a client lets every lease it holds here go (it used none of
 * them for a while: libgalley/rcache.c), and with them the recalls it has
 * not acknowledged: a change waiting for them goes on at once.  A lease
 * granted to it later renews its old ones again, which it no longer
 * trusts: a recall of one is acknowledged at its next renewal. */
int gsrv_op_NS_LET_GO(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    gp_NS_LET_GO_req m;
    int rc = gp_NS_LET_GO_req_decode(req, &m);
    if (!rc && !m.client)
        rc = -EINVAL;
    if (rc)
        return rc;
    pthread_mutex_lock(&ns.lock);
    ns_client *k = client_find(m.client);
    if (k) {
        lease_acked(k, k->seq); /* (wakes the changes waiting) */
        k->until = g_now_ms();  /* the others run out now */
    }
    pthread_mutex_unlock(&ns.lock);
    return 0;
}

int gsrv_op_NS_REMOVE(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    gp_NS_REMOVE_req m;
    int rc = gp_NS_REMOVE_req_decode(req, &m);
    const char *name = m.name;
    if (rc)
        return rc;
    gp_record *rec = malloc(sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    pthread_mutex_lock(&ns.lock);
    lease_break(c, name, g_fnv1a(name)); /* others' cached copies first */
    ns_ent *e = find(name, g_fnv1a(name));
    if (!e || !e->committed) {
        rc = -ENOENT;
        goto out_unlock;
    }
    ent_to_record(e, rec);
    rc = remove_record(e->id);
    if (rc)
        goto out_unlock;
    unlink_ent(e);
out_unlock:
    pthread_mutex_unlock(&ns.lock);
    if (!rc)
        gp_NS_REMOVE_rep_encode(&rep->w, &(gp_NS_REMOVE_rep){.rec = rec});
    free(rec);
    return rc;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int gsrv_op_NS_LIST(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    gp_NS_LIST_req m;
    int rc = gp_NS_LIST_req_decode(req, &m);
    if (rc)
        return rc;
    const char *prefix = m.prefix;
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
    gp_NS_LIST_rep_encode(&rep->w, &(gp_NS_LIST_rep){.n = (uint32_t)n});
    gp_NAME_item item;
    for (size_t i = 0; i < n; i++) {
        item.name = names[i];
        gp_NAME_item_encode(&rep->w, &item);
    }
out_free_names:
    free(names);
out_unlock:
    pthread_mutex_unlock(&ns.lock);
    return rc;
}

int gsrv_op_NS_SETATTR(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    gp_NS_SETATTR_req m;
    int rc = gp_NS_SETATTR_req_decode(req, &m);
    const char *name = m.name;
    uint32_t alen = m.attrs_len;
    const uint8_t *attrs = m.attrs;
    if (!rc)
        rc = check_attrs(attrs, alen);
    if (rc)
        return rc;
    gp_record *rec = malloc(sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    pthread_mutex_lock(&ns.lock);
    lease_break(c, name, g_fnv1a(name)); /* others' cached copies first */
    ns_ent *e = find(name, g_fnv1a(name));
    if (!e || !e->committed) {
        rc = -ENOENT;
        goto out_unlock;
    }
    ent_to_record(e, rec);
    if (alen)
        memcpy(rec->attrs, attrs, alen);
    rec->attrs[alen] = '\0';
    rec->attrlen = alen;
    rc = ent_replace(e, rec);
out_unlock:
    pthread_mutex_unlock(&ns.lock);
    free(rec);
    return rc;
}

/* The copies of a replicated file: replaced only by a newer generation
 * (gmsg.h), so that of two clients deciding from the same record one
 * wins and the other decides again from the new one.  Only the replica
 * part changes (and copy 0's header, rebuilt by resync on a wiped
 * server): the servers of copy 0 and the attributes stay. */
int gsrv_op_NS_REPL_SET(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    gp_record *in = malloc(sizeof(*in)), *rec = malloc(sizeof(*rec));
    int rc = in && rec ? 0 : -ENOMEM;
    gp_NS_REPL_SET_req m = {.rec = in};
    if (!rc)
        rc = gp_NS_REPL_SET_req_decode(req, &m);
    if (rc)
        goto out_free;
    uint64_t gen = 0;
    pthread_mutex_lock(&ns.lock);
    ns_ent *e = find(m.name, g_fnv1a(m.name));
    if (e && e->committed && !e->repl && e->nhold) {
        /* one copy so far: other clients may hold it leased */
        lease_break(c, m.name, g_fnv1a(m.name));
        e = find(m.name, g_fnv1a(m.name));
    }
    if (!e || !e->committed) {
        rc = -ENOENT;
        goto out_unlock;
    }
    ent_to_record(e, rec);
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
    rc = ent_replace(e, rec);
    if (rc)
        goto out_unlock;
    gen = rec->repl.gen;
out_unlock:
    pthread_mutex_unlock(&ns.lock);
    if (!rc)
        gp_NS_REPL_SET_rep_encode(&rep->w, &(gp_NS_REPL_SET_rep){.gen = gen});
out_free:
    free(in);
    free(rec);
    return rc;
}
