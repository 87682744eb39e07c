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
 *   - A Galley descriptor is a real descriptor: open() opens /dev/null with
 *     the caller's O_CLOEXEC and keeps the number it got, so numbers never
 *     clash with the program's own files or those of libraries that bypass
 *     us (select, poll and close of it are harmless).  The table maps the
 *     number to a gp_file: the striped id, access mode, and the file offset,
 *     shared by dup'ed descriptors as POSIX requires.
 *   - Data moves with gfs_striped_read/write (one transfer per server, no
 *     client cache), so after write() returns the bytes are visible to the
 *     MPI-IO driver, a mount, and other processes; fsync is gfs_striped_sync.
 *   - stdio: glibc's fopen/fdopen reach open() through internal symbols we
 *     cannot see, so those two are interposed and return a fopencookie()
 *     stream over our descriptor; fread/fwrite/fgets/fputs/fprintf/fseek/
 *     ftell/fflush/fclose then work on it unchanged, and fileno() is
 *     interposed to give the descriptor back.
 *   - Locks (flock, fcntl F_SETLK...) on Galley descriptors succeed without
 *     locking: every /dev/null descriptor shares one inode, so passing them
 *     through would make unrelated processes conflict.
 *   - The client starts (gfs_init, $GALLEY_CLUSTER) at the first galley:
 *     name and is never finalised: nothing is buffered here, so a program
 *     that exits without running atexit handlers loses nothing.
 *   - fork(): a child without exec shares the parent's server connections,
 *     so in such a child (of a parent that had started the client) Galley
 *     calls fail with EIO instead of corrupting them; after exec the
 *     preload starts afresh (LD_PRELOAD is inherited).
 *
 * Errors: negative errno values from libgalley become that errno; a dead or
 * unreachable server (GFS_ESERVERDOWN, GFS_ETIMEDOUT) becomes EIO, within
 * the client timeout (GALLEY_TIMEOUT).
 *
 * Threads: any.  gp_lock guards the descriptor table and reference counts
 * and is never held across a network call; each gp_file's lock guards its
 * offset (held across the I/O of read/write so that concurrent read()s on
 * one descriptor see distinct offsets, as POSIX requires).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "galley.h"
#include "gp_rename.h"

#define GP_PREFIX "galley:"
#define GP_PREFIX_LEN 7
#define GP_NFD 65536 /* descriptors we can track */
#define GP_DEV 0x67616cULL

#define GP_EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------------
 * The next definitions of what we interpose
 * ------------------------------------------------------------------------ */

#define GP_REAL_TABLE(X)                                                       \
    X(open, int, (const char *, int, ...))                                     \
    X(openat, int, (int, const char *, int, ...))                              \
    X(close, int, (int))                                                       \
    X(read, ssize_t, (int, void *, size_t))                                    \
    X(write, ssize_t, (int, const void *, size_t))                             \
    X(pread, ssize_t, (int, void *, size_t, off_t))                            \
    X(pwrite, ssize_t, (int, const void *, size_t, off_t))                     \
    X(readv, ssize_t, (int, const struct iovec *, int))                        \
    X(writev, ssize_t, (int, const struct iovec *, int))                       \
    X(lseek, off_t, (int, off_t, int))                                         \
    X(fstat, int, (int, struct stat *))                                        \
    X(stat, int, (const char *, struct stat *))                                \
    X(lstat, int, (const char *, struct stat *))                               \
    X(fstatat, int, (int, const char *, struct stat *, int))                   \
    X(statx, int, (int, const char *, int, unsigned, struct statx *))          \
    X(__fxstat, int, (int, int, struct stat *))                                \
    X(__xstat, int, (int, const char *, struct stat *))                        \
    X(__lxstat, int, (int, const char *, struct stat *))                       \
    X(__fxstatat, int, (int, int, const char *, struct stat *, int))           \
    X(access, int, (const char *, int))                                        \
    X(faccessat, int, (int, const char *, int, int))                           \
    X(unlink, int, (const char *))                                             \
    X(unlinkat, int, (int, const char *, int))                                 \
    X(remove, int, (const char *))                                             \
    X(rename, int, (const char *, const char *))                               \
    X(renameat, int, (int, const char *, int, const char *))                   \
    X(renameat2, int, (int, const char *, int, const char *, unsigned))        \
    X(getxattr, ssize_t, (const char *, const char *, void *, size_t))         \
    X(lgetxattr, ssize_t, (const char *, const char *, void *, size_t))        \
    X(listxattr, ssize_t, (const char *, char *, size_t))                      \
    X(llistxattr, ssize_t, (const char *, char *, size_t))                     \
    X(ftruncate, int, (int, off_t))                                            \
    X(truncate, int, (const char *, off_t))                                    \
    X(fsync, int, (int))                                                       \
    X(fdatasync, int, (int))                                                   \
    X(dup, int, (int))                                                         \
    X(dup2, int, (int, int))                                                   \
    X(dup3, int, (int, int, int))                                              \
    X(fcntl, int, (int, int, ...))                                             \
    X(flock, int, (int, int))                                                  \
    X(copy_file_range, ssize_t,                                                \
      (int, off64_t *, int, off64_t *, size_t, unsigned))                      \
    X(sendfile, ssize_t, (int, int, off_t *, size_t))                          \
    X(fopen, FILE *, (const char *, const char *))                             \
    X(fdopen, FILE *, (int, const char *))                                     \
    X(fileno, int, (FILE *))                                                   \
    X(opendir, DIR *, (const char *))                                          \
    X(readdir, struct dirent *, (DIR *))                                       \
    X(readdir64, struct dirent64 *, (DIR *))                                   \
    X(closedir, int, (DIR *))                                                  \
    X(dirfd, int, (DIR *))                                                     \
    X(rewinddir, void, (DIR *))

#define GP_X_PTR(name, ret, args) static ret(*real_##name) args;
GP_REAL_TABLE(GP_X_PTR)
#undef GP_X_PTR

static pthread_once_t gp_resolve_once = PTHREAD_ONCE_INIT;

static void gp_resolve(void)
{
#define GP_X_SYM(name, ret, args)                                              \
    real_##name = (ret(*) args)dlsym(RTLD_NEXT, #name);
    GP_REAL_TABLE(GP_X_SYM)
#undef GP_X_SYM
}

