/*
 * test_extent.c -- the extent module (proto/extent.c) and the striping
 * arithmetic (proto/layout.h), against byte-by-byte models; no servers.
 *
 * Extents: numbering, stable sort, ordering for the wire, extents of a
 * sorted list, overlap resolution (a later piece of a write wins), folding
 * into wire segments and expanding them back; edge cases: empty lists,
 * zero-length pieces, touching and nested pieces, offsets near
 * GP_MAX_OFFSET.  Layout: gp_locate / gp_logical / gp_fork_size / gp_block
 * for many units and subfile counts.
 *
 * Threads: single-threaded.
 */
#include <stdlib.h>
#include <string.h>

#include "extent.h"
#include "gproto.h"
#include "layout.h"
#include "utest.h"

#define M GP_MAX_OFFSET

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t rnd(uint64_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return n ? rng % n : 0;
}

static gp_ext ext(uint64_t off, uint64_t len, uint64_t src)
{
    return (gp_ext){.off = off, .len = len, .src = src};
}

/* ------------------------------------------------------------ numbering -- */

static void test_number(void)
{
    CHECK_EQ(gp_number(NULL, 0), 0);
    gp_ext e[5] = {ext(10, 4, 99), ext(3, 0, 99), ext(0, 2, 99), ext(50, 0, 99),
                   ext(7, 1, 99)};
    size_t n = gp_number(e, 5);
    CHECK_EQ(n, 3); /* empty pieces move nothing: dropped */
    CHECK(e[0].off == 10 && e[0].len == 4 && e[0].src == 0);
    CHECK(e[1].off == 0 && e[1].len == 2 && e[1].src == 4);
    CHECK(e[2].off == 7 && e[2].len == 1 && e[2].src == 6);
    gp_ext z[2] = {ext(1, 0, 0), ext(2, 0, 0)};
    CHECK_EQ(gp_number(z, 2), 0);
}

/* -------------------------------------------------------------- sorting -- */

static void test_predicates(void)
{
    CHECK(gp_sorted(NULL, 0) && gp_disjoint(NULL, 0));
    gp_ext one = ext(5, 5, 0);
    CHECK(gp_sorted(&one, 1) && gp_disjoint(&one, 1));
    gp_ext touch[2] = {ext(0, 5, 0), ext(5, 5, 5)};
    CHECK(gp_sorted(touch, 2) && gp_disjoint(touch, 2));
    gp_ext over[2] = {ext(0, 6, 0), ext(5, 5, 6)};
    CHECK(gp_sorted(over, 2) && !gp_disjoint(over, 2));
    gp_ext same[2] = {ext(5, 1, 0), ext(5, 1, 1)};
    CHECK(gp_sorted(same, 2) && !gp_disjoint(same, 2));
    gp_ext back[2] = {ext(9, 1, 0), ext(0, 1, 1)};
    CHECK(!gp_sorted(back, 2) && !gp_disjoint(back, 2));
}

/* Stable reference: insertion sort by offset. */
static void ref_sort(gp_ext *e, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        gp_ext x = e[i];
        size_t j = i;
        while (j > 0 && e[j - 1].off > x.off) {
            e[j] = e[j - 1];
            j--;
        }
        e[j] = x;
    }
}

static void test_sort(void)
{
    CHECK_EQ(gp_sort(NULL, 0), 0);
    enum { CAP = 300 };
    gp_ext a[CAP], b[CAP];
    for (int round = 0; round < 400; round++) {
        size_t n = (size_t)rnd(CAP + 1);
        uint64_t span = 1 + rnd(round % 3 ? 50 : 100000); /* many ties */
        for (size_t i = 0; i < n; i++)
            a[i] = ext(round % 7 ? rnd(span) : M - rnd(span), 1 + rnd(9), i);
        if (round % 5 == 0) /* already sorted, and a sorted run + tail */
            ref_sort(a, n / 2 + (round % 2 ? n / 2 : 0));
        memcpy(b, a, n * sizeof(*a));
        ref_sort(b, n);
        CHECK_EQ(gp_sort(a, n), 0);
        CHECK_MSG(memcmp(a, b, n * sizeof(*a)) == 0, "round %d n %zu", round,
                  n);
        CHECK(gp_sorted(a, n));
        CHECK_EQ(gp_sort_src(a, n), 0); /* back to list order */
        bool back = true;
        for (size_t i = 0; i < n; i++)
            back = back && a[i].src == i;
        CHECK_MSG(back, "round %d: list order after gp_sort_src", round);
    }
}

