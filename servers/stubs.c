/*
 * stubs.c -- the op of every message, expanded from the table in
 * proto/gmsg.h (gsrv_stubs.h states what an op and its body do).  Nothing
 * here is written per message: an op decodes the request, gives the `rec`
 * fields storage, calls the body gsrv_do_NAME and encodes its reply.
 *
 * Threads: handler threads; no state of its own.
 */
#include "gsrv_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The `rec` fields of a message and direction: how many (GSRV_NREC) and
 * pointing each at the next record of the storage (GSRV_SLOT). */
#define GSRV_NREC_u8(...)
#define GSRV_NREC_u16(...)
#define GSRV_NREC_u32(...)
#define GSRV_NREC_u64(...)
#define GSRV_NREC_str(...)
#define GSRV_NREC_name(...)
#define GSRV_NREC_blob(...)
#define GSRV_NREC_rec(...) +1
#define GSRV_NREC_list(...)
#define GSRV_NREC_segs(...)
#define GSRV_NREC_mem(...)
#define GSRV_NREC_data(...)
#define GSRV_NREC(kind, ...) GSRV_NREC_##kind(__VA_ARGS__)

#define GSRV_SLOT_u8(...)
#define GSRV_SLOT_u16(...)
#define GSRV_SLOT_u32(...)
#define GSRV_SLOT_u64(...)
#define GSRV_SLOT_str(...)
#define GSRV_SLOT_name(...)
#define GSRV_SLOT_blob(...)
#define GSRV_SLOT_rec(f) x->f = slot++;
#define GSRV_SLOT_list(...)
#define GSRV_SLOT_segs(...)
#define GSRV_SLOT_mem(...)
#define GSRV_SLOT_data(...)
#define GSRV_SLOT(kind, ...) GSRV_SLOT_##kind(__VA_ARGS__)

gp_wbuf *gsrv_reply_fields(gsrv_call *k)
{
    if (!k->encoded)
        k->encode(&k->rep->w, k->r);
    k->encoded = true;
    return &k->rep->w;
}

/* The records a message's `rec` fields decode into or are answered from:
 * NULL when it has none (*rc 0) or on -ENOMEM (*rc set). */
static gp_record *rec_storage(size_t n, int *rc)
{
    gp_record *v = n ? malloc(n * sizeof(*v)) : NULL;
    *rc = n && !v ? -ENOMEM : 0;
    return v;
}

/* Point the `rec` fields of *x at the records from slot on; returns the
 * first record left. */
#define GSRV_SLOTS(name, dir, FIELDS)                                          \
    static gp_record *slots_##name##_##dir(gp_##name##_##dir *x,               \
                                           gp_record *slot)                    \
    {                                                                          \
        FIELDS(GSRV_SLOT)                                                      \
        (void)x;                                                               \
        return slot;                                                           \
    }
#define GSRV_X_STUB(name, code, note)                                          \
    GSRV_SLOTS(name, req, GP_##name##_REQ)                                     \
    GSRV_SLOTS(name, rep, GP_##name##_REP)                                     \
    static void encode_##name(gp_wbuf *w, const void *r)                       \
    {                                                                          \
        gp_##name##_rep_encode(w, r);                                          \
    }                                                                          \
    int gsrv_op_##name(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)            \
    {                                                                          \
        gp_##name##_req m;                                                     \
        gp_##name##_rep r = {};                                                \
        gsrv_call k = {                                                        \
            .tail = req, .rep = rep, .encode = encode_##name, .r = &r};        \
        int rc;                                                                \
        gp_record *recs = rec_storage(                                         \
            0 GP_##name##_REQ(GSRV_NREC) GP_##name##_REP(GSRV_NREC), &rc);     \
        if (!rc) {                                                             \
            slots_##name##_rep(&r, slots_##name##_req(&m, recs));              \
            rc = gp_##name##_req_decode(req, &m);                              \
        }                                                                      \
        if (!rc)                                                               \
            rc = gsrv_do_##name(c, &m, &r, &k);                                \
        if (!rc)                                                               \
            gsrv_reply_fields(&k);                                             \
        free(recs);                                                            \
        return rc;                                                             \
    }
GP_OPCODES(GSRV_X_STUB)
#undef GSRV_X_STUB
