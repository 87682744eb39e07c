/*
 * fnv.h -- FNV-1a over a NUL-terminated name, once for everyone: the
 * name -> metadata server map every client must agree on (libgalley), the
 * NameServer's table of names (galleyd), and the inode numbers the POSIX
 * library invents.  Changing it moves every file's record: never do.
 *
 * Threads: pure function.
 */
#ifndef GALLEY_FNV_H
#define GALLEY_FNV_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t g_fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h ^= *p;
        h *= 1099511628211ull;
    }
    return h;
}

/* The same hash over len bytes (galleyd's metadata log checks its records
 * with it). */
static inline uint64_t g_fnv1a_bytes(const void *p, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *c = p, *e = c + len; c < e; c++) {
        h ^= *c;
        h *= 1099511628211ull;
    }
    return h;
}

#endif /* GALLEY_FNV_H */
