/*
 * px_attr.c -- modes, owners, times and descriptor xattrs of Galley files
 * and directories in libgalley-posix.so (see galley_posix.c).  A file's
 * permission bits are kept in its record (gfs_chmod): chmod sets them,
 * open and access honour them, a new file gets its open's mode less the
 * umask.  Galley keeps no owners, set times or xattrs, and no directory
 * modes: on a name that exists (or a descriptor of ours) the calls that
 * set those succeed and change nothing, so tools that copy them (cp -a,
 * mv, tar -x) work; a missing name answers ENOENT as libc would.
 *
 * Threads: any.
 */
#define _GNU_SOURCE
#include "px_internal.h"

#include <sys/time.h>
#include <utime.h>

/* 0 if name (just mapped by px_name/px_name_at) exists, else -1. */
static int px_exists(const char *name)
{
    struct stat st;
    return px_stat_path(name, &st);
}

/* 0 if fd is ours, 1 if not (libc's then). */
static int px_ours(int fd)
{
    px_file *f = px_get(fd);
    px_put(f);
    return f ? 0 : 1;
}

/* ---------------------------------------------------------------- modes */

/* The umask, read from the kernel at the first need (there is no call
 * that reads it without setting it), then kept by umask() below. */
static int px_mask = -1;

mode_t px_umask(void)
{
    int m = __atomic_load_n(&px_mask, __ATOMIC_ACQUIRE);
    if (m >= 0)
        return (mode_t)m;
    m = 022;
    FILE *f = REAL(fopen)("/proc/self/status", "r");
    if (f) {
        char line[128];
        unsigned v;
        while (fgets(line, sizeof(line), f))
            if (sscanf(line, "Umask: %o", &v) == 1) {
                m = (int)(v & 0777);
                break;
            }
        fclose(f);
    }
    int unset = -1; /* (a umask() meanwhile wins) */
    __atomic_compare_exchange_n(&px_mask, &unset, m, false, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    return (mode_t)__atomic_load_n(&px_mask, __ATOMIC_ACQUIRE);
}

PX_EXPORT mode_t umask(mode_t mask)
{
    mode_t old = REAL(umask)(mask);
    __atomic_store_n(&px_mask, (int)(mask & 0777), __ATOMIC_RELEASE);
    return old;
}

/* chmod of name (just mapped) and of where a link leads (unless
 * nofollow: a link's own mode cannot change): a file's bits kept, a
 * directory's accepted and ignored. */
static int px_chmod_name(const char *name, mode_t mode, bool nofollow)
{
    struct stat st;
    if (px_stat_path(name, &st))
        return -1;
    char to[PATH_MAX + 1];
    int rc = 0;
    if (S_ISLNK(st.st_mode)) {
        rc = nofollow ? -EOPNOTSUPP : px_follow(name, to, sizeof(to));
        if (rc == 1)
            return REAL(chmod)(to, mode);
        if (!rc && px_stat_path(to, &st))
            return -1;
        name = to;
    }
    if (!rc && !S_ISDIR(st.st_mode))
        rc = gfs_chmod(name, mode & 07777);
    return rc ? px_fail(rc) : 0;
}

PX_EXPORT int chmod(const char *path, mode_t mode)
{
    const char *name = px_name(path);
    return name ? px_chmod_name(name, mode, false) : REAL(chmod)(path, mode);
}

PX_EXPORT int fchmod(int fd, mode_t mode)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(fchmod)(fd, mode);
    int rc = f->dir ? 0 : gfs_chmod(f->name, mode & 07777);
    px_put(f);
    return rc ? px_fail(rc) : 0;
}

PX_EXPORT int fchmodat(int dirfd, const char *path, mode_t mode, int flags)
{
    const char *name = px_name_at(dirfd, path);
    return name ? px_chmod_name(name, mode, flags & AT_SYMLINK_NOFOLLOW)
                : REAL(fchmodat)(dirfd, path, mode, flags);
}

/* ------------------------------------------------- owners, times, xattrs */

PX_EXPORT int chown(const char *path, uid_t uid, gid_t gid)
{
    const char *name = px_name(path);
    return name ? px_exists(name) : REAL(chown)(path, uid, gid);
}

PX_EXPORT int lchown(const char *path, uid_t uid, gid_t gid)
{
    const char *name = px_name(path);
    return name ? px_exists(name) : REAL(lchown)(path, uid, gid);
}

PX_EXPORT int fchown(int fd, uid_t uid, gid_t gid)
{
    return px_ours(fd) ? REAL(fchown)(fd, uid, gid) : 0;
}

PX_EXPORT int fchownat(int dirfd, const char *path, uid_t uid, gid_t gid,
                       int flags)
{
    const char *name = px_name_at(dirfd, path);
    return name ? px_exists(name)
                : REAL(fchownat)(dirfd, path, uid, gid, flags);
}

PX_EXPORT int utimensat(int dirfd, const char *path,
                        const struct timespec times[2], int flags)
{
    const char *name = px_name_at(dirfd, path);
    return name ? px_exists(name) : REAL(utimensat)(dirfd, path, times, flags);
}

PX_EXPORT int futimens(int fd, const struct timespec times[2])
{
    return px_ours(fd) ? REAL(futimens)(fd, times) : 0;
}

PX_EXPORT int utimes(const char *path, const struct timeval times[2])
{
    const char *name = px_name(path);
    return name ? px_exists(name) : REAL(utimes)(path, times);
}

PX_EXPORT int utime(const char *path, const struct utimbuf *times)
{
    const char *name = px_name(path);
    return name ? px_exists(name) : REAL(utime)(path, times);
}

/* Galley keeps no extended attributes (getxattr, listxattr: px_names.c):
 * setting one answers ENOTSUP, on which cp and mv set the mode alone. */
static int px_nosetxattr(const char *name)
{
    if (px_exists(name))
        return -1;
    errno = ENOTSUP;
    return -1;
}

PX_EXPORT int setxattr(const char *path, const char *key, const void *v,
                       size_t n, int flags)
{
    const char *name = px_name(path);
    return name ? px_nosetxattr(name) : REAL(setxattr)(path, key, v, n, flags);
}

PX_EXPORT int lsetxattr(const char *path, const char *key, const void *v,
                        size_t n, int flags)
{
    const char *name = px_name(path);
    return name ? px_nosetxattr(name) : REAL(lsetxattr)(path, key, v, n, flags);
}

PX_EXPORT int fsetxattr(int fd, const char *key, const void *v, size_t n,
                        int flags)
{
    if (px_ours(fd))
        return REAL(fsetxattr)(fd, key, v, n, flags);
    errno = ENOTSUP;
    return -1;
}

PX_EXPORT ssize_t fgetxattr(int fd, const char *key, void *v, size_t n)
{
    if (px_ours(fd))
        return REAL(fgetxattr)(fd, key, v, n);
    errno = ENODATA;
    return -1;
}

PX_EXPORT ssize_t flistxattr(int fd, char *list, size_t n)
{
    return px_ours(fd) ? REAL(flistxattr)(fd, list, n) : 0;
}
