/*
 * gsrv_globals.c -- the server state every unit reads: the globals
 * (gsrv_g, filled in by galleyd.c's main from its arguments), logging
 * (gsrv_log), and the registry of live connections (a handler registers
 * itself and unregisters at its end; a clean exit shuts their sockets
 * down and waits for the handlers to finish).
 *
 * It depends on nothing but the C library, so that every other unit can
 * depend on it without depending on galleyd.c (main and start-up).
 *
 * Threads: any.  Locks: conns.lock (leaf) guards the registry.
 */
#include "gsrv_internal.h"

#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

gsrv_globals gsrv_g = {.dfd = -1,
                       .data_limit = GP_DEFAULT_DATA_LIMIT,
                       .spin_us = 50,
                       .max_conns = GSRV_DEFAULT_MAX_CONNS,
                       .frame_timeout_ms = GSRV_DEFAULT_FRAME_TIMEOUT_S * 1000,
                       .lock_lease_ms = GSRV_DEFAULT_LOCK_LEASE_S * 1000};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t idle; /* signalled when the last connection goes */
    gsrv_conn *head;
    size_t n;
    uint64_t next_id;
} conns = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .idle = PTHREAD_COND_INITIALIZER,
    .next_id = 1,
};

/* ------------------------------------------------------------ logging ---- */

void gsrv_log(int level, const char *fmt, ...)
{
    if (level > gsrv_g.verbose)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "galleyd[%ld]: %s\n", (long)getpid(), msg);
}

/* ------------------------------------------------------- connections ---- */

void gsrv_conn_register(gsrv_conn *c)
{
    pthread_mutex_lock(&conns.lock);
    c->id = conns.next_id++;
    c->prev = NULL;
    c->next = conns.head;
    if (conns.head)
        conns.head->prev = c;
    conns.head = c;
    conns.n++;
    pthread_mutex_unlock(&conns.lock);
}

void gsrv_conn_unregister(gsrv_conn *c)
{
    pthread_mutex_lock(&conns.lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        conns.head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    /* under the lock: gsrv_conn_shutdown_all never sees a stale fd */
    close(c->fd);
    c->fd = -1;
    if (--conns.n == 0)
        pthread_cond_broadcast(&conns.idle);
    pthread_mutex_unlock(&conns.lock);
}

void gsrv_conn_shutdown_all(void)
{
    pthread_mutex_lock(&conns.lock);
    for (gsrv_conn *c = conns.head; c; c = c->next)
        shutdown(c->fd, SHUT_RDWR);
    pthread_mutex_unlock(&conns.lock);
}

void gsrv_conn_wait_idle(void)
{
    pthread_mutex_lock(&conns.lock);
    while (conns.n)
        pthread_cond_wait(&conns.idle, &conns.lock);
    pthread_mutex_unlock(&conns.lock);
}

size_t gsrv_conn_count(void)
{
    pthread_mutex_lock(&conns.lock);
    size_t n = conns.n;
    pthread_mutex_unlock(&conns.lock);
    return n;
}
