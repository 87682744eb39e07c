/*
 * galley_stage.c -- galley-stage-worker, the data path of galley-stage
 * (tools/galley-stage plans, launches, merges and reports; this program
 * moves the bytes through the public client API).
 *
 *   galley-stage-worker [-c CLUSTER] list PREFIX
 *       every Galley file whose name starts with PREFIX, one a line:
 *       "F size nsub unit kind csum fork servers mode mtime name [hex]"
 *       (tab-separated; servers comma-separated; mode: the permission
 *       bits in octal; mtime: the modification time in ns, 0 for none;
 *       hex: the bytes of an array group's small record file) or "E error
 *       name" for one that is not a striped file.
 *   galley-stage-worker [-c CLUSTER] cat NAME
 *       the whole file to stdout (the planner reads array records).
 *   galley-stage-worker [-c CLUSTER] prepare PLAN
 *       stage-in: create every destination file of the plan with its
 *       layout (an existing one is replaced); prints "IDX servers" of
 *       each (the planner places chunks by them).  A file gets its size
 *       from its chunks' writes (every byte is written); one whose copy
 *       fails is removed by the driver.
 *   galley-stage-worker [-c CLUSTER] times FILE
 *       stage-in's last step: set each file's modification time from
 *       FILE's lines "NS<tab>NAME" (gfs_set_mtime).
 *   galley-stage-worker [-c CLUSTER] rm NAME...
 *       delete the files (a stage-in's partial copies); exit 1 if one
 *       could not be (a missing one is no error).
 *   galley-stage-worker [-c CLUSTER] run PLAN OUT
 *       carry out this worker's tasks of the plan (see my_slot for which
 *       are its), appending one line a task to OUT.SLOT.
 *
 * The plan (written by tools/galley_stage_plan.py; tab-separated):
 *   galley-stage-plan 1
 *   dir in|out
 *   node PER_NODE NODENAME      (srun: one a node, in slot order)
 *   file IDX SIZE NSUB UNIT KIND CSUM FORK SRC DST
 *   task SLOT FILE OFFSET LENGTH copy|verify CRC
 * A copy task reads [OFFSET, OFFSET+LENGTH) of the source, takes its
 * CRC32C, writes it to the destination at the same offset, reads the
 * destination range back and takes its CRC32C: the line it appends is
 *   copied FILE OFFSET LENGTH SRC_CRC DST_CRC
 * (galley-stage compares them and combines each file's in order).  A
 * verify task (a chunk a stopped stage-out already copied) only reads the
 * destination back: "verified FILE OFFSET LENGTH CRC DST_CRC" with the
 * CRC the journal holds.  A failure: "error FILE OFFSET LENGTH MESSAGE";
 * the rest of that file's tasks are skipped, the other files go on.
 *
 * A line is appended (one write) only after the task's destination bytes
 * are written and read back, so a line in OUT.SLOT is a finished chunk:
 * the stage-out journal is these files.  SIGTERM or SIGINT stop the
 * worker after its current task (exit 3); exit 1 when a task failed.
 *
 * Files: this one (the plan, run, main), galley_stage_meta.c (list, cat,
 * prepare, rm), galley_stage.h.
 *
 * Threads: run is single-threaded; see galley_stage_meta.c for the rest.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "fdio.h"
#include "galley.h"
#include "gconfig.h"

#include "galley_stage.h"

const char *prog = "galley-stage-worker";
static volatile sig_atomic_t stop_asked;

/* ------------------------------------------------------------------------
 * The plan
 * ------------------------------------------------------------------------ */

/* Split s at tabs into at most max fields; returns the count. */
static int split_tabs(char *s, char **f, int max)
{
    int n = 0;
    s[strcspn(s, "\n")] = '\0';
    while (n < max) {
        f[n++] = s;
        char *t = strchr(s, '\t');
        if (!t)
            break;
        *t = '\0';
        s = t + 1;
    }
    return n;
}

