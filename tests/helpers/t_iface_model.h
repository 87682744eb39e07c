/*
 * t_iface_model.h -- the reference side of t_iface_io.c: a fork's (or a
 * striped file's) expected bytes kept in memory, and what a plain,
 * strided, nested, batched or list request does to them, computed by a
 * recursive walk over the stride levels, never by the library's own
 * expansion.  Static functions for that one program.
 *
 * Threads: single-threaded.
 */
#ifndef T_IFACE_MODEL_H
#define T_IFACE_MODEL_H

#include "thelp.h"

/* ------------------------------------------------------------ model ---- */

/* What a fork (or a striped file) should hold. */
typedef struct model {
    unsigned char *b;
    int64_t cap, size;
} model;

static void model_init(model *m, int64_t cap)
{
    m->b = t_xmalloc((size_t)cap);
    memset(m->b, 0, (size_t)cap);
    m->cap = cap;
    m->size = 0;
}

static void model_put(model *m, int64_t off, const void *src, int64_t n)
{
    if (n <= 0)
        return;
    if (off + n > m->cap) {
        printf("FAIL model too small (%" PRId64 ")\n", off + n);
        exit(1);
    }
    memcpy(m->b + off, src, (size_t)n);
    if (off + n > m->size)
        m->size = off + n;
}

/* n bytes at off as a read sees them: zeros past the end. */
static void model_get(const model *m, int64_t off, void *dst, int64_t n)
{
    memset(dst, 0, (size_t)n);
    if (off < m->size) {
        int64_t k = m->size - off < n ? m->size - off : n;
        memcpy(dst, m->b + off, (size_t)k);
    }
}

/* The whole fork must equal the model. */
static void check_fork(int kid, const model *m, const char *what)
{
    if (!EXPECT_EQ(gfs_fork_size(kid), m->size))
        printf("  (%s)\n", what);
    unsigned char *img = t_xmalloc((size_t)m->size);
    memset(img, 0xee, (size_t)m->size);
    EXPECT_EQ(gfs_read(kid, 0, img, m->size), m->size);
    EXPECT_MEM(img, m->b, (size_t)m->size, what);
    free(img);
}

/* ----------------------------------------- reference stride walking ---- */

/* Every piece of a nested request, in the order the paper defines
 * (levels[0] outermost).  moff is relative to the buffer pointer and may
 * be negative. */
typedef struct walk {
    model *m;
    unsigned char *buf;
    int op; /* GFS_WRITE: apply buf to model; GFS_READ: fill buf */
} walk;

static void ref_walk(const walk *w, int64_t foff, int64_t moff, int64_t size,
                     int nl, const gfs_stride *lv)
{
    if (nl == 0) {
        if (w->op == GFS_WRITE)
            model_put(w->m, foff, w->buf + moff, size);
        else
            model_get(w->m, foff, w->buf + moff, size);
        return;
    }
    for (int64_t i = 0; i < lv[0].count; i++)
        ref_walk(w, foff + i * lv[0].fstride, moff + i * lv[0].mstride, size,
                 nl - 1, lv + 1);
}

static void ref_apply(model *m, int op, unsigned char *buf, int64_t off,
                      int64_t size, int nl, const gfs_stride *lv)
{
    walk w = {m, buf, op};
    ref_walk(&w, off, 0, size, nl, lv);
}

/* --------------------------------------------- batches and lists ---- */

static void batch_apply(model *m, int op, unsigned char *buf, int64_t n,
                        const gfs_batch_entry *e)
{
    for (int64_t i = 0; i < n; i++)
        ref_apply(m, op, buf + e[i].mem_offset, e[i].file_offset, e[i].size,
                  e[i].nlevels, e[i].levels);
}

static int64_t batch_bytes(int64_t n, const gfs_batch_entry *e)
{
    int64_t t = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = e[i].size;
        for (int l = 0; l < e[i].nlevels; l++)
            k *= e[i].levels[l].count;
        t += k;
    }
    return t;
}

static void list_apply(model *m, int op, unsigned char *buf, int64_t n,
                       const gfs_list_entry *e)
{
    for (int64_t i = 0; i < n; i++) {
        if (op == GFS_WRITE)
            model_put(m, e[i].file_offset, buf + e[i].mem_offset, e[i].size);
        else
            model_get(m, e[i].file_offset, buf + e[i].mem_offset, e[i].size);
    }
}

static int64_t list_bytes(int64_t n, const gfs_list_entry *e)
{
    int64_t t = 0;
    for (int64_t i = 0; i < n; i++)
        t += e[i].size;
    return t;
}

#endif
