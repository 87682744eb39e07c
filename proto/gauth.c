/*
 * gauth.c -- the cluster secret: key files and the challenge-response MAC
 * (gauth.h).  All cryptography is libsodium's.
 */
#include "gauth.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void init_once(void)
{
    /* sodium_init is thread-safe and idempotent; it fails only when no
     * entropy source exists, and then randombytes_buf aborts anyway. */
    if (sodium_init() < 0) {
        /* randombytes_buf aborts then: nothing safe is left to do */
    }
}

int gp_key_load(const char *path, uint8_t key[GP_KEY_BYTES])
{
    init_once();
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return -EINVAL;
    }
    if (st.st_mode & 077) {
        close(fd);
        return -EPERM;
    }
    char text[2 * GP_KEY_BYTES + 3];
    ssize_t n = read(fd, text, sizeof(text));
    close(fd);
    if (n < 0)
        return -errno;
    if (n > 0 && text[n - 1] == '\n')
        n--;
    if (n != 2 * GP_KEY_BYTES)
        return -EINVAL;
    size_t bin = 0;
    if (sodium_hex2bin(key, GP_KEY_BYTES, text, (size_t)n, NULL, &bin, NULL) !=
            0 ||
        bin != GP_KEY_BYTES) {
        sodium_memzero(text, sizeof(text));
        return -EINVAL;
    }
    sodium_memzero(text, sizeof(text));
    return 0;
}

const char *gp_key_problem(const char *path, int rc, char *buf, size_t n)
{
    struct stat st;
    switch (rc) {
    case -EPERM:
        return "readable or writable by group or others (chmod 600 it)";
    case -EINVAL:
        return "not a key (64 hex digits expected)";
    case -EACCES:
        if (stat(path, &st) == 0 && st.st_uid != geteuid()) {
            snprintf(buf, n,
                     "permission denied: it belongs to uid %u (mode %04o) "
                     "and this process runs as uid %u; run as the "
                     "cluster's owner or use a copy of the key of your own "
                     "(GALLEY_KEY=FILE, mode 0600)",
                     (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
                     (unsigned)geteuid());
            return buf;
        }
        return "permission denied: this user may not read it";
    default:
        return strerror(-rc);
    }
}

void gp_random(void *buf, size_t n)
{
    init_once();
    randombytes_buf(buf, n);
}

void gp_auth_mac(const uint8_t key[GP_KEY_BYTES], const char *label,
                 const uint8_t a[GP_NONCE_BYTES],
                 const uint8_t b[GP_NONCE_BYTES], uint8_t out[GP_MAC_BYTES])
{
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, key, GP_KEY_BYTES);
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)label,
                                  strlen(label));
    crypto_auth_hmacsha256_update(&st, a, GP_NONCE_BYTES);
    crypto_auth_hmacsha256_update(&st, b, GP_NONCE_BYTES);
    crypto_auth_hmacsha256_final(&st, out);
    sodium_memzero(&st, sizeof(st));
}

bool gp_mac_equal(const uint8_t a[GP_MAC_BYTES], const uint8_t b[GP_MAC_BYTES])
{
    return crypto_verify_32(a, b) == 0;
}
