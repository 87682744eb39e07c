/*
 * Galley for Open MPI: the OMPIO fbtl component ("fbtl/galley").  OMPIO
 * hands it the (file offset, memory address, length) pieces of one call in
 * fh->f_io_array; each call becomes one striped list request, split by
 * libgalley into one transfer per server (sorted and merged there), for
 * blocking and non-blocking calls alike.  In atomic mode the pieces' file
 * range is locked on the servers for the duration of the request.
 *
 * Threads: the thread OMPIO calls from; non-blocking requests are
 * completed by OMPIO's progress function (gfs_test).
 */
#include "ompio_galley.h"

#include "ompi/mca/fbtl/fbtl.h"
#include "ompi/mca/common/ompio/common_ompio_request.h"

#include <errno.h>
#include <stdlib.h>

static int fbtl_galley_priority = 80;

/* ------------------------------------------------------- blocking ---- */

static ssize_t fbtl_galley_io(ompio_file_t *fh, int op)
{
    ompio_galley_file *gf = ompio_galley_file_of(fh);
    gfs_range *r;
    gfs_memseg *m;
    if (!gf || !fh->f_io_array)
        return OMPI_ERROR;
    if (fh->f_num_of_io_entries == 0)
        return 0;
    if (ompio_galley_ranges(fh, &r, &m))
        return OMPI_ERROR;
    int64_t rc = galley_mpi_rangeio(gf->sid, fh->f_atomicity, op,
                                    fh->f_num_of_io_entries, r,
                                    fh->f_num_of_io_entries, m);
    free(r);
    if (rc < 0) {
        /* OMPIO drops this error: keep it for sync and close */
        ompio_galley_lost(gf, (int)rc);
        opal_output(1, "fbtl_galley: %s of %s: %s",
                    op == GFS_WRITE ? "write" : "read", fh->f_filename,
                    gfs_strerror((int)rc));
        return OMPI_ERROR;
    }
    return (ssize_t)rc;
}

static ssize_t fbtl_galley_preadv(ompio_file_t *fh)
{
    return fbtl_galley_io(fh, GFS_READ);
}

static ssize_t fbtl_galley_pwritev(ompio_file_t *fh)
{
    return fbtl_galley_io(fh, GFS_WRITE);
}

/* --------------------------------------------------- non-blocking ---- */

/* What one outstanding request keeps until it completes. */
struct nb_data {
    gfs_handle h;
    ompio_galley_file *gf; /* alive until the request completes */
    int lost;              /* the handle's sticky error when posted */
    bool posted;           /* started: complete it before freeing */
    galley_mpi_lock lock;  /* atomic mode's, held until completion */
};

static void nb_release(struct nb_data *d)
{
    galley_mpi_unlock(&d->lock);
    d->posted = false;
}

static bool fbtl_galley_progress(mca_ompio_request_t *req)
{
    struct nb_data *d = req->req_data;
    int64_t result = 0;
    if (!d)
        return true;
    int done = gfs_test(d->h, &result);
    if (done == 0)
        return false;
    if (done < 0)
        result = done;
    nb_release(d);
    if (result < 0)
        ompio_galley_lost(d->gf, (int)result);
    /* an earlier lost transfer is reported by every later one */
    int err = result < 0 ? (int)result : d->lost;
    req->req_ompi.req_status.MPI_ERROR = ompio_galley_err(err);
    req->req_ompi.req_status._ucount = result < 0 ? 0 : (size_t)result;
    return true;
}

static void fbtl_galley_request_free(mca_ompio_request_t *req)
{
    struct nb_data *d = req->req_data;
    if (d) {
        if (d->posted) {
            /* freed before completion: wait, so nothing writes into
             * memory the application may reuse */
            gfs_wait(d->h);
            nb_release(d);
        }
        free(d);
        req->req_data = NULL;
    }
}

