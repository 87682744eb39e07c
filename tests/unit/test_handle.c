/*
 * test_handle.c -- libgalley/handle.c, the client's one id table, without
 * a server:
 *
 *  - ids name their object, carry their table's kind, and small numbers
 *    (0, 4096, 99999), negatives and ids of another kind are refused;
 *  - a removed id stays refused after its slot holds a new object, and
 *    nothing done through it reaches the new object;
 *  - free slots are reused oldest-freed first; a generation wraps only
 *    after 1024 reuses of one slot (the documented bound);
 *  - growth keeps every object, iteration sees each live object once
 *    (also while removing), clear keeps generations, a full table says
 *    -EMFILE;
 *  - four threads adding, reading and taking ids under the owner's lock
 *    never see another thread's object.
 *
 * Threads: main, and four workers in the last case (they count their own
 * failures; only main calls CHECK).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "galley.h"
#include "handle.h"
#include "utest.h"

typedef struct obj {
    int value;
    char tag[12];
} obj;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static obj mk(int v)
{
    obj o = {.value = v};
    snprintf(o.tag, sizeof(o.tag), "o%d", v);
    return o;
}

static int value_at(gc_idtab *t, int id)
{
    obj *o = gc_idtab_at(t, id);
    return o ? o->value : -1;
}

static void ids_and_kinds(void)
{
    gc_idtab files = GC_IDTAB_INIT(&lock, obj, GC_KIND_FILE, 4);
    gc_idtab forks = GC_IDTAB_INIT(&lock, obj, GC_KIND_FORK, 4);
    obj a = mk(10), b = mk(20);
    int fa = gc_idtab_add(&files, &a);
    int ka = gc_idtab_add(&forks, &b);
    CHECK(fa >= 0 && ka >= 0);
    CHECK_EQ(GC_ID_KIND(fa), GC_KIND_FILE);
    CHECK_EQ(GC_ID_KIND(ka), GC_KIND_FORK);
    /* same slot and generation, different kinds: different ids */
    CHECK_EQ(GC_ID_SLOT(fa), GC_ID_SLOT(ka));
    CHECK(fa != ka);
    CHECK_EQ(value_at(&files, fa), 10);
    CHECK_EQ(value_at(&forks, ka), 20);
    CHECK(gc_idtab_at(&files, ka) == NULL);
    CHECK(gc_idtab_at(&forks, fa) == NULL);
    CHECK_EQ(gc_idtab_remove(&files, ka), GFS_EBADID);
    CHECK_EQ(value_at(&forks, ka), 20);
    const int never[] = {0,  1,       4096,    99999,
                         -1, INT_MIN, INT_MAX, GC_ID_SLOT(fa)};
    for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
        CHECK_MSG(gc_idtab_at(&files, never[i]) == NULL, "id %d", never[i]);
        CHECK_MSG(gc_idtab_remove(&files, never[i]) == GFS_EBADID, "id %d",
                  never[i]);
    }
    /* a slot beyond the table, of the right kind */
    CHECK(gc_idtab_at(&files, fa + 1000) == NULL);
    CHECK_EQ(gc_idtab_count(&files), 1);
    gc_idtab_destroy(&files);
    gc_idtab_destroy(&forks);
}

static void stale_after_reuse(void)
{
    gc_idtab t = GC_IDTAB_INIT(&lock, obj, GC_KIND_STRIPED, 4);
    obj o = mk(1);
    int old = gc_idtab_add(&t, &o);
    CHECK_EQ(gc_idtab_remove(&t, old), 0);
    CHECK_EQ(gc_idtab_remove(&t, old), GFS_EBADID);
    CHECK(gc_idtab_at(&t, old) == NULL);
    /* add until the old slot is taken again (after the other free ones) */
    int reused = -1, n = 0;
    while (reused < 0 && n < 16) {
        o = mk(100 + n++);
        int id = gc_idtab_add(&t, &o);
        if (GC_ID_SLOT(id) == GC_ID_SLOT(old))
            reused = id;
    }
    CHECK(reused >= 0);
    CHECK_EQ(n, 4); /* slots 1, 2, 3 first, then slot 0 again */
    CHECK(reused != old);
    CHECK_EQ(GC_ID_GEN(reused), GC_ID_GEN(old) + 1);
    CHECK(gc_idtab_at(&t, old) == NULL);
    CHECK_EQ(gc_idtab_remove(&t, old), GFS_EBADID);
    obj got;
    CHECK_EQ(gc_idtab_get(&t, old, &got), GFS_EBADID);
    CHECK_EQ(gc_idtab_take(&t, old, &got), GFS_EBADID);
    CHECK_EQ(value_at(&t, reused), 103);
    CHECK_EQ(gc_idtab_get(&t, reused, &got), 0);
    CHECK_EQ(got.value, 103);
    CHECK(strcmp(got.tag, "o103") == 0);
    CHECK_EQ(gc_idtab_count(&t), 4);
    gc_idtab_destroy(&t);
}