static void test_order(void)
{
    /* reads: always by offset, overlaps or not */
    gp_ext r[3] = {ext(20, 5, 0), ext(0, 30, 1), ext(10, 1, 2)};
    gp_order(r, 3, false);
    CHECK(r[0].off == 0 && r[1].off == 10 && r[2].off == 20);
    /* writes without overlap: by offset */
    gp_ext w[3] = {ext(20, 5, 0), ext(0, 10, 1), ext(10, 10, 2)};
    gp_order(w, 3, true);
    CHECK(w[0].off == 0 && w[1].off == 10 && w[2].off == 20);
    /* writes with overlap: list order, the later piece wins on the server */
    gp_ext o[3] = {ext(20, 5, 0), ext(0, 21, 1), ext(30, 1, 2)};
    gp_order(o, 3, true);
    CHECK(o[0].src == 0 && o[1].src == 1 && o[2].src == 2);
    /* already in order: untouched; empty and zero-length */
    gp_order(NULL, 0, true);
    gp_ext z[2] = {ext(4, 0, 0), ext(4, 0, 1)};
    gp_order(z, 2, true);
    CHECK(z[0].src == 0 && z[1].src == 1);
}

/* -------------------------------------------------------------- extents -- */

static void test_extent_at(void)
{
    gp_ext e[6] = {ext(0, 4, 0),    ext(4, 2, 0),  /* touching */
                   ext(10, 10, 0),  ext(12, 2, 0), /* nested */
                   ext(19, 5, 0),                  /* overlapping */
                   ext(M - 3, 3, 0)};              /* at the limit */
    uint64_t off, end;
    bool ov;
    size_t j = gp_extent_at(e, 6, 0, &off, &end, &ov);
    CHECK(j == 2 && off == 0 && end == 6 && !ov);
    j = gp_extent_at(e, 6, 2, &off, &end, &ov);
    CHECK(j == 5 && off == 10 && end == 24 && ov);
    j = gp_extent_at(e, 6, 5, &off, &end, NULL);
    CHECK(j == 6 && off == M - 3 && end == M);
}

/* Apply numbered pieces to a byte model in list order. */
static void model_apply(uint8_t *img, const gp_ext *e, size_t n,
                        const uint8_t *data)
{
    for (size_t i = 0; i < n; i++)
        memcpy(img + e[i].off, data + e[i].src, e[i].len);
}

#define FLAG (UINT64_C(1) << 63)

