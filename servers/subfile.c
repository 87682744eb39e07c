/*
 * subfile.c -- subfile headers and their fork tables (SUB_*, FORK_* except
 * the data path, FETCH_ADD).
 *
 * Threads: ops run on handler threads; gsrv_sub_init/fini on the main
 * thread.  Two locks:
 *   subtab.meta  serialises every change of metadata (subfile headers,
 *                counters, the hid counter, the fork tables) and is held
 *                across the fsyncs; taken first.
 *   subtab.lock  guards the in-memory table (hash, fork arrays, a fork's
 *                opens/refs/flags); held only briefly, never across a
 *                write or fsync, so the data path's gsrv_fork_get never
 *                waits for a metadata fsync.  A leaf lock.
 * A metadata change reads the table and builds the new header image under
 * subtab.lock, writes it with only subtab.meta held, then applies it under
 * subtab.lock again; only meta holders change fork tables, so the image
 * stays valid meanwhile.  Forks that leave the table while a request still
 * uses them are put on a "reap" list and freed after both locks are
 * dropped (freeing takes cache.lock).  The data path (io.c) holds a fork
 * reference (gsrv_fork_get) and the fork's rwlock, never these locks.
 *
 * Identity: a subfile header id (hid) comes from a persisted counter and is
 * never reused; a fork's index within its subfile comes from the header's
 * next-index field and is never reused either.  fkid = hid << 16 | index is
 * therefore a handle that stays valid across restarts and can never name a
 * different fork later; a fork that no longer exists gives GFS_ESTALE.
 *
 * Every header change is "build the new image, write it durably (meta.c),
 * then apply it in memory", so memory and disk agree when a write fails.
 *
 * Deletion: FORK_DELETE and SUB_DELETE first mark (durably, a header
 * flag), then remove whatever nobody has open; a fork still open leaves
 * the table and its data file is unlinked at its last close, and a marked
 * subfile's header disappears with its last fork.  Marks left by a crash
 * are completed at startup.  On a full disk (no room for the mark) a
 * subfile nobody has open is removed at once, unmarked, so that deleting
 * always frees space.
 */
#include "gsrv_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SUB_MAGIC 0x42555347u /* "GSUB" */
#define CTR_MAGIC 0x52544347u /* "GCTR" */
#define HID_MAGIC 0x44494847u /* "GHID" */
#define SUB_FORMAT 1

typedef struct sub_counter {
    char *key;
    uint64_t value;
} sub_counter;

typedef struct gsrv_sub {
    struct gsrv_sub *hnext;
    uint64_t hid;
    char *filename;
    uint32_t subidx;
    uint32_t next_fork; /* next index to hand out; GSRV_MAX_FORK_INDEX+1 = none */
    bool deleted;
    gsrv_fork **forks;  /* in the table (live and marked), sorted by index */
    size_t nforks, capforks;
    sub_counter *ctr;
    size_t nctr;
} gsrv_sub;

static struct {
    pthread_mutex_t meta; /* serialises metadata changes (held over fsync) */
    pthread_mutex_t lock; /* the in-memory table (held briefly) */
    gsrv_sub **bucket;
    size_t nbuckets;      /* power of two */
    size_t nsubs;
    uint64_t next_hid;    /* subtab.meta */
} subtab = {
    .meta = PTHREAD_MUTEX_INITIALIZER,
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

/* One fork as a header image describes it. */
typedef struct hdr_fork {
    uint32_t idx;
    const char *name;
    bool deleted;
} hdr_fork;

/* ------------------------------------------------------------ paths ---- */

static void sub_dir(uint64_t hid, char *out, size_t len)
{
    snprintf(out, len, "sub/%" PRIu64, hid);
}

static void sub_file(uint64_t hid, const char *what, char *out, size_t len)
{
    snprintf(out, len, "sub/%" PRIu64 "/%s", hid, what);
}

static void fork_file(uint64_t hid, uint32_t idx, char *out, size_t len)
{
    snprintf(out, len, "sub/%" PRIu64 "/%" PRIu32 ".dat", hid, idx);
}

/* ------------------------------------------------------------ table ---- */

static size_t hid_slot(uint64_t hid)
{
    uint64_t h = hid * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 20) & (subtab.nbuckets - 1);
}

static gsrv_sub *sub_find(uint64_t hid)
{
    for (gsrv_sub *s = subtab.bucket[hid_slot(hid)]; s; s = s->hnext)
        if (s->hid == hid)
            return s;
    return NULL;
}

static gsrv_sub *sub_find_live(uint64_t hid)
{
    gsrv_sub *s = sub_find(hid);
    return s && !s->deleted ? s : NULL;
}

static int tab_grow(void)
{
    size_t nb = subtab.nbuckets ? subtab.nbuckets * 2 : 1024;
    gsrv_sub **b = calloc(nb, sizeof(*b));
    if (!b)
        return -ENOMEM;
    gsrv_sub **old = subtab.bucket;
    size_t oldn = subtab.nbuckets;
    subtab.bucket = b;
    subtab.nbuckets = nb;
    for (size_t i = 0; i < oldn; i++) {
        gsrv_sub *s = old[i];
        while (s) {
            gsrv_sub *next = s->hnext;
            size_t k = hid_slot(s->hid);
            s->hnext = b[k];
            b[k] = s;
            s = next;
        }
    }
    free(old);
    return 0;
}

static void tab_insert(gsrv_sub *s)
{
    if (subtab.nsubs >= subtab.nbuckets)
        tab_grow(); /* on failure chains just get longer */
    size_t k = hid_slot(s->hid);
    s->hnext = subtab.bucket[k];
    subtab.bucket[k] = s;
    subtab.nsubs++;
}

static void tab_remove(gsrv_sub *s)
{
    gsrv_sub **pp = &subtab.bucket[hid_slot(s->hid)];
    for (; *pp; pp = &(*pp)->hnext)
        if (*pp == s) {
            *pp = s->hnext;
            subtab.nsubs--;
            return;
        }
}

/* Index of fork `idx` in s->forks, or -1. */
static ssize_t fork_pos(const gsrv_sub *s, uint32_t idx)
{
    size_t lo = 0, hi = s->nforks;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->forks[mid]->index < idx)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->nforks && s->forks[lo]->index == idx ? (ssize_t)lo : -1;
}

