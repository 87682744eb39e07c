/*
 * galley_files.c -- the `galley` tool's commands on files: ls, stat, rm,
 * create, put (a local file into a new striped file) and get (a striped
 * file out).
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include "galley_cli.h"

static int print_name(const char *name, void *arg)
{
    (void)arg;
    printf("%s\n", name);
    return 0;
}

int cmd_ls(opts *o)
{
    const char *prefix = o->npos ? o->pos[0] : "";
    int rc = gfs_list_files(prefix, print_name, NULL);
    if (rc < 0)
        return fail(rc, "cannot list files", NULL);
    return EXIT_OK;
}

/* For a local-layout file: its blocks per server.  0 when printed or not
 * a local file, -1 on error. */
static int stat_local_blocks(int sid)
{
    gfs_local_stat ls;
    int rc = gfs_striped_local_stat(sid, &ls);
    if (rc == -EINVAL)
        return 0;
    if (rc < 0) {
        printf("blocks:    unknown (%s)\n", gfs_strerror(rc));
        return -1;
    }
    printf("blocks:    %" PRId64 " of %" PRId64 " bytes\n", ls.total_blocks,
           ls.block_size);
    for (int i = 0; i < ls.nsubfiles; i++)
        printf("  server %d (%s): %" PRId64 " blocks\n", ls.servers[i],
               addr_of(ls.servers[i]), ls.blocks[i]);
    return 0;
}

int cmd_stat(opts *o)
{
    const char *name = o->pos[0];
    gfs_file_stat st;
    int fid = open_stat(name, &st);
    if (fid < 0)
        return EXIT_FAIL;
    int ret = EXIT_OK, rc;
    printf("file:      %s\n", name);
    printf("subfiles:  %d\n", st.nsubfiles);
    char algo[32];
    if (gfs_get_attr(fid, "galley.checksum", algo, sizeof(algo)) > 0 &&
        strcmp(algo, "none") != 0)
        printf("checksum:  %s (32 KiB chunks of each fork)\n", algo);

    char unit[1024], fork[1024];
    int ru = gfs_get_attr(fid, "galley.stripe_unit", unit, sizeof(unit));
    int rf = gfs_get_attr(fid, "galley.stripe_fork", fork, sizeof(fork));
    char lay[32];
    if (gfs_get_attr(fid, "galley.layout", lay, sizeof(lay)) < 0)
        strcpy(lay, "striped");
    if (ru >= 0 || rf >= 0) {
        printf("layout:    %s, unit %s, fork %s\n", lay,
               ru >= 0 ? unit : "(missing)", rf >= 0 ? fork : "(missing)");
        int sid = gfs_striped_open(name);
        if (sid < 0) {
            printf("size:      unknown (%s)\n", gfs_strerror(sid));
            ret = EXIT_FAIL;
        } else {
            int64_t sz = gfs_striped_size(sid);
            if (sz < 0) {
                printf("size:      unknown (%s)\n", gfs_strerror((int)sz));
                ret = EXIT_FAIL;
            } else {
                char h[32];
                human((uint64_t)sz, h, sizeof(h));
                printf("size:      %" PRId64 " bytes (%s, logical)\n", sz, h);
            }
            unsigned mode;
            if (gfs_striped_mode(sid, &mode) == 0)
                printf("mode:      %04o\n", mode & 07777);
            int64_t mt;
            if (gfs_striped_size_mtime(sid, &sz, &mt) == 0 && mt > 0) {
                time_t t = (time_t)(mt / 1000000000);
                char when[64];
                strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", gmtime(&t));
                printf("modified:  %s.%09d UTC\n", when,
                       (int)(mt % 1000000000));
            }
            if (stat_local_blocks(sid) < 0)
                ret = EXIT_FAIL;
            gfs_striped_close(sid);
        }
    } else if (ru != -ENOENT && ru < 0) {
        printf("layout:    unknown (%s)\n", gfs_strerror(ru));
    } else {
        printf("layout:    none (plain Galley file)\n");
    }
    gfs_copies *cp = calloc(1, sizeof(*cp));
    rc = cp ? gfs_copies_of(name, cp) : -ENOMEM;
    if (rc < 0) {
        printf("copies:    unknown (%s)\n", gfs_strerror(rc));
        ret = EXIT_FAIL;
    } else if (cp->replicas > 1) {
        printf("copies:    %d per subfile, generation %" PRId64 "%s\n",
               cp->replicas, cp->gen,
               cp->insync_min < cp->replicas ? ", DEGRADED" : "");
    }

    for (int i = 0; i < st.nsubfiles; i++) {
        printf("subfile %d: server %d (%s)\n", i, st.servers[i],
               addr_of(st.servers[i]));
        for (int c = 0; cp && cp->replicas > 1 && c < cp->replicas; c++)
            printf("    copy %d: server %d (%s) %s, header %" PRIu64 "\n", c,
                   cp->server[i][c], addr_of(cp->server[i][c]),
                   cp->state[i][c] == GFS_COPY_INSYNC ? "in-sync" : "stale",
                   cp->header[i][c]);
        struct fork_print fp = {0, "    "};
        rc = gfs_list_forks(fid, i, print_fork, &fp);
        if (rc < 0) {
            printf("    error listing forks: %s\n", gfs_strerror(rc));
            ret = EXIT_FAIL;
        } else if (fp.count == 0) {
            printf("    (no forks)\n");
        }
    }
    free(cp);
    gfs_close_file(fid);
    return ret;
}

