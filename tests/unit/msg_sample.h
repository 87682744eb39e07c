/*
 * msg_sample.h -- every message of proto/gmsg.h as test data, by iterating
 * the table: fill a message's struct with values drawn from a seed, encode
 * and decode it with its list items, compare two decoded messages field by
 * field.  Shared by test_msg.c (round trips, truncation) and fuzz_msg.c
 * (valid and mutated bodies for the fuzz target); a message added to the
 * table is covered by both without an edit here.
 *
 * Threads: single-threaded test programs only.
 */
#ifndef MSG_SAMPLE_H
#define MSG_SAMPLE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "galley.h"
#include "gproto.h"

/* Every message, in table order. */
static const unsigned sample_ops[] = {
#define SAMPLE_X_OP(name, code, note) code,
    GP_OPCODES(SAMPLE_X_OP)
#undef SAMPLE_X_OP
};
static const char *const sample_names[] = {
#define SAMPLE_X_NAME(name, code, note) #name,
    GP_OPCODES(SAMPLE_X_NAME)
#undef SAMPLE_X_NAME
};
#define SAMPLE_NOPS (sizeof(sample_ops) / sizeof(sample_ops[0]))

/* List item kinds. */
enum {
#define SAMPLE_X_ITEM(item) SAMPLE_ITEM_##item,
    GP_ITEMS(SAMPLE_X_ITEM)
#undef SAMPLE_X_ITEM
        SAMPLE_NITEMS
};

typedef union sample_item {
#define SAMPLE_X_ITEM(item) gp_##item##_item item;
    GP_ITEMS(SAMPLE_X_ITEM)
#undef SAMPLE_X_ITEM
} sample_item;

#define SAMPLE_MAX_ITEMS 4

/* A message with its storage: the struct (as bytes, gp_msg_size of them),
 * the list items that follow it, the record and blob it points at. */
typedef struct sample {
    unsigned op;
    enum gp_dir dir;
    int item;        /* SAMPLE_ITEM_x of its list field, or -1 */
    bool tail;       /* has a segs / mem / data tail */
    int seglists;    /* segment lists in its tail: segs, mem */
    uint32_t nitems; /* items encoded after it (the list's count) */
    _Alignas(max_align_t) uint8_t msg[16384];
    sample_item items[SAMPLE_MAX_ITEMS];
    gp_record rec;
    uint8_t blob[GP_ATTR_MAX];
} sample;

/* ---------------------------------------------------- table walkers ---- */

/* The list item kind and tails of a field list. */
#define SAMPLE_IK_u8(...)
#define SAMPLE_IK_u16(...)
#define SAMPLE_IK_u32(...)
#define SAMPLE_IK_u64(...)
#define SAMPLE_IK_str(...)
#define SAMPLE_IK_name(...)
#define SAMPLE_IK_blob(...)
#define SAMPLE_IK_rec(...)
#define SAMPLE_IK_list(f, item, max) +1 + SAMPLE_ITEM_##item
#define SAMPLE_IK_segs(...)
#define SAMPLE_IK_mem(...)
#define SAMPLE_IK_data(...)
#define SAMPLE_IK(kind, ...) SAMPLE_IK_##kind(__VA_ARGS__)
#define SAMPLE_TK_u8(...)
#define SAMPLE_TK_u16(...)
#define SAMPLE_TK_u32(...)
#define SAMPLE_TK_u64(...)
#define SAMPLE_TK_str(...)
#define SAMPLE_TK_name(...)
#define SAMPLE_TK_blob(...)
#define SAMPLE_TK_rec(...)
#define SAMPLE_TK_list(...)
#define SAMPLE_TK_segs(...) +1
#define SAMPLE_TK_mem(...) +1
#define SAMPLE_TK_data(...) +1
#define SAMPLE_TK(kind, ...) SAMPLE_TK_##kind(__VA_ARGS__)
#define SAMPLE_SK_u8(...)
#define SAMPLE_SK_u16(...)
#define SAMPLE_SK_u32(...)
#define SAMPLE_SK_u64(...)
#define SAMPLE_SK_str(...)
#define SAMPLE_SK_name(...)
#define SAMPLE_SK_blob(...)
#define SAMPLE_SK_rec(...)
#define SAMPLE_SK_list(...)
#define SAMPLE_SK_segs(...) +1
#define SAMPLE_SK_mem(...) +1
#define SAMPLE_SK_data(...)
#define SAMPLE_SK(kind, ...) SAMPLE_SK_##kind(__VA_ARGS__)

static inline uint64_t sample_rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Extremes and small numbers, so that every byte of a field matters. */
static uint64_t sample_u64(uint64_t *s)
{
    switch (sample_rnd(s) % 4) {
    case 0:
        return UINT64_MAX - sample_rnd(s) % 3;
    case 1:
        return sample_rnd(s) % 300;
    default:
        return sample_rnd(s);
    }
}

