/*
 * t_iface_nb.c -- non-blocking requests against a real cluster: many
 * outstanding requests of every kind on several forks and servers,
 * completed with gfs_waitall and by gfs_test polling; requests completing
 * out of order (a big request started first, a tiny one second, the tiny
 * one seen done first); the handle rules (errors carried by a handle,
 * released handles, never-started handles); and a stress run of many tiny
 * requests on one connection while a big read streams on it, which must
 * see no error at all.  Run by tests/test_interfaces.py.
 *
 *   many|order|handles|stress NAME
 *
 * Threads: the main thread; in "stress" also one thread doing big reads.
 * The library's workers run the requests.
 */
#include <errno.h>
#include <pthread.h>

#include "thelp.h"

#define NSUB 4
#define NFORK 2           /* forks per subfile: "a" and "b" */
#define NK (NSUB * NFORK) /* forks in all                   */
#define SLOT 8192         /* bytes of a fork one request owns */
#define ROUNDS 24         /* requests per fork              */

/* One request of the "many" scenario and what it should move. */
typedef struct job {
    int kind;
    int kid;      /* -1: the striped file */
    int64_t base; /* its slot in the fork (or the logical file) */
    unsigned char *mem;
    int64_t bytes;
} job;

/* Between polls: leave the cores to the servers (2-core machines). */
static void nap(void)
{
    struct timespec ts = {0, 100 * 1000};
    nanosleep(&ts, NULL);
}

enum { K_PLAIN, K_LIST, K_STRIDED, K_NESTED, K_BATCH, K_STRIPED, NKINDS };

static void file_with_forks(const char *name, int *kids)
{
    EXPECT_EQ(gfs_create_file(name, NSUB, NULL), 0);
    int fid = (int)EXPECT_OK(gfs_open_file(name));
    if (fid < 0)
        exit(t_finish());
    EXPECT_EQ(gfs_all_create(fid, "a"), 0);
    EXPECT_EQ(gfs_all_create(fid, "b"), 0);
    EXPECT_OK(gfs_all_open(fid, "a", kids));
    EXPECT_OK(gfs_all_open(fid, "b", kids + NSUB));
}

/*
 * Start job j as a write or read of mem.  Every kind moves 4096 bytes of
 * the job's slot: plain I/O the first half of the slot, the others 64
 * pieces of 64 bytes at stride 128 (packed in memory).  Returns what the
 * start returned.
 */
static int start_job(gfs_handle h, const job *j, int op, int sid,
                     unsigned char *mem)
{
    const int64_t P = 64, N = SLOT / 2 / P; /* 64 pieces */
    switch (j->kind) {
    case K_PLAIN:
        return op == GFS_WRITE ? gfs_nb_write(h, j->kid, j->base, mem, SLOT / 2)
                               : gfs_nb_read(h, j->kid, j->base, mem, SLOT / 2);
    case K_LIST: {
        gfs_list_entry e[64];
        for (int i = 0; i < N; i++) /* reverse order: library may reorder */
            e[i] = (gfs_list_entry){j->base + (N - 1 - i) * 2 * P,
                                    (N - 1 - i) * P, P};
        return gfs_nb_listio(h, j->kid, op, N, e, mem);
    }
    case K_STRIDED:
        return op == GFS_WRITE ? gfs_nb_write_strided(h, j->kid, j->base, mem,
                                                      P, N, 2 * P, P)
                               : gfs_nb_read_strided(h, j->kid, j->base, mem, P,
                                                     N, 2 * P, P);
    case K_NESTED: {
        gfs_stride l[2] = {{8, 16 * P, 8 * P}, {8, 2 * P, P}};
        return op == GFS_WRITE
                   ? gfs_nb_write_nested(h, j->kid, j->base, mem, P, 2, l)
                   : gfs_nb_read_nested(h, j->kid, j->base, mem, P, 2, l);
    }
    case K_BATCH: {
        gfs_batch_entry b[2];
        memset(b, 0, sizeof(b));
        b[0] = (gfs_batch_entry){
            .file_offset = j->base, .mem_offset = 0, .size = P};
        b[1] = (gfs_batch_entry){.file_offset = j->base + 2 * P,
                                 .mem_offset = P,
                                 .size = P,
                                 .nlevels = 1,
                                 .levels = {{N - 1, 2 * P, P}}};
        return gfs_nb_batch_io(h, j->kid, op, 2, b, mem);
    }
    default: {
        gfs_list_entry e[64];
        for (int i = 0; i < N; i++)
            e[i] = (gfs_list_entry){j->base + i * 2 * P, i * P, P};
        return gfs_nb_striped_listio(h, sid, op, N, e, mem);
    }
    }
}