int cmd_rm(opts *o)
{
    int rc = gfs_delete_file(o->pos[0]);
    if (rc < 0)
        return fail(rc, "cannot delete", o->pos[0]);
    return EXIT_OK;
}

/* Subfile count and server list for create/put from -n and -s. */
static int layout_args(const opts *o, int *nsub, const int **servers)
{
    int n = gfs_num_servers();
    if (n < 0)
        return fail(n, "cannot count servers", NULL);
    *servers = NULL;
    if (o->nservers) {
        if (o->nsub && o->nsub != o->nservers) {
            fprintf(stderr,
                    "%s: -n %d does not match the %d servers given with -s\n",
                    prog, o->nsub, o->nservers);
            return EXIT_USAGE;
        }
        for (int i = 0; i < o->nservers; i++)
            if (o->servers[i] >= n) {
                fprintf(stderr, "%s: no server %d (the cluster has 0..%d)\n",
                        prog, o->servers[i], n - 1);
                return EXIT_USAGE;
            }
        *nsub = o->nservers;
        *servers = o->servers;
    } else {
        *nsub = o->nsub ? o->nsub : n;
        if (*nsub > n) {
            fprintf(stderr,
                    "%s: %d subfiles need %d servers; the cluster has %d\n",
                    prog, *nsub, *nsub, n);
            return EXIT_USAGE;
        }
    }
    return 0;
}

/* -C: the file's opt-in, before anything is written. */
static int set_checksum(const char *name)
{
    int fid = gfs_open_file(name);
    if (fid < 0)
        return fid;
    int rc = gfs_set_checksum(fid, "crc32c");
    gfs_close_file(fid);
    return rc;
}

int cmd_create(opts *o)
{
    const char *name = o->pos[0];
    int nsub;
    const int *servers;
    int ret = layout_args(o, &nsub, &servers);
    if (ret)
        return ret;
    int rc;
    if (o->plain) {
        if (o->unit || o->fork)
            return bad_usage("%s", "-p (plain) excludes -u and -F");
        if (o->replicas > 1)
            return bad_usage("%s", "-p (plain) excludes -R");
        rc = gfs_create_file(name, nsub, servers);
    } else if (o->layout) {
        if (o->replicas > 1)
            return bad_usage("%s", "-L excludes -R (replicated files are "
                                   "striped)");
        rc =
            gfs_create_layout(name, nsub, servers, o->unit, o->fork, o->layout);
    } else {
        rc = gfs_create_striped_replicas(
            name, nsub, servers, o->unit ? o->unit : GFS_DEFAULT_STRIPE_UNIT,
            o->fork ? o->fork : GFS_DEFAULT_STRIPE_FORK,
            o->replicas ? o->replicas : 1);
    }
    if (rc < 0)
        return fail(rc, "cannot create", name);
    if (o->csum && (rc = set_checksum(name)) < 0) {
        gfs_delete_file(name);
        return fail(rc, "cannot make checksummed", name);
    }
    return EXIT_OK;
}

static int resync_one(const char *name, void *arg)
{
    int *ret = arg;
    gfs_copies *cp = calloc(1, sizeof(*cp));
    int rc = cp ? gfs_copies_of(name, cp) : -ENOMEM;
    int fixed = 0;
    if (!rc && cp->replicas > 1) {
        rc = gfs_resync(name, &fixed);
        if (!rc)
            rc = gfs_copies_of(name, cp);
        if (!rc)
            printf("%s: %d cop%s brought back%s\n", name, fixed,
                   fixed == 1 ? "y" : "ies",
                   cp->insync_min < cp->replicas ? ", still DEGRADED" : "");
    }
    if (!rc && cp->replicas > 1 && cp->insync_min < cp->replicas)
        *ret = EXIT_FAIL;
    if (rc)
        *ret = fail(rc, "cannot resync", name);
    free(cp);
    return 0;
}

