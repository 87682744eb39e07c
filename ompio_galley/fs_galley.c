/*
 * Galley for Open MPI: the OMPIO fs component ("fs/galley").  Selected for
 * names that start with "galley:", the way fs/ime is for "ime:".
 *
 * Open is collective: rank 0 creates the file if asked (the hints
 * striping_factor, striping_unit, galley_servers, galley_fork and
 * galley_replicas choose
 * its layout, as with MPICH's driver), opens it, restarts the shared file
 * pointer and broadcasts the file's description (gfs_striped_export); the
 * other ranks open it from that description without asking the metadata
 * server again.  The layout in force is then reported through the file's
 * info (MPI_File_get_info) and handed to OMPIO as its stripe size and
 * count, which OMPIO's collective components (fcoll) align to.
 *
 * Threads: the thread OMPIO calls from; collective calls over fh->f_comm.
 */
#include "ompio_galley.h"

#include "ompi/mca/fs/fs.h"
#include "ompi/mca/fs/base/base.h"
#include "ompi/communicator/communicator.h"
#include "ompi/info/info.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fs_galley_priority = 80;

/* ------------------------------------------------------------ hints ---- */

/* galley_mpi_read_hints's way of reading an Open MPI info object. */
static int info_get(void *info, const char *key, char *v)
{
    int flag = 0;
    return opal_info_get(info, key, MPI_MAX_INFO_VAL, v, &flag) == 0 && flag;
}

/* The layout hints of a new file (what parses: galley_mpi_common.h, shared
 * with the ROMIO driver; values that do not parse are ignored, as ROMIO
 * does). */
static void read_hints(opal_info_t *info, galley_mpi_hints *h)
{
    memset(h, 0, sizeof(*h));
    snprintf(h->fork, sizeof(h->fork), "%s", GFS_DEFAULT_STRIPE_FORK);
    if (info)
        (void)galley_mpi_read_hints(h, info_get, info, gfs_num_servers);
}

/* Record the layout actually in use as the file's hints. */
static void publish_layout(ompio_file_t *fh, const gfs_layout *l, int sid)
{
    char v[64];
    fh->f_stripe_size = (size_t)l->unit;
    fh->f_stripe_count = l->nsubfiles;
    fh->f_fs_block_size = (int)l->unit;
    if (!fh->f_info)
        return;
    snprintf(v, sizeof(v), "%d", l->nsubfiles);
    opal_info_set(fh->f_info, GALLEY_HINT_STRIPING_FACTOR, v);
    snprintf(v, sizeof(v), "%lld", (long long)l->unit);
    opal_info_set(fh->f_info, GALLEY_HINT_STRIPING_UNIT, v);
    opal_info_set(fh->f_info, GALLEY_HINT_FORK, l->fork);
    opal_info_set(fh->f_info, GALLEY_HINT_CHECKSUM,
                  gfs_striped_checksum(sid) == 1 ? "crc32c" : "none");
    int r = gfs_striped_replicas(sid);
    snprintf(v, sizeof(v), "%d", r > 0 ? r : 1);
    opal_info_set(fh->f_info, GALLEY_HINT_REPLICAS, v);
}

/* ------------------------------------------------------------- open ---- */

/* Create (if asked) and open on this process.  Returns 0 or a gfs error. */
static int open_here(const char *name, int amode, opal_info_t *info, int nprocs,
                     ompio_galley_file *gf)
{
    galley_mpi_hints h;
    read_hints(info, &h);
    if (amode & MPI_MODE_CREATE) {
        int nsub = galley_new_nsub(gfs_num_servers(), h.nservers, h.nsub,
                                   nprocs == 1 && h.replicas <= 1);
        int rc = gfs_create_striped_replicas(
            name, nsub, h.nservers > 0 ? h.servers : NULL, h.unit, h.fork,
            h.replicas > 0 ? h.replicas : 1);
        if (!rc) /* only a file this open made: galley_checksum */
            rc = galley_set_checksum(name, h.checksum);
        if (rc == -EEXIST && !(amode & MPI_MODE_EXCL))
            rc = 0;
        if (rc)
            return rc;
    }
    gf->sid = gfs_striped_open(name);
    if (gf->sid < 0) {
        int rc = gf->sid;
        gf->sid = -1;
        return rc;
    }
    return 0;
}

