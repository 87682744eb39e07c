/*
 * statahead.c -- stat-ahead, after Lustre's statahead: a process that
 * stats the files of one directory one after another (`ls -l`, `find`,
 * `rsync`, a Python scandir-and-stat loop, mdtest's stat phase) has the
 * records and sizes of the directory's files fetched together, so that
 * the stats after it are answered from the record cache (rcache.c) with
 * no request.
 *
 * After a stat that had to ask the servers (striped_size.c: no leased
 * record and size in the cache), when the stat before it that asked was
 * of a file in the same directory, this fetches the directory: its names
 * (every server's NS_LIST at once), then, for up to GALLEY_MD_STATAHEAD
 * (default 4096; 0: off) of its files that the cache does not hold with
 * a size, the first after the stat's name in version order (file.9
 * before file.10: the order numbered files are made and read in), or in
 * byte order when the stats go that way (they follow readdir), their
 * records under leases (NS_LEASE_MANY: up to GP_MAX_LEASES names, or
 * GP_ATTR_MAX bytes of them, in one request to their metadata server)
 * and their data forks' sizes (FORK_SIZES: every subfile of a round's files at
 * a server in one request), each round's requests to every server sent before
 * the first answer is read.  What it fetches is exactly what a stat of each
 * would have put in the cache, under the same leases, so a stat answered from
 * it means what rcache.c says a cached stat means.  A replicated file,
 * the locality layout and links are left to their own stat.
 *
 * When it pays.  A fetched file costs about a seventh of a stat's own
 * requests, so a fetch pays when at least that share of what it fetched
 * is stat'ed afterwards: `ls -l` and mdtest stat every file, but `find
 * -name X -newer F` stats only the files whose names match.  So, as
 * Lustre's statahead stops at a low hit rate, a process fetches no more
 * files than its credit: SA_CREDIT to start with, refilled up to
 * SA_CREDIT at SA_CREDIT a second, plus SA_EARN for every fetched file a
 * stat used (gc_rcache_ahead_used), at most SA_CREDIT_MAX.  So stats that use
 * what is fetched double the next fetch again and again, and a process whose
 * stats do not wastes at most SA_CREDIT files' fetch a second.  A fetch
 * lists the whole directory (or uses the process's last listing, when it
 * was of that directory and less than SA_AGAIN_MS old: the readdir
 * before the stats), so none is made for fewer than SA_MIN files.  A directory
 * is fetched again only after SA_AGAIN_MS (files made after a fetch cost one
 * fetch, not one per stat), unless its last fetch stopped at its limit.
 *
 * Threads: any.  sa.lock, a leaf lock, guards the last miss and the last
 * fetch; a fetch runs without it (two threads may fetch two directories
 * at once; a directory being fetched is not fetched by another thread).
 * A fork() takes it (atfork handlers), so a child never finds it held.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strverscmp */
#endif
#include "striped_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SA_AGAIN_MS 1000
#define SA_CREDIT 64
#define SA_CREDIT_MAX 65536
#define SA_EARN 4
#define SA_MIN 32
#define SA_LIST_MAX 65536

static struct {
    pthread_mutex_t lock;
    char last[GFS_NAME_MAX + 1];    /* the last stat that asked */
    char fetched[GFS_NAME_MAX + 1]; /* the directory last fetched */
    int64_t fetched_at;             /* when (ms), 0: never */
    bool cut;                       /* that fetch stopped at its limit */
    int64_t credit;                 /* files it may fetch now */
    uint64_t used;                  /* gc_rcache_ahead_used then */
    int64_t credit_at;              /* then (ms), 0: never */
} sa = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* A directory's files, as a fetch lists them. */
typedef struct {
    size_t plen; /* of "DIR/" ("" for the top) */
    char **names;
    int n, cap;
} sa_list;

