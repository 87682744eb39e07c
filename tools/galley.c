/*
 * galley.c -- the `galley` command-line tool: inspect and move data in a
 * Galley cluster (ping, ls, stat, rm, create, fork ..., put, get, df).
 *
 * Only the public client API (galley.h) is used.  Every subcommand opens
 * the client with gfs_init(-c FILE, else $GALLEY_CLUSTER, else the
 * library's defaults), does its work, and exits 0 on success, 1 when an
 * operation failed (message through gfs_strerror), 2 on bad usage.
 *
 * Local output files are written to a temporary name beside the target and
 * renamed into place only when complete, so a failed `get` never leaves a
 * truncated copy behind (devices, FIFOs and symlinks are written directly).
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

#include "galley.h"
#include "galley_exec.h"
#include "galley_mount.h"

/* Bytes moved per library call by put/get/fork read/fork write. */
#define CHUNK (8u << 20)

/* Exit codes. */
enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

static const char *prog = "galley";

/* ------------------------------------------------------------------------
 * Usage
 * ------------------------------------------------------------------------ */

static const char usage_text[] =
    "usage: galley [-c CLUSTERFILE] [-t SECONDS] COMMAND [ARGS]\n"
    "\n"
    "Commands:\n"
    "  ping                          ask every server for a round trip\n"
    "  ls [PREFIX]                   list file names (sorted)\n"
    "  stat NAME                     subfiles, servers, layout, forks, sizes\n"
    "  rm NAME                       delete a file and all its forks\n"
    "  create NAME [-n NSUB] [-s S0,S1,..] [-u UNIT] [-F FORK] [-p]\n"
    "         [-L local|template:NAME]\n"
    "                                create a striped file (-p: plain file,\n"
    "                                no striped layout and no forks)\n"
    "  put LOCAL NAME [-f] [-n NSUB] [-s S0,S1,..] [-u UNIT] [-F FORK]\n"
    "         [-L local|template:NAME]\n"
    "                                copy a local file ('-' = stdin) into a\n"
    "                                new striped file (-f replaces NAME)\n"
    "  get NAME LOCAL                copy a striped file out ('-' = stdout)\n"
    "  df                            per-server space, records, cache\n"
    "  iostat                        per-server data bytes for clients on\n"
    "                                the server's own host and on others\n"
    "  fsck [--repair]               check records against subfile headers;\n"
    "                                --repair removes orphans (left by an rm\n"
    "                                while a server was down)\n"
    "  fork create NAME SUBFILE FORK\n"
    "  fork ls NAME [SUBFILE]\n"
    "  fork rm NAME SUBFILE FORK\n"
    "  fork write NAME SUBFILE FORK LOCAL\n"
    "                                replace the fork's bytes with LOCAL\n"
    "                                ('-' = stdin); creates the fork if absent\n"
    "  fork read NAME SUBFILE FORK LOCAL\n"
    "                                copy the whole fork out ('-' = stdout)\n"
    "  exec [-m DIR[=GDIR]]... [--] CMD [ARGS...]\n"
    "                                run CMD with libgalley-posix.so preloaded:\n"
    "                                its open/read/stat/fopen... of names\n"
    "                                beginning with 'galley:' (and of paths\n"
    "                                under each local DIR, as Galley names\n"
    "                                under GDIR, default DIR) use Galley\n"
    "  mount [-n NSUB] [-u UNIT] [-f] DIR\n"
    "                                show the striped files under DIR (FUSE);\n"
    "                                -n/-u: layout of files created there\n"
    "  umount DIR                    unmount (also after a daemon died)\n"
    "  help                          this text\n"
    "\n"
    "Options (accepted anywhere after the command as well):\n"
    "  -c FILE    cluster file (default $GALLEY_CLUSTER, then\n"
    "             ~/.galley/cluster, then /etc/galley/cluster)\n"
    "  -t SEC     per-request timeout in seconds (default $GALLEY_TIMEOUT or 10)\n"
    "  -n NSUB    number of subfiles (default: number of servers)\n"
    "  -s LIST    comma-separated server numbers, one per subfile\n"
    "  -u UNIT    stripe unit in bytes, K/M/G suffixes allowed (default 64K)\n"
    "  -F FORK    fork that holds the striped data (default \"data\")\n"
    "  -L LAYOUT  striped (default), local (each block on the server of\n"
    "             the host that first writes it; -u is the block size) or\n"
    "             template:NAME (local, placed like local file NAME)\n"
    "  -f         put: replace an existing file\n"
    "\n"
    "Exit status: 0 success, 1 an operation failed, 2 bad usage.\n";

