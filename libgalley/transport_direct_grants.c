/*
 * transport_direct_grants.c -- the direct transport's descriptors
 * (transport_direct.c states the rules): the grant channel per server,
 * the table of grants (asked for, taken, pinned around each use,
 * released when their fork closes, forgotten with a broken channel), and
 * what a child after fork() drops.
 *
 * Threads: any; gc_dg.lock guards the table and the channels and is held
 * across a channel's round trip (once per fork).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POLLRDHUP, MSG_CMSG_CLOEXEC */
#endif
#include "transport_direct.h"

#include "dial.h"
#include "gsend.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

dstate gc_dg = {.lock = PTHREAD_MUTEX_INITIALIZER,
                .idle = PTHREAD_COND_INITIALIZER};

static void grant_free(dgrant *g)
{
    pthread_mutex_destroy(&g->xlock);
    free(g);
}
/* ------------------------------------------------------ grant channel -- */

/* recv exactly n bytes; a descriptor that arrives with them goes to *fdp
 * (received close-on-exec), a second one is closed. */
static int chan_recv(int fd, void *buf, size_t n, int *fdp)
{
    uint8_t *p = buf;
    while (n) {
        union {
            struct cmsghdr h;
            char buf[CMSG_SPACE(sizeof(int))];
        } ctl;
        struct iovec v = {p, n};
        struct msghdr mh = {.msg_iov = &v,
                            .msg_iovlen = 1,
                            .msg_control = ctl.buf,
                            .msg_controllen = sizeof(ctl.buf)};
        ssize_t r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return errno == EAGAIN ? GFS_ETIMEDOUT : GFS_ESERVERDOWN;
        if (r == 0)
            return GFS_ESERVERDOWN;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm;
             cm = CMSG_NXTHDR(&mh, cm)) {
            if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                continue;
            int got;
            memcpy(&got, CMSG_DATA(cm), sizeof(got));
            if (fdp && *fdp < 0)
                *fdp = gc_fd_high(got);
            else
                close(got);
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Send a request on a grant channel: its id, or 0 (the channel is then
 * closed). */
static uint64_t chan_send(dchan *ch, uint16_t op, const gp_wbuf *w)
{
    uint8_t hb[GP_HDR_SIZE];
    uint64_t id = ++ch->reqid;
    gp_hdr h = {GP_MAGIC, GP_VERSION, op, id, 0, (uint32_t)w->len};
    gp_hdr_encode(&h, hb);
    struct iovec v[2] = {{hb, sizeof(hb)}, {w->data, w->len}};
    if (gp_send_all(ch->fd, v, w->len ? 2 : 1) == 0)
        return id;
    close(ch->fd);
    ch->fd = -1;
    return 0;
}

/* The reply to request id (the next one on the channel; 0: the send
 * failed); a descriptor in it goes to *fdp (if not NULL; else closed).
 * The reply's status, or a transport error (the channel is then
 * closed). */
static int chan_finish(dchan *ch, uint64_t id, uint8_t *out, size_t outmax,
                       uint32_t *outlen, int *fdp)
{
    if (!id || ch->fd < 0)
        return GFS_ESERVERDOWN;
    uint8_t hb[GP_HDR_SIZE];
    gp_hdr h;
    int fd = -1;
    int rc = chan_recv(ch->fd, hb, sizeof(hb), &fd);
    if (!rc) {
        gp_hdr_decode(hb, &h);
        if (h.magic != GP_MAGIC || h.reqid != id || h.length > outmax)
            rc = GFS_EPROTO;
        else if (h.version != GP_VERSION)
            rc = GFS_EVERSION;
    }
    if (!rc)
        rc = chan_recv(ch->fd, out, h.length, &fd);
    if (rc) {
        if (fd >= 0)
            close(fd);
        close(ch->fd);
        ch->fd = -1;
        return rc;
    }
    *outlen = h.length;
    if (fdp && h.status == 0)
        *fdp = fd;
    else if (fd >= 0)
        close(fd);
    return h.status;
}

/* One synchronous request on a grant channel (chan_send, chan_finish). */
static int chan_call_fd(dchan *ch, uint16_t op, const gp_wbuf *w, uint8_t *out,
                        size_t outmax, uint32_t *outlen, int *fdp)
{
    return chan_finish(ch, chan_send(ch, op, w), out, outmax, outlen, fdp);
}

static int chan_auth_call(void *arg, uint16_t op, const gp_wbuf *w,
                          uint8_t *out, size_t outmax, uint32_t *outlen)
{
    return chan_call_fd(arg, op, w, out, outmax, outlen, NULL);
}

/* Take g, which is on the list at *head, off it. */
static void grant_unlink(dgrant **head, dgrant *g)
{
    while (*head != g)
        head = &(*head)->next;
    *head = g->next;
}

/* Close a grant's descriptors (no word to the server) and free it. */
static void grant_drop(dgrant *g)
{
    if (g->rfd >= 0)
        close(g->rfd);
    if (g->wfd >= 0)
        close(g->wfd);
    if (g->cfd >= 0)
        close(g->cfd);
    grant_free(g);
}

/* Drop every grant on server (its channel is gone: the server has
 * released them).  Never waits (its callers keep pointers into gc_dg.chan and
 * requests in flight on other channels): a grant still in use leaves the
 * table now, void, and its last gc_dg_grant_put drops it. */
static void forget_server_locked(int server)
{
    __atomic_add_fetch(&gc_dg.epoch, 1, __ATOMIC_RELEASE);
    for (dgrant **pp = &gc_dg.grants; *pp;) {
        dgrant *g = *pp;
        if (g->server != server) {
            pp = &g->next;
            continue;
        }
        *pp = g->next;
        if (g->inuse) {
            g->gone = true;
            g->next = gc_dg.gone;
            gc_dg.gone = g;
        } else
            grant_drop(g);
    }
}

/* A child after fork() starts with no grants and no channels: its copies
 * of the descriptors are closed (the parent's stay open), and it never
 * speaks on its parent's grant channels. */
static void atfork_prepare(void)
{
    pthread_mutex_lock(&gc_dg.lock); /* the tables are consistent at fork */
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&gc_dg.lock);
}

/* Close every grant channel and forget the table (gc_dg.lock held, or the
 * only thread: a child after fork). */
static void chans_close_all(void)
{
    for (int i = 0; i < gc_dg.nchan; i++)
        if (gc_dg.chan[i].fd >= 0)
            close(gc_dg.chan[i].fd);
    free(gc_dg.chan);
    gc_dg.chan = NULL;
    gc_dg.nchan = 0;
}

static void atfork_child(void)
{
    pthread_mutex_unlock(&gc_dg.lock); /* taken by this thread in prepare */
    pthread_cond_init(&gc_dg.idle, NULL);
    dgrant *lists[] = {gc_dg.grants,
                       gc_dg.gone}; /* the gone: their copies too */
    for (int k = 0; k < 2; k++)
        while (lists[k]) {
            dgrant *g = lists[k];
            lists[k] = g->next;
            grant_drop(g);
        }
    gc_dg.grants = gc_dg.gone = NULL;
    gc_dg_readers_forget_all();
    chans_close_all();
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_register(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

void gc_dg_atfork_once(void)
{
    pthread_once(&atfork_once, atfork_register);
}

/* Is server's grant channel still up?  Looked at once per
 * GC_DIRECT_CHECK_NS: grants live as long as the channel, and a server
 * that restarted knows nothing of ours, so they must be asked for again
 * (the channel closed and its grants forgotten here). */
void gc_dg_chan_check_locked(int server, uint64_t now)
{
    dchan *ch = server < gc_dg.nchan ? &gc_dg.chan[server] : NULL;
    if (!ch || ch->fd < 0 || now - ch->checked_ns < GC_DIRECT_CHECK_NS)
        return;
    ch->checked_ns = now;
    struct pollfd p = {.fd = ch->fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
        close(ch->fd);
        ch->fd = -1;
        forget_server_locked(server);
    }
}

/* Server's grant channel, connected and authenticated; NULL with *rc. */
dchan *gc_dg_chan_get_locked(gc_conn *c, int *rc)
{
    int server;
    const char *host, *port;
    gc_conn_address(c, &server, &host, &port);
    if (server >= gc_dg.nchan) {
        int n = server + 1;
        dchan *p = realloc(gc_dg.chan, (size_t)n * sizeof(*p));
        if (!p) {
            *rc = -ENOMEM;
            return NULL;
        }
        for (int i = gc_dg.nchan; i < n; i++)
            p[i] = (dchan){.fd = -1};
        gc_dg.chan = p;
        gc_dg.nchan = n;
    }
    dchan *ch = &gc_dg.chan[server];
    gc_dg_chan_check_locked(server, g_now_ns());
    if (ch->fd < 0) {
        /* a channel that served before was closed by a failed call: the
         * grants and readers it left are void too */
        if (ch->reqid)
            forget_server_locked(server);
        *rc = gc_dial_local(host, port, &ch->fd);
        if (*rc)
            return NULL;
        struct timeval tv = {gc_timeout_ms() / 1000,
                             (gc_timeout_ms() % 1000) * 1000};
        setsockopt(ch->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        *rc = gc_auth_handshake(chan_auth_call, ch);
        if (*rc) {
            if (ch->fd >= 0)
                close(ch->fd);
            ch->fd = -1;
            return NULL;
        }
    }
    *rc = 0;
    return ch;
}

/* ------------------------------------------------------------- grants -- */

dgrant *gc_dg_grant_find_locked(int server, uint64_t fkid)
{
    for (dgrant *g = gc_dg.grants; g; g = g->next)
        if (g->server == server && g->fkid == fkid)
            return g;
    return NULL;
}

/* Do we hold what `need` asks for of (server, fkid), checksummed (cs) or
 * not?  1: yes, 0: ask the server, GFS_EDIRECT: no, and asking would be
 * refused (a grant of the other kind than asked; G_SIEVE while we hold a
 * writable descriptor not in locked mode): the server path serves it. */
int gc_dg_grant_have_locked(const dgrant *g, int need, bool cs)
{
    if (!g)
        return 0;
    if (g->cs != cs || (g->wfd >= 0 && need == G_SIEVE && !g->locked))
        return GFS_EDIRECT;
    return need != G_READ ? g->wfd >= 0 : g->wfd >= 0 || g->rfd >= 0;
}

/* Send the request for `need` of fork fkid on ch: its id, or 0.  cs: a
 * checksummed fork's DIRECT_COPEN, part 0 (the file) or 1 (its sidecar);
 * its clients never sieve. */
uint64_t gc_dg_grant_ask(dchan *ch, uint64_t fkid, int need, bool cs, int part)
{
    gp_wbuf w;
    gp_wbuf_init(&w);
    uint16_t op;
    if (cs) {
        op = GP_OP_DIRECT_COPEN;
        gp_DIRECT_COPEN_req_encode(
            &w, &(gp_DIRECT_COPEN_req){.fkid = fkid,
                                       .write = need != G_READ,
                                       .part = (uint8_t)part});
    } else if (need != G_READ) {
        /* writable: DIRECT_WOPEN, which says whether the fork is in
         * locked mode (servers/direct.c) */
        op = GP_OP_DIRECT_WOPEN;
        gp_DIRECT_WOPEN_req_encode(
            &w, &(gp_DIRECT_WOPEN_req){.fkid = fkid, .sieve = need == G_SIEVE});
    } else {
        op = GP_OP_DIRECT_OPEN;
        gp_DIRECT_OPEN_req_encode(&w, &(gp_DIRECT_OPEN_req){.fkid = fkid});
    }
    uint64_t id = w.err ? 0 : chan_send(ch, op, &w);
    gp_wbuf_free(&w);
    return id;
}

/* The reply to gc_dg_grant_ask's request id (part 0): its descriptor kept in
 * the table, 0 with *gp, or an error (GFS_EDIRECT: refused). */
int gc_dg_grant_take_locked(dchan *ch, uint64_t id, int server, uint64_t fkid,
                            int need, bool cs, dgrant **gp)
{
    bool write = need != G_READ;
    uint8_t out[64];
    uint32_t outlen = 0;
    int fd = -1;
    int rc = chan_finish(ch, id, out, sizeof(out), &outlen, &fd);
    gp_DIRECT_WOPEN_rep m = {0};
    if (!rc) {
        gp_rbuf r;
        gp_rbuf_init(&r, out, outlen);
        gp_DIRECT_OPEN_rep ro; /* DIRECT_COPEN's has its form */
        if (fd < 0 || (write && !cs ? gp_DIRECT_WOPEN_rep_decode(&r, &m)
                                    : gp_DIRECT_OPEN_rep_decode(&r, &ro)))
            rc = GFS_EPROTO;
        else if (!write || cs)
            m.base = ro.base;
    }
    dgrant *g = gc_dg_grant_find_locked(server, fkid);
    bool fresh = !g;
    if (!rc && fresh && !(g = calloc(1, sizeof(*g))))
        rc = -ENOMEM;
    if (rc) {
        if (fd >= 0)
            close(fd);
        return rc;
    }
    if (fresh) {
        *g = (dgrant){.server = server,
                      .fkid = fkid,
                      .rfd = -1,
                      .wfd = -1,
                      .cfd = -1,
                      .cs = cs,
                      .base = m.base};
        pthread_mutex_init(&g->xlock, NULL);
        g->next = gc_dg.grants;
        gc_dg.grants = g;
    }
    if (write) {
        g->wfd = fd;
        g->locked = m.locked != 0;
    } else
        g->rfd = fd;
    *gp = g;
    return 0;
}

/* A checksummed grant g just given for `need`: its sidecar (DIRECT_COPEN
 * part 1) if we lack it; without it the file's grant is given back.  0 or
 * an error. */
static int grant_sidecar_locked(dchan *ch, dgrant *g, int need)
{
    if (g->cfd >= 0)
        return 0;
    bool write = need != G_READ;
    uint8_t out[64];
    uint32_t outlen = 0;
    int cfd = -1;
    int rc = chan_finish(ch, gc_dg_grant_ask(ch, g->fkid, need, true, 1), out,
                         sizeof(out), &outlen, &cfd);
    if (!rc) {
        gp_rbuf r;
        gp_rbuf_init(&r, out, outlen);
        gp_DIRECT_COPEN_rep cm;
        if (cfd < 0 || gp_DIRECT_COPEN_rep_decode(&r, &cm))
            rc = GFS_EPROTO;
    }
    if (!rc) {
        g->cfd = cfd;
        return 0;
    }
    if (cfd >= 0)
        close(cfd);
    int *fd = write ? &g->wfd : &g->rfd;
    close(*fd);
    *fd = -1;
    gp_wbuf w;
    gp_wbuf_init(&w);
    gp_DIRECT_CLOSE_req_encode(
        &w, &(gp_DIRECT_CLOSE_req){.fkid = g->fkid, .write = write});
    if (!w.err && ch->fd >= 0)
        chan_call_fd(ch, GP_OP_DIRECT_CLOSE, &w, out, sizeof(out), &outlen,
                     NULL);
    gp_wbuf_free(&w);
    return rc;
}

/* Pin a descriptor of fork fkid on c's server for `need` (G_READ,
 * G_WRITE, G_SIEVE: writable and in locked mode), of a checksummed fork
 * (cs, DIRECT_COPEN: with its sidecar) or not: asked for if we have none.
 * 0 with *gp (release with gc_dg_grant_put) and the descriptor to use in *fdp
 * (read here: another thread may make a read-only grant writable while
 * this one's transfer runs), or an error (GFS_EDIRECT: refused). */
int gc_dg_grant_get(gc_conn *c, uint64_t fkid, int need, bool cs, dgrant **gp,
                    int *fdp)
{
    int server;
    const char *host, *port;
    gc_conn_address(c, &server, &host, &port);
    gc_dg_atfork_once();
    pthread_mutex_lock(&gc_dg.lock);
    int rc;
    dchan *ch = gc_dg_chan_get_locked(c, &rc); /* also drops void grants */
    dgrant *g = gc_dg_grant_find_locked(server, fkid);
    int have = gc_dg_grant_have_locked(g, need, cs);
    if (have < 0 || (!have && !ch)) {
        rc = have < 0 ? have : rc;
        goto out_unlock;
    }
    if (!have) {
        rc = gc_dg_grant_take_locked(ch, gc_dg_grant_ask(ch, fkid, need, cs, 0),
                                     server, fkid, need, cs, &g);
        if (!rc && cs)
            rc = grant_sidecar_locked(ch, g, need);
    }
    if (!rc) {
        g->inuse++;
        *gp = g;
        *fdp = need != G_READ || g->wfd >= 0 ? g->wfd : g->rfd;
    }
out_unlock:
    pthread_mutex_unlock(&gc_dg.lock);
    return rc;
}

void gc_dg_grant_put(dgrant *g, bool write, uint64_t bytes)
{
    pthread_mutex_lock(&gc_dg.lock);
    if (write)
        g->wrote += bytes;
    else
        g->read += bytes;
    if (--g->inuse == 0 && g->gone) {
        grant_unlink(&gc_dg.gone, g);
        grant_drop(g);
    } else if (!g->inuse)
        pthread_cond_broadcast(&gc_dg.idle);
    pthread_mutex_unlock(&gc_dg.lock);
}

/* Close g's descriptors and tell the server (with the bytes moved). */
static void grant_close_locked(dgrant *g)
{
    dchan *ch = g->server < gc_dg.nchan ? &gc_dg.chan[g->server] : NULL;
    if (g->cfd >= 0) { /* no grant of its own: goes with the file's */
        close(g->cfd);
        g->cfd = -1;
    }
    for (int k = 0; k < 2; k++) {
        int *fd = k ? &g->wfd : &g->rfd;
        if (*fd < 0)
            continue;
        close(*fd);
        *fd = -1;
        if (!ch || ch->fd < 0)
            continue; /* the server dropped it with the channel */
        gp_wbuf w;
        gp_wbuf_init(&w);
        gp_DIRECT_CLOSE_req_encode(&w, &(gp_DIRECT_CLOSE_req){
                                           .fkid = g->fkid,
                                           .write = (uint8_t)k,
                                           .written = g->wrote,
                                           .read = g->read,
                                       });
        g->wrote = g->read = 0; /* reported once */
        uint8_t out[16];
        uint32_t outlen;
        if (!w.err)
            chan_call_fd(ch, GP_OP_DIRECT_CLOSE, &w, out, sizeof(out), &outlen,
                         NULL);
        gp_wbuf_free(&w);
    }
}

/* Release (server, fkid)'s grant once no request uses it.  Other threads
 * may release, forget or ask for it again while we wait (two opens of a
 * fork share its grant), so it is looked up afresh after every wait: no
 * pointer into the table is kept across one. */
void gc_dg_release(int server, uint64_t fkid)
{
    pthread_mutex_lock(&gc_dg.lock);
    dgrant *g;
    while ((g = gc_dg_grant_find_locked(server, fkid)) && g->inuse)
        pthread_cond_wait(&gc_dg.idle, &gc_dg.lock);
    if (g) {
        grant_unlink(&gc_dg.grants, g);
        grant_close_locked(g);
        grant_free(g);
    }
    pthread_mutex_unlock(&gc_dg.lock);
}

void gc_dg_shutdown(void)
{
    pthread_mutex_lock(&gc_dg.lock);
    while (gc_dg.grants) {
        dgrant *g = gc_dg.grants;
        if (g->inuse) { /* the table may change meanwhile: look again */
            pthread_cond_wait(&gc_dg.idle, &gc_dg.lock);
            continue;
        }
        gc_dg.grants = g->next;
        grant_close_locked(g);
        grant_free(g);
    }
    chans_close_all();
    pthread_mutex_unlock(&gc_dg.lock);
}
