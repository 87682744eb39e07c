/*
 * h5par_check -- a self-checking parallel HDF5 program: writes a file through
 * the MPI-IO driver (H5Pset_fapl_mpio) and reads it back, so that the same
 * run on `galley:/name` and on `ufs:/path` exercises the Galley ROMIO driver
 * under a real HDF5 library and leaves two files that h5diff/h5dump can
 * compare.
 *
 *   h5par_check write FILE [-i KEY=VALUE]...   create FILE, write everything
 *   h5par_check read  FILE [-i KEY=VALUE]...   reopen read-only and verify
 *   h5par_check rw    FILE [-i KEY=VALUE]...   write, then read back
 *
 * -k CMD (write): rank 0 runs the shell command CMD once /contig2d is
 * written (between two barriers), e.g. to kill an I/O server; then every
 * rank rewrites its part of /contig2d collectively, prints what H5Dwrite
 * returned (rank 0 prints every rank's result, and writes it into FILE
 * with -r FILE), and the job aborts (see fault()).
 *
 * -i passes an MPI-IO hint (e.g. striping_factor=3) through the fapl.
 * `read` may run with a different number of ranks than `write`: every
 * decomposition is computed from the current communicator, and the read
 * phase deliberately uses decompositions different from the write phase.
 *
 * What is exercised (all values are functions of the global indices, so
 * they are the same for any rank count):
 *   /contig2d       int, 2-D contiguous: collective write of row blocks
 *                   (uneven), collective read of column blocks
 *   /contig2d_ind   int, 2-D contiguous: independent write of column blocks,
 *                   independent read of the whole dataset by every rank
 *   /strided2d      int, 2-D contiguous: collective write of every P-th row
 *                   (strided hyperslab), collective read of row blocks
 *   /blocks2d       short, 2-D contiguous: collective write of a 2x3-blocked
 *                   strided selection per rank, independent read back
 *   /grp/chunk3d    double, 3-D chunked with partial edge chunks:
 *                   collective write split along y, collective read split
 *                   along z, independent point-selection read
 *   /grp/box3d      int, 3-D chunked: independent write of per-rank boxes
 *                   split along x, collective read split along y
 *   /grp/sub/ext    float, extendible (unlimited rows, chunked): five
 *                   H5Dset_extent steps, alternately collective and
 *                   independent writes of the new rows
 *   /grp/deflate    int, chunked + deflate: collective write and read
 *   /grp/fill       int, chunked with fill value -7, only half written
 *   /grp/compact    int, compact layout
 *   attributes      on the root (string, int[3]), /grp (string, and 40
 *                   int attributes -> dense attribute storage), /contig2d
 *                   (double[2])
 *
 * Prints "FAIL ..." for each failed check (a few per rank at most), then on
 * rank 0 "PASS <n> checks" or "FAILED <m> of <n> checks"; exit status 0
 * only when every check on every rank passed.
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h5par_common.h"

/* ------------------------------------------------------------- write */
/* This rank's block of rows (split evenly) of an nx x ny int dataset, every
 * element v(row, column), written through transfer property list xfer. */
static void write_row_block(hid_t d, hsize_t nx, hsize_t ny,
                            int (*v)(hsize_t, hsize_t), hid_t xfer)
{
    hsize_t st[2], ct[2];
    hid_t msp, fsp;
    split(nx, nprocs, rank, &st[0], &ct[0]);
    st[1] = 0, ct[1] = ny;
    int *buf = xmalloc(ct[0] * ct[1] * sizeof(int));
    for (hsize_t i = 0; i < ct[0]; i++)
        for (hsize_t j = 0; j < ct[1]; j++)
            buf[i * ct[1] + j] = v(st[0] + i, j);
    fsp = slab(d, 2, st, ct, &msp);
    H5OK(H5Dwrite(d, H5T_NATIVE_INT, msp, fsp, xfer, buf));
    H5Sclose(msp), H5Sclose(fsp), free(buf);
}

