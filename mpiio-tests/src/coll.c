/*
 * coll.c -- collective I/O: every access shape of cases.c written and read
 * with write_at_all/read_all, write_all/read_at_all_begin+end and
 * write_at_all_begin+end/read_all_begin+end.  The algorithm comes from
 * hints on the command line, so one binary covers them all:
 *
 *   coll -fname NAME -hint galley_cb=server
 *   coll -fname NAME -hint galley_cb=two_phase -hint cb_buffer_size=4096
 *   coll -fname NAME -hint romio_cb_write=disable -hint romio_cb_read=disable
 *
 * sparse_ranks has ranks that take part with a zero count; big_vec crosses
 * stripes and collective buffers.  [-cases a,b | -skip a,b] as noncontig.
 */
#include "cases.h"

int main(int argc, char **argv)
{
    static const int pairs[][2] = {{MT_AT_ALL, MT_ALL},
                                   {MT_ALL, MT_AT_ALL_SPLIT},
                                   {MT_AT_ALL_SPLIT, MT_ALL_SPLIT}};
    mt_init(&argc, &argv);
    mt_run_cases(MPI_COMM_WORLD, "coll", pairs, 3);
    return mt_finish();
}
