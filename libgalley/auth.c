/*
 * auth.c -- the cluster secret on the client side (proto/gauth.h).
 *
 * The key is looked for once, by gfs_init: the file $GALLEY_KEY names
 * when it is set, else the cluster file's name with ".key" appended
 * (galley-cluster writes DIR/cluster.key beside DIR/cluster), else the
 * user's key ~/.galley/key (galley-cluster copies it into every cluster it
 * makes, so a cluster file put together from several clusters' lines needs
 * no key of its own).  Every program that finds its cluster finds its key.
 *
 * Having no key is not an error: a server without a secret serves anyone,
 * and one with a secret answers GFS_EAUTH.  Having a key, the client
 * proves it to every server that has one.  A key tied to the cluster (the
 * first two) is strict: every server must prove it back, so a process on a
 * port the cluster used cannot pose as one of its servers.  The user's
 * key is a fallback: a server without a secret (started by hand, with its
 * own cluster file) is still used.
 *
 * Threads: gc_auth_load / gc_auth_unload run under gc_g.lock in gfs_init /
 * gfs_finalize, before any connection exists and after the last is gone;
 * gc_auth_handshake only reads the key.
 */
#include "internal.h"

#include "gauth.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
    bool have;
    bool strict; /* the key is the cluster's: servers must prove it too */
    uint8_t key[GP_KEY_BYTES];
} auth;

static int load(const char *path)
{
    int rc = gp_key_load(path, auth.key);
    if (rc && rc != -ENOENT) {
        char why[256];
        fprintf(stderr, "galley: ignoring the key file %s: %s\n", path,
                gp_key_problem(path, rc, why, sizeof(why)));
    }
    auth.have = rc == 0;
    return rc;
}

void gc_auth_load(const char *cluster_path)
{
    char buf[4096];
    auth.have = false;
    auth.strict = true;
    const char *env = g_config_str(G_CFG_KEY);
    if (env) {
        load(env);
        return;
    }
    if (cluster_path &&
        snprintf(buf, sizeof(buf), "%s.key", cluster_path) < (int)sizeof(buf) &&
        load(buf) != -ENOENT)
        return;
    const char *home = getenv("HOME");
    if (home && home[0] &&
        snprintf(buf, sizeof(buf), "%s/.galley/key", home) < (int)sizeof(buf)) {
        auth.strict = false;
        load(buf);
    }
}

void gc_auth_unload(void)
{
    memset(auth.key, 0, sizeof(auth.key));
    auth.have = false;
}

/* Take the blob of exactly GP_NONCE_BYTES (== GP_MAC_BYTES) from an AUTH
 * or AUTH_PROVE reply. */
static int take32(uint16_t op, const uint8_t *p, uint32_t len, uint8_t out[32])
{
    gp_rbuf r;
    gp_rbuf_init(&r, p, len);
    const uint8_t *b;
    uint32_t n;
    int rc;
    if (op == GP_OP_AUTH) {
        gp_AUTH_rep m;
        rc = gp_AUTH_rep_decode(&r, &m);
        b = m.snonce;
        n = m.snonce_len;
    } else {
        gp_AUTH_PROVE_rep m;
        rc = gp_AUTH_PROVE_rep_decode(&r, &m);
        b = m.mac;
        n = m.mac_len;
    }
    if (rc || n != 32)
        return GFS_EPROTO;
    memcpy(out, b, 32);
    return 0;
}

int gc_auth_handshake(gc_auth_call call, void *arg)
{
    if (!auth.have)
        return 0; /* a server with a secret answers the next request
                   * GFS_EAUTH */
    uint8_t cn[GP_NONCE_BYTES], sn[GP_NONCE_BYTES], mac[GP_MAC_BYTES];
    uint8_t out[64];
    uint32_t outlen = 0;
    gp_wbuf w;
    gp_wbuf_init(&w);
    gp_random(cn, sizeof(cn));
    gp_AUTH_req_encode(&w,
                       &(gp_AUTH_req){.cnonce = cn, .cnonce_len = sizeof(cn)});
    int rc =
        w.err ? w.err : call(arg, GP_OP_AUTH, &w, out, sizeof(out), &outlen);
    if (rc == -EOPNOTSUPP) {
        /* a server without a secret: fine for the user's key, not for
         * the cluster's (that server is not the cluster's) */
        gp_wbuf_free(&w);
        return auth.strict ? GFS_EAUTH : 0;
    }
    if (!rc)
        rc = take32(GP_OP_AUTH, out, outlen, sn);
    if (!rc) {
        gp_wbuf_free(&w);
        gp_auth_mac(auth.key, GP_AUTH_CLIENT_LABEL, cn, sn, mac);
        gp_AUTH_PROVE_req_encode(
            &w, &(gp_AUTH_PROVE_req){.mac = mac, .mac_len = sizeof(mac)});
        rc = w.err ? w.err
                   : call(arg, GP_OP_AUTH_PROVE, &w, out, sizeof(out), &outlen);
    }
    if (!rc)
        rc = take32(GP_OP_AUTH_PROVE, out, outlen, mac);
    if (!rc) {
        uint8_t want[GP_MAC_BYTES];
        gp_auth_mac(auth.key, GP_AUTH_SERVER_LABEL, sn, cn, want);
        if (!gp_mac_equal(want, mac))
            rc = GFS_EAUTH; /* that server does not know our secret */
    }
    gp_wbuf_free(&w);
    return rc;
}
