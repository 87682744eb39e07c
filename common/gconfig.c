/*
 * gconfig.c -- the table of GALLEY_* environment variables and the one
 * reader of them (gconfig.h says what the accessors answer).
 *
 * An entry keeps the parsing its reader always did: the range a value
 * must fall in and whether one outside it is clamped or replaced by the
 * default, whether an empty value counts, whether the value is read once
 * per process.  docs/configuration.md has a row for every name here
 * (docs/test_docs.py checks it); `galley config` prints the table.
 *
 * Threads: any (see gconfig.h).
 */
#include "gconfig.h"

#include "galley.h"
#include "galley_group.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const g_cfg_choice transports[] = {
    {"auto", GFS_TRANSPORT_AUTO},
    {"direct", GFS_TRANSPORT_DIRECT},
    {"local", GFS_TRANSPORT_LOCAL},
    {"tcp", GFS_TRANSPORT_TCP},
    {NULL, 0},
};

static const g_cfg_choice group_policies[] = {
    {"nosend", GFS_GROUP_NOSEND},
    {"send", GFS_GROUP_SEND},
    {NULL, 0},
};

enum {
    CL = G_CFG_R_CLIENT,
    SV = G_CFG_R_SERVER,
    PL = G_CFG_R_PRELOAD,
    TL = G_CFG_R_TOOLS,
    AR = G_CFG_R_ARRAYS,
};

/* A row of the table, by type.  INT: default, accepted range [lo, hi];
 * DBL: default (scaled), open range (lo, hi) of the value as set, scale;
 * dtext: the default as printed when the number alone would mislead. */
#define INT(id, name, rd, fl, def, lo, hi, unit, dtext, what)                  \
    [id] = {name, G_CFG_INT, rd, fl, def, lo, hi, 0, unit, NULL, dtext, what}
#define DBL(id, name, rd, fl, def, lo, hi, sc, unit, what)                     \
    [id] = {name, G_CFG_DOUBLE, rd, fl, def, lo, hi, sc, unit, NULL, NULL, what}
#define BOOL(id, name, rd, fl, def, what)                                      \
    [id] = {name, G_CFG_BOOL, rd, fl, def, 0, 0, 0, "", NULL, NULL, what}
#define STR(id, name, rd, fl, dtext, what)                                     \
    [id] = {name, G_CFG_STR, rd, fl, 0, 0, 0, 0, "", NULL, dtext, what}
#define ENUM(id, name, rd, fl, def, choices, what)                             \
    [id] = {name, G_CFG_ENUM, rd, fl, def, 0, 0, 0, "", choices, NULL, what}

