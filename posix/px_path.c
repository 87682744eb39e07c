/*
 * px_path.c -- which paths are ours (libgalley-posix.so; see
 * galley_posix.c): "galley:" names, paths under local directories
 * mapped onto Galley names (GALLEY_POSIX_MOUNTS, `galley mount`s of our
 * own cluster), read as the kernel reads a path ("//", "." and ".."), and
 * names relative to our directory descriptors (the *at calls).
 *
 * Threads: any.  The mount table is read once (pthread_once) and never
 * changes after; px_name's buffers are per thread.
 */
#define _GNU_SOURCE
#include "px_internal.h"
#include "../libgalley/cluster_file.h"

/* Local directories mapped onto Galley names (GALLEY_POSIX_MOUNTS, a
 * comma-separated list of LOCALDIR=GALLEYDIR, or LOCALDIR alone for the
 * same name in both): a program that strips "galley:" from a name, or a
 * galley mount's directory, still reaches the same Galley file. */
#define PX_NMOUNTS 16
static struct {
    char local[PATH_MAX];
    size_t llen;
    char galley[GFS_NAME_MAX + 1];
    bool fuse; /* a galley mount's directory */
} px_mounts[PX_NMOUNTS];
static int px_nmounts;
static pthread_once_t px_mounts_once = PTHREAD_ONCE_INIT;

static void px_strip_slashes(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == '/')
        s[--n] = '\0';
}

static bool px_readable(const char *path)
{
    return REAL(access)(path, R_OK) == 0;
}

/* The cluster file libgalley will use (its search order, cluster_file.h). */
static const char *px_cluster_path(char *buf, size_t len)
{
    return gc_cluster_search(NULL, buf, len, px_readable);
}

/* `galley mount`s of our own cluster (source "galley:<cluster file>",
 * type fuse.galley): paths under them go to Galley directly. */
static void px_read_fuse_mounts(void)
{
    char buf[PATH_MAX], mine[PATH_MAX];
    if (!REAL(realpath)(px_cluster_path(buf, sizeof(buf)), mine))
        return;
    FILE *f = REAL(fopen)("/proc/self/mounts", "re");
    if (!f)
        return;
    char line[2 * PATH_MAX + 256], src[PATH_MAX + 16], dir[PATH_MAX], type[64];
    while (px_nmounts < PX_NMOUNTS && fgets(line, sizeof(line), f)) {
        if (sscanf(line, "%4111s %4095s %63s", src, dir, type) != 3 ||
            strcmp(type, "fuse.galley") != 0 ||
            strncmp(src, PX_PREFIX, PX_PREFIX_LEN) != 0 ||
            strcmp(src + PX_PREFIX_LEN, mine) != 0 || dir[0] != '/' ||
            strchr(dir, '\\'))
            continue; /* not ours, or an escaped (unusual) name */
        int i = px_nmounts++;
        snprintf(px_mounts[i].local, sizeof(px_mounts[i].local), "%s", dir);
        px_strip_slashes(px_mounts[i].local);
        px_mounts[i].llen = strlen(px_mounts[i].local);
        px_mounts[i].galley[0] = '\0';
        px_mounts[i].fuse = true;
    }
    fclose(f);
}

static void px_read_mounts(void)
{
    const char *env = g_config_str(G_CFG_POSIX_MOUNTS);
    if (!g_config_bool(G_CFG_POSIX_NO_MOUNTS))
        px_read_fuse_mounts();
    if (!env)
        return;
    char *copy = strdup(env), *save = NULL;
    for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL;
         tok && px_nmounts < PX_NMOUNTS; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (eq)
            *eq = '\0';
        const char *g = eq ? eq + 1 : tok;
        if (tok[0] != '/' || strlen(tok) >= PATH_MAX ||
            strlen(g) > GFS_NAME_MAX)
            continue; /* only absolute local directories */
        int i = px_nmounts++;
        snprintf(px_mounts[i].local, sizeof(px_mounts[i].local), "%s", tok);
        px_strip_slashes(px_mounts[i].local);
        px_mounts[i].llen = strlen(px_mounts[i].local);
        snprintf(px_mounts[i].galley, sizeof(px_mounts[i].galley), "%s", g);
        px_strip_slashes(px_mounts[i].galley);
    }
    free(copy);
}

/* Has name no "." or ".." component, no trailing slash, and (collapse)
 * no run of slashes after the leading ones?  One pass. */
static bool px_plain(const char *name, bool collapse)
{
    const char *c = name + strspn(name, "/");
    if (collapse && c - name > 1)
        return false;
    while (*c) {
        size_t n = strcspn(c, "/");
        if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return false;
        c += n;
        if (*c == '/' && (c[1] == '\0' || (collapse && c[1] == '/')))
            return false;
        if (*c)
            c++;
    }
    return true;
}

/* `name` with "." and ".." components and trailing slashes resolved as a
 * path would be (".." stops at the root), in buf (cap + 1 bytes) when
 * anything changes, else name itself.  collapse: runs of slashes become
 * one, as the kernel reads a local path; otherwise they are kept: the
 * MPI-IO driver takes "galley:/a//b" literally, and the same string must
 * reach the same file both ways. */
