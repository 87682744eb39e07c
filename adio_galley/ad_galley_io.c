/*
 * Galley for MPI-IO: the one place an MPI access becomes list I/O.
 *
 * The memory side (count x datatype, flattened) and the file side (the
 * view: disp + tiles of the flattened filetype, or one contiguous range
 * for the Contig entry points) are walked together into two independent
 * lists, as ROMIO's DAOS driver hands daos_array_write its ranges and its
 * scatter-gather list: file ranges (neighbours merged) and memory
 * segments (addresses, neighbours merged).  Both go to
 * gfs_striped_rangeio as they are: libgalley cuts them once into
 * per-server fragments, sorts and merges them, and folds regular runs into
 * strided wire segments, and the lists are not copied on the way.  (One
 * exception: independent reads of small pieces through a view are sieved
 * by ROMIO over our contiguous reads, ad_galley_read.c.)
 *
 * Threads: the calling thread.
 */
#include "ad_galley.h"
#include "adio_extern.h"

#include <errno.h>
#include <string.h>

/* a contiguous file range never ends */
#define ADIO_OFFSET_MAX_LEFT ((ADIO_Offset) 1 << 62)

/* Grow a list of el-byte items holding n to room for one more; inl is
 * its room inside the Pieces (never freed). */
static int grow(void **v, int64_t n, int64_t * cap, size_t el, void *inl)
{
    if (n < *cap)
        return 0;
    int64_t c = *cap > 32 ? *cap * 2 : 64;
    void *nv = *v == inl ? ADIOI_Malloc(el * c) : ADIOI_Realloc(*v, el * c);
    if (!nv)
        return -ENOMEM;
    if (*v == inl && n)
        memcpy(nv, inl, el * n);
    *v = nv;
    *cap = c;
    return 0;
}

/* Append file range [off, off + len), merged with its neighbour. */
static int range_add(ADIOI_GALLEY_Pieces * pc, ADIO_Offset off, ADIO_Offset len)
{
    gfs_range *t = pc->nr ? &pc->r[pc->nr - 1] : NULL;
    if (t && t->offset + t->size == off) {
        t->size += len;
        return 0;
    }
    if (grow((void **) &pc->r, pc->nr, &pc->rcap, sizeof(*pc->r), &pc->r1))
        return -ENOMEM;
    pc->r[pc->nr++] = (gfs_range) {
    .offset = off,.size = len};
    return 0;
}

/* Append memory [mem, mem + len), merged with its neighbour. */
static int seg_add(ADIOI_GALLEY_Pieces * pc, char *mem, ADIO_Offset len)
{
    gfs_memseg *t = pc->nm ? &pc->m[pc->nm - 1] : NULL;
    if (t && (char *) t->addr + t->size == mem) {
        t->size += len;
        return 0;
    }
    if (grow((void **) &pc->m, pc->nm, &pc->mcap, sizeof(*pc->m), &pc->m1))
        return -ENOMEM;
    pc->m[pc->nm++] = (gfs_memseg) {
    .addr = mem,.size = len};
    return 0;
}

void ADIOI_GALLEY_Pieces_free(ADIOI_GALLEY_Pieces * pc)
{
    if (pc->r && pc->r != &pc->r1)
        ADIOI_Free(pc->r);
    if (pc->m && pc->m != &pc->m1)
        ADIOI_Free(pc->m);
    *pc = (ADIOI_GALLEY_Pieces) {
    0};
}

/* Cursor over the file side of a view. */
typedef struct fcur {
    ADIOI_Flatlist_node *flat;  /* NULL: one contiguous range */
    ADIO_Offset disp, extent;
    ADIO_Offset tile;
    MPI_Count blk;
    ADIO_Offset boff;           /* bytes of the current block already used */
    ADIO_Offset lin;            /* contiguous case: next offset */
} fcur;

