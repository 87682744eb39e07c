/*
 * files.c -- file operations: the paper's three-step create, open (record
 * lookup at the name's metadata server, cached), close, delete, stat,
 * listing, and the attributes kept in a file's record.
 *
 * Threads: any; tables through client.c helpers, network through conn.c.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------ small calls --- */

static gc_conn *srv(int server)
{
    return gc_server_conn(server);
}

int gc_lookup(int server, const char *name, gp_record *rec)
{
    return gc_NS_LOOKUP_call(srv(server), &(gp_NS_LOOKUP_req){.name = name},
                             &(gp_NS_LOOKUP_rep){.rec = rec}, NULL);
}

/* --------------------------------------------------------- create ----- */

static int pick_servers(const char *name, int nsub, const int *servers,
                        uint32_t *out)
{
    int n = gc_g.nservers;
    if (nsub < 1 || nsub > n || nsub > GFS_MAX_SUBFILES)
        return -EINVAL;
    if (!servers) {
        int first = gc_meta_server(name);
        for (int i = 0; i < nsub; i++)
            out[i] = (uint32_t)((first + i) % n);
        return 0;
    }
    for (int i = 0; i < nsub; i++) {
        if (servers[i] < 0 || servers[i] >= n)
            return -EINVAL;
        for (int j = 0; j < i; j++)
            if (servers[j] == servers[i])
                return -EINVAL; /* two subfiles may not share a server */
        out[i] = (uint32_t)servers[i];
    }
    return 0;
}

