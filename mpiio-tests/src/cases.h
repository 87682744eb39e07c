/*
 * cases.h -- the table of access shapes (file view x memory type) that
 * noncontig, coll and nonblock run through their access methods.
 *
 * Each case is built per rank: the views of all ranks cover disjoint bytes
 * of one shared file (interleaved records, array blocks, rank regions), so
 * the merged image of all ranks is the exact expected file content.
 */
#ifndef CASES_H
#define CASES_H

#include "mt.h"

#define CASE_MAX_TYPES 16

typedef struct mt_case {
    const char *name;
    mt_view view;
    MPI_Datatype mtype; /* memory type */
    int mcount;         /* instances of mtype this rank accesses */
    MPI_Offset off;     /* view position of the access (etypes) */
    int64_t len;        /* bytes of the file image (all ranks) */
    MPI_Datatype owned[CASE_MAX_TYPES];
    int nowned;
} mt_case;

int mt_ncases(void);
const char *mt_case_name(int i);
/* Build case i for (rank, nprocs); 0 or 1 (failure recorded). */
int mt_case_build(int i, int rank, int nprocs, mt_case *c);
void mt_case_free(mt_case *c);

/* Whether case i is selected by "-cases a,b,c" (all when absent) and not
 * excluded by "-skip d,e". */
int mt_case_selected(int i);

/* Run case i on fh (open on comm, read-write): empty the file
 * (set_size 0), write with wmethod through the case's view, check the
 * whole file against the merged image of all ranks (and the size), read
 * back with rmethod and check the data and that memory holes are intact.
 * Collective over comm.  Returns the failures of this run on this rank. */
int mt_run_case(MPI_File fh, MPI_Comm comm, const char *tag, int i, int wmethod,
                int rmethod);

/* Open "<fname>.<tag>" fresh on comm (hints: mt_info), run every selected
 * case with each (write method, read method) pair, close, and delete the
 * file unless something failed.  Returns this rank's failures. */
int mt_run_cases(MPI_Comm comm, const char *tag, const int (*pairs)[2],
                 int npairs);

#endif /* CASES_H */
