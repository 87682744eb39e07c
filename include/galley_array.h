/*
 * galley_array.h -- Panda-style distributed arrays over MPI-IO.
 *
 * An *array* has a rank (1..GA_MAX_RANK), global extents and an element
 * size in bytes.  Two *layouts* say where its elements live:
 *
 *   memory layout  how the array is spread over the processes of a
 *                  communicator: one HPF distribution per dimension
 *                  ('*', BLOCK, CYCLIC(k)) over a process grid;
 *   disk layout    how it is cut into *chunks* on disk: the same kinds of
 *                  distribution over a grid of chunks.  Chunk q is stored
 *                  as its own row-major block in slot q of the data file
 *                  (every slot has the size of the largest chunk), so a
 *                  (BLOCK,*) disk layout over D chunks with D subfiles and
 *                  a stripe unit of one slot puts chunk q on subfile q.
 *
 * Arrays are written and read in *groups* (ga_group):
 *
 *   GA_TIMESTEP    each ga_timestep() appends every array of the group
 *   GA_CHECKPOINT  ga_checkpoint() writes every array into the older of two
 *                  copies; after the copy is durable (MPI_File_sync) a
 *                  "copynum" record naming it is written, so a crash in the
 *                  middle of a checkpoint leaves the previous one readable
 *   GA_RESTART     ga_restart() reads the newest complete checkpoint into
 *                  the arrays' current memory layout (any process count or
 *                  distribution)
 *
 * Every group stores self-describing schema records beside its data (names,
 * shapes, element sizes, layouts, step numbers); galley-array-ls prints them.
 * Files of a group at PATH (any MPI-IO name: "galley:/run/heat", "ufs:/tmp/x"
 * or a plain path):
 *
 *   PATH.schema          text schema (arrays; one "step" line per timestep)
 *   PATH.copynum         checkpoints: two fixed-size copy records
 *   PATH.NAME            timesteps of array NAME, step i at i * D * slot
 *   PATH.NAME.0 / .1     the two checkpoint copies of array NAME
 *
 * The library is plain MPI-IO (file views built from subarray, darray and
 * hindexed datatypes; collective MPI_File_write_at_all/read_at_all, or
 * independent I/O by the holders when some processes hold nothing of an
 * array), so it works on any ROMIO file system.  On "galley:" names it adds the
 * Galley hints striping_factor (= chunks), striping_unit (= slot) and
 * galley_fork unless the caller's MPI_Info already sets them.
 *
 * Conventions: functions return 0 (or a count) on success and a negative
 * error code on failure: a negative errno value or one of GA_E* below;
 * ga_strerror() gives the message and ga_errmsg() this process's last
 * detailed message.  Functions taking a communicator (or an object made
 * with one) are collective over it and return the same code on every
 * process.  Handles are opaque pointers; each create names its free.
 * Not thread-safe: use one group from one thread at a time.
 *
 * This is the one galley*.h header that needs MPI (define GA_NO_MPI to see
 * only the layout part, e.g. in unit tests of the layout arithmetic).
 */
#ifndef GALLEY_ARRAY_H
#define GALLEY_ARRAY_H

#include <stddef.h>
#include <stdint.h>

#ifndef GA_NO_MPI
#include <mpi.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GA_API __attribute__((visibility("default")))
#else
#define GA_API
#endif

#define GA_MAX_RANK 8  /* dimensions of an array                */
#define GA_NAME_MAX 63 /* bytes of an array name, [A-Za-z0-9_.-] */
#define GA_SCHEMA_VERSION 1

/* Project error codes: X(name, value, message). */
#define GA_ERROR_TABLE(X)                                                      \
    X(GA_ELAYOUT, -2001, "invalid layout or layout does not fit the array")    \
    X(GA_ESCHEMA, -2002, "malformed or unsupported schema record")             \
    X(GA_EMISMATCH, -2003, "array does not match the stored schema")           \
    X(GA_ENOCKPT, -2004, "no complete checkpoint to restart from")             \
    X(GA_EMPI, -2005, "an MPI-IO call failed (see ga_errmsg)")                 \
    X(GA_ESTATE, -2006, "operation not valid for this group or array state")   \
    X(GA_ENOSTEP, -2007, "no such timestep")

enum ga_error {
#define GA_X_ENUM(name, value, msg) name = value,
    GA_ERROR_TABLE(GA_X_ENUM)
#undef GA_X_ENUM
};

