/*
 * files.c -- file operations: the paper's three-step create, open (record
 * lookup at the name's metadata server, cached), close, stat, listing,
 * and the attributes kept in a file's record.  Delete is files_delete.c's.
 *
 * Threads: any; tables through client.c helpers, network through conn.c.
 */
#include "internal.h"

#include "gclock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------ small calls --- */

static gc_conn *srv(int server)
{
    return gc_server_conn(server);
}

int gc_lookup(int server, const char *name, gp_record *rec)
{
    return gc_NS_LOOKUP_call(srv(server), &(gp_NS_LOOKUP_req){.name = name},
                             &(gp_NS_LOOKUP_rep){.rec = rec}, NULL);
}

/* --------------------------------------------------------- create ----- */

static int pick_servers(const char *name, int nsub, const int *servers,
                        uint32_t *out)
{
    int n = gc_g.nservers;
    if (nsub < 1 || nsub > n || nsub > GFS_MAX_SUBFILES)
        return -EINVAL;
    if (!servers) {
        int first = gc_meta_server(name);
        for (int i = 0; i < nsub; i++)
            out[i] = (uint32_t)((first + i) % n);
        return 0;
    }
    for (int i = 0; i < nsub; i++) {
        if (servers[i] < 0 || servers[i] >= n)
            return -EINVAL;
        for (int j = 0; j < i; j++)
            if (servers[j] == servers[i])
                return -EINVAL; /* two subfiles may not share a server */
        out[i] = (uint32_t)servers[i];
    }
    return 0;
}

/* Delete the subfile headers rec->hid[i] for which made[i], all at once
 * (errors ignored: what stays behind is an orphan for `galley fsck`). */
static void delete_subfiles(const gp_record *rec, const bool *made)
{
    gc_pending *p = calloc(rec->nsub ? rec->nsub : 1, sizeof(*p));
    if (!p)
        return;
    for (uint32_t i = 0; i < rec->nsub; i++)
        if (made[i])
            gc_SUB_DELETE_send(srv((int)rec->server[i]),
                               &(gp_SUB_DELETE_req){.hid = rec->hid[i]}, &p[i]);
    for (uint32_t i = 0; i < rec->nsub; i++)
        if (made[i])
            gc_SUB_DELETE_recv(&p[i], NULL, NULL);
    free(p);
}

/* Steps 1 and 2 of a create (gc_create_file_fork), sent at once: the
 * name's reservation at its metadata server meta and a header (with fork
 * `fork` when not NULL) in every subfile of rec, one pending call each in
 * p; then their replies.  made[i] and rec->hid[i] for every header made;
 * *reservedp the reservation's outcome; the first failure returned. */
static int create_send(const char *name, gp_record *rec, const char *fork,
                       int meta, gc_pending *p, bool *made, int *reservedp)
{
    int nsubfiles = (int)rec->nsub;
    gc_pending rp;
    gc_NS_RESERVE_send(srv(meta), &(gp_NS_RESERVE_req){.name = name}, &rp);
    for (int i = 0; i < nsubfiles; i++) {
        gc_conn *c = srv((int)rec->server[i]);
        if (fork)
            gc_SUB_CREATE_FORK_send(c,
                                    &(gp_SUB_CREATE_FORK_req){
                                        .filename = name,
                                        .subfile = (uint32_t)i,
                                        .fork = fork,
                                    },
                                    &p[i]);
        else
            gc_SUB_CREATE_send(
                c,
                &(gp_SUB_CREATE_req){.filename = name, .subfile = (uint32_t)i},
                &p[i]);
    }
    int reserved = gc_NS_RESERVE_recv(&rp, NULL, NULL);
    int rc = reserved;
    for (int i = 0; i < nsubfiles; i++) {
        int k;
        uint64_t hid = 0;
        if (fork) {
            gp_SUB_CREATE_FORK_rep m = {0};
            k = gc_SUB_CREATE_FORK_recv(&p[i], &m, NULL);
            hid = m.hid;
        } else {
            gp_SUB_CREATE_rep m = {0};
            k = gc_SUB_CREATE_recv(&p[i], &m, NULL);
            hid = m.hid;
        }
        if (!k) {
            made[i] = true;
            rec->hid[i] = hid;
        } else if (!rc) {
            rc = k;
        }
    }
    *reservedp = reserved;
    return rc;
}

