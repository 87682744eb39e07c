/*
 * mdbench_mpi.c -- metadata operations through MPI-IO on galley: beside
 * ufs: (a local directory), in one run: bench/mdbench's phases as an MPI
 * program makes those calls.
 *
 *   mpiexec -n 4 mdbench_mpi -g galley:/PREFIX -u ufs:/LOCALDIR [-n FILES]
 *                            [-r ROUNDS]
 *
 * Every rank makes FILES files of its own (MPI_COMM_SELF), phase by phase
 * between barriers:
 *
 *   create      MPI_File_open(CREATE | EXCL | WRONLY) + MPI_File_close
 *   open/close  MPI_File_open(RDONLY) + MPI_File_get_size (checked: 0) +
 *               MPI_File_close
 *   remove      MPI_File_delete (checked: a removed name no longer opens)
 *
 * Rates are operations per second over all ranks (the slowest rank's
 * time), the median of ROUNDS rounds.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { PH_CREATE, PH_OPEN, PH_REMOVE, NPHASE };
static const char *ph_name[NPHASE] = {"create", "open/close", "remove"};

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void die(const char *what, const char *path, int err)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(err, msg, &len);
    fprintf(stderr, "mdbench_mpi: %s %s: %s\n", what, path, msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void phase(int ph, const char *base, int rank, int round, int n)
{
    char path[4096];
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "%s/m%d.%d.f%d", base, round, rank, i);
        MPI_File fh;
        int err;
        if (ph == PH_CREATE) {
            err =
                MPI_File_open(MPI_COMM_SELF, path,
                              MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY,
                              MPI_INFO_NULL, &fh);
            if (err == MPI_SUCCESS)
                err = MPI_File_close(&fh);
        } else if (ph == PH_OPEN) {
            err = MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY,
                                MPI_INFO_NULL, &fh);
            MPI_Offset size = -1;
            if (err == MPI_SUCCESS) {
                err = MPI_File_get_size(fh, &size);
                int k = MPI_File_close(&fh);
                if (err == MPI_SUCCESS)
                    err = k;
            }
            if (err == MPI_SUCCESS && size != 0)
                die("size not 0:", path, MPI_ERR_IO);
        } else {
            err = MPI_File_delete(path, MPI_INFO_NULL);
            if (err == MPI_SUCCESS && i == n - 1 &&
                MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY,
                              MPI_INFO_NULL, &fh) == MPI_SUCCESS)
                die("still opens after delete:", path, MPI_ERR_IO);
        }
        if (err != MPI_SUCCESS)
            die(ph_name[ph], path, err);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *g = "galley:/mdbench", *u = NULL;
    int n = 1000, rounds = 3, c;
    while ((c = getopt(argc, argv, "g:u:n:r:")) != -1) {
        if (c == 'g')
            g = optarg;
        else if (c == 'u')
            u = optarg;
        else if (c == 'n')
            n = atoi(optarg);
        else if (c == 'r')
            rounds = atoi(optarg);
        else
            MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (!u || n < 1 || rounds < 1) {
        if (!rank)
            fprintf(stderr, "usage: mdbench_mpi -g galley:/PREFIX -u "
                            "ufs:/LOCALDIR [-n FILES] [-r ROUNDS]\n");
        MPI_Finalize();
        return 2;
    }
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    const char *base[2] = {g, u};
    double *rate = calloc((size_t)rounds * 2 * NPHASE, sizeof(*rate));
    for (int round = 0; round < rounds; round++)
        for (int b = 0; b < 2; b++)
            for (int ph = 0; ph < NPHASE; ph++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                phase(ph, base[b], rank, round, n);
                double t = MPI_Wtime() - t0, tmax;
                MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0,
                           MPI_COMM_WORLD);
                rate[(b * NPHASE + ph) * rounds + round] =
                    (double)size * n / tmax;
            }
    if (!rank) {
        printf("mdbench_mpi: %d ranks x %d files, median of %d rounds: %s "
               "beside %s\n",
               size, n, rounds, g, u);
        printf("%-12s %14s %14s %8s\n", "operation", "galley op/s", "ufs op/s",
               "ratio");
        for (int ph = 0; ph < NPHASE; ph++) {
            double *gv = rate + (0 * NPHASE + ph) * rounds;
            double *uv = rate + (1 * NPHASE + ph) * rounds;
            qsort(gv, (size_t)rounds, sizeof(double), cmp_d);
            qsort(uv, (size_t)rounds, sizeof(double), cmp_d);
            double gm = gv[rounds / 2], um = uv[rounds / 2];
            printf("%-12s %14.0f %14.0f %7.3fx\n", ph_name[ph], gm, um,
                   gm / um);
        }
    }
    free(rate);
    MPI_Finalize();
    return 0;
}