/* Where job j's bytes lie in its fork (or logical file) image. */
static void job_image(const job *j, unsigned char *img,
                      const unsigned char *mem)
{
    if (j->kind == K_PLAIN) {
        memcpy(img + j->base, mem, SLOT / 2);
        return;
    }
    for (int i = 0; i < SLOT / 2 / 64; i++)
        memcpy(img + j->base + i * 128, mem + i * 64, 64);
}

/* After the writes of "many": every fork and the striped file, read with
 * blocking calls, hold exactly the jobs' bytes. */
static void check_images(const job *jobs, int nj, const int *kids, int sid)
{
    int64_t fsize = (int64_t)ROUNDS * SLOT;
    unsigned char *img = t_xmalloc((size_t)fsize),
                  *got = t_xmalloc((size_t)fsize);
    for (int k = 0; k <= NK; k++) {
        memset(img, 0, (size_t)fsize);
        for (int i = 0; i < nj; i++)
            if (jobs[i].kid == (k == NK ? -1 : kids[k]))
                job_image(&jobs[i], img, jobs[i].mem);
        /* where the last round's job ends: plain I/O fills the first half
         * of the slot, the pieces of the others reach its last 64 bytes */
        int last_kind = k == NK ? K_STRIPED : (ROUNDS - 1 + k) % K_STRIPED;
        int64_t end =
            (ROUNDS - 1) * SLOT + (last_kind == K_PLAIN ? SLOT / 2 : SLOT - 64);
        if (k < NK) {
            EXPECT_EQ(gfs_fork_size(kids[k]), end);
            memset(got, 0xee, (size_t)fsize);
            EXPECT_EQ(gfs_read(kids[k], 0, got, end), end);
        } else {
            EXPECT_EQ(gfs_striped_size(sid), end);
            memset(got, 0xee, (size_t)fsize);
            EXPECT_EQ(gfs_striped_read(sid, 0, got, end), end);
        }
        EXPECT_MEM(got, img, (size_t)end, "after waitall");
    }
    free(img);
    free(got);
}

