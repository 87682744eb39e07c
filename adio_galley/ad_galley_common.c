/*
 * Galley for MPI-IO: error conversion, driver state, and the list-I/O call
 * every data path ends in -- the ROMIO side of the MPI-driver core
 * (galley_mpi_common.h: lifecycle, atomic list I/O, error classes, hints).
 *
 * Threads: whatever thread ROMIO calls from; libgalley is thread-safe.
 */
#include "ad_galley.h"
#include "adio_extern.h"

/* The class comes from galley_mpi_common.h, shared with the Open MPI
 * plug-ins. */
int ADIOI_GALLEY_Err(const char *myname, int line, int gfs_err)
{
    return MPIO_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, myname, line,
                                galley_mpi_error_class(gfs_err), "**io", "**io %s",
                                gfs_strerror(gfs_err));
}

ADIOI_GALLEY_fs *ADIOI_GALLEY_State(ADIO_File fd)
{
    if (!fd->fs_ptr) {
        ADIOI_GALLEY_fs *fs = ADIOI_Calloc(1, sizeof(*fs));
        if (!fs)
            return NULL;
        fs->sid = -1;
        fs->cb = ADIOI_GALLEY_CB_AUTO;
        ADIOI_Strncpy(fs->hint.fork, GFS_DEFAULT_STRIPE_FORK, sizeof(fs->hint.fork));
        fd->fs_ptr = fs;
    }
    return fd->fs_ptr;
}

int64_t ADIOI_GALLEY_Listio(ADIO_File fd, int op, int64_t nr, const gfs_range * r,
                            int64_t nm, const gfs_memseg * m)
{
    ADIOI_GALLEY_fs *fs = fd->fs_ptr;
    return galley_mpi_rangeio(fs->sid, fd->atomicity, op, nr, r, nm, m);
}
