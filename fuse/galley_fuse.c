/*
 * galley_fuse.c -- galley-fuse, the daemon behind `galley mount DIR`: a
 * FUSE file system (libfuse3, high-level path API) over a Galley cluster.
 *
 * What it shows
 *   - Every striped file whose name starts with '/' as a regular file of
 *     its linear bytes at that path; the components of names containing
 *     '/' as directories ("implied": a directory exists while some file is
 *     under it, or after mkdir until rmdir or unmount).
 *   - A plain (non-striped) file as a read-only directory holding
 *     subfile<i>/<fork> for each of its subfiles and forks.
 *   - read/write/create (default layout: every server, 64 KiB unit;
 *     -n/-u choose another), truncate, unlink, rename (copy + delete: Galley
 *     has no rename), mkdir/rmdir, statfs (sum over the servers), fsync =
 *     gfs_striped_sync.  Times: Galley keeps none; every entry shows the
 *     mount's start time.
 *   - Locks: fcntl (F_SETLK, F_SETLKW, F_GETLK, OFD) and flock through the
 *     mount are the servers' POSIX locks (gfs_striped_plock), held in the
 *     kernel's lock owner's name, so mounts on two hosts exclude each
 *     other as processes on one host do.  libfuse unlocks a lock owner's
 *     locks at each flush (close) and its flock at the last release.
 *
 * Coherence: no kernel caching (direct_io, zero attribute and entry
 * timeouts), so bytes written through the mount are on the servers when
 * write() returns and other clients' changes show at once.  One FUSE read
 * or write (up to max_read/max_write, 1 MiB) is one gfs_striped_read/write:
 * one transfer per server.
 *
 * Threads: libfuse's multithreaded loop calls the operations from its
 * worker threads; the client library is thread-safe; the mkdir set has its
 * own lock (dir_lock).  The client starts in init(), after libfuse has
 * daemonised (a fork would lose libgalley's threads); main() checks the
 * cluster first so that a bad cluster file fails `galley mount` itself.
 */
#define _GNU_SOURCE
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "galley.h"
#include "cluster_file.h"
#include "px_rename.h"

static struct {
    const char *cluster; /* -c, or NULL for the library default */
    int nsub;            /* -n: subfiles of new files, 0 = every server */
    int64_t unit;        /* -u: stripe unit of new files, 0 = default */
    struct timespec t0;  /* the time every entry shows */
} gf;

/* gfs error -> negative errno for FUSE. */
static int gf_err(int64_t rc)
{
    if (rc >= 0)
        return 0;
    if (rc > -1000)
        return (int)rc;
    switch ((int)rc) {
    case GFS_EBADID:
        return -EBADF;
    case GFS_ESTALE:
        return -ESTALE;
    case GFS_ETOOBIG:
        return -EFBIG;
    case GFS_EBUSY:
        return -EBUSY;
    default:
        return -EIO;
    }
}

/* ------------------------------------------------------------------------
 * Directories made with mkdir that no file implies yet
 * ------------------------------------------------------------------------ */

static pthread_mutex_t dir_lock = PTHREAD_MUTEX_INITIALIZER;
static char **dirs;
static int ndirs;

static int dir_find(const char *p)
{
    for (int i = 0; i < ndirs; i++)
        if (strcmp(dirs[i], p) == 0)
            return i;
    return -1;
}

/* Remember directory p (no-op if already known); 0 or -ENOMEM. */
static int dir_add(const char *p)
{
    int rc = 0;
    pthread_mutex_lock(&dir_lock);
    if (dir_find(p) < 0) {
        char **nd = realloc(dirs, (size_t)(ndirs + 1) * sizeof(*dirs));
        char *copy = nd ? strdup(p) : NULL;
        if (nd)
            dirs = nd;
        if (copy)
            dirs[ndirs++] = copy;
        else
            rc = -ENOMEM;
    }
    pthread_mutex_unlock(&dir_lock);
    return rc;
}

static bool dir_made(const char *p)
{
    pthread_mutex_lock(&dir_lock);
    bool r = dir_find(p) >= 0;
    pthread_mutex_unlock(&dir_lock);
    return r;
}

/* ------------------------------------------------------------------------
 * What a path is
 * ------------------------------------------------------------------------ */

enum kind { K_NONE, K_ROOT, K_FILE, K_DIR, K_PLAIN, K_SUBFILE, K_FORK };

