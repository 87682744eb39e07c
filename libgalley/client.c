/*
 * client.c -- the bottom of libgalley: the process-wide client state
 * (gc_g: connections, settings, reference count), the file and fork id
 * tables, error messages, name hashing, a record's attribute text.  It
 * calls nothing above it; filling and emptying this state at gfs_init /
 * gfs_finalize is lifecycle.c's.
 *
 * Threads: any.  gc_g.lock guards the tables and the reference count; it
 * is never held across a network call (conn.c may call gc_open_handles
 * while reconnecting, which takes gc_g.lock briefly).
 */
#include "internal.h"
#include "fnv.h"
#include "gerror.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gc_client gc_g = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .files = GC_IDTAB_INIT(&gc_g.lock, gc_file *, GC_KIND_FILE, 16),
    .forks = GC_IDTAB_INIT(&gc_g.lock, gc_fork, GC_KIND_FORK, 64),
};

/* ------------------------------------------------------------ errors --- */

/* The one lookup lives in proto/gerror.c (the array library uses it too). */
const char *gfs_strerror(int err)
{
    return gp_strerror(err);
}

/* ------------------------------------------------------------ state --- */

/* Every call asks this first: a load, not the lock (refs changes under
 * gc_g.lock at gfs_init/gfs_finalize only; a call racing its own
 * process's last gfs_finalize is the caller's error either way). */
int gc_check_init(void)
{
    return __atomic_load_n(&gc_g.refs, __ATOMIC_ACQUIRE) > 0 ? 0 : GFS_ENOTINIT;
}

int gc_num_servers(void)
{
    int rc = gc_check_init();
    return rc ? rc : gc_g.nservers;
}

int gfs_num_servers(void)
{
    return gc_num_servers();
}

gc_conn *gc_server_conn(int server)
{
    if (server < 0 || server >= gc_g.nservers)
        return NULL;
    return gc_g.conns[server];
}

int gc_timeout_ms(void)
{
    int t = __atomic_load_n(&gc_g.timeout_ms, __ATOMIC_RELAXED);
    return t > 0 ? t : 30000;
}

int gc_spin_us(void)
{
    return __atomic_load_n(&gc_g.spin_us, __ATOMIC_RELAXED);
}

int gc_transport(void)
{
    return __atomic_load_n(&gc_g.transport, __ATOMIC_RELAXED);
}

int gfs_set_timeout_ms(int ms)
{
    if (ms <= 0)
        return -EINVAL;
    __atomic_store_n(&gc_g.timeout_ms, ms, __ATOMIC_RELAXED);
    return 0;
}

/* The name -> metadata server map every client must agree on. */
int gc_meta_server(const char *name)
{
    return (int)(g_fnv1a(name) % (uint64_t)gc_g.nservers);
}

int gc_check_name(const char *name, size_t max)
{
    if (!name || !*name)
        return -EINVAL;
    size_t n = strnlen(name, max + 1);
    if (n > max)
        return -ENAMETOOLONG;
    return gp_name_ok(name) ? 0 : -EINVAL;
}

int gc_named_record(const char *name, gp_record **rec)
{
    *rec = NULL;
    int rc = gc_check_init();
    if (!rc)
        rc = gc_check_name(name, GFS_NAME_MAX);
    if (rc)
        return rc;
    *rec = calloc(1, sizeof(**rec));
    return *rec ? 0 : -ENOMEM;
}

/* ------------------------------------------------------------ tables --- */

/* Ids are slots of handle.c's tables: a closed id, or one of another
 * kind, is not found there, whatever object its slot holds now. */
gc_file *gc_file_at(int fid)
{
    gc_file **p = gc_idtab_at(&gc_g.files, fid);
    return p ? *p : NULL;
}

int gc_file_get(int fid, gc_file *out)
{
    int rc = GFS_EBADID;
    pthread_mutex_lock(&gc_g.lock);
    const gc_file *f = gc_file_at(fid);
    if (gc_g.refs == 0)
        rc = GFS_ENOTINIT;
    else if (f) {
        memcpy(out->name, f->name, strlen(f->name) + 1);
        gp_record_copy(&out->rec, &f->rec);
        rc = 0;
    }
    pthread_mutex_unlock(&gc_g.lock);
    return rc;
}

