/*
 * t_fsx -- a file exerciser in the manner of fsx: random operations on one
 * file, each result checked against an in-memory model of what the file
 * must hold.  An ordinary program (no libgalley): run on a local file it
 * checks the checker, under `galley exec` it checks the preload.
 *
 *   t_fsx [-N ops] [-S seed] [-l maxlen] [-T tmpdir] [-o model] [-v] FILE
 *
 * FILE is created (truncated) and never grows past maxlen (default 256
 * KiB).  The operations: write at the offset or after lseek, pwrite,
 * writev, pwritev, pwritev2 (at an offset or the file offset, with and
 * without RWF_APPEND or RWF_DSYNC), read, readv, pread, preadv, preadv2,
 * lseek (SEEK_SET/CUR/END) + read, ftruncate up and down, fallocate mode
 * 0 and posix_fallocate, copy_file_range within the file (non-overlapping
 * ranges), from and to a local temporary file, sendfile from and to a
 * local temporary file, splice through a pipe in both directions,
 * fsync/fdatasync, close + reopen.  Offsets are given or the descriptor's
 * own, so the file offset is modelled too.
 *
 * After every operation fstat's size and lseek(fd, 0, SEEK_CUR) must equal
 * the model's; every byte read (directly or through a copy into the
 * temporary file or a pipe) must equal the model's.  On the first
 * difference the tail of the operation log, the first differing offset and
 * the bytes there are printed and the exit status is 1.  At the end the
 * whole file is read back and compared, and with -o the model is written
 * to that (local) path, so that a test can compare it with the file as
 * another client sees it.  The temporary files live in tmpdir (default
 * $TMPDIR, else /tmp), unlinked at once.  -v logs every operation.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

enum {
    OP_WRITE,
    OP_PWRITE,
    OP_WRITEV,
    OP_PWRITEV,
    OP_PWRITEV2,
    OP_READ,
    OP_READV,
    OP_PREAD,
    OP_PREADV,
    OP_PREADV2,
    OP_SEEK_READ,
    OP_TRUNCATE,
    OP_FALLOCATE,
    OP_COPY_SELF,
    OP_COPY_IN,
    OP_COPY_OUT,
    OP_SENDFILE_IN,
    OP_SENDFILE_OUT,
    OP_SPLICE_IN,
    OP_SPLICE_OUT,
    OP_SYNC,
    OP_REOPEN,
    NOPS
};

static const char *const op_name[NOPS] = {
    "write",      "pwrite",      "writev",       "pwritev",   "pwritev2",
    "read",       "readv",       "pread",        "preadv",    "preadv2",
    "lseek+read", "ftruncate",   "fallocate",    "copy_self", "copy_in",
    "copy_out",   "sendfile_in", "sendfile_out", "splice_in", "splice_out",
    "sync",       "reopen"};

/* Relative frequency of each operation. */
static const int op_weight[NOPS] = {8, 8, 4, 4, 6, 6, 3, 6, 4, 4, 4,
                                    4, 2, 3, 2, 2, 2, 2, 2, 2, 2, 1};

static const char *path;
static int fd = -1, src_fd = -1, sink_fd = -1, pipe_fd[2];
static size_t maxlen = 256 * 1024, maxop;
static unsigned char *model, *src, *buf, *buf2;
static int64_t size, cur; /* the file's size and the descriptor's offset */
static long opno, count[NOPS];
static uint64_t rng, seed = 1;
static bool verbose;

/* ------------------------------------------------------------------------
 * Randomness (splitmix64: the same sequence for a seed on any libc)
 * ------------------------------------------------------------------------ */

static uint64_t rnd64(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* 0 .. n-1 (0 for n 0). */
static size_t rnd(size_t n)
{
    return n ? (size_t)(rnd64() % n) : 0;
}

static void fill(unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = rnd64();
        memcpy(p + i, &v, n - i < 8 ? n - i : 8);
    }
}

/* An operation's length: small, page-sized or large, up to maxop. */
static size_t rnd_len(void)
{
    switch (rnd(4)) {
    case 0:
        return rnd(65);
    case 1:
        return rnd(2) ? 4096 : rnd(8193);
    default:
        return rnd(maxop + 1);
    }
}

/* ------------------------------------------------------------------------
 * The operation log, failure reports
 * ------------------------------------------------------------------------ */

#define LOG_N 32
static char oplog[LOG_N][200];

