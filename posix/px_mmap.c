/*
 * px_mmap.c -- mmap of a Galley descriptor (see galley_posix.c).
 *
 * The kernel cannot map a Galley file (its descriptor is an O_PATH
 * placeholder), so a map of one is anonymous memory that this library
 * fills from the file and, for a shared map that may write, writes back:
 *   - mmap reads the mapped range into new memory (up to the end of the
 *     file; the rest of the map reads as zeros, where the kernel would
 *     raise SIGBUS on a page wholly past the end).  A MAP_SHARED map is
 *     shared memory, so a child forked after it shares it as it would
 *     share a file's pages.
 *   - A shared map of a file open for reading and writing is tracked here
 *     with a copy of what was read (its base).  msync, munmap, mremap, an
 *     mmap MAP_FIXED over it, and exit() (atexit) write the bytes that
 *     differ from the base, never past the file's end at that moment, in
 *     one gfs_striped_listio, and make them the base.  A byte the program
 *     did not store through the map is never written, so what other
 *     processes wrote elsewhere in the same pages survives.  msync with
 *     MS_SYNC then syncs the file (gfs_striped_sync), as fsync does.
 *   - So a map shows the file as it was at mmap, with the program's own
 *     stores; later write()s and other processes' writes show in a new
 *     map.  Stores reach the file at msync, munmap or exit(); a process
 *     that ends without exit() (_exit, a signal) loses those it did not
 *     msync, where a local file's pages would keep them.
 *   - A private map is a copy, as the kernel's is once written (the
 *     kernel's unwritten pages may show later writes; these never do).
 *   - A tracked map holds a reference to its open file, as the kernel's
 *     map holds the file: closing the descriptor leaves it usable.
 *   - mremap of a tracked map moves or resizes it whole (growing reads
 *     the new part from the file); mremap of a part of one: EINVAL.
 * A write-back that fails makes msync, munmap or mremap fail with the
 * error (EIO for a lost server); munmap still unmaps, and exit() reports
 * it on stderr: stores that did not reach the file are never silent.
 *
 * Threads: any.  px_map_lock guards the table and is held across a
 * write-back; a thread inside one (px_in_map) maps and unmaps past this
 * file, so libgalley's own maps never wait for it.
 */
#define _GNU_SOURCE
#include "px_internal.h"

#include <sys/mman.h>

typedef struct px_map {
    char *addr;  /* the map, page-aligned */
    size_t len;  /* bytes, a multiple of the page size */
    int64_t off; /* the file offset of addr */
    char *base;  /* what the file held, as far as this map knows */
    px_file *f;  /* a reference to the open file */
    int prot;    /* as mapped */
} px_map;

static pthread_mutex_t px_map_lock = PTHREAD_MUTEX_INITIALIZER;
static px_map *px_maps;
static size_t px_nmaps, px_capmaps; /* px_nmaps read without the lock */
static __thread bool px_in_map;
static pthread_once_t px_map_once = PTHREAD_ONCE_INIT;

static size_t page_size(void)
{
    static size_t ps;
    if (!ps)
        ps = (size_t)sysconf(_SC_PAGESIZE);
    return ps;
}

static size_t page_up(size_t n)
{
    return (n + page_size() - 1) & ~(page_size() - 1);
}

/* ------------------------------------------------------------------------
 * Write-back
 * ------------------------------------------------------------------------ */

/* Append the runs of bytes of m in [from, to) that differ from its base
 * to *e (*n of *cap); false if out of memory. */
static bool changed_runs(const px_map *m, size_t from, size_t to,
                         gfs_list_entry **e, int64_t *n, int64_t *cap)
{
    size_t ps = page_size();
    for (size_t p = from; p < to; p = (p / ps + 1) * ps) {
        size_t end = (p / ps + 1) * ps < to ? (p / ps + 1) * ps : to;
        if (!memcmp(m->addr + p, m->base + p, end - p))
            continue;
        for (size_t i = p; i < end;) {
            if (m->addr[i] == m->base[i]) {
                i++;
                continue;
            }
            size_t j = i;
            while (j < end && m->addr[j] != m->base[j])
                j++;
            gfs_list_entry *last = *n ? &(*e)[*n - 1] : NULL;
            if (last && last->mem_offset + last->size == (int64_t)i) {
                last->size += (int64_t)(j - i);
            } else {
                if (*n == *cap) {
                    int64_t c = *cap ? *cap * 2 : 64;
                    gfs_list_entry *g = realloc(*e, (size_t)c * sizeof(*g));
                    if (!g)
                        return false;
                    *e = g;
                    *cap = c;
                }
                (*e)[(*n)++] =
                    (gfs_list_entry){.file_offset = m->off + (int64_t)i,
                                     .mem_offset = (int64_t)i,
                                     .size = (int64_t)(j - i)};
            }
            i = j;
        }
    }
    return true;
}

