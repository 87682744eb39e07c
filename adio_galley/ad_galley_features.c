/*
 * Galley for MPI-IO: what the file system really does.
 */
#include "ad_galley.h"

int ADIOI_GALLEY_Feature(ADIO_File fd, int flag)
{
    switch (flag) {
        case ADIO_SCALABLE_OPEN:       /* one rank opens, the rest import */
        case ADIO_SCALABLE_RESIZE:     /* every rank calls Resize; rank 0 acts */
        case ADIO_SHARED_FP:   /* server-side fetch-and-add */
        case ADIO_LOCKS:       /* server-side byte-range locks */
        case ADIO_ATOMIC_MODE: /* accesses under a range lock */
        case ADIO_UNLINK_AFTER_CLOSE:  /* deferred delete of open forks */
            return 1;
        case ADIO_DATA_SIEVING_WRITES: /* list I/O instead: no RMW */
        case ADIO_TWO_PHASE:
        case ADIO_SEQUENTIAL:
        default:
            return 0;
    }
}
