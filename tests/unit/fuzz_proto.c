/*
 * fuzz_proto.c -- fuzz target for the wire decoders in proto/gproto.c.
 *
 * LLVMFuzzerTestOneInput decodes arbitrary bytes as a frame header, a file
 * record, a list of segments, a run of primitive fields, a whole request
 * frame (its fields through the request's codec, then its segment lists),
 * or the body of any message in
 * either direction through its codec made from proto/gmsg.h (fuzz_msg.c),
 * and checks invariants: no crash, no
 * read outside the input, a successful decode re-encodes to exactly the
 * bytes consumed, a measured segment expands to the measured number of
 * pieces and bytes, and no expanded piece ends beyond GP_MAX_OFFSET.  A
 * broken invariant calls abort().
 *
 * Two ways to build it:
 *   - with libFuzzer (clang):
 *       clang -g -O1 -fsanitize=fuzzer,address,undefined -DGALLEY_LIBFUZZER \
 *             -Iinclude -Iproto tests/unit/fuzz_proto.c tests/unit/fuzz_msg.c \
 *             proto/gproto.c proto/gcodec.c
 *   - otherwise (the `make check` build): the small driver below runs the
 *     target over GALLEY_FUZZ_ITERS (default 200000) generated inputs --
 *     random bytes, valid encodings, and mutated/truncated valid encodings
 *     -- from seed GALLEY_FUZZ_SEED (default fixed, printed).  Arguments
 *     name files to replay instead (e.g. a crash file from libFuzzer).
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "galley.h"
#include "gproto.h"
#include "extent.h"

#ifndef GALLEY_FUZZ_DEFAULT_ITERS
#define GALLEY_FUZZ_DEFAULT_ITERS 200000
#endif

#define MAX_EXPAND 4096 /* expand only segments up to this many pieces */
#define MAX_SEGS 4096

#define ENSURE(cond)                                                           \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_proto: invariant broken at %s:%d: %s\n",     \
                    __FILE__, __LINE__, #cond);                                \
            abort();                                                           \
        }                                                                      \
    } while (0)

enum {
    MODE_RECORD,
    MODE_SEGMENTS,
    MODE_PRIMS,
    MODE_FRAME,
    MODE_MESSAGE,
    NMODES
};

/* fuzz_msg.c: every message of gmsg.h through its generated decoder. */
void fuzz_msg_check(const uint8_t *data, size_t size);
void fuzz_msg_gen(gp_wbuf *w, uint64_t seed);
int fuzz_msg_request(unsigned op, gp_rbuf *r);

/* ------------------------------------------------------------- checks ---- */

static void check_header(const uint8_t *data, size_t size)
{
    if (size < GP_HDR_SIZE)
        return;
    gp_hdr h;
    uint8_t b[GP_HDR_SIZE];
    gp_hdr_decode(data, &h);
    gp_hdr_encode(&h, b);
    ENSURE(memcmp(b, data, GP_HDR_SIZE) == 0);
}

/* Re-encoding what was decoded from [start, r->pos) gives the same bytes. */
static void check_reencode(const gp_rbuf *r, size_t start, const gp_wbuf *w)
{
    ENSURE(w->err == 0);
    ENSURE(w->len == r->pos - start);
    ENSURE(memcmp(w->data, r->data + start, w->len) == 0);
}

static void check_record(gp_rbuf *r)
{
    static gp_record rec; /* large: keep off the stack */
    size_t start = r->pos;
    gp_get_record(r, &rec);
    if (r->err)
        return;
    ENSURE(rec.nsub >= 1 && rec.nsub <= GP_MAX_SUBFILES);
    ENSURE(rec.attrlen <= GP_ATTR_MAX);
    ENSURE(strlen(rec.attrs) == rec.attrlen);
    gp_wbuf w;
    gp_wbuf_init(&w);
    gp_put_record(&w, &rec);
    check_reencode(r, start, &w);
    gp_wbuf_free(&w);
}

static void check_seg(gp_rbuf *r)
{
    gp_seg s;
    size_t start = r->pos;
    gp_get_seg(r, &s);
    if (r->err)
        return;
    ENSURE(s.kind == GP_SEG_EXTENT || s.kind == GP_SEG_STRIDED);
    ENSURE(s.kind == GP_SEG_EXTENT || (s.nlev >= 1 && s.nlev <= GP_MAX_LEVELS));
    gp_wbuf w;
    gp_wbuf_init(&w);
    gp_put_seg(&w, &s);
    check_reencode(r, start, &w);
    gp_wbuf_free(&w);

    uint64_t np, nb;
    if (!gp_seg_measure(&s, &np, &nb) || np > MAX_EXPAND)
        return;
    gp_ext *p = malloc((np ? np : 1) * sizeof(*p));
    ENSURE(p != NULL);
    uint64_t n = 0, bytes = 0;
    gp_seg_expand(&s, p, &n);
    ENSURE(n == np);
    for (uint64_t i = 0; i < n; i++) {
        ENSURE(p[i].len == s.size);
        ENSURE(p[i].off <= GP_MAX_OFFSET &&
               p[i].len <= GP_MAX_OFFSET - p[i].off);
        bytes += p[i].len;
    }
    ENSURE(bytes == nb);
    free(p);
}

