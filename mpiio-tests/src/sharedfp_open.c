/*
 * sharedfp_open.c -- many communicators open one file at the same time.
 *
 * Every open resets the file's shared file pointer to zero.  Here each
 * rank opens the file over and over on a communicator of its own
 * (MPI_COMM_SELF, or a pair of ranks on odd rounds) while the others do
 * the same and write through the shared pointer in between: every
 * write_shared and get_position_shared must succeed with a position >= 0
 * (a reset torn by a concurrent open could leave the pointer negative,
 * after which every access failed).  At the end one open on
 * MPI_COMM_WORLD starts at 0 and a write_shared by every rank leaves the
 * pointer at exactly the bytes written.
 *
 *   sharedfp_open -fname NAME [-rounds N] [-hint K=V]...
 */
#include "mt.h"

#include <stdlib.h>

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    int rounds = atoi(mt_opt("-rounds", "40"));
    char name[MT_NAME_MAX];
    mt_name(name, "shfp");
    MPI_File fh;
    MPI_Status st;
    mt_begin("concurrent opens");
    if (mt_fresh(MPI_COMM_WORLD, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh) == 0)
        MT_OK(MPI_File_close(&fh));
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, mt_rank / 2, mt_rank, &pair);
    char rec[8] = "abcdefgh";
    for (int r = 0; r < rounds; r++) {
        MPI_Comm comm = r % 2 ? pair : MPI_COMM_SELF;
        /* after a failure go on: the pair's collective calls must match */
        if (MT_OK(MPI_File_open(comm, name, MPI_MODE_RDWR, mt_info, &fh)))
            continue;
        MPI_Offset pos = -1;
        if (MT_OK(MPI_File_write_shared(fh, rec, 8, MPI_BYTE, &st)) ||
            MT_OK(MPI_File_get_position_shared(fh, &pos))) {
            MPI_File_close(&fh);
            continue;
        }
        if (pos < 0) /* another open may have reset it to 0 meanwhile */
            mt_fail("round %d: shared position %lld", r, (long long)pos);
        MT_OK(MPI_File_close(&fh));
    }
    MPI_Comm_free(&pair);

    mt_begin("a fresh open starts at zero");
    MPI_Barrier(MPI_COMM_WORLD);
    if (MT_OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDWR, mt_info,
                            &fh)) == 0) {
        MPI_Offset pos = -1;
        MT_OK(MPI_File_get_position_shared(fh, &pos));
        if (pos != 0)
            mt_fail("shared position %lld after open, expected 0",
                    (long long)pos);
        MPI_Barrier(MPI_COMM_WORLD);
        MT_OK(MPI_File_write_shared(fh, rec, 8, MPI_BYTE, &st));
        MPI_Barrier(MPI_COMM_WORLD);
        MT_OK(MPI_File_get_position_shared(fh, &pos));
        if (pos != 8 * (MPI_Offset)mt_nprocs)
            mt_fail("shared position %lld, expected %lld", (long long)pos,
                    8 * (long long)mt_nprocs);
        MT_OK(MPI_File_close(&fh));
    }
    mt_cleanup(MPI_COMM_WORLD, name);
    return mt_finish();
}
