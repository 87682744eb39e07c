/*
 * sizes.c -- MPI_File_set_size, get_size, preallocate.
 *
 * Run twice inside: on a file with the default layout and on one with
 * striping_unit=100 (odd cuts: sizes fall in the middle of stripes of
 * every subfile).
 *  - a fresh file has size 0; a write past the end leaves a hole that
 *    reads as zeros; the size is the end of the last byte written;
 *  - set_size to extend: the new bytes read as zeros, old data intact;
 *  - set_size to shrink: size drops, reads past it return nothing, and
 *    when the file grows again the cut-off bytes do not come back;
 *  - preallocate: size at least the request, data intact, new bytes
 *    zero; preallocating less than the size does not shrink;
 *  - every rank sees the same size after each collective call; the size
 *    is in bytes whatever the view.
 *
 *   sizes -fname NAME [-hint K=V]...
 */
#include "mt.h"

#include <stdlib.h>
#include <string.h>

#define MAXLEN 200000

static unsigned char model[MAXLEN]; /* expected content */
static int64_t model_size;

static void expect_size(MPI_File fh, int64_t want, const char *when)
{
    MPI_Offset s = -1, mn, mx;
    MT_OK(MPI_File_get_size(fh, &s));
    MPI_Allreduce(&s, &mn, 1, MPI_OFFSET, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&s, &mx, 1, MPI_OFFSET, MPI_MAX, MPI_COMM_WORLD);
    if (s != want)
        mt_fail("%s: size %lld, expected %lld", when, (long long)s,
                (long long)want);
    else if (mn != mx)
        mt_fail("%s: ranks disagree on the size (%lld..%lld)", when,
                (long long)mn, (long long)mx);
}

/* Every rank reads [0, model_size + 1000) and compares with the model. */
static void expect_content(MPI_File fh, const char *when)
{
    static unsigned char got[MAXLEN + 1000];
    MPI_Status st;
    int64_t n = model_size + 1000;
    memset(got, 0xAB, n);
    MT_OK(MPI_File_read_at(fh, 0, got, (int)n, MPI_BYTE, &st));
    int c;
    MPI_Get_count(&st, MPI_BYTE, &c);
    if (c != model_size)
        mt_fail(
            "%s: reading %lld bytes from 0 returned %d, expected the size %lld",
            when, (long long)n, c, (long long)model_size);
    char what[200];
    snprintf(what, sizeof(what), "%s: content", when);
    mt_compare(what, got, model, model_size, 0);
    MPI_Barrier(MPI_COMM_WORLD); /* before anyone changes the file again */
}

static void put(MPI_File fh, int64_t off, int64_t n, uint32_t seed)
{
    MPI_Status st;
    unsigned char *b = malloc(n);
    mt_fill_pat(b, n, seed, 0);
    if (mt_rank == 0)
        MT_OK(MPI_File_write_at(fh, off, b, (int)n, MPI_BYTE, &st));
    memcpy(model + off, b, n);
    if (off + n > model_size)
        model_size = off + n;
    free(b);
    mt_sync_barrier(fh, MPI_COMM_WORLD);
}

static void resize(MPI_File fh, int64_t size)
{
    MT_OK(MPI_File_set_size(fh, size));
    if (size < model_size)
        memset(model + size, 0, model_size - size); /* beyond the size: zeros */
    else
        memset(model + model_size, 0, size - model_size);
    model_size = size;
    mt_sync_barrier(fh, MPI_COMM_WORLD);
}

static void run(const char *tag, MPI_Info extra)
{
    char name[MT_NAME_MAX], t[128];
    MPI_File fh;
    mt_name(name, tag);
    memset(model, 0, sizeof(model));
    model_size = 0;

#define STEP(s) (snprintf(t, sizeof(t), "%s: %s", tag, s), mt_begin(t), t)
    STEP("fresh file");
    if (mt_fresh(MPI_COMM_WORLD, name, MPI_MODE_RDWR, extra, &fh))
        return;
    expect_size(fh, 0, t);

    STEP("write past the end leaves zeros");
    put(fh, 1000, 10, 1);
    expect_size(fh, 1010, t);
    expect_content(fh, t);
    put(fh, 5000, 3333, 2);
    expect_size(fh, 8333, t);
    expect_content(fh, t);

    STEP("set_size extends with zeros");
    resize(fh, 50001);
    expect_size(fh, 50001, t);
    expect_content(fh, t);

    STEP("set_size shrinks");
    resize(fh, 6001);
    expect_size(fh, 6001, t);
    expect_content(fh, t);
    {
        unsigned char b[100];
        MPI_Status st;
        int c;
        MT_OK(MPI_File_read_at(fh, 7000, b, 100, MPI_BYTE, &st));
        MPI_Get_count(&st, MPI_BYTE, &c);
        if (c != 0)
            mt_fail(
                "%s: read at 7000 after shrinking to 6001 returned %d bytes", t,
                c);
        MPI_Barrier(MPI_COMM_WORLD);
    }

    STEP("cut-off bytes do not come back");
    put(fh, 9000, 50, 3); /* grows the file past the old data */
    expect_size(fh, 9050, t);
    expect_content(fh, t); /* 6001..9000 must be zeros, not 2's data */
    resize(fh, 8000);
    resize(fh, 20000);
    expect_content(fh, t);

    STEP("set_size to 0 and rewrite");
    resize(fh, 0);
    expect_size(fh, 0, t);
    put(fh, 0, 777, 4);
    expect_content(fh, t);

    STEP("preallocate");
    MT_OK(MPI_File_preallocate(fh, 100000));
    {
        MPI_Offset s;
        MT_OK(MPI_File_get_size(fh, &s));
        if (s < 100000)
            mt_fail("%s: size %lld after preallocate(100000)", t, (long long)s);
        memset(model + model_size, 0, s - model_size);
        model_size = s;
    }
    mt_sync_barrier(fh, MPI_COMM_WORLD);
    expect_content(fh, t);
    MT_OK(MPI_File_preallocate(fh, 10));
    expect_size(fh, model_size, "preallocate(10) after 100000 must not shrink");
    expect_content(fh, t);

    STEP("size is in bytes whatever the view");
    MT_OK(MPI_File_set_view(fh, 24, MPI_DOUBLE, MPI_DOUBLE, "native",
                            MPI_INFO_NULL));
    expect_size(fh, model_size, t);
    MT_OK(MPI_File_set_size(fh, 12345));
    model_size = 12345;
    expect_size(fh, 12345, t);
    MT_OK(
        MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    mt_sync_barrier(fh, MPI_COMM_WORLD);
    expect_content(fh, t);

    STEP("size after reopen");
    MT_OK(MPI_File_close(&fh));
    MPI_Info info = mt_info_with(extra);
    if (!MT_OK(
            MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, info, &fh))) {
        expect_size(fh, 12345, t);
        expect_content(fh, t);
        MT_OK(MPI_File_close(&fh));
    }
    MPI_Info_free(&info);
    mt_cleanup(MPI_COMM_WORLD, name);
#undef STEP
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    run("sizes-default", MPI_INFO_NULL);
    MPI_Info odd;
    MPI_Info_create(&odd);
    MPI_Info_set(odd, "striping_unit", "100");
    run("sizes-unit100", odd);
    MPI_Info_free(&odd);
    return mt_finish();
}
