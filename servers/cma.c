/*
 * cma.c -- cross-memory attach: the server's side of the same-host
 * transport (gproto.h).  A local client names the memory that holds (write)
 * or receives (read) a request's data stream; the server copies straight
 * between it and its own buffers with process_vm_readv / process_vm_writev,
 * so bulk data never passes through a socket buffer.  This is Mercury's
 * NA SM idea (the receiver copies from the sender's address space).
 *
 * Threads: handler threads, each on its own connection's gsrv_rmem; no
 * shared state, no locks.
 *
 * Safety: the kernel checks the copy against the client's mappings and
 * ptrace rules (same user unless privileged), so a bad address or a
 * foreign process gives an error (-EFAULT, -EPERM, -ESRCH), never a copy
 * into the wrong place.  The pid comes from the socket (SO_PEERCRED), not
 * from the client's word, and a pidfd taken at accept proves before every
 * copy that it still names the same process (a socket inherited by a
 * child outlives its parent, whose pid may then be reused).
 */
#include "gsrv_internal.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif
#define CMA_IOV (IOV_MAX < 1024 ? IOV_MAX : 1024)

/* The client's address of stream byte pos: segment, piece, offset. */
typedef struct mpos {
    size_t s;     /* segment */
    uint64_t p;   /* piece in it */
    uint64_t off; /* byte in the piece */
} mpos;

static uint64_t seg_bytes(const gsrv_mseg *g)
{
    return g->size * g->count;
}

/* The piece of client memory at *at, at most len bytes; advances *at. */
static struct iovec take(const gsrv_rmem *m, mpos *at, uint64_t len)
{
    while (at->s < m->n &&
           (at->p >= m->s[at->s].count || m->s[at->s].size == 0)) {
        at->s++;
        at->p = at->off = 0;
    }
    const gsrv_mseg *g = &m->s[at->s];
    uint64_t left = g->size - at->off;
    if (len > left)
        len = left;
    struct iovec v = {
        (void *)(uintptr_t)(g->addr + at->p * g->stride + at->off),
        (size_t)len};
    at->off += len;
    if (at->off == g->size) {
        at->off = 0;
        at->p++;
    }
    return v;
}

static mpos seek(const gsrv_rmem *m, uint64_t pos)
{
    size_t lo = 0, hi = m->n;
    while (hi - lo > 1) { /* the last segment starting at or before pos */
        size_t mid = (lo + hi) / 2;
        if (m->s[mid].cum <= pos)
            lo = mid;
        else
            hi = mid;
    }
    const gsrv_mseg *g = &m->s[lo];
    uint64_t rel = pos - g->cum;
    mpos at = {lo, 0, 0};
    if (g->size) {
        at.p = rel / g->size;
        at.off = rel % g->size;
    }
    return at;
}

/* Drop the first k bytes of v[0..*n). */
static void iov_advance(struct iovec **v, int *n, size_t k)
{
    while (k > 0 && *n > 0) {
        size_t a = (*v)->iov_len < k ? (*v)->iov_len : k;
        (*v)->iov_base = (char *)(*v)->iov_base + a;
        (*v)->iov_len -= a;
        if ((*v)->iov_len == 0) {
            (*v)++;
            (*n)--;
        }
        k -= a;
    }
}

/* One process_vm_* call's worth: local[0..nl) against remote[0..nr) of
 * equal total length; partial transfers are resumed. */
static int xfer_pairs(pid_t pid, int pidfd, bool push, struct iovec *l, int nl,
                      struct iovec *r, int nr)
{
    /* The process the connection came from must still be there: its pid
     * could otherwise name a newer process (a pidfd turns readable when
     * its process exits). */
    struct pollfd pf = {.fd = pidfd, .events = POLLIN};
    if (pidfd < 0 || poll(&pf, 1, 0) != 0)
        return -ESRCH;
    while (nl > 0 && nr > 0) {
        ssize_t k = push ? process_vm_writev(pid, l, (unsigned long)nl, r,
                                             (unsigned long)nr, 0)
                         : process_vm_readv(pid, l, (unsigned long)nl, r,
                                            (unsigned long)nr, 0);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (k == 0)
            return -EFAULT;
        iov_advance(&l, &nl, (size_t)k);
        iov_advance(&r, &nr, (size_t)k);
    }
    return 0;
}

