/*
 * test_seg.c -- data-request segments of proto/gproto.c: the codec of both
 * segment kinds (truncation at every length, bad kinds, nlev 0 and over
 * GP_MAX_LEVELS), gp_seg_measure's overflow and limit cases, and the
 * expansion's order (proto/extent.c) against a brute-force nested loop.
 * Needs no servers.
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "extent.h"
#include "galley.h"
#include "gproto.h"
#include "utest.h"

/* --------------------------------------------------------- segments ---- */

static bool seg_equal(const gp_seg *a, const gp_seg *b)
{
    if (a->kind != b->kind || a->off != b->off || a->size != b->size)
        return false;
    if (a->kind == GP_SEG_EXTENT)
        return true;
    if (a->nlev != b->nlev)
        return false;
    for (unsigned i = 0; i < a->nlev; i++)
        if (a->count[i] != b->count[i] || a->stride[i] != b->stride[i])
            return false;
    return true;
}

static void test_segments_codec(void)
{
    gp_wbuf w;
    gp_rbuf r;
    gp_seg s, d;

    /* Extent: exact bytes. */
    memset(&s, 0, sizeof(s));
    s.kind = GP_SEG_EXTENT;
    s.off = 0x1122334455667788ull;
    s.size = 4096;
    gp_wbuf_init(&w);
    gp_put_seg(&w, &s);
    CHECK_EQ(w.len, 17);
    CHECK_EQ(w.data[0], 0);
    CHECK_EQ(w.data[1], 0x88);
    CHECK_EQ(w.data[9], 0x00);
    CHECK_EQ(w.data[10], 0x10);
    gp_rbuf_init(&r, w.data, w.len);
    gp_get_seg(&r, &d);
    CHECK(r.err == 0 && gp_done(&r) && seg_equal(&s, &d));
    for (size_t len = 0; len < w.len; len++) {
        gp_rbuf_init(&r, w.data, len);
        gp_get_seg(&r, &d);
        CHECK_MSG(r.err == GFS_EPROTO, "extent truncated at %zu", len);
    }
    gp_wbuf_free(&w);

    /* Strided with every legal nesting depth. */
    for (unsigned L = 1; L <= GP_MAX_LEVELS; L++) {
        memset(&s, 0, sizeof(s));
        s.kind = GP_SEG_STRIDED;
        s.off = utest_rnd();
        s.size = utest_rnd();
        s.nlev = (uint8_t)L;
        for (unsigned i = 0; i < L; i++) {
            s.count[i] = utest_rnd();
            s.stride[i] = utest_rnd();
        }
        gp_wbuf_init(&w);
        gp_put_seg(&w, &s);
        CHECK_EQ(w.err, 0);
        CHECK_EQ(w.len, 1 + 8 + 8 + 1 + 16 * L);
        CHECK_EQ(w.data[0], 1);
        CHECK_EQ(w.data[17], L);
        gp_rbuf_init(&r, w.data, w.len);
        gp_get_seg(&r, &d);
        CHECK_MSG(r.err == 0 && gp_done(&r) && seg_equal(&s, &d), "nlev %u", L);
        /* unused levels are zeroed by the decoder */
        for (unsigned i = L; i < GP_MAX_LEVELS; i++)
            CHECK(d.count[i] == 0 && d.stride[i] == 0);
        int accepted = 0;
        for (size_t len = 0; len < w.len; len++) {
            gp_rbuf_init(&r, w.data, len);
            gp_get_seg(&r, &d);
            accepted += r.err == 0;
        }
        CHECK_MSG(accepted == 0, "nlev %u: %d truncations accepted", L,
                  accepted);
        gp_wbuf_free(&w);
    }

    /* A mixed list of segments decodes in order. */
    gp_seg list[50];
    gp_wbuf_init(&w);
    for (int i = 0; i < 50; i++) {
        memset(&list[i], 0, sizeof(list[i]));
        list[i].kind = (uint8_t)(utest_rnd() & 1);
        list[i].off = utest_rnd();
        list[i].size = utest_rnd();
        if (list[i].kind == GP_SEG_STRIDED) {
            list[i].nlev = (uint8_t)(1 + utest_rnd_below(GP_MAX_LEVELS));
            for (unsigned k = 0; k < list[i].nlev; k++) {
                list[i].count[k] = utest_rnd();
                list[i].stride[k] = utest_rnd();
            }
        }
        gp_put_seg(&w, &list[i]);
    }
    gp_rbuf_init(&r, w.data, w.len);
    int bad = 0;
    for (int i = 0; i < 50; i++) {
        gp_get_seg(&r, &d);
        bad += r.err != 0 || !seg_equal(&list[i], &d);
    }
    CHECK_EQ(bad, 0);
    CHECK(gp_done(&r));
    gp_wbuf_free(&w);

    /* Bad kinds. */
    for (unsigned kind = 2; kind < 256; kind += (kind < 10 ? 1 : 61)) {
        uint8_t b[64] = {0};
        b[0] = (uint8_t)kind;
        b[17] = 1; /* would be a valid nlev */
        gp_rbuf_init(&r, b, sizeof(b));
        gp_get_seg(&r, &d);
        CHECK_MSG(r.err == GFS_EPROTO, "kind %u", kind);
    }

    /* nlev 0 and nlev > GP_MAX_LEVELS (with enough bytes behind them that
     * only the count can be the reason). */
    unsigned badlev[] = {0, GP_MAX_LEVELS + 1, 200, 255};
    for (size_t i = 0; i < sizeof(badlev) / sizeof(*badlev); i++) {
        uint8_t b[1 + 8 + 8 + 1 + 16 * 256];
        memset(b, 0, sizeof(b));
        b[0] = GP_SEG_STRIDED;
        b[17] = (uint8_t)badlev[i];
        gp_rbuf_init(&r, b, sizeof(b));
        gp_get_seg(&r, &d);
        CHECK_MSG(r.err == GFS_EPROTO, "nlev %u", badlev[i]);
    }
}

