/*
 * gf_dir.c -- galley-fuse's name space: what a path is (gf_classify), the
 * directories the daemon keeps, the name limits, and the operations on
 * names: readdir, unlink, mkdir, rmdir, rename.
 *
 * Directories: Galley has none.  A directory exists while
 *   - some file's name starts with "<dir>/" (it is implied), or
 *   - the daemon keeps it: made with mkdir, or left behind when the last
 *     entry under it went away through the mount, until rmdir or unmount,
 *   - or a directory the daemon keeps lies under it.
 * A directory is empty when nothing of these is under it: rmdir and
 * rename over it answer ENOTEMPTY while it holds so much as an empty
 * subdirectory, and rename moves a directory's kept subdirectories (at
 * any depth) with its files.
 *
 * Names: a path on the mount is the Galley name, leading '/' included,
 * and Galley names are at most GFS_NAME_MAX (255) bytes in all (the
 * protocol's name fields, the servers' records and libgalley's structs
 * carry no longer ones).  A component over NAME_MAX, or a path over
 * GFS_NAME_MAX that is not inside a plain file's view, answers
 * ENAMETOOLONG to every operation, the kernel's lookup first; so does a
 * rename of a directory whose tree would get a name over the limit, before
 * anything moves.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf_internal.h"
#include "px_rename.h"

/* ------------------------------------------------------------------------
 * Directories the daemon keeps
 * ------------------------------------------------------------------------ */

static pthread_mutex_t dir_lock = PTHREAD_MUTEX_INITIALIZER;
static char **dirs;
static int ndirs;

/* Under dir_lock. */
static int dir_find(const char *p)
{
    for (int i = 0; i < ndirs; i++)
        if (strcmp(dirs[i], p) == 0)
            return i;
    return -1;
}

/* 1 if q is p itself (self) or lies under p ("/" holds everything). */
static bool is_under(const char *q, const char *p, bool self)
{
    size_t n = strcmp(p, "/") == 0 ? 0 : strlen(p);
    if (strncmp(q, p, n) != 0)
        return false;
    return q[n] == '/' || (self && q[n] == '\0');
}

/* Remember directory p (no-op if already known); 0 or -ENOMEM. */
static int dir_add(const char *p)
{
    int rc = 0;
    pthread_mutex_lock(&dir_lock);
    if (dir_find(p) < 0) {
        char **nd = realloc(dirs, (size_t)(ndirs + 1) * sizeof(*dirs));
        char *copy = nd ? strdup(p) : NULL;
        if (nd)
            dirs = nd;
        if (copy)
            dirs[ndirs++] = copy;
        else
            rc = -ENOMEM;
    }
    pthread_mutex_unlock(&dir_lock);
    return rc;
}

static void dir_del(const char *p)
{
    pthread_mutex_lock(&dir_lock);
    int i = dir_find(p);
    if (i >= 0) {
        free(dirs[i]);
        dirs[i] = dirs[--ndirs];
    }
    pthread_mutex_unlock(&dir_lock);
}

static bool dir_made(const char *p)
{
    pthread_mutex_lock(&dir_lock);
    bool r = dir_find(p) >= 0;
    pthread_mutex_unlock(&dir_lock);
    return r;
}

/* 1 if some kept directory lies under p. */
static bool dir_under(const char *p)
{
    bool r = false;
    pthread_mutex_lock(&dir_lock);
    for (int i = 0; i < ndirs && !r; i++)
        r = is_under(dirs[i], p, false);
    pthread_mutex_unlock(&dir_lock);
    return r;
}

/* The longest tail past p of p and the kept directories under it. */
static size_t dir_longest_tail(const char *p)
{
    size_t n = strlen(p), most = 0;
    pthread_mutex_lock(&dir_lock);
    for (int i = 0; i < ndirs; i++)
        if (is_under(dirs[i], p, true) && strlen(dirs[i]) - n > most)
            most = strlen(dirs[i]) - n;
    pthread_mutex_unlock(&dir_lock);
    return most;
}

/* Kept directories from and under it now go by to + their tail; to's own
 * entry (an empty directory being replaced) goes.  0 or -ENOMEM (then
 * the entries not yet renamed keep their names). */
static int dir_move(const char *from, const char *to)
{
    size_t flen = strlen(from), tlen = strlen(to);
    int rc = 0;
    pthread_mutex_lock(&dir_lock);
    int t = dir_find(to);
    if (t >= 0) {
        free(dirs[t]);
        dirs[t] = dirs[--ndirs];
    }
    for (int i = 0; i < ndirs && !rc; i++) {
        if (!is_under(dirs[i], from, true))
            continue;
        char *n = malloc(tlen + strlen(dirs[i]) - flen + 1);
        if (!n) {
            rc = -ENOMEM;
            break;
        }
        memcpy(n, to, tlen);
        strcpy(n + tlen, dirs[i] + flen);
        free(dirs[i]);
        dirs[i] = n;
    }
    pthread_mutex_unlock(&dir_lock);
    return rc;
}

