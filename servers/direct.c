/*
 * direct.c -- DIRECT_OPEN / DIRECT_COPEN / DIRECT_CLOSE: a client on this
 * host, running as this server's user, gets a descriptor of a fork's Unix
 * file (and, checksummed, of its CRC sidecar) and moves the fork's data
 * itself with pread / pwrite (libgalley/direct.c), the way
 * Linux NFS LOCALIO hands a same-host client the server's open file and
 * HDFS short-circuit reads pass a block file's descriptor over a Unix
 * socket.  The data no longer passes through this process: no round trip,
 * no second copy.  The server stays the authority for everything else
 * (names, create and delete, fork sizes, truncate, locks, counters, sync,
 * IO_STATS).
 *
 * Who may.  Only a connection over the same-host Unix socket whose peer's
 * uid, as the kernel recorded it at connect (SO_PEERCRED), is ours, after
 * it has proven the cluster secret (handler.c refuses every request
 * before).  Anyone else -- TCP, another user -- gets GFS_EDIRECT and keeps
 * using the server path; another user could not open our 0600 files
 * anyway.  What it gets is a new open file description of the fork's file
 * (reopened through /proc/self/fd, so a fork deleted while open still
 * works, as an unlinked file does for two local processes): O_RDONLY
 * unless it asked to write, and the fork's byte x is the file's byte base
 * + x (base is 0 today: a fork's file holds only its data).  The reply
 * carries it by SCM_RIGHTS (handler.c); the client receives it
 * close-on-exec.
 *
 * The coherence invariant: the server's cache never serves, nor writes
 * back, bytes older than a direct write.  Kept by three rules:
 *
 *   1. A writable grant is given with the fork's rwlock held exclusively,
 *      so no request is using the fork's cached blocks; the cache is
 *      write-through, so it holds nothing the file lacks ("flushed"); the
 *      fork's blocks are dropped and f->direct_w is raised.
 *   2. While f->direct_w > 0, the data path (io*.c) neither reads nor
 *      fills the cache for the fork: reads come from the file
 *      (g_fd_read), writes go to the
 *      file with exactly the bytes the request carries (g_fd_write),
 *      never a block with bytes around them; and the fork's size is the
 *      file's (gsrv_fork_size: fstat), since direct writers grow it.
 *   3. The last writable grant's release stores the file's size as the
 *      fork's and lowers direct_w, under the rwlock held exclusively;
 *      blocks cached afterwards come from the file, which by then holds
 *      every direct write (the holder's pwrites had returned before it
 *      released; a holder killed with -9 releases at its connection's
 *      end, after its last pwrite).
 *
 * Locked mode (DIRECT_WOPEN with sieve 1, gmsg.h): a client may write a
 * whole span it read -- its own small pieces and the bytes between them
 * (data sieving, as ROMIO's ufs: does under fcntl locks) -- only if no
 * other writer can change the span meanwhile.  So while f->direct_lk > 0
 * every writer of the file locks what it writes with an exclusive OFD
 * lock (fdio.h: g_fd_write_locked): each locked holder on its own open
 * file description, and write_bypass.c on ours.  Kept by four more rules:
 *
 *   4. A fork enters locked mode only while every writable grant is
 *      locked (direct_w == direct_lk; a holder that does not lock would
 *      write into a sieved span unseen): else the sieving client is
 *      refused (GFS_EDIRECT) and uses the server path.
 *   5. In locked mode every new writable grant is locked (DIRECT_WOPEN
 *      says so; DIRECT_OPEN, whose clients do not lock, is refused).
 *   6. direct_lk changes with direct_w, under the rwlock held
 *      exclusively, so a server write (rwlock exclusive) sees one mode
 *      for all of its pieces.
 *   7. A checksummed fork is never in locked mode, so its writers -- the
 *      DIRECT_COPEN holders (csfile.h) and write_bypass.c (csum.c's bypass) --
 *      need no data-file locks: DIRECT_WOPEN is refused for it
 *      (fork_direct_ok, checked again under the rwlock), and a fork
 *      becomes checksummed (DIRECT_COPEN, a first IO_CWRITE) only while
 *      no writable grant is held.  A DIRECT_COPEN grant counts in
 *      direct_w and never in direct_lk, as a writer that takes no
 *      data-file locks, so rule 4 refuses locked mode while one is held;
 *      DIRECT_COPEN is refused in locked mode.  A client never sieves a
 *      checksummed fork: its small writes go to the server.
 *
 * A locked holder killed with -9 mid-write loses its locks with its last
 * descriptor of the description (ours is closed once sent, handler.c):
 * nobody waits for it, and what it had written of a span is the span's
 * bytes as read under the lock with its own pieces in them.
 *
 * Read-only grants change nothing here: with write-through, the file
 * always holds every write the server acknowledged.  A fork never written
 * has no file yet (subfile.c); a grant makes it, since the descriptor must
 * be of the file later writes go to, and a read-only grant that finds no
 * room for it is refused (GFS_EDIRECT): the server path reads the fork as
 * empty and makes nothing.  A truncate is an ftruncate of the shared
 * file; a delete of an open fork unlinks it at its last close while
 * descriptors keep working -- both as for two local processes sharing a
 * file.
 *
 * IO_STATS: the holder counts the bytes it moves and reports them in
 * DIRECT_CLOSE (at fork close and gfs_finalize); they are added as
 * same-host traffic.  A holder killed before it closes takes its counts
 * with it.
 *
 * Threads: handler threads.  Locks: the fork's rwlock, exclusively and
 * briefly, in grants and releases of writable descriptors; c->grants is
 * touched by the connection's own handler thread only.
 */
