/*
 * px_names.c -- calls on names of libgalley-posix.so (see galley_posix.c):
 * the stat family (a striped file, an implied directory, or a plain
 * Galley file shown as a directory), access, unlink, rename (px_rename.c)
 * and the xattr calls (Galley keeps none).
 *
 * Threads: any.
 */
#define _GNU_SOURCE
#include "px_internal.h"
#include "px_rename.h"

/* ------------------------------------------------------------------------
 * Names: stat, unlink, rename
 * ------------------------------------------------------------------------ */

static int px_any_file(const char *name, void *arg)
{
    (void)name;
    (void)arg;
    return 1;
}

/* Is `name` an implied directory (a prefix "name/" of some file, or the
 * root)?  1 yes, 0 no, negative error. */
int px_is_dir(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || strcmp(name, "/") == 0)
        return 1;
    char prefix[GFS_NAME_MAX + 2];
    if (n > GFS_NAME_MAX)
        return 0;
    memcpy(prefix, name, n);
    if (prefix[n - 1] != '/')
        prefix[n++] = '/';
    prefix[n] = '\0';
    int rc = gfs_list_files(prefix, px_any_file, NULL);
    return rc < 0 ? rc : rc == 1;
}

static struct timespec px_t0;
static uid_t px_uid;
static gid_t px_gid;
static void px_set_t0(void)
{
    clock_gettime(CLOCK_REALTIME, &px_t0);
    px_uid = getuid();
    px_gid = getgid();
}

void px_fill_stat(struct stat *st, const char *name, int64_t size, int64_t unit,
                  int64_t mtime, mode_t mode)
{
    memset(st, 0, sizeof(*st));
    st->st_dev = PX_DEV;
    st->st_ino = px_hash(name);
    st->st_mode = mode;
    st->st_nlink = S_ISDIR(mode) ? 2 : 1;
    static pthread_once_t t0_once = PTHREAD_ONCE_INIT;
    pthread_once(&t0_once, px_set_t0);
    st->st_uid = px_uid; /* the process's at its first stat */
    st->st_gid = px_gid;
    st->st_size = size;
    st->st_blksize = unit > 0 ? unit : GFS_DEFAULT_STRIPE_UNIT;
    st->st_blocks = (size + 511) / 512;
    /* A file's modification time is its data's (libgalley: the newest of
     * its subfiles' data files); Galley keeps no other times: access and
     * change time are the same.  A file never written and a directory
     * have none: one fixed time (this process's first stat), so tools
     * that watch for changes (tar) see none. */
    st->st_atim = st->st_mtim = st->st_ctim = px_t0;
    if (mtime > 0)
        st->st_atim = st->st_mtim = st->st_ctim = (struct timespec){
            .tv_sec = mtime / 1000000000, .tv_nsec = mtime % 1000000000};
}

/* The change and access times a record keeps (0: none, the modification
 * time's). */
static void px_fill_times(struct stat *st, const gfs_striped_info *fs)
{
    if (fs->ctime_ns > 0)
        st->st_ctim = (struct timespec){.tv_sec = fs->ctime_ns / 1000000000,
                                        .tv_nsec = fs->ctime_ns % 1000000000};
    if (fs->atime_ns > 0)
        st->st_atim = (struct timespec){.tv_sec = fs->atime_ns / 1000000000,
                                        .tv_nsec = fs->atime_ns % 1000000000};
}

/* The owner a record keeps (-1: none, the caller's shows). */
static void px_fill_owner(struct stat *st, int64_t uid, int64_t gid)
{
    if (uid >= 0)
        st->st_uid = (uid_t)uid;
    if (gid >= 0)
        st->st_gid = (gid_t)gid;
}