static const g_cfg_var table[G_CFG_COUNT] = {
    STR(G_CFG_CLUSTER, "GALLEY_CLUSTER", CL | PL | TL, 0,
        "~/.galley/cluster, then /etc/galley/cluster",
        "the cluster file when gfs_init is given none"),
    STR(G_CFG_KEY, "GALLEY_KEY", CL, 0, "CLUSTERFILE.key, then ~/.galley/key",
        "the key file of the cluster secret (read at gfs_init)"),
    DBL(G_CFG_TIMEOUT, "GALLEY_TIMEOUT", CL, 0, 30000, 0, 86400, 1000, "s",
        "seconds a request may show no progress before it fails, "
        "0 < s < 86400 (read at gfs_init; galley -t overrides it)"),
    ENUM(G_CFG_TRANSPORT, "GALLEY_TRANSPORT", CL, G_CFG_STRICT,
         GFS_TRANSPORT_AUTO, transports,
         "auto, direct, local or tcp; another value makes gfs_init fail "
         "with EINVAL (read at gfs_init)"),
    INT(G_CFG_SPIN_US, "GALLEY_SPIN_US", CL, G_CFG_CLAMP, 50, 0, 100000, "us",
        NULL,
        "how long a same-host client polls for its reply before sleeping, "
        "clamped to 0..100000, 0: never (read at gfs_init)"),
    INT(G_CFG_LOCK_RENEW_MS, "GALLEY_LOCK_RENEW_MS", CL, 0, 1000, 10, 600000,
        "ms", NULL,
        "how often a process renews the byte-range locks it holds, "
        "10..600000"),
    INT(G_CFG_MD_LEASE_MS, "GALLEY_MD_LEASE_MS", SV, G_CFG_EMPTY, 3000, 0,
        600000, "ms", NULL,
        "the record lease a create or lookup gives, 0..600000, 0: no "
        "leases (read at start)"),
    INT(G_CFG_MD_RENEW_MS, "GALLEY_MD_RENEW_MS", CL, 0, 200, 10, 60000, "ms",
        NULL,
        "how often a process renews its record leases (a recall "
        "answers the renewal waiting at the server at once), 10..60000"),
    INT(G_CFG_MD_IDLE_MS, "GALLEY_MD_IDLE_MS", CL, G_CFG_EMPTY, 30000, 0,
        86400000, "ms", NULL,
        "leases unused this long, of files not open, are let go; 0: never"),
    INT(G_CFG_MD_SIZE_MS, "GALLEY_MD_SIZE_MS", CL, G_CFG_ONCE | G_CFG_EMPTY,
        60000, 0, 86400000, "ms", NULL,
        "how old a leased record's size that stat answers may be; 0: stat "
        "always asks the servers (read once)"),
    BOOL(G_CFG_MD_LAZY, "GALLEY_MD_LAZY", CL, G_CFG_ONCE, 1,
         "0: an open opens every fork at once instead of at first I/O (read "
         "once)"),
    INT(G_CFG_MD_STATAHEAD, "GALLEY_MD_STATAHEAD", CL, G_CFG_ONCE | G_CFG_EMPTY,
        4096, 0, 16384, "files", NULL,
        "the most files of a directory one stat-ahead fetches, 0..16384; 0: "
        "no stat-ahead (read once)"),
    ENUM(G_CFG_GROUP_POLICY, "GALLEY_GROUP_POLICY", CL, G_CFG_ONCE,
         GFS_GROUP_NOSEND, group_policies,
         "GFS-GROUP flushing: send (submit whenever the library is idle) or "
         "nosend (wait until forced) (read once)"),
    INT(G_CFG_NB_THREADS, "GALLEY_NB_THREADS", CL, 0, 4, 1, 64, "", NULL,
        "worker threads that run non-blocking requests, 1..64 (read when "
        "they start)"),
    INT(G_CFG_LOCAL_RANK, "GALLEY_LOCAL_RANK", CL, G_CFG_WHOLE, -1, 0,
        (1 << 30) - 1, "",
        "MPI_LOCALRANKID, OMPI_COMM_WORLD_LOCAL_RANK, "
        "SLURM_LOCALID, else 0",
        "node-local rank that picks a process's own server for the "
        "locality layout"),
    INT(G_CFG_DIRECT_WRITE_MIN, "GALLEY_DIRECT_WRITE_MIN", CL,
        G_CFG_ONCE | G_CFG_CLAMP, 512, 1, LLONG_MAX, "bytes", NULL,
        "direct path: writes whose pieces average fewer bytes are sieved or "
        "sent to the server (read once)"),
    BOOL(G_CFG_DIRECT_SIEVE, "GALLEY_DIRECT_SIEVE", CL, G_CFG_ONCE, 1,
         "0: the direct path never sieves small write pieces (read once)"),
    BOOL(G_CFG_FAST_READ, "GALLEY_FAST_READ", CL, G_CFG_ONCE, 1,
         "0: a striped file's single-range reads take the general path "
         "(read once)"),
    BOOL(G_CFG_CRC_NO_VPCLMUL, "GALLEY_CRC_NO_VPCLMUL", CL | SV | TL,
         G_CFG_ONCE | G_CFG_EMPTY, 0,
         "set: CRC32C without AVX-512 VPCLMULQDQ folding (read once)"),
    INT(G_CFG_POSIX_SUBFILES, "GALLEY_POSIX_SUBFILES", PL, 0, 0, INT_MIN,
        INT_MAX, "", "0 (every server)",
        "subfiles of a file created through the preload"),
    INT(G_CFG_POSIX_UNIT, "GALLEY_POSIX_UNIT", PL, 0, 0, INT_MIN, INT_MAX,
        "bytes", "0 (64 KiB)",
        "stripe unit of a file created through the preload"),
    STR(G_CFG_POSIX_MOUNTS, "GALLEY_POSIX_MOUNTS", PL | TL, 0, NULL,
        "the DIR=GDIR maps of galley exec -m (set by galley exec)"),
    BOOL(G_CFG_POSIX_NO_MOUNTS, "GALLEY_POSIX_NO_MOUNTS", PL, G_CFG_EMPTY, 0,
         "set: paths under a galley mount of the same cluster go through "
         "FUSE"),
    STR(G_CFG_POSIX_LIB, "GALLEY_POSIX_LIB", TL, 0,
        "the installation's libgalley-posix.so",
        "the preload library galley exec uses"),
    STR(G_CFG_FUSE, "GALLEY_FUSE", TL, 0, "the installation's galley-fuse",
        "the FUSE daemon galley mount runs"),
    INT(G_CFG_STAGE_RANK, "GALLEY_STAGE_RANK", TL, G_CFG_EMPTY, 0, INT_MIN,
        INT_MAX, "", "from SLURM_LOCALID, SLURM_PROCID, PMI_RANK",
        "a galley-stage-worker's number (set by galley-stage --launcher "
        "local)"),
    STR(G_CFG_ARRAY_CRASH, "GALLEY_ARRAY_CRASH", AR, G_CFG_TEST, NULL,
        "data:N, copynum:N or pause:N: rank 0 exits (or pauses) inside "
        "checkpoint N (test build)"),
    STR(G_CFG_ARRAY_PAUSE, "GALLEY_ARRAY_PAUSE", AR, G_CFG_TEST, NULL,
        "with pause:N, the file rank 0 makes and waits to see removed (test "
        "build)"),
    INT(G_CFG_TEST_FLIP_WIRE, "GALLEY_TEST_FLIP_WIRE", CL | SV,
        G_CFG_TEST | G_CFG_ONCE | G_CFG_CLAMP, 0, 0, LLONG_MAX, "", NULL,
        "test build only: flip a bit in the data of the first N "
        "checksummed messages sent (read once)"),
    INT(G_CFG_TEST_CRASH_AFTER_CRC, "GALLEY_TEST_CRASH_AFTER_CRC", SV,
        G_CFG_TEST | G_CFG_ONCE, 0, LLONG_MIN, LLONG_MAX, "", NULL,
        "test build only: 1: galleyd-test exits between a write's "
        "checksums and its data (read once)"),
    INT(G_CFG_TEST_CLIENT_CRASH_AFTER_CRC, "GALLEY_TEST_CLIENT_CRASH_AFTER_CRC",
        CL, G_CFG_TEST | G_CFG_ONCE, 0, LLONG_MIN, LLONG_MAX, "", NULL,
        "test build only: 1 (2: halfway through the data): a same-host "
        "direct client exits between a write's checksums and its data (read "
        "once)"),
    INT(G_CFG_TEST_FORGET_OPENS, "GALLEY_TEST_FORGET_OPENS", SV,
        G_CFG_TEST | G_CFG_ONCE, 0, LLONG_MIN, LLONG_MAX, "", NULL,
        "test build only: 1: galleyd-test remembers no FORK_OPEN for the "
        "IO requests that name one (gmsg.h GP_FKID_OPENED; read once)"),
};

