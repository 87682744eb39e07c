/*
 * t_posix.c -- an ordinary POSIX/stdio program (it does not link
 * libgalley) run under `galley exec`: every interposed call on galley:
 * names, with results checked against what libc gives for local files.
 *
 * usage: t_posix PREFIX LOCALDIR
 *   PREFIX    e.g. galley:/t/abc (files PREFIX/... are created and removed)
 *   LOCALDIR  a local scratch directory (the same steps on local files
 *             must give the same results; errno of missing names compared)
 * Prints one line per failed check and "PASS <n> checks" when all held.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static int nchecks, nfail;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        nchecks++;                                                             \
        if (!(cond)) {                                                         \
            nfail++;                                                           \
            printf("FAIL line %d: %s: ", __LINE__, #cond);                     \
            printf(__VA_ARGS__);                                               \
            printf(" (errno %d %s)\n", errno, strerror(errno));                \
        }                                                                      \
    } while (0)

static char *path(const char *dir, const char *base)
{
    static char buf[8][512];
    static int next;
    char *b = buf[next++ % 8];
    snprintf(b, 512, "%s/%s", dir, base);
    return b;
}

static unsigned char pat(long i)
{
    return (unsigned char)(i * 131 + (i >> 9));
}

/* The data path: write, read, offsets, holes, dup, readv/writev, sizes. */
static void t_data(const char *dir)
{
    const char *p = path(dir, "data");
    int fd = open(p, O_CREAT | O_EXCL | O_RDWR, 0644);
    CHECK(fd >= 3, "open %s", p);
    CHECK(fcntl(fd, F_GETFD) >= 0, "the descriptor is a real one");
    int other = open("/dev/null", O_RDONLY);
    CHECK(other >= 0 && other != fd, "a later local open gets its own fd");
    close(other);
    CHECK(open(p, O_CREAT | O_EXCL | O_RDWR, 0644) == -1 && errno == EEXIST,
          "O_EXCL on an existing name");

    enum { N = 300000 };
    unsigned char *w = malloc(N), *r = malloc(N);
    for (long i = 0; i < N; i++)
        w[i] = pat(i);
    CHECK(write(fd, w, N) == N, "write");
    CHECK(lseek(fd, 0, SEEK_CUR) == N, "offset after write");
    CHECK(pread(fd, r, 7000, 5000) == 7000 && !memcmp(r, w + 5000, 7000),
          "pread");
    CHECK(pwrite(fd, w, 1000, 2 * N) == 1000, "pwrite past the end");
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && st.st_size == 2 * N + 1000 &&
              S_ISREG(st.st_mode),
          "fstat size %lld", (long long)st.st_size);
    memset(r, 1, 100);
    CHECK(pread(fd, r, 100, N + 10) == 100 && r[0] == 0 && r[99] == 0,
          "the hole reads as zeros");
    CHECK(lseek(fd, 0, SEEK_END) == 2 * N + 1000, "SEEK_END");
    CHECK(read(fd, r, 10) == 0, "read at the end returns 0");
    CHECK(pread(fd, r, 5000, 2 * N) == 1000, "short read at the end");

    /* dup'ed descriptors share the offset */
    int d = dup(fd);
    CHECK(d >= 0 && d != fd, "dup");
    CHECK(lseek(fd, 10, SEEK_SET) == 10, "lseek");
    CHECK(read(d, r, 20) == 20 && !memcmp(r, w + 10, 20), "read via dup");
    CHECK(lseek(fd, 0, SEEK_CUR) == 30, "shared offset");
    CHECK(dup2(fd, 100) == 100 && pread(100, r, 5, 1) == 5 &&
              !memcmp(r, w + 1, 5),
          "dup2");
    CHECK(dup3(fd, 101, O_CLOEXEC) == 101 && (fcntl(101, F_GETFD) & FD_CLOEXEC),
          "dup3 O_CLOEXEC");
    int d2 = fcntl(fd, F_DUPFD, 200);
    CHECK(d2 >= 200 && pread(d2, r, 5, 2) == 5 && !memcmp(r, w + 2, 5),
          "F_DUPFD");
    CHECK((fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDWR, "F_GETFL");
    close(d);
    close(100);
    close(101);
    close(d2);
    CHECK(pread(fd, r, 5, 3) == 5 && !memcmp(r, w + 3, 5),
          "still usable after closing its dups");

    /* readv / writev */
    char a[5] = "abcde", b[7] = "fghijkl", c[5], e[7];
    struct iovec wv[2] = {{a, 5}, {b, 7}}, rv[2] = {{c, 5}, {e, 7}};
    CHECK(lseek(fd, 100, SEEK_SET) == 100 && writev(fd, wv, 2) == 12, "writev");
    CHECK(lseek(fd, 100, SEEK_SET) == 100 && readv(fd, rv, 2) == 12 &&
              !memcmp(c, a, 5) && !memcmp(e, b, 7),
          "readv");

    /* sizes */
    CHECK(ftruncate(fd, 1234) == 0 && fstat(fd, &st) == 0 && st.st_size == 1234,
          "ftruncate");
    CHECK(fsync(fd) == 0 && fdatasync(fd) == 0, "fsync, fdatasync");
    CHECK(close(fd) == 0, "close");
    CHECK(truncate(p, 10) == 0 && stat(p, &st) == 0 && st.st_size == 10,
          "truncate");
    CHECK(lstat(p, &st) == 0 && st.st_size == 10, "lstat");
    CHECK(fstatat(AT_FDCWD, p, &st, 0) == 0 && st.st_size == 10, "fstatat");
    struct statx sx;
    CHECK(statx(AT_FDCWD, p, 0, STATX_BASIC_STATS, &sx) == 0 &&
              sx.stx_size == 10 && S_ISREG(sx.stx_mode),
          "statx");
    fd = openat(AT_FDCWD, p, O_RDONLY);
    CHECK(fd >= 0 && fstatat(fd, "", &st, AT_EMPTY_PATH) == 0 &&
              st.st_size == 10,
          "openat, fstatat AT_EMPTY_PATH");
    CHECK(write(fd, "x", 1) == -1 && errno == EBADF,
          "write on a read-only descriptor");
    CHECK(ftruncate(fd, 0) == -1 && errno == EINVAL,
          "ftruncate on a read-only descriptor");
    close(fd);
    CHECK(access(p, R_OK | W_OK) == 0, "access");
    CHECK(faccessat(AT_FDCWD, p, R_OK, 0) == 0, "faccessat");
    struct stat dst;
    CHECK(stat(dir, &dst) == 0 && S_ISDIR(dst.st_mode),
          "the name's directory is a directory");
    CHECK(st.st_ino != dst.st_ino, "distinct inode numbers");

    /* creat truncates; O_APPEND appends */
    fd = creat(p, 0644);
    CHECK(fd >= 0 && fstat(fd, &st) == 0 && st.st_size == 0, "creat");
    CHECK(write(fd, "12345", 5) == 5, "write after creat");
    close(fd);
    fd = open(p, O_WRONLY | O_APPEND);
    CHECK(fd >= 0 && write(fd, "678", 3) == 3, "O_APPEND write");
    close(fd);
    fd = open(p, O_RDONLY);
    CHECK(fd >= 0 && read(fd, r, 100) == 8 && !memcmp(r, "12345678", 8),
          "appended content");
    close(fd);

    /* rename, unlink */
    const char *q = path(dir, "renamed");
    CHECK(rename(p, q) == 0, "rename");
    CHECK(stat(p, &st) == -1 && errno == ENOENT, "old name gone");
    CHECK(stat(q, &st) == 0 && st.st_size == 8, "new name has the bytes");
    CHECK(unlink(q) == 0, "unlink");
    CHECK(stat(q, &st) == -1 && errno == ENOENT, "unlinked");
    free(w);
    free(r);
}

