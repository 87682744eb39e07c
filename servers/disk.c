/*
 * disk.c -- the DiskManager (paper, section 4.2.3): block reads and writes
 * on the forks' Unix files, in cyclic-scan (C-SCAN) order.
 *
 * Threads: the DiskManager thread (dm_main) does the reads the
 * CacheManager thread submits; handler threads do their write-through
 * writes themselves (gsrv_disk_write_wait, below).  disk.lock guards the
 * queue and is the last lock in the order (gsrv_internal.h): submitters may
 * hold nothing or fork->rw, never cache.lock.  Completion callbacks run on the
 * DiskManager thread with no lock held.
 *
 * Scheduling: pending requests are kept sorted by the key (fkid, block
 * number) -- the fork file plays the role of the cylinder.  The head
 * position is the key last serviced; the next request is the first one at
 * or after it, wrapping to the lowest key when none is ahead (C-SCAN: one
 * direction only, so no region waits for two sweeps).  Equal keys are kept
 * in arrival order.  Requests for consecutive blocks of the same file
 * found together at the head are merged into one preadv/pwritev (at most
 * DM_RUN blocks); a merged transfer that fails is retried block by block
 * so that each request gets its own result.
 *
 * Reads past the end of the file return zeros.  Fds belong to the forks
 * (subfile.c); a request's fork is referenced by its submitter until the
 * request completes, so the fd stays open.
 */
#include "gsrv_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DM_RUN 64 /* blocks per merged transfer (2 MB) */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t work;
    gsrv_dreq head;    /* sentinel of the sorted circular list */
    gsrv_dreq *cursor; /* next to service; NULL: wrap to the lowest */
    uint64_t pos_fkid; /* head position: key last serviced */
    uint64_t pos_bno;
    size_t n;
    bool stop;
    bool running;
    pthread_t thread;
} disk = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .work = PTHREAD_COND_INITIALIZER,
};

static int key_cmp(uint64_t af, uint64_t ab, uint64_t bf, uint64_t bb)
{
    if (af != bf)
        return af < bf ? -1 : 1;
    if (ab != bb)
        return ab < bb ? -1 : 1;
    return 0;
}

static int dreq_cmp(const void *a, const void *b)
{
    const gsrv_dreq *x = *(gsrv_dreq *const *)a;
    const gsrv_dreq *y = *(gsrv_dreq *const *)b;
    return key_cmp(x->fkid, x->bno, y->fkid, y->bno);
}

/* ---------------------------------------------------------------- I/O ---- */

/* Full transfer of iov[0..cnt) at off; reads stop at end of file and
 * zero-fill the rest.  Modifies iov. */
static int xfer(int fd, int op, struct iovec *iov, int cnt, off_t off)
{
    while (cnt > 0) {
        ssize_t n = op == GSRV_DISK_READ ? preadv(fd, iov, cnt, off)
                                         : pwritev(fd, iov, cnt, off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0) {
            if (op == GSRV_DISK_WRITE)
                return -EIO;
            for (int i = 0; i < cnt; i++) /* past end of file */
                memset(iov[i].iov_base, 0, iov[i].iov_len);
            return 0;
        }
        off += n;
        while (cnt > 0 && (size_t)n >= iov->iov_len) {
            n -= (ssize_t)iov->iov_len;
            iov++;
            cnt--;
        }
        if (cnt > 0 && n > 0) {
            iov->iov_base = (char *)iov->iov_base + n;
            iov->iov_len -= (size_t)n;
        }
    }
    return 0;
}

/* One transfer for run[0..k): consecutive blocks of one file. */
static int do_run(gsrv_dreq **run, int k)
{
    struct iovec iov[DM_RUN];
    for (int i = 0; i < k; i++) {
        iov[i].iov_base = run[i]->buf + run[i]->lo;
        iov[i].iov_len = run[i]->hi - run[i]->lo;
    }
    off_t off = (off_t)(run[0]->bno * GSRV_BLOCK_SIZE + run[0]->lo);
    return xfer(run[0]->fd, run[0]->op, iov, k, off);
}

/* Move run[0..k) in one transfer; if that fails, block by block, so that
 * each block gets its own outcome in err[i] (a block rewritten or read
 * alone without error succeeded).  The one retry rule of both the
 * DiskManager thread and the write-through path. */
static void do_run_each(gsrv_dreq **run, int k, int *err)
{
    int e = do_run(run, k);
    for (int i = 0; i < k; i++)
        err[i] = e && k > 1 ? do_run(&run[i], 1) : e;
}