/* Every wrapper calls this before using a real_* pointer (a constructor of
 * another library may call us before ours runs). */
#define REAL(name) (pthread_once(&gp_resolve_once, gp_resolve), real_##name)

/* A wrapper whose libc has no such symbol (e.g. __fxstat on a newer glibc)
 * is never called through it; guard anyway. */
#define HAVE_REAL(name) (REAL(name) != NULL)

/* ------------------------------------------------------------------------
 * Descriptor table
 * ------------------------------------------------------------------------ */

typedef struct gp_file {
    int refs; /* descriptors pointing here + calls in progress (gp_lock) */
    int sid;
    int flags; /* O_ACCMODE bits and O_APPEND */
    int64_t off;
    uint64_t ino;
    pthread_mutex_t lock; /* guards off */
    char name[GFS_NAME_MAX + 1];
} gp_file;

static pthread_mutex_t gp_lock = PTHREAD_MUTEX_INITIALIZER;
static gp_file *gp_fds[GP_NFD];

/* Client state: 0 not started, 1 running, <0 gfs_init's error. */
static int gp_client;
static pthread_mutex_t gp_client_lock = PTHREAD_MUTEX_INITIALIZER;
static bool gp_forked; /* child of a parent whose client was running */
static pthread_once_t gp_atfork_once = PTHREAD_ONCE_INIT;

static void gp_after_fork_child(void)
{
    if (gp_client == 1)
        gp_forked = true;
}

static void gp_register_atfork(void)
{
    pthread_atfork(NULL, NULL, gp_after_fork_child);
}

/* gfs error -> errno. */
static int gp_errno(int64_t rc)
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
static int gp_fail(int64_t rc)
{
    errno = gp_errno(rc);
    return -1;
}

/* Start the client once; 0 or a gfs error.  A failure is reported on
 * stderr once (the caller still sees EIO). */
static int gp_start(void)
{
    if (gp_forked)
        return GFS_ESERVERDOWN;
    pthread_once(&gp_atfork_once, gp_register_atfork);
    pthread_mutex_lock(&gp_client_lock);
    if (gp_client == 0) {
        int rc = gfs_init(NULL);
        gp_client = rc < 0 ? rc : 1;
        if (rc < 0)
            fprintf(stderr,
                    "libgalley-posix: cannot start the galley "
                    "client: %s\n",
                    gfs_strerror(rc));
    }
    int rc = gp_client < 0 ? gp_client : 0;
    pthread_mutex_unlock(&gp_client_lock);
    return rc;
}

/* Local directories mapped onto Galley names (GALLEY_POSIX_MOUNTS, a
 * comma-separated list of LOCALDIR=GALLEYDIR, or LOCALDIR alone for the
 * same name in both): a program that strips "galley:" from a name, or a
 * galley mount's directory, still reaches the same Galley file. */
#define GP_NMOUNTS 16
static struct {
    char local[PATH_MAX];
    size_t llen;
    char galley[GFS_NAME_MAX + 1];
    bool fuse; /* a galley mount's directory */
} gp_mounts[GP_NMOUNTS];
static int gp_nmounts;
static pthread_once_t gp_mounts_once = PTHREAD_ONCE_INIT;

static void gp_strip_slashes(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == '/')
        s[--n] = '\0';
}

/* The cluster file libgalley will use (its own search order). */
static const char *gp_cluster_path(char *buf, size_t len)
{
    const char *env = getenv("GALLEY_CLUSTER");
    if (env && *env)
        return env;
    const char *home = getenv("HOME");
    if (home) {
        snprintf(buf, len, "%s/.galley/cluster", home);
        if (REAL(access)(buf, R_OK) == 0)
            return buf;
    }
    return "/etc/galley/cluster";
}

/* `galley mount`s of our own cluster (source "galley:<cluster file>",
 * type fuse.galley): paths under them go to Galley directly. */
static void gp_read_fuse_mounts(void)
{
    char buf[PATH_MAX], mine[PATH_MAX];
    if (!realpath(gp_cluster_path(buf, sizeof(buf)), mine))
        return;
    FILE *f = REAL(fopen)("/proc/self/mounts", "re");
    if (!f)
        return;
    char line[2 * PATH_MAX + 256], src[PATH_MAX + 16], dir[PATH_MAX], type[64];
    while (gp_nmounts < GP_NMOUNTS && fgets(line, sizeof(line), f)) {
        if (sscanf(line, "%4111s %4095s %63s", src, dir, type) != 3 ||
            strcmp(type, "fuse.galley") != 0 ||
            strncmp(src, GP_PREFIX, GP_PREFIX_LEN) != 0 ||
            strcmp(src + GP_PREFIX_LEN, mine) != 0 || dir[0] != '/' ||
            strchr(dir, '\\'))
            continue; /* not ours, or an escaped (unusual) name */
        int i = gp_nmounts++;
        snprintf(gp_mounts[i].local, sizeof(gp_mounts[i].local), "%s", dir);
        gp_strip_slashes(gp_mounts[i].local);
        gp_mounts[i].llen = strlen(gp_mounts[i].local);
        gp_mounts[i].galley[0] = '\0';
        gp_mounts[i].fuse = true;
    }
    fclose(f);
}

static void gp_read_mounts(void)
{
    const char *env = getenv("GALLEY_POSIX_MOUNTS");
    if (getenv("GALLEY_POSIX_NO_MOUNTS") == NULL)
        gp_read_fuse_mounts();
    if (!env)
        return;
    char *copy = strdup(env), *save = NULL;
    for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL;
         tok && gp_nmounts < GP_NMOUNTS; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (eq)
            *eq = '\0';
        const char *g = eq ? eq + 1 : tok;
        if (tok[0] != '/' || strlen(tok) >= PATH_MAX ||
            strlen(g) > GFS_NAME_MAX)
            continue; /* only absolute local directories */
        int i = gp_nmounts++;
        snprintf(gp_mounts[i].local, sizeof(gp_mounts[i].local), "%s", tok);
        gp_strip_slashes(gp_mounts[i].local);
        gp_mounts[i].llen = strlen(gp_mounts[i].local);
        snprintf(gp_mounts[i].galley, sizeof(gp_mounts[i].galley), "%s", g);
        gp_strip_slashes(gp_mounts[i].galley);
    }
    free(copy);
}

