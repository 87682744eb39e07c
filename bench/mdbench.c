/*
 * mdbench.c -- metadata operations per second on Galley beside a local
 * directory, in one run (after IO500's mdtest -F: files only).
 *
 *   mdbench [-c CLUSTER] [-p PROCS] [-n FILES] [-d LOCALDIR] [-r REPEATS]
 *           [-P GALLEYPREFIX]
 *
 * PROCS processes (default 4) each make FILES files (default 1000) of
 * their own, in four phases separated by a barrier, timed from the
 * release of the barrier until the last process is done:
 *
 *   create   galley: gfs_create_striped (every server, 64 KiB unit: what a
 *            new MPI-IO or POSIX file gets); local: open(O_CREAT|O_EXCL)
 *            + close
 *   stat     galley: gfs_striped_stat (what stat() through the preload
 *            does; built with -DMDBENCH_OPEN_STAT for a library without
 *            it: gfs_striped_open + gfs_striped_size + close, what the
 *            preload did before); local: stat()
 *   open     galley: gfs_striped_open + gfs_striped_close; local: open +
 *            close
 *   remove   galley: gfs_delete_file; local: unlink()
 *
 * Under `galley exec -m LOCALDIR` (bench/run-mdbench --preload) the
 * local phases go through the preload library to Galley: the table then
 * compares the POSIX calls through the preload with the C API.
 *
 * Galley runs first, then the local directory; the table gives both
 * rates (operations per second over all processes), the ratio, and the
 * median over REPEATS rounds.  Every result is checked (the size read
 * back is 0, a removed name no longer opens).  The load average before
 * and after is printed: on a shared machine the figures move with it.
 */
#include "galley.h"
#include "bench_stats.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { PH_CREATE, PH_STAT, PH_OPEN, PH_REMOVE, NPHASE };
static const char *ph_name[NPHASE] = {"create", "stat", "open/close", "remove"};

static void loadavg(char *out, size_t len)
{
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f || !fgets(out, (int)len, f))
        snprintf(out, len, "?\n");
    if (f)
        fclose(f);
    out[strcspn(out, "\n")] = '\0';
}

typedef struct opts {
    const char *cluster;
    const char *localdir;
    const char *prefix;
    int procs, files, repeats;
} opts;

/* One process's part of one phase; 0 or an error (printed). */
static int galley_phase(const opts *o, int ph, int rank, int round)
{
    char name[256];
    int n = gfs_num_servers();
    for (int i = 0; i < o->files; i++) {
        snprintf(name, sizeof(name), "%s/r%d.%d.f%d", o->prefix, round, rank,
                 i);
        int rc = 0;
        if (ph == PH_CREATE) {
            rc = gfs_create_striped(name, n, NULL, 65536, NULL);
        } else if (ph == PH_STAT) {
            int64_t size = -1;
#ifdef MDBENCH_OPEN_STAT /* a library without gfs_striped_stat (before) */
            int sid = gfs_striped_open(name);
            rc = sid < 0 ? sid : 0;
            if (sid >= 0) {
                size = gfs_striped_size(sid);
                gfs_striped_close(sid);
            }
#else
            rc = gfs_striped_stat(name, &size, NULL);
#endif
            if (!rc && size != 0)
                rc = -EIO;
        } else if (ph == PH_OPEN) {
            int sid = gfs_striped_open(name);
            rc = sid < 0 ? sid : 0;
            if (sid >= 0) {
                int k = gfs_striped_close(sid);
                if (!rc)
                    rc = k;
            }
        } else {
            rc = gfs_delete_file(name);
            if (!rc && i == o->files - 1) {
                int sid = gfs_striped_open(name);
                if (sid >= 0) {
                    gfs_striped_close(sid);
                    rc = -EEXIST;
                }
            }
        }
        if (rc) {
            fprintf(stderr, "mdbench: galley %s %s: %s\n", ph_name[ph], name,
                    gfs_strerror(rc));
            return rc;
        }
    }
    return 0;
}

