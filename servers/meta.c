/*
 * meta.c -- crash-safe metadata files.
 *
 * Threads: called by handler threads and at startup by the main thread.
 * Takes no locks itself: each metadata file has exactly one writer at a
 * time because its owner serialises updates (ns.lock for NameServer
 * records, subtab.lock for subfile headers, counters and the hid counter),
 * so the single temp name "<file>.tmp" never races.
 *
 * The scheme.  While galleyd serves, every durable change below is also
 * appended to the metadata log (wal.c) and made durable by its group
 * commit instead: the file is written and renamed without fsync, and the
 * reply waits for the log.  At start-up (before the log is replayed, and
 * while the scans below run) the files are made durable one by one:
 *
 *   Every metadata object is one small file, replaced as a whole:
 *     1. write the new contents to "<file>.tmp",
 *     2. fsync it,
 *     3. rename "<file>.tmp" over "<file>" (atomic in POSIX),
 *     4. fsync the directory, so the rename itself is durable.
 *   After a crash at any point a reader finds either the old or the new
 *   file, never a mix; a leftover "*.tmp" is deleted at startup.
 *   The rename is the commit point; the reply is sent after step 4.
 *
 *   Layout under the data directory DIR (no user string ever becomes a path
 *   component; every name below is a number or a fixed word):
 *     DIR/lock                 flock'd while a galleyd serves DIR
 *     DIR/next_hid             u64: the end of the block of subfile header
 *                              ids reserved (ids are never reused)
 *     DIR/wal                  the metadata log (wal.c)
 *     DIR/meta.tab             the metadata table (metatab.c) as of the
 *                              last checkpoint; the log holds the rest.
 *                              Its values, named like the files they
 *                              were before it (and imported from them):
 *       ns/<id>.rec            one NameServer record (name + gp_record)
 *       sub/<hid>/header       subfile header: file name, subfile index,
 *                              next fork index, (index, name, deleted) forks
 *     DIR/ns/                  empty (record files from before the table)
 *     DIR/sub/<hid>/           a subfile's files, made with the first:
 *     DIR/sub/<hid>/counters   FETCH_ADD counters (rename without fsync)
 *     DIR/sub/<hid>/<idx>.dat  the data of fork <idx> (a Unix file, made
 *                              at the fork's first write; none: empty)
 *
 *   Each file starts with a 4-byte magic and a format version and is
 *   encoded with the wire protocol's writer (explicit little-endian).
 *   Startup rules (subfile.c, nameserver.c): a record or header that fails
 *   to decode is reported and skipped, never deleted; a subfile directory
 *   without a header is the remains of an interrupted create or delete and
 *   is removed; data files not named by their header are removed; forks or
 *   subfiles marked deleted are removed (nobody has them open any more);
 *   a table file that fails its checksum stops the server (metatab.c).
 */
#include "gsrv_internal.h"
#include "gsend.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Parent directory of a relative path ("." when there is none). */
static void parent_of(const char *rel, char *out, size_t outlen)
{
    const char *slash = strrchr(rel, '/');
    if (!slash) {
        snprintf(out, outlen, ".");
        return;
    }
    size_t n = (size_t)(slash - rel);
    if (n >= outlen)
        n = outlen - 1;
    memcpy(out, rel, n);
    out[n] = '\0';
}

int gsrv_meta_sync_dir(const char *rel)
{
    if (gsrv_wal_on())
        return 0; /* the log holds every change made in it */
    return gsrv_dir_fsync(rel);
}

