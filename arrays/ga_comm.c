/*
 * ga_comm.c -- agreement between the processes of a call, and the small
 * record files that rank 0 reads for everybody.
 *
 * Errors: every public call on a communicator ends by agreeing on one code
 * (the most negative one, MINLOC over ranks) and broadcasting the failing
 * process's message, so all processes return the same code and
 * ga_errmsg().  Collective calls are counted (each costs milliseconds when
 * processes outnumber cores): a timestep is one MPI_File_write_at_all per
 * array, a reduce and a broadcast; a checkpoint adds one MPI_File_sync per
 * array, and an allreduce between two arrays' syncs.
 *
 * Threads: the caller's; see galley_array.h.
 */
#include "ga_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ga_agree(MPI_Comm comm, int rc)
{
    struct {
        int rc, rank;
    } in, out;
    MPI_Comm_rank(comm, &in.rank);
    in.rc = rc;
    MPI_Allreduce(&in, &out, 1, MPI_2INT, MPI_MINLOC, comm);
    if (out.rc != 0) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", ga_errmsg());
        MPI_Bcast(msg, sizeof(msg), MPI_CHAR, out.rank, comm);
        msg[sizeof(msg) - 1] = 0;
        ga_fail(out.rc, "%s", msg);
    }
    return out.rc;
}

ga_status ga_gather_status(MPI_Comm comm, int rc)
{
    ga_status in, out = {0, 0};
    MPI_Comm_rank(comm, &in.rank);
    in.rc = rc;
    MPI_Reduce(&in, &out, 1, MPI_2INT, MPI_MINLOC, 0, comm);
    return out; /* meaningful on rank 0 */
}

int ga_share_status(MPI_Comm comm, ga_status st)
{
    MPI_Bcast(&st, 1, MPI_2INT, 0, comm);
    if (st.rc != 0) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", ga_errmsg());
        MPI_Bcast(msg, sizeof(msg), MPI_CHAR, st.rank, comm);
        msg[sizeof(msg) - 1] = 0;
        ga_fail(st.rc, "%s", msg);
    }
    return st.rc;
}

char *ga_join(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + (c ? strlen(c) : 0) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s", a, b, c ? c : "");
    return s;
}

static int err_class(int mpi_rc)
{
    int cls = MPI_ERR_OTHER;
    MPI_Error_class(mpi_rc, &cls);
    return cls;
}

int ga_read_small(const char *path, char **buf, size_t *len, bool *missing)
{
    MPI_File fh;
    MPI_Offset size;
    *buf = NULL;
    *len = 0;
    *missing = false;
    int m =
        MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    if (m != MPI_SUCCESS) {
        if (err_class(m) == MPI_ERR_NO_SUCH_FILE) {
            *missing = true;
            return 0;
        }
        return ga_mpi_fail(m, "open", path);
    }
    int rc = 0;
    m = MPI_File_get_size(fh, &size);
    if (m != MPI_SUCCESS) {
        rc = ga_mpi_fail(m, "size of", path);
    } else if (size > GA_SCHEMA_MAX) {
        rc = ga_fail(GA_ESCHEMA, "%s: %lld bytes, more than a schema may hold",
                     path, (long long)size);
    } else {
        *buf = malloc((size_t)size + 1);
        if (!*buf) {
            rc = ga_fail(-ENOMEM, "out of memory");
        } else if (size > 0 &&
                   (m = MPI_File_read_at(fh, 0, *buf, (int)size, MPI_BYTE,
                                         MPI_STATUS_IGNORE)) != MPI_SUCCESS) {
            rc = ga_mpi_fail(m, "read", path);
        } else {
            (*buf)[size] = 0;
            *len = (size_t)size;
        }
    }
    MPI_File_close(&fh);
    if (rc) {
        free(*buf);
        *buf = NULL;
    }
    return rc;
}

int ga_bcast_buf(MPI_Comm comm, int rank, char **buf, size_t *len, int rc)
{
    int64_t hdr[2] = {rc, (int64_t)*len};
    MPI_Bcast(hdr, 2, MPI_INT64_T, 0, comm);
    if (hdr[0])
        return (int)hdr[0];
    if (rank != 0 || !*buf) {
        *len = (size_t)hdr[1];
        *buf = malloc(*len + 1);
        if (!*buf)
            return ga_fail(-ENOMEM, "out of memory"); /* fatal: MPI aborts */
    }
    if (*len)
        MPI_Bcast(*buf, (int)*len, MPI_BYTE, 0, comm);
    (*buf)[*len] = 0;
    return 0;
}
