/*
 * auth.c -- the cluster secret on the server side (proto/gauth.h): AUTH
 * and AUTH_PROVE, and the gate that keeps every other request out until a
 * connection has proven it knows the key.
 *
 * Where the key comes from (gsrv_auth_init, main thread, before any
 * connection):
 *   - --key FILE (galley-cluster passes DIR/cluster.key): loaded, and a
 *     copy is kept in the data directory as "key" (0600), so a server
 *     restarted by hand on the same data directory keeps its secret;
 *   - no --key, but DATA/key exists: that key;
 *   - neither: no authentication at all (a warning is logged).  Such a
 *     server was started by hand on a new data directory; its clients
 *     found no key beside their cluster file either, and refusing them
 *     would break every hand-made cluster.  Data files are still 0600.
 *
 * Threads: handler threads call the ops and gsrv_auth_allows on their own
 * connection; the key is written once before they start and only read
 * afterwards.  No locks.
 */
#include "gsrv_internal.h"

#include "gauth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct {
    bool on;
    uint8_t key[GP_KEY_BYTES];
} auth;

enum { AUTH_NONE = 0, AUTH_CHALLENGED = 1, AUTH_DONE = 2 };

/* Keep the key in the data directory (atomically, 0600). */
static int save_key(const char *text)
{
    int fd =
        openat(gsrv_g.dfd, "key.tmp",
               O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -errno;
    size_t len = strlen(text);
    int rc = 0;
    if (fchmod(fd, 0600) < 0 || write(fd, text, len) != (ssize_t)len ||
        fsync(fd) < 0)
        rc = errno ? -errno : -EIO;
    close(fd);
    if (!rc && renameat(gsrv_g.dfd, "key.tmp", gsrv_g.dfd, "key") < 0)
        rc = -errno;
    if (rc)
        unlinkat(gsrv_g.dfd, "key.tmp", 0);
    return rc;
}

int gsrv_auth_init(const char *key_path)
{
    char dpath[64];
    snprintf(dpath, sizeof(dpath), "/proc/self/fd/%d/key", gsrv_g.dfd);
    if (key_path) {
        int rc = gp_key_load(key_path, auth.key);
        if (rc) {
            char why[256];
            fprintf(stderr, "galleyd: --key %s: %s\n", key_path,
                    gp_key_problem(key_path, rc, why, sizeof(why)));
            return rc;
        }
        char hex[2 * GP_KEY_BYTES + 2];
        for (int i = 0; i < GP_KEY_BYTES; i++)
            snprintf(hex + 2 * i, 3, "%02x", auth.key[i]);
        strcat(hex, "\n");
        uint8_t old[GP_KEY_BYTES];
        if (gp_key_load(dpath, old) != 0 ||
            memcmp(old, auth.key, GP_KEY_BYTES) != 0) {
            rc = save_key(hex);
            if (rc)
                gsrv_log(0, "cannot keep the key in the data directory: %s",
                         strerror(-rc));
        }
        memset(hex, 0, sizeof(hex));
        auth.on = true;
        return 0;
    }
    int rc = gp_key_load(dpath, auth.key);
    if (rc == 0) {
        auth.on = true;
        gsrv_log(1, "using the cluster secret kept in the data directory");
        return 0;
    }
    if (rc != -ENOENT) {
        char why[256];
        fprintf(stderr, "galleyd: the data directory's key file: %s\n",
                gp_key_problem(dpath, rc, why, sizeof(why)));
        return rc;
    }
    gsrv_log(0, "no cluster secret (--key): any local user can use this "
                "server");
    return 0;
}

bool gsrv_auth_required(void)
{
    return auth.on;
}

bool gsrv_auth_allows(const gsrv_conn *c, unsigned opcode)
{
    return !auth.on || c->auth_state == AUTH_DONE || opcode == GP_OP_AUTH ||
           opcode == GP_OP_AUTH_PROVE;
}

/* AUTH: the client's nonce in, ours out. */
int gsrv_do_AUTH(gsrv_conn *c, const gp_AUTH_req *m, gp_AUTH_rep *r,
                 gsrv_call *k)
{
    if (m->cnonce_len != GP_NONCE_BYTES)
        return GFS_EPROTO;
    if (!auth.on)
        return -EOPNOTSUPP; /* no secret here: nothing to prove */
    if (c->auth_state == AUTH_DONE)
        return -EALREADY;
    memcpy(c->auth_cnonce, m->cnonce, GP_NONCE_BYTES);
    gp_random(c->auth_snonce, GP_NONCE_BYTES);
    c->auth_state = AUTH_CHALLENGED;
    r->snonce = c->auth_snonce;
    r->snonce_len = GP_NONCE_BYTES;
    return 0;
}

/* AUTH_PROVE: the client's MAC in, ours out.  A wrong MAC ends the
 * connection (the handler closes it after the reply). */
int gsrv_do_AUTH_PROVE(gsrv_conn *c, const gp_AUTH_PROVE_req *m,
                       gp_AUTH_PROVE_rep *r, gsrv_call *k)
{
    if (m->mac_len != GP_MAC_BYTES)
        return GFS_EPROTO;
    if (!auth.on || c->auth_state != AUTH_CHALLENGED) {
        c->auth_failed = true;
        return GFS_EAUTH;
    }
    uint8_t want[GP_MAC_BYTES];
    gp_auth_mac(auth.key, GP_AUTH_CLIENT_LABEL, c->auth_cnonce, c->auth_snonce,
                want);
    if (!gp_mac_equal(want, m->mac)) {
        c->auth_state = AUTH_NONE;
        c->auth_failed = true;
        gsrv_log(0, "%s: wrong cluster secret, closing", c->peer);
        return GFS_EAUTH;
    }
    c->auth_state = AUTH_DONE;
    gp_auth_mac(auth.key, GP_AUTH_SERVER_LABEL, c->auth_snonce, c->auth_cnonce,
                want);
    r->mac = want;
    r->mac_len = GP_MAC_BYTES;
    gsrv_reply_fields(k); /* now: want is gone after the return */
    return 0;
}
