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
 * 6. Same-host clients (direct.c: DIRECT_COPEN) read and write a
 *    checksummed fork's file themselves and keep these entries
 *    themselves, with common/csfile.c, under per-chunk locks on the
 *    sidecar's entries; while any holds the fork, this server's own
 *    reads and writes of it bypass the cache and use the same code
 *    ("bypass" below).  Every finished write settles its entries to
 *    {new, new} (write_windows: gsrv_csum_settled; csfile.c likewise), so
 *    an entry with two CRCs marks a write in flight: when a same-host
 *    writer dies holding the fork, gsrv_csum_settle_dead looks at exactly
 *    those chunks.  Cross-memory copies never carry checksummed data
 *    (clients send it inline with IO_CWRITE / IO_CREAD, whose CRC covers
 *    the data in transit).
 *
 * Test-only fault switches, read once from the environment, and only by
 * the test build, galleyd-test (common/gfault.h; galleyd ignores them):
 *   GALLEY_TEST_FLIP_WIRE=N     flip one bit of the data of the first N
 *                               IO_CREAD replies after their CRC is made
 *                               (io_read.c; the client flips its
 *                               IO_CWRITEs the same)
 *   GALLEY_TEST_CRASH_AFTER_CRC=1  _exit in the first write of a
 *                               checksummed fork after its sidecar entries
 *                               are written and before its data is
 *                               (same-host clients have their own:
 *                               libgalley/transport_direct.c)
 * Never set them outside the tests.
 *
 * Threads: handler threads with the fork's rw lock held as stated per
 * function; gsrv_csum_verify also in the DiskManager thread (no lock: the
 * entry cannot change while the block's reader holds the fork's lock).
 */
#include "gsrv_internal.h"
#include "subfile_internal.h"

#include "crc32c.h"
#include "csfile.h"
#include "gfault.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BS ((uint64_t)GSRV_BLOCK_SIZE)
#define ENT G_CS_ENT /* sidecar bytes per chunk */

_Static_assert(GSRV_BLOCK_SIZE == G_CS_CHUNK, "a chunk is a cache block");

/* The test-only crash point (see the header comment): only in
 * galleyd-test (common/gfault.h). */
#ifdef GALLEY_TEST_HOOKS
static bool crash_after_crc(void)
{
    return g_fault_int(G_CFG_TEST_CRASH_AFTER_CRC) > 0; /* read once */
}

static void fault_crash_point(int stage)
{
    if (stage) /* halfway through the data: only clients stop there */
        return;
    if (crash_after_crc()) {
        gsrv_log(0, "GALLEY_TEST_CRASH_AFTER_CRC: exiting between the "
                    "checksums and the data");
        _exit(99);
    }
}
#define CRASH_HOOK (crash_after_crc() ? fault_crash_point : NULL)
#else
#define CRASH_HOOK NULL
static inline void fault_crash_point(int stage)
{
    (void)stage;
}
#endif

static void sidecar_file(uint64_t fkid, char *out, size_t len)
{
    fork_file(gsrv_fkid_hid(fkid), gsrv_fkid_idx(fkid), out, len);
    size_t n = strlen(out); /* "...IDX.dat" -> "...IDX.crc" */
    if (n > 4)
        memcpy(out + n - 4, ".crc", 4);
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
        rc = g_cs_read_chunk(f->fd, b, buf);
        uint8_t e[ENT];
        uint32_t c = rc ? 0 : g_crc32c(0, buf, BS);
        g_cs_put(e, c, c);
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

static void log_bad(uint64_t fkid, uint64_t bno, uint32_t crc, uint32_t stored)
{
    gsrv_log(0,
             "fork %" PRIx64 " (sub/%" PRIu64 "/%" PRIu32
             ".dat): chunk %" PRIu64 " (bytes %" PRIu64 "..%" PRIu64
             ") failed its checksum: crc "
             "%08x, stored %08x",
             fkid, gsrv_fkid_hid(fkid), gsrv_fkid_idx(fkid), bno, bno * BS,
             (bno + 1) * BS - 1, crc, stored);
}

int gsrv_csum_verify(int cfd, uint64_t fkid, uint64_t bno, const uint8_t *blk)
{
    uint8_t e[ENT];
    int rc = g_cs_read_entries(cfd, bno, 1, e);
    if (rc)
        return rc;
    uint32_t crc = g_crc32c(0, blk, BS);
    if (g_cs_ok(e, crc))
        return 0;
    log_bad(fkid, bno, crc, g_cs_cur(e));
    return GFS_ECHECKSUM;
}

/* ----------------------------------------------------------- update ---- */

int gsrv_csum_update(gsrv_fork *f, const uint64_t *bno, gsrv_block **blk,
                     size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t j = i + 1; /* a run of consecutive chunks: one pwrite */
        while (j < n && bno[j] == bno[j - 1] + 1 && j - i < 1024)
            j++;
        uint8_t e[1024 * ENT];
        int rc = g_cs_read_entries(f->cfd, bno[i], j - i, e);
        if (rc)
            return rc;
        for (size_t k = i; k < j; k++) {
            uint8_t *p = e + (k - i) * ENT;
            uint32_t c = g_crc32c(0, blk[k]->data, BS), cur = g_cs_cur(p);
            if (c != cur) /* the disk holds cur until the data is written */
                g_cs_put(p, c, cur);
        }
        ssize_t w = pwrite(f->cfd, e, (j - i) * ENT, (off_t)(bno[i] * ENT));
        if (w != (ssize_t)((j - i) * ENT))
            return w < 0 ? -errno : -EIO;
        i = j;
    }
    fault_crash_point(0);
    return 0;
}

