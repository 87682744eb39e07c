/*
 * Galley for Open MPI: the OMPIO sharedfp component ("sharedfp/galley").
 * The shared file pointer is one counter kept by the file's first server
 * and moved by an atomic fetch-and-add: no hidden file, no file locks and
 * no shared memory, so it works for ranks on any number of hosts (OMPIO's
 * own components need a POSIX file with working locks, or a single node).
 * As in OMPIO's components the counter counts bytes of the current view;
 * it is restarted at zero by every collective open (fs_galley.c).
 *
 * Threads: the thread OMPIO calls from; ordered and seek calls are
 * collective over fh->f_comm.
 */
#include "ompio_galley.h"

#include "ompi/mca/sharedfp/sharedfp.h"
#include "ompi/communicator/communicator.h"

#include <errno.h>

static int sharedfp_galley_priority = 90;

/* ------------------------------------------------------- counter ---- */

/* Take `bytes` bytes at the shared pointer: *etypes is where they start, in
 * etypes of the view.  Returns an MPI error class. */
static int take(ompio_file_t *fh, int64_t bytes, OMPI_MPI_OFFSET_TYPE *etypes)
{
    ompio_galley_file *gf = ompio_galley_file_of(fh);
    if (!gf)
        return MPI_ERR_FILE;
    int64_t old =
        gfs_striped_fetch_add(gf->sid, OMPIO_GALLEY_SHARED_FP_KEY, bytes);
    if (old < 0)
        return ompio_galley_err((int)old);
    *etypes = old / (int64_t)fh->f_etype_size;
    return OMPI_SUCCESS;
}

static int64_t bytes_of(int count, struct ompi_datatype_t *datatype)
{
    size_t size = 0;
    opal_datatype_type_size(&datatype->super, &size);
    return (int64_t)count * (int64_t)size;
}

/* Collective: where this rank's part of an ordered access starts.  One
 * fetch-and-add for the whole group, by the last rank, which alone knows
 * the total after an inclusive prefix sum. */
static int take_ordered(ompio_file_t *fh, int64_t bytes,
                        OMPI_MPI_OFFSET_TYPE *etypes)
{
    ompi_communicator_t *comm = fh->f_comm;
    long long mine = bytes, upto = 0, base = 0;
    int rc = comm->c_coll->coll_scan(&mine, &upto, 1, MPI_LONG_LONG, MPI_SUM,
                                     comm, comm->c_coll->coll_scan_module);
    if (rc != OMPI_SUCCESS)
        return rc;
    long long msg[2] = {0, 0}; /* error class, base */
    if (fh->f_rank == fh->f_size - 1) {
        ompio_galley_file *gf = ompio_galley_file_of(fh);
        int64_t old = gf ? gfs_striped_fetch_add(
                               gf->sid, OMPIO_GALLEY_SHARED_FP_KEY, upto)
                         : -EBADF;
        msg[0] = old < 0 ? ompio_galley_err((int)old) : OMPI_SUCCESS;
        msg[1] = old < 0 ? 0 : old;
    }
    rc = comm->c_coll->coll_bcast(msg, 2, MPI_LONG_LONG, fh->f_size - 1, comm,
                                  comm->c_coll->coll_bcast_module);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (msg[0] != OMPI_SUCCESS)
        return (int)msg[0];
    base = msg[1];
    *etypes = (base + upto - mine) / (int64_t)fh->f_etype_size;
    return OMPI_SUCCESS;
}

/* ---------------------------------------------------- operations ---- */

static int sfp_seek(ompio_file_t *fh, OMPI_MPI_OFFSET_TYPE offset, int whence)
{
    ompio_galley_file *gf = ompio_galley_file_of(fh);
    int rc = OMPI_SUCCESS;
    if (!gf)
        return MPI_ERR_FILE;
    if (fh->f_rank == OMPIO_ROOT) {
        int64_t target = offset * (int64_t)fh->f_etype_size;
        int64_t now =
            gfs_striped_fetch_add(gf->sid, OMPIO_GALLEY_SHARED_FP_KEY, 0);
        if (now < 0) {
            rc = ompio_galley_err((int)now);
        } else {
            if (whence == MPI_SEEK_CUR) {
                target += now;
            } else if (whence == MPI_SEEK_END) {
                /* the end of the file as seen through the view: bytes
                 * past its displacement */
                OMPI_MPI_OFFSET_TYPE end = 0;
                rc = mca_common_ompio_file_get_size(fh, &end);
                target += end > fh->f_disp ? end - fh->f_disp : 0;
            } else if (whence != MPI_SEEK_SET) {
                rc = MPI_ERR_ARG;
            }
            if (rc == OMPI_SUCCESS && target < 0)
                rc = MPI_ERR_ARG;
            if (rc == OMPI_SUCCESS && target != now) {
                int64_t old = gfs_striped_fetch_set(
                    gf->sid, OMPIO_GALLEY_SHARED_FP_KEY, target);
                if (old < 0)
                    rc = ompio_galley_err((int)old);
            }
        }
    }
    /* everyone returns the root's result once the pointer is set (the
     * others contribute 0).  An allreduce, not a bcast: no rank leaves
     * before every rank has entered, so with MPI_MODE_APPEND no rank can
     * write before the others have taken the file's size in open. */
    int all = rc;
    fh->f_comm->c_coll->coll_allreduce(
        MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MAX, fh->f_comm,
        fh->f_comm->c_coll->coll_allreduce_module);
    return all;
}

