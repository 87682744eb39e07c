/*
 * gp_data.c -- data calls of libgalley-posix.so (see galley_posix.c):
 * read/write and their positioned and vector forms at the descriptor's
 * shared offset, lseek, truncate, fsync, the copy calls we refuse, and
 * POSIX AIO (aio_read/aio_write, as ROMIO's MPI_File_iwrite uses it):
 * glibc's AIO threads call the system calls directly, past us, so on a
 * Galley descriptor the request is done at once and its aiocb completed
 * in glibc's own fields, which aio_error/aio_return/aio_suspend read.
 * Only SIGEV_NONE is honoured (no signal or thread is raised).
 * Data moves with gfs_striped_read/write, one transfer per server, no
 * client cache.
 *
 * Threads: any.  A gp_file's lock is held across the I/O of read/write
 * (distinct offsets for concurrent read()s on one descriptor).
 */
#define _GNU_SOURCE
#include "gp_internal.h"

/* ------------------------------------------------------------------------
 * Data
 * ------------------------------------------------------------------------ */

/* Read up to n bytes at off; bytes read or a gfs error. */
static int64_t gp_pread(gp_file *f, void *buf, size_t n, int64_t off)
{
    if (gp_forked)
        return GFS_ESERVERDOWN;
    if ((f->flags & O_ACCMODE) == O_WRONLY)
        return -EBADF;
    if (off < 0)
        return -EINVAL;
    if (n == 0)
        return 0;
    return gfs_striped_read(f->sid, off, buf, (int64_t)n);
}

static int64_t gp_pwrite(gp_file *f, const void *buf, size_t n, int64_t off)
{
    if (gp_forked)
        return GFS_ESERVERDOWN;
    if ((f->flags & O_ACCMODE) == O_RDONLY)
        return -EBADF;
    if (off < 0)
        return -EINVAL;
    if (n == 0)
        return 0;
    return gfs_striped_write(f->sid, off, buf, (int64_t)n);
}

/* read()/write() at the shared offset (and at the end for O_APPEND). */
static ssize_t gp_rw(gp_file *f, void *buf, size_t n, bool wr)
{
    pthread_mutex_lock(&f->lock);
    int64_t off = f->off, k;
    if (wr && (f->flags & O_APPEND)) {
        off = gfs_striped_size(f->sid);
        if (off < 0) {
            pthread_mutex_unlock(&f->lock);
            return gp_fail(off);
        }
    }
    k = wr ? gp_pwrite(f, buf, n, off) : gp_pread(f, buf, n, off);
    if (k > 0)
        f->off = off + k;
    pthread_mutex_unlock(&f->lock);
    return k < 0 ? gp_fail(k) : (ssize_t)k;
}

static ssize_t gp_rwv(gp_file *f, const struct iovec *iov, int cnt, bool wr)
{
    if (cnt < 0 || cnt > IOV_MAX) {
        errno = EINVAL;
        return -1;
    }
    /* Gather into one buffer so the request is one transfer per server. */
    size_t total = 0;
    for (int i = 0; i < cnt; i++)
        total += iov[i].iov_len;
    char *buf = malloc(total ? total : 1);
    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    if (wr)
        for (size_t i = 0, o = 0; i < (size_t)cnt; o += iov[i++].iov_len)
            memcpy(buf + o, iov[i].iov_base, iov[i].iov_len);
    ssize_t k = gp_rw(f, buf, total, wr);
    if (!wr && k > 0)
        for (size_t i = 0, o = 0; i < (size_t)cnt && o < (size_t)k;
             o += iov[i++].iov_len) {
            size_t m =
                iov[i].iov_len < (size_t)k - o ? iov[i].iov_len : (size_t)k - o;
            memcpy(iov[i].iov_base, buf + o, m);
        }
    free(buf);
    return k;
}

