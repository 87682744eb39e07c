/*
 * metatab.c -- the metadata table: the NameServer's records and the
 * subfile headers, kept as named values in memory, in one table file and
 * in the metadata log, rather than as one small file each (after
 * GekkoFS, which keeps its metadata in RocksDB rather than in the file
 * system).
 *
 * Threads: gsrv_tab_load and the start-up scans on the main thread before
 * any handler starts; put, del and get on handler threads with the
 * value's owner lock held (ns.lock for a record, subtab.meta for a
 * header), so each key has one writer at a time and its changes reach
 * the log in the order they were made; gsrv_tab_save from the log's
 * leader (wal.c checkpoint) at any time.  tab.lock is a leaf lock.
 *
 * Why.  A file or directory costs the file system an inode to make and
 * another to free, and ext4's inode allocator bounds create and remove
 * when each one makes or frees a file (bench/mdbench).  A value here
 * costs a log record.
 *
 * The scheme.  A key is the relative path the value had as a file
 * ("ns/<id>.rec", "sub/<hid>/header"), so log lines and messages name
 * the same thing as before.  The values are
 *   - in memory (this table: every read is served from it);
 *   - in DIR/meta.tab, the table as it was at the last checkpoint:
 *     magic, format, count, then (key, value) pairs, then the FNV-1a of
 *     all that; replaced as a whole (written, fsync'd, renamed, directory
 *     fsync'd), so it is always one whole table;
 *   - in the metadata log (wal.c, ops TPUT and TDEL), every change since.
 * Start-up loads DIR/meta.tab, then the log is replayed into the table,
 * then the start-up scans run (they may import the files of a data
 * directory written before this table, and finish interrupted deletes),
 * and the table is saved before the log is emptied.  A checkpoint saves
 * the table, and only then empties the log.  A table file that does not
 * decode stops galleyd from starting (it is left in place): serving
 * without it would serve an empty file system.
 */
#include "gsrv_internal.h"
#include "fnv.h"
#include "htable.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define TAB_FILE "meta.tab"
#define TAB_MAGIC 0x42415447u /* "GTAB" */
#define TAB_FORMAT 1
#define TAB_MAX_FILE (1ull << 32) /* a larger table file is refused */

typedef struct tab_ent {
    gsrv_hlink link;
    char *key;
    uint8_t *val;
    uint32_t len;
} tab_ent;

static struct {
    pthread_mutex_t lock;
    gsrv_htable ht;
    uint64_t bytes;  /* keys and values: about the table file's size */
    bool dirty;      /* changed while not logging: save before logging */
    char **imported; /* files whose values were imported: unlinked once */
    size_t nimported, capimported; /* the table that holds them is saved */
} tab = {.lock = PTHREAD_MUTEX_INITIALIZER};

static tab_ent *find(const char *key, uint64_t h)
{
    for (gsrv_hlink *l = gsrv_ht_chain(&tab.ht, h); l; l = l->next) {
        tab_ent *e = GSRV_HT_ENTRY(l, tab_ent, link);
        if (l->hash == h && strcmp(e->key, key) == 0)
            return e;
    }
    return NULL;
}

static void ent_free(tab_ent *e)
{
    free(e->key);
    free(e->val);
    free(e);
}

/* Set key to a copy of val[0..len) (tab.lock held).  0 or -ENOMEM. */
static int put_locked(const char *key, const void *val, size_t len)
{
    uint64_t h = g_fnv1a(key);
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, val, len);
    tab_ent *e = find(key, h);
    if (e) {
        tab.bytes -= e->len;
        free(e->val);
    } else {
        e = calloc(1, sizeof(*e));
        char *k = e ? strdup(key) : NULL;
        if (!k) {
            free(e);
            free(copy);
            return -ENOMEM;
        }
        e->key = k;
        gsrv_ht_insert(&tab.ht, &e->link, h);
        tab.bytes += strlen(key) + 16;
    }
    e->val = copy;
    e->len = (uint32_t)len;
    tab.bytes += len;
    return 0;
}

static void del_locked(const char *key)
{
    tab_ent *e = find(key, g_fnv1a(key));
    if (!e)
        return;
    gsrv_ht_remove(&tab.ht, &e->link);
    tab.bytes -= e->len + strlen(e->key) + 16;
    ent_free(e);
}

