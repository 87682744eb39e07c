/*
 * Galley for MPI-IO: non-blocking I/O.  The access is turned into pieces
 * at once (ad_galley_io.c) and started as a non-blocking Galley request
 * (gfs_nb_striped_listio), whose workers move the data while the
 * application goes on; an MPI generalized request reports completion
 * (poll_fn tests the Galley handle, wait_fn waits on it).
 *
 * In atomic mode the access runs to completion before the call returns
 * (it must hold a range lock throughout) and the request is born complete.
 *
 * Threads: the calling thread and MPI's progress engine (poll/wait);
 * libgalley's workers complete the Galley handle.
 */
#include "ad_galley.h"
#include "adio_extern.h"
#include "mpiu_greq.h"

#include <errno.h>

typedef struct galley_aio {
    MPI_Request req;
    gfs_handle h;
    int done;
    int err;                    /* MPI error code */
    MPI_Count nbytes;
} galley_aio;

static MPIX_Grequest_class greq_class = 0;

static int aio_query(void *extra, MPI_Status * status)
{
    galley_aio *a = extra;
    MPI_Status_set_elements_x(status, MPI_BYTE, a->nbytes);
    MPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    return a->err;
}

static int aio_free(void *extra)
{
    ADIOI_Free(extra);
    return MPI_SUCCESS;
}

static int aio_cancel(void *extra, int complete)
{
    return MPI_SUCCESS;         /* cannot be cancelled once started */
}

static void aio_finish(galley_aio * a, int64_t res)
{
    static char myname[] = "ADIOI_GALLEY_AIO";
    a->done = 1;
    if (res < 0)
        a->err = ADIOI_GALLEY_Err(myname, __LINE__, (int) res);
    else
        a->nbytes = res;
    MPI_Grequest_complete(a->req);
}

static int aio_poll(void *extra, MPI_Status * status)
{
    galley_aio *a = extra;
    int64_t res;
    if (!a->done && gfs_test(a->h, &res) == 1)
        aio_finish(a, res);
    return MPI_SUCCESS;
}

static int aio_wait(int count, void **states, double timeout, MPI_Status * status)
{
    for (int i = 0; i < count; i++) {
        galley_aio *a = states[i];
        if (!a->done)
            aio_finish(a, gfs_wait(a->h));
    }
    return MPI_SUCCESS;
}

static void start(ADIO_File fd, int op, void *buf, int count, MPI_Datatype datatype,
                  int file_ptr_type, ADIO_Offset offset, int contig_call,
                  MPI_Request * request, int *error_code)
{
    static char myname[] = "ADIOI_GALLEY_START";
    ADIOI_GALLEY_fs *fs = fd->fs_ptr;
    galley_aio *a = ADIOI_Calloc(1, sizeof(*a));
    if (!a) {
        *error_code = ADIOI_GALLEY_Err(myname, __LINE__, -ENOMEM);
        return;
    }
    if (greq_class == 0)
        MPIX_Grequest_class_create(aio_query, aio_free, aio_cancel, aio_poll, aio_wait,
                                   &greq_class);
    MPIX_Grequest_class_allocate(greq_class, a, request);
    a->req = *request;

    if (fd->atomicity) {
        ADIO_Status st;
        ADIOI_GALLEY_Access(fd, op, buf, count, datatype, file_ptr_type, offset,
                            contig_call, &st, error_code);
        MPI_Count got = 0;
        if (*error_code == MPI_SUCCESS)
            MPI_Get_elements_x(&st, MPI_BYTE, &got);
        aio_finish(a, *error_code == MPI_SUCCESS ? got : -EIO);
        return;
    }

    ADIOI_GALLEY_Pieces pc;
    int64_t total;
    ADIO_Offset end;
    int rc = ADIOI_GALLEY_Build_list(fd, buf, count, datatype, file_ptr_type, offset,
                                     contig_call, &pc, &total, &end);
    if (!rc && pc.nr == 0) {
        ADIOI_GALLEY_Pieces_free(&pc);
        aio_finish(a, 0);
        *error_code = MPI_SUCCESS;
        return;
    }
    if (!rc) {
        /* the lists are cut into the request's fragments before this
         * returns: they need not outlive it */
        a->h = gfs_new_handle();
        rc = a->h < 0 ? a->h : gfs_nb_striped_rangeio(a->h, fs->sid, op, pc.nr, pc.r,
                                                       pc.nm, pc.m);
    }
    ADIOI_GALLEY_Pieces_free(&pc);
    if (rc) {
        /* the request completes with the error; the call reports it too */
        aio_finish(a, rc);
        *error_code = ADIOI_GALLEY_Err(myname, __LINE__, rc);
        return;
    }
    if (file_ptr_type == ADIO_INDIVIDUAL) {
        fd->fp_ind = end;
        fd->fp_sys_posn = end;
    }
    *error_code = MPI_SUCCESS;
}

void ADIOI_GALLEY_IreadContig(ADIO_File fd, void *buf, int count,
                              MPI_Datatype datatype, int file_ptr_type,
                              ADIO_Offset offset, ADIO_Request * request, int *error_code)
{
    start(fd, GFS_READ, buf, count, datatype, file_ptr_type, offset, 1, request, error_code);
}

void ADIOI_GALLEY_IwriteContig(ADIO_File fd, const void *buf, int count,
                               MPI_Datatype datatype, int file_ptr_type,
                               ADIO_Offset offset, ADIO_Request * request, int *error_code)
{
    start(fd, GFS_WRITE, (void *) buf, count, datatype, file_ptr_type, offset, 1, request,
          error_code);
}

void ADIOI_GALLEY_IreadStrided(ADIO_File fd, void *buf, int count,
                               MPI_Datatype datatype, int file_ptr_type,
                               ADIO_Offset offset, ADIO_Request * request, int *error_code)
{
    start(fd, GFS_READ, buf, count, datatype, file_ptr_type, offset, 0, request, error_code);
}

void ADIOI_GALLEY_IwriteStrided(ADIO_File fd, const void *buf, int count,
                                MPI_Datatype datatype, int file_ptr_type,
                                ADIO_Offset offset, ADIO_Request * request, int *error_code)
{
    start(fd, GFS_WRITE, (void *) buf, count, datatype, file_ptr_type, offset, 0, request,
          error_code);
}