static int fs_galley_open(struct ompi_communicator_t *comm,
                          const char *filename, int amode,
                          struct opal_info_t *info, ompio_file_t *fh)
{
    const char *name = ompio_galley_name(filename);
    ompio_galley_file *gf = calloc(1, sizeof(*gf));
    char *blob = malloc(GFS_EXPORT_MAX);
    int hdr[2] = {0, 0}; /* rc, blob length */
    int rc = gf && blob ? galley_mpi_init() : -ENOMEM;

    if (gf)
        gf->sid = -1;
    if (fh->f_rank == OMPIO_ROOT) {
        if (!rc)
            rc = open_here(name, amode, info, fh->f_size, gf);
        if (!rc) {
            /* a fresh open starts the shared file pointer at zero: one
             * atomic request, so concurrent opens cannot drive it below */
            int64_t old =
                gfs_striped_fetch_set(gf->sid, OMPIO_GALLEY_SHARED_FP_KEY, 0);
            rc = old < 0 ? (int)old : 0;
        }
        if (!rc) {
            hdr[1] = gfs_striped_export(gf->sid, blob, GFS_EXPORT_MAX);
            if (hdr[1] < 0)
                rc = hdr[1];
        }
        hdr[0] = rc;
    }
    comm->c_coll->coll_bcast(hdr, 2, MPI_INT, OMPIO_ROOT, comm,
                             comm->c_coll->coll_bcast_module);
    if (hdr[0] == 0)
        comm->c_coll->coll_bcast(blob, hdr[1], MPI_BYTE, OMPIO_ROOT, comm,
                                 comm->c_coll->coll_bcast_module);
    if (fh->f_rank != OMPIO_ROOT) {
        if (!rc)
            rc = hdr[0];
        if (!rc) {
            gf->sid = gfs_striped_import(blob, hdr[1]);
            if (gf->sid < 0) {
                rc = gf->sid;
                gf->sid = -1;
            }
        }
    }
    free(blob);
    if (!rc)
        rc = gfs_striped_layout(gf->sid, &gf->layout);
    if (rc) {
        /* leave nothing open behind */
        if (gf && gf->sid >= 0)
            gfs_striped_close(gf->sid);
        free(gf);
        fh->f_fs_ptr = NULL;
        return ompio_galley_err(rc);
    }
    fh->f_fs_ptr = gf;
    /* OMPIO deletes MPI_MODE_DELETE_ON_CLOSE files by this name, which it
     * made by prefixing the working directory: make it the galley: name
     * again so the delete comes back here */
    char *full = strdup(filename);
    if (full) {
        free(fh->f_fullfilename);
        fh->f_fullfilename = full;
    }
    publish_layout(fh, &gf->layout, gf->sid);
    galley_mpi_opened();
    return OMPI_SUCCESS;
}

/* ------------------------------------------------- other operations ---- */

static int fs_galley_close(ompio_file_t *fh)
{
    ompio_galley_file *gf = fh->f_fs_ptr;
    if (!gf)
        return OMPI_SUCCESS;
    /* OMPIO deletes a DELETE_ON_CLOSE file right after this: not before
     * every rank is done with it */
    if ((fh->f_amode & MPI_MODE_DELETE_ON_CLOSE) && fh->f_comm != MPI_COMM_NULL)
        fh->f_comm->c_coll->coll_barrier(
            fh->f_comm, fh->f_comm->c_coll->coll_barrier_module);
    int rc = gf->sid >= 0 ? gfs_striped_close(gf->sid) : 0;
    if (gf->lost) {
        /* a transfer whose error OMPIO dropped; Open MPI 4.1.4's
         * MPI_File_close drops this one too (ompi_file_close returns
         * success whatever the component says), so say it here */
        rc = gf->lost;
        opal_output(0, "fs_galley: %s closed after a lost transfer: %s",
                    fh->f_filename, gfs_strerror(gf->lost));
    }
    free(gf);
    fh->f_fs_ptr = NULL;
    galley_mpi_closed();
    return ompio_galley_err(rc);
}