/* In bytes: OMPIO divides by the etype size itself. */
static int sfp_get_position(ompio_file_t *fh, OMPI_MPI_OFFSET_TYPE *offset)
{
    ompio_galley_file *gf = ompio_galley_file_of(fh);
    if (!gf)
        return MPI_ERR_FILE;
    int64_t now = gfs_striped_fetch_add(gf->sid, OMPIO_GALLEY_SHARED_FP_KEY, 0);
    if (now < 0)
        return ompio_galley_err((int)now);
    *offset = now;
    return OMPI_SUCCESS;
}

static int sfp_read(ompio_file_t *fh, void *buf, int count,
                    struct ompi_datatype_t *datatype,
                    ompi_status_public_t *status)
{
    OMPI_MPI_OFFSET_TYPE at = 0;
    int rc = take(fh, bytes_of(count, datatype), &at);
    return rc != OMPI_SUCCESS ? rc
                              : mca_common_ompio_file_read_at(
                                    fh, at, buf, count, datatype, status);
}

static int sfp_write(ompio_file_t *fh, const void *buf, int count,
                     struct ompi_datatype_t *datatype,
                     ompi_status_public_t *status)
{
    OMPI_MPI_OFFSET_TYPE at = 0;
    int rc = take(fh, bytes_of(count, datatype), &at);
    return rc != OMPI_SUCCESS ? rc
                              : mca_common_ompio_file_write_at(
                                    fh, at, buf, count, datatype, status);
}

static int sfp_iread(ompio_file_t *fh, void *buf, int count,
                     struct ompi_datatype_t *datatype, ompi_request_t **request)
{
    OMPI_MPI_OFFSET_TYPE at = 0;
    int rc = take(fh, bytes_of(count, datatype), &at);
    return rc != OMPI_SUCCESS ? rc
                              : mca_common_ompio_file_iread_at(
                                    fh, at, buf, count, datatype, request);
}

static int sfp_iwrite(ompio_file_t *fh, const void *buf, int count,
                      struct ompi_datatype_t *datatype,
                      ompi_request_t **request)
{
    OMPI_MPI_OFFSET_TYPE at = 0;
    int rc = take(fh, bytes_of(count, datatype), &at);
    return rc != OMPI_SUCCESS ? rc
                              : mca_common_ompio_file_iwrite_at(
                                    fh, at, buf, count, datatype, request);
}

/* The ordered calls are ours: a transfer of this call that failed on
 * any rank (OMPIO's collective code drops its error) fails the call on
 * every rank, after one allreduce. */
static int lost_since(ompio_file_t *fh, unsigned before, int rc)
{
    ompio_galley_file *gf = ompio_galley_file_of(fh);
    if (rc == OMPI_SUCCESS && gf && gf->nlost != before)
        rc = ompio_galley_err(gf->lost);
    return ompio_galley_agree(fh, rc);
}

static unsigned nlost(ompio_file_t *fh)
{
    ompio_galley_file *gf = ompio_galley_file_of(fh);
    return gf ? gf->nlost : 0;
}

/* An ordered transfer: take the place, then the collective read or write
 * (buf is written to only by a read). */
static int sfp_ordered(ompio_file_t *fh, bool write, const void *buf, int count,
                       struct ompi_datatype_t *datatype,
                       ompi_status_public_t *status)
{
    OMPI_MPI_OFFSET_TYPE at = 0;
    unsigned before = nlost(fh);
    int rc = take_ordered(fh, bytes_of(count, datatype), &at);
    if (rc != OMPI_SUCCESS)
        return rc; /* the same on every rank (broadcast) */
    rc = write ? mca_common_ompio_file_write_at_all(fh, at, buf, count,
                                                    datatype, status)
               : mca_common_ompio_file_read_at_all(fh, at, (void *)buf, count,
                                                   datatype, status);
    return lost_since(fh, before, rc);
}

static int sfp_read_ordered(ompio_file_t *fh, void *buf, int count,
                            struct ompi_datatype_t *datatype,
                            ompi_status_public_t *status)
{
    return sfp_ordered(fh, false, buf, count, datatype, status);
}

static int sfp_write_ordered(ompio_file_t *fh, const void *buf, int count,
                             struct ompi_datatype_t *datatype,
                             ompi_status_public_t *status)
{
    return sfp_ordered(fh, true, buf, count, datatype, status);
}

/* Split collectives: the begin takes the place and starts the collective
 * transfer; the end waits for it. */
