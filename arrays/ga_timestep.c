/*
 * ga_timestep.c -- timestep groups: append every array as one timestep,
 * read timestep i back in the current memory layout, forget later ones.
 *
 * Timestep i of an array lies at i * (chunks * slot) in PATH.NAME (the
 * view of ga_types.c makes it offset i in the array's etype count); its
 * record "step I N" is appended to PATH.schema by rank 0 only after every
 * process's data is written, so a reader never sees a step half there.
 *
 * Threads: the caller's; see galley_array.h.
 */
#include "ga_internal.h"

#include <errno.h>
#include <stdlib.h>

int ga_timestep(ga_group *g, int64_t step)
{
    if (!g || g->kind != GA_TIMESTEP)
        return ga_fail(GA_ESTATE, "ga_timestep needs a timestep group");
    int rc = ga_group_setup(g);
    if (!rc)
        rc = ga_open_all(g, 0);
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
    int io = ga_io_all(g, 0, GA_IO_WRITE, idx, false);
    if (!rc)
        rc = io;
    /* the record follows everybody's data: a reader never sees a step
     * half there */
    ga_status st = ga_gather_status(g->comm, rc);
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
    rc = ga_share_status(g->comm, st);
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
    int rc = ga_group_setup(g);
    if (rc)
        return rc;
    if (index < 0 || index >= g->nsteps) /* the same on every process */
        return ga_fail(GA_ENOSTEP, "%s: no timestep %d (%d stored)", g->path,
                       index, g->nsteps);
    rc = ga_open_all(g, 0);
    if (!rc)
        rc = ga_agree(g->comm, ga_io_all(g, 0, GA_IO_READ, index, false));
    if (!rc && step)
        *step = g->steps[index];
    return rc;
}

int ga_timestep_rewind(ga_group *g, int64_t last_step)
{
    if (!g || g->kind != GA_TIMESTEP)
        return ga_fail(GA_ESTATE, "ga_timestep_rewind needs a timestep group");
    int rc = ga_group_setup(g);
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
    rc = ga_agree(g->comm, rc);
    if (rc)
        return rc;
    g->nsteps = keep;
    return keep;
}