static void test_resolve(void)
{
    enum { CAP = 64, SPAN = 256 };
    gp_ext e[CAP], orig[CAP];
    uint8_t data[CAP * 40], want[SPAN + 64], got[SPAN + 64];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)rnd(256);
    for (int round = 0; round < 500; round++) {
        size_t n = (size_t)rnd(CAP + 1);
        for (size_t i = 0; i < n; i++)
            e[i] = ext(rnd(SPAN), rnd(40), 0);
        n = gp_number(e, n);
        memcpy(orig, e, n * sizeof(*e));
        memset(want, 0, sizeof(want));
        model_apply(want, orig, n, data);
        CHECK_EQ(gp_sort(e, n), 0);
        uint8_t *res;
        size_t m = n;
        CHECK_EQ(gp_resolve(e, &m, data, &res, FLAG), 0);
        CHECK(gp_disjoint(e, m));
        CHECK(res != NULL || m == n);
        memset(got, 0, sizeof(got));
        for (size_t i = 0; i < m; i++) {
            const uint8_t *d =
                e[i].src & FLAG ? res + (e[i].src & ~FLAG) : data + e[i].src;
            memcpy(got + e[i].off, d, e[i].len);
        }
        CHECK_MSG(memcmp(got, want, sizeof(got)) == 0, "round %d", round);
        free(res);
    }
    /* no overlap: nothing allocated, the list unchanged */
    gp_ext d[2] = {ext(0, 3, 0), ext(3, 3, 3)};
    uint8_t *res = (uint8_t *)1;
    size_t m = 2;
    CHECK_EQ(gp_resolve(d, &m, data, &res, FLAG), 0);
    CHECK(res == NULL && m == 2 && d[1].src == 3);
    m = 0;
    CHECK_EQ(gp_resolve(d, &m, data, &res, FLAG), 0);
    CHECK(res == NULL && m == 0);
    /* the later piece wins where two overlap */
    gp_ext w[2] = {ext(0, 4, 0), ext(2, 4, 4)};
    const uint8_t src[8] = {1, 1, 1, 1, 2, 2, 2, 2};
    m = 2;
    CHECK_EQ(gp_resolve(w, &m, src, &res, FLAG), 0);
    CHECK(m == 1 && w[0].off == 0 && w[0].len == 6 && w[0].src == FLAG);
    const uint8_t want6[6] = {1, 1, 2, 2, 2, 2};
    CHECK(res && memcmp(res, want6, 6) == 0);
    free(res);
}

/* -------------------------------------------------------------- folding -- */

/* Fold pieces as io.c does (gp_folder, at most max segments, 0: no
 * bound), into the wire's segment list; return the segments read back
 * from it, and in *taken how many pieces the folder took. */
static size_t fold_max(const gp_ext *e, size_t n, gp_seg *out, uint64_t max,
                       size_t *taken)
{
    gp_wbuf w;
    gp_wbuf_init(&w);
    gp_folder f;
    gp_folder_init(&f, &w, max);
    size_t i = 0;
    while (i < n && gp_folder_add(&f, e[i].off, e[i].len))
        i++;
    uint64_t ns = gp_folder_end(&f);
    if (taken)
        *taken = i;
    gp_rbuf r;
    gp_rbuf_init(&r, w.data, w.len);
    CHECK_EQ(gp_get_u32(&r), ns);
    for (uint64_t k = 0; k < ns; k++)
        gp_get_seg(&r, &out[k]);
    CHECK(w.err == 0 && gp_done(&r));
    gp_wbuf_free(&w);
    /* counting alone (no list written) gives the same number */
    gp_folder c;
    gp_folder_init(&c, NULL, max);
    for (size_t k = 0; k < i; k++)
        CHECK(gp_folder_add(&c, e[k].off, e[k].len));
    CHECK_EQ(gp_folder_end(&c), ns);
    return (size_t)ns;
}

static size_t fold_all(const gp_ext *e, size_t n, gp_seg *out)
{
    size_t taken;
    size_t ns = fold_max(e, n, out, 0, &taken);
    CHECK_EQ(taken, n);
    return ns;
}

