/*
 * subfile_disk.c -- the subfile table on disk: header images and their
 * durable writes (values of the metadata table, metatab.c), the next-hid
 * counter, removal of marked forks and subfiles, and the start-up
 * recovery (gsrv_sub_init) that loads the headers, finishes deletions a
 * crash interrupted and clears DIR/sub of what no header names.
 *
 * Threads: gsrv_sub_init on the main thread before any handler starts; the
 * rest on handler threads with subtab.meta held (see subfile.c).
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

/* ---------------------------------------------------- header images ---- */

/* The header image of s as it is now (caller frees *out). */
int image_of(const gsrv_sub *s, hdr_fork **out)
{
    *out = malloc((s->nforks ? s->nforks : 1) * sizeof(**out));
    if (!*out)
        return -ENOMEM;
    for (size_t i = 0; i < s->nforks; i++) {
        (*out)[i].idx = s->forks[i]->index;
        (*out)[i].name = s->forks[i]->name;
        (*out)[i].deleted = s->forks[i]->deleted;
    }
    return 0;
}

int write_header(const gsrv_sub *s, bool deleted, uint32_t next_fork,
                 const hdr_fork *v, size_t n)
{
    gp_wbuf w;
    char path[64];

    gp_wbuf_init(&w);
    gp_put_u32(&w, SUB_MAGIC);
    gp_put_u16(&w, SUB_FORMAT);
    gp_put_u64(&w, s->hid);
    gp_put_str(&w, s->filename);
    gp_put_u32(&w, s->subidx);
    gp_put_u8(&w, deleted);
    gp_put_u32(&w, next_fork);
    gp_put_u32(&w, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        gp_put_u32(&w, v[i].idx);
        gp_put_str(&w, v[i].name);
        gp_put_u8(&w, v[i].deleted);
    }
    int rc = w.err;
    if (!rc) {
        sub_file(s->hid, "header", path, sizeof(path));
        rc = gsrv_tab_put(path, w.data, w.len);
    }
    gp_wbuf_free(&w);
    return rc;
}

int write_next_hid(uint64_t next)
{
    gp_wbuf w;
    gp_wbuf_init(&w);
    gp_put_u32(&w, HID_MAGIC);
    gp_put_u64(&w, next);
    int rc = w.err ? w.err : gsrv_meta_write("next_hid", w.data, w.len, true);
    gp_wbuf_free(&w);
    return rc;
}

/* ------------------------------------------------------- removal ---- */

static void unlink_fork_file(uint64_t hid, uint32_t idx)
{
    char path[64];
    fork_file(hid, idx, path, sizeof(path));
    if (gsrv_meta_unlink(path))
        gsrv_log(0, "%s: cannot remove: %s", path, strerror(errno));
    gsrv_csum_unlink(gsrv_fkid(hid, idx)); /* its checksums, if any */
}

/* Remove subfile s and everything in it (subtab.meta held).  The header
 * goes first: it is the commit point; a directory without one is cleaned
 * up at startup.  s is freed. */
int sub_destroy(gsrv_sub *s, gsrv_fork **reaplist)
{
    char path[64];
    uint64_t hid = s->hid;

    sub_file(hid, "header", path, sizeof(path));
    gsrv_tab_del(path);

    pthread_mutex_lock(&subtab.lock);
    size_t n = s->nforks;
    uint32_t *idx = malloc((n ? n : 1) * sizeof(*idx));
    for (size_t i = 0; idx && i < n; i++)
        idx[i] = s->forks[i]->index;
    while (s->nforks)
        fork_detach(s, s->nforks - 1, reaplist);
    tab_remove(s);
    pthread_mutex_unlock(&subtab.lock);

    /* its files, when it has a directory (one made with the first) */
    sub_dir(hid, path, sizeof(path));
    if (faccessat(gsrv_g.dfd, path, F_OK, 0) == 0) {
        if (idx) {
            for (size_t i = 0; i < n; i++)
                unlink_fork_file(hid, idx[i]);
        } /* else startup removes the leftover directory */
        sub_file(hid, "counters", path, sizeof(path));
        gsrv_meta_unlink(path);
        sub_dir(hid, path, sizeof(path));
        if (gsrv_meta_rmdir(path) < 0)
            gsrv_log(0, "%s: cannot remove: %s", path, strerror(errno));
    }
    free(idx);
    sub_free(s);
    return 0;
}