typedef struct what {
    enum kind kind;
    int64_t size;
    int64_t unit;
    char file[GFS_NAME_MAX + 1]; /* plain file of a subfile or fork */
    int subfile;
    char fork[GFS_FORK_NAME_MAX + 1];
} what;

static int any_cb(const char *name, void *arg)
{
    return 1;
}

/* 1 if some file's name starts with p + "/". */
static int implied_dir(const char *p)
{
    char prefix[GFS_NAME_MAX + 2];
    if (snprintf(prefix, sizeof(prefix), "%s/", p) >= (int)sizeof(prefix))
        return 0;
    int rc = gfs_list_files(prefix, any_cb, NULL);
    return rc < 0 ? rc : rc == 1;
}

typedef struct fork_find {
    const char *name;
    int64_t size;
    bool found;
} fork_find;

static int fork_cb(const char *name, uint64_t size, void *arg)
{
    fork_find *f = arg;
    if (strcmp(name, f->name) == 0) {
        f->found = true;
        f->size = (int64_t)size;
        return 1;
    }
    return 0;
}

/* Inside a plain file: "<plain>/subfile<i>" or "<plain>/subfile<i>/<fork>". */
static int classify_plain(const char *p, what *w)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof(buf), "%s", p);
    char *last = strrchr(buf, '/'), *fork = NULL;
    if (!last || last == buf)
        return -ENOENT;
    if (strncmp(last + 1, "subfile", 7) != 0) {
        fork = last + 1;
        *last = '\0';
        last = strrchr(buf, '/');
        if (!last || last == buf || strncmp(last + 1, "subfile", 7) != 0)
            return -ENOENT;
    }
    char *end;
    long sub = strtol(last + 8, &end, 10);
    if (*end || end == last + 8 || sub < 0)
        return -ENOENT;
    *last = '\0';
    if (strlen(buf) > GFS_NAME_MAX)
        return -ENOENT;
    int fid = gfs_open_file(buf);
    if (fid < 0)
        return fid == -ENOENT ? -ENOENT : gf_err(fid);
    gfs_file_stat st;
    int rc = gfs_stat_file(fid, &st);
    if (!rc && sub >= st.nsubfiles)
        rc = -ENOENT;
    if (!rc && fork) {
        fork_find ff = {fork, 0, false};
        rc = gfs_list_forks(fid, (int)sub, fork_cb, &ff);
        if (rc >= 0)
            rc = ff.found ? 0 : -ENOENT;
        w->size = ff.size;
        snprintf(w->fork, sizeof(w->fork), "%s", fork);
    }
    gfs_close_file(fid);
    if (rc)
        return gf_err(rc);
    w->kind = fork ? K_FORK : K_SUBFILE;
    w->subfile = (int)sub;
    memcpy(w->file, buf, strlen(buf) + 1);
    return 0;
}

static int classify(const char *p, what *w)
{
    memset(w, 0, sizeof(*w));
    if (strcmp(p, "/") == 0) {
        w->kind = K_ROOT;
        return 0;
    }
    gfs_layout lay;
    int64_t size;
    int sid = gfs_striped_stat(p, &size, &lay); /* without opening it */
    if (sid >= 0) {
        w->size = size;
        w->unit = lay.unit;
        w->kind = K_FILE;
        return 0;
    }
    if (sid == GFS_ELAYOUT) {
        w->kind = K_PLAIN;
        return 0;
    }
    if (sid != -ENOENT && sid != -ENAMETOOLONG && sid != -EINVAL)
        return gf_err(sid);
    int rc = implied_dir(p);
    if (rc < 0)
        return gf_err(rc);
    if (rc || dir_made(p)) {
        w->kind = K_DIR;
        return 0;
    }
    return classify_plain(p, w);
}

/* ------------------------------------------------------------------------
 * Operations
 * ------------------------------------------------------------------------ */

static void *gf_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    cfg->direct_io = 1;
    cfg->attr_timeout = 0;
    cfg->entry_timeout = 0;
    cfg->negative_timeout = 0;
    cfg->use_ino = 0;
    cfg->nullpath_ok = 0;
    conn->max_write = 1 << 20;
    int rc = gfs_init(gf.cluster);
    if (rc < 0)
        fprintf(stderr, "galley-fuse: cannot start the galley client: %s\n",
                gfs_strerror(rc));
    return NULL;
}