/* stat of an open striped file. */
static int px_stat_sid(int sid, const char *name, struct stat *st)
{
    gfs_striped_info fs;
    int rc = gfs_striped_stat_open(sid, &fs);
    if (rc)
        return rc;
    px_fill_stat(st, name, fs.size, fs.layout.unit, fs.mtime_ns,
                 S_IFREG | (fs.mode & 07777));
    px_fill_owner(st, fs.uid, fs.gid);
    px_fill_times(st, &fs);
    return 0;
}

/* Is `name`, which names no file, a directory: a mapped directory, one
 * made with mkdir (its marker: into st, when not NULL, its mode and
 * owner), or one some file's name implies?  1 yes, 0 no, negative
 * error. */
static int px_dir_exists_st(const char *name, struct stat *st)
{
    if (px_mapped_root(name))
        return 1;
    gfs_striped_info ds;
    int rc = px_dir_attrs(name, &ds);
    if (rc == 1 && st) {
        px_fill_stat(st, name, 0, 0, ds.mtime_ns, ds.mode);
        px_fill_owner(st, ds.uid, ds.gid);
        px_fill_times(st, &ds);
    }
    if (rc == GFS_ELAYOUT) /* (a marker that is a plain file) */
        return 1;
    return rc ? rc : px_is_dir(name);
}

static int px_dir_exists(const char *name)
{
    return px_dir_exists_st(name, NULL);
}

/* stat by Galley name: a striped file, a directory, or -ENOENT. */
int px_stat_name(const char *name, struct stat *st)
{
    int rc = px_start();
    if (rc)
        return rc;
    gfs_striped_info fs;
    int sid = *name && !px_mapped_root(name) ? gfs_striped_stat_all(name, &fs)
                                             : -ENOENT;
    if (sid >= 0) { /* without opening it: two round trips */
        px_fill_stat(st, name, fs.size, fs.layout.unit, fs.mtime_ns, fs.mode);
        px_fill_owner(st, fs.uid, fs.gid);
        px_fill_times(st, &fs);
        st->st_rdev = (dev_t)fs.rdev;
        return 0;
    }
    if (sid == GFS_ELAYOUT) { /* a plain (non-striped) file */
        px_fill_stat(st, name, 0, 0, 0, PX_DIR_MODE);
        return 0;
    }
    if (sid != -ENOENT)
        return sid;
    px_fill_stat(st, name, 0, 0, 0, PX_DIR_MODE);
    rc = *name ? px_dir_exists_st(name, st) : 0;
    if (rc < 0)
        return rc;
    return rc ? 0 : -ENOENT;
}

static int px_unlink(const char *name)
{
    int rc = px_start();
    if (!rc)
        rc = gfs_delete_file(name);
    if (rc == -ENOENT && px_dir_exists(name) == 1)
        rc = -EISDIR;
    return rc ? px_fail(rc) : 0;
}

/* Both names must be galley: names (see px_rename.c).  A directory is not
 * renamed: EXDEV, on which mv copies the tree and removes the old one. */
static int px_rename(const char *from, const char *to)
{
    int rc = px_start();
    if (!rc)
        rc = px_rename_file(from, to);
    if (rc == -ENOENT && px_dir_exists(from) == 1)
        rc = -EXDEV;
    return rc ? px_fail(rc) : 0;
}

/* ------------------------------------------------------------------------
 * Interposed calls: stat family
 * ------------------------------------------------------------------------ */

static int px_fstat(px_file *f, struct stat *st)
{
    int rc = 0;
    if (f->dir)
        px_fill_stat(st, f->name, 0, 0, 0, PX_DIR_MODE);
    else if (__atomic_load_n(&f->sid, __ATOMIC_ACQUIRE) < 0)
        rc = px_stat_name(f->name, st); /* its open was put off */
    else
        rc = px_stat_sid(f->sid, f->name, st);
    return rc ? px_fail(rc) : 0;
}

PX_EXPORT int fstat(int fd, struct stat *st)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(fstat)(fd, st);
    int rc = px_fstat(f, st);
    px_put(f);
    return rc;
}