static void write_2d(hid_t f)
{
    hsize_t dims[2] = {C2_NX, C2_NY}, st[2], ct[2];
    hid_t msp, fsp, xc = dxpl(1), xi = dxpl(0);

    /* contig2d: collective, row blocks */
    hid_t d = mkdset(f, "contig2d", H5T_STD_I32LE, 2, dims, NULL, H5P_DEFAULT);
    write_row_block(d, C2_NX, C2_NY, v_c2, xc);
    double scale[2] = {0.125, -3.5};
    hsize_t two = 2;
    put_attr(d, "scale", H5T_IEEE_F64LE, 1, &two, scale);
    H5Dclose(d);

    /* contig2d_ind: independent, column blocks */
    d = mkdset(f, "contig2d_ind", H5T_STD_I32LE, 2, dims, NULL, H5P_DEFAULT);
    split(C2_NY, nprocs, rank, &st[1], &ct[1]);
    st[0] = 0, ct[0] = C2_NX;
    int *buf = xmalloc(ct[0] * ct[1] * sizeof(int));
    for (hsize_t i = 0; i < ct[0]; i++)
        for (hsize_t j = 0; j < ct[1]; j++)
            buf[i * ct[1] + j] = v_c2i(i, st[1] + j);
    if (ct[1] > 0) {
        fsp = slab(d, 2, st, ct, &msp);
        H5OK(H5Dwrite(d, H5T_NATIVE_INT, msp, fsp, xi, buf));
        H5Sclose(msp), H5Sclose(fsp);
    }
    free(buf);
    H5Dclose(d);

    /* strided2d: collective, rows rank, rank+P, rank+2P, ... */
    d = mkdset(f, "strided2d", H5T_STD_I32LE, 2, dims, NULL, H5P_DEFAULT);
    hsize_t nrows = C2_NX > (hsize_t)rank
                        ? (C2_NX - (hsize_t)rank + nprocs - 1) / nprocs
                        : 0;
    fsp = H5OK(H5Dget_space(d));
    buf = xmalloc(nrows * C2_NY * sizeof(int));
    if (nrows) {
        hsize_t s[2] = {(hsize_t)rank, 0}, str[2] = {(hsize_t)nprocs, 1};
        hsize_t c[2] = {nrows, 1}, b[2] = {1, C2_NY}, m[2] = {nrows, C2_NY};
        H5OK(H5Sselect_hyperslab(fsp, H5S_SELECT_SET, s, str, c, b));
        for (hsize_t r = 0; r < nrows; r++)
            for (hsize_t j = 0; j < C2_NY; j++)
                buf[r * C2_NY + j] =
                    v_s2((hsize_t)rank + r * (hsize_t)nprocs, j);
        msp = H5OK(H5Screate_simple(2, m, NULL));
    } else {
        H5OK(H5Sselect_none(fsp));
        hsize_t one = 1;
        msp = H5OK(H5Screate_simple(1, &one, NULL));
        H5OK(H5Sselect_none(msp));
    }
    H5OK(H5Dwrite(d, H5T_NATIVE_INT, msp, fsp, xc, buf));
    H5Sclose(msp), H5Sclose(fsp), free(buf);
    H5Dclose(d);

    /* blocks2d: 2x3 blocks, block column (k) belongs to rank k % P; the
     * whole dataset is covered.  Memory holds the full array; the same
     * selection is applied to memory and file. */
    hsize_t bd[2] = {B2_NX, B2_NY};
    d = mkdset(f, "blocks2d", H5T_STD_I16LE, 2, bd, NULL, H5P_DEFAULT);
    short *sb = xmalloc(B2_NX * B2_NY * sizeof(short));
    for (hsize_t i = 0; i < B2_NX; i++)
        for (hsize_t j = 0; j < B2_NY; j++)
            sb[i * B2_NY + j] = v_b2(i, j);
    fsp = H5OK(H5Dget_space(d));
    H5OK(H5Sselect_none(fsp));
    for (hsize_t k = (hsize_t)rank; k < B2_NY / 3; k += (hsize_t)nprocs) {
        hsize_t s[2] = {0, k * 3}, str[2] = {2, 3}, c[2] = {B2_NX / 2, 1},
                b[2] = {2, 3};
        H5OK(H5Sselect_hyperslab(fsp, H5S_SELECT_OR, s, str, c, b));
    }
    msp = H5OK(H5Scopy(fsp));
    H5OK(H5Dwrite(d, H5T_NATIVE_SHORT, msp, fsp, xc, sb));
    H5Sclose(msp), H5Sclose(fsp), free(sb);
    H5Dclose(d);

    H5Pclose(xc), H5Pclose(xi);
}

