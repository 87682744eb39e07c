/*
 * h5par_common.h -- h5par_check's sizes, check counters, value functions and
 * HDF5 helpers: one program split in two files so that each stays short.
 * Included once, by h5par_check.c only (everything here is static).
 */
#ifndef H5PAR_COMMON_H
#define H5PAR_COMMON_H

#include <hdf5.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- sizes */
#define C2_NX 257 /* rows: uneven split over any P > 1 */
#define C2_NY 130
#define B2_NX 60
#define B2_NY 90
#define D3_NZ 23
#define D3_NY 40
#define D3_NX 37
#define BX_NZ 12
#define BX_NY 34
#define BX_NX 29
#define EXT_STEP 37
#define EXT_STEPS 5
#define EXT_NY 48
#define DF_NX 128
#define DF_NY 64
#define FILL_N 300
#define FILL_VALUE (-7)
#define COMPACT_N 16
#define NATTR 40

static int rank, nprocs;
static long nchecks, nfailed;
static int nprinted;

/* ------------------------------------------------------------- checks */
static void fail(const char *fmt, ...)
{
    va_list ap;
    nfailed++;
    if (nprinted++ >= 8)
        return;
    va_start(ap, fmt);
    printf("FAIL rank %d: ", rank);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
}

/* A check that counts; the condition is an HDF5 return value >= 0 or a
 * boolean test. */
#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        nchecks++;                                                             \
        if (!(cond))                                                           \
            fail(__VA_ARGS__);                                                 \
    } while (0)

/* An HDF5 call that must succeed; the value is kept for later use. */
#define H5OK(expr) h5ok((long long)(expr), #expr, __LINE__)
static long long h5ok(long long v, const char *what, int line)
{
    nchecks++;
    if (v < 0)
        fail("line %d: %s returned %lld", line, what, v);
    return v;
}

/* ------------------------------------------------------------- values */
static int v_c2(hsize_t i, hsize_t j)
{
    return (int)(i * 1000 + j);
}
static int v_c2i(hsize_t i, hsize_t j)
{
    return (int)(7 * i + 3 * j + 11);
}
static int v_s2(hsize_t i, hsize_t j)
{
    return -(int)(i * 1000 + j) - 1;
}
static short v_b2(hsize_t i, hsize_t j)
{
    return (short)((i * 97 + j * 13) % 30011);
}
static double v_d3(hsize_t z, hsize_t y, hsize_t x)
{
    return (double)z * 10000.0 + (double)y * 100.0 + (double)x + 0.5;
}
static int v_bx(hsize_t z, hsize_t y, hsize_t x)
{
    return (int)(z * 100000 + y * 1000 + x) + 3;
}
static float v_ext(hsize_t i, hsize_t j)
{
    return (float)(i * 64 + j) + 0.25f;
}
static int v_df(hsize_t i, hsize_t j)
{
    return (int)((i / 4) * 7 + j % 5);
}
static int v_fill(hsize_t i)
{
    return (int)(i * i % 1000);
}

/* ------------------------------------------------------------- helpers */
/* Block decomposition of n items over p parts: part r gets [*start, +*cnt). */
static void split(hsize_t n, int p, int r, hsize_t *start, hsize_t *cnt)
{
    hsize_t base = n / (hsize_t)p, rem = n % (hsize_t)p, ur = (hsize_t)r;
    *start = ur * base + (ur < rem ? ur : rem);
    *cnt = base + (ur < rem ? 1 : 0);
}

static hid_t dxpl(int collective)
{
    hid_t x = H5OK(H5Pcreate(H5P_DATASET_XFER));
    H5OK(H5Pset_dxpl_mpio(x, collective ? H5FD_MPIO_COLLECTIVE
                                        : H5FD_MPIO_INDEPENDENT));
    return x;
}

/* File dataspace of `dset` with a hyperslab [start, +count) selected (or
 * nothing when some count is 0); *msp gets a matching memory space. */
static hid_t slab(hid_t dset, int rnk, const hsize_t *start,
                  const hsize_t *count, hid_t *msp)
{
    hid_t fsp = H5OK(H5Dget_space(dset));
    hsize_t n = 1;
    for (int d = 0; d < rnk; d++)
        n *= count[d];
    if (n == 0) {
        H5OK(H5Sselect_none(fsp));
        hsize_t one = 1;
        *msp = H5OK(H5Screate_simple(1, &one, NULL));
        H5OK(H5Sselect_none(*msp));
    } else {
        H5OK(
            H5Sselect_hyperslab(fsp, H5S_SELECT_SET, start, NULL, count, NULL));
        *msp = H5OK(H5Screate_simple(rnk, count, NULL));
    }
    return fsp;
}

static hid_t open_file(const char *name, unsigned flags, int create,
                       MPI_Info info)
{
    hid_t fapl = H5OK(H5Pcreate(H5P_FILE_ACCESS));
    H5OK(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, info));
    hid_t f = create ? H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl)
                     : H5Fopen(name, flags, fapl);
    CHECK(f >= 0, "%s %s failed", create ? "H5Fcreate" : "H5Fopen", name);
    H5Pclose(fapl);
    return f;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* Create a dataset; `dcpl` may be H5P_DEFAULT. */
static hid_t mkdset(hid_t loc, const char *name, hid_t type, int rnk,
                    const hsize_t *dims, const hsize_t *maxdims, hid_t dcpl)
{
    hid_t sp = H5OK(H5Screate_simple(rnk, dims, maxdims));
    hid_t d =
        H5OK(H5Dcreate2(loc, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT));
    H5Sclose(sp);
    return d;
}

static hid_t chunked(int rnk, const hsize_t *chunk)
{
    hid_t p = H5OK(H5Pcreate(H5P_DATASET_CREATE));
    H5OK(H5Pset_chunk(p, rnk, chunk));
    return p;
}

static void put_attr(hid_t loc, const char *name, hid_t type, int rnk,
                     const hsize_t *dims, const void *buf)
{
    hid_t sp = rnk ? H5OK(H5Screate_simple(rnk, dims, NULL))
                   : H5OK(H5Screate(H5S_SCALAR));
    hid_t a = H5OK(H5Acreate2(loc, name, type, sp, H5P_DEFAULT, H5P_DEFAULT));
    H5OK(H5Awrite(a, type, buf));
    H5Aclose(a);
    H5Sclose(sp);
}

static hid_t str_type(size_t len)
{
    hid_t t = H5OK(H5Tcopy(H5T_C_S1));
    H5OK(H5Tset_size(t, len));
    H5OK(H5Tset_strpad(t, H5T_STR_NULLTERM));
    return t;
}

static const char TITLE[] = "Galley for MPI-IO: h5par_check";
static const char UNITS[] = "furlongs per fortnight";

#endif /* H5PAR_COMMON_H */
