/*
 * Galley for MPI-IO: blocking writes (see ad_galley_io.c).
 */
#include "ad_galley.h"

void ADIOI_GALLEY_WriteContig(ADIO_File fd, const void *buf, int count,
                              MPI_Datatype datatype, int file_ptr_type,
                              ADIO_Offset offset, ADIO_Status * status, int *error_code)
{
    ADIOI_GALLEY_Access(fd, GFS_WRITE, (void *) buf, count, datatype, file_ptr_type, offset,
                        1, status, error_code);
}

void ADIOI_GALLEY_WriteStrided(ADIO_File fd, const void *buf, int count,
                               MPI_Datatype datatype, int file_ptr_type,
                               ADIO_Offset offset, ADIO_Status * status, int *error_code)
{
    ADIOI_GALLEY_Access(fd, GFS_WRITE, (void *) buf, count, datatype, file_ptr_type, offset,
                        0, status, error_code);
}
