/*
 * forks.c -- fork operations: create/open/close/delete, the all_ variants,
 * listing, size, truncate, sync.  A fork id ("kid") maps to (server, the
 * server's fork handle); handles survive server restarts.
 *
 * Threads: any; tables through client.c helpers, network through conn.c.
 */
#include "internal.h"
#include "transport.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Resolve (fid, subfile) to its server and subfile header id; of a
 * replicated file, its nth copy in sync (repl.c), GFS_ENOCOPY past the
 * last. */
static int subfile_copy(int fid, int subfile, int nth, int *server,
                        uint64_t *hid)
{
    gc_file f;
    int rc = gc_file_get(fid, &f);
    if (rc)
        return rc;
    if (subfile < 0 || (uint32_t)subfile >= f.rec.nsub)
        return -EINVAL;
    *server = (int)f.rec.server[subfile];
    *hid = f.rec.hid[subfile];
    if (f.rec.repl.ncopy <= 1)
        return nth ? GFS_ENOCOPY : 0;
    for (int c = 0; c < f.rec.repl.ncopy; c++)
        if (f.rec.repl.state[subfile][c] == GP_COPY_INSYNC && nth-- == 0) {
            *server = (int)f.rec.repl.server[subfile][c];
            *hid = f.rec.repl.hid[subfile][c];
            return 0;
        }
    return GFS_ENOCOPY;
}

static int subfile_of(int fid, int subfile, int *server, uint64_t *hid)
{
    return subfile_copy(fid, subfile, 0, server, hid);
}

/* The server and header of (fid, subfile), and a valid fork name. */
static int fork_place(int fid, int subfile, const char *name, int *server,
                      uint64_t *hid)
{
    int rc = subfile_of(fid, subfile, server, hid);
    return rc ? rc : gc_check_name(name, GFS_FORK_NAME_MAX);
}

int gc_fork_create(int fid, int subfile, const char *name)
{
    int server;
    uint64_t hid;
    int rc = fork_place(fid, subfile, name, &server, &hid);
    if (!rc && gc_repl_file(fid))
        return gc_repl_fork_each(fid, subfile, name, GC_REPL_CREATE);
    return rc ? rc
              : gc_FORK_CREATE_call(
                    gc_server_conn(server),
                    &(gp_FORK_CREATE_req){.hid = hid, .fork = name}, NULL,
                    NULL);
}

int gc_fork_open(int fid, int subfile, const char *name)
{
    int server;
    uint64_t hid;
    gp_FORK_OPEN_rep m; /* m.size: the size at open, unused */
    int rc = fork_place(fid, subfile, name, &server, &hid);
    if (!rc && gc_repl_file(fid)) {
        gc_fork k = {.fid = fid, .subfile = subfile};
        rc = gc_repl_fork_open(fid, subfile, name, &k);
        if (rc)
            return rc;
        int kid = gc_fork_register(&k);
        if (kid < 0)
            gc_repl_fork_close(&k);
        return kid;
    }
    if (!rc)
        rc = gc_FORK_OPEN_call(gc_server_conn(server),
                               &(gp_FORK_OPEN_req){.hid = hid, .fork = name},
                               &m, NULL);
    if (rc)
        return rc;
    gc_fork k = {
        .fid = fid, .subfile = subfile, .server = server, .fkid = m.fkid};
    int kid = gc_fork_register(&k);
    if (kid < 0) /* undo the server-side open */
        gc_fork_close_at(server, k.fkid);
    return kid;
}

/* A fork's close at its server is posted, not waited for (frame.c): its
 * answer says nothing a caller acts on -- writes were answered when they
 * were made, a stale fork counts as closed, and a server that cannot be
 * reached drops a lost connection's opens itself -- and a server serves
 * one connection's requests in order, so whatever this process asks it
 * next finds the fork closed (gfs_finalize fences every connection:
 * gc_conn_fence).  Waiting was a round trip per file closed. */