/* `name` with "." and ".." components and trailing slashes resolved as a
 * path would be (".." stops at the root), in buf (GFS_NAME_MAX + 2 bytes)
 * when anything changes, else name itself.  Repeated slashes are kept: the
 * MPI-IO driver takes "galley:/a//b" literally, and the same string must
 * reach the same file both ways. */
static const char *gp_clean(const char *name, char *buf)
{
    size_t len = strlen(name);
    if (!strstr(name, "/./") && !strstr(name, "/../") &&
        strncmp(name, "./", 2) != 0 && strncmp(name, "../", 3) != 0 &&
        !(len >= 2 && name[len - 1] == '/') &&
        !(len >= 2 && strcmp(name + len - 2, "/.") == 0) &&
        !(len >= 3 && strcmp(name + len - 3, "/..") == 0) &&
        strcmp(name, ".") != 0 && strcmp(name, "..") != 0)
        return name; /* the common case: nothing to do */
    size_t o = 0, cap = GFS_NAME_MAX + 1, root = strspn(name, "/");
    memcpy(buf, name, root < cap ? root : cap);
    o = root < cap ? root : cap;
    for (const char *c = name + root; *c && o < cap;) {
        size_t seps = strspn(c, "/");
        c += seps;
        size_t n = strcspn(c, "/");
        if (n == 0)
            break;
        if (n == 1 && c[0] == '.') {
            /* nothing */
        } else if (n == 2 && c[0] == '.' && c[1] == '.') {
            while (o > root && buf[o - 1] != '/')
                o--; /* the component */
            while (o > root && buf[o - 1] == '/')
                o--; /* the slashes before it */
        } else {
            size_t k = o > root ? (seps ? seps : 1) : 0;
            while (k-- && o < cap)
                buf[o++] = '/';
            for (k = 0; k < n && o < cap; k++)
                buf[o++] = c[k];
        }
        c += n;
    }
    buf[o] = '\0'; /* o <= cap: a name too long stays too long */
    return buf;
}

/* The Galley name of a path, or NULL if the path is not ours: "galley:"
 * and the rest (exactly the name the MPI-IO driver gets for the same
 * string), or a path under a GALLEY_POSIX_MOUNTS directory.  Mapped names
 * are built in a small per-thread ring of buffers (a call needs two at
 * most).  "." and ".." components are resolved (gp_clean). */
static __thread bool gp_from_mount; /* gp_name's last answer was a mount's */

static const char *gp_name(const char *path)
{
    static __thread char ring[4][GFS_NAME_MAX + 2];
    static __thread unsigned next;
    gp_from_mount = false;
    if (!path)
        return NULL;
    if (strncmp(path, GP_PREFIX, GP_PREFIX_LEN) == 0)
        return gp_clean(path + GP_PREFIX_LEN, ring[next++ % 4]);
    if (path[0] != '/')
        return NULL;
    pthread_once(&gp_mounts_once, gp_read_mounts);
    for (int i = 0; i < gp_nmounts; i++) {
        size_t l = gp_mounts[i].llen;
        if (strncmp(path, gp_mounts[i].local, l) != 0 ||
            (path[l] != '/' && path[l] != '\0'))
            continue;
        char *buf = ring[next++ % 4];
        if ((size_t)snprintf(buf, GFS_NAME_MAX + 2, "%s%s", gp_mounts[i].galley,
                             path + l) > GFS_NAME_MAX)
            buf[GFS_NAME_MAX + 1] = '\0'; /* too long: the server refuses */
        gp_from_mount = gp_mounts[i].fuse;
        return gp_clean(buf, ring[next++ % 4]);
    }
    return NULL;
}

/* Get a reference to fd's file (NULL if fd is not ours); gp_put releases. */
static gp_file *gp_get(int fd)
{
    if (fd < 0 || fd >= GP_NFD)
        return NULL;
    if (!__atomic_load_n(&gp_fds[fd], __ATOMIC_ACQUIRE))
        return NULL;
    pthread_mutex_lock(&gp_lock);
    gp_file *f = gp_fds[fd];
    if (f)
        f->refs++;
    pthread_mutex_unlock(&gp_lock);
    return f;
}

static void gp_put(gp_file *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&gp_lock);
    int left = --f->refs;
    pthread_mutex_unlock(&gp_lock);
    if (left == 0) {
        if (!gp_forked)
            gfs_striped_close(f->sid);
        pthread_mutex_destroy(&f->lock);
        free(f);
    }
}

/* Point descriptor fd at f (taking a reference); whatever fd held before
 * is released. */
static void gp_install(int fd, gp_file *f)
{
    pthread_mutex_lock(&gp_lock);
    gp_file *old = gp_fds[fd];
    f->refs++;
    __atomic_store_n(&gp_fds[fd], f, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&gp_lock);
    gp_put(old);
}

/* Forget descriptor fd (no-op if not ours). */
static void gp_forget(int fd)
{
    if (fd < 0 || fd >= GP_NFD)
        return;
    pthread_mutex_lock(&gp_lock);
    gp_file *old = gp_fds[fd];
    __atomic_store_n(&gp_fds[fd], NULL, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&gp_lock);
    gp_put(old);
}

static uint64_t gp_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h ? h : 1;
}

/* ------------------------------------------------------------------------
 * Names: stat, open, unlink, rename
 * ------------------------------------------------------------------------ */

static int gp_env_int(const char *var, int dflt)
{
    const char *v = getenv(var);
    return v && *v ? atoi(v) : dflt;
}

static int gp_any_file(const char *name, void *arg)
{
    (void)name;
    (void)arg;
    return 1;
}

/* Is `name` an implied directory (a prefix "name/" of some file, or the
 * root)?  1 yes, 0 no, negative error. */
static int gp_is_dir(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || strcmp(name, "/") == 0)
        return 1;
    char prefix[GFS_NAME_MAX + 2];
    if (n > GFS_NAME_MAX)
        return 0;
    memcpy(prefix, name, n);
    if (prefix[n - 1] != '/')
        prefix[n++] = '/';
    prefix[n] = '\0';
    int rc = gfs_list_files(prefix, gp_any_file, NULL);
    return rc < 0 ? rc : rc == 1;
}

