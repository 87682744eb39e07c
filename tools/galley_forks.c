/*
 * galley_forks.c -- the `galley fork ...` subcommands: create, ls, rm,
 * write (replace a fork's bytes with a local file) and read.
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "galley_cli.h"

int fork_create(opts *o)
{
    const char *name = o->pos[1];
    int fid = open_file(name), sub;
    if (fid < 0)
        return EXIT_FAIL;
    int ret = subfile_arg(fid, name, o->pos[2], &sub);
    if (ret == 0) {
        int rc = gfs_create_fork(fid, sub, o->pos[3]);
        if (rc < 0)
            ret = fail(rc, "cannot create fork", o->pos[3]);
    }
    gfs_close_file(fid);
    return ret;
}

int fork_rm(opts *o)
{
    const char *name = o->pos[1];
    int fid = open_file(name), sub;
    if (fid < 0)
        return EXIT_FAIL;
    int ret = subfile_arg(fid, name, o->pos[2], &sub);
    if (ret == 0) {
        int rc = gfs_delete_fork(fid, sub, o->pos[3]);
        if (rc < 0)
            ret = fail(rc, "cannot delete fork", o->pos[3]);
    }
    gfs_close_file(fid);
    return ret;
}

int fork_ls(opts *o)
{
    const char *name = o->pos[1];
    int fid = open_file(name);
    if (fid < 0)
        return EXIT_FAIL;
    int ret = EXIT_OK;
    gfs_file_stat st;
    int rc = gfs_stat_file(fid, &st);
    if (rc < 0) {
        ret = fail(rc, "cannot stat", name);
        goto out_close;
    }
    int lo = 0, hi = st.nsubfiles - 1;
    if (o->npos > 2) {
        ret = subfile_arg(fid, name, o->pos[2], &lo);
        if (ret)
            goto out_close;
        hi = lo;
    }
    for (int i = lo; i <= hi; i++) {
        printf("subfile %d (server %d):\n", i, st.servers[i]);
        struct fork_print fp = {0, "  "};
        rc = gfs_list_forks(fid, i, print_fork, &fp);
        if (rc < 0) {
            ret = fail(rc, "cannot list forks of", name);
            break;
        }
        if (fp.count == 0)
            printf("  (no forks)\n");
    }
out_close:
    gfs_close_file(fid);
    return ret;
}

int fork_write(opts *o)
{
    const char *name = o->pos[1], *fork = o->pos[3], *local = o->pos[4];
    int fd = in_open(local);
    if (fd < 0)
        return fail_errno(-fd, "cannot open", local);
    int ret = EXIT_OK, sub, kid = -1, rc;
    char *buf = NULL;
    int fid = open_file(name);
    if (fid < 0) {
        ret = EXIT_FAIL;
        goto out_in;
    }
    ret = subfile_arg(fid, name, o->pos[2], &sub);
    if (ret)
        goto out_file;
    kid = gfs_open_fork(fid, sub, fork);
    if (kid == -ENOENT) {
        rc = gfs_create_fork(fid, sub, fork);
        if (rc < 0 && rc != -EEXIST) {
            ret = fail(rc, "cannot create fork", fork);
            goto out_file;
        }
        kid = gfs_open_fork(fid, sub, fork);
    }
    if (kid < 0) {
        ret = fail(kid, "cannot open fork", fork);
        goto out_file;
    }
    buf = malloc(CHUNK);
    if (!buf) {
        ret = fail_errno(ENOMEM, "cannot allocate buffer for", local);
        goto out_fork;
    }
    int64_t off = 0;
    for (;;) {
        ssize_t n = read_full(fd, buf, CHUNK);
        if (n < 0) {
            ret = fail_errno((int)-n, "cannot read", local);
            goto out_fork;
        }
        if (n == 0)
            break;
        int64_t w = gfs_write(kid, off, buf, n);
        if (w < 0) {
            ret = fail((int)w, "cannot write fork", fork);
            goto out_fork;
        }
        off += n;
        if ((size_t)n < CHUNK)
            break;
    }
    rc = gfs_truncate_fork(kid, off);
    if (rc < 0)
        ret = fail(rc, "cannot set size of fork", fork);
out_fork:
    free(buf);
    gfs_close_fork(kid);
out_file:
    gfs_close_file(fid);
out_in:
    in_close(fd);
    return ret;
}

int fork_read(opts *o)
{
    const char *name = o->pos[1], *fork = o->pos[3], *local = o->pos[4];
    int ret = EXIT_OK, sub, rc;
    char *buf = NULL;
    int fid = open_file(name);
    if (fid < 0)
        return EXIT_FAIL;
    ret = subfile_arg(fid, name, o->pos[2], &sub);
    if (ret)
        goto out_file;
    int kid = gfs_open_fork(fid, sub, fork);
    if (kid < 0) {
        ret = fail(kid, "cannot open fork", fork);
        goto out_file;
    }
    int64_t size = gfs_fork_size(kid);
    if (size < 0) {
        ret = fail((int)size, "cannot get size of fork", fork);
        goto out_fork;
    }
    buf = malloc(CHUNK);
    if (!buf) {
        ret = fail_errno(ENOMEM, "cannot allocate buffer for", local);
        goto out_fork;
    }
    outfile out;
    rc = out_open(&out, local);
    if (rc < 0) {
        ret = fail_errno(-rc, "cannot create", local);
        goto out_fork;
    }
    bool ok = true;
    for (int64_t off = 0; off < size;) {
        int64_t want = size - off < CHUNK ? size - off : CHUNK;
        int64_t r = gfs_read(kid, off, buf, want);
        if (r < 0) {
            ret = fail((int)r, "cannot read fork", fork);
            ok = false;
            break;
        }
        if (r == 0)
            break;
        rc = write_all(out.fd, buf, (size_t)r);
        if (rc < 0) {
            ret = fail_errno(-rc, "cannot write", local);
            ok = false;
            break;
        }
        off += r;
    }
    rc = out_close(&out, ok);
    if (ok && rc < 0)
        ret = fail_errno(-rc, "cannot finish", local);
out_fork:
    free(buf);
    gfs_close_fork(kid);
out_file:
    gfs_close_file(fid);
    return ret;
}
