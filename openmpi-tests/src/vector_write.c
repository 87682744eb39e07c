/*
 * vector_write.c -- a memory-noncontiguous MPI_File_write_at, as Open MPI's
 * own POSIX path (OMPIO's ufs fs and posix fbtl) does it: one pwritev of
 * the buffer's pieces.  Run under `galley exec -m DIR=/name` on DIR/FILE,
 * the preload must carry that pwritev to Galley.
 *
 *   vector_write FILE
 *
 * Each rank writes 512 ints taken with stride 2 from its buffer (an
 * MPI_Type_vector: 512 pieces of 4 bytes) at byte rank * 2048 of FILE,
 * syncs, and after a barrier every rank reads the whole file back
 * (contiguous reads: pread) and checks every int and the size.  Prints
 * " No Errors" on rank 0 when every rank saw the right bytes.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 512

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 2) {
        if (!rank)
            fprintf(stderr, "usage: vector_write FILE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int *buf = malloc(2 * N * sizeof(int));
    int *all = calloc((size_t)size * N, sizeof(int));
    for (int i = 0; i < 2 * N; i++)
        buf[i] = i % 2 ? -1 : rank * 1000000 + i / 2;
    MPI_Datatype vec;
    MPI_Type_vector(N, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_File fh;
    int rc = MPI_File_open(MPI_COMM_WORLD, argv[1],
                           MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: MPI_File_open failed (%d)\n", rank, rc);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Status st;
    rc = MPI_File_write_at(fh, (MPI_Offset)rank * N * sizeof(int), buf, 1, vec,
                           &st);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: MPI_File_write_at failed (%d)\n", rank, rc);
        bad++;
    }
    if (MPI_File_sync(fh) != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: MPI_File_sync failed\n", rank);
        bad++;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Offset fsize = -1;
    MPI_File_get_size(fh, &fsize);
    if (fsize != (MPI_Offset)size * N * (MPI_Offset)sizeof(int)) {
        fprintf(stderr, "rank %d: file size %lld, expected %lld\n", rank,
                (long long)fsize, (long long)size * N * (long long)sizeof(int));
        bad++;
    }
    rc = MPI_File_read_at(fh, 0, all, size * N, MPI_INT, &st);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: MPI_File_read_at failed (%d)\n", rank, rc);
        bad++;
    }
    int wrong = 0;
    for (int r = 0; r < size; r++)
        for (int i = 0; i < N; i++)
            wrong += all[r * N + i] != r * 1000000 + i;
    if (wrong) {
        fprintf(stderr, "rank %d: %d of %d ints wrong\n", rank, wrong,
                size * N);
        bad++;
    }
    MPI_File_close(&fh);
    int total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (!rank)
        printf(total ? "Found %d errors\n" : " No Errors\n", total);
    MPI_Type_free(&vec);
    free(buf);
    free(all);
    MPI_Finalize();
    return total != 0;
}
