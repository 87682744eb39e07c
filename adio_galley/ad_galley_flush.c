/*
 * Galley for MPI-IO: MPI_File_sync.  Durable: every server fsyncs the
 * file's fork and metadata before this returns.
 */
#include "ad_galley.h"

void ADIOI_GALLEY_Flush(ADIO_File fd, int *error_code)
{
    static char myname[] = "ADIOI_GALLEY_FLUSH";
    ADIOI_GALLEY_fs *fs = fd->fs_ptr;
    int rc = gfs_striped_sync(fs->sid);
    *error_code = rc ? ADIOI_GALLEY_Err(myname, __LINE__, rc) : MPI_SUCCESS;
}