/* stdio on galley: names. */
static void t_stdio(const char *dir)
{
    const char *p = path(dir, "stdio.txt");
    FILE *f = fopen(p, "w");
    CHECK(f != NULL, "fopen w");
    if (!f)
        return;
    CHECK(fileno(f) >= 0, "fileno");
    fprintf(f, "line %d\n", 1);
    fputs("line 2\n", f);
    CHECK(fwrite("line 3\n", 1, 7, f) == 7, "fwrite");
    CHECK(fflush(f) == 0 && ftell(f) == 21, "fflush, ftell");
    struct stat st;
    CHECK(fstat(fileno(f), &st) == 0 && st.st_size == 21,
          "fstat(fileno) after fflush");
    CHECK(fclose(f) == 0, "fclose");

    f = fopen(p, "a");
    CHECK(f && fputs("line 4\n", f) >= 0 && fclose(f) == 0, "fopen a");
    f = fopen(p, "r");
    CHECK(f != NULL, "fopen r");
    if (!f)
        return;
    char line[64];
    int n = 0;
    while (fgets(line, sizeof(line), f)) {
        char want[32];
        snprintf(want, sizeof(want), "line %d\n", ++n);
        CHECK(strcmp(line, want) == 0, "fgets line %d: %s", n, line);
    }
    CHECK(n == 4 && feof(f), "4 lines");
    CHECK(fseek(f, 5, SEEK_SET) == 0 && fread(line, 1, 1, f) == 1 &&
              line[0] == '1',
          "fseek, fread");
    CHECK(fseek(f, 0, SEEK_END) == 0 && ftell(f) == 28, "fseek SEEK_END");
    fclose(f);

    int fd = open(p, O_RDONLY);
    f = fdopen(fd, "r");
    CHECK(f && fileno(f) == fd && fgets(line, sizeof(line), f) &&
              !strcmp(line, "line 1\n"),
          "fdopen");
    if (f)
        fclose(f);
    CHECK(fcntl(fd, F_GETFD) == -1 && errno == EBADF,
          "fclose closed the descriptor");
    CHECK(fopen(path(dir, "missing"), "r") == NULL && errno == ENOENT,
          "fopen of a missing name");
    CHECK(remove(p) == 0, "remove");
}

