/*
 * csum.c -- the stored checksums of checksummed forks (gmsg.h: IO_CREAD,
 * IO_CWRITE, SCRUB; the file's opt-in is the attribute galley.checksum
 * on its record, which only clients read).
 *
 * Rules:
 *
 * 1. A fork is checksummed when its sidecar file exists: sub/HID/IDX.crc
 *    beside sub/HID/IDX.dat.  The first IO_CWRITE of a fork creates it
 *    (from the bytes the fork already has, under the fork's write lock,
 *    written as .tmp and renamed, so a crash leaves none or a whole one).
 *    From then on every write of the fork keeps it, whichever message
 *    carried the data, and every block read from disk is checked.
 * 2. Chunks are the cache's blocks: GSRV_BLOCK_SIZE (32 KiB, as DAOS)
 *    bytes at fork offsets that are multiples of it, so a chunk is always
 *    whole in the cache when a write changes part of it (the cache reads
 *    the rest, checked, before the write) and its new CRC costs no extra
 *    read.  Smaller chunks would cost 8 bytes per 4 KiB of sidecar and a
 *    CRC per piece of every write; larger ones a read of more bytes on
 *    every partial write.  A chunk's CRC covers all its 32 KiB with zeros
 *    past the fork's end (what the cache holds).
 * 3. The sidecar holds 8 bytes per chunk at 8 x chunk number: u32 cur,
 *    u32 prev (little-endian), each stored XOR the CRC of a zero chunk,
 *    so a hole in the sidecar reads as "a zero chunk": holes in the data,
 *    a truncate that grows the fork and chunks never written need no
 *    entry.  A chunk is good when its CRC is cur or prev.
 * 4. Crash safety without a journal: a write computes the new CRCs of its
 *    window's chunks from the cache blocks (the new data copied in), then
 *    writes the entries {new, old cur} (one pwrite per run of chunks),
 *    then writes the data through.  Killed anywhere in between, the chunk
 *    on disk is the old one (matches prev) or the new one (cur): no false
 *    error, and nothing unverified is ever served.  What it cannot tell
 *    apart: a write lost by the disk (the old bytes match prev), and a
 *    second crash in a write of the same chunk before anything read it.
 *    Writes are acknowledged after both, so an acknowledged write's chunk
 *    matches cur.
 * 5. Reads: a block the cache reads from disk is checked in the disk
 *    thread (cache.c read_done); a failing block is an error block (not
 *    cached), the request answers GFS_ECHECKSUM and the log names the
 *    fork, chunk and byte range.  Blocks already in the cache were
 *    checked when read, or made by a checked write.
 * 6. Not here: same-host clients' descriptors (direct.c refuses a
 *    checksummed fork: every byte of it goes through this server) and
 *    cross-memory copies (clients send checksummed forks' data inline
 *    with IO_CWRITE / IO_CREAD, whose CRC covers the data in transit).
 *
 * Test-only fault switches, read once from the environment:
 *   GALLEY_TEST_FLIP_WIRE=N     flip one bit of the data of the first N
 *                               IO_CREAD replies after their CRC is made
 *                               (the client flips its IO_CWRITEs the same)
 *   GALLEY_TEST_CRASH_AFTER_CRC=1  _exit in the first write of a
 *                               checksummed fork after its sidecar entries
 *                               are written and before its data is
 * Never set them outside the tests.
 *
 * Threads: handler threads with the fork's rw lock held as stated per
 * function; gsrv_csum_verify also in the DiskManager thread (no lock: the
 * entry cannot change while the block's reader holds the fork's lock).
 */
#include "gsrv_internal.h"
#include "subfile_internal.h"

#include "crc32c.h"
#include "gfault.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BS ((uint64_t)GSRV_BLOCK_SIZE)
#define ENT 8 /* sidecar bytes per chunk */

static uint32_t zero_crc(void)
{
    static uint32_t z;
    static int done;
    if (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
        static const uint8_t zeros[GSRV_BLOCK_SIZE];
        z = gp_crc32c(0, zeros, sizeof(zeros));
        __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    }
    return z;
}

static long env_num(const char *name)
{
    const char *v = getenv(name);
    return v ? strtol(v, NULL, 10) : 0;
}

/* The test-only fault switches (see the header comment). */
static long flips_left = -1;
static int crash_after_crc = -1;