const g_cfg_var *g_config_var(enum g_cfg_id id)
{
    return (unsigned)id < G_CFG_COUNT ? &table[id] : NULL;
}

/* The raw value: NULL when the variable is not set (an empty value counts
 * only for G_CFG_EMPTY ones). */
static const char *raw(const g_cfg_var *v)
{
    const char *s = getenv(v->name);
    if (s && !*s && !(v->flags & G_CFG_EMPTY))
        return NULL;
    return s;
}

bool g_config_set(enum g_cfg_id id)
{
    const g_cfg_var *v = g_config_var(id);
    return v && raw(v) != NULL;
}

static long long parse_int(const g_cfg_var *v, const char *s)
{
    char *end;
    long long x = strtoll(s, &end, 10);
    if ((v->flags & G_CFG_WHOLE) && (end == s || *end))
        return v->def;
    if (x >= v->min && x <= v->max)
        return x;
    if (!(v->flags & G_CFG_CLAMP))
        return v->def;
    return x < v->min ? v->min : v->max;
}

static long long parse_enum(const g_cfg_var *v, const char *s)
{
    for (const g_cfg_choice *c = v->choices; c->name; c++)
        if (strcmp(s, c->name) == 0)
            return c->value;
    return v->flags & G_CFG_STRICT ? -EINVAL : v->def;
}