static void fifo_reuse_and_wrap(void)
{
    gc_idtab t = GC_IDTAB_INIT(&lock, obj, GC_KIND_NB, 4);
    int id[4];
    for (int i = 0; i < 4; i++) {
        obj o = mk(i);
        id[i] = gc_idtab_add(&t, &o);
        CHECK_EQ(GC_ID_SLOT(id[i]), i);
    }
    gc_idtab_remove(&t, id[2]);
    gc_idtab_remove(&t, id[0]);
    obj o = mk(7);
    int x = gc_idtab_add(&t, &o);
    int y = gc_idtab_add(&t, &o);
    CHECK_EQ(GC_ID_SLOT(x), 2); /* freed first, reused first */
    CHECK_EQ(GC_ID_SLOT(y), 0);
    CHECK_EQ(t.cap, 4);
    /* one free slot reused over and over: distinct ids for 1023 reuses,
     * the 1024th comes back to the first id (the documented bound) */
    int first = y, distinct = 1;
    int cur = y;
    for (int i = 1; i < (1 << GC_ID_GEN_BITS); i++) {
        gc_idtab_remove(&t, cur);
        cur = gc_idtab_add(&t, &o);
        distinct += cur != first && GC_ID_SLOT(cur) == GC_ID_SLOT(first);
    }
    CHECK_EQ(distinct, 1 << GC_ID_GEN_BITS);
    gc_idtab_remove(&t, cur);
    CHECK_EQ(gc_idtab_add(&t, &o), first);
    gc_idtab_destroy(&t);
}

static void growth_iteration_clear(void)
{
    enum { N = 1000 };
    gc_idtab t = GC_IDTAB_INIT(&lock, obj, GC_KIND_FORK, 8);
    static int id[N];
    for (int i = 0; i < N; i++) {
        obj o = mk(i);
        id[i] = gc_idtab_add(&t, &o);
        CHECK(id[i] >= 0);
    }
    CHECK_EQ(t.cap, 1024);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += value_at(&t, id[i]) != i;
    CHECK_EQ(bad, 0);
    /* every live object once, in slot order; remove the odd ones as we go */
    int seen = 0, order_ok = 1, last = -1;
    for (int k = -1; (k = gc_idtab_next(&t, k)) >= 0;) {
        obj *o = gc_idtab_at(&t, k);
        CHECK(o != NULL);
        order_ok &= GC_ID_SLOT(k) > last;
        last = GC_ID_SLOT(k);
        seen++;
        if (o && o->value % 2)
            CHECK_EQ(gc_idtab_remove(&t, k), 0);
    }
    CHECK_EQ(seen, N);
    CHECK(order_ok);
    CHECK_EQ(gc_idtab_count(&t), N / 2);
    seen = 0;
    for (int k = -1; (k = gc_idtab_next(&t, k)) >= 0;)
        seen += value_at(&t, k) % 2 == 0;
    CHECK_EQ(seen, N / 2);
    /* clear: every id stale, also once the slots are used again */
    gc_idtab_clear(&t);
    CHECK_EQ(gc_idtab_count(&t), 0);
    CHECK_EQ(gc_idtab_next(&t, -1), -1);
    for (int i = 0; i < N; i++) {
        obj o = mk(-i);
        gc_idtab_add(&t, &o);
    }
    int stale = 0;
    for (int i = 0; i < N; i++)
        stale += gc_idtab_at(&t, id[i]) == NULL;
    CHECK_EQ(stale, N);
    gc_idtab_destroy(&t);
}

static void full_table(void)
{
    gc_idtab t = GC_IDTAB_INIT(&lock, char, GC_KIND_FILE, 1024);
    char c = 'x';
    int last = -1, n = 0;
    for (; n < GC_ID_MAX_SLOTS; n++) {
        last = gc_idtab_add(&t, &c);
        if (last < 0)
            break;
    }
    CHECK_EQ(n, GC_ID_MAX_SLOTS);
    CHECK_EQ(GC_ID_SLOT(last), GC_ID_MAX_SLOTS - 1);
    CHECK_EQ(gc_idtab_add(&t, &c), -EMFILE);
    CHECK_EQ(gc_idtab_remove(&t, last), 0);
    int again = gc_idtab_add(&t, &c);
    CHECK_EQ(GC_ID_SLOT(again), GC_ID_MAX_SLOTS - 1);
    CHECK(again != last);
    CHECK(again >= 0 && last >= 0); /* the largest ids stay positive ints */
    gc_idtab_destroy(&t);
}

/* --------------------------------------------------------- threads --- */

enum { NTHREADS = 4, ROUNDS = 20000 };

static gc_idtab shared = GC_IDTAB_INIT(&lock, obj, GC_KIND_FILE, 4);

static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    long bad = 0;
    int mine[8];
    int n = 0;
    for (int r = 0; r < ROUNDS; r++) {
        obj o = mk(me * ROUNDS + r);
        if (n < 8) {
            int id = gc_idtab_insert(&shared, &o);
            if (id < 0)
                bad++;
            else
                mine[n++] = id;
        }
        /* read one of mine back, take another, try a stale one */
        obj got;
        int i = r % (n ? n : 1);
        if (n && (gc_idtab_get(&shared, mine[i], &got) != 0 ||
                  got.value / ROUNDS != me))
            bad++;
        if (n && r % 3 == 0) {
            int id = mine[i];
            mine[i] = mine[--n];
            if (gc_idtab_take(&shared, id, &got) != 0 ||
                got.value / ROUNDS != me)
                bad++;
            if (gc_idtab_get(&shared, id, &got) != GFS_EBADID)
                bad++;
        }
    }
    for (int i = 0; i < n; i++)
        if (gc_idtab_take(&shared, mine[i], NULL) != 0)
            bad++;
    return (void *)bad;
}

static void threads(void)
{
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        CHECK_EQ(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i), 0);
    long bad = 0;
    for (int i = 0; i < NTHREADS; i++) {
        void *r;
        pthread_join(th[i], &r);
        bad += (long)r;
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(gc_idtab_count(&shared), 0);
    gc_idtab_destroy(&shared);
}

int main(void)
{
    ids_and_kinds();
    stale_after_reuse();
    fifo_reuse_and_wrap();
    growth_iteration_clear();
    full_table();
    threads();
    return utest_exit("test_handle");
}