/* A missing name gives what libc gives for a missing local path. */
static void t_enoent(const char *dir, const char *local)
{
    const char *g = path(dir, "no/such/file"), *l = path(local, "no/such");
    struct stat st;
    int eg, el;
#define SAME(call_g, call_l, what)                                             \
    do {                                                                       \
        errno = 0;                                                             \
        long rg = (long)(call_g);                                              \
        eg = errno;                                                            \
        errno = 0;                                                             \
        long rl = (long)(call_l);                                              \
        el = errno;                                                            \
        CHECK(rg == rl && eg == el, "%s: galley %ld/%d, local %ld/%d", what,   \
              rg, eg, rl, el);                                                 \
    } while (0)
    SAME(open(g, O_RDONLY), open(l, O_RDONLY), "open");
    SAME(stat(g, &st), stat(l, &st), "stat");
    SAME(lstat(g, &st), lstat(l, &st), "lstat");
    SAME(access(g, F_OK), access(l, F_OK), "access");
    SAME(unlink(g), unlink(l), "unlink");
    SAME(truncate(g, 0), truncate(l, 0), "truncate");
    SAME(fopen(g, "r") != NULL, fopen(l, "r") != NULL, "fopen");
    SAME(rename(g, path(dir, "x")), rename(l, path(local, "x")), "rename");
    CHECK(eg == ENOENT, "and that is ENOENT");
}

/* Threads: disjoint pwrites on one descriptor, then preads. */
enum { NT = 6, TB = 70001 };
static int tfd;
static void *t_thread(void *arg)
{
    long t = (long)arg;
    unsigned char *b = malloc(TB), *c = malloc(TB);
    for (long i = 0; i < TB; i++)
        b[i] = pat(i + t * TB);
    long ok = pwrite(tfd, b, TB, t * TB) == TB &&
              pread(tfd, c, TB, t * TB) == TB && !memcmp(b, c, TB);
    free(b);
    free(c);
    return (void *)ok;
}

