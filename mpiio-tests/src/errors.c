/*
 * errors.c -- error classes and open modes.
 *
 *  - open of a missing file without MPI_MODE_CREATE: MPI_ERR_NO_SUCH_FILE;
 *  - MPI_MODE_CREATE|MPI_MODE_EXCL on an existing file: MPI_ERR_FILE_EXISTS
 *    (and the file is untouched);
 *  - MPI_File_delete of a missing file: MPI_ERR_NO_SUCH_FILE;
 *  - MPI_MODE_DELETE_ON_CLOSE: the file is gone after the close;
 *  - MPI_MODE_APPEND: both pointers start at the end, writes append;
 *  - writing a file opened MPI_MODE_RDONLY: MPI_ERR_READ_ONLY (or
 *    MPI_ERR_ACCESS); bad amode combinations: MPI_ERR_AMODE;
 *  - MPI_MODE_RDONLY open of an existing file reads it;
 *  - a failed open leaves no file behind and the next open works.
 * With -unreachable (run with GALLEY_CLUSTER naming servers that are not
 * there): open and delete fail with MPI_ERR_IO, nothing hangs.
 *
 *   errors -fname NAME [-unreachable] [-hint K=V]...
 */
#include "mt.h"

#include <stdlib.h>
#include <string.h>

static int class_of(int err)
{
    int c = MPI_SUCCESS;
    if (err != MPI_SUCCESS)
        MPI_Error_class(err, &c);
    return c;
}

static void unreachable(void)
{
    char name[MT_NAME_MAX];
    MPI_File fh = MPI_FILE_NULL;
    mt_begin("servers unreachable");
    mt_name(name, "unreachable");
    double t0 = MPI_Wtime();
    int err = MPI_File_open(MPI_COMM_WORLD, name,
                            MPI_MODE_CREATE | MPI_MODE_RDWR, mt_info, &fh);
    MT_EXPECT_CLASS(err, MPI_ERR_IO);
    if (err == MPI_SUCCESS)
        MPI_File_close(&fh);
    err = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, mt_info, &fh);
    MT_EXPECT_CLASS(err, MPI_ERR_IO);
    if (err == MPI_SUCCESS)
        MPI_File_close(&fh);
    if (mt_rank == 0)
        MT_EXPECT_CLASS(MPI_File_delete(name, MPI_INFO_NULL), MPI_ERR_IO);
    if (mt_rank == 0)
        printf("unreachable servers reported in %.1f s\n", MPI_Wtime() - t0);
}

/* Open and delete of a missing file. */
static void missing(void)
{
    char name[MT_NAME_MAX];
    MPI_File fh = MPI_FILE_NULL;
    int err;
    mt_begin("open a missing file without CREATE");
    mt_name(name, "missing");
    mt_remove(MPI_COMM_WORLD, name);
    err = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDWR, mt_info, &fh);
    MT_EXPECT_CLASS(err, MPI_ERR_NO_SUCH_FILE);
    if (err == MPI_SUCCESS)
        MPI_File_close(&fh);
    err = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, mt_info, &fh);
    MT_EXPECT_CLASS(err, MPI_ERR_NO_SUCH_FILE);
    if (err == MPI_SUCCESS)
        MPI_File_close(&fh);

    mt_begin("delete a missing file");
    if (mt_rank == 0)
        MT_EXPECT_CLASS(MPI_File_delete(name, MPI_INFO_NULL),
                        MPI_ERR_NO_SUCH_FILE);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* CREATE|EXCL on an existing file leaves it untouched; it cannot be
 * written when opened read-only. */
