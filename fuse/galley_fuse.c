/*
 * galley_fuse.c -- galley-fuse, the daemon behind `galley mount DIR`: a
 * FUSE file system (libfuse3, high-level path API) over a Galley cluster.
 *
 * What it shows
 *   - Every striped file whose name starts with '/' as a regular file of
 *     its linear bytes at that path; the components of names containing
 *     '/' as directories, and the directories made with mkdir (gf_dir.c
 *     says when a directory exists, and the name limits).
 *   - A plain (non-striped) file as a read-only directory holding
 *     subfile<i>/<fork> for each of its subfiles and forks.
 *   - read/write/create (default layout: every server, 64 KiB unit;
 *     -n/-u choose another), truncate, unlink, rename (copy + delete: Galley
 *     has no rename), mkdir/rmdir, mknod (FIFOs, sockets and device
 *     nodes: kept in their records, served by the kernel), symlinks,
 *     statfs (sum over the servers), fsync = gfs_striped_sync.
 *   - Modes, owners and times as the records keep them (docs/posix.md
 *     "Limits"): a new name is its caller's; the kernel checks who may do
 *     what (default_permissions); with --all-users the mount serves every
 *     user of the host (allow_other).  Where nothing is kept: the mount's
 *     user and start time.
 *   - Locks: fcntl (F_SETLK, F_SETLKW, F_GETLK, OFD) and flock through the
 *     mount are the servers' POSIX locks (gfs_striped_plock), held in the
 *     kernel's lock owner's name, so mounts on two hosts exclude each
 *     other as processes on one host do.  libfuse unlocks a lock owner's
 *     locks at each flush (close) and its flock at the last release.
 *
 * Coherence, by default: no kernel caching (direct_io, zero attribute
 * and entry timeouts), so bytes written through the mount are on the
 * servers when write() returns and other clients' changes show at once;
 * mmap then fails (ENODEV).  With --cache the kernel's page cache holds
 * file data (so mmap works), with close-to-open consistency as NFS:
 * write() and msync() put the bytes on the servers before they return,
 * close() writes any dirty mapped pages first, every open drops the
 * file's cached pages (keep_cache off), and so do a granted fcntl or
 * flock lock and an fsync.  Reads within the cached size do not ask for
 * the size (auto_inval_data off).  Not the default: concurrent writers on
 * two mounts (ROMIO's data sieving) can read stale pages or sizes.  One FUSE
 * read or write (up to 1 MiB) is one gfs_striped_read/write: one transfer per
 * server.
 *
 * Threads: libfuse's multithreaded loop calls the operations from its
 * worker threads; the client library is thread-safe; directories are
 * kept on the servers (their markers, gf_dir.c).  The client starts in
 * init(), after libfuse has daemonised (a fork would lose libgalley's
 * threads); main() checks the cluster first so that a bad cluster file
 * fails `galley mount` itself.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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

#include "cluster_file.h"
#include "gf_internal.h"
#include "px_dirmark.h"
#include "px_fsinfo.h"

static struct {
    const char *cluster; /* -c, or NULL for the library default */
    int nsub;            /* -n: subfiles of new files, 0 = every server */
    int64_t unit;        /* -u: stripe unit of new files, 0 = default */
    bool cache;          /* --cache: the kernel's page cache, mmap */
    bool all_users;      /* --all-users: allow_other */
    struct timespec t0;  /* the time every entry shows */
} gf;

/* gfs error -> negative errno for FUSE. */
int gf_err(int64_t rc)
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
 * Operations
 * ------------------------------------------------------------------------ */

static void *gf_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    cfg->direct_io = !gf.cache;
    cfg->kernel_cache = 0;
    cfg->auto_cache = 0;
    cfg->attr_timeout = 0;
    cfg->entry_timeout = 0;
    cfg->negative_timeout = 0;
    cfg->use_ino = 0;
    cfg->nullpath_ok = 0;
    conn->max_write = 1 << 20;
    if (gf.cache)
        conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
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
    int rc = gf_classify(p, &w);
    if (rc)
        return rc;
    memset(st, 0, sizeof(*st));
    /* the owner kept, else the mount's user */
    st->st_uid = w.uid >= 0 ? (uid_t)w.uid : getuid();
    st->st_gid = w.gid >= 0 ? (gid_t)w.gid : getgid();
    /* the times kept (access time: the modification time), else the
     * mount's start */
    st->st_atim = st->st_mtim = st->st_ctim = gf.t0;
    if (w.mtime > 0)
        st->st_atim = st->st_mtim = st->st_ctim = (struct timespec){
            .tv_sec = w.mtime / 1000000000, .tv_nsec = w.mtime % 1000000000};
    if (w.ctime > 0)
        st->st_ctim = (struct timespec){.tv_sec = w.ctime / 1000000000,
                                        .tv_nsec = w.ctime % 1000000000};
    if (w.atime > 0)
        st->st_atim = (struct timespec){.tv_sec = w.atime / 1000000000,
                                        .tv_nsec = w.atime % 1000000000};
    switch (w.kind) {
    case K_FILE:
        st->st_mode = w.mode; /* a file, a symbolic link or a special
                               * file */
        st->st_rdev = (dev_t)w.rdev;
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
    case K_DIR:
        st->st_mode = w.mode;
        st->st_nlink = 2;
        break;
    default:
        st->st_mode = S_IFDIR | PX_DIR_PERM;
        st->st_nlink = 2;
    }
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

