/*
 * galley_cli.h -- what the files of the `galley` tool share (see galley.c
 * for the list).  Every command function takes the parsed options and
 * returns an exit status: EXIT_OK, EXIT_FAIL (an operation failed; the
 * message is printed) or EXIT_USAGE.
 */
#ifndef GALLEY_CLI_H
#define GALLEY_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "galley.h"

/* Bytes moved per library call by put/get/fork read/fork write. */
#define CHUNK (8u << 20)

/* Exit codes. */
enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

extern const char *prog; /* "galley", for messages */

/* ------------------------------------------------------------------------
 * Options (galley_util.c): options may appear anywhere; "--" ends them.
 * ------------------------------------------------------------------------ */

#define MAX_POS 8

typedef struct opts {
    const char *cluster; /* -c */
    int timeout_s;       /* -t, 0 = library default */
    int nsub;            /* -n, 0 = default */
    int nservers;        /* entries in servers[] from -s, 0 = none */
    int servers[GFS_MAX_SUBFILES];
    int64_t unit;       /* -u, 0 = default */
    const char *fork;   /* -F */
    bool force;         /* -f */
    bool plain;         /* -p */
    const char *layout; /* -L */
    bool csum;          /* -C: end-to-end checksums (gfs_set_checksum) */
    int replicas;       /* -R, 0 = 1 */
    int npos;
    const char *pos[MAX_POS];
} opts;

/* Parse argv[0..argc) into o.  `allowed` lists the option letters this
 * command takes (c and t are always allowed).  Returns 0 or EXIT_USAGE
 * after printing why. */
int parse_args(int argc, char **argv, const char *allowed, opts *o);

/* A decimal integer in lo..hi. */
bool parse_int(const char *s, int lo, int hi, int *out);

/* ------------------------------------------------------------------------
 * Errors, addresses, local files, helpers (galley_util.c)
 * ------------------------------------------------------------------------ */

/* Print "galley: <fmt with arg>" and a hint; returns EXIT_USAGE. */
int bad_usage(const char *fmt, const char *arg);
/* Report a library error code; returns EXIT_FAIL. */
int fail(int rc, const char *what, const char *obj);
/* Report a local (errno) error; returns EXIT_FAIL. */
int fail_errno(int e, const char *what, const char *obj);

/* Read the servers' addresses from the cluster file gfs_init used (-c,
 * else the library's search); addr_of(i) is server i's "host:port", or
 * "-" when unknown. */
void load_addrs(const char *cluster);
const char *addr_of(int server);

void human(uint64_t v, char *out, size_t len); /* 1536 -> "1.5K" */
double now_s(void);                            /* monotonic seconds */
ssize_t read_full(int fd, void *buf, size_t n);
int write_all(int fd, const void *buf, size_t n);

/* A local output: stdout, a device/FIFO/symlink written in place, or a
 * regular file written under a temporary name and renamed at commit. */
typedef struct outfile {
    int fd;
    const char *path;
    char *tmp; /* NULL when writing in place */
} outfile;

int out_open(outfile *o, const char *path, unsigned mode);
int out_close(outfile *o, bool ok);
int in_open(const char *path); /* "-" is stdin; fd or -errno */
void in_close(int fd);

/* `file` in one of the directories rel[0..n) relative to this executable's
 * (each from '/' to '/'), the first ok() accepts, into buf (through
 * realpath when resolve); 0, or -1 when none does. */
int find_beside_exe(char *buf, size_t len, const char *const *rel, size_t n,
                    const char *file, int (*ok)(const char *), bool resolve);

/* Open file `name` (printing the error); fid or < 0. */
int open_file(const char *name);
/* Open file `name` and stat it into *st (printing the error); fid, or < 0
 * with nothing left open. */
int open_stat(const char *name, gfs_file_stat *st);
/* Parse SUBFILE of file fid into *sub; 0, or an exit status (printed). */
int subfile_arg(int fid, const char *name, const char *arg, int *sub);

/* gfs_list_forks callback printing one fork a line; arg is a fork_print. */
struct fork_print {
    int count;
    const char *indent;
};
int print_fork(const char *name, uint64_t size, void *arg);

/* What put/get and fork write/read copy to or from: a striped file
 * (gfs_striped_*) or one fork (gfs_read/gfs_write on a fork id). */
typedef struct copy_obj {
    int id;           /* sid, or kid */
    bool striped;     /* id is a sid */
    const char *name; /* the file's or the fork's name, for messages */
} copy_obj;

/* Copy the local input fd into g from offset 0 on and set g's size to
 * what was copied; copy all of g into the local output `local`.  buf
 * holds CHUNK bytes.  EXIT_OK or EXIT_FAIL (printed). */
int copy_in(const copy_obj *g, int fd, const char *local, char *buf);
int copy_out(const copy_obj *g, const char *local, char *buf);

/* ------------------------------------------------------------------------
 * Commands
 * ------------------------------------------------------------------------ */

/* galley_files.c */
int cmd_ls(opts *o);
int cmd_stat(opts *o);
int cmd_rm(opts *o);
int cmd_create(opts *o);
int cmd_resync(opts *o);
int cmd_put(opts *o);
int cmd_scrub(opts *o);
int cmd_get(opts *o);

/* galley_servers.c */
int cmd_ping(opts *o);
int cmd_iostat(opts *o);
int cmd_df(opts *o);

/* galley_forks.c: "fork X", o->pos[0] is X */
int fork_create(opts *o);
int fork_ls(opts *o);
int fork_rm(opts *o);
int fork_write(opts *o);
int fork_read(opts *o);

/* `galley fsck [--repair]` (fsck.c). */
int galley_fsck(int argc, char **argv, const char *cluster, int timeout_s);

/* `galley config [NAME...]` (galley_config.c): the GALLEY_* variables. */
int galley_config(int argc, char **argv);

#endif