void gc_fork_close_at(int server, uint64_t fkid)
{
    gc_conn *c = gc_server_conn(server);
    if (!c || !gc_conn_holds_opens(c))
        return; /* the server dropped the open itself */
    gp_wbuf w;
    gp_wbuf_init(&w);
    gp_FORK_CLOSE_req_encode(&w, &(gp_FORK_CLOSE_req){.fkid = fkid});
    gc_conn_post(c, GP_OP_FORK_CLOSE, &w);
    gp_wbuf_free(&w);
}

/* Closing fork kid (k, of one copy): its descriptors released (the
 * direct transport), the server told, and the id let go. */
static void close_post(int kid, const gc_fork *k)
{
    gc_transports_release(k->server, k->fkid);
    gc_fork_close_at(k->server, k->fkid);
    gc_fork_unregister(kid);
}

int gc_fork_close(int kid)
{
    gc_fork k;
    int rc = gc_fork_get(kid, &k);
    if (rc)
        return rc;     /* GFS_EBADID or GFS_ENOTINIT */
    if (k.ncopy > 1) { /* never direct: no descriptors */
        gc_repl_fork_close(&k);
        gc_fork_unregister(kid);
        return 0;
    }
    close_post(kid, &k);
    return 0;
}

int gc_fork_delete(int fid, int subfile, const char *name)
{
    int server;
    uint64_t hid;
    int rc = fork_place(fid, subfile, name, &server, &hid);
    if (!rc && gc_repl_file(fid))
        return gc_repl_fork_each(fid, subfile, name, GC_REPL_DELETE);
    return rc ? rc
              : gc_FORK_DELETE_call(
                    gc_server_conn(server),
                    &(gp_FORK_DELETE_req){.hid = hid, .fork = name}, NULL,
                    NULL);
}

/* ---------------------------------------------------------- all_ ------ */

static int nsub_of(int fid)
{
    gc_file f;
    int rc = gc_file_get(fid, &f);
    return rc ? rc : (int)f.rec.nsub;
}

int gc_all_create(int fid, const char *name)
{
    int n = nsub_of(fid);
    if (n < 0)
        return n;
    for (int i = 0; i < n; i++) {
        int rc = gc_fork_create(fid, i, name);
        if (rc) {
            for (int j = 0; j < i; j++)
                gc_fork_delete(fid, j, name);
            return rc;
        }
    }
    return 0;
}

/* Every subfile's fork `name` at once: one round trip. */
int gc_all_open(int fid, const char *name, int *kids)
{
    gc_file f;
    int rc = gc_file_get(fid, &f);
    if (rc)
        return rc;
    if (!kids)
        return -EINVAL;
    int n = (int)f.rec.nsub, subs[GFS_MAX_SUBFILES];
    for (int i = 0; i < n; i++)
        subs[i] = i;
    return gc_forks_open(fid, name, n, subs, kids);
}

