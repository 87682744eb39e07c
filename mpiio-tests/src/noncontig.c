/*
 * noncontig.c -- independent I/O of non-contiguous data: every access
 * shape of cases.c (vector, hvector, indexed, hindexed, indexed_block,
 * struct, subarray C/Fortran, darray block/cyclic, zero-length blocks,
 * resized types with holes, negative lower bounds in memory, a filetype
 * with a non-zero lower bound, multi-int etypes, nested types), written
 * with explicit offsets and read back through the individual pointer, and
 * the other way round, all in one file emptied by set_size(0) before each
 * run.  Each run checks the whole file against the image MPI_Pack/
 * MPI_Unpack predict (and its size), the data read back, and that no byte
 * of a memory hole was touched.
 *
 *   noncontig -fname NAME [-cases a,b | -skip a,b] [-hint K=V]...
 */
#include "cases.h"

int main(int argc, char **argv)
{
    static const int pairs[][2] = {{MT_AT, MT_PTR}, {MT_PTR, MT_AT}};
    mt_init(&argc, &argv);
    mt_run_cases(MPI_COMM_WORLD, "nc", pairs, 2);
    return mt_finish();
}
