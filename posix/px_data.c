/*
 * px_data.c -- data calls of libgalley-posix.so (see galley_posix.c):
 * read/write and their positioned and vector forms (read to pwritev2),
 * lseek, truncate, the sync family, advice, and POSIX AIO (aio_read/
 * aio_write, as ROMIO's MPI_File_iwrite uses it, and lio_listio):
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

/* Read (wr false) up to n bytes or write n bytes at off; bytes moved or a
 * gfs error.  A directory reads as -EISDIR. */
static int64_t px_prw(px_file *f, void *buf, size_t n, int64_t off, bool wr)
{
    if (!wr && f->dir)
        return -EISDIR;
    if ((f->flags & O_ACCMODE) == (wr ? O_RDONLY : O_WRONLY))
        return -EBADF;
    if (off < 0)
        return -EINVAL;
    if (n == 0)
        return 0;
    int sid = px_sid(f);
    if (sid < 0)
        return sid;
    return wr ? gfs_striped_write(sid, off, buf, (int64_t)n)
              : gfs_striped_read(sid, off, buf, (int64_t)n);
}

int64_t px_pread(px_file *f, void *buf, size_t n, int64_t off)
{
    return px_prw(f, buf, n, off, false);
}

int64_t px_pwrite(px_file *f, const void *buf, size_t n, int64_t off)
{
    return px_prw(f, (void *)buf, n, off, true);
}

/* read()/write() at the shared offset (and at the end for O_APPEND, or
 * when append asks: pwritev2's RWF_APPEND). */
static ssize_t px_rw(px_file *f, void *buf, size_t n, bool wr, bool append)
{
    pthread_mutex_lock(&f->lock);
    int64_t off, k;
    int rc = px_off(f, &off);
    if (rc) {
        pthread_mutex_unlock(&f->lock);
        return px_fail(rc);
    }
    if (wr && (append || (f->flags & O_APPEND))) {
        off = gfs_striped_size(px_sid(f));
        if (off < 0) {
            pthread_mutex_unlock(&f->lock);
            return px_fail(off);
        }
    }
    k = px_prw(f, buf, n, off, wr);
    if (k > 0)
        f->off = off + k;
    pthread_mutex_unlock(&f->lock);
    return k < 0 ? px_fail(k) : (ssize_t)k;
}

/* One read or write of our file at off, or (off -1) at the shared offset
 * as read()/write() do; bytes moved, or -1 with errno. */
static ssize_t px_at(px_file *f, void *buf, size_t n, int64_t off, bool wr,
                     bool append)
{
    if (off == -1)
        return px_rw(f, buf, n, wr, append);
    int64_t r = px_prw(f, buf, n, off, wr);
    return r < 0 ? px_fail(r) : (ssize_t)r;
}

/* Gather iov into one buffer (so the request is one transfer per
 * server); NULL with errno.  *total gets the bytes. */
static char *px_gather(const struct iovec *iov, int cnt, bool wr, size_t *total)
{
    if (cnt < 0 || cnt > IOV_MAX) {
        errno = EINVAL;
        return NULL;
    }
    size_t t = 0;
    for (int i = 0; i < cnt; i++)
        t += iov[i].iov_len;
    char *buf = malloc(t ? t : 1);
    if (!buf) {
        errno = ENOMEM;
        return NULL;
    }
    if (wr)
        for (size_t i = 0, o = 0; i < (size_t)cnt; o += iov[i++].iov_len)
            memcpy(buf + o, iov[i].iov_base, iov[i].iov_len);
    *total = t;
    return buf;
}

/* The first k bytes of buf back into iov. */
static void px_scatter(const struct iovec *iov, int cnt, const char *buf,
                       size_t k)
{
    for (size_t i = 0, o = 0; i < (size_t)cnt && o < k; o += iov[i++].iov_len) {
        size_t m = iov[i].iov_len < k - o ? iov[i].iov_len : k - o;
        memcpy(iov[i].iov_base, buf + o, m);
    }
}

/* readv/writev (off -1: at the shared offset, as readv/writev) and their
 * positioned forms (preadv/pwritev, off >= 0). */
static ssize_t px_rwv(px_file *f, const struct iovec *iov, int cnt, int64_t off,
                      bool wr, bool append)
{
    size_t total;
    char *buf = px_gather(iov, cnt, wr, &total);
    if (!buf)
        return -1;
    ssize_t k = px_at(f, buf, total, off, wr, append);
    if (!wr && k > 0)
        px_scatter(iov, cnt, buf, (size_t)k);
    free(buf);
    return k;
}

