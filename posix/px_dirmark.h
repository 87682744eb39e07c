/*
 * px_dirmark.h -- directories made with mkdir, shared by libgalley-posix.so
 * and galley-fuse: one model of a directory for `galley exec` and
 * `galley mount` (docs/posix.md).
 *
 * Galley has no directories.  A directory exists while some Galley name
 * lies under it ("DIR/..."): a file's, or the marker of the directory or
 * of one below it.  The marker of DIR is the name "DIR/", a striped file
 * of one subfile whose last component is empty, so no directory listing
 * shows it; it keeps a directory made with mkdir while it is empty, on
 * the servers, for every process and every mount.
 */
#ifndef PX_DIRMARK_H
#define PX_DIRMARK_H

#include <stdint.h>
#include <time.h>

#include "galley.h"

/* The marker of directory `name` in buf (PX_MARKER_BUF bytes): "name/";
 * NULL if that is over GFS_NAME_MAX (a directory made with mkdir has at
 * most GFS_NAME_MAX - 1 bytes). */
#define PX_MARKER_BUF (GFS_NAME_MAX + 2)
const char *px_dir_marker(const char *name, char *buf);

/* What lies under directory `name`: */
enum {
    PX_DIR_NONE = 0,   /* nothing: no such directory */
    PX_DIR_MARKED = 1, /* its marker alone: an empty directory */
    PX_DIR_FULL = 2,   /* a file or another directory's marker */
};
/* PX_DIR_* or a negative gfs error (one listing). */
int px_dir_holds(const char *name);

/* mkdir: create the marker of `name` (which the caller found absent),
 * keeping the directory's permission bits and owner (-1: none, shown as
 * the caller's) in it (its GFS_NODE_ATTR says "d"); 0, -ENAMETOOLONG, or
 * a negative gfs error (-EEXIST if it was made meanwhile).  The client
 * must be started. */
#define PX_DIR_PERM 0755 /* of a directory whose marker keeps none */
int px_dir_make(const char *name, unsigned mode, int64_t uid, int64_t gid);

/* A directory's mode (S_IFDIR and its bits), owner (-1: none kept) and
 * times (0: none kept: the marker's modification time is when it was
 * made, its change time the last chmod or chown), from its marker's
 * record, in *st: 1, 0 when it has no marker (PX_DIR_PERM, no owner, no
 * times), or a negative gfs error.  A marker made before markers kept
 * modes (no GFS_NODE_ATTR) shows PX_DIR_PERM. */
int px_dir_attrs(const char *name, gfs_striped_info *st);

/* chmod / chown of directory `name` (mode: -1 keeps it; uid, gid: -1
 * keep them): in its marker, made first when it has none. */
int px_dir_setattr(const char *name, int mode, int64_t uid, int64_t gid);

/* utimensat of directory `name` (ns; -1 keeps one): in its marker, made
 * first when it has none (gfs_set_times). */
int px_dir_settimes(const char *name, int64_t atime_ns, int64_t mtime_ns);

/* The access and modification times utimensat's times ask for (NULL or
 * UTIME_NOW: now): ns since the epoch, -1 for UTIME_OMIT; -EINVAL for a
 * bad one. */
int px_times_wanted(const struct timespec *times, int64_t out[2]);

/* rmdir: delete the marker of `name` if nothing else lies under it; 0,
 * -ENOTEMPTY, -ENOENT (no marker and nothing under it), or a negative gfs
 * error. */
int px_dir_remove(const char *name);

#endif
