/*
 * galley_mpi_common.h -- the MPI-driver core the two MPI-IO drivers share:
 * the ROMIO driver (this directory, copied into MPICH's ROMIO by
 * mpich/build-mpich.sh with every other file here) and the OMPIO plug-ins
 * of ompio_galley/ (built by our configure with -I adio_galley, each
 * plug-in compiling its own copy of galley_mpi_common.c).  Each driver is
 * an adapter over it that keeps its own way of reading an info object, of
 * making an error code and of holding a file's state.
 *
 *  - the client's lifecycle (galley_mpi_init, _opened, _closed: in
 *    galley_mpi_common.c);
 *  - a list request with atomic mode's range lock around it
 *    (galley_mpi_rangeio; galley_mpi_lock/_unlock for a non-blocking one);
 *  - galley_mpi_error_class: the one place a gfs error becomes an MPI
 *    error class;
 *  - the layout hints of a new file (striping_factor, striping_unit,
 *    galley_servers, galley_fork, galley_layout, galley_checksum,
 *    galley_replicas): their names, what counts as a valid value, and one
 *    reader of them all (galley_mpi_read_hints).  A value that does not
 *    parse is ignored, as ROMIO does for its own hints.
 *
 * Needs mpi.h (for the error classes) before it, or includes it.
 * Threads: any; the lifecycle's counters are atomic.
 */
#ifndef GALLEY_MPI_COMMON_H
#define GALLEY_MPI_COMMON_H

#include "galley.h"
#include "mpi.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------- errors ---- */

/* The MPI error class of gfs error gfs_err (< 0). */
static inline int galley_mpi_error_class(int gfs_err)
{
    switch (gfs_err) {
    case -ENOENT:
        return MPI_ERR_NO_SUCH_FILE;
    case -EEXIST:
        return MPI_ERR_FILE_EXISTS;
    case -EACCES:
    case -EPERM:
        return MPI_ERR_ACCESS;
    case -ENOSPC:
    case -EDQUOT:
        return MPI_ERR_NO_SPACE;
    case -ENAMETOOLONG:
    case GFS_ELAYOUT:
        return MPI_ERR_BAD_FILE;
    case -EINVAL:
        return MPI_ERR_ARG;
    case -ENOMEM:
        return MPI_ERR_NO_MEM;
    case -EBUSY:
    case GFS_EBUSY:
        return MPI_ERR_FILE_IN_USE;
    default:
        /* unreachable or dead servers, timeouts, protocol and disk
         * errors */
        return MPI_ERR_IO;
    }
}

/* ---------------------------------------------------------- pieces ---- */

/* [*lo, *hi): the file span of n ranges (what atomic mode locks). */
static inline void galley_ranges_span(int64_t n, const gfs_range *r,
                                      int64_t *lo, int64_t *hi)
{
    int64_t l = INT64_MAX, h = 0;
    for (int64_t i = 0; i < n; i++) {
        if (r[i].offset < l)
            l = r[i].offset;
        if (r[i].offset + r[i].size > h)
            h = r[i].offset + r[i].size;
    }
    *lo = n ? l : 0;
    *hi = n && h > l ? h : *lo;
}

/* ---------------------------------------------------- layout hints ---- */

#define GALLEY_HINT_STRIPING_FACTOR "striping_factor" /* subfiles     */
#define GALLEY_HINT_STRIPING_UNIT "striping_unit"     /* bytes        */
#define GALLEY_HINT_SERVERS "galley_servers"          /* "0,2,3"      */
#define GALLEY_HINT_FORK "galley_fork"                /* data fork    */
#define GALLEY_HINT_LAYOUT "galley_layout"     /* striped, local, template:N */
#define GALLEY_HINT_CHECKSUM "galley_checksum" /* crc32c or none        */
#define GALLEY_HINT_REPLICAS "galley_replicas" /* copies: 1, 2 or 3 */

/* galley_replicas: copies of every subfile 1..GFS_MAX_REPLICAS, else 0. */
static inline int galley_hint_replicas(const char *v)
{
    char *end;
    long n = strtol(v, &end, 10);
    return end != v && !*end && n >= 1 && n <= GFS_MAX_REPLICAS ? (int)n : 0;
}

/* striping_factor: a subfile count 1..GFS_MAX_SUBFILES, else 0. */
static inline int galley_hint_striping_factor(const char *v)
{
    int n = atoi(v);
    return n > 0 && n <= GFS_MAX_SUBFILES ? n : 0;
}

/* The subfile count of a new file: the galley_servers hint's count
 * (nlisted), else striping_factor (factor), else the default: every
 * server, except for a file that one process creates alone (file per
 * process, MPI_COMM_SELF; one copy, striped layout): one subfile, on the
 * server its name hashes to, as Lustre's default stripe count is 1.  Such
 * a file's 1 MiB calls then touch one data file, not one per server on the
 * same disks, and its first write opens one fork.  Clamped to the nserv servers, as ROMIO does for impossible
 * striping.  Both MPI drivers choose through here. */
static inline int galley_new_nsub(int nserv, int nlisted, int factor,
                                  bool alone)
{
    int n = nlisted > 0 ? nlisted : factor > 0 ? factor : alone ? 1 : nserv;
    return n < nserv ? n : nserv;
}

/* striping_unit: a stripe unit in bytes (any size > 0), else 0. */
static inline int64_t galley_hint_striping_unit(const char *v)
{
    long long u = atoll(v);
    return u > 0 ? (int64_t)u : 0;
}

