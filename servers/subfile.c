/*
 * subfile.c -- the subfile table: subfiles and their fork tables in memory,
 * fork reference counts (gsrv_fork_get/put/close), statistics and the
 * listing for fsck.  The on-disk headers and start-up recovery are in
 * subfile_disk.c, the SUB_* and FORK_* handlers in subfile_ops.c, the
 * counters (FETCH_ADD, FETCH_SET) in counters.c; this comment holds for
 * all four.
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
 * dropped (freeing takes cache.lock).  The data path (io*.c) holds a fork
 * reference (gsrv_fork_get) and the fork's rwlock, never these locks.
 *
 * Identity: a subfile header id (hid) comes from a persisted counter and is
 * never reused; a fork's index within its subfile comes from the header's
 * next-index field and is never reused either.  fkid = hid << 16 | index is
 * therefore a handle that stays valid across restarts and can never name a
 * different fork later; a fork that no longer exists gives GFS_ESTALE.
 *
 * Every header change is "build the new image, write it durably (a value
 * of the metadata table, metatab.c), then apply it in memory", so memory
 * and the table agree when a write fails.  A subfile's directory
 * DIR/sub/<hid> holds its files (fork data, counters, checksums) and is
 * made with the first of them (sub_openat): a file created and removed
 * without data costs the file system nothing.
 *
 * Deletion: FORK_DELETE and SUB_DELETE first mark (durably, a header
 * flag), then remove whatever nobody has open; a fork still open leaves
 * the table and its data file is unlinked at its last close, and a marked
 * subfile's header disappears with its last fork.  Marks left by a crash
 * are completed at startup.  On a full disk (no room for the mark) a
 * subfile nobody has open is removed at once, unmarked, so that deleting
 * always frees space.
 */
#include "subfile_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

