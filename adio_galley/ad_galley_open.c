/*
 * Galley for MPI-IO: open.  One rank creates or looks up the file and
 * broadcasts its description (gfs_striped_export); the other ranks open it
 * from that description without asking the metadata server again.
 *
 * Threads: the calling thread; collective over fd->comm.
 */
#include "ad_galley.h"
#include "adio_extern.h"

#include <errno.h>
#include <string.h>

#define SHARED_FP_KEY "mpi.shared_fp"

/* Record the layout actually in use as the file's hints. */
static void publish_layout(ADIO_File fd, ADIOI_GALLEY_fs * fs)
{
    char v[64];
    MPL_snprintf(v, sizeof(v), "%d", fs->layout.nsubfiles);
    ADIOI_Info_set(fd->info, "striping_factor", v);
    MPL_snprintf(v, sizeof(v), "%lld", (long long) fs->layout.unit);
    ADIOI_Info_set(fd->info, "striping_unit", v);
    ADIOI_Info_set(fd->info, "galley_fork", fs->layout.fork);
    fs->local = fs->layout.kind == GFS_LAYOUT_LOCAL;
    ADIOI_Info_set(fd->info, "galley_layout", fs->local ? "local" : "striped");
    ADIOI_Info_set(fd->info, GALLEY_HINT_CHECKSUM,
                   gfs_striped_checksum(fs->sid) == 1 ? "crc32c" : "none");
    int r = gfs_striped_replicas(fs->sid);
    MPL_snprintf(v, sizeof(v), "%d", r > 0 ? r : 1);
    ADIOI_Info_set(fd->info, "galley_replicas", v);
    fd->hints->striping_factor = fs->layout.nsubfiles;
    fd->hints->striping_unit = (int) fs->layout.unit;
    fd->blksize = fs->layout.unit;
}

/* Create (if asked) and open on this process.  Returns 0 or a gfs error. */
static int open_here(ADIO_File fd, ADIOI_GALLEY_fs * fs)
{
    int rc = galley_mpi_init();
    if (rc)
        return rc;
    int amode = fd->access_mode;
    if (amode & ADIO_CREATE) {
        int nserv = gfs_num_servers(), nprocs;
        MPI_Comm_size(fd->comm, &nprocs);
        bool alone = nprocs == 1 && fs->hint.replicas <= 1 &&
            (!fs->hint.layout[0] || !strcmp(fs->hint.layout, "striped"));
        int nsub = galley_new_nsub(nserv, fs->hint.nservers, fd->hints->striping_factor, alone);
        int64_t unit = fd->hints->striping_unit > 0 ? fd->hints->striping_unit : 0;
        if (fs->hint.replicas > 1 && fs->hint.layout[0] && strcmp(fs->hint.layout, "striped"))
            rc = -EINVAL;       /* replicated files are striped */
        else if (fs->hint.replicas > 1)
            rc = gfs_create_striped_replicas(fd->filename, nsub,
                                             fs->hint.nservers > 0 ? fs->hint.servers : NULL, unit,
                                             fs->hint.fork, fs->hint.replicas);
        else
            rc = gfs_create_layout(fd->filename, nsub, fs->hint.nservers > 0 ? fs->hint.servers : NULL,
                                   unit, fs->hint.fork, fs->hint.layout[0] ? fs->hint.layout : NULL);
        if (!rc)                /* only a file this open made: galley_checksum */
            rc = galley_set_checksum(fd->filename, fs->hint.checksum);
        if (rc == -EEXIST && !(amode & ADIO_EXCL))
            rc = 0;
        if (rc)
            return rc;
    }
    fs->sid = gfs_striped_open(fd->filename);
    if (fs->sid < 0) {
        rc = fs->sid;
        fs->sid = -1;
        return rc;
    }
    gfs_striped_layout(fs->sid, &fs->layout);
    return 0;
}

/* The file is open on this process: its hints, an appending open's
 * pointers at the end, and one more file for the lifecycle to count. */
static void opened(ADIO_File fd, ADIOI_GALLEY_fs * fs)
{
    publish_layout(fd, fs);
    if (fd->access_mode & ADIO_APPEND) {
        int64_t size = gfs_striped_size(fs->sid);
        if (size > 0)
            fd->fp_ind = fd->fp_sys_posn = size;
    }
    galley_mpi_opened();
}

void ADIOI_GALLEY_Open(ADIO_File fd, int *error_code)
{
    static char myname[] = "ADIOI_GALLEY_OPEN";
    ADIOI_GALLEY_fs *fs = ADIOI_GALLEY_State(fd);
    int rc = fs ? open_here(fd, fs) : -ENOMEM;
    if (rc) {
        *error_code = ADIOI_GALLEY_Err(myname, __LINE__, rc);
        return;
    }
    opened(fd, fs);
    *error_code = MPI_SUCCESS;
}

void ADIOI_GALLEY_OpenColl(ADIO_File fd, int rank, int access_mode, int *error_code)
{
    static char myname[] = "ADIOI_GALLEY_OPENCOLL";
    ADIOI_GALLEY_fs *fs = ADIOI_GALLEY_State(fd);
    char blob[GFS_EXPORT_MAX];
    int hdr[2] = { 0, 0 };      /* rc, blob length */
    int rc = 0;

    fd->access_mode = access_mode;
    if (rank == 0) {
        rc = fs ? open_here(fd, fs) : -ENOMEM;
        if (!rc) {
            /* a fresh open starts the shared file pointer at zero */
            /* one atomic request: concurrent opens cannot tear it */
            int64_t old = gfs_striped_fetch_set(fs->sid, SHARED_FP_KEY, 0);
            rc = old < 0 ? (int) old : 0;
        }
        if (!rc) {
            hdr[1] = gfs_striped_export(fs->sid, blob, sizeof(blob));
            if (hdr[1] < 0)
                rc = hdr[1];
        }
        hdr[0] = rc;
    }
    MPI_Bcast(hdr, 2, MPI_INT, 0, fd->comm);
    if (hdr[0] == 0)
        MPI_Bcast(blob, hdr[1], MPI_BYTE, 0, fd->comm);
    rc = hdr[0];
    if (rank != 0 && rc == 0) {
        rc = fs ? galley_mpi_init() : -ENOMEM;
        if (!rc) {
            fs->sid = gfs_striped_import(blob, hdr[1]);
            if (fs->sid < 0) {
                rc = fs->sid;
                fs->sid = -1;
            } else {
                gfs_striped_layout(fs->sid, &fs->layout);
            }
        }
    }
    if (rc) {
        /* leave nothing open behind */
        if (fs && fs->sid >= 0)
            gfs_striped_close(fs->sid);
        if (fs)
            fs->sid = -1;
        *error_code = ADIOI_GALLEY_Err(myname, __LINE__, rc);
        return;
    }
    opened(fd, fs);
    fd->is_open = 1;
    *error_code = MPI_SUCCESS;
}
