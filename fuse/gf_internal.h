/*
 * gf_internal.h -- shared by galley-fuse's files: galley_fuse.c (setup,
 * file data, locks) and gf_dir.c (what a path is, directories, names).
 */
#ifndef GF_INTERNAL_H
#define GF_INTERNAL_H

#define FUSE_USE_VERSION 31
#include <fuse.h>
#include <stdint.h>

#include "galley.h"

/* gfs error -> negative errno for FUSE. */
int gf_err(int64_t rc);

/* ------------------------------------------------------------------------
 * What a path is (gf_dir.c)
 * ------------------------------------------------------------------------ */

enum kind { K_NONE, K_ROOT, K_FILE, K_DIR, K_PLAIN, K_SUBFILE, K_FORK };

typedef struct what {
    enum kind kind;
    int64_t size;
    int64_t unit;
    int64_t mtime;    /* K_FILE, K_DIR: modification time (ns), or 0 */
    int64_t ctime;    /* K_FILE, K_DIR: change time (ns), or 0 */
    int64_t atime;    /* K_FILE, K_DIR: access time set (ns), or 0 */
    unsigned mode;    /* K_FILE, K_DIR: type (S_IFREG, S_IFLNK, a special
                       * file's, S_IFDIR) and permission bits */
    int64_t uid, gid; /* K_FILE, K_DIR: the owner kept, -1: none */
    uint64_t rdev;    /* a device's number */
    char file[GFS_NAME_MAX + 1]; /* plain file of a subfile or fork */
    int subfile;
    char fork[GFS_FORK_NAME_MAX + 1];
} what;

/* Fill w for path p: 0, -ENOENT, -ENAMETOOLONG (a component over
 * NAME_MAX, or a path over GFS_NAME_MAX outside a plain file's view), or
 * another negative errno. */
int gf_classify(const char *p, what *w);

/* The operations on names (gf_dir.c). */
int gf_readdir(const char *p, void *buf, fuse_fill_dir_t fill, off_t off,
               struct fuse_file_info *fi, enum fuse_readdir_flags flags);
int gf_unlink(const char *p);
int gf_mkdir(const char *p, mode_t mode);
int gf_rmdir(const char *p);
int gf_rename(const char *from, const char *to, unsigned flags);

#endif
