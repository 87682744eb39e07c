/*
 * px_internal.h -- what the files of libgalley-posix.so share (see
 * galley_posix.c for how the library works).  Private to posix/; every
 * symbol declared here is hidden, only the interposed calls (PX_EXPORT)
 * leave the library.
 *
 *   galley_posix.c  the next definitions (real_*), the descriptor table,
 *                   starting the client, gfs error -> errno
 *   px_path.c       which paths are ours: "galley:" names and mapped
 *                   directories (GALLEY_POSIX_MOUNTS, galley mounts)
 *   px_open.c       open family, close, dup family, fcntl
 *   px_lock.c       locks: fcntl F_SETLK/F_GETLK/F_OFD_*, lockf, flock
 *   px_data.c       read/write family, lseek, truncate, sync, POSIX AIO
 *   px_copy.c       copy_file_range, sendfile, splice, fallocate
 *   px_sys.c        syscall() and ioctl on Galley descriptors
 *   px_names.c      stat family, access, unlink, rename, xattr
 *   px_attr.c       modes (chmod family, umask); chown/utime: accepted
 *   px_link.c       symbolic links: symlink, readlink, following one
 *   px_dir.c        directories: opendir/readdir/fdopendir, mkdir, rmdir
 *   px_stdio.c      fopen/fdopen/fileno over fopencookie; stdin/stdout/
 *                   stderr over a Galley file at descriptor 0-2
 *   px_inherit.c    the placeholder descriptor; descriptors inherited
 *                   across exec; the offset of a write-only file
 *   px_mmap.c       mmap of a Galley file: memory filled from it, a
 *                   shared map's stores written back (msync, munmap)
 */
#ifndef PX_INTERNAL_H
#define PX_INTERNAL_H

#include <aio.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include "galley.h"
#include "gconfig.h"
#include "px_dirmark.h"
#include "px_fsinfo.h"

#define PX_PREFIX "galley:"
#define PX_PREFIX_LEN 7
#define PX_NFD 65536 /* descriptors we can track */
#define PX_DEV 0x67616cULL

#define PX_EXPORT __attribute__((visibility("default")))

#pragma GCC visibility push(hidden)

/* ------------------------------------------------------------------------
 * The next definitions of what we interpose (galley_posix.c)
 * ------------------------------------------------------------------------ */

