/*
 * px_open.c -- descriptors of libgalley-posix.so (see galley_posix.c):
 * opening a Galley file (an O_PATH descriptor that our table maps to the
 * striped file), the interposed open family, close, dup family and fcntl
 * (whose lock commands px_lock.c serves).
 *
 * Threads: any (the table's locking is galley_posix.c's).
 */
#define _GNU_SOURCE
#include "px_internal.h"

/* ------------------------------------------------------------------------
 * Opening a Galley file
 * ------------------------------------------------------------------------ */

void px_file_init(px_file *f)
{
    f->owner = px_lock_new_owner();
    f->ino = px_hash(f->name);
    pthread_mutex_init(&f->lock, NULL);
}

/* A descriptor for f (sid, flags, name set): 0 and installed, or -1 with
 * errno and f freed (its file closed). */
static int px_new_fd(px_file *f, int flags)
{
    px_file_init(f);
    int fd = px_placeholder(f->dir ? NULL : f->name, flags);
    if (fd < 0 || fd >= PX_NFD) {
        int e = fd < 0 ? errno : EMFILE;
        if (fd >= 0)
            REAL(close)(fd);
        if (f->sid >= 0)
            gfs_striped_close(f->sid);
        pthread_mutex_destroy(&f->lock);
        free(f);
        errno = e;
        return -1;
    }
    px_install(fd, f);
    return fd;
}

/* A read-only descriptor of directory `name` (known to be one): what the
 * *at calls resolve relative names under, fstat answers for, and
 * fdopendir lists; -1 with errno. */
int px_dir_fd(const char *name, int flags)
{
    px_file *f = calloc(1, sizeof(*f));
    if (!f)
        return px_fail(-ENOMEM);
    f->sid = -1;
    f->dir = true;
    f->flags = O_RDONLY;
    snprintf(f->name, sizeof(f->name), "%s", name);
    return px_new_fd(f, flags);
}

static int px_open_dir(const char *name, int flags)
{
    struct stat st;
    char to[PATH_MAX + 1];
    int rc = px_stat_name(name, &st);
    if (!rc && S_ISLNK(st.st_mode)) { /* a link to a directory */
        rc = (flags & O_NOFOLLOW) ? -ELOOP : px_follow(name, to, sizeof(to));
        if (rc == 1)
            return REAL(open)(to, flags);
        if (!rc)
            rc = px_stat_name(name = to, &st);
    }
    if (!rc && !S_ISDIR(st.st_mode))
        rc = -ENOTDIR;
    if (!rc && ((flags & O_ACCMODE) != O_RDONLY || (flags & O_CREAT)))
        rc = -EISDIR;
    return rc ? px_fail(rc) : px_dir_fd(name, flags);
}

/* Create name's striped file if flags say so, with mode less the umask
 * (0, or a gfs error); *exists: it was there already. */
static int px_create(const char *name, int flags, mode_t mode, bool *exists)
{
    *exists = false;
    if (!(flags & O_CREAT))
        return 0;
    int nserv = gfs_num_servers();
    int nsub = (int)g_config_int(G_CFG_POSIX_SUBFILES); /* 0: unset */
    if (nsub <= 0 || nsub > nserv)
        nsub = nserv;
    int64_t unit = g_config_int(G_CFG_POSIX_UNIT); /* 0: the default */
    int rc = gfs_create_node(
        name, nsub, NULL, unit, NULL,
        &(gfs_node){.mode = S_IFREG | (mode & 07777 & ~px_umask()),
                    .uid = geteuid(),
                    .gid = getegid()});
    *exists = rc == -EEXIST;
    if (*exists && !(flags & O_EXCL))
        rc = 0;
    return rc;
}

static int px_open_depth(const char *name, int flags, mode_t mode, int depth);

/* name's open sid is a symbolic link's: open where it leads instead. */
static int px_open_link(const char *name, int sid, int flags, mode_t mode,
                        int depth)
{
    gfs_striped_close(sid);
    char to[PATH_MAX + 1];
    int rc = (flags & O_NOFOLLOW) || depth > 0
                 ? -ELOOP
                 : px_follow(name, to, sizeof(to));
    if (rc == 1)
        return REAL(open)(to, flags, mode);
    return rc ? px_fail(rc) : px_open_depth(to, flags, mode, depth + 1);
}

