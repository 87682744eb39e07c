/*
 * Galley for MPI-IO: client start-up, error conversion, driver state, and
 * the list-I/O call every data path ends in.
 *
 * Threads: whatever thread ROMIO calls from; libgalley is thread-safe.
 */
#include "ad_galley.h"
#include "adio_extern.h"
#include "galley_mpi_common.h"

#include <errno.h>

static int galley_keyval = MPI_KEYVAL_INVALID;
static int open_files;          /* galley: files open in this process */
static int end_pending;         /* MPI_Finalize came while some were open */

/* MPI_Finalize deletes MPI_COMM_SELF's attributes first: finish there --
 * unless files are still open.  Attributes are deleted newest first, and a
 * library that set its own attribute before the first open (HDF5 closes
 * the files an application left open that way) still closes them after
 * this callback: libgalley is then finished by the last close. */
static int galley_end(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    MPI_Keyval_free(&galley_keyval);
    if (__atomic_load_n(&open_files, __ATOMIC_SEQ_CST) > 0)
        __atomic_store_n(&end_pending, 1, __ATOMIC_SEQ_CST);
    else
        gfs_finalize();
    return MPI_SUCCESS;
}

void ADIOI_GALLEY_Opened(void)
{
    __atomic_add_fetch(&open_files, 1, __ATOMIC_SEQ_CST);
}

void ADIOI_GALLEY_Closed(void)
{
    if (__atomic_sub_fetch(&open_files, 1, __ATOMIC_SEQ_CST) == 0 &&
        __atomic_exchange_n(&end_pending, 0, __ATOMIC_SEQ_CST))
        gfs_finalize();
}

/* Initialise libgalley once per process (cluster file from GALLEY_CLUSTER
 * or the documented default).  Returns 0 or a negative gfs error. */
int ADIOI_GALLEY_Init(void)
{
    if (galley_keyval != MPI_KEYVAL_INVALID)
        return 0;
    int rc = gfs_init(NULL);
    if (rc)
        return rc;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, galley_end, &galley_keyval, NULL);
    MPI_Comm_set_attr(MPI_COMM_SELF, galley_keyval, NULL);
    return 0;
}

/* The class comes from galley_mpi_common.h, shared with the Open MPI
 * plug-ins. */
int ADIOI_GALLEY_Err(const char *myname, int line, int gfs_err)
{
    return MPIO_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, myname, line,
                                galley_mpi_error_class(gfs_err), "**io", "**io %s",
                                gfs_strerror(gfs_err));
}

ADIOI_GALLEY_fs *ADIOI_GALLEY_State(ADIO_File fd)
{
    if (!fd->fs_ptr) {
        ADIOI_GALLEY_fs *fs = ADIOI_Calloc(1, sizeof(*fs));
        if (!fs)
            return NULL;
        fs->sid = -1;
        fs->cb = ADIOI_GALLEY_CB_AUTO;
        ADIOI_Strncpy(fs->fork, GFS_DEFAULT_STRIPE_FORK, sizeof(fs->fork));
        fd->fs_ptr = fs;
    }
    return fd->fs_ptr;
}

int64_t ADIOI_GALLEY_Listio(ADIO_File fd, int op, int64_t nr, const gfs_range * r,
                            int64_t nm, const gfs_memseg * m)
{
    ADIOI_GALLEY_fs *fs = fd->fs_ptr;
    if (nr == 0)
        return 0;
    int64_t rc = 0, fmin = 0, fmax = 0;
    int locked = 0;
    if (fd->atomicity) /* the span is needed only to lock it */
        galley_ranges_span(nr, r, &fmin, &fmax);
    if (fmax > fmin) {
        rc = gfs_striped_lock(fs->sid, fmin, fmax - fmin, op == GFS_WRITE);
        locked = rc == 0;
    }
    if (rc == 0)
        rc = gfs_striped_rangeio(fs->sid, op, nr, r, nm, m);
    if (locked)
        gfs_striped_unlock(fs->sid, fmin, fmax - fmin);
    return rc;
}