/* Write the stores in [from, to) of m (offsets in the map) to its file:
 * 0 or a gfs error (px_map_lock held). */
static int write_back(px_map *m, size_t from, size_t to)
{
    int sid = px_sid(m->f);
    if (sid < 0)
        return sid;
    int64_t size = gfs_striped_size(sid);
    if (size < 0)
        return (int)size;
    if (size <= m->off)
        return 0;
    if ((uint64_t)(size - m->off) < to)
        to = (size_t)(size - m->off);
    gfs_list_entry *e = NULL;
    int64_t n = 0, cap = 0;
    int rc = 0;
    if (from < to && !changed_runs(m, from, to, &e, &n, &cap))
        rc = -ENOMEM;
    if (!rc && n) {
        int64_t k = gfs_striped_listio(sid, GFS_WRITE, n, e, m->addr);
        if (k < 0)
            rc = (int)k;
        else
            for (int64_t i = 0; i < n; i++)
                memcpy(m->base + e[i].mem_offset, m->addr + e[i].mem_offset,
                       (size_t)e[i].size);
    }
    free(e);
    return rc;
}

/* Write back every tracked map's stores in [a, a + len); with forget,
 * stop tracking that range too (the maps are trimmed or split).  0 or the
 * first gfs error (px_map_lock held). */
static int write_back_range(char *a, size_t len, bool forget)
{
    int rc = 0;
    for (size_t i = 0; i < px_nmaps; i++) {
        px_map *m = &px_maps[i];
        char *lo = a > m->addr ? a : m->addr;
        char *hi = a + len < m->addr + m->len ? a + len : m->addr + m->len;
        if (lo >= hi)
            continue;
        size_t from = (size_t)(lo - m->addr), to = (size_t)(hi - m->addr);
        int e = write_back(m, from, to);
        if (e && !rc)
            rc = e;
        if (!forget)
            continue;
        if (from == 0 && to == m->len) { /* all of it */
            REAL(munmap)(m->base, m->len);
            px_put(m->f);
            px_maps[i--] = px_maps[--px_nmaps];
        } else if (from == 0) { /* its head */
            REAL(munmap)(m->base, to);
            *m = (px_map){m->addr + to, m->len - to, m->off + (int64_t)to,
                          m->base + to, m->f,        m->prot};
        } else if (to == m->len) { /* its tail */
            REAL(munmap)(m->base + from, m->len - from);
            m->len = from;
        } else { /* its middle: the tail is a map of its own */
            if (px_nmaps == px_capmaps) {
                size_t c = px_capmaps ? px_capmaps * 2 : 8;
                px_map *g = realloc(px_maps, c * sizeof(*g));
                if (!g)
                    return -ENOMEM; /* (tracked whole still) */
                px_maps = g;
                px_capmaps = c;
                m = &px_maps[i];
            }
            px_hold(m->f);
            px_maps[px_nmaps++] =
                (px_map){m->addr + to, m->len - to, m->off + (int64_t)to,
                         m->base + to, m->f,        m->prot};
            REAL(munmap)(m->base + from, to - from);
            m = &px_maps[i];
            m->len = from;
        }
    }
    __atomic_store_n(&px_nmaps, px_nmaps, __ATOMIC_RELEASE);
    return rc;
}

/* ------------------------------------------------------------------------
 * Maps
 * ------------------------------------------------------------------------ */

/* At exit(): every tracked map's stores go to their files. */
static void px_map_exit(void)
{
    pthread_mutex_lock(&px_map_lock);
    px_in_map = true;
    for (size_t i = 0; i < px_nmaps; i++) {
        px_map *m = &px_maps[i];
        int rc = write_back(m, 0, m->len);
        if (rc)
            fprintf(stderr,
                    "galley: stores through a map of %s were not written at "
                    "exit: %s\n",
                    m->f->name, strerror(px_errno(rc)));
    }
    px_in_map = false;
    pthread_mutex_unlock(&px_map_lock);
}

/* fork(): the lock is taken around it, so no other thread is inside a
 * write-back then and the child's copy of the table is whole. */
static void px_map_fork_prepare(void)
{
    pthread_mutex_lock(&px_map_lock);
}

static void px_map_fork_done(void)
{
    pthread_mutex_unlock(&px_map_lock);
}