/* Open p.  Who may is the kernel's to check (default_permissions), from
 * the modes and owners gf_getattr shows. */
static int gf_open_as(const char *p, struct fuse_file_info *fi)
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
        int rc = sid == GFS_ELAYOUT ? -EISDIR : gf_classify(p, &w);
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
    fi->direct_io = !gf.cache;
    fi->keep_cache = 0;
    return 0;
}

static int gf_open(const char *p, struct fuse_file_info *fi)
{
    return gf_open_as(p, fi);
}

/* A new name, owned by the calling process's user (mode: the kernel took
 * the umask off; a type besides S_IFREG: a special file or a link). */
static int gf_make(const char *p, mode_t mode, dev_t rdev, const char *link)
{
    int nserv = gfs_num_servers();
    int nsub = gf.nsub > 0 && gf.nsub <= nserv ? gf.nsub : nserv;
    const struct fuse_context *c = fuse_get_context();
    return gfs_create_node(p, nsub, NULL, gf.unit, NULL,
                           &(gfs_node){.mode = mode,
                                       .uid = c->uid,
                                       .gid = c->gid,
                                       .rdev = rdev,
                                       .link = link});
}

static int gf_create(const char *p, mode_t mode, struct fuse_file_info *fi)
{
    int rc = gf_make(p, S_IFREG | (mode & 07777), 0, NULL);
    if (rc == -EEXIST && !(fi->flags & O_EXCL))
        rc = 0;
    if (rc)
        return gf_err(rc);
    return gf_open_as(p, fi);
}

/* mknod: a file (as create) or a special file, kept by Galley; the kernel
 * serves a FIFO's or device's opens itself. */
