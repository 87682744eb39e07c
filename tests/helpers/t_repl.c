/*
 * t_repl.c -- replicated files against killed, wiped and restarted
 * servers.  Run by tests/test_repl.py, which does the killing.
 *
 *   create NAME R NSUB UNIT
 *        a striped file of NSUB subfiles with R copies each
 *   writer NAME NBLOCKS BLOCK PAUSE
 *        write blocks 0..NBLOCKS-1 (each BLOCK bytes, its own pattern) of
 *        striped file NAME in order, printing "ACK i" after each
 *        acknowledged write; before block PAUSE print "PAUSE" and wait
 *        for a line on stdin (the test kills a server meanwhile).  An
 *        unacknowledged write prints "ERR i code message" and ends.
 *   write NAME FIRST COUNT BLOCK GEN
 *        write blocks FIRST..FIRST+COUNT-1 with generation GEN's pattern;
 *        "ACK" or "ERR code message"
 *   verify NAME NBLOCKS BLOCK [GEN...]
 *        every block i reads back with the pattern of generation GEN[i]
 *        (one GEN for all when a single one is given; default 0);
 *        "VERIFIED n" or failures
 *   race NAME NBLOCKS BLOCK SECONDS
 *        one writer thread rewriting blocks with rising generations and
 *        two reader threads checking that every block they read is some
 *        generation a write of it was acknowledged for (or the one in
 *        flight), for SECONDS; prints "RACE writes W reads R" and finally
 *        the last generation of each block as "GENS g0 g1 ..."
 *
 * Threads: race uses three; the others are single-threaded.
 */
#include <pthread.h>
#include <unistd.h>

#include "thelp.h"

static void pattern(unsigned char *buf, size_t n, int64_t block, int64_t gen)
{
    t_fill(buf, n, (uint64_t)block * 7919 + (uint64_t)gen * 104729 + 1);
    if (n >= 16) {
        memcpy(buf, &block, 8);
        memcpy(buf + 8, &gen, 8);
    }
}

static int create(const char *name, int r, int nsub, int64_t unit)
{
    t_init();
    EXPECT_EQ(gfs_create_striped_replicas(name, nsub, NULL, unit, NULL, r), 0);
    EXPECT_EQ(gfs_finalize(), 0);
    return t_finish();
}

static int writer(const char *name, int64_t n, int64_t block, int64_t pause)
{
    t_init();
    int sid = (int)EXPECT_OK(gfs_striped_open(name));
    if (sid < 0)
        return t_finish();
    unsigned char *buf = t_xmalloc((size_t)block);
    char line[64];
    for (int64_t i = 0; i < n; i++) {
        if (i == pause) {
            printf("PAUSE\n");
            fflush(stdout);
            if (!fgets(line, sizeof(line), stdin))
                break;
        }
        pattern(buf, (size_t)block, i, 0);
        int64_t rc = gfs_striped_write(sid, i * block, buf, block);
        if (rc != block) {
            printf("ERR %" PRId64 " %" PRId64 " %s\n", i, rc, t_err(rc));
            fflush(stdout);
            t_fail(__FILE__, __LINE__, "write of block %" PRId64 " failed", i);
            break;
        }
        printf("ACK %" PRId64 "\n", i);
        fflush(stdout);
    }
    free(buf);
    gfs_striped_close(sid);
    gfs_finalize();
    return t_finish();
}

static int write_blocks(const char *name, int64_t first, int64_t count,
                        int64_t block, int64_t gen)
{
    t_init();
    int sid = gfs_striped_open(name);
    if (sid < 0) {
        printf("ERR %d %s\n", sid, t_err(sid));
        gfs_finalize();
        return 0;
    }
    unsigned char *buf = t_xmalloc((size_t)(block * count));
    for (int64_t i = 0; i < count; i++)
        pattern(buf + i * block, (size_t)block, first + i, gen);
    int64_t rc = gfs_striped_write(sid, first * block, buf, block * count);
    if (rc == block * count)
        printf("ACK\n");
    else
        printf("ERR %" PRId64 " %s\n", rc, t_err(rc));
    free(buf);
    gfs_striped_close(sid);
    gfs_finalize();
    return 0;
}

