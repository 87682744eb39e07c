/*
 * test_proto.c -- round trips and rejections for every encoder/decoder in
 * proto/gproto.c.  Needs no servers.
 *
 * Covered: frame header (exact byte layout), integers, strings, blobs,
 * file records; truncated input at every length, oversized
 * strings/blobs/attrs, embedded NULs, record nsub limits; writer limits and
 * sticky errors.  Data-request segments: test_seg.c.
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "galley.h"
#include "gproto.h"
#include "extent.h"
#include "utest.h"

/* ------------------------------------------------------------ helpers ---- */

/* ------------------------------------------------------------- header ---- */

static void test_header(void)
{
    gp_hdr h = {GP_MAGIC, GP_VERSION, GP_OP_IO_WRITE, 0x0102030405060708ull,
                -1006,    0xA1B2C3D4u};
    uint8_t b[GP_HDR_SIZE];
    memset(b, 0xEE, sizeof(b));
    gp_hdr_encode(&h, b);
    static const uint8_t want[GP_HDR_SIZE] = {
        'G',        'L',  'A',  'Y',                          /* magic   */
        GP_VERSION, 0,                                        /* version */
        41,         0,                                        /* opcode  */
        0x08,       0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* reqid   */
        0x12,       0xFC, 0xFF, 0xFF,                         /* -1006   */
        0xD4,       0xC3, 0xB2, 0xA1,                         /* length  */
    };
    CHECK(memcmp(b, want, GP_HDR_SIZE) == 0);

    gp_hdr d;
    memset(&d, 0, sizeof(d));
    gp_hdr_decode(b, &d);
    CHECK_EQ(d.magic, GP_MAGIC);
    CHECK_EQ(d.version, GP_VERSION);
    CHECK_EQ(d.opcode, GP_OP_IO_WRITE);
    CHECK(d.reqid == 0x0102030405060708ull);
    CHECK_EQ(d.status, -1006);
    CHECK(d.length == 0xA1B2C3D4u);

    /* Extremes and random values round-trip. */
    for (int i = 0; i < 1000; i++) {
        gp_hdr a = {(uint32_t)utest_rnd(),          (uint16_t)utest_rnd(),
                    (uint16_t)utest_rnd(),          utest_rnd(),
                    (int32_t)(uint32_t)utest_rnd(), (uint32_t)utest_rnd()};
        if (i == 0)
            a = (gp_hdr){0, 0, 0, 0, 0, 0};
        if (i == 1)
            a = (gp_hdr){UINT32_MAX, UINT16_MAX, UINT16_MAX,
                         UINT64_MAX, INT32_MIN,  UINT32_MAX};
        if (i == 2)
            a.status = INT32_MAX;
        gp_hdr_encode(&a, b);
        gp_hdr_decode(b, &d);
        CHECK(d.magic == a.magic && d.version == a.version &&
              d.opcode == a.opcode && d.reqid == a.reqid &&
              d.status == a.status && d.length == a.length);
    }
}