/* A string of 0..max non-NUL bytes (often exactly max), kept in buf. */
static const char *sample_str(uint64_t *s, char *buf, size_t max)
{
    size_t n = sample_rnd(s) % 3 == 0 ? max : sample_rnd(s) % (max + 1);
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)(1 + sample_rnd(s) % 255);
    buf[n] = '\0';
    return buf;
}

/* A name (gp_name_ok) of 1..max bytes, kept in buf. */
static const char *sample_name(uint64_t *s, char *buf, size_t max)
{
    sample_str(s, buf, max);
    for (char *p = buf; *p; p++)
        if (*p == '\n')
            *p = '_';
    if (!buf[0])
        buf[0] = 'n', buf[1] = '\0';
    return buf;
}

static inline void sample_record(uint64_t *s, gp_record *rec)
{
    memset(rec, 0, sizeof(*rec));
    rec->nsub = 1 + (uint32_t)(sample_rnd(s) %
                               (sample_rnd(s) % 2 ? GP_MAX_SUBFILES : 4));
    for (uint32_t i = 0; i < rec->nsub; i++) {
        rec->server[i] = (uint32_t)sample_rnd(s);
        rec->hid[i] = sample_u64(s);
    }
    rec->attrlen = (uint32_t)(sample_rnd(s) % 40);
    for (uint32_t i = 0; i < rec->attrlen; i++)
        rec->attrs[i] = (char)('a' + sample_rnd(s) % 26);
    rec->attrs[rec->attrlen] = '\0';
}

