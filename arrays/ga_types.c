/*
 * ga_types.c -- MPI datatypes that map a process's memory block onto the
 * disk layout of one timestep or checkpoint copy.
 *
 * For process p and each disk chunk q (in chunk order), the elements both
 * own are, per dimension, a list of runs of global indices (ga_dim_runs);
 * the element set is the product of those lists.  Walking it in global
 * row-major order gives increasing offsets inside chunk q (which is stored
 * row-major in slot q) and, element for element, the matching offsets in
 * p's local block.  So:
 *
 *   - one chunk holding the whole array (disk '*' everywhere, or one
 *     chunk): the file type is MPI_Type_create_darray of the memory layout;
 *   - a single run in every dimension (BLOCK and '*' on both sides): the
 *     piece is a box, MPI_Type_create_subarray on both sides;
 *   - otherwise (CYCLIC somewhere): nested types over the runs (hindexed
 *     innermost, struct of hvectors outside).
 *
 * The pieces of all chunks are joined with a struct type at displacements
 * q * slot (memory: 0), and the file type is resized to chunks * slot so
 * that timestep i starts at i * (bytes of p) in the view's etype count.
 * The memory type of every case addresses the block with its ghosts.
 *
 * Threads: the caller's.
 */
#include "ga_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ga_mpi_fail(int mpi_err, const char *what, const char *path)
{
    char msg[MPI_MAX_ERROR_STRING];
    int n = 0;
    msg[0] = 0;
    MPI_Error_string(mpi_err, msg, &n);
    return ga_fail(GA_EMPI, "%s%s%s: %s", what, path ? " " : "",
                   path ? path : "", msg);
}

#define MPI_TRY(call, what)                                                    \
    do {                                                                       \
        int mpi_rc_ = (call);                                                  \
        if (mpi_rc_ != MPI_SUCCESS) {                                          \
            rc = ga_mpi_fail(mpi_rc_, what, NULL);                             \
            goto out;                                                          \
        }                                                                      \
    } while (0)

void ga_types_free(MPI_Datatype *ftype, MPI_Datatype *mtype)
{
    if (ftype && *ftype != MPI_DATATYPE_NULL && *ftype != MPI_BYTE)
        MPI_Type_free(ftype);
    if (mtype && *mtype != MPI_DATATYPE_NULL && *mtype != MPI_BYTE)
        MPI_Type_free(mtype);
    if (ftype)
        *ftype = MPI_DATATYPE_NULL;
    if (mtype)
        *mtype = MPI_DATATYPE_NULL;
}

/*
 * Nested type over runs[d][0..nruns[d]) for dimensions d..rank-1 of a
 * row-major space of extents space[]; the run start used is la (memory
 * side, shifted by the ghost width) or lb (file side).  The innermost
 * dimension is an hindexed type of elements; each outer run is an hvector
 * of the inner type, joined with a struct.  (Not hindexed over a resized
 * inner type: ROMIO 4.0.2's flattening gets that wrong and reads or writes
 * only the first row of each block -- see README, "Known problems".)
 */
static int nested(const ga_shape *s, int d, ga_run *const *runs,
                  const int64_t *nruns, const int64_t *space, const int *shift,
                  bool file_side, MPI_Datatype elem, MPI_Datatype *out)
{
    int rc = 0;
    MPI_Datatype inner = MPI_DATATYPE_NULL, *parts = NULL;
    int64_t n = nruns[d], made = 0;
    int *lens = malloc(sizeof(int) * (size_t)n);
    MPI_Aint *disps = malloc(sizeof(MPI_Aint) * (size_t)n);
    if (!lens || !disps) {
        rc = ga_fail(-ENOMEM, "out of memory (datatypes)");
        goto out;
    }
    MPI_Aint stride = s->esize;
    for (int e = d + 1; e < s->rank; e++)
        stride *= space[e];
    for (int64_t i = 0; i < n; i++) {
        const ga_run *r = &runs[d][i];
        lens[i] = (int)r->len;
        disps[i] = (MPI_Aint)((file_side ? r->lb : r->la + shift[d]) * stride);
    }
    if (d == s->rank - 1) {
        MPI_TRY(MPI_Type_create_hindexed((int)n, lens, disps, elem, out),
                "MPI_Type_create_hindexed");
        goto out;
    }
    rc = nested(s, d + 1, runs, nruns, space, shift, file_side, elem, &inner);
    if (rc)
        goto out;
    parts = malloc(sizeof(*parts) * (size_t)n);
    if (!parts) {
        rc = ga_fail(-ENOMEM, "out of memory (datatypes)");
        goto out;
    }
    for (; made < n; made++)
        MPI_TRY(
            MPI_Type_create_hvector(lens[made], 1, stride, inner, &parts[made]),
            "MPI_Type_create_hvector");
    for (int64_t i = 0; i < n; i++)
        lens[i] = 1;
    MPI_TRY(MPI_Type_create_struct((int)n, lens, disps, parts, out),
            "MPI_Type_create_struct");
out:
    for (int64_t i = 0; i < made; i++)
        MPI_Type_free(&parts[i]);
    if (inner != MPI_DATATYPE_NULL)
        MPI_Type_free(&inner);
    free(parts);
    free(lens);
    free(disps);
    return rc;
}

