/*
 * t_dstress.c -- threads of one process opening, reading, writing and
 * closing the same striped file at once, over whatever transport the
 * cluster gives (tests/test_direct.py runs it with the direct one).  The
 * opens of one fork share its direct grant, so the closes of one thread
 * release what other threads' transfers and closes are using.
 *
 *   t_dstress NAME NTHREADS SECONDS [NSUB [SEED]]
 *        create striped file NAME over NSUB subfiles (default: every
 *        server) with a 4 KiB stripe unit; then NTHREADS threads, each
 *        owning REGION bytes of it, for SECONDS: open, a few random
 *        operations on its own region (single-range and list reads,
 *        whole-range and 16-byte-piece list writes), close, again (thread
 *        0 keeps one open through the run: the grants of its forks are
 *        released under it by the others' closes).  Every
 *        byte read is checked against the thread's copy of its region;
 *        at the end one open reads the whole file back.  Prints
 *        "STRESS threads T opens O writes W reads R" and the verdict.
 *
 * Threads: NTHREADS, each with its own counters and region (thelp.h's
 * checks are made by the main thread only, from their totals).
 */
#include <pthread.h>
#include <unistd.h>

#include "thelp.h"

#define UNIT 4096
#define REGION (16 * UNIT) /* bytes each thread owns */
#define SMALL 16           /* bytes of a small list piece */
#define NPIECE 8           /* pieces of a list read or write */

typedef struct worker {
    pthread_t tid;
    int idx;
    const char *name;
    double until;
    uint64_t seed;
    unsigned char *shadow; /* what its region holds */
    unsigned char *buf;
    int64_t opens, writes, reads;
    int bad;         /* wrong bytes or failed calls */
    char first[200]; /* the first of them */
} worker;

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void bad(worker *w, const char *fmt, ...)
{
    va_list ap;
    if (!w->bad++) {
        va_start(ap, fmt);
        vsnprintf(w->first, sizeof(w->first), fmt, ap);
        va_end(ap);
        pthread_mutex_lock(&out_lock);
        printf("thread %d: %s\n", w->idx, w->first);
        fflush(stdout);
        pthread_mutex_unlock(&out_lock);
    }
}

static int64_t base(const worker *w)
{
    return (int64_t)w->idx * REGION;
}

/* n bytes read at region offset off: do they match? */
static void check(worker *w, const char *how, int64_t off, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (w->buf[i] != w->shadow[off + i]) {
            bad(w,
                "%s at %" PRId64 "+%" PRId64 ": byte %" PRId64
                " is 0x%02x, expected 0x%02x",
                how, off, n, i, w->buf[i], w->shadow[off + i]);
            return;
        }
}

static void op_write(worker *w, int sid)
{
    int64_t len = 1 + (int64_t)(t_rand(&w->seed) % (3 * UNIT));
    int64_t off = (int64_t)(t_rand(&w->seed) % (uint64_t)(REGION - len + 1));
    t_fill(w->buf, (size_t)len, t_rand(&w->seed));
    int64_t got = gfs_striped_write(sid, base(w) + off, w->buf, len);
    if (got != len)
        bad(w, "write %" PRId64 "+%" PRId64 " = %" PRId64 " %s", off, len, got,
            t_err(got));
    else
        memcpy(w->shadow + off, w->buf, (size_t)len);
    w->writes++;
}

/* NPIECE pieces of SMALL bytes at spread offsets: a sieved write */
static void op_small_write(worker *w, int sid)
{
    gfs_list_entry e[NPIECE];
    int64_t span = REGION / NPIECE;
    for (int i = 0; i < NPIECE; i++) {
        int64_t o = (int64_t)(t_rand(&w->seed) % (uint64_t)(span - SMALL));
        e[i] = (gfs_list_entry){base(w) + i * span + o, i * SMALL, SMALL};
    }
    t_fill(w->buf, NPIECE * SMALL, t_rand(&w->seed));
    int64_t got = gfs_striped_listio(sid, GFS_WRITE, NPIECE, e, w->buf);
    if (got != NPIECE * SMALL) {
        bad(w, "small-piece write = %" PRId64 " %s", got, t_err(got));
        return;
    }
    for (int i = 0; i < NPIECE; i++)
        memcpy(w->shadow + (e[i].file_offset - base(w)), w->buf + i * SMALL,
               SMALL);
    w->writes++;
}

static void op_read(worker *w, int sid)
{
    int64_t len = 1 + (int64_t)(t_rand(&w->seed) % (2 * UNIT));
    int64_t off = (int64_t)(t_rand(&w->seed) % (uint64_t)(REGION - len + 1));
    int64_t got = gfs_striped_read(sid, base(w) + off, w->buf, len);
    if (got != len)
        bad(w, "read %" PRId64 "+%" PRId64 " = %" PRId64 " %s", off, len, got,
            t_err(got));
    else
        check(w, "read", off, len);
    w->reads++;
}