static void gf_destroy(void *data)
{
    gfs_finalize();
}

static int gf_getattr(const char *p, struct stat *st, struct fuse_file_info *fi)
{
    what w;
    int rc = classify(p, &w);
    if (rc)
        return rc;
    memset(st, 0, sizeof(*st));
    st->st_uid = getuid();
    st->st_gid = getgid();
    st->st_atim = st->st_mtim = st->st_ctim = gf.t0;
    switch (w.kind) {
    case K_FILE:
        st->st_mode = S_IFREG | 0644;
        st->st_nlink = 1;
        st->st_size = w.size;
        st->st_blksize = w.unit > 0 ? w.unit : GFS_DEFAULT_STRIPE_UNIT;
        st->st_blocks = (w.size + 511) / 512;
        break;
    case K_FORK:
        st->st_mode = S_IFREG | 0444;
        st->st_nlink = 1;
        st->st_size = w.size;
        st->st_blocks = (w.size + 511) / 512;
        break;
    case K_PLAIN:
    case K_SUBFILE:
        st->st_mode = S_IFDIR | 0555;
        st->st_nlink = 2;
        break;
    default:
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
    }
    return 0;
}

/* readdir of an implied directory: the next component of every name
 * under it, once each (names are listed sorted, so repeats are adjacent). */
typedef struct lister {
    const char *prefix; /* "<dir>/" */
    size_t plen;
    void *buf;
    fuse_fill_dir_t fill;
    char last[GFS_NAME_MAX + 1];
} lister;

static int list_cb(const char *name, void *arg)
{
    lister *l = arg;
    const char *rest = name + l->plen;
    size_t n = strcspn(rest, "/");
    if (n == 0 || n > GFS_NAME_MAX)
        return 0;
    if (strlen(l->last) == n && strncmp(l->last, rest, n) == 0)
        return 0;
    memcpy(l->last, rest, n);
    l->last[n] = '\0';
    l->fill(l->buf, l->last, NULL, 0, 0);
    return 0;
}

static int fork_list_cb(const char *name, uint64_t size, void *arg)
{
    lister *l = arg;
    l->fill(l->buf, name, NULL, 0, 0);
    return 0;
}

static int gf_readdir(const char *p, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    what w;
    int rc = classify(p, &w);
    if (rc)
        return rc;
    fill(buf, ".", NULL, 0, 0);
    fill(buf, "..", NULL, 0, 0);
    lister l = {NULL, 0, buf, fill, ""};
    if (w.kind == K_PLAIN || w.kind == K_SUBFILE) {
        int fid = gfs_open_file(w.kind == K_PLAIN ? p : w.file);
        if (fid < 0)
            return gf_err(fid);
        if (w.kind == K_PLAIN) {
            gfs_file_stat st;
            rc = gfs_stat_file(fid, &st);
            for (int i = 0; !rc && i < st.nsubfiles; i++) {
                char name[32];
                snprintf(name, sizeof(name), "subfile%d", i);
                fill(buf, name, NULL, 0, 0);
            }
        } else {
            rc = gfs_list_forks(fid, w.subfile, fork_list_cb, &l);
        }
        gfs_close_file(fid);
        return gf_err(rc);
    }
    if (w.kind != K_ROOT && w.kind != K_DIR)
        return -ENOTDIR;
    char prefix[GFS_NAME_MAX + 2];
    snprintf(prefix, sizeof(prefix), "%s/", w.kind == K_ROOT ? "" : p);
    l.prefix = prefix;
    l.plen = strlen(prefix);
    rc = gfs_list_files(prefix, list_cb, &l);
    if (rc < 0)
        return gf_err(rc);
    /* mkdir'ed directories directly under p that no name implies (the
     * others were listed above); checked outside dir_lock */
    char **mine = NULL;
    int nmine = 0;
    pthread_mutex_lock(&dir_lock);
    mine = ndirs ? calloc((size_t)ndirs, sizeof(*mine)) : NULL;
    for (int i = 0; mine && i < ndirs; i++)
        if (strncmp(dirs[i], prefix, l.plen) == 0 &&
            !strchr(dirs[i] + l.plen, '/'))
            mine[nmine++] = strdup(dirs[i]);
    pthread_mutex_unlock(&dir_lock);
    for (int i = 0; i < nmine; i++) {
        if (mine[i] && implied_dir(mine[i]) == 0)
            fill(buf, mine[i] + l.plen, NULL, 0, 0);
        free(mine[i]);
    }
    free(mine);
    return 0;
}

