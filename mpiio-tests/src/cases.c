/*
 * cases.c -- access shapes shared by noncontig, coll and nonblock (see
 * cases.h).  Sizes are small on purpose: the programs run with up to 8
 * ranks on 2 cores.
 *
 * Threads: single-threaded MPI programs.
 */
#include "cases.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Keep a type for mt_case_free. */
static MPI_Datatype own(mt_case *c, MPI_Datatype t)
{
    MPI_Type_commit(&t);
    if (c->nowned < CASE_MAX_TYPES)
        c->owned[c->nowned++] = t;
    return t;
}

/* A type resized to [lb, lb + extent) (old handle kept for freeing). */
static MPI_Datatype resized(mt_case *c, MPI_Datatype t, MPI_Aint lb,
                            MPI_Aint extent)
{
    MPI_Datatype r;
    MPI_Type_create_resized(t, lb, extent, &r);
    return own(c, r);
}

static void set_view(mt_case *c, MPI_Offset disp, MPI_Datatype etype,
                     MPI_Datatype ftype)
{
    c->view.disp = disp;
    c->view.etype = etype;
    c->view.ftype = ftype;
}

/* The char+int struct of a C compiler: 5 data bytes, extent 8. */
typedef struct {
    char c;
    int i;
} ci_t;

static MPI_Datatype ci_type(mt_case *c)
{
    int bl[2] = {1, 1};
    MPI_Aint d[2] = {offsetof(ci_t, c), offsetof(ci_t, i)};
    MPI_Datatype ty[2] = {MPI_CHAR, MPI_INT}, t;
    MPI_Type_create_struct(2, bl, d, ty, &t);
    t = own(c, t);
    return resized(c, t, 0, sizeof(ci_t));
}

typedef int (*builder)(mt_case *c, int r, int P);

/* -------------------------------------------------------------- cases -- */

static int b_contig(mt_case *c, int r, int P)
{
    set_view(c, 7 + (MPI_Offset)r * 1000, MPI_BYTE, MPI_BYTE);
    c->mtype = MPI_BYTE;
    c->mcount = 1000;
    c->len = 7 + (int64_t)P * 1000;
    return 0;
}

static int b_contig_off(mt_case *c, int r, int P)
{
    set_view(c, 3, MPI_INT, MPI_INT);
    c->mtype = MPI_INT;
    c->mcount = 250;
    c->off = (MPI_Offset)r * 250;
    c->len = 3 + (int64_t)P * 1000;
    return 0;
}

static int b_sparse_ranks(mt_case *c, int r, int P)
{
    /* odd ranks access nothing: collectives must cope */
    set_view(c, (MPI_Offset)r * 3000, MPI_BYTE, MPI_BYTE);
    c->mtype = MPI_BYTE;
    c->mcount = r % 2 ? 0 : 3000 - r;
    c->len = (int64_t)P * 3000;
    return 0;
}

static int b_vec_file(mt_case *c, int r, int P)
{
    MPI_Datatype t;
    MPI_Type_contiguous(5, MPI_INT, &t);
    t = own(c, t);
    set_view(c, (MPI_Offset)r * 20, MPI_INT, resized(c, t, 0, 20 * P));
    c->mtype = MPI_INT;
    c->mcount = 5 * 37;
    c->len = (int64_t)P * 20 * 37;
    return 0;
}

static int b_vec_mem(mt_case *c, int r, int P)
{
    MPI_Datatype t;
    MPI_Type_vector(7, 3, 5, MPI_INT, &t);
    set_view(c, (MPI_Offset)r * 336, MPI_BYTE, MPI_BYTE);
    c->mtype = own(c, t);
    c->mcount = 4;
    c->len = (int64_t)P * 336;
    return 0;
}

