/*
 * ga_internal.h -- private to arrays/: layout arithmetic and schema records
 * (pure C, no MPI: unit-tested by tests/t_layout.c), then the MPI side:
 * arrays and datatypes (ga_array.c, ga_types.c), agreement between
 * processes (ga_comm.c), groups (ga_group.c, with ga_hints.c for the
 * files' MPI_Info, ga_timestep.c, ga_checkpoint.c) and the crash points of
 * the test build (ga_crash.c).
 *
 * Threads: none of this code starts threads or takes locks; the one
 * process-wide state is the last-error message (ga_error.c).
 */
#ifndef GA_INTERNAL_H
#define GA_INTERNAL_H

#include "galley_array.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GA_HIDDEN __attribute__((visibility("hidden")))

/* Limits checked before anything is allocated from a schema. */
#define GA_MAX_ARRAYS 1024     /* arrays in one group            */
#define GA_MAX_STEPS (1 << 24) /* timesteps in one group         */
#define GA_MAX_EXTENT (INT64_C(1) << 48)
#define GA_MAX_ESIZE (1 << 24)
#define GA_MAX_UNITS (1 << 20)   /* processes or chunks in a grid  */
#define GA_SCHEMA_MAX (64 << 20) /* bytes of a schema file         */
#define GA_COPY_RECORD 128       /* bytes of one copynum record    */

/* ---------------------------------------------------------------- errors */