static void many(const char *name)
{
    int kids[NK];
    file_with_forks(name, kids);
    char sname[300];
    snprintf(sname, sizeof(sname), "%s.striped", name);
    EXPECT_EQ(gfs_create_striped(sname, NSUB, NULL, 200, NULL), 0);
    int sid = (int)EXPECT_OK(gfs_striped_open(sname));

    /* ROUNDS requests on every fork plus ROUNDS on the striped file. */
    int nj = (NK + 1) * ROUNDS;
    job *jobs = t_xmalloc(sizeof(*jobs) * (size_t)nj);
    unsigned char *src = t_xmalloc((size_t)nj * SLOT / 2);
    unsigned char *dst = t_xmalloc((size_t)nj * SLOT / 2);
    t_fill(src, (size_t)nj * SLOT / 2, 21);
    for (int r = 0, n = 0; r < ROUNDS; r++)
        for (int k = 0; k <= NK; k++, n++) {
            jobs[n] = (job){.kind = k == NK ? K_STRIPED : (r + k) % K_STRIPED,
                            .kid = k == NK ? -1 : kids[k],
                            .base = (int64_t)r * SLOT,
                            .mem = src + (size_t)n * SLOT / 2,
                            .bytes = SLOT / 2};
        }

    /* All writes outstanding at once, then gfs_waitall. */
    gfs_handle *h = t_xmalloc(sizeof(*h) * (size_t)nj);
    int64_t *res = t_xmalloc(sizeof(*res) * (size_t)nj);
    int started = 0;
    for (int i = 0; i < nj; i++) {
        h[i] = gfs_new_handle();
        EXPECT_OK(h[i]);
        started += EXPECT_EQ(
            start_job(h[i], &jobs[i], GFS_WRITE, sid, jobs[i].mem), 0);
    }
    EXPECT_EQ(started, nj);
    EXPECT_EQ(gfs_waitall(nj, h, res), 0);
    int good = 0;
    for (int i = 0; i < nj; i++)
        good += res[i] == jobs[i].bytes;
    EXPECT_EQ(good, nj);
    /* waitall released the handles */
    int64_t r0;
    EXPECT_EQ(gfs_test(h[0], &r0), GFS_EBADID);
    EXPECT_EQ(gfs_wait(h[nj - 1]), GFS_EBADID);

    /* Check every fork and the striped file with blocking reads. */
    check_images(jobs, nj, kids, sid);

    /* All reads outstanding at once, completed by gfs_test polling. */
    memset(dst, 0xee, (size_t)nj * SLOT / 2);
    for (int i = 0; i < nj; i++) {
        h[i] = gfs_new_handle();
        EXPECT_EQ(start_job(h[i], &jobs[i], GFS_READ, sid,
                            dst + (size_t)i * SLOT / 2),
                  0);
        res[i] = INT64_MIN;
    }
    int left = nj, polls = 0, pending_first = 0;
    double give_up = t_now() + 120;
    while (left > 0 && t_now() < give_up) {
        for (int i = 0; i < nj; i++) {
            if (res[i] != INT64_MIN)
                continue;
            int64_t r;
            int d = gfs_test(h[i], &r);
            if (d < 0) {
                t_fail(__FILE__, __LINE__, "gfs_test(%d) = %d", h[i], d);
                res[i] = d;
                left--;
            } else if (d == 1) {
                res[i] = r;
                left--;
            } else if (polls == 0) {
                pending_first++;
            }
        }
        polls++;
        nap();
    }
    EXPECT_EQ(left, 0);
    good = 0;
    for (int i = 0; i < nj; i++) {
        good += res[i] == jobs[i].bytes;
        unsigned char *m = dst + (size_t)i * SLOT / 2;
        t_checks++;
        if (memcmp(m, jobs[i].mem, (size_t)jobs[i].bytes) != 0)
            t_fail(__FILE__, __LINE__, "read job %d (kind %d) wrong data", i,
                   jobs[i].kind);
    }
    EXPECT_EQ(good, nj);
    printf("INFO many: %d requests on %d forks + 1 striped file; %d still "
           "pending at the first poll; %d polls\n",
           nj, NK, pending_first, polls);
    EXPECT_EQ(gfs_striped_close(sid), 0);
    free(jobs);
    free(src);
    free(dst);
    free(h);
    free(res);
}

/* ------------------------------------------------------------- order -- */

/*
 * Start a big request on one server, then a tiny one on another; poll the
 * tiny one first in every round.  Returns 1 if the tiny one was seen done
 * in an earlier round than the big one, 0 if not, -1 on error.
 */
static int race(int op, int kbig, int ktiny, unsigned char *big, int64_t bsz,
                unsigned char *tiny)
{
    gfs_handle hb = gfs_new_handle(), ht = gfs_new_handle();
    int rc = op == GFS_WRITE ? gfs_nb_write(hb, kbig, 0, big, bsz)
                             : gfs_nb_read(hb, kbig, 0, big, bsz);
    int rc2 = op == GFS_WRITE ? gfs_nb_write(ht, ktiny, 0, tiny, 16)
                              : gfs_nb_read(ht, ktiny, 0, tiny, 16);
    if (!EXPECT_EQ(rc, 0) || !EXPECT_EQ(rc2, 0))
        return -1;
    long round = 0, tiny_at = -1, big_at = -1;
    int64_t rt = 0, rb = 0;
    double give_up = t_now() + 120;
    while ((tiny_at < 0 || big_at < 0) && t_now() < give_up) {
        if (tiny_at < 0 && gfs_test(ht, &rt) == 1)
            tiny_at = round;
        if (big_at < 0 && gfs_test(hb, &rb) == 1)
            big_at = round;
        round++;
        nap();
    }
    EXPECT_EQ(rt, 16);
    EXPECT_EQ(rb, bsz);
    printf("INFO order %s: tiny done at poll %ld, big at poll %ld\n",
           op == GFS_WRITE ? "write" : "read", tiny_at, big_at);
    if (tiny_at < 0 || big_at < 0)
        return -1;
    return tiny_at < big_at;
}

