/*
 * galley_util.c -- what the `galley` tool's commands share: error
 * reports, argument parsing, the servers' addresses (for display), local
 * input and output files, and small helpers.
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cluster_file.h"
#include "galley_cli.h"

/* ------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------ */

int bad_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "%s: ", prog);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry '%s help'.\n", prog);
    return EXIT_USAGE;
}

/* Report a library error code; returns EXIT_FAIL for convenience. */
int fail(int rc, const char *what, const char *obj)
{
    if (obj)
        fprintf(stderr, "%s: %s '%s': %s\n", prog, what, obj, gfs_strerror(rc));
    else
        fprintf(stderr, "%s: %s: %s\n", prog, what, gfs_strerror(rc));
    return EXIT_FAIL;
}

/* Report a local (errno) error; returns EXIT_FAIL. */
int fail_errno(int e, const char *what, const char *obj)
{
    fprintf(stderr, "%s: %s '%s': %s\n", prog, what, obj, strerror(e));
    return EXIT_FAIL;
}

/* ------------------------------------------------------------------------
 * Argument parsing: options may appear anywhere; "--" ends options.
 * ------------------------------------------------------------------------ */

/* Parse a non-negative decimal integer with an optional K/M/G/T suffix
 * (binary multiples).  Returns false on junk or overflow. */
static bool parse_size(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9')
        return false;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return false;
    unsigned shift = 0;
    switch (*end) {
    case '\0':
        break;
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    case 't':
    case 'T':
        shift = 40;
        end++;
        break;
    default:
        return false;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end)
        return false;
    if (v > (unsigned long long)(INT64_MAX >> shift))
        return false;
    *out = (int64_t)(v << shift);
    return true;
}

bool parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    if (!*s)
        return false;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return false;
    *out = (int)v;
    return true;
}

static bool parse_server_list(const char *s, opts *o)
{
    char buf[4096];
    if (strlen(s) >= sizeof(buf))
        return false;
    strcpy(buf, s);
    o->nservers = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        if (o->nservers >= GFS_MAX_SUBFILES)
            return false;
        if (!parse_int(t, 0, GFS_MAX_SERVERS - 1, &o->servers[o->nservers]))
            return false;
        o->nservers++;
    }
    return o->nservers > 0;
}

/*
 * Parse argv[0..argc) into o.  `allowed` lists the option letters this
 * command takes (c and t are always allowed).  Returns 0 or EXIT_USAGE
 * after printing why.
 */