/* The live (not marked) fork called name, or NULL. */
static gsrv_fork *fork_by_name(const gsrv_sub *s, const char *name)
{
    for (size_t i = 0; i < s->nforks; i++)
        if (!s->forks[i]->deleted && strcmp(s->forks[i]->name, name) == 0)
            return s->forks[i];
    return NULL;
}

static gsrv_fork *fork_new(uint64_t hid, uint32_t idx, const char *name)
{
    gsrv_fork *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->name = strdup(name);
    if (!f->name) {
        free(f);
        return NULL;
    }
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
#ifdef PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP
    /* a stream of readers must not starve a writer */
    pthread_rwlockattr_setkind_np(&ra,
                                  PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
    pthread_rwlock_init(&f->rw, &ra);
    pthread_rwlockattr_destroy(&ra);
    f->fkid = gsrv_fkid(hid, idx);
    f->index = idx;
    f->fd = -1;
    return f;
}

/* Free a fork object that has no cached blocks (never used for I/O, or the
 * whole cache is going away). */
static void fork_free(gsrv_fork *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    pthread_rwlock_destroy(&f->rw);
    free(f->name);
    free(f);
}

/* Free a fork that is out of the table and unreferenced; takes cache.lock,
 * so never called with subtab.lock held. */
static void fork_destroy(gsrv_fork *f)
{
    if (!f)
        return;
    gsrv_cache_drop_fork(f->fkid);
    fork_free(f);
}

static void reap(gsrv_fork *list)
{
    while (list) {
        gsrv_fork *next = list->reap_next;
        fork_destroy(list);
        list = next;
    }
}

static int forks_reserve(gsrv_sub *s, size_t n)
{
    if (n <= s->capforks)
        return 0;
    size_t cap = s->capforks ? s->capforks * 2 : 8;
    while (cap < n)
        cap *= 2;
    gsrv_fork **p = realloc(s->forks, cap * sizeof(*p));
    if (!p)
        return -ENOMEM;
    s->forks = p;
    s->capforks = cap;
    return 0;
}

static void sub_free(gsrv_sub *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nctr; i++)
        free(s->ctr[i].key);
    free(s->ctr);
    free(s->forks);
    free(s->filename);
    free(s);
}

/* ---------------------------------------------------- header images ---- */

/* The header image of s as it is now (caller frees *out). */
static int image_of(const gsrv_sub *s, hdr_fork **out)
{
    *out = malloc((s->nforks ? s->nforks : 1) * sizeof(**out));
    if (!*out)
        return -ENOMEM;
    for (size_t i = 0; i < s->nforks; i++) {
        (*out)[i].idx = s->forks[i]->index;
        (*out)[i].name = s->forks[i]->name;
        (*out)[i].deleted = s->forks[i]->deleted;
    }
    return 0;
}

static int write_header(const gsrv_sub *s, bool deleted, uint32_t next_fork,
                        const hdr_fork *v, size_t n)
{
    gp_wbuf w;
    char path[64];

    gp_wbuf_init(&w);
    gp_put_u32(&w, SUB_MAGIC);
    gp_put_u16(&w, SUB_FORMAT);
    gp_put_u64(&w, s->hid);
    gp_put_str(&w, s->filename);
    gp_put_u32(&w, s->subidx);
    gp_put_u8(&w, deleted);
    gp_put_u32(&w, next_fork);
    gp_put_u32(&w, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        gp_put_u32(&w, v[i].idx);
        gp_put_str(&w, v[i].name);
        gp_put_u8(&w, v[i].deleted);
    }
    int rc = w.err;
    if (!rc) {
        sub_file(s->hid, "header", path, sizeof(path));
        rc = gsrv_meta_write(path, w.data, w.len, true);
    }
    gp_wbuf_free(&w);
    return rc;
}

static int write_counters(const gsrv_sub *s, const sub_counter *c, size_t n)
{
    gp_wbuf w;
    char path[64];

    gp_wbuf_init(&w);
    gp_put_u32(&w, CTR_MAGIC);
    gp_put_u16(&w, SUB_FORMAT);
    gp_put_u32(&w, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        gp_put_str(&w, c[i].key);
        gp_put_u64(&w, c[i].value);
    }
    int rc = w.err;
    if (!rc) {
        sub_file(s->hid, "counters", path, sizeof(path));
        /* survives kill -9 (rename is atomic); no fsync per operation */
        rc = gsrv_meta_write(path, w.data, w.len, false);
    }
    gp_wbuf_free(&w);
    return rc;
}

static int write_next_hid(uint64_t next)
{
    gp_wbuf w;
    gp_wbuf_init(&w);
    gp_put_u32(&w, HID_MAGIC);
    gp_put_u64(&w, next);
    int rc = w.err ? w.err : gsrv_meta_write("next_hid", w.data, w.len, true);
    gp_wbuf_free(&w);
    return rc;
}

/* ------------------------------------------------------- removal ---- */

/* Take the fork at position pos out of s's table (subtab.lock held); it is
 * freed now or at its last reference, through *reaplist. */
static void fork_detach(gsrv_sub *s, size_t pos, gsrv_fork **reaplist)
{
    gsrv_fork *f = s->forks[pos];
    memmove(&s->forks[pos], &s->forks[pos + 1],
            (s->nforks - pos - 1) * sizeof(*s->forks));
    s->nforks--;
    f->gone = true;
    if (f->refs == 0) {
        f->reap_next = *reaplist;
        *reaplist = f;
    }
}

static void unlink_fork_file(uint64_t hid, uint32_t idx)
{
    char path[64];
    fork_file(hid, idx, path, sizeof(path));
    if (gsrv_meta_unlink(path))
        gsrv_log(0, "%s: cannot remove: %s", path, strerror(errno));
}

/* Remove subfile s and everything in it (subtab.meta held).  The header
 * goes first: it is the commit point; a directory without one is cleaned
 * up at startup.  s is freed. */
