/*
 * px_path.c -- which paths are ours (libgalley-posix.so; see
 * galley_posix.c): "galley:" names, and paths under local directories
 * mapped onto Galley names (GALLEY_POSIX_MOUNTS, `galley mount`s of our
 * own cluster), with "." and ".." resolved as a path would be.
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
    if (!realpath(px_cluster_path(buf, sizeof(buf)), mine))
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
    const char *env = getenv("GALLEY_POSIX_MOUNTS");
    if (getenv("GALLEY_POSIX_NO_MOUNTS") == NULL)
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

/* `name` with "." and ".." components and trailing slashes resolved as a
 * path would be (".." stops at the root), in buf (GFS_NAME_MAX + 2 bytes)
 * when anything changes, else name itself.  Repeated slashes are kept: the
 * MPI-IO driver takes "galley:/a//b" literally, and the same string must
 * reach the same file both ways. */
static const char *px_clean(const char *name, char *buf)
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
 * most).  "." and ".." components are resolved (px_clean). */
__thread bool px_from_mount; /* px_name's last answer was a mount's */

const char *px_name(const char *path)
{
    static __thread char ring[4][GFS_NAME_MAX + 2];
    static __thread unsigned next;
    px_from_mount = false;
    if (!path)
        return NULL;
    if (strncmp(path, PX_PREFIX, PX_PREFIX_LEN) == 0)
        return px_clean(path + PX_PREFIX_LEN, ring[next++ % 4]);
    if (path[0] != '/')
        return NULL;
    pthread_once(&px_mounts_once, px_read_mounts);
    for (int i = 0; i < px_nmounts; i++) {
        size_t l = px_mounts[i].llen;
        if (strncmp(path, px_mounts[i].local, l) != 0 ||
            (path[l] != '/' && path[l] != '\0'))
            continue;
        char *buf = ring[next++ % 4];
        if ((size_t)snprintf(buf, GFS_NAME_MAX + 2, "%s%s", px_mounts[i].galley,
                             path + l) > GFS_NAME_MAX)
            buf[GFS_NAME_MAX + 1] = '\0'; /* too long: the server refuses */
        px_from_mount = px_mounts[i].fuse;
        return px_clean(buf, ring[next++ % 4]);
    }
    return NULL;
}
