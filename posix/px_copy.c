/*
 * px_copy.c -- the calls of libgalley-posix.so (see galley_posix.c) that
 * move data between two descriptors, and the ones that allocate:
 *
 *   copy_file_range, sendfile   between any mix of Galley and other
 *                               descriptors, through a buffer (the kernel
 *                               cannot copy what it does not hold)
 *   splice                      between a Galley descriptor and a pipe,
 *                               one buffer's worth per call, and into a
 *                               pipe no more than it has room for, as
 *                               the kernel's splice moves
 *   tee                         pipes only: EINVAL on a Galley descriptor
 *   fallocate, posix_fallocate  mode 0: the bytes past the file's end up
 *                               to off + len are written as zeros, so the
 *                               space is taken on the servers now and a
 *                               full disk says ENOSPC here; other modes
 *                               (keep size, punch hole, ...) EOPNOTSUPP
 *
 * Each call names offsets as the kernel's do: a NULL offset pointer means
 * the descriptor's own offset, which then advances by what moved.
 *
 * Threads: any (px_io's).
 */
#define _GNU_SOURCE
#include "px_internal.h"

#include <sys/ioctl.h>

/* Bytes moved per read-write pair. */
#define PX_COPY_CHUNK (1u << 20)

/* Copy up to n bytes from in to out.  ipos / opos: positions to read and
 * write at, advanced by what moved; NULL: the descriptor's offset.  once:
 * stop after one read (splice).  Bytes copied, or -1 with errno when
 * nothing was.  Bytes read but not written are given back to in (its
 * position or offset points just past what was copied). */
static ssize_t px_copy(int in, off64_t *ipos, int out, off64_t *opos, size_t n,
                       bool once)
{
    size_t chunk = n < PX_COPY_CHUNK ? n : PX_COPY_CHUNK;
    char *buf = malloc(chunk ? chunk : 1);
    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    size_t done = 0;
    int err = 0;
    while (done < n) {
        size_t m = n - done < chunk ? n - done : chunk;
        ssize_t r = px_io(in, buf, m, ipos ? *ipos : -1, false);
        if (r <= 0) {
            err = r < 0 ? errno : 0;
            break;
        }
        size_t w = 0;
        while (w < (size_t)r) {
            ssize_t k =
                px_io(out, buf + w, (size_t)r - w, opos ? *opos : -1, true);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0) {
                err = k < 0 ? errno : EIO;
                break;
            }
            w += (size_t)k;
            if (opos)
                *opos += k;
        }
        done += w;
        if (ipos)
            *ipos += (off64_t)w;
        else if (w < (size_t)r) /* a pipe cannot take them back */
            px_seek(in, -(off_t)((size_t)r - w), SEEK_CUR);
        if (w < (size_t)r || once)
            break;
    }
    free(buf);
    if (!done && err) {
        errno = err;
        return -1;
    }
    return (ssize_t)done;
}

/* fd's position: *pos, or its offset. */
static off64_t px_where(int fd, const off64_t *pos)
{
    return pos ? *pos : px_seek(fd, 0, SEEK_CUR);
}

PX_EXPORT ssize_t copy_file_range(int in, off64_t *inoff, int out,
                                  off64_t *outoff, size_t n, unsigned flags)
{
    px_file *a = px_get(in), *b = px_get(out);
    ssize_t k = -1;
    if (!a && !b)
        return REAL(copy_file_range)(in, inoff, out, outoff, n, flags);
    if (flags || (inoff && *inoff < 0) || (outoff && *outoff < 0))
        errno = EINVAL;
    else if (b && (b->flags & O_APPEND))
        errno = EBADF;
    else if (a && b && a->ino == b->ino && n) {
        /* the same file: overlapping ranges are refused, as the kernel's */
        off64_t i = px_where(in, inoff), o = px_where(out, outoff);
        if (i >= 0 && o >= 0 && (i < o ? o - i : i - o) < (off64_t)n)
            errno = EINVAL;
        else
            k = px_copy(in, inoff, out, outoff, n, false);
    } else
        k = px_copy(in, inoff, out, outoff, n, false);
    px_put(a);
    px_put(b);
    return k;
}

PX_EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t n)
{
    if (!px_fds_has(in) && !px_fds_has(out))
        return REAL(sendfile)(out, in, off, n);
    if (off && *off < 0) {
        errno = EINVAL;
        return -1;
    }
    return px_copy(in, (off64_t *)off, out, NULL, n, false);
}