static off_t px_lseek(px_file *f, off_t off, int whence)
{
    pthread_mutex_lock(&f->lock);
    int64_t size = -1;
    if (whence == SEEK_END || whence == SEEK_DATA || whence == SEEK_HOLE) {
        size = gfs_striped_size(px_sid(f));
        if (size < 0) {
            pthread_mutex_unlock(&f->lock);
            return px_fail(size);
        }
    }
    int64_t pos, cur = 0;
    int rc = whence == SEEK_CUR ? px_off(f, &cur) : 0;
    if (rc) {
        pthread_mutex_unlock(&f->lock);
        return px_fail(rc);
    }
    switch (whence) {
    case SEEK_SET:
        pos = off;
        break;
    case SEEK_CUR:
        pos = cur + off;
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
    if (pos >= 0) {
        f->off = pos;
        __atomic_store_n(&f->off_end, false, __ATOMIC_RELEASE);
    }
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
    ssize_t k = px_rw(f, buf, n, false, false);
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
    ssize_t k = px_rw(f, (void *)buf, n, true, false);
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
    ssize_t k = px_rwv(f, iov, cnt, -1, false, false);
    px_put(f);
    return k;
}

PX_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(writev)(fd, iov, cnt);
    ssize_t k = px_rwv(f, iov, cnt, -1, true, false);
    px_put(f);
    return k;
}

/* preadv2/pwritev2 on our file: off -1 is the shared offset; of the
 * flags, RWF_HIPRI is a hint, RWF_DSYNC/RWF_SYNC sync the written bytes
 * (gfs_striped_sync) before returning, RWF_APPEND writes at the end;
 * RWF_NOWAIT and unknown flags are refused with EOPNOTSUPP (a Galley
 * call may always wait for a server). */
#define PX_RWF_OK (RWF_HIPRI | RWF_DSYNC | RWF_SYNC | RWF_APPEND)

static ssize_t px_rwv2(px_file *f, const struct iovec *iov, int cnt,
                       int64_t off, bool wr, int flags)
{
    if (flags & ~PX_RWF_OK) {
        errno = EOPNOTSUPP;
        return -1;
    }
    if (off < -1) {
        errno = EINVAL;
        return -1;
    }
    bool append = wr && (flags & RWF_APPEND);
    if (append && off != -1) { /* at the end; the offset stays */
        off = gfs_striped_size(px_sid(f));
        if (off < 0)
            return px_fail(off);
    }
    ssize_t k = px_rwv(f, iov, cnt, off, wr, append);
    if (k >= 0 && wr && (flags & (RWF_DSYNC | RWF_SYNC))) {
        int rc = gfs_striped_sync(px_sid(f));
        if (rc)
            return px_fail(rc);
    }
    return k;
}

static ssize_t px_prwv(int fd, const struct iovec *iov, int cnt, off_t off,
                       bool wr, int flags, bool v2)
{
    px_file *f = px_get(fd);
    if (!f) {
        if (v2)
            return wr ? REAL(pwritev2)(fd, iov, cnt, off, flags)
                      : REAL(preadv2)(fd, iov, cnt, off, flags);
        return wr ? REAL(pwritev)(fd, iov, cnt, off)
                  : REAL(preadv)(fd, iov, cnt, off);
    }
    ssize_t k;
    if (!v2 && off < 0) { /* preadv/pwritev take no -1 */
        errno = EINVAL;
        k = -1;
    } else
        k = px_rwv2(f, iov, cnt, off, wr, flags);
    px_put(f);
    return k;
}

PX_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
    return px_prwv(fd, iov, cnt, off, false, 0, false);
}

PX_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    return px_prwv(fd, iov, cnt, off, true, 0, false);
}

PX_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt,
                           off64_t off)
{
    return px_prwv(fd, iov, cnt, off, false, 0, false);
}

PX_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt,
                            off64_t off)
{
    return px_prwv(fd, iov, cnt, off, true, 0, false);
}

PX_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off,
                          int flags)
{
    return px_prwv(fd, iov, cnt, off, false, flags, true);
}

PX_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off,
                           int flags)
{
    return px_prwv(fd, iov, cnt, off, true, flags, true);
}

PX_EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt,
                             off64_t off, int flags)
{
    return px_prwv(fd, iov, cnt, off, false, flags, true);
}

PX_EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt,
                              off64_t off, int flags)
{
    return px_prwv(fd, iov, cnt, off, true, flags, true);
}

/* glibc's public aliases of read, write, pread64 and pwrite64 */
PX_EXPORT ssize_t __read(int fd, void *buf, size_t n)
{
    return read(fd, buf, n);
}

PX_EXPORT ssize_t __write(int fd, const void *buf, size_t n)
{
    return write(fd, buf, n);
}

PX_EXPORT ssize_t __pread64(int fd, void *buf, size_t n, off64_t off)
{
    return pread(fd, buf, n, off);
}

PX_EXPORT ssize_t __pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    return pwrite(fd, buf, n, off);
}