static void write_3d(hid_t grp)
{
    hid_t msp, fsp, xc = dxpl(1), xi = dxpl(0);

    /* chunk3d: collective, split along y */
    hsize_t dims[3] = {D3_NZ, D3_NY, D3_NX}, chunk[3] = {8, 16, 16}, st[3],
            ct[3];
    hid_t dcpl = chunked(3, chunk);
    hid_t d = mkdset(grp, "chunk3d", H5T_IEEE_F64LE, 3, dims, NULL, dcpl);
    H5Pclose(dcpl);
    st[0] = 0, ct[0] = D3_NZ, st[2] = 0, ct[2] = D3_NX;
    split(D3_NY, nprocs, rank, &st[1], &ct[1]);
    double *db = xmalloc(ct[0] * ct[1] * ct[2] * sizeof(double));
    for (hsize_t z = 0; z < ct[0]; z++)
        for (hsize_t y = 0; y < ct[1]; y++)
            for (hsize_t x = 0; x < ct[2]; x++)
                db[(z * ct[1] + y) * ct[2] + x] = v_d3(z, st[1] + y, x);
    fsp = slab(d, 3, st, ct, &msp);
    H5OK(H5Dwrite(d, H5T_NATIVE_DOUBLE, msp, fsp, xc, db));
    H5Sclose(msp), H5Sclose(fsp), free(db);
    H5Dclose(d);

    /* box3d: independent, split along x */
    hsize_t bd[3] = {BX_NZ, BX_NY, BX_NX}, bc[3] = {5, 7, 6};
    dcpl = chunked(3, bc);
    d = mkdset(grp, "box3d", H5T_STD_I32BE, 3, bd, NULL,
               dcpl); /* big-endian on disk */
    H5Pclose(dcpl);
    st[0] = 0, ct[0] = BX_NZ, st[1] = 0, ct[1] = BX_NY;
    split(BX_NX, nprocs, rank, &st[2], &ct[2]);
    int *ib = xmalloc(ct[0] * ct[1] * ct[2] * sizeof(int));
    for (hsize_t z = 0; z < ct[0]; z++)
        for (hsize_t y = 0; y < ct[1]; y++)
            for (hsize_t x = 0; x < ct[2]; x++)
                ib[(z * ct[1] + y) * ct[2] + x] = v_bx(z, y, st[2] + x);
    if (ct[2] > 0) {
        fsp = slab(d, 3, st, ct, &msp);
        H5OK(H5Dwrite(d, H5T_NATIVE_INT, msp, fsp, xi, ib));
        H5Sclose(msp), H5Sclose(fsp);
    }
    free(ib);
    H5Dclose(d);
    H5Pclose(xc), H5Pclose(xi);
}

static void write_ext(hid_t sub)
{
    hsize_t dims[2] = {0, EXT_NY}, maxd[2] = {H5S_UNLIMITED, EXT_NY},
            chunk[2] = {10, EXT_NY};
    hid_t dcpl = chunked(2, chunk);
    hid_t d = mkdset(sub, "ext", H5T_IEEE_F32LE, 2, dims, maxd, dcpl);
    H5Pclose(dcpl);
    for (int step = 0; step < EXT_STEPS; step++) {
        int coll = step % 2 == 0;
        hsize_t nd[2] = {(hsize_t)(step + 1) * EXT_STEP, EXT_NY}, st[2], ct[2];
        H5OK(H5Dset_extent(d, nd));
        split(EXT_STEP, nprocs, rank, &st[0], &ct[0]);
        st[0] += (hsize_t)step * EXT_STEP;
        st[1] = 0, ct[1] = EXT_NY;
        float *fb = xmalloc(ct[0] * ct[1] * sizeof(float));
        for (hsize_t i = 0; i < ct[0]; i++)
            for (hsize_t j = 0; j < ct[1]; j++)
                fb[i * ct[1] + j] = v_ext(st[0] + i, j);
        if (coll || ct[0] > 0) {
            hid_t msp, fsp = slab(d, 2, st, ct, &msp), x = dxpl(coll);
            H5OK(H5Dwrite(d, H5T_NATIVE_FLOAT, msp, fsp, x, fb));
            H5Sclose(msp), H5Sclose(fsp), H5Pclose(x);
        }
        free(fb);
    }
    H5Dclose(d);
}

