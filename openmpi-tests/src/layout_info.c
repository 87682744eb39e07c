/*
 * layout_info.c -- the layout hints of a new galley: file and what
 * MPI_File_get_info reports, under Open MPI.
 *
 * Creates FILE with the hints K=V given, writes 100000 bytes collectively,
 * and prints (rank 0) what get_info reports:
 *   INFO striping_factor=F striping_unit=U galley_fork=K galley_replicas=R
 * then reopens it with striping_factor=1, striping_unit=12345 and
 * galley_replicas=3 (which
 * an existing file ignores) and prints the INFO line again.  Every rank
 * must report the same values; exits 1 otherwise.
 *
 *   layout_info FILE [K=V]...
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void report(MPI_File f, int rank)
{
    char line[4 * MPI_MAX_INFO_VAL + 80], v[4][MPI_MAX_INFO_VAL + 1];
    static const char *keys[4] = {"striping_factor", "striping_unit",
                                  "galley_fork", "galley_replicas"};
    MPI_Info info;
    MPI_File_get_info(f, &info);
    for (int i = 0; i < 4; i++) {
        int flag = 0;
        MPI_Info_get(info, keys[i], MPI_MAX_INFO_VAL, v[i], &flag);
        if (!flag)
            strcpy(v[i], "-");
    }
    MPI_Info_free(&info);
    snprintf(line, sizeof(line),
             "INFO striping_factor=%s striping_unit=%s galley_fork=%s "
             "galley_replicas=%s",
             v[0], v[1], v[2], v[3]);
    char first[sizeof(line)];
    memcpy(first, line, sizeof(line));
    MPI_Bcast(first, sizeof(first), MPI_CHAR, 0, MPI_COMM_WORLD);
    int same = !strcmp(first, line), all;
    MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all) {
        printf("rank %d reports '%s', rank 0 '%s'\n", rank, line, first);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0)
        printf("%s\n", line);
}

int main(int argc, char **argv)
{
    int rank, nprocs;
    MPI_File f;
    MPI_Info info;
    static char buf[100000];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Info_create(&info);
    for (int i = 2; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq)
            continue;
        *eq = 0;
        MPI_Info_set(info, argv[i], eq + 1);
    }
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR,
                      info, &f)) {
        printf("open failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int share = sizeof(buf) / nprocs;
    memset(buf, 'a' + rank, sizeof(buf));
    MPI_File_write_at_all(f, (MPI_Offset)rank * share, buf,
                          rank == nprocs - 1 ? (int)sizeof(buf) - rank * share
                                             : share,
                          MPI_BYTE, MPI_STATUS_IGNORE);
    report(f, rank);
    MPI_File_close(&f);
    MPI_Info_free(&info);

    MPI_Info_create(&info);
    MPI_Info_set(info, "striping_factor", "1");
    MPI_Info_set(info, "striping_unit", "12345");
    MPI_Info_set(info, "galley_replicas", "3");
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_RDWR, info, &f);
    report(f, rank);
    MPI_File_close(&f);
    MPI_Info_free(&info);
    MPI_Finalize();
    return 0;
}
