/*
 * Galley for MPI-IO: ROMIO ADIO driver for the "galley:" file-name prefix.
 *
 * An MPI file galley:/name is a Galley striped file: its bytes are striped
 * over one fork of every subfile (galley.h, "Striped linear files").  The
 * driver calls only the public client API (galley.h); every data access
 * becomes one list request (ADIOI_GALLEY_Build_list) which libgalley
 * splits per server, sorts, merges and sends as one transfer per server.
 *
 * This directory is copied by mpich/build-mpich.sh into
 * src/mpi/romio/adio/ad_galley/ of the MPICH build tree.  Every .c file is
 * listed in Makefile.mk.
 *
 * Threads: ROMIO serialises calls on one file (ROMIO_THREAD_CS); libgalley
 * is thread-safe, its non-blocking workers run in their own threads.
 */
#ifndef AD_GALLEY_H_INCLUDED
#define AD_GALLEY_H_INCLUDED

#include "adio.h"
#include "galley.h"
#include "galley_mpi_common.h"

/* Collective algorithms (hint galley_cb). */
enum { ADIOI_GALLEY_CB_AUTO = 0, ADIOI_GALLEY_CB_SERVER = 1, ADIOI_GALLEY_CB_TWO_PHASE = 2 };

/* Per-file driver state, hung off fd->fs_ptr: created by SetInfo (the
 * driver's hints arrive before the open) and freed by Close. */
typedef struct ADIOI_GALLEY_fs_s {
    int sid;            /* libgalley striped-file id, -1 when not open */
    gfs_layout layout;  /* subfiles, stripe unit, fork */
    /* driver hints: the layout of a new file (galley_servers, galley_fork,
     * galley_layout, galley_checksum, galley_replicas; striping_factor and
     * striping_unit are ROMIO's own, in fd->hints), then the collective's */
    galley_mpi_hints hint;
    int cb;             /* galley_cb: ADIOI_GALLEY_CB_* */
    int cb_nodes;       /* cb_nodes as the user gave it, 0 = not given */
    int local;          /* the open file has the locality layout */
    /* this rank's part of the collective call under way (ad_galley_coll.c) */
    int coll_active;    /* Read/WriteStridedColl is running */
    int coll_err;       /* its first MPI error code, MPI_SUCCESS if none */
    int coll_gfs;       /* the gfs error behind it, 0 if it has none */
    int shfp_gfs;       /* gfs error of the last failed shared-pointer update */
} ADIOI_GALLEY_fs;

/* An access as the library's gfs_striped_rangeio takes it (galley.h):
 * two independent lists, file ranges (logical offsets) and memory
 * segments (addresses, so types with negative displacements need no
 * rebasing), built once by ADIOI_GALLEY_Build_list and handed on as
 * they are. */
typedef struct ADIOI_GALLEY_Pieces {
    gfs_range *r;               /* file ranges, in access order */
    int64_t nr, rcap;
    gfs_memseg *m;              /* memory segments, in access order */
    int64_t nm, mcap;
    /* room for the first of each, so a contiguous call allocates nothing
     * (r and m point here until they grow; never copy the struct) */
    gfs_range r1;
    gfs_memseg m1;
} ADIOI_GALLEY_Pieces;
void ADIOI_GALLEY_Pieces_free(ADIOI_GALLEY_Pieces * pc);

/* ad_galley_common.c (the client's lifecycle, list I/O under atomic mode's
 * lock and the hint reader are the MPI-driver core's, galley_mpi_common.h,
 * shared with the Open MPI plug-ins) */
int ADIOI_GALLEY_Err(const char *myname, int line, int gfs_err);
/* fd->fs_ptr, created with defaults on first use (NULL if out of memory). */
ADIOI_GALLEY_fs *ADIOI_GALLEY_State(ADIO_File fd);
/* Run file ranges r and memory segments m through gfs_striped_rangeio;
 * atomic mode takes a range lock around it.  Returns bytes or a negative
 * gfs error. */
int64_t ADIOI_GALLEY_Listio(ADIO_File fd, int op, int64_t nr, const gfs_range * r,
                            int64_t nm, const gfs_memseg * m);

/* ad_galley_io.c: the one place that turns an MPI access (memory type x
 * file view) into its two lists (*pc; free with ADIOI_GALLEY_Pieces_free,
 * also after an error).  *end is the file offset just past the last byte
 * (for the individual pointer). */
int ADIOI_GALLEY_Build_list(ADIO_File fd, const void *buf, int count,
                            MPI_Datatype datatype, int file_ptr_type,
                            ADIO_Offset offset, int contig_call,
                            ADIOI_GALLEY_Pieces * pc, int64_t * total, ADIO_Offset * end);
/* Run an access already turned into pieces (by Build_list), then move the
 * individual pointer and set the status as Access does.  Returns 0 or the
 * gfs error *error_code was made from. */
int ADIOI_GALLEY_Access_list(ADIO_File fd, int op, const ADIOI_GALLEY_Pieces * pc,
                             int64_t total, ADIO_Offset end,
                             MPI_Datatype datatype, int file_ptr_type,
                             ADIO_Status * status, int *error_code);
/* The blocking Read/Write Contig/Strided operations.  Inside a collective
 * call (fs->coll_active) an error is kept for the call's agreement
 * (ADIOI_GALLEY_Coll_record) and MPI_SUCCESS returned, so that ROMIO's
 * generic collective code goes on through every exchange the other ranks
 * enter; once this rank's part has failed the rest of it is skipped. */
void ADIOI_GALLEY_Access(ADIO_File fd, int op, void *buf, int count,
                         MPI_Datatype datatype, int file_ptr_type,
                         ADIO_Offset offset, int contig_call,
                         ADIO_Status * status, int *error_code);