/* An open file: a striped file (sid) or a plain file's fork (fid, kid). */
#define GF_OWNERS 8
typedef struct handle {
    int sid;
    int fid, kid;
    /* Lock owners that took fcntl locks through this open file (lk_lock):
     * the kernel never tells us when an OFD lock's file closes (it only
     * flushes the process's owner), so release drops them all; any
     * process lock among them went at that process's close already. */
    uint64_t owners[GF_OWNERS];
    int nowners;
} handle;

static pthread_mutex_t lk_lock = PTHREAD_MUTEX_INITIALIZER;

static handle *H(struct fuse_file_info *fi)
{
    return (handle *)(uintptr_t)fi->fh;
}

static int gf_open(const char *p, struct fuse_file_info *fi)
{
    handle *h = calloc(1, sizeof(*h));
    if (!h)
        return -ENOMEM;
    h->sid = h->fid = h->kid = -1;
    int sid = gfs_striped_open(p);
    if (sid >= 0) {
        h->sid = sid;
        if (fi->flags & O_TRUNC) {
            int rc = gfs_striped_truncate(sid, 0);
            if (rc) {
                gfs_striped_close(sid);
                free(h);
                return gf_err(rc);
            }
        }
    } else {
        what w;
        int rc = sid == GFS_ELAYOUT ? -EISDIR : classify(p, &w);
        if (!rc && w.kind != K_FORK)
            rc = w.kind == K_NONE ? -ENOENT : -EISDIR;
        if (!rc && (fi->flags & O_ACCMODE) != O_RDONLY)
            rc = -EACCES;
        if (!rc) {
            h->fid = gfs_open_file(w.file);
            rc = h->fid < 0
                     ? h->fid
                     : (h->kid = gfs_open_fork(h->fid, w.subfile, w.fork));
            if (rc > 0)
                rc = 0;
            if (rc && h->fid >= 0)
                gfs_close_file(h->fid);
        }
        if (rc) {
            free(h);
            return gf_err(rc);
        }
    }
    fi->fh = (uint64_t)(uintptr_t)h;
    fi->direct_io = 1;
    return 0;
}

static int gf_create(const char *p, mode_t mode, struct fuse_file_info *fi)
{
    int nserv = gfs_num_servers();
    int nsub = gf.nsub > 0 && gf.nsub <= nserv ? gf.nsub : nserv;
    int rc = gfs_create_striped(p, nsub, NULL, gf.unit, NULL);
    if (rc == -EEXIST && !(fi->flags & O_EXCL))
        rc = 0;
    if (rc)
        return gf_err(rc);
    return gf_open(p, fi);
}

static int gf_release(const char *p, struct fuse_file_info *fi)
{
    handle *h = H(fi);
    if (h->sid >= 0) {
        /* Locks of this open file description (fcntl OFD locks; flock's
         * come as fi->lock_owner with flock_release, libfuse unlocks
         * those).  Past GF_OWNERS owners some may stay until unlocked or
         * until the daemon's connection ends. */
        for (int i = 0; i < h->nowners; i++)
            gfs_striped_plock_release(h->sid, h->owners[i]);
        if (fi->flock_release)
            gfs_striped_plock_release(h->sid, fi->lock_owner);
    }
    if (h->sid >= 0)
        gfs_striped_close(h->sid);
    if (h->fid >= 0)
        gfs_close_file(h->fid); /* closes its fork too */
    free(h);
    return 0;
}

/* fcntl locks.  libfuse gives the range as SEEK_SET with l_len 0 for "to
 * the end", and the kernel's lock owner in fi->lock_owner. */