static void px_map_setup(void)
{
    atexit(px_map_exit);
    pthread_atfork(px_map_fork_prepare, px_map_fork_done, px_map_fork_done);
}

/* Fill p (len bytes) from f at off; 0 or a gfs error. */
static int fill(px_file *f, char *p, size_t len, int64_t off)
{
    for (size_t got = 0; got < len;) {
        int64_t k = px_pread(f, p + got, len - got, off + (int64_t)got);
        if (k < 0)
            return (int)k;
        if (k == 0)
            break; /* the end of the file: zeros from here */
        got += (size_t)k;
    }
    return 0;
}

/* mmap of our file f: the map, or MAP_FAILED with errno. */
static void *px_map_file(px_file *f, void *addr, size_t len, int prot,
                         int flags, off_t off)
{
    int acc = f->flags & O_ACCMODE;
    bool shared = (flags & MAP_TYPE) != MAP_PRIVATE;
    if (f->dir) {
        errno = ENODEV;
        return MAP_FAILED;
    }
    if (len == 0 || off < 0 || (size_t)off % page_size()) {
        errno = EINVAL;
        return MAP_FAILED;
    }
    if (acc == O_WRONLY || (shared && (prot & PROT_WRITE) && acc != O_RDWR)) {
        errno = EACCES;
        return MAP_FAILED;
    }
    size_t n = page_up(len);
    bool track = shared && acc == O_RDWR;
    if (track)
        pthread_once(&px_map_once, px_map_setup);
    pthread_mutex_lock(&px_map_lock);
    px_in_map = true;
    int rc = 0;
    if (flags & MAP_FIXED) /* whatever it replaces was unmapped first */
        rc = write_back_range(addr, n, true);
    char *p = MAP_FAILED, *base = NULL;
    if (!rc && track && px_nmaps == px_capmaps) {
        size_t c = px_capmaps ? px_capmaps * 2 : 8;
        px_map *g = realloc(px_maps, c * sizeof(*g));
        if (g) {
            px_maps = g;
            px_capmaps = c;
        } else {
            rc = -ENOMEM;
        }
    }
    if (!rc) {
        int fl = (flags & ~(MAP_TYPE | MAP_SHARED_VALIDATE)) | MAP_ANONYMOUS |
                 (shared ? MAP_SHARED : MAP_PRIVATE);
        p = REAL(mmap)(addr, n, PROT_READ | PROT_WRITE, fl, -1, 0);
        if (p == MAP_FAILED)
            rc = -errno;
    }
    if (!rc)
        rc = fill(f, p, len, off);
    if (!rc && track) {
        base = REAL(mmap)(NULL, n, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (base == MAP_FAILED)
            rc = -errno;
        else
            memcpy(base, p, n);
    }
    if (!rc && prot != (PROT_READ | PROT_WRITE) && mprotect(p, n, prot) < 0)
        rc = -errno;
    if (!rc && track) {
        px_hold(f);
        px_maps[px_nmaps] = (px_map){p, n, off, base, f, prot};
        __atomic_store_n(&px_nmaps, px_nmaps + 1, __ATOMIC_RELEASE);
    }
    px_in_map = false;
    pthread_mutex_unlock(&px_map_lock);
    if (rc) {
        if (base && base != MAP_FAILED)
            REAL(munmap)(base, n);
        if (p != MAP_FAILED)
            REAL(munmap)(p, n);
        errno = px_errno(rc);
        return MAP_FAILED;
    }
    return p;
}

/* May a tracked map be there?  (A hint without the lock; none inside a
 * write-back, whose own maps and unmaps go past this file.) */
static bool px_mapped(void)
{
    return __atomic_load_n(&px_nmaps, __ATOMIC_ACQUIRE) != 0 && !px_in_map;
}

PX_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd,
                     off_t off)
{
    px_file *f = px_in_map ? NULL : px_get(fd);
    if (!f) {
        if ((flags & MAP_FIXED) && px_mapped()) {
            /* a map of anything else over a tracked one replaces it */
            pthread_mutex_lock(&px_map_lock);
            px_in_map = true;
            write_back_range(addr, page_up(len), true);
            px_in_map = false;
            pthread_mutex_unlock(&px_map_lock);
        }
        return REAL(mmap)(addr, len, prot, flags, fd, off);
    }
    void *p = px_map_file(f, addr, len, prot, flags, off);
    px_put(f);
    return p;
}

PX_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
                       off64_t off)
{
    return mmap(addr, len, prot, flags, fd, (off_t)off);
}