int parse_args(int argc, char **argv, const char *allowed, opts *o)
{
    bool opts_done = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (opts_done || a[0] != '-' || a[1] == '\0') {
            if (o->npos >= MAX_POS)
                return bad_usage("too many arguments (at '%s')", a);
            o->pos[o->npos++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            opts_done = true;
            continue;
        }
        char c = a[1];
        if (!strchr("ct", c) && !strchr(allowed, c))
            return bad_usage("unknown option '%s' for this command", a);
        const char *val = NULL;
        if (strchr("ctnsuFLR", c)) {
            if (a[2])
                val = a + 2;
            else if (i + 1 < argc)
                val = argv[++i];
            else
                return bad_usage("option '%s' needs a value", a);
        } else if (a[2]) {
            return bad_usage("unknown option '%s'", a);
        }
        int64_t v;
        switch (c) {
        case 'c':
            o->cluster = val;
            break;
        case 't':
            if (!parse_int(val, 1, 86400, &o->timeout_s))
                return bad_usage("bad timeout '%s' (seconds, 1..86400)", val);
            break;
        case 'n':
            if (!parse_int(val, 1, GFS_MAX_SUBFILES, &o->nsub))
                return bad_usage("bad subfile count '%s'", val);
            break;
        case 's':
            if (!parse_server_list(val, o))
                return bad_usage("bad server list '%s' (e.g. 0,2,3)", val);
            break;
        case 'u':
            if (!parse_size(val, &v) || v <= 0)
                return bad_usage("bad stripe unit '%s'", val);
            o->unit = v;
            break;
        case 'F':
            if (!*val || strlen(val) > GFS_FORK_NAME_MAX)
                return bad_usage("bad fork name '%s'", val);
            o->fork = val;
            break;
        case 'f':
            o->force = true;
            break;
        case 'L':
            o->layout = val;
            break;
        case 'p':
            o->plain = true;
            break;
        case 'C':
            o->csum = true;
            break;
        case 'R':
            if (!parse_int(val, 1, GFS_MAX_REPLICAS, &o->replicas))
                return bad_usage("bad copy count '%s' (-R 1, 2 or 3)", val);
            break;
        default:
            return bad_usage("unknown option '%s'", a);
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------
 * Cluster file addresses (for display only; the library owns connections).
 * ------------------------------------------------------------------------ */

#define ADDR_MAX 128
static char addrs[GFS_MAX_SERVERS][ADDR_MAX];
static int naddrs;

/* Remember each server's address from the cluster file, as the library
 * reads it (libgalley/cluster_file.c, compiled into this tool).  Failure
 * only means addresses are not shown. */
void load_addrs(const char *cluster)
{
    char path[PATH_MAX];
    const char *p = gc_cluster_find(cluster, path, sizeof(path));
    char **hosts, **ports;
    int n;
    if (gc_cluster_parse(p, &hosts, &ports, &n) < 0)
        return;
    for (int i = 0; i < n; i++) {
        if (!hosts[i] || !ports[i])
            snprintf(addrs[i], ADDR_MAX, "-");
        else if (strchr(hosts[i], ':')) /* an IPv6 address, as written */
            snprintf(addrs[i], ADDR_MAX, "[%s]:%s", hosts[i], ports[i]);
        else
            snprintf(addrs[i], ADDR_MAX, "%s:%s", hosts[i], ports[i]);
        free(hosts[i]);
        free(ports[i]);
    }
    free(hosts);
    free(ports);
    naddrs = n;
}

const char *addr_of(int server)
{
    return server >= 0 && server < naddrs ? addrs[server] : "-";
}

/* ------------------------------------------------------------------------
 * Small helpers
 * ------------------------------------------------------------------------ */

void human(uint64_t v, char *out, size_t len)
{
    static const char *unit[] = {"B", "K", "M", "G", "T", "P", "E"};
    double d = (double)v;
    int i = 0;
    while (d >= 1024.0 && i < 6) {
        d /= 1024.0;
        i++;
    }
    if (i == 0)
        snprintf(out, len, "%" PRIu64 "B", v);
    else
        snprintf(out, len, "%.*f%s", d < 10.0 ? 1 : 0, d, unit[i]);
}

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Read up to n bytes, retrying short reads; returns bytes read (< n only
 * at end of file) or -errno. */
ssize_t read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

int write_all(int fd, const void *buf, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, (const char *)buf + done, n - done);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        done += (size_t)w;
    }
    return 0;
}

/* A local output: stdout, a device/FIFO/symlink written in place, or a
 * regular file written under a temporary name and renamed at commit. */
int out_open(outfile *o, const char *path, unsigned mode)
{
    o->path = path;
    o->tmp = NULL;
    if (strcmp(path, "-") == 0) {
        o->fd = STDOUT_FILENO;
        return 0;
    }
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode))
            return -EISDIR;
        o->fd = open(path, O_WRONLY | O_TRUNC);
        return o->fd < 0 ? -errno : 0;
    }
    size_t n = strlen(path) + 16;
    o->tmp = malloc(n);
    if (!o->tmp)
        return -ENOMEM;
    snprintf(o->tmp, n, "%s.galleyXXXXXX", path);
    o->fd = mkstemp(o->tmp);
    if (o->fd < 0) {
        int e = -errno;
        free(o->tmp);
        o->tmp = NULL;
        return e;
    }
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(o->fd, mode & 07777 & ~mask) < 0) {
        /* not fatal: the file stays private */
    }
    return 0;
}

/* Finish the output: on success rename into place, else remove the
 * temporary.  Returns 0 or -errno. */
int out_close(outfile *o, bool ok)
{
    int rc = 0;
    if (o->fd == STDOUT_FILENO) {
        if (fflush(stdout) != 0)
            rc = -errno;
        return rc;
    }
    if (close(o->fd) < 0 && ok)
        rc = -errno;
    if (o->tmp) {
        if (ok && rc == 0 && rename(o->tmp, o->path) < 0)
            rc = -errno;
        if (!ok || rc < 0)
            unlink(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
    }
    return rc;
}

int in_open(const char *path)
{
    if (strcmp(path, "-") == 0)
        return STDIN_FILENO;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        return -EISDIR;
    }
    return fd;
}

void in_close(int fd)
{
    if (fd != STDIN_FILENO)
        close(fd);
}

/* Look for `file` in the directories rel[0..n) (each from '/' to '/'),
 * taken relative to the directory of this executable; buf gets the first
 * path ok() accepts, through realpath when resolve.  0, or -1 when none
 * does. */
