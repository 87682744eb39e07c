/*
 * t_ids.c -- stale and wrong-kind ids against real servers.
 *
 * Each scenario closes an id, opens objects of the same kind until one
 * takes the closed id's slot (the slot field of the id format in
 * libgalley/handle.h tells; the loop is bounded), then uses the closed id
 * in every call that takes one: each must answer GFS_EBADID, and the new
 * object in that slot must be exactly as before (its bytes read back, its
 * attributes, its forks).
 *
 *   t_ids files   NAME   file ids      (stat, attributes, forks, close)
 *   t_ids forks   NAME   fork ids      (plain, list, strided, nested,
 *                                       batched and non-blocking I/O,
 *                                       size, truncate, sync, close)
 *   t_ids striped NAME   striped ids   (I/O, size, truncate, locks,
 *                                       counters, export, close)
 *   t_ids nb      NAME   non-blocking handles (start, test, wait)
 *   t_ids kinds   NAME   an id of one kind where another is expected,
 *                        and ids from before gfs_finalize
 *
 * Threads: single-threaded.
 */
#include <errno.h>

#include "handle.h"
#include "thelp.h"

#define LEN 4096
#define MAX_TRIES 10000

static void name_of(char *buf, size_t n, const char *base, const char *what)
{
    snprintf(buf, n, "%s.%s", base, what);
}

/* A striped file holding LEN bytes of pattern `seed`. */
static bool striped_with(const char *name, uint64_t seed)
{
    unsigned char data[LEN];
    t_fill(data, LEN, seed);
    if (!EXPECT_EQ(gfs_create_striped(name, 3, NULL, 1000, NULL), 0))
        return false;
    int sid = (int)EXPECT_OK(gfs_striped_open(name));
    if (sid < 0)
        return false;
    EXPECT_EQ(gfs_striped_write(sid, 0, data, LEN), LEN);
    return EXPECT_EQ(gfs_striped_close(sid), 0);
}

static bool striped_holds(int sid, uint64_t seed, const char *what)
{
    unsigned char want[LEN], got[LEN];
    t_fill(want, LEN, seed);
    memset(got, 0, LEN);
    return EXPECT_EQ(gfs_striped_size(sid), LEN) &&
           EXPECT_EQ(gfs_striped_read(sid, 0, got, LEN), LEN) &&
           EXPECT_MEM(got, want, LEN, what);
}

static bool fork_holds(int kid, uint64_t seed, int64_t len, const char *what)
{
    unsigned char want[LEN], got[LEN];
    t_fill(want, LEN, seed);
    memset(got, 0, LEN);
    return EXPECT_EQ(gfs_fork_size(kid), len) &&
           EXPECT_EQ(gfs_read(kid, 0, got, len), len) &&
           EXPECT_MEM(got, want, (size_t)len, what);
}

static bool reused(int old, int id)
{
    return id >= 0 && id != old && GC_ID_SLOT(id) == GC_ID_SLOT(old);
}

/* ------------------------------------------------------------ files --- */

static int open_file_in_slot_of(const char *name, int old)
{
    for (int i = 0; i < MAX_TRIES; i++) {
        int fid = gfs_open_file(name);
        if (fid < 0 || reused(old, fid))
            return fid;
        gfs_close_file(fid);
    }
    return -1;
}

static int count_fork(const char *name, uint64_t size, void *arg)
{
    (void)name;
    (void)size;
    ++*(int *)arg;
    return 0;
}

