/*
 * csfile.c -- a checksummed fork's file and sidecar outside the server's
 * cache: see csfile.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* F_OFD_SETLKW */
#endif
#include "csfile.h"

#include "crc32c.h"
#include "galley.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BS ((uint64_t)G_CS_CHUNK)

uint32_t g_cs_zero_crc(void)
{
    static uint32_t z;
    static int done;
    if (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
        static const uint8_t zeros[G_CS_CHUNK];
        z = g_crc32c(0, zeros, sizeof(zeros));
        __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    }
    return z;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int k = 0; k < 4; k++)
        p[k] = (uint8_t)(v >> (8 * k));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

uint32_t g_cs_cur(const uint8_t *e)
{
    return get32(e) ^ g_cs_zero_crc();
}

bool g_cs_ok(const uint8_t *e, uint32_t crc)
{
    uint32_t z = g_cs_zero_crc();
    return crc == (get32(e) ^ z) || crc == (get32(e + 4) ^ z);
}

void g_cs_put(uint8_t *e, uint32_t cur, uint32_t prev)
{
    put32(e, cur ^ g_cs_zero_crc());
    put32(e + 4, prev ^ g_cs_zero_crc());
}

/* len bytes at off of fd into buf, zeros past the end of the file. */
static int read_full(int fd, uint64_t off, uint8_t *buf, size_t len)
{
    size_t have = 0;
    while (have < len) {
        ssize_t got = pread(fd, buf + have, len - have, (off_t)(off + have));
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -errno;
        if (got == 0)
            break;
        have += (size_t)got;
    }
    memset(buf + have, 0, len - have);
    return 0;
}

int g_cs_read_entries(int cfd, uint64_t bno, size_t n, uint8_t *e)
{
    return read_full(cfd, bno * G_CS_ENT, e, n * G_CS_ENT);
}

int g_cs_read_chunk(int fd, uint64_t bno, uint8_t *buf)
{
    return read_full(fd, bno * BS, buf, BS);
}