static struct timespec gp_t0;
static void gp_set_t0(void)
{
    clock_gettime(CLOCK_REALTIME, &gp_t0);
}

static void gp_fill_stat(struct stat *st, const char *name, int64_t size,
                         int64_t unit, bool dir)
{
    memset(st, 0, sizeof(*st));
    st->st_dev = GP_DEV;
    st->st_ino = gp_hash(name);
    st->st_mode = dir ? (S_IFDIR | 0755) : (S_IFREG | 0644);
    st->st_nlink = dir ? 2 : 1;
    st->st_uid = getuid();
    st->st_gid = getgid();
    st->st_size = size;
    st->st_blksize = unit > 0 ? unit : GFS_DEFAULT_STRIPE_UNIT;
    st->st_blocks = (size + 511) / 512;
    /* Galley keeps no times: report one fixed time (this process's first
     * stat), so tools that watch for changes (tar) see none. */
    static pthread_once_t t0_once = PTHREAD_ONCE_INIT;
    pthread_once(&t0_once, gp_set_t0);
    st->st_atim = st->st_mtim = st->st_ctim = gp_t0;
}

/* stat of an open striped file. */
static int gp_stat_sid(int sid, const char *name, struct stat *st)
{
    int64_t size = gfs_striped_size(sid);
    if (size < 0)
        return (int)size;
    gfs_layout lay;
    int rc = gfs_striped_layout(sid, &lay);
    gp_fill_stat(st, name, size, rc == 0 ? lay.unit : 0, false);
    return 0;
}

/* stat by Galley name: a striped file, an implied directory, or -ENOENT. */
static int gp_stat_name(const char *name, struct stat *st)
{
    int rc = gp_start();
    if (rc)
        return rc;
    int sid = *name ? gfs_striped_open(name) : -ENOENT;
    if (sid >= 0) {
        rc = gp_stat_sid(sid, name, st);
        gfs_striped_close(sid);
        return rc;
    }
    if (sid == GFS_ELAYOUT) { /* a plain (non-striped) file */
        gp_fill_stat(st, name, 0, 0, true);
        return 0;
    }
    if (sid != -ENOENT)
        return sid;
    rc = gp_is_dir(name);
    if (rc < 0)
        return rc;
    if (!rc)
        return -ENOENT;
    gp_fill_stat(st, name, 0, 0, true);
    return 0;
}

/* Open (and maybe create) a Galley file; returns a descriptor or -1. */
static int gp_open(const char *name, int flags, mode_t mode)
{
    (void)mode;
    int rc = gp_start();
    if (rc)
        return gp_fail(rc);
    if (*name == '\0')
        return gp_fail(-ENOENT);
    if (flags & O_DIRECTORY)
        return gp_fail(-ENOTDIR);
    int acc = flags & O_ACCMODE;
    if (flags & O_CREAT) {
        int nserv = gfs_num_servers();
        int nsub = gp_env_int("GALLEY_POSIX_SUBFILES", nserv);
        if (nsub <= 0 || nsub > nserv)
            nsub = nserv;
        int64_t unit = gp_env_int("GALLEY_POSIX_UNIT", 0);
        rc = gfs_create_striped(name, nsub, NULL, unit, NULL);
        if (rc == -EEXIST && !(flags & O_EXCL))
            rc = 0;
        if (rc)
            return gp_fail(rc);
    }
    int sid = gfs_striped_open(name);
    if (sid < 0) {
        if (sid == GFS_ELAYOUT || (sid == -ENOENT && gp_is_dir(name) == 1))
            return gp_fail(-EISDIR);
        return gp_fail(sid);
    }
    if ((flags & O_TRUNC) && acc != O_RDONLY) {
        rc = gfs_striped_truncate(sid, 0);
        if (rc) {
            gfs_striped_close(sid);
            return gp_fail(rc);
        }
    }
    gp_file *f = calloc(1, sizeof(*f));
    if (!f) {
        gfs_striped_close(sid);
        return gp_fail(-ENOMEM);
    }
    f->sid = sid;
    f->flags = flags & (O_ACCMODE | O_APPEND);
    f->ino = gp_hash(name);
    snprintf(f->name, sizeof(f->name), "%s", name);
    pthread_mutex_init(&f->lock, NULL);
    int fd = REAL(open)("/dev/null", O_RDWR | (flags & O_CLOEXEC));
    if (fd < 0 || fd >= GP_NFD) {
        int e = fd < 0 ? errno : EMFILE;
        if (fd >= 0)
            REAL(close)(fd);
        gfs_striped_close(sid);
        pthread_mutex_destroy(&f->lock);
        free(f);
        errno = e;
        return -1;
    }
    gp_install(fd, f);
    return fd;
}

static int gp_unlink(const char *name)
{
    int rc = gp_start();
    if (!rc)
        rc = gfs_delete_file(name);
    if (rc == -ENOENT && gp_is_dir(name) == 1)
        rc = -EISDIR;
    return rc ? gp_fail(rc) : 0;
}

/* Both names must be galley: names (see gp_rename.c). */
static int gp_rename(const char *from, const char *to)
{
    int rc = gp_start();
    if (!rc)
        rc = gp_rename_file(from, to);
    return rc ? gp_fail(rc) : 0;
}

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
 * Interposed calls: open family
 * ------------------------------------------------------------------------ */

static mode_t gp_va_mode(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE
               ? (mode_t)va_arg(ap, int)
               : 0;
}

GP_EXPORT int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = gp_va_mode(flags, ap);
    va_end(ap);
    const char *name = gp_name(path);
    if (name)
        return gp_open(name, flags, mode);
    return REAL(open)(path, flags, mode);
}

GP_EXPORT int open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = gp_va_mode(flags, ap);
    va_end(ap);
    const char *name = gp_name(path);
    if (name)
        return gp_open(name, flags, mode);
    return REAL(open)(path, flags | O_LARGEFILE, mode);
}

GP_EXPORT int __open_2(const char *path, int flags)
{
    return open(path, flags);
}

