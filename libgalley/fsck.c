/*
 * fsck.c -- gfs_fsck: compare every server's file records with every
 * server's subfile headers (galley.h).
 *
 *   1. every record of every server (NS_LIST, NS_LOOKUP on that server)
 *      names (server, hid) for each of its subfiles;
 *   2. every server lists the headers it holds (SUB_LIST);
 *   3. a record's subfile with no header on its server is dangling; a
 *      header whose file name or subfile index differs from the record
 *      that names it is a mismatch; a live header no record names is an
 *      orphan -- what an rm leaves on a server that was down (the record
 *      goes first, then each server's header).
 *
 * A replicated file (repl.c) names every copy of every subfile; its
 * record has several copies too, so a header is named once however many
 * records name it.  Each stale copy is reported (degraded) once.
 *
 * Repair removes orphans only, each under a reservation of its file's
 * name on the name's metadata server: a create in progress holds that
 * reservation (its headers exist before its record), so it is never
 * taken for orphans; and a record committed since the scan is looked up
 * again before anything goes.  Nothing is repaired while a server does
 * not answer (its records might name the "orphans").
 *
 * Threads: the calling thread only; requests go through the ordinary
 * connections.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ref {
    uint32_t server;
    uint64_t hid;
    uint32_t subidx;
    char *name;
    bool seen;  /* a header exists */
    bool stale; /* a replicated file's copy out of sync */
} ref;

typedef struct fsck {
    ref *refs;
    size_t nrefs, caprefs;
    gfs_fsck_fn fn;
    void *arg;
    int problems;
} fsck;

static int cmp_ref(const void *a, const void *b)
{
    const ref *x = a, *y = b;
    if (x->server != y->server)
        return x->server < y->server ? -1 : 1;
    return x->hid < y->hid ? -1 : x->hid > y->hid;
}

static void report(fsck *f, int kind, int server, uint64_t hid,
                   const char *name, uint32_t subidx, int status)
{
    gfs_fsck_item it = {.kind = kind,
                        .server = server,
                        .hid = hid,
                        .subfile = subidx,
                        .status = status};
    snprintf(it.name, sizeof(it.name), "%s", name ? name : "");
    if (kind != GFS_FSCK_REPAIRED)
        f->problems++;
    if (f->fn)
        f->fn(&it, f->arg);
}

static int add_ref(fsck *f, uint32_t server, uint64_t hid, uint32_t subidx,
                   const char *name, bool stale)
{
    if (f->nrefs == f->caprefs) {
        size_t cap = f->caprefs ? 2 * f->caprefs : 256;
        ref *p = realloc(f->refs, cap * sizeof(*p));
        if (!p)
            return -ENOMEM;
        f->refs = p;
        f->caprefs = cap;
    }
    char *n = strdup(name);
    if (!n)
        return -ENOMEM;
    f->refs[f->nrefs++] = (ref){server, hid, subidx, n, false, stale};
    return 0;
}

static gc_conn *srv(int server)
{
    return gc_server_conn(server);
}

/* Step 1 for one server: the records it keeps. */
static int scan_records(fsck *f, int server, gp_record *rec)
{
    gc_tail t;
    gp_NS_LIST_rep m;
    int rc =
        gc_NS_LIST_call(srv(server), &(gp_NS_LIST_req){.prefix = ""}, &m, &t);
    if (rc)
        return rc;
    gp_NAME_item it;
    const char *name = it.name_buf;
    for (uint32_t i = 0; !rc && !t.r.err && i < m.n; i++) {
        if (gp_NAME_item_decode(&t.r, &it))
            break;
        int k = gc_lookup(server, name, rec);
        if (k == -ENOENT)
            continue; /* removed since the listing */
        if (k) {
            rc = k;
            break;
        }
        if (rec->repl.ncopy > 1) {
            /* every copy; the newest record copy says which are stale */
            k = gc_repl_lookup(name, rec);
            if (k == -ENOENT)
                continue;
            if (k) {
                rc = k;
                break;
            }
        }
        for (uint32_t s = 0; !rc && s < rec->nsub; s++)
            for (int c = 0; !rc && c < rec->repl.ncopy; c++)
                rc = add_ref(f, rec->repl.server[s][c], rec->repl.hid[s][c], s,
                             name,
                             rec->repl.ncopy > 1 &&
                                 rec->repl.state[s][c] != GP_COPY_INSYNC);
    }
    int e = gc_tail_end(&t);
    return rc ? rc : e;
}

static ref *find_ref(fsck *f, uint32_t server, uint64_t hid)
{
    ref key = {.server = server, .hid = hid};
    return bsearch(&key, f->refs, f->nrefs, sizeof(ref), cmp_ref);
}

/* Is (server, hid), a header of `name`, named by name's record now? */
static bool named_now(int server, uint64_t hid, const char *name,
                      gp_record *rec)
{
    if (gc_repl_lookup(name, rec) != 0)
        return false;
    for (uint32_t s = 0; s < rec->nsub; s++)
        for (int c = 0; c < rec->repl.ncopy; c++)
            if (rec->repl.server[s][c] == (uint32_t)server &&
                rec->repl.hid[s][c] == hid)
                return true;
    return false;
}

