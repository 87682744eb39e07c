/*
 * gproto.c -- encode/decode of the Galley wire protocol (see gproto.h).
 *
 * Threads: no shared state; every function works on its arguments only.
 */
#include "gproto.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "galley.h"

const char *gp_opname(unsigned op)
{
    switch (op) {
#define GP_X_NAME(name, code, doc)                                             \
    case code:                                                                 \
        return #name;
        GP_OPCODES(GP_X_NAME)
#undef GP_X_NAME
    default:
        return NULL;
    }
}

int gp_local_addr(struct sockaddr_un *sa, const char *hostport)
{
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    size_t n = strlen(GP_LOCAL_PREFIX) + strlen(hostport);
    if (n + 1 > sizeof(sa->sun_path)) /* the leading NUL counts */
        return -1;
    memcpy(sa->sun_path + 1, GP_LOCAL_PREFIX, strlen(GP_LOCAL_PREFIX));
    memcpy(sa->sun_path + 1 + strlen(GP_LOCAL_PREFIX), hostport,
           strlen(hostport));
    return (int)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* ---------------------------------------------------------------- LE ---- */

static void le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* ------------------------------------------------------------ header ---- */

void gp_hdr_encode(const gp_hdr *h, uint8_t out[GP_HDR_SIZE])
{
    le32(out, h->magic);
    le16(out + 4, h->version);
    le16(out + 6, h->opcode);
    le64(out + 8, h->reqid);
    le32(out + 16, (uint32_t)h->status);
    le32(out + 20, h->length);
}

void gp_hdr_decode(const uint8_t in[GP_HDR_SIZE], gp_hdr *h)
{
    h->magic = rd32(in);
    h->version = rd16(in + 4);
    h->opcode = rd16(in + 6);
    h->reqid = rd64(in + 8);
    h->status = (int32_t)rd32(in + 16);
    h->length = rd32(in + 20);
}

/* ------------------------------------------------------------ writer ---- */

void gp_wbuf_init(gp_wbuf *w)
{
    memset(w, 0, sizeof(*w));
}

void gp_wbuf_free(gp_wbuf *w)
{
    if (!w)
        return;
    free(w->data);
    memset(w, 0, sizeof(*w));
}

static uint8_t *wreserve(gp_wbuf *w, size_t n)
{
    if (w->err)
        return NULL;
    if (n > GP_MAX_PAYLOAD || w->len > GP_MAX_PAYLOAD - n) {
        w->err = -E2BIG;
        return NULL;
    }
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n)
            cap *= 2;
        uint8_t *d = realloc(w->data, cap);
        if (!d) {
            w->err = -ENOMEM;
            return NULL;
        }
        w->data = d;
        w->cap = cap;
    }
    uint8_t *p = w->data + w->len;
    w->len += n;
    return p;
}

void gp_put_u8(gp_wbuf *w, uint8_t v)
{
    uint8_t *p = wreserve(w, 1);
    if (p)
        *p = v;
}

void gp_put_u16(gp_wbuf *w, uint16_t v)
{
    uint8_t *p = wreserve(w, 2);
    if (p)
        le16(p, v);
}

void gp_put_u32(gp_wbuf *w, uint32_t v)
{
    uint8_t *p = wreserve(w, 4);
    if (p)
        le32(p, v);
}

void gp_put_u64(gp_wbuf *w, uint64_t v)
{
    uint8_t *p = wreserve(w, 8);
    if (p)
        le64(p, v);
}

void gp_put_str(gp_wbuf *w, const char *s)
{
    size_t n = strlen(s);
    if (n > UINT16_MAX) {
        if (!w->err)
            w->err = -ENAMETOOLONG;
        return;
    }
    gp_put_u16(w, (uint16_t)n);
    uint8_t *p = wreserve(w, n);
    if (p && n)
        memcpy(p, s, n);
}

void gp_put_blob(gp_wbuf *w, const void *data, uint32_t n)
{
    gp_put_u32(w, n);
    uint8_t *p = wreserve(w, n);
    if (p && n)
        memcpy(p, data, n);
}

/* ------------------------------------------------------------ reader ---- */

void gp_rbuf_init(gp_rbuf *r, const void *data, size_t len)
{
    r->data = data;
    r->len = len;
    r->pos = 0;
    r->err = 0;
}

static const uint8_t *rtake(gp_rbuf *r, size_t n)
{
    if (r->err)
        return NULL;
    if (n > r->len - r->pos) {
        r->err = GFS_EPROTO;
        return NULL;
    }
    const uint8_t *p = r->data + r->pos;
    r->pos += n;
    return p;
}

uint8_t gp_get_u8(gp_rbuf *r)
{
    const uint8_t *p = rtake(r, 1);
    return p ? *p : 0;
}

uint16_t gp_get_u16(gp_rbuf *r)
{
    const uint8_t *p = rtake(r, 2);
    return p ? rd16(p) : 0;
}