static int sfp_ordered_begin(ompio_file_t *fh, bool write, const void *buf,
                             int count, struct ompi_datatype_t *datatype)
{
    OMPI_MPI_OFFSET_TYPE at = 0;
    if (fh->f_split_coll_in_use)
        return MPI_ERR_REQUEST;
    ompio_galley_file *gf = ompio_galley_file_of(fh);
    if (gf)
        gf->split_nlost = gf->nlost;
    int rc = take_ordered(fh, bytes_of(count, datatype), &at);
    if (rc == OMPI_SUCCESS)
        rc = write ? mca_common_ompio_file_iwrite_at_all(
                         fh, at, buf, count, datatype, &fh->f_split_coll_req)
                   : mca_common_ompio_file_iread_at_all(fh, at, (void *)buf,
                                                        count, datatype,
                                                        &fh->f_split_coll_req);
    fh->f_split_coll_in_use = rc == OMPI_SUCCESS;
    return rc;
}

static int sfp_read_ordered_begin(ompio_file_t *fh, void *buf, int count,
                                  struct ompi_datatype_t *datatype)
{
    return sfp_ordered_begin(fh, false, buf, count, datatype);
}

static int sfp_write_ordered_begin(ompio_file_t *fh, const void *buf, int count,
                                   struct ompi_datatype_t *datatype)
{
    return sfp_ordered_begin(fh, true, buf, count, datatype);
}

static int sfp_ordered_end(ompio_file_t *fh, ompi_status_public_t *status)
{
    if (!fh->f_split_coll_in_use)
        return MPI_ERR_REQUEST;
    ompio_galley_file *gf = ompio_galley_file_of(fh);
    int rc = ompi_request_wait(&fh->f_split_coll_req, status);
    fh->f_split_coll_in_use = false;
    return lost_since(fh, gf ? gf->split_nlost : 0, rc);
}

static int sfp_read_ordered_end(ompio_file_t *fh, void *buf,
                                ompi_status_public_t *status)
{
    return sfp_ordered_end(fh, status);
}

static int sfp_write_ordered_end(ompio_file_t *fh, const void *buf,
                                 ompi_status_public_t *status)
{
    return sfp_ordered_end(fh, status);
}

/* The fs component opened the file (and restarted the counter) already. */
static int sfp_file_open(struct ompi_communicator_t *comm, const char *filename,
                         int amode, struct opal_info_t *info, ompio_file_t *fh)
{
    return ompio_galley_file_of(fh) ? OMPI_SUCCESS : MPI_ERR_FILE;
}

static int sfp_file_close(ompio_file_t *fh)
{
    return OMPI_SUCCESS;
}

/* ------------------------------------------------ module, component ---- */

static int sfp_module_init(ompio_file_t *fh)
{
    return OMPI_SUCCESS;
}

static int sfp_module_finalize(ompio_file_t *fh)
{
    return OMPI_SUCCESS;
}

static mca_sharedfp_base_module_1_0_0_t sharedfp_galley_module = {
    sfp_module_init,
    sfp_module_finalize,
    sfp_seek,
    sfp_get_position,
    sfp_read,
    sfp_read_ordered,
    sfp_read_ordered_begin,
    sfp_read_ordered_end,
    sfp_iread,
    sfp_write,
    sfp_write_ordered,
    sfp_write_ordered_begin,
    sfp_write_ordered_end,
    sfp_iwrite,
    sfp_file_open,
    sfp_file_close,
};

static int sharedfp_galley_init_query(bool enable_progress_threads,
                                      bool enable_mpi_threads)
{
    return OMPI_SUCCESS;
}

static struct mca_sharedfp_base_module_1_0_0_t *
sharedfp_galley_file_query(ompio_file_t *fh, int *priority)
{
    *priority = sharedfp_galley_priority;
    return ompio_galley_is_galley_name(fh->f_filename) ? &sharedfp_galley_module
                                                       : NULL;
}

static int sharedfp_galley_file_unquery(ompio_file_t *fh)
{
    return OMPI_SUCCESS;
}

static int sharedfp_galley_register(void);

OMPI_MODULE_DECLSPEC mca_sharedfp_base_component_2_0_0_t
    mca_sharedfp_galley_component = {
        .sharedfpm_version =
            {
                MCA_SHAREDFP_BASE_VERSION_2_0_0,
                .mca_component_name = "galley",
                MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION,
                                      OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION),
                .mca_register_component_params = sharedfp_galley_register,
            },
        .sharedfpm_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
        .sharedfpm_init_query = sharedfp_galley_init_query,
        .sharedfpm_file_query = sharedfp_galley_file_query,
        .sharedfpm_file_unquery = sharedfp_galley_file_unquery,
};

static int sharedfp_galley_register(void)
{
    (void)mca_base_component_var_register(
        &mca_sharedfp_galley_component.sharedfpm_version, "priority",
        "Priority of the sharedfp galley component for "
        "galley: names",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9,
        MCA_BASE_VAR_SCOPE_READONLY, &sharedfp_galley_priority);
    return OMPI_SUCCESS;
}