/* Describe operation opno (replacing what an earlier call said of it). */
static void logop(const char *fmt, ...)
{
    va_list ap;
    char *e = oplog[opno % LOG_N];
    int k = snprintf(e, sizeof(oplog[0]), "%6ld ", opno);
    va_start(ap, fmt);
    vsnprintf(e + k, sizeof(oplog[0]) - (size_t)k, fmt, ap);
    va_end(ap);
    if (verbose)
        fprintf(stderr, "%s\n", e);
}

static void dump_log(void)
{
    fprintf(stderr, "t_fsx: last operations (size %lld, offset %lld):\n",
            (long long)size, (long long)cur);
    for (long i = opno >= LOG_N ? opno - LOG_N + 1 : 1; i <= opno; i++)
        fprintf(stderr, "  %s\n", oplog[i % LOG_N]);
}

static void fail(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "t_fsx: seed %llu op %ld: ", (unsigned long long)seed,
            opno);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    dump_log();
    exit(1);
}

/* A call that must succeed. */
static void ok(long long r, const char *call)
{
    if (r < 0)
        fail("%s: %s", call, strerror(errno));
}

/* A call that must have moved exactly want bytes. */
static void moved(ssize_t r, size_t want, const char *call)
{
    ok(r, call);
    if ((size_t)r != want)
        fail("%s: %zd bytes, expected %zu", call, r, want);
}

static void hex(const char *what, const unsigned char *p, size_t n)
{
    fprintf(stderr, "  %s:", what);
    for (size_t i = 0; i < n && i < 16; i++)
        fprintf(stderr, " %02x", p[i]);
    fputc('\n', stderr);
}

/* got[0..n) must be the model's bytes at off. */
static void check_bytes(const unsigned char *got, int64_t off, size_t n,
                        const char *what)
{
    if (n == 0 || !memcmp(got, model + off, n))
        return;
    size_t i = 0;
    while (got[i] == model[off + i])
        i++;
    fprintf(stderr,
            "t_fsx: %s: bytes differ from offset %lld (%zu into "
            "%zu read at %lld)\n",
            what, (long long)(off + (int64_t)i), i, n, (long long)off);
    size_t k = n - i < 16 ? n - i : 16;
    hex("expected", model + off + i, k);
    hex("got     ", got + i, k);
    fail("%s read back wrong", what);
}

/* fstat's size and the descriptor's offset against the model. */
static void check_state(void)
{
    struct stat st;
    ok(fstat(fd, &st), "fstat");
    if (st.st_size != size)
        fail("fstat size %lld, expected %lld", (long long)st.st_size,
             (long long)size);
    off_t at = lseek(fd, 0, SEEK_CUR);
    ok(at, "lseek(SEEK_CUR)");
    if (at != cur)
        fail("file offset %lld, expected %lld", (long long)at, (long long)cur);
}

/* ------------------------------------------------------------------------
 * The model
 * ------------------------------------------------------------------------ */

/* Bytes at and past size are always zero, so growing needs no fill.  An
 * empty write does not grow the file. */
static void model_write(int64_t off, const unsigned char *p, size_t n)
{
    if (n == 0)
        return;
    memmove(model + off, p, n);
    if (off + (int64_t)n > size)
        size = off + (int64_t)n;
}

static void model_truncate(int64_t n)
{
    if (n < size)
        memset(model + n, 0, (size_t)(size - n));
    size = n;
}

/* What a read of n bytes at off returns. */
static size_t expect(int64_t off, size_t n)
{
    if (off >= size)
        return 0;
    return (int64_t)n < size - off ? n : (size_t)(size - off);
}

/* n clipped so that off + n stays within maxlen. */
static size_t clip(int64_t off, size_t n)
{
    if (off >= (int64_t)maxlen)
        return 0;
    return n < maxlen - (size_t)off ? n : maxlen - (size_t)off;
}

/* A read's offset: mostly inside the file, sometimes past its end. */
static int64_t rnd_read_off(void)
{
    return (int64_t)rnd((size_t)size + 1 + (rnd(8) ? 0 : 4096));
}

/* Split buf[0..n) into 1-8 vectors (some empty). */
static int split(unsigned char *p, size_t n, struct iovec *iov)
{
    int cnt = 1 + (int)rnd(8);
    for (int i = 0; i < cnt; i++) {
        size_t k = i == cnt - 1 ? n : rnd(n + 1);
        iov[i].iov_base = p;
        iov[i].iov_len = k;
        p += k;
        n -= k;
    }
    return cnt;
}

