/*
 * nodes.c -- what a name's record says of it as a POSIX file besides its
 * bytes and mode: its owner (GFS_OWNER_ATTR), change time
 * (GFS_CTIME_ATTR) and, for a special file or a symbolic link, what it is
 * (GFS_NODE_ATTR, GFS_LINK_ATTR).  gfs_create_node makes a name with them
 * in the create's one record write; gfs_chown changes the owner.
 *
 * Threads: any.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* An owner id as kept: -1 (none) or 0..UINT32_MAX-1 (uid_t's range less
 * the (uid_t)-1 that chown reads as "keep"). */
static bool id_ok(int64_t id)
{
    return id >= -1 && id < (int64_t)UINT32_MAX;
}

int64_t gc_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t gc_ctime_of(const gp_record *rec, int64_t data)
{
    char v[32];
    long long t;
    char end;
    if (!rec || gc_attr_lookup(rec->attrs, GFS_CTIME_ATTR, v, sizeof(v)) <= 0 ||
        sscanf(v, "%lld%c", &t, &end) != 1 || t < data)
        return data;
    return (int64_t)t;
}

int64_t gc_atime_of(const gp_record *rec)
{
    char v[32];
    long long t;
    char end;
    if (!rec || gc_attr_lookup(rec->attrs, GFS_ATIME_ATTR, v, sizeof(v)) <= 0 ||
        sscanf(v, "%lld%c", &t, &end) != 1 || t < 0)
        return 0;
    return (int64_t)t;
}

void gc_owner_of(const gp_record *rec, int64_t *uid, int64_t *gid)
{
    char v[48];
    long long u, g;
    char end;
    *uid = *gid = -1;
    if (!rec || gc_attr_lookup(rec->attrs, GFS_OWNER_ATTR, v, sizeof(v)) <= 0 ||
        sscanf(v, "%lld:%lld%c", &u, &g, &end) != 2)
        return;
    *uid = id_ok(u) ? u : -1;
    *gid = id_ok(g) ? g : -1;
}

unsigned gc_node_of(const gp_record *rec, uint64_t *rdev)
{
    char v[48];
    unsigned long long d;
    char end;
    *rdev = 0;
    if (!rec || gc_attr_lookup(rec->attrs, GFS_NODE_ATTR, v, sizeof(v)) <= 0)
        return S_IFREG;
    switch (v[0]) {
    case 'p':
        return v[1] ? S_IFREG : S_IFIFO;
    case 's':
        return v[1] ? S_IFREG : S_IFSOCK;
    case 'd':
        return v[1] ? S_IFREG : S_IFDIR;
    case 'c':
    case 'b':
        if (sscanf(v + 1, ":%llu%c", &d, &end) != 1)
            return S_IFREG;
        *rdev = d;
        return v[0] == 'c' ? S_IFCHR : S_IFBLK;
    default: /* (a kind this client does not know: a file) */
        return S_IFREG;
    }
}

/* A link whose target is longer than a record keeps (GC_LINK_INLINE): the
 * record says its length, the target is the file's bytes, written before
 * the create returns (the name is removed again if that fails). */
static int create_long_link(const char *name, const char *target, size_t len,
                            char *extra, int n)
{
    snprintf(extra + n, (size_t)(192 + GC_LINK_INLINE - n),
             GC_LINK_DATA_ATTR "=%zu\n", len);
    int rc = gc_create_striped(name, 1, NULL, 0, NULL, 1, 0777, extra);
    if (rc)
        return rc;
    int sid = gc_striped_open(name);
    gfs_list_entry e = {0, 0, (int64_t)len};
    int64_t k = sid < 0
                    ? sid
                    : gc_striped_listio(sid, GFS_WRITE, 1, &e, (void *)target);
    if (sid >= 0) {
        int crc = gc_striped_close(sid);
        if (k >= 0 && crc)
            k = crc;
    }
    if (k >= 0 && k != (int64_t)len)
        k = -EIO;
    if (k < 0)
        gc_file_delete(name);
    return k < 0 ? (int)k : 0;
}