static void excl(void)
{
    char name[MT_NAME_MAX];
    MPI_File fh = MPI_FILE_NULL;
    MPI_Status st;
    int err;
    mt_begin("CREATE|EXCL on an existing file");
    mt_name(name, "excl");
    if (!mt_fresh(MPI_COMM_WORLD, name, MPI_MODE_RDWR | MPI_MODE_EXCL,
                  MPI_INFO_NULL, &fh)) {
        int v = 4242;
        if (mt_rank == 0)
            MT_OK(MPI_File_write_at(fh, 0, &v, 1, MPI_INT, &st));
        MT_OK(MPI_File_close(&fh));
        err = MPI_File_open(MPI_COMM_WORLD, name,
                            MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR,
                            mt_info, &fh);
        MT_EXPECT_CLASS(err, MPI_ERR_FILE_EXISTS);
        if (err == MPI_SUCCESS)
            MPI_File_close(&fh);
        /* untouched */
        if (!MT_OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, mt_info,
                                 &fh))) {
            int got = -1;
            MPI_Offset size = -1;
            MT_OK(MPI_File_read_at(fh, 0, &got, 1, MPI_INT, &st));
            MT_OK(MPI_File_get_size(fh, &size));
            if (got != v || size != 4)
                mt_fail("after a failed EXCL open the file holds %d (size "
                        "%lld), expected "
                        "4242 (size 4)",
                        got, (long long)size);

            mt_begin("writing a read-only file");
            err = MPI_File_write_at(fh, 0, &v, 1, MPI_INT, &st);
            int c = class_of(err);
            if (c != MPI_ERR_READ_ONLY && c != MPI_ERR_ACCESS)
                mt_fail(
                    "write_at on a RDONLY file: expected MPI_ERR_READ_ONLY or "
                    "MPI_ERR_ACCESS, got %s",
                    mt_class_name(c));
            MT_OK(MPI_File_close(&fh));
        }
        mt_remove(MPI_COMM_WORLD, name);
    }
}

/* Bad amode combinations create nothing. */
static void bad_amode(void)
{
    char name[MT_NAME_MAX];
    MPI_File fh = MPI_FILE_NULL;
    int err;
    mt_begin("bad amode combinations");
    mt_name(name, "amode");
    mt_remove(MPI_COMM_WORLD, name);
    err = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY | MPI_MODE_CREATE,
                        mt_info, &fh);
    MT_EXPECT_CLASS(err, MPI_ERR_AMODE);
    if (err == MPI_SUCCESS)
        MPI_File_close(&fh);
    err = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDWR | MPI_MODE_WRONLY,
                        mt_info, &fh);
    MT_EXPECT_CLASS(err, MPI_ERR_AMODE);
    if (err == MPI_SUCCESS)
        MPI_File_close(&fh);
    /* none of that created the file */
    err = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, mt_info, &fh);
    MT_EXPECT_CLASS(err, MPI_ERR_NO_SUCH_FILE);
    if (err == MPI_SUCCESS)
        MPI_File_close(&fh);
}

/* A DELETE_ON_CLOSE file is usable, then gone. */
static void delete_on_close(void)
{
    char name[MT_NAME_MAX];
    MPI_File fh = MPI_FILE_NULL;
    MPI_Status st;
    int err;
    mt_begin("DELETE_ON_CLOSE");
    mt_name(name, "doc");
    mt_remove(MPI_COMM_WORLD, name);
    if (!MT_OK(MPI_File_open(MPI_COMM_WORLD, name,
                             MPI_MODE_CREATE | MPI_MODE_RDWR |
                                 MPI_MODE_DELETE_ON_CLOSE,
                             mt_info, &fh))) {
        int v = mt_rank, got = -1;
        MT_OK(MPI_File_write_at(fh, 4 * mt_rank, &v, 1, MPI_INT, &st));
        mt_sync_barrier(fh, MPI_COMM_WORLD);
        MT_OK(MPI_File_read_at(fh, 4 * mt_rank, &got, 1, MPI_INT, &st));
        if (got != v)
            mt_fail("DELETE_ON_CLOSE file: read %d, expected %d", got, v);
        MT_OK(MPI_File_close(&fh));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    err = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, mt_info, &fh);
    if (class_of(err) != MPI_ERR_NO_SUCH_FILE)
        mt_fail(
            "a DELETE_ON_CLOSE file can still be opened after the close (%s)",
            mt_class_name(class_of(err)));
    if (err == MPI_SUCCESS)
        MPI_File_close(&fh);
}

