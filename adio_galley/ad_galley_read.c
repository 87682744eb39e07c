/*
 * Galley for MPI-IO: blocking reads.  Contiguous and strided accesses take
 * the same path (ad_galley_io.c); only the meaning of `offset` differs,
 * except for one choice: independent strided reads of small pieces.
 */
#include "ad_galley.h"
#include "adio_extern.h"

void ADIOI_GALLEY_ReadContig(ADIO_File fd, void *buf, int count,
                             MPI_Datatype datatype, int file_ptr_type,
                             ADIO_Offset offset, ADIO_Status * status, int *error_code)
{
    ADIOI_GALLEY_Access(fd, GFS_READ, buf, count, datatype, file_ptr_type, offset, 1,
                        status, error_code);
}

/*
 * Whether an independent read through a noncontiguous file view is read
 * by ROMIO's data sieving (ADIOI_GEN_ReadStrided: ind_rd_buffer_size
 * windows of the file read by our contiguous reads, the pieces copied out
 * in one walk of the view) rather than as one list of pieces.
 *
 * A list carries each piece through the driver's ranges, libgalley's
 * placement and the sieved read's copy; below about a kilobyte per piece
 * those passes cost more than the window's extra bytes.  Measured with
 * mpiio_bench (4 ranks, 4 servers, records interleaved by rank,
 * galley/ufs): reads of 16 B records 0.69x listed,
 * 0.97-1.06x sieved; 200 B 0.77-0.81x / 0.96-1.05x; 1 KB 0.73-0.78x /
 * 0.83-0.87x; 2 KB 1.19-1.20x / 0.81-0.84x; 4 KB 1.76-2.00x / 0.76-0.77x.
 *
 * A call of few pieces lists, however small they are: the window's
 * setup costs more than the passes over a few pieces.  Measured (one
 * process, 16 B pieces every 64 B, per call, listed / sieved): 1 piece
 * 1.31 / 1.48 us, 4: 1.41 / 1.74, 16: 1.94 / 2.62, 64: 4.63 / 4.68,
 * 256: 15.3 / 12.2, 1024: 47.7 / 44.7 (ufs: 0.44, 1.05, 1.92, 3.68,
 * 11.1, 44.6).
 *
 * ROMIO's romio_ds_read hint decides first: "disable" always lists,
 * "enable" always sieves, "automatic" (the default) sieves when the
 * view's mean piece is at most ADIOI_GALLEY_SIEVE_PIECE bytes and the
 * call names at least ADIOI_GALLEY_SIEVE_CALL of them.  Atomic
 * mode lists (its range lock is ours, ADIOI_GALLEY_Listio), and so do the
 * reads of a collective call (their errors are agreed: ad_galley_coll.c).
 */
#define ADIOI_GALLEY_SIEVE_PIECE 1024
#define ADIOI_GALLEY_SIEVE_CALL 64

static int sieved(ADIO_File fd, int count, MPI_Datatype datatype)
{
    ADIOI_GALLEY_fs *fs = fd->fs_ptr;
    int filetype_contig;
    if (fd->atomicity || fs->coll_active || fd->hints->ds_read == ADIOI_HINT_DISABLE)
        return 0;
    ADIOI_Datatype_iscontig(fd->filetype, &filetype_contig);
    if (filetype_contig)
        return 0;       /* noncontiguous memory only: one range, listed */
    if (fd->hints->ds_read == ADIOI_HINT_ENABLE)
        return 1;
    MPI_Count size, bufsize;
    MPI_Type_size_x(fd->filetype, &size);
    MPI_Type_size_x(datatype, &bufsize);
    /* the view's pieces: its non-empty blocks (ROMIO's flattening keeps
     * empty ones, e.g. for a resized type's bounds) */
    ADIOI_Flatlist_node *flat = ADIOI_Flatten_and_find(fd->filetype);
    MPI_Count blocks = 0;
    for (MPI_Count b = 0; b < flat->count; b++)
        blocks += flat->blocklens[b] > 0;
    if (blocks == 0)
        return 0;
    MPI_Count mean = size / blocks;     /* >= 1: every block counted has a byte */
    return mean <= ADIOI_GALLEY_SIEVE_PIECE && bufsize * count >= ADIOI_GALLEY_SIEVE_CALL * mean;
}

void ADIOI_GALLEY_ReadStrided(ADIO_File fd, void *buf, int count,
                              MPI_Datatype datatype, int file_ptr_type,
                              ADIO_Offset offset, ADIO_Status * status, int *error_code)
{
    if (sieved(fd, count, datatype)) {
        ADIOI_GEN_ReadStrided(fd, buf, count, datatype, file_ptr_type, offset, status,
                              error_code);
        return;
    }
    ADIOI_GALLEY_Access(fd, GFS_READ, buf, count, datatype, file_ptr_type, offset, 0,
                        status, error_code);
}