static int write_full(int fd, uint64_t off, const uint8_t *buf, size_t len)
{
    while (len) {
        ssize_t w = pwrite(fd, buf, len, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        if (w == 0)
            return -EIO;
        buf += w;
        off += (uint64_t)w;
        len -= (size_t)w;
    }
    return 0;
}

static int ofd_lock(int cfd, uint64_t bno, uint64_t n, short type)
{
    struct flock l = {.l_type = type,
                      .l_whence = SEEK_SET,
                      .l_start = (off_t)(bno * G_CS_ENT),
                      .l_len = (off_t)(n * G_CS_ENT)};
    while (fcntl(cfd, F_OFD_SETLKW, &l) < 0)
        if (errno != EINTR)
            return -errno;
    return 0;
}

int g_cs_lock(int cfd, uint64_t bno, uint64_t n, bool write)
{
    return ofd_lock(cfd, bno, n, write ? F_WRLCK : F_RDLCK);
}

void g_cs_unlock(int cfd, uint64_t bno, uint64_t n)
{
    ofd_lock(cfd, bno, n, F_UNLCK);
}

/* ------------------------------------------------------------- write -- */

/* The first piece that ends after off (pieces sorted and disjoint). */
static size_t first_after(const gp_ext *e, size_t n, size_t i, uint64_t off)
{
    while (i < n && gp_end(&e[i]) <= off)
        i++;
    return i;
}

/* CRC of chunk b if the pieces from i on cover it wholly (chained over
 * them, no copy); false if they do not. */
static bool crc_covered(const gp_ext *e, size_t n, size_t i, uint64_t b,
                        uint32_t *crc)
{
    uint64_t pos = b * BS, end = pos + BS;
    uint32_t c = 0;
    for (; i < n && pos < end; i++) {
        if (e[i].off > pos)
            return false; /* a gap */
        uint64_t a = pos, z = gp_end(&e[i]) < end ? gp_end(&e[i]) : end;
        if (z <= a)
            continue;
        c = g_crc32c(c, e[i].mem + (a - e[i].off), z - a);
        pos = z;
    }
    if (pos < end)
        return false;
    *crc = c;
    return true;
}

/* Lay the pieces' bytes in chunk b over buf (the chunk's old bytes). */
static void overlay(const gp_ext *e, size_t n, size_t i, uint64_t b,
                    uint8_t *buf)
{
    uint64_t lo = b * BS, hi = lo + BS;
    for (; i < n && e[i].off < hi; i++) {
        uint64_t a = e[i].off > lo ? e[i].off : lo;
        uint64_t z = gp_end(&e[i]) < hi ? gp_end(&e[i]) : hi;
        if (a < z)
            memcpy(buf + (a - lo), e[i].mem + (a - e[i].off), z - a);
    }
}

/* The data of the pieces within [lo, hi), from piece i on. */
static int write_span(int fd, const gp_ext *e, size_t n, size_t i, uint64_t lo,
                      uint64_t hi)
{
    for (; i < n && e[i].off < hi; i++) {
        uint64_t a = e[i].off > lo ? e[i].off : lo;
        uint64_t z = gp_end(&e[i]) < hi ? gp_end(&e[i]) : hi;
        if (a >= z)
            continue;
        int rc = write_full(fd, a, (const uint8_t *)e[i].mem + (a - e[i].off),
                            z - a);
        if (rc)
            return rc;
    }
    return 0;
}

/* One run [b0, b1) of chunks, its entries locked exclusively by the
 * caller; i: the first piece ending after b0's start. */
static int write_run(int fd, int cfd, const gp_ext *e, size_t n, size_t i,
                     uint64_t b0, uint64_t b1, uint8_t **buf, uint64_t *bad,
                     void (*between)(int))
{
    uint8_t ent[G_CS_RUN * G_CS_ENT];
    int rc = g_cs_read_entries(cfd, b0, b1 - b0, ent);
    if (rc)
        return rc;
    bool changed = false, mine[G_CS_RUN] = {false};
    size_t j = i;
    for (uint64_t b = b0; b < b1; b++) {
        j = first_after(e, n, j, b * BS);
        if (j >= n || e[j].off >= (b + 1) * BS)
            continue; /* no piece here: its entry stays */
        uint8_t *p = ent + (b - b0) * G_CS_ENT;
        uint32_t c;
        if (!crc_covered(e, n, j, b, &c)) {
            /* in part: the chunk's old bytes, checked, under the new */
            if (!*buf && !(*buf = malloc(BS)))
                return -ENOMEM;
            rc = g_cs_read_chunk(fd, b, *buf);
            if (rc)
                return rc;
            if (!g_cs_ok(p, g_crc32c(0, *buf, BS))) {
                *bad = b;
                return GFS_ECHECKSUM;
            }
            overlay(e, n, j, b, *buf);
            c = g_crc32c(0, *buf, BS);
        }
        uint32_t cur = g_cs_cur(p);
        if (c != cur) {
            g_cs_put(p, c, cur); /* the disk holds cur until the data */
            changed = mine[b - b0] = true;
        }
    }
    if (changed)
        rc = write_full(cfd, b0 * G_CS_ENT, ent, (b1 - b0) * G_CS_ENT);
    if (rc)
        return rc;
    if (between) { /* the test-only crash points: before, and halfway */
        uint64_t mid = (b0 + b1) * BS / 2;
        between(0);
        rc = write_span(fd, e, n, i, b0 * BS, mid);
        if (!rc)
            between(1);
        if (!rc)
            rc = write_span(fd, e, n, first_after(e, n, i, mid), mid, b1 * BS);
    } else {
        rc = write_span(fd, e, n, i, b0 * BS, b1 * BS);
    }
    if (rc || !changed)
        return rc;
    /* settled: {new, new}, so an entry with two CRCs marks a write in
     * flight (what the server looks at when a writer dies: csum.c) */
    for (uint64_t b = b0; b < b1; b++) {
        uint8_t *p = ent + (b - b0) * G_CS_ENT;
        if (mine[b - b0])
            g_cs_put(p, g_cs_cur(p), g_cs_cur(p));
    }
    return write_full(cfd, b0 * G_CS_ENT, ent, (b1 - b0) * G_CS_ENT);
}

int g_cs_write(int fd, int cfd, const gp_ext *e, size_t n, uint64_t *bad,
               void (*between)(int))
{
    uint8_t *buf = NULL;
    int rc = 0;
    size_t i = 0;
    while (!rc) {
        while (i < n && e[i].len == 0)
            i++;
        if (i >= n)
            break;
        /* the next run: from the chunk of the next byte to write, at most
         * G_CS_RUN chunks, ending after the last piece it needs */
        uint64_t b0 = e[i].off / BS, b1 = b0 + G_CS_RUN, last = 0;
        for (size_t k = i; k < n && e[k].off < b1 * BS; k++)
            if (e[k].len && gp_end(&e[k]) > last)
                last = gp_end(&e[k]);
        if ((last + BS - 1) / BS < b1)
            b1 = (last + BS - 1) / BS;
        rc = g_cs_lock(cfd, b0, b1 - b0, true);
        if (rc)
            break;
        rc = write_run(fd, cfd, e, n, i, b0, b1, &buf, bad, between);
        g_cs_unlock(cfd, b0, b1 - b0);
        i = first_after(e, n, i, b1 * BS);
    }
    free(buf);
    return rc;
}

/* -------------------------------------------------------------- read -- */

/* Copy the bytes of [lo, hi) the pieces from i on want out of buf (which
 * holds the file's bytes from lo). */
static void copy_out(const gp_ext *e, size_t n, size_t i, uint64_t lo,
                     uint64_t hi, const uint8_t *buf)
{
    for (; i < n && e[i].off < hi; i++) {
        uint64_t a = e[i].off > lo ? e[i].off : lo;
        uint64_t z = gp_end(&e[i]) < hi ? gp_end(&e[i]) : hi;
        if (a < z && e[i].mem + (a - e[i].off) != (char *)buf + (a - lo))
            memcpy(e[i].mem + (a - e[i].off), buf + (a - lo), z - a);
    }
}

/* Verify chunks [b0, b1) held in mem (from chunk b0's start). */
static int verify_run(int cfd, uint64_t b0, uint64_t b1, const uint8_t *mem,
                      uint64_t *bad)
{
    uint8_t ent[G_CS_RUN * G_CS_ENT];
    int rc = g_cs_read_entries(cfd, b0, b1 - b0, ent);
    if (rc)
        return rc;
    for (uint64_t b = b0; b < b1; b++)
        if (!g_cs_ok(ent + (b - b0) * G_CS_ENT,
                     g_crc32c(0, mem + (b - b0) * BS, BS))) {
            *bad = b;
            return GFS_ECHECKSUM;
        }
    return 0;
}

int g_cs_read(int fd, int cfd, const gp_ext *e, size_t n, uint64_t *bad)
{
    uint8_t *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    size_t i = 0;
    uint64_t done = 0; /* bytes below this are read */
    while (!rc) {
        while (i < n && gp_end(&e[i]) <= done)
            i++;
        if (i >= n)
            break;
        uint64_t from = e[i].off > done ? e[i].off : done;
        uint64_t b0 = from / BS, b1 = b0 + G_CS_RUN, last = 0;
        for (size_t k = i; k < n && e[k].off < b1 * BS; k++)
            if (gp_end(&e[k]) > last)
                last = gp_end(&e[k]);
        if ((last + BS - 1) / BS < b1)
            b1 = (last + BS - 1) / BS;
        uint64_t lo = b0 * BS, hi = b1 * BS;
        /* one piece covering the run: straight into it */
        uint8_t *mem = NULL;
        for (size_t k = i; k < n && e[k].off <= lo && !mem; k++)
            if (gp_end(&e[k]) >= hi)
                mem = (uint8_t *)e[k].mem + (lo - e[k].off);
        if (!mem && cap < hi - lo) {
            free(buf);
            cap = hi - lo;
            if (!(buf = malloc(cap))) {
                rc = -ENOMEM;
                break;
            }
        }
        rc = g_cs_lock(cfd, b0, b1 - b0, false);
        if (rc)
            break;
        rc = read_full(fd, lo, mem ? mem : buf, hi - lo);
        if (!rc)
            rc = verify_run(cfd, b0, b1, mem ? mem : buf, bad);
        g_cs_unlock(cfd, b0, b1 - b0);
        if (!rc)
            copy_out(e, n, i, lo, hi, mem ? mem : buf);
        done = hi;
    }
    free(buf);
    if (rc == GFS_ECHECKSUM) /* no byte of a failed read is data */
        for (size_t k = 0; k < n; k++)
            memset(e[k].mem, 0, e[k].len);
    return rc;
}
