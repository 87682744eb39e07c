/*
 * gcodec.h -- message structs and codecs made by the preprocessor from the
 * table in gmsg.h; used by both libgalley and galleyd.
 *
 * For every message NAME of GP_OPCODES and each direction D (req, rep):
 *
 *   typedef struct gp_NAME_D { the fields of GP_NAME_D(F) } gp_NAME_D;
 *   void gp_NAME_D_encode(gp_wbuf *w, const gp_NAME_D *m);
 *   int  gp_NAME_D_decode(gp_rbuf *r, gp_NAME_D *m);
 *
 * and for every list item ITEM of GP_ITEMS: gp_ITEM_item with
 * gp_ITEM_item_encode / gp_ITEM_item_decode.
 *
 * Encoders append to w (errors stay in w->err, as for gp_put_*).  A
 * decoder returns 0 or a negative code: GFS_EPROTO for a short, long or
 * malformed payload, -ENAMETOOLONG for a string over its limit (the
 * reader's error, as gp_get_* set it), -EINVAL for a name field that is
 * no name (gp_name_ok).  A message with a tail (list,
 * segs, mem, data) decodes its fields, checks a list's count against its
 * limit and the bytes left, and leaves the reader at the tail; the caller
 * reads the tail and then calls gp_decode_end.  A decoded str field points
 * into the struct's own buffer (copying the struct copies the pointer, not
 * the text), a blob field into the reader's buffer.
 *
 * Threads: pure functions, callable from any thread.
 */
#ifndef GCODEC_H
#define GCODEC_H

#include "gproto.h"
#include "gauth.h"
#include "galley.h"

/* Struct members of each field kind (see the table in gmsg.h). */
#define GP_M_u8(f, ...) uint8_t f;
#define GP_M_u16(f, ...) uint16_t f;
#define GP_M_u32(f, ...) uint32_t f;
#define GP_M_u64(f, ...) uint64_t f;
#define GP_M_str(f, max)                                                       \
    const char *f;                                                             \
    char f##_buf[(max) + 1];
#define GP_M_name(f, max) GP_M_str(f, max)
#define GP_M_blob(f, max)                                                      \
    const uint8_t *f;                                                          \
    uint32_t f##_len;
#define GP_M_rec(f) gp_record *f;
#define GP_M_list(f, item, max) uint32_t f;
#define GP_M_segs(f)
#define GP_M_mem(f)
#define GP_M_data(f)
#define GP_MEMBER(kind, ...) GP_M_##kind(__VA_ARGS__)

#define GP_X_ITEM_DECLARE(item)                                                \
    typedef struct gp_##item##_item {                                          \
        GP_ITEM_##item(GP_MEMBER)                                              \
    } gp_##item##_item;                                                        \
    void gp_##item##_item_encode(gp_wbuf *w, const gp_##item##_item *m);       \
    int gp_##item##_item_decode(gp_rbuf *r, gp_##item##_item *m);
GP_ITEMS(GP_X_ITEM_DECLARE)
#undef GP_X_ITEM_DECLARE

#define GP_DECLARE_DIR(name, dir, FIELDS)                                      \
    typedef struct gp_##name##_##dir {                                         \
        FIELDS(GP_MEMBER)                                                      \
    } gp_##name##_##dir;                                                       \
    void gp_##name##_##dir##_encode(gp_wbuf *w, const gp_##name##_##dir *m);   \
    int gp_##name##_##dir##_decode(gp_rbuf *r, gp_##name##_##dir *m);
#define GP_X_DECLARE(name, code, note)                                         \
    GP_DECLARE_DIR(name, req, GP_##name##_REQ)                                 \
    GP_DECLARE_DIR(name, rep, GP_##name##_REP)
GP_OPCODES(GP_X_DECLARE)
#undef GP_X_DECLARE

/* After a tail: 0 if everything was read without error, else the reader's
 * error or GFS_EPROTO (bytes left over). */
int gp_decode_end(const gp_rbuf *r);

/* ------------------------------------------------------------------------
 * The same codecs by opcode, for code that iterates the table (tests, the
 * fuzz target).  dir: GP_REQ or GP_REP.  m points at the struct of that
 * message and direction (gp_msg_size bytes).  Unknown opcode: -ENOSYS.
 * ------------------------------------------------------------------------ */
enum gp_dir { GP_REQ = 0, GP_REP = 1 };

size_t gp_msg_size(unsigned op, enum gp_dir dir);
int gp_msg_encode(gp_wbuf *w, unsigned op, enum gp_dir dir, const void *m);
int gp_msg_decode(gp_rbuf *r, unsigned op, enum gp_dir dir, void *m);

#endif /* GCODEC_H */