int gc_file_attr(int fid, const char *key, char *out, size_t len)
{
    int rc = GFS_EBADID;
    pthread_mutex_lock(&gc_g.lock);
    const gc_file *f = gc_file_at(fid);
    if (gc_g.refs == 0)
        rc = GFS_ENOTINIT;
    else if (f)
        rc = gc_attr_lookup(f->rec.attrs, key, out, len);
    pthread_mutex_unlock(&gc_g.lock);
    return rc;
}

int gc_fork_get(int kid, gc_fork *out)
{
    int rc = GFS_EBADID;
    pthread_mutex_lock(&gc_g.lock);
    const gc_fork *k = gc_idtab_at(&gc_g.forks, kid);
    if (gc_g.refs == 0)
        rc = GFS_ENOTINIT;
    else if (k) {
        *out = *k;
        rc = 0;
    }
    pthread_mutex_unlock(&gc_g.lock);
    return rc;
}

int gc_fork_register(const gc_fork *k)
{
    /* the one place a fork's checksum flag is derived: from its file's
     * record, read in place under the lock the insert takes anyway */
    gc_fork c = *k;
    pthread_mutex_lock(&gc_g.lock);
    const gc_file *f = gc_file_at(k->fid);
    c.csum = f && gc_rec_checksummed(&f->rec);
    int kid = gc_idtab_add(&gc_g.forks, &c);
    pthread_mutex_unlock(&gc_g.lock);
    return kid;
}

void gc_fork_unregister(int kid)
{
    gc_idtab_take(&gc_g.forks, kid, NULL);
}

int gc_fork_next(int kid, gc_fork *out)
{
    pthread_mutex_lock(&gc_g.lock);
    kid = gc_idtab_next(&gc_g.forks, kid);
    if (kid >= 0)
        *out = *(const gc_fork *)gc_idtab_at(&gc_g.forks, kid);
    pthread_mutex_unlock(&gc_g.lock);
    return kid;
}

int gc_open_handles(int server, uint64_t **fkids, int *n)
{
    pthread_mutex_lock(&gc_g.lock);
    size_t nk = (size_t)gc_idtab_count(&gc_g.forks);
    uint64_t *v = malloc(sizeof(*v) * (nk ? nk : 1));
    if (!v) {
        pthread_mutex_unlock(&gc_g.lock);
        return -ENOMEM;
    }
    int cnt = 0;
    for (int kid = -1; (kid = gc_idtab_next(&gc_g.forks, kid)) >= 0;) {
        const gc_fork *k = gc_idtab_at(&gc_g.forks, kid);
        if (k->server == server)
            v[cnt++] = k->fkid;
    }
    pthread_mutex_unlock(&gc_g.lock);
    *fkids = v;
    *n = cnt;
    return 0;
}

/* ------------------------------------------------ record attributes --- */

/* Find "key=" at a line start in attrs; returns the line or NULL. */
static const char *attr_find(const char *attrs, const char *key)
{
    size_t kn = strlen(key);
    for (const char *p = attrs; p && *p;) {
        if (strncmp(p, key, kn) == 0 && p[kn] == '=')
            return p;
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return NULL;
}

int gc_attr_lookup(const char *attrs, const char *key, char *value, size_t len)
{
    const char *line = attr_find(attrs, key);
    if (!line)
        return -ENOENT;
    const char *v = line + strlen(key) + 1;
    const char *e = strchr(v, '\n');
    size_t n = e ? (size_t)(e - v) : strlen(v);
    if (n + 1 > len)
        return -ERANGE;
    memcpy(value, v, n);
    value[n] = '\0';
    return (int)n;
}

bool gc_rec_checksummed(const gp_record *rec)
{
    char v[16];
    return gc_attr_lookup(rec->attrs, GC_CHECKSUM_ATTR, v, sizeof(v)) > 0 &&
           strcmp(v, "crc32c") == 0;
}
