/*
 * sharedfp.c -- shared file pointers.
 *
 *  - write_shared (and iwrite_shared) from all ranks at once, through a
 *    view with a displacement: afterwards the file is a gap-free sequence
 *    of every record exactly once, each rank's records in its own call
 *    order, and the shared pointer is at the end;
 *  - write_ordered (two rounds, rank-dependent sizes) gives rank order;
 *    read_ordered after seek_shared(0) gives each rank its own piece;
 *  - seek_shared SEEK_SET / SEEK_CUR / SEEK_END and get_position_shared,
 *    in etypes of a view;
 *  - read_shared from all ranks consumes every record exactly once.
 *
 *   sharedfp -fname NAME [-hint K=V]...
 */
#include "mt.h"

#include <stdlib.h>
#include <string.h>

#define MAGIC 0x47534850u
#define NREC 20

static int rec_len(int r, int s)
{
    return 24 + (r * 7 + s * 13) % 41;
}

static void make_rec(unsigned char *b, int r, int s)
{
    uint32_t h[4] = {MAGIC, (uint32_t)rec_len(r, s), (uint32_t)r, (uint32_t)s};
    memcpy(b, h, 16);
    mt_fill_pat(b + 16, rec_len(r, s) - 16, 3000 + r * 100 + s, 0);
}

static void write_shared_test(void)
{
    char name[MT_NAME_MAX];
    MPI_File fh;
    MPI_Status st;
    int P = mt_nprocs, r = mt_rank;
    const MPI_Offset disp = 64;

    mt_begin("write_shared/iwrite_shared from every rank");
    mt_name(name, "wshared");
    if (mt_fresh(MPI_COMM_WORLD, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh))
        return;
    MT_OK(MPI_File_set_view(fh, disp, MPI_BYTE, MPI_BYTE, "native",
                            MPI_INFO_NULL));
    unsigned char rec[128];
    for (int s = 0; s < NREC; s++) {
        make_rec(rec, r, s);
        if (s % 4 == 3) {
            MPI_Request rq;
            if (!MT_OK(MPI_File_iwrite_shared(fh, rec, rec_len(r, s), MPI_BYTE,
                                              &rq)))
                MT_OK(MPI_Wait(&rq, &st));
        } else {
            MT_OK(MPI_File_write_shared(fh, rec, rec_len(r, s), MPI_BYTE, &st));
        }
        MPI_Count c = -1;
        MPI_Get_elements_x(&st, MPI_BYTE, &c);
        if (c != rec_len(r, s))
            mt_fail("write_shared record %d: status %lld bytes", s,
                    (long long)c);
    }
    int64_t total = 0;
    for (int q = 0; q < P; q++)
        for (int s = 0; s < NREC; s++)
            total += rec_len(q, s);
    mt_sync_barrier(fh, MPI_COMM_WORLD);
    MPI_Offset pos = -1;
    MT_OK(MPI_File_get_position_shared(fh, &pos));
    if (pos != total)
        mt_fail("shared pointer %lld after all writes, expected %lld",
                (long long)pos, (long long)total);
    MPI_Offset size;
    MT_OK(MPI_File_get_size(fh, &size));
    if (size != disp + total)
        mt_fail("file size %lld, expected %lld", (long long)size,
                (long long)(disp + total));

    if (r == 0) {
        unsigned char *f = calloc(total, 1);
        int *seen = calloc((size_t)P * NREC, sizeof(int)),
            *last = malloc(sizeof(int) * P);
        for (int q = 0; q < P; q++)
            last[q] = -1;
        MT_OK(MPI_File_read_at(fh, 0, f, (int)total, MPI_BYTE, &st));
        int64_t at = 0;
        int nrec = 0;
        while (at + 16 <= total) {
            uint32_t h[4];
            memcpy(h, f + at, 16);
            if (h[0] != MAGIC || h[2] >= (uint32_t)P || h[3] >= NREC ||
                (int)h[1] != rec_len(h[2], h[3]) || at + h[1] > total) {
                mt_fail("no valid record at byte %lld of the data (magic %08x "
                        "len %u rank %u "
                        "seq %u): records overlap or a gap",
                        (long long)(disp + at), h[0], h[1], h[2], h[3]);
                break;
            }
            unsigned char want[128];
            make_rec(want, h[2], h[3]);
            if (memcmp(want, f + at, h[1]))
                mt_fail(
                    "record rank %u seq %u at byte %lld has corrupt payload",
                    h[2], h[3], (long long)(disp + at));
            if (seen[h[2] * NREC + h[3]]++)
                mt_fail("record rank %u seq %u appears twice", h[2], h[3]);
            if ((int)h[3] <= last[h[2]])
                mt_fail("record rank %u seq %u comes after seq %d of that rank",
                        h[2], h[3], last[h[2]]);
            last[h[2]] = h[3];
            at += h[1];
            nrec++;
        }
        if (at != total)
            mt_fail("records end at %lld, data is %lld bytes", (long long)at,
                    (long long)total);
        for (int q = 0; q < P * NREC; q++)
            if (!seen[q]) {
                mt_fail("record rank %d seq %d is missing", q / NREC, q % NREC);
                break;
            }
        free(f);
        free(seen);
        free(last);
    }
    MT_OK(MPI_File_close(&fh));
    mt_cleanup(MPI_COMM_WORLD, name);
}

