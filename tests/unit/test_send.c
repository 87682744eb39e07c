/*
 * test_send.c -- proto/gsend.c without a server, over a socketpair: a
 * stream of more than IOV_MAX entries (some empty) arrives whole and in
 * order while a slow reader and a stream of signals force short writes
 * and EINTR; a non-blocking socket stops at -EAGAIN with the iovec
 * advanced exactly past what was sent, and the same call finishes the
 * stream later; a peer that has gone gives -EPIPE, not SIGPIPE;
 * gp_write_all writes a whole buffer to a file.
 *
 * Threads: the main thread sends; one reader thread per stream.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "gsend.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "utest.h"

#define NENT (IOV_MAX * 3 + 7)

static uint8_t *src; /* the stream: byte i is pattern(i) */
static size_t total; /* its length */
static struct iovec iov[NENT];
static volatile sig_atomic_t nsig;

static uint8_t pattern(size_t i)
{
    return (uint8_t)(i * 131 + (i >> 9));
}

/* NENT entries over src: lengths 0 .. 1500, every 5th empty. */
static void build_iov(void)
{
    size_t off = 0;
    for (int i = 0; i < NENT; i++) {
        size_t len = i % 5 == 0 ? 0 : (size_t)(i * 37) % 1500 + 1;
        iov[i] = (struct iovec){src + off, len};
        off += len;
    }
    total = off;
}

typedef struct reader {
    int fd;
    size_t got;
    size_t bad; /* bytes that differ from the pattern */
    bool slow;
} reader;

static void *read_main(void *arg)
{
    reader *r = arg;
    uint8_t buf[4096];
    for (;;) {
        ssize_t k = read(r->fd, buf, r->slow ? 512 : sizeof(buf));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        for (ssize_t i = 0; i < k; i++)
            r->bad += buf[i] != pattern(r->got + (size_t)i);
        r->got += (size_t)k;
        if (r->slow && r->got % 8 == 0) {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

static void on_alarm(int sig)
{
    (void)sig;
    nsig++;
}

static void pair(int sv[2], int sndbuf)
{
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
}

/* Blocking sends under signals and a slow reader. */
static void test_blocking(void)
{
    int sv[2];
    pair(sv, 4096);
    reader r = {.fd = sv[1], .slow = true};
    pthread_t t;
    pthread_create(&t, NULL, read_main, &r);

    struct sigaction sa = {.sa_handler = on_alarm}; /* no SA_RESTART */
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 300}, {0, 300}};
    setitimer(ITIMER_REAL, &it, NULL);
    build_iov();
    int rc = gp_send_all(sv[0], iov, NENT);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    CHECK_EQ(rc, 0);
    close(sv[0]);
    pthread_join(t, NULL);
    close(sv[1]);
    CHECK_EQ(r.got, total);
    CHECK_EQ(r.bad, 0);
    CHECK_MSG(nsig > 0, "no signal arrived during the send");
}

/* Non-blocking: stops at -EAGAIN, iov advanced exactly; then finishes. */
static void test_nonblocking(void)
{
    int sv[2];
    pair(sv, 4096);
    build_iov();
    fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
    int rc = gp_send_all(sv[0], iov, NENT);
    CHECK_MSG(rc == -EAGAIN || rc == -EWOULDBLOCK, "rc %d", rc);

    /* what is left in iov is exactly what has not been sent */
    int first = 0;
    while (first < NENT && iov[first].iov_len == 0)
        first++;
    size_t left = 0;
    for (int i = first; i < NENT; i++)
        left += iov[i].iov_len;
    CHECK(first < NENT);
    CHECK(left > 0 && left < total);
    size_t sent = total - left;
    if (first < NENT)
        CHECK(iov[first].iov_base == src + sent);

    reader r = {.fd = sv[1]};
    pthread_t t;
    pthread_create(&t, NULL, read_main, &r);
    fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) & ~O_NONBLOCK);
    CHECK_EQ(gp_send_all(sv[0], iov, NENT), 0);
    close(sv[0]);
    pthread_join(t, NULL);
    close(sv[1]);
    CHECK_EQ(r.got, total);
    CHECK_EQ(r.bad, 0);
}

/* The peer has gone: -EPIPE, and this process is still alive. */
static void test_epipe(void)
{
    int sv[2];
    pair(sv, 4096);
    close(sv[1]);
    build_iov();
    CHECK_EQ(gp_send_all(sv[0], iov, NENT), -EPIPE);
    close(sv[0]);
    struct iovec none[3] = {{src, 0}, {src, 0}, {src, 0}};
    CHECK_EQ(gp_send_all(-1, none, 3), 0); /* nothing to send: no call */
    CHECK_EQ(gp_send_all(-1, iov, 0), 0);
    struct iovec one = {src, 1};
    CHECK_EQ(gp_send_all(-1, &one, 1), -EBADF);
}

static void test_write_file(void)
{
    char path[] = "/tmp/test_send.XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    unlink(path);
    CHECK_EQ(gp_write_all(fd, src, total), 0);
    CHECK_EQ(gp_write_all(fd, src, 0), 0);
    CHECK_EQ(lseek(fd, 0, SEEK_END), (off_t)total);
    uint8_t *back = malloc(total);
    CHECK(back && pread(fd, back, total, 0) == (ssize_t)total);
    CHECK(back && memcmp(back, src, total) == 0);
    free(back);
    close(fd);
    CHECK_EQ(gp_write_all(fd, src, 1), -EBADF);
}

int main(void)
{
    src = malloc((size_t)NENT * 1500);
    if (!src)
        return 1;
    for (size_t i = 0; i < (size_t)NENT * 1500; i++)
        src[i] = pattern(i);
    test_blocking();
    test_nonblocking();
    test_epipe();
    test_write_file();
    free(src);
    return utest_exit("test_send");
}
