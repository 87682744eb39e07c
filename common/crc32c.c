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
#include "gconfig.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

uint32_t g_crc32c_sw(uint32_t crc, const void *p, size_t n)
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

/* The last n bytes at b onto c, 8 then 1 at a time, by the instruction
 * (the end of both fast paths). */
__attribute__((target("sse4.2"))) static uint32_t
tail_hw(uint64_t c, const uint8_t *b, size_t n)
{
    for (; n >= 8; n -= 8, b += 8) {
        uint64_t v;
        memcpy(&v, b, 8);
        c = __builtin_ia32_crc32di(c, v);
    }
    for (; n; n--)
        c = __builtin_ia32_crc32qi((uint32_t)c, *b++);
    return (uint32_t)c;
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
    return ~tail_hw(c, b, n);
}

/*
 * Carry-less multiplication folding (Intel, "Fast CRC Computation for
 * Generic Polynomials Using PCLMULQDQ", 2009; the constants' form is
 * Linux's crc32-pclmul): where the CPU has VPCLMULQDQ on 512-bit
 * registers, four of them hold 256 bytes of the message and are folded
 * forward over the next 256 bytes with 8 multiplications -- several times
 * the crc32q loop's 8 bytes per cycle, which bounds the cost of a
 * checksummed transfer on the same-host path (the CRC is then most of
 * it).  Folding keeps the message's CRC: the 16 bytes left at the end are
 * fed to crc32q from a zero state (leading zero bytes do not change a
 * zero-state CRC), the initial CRC having been XORed into the first four
 * bytes.  A 16-byte block X = [L : H] (L its first eight bytes) moved
 * forward by T bits becomes clmul(L, K(T + 32)) ^ clmul(H, K(T - 32)),
 * K(n) = reflect32(x^n mod P) << 1, computed once here (checked against
 * Linux's CRC32 constants with that polynomial).
 */
#define POLY_NORMAL 0x1edc6f41u /* Castagnoli, x^32 implied */

static uint64_t fold_k(unsigned n)
{
    uint32_t r = 1, f = 0;
    for (unsigned i = 0; i < n; i++)
        r = r & 0x80000000u ? (r << 1) ^ POLY_NORMAL : r << 1;
    for (int i = 0; i < 32; i++)
        if (r >> i & 1)
            f |= 1u << (31 - i);
    return (uint64_t)f << 1;
}

/* {K(T + 32), K(T - 32)} for T = 128, 256, ..., 2048 bits: kt[T / 128] */
static uint64_t kt[17][2];
static bool kt_ready;

static void kt_build(void)
{
    for (unsigned t = 1; t <= 16; t++) {
        kt[t][0] = fold_k(128 * t + 32);
        kt[t][1] = fold_k(128 * t - 32);
    }
    __atomic_store_n(&kt_ready, true, __ATOMIC_RELEASE);
}

#define VPCL_TARGET "avx512f,avx512vl,avx512bw,vpclmulqdq,pclmul,sse4.2"

__attribute__((target(VPCL_TARGET))) static inline __m512i fold512(__m512i x,
                                                                   __m512i k)
{
    return _mm512_xor_si512(_mm512_clmulepi64_epi128(x, k, 0x00),
                            _mm512_clmulepi64_epi128(x, k, 0x11));
}

/* fold512(x, k) ^ the 64 bytes at b, the two XORs in one instruction */
__attribute__((target(VPCL_TARGET))) static inline __m512i
fold512_in(__m512i x, __m512i k, const uint8_t *b)
{
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
                                     _mm512_clmulepi64_epi128(x, k, 0x11),
                                     _mm512_loadu_si512(b), 0x96);
}

__attribute__((target(VPCL_TARGET))) static inline __m128i fold128(__m128i x,
                                                                   __m128i k)
{
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
                         _mm_clmulepi64_si128(x, k, 0x11));
}

