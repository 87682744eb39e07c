/*
 * calls.c -- the client call of every message, made by the preprocessor
 * from proto/gmsg.h like its codecs (after DAOS's CRT_RPC_DECLARE and
 * Mercury's MERCURY_GEN_RPC_STUB): gc_NAME_call encodes the request,
 * sends it on a connection, waits, and decodes the reply (internal.h).
 *
 * Threads: any (conn.c's rules).
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define GC_X_CALL(name, code, note)                                            \
    static int decode_##name(gp_rbuf *r, void *m)                              \
    {                                                                          \
        return gp_##name##_rep_decode(r, m);                                   \
    }                                                                          \
    int gc_##name##_call(gc_conn *c, const gp_##name##_req *in,                \
                         gp_##name##_rep *out, gc_tail *tail)                  \
    {                                                                          \
        gp_wbuf w;                                                             \
        gp_wbuf_init(&w);                                                      \
        gp_##name##_req_encode(&w, in);                                        \
        gc_req q;                                                              \
        int rc = gc_call(c, GP_OP_##name, &w, &q);                             \
        gp_wbuf_free(&w);                                                      \
        gp_##name##_rep unused;                                                \
        if (!out) {                                                            \
            memset(&unused, 0, sizeof(unused));                                \
            out = &unused;                                                     \
        }                                                                      \
        return gc_call_finish(&q, rc, decode_##name, out, tail);               \
    }                                                                          \
    void gc_##name##_send(gc_conn *c, const gp_##name##_req *in,               \
                          gc_pending *p)                                       \
    {                                                                          \
        gp_wbuf_init(&p->w);                                                   \
        gp_##name##_req_encode(&p->w, in);                                     \
        gc_pending_submit(c, GP_OP_##name, p);                                 \
    }                                                                          \
    int gc_##name##_recv(gc_pending *p, gp_##name##_rep *out, gc_tail *tail)   \
    {                                                                          \
        gp_##name##_rep unused;                                                \
        if (!out) {                                                            \
            memset(&unused, 0, sizeof(unused));                                \
            out = &unused;                                                     \
        }                                                                      \
        return gc_pending_finish(p, decode_##name, out, tail);                 \
    }
GP_OPCODES(GC_X_CALL)
#undef GC_X_CALL

int gc_call_finish(gc_req *q, int rc, gp_msg_decode_fn decode, void *out,
                   gc_tail *tail)
{
    if (!rc) {
        gp_rbuf r;
        gp_rbuf_init(&r, q->reply, q->replylen);
        rc = decode(&r, out) ? GFS_EPROTO : 0;
        if (!rc && tail) {
            tail->q = *q; /* the reply stays for the caller's tail */
            tail->r = r;
            return 0;
        }
        if (!rc)
            rc = gp_decode_end(&r);
    }
    gc_req_release(q);
    return rc;
}

void gc_pending_submit(gc_conn *c, uint16_t opcode, gc_pending *p)
{
    memset(&p->q, 0, sizeof(p->q));
    p->rc = 0;
    if (p->w.err) {
        p->q.state = GC_REQ_DONE;
        p->rc = p->q.status = p->w.err;
        return;
    }
    int rc = gc_submit(c, opcode, p->w.data, p->w.len, NULL, 0, 0, &p->q);
    if (rc && p->q.state == GC_REQ_DONE)
        p->rc = rc;
}

int gc_pending_finish(gc_pending *p, gp_msg_decode_fn decode, void *out,
                      gc_tail *tail)
{
    int rc = p->rc ? p->rc : gc_wait(&p->q);
    gp_wbuf_free(&p->w);
    return gc_call_finish(&p->q, rc, decode, out, tail);
}

int gc_tail_end(gc_tail *tail)
{
    int rc = gp_decode_end(&tail->r);
    gc_req_release(&tail->q);
    return rc;
}

/* ------------------------------------------- server calls of the API -- */

int gfs_ping(int server)
{
    return gc_ping(server);
}

int gc_ping(int server)
{
    int rc = gc_check_init();
    if (rc)
        return rc;
    gc_conn *c = gc_server_conn(server);
    if (!c)
        return -EINVAL;
    return gc_PING_call(c, &(gp_PING_req){}, NULL, NULL);
}

int gfs_stat_server(int server, gfs_server_stat *st)
{
    int rc = gc_check_init();
    if (rc)
        return rc;
    gc_conn *c = gc_server_conn(server);
    if (!c || !st)
        return -EINVAL;
    gp_STATFS_rep m;
    rc = gc_STATFS_call(c, &(gp_STATFS_req){}, &m, NULL);
    if (!rc) {
        st->bytes_used = m.bytes_used;
        st->bytes_free = m.bytes_free;
        st->bytes_total = m.bytes_total;
        st->nrecords = m.nrecords;
        st->nsubfiles = m.nsubfiles;
        st->nforks = m.nforks;
        st->cache_hits = m.cache_hits;
        st->cache_misses = m.cache_misses;
    }
    return rc;
}

int gc_log_sync(const bool *which, int *nok)
{
    int ns = gc_g.nservers, rc = 0, ok = 0;
    gc_pending *p = calloc((size_t)ns, sizeof(*p));
    if (!p)
        return -ENOMEM;
    for (int s = 0; s < ns; s++)
        if (!which || which[s])
            gc_LOG_SYNC_send(gc_server_conn(s), &(gp_LOG_SYNC_req){}, &p[s]);
    for (int s = 0; s < ns; s++) {
        if (which && !which[s])
            continue;
        int k = gc_LOG_SYNC_recv(&p[s], NULL, NULL);
        if (k && !rc)
            rc = k;
        ok += !k;
    }
    free(p);
    if (nok)
        *nok = ok;
    return rc;
}

int gc_log_sync_one(int server, uint64_t *records, uint64_t *commits)
{
    gc_conn *c = gc_server_conn(server);
    if (!c)
        return -EINVAL;
    gp_LOG_SYNC_rep m;
    int rc = gc_LOG_SYNC_call(c, &(gp_LOG_SYNC_req){}, &m, NULL);
    if (!rc && records)
        *records = m.records;
    if (!rc && commits)
        *commits = m.commits;
    return rc;
}

int gfs_sync_metadata(int server, uint64_t *records, uint64_t *commits)
{
    int rc = gc_check_init();
    if (rc)
        return rc;
    if (server >= 0)
        return gc_log_sync_one(server, records, commits);
    if (server != -1 || records || commits)
        return -EINVAL;
    return gc_log_sync(NULL, NULL);
}

int gfs_server_transport(int server)
{
    int rc = gc_check_init();
    if (rc)
        return rc;
    gc_conn *c = gc_server_conn(server);
    return c ? gc_conn_transport(c) : -EINVAL;
}
