/*
 * dead_servers.c -- the servers of an open galley: file go away (rank 0
 * runs CMD, which stops them) and every kind of access still returns
 * within the Galley timeout:
 *  - a non-blocking write completes with MPI_ERR_IO;
 *  - blocking independent writes and reads come back with a short count
 *    (Open MPI 4.1.4's OMPIO drops the error code of its fbtl in blocking
 *    calls, so the count is all that can tell; see openmpi-tests/README.md);
 *  - close returns.
 * Prints " No Errors" when all of that holds.
 *
 *   dead_servers FILE CMD
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static char buf[1 << 16];

int main(int argc, char **argv)
{
    MPI_File f;
    MPI_Status st;
    MPI_Request q;
    int rank, count, cls, errs = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 3) {
        fprintf(stderr, "usage: dead_servers FILE CMD\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR,
                      MPI_INFO_NULL, &f) != MPI_SUCCESS) {
        fprintf(stderr, "open failed while the servers ran\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_File_set_errhandler(f, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && system(argv[2]) != 0)
        fprintf(stderr, "warning: '%s' failed\n", argv[2]);
    MPI_Barrier(MPI_COMM_WORLD);

    int rc = MPI_File_iwrite_at(f, rank * (MPI_Offset)sizeof buf, buf, 100,
                                MPI_BYTE, &q);
    if (rc == MPI_SUCCESS)
        rc = MPI_Wait(&q, &st);
    MPI_Error_class(rc, &cls);
    if (cls != MPI_ERR_IO) {
        printf("rank %d: iwrite_at + wait returned class %d, expected "
               "MPI_ERR_IO\n",
               rank, cls);
        errs++;
    }
    rc = MPI_File_write_at(f, rank * (MPI_Offset)sizeof buf, buf, sizeof buf,
                           MPI_BYTE, &st);
    MPI_Get_count(&st, MPI_BYTE, &count);
    if (rc == MPI_SUCCESS && count == (int)sizeof buf) {
        printf("rank %d: write_at to dead servers reported success and a full "
               "count\n",
               rank);
        errs++;
    }
    rc = MPI_File_read_at(f, 0, buf, sizeof buf, MPI_BYTE, &st);
    MPI_Get_count(&st, MPI_BYTE, &count);
    if (rc == MPI_SUCCESS && count == (int)sizeof buf) {
        printf("rank %d: read_at from dead servers reported success and a full "
               "count\n",
               rank);
        errs++;
    }
    MPI_File_close(&f);
    int all = 0;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all ? " Found %d errors\n" : " No Errors\n", all);
    MPI_Finalize();
    return 0;
}
