/*
 * mpi_records -- interleaved records written by independent, strided
 * MPI_File_write calls: the access that ROMIO's ufs driver serves by data
 * sieving (read a window, patch it, write it back) under fcntl locks, so
 * it is only correct where those locks are real.  Built with a site's own
 * MPI (Debian's mpicc.mpich) and run under `galley exec` by posix-tests.
 *
 *   mpi_records FILE [RECSIZE [ROUNDS]]
 *
 * Rank r owns records r, r + n, r + 2n ... (n ranks) of RECSIZE bytes
 * (default 16); its view is a vector of those records, and it writes them
 * in ROUNDS calls (default 8) of 64 records each, independently.  Record k
 * holds the bytes (k * 7 + i) & 0xff for i = 0 .. RECSIZE-1.  Then every
 * rank reads the whole file back contiguously and counts wrong bytes;
 * rank 0 prints " No Errors" or " Found N errors" (and the file stays for
 * the caller to check byte by byte).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define PER_CALL 64

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi_records FILE [RECSIZE [ROUNDS]]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int rec = argc > 2 ? atoi(argv[2]) : 16;
    int rounds = argc > 3 ? atoi(argv[3]) : 8;
    long nrec = (long)PER_CALL * rounds * n;

    MPI_File fh;
    int rc = MPI_File_open(MPI_COMM_WORLD, argv[1],
                           MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "rank %d: open %s: %s\n", rank, argv[1], msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_File_set_size(fh, 0);
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Datatype vec;
    MPI_Type_vector(PER_CALL * rounds, rec, rec * n, MPI_BYTE, &vec);
    MPI_Type_commit(&vec);
    MPI_File_set_view(fh, (MPI_Offset)rank * rec, MPI_BYTE, vec, "native",
                      MPI_INFO_NULL);
    unsigned char *buf = malloc((size_t)rec * PER_CALL);
    for (int r = 0; r < rounds; r++) {
        for (int j = 0; j < PER_CALL; j++) {
            long k = (long)(r * PER_CALL + j) * n + rank;
            for (int i = 0; i < rec; i++)
                buf[j * rec + i] = (unsigned char)((k * 7 + i) & 0xff);
        }
        MPI_Status st;
        MPI_File_write(fh, buf, rec * PER_CALL, MPI_BYTE, &st);
    }
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);

    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    size_t total = (size_t)nrec * rec;
    unsigned char *all = calloc(total, 1);
    MPI_Status st;
    MPI_File_read_at(fh, 0, all, (int)total, MPI_BYTE, &st);
    long errs = 0;
    for (long k = 0; k < nrec; k++)
        for (int i = 0; i < rec; i++)
            if (all[k * rec + i] != (unsigned char)((k * 7 + i) & 0xff)) {
                if (errs < 5)
                    fprintf(stderr, "rank %d: byte %ld of record %ld is %d\n",
                            rank, (long)i, k, all[k * rec + i]);
                errs++;
            }
    long total_errs = 0; /* every rank's exit status says it */
    MPI_Allreduce(&errs, &total_errs, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_File_close(&fh);
    MPI_Type_free(&vec);
    free(buf);
    free(all);
    if (rank == 0) {
        if (total_errs)
            printf(" Found %ld errors\n", total_errs);
        else
            printf(" No Errors\n");
    }
    MPI_Finalize();
    return total_errs != 0;
}