/* Post the request; on failure the request is completed with the error. */
static ssize_t fbtl_galley_ipost(ompio_file_t *fh, ompi_request_t *request,
                                 int op)
{
    mca_ompio_request_t *req = (mca_ompio_request_t *)request;
    ompio_galley_file *gf = ompio_galley_file_of(fh);
    struct nb_data *d = calloc(1, sizeof(*d));
    gfs_range *r = NULL;
    gfs_memseg *m = NULL;
    int rc = gf && d ? 0 : -ENOMEM;
    /* OMPIO leaves the request's MPI object unset, and a request that
     * fails is reported through that object's error handler (a NULL
     * dereference otherwise) */
    if (fh->f_fh)
        req->req_ompi.req_mpi_object.file = fh->f_fh;
    if (!rc)
        rc = ompio_galley_ranges(fh, &r, &m);
    if (!rc) {
        d->gf = gf;
        d->lost = gf->lost;
        rc = galley_mpi_lock_ranges(&d->lock, gf->sid, fh->f_atomicity, op,
                                    fh->f_num_of_io_entries, r);
    }
    if (!rc) {
        d->h = gfs_new_handle();
        rc = gfs_nb_striped_rangeio(d->h, gf->sid, op, fh->f_num_of_io_entries,
                                    r, fh->f_num_of_io_entries, m);
        d->posted = rc == 0;
    }
    free(r);
    if (rc) {
        if (d) {
            nb_release(d);
            free(d);
        }
        req->req_ompi.req_status.MPI_ERROR = ompio_galley_err(rc);
        req->req_ompi.req_status._ucount = 0;
        ompi_request_complete(&req->req_ompi, false);
        return OMPI_ERROR;
    }
    req->req_data = d;
    req->req_progress_fn = fbtl_galley_progress;
    req->req_free_fn = fbtl_galley_request_free;
    return OMPI_SUCCESS;
}

static ssize_t fbtl_galley_ipreadv(ompio_file_t *fh, ompi_request_t *request)
{
    return fbtl_galley_ipost(fh, request, GFS_READ);
}

static ssize_t fbtl_galley_ipwritev(ompio_file_t *fh, ompi_request_t *request)
{
    return fbtl_galley_ipost(fh, request, GFS_WRITE);
}

/* ------------------------------------------------ module, component ---- */

static int fbtl_galley_module_init(ompio_file_t *fh)
{
    return OMPI_SUCCESS;
}

static int fbtl_galley_module_finalize(ompio_file_t *fh)
{
    return OMPI_SUCCESS;
}

static mca_fbtl_base_module_1_0_0_t fbtl_galley_module = {
    fbtl_galley_module_init, fbtl_galley_module_finalize, fbtl_galley_preadv,
    fbtl_galley_ipreadv,     fbtl_galley_pwritev,         fbtl_galley_ipwritev,
    fbtl_galley_progress,    fbtl_galley_request_free,
};

static int fbtl_galley_init_query(bool enable_progress_threads,
                                  bool enable_mpi_threads)
{
    return OMPI_SUCCESS;
}

/* Queried after the fs component is chosen but before the file is open:
 * the name decides. */
static struct mca_fbtl_base_module_1_0_0_t *
fbtl_galley_file_query(ompio_file_t *fh, int *priority)
{
    *priority = fbtl_galley_priority;
    return ompio_galley_is_galley_name(fh->f_filename) ? &fbtl_galley_module
                                                       : NULL;
}

static int fbtl_galley_file_unquery(ompio_file_t *fh)
{
    return OMPI_SUCCESS;
}

static int fbtl_galley_register(void);

OMPI_MODULE_DECLSPEC mca_fbtl_base_component_2_0_0_t
    mca_fbtl_galley_component = {
        .fbtlm_version =
            {
                MCA_FBTL_BASE_VERSION_2_0_0,
                .mca_component_name = "galley",
                MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION,
                                      OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION),
                .mca_register_component_params = fbtl_galley_register,
            },
        .fbtlm_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
        .fbtlm_init_query = fbtl_galley_init_query,
        .fbtlm_file_query = fbtl_galley_file_query,
        .fbtlm_file_unquery = fbtl_galley_file_unquery,
};

static int fbtl_galley_register(void)
{
    (void)mca_base_component_var_register(
        &mca_fbtl_galley_component.fbtlm_version, "priority",
        "Priority of the fbtl galley component for "
        "galley: names",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9,
        MCA_BASE_VAR_SCOPE_READONLY, &fbtl_galley_priority);
    return OMPI_SUCCESS;
}
