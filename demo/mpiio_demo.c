/*
 * mpiio_demo.c -- the MPI-IO part of `./quickstart demo`.
 *
 * Every rank owns a (BLOCK,BLOCK) tile of a global N x N array of int32
 * (value = global row * N + global column).  The program writes the array
 * collectively through a subarray file view to FILE, then each rank reads
 * a different, strided selection back independently (every 7th row of the
 * whole array, through a vector view) and checks every value, and finally
 * rank 0 prints the layout the file got (MPI_File_get_info).
 *
 * usage: mpiexec -n P mpiio_demo galley:/demo/array [N]
 * Exit status 0 and "No Errors" when every value read back is right.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs, errs = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: %s FILE [N]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    const char *path = argv[1];
    int dims[2] = {0, 0};
    MPI_Dims_create(nprocs, 2, dims);
    int n = argc > 2 ? atoi(argv[2]) : 512;
    n -= n % (dims[0] * dims[1]); /* divisible by both grid sides */
    int ln0 = n / dims[0], ln1 = n / dims[1];
    int r0 = rank / dims[1], r1 = rank % dims[1];

    int *tile = malloc(sizeof(int) * ln0 * ln1);
    for (int i = 0; i < ln0; i++)
        for (int j = 0; j < ln1; j++)
            tile[i * ln1 + j] = (r0 * ln0 + i) * n + (r1 * ln1 + j);

    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "striping_unit", "4096");
    MPI_File fh;
    if (rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    int err = MPI_File_open(MPI_COMM_WORLD, path,
                            MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
    if (err != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(err, msg, &len);
        fprintf(stderr, "rank %d: cannot open %s: %s\n", rank, path, msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    /* collective write of the tiles through a subarray view */
    int gsizes[2] = {n, n}, lsizes[2] = {ln0, ln1},
        starts[2] = {r0 * ln0, r1 * ln1};
    MPI_Datatype sub;
    MPI_Type_create_subarray(2, gsizes, lsizes, starts, MPI_ORDER_C, MPI_INT,
                             &sub);
    MPI_Type_commit(&sub);
    MPI_File_set_view(fh, 0, MPI_INT, sub, "native", MPI_INFO_NULL);
    double t0 = MPI_Wtime();
    MPI_File_write_all(fh, tile, ln0 * ln1, MPI_INT, MPI_STATUS_IGNORE);
    double tw = MPI_Wtime() - t0;
    MPI_File_sync(fh);

    /* independent strided read: every 7th row of the whole array, starting
     * at row `rank` */
    int nrows = 0;
    for (int r = rank; r < n; r += 7)
        nrows++;
    int *rows = malloc(sizeof(int) * (size_t)n * (nrows ? nrows : 1));
    MPI_Datatype vec;
    MPI_Type_vector(nrows, n, 7 * n, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_File_set_view(fh, (MPI_Offset)rank * n * sizeof(int), MPI_INT, vec,
                      "native", MPI_INFO_NULL);
    t0 = MPI_Wtime();
    MPI_File_read(fh, rows, nrows * n, MPI_INT, MPI_STATUS_IGNORE);
    double tr = MPI_Wtime() - t0;
    for (int k = 0; k < nrows; k++)
        for (int j = 0; j < n; j++) {
            int want = (rank + 7 * k) * n + j;
            if (rows[k * n + j] != want && errs++ < 5)
                fprintf(stderr, "rank %d: row %d col %d: got %d want %d\n",
                        rank, rank + 7 * k, j, rows[k * n + j], want);
        }

    MPI_Offset size;
    MPI_File_get_size(fh, &size);
    MPI_Info used;
    MPI_File_get_info(fh, &used);
    char unit[64] = "?", factor[64] = "?";
    int flag;
    MPI_Info_get(used, "striping_unit", sizeof(unit) - 1, unit, &flag);
    MPI_Info_get(used, "striping_factor", sizeof(factor) - 1, factor, &flag);
    MPI_File_close(&fh);

    int total = 0;
    MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("mpiio_demo: %d ranks on a %dx%d grid, %dx%d int32 array, "
               "file %s\n",
               nprocs, dims[0], dims[1], n, n, path);
        printf("  layout in force: striping_factor=%s striping_unit=%s, "
               "size %lld bytes\n",
               factor, unit, (long long)size);
        printf("  collective subarray write: %.1f MB/s; strided read of every "
               "7th row: %.1f MB/s (rank 0)\n",
               (double)n * n * 4 / 1e6 / tw, (double)nrows * n * 4 / 1e6 / tr);
        printf(total ? "  %d wrong values\n" : "  No Errors\n", total);
    }
    MPI_Info_free(&info);
    MPI_Info_free(&used);
    MPI_Type_free(&sub);
    MPI_Type_free(&vec);
    free(tile);
    free(rows);
    MPI_Finalize();
    return total ? 1 : 0;
}
