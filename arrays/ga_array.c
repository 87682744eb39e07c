/*
 * ga_array.c -- distributed arrays: shape, memory and disk layouts, the
 * local block, and the export of a whole array to one file.
 *
 * Groups (TimeStep, CheckPoint, Restart) are in ga_group.c,
 * ga_timestep.c and ga_checkpoint.c; agreeing on one outcome across the
 * processes in ga_comm.c.
 *
 * Threads: the caller's; see galley_array.h.
 */
#include "ga_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    rc = ga_agree(comm, rc); /* before the collective dup */
    if (!rc && MPI_Comm_dup(comm, &a->comm) != MPI_SUCCESS)
        rc = ga_agree(comm, ga_fail(GA_EMPI, "MPI_Comm_dup failed"));
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
    rc = ga_agree(a->comm, rc);
    if (rc)
        return rc;
    int m = MPI_File_open(a->comm, path, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                          info, &fh);
    if (m != MPI_SUCCESS) {
        rc = ga_agree(a->comm, ga_mpi_fail(m, "open", path));
        ga_types_free(&ft, &mt);
        return rc;
    }
    if ((m = MPI_File_set_size(fh, 0)) != MPI_SUCCESS)
        rc = ga_mpi_fail(m, "truncate", path);
    if (!rc && (m = MPI_File_set_view(fh, 0, MPI_BYTE, ft, "native",
                                      MPI_INFO_NULL)) != MPI_SUCCESS)
        rc = ga_mpi_fail(m, "set view of", path);
    /* collective only when everyone holds data (see build_types in ga_group.c)
     */
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
    return ga_agree(a->comm, rc);
}