int gsrv_tab_put(const char *key, const void *val, size_t len)
{
    if (len > GSRV_MAX_META_FILE)
        return -EFBIG;
    pthread_mutex_lock(&tab.lock);
    int rc = put_locked(key, val, len);
    if (!rc && !gsrv_wal_on())
        tab.dirty = true;
    pthread_mutex_unlock(&tab.lock);
    if (!rc)
        gsrv_wal_log(GSRV_WAL_TPUT, key, val, len); /* (no-op before start) */
    return rc;
}

void gsrv_tab_del(const char *key)
{
    pthread_mutex_lock(&tab.lock);
    del_locked(key);
    if (!gsrv_wal_on())
        tab.dirty = true;
    pthread_mutex_unlock(&tab.lock);
    gsrv_wal_log(GSRV_WAL_TDEL, key, NULL, 0);
}

int gsrv_tab_get(const char *key, uint8_t **val, size_t *len)
{
    *val = NULL;
    *len = 0;
    pthread_mutex_lock(&tab.lock);
    tab_ent *e = find(key, g_fnv1a(key));
    int rc = e ? 0 : -ENOENT;
    if (e) {
        *val = malloc(e->len ? e->len : 1);
        if (*val) {
            memcpy(*val, e->val, e->len);
            *len = e->len;
        } else {
            rc = -ENOMEM;
        }
    }
    pthread_mutex_unlock(&tab.lock);
    return rc;
}

bool gsrv_tab_has(const char *key)
{
    pthread_mutex_lock(&tab.lock);
    bool has = find(key, g_fnv1a(key)) != NULL;
    pthread_mutex_unlock(&tab.lock);
    return has;
}

uint64_t gsrv_tab_bytes(void)
{
    pthread_mutex_lock(&tab.lock);
    uint64_t n = tab.bytes;
    pthread_mutex_unlock(&tab.lock);
    return n;
}