static bool num(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* Read PLAN (every task). */
int plan_read(const char *path, plan *p)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: cannot open plan '%s': %s\n", prog, path,
                strerror(errno));
        return -1;
    }
    memset(p, 0, sizeof(*p));
    char line[PLAN_MAX_LINE];
    int lineno = 0, capf = 0, capt = 0;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        char *fl[10];
        int n = split_tabs(line, fl, 10);
        int64_t v[6];
        if (lineno == 1) {
            if (strcmp(fl[0], "galley-stage-plan 1") != 0)
                goto bad;
        } else if (!strcmp(fl[0], "dir") && n == 2) {
            p->in = !strcmp(fl[1], "in");
        } else if (!strcmp(fl[0], "node") && n == 3) {
            if (!num(fl[1], 1, 1 << 20, &v[0]))
                goto bad;
            char **nn = realloc(p->nodes, (p->nnodes + 1) * sizeof(*nn));
            if (!nn)
                goto oom;
            p->nodes = nn;
            p->per_node = (int)v[0];
            if (!(p->nodes[p->nnodes++] = strdup(fl[2])))
                goto oom;
        } else if (!strcmp(fl[0], "file") && n == 10) {
            if (!num(fl[1], p->nfiles, p->nfiles, &v[0]) ||
                !num(fl[2], 0, INT64_MAX, &v[1]) ||
                !num(fl[3], 1, GFS_MAX_SUBFILES, &v[2]) ||
                !num(fl[4], 1, INT64_MAX, &v[3]) || !num(fl[6], 0, 1, &v[4]) ||
                strlen(fl[5]) >= 16 || strlen(fl[7]) > GFS_FORK_NAME_MAX)
                goto bad;
            if (p->nfiles == capf) {
                capf = capf ? 2 * capf : 64;
                sfile *nf = realloc(p->files, capf * sizeof(*nf));
                if (!nf)
                    goto oom;
                p->files = nf;
            }
            sfile *s = &p->files[p->nfiles];
            memset(s, 0, sizeof(*s));
            s->size = v[1];
            s->nsub = (int)v[2];
            s->unit = v[3];
            s->csum = (int)v[4];
            strcpy(s->kind, fl[5]);
            strcpy(s->fork, fl[7]);
            s->src = strdup(fl[8]);
            s->dst = strdup(fl[9]);
            p->nfiles++;
            if (!s->src || !s->dst)
                goto oom;
        } else if (!strcmp(fl[0], "task") && n == 7) {
            if (!num(fl[1], 0, INT32_MAX, &v[0]) ||
                !num(fl[2], 0, p->nfiles - 1, &v[1]) ||
                !num(fl[3], 0, INT64_MAX, &v[2]) ||
                !num(fl[4], 1, TASK_MAX, &v[3]))
                goto bad;
            if (p->ntasks == capt) {
                capt = capt ? 2 * capt : 64;
                stask *nt = realloc(p->tasks, capt * sizeof(*nt));
                if (!nt)
                    goto oom;
                p->tasks = nt;
            }
            stask *t = &p->tasks[p->ntasks++];
            t->rank = (int)v[0];
            t->file = (int)v[1];
            t->off = v[2];
            t->len = v[3];
            t->verify = !strcmp(fl[5], "verify");
            t->crc = (uint32_t)strtoul(fl[6], NULL, 16);
        } else {
            goto bad;
        }
    }
    fclose(f);
    return 0;
bad:
    fprintf(stderr, "%s: %s:%d: malformed plan line\n", prog, path, lineno);
    fclose(f);
    return -1;
oom:
    fprintf(stderr, "%s: out of memory reading the plan\n", prog);
    fclose(f);
    return -1;
}

/* ------------------------------------------------------------------------
 * run: the copy
 * ------------------------------------------------------------------------ */

/* The current file's handles: a local descriptor and a striped id. */
typedef struct cur {
    int file; /* -1: none */
    int fd, sid;
} cur;

static void cur_close(cur *c)
{
    if (c->fd >= 0)
        close(c->fd);
    if (c->sid >= 0)
        gfs_striped_close(c->sid);
    c->file = c->fd = c->sid = -1;
}