/* Record a detailed message for ga_errmsg(); returns err. */
GA_HIDDEN int ga_fail(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---------------------------------------------------------------- layout */

/* Shape of an array: what layouts are applied to. */
typedef struct ga_shape {
    int rank;
    int64_t dims[GA_MAX_RANK];
    int esize;
} ga_shape;

/* One run of consecutive global indices [g, g + len) owned by two units at
 * once (a memory process and a disk chunk), with its first local index in
 * each. */
typedef struct ga_run {
    int64_t g, len;
    int64_t la, lb;
} ga_run;

/* Check names: 0 or -EINVAL. */
GA_HIDDEN int ga_check_name(const char *name);
GA_HIDDEN int ga_check_shape(const ga_shape *s);

/*
 * Fill the grid of l for an array of this shape: '*' dimensions get 1,
 * zeros share `units` (l->units if set, else default_units).  For a memory
 * layout (memory == true) the grid may not need more than default_units
 * processes.  Returns 0 or GA_ELAYOUT (message set).
 */
GA_HIDDEN int ga_layout_resolve(ga_layout *l, const ga_shape *s,
                                int default_units, bool memory);

/* Product of a resolved grid. */
GA_HIDDEN int ga_layout_units(const ga_layout *l);

/* Grid coordinates of unit u (row-major). */
GA_HIDDEN void ga_unit_coords(const ga_layout *l, int u, int *coords);

/* Elements of dimension extent n owned by coordinate c of P. */
GA_HIDDEN int64_t ga_dim_count(const ga_dist *d, int64_t n, int P, int c);

/* Owner coordinate of global index g; *local receives its local index. */
GA_HIDDEN int ga_dim_owner(const ga_dist *d, int64_t n, int P, int64_t g,
                           int64_t *local);

/* Global index of local index i of coordinate c, -1 if out of range. */
GA_HIDDEN int64_t ga_dim_global(const ga_dist *d, int64_t n, int P, int c,
                                int64_t i);

/*
 * The runs of dimension extent n owned both by coordinate ca of Pa under da
 * and by cb of Pb under db, in increasing order.  *out is malloc'ed (NULL
 * when *nout is 0); free it.  Returns 0 or -ENOMEM.
 */
GA_HIDDEN int ga_dim_runs(const ga_dist *da, int Pa, int ca, const ga_dist *db,
                          int Pb, int cb, int64_t n, ga_run **out,
                          int64_t *nout);

/* Elements of unit u (counts per dimension into count, may be NULL). */
GA_HIDDEN int64_t ga_unit_count(const ga_layout *l, const ga_shape *s, int u,
                                int64_t *count);

/* Bytes of the largest chunk of a disk layout: the slot size. */
GA_HIDDEN int64_t ga_slot_bytes(const ga_layout *disk, const ga_shape *s);

/* Byte offset in one timestep/copy of the element at global index gidx
 * under a disk layout with the given slot size. */
GA_HIDDEN int64_t ga_disk_offset(const ga_layout *disk, const ga_shape *s,
                                 int64_t slot, const int64_t *gidx);

/* ---------------------------------------------------------------- schema */

typedef struct ga_schema_array {
    char name[GA_NAME_MAX + 1];
    ga_shape shape;
    ga_layout mem;  /* of the writer (informational) */
    ga_layout disk; /* how the data files are laid out */
    int chunks;
    int64_t slot;
} ga_schema_array;

typedef struct ga_schema {
    int kind; /* GA_TIMESTEP or GA_CHECKPOINT */
    int narrays;
    ga_schema_array *arrays; /* malloc'ed */
    int nsteps;              /* timestep records */
    int64_t *steps;          /* step number of each timestep (malloc'ed) */
    size_t header_len;       /* bytes up to and including "end\n" */
} ga_schema;

/* Header text (up to "end\n"); *text is malloc'ed.  Returns 0 or -ENOMEM. */
GA_HIDDEN int ga_schema_format(const ga_schema *s, char **text, size_t *len);

/* One timestep record line; returns its length or -ERANGE. */
GA_HIDDEN int ga_schema_step_line(int index, int64_t step, char *buf,
                                  size_t len);

/* Parse a whole schema file.  A trailing line without its newline (a
 * record cut by a crash) is ignored.  Returns 0, GA_ESCHEMA or -ENOMEM;
 * free with ga_schema_clear. */
GA_HIDDEN int ga_schema_parse(const char *text, size_t len, ga_schema *out);
GA_HIDDEN void ga_schema_clear(ga_schema *s);
GA_HIDDEN const ga_schema_array *ga_schema_find(const ga_schema *s,
                                                const char *name);

/* copynum records: two of GA_COPY_RECORD bytes, record c for copy c. */
typedef struct ga_copy_rec {
    int copy;
    int64_t seq; /* 1, 2, ... in checkpoint order */
    int64_t step;
} ga_copy_rec;

GA_HIDDEN uint32_t ga_crc32(const void *data, size_t len);
/* A complete record: "copynum C seq S step N crc XXXXXXXX\n", NUL padded. */
GA_HIDDEN void ga_copy_encode(const ga_copy_rec *r, char *rec);
/* The record of a copy being overwritten: "copynum C pending\n". */
GA_HIDDEN void ga_copy_encode_pending(int copy, char *rec);
/* 0 if rec holds a complete record (crc checked), else GA_ESCHEMA. */
GA_HIDDEN int ga_copy_decode(const char *rec, ga_copy_rec *out);
/* The newest complete record of a copynum file: its copy number, or -1 if
 * there is none. */
GA_HIDDEN int ga_copy_newest(const char *file, size_t len, ga_copy_rec *out);

#ifndef GA_NO_MPI
/* ------------------------------------------------------------------ MPI */

struct ga_array {
    MPI_Comm comm;
    int rank, nprocs;
    char name[GA_NAME_MAX + 1];
    ga_shape shape;
    ga_layout mem, disk;
    int ghost[GA_MAX_RANK];
    int64_t count[GA_MAX_RANK], alloc[GA_MAX_RANK];
    int64_t bytes; /* owned bytes */
    void *base;    /* bound local block */
    void *owned;   /* allocated by ga_array_alloc */
    int groups;    /* groups holding it */
};

/*
 * Datatypes moving process p's local block (memory layout mem, ghosts)
 * to/from one timestep/copy laid out by `disk` in slots of `slot` bytes:
 * *ftype is a file type of extent chunks * slot, *mtype a memory type
 * relative to the block's base; *bytes the data size.  A process owning
 * nothing gets MPI_BYTE for both and 0 bytes (use count 0).  Free with
 * ga_types_free.  Returns 0, -ENOMEM or GA_EMPI.
 */
GA_HIDDEN int ga_types_build(const ga_array *a, const ga_layout *disk,
                             int64_t slot, MPI_Datatype *ftype,
                             MPI_Datatype *mtype, int64_t *bytes);
GA_HIDDEN void ga_types_free(MPI_Datatype *ftype, MPI_Datatype *mtype);

/* An MPI error code as GA_EMPI with "what: MPI message" in ga_errmsg. */
GA_HIDDEN int ga_mpi_fail(int mpi_err, const char *what, const char *path);

/* ------------------------------------------------ agreement: ga_comm.c */

/*
 * Every public call on a communicator ends by agreeing on one code: the
 * most negative over the processes (MINLOC), with the failing process's
 * ga_errmsg() broadcast to all.  ga_agree does it in one call
 * (collective).
 */
GA_HIDDEN int ga_agree(MPI_Comm comm, int rc);

/*
 * The two halves of ga_agree with work for rank 0 in between, for calls
 * whose last step is rank 0's (a step record, a copynum record): rank 0
 * learns the lowest code and who has it (one reduce; the others do not
 * wait for each other), does its part if everything went well, then
 * ga_share_status shares the outcome (one broadcast, a second one with the
 * message on failure).  Both collective.
 */
typedef struct ga_status {
    int rc, rank;
} ga_status;
GA_HIDDEN ga_status ga_gather_status(MPI_Comm comm, int rc);
GA_HIDDEN int ga_share_status(MPI_Comm comm, ga_status st);

/* a, b and c (may be NULL) joined; malloc'ed, NULL when out of memory. */
GA_HIDDEN char *ga_join(const char *a, const char *b, const char *c);

/* Read a whole small file on this process (rank 0, MPI_COMM_SELF); *buf
 * is malloc'ed and NUL-terminated.  *missing is set (and 0 returned) if
 * it does not exist.  Returns 0, GA_EMPI, GA_ESCHEMA (too large) or
 * -ENOMEM. */
GA_HIDDEN int ga_read_small(const char *path, char **buf, size_t *len,
                            bool *missing);

/* Broadcast rank 0's code rc, then (when it is 0) its buffer: length, then
 * bytes; the others get a malloc'ed, NUL-terminated copy.  Collective. */
GA_HIDDEN int ga_bcast_buf(MPI_Comm comm, int rank, char **buf, size_t *len,
                           int rc);

/* ------------------------------------------------------------- groups */

/* An array in a group, with what the group needs to move it. */
typedef struct ga_member {
    ga_array *a;
    ga_layout disk; /* the group's disk layout for this array */
    int64_t slot;
    MPI_Datatype ftype, mtype;
    int64_t bytes;
    bool coll;      /* every process holds part of it: collective I/O */
    MPI_File fh[2]; /* timestep file, or checkpoint copies 0 and 1 */
} ga_member;

struct ga_group {
    MPI_Comm comm;
    int rank, nprocs;
    ga_group_kind kind;
    int flags;
    char *path;
    MPI_Info info;
    int nmem;
    ga_member *mem;
    bool opened;      /* types built, schema written/checked */
    bool have_schema; /* a stored schema was read */
    ga_schema schema;
    /* timesteps (every process) */
    int nsteps, stepcap;
    int64_t *steps;
    /* checkpoints (every process) */
    int last_copy; /* newest complete copy, -1 none */
    int64_t last_seq, last_step;
    int ncheckpoints;
    /* rank 0 only */
    MPI_File fschema, fcopy;
    int64_t schema_end;
#ifdef GA_TEST_HOOKS
    /* crash points (ga_crash.c) */
    int crash_kind; /* 0 none, else a ga_crash_kind */
    int crash_at;   /* in this checkpoint of the run (1, 2, ...) */
#endif
};

enum { GA_IO_READ, GA_IO_WRITE };

/* First write or read of a group (ga_group.c): datatypes, then the schema
 * side of the files (a fresh group deletes old files and writes its
 * schema; an appended one checks it).  Collective; every process returns
 * the same code.  Does nothing the second time. */
GA_HIDDEN int ga_group_setup(ga_group *g);

/* Open (collectively) the data file of member m for copy c and set its
 * view; does nothing when it is open.  Every process returns the same
 * code. */
GA_HIDDEN int ga_open_data(ga_group *g, ga_member *m, int c);

/* ga_open_data for copy c of every member. */
GA_HIDDEN int ga_open_all(ga_group *g, int c);

/*
 * One access (op: GA_IO_READ or GA_IO_WRITE) per array of the group on
 * copy c (timestep files: c = 0) at timestep `index`; the files must be
 * open (ga_open_all).  Every process makes the same sequence of collective
 * calls whatever fails on the way, so nothing needs agreeing in between;
 * the caller agrees once at the end.  With crash_hook, the crash point
 * GA_CRASH_DATA follows the first array (test build only).
 */
GA_HIDDEN int ga_io_all(ga_group *g, int c, int op, int64_t index,
                        bool crash_hook);

/* ------------------------------------------------- hints: ga_hints.c */

/* A "galley:" name: the group adds Galley's striping and fork hints. */
GA_HIDDEN bool ga_is_galley(const char *path);

/* PATH.NAME (timesteps) or PATH.NAME.C (checkpoint copy C); malloc'ed,
 * NULL when out of memory. */
GA_HIDDEN char *ga_data_name(const ga_group *g, const ga_member *m, int copy);

/* Hints for a data file: the caller's first, then ours where unset.  Free
 * with MPI_Info_free. */
GA_HIDDEN MPI_Info ga_data_info(const ga_group *g, const ga_member *m,
                                int copy);

/* Hints for the record file whose Galley fork is `fork` ("schema" or
 * "copynum"), written by rank 0 alone.  Free with MPI_Info_free. */
GA_HIDDEN MPI_Info ga_record_info(const ga_group *g, const char *fork);

/* ------------------------------------------ crash points: ga_crash.c */

/*
 * Crash points for the crash tests: GALLEY_ARRAY_CRASH=data:N or
 * copynum:N makes rank 0 _exit(99) inside the N-th checkpoint of the run,
 * after the first array's data (GA_CRASH_DATA) or just before the copynum
 * record (GA_CRASH_COPYNUM); pause:N makes it wait before the syncs until
 * the file GALLEY_ARRAY_PAUSE names is removed (GA_CRASH_PAUSE).  Only in
 * the test build of the library
 * (libga, compiled with -DGA_TEST_HOOKS, linked into the programs of
 * _build/arrays/); the installed libgalley_array has no crash points and
 * ignores the variable.
 */
typedef enum ga_crash_kind {
    GA_CRASH_DATA = 1,
    GA_CRASH_COPYNUM = 2,
    GA_CRASH_PAUSE = 3
} ga_crash_kind;

#ifdef GA_TEST_HOOKS
/* Read GALLEY_ARRAY_CRASH into g (at group creation). */
GA_HIDDEN void ga_crash_init(ga_group *g);
/* Exit here if g's crash point is this one. */
GA_HIDDEN void ga_crash_point(const ga_group *g, ga_crash_kind kind);
#else
static inline void ga_crash_init(ga_group *g)
{
    (void)g;
}
static inline void ga_crash_point(const ga_group *g, ga_crash_kind kind)
{
    (void)g;
    (void)kind;
}
#endif
#endif /* GA_NO_MPI */

#endif /* GA_INTERNAL_H */
