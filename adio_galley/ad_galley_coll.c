/*
 * Galley for MPI-IO: collective I/O.
 *
 * galley_cb=two_phase hands the call to ROMIO's generic two-phase code
 * (which runs over this driver's Contig/Strided entry points).
 *
 * galley_cb=auto (default) decides per call, as ROMIO's automatic mode
 * does: every rank tells the others (one allgather) its bytes, its file
 * range and how many wire segments its pieces fold into (equal pieces at a
 * constant stride are one segment: gfs_striped_segments, libgalley's own
 * folding rule).  Aggregation
 * pays only when the ranks' ranges interleave AND their pieces are small
 * and irregular (fewer than AUTO_BYTES_PER_SEG bytes per segment): then
 * gathering them cuts the number of pieces the servers see.  Otherwise
 * every rank sends its own pieces straight to the servers, which sort and
 * merge them anyway -- the exchange would only copy the data twice more.
 * romio_cb_write/romio_cb_read=enable force aggregation, as in ROMIO.
 *
 * galley_cb=server always aggregates: aggregators' domains follow server
 * ownership of the stripes, as ad_lustre does, so each aggregator talks to
 * as few servers as possible.  With A aggregators (cb_nodes when the user
 * gives it, else one per subfile; at most the number of subfiles and of
 * ranks), aggregator a owns every stripe of the subfiles s with
 * s % A == a.  Every rank cuts its access into stripe fragments and sends
 * each (with its data, for writes) to the owner in one all-to-all; each
 * aggregator then issues one list request for everything it received
 * (libgalley sorts and merges per server: the interleaved small records of
 * all ranks become long contiguous extents), and for reads sends the data
 * back the same way.  romio_cb_write/romio_cb_read=disable make the call
 * independent.
 *
 * Errors: a collective call fails on every rank when any rank's part
 * failed, whichever way it went, as ROMIO's own collective write does.
 * Every path ends in one agreement over fd->comm (ADIOI_GALLEY_Coll_agree,
 * ad_galley_collerr.c:
 * one MPI_Allreduce of an int64; the aggregating path's already did one
 * at its end, the agreement replaces it) or learns of an earlier failure
 * from an exchange it makes anyway (the allgather that decides, the
 * allreduce that checks the counts) and then moves no data at all.  The
 * rank that failed returns its own error; the others MPI_ERR_IO naming
 * that rank and the cause.  A rank whose part failed still enters every
 * exchange the others enter: the driver's Contig/Strided calls made by
 * ROMIO's generic two-phase code keep their error for the agreement and
 * report success to it (ADIOI_GALLEY_Access), so it never leaves its
 * rounds early.
 *
 * Threads: the calling thread; collective over fd->comm.
 */
#include "ad_galley.h"
#include "adio_extern.h"

#include <errno.h>
#include <limits.h>

#define AUTO_BYTES_PER_SEG 16384

/* ---------------------------------------------------- the decision ---- */

static void independent(ADIO_File fd, int op, void *buf, int count, MPI_Datatype datatype,
                        int file_ptr_type, ADIO_Offset offset, ADIO_Status * status,
                        int *error_code)
{
    ADIOI_GALLEY_Access(fd, op, buf, count, datatype, file_ptr_type, offset, 0, status,
                        error_code);
}

/* The auto decision (galley_cb=auto), from what every rank told: whether
 * every rank moves its own pieces (1) rather than aggregating (0).
 * Aggregation pays only when the ranks' file ranges interleave AND their
 * pieces are small and irregular: fewer than AUTO_BYTES_PER_SEG bytes per
 * wire segment over all ranks (segs: the segments the ranks' pieces fold
 * into, bytes: what they move).  No segments: nothing to gather. */
static int auto_independent(int interleaved, int64_t segs, int64_t bytes)
{
    return !interleaved || segs == 0 || bytes >= AUTO_BYTES_PER_SEG * segs;
}

/* Whether independent I/O serves this call better, decided together from
 * every rank's bytes, folded segments and range (auto_independent).  The
 * same allgather tells every rank whether any rank's part failed already:
 * *failed is the MPI_MAX of ADIOI_GALLEY_Coll_fail_key. */