static int b_vec_both(mt_case *c, int r, int P)
{
    MPI_Datatype t, m;
    MPI_Type_create_hvector(4, 2, (MPI_Aint)2 * P * 4, MPI_INT, &t);
    t = own(c, t);
    set_view(c, (MPI_Offset)r * 8, MPI_INT, resized(c, t, 0, 32 * P));
    MPI_Type_vector(3, 4, 6, MPI_INT, &m);
    c->mtype = own(c, m);
    c->mcount = 4;
    c->len = (int64_t)6 * 32 * P;
    return 0;
}

static int b_struct(mt_case *c, int r, int P)
{
    struct s {
        int a;
        double b;
        char c[3];
    };
    int bl[3] = {1, 1, 3};
    MPI_Aint md[3] = {offsetof(struct s, a), offsetof(struct s, b),
                      offsetof(struct s, c)};
    MPI_Aint fd[3] = {0, 6, 16};
    MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, m, f;
    MPI_Type_create_struct(3, bl, md, ty, &m);
    m = own(c, m);
    c->mtype = resized(c, m, 0, sizeof(struct s));
    c->mcount = 10;
    MPI_Type_create_struct(3, bl, fd, ty, &f);
    f = own(c, f);
    set_view(c, (MPI_Offset)r * 20, MPI_BYTE, resized(c, f, 0, 20 * P));
    c->len = (int64_t)10 * 20 * P;
    return 0;
}

static int b_indexed(mt_case *c, int r, int P)
{
    int bl[4] = {1, 3, 2, 4}, d[4] = {0, 2, 7, 11};
    MPI_Datatype f;
    MPI_Type_indexed(4, bl, d, MPI_INT, &f);
    set_view(c, (MPI_Offset)r * 360, MPI_INT, own(c, f));
    c->mtype = MPI_INT;
    c->mcount = 60;
    c->len = (int64_t)P * 360;
    return 0;
}

static int b_hindexed_zero(mt_case *c, int r, int P)
{
    /* zero-length blocks first, between and last, in file and memory */
    int fbl[5] = {0, 2, 0, 3, 0};
    MPI_Aint fd[5] = {0, 4, 9, 12, 40};
    int mbl[5] = {0, 1, 0, 4, 0}, md[5] = {0, 1, 3, 5, 20};
    MPI_Datatype f, m;
    MPI_Type_create_hindexed(5, fbl, fd, MPI_INT, &f);
    f = own(c, f);
    set_view(c, (MPI_Offset)r * 48 * 8, MPI_INT, resized(c, f, 0, 48));
    MPI_Type_indexed(5, mbl, md, MPI_INT, &m);
    c->mtype = own(c, m);
    c->mcount = 8;
    c->len = (int64_t)P * 48 * 8;
    return 0;
}

static int b_indexed_block(mt_case *c, int r, int P)
{
    int fd[4] = {0, 3, 6, 10}, md[2] = {0, 7};
    MPI_Datatype f, m;
    MPI_Type_create_indexed_block(4, 2, fd, MPI_INT, &f);
    set_view(c, (MPI_Offset)r * 5 * 48, MPI_INT, own(c, f));
    MPI_Type_create_indexed_block(2, 5, md, MPI_INT, &m);
    c->mtype = own(c, m);
    c->mcount = 4;
    c->len = (int64_t)P * 5 * 48;
    return 0;
}

static int b_mem_unsorted(mt_case *c, int r, int P)
{
    /* memory types may go backwards (file types may not) */
    int bl[3] = {2, 3, 1};
    MPI_Aint d[3] = {24, 0, 16};
    MPI_Datatype m;
    MPI_Type_create_hindexed(3, bl, d, MPI_INT, &m);
    c->mtype = own(c, m);
    c->mcount = 5;
    set_view(c, (MPI_Offset)r * 120, MPI_BYTE, MPI_BYTE);
    c->len = (int64_t)P * 120;
    return 0;
}

static void dims2(int P, int *d)
{
    d[0] = d[1] = 0;
    MPI_Dims_create(P, 2, d);
}