static void test_opnames(void)
{
#define T_OPNAME(name, code, doc)                                              \
    CHECK(gp_opname(code) && strcmp(gp_opname(code), #name) == 0);             \
    CHECK_EQ(GP_OP_##name, code);
    GP_OPCODES(T_OPNAME)
#undef T_OPNAME
    CHECK(gp_opname(0) == NULL);
    CHECK(gp_opname(9999) == NULL);
    CHECK(gp_opname(65535) == NULL);
}

/* The same-host socket's address: NUL, then a name made of the numeric
 * address as printed. */
static void test_local_addr(void)
{
    struct sockaddr_un sa;
    long long base = (long long)offsetof(struct sockaddr_un, sun_path) + 1;
    CHECK_EQ(gp_local_addr(&sa, "127.0.0.1:40123"), base + 23);
    CHECK_EQ(sa.sun_family, AF_UNIX);
    CHECK_EQ(sa.sun_path[0], 0);
    CHECK(memcmp(sa.sun_path + 1, "galleyd@127.0.0.1:40123", 23) == 0);
    CHECK_EQ(gp_local_addr(&sa, "[::1]:7"), base + 15);
    CHECK(memcmp(sa.sun_path + 1, "galleyd@[::1]:7", 15) == 0);
    CHECK_EQ(gp_local_addr(&sa, "*:7"), base + 11);
    /* NUL + "galleyd@" + 99 bytes fill the 108 of sun_path exactly */
    char host[200];
    memset(host, 'h', sizeof(host));
    host[99] = 0;
    CHECK_EQ(gp_local_addr(&sa, host), base + 107);
    host[99] = 'h';
    host[100] = 0;
    CHECK_EQ(gp_local_addr(&sa, host), -1);
}

/* --------------------------------------------------------- integers ---- */

static void test_ints(void)
{
    gp_wbuf w;
    gp_wbuf_init(&w);
    gp_put_u8(&w, 0xAB);
    gp_put_u16(&w, 0x1234);
    gp_put_u32(&w, 0xDEADBEEFu);
    gp_put_u64(&w, 0x0011223344556677ull);
    gp_put_u8(&w, 0);
    gp_put_u16(&w, UINT16_MAX);
    gp_put_u32(&w, UINT32_MAX);
    gp_put_u64(&w, UINT64_MAX);
    CHECK_EQ(w.err, 0);
    CHECK_EQ(w.len, 1 + 2 + 4 + 8 + 1 + 2 + 4 + 8);
    static const uint8_t want[15] = {0xAB, 0x34, 0x12, 0xEF, 0xBE,
                                     0xAD, 0xDE, 0x77, 0x66, 0x55,
                                     0x44, 0x33, 0x22, 0x11, 0x00};
    CHECK(memcmp(w.data, want, sizeof(want)) == 0);

    gp_rbuf r;
    gp_rbuf_init(&r, w.data, w.len);
    CHECK_EQ(gp_get_u8(&r), 0xAB);
    CHECK_EQ(gp_get_u16(&r), 0x1234);
    CHECK(gp_get_u32(&r) == 0xDEADBEEFu);
    CHECK(gp_get_u64(&r) == 0x0011223344556677ull);
    CHECK_EQ(gp_remaining(&r), 15);
    CHECK(!gp_done(&r));
    CHECK_EQ(gp_get_u8(&r), 0);
    CHECK_EQ(gp_get_u16(&r), UINT16_MAX);
    CHECK(gp_get_u32(&r) == UINT32_MAX);
    CHECK(gp_get_u64(&r) == UINT64_MAX);
    CHECK(gp_done(&r));
    CHECK_EQ(r.err, 0);

    /* Reading past the end fails, returns zero and the error sticks even
     * for a later read that would fit. */
    CHECK_EQ(gp_get_u8(&r), 0);
    CHECK_EQ(r.err, GFS_EPROTO);
    CHECK(!gp_done(&r));

    uint8_t three[3] = {1, 2, 3};
    gp_rbuf_init(&r, three, sizeof(three));
    CHECK(gp_get_u32(&r) == 0);
    CHECK_EQ(r.err, GFS_EPROTO);
    CHECK_EQ(r.pos, 0); /* nothing consumed by a failed read */
    CHECK_EQ(gp_get_u8(&r), 0);
    CHECK_EQ(gp_get_u16(&r), 0);

    /* Every truncation of a u64 fails. */
    for (size_t n = 0; n < 8; n++) {
        gp_rbuf_init(&r, want, n);
        CHECK(gp_get_u64(&r) == 0 && r.err == GFS_EPROTO);
    }

    /* Random round trips. */
    gp_wbuf_free(&w);
    gp_wbuf_init(&w);
    uint64_t vals[4000];
    for (int i = 0; i < 4000; i++) {
        vals[i] = utest_rnd();
        switch (i % 4) {
        case 0:
            gp_put_u8(&w, (uint8_t)vals[i]);
            break;
        case 1:
            gp_put_u16(&w, (uint16_t)vals[i]);
            break;
        case 2:
            gp_put_u32(&w, (uint32_t)vals[i]);
            break;
        case 3:
            gp_put_u64(&w, vals[i]);
            break;
        }
    }
    CHECK_EQ(w.err, 0);
    CHECK_EQ(w.len, 1000 * (1 + 2 + 4 + 8));
    gp_rbuf_init(&r, w.data, w.len);
    int bad = 0;
    for (int i = 0; i < 4000; i++) {
        uint64_t v = 0, e = 0;
        switch (i % 4) {
        case 0:
            v = gp_get_u8(&r);
            e = (uint8_t)vals[i];
            break;
        case 1:
            v = gp_get_u16(&r);
            e = (uint16_t)vals[i];
            break;
        case 2:
            v = gp_get_u32(&r);
            e = (uint32_t)vals[i];
            break;
        case 3:
            v = gp_get_u64(&r);
            e = vals[i];
            break;
        }
        bad += v != e;
    }
    CHECK_EQ(bad, 0);
    CHECK(gp_done(&r));
    gp_wbuf_free(&w);
    CHECK(w.data == NULL && w.len == 0 && w.cap == 0);
    gp_wbuf_free(NULL); /* NULL-safe */
}

/* -------------------------------------------------- writer limits ---- */

static void test_writer_limits(void)
{
    gp_wbuf w;
    char small[4] = "abc";

    /* A blob larger than any payload is refused before it is copied (the
     * source here is only 4 bytes: a copy would be caught by ASan/valgrind). */
    gp_wbuf_init(&w);
    gp_put_blob(&w, small, GP_MAX_PAYLOAD + 1u);
    CHECK_EQ(w.err, -E2BIG);
    size_t len = w.len;
    /* Errors stick: later puts do nothing. */
    gp_put_u32(&w, 7);
    gp_put_str(&w, "x");
    gp_put_blob(&w, small, 3);
    CHECK_EQ(w.len, len);
    CHECK_EQ(w.err, -E2BIG);
    gp_wbuf_free(&w);

    /* A string longer than a u16 length can say. */
    char *big = malloc(70000);
    CHECK(big != NULL);
    if (!big)
        return;
    memset(big, 'x', 65536);
    big[65536] = '\0';
    gp_wbuf_init(&w);
    gp_put_str(&w, big);
    CHECK_EQ(w.err, -ENAMETOOLONG);
    CHECK_EQ(w.len, 0);
    gp_put_u8(&w, 1);
    CHECK_EQ(w.len, 0);
    gp_wbuf_free(&w);

    /* Exactly UINT16_MAX is fine and round-trips. */
    big[65535] = '\0';
    gp_wbuf_init(&w);
    gp_put_str(&w, big);
    CHECK_EQ(w.err, 0);
    CHECK_EQ(w.len, 2 + 65535);
    gp_rbuf r;
    gp_rbuf_init(&r, w.data, w.len);
    char *out = malloc(65536);
    if (out) {
        gp_get_str(&r, out, 65535);
        CHECK_EQ(r.err, 0);
        CHECK(gp_done(&r));
        CHECK(strcmp(out, big) == 0);
        /* ... but not into a smaller limit. */
        gp_rbuf_init(&r, w.data, w.len);
        gp_get_str(&r, out, 65534);
        CHECK(r.err != 0);
        CHECK(out[0] == '\0');
        free(out);
    }
    gp_wbuf_free(&w);
    free(big);

    /* The buffer grows across many reallocations without corrupting. */
    gp_wbuf_init(&w);
    for (uint32_t i = 0; i < 100000; i++)
        gp_put_u32(&w, i);
    CHECK_EQ(w.err, 0);
    gp_rbuf_init(&r, w.data, w.len);
    int bad = 0;
    for (uint32_t i = 0; i < 100000; i++)
        bad += gp_get_u32(&r) != i;
    CHECK_EQ(bad, 0);
    CHECK(gp_done(&r));
    gp_wbuf_free(&w);
}

/* ---------------------------------------------------------- strings ---- */

static void test_strings(void)
{
    gp_wbuf w;
    gp_rbuf r;
    char out[GFS_NAME_MAX + 1];

    const char *cases[] = {"",
                           "a",
                           "data",
                           "dir/sub/file.0",
                           "\xc3\xa9t\xc3\xa9 utf-8",
                           "with space\tand tab"};
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        gp_wbuf_init(&w);
        gp_put_str(&w, cases[i]);
        CHECK_EQ(w.err, 0);
        CHECK_EQ(w.len, 2 + strlen(cases[i]));
        CHECK_EQ(w.data[0] | (w.data[1] << 8), strlen(cases[i]));
        gp_rbuf_init(&r, w.data, w.len);
        memset(out, 'Z', sizeof(out));
        gp_get_str(&r, out, GFS_NAME_MAX);
        CHECK_EQ(r.err, 0);
        CHECK(gp_done(&r));
        CHECK(strcmp(out, cases[i]) == 0);
        gp_wbuf_free(&w);
    }

    /* Name of exactly the maximum length; one byte more is rejected. */
    char name[GFS_NAME_MAX + 2];
    memset(name, 'n', sizeof(name));
    name[GFS_NAME_MAX] = '\0';
    gp_wbuf_init(&w);
    gp_put_str(&w, name);
    gp_rbuf_init(&r, w.data, w.len);
    gp_get_str(&r, out, GFS_NAME_MAX);
    CHECK_EQ(r.err, 0);
    CHECK(strcmp(out, name) == 0);
    gp_wbuf_free(&w);

    name[GFS_NAME_MAX] = 'n';
    name[GFS_NAME_MAX + 1] = '\0';
    gp_wbuf_init(&w);
    gp_put_str(&w, name);
    CHECK_EQ(w.err, 0); /* the writer allows it; the reader's limit decides */
    gp_rbuf_init(&r, w.data, w.len);
    memset(out, 'Z', sizeof(out));
    gp_get_str(&r, out, GFS_NAME_MAX);
    CHECK_EQ(r.err, -ENAMETOOLONG);
    CHECK(out[0] == '\0');
    gp_wbuf_free(&w);

    /* Oversized length prefix with few bytes behind it: rejected on the
     * limit, nothing read out of bounds. */
    uint8_t huge[4] = {0xFF, 0xFF, 'a', 'b'};
    gp_rbuf_init(&r, huge, sizeof(huge));
    gp_get_str(&r, out, GFS_NAME_MAX);
    CHECK(r.err != 0);
    CHECK(out[0] == '\0');

    /* Embedded NUL. */
    uint8_t nul[6] = {4, 0, 'a', '\0', 'b', 'c'};
    gp_rbuf_init(&r, nul, sizeof(nul));
    gp_get_str(&r, out, GFS_NAME_MAX);
    CHECK_EQ(r.err, GFS_EPROTO);
    CHECK(out[0] == '\0');
    uint8_t nul_end[3] = {1, 0, '\0'};
    gp_rbuf_init(&r, nul_end, sizeof(nul_end));
    gp_get_str(&r, out, GFS_NAME_MAX);
    CHECK_EQ(r.err, GFS_EPROTO);

    /* Truncated: at every length short of the whole string. */
    uint8_t ok[7] = {5, 0, 'h', 'e', 'l', 'l', 'o'};
    for (size_t n = 0; n < sizeof(ok); n++) {
        gp_rbuf_init(&r, ok, n);
        gp_get_str(&r, out, GFS_NAME_MAX);
        CHECK_MSG(r.err == GFS_EPROTO, "truncated at %zu", n);
        CHECK(out[0] == '\0');
    }
    gp_rbuf_init(&r, ok, sizeof(ok));
    gp_get_str(&r, out, GFS_NAME_MAX);
    CHECK(r.err == 0 && strcmp(out, "hello") == 0);

    /* A failed read leaves later reads failing (sticky). */
    gp_rbuf_init(&r, nul, sizeof(nul));
    gp_get_str(&r, out, GFS_NAME_MAX);
    CHECK_EQ(gp_get_u8(&r), 0);
    CHECK(r.err != 0);
}

/* ------------------------------------------------------------ blobs ---- */

static void test_blobs(void)
{
    gp_wbuf w;
    gp_rbuf r;
    uint32_t n;
    uint8_t data[1000];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 7 + 3);
    data[10] = 0; /* blobs may hold NULs */

    uint32_t sizes[] = {0, 1, 999, 1000};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
        gp_wbuf_init(&w);
        gp_put_blob(&w, data, sizes[i]);
        gp_put_u8(&w, 0x5A); /* trailing field still readable */
        CHECK_EQ(w.err, 0);
        CHECK_EQ(w.len, 4 + sizes[i] + 1);
        gp_rbuf_init(&r, w.data, w.len);
        const uint8_t *p = gp_get_blob(&r, &n, 1000);
        CHECK_EQ(r.err, 0);
        CHECK_EQ(n, sizes[i]);
        CHECK(n == 0 || memcmp(p, data, n) == 0);
        /* no copy: points inside the buffer */
        CHECK(n == 0 || p == w.data + 4);
        CHECK_EQ(gp_get_u8(&r), 0x5A);
        CHECK(gp_done(&r));
        gp_wbuf_free(&w);
    }

    /* Over the caller's limit. */
    gp_wbuf_init(&w);
    gp_put_blob(&w, data, 1000);
    gp_rbuf_init(&r, w.data, w.len);
    const uint8_t *p = gp_get_blob(&r, &n, 999);
    CHECK(p == NULL);
    CHECK_EQ(n, 0);
    CHECK_EQ(r.err, GFS_EPROTO);

    /* Truncated at every length. */
    for (size_t len = 0; len < w.len; len++) {
        gp_rbuf_init(&r, w.data, len);
        p = gp_get_blob(&r, &n, 1000);
        CHECK_MSG(p == NULL && n == 0 && r.err == GFS_EPROTO,
                  "truncated at %zu", len);
    }
    gp_wbuf_free(&w);

    /* A 4 GB length claimed by a 6-byte buffer. */
    uint8_t lie[6] = {0xFF, 0xFF, 0xFF, 0xFF, 1, 2};
    gp_rbuf_init(&r, lie, sizeof(lie));
    p = gp_get_blob(&r, &n, UINT32_MAX);
    CHECK(p == NULL && n == 0 && r.err == GFS_EPROTO);
}

