/*
 * test_cma.c -- servers/cma.c without a server: `mem` lists decoded and
 * checked, and every (position, length) of a stream made of extents and a
 * strided segment copied in both directions against a byte model.  The
 * "client" is this very process (cross-memory attach to oneself is
 * allowed), so no socket and no second process are needed -- except one
 * child that exits, to show a pid whose process is gone gets no copies.
 *
 * Threads: single-threaded.
 */
#include "gsrv_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "utest.h"

static void put_extent(gp_wbuf *w, const void *p, uint64_t len)
{
    gp_seg s = {
        .kind = GP_SEG_EXTENT, .off = (uint64_t)(uintptr_t)p, .size = len};
    gp_put_seg(w, &s);
}

static void put_strided(gp_wbuf *w, const void *p, uint64_t size,
                        uint64_t count, uint64_t stride, uint8_t nlev)
{
    gp_seg s = {.kind = GP_SEG_STRIDED,
                .off = (uint64_t)(uintptr_t)p,
                .size = size,
                .nlev = nlev};
    for (uint8_t i = 0; i < nlev; i++) {
        s.count[i] = count;
        s.stride[i] = stride;
    }
    gp_put_seg(w, &s);
}

static int decode(gp_wbuf *w, gsrv_rmem *m, uint64_t bytes)
{
    gp_rbuf r;
    gp_rbuf_init(&r, w->data, w->len);
    memset(m, 0, sizeof(*m));
    m->pid = getpid();
    m->pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
    int rc = gsrv_rmem_decode(&r, m, bytes, true);
    if (!rc && !gp_done(&r))
        rc = GFS_EPROTO;
    return rc;
}

static void release(gsrv_rmem *m)
{
    if (m->pidfd >= 0)
        close(m->pidfd);
    gsrv_rmem_free(m);
}

/* A stream of 10 + 4 x 3 + 5 bytes: an extent, a strided segment whose
 * pieces have gaps, another extent.  model[] is the stream in order. */
static char A[10], B[32], C[5];
static char model[27];

static void stream_mem(gp_wbuf *w)
{
    gp_wbuf_init(w);
    gp_put_u32(w, 3);
    put_extent(w, A, sizeof(A));
    put_strided(w, B, 3, 4, 8, 1);
    put_extent(w, C, sizeof(C));
}

/* The stream as the memory now holds it. */
static void read_stream(char *out)
{
    size_t k = 0;
    memcpy(out + k, A, sizeof(A));
    k += sizeof(A);
    for (int p = 0; p < 4; p++, k += 3)
        memcpy(out + k, B + 8 * p, 3);
    memcpy(out + k, C, sizeof(C));
}

/* Fresh memory, and model[] its stream. */
static void fill_model(void)
{
    for (size_t i = 0; i < sizeof(A); i++)
        A[i] = (char)('a' + i);
    for (size_t i = 0; i < sizeof(B); i++)
        B[i] = (char)('0' + i % 10);
    for (size_t i = 0; i < sizeof(C); i++)
        C[i] = (char)('V' + i);
    read_stream(model);
}

static void test_decode(void)
{
    gp_wbuf w;
    gsrv_rmem m;
    stream_mem(&w);
    CHECK_EQ(decode(&w, &m, sizeof(model)), 0);
    CHECK_EQ(m.n, 3);
    CHECK_EQ(m.bytes, sizeof(model));
    release(&m);
    CHECK_EQ(decode(&w, &m, sizeof(model) - 1), GFS_EPROTO); /* short */
    release(&m);
    gp_wbuf_free(&w);

    /* memory folds one level deep only */
    gp_wbuf_init(&w);
    gp_put_u32(&w, 1);
    put_strided(&w, B, 1, 2, 2, 2);
    CHECK_EQ(decode(&w, &m, 4), GFS_EPROTO);
    release(&m);
    gp_wbuf_free(&w);

    /* a segment running past the end of the address space */
    gp_wbuf_init(&w);
    gp_put_u32(&w, 1);
    put_strided(&w, (void *)(uintptr_t)(UINT64_MAX - 8), 2, 2, 1ull << 62, 1);
    CHECK_EQ(decode(&w, &m, 4), GFS_EPROTO);
    release(&m);
    gp_wbuf_free(&w);

    /* more segments than the payload holds */
    gp_wbuf_init(&w);
    gp_put_u32(&w, 1000);
    put_extent(&w, A, 1);
    CHECK_EQ(decode(&w, &m, 1), GFS_EPROTO);
    release(&m);
    gp_wbuf_free(&w);
}

