/*
 * Galley for MPI-IO: blocking reads.  Contiguous and strided accesses take
 * the same path (ad_galley_io.c); only the meaning of `offset` differs.
 */
#include "ad_galley.h"

void ADIOI_GALLEY_ReadContig(ADIO_File fd, void *buf, int count,
                             MPI_Datatype datatype, int file_ptr_type,
                             ADIO_Offset offset, ADIO_Status * status, int *error_code)
{
    ADIOI_GALLEY_Access(fd, GFS_READ, buf, count, datatype, file_ptr_type, offset, 1,
                        status, error_code);
}

void ADIOI_GALLEY_ReadStrided(ADIO_File fd, void *buf, int count,
                              MPI_Datatype datatype, int file_ptr_type,
                              ADIO_Offset offset, ADIO_Status * status, int *error_code)
{
    ADIOI_GALLEY_Access(fd, GFS_READ, buf, count, datatype, file_ptr_type, offset, 0,
                        status, error_code);
}
