/*
 * crc32c.c -- CRC32C, see crc32c.h.
 *
 * Written here rather than taken from a library: it is forty lines, the
 * wire and disk format must not change with a library's version, and
 * neither side then needs one more run-time package (Debian has no small
 * one for just this: zlib's crc32 is another polynomial, and isa-l or
 * libiscsi would be a dependency for one function).  The hardware path
 * processes 8 bytes per crc32q.  One crc32q waits for the previous one
 * (3 cycles of latency, one issued per cycle), so long buffers run three
 * independent lanes of LANE bytes and join them: the CRC register is
 * linear over GF(2), so appending LANE bytes to a state x gives
 * Z(x) ^ crc_from_0(lane), where Z (feeding LANE zero bytes) is a 32 x 32
 * bit matrix kept as four 256-entry tables (after Intel's and Linux's
 * crc32c-pcl; about 3x the single-lane speed here).
 *
 * Threads: any.
 */
#include "crc32c.h"

#include <stdbool.h>
#include <string.h>

#define POLY 0x82f63b78u /* reflected Castagnoli */

static uint32_t table[256];
static bool table_ready;

static void table_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        table[i] = c;
    }
    __atomic_store_n(&table_ready, true, __ATOMIC_RELEASE);
}

uint32_t gp_crc32c_sw(uint32_t crc, const void *p, size_t n)
{
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE))
        table_init(); /* idempotent: every thread writes the same values */
    const uint8_t *b = p;
    crc = ~crc;
    while (n--)
        crc = table[(crc ^ *b++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

#if defined(__x86_64__)
#define LANE 1024 /* bytes per lane of the 3-lane loop */

static uint32_t shift1[4][256], shift2[4][256]; /* Z^LANE, Z^(2 LANE) */
static bool shift_ready;

__attribute__((target("sse4.2"))) static uint32_t zeros_hw(uint32_t x, size_t n)
{
    uint64_t c = x;
    for (size_t i = 0; i < n; i += 8)
        c = __builtin_ia32_crc32di(c, 0);
    return (uint32_t)c;
}

/* The tables of x -> Z^n(x), from its values on the 32 basis vectors. */
static void shift_build(uint32_t t[4][256], size_t n)
{
    uint32_t basis[32];
    for (int i = 0; i < 32; i++)
        basis[i] = zeros_hw(1u << i, n);
    for (int k = 0; k < 4; k++)
        for (int v = 0; v < 256; v++) {
            uint32_t r = 0;
            for (int j = 0; j < 8; j++)
                if (v >> j & 1)
                    r ^= basis[8 * k + j];
            t[k][v] = r;
        }
}

static inline uint32_t shift(uint32_t t[4][256], uint32_t x)
{
    return t[0][x & 0xff] ^ t[1][(x >> 8) & 0xff] ^ t[2][(x >> 16) & 0xff] ^
           t[3][x >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t crc, const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t c = ~crc;
    for (; n && ((uintptr_t)b & 7); n--)
        c = __builtin_ia32_crc32qi((uint32_t)c, *b++);
    if (n >= 3 * LANE && !__atomic_load_n(&shift_ready, __ATOMIC_ACQUIRE)) {
        shift_build(shift1, LANE); /* idempotent: same values by all */
        shift_build(shift2, 2 * LANE);
        __atomic_store_n(&shift_ready, true, __ATOMIC_RELEASE);
    }
    for (; n >= 3 * LANE; n -= 3 * LANE, b += 3 * LANE) {
        uint64_t x = c, y = 0, z = 0;
        for (size_t i = 0; i < LANE; i += 8) {
            uint64_t u, v, w;
            memcpy(&u, b + i, 8);
            memcpy(&v, b + LANE + i, 8);
            memcpy(&w, b + 2 * LANE + i, 8);
            x = __builtin_ia32_crc32di(x, u);
            y = __builtin_ia32_crc32di(y, v);
            z = __builtin_ia32_crc32di(z, w);
        }
        c = shift(shift2, (uint32_t)x) ^ shift(shift1, (uint32_t)y) ^
            (uint32_t)z;
    }
    for (; n >= 8; n -= 8, b += 8) {
        uint64_t v;
        memcpy(&v, b, 8);
        c = __builtin_ia32_crc32di(c, v);
    }
    for (; n; n--)
        c = __builtin_ia32_crc32qi((uint32_t)c, *b++);
    return ~(uint32_t)c;
}
#endif

uint32_t gp_crc32c(uint32_t crc, const void *p, size_t n)
{
#if defined(__x86_64__)
    static int hw = -1;
    int h = __atomic_load_n(&hw, __ATOMIC_RELAXED);
    if (h < 0) {
        __builtin_cpu_init();
        h = __builtin_cpu_supports("sse4.2") ? 1 : 0;
        __atomic_store_n(&hw, h, __ATOMIC_RELAXED);
    }
    if (h)
        return crc32c_hw(crc, p, n);
#endif
    return gp_crc32c_sw(crc, p, n);
}

uint32_t gp_crc32c_iov(uint32_t crc, const struct iovec *iov, int niov)
{
    for (int i = 0; i < niov; i++)
        crc = gp_crc32c(crc, iov[i].iov_base, iov[i].iov_len);
    return crc;
}