int gc_forks_open(int fid, const char *name, int n, const int *subs, int *kids)
{
    if (n < 0 || n > GFS_MAX_SUBFILES || (n && (!subs || !kids)))
        return -EINVAL;
    gc_file f;
    int rc = gc_file_get(fid, &f);
    if (rc)
        return rc;
    rc = gc_check_name(name, GFS_FORK_NAME_MAX);
    if (rc)
        return rc;
    for (int j = 0; j < n; j++)
        if (subs[j] < 0 || subs[j] >= (int)f.rec.nsub)
            return -EINVAL;
    if (f.rec.repl.ncopy > 1) {
        /* a replicated file: every copy in sync of each (repl.c) */
        for (int j = 0; j < n; j++) {
            kids[j] = gc_fork_open(fid, subs[j], name);
            if (kids[j] < 0) {
                rc = kids[j];
                for (int i = 0; i < j; i++)
                    gc_fork_close(kids[i]);
                return rc;
            }
        }
        return 0;
    }
    gc_pending *p = calloc((size_t)(n ? n : 1), sizeof(*p));
    if (!p)
        return -ENOMEM;
    for (int j = 0; j < n; j++)
        gc_FORK_OPEN_send(
            gc_server_conn((int)f.rec.server[subs[j]]),
            &(gp_FORK_OPEN_req){.hid = f.rec.hid[subs[j]], .fork = name},
            &p[j]);
    for (int j = 0; j < n; j++) {
        gp_FORK_OPEN_rep m = {0};
        int k = gc_FORK_OPEN_recv(&p[j], &m, NULL);
        kids[j] = k;
        if (k)
            continue;
        gc_fork fk = {.fid = fid,
                      .subfile = subs[j],
                      .server = (int)f.rec.server[subs[j]],
                      .fkid = m.fkid};
        kids[j] = gc_fork_register(&fk);
        if (kids[j] < 0) /* undo the server-side open */
            gc_fork_close_at(fk.server, fk.fkid);
    }
    free(p);
    for (int j = 0; j < n && !rc; j++)
        if (kids[j] < 0)
            rc = kids[j];
    if (rc) {
        int open[GFS_MAX_SUBFILES], nopen = 0;
        for (int j = 0; j < n; j++)
            if (kids[j] >= 0)
                open[nopen++] = kids[j];
        gc_all_close(nopen, open);
    }
    return rc;
}

int gc_all_close(int nkids, const int *kids)
{
    int rc = 0;
    if (nkids < 0 || (nkids && !kids))
        return -EINVAL;
    for (int i = 0; i < nkids; i++) {
        int e = gc_fork_close(kids[i]);
        if (e && !rc)
            rc = e;
    }
    return rc;
}

int gfs_all_delete(int fid, const char *name)
{
    int n = nsub_of(fid);
    if (n < 0)
        return n;
    int rc = 0;
    for (int i = 0; i < n; i++) {
        int k = gc_fork_delete(fid, i, name);
        if (k && !rc)
            rc = k;
    }
    return rc;
}

/* ------------------------------------------------------- list / size -- */

int gfs_list_forks(int fid, int subfile,
                   int (*fn)(const char *, uint64_t, void *), void *arg)
{
    int server;
    uint64_t hid;
    int rc = subfile_of(fid, subfile, &server, &hid);
    if (rc)
        return rc;
    if (!fn)
        return -EINVAL;
    gc_tail t;
    gp_FORK_LIST_rep m;
    /* a replicated file: the next copy in sync while servers are down */
    for (int nth = 1;; nth++) {
        rc = gc_FORK_LIST_call(gc_server_conn(server),
                               &(gp_FORK_LIST_req){.hid = hid}, &m, &t);
        if ((rc != GFS_ESERVERDOWN && rc != GFS_ETIMEDOUT) ||
            subfile_copy(fid, subfile, nth, &server, &hid))
            break;
    }
    if (rc)
        return rc;
    gp_rbuf *r = &t.r;
    uint32_t n = m.n;
    /* decode everything before calling back */
    char(*names)[GFS_FORK_NAME_MAX + 1] = calloc(n ? n : 1, sizeof(*names));
    uint64_t *sizes = names ? calloc(n ? n : 1, sizeof(*sizes)) : NULL;
    if (!names || !sizes)
        r->err = -ENOMEM;
    for (uint32_t i = 0; i < n && !r->err; i++) {
        gp_FORK_item it;
        if (gp_FORK_item_decode(r, &it))
            break;
        memcpy(names[i], it.fork, strlen(it.fork) + 1);
        sizes[i] = it.size;
    }
    rc = gc_tail_end(&t);
    for (uint32_t i = 0; i < n && !rc; i++)
        rc = fn(names[i], sizes[i], arg);
    free(names);
    free(sizes);
    return rc;
}