static void t_threads(const char *dir)
{
    const char *p = path(dir, "threads");
    tfd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0644);
    CHECK(tfd >= 0, "open");
    pthread_t th[NT];
    for (long t = 0; t < NT; t++)
        pthread_create(&th[t], NULL, t_thread, (void *)t);
    for (long t = 0; t < NT; t++) {
        void *ok;
        pthread_join(th[t], &ok);
        CHECK(ok, "thread %ld", t);
    }
    struct stat st;
    CHECK(fstat(tfd, &st) == 0 && st.st_size == NT * TB, "size after threads");
    close(tfd);
    unlink(p);
}

/* A child without exec (of a parent using Galley): it reads and writes
 * the descriptor it inherited, and makes and reads a file of its own,
 * while the parent's connections stay the parent's.  Exit status 0, or
 * the step that failed. */
static int fork_child(int fd, const char *mine)
{
    char b[8];
    if (pread(fd, b, 6, 0) != 6 || memcmp(b, "parent", 6))
        return 1;
    if (pwrite(fd, "child", 5, 6) != 5)
        return 2;
    int m = open(mine, O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (m < 0 || write(m, "own", 3) != 3 || pread(m, b, 3, 0) != 3 ||
        memcmp(b, "own", 3) || close(m))
        return 3;
    struct stat st;
    if (fstat(fd, &st) || st.st_size != 11)
        return 4;
    return 0;
}

/* fork: a child without exec uses Galley (fork_child) over connections of
 * its own; the child after exec uses Galley afresh; the parent is
 * unaffected either way and sees what the child wrote. */
static void t_fork(const char *dir)
{
    const char *p = path(dir, "forked");
    char mine[512];
    snprintf(mine, sizeof(mine), "%s", path(dir, "forked-child"));
    int fd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0644);
    CHECK(fd >= 0 && write(fd, "parent", 6) == 6, "parent writes");
    char b[16];
    CHECK(pread(fd, b, 6, 0) == 6, "parent reads before the fork");
    pid_t pid = fork();
    if (pid == 0)
        _exit(fork_child(fd, mine));
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0,
          "child without exec uses Galley (failed step %d)",
          WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    CHECK(pread(fd, b, 11, 0) == 11 && !memcmp(b, "parentchild", 11),
          "parent reads what the child wrote");
    int m = open(mine, O_RDONLY);
    CHECK(m >= 0 && read(m, b, 3) == 3 && !memcmp(b, "own", 3) && !close(m),
          "parent reads the child's own file");
    unlink(mine);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "test \"$(cat '%s')\" = parentchild", p);
    CHECK(system(cmd) == 0, "child after exec reads the file: %s", cmd);
    CHECK(pread(fd, b, 6, 0) == 6 && !memcmp(b, "parent", 6),
          "parent still reads");
    close(fd);
    unlink(p);
}

/* The same steps on a local file still behave as libc's. */
static void t_local(const char *local)
{
    const char *p = path(local, "plain");
    int fd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0644);
    CHECK(fd >= 0 && write(fd, "local", 5) == 5, "local write");
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && st.st_size == 5, "local fstat");
    char b[5];
    CHECK(pread(fd, b, 5, 0) == 5 && !memcmp(b, "local", 5), "local pread");
    close(fd);
    FILE *f = fopen(p, "r");
    CHECK(f && fileno(f) >= 0 && fgets(b, 5, f), "local stdio");
    if (f)
        fclose(f);
    CHECK(unlink(p) == 0, "local unlink");
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: t_posix PREFIX LOCALDIR\n");
        return 2;
    }
    t_data(argv[1]);
    t_stdio(argv[1]);
    t_enoent(argv[1], argv[2]);
    t_threads(argv[1]);
    t_fork(argv[1]);
    t_local(argv[2]);
    if (nfail)
        printf("%d of %d checks failed\n", nfail, nchecks);
    else
        printf("PASS %d checks\n", nchecks);
    return nfail != 0;
}
