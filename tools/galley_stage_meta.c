/*
 * galley_stage_meta.c -- galley-stage-worker's commands on Galley's
 * metadata: list (the files under a prefix, with size, layout and
 * servers), cat, prepare (create a stage-in's files) and rm.  See
 * galley_stage.c for the program.
 *
 * Threads: list and prepare run a pool of threads over the files (the
 * client library is thread-safe; each item writes only its own output
 * slot); the rest runs on the caller's.
 */
#define _GNU_SOURCE /* vasprintf */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "galley_stage.h"

/* ------------------------------------------------------------------------
 * A pool of threads for the metadata of many files (list, prepare): each
 * file costs a few round trips, mostly waiting, so they overlap.  Item i's
 * output line is kept and printed in order once all are done.
 * ------------------------------------------------------------------------ */

#define POOL_THREADS 16

typedef struct pool {
    int n;
    int next; /* the next item to take (atomic) */
    char **out;
    int (*fn)(struct pool *, int i);
    void *arg;
} pool;

static void *pool_main(void *arg)
{
    pool *pl = arg;
    for (;;) {
        int i = __atomic_fetch_add(&pl->next, 1, __ATOMIC_RELAXED);
        if (i >= pl->n)
            return NULL;
        pl->fn(pl, i);
    }
}

/* Run fn over items 0..n-1; 0, or -ENOMEM (the items' own errors are in
 * their output). */
static int pool_run(pool *pl)
{
    pl->out = calloc(pl->n ? pl->n : 1, sizeof(*pl->out));
    if (!pl->out)
        return -ENOMEM;
    pthread_t th[POOL_THREADS];
    int nth = 0;
    for (; nth < POOL_THREADS && nth < pl->n; nth++)
        if (pthread_create(&th[nth], NULL, pool_main, pl))
            break;
    pool_main(pl); /* no thread at all still finishes */
    for (int t = 0; t < nth; t++)
        pthread_join(th[t], NULL);
    return 0;
}

static void pool_put(pool *pl, int i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void pool_put(pool *pl, int i, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&pl->out[i], fmt, ap) < 0)
        pl->out[i] = NULL;
    va_end(ap);
}

/* ------------------------------------------------------------------------
 * list, cat, prepare
 * ------------------------------------------------------------------------ */

typedef struct names {
    int n, cap;
    char **v;
} names;

static int add_name(const char *name, void *arg)
{
    names *nm = arg;
    if (nm->n == nm->cap) {
        int cap = nm->cap ? 2 * nm->cap : 256;
        char **v = realloc(nm->v, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        nm->v = v;
        nm->cap = cap;
    }
    return (nm->v[nm->n++] = strdup(name)) ? 0 : -ENOMEM;
}

/* The servers of file `name`, comma-separated, into buf. */
static int servers_of(const char *name, char *buf, size_t len)
{
    gfs_file_stat *st = malloc(sizeof(*st));
    int fid = st ? gfs_open_file(name) : -ENOMEM;
    int rc = fid < 0 ? fid : gfs_stat_file(fid, st);
    if (fid >= 0)
        gfs_close_file(fid);
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; !rc && i < st->nsubfiles && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%d", i ? "," : "",
                              st->servers[i]);
    free(st);
    return rc;
}

/* An array group's record (NAME.schema, NAME.copynum) up to this size is
 * listed with its bytes: the planner's checkpoint rule reads them, and
 * asking here saves it a process and a connection per record. */
#define RECORD_MAX 65536

static bool is_record(const char *name)
{
    size_t n = strlen(name);
    return (n > 7 && !strcmp(name + n - 7, ".schema")) ||
           (n > 8 && !strcmp(name + n - 8, ".copynum"));
}

