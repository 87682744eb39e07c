/*
 * ga_group.c -- array groups: creation (reading what is stored for an
 * append or a restart), membership, the first-use setup of datatypes and
 * record files, and the data-file I/O that ga_timestep.c and
 * ga_checkpoint.c build on.
 *
 * Files of a group at PATH (see galley_array.h): PATH.schema and
 * PATH.copynum are small and touched by rank 0 alone (opened on
 * MPI_COMM_SELF, hints from ga_record_info); the data files PATH.NAME
 * (timesteps) and PATH.NAME.C (checkpoint copy C) are opened collectively
 * (hints from ga_data_info), with the view of ga_types.c, and moved with
 * MPI_File_write_at_all / read_at_all.  Every public call returns the same
 * code on every process (ga_agree, ga_comm.c).
 *
 * Threads: the caller's; see galley_array.h.
 */
#include "ga_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- creation --- */

/* Read the stored schema (and copynum) on rank 0 and share it. */
static int load_stored(ga_group *g)
{
    char *text = NULL, *cbuf = NULL;
    size_t len = 0, clen = 0;
    bool missing = false, cmissing = true;
    int rc = 0;
    char *spath = ga_join(g->path, ".schema", NULL);
    char *cpath = ga_join(g->path, ".copynum", NULL);
    if (!spath || !cpath)
        rc = ga_fail(-ENOMEM, "out of memory");
    if (g->rank == 0 && !rc) {
        rc = ga_read_small(spath, &text, &len, &missing);
        if (!rc && !missing && g->kind != GA_TIMESTEP)
            rc = ga_read_small(cpath, &cbuf, &clen, &cmissing);
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
        rc = ga_bcast_buf(g->comm, g->rank, &text, &len, 0);
        if (!rc && g->kind != GA_TIMESTEP) {
            if (cmissing)
                clen = 0;
            rc = ga_bcast_buf(g->comm, g->rank, &cbuf, &clen, 0);
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
        return ga_agree(comm, ga_fail(-ENOMEM, "out of memory"));
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
    rc = ga_agree(comm, rc); /* before the collective dup */
    if (!rc && MPI_Comm_dup(comm, &g->comm) != MPI_SUCCESS)
        rc = ga_agree(comm, ga_fail(GA_EMPI, "MPI_Comm_dup failed"));
    if (!rc) {
        ga_crash_init(g);
        if (kind == GA_RESTART || (flags & GA_APPEND))
            rc = ga_agree(comm, load_stored(g));
    }
    if (rc) {
        ga_group_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

/* ----------------------------------------------------- membership --- */

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
    ga_member m;
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
    ga_member *t = realloc(g->mem, sizeof(*t) * (size_t)(g->nmem + 1));
    if (!t)
        return ga_fail(-ENOMEM, "out of memory");
    g->mem = t;
    g->mem[g->nmem++] = m;
    a->groups++;
    return 0;
}

/* ------------------------------------------------------ data files --- */

int ga_open_data(ga_group *g, ga_member *m, int c)
{
    if (m->fh[c] != MPI_FILE_NULL)
        return 0;
    char *name = ga_data_name(g, m, c);
    if (!name)
        return ga_fail(-ENOMEM, "out of memory"); /* fatal: MPI aborts */
    int amode = g->kind == GA_RESTART ? MPI_MODE_RDONLY
                                      : MPI_MODE_RDWR | MPI_MODE_CREATE;
    MPI_Info info = ga_data_info(g, m, c);
    int rc = 0;
    int e = MPI_File_open(g->comm, name, amode, info, &m->fh[c]);
    if (e != MPI_SUCCESS) {
        m->fh[c] = MPI_FILE_NULL;
        rc = ga_mpi_fail(e, "open", name);
    }
    rc = ga_agree(g->comm, rc);
    if (!rc) {
        e = MPI_File_set_view(m->fh[c], 0, MPI_BYTE, m->ftype, "native",
                              MPI_INFO_NULL);
        if (e != MPI_SUCCESS)
            rc = ga_mpi_fail(e, "set view of", name);
        rc = ga_agree(g->comm, rc);
    }
    MPI_Info_free(&info);
    free(name);
    return rc;
}

int ga_open_all(ga_group *g, int c)
{
    int rc = 0;
    for (int i = 0; i < g->nmem && !rc; i++)
        rc = ga_open_data(g, &g->mem[i], c);
    return rc;
}

int ga_io_all(ga_group *g, int c, int op, int64_t index, bool crash_hook)
{
    int rc = 0;
    for (int i = 0; i < g->nmem; i++) {
        ga_member *m = &g->mem[i];
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
        /* once this process failed, it still takes part in the collective
         * calls of the other members, with nothing to move: the call is
         * lost anyway, and a server that is gone or stopped is not waited
         * for again */
        int n = rc ? 0 : 1;
        if (m->coll && op == GA_IO_WRITE)
            e = MPI_File_write_at_all(m->fh[c], off, base, n, m->mtype,
                                      MPI_STATUS_IGNORE);
        else if (m->coll)
            e = MPI_File_read_at_all(m->fh[c], off, base, n, m->mtype,
                                     MPI_STATUS_IGNORE);
        else if (m->bytes && n && op == GA_IO_WRITE)
            e = MPI_File_write_at(m->fh[c], off, base, 1, m->mtype,
                                  MPI_STATUS_IGNORE);
        else if (m->bytes && n)
            e = MPI_File_read_at(m->fh[c], off, base, 1, m->mtype,
                                 MPI_STATUS_IGNORE);
        if (e != MPI_SUCCESS && !rc)
            rc = ga_mpi_fail(e, op == GA_IO_WRITE ? "write to" : "read from",
                             g->path);
        free(scratch);
        if (crash_hook && i == 0)
            ga_crash_point(g, GA_CRASH_DATA);
    }
    return rc;
}

/* ---------------------------------------------------- first use --- */

/* Every member's datatypes, and collective or independent I/O; then the
 * check that an appended group holds the stored set of arrays.  Every
 * process returns the same code. */
static int build_types(ga_group *g)
{
    int rc = 0;
    for (int i = 0; i < g->nmem && !rc; i++) {
        ga_member *m = &g->mem[i];
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
    return ga_agree(g->comm, rc);
}

/* Rank 0: delete a file if it exists. */
static void delete_quietly(const char *path)
{
    MPI_File_delete((char *)path, MPI_INFO_NULL);
}

/* Rank 0, a fresh group: old files go first. */
static void delete_old_files(const ga_group *g, const char *spath,
                             const char *cpath)
{
    delete_quietly(spath);
    delete_quietly(cpath);
    for (int i = 0; i < g->nmem; i++)
        for (int c = 0; c < (g->kind == GA_TIMESTEP ? 1 : 2); c++) {
            char *n = ga_data_name(g, &g->mem[i], c);
            if (n)
                delete_quietly(n);
            free(n);
        }
}

/* Rank 0, a fresh group: the schema header into the open schema file. */
static int write_schema(ga_group *g, const char *spath)
{
    int rc = 0, e;
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
        const ga_member *m = &g->mem[i];
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
    if (!rc && (e = MPI_File_write_at(g->fschema, 0, text, (int)len, MPI_BYTE,
                                      MPI_STATUS_IGNORE)) != MPI_SUCCESS)
        rc = ga_mpi_fail(e, "write", spath);
    g->schema_end = (int64_t)len;
    free(text);
    free(s.arrays);
    return rc;
}

/* Rank 0, an appended group: continue after the last complete record
 * (drop a torn one). */
static int resume_schema(ga_group *g, const char *spath)
{
    g->schema_end = (int64_t)g->schema.header_len;
    char line[64];
    for (int i = 0; i < g->nsteps; i++)
        g->schema_end +=
            ga_schema_step_line(i, g->steps[i], line, sizeof(line));
    int e = MPI_File_set_size(g->fschema, g->schema_end);
    if (e != MPI_SUCCESS)
        return ga_mpi_fail(e, "truncate", spath);
    return 0;
}

/* Rank 0 of a timestep or checkpoint group: open the record files (the
 * schema written or resumed, the copynum file of a checkpoint group). */
static int open_records(ga_group *g, const char *spath, const char *cpath)
{
    int rc = 0;
    if (!g->have_schema)
        delete_old_files(g, spath, cpath);
    MPI_Info sinfo = ga_record_info(g, "schema");
    int e = MPI_File_open(MPI_COMM_SELF, spath, MPI_MODE_RDWR | MPI_MODE_CREATE,
                          sinfo, &g->fschema);
    MPI_Info_free(&sinfo);
    if (e != MPI_SUCCESS) {
        g->fschema = MPI_FILE_NULL;
        rc = ga_mpi_fail(e, "open", spath);
    }
    if (!rc)
        rc = g->have_schema ? resume_schema(g, spath) : write_schema(g, spath);
    if (!rc && g->kind == GA_CHECKPOINT) {
        MPI_Info cinfo = ga_record_info(g, "copynum");
        e = MPI_File_open(MPI_COMM_SELF, cpath, MPI_MODE_RDWR | MPI_MODE_CREATE,
                          cinfo, &g->fcopy);
        MPI_Info_free(&cinfo);
        if (e != MPI_SUCCESS) {
            g->fcopy = MPI_FILE_NULL;
            rc = ga_mpi_fail(e, "open", cpath);
        }
    }
    return rc;
}

int ga_group_setup(ga_group *g)
{
    if (g->opened)
        return 0;
    if (g->nmem == 0)
        return ga_agree(g->comm,
                        ga_fail(GA_ESTATE, "%s: group has no arrays", g->path));
    int rc = build_types(g);
    if (rc)
        return rc;
    char *spath = ga_join(g->path, ".schema", NULL);
    char *cpath = ga_join(g->path, ".copynum", NULL);
    if (!spath || !cpath)
        rc = ga_fail(-ENOMEM, "out of memory");
    if (g->kind != GA_RESTART && g->rank == 0 && !rc)
        rc = open_records(g, spath, cpath);
    free(spath);
    free(cpath);
    rc = ga_agree(g->comm, rc);
    if (!rc)
        g->opened = true;
    return rc;
}

/* ---------------------------------------------------------- closing --- */

int ga_group_prepare(ga_group *g)
{
    if (!g)
        return ga_fail(-EINVAL, "NULL group");
    int rc = ga_group_setup(g);
    if (rc || g->kind == GA_RESTART)
        return rc;
    for (int i = 0; i < g->nmem && !rc; i++)
        for (int c = 0; c < (g->kind == GA_TIMESTEP ? 1 : 2) && !rc; c++)
            rc = ga_open_data(g, &g->mem[i], c);
    return rc;
}

int ga_group_free(ga_group *g)
{
    if (!g)
        return 0;
    int rc = 0;
    for (int i = 0; i < g->nmem; i++) {
        ga_member *m = &g->mem[i];
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
        rc = ga_agree(g->comm, rc);
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
