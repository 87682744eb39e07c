/*
 * px_fs.c -- the calls that ask about the file system rather than a file,
 * for paths under a mapped directory and for Galley descriptors:
 *
 *   realpath, __realpath_chk, canonicalize_file_name
 *                        the real path of a mapped path is the path itself
 *                        read as the kernel reads it ("//", "." and ".."
 *                        resolved), once the name exists (ENOENT, ENOTDIR
 *                        as stat answers); Galley's symbolic links are not
 *                        resolved there (px_link.c); glibc's own realpath
 *                        would walk the local disk, where the mapped names
 *                        are not
 *   readlink, readlinkat a Galley link's target (px_link.c), of a mapped
 *                        path or a galley: name, EINVAL for another name
 *                        that exists, as stat answers otherwise: tools that
 *                        resolve a path themselves (coreutils' realpath,
 *                        readlink -f) ask each component
 *   statvfs, statfs, fstatvfs, fstatfs (and the 64 forms)
 *                        the cluster's: bytes and free bytes summed over
 *                        the servers, the records as the file count, the
 *                        longest name (what `galley mount` reports too);
 *                        f_type PX_FS_MAGIC
 *
 * galley: names are not paths: realpath of one answers as glibc does.
 * Paths under a `galley mount` go to glibc unchanged (the mount serves
 * them).  Threads: any.
 */
#define _GNU_SOURCE
#include "px_internal.h"
#include "px_fsinfo.h"

#include <sys/statfs.h>
#include <sys/statvfs.h>

/* Is path a mapped local path (not galley:, not a mount's) with Galley
 * name *name? */
static bool px_mapped(const char *path, const char **name)
{
    *name = px_name(path);
    return *name && !px_from_mount &&
           strncmp(path, PX_PREFIX, PX_PREFIX_LEN) != 0;
}

PX_EXPORT char *realpath(const char *path, char *resolved)
{
    const char *name;
    if (!px_mapped(path, &name))
        return REAL(realpath)(path, resolved);
    struct stat st;
    if (px_stat_path(name, &st))
        return NULL;
    char buf[PATH_MAX + 1];
    const char *p = px_local_path(path, buf, sizeof(buf));
    size_t n = strlen(p);
    if (n >= PATH_MAX) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    char *out = resolved ? resolved : malloc(PATH_MAX);
    if (!out) {
        errno = ENOMEM;
        return NULL;
    }
    memcpy(out, p, n + 1);
    return out;
}

PX_EXPORT ssize_t readlink(const char *path, char *buf, size_t len)
{
    const char *name = px_name(path);
    if (!name || px_from_mount)
        return REAL(readlink)(path, buf, len);
    return px_readlink(name, buf, len);
}

PX_EXPORT ssize_t readlinkat(int dirfd, const char *path, char *buf, size_t len)
{
    const char *name = px_name_at(dirfd, path);
    if (!name || px_from_mount)
        return REAL(readlinkat)(dirfd, path, buf, len);
    return px_readlink(name, buf, len);
}

PX_EXPORT char *__realpath_chk(const char *path, char *resolved, size_t len)
{
    (void)len; /* glibc aborts when len < PATH_MAX; we never write more */
    return realpath(path, resolved);
}

PX_EXPORT char *canonicalize_file_name(const char *path)
{
    return realpath(path, NULL);
}

static int px_fill_statvfs(struct statvfs *sv)
{
    int rc = px_start();
    if (rc)
        return px_fail(rc);
    px_cluster_statvfs(sv);
    return 0;
}

static int px_fill_statfs(struct statfs *sf)
{
    struct statvfs sv;
    if (px_fill_statvfs(&sv))
        return -1;
    memset(sf, 0, sizeof(*sf));
    sf->f_type = PX_FS_MAGIC;
    sf->f_bsize = sf->f_frsize = (long)sv.f_bsize;
    sf->f_blocks = sv.f_blocks;
    sf->f_bfree = sv.f_bfree;
    sf->f_bavail = sv.f_bavail;
    sf->f_files = sv.f_files;
    sf->f_namelen = (long)sv.f_namemax;
    return 0;
}

/* The path's name must exist before the file system answers for it. */
static int px_exists(const char *name)
{
    struct stat st;
    return px_stat_path(name, &st);
}

PX_EXPORT int statvfs(const char *path, struct statvfs *sv)
{
    const char *name;
    if (!px_mapped(path, &name))
        return REAL(statvfs)(path, sv);
    return px_exists(name) ? -1 : px_fill_statvfs(sv);
}

PX_EXPORT int statvfs64(const char *path, struct statvfs64 *sv)
{
    return statvfs(path, (struct statvfs *)sv);
}

PX_EXPORT int statfs(const char *path, struct statfs *sf)
{
    const char *name;
    if (!px_mapped(path, &name))
        return REAL(statfs)(path, sf);
    return px_exists(name) ? -1 : px_fill_statfs(sf);
}

PX_EXPORT int statfs64(const char *path, struct statfs64 *sf)
{
    return statfs(path, (struct statfs *)sf);
}

PX_EXPORT int fstatvfs(int fd, struct statvfs *sv)
{
    if (!px_fds_has(fd))
        return REAL(fstatvfs)(fd, sv);
    return px_fill_statvfs(sv);
}

PX_EXPORT int fstatvfs64(int fd, struct statvfs64 *sv)
{
    return fstatvfs(fd, (struct statvfs *)sv);
}

PX_EXPORT int fstatfs(int fd, struct statfs *sf)
{
    if (!px_fds_has(fd))
        return REAL(fstatfs)(fd, sf);
    return px_fill_statfs(sf);
}

PX_EXPORT int fstatfs64(int fd, struct statfs64 *sf)
{
    return fstatfs(fd, (struct statfs *)sf);
}
