/*
 * px_rename.c -- rename of a striped file for the preload library and the
 * mount daemon.  Galley has no rename: the bytes are copied to a new file
 * with the same servers, stripe unit, fork, mode, owner and modification
 * time, then the old name is deleted.  Not atomic: a reader may see both
 * names, or (after a failure half way) the new one is removed again and
 * the old one stays.
 *
 * Threads: any (uses only the thread-safe public client API).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "galley.h"
#include "px_rename.h"

/* A name with no bytes of its own moves as what its record says: a
 * symbolic link its target, a special file or a directory's marker its
 * type, mode and owner. */
static int px_rename_node(const char *from, const char *to,
                          const gfs_node *node)
{
    if (strcmp(from, to) == 0)
        return 0;
    int rc = gfs_delete_file(to);
    if (rc && rc != -ENOENT)
        return rc;
    rc = gfs_create_node(to, 1, NULL, 0, NULL, node);
    return rc ? rc : gfs_delete_file(from);
}

int px_rename_file(const char *from, const char *to)
{
    int rc;
    gfs_striped_info info;
    rc = gfs_striped_stat_all(from, &info);
    if (rc)
        return rc;
    gfs_node node = {
        .mode = info.mode, .uid = info.uid, .gid = info.gid, .rdev = info.rdev};
    char target[GFS_LINK_MAX + 1];
    if (S_ISLNK(info.mode)) {
        int n = gfs_readlink(from, target, GFS_LINK_MAX);
        if (n < 0)
            return n;
        target[n] = '\0';
        node.link = target;
    }
    if (!S_ISREG(info.mode))
        return px_rename_node(from, to, &node);
    int src = gfs_striped_open(from);
    if (src < 0)
        return src;
    if (strcmp(from, to) == 0) { /* POSIX: nothing to do */
        gfs_striped_close(src);
        return 0;
    }
    gfs_layout lay;
    gfs_file_stat fst;
    unsigned mode;
    int64_t size, mtime;
    rc = gfs_striped_size_mtime(src, &size, &mtime);
    if (!rc)
        rc = gfs_striped_layout(src, &lay);
    if (!rc)
        rc = gfs_striped_mode(src, &mode);
    mode &= 07777;
    if (!rc) {
        int fid = gfs_open_file(from);
        rc = fid < 0 ? fid : gfs_stat_file(fid, &fst);
        if (fid >= 0)
            gfs_close_file(fid);
    }
    if (rc)
        goto out_close_src;
    rc = gfs_delete_file(to);
    if (rc && rc != -ENOENT)
        goto out_close_src;
    node.mode = S_IFREG | mode;
    rc = gfs_create_node(to, fst.nsubfiles, fst.servers, lay.unit, lay.fork,
                         &node);
    if (rc)
        goto out_close_src;
    int dst = gfs_striped_open(to);
    if (dst < 0) {
        rc = dst;
        goto out_delete_dst;
    }
    size_t chunk = 8u << 20;
    char *buf = malloc(chunk);
    rc = buf ? 0 : -ENOMEM;
    for (int64_t off = 0; !rc && off < size; off += (int64_t)chunk) {
        int64_t n = size - off < (int64_t)chunk ? size - off : (int64_t)chunk;
        int64_t k = gfs_striped_read(src, off, buf, n);
        if (k >= 0)
            k = gfs_striped_write(dst, off, buf, n);
        if (k < 0)
            rc = (int)k;
    }
    free(buf);
    if (!rc)
        rc = gfs_striped_truncate(dst, size);
    gfs_striped_close(dst);
    if (!rc && (mtime > 0 || info.atime_ns > 0)) /* a rename keeps them */
        rc = gfs_set_times(to, info.atime_ns > 0 ? info.atime_ns : -1,
                           mtime > 0 ? mtime : -1);
    if (rc)
        goto out_delete_dst;
    gfs_striped_close(src);
    return gfs_delete_file(from);
out_delete_dst:
    gfs_delete_file(to);
out_close_src:
    gfs_striped_close(src);
    return rc;
}