/* ------------------------------------------------------------------------
 * Operations
 * ------------------------------------------------------------------------ */

static void seek_to(int64_t off)
{
    if (lseek(fd, off, SEEK_SET) != off)
        fail("lseek(%lld): %s", (long long)off, strerror(errno));
    cur = off;
}

static void op_write(int op)
{
    int64_t off = rnd(2) ? cur : (int64_t)rnd(maxlen);
    size_t n = clip(off, rnd_len());
    struct iovec iov[8];
    fill(buf, n);
    logop("%-12s off %7lld len %6zu", op_name[op], (long long)off, n);
    if (op == OP_PWRITE) {
        moved(pwrite(fd, buf, n, off), n, "pwrite");
    } else if (op == OP_PWRITEV) {
        int cnt = split(buf, n, iov);
        moved(pwritev(fd, iov, cnt, off), n, "pwritev");
    } else {
        if (off != cur)
            seek_to(off);
        if (op == OP_WRITE) {
            moved(write(fd, buf, n), n, "write");
        } else {
            int cnt = split(buf, n, iov);
            moved(writev(fd, iov, cnt), n, "writev");
        }
        cur = off + (int64_t)n;
    }
    model_write(off, buf, n);
}

/* pwritev2 at an offset or the file offset (-1), appending or not. */
static void op_pwritev2(void)
{
    bool at_cur = rnd(2), append = rnd(3) == 0;
    int flags = (append ? RWF_APPEND : 0) | (rnd(4) ? 0 : RWF_DSYNC);
    int64_t off = append ? size : at_cur ? cur : (int64_t)rnd(maxlen);
    size_t n = clip(off, rnd_len());
    struct iovec iov[8];
    fill(buf, n);
    int cnt = split(buf, n, iov);
    logop("%-12s off %7lld len %6zu %s%s%s", "pwritev2", (long long)off, n,
          at_cur ? "at -1" : "at off", append ? " RWF_APPEND" : "",
          flags & RWF_DSYNC ? " RWF_DSYNC" : "");
    int64_t given = at_cur ? -1 : append ? (int64_t)rnd(maxlen) : off;
    moved(pwritev2(fd, iov, cnt, given, flags), n, "pwritev2");
    model_write(off, buf, n);
    if (at_cur && n) /* an empty append leaves the offset */
        cur = off + (int64_t)n;
}

static void op_read(int op)
{
    int64_t off =
        op == OP_READ || op == OP_READV || rnd(4) == 0 ? cur : rnd_read_off();
    size_t n = rnd_len(), want = expect(off, n);
    struct iovec iov[8];
    int cnt = split(buf, n, iov);
    ssize_t r;
    logop("%-12s off %7lld len %6zu", op_name[op], (long long)off, n);
    switch (op) {
    case OP_READ:
        r = read(fd, buf, n);
        break;
    case OP_READV:
        r = readv(fd, iov, cnt);
        break;
    case OP_PREAD:
        r = pread(fd, buf, n, off);
        break;
    case OP_PREADV:
        r = preadv(fd, iov, cnt, off);
        break;
    default: { /* preadv2 */
        bool at_cur = off == cur && rnd(2);
        int flags = rnd(2) ? RWF_HIPRI : 0;
        logop("%-12s off %7lld len %6zu %s%s", op_name[op], (long long)off, n,
              at_cur ? "at -1" : "at off", flags ? " RWF_HIPRI" : "");
        r = preadv2(fd, iov, cnt, at_cur ? -1 : off, flags);
        if (at_cur)
            cur = off + (r > 0 ? r : 0);
    }
    }
    moved(r, want, op_name[op]);
    if (op == OP_READ || op == OP_READV)
        cur = off + r;
    check_bytes(buf, off, want, op_name[op]);
}

