/*
 * conn_connect.c -- connecting a connection (conn.c states the rules):
 * the transports tried best first among those GALLEY_TRANSPORT allows
 * (transport.h), each stream dialled once, the handshake (version,
 * authentication, PING) on it, then the candidate's probe; and the
 * reconnect after a break, which registers the client's open forks
 * with the server again.
 *
 * Threads: with c->send_lock held (nothing else in flight on c).
 */
#include "conn_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* --------------------------------------------------------- connecting -- */

/* One synchronous request on a fresh socket, before the reader runs. */
static int handshake_call(gc_conn *c, uint16_t op, const gp_wbuf *w,
                          uint8_t *out, size_t outmax, uint32_t *outlen)
{
    uint8_t hb[GP_HDR_SIZE];
    gp_hdr h = {GP_MAGIC, GP_VERSION, op, 0, 0, (uint32_t)w->len};
    gp_hdr_encode(&h, hb);
    struct iovec v[2] = {{hb, sizeof(hb)}, {w->data, w->len}};
    int rc = gc_cn_send_all(c->fd, v, w->len ? 2 : 1);
    if (rc)
        return rc;
    struct timeval tv = {gc_timeout_ms() / 1000,
                         (gc_timeout_ms() % 1000) * 1000};
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    rc = gc_cn_recv_all(c, hb, sizeof(hb));
    if (rc && errno == EAGAIN) {
        pthread_mutex_lock(&c->lock);
        c->silent_ns = g_now_ns();
        pthread_mutex_unlock(&c->lock);
        return GFS_ETIMEDOUT;
    }
    if (rc)
        return rc;
    gp_hdr_decode(hb, &h);
    if (h.magic != GP_MAGIC)
        return GFS_EPROTO;
    if (h.version != GP_VERSION)
        return GFS_EVERSION;
    if (h.length > outmax)
        return GFS_EPROTO;
    rc = gc_cn_recv_all(c, out, h.length);
    if (rc)
        return rc;
    *outlen = h.length;
    struct timeval zero = {0, 0};
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &zero, sizeof(zero));
    return h.status;
}

static int auth_call(void *arg, uint16_t op, const gp_wbuf *w, uint8_t *out,
                     size_t outmax, uint32_t *outlen)
{
    return handshake_call(arg, op, w, out, outmax, outlen);
}

/* On a fresh stream: authenticate, check the version, learn the data
 * limit. */
static int handshake(gc_conn *c)
{
    uint8_t out[64];
    uint32_t outlen = 0;
    int rc = gc_auth_handshake(auth_call, c); /* the cluster secret (auth.c) */
    if (rc)
        return rc;
    gp_wbuf w;
    gp_wbuf_init(&w);
    gp_PING_req_encode(&w, &(gp_PING_req){});
    rc = handshake_call(c, GP_OP_PING, &w, out, sizeof(out), &outlen);
    gp_wbuf_free(&w);
    if (rc)
        return rc;
    gp_rbuf r;
    gp_rbuf_init(&r, out, outlen);
    gp_PING_rep ping;
    int bad = gp_PING_rep_decode(&r, &ping);
    if (bad || ping.version != GP_VERSION || ping.data_limit < 4096)
        return bad ? GFS_EPROTO : GFS_EVERSION;
    c->data_limit = ping.data_limit;
    return 0;
}

/* A control connection takes a plain stream (no probe): the one
 * GALLEY_TRANSPORT allows, or under "direct" the same-host socket the
 * direct transport itself talks over. */
static bool control_allowed(const gc_transport_ops *t, int mode)
{
    if (t->probe)
        return false;
    return gc_transport_allowed(t, mode) ||
           (mode == GFS_TRANSPORT_DIRECT && t->stream == GC_STREAM_UNIX);
}

/* Dial and handshake the transports GALLEY_TRANSPORT allows, best first,
 * until one takes the connection (transport.h): *ops and c->fd. */