static void test_fold_cases(void)
{
    gp_seg s[8];
    gp_ext adj[3] = {ext(0, 4, 0), ext(4, 4, 0), ext(8, 1, 0)};
    CHECK_EQ(fold_all(adj, 3, s), 1);
    CHECK(s[0].kind == GP_SEG_EXTENT && s[0].off == 0 && s[0].size == 9);
    gp_ext str[4] = {ext(0, 4, 0), ext(10, 4, 0), ext(20, 4, 0), ext(30, 4, 0)};
    CHECK_EQ(fold_all(str, 4, s), 1);
    CHECK(s[0].kind == GP_SEG_STRIDED && s[0].nlev == 1 && s[0].count[0] == 4 &&
          s[0].stride[0] == 10 && s[0].size == 4);
    /* backwards, overlapping, another size, a broken stride: apart */
    gp_ext back[2] = {ext(10, 4, 0), ext(0, 4, 0)};
    CHECK_EQ(fold_all(back, 2, s), 2);
    gp_ext over[2] = {ext(0, 4, 0), ext(2, 4, 0)};
    CHECK_EQ(fold_all(over, 2, s), 2);
    gp_ext size[2] = {ext(0, 4, 0), ext(10, 5, 0)};
    CHECK_EQ(fold_all(size, 2, s), 2);
    gp_ext brk[3] = {ext(0, 4, 0), ext(10, 4, 0), ext(21, 4, 0)};
    CHECK_EQ(fold_all(brk, 3, s), 2);
    CHECK(s[1].kind == GP_SEG_EXTENT && s[1].off == 21);
    /* a strided segment takes no adjacent piece of another size */
    gp_ext tail[3] = {ext(0, 4, 0), ext(10, 4, 0), ext(14, 2, 0)};
    CHECK_EQ(fold_all(tail, 3, s), 2);
    /* near the offset limit: the folded segment is still valid */
    gp_ext top[3] = {ext(M - 30, 5, 0), ext(M - 20, 5, 0), ext(M - 10, 5, 0)};
    CHECK_EQ(fold_all(top, 3, s), 1);
    uint64_t np, nb;
    CHECK(gp_seg_measure(&s[0], &np, &nb) && np == 3 && nb == 15);
    CHECK_EQ(fold_all(NULL, 0, s), 0);
    /* a bound on segments: the piece that would start one more is not
     * taken, and a piece that folds into the last one still is */
    gp_ext bnd[4] = {ext(0, 4, 0), ext(100, 8, 0), ext(108, 8, 0),
                     ext(300, 1, 0)};
    size_t taken;
    CHECK_EQ(fold_max(bnd, 4, s, 2, &taken), 2);
    CHECK_EQ(taken, 3);
    CHECK(s[1].kind == GP_SEG_EXTENT && s[1].off == 100 && s[1].size == 16);
    CHECK_EQ(fold_max(bnd, 4, s, 1, &taken), 1);
    CHECK_EQ(taken, 1);
}

/* Random lists: folding then expanding gives the same bytes in the same
 * order (adjacent pieces may come back merged). */
static void test_fold_roundtrip(void)
{
    enum { CAP = 200 };
    gp_ext e[CAP];
    gp_seg s[CAP];
    static gp_ext back[CAP * 2];
    for (int round = 0; round < 300; round++) {
        size_t n = 1 + (size_t)rnd(CAP);
        uint64_t base = round % 4 ? rnd(1000) : M - 100000;
        uint64_t len = 1 + rnd(8), stride = len + rnd(5);
        for (size_t i = 0; i < n; i++) {
            if (rnd(4) == 0) /* break the pattern now and then */
                e[i] = ext(base + rnd(50000), 1 + rnd(8), 0);
            else
                e[i] = ext(base + i * stride, len, 0);
        }
        size_t ns = fold_all(e, n, s);
        CHECK(ns >= 1 && ns <= n);
        uint64_t k = 0;
        for (size_t i = 0; i < ns; i++) {
            uint64_t np, nb;
            CHECK(gp_seg_measure(&s[i], &np, &nb));
            if (k + np > CAP * 2)
                break;
            gp_seg_expand(&s[i], back, &k);
        }
        /* byte streams equal: walk both lists byte by byte */
        size_t a = 0, b = 0;
        uint64_t ai = 0, bi = 0;
        bool same = true;
        while (same && a < n && b < k) {
            same = e[a].off + ai == back[b].off + bi;
            if (++ai == e[a].len) {
                a++;
                ai = 0;
            }
            if (++bi == back[b].len) {
                b++;
                bi = 0;
            }
        }
        CHECK_MSG(same && a == n && b == k, "round %d", round);
    }
}