int find_beside_exe(char *buf, size_t len, const char *const *rel, size_t n,
                    const char *file, int (*ok)(const char *), bool resolve)
{
    char exe[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    char *slash = k > 0 ? (exe[k] = '\0', strrchr(exe, '/')) : NULL;
    if (!slash)
        return -1;
    *slash = '\0';
    for (size_t i = 0; i < n; i++) {
        char real[PATH_MAX];
        if ((size_t)snprintf(buf, len, "%s%s%s", exe, rel[i], file) >= len ||
            !ok(buf))
            continue;
        if (!resolve)
            return 0;
        if (realpath(buf, real)) {
            snprintf(buf, len, "%s", real);
            return 0;
        }
    }
    return -1;
}

/* Open file `name`; prints the error itself.  Returns fid or < 0. */
int open_file(const char *name)
{
    int fid = gfs_open_file(name);
    if (fid < 0)
        fail(fid, "cannot open", name);
    return fid;
}

/* Open file `name` and stat it into *st; prints the error itself.  Returns
 * fid, or < 0 with nothing left open. */
int open_stat(const char *name, gfs_file_stat *st)
{
    int fid = open_file(name);
    if (fid < 0)
        return fid;
    int rc = gfs_stat_file(fid, st);
    if (rc < 0) {
        fail(rc, "cannot stat", name);
        gfs_close_file(fid);
        return rc;
    }
    return fid;
}

/* Parse SUBFILE for file fid (0 <= s < nsubfiles).  Prints on failure. */
int subfile_arg(int fid, const char *name, const char *arg, int *sub)
{
    gfs_file_stat st;
    int rc = gfs_stat_file(fid, &st);
    if (rc < 0) {
        fail(rc, "cannot stat", name);
        return EXIT_FAIL;
    }
    if (!parse_int(arg, 0, st.nsubfiles - 1, sub)) {
        fprintf(stderr, "%s: bad subfile '%s': '%s' has subfiles 0..%d\n", prog,
                arg, name, st.nsubfiles - 1);
        return EXIT_USAGE;
    }
    return 0;
}

int print_fork(const char *name, uint64_t size, void *arg)
{
    struct fork_print *fp = arg;
    char h[32];
    human(size, h, sizeof(h));
    printf("%sfork %-20s %15" PRIu64 " bytes  (%s)\n", fp->indent, name, size,
           h);
    fp->count++;
    return 0;
}

/* ------------------------------------------------------------------------
 * Copying between a local file and a striped file or a fork
 * ------------------------------------------------------------------------ */

/* Report a library error on g: "<verb> '<name>'" for a striped file,
 * "<verb> fork '<name>'" for a fork.  Returns EXIT_FAIL. */
static int copy_fail(const copy_obj *g, int rc, const char *verb)
{
    char what[64];
    snprintf(what, sizeof(what), "%s%s", verb, g->striped ? "" : " fork");
    return fail(rc, what, g->name);
}

/* Copy fd (local, for messages) into g from offset 0 on, CHUNK bytes at a
 * time through buf, then set g's size to the bytes copied.  EXIT_OK or
 * EXIT_FAIL (printed). */
int copy_in(const copy_obj *g, int fd, const char *local, char *buf)
{
    int64_t off = 0;
    for (;;) {
        ssize_t n = read_full(fd, buf, CHUNK);
        if (n < 0)
            return fail_errno((int)-n, "cannot read", local);
        if (n == 0)
            break;
        int64_t w = g->striped ? gfs_striped_write(g->id, off, buf, n)
                               : gfs_write(g->id, off, buf, n);
        if (w < 0)
            return copy_fail(g, (int)w, "cannot write");
        if (w != n) {
            fprintf(stderr, "%s: short write to '%s' (%" PRId64 " of %zd)\n",
                    prog, g->name, w, n);
            return EXIT_FAIL;
        }
        off += n;
        if ((size_t)n < CHUNK)
            break;
    }
    int rc = g->striped ? gfs_striped_truncate(g->id, off)
                        : gfs_truncate_fork(g->id, off);
    return rc < 0 ? copy_fail(g, rc, "cannot set size of") : EXIT_OK;
}

/* Copy all of g into the local output `local` (out_open: written under a
 * temporary name and renamed when whole), CHUNK bytes at a time through
 * buf.  EXIT_OK or EXIT_FAIL (printed). */
int copy_out(const copy_obj *g, const char *local, char *buf)
{
    int64_t size = g->striped ? gfs_striped_size(g->id) : gfs_fork_size(g->id);
    if (size < 0)
        return copy_fail(g, (int)size, "cannot get size of");
    unsigned mode = 0666; /* a fork's; a file's own (as cp, less the umask) */
    if (g->striped && gfs_striped_mode(g->id, &mode) < 0)
        mode = GFS_DEFAULT_MODE;
    outfile out;
    int rc = out_open(&out, local, mode);
    if (rc < 0)
        return fail_errno(-rc, "cannot create", local);
    int ret = EXIT_OK;
    bool ok = true;
    for (int64_t off = 0; off < size;) {
        int64_t want = size - off < CHUNK ? size - off : CHUNK;
        int64_t r = g->striped ? gfs_striped_read(g->id, off, buf, want)
                               : gfs_read(g->id, off, buf, want);
        if (r < 0) {
            ret = copy_fail(g, (int)r, "cannot read");
            ok = false;
            break;
        }
        if (r == 0) /* shrunk under us: copy what there is */
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
    return ret;
}
