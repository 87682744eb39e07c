/*
 * Galley for MPI-IO: collective I/O.
 *
 * galley_cb=two_phase hands the call to ROMIO's generic two-phase code
 * (which runs over this driver's Contig/Strided entry points).
 *
 * galley_cb=auto (default) decides per call, as ROMIO's automatic mode
 * does: every rank tells the others (one allgather) its bytes, its file
 * range and how many wire segments its pieces fold into (equal pieces at a
 * constant stride are one segment, as in libgalley's io.c).  Aggregation
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
 * Threads: the calling thread; collective over fd->comm.
 */
#include "ad_galley.h"
#include "adio_extern.h"

#include <errno.h>
#include <limits.h>

#define AUTO_BYTES_PER_SEG 16384

/* How many wire segments a list of pieces folds into (io.c's rule:
 * adjacent pieces merge, equal pieces at a constant stride fold). */
static int64_t folded_segments(const gfs_list_entry * p, int64_t n)
{
    int64_t segs = 0, count = 0;
    ADIO_Offset off = 0, size = 0, stride = 0;
    for (int64_t i = 0; i < n; i++) {
        if (p[i].size == 0)
            continue;
        if (count == 1 && off + size == p[i].file_offset) {
            size += p[i].size;
            continue;
        }
        if (count >= 1 && p[i].size == size) {
            if (count == 1 && p[i].file_offset >= off + size) {
                stride = p[i].file_offset - off;
                count = 2;
                continue;
            }
            if (count > 1 && p[i].file_offset == off + count * stride) {
                count++;
                continue;
            }
        }
        segs++;
        off = p[i].file_offset;
        size = p[i].size;
        count = 1;
    }
    return segs;
}

static void independent(ADIO_File fd, int op, void *buf, int count, MPI_Datatype datatype,
                        int file_ptr_type, ADIO_Offset offset, ADIO_Status * status,
                        int *error_code)
{
    ADIOI_GALLEY_Access(fd, op, buf, count, datatype, file_ptr_type, offset, 0, status,
                        error_code);
}

/* Whether independent I/O serves this call better, decided together from
 * every rank's bytes, folded segments and range (or an error on any rank).
 * If so the call is served (or fails) here, p is freed and 1 returned. */
static int decided_independent(ADIO_File fd, int op, void *buf, gfs_list_entry * p,
                               int64_t n, int64_t total, ADIO_Offset end, int rc,
                               MPI_Datatype datatype, int file_ptr_type,
                               ADIO_Status * status, int *error_code)
{
    static char myname[] = "ADIOI_GALLEY_COLL";
    int nprocs;
    MPI_Comm_size(fd->comm, &nprocs);
    /* decide together: bytes, segments, [start, end) of every rank */
    int64_t me[5] = { rc ? 1 : 0, 0, 0, INT64_MAX, 0 };
    for (int64_t i = 0; i < n && !rc; i++) {
        if (p[i].size == 0)
            continue;
        me[2] += p[i].size;
        if (p[i].file_offset < me[3])
            me[3] = p[i].file_offset;
        if (p[i].file_offset + p[i].size > me[4])
            me[4] = p[i].file_offset + p[i].size;
    }
    if (!rc)
        me[1] = folded_segments(p, n);
    int64_t *all = ADIOI_Malloc(sizeof(int64_t) * 5 * nprocs);
    MPI_Allgather(me, 5, MPI_INT64_T, all, 5, MPI_INT64_T, fd->comm);
    int64_t segs = 0, bytes = 0;
    int anyerr = 0, interleaved = 0;
    for (int r = 0; r < nprocs; r++) {
        anyerr |= all[5 * r] != 0;
        segs += all[5 * r + 1];
        bytes += all[5 * r + 2];
        for (int q = 0; q < r && !interleaved; q++)
            interleaved = all[5 * r + 2] > 0 && all[5 * q + 2] > 0 &&
                all[5 * r + 3] < all[5 * q + 4] && all[5 * q + 3] < all[5 * r + 4];
    }
    ADIOI_Free(all);
    if (anyerr || !interleaved || segs == 0 || bytes >= AUTO_BYTES_PER_SEG * segs) {
        if (rc)
            *error_code = ADIOI_GALLEY_Err(myname, __LINE__, rc);
        else
            ADIOI_GALLEY_Access_list(fd, op, buf, p, n, total, end, datatype,
                                     file_ptr_type, status, error_code);
        if (p)
            ADIOI_Free(p);
        return 1;
    }
    return 0;
}

/* Send every fragment (descriptors, and data for writes) to its
 * aggregator, which moves all it received with one list request, and
 * bring read data back.  Returns the lowest error of any rank, or 0. */