/* APPEND: both pointers start at the end; writes append. */
static void append(void)
{
    char name[MT_NAME_MAX];
    MPI_File fh = MPI_FILE_NULL;
    MPI_Status st;
    mt_begin("APPEND");
    mt_name(name, "append");
    if (!mt_fresh(MPI_COMM_WORLD, name, MPI_MODE_WRONLY, MPI_INFO_NULL, &fh)) {
        char head[100];
        memset(head, 'h', sizeof(head));
        if (mt_rank == 0)
            MT_OK(MPI_File_write_at(fh, 0, head, 100, MPI_CHAR, &st));
        MT_OK(MPI_File_close(&fh));
    }
    if (!MT_OK(MPI_File_open(MPI_COMM_WORLD, name,
                             MPI_MODE_WRONLY | MPI_MODE_APPEND, mt_info,
                             &fh))) {
        MPI_Offset pos = -1, spos = -1;
        MT_OK(MPI_File_get_position(fh, &pos));
        MT_OK(MPI_File_get_position_shared(fh, &spos));
        if (pos != 100)
            mt_fail("APPEND: individual pointer at %lld on open, expected 100 "
                    "(the end)",
                    (long long)pos);
        if (spos != 100)
            mt_fail("APPEND: shared pointer at %lld on open, expected 100 (the "
                    "end)",
                    (long long)spos);
        /* every rank appends one record through the individual pointer,
         * placed by rank */
        char rec[10];
        memset(rec, 'a' + mt_rank % 26, sizeof(rec));
        MT_OK(MPI_File_seek(fh, 10 * mt_rank, MPI_SEEK_CUR));
        MT_OK(MPI_File_write(fh, rec, 10, MPI_CHAR, &st));
        MT_OK(MPI_File_close(&fh));
        MPI_Barrier(MPI_COMM_WORLD);
        if (!MT_OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, mt_info,
                                 &fh))) {
            int n = 100 + 10 * mt_nprocs;
            char *all = calloc(n + 1, 1);
            MPI_Offset size = -1;
            MT_OK(MPI_File_get_size(fh, &size));
            if (size != n)
                mt_fail("APPEND: size %lld after appends, expected %d",
                        (long long)size, n);
            MT_OK(MPI_File_read_at(fh, 0, all, n, MPI_CHAR, &st));
            for (int i = 0; i < n; i++) {
                char want = i < 100 ? 'h' : 'a' + ((i - 100) / 10) % 26;
                if (all[i] != want) {
                    mt_fail("APPEND: byte %d is '%c', expected '%c'", i, all[i],
                            want);
                    break;
                }
            }
            free(all);
            MT_OK(MPI_File_close(&fh));
        }
    }
    mt_remove(MPI_COMM_WORLD, name);
}

/* A failed open leaves no file behind; the next open works. */
static void failed_open(void)
{
    char other[MT_NAME_MAX];
    MPI_File fh = MPI_FILE_NULL;
    int err;
    mt_begin("a failed open leaves nothing behind");
    mt_name(other, "never");
    mt_remove(MPI_COMM_WORLD, other);
    err = MPI_File_open(MPI_COMM_WORLD, other, MPI_MODE_RDWR, mt_info, &fh);
    MT_EXPECT_CLASS(err, MPI_ERR_NO_SUCH_FILE);
    if (err == MPI_SUCCESS)
        MPI_File_close(&fh);
    if (!mt_fresh(MPI_COMM_WORLD, other, MPI_MODE_RDWR | MPI_MODE_EXCL,
                  MPI_INFO_NULL, &fh))
        MT_OK(MPI_File_close(&fh));
    mt_remove(MPI_COMM_WORLD, other);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    if (mt_flag("unreachable")) {
        unreachable();
        return mt_finish();
    }
    missing();
    excl();
    bad_amode();
    delete_on_close();
    append();
    failed_open();
    return mt_finish();
}