/* What s (NULL: not set) is taken as. */
static long long parse(const g_cfg_var *v, const char *s)
{
    if (!s)
        return v->def;
    switch (v->type) {
    case G_CFG_BOOL:
        return v->def ? s[0] != '0' : 1;
    case G_CFG_INT:
        return parse_int(v, s);
    case G_CFG_DOUBLE: {
        double d = strtod(s, NULL);
        if (d > (double)v->min && d < (double)v->max)
            return (long long)(d * v->scale);
        return v->def;
    }
    case G_CFG_ENUM:
        return parse_enum(v, s);
    case G_CFG_STR:
        break;
    }
    return v->def;
}

/* G_CFG_ONCE values: state 0 not read yet, 1 read (value in once_val). */
static long long once_val[G_CFG_COUNT];
static int once_state[G_CFG_COUNT];

long long g_config_int(enum g_cfg_id id)
{
    const g_cfg_var *v = g_config_var(id);
    if (!v)
        return 0;
    if (!(v->flags & G_CFG_ONCE))
        return parse(v, raw(v));
    if (__atomic_load_n(&once_state[id], __ATOMIC_ACQUIRE))
        return __atomic_load_n(&once_val[id], __ATOMIC_RELAXED);
    long long x = parse(v, raw(v));
    __atomic_store_n(&once_val[id], x, __ATOMIC_RELAXED);
    __atomic_store_n(&once_state[id], 1, __ATOMIC_RELEASE);
    return x;
}

bool g_config_bool(enum g_cfg_id id)
{
    return g_config_int(id) != 0;
}

const char *g_config_str(enum g_cfg_id id)
{
    const g_cfg_var *v = g_config_var(id);
    return v ? raw(v) : NULL;
}

/* ------------------------------------------------------------ printing -- */

/* x as the variable's value reads (without its unit). */
static void render(const g_cfg_var *v, long long x, char *buf, size_t len)
{
    switch (v->type) {
    case G_CFG_BOOL:
        snprintf(buf, len, "%s", x ? "on" : "off");
        return;
    case G_CFG_DOUBLE:
        snprintf(buf, len, "%g", (double)x / v->scale);
        return;
    case G_CFG_ENUM:
        for (const g_cfg_choice *c = v->choices; c->name; c++)
            if (c->value == x) {
                snprintf(buf, len, "%s", c->name);
                return;
            }
        snprintf(buf, len, "invalid");
        return;
    case G_CFG_INT:
        snprintf(buf, len, "%lld", x);
        return;
    case G_CFG_STR:
        break;
    }
    snprintf(buf, len, "(none)");
}

/* The entry whose text goes into buf (emptied first); NULL: none. */
static const g_cfg_var *text_of(enum g_cfg_id id, char *buf, size_t len)
{
    if (!len)
        return NULL;
    buf[0] = '\0';
    return g_config_var(id);
}

void g_config_default_text(enum g_cfg_id id, char *buf, size_t len)
{
    const g_cfg_var *v = text_of(id, buf, len);
    if (!v)
        return;
    if (v->def_text) {
        snprintf(buf, len, "%s", v->def_text);
        return;
    }
    char x[64];
    render(v, v->def, x, sizeof(x));
    snprintf(buf, len, "%s%s%s", x, v->unit[0] ? " " : "", v->unit);
}

void g_config_value_text(enum g_cfg_id id, char *buf, size_t len)
{
    const g_cfg_var *v = text_of(id, buf, len);
    if (!v)
        return;
    const char *s = raw(v);
    if (!s) {
        snprintf(buf, len, "(default)");
        return;
    }
    if (v->type == G_CFG_STR) {
        snprintf(buf, len, "%s", s);
        return;
    }
    char x[64];
    long long n = parse(v, s);
    if (n == v->def && v->def_text) /* e.g. "none": say so in words */
        snprintf(x, sizeof(x), "the default");
    else
        render(v, n, x, sizeof(x));
    if (strcmp(x, s) == 0)
        snprintf(buf, len, "%s", s);
    else
        snprintf(buf, len, "%s (= %s)", s[0] ? s : "\"\"", x);
}

void g_config_readers_text(enum g_cfg_id id, char *buf, size_t len)
{
    static const char *const names[] = {"client", "server", "preload", "tools",
                                        "arrays"};
    const g_cfg_var *v = g_config_var(id);
    size_t n = 0;
    if (!len)
        return;
    buf[0] = '\0';
    for (size_t i = 0; v && i < sizeof(names) / sizeof(*names); i++)
        if (v->readers & (1u << i) && n < len)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "",
                                  names[i]);
}