int gsrv_rmem_init(gsrv_rmem *m, const gsrv_conn *c)
{
    memset(m, 0, sizeof(*m));
    m->pidfd = -1;
    if (!c->local || c->pid <= 0)
        return -EOPNOTSUPP; /* TCP, or no pidfd for the peer */
    m->pid = c->pid;
    m->pidfd = c->pidfd;
    return 0;
}

int gsrv_rmem_flush(gsrv_rmem *m)
{
    if (m->bn > 0 && !m->err)
        m->err =
            xfer_pairs(m->pid, m->pidfd, m->push, m->bl, m->bn, m->br, m->bn);
    m->bn = 0;
    return m->err;
}

void gsrv_rmem_copy_at(gsrv_rmem *m, uint64_t pos, void *local, size_t len)
{
    if (m->err || len == 0)
        return;
    if (!m->bl) {
        m->bl = malloc(CMA_IOV * sizeof(*m->bl));
        m->br = malloc(CMA_IOV * sizeof(*m->br));
        if (!m->bl || !m->br) {
            m->err = -ENOMEM;
            return;
        }
    }
    if (pos > m->bytes || len > m->bytes - pos) {
        m->err = -EFAULT; /* the client named less memory than data */
        return;
    }
    mpos at = seek(m, pos);
    char *d = local;
    while (len > 0) {
        if (m->bn == CMA_IOV && gsrv_rmem_flush(m))
            return;
        struct iovec r = take(m, &at, len);
        m->bl[m->bn] = (struct iovec){d, r.iov_len};
        m->br[m->bn] = r;
        m->bn++;
        d += r.iov_len;
        len -= r.iov_len;
    }
}

int gsrv_rmem_xfer(gsrv_rmem *m, bool push, const struct iovec *local,
                   size_t nl)
{
    uint64_t pos = m->pos;
    bool save = m->push;
    m->push = push;
    for (size_t i = 0; i < nl && !m->err; i++) {
        gsrv_rmem_copy_at(m, pos, local[i].iov_base, local[i].iov_len);
        pos += local[i].iov_len;
    }
    int rc = gsrv_rmem_flush(m);
    m->push = save;
    m->pos = pos;
    return rc;
}

int gsrv_rmem_decode(gp_rbuf *r, gsrv_rmem *m, uint64_t bytes, bool check)
{
    uint32_t n = gp_get_u32(r);
    if (r->err)
        return r->err;
    /* an extent is the smallest encoded segment: 17 bytes */
    if (n > GP_MAX_SEGMENTS || (uint64_t)n * 17 > gp_remaining(r))
        return GFS_EPROTO;
    m->s = malloc((n ? n : 1) * sizeof(*m->s));
    if (!m->s)
        return -ENOMEM;
    uint64_t sum = 0;
    bool bad = false;
    for (uint32_t i = 0; i < n; i++) {
        gp_seg g;
        gp_get_seg(r, &g);
        if (r->err)
            return r->err;
        gsrv_mseg *ms = &m->s[i];
        *ms = (gsrv_mseg){.addr = g.off, .size = g.size, .count = 1};
        if (g.kind == GP_SEG_STRIDED) {
            if (g.nlev != 1) {
                bad = true; /* memory folds one level deep */
                continue;
            }
            ms->count = g.count[0];
            ms->stride = g.stride[0];
        }
        /* the whole segment must lie in the address space */
        uint64_t span, tot;
        if (ms->count &&
            (__builtin_mul_overflow(ms->count - 1, ms->stride, &span) ||
             __builtin_add_overflow(span, ms->size, &span) ||
             span > UINTPTR_MAX - ms->addr ||
             __builtin_mul_overflow(ms->size, ms->count, &tot))) {
            bad = true;
            continue;
        }
        ms->cum = sum;
        uint64_t b = seg_bytes(ms);
        if (b > UINT64_MAX - sum) {
            bad = true;
            continue;
        }
        sum += b;
    }
    m->n = n;
    m->bytes = sum;
    m->pos = 0;
    if (bad || (check && sum != bytes))
        return GFS_EPROTO;
    return 0;
}

void gsrv_rmem_free(gsrv_rmem *m)
{
    if (!m)
        return;
    free(m->s);
    free(m->bl);
    free(m->br);
    m->s = NULL;
    m->bl = m->br = NULL;
    m->n = 0;
}