/* `galley fsck [--repair]` (tools/fsck.c). */
int galley_fsck(int argc, char **argv, const char *cluster, int timeout_s);

static void usage(FILE *f)
{
    fputs(usage_text, f);
}

static int bad_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "%s: ", prog);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry '%s help'.\n", prog);
    return EXIT_USAGE;
}

/* Report a library error code; returns EXIT_FAIL for convenience. */
static int fail(int rc, const char *what, const char *obj)
{
    if (obj)
        fprintf(stderr, "%s: %s '%s': %s\n", prog, what, obj,
                gfs_strerror(rc));
    else
        fprintf(stderr, "%s: %s: %s\n", prog, what, gfs_strerror(rc));
    return EXIT_FAIL;
}

/* Report a local (errno) error; returns EXIT_FAIL. */
static int fail_errno(int e, const char *what, const char *obj)
{
    fprintf(stderr, "%s: %s '%s': %s\n", prog, what, obj, strerror(e));
    return EXIT_FAIL;
}

/* ------------------------------------------------------------------------
 * Argument parsing: options may appear anywhere; "--" ends options.
 * ------------------------------------------------------------------------ */

#define MAX_POS 8

typedef struct opts {
    const char *cluster; /* -c */
    int timeout_s;       /* -t, 0 = library default */
    int nsub;            /* -n, 0 = default */
    int nservers;        /* entries in servers[] from -s, 0 = none */
    int servers[GFS_MAX_SUBFILES];
    int64_t unit; /* -u, 0 = default */
    const char *fork; /* -F */
    bool force;       /* -f */
    bool plain;       /* -p */
    const char *layout; /* -L */
    int npos;
    const char *pos[MAX_POS];
} opts;

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
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
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

static bool parse_int(const char *s, int lo, int hi, int *out)
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
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
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
static int parse_args(int argc, char **argv, const char *allowed, opts *o)
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
        if (strchr("ctnsuFL", c)) {
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

/* The cluster file gfs_init will read: -c, else $GALLEY_CLUSTER, else
 * ~/.galley/cluster if readable, else /etc/galley/cluster. */
static const char *cluster_path(const char *given, char *buf, size_t len)
{
    if (given && *given)
        return given;
    const char *env = getenv("GALLEY_CLUSTER");
    if (env && *env)
        return env;
    const char *home = getenv("HOME");
    if (home) {
        snprintf(buf, len, "%s/.galley/cluster", home);
        if (access(buf, R_OK) == 0)
            return buf;
    }
    return "/etc/galley/cluster";
}

/* Remember each server's address from the cluster file.  Failure only
 * means addresses are not shown. */
static void load_addrs(const char *cluster)
{
    char path[PATH_MAX];
    const char *p = cluster_path(cluster, path, sizeof(path));
    FILE *f = fopen(p, "r");
    if (!f)
        return;
    char line[1024];
    while (naddrs < GFS_MAX_SERVERS && fgets(line, sizeof(line), f)) {
        char *h = strchr(line, '#');
        if (h)
            *h = '\0';
        char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        size_t n = strcspn(s, " \t\r\n");
        if (n == 0)
            continue;
        if (n >= ADDR_MAX)
            n = ADDR_MAX - 1;
        memcpy(addrs[naddrs], s, n);
        addrs[naddrs][n] = '\0';
        naddrs++;
    }
    fclose(f);
}

static const char *addr_of(int server)
{
    return server >= 0 && server < naddrs ? addrs[server] : "-";
}

/* ------------------------------------------------------------------------
 * Small helpers
 * ------------------------------------------------------------------------ */

static void human(uint64_t v, char *out, size_t len)
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

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Read up to n bytes, retrying short reads; returns bytes read (< n only
 * at end of file) or -errno. */
static ssize_t read_full(int fd, void *buf, size_t n)
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

static int write_all(int fd, const void *buf, size_t n)
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
typedef struct outfile {
    int fd;
    const char *path;
    char *tmp; /* NULL when writing in place */
} outfile;

static int out_open(outfile *o, const char *path)
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
    if (fchmod(o->fd, 0666 & ~mask) < 0) {
        /* not fatal: the file stays private */
    }
    return 0;
}