/* Fill members; a str's text goes to its own buffer in the struct. */
#define SAMPLE_F_u8(f, ...) m->f = (uint8_t)sample_rnd(s);
#define SAMPLE_F_u16(f, ...) m->f = (uint16_t)sample_u64(s);
#define SAMPLE_F_u32(f, ...) m->f = (uint32_t)sample_u64(s);
#define SAMPLE_F_u64(f, ...) m->f = sample_u64(s);
#define SAMPLE_F_str(f, max) m->f = sample_str(s, m->f##_buf, (max));
#define SAMPLE_F_name(f, max) m->f = sample_name(s, m->f##_buf, (max));
#define SAMPLE_F_blob(f, max)                                                  \
    m->f##_len =                                                               \
        (uint32_t)(sample_rnd(s) % 2 ? (max) : sample_rnd(s) % (max));         \
    for (uint32_t i = 0; i < m->f##_len; i++)                                  \
        x->blob[i] = (uint8_t)sample_rnd(s);                                   \
    m->f = x->blob;
#define SAMPLE_F_rec(f)                                                        \
    sample_record(s, &x->rec);                                                 \
    m->f = &x->rec;
#define SAMPLE_F_list(f, item, max)                                            \
    m->f = x->nitems = (uint32_t)(sample_rnd(s) % (SAMPLE_MAX_ITEMS + 1));
#define SAMPLE_F_segs(f)
#define SAMPLE_F_mem(f)
#define SAMPLE_F_data(f)
#define SAMPLE_FILL(kind, ...) SAMPLE_F_##kind(__VA_ARGS__)

/* Point the decoder at storage (a record), zero the rest. */
#define SAMPLE_P_rec(f) m->f = &x->rec;
#define SAMPLE_P(kind, ...) SAMPLE_P_##kind(__VA_ARGS__)
#define SAMPLE_P_u8(...)
#define SAMPLE_P_u16(...)
#define SAMPLE_P_u32(...)
#define SAMPLE_P_u64(...)
#define SAMPLE_P_str(...)
#define SAMPLE_P_name(...)
#define SAMPLE_P_blob(...)
#define SAMPLE_P_list(...)
#define SAMPLE_P_segs(...)
#define SAMPLE_P_mem(...)
#define SAMPLE_P_data(...)

/* Equal members? */
#define SAMPLE_C_u8(f, ...) eq = eq && a->f == b->f;
#define SAMPLE_C_u16(f, ...) eq = eq && a->f == b->f;
#define SAMPLE_C_u32(f, ...) eq = eq && a->f == b->f;
#define SAMPLE_C_u64(f, ...) eq = eq && a->f == b->f;
#define SAMPLE_C_str(f, max) eq = eq && strcmp(a->f, b->f) == 0;
#define SAMPLE_C_name(f, max) SAMPLE_C_str(f, max)
#define SAMPLE_C_blob(f, max)                                                  \
    eq = eq && a->f##_len == b->f##_len &&                                     \
         (!a->f##_len || memcmp(a->f, b->f, a->f##_len) == 0);
#define SAMPLE_C_rec(f) eq = eq && sample_record_eq(a->f, b->f);
#define SAMPLE_C_list(f, item, max) eq = eq && a->f == b->f;
#define SAMPLE_C_segs(f)
#define SAMPLE_C_mem(f)
#define SAMPLE_C_data(f)
#define SAMPLE_CMP(kind, ...) SAMPLE_C_##kind(__VA_ARGS__)

static inline bool sample_record_eq(const gp_record *a, const gp_record *b)
{
    if (a->nsub != b->nsub || a->attrlen != b->attrlen ||
        strcmp(a->attrs, b->attrs) != 0)
        return false;
    for (uint32_t i = 0; i < a->nsub; i++)
        if (a->server[i] != b->server[i] || a->hid[i] != b->hid[i])
            return false;
    return true;
}

/* ------------------------------------------------------- operations ---- */

/* Set x up as message op/dir (table index k) with values from seed s. */
static inline void sample_fill(sample *x, size_t k, enum gp_dir dir,
                               uint64_t *s)
{
    x->op = sample_ops[k];
    x->dir = dir;
    x->nitems = 0;
    memset(x->msg, 0, sizeof(x->msg));
    switch (x->op) {
#define SAMPLE_X_FILL(name, code, note)                                        \
    case code:                                                                 \
        if (dir == GP_REQ) {                                                   \
            gp_##name##_req *m = (void *)x->msg;                               \
            x->item = -1 GP_##name##_REQ(SAMPLE_IK);                           \
            x->tail = 0 GP_##name##_REQ(SAMPLE_TK);                            \
            x->seglists = 0 GP_##name##_REQ(SAMPLE_SK);                        \
            GP_##name##_REQ(SAMPLE_FILL)(void) m;                              \
        } else {                                                               \
            gp_##name##_rep *m = (void *)x->msg;                               \
            x->item = -1 GP_##name##_REP(SAMPLE_IK);                           \
            x->tail = 0 GP_##name##_REP(SAMPLE_TK);                            \
            x->seglists = 0 GP_##name##_REP(SAMPLE_SK);                        \
            GP_##name##_REP(SAMPLE_FILL)(void) m;                              \
        }                                                                      \
        break;
        GP_OPCODES(SAMPLE_X_FILL)
#undef SAMPLE_X_FILL
    }
    for (uint32_t i = 0; i < x->nitems; i++) {
        switch (x->item) {
#define SAMPLE_X_ITEM(item)                                                    \
    case SAMPLE_ITEM_##item: {                                                 \
        gp_##item##_item *m = &x->items[i].item;                               \
        GP_ITEM_##item(SAMPLE_FILL) break;                                     \
    }
            GP_ITEMS(SAMPLE_X_ITEM)
#undef SAMPLE_X_ITEM
        }
    }
}

/* Make y ready to decode message op/dir into (its record pointers set). */
static inline void sample_prepare(sample *y, unsigned op, enum gp_dir dir)
{
    memset(y->msg, 0, sizeof(y->msg));
    memset(y->items, 0, sizeof(y->items));
    y->op = op;
    y->dir = dir;
    y->item = -1;
    y->tail = false;
    y->seglists = 0;
    y->nitems = 0;
    switch (op) {
#define SAMPLE_X_PREP(name, code, note)                                        \
    case code:                                                                 \
        if (dir == GP_REQ) {                                                   \
            gp_##name##_req *m = (void *)y->msg;                               \
            sample *x = y;                                                     \
            y->item = -1 GP_##name##_REQ(SAMPLE_IK);                           \
            y->tail = 0 GP_##name##_REQ(SAMPLE_TK);                            \
            y->seglists = 0 GP_##name##_REQ(SAMPLE_SK);                        \
            GP_##name##_REQ(SAMPLE_P)(void) m;                                 \
            (void)x;                                                           \
        } else {                                                               \
            gp_##name##_rep *m = (void *)y->msg;                               \
            sample *x = y;                                                     \
            y->item = -1 GP_##name##_REP(SAMPLE_IK);                           \
            y->tail = 0 GP_##name##_REP(SAMPLE_TK);                            \
            y->seglists = 0 GP_##name##_REP(SAMPLE_SK);                        \
            GP_##name##_REP(SAMPLE_P)(void) m;                                 \
            (void)x;                                                           \
        }                                                                      \
        break;
        GP_OPCODES(SAMPLE_X_PREP)
#undef SAMPLE_X_PREP
    }
}

/* The list count of a decoded (or filled) message: its items to read. */
static inline uint32_t sample_count(const sample *x)
{
    uint32_t n = 0;
    switch (x->op) {
#define SAMPLE_N_list(f, item, max) n = m->f;
#define SAMPLE_N_u8(...)
#define SAMPLE_N_u16(...)
#define SAMPLE_N_u32(...)
#define SAMPLE_N_u64(...)
#define SAMPLE_N_str(...)
#define SAMPLE_N_name(...)
#define SAMPLE_N_blob(...)
#define SAMPLE_N_rec(...)
#define SAMPLE_N_segs(...)
#define SAMPLE_N_mem(...)
#define SAMPLE_N_data(...)
#define SAMPLE_N(kind, ...) SAMPLE_N_##kind(__VA_ARGS__)
#define SAMPLE_X_COUNT(name, code, note)                                       \
    case code:                                                                 \
        if (x->dir == GP_REQ) {                                                \
            const gp_##name##_req *m = (const void *)x->msg;                   \
            GP_##name##_REQ(SAMPLE_N)(void) m;                                 \
        } else {                                                               \
            const gp_##name##_rep *m = (const void *)x->msg;                   \
            GP_##name##_REP(SAMPLE_N)(void) m;                                 \
        }                                                                      \
        break;
        GP_OPCODES(SAMPLE_X_COUNT)
#undef SAMPLE_X_COUNT
    }
    return n;
}

static inline void sample_item_encode(gp_wbuf *w, int item,
                                      const sample_item *it)
{
    switch (item) {
#define SAMPLE_X_ITEM(item)                                                    \
    case SAMPLE_ITEM_##item:                                                   \
        gp_##item##_item_encode(w, &it->item);                                 \
        break;
        GP_ITEMS(SAMPLE_X_ITEM)
#undef SAMPLE_X_ITEM
    }
}

static inline int sample_item_decode(gp_rbuf *r, int item, sample_item *it)
{
    switch (item) {
#define SAMPLE_X_ITEM(item)                                                    \
    case SAMPLE_ITEM_##item:                                                   \
        return gp_##item##_item_decode(r, &it->item);
        GP_ITEMS(SAMPLE_X_ITEM)
#undef SAMPLE_X_ITEM
    }
    return -EINVAL;
}

/* The message, then its list items. */
static inline int sample_encode(gp_wbuf *w, const sample *x)
{
    int rc = gp_msg_encode(w, x->op, x->dir, x->msg);
    for (uint32_t i = 0; !rc && i < x->nitems; i++)
        sample_item_encode(w, x->item, &x->items[i]);
    return w->err;
}

/* Decode message op/dir and its list items from r into y (prepared here).
 * A segs/mem/data tail stays in r, unread (*at_tail set); otherwise the
 * payload must end with the message.  0 or the decoder's error. */
static inline int sample_decode(gp_rbuf *r, unsigned op, enum gp_dir dir,
                                sample *y)
{
    sample_prepare(y, op, dir);
    int rc = gp_msg_decode(r, op, dir, y->msg);
    if (rc)
        return rc;
    if (y->item >= 0) {
        uint32_t n = sample_count(y);
        for (uint32_t i = 0; i < n; i++) {
            sample_item tmp, *it = i < SAMPLE_MAX_ITEMS ? &y->items[i] : &tmp;
            rc = sample_item_decode(r, y->item, it);
            if (rc)
                return rc;
        }
        y->nitems = n;
    }
    return y->tail ? r->err : gp_decode_end(r);
}

static inline bool sample_item_eq(int item, const sample_item *ia,
                                  const sample_item *ib)
{
    bool eq = true;
    switch (item) {
#define SAMPLE_X_ITEM(item)                                                    \
    case SAMPLE_ITEM_##item: {                                                 \
        const gp_##item##_item *a = &ia->item, *b = &ib->item;                 \
        GP_ITEM_##item(SAMPLE_CMP) break;                                      \
    }
        GP_ITEMS(SAMPLE_X_ITEM)
#undef SAMPLE_X_ITEM
    }
    return eq;
}

