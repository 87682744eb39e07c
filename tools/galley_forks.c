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

/* `fork create|rm FILE SUBFILE FORK`: op is gfs_create_fork or
 * gfs_delete_fork, what the message when it fails. */
static int fork_named_op(opts *o, int (*op)(int, int, const char *),
                         const char *what)
{
    const char *name = o->pos[1];
    int fid = open_file(name), sub;
    if (fid < 0)
        return EXIT_FAIL;
    int ret = subfile_arg(fid, name, o->pos[2], &sub);
    if (ret == 0) {
        int rc = op(fid, sub, o->pos[3]);
        if (rc < 0)
            ret = fail(rc, what, o->pos[3]);
    }
    gfs_close_file(fid);
    return ret;
}

int fork_create(opts *o)
{
    return fork_named_op(o, gfs_create_fork, "cannot create fork");
}

int fork_rm(opts *o)
{
    return fork_named_op(o, gfs_delete_fork, "cannot delete fork");
}

int fork_ls(opts *o)
{
    const char *name = o->pos[1];
    gfs_file_stat st;
    int fid = open_stat(name, &st);
    if (fid < 0)
        return EXIT_FAIL;
    int ret = EXIT_OK, rc;
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

/* For fork write (create true: the fork is created when missing) and
 * fork read: open file o->pos[1], its fork o->pos[3] on subfile o->pos[2],
 * and a CHUNK buffer.  0 with all three (fork_done closes them), or an
 * exit status (printed, nothing left open). */
static int fork_start(opts *o, bool create, int *fid, int *kid, char **buf)
{
    const char *name = o->pos[1], *fork = o->pos[3], *local = o->pos[4];
    int sub, rc;
    *fid = open_file(name);
    if (*fid < 0)
        return EXIT_FAIL;
    int ret = subfile_arg(*fid, name, o->pos[2], &sub);
    if (ret)
        goto out_file;
    *kid = gfs_open_fork(*fid, sub, fork);
    if (create && *kid == -ENOENT) {
        rc = gfs_create_fork(*fid, sub, fork);
        if (rc < 0 && rc != -EEXIST) {
            ret = fail(rc, "cannot create fork", fork);
            goto out_file;
        }
        *kid = gfs_open_fork(*fid, sub, fork);
    }
    if (*kid < 0) {
        ret = fail(*kid, "cannot open fork", fork);
        goto out_file;
    }
    *buf = malloc(CHUNK);
    if (*buf)
        return 0;
    ret = fail_errno(ENOMEM, "cannot allocate buffer for", local);
    gfs_close_fork(*kid);
out_file:
    gfs_close_file(*fid);
    return ret;
}

static void fork_done(int fid, int kid, char *buf)
{
    free(buf);
    gfs_close_fork(kid);
    gfs_close_file(fid);
}

int fork_write(opts *o)
{
    const char *fork = o->pos[3], *local = o->pos[4];
    int fd = in_open(local);
    if (fd < 0)
        return fail_errno(-fd, "cannot open", local);
    int fid, kid;
    char *buf;
    int ret = fork_start(o, true, &fid, &kid, &buf);
    if (ret == 0) {
        copy_obj g = {kid, false, fork};
        ret = copy_in(&g, fd, local, buf);
        fork_done(fid, kid, buf);
    }
    in_close(fd);
    return ret;
}

int fork_read(opts *o)
{
    const char *fork = o->pos[3], *local = o->pos[4];
    int fid, kid;
    char *buf;
    int ret = fork_start(o, false, &fid, &kid, &buf);
    if (ret == 0) {
        copy_obj g = {kid, false, fork};
        ret = copy_out(&g, local, buf);
        fork_done(fid, kid, buf);
    }
    return ret;
}