/* NPIECE pieces of a block each, one per block: a list read (the grant
 * path, not a reader's) */
static void op_list_read(worker *w, int sid)
{
    gfs_list_entry e[NPIECE];
    int64_t span = REGION / NPIECE, len = 512;
    for (int i = 0; i < NPIECE; i++) {
        int64_t o = (int64_t)(t_rand(&w->seed) % (uint64_t)(span - len));
        e[i] = (gfs_list_entry){base(w) + i * span + o, i * len, len};
    }
    int64_t got = gfs_striped_listio(sid, GFS_READ, NPIECE, e, w->buf);
    if (got != NPIECE * len) {
        bad(w, "list read = %" PRId64 " %s", got, t_err(got));
        return;
    }
    unsigned char *all = w->buf;
    for (int i = 0; i < NPIECE; i++) {
        int64_t o = e[i].file_offset - base(w);
        if (memcmp(all + i * len, w->shadow + o, (size_t)len)) {
            bad(w, "list read piece %d at %" PRId64 " differs", i, o);
            return;
        }
    }
    w->reads++;
}

static void *work(void *arg)
{
    worker *w = arg;
    int sid = -1;
    while (now_s() < w->until && w->bad < 10) {
        if (sid < 0) {
            if ((sid = gfs_striped_open(w->name)) < 0) {
                bad(w, "open = %d %s", sid, t_err(sid));
                continue;
            }
            w->opens++;
        }
        int nops = 1 + (int)(t_rand(&w->seed) % 6);
        for (int i = 0; i < nops; i++) {
            switch (t_rand(&w->seed) % 4) {
            case 0:
                op_write(w, sid);
                break;
            case 1:
                op_small_write(w, sid);
                break;
            case 2:
                op_read(w, sid);
                break;
            default:
                op_list_read(w, sid);
            }
        }
        if (w->idx == 0)
            continue; /* the same open throughout */
        int rc = gfs_striped_close(sid);
        if (rc)
            bad(w, "close = %d %s", rc, t_err(rc));
        sid = -1;
    }
    if (sid >= 0 && (sid = gfs_striped_close(sid)) != 0)
        bad(w, "close = %d %s", sid, t_err(sid));
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 6) {
        fprintf(stderr,
                "usage: t_dstress NAME NTHREADS SECONDS [NSUB [SEED]]\n");
        return 2;
    }
    const char *name = argv[1];
    int nt = atoi(argv[2]);
    double secs = atof(argv[3]);
    if (EXPECT_OK(gfs_init(NULL)) < 0)
        return t_finish();
    int nsub = argc > 4 ? atoi(argv[4]) : gfs_num_servers();
    uint64_t seed = argc > 5 ? strtoull(argv[5], NULL, 0) : (uint64_t)time(0);
    printf("seed %" PRIu64 "\n", seed);
    EXPECT_OK(gfs_create_striped(name, nsub, NULL, UNIT, NULL));
    int sid = (int)EXPECT_OK(gfs_striped_open(name));
    EXPECT_OK(gfs_striped_truncate(sid, (int64_t)nt * REGION));
    EXPECT_OK(gfs_striped_close(sid));

    worker *w = calloc((size_t)nt, sizeof(*w));
    double until = now_s() + secs;
    for (int i = 0; i < nt; i++) {
        w[i] = (worker){.idx = i,
                        .name = name,
                        .until = until,
                        .seed = seed * 1000003 + (uint64_t)i,
                        .shadow = calloc(1, REGION),
                        .buf = malloc(REGION)};
        EXPECT_EQ(pthread_create(&w[i].tid, NULL, work, &w[i]), 0);
    }
    int64_t opens = 0, writes = 0, reads = 0;
    for (int i = 0; i < nt; i++) {
        pthread_join(w[i].tid, NULL);
        opens += w[i].opens;
        writes += w[i].writes;
        reads += w[i].reads;
        if (!EXPECT_EQ(w[i].bad, 0))
            printf("thread %d: first: %s\n", i, w[i].first);
    }
    printf("STRESS threads %d opens %" PRId64 " writes %" PRId64
           " reads %" PRId64 "\n",
           nt, opens, writes, reads);

    /* the whole file, read back by one fresh open */
    unsigned char *all = malloc((size_t)nt * REGION);
    sid = (int)EXPECT_OK(gfs_striped_open(name));
    EXPECT_EQ(gfs_striped_size(sid), (int64_t)nt * REGION);
    EXPECT_EQ(gfs_striped_read(sid, 0, all, (int64_t)nt * REGION),
              (int64_t)nt * REGION);
    for (int i = 0; i < nt; i++) {
        EXPECT_MEM(all + (size_t)i * REGION, w[i].shadow, REGION,
                   "region read back");
        free(w[i].shadow);
        free(w[i].buf);
    }
    EXPECT_OK(gfs_striped_close(sid));
    free(all);
    free(w);
    EXPECT_OK(gfs_finalize());
    return t_finish();
}