GP_EXPORT int __open64_2(const char *path, int flags)
{
    return open64(path, flags);
}

GP_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = gp_va_mode(flags, ap);
    va_end(ap);
    const char *name = gp_name(path);
    if (name)
        return gp_open(name, flags, mode);
    return REAL(openat)(dirfd, path, flags, mode);
}

GP_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = gp_va_mode(flags, ap);
    va_end(ap);
    const char *name = gp_name(path);
    if (name)
        return gp_open(name, flags, mode);
    return REAL(openat)(dirfd, path, flags | O_LARGEFILE, mode);
}

GP_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
    return openat(dirfd, path, flags);
}

GP_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
    return openat64(dirfd, path, flags);
}

GP_EXPORT int creat(const char *path, mode_t mode)
{
    return open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

GP_EXPORT int creat64(const char *path, mode_t mode)
{
    return open64(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

GP_EXPORT int close(int fd)
{
    if (fd >= 0 && fd < GP_NFD &&
        __atomic_load_n(&gp_fds[fd], __ATOMIC_ACQUIRE))
        gp_forget(fd);
    return REAL(close)(fd);
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
 * Interposed calls: stat family
 * ------------------------------------------------------------------------ */

static int gp_fstat(gp_file *f, struct stat *st)
{
    int rc = gp_forked ? GFS_ESERVERDOWN : gp_stat_sid(f->sid, f->name, st);
    return rc ? gp_fail(rc) : 0;
}

GP_EXPORT int fstat(int fd, struct stat *st)
{
    gp_file *f = gp_get(fd);
    if (!f)
        return REAL(fstat)(fd, st);
    int rc = gp_fstat(f, st);
    gp_put(f);
    return rc;
}

GP_EXPORT int fstat64(int fd, struct stat64 *st)
{
    return fstat(fd, (struct stat *)st);
}

static int gp_stat_path(const char *name, struct stat *st)
{
    int rc = gp_stat_name(name, st);
    return rc ? gp_fail(rc) : 0;
}

/* A galley stat of a path under a galley mount that found nothing: let
 * the mount answer (it also knows directories made with mkdir). */
#define GP_OR_MOUNT(galley_call, real_call)                                    \
    ({                                                                         \
        bool via_mount_ = gp_from_mount;                                       \
        int r_ = (galley_call);                                                \
        if (r_ < 0 && via_mount_ && errno == ENOENT)                           \
            r_ = (real_call);                                                  \
        r_;                                                                    \
    })

GP_EXPORT int stat(const char *path, struct stat *st)
{
    const char *name = gp_name(path);
    return name ? GP_OR_MOUNT(gp_stat_path(name, st), REAL(stat)(path, st))
                : REAL(stat)(path, st);
}

GP_EXPORT int stat64(const char *path, struct stat64 *st)
{
    return stat(path, (struct stat *)st);
}

GP_EXPORT int lstat(const char *path, struct stat *st)
{
    const char *name = gp_name(path);
    return name ? GP_OR_MOUNT(gp_stat_path(name, st), REAL(lstat)(path, st))
                : REAL(lstat)(path, st);
}

GP_EXPORT int lstat64(const char *path, struct stat64 *st)
{
    return lstat(path, (struct stat *)st);
}

GP_EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
    const char *name = gp_name(path);
    if (name)
        return GP_OR_MOUNT(gp_stat_path(name, st),
                           REAL(fstatat)(dirfd, path, st, flags));
    if (*path == '\0' && (flags & AT_EMPTY_PATH)) {
        gp_file *f = gp_get(dirfd);
        if (f) {
            int rc = gp_fstat(f, st);
            gp_put(f);
            return rc;
        }
    }
    return REAL(fstatat)(dirfd, path, st, flags);
}

GP_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st,
                        int flags)
{
    return fstatat(dirfd, path, (struct stat *)st, flags);
}

/* Older glibc's stat entry points (still exported for old binaries). */
GP_EXPORT int __fxstat(int ver, int fd, struct stat *st)
{
    gp_file *f = gp_get(fd);
    if (!f)
        return HAVE_REAL(__fxstat) ? real___fxstat(ver, fd, st)
                                   : REAL(fstat)(fd, st);
    int rc = gp_fstat(f, st);
    gp_put(f);
    return rc;
}

GP_EXPORT int __fxstat64(int ver, int fd, struct stat64 *st)
{
    return __fxstat(ver, fd, (struct stat *)st);
}

GP_EXPORT int __xstat(int ver, const char *path, struct stat *st)
{
    const char *name = gp_name(path);
    if (name)
        return gp_stat_path(name, st);
    return HAVE_REAL(__xstat) ? real___xstat(ver, path, st)
                              : REAL(stat)(path, st);
}

GP_EXPORT int __xstat64(int ver, const char *path, struct stat64 *st)
{
    return __xstat(ver, path, (struct stat *)st);
}

GP_EXPORT int __lxstat(int ver, const char *path, struct stat *st)
{
    const char *name = gp_name(path);
    if (name)
        return gp_stat_path(name, st);
    return HAVE_REAL(__lxstat) ? real___lxstat(ver, path, st)
                               : REAL(lstat)(path, st);
}

GP_EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st)
{
    return __lxstat(ver, path, (struct stat *)st);
}

GP_EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st,
                         int flags)
{
    const char *name = gp_name(path);
    if (name)
        return gp_stat_path(name, st);
    return HAVE_REAL(__fxstatat) ? real___fxstatat(ver, dirfd, path, st, flags)
                                 : REAL(fstatat)(dirfd, path, st, flags);
}

GP_EXPORT int __fxstatat64(int ver, int dirfd, const char *path,
                           struct stat64 *st, int flags)
{
    return __fxstatat(ver, dirfd, path, (struct stat *)st, flags);
}