#define PX_REAL_TABLE(X)                                                       \
    X(open, int, (const char *, int, ...))                                     \
    X(openat, int, (int, const char *, int, ...))                              \
    X(close, int, (int))                                                       \
    X(read, ssize_t, (int, void *, size_t))                                    \
    X(write, ssize_t, (int, const void *, size_t))                             \
    X(pread, ssize_t, (int, void *, size_t, off_t))                            \
    X(pwrite, ssize_t, (int, const void *, size_t, off_t))                     \
    X(readv, ssize_t, (int, const struct iovec *, int))                        \
    X(writev, ssize_t, (int, const struct iovec *, int))                       \
    X(lseek, off_t, (int, off_t, int))                                         \
    X(fstat, int, (int, struct stat *))                                        \
    X(stat, int, (const char *, struct stat *))                                \
    X(lstat, int, (const char *, struct stat *))                               \
    X(fstatat, int, (int, const char *, struct stat *, int))                   \
    X(statx, int, (int, const char *, int, unsigned, struct statx *))          \
    X(__fxstat, int, (int, int, struct stat *))                                \
    X(__xstat, int, (int, const char *, struct stat *))                        \
    X(__lxstat, int, (int, const char *, struct stat *))                       \
    X(__fxstatat, int, (int, int, const char *, struct stat *, int))           \
    X(access, int, (const char *, int))                                        \
    X(faccessat, int, (int, const char *, int, int))                           \
    X(unlink, int, (const char *))                                             \
    X(unlinkat, int, (int, const char *, int))                                 \
    X(remove, int, (const char *))                                             \
    X(rename, int, (const char *, const char *))                               \
    X(renameat, int, (int, const char *, int, const char *))                   \
    X(renameat2, int, (int, const char *, int, const char *, unsigned))        \
    X(getxattr, ssize_t, (const char *, const char *, void *, size_t))         \
    X(lgetxattr, ssize_t, (const char *, const char *, void *, size_t))        \
    X(listxattr, ssize_t, (const char *, char *, size_t))                      \
    X(llistxattr, ssize_t, (const char *, char *, size_t))                     \
    X(ftruncate, int, (int, off_t))                                            \
    X(truncate, int, (const char *, off_t))                                    \
    X(fsync, int, (int))                                                       \
    X(fdatasync, int, (int))                                                   \
    X(dup, int, (int))                                                         \
    X(dup2, int, (int, int))                                                   \
    X(dup3, int, (int, int, int))                                              \
    X(fcntl, int, (int, int, ...))                                             \
    X(flock, int, (int, int))                                                  \
    X(lockf, int, (int, int, off_t))                                           \
    X(aio_read, int, (struct aiocb *))                                         \
    X(aio_write, int, (struct aiocb *))                                        \
    X(aio_fsync, int, (int, struct aiocb *))                                   \
    X(aio_cancel, int, (int, struct aiocb *))                                  \
    X(copy_file_range, ssize_t,                                                \
      (int, off64_t *, int, off64_t *, size_t, unsigned))                      \
    X(sendfile, ssize_t, (int, int, off_t *, size_t))                          \
    X(preadv, ssize_t, (int, const struct iovec *, int, off_t))                \
    X(pwritev, ssize_t, (int, const struct iovec *, int, off_t))               \
    X(preadv2, ssize_t, (int, const struct iovec *, int, off_t, int))          \
    X(pwritev2, ssize_t, (int, const struct iovec *, int, off_t, int))         \
    X(sync_file_range, int, (int, off64_t, off64_t, unsigned))                 \
    X(syncfs, int, (int))                                                      \
    X(readahead, ssize_t, (int, off64_t, size_t))                              \
    X(posix_fadvise, int, (int, off_t, off_t, int))                            \
    X(lio_listio, int, (int, struct aiocb *const[], int, struct sigevent *))   \
    X(splice, ssize_t, (int, off64_t *, int, off64_t *, size_t, unsigned))     \
    X(tee, ssize_t, (int, int, size_t, unsigned))                              \
    X(fallocate, int, (int, int, off_t, off_t))                                \
    X(posix_fallocate, int, (int, off_t, off_t))                               \
    X(syscall, long, (long, ...))                                              \
    X(ioctl, int, (int, unsigned long, ...))                                   \
    X(fopen, FILE *, (const char *, const char *))                             \
    X(fdopen, FILE *, (int, const char *))                                     \
    X(fileno, int, (FILE *))                                                   \
    X(opendir, DIR *, (const char *))                                          \
    X(readdir, struct dirent *, (DIR *))                                       \
    X(readdir64, struct dirent64 *, (DIR *))                                   \
    X(closedir, int, (DIR *))                                                  \
    X(dirfd, int, (DIR *))                                                     \
    X(rewinddir, void, (DIR *))                                                \
    X(fdopendir, DIR *, (int))                                                 \
    X(mkdir, int, (const char *, mode_t))                                      \
    X(mkdirat, int, (int, const char *, mode_t))                               \
    X(rmdir, int, (const char *))                                              \
    X(umask, mode_t, (mode_t))                                                 \
    X(symlink, int, (const char *, const char *))                              \
    X(symlinkat, int, (const char *, int, const char *))                       \
    X(chmod, int, (const char *, mode_t))                                      \
    X(fchmod, int, (int, mode_t))                                              \
    X(fchmodat, int, (int, const char *, mode_t, int))                         \
    X(chown, int, (const char *, uid_t, gid_t))                                \
    X(lchown, int, (const char *, uid_t, gid_t))                               \
    X(fchown, int, (int, uid_t, gid_t))                                        \
    X(fchownat, int, (int, const char *, uid_t, gid_t, int))                   \
    X(utimensat, int, (int, const char *, const struct timespec *, int))       \
    X(futimens, int, (int, const struct timespec *))                           \
    X(utimes, int, (const char *, const struct timeval *))                     \
    X(utime, int, (const char *, const struct utimbuf *))                      \
    X(fgetxattr, ssize_t, (int, const char *, void *, size_t))                 \
    X(flistxattr, ssize_t, (int, char *, size_t))                              \
    X(setxattr, int, (const char *, const char *, const void *, size_t, int))  \
    X(lsetxattr, int, (const char *, const char *, const void *, size_t, int)) \
    X(fsetxattr, int, (int, const char *, const void *, size_t, int))          \
    X(realpath, char *, (const char *, char *))                                \
    X(readlink, ssize_t, (const char *, char *, size_t))                       \
    X(readlinkat, ssize_t, (int, const char *, char *, size_t))                \
    X(statvfs, int, (const char *, struct statvfs *))                          \
    X(statfs, int, (const char *, struct statfs *))                            \
    X(fstatvfs, int, (int, struct statvfs *))                                  \
    X(fstatfs, int, (int, struct statfs *))                                    \
    X(mmap, void *, (void *, size_t, int, int, int, off_t))                    \
    X(munmap, int, (void *, size_t))                                           \
    X(msync, int, (void *, size_t, int))                                       \
    X(mremap, void *, (void *, size_t, size_t, int, ...))

