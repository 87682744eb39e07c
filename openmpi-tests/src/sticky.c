/*
 * sticky.c -- a write whose error Open MPI 4.1.4's OMPIO drops is not
 * forgotten: the Galley components keep it on the file handle and return
 * it from the next MPI_File_sync (on every rank) and every later
 * non-blocking transfer on that handle.
 *
 *   sticky FILE KILL_CMD RESTART_CMD
 *
 * 4 ranks; block b (64 KiB) of FILE lives on server b % 4 (the test's
 * hints).  Rank 0 runs KILL_CMD (server 1 goes), rank 1 writes its block
 * (on server 1) with a blocking MPI_File_write_at, whose error OMPIO drops;
 * rank 0 runs RESTART_CMD (server 1 is back).  Then:
 *  - rank 1's non-blocking write of a block on server 0 returns MPI_ERR_IO
 *    (the sticky error), the others' non-blocking writes succeed;
 *  - MPI_File_sync returns an error on every rank;
 *  - (rank 1's MPI_File_close: Open MPI drops its result, the component
 *    prints the loss on stderr; the test checks that).
 * Prints " No Errors" when all of that holds.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCK 65536
static char buf[BLOCK];

static int cls_of(int rc)
{
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    return cls;
}

int main(int argc, char **argv)
{
    MPI_File f;
    MPI_Status st;
    MPI_Request q;
    MPI_Info info;
    int rank, nprocs, errs = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc != 4 || nprocs != 4) {
        fprintf(stderr,
                "usage: mpiexec -n 4 sticky FILE KILL_CMD RESTART_CMD\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Info_create(&info);
    MPI_Info_set(info, "striping_factor", "4");
    MPI_Info_set(info, "striping_unit", "65536");
    MPI_Info_set(info, "galley_servers", "0,1,2,3");
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR,
                      info, &f) != MPI_SUCCESS) {
        fprintf(stderr, "open failed while the servers ran\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Info_free(&info);
    MPI_File_set_errhandler(f, MPI_ERRORS_RETURN);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && system(argv[2]) != 0)
        fprintf(stderr, "warning: '%s' failed\n", argv[2]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        int rc = MPI_File_write_at(f, 1 * BLOCK, buf, BLOCK, MPI_BYTE, &st);
        printf("rank 1: blocking write to the dead server returned class %d\n",
               cls_of(rc));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && system(argv[3]) != 0)
        fprintf(stderr, "warning: '%s' failed\n", argv[3]);
    MPI_Barrier(MPI_COMM_WORLD);

    /* a transfer to a live server: rank 1's handle reports its lost write */
    MPI_Offset at = rank == 1 ? 8 * BLOCK : (MPI_Offset)(4 + rank) * BLOCK;
    int rc = MPI_File_iwrite_at(f, at, buf, BLOCK, MPI_BYTE, &q);
    if (rc == MPI_SUCCESS)
        rc = MPI_Wait(&q, &st);
    int want = rank == 1 ? MPI_ERR_IO : MPI_SUCCESS;
    if (cls_of(rc) != want) {
        printf("rank %d: iwrite_at + wait returned class %d, expected %d\n",
               rank, cls_of(rc), want);
        errs++;
    }
    rc = MPI_File_sync(f);
    if (rc == MPI_SUCCESS) {
        printf("rank %d: MPI_File_sync reported success after rank 1's write "
               "was lost\n",
               rank);
        errs++;
    }
    /* Open MPI 4.1.4 returns MPI_SUCCESS from MPI_File_close whatever the
     * component says: rank 1's close says it on stderr (the test checks) */
    MPI_File_close(&f);
    int all = 0;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all ? " Found %d errors\n" : " No Errors\n", all);
    MPI_Finalize();
    return 0;
}