static void files(const char *base)
{
    char a[200], b[200];
    name_of(a, sizeof(a), base, "a");
    name_of(b, sizeof(b), base, "b");
    EXPECT_EQ(gfs_create_file(a, 1, NULL), 0);
    EXPECT_EQ(gfs_create_file(b, 2, NULL), 0);
    int old = (int)EXPECT_OK(gfs_open_file(a));
    EXPECT_EQ(gfs_close_file(old), 0);
    int fid = open_file_in_slot_of(b, old);
    if (!EXPECT_TRUE(reused(old, fid)))
        return;
    EXPECT_EQ(gfs_all_create(fid, "f"), 0);
    EXPECT_EQ(gfs_set_attr(fid, "who", "b"), 0);

    gfs_file_stat st;
    char v[64];
    int n = 0;
    int kids[GFS_MAX_SUBFILES];
    EXPECT_EQ(gfs_stat_file(old, &st), GFS_EBADID);
    EXPECT_EQ(gfs_set_attr(old, "who", "a"), GFS_EBADID);
    EXPECT_EQ(gfs_get_attr(old, "who", v, sizeof(v)), GFS_EBADID);
    EXPECT_EQ(gfs_create_fork(old, 1, "g"), GFS_EBADID);
    EXPECT_EQ(gfs_open_fork(old, 0, "f"), GFS_EBADID);
    EXPECT_EQ(gfs_delete_fork(old, 0, "f"), GFS_EBADID);
    EXPECT_EQ(gfs_all_create(old, "g"), GFS_EBADID);
    EXPECT_EQ(gfs_all_open(old, "f", kids), GFS_EBADID);
    EXPECT_EQ(gfs_all_delete(old, "f"), GFS_EBADID);
    EXPECT_EQ(gfs_list_forks(old, 0, count_fork, &n), GFS_EBADID);
    EXPECT_EQ(gfs_close_file(old), GFS_EBADID);

    /* The file in the slot is untouched: still open, same record, its
     * attribute and forks as they were, no fork "g". */
    EXPECT_EQ(gfs_stat_file(fid, &st), 0);
    EXPECT_EQ(st.nsubfiles, 2);
    EXPECT_EQ(gfs_get_attr(fid, "who", v, sizeof(v)), 1);
    EXPECT_TRUE(strcmp(v, "b") == 0);
    for (int s = 0; s < 2; s++) {
        n = 0;
        EXPECT_EQ(gfs_list_forks(fid, s, count_fork, &n), 0);
        EXPECT_EQ(n, 1);
    }
    EXPECT_EQ(gfs_open_fork(fid, 1, "g"), -ENOENT);
    EXPECT_EQ(gfs_close_file(fid), 0);
    EXPECT_EQ(gfs_close_file(fid), GFS_EBADID);
    EXPECT_EQ(gfs_delete_file(a), 0);
    EXPECT_EQ(gfs_delete_file(b), 0);
}

/* ------------------------------------------------------------ forks --- */

static void forks(const char *base)
{
    char a[200];
    name_of(a, sizeof(a), base, "a");
    EXPECT_EQ(gfs_create_file(a, 2, NULL), 0);
    int fid = (int)EXPECT_OK(gfs_open_file(a));
    if (fid < 0)
        return;
    EXPECT_EQ(gfs_create_fork(fid, 0, "one"), 0);
    EXPECT_EQ(gfs_create_fork(fid, 1, "two"), 0);
    unsigned char one[LEN], two[LEN], x[LEN];
    t_fill(one, LEN, 1);
    t_fill(two, LEN, 2);
    memset(x, 'x', LEN);

    int old = (int)EXPECT_OK(gfs_open_fork(fid, 0, "one"));
    EXPECT_EQ(gfs_write(old, 0, one, 100), 100);
    EXPECT_EQ(gfs_close_fork(old), 0);
    int kid = -1;
    for (int i = 0; i < MAX_TRIES && !reused(old, kid); i++) {
        if (kid >= 0)
            gfs_close_fork(kid);
        kid = gfs_open_fork(fid, 1, "two");
    }
    if (!EXPECT_TRUE(reused(old, kid)))
        return;
    EXPECT_EQ(gfs_write(kid, 0, two, LEN), LEN);

    gfs_list_entry le = {0, 0, 10};
    gfs_stride lv = {.count = 2, .fstride = 20, .mstride = 10};
    gfs_batch_entry be = {.file_offset = 0, .mem_offset = 0, .size = 10};
    EXPECT_EQ(gfs_write(old, 0, x, 10), GFS_EBADID);
    EXPECT_EQ(gfs_read(old, 0, x, 10), GFS_EBADID);
    EXPECT_EQ(gfs_listio(old, GFS_WRITE, 1, &le, x), GFS_EBADID);
    EXPECT_EQ(gfs_write_strided(old, 0, x, 5, 2, 50, 5), GFS_EBADID);
    EXPECT_EQ(gfs_write_nested(old, 0, x, 10, 1, &lv), GFS_EBADID);
    EXPECT_EQ(gfs_batch_io(old, GFS_WRITE, 1, &be, x), GFS_EBADID);
    EXPECT_EQ(gfs_truncate_fork(old, 0), GFS_EBADID);
    EXPECT_EQ(gfs_fork_size(old), GFS_EBADID);
    EXPECT_EQ(gfs_sync(old), GFS_EBADID);
    gfs_handle h = gfs_new_handle();
    EXPECT_EQ(gfs_nb_write(h, old, 0, x, 10), GFS_EBADID);
    EXPECT_EQ(gfs_wait(h), GFS_EBADID);
    int pair[2] = {old, old};
    EXPECT_EQ(gfs_all_close(2, pair), GFS_EBADID);
    EXPECT_EQ(gfs_close_fork(old), GFS_EBADID);

    /* The fork in the slot is open and holds its own bytes; the closed
     * one's fork was not written either. */
    fork_holds(kid, 2, LEN, "fork in the reused slot");
    int again = (int)EXPECT_OK(gfs_open_fork(fid, 0, "one"));
    fork_holds(again, 1, 100, "the closed id's fork");
    /* Closing the file closes both. */
    EXPECT_EQ(gfs_close_file(fid), 0);
    EXPECT_EQ(gfs_fork_size(kid), GFS_EBADID);
    EXPECT_EQ(gfs_fork_size(again), GFS_EBADID);
    EXPECT_EQ(gfs_delete_file(a), 0);
}

