/*
 * abi.c -- built with Debian's MPICH (mpicc.mpich, linked to libmpich.so.12)
 * and run unchanged on our MPICH through LD_LIBRARY_PATH: shows that our
 * build is ABI compatible and that a binary built elsewhere gets the galley:
 * driver.  Also builds with our mpicc, as a control.
 *
 * Writes with write_at_all, reads back through a strided view, checks the
 * driver is there (get_info has galley_cb on a galley: file) and prints
 * MPI_Get_library_version.
 *
 *   abi -fname NAME [-hint K=V]...
 */
#include "mt.h"

#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    char name[MT_NAME_MAX], ver[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_File fh;
    MPI_Status st;
    mt_init(&argc, &argv);
    MPI_Get_library_version(ver, &len);
    if (mt_rank == 0) {
        char *nl = strchr(ver, '\n');
        if (nl)
            *nl = 0;
        printf("library: %s\n", ver);
    }
    mt_begin("write_at_all, strided read");
    mt_name(name, "abi");
    if (mt_fresh(MPI_COMM_WORLD, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh))
        return mt_finish();
    int P = mt_nprocs, r = mt_rank, v[100], back[100];
    for (int i = 0; i < 100; i++)
        v[i] = r * 1000 + i;
    MT_OK(MPI_File_write_at_all(fh, (MPI_Offset)400 * r, v, 100, MPI_INT, &st));
    mt_sync_barrier(fh, MPI_COMM_WORLD);
    /* every 4th int of the next rank's block */
    int q = (r + 1) % P;
    MPI_Datatype vec;
    MPI_Type_vector(25, 1, 4, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MT_OK(MPI_File_set_view(fh, (MPI_Offset)400 * q, MPI_INT, vec, "native",
                            MPI_INFO_NULL));
    MT_OK(MPI_File_read_all(fh, back, 25, MPI_INT, &st));
    for (int i = 0; i < 25; i++)
        if (back[i] != q * 1000 + 4 * i) {
            mt_fail("element %d of rank %d's block: %d, expected %d", 4 * i, q,
                    back[i], q * 1000 + 4 * i);
            break;
        }
    if (!strncmp(mt_fname, "galley:", 7)) {
        MPI_Info used;
        char val[MPI_MAX_INFO_VAL + 1];
        int flag = 0;
        MT_OK(MPI_File_get_info(fh, &used));
        MPI_Info_get(used, "galley_cb", MPI_MAX_INFO_VAL, val, &flag);
        if (!flag)
            mt_fail(
                "get_info of a galley: file has no galley_cb: not our driver?");
        MPI_Info_free(&used);
    }
    MPI_Type_free(&vec);
    MT_OK(MPI_File_close(&fh));
    mt_cleanup(MPI_COMM_WORLD, name);
    return mt_finish();
}