static off_t gp_lseek(gp_file *f, off_t off, int whence)
{
    pthread_mutex_lock(&f->lock);
    int64_t size = -1;
    if (whence == SEEK_END || whence == SEEK_DATA || whence == SEEK_HOLE) {
        size = gp_forked ? GFS_ESERVERDOWN : gfs_striped_size(f->sid);
        if (size < 0) {
            pthread_mutex_unlock(&f->lock);
            return gp_fail(size);
        }
    }
    int64_t pos;
    switch (whence) {
    case SEEK_SET:
        pos = off;
        break;
    case SEEK_CUR:
        pos = f->off + off;
        break;
    case SEEK_END:
        pos = size + off;
        break;
    case SEEK_DATA: /* no holes: all data up to the end */
        pos = off < size ? off : -ENXIO;
        break;
    case SEEK_HOLE:
        pos = off < size ? size : -ENXIO;
        break;
    default:
        pos = -EINVAL;
    }
    if (whence != SEEK_DATA && whence != SEEK_HOLE && pos < 0)
        pos = -EINVAL;
    if (off < 0 && (whence == SEEK_DATA || whence == SEEK_HOLE))
        pos = -ENXIO;
    if (pos >= 0)
        f->off = pos;
    pthread_mutex_unlock(&f->lock);
    return pos < 0 ? gp_fail(pos) : (off_t)pos;
}

/* ------------------------------------------------------------------------
 * Interposed calls: data
 * ------------------------------------------------------------------------ */

GP_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
    gp_file *f = gp_get(fd);
    if (!f)
        return REAL(read)(fd, buf, n);
    ssize_t k = gp_rw(f, buf, n, false);
    gp_put(f);
    return k;
}

GP_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    if (n > buflen)
        abort(); /* as glibc's __chk_fail would */
    return read(fd, buf, n);
}

GP_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
    gp_file *f = gp_get(fd);
    if (!f)
        return REAL(write)(fd, buf, n);
    ssize_t k = gp_rw(f, (void *)buf, n, true);
    gp_put(f);
    return k;
}

GP_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    gp_file *f = gp_get(fd);
    if (!f)
        return REAL(pread)(fd, buf, n, off);
    int64_t k = gp_pread(f, buf, n, off);
    gp_put(f);
    return k < 0 ? gp_fail(k) : (ssize_t)k;
}

GP_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
    return pread(fd, buf, n, off);
}

GP_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off,
                              size_t buflen)
{
    if (n > buflen)
        abort();
    return pread(fd, buf, n, off);
}

GP_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off,
                                size_t buflen)
{
    return __pread_chk(fd, buf, n, off, buflen);
}

GP_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    gp_file *f = gp_get(fd);
    if (!f)
        return REAL(pwrite)(fd, buf, n, off);
    int64_t k = gp_pwrite(f, buf, n, off);
    gp_put(f);
    return k < 0 ? gp_fail(k) : (ssize_t)k;
}

GP_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    return pwrite(fd, buf, n, off);
}

GP_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
    gp_file *f = gp_get(fd);
    if (!f)
        return REAL(readv)(fd, iov, cnt);
    ssize_t k = gp_rwv(f, iov, cnt, false);
    gp_put(f);
    return k;
}

GP_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    gp_file *f = gp_get(fd);
    if (!f)
        return REAL(writev)(fd, iov, cnt);
    ssize_t k = gp_rwv(f, iov, cnt, true);
    gp_put(f);
    return k;
}

GP_EXPORT off_t lseek(int fd, off_t off, int whence)
{
    gp_file *f = gp_get(fd);
    if (!f)
        return REAL(lseek)(fd, off, whence);
    off_t r = gp_lseek(f, off, whence);
    gp_put(f);
    return r;
}

GP_EXPORT off64_t lseek64(int fd, off64_t off, int whence)
{
    return lseek(fd, off, whence);
}

GP_EXPORT int ftruncate(int fd, off_t size)
{
    gp_file *f = gp_get(fd);
    if (!f)
        return REAL(ftruncate)(fd, size);
    int rc = (f->flags & O_ACCMODE) == O_RDONLY ? -EINVAL
             : size < 0                         ? -EINVAL
             : gp_forked                        ? GFS_ESERVERDOWN
                         : gfs_striped_truncate(f->sid, size);
    gp_put(f);
    return rc ? gp_fail(rc) : 0;
}

GP_EXPORT int ftruncate64(int fd, off64_t size)
{
    return ftruncate(fd, size);
}