/* Skip zero-length blocks, wrapping into the next tile. */
static void fcur_settle(fcur * c)
{
    while (c->flat->blocklens[c->blk] == 0 || c->boff >= c->flat->blocklens[c->blk]) {
        c->boff = 0;
        if (++c->blk == c->flat->count) {
            c->blk = 0;
            c->tile++;
        }
    }
}

/* Position at view-data byte p (explicit offsets). */
static void fcur_at_data(fcur * c, ADIO_Offset p, MPI_Count ft_size)
{
    c->tile = p / ft_size;
    ADIO_Offset r = p % ft_size;
    for (c->blk = 0; c->blk < c->flat->count; c->blk++) {
        if (r < c->flat->blocklens[c->blk])
            break;
        r -= c->flat->blocklens[c->blk];
    }
    c->boff = r;
    if (c->blk == c->flat->count) {     /* cannot happen for r < ft_size */
        c->blk = 0;
        c->tile++;
        c->boff = 0;
    }
    fcur_settle(c);
}

/* Position at absolute file offset abs (the individual pointer), as ROMIO's
 * generic strided code does: the first data byte at or after abs. */
static void fcur_at_abs(fcur * c, ADIO_Offset abs)
{
    ADIO_Offset o = abs - c->disp - c->flat->indices[0];
    c->tile = o >= 0 ? o / c->extent : 0;
    o = abs - c->disp - c->tile * c->extent;
    c->boff = 0;
    for (c->blk = 0; c->blk < c->flat->count; c->blk++) {
        ADIO_Offset s = c->flat->indices[c->blk], l = c->flat->blocklens[c->blk];
        if (l == 0)
            continue;
        if (o < s + l) {
            c->boff = o > s ? o - s : 0;
            break;
        }
    }
    if (c->blk == c->flat->count) {
        c->blk = 0;
        c->tile++;
    }
    fcur_settle(c);
}

/* Next file block: its offset and the bytes left in it. */
static void fcur_peek(fcur * c, ADIO_Offset * off, ADIO_Offset * left)
{
    if (!c->flat) {
        *off = c->lin;
        *left = ADIO_OFFSET_MAX_LEFT;
        return;
    }
    *off = c->disp + c->tile * c->extent + c->flat->indices[c->blk] + c->boff;
    *left = c->flat->blocklens[c->blk] - c->boff;
}

static void fcur_take(fcur * c, ADIO_Offset n)
{
    if (!c->flat) {
        c->lin += n;
        return;
    }
    c->boff += n;
    fcur_settle(c);
}

/* Position the file cursor where the access starts: the view as one
 * contiguous range, or the flattened filetype's tiles.  Returns 0 if the
 * view holds no data at all (nothing to list), else 1. */
static int fcur_start(ADIO_File fd, int file_ptr_type, ADIO_Offset offset, fcur * fc,
                      MPI_Count * ft_size)
{
    int ft_contig;
    ADIOI_Datatype_iscontig(fd->filetype, &ft_contig);
    MPI_Type_size_x(fd->filetype, ft_size);
    if (ft_contig) {
        fc->flat = NULL;
        if (file_ptr_type == ADIO_INDIVIDUAL)
            fc->lin = fd->fp_ind;
        else
            fc->lin = fd->disp + offset * fd->etype_size;
        return 1;
    }
    if (*ft_size == 0)
        return 0;
    MPI_Aint lb, extent;
    MPI_Type_get_extent(fd->filetype, &lb, &extent);
    fc->flat = ADIOI_Flatten_and_find(fd->filetype);
    fc->disp = fd->disp;
    fc->extent = extent;
    if (file_ptr_type == ADIO_INDIVIDUAL)
        fcur_at_abs(fc, fd->fp_ind);
    else
        fcur_at_data(fc, offset * fd->etype_size, *ft_size);
    return 1;
}

/* Memory contiguous, the view not: one memory segment, and the file
 * blocks walked straight (the common strided case, where a call can name
 * millions of small blocks), the ranges' room reserved once.  walk_both
 * does the same with fcur_peek/fcur_take; folded into it, this walk is
 * 5-10 % slower on 200-byte strided writes (mpiio_bench), so it stays a
 * loop of its own.  *end: just past the last byte.  0 or -ENOMEM. */
