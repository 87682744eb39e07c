/*
 * local_create.c -- creating a file of the locality layout
 * (gfs_create_layout) and applying a template's placement to it.
 *
 * Layering: this is the one file of the layout above striped.c (a
 * template is opened as a striped file, and so is the new file to copy
 * its maps into); local_layout.c and local_io.c are below it, called by
 * striped.c.  See local_layout.c for the layout itself.
 *
 * Threads: any (each call works on files it opened itself).
 */
#include "internal.h"
#include "local_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copy template t's placement into the new local file `name` (created
 * with the same servers and block size by the caller). */
static int apply_template(const char *name, gc_local *t)
{
    int sid = gc_striped_open(name);
    if (sid < 0)
        return sid;
    gc_local *l;
    int rc = gc_striped_local(sid, &l);
    if (!rc && !l)
        rc = GFS_ELAYOUT;
    uint8_t *buf = rc ? NULL : malloc(READ_CHUNK);
    if (!rc && !buf)
        rc = -ENOMEM;
    for (int s = 0; !rc && s < t->nsub; s++) {
        int64_t slots = gc_local_slot_add(t, s, SLOTS_KEY, 0);
        if (slots < 0) {
            rc = (int)slots;
            break;
        }
        for (int64_t off = 0; off < slots * SLOT_BYTES && !rc;
             off += READ_CHUNK) {
            int64_t got =
                gc_fork_rw(t->mkids[s], GFS_READ, off, buf, READ_CHUNK);
            if (got < 0) {
                rc = (int)got;
                break;
            }
            for (int64_t k = 0; k + SLOT_BYTES <= got; k += SLOT_BYTES)
                put_le64(buf + k + 8, 0); /* placed, nothing written */
            if (got > 0) {
                int64_t wr = gc_fork_rw(l->mkids[s], GFS_WRITE, off, buf, got);
                if (wr < 0)
                    rc = (int)wr;
            }
            if (got < READ_CHUNK)
                break;
        }
        if (!rc && slots > 0) {
            int64_t old = gc_local_slot_add(l, s, SLOTS_KEY, slots);
            if (old < 0)
                rc = (int)old;
        }
    }
    free(buf);
    gc_striped_close(sid);
    return rc;
}

int gfs_create_layout(const char *name, int nsubfiles, const int *servers,
                      int64_t unit, const char *fork, const char *layout)
{
    if (!layout || !*layout || strcmp(layout, "striped") == 0)
        return gc_create_striped(name, nsubfiles, servers, unit, fork, 1,
                                 GFS_DEFAULT_MODE, NULL);
    int tsid = -1, rc = 0;
    gc_local *t = NULL;
    if (strncmp(layout, "template:", 9) == 0) {
        tsid = gc_striped_open(layout + 9);
        if (tsid < 0)
            return tsid;
        rc = gc_striped_local(tsid, &t);
        if (!rc && !t)
            rc = GFS_ELAYOUT; /* the template is not a local file */
        if (rc)
            goto out_close;
        nsubfiles = t->nsub;
        servers = t->servers;
        unit = (int64_t)t->bsize;
        if (!fork)
            fork = t->fork;
    } else if (strcmp(layout, "local") != 0) {
        return -EINVAL;
    }
    if (!fork)
        fork = GFS_DEFAULT_STRIPE_FORK;
    if (unit <= 0)
        unit = GFS_DEFAULT_STRIPE_UNIT;
    char mapfork[GFS_FORK_NAME_MAX + 1];
    rc = gc_check_name(fork, GFS_FORK_NAME_MAX);
    if (!rc && snprintf(mapfork, sizeof(mapfork), "%s" MAP_SUFFIX, fork) >=
                   (int)sizeof(mapfork))
        rc = -ENAMETOOLONG;
    if (!rc && (strchr(fork, '\n') || unit > (INT64_C(1) << 40)))
        rc = -EINVAL;
    if (rc)
        goto out_close;
    char attrs[512];
    snprintf(attrs, sizeof(attrs),
             "galley.stripe_unit=%" PRId64 "\ngalley.stripe_fork=%s\n"
             "galley.layout=local\n",
             unit, fork);
    rc = gc_create_file(name, nsubfiles, servers, attrs, 1);
    if (rc)
        goto out_close;
    int fid = gc_file_open(name);
    if (fid < 0) {
        rc = fid;
        goto out_delete;
    }
    rc = gc_all_create(fid, fork);
    if (!rc)
        rc = gc_all_create(fid, mapfork);
    gc_file_close(fid);
    if (!rc && t)
        rc = apply_template(name, t);
    if (!rc)
        goto out_close;
out_delete:
    gc_file_delete(name);
out_close:
    if (tsid >= 0)
        gc_striped_close(tsid);
    return rc;
}

int gfs_striped_local_stat(int sid, gfs_local_stat *st)
{
    gc_local *l;
    int rc = gc_striped_local(sid, &l);
    if (rc)
        return rc;
    if (!l)
        return -EINVAL; /* open, but striped */
    return st ? gc_local_stat(l, st) : 0;
}