/* Create with an initial attribute text and, unless fork is NULL, a first
 * fork of that name in every subfile (gfs_create_striped), of ncopy
 * copies (repl.c).  The paper's three steps in two round trips: the
 * name's reservation and every subfile header (SUB_CREATE_FORK: with its
 * fork) are sent at once, then the record is committed.  A replicated
 * file's other copies are made between the two, and its record is then
 * committed on its other record servers too.  A failure in any step
 * releases what was done; a name that exists costs the subfiles made
 * meanwhile. */
int gc_create_file_fork(const char *name, int nsubfiles, const int *servers,
                        const char *attrs, const char *fork, int ncopy)
{
    int rc = gc_check_init();
    if (rc)
        return rc;
    rc = gc_check_name(name, GFS_NAME_MAX);
    if (!rc && fork)
        rc = gc_check_name(fork, GFS_FORK_NAME_MAX);
    if (rc)
        return rc;
    gp_record *rec = calloc(1, sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    rc = pick_servers(name, nsubfiles, servers, rec->server);
    if (rc)
        goto out_free;
    rec->nsub = (uint32_t)nsubfiles;
    rec->repl.ncopy = 1;
    if (ncopy != 1 && (rc = gc_repl_place(rec, ncopy)))
        goto out_free;
    if (attrs) {
        size_t n = strlen(attrs);
        if (n > GP_ATTR_MAX) {
            rc = -EINVAL;
            goto out_free;
        }
        memcpy(rec->attrs, attrs, n + 1);
        rec->attrlen = (uint32_t)n;
    }

    /* Steps 1 and 2 at once: reserve the name at its metadata server, and
     * a subfile header on each chosen server. */
    int meta = gc_meta_server(name);
    gc_pending *p = calloc((size_t)nsubfiles, sizeof(*p));
    bool *made = calloc((size_t)nsubfiles, sizeof(*made));
    if (!p || !made) {
        free(p);
        free(made);
        rc = -ENOMEM;
        goto out_free;
    }
    int reserved;
    rc = create_send(name, rec, fork, meta, p, made, &reserved);
    free(p);

    /* Replicated: the other copies' headers, every copy's server id. */
    int rmade = 0;
    if (!rc && rec->repl.ncopy > 1)
        rc = gc_repl_create_copies(name, rec, fork, &rmade);

    /* Step 3: commit the record; one copy: with a lease on it. */
    bool sent = !rc;
    int64_t t0 = g_now_ms();
    gp_NS_COMMIT_LEASE_rep lease = {0};
    if (sent && rec->repl.ncopy > 1)
        rc = gc_NS_COMMIT_call(srv(meta),
                               &(gp_NS_COMMIT_req){.name = name, .rec = rec},
                               NULL, NULL);
    else if (sent)
        rc = gc_NS_COMMIT_LEASE_call(
            srv(meta),
            &(gp_NS_COMMIT_LEASE_req){
                .client = gc_rcache_client(), .name = name, .rec = rec},
            &lease, NULL);
    if (!rc && rec->repl.ncopy > 1 && (rc = gc_repl_commit_others(name, rec))) {
        /* not on a majority of its record servers: take it back (a copy
         * of the record left on a minority never wins a lookup) */
        gc_repl_remove_others(name);
        gc_NS_REMOVE_call(srv(meta), &(gp_NS_REMOVE_req){.name = name},
                          &(gp_NS_REMOVE_rep){.rec = rec}, NULL);
        sent = false;
    }
    if (!rc) /* new: every fork is empty */
        gc_rcache_lease(name, rec, meta, t0, lease.lease_ms, lease.epoch, 0);
    if (sent && (rc == GFS_ESERVERDOWN || rc == GFS_ETIMEDOUT)) {
        /* The commit's outcome is unknown (the record's server died or
         * did not answer): the record may exist, so its subfiles (and
         * their copies) stay.  If it does not, they are orphans for
         * `galley fsck --repair`. */
    } else if (rc) {
        /* Undo: subfile headers and their copies, then the reservation. */
        if (rec->repl.ncopy > 1) /* (made or not: hid 0 is skipped) */
            gc_repl_delete_copies(rec, (int)rec->nsub);
        delete_subfiles(rec, made);
        if (!reserved)
            gc_NS_RELEASE_call(srv(meta), &(gp_NS_RELEASE_req){.name = name},
                               NULL, NULL);
    }
    free(made);
    if (!sent && (rc == GFS_ESERVERDOWN || rc == GFS_ETIMEDOUT) &&
        !gc_repl_lookup(name, rec))
        rc = -EEXIST; /* a server is down, but the name is taken: the
                       * record of a replicated file outlives it */
out_free:
    free(rec);
    return rc;
}

int gc_create_file(const char *name, int nsubfiles, const int *servers,
                   const char *attrs, int ncopy)
{
    return gc_create_file_fork(name, nsubfiles, servers, attrs, NULL, ncopy);
}

int gfs_create_file(const char *name, int nsubfiles, const int *servers)
{
    return gc_create_file(name, nsubfiles, servers, NULL, 1);
}

/* ----------------------------------------------------- open / close --- */

int gc_lease_lookup(const char *name, gp_record *rec)
{
    int meta = gc_meta_server(name);
    int64_t t0 = g_now_ms();
    gp_NS_LEASE_rep m = {.rec = rec};
    int rc = gc_NS_LEASE_call(
        srv(meta),
        &(gp_NS_LEASE_req){.client = gc_rcache_client(), .name = name}, &m,
        NULL);
    if (!rc && rec->repl.ncopy <= 1) {
        gc_rcache_lease(name, rec, meta, t0, m.lease_ms, m.epoch, -1);
        return 0;
    }
    /* replicated, or not there (another record server may say): */
    rc = gc_repl_lookup(name, rec);
    if (!rc)
        gc_rcache_put(name, rec);
    else
        gc_rcache_drop(name);
    return rc;
}

int gc_file_register(const char *name, const gp_record *rec)
{
    for (uint32_t i = 0; i < rec->nsub; i++)
        if (rec->server[i] >= (uint32_t)gc_g.nservers)
            return GFS_EBADCLUSTER; /* record names a server we don't know */
    gc_file *f = malloc(sizeof(*f));
    if (!f)
        return -ENOMEM;
    snprintf(f->name, sizeof(f->name), "%s", name);
    gp_record_copy(&f->rec, rec);
    int fid = gc_idtab_insert(&gc_g.files, &f); /* (the table owns f) */
    if (fid < 0)
        free(f);
    else
        gc_rcache_opened(name, 1); /* no cached size while open here */
    return fid;
}

int gc_file_open(const char *name)
{
    gp_record *rec;
    int rc = gc_named_record(name, &rec);
    if (rc)
        return rc;
    rc = gc_lease_lookup(name, rec);
    if (!rc)
        rc = gc_file_register(name, rec);
    free(rec);
    return rc;
}

int gc_file_close(int fid)
{
    int rc = gc_check_init();
    if (rc)
        return rc;
    gc_file *f;
    if (gc_idtab_take(&gc_g.files, fid, &f))
        return GFS_EBADID;
    gc_rcache_opened(f->name, -1); /* its writes may have changed the size */
    free(f);
    /* Forks opened through this file id go with it, all at once. */
    gc_fork k;
    int n = 0, cap = 0, *kids = NULL;
    for (int kid = -1; (kid = gc_fork_next(kid, &k)) >= 0;) {
        if (k.fid != fid)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            int *nk = realloc(kids, (size_t)cap * sizeof(*nk));
            if (!nk) {
                gc_fork_close(kid); /* one at a time, then */
                continue;
            }
            kids = nk;
        }
        kids[n++] = kid;
    }
    gc_all_close(n, kids);
    free(kids);
    return 0;
}

