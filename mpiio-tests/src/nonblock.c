/*
 * nonblock.c -- non-blocking I/O.
 *
 * 1. Every access shape of cases.c through iwrite_at/iread_at (MPI_Wait),
 *    iwrite/iread on the individual pointer (MPI_Test loop), and the
 *    non-blocking collectives iwrite_at_all/iread_all.
 * 2. Several requests outstanding at once per rank:
 *    - contiguous: K iwrite_at to interleaved places, MPI_Waitall; K
 *      iread_at completed by an MPI_Testall loop;
 *    - strided: a vector file view and a vector memory type, K iwrite_at
 *      completed by MPI_Waitany; K iread_at completed by polling each with
 *      MPI_Test in turn;
 *    - individual pointer: K iwrite in a row (the pointer moves at the
 *      call, before completion), MPI_Waitsome; K iread in a row;
 *    - reads of one region outstanding together with writes of another.
 *
 *   nonblock -fname NAME [-cases a,b | -many-only] [-hint K=V]...
 */
#include "cases.h"

#include <stdlib.h>
#include <string.h>

#define K 8

static void check_status(MPI_Status *st, int64_t want, const char *what, int k)
{
    MPI_Count got = -1;
    MPI_Get_elements_x(st, MPI_BYTE, &got);
    if (got != want)
        mt_fail("%s request %d: status says %lld bytes, expected %lld", what, k,
                (long long)got, (long long)want);
}

/* ---- contiguous, interleaved, Waitall / Testall ---- */
static void contig_many(void)
{
    char name[MT_NAME_MAX];
    MPI_File fh;
    MPI_Request rq[K];
    MPI_Status st[K];
    int r = mt_rank, P = mt_nprocs;
    const int slot = 1200;
    unsigned char *w[K], *rd[K];

    mt_begin("several contiguous iwrite_at/iread_at");
    mt_name(name, "nb-contig-many");
    if (mt_fresh(MPI_COMM_WORLD, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh))
        return;
    for (int k = 0; k < K; k++) {
        w[k] = malloc(slot);
        rd[k] = malloc(slot);
        mt_fill_pat(w[k], 1000 + k, 77 + r, k * 5000);
        memset(rd[k], MT_SENTINEL, slot);
        MPI_Offset off = (MPI_Offset)(k * P + r) * slot;
        if (MT_OK(
                MPI_File_iwrite_at(fh, off, w[k], 1000 + k, MPI_BYTE, &rq[k])))
            rq[k] = MPI_REQUEST_NULL;
    }
    MT_OK(MPI_Waitall(K, rq, st));
    for (int k = 0; k < K; k++)
        check_status(&st[k], 1000 + k, "iwrite_at", k);
    mt_sync_barrier(fh, MPI_COMM_WORLD);

    /* read the slots of the next rank (data written by another process) */
    int src = (r + 1) % P;
    for (int k = 0; k < K; k++) {
        MPI_Offset off = (MPI_Offset)(k * P + src) * slot;
        if (MT_OK(
                MPI_File_iread_at(fh, off, rd[k], 1000 + k, MPI_BYTE, &rq[k])))
            rq[k] = MPI_REQUEST_NULL;
    }
    int done = 0;
    while (!done)
        if (MT_OK(MPI_Testall(K, rq, &done, st)))
            break;
    for (int k = 0; k < K; k++) {
        unsigned char want[1200];
        check_status(&st[k], 1000 + k, "iread_at", k);
        mt_fill_pat(want, 1000 + k, 77 + src, k * 5000);
        mt_compare("iread_at data", rd[k], want, 1000 + k,
                   (int64_t)(k * P + src) * slot);
        for (int i = 1000 + k; i < slot; i++)
            if (rd[k][i] != MT_SENTINEL) {
                mt_fail("iread_at %d wrote past its count (byte %d)", k, i);
                break;
            }
    }
    /* the last slot of the file tells the size */
    MPI_Offset size;
    MT_OK(MPI_File_get_size(fh, &size));
    MPI_Offset want = (MPI_Offset)((K - 1) * P + P - 1) * slot + 1000 + K - 1;
    if (size != want)
        mt_fail("file size %lld, expected %lld", (long long)size,
                (long long)want);
    MT_OK(MPI_File_close(&fh));
    for (int k = 0; k < K; k++) {
        free(w[k]);
        free(rd[k]);
    }
    mt_cleanup(MPI_COMM_WORLD, name);
}