static int verify(const char *name, int64_t n, int64_t block,
                  const int64_t *gens, int ngens)
{
    t_init();
    int sid = (int)EXPECT_OK(gfs_striped_open(name));
    if (sid < 0)
        return t_finish();
    unsigned char *want = t_xmalloc((size_t)block);
    unsigned char *got = t_xmalloc((size_t)block);
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 5; i++) {
        int64_t g = ngens == 0 ? 0 : ngens == 1 ? gens[0] : gens[i];
        pattern(want, (size_t)block, i, g);
        memset(got, 0xee, (size_t)block);
        int64_t rc = gfs_striped_read(sid, i * block, got, block);
        if (rc != block || memcmp(got, want, (size_t)block)) {
            int64_t gg = -1;
            if (rc == block)
                memcpy(&gg, got + 8, 8);
            t_fail(__FILE__, __LINE__,
                   "block %" PRId64 ": read %" PRId64 " %s, generation %" PRId64
                   " (want %" PRId64 ")",
                   i, rc, t_err(rc), gg, g);
            bad++;
        }
    }
    t_checks++;
    if (!bad)
        printf("VERIFIED %" PRId64 "\n", n);
    free(want);
    free(got);
    gfs_striped_close(sid);
    gfs_finalize();
    return t_finish();
}

/* ------------------------------------------------------------- race --- */

typedef struct race {
    const char *name;
    int64_t n, block;
    double end;
    pthread_mutex_t lock;
    int64_t *acked;    /* last acknowledged generation of each block */
    int64_t *inflight; /* generation being written, or -1 */
    int64_t writes, reads;
    int errors;
} race;

static void *race_writer(void *arg)
{
    race *r = arg;
    int sid = gfs_striped_open(r->name);
    if (sid < 0) {
        r->errors++;
        return NULL;
    }
    unsigned char *buf = t_xmalloc((size_t)r->block);
    for (int64_t k = 0; t_now() < r->end; k++) {
        int64_t i = k % r->n;
        pthread_mutex_lock(&r->lock);
        int64_t g = r->acked[i] + 1;
        r->inflight[i] = g;
        pthread_mutex_unlock(&r->lock);
        pattern(buf, (size_t)r->block, i, g);
        int64_t rc = gfs_striped_write(sid, i * r->block, buf, r->block);
        pthread_mutex_lock(&r->lock);
        r->inflight[i] = -1;
        if (rc == r->block) {
            r->acked[i] = g;
            r->writes++;
        } else {
            printf("write error %" PRId64 " %s\n", rc, t_err(rc));
            r->errors++;
        }
        pthread_mutex_unlock(&r->lock);
    }
    free(buf);
    gfs_striped_close(sid);
    return NULL;
}

static void *race_reader(void *arg)
{
    race *r = arg;
    int sid = gfs_striped_open(r->name);
    if (sid < 0) {
        r->errors++;
        return NULL;
    }
    unsigned char *got = t_xmalloc((size_t)r->block);
    unsigned char *want = t_xmalloc((size_t)r->block);
    for (int64_t k = 0; t_now() < r->end; k++) {
        int64_t i = (k * 7) % r->n;
        pthread_mutex_lock(&r->lock);
        int64_t lo = r->acked[i];
        pthread_mutex_unlock(&r->lock);
        int64_t rc = gfs_striped_read(sid, i * r->block, got, r->block);
        pthread_mutex_lock(&r->lock);
        int64_t hi = r->inflight[i] >= 0 ? r->inflight[i] : r->acked[i];
        pthread_mutex_unlock(&r->lock);
        int64_t g = -1;
        if (rc == r->block)
            memcpy(&g, got + 8, 8);
        bool ok = rc == r->block && g >= lo && g <= hi;
        if (ok) {
            pattern(want, (size_t)r->block, i, g);
            ok = memcmp(got, want, (size_t)r->block) == 0;
        }
        pthread_mutex_lock(&r->lock);
        if (!ok) {
            printf("read of block %" PRId64 ": %" PRId64
                   " %s, generation %" PRId64 " not in %" PRId64 "..%" PRId64
                   "\n",
                   i, rc, t_err(rc), g, lo, hi);
            r->errors++;
        }
        r->reads++;
        pthread_mutex_unlock(&r->lock);
    }
    free(got);
    free(want);
    gfs_striped_close(sid);
    return NULL;
}