/* After blocks bno[0..n)'s data is written: their entries settled to
 * {cur, cur}, so that two CRCs in an entry mark a write in flight
 * (csfile.h does the same; gsrv_csum_settle_dead reads it). */
int gsrv_csum_settled(gsrv_fork *f, const uint64_t *bno, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t j = i + 1;
        while (j < n && bno[j] == bno[j - 1] + 1 && j - i < 1024)
            j++;
        uint8_t e[1024 * ENT];
        int rc = g_cs_read_entries(f->cfd, bno[i], j - i, e);
        if (rc)
            return rc;
        for (size_t k = 0; k < j - i; k++)
            g_cs_put(e + k * ENT, g_cs_cur(e + k * ENT), g_cs_cur(e + k * ENT));
        ssize_t w = pwrite(f->cfd, e, (j - i) * ENT, (off_t)(bno[i] * ENT));
        if (w != (ssize_t)((j - i) * ENT))
            return w < 0 ? -errno : -EIO;
        i = j;
    }
    return 0;
}

/*
 * A same-host client died holding a writable grant of the fork (direct.c;
 * rw held exclusively): a write it was inside may have left a chunk half
 * new, half old -- what a plain file holds after a writer killed in a
 * write, and no damage.  Its entry still has two CRCs (every finished
 * write settles its entries), so every such chunk is looked at, under
 * its lock (live writers finish theirs first): matching either CRC, it
 * is settled to that one; matching neither, it is the torn write, logged,
 * and its CRC is taken from the bytes on disk.  Chunks with one CRC are
 * not touched: a flip in them is still found.
 */
void gsrv_csum_settle_dead(gsrv_fork *f)
{
    off_t len = lseek(f->cfd, 0, SEEK_END);
    uint64_t n = len > 0 ? (uint64_t)len / ENT : 0;
    uint8_t *buf = malloc(BS);
    if (!buf)
        return;
    for (uint64_t b0 = 0; b0 < n; b0 += 1024) {
        uint8_t e[1024 * ENT];
        size_t m = n - b0 < 1024 ? (size_t)(n - b0) : 1024;
        if (g_cs_read_entries(f->cfd, b0, m, e))
            break;
        for (size_t k = 0; k < m; k++) {
            uint8_t *p = e + k * ENT;
            if (!memcmp(p, p + 4, 4))
                continue; /* settled */
            uint64_t b = b0 + k;
            if (g_cs_lock(f->cfd, b, 1, true))
                continue;
            uint8_t cur[ENT];
            if (!g_cs_read_entries(f->cfd, b, 1, cur) &&
                memcmp(cur, cur + 4, 4) && !g_cs_read_chunk(f->fd, b, buf)) {
                uint32_t crc = g_crc32c(0, buf, BS);
                if (!g_cs_ok(cur, crc))
                    gsrv_log(0,
                             "fork %" PRIx64 ": chunk %" PRIu64
                             " was being written when its same-host writer "
                             "died; its checksum is made from the bytes on "
                             "disk",
                             f->fkid, b);
                g_cs_put(cur, crc, crc);
                if (pwrite(f->cfd, cur, ENT, (off_t)(b * ENT)) != ENT)
                    gsrv_log(0,
                             "fork %" PRIx64 ": cannot settle chunk %" PRIu64,
                             f->fkid, b);
            }
            g_cs_unlock(f->cfd, b, 1);
        }
    }
    free(buf);
}

/* The fork was cut or grown to size (its data file already was; rw held
 * exclusively): entries past it go, the last chunk's is made anew. */
