/*
 * galley_posix.c -- libgalley-posix.so: POSIX and stdio calls on names
 * beginning with "galley:" go to Galley striped files; everything else goes
 * to libc untouched.  Loaded with LD_PRELOAD (`galley exec -- CMD ...`).
 *
 * How it works
 *   - Every interposed call first decides whether it is ours: a path that
 *     starts with "galley:" (the rest is the Galley name, exactly what the
 *     MPI-IO driver gets for the same string) or a descriptor in our table.
 *     Anything else goes straight to the next definition (dlsym RTLD_NEXT),
 *     so programs that never name a galley: file see libc unchanged.
 *   - A Galley descriptor is a real descriptor: open() opens an O_PATH
 *     descriptor (px_inherit.c: of a removed symbolic link naming the file,
 *     so a program after exec finds it; a directory's is /dev/null's) with
 *     the caller's O_CLOEXEC and keeps the number it got, so numbers never
 *     clash with the program's own files or those of libraries that
 *     bypass us.  Every data call the kernel
 *     sees on an O_PATH descriptor (read, write, mmap, splice, ioctl, ...)
 *     fails with EBADF: a call this library misses, or one a library makes
 *     through glibc's internal symbols, fails loudly instead of moving
 *     nothing (px_copy.c and px_data.c serve every descriptor call of
 *     glibc's that moves data; posix-tests/test_entry_points.py checks
 *     them all against glibc's symbol table).  The table maps the number
 *     to a px_file: the striped id, access mode, and the file offset,
 *     shared by dup'ed descriptors as POSIX requires.
 *   - A directory opened (open/openat of a Galley directory, opendir) is a
 *     descriptor too (px_file.dir): the *at calls resolve relative names
 *     under it, fdopendir lists it, so programs that walk a tree by
 *     descriptor (find, rm -r, cp -r) work.  A directory made with mkdir
 *     is kept by a marker name (px_dir.c) while it is empty.
 *   - A file made by open(O_CREAT) is opened for I/O at the first call
 *     that needs it (px_sid): a create + close costs the create alone.
 *   - Data moves with gfs_striped_read/write (one transfer per server, no
 *     client cache), so after write() returns the bytes are visible to the
 *     MPI-IO driver, a mount, and other processes; fsync is gfs_striped_sync.
 *   - stdio: glibc's fopen/fdopen reach open() through internal symbols we
 *     cannot see, so those two are interposed and return a fopencookie()
 *     stream over our descriptor; fread/fwrite/fgets/fputs/fprintf/fseek/
 *     ftell/fflush/fclose then work on it unchanged, and fileno() is
 *     interposed to give the descriptor back.
 *   - Locks (fcntl F_SETLK/F_SETLKW/F_GETLK and the OFD variants, lockf,
 *     flock) on Galley descriptors are the servers' POSIX locks
 *     (gfs_striped_plock, px_lock.c), so they hold between processes and
 *     hosts; never the kernel's: every /dev/null descriptor shares one
 *     inode, so passing them through would make unrelated processes
 *     conflict.
 *   - The client starts (gfs_init, $GALLEY_CLUSTER) at the first galley:
 *     name and is never finalised: nothing is buffered here, so a program
 *     that exits without running atexit handlers loses nothing.
 *   - fork(): a child without exec uses its inherited Galley descriptors
 *     and opens more, over connections of its own (libgalley makes them at
 *     its first request); the fcntl locks stay the parent's, as POSIX says,
 *     and so do OFD and flock locks (Linux would share those).  After exec
 *     the preload starts afresh (LD_PRELOAD is inherited) and adopts the
 *     Galley descriptors it inherited (px_inherit.c).  A write-only file
 *     held at a fork writes next at its end in both processes
 *     (px_fork_offsets).
 *   - glibc's stdin/stdout/stderr over a Galley file at descriptor 0-2 (a
 *     shell's redirection) are swapped for a stream of ours (px_stdio.c).
 *
 * Errors: negative errno values from libgalley become that errno; a dead or
 * unreachable server (GFS_ESERVERDOWN, GFS_ETIMEDOUT) becomes EIO, within
 * the client timeout (GALLEY_TIMEOUT).
 *
 * Threads: any.  px_lock guards the descriptor table and reference counts
 * and is never held across a network call; each px_file's lock guards its
 * offset (held across the I/O of read/write so that concurrent read()s on
 * one descriptor see distinct offsets, as POSIX requires).
 *
 * Files: this one (the next definitions, the descriptor table, starting
 * the client, errors); px_path.c (which paths are ours); px_open.c (open,
 * close, dup, fcntl); px_lock.c (fcntl locks, lockf, flock); px_data.c (read,
 * write, seek, truncate, sync); px_copy.c (copy_file_range, sendfile,
 * splice, fallocate); px_sys.c (syscall(), ioctl); px_names.c (stat, access,
 * unlink, rename, xattr); px_dir.c (opendir, fdopendir, readdir, mkdir,
 * rmdir); px_stdio.c (fopen,
 * fdopen, fileno); px_mmap.c (mmap, munmap, msync, mremap).
 * px_internal.h declares what they share.
 */
