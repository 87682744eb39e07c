/*
 * statahead.c -- stat-ahead, after Lustre's statahead: a process that
 * stats the files of one directory one after another (`ls -l`, `find`,
 * `rsync`, a Python scandir-and-stat loop, mdtest's stat phase) has the
 * records and sizes of the directory's files fetched together, so that
 * the stats after it are answered from the record cache (rcache.c) with
 * no request.
 *
 * When a stat finds neither a leased record nor a size in the cache
 * (striped_size.c) and the stat before it that missed was of a file in
 * the same directory, this fetches the directory: its names (every
 * server's NS_LIST at once), then, for up to GALLEY_MD_STATAHEAD
 * (default 4096; 0: off) of its files that the cache does not hold with
 * a size, their records under leases (NS_LEASE_MANY: up to GP_MAX_LEASES
 * names in one request to their metadata server) and their data forks'
 * sizes (FORK_SIZES: every subfile of a round's files at a server in one
 * request), each round's requests to every server sent before the first
 * answer is read.  What it fetches is exactly what
 * a stat of each would have put in the cache, under the same leases, so
 * a stat answered from it means what rcache.c says a cached stat means.
 * A directory is fetched again only after SA_AGAIN_MS, so that files
 * made after a fetch cost one fetch, not one per stat.  A replicated
 * file, the locality layout and links are left to their own stat.
 *
 * Threads: any.  sa.lock, a leaf lock, guards the last miss and the last
 * fetch; a fetch runs without it (two threads may fetch two directories
 * at once; a directory being fetched is not fetched by another thread).
 * A fork() takes it (atfork handlers), so a child never finds it held.
 */
#include "striped_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SA_AGAIN_MS 1000

static struct {
    pthread_mutex_t lock;
    char last[GFS_NAME_MAX + 1];    /* the directory of the last miss */
    char fetched[GFS_NAME_MAX + 1]; /* the directory last fetched */
    int64_t fetched_at;             /* when (ms), 0: never */
} sa = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t sa_once = PTHREAD_ONCE_INIT;

static void sa_prepare(void)
{
    pthread_mutex_lock(&sa.lock);
}

static void sa_after(void)
{
    pthread_mutex_unlock(&sa.lock);
}

static void sa_init(void)
{
    pthread_atfork(sa_prepare, sa_after, sa_after);
}

/* The names of a directory's files that a stat-ahead fetches. */
typedef struct {
    const char *prefix; /* "DIR/", or "" for the top */
    size_t plen;
    char **names;
    int n, max;
} sa_list;

static int collect(const char *name, void *arg)
{
    sa_list *l = arg;
    const char *rest = name + l->plen;
    if (!*rest || strchr(rest, '/')) /* (deeper: not this directory's) */
        return 0;
    int64_t size;
    gp_record *rec = malloc(sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    int hit = gc_rcache_leased(name, rec, &size, NULL);
    free(rec);
    if (hit == RC_LEASED && size >= 0)
        return 0;
    if (l->n == l->max)
        return 1; /* enough: stop listing */
    if (!(l->names[l->n] = strdup(name)))
        return -ENOMEM;
    l->n++;
    return 0;
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
    uint8_t *hids;      /* FORK_SIZES's hids */
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
        f->pos[j] = v->nhid;
        for (int b = 0; b < 8; b++)
            v->hids[v->nhid * 8 + (uint32_t)b] =
                (uint8_t)(rec->hid[j] >> (8 * b));
        v->nhid++;
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
        gc_rcache_size(f->name, total, mt, at, closes);
}

/* One round over the first names, up to GP_MAX_LEASES of them per
 * metadata server: every server's NS_LEASE_MANY at once, then every
 * server's FORK_SIZES at once.  How many names it took. */
static int fetch_round(char **names, int n, gp_record *rec)
{
    int ns = gc_g.nservers;
    sa_file *files = calloc((size_t)n, sizeof(*files));
    sa_server *sv = calloc((size_t)ns, sizeof(*sv));
    bool ok = files && sv;
    for (int s = 0; ok && s < ns; s++) {
        sv[s].names = malloc((size_t)GP_MAX_LEASES * (GFS_NAME_MAX + 1));
        sv[s].file = malloc(GP_MAX_LEASES * sizeof(int));
        sv[s].hids = malloc(GP_MAX_DELETES * 8);
        ok = sv[s].names && sv[s].file && sv[s].hids;
    }
    if (!ok)
        goto out;
    for (int i = 0; i < n; i++) {
        sa_server *v = &sv[gc_meta_server(names[i])];
        if (v->nnames == GP_MAX_LEASES) {
            n = i; /* (the next round's) */
            break;
        }
        files[i].name = names[i];
        size_t len = strlen(names[i]) + 1;
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
            gc_FORK_SIZES_send(gc_server_conn(s),
                               &(gp_FORK_SIZES_req){.fork = fork,
                                                    .hids = sv[s].hids,
                                                    .hids_len = sv[s].nhid * 8},
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
        free(sv[s].hids);
        free(sv[s].item);
    }
    free(files);
    free(sv);
    return ok ? n : 0;
}

/* The files of dir the cache lacks, a round at a time. */
static void fetch(const char *dir, int max)
{
    char prefix[GFS_NAME_MAX + 2];
    snprintf(prefix, sizeof(prefix), "%s%s", dir, *dir ? "/" : "");
    sa_list l = {.prefix = prefix, .plen = strlen(prefix), .max = max};
    l.names = calloc((size_t)max, sizeof(*l.names));
    gp_record *rec = malloc(sizeof(*rec));
    if (l.names && rec && gc_list_names(prefix, collect, &l) >= 0)
        for (int i = 0, k = 1; i < l.n && k > 0; i += k)
            k = fetch_round(l.names + i, l.n - i, rec);
    for (int i = 0; i < l.n; i++)
        free(l.names[i]);
    free(l.names);
    free(rec);
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
    pthread_mutex_lock(&sa.lock);
    bool again =
        strcmp(sa.last, dir) == 0 &&
        !(strcmp(sa.fetched, dir) == 0 && now - sa.fetched_at < SA_AGAIN_MS);
    memcpy(sa.last, dir, dlen + 1);
    if (again) {
        memcpy(sa.fetched, dir, dlen + 1);
        sa.fetched_at = now;
    }
    pthread_mutex_unlock(&sa.lock);
    if (again)
        fetch(dir, max);
    return again;
}
