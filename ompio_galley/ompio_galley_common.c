/*
 * Galley for Open MPI: names, error conversion and agreement, and the
 * translation of OMPIO's io array into one striped list request -- the
 * OMPIO side of the MPI-driver core (galley_mpi_common.h: lifecycle,
 * atomic list I/O, error classes, hints).
 *
 * Threads: the caller's.
 */
#include "ompio_galley.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

bool ompio_galley_is_galley_name(const char *name)
{
    return name &&
           !strncmp(name, OMPIO_GALLEY_PREFIX, strlen(OMPIO_GALLEY_PREFIX));
}

const char *ompio_galley_name(const char *name)
{
    return ompio_galley_is_galley_name(name)
               ? name + strlen(OMPIO_GALLEY_PREFIX)
               : name;
}

int ompio_galley_err(int err)
{
    return err == 0 ? MPI_SUCCESS : galley_mpi_error_class(err);
}

void ompio_galley_lost(ompio_galley_file *gf, int err)
{
    if (!gf || err >= 0)
        return;
    if (!gf->lost)
        gf->lost = err;
    gf->nlost++;
}

int ompio_galley_agree(ompio_file_t *fh, int rc)
{
    ompi_communicator_t *comm = fh->f_comm;
    int failed = rc != MPI_SUCCESS, any = failed;
    if (comm == MPI_COMM_NULL)
        return rc;
    int r =
        comm->c_coll->coll_allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, comm,
                                     comm->c_coll->coll_allreduce_module);
    if (failed)
        return rc;
    return r != OMPI_SUCCESS ? r : any ? MPI_ERR_IO : MPI_SUCCESS;
}

ompio_galley_file *ompio_galley_file_of(ompio_file_t *fh)
{
    ompio_galley_file *gf = fh ? fh->f_fs_ptr : NULL;
    return gf && gf->sid >= 0 ? gf : NULL;
}

int ompio_galley_ranges(ompio_file_t *fh, gfs_range **r, gfs_memseg **m)
{
    int n = fh->f_num_of_io_entries;
    mca_common_ompio_io_array_t *a = fh->f_io_array;
    size_t k = n > 0 ? (size_t)n : 1;
    void *all = malloc((sizeof(gfs_range) + sizeof(gfs_memseg)) * k);
    if (!all)
        return -ENOMEM;
    *r = all;
    *m = (gfs_memseg *)(*r + k);
    for (int i = 0; i < n; i++) {
        (*r)[i] =
            (gfs_range){(int64_t)(intptr_t)a[i].offset, (int64_t)a[i].length};
        (*m)[i] = (gfs_memseg){a[i].memory_address, (int64_t)a[i].length};
    }
    return 0;
}