/* ---------------------------------------------------------- records ---- */

static gp_record *rec_new(uint32_t nsub, const char *attrs)
{
    gp_record *rec = calloc(1, sizeof(*rec));
    if (!rec)
        abort();
    rec->nsub = nsub;
    for (uint32_t i = 0; i < nsub && i < GP_MAX_SUBFILES; i++) {
        rec->server[i] = (uint32_t)utest_rnd();
        rec->hid[i] = utest_rnd();
    }
    size_t n = strlen(attrs);
    memcpy(rec->attrs, attrs, n + 1);
    rec->attrlen = (uint32_t)n;
    return rec;
}

static bool rec_equal(const gp_record *a, const gp_record *b)
{
    if (a->nsub != b->nsub || a->attrlen != b->attrlen)
        return false;
    for (uint32_t i = 0; i < a->nsub; i++)
        if (a->server[i] != b->server[i] || a->hid[i] != b->hid[i])
            return false;
    return memcmp(a->attrs, b->attrs, a->attrlen) == 0 &&
           b->attrs[b->attrlen] == '\0';
}

/* A replicated record (gp_repl): round trip, every prefix rejected, and
 * the values a decoder must refuse. */
static void test_records_repl(void)
{
    gp_record *rec = rec_new(5, "k=v\n"), *out = calloc(1, sizeof(*out));
    gp_repl_single(rec);
    rec->repl.ncopy = 3;
    rec->repl.gen = 42;
    for (uint32_t s = 0; s < rec->nsub; s++)
        for (int c = 1; c < 3; c++) {
            rec->repl.server[s][c] = (uint32_t)utest_rnd();
            rec->repl.hid[s][c] = utest_rnd();
            rec->repl.dsid[s][c] = utest_rnd();
            rec->repl.state[s][c] = (uint8_t)((s + (uint32_t)c) % 2);
        }
    gp_wbuf w;
    gp_rbuf r;
    gp_wbuf_init(&w);
    gp_put_record(&w, rec);
    CHECK_EQ(w.err, 0);
    CHECK_EQ(w.len, 4 + 12 * 5 + 4 + 4 + 1 + 8 + 5 * 3 * 21);
    gp_rbuf_init(&r, w.data, w.len);
    gp_get_record(&r, out);
    CHECK(r.err == 0 && gp_done(&r));
    CHECK(rec_equal(rec, out));
    CHECK(out->repl.ncopy == 3 && out->repl.gen == 42);
    CHECK(memcmp(out->repl.server, rec->repl.server,
                 5 * sizeof(*rec->repl.server)) == 0);
    CHECK(memcmp(out->repl.hid, rec->repl.hid, 5 * sizeof(*rec->repl.hid)) ==
          0);
    CHECK(memcmp(out->repl.dsid, rec->repl.dsid, 5 * sizeof(*rec->repl.dsid)) ==
          0);
    CHECK(memcmp(out->repl.state, rec->repl.state,
                 5 * sizeof(*rec->repl.state)) == 0);
    int accepted = 0;
    for (size_t len = 0; len < w.len; len++) {
        gp_rbuf_init(&r, w.data, len);
        gp_get_record(&r, out);
        accepted += r.err == 0;
    }
    CHECK_EQ(accepted, 0);
    gp_wbuf_free(&w);

    /* a state past GP_COPY_STALE, ncopy 0 or 4, copy 0 not the record's */
    for (int bad = 0; bad < 4; bad++) {
        gp_record *b = calloc(1, sizeof(*b));
        *b = *rec;
        if (bad == 0)
            b->repl.state[2][1] = 7;
        gp_wbuf_init(&w);
        gp_put_record(&w, b);
        if (bad == 1) /* subfile 1, copy 0: its header (21 bytes a copy) */
            w.data[4 + 12 * 5 + 4 + 4 + 1 + 8 + 3 * 21 + 4] ^= 1;
        if (bad == 2)
            w.data[4 + 12 * 5 + 4 + 4] = 0; /* ncopy */
        if (bad == 3)
            w.data[4 + 12 * 5 + 4 + 4] = 4;
        gp_rbuf_init(&r, w.data, w.len);
        gp_get_record(&r, out);
        CHECK_MSG(r.err != 0, "bad replicated record %d accepted", bad);
        gp_wbuf_free(&w);
        free(b);
    }
    free(rec);
    free(out);
}

