/*
 * ga_array.c -- arrays and array groups (TimeStep, CheckPoint, Restart)
 * over MPI-IO.
 *
 * Files of a group at PATH (see galley_array.h): PATH.schema and
 * PATH.copynum are small and touched by rank 0 alone (opened on
 * MPI_COMM_SELF); the data files PATH.NAME (timesteps) and PATH.NAME.C
 * (checkpoint copy C) are opened collectively, with the view of
 * ga_types.c, and moved with MPI_File_write_at_all / read_at_all.
 *
 * Order of a checkpoint into copy C (C = the copy not holding the newest
 * checkpoint):
 *   1. rank 0 marks record C "pending" (so no tool shows it as good)
 *   2. every array: MPI_File_write_at_all into PATH.NAME.C
 *   3. every array: MPI_File_sync (collective; durable on return)
 *   4. rank 0 learns that 2-3 succeeded on every process (one reduce)
 *   5. rank 0 writes record C (seq, step, crc) and syncs PATH.copynum,
 *      then broadcasts the outcome
 * A crash before 5 leaves the other copy as the newest complete record.
 * GALLEY_ARRAY_CRASH=data:N or copynum:N makes rank 0 _exit(99) during the
 * N-th checkpoint of the run, after step 2's first array or just before
 * step 5 (for crash tests).
 *
 * Errors: every public call ends by agreeing on one code (the most negative
 * one, MINLOC over ranks) and broadcasting the failing process's message,
 * so all processes return the same code and ga_errmsg().  Collective calls
 * are counted (each costs milliseconds when processes outnumber cores):
 * a timestep is one MPI_File_write_at_all per array, a reduce and a
 * broadcast; a checkpoint adds one MPI_File_sync per array.
 *
 * Threads: the caller's; see galley_array.h.
 */
#include "ga_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------- helpers --- */

/* The code every process returns: the most negative, with its message. */
static int agree(MPI_Comm comm, int rc)
{
    struct {
        int rc, rank;
    } in, out;
    MPI_Comm_rank(comm, &in.rank);
    in.rc = rc;
    MPI_Allreduce(&in, &out, 1, MPI_2INT, MPI_MINLOC, comm);
    if (out.rc != 0) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", ga_errmsg());
        MPI_Bcast(msg, sizeof(msg), MPI_CHAR, out.rank, comm);
        msg[sizeof(msg) - 1] = 0;
        ga_fail(out.rc, "%s", msg);
    }
    return out.rc;
}

/*
 * The two halves of agree() with work for rank 0 in between, for the calls
 * whose last step is rank 0's (a step record, a copynum record): rank 0
 * learns the lowest code and who has it (one reduce; the others do not wait
 * for each other), does its part if everything went well, then shares the
 * outcome (one broadcast, a second one with the message on failure).
 */
typedef struct status {
    int rc, rank;
} status;

static status gather_status(MPI_Comm comm, int rc)
{
    status in, out = {0, 0};
    MPI_Comm_rank(comm, &in.rank);
    in.rc = rc;
    MPI_Reduce(&in, &out, 1, MPI_2INT, MPI_MINLOC, 0, comm);
    return out; /* meaningful on rank 0 */
}

static int share_status(MPI_Comm comm, status st)
{
    MPI_Bcast(&st, 1, MPI_2INT, 0, comm);
    if (st.rc != 0) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", ga_errmsg());
        MPI_Bcast(msg, sizeof(msg), MPI_CHAR, st.rank, comm);
        msg[sizeof(msg) - 1] = 0;
        ga_fail(st.rc, "%s", msg);
    }
    return st.rc;
}

static char *join(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + (c ? strlen(c) : 0) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s", a, b, c ? c : "");
    return s;
}

static int err_class(int mpi_rc)
{
    int cls = MPI_ERR_OTHER;
    MPI_Error_class(mpi_rc, &cls);
    return cls;
}

/* Read a whole small file on this process (rank 0, MPI_COMM_SELF).
 * *missing is set (and 0 returned) if it does not exist. */
static int read_small(const char *path, char **buf, size_t *len, bool *missing)
{
    MPI_File fh;
    MPI_Offset size;
    *buf = NULL;
    *len = 0;
    *missing = false;
    int m =
        MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    if (m != MPI_SUCCESS) {
        if (err_class(m) == MPI_ERR_NO_SUCH_FILE) {
            *missing = true;
            return 0;
        }
        return ga_mpi_fail(m, "open", path);
    }
    int rc = 0;
    m = MPI_File_get_size(fh, &size);
    if (m != MPI_SUCCESS) {
        rc = ga_mpi_fail(m, "size of", path);
    } else if (size > GA_SCHEMA_MAX) {
        rc = ga_fail(GA_ESCHEMA, "%s: %lld bytes, more than a schema may hold",
                     path, (long long)size);
    } else {
        *buf = malloc((size_t)size + 1);
        if (!*buf) {
            rc = ga_fail(-ENOMEM, "out of memory");
        } else if (size > 0 &&
                   (m = MPI_File_read_at(fh, 0, *buf, (int)size, MPI_BYTE,
                                         MPI_STATUS_IGNORE)) != MPI_SUCCESS) {
            rc = ga_mpi_fail(m, "read", path);
        } else {
            (*buf)[size] = 0;
            *len = (size_t)size;
        }
    }
    MPI_File_close(&fh);
    if (rc) {
        free(*buf);
        *buf = NULL;
    }
    return rc;
}