/* -------------------------------------------------- measure / expand ---- */

static gp_seg strided(uint64_t off, uint64_t size, unsigned nlev,
                      const uint64_t *count, const uint64_t *stride)
{
    gp_seg s;
    memset(&s, 0, sizeof(s));
    s.kind = GP_SEG_STRIDED;
    s.off = off;
    s.size = size;
    s.nlev = (uint8_t)nlev;
    for (unsigned i = 0; i < nlev; i++) {
        s.count[i] = count[i];
        s.stride[i] = stride[i];
    }
    return s;
}

static void test_measure(void)
{
    uint64_t np = 12345, nb = 12345;
    gp_seg s;
    const uint64_t M = GP_MAX_OFFSET;

    /* Extents. */
    memset(&s, 0, sizeof(s));
    s.kind = GP_SEG_EXTENT;
    s.off = 100;
    s.size = 50;
    CHECK(gp_seg_measure(&s, &np, &nb) && np == 1 && nb == 50);
    s.off = 0;
    s.size = 0;
    CHECK(gp_seg_measure(&s, &np, &nb) && np == 1 && nb == 0);
    s.off = M;
    s.size = 0;
    CHECK(gp_seg_measure(&s, &np, &nb)); /* ends exactly at the limit */
    s.off = M - 10;
    s.size = 10;
    CHECK(gp_seg_measure(&s, &np, &nb) && nb == 10);
    s.size = 11;
    CHECK(!gp_seg_measure(&s, &np, &nb));
    s.off = M + 1;
    s.size = 0;
    CHECK(!gp_seg_measure(&s, &np, &nb));
    s.off = UINT64_MAX;
    s.size = 1;
    CHECK(!gp_seg_measure(&s, &np, &nb)); /* off + size wraps */
    s.off = 1;
    s.size = UINT64_MAX;
    CHECK(!gp_seg_measure(&s, &np, &nb));

    /* Strided, ordinary. */
    uint64_t c2[2] = {3, 4}, st2[2] = {1000, 10};
    s = strided(5, 2, 2, c2, st2);
    CHECK(gp_seg_measure(&s, &np, &nb) && np == 12 && nb == 24);

    /* A zero count anywhere: nothing to move. */
    uint64_t cz[3] = {5, 0, 7}, stz[3] = {100, 10, 1};
    s = strided(0, 1, 3, cz, stz);
    CHECK(gp_seg_measure(&s, &np, &nb) && np == 0 && nb == 0);

    /* Piece count overflows 64 bits. */
    uint64_t cbig[3] = {UINT64_C(1) << 32, UINT64_C(1) << 32, 2};
    uint64_t s0[3] = {0, 0, 0};
    s = strided(0, 1, 3, cbig, s0);
    CHECK(!gp_seg_measure(&s, &np, &nb));

    /* Byte count overflows 64 bits (zero strides keep the reach small). */
    uint64_t c1[1] = {UINT64_C(1) << 40};
    s = strided(0, UINT64_C(1) << 30, 1, c1, s0);
    CHECK(!gp_seg_measure(&s, &np, &nb));
    s = strided(0, UINT64_C(1) << 20, 1, c1, s0);
    CHECK(gp_seg_measure(&s, &np, &nb) && np == (UINT64_C(1) << 40) &&
          nb == (UINT64_C(1) << 60));

    /* (count - 1) * stride overflows. */
    uint64_t c1b[1] = {3}, sthuge[1] = {UINT64_MAX / 2 + 1};
    s = strided(0, 1, 1, c1b, sthuge);
    CHECK(!gp_seg_measure(&s, &np, &nb));

    /* Reach beyond GP_MAX_OFFSET, through one level or through the sum. */
    uint64_t c1c[1] = {2}, stM[1] = {M};
    s = strided(0, 0, 1, c1c, stM);
    CHECK(gp_seg_measure(&s, &np, &nb)); /* last piece starts at M, size 0 */
    s = strided(0, 1, 1, c1c, stM);
    CHECK(!gp_seg_measure(&s, &np, &nb));
    s = strided(1, 0, 1, c1c, stM);
    CHECK(!gp_seg_measure(&s, &np, &nb));
    uint64_t c2b[2] = {2, 2}, sth[2] = {M / 2, M / 2 + 1};
    s = strided(0, 0, 2, c2b, sth);
    CHECK(!gp_seg_measure(&s, &np, &nb));
    s = strided(M + 1, 1, 1, c1c, s0);
    CHECK(!gp_seg_measure(&s, &np, &nb));
    uint64_t c1d[1] = {1};
    s = strided(0, M + 1, 1, c1d, s0);
    CHECK(!gp_seg_measure(&s, &np, &nb));
    s = strided(0, UINT64_MAX, 1, c1d, s0);
    CHECK(!gp_seg_measure(&s, &np, &nb));

    /* Bad nesting or kind is never measured. */
    s = strided(0, 1, 1, c1c, s0);
    s.nlev = 0;
    CHECK(!gp_seg_measure(&s, &np, &nb));
    s.nlev = GP_MAX_LEVELS + 1;
    CHECK(!gp_seg_measure(&s, &np, &nb));
    s.nlev = 1;
    s.kind = 7;
    CHECK(!gp_seg_measure(&s, &np, &nb));

    /* All eight levels at the limit of the piece count. */
    uint64_t c8[GP_MAX_LEVELS], st8[GP_MAX_LEVELS];
    for (unsigned i = 0; i < GP_MAX_LEVELS; i++) {
        c8[i] = 256; /* 256^8 = 2^64: one too many */
        st8[i] = 1;
    }
    s = strided(0, 1, GP_MAX_LEVELS, c8, st8);
    CHECK(!gp_seg_measure(&s, &np, &nb));
    c8[0] = 255;
    s = strided(0, 0, GP_MAX_LEVELS, c8, st8);
    CHECK(gp_seg_measure(&s, &np, &nb));
}