#define PX_X_PTR(name, ret, args) extern ret(*real_##name) args;
PX_REAL_TABLE(PX_X_PTR)
#undef PX_X_PTR

extern pthread_once_t px_resolve_once;
void px_resolve(void);

/* Every wrapper calls this before using a real_* pointer (a constructor of
 * another library may call us before ours runs). */
#define REAL(name) (pthread_once(&px_resolve_once, px_resolve), real_##name)

/* A wrapper whose libc has no such symbol (e.g. __fxstat on a newer glibc)
 * is never called through it; guard anyway. */
#define HAVE_REAL(name) (REAL(name) != NULL)

/* ------------------------------------------------------------------------
 * Descriptor table and client (galley_posix.c)
 * ------------------------------------------------------------------------ */

typedef struct px_file {
    int refs;     /* descriptors pointing here + calls in progress (px_lock) */
    int sid;      /* -1 until px_sid opens it, and for a directory */
    int flags;    /* O_ACCMODE bits and O_APPEND */
    int64_t off;  /* the file offset (px_off) */
    bool off_end; /* write-only, inherited across exec or held at a
                   * fork: off is the file's size at its next use
                   * (px_off, px_inherit.c; atomic) */
    uint64_t ino;
    uint64_t owner;       /* lock owner of this open file description */
    bool ofd_locked;      /* has taken OFD or flock locks (atomic) */
    bool dir;             /* a directory (sid -1): for the *at calls */
    pthread_mutex_t lock; /* guards off */
    char name[GFS_NAME_MAX + 1];
} px_file;

extern px_file *px_fds[PX_NFD];

/* Is fd ours right now?  (A hint without a reference: px_get for use.) */
static inline bool px_fds_has(int fd)
{
    return fd >= 0 && fd < PX_NFD &&
           __atomic_load_n(&px_fds[fd], __ATOMIC_ACQUIRE) != NULL;
}

/* The descriptor number a Galley file (name) or directory (NULL) holds:
 * an O_PATH descriptor, on which every data call the kernel sees (one
 * this library does not serve) fails with EBADF instead of moving
 * nothing; a file's names it to a program after exec (px_inherit.c). */
int px_placeholder(const char *name, int flags);
/* The rest of a new px_file whose name is set: its lock owner, inode
 * number and lock (px_open.c). */
void px_file_init(px_file *f);

/* stdin, stdout, stderr over a Galley file at descriptor 0-2 (px_stdio.c):
 * swapped for a stream of ours while it is there (px_install, px_forget). */
