/*
 * t_locks -- POSIX lock semantics, as a transcript: run on a local file
 * (libc, the kernel's locks) and on a galley: file under `galley exec`
 * (the servers' locks), the two transcripts must be equal.
 *
 *   t_locks FILE [OTHER]
 *
 * The parent and a second process (this program again, fork + exec, so
 * that it has its own Galley client under the preload) take turns: the
 * parent sends the other one (which opens OTHER, default FILE: the same
 * file through another mount, say) a command on a pipe ("getlk W 0 0") and gets
 * one line back.  Every call's result is printed (0, an errno name, or
 * the lock F_GETLK reports, with pids as "parent", "child" or -1), never
 * a bare pass/fail: the test compares the lines.  Covered: conflicts
 * between processes, F_GETLK's range and pid, unlock of a sub-range,
 * merging, upgrade, POSIX release on close of another descriptor of the
 * file (and on dup2 over one), OFD locks (conflict within a process, kept
 * until their own description closes), flock apart from fcntl, lockf,
 * F_SETLKW waiting for an unlock, release on the holder's death
 * (SIGKILL), whence SEEK_CUR / SEEK_END and a negative length, and the
 * EBADF / EINVAL cases.  Exit 0 unless the program itself failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *path, *other_path;
static pid_t parent_pid, child_pid;
static FILE *to_child, *from_child;

static const char *ename(int e)
{
    switch (e) {
    case EAGAIN:
        return "EAGAIN";
    case EACCES:
        return "EACCES";
    case EBADF:
        return "EBADF";
    case EINVAL:
        return "EINVAL";
    case EDEADLK:
        return "EDEADLK";
    default: {
        static char buf[32];
        snprintf(buf, sizeof(buf), "errno%d", e);
        return buf;
    }
    }
}

static const char *rc_str(int rc)
{
    return rc == 0 ? "0" : rc == -1 ? ename(errno) : "?";
}

static short ltype(char c)
{
    return c == 'R' ? F_RDLCK : c == 'W' ? F_WRLCK : F_UNLCK;
}

static int setlk(int fd, int cmd, char t, long start, long len, int whence)
{
    struct flock fl = {.l_type = ltype(t),
                       .l_whence = (short)whence,
                       .l_start = start,
                       .l_len = len};
    return fcntl(fd, cmd, &fl);
}

/* F_GETLK (or F_OFD_GETLK) as one word list. */
static void getlk(int fd, int cmd, char t, long start, long len, char *out,
                  size_t n)
{
    struct flock fl = {.l_type = ltype(t),
                       .l_whence = SEEK_SET,
                       .l_start = start,
                       .l_len = len};
    if (fcntl(fd, cmd, &fl) < 0) {
        snprintf(out, n, "%s", ename(errno));
        return;
    }
    if (fl.l_type == F_UNLCK) {
        snprintf(out, n, "UNLCK");
        return;
    }
    char who[32];
    if (fl.l_pid == parent_pid)
        snprintf(who, sizeof(who), "parent");
    else if (child_pid && fl.l_pid == child_pid)
        snprintf(who, sizeof(who), "child");
    else if (fl.l_pid == -1)
        snprintf(who, sizeof(who), "-1");
    else
        snprintf(who, sizeof(who), "other");
    snprintf(out, n, "%s start=%ld len=%ld whence=%d pid=%s",
             fl.l_type == F_WRLCK ? "W" : "R", (long)fl.l_start, (long)fl.l_len,
             fl.l_whence, who);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---------------------------------------------------------- the other */

static int child_main(void)
{
    int fd = open(path, O_RDWR);
    if (fd < 0) {
        printf("open failed: %s\n", strerror(errno));
        return 1;
    }
    char line[256], out[256];
    printf("%d\n", (int)getpid());
    fflush(stdout);
    while (fgets(line, sizeof(line), stdin)) {
        char op[32], t = 'W';
        long a = 0, b = 0, c = 0;
        sscanf(line, "%31s %c %ld %ld %ld", op, &t, &a, &b, &c);
        /* "soon OP ...": the state after a close; a FUSE mount learns of
         * the last close of a file asynchronously (its release), so ask
         * again for up to 3 s while the old answer stands. */
        if (!strcmp(op, "soon")) {
            double t0 = now();
            const char *rest = line + 5;
            for (;;) {
                sscanf(rest, "%31s %c %ld %ld %ld", op, &t, &a, &b, &c);
                if (!strcmp(op, "getlk"))
                    getlk(fd, F_GETLK, t, a, b, out, sizeof(out));
                else
                    snprintf(out, sizeof(out), "%s",
                             rc_str(flock(fd, (t == 'R' ? LOCK_SH : LOCK_EX) |
                                                  LOCK_NB)));
                if (!strcmp(out, "0") || !strcmp(out, "UNLCK") ||
                    now() - t0 > 3)
                    break;
                usleep(20000);
            }
            printf("%s\n", out);
            fflush(stdout);
            continue;
        }
        if (!strcmp(op, "setlk")) {
            snprintf(out, sizeof(out), "%s",
                     rc_str(setlk(fd, F_SETLK, t, a, b, SEEK_SET)));
        } else if (!strcmp(op, "getlk")) {
            getlk(fd, F_GETLK, t, a, b, out, sizeof(out));
        } else if (!strcmp(op, "unlock_after")) { /* t: ms in a */
            printf("ok\n");
            fflush(stdout);
            usleep((useconds_t)a * 1000);
            snprintf(out, sizeof(out), "%s",
                     rc_str(setlk(fd, F_SETLK, 'U', b, c, SEEK_SET)));
        } else if (!strcmp(op, "lockf_test")) {
            snprintf(out, sizeof(out), "%s", rc_str(lockf(fd, F_TEST, a)));
        } else if (!strcmp(op, "lockf_tlock")) {
            snprintf(out, sizeof(out), "%s", rc_str(lockf(fd, F_TLOCK, a)));
        } else if (!strcmp(op, "flock_nb")) {
            snprintf(
                out, sizeof(out), "%s",
                rc_str(flock(fd, (t == 'R' ? LOCK_SH : LOCK_EX) | LOCK_NB)));
        } else if (!strcmp(op, "die")) {
            raise(SIGKILL);
        } else {
            snprintf(out, sizeof(out), "bad command");
        }
        printf("%s\n", out);
        fflush(stdout);
    }
    return 0;
}

/* Send one command to the other process; its answer. */
static const char *ask(const char *fmt, ...)
{
    static char line[256];
    va_list ap;
    va_start(ap, fmt);
    vfprintf(to_child, fmt, ap);
    va_end(ap);
    fputc('\n', to_child);
    fflush(to_child);
    if (!fgets(line, sizeof(line), from_child))
        return "no answer";
    line[strcspn(line, "\n")] = 0;
    return line;
}

static void start_child(const char *self)
{
    int in[2], out[2];
    if (pipe(in) || pipe(out))
        exit(2);
    pid_t p = fork();
    if (p == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execl(self, self, "--child", other_path, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_child = fdopen(in[1], "w");
    from_child = fdopen(out[0], "r");
    char line[64];
    if (!fgets(line, sizeof(line), from_child)) {
        fprintf(stderr, "t_locks: the other process did not start\n");
        exit(2);
    }
    child_pid = (pid_t)atoi(line);
}

static void stop_child(void)
{
    fclose(to_child);
    fclose(from_child);
    waitpid(child_pid, NULL, 0);
    child_pid = 0;
}

#define SAY(...)                                                               \
    do {                                                                       \
        printf(__VA_ARGS__);                                                   \
        putchar('\n');                                                         \
        fflush(stdout);                                                        \
    } while (0)

/* Conflicts between processes and what F_GETLK reports. */
static void step_conflicts(int fd)
{
    char buf[256];
    SAY("P setlk W 0 100: %s", rc_str(setlk(fd, F_SETLK, 'W', 0, 100, 0)));
    SAY("C setlk W 50 10: %s", ask("setlk W 50 10"));
    SAY("C setlk R 50 10: %s", ask("setlk R 50 10"));
    SAY("C getlk W 0 0: %s", ask("getlk W 0 0"));
    SAY("C getlk R 99 1: %s", ask("getlk R 99 1"));
    SAY("C setlk R 100 10: %s", ask("setlk R 100 10"));
    getlk(fd, F_GETLK, 'W', 100, 10, buf, sizeof(buf));
    SAY("P getlk W 100 10: %s", buf);
    getlk(fd, F_GETLK, 'R', 100, 10, buf, sizeof(buf));
    SAY("P getlk R 100 10: %s", buf);
    getlk(fd, F_GETLK, 'W', 0, 10, buf, sizeof(buf));
    SAY("P getlk W 0 10 (own lock): %s", buf);
}

/* Unlock of a sub-range splits the lock. */
static void step_unlock_split(int fd)
{
    SAY("P unlock 20 30: %s", rc_str(setlk(fd, F_SETLK, 'U', 20, 30, 0)));
    SAY("C getlk W 20 30: %s", ask("getlk W 20 30"));
    SAY("C getlk W 10 20: %s", ask("getlk W 10 20"));
    SAY("C getlk W 45 10: %s", ask("getlk W 45 10"));
    SAY("C setlk W 25 5: %s", ask("setlk W 25 5"));
    SAY("C setlk U 25 5: %s", ask("setlk U 25 5"));
}

/* Merging, downgrade and upgrade. */
static void step_merging(int fd)
{
    SAY("P setlk R 200 10: %s", rc_str(setlk(fd, F_SETLK, 'R', 200, 10, 0)));
    SAY("P setlk R 210 10: %s", rc_str(setlk(fd, F_SETLK, 'R', 210, 10, 0)));
    SAY("C getlk W 215 1: %s", ask("getlk W 215 1"));
    SAY("C setlk R 205 10: %s", ask("setlk R 205 10"));
    SAY("C setlk U 205 10: %s", ask("setlk U 205 10"));
    SAY("P setlk W 205 5: %s", rc_str(setlk(fd, F_SETLK, 'W', 205, 5, 0)));
    SAY("C getlk R 200 20: %s", ask("getlk R 200 20"));
    SAY("C getlk W 212 3: %s", ask("getlk W 212 3"));
    SAY("P setlk R 200 20: %s", rc_str(setlk(fd, F_SETLK, 'R', 200, 20, 0)));
    SAY("C getlk W 201 30: %s", ask("getlk W 201 30"));
}

/* Ranges: to the end, SEEK_CUR, SEEK_END, negative lengths. */
static void step_ranges(int fd)
{
    char buf[256];
    SAY("P unlock 0 0: %s", rc_str(setlk(fd, F_SETLK, 'U', 0, 0, 0)));
    SAY("P setlk W 1000 0: %s", rc_str(setlk(fd, F_SETLK, 'W', 1000, 0, 0)));
    SAY("C getlk R 5000 7: %s", ask("getlk R 5000 7"));
    SAY("P unlock 1000 0: %s", rc_str(setlk(fd, F_SETLK, 'U', 1000, 0, 0)));
    lseek(fd, 300, SEEK_SET);
    SAY("P setlk W cur+5 10: %s",
        rc_str(setlk(fd, F_SETLK, 'W', 5, 10, SEEK_CUR)));
    SAY("C getlk W 300 100: %s", ask("getlk W 300 100"));
    SAY("P setlk W end-4 2: %s",
        rc_str(setlk(fd, F_SETLK, 'W', -4, 2, SEEK_END)));
    SAY("C getlk W 0 10: %s", ask("getlk W 0 10"));
    SAY("P setlk W 500 -20: %s", rc_str(setlk(fd, F_SETLK, 'W', 500, -20, 0)));
    SAY("C getlk W 450 100: %s", ask("getlk W 450 100"));
    SAY("P setlk W 5 -20: %s", rc_str(setlk(fd, F_SETLK, 'W', 5, -20, 0)));
    SAY("P setlk W -1 5: %s", rc_str(setlk(fd, F_SETLK, 'W', -1, 5, 0)));
    SAY("P setlk whence 7: %s", rc_str(setlk(fd, F_SETLK, 'W', 0, 5, 7)));
    SAY("P getlk U: %s",
        (getlk(fd, F_GETLK, 'U', 0, 5, buf, sizeof(buf)), buf));
}

/* POSIX: closing any descriptor of the file releases the process's
 * locks on it, also those taken through another descriptor. */
static void step_close_releases(int fd)
{
    int fd2 = open(path, O_RDONLY);
    SAY("C getlk W 300 10 (before close): %s", ask("getlk W 300 10"));
    SAY("P close other fd: %s", rc_str(close(fd2)));
    SAY("C getlk W 0 0 (after close): %s", ask("getlk W 0 0"));
    SAY("C setlk W 0 100: %s", ask("setlk W 0 100"));
    SAY("C setlk U 0 0: %s", ask("setlk U 0 0"));
    SAY("P setlk W 0 10: %s", rc_str(setlk(fd, F_SETLK, 'W', 0, 10, 0)));
    int fd3 = open(path, O_RDONLY);
    int fd4 = open("/dev/null", O_RDONLY);
    SAY("P dup2 over other fd: %d", dup2(fd4, fd3) == fd3);
    SAY("C getlk W 0 0 (after dup2): %s", ask("getlk W 0 0"));
    close(fd3);
    close(fd4);
}

/* Access modes. */
static void step_access_modes(void)
{
    int ro = open(path, O_RDONLY), wo = open(path, O_WRONLY);
    SAY("P setlk W on O_RDONLY: %s", rc_str(setlk(ro, F_SETLK, 'W', 0, 1, 0)));
    SAY("P setlk R on O_WRONLY: %s", rc_str(setlk(wo, F_SETLK, 'R', 0, 1, 0)));
    SAY("P setlk R on O_RDONLY: %s", rc_str(setlk(ro, F_SETLK, 'R', 0, 1, 0)));
    SAY("P setlk W on O_WRONLY: %s", rc_str(setlk(wo, F_SETLK, 'W', 2, 1, 0)));
    close(ro); /* releases both */
    close(wo);
    SAY("C getlk W 0 0 (after closes): %s", ask("getlk W 0 0"));
}

/* OFD locks: owned by the open file description. */
static void step_ofd(void)
{
    char buf[256];
    int o1 = open(path, O_RDWR), o2 = open(path, O_RDWR);
    struct flock ofl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 10};
    SAY("P ofd setlk o1 W 0 10: %s", rc_str(fcntl(o1, F_OFD_SETLK, &ofl)));
    ofl.l_start = 5;
    SAY("P ofd setlk o2 W 5 10: %s", rc_str(fcntl(o2, F_OFD_SETLK, &ofl)));
    ofl.l_pid = 1;
    SAY("P ofd setlk l_pid 1: %s", rc_str(fcntl(o2, F_OFD_SETLK, &ofl)));
    getlk(o2, F_OFD_GETLK, 'R', 0, 0, buf, sizeof(buf));
    SAY("P ofd getlk o2: %s", buf);
    getlk(o2, F_GETLK, 'R', 0, 0, buf, sizeof(buf));
    SAY("P getlk o2 (process): %s", buf);
    SAY("P setlk W 0 10 (process vs own ofd): %s",
        rc_str(setlk(o2, F_SETLK, 'W', 0, 10, 0)));
    SAY("C getlk W 0 0: %s", ask("getlk W 0 0"));
    close(o2);
    SAY("C getlk W 0 0 (o2 closed): %s", ask("getlk W 0 0"));
    int o3 = dup(o1);
    close(o1);
    SAY("C getlk W 0 0 (o1 closed, dup open): %s", ask("getlk W 0 0"));
    close(o3);
    SAY("C getlk W 0 0 (all closed): %s", ask("soon getlk W 0 0"));
}

/* flock: per open file description, apart from fcntl locks. */
static void step_flock(const char *self)
{
    int f1 = open(path, O_RDONLY), f2 = open(path, O_RDONLY);
    SAY("P flock f1 EX: %s", rc_str(flock(f1, LOCK_EX)));
    SAY("P flock f2 EX|NB: %s", rc_str(flock(f2, LOCK_EX | LOCK_NB)));
    SAY("C flock SH|NB: %s", ask("flock_nb R"));
    SAY("C setlk W 0 0 (fcntl beside flock): %s", ask("setlk W 0 0"));
    SAY("C setlk U 0 0: %s", ask("setlk U 0 0"));
    SAY("P flock f1 SH: %s", rc_str(flock(f1, LOCK_SH)));
    SAY("P flock f2 SH|NB: %s", rc_str(flock(f2, LOCK_SH | LOCK_NB)));
    SAY("C flock EX|NB: %s", ask("flock_nb W"));
    SAY("P flock bad op: %s", rc_str(flock(f1, 0)));
    close(f1);
    close(f2);
    SAY("C flock EX|NB (closed): %s", ask("soon flock_nb W"));
    stop_child(); /* its flock goes with it */
    start_child(self);
}

/* lockf. */
static void step_lockf(int fd)
{
    lseek(fd, 0, SEEK_SET);
    SAY("P lockf F_LOCK 10: %s", rc_str(lockf(fd, F_LOCK, 10)));
    SAY("P lockf F_TEST 10: %s", rc_str(lockf(fd, F_TEST, 10)));
    SAY("C lockf F_TEST 10: %s", ask("lockf_test W 10"));
    SAY("C lockf F_TLOCK 10: %s", ask("lockf_tlock W 10"));
    SAY("P lockf F_ULOCK 10: %s", rc_str(lockf(fd, F_ULOCK, 10)));
    SAY("C lockf F_TLOCK 10: %s", ask("lockf_tlock W 10"));
    SAY("P lockf F_TLOCK 5: %s", rc_str(lockf(fd, F_TLOCK, 5)));
    SAY("P lockf bad: %s", rc_str(lockf(fd, 99, 5)));
}

/* F_SETLKW waits for the holder's unlock. */
static void step_setlkw(int fd)
{
    char buf[256];
    SAY("C unlock_after: %s", ask("unlock_after W 400 0 10"));
    double t0 = now();
    int rc = setlk(fd, F_SETLKW, 'W', 0, 10, 0);
    double waited = now() - t0;
    SAY("P setlkw W 0 10: %s waited>=0.2s: %d", rc_str(rc), waited >= 0.2);
    char ans[256];
    snprintf(ans, sizeof(ans), "%s",
             fgets(buf, sizeof(buf), from_child) ? buf : "");
    ans[strcspn(ans, "\n")] = 0;
    SAY("C unlocked: %s", ans);
    SAY("C setlk W 0 10: %s", ask("setlk W 0 10"));
    SAY("P unlock 0 0: %s", rc_str(setlk(fd, F_SETLK, 'U', 0, 0, 0)));
}

/* The holder dies: its locks go. */
static void step_holder_dies(int fd)
{
    SAY("C setlk W 0 0: %s", ask("setlk W 0 0"));
    SAY("P setlk W 0 1 (held): %s", rc_str(setlk(fd, F_SETLK, 'W', 0, 1, 0)));
    fputs("die\n", to_child);
    fflush(to_child);
    int st;
    waitpid(child_pid, &st, 0);
    SAY("C killed: %d", WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    fclose(to_child);
    fclose(from_child);
    child_pid = 0;
    /* The server sees the connection go a moment after the exit. */
    double t0 = now();
    int rc;
    do
        rc = setlk(fd, F_SETLK, 'W', 0, 1, 0);
    while (rc && errno == EAGAIN && now() - t0 < 5 && usleep(10000) == 0);
    SAY("P setlk W 0 1 (holder dead): %s", rc_str(rc));
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--child")) {
        path = argv[2];
        parent_pid = getppid();
        return child_main();
    }
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: t_locks FILE [OTHER]\n");
        return 2;
    }
    path = argv[1];
    other_path = argc == 3 ? argv[2] : path;
    parent_pid = getpid();
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return 2;
    self[n] = 0;

    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(path);
        return 2;
    }
    if (write(fd, "0123456789", 10) != 10)
        return 2;
    start_child(self);

    step_conflicts(fd);
    step_unlock_split(fd);
    step_merging(fd);
    step_ranges(fd);
    step_close_releases(fd);
    step_access_modes();
    step_ofd();
    step_flock(self);
    step_lockf(fd);
    step_setlkw(fd);
    step_holder_dies(fd);

    close(fd);
    return 0;
}