static int sub_destroy(gsrv_sub *s, gsrv_fork **reaplist)
{
    char path[64];
    uint64_t hid = s->hid;

    sub_file(hid, "header", path, sizeof(path));
    int rc = gsrv_meta_unlink(path);
    if (rc)
        return rc;
    sub_dir(hid, path, sizeof(path));
    gsrv_meta_sync_dir(path);

    pthread_mutex_lock(&subtab.lock);
    size_t n = s->nforks;
    uint32_t *idx = malloc((n ? n : 1) * sizeof(*idx));
    for (size_t i = 0; idx && i < n; i++)
        idx[i] = s->forks[i]->index;
    while (s->nforks)
        fork_detach(s, s->nforks - 1, reaplist);
    tab_remove(s);
    pthread_mutex_unlock(&subtab.lock);

    if (idx) {
        for (size_t i = 0; i < n; i++)
            unlink_fork_file(hid, idx[i]);
        free(idx); /* else startup removes the leftover directory */
    }
    sub_file(hid, "counters", path, sizeof(path));
    gsrv_meta_unlink(path);
    sub_dir(hid, path, sizeof(path));
    if (unlinkat(gsrv_g.dfd, path, AT_REMOVEDIR) < 0)
        gsrv_log(0, "%s: cannot remove: %s", path, strerror(errno));
    gsrv_meta_sync_dir("sub");
    sub_free(s);
    return 0;
}

/*
 * Finish deletions in s (subtab.meta held): forks that are marked and no
 * longer open leave the header, the table and the disk; a marked subfile
 * whose forks are all gone is destroyed.  On a failed header write the
 * marks stay and the work is redone at the next close or at startup.
 */
static int sub_collect(gsrv_sub *s, gsrv_fork **reaplist)
{
    hdr_fork *v = NULL;
    uint32_t *dead = NULL;
    size_t ndead = 0, n = 0;
    int rc = 0;

    pthread_mutex_lock(&subtab.lock);
    for (size_t i = 0; i < s->nforks; i++)
        ndead += s->forks[i]->deleted && s->forks[i]->opens == 0;
    if (ndead == 0 && !(s->deleted && s->nforks == 0)) {
        pthread_mutex_unlock(&subtab.lock);
        return 0;
    }
    if (s->deleted && ndead == s->nforks) {
        pthread_mutex_unlock(&subtab.lock);
        return sub_destroy(s, reaplist);
    }
    dead = malloc(ndead * sizeof(*dead));
    rc = dead ? image_of(s, &v) : -ENOMEM;
    ndead = 0;
    for (size_t i = 0; !rc && i < s->nforks; i++) {
        if (s->forks[i]->deleted && s->forks[i]->opens == 0)
            dead[ndead++] = s->forks[i]->index;
        else
            v[n++] = v[i];
    }
    pthread_mutex_unlock(&subtab.lock);
    if (rc)
        goto out_free;
    /* only holders of subtab.meta change the fork table or next_fork, so
     * the image stays valid while we write it */
    rc = write_header(s, s->deleted, s->next_fork, v, n);
    if (rc)
        goto out_free;
    pthread_mutex_lock(&subtab.lock);
    for (size_t i = 0; i < ndead; i++) {
        ssize_t pos = fork_pos(s, dead[i]);
        if (pos >= 0)
            fork_detach(s, (size_t)pos, reaplist);
    }
    pthread_mutex_unlock(&subtab.lock);
    for (size_t i = 0; i < ndead; i++)
        unlink_fork_file(s->hid, dead[i]);
out_free:
    free(v);
    free(dead);
    return rc;
}

/* ------------------------------------------------------- public API ---- */

int gsrv_fork_get(uint64_t fkid, gsrv_fork **out)
{
    int rc = 0;
    *out = NULL;
    pthread_mutex_lock(&subtab.lock);
    gsrv_sub *s = sub_find(gsrv_fkid_hid(fkid));
    ssize_t pos = s ? fork_pos(s, gsrv_fkid_idx(fkid)) : -1;
    if (pos < 0) {
        rc = GFS_ESTALE;
        goto out_unlock;
    }
    gsrv_fork *f = s->forks[pos];
    if (f->fd < 0) {
        char path[64];
        fork_file(s->hid, f->index, path, sizeof(path));
        f->fd = openat(gsrv_g.dfd, path, O_RDWR | O_CLOEXEC);
        if (f->fd < 0) {
            rc = errno == ENOENT ? GFS_ESTALE : -errno;
            goto out_unlock;
        }
    }
    f->refs++;
    *out = f;
out_unlock:
    pthread_mutex_unlock(&subtab.lock);
    return rc;
}

void gsrv_fork_put(gsrv_fork *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&subtab.lock);
    bool destroy = --f->refs == 0 && f->gone;
    pthread_mutex_unlock(&subtab.lock);
    if (destroy)
        fork_destroy(f);
}

void gsrv_fork_close(uint64_t fkid, uint32_t count)
{
    uint64_t hid = gsrv_fkid_hid(fkid);
    pthread_mutex_lock(&subtab.lock);
    gsrv_sub *s = sub_find(hid);
    ssize_t pos = s ? fork_pos(s, gsrv_fkid_idx(fkid)) : -1;
    bool collect = false;
    if (pos >= 0) {
        gsrv_fork *f = s->forks[pos];
        f->opens -= count < f->opens ? count : f->opens;
        collect = f->opens == 0 && f->deleted;
    }
    pthread_mutex_unlock(&subtab.lock);
    if (!collect)
        return;

    /* the last close of a marked fork: remove it now */
    gsrv_fork *reaplist = NULL;
    pthread_mutex_lock(&subtab.meta);
    pthread_mutex_lock(&subtab.lock);
    s = sub_find(hid); /* may be gone meanwhile: another close collected */
    pthread_mutex_unlock(&subtab.lock);
    int rc = s ? sub_collect(s, &reaplist) : 0;
    pthread_mutex_unlock(&subtab.meta);
    reap(reaplist);
    if (rc)
        gsrv_log(0, "fork %" PRIx64 ": deferred removal failed (%s); "
                 "finished at restart", fkid, gsrv_strerror(rc));
}

bool gsrv_sub_exists(uint64_t hid)
{
    pthread_mutex_lock(&subtab.lock);
    bool ok = sub_find_live(hid) != NULL;
    pthread_mutex_unlock(&subtab.lock);
    return ok;
}