/* ------------------------------------------------------------------------
 * What a path is
 * ------------------------------------------------------------------------ */

static int any_cb(const char *name, void *arg)
{
    return 1;
}

/* 1 if some file's name starts with p + "/"; 0; or a negative gfs error.
 * Nothing fits under a name of GFS_NAME_MAX bytes or more. */
static int implied_dir(const char *p)
{
    char prefix[GFS_NAME_MAX + 1];
    if (snprintf(prefix, sizeof(prefix), "%s/", p) >= (int)sizeof(prefix))
        return 0;
    int rc = gfs_list_files(prefix, any_cb, NULL);
    return rc < 0 ? rc : rc == 1;
}

/* 1 if directory p holds anything (a file or a directory), 0, or a
 * negative gfs error. */
static int dir_nonempty(const char *p)
{
    int rc = implied_dir(p);
    return rc ? rc : dir_under(p);
}

/* After the last entry under p's parent went away, the parent stays
 * until rmdir (as on any file system), though no Galley name implies it
 * any more. */
static void keep_parent(const char *p)
{
    char parent[GFS_NAME_MAX + 1];
    const char *slash = strrchr(p, '/');
    size_t n = slash ? (size_t)(slash - p) : 0;
    if (n == 0 || n > GFS_NAME_MAX)
        return;
    memcpy(parent, p, n);
    parent[n] = '\0';
    if (!dir_made(parent) && implied_dir(parent) == 0)
        dir_add(parent);
}

/* -ENAMETOOLONG if a component of p is over NAME_MAX bytes, else 0. */
static int components_ok(const char *p)
{
    for (const char *c = p; *c;) {
        size_t n = strcspn(c, "/");
        if (n > NAME_MAX)
            return -ENAMETOOLONG;
        c += n;
        c += strspn(c, "/");
    }
    return 0;
}

typedef struct fork_find {
    const char *name;
    int64_t size;
    bool found;
} fork_find;

static int fork_cb(const char *name, uint64_t size, void *arg)
{
    fork_find *f = arg;
    if (strcmp(name, f->name) == 0) {
        f->found = true;
        f->size = (int64_t)size;
        return 1;
    }
    return 0;
}

/* Inside a plain file: "<plain>/subfile<i>" or "<plain>/subfile<i>/<fork>". */
static int classify_plain(const char *p, what *w)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof(buf), "%s", p);
    char *last = strrchr(buf, '/'), *fork = NULL;
    if (!last || last == buf)
        return -ENOENT;
    if (strncmp(last + 1, "subfile", 7) != 0) {
        fork = last + 1;
        *last = '\0';
        last = strrchr(buf, '/');
        if (!last || last == buf || strncmp(last + 1, "subfile", 7) != 0)
            return -ENOENT;
    }
    char *end;
    long sub = strtol(last + 8, &end, 10);
    if (*end || end == last + 8 || sub < 0)
        return -ENOENT;
    *last = '\0';
    if (strlen(buf) > GFS_NAME_MAX)
        return -ENOENT;
    int fid = gfs_open_file(buf);
    if (fid < 0)
        return fid == -ENOENT ? -ENOENT : gf_err(fid);
    gfs_file_stat st;
    int rc = gfs_stat_file(fid, &st);
    if (!rc && sub >= st.nsubfiles)
        rc = -ENOENT;
    if (!rc && fork) {
        fork_find ff = {fork, 0, false};
        rc = gfs_list_forks(fid, (int)sub, fork_cb, &ff);
        if (rc >= 0)
            rc = ff.found ? 0 : -ENOENT;
        w->size = ff.size;
        snprintf(w->fork, sizeof(w->fork), "%s", fork);
    }
    gfs_close_file(fid);
    if (rc)
        return gf_err(rc);
    w->kind = fork ? K_FORK : K_SUBFILE;
    w->subfile = (int)sub;
    memcpy(w->file, buf, strlen(buf) + 1);
    return 0;
}

