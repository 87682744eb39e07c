/*
 * Galley for MPI-IO: shared file pointers as one atomic fetch-and-add on
 * the file's first server (no hidden file, no locks).  The counter counts
 * etypes of the current view, as ROMIO expects.
 */
#include "ad_galley.h"

#define SHARED_FP_KEY "mpi.shared_fp"

void ADIOI_GALLEY_Get_shared_fp(ADIO_File fd, ADIO_Offset incr,
                                ADIO_Offset * shared_fp, int *error_code)
{
    static char myname[] = "ADIOI_GALLEY_GET_SHARED_FP";
    ADIOI_GALLEY_fs *fs = fd->fs_ptr;
    int64_t old = gfs_striped_fetch_add(fs->sid, SHARED_FP_KEY, incr);
    if (old < 0) {
        /* kept for an ordered call that goes on (ADIOI_GALLEY_Coll_failed) */
        fs->shfp_gfs = (int) old;
        *error_code = ADIOI_GALLEY_Err(myname, __LINE__, (int) old);
        return;
    }
    *shared_fp = old;
    *error_code = MPI_SUCCESS;
}

/* Setting is one atomic FETCH_SET (every rank may set it at once, e.g. in
 * MPI_File_set_view). */
void ADIOI_GALLEY_Set_shared_fp(ADIO_File fd, ADIO_Offset offset, int *error_code)
{
    static char myname[] = "ADIOI_GALLEY_SET_SHARED_FP";
    ADIOI_GALLEY_fs *fs = fd->fs_ptr;
    int64_t old = gfs_striped_fetch_set(fs->sid, SHARED_FP_KEY, offset);
    *error_code = old < 0 ? ADIOI_GALLEY_Err(myname, __LINE__, (int) old) : MPI_SUCCESS;
}
