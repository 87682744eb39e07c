/*
 * conn.c -- a connection per server over whichever transport it got at
 * connect (transport.h: TCP, the same-host Unix socket with data inline,
 * with cross-memory attach, or direct: the fork files' own descriptors):
 * its life (new, shut down, free), who owns it (the process that
 * connected), and the calls that hand a transfer or a chunk to its
 * transport's ops as route.c decides.  Framing, the reply engines,
 * submit and wait are frame.c's, below both this file and the transports.
 *
 * Choosing the transport (conn_connect.c): connect_locked tries transport.c's
 * candidates, best first, among those GALLEY_TRANSPORT allows (transport.h:
 * auto, direct, local, tcp), dialling each stream once and running the
 * handshake (authentication, PING) on it before the candidate's probe.  The
 * chosen ops stay until the connection breaks.
 *
 * Lock order: c->send_lock before c->lock; gc_g.lock is never taken while
 * holding c->lock (reconnect collects fork handles first).  frame.c states
 * the threads and the failure model.
 */
#include "internal.h"
#include "conn_internal.h"
#include "route.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

gc_conn *gc_conn_new(int server, const char *host, const char *port)
{
    gc_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->server = server;
    snprintf(c->host, sizeof(c->host), "%s", host);
    snprintf(c->port, sizeof(c->port), "%s", port);
    pthread_mutex_init(&c->send_lock, NULL);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->fd = -1;
    c->next_reqid = 1;
    return c;
}

gc_conn *gc_conn_new_control(const gc_conn *like)
{
    gc_conn *c =
        like ? gc_conn_new(like->server, like->host, like->port) : NULL;
    if (c)
        c->control = true;
    return c;
}

void gc_cn_set_ready(gc_conn *c, int v)
{
    __atomic_store_n(&c->ready, v, __ATOMIC_RELEASE);
}

bool gc_conn_holds_opens(gc_conn *c)
{
    return __atomic_load_n(&c->ready, __ATOMIC_ACQUIRE) != 0;
}

int gc_conn_fence(gc_conn *c)
{
    pthread_mutex_lock(&c->lock);
    uint32_t posted = c->posted;
    pthread_mutex_unlock(&c->lock);
    if (!posted || !gc_conn_holds_opens(c))
        return 0; /* every reply read, or the server dropped it all */
    return gc_PING_call(c, &(gp_PING_req){}, NULL, NULL);
}

/* Posted requests whose replies are unread, at most: past it a post
 * waits for them (gc_conn_fence).  Where only waiters read replies (the
 * waiter engine), nobody reads while a process only posts -- closing
 * thousands of files in a row -- and the unread replies would pile up in
 * the socket's buffers without bound, until the server's handler could
 * not send and stopped serving the connection.  (4000 closes in a row
 * to 2 servers did not get there without the bound; it costs a round
 * trip per 64 closes.) */
#define GC_POST_MAX 64

int gc_conn_post(gc_conn *c, uint16_t opcode, const gp_wbuf *w)
{
    int rc = w->err;
    if (!rc)
        rc = gc_submit(c, opcode, w->data, w->len, NULL, 0, 0, NULL);
    pthread_mutex_lock(&c->lock);
    bool full = c->posted >= GC_POST_MAX;
    pthread_mutex_unlock(&c->lock);
    return rc ? rc : full ? gc_conn_fence(c) : 0;
}

/* Stop the reader and close the socket.  Called without c->lock. */
void gc_cn_shutdown(gc_conn *c)
{
    gc_cn_set_ready(c, 0);
    pthread_mutex_lock(&c->lock);
    bool live = c->reader_live;
    if (c->fd >= 0)
        shutdown(c->fd, SHUT_RDWR);
    while (c->reading) /* a waiter reading the old socket: let it fail */
        pthread_cond_wait(&c->cv, &c->lock);
    pthread_mutex_unlock(&c->lock);
    if (live)
        pthread_join(c->reader, NULL);
    pthread_mutex_lock(&c->lock);
    c->reader_live = false;
    if (c->pending) /* no reader thread failed them (waiter engine) */
        gc_cn_fail_pending_locked(c, GFS_ESERVERDOWN);
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    pthread_mutex_unlock(&c->lock);
}

void gc_conn_after_fork(gc_conn *c)
{
    /* the only thread: any lock another thread of the parent held is
     * made anew, and the reader thread is not here to join */
    pthread_mutex_init(&c->send_lock, NULL);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cv, NULL);
    if (c->fd >= 0)
        close(c->fd); /* this process's copy: the parent's stays open */
    c->fd = -1;
    c->broken = true;
    gc_cn_set_ready(c, 0);
    c->reader_live = false;
    c->reading = false;
    c->pending = NULL; /* the parent's: their waiters are not here */
}