static void check_str(gp_rbuf *r, size_t max)
{
    static char out[UINT16_MAX + 1];
    size_t start = r->pos;
    gp_get_str(r, out, max);
    if (r->err) {
        ENSURE(out[0] == '\0');
        return;
    }
    ENSURE(strlen(out) <= max);
    gp_wbuf w;
    gp_wbuf_init(&w);
    gp_put_str(&w, out);
    check_reencode(r, start, &w);
    gp_wbuf_free(&w);
}

static void check_blob(gp_rbuf *r, uint32_t max)
{
    uint32_t n = 12345;
    const uint8_t *p = gp_get_blob(r, &n, max);
    if (r->err) {
        ENSURE(p == NULL && n == 0);
        return;
    }
    ENSURE(n <= max);
    ENSURE(n == 0 || (p >= r->data && p + n <= r->data + r->len));
}

/* Segment list as a data request carries it: u32 count, then segments. */
static void check_seglist(gp_rbuf *r)
{
    uint32_t nseg = gp_get_u32(r);
    if (r->err || nseg > GP_MAX_SEGMENTS)
        return;
    for (uint32_t i = 0; i < nseg && i < MAX_SEGS && !r->err; i++)
        check_seg(r);
}

/* Decode a request payload with its codec made from gmsg.h (fuzz_msg.c),
 * then the segment lists of its tail. */
static void check_request(unsigned op, gp_rbuf *r)
{
    int lists = fuzz_msg_request(op, r);
    for (int i = 0; i < lists && !r->err; i++)
        check_seglist(r);
    /* Whatever happened, the reader stayed inside its buffer. */
    ENSURE(r->pos <= r->len);
    ENSURE(gp_remaining(r) == r->len - r->pos);
}

/* ------------------------------------------------------------- target ---- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned mode = data[0] % NMODES;
    data++;
    size--;
    check_header(data, size);

    gp_rbuf r;
    gp_rbuf_init(&r, data, size);
    switch (mode) {
    case MODE_RECORD:
        check_record(&r);
        break;
    case MODE_SEGMENTS:
        for (int i = 0; i < MAX_SEGS && !r.err && gp_remaining(&r); i++)
            check_seg(&r);
        break;
    case MODE_PRIMS:
        /* Field kinds chosen by the bytes themselves. */
        while (!r.err && gp_remaining(&r)) {
            switch (gp_get_u8(&r) % 7) {
            case 0:
                check_str(&r, GFS_NAME_MAX);
                break;
            case 1:
                check_str(&r, UINT16_MAX);
                break;
            case 2:
                check_blob(&r, GP_ATTR_MAX);
                break;
            case 3:
                (void)gp_get_u16(&r);
                break;
            case 4:
                (void)gp_get_u32(&r);
                break;
            case 5:
                (void)gp_get_u64(&r);
                break;
            case 6:
                check_blob(&r, UINT32_MAX);
                break;
            }
        }
        break;
    case MODE_FRAME: {
        if (size < GP_HDR_SIZE)
            break;
        gp_hdr h;
        gp_hdr_decode(data, &h);
        size_t plen = size - GP_HDR_SIZE;
        if (h.length < plen)
            plen = h.length;
        gp_rbuf_init(&r, data + GP_HDR_SIZE, plen);
        check_request(h.opcode, &r);
        break;
    }
    case MODE_MESSAGE:
        fuzz_msg_check(data, size);
        break;
    }
    ENSURE(r.pos <= r.len);
    if (r.err)
        ENSURE(r.err < 0);
    return 0;
}

/* ------------------------------------------------------------- driver ---- */

#ifndef GALLEY_LIBFUZZER

static uint64_t rng;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t below(uint64_t n)
{
    return n ? rnd() % n : 0;
}

/* Small values most of the time, any value sometimes. */
static uint64_t interesting_u64(void)
{
    switch (below(8)) {
    case 0:
        return 0;
    case 1:
        return UINT64_MAX;
    case 2:
        return GP_MAX_OFFSET - below(3);
    case 3:
        return rnd();
    default:
        return below(64);
    }
}