static void order(const char *name)
{
    int kids[NK];
    file_with_forks(name, kids);
    const int64_t BIG = 64 << 20;
    unsigned char *big = t_xmalloc((size_t)BIG), *back = t_xmalloc((size_t)BIG);
    unsigned char tiny[16], tback[16];
    t_fill(big, (size_t)BIG, 31);
    t_fill(tiny, sizeof(tiny), 32);
    /* subfiles 0 and 1 are on different servers */
    int seen_w = 0, seen_r = 0;
    for (int attempt = 0; attempt < 3 && !seen_w; attempt++)
        seen_w = race(GFS_WRITE, kids[0], kids[1], big, BIG, tiny) == 1;
    EXPECT_TRUE(seen_w);
    for (int attempt = 0; attempt < 3 && !seen_r; attempt++) {
        memset(back, 0, (size_t)BIG);
        memset(tback, 0, sizeof(tback));
        seen_r = race(GFS_READ, kids[0], kids[1], back, BIG, tback) == 1;
        EXPECT_MEM(back, big, (size_t)BIG, "big read");
        EXPECT_MEM(tback, tiny, sizeof(tiny), "tiny read");
    }
    EXPECT_TRUE(seen_r);
    free(big);
    free(back);
}

/* ----------------------------------------------------------- handles -- */

static void handles(const char *name)
{
    int kids[NK];
    file_with_forks(name, kids);
    unsigned char buf[256];
    t_fill(buf, sizeof(buf), 41);

    /* A start with a bad fork fails, and its handle carries the error. */
    gfs_handle h = gfs_new_handle();
    EXPECT_EQ(gfs_nb_write(h, 99999, 0, buf, 10), GFS_EBADID);
    EXPECT_EQ(gfs_wait(h), GFS_EBADID);
    h = gfs_new_handle();
    EXPECT_EQ(gfs_nb_read(h, kids[0], -1, buf, 10), -EINVAL);
    int64_t r = 0;
    EXPECT_EQ(gfs_test(h, &r), 1);
    EXPECT_EQ(r, -EINVAL);

    /* A handle used twice: the second start is refused. */
    h = gfs_new_handle();
    EXPECT_EQ(gfs_nb_write(h, kids[0], 0, buf, 100), 0);
    EXPECT_EQ(gfs_nb_write(h, kids[0], 100, buf, 100), GFS_EBADID);
    EXPECT_EQ(gfs_wait(h), 100);
    EXPECT_EQ(gfs_fork_size(kids[0]), 100);

    /* Released handles are unknown; a never-started one completes with 0. */
    EXPECT_EQ(gfs_wait(h), GFS_EBADID);
    EXPECT_EQ(gfs_test(h, &r), GFS_EBADID);
    h = gfs_new_handle();
    EXPECT_EQ(gfs_test(h, &r), 1);
    EXPECT_EQ(r, 0);
    EXPECT_EQ(gfs_wait(-1), GFS_EBADID);

    /* waitall: results for each, the first error returned. */
    gfs_handle hs[4];
    int64_t rs[4];
    for (int i = 0; i < 4; i++)
        hs[i] = gfs_new_handle();
    EXPECT_EQ(gfs_nb_write(hs[0], kids[1], 0, buf, 50), 0);
    EXPECT_EQ(gfs_nb_write(hs[1], 99999, 0, buf, 50), GFS_EBADID);
    EXPECT_EQ(gfs_nb_read(hs[2], kids[1], 0, buf + 100, 50), 0);
    EXPECT_EQ(gfs_nb_write(hs[3], kids[2], 0, buf, -5), -EINVAL);
    EXPECT_EQ(gfs_waitall(4, hs, rs), GFS_EBADID);
    EXPECT_EQ(rs[0], 50);
    EXPECT_EQ(rs[1], GFS_EBADID);
    EXPECT_TRUE(rs[2] == 50 || rs[2] == 0); /* raced with hs[0]: either */
    EXPECT_EQ(rs[3], -EINVAL);
    EXPECT_EQ(gfs_waitall(-1, hs, rs), -EINVAL);
    EXPECT_EQ(gfs_waitall(0, NULL, NULL), 0);
}