/* Message for a code from this library (or a negative errno). */
GA_API const char *ga_strerror(int err);

/* This process's detailed message for the last failure (never NULL). */
GA_API const char *ga_errmsg(void);

/* ------------------------------------------------------------------------
 * Layouts (no MPI needed)
 * ------------------------------------------------------------------------ */

enum ga_dist_kind {
    GA_STAR = 0,  /* '*': the dimension is not distributed             */
    GA_BLOCK = 1, /* HPF BLOCK: blocks of ceil(n / P)                  */
    GA_CYCLIC = 2 /* HPF CYCLIC(k): blocks of k dealt round robin      */
};

typedef struct ga_dist {
    int kind;  /* enum ga_dist_kind */
    int64_t k; /* CYCLIC block size (>= 1); ignored otherwise */
} ga_dist;

/*
 * One distribution per dimension over a grid (row-major: process or chunk
 * number r has grid coordinates in C order).  grid[d] == 0 means "choose":
 * the free dimensions share `units` (or, for a memory layout with units 0,
 * the communicator size; for a disk layout with units 0, one chunk) as
 * evenly as MPI_Dims_create would.  '*' dimensions always have grid 1.
 *
 * A memory layout whose grid has fewer processes than the communicator
 * leaves the other processes empty; all '*' puts the array on rank 0.
 */
typedef struct ga_layout {
    int rank;
    ga_dist dist[GA_MAX_RANK];
    int grid[GA_MAX_RANK];
    int units;
} ga_layout;

/*
 * Parse "DIST[,DIST...][@GRID]" where DIST is *, BLOCK, CYCLIC or CYCLIC(k)
 * (any case, optional parentheses around the list) and GRID is a total
 * count ("@4") or one extent per dimension ("@2x2", 0 = choose).
 * Examples: "(BLOCK,*)", "BLOCK,BLOCK@2x2", "CYCLIC(4),*@3".
 * Errors: -EINVAL (message in ga_errmsg).
 */
GA_API int ga_layout_parse(const char *text, ga_layout *out);

/* Format as parse accepts ("BLOCK,*@4x1"); returns the length or -ERANGE. */
GA_API int ga_layout_format(const ga_layout *l, char *buf, size_t len);

/* Kinds of array group (see the top of this file). */
typedef enum ga_group_kind {
    GA_TIMESTEP = 1,
    GA_CHECKPOINT = 2,
    GA_RESTART = 3
} ga_group_kind;

#ifndef GA_NO_MPI

/* ------------------------------------------------------------------------
 * Arrays
 * ------------------------------------------------------------------------ */

typedef struct ga_array ga_array;

typedef struct ga_array_spec {
    const char *name;      /* 1..GA_NAME_MAX bytes of [A-Za-z0-9_.-]       */
    int rank;              /* 1..GA_MAX_RANK                               */
    const int64_t *dims;   /* global extents, each >= 1                    */
    int esize;             /* bytes per element, >= 1                      */
    const ga_layout *mem;  /* memory layout; NULL: whole array on rank 0   */
    const ga_layout *disk; /* disk layout; NULL: one row-major chunk       */
    const int *ghost;      /* halo cells on each side per dimension in the
                              local memory block; NULL: none               */
} ga_array_spec;

/*
 * Describe a distributed array over `comm` (collective; comm is dup'ed).
 * The local block of this process is a row-major array of extents
 * count[d] + 2 * ghost[d] (ga_array_local); it is bound with ga_array_bind
 * or allocated with ga_array_alloc.  Undo with ga_array_free.
 * Errors: -EINVAL, GA_ELAYOUT, -ENOMEM.
 */
GA_API int ga_array_create(MPI_Comm comm, const ga_array_spec *spec,
                           ga_array **out);

/* Free an array (not collective; NULL is fine).  Groups holding it must be
 * freed first. */
GA_API void ga_array_free(ga_array *a);

/* Use caller memory (the local block including ghosts) for I/O. */
GA_API int ga_array_bind(ga_array *a, void *base);

/* Allocate (zeroed) and bind the local block; owned and freed by the
 * array.  Returns NULL if out of memory (or if the block is empty, in which
 * case nothing is needed). */
GA_API void *ga_array_alloc(ga_array *a);

/*
 * This process's block: count[d] owned elements and alloc[d] allocated
 * (count + 2 * ghost) per dimension; returns the bytes owned (0 if none).
 * Either pointer may be NULL.
 */
