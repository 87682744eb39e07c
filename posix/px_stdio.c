/*
 * px_stdio.c -- stdio on galley: names in libgalley-posix.so (see
 * galley_posix.c).  glibc's fopen/fdopen reach open() through internal
 * symbols we cannot see, so these two are interposed and return a
 * fopencookie() stream over our descriptor; fileno() gives it back.
 *
 * Threads: any.  px_stream_lock guards the table of our streams.
 */
#define _GNU_SOURCE
#include "px_internal.h"

/* ------------------------------------------------------------------------
 * stdio
 * ------------------------------------------------------------------------ */

/* FILE streams we made, so fileno() can answer for them. */
#define PX_NSTREAMS 1024
static pthread_mutex_t px_stream_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    FILE *fp;
    int fd;
} px_streams[PX_NSTREAMS];
static int px_nstreams; /* entries in use (fileno's fast path) */

static ssize_t px_cookie_read(void *c, char *buf, size_t n)
{
    return read((int)(intptr_t)c, buf, n);
}

static ssize_t px_cookie_write(void *c, const char *buf, size_t n)
{
    ssize_t k = write((int)(intptr_t)c, buf, n);
    return k < 0 ? 0 : k; /* stdio: 0 means error (errno set) */
}

static int px_cookie_seek(void *c, off64_t *off, int whence)
{
    off_t r = lseek((int)(intptr_t)c, *off, whence);
    if (r < 0)
        return -1;
    *off = r;
    return 0;
}

static int px_cookie_close(void *c)
{
    int fd = (int)(intptr_t)c;
    pthread_mutex_lock(&px_stream_lock);
    for (int i = 0; i < PX_NSTREAMS; i++)
        if (px_streams[i].fp && px_streams[i].fd == fd) {
            px_streams[i].fp = NULL;
            __atomic_sub_fetch(&px_nstreams, 1, __ATOMIC_RELEASE);
            break;
        }
    pthread_mutex_unlock(&px_stream_lock);
    return close(fd);
}

/* A stream over Galley descriptor fd (which it owns), or NULL. */
static FILE *px_stream(int fd, const char *mode)
{
    cookie_io_functions_t io = {px_cookie_read, px_cookie_write, px_cookie_seek,
                                px_cookie_close};
    FILE *fp = fopencookie((void *)(intptr_t)fd, mode, io);
    if (!fp)
        return NULL;
    pthread_mutex_lock(&px_stream_lock);
    for (int i = 0; i < PX_NSTREAMS; i++)
        if (!px_streams[i].fp) {
            px_streams[i].fp = fp;
            px_streams[i].fd = fd;
            __atomic_add_fetch(&px_nstreams, 1, __ATOMIC_RELEASE);
            break;
        }
    pthread_mutex_unlock(&px_stream_lock);
    return fp;
}

/* fopen mode -> open flags; -1 if invalid. */
static int px_mode_flags(const char *mode)
{
    int fl;
    switch (mode[0]) {
    case 'r':
        fl = O_RDONLY;
        break;
    case 'w':
        fl = O_WRONLY | O_CREAT | O_TRUNC;
        break;
    case 'a':
        fl = O_WRONLY | O_CREAT | O_APPEND;
        break;
    default:
        return -1;
    }
    for (const char *m = mode + 1; *m && *m != ','; m++) {
        if (*m == '+')
            fl = (fl & ~O_ACCMODE) | O_RDWR;
        else if (*m == 'x')
            fl |= O_EXCL;
        else if (*m == 'e')
            fl |= O_CLOEXEC;
    }
    return fl;
}

static FILE *px_fopen(const char *name, const char *mode)
{
    int fl = px_mode_flags(mode);
    if (fl < 0) {
        errno = EINVAL;
        return NULL;
    }
    int fd = px_open(name, fl, 0666);
    if (fd < 0)
        return NULL;
    FILE *fp = px_stream(fd, mode);
    if (!fp) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return fp;
}

PX_EXPORT FILE *fopen(const char *path, const char *mode)
{
    const char *name = px_name(path);
    return name ? px_fopen(name, mode) : REAL(fopen)(path, mode);
}

PX_EXPORT FILE *fopen64(const char *path, const char *mode)
{
    return fopen(path, mode);
}

PX_EXPORT FILE *fdopen(int fd, const char *mode)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(fdopen)(fd, mode);
    px_put(f);
    return px_stream(fd, mode);
}

PX_EXPORT int fileno(FILE *fp)
{
    if (!__atomic_load_n(&px_nstreams, __ATOMIC_ACQUIRE))
        return REAL(fileno)(fp);
    pthread_mutex_lock(&px_stream_lock);
    for (int i = 0; i < PX_NSTREAMS; i++)
        if (px_streams[i].fp == fp) {
            int fd = px_streams[i].fd;
            pthread_mutex_unlock(&px_stream_lock);
            return fd;
        }
    pthread_mutex_unlock(&px_stream_lock);
    return REAL(fileno)(fp);
}

PX_EXPORT int fileno_unlocked(FILE *fp)
{
    return fileno(fp);
}