#define _GNU_SOURCE
#include "px_internal.h"

#include "fnv.h"

/* ------------------------------------------------------------------------
 * The next definitions of what we interpose
 * ------------------------------------------------------------------------ */

#define PX_X_PTR(name, ret, args) ret(*real_##name) args;
PX_REAL_TABLE(PX_X_PTR)
#undef PX_X_PTR

pthread_once_t px_resolve_once = PTHREAD_ONCE_INIT;

void px_resolve(void)
{
#define PX_X_SYM(name, ret, args)                                              \
    real_##name = (ret(*) args)dlsym(RTLD_NEXT, #name);
    PX_REAL_TABLE(PX_X_SYM)
#undef PX_X_SYM
}

/* ------------------------------------------------------------------------
 * Descriptor table
 * ------------------------------------------------------------------------ */

static pthread_mutex_t px_lock = PTHREAD_MUTEX_INITIALIZER;
px_file *px_fds[PX_NFD];

/* Client state: 0 not started, 1 running, <0 gfs_init's error. */
static int px_client;
static pthread_mutex_t px_client_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t px_sid_lock = PTHREAD_MUTEX_INITIALIZER; /* px_sid */
static pthread_once_t px_atfork_once = PTHREAD_ONCE_INIT;
static int px_fd_top; /* one past the highest descriptor installed */

/* After fork(), in both processes: each write-only file (not O_APPEND)
 * they both hold writes next at the file's end, where the other may have
 * written (a shell's `exec 3> F; cmd >&3; echo x >&3`): each process
 * keeps an offset of its own, where POSIX would have them share one. */
static void px_fork_offsets(void)
{
    int top = __atomic_load_n(&px_fd_top, __ATOMIC_ACQUIRE);
    for (int fd = 0; fd < top; fd++) {
        px_file *f = __atomic_load_n(&px_fds[fd], __ATOMIC_ACQUIRE);
        if (f && !f->dir && (f->flags & O_ACCMODE) == O_WRONLY &&
            !(f->flags & O_APPEND))
            __atomic_store_n(&f->off_end, true, __ATOMIC_RELEASE);
    }
}

static void px_after_fork_parent(void)
{
    pthread_mutex_lock(&px_lock); /* (no file freed meanwhile) */
    px_fork_offsets();
    pthread_mutex_unlock(&px_lock);
}

/* A child after fork() goes on with the descriptors it inherited and
 * opens more: libgalley gives it connections of its own (lifecycle.c).
 * Locks another thread of the parent held are made anew here (this is
 * the only thread), and the child holds none of the parent's fcntl
 * locks. */
static void px_after_fork_child(void)
{
    pthread_mutex_init(&px_lock, NULL);
    pthread_mutex_init(&px_client_lock, NULL);
    pthread_mutex_init(&px_sid_lock, NULL);
    px_lock_after_fork();
    px_fork_offsets();
}

static void px_register_atfork(void)
{
    pthread_atfork(NULL, px_after_fork_parent, px_after_fork_child);
}

