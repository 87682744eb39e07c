/*
 * ga_layout.c -- HPF distributions and the disk chunk geometry (pure C).
 *
 * One dimension of extent n distributed over P coordinates:
 *   '*'        P == 1, coordinate 0 owns everything, local = global
 *   BLOCK      b = ceil(n / P); c owns [c*b, min(n, (c+1)*b)) (HPF, and
 *              what MPI_Type_create_darray's default BLOCK does)
 *   CYCLIC(k)  block j = [j*k, (j+1)*k) belongs to j % P, at local blocks
 *              j / P
 * In every case the local index grows with the global index, which is what
 * lets one ordered walk over global indices produce monotone file offsets
 * and matching memory offsets (ga_types.c).
 *
 * Threads: pure functions.
 */
#include "ga_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------- checks --- */

int ga_check_name(const char *name)
{
    if (!name || !*name)
        return ga_fail(-EINVAL, "empty array name");
    size_t n = strlen(name);
    if (n > GA_NAME_MAX)
        return ga_fail(-EINVAL, "array name longer than %d bytes", GA_NAME_MAX);
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && !strchr("_.-", name[i]))
            return ga_fail(-EINVAL, "array name '%s': only [A-Za-z0-9_.-]",
                           name);
    return 0;
}

int ga_check_shape(const ga_shape *s)
{
    if (s->rank < 1 || s->rank > GA_MAX_RANK)
        return ga_fail(-EINVAL, "rank %d not in 1..%d", s->rank, GA_MAX_RANK);
    if (s->esize < 1 || s->esize > GA_MAX_ESIZE)
        return ga_fail(-EINVAL, "element size %d not in 1..%d", s->esize,
                       GA_MAX_ESIZE);
    /* total bytes must fit comfortably in int64 */
    int64_t total = s->esize;
    for (int d = 0; d < s->rank; d++) {
        if (s->dims[d] < 1 || s->dims[d] > GA_MAX_EXTENT)
            return ga_fail(-EINVAL, "extent %lld of dimension %d out of range",
                           (long long)s->dims[d], d);
        if (total > GA_MAX_EXTENT / s->dims[d])
            return ga_fail(-EINVAL, "array larger than 2^48 bytes");
        total *= s->dims[d];
    }
    return 0;
}

/* ------------------------------------------------------ parse/format --- */

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

int ga_layout_parse(const char *text, ga_layout *out)
{
    ga_layout l;
    memset(&l, 0, sizeof(l));
    if (!text || !out)
        return ga_fail(-EINVAL, "NULL layout text");
    const char *p = skip_ws(text);
    bool paren = false;
    if (*p == '(') {
        paren = true;
        p = skip_ws(p + 1);
    }
    for (;;) {
        if (l.rank == GA_MAX_RANK)
            return ga_fail(-EINVAL, "layout '%s': more than %d dimensions",
                           text, GA_MAX_RANK);
        ga_dist *d = &l.dist[l.rank];
        if (*p == '*') {
            d->kind = GA_STAR;
            p++;
        } else if (!strncasecmp(p, "BLOCK", 5)) {
            d->kind = GA_BLOCK;
            p += 5;
        } else if (!strncasecmp(p, "CYCLIC", 6)) {
            d->kind = GA_CYCLIC;
            d->k = 1;
            p = skip_ws(p + 6);
            if (*p == '(') {
                char *end;
                long long k = strtoll(p + 1, &end, 10);
                end = (char *)skip_ws(end);
                if (end == p + 1 || *end != ')' || k < 1 || k > GA_MAX_EXTENT)
                    return ga_fail(-EINVAL, "layout '%s': bad CYCLIC(k)", text);
                d->k = k;
                p = end + 1;
            }
        } else {
            return ga_fail(
                -EINVAL, "layout '%s': expected *, BLOCK or CYCLIC(k) at '%s'",
                text, p);
        }
        l.rank++;
        p = skip_ws(p);
        if (*p != ',')
            break;
        p = skip_ws(p + 1);
    }
    if (paren) {
        if (*p != ')')
            return ga_fail(-EINVAL, "layout '%s': missing ')'", text);
        p = skip_ws(p + 1);
    }
    if (*p == '@') {
        p++;
        int n = 0;
        for (;;) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p || v < 0 || v > GA_MAX_UNITS || n == GA_MAX_RANK)
                return ga_fail(-EINVAL, "layout '%s': bad grid", text);
            l.grid[n++] = (int)v;
            p = end;
            if (*p != 'x' && *p != 'X')
                break;
            p++;
        }
        if (n == 1 && l.rank > 1) {
            /* "@N": a total to share among the free dimensions */
            if (l.grid[0] < 1)
                return ga_fail(-EINVAL, "layout '%s': grid total must be >= 1",
                               text);
            l.units = l.grid[0];
            l.grid[0] = 0;
        } else if (n != l.rank) {
            return ga_fail(-EINVAL,
                           "layout '%s': grid has %d extents for %d dimensions",
                           text, n, l.rank);
        }
    }
    p = skip_ws(p);
    if (*p)
        return ga_fail(-EINVAL, "layout '%s': unexpected '%s'", text, p);
    *out = l;
    return 0;
}

