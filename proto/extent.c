/*
 * extent.c -- lists of pieces: expansion, numbering, sorting, extents,
 * overlap resolution and folding into wire segments (see extent.h).
 *
 * Threads: pure functions on caller-owned arrays.
 */
#include "extent.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------- expansion -- */

void gp_seg_expand(const gp_seg *s, gp_ext *out, uint64_t *n)
{
    if (s->kind == GP_SEG_EXTENT) {
        out[*n].off = s->off;
        out[*n].len = s->size;
        (*n)++;
        return;
    }
    uint64_t idx[GP_MAX_LEVELS] = {0};
    unsigned L = s->nlev;
    for (unsigned i = 0; i < L; i++)
        if (s->count[i] == 0)
            return;
    for (;;) {
        uint64_t off = s->off;
        for (unsigned i = 0; i < L; i++)
            off += idx[i] * s->stride[i];
        out[*n].off = off;
        out[*n].len = s->size;
        (*n)++;
        int lev = (int)L - 1;
        while (lev >= 0 && ++idx[lev] == s->count[lev]) {
            idx[lev] = 0;
            lev--;
        }
        if (lev < 0)
            return;
    }
}

size_t gp_number(gp_ext *e, size_t n)
{
    size_t w = 0;
    uint64_t src = 0;
    for (size_t i = 0; i < n; i++) {
        if (e[i].len == 0)
            continue;
        e[w] = (gp_ext){.off = e[i].off, .len = e[i].len, .src = src};
        src += e[i].len;
        w++;
    }
    return w;
}

/* ------------------------------------------------------------ sorting -- */

bool gp_sorted(const gp_ext *e, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (e[i].off < e[i - 1].off)
            return false;
    return true;
}

bool gp_disjoint(const gp_ext *e, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (e[i].off < gp_end(&e[i - 1]))
            return false;
    return true;
}

static bool before(const gp_ext *a, const gp_ext *b, bool by_src)
{
    return by_src ? a->src < b->src : a->off < b->off;
}

/* Stable bottom-up merge sort of e[0..n) through tmp[0..n): by offset, or
 * by src (which is unique).  Runs already in order cost one comparison. */
static void msort(gp_ext *e, gp_ext *tmp, size_t n, bool by_src)
{
    gp_ext *from = e, *to = tmp;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n;
            size_t hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t a = lo, b = mid, k = lo;
            if (mid == hi || !before(&from[mid], &from[mid - 1], by_src)) {
                memcpy(to + lo, from + lo, (hi - lo) * sizeof(*e));
                continue;
            }
            while (a < mid && b < hi)
                to[k++] =
                    before(&from[b], &from[a], by_src) ? from[b++] : from[a++];
            memcpy(to + k, from + a, (mid - a) * sizeof(*e));
            k += mid - a;
            memcpy(to + k, from + b, (hi - b) * sizeof(*e));
        }
        gp_ext *t = from;
        from = to;
        to = t;
    }
    if (from != e)
        memcpy(e, from, n * sizeof(*e));
}

static int sort_by(gp_ext *e, size_t n, bool by_src)
{
    size_t i = 1;
    while (i < n && !before(&e[i], &e[i - 1], by_src))
        i++;
    if (i >= n)
        return 0; /* already in order */
    gp_ext *tmp = malloc(n * sizeof(*tmp));
    if (!tmp)
        return -ENOMEM;
    msort(e, tmp, n, by_src);
    free(tmp);
    return 0;
}

int gp_sort(gp_ext *e, size_t n)
{
    return sort_by(e, n, false);
}

int gp_sort_src(gp_ext *e, size_t n)
{
    return sort_by(e, n, true);
}

void gp_order(gp_ext *e, size_t n, bool write)
{
    if (gp_disjoint(e, n))
        return;
    gp_ext *copy = NULL;
    if (write) {
        copy = malloc(n * sizeof(*copy));
        if (!copy)
            return; /* list order is always correct, just slower */
        memcpy(copy, e, n * sizeof(*copy));
    }
    if (gp_sort(e, n) == 0 && copy && !gp_disjoint(e, n))
        memcpy(e, copy, n * sizeof(*copy));
    free(copy);
}

