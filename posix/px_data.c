/*
 * px_data.c -- data calls of libgalley-posix.so (see galley_posix.c):
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
 * Threads: any.  A px_file's lock is held across the I/O of read/write
 * (distinct offsets for concurrent read()s on one descriptor).
 */
#define _GNU_SOURCE
#include "px_internal.h"

/* ------------------------------------------------------------------------
 * Data
 * ------------------------------------------------------------------------ */

/* Read up to n bytes at off; bytes read or a gfs error. */
static int64_t px_pread(px_file *f, void *buf, size_t n, int64_t off)
{
    if (px_forked)
        return GFS_ESERVERDOWN;
    if ((f->flags & O_ACCMODE) == O_WRONLY)
        return -EBADF;
    if (off < 0)
        return -EINVAL;
    if (n == 0)
        return 0;
    return gfs_striped_read(f->sid, off, buf, (int64_t)n);
}

static int64_t px_pwrite(px_file *f, const void *buf, size_t n, int64_t off)
{
    if (px_forked)
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
static ssize_t px_rw(px_file *f, void *buf, size_t n, bool wr)
{
    pthread_mutex_lock(&f->lock);
    int64_t off = f->off, k;
    if (wr && (f->flags & O_APPEND)) {
        off = gfs_striped_size(f->sid);
        if (off < 0) {
            pthread_mutex_unlock(&f->lock);
            return px_fail(off);
        }
    }
    k = wr ? px_pwrite(f, buf, n, off) : px_pread(f, buf, n, off);
    if (k > 0)
        f->off = off + k;
    pthread_mutex_unlock(&f->lock);
    return k < 0 ? px_fail(k) : (ssize_t)k;
}

static ssize_t px_rwv(px_file *f, const struct iovec *iov, int cnt, bool wr)
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
    ssize_t k = px_rw(f, buf, total, wr);
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

static off_t px_lseek(px_file *f, off_t off, int whence)
{
    pthread_mutex_lock(&f->lock);
    int64_t size = -1;
    if (whence == SEEK_END || whence == SEEK_DATA || whence == SEEK_HOLE) {
        size = px_forked ? GFS_ESERVERDOWN : gfs_striped_size(f->sid);
        if (size < 0) {
            pthread_mutex_unlock(&f->lock);
            return px_fail(size);
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
    return pos < 0 ? px_fail(pos) : (off_t)pos;
}

/* ------------------------------------------------------------------------
 * Interposed calls: data
 * ------------------------------------------------------------------------ */

PX_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(read)(fd, buf, n);
    ssize_t k = px_rw(f, buf, n, false);
    px_put(f);
    return k;
}

PX_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    if (n > buflen)
        abort(); /* as glibc's __chk_fail would */
    return read(fd, buf, n);
}

PX_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(write)(fd, buf, n);
    ssize_t k = px_rw(f, (void *)buf, n, true);
    px_put(f);
    return k;
}

PX_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(pread)(fd, buf, n, off);
    int64_t k = px_pread(f, buf, n, off);
    px_put(f);
    return k < 0 ? px_fail(k) : (ssize_t)k;
}

PX_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
    return pread(fd, buf, n, off);
}

PX_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off,
                              size_t buflen)
{
    if (n > buflen)
        abort();
    return pread(fd, buf, n, off);
}

PX_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off,
                                size_t buflen)
{
    return __pread_chk(fd, buf, n, off, buflen);
}

PX_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(pwrite)(fd, buf, n, off);
    int64_t k = px_pwrite(f, buf, n, off);
    px_put(f);
    return k < 0 ? px_fail(k) : (ssize_t)k;
}

PX_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    return pwrite(fd, buf, n, off);
}

PX_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(readv)(fd, iov, cnt);
    ssize_t k = px_rwv(f, iov, cnt, false);
    px_put(f);
    return k;
}

PX_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(writev)(fd, iov, cnt);
    ssize_t k = px_rwv(f, iov, cnt, true);
    px_put(f);
    return k;
}

PX_EXPORT off_t lseek(int fd, off_t off, int whence)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(lseek)(fd, off, whence);
    off_t r = px_lseek(f, off, whence);
    px_put(f);
    return r;
}

PX_EXPORT off64_t lseek64(int fd, off64_t off, int whence)
{
    return lseek(fd, off, whence);
}

PX_EXPORT int ftruncate(int fd, off_t size)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(ftruncate)(fd, size);
    int rc = (f->flags & O_ACCMODE) == O_RDONLY ? -EINVAL
             : size < 0                         ? -EINVAL
             : px_forked                        ? GFS_ESERVERDOWN
                         : gfs_striped_truncate(f->sid, size);
    px_put(f);
    return rc ? px_fail(rc) : 0;
}