/* Broadcast a rank-0 buffer (length, then bytes) to every process. */
static int bcast_buf(MPI_Comm comm, int rank, char **buf, size_t *len, int rc)
{
    int64_t hdr[2] = {rc, (int64_t)*len};
    MPI_Bcast(hdr, 2, MPI_INT64_T, 0, comm);
    if (hdr[0])
        return (int)hdr[0];
    if (rank != 0 || !*buf) {
        *len = (size_t)hdr[1];
        *buf = malloc(*len + 1);
        if (!*buf)
            return ga_fail(-ENOMEM, "out of memory"); /* fatal: MPI aborts */
    }
    if (*len)
        MPI_Bcast(*buf, (int)*len, MPI_BYTE, 0, comm);
    (*buf)[*len] = 0;
    return 0;
}

/* ----------------------------------------------------------- arrays --- */

int ga_array_create(MPI_Comm comm, const ga_array_spec *spec, ga_array **out)
{
    int rc = 0;
    ga_array *a = calloc(1, sizeof(*a));
    *out = NULL;
    if (!a)
        rc = ga_fail(-ENOMEM, "out of memory");
    else
        a->comm = MPI_COMM_NULL;
    if (!rc && (!spec || !spec->dims))
        rc = ga_fail(-EINVAL, "NULL array spec or dims");
    if (!rc)
        rc = ga_check_name(spec->name);
    if (!rc) {
        MPI_Comm_rank(comm, &a->rank);
        MPI_Comm_size(comm, &a->nprocs);
        snprintf(a->name, sizeof(a->name), "%s", spec->name);
        a->shape.rank = spec->rank;
        a->shape.esize = spec->esize;
        for (int d = 0; d < spec->rank && d < GA_MAX_RANK; d++)
            a->shape.dims[d] = spec->dims[d];
        rc = ga_check_shape(&a->shape);
    }
    if (!rc) {
        if (spec->mem) {
            a->mem = *spec->mem;
        } else {
            a->mem.rank = a->shape.rank; /* all '*': rank 0 holds it */
        }
        rc = ga_layout_resolve(&a->mem, &a->shape, a->nprocs, true);
    }
    if (!rc) {
        if (spec->disk)
            a->disk = *spec->disk;
        else
            a->disk.rank = a->shape.rank;
        rc = ga_layout_resolve(&a->disk, &a->shape, 1, false);
    }
    if (!rc) {
        a->bytes = a->shape.esize;
        bool mine = a->rank < a->mem.units;
        if (mine)
            a->bytes *= ga_unit_count(&a->mem, &a->shape, a->rank, a->count);
        else
            a->bytes = 0;
        for (int d = 0; d < a->shape.rank; d++) {
            int gh = spec->ghost ? spec->ghost[d] : 0;
            if (gh < 0 || gh > (1 << 20)) {
                rc = ga_fail(-EINVAL, "ghost width %d out of range", gh);
                break;
            }
            a->ghost[d] = gh;
            if (!mine)
                a->count[d] = 0;
            a->alloc[d] = a->count[d] + 2 * gh;
        }
    }
    rc = agree(comm, rc); /* before the collective dup */
    if (!rc && MPI_Comm_dup(comm, &a->comm) != MPI_SUCCESS)
        rc = agree(comm, ga_fail(GA_EMPI, "MPI_Comm_dup failed"));
    if (rc) {
        ga_array_free(a);
        return rc;
    }
    *out = a;
    return 0;
}

void ga_array_free(ga_array *a)
{
    if (!a)
        return;
    if (a->comm != MPI_COMM_NULL)
        MPI_Comm_free(&a->comm);
    free(a->owned);
    free(a);
}

int ga_array_bind(ga_array *a, void *base)
{
    if (!a)
        return ga_fail(-EINVAL, "NULL array");
    a->base = base;
    return 0;
}

void *ga_array_alloc(ga_array *a)
{
    if (!a || a->bytes == 0)
        return NULL;
    size_t n = (size_t)a->shape.esize;
    for (int d = 0; d < a->shape.rank; d++)
        n *= (size_t)a->alloc[d];
    free(a->owned);
    a->owned = calloc(1, n);
    a->base = a->owned;
    return a->owned;
}

int64_t ga_array_local(const ga_array *a, int64_t *count, int64_t *alloc)
{
    for (int d = 0; d < a->shape.rank; d++) {
        if (count)
            count[d] = a->count[d];
        if (alloc)
            alloc[d] = a->alloc[d];
    }
    return a->bytes;
}

int64_t ga_array_global_index(const ga_array *a, int dim, int64_t i)
{
    if (!a || dim < 0 || dim >= a->shape.rank || a->rank >= a->mem.units)
        return -1;
    int c[GA_MAX_RANK];
    ga_unit_coords(&a->mem, a->rank, c);
    return ga_dim_global(&a->mem.dist[dim], a->shape.dims[dim],
                         a->mem.grid[dim], c[dim], i);
}

const ga_layout *ga_array_mem_layout(const ga_array *a)
{
    return &a->mem;
}

const ga_layout *ga_array_disk_layout(const ga_array *a)
{
    return &a->disk;
}