PX_EXPORT int fstat64(int fd, struct stat64 *st)
{
    return fstat(fd, (struct stat *)st);
}

/* stat of the name px_name just gave (a path ending in "/" must name a
 * directory). */
int px_stat_path(const char *name, struct stat *st)
{
    bool dir_only = px_dir_only; /* (the client's start may map names) */
    int rc = px_stat_name(name, st);
    char to[PATH_MAX + 1];
    if (!rc && dir_only && S_ISLNK(st->st_mode)) {
        /* "link/": where the link leads, which must be a directory */
        rc = px_follow(name, to, sizeof(to));
        if (rc == 1) {
            if (REAL(stat)(to, st))
                return -1;
            return S_ISDIR(st->st_mode) ? 0 : px_fail(-ENOTDIR);
        }
        if (!rc)
            rc = px_stat_name(to, st);
    }
    if (!rc && dir_only && !S_ISDIR(st->st_mode))
        rc = -ENOTDIR;
    return rc ? px_fail(rc) : 0;
}

/* A galley stat of a path under a galley mount that found nothing: let
 * the mount answer (it also shows plain files' subfiles and forks). */
#define PX_OR_MOUNT(galley_call, real_call)                                    \
    ({                                                                         \
        bool via_mount_ = px_from_mount;                                       \
        int r_ = (galley_call);                                                \
        if (r_ < 0 && via_mount_ && errno == ENOENT)                           \
            r_ = (real_call);                                                  \
        r_;                                                                    \
    })

PX_EXPORT int stat(const char *path, struct stat *st)
{
    const char *name = px_name(path);
    return name ? PX_OR_MOUNT(px_stat_follow(name, st), REAL(stat)(path, st))
                : REAL(stat)(path, st);
}

PX_EXPORT int stat64(const char *path, struct stat64 *st)
{
    return stat(path, (struct stat *)st);
}

PX_EXPORT int lstat(const char *path, struct stat *st)
{
    const char *name = px_name(path);
    return name ? PX_OR_MOUNT(px_stat_path(name, st), REAL(lstat)(path, st))
                : REAL(lstat)(path, st);
}

PX_EXPORT int lstat64(const char *path, struct stat64 *st)
{
    return lstat(path, (struct stat *)st);
}

PX_EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
    const char *name = px_name_at(dirfd, path);
    if (name)
        return PX_OR_MOUNT((flags & AT_SYMLINK_NOFOLLOW)
                               ? px_stat_path(name, st)
                               : px_stat_follow(name, st),
                           REAL(fstatat)(dirfd, path, st, flags));
    if (*path == '\0' && (flags & AT_EMPTY_PATH)) {
        px_file *f = px_get(dirfd);
        if (f) {
            int rc = px_fstat(f, st);
            px_put(f);
            return rc;
        }
    }
    return REAL(fstatat)(dirfd, path, st, flags);
}

PX_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st,
                        int flags)
{
    return fstatat(dirfd, path, (struct stat *)st, flags);
}

/* Older glibc's stat entry points (still exported for old binaries). */
PX_EXPORT int __fxstat(int ver, int fd, struct stat *st)
{
    px_file *f = px_get(fd);
    if (!f)
        return HAVE_REAL(__fxstat) ? real___fxstat(ver, fd, st)
                                   : REAL(fstat)(fd, st);
    int rc = px_fstat(f, st);
    px_put(f);
    return rc;
}

PX_EXPORT int __fxstat64(int ver, int fd, struct stat64 *st)
{
    return __fxstat(ver, fd, (struct stat *)st);
}

PX_EXPORT int __xstat(int ver, const char *path, struct stat *st)
{
    const char *name = px_name(path);
    if (name)
        return px_stat_follow(name, st);
    return HAVE_REAL(__xstat) ? real___xstat(ver, path, st)
                              : REAL(stat)(path, st);
}

PX_EXPORT int __xstat64(int ver, const char *path, struct stat64 *st)
{
    return __xstat(ver, path, (struct stat *)st);
}