int gf_classify(const char *p, what *w)
{
    memset(w, 0, sizeof(*w));
    if (strcmp(p, "/") == 0) {
        w->kind = K_ROOT;
        return 0;
    }
    int rc = components_ok(p);
    if (rc)
        return rc;
    if (strlen(p) > GFS_NAME_MAX) { /* no Galley name: a fork's at most */
        rc = classify_plain(p, w);
        return rc == -ENOENT ? -ENAMETOOLONG : rc;
    }
    gfs_layout lay;
    int64_t size;
    int sid = gfs_striped_stat(p, &size, &lay); /* without opening it */
    if (sid >= 0) {
        w->size = size;
        w->unit = lay.unit;
        w->kind = K_FILE;
        return 0;
    }
    if (sid == GFS_ELAYOUT) {
        w->kind = K_PLAIN;
        return 0;
    }
    if (sid != -ENOENT && sid != -EINVAL)
        return gf_err(sid);
    rc = implied_dir(p);
    if (rc < 0)
        return gf_err(rc);
    if (rc || dir_made(p) || dir_under(p)) {
        w->kind = K_DIR;
        return 0;
    }
    return classify_plain(p, w);
}

/* ------------------------------------------------------------------------
 * readdir
 * ------------------------------------------------------------------------ */

/* readdir of a directory: the next component of every name under it,
 * once each (names are listed sorted, so repeats are adjacent). */
typedef struct lister {
    size_t plen; /* of "<dir>/" */
    void *buf;
    fuse_fill_dir_t fill;
    char last[GFS_NAME_MAX + 1];
} lister;

static int list_cb(const char *name, void *arg)
{
    lister *l = arg;
    const char *rest = name + l->plen;
    size_t n = strcspn(rest, "/");
    if (n == 0 || n > GFS_NAME_MAX)
        return 0;
    if (strlen(l->last) == n && strncmp(l->last, rest, n) == 0)
        return 0;
    memcpy(l->last, rest, n);
    l->last[n] = '\0';
    l->fill(l->buf, l->last, NULL, 0, 0);
    return 0;
}

