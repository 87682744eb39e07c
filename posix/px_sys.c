/*
 * px_sys.c -- the two back doors of libgalley-posix.so (see
 * galley_posix.c): glibc's syscall(), through which a program can make a
 * system call without its libc wrapper (fsx calls copy_file_range that
 * way), and ioctl.
 *
 *   syscall(SYS_x, ...)  on a Galley descriptor, the calls that move data,
 *                        seek, sync, allocate or close go to this
 *                        library's own definition of x (so to Galley);
 *                        anything else, and every call on other
 *                        descriptors, goes to glibc's syscall() unchanged
 *   ioctl                on a Galley descriptor: FIOCLEX / FIONCLEX set
 *                        close-on-exec, FIONBIO and FIOASYNC are accepted
 *                        (Galley calls wait for their servers either way),
 *                        FICLONE / FICLONERANGE / FIDEDUPERANGE fail with
 *                        EOPNOTSUPP (no shared extents: copy_file_range
 *                        copies), every other request with ENOTTY
 *
 * A raw system call on a Galley descriptor that is not listed here reaches
 * the kernel and its O_PATH placeholder: EBADF, never a silent success.
 *
 * Threads: any.
 */
#define _GNU_SOURCE
#include "px_internal.h"

#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

/* Does system call nr with arguments a name a Galley descriptor in a
 * place where this library serves it? */
static bool px_sys_ours(long nr, const long *a)
{
    switch (nr) {
    case SYS_read:
    case SYS_write:
    case SYS_pread64:
    case SYS_pwrite64:
    case SYS_readv:
    case SYS_writev:
    case SYS_preadv:
    case SYS_pwritev:
    case SYS_preadv2:
    case SYS_pwritev2:
    case SYS_lseek:
    case SYS_fallocate:
    case SYS_ftruncate:
    case SYS_fsync:
    case SYS_fdatasync:
    case SYS_sync_file_range:
    case SYS_syncfs:
    case SYS_readahead:
    case SYS_fadvise64:
    case SYS_ioctl:
    case SYS_close:
        return px_fds_has((int)a[0]);
    case SYS_copy_file_range:
    case SYS_splice:
        return px_fds_has((int)a[0]) || px_fds_has((int)a[2]);
    case SYS_sendfile:
    case SYS_tee:
        return px_fds_has((int)a[0]) || px_fds_has((int)a[1]);
    default:
        return false;
    }
}

/* The call, through this library's definitions. */
static long px_sys(long nr, const long *a)
{
    int fd = (int)a[0];
    void *p = (void *)a[1];
    const struct iovec *v = (const struct iovec *)a[1];
    switch (nr) {
    case SYS_read:
        return read(fd, p, (size_t)a[2]);
    case SYS_write:
        return write(fd, p, (size_t)a[2]);
    case SYS_pread64:
        return pread(fd, p, (size_t)a[2], (off_t)a[3]);
    case SYS_pwrite64:
        return pwrite(fd, p, (size_t)a[2], (off_t)a[3]);
    case SYS_readv:
        return readv(fd, v, (int)a[2]);
    case SYS_writev:
        return writev(fd, v, (int)a[2]);
    /* the kernel's preadv family takes the offset as (low, high) words;
     * on LP64 the low word is all of it */
    case SYS_preadv:
        return preadv(fd, v, (int)a[2], (off_t)a[3]);
    case SYS_pwritev:
        return pwritev(fd, v, (int)a[2], (off_t)a[3]);
    case SYS_preadv2:
        return preadv2(fd, v, (int)a[2], (off_t)a[3], (int)a[5]);
    case SYS_pwritev2:
        return pwritev2(fd, v, (int)a[2], (off_t)a[3], (int)a[5]);
    case SYS_lseek:
        return lseek(fd, (off_t)a[1], (int)a[2]);
    case SYS_fallocate:
        return fallocate(fd, (int)a[1], (off_t)a[2], (off_t)a[3]);
    case SYS_ftruncate:
        return ftruncate(fd, (off_t)a[1]);
    case SYS_fsync:
        return fsync(fd);
    case SYS_fdatasync:
        return fdatasync(fd);
    case SYS_sync_file_range:
        return sync_file_range(fd, (off64_t)a[1], (off64_t)a[2],
                               (unsigned)a[3]);
    case SYS_syncfs:
        return syncfs(fd);
    case SYS_readahead:
        return readahead(fd, (off64_t)a[1], (size_t)a[2]);
    case SYS_fadvise64: {
        int e = posix_fadvise(fd, (off_t)a[1], (off_t)a[2], (int)a[3]);
        if (e) {
            errno = e;
            return -1;
        }
        return 0;
    }
    case SYS_ioctl:
        return ioctl(fd, (unsigned long)a[1], (void *)a[2]);
    case SYS_close:
        return close(fd);
    case SYS_copy_file_range:
        return copy_file_range(fd, (off64_t *)a[1], (int)a[2], (off64_t *)a[3],
                               (size_t)a[4], (unsigned)a[5]);
    case SYS_splice:
        return splice(fd, (off64_t *)a[1], (int)a[2], (off64_t *)a[3],
                      (size_t)a[4], (unsigned)a[5]);
    case SYS_sendfile:
        return sendfile(fd, (int)a[1], (off_t *)a[2], (size_t)a[3]);
    case SYS_tee:
        return tee(fd, (int)a[1], (size_t)a[2], (unsigned)a[3]);
    }
    errno = ENOSYS;
    return -1;
}

PX_EXPORT long syscall(long nr, ...)
{
    /* a system call has at most six arguments, each a register's width;
     * reading six whatever the call takes is what glibc's own syscall()
     * does */
    long a[6];
    va_list ap;
    va_start(ap, nr);
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (px_sys_ours(nr, a))
        return px_sys(nr, a);
    return REAL(syscall)(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

PX_EXPORT int ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (!px_fds_has(fd))
        return REAL(ioctl)(fd, req, arg);
    switch (req) {
    case FIOCLEX:
    case FIONCLEX:
        return REAL(fcntl)(fd, F_SETFD, req == FIOCLEX ? FD_CLOEXEC : 0);
    case FIONBIO:
    case FIOASYNC:
        return 0;
    case FICLONE:
    case FICLONERANGE:
    case FIDEDUPERANGE:
        errno = EOPNOTSUPP;
        return -1;
    default:
        errno = ENOTTY;
        return -1;
    }
}