/* lseek with SEEK_SET, SEEK_CUR or SEEK_END to a target, then read. */
static void op_seek_read(void)
{
    int64_t to = rnd_read_off(), got;
    int how = (int)rnd(3);
    size_t n = rnd_len(), want = expect(to, n);
    static const char *const hows[] = {"SEEK_SET", "SEEK_CUR", "SEEK_END"};
    logop("%-12s off %7lld len %6zu %s", "lseek+read", (long long)to, n,
          hows[how]);
    got = lseek(fd,
                how == 0   ? to
                : how == 1 ? to - cur
                           : to - size,
                how == 0   ? SEEK_SET
                : how == 1 ? SEEK_CUR
                           : SEEK_END);
    ok(got, "lseek");
    if (got != to)
        fail("lseek %s: %lld, expected %lld", hows[how], (long long)got,
             (long long)to);
    cur = to;
    moved(read(fd, buf, n), want, "read");
    cur = to + (int64_t)want;
    check_bytes(buf, to, want, "lseek+read");
}

static void op_truncate(void)
{
    int64_t n = rnd(2) ? (int64_t)rnd((size_t)size + 1) : (int64_t)rnd(maxlen);
    logop("%-12s to %lld (from %lld)", "ftruncate", (long long)n,
          (long long)size);
    ok(ftruncate(fd, n), "ftruncate");
    model_truncate(n);
}

/* fallocate mode 0 or posix_fallocate: grows the file with zeros. */
static void op_fallocate(void)
{
    int64_t off = (int64_t)rnd(maxlen - 1);
    size_t n = clip(off, 1 + rnd(maxop));
    bool posix = rnd(2);
    logop("%-12s off %7lld len %6zu %s", "fallocate", (long long)off, n,
          posix ? "posix_fallocate" : "mode 0");
    if (posix) {
        int e = posix_fallocate(fd, off, (off_t)n);
        if (e)
            fail("posix_fallocate: %s", strerror(e));
    } else {
        ok(fallocate(fd, 0, off, (off_t)n), "fallocate");
    }
    if (off + (int64_t)n > size)
        size = off + (int64_t)n;
}

/* copy_file_range until n bytes moved or the source ends: the total. */
static size_t copy_range(int in, off64_t *ip, int out, off64_t *op, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t k = copy_file_range(in, ip, out, op, n - done, 0);
        ok(k, "copy_file_range");
        if (k == 0)
            break;
        done += (size_t)k;
    }
    return done;
}

/* Within the file: a range to a place that does not overlap it. */
static void op_copy_self(void)
{
    if (size == 0) {
        logop("%-12s skipped (empty file)", "copy_self");
        return;
    }
    int64_t from = (int64_t)rnd((size_t)size), to = -1;
    size_t n = 1 + rnd(expect(from, maxop));
    for (int tries = 0; tries < 16 && to < 0; tries++) {
        int64_t t = (int64_t)rnd(maxlen - n + 1);
        if (t + (int64_t)n <= from || from + (int64_t)n <= t)
            to = t;
    }
    if (to < 0) {
        logop("%-12s skipped (no room)", "copy_self");
        return;
    }
    int how = (int)rnd(3); /* both offsets, or the descriptor's for one */
    logop("%-12s from %lld to %lld len %zu%s", "copy_self", (long long)from,
          (long long)to, n,
          how == 1   ? " (in: fd offset)"
          : how == 2 ? " (out: fd offset)"
                     : "");
    off64_t ip = from, op = to;
    if (how)
        seek_to(how == 1 ? from : to);
    moved(copy_range(fd, how == 1 ? NULL : &ip, fd, how == 2 ? NULL : &op, n),
          n, "copy_file_range");
    if (how)
        cur += (int64_t)n;
    memcpy(buf, model + from, n);
    model_write(to, buf, n);
}

/* From the local source file into ours: copy_file_range, sendfile or
 * splice (through a pipe, at most a pipe's worth per round). */