void gsrv_sub_stats(uint64_t *nsubfiles, uint64_t *nforks,
                    uint64_t *bytes_used)
{
    *nsubfiles = *nforks = *bytes_used = 0;
    pthread_mutex_lock(&subtab.lock);
    for (size_t i = 0; i < subtab.nbuckets; i++)
        for (gsrv_sub *s = subtab.bucket[i]; s; s = s->hnext) {
            if (!s->deleted)
                (*nsubfiles)++;
            for (size_t k = 0; k < s->nforks; k++) {
                if (!s->forks[k]->deleted)
                    (*nforks)++;
                *bytes_used += gsrv_fork_size(s->forks[k]);
            }
        }
    pthread_mutex_unlock(&subtab.lock);
}

/* ------------------------------------------------------------- ops ---- */

static int get_fork_name(gp_rbuf *r, char *name)
{
    gp_get_str(r, name, GFS_FORK_NAME_MAX);
    return r->err;
}

static int check_fork_name(const char *name)
{
    return name[0] ? 0 : -EINVAL;
}

int gsrv_op_SUB_CREATE(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    char name[GFS_NAME_MAX + 1], path[64], hpath[64];
    gp_get_str(req, name, GFS_NAME_MAX);
    uint32_t subidx = gp_get_u32(req);
    int rc = gsrv_decoded(req);
    if (!rc)
        rc = gsrv_check_name(name);
    if (!rc && subidx >= GFS_MAX_SUBFILES)
        rc = -EINVAL;
    if (rc)
        return rc;

    gsrv_sub *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->filename = strdup(name);
    if (!s->filename) {
        rc = -ENOMEM;
        goto out_free_sub;
    }
    s->subidx = subidx;

    pthread_mutex_lock(&subtab.meta);
    uint64_t hid = subtab.next_hid;
    if (hid > GSRV_MAX_HID) {
        rc = -ENOSPC;
        goto out_unlock_meta;
    }
    /* the counter first: a crash later wastes an id, never reuses one */
    rc = write_next_hid(hid + 1);
    if (rc)
        goto out_unlock_meta;
    subtab.next_hid = hid + 1;
    s->hid = hid;
    sub_dir(hid, path, sizeof(path));
    if (mkdirat(gsrv_g.dfd, path, 0755) < 0) {
        rc = -errno;
        goto out_unlock_meta;
    }
    rc = write_header(s, false, 0, NULL, 0);
    if (!rc)
        rc = gsrv_meta_sync_dir("sub");
    if (rc)
        goto out_remove_dir;
    pthread_mutex_lock(&subtab.lock);
    tab_insert(s);
    pthread_mutex_unlock(&subtab.lock);
    pthread_mutex_unlock(&subtab.meta);
    gp_put_u64(&rep->w, hid);
    return 0;

out_remove_dir:
    sub_file(hid, "header", hpath, sizeof(hpath));
    gsrv_meta_unlink(hpath);
    unlinkat(gsrv_g.dfd, path, AT_REMOVEDIR);
out_unlock_meta:
    pthread_mutex_unlock(&subtab.meta);
out_free_sub:
    sub_free(s);
    return rc;
}

/* A full disk has no room for the deletion mark.  When nobody has a fork
 * of s open there is nothing to defer, so no mark is needed: s goes at
 * once (its header's unlink is the commit point) and frees its space.
 * Otherwise the mark's error stands.  subtab.meta held. */
static int delete_without_mark(gsrv_sub *s, int err, gsrv_fork **reaplist)
{
    pthread_mutex_lock(&subtab.lock);
    bool open = false;
    for (size_t i = 0; i < s->nforks; i++)
        open |= s->forks[i]->opens > 0;
    if (!open) {
        s->deleted = true;
        for (size_t i = 0; i < s->nforks; i++)
            s->forks[i]->deleted = true;
    }
    pthread_mutex_unlock(&subtab.lock);
    if (open)
        return err;
    gsrv_log(1, "sub/%" PRIu64 ": disk full, removed without a mark", s->hid);
    return sub_destroy(s, reaplist);
}

int gsrv_op_SUB_DELETE(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    uint64_t hid = gp_get_u64(req);
    int rc = gsrv_decoded(req);
    if (rc)
        return rc;
    gsrv_fork *reaplist = NULL;
    hdr_fork *v = NULL;
    pthread_mutex_lock(&subtab.meta);
    pthread_mutex_lock(&subtab.lock);
    gsrv_sub *s = sub_find_live(hid);
    if (!s)
        rc = GFS_ESTALE;
    else
        rc = image_of(s, &v);
    size_t n = s ? s->nforks : 0;
    pthread_mutex_unlock(&subtab.lock);
    if (rc)
        goto out_unlock_meta;
    /* mark everything, durably; then remove what nobody has open */
    for (size_t i = 0; i < n; i++)
        v[i].deleted = true;
    rc = write_header(s, true, s->next_fork, v, n);
    free(v);
    if (rc == -ENOSPC || rc == -EDQUOT) {
        rc = delete_without_mark(s, rc, &reaplist);
        goto out_unlock_meta;
    }
    if (rc)
        goto out_unlock_meta;
    pthread_mutex_lock(&subtab.lock);
    s->deleted = true;
    for (size_t i = 0; i < s->nforks; i++)
        s->forks[i]->deleted = true;
    pthread_mutex_unlock(&subtab.lock);
    int e = sub_collect(s, &reaplist);
    if (e)
        gsrv_log(0, "sub/%" PRIu64 ": removal failed (%s); finished at "
                 "restart", hid, gsrv_strerror(e));
out_unlock_meta:
    pthread_mutex_unlock(&subtab.meta);
    reap(reaplist);
    return rc;
}

