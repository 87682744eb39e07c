/*
 * px_lock.c -- locks on Galley descriptors of libgalley-posix.so (see
 * galley_posix.c): fcntl F_SETLK / F_SETLKW / F_GETLK and their OFD
 * variants, lockf and flock, as the servers' POSIX locks
 * (gfs_striped_plock: held by the file's first server, so they hold
 * between processes and hosts, and go when the process dies because its
 * connection does).
 *
 * Owners, as the kernel has them:
 *   - fcntl F_SETLK and lockf locks belong to the process (owner 0): every
 *     descriptor of the file in this process shares them, and closing any
 *     descriptor of the file releases them all (POSIX's rule).  The file
 *     identities (px_file.ino) on which this process may hold such locks
 *     are kept in a small set so that a close of a file that was never
 *     locked costs no request.
 *   - F_OFD_SETLK and flock locks belong to the open file description (a
 *     px_file, shared by dup'ed descriptors: px_file.owner) and go when
 *     its last descriptor is closed.  flock's locks are a space apart from
 * fcntl's, as on Linux.
 *
 * Errors as the kernel's: a conflict is EAGAIN (flock: EWOULDBLOCK, the
 * same), a read lock on a descriptor not open for reading or a write lock
 * on one not open for writing EBADF, a bad type, whence or range EINVAL,
 * an OFD command with l_pid != 0 EINVAL.  Not done: deadlock detection
 * (EDEADLK) and interruption of F_SETLKW by a signal (EINTR).
 *
 * Threads: any.  lockset.lock guards the set and is never held across a
 * request.
 */
#define _GNU_SOURCE
#include "px_internal.h"
#include "px_fsinfo.h"

static struct {
    pthread_mutex_t lock;
    uint64_t *ino;
    size_t n, cap;
} lockset = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t next_owner;

void px_lock_after_fork(void)
{
    pthread_mutex_init(&lockset.lock, NULL); /* the only thread now */
    lockset.n = 0;
}

uint64_t px_lock_new_owner(void)
{
    return __atomic_add_fetch(&next_owner, 1, __ATOMIC_RELAXED);
}

/* This process may now hold fcntl locks on ino. */
static void lockset_add(uint64_t ino)
{
    pthread_mutex_lock(&lockset.lock);
    for (size_t i = 0; i < lockset.n; i++)
        if (lockset.ino[i] == ino)
            goto out;
    if (lockset.n == lockset.cap) {
        size_t cap = lockset.cap ? 2 * lockset.cap : 16;
        uint64_t *p = realloc(lockset.ino, cap * sizeof(*p));
        if (!p)
            goto out; /* the locks then stay until exit or unlock */
        lockset.ino = p;
        lockset.cap = cap;
    }
    lockset.ino[lockset.n++] = ino;
out:
    pthread_mutex_unlock(&lockset.lock);
}

/* Take ino out of the set: true if it was there. */
static bool lockset_take(uint64_t ino)
{
    bool was = false;
    pthread_mutex_lock(&lockset.lock);
    for (size_t i = 0; i < lockset.n; i++)
        if (lockset.ino[i] == ino) {
            lockset.ino[i] = lockset.ino[--lockset.n];
            was = true;
            break;
        }
    pthread_mutex_unlock(&lockset.lock);
    return was;
}

void px_lock_closing(px_file *f)
{
    if (f && !f->dir && lockset_take(f->ino))
        gfs_striped_plock_release(px_sid(f), 0);
}

void px_lock_last(px_file *f)
{
    if (__atomic_load_n(&f->ofd_locked, __ATOMIC_ACQUIRE))
        gfs_striped_plock_release(px_sid(f), f->owner);
}

/* The byte range of fl on f: [*start, *start + *len), len 0 = to the end. */
static int lock_range(px_file *f, const struct flock *fl, int64_t *start,
                      int64_t *len)
{
    int64_t base;
    switch (fl->l_whence) {
    case SEEK_SET:
        base = 0;
        break;
    case SEEK_CUR: {
        pthread_mutex_lock(&f->lock);
        int rc = px_off(f, &base);
        pthread_mutex_unlock(&f->lock);
        if (rc)
            return rc;
        break;
    }
    case SEEK_END:
        base = gfs_striped_size(px_sid(f));
        if (base < 0)
            return (int)base;
        break;
    default:
        return -EINVAL;
    }
    int64_t s, l = fl->l_len;
    if (__builtin_add_overflow(base, (int64_t)fl->l_start, &s))
        return -EOVERFLOW;
    if (l < 0) { /* [start + len, start) */
        if (__builtin_add_overflow(s, l, &s) || l == INT64_MIN)
            return -EINVAL;
        l = -l;
    }
    if (s < 0)
        return -EINVAL;
    *start = s;
    *len = l;
    return 0;
}