#include "subfile_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct gsrv_grant {
    uint64_t fkid;
    bool write;
    bool locked;  /* write, in locked mode */
    bool cs;      /* DIRECT_COPEN: counted in direct_w, read-only or not */
    gsrv_fork *f; /* a reference (gsrv_fork_get) while granted */
} gsrv_grant;

uint64_t gsrv_fork_file_size(const gsrv_fork *f)
{
    struct stat st;
    if (f->fd >= 0 && fstat(f->fd, &st) == 0)
        return (uint64_t)st.st_size;
    return __atomic_load_n(&f->size, __ATOMIC_ACQUIRE);
}

/* May f's data move directly with DIRECT_OPEN or DIRECT_WOPEN?  The one
 * place a fork is refused plain direct access for what it is; the client
 * then uses the server path for it, whatever GALLEY_TRANSPORT says.  A
 * checksummed fork may not: a client that does not keep its CRCs would
 * leave them stale.  Its clients ask with DIRECT_COPEN instead (below). */
static bool fork_direct_ok(const gsrv_fork *f)
{
    return f->cfd < 0; /* checksummed: DIRECT_COPEN only */
}

/* A reference to fork fkid for a grant, its data file made if it has
 * none (see the header: refused read-only on a full disk). */
static int grant_fork(uint64_t fkid, bool write, gsrv_fork **f)
{
    int rc = gsrv_fork_get(fkid, GSRV_FORK_WRITE, f);
    return !write && (rc == -ENOSPC || rc == -EDQUOT) ? GFS_EDIRECT : rc;
}

/* May this connection have descriptors? */
static bool eligible(const gsrv_conn *c)
{
    return c->local && c->has_cred && c->uid == geteuid();
}

/* A new open file description of f's file, read-only unless write. */
static int reopen(const gsrv_fork *f, bool write)
{
    int flags = (write ? O_RDWR : O_RDONLY) | O_CLOEXEC;
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", f->fd);
    int fd = open(path, flags);
    if (fd >= 0)
        return fd;
    /* no /proc: by name (a fork deleted while open has none left) */
    fork_file(gsrv_fkid_hid(f->fkid), f->index, path, sizeof(path));
    fd = openat(gsrv_g.dfd, path, flags);
    return fd >= 0 ? fd : errno == ENOENT ? GFS_ESTALE : -errno;
}

