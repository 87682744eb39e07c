/*
 * px_rename.h -- shared by libgalley-posix.so and galley-fuse.
 */
#ifndef PX_RENAME_H
#define PX_RENAME_H

/* Rename striped file `from` to `to` (replacing `to` if it exists): copy,
 * then delete `from`.  The client must be started.  Returns 0 or a
 * negative gfs error (-ENOENT when `from` is missing). */
int px_rename_file(const char *from, const char *to);

#endif
