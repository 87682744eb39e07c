/*
 * subfile_ops.c -- the SUB_* and FORK_* handlers except the data path
 * (io*.c): create, delete, open, reopen, close, list, size, truncate, sync;
 * and SUB_LIST, the subfile headers a server holds, for `galley fsck`
 * (libgalley/fsck.c compares them with every server's file records to
 * find orphans: headers no record names, left by an rm that a dead
 * server interrupted).
 *
 * Names (file and fork) were checked as the request was decoded (gmsg.h:
 * kind name), so no handler here checks one again.
 *
 * Threads: handler threads; locks as subfile.c explains (subtab.meta
 * around metadata changes, subtab.lock briefly for the table).
 */
#include "subfile_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A new subfile header for (name, subidx), with its first fork when fork
 * is not NULL: its hid in *out.  One value of the metadata table; the
 * subfile's directory and the fork's data file are made at its first
 * write (gsrv_fork_get), so a file created and removed unused, or only
 * read, costs the file system nothing. */
static int sub_create(const char *name, uint32_t subidx, const char *fork,
                      uint64_t *out)
{
    int rc = 0;
    gsrv_fork *f = NULL;
    if (subidx >= GFS_MAX_SUBFILES)
        return -EINVAL;

    gsrv_sub *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->filename = strdup(name);
    if (!s->filename) {
        rc = -ENOMEM;
        goto out_free_sub;
    }
    s->subidx = subidx;
    if (fork && (!(f = fork_new(0, 0, fork)) || forks_reserve(s, 1))) {
        rc = -ENOMEM;
        goto out_free_sub;
    }

    pthread_mutex_lock(&subtab.meta);
    uint64_t hid = subtab.next_hid;
    if (hid > GSRV_MAX_HID) {
        rc = -ENOSPC;
        goto out_unlock_meta;
    }
    /* the counter first: a crash later wastes ids, never reuses one */
    if (hid >= subtab.hid_limit) {
        uint64_t limit = hid + HID_BLOCK;
        rc = write_next_hid(limit);
        if (rc)
            goto out_unlock_meta;
        subtab.hid_limit = limit;
    }
    subtab.next_hid = hid + 1;
    s->hid = hid;
    if (f) {
        f->fkid = gsrv_fkid(hid, 0);
        hdr_fork v = {.idx = 0, .name = f->name, .deleted = false};
        rc = write_header(s, false, 1, &v, 1);
    } else {
        rc = write_header(s, false, 0, NULL, 0);
    }
    if (rc)
        goto out_unlock_meta;
    if (f) {
        s->forks[s->nforks++] = f; /* room reserved above */
        s->next_fork = 1;
        f = NULL;
    }
    pthread_mutex_lock(&subtab.lock);
    tab_insert(s);
    pthread_mutex_unlock(&subtab.lock);
    pthread_mutex_unlock(&subtab.meta);
    *out = hid;
    return 0;

out_unlock_meta:
    pthread_mutex_unlock(&subtab.meta);
out_free_sub:
    fork_free(f); /* never visible: nothing cached */
    sub_free(s);
    return rc;
}

int gsrv_do_SUB_CREATE(gsrv_conn *c, const gp_SUB_CREATE_req *m,
                       gp_SUB_CREATE_rep *r, gsrv_call *k)
{
    return sub_create(m->filename, m->subfile, NULL, &r->hid);
}

/* When nobody has a fork of s open there is nothing to defer, so no
 * deletion mark is needed: s goes at once (its header's unlink is the
 * commit point; a start-up removes a directory without a header), and
 * *rc is sub_destroy's result.  false (nothing done) while a fork of s is
 * open.  subtab.meta held. */
static bool delete_unopened(gsrv_sub *s, gsrv_fork **reaplist, int *rc)
{
    pthread_mutex_lock(&subtab.lock);
    bool open = false;
    for (size_t i = 0; i < s->nforks; i++)
        open |= s->forks[i]->opens > 0;
    if (!open) {
        s->deleted = true; /* (no open from now on) */
        for (size_t i = 0; i < s->nforks; i++)
            s->forks[i]->deleted = true;
    }
    pthread_mutex_unlock(&subtab.lock);
    if (!open)
        *rc = sub_destroy(s, reaplist);
    return !open;
}