/* ------------------------------------------------------------ stress -- */

typedef struct streamer {
    int kid;
    int64_t size;
    volatile int stop;
    int64_t err;
    long rounds;
} streamer;

static void *stream_main(void *arg)
{
    streamer *st = arg;
    unsigned char *b = t_xmalloc((size_t)st->size);
    while (!st->stop) {
        int64_t r = gfs_read(st->kid, 0, b, st->size);
        if (r != st->size) {
            st->err = r < 0 ? r : -EIO;
            break;
        }
        st->rounds++;
    }
    free(b);
    return NULL;
}

/*
 * N tiny non-blocking writes (window 64) to a fork while another thread
 * reads 32 MB again and again from another fork on the same server, so
 * reply bytes arrive on the connection all the time.  A healthy server
 * answers everything: any GFS_ETIMEDOUT / GFS_ESERVERDOWN is spurious.
 */
static void stress(const char *name)
{
    int kids[NK];
    file_with_forks(name, kids);
    const int64_t BIG = 32 << 20;
    const int N = 10000, W = 64;
    unsigned char *big = t_xmalloc((size_t)BIG);
    t_fill(big, (size_t)BIG, 51);
    EXPECT_EQ(gfs_write(kids[NSUB], 0, big, BIG), BIG); /* "b" on subfile 0 */
    free(big);
    streamer st = {.kid = kids[NSUB], .size = BIG};
    pthread_t t;
    if (pthread_create(&t, NULL, stream_main, &st) != 0) {
        printf("FAIL pthread_create\n");
        exit(1);
    }
    unsigned char src[16 * 1000];
    t_fill(src, sizeof(src), 52);
    gfs_handle ring[64];
    int head = 0, in = 0, errors = 0;
    int64_t first_err = 0;
    int first_at = -1;
    double t0 = t_now();
    for (int i = 0; i < N || in > 0; i++) {
        if (in == W || (i >= N && in > 0)) {
            int64_t r = gfs_wait(ring[head]);
            if (r != 16 && errors++ == 0) {
                first_err = r;
                first_at = i;
            }
            head = (head + 1) % W;
            in--;
        }
        if (i < N) {
            gfs_handle h = gfs_new_handle();
            int rc = gfs_nb_write(h, kids[0], (i % 1000) * 16,
                                  src + (i % 1000) * 16, 16);
            if (rc && errors++ == 0) {
                first_err = rc;
                first_at = i;
            }
            ring[(head + in) % W] = h;
            in++;
        }
    }
    st.stop = 1;
    pthread_join(t, NULL);
    printf("INFO stress: %d tiny writes in %.1f s beside %ld big reads; "
           "%d errors",
           N, t_now() - t0, st.rounds, errors);
    if (errors)
        printf(" (first: request %d: %s)", first_at, t_err(first_err));
    printf("\n");
    EXPECT_EQ(errors, 0);
    EXPECT_EQ(st.err, 0);
    unsigned char got[16 * 1000];
    EXPECT_EQ(gfs_read(kids[0], 0, got, sizeof(got)), (int64_t)sizeof(got));
    if (!errors)
        EXPECT_MEM(got, src, sizeof(got), "stress writes");
}

int main(int argc, char **argv)
{
    const char *use = "many|order|handles|stress NAME";
    if (argc < 3)
        return t_usage(argv[0], use);
    static const struct {
        const char *name;
        void (*fn)(const char *);
    } scen[] = {{"many", many},
                {"order", order},
                {"handles", handles},
                {"stress", stress}};
    for (size_t i = 0; i < sizeof(scen) / sizeof(scen[0]); i++) {
        if (!strcmp(argv[1], scen[i].name)) {
            t_init();
            scen[i].fn(argv[2]);
            EXPECT_EQ(gfs_finalize(), 0);
            return t_finish();
        }
    }
    return t_usage(argv[0], use);
}
