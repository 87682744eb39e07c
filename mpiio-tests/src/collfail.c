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

/* The run's options and file, as main sets them up. */
typedef struct run {
    const char *call, *ready;
    int64_t block;
    int warm, prefill;
    double seconds;
    int nprocs, rank;
    int reading, ordered, viewed;
    MPI_File fh;
    uint64_t *buf;
} run;

/* The blocks the read calls read, written independently and synced. */
static void prefill_blocks(run *r)
{
    MPI_File fh = r->fh;
    uint64_t *buf = r->buf;
    int64_t block = r->block;
    for (int i = 0; i < r->prefill; i++) {
        int64_t off = ((int64_t)i * r->nprocs + r->rank) * block;
        fill(buf, block, off);
        MT_OK(MPI_File_write_at(fh, off, buf, (int)block, MPI_BYTE,
                                MPI_STATUS_IGNORE));
    }
    MT_OK(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Each rank's blocks through its own view: the individual pointer moves
 * one block per call.  The view's filetype, for main to free. */
static MPI_Datatype set_tile_view(run *r)
{
    MPI_File fh = r->fh;
    int64_t block = r->block;
    int rank = r->rank;
    MPI_Datatype c, tile;
    MPI_Type_contiguous((int)block, MPI_BYTE, &c);
    MPI_Type_create_resized(c, 0, block * r->nprocs, &tile);
    MPI_Type_commit(&tile);
    MPI_Type_free(&c);
    MT_OK(MPI_File_set_view(fh, rank * block, MPI_BYTE, tile, "native",
                            MPI_INFO_NULL));
    return tile;
}

/* Iteration i's call (-call) on block it at file offset off; its error.
 * *it becomes -1 where the data read is not to be checked; *known is 0
 * for an unknown -call (reported). */
static int one_call(run *r, int i, int64_t off, int *it, int *known)
{
    MPI_File fh = r->fh;
    void *buf = r->buf;
    int n = (int)r->block, err, e2 = MPI_SUCCESS;
    const char *call = r->call;
    MPI_Status st;
    *known = 1;
    if (!strcmp(call, "write_at_all"))
        err = MPI_File_write_at_all(fh, off, buf, n, MPI_BYTE, &st);
    else if (!strcmp(call, "write_all"))
        err = MPI_File_write_all(fh, buf, n, MPI_BYTE, &st);
    else if (!strcmp(call, "write_at_all_split")) {
        err = MPI_File_write_at_all_begin(fh, off, buf, n, MPI_BYTE);
        e2 = MPI_File_write_at_all_end(fh, buf, &st);
    } else if (!strcmp(call, "write_all_split")) {
        err = MPI_File_write_all_begin(fh, buf, n, MPI_BYTE);
        e2 = MPI_File_write_all_end(fh, buf, &st);
    } else if (!strcmp(call, "read_at_all"))
        err = MPI_File_read_at_all(fh, off, buf, n, MPI_BYTE, &st);
    else if (!strcmp(call, "read_all"))
        err = MPI_File_read_all(fh, buf, n, MPI_BYTE, &st);
    else if (!strcmp(call, "read_all_split")) {
        err = MPI_File_read_all_begin(fh, buf, n, MPI_BYTE);
        e2 = MPI_File_read_all_end(fh, buf, &st);
    } else if (!strcmp(call, "write_ordered"))
        err = MPI_File_write_ordered(fh, buf, n, MPI_BYTE, &st);
    else if (!strcmp(call, "write_ordered_split")) {
        err = MPI_File_write_ordered_begin(fh, buf, n, MPI_BYTE);
        e2 = MPI_File_write_ordered_end(fh, buf, &st);
    } else if (!strcmp(call, "read_ordered")) {
        /* past the prefilled blocks these read beyond the end of the
         * file: still one request per server */
        err = MPI_File_read_ordered(fh, buf, n, MPI_BYTE, &st);
        *it = i < r->prefill ? i : -1;
    } else if (!strcmp(call, "set_size"))
        err = MPI_File_set_size(fh, (MPI_Offset)(i + 1) * r->nprocs * r->block);
    else if (!strcmp(call, "sync")) {
        err = MPI_File_write_at(fh, off, buf, n, MPI_BYTE, &st);
        e2 = MPI_File_sync(fh);
    } else {
        mt_fail("unknown -call %s", call);
        *known = 0;
        return MPI_SUCCESS;
    }
    return err == MPI_SUCCESS ? e2 : err;
}

/* After iteration i's call succeeded: the data read (block it), the
 * shared pointer of the ordered calls, and rank 0's cue -ready. */
static void after_call(run *r, int i, int it, int acked)
{
    if (r->reading && it >= 0) {
        int64_t bad = check(r->buf, r->block,
                            ((int64_t)it * r->nprocs + r->rank) * r->block);
        if (bad >= 0)
            mt_fail("%s %d: wrong data at file offset %lld", r->call, i,
                    (long long)bad);
    }
    if (r->ordered && i < 2) {
        /* the shared pointer hands out blocks in rank order */
        MPI_Offset pos;
        MPI_Barrier(MPI_COMM_WORLD); /* nobody is in the next call yet */
        MPI_File_get_position_shared(r->fh, &pos);
        MPI_Barrier(MPI_COMM_WORLD);
        if (pos != (MPI_Offset)(i + 1) * r->nprocs * r->block)
            mt_fail("shared pointer at %lld after %d calls", (long long)pos,
                    i + 1);
    }
    if (r->rank == 0 && r->ready && acked == r->warm) {
        FILE *f = fopen(r->ready, "w");
        if (f)
            fclose(f);
    }
}

/* The calls until the first error or -seconds; the calls acknowledged,
 * the first error in *err and when it came in *t_err. */
static int call_loop(run *r, int *err, double *t_err)
{
    int acked = 0;
    double t0 = now();
    *err = MPI_SUCCESS;
    *t_err = 0;
    for (int i = 0; *err == MPI_SUCCESS; i++) {
        if (now() - t0 > r->seconds)
            break;
        int it = r->reading ? i % r->prefill : i;
        int64_t off = ((int64_t)it * r->nprocs + r->rank) * r->block;
        if (!r->reading)
            fill(r->buf, r->block, off);
        else
            memset(r->buf, 0, r->block);
        if (r->viewed && r->reading)
            MPI_File_seek(r->fh, (MPI_Offset)it * r->block, MPI_SEEK_SET);
        int known;
        *err = one_call(r, i, off, &it, &known);
        if (!known)
            break;
        if (*err != MPI_SUCCESS) {
            *t_err = now();
            break;
        }
        acked++;
        after_call(r, i, it, acked);
    }
    return acked;
}

/* Close the file and print the RESULT line (and into -result PREFIX.R:
 * mpiexec may interleave the ranks' lines). */
static void close_and_report(run *r, int acked, int err, double t_err)
{
    int cls = MPI_SUCCESS, len = 0;
    char msg[MPI_MAX_ERROR_STRING] = "";
    if (err != MPI_SUCCESS) {
        MPI_Error_class(err, &cls);
        MPI_Error_string(err, msg, &len);
        for (char *c = msg; *c; c++)
            if (*c == '\n')
                *c = ' ';
    }
    int cerr = MPI_File_close(&r->fh);
    double t_close = now();
    int ccls = MPI_SUCCESS;
    if (cerr != MPI_SUCCESS)
        MPI_Error_class(cerr, &ccls);
    char line[MPI_MAX_ERROR_STRING + 256];
    snprintf(line, sizeof(line),
             "RESULT rank=%d acked=%d class=%s t_err=%.6f close=%s "
             "t_close=%.6f msg=%s\n",
             r->rank, acked, err == MPI_SUCCESS ? "none" : mt_class_name(cls),
             t_err, mt_class_name(ccls), t_close, msg);
    fputs(line, stdout);
    fflush(stdout);
    const char *result = mt_opt("result", NULL);
    if (result) {
        char fn[MT_NAME_MAX];
        snprintf(fn, sizeof(fn), "%s.%d", result, r->rank);
        FILE *f = fopen(fn, "w");
        if (f) {
            fputs(line, f);
            fclose(f);
        }
    }
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    run r = {.call = mt_opt("call", "write_at_all"),
             .ready = mt_opt("ready", NULL),
             .block = atoll(mt_opt("block", "65536")),
             .warm = atoi(mt_opt("warm", "3")),
             .prefill = atoi(mt_opt("prefill", "8")),
             .seconds = atof(mt_opt("seconds", "60")),
             .nprocs = mt_nprocs,
             .rank = mt_rank};
    r.reading = strncmp(r.call, "read", 4) == 0;
    r.ordered = strstr(r.call, "ordered") != NULL;
    r.viewed = strcmp(r.call, "write_all") == 0 ||
               strcmp(r.call, "write_all_split") == 0 ||
               strcmp(r.call, "read_all") == 0 ||
               strcmp(r.call, "read_all_split") == 0;
    if (r.block <= 0 || r.block % 8) {
        mt_fail("-block must be a positive multiple of 8");
        return mt_finish();
    }

    if (mt_fresh(MPI_COMM_WORLD, mt_fname, MPI_MODE_RDWR, MPI_INFO_NULL, &r.fh))
        return mt_finish();
    MPI_File_set_errhandler(r.fh, MPI_ERRORS_RETURN);
    r.buf = malloc(r.block);
    if (r.reading)
        prefill_blocks(&r);
    MPI_Datatype tile = r.viewed ? set_tile_view(&r) : MPI_DATATYPE_NULL;
    if (mt_errors())
        return mt_finish();

    int err;
    double t_err;
    int acked = call_loop(&r, &err, &t_err);
    close_and_report(&r, acked, err, t_err);
    if (tile != MPI_DATATYPE_NULL)
        MPI_Type_free(&tile);
    free(r.buf);
    return mt_finish();
}
