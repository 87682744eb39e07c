/*
 * mpiio_bench.c -- MPI-IO access patterns on galley: beside ROMIO on a local
 * directory (ufs:), measured in the same run.
 *
 *   N-1 strided     every rank writes records of R bytes interleaved with
 *                   the other ranks' (file view: vector), R = 16 B, 200 B,
 *                   4 KB, 64 KB; independent (write) and collective
 *                   (write_all); rows under 4 KB move a quarter of -s per
 *                   rank (at least 1 MiB, at most -s)
 *   N-1 segmented   every rank writes one contiguous segment
 *   2-D subarray    a (BLOCK,BLOCK) distributed array of doubles, collective
 *   small contig    every rank writes, then reads, blocks of 4 KiB with
 *                   one independent call each, in its own segment of one
 *                   shared file (rank-major): 2048 blocks, or one per
 *                   8 KiB of -s when that is more (a row long enough to
 *                   time on a busy machine: at 2048 calls it takes a few
 *                   scheduler ticks)
 *   file per proc   every rank its own file, 1 MiB calls
 *   IO500 hard      one shared file, records of 47008 bytes, every rank
 *                   its own segment of records, one call per record
 *
 * For each: write and read MB/s (aggregate, between barriers) on both
 * targets and the ratio galley/ufs.  Every read is checked against what was
 * written; a mismatch aborts the run (a benchmark of wrong answers is
 * worthless).
 *
 * usage: mpiexec -n P mpiio_bench -g galley:/bench -u ufs:/tmp/dir
 *                [-s BYTES_PER_RANK] [-r REPEATS] [-p SUBSTRING] [-w MS]
 *
 * -p runs only the rows whose "pattern record mode" contains SUBSTRING
 * (e.g. -p "16 B indep"), for profiling one row.
 *
 * -l LAYOUT creates the -g target's files with hint galley_layout=LAYOUT
 * (e.g. local); with -u galley:/OTHER the baseline is then Galley's default
 * striped layout on the same servers, in the same run.
 *
 * -c creates the -g target's files with hint galley_checksum=crc32c
 * (end-to-end checksums); with -u galley:/OTHER the baseline is the same
 * files without checksums on the same servers, in the same run.
 * -w MS sleeps MS milliseconds on every rank after each delete of a
 * repetition's file, before the next timed call: a delete's work (Galley
 * reclaims a deleted file's subfiles in the background, and the servers'
 * unlinks then free its cached pages) is then not timed as part of the
 * next write, as a local unlink's is not (it is done when unlink returns).
 *
 * -R N creates the -g target's files with hint galley_replicas=N (N
 * copies of every subfile); with -u galley:/OTHER the baseline is one
 * copy on the same servers, in the same run.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, nprocs;
static long long per_rank = 4 << 20;
static int repeats = 3;
static const char *only;
static const char *layout, *gal_target; /* -l, and the file it applies to */
static int checksum;                    /* -c, for the same file */
static const char *replicas;            /* -R, for the same file */
static int settle_ms;                   /* -w */

/* After a delete, before the next timed call: -w MS of sleep on every
 * rank, so a delete's work (Galley reclaims a deleted file's subfiles in
 * the background; the servers' unlinks then free its cached pages) is not
 * timed as part of the next call, as a local unlink's is not. */
static void settle(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (settle_ms > 0)
        usleep((useconds_t)settle_ms * 1000);
}

/* Hints of a file of this run: galley_cb, and -l for the -g target. */
static MPI_Info target_info(const char *path, const char *cb)
{
    MPI_Info info;
    MPI_Info_create(&info);
    if (cb)
        MPI_Info_set(info, "galley_cb", (char *)cb);
    if (layout && path == gal_target)
        MPI_Info_set(info, "galley_layout", (char *)layout);
    if (checksum && path == gal_target)
        MPI_Info_set(info, "galley_checksum", "crc32c");
    if (replicas && path == gal_target)
        MPI_Info_set(info, "galley_replicas", (char *)replicas);
    return info;
}

typedef struct result {
    double wr, rd; /* MB/s, best of repeats */
} result;

