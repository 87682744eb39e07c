/*
 * Galley for MPI-IO: ROMIO's byte-range locks (ADIOI_WRITE_LOCK and
 * friends) on the lock service of the file's first server, so atomic mode
 * and anything else in ROMIO that locks works across processes and nodes.
 */
#include "ad_galley.h"

#include <fcntl.h>
#include <unistd.h>

int ADIOI_GALLEY_SetLock(ADIO_File fd, int cmd, int type, ADIO_Offset offset,
                         int whence, ADIO_Offset len)
{
    static char myname[] = "ADIOI_GALLEY_SETLOCK";
    ADIOI_GALLEY_fs *fs = fd->fs_ptr;
    int rc;
    if (whence != SEEK_SET)
        return MPIO_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, myname, __LINE__,
                                    MPI_ERR_ARG, "**io", "**io %s", "lock whence");
    if (type == F_UNLCK)
        rc = gfs_striped_unlock(fs->sid, offset, len);
    else
        rc = gfs_striped_lock(fs->sid, offset, len, type == F_WRLCK);
    return rc ? ADIOI_GALLEY_Err(myname, __LINE__, rc) : MPI_SUCCESS;
}
