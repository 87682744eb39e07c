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
        *error_code = ADIOI_GALLEY_Err(myname, __LINE__, (int) old);
        return;
    }
    *shared_fp = old;
    *error_code = MPI_SUCCESS;
}

/* Setting is read-then-adjust under a lock on a byte far beyond any data
 * (every rank may set it at once, e.g. in MPI_File_set_view). */
#define SHARED_FP_LOCK ((int64_t) 1 << 61)

void ADIOI_GALLEY_Set_shared_fp(ADIO_File fd, ADIO_Offset offset, int *error_code)
{
    static char myname[] = "ADIOI_GALLEY_SET_SHARED_FP";
    ADIOI_GALLEY_fs *fs = fd->fs_ptr;
    int64_t old = gfs_striped_lock(fs->sid, SHARED_FP_LOCK, 1, 1);
    if (old == 0) {
        old = gfs_striped_fetch_add(fs->sid, SHARED_FP_KEY, 0);
        if (old >= 0 && old != offset)
            old = gfs_striped_fetch_add(fs->sid, SHARED_FP_KEY, offset - old);
        gfs_striped_unlock(fs->sid, SHARED_FP_LOCK, 1);
    }
    *error_code = old < 0 ? ADIOI_GALLEY_Err(myname, __LINE__, (int) old) : MPI_SUCCESS;
}