void gc_conn_free(gc_conn *c)
{
    if (!c)
        return;
    gc_cn_shutdown(c);
    pthread_mutex_destroy(&c->send_lock);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cv);
    free(c);
}

/* This process's id, cached: getpid is a system call, and the direct
 * path asks on every request.  A child after fork() learns its own from
 * the pthread_atfork handler, before any of its code runs. */
static pid_t self_pid;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;

static void self_after_fork(void)
{
    self_pid = getpid();
}

static void self_init(void)
{
    self_pid = getpid();
    pthread_atfork(NULL, NULL, self_after_fork);
}

pid_t gc_cn_self(void)
{
    pthread_once(&self_once, self_init);
    return self_pid;
}

bool gc_conn_owned(const gc_conn *c)
{
    return c->owner == gc_cn_self();
}

void gc_conn_address(const gc_conn *c, int *server, const char **host,
                     const char **port)
{
    *server = c->server;
    *host = c->host;
    *port = c->port;
}

/* The connection's transport, connecting if needed; NULL with *rc set
 * when it cannot connect. */
static const gc_transport_ops *conn_ops(gc_conn *c, int *rc)
{
    if (__atomic_load_n(&c->ready, __ATOMIC_ACQUIRE)) {
        *rc = 0; /* (a connection breaking now fails its call, as it
                  * would one that passed the locks a moment earlier) */
        return c->ops;
    }
    pthread_mutex_lock(&c->send_lock);
    *rc = gc_cn_ensure_connected(c);
    const gc_transport_ops *t = *rc ? NULL : c->ops;
    pthread_mutex_unlock(&c->send_lock);
    return t;
}

uint32_t gc_conn_epoch(gc_conn *c)
{
    pthread_mutex_lock(&c->lock);
    uint32_t e = c->epoch;
    pthread_mutex_unlock(&c->lock);
    return e;
}

int gc_conn_data_limit(gc_conn *c, uint64_t *limit)
{
    pthread_mutex_lock(&c->send_lock);
    int rc = gc_cn_ensure_connected(c);
    if (!rc)
        *limit = c->data_limit;
    pthread_mutex_unlock(&c->send_lock);
    return rc;
}

int gc_conn_transport(gc_conn *c)
{
    int rc;
    const gc_transport_ops *t = conn_ops(c, &rc);
    return t ? t->kind : rc;
}

int gc_conn_xfer(gc_conn *c, int op, gc_xfer *x)
{
    int rc;
    const gc_transport_ops *t = conn_ops(c, &rc);
    if (!t) {
        x->status = rc;
        return 0;
    }
    if (!gc_route_offered(c, x))
        return GC_DECLINE;
    return t->xfer ? t->xfer(c, op, x) : GC_DECLINE;
}

void gc_conn_prepare(int op, gc_xfer *x, size_t nx)
{
    gc_conn *cs[GC_PREPARE_MAX];
    const gc_transport_ops *t = NULL;
    if (nx < 2 || nx > GC_PREPARE_MAX)
        return;
    for (size_t i = 0; i < nx; i++) {
        int rc;
        gc_conn *c = gc_server_conn(x[i].server);
        const gc_transport_ops *ti = c ? conn_ops(c, &rc) : NULL;
        cs[i] = NULL;
        if (!ti || !ti->prepare || !gc_route_offered(c, &x[i]) ||
            (t && ti != t))
            continue;
        t = ti;
        cs[i] = c;
    }
    if (t)
        t->prepare(op, x, cs, nx);
}

int gc_conn_io_submit(gc_conn *c, int op, gc_chunk *ch)
{
    int rc;
    const gc_transport_ops *t = conn_ops(c, &rc);
    if (!t) {
        ch->req.state = GC_REQ_DONE;
        return ch->req.status = rc;
    }
    if (gc_route_stream(c, ch)) /* every transport's connection has it */
        return gc_stream_io_submit(c, op, ch);
    return t->io_submit(c, op, ch);
}

/* For the locality layout: is this server on our host?  The transport
 * says (the same-host socket always is; a TCP connection is when its two
 * ends have one address). */
bool gc_conn_same_host(gc_conn *c)
{
    pthread_mutex_lock(&c->send_lock);
    bool same = gc_cn_ensure_connected(c) == 0 && c->ops->same_host(c->fd);
    pthread_mutex_unlock(&c->send_lock);
    return same;
}
