/*
 * finalize.c -- a galley: file left open at MPI_Finalize and closed by a
 * delete callback of an MPI_COMM_SELF attribute, the way HDF5 closes the
 * files an application did not close (testpar's t_pshutdown).
 *
 * The attribute is set before the file is opened, so MPI_Finalize (which
 * deletes MPI_COMM_SELF's attributes newest first) runs the driver's own
 * clean-up callback before this one: the driver must keep its client alive
 * until the last galley: file is closed.
 *
 *   finalize -fname NAME -mode write   every rank writes its block in the
 *            callback, then the file is closed there; rank 0 prints
 *            " No Errors" if every call in the callback succeeded
 *   finalize -fname NAME -mode check   every rank reads the whole file and
 *            checks every block (and the size)
 */
#include "mt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 65536

static MPI_File fh = MPI_FILE_NULL;

static int close_at_finalize(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    int rank, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    unsigned char *b = malloc(BLOCK);
    mt_fill_pat(b, BLOCK, 77, (int64_t)rank * BLOCK);
    MPI_Status st;
    int rc = MPI_File_write_at(fh, (MPI_Offset)rank * BLOCK, b, BLOCK, MPI_BYTE,
                               &st);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: write in the finalize callback failed\n",
                rank);
        bad = 1;
    }
    rc = MPI_File_close(&fh);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: close in the finalize callback failed\n",
                rank);
        bad = 1;
    }
    free(b);
    if (rank == 0 && !bad)
        printf(" No Errors\n");
    fflush(stdout);
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    const char *name = mt_opt("fname", NULL);
    const char *mode = mt_opt("mode", "write");
    int nprocs;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (!name) {
        mt_fail("usage: finalize -fname NAME -mode write|check");
        return mt_finish();
    }
    if (strcmp(mode, "write") == 0) {
        int kv;
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, close_at_finalize, &kv,
                               NULL);
        MPI_Comm_set_attr(MPI_COMM_SELF, kv, NULL);
        if (mt_fresh(MPI_COMM_WORLD, name, MPI_MODE_RDWR | MPI_MODE_CREATE,
                     MPI_INFO_NULL, &fh)) {
            fprintf(stderr, "cannot create %s\n", name);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        MPI_Finalize(); /* the callback writes and closes */
        return 0;
    }
    mt_begin("check");
    MPI_File f;
    if (MT_OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY,
                            MPI_INFO_NULL, &f)) == 0) {
        MPI_Offset size = -1;
        MT_OK(MPI_File_get_size(f, &size));
        if (size != (MPI_Offset)nprocs * BLOCK)
            mt_fail("size %lld, expected %lld", (long long)size,
                    (long long)nprocs * BLOCK);
        int64_t n = (int64_t)nprocs * BLOCK;
        unsigned char *got = malloc(n), *want = malloc(n);
        memset(got, 0xAB, n);
        mt_fill_pat(want, n, 77, 0);
        MPI_Status st;
        MT_OK(MPI_File_read_at(f, 0, got, (int)n, MPI_BYTE, &st));
        mt_compare("blocks written in the finalize callback", got, want, n, 0);
        free(got);
        free(want);
        MT_OK(MPI_File_close(&f));
    }
    return mt_finish();
}