/* Same message, same fields, same items? */
static inline bool sample_eq(const sample *x, const sample *y)
{
    if (x->op != y->op || x->dir != y->dir || x->nitems != y->nitems)
        return false;
    bool eq = true;
    switch (x->op) {
#define SAMPLE_X_EQ(name, code, note)                                          \
    case code:                                                                 \
        if (x->dir == GP_REQ) {                                                \
            const gp_##name##_req *a = (const void *)x->msg;                   \
            const gp_##name##_req *b = (const void *)y->msg;                   \
            GP_##name##_REQ(SAMPLE_CMP)(void) a;                               \
            (void)b;                                                           \
        } else {                                                               \
            const gp_##name##_rep *a = (const void *)x->msg;                   \
            const gp_##name##_rep *b = (const void *)y->msg;                   \
            GP_##name##_REP(SAMPLE_CMP)(void) a;                               \
            (void)b;                                                           \
        }                                                                      \
        break;
        GP_OPCODES(SAMPLE_X_EQ)
#undef SAMPLE_X_EQ
    }
    for (uint32_t i = 0; eq && i < x->nitems && i < SAMPLE_MAX_ITEMS; i++)
        eq = sample_item_eq(x->item, &x->items[i], &y->items[i]);
    return eq;
}

#endif /* MSG_SAMPLE_H */