int gsrv_op_FORK_CREATE(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    char name[GFS_FORK_NAME_MAX + 1], path[64];
    uint64_t hid = gp_get_u64(req);
    int rc = get_fork_name(req, name);
    if (!rc)
        rc = gsrv_decoded(req);
    if (!rc)
        rc = check_fork_name(name);
    if (rc)
        return rc;

    hdr_fork *v = NULL;
    gsrv_fork *f = NULL;
    pthread_mutex_lock(&subtab.meta);
    pthread_mutex_lock(&subtab.lock);
    gsrv_sub *s = sub_find_live(hid);
    if (!s)
        rc = GFS_ESTALE;
    else if (fork_by_name(s, name))
        rc = -EEXIST;
    else if (s->next_fork > GSRV_MAX_FORK_INDEX)
        rc = -ENOSPC; /* every index of this subfile has been used */
    else
        rc = forks_reserve(s, s->nforks + 1);
    if (!rc)
        rc = image_of(s, &v);
    size_t n = s ? s->nforks : 0;
    pthread_mutex_unlock(&subtab.lock);
    if (rc)
        goto out_unlock_meta;

    uint32_t idx = s->next_fork;
    f = fork_new(hid, idx, name);
    hdr_fork *grown = f ? realloc(v, (n + 1) * sizeof(*v)) : NULL;
    if (!grown) {
        rc = -ENOMEM;
        goto out_free_fork;
    }
    v = grown;
    fork_file(hid, idx, path, sizeof(path));
    f->fd = openat(gsrv_g.dfd, path,
                   O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f->fd < 0) {
        rc = -errno;
        goto out_free_fork;
    }
    /* New image: the current forks plus this one (indices only grow, so it
     * goes last).  Writing the header fsyncs the directory, which also
     * makes the new data file's entry durable. */
    v[n] = (hdr_fork){.idx = idx, .name = f->name, .deleted = false};
    rc = write_header(s, false, idx + 1, v, n + 1);
    if (rc)
        goto out_unlink_data;
    pthread_mutex_lock(&subtab.lock);
    s->forks[s->nforks++] = f; /* room reserved above */
    s->next_fork = idx + 1;
    pthread_mutex_unlock(&subtab.lock);
    f = NULL;
    goto out_unlock_meta;

out_unlink_data:
    gsrv_meta_unlink(path);
out_free_fork:
    fork_free(f); /* never visible: nothing cached */
out_unlock_meta:
    pthread_mutex_unlock(&subtab.meta);
    free(v);
    return rc;
}

int gsrv_op_FORK_OPEN(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    char name[GFS_FORK_NAME_MAX + 1];
    uint64_t hid = gp_get_u64(req);
    int rc = get_fork_name(req, name);
    if (!rc)
        rc = gsrv_decoded(req);
    if (!rc)
        rc = check_fork_name(name);
    if (rc)
        return rc;

    uint64_t fkid = 0, size = 0;
    pthread_mutex_lock(&subtab.lock);
    gsrv_sub *s = sub_find_live(hid);
    gsrv_fork *f = s ? fork_by_name(s, name) : NULL;
    if (!s)
        rc = GFS_ESTALE;
    else if (!f)
        rc = -ENOENT;
    else
        rc = gsrv_conn_add_open(c, f->fkid);
    if (!rc) {
        f->opens++;
        fkid = f->fkid;
        size = gsrv_fork_size(f);
    }
    pthread_mutex_unlock(&subtab.lock);
    if (rc)
        return rc;
    gp_put_u64(&rep->w, fkid);
    gp_put_u64(&rep->w, size);
    return 0;
}

int gsrv_op_FORK_REOPEN(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    uint64_t fkid = gp_get_u64(req);
    int rc = gsrv_decoded(req);
    if (rc)
        return rc;
    uint64_t size = 0;
    pthread_mutex_lock(&subtab.lock);
    gsrv_sub *s = sub_find(gsrv_fkid_hid(fkid));
    ssize_t pos = s ? fork_pos(s, gsrv_fkid_idx(fkid)) : -1;
    if (pos < 0) {
        rc = GFS_ESTALE;
    } else {
        /* also a marked fork: the client had it open before it lost its
         * connection, like an unlinked file a process keeps open */
        rc = gsrv_conn_add_open(c, fkid);
        if (!rc) {
            s->forks[pos]->opens++;
            size = gsrv_fork_size(s->forks[pos]);
        }
    }
    pthread_mutex_unlock(&subtab.lock);
    if (rc)
        return rc;
    gp_put_u64(&rep->w, size);
    return 0;
}

int gsrv_op_FORK_CLOSE(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    uint64_t fkid = gp_get_u64(req);
    int rc = gsrv_decoded(req);
    if (rc)
        return rc;
    rc = gsrv_conn_drop_open(c, fkid);
    if (rc)
        return rc;
    gsrv_fork_close(fkid, 1);
    return 0;
}

int gsrv_op_FORK_DELETE(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    char name[GFS_FORK_NAME_MAX + 1];
    uint64_t hid = gp_get_u64(req);
    int rc = get_fork_name(req, name);
    if (!rc)
        rc = gsrv_decoded(req);
    if (!rc)
        rc = check_fork_name(name);
    if (rc)
        return rc;

    gsrv_fork *reaplist = NULL;
    hdr_fork *v = NULL;
    size_t pos = 0, n = 0;
    pthread_mutex_lock(&subtab.meta);
    pthread_mutex_lock(&subtab.lock);
    gsrv_sub *s = sub_find_live(hid);
    gsrv_fork *f = s ? fork_by_name(s, name) : NULL;
    if (!s)
        rc = GFS_ESTALE;
    else if (!f)
        rc = -ENOENT;
    else
        rc = image_of(s, &v);
    if (!rc) {
        pos = (size_t)fork_pos(s, f->index);
        n = s->nforks;
    }
    pthread_mutex_unlock(&subtab.lock);
    if (rc)
        goto out_unlock_meta;
    /* Mark it, durably; then remove it now if nobody has it open (else at
     * its last close).  A crash in between is finished at startup. */
    v[pos].deleted = true;
    rc = write_header(s, false, s->next_fork, v, n);
    if (rc)
        goto out_unlock_meta;
    pthread_mutex_lock(&subtab.lock);
    f->deleted = true;
    pthread_mutex_unlock(&subtab.lock);
    int e = sub_collect(s, &reaplist);
    if (e)
        gsrv_log(0, "fork %" PRIx64 ": removal failed (%s); finished at "
                 "restart", f->fkid, gsrv_strerror(e));
out_unlock_meta:
    pthread_mutex_unlock(&subtab.meta);
    free(v);
    reap(reaplist);
    return rc;
}

typedef struct list_item {
    const char *name;
    uint64_t size;
} list_item;

static int cmp_list_item(const void *a, const void *b)
{
    return strcmp(((const list_item *)a)->name, ((const list_item *)b)->name);
}