/* " HEX" of the whole (small) file, or "" when it cannot be read. */
static char *record_hex(const char *name, int64_t size)
{
    int sid = gfs_striped_open(name);
    unsigned char *buf = sid >= 0 ? malloc((size_t)size + 1) : NULL;
    char *hex = buf ? malloc(2 * (size_t)size + 2) : NULL;
    int64_t r = hex ? gfs_striped_read(sid, 0, buf, size) : -1;
    if (sid >= 0)
        gfs_striped_close(sid);
    if (r != size) {
        free(hex);
        hex = NULL;
    } else {
        hex[0] = '\t';
        for (int64_t k = 0; k < size; k++)
            sprintf(hex + 1 + 2 * k, "%02x", buf[k]);
        hex[1 + 2 * size] = '\0';
    }
    free(buf);
    return hex ? hex : strdup("");
}

static int list_one(pool *pl, int i)
{
    const char *name = ((names *)pl->arg)->v[i];
    gfs_striped_info st = {0};
    char srv[GFS_MAX_SUBFILES * 4 + 1];
    int rc = gfs_striped_stat_all(name, &st);
    int64_t size = st.size;
    const gfs_layout lay = st.layout;
    if (!rc)
        rc = servers_of(name, srv, sizeof(srv));
    if (rc < 0 || S_ISLNK(st.mode)) {
        pool_put(pl, i, "E\t%s\t%s\n",
                 rc < 0 ? gfs_strerror(rc) : "a symbolic link", name);
        return 0;
    }
    char *hex =
        is_record(name) && size <= RECORD_MAX ? record_hex(name, size) : NULL;
    pool_put(pl, i,
             "F\t%" PRId64 "\t%d\t%" PRId64 "\t%s\t0\t%s\t%s\t%o\t%" PRId64
             "\t%s%s\n",
             size, lay.nsubfiles, lay.unit,
             lay.kind == GFS_LAYOUT_LOCAL ? "local" : "striped", lay.fork, srv,
             st.mode & 07777, st.mtime_ns, name, hex ? hex : "");
    free(hex);
    return 0;
}

/* Print each line of pl in order; EXIT_OK or EXIT_FAIL. */
static int pool_print(pool *pl)
{
    int ret = EXIT_OK;
    for (int i = 0; i < pl->n; i++) {
        if (!pl->out[i] || fputs(pl->out[i], stdout) < 0)
            ret = EXIT_FAIL;
        free(pl->out[i]);
    }
    free(pl->out);
    return fflush(stdout) ? EXIT_FAIL : ret;
}

int cmd_list(const char *prefix)
{
    names nm = {0, 0, NULL};
    int rc = gfs_list_files(prefix, add_name, &nm);
    pool pl = {nm.n, 0, NULL, list_one, &nm};
    if (!rc)
        rc = pool_run(&pl);
    if (rc < 0) {
        fprintf(stderr, "%s: cannot list files: %s\n", prog, gfs_strerror(rc));
        return EXIT_FAIL;
    }
    for (int i = 0; i < nm.n; i++)
        free(nm.v[i]);
    free(nm.v);
    return pool_print(&pl);
}

int cmd_cat(const char *name)
{
    int sid = gfs_striped_open(name);
    if (sid < 0) {
        fprintf(stderr, "%s: cannot open '%s': %s\n", prog, name,
                gfs_strerror(sid));
        return EXIT_FAIL;
    }
    int ret = EXIT_OK;
    static char buf[1 << 20];
    for (int64_t off = 0;; off += (int64_t)sizeof(buf)) {
        int64_t r = gfs_striped_read(sid, off, buf, sizeof(buf));
        if (r < 0) {
            fprintf(stderr, "%s: cannot read '%s': %s\n", prog, name,
                    gfs_strerror((int)r));
            ret = EXIT_FAIL;
            break;
        }
        if (r > 0 && fwrite(buf, 1, (size_t)r, stdout) != (size_t)r)
            ret = EXIT_FAIL;
        if (r < (int64_t)sizeof(buf))
            break;
    }
    gfs_striped_close(sid);
    return ret;
}