static int local_phase(const opts *o, int ph, int rank, int round)
{
    char path[4096];
    for (int i = 0; i < o->files; i++) {
        snprintf(path, sizeof(path), "%s/r%d.%d.f%d", o->localdir, round, rank,
                 i);
        int rc = 0;
        struct stat st;
        if (ph == PH_CREATE) {
            int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
            rc = fd < 0 ? -1 : close(fd);
        } else if (ph == PH_STAT) {
            rc = stat(path, &st);
            if (!rc && st.st_size != 0)
                rc = -1;
        } else if (ph == PH_OPEN) {
            int fd = open(path, O_RDONLY);
            rc = fd < 0 ? -1 : close(fd);
        } else {
            rc = unlink(path);
        }
        if (rc) {
            fprintf(stderr, "mdbench: local %s %s: %s\n", ph_name[ph], path,
                    strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* The barrier: each child writes a byte to `up` when ready (or 'x' on
 * failure) and reads one from its `go` pipe to start. */
static int child(const opts *o, int rank, int up, int go)
{
    /* The local directory is made here, not before the fork: under
     * `galley exec -m` it is a Galley directory, and a child must not
     * inherit a parent's started client. */
    if (mkdir(o->localdir, 0755) < 0 && errno != EEXIST) {
        fprintf(stderr, "mdbench: mkdir %s: %s\n", o->localdir,
                strerror(errno));
        return 1;
    }
    int rc = gfs_init(o->cluster);
    if (rc) {
        fprintf(stderr, "mdbench: gfs_init: %s\n", gfs_strerror(rc));
        return 1;
    }
    char b = 'r';
    if (write(up, &b, 1) != 1)
        return 1;
    for (int round = 0; round < o->repeats; round++)
        for (int local = 0; local < 2; local++)
            for (int ph = 0; ph < NPHASE; ph++) {
                if (read(go, &b, 1) != 1)
                    return 1;
                rc = local ? local_phase(o, ph, rank, round)
                           : galley_phase(o, ph, rank, round);
                b = rc ? 'x' : 'd';
                if (write(up, &b, 1) != 1)
                    return 1;
            }
    gfs_finalize();
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: mdbench [-c CLUSTER] [-p PROCS] [-n FILES] "
                    "[-d LOCALDIR] [-r REPEATS] [-P GALLEYPREFIX]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    opts o = {.procs = 4,
              .files = 1000,
              .repeats = 1,
              .prefix = "/mdbench",
              .localdir = "/tmp"};
    int c;
    while ((c = getopt(argc, argv, "c:p:n:d:r:P:")) != -1) {
        switch (c) {
        case 'c':
            o.cluster = optarg;
            break;
        case 'p':
            o.procs = atoi(optarg);
            break;
        case 'n':
            o.files = atoi(optarg);
            break;
        case 'd':
            o.localdir = optarg;
            break;
        case 'r':
            o.repeats = atoi(optarg);
            break;
        case 'P':
            o.prefix = optarg;
            break;
        default:
            usage();
        }
    }
    if (o.procs < 1 || o.procs > 256 || o.files < 1 || o.repeats < 1)
        usage();
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/mdbench.%d", o.localdir, (int)getpid());
    o.localdir = dir;

    char load0[128], load1[128];
    loadavg(load0, sizeof(load0));
    int up[2];
    int *go = calloc((size_t)o.procs, sizeof(*go));
    pid_t *pid = calloc((size_t)o.procs, sizeof(*pid));
    if (!go || !pid || pipe(up) < 0)
        return 1;
    signal(SIGPIPE, SIG_IGN);
    for (int r = 0; r < o.procs; r++) {
        int p[2];
        if (pipe(p) < 0)
            return 1;
        pid[r] = fork();
        if (pid[r] == 0) {
            close(p[1]);
            close(up[0]);
            _exit(child(&o, r, up[1], p[0]));
        }
        close(p[0]);
        go[r] = p[1];
    }
    close(up[1]);

    int fail = 0;
    char b;
    for (int r = 0; r < o.procs; r++)
        if (read(up[0], &b, 1) != 1)
            fail = 1;
    double *rate = calloc((size_t)o.repeats * 2 * NPHASE, sizeof(*rate));
    for (int round = 0; round < o.repeats && !fail; round++)
        for (int local = 0; local < 2 && !fail; local++)
            for (int ph = 0; ph < NPHASE && !fail; ph++) {
                double t0 = bench_now_s();
                for (int r = 0; r < o.procs; r++)
                    if (write(go[r], "g", 1) != 1)
                        fail = 1;
                for (int r = 0; r < o.procs; r++)
                    if (read(up[0], &b, 1) != 1 || b != 'd')
                        fail = 1;
                double t = bench_now_s() - t0;
                rate[(local * NPHASE + ph) * o.repeats + round] =
                    (double)o.procs * o.files / t;
            }
    for (int r = 0; r < o.procs; r++)
        close(go[r]);
    for (int r = 0; r < o.procs; r++) {
        int st;
        waitpid(pid[r], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st))
            fail = 1;
    }
    rmdir(dir);
    loadavg(load1, sizeof(load1));
    if (fail) {
        fprintf(stderr, "mdbench: a process failed\n");
        return 1;
    }
    printf("mdbench: %d processes x %d files, %d rounds (median), galley "
           "prefix %s, local %s\n",
           o.procs, o.files, o.repeats, o.prefix, o.localdir);
    int nserv = gfs_init(o.cluster) ? -1 : gfs_num_servers();
    printf("servers %d, transport %s; load before %s, after %s\n", nserv,
           getenv("GALLEY_TRANSPORT") ? getenv("GALLEY_TRANSPORT") : "auto",
           load0, load1);
    printf("%-12s %14s %14s %8s\n", "operation", "galley op/s", "local op/s",
           "ratio");
    for (int ph = 0; ph < NPHASE; ph++) {
        double g =
            bench_median(rate + (0 * NPHASE + ph) * o.repeats, o.repeats);
        double l =
            bench_median(rate + (1 * NPHASE + ph) * o.repeats, o.repeats);
        printf("%-12s %14.0f %14.0f %7.3fx\n", ph_name[ph], g, l, g / l);
    }
    if (nserv > 0)
        gfs_finalize();
    return 0;
}