gsrv_subtab subtab = {
    .meta = PTHREAD_MUTEX_INITIALIZER,
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

/* ------------------------------------------------------------ paths ---- */

void sub_dir(uint64_t hid, char *out, size_t len)
{
    snprintf(out, len, "sub/%" PRIu64, hid);
}

void sub_file(uint64_t hid, const char *what, char *out, size_t len)
{
    snprintf(out, len, "sub/%" PRIu64 "/%s", hid, what);
}

void fork_file(uint64_t hid, uint32_t idx, char *out, size_t len)
{
    snprintf(out, len, "sub/%" PRIu64 "/%" PRIu32 ".dat", hid, idx);
}

uint64_t gsrv_fork_mtime(uint64_t hid, const gsrv_fork *f)
{
    struct stat st;
    char path[64];
    fork_file(hid, f->index, path, sizeof(path));
    if (f->fd >= 0 ? fstat(f->fd, &st) : fstatat(gsrv_g.dfd, path, &st, 0))
        return 0;
    return (uint64_t)st.st_mtim.tv_sec * 1000000000u +
           (uint64_t)st.st_mtim.tv_nsec;
}

int sub_dir_make(uint64_t hid)
{
    char path[64];
    sub_dir(hid, path, sizeof(path));
    if (mkdirat(gsrv_g.dfd, path, 0755) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

int sub_openat(uint64_t hid, const char *path, int flags, mode_t mode)
{
    int fd = openat(gsrv_g.dfd, path, flags, mode);
    if (fd < 0 && errno == ENOENT && (flags & O_CREAT)) {
        int rc = sub_dir_make(hid);
        if (rc)
            return rc;
        fd = openat(gsrv_g.dfd, path, flags, mode);
    }
    return fd >= 0 ? fd : -errno;
}

/* ------------------------------------------------------------ table ---- */

static uint64_t hid_hash(uint64_t hid)
{
    uint64_t h = hid * 0x9e3779b97f4a7c15ull;
    return h >> 20;
}

gsrv_sub *sub_find(uint64_t hid)
{
    for (gsrv_hlink *l = gsrv_ht_chain(&subtab.tab, hid_hash(hid)); l;
         l = l->next) {
        gsrv_sub *s = GSRV_HT_ENTRY(l, gsrv_sub, hlink);
        if (s->hid == hid)
            return s;
    }
    return NULL;
}

gsrv_sub *sub_find_live(uint64_t hid)
{
    gsrv_sub *s = sub_find(hid);
    return s && !s->deleted ? s : NULL;
}

int tab_init(void)
{
    return gsrv_ht_init(&subtab.tab, 1024, true);
}

void tab_insert(gsrv_sub *s)
{
    gsrv_ht_insert(&subtab.tab, &s->hlink, hid_hash(s->hid));
}

void tab_remove(gsrv_sub *s)
{
    gsrv_ht_remove(&subtab.tab, &s->hlink);
}

/* Index of fork `idx` in s->forks, or -1. */
ssize_t fork_pos(const gsrv_sub *s, uint32_t idx)
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
gsrv_fork *fork_by_name(const gsrv_sub *s, const char *name)
{
    for (size_t i = 0; i < s->nforks; i++)
        if (!s->forks[i]->deleted && strcmp(s->forks[i]->name, name) == 0)
            return s->forks[i];
    return NULL;
}

gsrv_fork *fork_new(uint64_t hid, uint32_t idx, const char *name)
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
    f->cfd = -1;
    return f;
}

/* Free a fork object that has no cached blocks (never used for I/O, or the
 * whole cache is going away). */
void fork_free(gsrv_fork *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    if (f->cfd >= 0)
        close(f->cfd);
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

void reap(gsrv_fork *list)
{
    while (list) {
        gsrv_fork *next = list->reap_next;
        fork_destroy(list);
        list = next;
    }
}

int forks_reserve(gsrv_sub *s, size_t n)
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

void sub_free(gsrv_sub *s)
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

/* ------------------------------------------------------- removal ---- */

/* Take the fork at position pos out of s's table (subtab.lock held); it is
 * freed now or at its last reference, through *reaplist. */
void fork_detach(gsrv_sub *s, size_t pos, gsrv_fork **reaplist)
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

/* ------------------------------------------------------- public API ---- */

int gsrv_fork_get(uint64_t fkid, int use, gsrv_fork **out)
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
        /* A live fork's data file, and the subfile's directory, are made
         * at its first use that writes (a file created and removed unused
         * never has them: sub_create).  Until then the fork is empty, and
         * a read needs no file -- nor disk space: f->fd stays -1.  So is a
         * fork removed while open (it is in the table until its last
         * close collects it, data file and all): without a file it was
         * never written. */
        bool live = !f->deleted && !s->deleted;
        int create = live && use == GSRV_FORK_WRITE ? O_CREAT : 0;
        int fd = sub_openat(s->hid, path, O_RDWR | O_CLOEXEC | create, 0644);
        if (fd == -ENOENT && use == GSRV_FORK_READ)
            goto out_ref;
        if (fd < 0) {
            rc = fd == -ENOENT ? GFS_ESTALE : fd;
            goto out_unlock;
        }
        f->fd = fd;
        rc = gsrv_csum_open(f); /* with the data: a checksummed fork? */
        if (rc) {
            close(f->fd);
            f->fd = -1;
            goto out_unlock;
        }
    }
out_ref:
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
        gsrv_log(0,
                 "fork %" PRIx64 ": deferred removal failed (%s); "
                 "finished at restart",
                 fkid, gsrv_strerror(rc));
}

bool gsrv_sub_exists(uint64_t hid)
{
    pthread_mutex_lock(&subtab.lock);
    bool ok = sub_find_live(hid) != NULL;
    pthread_mutex_unlock(&subtab.lock);
    return ok;
}

void gsrv_sub_stats(uint64_t *nsubfiles, uint64_t *nforks, uint64_t *bytes_used)
{
    *nsubfiles = *nforks = *bytes_used = 0;
    pthread_mutex_lock(&subtab.lock);
    gsrv_ht_iter it = {0};
    for (gsrv_hlink *l; (l = gsrv_ht_next(&subtab.tab, &it));) {
        gsrv_sub *s = GSRV_HT_ENTRY(l, gsrv_sub, hlink);
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

void gsrv_sub_fini(void)
{
    gsrv_ht_iter it = {0};
    for (gsrv_hlink *l; (l = gsrv_ht_next(&subtab.tab, &it));) {
        gsrv_sub *s = GSRV_HT_ENTRY(l, gsrv_sub, hlink);
        for (size_t k = 0; k < s->nforks; k++)
            fork_free(s->forks[k]); /* the cache is freed as a whole */
        sub_free(s);
    }
    gsrv_ht_fini(&subtab.tab);
}

/* ------------------------------------------------------------ fsck ---- */

static int cmp_info_hid(const void *a, const void *b)
{
    const gsrv_sub_info *x = a, *y = b;
    return x->hid < y->hid ? -1 : x->hid > y->hid;
}

int gsrv_sub_list(uint64_t after, size_t max, gsrv_sub_info **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&subtab.lock);
    size_t cap = subtab.tab.n ? subtab.tab.n : 1, k = 0;
    gsrv_sub_info *v = malloc(cap * sizeof(*v));
    gsrv_ht_iter it = {0};
    for (gsrv_hlink *l; v && k < cap && (l = gsrv_ht_next(&subtab.tab, &it));) {
        gsrv_sub *s = GSRV_HT_ENTRY(l, gsrv_sub, hlink);
        if (s->hid > after)
            v[k++] = (gsrv_sub_info){.hid = s->hid,
                                     .subidx = s->subidx,
                                     .deleted = s->deleted,
                                     .filename = strdup(s->filename)};
    }
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