static int independent_is_better(ADIO_File fd, const ADIOI_GALLEY_Pieces * pc,
                                 int64_t * failed)
{
    int nprocs, rank;
    MPI_Comm_size(fd->comm, &nprocs);
    MPI_Comm_rank(fd->comm, &rank);
    /* decide together: bytes, segments, [start, end) of every rank */
    int64_t me[5] = { ADIOI_GALLEY_Coll_fail_key(fd->fs_ptr, rank), 0, 0, INT64_MAX, 0 };
    for (int64_t i = 0; i < pc->nr; i++) {
        const gfs_range *r = &pc->r[i];
        if (r->size == 0)
            continue;
        me[2] += r->size;
        if (r->offset < me[3])
            me[3] = r->offset;
        if (r->offset + r->size > me[4])
            me[4] = r->offset + r->size;
    }
    me[1] = pc->nr ? gfs_striped_segments(((ADIOI_GALLEY_fs *) fd->fs_ptr)->sid, pc->nr,
                                          pc->r) : 0;
    if (me[1] < 0)
        me[1] = pc->nr;         /* (not for ranges Build_list made) */
    int64_t *all = ADIOI_Malloc(sizeof(int64_t) * 5 * nprocs);
    MPI_Allgather(me, 5, MPI_INT64_T, all, 5, MPI_INT64_T, fd->comm);
    int64_t segs = 0, bytes = 0;
    int interleaved = 0;
    *failed = 0;
    for (int r = 0; r < nprocs; r++) {
        if (all[5 * r] > *failed)
            *failed = all[5 * r];
        segs += all[5 * r + 1];
        bytes += all[5 * r + 2];
        for (int q = 0; q < r && !interleaved; q++)
            interleaved = all[5 * r + 2] > 0 && all[5 * q + 2] > 0 &&
                all[5 * r + 3] < all[5 * q + 4] && all[5 * q + 3] < all[5 * r + 4];
    }
    ADIOI_Free(all);
    return auto_independent(interleaved, segs, bytes);
}

/* galley_cb=auto's turn, for a call whose pieces are pc: decide together.
 * Returns 1 if the call ended here -- a rank had failed already (nobody
 * moves any data) or independent I/O won (every rank moved its own
 * pieces; agreed) -- and 0 if it aggregates. */
static int auto_ended(ADIO_File fd, int op, const ADIOI_GALLEY_Pieces * pc, int64_t total,
                      ADIO_Offset end, MPI_Datatype datatype, int file_ptr_type,
                      ADIO_Status * status, int *error_code)
{
    static char myname[] = "ADIOI_GALLEY_COLL";
    int64_t failed;
    int indep = independent_is_better(fd, pc, &failed);
    if (failed) {
        /* a rank failed before any data moved: nobody moves any */
        ADIOI_GALLEY_Coll_finish(fd, myname, __LINE__, failed, error_code);
    } else if (indep) {
        int rc = ADIOI_GALLEY_Access_list(fd, op, pc, total, end, datatype,
                                          file_ptr_type, status, error_code);
        if (rc)
            ADIOI_GALLEY_Coll_record(fd->fs_ptr, *error_code, rc);
        ADIOI_GALLEY_Coll_agree(fd, myname, __LINE__, error_code);
    }
    return failed || indep;
}

/* ------------------------------------------------- aggregation ---- */

/* Copy n bytes between data and the memory segments at cursor (*j, *at),
 * moving the cursor: into data for a write, out of it for a read. */
static void seg_copy(int op, const gfs_memseg * m, int64_t * j, int64_t * at, char *data,
                     int64_t n)
{
    while (n > 0) {
        int64_t take = m[*j].size - *at;
        if (take == 0) {
            ++*j;
            *at = 0;
            continue;
        }
        if (take > n)
            take = n;
        char *mem = (char *) m[*j].addr + *at;
        if (op == GFS_WRITE)
            memcpy(data, mem, take);
        else
            memcpy(mem, data, take);
        data += take;
        *at += take;
        n -= take;
    }
}

/* Send every fragment (descriptors, and data for writes) to its
 * aggregator, which moves all it received with one list request, and
 * bring read data back.  The fragments fr are the access's file ranges
 * cut at stripe boundaries, in order, so the memory segments m are walked
 * alongside them.  Returns 0 or this rank's gfs error (as an aggregator);
 * the caller's agreement tells the others. */