/* ---- strided view and memory type, Waitany / Test polling ---- */
static void strided_many(void)
{
    char name[MT_NAME_MAX];
    MPI_File fh;
    MPI_Request rq[K];
    MPI_Status st;
    int r = mt_rank, P = mt_nprocs;
    MPI_Datatype blk, ft, mt;
    const int per = 6 * 5; /* ints per request: mt = vector(6,5,7) */

    mt_begin("several strided iwrite_at/iread_at");
    mt_name(name, "nb-strided-many");
    if (mt_fresh(MPI_COMM_WORLD, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh))
        return;
    /* file: records of 3 ints, interleaved over the ranks */
    MPI_Type_contiguous(3, MPI_INT, &blk);
    MPI_Type_create_resized(blk, 0, (MPI_Aint)12 * P, &ft);
    MPI_Type_commit(&ft);
    MPI_Type_vector(6, 5, 7, MPI_INT, &mt);
    MPI_Type_commit(&mt);
    mt_view vw = {(MPI_Offset)r * 12, MPI_INT, ft};
    MT_OK(MPI_File_set_view(fh, vw.disp, MPI_INT, ft, "native", MPI_INFO_NULL));

    int64_t len = (int64_t)K * per / 3 * 12 * P + 12 * P;
    unsigned char *img = calloc(len, 1), *cov = calloc(len, 1);
    mt_mem wm[K], rm[K];
    unsigned char *stream[K];
    int64_t end = 0;
    for (int k = 0; k < K; k++) {
        mt_mem_alloc(&wm[k], 1, mt);
        mt_mem_alloc(&rm[k], 1, mt);
        stream[k] = malloc(wm[k].size);
        mt_fill_pat(stream[k], wm[k].size, 500 + r, k * 1000);
        mt_mem_scatter(&wm[k], stream[k]);
    }
    /* request k covers view ints [k*per, (k+1)*per): issue in reverse order
     * so completion order cannot follow file order */
    for (int k = K - 1; k >= 0; k--)
        if (MT_OK(MPI_File_iwrite_at(fh, (MPI_Offset)k * per, wm[k].buf, 1, mt,
                                     &rq[k])))
            rq[k] = MPI_REQUEST_NULL;
    for (int k = 0; k < K; k++) {
        int64_t e = mt_expect(&vw, (MPI_Offset)k * per, stream[k], wm[k].size,
                              img, cov, len);
        if (e > end)
            end = e;
    }
    for (int n = 0; n < K; n++) {
        int idx;
        if (MT_OK(MPI_Waitany(K, rq, &idx, &st)))
            break;
        if (idx == MPI_UNDEFINED) {
            mt_fail("MPI_Waitany: no active request left after %d of %d", n, K);
            break;
        }
        check_status(&st, wm[idx].size, "strided iwrite_at", idx);
    }
    int64_t size;
    mt_merge_image(MPI_COMM_WORLD, img, cov, len);
    MPI_Allreduce(&end, &size, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    mt_sync_barrier(fh, MPI_COMM_WORLD);
    mt_check_file(fh, img, cov, len, size);

    MT_OK(MPI_File_set_view(fh, vw.disp, MPI_INT, ft, "native", MPI_INFO_NULL));
    for (int k = 0; k < K; k++)
        if (MT_OK(MPI_File_iread_at(fh, (MPI_Offset)k * per, rm[k].buf, 1, mt,
                                    &rq[k])))
            rq[k] = MPI_REQUEST_NULL;
    int left = K, spins = 0;
    while (left > 0) {
        for (int k = 0; k < K; k++) {
            int flag = 0;
            if (rq[k] == MPI_REQUEST_NULL)
                continue;
            if (MT_OK(MPI_Test(&rq[k], &flag, &st))) {
                rq[k] = MPI_REQUEST_NULL;
                left--;
                continue;
            }
            if (flag) {
                check_status(&st, rm[k].size, "strided iread_at", k);
                left--;
            }
        }
        spins++;
    }
    for (int k = 0; k < K; k++) {
        unsigned char *back = malloc(rm[k].size);
        mt_mem_gather(&rm[k], back);
        mt_compare("strided iread_at data", back, stream[k], rm[k].size, 0);
        mt_mem_check_holes(&rm[k]);
        free(back);
        free(stream[k]);
        mt_mem_free(&wm[k]);
        mt_mem_free(&rm[k]);
    }
    MT_OK(MPI_File_close(&fh));
    MPI_Type_free(&blk);
    MPI_Type_free(&ft);
    MPI_Type_free(&mt);
    free(img);
    free(cov);
    mt_cleanup(MPI_COMM_WORLD, name);
}

/* ---- individual pointer: K iwrite in a row, Waitsome ---- */
static void pointer_many(void)
{
    char name[MT_NAME_MAX];
    MPI_File fh;
    MPI_Request rq[K];
    MPI_Status st[K];
    int idx[K], r = mt_rank;
    const int n = 777;
    unsigned char *w = malloc(K * n), *rd = malloc(K * n);

    mt_begin("iwrite/iread on the individual pointer");
    mt_name(name, "nb-pointer");
    if (mt_fresh(MPI_COMM_WORLD, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh))
        return;
    /* each rank a region of its own, reached through the view's disp */
    MT_OK(MPI_File_set_view(fh, (MPI_Offset)r * K * n, MPI_BYTE, MPI_BYTE,
                            "native", MPI_INFO_NULL));
    mt_fill_pat(w, K * n, 900 + r, 0);
    for (int k = 0; k < K; k++) {
        if (MT_OK(MPI_File_iwrite(fh, w + k * n, n, MPI_BYTE, &rq[k])))
            rq[k] = MPI_REQUEST_NULL;
        MPI_Offset pos;
        MT_OK(MPI_File_get_position(fh, &pos));
        if (pos != (MPI_Offset)(k + 1) * n)
            mt_fail(
                "after iwrite %d the individual pointer is %lld, expected %lld "
                "(it moves when the call returns)",
                k, (long long)pos, (long long)(k + 1) * n);
    }
    int left = K;
    while (left > 0) {
        int outc = 0;
        if (MT_OK(MPI_Waitsome(K, rq, &outc, idx, st)))
            break;
        if (outc == MPI_UNDEFINED) {
            mt_fail("MPI_Waitsome: MPI_UNDEFINED with %d requests left", left);
            break;
        }
        for (int i = 0; i < outc; i++)
            check_status(&st[i], n, "iwrite", idx[i]);
        left -= outc;
    }
    mt_sync_barrier(fh, MPI_COMM_WORLD);
    MT_OK(MPI_File_seek(fh, 0, MPI_SEEK_SET));
    memset(rd, MT_SENTINEL, K * n);
    for (int k = 0; k < K; k++)
        if (MT_OK(MPI_File_iread(fh, rd + k * n, n, MPI_BYTE, &rq[k])))
            rq[k] = MPI_REQUEST_NULL;
    MT_OK(MPI_Waitall(K, rq, st));
    for (int k = 0; k < K; k++)
        check_status(&st[k], n, "iread", k);
    mt_compare("iread data", rd, w, K * n, (int64_t)r * K * n);

    /* reads of the region just written, outstanding together with writes
     * to a new region after it */
    MPI_Request mix[2 * K];
    MPI_Status mixst[2 * K];
    unsigned char *w2 = malloc(K * n), *rd2 = malloc(K * n);
    mt_fill_pat(w2, K * n, 950 + r, 0);
    memset(rd2, MT_SENTINEL, K * n);
    MT_OK(
        MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    MPI_Offset base2 = (MPI_Offset)mt_nprocs * K * n + (MPI_Offset)r * K * n;
    for (int k = 0; k < K; k++) {
        if (MT_OK(MPI_File_iread_at(fh, (MPI_Offset)r * K * n + k * n,
                                    rd2 + k * n, n, MPI_BYTE, &mix[2 * k])))
            mix[2 * k] = MPI_REQUEST_NULL;
        if (MT_OK(MPI_File_iwrite_at(fh, base2 + k * n, w2 + k * n, n, MPI_BYTE,
                                     &mix[2 * k + 1])))
            mix[2 * k + 1] = MPI_REQUEST_NULL;
    }
    MT_OK(MPI_Waitall(2 * K, mix, mixst));
    mt_compare("iread_at next to iwrite_at", rd2, w, K * n, (int64_t)r * K * n);
    mt_sync_barrier(fh, MPI_COMM_WORLD);
    memset(rd2, 0, K * n);
    MPI_Status s1;
    MT_OK(MPI_File_read_at(fh, base2, rd2, K * n, MPI_BYTE, &s1));
    mt_compare("data of the iwrite_at issued beside reads", rd2, w2, K * n,
               base2);
    MT_OK(MPI_File_close(&fh));
    free(w);
    free(rd);
    free(w2);
    free(rd2);
    mt_cleanup(MPI_COMM_WORLD, name);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    /* -many-only: just part 2; -cases ...: just those cases of part 1 */
    static const int pairs[][2] = {
        {MT_IAT, MT_IPTR}, {MT_IPTR, MT_IAT}, {MT_IAT_ALL, MT_IALL}};
    if (!mt_flag("many-only"))
        mt_run_cases(MPI_COMM_WORLD, "nb", pairs, 3);
    if (!mt_flag("cases")) {
        contig_many();
        strided_many();
        pointer_many();
    }
    return mt_finish();
}