uint32_t gp_get_u32(gp_rbuf *r)
{
    const uint8_t *p = rtake(r, 4);
    return p ? rd32(p) : 0;
}

uint64_t gp_get_u64(gp_rbuf *r)
{
    const uint8_t *p = rtake(r, 8);
    return p ? rd64(p) : 0;
}

void gp_get_str(gp_rbuf *r, char *out, size_t max)
{
    out[0] = '\0';
    uint16_t n = gp_get_u16(r);
    if (r->err)
        return;
    if (n > max) {
        r->err = -ENAMETOOLONG;
        return;
    }
    const uint8_t *p = rtake(r, n);
    if (!p)
        return;
    if (n && memchr(p, '\0', n)) {
        r->err = GFS_EPROTO;
        return;
    }
    memcpy(out, p, n);
    out[n] = '\0';
}

const uint8_t *gp_get_blob(gp_rbuf *r, uint32_t *n, uint32_t max)
{
    *n = gp_get_u32(r);
    if (r->err)
        return NULL;
    if (*n > max) {
        r->err = GFS_EPROTO;
        *n = 0;
        return NULL;
    }
    const uint8_t *p = rtake(r, *n);
    if (!p)
        *n = 0;
    return p;
}

size_t gp_remaining(const gp_rbuf *r)
{
    return r->len - r->pos;
}

bool gp_done(const gp_rbuf *r)
{
    return !r->err && r->pos == r->len;
}

bool gp_name_ok(const char *name)
{
    return name[0] != '\0' && !strchr(name, '\n');
}

/* ----------------------------------------------------------- records ---- */

void gp_put_record(gp_wbuf *w, const gp_record *rec)
{
    gp_put_u32(w, rec->nsub);
    for (uint32_t i = 0; i < rec->nsub && i < GP_MAX_SUBFILES; i++) {
        gp_put_u32(w, rec->server[i]);
        gp_put_u64(w, rec->hid[i]);
    }
    gp_put_blob(w, rec->attrs, rec->attrlen);
    gp_put_repl(w, rec);
}

void gp_put_repl(gp_wbuf *w, const gp_record *rec)
{
    const gp_repl *p = &rec->repl;
    uint8_t n = p->ncopy > 1 ? p->ncopy : 1;
    gp_put_u8(w, n);
    if (n == 1)
        return;
    gp_put_u64(w, p->gen);
    for (uint32_t i = 0; i < rec->nsub && i < GP_MAX_SUBFILES; i++)
        for (uint8_t c = 0; c < n && c < GP_MAX_COPIES; c++) {
            gp_put_u32(w, c ? p->server[i][c] : rec->server[i]);
            gp_put_u64(w, c ? p->hid[i][c] : rec->hid[i]);
            gp_put_u64(w, p->dsid[i][c]);
            gp_put_u8(w, p->state[i][c]);
        }
}

void gp_get_repl(gp_rbuf *r, gp_record *rec)
{
    gp_repl *p = &rec->repl;
    gp_repl_single(rec);
    uint8_t n = gp_get_u8(r);
    if (r->err)
        return;
    if (n < 1 || n > GP_MAX_COPIES) {
        r->err = GFS_EPROTO;
        return;
    }
    p->ncopy = n;
    if (n == 1)
        return;
    p->gen = gp_get_u64(r);
    for (uint32_t i = 0; i < rec->nsub; i++)
        for (uint8_t c = 0; c < n; c++) {
            p->server[i][c] = gp_get_u32(r);
            p->hid[i][c] = gp_get_u64(r);
            p->dsid[i][c] = gp_get_u64(r);
            p->state[i][c] = gp_get_u8(r);
            if (p->state[i][c] > GP_COPY_STALE)
                r->err = GFS_EPROTO;
        }
    if (r->err)
        return;
    for (uint32_t i = 0; i < rec->nsub; i++)
        if (p->server[i][0] != rec->server[i] || p->hid[i][0] != rec->hid[i])
            r->err = GFS_EPROTO; /* copy 0 is the record's own */
}

void gp_get_record(gp_rbuf *r, gp_record *rec)
{
    gp_get_record_base(r, rec);
    gp_get_repl(r, rec);
}

void gp_record_copy(gp_record *dst, const gp_record *src)
{
    uint32_t n = src->nsub < GP_MAX_SUBFILES ? src->nsub : GP_MAX_SUBFILES;
    uint32_t al = src->attrlen < GP_ATTR_MAX ? src->attrlen : GP_ATTR_MAX;
    dst->nsub = src->nsub;
    memcpy(dst->server, src->server, n * sizeof(*dst->server));
    memcpy(dst->hid, src->hid, n * sizeof(*dst->hid));
    dst->attrlen = src->attrlen;
    memcpy(dst->attrs, src->attrs, al);
    dst->attrs[al] = '\0';
    dst->repl.ncopy = src->repl.ncopy;
    dst->repl.gen = src->repl.gen;
    memcpy(dst->repl.server, src->repl.server, n * sizeof(*dst->repl.server));
    memcpy(dst->repl.hid, src->repl.hid, n * sizeof(*dst->repl.hid));
    memcpy(dst->repl.dsid, src->repl.dsid, n * sizeof(*dst->repl.dsid));
    memcpy(dst->repl.state, src->repl.state, n * sizeof(*dst->repl.state));
}