int gfs_stat_file(int fid, gfs_file_stat *st)
{
    gc_file f;
    int rc = gc_file_get(fid, &f);
    if (rc)
        return rc;
    if (!st)
        return -EINVAL;
    memset(st, 0, sizeof(*st));
    st->nsubfiles = (int)f.rec.nsub;
    for (uint32_t i = 0; i < f.rec.nsub; i++)
        st->servers[i] = (int)f.rec.server[i];
    return 0;
}

/* ---------------------------------------------------------- listing --- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int gfs_list_files(const char *prefix, int (*fn)(const char *, void *),
                   void *arg)
{
    int rc = gc_check_init();
    if (rc)
        return rc;
    if (!prefix)
        prefix = "";
    if (strlen(prefix) > GFS_NAME_MAX)
        return -ENAMETOOLONG;
    if (!fn)
        return -EINVAL;
    return gc_list_names(prefix, fn, arg);
}

/* The last listing of at most GC_LIST_KEEP_MAX names (stat-ahead may use
 * it again: gc_list_names_recent), under its lock. */
#define GC_LIST_KEEP_MAX 65536
static struct {
    pthread_mutex_t lock;
    char *prefix;
    char **names;
    size_t n;
    int64_t at; /* when it was asked for (ms) */
} last = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* last.lock is a leaf lock, held only briefly; a fork() takes it, so
 * that a child never finds it held. */