/* The fork of kid: its connection and the server's handle. */
static gc_conn *fork_conn(int kid, uint64_t *fkid, int *rc)
{
    gc_fork k = {0};
    *rc = gc_fork_get(kid, &k);
    *fkid = k.fkid;
    return *rc ? NULL : gc_server_conn(k.server);
}

int64_t gfs_fork_size(int kid)
{
    gc_fork k;
    int64_t size = 0;
    int rc = gc_fork_get(kid, &k);
    if (!rc)
        rc = gc_fork_sizes(&k, 1, &size, NULL);
    return rc ? rc : size;
}

/* FORK_TRUNCATE (trunc) or FORK_SYNC on every usable copy of a
 * replicated fork: a change like a write, so a copy that fails is
 * recorded stale before success is answered (gc_repl_failover). */
static int each_copy(const gc_fork *k, int kid, bool trunc, uint64_t size)
{
    int ok = 0, first = gc_repl_settle(kid);
    if (first)
        return first;
    for (int c = 0; c < k->ncopy; c++) {
        if (!k->cfkid[c])
            continue;
        gc_conn *conn = gc_server_conn(k->cserver[c]);
        int r =
            trunc
                ? gc_FORK_TRUNCATE_call(conn,
                                        &(gp_FORK_TRUNCATE_req){
                                            .fkid = k->cfkid[c], .size = size},
                                        NULL, NULL)
                : gc_FORK_SYNC_call(conn,
                                    &(gp_FORK_SYNC_req){.fkid = k->cfkid[c]},
                                    NULL, NULL);
        if (!r) {
            ok++;
            continue;
        }
        if (!first)
            first = r;
        if (gc_repl_failover(kid, c, r, GFS_WRITE) == -EIO)
            return -EIO;
    }
    return ok ? 0 : first ? first : GFS_ENOCOPY;
}

int gc_fork_truncate(int kid, int64_t size)
{
    if (size < 0)
        return -EINVAL;
    uint64_t fkid;
    int rc;
    gc_fork k;
    if (!gc_fork_get(kid, &k) && k.ncopy > 1)
        return each_copy(&k, kid, true, (uint64_t)size);
    gc_conn *c = fork_conn(kid, &fkid, &rc);
    return c ? gc_FORK_TRUNCATE_call(c,
                                     &(gp_FORK_TRUNCATE_req){
                                         .fkid = fkid, .size = (uint64_t)size},
                                     NULL, NULL)
             : rc;
}

int gc_fork_sync(int kid)
{
    uint64_t fkid;
    int rc;
    gc_fork k;
    if (!gc_fork_get(kid, &k) && k.ncopy > 1)
        return each_copy(&k, kid, false, 0);
    gc_conn *c = fork_conn(kid, &fkid, &rc);
    return c ? gc_FORK_SYNC_call(c, &(gp_FORK_SYNC_req){.fkid = fkid}, NULL,
                                 NULL)
             : rc;
}

int gc_forks_sync(const int *kids, int n)
{
    /* one FORK_SYNC per fork sent before any is waited for: the servers
     * fsync in parallel, and a server that does not answer is waited for
     * once (its other forks' requests on that connection fail with the
     * first, gc_wait), not once per fork */
    gc_pending p[GFS_MAX_SUBFILES];
    bool sent[GFS_MAX_SUBFILES] = {false};
    int rc = 0;
    if (n < 0 || n > GFS_MAX_SUBFILES)
        return -EINVAL;
    for (int i = 0; i < n; i++) {
        gc_fork k;
        int r = gc_fork_get(kids[i], &k);
        if (!r && k.ncopy <= 1) {
            gc_FORK_SYNC_send(gc_server_conn(k.server),
                              &(gp_FORK_SYNC_req){.fkid = k.fkid}, &p[i]);
            sent[i] = true;
        }
        if (r && !rc)
            rc = r;
    }
    for (int i = 0; i < n; i++) {
        /* a replicated fork's copies in turn (each_copy), after the rest */
        int r = sent[i] ? gc_FORK_SYNC_recv(&p[i], NULL, NULL)
                        : gc_fork_sync(kids[i]);
        if (r && !rc)
            rc = r;
    }
    return rc;
}

