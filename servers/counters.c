/*
 * counters.c -- a subfile's named counters: FETCH_ADD and FETCH_SET, and
 * the counters file they live in (DIR/sub/HID/counters), loaded at start-up
 * by subfile_disk.c.
 *
 * Threads: handler threads, and the main thread at start-up.  Counters are
 * touched only under subtab.meta (see subfile.c).
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

/* Rewrite the counters file path in place with buf[0..len), when it has
 * exactly len bytes: its blocks are allocated already, so this needs no
 * free space.  Used on a full disk only; like a replace, it survives
 * kill -9 (one pwrite) and is not fsync'd. */
static int overwrite_counters(const char *path, const void *buf, size_t len,
                              int why)
{
    int fd = openat(gsrv_g.dfd, path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return why;
    struct stat st;
    int rc = why; /* a different length needs the space it could not get */
    if (fstat(fd, &st) == 0 && (uint64_t)st.st_size == len) {
        ssize_t n = pwrite(fd, buf, len, 0);
        rc = n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
    }
    close(fd);
    return rc;
}

static int write_counters(const gsrv_sub *s, const sub_counter *c, size_t n)
{
    gp_wbuf w;
    char path[64];

    gp_wbuf_init(&w);
    gp_put_u32(&w, CTR_MAGIC);
    gp_put_u16(&w, SUB_FORMAT);
    gp_put_u32(&w, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        gp_put_str(&w, c[i].key);
        gp_put_u64(&w, c[i].value);
    }
    int rc = w.err;
    if (!rc) {
        sub_file(s->hid, "counters", path, sizeof(path));
        /* survives kill -9 (rename is atomic); no fsync per operation */
        rc = gsrv_meta_write(path, w.data, w.len, false);
        if (rc == -ENOENT && !(rc = sub_dir_make(s->hid))) /* the first file */
            rc = gsrv_meta_write(path, w.data, w.len, false);
        if (rc == -ENOSPC || rc == -EDQUOT) /* a value changed, no key added */
            rc = overwrite_counters(path, w.data, w.len, rc);
    }
    gp_wbuf_free(&w);
    return rc;
}

/* FETCH_ADD (set false: add delta) and FETCH_SET (set: replace by delta),
 * one body: counters hold 0 .. INT64_MAX (gproto.h).  The value before
 * in *old. */
static int fetch_op(uint64_t hid, const char *key, uint64_t delta, bool set,
                    uint64_t *old);

int gsrv_do_FETCH_ADD(gsrv_conn *c, const gp_FETCH_ADD_req *m,
                      gp_FETCH_ADD_rep *r, gsrv_call *k)
{
    return fetch_op(m->hid, m->key, m->delta, false, &r->old);
}

int gsrv_do_FETCH_SET(gsrv_conn *c, const gp_FETCH_SET_req *m,
                      gp_FETCH_SET_rep *r, gsrv_call *k)
{
    return fetch_op(m->hid, m->key, m->value, true, &r->old);
}

static int fetch_op(uint64_t hid, const char *key, uint64_t delta, bool set,
                    uint64_t *oldp)
{
    int rc = 0;
    if (set && delta > (uint64_t)INT64_MAX)
        return -ERANGE;
    if (!key[0])
        return -EINVAL;

    /* Counters are touched only under subtab.meta (here, load, destroy). */
    uint64_t old = 0, value = 0;
    pthread_mutex_lock(&subtab.meta);
    pthread_mutex_lock(&subtab.lock);
    gsrv_sub *s = sub_find_live(hid);
    pthread_mutex_unlock(&subtab.lock);
    if (!s) {
        rc = GFS_ESTALE;
        goto out_unlock_meta;
    }
    size_t i;
    for (i = 0; i < s->nctr; i++)
        if (strcmp(s->ctr[i].key, key) == 0)
            break;
    old = i < s->nctr ? s->ctr[i].value : 0; /* a new key starts at 0 */
    if (set) {
        value = delta;
    } else {
        /* stay within 0 .. INT64_MAX (a value from an older server past
         * it is left alone: only adds that bring it back are taken) */
        int64_t d = (int64_t)delta;
        if (d < 0 ? old < (uint64_t) - (d + 1) + 1
                  : old > (uint64_t)INT64_MAX - (uint64_t)d) {
            rc = -ERANGE;
            goto out_unlock_meta;
        }
        value = old + delta; /* in range: no wrap */
    }
    /* Nothing changes (an MPI open setting the shared file pointer to the
     * 0 it holds, an add of 0): nothing is written, so this needs no disk
     * space; a new key is not kept either, 0 being what an absent key
     * means. */
    if (value == old)
        goto out_unlock_meta;
    if (i == s->nctr) {
        if (s->nctr >= GSRV_MAX_COUNTERS) {
            rc = -ENOSPC;
            goto out_unlock_meta;
        }
        sub_counter *grown = realloc(s->ctr, (s->nctr + 1) * sizeof(*grown));
        if (!grown) {
            rc = -ENOMEM;
            goto out_unlock_meta;
        }
        s->ctr = grown;
        s->ctr[i].key = strdup(key);
        if (!s->ctr[i].key) {
            rc = -ENOMEM;
            goto out_unlock_meta;
        }
        s->ctr[i].value = 0;
        s->nctr++;
    }
    s->ctr[i].value = value;
    rc = write_counters(s, s->ctr, s->nctr);
    if (rc)
        s->ctr[i].value = old; /* a new key stays at 0: same meaning */
out_unlock_meta:
    pthread_mutex_unlock(&subtab.meta);
    *oldp = old;
    return rc;
}

int load_counters(gsrv_sub *s)
{
    char path[64];
    uint8_t *buf;
    size_t len;
    gp_rbuf r;

    sub_file(s->hid, "counters", path, sizeof(path));
    int rc = gsrv_meta_read(path, &buf, &len, GSRV_MAX_META_FILE);
    if (rc == -ENOENT)
        return 0;
    if (rc)
        return rc;
    gp_rbuf_init(&r, buf, len);
    uint32_t magic = gp_get_u32(&r);
    uint16_t fmt = gp_get_u16(&r);
    uint32_t n = gp_get_u32(&r);
    if (r.err || magic != CTR_MAGIC || fmt != SUB_FORMAT ||
        n > GSRV_MAX_COUNTERS) {
        rc = GFS_EPROTO;
        goto out_free_buf;
    }
    s->ctr = calloc(n ? n : 1, sizeof(*s->ctr));
    if (!s->ctr) {
        rc = -ENOMEM;
        goto out_free_buf;
    }
    for (uint32_t i = 0; i < n; i++) {
        char key[GFS_NAME_MAX + 1];
        gp_get_str(&r, key, GFS_NAME_MAX);
        uint64_t v = gp_get_u64(&r);
        if (r.err || !key[0])
            break;
        s->ctr[i].key = strdup(key);
        if (!s->ctr[i].key) {
            rc = -ENOMEM;
            goto out_free_buf;
        }
        s->ctr[i].value = v;
        s->nctr++;
    }
    if (!gp_done(&r))
        rc = GFS_EPROTO;
out_free_buf:
    free(buf);
    return rc;
}