int gsrv_op_FORK_LIST(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    uint64_t hid = gp_get_u64(req);
    int rc = gsrv_decoded(req);
    if (rc)
        return rc;
    pthread_mutex_lock(&subtab.lock);
    gsrv_sub *s = sub_find_live(hid);
    if (!s) {
        rc = GFS_ESTALE;
        goto out_unlock;
    }
    list_item *v = malloc((s->nforks ? s->nforks : 1) * sizeof(*v));
    if (!v) {
        rc = -ENOMEM;
        goto out_unlock;
    }
    size_t n = 0;
    for (size_t i = 0; i < s->nforks; i++)
        if (!s->forks[i]->deleted)
            v[n++] = (list_item){s->forks[i]->name,
                                 gsrv_fork_size(s->forks[i])};
    qsort(v, n, sizeof(*v), cmp_list_item);
    gp_put_u32(&rep->w, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        gp_put_str(&rep->w, v[i].name);
        gp_put_u64(&rep->w, v[i].size);
    }
    free(v);
out_unlock:
    pthread_mutex_unlock(&subtab.lock);
    return rc;
}

int gsrv_op_FORK_SIZE(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    uint64_t fkid = gp_get_u64(req);
    int rc = gsrv_decoded(req);
    if (rc)
        return rc;
    gsrv_fork *f;
    rc = gsrv_fork_get(fkid, &f);
    if (rc)
        return rc;
    gp_put_u64(&rep->w, gsrv_fork_size(f));
    gsrv_fork_put(f);
    return 0;
}

int gsrv_op_FORK_TRUNCATE(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    uint64_t fkid = gp_get_u64(req);
    uint64_t size = gp_get_u64(req);
    int rc = gsrv_decoded(req);
    if (rc)
        return rc;
    if (size > GP_MAX_OFFSET)
        return -EFBIG;
    gsrv_fork *f;
    rc = gsrv_fork_get(fkid, &f);
    if (rc)
        return rc;
    pthread_rwlock_wrlock(&f->rw);
    uint64_t old = gsrv_fork_size(f);
    if (ftruncate(f->fd, (off_t)size) < 0) {
        rc = -errno;
        goto out_unlock;
    }
    if (size < old)
        gsrv_cache_trim(fkid, size, old);
    gsrv_fork_set_size(f, size);
out_unlock:
    pthread_rwlock_unlock(&f->rw);
    gsrv_fork_put(f);
    return rc;
}

int gsrv_op_FORK_SYNC(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    char path[64];
    uint64_t fkid = gp_get_u64(req);
    int rc = gsrv_decoded(req);
    if (rc)
        return rc;
    gsrv_fork *f;
    rc = gsrv_fork_get(fkid, &f);
    if (rc)
        return rc;
    /* Acknowledged writes are already in the kernel (write-through), and
     * headers are fsync'd when they change; make both durable. */
    if (fsync(f->fd) < 0)
        rc = -errno;
    gsrv_fork_put(f);
    sub_dir(gsrv_fkid_hid(fkid), path, sizeof(path));
    if (!rc) {
        rc = gsrv_meta_sync_dir(path);
        if (rc == -ENOENT)
            rc = 0; /* the subfile went away meanwhile */
    }
    return rc;
}

/* FETCH_ADD (set false: add delta) and FETCH_SET (set: replace by delta),
 * one body: counters hold 0 .. INT64_MAX (gproto.h). */
static int fetch_op(gp_rbuf *req, gsrv_reply *rep, bool set);

int gsrv_op_FETCH_ADD(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    return fetch_op(req, rep, false);
}

int gsrv_op_FETCH_SET(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    return fetch_op(req, rep, true);
}

static int fetch_op(gp_rbuf *req, gsrv_reply *rep, bool set)
{
    char key[GFS_NAME_MAX + 1];
    uint64_t hid = gp_get_u64(req);
    gp_get_str(req, key, GFS_NAME_MAX);
    uint64_t delta = gp_get_u64(req);
    int rc = gsrv_decoded(req);
    if (!rc && set && delta > (uint64_t)INT64_MAX)
        rc = -ERANGE;
    if (!rc && !key[0])
        rc = -EINVAL;
    if (rc)
        return rc;

    /* Counters are touched only under subtab.meta (here, load, destroy). */
    uint64_t old = 0;
    pthread_mutex_lock(&subtab.meta);
    pthread_mutex_lock(&subtab.lock);
    gsrv_sub *s = sub_find_live(hid);
    pthread_mutex_unlock(&subtab.lock);
    if (!s) {
        rc = GFS_ESTALE;
        goto out_unlock_meta;
    }
    size_t i;
    for (i = 0; i < s->nctr; i++)
        if (strcmp(s->ctr[i].key, key) == 0)
            break;
    if (i == s->nctr) {
        /* a new key starts at 0 */
        if (s->nctr >= GSRV_MAX_COUNTERS) {
            rc = -ENOSPC;
            goto out_unlock_meta;
        }
        sub_counter *grown = realloc(s->ctr, (s->nctr + 1) * sizeof(*grown));
        if (!grown) {
            rc = -ENOMEM;
            goto out_unlock_meta;
        }
        s->ctr = grown;
        s->ctr[i].key = strdup(key);
        if (!s->ctr[i].key) {
            rc = -ENOMEM;
            goto out_unlock_meta;
        }
        s->ctr[i].value = 0;
        s->nctr++;
    }
    old = s->ctr[i].value;
    if (set) {
        s->ctr[i].value = delta;
    } else {
        /* stay within 0 .. INT64_MAX (a value from an older server past
         * it is left alone: only adds that bring it back are taken) */
        int64_t d = (int64_t)delta;
        if (d < 0 ? old < (uint64_t)-(d + 1) + 1
                  : old > (uint64_t)INT64_MAX - (uint64_t)d) {
            rc = -ERANGE;
            goto out_unlock_meta;
        }
        s->ctr[i].value = old + delta; /* in range: no wrap */
    }
    rc = write_counters(s, s->ctr, s->nctr);
    if (rc)
        s->ctr[i].value = old; /* a new key stays at 0: same meaning */
out_unlock_meta:
    pthread_mutex_unlock(&subtab.meta);
    if (rc)
        return rc;
    gp_put_u64(&rep->w, old);
    return 0;
}

/* ------------------------------------------------------------ load ---- */

