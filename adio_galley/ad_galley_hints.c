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
 * (what parses: galley_mpi_common.h, shared with the Open MPI plug-ins);
 * MPI_File_get_info reports what is in force (the real layout after open).
 */
#include "ad_galley.h"
#include "adio_extern.h"
#include "hint_fns.h"
#include "galley_mpi_common.h"

#include <stdlib.h>
#include <string.h>

void ADIOI_GALLEY_SetInfo(ADIO_File fd, MPI_Info users_info, int *error_code)
{
    ADIOI_GALLEY_fs *fs = ADIOI_GALLEY_State(fd);
    char value[MPI_MAX_INFO_VAL + 1];
    int flag;

    ADIOI_GEN_SetInfo(fd, users_info, error_code);
    if (*error_code != MPI_SUCCESS || !fs)
        return;

    if (users_info != MPI_INFO_NULL) {
        ADIOI_Info_get(users_info, GALLEY_HINT_STRIPING_FACTOR, MPI_MAX_INFO_VAL, value,
                       &flag);
        if (flag && galley_hint_striping_factor(value) > 0) {
            fd->hints->striping_factor = galley_hint_striping_factor(value);
            ADIOI_Info_set(fd->info, GALLEY_HINT_STRIPING_FACTOR, value);
        }
        ADIOI_Info_get(users_info, GALLEY_HINT_SERVERS, MPI_MAX_INFO_VAL, value, &flag);
        if (flag) {
            int tmp[GFS_MAX_SUBFILES];
            /* a server the cluster does not have makes the list a bad value
             * too (every rank decides alike: same cluster file) */
            int nserv = ADIOI_GALLEY_Init() == 0 ? gfs_num_servers() : GFS_MAX_SERVERS;
            int n = galley_hint_servers(value, nserv, tmp);
            if (n > 0) {
                fs->nservers = n;
                memcpy(fs->servers, tmp, sizeof(int) * n);
                ADIOI_Info_set(fd->info, GALLEY_HINT_SERVERS, value);
            }
        }
        /* ROMIO's default cb_config_list (*:1) leaves one aggregator per
         * host; our collective wants one per subfile unless told */
        ADIOI_Info_get(users_info, "cb_nodes", MPI_MAX_INFO_VAL, value, &flag);
        if (flag && atoi(value) > 0)
            fs->cb_nodes = atoi(value);
        ADIOI_Info_get(users_info, GALLEY_HINT_FORK, MPI_MAX_INFO_VAL, value, &flag);
        if (flag && galley_hint_fork_ok(value))
            ADIOI_Strncpy(fs->fork, value, sizeof(fs->fork));
        /* galley_layout: striped, local or template:NAME (checked at create) */
        ADIOI_Info_get(users_info, GALLEY_HINT_LAYOUT, MPI_MAX_INFO_VAL, value, &flag);
        if (flag && galley_hint_layout_ok(value, sizeof(fs->new_layout)))
            ADIOI_Strncpy(fs->new_layout, value, sizeof(fs->new_layout));
        /* galley_checksum: crc32c or none, for a file this open creates */
        ADIOI_Info_get(users_info, GALLEY_HINT_CHECKSUM, MPI_MAX_INFO_VAL, value, &flag);
        if (flag && galley_hint_checksum_ok(value))
            ADIOI_Strncpy(fs->new_checksum, value, sizeof(fs->new_checksum));
        ADIOI_Info_get(users_info, GALLEY_HINT_REPLICAS, MPI_MAX_INFO_VAL, value, &flag);
        if (flag && galley_hint_replicas(value) > 0)
            fs->replicas = galley_hint_replicas(value);
        ADIOI_Info_get(users_info, "galley_cb", MPI_MAX_INFO_VAL, value, &flag);
        if (flag && !strcmp(value, "auto"))
            fs->cb = ADIOI_GALLEY_CB_AUTO;
        else if (flag && !strcmp(value, "server"))
            fs->cb = ADIOI_GALLEY_CB_SERVER;
        else if (flag && !strcmp(value, "two_phase"))
            fs->cb = ADIOI_GALLEY_CB_TWO_PHASE;
    }
    ADIOI_Info_set(fd->info, "galley_fork", fs->fork);
    ADIOI_Info_set(fd->info, "galley_cb",
                   fs->cb == ADIOI_GALLEY_CB_AUTO ? "auto"
                   : fs->cb == ADIOI_GALLEY_CB_SERVER ? "server" : "two_phase");
    *error_code = MPI_SUCCESS;
}
