/*
 * gsrv_stubs.h -- the server side of every message of proto/gmsg.h, made
 * by the preprocessor from its table as the client's calls are
 * (libgalley/calls.c); included by gsrv_internal.h, never on its own.
 *
 * For every message NAME, stubs.c defines the op the dispatch table calls
 * (handler.c):
 *
 *   int gsrv_op_NAME(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep);
 *
 * It decodes the request into a gp_NAME_req with the decoder's own checks
 * (lengths, gp_name_ok for `name` fields, the exact payload of a message
 * without a tail) and answers a failure with the decoder's code.  It
 * gives every `rec` field of the request and of the reply storage of its
 * own (freed after the reply is encoded).  Then it calls the message's
 * body, written by hand in the unit that owns the message:
 *
 *   int gsrv_do_NAME(gsrv_conn *c, const gp_NAME_req *m, gp_NAME_rep *r,
 *                    gsrv_call *k);
 *
 * which returns 0 with the reply's fields in *r (zeroed before the call),
 * or a negative error code, the reply's status (its payload then empty).
 * On 0 the stub encodes *r into rep->w.  Every message goes this one
 * way, with no flag of its own; what a message carries besides its
 * fields goes through k:
 *   - a request's tail (segs, mem, data): k->tail is the reader left at
 *     it; the body decodes it and calls gp_decode_end;
 *   - a reply's list (list fields): the body sets every field of *r and
 *     then calls gsrv_reply_fields(k), which writes them at once, and
 *     appends the items to the writer it returns (the stub then writes
 *     nothing more); so does a body whose *r points at memory that does
 *     not outlive it;
 *   - a reply's data (IO_READ, IO_CREAD) or descriptor (DIRECT_OPEN):
 *     k->rep's datalen, send, cleanup, arg, rmem or pass_fd, as
 *     gsrv_conn.h describes; the data follows the fields the stub
 *     encodes.
 * A new message needs only its body (a missing one fails at link time).
 */
#ifndef GSRV_STUBS_H
#define GSRV_STUBS_H

typedef struct gsrv_call {
    gp_rbuf *tail;   /* the request's reader, left at its tail (if any) */
    gsrv_reply *rep; /* the reply: data, descriptor (see above) */
    /* stubs.c's, for gsrv_reply_fields: */
    void (*encode)(gp_wbuf *w, const void *r);
    const void *r;
    bool encoded;
} gsrv_call;

/* The reply's fields as the body's *r holds them now, written at once
 * (once: the stub does not write them again); returns the writer
 * (k->rep->w) the body appends a list's items to. */
gp_wbuf *gsrv_reply_fields(gsrv_call *k);

/* The op of every opcode (stubs.c) and its body (the owning unit). */
typedef int (*gsrv_op_fn)(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep);
#define GSRV_X_PROTO(name, code, doc)                                          \
    int gsrv_op_##name(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep);           \
    int gsrv_do_##name(gsrv_conn *c, const gp_##name##_req *m,                 \
                       gp_##name##_rep *r, gsrv_call *k);
GP_OPCODES(GSRV_X_PROTO)
#undef GSRV_X_PROTO

#endif /* GSRV_STUBS_H */
