/*
 * px_attr.c -- modes, owners, times and descriptor xattrs of Galley files
 * and directories in libgalley-posix.so (see galley_posix.c).  A file's
 * permission bits are kept in its record (gfs_chmod): chmod sets them,
 * open and access honour them, a new file gets its open's mode less the
 * umask.  A file's modification time is its data's, or the one set by
 * utimensat and its kin (gfs_set_times) until the data next changes; an
 * access time set is kept as set.  Owners are kept in records too
 * (gfs_chown; a directory's mode, owner and times in its marker,
 * px_dirmark.h).  Galley keeps no xattrs: on a name that exists (or a
 * descriptor of ours) the calls that set them fail with ENOTSUP, so tools
 * that copy them (cp -a, mv, tar -x) go on; a missing name answers ENOENT
 * as libc would.
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

/* Where a call on name (just mapped) lands: name, stat'ed into *st, or,
 * when it is a symbolic link and follow, where the link leads (*name then
 * points into to).  0: a Galley name; 1: a local path in to (libc's to
 * serve); -1 (errno set) when a stat fails; or a negative gfs error. */
static int px_target(const char **name, char *to, size_t len, struct stat *st,
                     bool follow)
{
    if (px_stat_path(*name, st))
        return -1;
    if (!S_ISLNK(st->st_mode) || !follow)
        return 0;
    int rc = px_follow(*name, to, len);
    if (rc == 0) {
        if (px_stat_path(to, st))
            return -1;
        *name = to;
    }
    return rc;
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
 * nofollow: a link's own mode cannot change): kept in its record (a
 * directory's marker; the mapped directory's: accepted and ignored). */
static int px_chmod_name(const char *name, mode_t mode, bool nofollow)
{
    struct stat st;
    char to[PATH_MAX + 1];
    int rc = px_target(&name, to, sizeof(to), &st, !nofollow);
    if (rc == -1)
        return -1;
    if (rc == 1)
        return REAL(chmod)(to, mode);
    if (!rc && S_ISLNK(st.st_mode)) /* (a link's own mode cannot change) */
        rc = -EOPNOTSUPP;
    if (!rc && !S_ISDIR(st.st_mode))
        rc = gfs_chmod(name, mode & 07777);
    else if (!rc && !px_mapped_root(name))
        rc = px_dir_setattr(name, (int)(mode & 07777), -1, -1);
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
    int rc = !f->dir ? gfs_chmod(f->name, mode & 07777)
             : px_mapped_root(f->name)
                 ? 0
                 : px_dir_setattr(f->name, (int)(mode & 07777), -1, -1);
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

/* May this process give a file st describes owner uid and group gid (-1:
 * keep), as chown(2) says: root any; its owner only a group it is in. */
static int px_chown_permitted(const struct stat *st, uid_t uid, gid_t gid)
{
    if (geteuid() == 0)
        return 0;
    if (st->st_uid != geteuid() || (uid != (uid_t)-1 && uid != st->st_uid))
        return -EPERM;
    if (gid == (gid_t)-1 || gid == st->st_gid || gid == getegid())
        return 0;
    gid_t groups[256];
    int n = getgroups(256, groups);
    for (int i = 0; i < n; i++)
        if (groups[i] == gid)
            return 0;
    return -EPERM;
}

/* chown of name (just mapped) or, unless nofollow, of where a link leads:
 * kept in its record (a directory's marker; not the mapped directory's). */
static int px_chown_name(const char *name, uid_t uid, gid_t gid, bool nofollow)
{
    struct stat st;
    char to[PATH_MAX + 1];
    int rc = px_target(&name, to, sizeof(to), &st, !nofollow);
    if (rc == -1)
        return -1;
    if (rc == 1)
        return REAL(chown)(to, uid, gid);
    if (!rc)
        rc = px_chown_permitted(&st, uid, gid);
    /* a part not changed stays what it showed */
    int64_t u = uid == (uid_t)-1 ? (int64_t)st.st_uid : (int64_t)uid;
    int64_t g = gid == (gid_t)-1 ? (int64_t)st.st_gid : (int64_t)gid;
    if (rc || (uid == (uid_t)-1 && gid == (gid_t)-1))
        ;
    else if (!S_ISDIR(st.st_mode))
        rc = gfs_chown(name, u, g);
    else if (!px_mapped_root(name))
        rc = px_dir_setattr(name, -1, u, g);
    return rc ? px_fail(rc) : 0;
}

PX_EXPORT int chown(const char *path, uid_t uid, gid_t gid)
{
    const char *name = px_name(path);
    return name ? px_chown_name(name, uid, gid, false)
                : REAL(chown)(path, uid, gid);
}

PX_EXPORT int lchown(const char *path, uid_t uid, gid_t gid)
{
    const char *name = px_name(path);
    return name ? px_chown_name(name, uid, gid, true)
                : REAL(lchown)(path, uid, gid);
}

PX_EXPORT int fchown(int fd, uid_t uid, gid_t gid)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(fchown)(fd, uid, gid);
    char name[GFS_NAME_MAX + 1];
    snprintf(name, sizeof(name), "%s", f->name);
    px_put(f);
    return px_chown_name(name, uid, gid, true);
}