bool gsrv_csum_fault_flip(void)
{
    return gp_fault_take(&flips_left, "GALLEY_TEST_FLIP_WIRE");
}

static void fault_crash_point(void)
{
    if (crash_after_crc < 0)
        crash_after_crc = env_num("GALLEY_TEST_CRASH_AFTER_CRC") > 0;
    if (crash_after_crc) {
        gsrv_log(0, "GALLEY_TEST_CRASH_AFTER_CRC: exiting between the "
                    "checksums and the data");
        _exit(99);
    }
}

static void sidecar_file(uint64_t fkid, char *out, size_t len)
{
    fork_file(gsrv_fkid_hid(fkid), gsrv_fkid_idx(fkid), out, len);
    size_t n = strlen(out); /* "...IDX.dat" -> "...IDX.crc" */
    if (n > 4)
        memcpy(out + n - 4, ".crc", 4);
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

/* Entries [bno, bno + n) into e (holes and the end read as zeros). */
static int read_entries(int cfd, uint64_t bno, size_t n, uint8_t *e)
{
    memset(e, 0, n * ENT);
    ssize_t got = pread(cfd, e, n * ENT, (off_t)(bno * ENT));
    return got < 0 ? -errno : 0;
}

/* Chunk bno of the data file, zero-padded, into buf (BS bytes). */
static int read_chunk(int fd, uint64_t bno, uint8_t *buf)
{
    size_t have = 0;
    while (have < BS) {
        ssize_t got =
            pread(fd, buf + have, BS - have, (off_t)(bno * BS + have));
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -errno;
        if (got == 0)
            break;
        have += (size_t)got;
    }
    memset(buf + have, 0, BS - have);
    return 0;
}

static bool entry_ok(const uint8_t *e, uint32_t crc)
{
    uint32_t z = zero_crc();
    return crc == (get32(e) ^ z) || crc == (get32(e + 4) ^ z);
}

/* ------------------------------------------------------------- open ---- */

int gsrv_csum_open(gsrv_fork *f)
{
    char path[64];
    sidecar_file(f->fkid, path, sizeof(path));
    f->cfd = openat(gsrv_g.dfd, path, O_RDWR | O_CLOEXEC);
    if (f->cfd < 0 && errno != ENOENT)
        return -errno;
    return 0;
}

int gsrv_csum_create(gsrv_fork *f)
{
    if (f->cfd >= 0)
        return 0;
    char path[64], tmp[72];
    sidecar_file(f->fkid, path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int cfd =
        openat(gsrv_g.dfd, tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (cfd < 0)
        return -errno;
    /* the bytes the fork already has (none, for a file checksummed from
     * its creation) */
    int rc = 0;
    uint64_t size = gsrv_fork_size(f), n = (size + BS - 1) / BS;
    uint8_t *buf = n ? malloc(BS) : NULL;
    if (n && !buf)
        rc = -ENOMEM;
    for (uint64_t b = 0; b < n && !rc; b++) {
        rc = read_chunk(f->fd, b, buf);
        uint8_t e[ENT];
        uint32_t c = rc ? 0 : gp_crc32c(0, buf, BS) ^ zero_crc();
        put32(e, c);
        put32(e + 4, c);
        if (!rc && pwrite(cfd, e, ENT, (off_t)(b * ENT)) != ENT)
            rc = -EIO;
    }
    free(buf);
    if (!rc && renameat(gsrv_g.dfd, tmp, gsrv_g.dfd, path) < 0)
        rc = -errno;
    if (rc) {
        close(cfd);
        unlinkat(gsrv_g.dfd, tmp, 0);
        return rc;
    }
    f->cfd = cfd;
    return 0;
}

void gsrv_csum_unlink(uint64_t fkid)
{
    char path[64];
    sidecar_file(fkid, path, sizeof(path));
    gsrv_meta_unlink(path);
}

/* ----------------------------------------------------------- verify ---- */

int gsrv_csum_verify(int cfd, uint64_t fkid, uint64_t bno, const uint8_t *blk)
{
    uint8_t e[ENT];
    int rc = read_entries(cfd, bno, 1, e);
    if (rc)
        return rc;
    uint32_t crc = gp_crc32c(0, blk, BS);
    if (entry_ok(e, crc))
        return 0;
    gsrv_log(0,
             "fork %" PRIx64 " (sub/%" PRIu64 "/%" PRIu32
             ".dat): chunk %" PRIu64 " (bytes %" PRIu64 "..%" PRIu64
             ") failed its checksum: crc "
             "%08x, stored %08x",
             fkid, gsrv_fkid_hid(fkid), gsrv_fkid_idx(fkid), bno, bno * BS,
             (bno + 1) * BS - 1, crc, get32(e) ^ zero_crc());
    return GFS_ECHECKSUM;
}

/* ----------------------------------------------------------- update ---- */

int gsrv_csum_update(gsrv_fork *f, const uint64_t *bno, gsrv_block **blk,
                     size_t n)
{
    uint32_t z = zero_crc();
    size_t i = 0;
    while (i < n) {
        size_t j = i + 1; /* a run of consecutive chunks: one pwrite */
        while (j < n && bno[j] == bno[j - 1] + 1 && j - i < 1024)
            j++;
        uint8_t e[1024 * ENT];
        int rc = read_entries(f->cfd, bno[i], j - i, e);
        if (rc)
            return rc;
        for (size_t k = i; k < j; k++) {
            uint8_t *p = e + (k - i) * ENT;
            uint32_t c = gp_crc32c(0, blk[k]->data, BS) ^ z;
            if (c != get32(p)) {
                put32(p + 4, get32(p)); /* what the disk holds until the
                                         * data is written */
                put32(p, c);
            }
        }
        ssize_t w = pwrite(f->cfd, e, (j - i) * ENT, (off_t)(bno[i] * ENT));
        if (w != (ssize_t)((j - i) * ENT))
            return w < 0 ? -errno : -EIO;
        i = j;
    }
    fault_crash_point();
    return 0;
}

/* The fork was cut or grown to size (its data file already was; rw held
 * exclusively): entries past it go, the last chunk's is made anew. */
int gsrv_csum_truncate(gsrv_fork *f, uint64_t size)
{
    uint64_t n = (size + BS - 1) / BS;
    if (ftruncate(f->cfd, (off_t)(n * ENT)) < 0)
        return -errno;
    if (size % BS == 0)
        return 0;
    uint8_t *buf = malloc(BS);
    if (!buf)
        return -ENOMEM;
    int rc = read_chunk(f->fd, n - 1, buf);
    if (!rc) {
        uint8_t e[ENT];
        uint32_t c = gp_crc32c(0, buf, BS) ^ zero_crc();
        put32(e, c);
        put32(e + 4, c);
        if (pwrite(f->cfd, e, ENT, (off_t)((n - 1) * ENT)) != ENT)
            rc = -EIO;
    }
    free(buf);
    return rc;
}

/* ------------------------------------------------------------ scrub ---- */

int gsrv_op_SCRUB(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    (void)c;
    gp_SCRUB_req m;
    int rc = gp_SCRUB_req_decode(req, &m);
    if (rc)
        return rc;
    gsrv_fork *f;
    rc = gsrv_fork_get(m.fkid, &f);
    if (rc)
        return rc;
    gp_SCRUB_rep out = {.first_bad = UINT64_MAX};
    uint8_t *buf = malloc(BS);
    if (!buf)
        rc = -ENOMEM;
    else if (__atomic_load_n(&f->cfd, __ATOMIC_RELAXED) < 0)
        rc = -ENODATA; /* not a checksummed fork (yet) */
    /* From the disk, never the cache: a flip under a cached block counts.
     * The fork's lock is held per chunk, so writers wait one chunk at
     * most; a chunk is read and checked with no write in between. */
    for (uint64_t b = 0; !rc; b++) {
        pthread_rwlock_rdlock(&f->rw);
        bool past = b * BS >= gsrv_fork_size(f);
        int v = past ? 0 : read_chunk(f->fd, b, buf);
        if (!past && !v)
            v = gsrv_csum_verify(f->cfd, f->fkid, b, buf);
        pthread_rwlock_unlock(&f->rw);
        if (past)
            break;
        out.chunks += v == 0 || v == GFS_ECHECKSUM;
        if (v == GFS_ECHECKSUM) {
            if (out.bad++ == 0)
                out.first_bad = b;
        } else if (v) {
            rc = v;
        }
    }
    free(buf);
    gsrv_fork_put(f);
    if (!rc)
        gp_SCRUB_rep_encode(&rep->w, &out);
    return rc;
}
