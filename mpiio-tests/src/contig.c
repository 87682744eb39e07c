/*
 * contig.c -- contiguous I/O with explicit offsets and individual file
 * pointers.
 *
 *  - a file per rank (MPI_COMM_SELF): sequential writes of 1 B .. 1 MiB
 *    through the individual pointer (position checked after each), read
 *    back sequentially, then read_at at scattered offsets and lengths;
 *  - one shared file: interleaved 1000-byte records at explicit offsets
 *    from every rank, every rank reads the whole file back; overwriting
 *    part of a record leaves its neighbours intact;
 *  - 4 MiB per rank in one call (spans every server);
 *  - counts of derived contiguous types and MPI_DOUBLE;
 *  - seek SEEK_SET/SEEK_CUR/SEEK_END, get_position, get_byte_offset, a
 *    negative seek is an error;
 *  - end of file: a read past EOF returns 0 bytes, one straddling EOF
 *    returns the bytes before it and moves the pointer by that much;
 *  - zero-count accesses.
 *
 *   contig -fname NAME [-hint K=V]...
 */
#include "mt.h"

#include <stdlib.h>
#include <string.h>

static int64_t count_of(MPI_Status *st)
{
    MPI_Count c = -1;
    MPI_Get_elements_x(st, MPI_BYTE, &c);
    return c;
}

static void own_file(void)
{
    char name[MT_NAME_MAX], tag[64];
    MPI_File fh;
    MPI_Status st;
    static const int sizes[] = {1, 7, 4096, 65536 + 13, 1 << 20, 3};
    const int ns = sizeof(sizes) / sizeof(sizes[0]);
    int64_t total = 0;

    mt_begin("own file: sequential individual pointer");
    snprintf(tag, sizeof(tag), "own%d", mt_rank);
    mt_name(name, tag);
    if (mt_fresh(MPI_COMM_SELF, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh))
        return;
    for (int i = 0; i < ns; i++)
        total += sizes[i];
    unsigned char *w = malloc(total), *r = malloc(total);
    mt_fill_pat(w, total, 10 + mt_rank, 0);
    int64_t at = 0;
    for (int i = 0; i < ns; i++) {
        if (MT_OK(MPI_File_write(fh, w + at, sizes[i], MPI_BYTE, &st)))
            break;
        if (count_of(&st) != sizes[i])
            mt_fail("write %d: status %lld bytes, expected %d", i,
                    (long long)count_of(&st), sizes[i]);
        at += sizes[i];
        MPI_Offset pos;
        MT_OK(MPI_File_get_position(fh, &pos));
        if (pos != at)
            mt_fail("after write %d the pointer is %lld, expected %lld", i,
                    (long long)pos, (long long)at);
    }
    MT_OK(MPI_File_seek(fh, 0, MPI_SEEK_SET));
    memset(r, 0, total);
    at = 0;
    for (int i = ns - 1; i >= 0; i--) { /* other chunking than the writes */
        if (MT_OK(MPI_File_read(fh, r + at, sizes[i], MPI_BYTE, &st)))
            break;
        if (count_of(&st) != sizes[i])
            mt_fail("read %d: status %lld bytes, expected %d", i,
                    (long long)count_of(&st), sizes[i]);
        at += sizes[i];
    }
    mt_compare("sequential read", r, w, total, 0);

    mt_begin("own file: read_at scattered");
    uint64_t x = 12345 + mt_rank;
    for (int i = 0; i < 40; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int64_t off = (int64_t)((x >> 20) % (uint64_t)total);
        int64_t len = (int64_t)((x >> 44) % 70000);
        if (off + len > total)
            len = total - off;
        memset(r, 0, len);
        if (MT_OK(MPI_File_read_at(fh, off, r, (int)len, MPI_BYTE, &st)))
            break;
        if (count_of(&st) != len)
            mt_fail("read_at %lld+%lld: %lld bytes", (long long)off,
                    (long long)len, (long long)count_of(&st));
        mt_compare("read_at", r, w + off, len, off);
    }
    MPI_Offset size;
    MT_OK(MPI_File_get_size(fh, &size));
    if (size != total)
        mt_fail("size %lld, expected %lld", (long long)size, (long long)total);

    mt_begin("own file: end of file");
    /* wholly past EOF: 0 bytes, pointer unchanged */
    memset(r, 0x55, 100);
    MT_OK(MPI_File_read_at(fh, total + 10, r, 100, MPI_BYTE, &st));
    if (count_of(&st) != 0)
        mt_fail("read_at past EOF returned %lld bytes",
                (long long)count_of(&st));
    /* straddling EOF through the pointer */
    MT_OK(MPI_File_seek(fh, total - 30, MPI_SEEK_SET));
    MT_OK(MPI_File_read(fh, r, 100, MPI_BYTE, &st));
    if (count_of(&st) != 30)
        mt_fail("read across EOF returned %lld bytes, expected 30",
                (long long)count_of(&st));
    else
        mt_compare("read across EOF", r, w + total - 30, 30, total - 30);
    MPI_Offset pos;
    MT_OK(MPI_File_get_position(fh, &pos));
    if (pos != total)
        mt_fail("after a read across EOF the pointer is %lld, expected %lld",
                (long long)pos, (long long)total);
    /* MPI_Get_count of a short read in a bigger type */
    MT_OK(MPI_File_read_at(fh, total - 8, r, 4, MPI_DOUBLE, &st));
    int cnt;
    MPI_Get_count(&st, MPI_DOUBLE, &cnt);
    if (cnt != 1)
        mt_fail("read of 4 doubles 8 bytes before EOF: MPI_Get_count = %d, "
                "expected 1",
                cnt);

    mt_begin("own file: zero-count accesses");
    MT_OK(MPI_File_seek(fh, 5, MPI_SEEK_SET));
    MT_OK(MPI_File_write(fh, w, 0, MPI_BYTE, &st));
    MT_OK(MPI_File_read(fh, r, 0, MPI_INT, &st));
    if (count_of(&st) != 0)
        mt_fail("zero-count read returned %lld bytes",
                (long long)count_of(&st));
    MT_OK(MPI_File_get_position(fh, &pos));
    if (pos != 5)
        mt_fail("zero-count accesses moved the pointer to %lld",
                (long long)pos);
    MT_OK(MPI_File_write_at(fh, total + 100, w, 0, MPI_BYTE, &st));
    MT_OK(MPI_File_get_size(fh, &size));
    if (size != total)
        mt_fail("a zero-count write_at past EOF changed the size to %lld",
                (long long)size);

    MT_OK(MPI_File_close(&fh));
    free(w);
    free(r);
    if (!mt_errors())
        MPI_File_delete(name, MPI_INFO_NULL);
}