/* Create one destination of a stage-in, with its layout. */
static int prepare_one(const sfile *s)
{
    int nserv = gfs_num_servers();
    int nsub = s->nsub > nserv ? nserv : s->nsub;
    int rc = gfs_create_layout(s->dst, nsub, NULL, s->unit, s->fork, s->kind);
    if (rc == -EEXIST) { /* replaced, as cp does (asked only then) */
        rc = gfs_delete_file(s->dst);
        if (rc < 0 && rc != -ENOENT)
            return rc;
        rc = gfs_create_layout(s->dst, nsub, NULL, s->unit, s->fork, s->kind);
    }
    struct stat st; /* the source's permission bits, kept */
    if (!rc && stat(s->src, &st) == 0 &&
        (st.st_mode & 07777) != GFS_DEFAULT_MODE)
        rc = gfs_chmod(s->dst, st.st_mode & 07777);
    if (rc < 0 || !s->csum)
        return rc;
    int fid = gfs_open_file(s->dst);
    rc = fid < 0 ? fid : gfs_set_checksum(fid, "crc32c");
    if (fid >= 0)
        gfs_close_file(fid);
    return rc;
}

/* Create item i and say its servers ("IDX servers"), or why not. */
static int prepare_item(pool *pl, int i)
{
    const sfile *s = &((plan *)pl->arg)->files[i];
    char srv[GFS_MAX_SUBFILES * 4 + 1];
    int rc = prepare_one(s);
    if (!rc)
        rc = servers_of(s->dst, srv, sizeof(srv));
    if (rc < 0)
        pool_put(pl, i, "E\t%d\tcannot create 'galley:%s': %s\n", i, s->dst,
                 gfs_strerror(rc));
    else
        pool_put(pl, i, "%d\t%s\n", i, srv);
    return 0;
}

int cmd_prepare(const char *path)
{
    plan p;
    if (plan_read(path, &p) < 0)
        return EXIT_FAIL;
    if (!p.in) {
        fprintf(stderr, "%s: prepare is for a stage-in plan\n", prog);
        return EXIT_USAGE;
    }
    pool pl = {p.nfiles, 0, NULL, prepare_item, &p};
    if (pool_run(&pl) < 0) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return EXIT_FAIL;
    }
    int ret = EXIT_OK;
    for (int i = 0; i < pl.n; i++)
        if (pl.out[i] && pl.out[i][0] == 'E') {
            fprintf(stderr, "%s: %s", prog, strchr(pl.out[i] + 2, '\t') + 1);
            ret = EXIT_FAIL;
            pl.out[i][0] = '\0';
        }
    int pr = pool_print(&pl);
    return ret ? ret : pr;
}

/* Set the modification time of each file named in path's lines
 * ("NS\tNAME"), as a stage-in's last step.  EXIT_OK, or EXIT_FAIL after
 * saying which failed. */
int cmd_times(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "galley-stage-worker: cannot read %s: %s\n", path,
                strerror(errno));
        return EXIT_FAIL;
    }
    int ret = EXIT_OK;
    char line[GFS_NAME_MAX + 64];
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        char *tab = strchr(line, '\t');
        if (!tab)
            continue;
        *tab = '\0';
        int rc = gfs_set_mtime(tab + 1, strtoll(line, NULL, 10));
        if (rc < 0) {
            fprintf(stderr, "cannot set the time of 'galley:%s': %s\n", tab + 1,
                    gfs_strerror(rc));
            ret = EXIT_FAIL;
        }
    }
    fclose(f);
    return ret;
}

int cmd_rm(int n, char **names)
{
    int ret = EXIT_OK;
    for (int i = 0; i < n; i++) {
        int rc = gfs_delete_file(names[i]);
        if (rc < 0 && rc != -ENOENT) {
            fprintf(stderr, "%s: cannot delete 'galley:%s': %s\n", prog,
                    names[i], gfs_strerror(rc));
            ret = EXIT_FAIL;
        }
    }
    return ret;
}
