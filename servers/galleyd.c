/*
 * galleyd.c -- the Galley I/O server: one per I/O node.
 *
 *   galleyd --data DIR [--listen HOST:PORT] [--cache-mb N]
 *           [--data-limit BYTES] [--port-file FILE] [--no-local]
 *           [--spin-us N] [--key FILE] [--max-conns N]
 *           [--frame-timeout SEC] [--lock-lease SEC] [-v]
 *
 * Threads: main() runs here: it parses arguments, sets up DIR, starts the
 * DiskManager and CacheManager threads, loads the metadata, listens, and
 * accepts connections, starting one detached handler thread per client.
 * SIGTERM/SIGINT are caught on the main thread only (every other thread
 * blocks them) and end the accept loop through a self-pipe; the main
 * thread then shuts every client socket down, waits for the handlers to
 * finish, stops the CacheManager and DiskManager and exits 0.  SIGPIPE is
 * ignored (sends use MSG_NOSIGNAL as well).
 *
 * The globals every unit reads (gsrv_g), logging and the registry of live
 * connections are gsrv_globals.c's; this file only fills them in.
 *
 * Port 0 picks a free port; the chosen address is printed on stdout as
 * "listening HOST:PORT" (flushed) and, with --port-file, written to FILE
 * atomically (temp file + rename), so a launcher can learn it.
 *
 * The same-host transport (gproto.h): the server also listens on the
 * abstract Unix socket gp_local_addr("HOST:PORT") unless --no-local; its
 * connections are handled exactly like TCP ones, plus the peer's pid
 * (SO_PEERCRED) for cross-memory attach.
 */
#include "gsrv_internal.h"

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int sigpipe_fds[2] = {-1, -1};

/* ---------------------------------------------------------- arguments ---- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: galleyd --data DIR [--listen HOST:PORT] [--cache-mb N]\n"
            "               [--data-limit BYTES] [--port-file FILE] "
            "[--no-local] [--spin-us N] [-v]\n"
            "\n"
            "  --data DIR         directory holding this server's data "
            "(created if\n"
            "                     missing; one galleyd per DIR)\n"
            "  --listen HOST:PORT address to listen on (default "
            "127.0.0.1:0; port 0\n"
            "                     picks a free port; \"[v6addr]:PORT\" for "
            "IPv6)\n"
            "  --cache-mb N       block cache size in MB (default %d)\n"
            "  --data-limit BYTES largest data transfer per request, K/M/G "
            "suffixes\n"
            "                     allowed (default %u)\n"
            "  --port-file FILE   also write the listening HOST:PORT to FILE\n"
            "  --no-local         no same-host (Unix socket) transport: TCP "
            "only\n"
            "  --spin-us N        same-host clients: poll N microseconds for "
            "the next\n"
            "                     request before sleeping, unless polling "
            "is backed\n"
            "                     off (common/gspin.h; default 50; 0 never)\n"
            "  --key FILE         the cluster secret (galley-cluster's "
            "DIR/cluster.key):\n"
            "                     only clients that prove they know it are "
            "served; kept\n"
            "                     in DIR/key for later starts without "
            "--key\n"
            "  --max-conns N      clients served at once; more get an "
            "error (default %d)\n"
            "  --frame-timeout SEC  close a connection that stops in the "
            "middle of a\n"
            "                     request, or does not authenticate, for "
            "SEC seconds\n"
            "                     (default %d)\n"
            "  --lock-lease SEC   a byte-range lock whose holder sends "
            "nothing for SEC\n"
            "                     seconds may be taken over (default %d; "
            "libgalley\n"
            "                     renews its locks every second)\n"
            "  --commit written|synced  when a metadata change is "
            "answered: once\n"
            "                     in the log (kill -9 safe; the log is "
            "fdatasync'd\n"
            "                     right behind, and at every fsync; "
            "default), or once\n"
            "                     the log's fdatasync made it durable\n"
            "  -v, --verbose      log connections (-vv: also failed "
            "requests,\n"
            "                     -vvv: every request)\n"
            "\n"
            "Prints \"listening HOST:PORT\" on stdout once ready.\n",
            GSRV_DEFAULT_CACHE_MB, (unsigned)GP_DEFAULT_DATA_LIMIT,
            GSRV_DEFAULT_MAX_CONNS, GSRV_DEFAULT_FRAME_TIMEOUT_S,
            GSRV_DEFAULT_LOCK_LEASE_S);
}

static bool parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || s[0] == '-')
        return false;
    uint64_t mul = 1;
    switch (*end) {
    case 'k':
    case 'K':
        mul = 1ull << 10;
        end++;
        break;
    case 'm':
    case 'M':
        mul = 1ull << 20;
        end++;
        break;
    case 'g':
    case 'G':
        mul = 1ull << 30;
        end++;
        break;
    default:
        break;
    }
    if (*end || v > UINT64_MAX / mul)
        return false;
    *out = v * mul;
    return true;
}

/* Split HOST:PORT / [V6]:PORT / :PORT / PORT / HOST. */
static int parse_listen(const char *arg, char *host, size_t hl, char *port,
                        size_t pl)
{
    const char *colon;
    snprintf(host, hl, "127.0.0.1");
    snprintf(port, pl, "0");
    if (arg[0] == '[') {
        const char *rb = strchr(arg, ']');
        if (!rb || (rb[1] && rb[1] != ':'))
            return -1;
        snprintf(host, hl, "%.*s", (int)(rb - arg - 1), arg + 1);
        if (rb[1] == ':')
            snprintf(port, pl, "%s", rb + 2);
    } else if ((colon = strrchr(arg, ':'))) {
        if (strchr(arg, ':') != colon)
            return -1; /* bare IPv6 address: needs brackets */
        if (colon != arg)
            snprintf(host, hl, "%.*s", (int)(colon - arg), arg);
        snprintf(port, pl, "%s", colon + 1);
    } else if (arg[0] && strspn(arg, "0123456789") == strlen(arg)) {
        snprintf(port, pl, "%s", arg);
    } else {
        snprintf(host, hl, "%s", arg);
    }
    if (!host[0] || !port[0] || strspn(port, "0123456789") != strlen(port))
        return -1;
    return 0;
}

