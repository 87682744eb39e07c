/*
 * Galley for MPI-IO: the collective error record.  A collective call
 * fails on every rank when any rank's part failed (ad_galley_coll.c says
 * how each path gets there); this is the record those parts keep and the
 * agreement that ends the call: the data paths (ad_galley_io.c), the
 * collective paths (ad_galley_coll.c), flush and resize record into it,
 * and every collective call ends in ADIOI_GALLEY_Coll_agree or
 * ADIOI_GALLEY_Coll_finish.  It calls nothing of the driver's own.
 *
 * Threads: the calling thread; the agreement is collective over fd->comm.
 */
#include "ad_galley.h"
#include "adio_extern.h"

#include <limits.h>
#include <stdio.h>

int64_t ADIOI_GALLEY_Coll_fail_key(const ADIOI_GALLEY_fs * fs, int rank)
{
    if (fs->coll_err == MPI_SUCCESS)
        return 0;
    int64_t cause = fs->coll_gfs < 0 ? 1 - (int64_t) fs->coll_gfs : 1;
    return (int64_t) ((uint64_t) cause << 32 | (uint32_t) (INT_MAX - rank));
}

/* The error of a rank whose own part went well when key (!= 0) failed. */
static int fail_error(const char *myname, int line, int64_t key)
{
    int rank = INT_MAX - (int) (uint32_t) (key & 0xffffffff);
    int gfs = (int) (1 - (key >> 32));
    char msg[256];
    if (gfs < 0)
        snprintf(msg, sizeof(msg), "collective I/O call failed on rank %d: %s", rank,
                 gfs_strerror(gfs));
    else
        snprintf(msg, sizeof(msg), "collective I/O call failed on rank %d", rank);
    return MPIO_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, myname, line, MPI_ERR_IO,
                                "**io", "**io %s", msg);
}

void ADIOI_GALLEY_Coll_finish(ADIO_File fd, const char *myname, int line, int64_t key,
                              int *error_code)
{
    ADIOI_GALLEY_fs *fs = fd->fs_ptr;
    if (fs->coll_err != MPI_SUCCESS)
        *error_code = fs->coll_err;
    else if (key)
        *error_code = fail_error(myname, line, key);
    fs->coll_active = 0;
    fs->coll_err = MPI_SUCCESS;
    fs->coll_gfs = 0;
}

void ADIOI_GALLEY_Coll_record(ADIOI_GALLEY_fs * fs, int error_code, int gfs_err)
{
    if (fs->coll_err != MPI_SUCCESS || error_code == MPI_SUCCESS)
        return;
    fs->coll_err = error_code;
    fs->coll_gfs = gfs_err < 0 ? gfs_err : 0;
}

void ADIOI_GALLEY_Coll_failed(ADIO_File fd, int error_code)
{
    ADIOI_GALLEY_fs *fs = fd->fs_ptr;
    ADIOI_GALLEY_Coll_record(fs, error_code, fs->shfp_gfs);
}

void ADIOI_GALLEY_Coll_agree(ADIO_File fd, const char *myname, int line, int *error_code)
{
    int rank;
    MPI_Comm_rank(fd->comm, &rank);
    int64_t mine = ADIOI_GALLEY_Coll_fail_key(fd->fs_ptr, rank), key;
    MPI_Allreduce(&mine, &key, 1, MPI_INT64_T, MPI_MAX, fd->comm);
    ADIOI_GALLEY_Coll_finish(fd, myname, line, key, error_code);
}