static void gen_seg(gp_wbuf *w)
{
    gp_seg s;
    memset(&s, 0, sizeof(s));
    s.kind = below(2) ? GP_SEG_STRIDED : GP_SEG_EXTENT;
    s.off = below(4) ? below(1 << 20) : interesting_u64();
    s.size = below(4) ? below(300) : interesting_u64();
    if (s.kind == GP_SEG_STRIDED) {
        s.nlev = (uint8_t)(1 + below(GP_MAX_LEVELS));
        for (unsigned i = 0; i < s.nlev; i++) {
            s.count[i] = below(5) ? below(4) : interesting_u64();
            s.stride[i] = below(5) ? below(1000) : interesting_u64();
        }
    }
    gp_put_seg(w, &s);
}

static void gen_record(gp_wbuf *w)
{
    static gp_record rec;
    memset(&rec, 0, sizeof(rec));
    rec.nsub = (uint32_t)(below(8) ? 1 + below(8) : 1 + below(GP_MAX_SUBFILES));
    for (uint32_t i = 0; i < rec.nsub; i++) {
        rec.server[i] = (uint32_t)below(GFS_MAX_SERVERS);
        rec.hid[i] = rnd();
    }
    rec.attrlen = (uint32_t)(below(4) ? below(64) : below(GP_ATTR_MAX + 1));
    for (uint32_t i = 0; i < rec.attrlen; i++)
        rec.attrs[i] = (char)(1 + below(126));
    rec.attrs[rec.attrlen] = '\0';
    gp_put_record(w, &rec);
}

static void gen_str(gp_wbuf *w, size_t max)
{
    char s[300];
    size_t n = below(max < sizeof(s) - 1 ? max + 1 : sizeof(s) - 1);
    for (size_t i = 0; i < n; i++)
        s[i] = (char)('a' + below(26));
    s[n] = '\0';
    gp_put_str(w, s);
}

/* A valid input for `mode`, framed as the target expects. */
static void gen_valid(gp_wbuf *w, unsigned mode)
{
    gp_put_u8(w, (uint8_t)(mode + NMODES * below(40)));
    gp_wbuf body;
    gp_wbuf_init(&body);
    unsigned op = 0;
    switch (mode) {
    case MODE_RECORD:
        gen_record(&body);
        break;
    case MODE_SEGMENTS:
        for (uint64_t i = 0, n = 1 + below(8); i < n; i++)
            gen_seg(&body);
        break;
    case MODE_PRIMS:
        for (uint64_t i = 0, n = below(10); i < n; i++) {
            unsigned k = (unsigned)below(7);
            gp_put_u8(&body, (uint8_t)k);
            switch (k) {
            case 0:
                gen_str(&body, GFS_NAME_MAX);
                break;
            case 1:
                gen_str(&body, 299);
                break;
            case 2:
            case 6: {
                uint8_t b[64];
                for (size_t j = 0; j < sizeof(b); j++)
                    b[j] = (uint8_t)rnd();
                gp_put_blob(&body, b, (uint32_t)below(sizeof(b)));
                break;
            }
            case 3:
                gp_put_u16(&body, (uint16_t)rnd());
                break;
            case 4:
                gp_put_u32(&body, (uint32_t)rnd());
                break;
            case 5:
                gp_put_u64(&body, rnd());
                break;
            }
        }
        break;
    case MODE_FRAME: {
        static const unsigned ops[] = {
            GP_OP_PING,          GP_OP_NS_RESERVE, GP_OP_NS_COMMIT,
            GP_OP_NS_SETATTR,    GP_OP_SUB_CREATE, GP_OP_FORK_OPEN,
            GP_OP_FORK_TRUNCATE, GP_OP_IO_READ,    GP_OP_IO_WRITE,
            GP_OP_FETCH_ADD,     GP_OP_LOCK,       GP_OP_FORK_CLOSE};
        op = ops[below(sizeof(ops) / sizeof(*ops))];
        switch (op) {
        case GP_OP_NS_RESERVE:
            gen_str(&body, GFS_NAME_MAX);
            break;
        case GP_OP_NS_COMMIT:
            gen_str(&body, GFS_NAME_MAX);
            gen_record(&body);
            break;
        case GP_OP_NS_SETATTR:
            gen_str(&body, GFS_NAME_MAX);
            gp_put_blob(&body, "galley.stripe_unit=200\n", 23);
            break;
        case GP_OP_SUB_CREATE:
            gen_str(&body, GFS_NAME_MAX);
            gp_put_u32(&body, (uint32_t)below(8));
            break;
        case GP_OP_FORK_OPEN:
            gp_put_u64(&body, rnd());
            gen_str(&body, GFS_FORK_NAME_MAX);
            break;
        case GP_OP_FORK_TRUNCATE:
            gp_put_u64(&body, rnd());
            gp_put_u64(&body, interesting_u64());
            break;
        case GP_OP_IO_READ:
        case GP_OP_IO_WRITE: {
            uint32_t n = (uint32_t)below(6);
            gp_put_u64(&body, rnd());
            gp_put_u32(&body, n);
            for (uint32_t i = 0; i < n; i++)
                gen_seg(&body);
            break;
        }
        case GP_OP_FETCH_ADD:
            gp_put_u64(&body, rnd());
            gen_str(&body, 63);
            gp_put_u64(&body, rnd());
            break;
        case GP_OP_LOCK:
            for (int i = 0; i < 3; i++)
                gp_put_u64(&body, interesting_u64());
            gp_put_u8(&body, (uint8_t)below(2));
            break;
        default:
            gp_put_u64(&body, rnd());
            break;
        }
        break;
    }
    case MODE_MESSAGE:
        fuzz_msg_gen(&body, rnd());
        break;
    }
    gp_hdr h = {GP_MAGIC, GP_VERSION, (uint16_t)op,
                rnd(),    0,          (uint32_t)body.len};
    uint8_t hb[GP_HDR_SIZE];
    gp_hdr_encode(&h, hb);
    if (mode == MODE_FRAME)
        for (int i = 0; i < GP_HDR_SIZE; i++)
            gp_put_u8(w, hb[i]);
    for (size_t i = 0; i < body.len; i++)
        gp_put_u8(w, body.data[i]);
    gp_wbuf_free(&body);
}