/* Reference expansion: recursive nested loop, outermost level first. */
static void ref_expand(const gp_seg *s, unsigned lev, uint64_t base,
                       gp_ext *out, uint64_t *n)
{
    if (lev == s->nlev) {
        out[*n].off = base;
        out[*n].len = s->size;
        (*n)++;
        return;
    }
    for (uint64_t i = 0; i < s->count[lev]; i++)
        ref_expand(s, lev + 1, base + i * s->stride[lev], out, n);
}

static void test_expand(void)
{
    /* A worked example: levels outermost first, last level fastest. */
    uint64_t c[2] = {2, 3}, st[2] = {100, 10};
    gp_seg s = strided(7, 4, 2, c, st);
    gp_ext out[16];
    uint64_t n = 0;
    gp_seg_expand(&s, out, &n);
    static const uint64_t want[6] = {7, 17, 27, 107, 117, 127};
    CHECK_EQ(n, 6);
    for (int i = 0; i < 6 && i < (int)n; i++)
        CHECK(out[i].off == want[i] && out[i].len == 4);

    /* Appends after what is already there. */
    gp_seg e;
    memset(&e, 0, sizeof(e));
    e.kind = GP_SEG_EXTENT;
    e.off = 999;
    e.size = 1;
    gp_seg_expand(&e, out, &n);
    CHECK_EQ(n, 7);
    CHECK(out[6].off == 999 && out[6].len == 1);
    CHECK(out[0].off == 7); /* earlier pieces untouched */

    /* Zero count: nothing appended. */
    uint64_t cz[2] = {3, 0};
    s = strided(0, 1, 2, cz, st);
    uint64_t before = n;
    gp_seg_expand(&s, out, &n);
    CHECK_EQ(n, before);

    /* Random segments against the reference, and against measure. */
    enum { CAP = 4096 };
    gp_ext *got = calloc(CAP, sizeof(*got)); /* memcmp: ref zeroed */
    gp_ext *ref = calloc(CAP, sizeof(*ref));
    if (!got || !ref)
        abort();
    int mismatches = 0, measured_wrong = 0;
    for (int t = 0; t < 2000; t++) {
        unsigned L = 1 + (unsigned)utest_rnd_below(GP_MAX_LEVELS);
        uint64_t cc[GP_MAX_LEVELS], ss[GP_MAX_LEVELS], total = 1;
        for (unsigned i = 0; i < L; i++) {
            cc[i] = utest_rnd_below(total > 512 ? 2 : 5);
            total *= cc[i] ? cc[i] : 1;
            ss[i] = utest_rnd_below(1000);
        }
        s = strided(utest_rnd_below(1 << 20), utest_rnd_below(64), L, cc, ss);
        uint64_t np, nb;
        if (!gp_seg_measure(&s, &np, &nb) || np > CAP) {
            measured_wrong++;
            continue;
        }
        uint64_t ng = 0, nr = 0;
        gp_seg_expand(&s, got, &ng);
        ref_expand(&s, 0, s.off, ref, &nr);
        if (ng != np || nb != np * s.size)
            measured_wrong++;
        if (ng != nr || (ng && memcmp(got, ref, ng * sizeof(*got))))
            mismatches++;
    }
    CHECK_EQ(mismatches, 0);
    CHECK_EQ(measured_wrong, 0);
    free(got);
    free(ref);
}

int main(void)
{
    test_segments_codec();
    test_measure();
    test_expand();
    return utest_exit("test_seg");
}