/* Open (and maybe create) a Galley file, or open a directory read-only
 * (a path px_name just mapped that ends in "/" must be one); returns a
 * descriptor or -1. */
int px_open(const char *name, int flags, mode_t mode)
{
    return px_open_depth(name, flags, mode, 0);
}

/* (depth: links followed to here) */
static int px_open_depth(const char *name, int flags, mode_t mode, int depth)
{
    int rc = px_start();
    if (rc)
        return px_fail(rc);
    if (*name == '\0')
        return px_fail(-ENOENT);
    if ((flags & O_DIRECTORY) || px_dir_only)
        return px_open_dir(name, flags);
    int acc = flags & O_ACCMODE;
    int sid;
    bool deferred = false;
    /* Another process may be creating the same name right now (every rank
     * of an MPI job opens with O_CREAT): its reservation answers -EEXIST
     * but the name has no record yet, so the open says -ENOENT.  Try again
     * for up to about two seconds, until its create is done or gone. */
    for (int tries = 0;; tries++) {
        bool exists;
        rc = px_create(name, flags, mode, &exists);
        if (rc)
            return px_fail(rc);
        if ((flags & O_CREAT) && !exists) {
            /* A new file: its open is put off until a call needs it
             * (px_sid), so that a create + close, as mdtest's, costs the
             * create alone and leaves the size it knows in the client's
             * cache for the next stat. */
            sid = -1;
            deferred = true;
            break;
        }
        sid = gfs_striped_open(name);
        if (!(exists && sid == -ENOENT && tries < 200))
            break;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (sid == GFS_ELAYOUT || (sid == -ENOENT && !deferred)) {
        struct stat st;
        if (px_stat_name(name, &st) == 0 && S_ISDIR(st.st_mode))
            return px_open_dir(name, flags);
    }
    if (sid < 0 && !deferred)
        return px_fail(sid);
    if (!deferred) { /* (a file this open made may be opened any way) */
        unsigned perm;
        int64_t uid, gid;
        rc = gfs_striped_mode_owner(sid, &perm, &uid, &gid);
        if (!rc && S_ISLNK(perm))
            return px_open_link(name, sid, flags, mode, depth);
        if (!rc && !S_ISREG(perm)) /* a FIFO, socket or device: kept, not
                                    * served (a mount's kernel serves it) */
            rc = -ENXIO;
        if (!rc)
            rc = px_mode_permits(S_IFREG | (perm & 07777), uid, gid,
                                 acc == O_RDONLY   ? R_OK
                                 : acc == O_WRONLY ? W_OK
                                                   : R_OK | W_OK);
        if (rc) {
            gfs_striped_close(sid);
            return px_fail(rc);
        }
    }
    if (!deferred && (flags & O_TRUNC) && acc != O_RDONLY) {
        rc = gfs_striped_truncate(sid, 0);
        if (rc) {
            gfs_striped_close(sid);
            return px_fail(rc);
        }
    }
    px_file *f = calloc(1, sizeof(*f));
    if (!f) {
        if (sid >= 0)
            gfs_striped_close(sid);
        return px_fail(-ENOMEM);
    }
    f->sid = sid;
    f->flags = flags & (O_ACCMODE | O_APPEND);
    snprintf(f->name, sizeof(f->name), "%s", name);
    return px_new_fd(f, flags);
}

/* ------------------------------------------------------------------------
 * Interposed calls: open family
 * ------------------------------------------------------------------------ */

static mode_t px_va_mode(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE
               ? (mode_t)va_arg(ap, int)
               : 0;
}

/* open (at false) or openat (at true, relative to dirfd): ours by px_open,
 * else the real call with `large` (0 or O_LARGEFILE) added to flags. */
static int px_open_path(bool at, int dirfd, const char *path, int flags,
                        mode_t mode, int large)
{
    const char *name = at ? px_name_at(dirfd, path) : px_name(path);
    if (name && !(px_from_mount && (flags & O_DIRECTORY)))
        return px_open(name, flags, mode);
    return at ? REAL(openat)(dirfd, path, flags | large, mode)
              : REAL(open)(path, flags | large, mode);
}

PX_EXPORT int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = px_va_mode(flags, ap);
    va_end(ap);
    return px_open_path(false, -1, path, flags, mode, 0);
}