static int64_t exchange(ADIO_File fd, int op, const gfs_memseg * m, const gfs_range * fr,
                        const int *dest, int64_t * scnt, int64_t nfrag, int64_t totby,
                        int nprocs)
{
    /* exchange counts, then descriptors (and data for writes) */
    int64_t *rcnt = ADIOI_Malloc(sizeof(int64_t) * 2 * nprocs);
    MPI_Alltoall(scnt, 2, MPI_INT64_T, rcnt, 2, MPI_INT64_T, fd->comm);
    int *sd = ADIOI_Malloc(sizeof(int) * 8 * nprocs);
    int *sdc = sd, *sdd = sd + nprocs, *rdc = sd + 2 * nprocs, *rdd = sd + 3 * nprocs;
    int *sbc = sd + 4 * nprocs, *sbd = sd + 5 * nprocs, *rbc = sd + 6 * nprocs,
        *rbd = sd + 7 * nprocs;
    int64_t rfr = 0, rby = 0;
    for (int r = 0, so = 0, ro = 0, sb = 0, rb = 0; r < nprocs; r++) {
        sdc[r] = (int) (16 * scnt[2 * r]);
        sdd[r] = so;
        so += sdc[r];
        rdc[r] = (int) (16 * rcnt[2 * r]);
        rdd[r] = ro;
        ro += rdc[r];
        sbc[r] = (int) scnt[2 * r + 1];
        sbd[r] = sb;
        sb += sbc[r];
        rbc[r] = (int) rcnt[2 * r + 1];
        rbd[r] = rb;
        rb += rbc[r];
        rfr += rcnt[2 * r];
        rby += rcnt[2 * r + 1];
    }
    gfs_range *sdesc = ADIOI_Malloc(sizeof(gfs_range) * (nfrag ? nfrag : 1));
    gfs_range *rdesc = ADIOI_Malloc(sizeof(gfs_range) * (rfr ? rfr : 1));
    char *sdata = ADIOI_Malloc(totby ? totby : 1);
    char *rdata = ADIOI_Malloc(rby ? rby : 1);
    int64_t *fill = ADIOI_Calloc(2 * nprocs, sizeof(int64_t));
    /* order fragments by destination, keeping their own order */
    int64_t *slot = ADIOI_Malloc(sizeof(int64_t) * (nfrag ? nfrag : 1));
    int64_t mj = 0, mat = 0;
    for (int64_t i = 0; i < nfrag; i++) {
        int r = dest[i];
        sdesc[sdd[r] / 16 + fill[2 * r]++] = fr[i];
        slot[i] = sbd[r] + fill[2 * r + 1];
        fill[2 * r + 1] += fr[i].size;
        if (op == GFS_WRITE)
            seg_copy(op, m, &mj, &mat, sdata + slot[i], fr[i].size);
    }
    MPI_Alltoallv(sdesc, sdc, sdd, MPI_BYTE, rdesc, rdc, rdd, MPI_BYTE, fd->comm);
    if (op == GFS_WRITE)
        MPI_Alltoallv(sdata, sbc, sbd, MPI_BYTE, rdata, rbc, rbd, MPI_BYTE, fd->comm);

    /* aggregators: one list request for everything received */
    int64_t got = 0;
    if (rfr > 0) {
        /* the received descriptors are the ranges, the data one segment */
        gfs_memseg all = {.addr = rdata,.size = rby };
        got = ADIOI_GALLEY_Listio(fd, op, rfr, rdesc, 1, &all);
    }
    if (op == GFS_READ) {
        MPI_Alltoallv(rdata, rbc, rbd, MPI_BYTE, sdata, sbc, sbd, MPI_BYTE, fd->comm);
        for (int64_t i = 0; i < nfrag; i++)
            seg_copy(op, m, &mj, &mat, sdata + slot[i], fr[i].size);
    }

    ADIOI_Free(slot);
    ADIOI_Free(fill);
    ADIOI_Free(rdata);
    ADIOI_Free(sdata);
    ADIOI_Free(rdesc);
    ADIOI_Free(sdesc);
    ADIOI_Free(sd);
    ADIOI_Free(rcnt);
    return got < 0 ? got : 0;
}

/* Aggregators: cb_nodes if the user set it, else one per subfile; at most
 * the number of subfiles and of ranks, at least one. */
static int aggregators(const ADIOI_GALLEY_fs * fs, int nprocs)
{
    int nsub = fs->layout.nsubfiles;
    int naggr = fs->cb_nodes > 0 ? fs->cb_nodes : nsub;
    if (naggr > nsub)
        naggr = nsub;
    if (naggr > nprocs)
        naggr = nprocs;
    if (naggr < 1)
        naggr = 1;
    return naggr;
}

/* The fragments of one call: its file ranges cut at stripe boundaries, in
 * order (fr), the rank each goes to (dest), and per rank the fragments
 * and bytes it is sent (scnt[2 r], scnt[2 r + 1]). */