int cmd_resync(opts *o)
{
    int ret = EXIT_OK;
    if (o->npos == 1) {
        resync_one(o->pos[0], &ret);
        return ret;
    }
    int rc = gfs_list_files("", resync_one, &ret);
    return rc < 0 ? fail(rc, "cannot list files", NULL) : ret;
}

int cmd_put(opts *o)
{
    const char *local = o->pos[0], *name = o->pos[1];
    int nsub;
    const int *servers;
    int ret = layout_args(o, &nsub, &servers);
    if (ret)
        return ret;
    if (o->layout && o->replicas > 1)
        return bad_usage("%s", "-L excludes -R (replicated files are "
                               "striped)");

    int fd = in_open(local);
    if (fd < 0)
        return fail_errno(-fd, "cannot open", local);
    char *buf = malloc(CHUNK);
    if (!buf) {
        in_close(fd);
        return fail_errno(ENOMEM, "cannot allocate buffer for", local);
    }

    int fid = gfs_open_file(name);
    if (fid >= 0) {
        gfs_close_file(fid);
        if (!o->force) {
            fprintf(stderr, "%s: '%s' already exists (use -f to replace it)\n",
                    prog, name);
            ret = EXIT_FAIL;
            goto out_free;
        }
        int rc = gfs_delete_file(name);
        if (rc < 0) {
            ret = fail(rc, "cannot delete", name);
            goto out_free;
        }
    } else if (fid != -ENOENT) {
        ret = fail(fid, "cannot look up", name);
        goto out_free;
    }

    int rc = o->layout ? gfs_create_layout(name, nsub, servers, o->unit,
                                           o->fork, o->layout)
                       : gfs_create_striped_replicas(
                             name, nsub, servers,
                             o->unit ? o->unit : GFS_DEFAULT_STRIPE_UNIT,
                             o->fork ? o->fork : GFS_DEFAULT_STRIPE_FORK,
                             o->replicas ? o->replicas : 1);
    if (rc < 0) {
        ret = fail(rc, "cannot create", name);
        goto out_free;
    }
    if (o->csum && (rc = set_checksum(name)) < 0) {
        ret = fail(rc, "cannot make checksummed", name);
        goto out_delete;
    }
    struct stat lst; /* a local file's permission bits are kept */
    if (fstat(fd, &lst) == 0 && S_ISREG(lst.st_mode) &&
        (lst.st_mode & 07777) != GFS_DEFAULT_MODE &&
        (rc = gfs_chmod(name, lst.st_mode & 07777)) < 0) {
        ret = fail(rc, "cannot set the mode of", name);
        goto out_delete;
    }
    int sid = gfs_striped_open(name);
    if (sid < 0) {
        ret = fail(sid, "cannot open", name);
        goto out_delete;
    }
    copy_obj g = {sid, true, name};
    ret = copy_in(&g, fd, local, buf);
    if (ret)
        goto out_sclose;
    gfs_striped_close(sid);
    goto out_free;

out_sclose:
    gfs_striped_close(sid);
out_delete:
    /* A half-written copy is worse than none: remove what we created. */
    rc = gfs_delete_file(name);
    if (rc < 0)
        fail(rc, "cannot remove partial copy", name);
    else
        fprintf(stderr, "%s: removed the partial copy '%s'\n", prog, name);
out_free:
    free(buf);
    in_close(fd);
    return ret;
}

int cmd_get(opts *o)
{
    const char *name = o->pos[0], *local = o->pos[1];
    int sid = gfs_striped_open(name);
    if (sid < 0)
        return fail(sid, "cannot open", name);
    int ret;
    char *buf = malloc(CHUNK);
    if (!buf) {
        ret = fail_errno(ENOMEM, "cannot allocate buffer for", name);
    } else {
        copy_obj g = {sid, true, name};
        ret = copy_out(&g, local, buf);
    }
    free(buf);
    gfs_striped_close(sid);
    return ret;
}

/* ------------------------------------------------------------- scrub ---- */

typedef struct scrub_state {
    int fid, subfile;
    const char *name, *fork;
    int files, forks, failed;
    int64_t chunks, bad, repaired;
} scrub_state;