GP_EXPORT int truncate(const char *path, off_t size)
{
    const char *name = gp_name(path);
    if (!name)
        return REAL(truncate)(path, size);
    int fd = gp_open(name, O_WRONLY, 0);
    if (fd < 0)
        return -1;
    int rc = ftruncate(fd, size);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

GP_EXPORT int truncate64(const char *path, off64_t size)
{
    return truncate(path, size);
}

static int gp_sync(int fd, bool data)
{
    gp_file *f = gp_get(fd);
    if (!f)
        return data ? REAL(fdatasync)(fd) : REAL(fsync)(fd);
    int rc = gp_forked ? GFS_ESERVERDOWN : gfs_striped_sync(f->sid);
    gp_put(f);
    return rc ? gp_fail(rc) : 0;
}

GP_EXPORT int fsync(int fd)
{
    return gp_sync(fd, false);
}

GP_EXPORT int fdatasync(int fd)
{
    return gp_sync(fd, true);
}

/* cp and friends try these first: refuse on Galley descriptors so they
 * fall back to read/write (the /dev/null underneath would copy nothing). */
GP_EXPORT ssize_t copy_file_range(int in, off64_t *inoff, int out,
                                  off64_t *outoff, size_t n, unsigned flags)
{
    gp_file *a = gp_get(in), *b = gp_get(out);
    gp_put(a);
    gp_put(b);
    if (a || b) {
        errno = EXDEV;
        return -1;
    }
    return REAL(copy_file_range)(in, inoff, out, outoff, n, flags);
}

GP_EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t n)
{
    gp_file *a = gp_get(in), *b = gp_get(out);
    gp_put(a);
    gp_put(b);
    if (a || b) {
        errno = EINVAL;
        return -1;
    }
    return REAL(sendfile)(out, in, off, n);
}

GP_EXPORT ssize_t sendfile64(int out, int in, off64_t *off, size_t n)
{
    return sendfile(out, in, off, n);
}

/* ------------------------------------------------------------------------
 * POSIX AIO on Galley descriptors: done at once
 * ------------------------------------------------------------------------ */

/* On LP64 glibc, struct aiocb64 is struct aiocb (off_t is 64 bits). */
_Static_assert(sizeof(struct aiocb64) == sizeof(struct aiocb), "aiocb64");

static int gp_aio_rw(struct aiocb *cb, bool wr)
{
    gp_file *f = gp_get(cb->aio_fildes);
    if (!f)
        return wr ? REAL(aio_write)(cb) : REAL(aio_read)(cb);
    gp_put(f);
    ssize_t n = wr ? pwrite(cb->aio_fildes, (const void *)cb->aio_buf,
                            cb->aio_nbytes, cb->aio_offset)
                   : pread(cb->aio_fildes, (void *)cb->aio_buf, cb->aio_nbytes,
                           cb->aio_offset);
    cb->__return_value = n;
    cb->__error_code = n < 0 ? errno : 0;
    return 0;
}

GP_EXPORT int aio_read(struct aiocb *cb)
{
    return gp_aio_rw(cb, false);
}

GP_EXPORT int aio_write(struct aiocb *cb)
{
    return gp_aio_rw(cb, true);
}

GP_EXPORT int aio_read64(struct aiocb64 *cb)
{
    return gp_aio_rw((struct aiocb *)cb, false);
}

GP_EXPORT int aio_write64(struct aiocb64 *cb)
{
    return gp_aio_rw((struct aiocb *)cb, true);
}

static int gp_aio_fsync(int op, struct aiocb *cb)
{
    gp_file *f = gp_get(cb->aio_fildes);
    if (!f)
        return REAL(aio_fsync)(op, cb);
    gp_put(f);
    int rc = fsync(cb->aio_fildes);
    cb->__return_value = rc;
    cb->__error_code = rc < 0 ? errno : 0;
    return 0;
}

GP_EXPORT int aio_fsync(int op, struct aiocb *cb)
{
    return gp_aio_fsync(op, cb);
}

GP_EXPORT int aio_fsync64(int op, struct aiocb64 *cb)
{
    return gp_aio_fsync(op, (struct aiocb *)cb);
}

static int gp_aio_cancel(int fd, struct aiocb *cb)
{
    gp_file *f = gp_get(fd);
    if (!f)
        return REAL(aio_cancel)(fd, cb);
    gp_put(f);
    return AIO_ALLDONE; /* ours are always done */
}

GP_EXPORT int aio_cancel(int fd, struct aiocb *cb)
{
    return gp_aio_cancel(fd, cb);
}

GP_EXPORT int aio_cancel64(int fd, struct aiocb64 *cb)
{
    return gp_aio_cancel(fd, (struct aiocb *)cb);
}