int ga_layout_format(const ga_layout *l, char *buf, size_t len)
{
    size_t n = 0;
    char tmp[64];
    char out[512];
    for (int d = 0; d < l->rank && d < GA_MAX_RANK; d++) {
        const ga_dist *x = &l->dist[d];
        if (x->kind == GA_STAR)
            snprintf(tmp, sizeof(tmp), "*");
        else if (x->kind == GA_BLOCK)
            snprintf(tmp, sizeof(tmp), "BLOCK");
        else
            snprintf(tmp, sizeof(tmp), "CYCLIC(%lld)", (long long)x->k);
        n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s", d ? "," : "",
                              tmp);
    }
    bool any = false;
    for (int d = 0; d < l->rank; d++)
        any |= l->grid[d] != 0;
    if (any) {
        for (int d = 0; d < l->rank; d++)
            n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%d",
                                  d ? "x" : "@", l->grid[d]);
    } else if (l->units > 0) {
        n += (size_t)snprintf(out + n, sizeof(out) - n, "@%d", l->units);
    }
    if (n + 1 > len)
        return -ERANGE;
    memcpy(buf, out, n + 1);
    return (int)n;
}

/* ---------------------------------------------------------- grids --- */

int ga_layout_units(const ga_layout *l)
{
    int64_t u = 1;
    for (int d = 0; d < l->rank; d++)
        u *= l->grid[d] > 0 ? l->grid[d] : 1;
    return (int)u;
}

void ga_unit_coords(const ga_layout *l, int u, int *coords)
{
    for (int d = l->rank - 1; d >= 0; d--) {
        int g = l->grid[d] > 0 ? l->grid[d] : 1;
        coords[d] = u % g;
        u /= g;
    }
}