int gc_link_read_data(const char *name, int n, char *buf, size_t len)
{
    int sid = gc_striped_open(name);
    if (sid < 0)
        return sid;
    size_t want = (size_t)n < len ? (size_t)n : len;
    gfs_list_entry e = {0, 0, (int64_t)want};
    int64_t k = gc_striped_listio(sid, GFS_READ, 1, &e, buf);
    gc_striped_close(sid);
    if (k >= 0 && (size_t)k != want)
        k = GFS_EPROTO; /* (the record says more bytes than it holds) */
    return k < 0 ? (int)k : (int)want;
}

int gfs_create_node(const char *name, int nsubfiles, const int *servers,
                    int64_t unit, const char *fork, const gfs_node *node)
{
    if (!node || !id_ok(node->uid) || !id_ok(node->gid))
        return -EINVAL;
    char extra[192 + GC_LINK_INLINE];
    /* made now: its modification time until it is written, and its
     * change time */
    int64_t now = gc_wall_ns();
    int n = snprintf(extra, sizeof(extra),
                     GFS_MTIME_ATTR "=%lld:0\n" GFS_CTIME_ATTR "=%lld\n",
                     (long long)now, (long long)now);
    if (node->uid != -1 || node->gid != -1)
        n += snprintf(extra + n, sizeof(extra) - (size_t)n,
                      GFS_OWNER_ATTR "=%lld:%lld\n", (long long)node->uid,
                      (long long)node->gid);
    unsigned type = node->mode & S_IFMT;
    char kind = 0;
    switch (type) {
    case 0:
    case S_IFREG:
        break;
    case S_IFLNK: {
        size_t len = node->link ? strlen(node->link) : 0;
        if (len == 0 || strchr(node->link, '\n'))
            return -EINVAL;
        if (len > GFS_LINK_MAX)
            return -ENAMETOOLONG;
        if (len > GC_LINK_INLINE)
            return create_long_link(name, node->link, len, extra, n);
        snprintf(extra + n, sizeof(extra) - (size_t)n, GFS_LINK_ATTR "=%s\n",
                 node->link);
        nsubfiles = 1;
        servers = NULL;
        break;
    }
    case S_IFIFO:
        kind = 'p';
        break;
    case S_IFSOCK:
        kind = 's';
        break;
    case S_IFDIR:
        kind = 'd';
        break;
    case S_IFCHR:
        kind = 'c';
        break;
    case S_IFBLK:
        kind = 'b';
        break;
    default:
        return -EINVAL;
    }
    if (kind) { /* a special file or a directory's marker: an empty
                 * file of one subfile, its mode always written (a
                 * directory's default is not a file's) */
        n += snprintf(extra + n, sizeof(extra) - (size_t)n,
                      GFS_MODE_ATTR "=%o\n", node->mode & 07777);
        if (kind == 'c' || kind == 'b')
            snprintf(extra + n, sizeof(extra) - (size_t)n,
                     GFS_NODE_ATTR "=%c:%llu\n", kind,
                     (unsigned long long)node->rdev);
        else
            snprintf(extra + n, sizeof(extra) - (size_t)n,
                     GFS_NODE_ATTR "=%c\n", kind);
        nsubfiles = 1;
        servers = NULL;
    }
    return gc_create_striped(name, nsubfiles, servers, unit, fork, 1,
                             kind ? GFS_DEFAULT_MODE : node->mode & 07777,
                             extra);
}

int gfs_chown(const char *name, int64_t uid, int64_t gid)
{
    int rc = gc_check_init();
    if (!rc)
        rc = gc_check_name(name, GFS_NAME_MAX);
    if (rc)
        return rc;
    if (!id_ok(uid) || !id_ok(gid))
        return -EINVAL;
    int64_t u = uid, g = gid;
    if (uid == -1 || gid == -1) { /* the part kept: the record's now */
        gp_record *rec = malloc(sizeof(*rec));
        rc = rec ? gc_lookup(gc_meta_server(name), name, rec) : -ENOMEM;
        int64_t ku, kg;
        if (!rc)
            gc_owner_of(rec, &ku, &kg);
        free(rec);
        if (rc)
            return rc;
        u = uid == -1 ? ku : uid;
        g = gid == -1 ? kg : gid;
    }
    char v[48];
    snprintf(v, sizeof(v), "%lld:%lld", (long long)u, (long long)g);
    return gc_set_attr_changed(name, GFS_OWNER_ATTR, v);
}