/* ------------------------------------------------------------- layout ---- */

static void test_layout(void)
{
    static const uint64_t units[] = {1, 3, 200, 4096, 65536};
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++)
        for (unsigned ns = 1; ns <= 5; ns++) {
            uint64_t unit = units[u];
            uint64_t fpos[5] = {0}; /* model: bytes placed per subfile */
            uint64_t limit = unit * ns * 3 + 7;
            if (limit > 20000)
                limit = 20000;
            bool ok = true;
            for (uint64_t x = 0; x < limit && ok; x++) {
                /* the model: stripe units dealt round robin */
                unsigned want = (unsigned)((x / unit) % ns);
                uint64_t foff, room;
                unsigned sub = gp_locate(unit, ns, x, &foff, &room);
                ok = sub == want && foff == fpos[want] &&
                     room == unit - x % unit &&
                     gp_logical(unit, ns, sub, foff) == x;
                fpos[want]++;
                for (unsigned k = 0; k < ns && ok; k++)
                    ok = gp_fork_size(unit, ns, k, x + 1) == fpos[k];
                uint64_t within, broom;
                ok = ok && gp_block(unit, x, &within, &broom) == x / unit &&
                     within == x % unit && broom == room;
            }
            CHECK_MSG(ok, "unit %llu nsub %u", (unsigned long long)unit, ns);
            CHECK_EQ(gp_fork_size(unit, ns, 0, 0), 0);
        }
    /* far offsets: no overflow of unit * nsub on the way */
    uint64_t foff, room;
    unsigned sub = gp_locate(UINT64_C(1) << 40, 256, M - 1, &foff, &room);
    CHECK(gp_logical(UINT64_C(1) << 40, 256, sub, foff) == M - 1);
    CHECK_EQ(room, 1);
}

/* gp_cursor answers as gp_locate does, whatever the walk: forward in
 * small steps, backward, and jumps over and into units. */
static void test_cursor(void)
{
    static const uint64_t units[] = {1, 3, 200, 65536};
    uint64_t seed = 12345;
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++)
        for (unsigned ns = 1; ns <= 5; ns++) {
            uint64_t unit = units[u];
            gp_cursor c = gp_cursor_init(unit, ns);
            uint64_t x = 0, span = unit * ns * 4 + 11;
            bool ok = true;
            for (int step = 0; step < 5000 && ok; step++) {
                uint64_t foff, room, wf, wr;
                unsigned sub = gp_cursor_locate(&c, x, &foff, &room);
                unsigned want = gp_locate(unit, ns, x, &wf, &wr);
                ok = sub == want && foff == wf && room == wr;
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                uint64_t r = seed >> 33;
                if (r % 4 == 0) /* anywhere */
                    x = r % span;
                else if (r % 4 == 1 && x > 0) /* back a little */
                    x -= 1 + r % (x < 17 ? x : 17);
                else /* forward, within or past the unit */
                    x += 1 + r % (unit + 2);
            }
            CHECK_MSG(ok, "cursor: unit %llu nsub %u", (unsigned long long)unit,
                      ns);
        }
    /* a cursor at the far end: no overflow */
    gp_cursor c = gp_cursor_init(UINT64_C(1) << 40, 256);
    uint64_t foff, room, wf, wr;
    unsigned sub = gp_cursor_locate(&c, M - 1, &foff, &room);
    CHECK(sub == gp_locate(UINT64_C(1) << 40, 256, M - 1, &wf, &wr) &&
          foff == wf && room == wr);
}

int main(void)
{
    test_number();
    test_predicates();
    test_sort();
    test_order();
    test_extent_at();
    test_resolve();
    test_fold_cases();
    test_fold_roundtrip();
    test_layout();
    test_cursor();
    return utest_exit("test_extent");
}
