/*
 * Galley for MPI-IO: hints.  ROMIO's generic hints (cb_buffer_size,
 * cb_nodes, romio_cb_read/write, striping_unit, ...) go through
 * ADIOI_GEN_SetInfo; on top of it:
 *   striping_factor   number of subfiles (servers) of a new file
 *   striping_unit     stripe unit in bytes of a new file (any size)
 *   galley_servers    explicit server list of a new file, e.g. "0,2,3"
 *   galley_fork       the fork of every subfile that holds the bytes
 *   galley_checksum   crc32c: a new file's data moves and is stored with
 *                     end-to-end checksums (gfs_set_checksum); none
 *   galley_replicas   copies of every subfile of a new file (1, 2 or 3;
 *                     libgalley/repl.c); after open, the file's own R
 *   galley_cb         collective algorithm: "auto" (default: decided per
 *                     call, see ad_galley_coll.c), "server" (always
 *                     aggregate, aggregators follow server ownership) or
 *                     "two_phase" (ROMIO's)
 * Values that do not parse are ignored, as ROMIO does for its own hints
 * (the layout hints are read by galley_mpi_read_hints, galley_mpi_common.h,
 * shared with the Open MPI plug-ins);
 * MPI_File_get_info reports what is in force (the real layout after open).
 */
#include "ad_galley.h"
#include "adio_extern.h"
#include "hint_fns.h"

#include <stdlib.h>
#include <string.h>

/* galley_mpi_read_hints's way of reading a ROMIO info object. */
static int info_get(void *info, const char *key, char *v)
{
    int flag = 0;
    ADIOI_Info_get(*(MPI_Info *) info, key, MPI_MAX_INFO_VAL, v, &flag);
    return flag;
}

/* The servers galley_servers may name: the cluster's (every rank decides
 * alike: same cluster file), or all there can be if the client does not
 * start. */
static int cluster_servers(void)
{
    return galley_mpi_init() == 0 ? gfs_num_servers() : GFS_MAX_SERVERS;
}

/* galley_cb: the collective algorithm; anything else leaves it as it is. */
static void read_cb(ADIOI_GALLEY_fs * fs, MPI_Info users_info)
{
    char value[MPI_MAX_INFO_VAL + 1];
    int flag;
    /* ROMIO's default cb_config_list (*:1) leaves one aggregator per
     * host; our collective wants one per subfile unless told */
    ADIOI_Info_get(users_info, "cb_nodes", MPI_MAX_INFO_VAL, value, &flag);
    if (flag && atoi(value) > 0)
        fs->cb_nodes = atoi(value);
    ADIOI_Info_get(users_info, "galley_cb", MPI_MAX_INFO_VAL, value, &flag);
    if (flag && !strcmp(value, "auto"))
        fs->cb = ADIOI_GALLEY_CB_AUTO;
    else if (flag && !strcmp(value, "server"))
        fs->cb = ADIOI_GALLEY_CB_SERVER;
    else if (flag && !strcmp(value, "two_phase"))
        fs->cb = ADIOI_GALLEY_CB_TWO_PHASE;
}

void ADIOI_GALLEY_SetInfo(ADIO_File fd, MPI_Info users_info, int *error_code)
{
    ADIOI_GALLEY_fs *fs = ADIOI_GALLEY_State(fd);
    char value[MPI_MAX_INFO_VAL + 1];
    int flag;

    ADIOI_GEN_SetInfo(fd, users_info, error_code);
    if (*error_code != MPI_SUCCESS || !fs)
        return;

    if (users_info != MPI_INFO_NULL) {
        /* striping_unit stays ROMIO's (ADIOI_GEN_SetInfo) */
        unsigned took = galley_mpi_read_hints(&fs->hint, info_get, &users_info,
                                              cluster_servers);
        if (took & GALLEY_MPI_HAS_STRIPING_FACTOR) {
            fd->hints->striping_factor = fs->hint.nsub;
            ADIOI_Info_get(users_info, GALLEY_HINT_STRIPING_FACTOR, MPI_MAX_INFO_VAL,
                           value, &flag);
            ADIOI_Info_set(fd->info, GALLEY_HINT_STRIPING_FACTOR, value);
        }
        if (took & GALLEY_MPI_HAS_SERVERS) {
            ADIOI_Info_get(users_info, GALLEY_HINT_SERVERS, MPI_MAX_INFO_VAL, value, &flag);
            ADIOI_Info_set(fd->info, GALLEY_HINT_SERVERS, value);
        }
        read_cb(fs, users_info);
    }
    ADIOI_Info_set(fd->info, "galley_fork", fs->hint.fork);
    ADIOI_Info_set(fd->info, "galley_cb",
                   fs->cb == ADIOI_GALLEY_CB_AUTO ? "auto"
                   : fs->cb == ADIOI_GALLEY_CB_SERVER ? "server" : "two_phase");
    *error_code = MPI_SUCCESS;
}