/* dead: its holder never closed it (its connection ended). */
static void release(gsrv_grant *g, bool dead)
{
    gsrv_fork *f = g->f;
    if (g->write || g->cs) {
        pthread_rwlock_wrlock(&f->rw);
        if (dead && g->cs && g->write) /* a write it was inside (csum.c) */
            gsrv_csum_settle_dead(f);
        if (__atomic_load_n(&f->direct_w, __ATOMIC_RELAXED) == 1)
            gsrv_fork_set_size(f, gsrv_fork_file_size(f)); /* rule 3 */
        if (g->locked)                                     /* rule 6 */
            __atomic_sub_fetch(&f->direct_lk, 1, __ATOMIC_RELEASE);
        __atomic_sub_fetch(&f->direct_w, 1, __ATOMIC_RELEASE);
        pthread_rwlock_unlock(&f->rw);
    }
    gsrv_fork_put(f);
}

/* Room for one more grant in c's table: 0 or an error. */
static int grants_room(gsrv_conn *c)
{
    if (c->ngrants < c->capgrants)
        return 0;
    if (c->ngrants >= GSRV_MAX_OPENS_PER_CONN)
        return -EMFILE;
    size_t cap = c->capgrants ? 2 * c->capgrants : 16;
    gsrv_grant *p = realloc(c->grants, cap * sizeof(*p));
    if (!p)
        return -ENOMEM;
    c->grants = p;
    c->capgrants = cap;
    return 0;
}

/* Grant c a descriptor of fork fkid: read-only, writable (write), in
 * locked mode if the fork is in it (may_lock; else refused there, rule
 * 5), or putting it in locked mode (sieve; refused unless rule 4 lets
 * it).  *locked: the mode given.  0 with the reply made, or an error. */
static int grant(gsrv_conn *c, uint64_t fkid, bool write, bool may_lock,
                 bool sieve, gsrv_reply *rep, bool *locked)
{
    if (!eligible(c))
        return GFS_EDIRECT;
    int rc = grants_room(c);
    if (rc)
        return rc;
    gsrv_fork *f;
    rc = grant_fork(fkid, write, &f);
    if (rc)
        return rc;
    if (!fork_direct_ok(f)) {
        gsrv_fork_put(f);
        return GFS_EDIRECT;
    }
    int fd = reopen(f, write);
    if (fd < 0) {
        gsrv_fork_put(f);
        return fd;
    }
    *locked = false;
    if (write) { /* rule 1 */
        pthread_rwlock_wrlock(&f->rw);
        uint32_t w = __atomic_load_n(&f->direct_w, __ATOMIC_RELAXED);
        uint32_t lk = __atomic_load_n(&f->direct_lk, __ATOMIC_RELAXED);
        /* rules 4, 5; and 7: checked again under rw, since a DIRECT_COPEN
         * or a first IO_CWRITE may have made the fork checksummed */
        if (!fork_direct_ok(f) || (sieve && lk < w) || (lk && !may_lock)) {
            pthread_rwlock_unlock(&f->rw);
            close(fd);
            gsrv_fork_put(f);
            return GFS_EDIRECT;
        }
        if (w == 0)
            gsrv_cache_drop_fork(f->fkid);
        *locked = sieve || lk;
        if (*locked) /* rule 6 */
            __atomic_add_fetch(&f->direct_lk, 1, __ATOMIC_RELEASE);
        __atomic_add_fetch(&f->direct_w, 1, __ATOMIC_RELEASE);
        pthread_rwlock_unlock(&f->rw);
    }
    c->grants[c->ngrants++] = (gsrv_grant){fkid, write, *locked, false, f};
    rep->pass_fd = fd;
    return 0;
}

int gsrv_do_DIRECT_OPEN(gsrv_conn *c, const gp_DIRECT_OPEN_req *m,
                        gp_DIRECT_OPEN_rep *r, gsrv_call *k)
{
    if (m->fkid == 0) /* only asking */
        return eligible(c) ? 0 : GFS_EDIRECT;
    bool locked;
    int rc = grant(c, m->fkid, m->write != 0, false, false, k->rep, &locked);
    if (!rc)
        r->size = gsrv_fork_size(c->grants[c->ngrants - 1].f);
    return rc;
}

int gsrv_do_DIRECT_WOPEN(gsrv_conn *c, const gp_DIRECT_WOPEN_req *m,
                         gp_DIRECT_WOPEN_rep *r, gsrv_call *k)
{
    bool locked;
    int rc = grant(c, m->fkid, true, true, m->sieve != 0, k->rep, &locked);
    if (!rc) {
        r->size = gsrv_fork_size(c->grants[c->ngrants - 1].f);
        r->locked = locked;
    }
    return rc;
}

