/*
 * views.c -- file views: displacements, etypes, filetypes.
 *
 *  - set_view / get_view round trip (disp, etype, filetype, datarep);
 *  - explicit offsets and seeks count etypes (MPI_DOUBLE, a 12-byte
 *    derived etype) from an unaligned displacement;
 *  - setting a view resets the individual pointer;
 *  - get_byte_offset through a non-contiguous view agrees with where a
 *    one-etype write at that position lands;
 *  - irregular interleave: rank r owns r+1 ints of every tile;
 *  - holes keep old data: a file filled with one pattern, then every rank
 *    writes through a view with holes; the bytes in the holes are intact
 *    (nothing read-modify-writes them with stale data);
 *  - the same bytes through different views: a matrix written by rows is
 *    read by columns through a vector view.
 *
 *   views -fname NAME [-hint K=V]...
 */
#include "mt.h"

#include <stdlib.h>
#include <string.h>

static void free_if_derived(MPI_Datatype *t)
{
    int ni, na, nd, comb;
    MPI_Type_get_envelope(*t, &ni, &na, &nd, &comb);
    if (comb != MPI_COMBINER_NAMED)
        MPI_Type_free(t);
}

static void roundtrip(MPI_File fh)
{
    mt_begin("set_view/get_view round trip");
    MPI_Datatype vec, et, ft;
    MPI_Type_vector(3, 2, 5, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    MT_OK(MPI_File_set_view(fh, 13, MPI_DOUBLE, vec, "native", MPI_INFO_NULL));
    MPI_Offset disp = -1;
    char rep[MPI_MAX_DATAREP_STRING + 1] = "";
    MT_OK(MPI_File_get_view(fh, &disp, &et, &ft, rep));
    if (disp != 13)
        mt_fail("get_view disp %lld, expected 13", (long long)disp);
    if (et != MPI_DOUBLE)
        mt_fail("get_view etype is not MPI_DOUBLE");
    MPI_Count sz, lb, ext;
    MPI_Type_size_x(ft, &sz);
    MPI_Type_get_extent_x(ft, &lb, &ext);
    /* the same type map, not necessarily the same constructor */
    if (sz != 48 || ext != (2 * 5 + 2) * 8)
        mt_fail("get_view filetype: size %lld extent %lld, expected 48 bytes, "
                "extent 96",
                (long long)sz, (long long)ext);
    if (strcmp(rep, "native"))
        mt_fail("get_view datarep '%s'", rep);
    free_if_derived(&et);
    free_if_derived(&ft);
    MPI_Type_free(&vec);
}

static void etype_offsets(MPI_File fh)
{
    mt_begin("explicit offsets and seeks in etypes");
    MPI_Status st;
    double d[10], back[10];
    int r = mt_rank;
    for (int i = 0; i < 10; i++)
        d[i] = r * 100 + i + 0.5;
    /* disp 13 (unaligned), etype double: rank r writes doubles 10r..10r+9 */
    MT_OK(MPI_File_set_view(fh, 13, MPI_DOUBLE, MPI_DOUBLE, "native",
                            MPI_INFO_NULL));
    MT_OK(MPI_File_write_at(fh, (MPI_Offset)10 * r, d, 10, MPI_DOUBLE, &st));
    mt_sync_barrier(fh, MPI_COMM_WORLD);
    /* byte view: where did they go */
    MT_OK(
        MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    memset(back, 0, sizeof(back));
    MT_OK(MPI_File_read_at(fh, 13 + 80 * r, back, 80, MPI_BYTE, &st));
    if (memcmp(back, d, 80))
        mt_fail("doubles written at etype offset %d from disp 13 are not at "
                "byte %d",
                10 * r, 13 + 80 * r);
    /* the pointer: a new view resets it to 0 */
    MT_OK(MPI_File_seek(fh, 1234, MPI_SEEK_SET));
    MT_OK(MPI_File_set_view(fh, 13, MPI_DOUBLE, MPI_DOUBLE, "native",
                            MPI_INFO_NULL));
    MPI_Offset pos = -1;
    MT_OK(MPI_File_get_position(fh, &pos));
    if (pos != 0)
        mt_fail("set_view did not reset the individual pointer (at %lld)",
                (long long)pos);
    MT_OK(MPI_File_seek(fh, (MPI_Offset)10 * r + 3, MPI_SEEK_SET));
    memset(back, 0, sizeof(back));
    MT_OK(MPI_File_read(fh, back, 4, MPI_DOUBLE, &st));
    if (memcmp(back, d + 3, 32))
        mt_fail("read of 4 doubles after seek to etype %d returned other data",
                10 * r + 3);

    /* a 12-byte derived etype: 3 ints */
    MPI_Datatype e3;
    MPI_Type_contiguous(3, MPI_INT, &e3);
    MPI_Type_commit(&e3);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Offset base = 13 + 80 * mt_nprocs + 5; /* past the doubles */
    MT_OK(MPI_File_set_view(fh, base, e3, e3, "native", MPI_INFO_NULL));
    int iv[6];
    for (int i = 0; i < 6; i++)
        iv[i] = r * 1000 + i;
    MT_OK(MPI_File_write_at(fh, (MPI_Offset)2 * r, iv, 6, MPI_INT, &st));
    mt_sync_barrier(fh, MPI_COMM_WORLD);
    MPI_Offset byte;
    MT_OK(MPI_File_get_byte_offset(fh, (MPI_Offset)2 * r + 1, &byte));
    if (byte != base + 24 * r + 12)
        mt_fail(
            "get_byte_offset(%d) with a 12-byte etype = %lld, expected %lld",
            2 * r + 1, (long long)byte, (long long)(base + 24 * r + 12));
    MT_OK(
        MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    int ib[6] = {0};
    MT_OK(MPI_File_read_at(fh, base + 24 * r, ib, 24, MPI_BYTE, &st));
    if (memcmp(ib, iv, 24))
        mt_fail("ints written at etype offset %d (12-byte etype) are not at "
                "byte %lld",
                2 * r, (long long)(base + 24 * r));
    MPI_Type_free(&e3);
}

static void byte_offsets(MPI_File fh)
{
    mt_begin("get_byte_offset through a strided view");
    /* tile: ints at 0, 12, 16 (bytes), extent 32, disp 7 + 4r, interleaved
     * by rank through the extent */
    int bl[2] = {1, 2}, P = mt_nprocs, r = mt_rank;
    MPI_Aint d[2] = {0, 12};
    MPI_Datatype f, ft;
    MPI_Type_create_hindexed(2, bl, d, MPI_INT, &f);
    MPI_Type_create_resized(f, 0, 32 * P, &ft);
    MPI_Type_commit(&ft);
    /* every rank shifts by its own 32-byte slot inside the tile */
    MPI_Offset disp = 7 + 32 * (MPI_Offset)r;
    MT_OK(MPI_File_set_view(fh, disp, MPI_INT, ft, "native", MPI_INFO_NULL));
    int64_t ftsize, ext;
    int64_t *map = mt_view_map(ft, &ftsize, &ext);
    for (int p = 0; map && p < 10; p++) {
        MPI_Offset byte, want = disp + (p / 3) * ext + map[(p % 3) * 4];
        MT_OK(MPI_File_get_byte_offset(fh, p, &byte));
        if (byte != want)
            mt_fail("get_byte_offset(%d) = %lld, expected %lld", p,
                    (long long)byte, (long long)want);
    }
    free(map);
    MPI_Type_free(&f);
    MPI_Type_free(&ft);
}

static void irregular(MPI_File fh)
{
    mt_begin("irregular interleave: rank r owns r+1 ints per tile");
    int P = mt_nprocs, r = mt_rank, T = 23;
    int before = 0, tile = 0;
    for (int q = 0; q < P; q++) {
        if (q < r)
            before += q + 1;
        tile += q + 1;
    }
    MPI_Datatype blk, ft;
    MPI_Type_contiguous(r + 1, MPI_INT, &blk);
    MPI_Type_create_resized(blk, 0, (MPI_Aint)tile * 4, &ft);
    MPI_Type_commit(&ft);
    mt_view vw = {(MPI_Offset)before * 4, MPI_INT, ft};
    MT_OK(MPI_File_set_size(fh, 0));
    MT_OK(MPI_File_set_view(fh, vw.disp, MPI_INT, ft, "native", MPI_INFO_NULL));
    int n = (r + 1) * T;
    unsigned char *s = malloc(4 * n);
    mt_fill_pat(s, 4 * n, 60 + r, 0);
    MPI_Status st;
    MT_OK(MPI_File_write_all(fh, s, n, MPI_INT, &st));
    int64_t len = (int64_t)tile * 4 * T;
    unsigned char *img = calloc(len, 1), *cov = calloc(len, 1);
    mt_expect(&vw, 0, s, 4 * n, img, cov, len);
    mt_merge_image(MPI_COMM_WORLD, img, cov, len);
    mt_sync_barrier(fh, MPI_COMM_WORLD);
    for (int64_t i = 0; i < len; i++)
        if (!cov[i]) {
            mt_fail(
                "irregular interleave leaves byte %lld uncovered (test bug)",
                (long long)i);
            break;
        }
    mt_check_file(fh, img, cov, len, len);
    free(s);
    free(img);
    free(cov);
    MPI_Type_free(&blk);
    MPI_Type_free(&ft);
}

static void holes_keep_data(MPI_File fh)
{
    mt_begin("holes of a view keep old data");
    int P = mt_nprocs, r = mt_rank;
    int64_t len = (int64_t)4096 * P;
    unsigned char *old = malloc(len), *img = malloc(len), *cov = calloc(len, 1);
    MPI_Status st;
    mt_fill_pat(old, len, 7, 0);
    MT_OK(
        MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    if (r == 0)
        MT_OK(MPI_File_write_at(fh, 0, old, (int)len, MPI_BYTE, &st));
    mt_sync_barrier(fh, MPI_COMM_WORLD);
    /* 3 bytes written, 5 skipped, interleaved by rank: plenty of holes in
     * every stripe */
    MPI_Datatype b, ft;
    MPI_Type_contiguous(3, MPI_BYTE, &b);
    MPI_Type_create_resized(b, 0, 8 * P, &ft);
    MPI_Type_commit(&ft);
    mt_view vw = {(MPI_Offset)8 * r, MPI_BYTE, ft};
    MT_OK(
        MPI_File_set_view(fh, vw.disp, MPI_BYTE, ft, "native", MPI_INFO_NULL));
    int n = (int)(len / (8 * P) * 3);
    unsigned char *s = malloc(n);
    mt_fill_pat(s, n, 70 + r, 0);
    memcpy(img, old, len);
    memset(cov, 0, len);
    mt_expect(&vw, 0, s, n, img, cov, len);
    /* independent writes, all ranks at once */
    MT_OK(MPI_File_write_at(fh, 0, s, n, MPI_BYTE, &st));
    /* everyone's view of the final content: old bytes where nobody wrote */
    unsigned char *mine = calloc(len, 1);
    for (int64_t i = 0; i < len; i++)
        mine[i] = cov[i] ? img[i] : 0;
    MPI_Allreduce(MPI_IN_PLACE, mine, (int)len, MPI_BYTE, MPI_BOR,
                  MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, cov, (int)len, MPI_BYTE, MPI_BOR,
                  MPI_COMM_WORLD);
    for (int64_t i = 0; i < len; i++)
        img[i] = cov[i] ? mine[i] : old[i];
    memset(cov, 1, len);
    mt_sync_barrier(fh, MPI_COMM_WORLD);
    mt_check_file(fh, img, cov, len, len);
    free(mine);
    free(s);
    free(old);
    free(img);
    free(cov);
    MPI_Type_free(&b);
    MPI_Type_free(&ft);
}

static void transpose(MPI_File fh)
{
    mt_begin("rows written, columns read through a vector view");
    const int N = 24;
    int P = mt_nprocs, r = mt_rank;
    int *m = malloc(sizeof(int) * N * N), col[N];
    MPI_Status st;
    for (int i = 0; i < N * N; i++)
        m[i] = i * 7 + 1;
    MT_OK(
        MPI_File_set_view(fh, 100, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    /* rank r writes rows r, r+P, ... */
    for (int row = r; row < N; row += P)
        MT_OK(MPI_File_write_at(fh, (MPI_Offset)row * N, m + row * N, N,
                                MPI_INT, &st));
    mt_sync_barrier(fh, MPI_COMM_WORLD);
    MPI_Datatype colt, colr;
    MPI_Type_vector(N, 1, N, MPI_INT, &colt);
    MPI_Type_create_resized(colt, 0, 4, &colr); /* next tile = next column */
    MPI_Type_commit(&colr);
    MT_OK(MPI_File_set_view(fh, 100, MPI_INT, colr, "native", MPI_INFO_NULL));
    for (int c = (r + 1) % P; c < N; c += P) {
        /* column c is view etypes [c*N, (c+1)*N) */
        memset(col, 0, sizeof(col));
        MT_OK(MPI_File_read_at(fh, (MPI_Offset)c * N, col, N, MPI_INT, &st));
        for (int i = 0; i < N; i++)
            if (col[i] != m[i * N + c]) {
                mt_fail("column %d element %d: got %d, expected %d", c, i,
                        col[i], m[i * N + c]);
                break;
            }
    }
    MPI_Type_free(&colt);
    MPI_Type_free(&colr);
    free(m);
}

int main(int argc, char **argv)
{
    char name[MT_NAME_MAX];
    MPI_File fh;
    mt_init(&argc, &argv);
    mt_name(name, "views");
    if (!mt_fresh(MPI_COMM_WORLD, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh)) {
        roundtrip(fh);
        etype_offsets(fh);
        byte_offsets(fh);
        irregular(fh);
        MPI_Barrier(MPI_COMM_WORLD);
        MT_OK(MPI_File_set_size(fh, 0));
        holes_keep_data(fh);
        MPI_Barrier(MPI_COMM_WORLD);
        MT_OK(MPI_File_set_size(fh, 0));
        transpose(fh);
        MT_OK(MPI_File_close(&fh));
        mt_cleanup(MPI_COMM_WORLD, name);
    }
    return mt_finish();
}