/*
 * Finish deletions in s (subtab.meta held): forks that are marked and no
 * longer open leave the header, the table and the disk; a marked subfile
 * whose forks are all gone is destroyed.  On a failed header write the
 * marks stay and the work is redone at the next close or at startup.
 */
int sub_collect(gsrv_sub *s, gsrv_fork **reaplist)
{
    hdr_fork *v = NULL;
    uint32_t *dead = NULL;
    size_t ndead = 0, n = 0;
    int rc = 0;

    pthread_mutex_lock(&subtab.lock);
    for (size_t i = 0; i < s->nforks; i++)
        ndead += s->forks[i]->deleted && s->forks[i]->opens == 0;
    if (ndead == 0 && !(s->deleted && s->nforks == 0)) {
        pthread_mutex_unlock(&subtab.lock);
        return 0;
    }
    if (s->deleted && ndead == s->nforks) {
        pthread_mutex_unlock(&subtab.lock);
        return sub_destroy(s, reaplist);
    }
    dead = malloc(ndead * sizeof(*dead));
    rc = dead ? image_of(s, &v) : -ENOMEM;
    ndead = 0;
    for (size_t i = 0; !rc && i < s->nforks; i++) {
        if (s->forks[i]->deleted && s->forks[i]->opens == 0)
            dead[ndead++] = s->forks[i]->index;
        else
            v[n++] = v[i];
    }
    pthread_mutex_unlock(&subtab.lock);
    if (rc)
        goto out_free;
    /* only holders of subtab.meta change the fork table or next_fork, so
     * the image stays valid while we write it */
    rc = write_header(s, s->deleted, s->next_fork, v, n);
    if (rc)
        goto out_free;
    pthread_mutex_lock(&subtab.lock);
    for (size_t i = 0; i < ndead; i++) {
        ssize_t pos = fork_pos(s, dead[i]);
        if (pos >= 0)
            fork_detach(s, (size_t)pos, reaplist);
    }
    pthread_mutex_unlock(&subtab.lock);
    for (size_t i = 0; i < ndead; i++)
        unlink_fork_file(s->hid, dead[i]);
out_free:
    free(v);
    free(dead);
    return rc;
}

/* ------------------------------------------------------------ load ---- */

/* gsrv_meta_scan of a subfile directory that goes: every data file. */
static int scan_remove_dat(gsrv_scan *sc, int dfd, const char *name,
                           uint64_t idx)
{
    unlinkat(dfd, name, 0);
    return 0;
}

/* gsrv_meta_scan of a subfile directory: names other than <idx>.dat and
 * temp files.  Our header and counters stay; anything else is not ours and
 * stays too, with a word in the log. */
static bool is_sidecar(const char *name)
{
    size_t n = strlen(name); /* IDX.crc: a fork's checksums (csum.c) */
    return n > 4 && strcmp(name + n - 4, ".crc") == 0;
}

static int scan_sub_other(gsrv_scan *sc, int dfd, const char *name)
{
    if (strcmp(name, "header") != 0 && strcmp(name, "counters") != 0 &&
        !is_sidecar(name))
        gsrv_log(0, "%s/%s: unknown file left in place", sc->dir, name);
    return 0;
}

/* The same for a subfile directory that goes: header and counters too. */
static int scan_remove_other(gsrv_scan *sc, int dfd, const char *name)
{
    if (strcmp(name, "header") == 0 || strcmp(name, "counters") == 0 ||
        is_sidecar(name))
        unlinkat(dfd, name, 0);
    return scan_sub_other(sc, dfd, name);
}

/* Remove a subfile we own: its header, our files only, then the
 * directory (if it has one). */