static void shared_file(void)
{
    char name[MT_NAME_MAX];
    MPI_File fh;
    MPI_Status st;
    const int R = 1000, N = 50, P = mt_nprocs;
    int64_t total = (int64_t)R * N * P;

    mt_begin("shared file: interleaved records at explicit offsets");
    mt_name(name, "shared");
    if (mt_fresh(MPI_COMM_WORLD, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh))
        return;
    unsigned char *want = malloc(total), *got = malloc(total);
    mt_fill_pat(want, total, 4242, 0);
    /* each record from the pattern at its own file offset, so the whole
     * file equals `want` */
    for (int i = 0; i < N; i++) {
        int64_t off = ((int64_t)i * P + mt_rank) * R;
        MT_OK(MPI_File_write_at(fh, off, want + off, R, MPI_BYTE, &st));
    }
    mt_sync_barrier(fh, MPI_COMM_WORLD);
    memset(got, 0, total);
    MT_OK(MPI_File_read_at(fh, 0, got, (int)total, MPI_BYTE, &st));
    mt_compare("whole shared file", got, want, total, 0);

    mt_begin("shared file: overwrite part of a record");
    MPI_Barrier(MPI_COMM_WORLD);
    /* rank r rewrites bytes 100..199 of its record 3 */
    int64_t off = ((int64_t)3 * P + mt_rank) * R + 100;
    unsigned char nw[100];
    mt_fill_pat(nw, 100, 999 + mt_rank, 0);
    memcpy(want + off, nw, 100);
    for (int q = 0; q < P; q++)
        if (q != mt_rank) {
            unsigned char t[100];
            int64_t o = ((int64_t)3 * P + q) * R + 100;
            mt_fill_pat(t, 100, 999 + q, 0);
            memcpy(want + o, t, 100);
        }
    MT_OK(MPI_File_write_at(fh, off, nw, 100, MPI_BYTE, &st));
    mt_sync_barrier(fh, MPI_COMM_WORLD);
    memset(got, 0, total);
    MT_OK(MPI_File_read_at(fh, 0, got, (int)total, MPI_BYTE, &st));
    mt_compare("shared file after overwrites", got, want, total, 0);

    mt_begin("shared file: individual pointers and byte offsets");
    /* a view with a displacement: the pointer counts from disp */
    MT_OK(MPI_File_set_view(fh, 10, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    MPI_Offset pos, byte;
    MT_OK(MPI_File_seek(fh, 7, MPI_SEEK_SET));
    MT_OK(MPI_File_seek(fh, 5, MPI_SEEK_CUR));
    MT_OK(MPI_File_seek(fh, -2, MPI_SEEK_CUR));
    MT_OK(MPI_File_get_position(fh, &pos));
    if (pos != 10)
        mt_fail("seek 7, +5, -2: position %lld, expected 10", (long long)pos);
    MT_OK(MPI_File_get_byte_offset(fh, pos, &byte));
    if (byte != 10 + 4 * 10)
        mt_fail("byte offset of int 10 after disp 10: %lld, expected 50",
                (long long)byte);
    int vals[3];
    MT_OK(MPI_File_read(fh, vals, 3, MPI_INT, &st));
    if (memcmp(vals, want + 50, 12))
        mt_fail(
            "read 3 ints at view position 10 (byte 50) returned other bytes");
    MT_OK(MPI_File_get_position(fh, &pos));
    if (pos != 13)
        mt_fail("after reading 3 ints the position is %lld, expected 13",
                (long long)pos);
    /* SEEK_END is relative to the end of the file in etypes */
    MT_OK(MPI_File_seek(fh, -1, MPI_SEEK_END));
    MT_OK(MPI_File_get_position(fh, &pos));
    MT_OK(MPI_File_get_byte_offset(fh, pos, &byte));
    /* ROMIO: the end is the etype holding the last byte (ceiling) */
    if (byte != 10 + 4 * ((total - 10 + 3) / 4 - 1))
        mt_fail("seek -1 from the end: byte offset %lld (file size %lld)",
                (long long)byte, (long long)total);
    MT_EXPECT_CLASS(MPI_File_seek(fh, -1, MPI_SEEK_SET), MPI_ERR_ARG);

    MT_OK(MPI_File_close(&fh));
    free(want);
    free(got);
    MPI_Barrier(MPI_COMM_WORLD);
    mt_cleanup(MPI_COMM_WORLD, name);
}

static void big_and_typed(void)
{
    char name[MT_NAME_MAX];
    MPI_File fh;
    MPI_Status st;
    const int64_t B = 4 << 20;

    mt_begin("4 MiB per rank in one call");
    mt_name(name, "big");
    if (mt_fresh(MPI_COMM_WORLD, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh))
        return;
    unsigned char *w = malloc(B), *r = malloc(B);
    mt_fill_pat(w, B, 31 + mt_rank, 0);
    MT_OK(MPI_File_write_at(fh, mt_rank * B, w, (int)B, MPI_BYTE, &st));
    if (count_of(&st) != B)
        mt_fail("4 MiB write_at: status %lld bytes", (long long)count_of(&st));
    mt_sync_barrier(fh, MPI_COMM_WORLD);
    /* read the neighbour's block */
    int q = (mt_rank + 1) % mt_nprocs;
    unsigned char *wq = malloc(B);
    mt_fill_pat(wq, B, 31 + q, 0);
    memset(r, 0, B);
    MT_OK(MPI_File_read_at(fh, q * B, r, (int)B, MPI_BYTE, &st));
    mt_compare("4 MiB read_at of another rank's block", r, wq, B, q * B);

    mt_begin("counts of derived contiguous types");
    MPI_Datatype ten;
    MPI_Type_contiguous(10, MPI_INT, &ten);
    MPI_Type_commit(&ten);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Offset at = (MPI_Offset)mt_nprocs * B + mt_rank * 1000;
    MT_OK(MPI_File_write_at(fh, at, w, 20, ten, &st)); /* 800 bytes */
    int cnt = -1;
    MPI_Get_count(&st, ten, &cnt);
    if (cnt != 20)
        mt_fail("write_at 20 x contiguous(10 ints): MPI_Get_count = %d", cnt);
    double d[25];
    MT_OK(MPI_File_read_at(fh, at, d, 25, MPI_DOUBLE, &st));
    MPI_Get_count(&st, MPI_DOUBLE, &cnt);
    if (cnt != 25 || memcmp(d, w, 200))
        mt_fail(
            "read_at 25 doubles of what 20 x 10 ints wrote: count %d, data %s",
            cnt, memcmp(d, w, 200) ? "differs" : "same");
    MPI_Type_free(&ten);
    MT_OK(MPI_File_close(&fh));
    free(w);
    free(r);
    free(wq);
    MPI_Barrier(MPI_COMM_WORLD);
    mt_cleanup(MPI_COMM_WORLD, name);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    own_file();
    shared_file();
    big_and_typed();
    return mt_finish();
}