typedef struct frags {
    gfs_range *fr;
    int *dest;
    int64_t *scnt;
    int64_t n;
} frags;

static void frags_free(frags * f)
{
    ADIOI_Free(f->scnt);
    ADIOI_Free(f->dest);
    ADIOI_Free(f->fr);
}

/* Cut pc's file ranges into stripe fragments, each sent to the aggregator
 * of its subfile (aggregator a owns subfiles s with s % naggr == a).  Out
 * of memory is recorded for the call's agreement. */
static void cut_fragments(ADIOI_GALLEY_fs * fs, const ADIOI_GALLEY_Pieces * pc, int naggr,
                          int nprocs, frags * f)
{
    static char myname[] = "ADIOI_GALLEY_COLL";
    int nsub = fs->layout.nsubfiles;
    int64_t unit = fs->layout.unit;
    const gfs_range *p = pc->r;
    int64_t nfrag = 0;
    for (int64_t i = 0; i < pc->nr; i++)
        nfrag += (p[i].offset + p[i].size - 1) / unit - p[i].offset / unit + 1;
    f->n = nfrag;
    f->fr = ADIOI_Malloc(sizeof(*f->fr) * (nfrag ? nfrag : 1));
    f->dest = ADIOI_Malloc(sizeof(int) * (nfrag ? nfrag : 1));
    f->scnt = ADIOI_Calloc(2 * nprocs, sizeof(int64_t));        /* frags, bytes */
    if (!f->fr || !f->dest || !f->scnt)
        ADIOI_GALLEY_Coll_record(fs, ADIOI_GALLEY_Err(myname, __LINE__, -ENOMEM), -ENOMEM);
    int64_t k = 0;
    for (int64_t i = 0; i < pc->nr && fs->coll_err == MPI_SUCCESS; i++) {
        int64_t off = p[i].offset, left = p[i].size;
        while (left > 0) {
            int64_t len;
            int sub = gfs_layout_locate(nsub, unit, off, NULL, &len);
            if (len > left)
                len = left;
            int agg = sub % naggr;
            int r = (int) ((int64_t) agg * nprocs / naggr);
            f->fr[k] = (gfs_range) {
            .offset = off,.size = len};
            f->dest[k++] = r;
            f->scnt[2 * r]++;
            f->scnt[2 * r + 1] += len;
            off += len;
            left -= len;
        }
    }
}

/* The largest count the exchange would pass to MPI as an int (a rank's
 * descriptor or data bytes, or the sum of them), and in *totby the bytes
 * this rank sends. */
static int64_t exchange_size(const int64_t * scnt, int nprocs, int64_t * totby)
{
    int64_t most = 0, totfr = 0;
    *totby = 0;
    for (int r = 0; r < nprocs && scnt; r++) {
        if (16 * scnt[2 * r] > most || scnt[2 * r + 1] > most)
            most = 16 * scnt[2 * r] > scnt[2 * r + 1] ? 16 * scnt[2 * r] : scnt[2 * r + 1];
        totfr += 16 * scnt[2 * r];
        *totby += scnt[2 * r + 1];
    }
    if (totfr > most)
        most = totfr;
    if (*totby > most)
        most = *totby;
    return most;
}

