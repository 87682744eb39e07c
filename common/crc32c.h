/*
 * crc32c.h -- CRC32C (Castagnoli, the iSCSI / ext4 / DAOS checksum) for
 * the end-to-end checksums of checksummed files (servers/csum.c,
 * libgalley/io.c).
 *
 * crc32c(crc, p, n) continues a CRC: start with 0, feed pieces in order;
 * crc32c(crc32c(0, a, na), b, nb) == crc32c(0, ab, na + nb).  Uses the
 * SSE4.2 crc32 instruction where the CPU has it (checked once), for
 * buffers of 1 KiB and more carry-less multiplication folding on 512-bit
 * registers where it has AVX-512 VPCLMULQDQ (GALLEY_CRC_NO_VPCLMUL set:
 * not, for measuring), else a byte table; all give the same values
 * (tests/unit/test_crc32c.c).
 *
 * Threads: any; the dispatch is chosen on first use, idempotently.
 */
#ifndef GCRC32C_H
#define GCRC32C_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

uint32_t g_crc32c(uint32_t crc, const void *p, size_t n);
/* The same over an iovec array, in order. */
uint32_t g_crc32c_iov(uint32_t crc, const struct iovec *iov, int niov);
/* The portable table version, for the tests. */
uint32_t g_crc32c_sw(uint32_t crc, const void *p, size_t n);

#endif /* GCRC32C_H */