static void write_misc(hid_t grp)
{
    hid_t xc = dxpl(1), msp, fsp;

    /* deflate: collective write of row blocks (parallel filtered write) */
    hsize_t dims[2] = {DF_NX, DF_NY}, chunk[2] = {32, 32};
    hid_t dcpl = chunked(2, chunk);
    H5OK(H5Pset_deflate(dcpl, 6));
    hid_t d = mkdset(grp, "deflate", H5T_STD_I32LE, 2, dims, NULL, dcpl);
    H5Pclose(dcpl);
    write_row_block(d, DF_NX, DF_NY, v_df, xc);
    H5Dclose(d);

    /* fill: fill value -7, only the first half written (collectively) */
    hsize_t n = FILL_N, fc = 64, half = FILL_N / 2, s1, c1;
    dcpl = chunked(1, &fc);
    int fv = FILL_VALUE;
    H5OK(H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &fv));
    H5OK(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY));
    d = mkdset(grp, "fill", H5T_STD_I32LE, 1, &n, NULL, dcpl);
    H5Pclose(dcpl);
    split(half, nprocs, rank, &s1, &c1);
    int *buf = xmalloc(c1 * sizeof(int));
    for (hsize_t i = 0; i < c1; i++)
        buf[i] = v_fill(s1 + i);
    fsp = slab(d, 1, &s1, &c1, &msp);
    H5OK(H5Dwrite(d, H5T_NATIVE_INT, msp, fsp, xc, buf));
    H5Sclose(msp), H5Sclose(fsp), free(buf);
    H5Dclose(d);

    /* compact: every rank writes the same (whole) data, as HDF5 requires */
    hsize_t cn = COMPACT_N;
    dcpl = H5OK(H5Pcreate(H5P_DATASET_CREATE));
    H5OK(H5Pset_layout(dcpl, H5D_COMPACT));
    d = mkdset(grp, "compact", H5T_STD_I32LE, 1, &cn, NULL, dcpl);
    H5Pclose(dcpl);
    int cb[COMPACT_N];
    for (int i = 0; i < COMPACT_N; i++)
        cb[i] = i * i - 5;
    H5OK(H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, xc, cb));
    H5Dclose(d);
    H5Pclose(xc);
}

static const char *fault_cmd;    /* -k */
static const char *fault_report; /* -r */

/* -k: rank 0 runs fault_cmd (a server goes), then every rank rewrites its
 * rows of /contig2d collectively, rank 0 gathers what each rank's H5Dwrite
 * returned and prints it ("FAULT rank R: collective H5Dwrite returned N"),
 * also into the file named by -r, and the job ends with MPI_Abort(3).  The
 * -r file is what a test reads: what a rank printed just before MPI_Abort
 * may never reach mpiexec's stdout (Hydra's proxies are killed with data
 * still in their pipes).  Not H5Fclose: after a failed write HDF5 1.10.8's
 * ranks take different collective calls on their way out (rank 0 MPI_Barrier,
 * the others MPI_Bcast) and never return, whatever the file system
 * says. */