static void op_in(int op)
{
    int64_t soff = (int64_t)rnd(maxlen);
    bool at_cur = rnd(2) || op == OP_SENDFILE_IN;
    int64_t to = at_cur ? cur : (int64_t)rnd(maxlen);
    size_t n = clip(to, clip(soff, rnd_len()));
    logop("%-12s src %lld to %lld len %zu%s", op_name[op], (long long)soff,
          (long long)to, n, at_cur ? " (fd offset)" : "");
    off64_t sp = soff, tp = to;
    if (op == OP_COPY_IN) {
        moved(copy_range(src_fd, &sp, fd, at_cur ? NULL : &tp, n), n,
              "copy_file_range");
    } else if (op == OP_SENDFILE_IN) {
        size_t done = 0;
        while (done < n) {
            off_t s = soff + (off_t)done;
            ssize_t k = sendfile(fd, src_fd, &s, n - done);
            ok(k, "sendfile");
            if (k == 0)
                fail("sendfile: 0 after %zu of %zu bytes", done, n);
            done += (size_t)k;
        }
    } else {
        for (size_t done = 0; done < n;) {
            size_t m = n - done < 65536 ? n - done : 65536;
            moved(write(pipe_fd[1], src + soff + done, m), m, "write(pipe)");
            for (size_t in = 0; in < m;) {
                ssize_t k = splice(pipe_fd[0], NULL, fd, at_cur ? NULL : &tp,
                                   m - in, 0);
                ok(k, "splice(pipe -> file)");
                if (k == 0)
                    fail("splice(pipe -> file): 0 with %zu left", m - in);
                in += (size_t)k;
            }
            done += m;
        }
    }
    if (at_cur)
        cur = to + (int64_t)n;
    model_write(to, src + soff, n);
}

/* From our file out: into the local sink file (copy_file_range,
 * sendfile) or a pipe (splice), read back and compared. */
static void op_out(int op)
{
    bool at_cur = rnd(2);
    int64_t off = at_cur ? cur : rnd_read_off();
    size_t n = rnd_len(), want = expect(off, n), done = 0;
    logop("%-12s off %7lld len %6zu%s", op_name[op], (long long)off, n,
          at_cur ? " (fd offset)" : "");
    off64_t p = off, zero = 0;
    if (op == OP_COPY_OUT) {
        done = copy_range(fd, at_cur ? NULL : &p, sink_fd, &zero, n);
    } else if (op == OP_SENDFILE_OUT) {
        ok(lseek(sink_fd, 0, SEEK_SET), "lseek(sink)");
        while (done < n) {
            ssize_t k = sendfile(sink_fd, fd, at_cur ? NULL : &p, n - done);
            ok(k, "sendfile");
            if (k == 0)
                break;
            done += (size_t)k;
        }
    } else {
        while (done < n) {
            ssize_t k =
                splice(fd, at_cur ? NULL : &p, pipe_fd[1], NULL, n - done, 0);
            ok(k, "splice(file -> pipe)");
            if (k == 0)
                break;
            for (ssize_t got = 0; got < k;) {
                ssize_t r =
                    read(pipe_fd[0], buf + done + got, (size_t)(k - got));
                ok(r, "read(pipe)");
                got += r;
            }
            done += (size_t)k;
        }
    }
    if (done != want)
        fail("%s: %zu bytes, expected %zu", op_name[op], done, want);
    if (op != OP_SPLICE_OUT)
        moved(pread(sink_fd, buf, done, 0), done, "pread(sink)");
    if (!at_cur && p != off + (int64_t)done)
        fail("%s: offset argument %lld, expected %lld", op_name[op],
             (long long)p, (long long)(off + (int64_t)done));
    if (at_cur)
        cur = off + (int64_t)done;
    check_bytes(buf, off, done, op_name[op]);
}

static void op_sync(void)
{
    bool data = rnd(2);
    logop("%-12s", data ? "fdatasync" : "fsync");
    ok(data ? fdatasync(fd) : fsync(fd), data ? "fdatasync" : "fsync");
}

static void open_file(int flags)
{
    fd = open(path, O_RDWR | flags, 0644);
    if (fd < 0)
        fail("open %s: %s", path, strerror(errno));
    cur = 0;
}

static void op_reopen(void)
{
    logop("%-12s", "reopen");
    ok(close(fd), "close");
    open_file(0);
}

/* ------------------------------------------------------------------------
 * Main
 * ------------------------------------------------------------------------ */

static int pick_op(void)
{
    int total = 0;
    for (int i = 0; i < NOPS; i++)
        total += op_weight[i];
    int r = (int)rnd((size_t)total);
    for (int i = 0; i < NOPS; i++) {
        if (r < op_weight[i])
            return i;
        r -= op_weight[i];
    }
    return 0;
}

static int temp_file(const char *dir)
{
    char name[4096];
    snprintf(name, sizeof(name), "%s/t_fsx.XXXXXX", dir);
    int t = mkstemp(name);
    if (t < 0) {
        perror(name);
        exit(2);
    }
    unlink(name);
    return t;
}

