/*
 * fdio.h -- pieces (gp_ext, proto/extent.h) moved between memory and a
 * Unix file descriptor with pread / preadv / pwritev: the direct path's
 * data mover, the same for a same-host client holding a fork's
 * descriptor (libgalley/direct.c) and for the server while such clients
 * exist (servers/io.c, which then bypasses its cache).
 *
 * The fork's byte x is the file's byte base + x.  Pieces name memory
 * (gp_ext.mem).
 *
 * Threads: any; no shared state.
 */
#ifndef GALLEY_FDIO_H
#define GALLEY_FDIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "extent.h"

/* A read bridges a gap in the file when the gap and the piece after it
 * are at most this many bytes together: the pieces are read as one span
 * into a bounce buffer and copied out (data sieving, for reads only:
 * reading bytes we were not asked for changes nothing).  Bridging costs
 * the gap's copy and the piece's second copy, at most a page, which is
 * less than the system call it saves; 4 KiB pieces 4 KiB apart read
 * faster with one preadv each (gbench).
 * Writes (g_fd_write_locked) bridge gaps of at most this many bytes. */
#define G_FD_SIEVE_GAP 4096u
#define G_FD_SIEVE_MAX (4u << 20) /* largest span read at once */

/*
 * Read every piece of e[0..n), sorted by offset (overlaps allowed: each
 * piece gets its bytes).  Bytes at or past the end of the file read as
 * zeros, and *eof (if not NULL) is set when there were any.  0 or -errno.
 */
int g_fd_read(int fd, uint64_t base, const gp_ext *e, size_t n, bool *eof);

/*
 * Write exactly the bytes of the pieces e[0..n) in that order (a later
 * piece wins where pieces overlap); neighbours that are adjacent in the
 * file, in that order, go in one pwritev.  Returns 0 or -errno (some bytes
 * may have been written).
 */
int g_fd_write(int fd, uint64_t base, const gp_ext *e, size_t n);

/*
 * g_fd_write under exclusive OFD locks (F_OFD_SETLKW) on the bytes it
 * writes, a span at a time, for the files in locked mode
 * (servers/direct.c): every writer of such a file locks what it writes,
 * so a writer holding a span's lock may write the whole span.  With
 * sieve, a span of at least G_FD_WSIEVE_PIECES pieces with gaps of at
 * most G_FD_SIEVE_GAP bytes (and at most G_FD_WSIEVE_MAX long) is
 * read, patched and written in one pwrite each way (data sieving, as
 * ROMIO's ufs: does under fcntl locks): one system call pair for many
 * small pieces instead of one pwrite each.  Pieces out of order or
 * overlapping are written in list order under one lock on their whole
 * range.  Locks die with the description: a writer killed mid-span
 * leaves none.  0 or -errno (some bytes may have been written).
 */
#define G_FD_WSIEVE_MAX (1u << 20)
#define G_FD_WSIEVE_PIECES 3
int g_fd_write_locked(int fd, uint64_t base, const gp_ext *e, size_t n,
                      bool sieve);

#endif