static int b_subarray_c(mt_case *c, int r, int P)
{
    int d[2];
    dims2(P, d);
    int pr = r / d[1], pc = r % d[1];
    int g[2] = {7 * d[0], 9 * d[1]}, s[2] = {7, 9}, st[2] = {7 * pr, 9 * pc};
    MPI_Datatype f, m;
    MPI_Type_create_subarray(2, g, s, st, MPI_ORDER_C, MPI_INT, &f);
    set_view(c, 0, MPI_INT, own(c, f));
    /* memory: the local block inside a halo of one element */
    int mg[2] = {9, 11}, ms[2] = {7, 9}, mst[2] = {1, 1};
    MPI_Type_create_subarray(2, mg, ms, mst, MPI_ORDER_C, MPI_INT, &m);
    c->mtype = own(c, m);
    c->mcount = 1;
    c->len = (int64_t)g[0] * g[1] * 4;
    return 0;
}

static int b_subarray_f3(mt_case *c, int r, int P)
{
    int d[3] = {0, 0, 0};
    MPI_Dims_create(P, 3, d);
    /* Fortran order: the first index varies fastest; rank -> coords in the
     * same order */
    int co[3] = {r % d[0], (r / d[0]) % d[1], r / (d[0] * d[1])};
    int s[3] = {3, 4, 5}, g[3], st[3];
    for (int k = 0; k < 3; k++) {
        g[k] = s[k] * d[k];
        st[k] = s[k] * co[k];
    }
    MPI_Datatype f;
    MPI_Type_create_subarray(3, g, s, st, MPI_ORDER_FORTRAN, MPI_DOUBLE, &f);
    set_view(c, 0, MPI_DOUBLE, own(c, f));
    c->mtype = MPI_DOUBLE;
    c->mcount = 60;
    c->len = (int64_t)g[0] * g[1] * g[2] * 8;
    return 0;
}

static int b_darray_block(mt_case *c, int r, int P)
{
    int d[2];
    dims2(P, d);
    int g[2] = {13, 11}, dist[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_BLOCK};
    int da[2] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG};
    MPI_Datatype f;
    MPI_Type_create_darray(P, r, 2, g, dist, da, d, MPI_ORDER_C, MPI_INT, &f);
    f = own(c, f);
    int sz;
    MPI_Type_size(f, &sz);
    set_view(c, 0, MPI_INT, f);
    c->mtype = MPI_INT;
    c->mcount = sz / 4;
    c->len = 13 * 11 * 4;
    return 0;
}

static int b_darray_cyclic(mt_case *c, int r, int P)
{
    int d[2];
    dims2(P, d);
    int g[2] = {17, 10},
        dist[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_CYCLIC};
    int da[2] = {2, 3};
    MPI_Datatype f, m;
    MPI_Type_create_darray(P, r, 2, g, dist, da, d, MPI_ORDER_FORTRAN,
                           MPI_DOUBLE, &f);
    f = own(c, f);
    int sz;
    MPI_Type_size(f, &sz);
    set_view(c, 16, MPI_DOUBLE, f);
    /* memory: every element followed by a hole of one double */
    m = resized(c, MPI_DOUBLE, 0, 16);
    c->mtype = m;
    c->mcount = sz / 8;
    c->len = 16 + 17 * 10 * 8;
    return 0;
}

static int b_resized_holes(mt_case *c, int r, int P)
{
    MPI_Datatype t;
    MPI_Type_contiguous(3, MPI_INT, &t);
    t = own(c, t);
    set_view(c, (MPI_Offset)r * 20 + 4, MPI_INT, resized(c, t, 0, 20 * P));
    c->mtype = resized(c, MPI_INT, 0, 8);
    c->mcount = 27;
    c->len = (int64_t)9 * 20 * P + 4;
    return 0;
}

