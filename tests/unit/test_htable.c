/*
 * test_htable.c -- servers/htable.c without a server: random inserts,
 * lookups and removals against a plain array model, with a hash that
 * spreads keys and with one that sends every key to the same chain;
 * growth keeps every object; the iterator visits each object once, also
 * while it removes the ones it visits; a fixed-size table never grows.
 *
 * Threads: single-threaded.
 */
#include "htable.h"

#include <stdlib.h>
#include <string.h>

#include "utest.h"

typedef struct obj {
    uint64_t key;
    bool in; /* the model: in the table or not */
    gsrv_hlink link;
} obj;

#define NOBJ 5000

static obj objs[NOBJ];

static uint64_t spread(uint64_t key)
{
    return (key * 0x9e3779b97f4a7c15ull) >> 7;
}

static uint64_t clash(uint64_t key)
{
    (void)key;
    return 42;
}

static obj *find(const gsrv_htable *t, uint64_t (*hash)(uint64_t), uint64_t key)
{
    uint64_t h = hash(key);
    for (gsrv_hlink *l = gsrv_ht_chain(t, h); l; l = l->next) {
        obj *o = GSRV_HT_ENTRY(l, obj, link);
        if (l->hash == h && o->key == key)
            return o;
    }
    return NULL;
}

/* Every object is found exactly when the model says it is in. */
static void check_model(const gsrv_htable *t, uint64_t (*hash)(uint64_t),
                        size_t nobj, const char *what)
{
    size_t in = 0, bad = 0;
    for (size_t i = 0; i < nobj; i++) {
        obj *o = find(t, hash, objs[i].key);
        in += objs[i].in;
        bad += objs[i].in ? o != &objs[i] : o != NULL;
    }
    CHECK_MSG(bad == 0, "%s: %zu objects found wrongly", what, bad);
    CHECK_MSG(t->n == in, "%s: n %zu, model %zu", what, t->n, in);
}

static void test_random(uint64_t (*hash)(uint64_t), size_t nobj,
                        const char *what)
{
    gsrv_htable t;
    CHECK_EQ(gsrv_ht_init(&t, 4, true), 0);
    for (size_t i = 0; i < nobj; i++)
        objs[i] = (obj){.key = 1000 + 7 * i};
    srand(11);
    for (int step = 0; step < 20000; step++) {
        obj *o = &objs[(size_t)rand() % nobj];
        if (o->in)
            gsrv_ht_remove(&t, &o->link);
        else
            gsrv_ht_insert(&t, &o->link, hash(o->key));
        o->in = !o->in;
        if (step % 2000 == 0)
            check_model(&t, hash, nobj, what);
    }
    check_model(&t, hash, nobj, what);
    CHECK_MSG(t.nbuckets >= t.n || hash == clash, "%s: never grew", what);

    /* visit everything once, removing as we go */
    size_t seen = 0, in = t.n;
    gsrv_ht_iter it = {0};
    for (gsrv_hlink *l; (l = gsrv_ht_next(&t, &it));) {
        obj *o = GSRV_HT_ENTRY(l, obj, link);
        CHECK(o->in);
        o->in = false;
        gsrv_ht_remove(&t, l);
        CHECK(l->next == NULL);
        seen++;
    }
    CHECK_EQ(seen, in);
    CHECK_EQ(t.n, 0);
    check_model(&t, hash, nobj, what);
    gsrv_ht_fini(&t);
    CHECK_EQ(t.nbuckets, 0);
}

/* Growth doubles from the size given, by powers of two, at n == buckets. */
static void test_growth(void)
{
    gsrv_htable t;
    CHECK_EQ(gsrv_ht_init(&t, 8, true), 0);
    for (size_t i = 0; i < 9; i++) {
        objs[i] = (obj){.key = i, .in = true};
        gsrv_ht_insert(&t, &objs[i].link, spread(i));
    }
    CHECK_EQ(t.nbuckets, 16); /* the 9th insert found 8 in 8 buckets */
    check_model(&t, spread, 9, "growth");
    gsrv_ht_fini(&t);

    CHECK_EQ(gsrv_ht_init(&t, 8, false), 0);
    for (size_t i = 0; i < 100; i++) {
        objs[i] = (obj){.key = i, .in = true};
        gsrv_ht_insert(&t, &objs[i].link, spread(i));
    }
    CHECK_EQ(t.nbuckets, 8); /* a fixed table only gets longer chains */
    check_model(&t, spread, 100, "fixed");
    gsrv_ht_fini(&t);
}

/* Edge cases: removing what is not there, an empty or finished table. */
static void test_edges(void)
{
    gsrv_htable t;
    CHECK_EQ(gsrv_ht_init(&t, 2, true), 0);
    obj a = {.key = 1}, b = {.key = 3};
    gsrv_ht_insert(&t, &a.link, clash(a.key));
    b.link.hash = clash(b.key);
    b.link.next = NULL;
    gsrv_ht_remove(&t, &b.link); /* same chain, not in it */
    CHECK_EQ(t.n, 1);
    CHECK(gsrv_ht_chain(&t, clash(1)) == &a.link);
    gsrv_ht_remove(&t, &a.link);
    gsrv_ht_remove(&t, &a.link); /* twice: nothing */
    CHECK_EQ(t.n, 0);
    CHECK(gsrv_ht_chain(&t, clash(1)) == NULL);
    gsrv_ht_iter it = {0};
    CHECK(gsrv_ht_next(&t, &it) == NULL);
    gsrv_ht_fini(&t);
    CHECK(gsrv_ht_chain(&t, 5) == NULL);
    it = (gsrv_ht_iter){0};
    CHECK(gsrv_ht_next(&t, &it) == NULL);
    gsrv_ht_remove(&t, &a.link); /* after fini: nothing */
    gsrv_ht_fini(&t);
    gsrv_ht_fini(NULL);
}

int main(void)
{
    test_random(spread, NOBJ, "spread");
    test_random(clash, 300, "one chain");
    test_growth();
    test_edges();
    return utest_exit("test_htable");
}