static ssize_t pread_full(int fd, void *buf, size_t n, off_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, off + (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* Read [off, off+len) of the file's Galley side (src of a stage-out, dst
 * of a stage-in) or local side into buf: 0 or a message in err. */
static int read_side(const cur *c, bool galley, int64_t off, int64_t len,
                     char *buf, char *err, size_t errlen)
{
    int64_t r;
    if (galley) {
        r = gfs_striped_read(c->sid, off, buf, len);
        if (r < 0) {
            snprintf(err, errlen, "read of galley side failed: %s",
                     gfs_strerror((int)r));
            return -1;
        }
    } else {
        r = pread_full(c->fd, buf, (size_t)len, (off_t)off);
        if (r < 0) {
            snprintf(err, errlen, "read of local side failed: %s",
                     strerror((int)-r));
            return -1;
        }
    }
    if (r != len) {
        snprintf(err, errlen,
                 "%s side is shorter than planned (%" PRId64 " of %" PRId64
                 " bytes at %" PRId64 "): changed during the copy?",
                 galley ? "galley" : "local", r, len, off);
        return -1;
    }
    return 0;
}

/* CRC32C of [off, off+len) of the local destination as the file holds
 * it: its page-cache pages mapped and summed where they lie, so the check
 * reads the destination without copying it again; a read into back where
 * the file cannot be mapped.  0 or a message in err. */
static int local_crc(const cur *c, int64_t off, int64_t len, char *back,
                     uint32_t *crc, char *err, size_t errlen)
{
    static long page;
    if (!page)
        page = sysconf(_SC_PAGESIZE);
    int64_t lead = off % page;
    void *m = mmap(NULL, (size_t)(len + lead), PROT_READ, MAP_SHARED, c->fd,
                   (off_t)(off - lead));
    if (m == MAP_FAILED) {
        if (read_side(c, false, off, len, back, err, errlen))
            return -1;
        *crc = g_crc32c(0, back, (size_t)len);
        return 0;
    }
    struct stat st;
    if (fstat(c->fd, &st) < 0 || st.st_size < off + len) {
        /* a page past the end would fault: the file shrank meanwhile */
        munmap(m, (size_t)(len + lead));
        snprintf(err, errlen,
                 "local side is shorter than planned: changed "
                 "during the copy?");
        return -1;
    }
    *crc = g_crc32c(0, (char *)m + lead, (size_t)len);
    munmap(m, (size_t)(len + lead));
    return 0;
}

static int open_file(const plan *p, int i, cur *c, char *err, size_t errlen)
{
    const sfile *s = &p->files[i];
    const char *local = p->in ? s->src : s->dst;
    const char *name = p->in ? s->dst : s->src;
    c->file = i;
    c->fd = open(local, p->in ? O_RDONLY : O_RDWR);
    if (c->fd < 0) {
        snprintf(err, errlen, "cannot open '%s': %s", local, strerror(errno));
        return -1;
    }
    c->sid = gfs_striped_open(name);
    if (c->sid < 0) {
        snprintf(err, errlen, "cannot open 'galley:%s': %s", name,
                 gfs_strerror(c->sid));
        return -1;
    }
    return 0;
}

/* One task; 0 and the CRCs, or -1 and a message. */
static int do_task(const plan *p, const stask *t, cur *c, char *buf, char *back,
                   uint32_t *scrc, uint32_t *dcrc, char *err, size_t errlen)
{
    if (t->verify) {
        *scrc = t->crc;
        if (!p->in)
            return local_crc(c, t->off, t->len, back, dcrc, err, errlen);
        if (read_side(c, true, t->off, t->len, back, err, errlen))
            return -1;
        *dcrc = g_crc32c(0, back, (size_t)t->len);
        return 0;
    }
    if (read_side(c, !p->in, t->off, t->len, buf, err, errlen))
        return -1;
    *scrc = g_crc32c(0, buf, (size_t)t->len);
    if (p->in) {
        int64_t w = gfs_striped_write(c->sid, t->off, buf, t->len);
        if (w != t->len) {
            snprintf(err, errlen, "write to galley side failed: %s",
                     w < 0 ? gfs_strerror((int)w) : "short write");
            return -1;
        }
    } else {
        int rc = g_fd_write(c->fd, 0,
                            &(gp_ext){.off = (uint64_t)t->off,
                                      .len = (uint64_t)t->len,
                                      .mem = buf},
                            1);
        if (rc < 0) {
            snprintf(err, errlen, "write to local side failed: %s",
                     strerror(-rc));
            return -1;
        }
    }
    if (!p->in)
        return local_crc(c, t->off, t->len, back, dcrc, err, errlen);
    if (read_side(c, true, t->off, t->len, back, err, errlen))
        return -1;
    *dcrc = g_crc32c(0, back, (size_t)t->len);
    return 0;
}

static void on_stop(int sig)
{
    (void)sig;
    stop_asked = 1;
}

static int env_int(const char *a, const char *b, int def)
{
    const char *v = getenv(a);
    if (!v)
        v = getenv(b);
    return v ? atoi(v) : def;
}

/* This worker's slot in the plan.  The local launcher sets
 * GALLEY_STAGE_RANK.  Under srun the plan names the node of each group
 * of per_node slots: the worker takes slot node * per_node + its
 * node-local id on the node it runs on, so a task planned beside a server
 * runs beside it whatever order srun gave the ranks; the global rank
 * (SLURM_PROCID) when its node is not in the plan. */
static int my_slot(const plan *p)
{
    if (g_config_set(G_CFG_STAGE_RANK))
        return (int)g_config_int(G_CFG_STAGE_RANK);
    const char *node = getenv("SLURMD_NODENAME");
    char host[256] = "";
    if (!node) {
        gethostname(host, sizeof(host) - 1);
        host[strcspn(host, ".")] = '\0';
        node = host;
    }
    const char *lid = getenv("SLURM_LOCALID");
    for (int i = 0; lid && i < p->nnodes; i++)
        if (!strcmp(p->nodes[i], node) && atoi(lid) < p->per_node)
            return i * p->per_node + atoi(lid);
    return env_int("SLURM_PROCID", "PMI_RANK", 0);
}

static int cmd_run(const char *path, const char *out)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop;
    sa.sa_flags = SA_RESTART; /* the current task runs to its end */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    plan p;
    if (plan_read(path, &p) < 0)
        return EXIT_FAIL;
    int rank = my_slot(&p), mine = 0;
    for (int i = 0; i < p.ntasks; i++)
        if (p.tasks[i].rank == rank)
            p.tasks[mine++] = p.tasks[i];
    p.ntasks = mine;
    char rpath[4096];
    snprintf(rpath, sizeof(rpath), "%s.%d", out, rank);
    int rfd = open(rpath, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (rfd < 0) {
        fprintf(stderr, "%s: cannot open '%s': %s\n", prog, rpath,
                strerror(errno));
        return EXIT_FAIL;
    }
    int64_t maxlen = 1;
    for (int i = 0; i < p.ntasks; i++)
        if (p.tasks[i].len > maxlen)
            maxlen = p.tasks[i].len;
    char *buf = malloc((size_t)maxlen), *back = malloc((size_t)maxlen);
    if (!buf || !back) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return EXIT_FAIL;
    }
    cur c = {-1, -1, -1};
    int ret = EXIT_OK;
    for (int i = 0; i < p.ntasks; i++) {
        if (stop_asked) {
            ret = ret == EXIT_OK ? EXIT_STOPPED : ret;
            break;
        }
        const stask *t = &p.tasks[i];
        sfile *s = &p.files[t->file];
        if (s->failed)
            continue;
        char err[1024], line[1400];
        uint32_t scrc = 0, dcrc = 0;
        int rc = 0;
        if (c.file != t->file) {
            cur_close(&c);
            rc = open_file(&p, t->file, &c, err, sizeof(err));
        }
        if (!rc)
            rc = do_task(&p, t, &c, buf, back, &scrc, &dcrc, err, sizeof(err));
        int n;
        if (rc) {
            s->failed = true;
            ret = EXIT_FAIL;
            n = snprintf(line, sizeof(line),
                         "error\t%d\t%" PRId64 "\t%" PRId64 "\t%s\n", t->file,
                         t->off, t->len, err);
        } else {
            n = snprintf(line, sizeof(line),
                         "%s\t%d\t%" PRId64 "\t%" PRId64 "\t%08x\t%08x\n",
                         t->verify ? "verified" : "copied", t->file, t->off,
                         t->len, scrc, dcrc);
        }
        if (write(rfd, line, (size_t)n) != n) {
            fprintf(stderr, "%s: cannot write '%s': %s\n", prog, rpath,
                    strerror(errno));
            ret = EXIT_FAIL;
            break;
        }
    }
    cur_close(&c);
    free(buf);
    free(back);
    if (close(rfd) < 0)
        ret = EXIT_FAIL;
    return ret;
}

