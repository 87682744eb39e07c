/*
 * test_crc32c.c -- common/crc32c.c: the standard check value, the hardware
 * paths (one lane, three, and VPCLMULQDQ folding where the CPU has it)
 * and the table agree on lengths and
 * alignments, continuation over pieces and iovecs equals one pass.
 *
 * Threads: single-threaded.
 */
#include <string.h>

#include "crc32c.h"
#include "utest.h"

int main(void)
{
    /* RFC 3720 B.4 / the usual check value */
    CHECK(g_crc32c(0, "123456789", 9) == 0xe3069283u);
    CHECK(g_crc32c_sw(0, "123456789", 9) == 0xe3069283u);
    uint8_t z[32] = {0};
    CHECK(g_crc32c(0, z, 32) == 0x8a9136aau); /* RFC 3720: 32 zeros */
    static uint8_t buf[70000];
    uint32_t s = 12345;
    for (size_t i = 0; i < sizeof(buf); i++) {
        s = s * 1103515245u + 12345u;
        buf[i] = (uint8_t)(s >> 16);
    }
    for (size_t off = 0; off < 9; off++)
        for (size_t n = 0; n < 300; n += 7)
            CHECK(g_crc32c(0, buf + off, n) == g_crc32c_sw(0, buf + off, n));
    /* around the 3-lane loop's block of 3 KiB (crc32c.c LANE) */
    static const size_t lens[] = {3071, 3072, 3073, 6143, 6144, 6151, 9999};
    for (size_t off = 0; off < 9; off++)
        for (size_t k = 0; k < sizeof(lens) / sizeof(*lens); k++)
            CHECK(g_crc32c(7, buf + off, lens[k]) ==
                  g_crc32c_sw(7, buf + off, lens[k]));
    /* around the folding loop's 1 KiB threshold and its 256-, 64- and
     * 16-byte steps (crc32c.c crc32c_vpcl) */
    static const size_t flen[] = {1023, 1024, 1025,  1039,  1040,
                                  1087, 1088, 1279,  1280,  1281,
                                  1296, 1343, 32768, 65536, 69000};
    for (size_t off = 0; off < 9; off++)
        for (size_t k = 0; k < sizeof(flen) / sizeof(*flen); k++)
            CHECK(g_crc32c(0xdeadbeefu, buf + off, flen[k]) ==
                  g_crc32c_sw(0xdeadbeefu, buf + off, flen[k]));
    uint32_t one = g_crc32c(0, buf, sizeof(buf));
    CHECK(one == g_crc32c_sw(0, buf, sizeof(buf)));
    uint32_t c = g_crc32c(0, buf, 1000);
    c = g_crc32c(c, buf + 1000, sizeof(buf) - 1000);
    CHECK(c == one);
    struct iovec iov[3] = {
        {buf, 3}, {buf + 3, 40000}, {buf + 40003, sizeof(buf) - 40003}};
    CHECK(g_crc32c_iov(0, iov, 3) == one);
    buf[500] ^= 4;
    CHECK(g_crc32c(0, buf, sizeof(buf)) != one);
    return utest_exit("test_crc32c");
}