/* ------------------------------------------------------------ signals ---- */

static void on_signal(int sig)
{
    int saved = errno;
    char b = (char)sig;
    if (write(sigpipe_fds[1], &b, 1) < 0) {
        /* the pipe is full: a stop is already pending */
    }
    errno = saved;
}

static int setup_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    if (pipe2(sigpipe_fds, O_CLOEXEC | O_NONBLOCK) < 0)
        return -errno;
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    return 0;
}

/* Start a thread with SIGTERM/SIGINT blocked (only main handles them). */
static int start_thread(pthread_t *t, void *(*fn)(void *), void *arg,
                        bool detached)
{
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (detached)
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return -rc;
}

/* The CacheManager and DiskManager threads are started by their units;
 * starting them with the signals blocked here keeps them off the signal
 * path. */
static int start_units(size_t cache_mb)
{
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int rc = gsrv_disk_start();
    if (!rc) {
        rc = gsrv_cache_start(cache_mb);
        if (rc)
            gsrv_disk_stop();
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* -------------------------------------------------------------- setup ---- */

static int open_data_dir(const char *dir, int *lockfd)
{
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        int e = errno;
        fprintf(stderr, "galleyd: cannot create %s: %s\n", dir, strerror(e));
        return -e;
    }
    gsrv_g.dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (gsrv_g.dfd < 0) {
        int e = errno;
        fprintf(stderr, "galleyd: cannot open %s: %s\n", dir, strerror(e));
        return -e;
    }
    /* only its owner may read a server's data (older ones were 0755) */
    if (fchmod(gsrv_g.dfd, 0700) < 0)
        gsrv_log(0, "cannot make %s private: %s", dir, strerror(errno));
    *lockfd = openat(gsrv_g.dfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (*lockfd < 0 || flock(*lockfd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        if (e == EWOULDBLOCK)
            fprintf(stderr,
                    "galleyd: %s is already served by another "
                    "galleyd\n",
                    dir);
        else
            fprintf(stderr, "galleyd: cannot lock %s/lock: %s\n", dir,
                    strerror(e));
        return -e;
    }
    return 0;
}

/* Raise the descriptor limit: every fork in use keeps its file open. */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static int open_listener(const char *host, const char *port, char *addr,
                         size_t alen)
{
    struct addrinfo hints, *res, *ai;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai) {
        fprintf(stderr, "galleyd: %s:%s: %s\n", host, port, gai_strerror(gai));
        return -1;
    }
    int fd = -1, err = 0;
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                    ai->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 128) == 0)
            break;
        err = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        fprintf(stderr, "galleyd: cannot listen on %s:%s: %s\n", host, port,
                strerror(err));
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char h[NI_MAXHOST], p[NI_MAXSERV];
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0 ||
        getnameinfo((struct sockaddr *)&ss, sl, h, sizeof(h), p, sizeof(p),
                    NI_NUMERICHOST | NI_NUMERICSERV)) {
        fprintf(stderr, "galleyd: cannot read the listening address\n");
        close(fd);
        return -1;
    }
    if (ss.ss_family == AF_INET6)
        snprintf(addr, alen, "[%.255s]:%.15s", h, p);
    else
        snprintf(addr, alen, "%.255s:%.15s", h, p);
    return fd;
}

