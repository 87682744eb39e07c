/*
 * identity.c -- what MPI-IO writes is what the galley tool reads, byte for
 * byte, and the other way round.
 *
 *   identity -fname NAME -mode write -size S -expect LOCAL
 *       writes S bytes (byte o = mt_pat(7, o)): the first half collectively
 *       through an interleaved view of 1000-byte records, the second half
 *       with independent write_at of 777-byte chunks in reverse order; rank 0
 *       writes the same bytes to the local file LOCAL with stdio, for the
 *       harness to compare with `galley get`.
 *   identity -fname NAME -mode read -expect LOCAL
 *       the harness has put LOCAL into NAME with `galley put`: every rank
 *       reads the file through a strided view (collective) and a plain
 *       read_at, and compares with LOCAL read with stdio.
 */
#include "mt.h"

#include <stdlib.h>
#include <string.h>

static unsigned char *load(const char *path, int64_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        mt_fail("cannot open local file %s", path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n + 1);
    if (fread(b, 1, *n, f) != (size_t)*n)
        mt_fail("short read of %s", path);
    fclose(f);
    return b;
}

static void do_write(const char *name, int64_t S, const char *expect)
{
    MPI_File fh;
    MPI_Status st;
    int P = mt_nprocs, r = mt_rank;
    const int R = 1000;
    mt_begin("write");
    unsigned char *all = malloc(S);
    mt_fill_pat(all, S, 7, 0);
    if (mt_fresh(MPI_COMM_WORLD, name, MPI_MODE_WRONLY, MPI_INFO_NULL, &fh))
        return;
    /* first half, in whole records: record i belongs to rank i % P */
    int64_t nrec = S / 2 / R, half = nrec * R;
    MPI_Datatype rec, ft;
    MPI_Type_contiguous(R, MPI_BYTE, &rec);
    MPI_Type_create_resized(rec, 0, (MPI_Aint)R * P, &ft);
    MPI_Type_commit(&ft);
    MT_OK(MPI_File_set_view(fh, (MPI_Offset)r * R, MPI_BYTE, ft, "native",
                            MPI_INFO_NULL));
    int64_t mine = 0;
    for (int64_t i = r; i < nrec; i += P)
        mine++;
    unsigned char *buf = malloc(mine * R + 1);
    for (int64_t i = r, k = 0; i < nrec; i += P, k++)
        memcpy(buf + k * R, all + i * R, R);
    MT_OK(MPI_File_write_all(fh, buf, (int)(mine * R), MPI_BYTE, &st));
    /* second half: chunks of 777 bytes, chunk j by rank j % P, last first */
    MT_OK(
        MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    int64_t nch = (S - half + 776) / 777;
    for (int64_t j = nch - 1; j >= 0; j--) {
        if (j % P != r)
            continue;
        int64_t off = half + j * 777, n = S - off < 777 ? S - off : 777;
        MT_OK(MPI_File_write_at(fh, off, all + off, (int)n, MPI_BYTE, &st));
    }
    MT_OK(MPI_File_close(&fh));
    if (r == 0) {
        FILE *f = fopen(expect, "wb");
        if (!f || fwrite(all, 1, S, f) != (size_t)S)
            mt_fail("cannot write %s", expect);
        if (f)
            fclose(f);
    }
    MPI_Type_free(&rec);
    MPI_Type_free(&ft);
    free(buf);
    free(all);
}

static void do_read(const char *name, const char *expect)
{
    MPI_File fh;
    MPI_Status st;
    int P = mt_nprocs, r = mt_rank;
    const int R = 333;
    int64_t S;
    mt_begin("read");
    unsigned char *want = load(expect, &S);
    if (!want)
        return;
    MPI_Info info = mt_info_with(MPI_INFO_NULL);
    int err = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, info, &fh);
    MPI_Info_free(&info);
    if (MT_OK(err))
        return;
    MPI_Offset size;
    MT_OK(MPI_File_get_size(fh, &size));
    if (size != S)
        mt_fail("size %lld, the local file has %lld", (long long)size,
                (long long)S);
    /* whole file, plain */
    unsigned char *got = calloc(S + 1, 1);
    MT_OK(MPI_File_read_at(fh, 0, got, (int)S, MPI_BYTE, &st));
    mt_compare("read_at of the whole file", got, want, S, 0);
    /* records of 333 bytes, round robin, collective */
    MPI_Datatype rec, ft;
    MPI_Type_contiguous(R, MPI_BYTE, &rec);
    MPI_Type_create_resized(rec, 0, (MPI_Aint)R * P, &ft);
    MPI_Type_commit(&ft);
    MT_OK(MPI_File_set_view(fh, (MPI_Offset)r * R, MPI_BYTE, ft, "native",
                            MPI_INFO_NULL));
    int64_t nrec = S / R, mine = 0;
    for (int64_t i = r; i < nrec; i += P)
        mine++;
    memset(got, 0, S);
    MT_OK(MPI_File_read_all(fh, got, (int)(mine * R), MPI_BYTE, &st));
    for (int64_t i = r, k = 0; i < nrec; i += P, k++) {
        char what[64];
        snprintf(what, sizeof(what), "record %lld through the view",
                 (long long)i);
        if (mt_compare(what, got + k * R, want + i * R, R, i * R))
            break;
    }
    MT_OK(MPI_File_close(&fh));
    MPI_Type_free(&rec);
    MPI_Type_free(&ft);
    free(got);
    free(want);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    const char *mode = mt_opt("mode", "write"),
               *expect = mt_opt("expect", NULL);
    if (!expect) {
        if (mt_rank == 0)
            fprintf(stderr, "identity: -expect LOCAL is required\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (!strcmp(mode, "write"))
        do_write(mt_fname, atoll(mt_opt("size", "1000000")), expect);
    else
        do_read(mt_fname, expect);
    return mt_finish();
}
