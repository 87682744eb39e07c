/*
 * gconfig.h -- the GALLEY_* environment variables: the one place Galley's
 * programs read them.  gconfig.c holds a table of every variable the
 * client library, galleyd, the POSIX preload, galley-fuse, the tools and
 * the array library's test build read -- its type, default, unit, who
 * reads it and what it means -- and the typed accessors below parse,
 * check and clamp each value as its table entry says.  `galley config`
 * prints the table; docs/configuration.md has a row for each variable.
 *
 * When a value is read is the entry's: a G_CFG_ONCE variable is read at
 * its first use and keeps that value for the life of the process (its
 * users want one answer: a fault switch, a measuring switch); every other
 * one is read from the environment at each call, so a value read at
 * gfs_init is read again at the next gfs_init.
 *
 * Threads: any.  The accessors read the environment (getenv) and a
 * per-variable cache kept with atomics; no lock, no allocation, no call
 * the POSIX preload intercepts.  Changing the environment while another
 * thread reads it is the caller's race, as with getenv.
 */
#ifndef GALLEY_GCONFIG_H
#define GALLEY_GCONFIG_H

#include <stdbool.h>
#include <stddef.h>

enum g_cfg_id {
    G_CFG_CLUSTER,
    G_CFG_KEY,
    G_CFG_TIMEOUT,
    G_CFG_TRANSPORT,
    G_CFG_SPIN_US,
    G_CFG_LOCK_RENEW_MS,
    G_CFG_MD_LEASE_MS,
    G_CFG_MD_RENEW_MS,
    G_CFG_MD_IDLE_MS,
    G_CFG_MD_SIZE_MS,
    G_CFG_MD_LAZY,
    G_CFG_MD_STATAHEAD,
    G_CFG_GROUP_POLICY,
    G_CFG_NB_THREADS,
    G_CFG_LOCAL_RANK,
    G_CFG_DIRECT_WRITE_MIN,
    G_CFG_DIRECT_SIEVE,
    G_CFG_FAST_READ,
    G_CFG_CRC_NO_VPCLMUL,
    G_CFG_POSIX_SUBFILES,
    G_CFG_POSIX_UNIT,
    G_CFG_POSIX_MOUNTS,
    G_CFG_POSIX_NO_MOUNTS,
    G_CFG_POSIX_LIB,
    G_CFG_FUSE,
    G_CFG_STAGE_RANK,
    G_CFG_ARRAY_CRASH,
    G_CFG_ARRAY_PAUSE,
    G_CFG_TEST_FLIP_WIRE,
    G_CFG_TEST_CRASH_AFTER_CRC,
    G_CFG_TEST_CLIENT_CRASH_AFTER_CRC,
    G_CFG_TEST_FORGET_OPENS,
    G_CFG_COUNT
};

/* How a value is parsed.  bool: a variable whose default is on is off
 * when its value begins with '0'; one whose default is off is on when it
 * is set at all (any value).  int: a decimal number (strtoll).  double:
 * a number (strtod) accepted when min < value < max, then multiplied by
 * scale (g_config_int answers the product).  string: the value as set.
 * enum: one of the entry's choice names. */
enum g_cfg_type { G_CFG_BOOL, G_CFG_INT, G_CFG_DOUBLE, G_CFG_STR, G_CFG_ENUM };

/* Who reads a variable (g_cfg_var.readers, bits). */
enum {
    G_CFG_R_CLIENT = 1,  /* libgalley */
    G_CFG_R_SERVER = 2,  /* galleyd */
    G_CFG_R_PRELOAD = 4, /* libgalley-posix.so (galley exec) */
    G_CFG_R_TOOLS = 8,   /* galley, galley-fuse, galley-stage-worker */
    G_CFG_R_ARRAYS = 16, /* the array library's test build */
};

/* How a variable is read (g_cfg_var.flags, bits). */
enum {
    G_CFG_ONCE = 1,    /* read at first use, then fixed for the process */
    G_CFG_EMPTY = 2,   /* an empty value is a value (the number 0), not
                        * unset */
    G_CFG_CLAMP = 4,   /* int out of [min, max]: the nearer bound (else
                        * the default) */
    G_CFG_WHOLE = 8,   /* int: anything after the number makes the value
                        * the default */
    G_CFG_STRICT = 16, /* enum: an unknown name answers -EINVAL (else the
                        * default) */
    G_CFG_TEST = 32,   /* for tests only: damages data on purpose (only the
                        * test builds act on it: gfault.h) */
};

typedef struct g_cfg_choice {
    const char *name;
    int value;
} g_cfg_choice;

typedef struct g_cfg_var {
    const char *name; /* GALLEY_... */
    enum g_cfg_type type;
    unsigned readers;   /* G_CFG_R_* */
    unsigned flags;     /* G_CFG_ONCE ... */
    long long def;      /* bool, int, double (scaled), enum: the default */
    long long min, max; /* int: accepted range; double: open interval */
    int scale;          /* double: what the value is multiplied by */
    const char *unit;   /* of the value as set ("" none) */
    const g_cfg_choice *choices; /* enum: ended by {NULL, 0} */
    const char *def_text;        /* the default as printed (NULL: from def) */
    const char *meaning;         /* one line */
} g_cfg_var;

/* The table entry of id (NULL when id is out of range). */
const g_cfg_var *g_config_var(enum g_cfg_id id);

/* Is the variable set (a G_CFG_EMPTY one: set at all; any other: set and
 * not empty)? */
bool g_config_set(enum g_cfg_id id);

/* The value of a bool, int, double or enum variable: parsed, checked and
 * clamped as its entry says, else its default.  A G_CFG_STRICT enum with
 * an unknown name answers -EINVAL. */
long long g_config_int(enum g_cfg_id id);
bool g_config_bool(enum g_cfg_id id);

/* A string variable's value: NULL when it is not set (g_config_set). */
const char *g_config_str(enum g_cfg_id id);

/* For printing (`galley config`): the default as text, and the value
 * from the environment ("(default)" when not set; for a number, bool or
 * enum, what it is taken as when that reads otherwise, e.g.
 * "999999 (= 100000)").  Both always NUL-terminated. */
void g_config_default_text(enum g_cfg_id id, char *buf, size_t len);
void g_config_value_text(enum g_cfg_id id, char *buf, size_t len);

/* "client,server" ...: the readers' names. */
void g_config_readers_text(enum g_cfg_id id, char *buf, size_t len);

#endif