PX_EXPORT int __lxstat(int ver, const char *path, struct stat *st)
{
    const char *name = px_name(path);
    if (name)
        return px_stat_path(name, st);
    return HAVE_REAL(__lxstat) ? real___lxstat(ver, path, st)
                               : REAL(lstat)(path, st);
}

PX_EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st)
{
    return __lxstat(ver, path, (struct stat *)st);
}

PX_EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st,
                         int flags)
{
    const char *name = px_name_at(dirfd, path);
    if (name)
        return (flags & AT_SYMLINK_NOFOLLOW) ? px_stat_path(name, st)
                                             : px_stat_follow(name, st);
    if (*path == '\0' && (flags & AT_EMPTY_PATH) && px_fds_has(dirfd))
        return __fxstat(ver, dirfd, st);
    return HAVE_REAL(__fxstatat) ? real___fxstatat(ver, dirfd, path, st, flags)
                                 : REAL(fstatat)(dirfd, path, st, flags);
}

PX_EXPORT int __fxstatat64(int ver, int dirfd, const char *path,
                           struct stat64 *st, int flags)
{
    return __fxstatat(ver, dirfd, path, (struct stat *)st, flags);
}

static void px_to_statx(const struct stat *st, struct statx *sx)
{
    memset(sx, 0, sizeof(*sx));
    sx->stx_mask = STATX_BASIC_STATS;
    sx->stx_blksize = st->st_blksize;
    sx->stx_nlink = st->st_nlink;
    sx->stx_uid = st->st_uid;
    sx->stx_gid = st->st_gid;
    sx->stx_mode = st->st_mode;
    sx->stx_ino = st->st_ino;
    sx->stx_size = st->st_size;
    sx->stx_blocks = st->st_blocks;
    sx->stx_atime.tv_sec = st->st_atim.tv_sec;
    sx->stx_atime.tv_nsec = st->st_atim.tv_nsec;
    sx->stx_mtime.tv_sec = st->st_mtim.tv_sec;
    sx->stx_mtime.tv_nsec = st->st_mtim.tv_nsec;
    sx->stx_ctime.tv_sec = st->st_ctim.tv_sec;
    sx->stx_ctime.tv_nsec = st->st_ctim.tv_nsec;
    sx->stx_dev_major = (uint32_t)(PX_DEV >> 8);
    sx->stx_dev_minor = (uint32_t)(PX_DEV & 0xff);
}

PX_EXPORT int statx(int dirfd, const char *path, int flags, unsigned mask,
                    struct statx *sx)
{
    struct stat st;
    const char *name = px_name_at(dirfd, path);
    if (name) {
        bool via_mount = px_from_mount;
        if (((flags & AT_SYMLINK_NOFOLLOW) ? px_stat_path(name, &st)
                                           : px_stat_follow(name, &st)) == 0) {
            px_to_statx(&st, sx);
            return 0;
        }
        if (via_mount && errno == ENOENT)
            return REAL(statx)(dirfd, path, flags, mask, sx);
        return -1;
    }
    if (*path == '\0' && (flags & AT_EMPTY_PATH)) {
        px_file *f = px_get(dirfd);
        if (f) {
            int rc = px_fstat(f, &st);
            px_put(f);
            if (!rc)
                px_to_statx(&st, sx);
            return rc;
        }
    }
    return REAL(statx)(dirfd, path, flags, mask, sx);
}

static int px_access(const char *name, int amode)
{
    struct stat st;
    if (px_stat_follow(name, &st))
        return -1;
    int rc = px_mode_permits(st.st_mode, st.st_uid, st.st_gid, amode);
    return rc ? px_fail(rc) : 0;
}

PX_EXPORT int access(const char *path, int amode)
{
    const char *name = px_name(path);
    return name ? PX_OR_MOUNT(px_access(name, amode), REAL(access)(path, amode))
                : REAL(access)(path, amode);
}

