/*
 * Galley for MPI-IO: MPI_File_set_size.  The driver says it resizes
 * scalably, so ROMIO calls this on every rank; the first aggregator
 * truncates or extends every subfile's fork and the outcome is agreed on
 * (ad_galley_coll.c): its error there, a collective failure naming it on
 * the other ranks.
 */
#include "ad_galley.h"

void ADIOI_GALLEY_Resize(ADIO_File fd, ADIO_Offset size, int *error_code)
{
    static char myname[] = "ADIOI_GALLEY_RESIZE";
    ADIOI_GALLEY_fs *fs = fd->fs_ptr;
    int rank;
    MPI_Comm_rank(fd->comm, &rank);
    *error_code = MPI_SUCCESS;
    if (rank == fd->hints->ranklist[0]) {
        int rc = gfs_striped_truncate(fs->sid, size);
        if (rc)
            ADIOI_GALLEY_Coll_record(fs, ADIOI_GALLEY_Err(myname, __LINE__, rc), rc);
    }
    ADIOI_GALLEY_Coll_agree(fd, myname, __LINE__, error_code);
}