static void gp_to_statx(const struct stat *st, struct statx *sx)
{
    memset(sx, 0, sizeof(*sx));
    sx->stx_mask = STATX_BASIC_STATS;
    sx->stx_blksize = st->st_blksize;
    sx->stx_nlink = st->st_nlink;
    sx->stx_uid = st->st_uid;
    sx->stx_gid = st->st_gid;
    sx->stx_mode = st->st_mode;
    sx->stx_ino = st->st_ino;
    sx->stx_size = st->st_size;
    sx->stx_blocks = st->st_blocks;
    sx->stx_atime.tv_sec = st->st_atim.tv_sec;
    sx->stx_atime.tv_nsec = st->st_atim.tv_nsec;
    sx->stx_mtime = sx->stx_ctime = sx->stx_atime;
    sx->stx_dev_major = (uint32_t)(GP_DEV >> 8);
    sx->stx_dev_minor = (uint32_t)(GP_DEV & 0xff);
}

GP_EXPORT int statx(int dirfd, const char *path, int flags, unsigned mask,
                    struct statx *sx)
{
    struct stat st;
    const char *name = gp_name(path);
    if (name) {
        bool via_mount = gp_from_mount;
        if (gp_stat_path(name, &st) == 0) {
            gp_to_statx(&st, sx);
            return 0;
        }
        if (via_mount && errno == ENOENT)
            return REAL(statx)(dirfd, path, flags, mask, sx);
        return -1;
    }
    if (*path == '\0' && (flags & AT_EMPTY_PATH)) {
        gp_file *f = gp_get(dirfd);
        if (f) {
            int rc = gp_fstat(f, &st);
            gp_put(f);
            if (!rc)
                gp_to_statx(&st, sx);
            return rc;
        }
    }
    return REAL(statx)(dirfd, path, flags, mask, sx);
}

static int gp_access(const char *name, int amode)
{
    struct stat st;
    if (gp_stat_path(name, &st))
        return -1;
    if ((amode & X_OK) && !S_ISDIR(st.st_mode)) {
        errno = EACCES;
        return -1;
    }
    return 0;
}

GP_EXPORT int access(const char *path, int amode)
{
    const char *name = gp_name(path);
    return name ? GP_OR_MOUNT(gp_access(name, amode), REAL(access)(path, amode))
                : REAL(access)(path, amode);
}

GP_EXPORT int faccessat(int dirfd, const char *path, int amode, int flags)
{
    const char *name = gp_name(path);
    return name ? gp_access(name, amode)
                : REAL(faccessat)(dirfd, path, amode, flags);
}

/* ------------------------------------------------------------------------
 * Interposed calls: names
 * ------------------------------------------------------------------------ */

GP_EXPORT int unlink(const char *path)
{
    const char *name = gp_name(path);
    return name ? gp_unlink(name) : REAL(unlink)(path);
}

GP_EXPORT int unlinkat(int dirfd, const char *path, int flags)
{
    const char *name = gp_name(path);
    if (!name)
        return REAL(unlinkat)(dirfd, path, flags);
    if (flags & AT_REMOVEDIR) { /* implied directories vanish by themselves */
        struct stat st;
        if (gp_stat_path(name, &st))
            return -1;
        errno = S_ISDIR(st.st_mode) ? ENOTEMPTY : ENOTDIR;
        return -1;
    }
    return gp_unlink(name);
}

GP_EXPORT int remove(const char *path)
{
    const char *name = gp_name(path);
    return name ? gp_unlink(name) : REAL(remove)(path);
}

static int gp_rename_paths(const char *from, const char *to)
{
    const char *a = gp_name(from), *b = gp_name(to);
    if (!a && !b)
        return 1; /* not ours */
    if (!a || !b) {
        errno = EXDEV;
        return -1;
    }
    return gp_rename(a, b);
}

GP_EXPORT int rename(const char *from, const char *to)
{
    int rc = gp_rename_paths(from, to);
    return rc == 1 ? REAL(rename)(from, to) : rc;
}

GP_EXPORT int renameat(int fromfd, const char *from, int tofd, const char *to)
{
    int rc = gp_rename_paths(from, to);
    return rc == 1 ? REAL(renameat)(fromfd, from, tofd, to) : rc;
}

GP_EXPORT int renameat2(int fromfd, const char *from, int tofd, const char *to,
                        unsigned flags)
{
    if (!gp_name(from) && !gp_name(to))
        return REAL(renameat2)(fromfd, from, tofd, to, flags);
    if (flags & ~RENAME_NOREPLACE) {
        errno = EINVAL;
        return -1;
    }
    if ((flags & RENAME_NOREPLACE) && gp_name(to)) {
        struct stat st;
        int rc = gp_stat_name(gp_name(to), &st);
        if (rc != -ENOENT) {
            errno = rc ? gp_errno(rc) : EEXIST;
            return -1;
        }
    }
    return gp_rename_paths(from, to);
}

/* Galley keeps no extended attributes (ls -l asks for ACLs). */
static ssize_t gp_noxattr(const char *name)
{
    struct stat st;
    if (gp_stat_path(name, &st))
        return -1;
    errno = ENODATA;
    return -1;
}

GP_EXPORT ssize_t getxattr(const char *path, const char *key, void *v, size_t n)
{
    const char *name = gp_name(path);
    return name ? gp_noxattr(name) : REAL(getxattr)(path, key, v, n);
}

GP_EXPORT ssize_t lgetxattr(const char *path, const char *key, void *v,
                            size_t n)
{
    const char *name = gp_name(path);
    return name ? gp_noxattr(name) : REAL(lgetxattr)(path, key, v, n);
}

static ssize_t gp_listxattr(const char *name)
{
    struct stat st;
    return gp_stat_path(name, &st) ? -1 : 0;
}

GP_EXPORT ssize_t listxattr(const char *path, char *list, size_t n)
{
    const char *name = gp_name(path);
    return name ? gp_listxattr(name) : REAL(listxattr)(path, list, n);
}

GP_EXPORT ssize_t llistxattr(const char *path, char *list, size_t n)
{
    const char *name = gp_name(path);
    return name ? gp_listxattr(name) : REAL(llistxattr)(path, list, n);
}

/* ------------------------------------------------------------------------
 * Interposed calls: descriptors
 * ------------------------------------------------------------------------ */

/* After the real call made newfd a copy of oldfd: share oldfd's file. */
static int gp_dup_done(gp_file *f, int newfd)
{
    if (newfd >= 0) {
        if (newfd < GP_NFD) {
            gp_install(newfd, f);
        } else {
            REAL(close)(newfd);
            errno = EMFILE;
            newfd = -1;
        }
    }
    return newfd;
}