/* galley_servers: "0,2,3" into out[] (GFS_MAX_SUBFILES entries); returns
 * how many, or 0 if the list is malformed, names a server twice or one
 * that is not below nserv (the cluster's servers).  out[] may be written
 * even when 0 is returned. */
static inline int galley_hint_servers(const char *s, int nserv, int *out)
{
    int n = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v >= nserv || n == GFS_MAX_SUBFILES)
            return 0;
        for (int i = 0; i < n; i++)
            if (out[i] == v)
                return 0;
        out[n++] = (int)v;
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return 0;
    }
    return n;
}

/* galley_fork: a fork name (1..GFS_FORK_NAME_MAX bytes)? */
static inline bool galley_hint_fork_ok(const char *v)
{
    return v[0] && strlen(v) <= GFS_FORK_NAME_MAX;
}

/* galley_layout: fits a buffer of cap bytes (the value itself is checked
 * by gfs_create_layout when the file is created)? */
static inline bool galley_hint_layout_ok(const char *v, size_t cap)
{
    return strlen(v) < cap;
}

/* galley_checksum: "crc32c" or "none" (gfs_set_checksum)? */
static inline bool galley_hint_checksum_ok(const char *v)
{
    return !strcmp(v, "crc32c") || !strcmp(v, "none");
}

/* After creating file `name` with galley_checksum=algo: the file's opt-in,
 * before anything opens its forks.  0 or a gfs error. */
static inline int galley_set_checksum(const char *name, const char *algo)
{
    if (!algo[0] || !strcmp(algo, "none"))
        return 0;
    int fid = gfs_open_file(name);
    if (fid < 0)
        return fid;
    int rc = gfs_set_checksum(fid, algo);
    gfs_close_file(fid);
    return rc;
}

/* ------------------------------------------------------- lifecycle ---- */

/* Start libgalley once per process (cluster file from GALLEY_CLUSTER or
 * the documented default).  It is finished when MPI_Finalize deletes
 * MPI_COMM_SELF's attributes, or, if galley: files are still open then (a
 * library such as HDF5 may close them after that callback), by the last
 * close.  Returns 0 or a negative gfs error. */
int galley_mpi_init(void);
/* Count the galley: files open in this process (a successful open, a
 * close). */
void galley_mpi_opened(void);
void galley_mpi_closed(void);

/* ------------------------------------------------------ list I/O ---- */

/* Atomic mode's lock of one request: the file span of its ranges, taken
 * on the servers (gfs_striped_lock) for the request's duration. */
typedef struct galley_mpi_lock {
    int sid;
    int64_t lo, len;
    bool held;
} galley_mpi_lock;

/* Lock the span of ranges r[0..nr) of striped file sid if atomic (and the
 * span is not empty; exclusive for a write); *lk records what to unlock.
 * 0 or a gfs error (then nothing is held). */
int galley_mpi_lock_ranges(galley_mpi_lock *lk, int sid, bool atomic, int op,
                           int64_t nr, const gfs_range *r);
/* Release what galley_mpi_lock_ranges took (nothing if it took nothing). */
void galley_mpi_unlock(galley_mpi_lock *lk);

/* File ranges r and memory segments m of striped file sid through
 * gfs_striped_rangeio (op GFS_READ or GFS_WRITE), inside atomic mode's
 * range lock.  Returns the bytes moved (0 for no ranges) or a negative gfs
 * error. */
int64_t galley_mpi_rangeio(int sid, bool atomic, int op, int64_t nr,
                           const gfs_range *r, int64_t nm, const gfs_memseg *m);

/* ----------------------------------------------------- hint reader ---- */

/* The driver hints of a new file, as read from an info object. */
typedef struct galley_mpi_hints {
    int nsub;     /* striping_factor, 0: not given */
    int64_t unit; /* striping_unit, 0: not given */
    int nservers; /* galley_servers entries, 0: not given */
    int servers[GFS_MAX_SUBFILES];
    char fork[GFS_FORK_NAME_MAX + 1]; /* galley_fork */
    char layout[GFS_NAME_MAX + 16];   /* galley_layout, "": striped */
    char checksum[16];                /* galley_checksum, "": none */
    int replicas;                     /* galley_replicas, 0: 1 */
} galley_mpi_hints;

/* Which hints galley_mpi_read_hints took (a bit each). */
enum {
    GALLEY_MPI_HAS_STRIPING_FACTOR = 1 << 0,
    GALLEY_MPI_HAS_STRIPING_UNIT = 1 << 1,
    GALLEY_MPI_HAS_SERVERS = 1 << 2,
    GALLEY_MPI_HAS_FORK = 1 << 3,
    GALLEY_MPI_HAS_LAYOUT = 1 << 4,
    GALLEY_MPI_HAS_CHECKSUM = 1 << 5,
    GALLEY_MPI_HAS_REPLICAS = 1 << 6,
};

/* A driver's way of reading one hint: copy the value of key into v (room
 * for MPI_MAX_INFO_VAL bytes and the NUL) and return 1, or return 0 if
 * info has no such key. */
typedef int (*galley_mpi_info_get)(void *info, const char *key, char *v);

/* Read the layout hints of info through get into *h: a hint given with a
 * valid value overwrites its field, any other field is left as it is.
 * nservers() (called only when galley_servers is given) is the number of
 * servers its entries must be below.  Returns the GALLEY_MPI_HAS_* bits of
 * the hints taken. */
unsigned galley_mpi_read_hints(galley_mpi_hints *h, galley_mpi_info_get get,
                               void *info, int (*nservers)(void));

#endif