/* A handler's prologue on subfile hid: take subtab.meta first when meta
 * (its header will change), then subtab.lock; find the live subfile (*s)
 * and, when name, its fork of that name (*f; NULL without one).  0,
 * GFS_ESTALE (no live subfile) or -ENOENT (no such fork); the locks are
 * held on return whatever it returns. */
static int lock_sub(uint64_t hid, bool meta, const char *name, gsrv_sub **s,
                    gsrv_fork **f)
{
    if (meta)
        pthread_mutex_lock(&subtab.meta);
    pthread_mutex_lock(&subtab.lock);
    *s = sub_find_live(hid);
    if (f)
        *f = *s && name ? fork_by_name(*s, name) : NULL;
    if (!*s)
        return GFS_ESTALE;
    return name && f && !*f ? -ENOENT : 0;
}

/* Delete subfile hid: at once when nobody has it open, else marked first
 * and removed at its last close. */
static int sub_delete(uint64_t hid)
{
    int rc = 0;
    gsrv_fork *reaplist = NULL;
    hdr_fork *v = NULL;
    gsrv_sub *s;
    rc = lock_sub(hid, true, NULL, &s, NULL);
    pthread_mutex_unlock(&subtab.lock);
    if (rc || delete_unopened(s, &reaplist, &rc))
        goto out_unlock_meta;
    pthread_mutex_lock(&subtab.lock);
    rc = image_of(s, &v);
    size_t n = s->nforks;
    pthread_mutex_unlock(&subtab.lock);
    if (rc)
        goto out_unlock_meta;
    /* mark everything, durably; then remove what nobody has open */
    for (size_t i = 0; i < n; i++)
        v[i].deleted = true;
    rc = write_header(s, true, s->next_fork, v, n);
    free(v);
    if ((rc == -ENOSPC || rc == -EDQUOT) &&
        delete_unopened(s, &reaplist, &rc)) {
        /* no room for the mark, and its last fork closed meanwhile */
        gsrv_log(1, "sub/%" PRIu64 ": disk full, removed without a mark", hid);
        goto out_unlock_meta;
    }
    if (rc)
        goto out_unlock_meta;
    pthread_mutex_lock(&subtab.lock);
    s->deleted = true;
    for (size_t i = 0; i < s->nforks; i++)
        s->forks[i]->deleted = true;
    pthread_mutex_unlock(&subtab.lock);
    int e = sub_collect(s, &reaplist);
    if (e)
        gsrv_log(0,
                 "sub/%" PRIu64 ": removal failed (%s); finished at "
                 "restart",
                 hid, gsrv_strerror(e));
out_unlock_meta:
    pthread_mutex_unlock(&subtab.meta);
    reap(reaplist);
    return rc;
}

int gsrv_do_SUB_DELETE(gsrv_conn *c, const gp_SUB_DELETE_req *m,
                       gp_SUB_DELETE_rep *r, gsrv_call *k)
{
    return sub_delete(m->hid);
}

/* Many SUB_DELETEs in one request (a client's removes, batched): their
 * log records share one commit, made before the reply (handler.c). */
int gsrv_do_SUB_DELETE_MANY(gsrv_conn *c, const gp_SUB_DELETE_MANY_req *m,
                            gp_SUB_DELETE_MANY_rep *r, gsrv_call *k)
{
    if (m->hids_len % 8)
        return -EINVAL;
    int rc = 0;
    gp_rbuf hids;
    gp_rbuf_init(&hids, m->hids, m->hids_len);
    for (uint32_t i = 0; i < m->hids_len / 8; i++) {
        int e = sub_delete(gp_get_u64(&hids));
        if (!e)
            r->deleted++;
        else if (e != GFS_ESTALE && !rc)
            rc = e; /* (every other one is still deleted) */
    }
    return rc;
}