GP_EXPORT int dup(int fd)
{
    gp_file *f = gp_get(fd);
    int nfd = REAL(dup)(fd);
    if (f) {
        nfd = gp_dup_done(f, nfd);
        gp_put(f);
    }
    return nfd;
}

static int gp_dup23(int fd, int nfd, int flags, bool three)
{
    gp_file *f = gp_get(fd);
    if (fd == nfd && !three) { /* dup2(fd, fd): nothing changes */
        gp_put(f);
        return REAL(dup2)(fd, nfd);
    }
    int r = three ? REAL(dup3)(fd, nfd, flags) : REAL(dup2)(fd, nfd);
    if (r >= 0) {
        if (f)
            gp_install(r, f); /* releases what r held */
        else
            gp_forget(r); /* r was silently closed: forget our file */
    }
    gp_put(f);
    return r;
}

GP_EXPORT int dup2(int fd, int nfd)
{
    return gp_dup23(fd, nfd, 0, false);
}

GP_EXPORT int dup3(int fd, int nfd, int flags)
{
    return gp_dup23(fd, nfd, flags, true);
}

static int gp_fcntl(int fd, int cmd, void *arg)
{
    gp_file *f = gp_get(fd);
    if (!f)
        return REAL(fcntl)(fd, cmd, arg);
    int r;
    switch (cmd) {
    case F_DUPFD:
    case F_DUPFD_CLOEXEC:
        r = gp_dup_done(f, REAL(fcntl)(fd, cmd, arg));
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
        ((struct flock *)arg)->l_type = F_UNLCK;
        r = 0;
        break;
    case F_SETLK:
    case F_SETLKW:
    case F_OFD_SETLK:
    case F_OFD_SETLKW:
        r = 0; /* see the header: locks are not kept */
        break;
    default: /* F_GETFD, F_SETFD, ...: the descriptor itself */
        r = REAL(fcntl)(fd, cmd, arg);
    }
    gp_put(f);
    return r;
}

GP_EXPORT int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return gp_fcntl(fd, cmd, arg);
}

GP_EXPORT int fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return gp_fcntl(fd, cmd, arg);
}

GP_EXPORT int flock(int fd, int op)
{
    gp_file *f = gp_get(fd);
    if (!f)
        return REAL(flock)(fd, op);
    gp_put(f);
    return 0;
}

/* ------------------------------------------------------------------------
 * Directories of galley: names (opendir/readdir): the next component of
 * every name under the directory, listed once when it is opened.  Paths
 * under a galley mount are left to the mount (it also knows directories
 * made with mkdir).
 * ------------------------------------------------------------------------ */

typedef struct gp_dir {
    int fd; /* a reserved descriptor for dirfd() */
    size_t n, pos, cap;
    struct dirent64 *ents;
} gp_dir;

#define GP_NDIRS 256
static pthread_mutex_t gp_dir_lock = PTHREAD_MUTEX_INITIALIZER;
static gp_dir *gp_dirs[GP_NDIRS];
static int gp_ndirs_open;

static gp_dir *gp_dir_of(DIR *d)
{
    if (!__atomic_load_n(&gp_ndirs_open, __ATOMIC_ACQUIRE))
        return NULL;
    gp_dir *r = NULL;
    pthread_mutex_lock(&gp_dir_lock);
    for (int i = 0; i < GP_NDIRS && !r; i++)
        if (gp_dirs[i] == (gp_dir *)d)
            r = gp_dirs[i];
    pthread_mutex_unlock(&gp_dir_lock);
    return r;
}

static int gp_dir_add(gp_dir *g, const char *name, size_t len,
                      unsigned char type)
{
    if (len == 0 || len >= sizeof(g->ents[0].d_name))
        return 0;
    if (g->n > 0 && strlen(g->ents[g->n - 1].d_name) == len &&
        strncmp(g->ents[g->n - 1].d_name, name, len) == 0) {
        if (type == DT_DIR)
            g->ents[g->n - 1].d_type = DT_DIR;
        return 0; /* names are listed sorted: repeats are adjacent */
    }
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 16;
        struct dirent64 *e = realloc(g->ents, cap * sizeof(*e));
        if (!e)
            return -ENOMEM;
        g->ents = e;
        g->cap = cap;
    }
    struct dirent64 *e = &g->ents[g->n++];
    memset(e, 0, sizeof(*e));
    memcpy(e->d_name, name, len);
    e->d_ino = gp_hash(name);
    e->d_type = type;
    e->d_reclen = sizeof(*e);
    e->d_off = (off64_t)g->n;
    return 0;
}

typedef struct gp_lister {
    gp_dir *g;
    size_t plen;
} gp_lister;

static int gp_list_cb(const char *name, void *arg)
{
    gp_lister *l = arg;
    const char *rest = name + l->plen;
    size_t n = strcspn(rest, "/");
    return gp_dir_add(l->g, rest, n, rest[n] == '/' ? DT_DIR : DT_REG);
}

static DIR *gp_opendir(const char *name)
{
    struct stat st;
    if (gp_stat_path(name, &st))
        return NULL;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return NULL;
    }
    gp_dir *g = calloc(1, sizeof(*g));
    if (!g) {
        errno = ENOMEM;
        return NULL;
    }
    char prefix[GFS_NAME_MAX + 2];
    size_t n = strlen(name);
    snprintf(prefix, sizeof(prefix), "%s%s", name,
             n && name[n - 1] == '/' ? "" : "/");
    gp_lister l = {g, strlen(prefix)};
    int rc = gp_dir_add(g, ".", 1, DT_DIR);
    if (!rc)
        rc = gp_dir_add(g, "..", 2, DT_DIR);
    if (!rc)
        rc = gfs_list_files(prefix, gp_list_cb, &l);
    if (rc == 0) {
        g->fd = REAL(open)("/dev/null", O_RDONLY | O_CLOEXEC);
        rc = g->fd < 0 ? -errno : -EMFILE;
        pthread_mutex_lock(&gp_dir_lock);
        for (int i = 0; g->fd >= 0 && i < GP_NDIRS; i++)
            if (!gp_dirs[i]) {
                gp_dirs[i] = g;
                __atomic_add_fetch(&gp_ndirs_open, 1, __ATOMIC_RELEASE);
                rc = 0;
                break;
            }
        pthread_mutex_unlock(&gp_dir_lock);
    }
    if (rc) {
        if (g->fd > 0)
            REAL(close)(g->fd);
        free(g->ents);
        free(g);
        gp_fail(rc);
        return NULL;
    }
    return (DIR *)g;
}