static int darray_kind(const ga_dist *d, int *distrib, int *darg)
{
    switch (d->kind) {
    case GA_BLOCK:
        *distrib = MPI_DISTRIBUTE_BLOCK;
        *darg = MPI_DISTRIBUTE_DFLT_DARG;
        return 0;
    case GA_CYCLIC:
        if (d->k > INT32_MAX)
            return -1;
        *distrib = MPI_DISTRIBUTE_CYCLIC;
        *darg = (int)d->k;
        return 0;
    default:
        *distrib = MPI_DISTRIBUTE_NONE;
        *darg = MPI_DISTRIBUTE_DFLT_DARG;
        return 0;
    }
}

/* The memory type of the whole owned block (used with darray). */
static int block_mtype(const ga_array *a, MPI_Datatype elem, MPI_Datatype *out)
{
    int sizes[GA_MAX_RANK], sub[GA_MAX_RANK], start[GA_MAX_RANK];
    for (int d = 0; d < a->shape.rank; d++) {
        sizes[d] = (int)a->alloc[d];
        sub[d] = (int)a->count[d];
        start[d] = a->ghost[d];
    }
    int mrc = MPI_Type_create_subarray(a->shape.rank, sizes, sub, start,
                                       MPI_ORDER_C, elem, out);
    return mrc == MPI_SUCCESS
               ? 0
               : ga_mpi_fail(mrc, "MPI_Type_create_subarray", NULL);
}

/* Extents must fit the int arguments of subarray/darray. */
static bool fits_int(const ga_array *a)
{
    for (int d = 0; d < a->shape.rank; d++)
        if (a->shape.dims[d] > INT32_MAX || a->alloc[d] > INT32_MAX)
            return false;
    return true;
}

/* One chunk: the darray of the memory layout is the whole file type, the
 * owned block the memory type.  Returns 1 when made, 0 when a
 * distribution does not fit darray's arguments, or a negative code. */
static int darray_types(const ga_array *a, MPI_Datatype elem,
                        MPI_Datatype *ftype, MPI_Datatype *mtype)
{
    const ga_shape *s = &a->shape;
    int gs[GA_MAX_RANK], dist[GA_MAX_RANK], darg[GA_MAX_RANK], ps[GA_MAX_RANK];
    for (int d = 0; d < s->rank; d++) {
        gs[d] = (int)s->dims[d];
        ps[d] = a->mem.grid[d];
        if (darray_kind(&a->mem.dist[d], &dist[d], &darg[d]) != 0)
            return 0;
    }
    int mrc = MPI_Type_create_darray(a->mem.units, a->rank, s->rank, gs, dist,
                                     darg, ps, MPI_ORDER_C, elem, ftype);
    if (mrc != MPI_SUCCESS)
        return ga_mpi_fail(mrc, "MPI_Type_create_darray", NULL);
    int rc = block_mtype(a, elem, mtype);
    return rc ? rc : 1;
}

/* The per-chunk pieces of a file type and its memory type, joined at the
 * end with a struct type; n counts the pieces made (cleanup frees them). */
