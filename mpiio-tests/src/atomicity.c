/*
 * atomicity.c -- MPI_File_set_atomicity(fh, 1): concurrent overlapping
 * writes, readers never see a mix.
 *
 * Even ranks write a whole region (16 KiB, spread over many stripes and
 * servers: the file is created with striping_unit=1024 unless -hint says
 * otherwise) filled with one value per call; odd ranks read the region at
 * the same time and check that every read returns a single value.
 * Rounds: contiguous write_at/read_at; non-blocking iwrite_at/iread_at;
 * a strided view (every other 512-byte block) with a memory type that has
 * holes.  At the end the region holds one writer's value throughout.
 * With one rank, the rank alternates writes and reads.
 *
 *   atomicity -fname NAME [-iter N] [-hint K=V]...
 */
#include "mt.h"

#include <stdlib.h>
#include <string.h>

#define REGION 16384

static int uniform(const unsigned char *b, int n, int *where)
{
    for (int i = 1; i < n; i++)
        if (b[i] != b[0]) {
            *where = i;
            return 0;
        }
    return 1;
}

static void report_mix(const char *what, int it, const unsigned char *b, int n,
                       int at)
{
    int hist[256] = {0}, kinds = 0;
    for (int i = 0; i < n; i++)
        if (!hist[b[i]]++)
            kinds++;
    mt_fail("%s iteration %d: a read saw %d different values (byte 0 = %d, "
            "byte %d = %d): "
            "a write was not atomic",
            what, it, kinds, b[0], at, b[at]);
}

int main(int argc, char **argv)
{
    char name[MT_NAME_MAX];
    MPI_File fh;
    MPI_Status st;
    mt_init(&argc, &argv);
    int r = mt_rank, P = mt_nprocs, iter = atoi(mt_opt("iter", "30"));
    int writer = P == 1 || r % 2 == 0;
    unsigned char *w = malloc(REGION), *rd = malloc(REGION);

    mt_name(name, "atomic");
    MPI_Info hints;
    MPI_Info_create(&hints);
    int flag;
    char v[64];
    MPI_Info_get(mt_info, "striping_unit", sizeof(v) - 1, v, &flag);
    if (!flag)
        MPI_Info_set(hints, "striping_unit", "1024");
    if (mt_fresh(MPI_COMM_WORLD, name, MPI_MODE_RDWR, hints, &fh))
        return mt_finish();
    MPI_Info_free(&hints);

    mt_begin("set/get atomicity");
    MT_OK(MPI_File_set_size(fh, REGION));
    MT_OK(MPI_File_set_atomicity(fh, 1));
    int atom = 0;
    MT_OK(MPI_File_get_atomicity(fh, &atom));
    if (!atom)
        mt_fail("get_atomicity returned false after set_atomicity(true)");
    MPI_Barrier(MPI_COMM_WORLD);

    /* ---- contiguous and non-blocking rounds ---- */
    for (int round = 0; round < 2; round++) {
        const char *what =
            round == 0 ? "write_at/read_at" : "iwrite_at/iread_at";
        mt_begin(what);
        for (int it = 0; it < iter; it++) {
            int at;
            if (writer) {
                memset(w, 1 + (r * 31 + it + round * 7) % 255, REGION);
                if (round == 0) {
                    MT_OK(MPI_File_write_at(fh, 0, w, REGION, MPI_BYTE, &st));
                } else {
                    MPI_Request rq;
                    if (!MT_OK(MPI_File_iwrite_at(fh, 0, w, REGION, MPI_BYTE,
                                                  &rq)))
                        MT_OK(MPI_Wait(&rq, &st));
                }
            }
            if (!writer || P == 1) {
                if (round == 0) {
                    MT_OK(MPI_File_read_at(fh, 0, rd, REGION, MPI_BYTE, &st));
                } else {
                    MPI_Request rq;
                    if (!MT_OK(MPI_File_iread_at(fh, 0, rd, REGION, MPI_BYTE,
                                                 &rq)))
                        MT_OK(MPI_Wait(&rq, &st));
                }
                if (!uniform(rd, REGION, &at))
                    report_mix(what, it, rd, REGION, at);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* ---- strided view, memory type with holes ---- */
    mt_begin("strided view");
    MPI_Datatype blk, ft, mt;
    MPI_Type_contiguous(512, MPI_BYTE, &blk);
    MPI_Type_create_resized(blk, 0, 1024, &ft);
    MPI_Type_commit(&ft);
    MPI_Type_vector(REGION / 2 / 256, 256, 300, MPI_BYTE, &mt);
    MPI_Type_commit(&mt);
    mt_mem m;
    mt_mem_alloc(&m, 1, mt);
    MT_OK(MPI_File_set_view(fh, 0, MPI_BYTE, ft, "native", MPI_INFO_NULL));
    MT_OK(MPI_File_set_atomicity(fh, 1));
    for (int it = 0; it < iter; it++) {
        int at;
        if (writer) {
            memset(w, 1 + (r * 17 + it) % 255, REGION);
            mt_mem_scatter(&m, w);
            MT_OK(MPI_File_write_at(fh, 0, m.buf, 1, mt, &st));
        }
        if (!writer || P == 1) {
            MT_OK(MPI_File_read_at(fh, 0, rd, REGION / 2, MPI_BYTE, &st));
            if (!uniform(rd, REGION / 2, &at))
                report_mix("strided view", it, rd, REGION / 2, at);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* ---- final state: one value throughout each written part ---- */
    mt_begin("final content");
    MT_OK(
        MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    MT_OK(MPI_File_read_at(fh, 0, rd, REGION, MPI_BYTE, &st));
    for (int b = 0; b < REGION / 512; b += 2) {
        int at;
        if (!uniform(rd + b * 512, 512, &at) || rd[b * 512] != rd[0]) {
            mt_fail("after the strided round, block %d does not hold the value "
                    "of block 0",
                    b);
            break;
        }
    }
    MPI_Type_free(&blk);
    MPI_Type_free(&ft);
    MPI_Type_free(&mt);
    mt_mem_free(&m);
    MT_OK(MPI_File_close(&fh));
    free(w);
    free(rd);
    MPI_Barrier(MPI_COMM_WORLD);
    mt_cleanup(MPI_COMM_WORLD, name);
    return mt_finish();
}