PX_EXPORT int faccessat(int dirfd, const char *path, int amode, int flags)
{
    const char *name = px_name_at(dirfd, path);
    return name ? px_access(name, amode)
                : REAL(faccessat)(dirfd, path, amode, flags);
}

/* ------------------------------------------------------------------------
 * Interposed calls: names
 * ------------------------------------------------------------------------ */

PX_EXPORT int unlink(const char *path)
{
    const char *name = px_name(path);
    return name ? px_unlink(name) : REAL(unlink)(path);
}

PX_EXPORT int unlinkat(int dirfd, const char *path, int flags)
{
    const char *name = px_name_at(dirfd, path);
    if (!name || ((flags & AT_REMOVEDIR) && px_from_mount))
        return REAL(unlinkat)(dirfd, path, flags);
    return (flags & AT_REMOVEDIR) ? px_rmdir(name) : px_unlink(name);
}

PX_EXPORT int remove(const char *path)
{
    const char *name = px_name(path);
    return name ? px_unlink(name) : REAL(remove)(path);
}

static int px_rename_paths(int fromfd, const char *from, int tofd,
                           const char *to)
{
    const char *a = px_name_at(fromfd, from), *b = px_name_at(tofd, to);
    if (!a && !b)
        return 1; /* not ours */
    if (!a || !b) {
        errno = EXDEV;
        return -1;
    }
    return px_rename(a, b);
}

PX_EXPORT int rename(const char *from, const char *to)
{
    int rc = px_rename_paths(AT_FDCWD, from, AT_FDCWD, to);
    return rc == 1 ? REAL(rename)(from, to) : rc;
}

PX_EXPORT int renameat(int fromfd, const char *from, int tofd, const char *to)
{
    int rc = px_rename_paths(fromfd, from, tofd, to);
    return rc == 1 ? REAL(renameat)(fromfd, from, tofd, to) : rc;
}

PX_EXPORT int renameat2(int fromfd, const char *from, int tofd, const char *to,
                        unsigned flags)
{
    if (!px_name_at(fromfd, from) && !px_name_at(tofd, to))
        return REAL(renameat2)(fromfd, from, tofd, to, flags);
    if (flags & ~RENAME_NOREPLACE) {
        errno = EINVAL;
        return -1;
    }
    const char *b = px_name_at(tofd, to);
    if ((flags & RENAME_NOREPLACE) && b) {
        struct stat st;
        int rc = px_stat_name(b, &st);
        if (rc != -ENOENT) {
            errno = rc ? px_errno(rc) : EEXIST;
            return -1;
        }
    }
    return px_rename_paths(fromfd, from, tofd, to);
}

/* Galley keeps no extended attributes (ls -l asks for ACLs). */
static ssize_t px_noxattr(const char *name)
{
    struct stat st;
    if (px_stat_path(name, &st))
        return -1;
    errno = ENODATA;
    return -1;
}

PX_EXPORT ssize_t getxattr(const char *path, const char *key, void *v, size_t n)
{
    const char *name = px_name(path);
    return name ? px_noxattr(name) : REAL(getxattr)(path, key, v, n);
}

PX_EXPORT ssize_t lgetxattr(const char *path, const char *key, void *v,
                            size_t n)
{
    const char *name = px_name(path);
    return name ? px_noxattr(name) : REAL(lgetxattr)(path, key, v, n);
}

static ssize_t px_listxattr(const char *name)
{
    struct stat st;
    return px_stat_path(name, &st) ? -1 : 0;
}

PX_EXPORT ssize_t listxattr(const char *path, char *list, size_t n)
{
    const char *name = px_name(path);
    return name ? px_listxattr(name) : REAL(listxattr)(path, list, n);
}

PX_EXPORT ssize_t llistxattr(const char *path, char *list, size_t n)
{
    const char *name = px_name(path);
    return name ? px_listxattr(name) : REAL(llistxattr)(path, list, n);
}
