/*
 * gcodec.c -- the encoders and decoders of every message, expanded from the
 * table in gmsg.h (see gcodec.h).  Nothing here is written per message:
 * each field kind has one encode line, one decode line, its least wire size
 * and whether it is a tail.
 *
 * Threads: no shared state; every function works on its arguments only.
 */
#include "gcodec.h"

#include <errno.h>
#include <string.h>

/* ----------------------------------------------------- field kinds ---- */

#define GP_E_u8(f, ...) gp_put_u8(w, m->f);
#define GP_E_u16(f, ...) gp_put_u16(w, m->f);
#define GP_E_u32(f, ...) gp_put_u32(w, m->f);
#define GP_E_u64(f, ...) gp_put_u64(w, m->f);
#define GP_E_str(f, max) gp_put_str(w, m->f ? m->f : "");
#define GP_E_name(f, max) GP_E_str(f, max)
#define GP_E_blob(f, max) gp_put_blob(w, m->f, m->f##_len);
#define GP_E_rec(f) gp_put_record(w, m->f);
#define GP_E_list(f, item, max) gp_put_u32(w, m->f);
#define GP_E_segs(f)
#define GP_E_mem(f)
#define GP_E_data(f)
#define GP_ENC(kind, ...) GP_E_##kind(__VA_ARGS__)

#define GP_D_u8(f, ...) m->f = gp_get_u8(r);
#define GP_D_u16(f, ...) m->f = gp_get_u16(r);
#define GP_D_u32(f, ...) m->f = gp_get_u32(r);
#define GP_D_u64(f, ...) m->f = gp_get_u64(r);
#define GP_D_str(f, max)                                                       \
    gp_get_str(r, m->f##_buf, (max));                                          \
    m->f = m->f##_buf;
#define GP_D_name(f, max)                                                      \
    GP_D_str(f, max) if (!r->err && !gp_name_ok(m->f)) r->err = -EINVAL;
#define GP_D_blob(f, max) m->f = gp_get_blob(r, &m->f##_len, (max));
#define GP_D_rec(f)                                                            \
    if (m->f)                                                                  \
        gp_get_record(r, m->f);                                                \
    else if (!r->err)                                                          \
        r->err = -EINVAL; /* no storage given */
#define GP_D_list(f, item, max)                                                \
    m->f = gp_get_u32(r);                                                      \
    if (!r->err && (m->f > (max) ||                                            \
                    (uint64_t)m->f * GP_ITEM_MIN(item) > gp_remaining(r)))     \
        r->err = GFS_EPROTO;
#define GP_D_segs(f)
#define GP_D_mem(f)
#define GP_D_data(f)
#define GP_DEC(kind, ...) GP_D_##kind(__VA_ARGS__)

/* Least wire bytes of a field: a list's count is checked against it. */
#define GP_MIN_u8(...) +1
#define GP_MIN_u16(...) +2
#define GP_MIN_u32(...) +4
#define GP_MIN_u64(...) +8
#define GP_MIN_str(...) +2
#define GP_MIN_name(...) +2
#define GP_MIN_blob(...) +4
#define GP_MIN_rec(...) +4
#define GP_MIN_list(...) +4
#define GP_MIN_segs(...) +4
#define GP_MIN_mem(...) +4
#define GP_MIN_data(...) +0
#define GP_MIN(kind, ...) GP_MIN_##kind(__VA_ARGS__)
#define GP_ITEM_MIN(item) (0 GP_ITEM_##item(GP_MIN))

/* Tails end a message: its decoder leaves them to the caller. */
#define GP_TAIL_u8(...)
#define GP_TAIL_u16(...)
#define GP_TAIL_u32(...)
#define GP_TAIL_u64(...)
#define GP_TAIL_str(...)
#define GP_TAIL_name(...)
#define GP_TAIL_blob(...)
#define GP_TAIL_rec(...)
#define GP_TAIL_list(...) +1
#define GP_TAIL_segs(...) +1
#define GP_TAIL_mem(...) +1
#define GP_TAIL_data(...) +1
#define GP_TAIL(kind, ...) GP_TAIL_##kind(__VA_ARGS__)

int gp_decode_end(const gp_rbuf *r)
{
    if (r->err)
        return r->err;
    return gp_done(r) ? 0 : GFS_EPROTO;
}

/* ----------------------------------------------------------- codecs ---- */

#define GP_X_ITEM_DEFINE(item)                                                 \
    void gp_##item##_item_encode(gp_wbuf *w, const gp_##item##_item *m)        \
    {                                                                          \
        GP_ITEM_##item(GP_ENC)                                                 \
    }                                                                          \
    int gp_##item##_item_decode(gp_rbuf *r, gp_##item##_item *m)               \
    {                                                                          \
        GP_ITEM_##item(GP_DEC) return r->err;                                  \
    }
GP_ITEMS(GP_X_ITEM_DEFINE)

#define GP_DEFINE_DIR(name, dir, FIELDS)                                       \
    void gp_##name##_##dir##_encode(gp_wbuf *w, const gp_##name##_##dir *m)    \
    {                                                                          \
        FIELDS(GP_ENC)                                                         \
    }                                                                          \
    int gp_##name##_##dir##_decode(gp_rbuf *r, gp_##name##_##dir *m)           \
    {                                                                          \
        FIELDS(GP_DEC)                                                         \
        return (0 FIELDS(GP_TAIL)) ? r->err : gp_decode_end(r);                \
    }
#define GP_X_DEFINE(name, code, note)                                          \
    GP_DEFINE_DIR(name, req, GP_##name##_REQ)                                  \
    GP_DEFINE_DIR(name, rep, GP_##name##_REP)
GP_OPCODES(GP_X_DEFINE)

/* ------------------------------------------------------ by opcode ---- */

size_t gp_msg_size(unsigned op, enum gp_dir dir)
{
    switch (op) {
#define GP_X_SIZE(name, code, note)                                            \
    case code:                                                                 \
        return dir == GP_REQ ? sizeof(gp_##name##_req)                         \
                             : sizeof(gp_##name##_rep);
        GP_OPCODES(GP_X_SIZE)
#undef GP_X_SIZE
    default:
        return 0;
    }
}

int gp_msg_encode(gp_wbuf *w, unsigned op, enum gp_dir dir, const void *m)
{
    switch (op) {
#define GP_X_ENCODE(name, code, note)                                          \
    case code:                                                                 \
        if (dir == GP_REQ)                                                     \
            gp_##name##_req_encode(w, m);                                      \
        else                                                                   \
            gp_##name##_rep_encode(w, m);                                      \
        return w->err;
        GP_OPCODES(GP_X_ENCODE)
#undef GP_X_ENCODE
    default:
        return -ENOSYS;
    }
}

int gp_msg_decode(gp_rbuf *r, unsigned op, enum gp_dir dir, void *m)
{
    switch (op) {
#define GP_X_DECODE(name, code, note)                                          \
    case code:                                                                 \
        return dir == GP_REQ ? gp_##name##_req_decode(r, m)                    \
                             : gp_##name##_rep_decode(r, m);
        GP_OPCODES(GP_X_DECODE)
#undef GP_X_DECODE
    default:
        return -ENOSYS;
    }
}