/* Finish the output: on success rename into place, else remove the
 * temporary.  Returns 0 or -errno. */
static int out_close(outfile *o, bool ok)
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

static int in_open(const char *path)
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

static void in_close(int fd)
{
    if (fd != STDIN_FILENO)
        close(fd);
}

/* Open file `name`; prints the error itself.  Returns fid or < 0. */
static int open_file(const char *name)
{
    int fid = gfs_open_file(name);
    if (fid < 0)
        fail(fid, "cannot open", name);
    return fid;
}

/* Parse SUBFILE for file fid (0 <= s < nsubfiles).  Prints on failure. */
static int subfile_arg(int fid, const char *name, const char *arg, int *sub)
{
    gfs_file_stat st;
    int rc = gfs_stat_file(fid, &st);
    if (rc < 0) {
        fail(rc, "cannot stat", name);
        return EXIT_FAIL;
    }
    if (!parse_int(arg, 0, st.nsubfiles - 1, sub)) {
        fprintf(stderr, "%s: bad subfile '%s': '%s' has subfiles 0..%d\n",
                prog, arg, name, st.nsubfiles - 1);
        return EXIT_USAGE;
    }
    return 0;
}

/* ------------------------------------------------------------------------
 * Commands
 * ------------------------------------------------------------------------ */

static int cmd_ping(opts *o)
{
    int n = gfs_num_servers();
    if (n < 0)
        return fail(n, "cannot count servers", NULL);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        double t0 = now_s();
        int rc = gfs_ping(i);
        double ms = (now_s() - t0) * 1e3;
        if (rc == 0) {
            int t = gfs_server_transport(i);
            const char *tn = t == GFS_TRANSPORT_LOCAL_CMA ? "local+cma"
                             : t == GFS_TRANSPORT_LOCAL   ? "local"
                             : t == GFS_TRANSPORT_TCP     ? "tcp"
                                                          : "?";
            printf("server %-3d %-24s ok     %.3f ms  %s\n", i, addr_of(i),
                   ms, tn);
        } else {
            printf("server %-3d %-24s ERROR  %s\n", i, addr_of(i),
                   gfs_strerror(rc));
            bad++;
        }
    }
    fflush(stdout);
    if (bad) {
        fprintf(stderr, "%s: %d of %d servers did not answer\n", prog, bad, n);
        return EXIT_FAIL;
    }
    return EXIT_OK;
}

static int print_name(const char *name, void *arg)
{
    (void)arg;
    printf("%s\n", name);
    return 0;
}

static int cmd_ls(opts *o)
{
    const char *prefix = o->npos ? o->pos[0] : "";
    int rc = gfs_list_files(prefix, print_name, NULL);
    if (rc < 0)
        return fail(rc, "cannot list files", NULL);
    return EXIT_OK;
}

struct fork_print {
    int count;
    const char *indent;
};