/* ad_galley_collerr.c: the collective error record, below both the data
 * paths (ad_galley_io.c) and the collective ones (ad_galley_coll.c).
 * Record this rank's failure in the collective call under way (the first
 * one is kept). */
void ADIOI_GALLEY_Coll_record(ADIOI_GALLEY_fs * fs, int error_code, int gfs_err);
/* This rank's part of the next collective data call failed before the call
 * (ROMIO's ordered calls, when the shared file pointer could not be
 * updated, see mpich/romio-galley.patch): the rank takes part with nothing
 * to move and every rank returns an error. */
void ADIOI_GALLEY_Coll_failed(ADIO_File fd, int error_code);
/* One MPI_Allreduce over fd->comm: every rank learns whether any rank's
 * part (fs->coll_err) failed.  *error_code becomes this rank's own error if
 * it failed, else MPI_ERR_IO naming the collective failure (the rank and
 * its cause) if another rank failed, else stays as it is.  Clears the
 * call's state. */
void ADIOI_GALLEY_Coll_agree(ADIO_File fd, const char *myname, int line, int *error_code);
/* This rank's failure as one int64 that MPI_MAX reduces to the failure
 * every rank reports: 0 if none; else its cause in the high half (a gfs
 * error beats an error without one) over its rank (the lowest wins). */
int64_t ADIOI_GALLEY_Coll_fail_key(const ADIOI_GALLEY_fs * fs, int rank);
/* End the call once every rank knows key (the MPI_MAX of the ranks'
 * ADIOI_GALLEY_Coll_fail_key), as ADIOI_GALLEY_Coll_agree does after its
 * allreduce. */
void ADIOI_GALLEY_Coll_finish(ADIO_File fd, const char *myname, int line, int64_t key,
                              int *error_code);

/* one file per ADIO operation */
void ADIOI_GALLEY_Open(ADIO_File fd, int *error_code);
void ADIOI_GALLEY_OpenColl(ADIO_File fd, int rank, int access_mode, int *error_code);
void ADIOI_GALLEY_Close(ADIO_File fd, int *error_code);
void ADIOI_GALLEY_ReadContig(ADIO_File fd, void *buf, int count,
                             MPI_Datatype datatype, int file_ptr_type,
                             ADIO_Offset offset, ADIO_Status * status, int *error_code);
void ADIOI_GALLEY_ReadStrided(ADIO_File fd, void *buf, int count,
                              MPI_Datatype datatype, int file_ptr_type,
                              ADIO_Offset offset, ADIO_Status * status, int *error_code);
void ADIOI_GALLEY_WriteContig(ADIO_File fd, const void *buf, int count,
                              MPI_Datatype datatype, int file_ptr_type,
                              ADIO_Offset offset, ADIO_Status * status, int *error_code);
void ADIOI_GALLEY_WriteStrided(ADIO_File fd, const void *buf, int count,
                               MPI_Datatype datatype, int file_ptr_type,
                               ADIO_Offset offset, ADIO_Status * status, int *error_code);
void ADIOI_GALLEY_ReadStridedColl(ADIO_File fd, void *buf, int count,
                                  MPI_Datatype datatype, int file_ptr_type,
                                  ADIO_Offset offset, ADIO_Status * status, int *error_code);
void ADIOI_GALLEY_WriteStridedColl(ADIO_File fd, const void *buf, int count,
                                   MPI_Datatype datatype, int file_ptr_type,
                                   ADIO_Offset offset, ADIO_Status * status, int *error_code);
void ADIOI_GALLEY_IreadContig(ADIO_File fd, void *buf, int count,
                              MPI_Datatype datatype, int file_ptr_type,
                              ADIO_Offset offset, ADIO_Request * request, int *error_code);
void ADIOI_GALLEY_IwriteContig(ADIO_File fd, const void *buf, int count,
                               MPI_Datatype datatype, int file_ptr_type,
                               ADIO_Offset offset, ADIO_Request * request, int *error_code);
void ADIOI_GALLEY_IreadStrided(ADIO_File fd, void *buf, int count,
                               MPI_Datatype datatype, int file_ptr_type,
                               ADIO_Offset offset, ADIO_Request * request, int *error_code);
void ADIOI_GALLEY_IwriteStrided(ADIO_File fd, const void *buf, int count,
                                MPI_Datatype datatype, int file_ptr_type,
                                ADIO_Offset offset, ADIO_Request * request, int *error_code);
void ADIOI_GALLEY_Fcntl(ADIO_File fd, int flag, ADIO_Fcntl_t * fcntl_struct, int *error_code);
void ADIOI_GALLEY_SetInfo(ADIO_File fd, MPI_Info users_info, int *error_code);
void ADIOI_GALLEY_Flush(ADIO_File fd, int *error_code);
void ADIOI_GALLEY_Resize(ADIO_File fd, ADIO_Offset size, int *error_code);
void ADIOI_GALLEY_Delete(const char *filename, int *error_code);
int ADIOI_GALLEY_Feature(ADIO_File fd, int flag);
int ADIOI_GALLEY_SetLock(ADIO_File fd, int cmd, int type, ADIO_Offset offset,
                         int whence, ADIO_Offset len);
/* Shared file pointer through the server's fetch-and-add (called from
 * ROMIO's ADIO_Get_shared_fp / ADIO_Set_shared_fp, see the patch). */
void ADIOI_GALLEY_Get_shared_fp(ADIO_File fd, ADIO_Offset incr,
                                ADIO_Offset * shared_fp, int *error_code);
void ADIOI_GALLEY_Set_shared_fp(ADIO_File fd, ADIO_Offset offset, int *error_code);

#endif /* AD_GALLEY_H_INCLUDED */