/* ---------------------------------------------------------- striped --- */

static void striped(const char *base)
{
    char a[200], b[200];
    name_of(a, sizeof(a), base, "a");
    name_of(b, sizeof(b), base, "b");
    if (!striped_with(a, 11) || !striped_with(b, 22))
        return;
    int old = (int)EXPECT_OK(gfs_striped_open(a));
    EXPECT_EQ(gfs_striped_close(old), 0);
    int sid = -1;
    for (int i = 0; i < MAX_TRIES && !reused(old, sid); i++) {
        if (sid >= 0)
            gfs_striped_close(sid);
        sid = gfs_striped_open(b);
    }
    if (!EXPECT_TRUE(reused(old, sid)))
        return;

    unsigned char x[LEN], blob[8192];
    memset(x, 'x', LEN);
    gfs_list_entry le = {0, 0, 10};
    gfs_layout lay;
    EXPECT_EQ(gfs_striped_write(old, 0, x, LEN), GFS_EBADID);
    EXPECT_EQ(gfs_striped_read(old, 0, x, 10), GFS_EBADID);
    EXPECT_EQ(gfs_striped_listio(old, GFS_WRITE, 1, &le, x), GFS_EBADID);
    EXPECT_EQ(gfs_striped_truncate(old, 0), GFS_EBADID);
    EXPECT_EQ(gfs_striped_size(old), GFS_EBADID);
    EXPECT_EQ(gfs_striped_sync(old), GFS_EBADID);
    EXPECT_EQ(gfs_striped_layout(old, &lay), GFS_EBADID);
    EXPECT_EQ(gfs_striped_kid(old, 0), GFS_EBADID);
    EXPECT_EQ(gfs_striped_export(old, blob, sizeof(blob)), GFS_EBADID);
    EXPECT_EQ(gfs_striped_lock(old, 0, 10, 1), GFS_EBADID);
    EXPECT_EQ(gfs_striped_unlock(old, 0, 10), GFS_EBADID);
    EXPECT_EQ(gfs_striped_fetch_add(old, "c", 5), GFS_EBADID);
    EXPECT_EQ(gfs_striped_fetch_set(old, "c", 5), GFS_EBADID);
    gfs_handle h = gfs_new_handle();
    EXPECT_EQ(gfs_nb_striped_listio(h, old, GFS_WRITE, 1, &le, x), GFS_EBADID);
    EXPECT_EQ(gfs_wait(h), GFS_EBADID);
    EXPECT_EQ(gfs_striped_close(old), GFS_EBADID);

    /* The file in the slot is open and unchanged, the counter untouched,
     * and the closed id's file too. */
    striped_holds(sid, 22, "striped file in the reused slot");
    EXPECT_EQ(gfs_striped_fetch_add(sid, "c", 0), 0);
    EXPECT_EQ(gfs_striped_layout(sid, &lay), 0);
    EXPECT_EQ(lay.unit, 1000);
    EXPECT_EQ(gfs_striped_close(sid), 0);
    EXPECT_EQ(gfs_striped_close(sid), GFS_EBADID);
    int again = (int)EXPECT_OK(gfs_striped_open(a));
    striped_holds(again, 11, "the closed id's striped file");
    EXPECT_EQ(gfs_striped_close(again), 0);
    EXPECT_EQ(gfs_delete_file(a), 0);
    EXPECT_EQ(gfs_delete_file(b), 0);
}