/* The directory the last fetch listed, kept for SA_AGAIN_MS: the fetches
 * that follow in it (a window each) pick their names from it without
 * listing or sorting it again.  Under kept_lock (a leaf lock but for
 * rcache.c's, taken inside it; a fork() takes it). */
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char prefix[GFS_NAME_MAX + 2];
    int64_t at;  /* when it was listed (ms) */
    bool more;   /* the listing stopped at SA_LIST_MAX */
    sa_list l;   /* in byte order (a listing's) */
    char **vers; /* the same names in version order, once asked for */
} kept;

static pthread_once_t sa_once = PTHREAD_ONCE_INIT;

static void sa_prepare(void)
{
    pthread_mutex_lock(&sa.lock);
    pthread_mutex_lock(&kept_lock);
}

static void sa_after(void)
{
    pthread_mutex_unlock(&kept_lock);
    pthread_mutex_unlock(&sa.lock);
}

static void sa_init(void)
{
    pthread_atfork(sa_prepare, sa_after, sa_after);
}

static int collect(const char *name, void *arg)
{
    sa_list *l = arg;
    const char *rest = name + l->plen;
    if (!*rest || strchr(rest, '/')) /* (deeper: not this directory's) */
        return 0;
    if (l->n == l->cap) {
        if (l->cap == SA_LIST_MAX)
            return 1; /* (a window of these is enough) */
        int cap = l->cap ? 2 * l->cap : 256;
        char **n = realloc(l->names, (size_t)cap * sizeof(*n));
        if (!n)
            return -ENOMEM;
        l->names = n;
        l->cap = cap;
    }
    if (!(l->names[l->n] = strdup(name)))
        return -ENOMEM;
    l->n++;
    return 0;
}

static void list_free(sa_list *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    *l = (sa_list){0};
}

static int cmp_version(const void *a, const void *b)
{
    return strverscmp(*(char *const *)a, *(char *const *)b);
}

/* A file of a round: its record's subfiles, and where each one's size
 * is in its server's FORK_SIZES. */
typedef struct {
    const char *name;
    bool sized; /* its forks' sizes are asked */
    gfs_layout lay;
    uint32_t nsub;
    uint32_t *server, *pos;
} sa_file;

/* A server's part of a round. */
typedef struct {
    int nnames;
    size_t nameslen;
    char *names;     /* NS_LEASE_MANY's names */
    int *file;       /* the round's file of each */
    gc_pending look; /* its NS_LEASE_MANY */
    uint32_t nhid;
    gp_wbuf hids;       /* FORK_SIZES's hids */
    gc_pending sizes;   /* its FORK_SIZES */
    gp_SIZE_item *item; /* the answers, by position */
} sa_server;

/* A file's record from its server's answer: leased in the cache, and its
 * subfiles added to their servers' FORK_SIZES when it is a plain striped
 * file whose layout's fork is `fork`. */
static void take(sa_file *f, const gp_record *rec, const gp_LEASED_item *it,
                 int meta, int64_t sent, uint64_t epoch, sa_server *sv,
                 const char *fork)
{
    gc_rcache_lease(f->name, rec, meta, sent, it->lease_ms, epoch, -1);
    char link[GFS_LINK_MAX];
    if (!it->lease_ms || rec->repl.ncopy > 1 || gc_st_layout_of(rec, &f->lay) ||
        gc_st_is_local_layout(rec) || strcmp(f->lay.fork, fork) ||
        gc_link_of(rec, link, sizeof(link)) >= 0)
        return;
    for (uint32_t j = 0; j < rec->nsub; j++)
        if (rec->server[j] >= (uint32_t)gc_g.nservers ||
            sv[rec->server[j]].nhid + rec->nsub > GP_MAX_DELETES)
            return;
    f->server = malloc(rec->nsub * sizeof(*f->server));
    f->pos = malloc(rec->nsub * sizeof(*f->pos));
    if (!f->server || !f->pos)
        return;
    f->nsub = rec->nsub;
    for (uint32_t j = 0; j < rec->nsub; j++) {
        sa_server *v = &sv[rec->server[j]];
        f->server[j] = rec->server[j];
        f->pos[j] = v->nhid++;
        gp_put_u64(&v->hids, rec->hid[j]);
    }
    f->sized = true;
}