static int fs_galley_delete(char *filename, struct opal_info_t *info)
{
    int rc = galley_mpi_init();
    if (!rc)
        rc = gfs_delete_file(ompio_galley_name(filename));
    return ompio_galley_err(rc);
}

/* Collective: rank 0 sets the size, every rank returns its result. */
static int fs_galley_set_size(ompio_file_t *fh, OMPI_MPI_OFFSET_TYPE size)
{
    ompio_galley_file *gf = ompio_galley_file_of(fh);
    int rc = 0;
    if (!gf)
        return MPI_ERR_FILE;
    if (fh->f_rank == OMPIO_ROOT)
        rc = size < 0 ? -EINVAL : gfs_striped_truncate(gf->sid, size);
    fh->f_comm->c_coll->coll_bcast(&rc, 1, MPI_INT, OMPIO_ROOT, fh->f_comm,
                                   fh->f_comm->c_coll->coll_bcast_module);
    return ompio_galley_err(rc);
}

static int fs_galley_get_size(ompio_file_t *fh, OMPI_MPI_OFFSET_TYPE *size)
{
    ompio_galley_file *gf = ompio_galley_file_of(fh);
    if (!gf)
        return MPI_ERR_FILE;
    int64_t s = gfs_striped_size(gf->sid);
    if (s < 0)
        return ompio_galley_err((int)s);
    *size = s;
    return OMPI_SUCCESS;
}

/* Collective: every rank syncs; a sync that failed or a transfer whose
 * error OMPIO dropped, on any rank, fails the call on every rank. */
static int fs_galley_sync(ompio_file_t *fh)
{
    ompio_galley_file *gf = ompio_galley_file_of(fh);
    int rc = gf ? gfs_striped_sync(gf->sid) : -EBADF;
    if (gf && gf->lost)
        rc = gf->lost;
    return ompio_galley_agree(
        fh, rc ? (gf ? ompio_galley_err(rc) : MPI_ERR_FILE) : MPI_SUCCESS);
}

/* ------------------------------------------------ module, component ---- */

static int fs_galley_module_init(ompio_file_t *fh)
{
    /* not a file system OMPIO knows by type: no other component's
     * type-specific choices apply (fs/ufs may have stamped UFS) */
    fh->f_fstype = NONE;
    return OMPI_SUCCESS;
}

static int fs_galley_module_finalize(ompio_file_t *fh)
{
    return OMPI_SUCCESS;
}

static mca_fs_base_module_1_0_0_t fs_galley_module = {
    fs_galley_module_init, fs_galley_module_finalize,
    fs_galley_open,        fs_galley_close,
    fs_galley_delete,      fs_galley_set_size,
    fs_galley_get_size,    fs_galley_sync,
};

static int fs_galley_init_query(bool enable_progress_threads,
                                bool enable_mpi_threads)
{
    return OMPI_SUCCESS;
}

static struct mca_fs_base_module_1_0_0_t *fs_galley_file_query(ompio_file_t *fh,
                                                               int *priority)
{
    *priority = fs_galley_priority;
    return ompio_galley_is_galley_name(fh->f_filename) ? &fs_galley_module
                                                       : NULL;
}

static int fs_galley_file_unquery(ompio_file_t *fh)
{
    return OMPI_SUCCESS;
}

static int fs_galley_register(void);

OMPI_MODULE_DECLSPEC mca_fs_base_component_2_0_0_t mca_fs_galley_component = {
    .fsm_version =
        {
            MCA_FS_BASE_VERSION_2_0_0,
            .mca_component_name = "galley",
            MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION,
                                  OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION),
            .mca_register_component_params = fs_galley_register,
        },
    .fsm_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
    .fsm_init_query = fs_galley_init_query,
    .fsm_file_query = fs_galley_file_query,
    .fsm_file_unquery = fs_galley_file_unquery,
};

static int fs_galley_register(void)
{
    (void)mca_base_component_var_register(
        &mca_fs_galley_component.fsm_version, "priority",
        "Priority of the fs galley component for "
        "galley: names",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9,
        MCA_BASE_VAR_SCOPE_READONLY, &fs_galley_priority);
    return OMPI_SUCCESS;
}