static int gf_lock(const char *p, struct fuse_file_info *fi, int cmd,
                   struct flock *lk)
{
    (void)p;
    handle *h = H(fi);
    int type = lk->l_type == F_RDLCK   ? GFS_PLOCK_SHARED
               : lk->l_type == F_WRLCK ? GFS_PLOCK_EXCL
                                       : GFS_PLOCK_UNLOCK;
    if (h->sid < 0) /* a plain file's fork: nothing to share locks on */
        return type == GFS_PLOCK_UNLOCK ? 0 : -ENOLCK;
    gfs_plock g = {.owner = fi->lock_owner,
                   .type = type,
                   .start = lk->l_start,
                   .len = lk->l_len,
                   .pid = lk->l_pid};
    int rc;
    if (cmd == F_GETLK) {
        if (type == GFS_PLOCK_UNLOCK)
            return -EINVAL;
        rc = gfs_striped_plock_test(h->sid, &g, 0);
        if (rc)
            return gf_err(rc);
        if (g.type == GFS_PLOCK_UNLOCK) {
            lk->l_type = F_UNLCK;
            return 0;
        }
        lk->l_type = g.type == GFS_PLOCK_EXCL ? F_WRLCK : F_RDLCK;
        lk->l_whence = SEEK_SET;
        lk->l_start = g.start;
        lk->l_len = g.len;
        lk->l_pid = g.pid;
        return 0;
    }
    rc = gfs_striped_plock(h->sid, &g, cmd == F_SETLKW ? GFS_PLOCK_WAIT : 0);
    if (rc)
        return gf_err(rc);
    if (type != GFS_PLOCK_UNLOCK) {
        pthread_mutex_lock(&lk_lock);
        bool known = false;
        for (int i = 0; i < h->nowners && !known; i++)
            known = h->owners[i] == g.owner;
        if (!known && h->nowners < GF_OWNERS)
            h->owners[h->nowners++] = g.owner;
        pthread_mutex_unlock(&lk_lock);
    }
    return 0;
}

static int gf_flock(const char *p, struct fuse_file_info *fi, int op)
{
    (void)p;
    handle *h = H(fi);
    int base = op & ~LOCK_NB;
    int type = base == LOCK_SH   ? GFS_PLOCK_SHARED
               : base == LOCK_EX ? GFS_PLOCK_EXCL
                                 : GFS_PLOCK_UNLOCK;
    if (h->sid < 0)
        return type == GFS_PLOCK_UNLOCK ? 0 : -ENOLCK;
    gfs_plock g = {.owner = fi->lock_owner, .type = type, .pid = -1};
    int flags = GFS_PLOCK_WHOLE | ((op & LOCK_NB) ? 0 : GFS_PLOCK_WAIT);
    int rc = gfs_striped_plock(h->sid, &g, flags);
    return rc ? gf_err(rc) : 0;
}

static int gf_read(const char *p, char *buf, size_t n, off_t off,
                   struct fuse_file_info *fi)
{
    handle *h = H(fi);
    int64_t k;
    if (h->sid >= 0) {
        k = gfs_striped_read(h->sid, off, buf, (int64_t)n);
    } else {
        int64_t size = gfs_fork_size(h->kid);
        if (size < 0)
            return gf_err(size);
        if (off >= size)
            return 0;
        if ((int64_t)n > size - off)
            n = (size_t)(size - off);
        k = gfs_read(h->kid, off, buf, (int64_t)n);
    }
    return k < 0 ? gf_err(k) : (int)k;
}

static int gf_write(const char *p, const char *buf, size_t n, off_t off,
                    struct fuse_file_info *fi)
{
    handle *h = H(fi);
    if (h->sid < 0)
        return -EBADF;
    int64_t k = gfs_striped_write(h->sid, off, buf, (int64_t)n);
    return k < 0 ? gf_err(k) : (int)k;
}

static int gf_truncate(const char *p, off_t size, struct fuse_file_info *fi)
{
    if (fi && H(fi)->sid >= 0)
        return gf_err(gfs_striped_truncate(H(fi)->sid, size));
    int sid = gfs_striped_open(p);
    if (sid < 0)
        return sid == GFS_ELAYOUT ? -EISDIR : gf_err(sid);
    int rc = gfs_striped_truncate(sid, size);
    gfs_striped_close(sid);
    return gf_err(rc);
}

static int gf_fsync(const char *p, int datasync, struct fuse_file_info *fi)
{
    handle *h = H(fi);
    return gf_err(h->sid >= 0 ? gfs_striped_sync(h->sid) : 0);
}

static int implied_dir(const char *p);

/* After p's last file went away, its directory stays until rmdir (as on
 * any file system), though no Galley name implies it any more. */
