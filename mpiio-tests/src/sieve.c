/*
 * sieve.c -- independent reads through a strided view, as the driver
 * chooses to read them (adio_galley/ad_galley_read.c): listed, or sieved
 * by ROMIO over contiguous reads.  Rank 0 writes a file of -span bytes
 * (the test pattern, one contiguous call); then every rank sets a view of
 * -piece-byte blocks every 4 * piece bytes (rank r owns blocks r, r + 4,
 * ...: the interleaving of mpiio_bench's strided rows), reads its blocks
 * in one call into contiguous memory and checks every byte and the count;
 * then the same again where the file ends in the middle of the view (the
 * blocks past the end read as zeros, as Galley promises for bytes no one
 * wrote).  Which way the reads went is seen from outside (test_mpiio.py:
 * the servers' read counters).
 *
 *   sieve -fname NAME [-piece BYTES] [-span BYTES] [-hint K=V]...
 */
#include "mt.h"

#include <stdlib.h>
#include <string.h>

static void read_view(MPI_File fh, int64_t piece, int64_t span, int64_t size)
{
    MPI_Datatype vec, ft;
    int64_t nblk = span / (4 * piece);
    MPI_Type_vector(1, (int)piece, (int)(4 * piece), MPI_BYTE, &vec);
    MPI_Type_create_resized(vec, 0, 4 * piece, &ft);
    MPI_Type_commit(&ft);
    MT_OK(MPI_File_set_view(fh, mt_rank % 4 * piece, MPI_BYTE, ft, "native",
                            MPI_INFO_NULL));
    unsigned char *got = malloc(nblk * piece);
    memset(got, MT_SENTINEL, nblk * piece);
    MPI_Status st;
    int cnt = -1;
    MT_OK(MPI_File_read_at(fh, 0, got, (int)(nblk * piece), MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    if (cnt != nblk * piece)
        mt_fail("read %d bytes, expected %lld", cnt, (long long)(nblk * piece));
    int64_t bad = 0;
    for (int64_t b = 0; b < nblk; b++)
        for (int64_t i = 0; i < piece; i++) {
            int64_t at = b * 4 * piece + mt_rank % 4 * piece + i;
            unsigned char want = at < size ? mt_pat(7, at) : 0;
            if (got[b * piece + i] != want && bad++ < 5)
                mt_fail("file byte %lld: %u, expected %u", (long long)at,
                        got[b * piece + i], want);
        }
    free(got);
    MPI_Type_free(&ft);
    MPI_Type_free(&vec);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    int64_t piece = atoll(mt_opt("piece", "16"));
    int64_t span = atoll(mt_opt("span", "1048576"));
    char name[MT_NAME_MAX];
    mt_name(name, "sieve");
    MPI_File fh;
    if (mt_fresh(MPI_COMM_WORLD, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh) ==
        0) {
        mt_begin("whole file");
        unsigned char *all = malloc(span);
        mt_fill_pat(all, span, 7, 0);
        if (mt_rank == 0)
            MT_OK(MPI_File_write_at(fh, 0, all, (int)span, MPI_BYTE,
                                    MPI_STATUS_IGNORE));
        MPI_Barrier(MPI_COMM_WORLD);
        read_view(fh, piece, span, span);
        mt_begin("past the end");
        MT_OK(MPI_File_set_size(fh, span / 2 + piece / 2));
        read_view(fh, piece, span, span / 2 + piece / 2);
        free(all);
        MT_OK(MPI_File_close(&fh));
        mt_cleanup(MPI_COMM_WORLD, name);
    }
    return mt_finish();
}