PX_EXPORT int open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = px_va_mode(flags, ap);
    va_end(ap);
    return px_open_path(false, -1, path, flags, mode, O_LARGEFILE);
}

PX_EXPORT int __open_2(const char *path, int flags)
{
    return open(path, flags);
}

PX_EXPORT int __open64_2(const char *path, int flags)
{
    return open64(path, flags);
}

PX_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = px_va_mode(flags, ap);
    va_end(ap);
    return px_open_path(true, dirfd, path, flags, mode, 0);
}

PX_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = px_va_mode(flags, ap);
    va_end(ap);
    return px_open_path(true, dirfd, path, flags, mode, O_LARGEFILE);
}

PX_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
    return openat(dirfd, path, flags);
}

PX_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
    return openat64(dirfd, path, flags);
}

PX_EXPORT int creat(const char *path, mode_t mode)
{
    return open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

PX_EXPORT int creat64(const char *path, mode_t mode)
{
    return open64(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

PX_EXPORT int close(int fd)
{
    px_file *f = px_get(fd);
    if (f) {
        px_lock_closing(f); /* POSIX: the process's locks on the file go */
        px_put(f);
        px_forget(fd);
    }
    return REAL(close)(fd);
}

/* ------------------------------------------------------------------------
 * Interposed calls: descriptors
 * ------------------------------------------------------------------------ */

/* After the real call made newfd a copy of oldfd: share oldfd's file. */
static int px_dup_done(px_file *f, int newfd)
{
    if (newfd >= 0) {
        if (newfd < PX_NFD) {
            px_install(newfd, f);
        } else {
            REAL(close)(newfd);
            errno = EMFILE;
            newfd = -1;
        }
    }
    return newfd;
}

PX_EXPORT int dup(int fd)
{
    px_file *f = px_get(fd);
    int nfd = REAL(dup)(fd);
    if (f) {
        nfd = px_dup_done(f, nfd);
        px_put(f);
    }
    return nfd;
}

static int px_dup23(int fd, int nfd, int flags, bool three)
{
    px_file *f = px_get(fd);
    if (fd == nfd && !three) { /* dup2(fd, fd): nothing changes */
        px_put(f);
        return REAL(dup2)(fd, nfd);
    }
    int r = three ? REAL(dup3)(fd, nfd, flags) : REAL(dup2)(fd, nfd);
    if (r >= 0) {
        px_file *old = px_get(r); /* closed by the call: as close() */
        px_lock_closing(old);
        px_put(old);
        if (f)
            px_install(r, f); /* releases what r held */
        else
            px_forget(r); /* r was silently closed: forget our file */
    }
    px_put(f);
    return r;
}

PX_EXPORT int dup2(int fd, int nfd)
{
    return px_dup23(fd, nfd, 0, false);
}

PX_EXPORT int dup3(int fd, int nfd, int flags)
{
    return px_dup23(fd, nfd, flags, true);
}

static int px_fcntl(int fd, int cmd, void *arg)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(fcntl)(fd, cmd, arg);
    int r;
    switch (cmd) {
    case F_DUPFD:
    case F_DUPFD_CLOEXEC:
        r = px_dup_done(f, REAL(fcntl)(fd, cmd, arg));
        break;
    case F_GETFL:
        r = f->flags | O_LARGEFILE;
        break;
    case F_SETFL:
        pthread_mutex_lock(&f->lock);
        f->flags = (f->flags & ~O_APPEND) | ((int)(intptr_t)arg & O_APPEND);
        pthread_mutex_unlock(&f->lock);
        r = 0;
        break;
    case F_GETLK:
    case F_OFD_GETLK:
    case F_SETLK:
    case F_SETLKW:
    case F_OFD_SETLK:
    case F_OFD_SETLKW:
        r = px_lock_fcntl(f, cmd, arg);
        break;
    default: /* F_GETFD, F_SETFD, ...: the descriptor itself */
        r = REAL(fcntl)(fd, cmd, arg);
    }
    px_put(f);
    return r;
}

PX_EXPORT int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return px_fcntl(fd, cmd, arg);
}

PX_EXPORT int fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return px_fcntl(fd, cmd, arg);
}
