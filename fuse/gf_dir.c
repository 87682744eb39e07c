/*
 * gf_dir.c -- galley-fuse's name space: what a path is (gf_classify), the
 * directories the daemon keeps, the name limits, and the operations on
 * names: readdir, unlink, mkdir, rmdir, rename.
 *
 * Directories: one model with the preload (px_dirmark.h).  A directory
 * exists while some Galley name lies under it: a file's, or the marker
 * "<dir>/" of it or of a directory below it.  mkdir writes the marker,
 * rmdir deletes it; when the last entry under a directory goes away
 * through the mount, the mount writes the directory's marker, so it stays
 * until rmdir (as on any file system).  Markers are on the servers: every
 * process, mount and unmount sees the same directories.  A directory is
 * empty when only its own marker is under it: rmdir and rename over it
 * answer ENOTEMPTY while it holds so much as an empty subdirectory, and
 * rename moves every name under a directory, markers at any depth too.
 *
 * Names: a path on the mount is the Galley name, leading '/' included,
 * and Galley names are at most GFS_NAME_MAX (255) bytes in all (the
 * protocol's name fields, the servers' records and libgalley's structs
 * carry no longer ones).  A component over NAME_MAX, or a path over
 * GFS_NAME_MAX that is not inside a plain file's view, answers
 * ENAMETOOLONG to every operation, the kernel's lookup first; so does a
 * rename of a directory whose tree would get a name over the limit, before
 * anything moves, and mkdir of a name of GFS_NAME_MAX bytes (its marker
 * would be one more).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf_internal.h"
#include "px_dirmark.h"
#include "px_rename.h"

/* 1 if q is p itself (self) or lies under p ("/" holds everything). */
static bool is_under(const char *q, const char *p, bool self)
{
    size_t n = strcmp(p, "/") == 0 ? 0 : strlen(p);
    if (strncmp(q, p, n) != 0)
        return false;
    return q[n] == '/' || (self && q[n] == '\0');
}

/* ------------------------------------------------------------------------
 * What a path is
 * ------------------------------------------------------------------------ */

/* 1 if directory p holds anything (a file or a directory), 0, or a
 * negative gfs error. */
static int dir_nonempty(const char *p)
{
    int rc = px_dir_holds(p);
    return rc < 0 ? rc : rc == PX_DIR_FULL;
}

/* After the last entry under p's parent went away, the parent stays
 * until rmdir (as on any file system): it gets its marker if no other
 * name keeps it. */
static void keep_parent(const char *p)
{
    char parent[GFS_NAME_MAX + 1];
    const char *slash = strrchr(p, '/');
    size_t n = slash ? (size_t)(slash - p) : 0;
    if (n == 0 || n > GFS_NAME_MAX)
        return;
    memcpy(parent, p, n);
    parent[n] = '\0';
    if (px_dir_holds(parent) == PX_DIR_NONE) /* (as it showed: no owner) */
        px_dir_make(parent, PX_DIR_PERM, -1, -1);
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

/* What stat shows of a striped file or a directory's marker, into w. */
static void take_info(what *w, const gfs_striped_info *fs)
{
    w->size = fs->size;
    w->unit = fs->layout.unit;
    w->mtime = fs->mtime_ns;
    w->ctime = fs->ctime_ns;
    w->atime = fs->atime_ns;
    w->mode = fs->mode;
    w->uid = fs->uid;
    w->gid = fs->gid;
    w->rdev = fs->rdev;
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
    gfs_striped_info fs;
    int sid = gfs_striped_stat_all(p, &fs); /* unopened */
    if (sid >= 0) {
        take_info(w, &fs);
        w->kind = K_FILE;
        return 0;
    }
    if (sid == GFS_ELAYOUT) {
        w->kind = K_PLAIN;
        return 0;
    }
    if (sid != -ENOENT && sid != -EINVAL)
        return gf_err(sid);
    /* a directory: its marker keeps its mode and owner; without one, a
     * name under it implies it */
    rc = px_dir_attrs(p, &fs);
    take_info(w, &fs);
    if (rc == 0)
        rc = px_dir_holds(p);
    if (rc < 0)
        return gf_err(rc);
    if (rc != PX_DIR_NONE) {
        w->kind = K_DIR;
        return 0;
    }
    return classify_plain(p, w);
}

/* ------------------------------------------------------------------------
 * readdir
 * ------------------------------------------------------------------------ */

/* readdir of a directory: the next component of every name under it,
 * once each (names are listed sorted, so repeats are adjacent); the
 * directory's own marker has none, a subdirectory's gives its name. */
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

/* The kernel has looked the parent up as a directory; inside a plain
 * file's view (subfiles and forks) nothing can be made. */
int gf_mkdir(const char *p, mode_t mode)
{
    what w;
    int rc = gf_classify(p, &w);
    if (rc == 0)
        return -EEXIST;
    if (rc != -ENOENT)
        return rc;
    char parent[GFS_NAME_MAX + 1];
    size_t n = (size_t)(strrchr(p, '/') - p);
    if (n > 0) {
        memcpy(parent, p, n);
        parent[n] = '\0';
        rc = gf_classify(parent, &w);
        if (rc)
            return rc;
        if (w.kind != K_DIR)
            return w.kind == K_FILE ? -ENOTDIR : -EACCES;
    }
    const struct fuse_context *c = fuse_get_context();
    return gf_err(px_dir_make(p, mode & 07777, c->uid, c->gid));
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
    rc = px_dir_remove(p);
    if (rc)
        return gf_err(rc);
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

/* Directory from becomes to (absent, or an empty directory): every name
 * under it, files and markers (its own first: names are listed sorted;
 * it replaces to's).  Names that would be too long fail the call before
 * anything moves; a name that fails to move stops it there, loudly (those
 * moved so far stay moved). */
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
    keep_parent(from);
    return 0;
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