/* --------------------------------------------------------------- nb --- */

static void nb(const char *base)
{
    char a[200];
    name_of(a, sizeof(a), base, "a");
    EXPECT_EQ(gfs_create_file(a, 1, NULL), 0);
    int fid = (int)EXPECT_OK(gfs_open_file(a));
    if (fid < 0)
        return;
    EXPECT_EQ(gfs_create_fork(fid, 0, "f"), 0);
    int kid = (int)EXPECT_OK(gfs_open_fork(fid, 0, "f"));
    unsigned char data[LEN], got[LEN], x[LEN];
    t_fill(data, LEN, 5);
    memset(x, 'x', LEN);

    gfs_handle old = gfs_new_handle();
    EXPECT_EQ(gfs_nb_write(old, kid, 0, data, LEN), 0);
    EXPECT_EQ(gfs_wait(old), LEN);
    gfs_handle h = -1;
    for (int i = 0; i < MAX_TRIES && !reused(old, h); i++) {
        if (h >= 0)
            gfs_wait(h); /* never started: released at once */
        h = gfs_new_handle();
    }
    if (!EXPECT_TRUE(reused(old, h)))
        return;

    /* The new handle is fresh: the closed one can neither start it, nor
     * complete it, nor release it. */
    int64_t r = 12345;
    EXPECT_EQ(gfs_nb_write(old, kid, 0, x, LEN), GFS_EBADID);
    EXPECT_EQ(gfs_test(old, &r), GFS_EBADID);
    EXPECT_EQ(r, 12345);
    EXPECT_EQ(gfs_wait(old), GFS_EBADID);
    memset(got, 0, LEN);
    EXPECT_EQ(gfs_nb_read(h, kid, 0, got, LEN), 0);
    /* ... nor take its result while it runs */
    EXPECT_EQ(gfs_wait(old), GFS_EBADID);
    gfs_handle pair[2] = {old, h};
    int64_t res[2] = {0, 0};
    EXPECT_EQ(gfs_waitall(2, pair, res), GFS_EBADID);
    EXPECT_EQ(res[0], GFS_EBADID);
    EXPECT_EQ(res[1], LEN);
    EXPECT_MEM(got, data, LEN, "read through the handle in the slot");
    EXPECT_EQ(gfs_wait(h), GFS_EBADID);
    fork_holds(kid, 5, LEN, "fork after the closed handle's write");
    EXPECT_EQ(gfs_close_file(fid), 0);
    EXPECT_EQ(gfs_delete_file(a), 0);
}

/* ------------------------------------------------------------ kinds --- */