static void ordered_test(void)
{
    char name[MT_NAME_MAX];
    MPI_File fh;
    MPI_Status st;
    int P = mt_nprocs, r = mt_rank;

    mt_begin("write_ordered/read_ordered");
    mt_name(name, "ordered");
    if (mt_fresh(MPI_COMM_WORLD, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh))
        return;
    int n1 = (r + 1) * 10 + 3, n2 = 50 - r % 50;
    int64_t t1 = 0, t2 = 0;
    for (int q = 0; q < P; q++) {
        t1 += (q + 1) * 10 + 3;
        t2 += 50 - q % 50;
    }
    unsigned char *a = malloc(n1), *b = malloc(n2);
    mt_fill_pat(a, n1, 10 + r, 0);
    mt_fill_pat(b, n2, 20 + r, 0);
    MT_OK(MPI_File_write_ordered(fh, a, n1, MPI_BYTE, &st));
    MT_OK(MPI_File_write_ordered(fh, b, n2, MPI_BYTE, &st));
    MPI_Offset pos;
    MT_OK(MPI_File_get_position_shared(fh, &pos));
    if (pos != t1 + t2)
        mt_fail("shared pointer %lld after two write_ordered, expected %lld",
                (long long)pos, (long long)(t1 + t2));
    mt_sync_barrier(fh, MPI_COMM_WORLD);
    /* expected file: round 1 in rank order, then round 2 */
    unsigned char *want = malloc(t1 + t2), *got = calloc(t1 + t2, 1);
    int64_t at = 0;
    for (int q = 0; q < P; q++) {
        mt_fill_pat(want + at, (q + 1) * 10 + 3, 10 + q, 0);
        at += (q + 1) * 10 + 3;
    }
    for (int q = 0; q < P; q++) {
        mt_fill_pat(want + at, 50 - q % 50, 20 + q, 0);
        at += 50 - q % 50;
    }
    MT_OK(MPI_File_read_at(fh, 0, got, (int)(t1 + t2), MPI_BYTE, &st));
    mt_compare("file after write_ordered", got, want, t1 + t2, 0);

    MT_OK(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    unsigned char *ra = calloc(n1, 1), *rb = calloc(n2, 1);
    MT_OK(MPI_File_read_ordered(fh, ra, n1, MPI_BYTE, &st));
    MT_OK(MPI_File_read_ordered(fh, rb, n2, MPI_BYTE, &st));
    mt_compare("read_ordered round 1", ra, a, n1, 0);
    mt_compare("read_ordered round 2", rb, b, n2, 0);
    MT_OK(MPI_File_close(&fh));
    free(a);
    free(b);
    free(ra);
    free(rb);
    free(want);
    free(got);
    mt_cleanup(MPI_COMM_WORLD, name);
}

static void seek_test(void)
{
    char name[MT_NAME_MAX];
    MPI_File fh;
    MPI_Status st;

    mt_begin("seek_shared and get_position_shared in etypes");
    mt_name(name, "seekshared");
    if (mt_fresh(MPI_COMM_WORLD, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh))
        return;
    int v[100];
    for (int i = 0; i < 100; i++)
        v[i] = i;
    if (mt_rank == 0)
        MT_OK(MPI_File_write_at(fh, 0, v, 100, MPI_INT, &st)); /* 400 bytes */
    mt_sync_barrier(fh, MPI_COMM_WORLD);
    /* view: ints from byte 16 */
    MT_OK(MPI_File_set_view(fh, 16, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    MPI_Offset pos = -1;
    MT_OK(MPI_File_get_position_shared(fh, &pos));
    if (pos != 0)
        mt_fail("set_view did not reset the shared pointer (at %lld)",
                (long long)pos);
    /* a fast rank's next seek_shared must not overtake a slow rank's query */
    MPI_Barrier(MPI_COMM_WORLD);
    MT_OK(MPI_File_seek_shared(fh, 5, MPI_SEEK_SET));
    MT_OK(MPI_File_get_position_shared(fh, &pos));
    if (pos != 5)
        mt_fail("seek_shared 5: position %lld", (long long)pos);
    MPI_Barrier(MPI_COMM_WORLD);
    MT_OK(MPI_File_seek_shared(fh, 3, MPI_SEEK_CUR));
    MT_OK(MPI_File_get_position_shared(fh, &pos));
    if (pos != 8)
        mt_fail("seek_shared +3: position %lld, expected 8", (long long)pos);
    MPI_Barrier(MPI_COMM_WORLD);
    MT_OK(MPI_File_seek_shared(fh, -2, MPI_SEEK_END));
    MT_OK(MPI_File_get_position_shared(fh, &pos));
    if (pos != 96 - 2)
        mt_fail("seek_shared -2 from the end: position %lld, expected 94",
                (long long)pos);
    MPI_Barrier(MPI_COMM_WORLD);
    /* the shared pointer is shared: rank 0 reads one int, everyone sees
     * the pointer move */
    MT_OK(MPI_File_seek_shared(fh, 10, MPI_SEEK_SET));
    if (mt_rank == 0) {
        int x = -1;
        MT_OK(MPI_File_read_shared(fh, &x, 1, MPI_INT, &st));
        if (x != 14)
            mt_fail("read_shared at view int 10 (file int 14) returned %d", x);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MT_OK(MPI_File_get_position_shared(fh, &pos));
    if (pos != 11)
        mt_fail(
            "after rank 0's read_shared of one int the shared pointer is %lld, "
            "expected 11",
            (long long)pos);
    /* (a negative offset is only detected on rank 0 by ROMIO, which then
     * skips the barrier the other ranks wait in: not tested) */
    MT_OK(MPI_File_close(&fh));
    mt_cleanup(MPI_COMM_WORLD, name);
}

static void read_shared_test(void)
{
    char name[MT_NAME_MAX];
    MPI_File fh;
    MPI_Status st;
    int P = mt_nprocs;
    const int N = 10 * P + 3, RS = 32;

    mt_begin("read_shared consumes each record once");
    mt_name(name, "rshared");
    if (mt_fresh(MPI_COMM_WORLD, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh))
        return;
    if (mt_rank == 0) {
        unsigned char *all = malloc((size_t)N * RS);
        for (int i = 0; i < N; i++) {
            uint32_t h[2] = {MAGIC, (uint32_t)i};
            memcpy(all + i * RS, h, 8);
            mt_fill_pat(all + i * RS + 8, RS - 8, 5000 + i, 0);
        }
        MT_OK(MPI_File_write_at(fh, 0, all, N * RS, MPI_BYTE, &st));
        free(all);
    }
    mt_sync_barrier(fh, MPI_COMM_WORLD);
    int *mine = malloc(sizeof(int) * (N + 1)), nmine = 0;
    for (;;) {
        unsigned char rec[64];
        if (MT_OK(MPI_File_read_shared(fh, rec, RS, MPI_BYTE, &st)))
            break;
        int c;
        MPI_Get_count(&st, MPI_BYTE, &c);
        if (c == 0)
            break;
        if (c != RS) {
            mt_fail("read_shared returned %d bytes, expected %d", c, RS);
            break;
        }
        uint32_t h[2];
        memcpy(h, rec, 8);
        unsigned char want[32];
        mt_fill_pat(want, RS - 8, 5000 + h[1], 0);
        if (h[0] != MAGIC || h[1] >= (uint32_t)N ||
            memcmp(want, rec + 8, RS - 8)) {
            mt_fail("read_shared returned a record that is not one (seq %u)",
                    h[1]);
            break;
        }
        if (nmine > N) {
            mt_fail("read_shared returned more records than the file has");
            break;
        }
        mine[nmine++] = (int)h[1];
    }
    int *counts = malloc(sizeof(int) * P), *displs = malloc(sizeof(int) * P);
    MPI_Gather(&nmine, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int tot = 0;
    if (mt_rank == 0)
        for (int q = 0; q < P; q++) {
            displs[q] = tot;
            tot += counts[q];
        }
    int *every = malloc(sizeof(int) * (tot + 1));
    MPI_Gatherv(mine, nmine, MPI_INT, every, counts, displs, MPI_INT, 0,
                MPI_COMM_WORLD);
    if (mt_rank == 0) {
        int *seen = calloc(N, sizeof(int));
        for (int i = 0; i < tot; i++)
            if (every[i] >= 0 && every[i] < N && seen[every[i]]++)
                mt_fail("record %d was read by two read_shared calls",
                        every[i]);
        for (int i = 0; i < N; i++)
            if (!seen[i])
                mt_fail("record %d was never read", i);
        if (tot != N)
            mt_fail("%d records read in total, the file has %d", tot, N);
        free(seen);
    }
    MT_OK(MPI_File_close(&fh));
    free(mine);
    free(counts);
    free(displs);
    free(every);
    mt_cleanup(MPI_COMM_WORLD, name);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    write_shared_test();
    ordered_test();
    seek_test();
    read_shared_test();
    return mt_finish();
}