/* The answers of server s's NS_LEASE_MANY. */
static void leased(sa_server *v, int s, sa_file *files, int64_t sent,
                   gp_record *rec, sa_server *sv, const char *fork)
{
    gc_tail t;
    gp_NS_LEASE_MANY_rep m;
    if (gc_NS_LEASE_MANY_recv(&v->look, &m, &t))
        return;
    for (uint32_t i = 0; i < m.n && i < (uint32_t)v->nnames && !t.r.err; i++) {
        gp_LEASED_item it;
        if (gp_LEASED_item_decode(&t.r, &it) || it.err)
            continue;
        gp_get_record(&t.r, rec);
        if (!t.r.err)
            take(&files[v->file[i]], rec, &it, s, sent, m.epoch, sv, fork);
    }
    gc_tail_end(&t);
}

/* The answers of server s's FORK_SIZES, by position. */
static void sized(sa_server *v)
{
    gc_tail t;
    gp_FORK_SIZES_rep m;
    if (gc_FORK_SIZES_recv(&v->sizes, &m, &t))
        return;
    v->item = calloc(v->nhid, sizeof(*v->item));
    for (uint32_t i = 0; v->item && i < m.n && i < v->nhid && !t.r.err; i++)
        if (gp_SIZE_item_decode(&t.r, &v->item[i]))
            break;
    if (gc_tail_end(&t) || m.n != v->nhid) {
        free(v->item);
        v->item = NULL;
    }
}

/* A file's size from its subfiles' answers, into the cache. */
static void size_of(sa_file *f, sa_server *sv, int64_t at, uint64_t closes)
{
    int64_t sizes[GP_MAX_SUBFILES], mt = 0;
    for (uint32_t j = 0; j < f->nsub; j++) {
        gp_SIZE_item *it = sv[f->server[j]].item;
        if (!it)
            return;
        it += f->pos[j];
        if (it->err == ENOENT) { /* (a subfile without the fork yet) */
            sizes[j] = 0;
            continue;
        }
        if (it->err || it->size > INT64_MAX || it->mtime > INT64_MAX)
            return;
        sizes[j] = (int64_t)it->size;
        if ((int64_t)it->mtime > mt)
            mt = (int64_t)it->mtime;
    }
    int64_t total = gc_st_logical_size(&f->lay, sizes);
    if (total >= 0)
        gc_rcache_size(f->name, total, mt, at, closes, true);
}

/* One round over the first names, up to GP_MAX_LEASES of them (and
 * GP_ATTR_MAX bytes) per metadata server: every server's NS_LEASE_MANY
 * at once, then every server's FORK_SIZES at once.  How many names it
 * took. */