void px_std_attach(int fd, int flags);
void px_std_detach(int fd);

/* f's offset (f->lock held): 0 or a gfs error. */
int px_off(px_file *f, int64_t *off);

int px_errno(int64_t rc);
int px_fail(int64_t rc);
int px_start(void);
px_file *px_get(int fd);
int px_sid(px_file *f);
void px_put(px_file *f);
/* Another reference to f (a map's: px_mmap.c); px_put drops it. */
void px_hold(px_file *f);
void px_install(int fd, px_file *f);
void px_forget(int fd);
uint64_t px_hash(const char *s);

/* ------------------------------------------------------------------------
 * Paths (px_path.c)
 * ------------------------------------------------------------------------ */

extern __thread bool px_from_mount; /* px_name's last answer was a mount's */
extern __thread bool px_dir_only;   /* its path named a directory only */
const char *px_name(const char *path);
const char *px_name_at(int dirfd, const char *path);
bool px_mapped_root(const char *name);
/* path read as the kernel reads it ("//", ".", ".." resolved), in buf
 * (cap bytes) when anything changes, else path itself. */
const char *px_local_path(const char *path, char *buf, size_t cap);

/* ------------------------------------------------------------------------
 * Shared by the calls (px_open.c, px_names.c)
 * ------------------------------------------------------------------------ */

int px_open(const char *name, int flags, mode_t mode);
int px_dir_fd(const char *name, int flags);

/* Data (px_data.c): px_pread/px_pwrite at off on our file (bytes or a
 * gfs error); px_io, one read or write on any descriptor (off -1: at its
 * offset; bytes or -1 with errno); px_seek, lseek on any descriptor. */
int64_t px_pread(px_file *f, void *buf, size_t n, int64_t off);
int64_t px_pwrite(px_file *f, const void *buf, size_t n, int64_t off);
ssize_t px_io(int fd, void *buf, size_t n, int64_t off, bool wr);
off_t px_seek(int fd, off_t off, int whence);

/* Locks (px_lock.c).  px_lock_fcntl: an fcntl lock command on our file
 * (-1 with errno on failure).  px_lock_closing: a descriptor of f is being
 * closed, so the process's fcntl locks on that file go (POSIX).
 * px_lock_last: the last descriptor of f's open file description went:
 * its OFD and flock locks go. */
int px_lock_fcntl(px_file *f, int cmd, void *arg);
void px_lock_closing(px_file *f);
void px_lock_last(px_file *f);
uint64_t px_lock_new_owner(void);
/* In a child after fork(): it holds none of its parent's fcntl locks. */
void px_lock_after_fork(void);
int px_is_dir(const char *name);
int px_stat_path(const char *name, struct stat *st);

/* Names and directories (px_names.c, px_dir.c; markers: px_dirmark.h):
 * px_stat_name answers 0 or a gfs error; px_rmdir -1 with errno or 0. */
int px_stat_name(const char *name, struct stat *st);
/* mode: S_IFREG with the file's permission bits, or PX_DIR_MODE. */
void px_fill_stat(struct stat *st, const char *name, int64_t size, int64_t unit,
                  int64_t mtime, mode_t mode);
#define PX_DIR_MODE (S_IFDIR | 0755)
/* Modes (px_attr.c; whom they let in: px_mode_permits, px_fsinfo.h): the
 * process's file-mode creation mask (umask() is ours too). */
mode_t px_umask(void);
/* Symbolic links (px_link.c).  px_follow: the name (just mapped) a link
 * at name leads to (name itself when it is none): 0 with a Galley name in
 * out, 1 with a local path, or a gfs error (-ELOOP).  px_stat_follow:
 * px_stat_path of where name leads.  px_readlink: readlink's answer. */
int px_follow(const char *name, char *out, size_t len);
int px_stat_follow(const char *name, struct stat *st);
ssize_t px_readlink(const char *name, char *buf, size_t len);
int px_rmdir(const char *name);

#pragma GCC visibility pop

#endif