/* ------------------------------------------------------------ extents -- */

size_t gp_extent_at(const gp_ext *e, size_t n, size_t i, uint64_t *off,
                    uint64_t *end, bool *overlap)
{
    uint64_t x = gp_end(&e[i]);
    bool ov = false;
    size_t k = i + 1;
    while (k < n && e[k].off <= x) {
        if (e[k].off < x)
            ov = true;
        if (gp_end(&e[k]) > x)
            x = gp_end(&e[k]);
        k++;
    }
    *off = e[i].off;
    *end = x;
    if (overlap)
        *overlap = ov;
    return k;
}

int gp_resolve(gp_ext *e, size_t *n, const uint8_t *data, uint8_t **resolved,
               uint64_t flag)
{
    *resolved = NULL;
    uint64_t need = 0;
    for (size_t i = 0; i < *n;) {
        uint64_t off, end;
        bool ov;
        size_t j = gp_extent_at(e, *n, i, &off, &end, &ov);
        if (ov)
            need += end - off;
        i = j;
    }
    if (need == 0)
        return 0;
    /* an extent is no longer than the data of its pieces: need <= bytes */
    uint8_t *buf = malloc(need);
    if (!buf)
        return -ENOMEM;
    size_t w = 0;
    uint64_t roff = 0;
    for (size_t i = 0; i < *n;) {
        uint64_t off, end;
        bool ov;
        size_t j = gp_extent_at(e, *n, i, &off, &end, &ov);
        if (!ov) {
            memmove(&e[w], &e[i], (j - i) * sizeof(*e));
            w += j - i;
            i = j;
            continue;
        }
        /* list order; src are distinct, so stability does not matter */
        if (sort_by(&e[i], j - i, true)) {
            free(buf);
            return -ENOMEM;
        }
        for (size_t k = i; k < j; k++)
            memcpy(buf + roff + (e[k].off - off), data + e[k].src, e[k].len);
        e[w++] = (gp_ext){.off = off, .len = end - off, .src = flag | roff};
        roff += end - off;
        i = j;
    }
    *n = w;
    *resolved = buf;
    return 0;
}

/* ------------------------------------------------------------ folding -- */

static void gp_fold_start(gp_seg *s, uint64_t off, uint64_t len)
{
    s->kind = GP_SEG_EXTENT;
    s->nlev = 0;
    s->off = off;
    s->size = len;
}

static bool gp_fold(gp_seg *s, uint64_t off, uint64_t len)
{
    if (s->kind == GP_SEG_EXTENT) {
        if (s->off + s->size == off) {
            s->size += len; /* adjacent: one longer extent */
            return true;
        }
        if (len != s->size || off < s->off + s->size)
            return false; /* backwards or overlapping: keep apart */
        s->kind = GP_SEG_STRIDED;
        s->nlev = 1;
        s->count[0] = 2;
        s->stride[0] = off - s->off;
        return true;
    }
    if (len == s->size && off == s->off + s->count[0] * s->stride[0]) {
        s->count[0]++;
        return true;
    }
    return false;
}

void gp_folder_init(gp_folder *f, gp_wbuf *out, uint64_t max)
{
    f->out = out;
    f->max = max;
    f->nseg = 0;
    f->open = false;
    if (out) {
        f->count_at = out->len;
        gp_put_u32(out, 0); /* filled in by gp_folder_end */
    }
}

bool gp_folder_add(gp_folder *f, uint64_t off, uint64_t len)
{
    if (f->open && gp_fold(&f->s, off, len))
        return true;
    if (f->max && f->nseg == f->max)
        return false;
    if (f->open && f->out)
        gp_put_seg(f->out, &f->s);
    gp_fold_start(&f->s, off, len);
    f->open = true;
    f->nseg++;
    return true;
}

uint64_t gp_folder_end(gp_folder *f)
{
    if (f->open && f->out)
        gp_put_seg(f->out, &f->s);
    f->open = false;
    if (f->out && !f->out->err)
        for (int k = 0; k < 4; k++)
            f->out->data[f->count_at + (size_t)k] =
                (uint8_t)(f->nseg >> (8 * k));
    return f->nseg;
}
