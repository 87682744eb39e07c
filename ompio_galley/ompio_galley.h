/*
 * Galley for Open MPI: what the three OMPIO components (fs, fbtl, sharedfp)
 * share.  They are built as separate plug-ins (mca_fs_galley.so,
 * mca_fbtl_galley.so, mca_sharedfp_galley.so) against the OMPIO headers of
 * an installed Open MPI and loaded from the Galley prefix through
 * mca_base_component_path; each plug-in carries its own copy of
 * ompio_galley_common.c and of the MPI-driver core it shares with the ROMIO
 * driver (adio_galley/galley_mpi_common.[ch]: lifecycle, atomic list I/O,
 * error classes, hints), compiled with -fvisibility=hidden: each plug-in
 * exports only its component.
 *
 * A galley: file opened through OMPIO keeps one ompio_galley_file in
 * fh->f_fs_ptr, created by the fs component's open and freed by its close;
 * the fbtl and sharedfp components only read it.
 *
 * Threads: whatever thread OMPIO calls from (OMPIO serialises calls on one
 * file); libgalley is thread-safe.
 */
#ifndef OMPIO_GALLEY_H
#define OMPIO_GALLEY_H

#include "ompi_config.h"
#include "mpi.h"
#include "ompi/mca/common/ompio/common_ompio.h"

#include <galley.h>
#include <stdbool.h>

#include "galley_mpi_common.h"

/* The file name prefix that selects these components, as in MPICH. */
#define OMPIO_GALLEY_PREFIX "galley:"

/* Counter key of the shared file pointer (bytes of the current view, as
 * OMPIO's own sharedfp components count). */
#define OMPIO_GALLEY_SHARED_FP_KEY "mpi.shared_fp"

/* State of one open galley: file (fh->f_fs_ptr). */
typedef struct ompio_galley_file {
    int sid;           /* gfs_striped_* id, -1 when not open */
    gfs_layout layout; /* the layout in force */
    /* Open MPI 4.1.4 drops the error of a blocking transfer (see README):
     * the first one is kept here, sticky, and returned by the next
     * MPI_File_sync (on every rank), MPI_File_close and every later
     * non-blocking transfer on this handle, as NFS reports write-back
     * errors at fsync and close. */
    int lost;             /* first gfs error of a transfer, 0: none */
    unsigned nlost;       /* transfers that failed so far */
    unsigned split_nlost; /* nlost when the split ordered call began */
} ompio_galley_file;

/* True if name starts with "galley:". */
bool ompio_galley_is_galley_name(const char *name);

/* The Galley file name: what follows the prefix. */
const char *ompio_galley_name(const char *name);

/* The MPI error class of a gfs error (0: MPI_SUCCESS); the mapping is
 * galley_mpi_common.h's, shared with the ROMIO driver. */
int ompio_galley_err(int gfs_err);

/* A transfer on gf failed with gfs error err: keep it (ompio_galley_file). */
void ompio_galley_lost(ompio_galley_file *gf, int err);

/* Collective over fh->f_comm (one allreduce): every rank learns whether any
 * rank's part of a collective call failed.  rc is this rank's MPI error
 * class (MPI_SUCCESS: none); returns it if it failed, else MPI_ERR_IO if
 * another rank failed, else MPI_SUCCESS. */
int ompio_galley_agree(ompio_file_t *fh, int rc);

/* The galley: file behind fh, or NULL if fh is not one of ours. */
ompio_galley_file *ompio_galley_file_of(ompio_file_t *fh);

/* fh->f_io_array (fh->f_num_of_io_entries pieces) as the two lists
 * gfs_striped_rangeio takes: *r the file ranges and *m the memory
 * segments, in one allocation (free(*r) when the request has been
 * started: libgalley has cut them into its fragments by then).  0 or
 * -ENOMEM. */
int ompio_galley_ranges(ompio_file_t *fh, gfs_range **r, gfs_memseg **m);

#endif /* OMPIO_GALLEY_H */