static int walk_view(ADIOI_GALLEY_Pieces * pc, fcur * fc, const void *buf, int64_t want,
                     MPI_Count ft_size, ADIO_Offset * end)
{
    ADIOI_Flatlist_node *fl = fc->flat;
    int64_t est = (want / ft_size + 2) * (int64_t) fl->count;
    if (est > 64 && est < ((int64_t) 1 << 40)) {
        gfs_range *r = ADIOI_Malloc(sizeof(*pc->r) * est);
        if (r) {
            pc->r = r;
            pc->rcap = est;
        }
    }
    int64_t done = 0;
    int rc = 0;
    while (done < want && !rc) {
        ADIO_Offset foff = fc->disp + fc->tile * fc->extent + fl->indices[fc->blk] + fc->boff;
        ADIO_Offset take = fl->blocklens[fc->blk] - fc->boff;
        if (take > want - done)
            take = want - done;
        rc = range_add(pc, foff, take);
        done += take;
        *end = foff + take;
        fc->boff = 0;
        do {    /* the next non-empty block (ft_size > 0: one is) */
            if (++fc->blk == fl->count) {
                fc->blk = 0;
                fc->tile++;
            }
        } while (fl->blocklens[fc->blk] == 0);
    }
    if (!rc)
        rc = seg_add(pc, (char *) buf, want);
    return rc;
}

/* The general walk: memory blocks (fb, the flattened datatype of extent
 * bext; NULL: contiguous) against file blocks (the cursor), a range and a
 * segment a step.  *end: just past the last byte.  0 or -ENOMEM. */
static int walk_both(ADIOI_GALLEY_Pieces * pc, fcur * fc, const void *buf, int64_t want,
                     const ADIOI_Flatlist_node * fb, MPI_Aint bext, ADIO_Offset * end)
{
    int64_t j = 0;              /* instance of datatype */
    MPI_Count k = 0;            /* block within it */
    ADIO_Offset moff = 0;       /* bytes of that block used */
    int64_t done = 0;
    int rc = 0;

    while (done < want && !rc) {
        ADIO_Offset mpos, mleft;
        if (!fb) {
            mpos = done;
            mleft = want - done;
        } else {
            while (fb->blocklens[k] == 0 || moff >= fb->blocklens[k]) {
                moff = 0;
                if (++k == fb->count) {
                    k = 0;
                    j++;
                }
            }
            mpos = j * bext + fb->indices[k] + moff;
            mleft = fb->blocklens[k] - moff;
        }
        ADIO_Offset foff, fleft;
        fcur_peek(fc, &foff, &fleft);
        ADIO_Offset take = mleft < fleft ? mleft : fleft;
        if (take > want - done)
            take = want - done;
        rc = range_add(pc, foff, take);
        if (!rc)
            rc = seg_add(pc, (char *) buf + mpos, take);
        fcur_take(fc, take);
        moff += take;
        done += take;
        *end = foff + take;
    }
    return rc;
}