static void usage(void)
{
    fprintf(stderr, "usage: t_fsx [-N ops] [-S seed] [-l maxlen] [-T tmpdir] "
                    "[-o model] [-v] FILE\n");
    exit(2);
}

/* The options: -N into *nops, -T into *tmpdir, -o into *model_out; the
 * others into the globals they set. */
static void parse_args(int argc, char **argv, long *nops, const char **tmpdir,
                       const char **model_out)
{
    int c;
    while ((c = getopt(argc, argv, "N:S:l:T:o:v")) != -1) {
        switch (c) {
        case 'N':
            *nops = atol(optarg);
            break;
        case 'S':
            seed = strtoull(optarg, NULL, 0);
            break;
        case 'l':
            maxlen = strtoul(optarg, NULL, 0);
            break;
        case 'T':
            *tmpdir = optarg;
            break;
        case 'o':
            *model_out = optarg;
            break;
        case 'v':
            verbose = true;
            break;
        default:
            usage();
        }
    }
    if (optind != argc - 1 || maxlen < 2)
        usage();
    path = argv[optind];
}

/* Buffers, the pipe, the local source and sink files (in tmpdir), and
 * the file under test, created empty.  0, or 2 (printed). */
static int set_up(const char *tmpdir)
{
    rng = seed;
    maxop = maxlen / 2;
    model = calloc(1, maxlen);
    src = malloc(maxlen);
    buf = malloc(maxlen + 8192); /* a read may ask for more than maxlen */
    buf2 = malloc(maxlen);
    if (!model || !src || !buf || !buf2 || pipe(pipe_fd)) {
        perror("t_fsx");
        return 2;
    }
    src_fd = temp_file(tmpdir ? tmpdir : "/tmp");
    sink_fd = temp_file(tmpdir ? tmpdir : "/tmp");
    fill(src, maxlen);
    if (pwrite(src_fd, src, maxlen, 0) != (ssize_t)maxlen) {
        perror("t_fsx: source file");
        return 2;
    }
    open_file(O_CREAT | O_TRUNC);
    return 0;
}

static void run_op(int op)
{
    switch (op) {
    case OP_WRITE:
    case OP_PWRITE:
    case OP_WRITEV:
    case OP_PWRITEV:
        op_write(op);
        break;
    case OP_PWRITEV2:
        op_pwritev2();
        break;
    case OP_READ:
    case OP_READV:
    case OP_PREAD:
    case OP_PREADV:
    case OP_PREADV2:
        op_read(op);
        break;
    case OP_SEEK_READ:
        op_seek_read();
        break;
    case OP_TRUNCATE:
        op_truncate();
        break;
    case OP_FALLOCATE:
        op_fallocate();
        break;
    case OP_COPY_SELF:
        op_copy_self();
        break;
    case OP_COPY_IN:
    case OP_SENDFILE_IN:
    case OP_SPLICE_IN:
        op_in(op);
        break;
    case OP_COPY_OUT:
    case OP_SENDFILE_OUT:
    case OP_SPLICE_OUT:
        op_out(op);
        break;
    case OP_SYNC:
        op_sync();
        break;
    default:
        op_reopen();
    }
}

/* The whole file, then the model for the caller (into model_out when
 * given) and the counts.  0, or 2 (printed). */
static int finish(const char *model_out, long nops)
{
    moved(pread(fd, buf2, maxlen, 0), (size_t)size, "final pread");
    check_bytes(buf2, 0, (size_t)size, "final read");
    ok(close(fd), "close");
    if (model_out) {
        int m = open(model_out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (m < 0 || write(m, model, (size_t)size) != (ssize_t)size ||
            close(m)) {
            perror(model_out);
            return 2;
        }
    }
    printf("t_fsx: seed %llu, %ld operations, final size %lld\n",
           (unsigned long long)seed, nops, (long long)size);
    for (int i = 0; i < NOPS; i++)
        printf("  %-12s %ld\n", op_name[i], count[i]);
    return 0;
}

int main(int argc, char **argv)
{
    long nops = 1000;
    const char *tmpdir = getenv("TMPDIR"), *model_out = NULL;
    parse_args(argc, argv, &nops, &tmpdir, &model_out);
    if (set_up(tmpdir))
        return 2;
    check_state();
    for (opno = 1; opno <= nops; opno++) {
        int op = pick_op();
        count[op]++;
        run_op(op);
        check_state();
    }
    opno = nops;
    return finish(model_out, nops);
}
