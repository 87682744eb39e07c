/*
 * fuzz_msg.c -- the message decoders of proto/gmsg.h in the protocol fuzz
 * target (fuzz_proto.c's MODE_MESSAGE), every message and direction by
 * iterating the table.
 *
 * An input is: a byte choosing the message (index in GP_OPCODES, modulo
 * their number), a byte choosing the direction (low bit), then the body.
 * fuzz_msg_check decodes the body with that message's decoder and its list
 * items and checks: no read outside the body, a negative error or success,
 * and on success the decoded struct encodes to exactly the bytes read (the
 * decoders accept one encoding per message).  fuzz_msg_request does the
 * same for the payload of a whole request frame.  fuzz_msg_gen writes a valid
 * input from a seed (a filled struct, msg_sample.h), which the driver then
 * mutates, truncates or extends.  A broken invariant calls abort().
 *
 * Threads: single-threaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg_sample.h"

void fuzz_msg_check(const uint8_t *data, size_t size);
void fuzz_msg_gen(gp_wbuf *w, uint64_t seed);
int fuzz_msg_request(unsigned op, gp_rbuf *r);

#define MSG_ENSURE(cond)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_msg: invariant broken at %s:%d: %s\n",       \
                    __FILE__, __LINE__, #cond);                                \
            abort();                                                           \
        }                                                                      \
    } while (0)

static sample fz; /* large: not on the stack */

void fuzz_msg_check(const uint8_t *data, size_t size)
{
    if (size < 2)
        return;
    size_t k = data[0] % SAMPLE_NOPS;
    enum gp_dir dir = (data[1] & 1) ? GP_REP : GP_REQ;
    const uint8_t *body = data + 2;
    size_t n = size - 2;

    gp_rbuf r;
    gp_rbuf_init(&r, body, n);
    int rc = sample_decode(&r, sample_ops[k], dir, &fz);
    MSG_ENSURE(r.pos <= r.len && r.len == n);
    if (rc) {
        MSG_ENSURE(rc < 0);
        return;
    }
    MSG_ENSURE(fz.tail || r.pos == n);
    if (fz.nitems > SAMPLE_MAX_ITEMS)
        return; /* only the first items were kept */
    gp_wbuf w;
    gp_wbuf_init(&w);
    MSG_ENSURE(sample_encode(&w, &fz) == 0);
    MSG_ENSURE(w.len == r.pos && (!w.len || memcmp(w.data, body, w.len) == 0));
    gp_wbuf_free(&w);
}

/* A request frame's payload (fuzz_proto.c's MODE_FRAME): decode the
 * fields of request op at r with its codec, check them as above, and
 * return how many segment lists its tail holds (the caller checks those);
 * 0 for an unknown opcode or a payload the decoder refused. */
int fuzz_msg_request(unsigned op, gp_rbuf *r)
{
    size_t k = 0;
    while (k < SAMPLE_NOPS && sample_ops[k] != op)
        k++;
    if (k == SAMPLE_NOPS)
        return 0;
    size_t start = r->pos;
    int rc = sample_decode(r, op, GP_REQ, &fz);
    MSG_ENSURE(r->pos <= r->len);
    if (rc) {
        MSG_ENSURE(rc < 0);
        return 0;
    }
    gp_wbuf w;
    gp_wbuf_init(&w);
    MSG_ENSURE(sample_encode(&w, &fz) == 0);
    MSG_ENSURE(w.len == r->pos - start &&
               (!w.len || memcmp(w.data, r->data + start, w.len) == 0));
    gp_wbuf_free(&w);
    return fz.seglists;
}

void fuzz_msg_gen(gp_wbuf *w, uint64_t seed)
{
    uint64_t s = seed ? seed : 1;
    size_t k = sample_rnd(&s) % SAMPLE_NOPS;
    enum gp_dir dir = (sample_rnd(&s) & 1) ? GP_REP : GP_REQ;
    gp_put_u8(w, (uint8_t)k);
    gp_put_u8(w, (uint8_t)dir);
    sample_fill(&fz, k, dir, &s);
    sample_encode(w, &fz);
}