static void run_buf(const uint8_t *p, size_t n)
{
    /* An exact-size heap copy, so a sanitizer or valgrind sees any read
     * past the end. */
    uint8_t *copy = malloc(n ? n : 1);
    if (!copy)
        abort();
    memcpy(copy, p, n);
    LLVMFuzzerTestOneInput(copy, n);
    free(copy);
}

static int replay(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz_proto: cannot open %s: %s\n", path,
                strerror(errno));
        return 1;
    }
    static uint8_t buf[1 << 20];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    run_buf(buf, n);
    printf("fuzz_proto: %s: ok (%zu bytes)\n", path, n);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        int rc = 0;
        for (int i = 1; i < argc; i++)
            rc |= replay(argv[i]);
        return rc;
    }
    const char *e = getenv("GALLEY_FUZZ_ITERS");
    long iters = e ? atol(e) : GALLEY_FUZZ_DEFAULT_ITERS;
    e = getenv("GALLEY_FUZZ_SEED");
    uint64_t seed = e ? strtoull(e, NULL, 0) : 0x5EEDC0DEu;
    rng = seed ? seed : 1;

    uint8_t *buf = malloc(1 << 16);
    if (!buf)
        return 1;
    long kinds[4] = {0};
    for (long it = 0; it < iters; it++) {
        size_t n = 0;
        unsigned kind = (unsigned)below(4);
        kinds[kind]++;
        if (kind == 0) {
            /* Pure noise, with a bias toward short inputs. */
            n = (size_t)below(below(4) ? 64 : 1024);
            for (size_t i = 0; i < n; i++)
                buf[i] = (uint8_t)rnd();
        } else {
            gp_wbuf w;
            gp_wbuf_init(&w);
            gen_valid(&w, (unsigned)below(NMODES));
            n = w.len < (1 << 15) ? w.len : (1 << 15);
            memcpy(buf, w.data, n);
            gp_wbuf_free(&w);
            if (kind == 2 && n > 1) {
                /* Mutate: flip, overwrite with an extreme, or set a byte. */
                for (uint64_t k = 0, m = 1 + below(4); k < m; k++) {
                    size_t at = 1 + (size_t)below(n - 1);
                    switch (below(3)) {
                    case 0:
                        buf[at] ^= (uint8_t)(1u << below(8));
                        break;
                    case 1:
                        buf[at] = below(2) ? 0xFF : 0x00;
                        break;
                    default:
                        buf[at] = (uint8_t)rnd();
                        break;
                    }
                }
            } else if (kind == 3) {
                /* Truncate, or extend with noise. */
                if (below(2) && n)
                    n = (size_t)below(n);
                else
                    for (uint64_t k = 0, m = below(32); k < m && n < (1 << 16);
                         k++)
                        buf[n++] = (uint8_t)rnd();
            }
        }
        run_buf(buf, n);
    }
    free(buf);
    printf("fuzz_proto: %ld inputs (noise %ld, valid %ld, mutated %ld, "
           "cut/extended %ld), seed 0x%llx: ok\n",
           iters, kinds[0], kinds[1], kinds[2], kinds[3],
           (unsigned long long)seed);
    return 0;
}

#endif /* GALLEY_LIBFUZZER */
