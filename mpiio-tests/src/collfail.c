/*
 * collfail.c -- a collective call that fails on one rank fails on every
 * rank, and nobody hangs (test_collfail.py kills or stops a server while
 * this runs).
 *
 * Every rank loops over one collective call (-call NAME) on a block of
 * -block bytes per iteration: block b = iter * nprocs + rank at file offset
 * b * block (with striping_unit = block and one subfile per rank, rank r's
 * blocks all live on subfile r), until the first error or -seconds.  After
 * -warm iterations rank 0 creates the file -ready, the test's cue to kill
 * or stop a server.  At its first error each rank notes when the call
 * returned (CLOCK_REALTIME), stops, closes the file and prints
 *
 *   RESULT rank=R acked=N class=NAME t_err=T close=NAME t_close=T msg=TEXT
 *
 * (also into the file -result PREFIX.R when given: mpiexec may interleave
 * the ranks' lines).
 * acked: calls that returned MPI_SUCCESS (for sync: write_at + sync
 * pairs).  Every 8-byte word written holds its file offset ^ PAT_XOR, so
 * the test checks the acknowledged blocks with `galley get`.  Read calls
 * read blocks written before the loop (-prefill iterations' worth),
 * cycling, checked here word by word while the calls succeed.
 *
 * Calls: write_at_all write_all write_at_all_split write_all_split
 * read_at_all read_all read_all_split write_ordered write_ordered_split
 * read_ordered set_size sync.
 */
#include "mt.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAT_XOR 0x5bd1e995deadbeefull

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void fill(uint64_t *w, int64_t bytes, int64_t off)
{
    for (int64_t i = 0; i < bytes / 8; i++)
        w[i] = (uint64_t)(off + 8 * i) ^ PAT_XOR;
}

