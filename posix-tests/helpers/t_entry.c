/*
 * t_entry.c -- every descriptor call of glibc's that moves data, called
 * on a Galley descriptor under `galley exec` (posix-tests/
 * test_entry_points.py names the calls, from glibc's symbol table).
 * `t_entry DIR NAME...`: for each NAME, a fresh file DIR/e-NAME holding
 * PATTERN_LEN bytes of a known pattern, then the call, found by dlsym (so the
 * preload's definition when it has one, glibc's otherwise), then the file read
 * back. One line per name: "NAME served" (the right bytes moved; a sync or an
 * advice succeeded and changed nothing), "NAME refused ERRNO" (failed,
 * file unchanged), "NAME WRONG why" (success with bytes lost or made up:
 * exit status 1), "NAME unknown" (no probe: a new call to decide on),
 * "NAME other" (not a call on a file descriptor: sockets, memory,
 * directories, message queues).  Names SYS_x make system call x through
 * syscall(), past its libc wrapper; ioctl_REQ makes that ioctl request
 * (an ordinary program: it does not link libgalley).
 */
#define _GNU_SOURCE
#include <aio.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <termios.h>
#include <unistd.h>

#define PATTERN_LEN 65536
#define AT 4096 /* where probes read or write */
#define LEN 4096

static char dir[4096];
static char path[4200];
static unsigned char want[2 * PATTERN_LEN]; /* what the file must hold */
static size_t want_len;

static unsigned char pat(size_t i, int seed)
{
    return (unsigned char)((i * 131 + (i >> 8) * 7 + (size_t)seed) & 0xff);
}