int ADIOI_GALLEY_Build_list(ADIO_File fd, const void *buf, int count,
                            MPI_Datatype datatype, int file_ptr_type,
                            ADIO_Offset offset, int contig_call,
                            ADIOI_GALLEY_Pieces * pc, int64_t * total, ADIO_Offset * end)
{
    MPI_Count type_size;
    MPI_Type_size_x(datatype, &type_size);
    int64_t want = (int64_t) type_size * count;
    fcur fc = { 0 };

    *pc = (ADIOI_GALLEY_Pieces) {
    0};
    *total = 0;
    *end = file_ptr_type == ADIO_INDIVIDUAL ? fd->fp_ind : offset;
    if (want == 0)
        return 0;
    pc->r = &pc->r1;
    pc->m = &pc->m1;
    pc->rcap = pc->mcap = 1;

    if (contig_call) {
        /* ROMIO's ReadContig / WriteContig (and ours): buffer and view
         * both contiguous (ADIOI_Datatype_iscontig: no true lower bound),
         * so one range and one segment, without the walk's type queries
         * (a fifth of the driver's time around a 4 KiB call) */
        ADIO_Offset lin = file_ptr_type == ADIO_INDIVIDUAL ? fd->fp_ind : offset;
        pc->r1 = (gfs_range) {
        lin, want};
        pc->m1 = (gfs_memseg) {
        (void *) buf, want};
        pc->nr = pc->nm = 1;
        *total = want;
        *end = lin + want;
        return 0;
    }

    MPI_Count ft_size;
    if (!fcur_start(fd, file_ptr_type, offset, &fc, &ft_size))
        return 0;
    int buf_contig;
    ADIOI_Datatype_iscontig(datatype, &buf_contig);
    ADIOI_Flatlist_node *fb = NULL;
    MPI_Aint blb = 0, bext = 0;
    if (!buf_contig) {
        fb = ADIOI_Flatten_and_find(datatype);
        MPI_Type_get_extent(datatype, &blb, &bext);
    }
    ADIO_Offset last_end = *end;
    int rc = !fb && fc.flat ? walk_view(pc, &fc, buf, want, ft_size, &last_end)
        : walk_both(pc, &fc, buf, want, fb, bext, &last_end);
    if (rc) {
        ADIOI_GALLEY_Pieces_free(pc);
        return rc;
    }
    *total = want;
    *end = last_end;
    return 0;
}

int ADIOI_GALLEY_Access_list(ADIO_File fd, int op, const ADIOI_GALLEY_Pieces * pc,
                             int64_t total, ADIO_Offset end,
                             MPI_Datatype datatype, int file_ptr_type,
                             ADIO_Status * status, int *error_code)
{
    static char myname[] = "ADIOI_GALLEY_ACCESS";
    int64_t bytes = ADIOI_GALLEY_Listio(fd, op, pc->nr, pc->r, pc->nm, pc->m);
    if (bytes < 0) {
        *error_code = ADIOI_GALLEY_Err(myname, __LINE__, (int) bytes);
        return (int) bytes;
    }
    if (file_ptr_type == ADIO_INDIVIDUAL) {
        /* a short contiguous read (end of file) moves the pointer only by
         * what was read, as a Unix read does */
        if (pc->nr == 1 && pc->nm == 1 && bytes < total)
            end -= total - bytes;
        fd->fp_ind = end;
        fd->fp_sys_posn = end;
    }
#ifdef HAVE_STATUS_SET_BYTES
    MPIR_Status_set_bytes(status, datatype, bytes);
#endif
    *error_code = MPI_SUCCESS;
    return 0;
}

void ADIOI_GALLEY_Access(ADIO_File fd, int op, void *buf, int count,
                         MPI_Datatype datatype, int file_ptr_type,
                         ADIO_Offset offset, int contig_call,
                         ADIO_Status * status, int *error_code)
{
    static char myname[] = "ADIOI_GALLEY_ACCESS";
    ADIOI_GALLEY_fs *fs = fd->fs_ptr;
    ADIOI_GALLEY_Pieces pc;
    int64_t total;
    ADIO_Offset end;
    if (fs->coll_active && fs->coll_err != MPI_SUCCESS) {
        /* this rank's part of the collective call has failed already */
        *error_code = MPI_SUCCESS;
        return;
    }
    int rc = ADIOI_GALLEY_Build_list(fd, buf, count, datatype, file_ptr_type, offset,
                                     contig_call, &pc, &total, &end);
    if (rc)
        *error_code = ADIOI_GALLEY_Err(myname, __LINE__, rc);
    else
        rc = ADIOI_GALLEY_Access_list(fd, op, &pc, total, end, datatype,
                                      file_ptr_type, status, error_code);
    ADIOI_GALLEY_Pieces_free(&pc);
    if (rc && fs->coll_active) {
        ADIOI_GALLEY_Coll_record(fs, *error_code, rc);
        *error_code = MPI_SUCCESS;
    }
}
