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
 * Files: this one (usage and dispatch); galley_util.c (errors, argument
 * parsing, addresses, local files); galley_files.c (ls, stat, rm, create,
 * put, get); galley_servers.c (ping, iostat, df); galley_forks.c (fork
 * ...); fsck.c, galley_exec.c, galley_mount.c, galley_config.c.
 * galley_cli.h declares what they share.
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster_file.h"
#include "galley.h"
#include "galley_cli.h"
#include "galley_exec.h"
#include "galley_mount.h"

const char *prog = "galley";

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
    "         [-L local|template:NAME] [-C] [-R COPIES]\n"
    "                                create a striped file (-p: plain file,\n"
    "                                no striped layout and no forks)\n"
    "  put LOCAL NAME [-f] [-n NSUB] [-s S0,S1,..] [-u UNIT] [-F FORK]\n"
    "         [-L local|template:NAME] [-C] [-R COPIES]\n"
    "                                copy a local file ('-' = stdin) into a\n"
    "                                new striped file (-f replaces NAME)\n"
    "  get NAME LOCAL                copy a striped file out ('-' = stdout)\n"
    "  scrub [NAME]                  check every stored chunk of the\n"
    "                                checksummed files (all, or NAME) on\n"
    "                                the servers' disks, every copy of a\n"
    "                                replicated file, a failing chunk\n"
    "                                rewritten from a good copy; exit 1 if\n"
    "                                any fails and was not repaired\n"
    "  resync [NAME]                 bring the stale copies of a replicated\n"
    "                                file (of every file) up to date\n"
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
    "                                ('-' = stdin); creates the fork if "
    "absent\n"
    "  fork read NAME SUBFILE FORK LOCAL\n"
    "                                copy the whole fork out ('-' = stdout)\n"
    "  exec [-m DIR[=GDIR]]... [--] CMD [ARGS...]\n"
    "                                run CMD with libgalley-posix.so "
    "preloaded:\n"
    "                                its open/read/stat/fopen... of names\n"
    "                                beginning with 'galley:' (and of paths\n"
    "                                under each local DIR, as Galley names\n"
    "                                under GDIR, default DIR) use Galley\n"
    "  mount [-n NSUB] [-u UNIT] [--cache] [--all-users] [-f] DIR\n"
    "                                show the striped files under DIR (FUSE);\n"
    "                                -n/-u: layout of files created there;\n"
    "                                --cache: the kernel's page cache (mmap,\n"
    "                                close-to-open; see docs/posix.md);\n"
    "                                --all-users: serve every user of the\n"
    "                                host, as modes and owners allow\n"
    "  umount DIR                    unmount (also after a daemon died)\n"
    "  config [NAME...]              the GALLEY_* environment variables: the\n"
    "                                value here, the default, the meaning\n"
    "  help                          this text\n"
    "\n"
    "Options (accepted anywhere after the command as well):\n"
    "  -c FILE    cluster file (default $GALLEY_CLUSTER, then\n"
    "             ~/.galley/cluster, then /etc/galley/cluster)\n"
    "  -t SEC     per-request timeout in seconds (default $GALLEY_TIMEOUT or "
    "30)\n"
    "  -n NSUB    number of subfiles (default: number of servers)\n"
    "  -s LIST    comma-separated server numbers, one per subfile\n"
    "  -u UNIT    stripe unit in bytes, K/M/G suffixes allowed (default 64K)\n"
    "  -F FORK    fork that holds the striped data (default \"data\")\n"
    "  -L LAYOUT  striped (default), local (each block on the server of\n"
    "             the host that first writes it; -u is the block size) or\n"
    "             template:NAME (local, placed like local file NAME)\n"
    "  -f         put: replace an existing file\n"
    "  -C         create/put: end-to-end CRC32C checksums for the file\n"
    "             (galley_checksum=crc32c)\n"
    "  -R COPIES  copies of every subfile, each on another server (1..3,\n"
    "             default 1): a write succeeds once every copy in sync has\n"
    "             it; reads fail over to another copy\n"
    "\n"
    "Exit status: 0 success, 1 an operation failed, 2 bad usage.\n";

static void usage(FILE *f)
{
    fputs(usage_text, f);
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
    {"create", "nsuFpLCR", 1, 1, cmd_create},
    {"put", "nsuFfLCR", 2, 2, cmd_put},
    {"scrub", "", 0, 1, cmd_scrub},
    {"resync", "", 0, 1, cmd_resync},
    {"get", "", 2, 2, cmd_get},
    {"df", "", 0, 0, cmd_df},
    {"iostat", "", 0, 0, cmd_iostat},
};

/* "fork X": positional counts include the word X itself. */
static const command fork_commands[] = {
    {"create", "", 4, 4, fork_create}, {"ls", "", 2, 3, fork_ls},
    {"rm", "", 4, 4, fork_rm},         {"write", "", 5, 5, fork_write},
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
        const char *path = gc_cluster_find(o->cluster, buf, sizeof(buf));
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
    if (strcmp(cmd, "config") == 0) /* galley_config.c */
        return galley_config(argc - i, argv + i);
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
