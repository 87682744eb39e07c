/*
 * fsck.c -- SUB_LIST: the subfile headers a server holds, for `galley
 * fsck` (libgalley/fsck.c), which compares them with the file records of
 * every server to find orphans (headers no record names: left by an rm
 * that a dead server interrupted) and dangling records.
 *
 * Threads: handler threads.  Locks: subtab.lock inside gsrv_sub_list.
 */
#include "gsrv_internal.h"

#include <errno.h>

#define SUB_LIST_MAX 4096 /* headers per reply; the client asks again */

int gsrv_op_SUB_LIST(gsrv_conn *c, gp_rbuf *req, gsrv_reply *rep)
{
    uint64_t after = gp_get_u64(req);
    int rc = gsrv_decoded(req);
    if (rc)
        return rc;
    gsrv_sub_info *v;
    size_t n;
    rc = gsrv_sub_list(after, SUB_LIST_MAX, &v, &n);
    if (rc)
        return rc;
    gp_put_u32(&rep->w, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        gp_put_u64(&rep->w, v[i].hid);
        gp_put_str(&rep->w, v[i].filename);
        gp_put_u32(&rep->w, v[i].subidx);
        gp_put_u8(&rep->w, v[i].deleted);
    }
    gsrv_sub_info_free(v, n);
    return 0;
}