PX_EXPORT int fchownat(int dirfd, const char *path, uid_t uid, gid_t gid,
                       int flags)
{
    const char *name = px_name_at(dirfd, path);
    return name ? px_chown_name(name, uid, gid, flags & AT_SYMLINK_NOFOLLOW)
                : REAL(fchownat)(dirfd, path, uid, gid, flags);
}

/* utimensat on name (just mapped): access and modification times kept
 * (gfs_set_times; a directory's in its marker, the mapped directory's
 * accepted and ignored). */
static int px_utimens_name(const char *name, const struct timespec times[2],
                           bool nofollow)
{
    struct stat st;
    char to[PATH_MAX + 1];
    int rc = px_target(&name, to, sizeof(to), &st, !nofollow);
    if (rc == -1)
        return -1;
    if (rc == 1)
        return REAL(utimensat)(AT_FDCWD, to, times, 0);
    int64_t t[2];
    rc = px_times_wanted(times, t);
    if (!rc)
        rc = !S_ISDIR(st.st_mode)   ? gfs_set_times(name, t[0], t[1])
             : px_mapped_root(name) ? 0
                                    : px_dir_settimes(name, t[0], t[1]);
    return rc ? px_fail(rc) : 0;
}

PX_EXPORT int utimensat(int dirfd, const char *path,
                        const struct timespec times[2], int flags)
{
    const char *name = px_name_at(dirfd, path);
    return name ? px_utimens_name(name, times, flags & AT_SYMLINK_NOFOLLOW)
                : REAL(utimensat)(dirfd, path, times, flags);
}

PX_EXPORT int futimens(int fd, const struct timespec times[2])
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(futimens)(fd, times);
    char name[GFS_NAME_MAX + 1];
    snprintf(name, sizeof(name), "%s", f->name);
    px_put(f);
    return px_utimens_name(name, times, true);
}

/* utimes' and utime's times as utimensat's. */
static const struct timespec *px_from_timeval(const struct timeval *tv,
                                              struct timespec ts[2])
{
    if (!tv)
        return NULL;
    for (int i = 0; i < 2; i++)
        ts[i] = (struct timespec){.tv_sec = tv[i].tv_sec,
                                  .tv_nsec = tv[i].tv_usec * 1000};
    return ts;
}

PX_EXPORT int utimes(const char *path, const struct timeval times[2])
{
    const char *name = px_name(path);
    struct timespec ts[2];
    return name ? px_utimens_name(name, px_from_timeval(times, ts), false)
                : REAL(utimes)(path, times);
}

PX_EXPORT int utime(const char *path, const struct utimbuf *times)
{
    const char *name = px_name(path);
    if (!name)
        return REAL(utime)(path, times);
    struct timespec ts[2] = {{.tv_sec = times ? times->actime : 0},
                             {.tv_sec = times ? times->modtime : 0}};
    return px_utimens_name(name, times ? ts : NULL, false);
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
