/*
 * test_msg.c -- the message codecs made from proto/gmsg.h, for every
 * message and direction, by iterating the table (no server): a filled
 * struct encodes and decodes to the same fields; every truncation of its
 * encoding is an error, not a crash; a byte too many is an error unless the
 * message ends in a tail.  Then the limits each field kind checks, and the
 * exact wire bytes of some messages as gproto.h documents them (the bytes
 * the hand-written codecs produced before the table existed).
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "msg_sample.h"
#include "utest.h"

#define SEEDS 40 /* filled structs per message and direction */

static sample x, y; /* large: not on the stack */

static const char *dirname_(enum gp_dir d)
{
    return d == GP_REQ ? "request" : "reply";
}

/* Round trip, truncation, one byte more: one message, one direction. */
static void round_trip(size_t k, enum gp_dir dir, uint64_t seed)
{
    const char *name = sample_names[k];
    sample_fill(&x, k, dir, &seed);
    CHECK_MSG(gp_msg_size(x.op, dir) <= sizeof(x.msg), "%s %s", name,
              dirname_(dir));
    gp_wbuf w;
    gp_wbuf_init(&w);
    CHECK_MSG(sample_encode(&w, &x) == 0, "%s %s encodes", name, dirname_(dir));

    gp_rbuf r;
    gp_rbuf_init(&r, w.data, w.len);
    int rc = sample_decode(&r, x.op, dir, &y);
    CHECK_MSG(rc == 0, "%s %s decodes (%d)", name, dirname_(dir), rc);
    CHECK_MSG(r.pos == w.len, "%s %s: all %zu bytes read", name, dirname_(dir),
              w.len);
    CHECK_MSG(sample_eq(&x, &y), "%s %s: same fields after the round trip",
              name, dirname_(dir));

    /* the decoded struct encodes to the same bytes */
    gp_wbuf w2;
    gp_wbuf_init(&w2);
    sample_encode(&w2, &y);
    CHECK_MSG(w2.len == w.len && memcmp(w2.data, w.data, w.len) == 0,
              "%s %s re-encodes identically", name, dirname_(dir));
    gp_wbuf_free(&w2);

    /* every truncation fails, in an exact-size copy (ASan sees overreads) */
    for (size_t cut = 0; cut < w.len; cut++) {
        uint8_t *p = malloc(cut ? cut : 1);
        memcpy(p, w.data, cut);
        gp_rbuf_init(&r, p, cut);
        rc = sample_decode(&r, x.op, dir, &y);
        CHECK_MSG(rc < 0, "%s %s cut to %zu of %zu bytes: %d", name,
                  dirname_(dir), cut, w.len, rc);
        CHECK(r.pos <= cut);
        free(p);
    }

    /* one byte more: an error, unless it can be the tail's */
    gp_put_u8(&w, 0x5a);
    gp_rbuf_init(&r, w.data, w.len);
    rc = sample_decode(&r, x.op, dir, &y);
    if (x.tail)
        CHECK_MSG(rc == 0 && gp_remaining(&r) == 1, "%s %s: tail left", name,
                  dirname_(dir));
    else
        CHECK_MSG(rc == GFS_EPROTO, "%s %s with a byte too many: %d", name,
                  dirname_(dir), rc);
    gp_wbuf_free(&w);
}

static void test_every_message(void)
{
    for (size_t k = 0; k < SAMPLE_NOPS; k++)
        for (int d = GP_REQ; d <= GP_REP; d++)
            for (uint64_t s = 1; s <= SEEDS; s++)
                round_trip(k, (enum gp_dir)d, s * 0x9E3779B97F4A7C15ull + k);
    CHECK_EQ(gp_msg_encode(NULL, 9999, GP_REQ, NULL), -ENOSYS);
    gp_rbuf r;
    gp_rbuf_init(&r, "", 0);
    CHECK_EQ(gp_msg_decode(&r, 0, GP_REP, NULL), -ENOSYS);
}

/* ------------------------------------------------------------ limits ---- */

static int decode_bytes(unsigned op, enum gp_dir dir, const void *p, size_t n)
{
    gp_rbuf r;
    gp_rbuf_init(&r, p, n);
    return sample_decode(&r, op, dir, &y);
}

