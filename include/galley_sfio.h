/*
 * galley_sfio.h -- the SFIO interface (sfio-striped-file-io-mpi paper) as a
 * thin layer over Galley's striped linear files.
 *
 * Differences from the paper: names are Galley file names (the servers
 * come from the cluster file), calls return a status instead of void, and
 * nothing here is collective (no MPI).  mread/mwrite are deliberately the
 * paper's unoptimised path: one request per stripe fragment, in order, so
 * the benefit of the optimised mreadc/mwritec/mreadb/mwriteb (fragments
 * sorted and merged per server, one transfer per server) can be measured.
 *
 * Errors: functions returning int/long give 0 or bytes on success and a
 * negative galley.h error code on failure; mopen returns NULL and
 * mlasterror() tells why.  Per-server error statistics as in the paper:
 * merror() fills ioerr[server * MERR_NKINDS + kind] and resets them.
 *
 * Threads: any; an MFILE may be shared by threads.
 */
#ifndef GALLEY_SFIO_H
#define GALLEY_SFIO_H

#include "galley.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct MFILE MFILE;

/* Error statistic kinds, as listed in the paper. */
enum {
    MERR_OPEN,
    MERR_CLOSE,
    MERR_CREAT,
    MERR_UNLINK,
    MERR_FTRUNCATE,
    MERR_LSEEK,
    MERR_WRITE,
    MERR_READ,
    MERR_NKINDS
};

/* Open (creating over every server if absent) a striped file with stripe
 * unit stripe_unit bytes (<= 0: the default).  An existing file keeps its
 * own unit.  Undo with mclose. */
MFILE *mopen(const char *name, int stripe_unit);
int mclose(MFILE *f);
/* Change the logical size (truncate or extend with zeros). */
int mchsize(MFILE *f, long size);
int mdelete(const char *name);
/* Create over every server with the default stripe unit. */
int mcreate(const char *name);

long mread(MFILE *f, long offset, char *buffer, unsigned size);
long mwrite(MFILE *f, long offset, const char *buffer, unsigned size);
long mreadc(MFILE *f, long offset, char *buffer, unsigned size);
long mwritec(MFILE *f, long offset, const char *buffer, unsigned size);
long mreadb(MFILE *f, unsigned n, const long offsets[], char *buffers[],
            const unsigned sizes[]);
long mwriteb(MFILE *f, unsigned n, const long offsets[], char *const buffers[],
             const unsigned sizes[]);

/* ioerr must hold gfs_num_servers() * MERR_NKINDS counters. */
void merror(unsigned long *ioerr);
/* The error of the last failed call in this thread. */
int mlasterror(void);

#ifdef __cplusplus
}
#endif
#endif /* GALLEY_SFIO_H */