static int gf_mknod(const char *p, mode_t mode, dev_t rdev)
{
    what w;
    int rc = gf_classify(p, &w);
    if (rc != -ENOENT)
        return rc ? rc : -EEXIST;
    switch (mode & S_IFMT) {
    case S_IFREG:
    case S_IFIFO:
    case S_IFSOCK:
    case S_IFCHR:
    case S_IFBLK:
        return gf_err(gf_make(p, mode, rdev, NULL));
    default:
        return -EINVAL;
    }
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

/* With --cache, after a granted lock or an fsync on p: drop the kernel's
 * cached pages of p, so that reads under the lock (or after MPI's
 * sync-barrier-sync) see what other clients wrote. */
static void drop_cache(const char *p)
{
    struct fuse_context *ctx = fuse_get_context();
    if (gf.cache && ctx && ctx->fuse)
        fuse_invalidate_path(ctx->fuse, p);
}

/* fcntl locks.  libfuse gives the range as SEEK_SET with l_len 0 for "to
 * the end", and the kernel's lock owner in fi->lock_owner. */
static int gf_lock(const char *p, struct fuse_file_info *fi, int cmd,
                   struct flock *lk)
{
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
        rc = px_plock_getlk(h->sid, &g, lk);
        return rc ? gf_err(rc) : 0;
    }
    rc = gfs_striped_plock(h->sid, &g, cmd == F_SETLKW ? GFS_PLOCK_WAIT : 0);
    if (rc)
        return gf_err(rc);
    if (type != GFS_PLOCK_UNLOCK) {
        drop_cache(p);
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
    if (rc)
        return gf_err(rc);
    if (type != GFS_PLOCK_UNLOCK)
        drop_cache(p);
    return 0;
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
    int rc = gf_err(h->sid >= 0 ? gfs_striped_sync(h->sid) : 0);
    if (!rc) /* MPI's sync-barrier-sync: the second sync reads anew */
        drop_cache(p);
    return rc;
}

/* A directory's entries are records on every server: their logs. */
static int gf_fsyncdir(const char *p, int datasync, struct fuse_file_info *fi)
{
    (void)p;
    (void)datasync;
    (void)fi;
    return gf_err(gfs_sync_metadata(-1, NULL, NULL));
}

static int gf_statfs(const char *p, struct statvfs *sv)
{
    (void)p;
    px_cluster_statvfs(sv);
    return 0;
}

/* Times set (touch, cp -p, rsync -t, tar -x): a file's and a directory's
 * access and modification times are kept (gfs_set_times; a modification
 * time until the data next changes; a directory's in its marker).
 * Permission bits and owners are kept (gfs_chmod, gfs_chown), and who may
 * change them the kernel checks. */
static int gf_utimens(const char *p, const struct timespec tv[2],
                      struct fuse_file_info *fi)
{
    (void)fi;
    what w;
    int64_t t[2];
    int rc = gf_classify(p, &w);
    if (!rc)
        rc = px_times_wanted(tv, t);
    if (!rc && w.kind == K_FILE)
        rc = gf_err(gfs_set_times(p, t[0], t[1]));
    else if (!rc && w.kind == K_DIR)
        rc = gf_err(px_dir_settimes(p, t[0], t[1]));
    return rc; /* (the root, a plain file's view: none kept) */
}

static int gf_chmod(const char *p, mode_t mode, struct fuse_file_info *fi)
{
    what w;
    int rc = gf_classify(p, &w);
    if (!rc && w.kind == K_FILE)
        rc = gf_err(gfs_chmod(p, mode & 07777));
    else if (!rc && w.kind == K_DIR)
        rc = gf_err(px_dir_setattr(p, (int)(mode & 07777), -1, -1));
    return rc;
}

/* Symbolic links: kept by Galley (gfs_create_node), followed by the
 * kernel. */
static int gf_readlink(const char *p, char *buf, size_t size)
{
    if (size == 0)
        return -EINVAL;
    int n = gfs_readlink(p, buf, size - 1);
    if (n < 0)
        return gf_err(n);
    buf[n] = '\0';
    return 0;
}

static int gf_symlink(const char *target, const char *p)
{
    what w;
    int rc = gf_classify(p, &w);
    if (rc != -ENOENT)
        return rc ? rc : -EEXIST;
    return gf_err(gf_make(p, S_IFLNK | 0777, 0, target));
}

static int gf_chown(const char *p, uid_t uid, gid_t gid,
                    struct fuse_file_info *fi)
{
    what w;
    int rc = gf_classify(p, &w);
    int64_t u = uid == (uid_t)-1 ? -1 : (int64_t)uid;
    int64_t g = gid == (gid_t)-1 ? -1 : (int64_t)gid;
    if (rc || (u == -1 && g == -1))
        return rc;
    /* a part not changed stays what it showed (the mount's user's when
     * none was kept) */
    if (w.kind == K_FILE || w.kind == K_DIR) {
        if (u == -1)
            u = w.uid >= 0 ? w.uid : getuid();
        if (g == -1)
            g = w.gid >= 0 ? w.gid : getgid();
    }
    if (w.kind == K_FILE)
        return gf_err(gfs_chown(p, u, g));
    if (w.kind == K_DIR)
        return gf_err(px_dir_setattr(p, -1, u, g));
    return 0; /* (the root, a plain file's view: none kept) */
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
    .fsyncdir = gf_fsyncdir,
    .unlink = gf_unlink,
    .mkdir = gf_mkdir,
    .rmdir = gf_rmdir,
    .rename = gf_rename,
    .statfs = gf_statfs,
    .utimens = gf_utimens,
    .chmod = gf_chmod,
    .chown = gf_chown,
    .readlink = gf_readlink,
    .symlink = gf_symlink,
    .mknod = gf_mknod,
    .lock = gf_lock,
    .flock = gf_flock,
};

/* ------------------------------------------------------------------------
 * main
 * ------------------------------------------------------------------------ */

static int usage(void)
{
    fprintf(stderr,
            "usage: galley-fuse [-c CLUSTERFILE] [-n NSUB] [-u UNIT] "
            "[--cache] [--all-users] [-f] [-d] [-o FUSEOPT] DIR\n"
            "  -n, -u  layout of files created through the mount\n"
            "  --cache the kernel's page cache (mmap; close-to-open)\n"
            "  --all-users  every user of the host, checked by modes and "
            "owners\n"
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
        else if (!strcmp(a, "--cache"))
            gf.cache = true;
        else if (!strcmp(a, "--all-users"))
            gf.all_users = true;
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
    static char fsname[PATH_MAX + 96];
    /* The source names the cluster file, so that libgalley-posix.so can
     * tell which mounts show its own cluster (and go straight to Galley
     * for paths under them). */
    char buf[PATH_MAX], abs[PATH_MAX];
    const char *cl = gc_cluster_find(gf.cluster, buf, sizeof(buf));
    /* The kernel checks who may do what, from the modes and owners the
     * mount shows (default_permissions); only the user who mounted it
     * reaches it unless --all-users (allow_other: root, or a user that
     * /etc/fuse.conf's user_allow_other lets). */
    snprintf(fsname, sizeof(fsname),
             "fsname=galley:%s,subtype=galley,default_permissions%s",
             realpath(cl, abs) ? abs : cl, gf.all_users ? ",allow_other" : "");
    fargv[fargc++] = "-o";
    fargv[fargc++] = fsname;
    fargv[fargc++] = (char *)dir;
    fargv[fargc] = NULL;
    return fuse_main(fargc, fargv, &gf_ops, NULL);
}