static void test_limits(void)
{
    gp_wbuf w;
    char name[GFS_FORK_NAME_MAX + 2];

    /* str: a fork name of GFS_FORK_NAME_MAX bytes passes, one more not */
    memset(name, 'f', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    gp_wbuf_init(&w);
    gp_FORK_OPEN_req_encode(&w, &(gp_FORK_OPEN_req){.hid = 7, .fork = name});
    CHECK_EQ(decode_bytes(GP_OP_FORK_OPEN, GP_REQ, w.data, w.len),
             -ENAMETOOLONG);
    gp_wbuf_free(&w);
    name[GFS_FORK_NAME_MAX] = '\0';
    gp_wbuf_init(&w);
    gp_FORK_OPEN_req_encode(&w, &(gp_FORK_OPEN_req){.hid = 7, .fork = name});
    CHECK_EQ(decode_bytes(GP_OP_FORK_OPEN, GP_REQ, w.data, w.len), 0);
    gp_FORK_OPEN_req *m = (void *)y.msg;
    CHECK(m->hid == 7 && strcmp(m->fork, name) == 0);
    CHECK(m->fork == m->fork_buf);
    /* a NUL inside a string */
    w.data[8 + 2 + 3] = 0;
    CHECK_EQ(decode_bytes(GP_OP_FORK_OPEN, GP_REQ, w.data, w.len), GFS_EPROTO);
    gp_wbuf_free(&w);

    /* name: no name (empty, or with a newline) is -EINVAL, whatever
     * message carries it; a name passes */
    static const char *const bad[] = {"", "/a\nb", "\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        gp_wbuf_init(&w);
        gp_NS_LOOKUP_req_encode(&w, &(gp_NS_LOOKUP_req){.name = bad[i]});
        CHECK_EQ(decode_bytes(GP_OP_NS_LOOKUP, GP_REQ, w.data, w.len), -EINVAL);
        gp_wbuf_free(&w);
        gp_wbuf_init(&w);
        gp_FORK_DELETE_req_encode(
            &w, &(gp_FORK_DELETE_req){.hid = 1, .fork = bad[i]});
        CHECK_EQ(decode_bytes(GP_OP_FORK_DELETE, GP_REQ, w.data, w.len),
                 -EINVAL);
        gp_wbuf_free(&w);
    }
    gp_wbuf_init(&w);
    gp_NS_LOOKUP_req_encode(&w, &(gp_NS_LOOKUP_req){.name = "/a b\tc"});
    CHECK_EQ(decode_bytes(GP_OP_NS_LOOKUP, GP_REQ, w.data, w.len), 0);
    gp_wbuf_free(&w);

    /* blob: over its limit */
    uint8_t big[GP_ATTR_MAX + 1] = {0};
    gp_wbuf_init(&w);
    gp_NS_SETATTR_req_encode(
        &w, &(gp_NS_SETATTR_req){
                .name = "/a", .attrs = big, .attrs_len = sizeof(big)});
    CHECK_EQ(decode_bytes(GP_OP_NS_SETATTR, GP_REQ, w.data, w.len), GFS_EPROTO);
    gp_wbuf_free(&w);
    gp_wbuf_init(&w);
    gp_AUTH_req_encode(&w, &(gp_AUTH_req){.cnonce = big, .cnonce_len = 33});
    CHECK_EQ(decode_bytes(GP_OP_AUTH, GP_REQ, w.data, w.len), GFS_EPROTO);
    gp_wbuf_free(&w);

    /* rec: no subfiles; and no storage to decode into */
    gp_record *rec = calloc(1, sizeof(*rec));
    gp_wbuf_init(&w);
    gp_NS_LOOKUP_rep_encode(&w, &(gp_NS_LOOKUP_rep){.rec = rec});
    CHECK_EQ(decode_bytes(GP_OP_NS_LOOKUP, GP_REP, w.data, w.len), GFS_EPROTO);
    gp_rbuf r;
    gp_rbuf_init(&r, w.data, w.len);
    gp_NS_LOOKUP_rep nostore = {0};
    CHECK_EQ(gp_NS_LOOKUP_rep_decode(&r, &nostore), -EINVAL);
    gp_wbuf_free(&w);
    free(rec);

    /* list: a count over the limit, or over what the bytes can hold */
    gp_wbuf_init(&w);
    gp_NS_LIST_rep_encode(&w, &(gp_NS_LIST_rep){.n = GP_MAX_NAMES + 1});
    for (int i = 0; i < 8; i++)
        gp_put_u8(&w, 0);
    gp_rbuf_init(&r, w.data, w.len);
    gp_NS_LIST_rep l;
    CHECK_EQ(gp_NS_LIST_rep_decode(&r, &l), GFS_EPROTO);
    gp_wbuf_free(&w);
    gp_wbuf_init(&w);
    gp_FORK_LIST_rep_encode(&w, &(gp_FORK_LIST_rep){.n = 3});
    for (int i = 0; i < 2 * 10 - 1; i++) /* 3 items need >= 30 bytes */
        gp_put_u8(&w, 0);
    gp_rbuf_init(&r, w.data, w.len);
    gp_FORK_LIST_rep fl;
    CHECK_EQ(gp_FORK_LIST_rep_decode(&r, &fl), GFS_EPROTO);
    gp_wbuf_free(&w);

    /* a string too long to encode at all leaves the writer's error */
    char *huge = malloc(70000);
    memset(huge, 'x', 69999);
    huge[69999] = '\0';
    gp_wbuf_init(&w);
    gp_NS_RESERVE_req_encode(&w, &(gp_NS_RESERVE_req){.name = huge});
    CHECK_EQ(w.err, -ENAMETOOLONG);
    gp_wbuf_free(&w);
    free(huge);
}

/* ------------------------------------------------------- wire bytes ---- */

static void expect(const gp_wbuf *w, const uint8_t *want, size_t n,
                   const char *what)
{
    CHECK_MSG(w->err == 0 && w->len == n && memcmp(w->data, want, n) == 0,
              "%s: the bytes gproto.h documents", what);
}

static void test_wire_bytes(void)
{
    gp_wbuf w;

    gp_wbuf_init(&w);
    gp_FORK_OPEN_req_encode(
        &w, &(gp_FORK_OPEN_req){.hid = 0x0102030405060708, .fork = "data"});
    static const uint8_t fork_open[] = {8, 7, 6, 5,   4,   3,   2,
                                        1, 4, 0, 'd', 'a', 't', 'a'};
    expect(&w, fork_open, sizeof(fork_open), "FORK_OPEN request");
    gp_wbuf_free(&w);

    gp_wbuf_init(&w);
    gp_LOCK_req_encode(
        &w,
        &(gp_LOCK_req){.hid = 1, .off = 0x100, .len = UINT64_MAX, .excl = 1});
    static const uint8_t lock[] = {
        1, 0, 0, 0,    0,    0,    0,    0,    0,    1,    0,    0, 0,
        0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1};
    expect(&w, lock, sizeof(lock), "LOCK request");
    gp_wbuf_free(&w);

    gp_wbuf_init(&w);
    gp_PLOCK_req_encode(&w, &(gp_PLOCK_req){.hid = 1,
                                            .owner = 0x0102,
                                            .off = 0x10,
                                            .len = 0,
                                            .type = GP_PLOCK_EXCL,
                                            .flags = GP_PLOCK_WAIT,
                                            .pid = 0xffffffffu});
    static const uint8_t plock[] = {
        1, 0, 0, 0, 0, 0, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0,    0x10, 0,    0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1, 0xff, 0xff, 0xff, 0xff};
    expect(&w, plock, sizeof(plock), "PLOCK request");
    gp_wbuf_free(&w);

    gp_wbuf_init(&w);
    gp_PING_rep_encode(&w, &(gp_PING_rep){.version = GP_VERSION,
                                          .data_limit = 1u << 25,
                                          .pid = 0x1234});
    static const uint8_t ping[] = {GP_VERSION, 0,    0,    0, 0, 2, 0, 0, 0,
                                   0,          0x34, 0x12, 0, 0, 0, 0, 0, 0};
    expect(&w, ping, sizeof(ping), "PING reply");
    gp_wbuf_free(&w);

    /* a checksummed write: fkid, the data's CRC32C, then the segs tail */
    gp_wbuf_init(&w);
    gp_IO_CWRITE_req_encode(
        &w, &(gp_IO_CWRITE_req){.fkid = 0x0102, .crc = 0x11223344});
    static const uint8_t cwrite[] = {2, 1, 0,    0,    0,    0,
                                     0, 0, 0x44, 0x33, 0x22, 0x11};
    expect(&w, cwrite, sizeof(cwrite), "IO_CWRITE request");
    gp_wbuf_free(&w);

    gp_wbuf_init(&w);
    gp_FETCH_ADD_req_encode(
        &w, &(gp_FETCH_ADD_req){.hid = 2, .key = "k", .delta = (uint64_t)-1});
    static const uint8_t fadd[] = {2,    0,    0,    0,    0,    0,    0,
                                   0,    1,    0,    'k',  0xff, 0xff, 0xff,
                                   0xff, 0xff, 0xff, 0xff, 0xff};
    expect(&w, fadd, sizeof(fadd), "FETCH_ADD request");
    gp_wbuf_free(&w);

    gp_wbuf_init(&w);
    gp_SUB_LIST_rep_encode(&w, &(gp_SUB_LIST_rep){.n = 1});
    gp_SUB_item_encode(
        &w, &(gp_SUB_item){.hid = 9, .file = "/f", .subfile = 2, .deleted = 1});
    static const uint8_t sublist[] = {1, 0, 0, 0,   9,   0, 0, 0, 0, 0, 0,
                                      0, 2, 0, '/', 'f', 2, 0, 0, 0, 1};
    expect(&w, sublist, sizeof(sublist), "SUB_LIST reply");
    gp_wbuf_free(&w);

    gp_record *rec = calloc(1, sizeof(*rec));
    rec->nsub = 1;
    rec->server[0] = 3;
    rec->hid[0] = 5;
    rec->attrlen = 2;
    memcpy(rec->attrs, "a\n", 3);
    gp_wbuf_init(&w);
    gp_NS_COMMIT_req_encode(&w, &(gp_NS_COMMIT_req){.name = "/x", .rec = rec});
    static const uint8_t commit[] = {
        2, 0, '/', 'x', 1, 0, 0, 0, 3, 0, 0,   0,    5, 0,
        0, 0, 0,   0,   0, 0, 2, 0, 0, 0, 'a', '\n', 1 /* copies (R): one */};
    expect(&w, commit, sizeof(commit), "NS_COMMIT request");
    gp_wbuf_free(&w);
    free(rec);

    /* the four data requests begin alike: libgalley/io.c builds one
     * description and picks the opcode afterwards */
    gp_wbuf a, b, c, d;
    gp_wbuf_init(&a);
    gp_wbuf_init(&b);
    gp_wbuf_init(&c);
    gp_wbuf_init(&d);
    gp_IO_READ_req_encode(&a, &(gp_IO_READ_req){.fkid = 0xabcdef});
    gp_IO_WRITE_req_encode(&b, &(gp_IO_WRITE_req){.fkid = 0xabcdef});
    gp_IO_READV_req_encode(&c, &(gp_IO_READV_req){.fkid = 0xabcdef});
    gp_IO_WRITEV_req_encode(&d, &(gp_IO_WRITEV_req){.fkid = 0xabcdef});
    CHECK(a.len == 8 && b.len == a.len && c.len == a.len && d.len == a.len);
    CHECK(memcmp(a.data, b.data, 8) == 0 && memcmp(a.data, c.data, 8) == 0 &&
          memcmp(a.data, d.data, 8) == 0);
    gp_wbuf_free(&a);
    gp_wbuf_free(&b);
    gp_wbuf_free(&c);
    gp_wbuf_free(&d);
}

int main(void)
{
    test_every_message();
    test_limits();
    test_wire_bytes();
    printf("test_msg: %zu messages x 2 directions x %d seeds\n", SAMPLE_NOPS,
           SEEDS);
    return utest_exit("test_msg");
}