static int b_neg_lb_mem(mt_case *c, int r, int P)
{
    int bl[2] = {2, 3};
    MPI_Aint d[2] = {-40, 8};
    MPI_Datatype m;
    MPI_Type_create_hindexed(2, bl, d, MPI_INT, &m);
    m = own(c, m);
    c->mtype = resized(c, m, -48, 64);
    c->mcount = 4;
    set_view(c, (MPI_Offset)r * 80, MPI_INT, MPI_INT);
    c->len = (int64_t)P * 80;
    return 0;
}

static int b_lb_file(mt_case *c, int r, int P)
{
    /* a filetype whose lower bound is not 0: tiles are placed by extent,
     * data by absolute displacement */
    int bl[2] = {1, 1};
    MPI_Aint d[2] = {8, 20};
    MPI_Datatype f;
    MPI_Type_create_hindexed(2, bl, d, MPI_INT, &f);
    f = own(c, f);
    set_view(c, (MPI_Offset)r * 24, MPI_INT, resized(c, f, 8, 24 * P));
    c->mtype = MPI_INT;
    c->mcount = 20;
    c->len = (int64_t)24 * P * 10 + 48;
    return 0;
}

static int b_etype_int3(mt_case *c, int r, int P)
{
    MPI_Datatype e, t;
    MPI_Type_contiguous(3, MPI_INT, &e);
    e = own(c, e);
    MPI_Type_contiguous(2, e, &t);
    t = own(c, t);
    set_view(c, (MPI_Offset)r * 24, e, resized(c, t, 0, 24 * P));
    c->off = 3;
    c->mtype = MPI_INT;
    c->mcount = 30;
    c->len = (int64_t)7 * 24 * P;
    return 0;
}

static int b_nested(mt_case *c, int r, int P)
{
    MPI_Datatype st = ci_type(c), f, m;
    MPI_Type_create_hvector(2, 1, 8, st, &f);
    f = own(c, f);
    set_view(c, (MPI_Offset)r * 16, MPI_BYTE, resized(c, f, 0, 16 * P));
    MPI_Type_vector(3, 2, 3, st, &m);
    c->mtype = own(c, m);
    c->mcount = 2;
    c->len = (int64_t)6 * 16 * P;
    return 0;
}

static int b_big_vec(mt_case *c, int r, int P)
{
    /* enough data per rank (32 KiB of 64-byte records) to cross stripes
     * and collective buffers */
    MPI_Datatype t;
    MPI_Type_contiguous(64, MPI_BYTE, &t);
    t = own(c, t);
    set_view(c, (MPI_Offset)r * 64, MPI_BYTE, resized(c, t, 0, 64 * P));
    c->mtype = MPI_BYTE;
    c->mcount = 512 * 64;
    c->len = (int64_t)512 * 64 * P;
    return 0;
}

static const struct {
    const char *name;
    builder fn;
} table[] = {
    {"contig", b_contig},
    {"contig_off", b_contig_off},
    {"sparse_ranks", b_sparse_ranks},
    {"vec_file", b_vec_file},
    {"vec_mem", b_vec_mem},
    {"vec_both", b_vec_both},
    {"struct", b_struct},
    {"indexed", b_indexed},
    {"hindexed_zero", b_hindexed_zero},
    {"indexed_block", b_indexed_block},
    {"mem_unsorted", b_mem_unsorted},
    {"subarray_c", b_subarray_c},
    {"subarray_f3", b_subarray_f3},
    {"darray_block", b_darray_block},
    {"darray_cyclic", b_darray_cyclic},
    {"resized_holes", b_resized_holes},
    {"neg_lb_mem", b_neg_lb_mem},
    {"lb_file", b_lb_file},
    {"etype_int3", b_etype_int3},
    {"nested", b_nested},
    {"big_vec", b_big_vec},
};

int mt_ncases(void)
{
    return (int)(sizeof(table) / sizeof(table[0]));
}

const char *mt_case_name(int i)
{
    return table[i].name;
}

int mt_case_build(int i, int rank, int nprocs, mt_case *c)
{
    memset(c, 0, sizeof(*c));
    c->name = table[i].name;
    return table[i].fn(c, rank, nprocs);
}