static int print_fork(const char *name, uint64_t size, void *arg)
{
    struct fork_print *fp = arg;
    char h[32];
    human(size, h, sizeof(h));
    printf("%sfork %-20s %15" PRIu64 " bytes  (%s)\n", fp->indent, name, size,
           h);
    fp->count++;
    return 0;
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

static int cmd_iostat(opts *o)
{
    (void)o;
    int n = gfs_num_servers();
    if (n < 0)
        return fail(n, "cannot count servers", NULL);
    int bad = 0;
    printf("%-6s %-22s %16s %16s %16s %16s\n", "SERVER", "ADDRESS",
           "WRITTEN_LOCAL", "WRITTEN_REMOTE", "READ_LOCAL", "READ_REMOTE");
    for (int i = 0; i < n; i++) {
        gfs_server_io st;
        int rc = gfs_server_io_stats(i, &st);
        if (rc < 0) {
            printf("%-6d %-22s ERROR: %s\n", i, addr_of(i), gfs_strerror(rc));
            bad++;
            continue;
        }
        printf("%-6d %-22s %16" PRIu64 " %16" PRIu64 " %16" PRIu64
               " %16" PRIu64 "\n", i, addr_of(i), st.written_local,
               st.written_remote, st.read_local, st.read_remote);
    }
    return bad ? EXIT_FAIL : EXIT_OK;
}

static int cmd_stat(opts *o)
{
    const char *name = o->pos[0];
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
    printf("file:      %s\n", name);
    printf("subfiles:  %d\n", st.nsubfiles);

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
            if (stat_local_blocks(sid) < 0)
                ret = EXIT_FAIL;
            gfs_striped_close(sid);
        }
    } else if (ru != -ENOENT && ru < 0) {
        printf("layout:    unknown (%s)\n", gfs_strerror(ru));
    } else {
        printf("layout:    none (plain Galley file)\n");
    }

    for (int i = 0; i < st.nsubfiles; i++) {
        printf("subfile %d: server %d (%s)\n", i, st.servers[i],
               addr_of(st.servers[i]));
        struct fork_print fp = {0, "    "};
        rc = gfs_list_forks(fid, i, print_fork, &fp);
        if (rc < 0) {
            printf("    error listing forks: %s\n", gfs_strerror(rc));
            ret = EXIT_FAIL;
        } else if (fp.count == 0) {
            printf("    (no forks)\n");
        }
    }
out_close:
    gfs_close_file(fid);
    return ret;
}

static int cmd_rm(opts *o)
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

static int cmd_create(opts *o)
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
        rc = gfs_create_file(name, nsub, servers);
    } else if (o->layout) {
        rc = gfs_create_layout(name, nsub, servers, o->unit, o->fork,
                               o->layout);
    } else {
        rc = gfs_create_striped(name, nsub, servers,
                                o->unit ? o->unit : GFS_DEFAULT_STRIPE_UNIT,
                                o->fork ? o->fork : GFS_DEFAULT_STRIPE_FORK);
    }
    if (rc < 0)
        return fail(rc, "cannot create", name);
    return EXIT_OK;
}

