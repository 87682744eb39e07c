/*
 * px_link.c -- symbolic links among Galley names in libgalley-posix.so
 * (see galley_posix.c).  symlink and symlinkat make one (gfs_create_node:
 * the target kept in the name's record), readlink reads it, and the calls
 * that follow a link (open, stat, access, chmod, truncate, opendir)
 * follow it here, as the kernel does for a path's last component, at
 * most PX_MAX_LINKS times (then ELOOP): a relative target is read against
 * the link's own Galley directory, an absolute one as a path (a Galley
 * name when it is one of ours, else a local file, which libc then
 * serves).  A link among a path's other components is not followed:
 * names below it answer ENOENT.
 *
 * Threads: any.
 */
#define _GNU_SOURCE
#include "px_internal.h"

#define PX_MAX_LINKS 40

int px_follow(const char *name, char *out, size_t len)
{
    char cur[GFS_NAME_MAX + 1];
    snprintf(cur, sizeof(cur), "%s", name);
    bool dir_only = px_dir_only, from_mount = px_from_mount;
    int rc = -ELOOP;
    for (int hop = 0; hop <= PX_MAX_LINKS; hop++) {
        char t[GFS_LINK_MAX + 1];
        int n = gfs_readlink(cur, t, GFS_LINK_MAX);
        if (n == -EINVAL || n == -ENOENT) { /* not a link, or nothing */
            rc = strlen(cur) < len ? 0 : -ENAMETOOLONG;
            if (!rc)
                strcpy(out, cur);
            break;
        }
        if (n < 0 || hop == PX_MAX_LINKS) {
            rc = n < 0 ? n : -ELOOP;
            break;
        }
        t[n] = '\0';
        char path[PATH_MAX + GFS_NAME_MAX + 16];
        const char *slash = strrchr(cur, '/');
        int dl = slash ? (int)(slash - cur) : 0;
        if (t[0] == '/')
            snprintf(path, sizeof(path), "%s", t);
        else
            snprintf(path, sizeof(path), PX_PREFIX "%.*s/%s", dl, cur, t);
        const char *g = px_name(path);
        if (!g) { /* a local file */
            rc = strlen(path) < len ? 1 : -ENAMETOOLONG;
            if (rc == 1)
                strcpy(out, path);
            break;
        }
        snprintf(cur, sizeof(cur), "%s", g);
    }
    px_dir_only = dir_only; /* (the caller's path's, as px_name left them) */
    px_from_mount = from_mount;
    return rc;
}

int px_stat_follow(const char *name, struct stat *st)
{
    int rc = px_stat_path(name, st);
    if (rc || !S_ISLNK(st->st_mode))
        return rc;
    char to[PATH_MAX + 1];
    int k = px_follow(name, to, sizeof(to));
    if (k < 0)
        return px_fail(k);
    return k == 1 ? REAL(stat)(to, st) : px_stat_path(to, st);
}

static int px_symlink(const char *target, const char *name)
{
    int rc = px_start();
    if (rc)
        return px_fail(rc);
    if (!*target)
        return px_fail(-ENOENT);
    struct stat st;
    rc = *name ? px_stat_name(name, &st) : -EEXIST; /* (the root) */
    if (rc == 0)
        rc = -EEXIST;
    else if (rc == -ENOENT) /* (the caller's, as a file it makes) */
        rc = gfs_create_node(name, 1, NULL, 0, NULL,
                             &(gfs_node){.mode = S_IFLNK | 0777,
                                         .uid = geteuid(),
                                         .gid = getegid(),
                                         .link = target});
    return rc ? px_fail(rc) : 0;
}

PX_EXPORT int symlink(const char *target, const char *path)
{
    const char *name = px_name(path);
    return name ? px_symlink(target, name) : REAL(symlink)(target, path);
}

PX_EXPORT int symlinkat(const char *target, int dirfd, const char *path)
{
    const char *name = px_name_at(dirfd, path);
    return name ? px_symlink(target, name)
                : REAL(symlinkat)(target, dirfd, path);
}

ssize_t px_readlink(const char *name, char *buf, size_t len)
{
    struct stat st;
    if (px_stat_path(name, &st))
        return -1;
    int n = S_ISLNK(st.st_mode) ? gfs_readlink(name, buf, len) : -EINVAL;
    return n < 0 ? px_fail(n) : n;
}
