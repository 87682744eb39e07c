/*
 * fault_probe.c -- how an MPI job meets a server it cannot reach.
 *
 *   fault_probe galley:/NAME SIZE [DIR]
 *
 * Every rank opens NAME (collectively) and reads all of its SIZE bytes
 * with one independent call.  With DIR, between the two each rank creates
 * DIR/opened.RANK and waits (up to 120 s) for DIR/go, so that a test can
 * break something while the job holds the file open.  The first call that
 * fails is reported as
 *
 *   rank R: CALL failed after S.SS s: class C (MPI_ERR_IO=C_IO): message
 *
 * and a rank whose calls all succeed prints "rank R: ok".  Exit 0 either
 * way: the test judges the lines.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int rank;

static int report(const char *call, int err, double t0)
{
    if (err == MPI_SUCCESS)
        return 0;
    int cls, len;
    char msg[MPI_MAX_ERROR_STRING];
    MPI_Error_class(err, &cls);
    MPI_Error_string(err, msg, &len);
    printf("rank %d: %s failed after %.2f s: class %d (MPI_ERR_IO=%d): %s\n",
           rank, call, MPI_Wtime() - t0, cls, MPI_ERR_IO, msg);
    fflush(stdout);
    return 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 3 && argc != 4) {
        if (rank == 0)
            fprintf(stderr, "usage: fault_probe galley:/NAME SIZE [DIR]\n");
        MPI_Finalize();
        return 2;
    }
    long long size = atoll(argv[2]);
    char *buf = malloc(size);
    MPI_File fh;
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    double t0 = MPI_Wtime();
    int err = MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_RDONLY,
                            MPI_INFO_NULL, &fh);
    if (!report("open", err, t0)) {
        if (argc == 4) {
            char path[4096];
            snprintf(path, sizeof(path), "%s/opened.%d", argv[3], rank);
            FILE *f = fopen(path, "w");
            if (f)
                fclose(f);
            snprintf(path, sizeof(path), "%s/go", argv[3]);
            for (int i = 0; i < 2400 && access(path, F_OK) != 0; i++)
                usleep(50000);
        }
        t0 = MPI_Wtime();
        err = MPI_File_read_at(fh, 0, buf, (int)size, MPI_BYTE,
                               MPI_STATUS_IGNORE);
        if (!report("read", err, t0)) {
            printf("rank %d: ok\n", rank);
            fflush(stdout);
        }
        MPI_File_close(&fh);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
