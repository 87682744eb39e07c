/*
 * csfile.h -- a checksummed fork's file and its CRC sidecar, read and
 * written by whoever holds both descriptors: the server while same-host
 * clients move the fork's data themselves (servers/io.c bypass, csum.c),
 * and those clients (libgalley/transport_direct.c).  servers/csum.c
 * states the format: one CRC32C per G_CS_CHUNK bytes of fork offsets,
 * 8 bytes per chunk in the sidecar at 8 x chunk number, {cur, prev} each
 * little-endian and stored XOR the CRC of a zero chunk; a chunk is good
 * when its CRC is cur or prev.
 *
 * Who holds the chunks.  Every reader and writer of the file outside the
 * server's cache takes an open-file-description lock (F_OFD_SETLKW) on
 * the sidecar's entries of the chunks it touches: shared to read and
 * verify, exclusive to write the entries and then the data.  So a reader
 * never sees a chunk between its new CRC and its new bytes, and two
 * writers of one chunk (different bytes of it) never compute its CRC from
 * each other's half-written state.  OFD locks belong to the open file
 * description, not the process: each holder needs its own description
 * (the server's threads share one: the server takes the fork's rwlock
 * exclusively around these calls; a client's threads share one per fork:
 * libgalley/transport_direct.c takes a mutex of the grant).  A holder killed
 * with -9 drops its locks with its descriptors.
 *
 * A write (g_cs_write), chunk run by chunk run (G_CS_RUN chunks): lock;
 * for a chunk the pieces cover wholly, its CRC from the caller's memory;
 * for one covered in part, the chunk is read from the file and verified
 * first (a flipped byte is never blessed by a rewrite), the new bytes
 * laid over it, and the CRC taken; the entries {new, old cur} are
 * written, then the data (csum.c rule 4: killed in between, the chunk on
 * disk matches prev); unlock.
 *
 * A read (g_cs_read): lock shared; the touched chunks are read whole
 * (straight into the caller's piece where one piece covers the run,
 * else through a bounce buffer), each verified, the pieces' bytes
 * copied out; unlock.  A failing chunk fails the call with
 * GFS_ECHECKSUM and the pieces are wiped: no byte of it reaches the
 * caller.
 *
 * The fork's byte x is the file's byte x (direct.c: base 0).
 *
 * Threads: any; no shared state.
 */
#ifndef GALLEY_CSFILE_H
#define GALLEY_CSFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "extent.h"

#define G_CS_CHUNK 32768u /* servers: GSRV_BLOCK_SIZE, the cache's block */
#define G_CS_ENT 8u       /* sidecar bytes per chunk */
#define G_CS_RUN 32u      /* chunks locked and written at a time (1 MiB) */

/* The CRC of a chunk of zeros (what a hole in the sidecar stands for). */
uint32_t g_cs_zero_crc(void);
/* An entry: its current CRC; is crc one of its two; set it to {cur, prev}. */
uint32_t g_cs_cur(const uint8_t *e);
bool g_cs_ok(const uint8_t *e, uint32_t crc);
void g_cs_put(uint8_t *e, uint32_t cur, uint32_t prev);

/* Entries [bno, bno + n) into e (holes and the end read as zeros): 0 or
 * -errno. */
int g_cs_read_entries(int cfd, uint64_t bno, size_t n, uint8_t *e);
/* Chunk bno of the data file, zeros past its end, into buf
 * (G_CS_CHUNK bytes): 0 or -errno. */
int g_cs_read_chunk(int fd, uint64_t bno, uint8_t *buf);

/* Lock the entries of chunks [bno, bno + n) (n 0: to the end of the
 * sidecar), exclusive if write, waiting; unlock them.  0 or -errno. */
int g_cs_lock(int cfd, uint64_t bno, uint64_t n, bool write);
void g_cs_unlock(int cfd, uint64_t bno, uint64_t n);

/*
 * Write the pieces e[0..n) (gp_ext.mem; sorted by offset and disjoint)
 * and keep their chunks' entries, as above; between (if not NULL: the
 * test-only crash points) is called with 0 after each run's entries are
 * written and before its data, and with 1 when half of the run's bytes
 * (by offset) are written.  0, GFS_ECHECKSUM (a chunk
 * written in part failed its check: *bad is its number, nothing of its
 * run was written), or -errno.
 */
int g_cs_write(int fd, int cfd, const gp_ext *e, size_t n, uint64_t *bad,
               void (*between)(int));

/*
 * Read the pieces e[0..n) (sorted by offset; overlaps allowed), zeros
 * past the end of the file, every chunk verified.  0, GFS_ECHECKSUM
 * (*bad: the first failing chunk; every piece zeroed), or -errno.
 */
int g_cs_read(int fd, int cfd, const gp_ext *e, size_t n, uint64_t *bad);

#endif