int gsrv_csum_truncate(gsrv_fork *f, uint64_t size)
{
    uint64_t n = (size + BS - 1) / BS;
    /* same-host writers (csfile.h) hold chunks by their entries' locks */
    uint64_t from = n ? n - 1 : 0;
    int rc = g_cs_lock(f->cfd, from, 0, true);
    if (rc)
        return rc;
    if (ftruncate(f->cfd, (off_t)(n * ENT)) < 0)
        rc = -errno;
    uint8_t *buf = NULL;
    if (!rc && size % BS && !(buf = malloc(BS)))
        rc = -ENOMEM;
    if (!rc && buf)
        rc = g_cs_read_chunk(f->fd, n - 1, buf);
    if (!rc && buf) {
        uint8_t e[ENT];
        uint32_t c = g_crc32c(0, buf, BS);
        g_cs_put(e, c, c);
        if (pwrite(f->cfd, e, ENT, (off_t)((n - 1) * ENT)) != ENT)
            rc = -EIO;
    }
    free(buf);
    g_cs_unlock(f->cfd, from, 0);
    return rc;
}

/* ----------------------------------------------------------- bypass ---- */

/* The fork's same-host clients move its data themselves (direct.c: a
 * checksummed fork's grants all count in direct_w, and io*.c bypass the
 * cache): the server's own reads and writes take the chunks' locks as
 * they do (csfile.h), with f->rw held exclusively (its threads share one
 * open file description of the sidecar, and OFD locks are per
 * description). */
static void log_bad_chunk(const gsrv_fork *f, uint64_t bno)
{
    uint8_t *buf = malloc(BS), e[ENT];
    if (buf && !g_cs_read_chunk(f->fd, bno, buf) &&
        !g_cs_read_entries(f->cfd, bno, 1, e))
        log_bad(f->fkid, bno, g_crc32c(0, buf, BS), g_cs_cur(e));
    else
        log_bad(f->fkid, bno, 0, 0);
    free(buf);
}

int gsrv_csum_bypass_write(gsrv_fork *f, const gp_ext *e, size_t n)
{
    uint64_t bad = 0;
    int rc = g_cs_write(f->fd, f->cfd, e, n, &bad, CRASH_HOOK);
    if (rc == GFS_ECHECKSUM)
        log_bad_chunk(f, bad);
    return rc;
}

int gsrv_csum_bypass_read(gsrv_fork *f, const gp_ext *e, size_t n)
{
    uint64_t bad = 0;
    int rc = g_cs_read(f->fd, f->cfd, e, n, &bad);
    if (rc == GFS_ECHECKSUM)
        log_bad_chunk(f, bad);
    return rc;
}

/* ------------------------------------------------------------ scrub ---- */

int gsrv_do_SCRUB(gsrv_conn *c, const gp_SCRUB_req *m, gp_SCRUB_rep *out,
                  gsrv_call *k)
{
    gsrv_fork *f;
    int rc = gsrv_fork_get(m->fkid, GSRV_FORK_READ, &f);
    if (rc)
        return rc;
    out->first_bad = UINT64_MAX;
    uint8_t *buf = malloc(BS);
    if (!buf)
        rc = -ENOMEM;
    else if (__atomic_load_n(&f->cfd, __ATOMIC_RELAXED) < 0)
        rc = -ENODATA; /* not a checksummed fork (yet) */
    /* From the disk, never the cache: a flip under a cached block counts.
     * The fork's lock is held per chunk, so writers wait one chunk at
     * most; a chunk is read and checked with no write in between. */
    for (uint64_t b = 0; !rc; b++) {
        /* same-host writers: their chunk locks too (bypass, above) */
        bool direct = gsrv_fork_direct(f);
        if (direct)
            pthread_rwlock_wrlock(&f->rw);
        else
            pthread_rwlock_rdlock(&f->rw);
        direct = gsrv_fork_direct(f);
        int v = direct ? g_cs_lock(f->cfd, b, 1, false) : 0;
        bool past = b * BS >= gsrv_fork_size(f);
        if (!v && !past)
            v = g_cs_read_chunk(f->fd, b, buf);
        if (!past && !v)
            v = gsrv_csum_verify(f->cfd, f->fkid, b, buf);
        if (direct)
            g_cs_unlock(f->cfd, b, 1);
        pthread_rwlock_unlock(&f->rw);
        if (past)
            break;
        out->chunks += v == 0 || v == GFS_ECHECKSUM;
        if (v == GFS_ECHECKSUM) {
            if (out->bad++ == 0)
                out->first_bad = b;
        } else if (v) {
            rc = v;
        }
    }
    free(buf);
    gsrv_fork_put(f);
    return rc;
}