/* Remove a subfile directory we own: our files only, then the directory. */
static void remove_sub_dir(uint64_t hid)
{
    char path[64];
    sub_dir(hid, path, sizeof(path));
    int fd = openat(gsrv_g.dfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        size_t len = strlen(n);
        uint64_t idx;
        if (n[0] == '.')
            continue;
        if (strcmp(n, "header") == 0 || strcmp(n, "counters") == 0 ||
            gsrv_meta_is_tmp(n) ||
            (len > 4 && strcmp(n + len - 4, ".dat") == 0 &&
             gsrv_parse_u64(n, len - 4, &idx)))
            unlinkat(fd, n, 0);
        else
            gsrv_log(0, "%s/%s: unknown file left in place", path, n);
    }
    closedir(d);
    if (unlinkat(gsrv_g.dfd, path, AT_REMOVEDIR) < 0)
        gsrv_log(0, "%s: cannot remove: %s", path, strerror(errno));
}

static int load_counters(gsrv_sub *s)
{
    char path[64];
    uint8_t *buf;
    size_t len;
    gp_rbuf r;

    sub_file(s->hid, "counters", path, sizeof(path));
    int rc = gsrv_meta_read(path, &buf, &len, GSRV_MAX_META_FILE);
    if (rc == -ENOENT)
        return 0;
    if (rc)
        return rc;
    gp_rbuf_init(&r, buf, len);
    uint32_t magic = gp_get_u32(&r);
    uint16_t fmt = gp_get_u16(&r);
    uint32_t n = gp_get_u32(&r);
    if (r.err || magic != CTR_MAGIC || fmt != SUB_FORMAT ||
        n > GSRV_MAX_COUNTERS) {
        rc = GFS_EPROTO;
        goto out_free_buf;
    }
    s->ctr = calloc(n ? n : 1, sizeof(*s->ctr));
    if (!s->ctr) {
        rc = -ENOMEM;
        goto out_free_buf;
    }
    for (uint32_t i = 0; i < n; i++) {
        char key[GFS_NAME_MAX + 1];
        gp_get_str(&r, key, GFS_NAME_MAX);
        uint64_t v = gp_get_u64(&r);
        if (r.err || !key[0])
            break;
        s->ctr[i].key = strdup(key);
        if (!s->ctr[i].key) {
            rc = -ENOMEM;
            goto out_free_buf;
        }
        s->ctr[i].value = v;
        s->nctr++;
    }
    if (!gp_done(&r))
        rc = GFS_EPROTO;
out_free_buf:
    free(buf);
    return rc;
}

/* Load one subfile directory.  Returns 0 (loaded or cleaned up) or an
 * error for a header we cannot read (left alone). */