static pthread_once_t last_once = PTHREAD_ONCE_INIT;

static void last_lock(void)
{
    pthread_mutex_lock(&last.lock);
}

static void last_unlock(void)
{
    pthread_mutex_unlock(&last.lock);
}

static void last_init(void)
{
    pthread_atfork(last_lock, last_unlock, last_unlock);
}

/* (*p, *names, *n) as the last listing (asked for at `at`) when replace
 * or when none is kept; what is not kept is left there for
 * free_listing. */
static void set_listing(char **p, char ***names, size_t *n, int64_t at,
                        bool replace)
{
    pthread_once(&last_once, last_init);
    pthread_mutex_lock(&last.lock);
    if (*p && (replace || !last.prefix)) {
        char *op = last.prefix, **on = last.names;
        size_t oc = last.n;
        last.prefix = *p;
        last.names = *names;
        last.n = *n;
        last.at = at;
        *p = op;
        *names = on;
        *n = oc;
    }
    pthread_mutex_unlock(&last.lock);
}

static void free_listing(char *p, char **names, size_t n)
{
    free(p);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* Every server's names with the prefix, asked of all at once, then merged
 * in order, each name once. */
int gc_list_names(const char *prefix, int (*fn)(const char *, void *),
                  void *arg)
{
    int ns = gc_g.nservers, rc = 0;
    int64_t at = g_now_ms();
    gc_pending *p = calloc((size_t)ns, sizeof(*p));
    if (!p)
        return -ENOMEM;
    for (int s = 0; s < ns; s++)
        gc_NS_LIST_send(srv(s), &(gp_NS_LIST_req){.prefix = prefix}, &p[s]);
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (int s = 0; s < ns; s++) {
        gc_tail t;
        gp_NS_LIST_rep m;
        int k = gc_NS_LIST_recv(&p[s], &m, &t);
        if (k) {
            rc = rc ? rc : k; /* (every reply is still collected) */
            continue;
        }
        gp_rbuf *r = &t.r;
        for (uint32_t i = 0; i < m.n && !r->err && !rc; i++) {
            gp_NAME_item it;
            if (gp_NAME_item_decode(r, &it))
                break;
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                char **nn = realloc(names, sizeof(*nn) * cap);
                if (!nn) {
                    r->err = -ENOMEM;
                    break;
                }
                names = nn;
            }
            if (!(names[n] = strdup(it.name))) {
                r->err = -ENOMEM;
                break;
            }
            n++;
        }
        k = gc_tail_end(&t);
        rc = rc ? rc : k;
    }
    free(p);
    size_t kept = 0;
    if (!rc) {
        qsort(names, n, sizeof(*names), cmp_str);
        for (size_t i = 0; i < n; i++) {
            if (kept > 0 && strcmp(names[i], names[kept - 1]) == 0) {
                free(names[i]);
                continue;
            }
            names[kept++] = names[i];
        }
        for (size_t i = 0; i < kept && !rc; i++)
            rc = fn(names[i], arg);
        /* (a listing too long to keep is not kept: its memory would
         * stay until the next one) */
        char *p = kept <= GC_LIST_KEEP_MAX ? strdup(prefix) : NULL;
        set_listing(&p, &names, &kept, at, true);
        free_listing(p, names, kept);
        return rc;
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

int gc_list_names_recent(const char *prefix, int64_t age_ms,
                         int (*fn)(const char *, void *), void *arg)
{
    pthread_once(&last_once, last_init);
    pthread_mutex_lock(&last.lock);
    if (!last.prefix || strcmp(last.prefix, prefix) != 0 ||
        g_now_ms() - last.at >= age_ms) {
        pthread_mutex_unlock(&last.lock);
        return gc_list_names(prefix, fn, arg);
    }
    /* taken out while fn runs (no lock held across it), then put back
     * unless a newer listing took its place */
    char *p = last.prefix, **names = last.names;
    size_t n = last.n;
    int64_t at = last.at;
    last.prefix = NULL;
    last.names = NULL;
    last.n = 0;
    pthread_mutex_unlock(&last.lock);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++)
        rc = fn(names[i], arg);
    set_listing(&p, &names, &n, at, false);
    free_listing(p, names, n);
    return rc;
}

/* -------------------------------------------------------- attributes -- */

static int check_key(const char *key)
{
    size_t n = key ? strlen(key) : 0;
    if (n < 1 || n > 63)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        char c = key[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '.'))
            return -EINVAL;
    }
    return 0;
}