void gp_repl_single(gp_record *rec)
{
    gp_repl *p = &rec->repl;
    p->ncopy = 1;
    p->gen = 0;
    for (uint32_t i = 0; i < rec->nsub && i < GP_MAX_SUBFILES; i++) {
        p->server[i][0] = rec->server[i];
        p->hid[i][0] = rec->hid[i];
        p->dsid[i][0] = 0;
        p->state[i][0] = GP_COPY_INSYNC;
    }
}

void gp_get_record_base(gp_rbuf *r, gp_record *rec)
{
    rec->nsub = gp_get_u32(r);
    rec->attrlen = 0;
    rec->attrs[0] = '\0';
    if (r->err)
        return;
    if (rec->nsub < 1 || rec->nsub > GP_MAX_SUBFILES) {
        r->err = GFS_EPROTO;
        return;
    }
    for (uint32_t i = 0; i < rec->nsub; i++) {
        rec->server[i] = gp_get_u32(r);
        rec->hid[i] = gp_get_u64(r);
    }
    uint32_t n;
    const uint8_t *p = gp_get_blob(r, &n, GP_ATTR_MAX);
    if (r->err)
        return;
    if (n && memchr(p, '\0', n)) {
        r->err = GFS_EPROTO;
        return;
    }
    if (n)
        memcpy(rec->attrs, p, n);
    rec->attrs[n] = '\0';
    rec->attrlen = n;
}

/* ---------------------------------------------------------- segments ---- */

void gp_put_seg(gp_wbuf *w, const gp_seg *s)
{
    gp_put_u8(w, s->kind);
    gp_put_u64(w, s->off);
    gp_put_u64(w, s->size);
    if (s->kind == GP_SEG_STRIDED) {
        gp_put_u8(w, s->nlev);
        for (unsigned i = 0; i < s->nlev && i < GP_MAX_LEVELS; i++) {
            gp_put_u64(w, s->count[i]);
            gp_put_u64(w, s->stride[i]);
        }
    }
}

void gp_get_seg(gp_rbuf *r, gp_seg *s)
{
    memset(s, 0, sizeof(*s));
    s->kind = gp_get_u8(r);
    s->off = gp_get_u64(r);
    s->size = gp_get_u64(r);
    if (r->err)
        return;
    if (s->kind == GP_SEG_EXTENT)
        return;
    if (s->kind != GP_SEG_STRIDED) {
        r->err = GFS_EPROTO;
        return;
    }
    s->nlev = gp_get_u8(r);
    if (r->err)
        return;
    if (s->nlev < 1 || s->nlev > GP_MAX_LEVELS) {
        r->err = GFS_EPROTO;
        return;
    }
    for (unsigned i = 0; i < s->nlev; i++) {
        s->count[i] = gp_get_u64(r);
        s->stride[i] = gp_get_u64(r);
    }
}

/* a*b with overflow detection */
static bool mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a && b > UINT64_MAX / a)
        return false;
    *out = a * b;
    return true;
}

bool gp_seg_measure(const gp_seg *s, uint64_t *npieces, uint64_t *nbytes)
{
    if (s->kind == GP_SEG_EXTENT) {
        if (s->off > GP_MAX_OFFSET || s->size > GP_MAX_OFFSET - s->off)
            return false;
        *npieces = 1;
        *nbytes = s->size;
        return true;
    }
    if (s->kind != GP_SEG_STRIDED || s->nlev < 1 || s->nlev > GP_MAX_LEVELS)
        return false;
    uint64_t n = 1, reach = s->off;
    for (unsigned i = 0; i < s->nlev; i++) {
        uint64_t span;
        if (!mul_ok(n, s->count[i], &n))
            return false;
        if (s->count[i] == 0) {
            *npieces = 0;
            *nbytes = 0;
            return true;
        }
        if (!mul_ok(s->count[i] - 1, s->stride[i], &span))
            return false;
        if (span > GP_MAX_OFFSET || reach > GP_MAX_OFFSET - span)
            return false;
        reach += span;
    }
    if (s->size > GP_MAX_OFFSET || reach > GP_MAX_OFFSET - s->size)
        return false;
    uint64_t bytes;
    if (!mul_ok(n, s->size, &bytes))
        return false;
    *npieces = n;
    *nbytes = bytes;
    return true;
}
