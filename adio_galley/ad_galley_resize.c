/*
 * Galley for MPI-IO: MPI_File_set_size.  The driver says it resizes
 * scalably, so ROMIO calls this on every rank; rank 0 truncates or extends
 * every subfile's fork and the outcome is broadcast.
 */
#include "ad_galley.h"

void ADIOI_GALLEY_Resize(ADIO_File fd, ADIO_Offset size, int *error_code)
{
    static char myname[] = "ADIOI_GALLEY_RESIZE";
    ADIOI_GALLEY_fs *fs = fd->fs_ptr;
    int rank, rc = 0;
    MPI_Comm_rank(fd->comm, &rank);
    if (rank == fd->hints->ranklist[0])
        rc = gfs_striped_truncate(fs->sid, size);
    MPI_Bcast(&rc, 1, MPI_INT, fd->hints->ranklist[0], fd->comm);
    *error_code = rc ? ADIOI_GALLEY_Err(myname, __LINE__, rc) : MPI_SUCCESS;
}