/* ------------------------------------------------------------------------
 * main
 * ------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    const char *cluster = NULL;
    int i = 1;
    if (i + 1 < argc && !strcmp(argv[i], "-c")) {
        cluster = argv[i + 1];
        i += 2;
    }
    if (i >= argc) {
        fprintf(stderr,
                "usage: %s [-c CLUSTER] list PREFIX | cat NAME | "
                "prepare PLAN | times FILE | rm NAME... | run PLAN OUT\n",
                prog);
        return EXIT_USAGE;
    }
    const char *cmd = argv[i++];
    int want = !strcmp(cmd, "run") ? 2 : 1;
    if (!strcmp(cmd, "rm") ? argc - i < 1 : argc - i != want) {
        fprintf(stderr, "%s: wrong number of arguments for '%s'\n", prog, cmd);
        return EXIT_USAGE;
    }
    int rc = gfs_init(cluster);
    if (rc < 0) {
        fprintf(stderr, "%s: cannot start the galley client: %s\n", prog,
                gfs_strerror(rc));
        return EXIT_FAIL;
    }
    int ret;
    if (!strcmp(cmd, "list"))
        ret = cmd_list(argv[i]);
    else if (!strcmp(cmd, "cat"))
        ret = cmd_cat(argv[i]);
    else if (!strcmp(cmd, "prepare"))
        ret = cmd_prepare(argv[i]);
    else if (!strcmp(cmd, "times"))
        ret = cmd_times(argv[i]);
    else if (!strcmp(cmd, "run"))
        ret = cmd_run(argv[i], argv[i + 1]);
    else if (!strcmp(cmd, "rm"))
        ret = cmd_rm(argc - i, argv + i);
    else {
        fprintf(stderr, "%s: unknown command '%s'\n", prog, cmd);
        ret = EXIT_USAGE;
    }
    rc = gfs_finalize();
    if (rc < 0 && ret == EXIT_OK) {
        fprintf(stderr, "%s: error while closing: %s\n", prog,
                gfs_strerror(rc));
        ret = EXIT_FAIL;
    }
    return ret;
}
