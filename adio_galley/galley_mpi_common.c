/*
 * galley_mpi_common.c -- the MPI-driver core (galley_mpi_common.h): the
 * client's lifecycle, atomic mode's lock around a list request, and the
 * reader of the layout hints.  Compiled into MPICH's ROMIO with the rest
 * of this directory and into each OMPIO plug-in of ompio_galley/.
 *
 * Threads: any; the counters are atomic.
 */
#include "galley_mpi_common.h"

/* ------------------------------------------------------- lifecycle ---- */

static int galley_keyval = MPI_KEYVAL_INVALID;
static int open_files;  /* galley: files open in this process */
static int end_pending; /* MPI_Finalize came while some were open */

/* MPI_Finalize deletes MPI_COMM_SELF's attributes first: finish there --
 * unless files are still open.  Attributes are deleted newest first, and a
 * library that set its own attribute before the first open (HDF5 closes
 * the files an application left open that way) still closes them after
 * this callback: libgalley is then finished by the last close. */
static int galley_end(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    MPI_Comm_free_keyval(&galley_keyval);
    if (__atomic_load_n(&open_files, __ATOMIC_SEQ_CST) > 0)
        __atomic_store_n(&end_pending, 1, __ATOMIC_SEQ_CST);
    else
        gfs_finalize();
    return MPI_SUCCESS;
}

int galley_mpi_init(void)
{
    if (galley_keyval != MPI_KEYVAL_INVALID)
        return 0;
    int rc = gfs_init(NULL);
    if (rc)
        return rc;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, galley_end, &galley_keyval,
                           NULL);
    MPI_Comm_set_attr(MPI_COMM_SELF, galley_keyval, NULL);
    return 0;
}

void galley_mpi_opened(void)
{
    __atomic_add_fetch(&open_files, 1, __ATOMIC_SEQ_CST);
}

void galley_mpi_closed(void)
{
    if (__atomic_sub_fetch(&open_files, 1, __ATOMIC_SEQ_CST) == 0 &&
        __atomic_exchange_n(&end_pending, 0, __ATOMIC_SEQ_CST))
        gfs_finalize();
}

/* ------------------------------------------------------ list I/O ---- */

int galley_mpi_lock_ranges(galley_mpi_lock *lk, int sid, bool atomic, int op,
                           int64_t nr, const gfs_range *r)
{
    int64_t lo = 0, hi = 0;
    *lk = (galley_mpi_lock){.sid = sid};
    if (atomic) /* the span is needed only to lock it */
        galley_ranges_span(nr, r, &lo, &hi);
    if (hi <= lo)
        return 0;
    int rc = gfs_striped_lock(sid, lo, hi - lo, op == GFS_WRITE);
    if (rc == 0)
        *lk = (galley_mpi_lock){.sid = sid, .lo = lo, .len = hi - lo,
                                .held = true};
    return rc;
}

void galley_mpi_unlock(galley_mpi_lock *lk)
{
    if (lk->held)
        gfs_striped_unlock(lk->sid, lk->lo, lk->len);
    lk->held = false;
}

int64_t galley_mpi_rangeio(int sid, bool atomic, int op, int64_t nr,
                           const gfs_range *r, int64_t nm, const gfs_memseg *m)
{
    galley_mpi_lock lk;
    if (nr == 0)
        return 0;
    int64_t rc = galley_mpi_lock_ranges(&lk, sid, atomic, op, nr, r);
    if (rc == 0)
        rc = gfs_striped_rangeio(sid, op, nr, r, nm, m);
    galley_mpi_unlock(&lk);
    return rc;
}

/* ----------------------------------------------------- hint reader ---- */

unsigned galley_mpi_read_hints(galley_mpi_hints *h, galley_mpi_info_get get,
                               void *info, int (*nservers)(void))
{
    char v[MPI_MAX_INFO_VAL + 1];
    unsigned took = 0;
    if (get(info, GALLEY_HINT_STRIPING_FACTOR, v) &&
        galley_hint_striping_factor(v) > 0) {
        h->nsub = galley_hint_striping_factor(v);
        took |= GALLEY_MPI_HAS_STRIPING_FACTOR;
    }
    if (get(info, GALLEY_HINT_STRIPING_UNIT, v) &&
        galley_hint_striping_unit(v) > 0) {
        h->unit = galley_hint_striping_unit(v);
        took |= GALLEY_MPI_HAS_STRIPING_UNIT;
    }
    if (get(info, GALLEY_HINT_SERVERS, v)) {
        int tmp[GFS_MAX_SUBFILES];
        int n = galley_hint_servers(v, nservers(), tmp);
        if (n > 0) {
            h->nservers = n;
            memcpy(h->servers, tmp, sizeof(int) * n);
            took |= GALLEY_MPI_HAS_SERVERS;
        }
    }
    if (get(info, GALLEY_HINT_FORK, v) && galley_hint_fork_ok(v)) {
        memcpy(h->fork, v, strlen(v) + 1);
        took |= GALLEY_MPI_HAS_FORK;
    }
    if (get(info, GALLEY_HINT_LAYOUT, v) &&
        galley_hint_layout_ok(v, sizeof(h->layout))) {
        memcpy(h->layout, v, strlen(v) + 1);
        took |= GALLEY_MPI_HAS_LAYOUT;
    }
    if (get(info, GALLEY_HINT_CHECKSUM, v) && galley_hint_checksum_ok(v)) {
        memcpy(h->checksum, v, strlen(v) + 1);
        took |= GALLEY_MPI_HAS_CHECKSUM;
    }
    if (get(info, GALLEY_HINT_REPLICAS, v) && galley_hint_replicas(v) > 0) {
        h->replicas = galley_hint_replicas(v);
        took |= GALLEY_MPI_HAS_REPLICAS;
    }
    return took;
}
