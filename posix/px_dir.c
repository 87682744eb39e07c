/*
 * px_dir.c -- directories in libgalley-posix.so (see galley_posix.c):
 * opendir/fdopendir/readdir of Galley directories, mkdir and rmdir.
 *
 * Threads: any.  px_dir_lock guards the table of open directories; a
 * stream itself, as with libc's, is used by one thread at a time.
 */
#define _GNU_SOURCE
#include "px_internal.h"

/* ------------------------------------------------------------------------
 * Directories of galley: names (opendir/readdir): the next component of
 * every name under the directory, listed once when it is opened (a
 * directory's own marker has an empty last component: not listed).  Paths
 * under a galley mount are left to the mount.
 * ------------------------------------------------------------------------ */

typedef struct px_dir {
    int fd; /* our directory descriptor, for dirfd() */
    size_t n, pos, cap;
    struct dirent64 *ents;
} px_dir;

#define PX_NDIRS 256
static pthread_mutex_t px_dir_lock = PTHREAD_MUTEX_INITIALIZER;
static px_dir *px_dirs[PX_NDIRS];
static int px_ndirs_open;

static px_dir *px_dir_of(DIR *d)
{
    if (!__atomic_load_n(&px_ndirs_open, __ATOMIC_ACQUIRE))
        return NULL;
    px_dir *r = NULL;
    pthread_mutex_lock(&px_dir_lock);
    for (int i = 0; i < PX_NDIRS && !r; i++)
        if (px_dirs[i] == (px_dir *)d)
            r = px_dirs[i];
    pthread_mutex_unlock(&px_dir_lock);
    return r;
}

static int px_dir_add(px_dir *g, const char *name, size_t len,
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
    e->d_ino = px_hash(name);
    e->d_type = type;
    e->d_reclen = sizeof(*e);
    e->d_off = (off64_t)g->n;
    return 0;
}

typedef struct px_lister {
    px_dir *g;
    size_t plen;
} px_lister;

static int px_list_cb(const char *name, void *arg)
{
    px_lister *l = arg;
    const char *rest = name + l->plen;
    size_t n = strcspn(rest, "/");
    return px_dir_add(l->g, rest, n, rest[n] == '/' ? DT_DIR : DT_REG);
}

/* A stream listing directory `name` (which must be one) over descriptor
 * fd (-1: a new directory descriptor); NULL with errno. */
static DIR *px_dir_stream(const char *name, int fd)
{
    struct stat st;
    char to[PATH_MAX + 1];
    int rc = px_stat_name(name, &st);
    if (!rc && S_ISLNK(st.st_mode)) { /* a link to a directory */
        rc = px_follow(name, to, sizeof(to));
        if (rc == 1 && fd < 0)
            return REAL(opendir)(to);
        if (!rc)
            rc = px_stat_name(name = to, &st);
        else if (rc == 1)
            rc = -ENOTDIR;
    }
    if (rc) {
        px_fail(rc);
        return NULL;
    }
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return NULL;
    }
    px_dir *g = calloc(1, sizeof(*g));
    if (!g) {
        errno = ENOMEM;
        return NULL;
    }
    char prefix[GFS_NAME_MAX + 2];
    size_t n = strlen(name);
    snprintf(prefix, sizeof(prefix), "%s%s", name,
             n && name[n - 1] == '/' ? "" : "/");
    px_lister l = {g, strlen(prefix)};
    rc = px_dir_add(g, ".", 1, DT_DIR);
    if (!rc)
        rc = px_dir_add(g, "..", 2, DT_DIR);
    if (!rc)
        rc = gfs_list_files(prefix, px_list_cb, &l);
    g->fd = -1;
    if (rc == 0) {
        g->fd = fd >= 0 ? fd : px_dir_fd(name, O_CLOEXEC);
        rc = g->fd < 0 ? -errno : -EMFILE;
        pthread_mutex_lock(&px_dir_lock);
        for (int i = 0; g->fd >= 0 && i < PX_NDIRS; i++)
            if (!px_dirs[i]) {
                px_dirs[i] = g;
                __atomic_add_fetch(&px_ndirs_open, 1, __ATOMIC_RELEASE);
                rc = 0;
                break;
            }
        pthread_mutex_unlock(&px_dir_lock);
    }
    if (rc) {
        if (g->fd >= 0 && g->fd != fd)
            close(g->fd);
        free(g->ents);
        free(g);
        px_fail(rc);
        return NULL;
    }
    return (DIR *)g;
}

PX_EXPORT DIR *opendir(const char *path)
{
    const char *name = px_name(path);
    if (name && !px_from_mount)
        return px_dir_stream(name, -1);
    return REAL(opendir)(path);
}