static int cmd_put(opts *o)
{
    const char *local = o->pos[0], *name = o->pos[1];
    int nsub;
    const int *servers;
    int ret = layout_args(o, &nsub, &servers);
    if (ret)
        return ret;

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

    int rc = o->layout
                 ? gfs_create_layout(name, nsub, servers, o->unit, o->fork,
                                     o->layout)
                 : gfs_create_striped(name, nsub, servers,
                                o->unit ? o->unit : GFS_DEFAULT_STRIPE_UNIT,
                                o->fork ? o->fork : GFS_DEFAULT_STRIPE_FORK);
    if (rc < 0) {
        ret = fail(rc, "cannot create", name);
        goto out_free;
    }
    int sid = gfs_striped_open(name);
    if (sid < 0) {
        ret = fail(sid, "cannot open", name);
        goto out_delete;
    }
    int64_t off = 0;
    for (;;) {
        ssize_t n = read_full(fd, buf, CHUNK);
        if (n < 0) {
            ret = fail_errno((int)-n, "cannot read", local);
            goto out_sclose;
        }
        if (n == 0)
            break;
        int64_t w = gfs_striped_write(sid, off, buf, n);
        if (w < 0) {
            ret = fail((int)w, "cannot write", name);
            goto out_sclose;
        }
        if (w != n) {
            fprintf(stderr, "%s: short write to '%s' (%" PRId64 " of %zd)\n",
                    prog, name, w, n);
            ret = EXIT_FAIL;
            goto out_sclose;
        }
        off += n;
        if ((size_t)n < CHUNK)
            break;
    }
    rc = gfs_striped_truncate(sid, off);
    if (rc < 0) {
        ret = fail(rc, "cannot set size of", name);
        goto out_sclose;
    }
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

static int cmd_get(opts *o)
{
    const char *name = o->pos[0], *local = o->pos[1];
    int sid = gfs_striped_open(name);
    if (sid < 0)
        return fail(sid, "cannot open", name);
    int ret = EXIT_OK;
    char *buf = NULL;
    int64_t size = gfs_striped_size(sid);
    if (size < 0) {
        ret = fail((int)size, "cannot get size of", name);
        goto out_close;
    }
    buf = malloc(CHUNK);
    if (!buf) {
        ret = fail_errno(ENOMEM, "cannot allocate buffer for", name);
        goto out_close;
    }
    outfile out;
    int rc = out_open(&out, local);
    if (rc < 0) {
        ret = fail_errno(-rc, "cannot create", local);
        goto out_close;
    }
    bool ok = true;
    for (int64_t off = 0; off < size;) {
        int64_t want = size - off < CHUNK ? size - off : CHUNK;
        int64_t r = gfs_striped_read(sid, off, buf, want);
        if (r < 0) {
            ret = fail((int)r, "cannot read", name);
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
out_close:
    free(buf);
    gfs_striped_close(sid);
    return ret;
}

static int cmd_df(opts *o)
{
    int n = gfs_num_servers();
    if (n < 0)
        return fail(n, "cannot count servers", NULL);
    int bad = 0;
    printf("%-6s %-22s %8s %8s %8s %5s %8s %8s %8s %10s %10s %6s\n", "SERVER",
           "ADDRESS", "USED", "FREE", "TOTAL", "USE%", "RECORDS", "SUBFILES",
           "FORKS", "HITS", "MISSES", "HIT%");
    for (int i = 0; i < n; i++) {
        gfs_server_stat st;
        int rc = gfs_stat_server(i, &st);
        if (rc < 0) {
            printf("%-6d %-22s ERROR: %s\n", i, addr_of(i), gfs_strerror(rc));
            bad++;
            continue;
        }
        char u[32], f[32], t[32], pct[16], hit[16];
        human(st.bytes_used, u, sizeof(u));
        human(st.bytes_free, f, sizeof(f));
        human(st.bytes_total, t, sizeof(t));
        if (st.bytes_total)
            snprintf(pct, sizeof(pct), "%.0f%%",
                     100.0 * (double)(st.bytes_total - st.bytes_free) /
                         (double)st.bytes_total);
        else
            snprintf(pct, sizeof(pct), "-");
        uint64_t acc = st.cache_hits + st.cache_misses;
        if (acc)
            snprintf(hit, sizeof(hit), "%.1f", 100.0 * st.cache_hits / acc);
        else
            snprintf(hit, sizeof(hit), "-");
        printf("%-6d %-22s %8s %8s %8s %5s %8" PRIu64 " %8" PRIu64
               " %8" PRIu64 " %10" PRIu64 " %10" PRIu64 " %6s\n",
               i, addr_of(i), u, f, t, pct, st.nrecords, st.nsubfiles,
               st.nforks, st.cache_hits, st.cache_misses, hit);
    }
    fflush(stdout);
    if (bad) {
        fprintf(stderr, "%s: %d of %d servers did not answer\n", prog, bad, n);
        return EXIT_FAIL;
    }
    return EXIT_OK;
}

/* ---- fork subcommands ---- */

static int fork_create(opts *o)
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

static int fork_rm(opts *o)
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

static int fork_ls(opts *o)
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

static int fork_write(opts *o)
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

static int fork_read(opts *o)
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

/* ------------------------------------------------------------------------
 * Dispatch
 * ------------------------------------------------------------------------ */

typedef struct command {
    const char *name;
    const char *options; /* letters beyond c and t */
    int minpos, maxpos;  /* positional arguments after the command word(s) */
    int (*fn)(opts *o);
} command;

static const command commands[] = {
    {"ping", "", 0, 0, cmd_ping},
    {"ls", "", 0, 1, cmd_ls},
    {"stat", "", 1, 1, cmd_stat},
    {"rm", "", 1, 1, cmd_rm},
    {"create", "nsuFpL", 1, 1, cmd_create},
    {"put", "nsuFfL", 2, 2, cmd_put},
    {"get", "", 2, 2, cmd_get},
    {"df", "", 0, 0, cmd_df},
    {"iostat", "", 0, 0, cmd_iostat},
};

/* "fork X": positional counts include the word X itself. */
static const command fork_commands[] = {
    {"create", "", 4, 4, fork_create},
    {"ls", "", 2, 3, fork_ls},
    {"rm", "", 4, 4, fork_rm},
    {"write", "", 5, 5, fork_write},
    {"read", "", 5, 5, fork_read},
};

static int run(const command *c, const char *label, opts *o)
{
    if (o->npos < c->minpos || o->npos > c->maxpos) {
        fprintf(stderr, "%s: wrong number of arguments for '%s'\n", prog,
                label);
        fprintf(stderr, "Try '%s help'.\n", prog);
        return EXIT_USAGE;
    }
    int rc = gfs_init(o->cluster);
    if (rc < 0) {
        char buf[PATH_MAX];
        const char *path = cluster_path(o->cluster, buf, sizeof(buf));
        if (access(path, R_OK) < 0)
            fprintf(stderr, "%s: cannot read cluster file '%s': %s\n", prog,
                    path, strerror(errno));
        return fail(rc, "cannot start the galley client", NULL);
    }
    if (o->timeout_s)
        gfs_set_timeout_ms(o->timeout_s * 1000);
    load_addrs(o->cluster);
    int ret = c->fn(o);
    rc = gfs_finalize();
    if (rc < 0 && ret == EXIT_OK)
        ret = fail(rc, "error while closing", NULL);
    return ret;
}

int main(int argc, char **argv)
{
    opts o;
    memset(&o, 0, sizeof(o));
    int i = 1;
    /* Global options before the command. */
    while (i < argc && argv[i][0] == '-' && argv[i][1]) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return EXIT_OK;
        }
        if (strcmp(a, "--version") == 0) {
            printf("galley %d.%d\n", GFS_VERSION_MAJOR, GFS_VERSION_MINOR);
            return EXIT_OK;
        }
        if ((a[1] == 'c' || a[1] == 't') && a[2] == '\0') {
            if (i + 1 >= argc)
                return bad_usage("option '%s' needs a value", a);
            char *pair[2] = {argv[i], argv[i + 1]};
            int rc = parse_args(2, pair, "", &o);
            if (rc)
                return rc;
            i += 2;
            continue;
        }
        if ((a[1] == 'c' || a[1] == 't') && a[2]) {
            char *one[1] = {argv[i]};
            int rc = parse_args(1, one, "", &o);
            if (rc)
                return rc;
            i++;
            continue;
        }
        return bad_usage("unknown option '%s'", a);
    }
    if (i >= argc) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[i++];
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(cmd, "exec") == 0)
        return galley_exec(o.cluster, o.timeout_s, argc - i, argv + i);
    if (strcmp(cmd, "mount") == 0)
        return galley_mount(o.cluster, o.timeout_s, argc - i, argv + i);
    if (strcmp(cmd, "umount") == 0)
        return galley_umount(argc - i, argv + i);
    if (strcmp(cmd, "fsck") == 0) /* tools/fsck.c */
        return galley_fsck(argc - i, argv + i, o.cluster, o.timeout_s);
    if (strcmp(cmd, "fork") == 0) {
        if (i >= argc)
            return bad_usage("%s", "'fork' needs a subcommand "
                                   "(create, ls, rm, write, read)");
        const char *sub = argv[i];
        for (size_t k = 0; k < sizeof(fork_commands) / sizeof(*fork_commands);
             k++) {
            const command *c = &fork_commands[k];
            if (strcmp(sub, c->name) != 0)
                continue;
            int rc = parse_args(argc - i, argv + i, c->options, &o);
            if (rc)
                return rc;
            char label[32];
            snprintf(label, sizeof(label), "fork %s", c->name);
            return run(c, label, &o);
        }
        return bad_usage("unknown fork subcommand '%s'", sub);
    }
    for (size_t k = 0; k < sizeof(commands) / sizeof(*commands); k++) {
        const command *c = &commands[k];
        if (strcmp(cmd, c->name) != 0)
            continue;
        int rc = parse_args(argc - i, argv + i, c->options, &o);
        if (rc)
            return rc;
        return run(c, c->name, &o);
    }
    return bad_usage("unknown command '%s'", cmd);
}