int ga_array_export(ga_array *a, const char *path, MPI_Info info)
{
    MPI_File fh = MPI_FILE_NULL;
    MPI_Datatype ft = MPI_BYTE, mt = MPI_BYTE;
    int64_t bytes = 0;
    ga_layout whole;
    memset(&whole, 0, sizeof(whole));
    whole.rank = a->shape.rank;
    int rc = ga_layout_resolve(&whole, &a->shape, 1, false);
    if (!rc && a->bytes && !a->base)
        rc = ga_fail(GA_ESTATE, "array %s: no memory bound", a->name);
    if (!rc)
        rc = ga_types_build(a, &whole, ga_slot_bytes(&whole, &a->shape), &ft,
                            &mt, &bytes);
    rc = agree(a->comm, rc);
    if (rc)
        return rc;
    int m = MPI_File_open(a->comm, path, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                          info, &fh);
    if (m != MPI_SUCCESS) {
        rc = agree(a->comm, ga_mpi_fail(m, "open", path));
        ga_types_free(&ft, &mt);
        return rc;
    }
    if ((m = MPI_File_set_size(fh, 0)) != MPI_SUCCESS)
        rc = ga_mpi_fail(m, "truncate", path);
    if (!rc && (m = MPI_File_set_view(fh, 0, MPI_BYTE, ft, "native",
                                      MPI_INFO_NULL)) != MPI_SUCCESS)
        rc = ga_mpi_fail(m, "set view of", path);
    /* collective only when everyone holds data (see open_group) */
    int full = bytes > 0, all_full = 0;
    MPI_Allreduce(&full, &all_full, 1, MPI_INT, MPI_MIN, a->comm);
    if (!rc && all_full &&
        (m = MPI_File_write_at_all(fh, 0, a->base, 1, mt, MPI_STATUS_IGNORE)) !=
            MPI_SUCCESS)
        rc = ga_mpi_fail(m, "write", path);
    else if (!rc && !all_full && bytes &&
             (m = MPI_File_write_at(fh, 0, a->base, 1, mt,
                                    MPI_STATUS_IGNORE)) != MPI_SUCCESS)
        rc = ga_mpi_fail(m, "write", path);
    if ((m = MPI_File_close(&fh)) != MPI_SUCCESS && !rc)
        rc = ga_mpi_fail(m, "close", path);
    ga_types_free(&ft, &mt);
    return agree(a->comm, rc);
}

/* ----------------------------------------------------------- groups --- */

typedef struct member {
    ga_array *a;
    ga_layout disk; /* the group's disk layout for this array */
    int64_t slot;
    MPI_Datatype ftype, mtype;
    int64_t bytes;
    bool coll;      /* every process holds part of it: collective I/O */
    MPI_File fh[2]; /* timestep file, or checkpoint copies 0 and 1 */
} member;

struct ga_group {
    MPI_Comm comm;
    int rank, nprocs;
    ga_group_kind kind;
    int flags;
    char *path;
    MPI_Info info;
    int nmem;
    member *mem;
    bool opened;      /* types built, schema written/checked */
    bool have_schema; /* a stored schema was read */
    ga_schema schema;
    /* timesteps (every process) */
    int nsteps, stepcap;
    int64_t *steps;
    /* checkpoints (every process) */
    int last_copy; /* newest complete copy, -1 none */
    int64_t last_seq, last_step;
    int ncheckpoints;
    /* rank 0 only */
    MPI_File fschema, fcopy;
    int64_t schema_end;
    /* crash hook */
    int crash_kind; /* 0 none, 1 data, 2 copynum */
    int crash_at;
};

static bool is_galley(const char *path)
{
    return !strncmp(path, "galley:", 7);
}

static char *data_name(const ga_group *g, const member *m, int copy)
{
    char suffix[GA_NAME_MAX + 8];
    if (g->kind == GA_TIMESTEP)
        snprintf(suffix, sizeof(suffix), ".%s", m->a->name);
    else
        snprintf(suffix, sizeof(suffix), ".%s.%d", m->a->name, copy);
    return join(g->path, suffix, NULL);
}

/* Hints for a data file: the caller's first, then ours where unset. */
static MPI_Info data_info(const ga_group *g, const member *m, int copy)
{
    MPI_Info info = MPI_INFO_NULL;
    if (g->info != MPI_INFO_NULL)
        MPI_Info_dup(g->info, &info);
    else
        MPI_Info_create(&info);
    if (!is_galley(g->path))
        return info;
    char v[64];
    int flag;
    MPI_Info_get(info, "striping_factor", sizeof(v) - 1, v, &flag);
    if (!flag) {
        snprintf(v, sizeof(v), "%d", ga_layout_units(&m->disk));
        MPI_Info_set(info, "striping_factor", v);
    }
    MPI_Info_get(info, "striping_unit", sizeof(v) - 1, v, &flag);
    if (!flag && m->slot <= INT_MAX) {
        snprintf(v, sizeof(v), "%" PRId64, m->slot);
        MPI_Info_set(info, "striping_unit", v);
    }
    /* How the collective calls move data.  By default each process sends
     * its pieces straight to the servers as one list request (what
     * Panda-on-Galley did with strided calls; the servers sort and merge):
     * romio_cb_write/read=disable.  Measured on one host, 64 MB
     * (BLOCK,BLOCK) over 4 servers: ~180 MB/s this way, ~35 MB/s through
     * the driver's aggregating collective (README, "Benchmark").  A caller
     * who enables collective buffering gets one aggregator per chunk, i.e.
     * per server (Panda's server-directed I/O); ROMIO's default is one per
     * host, which on one machine funnels everything through one process. */
    static const char *const cbkeys[2] = {"romio_cb_write", "romio_cb_read"};
    for (int i = 0; i < 2; i++) {
        MPI_Info_get(info, cbkeys[i], sizeof(v) - 1, v, &flag);
        if (!flag)
            MPI_Info_set(info, cbkeys[i], "disable");
    }
    int f1, f2;
    MPI_Info_get(info, "cb_nodes", sizeof(v) - 1, v, &f1);
    MPI_Info_get(info, "cb_config_list", sizeof(v) - 1, v, &f2);
    if (!f1 && !f2) {
        int n = ga_layout_units(&m->disk);
        snprintf(v, sizeof(v), "%d", n < g->nprocs ? n : g->nprocs);
        MPI_Info_set(info, "cb_nodes", v);
        MPI_Info_set(info, "cb_config_list", "*:*");
    }
    MPI_Info_get(info, "galley_fork", sizeof(v) - 1, v, &flag);
    if (!flag) {
        if (g->kind == GA_TIMESTEP)
            snprintf(v, sizeof(v), "data");
        else
            snprintf(v, sizeof(v), "data0_%d", copy);
        MPI_Info_set(info, "galley_fork", v);
    }
    return info;
}