/* A new fork of subfile m->hid. */
int gsrv_do_FORK_CREATE(gsrv_conn *c, const gp_FORK_CREATE_req *m,
                        gp_FORK_CREATE_rep *r, gsrv_call *k)
{
    uint64_t hid = m->hid;
    const char *name = m->fork;
    int rc = 0;
    hdr_fork *v = NULL;
    gsrv_fork *f = NULL;
    gsrv_sub *s;
    rc = lock_sub(hid, true, NULL, &s, NULL);
    if (!rc && fork_by_name(s, name))
        rc = -EEXIST;
    else if (!rc && s->next_fork > GSRV_MAX_FORK_INDEX)
        rc = -ENOSPC; /* every index of this subfile has been used */
    else if (!rc)
        rc = forks_reserve(s, s->nforks + 1);
    if (!rc)
        rc = image_of(s, &v);
    size_t n = s ? s->nforks : 0;
    pthread_mutex_unlock(&subtab.lock);
    if (rc)
        goto out_unlock_meta;

    uint32_t idx = s->next_fork;
    f = fork_new(hid, idx, name);
    hdr_fork *grown = f ? realloc(v, (n + 1) * sizeof(*v)) : NULL;
    if (!grown) {
        rc = -ENOMEM;
        goto out_free_fork;
    }
    v = grown;
    /* New image: the current forks plus this one (indices only grow, so it
     * goes last).  Its data file is made at its first write
     * (gsrv_fork_get): start-up finds an empty fork where there is none. */
    v[n] = (hdr_fork){.idx = idx, .name = f->name, .deleted = false};
    rc = write_header(s, false, idx + 1, v, n + 1);
    if (rc)
        goto out_free_fork;
    pthread_mutex_lock(&subtab.lock);
    s->forks[s->nforks++] = f; /* room reserved above */
    s->next_fork = idx + 1;
    pthread_mutex_unlock(&subtab.lock);
    f = NULL;
    goto out_unlock_meta;

out_free_fork:
    fork_free(f); /* never visible: nothing cached */
out_unlock_meta:
    pthread_mutex_unlock(&subtab.meta);
    free(v);
    return rc;
}

/* SUB_CREATE and FORK_CREATE in one request (a striped file's subfile and
 * its data fork): one round trip, one header written, and one wait for
 * the metadata log. */
int gsrv_do_SUB_CREATE_FORK(gsrv_conn *c, const gp_SUB_CREATE_FORK_req *m,
                            gp_SUB_CREATE_FORK_rep *r, gsrv_call *k)
{
    return sub_create(m->filename, m->subfile, m->fork, &r->hid);
}

int gsrv_do_FORK_OPEN(gsrv_conn *c, const gp_FORK_OPEN_req *m,
                      gp_FORK_OPEN_rep *r, gsrv_call *k)
{
    gsrv_sub *s;
    gsrv_fork *f;
    int rc = lock_sub(m->hid, false, m->fork, &s, &f);
    if (!rc)
        rc = gsrv_conn_add_open(c, f->fkid);
    if (!rc) {
        f->opens++;
        r->fkid = f->fkid;
        r->size = gsrv_fork_size(f);
    }
    pthread_mutex_unlock(&subtab.lock);
    gsrv_conn_note_open(c, r->fkid, rc); /* for an IO naming it (gmsg.h) */
    return rc;
}

int gsrv_do_FORK_REOPEN(gsrv_conn *c, const gp_FORK_REOPEN_req *m,
                        gp_FORK_REOPEN_rep *r, gsrv_call *k)
{
    int rc;
    uint64_t fkid = m->fkid;
    pthread_mutex_lock(&subtab.lock);
    gsrv_sub *s = sub_find(gsrv_fkid_hid(fkid));
    ssize_t pos = s ? fork_pos(s, gsrv_fkid_idx(fkid)) : -1;
    if (pos < 0) {
        rc = GFS_ESTALE;
    } else {
        /* also a marked fork: the client had it open before it lost its
         * connection, like an unlinked file a process keeps open */
        rc = gsrv_conn_add_open(c, fkid);
        if (!rc) {
            s->forks[pos]->opens++;
            r->size = gsrv_fork_size(s->forks[pos]);
        }
    }
    pthread_mutex_unlock(&subtab.lock);
    return rc;
}