static int fetch_round(char **names, int n, gp_record *rec)
{
    int ns = gc_g.nservers;
    sa_file *files = calloc((size_t)n, sizeof(*files));
    sa_server *sv = calloc((size_t)ns, sizeof(*sv));
    bool ok = files && sv;
    for (int s = 0; ok && s < ns; s++) {
        sv[s].names = malloc(GP_ATTR_MAX);
        sv[s].file = malloc(GP_MAX_LEASES * sizeof(int));
        gp_wbuf_init(&sv[s].hids);
        ok = sv[s].names && sv[s].file;
    }
    if (!ok)
        goto out;
    for (int i = 0; i < n; i++) {
        sa_server *v = &sv[gc_meta_server(names[i])];
        size_t len = strlen(names[i]) + 1;
        if (v->nnames == GP_MAX_LEASES || v->nameslen + len > GP_ATTR_MAX) {
            n = i; /* (the next round's) */
            break;
        }
        files[i].name = names[i];
        memcpy(v->names + v->nameslen, names[i], len);
        v->nameslen += len;
        v->file[v->nnames++] = i;
    }
    uint64_t client = gc_rcache_client();
    int64_t sent = g_now_ms();
    for (int s = 0; s < ns; s++)
        if (sv[s].nnames)
            gc_NS_LEASE_MANY_send(
                gc_server_conn(s),
                &(gp_NS_LEASE_MANY_req){.client = client,
                                        .names = (uint8_t *)sv[s].names,
                                        .names_len = (uint32_t)sv[s].nameslen},
                &sv[s].look);
    /* (a layout of another fork is left to its file's own stat) */
    const char *fork = GFS_DEFAULT_STRIPE_FORK;
    for (int s = 0; s < ns; s++)
        if (sv[s].nnames)
            leased(&sv[s], s, files, sent, rec, sv, fork);
    for (int s = 0; s < ns; s++)
        if (sv[s].nhid)
            gc_FORK_SIZES_send(
                gc_server_conn(s),
                &(gp_FORK_SIZES_req){.fork = fork,
                                     .hids = sv[s].hids.data,
                                     .hids_len = (uint32_t)sv[s].hids.len},
                &sv[s].sizes);
    /* (a file id closed after this may have written: its size is then
     * not kept, as in a stat's own fan-out) */
    int64_t at = g_now_ms();
    uint64_t closes = gc_rcache_closes();
    for (int s = 0; s < ns; s++)
        if (sv[s].nhid)
            sized(&sv[s]);
    for (int i = 0; i < n; i++)
        if (files[i].sized)
            size_of(&files[i], sv, at, closes);
out:
    for (int i = 0; files && i < n; i++) {
        free(files[i].server);
        free(files[i].pos);
    }
    for (int s = 0; sv && s < ns; s++) {
        free(sv[s].names);
        free(sv[s].file);
        gp_wbuf_free(&sv[s].hids);
        free(sv[s].item);
    }
    free(files);
    free(sv);
    return ok ? n : 0;
}

/* Make kept the listing of prefix, unless it is already and younger than
 * SA_AGAIN_MS (kept_lock not held; the listing asks with none held).  0
 * or an error. */
static int keep_listing(const char *prefix)
{
    pthread_mutex_lock(&kept_lock);
    bool fresh = kept.l.names && strcmp(kept.prefix, prefix) == 0 &&
                 g_now_ms() - kept.at < SA_AGAIN_MS;
    pthread_mutex_unlock(&kept_lock);
    if (fresh)
        return 0;
    sa_list l = {.plen = strlen(prefix)};
    int64_t at = g_now_ms();
    int rc = gc_list_names_recent(prefix, SA_AGAIN_MS, collect, &l);
    if (rc < 0) {
        list_free(&l);
        return rc;
    }
    pthread_mutex_lock(&kept_lock);
    list_free(&kept.l);
    free(kept.vers);
    kept.vers = NULL;
    kept.l = l;
    kept.at = at;
    kept.more = rc == 1;
    snprintf(kept.prefix, sizeof(kept.prefix), "%s", prefix);
    pthread_mutex_unlock(&kept_lock);
    return 0;
}

/* Up to max files of name's directory that the cache lacks, the first
 * after name in version order (file.9 before file.10), or in byte order
 * (lex: the order of readdir), wrapping around; a round at a time.  How
 * many it fetched, and *cut when there were more. */
