/*
 * mt.h -- shared helpers of the MPI-IO test programs in mpiio-tests/src.
 *
 * Every program is self-checking in the style of ROMIO's tests: it takes
 * "-fname NAME" (galley:/x, ufs:/tmp/x or a plain path), prints each
 * failure precisely ("FAIL rank R [test]: what"), and at the end rank 0
 * prints " No Errors" and the program exits 0, or prints "Found N errors"
 * and exits 1.
 *
 * Common options (mt_init):
 *   -fname NAME     base file name; programs derive NAME.<tag> from it
 *   -hint KEY=VAL   added to the MPI_Info every open uses (repeatable)
 *   -v              verbose: one line per sub-test on rank 0
 * Program-specific options are read with mt_opt()/mt_flag().
 *
 * The oracle for every data check is MPI's own datatype engine
 * (MPI_Pack/MPI_Unpack), never ROMIO's flattening code: the place each
 * byte of an access must land in the file is computed from the type maps
 * (mt_view_map), so a wrong offset, a lost or duplicated piece, or a write
 * into a memory hole is detected byte by byte.
 *
 * Threads: single-threaded MPI programs.
 */
#ifndef MT_H
#define MT_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

extern int mt_rank, mt_nprocs;
extern const char *mt_fname; /* -fname */
extern MPI_Info mt_info;     /* -hint KEY=VAL ...; never MPI_INFO_NULL */
extern int mt_verbose;
extern const char *mt_test; /* name of the running sub-test, in messages */
/* Whether bytes of a file no one wrote must read as zeros.  MPI leaves
 * them undefined (ROMIO's data sieving fills holes past the end of file
 * with whatever its buffer held); Galley promises zeros.  Default: on for
 * galley: names; -strict-holes / -lax-holes override. */
extern int mt_strict_holes;

/* MPI_Init, options, MPI_ERRORS_RETURN on files.  Exits on bad usage. */
void mt_init(int *argc, char ***argv);
/* Value of program option NAME ("-NAME VALUE"), or dflt. */
const char *mt_opt(const char *name, const char *dflt);
/* Whether "-NAME" was given. */
int mt_flag(const char *name);
/* Sum errors over MPI_COMM_WORLD, print the verdict on rank 0, finalize.
 * Returns the process exit status. */
int mt_finish(void);

/* Record a failure (printed with rank and sub-test, at most 30 lines per
 * rank; all are counted). */
void mt_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int mt_errors(void);
/* Start a named sub-test (verbose: rank 0 prints it). */
void mt_begin(const char *name);

/* MPI call that must succeed: on failure, record the error string and
 * class and evaluate to nonzero. */