/* A stream over our directory descriptor fd (px_open of a directory),
 * which closedir closes. */
PX_EXPORT DIR *fdopendir(int fd)
{
    px_file *f = px_get(fd);
    if (!f)
        return REAL(fdopendir)(fd);
    char name[GFS_NAME_MAX + 1];
    bool dir = f->dir;
    snprintf(name, sizeof(name), "%s", f->name);
    px_put(f);
    if (!dir) {
        errno = ENOTDIR;
        return NULL;
    }
    return px_dir_stream(name, fd);
}

PX_EXPORT struct dirent64 *readdir64(DIR *d)
{
    px_dir *g = px_dir_of(d);
    if (!g)
        return REAL(readdir64)(d);
    return g->pos < g->n ? &g->ents[g->pos++] : NULL;
}

PX_EXPORT struct dirent *readdir(DIR *d)
{
    px_dir *g = px_dir_of(d);
    if (!g)
        return REAL(readdir)(d);
    /* struct dirent and dirent64 are the same on LP64 */
    return (struct dirent *)readdir64(d);
}

PX_EXPORT void rewinddir(DIR *d)
{
    px_dir *g = px_dir_of(d);
    if (g)
        g->pos = 0;
    else
        REAL(rewinddir)(d);
}

PX_EXPORT int dirfd(DIR *d)
{
    px_dir *g = px_dir_of(d);
    return g ? g->fd : REAL(dirfd)(d);
}

PX_EXPORT int closedir(DIR *d)
{
    px_dir *g = px_dir_of(d);
    if (!g)
        return REAL(closedir)(d);
    pthread_mutex_lock(&px_dir_lock);
    for (int i = 0; i < PX_NDIRS; i++)
        if (px_dirs[i] == g) {
            px_dirs[i] = NULL;
            __atomic_sub_fetch(&px_ndirs_open, 1, __ATOMIC_RELEASE);
        }
    pthread_mutex_unlock(&px_dir_lock);
    close(g->fd); /* our directory descriptor (px_dir_fd) */
    free(g->ents);
    free(g);
    return 0;
}

/* ------------------------------------------------------------------------
 * mkdir and rmdir: a directory made with mkdir is kept by its marker
 * (px_dirmark.h), so it stays while empty and every process and mount
 * sees it; one that some file's name implies needs none.
 * ------------------------------------------------------------------------ */

static int px_mkdir(const char *name, mode_t mode)
{
    struct stat st;
    int rc = px_stat_name(name, &st);
    if (rc != -ENOENT)
        return rc ? px_fail(rc) : px_fail(-EEXIST);
    const char *slash = strrchr(name, '/');
    if (slash && slash != name) { /* the parent must be a directory */
        char parent[GFS_NAME_MAX + 1];
        snprintf(parent, sizeof(parent), "%.*s", (int)(slash - name), name);
        rc = px_stat_name(parent, &st);
        if (!rc && !S_ISDIR(st.st_mode))
            rc = -ENOTDIR;
        if (rc)
            return px_fail(rc);
    }
    rc = px_dir_make(name, mode & 07777 & ~px_umask(), geteuid(), getegid());
    return rc ? px_fail(rc) : 0;
}

int px_rmdir(const char *name)
{
    int rc = px_start();
    if (rc)
        return px_fail(rc);
    if (px_mapped_root(name) || !*name || strcmp(name, "/") == 0)
        return px_fail(-EBUSY);
    int64_t size;
    rc = gfs_striped_stat(name, &size, NULL);
    if (rc >= 0 || rc == GFS_ELAYOUT)
        return px_fail(-ENOTDIR);
    if (rc != -ENOENT)
        return px_fail(rc);
    rc = px_dir_remove(name);
    return rc ? px_fail(rc) : 0;
}

PX_EXPORT int mkdir(const char *path, mode_t mode)
{
    const char *name = px_name(path);
    if (!name || px_from_mount)
        return REAL(mkdir)(path, mode);
    int rc = px_start();
    return rc ? px_fail(rc) : px_mkdir(name, mode);
}

PX_EXPORT int mkdirat(int dirfd, const char *path, mode_t mode)
{
    const char *name = px_name_at(dirfd, path);
    if (!name || px_from_mount)
        return REAL(mkdirat)(dirfd, path, mode);
    int rc = px_start();
    return rc ? px_fail(rc) : px_mkdir(name, mode);
}

PX_EXPORT int rmdir(const char *path)
{
    const char *name = px_name(path);
    if (!name || px_from_mount)
        return REAL(rmdir)(path);
    return px_rmdir(name);
}