static void test_records(void)
{
    gp_wbuf w;
    gp_rbuf r;
    gp_record *out = calloc(1, sizeof(*out));
    char *attrs = malloc(GP_ATTR_MAX + 2);
    if (!out || !attrs)
        abort();

    /* Round trips: nsub 1, typical, maximum; attrs empty, typical, max. */
    memset(attrs, 'a', GP_ATTR_MAX);
    attrs[GP_ATTR_MAX] = '\0';
    struct {
        uint32_t nsub;
        const char *attrs;
    } cases[] = {
        {1, ""},
        {4, "galley.stripe_unit=65536\ngalley.stripe_fork=data\n"},
        {GP_MAX_SUBFILES, "k=v\n"},
        {3, attrs},
        {GP_MAX_SUBFILES, attrs},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        gp_record *rec = rec_new(cases[i].nsub, cases[i].attrs);
        gp_wbuf_init(&w);
        gp_put_record(&w, rec);
        CHECK_EQ(w.err, 0);
        CHECK_EQ(w.len, 4 + 12 * rec->nsub + 4 + rec->attrlen + 1);
        gp_rbuf_init(&r, w.data, w.len);
        memset(out, 0x55, sizeof(*out));
        gp_get_record(&r, out);
        CHECK_MSG(r.err == 0 && gp_done(&r), "case %zu err %d", i, r.err);
        CHECK_MSG(rec_equal(rec, out), "case %zu", i);

        /* Every strict prefix is rejected. */
        int accepted = 0;
        for (size_t len = 0; len < w.len; len++) {
            gp_rbuf_init(&r, w.data, len);
            gp_get_record(&r, out);
            accepted += r.err == 0;
        }
        CHECK_MSG(accepted == 0, "case %zu: %d truncations accepted", i,
                  accepted);
        gp_wbuf_free(&w);
        free(rec);
    }

    /* nsub 0 and nsub > GP_MAX_SUBFILES are rejected (hand-built: the
     * encoder would write whatever count it is given). */
    uint32_t badn[] = {0, GP_MAX_SUBFILES + 1, UINT32_MAX};
    for (size_t i = 0; i < sizeof(badn) / sizeof(*badn); i++) {
        gp_wbuf_init(&w);
        gp_put_u32(&w, badn[i]);
        for (int k = 0; k < 300; k++) {
            gp_put_u32(&w, 1);
            gp_put_u64(&w, 2);
        }
        gp_put_blob(&w, "", 0);
        gp_rbuf_init(&r, w.data, w.len);
        gp_get_record(&r, out);
        CHECK_MSG(r.err == GFS_EPROTO, "nsub %u", badn[i]);
        gp_wbuf_free(&w);
    }

    /* Attribute text one byte too long. */
    memset(attrs, 'b', GP_ATTR_MAX + 1);
    attrs[GP_ATTR_MAX + 1] = '\0';
    gp_wbuf_init(&w);
    gp_put_u32(&w, 1);
    gp_put_u32(&w, 0);
    gp_put_u64(&w, 42);
    gp_put_blob(&w, attrs, GP_ATTR_MAX + 1);
    gp_rbuf_init(&r, w.data, w.len);
    gp_get_record(&r, out);
    CHECK_EQ(r.err, GFS_EPROTO);
    CHECK_EQ(out->attrlen, 0);
    gp_wbuf_free(&w);

    /* Attribute text with an embedded NUL. */
    gp_wbuf_init(&w);
    gp_put_u32(&w, 1);
    gp_put_u32(&w, 0);
    gp_put_u64(&w, 42);
    gp_put_blob(&w, "a=b\0c=d\n", 8);
    gp_rbuf_init(&r, w.data, w.len);
    gp_get_record(&r, out);
    CHECK_EQ(r.err, GFS_EPROTO);
    gp_wbuf_free(&w);

    /* Two records back to back decode independently. */
    gp_record *a = rec_new(2, "x=1\n"), *b = rec_new(7, "");
    gp_wbuf_init(&w);
    gp_put_record(&w, a);
    gp_put_record(&w, b);
    gp_rbuf_init(&r, w.data, w.len);
    gp_get_record(&r, out);
    CHECK(r.err == 0 && rec_equal(a, out));
    gp_get_record(&r, out);
    CHECK(r.err == 0 && rec_equal(b, out));
    CHECK(gp_done(&r));
    gp_wbuf_free(&w);
    free(a);
    free(b);

    free(attrs);
    free(out);
}

int main(void)
{
    test_header();
    test_opnames();
    test_local_addr();
    test_ints();
    test_writer_limits();
    test_strings();
    test_blobs();
    test_records();
    test_records_repl();
    return utest_exit("test_proto");
}