/*
 * DIRECT_COPEN: a checksummed fork for a client that keeps its CRCs
 * itself (common/csfile.h: every holder, this server included, takes the
 * chunks' locks on the sidecar).  Part 0 is a grant as DIRECT_OPEN's,
 * except that the fork is made checksummed if it is not yet (as by its
 * first IO_CWRITE) and that every such grant, read-only too, counts in
 * direct_w: while one is held, the data path's reads and writes of the fork
 * bypass the cache and go through the same locked, checked calls
 * (csum.c, bypass), since the cache path takes no chunk locks.  Part 1
 * passes the sidecar (read-write: a writer's entries, a reader's shared
 * locks) to a connection holding part 0 of the fork.  Its holders take
 * no data-file locks, so its grants are never locked (rule 7).
 */
int gsrv_do_DIRECT_COPEN(gsrv_conn *c, const gp_DIRECT_COPEN_req *m,
                         gp_DIRECT_COPEN_rep *r, gsrv_call *k)
{
    if (!eligible(c))
        return GFS_EDIRECT;
    bool write = m->write != 0;
    if (m->part > 1)
        return -EINVAL;
    if (m->part == 1) {
        for (size_t i = 0; i < c->ngrants; i++) {
            gsrv_grant *g = &c->grants[i];
            if (g->fkid != m->fkid || !g->cs)
                continue;
            char path[64];
            snprintf(path, sizeof(path), "/proc/self/fd/%d", g->f->cfd);
            int fd = open(path, O_RDWR | O_CLOEXEC);
            if (fd < 0)
                return -errno;
            r->size = gsrv_fork_size(g->f);
            k->rep->pass_fd = fd;
            return 0;
        }
        return GFS_EBADID;
    }
    int rc = grants_room(c);
    if (rc)
        return rc;
    gsrv_fork *f;
    rc = grant_fork(m->fkid, write, &f);
    if (rc)
        return rc;
    pthread_rwlock_wrlock(&f->rw); /* rule 1 */
    if (gsrv_fork_locked(f))       /* rule 7 */
        rc = GFS_EDIRECT;
    else if (f->cfd < 0) /* plain direct writers would not keep the CRCs */
        rc = gsrv_fork_direct(f) ? GFS_EDIRECT : gsrv_csum_create(f);
    int fd = rc ? rc : reopen(f, write);
    if (fd >= 0) {
        if (__atomic_load_n(&f->direct_w, __ATOMIC_RELAXED) == 0)
            gsrv_cache_drop_fork(f->fkid);
        __atomic_add_fetch(&f->direct_w, 1, __ATOMIC_RELEASE);
    }
    pthread_rwlock_unlock(&f->rw);
    if (fd < 0) {
        gsrv_fork_put(f);
        return fd;
    }
    c->grants[c->ngrants++] = (gsrv_grant){m->fkid, write, false, true, f};
    r->size = gsrv_fork_size(f);
    k->rep->pass_fd = fd;
    return 0;
}

int gsrv_do_DIRECT_CLOSE(gsrv_conn *c, const gp_DIRECT_CLOSE_req *m,
                         gp_DIRECT_CLOSE_rep *r, gsrv_call *k)
{
    bool write = m->write != 0;
    for (size_t i = c->ngrants; i-- > 0;) {
        gsrv_grant *g = &c->grants[i];
        if (g->fkid != m->fkid || g->write != write)
            continue;
        gsrv_grant mine = *g;
        c->grants[i] = c->grants[--c->ngrants];
        release(&mine, false);
        gsrv_iostat_count(c, true, m->written);
        gsrv_iostat_count(c, false, m->read);
        return 0;
    }
    return GFS_EBADID;
}

void gsrv_direct_drop_conn(gsrv_conn *c)
{
    for (size_t i = 0; i < c->ngrants; i++)
        release(&c->grants[i], true);
    free(c->grants);
    c->grants = NULL;
    c->ngrants = c->capgrants = 0;
}