/* The same-host listener: the abstract Unix socket named after the TCP
 * address.  -1 (logged, not fatal) when it cannot be had. */
static int open_local_listener(const char *addr)
{
    /* a wildcard address serves every local address: "*:PORT" */
    char wild[40];
    const char *colon = strrchr(addr, ':');
    if (colon &&
        (!strncmp(addr, "0.0.0.0:", 8) || !strncmp(addr, "[::]:", 5))) {
        snprintf(wild, sizeof(wild), "*%.30s", colon);
        addr = wild;
    }
    struct sockaddr_un sa;
    int len = gp_local_addr(&sa, addr);
    if (len < 0)
        return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&sa, (socklen_t)len) < 0 ||
        listen(fd, 128) < 0) {
        gsrv_log(0, "no same-host transport (@%s): %s", sa.sun_path + 1,
                 strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static int write_port_file(const char *path, const char *addr)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -errno;
    fprintf(f, "%s\n", addr);
    if (fclose(f) != 0) {
        int e = errno;
        unlink(tmp);
        return -e;
    }
    if (rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        return -e;
    }
    return 0;
}

/* ------------------------------------------------------------- accept ---- */

static void accept_one(int lfd, bool local)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
    if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE) {
            gsrv_log(0, "accept: %s", strerror(errno));
            struct timespec ts = {0, 100 * 1000000L}; /* do not spin */
            nanosleep(&ts, NULL);
        }
        return;
    }
    int one = 1;
    if (!local) {
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    }
    /* Past the cap a connection is answered GFS_ECONNLIMIT by a short-lived
     * handler; past the cap plus a few such handlers it is just closed. */
    size_t live = gsrv_conn_count();
    if (live >= (size_t)gsrv_g.max_conns + GSRV_OVERCAP_HANDLERS) {
        close(fd);
        return;
    }
    gsrv_conn *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        return;
    }
    c->fd = fd;
    if (live >= gsrv_g.max_conns) {
        c->over_cap = true;
        gsrv_log(1, "connection cap (%u) reached: refusing a client",
                 gsrv_g.max_conns);
    }
    char h[NI_MAXHOST], p[NI_MAXSERV];
    struct ucred cred;
    socklen_t cl = sizeof(cred);
    c->pidfd = -1;
    if (local) {
        c->local = true;
        /* The pidfd pins the identity: a pid is only used while this
         * process lives, so a reused pid never gets another's copies. */
        bool cred_ok = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0;
        if (cred_ok) { /* the uid decides direct access (direct.c) */
            c->uid = cred.uid;
            c->has_cred = true;
        }
        if (cred_ok && cred.pid > 0 &&
            (c->pidfd = (int)syscall(SYS_pidfd_open, cred.pid, 0)) >= 0)
            c->pid = cred.pid;
        snprintf(c->peer, sizeof(c->peer), "local:pid %d", (int)c->pid);
    } else if (getnameinfo((struct sockaddr *)&ss, sl, h, sizeof(h), p,
                           sizeof(p), NI_NUMERICHOST | NI_NUMERICSERV) == 0)
        snprintf(c->peer, sizeof(c->peer), "%.60s:%.15s", h, p);
    else
        snprintf(c->peer, sizeof(c->peer), "client");
    gsrv_conn_register(c);
    pthread_t t;
    int rc = start_thread(&t, gsrv_handler_main, c, true);
    if (rc) {
        gsrv_log(0, "cannot start a handler thread: %s", strerror(-rc));
        gsrv_conn_unregister(c);
        if (c->pidfd >= 0)
            close(c->pidfd);
        free(c);
    }
}