static int fetch(const char *name, size_t dlen, int max, bool lex, bool *cut)
{
    char prefix[GFS_NAME_MAX + 2];
    memcpy(prefix, name, dlen);
    memcpy(prefix + dlen, "/", 2);
    if (!dlen)
        prefix[0] = 0;
    *cut = false;
    if (max <= 0 || keep_listing(prefix))
        return 0;
    char **win = malloc((size_t)max * sizeof(*win));
    int n = 0;
    pthread_mutex_lock(&kept_lock);
    int total = kept.l.n;
    char **order = kept.l.names;
    if (win && !lex && total && strcmp(kept.prefix, prefix) == 0) {
        if (!kept.vers &&
            (kept.vers = malloc((size_t)total * sizeof(char *)))) {
            memcpy(kept.vers, order, (size_t)total * sizeof(char *));
            qsort(kept.vers, (size_t)total, sizeof(char *), cmp_version);
        }
        order = kept.vers;
    }
    if (win && order && strcmp(kept.prefix, prefix) == 0) {
        int (*cmp)(const char *, const char *) = lex ? strcmp : strverscmp;
        int lo = 0, hi = total; /* the first after name */
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (cmp(order[mid], name) <= 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        int i = 0;
        for (; i < total && n < max; i++) {
            const char *x = order[(lo + i) % total];
            if (gc_rcache_has_size(x))
                continue;
            if (!(win[n] = strdup(x)))
                break;
            n++;
        }
        *cut = i < total || kept.more;
    }
    pthread_mutex_unlock(&kept_lock);
    gp_record *rec = n ? malloc(sizeof(*rec)) : NULL;
    int done = 0;
    for (int k = 1; rec && done < n && k > 0; done += k)
        k = fetch_round(win + done, n - done, rec);
    for (int i = 0; i < n; i++)
        free(win[i]);
    free(win);
    free(rec);
    return done;
}

bool gc_statahead(const char *name)
{
    int max = (int)g_config_int(G_CFG_MD_STATAHEAD);
    if (max <= 0)
        return false;
    pthread_once(&sa_once, sa_init);
    const char *slash = strrchr(name, '/');
    size_t dlen = slash ? (size_t)(slash - name) : 0;
    char dir[GFS_NAME_MAX + 1];
    memcpy(dir, name, dlen);
    dir[dlen] = 0;
    int64_t now = g_now_ms();
    uint64_t used = gc_rcache_ahead_used();
    pthread_mutex_lock(&sa.lock);
    /* (stats that go forward in byte order but back in version order,
     * file.1099 then file.11, follow readdir: ls -l, find) */
    bool lex = strcmp(sa.last, name) < 0 && strverscmp(sa.last, name) > 0;
    bool again = strlen(sa.last) > dlen && sa.last[dlen] == '/' &&
                 strncmp(sa.last, name, dlen) == 0 &&
                 !strchr(sa.last + dlen + 1, '/') &&
                 !(strcmp(sa.fetched, dir) == 0 && !sa.cut &&
                   now - sa.fetched_at < SA_AGAIN_MS);
    if (!sa.credit_at) {
        sa.credit = SA_CREDIT;
    } else { /* (time refills it up to SA_CREDIT, use beyond) */
        int64_t refill = SA_CREDIT * (now - sa.credit_at) / 1000;
        if (sa.credit < SA_CREDIT)
            sa.credit =
                sa.credit + refill < SA_CREDIT ? sa.credit + refill : SA_CREDIT;
        sa.credit += SA_EARN * (int64_t)(used - sa.used);
    }
    if (sa.credit > SA_CREDIT_MAX)
        sa.credit = SA_CREDIT_MAX;
    sa.used = used;
    sa.credit_at = now;
    if (sa.credit < max)
        max = (int)(sa.credit > 0 ? sa.credit : 0);
    again = again && max >= SA_MIN;
    snprintf(sa.last, sizeof(sa.last), "%s", name);
    if (again) {
        memcpy(sa.fetched, dir, dlen + 1);
        sa.fetched_at = now;
        sa.cut = false;
    }
    pthread_mutex_unlock(&sa.lock);
    if (!again)
        return false;
    bool cut;
    int n = fetch(name, dlen, max, lex, &cut);
    pthread_mutex_lock(&sa.lock);
    sa.credit -= n;
    if (strcmp(sa.fetched, dir) == 0)
        sa.cut = cut;
    pthread_mutex_unlock(&sa.lock);
    return true;
}
