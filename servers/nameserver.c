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
 *
 * The units: this file keeps the table of names (ns_internal.h), the
 * records in the metadata table and the start-up load; ns_lease.c the
 * record leases and their ops; ns_ops.c the other NS_* handlers.
 */
#include "ns_internal.h"
#include "gconfig.h"

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
struct ns_repl {
    uint8_t ncopy;
    uint64_t gen;
    uint32_t nsub;
    uint32_t (*server)[GP_MAX_COPIES];
    uint64_t (*hid)[GP_MAX_COPIES];
    uint64_t (*dsid)[GP_MAX_COPIES];
    uint8_t (*state)[GP_MAX_COPIES];
};

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

ns_table ns = {.lock = PTHREAD_MUTEX_INITIALIZER,
               .cv = PTHREAD_COND_INITIALIZER,
               .recall = PTHREAD_COND_INITIALIZER};

/* ----------------------------------------------------------- helpers ---- */

int gsrv_check_name(const char *name)
{
    return strlen(name) <= GFS_NAME_MAX && gp_name_ok(name) ? 0 : -EINVAL;
}

/* Attribute text as gp_get_record accepts it: no NUL. */
int ns_check_attrs(const uint8_t *p, uint32_t n)
{
    if (n > GP_ATTR_MAX)
        return GFS_EPROTO;
    if (n && memchr(p, '\0', n))
        return GFS_EPROTO;
    return 0;
}

void ns_ent_free_record(ns_ent *e)
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

static void ns_ent_free(ns_ent *e)
{
    if (!e)
        return;
    ns_ent_free_record(e);
    free(e->hold);
    free(e->name);
    free(e);
}

/* Copy rec's servers/hids and the given attrs into compact arrays. */
int ns_ent_set_record(ns_ent *e, const gp_record *rec, const char *attrs,
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
    ns_ent_free_record(e);
    e->nsub = rec->nsub;
    e->server = server;
    e->hid = hid;
    e->attrs = a;
    e->attrlen = attrlen;
    e->repl = repl;
    return 0;
}

/* Fill a gp_record from an entry (only the used slots). */
void ns_ent_to_record(const ns_ent *e, gp_record *rec)
{
    rec->nsub = e->nsub;
    memcpy(rec->server, e->server, e->nsub * sizeof(*e->server));
    memcpy(rec->hid, e->hid, e->nsub * sizeof(*e->hid));
    rec->attrlen = e->attrlen;
    memcpy(rec->attrs, e->attrs, (size_t)e->attrlen + 1);
    ns_repl_to(e->repl, rec);
}

ns_ent *ns_find(const char *name, uint64_t h)
{
    for (gsrv_hlink *l = gsrv_ht_chain(&ns.tab, h); l; l = l->next) {
        ns_ent *e = GSRV_HT_ENTRY(l, ns_ent, hlink);
        if (l->hash == h && strcmp(e->name, name) == 0)
            return e;
    }
    return NULL;
}

ns_ent *ns_lock_find(const char *name, gsrv_conn *brk, uint64_t *h)
{
    uint64_t hash = g_fnv1a(name);
    if (h)
        *h = hash;
    pthread_mutex_lock(&ns.lock);
    if (brk)
        ns_lease_break(brk, name, hash);
    return ns_find(name, hash);
}

ns_ent *ns_lock_record(const char *name, gsrv_conn *brk, gp_record *rec)
{
    ns_ent *e = ns_lock_find(name, brk, NULL);
    if (!e || !e->committed)
        return NULL;
    ns_ent_to_record(e, rec);
    return e;
}

/* New entry in the table (not committed, no record). */
int ns_insert(const char *name, uint64_t h, ns_ent **out)
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

void ns_unlink(ns_ent *e)
{
    gsrv_ht_remove(&ns.tab, &e->hlink);
    if (e->committed)
        ns.ncommitted--;
    else
        ns.nreserved--;
    ns_ent_free(e);
}

/* An entry becomes a committed record. */
void ns_mark_committed(ns_ent *e, uint64_t id)
{
    e->committed = true;
    e->id = id;
    e->owner = 0;
    ns.ncommitted++;
    ns.nreserved--;
}

static void rec_path(uint64_t id, char *out, size_t len)
{
    snprintf(out, len, "ns/%" PRIu64 ".rec", id);
}

/* Write record `id` for (name, rec with attrs): a value of the metadata
 * table (metatab.c). */
int ns_write_record(uint64_t id, const char *name, const gp_record *rec)
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
int ns_ent_replace(ns_ent *e, const gp_record *rec)
{
    ns_ent fresh = {0};
    int rc = ns_ent_set_record(&fresh, rec, rec->attrs, rec->attrlen);
    if (rc)
        return rc;
    rc = ns_write_record(e->id, e->name, rec);
    if (rc) {
        ns_ent_free_record(&fresh);
        return rc;
    }
    ns_ent_free_record(e);
    e->nsub = fresh.nsub;
    e->server = fresh.server;
    e->hid = fresh.hid;
    e->attrs = fresh.attrs;
    e->attrlen = fresh.attrlen;
    e->repl = fresh.repl;
    return 0;
}

int ns_remove_record(uint64_t id)
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
    if (ns_find(name, h)) {
        gsrv_log(0, "%s: duplicate record for a name, ignored", key);
        goto out_free_buf;
    }
    ns_ent *e;
    rc = ns_insert(name, h, &e);
    if (rc)
        goto out_free_buf;
    rc = ns_ent_set_record(e, rec, rec->attrs, rec->attrlen);
    if (rc) {
        ns_unlink(e);
        goto out_free_buf;
    }
    ns_mark_committed(e, id);
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
    ns.lease_ms = (long)g_config_int(G_CFG_MD_LEASE_MS);
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
    gsrv_ht_iter it = {0};
    for (gsrv_hlink *l; !rc && (l = gsrv_ht_next(&ns.tab, &it));)
        GSRV_HT_ENTRY(l, ns_ent, hlink)->loaded = true;
    if (!rc)
        gsrv_log(1, "nameserver: %" PRIu64 " records", ns.ncommitted);
    free(rec);
    return rc;
}

void gsrv_ns_fini(void)
{
    gsrv_ht_iter it = {0};
    for (gsrv_hlink *l; (l = gsrv_ht_next(&ns.tab, &it));)
        ns_ent_free(GSRV_HT_ENTRY(l, ns_ent, hlink));
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
            ns_unlink(e);
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
