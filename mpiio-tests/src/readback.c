/*
 * readback.c -- read existing files back, read-only, and compare them with
 * local copies (tests/test_fulldisk.py runs it while a server's disk is
 * full: nothing here may need free space).
 *
 * For each line "NAME LOCAL" of the list file: MPI_File_open of NAME on
 * MPI_COMM_WORLD with MPI_MODE_RDONLY, MPI_File_get_size equal to LOCAL's
 * size, every rank reads the whole file (its own quarter collectively,
 * then everything independently) and compares it with LOCAL's bytes, the
 * shared file pointer is 0 after the open, and MPI_File_close.
 *
 *   readback -fname galley:ANY -list PATH [-hint K=V]...
 */
#include "mt.h"

#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    if (f && fseek(f, 0, SEEK_END) == 0 && (*len = ftell(f)) >= 0 &&
        fseek(f, 0, SEEK_SET) == 0 && (buf = malloc(*len + 1)) &&
        fread(buf, 1, *len, f) != (size_t)*len) {
        free(buf);
        buf = NULL;
    }
    if (f)
        fclose(f);
    return buf;
}

static void check(const char *name, const char *local)
{
    long len = 0;
    char *want = slurp(local, &len);
    if (!want) {
        mt_fail("%s: cannot read the local copy %s", name, local);
        return;
    }
    char *got = malloc(len + 1);
    MPI_File fh;
    MPI_Status st;
    if (MT_OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, mt_info,
                            &fh))) {
        mt_fail("%s: read-only open failed", name);
        goto out_free;
    }
    MPI_Offset size = -1, pos = -1;
    MT_OK(MPI_File_get_size(fh, &size));
    if (size != len)
        mt_fail("%s: size %lld, expected %ld", name, (long long)size, len);
    MT_OK(MPI_File_get_position_shared(fh, &pos));
    if (pos != 0)
        mt_fail("%s: shared position %lld after open", name, (long long)pos);

    /* collectively: rank r reads the r-th part */
    long part = (len + mt_nprocs - 1) / mt_nprocs;
    long lo = part * mt_rank < len ? part * mt_rank : len;
    long hi = lo + part < len ? lo + part : len;
    memset(got, 0, len + 1);
    if (!MT_OK(MPI_File_read_at_all(fh, lo, got + lo, (int)(hi - lo), MPI_BYTE,
                                    &st)) &&
        memcmp(got + lo, want + lo, hi - lo) != 0)
        mt_fail("%s: bytes %ld..%ld read collectively differ", name, lo, hi);
    /* independently: the whole file */
    memset(got, 0, len + 1);
    if (!MT_OK(MPI_File_read_at(fh, 0, got, (int)len, MPI_BYTE, &st)) &&
        memcmp(got, want, len) != 0)
        mt_fail("%s: the bytes read differ", name);
    MT_OK(MPI_File_close(&fh));
out_free:
    free(got);
    free(want);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    const char *list = mt_opt("list", NULL);
    FILE *f = list ? fopen(list, "r") : NULL;
    if (!f) {
        mt_fail("no -list file");
        return mt_finish();
    }
    mt_begin("read back");
    char name[MT_NAME_MAX], local[MT_NAME_MAX];
    int n = 0;
    while (fscanf(f, "%1023s %1023s", name, local) == 2) {
        check(name, local);
        n++;
    }
    fclose(f);
    if (n == 0)
        mt_fail("the list names no file");
    if (mt_rank == 0)
        printf("read back %d files\n", n);
    return mt_finish();
}