GA_API int64_t ga_array_local(const ga_array *a, int64_t *count,
                              int64_t *alloc);

/* Global index of local index i (0 <= i < count[dim], ghosts excluded) in
 * dimension dim; -1 if out of range. */
GA_API int64_t ga_array_global_index(const ga_array *a, int dim, int64_t i);

/* The resolved memory and disk layouts (grids filled in). */
GA_API const ga_layout *ga_array_mem_layout(const ga_array *a);
GA_API const ga_layout *ga_array_disk_layout(const ga_array *a);

/*
 * Write the whole array, row-major with no header, to the MPI-IO file
 * `path` (created or truncated) with one collective write: a plain copy
 * for comparison or for other tools.  `info` may be MPI_INFO_NULL.
 */
GA_API int ga_array_export(ga_array *a, const char *path, MPI_Info info);

/* ------------------------------------------------------------------------
 * Groups
 * ------------------------------------------------------------------------ */

/* ga_group_create flags */
#define GA_CREATE 0x1 /* start afresh: the first write deletes old files   */
#define GA_APPEND                                                              \
    0x2 /* keep what PATH holds: continue its timesteps or                     \
           checkpoint copies (the stored disk layouts win)   */

typedef struct ga_group ga_group;

/*
 * Open the group stored at `path` (collective over comm).  GA_TIMESTEP and
 * GA_CHECKPOINT need exactly one of GA_CREATE / GA_APPEND; GA_RESTART takes
 * 0.  With GA_APPEND and GA_RESTART an existing schema is read now (its
 * absence is not an error: a restart then reports GA_ENOCKPT).  `info`
 * (may be MPI_INFO_NULL) is passed to every data file open; its keys win
 * over the library's.  Undo with ga_group_free.
 * Errors: -EINVAL, GA_ESCHEMA, GA_EMPI, -ENOMEM.
 */
GA_API int ga_group_create(MPI_Comm comm, ga_group_kind kind, const char *path,
                           int flags, MPI_Info info, ga_group **out);

/* Add an array (before the first write or read).  With a stored schema the
 * array must match it by name, rank, extents and element size.
 * Errors: GA_ESTATE, GA_EMISMATCH, -EEXIST (name already in the group). */
GA_API int ga_group_insert(ga_group *g, ga_array *a);

/*
 * Optional: build the datatypes and open (creating as needed) the schema
 * and data files now, so that errors show early and the first timestep or
 * checkpoint moves data only (benchmarks).  Called implicitly otherwise.
 * No arrays may be inserted afterwards.
 */
GA_API int ga_group_prepare(ga_group *g);

/* Close the group's files (collective; NULL is fine). */
GA_API int ga_group_free(ga_group *g);

/*
 * Append every array of a GA_TIMESTEP group as the next timestep, tagged
 * with the application's step number `step`.  Returns the index of the new
 * timestep (0, 1, ...).
 */
GA_API int ga_timestep(ga_group *g, int64_t step);

/* Timesteps stored (GA_TIMESTEP groups). */
GA_API int ga_timestep_count(ga_group *g);

/* Read timestep `index` into the arrays' memory; *step (may be NULL)
 * receives its step number.  Errors: GA_ENOSTEP, ... */
GA_API int ga_timestep_read(ga_group *g, int index, int64_t *step);

/* Forget the timesteps whose step number is greater than last_step (a run
 * restarted from a checkpoint at last_step rewrites them).  Returns the
 * count left. */
GA_API int ga_timestep_rewind(ga_group *g, int64_t last_step);

/*
 * Write every array of a GA_CHECKPOINT group into the copy not holding the
 * newest checkpoint, sync it, then record it (with `step`) as the newest.
 * Returns the copy number written (0 or 1).
 */
GA_API int ga_checkpoint(ga_group *g, int64_t step);

/*
 * Read the newest complete checkpoint of a GA_RESTART or GA_CHECKPOINT
 * (GA_APPEND) group into the arrays' memory, whatever memory layout and
 * process count wrote it.  *step (may be NULL) receives its step number.
 * Returns the copy read (0 or 1).  Errors: GA_ENOCKPT, GA_EMISMATCH, ...
 */
GA_API int ga_restart(ga_group *g, int64_t *step);

#endif /* GA_NO_MPI */

#ifdef __cplusplus
}
#endif

#endif /* GALLEY_ARRAY_H */