static int race_run(const char *name, int64_t n, int64_t block, double secs)
{
    t_init();
    race r = {.name = name, .n = n, .block = block, .end = t_now() + secs};
    pthread_mutex_init(&r.lock, NULL);
    r.acked = calloc((size_t)n, sizeof(int64_t));
    r.inflight = malloc((size_t)n * sizeof(int64_t));
    for (int64_t i = 0; i < n; i++)
        r.inflight[i] = -1;
    /* generation 0 everywhere first */
    int sid = (int)EXPECT_OK(gfs_striped_open(name));
    unsigned char *buf = t_xmalloc((size_t)block);
    for (int64_t i = 0; sid >= 0 && i < n; i++) {
        pattern(buf, (size_t)block, i, 0);
        EXPECT_EQ(gfs_striped_write(sid, i * block, buf, block), block);
    }
    free(buf);
    if (sid >= 0)
        gfs_striped_close(sid);
    printf("READY\n");
    fflush(stdout);
    pthread_t w, rd[2];
    pthread_create(&w, NULL, race_writer, &r);
    for (int i = 0; i < 2; i++)
        pthread_create(&rd[i], NULL, race_reader, &r);
    pthread_join(w, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(rd[i], NULL);
    printf("RACE writes %" PRId64 " reads %" PRId64 " errors %d\n", r.writes,
           r.reads, r.errors);
    printf("GENS");
    for (int64_t i = 0; i < n; i++)
        printf(" %" PRId64, r.acked[i]);
    printf("\n");
    EXPECT_EQ(r.errors, 0);
    EXPECT_TRUE(r.writes > 0 && r.reads > 0);
    free(r.acked);
    free(r.inflight);
    gfs_finalize();
    return t_finish();
}

int main(int argc, char **argv)
{
    if (argc < 2)
        goto usage;
    const char *cmd = argv[1];
    if (strcmp(cmd, "create") == 0 && argc == 6)
        return create(argv[2], atoi(argv[3]), atoi(argv[4]), atoll(argv[5]));
    if (strcmp(cmd, "writer") == 0 && argc == 6)
        return writer(argv[2], atoll(argv[3]), atoll(argv[4]), atoll(argv[5]));
    if (strcmp(cmd, "write") == 0 && argc == 7)
        return write_blocks(argv[2], atoll(argv[3]), atoll(argv[4]),
                            atoll(argv[5]), atoll(argv[6]));
    if (strcmp(cmd, "verify") == 0 && argc >= 5) {
        int ng = argc - 5;
        int64_t *g = calloc((size_t)(ng ? ng : 1), sizeof(*g));
        for (int i = 0; i < ng; i++)
            g[i] = atoll(argv[5 + i]);
        int rc = verify(argv[2], atoll(argv[3]), atoll(argv[4]), g, ng);
        free(g);
        return rc;
    }
    if (strcmp(cmd, "race") == 0 && argc == 6)
        return race_run(argv[2], atoll(argv[3]), atoll(argv[4]), atof(argv[5]));
usage:
    fprintf(stderr, "usage: t_repl create|writer|write|verify|race ...\n");
    return 2;
}