int px_lock_fcntl(px_file *f, int cmd, void *arg)
{
    struct flock *fl = arg;
    bool ofd = cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW || cmd == F_OFD_GETLK;
    bool get = cmd == F_GETLK || cmd == F_OFD_GETLK;
    if (!fl)
        return px_fail(-EFAULT);
    if (ofd && fl->l_pid != 0)
        return px_fail(-EINVAL);
    int type;
    switch (fl->l_type) {
    case F_RDLCK:
        type = GFS_PLOCK_SHARED;
        break;
    case F_WRLCK:
        type = GFS_PLOCK_EXCL;
        break;
    case F_UNLCK:
        if (get)
            return px_fail(-EINVAL);
        type = GFS_PLOCK_UNLOCK;
        break;
    default:
        return px_fail(-EINVAL);
    }
    int acc = f->flags & O_ACCMODE;
    if (!get && ((type == GFS_PLOCK_SHARED && acc == O_WRONLY) ||
                 (type == GFS_PLOCK_EXCL && acc == O_RDONLY)))
        return px_fail(-EBADF);
    gfs_plock lk = {.owner = ofd ? f->owner : 0,
                    .type = type,
                    .pid = ofd ? -1 : (int32_t)getpid()};
    int rc = lock_range(f, fl, &lk.start, &lk.len);
    if (rc)
        return px_fail(rc);
    if (get) {
        rc = px_plock_getlk(px_sid(f), &lk, fl);
        return rc ? px_fail(rc) : 0;
    }
    bool wait = cmd == F_SETLKW || cmd == F_OFD_SETLKW;
    rc = gfs_striped_plock(px_sid(f), &lk, wait ? GFS_PLOCK_WAIT : 0);
    if (rc)
        return px_fail(rc);
    if (type != GFS_PLOCK_UNLOCK) {
        if (ofd)
            __atomic_store_n(&f->ofd_locked, true, __ATOMIC_RELEASE);
        else
            lockset_add(f->ino);
    }
    return 0;
}

/* ------------------------------------------------------------------------
 * Interposed calls
 * ------------------------------------------------------------------------ */

PX_EXPORT int flock(int fd, int op)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(flock)(fd, op);
    int type, flags = GFS_PLOCK_WHOLE;
    switch (op & ~LOCK_NB) {
    case LOCK_SH:
        type = GFS_PLOCK_SHARED;
        break;
    case LOCK_EX:
        type = GFS_PLOCK_EXCL;
        break;
    case LOCK_UN:
        type = GFS_PLOCK_UNLOCK;
        break;
    default:
        px_put(f);
        return px_fail(-EINVAL);
    }
    if (!(op & LOCK_NB))
        flags |= GFS_PLOCK_WAIT;
    gfs_plock lk = {.owner = f->owner, .type = type, .pid = -1};
    int rc = gfs_striped_plock(px_sid(f), &lk, flags);
    if (!rc && type != GFS_PLOCK_UNLOCK)
        __atomic_store_n(&f->ofd_locked, true, __ATOMIC_RELEASE);
    px_put(f);
    return rc ? px_fail(rc) : 0;
}

/* glibc's lockf calls its own fcntl, which we cannot see: the same here
 * through ours. */
static int px_lockf(int fd, int cmd, int64_t len)
{
    struct flock fl = {.l_whence = SEEK_CUR, .l_start = 0, .l_len = len};
    switch (cmd) {
    case F_TEST:
        fl.l_type = F_RDLCK;
        if (fcntl(fd, F_GETLK, &fl) < 0)
            return -1;
        if (fl.l_type == F_UNLCK || fl.l_pid == getpid())
            return 0;
        errno = EACCES;
        return -1;
    case F_ULOCK:
        fl.l_type = F_UNLCK;
        return fcntl(fd, F_SETLK, &fl);
    case F_LOCK:
        fl.l_type = F_WRLCK;
        return fcntl(fd, F_SETLKW, &fl);
    case F_TLOCK:
        fl.l_type = F_WRLCK;
        return fcntl(fd, F_SETLK, &fl);
    }
    errno = EINVAL;
    return -1;
}

PX_EXPORT int lockf(int fd, int cmd, off_t len)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(lockf)(fd, cmd, len);
    px_put(f);
    return px_lockf(fd, cmd, len);
}

PX_EXPORT int lockf64(int fd, int cmd, off64_t len)
{
    return lockf(fd, cmd, len);
}