static void fault(hid_t f)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && system(fault_cmd) != 0)
        fprintf(stderr, "warning: '%s' failed\n", fault_cmd);
    MPI_Barrier(MPI_COMM_WORLD);
    hid_t d = H5OK(H5Dopen2(f, "contig2d", H5P_DEFAULT));
    hid_t xc = dxpl(1), msp, fsp;
    hsize_t st[2], ct[2];
    split(C2_NX, nprocs, rank, &st[0], &ct[0]);
    st[1] = 0, ct[1] = C2_NY;
    int *buf = xmalloc(ct[0] * ct[1] * sizeof(int));
    for (hsize_t i = 0; i < ct[0]; i++)
        for (hsize_t j = 0; j < ct[1]; j++)
            buf[i * ct[1] + j] = v_c2(st[0] + i, j);
    fsp = slab(d, 2, st, ct, &msp);
    herr_t rc = H5Dwrite(d, H5T_NATIVE_INT, msp, fsp, xc, buf);
    int mine = (int)rc, *all = xmalloc(nprocs * sizeof(int));
    MPI_Gather(&mine, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        FILE *rep = fault_report ? fopen(fault_report, "w") : NULL;
        if (fault_report && !rep)
            perror(fault_report);
        FILE *out[2] = {stdout, rep};
        for (int o = 0; o < 2; o++)
            for (int r = 0; out[o] && r < nprocs; r++)
                fprintf(out[o],
                        "FAULT rank %d: collective H5Dwrite returned %d\n", r,
                        all[r]);
        fflush(stdout);
        if (rep && fclose(rep) != 0)
            perror(fault_report);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

static void do_write(const char *name, MPI_Info info)
{
    hid_t f = open_file(name, 0, 1, info);
    if (f < 0)
        return;

    hid_t st = str_type(sizeof(TITLE));
    put_attr(f, "title", st, 0, NULL, TITLE);
    H5Tclose(st);
    int ver[3] = {1, 10, 8};
    hsize_t three = 3;
    put_attr(f, "version", H5T_STD_I32LE, 1, &three, ver);

    write_2d(f);
    if (fault_cmd)
        fault(f);

    hid_t grp =
        H5OK(H5Gcreate2(f, "grp", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    st = str_type(sizeof(UNITS));
    put_attr(grp, "units", st, 0, NULL, UNITS);
    H5Tclose(st);
    for (int k = 0; k < NATTR; k++) {
        char an[32];
        int v = k * 3 + 1;
        snprintf(an, sizeof(an), "a%02d", k);
        put_attr(grp, an, H5T_STD_I32LE, 0, NULL, &v);
    }
    hid_t sub =
        H5OK(H5Gcreate2(grp, "sub", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    hid_t empty =
        H5OK(H5Gcreate2(sub, "empty", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    H5Gclose(empty);

    write_3d(grp);
    write_ext(sub);
    write_misc(grp);

    H5Gclose(sub);
    H5Gclose(grp);
    H5OK(H5Fflush(f, H5F_SCOPE_GLOBAL));
    H5OK(H5Fclose(f));
}

/* ------------------------------------------------------------- read */
/* Read this rank's block of columns (split evenly) of an nx x ny int
 * dataset through xfer and check every element against v(row, column). */
static void read_col_block(hid_t d, const char *name, hsize_t nx, hsize_t ny,
                           int (*v)(hsize_t, hsize_t), hid_t xfer)
{
    hsize_t st[2], ct[2];
    hid_t msp, fsp;
    split(ny, nprocs, rank, &st[1], &ct[1]);
    st[0] = 0, ct[0] = nx;
    int *buf = xmalloc(ct[0] * ct[1] * sizeof(int));
    fsp = slab(d, 2, st, ct, &msp);
    H5OK(H5Dread(d, H5T_NATIVE_INT, msp, fsp, xfer, buf));
    long bad = 0;
    for (hsize_t i = 0; i < ct[0]; i++)
        for (hsize_t j = 0; j < ct[1]; j++)
            bad += buf[i * ct[1] + j] != v(i, st[1] + j);
    CHECK(bad == 0, "%s: %ld wrong values in columns [%llu,+%llu)", name, bad,
          (unsigned long long)st[1], (unsigned long long)ct[1]);
    H5Sclose(msp), H5Sclose(fsp), free(buf);
}

static void read_2d(hid_t f)
{
    hsize_t st[2], ct[2];
    hid_t msp, fsp, xc = dxpl(1), xi = dxpl(0);

    /* contig2d: collective, column blocks */
    hid_t d = H5OK(H5Dopen2(f, "contig2d", H5P_DEFAULT));
    read_col_block(d, "contig2d", C2_NX, C2_NY, v_c2, xc);
    double scale[2] = {0, 0};
    hid_t a = H5OK(H5Aopen(d, "scale", H5P_DEFAULT));
    H5OK(H5Aread(a, H5T_NATIVE_DOUBLE, scale));
    CHECK(scale[0] == 0.125 && scale[1] == -3.5, "contig2d@scale = %g %g",
          scale[0], scale[1]);
    H5Aclose(a);
    H5Dclose(d);

    /* contig2d_ind: independent read of everything, by every rank */
    d = H5OK(H5Dopen2(f, "contig2d_ind", H5P_DEFAULT));
    int *buf = xmalloc(C2_NX * C2_NY * sizeof(int));
    H5OK(H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, xi, buf));
    long bad = 0;
    for (hsize_t i = 0; i < C2_NX; i++)
        for (hsize_t j = 0; j < C2_NY; j++)
            bad += buf[i * C2_NY + j] != v_c2i(i, j);
    CHECK(bad == 0, "contig2d_ind: %ld wrong values", bad);
    free(buf);
    H5Dclose(d);

    /* strided2d: collective, row blocks */
    d = H5OK(H5Dopen2(f, "strided2d", H5P_DEFAULT));
    split(C2_NX, nprocs, rank, &st[0], &ct[0]);
    st[1] = 0, ct[1] = C2_NY;
    buf = xmalloc(ct[0] * ct[1] * sizeof(int));
    fsp = slab(d, 2, st, ct, &msp);
    H5OK(H5Dread(d, H5T_NATIVE_INT, msp, fsp, xc, buf));
    bad = 0;
    for (hsize_t i = 0; i < ct[0]; i++)
        for (hsize_t j = 0; j < ct[1]; j++)
            bad += buf[i * ct[1] + j] != v_s2(st[0] + i, j);
    CHECK(bad == 0, "strided2d: %ld wrong values", bad);
    H5Sclose(msp), H5Sclose(fsp), free(buf);
    H5Dclose(d);

    /* blocks2d: independent read of a row block */
    d = H5OK(H5Dopen2(f, "blocks2d", H5P_DEFAULT));
    split(B2_NX, nprocs, rank, &st[0], &ct[0]);
    st[1] = 0, ct[1] = B2_NY;
    short *sb = xmalloc(ct[0] * ct[1] * sizeof(short));
    if (ct[0] > 0) {
        fsp = slab(d, 2, st, ct, &msp);
        H5OK(H5Dread(d, H5T_NATIVE_SHORT, msp, fsp, xi, sb));
        H5Sclose(msp), H5Sclose(fsp);
    }
    bad = 0;
    for (hsize_t i = 0; i < ct[0]; i++)
        for (hsize_t j = 0; j < ct[1]; j++)
            bad += sb[i * ct[1] + j] != v_b2(st[0] + i, j);
    CHECK(bad == 0, "blocks2d: %ld wrong values", bad);
    free(sb);
    H5Dclose(d);
    H5Pclose(xc), H5Pclose(xi);
}

static void read_3d(hid_t grp)
{
    hsize_t st[3], ct[3];
    hid_t msp, fsp, xc = dxpl(1), xi = dxpl(0);

    /* chunk3d: collective, split along z */
    hid_t d = H5OK(H5Dopen2(grp, "chunk3d", H5P_DEFAULT));
    split(D3_NZ, nprocs, rank, &st[0], &ct[0]);
    st[1] = 0, ct[1] = D3_NY, st[2] = 0, ct[2] = D3_NX;
    double *db = xmalloc(ct[0] * ct[1] * ct[2] * sizeof(double));
    fsp = slab(d, 3, st, ct, &msp);
    H5OK(H5Dread(d, H5T_NATIVE_DOUBLE, msp, fsp, xc, db));
    long bad = 0;
    for (hsize_t z = 0; z < ct[0]; z++)
        for (hsize_t y = 0; y < ct[1]; y++)
            for (hsize_t x = 0; x < ct[2]; x++)
                bad += db[(z * ct[1] + y) * ct[2] + x] != v_d3(st[0] + z, y, x);
    CHECK(bad == 0, "chunk3d: %ld wrong values", bad);
    H5Sclose(msp), H5Sclose(fsp), free(db);

    /* independent point selection: 50 scattered elements */
    enum { NPT = 50 };
    hsize_t pts[NPT][3];
    double pv[NPT];
    for (int k = 0; k < NPT; k++) {
        pts[k][0] = (hsize_t)(k * 7 + rank) % D3_NZ;
        pts[k][1] = (hsize_t)(k * 13 + 3 * rank) % D3_NY;
        pts[k][2] = (hsize_t)(k * 29 + 5 * rank) % D3_NX;
    }
    fsp = H5OK(H5Dget_space(d));
    H5OK(H5Sselect_elements(fsp, H5S_SELECT_SET, NPT, &pts[0][0]));
    hsize_t npt = NPT;
    msp = H5OK(H5Screate_simple(1, &npt, NULL));
    H5OK(H5Dread(d, H5T_NATIVE_DOUBLE, msp, fsp, xi, pv));
    bad = 0;
    for (int k = 0; k < NPT; k++)
        bad += pv[k] != v_d3(pts[k][0], pts[k][1], pts[k][2]);
    CHECK(bad == 0, "chunk3d points: %ld wrong values", bad);
    H5Sclose(msp), H5Sclose(fsp);
    H5Dclose(d);

    /* box3d: collective, split along y, converted from big-endian */
    d = H5OK(H5Dopen2(grp, "box3d", H5P_DEFAULT));
    st[0] = 0, ct[0] = BX_NZ, st[2] = 0, ct[2] = BX_NX;
    split(BX_NY, nprocs, rank, &st[1], &ct[1]);
    int *ib = xmalloc(ct[0] * ct[1] * ct[2] * sizeof(int));
    fsp = slab(d, 3, st, ct, &msp);
    H5OK(H5Dread(d, H5T_NATIVE_INT, msp, fsp, xc, ib));
    bad = 0;
    for (hsize_t z = 0; z < ct[0]; z++)
        for (hsize_t y = 0; y < ct[1]; y++)
            for (hsize_t x = 0; x < ct[2]; x++)
                bad += ib[(z * ct[1] + y) * ct[2] + x] != v_bx(z, st[1] + y, x);
    CHECK(bad == 0, "box3d: %ld wrong values", bad);
    H5Sclose(msp), H5Sclose(fsp), free(ib);
    H5Dclose(d);
    H5Pclose(xc), H5Pclose(xi);
}

static void read_ext(hid_t sub)
{
    hid_t d = H5OK(H5Dopen2(sub, "ext", H5P_DEFAULT));
    hid_t sp = H5OK(H5Dget_space(d));
    hsize_t dims[2] = {0, 0}, maxd[2] = {0, 0};
    H5OK(H5Sget_simple_extent_dims(sp, dims, maxd));
    H5Sclose(sp);
    CHECK(dims[0] == (hsize_t)EXT_STEPS * EXT_STEP && dims[1] == EXT_NY &&
              maxd[0] == H5S_UNLIMITED,
          "ext: extent %llux%llu", (unsigned long long)dims[0],
          (unsigned long long)dims[1]);
    /* collective read, row blocks over the whole final extent */
    hsize_t st[2], ct[2];
    split(dims[0], nprocs, rank, &st[0], &ct[0]);
    st[1] = 0, ct[1] = EXT_NY;
    float *fb = xmalloc(ct[0] * ct[1] * sizeof(float));
    hid_t msp, fsp = slab(d, 2, st, ct, &msp), x = dxpl(1);
    H5OK(H5Dread(d, H5T_NATIVE_FLOAT, msp, fsp, x, fb));
    long bad = 0;
    for (hsize_t i = 0; i < ct[0]; i++)
        for (hsize_t j = 0; j < ct[1]; j++)
            bad += fb[i * ct[1] + j] != v_ext(st[0] + i, j);
    CHECK(bad == 0, "ext: %ld wrong values", bad);
    H5Sclose(msp), H5Sclose(fsp), H5Pclose(x), free(fb);
    H5Dclose(d);
}

static void read_misc(hid_t grp)
{
    hid_t xc = dxpl(1), xi = dxpl(0);

    /* deflate: collective read of column blocks */
    hid_t d = H5OK(H5Dopen2(grp, "deflate", H5P_DEFAULT));
    hid_t dcpl = H5OK(H5Dget_create_plist(d));
    CHECK(H5Pget_nfilters(dcpl) == 1, "deflate: %d filters",
          H5Pget_nfilters(dcpl));
    H5Pclose(dcpl);
    read_col_block(d, "deflate", DF_NX, DF_NY, v_df, xc);
    H5Dclose(d);

    /* fill: everything, independently, by every rank */
    d = H5OK(H5Dopen2(grp, "fill", H5P_DEFAULT));
    int fb[FILL_N];
    H5OK(H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, xi, fb));
    long bad = 0;
    for (int i = 0; i < FILL_N; i++)
        bad += fb[i] != (i < FILL_N / 2 ? v_fill((hsize_t)i) : FILL_VALUE);
    CHECK(bad == 0, "fill: %ld wrong values", bad);
    H5Dclose(d);

    d = H5OK(H5Dopen2(grp, "compact", H5P_DEFAULT));
    dcpl = H5OK(H5Dget_create_plist(d));
    CHECK(H5Pget_layout(dcpl) == H5D_COMPACT, "compact: layout %d",
          (int)H5Pget_layout(dcpl));
    H5Pclose(dcpl);
    int cb[COMPACT_N];
    H5OK(H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, xc, cb));
    bad = 0;
    for (int i = 0; i < COMPACT_N; i++)
        bad += cb[i] != i * i - 5;
    CHECK(bad == 0, "compact: %ld wrong values", bad);
    H5Dclose(d);
    H5Pclose(xc), H5Pclose(xi);
}

static void check_str_attr(hid_t loc, const char *name, const char *want)
{
    char got[128] = "";
    hid_t a = H5OK(H5Aopen(loc, name, H5P_DEFAULT));
    hid_t t = H5OK(H5Aget_type(a));
    CHECK(H5Tget_size(t) == strlen(want) + 1, "attribute %s: size %zu", name,
          H5Tget_size(t));
    if (H5Tget_size(t) <= sizeof(got))
        H5OK(H5Aread(a, t, got));
    CHECK(strcmp(got, want) == 0, "attribute %s = \"%s\"", name, got);
    H5Tclose(t);
    H5Aclose(a);
}

static void do_read(const char *name, MPI_Info info)
{
    hid_t f = open_file(name, H5F_ACC_RDONLY, 0, info);
    if (f < 0)
        return;

    check_str_attr(f, "title", TITLE);
    int ver[3] = {0, 0, 0};
    hid_t a = H5OK(H5Aopen(f, "version", H5P_DEFAULT));
    H5OK(H5Aread(a, H5T_NATIVE_INT, ver));
    CHECK(ver[0] == 1 && ver[1] == 10 && ver[2] == 8, "version = %d.%d.%d",
          ver[0], ver[1], ver[2]);
    H5Aclose(a);

    H5G_info_t gi;
    H5OK(H5Gget_info(f, &gi));
    CHECK(gi.nlinks == 5, "root group has %llu links, want 5",
          (unsigned long long)gi.nlinks);

    read_2d(f);

    hid_t grp = H5OK(H5Gopen2(f, "grp", H5P_DEFAULT));
    check_str_attr(grp, "units", UNITS);
    H5O_info_t oi;
    H5OK(H5Oget_info(grp, &oi));
    CHECK(oi.num_attrs == NATTR + 1, "grp has %llu attributes",
          (unsigned long long)oi.num_attrs);
    long bad = 0;
    for (int k = 0; k < NATTR; k++) {
        char an[32];
        int v = -1;
        snprintf(an, sizeof(an), "a%02d", k);
        hid_t ai = H5Aopen(grp, an, H5P_DEFAULT);
        if (ai < 0 || H5Aread(ai, H5T_NATIVE_INT, &v) < 0 || v != k * 3 + 1)
            bad++;
        if (ai >= 0)
            H5Aclose(ai);
    }
    CHECK(bad == 0, "grp: %ld of %d attributes wrong", bad, NATTR);
    H5OK(H5Gget_info(grp, &gi));
    CHECK(gi.nlinks == 6, "grp has %llu links, want 6",
          (unsigned long long)gi.nlinks);
    hid_t sub = H5OK(H5Gopen2(grp, "sub", H5P_DEFAULT));
    CHECK(H5Lexists(sub, "empty", H5P_DEFAULT) > 0, "grp/sub/empty missing");

    read_3d(grp);
    read_ext(sub);
    read_misc(grp);

    H5Gclose(sub);
    H5Gclose(grp);
    H5OK(H5Fclose(f));
}

/* ------------------------------------------------------------- main */
static void usage(void)
{
    if (rank == 0)
        fprintf(stderr,
                "usage: h5par_check write|read|rw FILE [-i KEY=VALUE]... "
                "[-k CMD [-r FILE]]\n");
    MPI_Finalize();
    exit(2);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 3)
        usage();
    const char *mode = argv[1], *name = argv[2];
    int do_w = !strcmp(mode, "write") || !strcmp(mode, "rw");
    int do_r = !strcmp(mode, "read") || !strcmp(mode, "rw");
    if (!do_w && !do_r)
        usage();

    MPI_Info info;
    MPI_Info_create(&info);
    for (int i = 3; i < argc; i++) {
        char *eq;
        if (!strcmp(argv[i], "-k") && i + 1 < argc) {
            fault_cmd = argv[++i];
            continue;
        }
        if (!strcmp(argv[i], "-r") && i + 1 < argc) {
            fault_report = argv[++i];
            continue;
        }
        if (strcmp(argv[i], "-i") || i + 1 >= argc ||
            !(eq = strchr(argv[i + 1], '=')))
            usage();
        *eq = '\0';
        MPI_Info_set(info, argv[i + 1], eq + 1);
        i++;
    }

    double t0 = MPI_Wtime();
    if (do_w)
        do_write(name, info);
    double t1 = MPI_Wtime();
    if (do_r)
        do_read(name, info);
    double t2 = MPI_Wtime();
    MPI_Info_free(&info);

    long mine[2] = {nchecks, nfailed}, all[2];
    MPI_Reduce(mine, all, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    int ok = 1;
    if (rank == 0) {
        printf("h5par_check %s %s: %d ranks, write %.3f s, read %.3f s\n", mode,
               name, nprocs, t1 - t0, t2 - t1);
        if (all[1] == 0)
            printf("PASS %ld checks\n", all[0]);
        else
            printf("FAILED %ld of %ld checks\n", all[1], all[0]);
        ok = all[1] == 0;
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return ok ? 0 : 1;
}