/* gfs error -> errno. */
int px_errno(int64_t rc)
{
    if (rc > -1000)
        return (int)-rc;
    switch ((int)rc) {
    case GFS_EBADID:
        return EBADF;
    case GFS_ESTALE:
        return ESTALE;
    case GFS_ETOOBIG:
        return EFBIG;
    case GFS_ELAYOUT:
        return EOPNOTSUPP;
    case GFS_EBUSY:
        return EBUSY;
    default: /* server down, timeout, protocol, no cluster */
        return EIO;
    }
}

/* Set errno from a gfs error and return -1. */
int px_fail(int64_t rc)
{
    errno = px_errno(rc);
    return -1;
}

/* Start the client once; 0 or a gfs error.  A failure is reported on
 * stderr once (the caller still sees EIO). */
int px_start(void)
{
    if (__atomic_load_n(&px_client, __ATOMIC_ACQUIRE) == 1)
        return 0; /* running: every call after the first */
    pthread_once(&px_atfork_once, px_register_atfork);
    pthread_mutex_lock(&px_client_lock);
    if (px_client == 0) {
        int rc = gfs_init(NULL);
        __atomic_store_n(&px_client, rc < 0 ? rc : 1, __ATOMIC_RELEASE);
        if (rc < 0)
            fprintf(stderr,
                    "libgalley-posix: cannot start the galley "
                    "client: %s\n",
                    gfs_strerror(rc));
    }
    int rc = px_client < 0 ? px_client : 0;
    pthread_mutex_unlock(&px_client_lock);
    return rc;
}

/* Get a reference to fd's file (NULL if fd is not ours); px_put releases. */
px_file *px_get(int fd)
{
    if (fd < 0 || fd >= PX_NFD)
        return NULL;
    if (!__atomic_load_n(&px_fds[fd], __ATOMIC_ACQUIRE))
        return NULL;
    pthread_mutex_lock(&px_lock);
    px_file *f = px_fds[fd];
    if (f)
        f->refs++;
    pthread_mutex_unlock(&px_lock);
    return f;
}

void px_hold(px_file *f)
{
    pthread_mutex_lock(&px_lock);
    f->refs++;
    pthread_mutex_unlock(&px_lock);
}

void px_put(px_file *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&px_lock);
    int left = --f->refs;
    pthread_mutex_unlock(&px_lock);
    if (left == 0) {
        if (f->sid >= 0) {
            px_lock_last(f);
            gfs_striped_close(f->sid);
        }
        pthread_mutex_destroy(&f->lock);
        free(f);
    }
}

/* f's striped file id, opening the file now if its open was put off (a
 * file this process has just made: px_open); a gfs error if that fails,
 * -1 for a directory. */
int px_sid(px_file *f)
{
    int sid = __atomic_load_n(&f->sid, __ATOMIC_ACQUIRE);
    if (sid >= 0 || f->dir)
        return sid;
    pthread_mutex_lock(&px_sid_lock);
    sid = f->sid;
    if (sid < 0) {
        /* (a descriptor inherited across exec: the client may not run) */
        sid = px_start();
        if (!sid)
            sid = gfs_striped_open(f->name);
        if (sid >= 0)
            __atomic_store_n(&f->sid, sid, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&px_sid_lock);
    return sid;
}

/* Point descriptor fd at f (taking a reference); whatever fd held before
 * is released. */
void px_install(int fd, px_file *f)
{
    if (fd <= 2)
        px_std_attach(fd, f->flags); /* (before: old's bytes go to old) */
    pthread_mutex_lock(&px_lock);
    px_file *old = px_fds[fd];
    f->refs++;
    __atomic_store_n(&px_fds[fd], f, __ATOMIC_RELEASE);
    if (fd >= px_fd_top)
        __atomic_store_n(&px_fd_top, fd + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&px_lock);
    px_put(old);
}

/* Forget descriptor fd (no-op if not ours). */
void px_forget(int fd)
{
    if (fd < 0 || fd >= PX_NFD)
        return;
    if (fd <= 2 && px_fds_has(fd))
        px_std_detach(fd); /* its bytes to the file still installed */
    pthread_mutex_lock(&px_lock);
    px_file *old = px_fds[fd];
    __atomic_store_n(&px_fds[fd], NULL, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&px_lock);
    px_put(old);
}

uint64_t px_hash(const char *s)
{
    uint64_t h = g_fnv1a(s);
    return h ? h : 1;
}