static void keep_parent(const char *p)
{
    char parent[GFS_NAME_MAX + 1];
    const char *slash = strrchr(p, '/');
    size_t n = slash ? (size_t)(slash - p) : 0;
    if (n == 0 || n > GFS_NAME_MAX)
        return;
    memcpy(parent, p, n);
    parent[n] = '\0';
    if (implied_dir(parent) == 0)
        dir_add(parent);
}

static int gf_unlink(const char *p)
{
    what w;
    int rc = classify(p, &w);
    if (rc)
        return rc;
    if (w.kind != K_FILE)
        return w.kind == K_FORK ? -EACCES : -EISDIR;
    rc = gfs_delete_file(p);
    if (!rc)
        keep_parent(p);
    return gf_err(rc);
}

static int gf_mkdir(const char *p, mode_t mode)
{
    what w;
    int rc = classify(p, &w);
    if (rc == 0)
        return -EEXIST;
    if (rc != -ENOENT)
        return rc;
    return dir_add(p);
}

static int gf_rmdir(const char *p)
{
    what w;
    int rc = classify(p, &w);
    if (rc)
        return rc;
    if (w.kind == K_FILE || w.kind == K_FORK)
        return -ENOTDIR;
    if (w.kind != K_DIR)
        return w.kind == K_ROOT ? -EBUSY : -EACCES;
    rc = implied_dir(p);
    if (rc)
        return rc < 0 ? gf_err(rc) : -ENOTEMPTY;
    pthread_mutex_lock(&dir_lock);
    int i = dir_find(p);
    if (i >= 0) {
        free(dirs[i]);
        dirs[i] = dirs[--ndirs];
    }
    pthread_mutex_unlock(&dir_lock);
    return 0;
}

typedef struct mover {
    const char *from, *to;
    size_t flen;
    char **names;
    int n, cap;
} mover;

static int collect_cb(const char *name, void *arg)
{
    mover *m = arg;
    if (m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 16;
        char **nn = realloc(m->names, (size_t)cap * sizeof(*nn));
        if (!nn)
            return -ENOMEM;
        m->names = nn;
        m->cap = cap;
    }
    m->names[m->n] = strdup(name);
    return m->names[m->n++] ? 0 : -ENOMEM;
}

static int gf_rename(const char *from, const char *to, unsigned flags)
{
    if (flags & ~RENAME_NOREPLACE)
        return -EINVAL;
    what w, wt;
    int rc = classify(from, &w);
    if (rc)
        return rc;
    int trc = classify(to, &wt);
    if (trc && trc != -ENOENT)
        return trc;
    if (!trc && (flags & RENAME_NOREPLACE))
        return -EEXIST;
    if (w.kind == K_FILE) {
        if (!trc && wt.kind != K_FILE)
            return -EISDIR;
        rc = px_rename_file(from, to);
        if (!rc)
            keep_parent(from);
        return gf_err(rc);
    }
    if (w.kind != K_DIR)
        return -EACCES;
    if (!trc && (wt.kind != K_DIR || implied_dir(to)))
        return wt.kind == K_DIR ? -ENOTEMPTY : -ENOTDIR;
    /* a directory: move every file under it */
    char prefix[GFS_NAME_MAX + 2];
    snprintf(prefix, sizeof(prefix), "%s/", from);
    mover m = {from, to, strlen(from), NULL, 0, 0};
    rc = gfs_list_files(prefix, collect_cb, &m);
    for (int i = 0; rc >= 0 && i < m.n; i++) {
        char dst[GFS_NAME_MAX + 2];
        if (snprintf(dst, sizeof(dst), "%s%s", to, m.names[i] + m.flen) >
            GFS_NAME_MAX)
            rc = -ENAMETOOLONG;
        else
            rc = px_rename_file(m.names[i], dst);
    }
    for (int i = 0; i < m.n; i++)
        free(m.names[i]);
    free(m.names);
    if (rc >= 0) {
        gf_rmdir(from);
        if (dir_made(from) || !m.n)
            gf_mkdir(to, 0755);
    }
    return gf_err(rc < 0 ? rc : 0);
}