void mt_case_free(mt_case *c)
{
    for (int k = 0; k < c->nowned; k++)
        MPI_Type_free(&c->owned[k]);
    c->nowned = 0;
}

/* Whether the name of case i is in the comma-separated list. */
static int in_list(const char *list, int i)
{
    size_t n = strlen(table[i].name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && !strncmp(p, table[i].name, n))
            return 1;
        p += l + (e ? 1 : 0);
    }
    return 0;
}

int mt_case_selected(int i)
{
    const char *sel = mt_opt("cases", NULL), *skip = mt_opt("skip", NULL);
    if (skip && in_list(skip, i))
        return 0;
    return !sel || in_list(sel, i);
}

/* ------------------------------------------------------------------ run -- */

int mt_run_case(MPI_File fh, MPI_Comm comm, const char *tag, int i, int wmethod,
                int rmethod)
{
    int rank, P, before = mt_errors();
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    char test[256];
    snprintf(test, sizeof(test), "%s %s w=%s r=%s", tag, table[i].name,
             mt_method_name[wmethod], mt_method_name[rmethod]);
    mt_begin(test);

    mt_case c;
    mt_case_build(i, rank, P, &c);
    mt_mem wm, rm;
    mt_mem_alloc(&wm, c.mcount, c.mtype);
    mt_mem_alloc(&rm, c.mcount, c.mtype);
    unsigned char *stream = malloc(wm.size + 1), *back = malloc(wm.size + 1);
    unsigned char *img = calloc(c.len, 1), *cov = calloc(c.len, 1);
    if (!stream || !back || !img || !cov) {
        mt_fail("out of memory");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    mt_fill_pat(stream, wm.size, 1000u * i + 10u * wmethod + rank, 0);
    mt_mem_scatter(&wm, stream);

    /* an empty file: set_size(0) is collective and leaves no old bytes */
    MT_OK(MPI_File_set_size(fh, 0));
    MT_OK(MPI_File_set_view(fh, c.view.disp, c.view.etype, c.view.ftype,
                            "native", MPI_INFO_NULL));
    mt_access(fh, wmethod, 'w', c.off, wm.buf, c.mcount, c.mtype);
    int64_t end = mt_expect(&c.view, c.off, stream, wm.size, img, cov, c.len),
            size;
    mt_merge_image(comm, img, cov, c.len);
    MPI_Allreduce(&end, &size, 1, MPI_INT64_T, MPI_MAX, comm);
    mt_sync_barrier(fh, comm);
    mt_check_file(fh, img, cov, c.len, size);

    MT_OK(MPI_File_set_view(fh, c.view.disp, c.view.etype, c.view.ftype,
                            "native", MPI_INFO_NULL));
    mt_access(fh, rmethod, 'r', c.off, rm.buf, c.mcount, c.mtype);
    mt_mem_gather(&rm, back);
    mt_compare("read back through the view", back, stream, rm.size, 0);
    mt_mem_check_holes(&rm);
    /* nobody truncates the file for the next run while others still read */
    MPI_Barrier(comm);

    free(stream);
    free(back);
    free(img);
    free(cov);
    mt_mem_free(&wm);
    mt_mem_free(&rm);
    mt_case_free(&c);
    return mt_errors() - before;
}

int mt_run_cases(MPI_Comm comm, const char *tag, const int (*pairs)[2],
                 int npairs)
{
    char name[MT_NAME_MAX];
    MPI_File fh;
    int before = mt_errors();
    mt_name(name, tag);
    mt_begin(tag);
    if (mt_fresh(comm, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh))
        return 1;
    for (int i = 0; i < mt_ncases(); i++) {
        if (!mt_case_selected(i))
            continue;
        for (int k = 0; k < npairs; k++)
            mt_run_case(fh, comm, tag, i, pairs[k][0], pairs[k][1]);
    }
    MT_OK(MPI_File_close(&fh));
    mt_cleanup(comm, name);
    return mt_errors() - before;
}