int gsrv_dir_fsync(const char *rel)
{
    int fd = openat(gsrv_g.dfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = 0;
    if (fsync(fd) < 0)
        rc = -errno;
    close(fd);
    return rc;
}

/* Replace rel by buf[0..len) through rel.tmp; sync: fsync the file
 * before the rename and the directory after it. */
static int replace(const char *rel, const void *buf, size_t len, bool sync)
{
    char tmp[256], dir[256];
    int rc;

    if (snprintf(tmp, sizeof(tmp), "%s.tmp", rel) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    int fd =
        openat(gsrv_g.dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    rc = gp_write_all(fd, buf, len);
    if (rc)
        goto out_unlink_tmp;
    if (sync && fsync(fd) < 0) {
        rc = -errno;
        goto out_unlink_tmp;
    }
    if (close(fd) < 0) {
        fd = -1;
        rc = -errno;
        goto out_unlink_tmp;
    }
    fd = -1;
    if (renameat(gsrv_g.dfd, tmp, gsrv_g.dfd, rel) < 0) {
        rc = -errno;
        goto out_unlink_tmp;
    }
    if (sync) {
        parent_of(rel, dir, sizeof(dir));
        rc = gsrv_dir_fsync(dir);
    }
    return rc;

out_unlink_tmp:
    if (fd >= 0)
        close(fd);
    unlinkat(gsrv_g.dfd, tmp, 0);
    return rc;
}

int gsrv_meta_write(const char *rel, const void *buf, size_t len, bool durable)
{
    if (durable && gsrv_wal_on()) {
        /* the log makes it durable (wal.c) */
        int rc = replace(rel, buf, len, false);
        if (!rc)
            gsrv_wal_log(GSRV_WAL_PUT, rel, buf, len);
        return rc;
    }
    return replace(rel, buf, len, durable);
}

int gsrv_meta_replace(const char *rel, const void *buf, size_t len)
{
    return replace(rel, buf, len, true);
}

int gsrv_meta_read(const char *rel, uint8_t **buf, size_t *len, size_t max)
{
    struct stat st;
    int rc = 0;

    *buf = NULL;
    *len = 0;
    int fd = openat(gsrv_g.dfd, rel, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        goto out_close;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = -EINVAL;
        goto out_close;
    }
    if ((uint64_t)st.st_size > max) {
        rc = -EFBIG;
        goto out_close;
    }
    size_t want = (size_t)st.st_size;
    uint8_t *p = malloc(want ? want : 1);
    if (!p) {
        rc = -ENOMEM;
        goto out_close;
    }
    size_t got = 0;
    while (got < want) {
        ssize_t n = read(fd, p + got, want - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            goto out_free_buf;
        }
        if (n == 0)
            break; /* shrank under us: decode will reject it */
        got += (size_t)n;
    }
    *buf = p;
    *len = got;
    close(fd);
    return 0;

out_free_buf:
    free(p);
out_close:
    close(fd);
    return rc;
}

int gsrv_meta_unlink(const char *rel)
{
    if (unlinkat(gsrv_g.dfd, rel, 0) < 0)
        return errno == ENOENT ? 0 : -errno; /* (nothing to log) */
    if (gsrv_wal_on())
        gsrv_wal_log(GSRV_WAL_DEL, rel, NULL, 0);
    return 0;
}

int gsrv_meta_mkdir(const char *rel)
{
    if (mkdirat(gsrv_g.dfd, rel, 0755) < 0)
        return -errno;
    if (gsrv_wal_on())
        gsrv_wal_log(GSRV_WAL_MKDIR, rel, NULL, 0);
    return 0;
}

int gsrv_meta_rmdir(const char *rel)
{
    if (unlinkat(gsrv_g.dfd, rel, AT_REMOVEDIR) < 0)
        return -errno;
    if (gsrv_wal_on())
        gsrv_wal_log(GSRV_WAL_RMDIR, rel, NULL, 0);
    return 0;
}

bool gsrv_meta_is_tmp(const char *name)
{
    size_t n = strlen(name);
    return n >= 4 && strcmp(name + n - 4, ".tmp") == 0;
}

bool gsrv_parse_u64(const char *s, size_t n, uint64_t *out)
{
    if (n == 0)
        n = strlen(s);
    if (n == 0 || n > 20)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    /* canonical form only: "007" is not the name we would have written */
    if (n > 1 && s[0] == '0')
        return false;
    *out = v;
    return true;
}

int gsrv_meta_scan(gsrv_scan *sc)
{
    int fd = openat(gsrv_g.dfd, sc->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    size_t sl = strlen(sc->suffix);
    int rc = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        const char *name = de->d_name;
        size_t len = strlen(name);
        uint64_t n;
        if (name[0] == '.')
            continue;
        if (sc->remove_tmp && gsrv_meta_is_tmp(name))
            unlinkat(fd, name, 0);
        else if (len > sl && strcmp(name + len - sl, sc->suffix) == 0 &&
                 gsrv_parse_u64(name, len - sl, &n))
            rc = sc->numbered(sc, fd, name, n);
        else
            rc = sc->other(sc, fd, name);
    }
    closedir(d);
    return rc;
}