/* Remove orphan (server, hid) of `name` under a reservation of the name. */
static int reclaim(int server, uint64_t hid, const char *name, gp_record *rec)
{
    int meta = gc_meta_server(name);
    int rc = gc_NS_RESERVE_call(srv(meta), &(gp_NS_RESERVE_req){.name = name},
                                NULL, NULL);
    bool reserved = rc == 0;
    if (rc == -EEXIST) {
        /* a record (committed since the scan?) or a create in progress */
        if (named_now(server, hid, name, rec))
            return -EEXIST; /* not an orphan after all */
        gp_record *tmp = rec;
        if (gc_lookup(meta, name, tmp) == -ENOENT)
            return GFS_EBUSY; /* being created: leave it */
        rc = 0;
    }
    if (rc)
        return rc;
    rc = gc_SUB_DELETE_call(srv(server), &(gp_SUB_DELETE_req){.hid = hid}, NULL,
                            NULL);
    if (reserved)
        gc_NS_RELEASE_call(srv(meta), &(gp_NS_RELEASE_req){.name = name}, NULL,
                           NULL);
    return rc;
}

/* Steps 2 and 3 for one server's headers. */
static int scan_headers(fsck *f, int server, bool repair, gp_record *rec)
{
    uint64_t after = 0;
    char name[GFS_NAME_MAX + 1];
    for (;;) {
        gc_tail t;
        gp_SUB_LIST_rep m;
        int rc = gc_SUB_LIST_call(srv(server),
                                  &(gp_SUB_LIST_req){.after = after}, &m, &t);
        if (rc)
            return rc;
        uint32_t n = m.n;
        for (uint32_t i = 0; !t.r.err && i < n; i++) {
            gp_SUB_item it;
            if (gp_SUB_item_decode(&t.r, &it))
                break;
            uint64_t hid = it.hid;
            memcpy(name, it.file, strlen(it.file) + 1);
            uint32_t subidx = it.subfile;
            bool deleted = it.deleted;
            after = hid;
            ref *x = find_ref(f, (uint32_t)server, hid);
            if (x) {
                x->seen = true;
                if (strcmp(x->name, name) != 0 || x->subidx != subidx)
                    report(f, GFS_FSCK_MISMATCH, server, hid, x->name,
                           x->subidx, 0);
                continue;
            }
            if (deleted)
                continue; /* removal pending (a fork still open) */
            if (named_now(server, hid, name, rec))
                continue; /* committed since the scan */
            report(f, GFS_FSCK_ORPHAN, server, hid, name, subidx, 0);
            if (repair) {
                int k = reclaim(server, hid, name, rec);
                if (k == 0 || k == GFS_ESTALE)
                    report(f, GFS_FSCK_REPAIRED, server, hid, name, subidx, 0);
                else if (k != -EEXIST)
                    report(f, GFS_FSCK_NOT_REPAIRED, server, hid, name, subidx,
                           k);
            }
        }
        int err = gc_tail_end(&t);
        if (err)
            return err;
        if (n == 0)
            return 0;
    }
}

int gfs_fsck(int repair, gfs_fsck_fn fn, void *arg)
{
    int rc = gc_check_init();
    if (rc)
        return rc;
    fsck f = {.fn = fn, .arg = arg};
    gp_record *rec = malloc(sizeof(*rec));
    int n = gc_g.nservers;
    bool *down = calloc((size_t)n, sizeof(*down));
    if (!rec || !down) {
        rc = -ENOMEM;
        goto out_free;
    }
    for (int s = 0; s < n; s++) {
        int k = scan_records(&f, s, rec);
        if (k == -ENOMEM) {
            rc = k;
            goto out_free;
        }
        if (k) {
            down[s] = true;
            report(&f, GFS_FSCK_UNREACHABLE, s, 0, NULL, 0, k);
        }
    }
    qsort(f.refs, f.nrefs, sizeof(ref), cmp_ref);
    /* a replicated file's record is kept on several servers: one ref per
     * header (the copies of a record may differ: stale if any says so) */
    size_t kept = 0;
    for (size_t i = 0; i < f.nrefs; i++) {
        if (kept && !cmp_ref(&f.refs[kept - 1], &f.refs[i]) &&
            !strcmp(f.refs[kept - 1].name, f.refs[i].name)) {
            f.refs[kept - 1].stale |= f.refs[i].stale;
            free(f.refs[i].name);
            continue;
        }
        f.refs[kept++] = f.refs[i];
    }
    f.nrefs = kept;
    for (size_t i = 0; i < f.nrefs; i++)
        if (f.refs[i].stale)
            report(&f, GFS_FSCK_DEGRADED, (int)f.refs[i].server, f.refs[i].hid,
                   f.refs[i].name, f.refs[i].subidx, 0);
    bool complete = true;
    for (int s = 0; s < n; s++)
        complete &= !down[s];
    for (int s = 0; s < n; s++) {
        if (down[s])
            continue;
        int k = scan_headers(&f, s, repair && complete, rec);
        if (k) {
            down[s] = true;
            report(&f, GFS_FSCK_UNREACHABLE, s, 0, NULL, 0, k);
        }
    }
    for (size_t i = 0; i < f.nrefs; i++) {
        ref *x = &f.refs[i];
        if (!x->seen && x->server < (uint32_t)n && !down[x->server])
            report(&f, GFS_FSCK_DANGLING, (int)x->server, x->hid, x->name,
                   x->subidx, 0);
    }
    rc = f.problems;
out_free:
    for (size_t i = 0; i < f.nrefs; i++)
        free(f.refs[i].name);
    free(f.refs);
    free(rec);
    free(down);
    return rc;
}