static void remove_sub_dir(uint64_t hid)
{
    char path[64];
    sub_file(hid, "header", path, sizeof(path));
    gsrv_tab_del(path);
    sub_dir(hid, path, sizeof(path));
    gsrv_scan sc = {.dir = path,
                    .suffix = ".dat",
                    .remove_tmp = true,
                    .numbered = scan_remove_dat,
                    .other = scan_remove_other};
    if (gsrv_meta_scan(&sc))
        return; /* (-ENOENT: no directory) */
    if (unlinkat(gsrv_g.dfd, path, AT_REMOVEDIR) < 0)
        gsrv_log(0, "%s: cannot remove: %s", path, strerror(errno));
}

/* gsrv_meta_scan of a loaded subfile's directory (sc->arg is the
 * gsrv_sub): data of forks whose removal was interrupted goes. */
static int scan_stray_dat(gsrv_scan *sc, int dfd, const char *name,
                          uint64_t idx)
{
    gsrv_sub *s = sc->arg;
    if (idx > GSRV_MAX_FORK_INDEX || fork_pos(s, (uint32_t)idx) < 0)
        unlinkat(dfd, name, 0);
    return 0;
}

/* The forks a header image v[0..n) names, into s->forks with their sizes;
 * a missing data file is an empty fork.  *dirty: some are marked
 * deleted (not loaded: the header must be rewritten without them). */
static int load_forks(gsrv_sub *s, const hdr_fork *v, uint32_t n, bool *dirty)
{
    uint64_t hid = s->hid;
    for (uint32_t i = 0; i < n; i++) {
        char fpath[64];
        struct stat st;
        fork_file(hid, v[i].idx, fpath, sizeof(fpath));
        if (v[i].deleted) {
            /* nobody has it open after a restart: finish the deletion */
            *dirty = true;
            continue;
        }
        gsrv_fork *f = fork_new(hid, v[i].idx, v[i].name);
        if (!f)
            return -ENOMEM;
        s->forks[s->nforks++] = f;
        if (fstatat(gsrv_g.dfd, fpath, &st, 0) == 0) {
            f->size = (uint64_t)st.st_size;
            continue;
        }
        if (errno != ENOENT)
            return -errno;
        /* no data file: an empty fork, never written since its create
         * (its file is made at the first write: gsrv_fork_get), or one a
         * machine crash took the file's entry from before a FORK_SYNC */
    }
    return 0;
}

/* The rest of loading subfile s, its forks in place: the header rewritten
 * without the forks marked deleted (dirty), the counters, files the header
 * does not name cleared out.  0 or an error (-ENOMEM, or the rewrite's or
 * the scan's). */
static int load_sub_finish(gsrv_sub *s, bool dirty)
{
    char path[64];
    int rc;

    if (dirty) {
        hdr_fork *live;
        rc = image_of(s, &live);
        if (!rc) {
            rc = write_header(s, false, s->next_fork, live, s->nforks);
            free(live);
        }
        if (rc)
            return rc;
    }
    rc = load_counters(s);
    if (rc == -ENOMEM)
        return rc;
    if (rc) {
        gsrv_log(0, "sub/%" PRIu64 "/counters: %s, counters start at 0", s->hid,
                 rc == GFS_EPROTO ? "corrupt" : gsrv_strerror(rc));
    }

    /* Files the header does not name: temp files, data of forks whose
     * removal was interrupted. */
    sub_dir(s->hid, path, sizeof(path));
    gsrv_scan sc = {.dir = path,
                    .suffix = ".dat",
                    .remove_tmp = true,
                    .numbered = scan_stray_dat,
                    .other = scan_sub_other,
                    .arg = s};
    rc = gsrv_meta_scan(&sc);
    return rc == -ENOENT ? 0 : rc; /* no directory: no file written yet */
}

/* Load one subfile from its header.  Returns 0 (loaded or cleaned up)
 * or an error for a header we cannot read (left alone). */