PX_EXPORT ssize_t sendfile64(int out, int in, off64_t *off, size_t n)
{
    return sendfile(out, in, (off_t *)off, n);
}

/* Is fd (not ours) a pipe? */
static bool px_is_pipe(int fd)
{
    struct stat st;
    return REAL(fstat)(fd, &st) == 0 && S_ISFIFO(st.st_mode);
}

/* Bytes a splice into pipe fd may move: what the pipe has room for now,
 * as the kernel's splice moves no more than fits (a blocking write of more
 * would wait for a reader, and the caller is often that reader).  A full
 * pipe (or one whose room cannot be told) gets PIPE_BUF: the write then
 * waits for room, as the kernel's splice does. */
static size_t px_pipe_room(int fd, size_t n)
{
    int cap = REAL(fcntl)(fd, F_GETPIPE_SZ), queued = 0;
    size_t room = PIPE_BUF;
    if (cap > 0 && ioctl(fd, FIONREAD, &queued) == 0 && queued < cap)
        room = (size_t)(cap - queued);
    return n < room ? n : room;
}

PX_EXPORT ssize_t splice(int in, off64_t *inoff, int out, off64_t *outoff,
                         size_t n, unsigned flags)
{
    bool a = px_fds_has(in), b = px_fds_has(out);
    if (!a && !b)
        return REAL(splice)(in, inoff, out, outoff, n, flags);
    if (a == b || !px_is_pipe(a ? out : in)) {
        errno = EINVAL; /* one side must be a pipe */
        return -1;
    }
    if ((a ? outoff : inoff) != NULL) {
        errno = ESPIPE;
        return -1;
    }
    if ((a ? inoff : outoff) && *(a ? inoff : outoff) < 0) {
        errno = EINVAL;
        return -1;
    }
    if (a) /* into the pipe */
        n = px_pipe_room(out, n);
    return px_copy(in, inoff, out, outoff, n, true);
}

PX_EXPORT ssize_t tee(int in, int out, size_t n, unsigned flags)
{
    if (px_fds_has(in) || px_fds_has(out)) {
        errno = EINVAL; /* pipes only */
        return -1;
    }
    return REAL(tee)(in, out, n, flags);
}

/* ------------------------------------------------------------------------
 * Allocation
 * ------------------------------------------------------------------------ */

/* Allocate [off, off + len) of our file: 0 or an errno value. */
static int px_allocate(px_file *f, int mode, off_t off, off_t len)
{
    if (off < 0 || len <= 0)
        return EINVAL;
    if (mode != 0)
        return EOPNOTSUPP;
    if ((f->flags & O_ACCMODE) == O_RDONLY)
        return EBADF;
    if (off > INT64_MAX - len)
        return EFBIG;
    int64_t size = gfs_striped_size(px_sid(f)), end = off + len;
    if (size < 0)
        return px_errno(size);
    if (end <= size) /* inside the file: its bytes are there */
        return 0;
    size_t chunk =
        end - size < PX_COPY_CHUNK ? (size_t)(end - size) : PX_COPY_CHUNK;
    char *zeros = calloc(1, chunk);
    if (!zeros)
        return ENOMEM;
    int rc = 0;
    for (int64_t at = size; at < end && !rc;) {
        size_t m = end - at < (int64_t)chunk ? (size_t)(end - at) : chunk;
        int64_t k = px_pwrite(f, zeros, m, at);
        if (k <= 0)
            rc = k < 0 ? px_errno(k) : EIO;
        else
            at += k;
    }
    free(zeros);
    return rc;
}

PX_EXPORT int fallocate(int fd, int mode, off_t off, off_t len)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(fallocate)(fd, mode, off, len);
    int e = px_allocate(f, mode, off, len);
    px_put(f);
    if (e) {
        errno = e;
        return -1;
    }
    return 0;
}

PX_EXPORT int fallocate64(int fd, int mode, off64_t off, off64_t len)
{
    return fallocate(fd, mode, off, len);
}

/* posix_fallocate returns the error instead of setting errno. */
PX_EXPORT int posix_fallocate(int fd, off_t off, off_t len)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(posix_fallocate)(fd, off, len);
    int e = px_allocate(f, 0, off, len);
    px_put(f);
    return e;
}

PX_EXPORT int posix_fallocate64(int fd, off64_t off, off64_t len)
{
    return posix_fallocate(fd, off, len);
}