typedef struct pieces {
    int n;
    MPI_Datatype *f, *m;
    MPI_Aint *fdisp, *mdisp;
    int *ones;
} pieces;

static int pieces_alloc(pieces *p, int Q)
{
    p->f = calloc((size_t)Q, sizeof(*p->f));
    p->m = calloc((size_t)Q, sizeof(*p->m));
    p->fdisp = calloc((size_t)Q, sizeof(*p->fdisp));
    p->mdisp = calloc((size_t)Q, sizeof(*p->mdisp));
    p->ones = calloc((size_t)Q, sizeof(*p->ones));
    if (!p->f || !p->m || !p->fdisp || !p->mdisp || !p->ones)
        return ga_fail(-ENOMEM, "out of memory (datatypes)");
    for (int q = 0; q < Q; q++)
        p->f[q] = p->m[q] = MPI_DATATYPE_NULL;
    return 0;
}

static void pieces_free(pieces *p)
{
    for (int i = 0; i < p->n; i++) {
        if (p->f[i] != MPI_DATATYPE_NULL)
            MPI_Type_free(&p->f[i]);
        if (p->m[i] != MPI_DATATYPE_NULL)
            MPI_Type_free(&p->m[i]);
    }
    free(p->f);
    free(p->m);
    free(p->fdisp);
    free(p->mdisp);
    free(p->ones);
}

/* A box (one run in every dimension): subarrays on both sides. */
static int box_piece(const ga_array *a, ga_run *const *runs,
                     const int64_t *ccount, MPI_Datatype elem, pieces *p)
{
    const ga_shape *s = &a->shape;
    int rc = 0;
    int fs[GA_MAX_RANK], sub[GA_MAX_RANK], fst[GA_MAX_RANK];
    int ms[GA_MAX_RANK], mst[GA_MAX_RANK];
    for (int d = 0; d < s->rank; d++) {
        fs[d] = (int)ccount[d];
        sub[d] = (int)runs[d][0].len;
        fst[d] = (int)runs[d][0].lb;
        ms[d] = (int)a->alloc[d];
        mst[d] = (int)runs[d][0].la + a->ghost[d];
    }
    MPI_TRY(MPI_Type_create_subarray(s->rank, fs, sub, fst, MPI_ORDER_C, elem,
                                     &p->f[p->n]),
            "MPI_Type_create_subarray");
    p->n++; /* count it now so that cleanup frees it */
    MPI_TRY(MPI_Type_create_subarray(s->rank, ms, sub, mst, MPI_ORDER_C, elem,
                                     &p->m[p->n - 1]),
            "MPI_Type_create_subarray");
out:
    return rc;
}

/* The piece of chunk q (nothing when process and chunk share no element):
 * appended to p at displacement q * slot in the file. */
static int chunk_piece(const ga_array *a, const ga_layout *disk, int q,
                       int64_t slot, MPI_Datatype elem, pieces *p)
{
    const ga_shape *s = &a->shape;
    int rc = 0, mc[GA_MAX_RANK], dc[GA_MAX_RANK];
    ga_run *runs[GA_MAX_RANK] = {0};
    int64_t nruns[GA_MAX_RANK], ccount[GA_MAX_RANK];
    bool empty = false, box = fits_int(a);
    ga_unit_coords(&a->mem, a->rank, mc);
    ga_unit_coords(disk, q, dc);
    ga_unit_count(disk, s, q, ccount);
    for (int d = 0; d < s->rank; d++) {
        rc = ga_dim_runs(&a->mem.dist[d], a->mem.grid[d], mc[d], &disk->dist[d],
                         disk->grid[d], dc[d], s->dims[d], &runs[d], &nruns[d]);
        if (rc)
            goto out;
        empty |= nruns[d] == 0;
        box &= nruns[d] == 1;
    }
    if (empty)
        goto out;
    if (box) {
        rc = box_piece(a, runs, ccount, elem, p);
    } else {
        rc = nested(s, 0, runs, nruns, ccount, a->ghost, true, elem,
                    &p->f[p->n]);
        if (rc)
            goto out;
        p->n++;
        rc = nested(s, 0, runs, nruns, a->alloc, a->ghost, false, elem,
                    &p->m[p->n - 1]);
    }
    if (rc)
        goto out;
    p->fdisp[p->n - 1] = (MPI_Aint)(q * slot);
    p->mdisp[p->n - 1] = 0;
    p->ones[p->n - 1] = 1;
out:
    for (int d = 0; d < GA_MAX_RANK; d++)
        free(runs[d]);
    return rc;
}