int ga_layout_resolve(ga_layout *l, const ga_shape *s, int default_units,
                      bool memory)
{
    char txt[256];
    if (l->rank != s->rank) {
        ga_layout_format(l, txt, sizeof(txt));
        return ga_fail(GA_ELAYOUT, "layout %s has %d dimensions, array has %d",
                       txt, l->rank, s->rank);
    }
    int fixed = 1, nfree = 0, freed[GA_MAX_RANK];
    for (int d = 0; d < l->rank; d++) {
        ga_dist *x = &l->dist[d];
        if (x->kind != GA_STAR && x->kind != GA_BLOCK && x->kind != GA_CYCLIC)
            return ga_fail(GA_ELAYOUT, "unknown distribution kind %d", x->kind);
        if (x->kind == GA_CYCLIC && x->k < 1)
            return ga_fail(GA_ELAYOUT, "CYCLIC block size must be >= 1");
        if (x->kind != GA_CYCLIC)
            x->k = 0;
        if (l->grid[d] < 0 || l->grid[d] > GA_MAX_UNITS)
            return ga_fail(GA_ELAYOUT, "grid extent %d out of range",
                           l->grid[d]);
        if (x->kind == GA_STAR) {
            if (l->grid[d] > 1)
                return ga_fail(GA_ELAYOUT,
                               "dimension %d is '*' but its grid extent is %d",
                               d, l->grid[d]);
            l->grid[d] = 1;
        } else if (l->grid[d] == 0) {
            freed[nfree++] = d;
        } else {
            fixed *= l->grid[d];
            if (fixed > GA_MAX_UNITS)
                return ga_fail(GA_ELAYOUT, "grid of more than %d units",
                               GA_MAX_UNITS);
        }
    }
    int units = l->units > 0 ? l->units : default_units;
    if (units < 1)
        units = 1;
    if (nfree > 0) {
        int rest = units / fixed;
        if (rest < 1)
            return ga_fail(GA_ELAYOUT, "grid needs more than %d units", units);
        /* as MPI_Dims_create: largest prime factors first onto the free
         * dimension with the smallest product, then sorted non-increasing */
        int val[GA_MAX_RANK], nf = 0, fac[32];
        for (int i = 0; i < nfree; i++)
            val[i] = 1;
        for (int p = 2, r = rest; r > 1;) {
            if (r % p == 0) {
                fac[nf++] = p;
                r /= p;
            } else {
                p++;
                if (p * p > r && r > 1) {
                    fac[nf++] = r;
                    r = 1;
                }
            }
        }
        for (int i = nf - 1; i >= 0; i--) {
            int best = 0;
            for (int j = 1; j < nfree; j++)
                if (val[j] < val[best])
                    best = j;
            val[best] *= fac[i];
        }
        for (int i = 0; i < nfree; i++)
            for (int j = i + 1; j < nfree; j++)
                if (val[j] > val[i]) {
                    int t = val[i];
                    val[i] = val[j];
                    val[j] = t;
                }
        for (int i = 0; i < nfree; i++)
            l->grid[freed[i]] = val[i];
    }
    l->units = ga_layout_units(l);
    if (memory && l->units > default_units) {
        ga_layout_format(l, txt, sizeof(txt));
        return ga_fail(GA_ELAYOUT,
                       "memory layout %s needs %d processes, the communicator "
                       "has %d",
                       txt, l->units, default_units);
    }
    return 0;
}

/* ------------------------------------------------------ dimensions --- */

int64_t ga_dim_count(const ga_dist *d, int64_t n, int P, int c)
{
    if (c < 0 || c >= P)
        return 0;
    switch (d->kind) {
    case GA_BLOCK: {
        int64_t b = (n + P - 1) / P, lo = b * c;
        if (lo >= n)
            return 0;
        return n - lo < b ? n - lo : b;
    }
    case GA_CYCLIC: {
        int64_t k = d->k, nblk = (n + k - 1) / k;
        if (c >= nblk)
            return 0;
        /* blocks c, c + P, ...; the last block of the array may be short */
        int64_t mine = (nblk - 1 - c) / P + 1;
        int64_t total = mine * k;
        if ((nblk - 1) % P == c)
            total -= nblk * k - n;
        return total;
    }
    default:
        return c == 0 ? n : 0;
    }
}

int ga_dim_owner(const ga_dist *d, int64_t n, int P, int64_t g, int64_t *local)
{
    (void)n;
    switch (d->kind) {
    case GA_BLOCK: {
        int64_t b = (n + P - 1) / P;
        *local = g % b;
        return (int)(g / b);
    }
    case GA_CYCLIC: {
        int64_t k = d->k, j = g / k;
        *local = (j / P) * k + g % k;
        return (int)(j % P);
    }
    default:
        *local = g;
        return 0;
    }
}

int64_t ga_dim_global(const ga_dist *d, int64_t n, int P, int c, int64_t i)
{
    if (i < 0 || i >= ga_dim_count(d, n, P, c))
        return -1;
    switch (d->kind) {
    case GA_BLOCK:
        return (n + P - 1) / P * c + i;
    case GA_CYCLIC: {
        int64_t k = d->k;
        return ((i / k) * P + c) * k + i % k;
    }
    default:
        return i;
    }
}

/* The intervals of one coordinate, walked in order by an iterator. */
typedef struct ivl_iter {
    const ga_dist *d;
    int64_t n;
    int P, c;
    int64_t next_blk; /* CYCLIC: next global block index */
    bool done;
} ivl_iter;