static const char *px_lexical(const char *name, char *buf, size_t cap,
                              bool collapse)
{
    if (px_plain(name, collapse))
        return name; /* the common case: nothing to do */
    size_t o = 0, root = strspn(name, "/");
    if (collapse && root > 1)
        root = 1;
    memcpy(buf, name, root < cap ? root : cap);
    o = root < cap ? root : cap;
    for (const char *c = name + strspn(name, "/"); *c && o < cap;) {
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
            size_t k = o > root ? (seps && !collapse ? seps : 1) : 0;
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

static const char *px_clean(const char *name, char *buf)
{
    return px_lexical(name, buf, GFS_NAME_MAX + 1, false);
}

/* The Galley name of a path, or NULL if the path is not ours: "galley:"
 * and the rest (exactly the name the MPI-IO driver gets for the same
 * string), or an absolute path under a mapped directory, read as the
 * kernel reads a path ("//", "." and ".." resolved before it is matched,
 * so "DIR/../x" is not under DIR).  Mapped names are built in a small
 * per-thread ring of buffers (a call needs two at most). */
__thread bool px_from_mount; /* px_name's last answer was a mount's */
__thread bool px_dir_only;   /* ... named a directory only ("d/", "d/.") */
static __thread char px_ring[4][GFS_NAME_MAX + 2];
static __thread unsigned px_next;

static char *px_buf(void)
{
    return px_ring[px_next++ % 4];
}

static bool px_names_dir(const char *path)
{
    size_t n = strlen(path);
    return (n > 0 && path[n - 1] == '/') ||
           (n > 1 && strcmp(path + n - 2, "/.") == 0);
}

const char *px_name(const char *path)
{
    px_from_mount = false;
    if (!path)
        return NULL;
    px_dir_only = px_names_dir(path);
    if (strncmp(path, PX_PREFIX, PX_PREFIX_LEN) == 0)
        return px_clean(path + PX_PREFIX_LEN, px_buf());
    if (path[0] != '/')
        return NULL;
    pthread_once(&px_mounts_once, px_read_mounts);
    if (px_nmounts == 0)
        return NULL;
    static __thread char local[PATH_MAX + 1];
    path = px_lexical(path, local, PATH_MAX, true);
    for (int i = 0; i < px_nmounts; i++) {
        size_t l = px_mounts[i].llen;
        if (strncmp(path, px_mounts[i].local, l) != 0 ||
            (path[l] != '/' && path[l] != '\0'))
            continue;
        char *buf = px_buf();
        size_t g = strlen(px_mounts[i].galley), r = strlen(path + l);
        if (g + r > GFS_NAME_MAX)
            r = GFS_NAME_MAX + 1 - g; /* too long: the server refuses */
        memcpy(buf, px_mounts[i].galley, g);
        memcpy(buf + g, path + l, r);
        buf[g + r] = '\0';
        px_from_mount = px_mounts[i].fuse;
        return px_clean(buf, px_buf());
    }
    return NULL;
}

const char *px_local_path(const char *path, char *buf, size_t cap)
{
    return px_lexical(path, buf, cap - 1, true);
}

/* Is name the Galley directory a local directory is mapped onto?  (It is
 * a directory even while nothing is in it.) */
bool px_mapped_root(const char *name)
{
    pthread_once(&px_mounts_once, px_read_mounts);
    for (int i = 0; i < px_nmounts; i++)
        if (!px_mounts[i].fuse && strcmp(px_mounts[i].galley, name) == 0)
            return true;
    return false;
}

/* The Galley name of path relative to directory descriptor dirfd (the
 *at calls): px_name's for an absolute path or a galley: name; for a
 * relative one, the name under our directory descriptor dirfd (px_open
 * of a directory), runs of slashes in it read as one and "." and ".."
 * resolved after it is joined; NULL if neither
 * (libc's: AT_FDCWD, a local directory). */
const char *px_name_at(int dirfd, const char *path)
{
    if (!path || path[0] == '/' || dirfd == AT_FDCWD ||
        strncmp(path, PX_PREFIX, PX_PREFIX_LEN) == 0 || !px_fds_has(dirfd))
        return px_name(path);
    px_from_mount = false;
    px_dir_only = px_names_dir(path);
    px_file *f = px_get(dirfd);
    if (!f || !f->dir || !*path) {
        px_put(f);
        return NULL;
    }
    char *buf = px_buf();
    size_t o = strlen(f->name);
    memcpy(buf, f->name, o);
    if (o == 0 || buf[o - 1] != '/')
        buf[o++] = '/';
    for (const char *c = path; *c && o <= GFS_NAME_MAX; c++)
        if (*c != '/' || buf[o - 1] != '/') /* runs of slashes as one */
            buf[o++] = *c;
    buf[o] = '\0';
    px_put(f);
    return px_clean(buf, px_buf());
}
