/*
 * Galley for MPI-IO: file control.  The size is the logical size of the
 * striped file; preallocation extends it (Galley allocates on write, so
 * there is nothing to reserve beyond the size).
 */
#include "ad_galley.h"
#include "adio_extern.h"

void ADIOI_GALLEY_Fcntl(ADIO_File fd, int flag, ADIO_Fcntl_t * fcntl_struct, int *error_code)
{
    static char myname[] = "ADIOI_GALLEY_FCNTL";
    ADIOI_GALLEY_fs *fs = fd->fs_ptr;
    int64_t size;
    int rc = 0;

    switch (flag) {
        case ADIO_FCNTL_GET_FSIZE:
            size = gfs_striped_size(fs->sid);
            if (size < 0)
                rc = (int) size;
            else
                fcntl_struct->fsize = size;
            break;
        case ADIO_FCNTL_SET_DISKSPACE:
            size = gfs_striped_size(fs->sid);
            if (size < 0)
                rc = (int) size;
            else if (size < fcntl_struct->diskspace)
                rc = gfs_striped_truncate(fs->sid, fcntl_struct->diskspace);
            break;
        case ADIO_FCNTL_SET_ATOMICITY:
            fd->atomicity = fcntl_struct->atomicity ? 1 : 0;
            break;
        default:
            *error_code = MPIO_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE,
                                               myname, __LINE__, MPI_ERR_ARG,
                                               "**flag", "**flag %d", flag);
            return;
    }
    *error_code = rc ? ADIOI_GALLEY_Err(myname, __LINE__, rc) : MPI_SUCCESS;
}
