/*
 * Galley for MPI-IO: MPI_File_sync.  Durable: every server fsyncs the
 * file's fork and metadata before this returns.  Collective: every rank
 * syncs, then one agreement (ad_galley_coll.c) makes every rank return an
 * error when any rank's sync failed.
 */
#include "ad_galley.h"

void ADIOI_GALLEY_Flush(ADIO_File fd, int *error_code)
{
    static char myname[] = "ADIOI_GALLEY_FLUSH";
    ADIOI_GALLEY_fs *fs = fd->fs_ptr;
    int rc = gfs_striped_sync(fs->sid);
    *error_code = MPI_SUCCESS;
    if (rc)
        ADIOI_GALLEY_Coll_record(fs, ADIOI_GALLEY_Err(myname, __LINE__, rc), rc);
    ADIOI_GALLEY_Coll_agree(fd, myname, __LINE__, error_code);
}