PX_EXPORT int munmap(void *addr, size_t len)
{
    int rc = 0;
    if (px_mapped()) {
        pthread_mutex_lock(&px_map_lock);
        px_in_map = true;
        rc = write_back_range(addr, page_up(len), true);
        px_in_map = false;
        pthread_mutex_unlock(&px_map_lock);
    }
    int r = REAL(munmap)(addr, len);
    return rc ? px_fail(rc) : r;
}

PX_EXPORT int msync(void *addr, size_t len, int flags)
{
    int rc = 0;
    if (px_mapped()) {
        pthread_mutex_lock(&px_map_lock);
        px_in_map = true;
        rc = write_back_range(addr, page_up(len), false);
        for (size_t i = 0; !rc && (flags & MS_SYNC) && i < px_nmaps; i++) {
            px_map *m = &px_maps[i];
            if ((char *)addr < m->addr + m->len && (char *)addr + len > m->addr)
                rc = gfs_striped_sync(px_sid(m->f));
        }
        px_in_map = false;
        pthread_mutex_unlock(&px_map_lock);
    }
    int r = REAL(msync)(addr, len, flags);
    return rc ? px_fail(rc) : r;
}

/* mremap of the whole of tracked map m (its stores written back) to
 * newlen: 0 with the map in *out, or a gfs error with nothing changed.
 * Shared anonymous memory cannot grow, so a map that grows is new memory
 * (MREMAP_MAYMOVE) or a second map right after it; the part past the old
 * end reads from the file. */
static int remap(px_map *m, size_t newlen, int flags, void **out)
{
    size_t n = page_up(newlen), was = m->len;
    if (flags & MREMAP_FIXED)
        return -EINVAL;
    if (n <= was) {
        REAL(munmap)(m->addr + n, was - n);
        REAL(munmap)(m->base + n, was - n);
        m->len = n;
        *out = m->addr;
        return 0;
    }
    char *more = calloc(1, n - was); /* what the file holds past the map */
    if (!more)
        return -ENOMEM;
    int rc = fill(m->f, more, n - was, m->off + (int64_t)was);
    char *p = MAP_FAILED, *base = MAP_FAILED;
    if (!rc) {
        base = REAL(mremap)(m->base, was, n, MREMAP_MAYMOVE);
        if (base == MAP_FAILED)
            rc = -errno;
    }
    if (!rc && (flags & MREMAP_MAYMOVE)) {
        p = REAL(mmap)(NULL, n, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED)
            memcpy(p, m->addr, was);
    } else if (!rc) {
        char *q =
            REAL(mmap)(m->addr + was, n - was, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (q != MAP_FAILED && q != m->addr + was) /* (an older kernel) */
            REAL(munmap)(q, n - was);
        p = q == m->addr + was ? m->addr : MAP_FAILED;
    }
    if (!rc && p == MAP_FAILED) {
        rc = -ENOMEM; /* as the kernel's when it cannot grow in place */
        m->base = REAL(mremap)(base, n, was, 0); /* (shrinks in place) */
    }
    if (!rc) {
        memcpy(p + was, more, n - was);
        memcpy(base + was, more, n - was);
        if (p != m->addr)
            REAL(munmap)(m->addr, was);
        if (m->prot != (PROT_READ | PROT_WRITE))
            mprotect(p, n, m->prot);
        *m = (px_map){p, n, m->off, base, m->f, m->prot};
        *out = p;
    }
    free(more);
    return rc;
}

PX_EXPORT void *mremap(void *old, size_t oldlen, size_t newlen, int flags, ...)
{
    void *want = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        want = va_arg(ap, void *);
        va_end(ap);
    }
    if (!px_mapped())
        return REAL(mremap)(old, oldlen, newlen, flags, want);
    pthread_mutex_lock(&px_map_lock);
    px_in_map = true;
    px_map *m = NULL;
    int rc = 0;
    for (size_t i = 0; i < px_nmaps; i++) {
        px_map *x = &px_maps[i];
        if ((char *)old < x->addr + x->len && (char *)old + oldlen > x->addr) {
            if (x->addr != old || page_up(oldlen) != x->len)
                rc = -EINVAL; /* a part of a tracked map */
            m = x;
            break;
        }
    }
    void *p = MAP_FAILED;
    if (!m) {
        p = REAL(mremap)(old, oldlen, newlen, flags, want);
    } else if (!rc && !(rc = write_back(m, 0, m->len))) {
        rc = remap(m, newlen, flags, &p);
    }
    px_in_map = false;
    pthread_mutex_unlock(&px_map_lock);
    if (rc)
        errno = px_errno(rc);
    return rc ? MAP_FAILED : p;
}
