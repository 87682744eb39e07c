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
    gp_SUB_LIST_req m;
    int rc = gp_SUB_LIST_req_decode(req, &m);
    if (rc)
        return rc;
    gsrv_sub_info *v;
    size_t n;
    rc = gsrv_sub_list(m.after, SUB_LIST_MAX, &v, &n);
    if (rc)
        return rc;
    gp_SUB_LIST_rep_encode(&rep->w, &(gp_SUB_LIST_rep){.n = (uint32_t)n});
    gp_SUB_item it;
    for (size_t i = 0; i < n; i++) {
        it.hid = v[i].hid;
        it.file = v[i].filename;
        it.subfile = v[i].subidx;
        it.deleted = v[i].deleted;
        gp_SUB_item_encode(&rep->w, &it);
    }
    gsrv_sub_info_free(v, n);
    return 0;
}