static int gf_statfs(const char *p, struct statvfs *sv)
{
    memset(sv, 0, sizeof(*sv));
    uint64_t total = 0, avail = 0, files = 0;
    for (int i = 0; i < gfs_num_servers(); i++) {
        gfs_server_stat st;
        if (gfs_stat_server(i, &st) == 0) {
            total += st.bytes_total;
            avail += st.bytes_free;
            files += st.nrecords;
        }
    }
    sv->f_bsize = sv->f_frsize = 4096;
    sv->f_blocks = total / 4096;
    sv->f_bfree = sv->f_bavail = avail / 4096;
    sv->f_files = files;
    sv->f_namemax = GFS_NAME_MAX;
    return 0;
}

/* Galley keeps no times, modes or owners: accept and ignore, so tools
 * that set them (touch, cp -p) work. */
static int gf_utimens(const char *p, const struct timespec tv[2],
                      struct fuse_file_info *fi)
{
    what w;
    return classify(p, &w);
}

static int gf_chmod(const char *p, mode_t mode, struct fuse_file_info *fi)
{
    what w;
    return classify(p, &w);
}

static int gf_chown(const char *p, uid_t uid, gid_t gid,
                    struct fuse_file_info *fi)
{
    what w;
    return classify(p, &w);
}

static const struct fuse_operations gf_ops = {
    .init = gf_init,
    .destroy = gf_destroy,
    .getattr = gf_getattr,
    .readdir = gf_readdir,
    .open = gf_open,
    .create = gf_create,
    .release = gf_release,
    .read = gf_read,
    .write = gf_write,
    .truncate = gf_truncate,
    .fsync = gf_fsync,
    .unlink = gf_unlink,
    .mkdir = gf_mkdir,
    .rmdir = gf_rmdir,
    .rename = gf_rename,
    .statfs = gf_statfs,
    .utimens = gf_utimens,
    .chmod = gf_chmod,
    .chown = gf_chown,
    .lock = gf_lock,
    .flock = gf_flock,
};

/* ------------------------------------------------------------------------
 * main
 * ------------------------------------------------------------------------ */

static int usage(void)
{
    fprintf(stderr,
            "usage: galley-fuse [-c CLUSTERFILE] [-n NSUB] [-u UNIT] [-f] "
            "[-d] [-o FUSEOPT] DIR\n"
            "  -n, -u  layout of files created through the mount\n"
            "  -f      stay in the foreground; -d also print FUSE requests\n");
    return 2;
}

int main(int argc, char **argv)
{
    clock_gettime(CLOCK_REALTIME, &gf.t0);
    char *fargv[32];
    int fargc = 0;
    fargv[fargc++] = argv[0];
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-c") && i + 1 < argc)
            gf.cluster = argv[++i];
        else if (!strcmp(a, "-n") && i + 1 < argc)
            gf.nsub = atoi(argv[++i]);
        else if (!strcmp(a, "-u") && i + 1 < argc)
            gf.unit = strtoll(argv[++i], NULL, 0);
        else if ((!strcmp(a, "-f") || !strcmp(a, "-d")) && fargc < 28)
            fargv[fargc++] = argv[i];
        else if (!strcmp(a, "-o") && i + 1 < argc && fargc < 28) {
            fargv[fargc++] = argv[i];
            fargv[fargc++] = argv[++i];
        } else if (a[0] != '-' && !dir)
            dir = a;
        else
            return usage();
    }
    if (!dir)
        return usage();
    /* Check the cluster now, while errors still reach the user. */
    int rc = gfs_init(gf.cluster);
    for (int i = 0; rc == 0 && i < gfs_num_servers(); i++)
        rc = gfs_ping(i);
    if (rc) {
        fprintf(stderr, "galley-fuse: cluster not usable: %s\n",
                gfs_strerror(rc));
        return 1;
    }
    gfs_finalize();
    static char fsname[PATH_MAX + 32];
    /* The source names the cluster file, so that libgalley-posix.so can
     * tell which mounts show its own cluster (and go straight to Galley
     * for paths under them). */
    char buf[PATH_MAX], abs[PATH_MAX];
    const char *cl = gc_cluster_find(gf.cluster, buf, sizeof(buf));
    snprintf(fsname, sizeof(fsname), "fsname=galley:%s,subtype=galley",
             realpath(cl, abs) ? abs : cl);
    fargv[fargc++] = "-o";
    fargv[fargc++] = fsname;
    fargv[fargc++] = (char *)dir;
    fargv[fargc] = NULL;
    return fuse_main(fargc, fargv, &gf_ops, NULL);
}