static int load_sub(uint64_t hid)
{
    char path[64], name[GFS_NAME_MAX + 1];
    uint8_t *buf = NULL;
    size_t len;
    gp_rbuf r;
    gsrv_sub *s = NULL;
    hdr_fork *v = NULL;
    char **names = NULL;
    uint32_t n = 0;

    sub_file(hid, "header", path, sizeof(path));
    int rc = gsrv_meta_read(path, &buf, &len, GSRV_MAX_META_FILE);
    if (rc == -ENOENT) {
        gsrv_log(1, "sub/%" PRIu64 ": no header (interrupted create or "
                 "delete), removed", hid);
        remove_sub_dir(hid);
        return 0;
    }
    if (rc)
        return rc;

    gp_rbuf_init(&r, buf, len);
    uint32_t magic = gp_get_u32(&r);
    uint16_t fmt = gp_get_u16(&r);
    uint64_t fhid = gp_get_u64(&r);
    gp_get_str(&r, name, GFS_NAME_MAX);
    uint32_t subidx = gp_get_u32(&r);
    uint8_t deleted = gp_get_u8(&r);
    uint32_t next_fork = gp_get_u32(&r);
    n = gp_get_u32(&r);
    if (r.err || magic != SUB_MAGIC || fmt != SUB_FORMAT || fhid != hid ||
        n > GSRV_MAX_FORK_INDEX + 1 || next_fork > GSRV_MAX_FORK_INDEX + 1) {
        rc = GFS_EPROTO;
        goto out_free;
    }
    if (deleted) {
        gsrv_log(1, "sub/%" PRIu64 ": finishing deletion", hid);
        remove_sub_dir(hid);
        goto out_free;
    }
    v = calloc(n ? n : 1, sizeof(*v));
    names = calloc(n ? n : 1, sizeof(*names));
    s = calloc(1, sizeof(*s));
    if (!v || !names || !s) {
        rc = -ENOMEM;
        goto out_free;
    }
    for (uint32_t i = 0; i < n; i++) {
        char fname[GFS_FORK_NAME_MAX + 1];
        v[i].idx = gp_get_u32(&r);
        gp_get_str(&r, fname, GFS_FORK_NAME_MAX);
        v[i].deleted = gp_get_u8(&r);
        if (r.err || !fname[0] || v[i].idx >= next_fork ||
            (i && v[i].idx <= v[i - 1].idx)) {
            rc = GFS_EPROTO;
            goto out_free;
        }
        names[i] = strdup(fname);
        if (!names[i]) {
            rc = -ENOMEM;
            goto out_free;
        }
        v[i].name = names[i];
    }
    if (!gp_done(&r)) {
        rc = GFS_EPROTO;
        goto out_free;
    }

    s->hid = hid;
    s->subidx = subidx;
    s->next_fork = next_fork;
    s->filename = strdup(name);
    if (!s->filename || forks_reserve(s, n)) {
        rc = -ENOMEM;
        goto out_free;
    }
    bool dirty = false;
    for (uint32_t i = 0; i < n; i++) {
        char fpath[64];
        struct stat st;
        fork_file(hid, v[i].idx, fpath, sizeof(fpath));
        if (v[i].deleted) {
            /* nobody has it open after a restart: finish the deletion */
            dirty = true;
            continue;
        }
        gsrv_fork *f = fork_new(hid, v[i].idx, v[i].name);
        if (!f) {
            rc = -ENOMEM;
            goto out_free;
        }
        s->forks[s->nforks++] = f;
        if (fstatat(gsrv_g.dfd, fpath, &st, 0) == 0) {
            f->size = (uint64_t)st.st_size;
            continue;
        }
        /* header says it exists, the file does not: an empty fork */
        int fd = openat(gsrv_g.dfd, fpath, O_RDWR | O_CREAT | O_CLOEXEC,
                        0644);
        if (fd < 0) {
            rc = -errno;
            goto out_free;
        }
        close(fd);
        gsrv_log(0, "%s: data file missing, recreated empty", fpath);
    }
    if (dirty) {
        hdr_fork *live;
        rc = image_of(s, &live);
        if (!rc) {
            rc = write_header(s, false, s->next_fork, live, s->nforks);
            free(live);
        }
        if (rc)
            goto out_free;
    }
    rc = load_counters(s);
    if (rc == -ENOMEM)
        goto out_free;
    if (rc) {
        gsrv_log(0, "sub/%" PRIu64 "/counters: %s, counters start at 0",
                 hid, rc == GFS_EPROTO ? "corrupt" : gsrv_strerror(rc));
        rc = 0;
    }

    /* Files the header does not name: temp files, data of forks whose
     * removal was interrupted. */
    sub_dir(hid, path, sizeof(path));
    int dfd = openat(gsrv_g.dfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        rc = -errno;
        if (dfd >= 0)
            close(dfd);
        goto out_free;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *fn = de->d_name;
        size_t fl = strlen(fn);
        uint64_t idx;
        if (fn[0] == '.' || strcmp(fn, "header") == 0 ||
            strcmp(fn, "counters") == 0)
            continue;
        if (gsrv_meta_is_tmp(fn)) {
            unlinkat(dfd, fn, 0);
            continue;
        }
        if (fl > 4 && strcmp(fn + fl - 4, ".dat") == 0 &&
            gsrv_parse_u64(fn, fl - 4, &idx)) {
            if (idx > GSRV_MAX_FORK_INDEX || fork_pos(s, (uint32_t)idx) < 0)
                unlinkat(dfd, fn, 0);
            continue;
        }
        gsrv_log(0, "%s/%s: unknown file left in place", path, fn);
    }
    closedir(d);

    tab_insert(s);
    s = NULL;

out_free:
    if (s) {
        for (size_t i = 0; i < s->nforks; i++)
            fork_free(s->forks[i]);
        sub_free(s);
    }
    for (uint32_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
    free(v);
    free(buf);
    return rc;
}

int gsrv_sub_init(void)
{
    int rc;
    uint8_t *buf;
    size_t len;

    if (mkdirat(gsrv_g.dfd, "sub", 0755) < 0 && errno != EEXIST)
        return -errno;
    rc = tab_grow();
    if (rc)
        return rc;
    gsrv_meta_unlink("next_hid.tmp");
    subtab.next_hid = 1;
    rc = gsrv_meta_read("next_hid", &buf, &len, 64);
    if (rc == 0) {
        gp_rbuf r;
        gp_rbuf_init(&r, buf, len);
        uint32_t magic = gp_get_u32(&r);
        uint64_t next = gp_get_u64(&r);
        if (gp_done(&r) && magic == HID_MAGIC && next > 0)
            subtab.next_hid = next;
        else
            gsrv_log(0, "next_hid: unreadable, recomputed from sub/");
        free(buf);
    } else if (rc != -ENOENT) {
        return rc;
    }
    rc = 0;

    int fd = openat(gsrv_g.dfd, "sub", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        rc = -errno;
        close(fd);
        return rc;
    }
    uint64_t maxhid = 0;
    size_t nbad = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        uint64_t hid;
        if (de->d_name[0] == '.')
            continue;
        if (!gsrv_parse_u64(de->d_name, 0, &hid) || hid == 0 ||
            hid > GSRV_MAX_HID) {
            gsrv_log(0, "sub/%s: not a subfile directory, ignored",
                     de->d_name);
            continue;
        }
        if (hid > maxhid)
            maxhid = hid;
        int e = load_sub(hid);
        if (e == -ENOMEM) {
            rc = e;
            break;
        }
        if (e) {
            nbad++;
            gsrv_log(0, "sub/%" PRIu64 "/header: %s; subfile not served "
                     "(left in place for inspection)", hid,
                     e == GFS_EPROTO ? "corrupt" : gsrv_strerror(e));
        }
    }
    closedir(d);
    if (rc)
        return rc;
    if (subtab.next_hid <= maxhid)
        subtab.next_hid = maxhid + 1;
    gsrv_log(1, "subfiles: %zu loaded, %zu unreadable, next hid %" PRIu64,
             subtab.nsubs, nbad, subtab.next_hid);
    return 0;
}

void gsrv_sub_fini(void)
{
    for (size_t i = 0; i < subtab.nbuckets; i++) {
        gsrv_sub *s = subtab.bucket[i];
        while (s) {
            gsrv_sub *next = s->hnext;
            for (size_t k = 0; k < s->nforks; k++)
                fork_free(s->forks[k]); /* the cache is freed as a whole */
            sub_free(s);
            s = next;
        }
    }
    free(subtab.bucket);
    subtab.bucket = NULL;
    subtab.nbuckets = 0;
    subtab.nsubs = 0;
}

/* ------------------------------------------------------------ fsck ---- */

static int cmp_info_hid(const void *a, const void *b)
{
    const gsrv_sub_info *x = a, *y = b;
    return x->hid < y->hid ? -1 : x->hid > y->hid;
}

int gsrv_sub_list(uint64_t after, size_t max, gsrv_sub_info **out,
                  size_t *n)
{
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&subtab.lock);
    size_t cap = subtab.nsubs ? subtab.nsubs : 1, k = 0;
    gsrv_sub_info *v = malloc(cap * sizeof(*v));
    for (size_t i = 0; v && i < subtab.nbuckets; i++)
        for (gsrv_sub *s = subtab.bucket[i]; s && k < cap; s = s->hnext)
            if (s->hid > after)
                v[k++] = (gsrv_sub_info){.hid = s->hid,
                                         .subidx = s->subidx,
                                         .deleted = s->deleted,
                                         .filename = strdup(s->filename)};
    pthread_mutex_unlock(&subtab.lock);
    if (!v)
        return -ENOMEM;
    qsort(v, k, sizeof(*v), cmp_info_hid);
    for (size_t i = max; i < k; i++)
        free(v[i].filename);
    if (k > max)
        k = max;
    for (size_t i = 0; i < k; i++)
        if (!v[i].filename) {
            gsrv_sub_info_free(v, k);
            return -ENOMEM;
        }
    *out = v;
    *n = k;
    return 0;
}

void gsrv_sub_info_free(gsrv_sub_info *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i].filename);
    free(v);
}