static bool mergeable(const gsrv_dreq *a, const gsrv_dreq *b)
{
    return b->fkid == a->fkid && b->fd == a->fd && b->op == a->op &&
           b->bno == a->bno + 1 && a->hi == GSRV_BLOCK_SIZE && b->lo == 0;
}

static void *dm_main(void *arg)
{
    gsrv_dreq *run[DM_RUN];
    int err[DM_RUN];

    pthread_mutex_lock(&disk.lock);
    for (;;) {
        while (disk.n == 0 && !disk.stop)
            pthread_cond_wait(&disk.work, &disk.lock);
        if (disk.n == 0)
            break;
        gsrv_dreq *d = disk.cursor ? disk.cursor : disk.head.next;
        int k = 0;
        run[k++] = d;
        while (k < DM_RUN && d->next != &disk.head && mergeable(d, d->next)) {
            d = d->next;
            run[k++] = d;
        }
        disk.cursor = d->next == &disk.head ? NULL : d->next;
        disk.pos_fkid = d->fkid;
        disk.pos_bno = d->bno;
        /* unlink run[0..k): they are consecutive in the list */
        run[0]->prev->next = d->next;
        d->next->prev = run[0]->prev;
        disk.n -= (size_t)k;
        pthread_mutex_unlock(&disk.lock);

        do_run_each(run, k, err);
        for (int i = 0; i < k; i++)
            run[i]->done(run[i], err[i]);
        pthread_mutex_lock(&disk.lock);
    }
    pthread_mutex_unlock(&disk.lock);
    return NULL;
}

/* ------------------------------------------------------------ public ---- */

int gsrv_disk_start(void)
{
    disk.head.next = disk.head.prev = &disk.head;
    disk.cursor = NULL;
    disk.n = 0;
    disk.stop = false;
    int rc = pthread_create(&disk.thread, NULL, dm_main, NULL);
    if (rc)
        return -rc;
    disk.running = true;
    return 0;
}

void gsrv_disk_stop(void)
{
    if (!disk.running)
        return;
    pthread_mutex_lock(&disk.lock);
    disk.stop = true;
    pthread_cond_signal(&disk.work);
    pthread_mutex_unlock(&disk.lock);
    pthread_join(disk.thread, NULL);
    disk.running = false;
}

void gsrv_disk_submit(gsrv_dreq **reqs, size_t n)
{
    if (n == 0)
        return;
    qsort(reqs, n, sizeof(*reqs), dreq_cmp);
    pthread_mutex_lock(&disk.lock);
    /* merge the sorted batch into the sorted list */
    gsrv_dreq *p = disk.head.next;
    for (size_t i = 0; i < n; i++) {
        gsrv_dreq *d = reqs[i];
        while (p != &disk.head &&
               key_cmp(p->fkid, p->bno, d->fkid, d->bno) <= 0)
            p = p->next;
        d->next = p;
        d->prev = p->prev;
        p->prev->next = d;
        p->prev = d;
        /* ahead of the head position and before the current next one? */
        if (key_cmp(d->fkid, d->bno, disk.pos_fkid, disk.pos_bno) >= 0 &&
            (!disk.cursor ||
             key_cmp(d->fkid, d->bno, disk.cursor->fkid, disk.cursor->bno) < 0))
            disk.cursor = d;
    }
    disk.n += n;
    pthread_cond_signal(&disk.work);
    pthread_mutex_unlock(&disk.lock);
}

/*
 * Write-through runs on the calling handler thread: handing the blocks to
 * the DiskManager thread and sleeping until it is done cost two thread
 * wake-ups per request, the largest part of a small write's round trip on
 * a busy host.  The blocks of one request come sorted (io.c walks them in
 * ascending order), so consecutive ones still go as one pwritev; the
 * DiskManager's C-SCAN queue now orders the CacheManager's reads.
 */
int gsrv_disk_write_wait(gsrv_dreq **reqs, size_t n)
{
    int err = 0, e[DM_RUN];
    for (size_t i = 0; i < n; i++)
        reqs[i]->op = GSRV_DISK_WRITE;
    qsort(reqs, n, sizeof(*reqs), dreq_cmp);
    for (size_t i = 0; i < n;) {
        size_t k = 1;
        while (i + k < n && k < DM_RUN &&
               mergeable(reqs[i + k - 1], reqs[i + k]))
            k++;
        /* the first block that fails is the error; if every block is
         * written alone the run is, and it succeeded */
        do_run_each(&reqs[i], (int)k, e);
        for (size_t j = 0; j < k && !err; j++)
            err = e[j];
        i += k;
    }
    return err;
}