static void kinds(const char *base)
{
    char a[200], s[200];
    name_of(a, sizeof(a), base, "a");
    name_of(s, sizeof(s), base, "s");
    EXPECT_EQ(gfs_create_file(a, 1, NULL), 0);
    if (!striped_with(s, 33))
        return;
    int fid = (int)EXPECT_OK(gfs_open_file(a));
    EXPECT_EQ(gfs_create_fork(fid, 0, "f"), 0);
    int kid = (int)EXPECT_OK(gfs_open_fork(fid, 0, "f"));
    int sid = (int)EXPECT_OK(gfs_striped_open(s));
    gfs_handle h = gfs_new_handle();
    EXPECT_OK(h);
    unsigned char data[LEN];
    t_fill(data, LEN, 7);
    EXPECT_EQ(gfs_write(kid, 0, data, 100), 100);

    gfs_file_stat st;
    char x[16] = "xxxxxxxxxxxxxxx";
    const int not_fork[] = {fid, sid, h};
    for (int i = 0; i < 3; i++) {
        int id = not_fork[i];
        EXPECT_EQ(gfs_write(id, 0, x, 10), GFS_EBADID);
        EXPECT_EQ(gfs_fork_size(id), GFS_EBADID);
        EXPECT_EQ(gfs_truncate_fork(id, 0), GFS_EBADID);
        EXPECT_EQ(gfs_close_fork(id), GFS_EBADID);
    }
    const int not_file[] = {kid, sid, h};
    for (int i = 0; i < 3; i++) {
        int id = not_file[i];
        EXPECT_EQ(gfs_stat_file(id, &st), GFS_EBADID);
        EXPECT_EQ(gfs_create_fork(id, 0, "g"), GFS_EBADID);
        EXPECT_EQ(gfs_set_attr(id, "k", "v"), GFS_EBADID);
        EXPECT_EQ(gfs_close_file(id), GFS_EBADID);
    }
    const int not_striped[] = {fid, kid, h};
    for (int i = 0; i < 3; i++) {
        int id = not_striped[i];
        EXPECT_EQ(gfs_striped_write(id, 0, x, 10), GFS_EBADID);
        EXPECT_EQ(gfs_striped_size(id), GFS_EBADID);
        EXPECT_EQ(gfs_striped_truncate(id, 0), GFS_EBADID);
        EXPECT_EQ(gfs_striped_close(id), GFS_EBADID);
    }
    const int not_handle[] = {fid, kid, sid};
    int64_t r;
    for (int i = 0; i < 3; i++) {
        int id = not_handle[i];
        EXPECT_EQ(gfs_nb_write(id, kid, 0, x, 10), GFS_EBADID);
        EXPECT_EQ(gfs_test(id, &r), GFS_EBADID);
        EXPECT_EQ(gfs_wait(id), GFS_EBADID);
    }
    /* every object still open and as it was */
    EXPECT_EQ(gfs_stat_file(fid, &st), 0);
    fork_holds(kid, 7, 100, "fork after wrong-kind calls");
    striped_holds(sid, 33, "striped file after wrong-kind calls");
    EXPECT_EQ(gfs_test(h, &r), 1); /* never started, released now */

    /* ids from before gfs_finalize are unknown after gfs_init */
    EXPECT_EQ(gfs_finalize(), 0);
    t_init();
    EXPECT_EQ(gfs_fork_size(kid), GFS_EBADID);
    EXPECT_EQ(gfs_stat_file(fid, &st), GFS_EBADID);
    EXPECT_EQ(gfs_striped_size(sid), GFS_EBADID);
    EXPECT_EQ(gfs_striped_close(sid), GFS_EBADID);
    int fid2 = (int)EXPECT_OK(gfs_open_file(a));
    EXPECT_TRUE(fid2 != fid);
    EXPECT_EQ(gfs_close_file(fid), GFS_EBADID);
    EXPECT_EQ(gfs_close_file(fid2), 0);
    EXPECT_EQ(gfs_delete_file(a), 0);
    EXPECT_EQ(gfs_delete_file(s), 0);
}

int main(int argc, char **argv)
{
    const char *use = "files|forks|striped|nb|kinds NAME";
    if (argc < 3)
        return t_usage(argv[0], use);
    const char *s = argv[1], *name = argv[2];
    t_init();
    if (!strcmp(s, "files"))
        files(name);
    else if (!strcmp(s, "forks"))
        forks(name);
    else if (!strcmp(s, "striped"))
        striped(name);
    else if (!strcmp(s, "nb"))
        nb(name);
    else if (!strcmp(s, "kinds"))
        kinds(name);
    else
        return t_usage(argv[0], use);
    EXPECT_EQ(gfs_finalize(), 0);
    return t_finish();
}