/* Several chunks: each chunk's piece, joined; the file type resized to
 * one timestep (Q * slot). */
static int chunk_types(const ga_array *a, const ga_layout *disk, int64_t slot,
                       MPI_Datatype elem, MPI_Datatype *ftype,
                       MPI_Datatype *mtype)
{
    int rc = 0, Q = ga_layout_units(disk);
    MPI_Datatype joined = MPI_DATATYPE_NULL;
    pieces p;
    memset(&p, 0, sizeof(p));
    rc = pieces_alloc(&p, Q);
    for (int q = 0; q < Q && !rc; q++)
        rc = chunk_piece(a, disk, q, slot, elem, &p);
    if (rc)
        goto out;
    MPI_TRY(MPI_Type_create_struct(p.n, p.ones, p.fdisp, p.f, &joined),
            "MPI_Type_create_struct");
    MPI_TRY(MPI_Type_create_resized(joined, 0, (MPI_Aint)(Q * slot), ftype),
            "MPI_Type_create_resized");
    MPI_TRY(MPI_Type_create_struct(p.n, p.ones, p.mdisp, p.m, mtype),
            "MPI_Type_create_struct");
out:
    pieces_free(&p);
    if (joined != MPI_DATATYPE_NULL)
        MPI_Type_free(&joined);
    return rc;
}

/* Commit both types and check them: the same size as the owned bytes, and
 * the memory type inside the local block. */
static int commit_checked(const ga_array *a, MPI_Datatype *ftype,
                          MPI_Datatype *mtype)
{
    int rc = 0;
    MPI_TRY(MPI_Type_commit(ftype), "MPI_Type_commit");
    MPI_TRY(MPI_Type_commit(mtype), "MPI_Type_commit");
    MPI_Count fsz = 0, msz = 0;
    MPI_Type_size_x(*ftype, &fsz);
    MPI_Type_size_x(*mtype, &msz);
    if (fsz != msz || fsz != a->bytes)
        return ga_fail(GA_ELAYOUT,
                       "internal: datatype sizes %lld/%lld for %lld bytes",
                       (long long)fsz, (long long)msz, (long long)a->bytes);
    /* the memory type must stay inside the local block */
    MPI_Count tlb = 0, text = 0, blk = a->shape.esize;
    for (int d = 0; d < a->shape.rank; d++)
        blk *= a->alloc[d];
    MPI_Type_get_true_extent_x(*mtype, &tlb, &text);
    if (tlb < 0 || tlb + text > blk)
        return ga_fail(
            GA_ELAYOUT,
            "internal: memory type spans [%lld, %lld) of a %lld-byte block",
            (long long)tlb, (long long)(tlb + text), (long long)blk);
out:
    return rc;
}

int ga_types_build(const ga_array *a, const ga_layout *disk, int64_t slot,
                   MPI_Datatype *ftype, MPI_Datatype *mtype, int64_t *bytes)
{
    int rc = 0;
    MPI_Datatype elem = MPI_DATATYPE_NULL;
    *ftype = *mtype = MPI_BYTE;
    *bytes = 0;
    if (a->bytes == 0)
        return 0;
    MPI_TRY(MPI_Type_contiguous(a->shape.esize, MPI_BYTE, &elem),
            "MPI_Type_contiguous");
    if (ga_layout_units(disk) == 1 && fits_int(a))
        rc = darray_types(a, elem, ftype, mtype);
    if (rc == 0)
        rc = chunk_types(a, disk, slot, elem, ftype, mtype);
    if (rc > 0)
        rc = 0;
    if (!rc)
        rc = commit_checked(a, ftype, mtype);
    if (!rc)
        *bytes = a->bytes;
out:
    if (rc) {
        ga_types_free(ftype, mtype);
        *ftype = *mtype = MPI_BYTE;
    }
    if (elem != MPI_DATATYPE_NULL)
        MPI_Type_free(&elem);
    return rc;
}