#define MT_OK(call) mt_ok_((call), #call, __FILE__, __LINE__)
int mt_ok_(int err, const char *what, const char *file, int line);
/* MPI call that must fail with error class `cls`. */
#define MT_EXPECT_CLASS(call, cls)                                             \
    mt_class_((call), (cls), #cls, #call, __FILE__, __LINE__)
int mt_class_(int err, int cls, const char *clsname, const char *what,
              const char *file, int line);
/* Human name of an MPI error class (MPI_ERR_IO, ...). */
const char *mt_class_name(int cls);

/* "<fname>.<tag>" in static storage of the caller (buffer of MT_NAME_MAX). */
#define MT_NAME_MAX 1024
void mt_name(char *out, const char *tag);
/* Delete (rank 0, errors ignored) and create+open NAME on comm with
 * amode | MPI_MODE_CREATE, with mt_info plus extra (may be MPI_INFO_NULL).
 * Returns 0 or 1 (failure recorded). */
int mt_fresh(MPI_Comm comm, const char *name, int amode, MPI_Info extra,
             MPI_File *fh);
/* mt_info merged with extra: caller frees. */
MPI_Info mt_info_with(MPI_Info extra);
/* Collective: delete NAME on rank 0 of comm (ignore errors). */
void mt_remove(MPI_Comm comm, const char *name);
/* Collective: mt_remove unless some rank of comm has recorded a failure
 * (the file of a failed test is kept to look at). */
void mt_cleanup(MPI_Comm comm, const char *name);

/* The value every test writes at position idx of stream `seed`: 1..255. */
static inline unsigned char mt_pat(uint32_t seed, int64_t idx)
{
    uint64_t x = (uint64_t)seed * 0x9E3779B97F4A7C15ull +
                 (uint64_t)idx * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 29;
    return (unsigned char)(1 + x % 255);
}
void mt_fill_pat(unsigned char *p, int64_t n, uint32_t seed, int64_t first);

/* ---- memory side --------------------------------------------------------
 * A buffer for `count` instances of `type`: covers [true_lb, last byte] of
 * the typemap, so types with negative lower bounds work.  buf is what MPI
 * calls get; every byte of the region starts as MT_SENTINEL. */
#define MT_SENTINEL 0xEE
typedef struct mt_mem {
    unsigned char *alloc; /* malloc'ed region */
    unsigned char *buf;   /* pointer passed to MPI (alloc - true_lb) */
    int64_t span;         /* bytes in region */
    int64_t size;         /* data bytes (count * type size) */
    int count;
    MPI_Datatype type;
} mt_mem;
int mt_mem_alloc(mt_mem *m, int count, MPI_Datatype type);
void mt_mem_free(mt_mem *m);
/* Scatter stream (m->size bytes) into the buffer through the type map. */
void mt_mem_scatter(mt_mem *m, const unsigned char *stream);
/* Gather the buffer's data bytes through the type map into stream. */
void mt_mem_gather(mt_mem *m, unsigned char *stream);
/* Bytes of the region that are not part of the type map must still hold
 * MT_SENTINEL; returns the number of bytes that do not (failures recorded). */
int64_t mt_mem_check_holes(mt_mem *m);

/* ---- file side ----------------------------------------------------------
 * Where view data byte v of one tile of filetype ft lies, relative to the
 * tile's origin (disp + t * extent): map[v], v < ftsize.  Computed with
 * MPI_Unpack.  Returns a malloc'ed array or NULL (failure recorded). */
int64_t *mt_view_map(MPI_Datatype ft, int64_t *ftsize, int64_t *extent);

/* A view and the file position (in etypes) of an access. */
typedef struct mt_view {
    MPI_Offset disp;
    MPI_Datatype etype, ftype;
} mt_view;

/* Mark in img/cov (file-sized arrays of len bytes) the bytes that writing
 * stream[0..n) at view position off (etypes) puts in the file.  Returns
 * the file offset just past the last byte, or -1 if outside len. */
int64_t mt_expect(const mt_view *v, MPI_Offset off, const unsigned char *stream,
                  int64_t n, unsigned char *img, unsigned char *cov,
                  int64_t len);

/* Read the whole file (bytes [0, len)) through a byte view on every rank
 * of comm and compare with img where cov is set, and with zero elsewhere
 * when mt_strict_holes.
 * Also checks MPI_File_get_size == size when size >= 0.  The file's view
 * is left as bytes.  Returns mismatches (recorded). */
int64_t mt_check_file(MPI_File fh, const unsigned char *img,
                      const unsigned char *cov, int64_t len, int64_t size);

/* Combine per-rank images (disjoint coverage) over comm: bitwise OR. */
void mt_merge_image(MPI_Comm comm, unsigned char *img, unsigned char *cov,
                    int64_t len);

/* sync, barrier, sync: MPI's recipe for making writes visible. */
void mt_sync_barrier(MPI_File fh, MPI_Comm comm);

/* Compare two buffers; records up to a few differing positions. */
int64_t mt_compare(const char *what, const unsigned char *got,
                   const unsigned char *want, int64_t n, int64_t base);

/* ---- access methods --------------------------------------------------- */
enum mt_method {
    MT_AT,           /* write_at / read_at */
    MT_PTR,          /* seek + write / read (individual pointer) */
    MT_AT_ALL,       /* write_at_all / read_at_all */
    MT_ALL,          /* seek + write_all / read_all */
    MT_AT_ALL_SPLIT, /* write_at_all_begin/end */
    MT_ALL_SPLIT,    /* seek + write_all_begin/end */
    MT_IAT,          /* iwrite_at + MPI_Wait */
    MT_IPTR,         /* seek + iwrite + MPI_Test loop */
    MT_IAT_ALL,      /* iwrite_at_all + MPI_Wait */
    MT_IALL,         /* seek + iwrite_all + MPI_Test loop */
    MT_NMETHODS
};
extern const char *mt_method_name[MT_NMETHODS];
int mt_method_collective(int method);
/* One access of count x type at view position off (etypes); op 'w'/'r'.
 * Checks the status count (bytes) equals the data size, and for pointer
 * methods that the individual pointer moved to off + size/etype_size.
 * Returns 0 or 1 (failure recorded). */
int mt_access(MPI_File fh, int method, int op, MPI_Offset off, void *buf,
              int count, MPI_Datatype type);

#endif /* MT_H */
