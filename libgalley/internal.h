/*
 * internal.h -- private to libgalley.  Nothing here is visible to users
 * (the shared library exports only gfs_* symbols).
 *
 * Layers inside the client, each using only the one below:
 *   files.c / forks.c / striped.c   the API of galley.h
 *   io.c                            the one data path: transfers of pieces
 *                                   to forks, chunked, pipelined, per server
 *   conn.c                          connections, framing, reply dispatch
 *   proto/gproto.c                  encode/decode (shared with galleyd)
 */
#ifndef GALLEY_INTERNAL_H
#define GALLEY_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "galley.h"
#include "gproto.h"

/* ------------------------------------------------------------- conn.c -- */

typedef struct gc_conn gc_conn;

enum gc_req_state { GC_REQ_IDLE, GC_REQ_PENDING, GC_REQ_RECEIVING, GC_REQ_DONE };

/*
 * One request in flight.  The caller owns the struct (stack or heap) from
 * gc_submit until gc_wait returns; then gc_req_release frees the reply.
 */
typedef struct gc_req {
    uint64_t reqid;
    int state;
    int status;        /* reply status, or a local error */
    uint16_t opcode;
    gc_conn *conn;
    uint64_t submit_ns;
    /* Small replies land here (malloc'd by the reader). */
    uint8_t *reply;
    uint32_t replylen;
    /* Data replies: the first `prefix_len` bytes go to `prefix`, the rest
     * scatter straight into riov (user memory). */
    uint32_t prefix_len;
    uint8_t prefix[16];
    struct iovec *riov;
    int riovcnt;
    uint64_t rdata;
    struct gc_req *next; /* pending list of the connection */
} gc_req;

/* Connection to server i (created at init, connected lazily). */
gc_conn *gc_conn_new(int server, const char *host, const char *port);
void gc_conn_free(gc_conn *c);
/* Data limit the server advertised (connects if needed). */
int gc_conn_data_limit(gc_conn *c, uint64_t *limit);

/*
 * Send a request: a frame whose payload is `desc` (encoded fields) followed
 * by the user's data iovecs (vectored send, no staging copy).  `req` must be
 * zeroed or prepared by the caller (riov / prefix_len for data replies).
 */
int gc_submit(gc_conn *c, uint16_t opcode, const void *desc, size_t desclen,
              const struct iovec *data, int ndata, size_t datalen,
              gc_req *req);
/* Wait for the reply (bounded by the timeout); returns req->status. */
int gc_wait(gc_req *req);
/* Non-blocking check: true when the reply (or an error) has arrived. */
bool gc_test(gc_req *req);
void gc_req_release(gc_req *req);

/* Convenience: submit, wait, and leave the reply in req. */
int gc_call(gc_conn *c, uint16_t opcode, const gp_wbuf *desc, gc_req *req);

/* ----------------------------------------------------------- client.c -- */

typedef struct gc_fork {
    bool used;
    int fid;        /* owning file id, or -1 */
    int subfile;
    int server;
    uint64_t fkid;  /* server's handle */
} gc_fork;

typedef struct gc_file {
    bool used;
    char name[GFS_NAME_MAX + 1];
    gp_record rec;
} gc_file;

typedef struct gc_client {
    pthread_mutex_t lock; /* guards the tables below and refs */
    int refs;
    int nservers;
    gc_conn **conns;
    int timeout_ms;
    gc_file *files;
    int nfiles_cap;
    gc_fork *forks;
    int nforks_cap;
} gc_client;

extern gc_client gc_g;

/* Fail with GFS_ENOTINIT unless initialised. */
int gc_check_init(void);
gc_conn *gc_server_conn(int server);
int gc_timeout_ms(void);
uint64_t gc_now_ns(void);

/* Metadata server of a name (hash of the name). */
int gc_meta_server(const char *name);

/* Table helpers (lock held by caller unless noted). */
int gc_file_get(int fid, gc_file *out);   /* copies under the lock */
int gc_fork_get(int kid, gc_fork *out);   /* copies under the lock */
int gc_fork_register(const gc_fork *k);   /* returns kid */
void gc_fork_unregister(int kid);

/* For reconnects: every open fork handle on `server` (caller frees). */
int gc_open_handles(int server, uint64_t **fkids, int *n);

/* Validate a file or fork name. */
int gc_check_name(const char *name, size_t max);

/* ------------------------------------------------------------ files.c -- */

/* gfs_create_file with an initial attribute text ("k=v\n" lines). */
int gc_create_file(const char *name, int nsubfiles, const int *servers,
                   const char *attrs);
/* Value of `key` in an attribute text; length, -ENOENT or -ERANGE. */
int gc_attr_lookup(const char *attrs, const char *key, char *value,
                   size_t len);

/* --------------------------------------------------------------- io.c -- */

/* One piece of a transfer: len bytes at fork offset off <-> mem. */
typedef struct gc_piece {
    uint64_t off;
    uint64_t len;
    char *mem;
} gc_piece;

/* A transfer to one fork (one server). */
typedef struct gc_xfer {
    int server;
    uint64_t fkid;
    const gc_piece *pieces;
    size_t n; /* pieces move in this order; file-adjacent neighbours
               * are merged into one wire extent */
    /* results */
    int status;
    uint64_t fork_size;
} gc_xfer;

/*
 * The one data path.  Moves every transfer (concurrently across servers,
 * pipelined within one), splitting by each server's data limit.  Returns 0
 * or the first error; each xfer's status and fork_size are filled in.
 */
int gc_transfer(int op, gc_xfer *x, size_t nx);

/* Fork-size request for many forks at once (concurrently). */
int gc_fork_sizes(const gc_fork *forks, int n, int64_t *sizes);

#endif /* GALLEY_INTERNAL_H */