static void server_coll(ADIO_File fd, int op, void *buf, int count, MPI_Datatype datatype,
                        int file_ptr_type, ADIO_Offset offset, ADIO_Status * status,
                        int force, int *error_code)
{
    static char myname[] = "ADIOI_GALLEY_COLL";
    ADIOI_GALLEY_fs *fs = fd->fs_ptr;
    int nprocs, rank;
    MPI_Comm_size(fd->comm, &nprocs);
    MPI_Comm_rank(fd->comm, &rank);
    int naggr = aggregators(fs, nprocs);

    ADIOI_GALLEY_Pieces pc;
    int64_t total = 0;
    ADIO_Offset end = 0;
    int rc = ADIOI_GALLEY_Build_list(fd, buf, count, datatype, file_ptr_type, offset, 0,
                                     &pc, &total, &end);
    if (rc)
        ADIOI_GALLEY_Coll_record(fs, ADIOI_GALLEY_Err(myname, __LINE__, rc), rc);

    if (!force && auto_ended(fd, op, &pc, total, end, datatype, file_ptr_type, status,
                             error_code)) {
        ADIOI_GALLEY_Pieces_free(&pc);
        return;
    }

    /* cut the file ranges into stripe fragments, counted per destination
     * rank (the memory segments are walked alongside in exchange) */
    frags f;
    cut_fragments(fs, &pc, naggr, nprocs, &f);

    /* everyone agrees to go on (no failure, int-sized counts) or not */
    int64_t totby;
    int64_t mine[2] = { ADIOI_GALLEY_Coll_fail_key(fs, rank), 0 }, all[2];
    mine[1] = exchange_size(f.scnt, nprocs, &totby);
    MPI_Allreduce(mine, all, 2, MPI_INT64_T, MPI_MAX, fd->comm);
    if (all[0] || all[1] > INT_MAX / 2) {
        ADIOI_GALLEY_Pieces_free(&pc);
        frags_free(&f);
        if (all[0]) {
            /* a rank failed before any data moved: nobody moves any */
            ADIOI_GALLEY_Coll_finish(fd, myname, __LINE__, all[0], error_code);
            return;
        }
        independent(fd, op, buf, count, datatype, file_ptr_type, offset, status, error_code);
        ADIOI_GALLEY_Coll_agree(fd, myname, __LINE__, error_code);
        return;
    }

    int64_t err = exchange(fd, op, pc.m, f.fr, f.dest, f.scnt, f.n, totby, nprocs);
    ADIOI_GALLEY_Pieces_free(&pc);
    frags_free(&f);

    if (err < 0)
        ADIOI_GALLEY_Coll_record(fs, ADIOI_GALLEY_Err(myname, __LINE__, (int) err), (int) err);
    *error_code = MPI_SUCCESS;
    ADIOI_GALLEY_Coll_agree(fd, myname, __LINE__, error_code);
    if (*error_code != MPI_SUCCESS)
        return;
    if (file_ptr_type == ADIO_INDIVIDUAL) {
        fd->fp_ind = end;
        fd->fp_sys_posn = end;
    }
#ifdef HAVE_STATUS_SET_BYTES
    MPIR_Status_set_bytes(status, datatype, total);
#endif
}

/* Every collective data call (ROMIO's _all, _at_all, split and ordered
 * calls all end here): one of three ways, then one agreement on errors. */
static void coll(ADIO_File fd, int op, void *buf, int count, MPI_Datatype datatype,
                 int file_ptr_type, ADIO_Offset offset, ADIO_Status * status, int *error_code)
{
    static char myname[] = "ADIOI_GALLEY_COLL";
    ADIOI_GALLEY_fs *fs = fd->fs_ptr;
    int hint = op == GFS_READ ? fd->hints->cb_read : fd->hints->cb_write;
    /* a local file's blocks go where their writer is: nobody writes for
     * another rank */
    int local_write = op == GFS_WRITE && fs->local;
    fs->coll_active = 1;
    *error_code = MPI_SUCCESS;
    if (fs->cb == ADIOI_GALLEY_CB_TWO_PHASE && !local_write) {
        if (op == GFS_READ)
            ADIOI_GEN_ReadStridedColl(fd, buf, count, datatype, file_ptr_type, offset,
                                      status, error_code);
        else
            ADIOI_GEN_WriteStridedColl(fd, buf, count, datatype, file_ptr_type, offset,
                                       status, error_code);
        ADIOI_GALLEY_Coll_record(fs, *error_code, 0);
        ADIOI_GALLEY_Coll_agree(fd, myname, __LINE__, error_code);
    } else if (hint == ADIOI_HINT_DISABLE || local_write) {
        independent(fd, op, buf, count, datatype, file_ptr_type, offset, status, error_code);
        ADIOI_GALLEY_Coll_agree(fd, myname, __LINE__, error_code);
    } else
        server_coll(fd, op, buf, count, datatype, file_ptr_type, offset, status,
                    fs->cb == ADIOI_GALLEY_CB_SERVER || hint == ADIOI_HINT_ENABLE, error_code);
}

void ADIOI_GALLEY_ReadStridedColl(ADIO_File fd, void *buf, int count,
                                  MPI_Datatype datatype, int file_ptr_type,
                                  ADIO_Offset offset, ADIO_Status * status, int *error_code)
{
    coll(fd, GFS_READ, buf, count, datatype, file_ptr_type, offset, status, error_code);
}

void ADIOI_GALLEY_WriteStridedColl(ADIO_File fd, const void *buf, int count,
                                   MPI_Datatype datatype, int file_ptr_type,
                                   ADIO_Offset offset, ADIO_Status * status, int *error_code)
{
    coll(fd, GFS_WRITE, (void *) buf, count, datatype, file_ptr_type, offset, status,
         error_code);
}