static bool ivl_next(ivl_iter *it, int64_t *lo, int64_t *hi)
{
    if (it->done)
        return false;
    switch (it->d->kind) {
    case GA_BLOCK: {
        int64_t b = (it->n + it->P - 1) / it->P;
        *lo = b * it->c;
        *hi = *lo + b < it->n ? *lo + b : it->n;
        it->done = true;
        return *lo < *hi;
    }
    case GA_CYCLIC: {
        int64_t k = it->d->k, j = it->next_blk;
        *lo = j * k;
        if (*lo >= it->n) {
            it->done = true;
            return false;
        }
        *hi = *lo + k < it->n ? *lo + k : it->n;
        it->next_blk += it->P;
        return true;
    }
    default:
        it->done = true;
        *lo = 0;
        *hi = it->c == 0 ? it->n : 0;
        return *lo < *hi;
    }
}

int ga_dim_runs(const ga_dist *da, int Pa, int ca, const ga_dist *db, int Pb,
                int cb, int64_t n, ga_run **out, int64_t *nout)
{
    ivl_iter a = {da, n, Pa, ca, ca, false}, b = {db, n, Pb, cb, cb, false};
    ga_run *runs = NULL;
    int64_t nr = 0, cap = 0;
    int64_t alo, ahi, blo, bhi;
    bool ha = ivl_next(&a, &alo, &ahi), hb = ivl_next(&b, &blo, &bhi);
    while (ha && hb) {
        int64_t lo = alo > blo ? alo : blo, hi = ahi < bhi ? ahi : bhi;
        if (lo < hi) {
            if (nr == cap) {
                int64_t nc = cap ? cap * 2 : 16;
                ga_run *t = realloc(runs, sizeof(*t) * (size_t)nc);
                if (!t) {
                    free(runs);
                    return ga_fail(-ENOMEM, "out of memory (runs)");
                }
                runs = t;
                cap = nc;
            }
            ga_run *r = &runs[nr++];
            r->g = lo;
            r->len = hi - lo;
            ga_dim_owner(da, n, Pa, lo, &r->la);
            ga_dim_owner(db, n, Pb, lo, &r->lb);
        }
        if (ahi <= bhi)
            ha = ivl_next(&a, &alo, &ahi);
        else
            hb = ivl_next(&b, &blo, &bhi);
    }
    *out = runs;
    *nout = nr;
    return 0;
}

/* ---------------------------------------------------------- chunks --- */

int64_t ga_unit_count(const ga_layout *l, const ga_shape *s, int u,
                      int64_t *count)
{
    int c[GA_MAX_RANK];
    ga_unit_coords(l, u, c);
    int64_t total = 1;
    for (int d = 0; d < s->rank; d++) {
        int64_t k = ga_dim_count(&l->dist[d], s->dims[d], l->grid[d], c[d]);
        if (count)
            count[d] = k;
        total *= k;
    }
    return total;
}

int64_t ga_slot_bytes(const ga_layout *disk, const ga_shape *s)
{
    /* the largest chunk is the product of the largest per-dimension counts
     * (coordinate 0 always holds the most in each dimension) */
    int64_t total = s->esize;
    for (int d = 0; d < s->rank; d++)
        total *= ga_dim_count(&disk->dist[d], s->dims[d], disk->grid[d], 0);
    return total;
}

int64_t ga_disk_offset(const ga_layout *disk, const ga_shape *s, int64_t slot,
                       const int64_t *gidx)
{
    int64_t chunk = 0, lin = 0;
    int c[GA_MAX_RANK];
    int64_t loc[GA_MAX_RANK], cnt[GA_MAX_RANK];
    for (int d = 0; d < s->rank; d++) {
        c[d] = ga_dim_owner(&disk->dist[d], s->dims[d], disk->grid[d], gidx[d],
                            &loc[d]);
        chunk = chunk * disk->grid[d] + c[d];
    }
    for (int d = 0; d < s->rank; d++) {
        cnt[d] = ga_dim_count(&disk->dist[d], s->dims[d], disk->grid[d], c[d]);
        lin = lin * cnt[d] + loc[d];
    }
    return chunk * slot + lin * s->esize;
}