static void die(const char *what, int err)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(err, msg, &len);
    fprintf(stderr, "rank %d: %s: %s\n", rank, what, msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define CHECK(call, what)                                                      \
    do {                                                                       \
        int e_ = (call);                                                       \
        if (e_ != MPI_SUCCESS)                                                 \
            die(what, e_);                                                     \
    } while (0)

static void fill(char *buf, long long n, int seed)
{
    for (long long i = 0; i < n; i++)
        buf[i] = (char)((i * 131 + seed * 7 + 1) & 0xff);
}

/* One pattern on one target: the file view is set by `view`. */
typedef void (*view_fn)(MPI_File fh, long long rec, MPI_Datatype *memtype,
                        int *memcount);

static result run(const char *path, int coll, long long rec, view_fn view,
                  const char *cb)
{
    result best = {0, 0};
    char *wbuf = malloc(per_rank), *rbuf = malloc(per_rank);
    fill(wbuf, per_rank, rank);
    for (int r = 0; r < repeats; r++) {
        MPI_Info info = target_info(path, cb);
        MPI_File fh;
        if (rank == 0)
            MPI_File_delete(path, MPI_INFO_NULL);
        settle();
        CHECK(MPI_File_open(MPI_COMM_WORLD, path,
                            MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh),
              "open");
        MPI_Datatype mt = MPI_BYTE;
        int mc = (int)per_rank;
        view(fh, rec, &mt, &mc);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (coll)
            CHECK(MPI_File_write_all(fh, wbuf, mc, mt, MPI_STATUS_IGNORE),
                  "write_all");
        else
            CHECK(MPI_File_write(fh, wbuf, mc, mt, MPI_STATUS_IGNORE), "write");
        MPI_Barrier(MPI_COMM_WORLD);
        double tw = MPI_Wtime() - t0;
        MPI_File_seek(fh, 0, MPI_SEEK_SET);
        memset(rbuf, 0, per_rank);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        if (coll)
            CHECK(MPI_File_read_all(fh, rbuf, mc, mt, MPI_STATUS_IGNORE),
                  "read_all");
        else
            CHECK(MPI_File_read(fh, rbuf, mc, mt, MPI_STATUS_IGNORE), "read");
        MPI_Barrier(MPI_COMM_WORLD);
        double tr = MPI_Wtime() - t0;
        int tsize;
        MPI_Type_size(mt, &tsize);
        long long bytes = (long long)mc * tsize;
        if (memcmp(wbuf, rbuf, bytes) != 0) {
            fprintf(stderr, "rank %d: %s: data read back differs\n", rank,
                    path);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        CHECK(MPI_File_close(&fh), "close");
        MPI_Info_free(&info);
        double mb = (double)bytes * nprocs / 1e6;
        if (mb / tw > best.wr)
            best.wr = mb / tw;
        if (mb / tr > best.rd)
            best.rd = mb / tr;
    }
    if (rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    settle();
    free(wbuf);
    free(rbuf);
    return best;
}

/* N-1 strided: records of rec bytes, rank r owns records r, r+P, ... */
static void view_strided(MPI_File fh, long long rec, MPI_Datatype *mt, int *mc)
{
    MPI_Datatype ft, rt;
    MPI_Type_contiguous((int)rec, MPI_BYTE, &rt);
    MPI_Type_create_resized(rt, 0, (MPI_Aint)rec * nprocs, &ft);
    MPI_Type_commit(&ft);
    MPI_File_set_view(fh, (MPI_Offset)rec * rank, MPI_BYTE, ft, "native",
                      MPI_INFO_NULL);
    MPI_Type_free(&ft);
    MPI_Type_free(&rt);
}

static void view_segmented(MPI_File fh, long long rec, MPI_Datatype *mt,
                           int *mc)
{
    MPI_File_set_view(fh, (MPI_Offset)per_rank * rank, MPI_BYTE, MPI_BYTE,
                      "native", MPI_INFO_NULL);
}

/* (BLOCK,BLOCK) subarray of doubles on a px x py grid. */
static void view_block2d(MPI_File fh, long long rec, MPI_Datatype *mt, int *mc)
{
    int dims[2] = {0, 0};
    MPI_Dims_create(nprocs, 2, dims);
    long long elems = per_rank / 8;
    int side = 1;
    while ((long long)(side + 1) * (side + 1) <= elems)
        side++;
    int gsizes[2] = {side * dims[0], side * dims[1]};
    int lsizes[2] = {side, side};
    int starts[2] = {(rank / dims[1]) * side, (rank % dims[1]) * side};
    MPI_Datatype ft;
    MPI_Type_create_subarray(2, gsizes, lsizes, starts, MPI_ORDER_C, MPI_DOUBLE,
                             &ft);
    MPI_Type_commit(&ft);
    MPI_File_set_view(fh, 0, MPI_DOUBLE, ft, "native", MPI_INFO_NULL);
    MPI_Type_free(&ft);
    *mt = MPI_DOUBLE;
    *mc = side * side;
}

/* nblk calls of blk bytes from/to buf at seg, seg + blk, ...; seconds
 * from now to the barrier after the last. */
static double timed_calls(MPI_File fh, int write, MPI_Offset seg, char *buf,
                          long long blk, long long nblk)
{
    double t0 = MPI_Wtime();
    for (long long i = 0; i < nblk; i++) {
        if (write)
            CHECK(MPI_File_write_at(fh, seg + i * blk, buf + i * blk, (int)blk,
                                    MPI_BYTE, MPI_STATUS_IGNORE),
                  "write_at");
        else
            CHECK(MPI_File_read_at(fh, seg + i * blk, buf + i * blk, (int)blk,
                                   MPI_BYTE, MPI_STATUS_IGNORE),
                  "read_at");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return MPI_Wtime() - t0;
}

/*
 * Many independent calls of `blk` bytes: `nblk` per rank, at consecutive
 * offsets of the rank's own segment of one shared file, or of its own file
 * (fpp: path + ".<rank>", opened on MPI_COMM_SELF).  Write all, then read
 * all, each between barriers.
 */
static result run_calls(const char *base, int fpp, long long blk,
                        long long nblk)
{
    result best = {0, 0};
    long long bytes = blk * nblk;
    char *wbuf = malloc(bytes), *rbuf = malloc(bytes);
    char path[4096];
    if (fpp)
        snprintf(path, sizeof(path), "%s.%d", base, rank);
    else
        snprintf(path, sizeof(path), "%s", base);
    MPI_Comm comm = fpp ? MPI_COMM_SELF : MPI_COMM_WORLD;
    MPI_Offset seg = fpp ? 0 : (MPI_Offset)bytes * rank;
    fill(wbuf, bytes, rank + 3);
    for (int r = 0; r < repeats; r++) {
        MPI_File fh;
        if (fpp || rank == 0)
            MPI_File_delete(path, MPI_INFO_NULL);
        settle();
        MPI_Info info = target_info(base, NULL);
        CHECK(MPI_File_open(comm, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info,
                            &fh),
              "open");
        MPI_Info_free(&info);
        MPI_Barrier(MPI_COMM_WORLD);
        double tw = timed_calls(fh, 1, seg, wbuf, blk, nblk);
        memset(rbuf, 0, bytes);
        MPI_Barrier(MPI_COMM_WORLD);
        double tr = timed_calls(fh, 0, seg, rbuf, blk, nblk);
        if (memcmp(wbuf, rbuf, bytes) != 0) {
            fprintf(stderr, "rank %d: %s: data read back differs\n", rank,
                    path);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        CHECK(MPI_File_close(&fh), "close");
        double mb = (double)bytes * nprocs / 1e6;
        if (mb / tw > best.wr)
            best.wr = mb / tw;
        if (mb / tr > best.rd)
            best.rd = mb / tr;
    }
    if (fpp || rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    settle();
    free(wbuf);
    free(rbuf);
    return best;
}

static void rec_name(long long rec, char *rs, size_t n)
{
    snprintf(rs, n, "-");
    if (rec > 0)
        snprintf(rs, n, rec >= 1024 && rec % 1024 == 0 ? "%lld KB" : "%lld B",
                 rec >= 1024 && rec % 1024 == 0 ? rec / 1024 : rec);
}

/* Is the row selected by -p?  (Every rank decides alike.) */
static int wanted(const char *pattern, long long rec, const char *mode)
{
    if (!only)
        return 1;
    char rs[32], line[128];
    rec_name(rec, rs, sizeof(rs));
    snprintf(line, sizeof(line), "%s %s %s", pattern, rs, mode);
    return strstr(line, only) != NULL;
}

static void row(const char *pattern, long long rec, const char *mode, result g,
                result u)
{
    if (rank != 0)
        return;
    char rs[32];
    rec_name(rec, rs, sizeof(rs));
    printf("%-13s %7s %-11s | %9.1f %9.1f %6.2fx | %9.1f %9.1f %6.2fx\n",
           pattern, rs, mode, g.wr, u.wr, u.wr > 0 ? g.wr / u.wr : 0, g.rd,
           u.rd, u.rd > 0 ? g.rd / u.rd : 0);
    fflush(stdout);
}

/* A row, run only when -p selects it. */
#define ROW(pattern, rec, mode, g, u)                                          \
    do {                                                                       \
        if (wanted(pattern, rec, mode)) {                                      \
            result g_ = (g), u_ = (u);                                         \
            row(pattern, rec, mode, g_, u_);                                   \
        }                                                                      \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    const char *gal = "galley:/bench", *ufs = NULL;
    int opt;
    while ((opt = getopt(argc, argv, "g:u:s:r:p:l:cR:w:")) != -1) {
        switch (opt) {
        case 'g':
            gal = optarg;
            break;
        case 'u':
            ufs = optarg;
            break;
        case 's':
            per_rank = atoll(optarg);
            break;
        case 'r':
            repeats = atoi(optarg);
            break;
        case 'p':
            only = optarg;
            break;
        case 'l':
            layout = optarg;
            break;
        case 'c':
            checksum = 1;
            break;
        case 'R':
            replicas = optarg;
            break;
        case 'w':
            settle_ms = atoi(optarg);
            break;
        default:
            if (rank == 0)
                fprintf(stderr,
                        "usage: %s -g galley:/NAME -u ufs:/PATH "
                        "[-s BYTES_PER_RANK] [-r REPEATS] [-p SUBSTRING] "
                        "[-l LAYOUT] [-c] [-R COPIES] [-w MS]\n",
                        argv[0]);
            MPI_Finalize();
            return 2;
        }
    }
    if (!ufs) {
        if (rank == 0)
            fprintf(stderr, "mpiio_bench: -u ufs:/PATH (the baseline) is "
                            "required\n");
        MPI_Finalize();
        return 2;
    }
    gal_target = gal;
    per_rank -= per_rank % 65536; /* a whole number of every record size */
    if (per_rank <= 0)
        per_rank = 65536;
    if (rank == 0) {
        printf("mpiio_bench: %d ranks, %lld bytes per rank (%.1f MB in all), "
               "best of %d\n",
               nprocs, per_rank, per_rank * nprocs / 1e6, repeats);
        if (layout)
            printf("galley target: %s (galley_layout=%s)   baseline: %s "
                   "(same run)\n",
                   gal, layout, ufs);
        else
            printf("galley target: %s   baseline: %s (ROMIO ufs, same run)\n",
                   gal, ufs);
        printf("%-13s %7s %-11s | %9s %9s %7s | %9s %9s %7s\n", "pattern",
               "record", "mode", "galley W", "ufs W", "ratio", "galley R",
               "ufs R", "ratio");
        printf("%-13s %7s %-11s | %9s %9s %7s | %9s %9s %7s\n", "", "", "",
               "MB/s", "MB/s", "", "MB/s", "MB/s", "");
    }
    long long recs[] = {16, 200, 4096, 65536};
    for (int i = 0; i < 4; i++) {
        long long rec = recs[i];
        /* records under 4 KB: a quarter of the share keeps the ufs
         * collective baseline (25-50 MB/s here) short, while the row
         * still lasts many scheduler ticks at -s 16 MiB and more (a cap
         * of 1 MiB made it 3-6 ticks of 4 ms, so its ratio could only be
         * 0.5, 0.67, 0.75, 1.0 ...) */
        long long save = per_rank;
        if (rec < 4096 && per_rank > (1 << 20))
            per_rank = per_rank / 4 > (1 << 20) ? per_rank / 4 : 1 << 20;
        per_rank -= per_rank % (rec * 1);
        ROW("N-1 strided", rec, "independent",
            run(gal, 0, rec, view_strided, NULL),
            run(ufs, 0, rec, view_strided, NULL));
        ROW("N-1 strided", rec, "collective",
            run(gal, 1, rec, view_strided, NULL),
            run(ufs, 1, rec, view_strided, NULL));
        per_rank = save;
    }
    ROW("N-1 segmented", 0, "independent", run(gal, 0, 0, view_segmented, NULL),
        run(ufs, 0, 0, view_segmented, NULL));
    ROW("N-1 segmented", 0, "collective", run(gal, 1, 0, view_segmented, NULL),
        run(ufs, 1, 0, view_segmented, NULL));
    ROW("2-D subarray", 8, "collective", run(gal, 1, 0, view_block2d, NULL),
        run(ufs, 1, 0, view_block2d, NULL));
    ROW("2-D subarray", 8, "coll 2phase",
        run(gal, 1, 0, view_block2d, "two_phase"),
        run(ufs, 1, 0, view_block2d, NULL));
    /* 2048 calls of 4 KiB per rank (8 MiB), more at -s over 16 MiB */
    long long small = per_rank / 8192 > 2048 ? per_rank / 8192 : 2048;
    ROW("small contig", 4096, "independent", run_calls(gal, 0, 4096, small),
        run_calls(ufs, 0, 4096, small));
    ROW("file per proc", 1 << 20, "independent",
        run_calls(gal, 1, 1 << 20, per_rank >> 20),
        run_calls(ufs, 1, 1 << 20, per_rank >> 20));
    long long hard = per_rank / 47008 ? per_rank / 47008 : 1;
    ROW("IO500 hard", 47008, "independent", run_calls(gal, 0, 47008, hard),
        run_calls(ufs, 0, 47008, hard));
    MPI_Finalize();
    return 0;
}
