/*
 * ga_checkpoint.c -- checkpoint groups: two alternating copies, and
 * restart from the newest complete one.
 *
 * Order of a checkpoint into copy C (C = the copy not holding the newest
 * checkpoint):
 *   1. rank 0 marks record C "pending" (so no tool shows it as good)
 *   2. every array: MPI_File_write_at_all into PATH.NAME.C
 *   3. every array: MPI_File_sync (collective; durable on return), only
 *      when step 2 succeeded on every process (one allreduce), and each
 *      only when the syncs before it succeeded on every process
 *   4. rank 0 learns that 2-3 succeeded on every process (one reduce)
 *   5. rank 0 writes record C (seq, step, crc) and syncs PATH.copynum,
 *      then broadcasts the outcome
 * A crash before 5 leaves the other copy as the newest complete record.
 * In the test build (ga_crash.c) GALLEY_ARRAY_CRASH=data:N or copynum:N
 * makes rank 0 _exit(99) during the N-th checkpoint of the run, after step
 * 2's first array or just before step 5.
 *
 * Threads: the caller's; see galley_array.h.
 */
#include "ga_internal.h"

int ga_checkpoint(ga_group *g, int64_t step)
{
    if (!g || g->kind != GA_CHECKPOINT)
        return ga_fail(GA_ESTATE, "ga_checkpoint needs a checkpoint group");
    int rc = ga_group_setup(g);
    if (rc)
        return rc;
    int c = g->last_copy < 0 ? 0 : 1 - g->last_copy;
    rc = ga_open_all(g, c);
    if (rc)
        return rc;
    char rec[GA_COPY_RECORD];
    if (g->rank == 0) {
        ga_copy_encode_pending(c, rec);
        int e = MPI_File_write_at(g->fcopy, (MPI_Offset)c * GA_COPY_RECORD, rec,
                                  GA_COPY_RECORD, MPI_BYTE, MPI_STATUS_IGNORE);
        if (e != MPI_SUCCESS)
            rc = ga_mpi_fail(e, "mark copy pending in", g->path);
    }
    /* every process learns whether anybody's data failed (one allreduce):
     * then nobody syncs a copy that cannot count, or waits for a server
     * that is gone */
    int io = ga_agree(g->comm, ga_io_all(g, c, GA_IO_WRITE, 0, true));
    if (!rc)
        rc = io;
    ga_crash_point(g, GA_CRASH_PAUSE);
    for (int i = 0; i < g->nmem && !io; i++) {
        int e = MPI_File_sync(g->mem[i].fh[c]); /* collective */
        if (e != MPI_SUCCESS && !rc)
            rc = ga_mpi_fail(e, "sync of checkpoint", g->path);
        /* once a sync failed anywhere the copy cannot count: the next
         * array's sync is not tried, so a server that is gone or stopped
         * is not waited for again (an MPI-IO driver need not agree on
         * a sync's outcome, so whether one failed is agreed here) */
        if (i + 1 < g->nmem) {
            int bad = e != MPI_SUCCESS;
            MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, g->comm);
            io = bad;
        }
    }
    ga_status st = ga_gather_status(g->comm, rc);
    if (g->rank == 0 && st.rc == 0) {
        ga_crash_point(g, GA_CRASH_COPYNUM);
        /* every copy of every array is durable: now it may count */
        ga_copy_rec r = {c, g->last_seq + 1, step};
        ga_copy_encode(&r, rec);
        int e = MPI_File_write_at(g->fcopy, (MPI_Offset)c * GA_COPY_RECORD, rec,
                                  GA_COPY_RECORD, MPI_BYTE, MPI_STATUS_IGNORE);
        if (e == MPI_SUCCESS)
            e = MPI_File_sync(g->fcopy);
        if (e != MPI_SUCCESS)
            st.rc = ga_mpi_fail(e, "write copynum record of", g->path);
    }
    rc = ga_share_status(g->comm, st);
    g->ncheckpoints++;
    if (rc)
        return rc;
    g->last_copy = c;
    g->last_seq++;
    g->last_step = step;
    return c;
}

int ga_restart(ga_group *g, int64_t *step)
{
    if (!g || (g->kind != GA_RESTART && g->kind != GA_CHECKPOINT))
        return ga_fail(GA_ESTATE,
                       "ga_restart needs a restart or checkpoint group");
    if (!g->have_schema || g->last_copy < 0)
        return ga_fail(GA_ENOCKPT, "%s: no complete checkpoint", g->path);
    int rc = ga_group_setup(g);
    if (rc)
        return rc;
    int c = g->last_copy;
    rc = ga_open_all(g, c);
    if (!rc)
        rc = ga_agree(g->comm, ga_io_all(g, c, GA_IO_READ, 0, false));
    if (rc)
        return rc;
    if (step)
        *step = g->last_step;
    return c;
}