/* Create with an initial attribute text (used by gfs_create_striped). */
int gc_create_file(const char *name, int nsubfiles, const int *servers,
                   const char *attrs, int ncopy)
{
    int rc = gc_check_init();
    if (rc)
        return rc;
    rc = gc_check_name(name, GFS_NAME_MAX);
    if (rc)
        return rc;
    gp_record *rec = calloc(1, sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    rc = pick_servers(name, nsubfiles, servers, rec->server);
    if (rc)
        goto out_free;
    rec->nsub = (uint32_t)nsubfiles;
    rec->repl.ncopy = 1;
    if (ncopy != 1 && (rc = gc_repl_place(rec, ncopy)))
        goto out_free;
    if (attrs) {
        size_t n = strlen(attrs);
        if (n > GP_ATTR_MAX) {
            rc = -EINVAL;
            goto out_free;
        }
        memcpy(rec->attrs, attrs, n + 1);
        rec->attrlen = (uint32_t)n;
    }

    /* Step 1: reserve the name at its metadata server. */
    int meta = gc_meta_server(name);
    rc = gc_NS_RESERVE_call(srv(meta), &(gp_NS_RESERVE_req){.name = name}, NULL,
                            NULL);
    if (rc)
        goto out_free;

    /* Step 2: a subfile header on each chosen server. */
    int made = 0;
    for (; made < nsubfiles; made++) {
        gp_SUB_CREATE_rep m;
        rc = gc_SUB_CREATE_call(
            srv((int)rec->server[made]),
            &(gp_SUB_CREATE_req){.filename = name, .subfile = (uint32_t)made},
            &m, NULL);
        if (rc)
            goto out_release;
        rec->hid[made] = m.hid;
    }
    /* Replicated: the other copies' headers, every copy's server id. */
    int rmade = 0;
    if (rec->repl.ncopy > 1 && (rc = gc_repl_create_copies(name, rec, &rmade)))
        goto out_release;

    /* Step 3: commit the record. */
    rc = gc_NS_COMMIT_call(
        srv(meta), &(gp_NS_COMMIT_req){.name = name, .rec = rec}, NULL, NULL);
    if (!rc && rec->repl.ncopy > 1 && (rc = gc_repl_commit_others(name, rec))) {
        gc_repl_remove_others(name);
        gc_NS_REMOVE_call(srv(meta), &(gp_NS_REMOVE_req){.name = name},
                          &(gp_NS_REMOVE_rep){.rec = rec}, NULL);
        rmade = (int)rec->nsub;
    } else if (!rc) {
        goto out_free;
    }

out_release:
    /* Undo in reverse: subfile headers, then the reservation. */
    if (rec->repl.ncopy > 1)
        gc_repl_delete_copies(rec, rmade);
    for (int i = made - 1; i >= 0; i--)
        gc_SUB_DELETE_call(srv((int)rec->server[i]),
                           &(gp_SUB_DELETE_req){.hid = rec->hid[i]}, NULL,
                           NULL);
    gc_NS_RELEASE_call(srv(meta), &(gp_NS_RELEASE_req){.name = name}, NULL,
                       NULL);
out_free:
    free(rec);
    return rc;
}

int gfs_create_file(const char *name, int nsubfiles, const int *servers)
{
    return gc_create_file(name, nsubfiles, servers, NULL, 1);
}

/* ----------------------------------------------------- open / close --- */

int gc_file_register(const char *name, const gp_record *rec)
{
    for (uint32_t i = 0; i < rec->nsub; i++)
        if (rec->server[i] >= (uint32_t)gc_g.nservers)
            return GFS_EBADCLUSTER; /* record names a server we don't know */
    gc_file *f = malloc(sizeof(*f));
    if (!f)
        return -ENOMEM;
    snprintf(f->name, sizeof(f->name), "%s", name);
    f->rec = *rec;
    int fid = gc_htab_insert(&gc_g.files, f);
    free(f);
    return fid;
}

int gc_file_open(const char *name)
{
    int rc = gc_check_init();
    if (rc)
        return rc;
    rc = gc_check_name(name, GFS_NAME_MAX);
    if (rc)
        return rc;
    gp_record *rec = calloc(1, sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    rc = gc_repl_lookup(name, rec);
    if (!rc)
        rc = gc_file_register(name, rec);
    free(rec);
    return rc;
}

int gc_file_close(int fid)
{
    int rc = gc_check_init();
    if (rc)
        return rc;
    if (gc_htab_take(&gc_g.files, fid, NULL))
        return GFS_EBADID;
    /* Forks opened through this file id go with it. */
    gc_fork k;
    for (int kid = -1; (kid = gc_fork_next(kid, &k)) >= 0;)
        if (k.fid == fid)
            gc_fork_close(kid);
    return 0;
}

/* ----------------------------------------------------------- delete --- */

int gc_file_delete(const char *name)
{
    int rc = gc_check_init();
    if (rc)
        return rc;
    rc = gc_check_name(name, GFS_NAME_MAX);
    if (rc)
        return rc;
    gp_record *rec = calloc(1, sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    /* The record goes first (the name is free at once); subfile headers
     * follow.  A subfile on a dead server is reported, and stays behind
     * as an orphan on that server rather than blocking the delete. */
    rc = gc_NS_REMOVE_call(srv(gc_meta_server(name)),
                           &(gp_NS_REMOVE_req){.name = name},
                           &(gp_NS_REMOVE_rep){.rec = rec}, NULL);
    if (rc == GFS_ESERVERDOWN || rc == GFS_ETIMEDOUT) {
        /* its metadata server is lost: the record's other copies */
        int k = gc_repl_lookup(name, rec);
        if (!k && rec->repl.ncopy > 1)
            rc = 0;
    }
    if (rc)
        goto out_free;
    if (rec->repl.ncopy > 1) {
        gc_repl_remove_others(name);
        gc_repl_delete_copies(rec, (int)rec->nsub);
    }
    for (uint32_t i = 0; i < rec->nsub; i++) {
        if (rec->server[i] >= (uint32_t)gc_g.nservers)
            continue;
        int k = gc_SUB_DELETE_call(srv((int)rec->server[i]),
                                   &(gp_SUB_DELETE_req){.hid = rec->hid[i]},
                                   NULL, NULL);
        if (k && k != -ENOENT && !rc && rec->repl.ncopy <= 1)
            rc = k; /* (a replicated file's copy 0 may be on a lost server) */
    }
out_free:
    free(rec);
    return rc;
}

int gfs_stat_file(int fid, gfs_file_stat *st)
{
    gc_file f;
    int rc = gc_file_get(fid, &f);
    if (rc)
        return rc;
    if (!st)
        return -EINVAL;
    memset(st, 0, sizeof(*st));
    st->nsubfiles = (int)f.rec.nsub;
    for (uint32_t i = 0; i < f.rec.nsub; i++)
        st->servers[i] = (int)f.rec.server[i];
    return 0;
}

/* ---------------------------------------------------------- listing --- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int gfs_list_files(const char *prefix, int (*fn)(const char *, void *),
                   void *arg)
{
    int rc = gc_check_init();
    if (rc)
        return rc;
    if (!prefix)
        prefix = "";
    if (strlen(prefix) > GFS_NAME_MAX)
        return -ENAMETOOLONG;
    if (!fn)
        return -EINVAL;
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (int s = 0; s < gc_g.nservers && !rc; s++) {
        gc_tail t;
        gp_NS_LIST_rep m;
        rc = gc_NS_LIST_call(srv(s), &(gp_NS_LIST_req){.prefix = prefix}, &m,
                             &t);
        if (rc)
            break;
        gp_rbuf *r = &t.r;
        for (uint32_t i = 0; i < m.n && !r->err; i++) {
            gp_NAME_item it;
            if (gp_NAME_item_decode(r, &it))
                break;
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                char **nn = realloc(names, sizeof(*nn) * cap);
                if (!nn) {
                    r->err = -ENOMEM;
                    break;
                }
                names = nn;
            }
            if (!(names[n] = strdup(it.name))) {
                r->err = -ENOMEM;
                break;
            }
            n++;
        }
        rc = gc_tail_end(&t);
    }
    if (!rc) {
        qsort(names, n, sizeof(*names), cmp_str);
        for (size_t i = 0; i < n; i++) {
            if (i > 0 && strcmp(names[i], names[i - 1]) == 0)
                continue;
            rc = fn(names[i], arg);
            if (rc)
                break;
        }
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

/* -------------------------------------------------------- attributes -- */

static int check_key(const char *key)
{
    size_t n = key ? strlen(key) : 0;
    if (n < 1 || n > 63)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        char c = key[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '.'))
            return -EINVAL;
    }
    return 0;
}

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

int gfs_set_attr(int fid, const char *key, const char *value)
{
    gc_file f;
    int rc = gc_file_get(fid, &f);
    if (rc)
        return rc;
    rc = check_key(key);
    if (rc)
        return rc;
    if (!value || strlen(value) > 1023 || strchr(value, '\n'))
        return -EINVAL;
    /* Fresh copy of the record so concurrent attribute changes by other
     * clients are not lost (last writer wins per call). */
    gp_record *rec = calloc(1, sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    rc = gc_lookup(gc_meta_server(f.name), f.name, rec);
    if (rc)
        goto out_free;
    char *text = malloc(GP_ATTR_MAX + 1);
    if (!text) {
        rc = -ENOMEM;
        goto out_free;
    }
    size_t kn = strlen(key);
    /* copy every other line, then ours */
    size_t tl = 0;
    for (const char *p = rec->attrs; *p;) {
        const char *e = strchr(p, '\n');
        size_t ln = e ? (size_t)(e - p) + 1 : strlen(p);
        if (!(strncmp(p, key, kn) == 0 && p[kn] == '=')) {
            memcpy(text + tl, p, ln);
            tl += ln;
            if (!e)
                text[tl++] = '\n';
        }
        p += ln;
    }
    size_t add = kn + 1 + strlen(value) + 1;
    if (tl + add > GP_ATTR_MAX) {
        rc = -ENOSPC;
        goto out_text;
    }
    tl += (size_t)sprintf(text + tl, "%s=%s\n", key, value);

    rc = gc_NS_SETATTR_call(srv(gc_meta_server(f.name)),
                            &(gp_NS_SETATTR_req){
                                .name = f.name,
                                .attrs = (const uint8_t *)text,
                                .attrs_len = (uint32_t)tl,
                            },
                            NULL, NULL);
    if (!rc) {
        pthread_mutex_lock(&gc_g.lock);
        gc_file *cached = gc_htab_at(&gc_g.files, fid);
        if (cached) {
            memcpy(cached->rec.attrs, text, tl);
            cached->rec.attrs[tl] = '\0';
            cached->rec.attrlen = (uint32_t)tl;
        }
        pthread_mutex_unlock(&gc_g.lock);
    }
out_text:
    free(text);
out_free:
    free(rec);
    return rc;
}

int gfs_get_attr(int fid, const char *key, char *value, size_t len)
{
    gc_file f;
    int rc = gc_file_get(fid, &f);
    if (rc)
        return rc;
    rc = check_key(key);
    if (rc)
        return rc;
    if (!value)
        return -EINVAL;
    return gc_attr_lookup(f.rec.attrs, key, value, len);
}

/* ------------------------------------------------------- public API --- */

int gfs_open_file(const char *name)
{
    return gc_file_open(name);
}

int gfs_close_file(int fid)
{
    return gc_file_close(fid);
}

int gfs_delete_file(const char *name)
{
    return gc_file_delete(name);
}