static int load_sub(uint64_t hid)
{
    char path[64], name[GFS_NAME_MAX + 1];
    uint8_t *buf = NULL;
    size_t len;
    gp_rbuf r;
    gsrv_sub *s = NULL;
    hdr_fork *v = NULL;
    char **names = NULL;
    uint32_t n = 0;

    sub_file(hid, "header", path, sizeof(path));
    int rc = gsrv_tab_get(path, &buf, &len);
    if (rc)
        return rc;

    gp_rbuf_init(&r, buf, len);
    uint32_t magic = gp_get_u32(&r);
    uint16_t fmt = gp_get_u16(&r);
    uint64_t fhid = gp_get_u64(&r);
    gp_get_str(&r, name, GFS_NAME_MAX);
    uint32_t subidx = gp_get_u32(&r);
    uint8_t deleted = gp_get_u8(&r);
    uint32_t next_fork = gp_get_u32(&r);
    n = gp_get_u32(&r);
    if (r.err || magic != SUB_MAGIC || fmt != SUB_FORMAT || fhid != hid ||
        n > GSRV_MAX_FORK_INDEX + 1 || next_fork > GSRV_MAX_FORK_INDEX + 1) {
        rc = GFS_EPROTO;
        goto out_free;
    }
    if (deleted) {
        gsrv_log(1, "sub/%" PRIu64 ": finishing deletion", hid);
        remove_sub_dir(hid);
        goto out_free;
    }
    v = calloc(n ? n : 1, sizeof(*v));
    names = calloc(n ? n : 1, sizeof(*names));
    s = calloc(1, sizeof(*s));
    if (!v || !names || !s) {
        rc = -ENOMEM;
        goto out_free;
    }
    for (uint32_t i = 0; i < n; i++) {
        char fname[GFS_FORK_NAME_MAX + 1];
        v[i].idx = gp_get_u32(&r);
        gp_get_str(&r, fname, GFS_FORK_NAME_MAX);
        v[i].deleted = gp_get_u8(&r);
        if (r.err || !fname[0] || v[i].idx >= next_fork ||
            (i && v[i].idx <= v[i - 1].idx)) {
            rc = GFS_EPROTO;
            goto out_free;
        }
        names[i] = strdup(fname);
        if (!names[i]) {
            rc = -ENOMEM;
            goto out_free;
        }
        v[i].name = names[i];
    }
    if (!gp_done(&r)) {
        rc = GFS_EPROTO;
        goto out_free;
    }

    s->hid = hid;
    s->subidx = subidx;
    s->next_fork = next_fork;
    s->filename = strdup(name);
    if (!s->filename || forks_reserve(s, n)) {
        rc = -ENOMEM;
        goto out_free;
    }
    bool dirty = false;
    rc = load_forks(s, v, n, &dirty);
    if (rc)
        goto out_free;
    rc = load_sub_finish(s, dirty);
    if (rc)
        goto out_free;
    tab_insert(s);
    s = NULL;

out_free:
    if (s) {
        for (size_t i = 0; i < s->nforks; i++)
            fork_free(s->forks[i]);
        sub_free(s);
    }
    for (uint32_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
    free(v);
    free(buf);
    return rc;
}

typedef struct sub_scan_state {
    uint64_t maxhid; /* the largest subfile hid seen */
    size_t nbad;     /* headers we could not read */
    uint64_t *dirs;  /* the subfile directories found */
    size_t ndirs, capdirs;
} sub_scan_state;

/* gsrv_meta_scan of sub/: anything but a subfile directory. */
static int scan_not_sub(gsrv_scan *sc, int dfd, const char *name)
{
    gsrv_log(0, "sub/%s: not a subfile directory, ignored", name);
    return 0;
}

/* gsrv_meta_scan of sub/: sub/<hid>, one subfile's directory; the header
 * file of a data directory from before the metadata table goes into the
 * table. */
static int scan_sub(gsrv_scan *sc, int dfd, const char *name, uint64_t hid)
{
    sub_scan_state *st = sc->arg;
    char path[64];
    if (hid == 0 || hid > GSRV_MAX_HID)
        return scan_not_sub(sc, dfd, name);
    if (hid > st->maxhid)
        st->maxhid = hid;
    if (st->ndirs == st->capdirs) {
        size_t cap = st->capdirs ? 2 * st->capdirs : 256;
        uint64_t *v = realloc(st->dirs, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        st->dirs = v;
        st->capdirs = cap;
    }
    st->dirs[st->ndirs++] = hid;
    sub_file(hid, "header", path, sizeof(path));
    int e = gsrv_tab_import(path);
    if (e == -ENOMEM)
        return e;
    if (e && e != -ENOENT)
        gsrv_log(0, "%s: %s (left in place)", path, gsrv_strerror(e));
    return 0;
}

/* gsrv_tab_each over "sub/": "sub/<hid>/header", one subfile. */
static int load_key(const char *key, void *arg)
{
    sub_scan_state *st = arg;
    uint64_t hid;
    const char *slash = strchr(key + 4, '/');
    if (!slash || strcmp(slash, "/header") != 0 ||
        !gsrv_parse_u64(key + 4, (size_t)(slash - key - 4), &hid) || hid == 0 ||
        hid > GSRV_MAX_HID) {
        gsrv_log(0, "%s: not a subfile header, ignored", key);
        return 0;
    }
    if (hid > st->maxhid)
        st->maxhid = hid;
    int e = load_sub(hid);
    if (e == -ENOMEM)
        return e;
    if (e) {
        st->nbad++;
        gsrv_log(0,
                 "sub/%" PRIu64 "/header: %s; subfile not served "
                 "(left in place for inspection)",
                 hid, e == GFS_EPROTO ? "corrupt" : gsrv_strerror(e));
    }
    return 0;
}

int gsrv_sub_init(void)
{
    int rc;
    uint8_t *buf;
    size_t len;

    if (mkdirat(gsrv_g.dfd, "sub", 0755) < 0 && errno != EEXIST)
        return -errno;
    rc = tab_init();
    if (rc)
        return rc;
    gsrv_meta_unlink("next_hid.tmp");
    subtab.next_hid = 1;
    rc = gsrv_meta_read("next_hid", &buf, &len, 64);
    if (rc == 0) {
        gp_rbuf r;
        gp_rbuf_init(&r, buf, len);
        uint32_t magic = gp_get_u32(&r);
        uint64_t next = gp_get_u64(&r);
        if (gp_done(&r) && magic == HID_MAGIC && next > 0)
            subtab.next_hid = next;
        else
            gsrv_log(0, "next_hid: unreadable, recomputed from sub/");
        free(buf);
    } else if (rc != -ENOENT) {
        return rc;
    }
    /* the directories (importing old header files), the headers, then
     * the directories no header names: the remains of an interrupted
     * create or delete */
    sub_scan_state st = {0};
    gsrv_scan sc = {.dir = "sub",
                    .suffix = "",
                    .remove_tmp = false,
                    .numbered = scan_sub,
                    .other = scan_not_sub,
                    .arg = &st};
    rc = gsrv_meta_scan(&sc);
    if (!rc)
        rc = gsrv_tab_each("sub/", load_key, &st);
    for (size_t i = 0; !rc && i < st.ndirs; i++) {
        char path[64];
        sub_file(st.dirs[i], "header", path, sizeof(path));
        if (gsrv_tab_has(path))
            continue; /* loaded, or an unreadable header left in place */
        sub_dir(st.dirs[i], path, sizeof(path));
        if (faccessat(gsrv_g.dfd, path, F_OK, 0) < 0)
            continue; /* a deletion finished above */
        gsrv_log(1,
                 "sub/%" PRIu64 ": no header (interrupted create or "
                 "delete), removed",
                 st.dirs[i]);
        remove_sub_dir(st.dirs[i]);
    }
    free(st.dirs);
    if (rc)
        return rc;
    if (subtab.next_hid <= st.maxhid)
        subtab.next_hid = st.maxhid + 1;
    subtab.hid_limit = subtab.next_hid; /* the next create reserves a block */
    gsrv_log(1, "subfiles: %zu loaded, %zu unreadable, next hid %" PRIu64,
             subtab.tab.n, st.nbad, subtab.next_hid);
    return 0;
}