__attribute__((target(VPCL_TARGET))) static __m512i k512(unsigned t)
{
    return _mm512_broadcast_i32x4(
        _mm_set_epi64x((long long)kt[t][1], (long long)kt[t][0]));
}

__attribute__((target(VPCL_TARGET))) static __m128i k128(unsigned t)
{
    return _mm_set_epi64x((long long)kt[t][1], (long long)kt[t][0]);
}

/* n >= 256 */
__attribute__((target(VPCL_TARGET))) static uint32_t
crc32c_vpcl(uint32_t crc, const uint8_t *b, size_t n)
{
    if (!__atomic_load_n(&kt_ready, __ATOMIC_ACQUIRE))
        kt_build(); /* idempotent: same values by all */
    __m512i x0 = _mm512_loadu_si512(b), x1 = _mm512_loadu_si512(b + 64),
            x2 = _mm512_loadu_si512(b + 128), x3 = _mm512_loadu_si512(b + 192);
    x0 = _mm512_xor_si512(x0,
                          _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)~crc)));
    b += 256;
    n -= 256;
    __m512i k = k512(16); /* 2048 bits forward */
    for (; n >= 256; n -= 256, b += 256) {
        x0 = fold512_in(x0, k, b);
        x1 = fold512_in(x1, k, b + 64);
        x2 = fold512_in(x2, k, b + 128);
        x3 = fold512_in(x3, k, b + 192);
    }
    __m512i x = _mm512_xor_si512(
        _mm512_xor_si512(fold512(x0, k512(12)), fold512(x1, k512(8))),
        _mm512_xor_si512(fold512(x2, k512(4)), x3));
    for (k = k512(4); n >= 64; n -= 64, b += 64)
        x = fold512_in(x, k, b);
    __m128i r = _mm_xor_si128(
        _mm_xor_si128(fold128(_mm512_extracti32x4_epi32(x, 0), k128(3)),
                      fold128(_mm512_extracti32x4_epi32(x, 1), k128(2))),
        _mm_xor_si128(fold128(_mm512_extracti32x4_epi32(x, 2), k128(1)),
                      _mm512_extracti32x4_epi32(x, 3)));
    for (__m128i k1 = k128(1); n >= 16; n -= 16, b += 16)
        r = _mm_xor_si128(fold128(r, k1),
                          _mm_loadu_si128((const __m128i *)(const void *)b));
    uint64_t c = __builtin_ia32_crc32di(0, (uint64_t)_mm_cvtsi128_si64(r));
    c = __builtin_ia32_crc32di(
        c, (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(r, r)));
    return ~tail_hw(c, b, n);
}
#endif

uint32_t g_crc32c(uint32_t crc, const void *p, size_t n)
{
#if defined(__x86_64__)
    static int hw = -1; /* 0: none, 1: crc32q, 2: and VPCLMULQDQ */
    int h = __atomic_load_n(&hw, __ATOMIC_RELAXED);
    if (h < 0) {
        __builtin_cpu_init();
        h = !__builtin_cpu_supports("sse4.2") ? 0
            : __builtin_cpu_supports("vpclmulqdq") &&
                    __builtin_cpu_supports("avx512f") &&
                    __builtin_cpu_supports("avx512vl") &&
                    __builtin_cpu_supports("avx512bw") &&
                    !g_config_bool(G_CFG_CRC_NO_VPCLMUL)
                ? 2
                : 1;
        __atomic_store_n(&hw, h, __ATOMIC_RELAXED);
    }
    if (h == 2 && n >= 1024)
        return crc32c_vpcl(crc, p, n);
    if (h)
        return crc32c_hw(crc, p, n);
#endif
    return g_crc32c_sw(crc, p, n);
}

uint32_t g_crc32c_iov(uint32_t crc, const struct iovec *iov, int niov)
{
    for (int i = 0; i < niov; i++)
        crc = g_crc32c(crc, iov[i].iov_base, iov[i].iov_len);
    return crc;
}
