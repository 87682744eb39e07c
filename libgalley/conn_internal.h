/*
 * conn_internal.h -- private to the connection units (conn.c: the
 * connection and its transport's ops; frame.c: framing, reply engines,
 * submit and wait; conn_connect.c: connecting): the connection itself and
 * what they share.  frame.c states the locking.
 */
#ifndef GALLEY_CONN_INTERNAL_H
#define GALLEY_CONN_INTERNAL_H

#include "internal.h"
#include "transport.h"

#include <sys/types.h>

struct gc_conn {
    int server;
    char host[256];
    char port[16];

    pthread_mutex_t send_lock;
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t cv;
    int fd;         /* -1 when not connected */
    bool broken;    /* the stream failed; reconnect on next use */
    int ready;      /* atomic: connected, started, not broken: conn_ops may use
                     * ops without the locks (mark_broken_locked clears it) */
    uint32_t epoch; /* connects so far (gc_conn_epoch) */
    const gc_transport_ops *ops; /* chosen at connect (c->lock); NULL
                                  * until the first connect succeeds */
    gc_req *pending;
    uint32_t posted; /* requests sent that nobody waits for (frame.c)
                      * whose replies have not been read yet */
    uint64_t next_reqid;
    uint64_t data_limit;
    uint64_t last_rx_ns;
    uint64_t silent_ns; /* when a request last timed out (0: never): see
                         * gc_cn_ensure_connected */
    pid_t owner;        /* the process that connected */
    bool control;       /* gc_conn_new_control: requests only */
    /* the reply engines' state (see the top) */
    bool reader_live; /* reader engine: its thread runs */
    pthread_t reader;
    bool reading; /* waiter engine: a waiter is reading a frame now */
};

/* conn.c: ready (the fast path's flag) set or cleared; the stream shut
 * down so every pending request fails; this process's pid, cached across
 * fork(). */
void gc_cn_set_ready(gc_conn *c, int v);
void gc_cn_shutdown(gc_conn *c);
pid_t gc_cn_self(void);
/* frame.c: send or receive exactly the bytes asked for (0 or an error);
 * the stream failed, reconnect at the next use; and every request still
 * waiting failed with it (both with c->lock held). */
int gc_cn_send_all(int fd, struct iovec *iov, int cnt);
int gc_cn_recv_all(gc_conn *c, void *buf, size_t n);
void gc_cn_mark_broken_locked(gc_conn *c);
void gc_cn_fail_pending_locked(gc_conn *c, int err);
/* conn_connect.c: connected (again, after a break) with c->send_lock
 * held: 0 or the connect's error. */
int gc_cn_ensure_connected(gc_conn *c);

#endif /* GALLEY_CONN_INTERNAL_H */