/* File fid copied to *f, when key is a valid attribute name. */
static int file_and_key(int fid, const char *key, gc_file *f)
{
    int rc = gc_file_get(fid, f);
    return rc ? rc : check_key(key);
}

/* Set keys[i]=values[i] (i < n) in name's record in one change; fid >=
 * 0: this process's open file of it, whose copy of the record follows. */
static int set_attrs(const char *name, int fid, int n, const char *const *keys,
                     const char *const *values)
{
    int rc;
    for (int i = 0; i < n; i++)
        if (!values[i] || strlen(values[i]) > 1023 || strchr(values[i], '\n'))
            return -EINVAL;
    /* Fresh copy of the record so concurrent attribute changes by other
     * clients are not lost (last writer wins per call). */
    gp_record *rec = calloc(1, sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    rc = gc_lookup(gc_meta_server(name), name, rec);
    if (rc)
        goto out_free;
    char *text = malloc(GP_ATTR_MAX + 1);
    if (!text) {
        rc = -ENOMEM;
        goto out_free;
    }
    /* copy every other line, then ours */
    size_t tl = 0;
    for (const char *p = rec->attrs; *p;) {
        const char *e = strchr(p, '\n');
        size_t ln = e ? (size_t)(e - p) + 1 : strlen(p);
        bool ours = false;
        for (int i = 0; i < n && !ours; i++) {
            size_t kn = strlen(keys[i]);
            ours = strncmp(p, keys[i], kn) == 0 && p[kn] == '=';
        }
        if (!ours) {
            memcpy(text + tl, p, ln);
            tl += ln;
            if (!e)
                text[tl++] = '\n';
        }
        p += ln;
    }
    for (int i = 0; i < n; i++) {
        size_t add = strlen(keys[i]) + 1 + strlen(values[i]) + 1;
        if (tl + add > GP_ATTR_MAX) {
            rc = -ENOSPC;
            goto out_text;
        }
        tl += (size_t)sprintf(text + tl, "%s=%s\n", keys[i], values[i]);
    }
    gc_striped_pin(name); /* its lease goes: lazily opened forks now */

    rc = gc_NS_SETATTR_call(srv(gc_meta_server(name)),
                            &(gp_NS_SETATTR_req){
                                .name = name,
                                .attrs = (const uint8_t *)text,
                                .attrs_len = (uint32_t)tl,
                            },
                            NULL, NULL);
    /* a replicated file: its record's other copies too (best effort: the
     * metadata server's copy decides while it is up, repl.c) */
    if (!rc && rec->repl.ncopy > 1)
        gc_repl_setattr_others(name, text, tl);
    gc_rcache_drop(name);
    if (!rc && fid >= 0) {
        pthread_mutex_lock(&gc_g.lock);
        gc_file *cached = gc_file_at(fid);
        if (cached) {
            memcpy(cached->rec.attrs, text, tl);
            cached->rec.attrs[tl] = '\0';
            cached->rec.attrlen = (uint32_t)tl;
        }
        pthread_mutex_unlock(&gc_g.lock);
    }
out_text:
    free(text);
out_free:
    free(rec);
    return rc;
}

static int set_attr(const char *name, int fid, const char *key,
                    const char *value)
{
    return set_attrs(name, fid, 1, &key, &value);
}

static int gc_set_attr(int fid, const char *key, const char *value)
{
    gc_file f;
    int rc = file_and_key(fid, key, &f);
    return rc ? rc : set_attr(f.name, fid, key, value);
}

unsigned gc_mode_of(const gp_record *rec)
{
    char v[16];
    char *end;
    if (!rec || gc_attr_lookup(rec->attrs, GFS_MODE_ATTR, v, sizeof(v)) <= 0)
        return GFS_DEFAULT_MODE;
    unsigned long m = strtoul(v, &end, 8);
    return *end || m > 07777 ? GFS_DEFAULT_MODE : (unsigned)m;
}

int gc_link_of(const gp_record *rec, char *buf, size_t len)
{
    char v[GFS_LINK_MAX + 1];
    int n = gc_attr_lookup(rec->attrs, GFS_LINK_ATTR, v, sizeof(v));
    if (n <= 0) {
        int in_data = gc_link_data_len(rec);
        return in_data > 0 ? in_data : n == -ERANGE ? GFS_EPROTO : -EINVAL;
    }
    size_t k = (size_t)n < len ? (size_t)n : len;
    memcpy(buf, v, k);
    return (int)k;
}

int gc_link_data_len(const gp_record *rec)
{
    char v[16], end;
    int n;
    if (gc_attr_lookup(rec->attrs, GC_LINK_DATA_ATTR, v, sizeof(v)) <= 0 ||
        sscanf(v, "%d%c", &n, &end) != 1 || n <= GC_LINK_INLINE ||
        n > GFS_LINK_MAX)
        return -EINVAL;
    return n;
}

int64_t gc_mtime_of(const gp_record *rec, int64_t data)
{
    char v[48];
    long long set, at;
    char end;
    if (!rec || gc_attr_lookup(rec->attrs, GFS_MTIME_ATTR, v, sizeof(v)) <= 0 ||
        sscanf(v, "%lld:%lld%c", &set, &at, &end) != 2)
        return data;
    return at == data ? (int64_t)set : data;
}

int gc_set_attr_changed(const char *name, const char *key, const char *value)
{
    return gc_set_attrs_changed(name, 1, &key, &value);
}

int gc_set_attrs_changed(const char *name, int n, const char *const *key,
                         const char *const *value)
{
    char now[24];
    snprintf(now, sizeof(now), "%" PRId64, gc_wall_ns());
    const char *keys[4], *values[4];
    if (n < 0 || n > 3)
        return -EINVAL;
    for (int i = 0; i < n; i++) {
        keys[i] = key[i];
        values[i] = value[i];
    }
    keys[n] = GFS_CTIME_ATTR;
    values[n] = now;
    return set_attrs(name, -1, n + 1, keys, values);
}

int gfs_chmod(const char *name, unsigned mode)
{
    int rc = gc_check_init();
    if (!rc)
        rc = gc_check_name(name, GFS_NAME_MAX);
    if (rc)
        return rc;
    if (mode > 07777)
        return -EINVAL;
    char v[16];
    snprintf(v, sizeof(v), "%o", mode);
    return gc_set_attr_changed(name, GFS_MODE_ATTR, v);
}

int gfs_get_attr(int fid, const char *key, char *value, size_t len)
{
    gc_file f;
    int rc = file_and_key(fid, key, &f);
    if (rc)
        return rc;
    if (!value)
        return -EINVAL;
    return gc_attr_lookup(f.rec.attrs, key, value, len);
}

/* ------------------------------------------------------- public API --- */

int gfs_open_file(const char *name)
{
    return gc_file_open(name);
}

int gfs_close_file(int fid)
{
    return gc_file_close(fid);
}

int gfs_delete_file(const char *name)
{
    return gc_file_delete(name);
}

int gfs_set_attr(int fid, const char *key, const char *value)
{
    return gc_set_attr(fid, key, value);
}

/* The opt-in is an attribute of the record (galley.checksum), so every
 * client that opens the file learns it with the record, and nothing on
 * the NameServer changes; the servers learn it from IO_CWRITE (servers/
 * csum.c). */
int gfs_set_checksum(int fid, const char *algo)
{
    if (!algo || (strcmp(algo, "crc32c") != 0 && strcmp(algo, "none") != 0))
        return -EINVAL;
    return gc_set_attr(fid, GC_CHECKSUM_ATTR, algo);
}