/* The file with the pattern; its descriptor (O_RDWR) or -1. */
static int fresh(const char *name)
{
    snprintf(path, sizeof(path), "%s/e-%s", dir, name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    for (size_t i = 0; i < PATTERN_LEN; i++)
        want[i] = pat(i, 0);
    want_len = PATTERN_LEN;
    if (pwrite(fd, want, PATTERN_LEN, 0) != PATTERN_LEN) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Does the file hold exactly want[0..want_len)?  (read through a new
 * descriptor, with plain read: served by the preload) */
static const char *check_file(void)
{
    static unsigned char got[2 * PATTERN_LEN + 1];
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return "cannot reopen";
    size_t n = 0;
    ssize_t k;
    while (n < sizeof(got) && (k = read(fd, got + n, sizeof(got) - n)) > 0)
        n += (size_t)k;
    close(fd);
    if (n != want_len)
        return "file size";
    return memcmp(got, want, n) ? "file bytes" : NULL;
}

static void put(size_t at, const unsigned char *b, size_t n)
{
    memcpy(want + at, b, n);
    if (at + n > want_len)
        want_len = at + n;
}

static void *sym(const char *name)
{
    return dlsym(RTLD_DEFAULT, name);
}

/* What a probe found. */
typedef struct {
    int err;         /* the call failed with this errno (0: it did not) */
    const char *bad; /* it succeeded with the wrong outcome */
} outcome;

#define FAILED(e) ((outcome){.err = (e) ? (e) : -1})
#define OK ((outcome){0})
#define BAD(why) ((outcome){.bad = (why)})

static unsigned char buf[PATTERN_LEN], src[LEN];

static void fill_src(int seed)
{
    for (size_t i = 0; i < LEN; i++)
        src[i] = pat(i, seed);
}

/* ---------------------------------------------------------- reads -- */

static outcome got_read(ssize_t k)
{
    if (k < 0)
        return FAILED(errno);
    if (k != LEN)
        return BAD("short read");
    return memcmp(buf, want + AT, LEN) ? BAD("read wrong bytes") : OK;
}

static outcome probe_read(const char *name, int fd)
{
    memset(buf, 0, sizeof(buf));
    struct iovec v[2] = {{buf, 1000}, {buf + 1000, LEN - 1000}};
    void *f = sym(name);
    ssize_t k;
    if (!strcmp(name, "read") || !strcmp(name, "__read") ||
        !strcmp(name, "readv") || !strcmp(name, "__read_chk")) {
        if (lseek(fd, AT, SEEK_SET) != AT)
            return BAD("lseek");
        if (!strcmp(name, "readv"))
            k = ((ssize_t(*)(int, const struct iovec *, int))f)(fd, v, 2);
        else if (!strcmp(name, "__read_chk"))
            k = ((ssize_t(*)(int, void *, size_t, size_t))f)(fd, buf, LEN,
                                                             sizeof(buf));
        else
            k = ((ssize_t(*)(int, void *, size_t))f)(fd, buf, LEN);
        outcome o = got_read(k);
        if (!o.err && !o.bad && lseek(fd, 0, SEEK_CUR) != AT + LEN)
            return BAD("offset not advanced");
        return o;
    }
    if (!strcmp(name, "__pread_chk") || !strcmp(name, "__pread64_chk"))
        k = ((ssize_t(*)(int, void *, size_t, off_t, size_t))f)(
            fd, buf, LEN, AT, sizeof(buf));
    else if (strstr(name, "v2"))
        k = ((ssize_t(*)(int, const struct iovec *, int, off_t, int))f)(
            fd, v, 2, AT, 0);
    else if (strstr(name, "preadv"))
        k = ((ssize_t(*)(int, const struct iovec *, int, off_t))f)(fd, v, 2,
                                                                   AT);
    else
        k = ((ssize_t(*)(int, void *, size_t, off_t))f)(fd, buf, LEN, AT);
    return got_read(k);
}

/* --------------------------------------------------------- writes -- */

static outcome probe_write(const char *name, int fd)
{
    fill_src(1);
    struct iovec v[2] = {{src, 3000}, {src + 3000, LEN - 3000}};
    void *f = sym(name);
    ssize_t k;
    if (!strcmp(name, "write") || !strcmp(name, "__write") ||
        !strcmp(name, "writev")) {
        if (lseek(fd, AT, SEEK_SET) != AT)
            return BAD("lseek");
        if (!strcmp(name, "writev"))
            k = ((ssize_t(*)(int, const struct iovec *, int))f)(fd, v, 2);
        else
            k = ((ssize_t(*)(int, const void *, size_t))f)(fd, src, LEN);
    } else if (strstr(name, "v2"))
        k = ((ssize_t(*)(int, const struct iovec *, int, off_t, int))f)(
            fd, v, 2, AT, 0);
    else if (strstr(name, "pwritev"))
        k = ((ssize_t(*)(int, const struct iovec *, int, off_t))f)(fd, v, 2,
                                                                   AT);
    else
        k = ((ssize_t(*)(int, const void *, size_t, off_t))f)(fd, src, LEN, AT);
    if (k < 0)
        return FAILED(errno);
    if (k != LEN)
        return BAD("short write");
    put(AT, src, LEN);
    return OK;
}

/* ---------------------------------------------- between descriptors -- */

/* A local file holding src (seed 2), or -1. */
static int local_src(void)
{
    char tmpl[] = "/tmp/t_entry-XXXXXX";
    int lfd = mkstemp(tmpl);
    if (lfd < 0)
        return -1;
    unlink(tmpl);
    fill_src(2);
    if (pwrite(lfd, src, LEN, 0) != LEN) {
        close(lfd);
        return -1;
    }
    return lfd;
}

/* Galley -> local and local -> Galley, both with the call f. */
static outcome probe_copy(const char *name, int fd)
{
    void *f = sym(name);
    bool cfr = strstr(name, "copy_file_range") != NULL;
    int lfd = local_src();
    if (lfd < 0)
        return BAD("no local file");
    /* Galley (at AT, by position) -> local (at its offset, 0) */
    off64_t in = AT, out0 = 0;
    ssize_t k;
    if (lseek(lfd, 0, SEEK_SET) != 0)
        return BAD("lseek");
    if (cfr)
        k = ((ssize_t(*)(int, off64_t *, int, off64_t *, size_t, unsigned))f)(
            fd, &in, lfd, &out0, LEN, 0);
    else
        k = ((ssize_t(*)(int, int, off64_t *, size_t))f)(lfd, fd, &in, LEN);
    if (k < 0) {
        int e = errno;
        close(lfd);
        return FAILED(e);
    }
    memset(buf, 0, LEN);
    if (k != LEN || in != AT + LEN || pread(lfd, buf, LEN, 0) != LEN ||
        memcmp(buf, want + AT, LEN)) {
        close(lfd);
        return BAD("Galley -> local copy wrong");
    }
    /* local (at its offset 0) -> Galley (at its offset 2 * AT) */
    if (lseek(lfd, 0, SEEK_SET) != 0 || pwrite(lfd, src, LEN, 0) != LEN ||
        lseek(fd, 2 * AT, SEEK_SET) != 2 * AT) {
        close(lfd);
        return BAD("lseek");
    }
    if (cfr)
        k = ((ssize_t(*)(int, off64_t *, int, off64_t *, size_t, unsigned))f)(
            lfd, NULL, fd, NULL, LEN, 0);
    else
        k = ((ssize_t(*)(int, int, off64_t *, size_t))f)(fd, lfd, NULL, LEN);
    off_t lpos = lseek(lfd, 0, SEEK_CUR);
    close(lfd);
    if (k < 0)
        return BAD("local -> Galley refused after Galley -> local worked");
    if (k != LEN || lpos != LEN || lseek(fd, 0, SEEK_CUR) != 2 * AT + LEN)
        return BAD("local -> Galley short or offsets wrong");
    put(2 * AT, src, LEN);
    return OK;
}

static outcome probe_splice(int fd)
{
    int p[2];
    if (pipe(p))
        return BAD("pipe");
    off64_t in = AT;
    ssize_t k = splice(fd, &in, p[1], NULL, LEN, 0);
    if (k < 0) {
        int e = errno;
        close(p[0]);
        close(p[1]);
        return FAILED(e);
    }
    memset(buf, 0, LEN);
    ssize_t r = k > 0 ? read(p[0], buf, (size_t)k) : 0;
    if (k != LEN || r != LEN || in != AT + LEN || memcmp(buf, want + AT, LEN)) {
        close(p[0]);
        close(p[1]);
        return BAD("Galley -> pipe wrong");
    }
    fill_src(3);
    off64_t out = 3 * AT;
    if (write(p[1], src, LEN) != LEN)
        return BAD("pipe write");
    k = splice(p[0], NULL, fd, &out, LEN, 0);
    close(p[0]);
    close(p[1]);
    if (k != LEN || out != 3 * AT + LEN)
        return BAD("pipe -> Galley wrong");
    put(3 * AT, src, LEN);
    return OK;
}

/* ------------------------------------------------------ allocation -- */

static outcome probe_alloc(const char *name, int fd)
{
    void *f = sym(name);
    off_t off = PATTERN_LEN - 1000, len = 20000;
    int e;
    if (!strncmp(name, "posix_", 6))
        e = ((int (*)(int, off_t, off_t))f)(fd, off, len);
    else
        e = ((int (*)(int, int, off_t, off_t))f)(fd, 0, off, len) ? errno : 0;
    if (e)
        return FAILED(e);
    memset(want + want_len, 0, (size_t)(off + len) - want_len);
    want_len = (size_t)(off + len);
    return OK;
}

static outcome probe_ftruncate(const char *name, int fd)
{
    int rc;
    if (name[0] == 'f')
        rc = ((int (*)(int, off_t))sym(name))(fd, 10000);
    else
        rc = ((int (*)(const char *, off_t))sym(name))(path, 10000);
    if (rc)
        return FAILED(errno);
    want_len = 10000;
    return OK;
}

/* Calls that move no bytes of their own: success, and nothing changes. */
static outcome probe_quiet(const char *name, int fd)
{
    void *f = sym(name);
    long rc;
    if (!strcmp(name, "fsync") || !strcmp(name, "fdatasync") ||
        !strcmp(name, "syncfs"))
        rc = ((int (*)(int))f)(fd);
    else if (!strcmp(name, "sync_file_range"))
        rc = ((int (*)(int, off64_t, off64_t, unsigned))f)(
            fd, 0, 0, SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
    else if (!strcmp(name, "readahead"))
        rc = ((ssize_t(*)(int, off64_t, size_t))f)(fd, 0, LEN);
    else { /* posix_fadvise returns the error */
        int e = ((int (*)(int, off_t, off_t, int))f)(fd, 0, 0,
                                                     POSIX_FADV_SEQUENTIAL);
        if (e)
            errno = e;
        rc = e ? -1 : 0;
    }
    return rc ? FAILED(errno) : OK;
}

static outcome probe_mmap(const char *name, int fd)
{
    void *p = ((void *(*)(void *, size_t, int, int, int, off_t))sym(name))(
        NULL, LEN, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return FAILED(errno);
    bool same = memcmp(p, want, LEN) == 0;
    munmap(p, LEN);
    return same ? OK : BAD("mapping holds other bytes");
}

/* ----------------------------------------------------------- AIO -- */

static outcome aio_wait(struct aiocb *cb, ssize_t expect)
{
    const struct aiocb *l[1] = {cb};
    while (aio_error(cb) == EINPROGRESS)
        aio_suspend(l, 1, NULL);
    int e = aio_error(cb);
    ssize_t k = aio_return(cb);
    if (e)
        return FAILED(e);
    return k == expect ? OK : BAD("aio_return");
}

static outcome probe_aio(const char *name, int fd)
{
    void *f = sym(name);
    struct aiocb cb = {.aio_fildes = fd, .aio_nbytes = LEN, .aio_offset = AT};
    cb.aio_sigevent.sigev_notify = SIGEV_NONE;
    if (strstr(name, "fsync")) {
        if (((int (*)(int, struct aiocb *))f)(O_SYNC, &cb))
            return FAILED(errno);
        return aio_wait(&cb, 0);
    }
    if (strstr(name, "cancel")) {
        int r = ((int (*)(int, struct aiocb *))f)(fd, NULL);
        return r == -1 ? FAILED(errno) : OK;
    }
    bool wr = strstr(name, "write") != NULL;
    fill_src(4);
    memset(buf, 0, LEN);
    cb.aio_buf = wr ? (void *)src : (void *)buf;
    if (((int (*)(struct aiocb *))f)(&cb))
        return FAILED(errno);
    outcome o = aio_wait(&cb, LEN);
    if (o.err || o.bad)
        return o;
    if (wr)
        put(AT, src, LEN);
    else if (memcmp(buf, want + AT, LEN))
        return BAD("aio read wrong bytes");
    return OK;
}

static outcome probe_lio(const char *name, int fd)
{
    fill_src(5);
    memset(buf, 0, LEN);
    struct aiocb r = {.aio_fildes = fd,
                      .aio_lio_opcode = LIO_READ,
                      .aio_buf = buf,
                      .aio_nbytes = LEN,
                      .aio_offset = AT};
    struct aiocb w = {.aio_fildes = fd,
                      .aio_lio_opcode = LIO_WRITE,
                      .aio_buf = src,
                      .aio_nbytes = LEN,
                      .aio_offset = 5 * AT};
    struct aiocb *l[2] = {&r, &w};
    if (((int (*)(int, struct aiocb *const[], int, struct sigevent *))sym(
            name))(LIO_WAIT, l, 2, NULL))
        return FAILED(errno);
    if (aio_error(&r) || aio_return(&r) != LEN || memcmp(buf, want + AT, LEN))
        return BAD("lio read");
    if (aio_error(&w) || aio_return(&w) != LEN)
        return BAD("lio write");
    put(5 * AT, src, LEN);
    return OK;
}

/* ------------------------------------- calls a file can only refuse -- */

static outcome probe_refuse(const char *name, int fd)
{
    void *f = sym(name);
    long rc;
    fill_src(6);
    struct iovec v = {src, LEN};
    struct msghdr mh = {.msg_iov = &v, .msg_iovlen = 1};
    struct mmsghdr mm = {.msg_hdr = mh};
    if (!strcmp(name, "tee")) {
        int p[2];
        if (pipe(p))
            return BAD("pipe");
        rc = tee(fd, p[1], LEN, 0);
        close(p[0]);
        close(p[1]);
    } else if (!strcmp(name, "vmsplice"))
        rc = vmsplice(fd, &v, 1, 0);
    else if (!strcmp(name, "tcsendbreak"))
        rc = tcsendbreak(fd, 0);
    else if (!strcmp(name, "eventfd_read")) {
        uint64_t x;
        rc = ((int (*)(int, uint64_t *))f)(fd, &x);
    } else if (!strcmp(name, "eventfd_write"))
        rc = ((int (*)(int, uint64_t))f)(fd, 1);
    else if (!strcmp(name, "recvmsg") || !strcmp(name, "sendmsg"))
        rc = ((ssize_t(*)(int, struct msghdr *, int))f)(fd, &mh, 0);
    else if (!strcmp(name, "recvmmsg"))
        rc = ((int (*)(int, struct mmsghdr *, unsigned, int, void *))f)(
            fd, &mm, 1, 0, NULL);
    else if (!strcmp(name, "sendmmsg") || !strcmp(name, "__sendmmsg"))
        rc = ((int (*)(int, struct mmsghdr *, unsigned, int))f)(fd, &mm, 1, 0);
    else if (!strcmp(name, "recvfrom") || !strcmp(name, "sendto"))
        rc = ((ssize_t(*)(int, void *, size_t, int, void *, void *))f)(
            fd, src, LEN, MSG_DONTWAIT, NULL, NULL);
    else if (!strcmp(name, "__recv_chk"))
        rc = ((ssize_t(*)(int, void *, size_t, size_t, int))f)(
            fd, src, LEN, LEN, MSG_DONTWAIT);
    else if (!strcmp(name, "__recvfrom_chk"))
        rc = ((ssize_t(*)(int, void *, size_t, size_t, int, void *, void *))f)(
            fd, src, LEN, LEN, MSG_DONTWAIT, NULL, NULL);
    else /* recv, send, __recv, __send */
        rc = ((ssize_t(*)(int, void *, size_t, int))f)(fd, src, LEN,
                                                       MSG_DONTWAIT);
    if (rc >= 0)
        return BAD("succeeded on a file");
    return FAILED(errno);
}

/* ----------------------------- the back doors: syscall() and ioctl -- */

/* SYS_x: the system call made through syscall(), past its libc wrapper. */
static outcome probe_sys(const char *name, int fd)
{
    long rc;
    fill_src(7);
    struct iovec v[2] = {{src, 2000}, {src + 2000, LEN - 2000}};
    if (!strcmp(name, "SYS_pwritev") || !strcmp(name, "SYS_pwritev2")) {
        rc = strcmp(name, "SYS_pwritev")
                 ? syscall(SYS_pwritev2, fd, v, 2, (long)AT, 0L, 0L)
                 : syscall(SYS_pwritev, fd, v, 2, (long)AT, 0L);
        if (rc < 0)
            return FAILED(errno);
        if (rc != LEN)
            return BAD("short write");
        put(AT, src, LEN);
        return OK;
    }
    if (!strcmp(name, "SYS_preadv2") || !strcmp(name, "SYS_pread64")) {
        memset(buf, 0, LEN);
        struct iovec r[2] = {{buf, 100}, {buf + 100, LEN - 100}};
        rc = strcmp(name, "SYS_preadv2")
                 ? syscall(SYS_pread64, fd, buf, (long)LEN, (long)AT)
                 : syscall(SYS_preadv2, fd, r, 2, (long)AT, 0L, 0L);
        return got_read(rc);
    }
    if (!strcmp(name, "SYS_copy_file_range")) {
        off64_t in = AT, out = PATTERN_LEN;
        rc = syscall(SYS_copy_file_range, fd, &in, fd, &out, (long)LEN, 0L);
        if (rc < 0)
            return FAILED(errno);
        if (rc != LEN || in != AT + LEN || out != PATTERN_LEN + LEN)
            return BAD("short copy or offsets wrong");
        put(PATTERN_LEN, want + AT, LEN);
        return OK;
    }
    if (!strcmp(name, "SYS_fallocate")) {
        rc = syscall(SYS_fallocate, fd, 0L, (long)PATTERN_LEN, 1000L);
        if (rc < 0)
            return FAILED(errno);
        memset(want + want_len, 0, 1000);
        want_len += 1000;
        return OK;
    }
    if (!strcmp(name, "SYS_ftruncate")) {
        if (syscall(SYS_ftruncate, fd, 10000L) < 0)
            return FAILED(errno);
        want_len = 10000;
        return OK;
    }
    if (!strcmp(name, "SYS_fsync"))
        return syscall(SYS_fsync, fd) < 0 ? FAILED(errno) : OK;
    if (!strcmp(name, "SYS_close")) {
        /* the descriptor goes from the preload's table too: the number,
         * reused by a local file, reads that file */
        if (syscall(SYS_close, fd) < 0)
            return FAILED(errno);
        int l = local_src();
        memset(buf, 0, LEN);
        bool same =
            l >= 0 && pread(l, buf, LEN, 0) == LEN && !memcmp(buf, src, LEN);
        if (l >= 0)
            close(l);
        return same ? OK : BAD("closed descriptor still Galley's");
    }
    /* ioctl_REQ */
    struct file_clone_range cr = {.src_fd = fd, .dest_offset = PATTERN_LEN};
    int one = 1;
    if (!strcmp(name, "ioctl_FICLONERANGE"))
        rc = ioctl(fd, FICLONERANGE, &cr);
    else if (!strcmp(name, "ioctl_FIONBIO"))
        rc = ioctl(fd, FIONBIO, &one);
    else
        rc = ioctl(fd, FIONREAD, &one);
    return rc < 0 ? FAILED(errno) : OK;
}

/* ---------------------------------------------------------- table -- */

typedef enum {
    P_READ,
    P_WRITE,
    P_COPY,
    P_SPLICE,
    P_ALLOC,
    P_TRUNC,
    P_QUIET,
    P_MMAP,
    P_AIO,
    P_LIO,
    P_REFUSE,
    P_SYS,
    P_OTHER
} kind;

static const struct {
    const char *name;
    kind k;
} calls[] = {
    {"read", P_READ},
    {"__read", P_READ},
    {"__read_chk", P_READ},
    {"readv", P_READ},
    {"pread", P_READ},
    {"pread64", P_READ},
    {"__pread64", P_READ},
    {"__pread_chk", P_READ},
    {"__pread64_chk", P_READ},
    {"preadv", P_READ},
    {"preadv64", P_READ},
    {"preadv2", P_READ},
    {"preadv64v2", P_READ},
    {"write", P_WRITE},
    {"__write", P_WRITE},
    {"writev", P_WRITE},
    {"pwrite", P_WRITE},
    {"pwrite64", P_WRITE},
    {"__pwrite64", P_WRITE},
    {"pwritev", P_WRITE},
    {"pwritev64", P_WRITE},
    {"pwritev2", P_WRITE},
    {"pwritev64v2", P_WRITE},
    {"copy_file_range", P_COPY},
    {"sendfile", P_COPY},
    {"sendfile64", P_COPY},
    {"splice", P_SPLICE},
    {"fallocate", P_ALLOC},
    {"fallocate64", P_ALLOC},
    {"posix_fallocate", P_ALLOC},
    {"posix_fallocate64", P_ALLOC},
    {"ftruncate", P_TRUNC},
    {"ftruncate64", P_TRUNC},
    {"truncate", P_TRUNC},
    {"truncate64", P_TRUNC},
    {"fsync", P_QUIET},
    {"fdatasync", P_QUIET},
    {"syncfs", P_QUIET},
    {"sync_file_range", P_QUIET},
    {"readahead", P_QUIET},
    {"posix_fadvise", P_QUIET},
    {"posix_fadvise64", P_QUIET},
    {"mmap", P_MMAP},
    {"mmap64", P_MMAP},
    {"__mmap", P_MMAP},
    {"aio_read", P_AIO},
    {"aio_read64", P_AIO},
    {"aio_write", P_AIO},
    {"aio_write64", P_AIO},
    {"aio_fsync", P_AIO},
    {"aio_fsync64", P_AIO},
    {"aio_cancel", P_AIO},
    {"aio_cancel64", P_AIO},
    {"lio_listio", P_LIO},
    {"lio_listio64", P_LIO},
    {"tee", P_REFUSE},
    {"vmsplice", P_REFUSE},
    {"tcsendbreak", P_REFUSE},
    {"eventfd_read", P_REFUSE},
    {"eventfd_write", P_REFUSE},
    {"recv", P_REFUSE},
    {"__recv", P_REFUSE},
    {"__recv_chk", P_REFUSE},
    {"recvfrom", P_REFUSE},
    {"__recvfrom_chk", P_REFUSE},
    {"recvmsg", P_REFUSE},
    {"recvmmsg", P_REFUSE},
    {"send", P_REFUSE},
    {"__send", P_REFUSE},
    {"sendto", P_REFUSE},
    {"sendmsg", P_REFUSE},
    {"sendmmsg", P_REFUSE},
    {"__sendmmsg", P_REFUSE},
    /* past the libc wrappers (posix/px_sys.c) */
    {"SYS_pwritev", P_SYS},
    {"SYS_pwritev2", P_SYS},
    {"SYS_preadv2", P_SYS},
    {"SYS_pread64", P_SYS},
    {"SYS_copy_file_range", P_SYS},
    {"SYS_fallocate", P_SYS},
    {"SYS_ftruncate", P_SYS},
    {"SYS_fsync", P_SYS},
    {"SYS_close", P_SYS},
    {"ioctl_FICLONERANGE", P_SYS},
    {"ioctl_FIONBIO", P_SYS},
    {"ioctl_FIONREAD", P_SYS},
    /* not calls on a file descriptor */
    {"sync", P_OTHER},            /* every file system, no descriptor */
    {"msync", P_OTHER},           /* a mapping (test_mmap.py) */
    {"madvise", P_OTHER},         /* memory */
    {"__madvise", P_OTHER},       /* memory */
    {"posix_madvise", P_OTHER},   /* memory */
    {"process_madvise", P_OTHER}, /* another process's memory */
    {"process_vm_readv", P_OTHER},
    {"process_vm_writev", P_OTHER},
    {"aio_error", P_OTHER}, /* read an aiocb's fields */
    {"aio_error64", P_OTHER},
    {"aio_return", P_OTHER},
    {"aio_return64", P_OTHER},
    {"aio_suspend", P_OTHER},
    {"aio_suspend64", P_OTHER},
    {"aio_init", P_OTHER},
    {"readdir", P_OTHER}, /* directories: px_dir.c */
    {"readdir64", P_OTHER},
    {"readlink", P_OTHER}, /* paths */
    {"readlinkat", P_OTHER},
    {"__readlink_chk", P_OTHER},
    {"__readlinkat_chk", P_OTHER},
    {"fts_read", P_OTHER},
    {"fts64_read", P_OTHER},
    {"res_send", P_OTHER}, /* DNS */
    {"__res_send", P_OTHER},
    {"mq_send", P_OTHER}, /* message queues */
    {"mq_timedsend", P_OTHER},
    {"pidfd_send_signal", P_OTHER},
    {"fread", P_OTHER}, /* stdio: the stream's calls (px_stdio.c) */
    {"fread_unlocked", P_OTHER},
    {"__fread_chk", P_OTHER},
    {"__freadable", P_OTHER},
    {"__freading", P_OTHER},
    {"__fread_unlocked_chk", P_OTHER},
    {"fwrite", P_OTHER},
    {"fwrite_unlocked", P_OTHER},
};

static int probe(const char *name)
{
    kind k = P_OTHER;
    size_t i;
    for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
        if (!strcmp(calls[i].name, name)) {
            k = calls[i].k;
            break;
        }
    if (i == sizeof(calls) / sizeof(calls[0])) {
        printf("%s unknown\n", name);
        return 0;
    }
    if (k == P_OTHER) {
        printf("%s other\n", name);
        return 0;
    }
    if (k != P_SYS && !sym(name)) {
        printf("%s WRONG not found by dlsym\n", name);
        return 1;
    }
    int fd = fresh(name);
    if (fd < 0) {
        printf("%s WRONG set-up: %s\n", name, strerror(errno));
        return 1;
    }
    outcome o;
    switch (k) {
    case P_READ:
        o = probe_read(name, fd);
        break;
    case P_WRITE:
        o = probe_write(name, fd);
        break;
    case P_COPY:
        o = probe_copy(name, fd);
        break;
    case P_SPLICE:
        o = probe_splice(fd);
        break;
    case P_ALLOC:
        o = probe_alloc(name, fd);
        break;
    case P_TRUNC:
        o = probe_ftruncate(name, fd);
        break;
    case P_QUIET:
        o = probe_quiet(name, fd);
        break;
    case P_MMAP:
        o = probe_mmap(name, fd);
        break;
    case P_AIO:
        o = probe_aio(name, fd);
        break;
    case P_LIO:
        o = probe_lio(name, fd);
        break;
    case P_SYS:
        o = probe_sys(name, fd);
        break;
    default:
        o = probe_refuse(name, fd);
    }
    if (strcmp(name, "SYS_close"))
        close(fd);
    const char *bad = o.bad ? o.bad : check_file();
    unlink(path);
    if (bad) {
        printf("%s WRONG %s%s%s\n", name, bad, o.err ? " after failing: " : "",
               o.err > 0 ? strerrorname_np(o.err) : "");
        return 1;
    }
    if (o.err)
        printf("%s refused %s\n", name,
               o.err > 0 ? strerrorname_np(o.err) : "?");
    else
        printf("%s served\n", name);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: t_entry DIR NAME...\n");
        return 2;
    }
    snprintf(dir, sizeof(dir), "%s", argv[1]);
    int bad = 0;
    for (int i = 2; i < argc; i++)
        bad |= probe(argv[i]);
    return bad;
}
