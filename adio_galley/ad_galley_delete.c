/*
 * Galley for MPI-IO: MPI_File_delete.  A file still open somewhere loses
 * its name at once and its data at the last close.
 */
#include "ad_galley.h"

#include <string.h>

void ADIOI_GALLEY_Delete(const char *filename, int *error_code)
{
    static char myname[] = "ADIOI_GALLEY_DELETE";
    /* MPI_File_delete passes the name with its "galley:" prefix */
    if (!strncmp(filename, "galley:", 7))
        filename += 7;
    int rc = galley_mpi_init();
    if (!rc)
        rc = gfs_delete_file(filename);
    *error_code = rc ? ADIOI_GALLEY_Err(myname, __LINE__, rc) : MPI_SUCCESS;
}
