/*
 * gauth.h -- the cluster secret, shared by libgalley and galleyd.
 *
 * `galley-cluster start` writes a random 32-byte key, as 64 hex digits and
 * a newline, into a file readable by its owner only (0600) beside the
 * cluster file ("DIR/cluster.key").  A server started with --key FILE
 * (galley-cluster always passes it) serves only connections that prove
 * they know the key, and proves it knows the key too:
 *
 *   client                                server
 *   AUTH  blob cnonce (32 bytes)  ->
 *                                 <-      blob snonce (32 bytes)
 *   AUTH_PROVE blob HMAC(key, "galley-client" cnonce snonce) ->
 *                                 <-      blob HMAC(key, "galley-server"
 *                                                   snonce cnonce)
 *
 * HMAC is HMAC-SHA-256 (libsodium's crypto_auth_hmacsha256); nonces come
 * from libsodium's randombytes_buf; MACs are compared in constant time.
 * The key never crosses the wire, and a recorded exchange is useless for
 * another connection (fresh nonces on both sides).
 *
 * Threads: pure functions (plus libsodium's thread-safe initialisation);
 * callable from any thread.
 */
#ifndef GAUTH_H
#define GAUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GP_KEY_BYTES 32
#define GP_NONCE_BYTES 32
#define GP_MAC_BYTES 32

/* Read a key file: 64 hex digits, an optional newline, nothing else.
 * 0, -ENOENT (no file), -EACCES (this user may not read it, e.g. another
 * user's 0600 file), -EPERM (the file is readable or writable by its group
 * or others: it would not be a secret), -EINVAL (not a key), or another
 * -errno. */
int gp_key_load(const char *path, uint8_t key[GP_KEY_BYTES]);

/* What is wrong with the key file PATH that gp_key_load refused with RC,
 * in words for a user (who owns it and who is asking, for -EACCES); BUF of
 * N bytes holds the text. */
const char *gp_key_problem(const char *path, int rc, char *buf, size_t n);

/* Fill buf with n unpredictable bytes. */
void gp_random(void *buf, size_t n);

/* HMAC-SHA-256 under key of label, then a, then b (each GP_NONCE_BYTES). */
void gp_auth_mac(const uint8_t key[GP_KEY_BYTES], const char *label,
                 const uint8_t a[GP_NONCE_BYTES],
                 const uint8_t b[GP_NONCE_BYTES], uint8_t out[GP_MAC_BYTES]);

/* Constant-time comparison of two MACs. */
bool gp_mac_equal(const uint8_t a[GP_MAC_BYTES], const uint8_t b[GP_MAC_BYTES]);

#define GP_AUTH_CLIENT_LABEL "galley-client"
#define GP_AUTH_SERVER_LABEL "galley-server"

#endif /* GAUTH_H */