static void parse_crash_hook(ga_group *g)
{
    const char *e = getenv("GALLEY_ARRAY_CRASH");
    int n = 0;
    if (!e)
        return;
    if (sscanf(e, "data:%d", &n) == 1 && n > 0)
        g->crash_kind = 1;
    else if (sscanf(e, "copynum:%d", &n) == 1 && n > 0)
        g->crash_kind = 2;
    g->crash_at = n;
}

static void crash_point(ga_group *g, int kind)
{
    if (g->crash_kind == kind && g->ncheckpoints + 1 == g->crash_at &&
        g->rank == 0) {
        fprintf(stderr,
                "ga: GALLEY_ARRAY_CRASH: rank 0 exits in checkpoint %d "
                "(%s)\n",
                g->ncheckpoints + 1,
                kind == 1 ? "after data of the first array"
                          : "before the copynum record");
        fflush(stderr);
        _exit(99);
    }
}

/* Read the stored schema (and copynum) on rank 0 and share it. */
static int load_stored(ga_group *g)
{
    char *text = NULL, *cbuf = NULL;
    size_t len = 0, clen = 0;
    bool missing = false, cmissing = true;
    int rc = 0;
    char *spath = join(g->path, ".schema", NULL);
    char *cpath = join(g->path, ".copynum", NULL);
    if (!spath || !cpath)
        rc = ga_fail(-ENOMEM, "out of memory");
    if (g->rank == 0 && !rc) {
        rc = read_small(spath, &text, &len, &missing);
        if (!rc && !missing && g->kind != GA_TIMESTEP)
            rc = read_small(cpath, &cbuf, &clen, &cmissing);
    }
    if (g->rank == 0 && missing) {
        free(text);
        text = NULL;
        len = SIZE_MAX; /* "no schema" marker */
    }
    int64_t hdr[2] = {rc, len == SIZE_MAX ? -1 : (int64_t)len};
    MPI_Bcast(hdr, 2, MPI_INT64_T, 0, g->comm);
    rc = (int)hdr[0];
    if (!rc && hdr[1] >= 0) {
        len = (size_t)hdr[1];
        rc = bcast_buf(g->comm, g->rank, &text, &len, 0);
        if (!rc && g->kind != GA_TIMESTEP) {
            if (cmissing)
                clen = 0;
            rc = bcast_buf(g->comm, g->rank, &cbuf, &clen, 0);
        }
        if (!rc) {
            rc = ga_schema_parse(text, len, &g->schema);
            if (rc)
                ga_fail(rc, "%s: %s", spath, ga_errmsg());
        }
        if (!rc) {
            g->have_schema = true;
            int want = g->kind == GA_TIMESTEP ? GA_TIMESTEP : GA_CHECKPOINT;
            if (g->schema.kind != want)
                rc = ga_fail(
                    GA_ESCHEMA, "%s holds a %s group, not a %s group", spath,
                    g->schema.kind == GA_TIMESTEP ? "timestep" : "checkpoint",
                    want == GA_TIMESTEP ? "timestep" : "checkpoint");
        }
        if (!rc && g->kind == GA_TIMESTEP && g->schema.nsteps) {
            g->steps = malloc(sizeof(int64_t) * (size_t)g->schema.nsteps);
            if (!g->steps)
                rc = ga_fail(-ENOMEM, "out of memory");
            else {
                memcpy(g->steps, g->schema.steps,
                       sizeof(int64_t) * (size_t)g->schema.nsteps);
                g->nsteps = g->stepcap = g->schema.nsteps;
            }
        }
        if (!rc && g->kind != GA_TIMESTEP) {
            ga_copy_rec r;
            g->last_copy = ga_copy_newest(cbuf, clen, &r);
            if (g->last_copy >= 0) {
                g->last_seq = r.seq;
                g->last_step = r.step;
            }
        }
    }
    free(text);
    free(cbuf);
    free(spath);
    free(cpath);
    return rc;
}