GP_EXPORT DIR *opendir(const char *path)
{
    const char *name = gp_name(path);
    if (name && !gp_from_mount)
        return gp_opendir(name);
    return REAL(opendir)(path);
}

GP_EXPORT struct dirent64 *readdir64(DIR *d)
{
    gp_dir *g = gp_dir_of(d);
    if (!g)
        return REAL(readdir64)(d);
    return g->pos < g->n ? &g->ents[g->pos++] : NULL;
}

GP_EXPORT struct dirent *readdir(DIR *d)
{
    gp_dir *g = gp_dir_of(d);
    if (!g)
        return REAL(readdir)(d);
    /* struct dirent and dirent64 are the same on LP64 */
    return (struct dirent *)readdir64(d);
}

GP_EXPORT void rewinddir(DIR *d)
{
    gp_dir *g = gp_dir_of(d);
    if (g)
        g->pos = 0;
    else
        REAL(rewinddir)(d);
}

GP_EXPORT int dirfd(DIR *d)
{
    gp_dir *g = gp_dir_of(d);
    return g ? g->fd : REAL(dirfd)(d);
}

GP_EXPORT int closedir(DIR *d)
{
    gp_dir *g = gp_dir_of(d);
    if (!g)
        return REAL(closedir)(d);
    pthread_mutex_lock(&gp_dir_lock);
    for (int i = 0; i < GP_NDIRS; i++)
        if (gp_dirs[i] == g) {
            gp_dirs[i] = NULL;
            __atomic_sub_fetch(&gp_ndirs_open, 1, __ATOMIC_RELEASE);
        }
    pthread_mutex_unlock(&gp_dir_lock);
    REAL(close)(g->fd);
    free(g->ents);
    free(g);
    return 0;
}

/* ------------------------------------------------------------------------
 * stdio
 * ------------------------------------------------------------------------ */

/* FILE streams we made, so fileno() can answer for them. */
#define GP_NSTREAMS 1024
static pthread_mutex_t gp_stream_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    FILE *fp;
    int fd;
} gp_streams[GP_NSTREAMS];
static int gp_nstreams; /* entries in use (fileno's fast path) */

static ssize_t gp_cookie_read(void *c, char *buf, size_t n)
{
    return read((int)(intptr_t)c, buf, n);
}

static ssize_t gp_cookie_write(void *c, const char *buf, size_t n)
{
    ssize_t k = write((int)(intptr_t)c, buf, n);
    return k < 0 ? 0 : k; /* stdio: 0 means error (errno set) */
}

static int gp_cookie_seek(void *c, off64_t *off, int whence)
{
    off_t r = lseek((int)(intptr_t)c, *off, whence);
    if (r < 0)
        return -1;
    *off = r;
    return 0;
}

static int gp_cookie_close(void *c)
{
    int fd = (int)(intptr_t)c;
    pthread_mutex_lock(&gp_stream_lock);
    for (int i = 0; i < GP_NSTREAMS; i++)
        if (gp_streams[i].fp && gp_streams[i].fd == fd) {
            gp_streams[i].fp = NULL;
            __atomic_sub_fetch(&gp_nstreams, 1, __ATOMIC_RELEASE);
            break;
        }
    pthread_mutex_unlock(&gp_stream_lock);
    return close(fd);
}

/* A stream over Galley descriptor fd (which it owns), or NULL. */
static FILE *gp_stream(int fd, const char *mode)
{
    cookie_io_functions_t io = {gp_cookie_read, gp_cookie_write, gp_cookie_seek,
                                gp_cookie_close};
    FILE *fp = fopencookie((void *)(intptr_t)fd, mode, io);
    if (!fp)
        return NULL;
    pthread_mutex_lock(&gp_stream_lock);
    for (int i = 0; i < GP_NSTREAMS; i++)
        if (!gp_streams[i].fp) {
            gp_streams[i].fp = fp;
            gp_streams[i].fd = fd;
            __atomic_add_fetch(&gp_nstreams, 1, __ATOMIC_RELEASE);
            break;
        }
    pthread_mutex_unlock(&gp_stream_lock);
    return fp;
}

/* fopen mode -> open flags; -1 if invalid. */
static int gp_mode_flags(const char *mode)
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

static FILE *gp_fopen(const char *name, const char *mode)
{
    int fl = gp_mode_flags(mode);
    if (fl < 0) {
        errno = EINVAL;
        return NULL;
    }
    int fd = gp_open(name, fl, 0666);
    if (fd < 0)
        return NULL;
    FILE *fp = gp_stream(fd, mode);
    if (!fp) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return fp;
}

GP_EXPORT FILE *fopen(const char *path, const char *mode)
{
    const char *name = gp_name(path);
    return name ? gp_fopen(name, mode) : REAL(fopen)(path, mode);
}

GP_EXPORT FILE *fopen64(const char *path, const char *mode)
{
    return fopen(path, mode);
}

GP_EXPORT FILE *fdopen(int fd, const char *mode)
{
    gp_file *f = gp_get(fd);
    if (!f)
        return REAL(fdopen)(fd, mode);
    gp_put(f);
    return gp_stream(fd, mode);
}

GP_EXPORT int fileno(FILE *fp)
{
    if (!__atomic_load_n(&gp_nstreams, __ATOMIC_ACQUIRE))
        return REAL(fileno)(fp);
    pthread_mutex_lock(&gp_stream_lock);
    for (int i = 0; i < GP_NSTREAMS; i++)
        if (gp_streams[i].fp == fp) {
            int fd = gp_streams[i].fd;
            pthread_mutex_unlock(&gp_stream_lock);
            return fd;
        }
    pthread_mutex_unlock(&gp_stream_lock);
    return REAL(fileno)(fp);
}

GP_EXPORT int fileno_unlocked(FILE *fp)
{
    return fileno(fp);
}
