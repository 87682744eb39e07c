/*
 * installed_ckpt.c -- a user's program of the array library, built by
 * test_arrays.py against the INSTALLED library only:
 *
 *   mpicc installed_ckpt.c $(pkg-config --cflags --libs galley_array)
 *   mpiexec -n 2 ./a.out galley:/some/name
 *
 * It checkpoints a 48x40 array of int64 (BLOCK,* over the processes) at
 * step 7, then restarts it into a second array distributed the other way
 * (*,BLOCK) and checks every element and the step number.  Prints
 * "installed_ckpt: ok N elements" on rank 0; exits 1 on any difference.
 */
#include <galley_array.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define ROWS 48
#define COLS 40

static int64_t value(int64_t i, int64_t j)
{
    return i * 1000003 + j * 7 + 11;
}

static void check_rc(int rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "installed_ckpt: %s: %s: %s\n", what, ga_strerror(rc),
                ga_errmsg());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* A ROWS x COLS int64 array laid out in memory as `mem`. */
static ga_array *make_array(const char *mem)
{
    static const int64_t dims[2] = {ROWS, COLS};
    ga_layout l;
    ga_array_spec spec = {0};
    ga_array *a;

    check_rc(ga_layout_parse(mem, &l), "ga_layout_parse");
    spec.name = "field";
    spec.rank = 2;
    spec.dims = dims;
    spec.esize = sizeof(int64_t);
    spec.mem = &l;
    check_rc(ga_array_create(MPI_COMM_WORLD, &spec, &a), "ga_array_create");
    return a;
}

int main(int argc, char **argv)
{
    int64_t count[2], step = -1, bad = 0, n = 0, total = 0, i, j;
    ga_array *a, *b;
    ga_group *g;
    int64_t *p;
    int rank;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 2) {
        fprintf(stderr, "usage: installed_ckpt PATH\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    a = make_array("BLOCK,*");
    p = ga_array_alloc(a);
    ga_array_local(a, count, NULL);
    for (i = 0; i < count[0]; i++)
        for (j = 0; j < count[1]; j++)
            p[i * count[1] + j] = value(ga_array_global_index(a, 0, i),
                                        ga_array_global_index(a, 1, j));
    check_rc(ga_group_create(MPI_COMM_WORLD, GA_CHECKPOINT, argv[1], GA_CREATE,
                             MPI_INFO_NULL, &g),
             "ga_group_create");
    check_rc(ga_group_insert(g, a), "ga_group_insert");
    check_rc(ga_checkpoint(g, 7), "ga_checkpoint");
    check_rc(ga_group_free(g), "ga_group_free");

    b = make_array("*,BLOCK");
    p = ga_array_alloc(b);
    ga_array_local(b, count, NULL);
    check_rc(ga_group_create(MPI_COMM_WORLD, GA_RESTART, argv[1], 0,
                             MPI_INFO_NULL, &g),
             "ga_group_create (restart)");
    check_rc(ga_group_insert(g, b), "ga_group_insert (restart)");
    check_rc(ga_restart(g, &step), "ga_restart");
    check_rc(ga_group_free(g), "ga_group_free (restart)");
    for (i = 0; i < count[0]; i++)
        for (j = 0; j < count[1]; j++, n++)
            if (p[i * count[1] + j] != value(ga_array_global_index(b, 0, i),
                                             ga_array_global_index(b, 1, j)))
                bad++;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&n, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (bad || step != 7 || total != ROWS * COLS)
            printf("installed_ckpt: FAILED: %lld of %lld elements differ, "
                   "step %lld\n",
                   (long long)bad, (long long)total, (long long)step);
        else
            printf("installed_ckpt: ok %lld elements\n", (long long)total);
    }
    ga_array_free(a);
    ga_array_free(b);
    MPI_Finalize();
    return bad || step != 7 || total != ROWS * COLS;
}