static int64_t check(const uint64_t *w, int64_t bytes, int64_t off)
{
    for (int64_t i = 0; i < bytes / 8; i++)
        if (w[i] != ((uint64_t)(off + 8 * i) ^ PAT_XOR))
            return off + 8 * i;
    return -1;
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    const char *call = mt_opt("call", "write_at_all");
    const char *ready = mt_opt("ready", NULL);
    int64_t block = atoll(mt_opt("block", "65536"));
    int warm = atoi(mt_opt("warm", "3"));
    int prefill = atoi(mt_opt("prefill", "8"));
    double seconds = atof(mt_opt("seconds", "60"));
    int nprocs = mt_nprocs, rank = mt_rank;
    int reading = strncmp(call, "read", 4) == 0;
    int ordered = strstr(call, "ordered") != NULL;
    int viewed = strcmp(call, "write_all") == 0 ||
                 strcmp(call, "write_all_split") == 0 ||
                 strcmp(call, "read_all") == 0 ||
                 strcmp(call, "read_all_split") == 0;
    if (block <= 0 || block % 8) {
        mt_fail("-block must be a positive multiple of 8");
        return mt_finish();
    }

    MPI_File fh;
    if (mt_fresh(MPI_COMM_WORLD, mt_fname, MPI_MODE_RDWR, MPI_INFO_NULL, &fh))
        return mt_finish();
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    uint64_t *buf = malloc(block);

    /* the blocks the read calls read, written independently and synced */
    if (reading) {
        for (int i = 0; i < prefill; i++) {
            int64_t off = ((int64_t)i * nprocs + rank) * block;
            fill(buf, block, off);
            MT_OK(MPI_File_write_at(fh, off, buf, (int)block, MPI_BYTE,
                                    MPI_STATUS_IGNORE));
        }
        MT_OK(MPI_File_sync(fh));
        MPI_Barrier(MPI_COMM_WORLD);
    }
    /* each rank's blocks through its own view: the individual pointer
     * moves one block per call */
    MPI_Datatype tile = MPI_DATATYPE_NULL;
    if (viewed) {
        MPI_Datatype c;
        MPI_Type_contiguous((int)block, MPI_BYTE, &c);
        MPI_Type_create_resized(c, 0, block * nprocs, &tile);
        MPI_Type_commit(&tile);
        MPI_Type_free(&c);
        MT_OK(MPI_File_set_view(fh, rank * block, MPI_BYTE, tile, "native",
                                MPI_INFO_NULL));
    }
    if (mt_errors())
        return mt_finish();

    int acked = 0, err = MPI_SUCCESS;
    double t0 = now(), t_err = 0;
    for (int i = 0; err == MPI_SUCCESS; i++) {
        if (now() - t0 > seconds)
            break;
        int it = reading ? i % prefill : i;
        int64_t off = ((int64_t)it * nprocs + rank) * block;
        MPI_Status st;
        if (!reading)
            fill(buf, block, off);
        else
            memset(buf, 0, block);
        if (viewed && reading)
            MPI_File_seek(fh, (MPI_Offset)it * block, MPI_SEEK_SET);

        if (!strcmp(call, "write_at_all"))
            err =
                MPI_File_write_at_all(fh, off, buf, (int)block, MPI_BYTE, &st);
        else if (!strcmp(call, "write_all"))
            err = MPI_File_write_all(fh, buf, (int)block, MPI_BYTE, &st);
        else if (!strcmp(call, "write_at_all_split")) {
            err =
                MPI_File_write_at_all_begin(fh, off, buf, (int)block, MPI_BYTE);
            int e2 = MPI_File_write_at_all_end(fh, buf, &st);
            if (err == MPI_SUCCESS)
                err = e2;
        } else if (!strcmp(call, "write_all_split")) {
            err = MPI_File_write_all_begin(fh, buf, (int)block, MPI_BYTE);
            int e2 = MPI_File_write_all_end(fh, buf, &st);
            if (err == MPI_SUCCESS)
                err = e2;
        } else if (!strcmp(call, "read_at_all"))
            err = MPI_File_read_at_all(fh, off, buf, (int)block, MPI_BYTE, &st);
        else if (!strcmp(call, "read_all"))
            err = MPI_File_read_all(fh, buf, (int)block, MPI_BYTE, &st);
        else if (!strcmp(call, "read_all_split")) {
            err = MPI_File_read_all_begin(fh, buf, (int)block, MPI_BYTE);
            int e2 = MPI_File_read_all_end(fh, buf, &st);
            if (err == MPI_SUCCESS)
                err = e2;
        } else if (!strcmp(call, "write_ordered"))
            err = MPI_File_write_ordered(fh, buf, (int)block, MPI_BYTE, &st);
        else if (!strcmp(call, "write_ordered_split")) {
            err = MPI_File_write_ordered_begin(fh, buf, (int)block, MPI_BYTE);
            int e2 = MPI_File_write_ordered_end(fh, buf, &st);
            if (err == MPI_SUCCESS)
                err = e2;
        } else if (!strcmp(call, "read_ordered")) {
            /* past the prefilled blocks these read beyond the end of the
             * file: still one request per server */
            err = MPI_File_read_ordered(fh, buf, (int)block, MPI_BYTE, &st);
            it = i < prefill ? i : -1;
        } else if (!strcmp(call, "set_size"))
            err = MPI_File_set_size(fh, (MPI_Offset)(i + 1) * nprocs * block);
        else if (!strcmp(call, "sync")) {
            err = MPI_File_write_at(fh, off, buf, (int)block, MPI_BYTE, &st);
            int e2 = MPI_File_sync(fh);
            if (err == MPI_SUCCESS)
                err = e2;
        } else {
            mt_fail("unknown -call %s", call);
            break;
        }
        if (err != MPI_SUCCESS) {
            t_err = now();
            break;
        }
        acked++;
        if (reading && it >= 0) {
            int64_t bad =
                check(buf, block, ((int64_t)it * nprocs + rank) * block);
            if (bad >= 0)
                mt_fail("%s %d: wrong data at file offset %lld", call, i,
                        (long long)bad);
        }
        if (ordered && i < 2) {
            /* the shared pointer hands out blocks in rank order */
            MPI_Offset pos;
            MPI_Barrier(MPI_COMM_WORLD); /* nobody is in the next call yet */
            MPI_File_get_position_shared(fh, &pos);
            MPI_Barrier(MPI_COMM_WORLD);
            if (pos != (MPI_Offset)(i + 1) * nprocs * block)
                mt_fail("shared pointer at %lld after %d calls", (long long)pos,
                        i + 1);
        }
        if (rank == 0 && ready && acked == warm) {
            FILE *f = fopen(ready, "w");
            if (f)
                fclose(f);
        }
    }

    int cls = MPI_SUCCESS, len = 0;
    char msg[MPI_MAX_ERROR_STRING] = "";
    if (err != MPI_SUCCESS) {
        MPI_Error_class(err, &cls);
        MPI_Error_string(err, msg, &len);
        for (char *c = msg; *c; c++)
            if (*c == '\n')
                *c = ' ';
    }
    int cerr = MPI_File_close(&fh);
    double t_close = now();
    int ccls = MPI_SUCCESS;
    if (cerr != MPI_SUCCESS)
        MPI_Error_class(cerr, &ccls);
    char line[MPI_MAX_ERROR_STRING + 256];
    snprintf(line, sizeof(line),
             "RESULT rank=%d acked=%d class=%s t_err=%.6f close=%s "
             "t_close=%.6f msg=%s\n",
             rank, acked, err == MPI_SUCCESS ? "none" : mt_class_name(cls),
             t_err, mt_class_name(ccls), t_close, msg);
    fputs(line, stdout);
    fflush(stdout);
    /* and to a file of its own: mpiexec may interleave the ranks' lines */
    const char *result = mt_opt("result", NULL);
    if (result) {
        char fn[MT_NAME_MAX];
        snprintf(fn, sizeof(fn), "%s.%d", result, rank);
        FILE *f = fopen(fn, "w");
        if (f) {
            fputs(line, f);
            fclose(f);
        }
    }
    if (tile != MPI_DATATYPE_NULL)
        MPI_Type_free(&tile);
    free(buf);
    return mt_finish();
}
