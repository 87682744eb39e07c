/*
 * repl.c -- the server's part of replicated files (libgalley/repl.c has
 * the rules): the id of this data directory, which the client keeps in a
 * file's record beside every copy, so that a server whose directory was
 * wiped and recreated is never taken for one that holds its copies.
 *
 * The id is 8 random bytes in DIR/dsid, made the first time the
 * directory is used and never changed after; REPL_ID answers it.  The
 * copies' states and the layout generation live in the file's record
 * (ns_ops.c, NS_REPL_SET).
 *
 * Threads: the id is written once at start-up, before any connection.
 */
#include "gsrv_internal.h"

#include "gauth.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DSID_FILE "dsid"

static uint64_t dsid;

int gsrv_repl_init(void)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = gsrv_meta_read(DSID_FILE, &buf, &len, 64);
    if (!rc && len == 8) {
        dsid = gp_get_u64(&(gp_rbuf){.data = buf, .len = 8});
        free(buf);
        if (dsid)
            return 0;
    }
    free(buf);
    if (rc && rc != -ENOENT)
        return rc;
    do
        gp_random(&dsid, sizeof(dsid));
    while (!dsid);
    gp_wbuf w;
    gp_wbuf_init(&w);
    gp_put_u64(&w, dsid);
    rc = w.err ? w.err : gsrv_meta_write(DSID_FILE, w.data, w.len, true);
    gp_wbuf_free(&w);
    return rc;
}

int gsrv_do_REPL_ID(gsrv_conn *c, const gp_REPL_ID_req *m, gp_REPL_ID_rep *r,
                    gsrv_call *k)
{
    r->dsid = dsid;
    return 0;
}