static int64_t exchange(ADIO_File fd, int op, void *buf, const gfs_list_entry * fr,
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
    int64_t *sdesc = ADIOI_Malloc(16 * (nfrag ? nfrag : 1));
    int64_t *rdesc = ADIOI_Malloc(16 * (rfr ? rfr : 1));
    char *sdata = ADIOI_Malloc(totby ? totby : 1);
    char *rdata = ADIOI_Malloc(rby ? rby : 1);
    int64_t *fill = ADIOI_Calloc(2 * nprocs, sizeof(int64_t));
    /* order fragments by destination, keeping their own order */
    int64_t *slot = ADIOI_Malloc(sizeof(int64_t) * (nfrag ? nfrag : 1));
    for (int64_t i = 0; i < nfrag; i++) {
        int r = dest[i];
        int64_t at = sdd[r] / 16 + fill[2 * r]++;
        sdesc[2 * at] = fr[i].file_offset;
        sdesc[2 * at + 1] = fr[i].size;
        slot[i] = sbd[r] + fill[2 * r + 1];
        fill[2 * r + 1] += fr[i].size;
        if (op == GFS_WRITE)
            memcpy(sdata + slot[i], (char *) buf + fr[i].mem_offset, fr[i].size);
    }
    MPI_Alltoallv(sdesc, sdc, sdd, MPI_BYTE, rdesc, rdc, rdd, MPI_BYTE, fd->comm);
    if (op == GFS_WRITE)
        MPI_Alltoallv(sdata, sbc, sbd, MPI_BYTE, rdata, rbc, rbd, MPI_BYTE, fd->comm);

    /* aggregators: one list request for everything received */
    int64_t got = 0;
    if (rfr > 0) {
        gfs_list_entry *ap = ADIOI_Malloc(sizeof(*ap) * rfr);
        int64_t at = 0;
        for (int64_t i = 0; i < rfr; i++) {
            ap[i].file_offset = rdesc[2 * i];
            ap[i].size = rdesc[2 * i + 1];
            ap[i].mem_offset = at;
            at += ap[i].size;
        }
        got = ADIOI_GALLEY_Listio(fd, op, rdata, ap, rfr);
        ADIOI_Free(ap);
    }
    int64_t err = got < 0 ? got : 0, anyerr;
    if (op == GFS_READ) {
        MPI_Alltoallv(rdata, rbc, rbd, MPI_BYTE, sdata, sbc, sbd, MPI_BYTE, fd->comm);
        for (int64_t i = 0; i < nfrag; i++)
            memcpy((char *) buf + fr[i].mem_offset, sdata + slot[i], fr[i].size);
    }
    MPI_Allreduce(&err, &anyerr, 1, MPI_INT64_T, MPI_MIN, fd->comm);

    ADIOI_Free(slot);
    ADIOI_Free(fill);
    ADIOI_Free(rdata);
    ADIOI_Free(sdata);
    ADIOI_Free(rdesc);
    ADIOI_Free(sdesc);
    ADIOI_Free(sd);
    ADIOI_Free(rcnt);
    return anyerr;
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
    int nsub = fs->layout.nsubfiles;
    int64_t unit = fs->layout.unit;
    /* aggregators: cb_nodes if the user set it, else one per subfile */
    int naggr = fs->cb_nodes > 0 ? fs->cb_nodes : nsub;
    if (naggr > nsub)
        naggr = nsub;
    if (naggr > nprocs)
        naggr = nprocs;
    if (naggr < 1)
        naggr = 1;

    gfs_list_entry *p = NULL;
    int64_t n = 0, total = 0;
    ADIO_Offset end;
    int rc = ADIOI_GALLEY_Build_list(fd, buf, count, datatype, file_ptr_type, offset, 0,
                                     &p, &n, &total, &end);

    if (!force && decided_independent(fd, op, buf, p, n, total, end, rc, datatype,
                                      file_ptr_type, status, error_code))
        return;

    /* cut into stripe fragments, counted per destination rank */
    int64_t nfrag = 0;
    for (int64_t i = 0; i < n; i++)
        nfrag += (p[i].file_offset + p[i].size - 1) / unit - p[i].file_offset / unit + 1;
    gfs_list_entry *fr = ADIOI_Malloc(sizeof(*fr) * (nfrag ? nfrag : 1));
    int *dest = ADIOI_Malloc(sizeof(int) * (nfrag ? nfrag : 1));
    int64_t *scnt = ADIOI_Calloc(2 * nprocs, sizeof(int64_t));  /* frags, bytes */
    if (!fr || !dest || !scnt)
        rc = -ENOMEM;
    int64_t k = 0;
    for (int64_t i = 0; i < n && !rc; i++) {
        int64_t off = p[i].file_offset, left = p[i].size;
        ADIO_Offset mem = p[i].mem_offset;
        while (left > 0) {
            int64_t len;
            int sub = gfs_layout_locate(nsub, unit, off, NULL, &len);
            if (len > left)
                len = left;
            int agg = sub % naggr;
            int r = (int) ((int64_t) agg * nprocs / naggr);
            fr[k] = (gfs_list_entry) {
            .file_offset = off,.size = len,.mem_offset = mem};
            dest[k++] = r;
            scnt[2 * r]++;
            scnt[2 * r + 1] += len;
            off += len;
            mem += len;
            left -= len;
        }
    }
    if (p)
        ADIOI_Free(p);

    /* everyone agrees to go on (errors, int-sized counts) or falls back */
    int64_t mine[2] = { rc ? 1 : 0, 0 }, all[2];
    for (int r = 0; r < nprocs; r++)
        if (16 * scnt[2 * r] > mine[1] || scnt[2 * r + 1] > mine[1])
            mine[1] = 16 * scnt[2 * r] > scnt[2 * r + 1] ? 16 * scnt[2 * r]
                : scnt[2 * r + 1];
    int64_t totfr = 0, totby = 0;
    for (int r = 0; r < nprocs; r++) {
        totfr += 16 * scnt[2 * r];
        totby += scnt[2 * r + 1];
    }
    if (totfr > mine[1])
        mine[1] = totfr;
    if (totby > mine[1])
        mine[1] = totby;
    MPI_Allreduce(mine, all, 2, MPI_INT64_T, MPI_MAX, fd->comm);
    if (all[0] || all[1] > INT_MAX / 2) {
        ADIOI_Free(fr);
        ADIOI_Free(dest);
        ADIOI_Free(scnt);
        if (all[0] && rc) {
            *error_code = ADIOI_GALLEY_Err(myname, __LINE__, rc);
            return;
        }
        independent(fd, op, buf, count, datatype, file_ptr_type, offset, status, error_code);
        return;
    }

    int64_t anyerr = exchange(fd, op, buf, fr, dest, scnt, nfrag, totby, nprocs);
    ADIOI_Free(scnt);
    ADIOI_Free(dest);
    ADIOI_Free(fr);

    if (anyerr < 0) {
        *error_code = ADIOI_GALLEY_Err(myname, __LINE__, (int) anyerr);
        return;
    }
    if (file_ptr_type == ADIO_INDIVIDUAL) {
        fd->fp_ind = end;
        fd->fp_sys_posn = end;
    }
#ifdef HAVE_STATUS_SET_BYTES
    MPIR_Status_set_bytes(status, datatype, total);
#endif
    *error_code = MPI_SUCCESS;
}