/* Every (pos, len): pull into a local buffer, push from one. */
static void test_copy_at(void)
{
    gp_wbuf w;
    gsrv_rmem m;
    stream_mem(&w);
    int bad = 0;
    for (size_t pos = 0; pos < sizeof(model); pos++) {
        for (size_t len = 1; pos + len <= sizeof(model); len++) {
            char got[sizeof(model)];
            memset(got, '#', sizeof(got));
            CHECK_EQ(decode(&w, &m, sizeof(model)), 0);
            gsrv_rmem_copy_at(&m, pos, got, len);
            if (gsrv_rmem_flush(&m) || memcmp(got, model + pos, len))
                bad++;
            release(&m);

            /* push: the stream bytes [pos, pos + len) become 'x' */
            char xs[sizeof(model)];
            memset(xs, 'x', sizeof(xs));
            CHECK_EQ(decode(&w, &m, sizeof(model)), 0);
            m.push = true;
            gsrv_rmem_copy_at(&m, pos, xs, len);
            int rc = gsrv_rmem_flush(&m);
            release(&m);
            char want[sizeof(model)], now[sizeof(model)];
            memcpy(want, model, sizeof(want));
            memset(want + pos, 'x', len);
            read_stream(now);
            if (rc || memcmp(now, want, sizeof(want)))
                bad++;
            /* the gaps of the strided segment are never touched */
            for (int p = 0; p < 4; p++)
                for (int g = 3; g < 8 && 8 * p + g < (int)sizeof(B); g++)
                    if (B[8 * p + g] != (char)('0' + (8 * p + g) % 10))
                        bad++;
            fill_model();
        }
    }
    CHECK_EQ(bad, 0);

    /* past the stream: an error, nothing copied */
    CHECK_EQ(decode(&w, &m, sizeof(model)), 0);
    char got[4];
    gsrv_rmem_copy_at(&m, sizeof(model) - 2, got, 4);
    CHECK_EQ(gsrv_rmem_flush(&m), -EFAULT);
    release(&m);
    gp_wbuf_free(&w);
}

/* gsrv_rmem_xfer walks the stream in order across calls. */
static void test_sequential(void)
{
    gp_wbuf w;
    gsrv_rmem m;
    stream_mem(&w);
    CHECK_EQ(decode(&w, &m, sizeof(model)), 0);
    char a[7], b[20];
    struct iovec v[2] = {{a, sizeof(a)}, {b, sizeof(b)}};
    CHECK_EQ(gsrv_rmem_xfer(&m, false, v, 1), 0);
    CHECK_EQ(gsrv_rmem_xfer(&m, false, v + 1, 1), 0);
    CHECK(memcmp(a, model, sizeof(a)) == 0);
    CHECK(memcmp(b, model + sizeof(a), sizeof(b)) == 0);
    char more;
    struct iovec one = {&more, 1};
    CHECK_EQ(gsrv_rmem_xfer(&m, false, &one, 1), -EFAULT); /* all used */
    release(&m);
    gp_wbuf_free(&w);
}

/* A pidfd whose process has exited: no copy, whatever the pid names now. */
static void test_gone(void)
{
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
    CHECK(pidfd >= 0);
    waitpid(child, NULL, 0);
    gsrv_mseg seg = {.addr = (uint64_t)(uintptr_t)A, .size = 4, .count = 1};
    gsrv_rmem m = {
        .pid = getpid(), .pidfd = pidfd, .s = &seg, .n = 1, .bytes = 4};
    char got[4];
    struct iovec v = {got, sizeof(got)};
    CHECK_EQ(gsrv_rmem_xfer(&m, false, &v, 1), -ESRCH);
    free(m.bl);
    free(m.br);
    close(pidfd);
}

int main(void)
{
    fill_model();
    test_decode();
    test_copy_at();
    test_sequential();
    test_gone();
    return utest_exit("test_cma");
}