static int fork_list_cb(const char *name, uint64_t size, void *arg)
{
    lister *l = arg;
    l->fill(l->buf, name, NULL, 0, 0);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of directory "<prefix>" (ending in '/') that only kept
 * directories make: the next component of each kept directory under it
 * that no file's name implies (those were listed from the files). */
static void fill_kept(const char *prefix, void *buf, fuse_fill_dir_t fill)
{
    size_t plen = strlen(prefix);
    char **mine = NULL;
    int n = 0;
    pthread_mutex_lock(&dir_lock);
    mine = ndirs ? calloc((size_t)ndirs, sizeof(*mine)) : NULL;
    for (int i = 0; mine && i < ndirs; i++)
        if (strncmp(dirs[i], prefix, plen) == 0 && dirs[i][plen]) {
            size_t c = strcspn(dirs[i] + plen, "/");
            char *s = strndup(dirs[i], plen + c);
            if (s)
                mine[n++] = s;
        }
    pthread_mutex_unlock(&dir_lock);
    if (n)
        qsort(mine, (size_t)n, sizeof(*mine), cmp_str);
    for (int i = 0; i < n; i++) {
        if ((i == 0 || strcmp(mine[i], mine[i - 1]) != 0) &&
            implied_dir(mine[i]) == 0)
            fill(buf, mine[i] + plen, NULL, 0, 0);
    }
    for (int i = 0; i < n; i++)
        free(mine[i]);
    free(mine);
}

/* readdir of a plain file (its subfiles) or of a subfile (its forks). */
static int readdir_plain(const char *p, const what *w, void *buf,
                         fuse_fill_dir_t fill)
{
    lister l = {0, buf, fill, ""};
    int fid = gfs_open_file(w->kind == K_PLAIN ? p : w->file);
    if (fid < 0)
        return gf_err(fid);
    int rc;
    if (w->kind == K_PLAIN) {
        gfs_file_stat st;
        rc = gfs_stat_file(fid, &st);
        for (int i = 0; !rc && i < st.nsubfiles; i++) {
            char name[32];
            snprintf(name, sizeof(name), "subfile%d", i);
            fill(buf, name, NULL, 0, 0);
        }
    } else {
        rc = gfs_list_forks(fid, w->subfile, fork_list_cb, &l);
    }
    gfs_close_file(fid);
    return gf_err(rc);
}

int gf_readdir(const char *p, void *buf, fuse_fill_dir_t fill, off_t off,
               struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    what w;
    int rc = gf_classify(p, &w);
    if (rc)
        return rc;
    fill(buf, ".", NULL, 0, 0);
    fill(buf, "..", NULL, 0, 0);
    if (w.kind == K_PLAIN || w.kind == K_SUBFILE)
        return readdir_plain(p, &w, buf, fill);
    if (w.kind != K_ROOT && w.kind != K_DIR)
        return -ENOTDIR;
    char prefix[GFS_NAME_MAX + 2];
    snprintf(prefix, sizeof(prefix), "%s/", w.kind == K_ROOT ? "" : p);
    lister l = {strlen(prefix), buf, fill, ""};
    if (l.plen <= GFS_NAME_MAX) {
        rc = gfs_list_files(prefix, list_cb, &l);
        if (rc < 0)
            return gf_err(rc);
    }
    fill_kept(prefix, buf, fill);
    return 0;
}

/* ------------------------------------------------------------------------
 * Changing names
 * ------------------------------------------------------------------------ */

int gf_unlink(const char *p)
{
    what w;
    int rc = gf_classify(p, &w);
    if (rc)
        return rc;
    if (w.kind != K_FILE)
        return w.kind == K_FORK ? -EACCES : -EISDIR;
    rc = gfs_delete_file(p);
    if (!rc)
        keep_parent(p);
    return gf_err(rc);
}

int gf_mkdir(const char *p, mode_t mode)
{
    what w;
    int rc = gf_classify(p, &w);
    if (rc == 0)
        return -EEXIST;
    if (rc != -ENOENT)
        return rc;
    return dir_add(p);
}

int gf_rmdir(const char *p)
{
    what w;
    int rc = gf_classify(p, &w);
    if (rc)
        return rc;
    if (w.kind == K_FILE || w.kind == K_FORK)
        return -ENOTDIR;
    if (w.kind != K_DIR)
        return w.kind == K_ROOT ? -EBUSY : -EACCES;
    rc = dir_nonempty(p);
    if (rc)
        return rc < 0 ? gf_err(rc) : -ENOTEMPTY;
    dir_del(p);
    keep_parent(p);
    return 0;
}

typedef struct mover {
    char **names;
    int n, cap;
} mover;

static int collect_cb(const char *name, void *arg)
{
    mover *m = arg;
    if (m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 16;
        char **nn = realloc(m->names, (size_t)cap * sizeof(*nn));
        if (!nn)
            return -ENOMEM;
        m->names = nn;
        m->cap = cap;
    }
    m->names[m->n] = strdup(name);
    return m->names[m->n++] ? 0 : -ENOMEM;
}

/* Directory from becomes to (absent, or an empty directory): every file
 * under it, then the kept directories under it and it itself.  Names that
 * would be too long fail the call before anything moves; a file that
 * fails to move stops it there, loudly (those moved so far stay moved). */
static int move_tree(const char *from, const char *to)
{
    size_t flen = strlen(from), tlen = strlen(to);
    char prefix[GFS_NAME_MAX + 1];
    mover m = {NULL, 0, 0};
    int rc = 0;
    if (snprintf(prefix, sizeof(prefix), "%s/", from) < (int)sizeof(prefix))
        rc = gfs_list_files(prefix, collect_cb, &m);
    for (int i = 0; rc >= 0 && i < m.n; i++)
        if (tlen + strlen(m.names[i]) - flen > GFS_NAME_MAX)
            rc = -ENAMETOOLONG;
    if (rc >= 0 && tlen + dir_longest_tail(from) > GFS_NAME_MAX)
        rc = -ENAMETOOLONG;
    for (int i = 0; rc >= 0 && i < m.n; i++) {
        char dst[GFS_NAME_MAX + 1];
        snprintf(dst, sizeof(dst), "%s%s", to, m.names[i] + flen);
        rc = px_rename_file(m.names[i], dst);
    }
    for (int i = 0; i < m.n; i++)
        free(m.names[i]);
    free(m.names);
    if (rc < 0)
        return gf_err(rc);
    rc = dir_move(from, to);
    if (!rc)
        rc = dir_add(to);
    keep_parent(from);
    return rc;
}

int gf_rename(const char *from, const char *to, unsigned flags)
{
    if (flags & ~RENAME_NOREPLACE)
        return -EINVAL;
    what w, wt;
    int rc = gf_classify(from, &w);
    if (rc)
        return rc;
    int trc = gf_classify(to, &wt);
    if (trc && trc != -ENOENT)
        return trc;
    if (!trc && (flags & RENAME_NOREPLACE))
        return -EEXIST;
    if (w.kind == K_FILE) {
        if (!trc && wt.kind != K_FILE)
            return -EISDIR;
        rc = px_rename_file(from, to);
        if (!rc)
            keep_parent(from);
        return gf_err(rc);
    }
    if (w.kind != K_DIR)
        return -EACCES;
    if (!trc && strcmp(from, to) == 0)
        return 0;
    if (!trc && wt.kind != K_DIR)
        return -ENOTDIR;
    if (is_under(to, from, false))
        return -EINVAL;
    if (!trc) {
        rc = dir_nonempty(to);
        if (rc)
            return rc < 0 ? gf_err(rc) : -ENOTEMPTY;
    }
    return move_tree(from, to);
}