PX_EXPORT int ftruncate64(int fd, off64_t size)
{
    return ftruncate(fd, size);
}

PX_EXPORT int truncate(const char *path, off_t size)
{
    const char *name = px_name(path);
    if (!name)
        return REAL(truncate)(path, size);
    int fd = px_open(name, O_WRONLY, 0);
    if (fd < 0)
        return -1;
    int rc = ftruncate(fd, size);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

PX_EXPORT int truncate64(const char *path, off64_t size)
{
    return truncate(path, size);
}

static int px_sync(int fd, bool data)
{
    px_file *f = px_get(fd);
    if (!f)
        return data ? REAL(fdatasync)(fd) : REAL(fsync)(fd);
    int rc = px_forked ? GFS_ESERVERDOWN : gfs_striped_sync(f->sid);
    px_put(f);
    return rc ? px_fail(rc) : 0;
}

PX_EXPORT int fsync(int fd)
{
    return px_sync(fd, false);
}

PX_EXPORT int fdatasync(int fd)
{
    return px_sync(fd, true);
}

/* cp and friends try these first: refuse on Galley descriptors so they
 * fall back to read/write (the /dev/null underneath would copy nothing). */
PX_EXPORT ssize_t copy_file_range(int in, off64_t *inoff, int out,
                                  off64_t *outoff, size_t n, unsigned flags)
{
    px_file *a = px_get(in), *b = px_get(out);
    px_put(a);
    px_put(b);
    if (a || b) {
        errno = EXDEV;
        return -1;
    }
    return REAL(copy_file_range)(in, inoff, out, outoff, n, flags);
}

PX_EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t n)
{
    px_file *a = px_get(in), *b = px_get(out);
    px_put(a);
    px_put(b);
    if (a || b) {
        errno = EINVAL;
        return -1;
    }
    return REAL(sendfile)(out, in, off, n);
}

PX_EXPORT ssize_t sendfile64(int out, int in, off64_t *off, size_t n)
{
    return sendfile(out, in, off, n);
}

/* ------------------------------------------------------------------------
 * POSIX AIO on Galley descriptors: done at once
 * ------------------------------------------------------------------------ */

/* On LP64 glibc, struct aiocb64 is struct aiocb (off_t is 64 bits). */
_Static_assert(sizeof(struct aiocb64) == sizeof(struct aiocb), "aiocb64");

static int px_aio_rw(struct aiocb *cb, bool wr)
{
    px_file *f = px_get(cb->aio_fildes);
    if (!f)
        return wr ? REAL(aio_write)(cb) : REAL(aio_read)(cb);
    px_put(f);
    ssize_t n = wr ? pwrite(cb->aio_fildes, (const void *)cb->aio_buf,
                            cb->aio_nbytes, cb->aio_offset)
                   : pread(cb->aio_fildes, (void *)cb->aio_buf, cb->aio_nbytes,
                           cb->aio_offset);
    cb->__return_value = n;
    cb->__error_code = n < 0 ? errno : 0;
    return 0;
}

PX_EXPORT int aio_read(struct aiocb *cb)
{
    return px_aio_rw(cb, false);
}

PX_EXPORT int aio_write(struct aiocb *cb)
{
    return px_aio_rw(cb, true);
}

PX_EXPORT int aio_read64(struct aiocb64 *cb)
{
    return px_aio_rw((struct aiocb *)cb, false);
}

PX_EXPORT int aio_write64(struct aiocb64 *cb)
{
    return px_aio_rw((struct aiocb *)cb, true);
}

static int px_aio_fsync(int op, struct aiocb *cb)
{
    px_file *f = px_get(cb->aio_fildes);
    if (!f)
        return REAL(aio_fsync)(op, cb);
    px_put(f);
    int rc = fsync(cb->aio_fildes);
    cb->__return_value = rc;
    cb->__error_code = rc < 0 ? errno : 0;
    return 0;
}

PX_EXPORT int aio_fsync(int op, struct aiocb *cb)
{
    return px_aio_fsync(op, cb);
}

PX_EXPORT int aio_fsync64(int op, struct aiocb64 *cb)
{
    return px_aio_fsync(op, (struct aiocb *)cb);
}

static int px_aio_cancel(int fd, struct aiocb *cb)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(aio_cancel)(fd, cb);
    px_put(f);
    return AIO_ALLDONE; /* ours are always done */
}

PX_EXPORT int aio_cancel(int fd, struct aiocb *cb)
{
    return px_aio_cancel(fd, cb);
}

PX_EXPORT int aio_cancel64(int fd, struct aiocb64 *cb)
{
    return px_aio_cancel(fd, (struct aiocb *)cb);
}