static int cmp_key(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int gsrv_tab_each(const char *prefix, int (*fn)(const char *key, void *arg),
                  void *arg)
{
    size_t pl = strlen(prefix), n = 0;
    int rc = 0;
    pthread_mutex_lock(&tab.lock);
    char **keys = malloc((tab.ht.n ? tab.ht.n : 1) * sizeof(*keys));
    gsrv_ht_iter it = {0};
    for (gsrv_hlink *l; keys && (l = gsrv_ht_next(&tab.ht, &it));) {
        tab_ent *e = GSRV_HT_ENTRY(l, tab_ent, link);
        if (strncmp(e->key, prefix, pl) != 0)
            continue;
        if (!(keys[n] = strdup(e->key))) {
            rc = -ENOMEM;
            break;
        }
        n++;
    }
    pthread_mutex_unlock(&tab.lock);
    if (!keys)
        return -ENOMEM;
    /* in key order, a copy: fn may change the table */
    qsort(keys, n, sizeof(*keys), cmp_key);
    for (size_t i = 0; !rc && i < n; i++)
        rc = fn(keys[i], arg);
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    return rc;
}

int gsrv_tab_import(const char *path)
{
    uint8_t *buf;
    size_t len;
    int rc = gsrv_meta_read(path, &buf, &len, GSRV_MAX_META_FILE);
    if (rc)
        return rc;
    char *copy = strdup(path);
    pthread_mutex_lock(&tab.lock);
    if (copy && tab.nimported == tab.capimported) {
        size_t cap = tab.capimported ? 2 * tab.capimported : 64;
        char **v = realloc(tab.imported, cap * sizeof(*v));
        if (v) {
            tab.imported = v;
            tab.capimported = cap;
        }
    }
    if (!copy || tab.nimported == tab.capimported)
        rc = -ENOMEM;
    if (!rc)
        rc = put_locked(path, buf, len);
    if (!rc) {
        tab.imported[tab.nimported++] = copy;
        copy = NULL;
        tab.dirty = true;
    }
    pthread_mutex_unlock(&tab.lock);
    free(copy);
    free(buf);
    return rc;
}

/* ------------------------------------------------------- the file ---- */

int gsrv_tab_load(void)
{
    uint8_t *buf;
    size_t len;
    char key[256];

    int rc = gsrv_ht_init(&tab.ht, 1024, true);
    if (rc)
        return rc;
    gsrv_meta_unlink(TAB_FILE ".tmp");
    rc = gsrv_meta_read(TAB_FILE, &buf, &len, TAB_MAX_FILE);
    if (rc == -ENOENT)
        return 0; /* a new data directory, or one from before the table */
    if (rc) {
        gsrv_log(0, "%s: %s", TAB_FILE, gsrv_strerror(rc));
        return rc;
    }
    gp_rbuf r;
    gp_rbuf_init(&r, buf, len >= 8 ? len - 8 : 0);
    uint32_t magic = gp_get_u32(&r);
    uint16_t fmt = gp_get_u16(&r);
    uint64_t n = gp_get_u64(&r);
    gp_rbuf t; /* the sum, the last 8 bytes */
    gp_rbuf_init(&t, len >= 8 ? buf + len - 8 : buf, len >= 8 ? 8 : 0);
    uint64_t sum = gp_get_u64(&t);
    if (r.err || t.err || magic != TAB_MAGIC || fmt != TAB_FORMAT ||
        g_fnv1a_bytes(buf, len - 8) != sum)
        rc = GFS_EPROTO;
    for (uint64_t i = 0; !rc && i < n; i++) {
        uint32_t vlen;
        gp_get_str(&r, key, sizeof(key) - 1);
        const uint8_t *v = gp_get_blob(&r, &vlen, GSRV_MAX_META_FILE);
        if (r.err)
            rc = GFS_EPROTO;
        else
            rc = put_locked(key, v, vlen);
    }
    if (!rc && !gp_done(&r))
        rc = GFS_EPROTO;
    free(buf);
    if (rc == GFS_EPROTO)
        gsrv_log(0,
                 "%s: corrupt (checksum or format); not served, left in "
                 "place: restore it from a backup or move it away",
                 TAB_FILE);
    else if (!rc)
        gsrv_log(1, "%s: %" PRIu64 " values", TAB_FILE, n);
    return rc;
}

int gsrv_tab_save(void)
{
    gp_wbuf w;
    gp_wbuf_init(&w);
    pthread_mutex_lock(&tab.lock);
    gp_put_u32(&w, TAB_MAGIC);
    gp_put_u16(&w, TAB_FORMAT);
    gp_put_u64(&w, tab.ht.n);
    gsrv_ht_iter it = {0};
    for (gsrv_hlink *l; (l = gsrv_ht_next(&tab.ht, &it));) {
        tab_ent *e = GSRV_HT_ENTRY(l, tab_ent, link);
        gp_put_str(&w, e->key);
        gp_put_blob(&w, e->val, e->len);
    }
    bool was_dirty = tab.dirty;
    tab.dirty = false;
    pthread_mutex_unlock(&tab.lock);
    gp_put_u64(&w, g_fnv1a_bytes(w.data, w.len));
    int rc = w.err ? w.err : gsrv_meta_replace(TAB_FILE, w.data, w.len);
    gp_wbuf_free(&w);
    pthread_mutex_lock(&tab.lock);
    if (rc)
        tab.dirty |= was_dirty;
    /* the files imported are in a durable table now */
    for (size_t i = 0; !rc && i < tab.nimported; i++)
        gsrv_meta_unlink(tab.imported[i]);
    for (size_t i = 0; !rc && i < tab.nimported; i++)
        free(tab.imported[i]);
    if (!rc)
        tab.nimported = 0;
    pthread_mutex_unlock(&tab.lock);
    return rc;
}

bool gsrv_tab_dirty(void)
{
    pthread_mutex_lock(&tab.lock);
    bool d = tab.dirty;
    pthread_mutex_unlock(&tab.lock);
    return d;
}

void gsrv_tab_fini(void)
{
    gsrv_ht_iter it = {0};
    for (gsrv_hlink *l; (l = gsrv_ht_next(&tab.ht, &it));) {
        tab_ent *e = GSRV_HT_ENTRY(l, tab_ent, link);
        gsrv_ht_remove(&tab.ht, l);
        ent_free(e);
    }
    gsrv_ht_fini(&tab.ht);
    for (size_t i = 0; i < tab.nimported; i++)
        free(tab.imported[i]);
    free(tab.imported);
    tab.imported = NULL;
    tab.nimported = tab.capimported = 0;
    tab.bytes = 0;
}