void ADIOI_GALLEY_ReadStridedColl(ADIO_File fd, void *buf, int count,
                                  MPI_Datatype datatype, int file_ptr_type,
                                  ADIO_Offset offset, ADIO_Status * status, int *error_code)
{
    ADIOI_GALLEY_fs *fs = fd->fs_ptr;
    if (fs->cb == ADIOI_GALLEY_CB_TWO_PHASE)
        ADIOI_GEN_ReadStridedColl(fd, buf, count, datatype, file_ptr_type, offset, status,
                                  error_code);
    else if (fd->hints->cb_read == ADIOI_HINT_DISABLE)
        independent(fd, GFS_READ, buf, count, datatype, file_ptr_type, offset, status,
                    error_code);
    else
        server_coll(fd, GFS_READ, buf, count, datatype, file_ptr_type, offset, status,
                    fs->cb == ADIOI_GALLEY_CB_SERVER || fd->hints->cb_read == ADIOI_HINT_ENABLE,
                    error_code);
}

void ADIOI_GALLEY_WriteStridedColl(ADIO_File fd, const void *buf, int count,
                                   MPI_Datatype datatype, int file_ptr_type,
                                   ADIO_Offset offset, ADIO_Status * status, int *error_code)
{
    ADIOI_GALLEY_fs *fs = fd->fs_ptr;
    if (fs->cb == ADIOI_GALLEY_CB_TWO_PHASE && !fs->local)
        ADIOI_GEN_WriteStridedColl(fd, buf, count, datatype, file_ptr_type, offset, status,
                                   error_code);
    else if (fd->hints->cb_write == ADIOI_HINT_DISABLE || fs->local)
        /* a local file's blocks go where their writer is: nobody
         * writes for another rank */
        independent(fd, GFS_WRITE, (void *) buf, count, datatype, file_ptr_type, offset,
                    status, error_code);
    else
        server_coll(fd, GFS_WRITE, (void *) buf, count, datatype, file_ptr_type, offset,
                    status,
                    fs->cb == ADIOI_GALLEY_CB_SERVER || fd->hints->cb_write == ADIOI_HINT_ENABLE,
                    error_code);
}