/* A failing chunk of one copy of a replicated fork, and its repair. */
static void scrub_report(int copy, int server, int64_t chunk, int result,
                         void *arg)
{
    scrub_state *s = arg;
    printf("%s: subfile %d fork %s copy %d (server %d): chunk %" PRId64
           " (fork bytes %" PRId64 "..%" PRId64 ") FAILED its checksum: %s%s\n",
           s->name, s->subfile, s->fork, copy, server, chunk, chunk * 32768,
           chunk * 32768 + 32767, result ? "NOT repaired: " : "repaired",
           result ? gfs_strerror(result) : " from another copy");
}

static int scrub_fork(const char *fork, uint64_t size, void *arg)
{
    (void)size;
    scrub_state *s = arg;
    int kid = gfs_open_fork(s->fid, s->subfile, fork);
    int64_t chunks = 0, bad = 0, first = -1, repaired = 0;
    s->fork = fork;
    /* a replicated fork: every copy, repaired from another; else the one
     * copy, reported */
    int rc = kid < 0 ? kid
                     : gfs_scrub_fork_repair(kid, &chunks, &bad, &repaired,
                                             scrub_report, s);
    bool one = rc == -EINVAL;
    if (one)
        rc = gfs_scrub_fork(kid, &chunks, &bad, &first);
    if (kid >= 0)
        gfs_close_fork(kid);
    if (rc == -ENODATA)
        return 0; /* nothing stored with checksums (never written) */
    s->forks++;
    if (rc < 0) {
        printf("%s: subfile %d fork %s: cannot scrub: %s\n", s->name,
               s->subfile, fork, gfs_strerror(rc));
        s->failed++;
        return 0;
    }
    s->chunks += chunks;
    s->bad += bad;
    s->repaired += repaired;
    if (bad && !one && bad > repaired)
        printf("%s: subfile %d fork %s: %" PRId64 " of %" PRId64
               " chunks FAILED their checksum, %" PRId64 " repaired\n",
               s->name, s->subfile, fork, bad, chunks, repaired);
    else if (bad && one)
        printf("%s: subfile %d fork %s: %" PRId64 " of %" PRId64
               " chunks FAILED their checksum (first: chunk %" PRId64
               ", fork bytes %" PRId64 "..%" PRId64 ")\n",
               s->name, s->subfile, fork, bad, chunks, first, first * 32768,
               first * 32768 + 32767);
    return 0;
}

static int scrub_file(const char *name, void *arg)
{
    scrub_state *s = arg;
    int fid = gfs_open_file(name);
    if (fid < 0) {
        if (fid == -ENOENT)
            return 0; /* removed meanwhile */
        printf("%s: cannot open: %s\n", name, gfs_strerror(fid));
        s->failed++;
        return 0;
    }
    char v[32];
    gfs_file_stat st;
    int rc = gfs_get_attr(fid, "galley.checksum", v, sizeof(v));
    if (rc < 0 || strcmp(v, "crc32c") != 0 || gfs_stat_file(fid, &st) < 0) {
        gfs_close_file(fid);
        return 0; /* not checksummed: nothing to check against */
    }
    s->files++;
    s->fid = fid;
    s->name = name;
    for (int i = 0; i < st.nsubfiles; i++) {
        s->subfile = i;
        rc = gfs_list_forks(fid, i, scrub_fork, s);
        if (rc < 0) {
            printf("%s: subfile %d: cannot list forks: %s\n", name, i,
                   gfs_strerror(rc));
            s->failed++;
        }
    }
    gfs_close_file(fid);
    return 0;
}

int cmd_scrub(opts *o)
{
    scrub_state s = {0};
    int rc;
    if (o->npos) {
        rc = scrub_file(o->pos[0], &s);
        if (!rc && s.files == 0 && !s.failed) {
            fprintf(stderr, "%s: '%s' is not a checksummed file\n", prog,
                    o->pos[0]);
            return EXIT_FAIL;
        }
    } else {
        rc = gfs_list_files("", scrub_file, &s);
    }
    if (rc < 0)
        return fail(rc, "cannot list files", NULL);
    printf("scrub: %d checksummed files, %d forks, %" PRId64
           " chunks checked, %" PRId64 " failed, %" PRId64
           " repaired from another copy%s\n",
           s.files, s.forks, s.chunks, s.bad, s.repaired,
           s.failed ? ", some could not be checked" : "");
    /* every failing chunk repaired: the data is whole again */
    return s.bad > s.repaired || s.failed ? EXIT_FAIL : EXIT_OK;
}