/* -------------------------------------------------------------- main ---- */

/* galleyd's command line, as parse_args leaves it. */
typedef struct gsrv_args {
    const char *dir, *listen, *port_file, *key_path;
    uint64_t cache_mb;
    bool no_local;
} gsrv_args;

static const struct option opts[] = {
    {"data", required_argument, NULL, 'd'},
    {"listen", required_argument, NULL, 'l'},
    {"cache-mb", required_argument, NULL, 'c'},
    {"data-limit", required_argument, NULL, 'L'},
    {"port-file", required_argument, NULL, 'p'},
    {"no-local", no_argument, NULL, 'N'},
    {"spin-us", required_argument, NULL, 'S'},
    {"key", required_argument, NULL, 'K'},
    {"max-conns", required_argument, NULL, 'M'},
    {"frame-timeout", required_argument, NULL, 'T'},
    {"lock-lease", required_argument, NULL, 'E'},
    {"commit", required_argument, NULL, 'C'},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

/* Parse the command line into *a and gsrv_g.  -1: go on; else the exit
 * status (0 after --help or --version, 2 for a bad argument). */
static int parse_args(int argc, char **argv, gsrv_args *a)
{
    *a =
        (gsrv_args){.listen = "127.0.0.1:0", .cache_mb = GSRV_DEFAULT_CACHE_MB};
    int opt;
    while ((opt = getopt_long(argc, argv, "d:l:c:L:p:vhV", opts, NULL)) != -1) {
        switch (opt) {
        case 'd':
            a->dir = optarg;
            break;
        case 'l':
            a->listen = optarg;
            break;
        case 'c':
            if (!parse_size(optarg, &a->cache_mb) || a->cache_mb < 1 ||
                a->cache_mb > GSRV_MAX_CACHE_MB) {
                fprintf(stderr, "galleyd: --cache-mb: 1..%u\n",
                        GSRV_MAX_CACHE_MB);
                return 2;
            }
            break;
        case 'L':
            if (!parse_size(optarg, &gsrv_g.data_limit) ||
                gsrv_g.data_limit < GSRV_MIN_DATA_LIMIT ||
                gsrv_g.data_limit > GP_MAX_PAYLOAD - 64) {
                fprintf(stderr, "galleyd: --data-limit: %u..%u bytes\n",
                        GSRV_MIN_DATA_LIMIT, GP_MAX_PAYLOAD - 64);
                return 2;
            }
            break;
        case 'p':
            a->port_file = optarg;
            break;
        case 'N':
            a->no_local = true;
            break;
        case 'S': {
            uint64_t v;
            if (!parse_size(optarg, &v) || v > 100000) {
                fprintf(stderr, "galleyd: --spin-us: 0..100000\n");
                return 2;
            }
            gsrv_g.spin_us = (unsigned)v;
            break;
        }
        case 'K':
            a->key_path = optarg;
            break;
        case 'M': {
            uint64_t v;
            if (!parse_size(optarg, &v) || v < 1 || v > 1000000) {
                fprintf(stderr, "galleyd: --max-conns: 1..1000000\n");
                return 2;
            }
            gsrv_g.max_conns = (unsigned)v;
            break;
        }
        case 'T': {
            uint64_t v;
            if (!parse_size(optarg, &v) || v < 1 || v > 86400) {
                fprintf(stderr, "galleyd: --frame-timeout: 1..86400 "
                                "seconds\n");
                return 2;
            }
            gsrv_g.frame_timeout_ms = (int)v * 1000;
            break;
        }
        case 'C':
            if (!strcmp(optarg, "written") || !strcmp(optarg, "synced"))
                gsrv_g.commit_sync = optarg[0] == 's';
            else {
                fprintf(stderr, "galleyd: --commit: written or synced\n");
                return 2;
            }
            break;
        case 'E': {
            uint64_t v;
            if (!parse_size(optarg, &v) || v < 3 || v > 86400) {
                fprintf(stderr, "galleyd: --lock-lease: 3..86400 seconds\n");
                return 2;
            }
            gsrv_g.lock_lease_ms = (int)v * 1000;
            break;
        }
        case 'v':
            gsrv_g.verbose++;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("galleyd %s (protocol %d)\n", PACKAGE_VERSION, GP_VERSION);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (!a->dir || optind != argc) {
        usage(stderr);
        return 2;
    }
    return -1;
}

/* The accept loop: until a signal says stop (or poll fails). */
static void serve(int lfd, int ufd)
{
    struct pollfd pf[3] = {{.fd = lfd, .events = POLLIN},
                           {.fd = sigpipe_fds[0], .events = POLLIN},
                           {.fd = ufd, .events = POLLIN}};
    while (!gsrv_g.stopping) {
        if (poll(pf, ufd >= 0 ? 3 : 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            gsrv_log(0, "poll: %s", strerror(errno));
            break;
        }
        if (pf[1].revents) {
            gsrv_g.stopping = 1;
            break;
        }
        if (pf[0].revents)
            accept_one(lfd, false);
        if (ufd >= 0 && pf[2].revents)
            accept_one(ufd, true);
    }
}

int main(int argc, char **argv)
{
    gsrv_args args;
    int lockfd = -1, lfd = -1, ufd = -1, status = 1;
    int pa = parse_args(argc, argv, &args);
    if (pa >= 0)
        return pa;
    const char *dir = args.dir, *listen_arg = args.listen;
    const char *port_file = args.port_file, *key_path = args.key_path;
    uint64_t cache_mb = args.cache_mb;
    bool no_local = args.no_local;
    char host[256], port[32], addr[300];
    if (parse_listen(listen_arg, host, sizeof(host), port, sizeof(port))) {
        fprintf(stderr, "galleyd: --listen %s: expected HOST:PORT\n",
                listen_arg);
        return 2;
    }

    if (setup_signals())
        return 1;
    raise_nofile();
    umask(077); /* data files 0600, directories 0700 */
    if (open_data_dir(dir, &lockfd))
        goto out_close_dir;
    if (gsrv_auth_init(key_path))
        goto out_close_dir;
    int rc = start_units((size_t)cache_mb);
    if (rc) {
        fprintf(stderr, "galleyd: cannot start: %s\n", gsrv_strerror(rc));
        goto out_close_dir;
    }
    /* the log first: the scans see what it replays, then it logs */
    rc = gsrv_tab_load();
    if (!rc)
        rc = gsrv_wal_replay();
    if (!rc)
        rc = gsrv_ns_init();
    if (!rc)
        rc = gsrv_sub_init();
    if (!rc)
        rc = gsrv_repl_init();
    if (!rc)
        rc = gsrv_wal_start();
    if (rc) {
        fprintf(stderr, "galleyd: cannot load %s: %s\n", dir,
                gsrv_strerror(rc));
        goto out_free_tables;
    }
    lfd = open_listener(host, port, addr, sizeof(addr));
    if (lfd < 0)
        goto out_free_tables;
    if (port_file && (rc = write_port_file(port_file, addr))) {
        fprintf(stderr, "galleyd: %s: %s\n", port_file, strerror(-rc));
        goto out_close_listener;
    }
    if (!no_local)
        ufd = open_local_listener(addr);
    printf("listening %s\n", addr);
    fflush(stdout);
    gsrv_log(1,
             "serving %s on %s%s (cache %" PRIu64 " MB, data limit %" PRIu64
             " bytes)",
             dir, addr, ufd >= 0 ? " and same-host" : "", cache_mb,
             gsrv_g.data_limit);

    serve(lfd, ufd);
    gsrv_g.stopping = 1;
    gsrv_log(1, "stopping");
    status = 0;

out_close_listener:
    close(lfd);
    if (ufd >= 0)
        close(ufd);
    /* end every connection: handlers close their forks and exit */
    gsrv_g.stopping = 1;
    gsrv_locks_wake_all();
    gsrv_conn_shutdown_all();
    gsrv_conn_wait_idle();
out_free_tables:
    gsrv_wal_close();
    gsrv_sub_fini();
    gsrv_ns_fini();
    gsrv_tab_fini();
    gsrv_cache_stop();
    gsrv_disk_stop();
out_close_dir:
    if (lockfd >= 0)
        close(lockfd);
    if (gsrv_g.dfd >= 0)
        close(gsrv_g.dfd);
    close(sigpipe_fds[0]);
    close(sigpipe_fds[1]);
    return status;
}
