/*
 * px_dirmark.c -- directories made with mkdir, kept by their markers
 * (px_dirmark.h): the naming and emptiness rules libgalley-posix.so and
 * galley-fuse share.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

#include "galley.h"
#include "px_dirmark.h"

const char *px_dir_marker(const char *name, char *buf)
{
    size_t n = strlen(name);
    if (n == 0 || n + 1 > GFS_NAME_MAX)
        return NULL;
    memcpy(buf, name, n);
    buf[n] = '/';
    buf[n + 1] = '\0';
    return buf;
}

typedef struct holds {
    const char *marker;
    int what;
} holds;

/* Names come sorted: the marker "DIR/" before every other "DIR/..." name,
 * so at most two are looked at. */
static int holds_cb(const char *name, void *arg)
{
    holds *h = arg;
    if (strcmp(name, h->marker) == 0) {
        h->what = PX_DIR_MARKED;
        return 0;
    }
    h->what = PX_DIR_FULL;
    return 1;
}

int px_dir_holds(const char *name)
{
    char mbuf[PX_MARKER_BUF];
    holds h = {px_dir_marker(name, mbuf), PX_DIR_NONE};
    if (!h.marker) /* nothing fits under a name that long */
        return PX_DIR_NONE;
    int rc = gfs_list_files(h.marker, holds_cb, &h);
    return rc < 0 ? rc : h.what;
}

int px_dir_make(const char *name, unsigned mode, int64_t uid, int64_t gid)
{
    char mbuf[PX_MARKER_BUF];
    const char *marker = px_dir_marker(name, mbuf);
    if (!marker)
        return -ENAMETOOLONG;
    return gfs_create_node(
        marker, 1, NULL, 0, NULL,
        &(gfs_node){.mode = S_IFDIR | (mode & 07777), .uid = uid, .gid = gid});
}

/* px_dir_attrs; 2 for a marker that keeps them, 1 for one that does not
 * (made before markers kept modes). */
static int marker_attrs(const char *name, gfs_striped_info *st)
{
    char mbuf[PX_MARKER_BUF];
    const char *marker = px_dir_marker(name, mbuf);
    int rc = marker ? gfs_stat_record(marker, st) : -ENOENT;
    if (rc < 0 || !S_ISDIR(st->mode))
        *st = (gfs_striped_info){
            .mode = S_IFDIR | PX_DIR_PERM, .uid = -1, .gid = -1};
    if (rc == -ENOENT)
        return 0;
    return rc < 0 ? rc : S_ISDIR(st->mode) ? 2 : 1;
}

int px_dir_attrs(const char *name, gfs_striped_info *st)
{
    int rc = marker_attrs(name, st);
    return rc > 0 ? 1 : rc;
}

int px_dir_setattr(const char *name, int mode, int64_t uid, int64_t gid)
{
    char mbuf[PX_MARKER_BUF];
    const char *marker = px_dir_marker(name, mbuf);
    gfs_striped_info st;
    int rc = marker ? marker_attrs(name, &st) : -ENAMETOOLONG;
    if (rc < 0)
        return rc;
    if (rc == 2)
        return mode >= 0 ? gfs_chmod(marker, (unsigned)mode & 07777)
                         : gfs_chown(marker, uid, gid);
    /* no marker, or one that keeps no mode: (re)made with them */
    unsigned m = mode >= 0 ? (unsigned)mode & 07777 : st.mode & 07777;
    int64_t u = uid != -1 ? uid : st.uid;
    int64_t g = gid != -1 ? gid : st.gid;
    if (rc == 1) {
        rc = gfs_delete_file(marker);
        if (rc && rc != -ENOENT)
            return rc;
    }
    return px_dir_make(name, m, u, g);
}

int px_dir_remove(const char *name)
{
    char mbuf[PX_MARKER_BUF];
    int rc = px_dir_holds(name);
    if (rc < 0)
        return rc;
    if (rc == PX_DIR_FULL)
        return -ENOTEMPTY;
    if (rc == PX_DIR_NONE)
        return -ENOENT;
    return gfs_delete_file(px_dir_marker(name, mbuf));
}

int px_dir_settimes(const char *name, int64_t atime_ns, int64_t mtime_ns)
{
    char mbuf[PX_MARKER_BUF];
    const char *marker = px_dir_marker(name, mbuf);
    gfs_striped_info st;
    int rc = marker ? marker_attrs(name, &st) : -ENAMETOOLONG;
    if (rc >= 0 && rc != 2) /* (made, or made again, with what it shows) */
        rc = px_dir_setattr(name, -1, -1, -1);
    return rc < 0 ? rc : gfs_set_times(marker, atime_ns, mtime_ns);
}

int px_times_wanted(const struct timespec *times, int64_t out[2])
{
    for (int i = 0; i < 2; i++) {
        struct timespec t;
        if (times && times[i].tv_nsec == UTIME_OMIT) {
            out[i] = -1;
            continue;
        }
        if (!times || times[i].tv_nsec == UTIME_NOW)
            clock_gettime(CLOCK_REALTIME, &t);
        else
            t = times[i];
        if (t.tv_nsec < 0 || t.tv_nsec >= 1000000000 || t.tv_sec < 0)
            return -EINVAL;
        out[i] = (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
    }
    return 0;
}
