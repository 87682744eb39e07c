/*
 * px_dirmark.c -- directories made with mkdir, kept by their markers
 * (px_dirmark.h): the naming and emptiness rules libgalley-posix.so and
 * galley-fuse share.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

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

int px_dir_make(const char *name)
{
    char mbuf[PX_MARKER_BUF];
    const char *marker = px_dir_marker(name, mbuf);
    if (!marker)
        return -ENAMETOOLONG;
    return gfs_create_striped(marker, 1, NULL, 0, NULL);
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
