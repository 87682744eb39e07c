/*
 * Galley for MPI-IO: close.  Forks are closed on their servers; a file
 * deleted meanwhile disappears at its last close (deferred delete).
 */
#include "ad_galley.h"

void ADIOI_GALLEY_Close(ADIO_File fd, int *error_code)
{
    static char myname[] = "ADIOI_GALLEY_CLOSE";
    ADIOI_GALLEY_fs *fs = fd->fs_ptr;
    int rc = 0;
    if (fs && fs->sid >= 0) {
        rc = gfs_striped_close(fs->sid);
        galley_mpi_closed();
    }
    ADIOI_Free(fs);
    fd->fs_ptr = NULL;
    /* a lost connection still closes the file locally */
    *error_code = rc && rc != GFS_ESERVERDOWN && rc != GFS_ETIMEDOUT
        ? ADIOI_GALLEY_Err(myname, __LINE__, rc) : MPI_SUCCESS;
}