PX_EXPORT off_t lseek(int fd, off_t off, int whence)
{
    return px_seek(fd, off, whence);
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
                        : gfs_striped_truncate(px_sid(f), size);
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
    /* a directory's entries are records on every server: their logs */
    int rc = f->dir ? gfs_sync_metadata(-1, NULL, NULL)
                    : gfs_striped_sync(px_sid(f));
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

/* The written range reaches the servers' files (Galley has no client
 * cache: every write already has), made durable as fsync makes it. */
PX_EXPORT int sync_file_range(int fd, off64_t off, off64_t n, unsigned flags)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(sync_file_range)(fd, off, n, flags);
    px_put(f);
    if (off < 0 || n < 0 ||
        (flags & ~(SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                   SYNC_FILE_RANGE_WAIT_AFTER))) {
        errno = EINVAL;
        return -1;
    }
    return px_sync(fd, true);
}

/* syncfs of a Galley descriptor syncs its file (all a client can ask of
 * the servers for its own writes) and every server's metadata. */
PX_EXPORT int syncfs(int fd)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(syncfs)(fd);
    bool dir = f->dir; /* (px_sync of a directory syncs every server's) */
    px_put(f);
    int rc = dir ? 0 : gfs_sync_metadata(-1, NULL, NULL);
    return rc ? px_fail(rc) : px_sync(fd, false);
}

/* Advice: no client cache to fill or drop, so valid advice is taken and
 * does nothing; invalid advice is EINVAL, as for a local file. */
PX_EXPORT ssize_t readahead(int fd, off64_t off, size_t n)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(readahead)(fd, off, n);
    px_put(f);
    return 0;
}

PX_EXPORT int posix_fadvise(int fd, off_t off, off_t n, int advice)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(posix_fadvise)(fd, off, n, advice);
    px_put(f);
    return n < 0 || advice < POSIX_FADV_NORMAL || advice > POSIX_FADV_NOREUSE
               ? EINVAL
               : 0;
}

PX_EXPORT int posix_fadvise64(int fd, off64_t off, off64_t n, int advice)
{
    return posix_fadvise(fd, off, n, advice);
}

/* One read or write on any descriptor (the copy calls, px_copy.c): ours
 * through the striped file, others through libc; off -1 at (and
 * advancing) the file offset.  Bytes moved, or -1 with errno. */
ssize_t px_io(int fd, void *buf, size_t n, int64_t off, bool wr)
{
    px_file *f = px_get(fd);
    if (!f) {
        if (off == -1)
            return wr ? REAL(write)(fd, buf, n) : REAL(read)(fd, buf, n);
        return wr ? REAL(pwrite)(fd, buf, n, off)
                  : REAL(pread)(fd, buf, n, off);
    }
    ssize_t k = px_at(f, buf, n, off, wr, false);
    px_put(f);
    return k;
}

/* lseek on any descriptor. */
off_t px_seek(int fd, off_t off, int whence)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(lseek)(fd, off, whence);
    off_t r = px_lseek(f, off, whence);
    px_put(f);
    return r;
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

/* lio_listio: the requests on Galley descriptors are done at once (as
 * aio_read/aio_write), the others go to glibc's in one list of their own
 * (with sev, which only they can raise).  LIO_WAIT fails with EIO when
 * any request failed, as glibc's does. */
PX_EXPORT int lio_listio(int mode, struct aiocb *const list[], int n,
                         struct sigevent *sev)
{
    if (n < 0 || (mode != LIO_WAIT && mode != LIO_NOWAIT)) {
        errno = EINVAL;
        return -1;
    }
    bool ours = false;
    for (int i = 0; i < n && !ours; i++)
        ours = list[i] && list[i]->aio_lio_opcode != LIO_NOP &&
               px_fds_has(list[i]->aio_fildes);
    if (!ours)
        return REAL(lio_listio)(mode, list, n, sev);
    struct aiocb **rest = malloc(sizeof(*rest) * (size_t)n);
    if (!rest) {
        errno = EAGAIN;
        return -1;
    }
    int nrest = 0;
    bool failed = false;
    for (int i = 0; i < n; i++) {
        struct aiocb *cb = list[i];
        if (!cb || cb->aio_lio_opcode == LIO_NOP)
            continue;
        px_file *f = px_get(cb->aio_fildes);
        px_put(f);
        if (!f) {
            rest[nrest++] = cb;
            continue;
        }
        bool wr = cb->aio_lio_opcode == LIO_WRITE;
        if (!wr && cb->aio_lio_opcode != LIO_READ) {
            cb->__return_value = -1;
            cb->__error_code = EINVAL;
            failed = true;
            continue;
        }
        px_aio_rw(cb, wr);
        failed |= cb->__error_code != 0;
    }
    int rc = 0;
    if (nrest || (mode == LIO_NOWAIT && sev && sev->sigev_notify != SIGEV_NONE))
        rc = REAL(lio_listio)(mode, rest, nrest, sev);
    free(rest);
    if (rc == 0 && failed && mode == LIO_WAIT) {
        errno = EIO;
        rc = -1;
    }
    return rc;
}

PX_EXPORT int lio_listio64(int mode, struct aiocb64 *const list[], int n,
                           struct sigevent *sev)
{
    return lio_listio(mode, (struct aiocb *const *)list, n, sev);
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
