/*
 * px_fsinfo.h -- what statvfs says of a cluster, shared by
 * libgalley-posix.so (statvfs of a mapped path) and galley-fuse (statfs of
 * a mount), so `df` shows the same figures both ways; how both answer
 * F_GETLK; and whom a file's permission bits let in.
 */
#ifndef PX_FSINFO_H
#define PX_FSINFO_H

#include <fcntl.h>
#include <sys/statvfs.h>

#include "galley.h"

/* f_type / f_fsid of Galley: "GALY". */
#define PX_FS_MAGIC 0x47414c59

/* Bytes and free bytes summed over the servers that answer, their records
 * as the file count, GFS_NAME_MAX as the name limit, 4 KiB blocks.  The
 * client must be started. */
void px_cluster_statvfs(struct statvfs *sv);

/* F_GETLK on striped file sid: test lk (owner, type, range, pid set);
 * fl becomes the lock that conflicts (SEEK_SET, its range and pid), or
 * l_type F_UNLCK when none does.  0 or a gfs error. */
int px_plock_getlk(int sid, gfs_plock *lk, struct flock *fl);

/* 0 or -EACCES: may this process reach a file of this mode (permission
 * bits, S_IFDIR for a directory) and owner (-1: none kept, the file is
 * its reader's) for access()'s amode (R_OK, W_OK, X_OK)?  The bits of the
 * class the process is in decide (owner, group, other); root may do
 * anything but execute a file with no x bit. */
int px_mode_permits(unsigned mode, int64_t uid, int64_t gid, int amode);

#endif