int gsrv_do_FORK_CLOSE(gsrv_conn *c, const gp_FORK_CLOSE_req *m,
                       gp_FORK_CLOSE_rep *r, gsrv_call *k)
{
    int rc = gsrv_conn_drop_open(c, m->fkid);
    if (!rc)
        gsrv_fork_close(m->fkid, 1);
    return rc;
}

int gsrv_do_FORK_DELETE(gsrv_conn *c, const gp_FORK_DELETE_req *m,
                        gp_FORK_DELETE_rep *r, gsrv_call *k)
{
    gsrv_fork *reaplist = NULL;
    hdr_fork *v = NULL;
    size_t pos = 0, n = 0;
    gsrv_sub *s;
    gsrv_fork *f;
    int rc = lock_sub(m->hid, true, m->fork, &s, &f);
    if (!rc)
        rc = image_of(s, &v);
    if (!rc) {
        pos = (size_t)fork_pos(s, f->index);
        n = s->nforks;
    }
    pthread_mutex_unlock(&subtab.lock);
    if (rc)
        goto out_unlock_meta;
    /* Mark it, durably; then remove it now if nobody has it open (else at
     * its last close).  A crash in between is finished at startup. */
    v[pos].deleted = true;
    rc = write_header(s, false, s->next_fork, v, n);
    if (rc)
        goto out_unlock_meta;
    pthread_mutex_lock(&subtab.lock);
    f->deleted = true;
    pthread_mutex_unlock(&subtab.lock);
    int e = sub_collect(s, &reaplist);
    if (e)
        gsrv_log(0,
                 "fork %" PRIx64 ": removal failed (%s); finished at "
                 "restart",
                 f->fkid, gsrv_strerror(e));
out_unlock_meta:
    pthread_mutex_unlock(&subtab.meta);
    free(v);
    reap(reaplist);
    return rc;
}

typedef struct list_item {
    const char *name;
    uint64_t size, mtime;
} list_item;

static int cmp_list_item(const void *a, const void *b)
{
    return strcmp(((const list_item *)a)->name, ((const list_item *)b)->name);
}

int gsrv_do_FORK_LIST(gsrv_conn *c, const gp_FORK_LIST_req *m,
                      gp_FORK_LIST_rep *r, gsrv_call *k)
{
    gsrv_sub *s;
    int rc = lock_sub(m->hid, false, NULL, &s, NULL);
    if (rc)
        goto out_unlock;
    list_item *v = malloc((s->nforks ? s->nforks : 1) * sizeof(*v));
    if (!v) {
        rc = -ENOMEM;
        goto out_unlock;
    }
    size_t n = 0;
    for (size_t i = 0; i < s->nforks; i++)
        if (!s->forks[i]->deleted)
            v[n++] = (list_item){s->forks[i]->name, gsrv_fork_size(s->forks[i]),
                                 gsrv_fork_mtime(s->hid, s->forks[i])};
    qsort(v, n, sizeof(*v), cmp_list_item);
    r->n = (uint32_t)n;
    gp_wbuf *w = gsrv_reply_fields(k);
    for (size_t i = 0; i < n; i++)
        gp_FORK_item_encode(w, &(gp_FORK_item){.fork = v[i].name,
                                               .size = v[i].size,
                                               .mtime = v[i].mtime});
    free(v);
out_unlock:
    pthread_mutex_unlock(&subtab.lock);
    return rc;
}

/* Fork m->fork's size and time in each subfile of m->hids (stat-ahead:
 * libgalley/statahead.c). */
int gsrv_do_FORK_SIZES(gsrv_conn *c, const gp_FORK_SIZES_req *m,
                       gp_FORK_SIZES_rep *r, gsrv_call *k)
{
    if (m->hids_len % 8)
        return -EINVAL;
    gp_rbuf hids;
    gp_rbuf_init(&hids, m->hids, m->hids_len);
    r->n = m->hids_len / 8;
    gp_wbuf *w = gsrv_reply_fields(k);
    for (uint32_t i = 0; i < r->n; i++) {
        gsrv_sub *s;
        gsrv_fork *f;
        gp_SIZE_item it = {.err = 0};
        int rc = lock_sub(gp_get_u64(&hids), false, m->fork, &s, &f);
        if (!rc && f->deleted)
            rc = -ENOENT;
        if (rc) {
            it.err = rc == GFS_ESTALE ? ESTALE : ENOENT;
        } else {
            it.size = gsrv_fork_size(f);
            it.mtime = gsrv_fork_mtime(s->hid, f);
        }
        pthread_mutex_unlock(&subtab.lock);
        gp_SIZE_item_encode(w, &it);
    }
    return 0;
}