static int gc_fork_scrub(int kid, int64_t *chunks, int64_t *bad,
                         int64_t *first_bad)
{
    uint64_t fkid;
    int rc;
    gp_SCRUB_rep m;
    gc_conn *c = fork_conn(kid, &fkid, &rc);
    if (c)
        rc = gc_SCRUB_call(c, &(gp_SCRUB_req){.fkid = fkid}, &m, NULL);
    if (rc)
        return rc;
    *chunks = (int64_t)m.chunks;
    *bad = (int64_t)m.bad;
    *first_bad = m.first_bad == UINT64_MAX ? -1 : (int64_t)m.first_bad;
    return 0;
}

int gc_fork_sizes(const gc_fork *forks, int n, int64_t *sizes, int64_t *mtimes)
{
    gc_pending *p = calloc((size_t)(n ? n : 1), sizeof(*p));
    if (!p)
        return -ENOMEM;
    int rc = 0;
    for (int i = 0; i < n; i++) /* every request out, then every reply */
        gc_FORK_SIZE_send(gc_server_conn(forks[i].server),
                          &(gp_FORK_SIZE_req){.fkid = forks[i].fkid}, &p[i]);
    for (int i = 0; i < n; i++) {
        gp_FORK_SIZE_rep m;
        int k = gc_FORK_SIZE_recv(&p[i], &m, NULL);
        if (!k && (m.size > INT64_MAX || m.mtime > INT64_MAX))
            k = GFS_EPROTO;
        if (!k)
            sizes[i] = (int64_t)m.size;
        if (!k && mtimes)
            mtimes[i] = (int64_t)m.mtime;
        /* a replicated fork: any other copy in sync answers too */
        for (int c = 0; k && c < forks[i].ncopy; c++) {
            if (!forks[i].cfkid[c] || forks[i].cfkid[c] == forks[i].fkid)
                continue;
            k = gc_FORK_SIZE_call(
                gc_server_conn(forks[i].cserver[c]),
                &(gp_FORK_SIZE_req){.fkid = forks[i].cfkid[c]}, &m, NULL);
            if (!k && (m.size > INT64_MAX || m.mtime > INT64_MAX))
                k = GFS_EPROTO;
            if (!k)
                sizes[i] = (int64_t)m.size;
            if (!k && mtimes)
                mtimes[i] = (int64_t)m.mtime;
        }
        if (k && !rc)
            rc = k;
    }
    free(p);
    return rc;
}

/* ------------------------------------------------------- public API --- */

int gfs_create_fork(int fid, int subfile, const char *name)
{
    return gc_fork_create(fid, subfile, name);
}

int gfs_open_fork(int fid, int subfile, const char *name)
{
    return gc_fork_open(fid, subfile, name);
}

int gfs_close_fork(int kid)
{
    return gc_fork_close(kid);
}

int gfs_delete_fork(int fid, int subfile, const char *name)
{
    return gc_fork_delete(fid, subfile, name);
}

int gfs_all_create(int fid, const char *name)
{
    return gc_all_create(fid, name);
}

int gfs_all_open(int fid, const char *name, int *kids)
{
    return gc_all_open(fid, name, kids);
}

int gfs_all_close(int nkids, const int *kids)
{
    return gc_all_close(nkids, kids);
}

int gfs_truncate_fork(int kid, int64_t size)
{
    return gc_fork_truncate(kid, size);
}

int gfs_sync(int kid)
{
    return gc_fork_sync(kid);
}

int gfs_scrub_fork(int kid, int64_t *chunks, int64_t *bad, int64_t *first_bad)
{
    if (!chunks || !bad || !first_bad)
        return -EINVAL;
    return gc_fork_scrub(kid, chunks, bad, first_bad);
}