static int choose_transport(gc_conn *c, const gc_transport_ops **ops)
{
    int mode = gc_transport();
    int rc = GFS_ESERVERDOWN, stream = -1;
    for (const gc_transport_ops *const *t = gc_transports; *t; t++) {
        if (c->control ? !control_allowed(*t, mode)
                       : !gc_transport_allowed(*t, mode))
            continue;
        if ((*t)->stream != stream) {
            if (c->fd >= 0)
                close(c->fd);
            c->fd = -1;
            stream = (*t)->stream;
            rc = (*t)->dial(c->host, c->port, &c->fd);
            if (rc)
                continue; /* no such stream here: the next kind */
            c->owner = gc_cn_self();
            rc = handshake(c);
            if (rc)
                break; /* the server is there but refuses us */
        }
        if (c->fd < 0)
            continue;
        rc = (*t)->probe ? (*t)->probe(auth_call, c) : 0;
        if (rc == 0) {
            *ops = *t;
            return 0;
        }
        if (rc != GC_DECLINE)
            break;
        rc = GFS_ESERVERDOWN;
    }
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    return rc;
}

/* Connect, re-register the client's open forks on this server, start
 * receiving.  Called with send_lock held and the reader stopped. */
static int connect_locked(gc_conn *c)
{
    const gc_transport_ops *ops = NULL;
    int rc = choose_transport(c, &ops);
    if (rc)
        return rc;
    uint8_t out[64];
    uint32_t outlen = 0;
    gp_wbuf w;
    gp_wbuf_init(&w);
    uint64_t *fk = NULL;
    int nfk = 0;
    if (!c->control) /* (a control connection has no forks) */
        rc = gc_open_handles(c->server, &fk, &nfk);
    if (rc)
        goto out_close;
    for (int i = 0; i < nfk; i++) {
        gp_wbuf_free(&w);
        gp_FORK_REOPEN_req_encode(&w, &(gp_FORK_REOPEN_req){.fkid = fk[i]});
        int k =
            handshake_call(c, GP_OP_FORK_REOPEN, &w, out, sizeof(out), &outlen);
        /* a fork deleted meanwhile stays stale; its next use reports it */
        if (k && k != GFS_ESTALE && k != -ENOENT) {
            rc = k;
            break;
        }
    }
    free(fk);
    if (rc)
        goto out_close;
    gp_wbuf_free(&w);

    pthread_mutex_lock(&c->lock); /* waiters read ops under it */
    c->ops = ops;
    c->broken = false;
    c->epoch++;
    c->last_rx_ns = g_now_ns();
    pthread_mutex_unlock(&c->lock);
    rc = ops->start(c);
    if (rc)
        goto out_close;
    gc_cn_set_ready(c, 1);
    return 0;

out_close:
    gp_wbuf_free(&w);
    close(c->fd);
    c->fd = -1;
    return rc;
}

/* How long a server that let a request time out is not asked again: one
 * second, or the timeout when that is shorter.  A stopped server (or its
 * host) still accepts a connection, so asking it again would wait out a
 * whole timeout a second time within the same call; a request meanwhile
 * fails at once, as the one before it did.  A restarted server is used
 * again after it (the next request reconnects). */
static uint64_t silent_hold_ns(void)
{
    uint64_t t = (uint64_t)gc_timeout_ms() * 1000000ull;
    return t < 1000000000ull ? t : 1000000000ull;
}

/* Make sure the connection is up.  Called with send_lock held. */
int gc_cn_ensure_connected(gc_conn *c)
{
    pthread_mutex_lock(&c->lock);
    bool up = c->fd >= 0 && !c->broken;
    uint64_t silent = c->silent_ns;
    pthread_mutex_unlock(&c->lock);
    if (up)
        return 0;
    if (silent && g_now_ns() - silent < silent_hold_ns())
        return GFS_ETIMEDOUT;
    gc_cn_shutdown(c);
    /* A control connection is connected once, on the program's thread
     * (rcache.c): its renewal thread must not make a socket (a shell may
     * have just closed a descriptor to dup2 onto it).  It fails instead,
     * and is dropped. */
    if (c->control && c->epoch)
        return GFS_ESERVERDOWN;
    return connect_locked(c);
}
