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
 * from the client's word.
 */
#include "gsrv_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/uio.h>

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif
#define CMA_IOV (IOV_MAX < 1024 ? IOV_MAX : 1024)

/* Advance (*i, *off) over v[] by k bytes. */
static void advance(const struct iovec *v, size_t n, size_t *i, size_t *off,
                    size_t k)
{
    while (k > 0 && *i < n) {
        size_t left = v[*i].iov_len - *off;
        if (k < left) {
            *off += k;
            return;
        }
        k -= left;
        (*i)++;
        *off = 0;
    }
}

int gsrv_rmem_xfer(gsrv_rmem *m, bool push, const struct iovec *local,
                   size_t nl)
{
    struct iovec lv[CMA_IOV], rv[CMA_IOV];
    size_t li = 0, loff = 0;
    for (;;) {
        /* the next batch of local memory ... */
        int ln = 0;
        size_t lbytes = 0;
        for (size_t j = li, o = loff; j < nl && ln < CMA_IOV; j++, o = 0) {
            size_t len = local[j].iov_len - o;
            if (len) {
                lv[ln++] = (struct iovec){(char *)local[j].iov_base + o, len};
                lbytes += len;
            }
        }
        if (ln == 0)
            return 0;
        /* ... and as much of the client's memory as it fills */
        int rn = 0;
        size_t rbytes = 0;
        for (size_t ri = m->i, ro = m->off;
             rbytes < lbytes && ri < m->n && rn < CMA_IOV; ri++, ro = 0) {
            size_t len = m->v[ri].iov_len - ro;
            if (len > lbytes - rbytes)
                len = lbytes - rbytes;
            if (len)
                rv[rn++] = (struct iovec){(char *)m->v[ri].iov_base + ro, len};
            rbytes += len;
        }
        if (rn == 0)
            return -EFAULT; /* the client named less memory than data */
        ssize_t k = push ? process_vm_writev(m->pid, lv, (unsigned long)ln, rv,
                                             (unsigned long)rn, 0)
                         : process_vm_readv(m->pid, lv, (unsigned long)ln, rv,
                                            (unsigned long)rn, 0);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (k == 0)
            return -EFAULT;
        advance(local, nl, &li, &loff, (size_t)k);
        advance(m->v, m->n, &m->i, &m->off, (size_t)k);
    }
}

int gsrv_rmem_decode(gp_rbuf *r, gsrv_rmem *m, uint64_t bytes, bool check)
{
    uint32_t n = gp_get_u32(r);
    if (r->err)
        return r->err;
    if (n > GP_MAX_MEMV || (uint64_t)n * 16 > gp_remaining(r))
        return GFS_EPROTO;
    m->v = malloc((n ? n : 1) * sizeof(*m->v));
    if (!m->v)
        return -ENOMEM;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t a = gp_get_u64(r), len = gp_get_u64(r);
        if (len > UINT64_MAX - sum || a > UINTPTR_MAX ||
            len > UINTPTR_MAX - a) {
            sum = UINT64_MAX;
            len = 0;
        } else {
            sum += len;
        }
        m->v[i] = (struct iovec){(void *)(uintptr_t)a, (size_t)len};
    }
    m->n = n;
    m->i = 0;
    m->off = 0;
    if (r->err)
        return r->err;
    if (check && sum != bytes)
        return GFS_EPROTO;
    return 0;
}

void gsrv_rmem_free(gsrv_rmem *m)
{
    if (!m)
        return;
    free(m->v);
    free(m->cum);
    free(m->bl);
    free(m->br);
    m->v = NULL;
    m->cum = NULL;
    m->bl = m->br = NULL;
    m->n = 0;
}

int gsrv_rmem_flush(gsrv_rmem *m)
{
    if (m->bn > 0 && !m->err) {
        gsrv_rmem r = {.pid = m->pid, .v = m->br, .n = (size_t)m->bn};
        m->err = gsrv_rmem_xfer(&r, m->push, m->bl, (size_t)m->bn);
    }
    m->bn = 0;
    return m->err;
}

/* Index of the iovec holding stream byte pos (cum[i] <= pos < cum[i+1]). */
static size_t find_iov(const gsrv_rmem *m, uint64_t pos)
{
    size_t lo = 0, hi = m->n;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (m->cum[mid] <= pos)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

void gsrv_rmem_copy_at(gsrv_rmem *m, uint64_t pos, void *dst, size_t len)
{
    if (m->err || len == 0)
        return;
    if (!m->cum) {
        m->cum = malloc((m->n + 1) * sizeof(*m->cum));
        m->bl = malloc(CMA_IOV * sizeof(*m->bl));
        m->br = malloc(CMA_IOV * sizeof(*m->br));
        if (!m->cum || !m->bl || !m->br) {
            m->err = -ENOMEM;
            return;
        }
        m->cum[0] = 0;
        for (size_t i = 0; i < m->n; i++)
            m->cum[i + 1] = m->cum[i] + m->v[i].iov_len;
    }
    if (m->n == 0 || pos + len > m->cum[m->n]) {
        m->err = -EFAULT;
        return;
    }
    size_t i = find_iov(m, pos);
    char *d = dst;
    while (len > 0) {
        while (m->v[i].iov_len == 0 || pos >= m->cum[i + 1])
            i++;
        size_t in = (size_t)(pos - m->cum[i]);
        size_t k = m->v[i].iov_len - in;
        if (k > len)
            k = len;
        if (m->bn == CMA_IOV && gsrv_rmem_flush(m))
            return;
        m->bl[m->bn] = (struct iovec){d, k};
        m->br[m->bn] = (struct iovec){(char *)m->v[i].iov_base + in, k};
        m->bn++;
        d += k;
        pos += k;
        len -= k;
    }
}
