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

/* fd's stream leaves the table (fileno no longer answers for it). */
static void px_stream_forget(int fd)
{
    pthread_mutex_lock(&px_stream_lock);
    for (int i = 0; i < PX_NSTREAMS; i++)
        if (px_streams[i].fp && px_streams[i].fd == fd) {
            px_streams[i].fp = NULL;
            __atomic_sub_fetch(&px_nstreams, 1, __ATOMIC_RELEASE);
            break;
        }
    pthread_mutex_unlock(&px_stream_lock);
}

static int px_cookie_close(void *c)
{
    px_stream_forget((int)(intptr_t)c);
    return close((int)(intptr_t)c);
}

static int px_cookie_keep(void *c) /* a std stream's: the descriptor stays */
{
    px_stream_forget((int)(intptr_t)c);
    return 0;
}

/* A stream over Galley descriptor fd (closed with it when owns), or NULL. */
static FILE *px_stream_io(int fd, const char *mode, bool owns)
{
    cookie_io_functions_t io = {px_cookie_read, px_cookie_write, px_cookie_seek,
                                owns ? px_cookie_close : px_cookie_keep};
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

static FILE *px_stream(int fd, const char *mode)
{
    return px_stream_io(fd, mode, true);
}

/* ------------------------------------------------------------------------
 * stdin, stdout, stderr over Galley descriptors
 * ------------------------------------------------------------------------ */

/* glibc's own stdin, stdout and stderr reach descriptors 0-2 by internal
 * calls this library cannot see (a shell's `echo > F` is dup2 of F's
 * descriptor onto 1, then printf): while a Galley file is there, the
 * stream is swapped for one of ours over the descriptor, and back when
 * it goes.  Called with the file still installed (its buffered bytes go
 * to it).  px_std_lock guards the swaps. */
static pthread_mutex_t px_std_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *px_std_orig[3], *px_std_ours[3];

static FILE **px_std_slot(int fd)
{
    return fd == 0 ? &stdin : fd == 1 ? &stdout : &stderr;
}

void px_std_attach(int fd, int flags)
{
    if (fd < 0 || fd > 2)
        return;
    pthread_mutex_lock(&px_std_lock);
    if (px_std_ours[fd]) {
        fflush(px_std_ours[fd]); /* the file it held (still installed) */
    } else {
        int acc = flags & O_ACCMODE;
        FILE *fp = px_stream_io(fd,
                                acc == O_RDONLY   ? "r"
                                : acc == O_WRONLY ? "w"
                                                  : "r+",
                                false);
        if (fp) {
            if (fd == 2)
                setvbuf(fp, NULL, _IONBF, 0); /* as stderr */
            px_std_orig[fd] = *px_std_slot(fd);
            px_std_ours[fd] = fp;
            *px_std_slot(fd) = fp;
        }
    }
    pthread_mutex_unlock(&px_std_lock);
}

void px_std_detach(int fd)
{
    if (fd < 0 || fd > 2)
        return;
    pthread_mutex_lock(&px_std_lock);
    FILE *fp = px_std_ours[fd];
    if (fp) {
        *px_std_slot(fd) = px_std_orig[fd];
        px_std_ours[fd] = NULL;
        fclose(fp); /* its bytes out; the descriptor stays */
    }
    pthread_mutex_unlock(&px_std_lock);
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