int gsrv_do_FORK_SIZE(gsrv_conn *c, const gp_FORK_SIZE_req *m,
                      gp_FORK_SIZE_rep *r, gsrv_call *k)
{
    gsrv_fork *f;
    int rc = gsrv_fork_get(m->fkid, GSRV_FORK_READ, &f);
    if (rc)
        return rc;
    r->size = gsrv_fork_size(f);
    r->mtime = gsrv_fork_mtime(gsrv_fkid_hid(f->fkid), f);
    gsrv_fork_put(f);
    return 0;
}

int gsrv_do_FORK_TRUNCATE(gsrv_conn *c, const gp_FORK_TRUNCATE_req *m,
                          gp_FORK_TRUNCATE_rep *r, gsrv_call *k)
{
    uint64_t fkid = m->fkid, size = m->size;
    if (size > GP_MAX_OFFSET)
        return -EFBIG;
    gsrv_fork *f;
    int rc = gsrv_fork_get(fkid, GSRV_FORK_WRITE, &f);
    if (rc)
        return rc;
    pthread_rwlock_wrlock(&f->rw);
    uint64_t old = gsrv_fork_size(f);
    if (ftruncate(f->fd, (off_t)size) < 0) {
        rc = -errno;
        goto out_unlock;
    }
    if (size < old)
        gsrv_cache_trim(fkid, size, old);
    gsrv_fork_set_size(f, size);
    if (f->cfd >= 0) /* its last chunk's checksum, entries past it */
        rc = gsrv_csum_truncate(f, size);
out_unlock:
    pthread_rwlock_unlock(&f->rw);
    gsrv_fork_put(f);
    return rc;
}

int gsrv_do_FORK_SYNC(gsrv_conn *c, const gp_FORK_SYNC_req *m,
                      gp_FORK_SYNC_rep *r, gsrv_call *k)
{
    char path[64];
    uint64_t fkid = m->fkid;
    gsrv_fork *f;
    int rc = gsrv_fork_get(fkid, GSRV_FORK_READ, &f);
    if (rc)
        return rc;
    /* Acknowledged writes are already in the kernel (write-through), and
     * headers are fsync'd when they change; make both durable.  No data
     * file: nothing was written to the fork. */
    if (f->fd >= 0 && fsync(f->fd) < 0)
        rc = -errno;
    gsrv_fork_put(f);
    sub_dir(gsrv_fkid_hid(fkid), path, sizeof(path));
    if (!rc) {
        rc = gsrv_dir_fsync(path);
        if (rc == -ENOENT)
            rc = 0; /* the subfile went away meanwhile */
    }
    if (!rc)
        rc = gsrv_dir_fsync("sub"); /* the subfile's directory (made with
                                     * its first file: sub_openat) */
    if (!rc) /* its header, and what else the log holds (--commit written) */
        rc = gsrv_wal_sync(NULL, NULL);
    return rc;
}

/* ----------------------------------------------------------- fsck ---- */

#define SUB_LIST_MAX 4096 /* headers per reply; the client asks again */

int gsrv_do_SUB_LIST(gsrv_conn *c, const gp_SUB_LIST_req *m, gp_SUB_LIST_rep *r,
                     gsrv_call *k)
{
    gsrv_sub_info *v;
    size_t n;
    int rc = gsrv_sub_list(m->after, SUB_LIST_MAX, &v, &n);
    if (rc)
        return rc;
    r->n = (uint32_t)n;
    gp_wbuf *w = gsrv_reply_fields(k);
    for (size_t i = 0; i < n; i++)
        gp_SUB_item_encode(w, &(gp_SUB_item){.hid = v[i].hid,
                                             .file = v[i].filename,
                                             .subfile = v[i].subidx,
                                             .deleted = v[i].deleted});
    gsrv_sub_info_free(v, n);
    return 0;
}