int ga_group_create(MPI_Comm comm, ga_group_kind kind, const char *path,
                    int flags, MPI_Info info, ga_group **out)
{
    int rc = 0;
    *out = NULL;
    ga_group *g = calloc(1, sizeof(*g));
    if (!g)
        return agree(comm, ga_fail(-ENOMEM, "out of memory"));
    g->comm = MPI_COMM_NULL;
    g->info = MPI_INFO_NULL;
    g->fschema = g->fcopy = MPI_FILE_NULL;
    g->last_copy = -1;
    g->kind = kind;
    g->flags = flags;
    MPI_Comm_rank(comm, &g->rank);
    MPI_Comm_size(comm, &g->nprocs);
    if (kind != GA_TIMESTEP && kind != GA_CHECKPOINT && kind != GA_RESTART)
        rc = ga_fail(-EINVAL, "unknown group kind %d", (int)kind);
    else if (kind == GA_RESTART && flags != 0)
        rc = ga_fail(-EINVAL, "a restart group takes no flags");
    else if (kind != GA_RESTART && flags != GA_CREATE && flags != GA_APPEND)
        rc = ga_fail(-EINVAL, "give exactly one of GA_CREATE and GA_APPEND");
    else if (!path || !*path || strlen(path) > 4000)
        rc = ga_fail(-EINVAL, "bad group path");
    if (!rc && !(g->path = strdup(path)))
        rc = ga_fail(-ENOMEM, "out of memory");
    if (!rc && info != MPI_INFO_NULL &&
        MPI_Info_dup(info, &g->info) != MPI_SUCCESS)
        rc = ga_fail(GA_EMPI, "MPI_Info_dup failed");
    rc = agree(comm, rc); /* before the collective dup */
    if (!rc && MPI_Comm_dup(comm, &g->comm) != MPI_SUCCESS)
        rc = agree(comm, ga_fail(GA_EMPI, "MPI_Comm_dup failed"));
    if (!rc) {
        parse_crash_hook(g);
        if (kind == GA_RESTART || (flags & GA_APPEND))
            rc = agree(comm, load_stored(g));
    }
    if (rc) {
        ga_group_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

static int check_against_schema(const ga_group *g, const ga_array *a,
                                const ga_schema_array **found)
{
    const ga_schema_array *s = ga_schema_find(&g->schema, a->name);
    *found = s;
    if (!s)
        return ga_fail(GA_EMISMATCH, "%s: array %s is not in the stored schema",
                       g->path, a->name);
    bool same =
        s->shape.rank == a->shape.rank && s->shape.esize == a->shape.esize;
    for (int d = 0; same && d < a->shape.rank; d++)
        same = s->shape.dims[d] == a->shape.dims[d];
    if (!same)
        return ga_fail(
            GA_EMISMATCH,
            "%s: array %s differs from the stored one (rank, extents "
            "or element size)",
            g->path, a->name);
    return 0;
}

int ga_group_insert(ga_group *g, ga_array *a)
{
    if (!g || !a)
        return ga_fail(-EINVAL, "NULL group or array");
    if (g->opened)
        return ga_fail(GA_ESTATE, "%s: insert after the first write or read",
                       g->path);
    int cmp;
    MPI_Comm_compare(g->comm, a->comm, &cmp);
    if (cmp != MPI_IDENT && cmp != MPI_CONGRUENT)
        return ga_fail(-EINVAL, "array %s lives on another communicator",
                       a->name);
    for (int i = 0; i < g->nmem; i++)
        if (!strcmp(g->mem[i].a->name, a->name))
            return ga_fail(-EEXIST, "%s: array %s inserted twice", g->path,
                           a->name);
    member m;
    memset(&m, 0, sizeof(m));
    m.a = a;
    m.disk = a->disk;
    if (g->have_schema) {
        const ga_schema_array *s;
        int rc = check_against_schema(g, a, &s);
        if (rc)
            return rc;
        m.disk = s->disk; /* the file's layout wins */
    }
    m.slot = ga_slot_bytes(&m.disk, &a->shape);
    m.ftype = m.mtype = MPI_DATATYPE_NULL;
    m.fh[0] = m.fh[1] = MPI_FILE_NULL;
    member *t = realloc(g->mem, sizeof(*t) * (size_t)(g->nmem + 1));
    if (!t)
        return ga_fail(-ENOMEM, "out of memory");
    g->mem = t;
    g->mem[g->nmem++] = m;
    a->groups++;
    return 0;
}

/* Open (collectively) the data file of member m for copy c and set its
 * view; every process returns the same code. */
static int open_data(ga_group *g, member *m, int c)
{
    if (m->fh[c] != MPI_FILE_NULL)
        return 0;
    char *name = data_name(g, m, c);
    if (!name)
        return ga_fail(-ENOMEM, "out of memory"); /* fatal: MPI aborts */
    int amode = g->kind == GA_RESTART ? MPI_MODE_RDONLY
                                      : MPI_MODE_RDWR | MPI_MODE_CREATE;
    MPI_Info info = data_info(g, m, c);
    int rc = 0;
    int e = MPI_File_open(g->comm, name, amode, info, &m->fh[c]);
    if (e != MPI_SUCCESS) {
        m->fh[c] = MPI_FILE_NULL;
        rc = ga_mpi_fail(e, "open", name);
    }
    rc = agree(g->comm, rc);
    if (!rc) {
        e = MPI_File_set_view(m->fh[c], 0, MPI_BYTE, m->ftype, "native",
                              MPI_INFO_NULL);
        if (e != MPI_SUCCESS)
            rc = ga_mpi_fail(e, "set view of", name);
        rc = agree(g->comm, rc);
    }
    MPI_Info_free(&info);
    free(name);
    return rc;
}

enum { IO_READ, IO_WRITE };

/* Open copy c of every member (collective the first time only). */
static int open_all(ga_group *g, int c)
{
    int rc = 0;
    for (int i = 0; i < g->nmem && !rc; i++)
        rc = open_data(g, &g->mem[i], c);
    return rc;
}

/*
 * One access per array of the group on copy c (timestep files: c = 0) at
 * timestep `index`; the files must be open (open_all).  Every process
 * makes the same sequence of collective calls whatever fails on the way,
 * so nothing needs agreeing in between; the caller agrees once at the end.
 * A process whose array has no memory bound (a caller's bug) still takes
 * part, with a zeroed scratch block, and reports GA_ESTATE: the step or
 * copy is then never recorded as written.  With crash_hook, the
 * GALLEY_ARRAY_CRASH=data point follows the first array.
 */
static int io_all(ga_group *g, int c, int op, int64_t index, bool crash_hook)
{
    int rc = 0;
    for (int i = 0; i < g->nmem; i++) {
        member *m = &g->mem[i];
        void *base = m->a->base, *scratch = NULL;
        if (m->bytes && !base) {
            size_t n = (size_t)m->a->shape.esize;
            for (int d = 0; d < m->a->shape.rank; d++)
                n *= (size_t)m->a->alloc[d];
            base = scratch = calloc(1, n);
            if (!scratch) {
                fprintf(stderr, "ga: out of memory for a scratch block\n");
                MPI_Abort(g->comm, 1);
            }
            if (!rc)
                rc = ga_fail(GA_ESTATE,
                             "array %s: no memory bound (ga_array_bind)",
                             m->a->name);
        }
        MPI_Offset off = (MPI_Offset)index * m->bytes;
        int e = MPI_SUCCESS;
        if (m->coll && op == IO_WRITE)
            e = MPI_File_write_at_all(m->fh[c], off, base, 1, m->mtype,
                                      MPI_STATUS_IGNORE);
        else if (m->coll)
            e = MPI_File_read_at_all(m->fh[c], off, base, 1, m->mtype,
                                     MPI_STATUS_IGNORE);
        else if (m->bytes && op == IO_WRITE)
            e = MPI_File_write_at(m->fh[c], off, base, 1, m->mtype,
                                  MPI_STATUS_IGNORE);
        else if (m->bytes)
            e = MPI_File_read_at(m->fh[c], off, base, 1, m->mtype,
                                 MPI_STATUS_IGNORE);
        if (e != MPI_SUCCESS && !rc)
            rc = ga_mpi_fail(e, op == IO_WRITE ? "write to" : "read from",
                             g->path);
        free(scratch);
        if (crash_hook && i == 0)
            crash_point(g, 1);
    }
    return rc;
}

/* Rank 0: delete a file if it exists. */
static void delete_quietly(const char *path)
{
    MPI_File_delete((char *)path, MPI_INFO_NULL);
}

/* First write or read: datatypes, then the schema side of the files. */
static int open_group(ga_group *g)
{
    int rc = 0;
    if (g->opened)
        return 0;
    if (g->nmem == 0)
        return agree(g->comm,
                     ga_fail(GA_ESTATE, "%s: group has no arrays", g->path));
    for (int i = 0; i < g->nmem && !rc; i++) {
        member *m = &g->mem[i];
        rc = ga_types_build(m->a, &m->disk, m->slot, &m->ftype, &m->mtype,
                            &m->bytes);
    }
    /* Collective I/O when every process holds part of an array; when some
     * hold nothing (all '*' in memory: rank 0 has everything, or a grid
     * smaller than the communicator) the holders use independent I/O and
     * the others stay out: there is no aggregation worth having, and it
     * saves a collective call.  (It also kept zero-length collective
     * calls away from galley drivers before 0fd1b8b, which aborted.) */
    for (int i = 0; i < g->nmem; i++) {
        int full = g->mem[i].bytes > 0, all = 0;
        MPI_Allreduce(&full, &all, 1, MPI_INT, MPI_MIN, g->comm);
        g->mem[i].coll = all != 0;
    }
    if (!rc && g->have_schema && g->kind != GA_RESTART &&
        g->nmem != g->schema.narrays)
        rc = ga_fail(GA_EMISMATCH,
                     "%s: stored with %d arrays, %d inserted (append needs the "
                     "same set)",
                     g->path, g->schema.narrays, g->nmem);
    rc = agree(g->comm, rc);
    if (rc)
        return rc;

    char *spath = join(g->path, ".schema", NULL);
    char *cpath = join(g->path, ".copynum", NULL);
    if (!spath || !cpath)
        rc = ga_fail(-ENOMEM, "out of memory");
    if (g->kind != GA_RESTART && g->rank == 0 && !rc) {
        int e;
        if (!g->have_schema) {
            /* a fresh group: old files go first */
            delete_quietly(spath);
            delete_quietly(cpath);
            for (int i = 0; i < g->nmem; i++)
                for (int c = 0; c < (g->kind == GA_TIMESTEP ? 1 : 2); c++) {
                    char *n = data_name(g, &g->mem[i], c);
                    if (n)
                        delete_quietly(n);
                    free(n);
                }
        }
        MPI_Info sinfo;
        MPI_Info_create(&sinfo);
        if (is_galley(g->path)) {
            /* a locality layout asked for the data (local, or a template)
             * holds for the records too (local, on every server, so rank
             * 0's own host has one): rank 0 writes them, so they stay on
             * rank 0's host */
            char lay[MPI_MAX_INFO_VAL + 1];
            int flag = 0;
            if (g->info != MPI_INFO_NULL)
                MPI_Info_get(g->info, "galley_layout", MPI_MAX_INFO_VAL, lay,
                             &flag);
            if (flag && (strcmp(lay, "local") == 0 ||
                         strncmp(lay, "template:", 9) == 0))
                MPI_Info_set(sinfo, "galley_layout", "local");
            else
                MPI_Info_set(sinfo, "striping_factor", "1");
            MPI_Info_set(sinfo, "galley_fork", "schema");
        }
        e = MPI_File_open(MPI_COMM_SELF, spath, MPI_MODE_RDWR | MPI_MODE_CREATE,
                          sinfo, &g->fschema);
        if (e != MPI_SUCCESS) {
            g->fschema = MPI_FILE_NULL;
            rc = ga_mpi_fail(e, "open", spath);
        }
        if (!rc && !g->have_schema) {
            ga_schema s;
            memset(&s, 0, sizeof(s));
            s.kind = g->kind == GA_TIMESTEP ? GA_TIMESTEP : GA_CHECKPOINT;
            s.narrays = g->nmem;
            s.arrays = calloc((size_t)g->nmem, sizeof(*s.arrays));
            char *text = NULL;
            size_t len = 0;
            if (!s.arrays)
                rc = ga_fail(-ENOMEM, "out of memory");
            for (int i = 0; i < g->nmem && !rc; i++) {
                ga_schema_array *x = &s.arrays[i];
                const member *m = &g->mem[i];
                snprintf(x->name, sizeof(x->name), "%s", m->a->name);
                x->shape = m->a->shape;
                x->mem = m->a->mem;
                x->disk = m->disk;
                x->chunks = ga_layout_units(&m->disk);
                x->slot = m->slot;
            }
            if (!rc)
                rc = ga_schema_format(&s, &text, &len);
            if (!rc && (e = MPI_File_set_size(g->fschema, 0)) != MPI_SUCCESS)
                rc = ga_mpi_fail(e, "truncate", spath);
            if (!rc &&
                (e = MPI_File_write_at(g->fschema, 0, text, (int)len, MPI_BYTE,
                                       MPI_STATUS_IGNORE)) != MPI_SUCCESS)
                rc = ga_mpi_fail(e, "write", spath);
            g->schema_end = (int64_t)len;
            free(text);
            free(s.arrays);
        } else if (!rc) {
            /* continue after the last complete record (drop a torn one) */
            g->schema_end = (int64_t)g->schema.header_len;
            char line[64];
            for (int i = 0; i < g->nsteps; i++)
                g->schema_end +=
                    ga_schema_step_line(i, g->steps[i], line, sizeof(line));
            if ((e = MPI_File_set_size(g->fschema, g->schema_end)) !=
                MPI_SUCCESS)
                rc = ga_mpi_fail(e, "truncate", spath);
        }
        if (!rc && g->kind == GA_CHECKPOINT) {
            if (is_galley(g->path))
                MPI_Info_set(sinfo, "galley_fork", "copynum");
            e = MPI_File_open(MPI_COMM_SELF, cpath,
                              MPI_MODE_RDWR | MPI_MODE_CREATE, sinfo,
                              &g->fcopy);
            if (e != MPI_SUCCESS) {
                g->fcopy = MPI_FILE_NULL;
                rc = ga_mpi_fail(e, "open", cpath);
            }
        }
        MPI_Info_free(&sinfo);
    }
    free(spath);
    free(cpath);
    rc = agree(g->comm, rc);
    if (!rc)
        g->opened = true;
    return rc;
}

int ga_group_prepare(ga_group *g)
{
    if (!g)
        return ga_fail(-EINVAL, "NULL group");
    int rc = open_group(g);
    if (rc || g->kind == GA_RESTART)
        return rc;
    for (int i = 0; i < g->nmem && !rc; i++)
        for (int c = 0; c < (g->kind == GA_TIMESTEP ? 1 : 2) && !rc; c++)
            rc = open_data(g, &g->mem[i], c);
    return rc;
}

int ga_group_free(ga_group *g)
{
    if (!g)
        return 0;
    int rc = 0;
    for (int i = 0; i < g->nmem; i++) {
        member *m = &g->mem[i];
        for (int c = 0; c < 2; c++)
            if (m->fh[c] != MPI_FILE_NULL) {
                int e = MPI_File_close(&m->fh[c]);
                if (e != MPI_SUCCESS && !rc)
                    rc = ga_mpi_fail(e, "close", g->path);
            }
        ga_types_free(&m->ftype, &m->mtype);
        m->a->groups--;
    }
    if (g->fschema != MPI_FILE_NULL)
        MPI_File_close(&g->fschema);
    if (g->fcopy != MPI_FILE_NULL)
        MPI_File_close(&g->fcopy);
    if (g->comm != MPI_COMM_NULL)
        rc = agree(g->comm, rc);
    if (g->comm != MPI_COMM_NULL)
        MPI_Comm_free(&g->comm);
    if (g->info != MPI_INFO_NULL)
        MPI_Info_free(&g->info);
    ga_schema_clear(&g->schema);
    free(g->steps);
    free(g->mem);
    free(g->path);
    free(g);
    return rc;
}

/* -------------------------------------------------------- timesteps --- */

int ga_timestep(ga_group *g, int64_t step)
{
    if (!g || g->kind != GA_TIMESTEP)
        return ga_fail(GA_ESTATE, "ga_timestep needs a timestep group");
    int rc = open_group(g);
    if (!rc)
        rc = open_all(g, 0);
    if (rc)
        return rc;
    int idx = g->nsteps;
    if (idx >= GA_MAX_STEPS) /* the same on every process */
        return ga_fail(-EFBIG, "%s: more than %d timesteps", g->path,
                       GA_MAX_STEPS);
    if (g->nsteps == g->stepcap) {
        int nc = g->stepcap ? g->stepcap * 2 : 64;
        int64_t *t = realloc(g->steps, sizeof(*t) * (size_t)nc);
        if (!t)
            rc = ga_fail(-ENOMEM, "out of memory");
        else {
            g->steps = t;
            g->stepcap = nc;
        }
    }
    int io = io_all(g, 0, IO_WRITE, idx, false);
    if (!rc)
        rc = io;
    /* the record follows everybody's data: a reader never sees a step
     * half there */
    status st = gather_status(g->comm, rc);
    if (g->rank == 0 && st.rc == 0) {
        char line[64];
        int n = ga_schema_step_line(idx, step, line, sizeof(line));
        int e = MPI_File_write_at(g->fschema, g->schema_end, line, n, MPI_BYTE,
                                  MPI_STATUS_IGNORE);
        if (e != MPI_SUCCESS)
            st.rc = ga_mpi_fail(e, "append step record to", g->path);
        else
            g->schema_end += n;
    }
    rc = share_status(g->comm, st);
    if (rc)
        return rc;
    g->steps[g->nsteps++] = step;
    return idx;
}

int ga_timestep_count(ga_group *g)
{
    if (!g || g->kind != GA_TIMESTEP)
        return ga_fail(GA_ESTATE, "not a timestep group");
    return g->nsteps;
}

int ga_timestep_read(ga_group *g, int index, int64_t *step)
{
    if (!g || g->kind != GA_TIMESTEP)
        return ga_fail(GA_ESTATE, "ga_timestep_read needs a timestep group");
    int rc = open_group(g);
    if (rc)
        return rc;
    if (index < 0 || index >= g->nsteps) /* the same on every process */
        return ga_fail(GA_ENOSTEP, "%s: no timestep %d (%d stored)", g->path,
                       index, g->nsteps);
    rc = open_all(g, 0);
    if (!rc)
        rc = agree(g->comm, io_all(g, 0, IO_READ, index, false));
    if (!rc && step)
        *step = g->steps[index];
    return rc;
}

int ga_timestep_rewind(ga_group *g, int64_t last_step)
{
    if (!g || g->kind != GA_TIMESTEP)
        return ga_fail(GA_ESTATE, "ga_timestep_rewind needs a timestep group");
    int rc = open_group(g);
    if (rc)
        return rc;
    int keep = 0;
    while (keep < g->nsteps && g->steps[keep] <= last_step)
        keep++;
    if (g->rank == 0 && keep < g->nsteps) {
        int64_t end = g->schema_end;
        char line[64];
        for (int i = keep; i < g->nsteps; i++)
            end -= ga_schema_step_line(i, g->steps[i], line, sizeof(line));
        int e = MPI_File_set_size(g->fschema, end);
        if (e != MPI_SUCCESS)
            rc = ga_mpi_fail(e, "truncate schema of", g->path);
        else
            g->schema_end = end;
    }
    rc = agree(g->comm, rc);
    if (rc)
        return rc;
    g->nsteps = keep;
    return keep;
}

/* ------------------------------------------------------ checkpoints --- */

int ga_checkpoint(ga_group *g, int64_t step)
{
    if (!g || g->kind != GA_CHECKPOINT)
        return ga_fail(GA_ESTATE, "ga_checkpoint needs a checkpoint group");
    int rc = open_group(g);
    if (rc)
        return rc;
    int c = g->last_copy < 0 ? 0 : 1 - g->last_copy;
    rc = open_all(g, c);
    if (rc)
        return rc;
    char rec[GA_COPY_RECORD];
    if (g->rank == 0) {
        ga_copy_encode_pending(c, rec);
        int e = MPI_File_write_at(g->fcopy, (MPI_Offset)c * GA_COPY_RECORD, rec,
                                  GA_COPY_RECORD, MPI_BYTE, MPI_STATUS_IGNORE);
        if (e != MPI_SUCCESS)
            rc = ga_mpi_fail(e, "mark copy pending in", g->path);
    }
    int io = io_all(g, c, IO_WRITE, 0, true);
    if (!rc)
        rc = io;
    for (int i = 0; i < g->nmem; i++) {
        int e = MPI_File_sync(g->mem[i].fh[c]); /* collective */
        if (e != MPI_SUCCESS && !rc)
            rc = ga_mpi_fail(e, "sync of checkpoint", g->path);
    }
    status st = gather_status(g->comm, rc);
    if (g->rank == 0 && st.rc == 0) {
        crash_point(g, 2);
        /* every copy of every array is durable: now it may count */
        ga_copy_rec r = {c, g->last_seq + 1, step};
        ga_copy_encode(&r, rec);
        int e = MPI_File_write_at(g->fcopy, (MPI_Offset)c * GA_COPY_RECORD, rec,
                                  GA_COPY_RECORD, MPI_BYTE, MPI_STATUS_IGNORE);
        if (e == MPI_SUCCESS)
            e = MPI_File_sync(g->fcopy);
        if (e != MPI_SUCCESS)
            st.rc = ga_mpi_fail(e, "write copynum record of", g->path);
    }
    rc = share_status(g->comm, st);
    g->ncheckpoints++;
    if (rc)
        return rc;
    g->last_copy = c;
    g->last_seq++;
    g->last_step = step;
    return c;
}

int ga_restart(ga_group *g, int64_t *step)
{
    if (!g || (g->kind != GA_RESTART && g->kind != GA_CHECKPOINT))
        return ga_fail(GA_ESTATE,
                       "ga_restart needs a restart or checkpoint group");
    if (!g->have_schema || g->last_copy < 0)
        return ga_fail(GA_ENOCKPT, "%s: no complete checkpoint", g->path);
    int rc = open_group(g);
    if (rc)
        return rc;
    int c = g->last_copy;
    rc = open_all(g, c);
    if (!rc)
        rc = agree(g->comm, io_all(g, c, IO_READ, 0, false));
    if (rc)
        return rc;
    if (step)
        *step = g->last_step;
    return c;
}
