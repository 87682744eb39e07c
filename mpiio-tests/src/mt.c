/*
 * mt.c -- shared helpers of the MPI-IO test programs (see mt.h).
 *
 * Threads: single-threaded MPI programs.
 */
#include "mt.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int mt_rank, mt_nprocs;
const char *mt_fname;
MPI_Info mt_info = MPI_INFO_NULL;
int mt_verbose;
int mt_strict_holes;
const char *mt_test = "setup";

static int nerr, nprinted;
static int g_argc;
static char **g_argv;

#define MAX_PRINTED 30

/* ------------------------------------------------------------------------
 * Options, verdict
 * ------------------------------------------------------------------------ */

static void usage(const char *prog)
{
    if (mt_rank == 0)
        fprintf(
            stderr,
            "usage: %s -fname NAME [-hint KEY=VAL]... [-v] [program options]\n",
            prog);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

void mt_init(int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_nprocs);
    /* failures are reported, not fatal: files default to ERRORS_RETURN
     * already, make it explicit */
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    /* request completion (MPI_Wait...) reports through the communicator's
     * handler: return those errors too, so they are printed as failures */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Info_create(&mt_info);
    g_argc = *argc;
    g_argv = *argv;
    for (int i = 1; i < g_argc; i++) {
        if (!strcmp(g_argv[i], "-fname") && i + 1 < g_argc) {
            mt_fname = g_argv[++i];
        } else if (!strcmp(g_argv[i], "-hint") && i + 1 < g_argc) {
            char kv[MPI_MAX_INFO_KEY + MPI_MAX_INFO_VAL + 2];
            snprintf(kv, sizeof(kv), "%s", g_argv[++i]);
            char *eq = strchr(kv, '=');
            if (!eq)
                usage(g_argv[0]);
            *eq = 0;
            MPI_Info_set(mt_info, kv, eq + 1);
        } else if (!strcmp(g_argv[i], "-v")) {
            mt_verbose = 1;
        }
    }
    if (!mt_fname)
        usage(g_argv[0]);
    mt_strict_holes = !strncmp(mt_fname, "galley:", 7);
    if (mt_flag("strict-holes"))
        mt_strict_holes = 1;
    if (mt_flag("lax-holes"))
        mt_strict_holes = 0;
}

const char *mt_opt(const char *name, const char *dflt)
{
    for (int i = 1; i + 1 < g_argc; i++)
        if (g_argv[i][0] == '-' && !strcmp(g_argv[i] + 1, name))
            return g_argv[i + 1];
    return dflt;
}

int mt_flag(const char *name)
{
    for (int i = 1; i < g_argc; i++)
        if (g_argv[i][0] == '-' && !strcmp(g_argv[i] + 1, name))
            return 1;
    return 0;
}

int mt_finish(void)
{
    int total = 0;
    MPI_Allreduce(&nerr, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (mt_rank == 0) {
        if (total == 0)
            printf(" No Errors\n");
        else
            printf(" Found %d errors\n", total);
        fflush(stdout);
    }
    MPI_Info_free(&mt_info);
    MPI_Finalize();
    return total ? 1 : 0;
}

void mt_fail(const char *fmt, ...)
{
    nerr++;
    if (nprinted >= MAX_PRINTED) {
        if (nprinted++ == MAX_PRINTED)
            printf("FAIL rank %d: more failures not shown\n", mt_rank);
        return;
    }
    nprinted++;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    printf("FAIL rank %d [%s]: %s\n", mt_rank, mt_test, msg);
    fflush(stdout);
}

int mt_errors(void)
{
    return nerr;
}

void mt_begin(const char *name)
{
    mt_test = name;
    if (mt_verbose && mt_rank == 0) {
        printf("-- %s\n", name);
        fflush(stdout);
    }
}

const char *mt_class_name(int cls)
{
    switch (cls) {
        /* clang-format off */
#define C(x) case x: return #x;
        C(MPI_SUCCESS) C(MPI_ERR_IO) C(MPI_ERR_NO_SUCH_FILE) C(MPI_ERR_FILE_EXISTS)
        C(MPI_ERR_ACCESS) C(MPI_ERR_AMODE) C(MPI_ERR_READ_ONLY) C(MPI_ERR_FILE)
        C(MPI_ERR_BAD_FILE) C(MPI_ERR_NO_SPACE) C(MPI_ERR_FILE_IN_USE) C(MPI_ERR_ARG)
        C(MPI_ERR_NOT_SAME) C(MPI_ERR_UNSUPPORTED_OPERATION) C(MPI_ERR_UNSUPPORTED_DATAREP)
        C(MPI_ERR_DUP_DATAREP) C(MPI_ERR_CONVERSION) C(MPI_ERR_QUOTA) C(MPI_ERR_NO_MEM)
        C(MPI_ERR_TYPE) C(MPI_ERR_COUNT) C(MPI_ERR_OTHER) C(MPI_ERR_INTERN)
#undef C
    default:
        return "(other class)";
        /* clang-format on */
    }
}

static void describe_err(int err, char *out, size_t len)
{
    char s[MPI_MAX_ERROR_STRING];
    int slen = 0, cls = -1;
    MPI_Error_class(err, &cls);
    MPI_Error_string(err, s, &slen);
    s[slen] = 0;
    for (char *c = s; *c; c++)
        if (*c == '\n')
            *c = ' ';
    snprintf(out, len, "%s (class %d): %s", mt_class_name(cls), cls, s);
}

int mt_ok_(int err, const char *what, const char *file, int line)
{
    if (err == MPI_SUCCESS)
        return 0;
    char d[MPI_MAX_ERROR_STRING + 128];
    describe_err(err, d, sizeof(d));
    mt_fail("%s:%d: %s failed: %s", file, line, what, d);
    return 1;
}

int mt_class_(int err, int cls, const char *clsname, const char *what,
              const char *file, int line)
{
    int got = MPI_SUCCESS;
    if (err != MPI_SUCCESS)
        MPI_Error_class(err, &got);
    if (got == cls)
        return 0;
    char d[MPI_MAX_ERROR_STRING + 128] = "MPI_SUCCESS";
    if (err != MPI_SUCCESS)
        describe_err(err, d, sizeof(d));
    mt_fail("%s:%d: %s: expected %s, got %s", file, line, what, clsname, d);
    return 1;
}

/* ------------------------------------------------------------------------
 * Files
 * ------------------------------------------------------------------------ */

void mt_name(char *out, const char *tag)
{
    snprintf(out, MT_NAME_MAX, "%s.%s", mt_fname, tag);
}

MPI_Info mt_info_with(MPI_Info extra)
{
    MPI_Info info;
    MPI_Info_dup(mt_info, &info);
    if (extra != MPI_INFO_NULL) {
        int n;
        MPI_Info_get_nkeys(extra, &n);
        for (int i = 0; i < n; i++) {
            char key[MPI_MAX_INFO_KEY + 1], val[MPI_MAX_INFO_VAL + 1];
            int flag;
            MPI_Info_get_nthkey(extra, i, key);
            MPI_Info_get(extra, key, MPI_MAX_INFO_VAL, val, &flag);
            if (flag)
                MPI_Info_set(info, key, val);
        }
    }
    return info;
}

void mt_remove(MPI_Comm comm, const char *name)
{
    int r;
    MPI_Comm_rank(comm, &r);
    if (r == 0)
        MPI_File_delete(name, MPI_INFO_NULL);
    MPI_Barrier(comm);
}

void mt_cleanup(MPI_Comm comm, const char *name)
{
    int mine = nerr, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, comm);
    if (all == 0)
        mt_remove(comm, name);
}

int mt_fresh(MPI_Comm comm, const char *name, int amode, MPI_Info extra,
             MPI_File *fh)
{
    mt_remove(comm, name);
    MPI_Info info = mt_info_with(extra);
    int rc =
        MT_OK(MPI_File_open(comm, name, amode | MPI_MODE_CREATE, info, fh));
    MPI_Info_free(&info);
    if (rc)
        *fh = MPI_FILE_NULL;
    return rc;
}

void mt_sync_barrier(MPI_File fh, MPI_Comm comm)
{
    MT_OK(MPI_File_sync(fh));
    MPI_Barrier(comm);
    MT_OK(MPI_File_sync(fh));
}

/* ------------------------------------------------------------------------
 * Patterns and comparisons
 * ------------------------------------------------------------------------ */

void mt_fill_pat(unsigned char *p, int64_t n, uint32_t seed, int64_t first)
{
    for (int64_t i = 0; i < n; i++)
        p[i] = mt_pat(seed, first + i);
}

int64_t mt_compare(const char *what, const unsigned char *got,
                   const unsigned char *want, int64_t n, int64_t base)
{
    int64_t bad = 0, shown = 0;
    for (int64_t i = 0; i < n; i++) {
        if (got[i] == want[i])
            continue;
        /* the extent of this run of differing bytes */
        int64_t j = i;
        while (j + 1 < n && got[j + 1] != want[j + 1])
            j++;
        if (shown < 4)
            mt_fail(
                "%s: bytes %lld..%lld differ (first: got 0x%02x want 0x%02x)",
                what, (long long)(base + i), (long long)(base + j), got[i],
                want[i]);
        shown++;
        bad += j - i + 1;
        i = j;
    }
    if (shown > 4)
        mt_fail("%s: %lld bytes differ in total, in %lld runs", what,
                (long long)bad, (long long)shown);
    return bad;
}

/* ------------------------------------------------------------------------
 * Memory side
 * ------------------------------------------------------------------------ */

int mt_mem_alloc(mt_mem *m, int count, MPI_Datatype type)
{
    MPI_Count tlb, text, size;
    MPI_Count lb, ext;
    memset(m, 0, sizeof(*m));
    MPI_Type_get_true_extent_x(type, &tlb, &text);
    MPI_Type_get_extent_x(type, &lb, &ext);
    MPI_Type_size_x(type, &size);
    if (ext < 0) {
        mt_fail("mt_mem_alloc: negative extent not supported by the test");
        return 1;
    }
    int64_t lo = tlb,
            hi = count > 0 ? (int64_t)(count - 1) * ext + tlb + text : tlb;
    m->span = hi - lo;
    m->alloc = malloc(m->span > 0 ? m->span : 1);
    if (!m->alloc) {
        mt_fail("out of memory (%lld bytes)", (long long)m->span);
        return 1;
    }
    memset(m->alloc, MT_SENTINEL, m->span > 0 ? m->span : 1);
    m->buf = m->alloc - lo;
    m->size = (int64_t)size * count;
    m->count = count;
    m->type = type;
    return 0;
}

void mt_mem_free(mt_mem *m)
{
    free(m->alloc);
    m->alloc = m->buf = NULL;
}

void mt_mem_scatter(mt_mem *m, const unsigned char *stream)
{
    int pos = 0;
    if (m->size == 0)
        return;
    MT_OK(MPI_Unpack(stream, (int)m->size, &pos, m->buf, m->count, m->type,
                     MPI_COMM_SELF));
}

void mt_mem_gather(mt_mem *m, unsigned char *stream)
{
    int pos = 0;
    if (m->size == 0)
        return;
    MT_OK(MPI_Pack(m->buf, m->count, m->type, stream, (int)m->size, &pos,
                   MPI_COMM_SELF));
}

int64_t mt_mem_check_holes(mt_mem *m)
{
    /* the type map's bytes: unpack a stream of ones into a zeroed copy */
    unsigned char *mask = calloc(m->span > 0 ? m->span : 1, 1);
    unsigned char *ones = malloc(m->size > 0 ? m->size : 1);
    int64_t bad = 0;
    if (!mask || !ones) {
        mt_fail("out of memory");
        free(mask);
        free(ones);
        return 1;
    }
    memset(ones, 1, m->size > 0 ? m->size : 1);
    if (m->size > 0) {
        int pos = 0;
        MPI_Unpack(ones, (int)m->size, &pos, mask + (m->buf - m->alloc),
                   m->count, m->type, MPI_COMM_SELF);
    }
    int64_t first = -1, last = -1;
    for (int64_t i = 0; i < m->span; i++) {
        if (!mask[i] && m->alloc[i] != MT_SENTINEL) {
            if (first < 0)
                first = i;
            last = i;
            bad++;
        }
    }
    if (bad)
        mt_fail("%lld bytes outside the memory type map were overwritten "
                "(buffer bytes "
                "%lld..%lld relative to its lowest byte)",
                (long long)bad, (long long)first, (long long)last);
    free(mask);
    free(ones);
    return bad;
}

/* ------------------------------------------------------------------------
 * File side
 * ------------------------------------------------------------------------ */

#define MAP_MAX (1 << 24)

int64_t *mt_view_map(MPI_Datatype ft, int64_t *ftsize, int64_t *extent)
{
    MPI_Count tlb, text, lb, ext, size;
    MPI_Type_get_true_extent_x(ft, &tlb, &text);
    MPI_Type_get_extent_x(ft, &lb, &ext);
    MPI_Type_size_x(ft, &size);
    *ftsize = size;
    *extent = ext;
    if (size >= MAP_MAX || text >= 4 * (int64_t)MAP_MAX) {
        mt_fail("mt_view_map: filetype too large for the oracle");
        return NULL;
    }
    int64_t *map = malloc(sizeof(int64_t) * (size > 0 ? size : 1));
    unsigned char *stream = malloc(size > 0 ? size : 1);
    unsigned char *plane = calloc(4 * (text > 0 ? text : 1), 1);
    if (!map || !stream || !plane) {
        mt_fail("out of memory");
        goto out_fail;
    }
    if (size == 0)
        goto out;
    for (int k = 0; k < 4; k++) {
        for (int64_t v = 0; v < size; v++)
            stream[v] = k < 3 ? (unsigned char)(v >> (8 * k)) : 1;
        int pos = 0;
        MPI_Unpack(stream, (int)size, &pos, plane + k * text - tlb, 1, ft,
                   MPI_COMM_SELF);
    }
    for (int64_t v = 0; v < size; v++)
        map[v] = -1;
    int64_t found = 0;
    for (int64_t p = 0; p < text; p++) {
        if (!plane[3 * text + p])
            continue;
        int64_t v = plane[p] | (int64_t)plane[text + p] << 8 |
                    (int64_t)plane[2 * text + p] << 16;
        if (v >= size || map[v] != -1) {
            mt_fail("mt_view_map: filetype entries overlap (not a valid view "
                    "for writing)");
            goto out_fail;
        }
        map[v] = tlb + p;
        found++;
    }
    if (found != size) {
        mt_fail(
            "mt_view_map: filetype entries overlap (%lld of %lld bytes placed)",
            (long long)found, (long long)size);
        goto out_fail;
    }
out:
    free(stream);
    free(plane);
    return map;
out_fail:
    free(map);
    free(stream);
    free(plane);
    return NULL;
}

int64_t mt_expect(const mt_view *vw, MPI_Offset off,
                  const unsigned char *stream, int64_t n, unsigned char *img,
                  unsigned char *cov, int64_t len)
{
    int64_t ftsize, ext;
    int esize;
    MPI_Type_size(vw->etype, &esize);
    int64_t *map = mt_view_map(vw->ftype, &ftsize, &ext);
    if (!map)
        return -1;
    int64_t end = 0;
    for (int64_t s = 0; s < n; s++) {
        int64_t v = off * esize + s;
        int64_t t = v / ftsize, r = v % ftsize;
        int64_t p = vw->disp + t * ext + map[r];
        if (p < 0 || p >= len) {
            mt_fail(
                "mt_expect: file offset %lld beyond the test's image (%lld)",
                (long long)p, (long long)len);
            free(map);
            return -1;
        }
        img[p] = stream[s];
        cov[p] = 1;
        if (p + 1 > end)
            end = p + 1;
    }
    free(map);
    return end;
}

void mt_merge_image(MPI_Comm comm, unsigned char *img, unsigned char *cov,
                    int64_t len)
{
    MPI_Allreduce(MPI_IN_PLACE, img, (int)len, MPI_BYTE, MPI_BOR, comm);
    MPI_Allreduce(MPI_IN_PLACE, cov, (int)len, MPI_BYTE, MPI_BOR, comm);
}

int64_t mt_check_file(MPI_File fh, const unsigned char *img,
                      const unsigned char *cov, int64_t len, int64_t size)
{
    int64_t bad = 0;
    unsigned char *got = calloc(len > 0 ? len : 1, 1);
    unsigned char *want = malloc(len > 0 ? len : 1);
    if (!got || !want) {
        mt_fail("out of memory");
        free(got);
        free(want);
        return 1;
    }
    for (int64_t i = 0; i < len; i++)
        want[i] = cov[i] ? img[i] : 0;
    if (MT_OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native",
                                MPI_INFO_NULL)))
        bad++;
    MPI_Status st;
    if (!bad && len > 0 &&
        MT_OK(MPI_File_read_at(fh, 0, got, (int)len, MPI_BYTE, &st)))
        bad++;
    if (!mt_strict_holes)
        for (int64_t i = 0; i < len; i++)
            if (!cov[i])
                want[i] = got[i];
    if (!bad)
        bad += mt_compare("whole-file read", got, want, len, 0);
    if (size >= 0) {
        MPI_Offset fsize = -1;
        if (!MT_OK(MPI_File_get_size(fh, &fsize)) && fsize != size) {
            mt_fail("MPI_File_get_size = %lld, expected %lld", (long long)fsize,
                    (long long)size);
            bad++;
        }
    }
    free(got);
    free(want);
    return bad;
}

/* ------------------------------------------------------------------------
 * Access methods
 * ------------------------------------------------------------------------ */

const char *mt_method_name[MT_NMETHODS] = {
    "at",        "ptr", "at_all", "all",     "at_all_split",
    "all_split", "iat", "iptr",   "iat_all", "iall"};

int mt_method_collective(int method)
{
    return method == MT_AT_ALL || method == MT_ALL ||
           method == MT_AT_ALL_SPLIT || method == MT_ALL_SPLIT ||
           method == MT_IAT_ALL || method == MT_IALL;
}

static int etype_size(MPI_File fh)
{
    MPI_Offset disp;
    MPI_Datatype et, ft;
    char rep[MPI_MAX_DATAREP_STRING + 1];
    int ni, na, nd, comb, sz = 1;
    MPI_File_get_view(fh, &disp, &et, &ft, rep);
    MPI_Type_size(et, &sz);
    MPI_Type_get_envelope(et, &ni, &na, &nd, &comb);
    if (comb != MPI_COMBINER_NAMED)
        MPI_Type_free(&et);
    MPI_Type_get_envelope(ft, &ni, &na, &nd, &comb);
    if (comb != MPI_COMBINER_NAMED)
        MPI_Type_free(&ft);
    return sz;
}

int mt_access(MPI_File fh, int method, int op, MPI_Offset off, void *buf,
              int count, MPI_Datatype type)
{
    MPI_Status st;
    MPI_Request req;
    int rc = 0, w = op == 'w', flag = 0;
    const char *m = mt_method_name[method];
    memset(&st, 0, sizeof(st));

    switch (method) {
    case MT_PTR:
    case MT_ALL:
    case MT_ALL_SPLIT:
    case MT_IPTR:
    case MT_IALL:
        if (MT_OK(MPI_File_seek(fh, off, MPI_SEEK_SET)))
            return 1;
        break;
    }
    switch (method) {
    case MT_AT:
        rc = w ? MPI_File_write_at(fh, off, buf, count, type, &st)
               : MPI_File_read_at(fh, off, buf, count, type, &st);
        break;
    case MT_PTR:
        rc = w ? MPI_File_write(fh, buf, count, type, &st)
               : MPI_File_read(fh, buf, count, type, &st);
        break;
    case MT_AT_ALL:
        rc = w ? MPI_File_write_at_all(fh, off, buf, count, type, &st)
               : MPI_File_read_at_all(fh, off, buf, count, type, &st);
        break;
    case MT_ALL:
        rc = w ? MPI_File_write_all(fh, buf, count, type, &st)
               : MPI_File_read_all(fh, buf, count, type, &st);
        break;
    case MT_AT_ALL_SPLIT:
        rc = w ? MPI_File_write_at_all_begin(fh, off, buf, count, type)
               : MPI_File_read_at_all_begin(fh, off, buf, count, type);
        if (rc == MPI_SUCCESS)
            rc = w ? MPI_File_write_at_all_end(fh, buf, &st)
                   : MPI_File_read_at_all_end(fh, buf, &st);
        break;
    case MT_ALL_SPLIT:
        rc = w ? MPI_File_write_all_begin(fh, buf, count, type)
               : MPI_File_read_all_begin(fh, buf, count, type);
        if (rc == MPI_SUCCESS)
            rc = w ? MPI_File_write_all_end(fh, buf, &st)
                   : MPI_File_read_all_end(fh, buf, &st);
        break;
    case MT_IAT:
        rc = w ? MPI_File_iwrite_at(fh, off, buf, count, type, &req)
               : MPI_File_iread_at(fh, off, buf, count, type, &req);
        if (rc == MPI_SUCCESS)
            rc = MPI_Wait(&req, &st);
        break;
    case MT_IAT_ALL:
        rc = w ? MPI_File_iwrite_at_all(fh, off, buf, count, type, &req)
               : MPI_File_iread_at_all(fh, off, buf, count, type, &req);
        if (rc == MPI_SUCCESS)
            rc = MPI_Wait(&req, &st);
        break;
    case MT_IPTR:
    case MT_IALL:
        if (method == MT_IPTR)
            rc = w ? MPI_File_iwrite(fh, buf, count, type, &req)
                   : MPI_File_iread(fh, buf, count, type, &req);
        else
            rc = w ? MPI_File_iwrite_all(fh, buf, count, type, &req)
                   : MPI_File_iread_all(fh, buf, count, type, &req);
        while (rc == MPI_SUCCESS && !flag)
            rc = MPI_Test(&req, &flag, &st);
        break;
    }
    if (rc != MPI_SUCCESS) {
        char d[MPI_MAX_ERROR_STRING + 128];
        describe_err(rc, d, sizeof(d));
        mt_fail("%s %s at %lld (count %d) failed: %s", w ? "write" : "read", m,
                (long long)off, count, d);
        return 1;
    }
    int tsize;
    MPI_Type_size(type, &tsize);
    MPI_Count got = -1;
    MPI_Get_elements_x(&st, MPI_BYTE, &got);
    if (got != (MPI_Count)tsize * count) {
        mt_fail("%s %s at %lld: status says %lld bytes, expected %lld",
                w ? "write" : "read", m, (long long)off, (long long)got,
                (long long)tsize * count);
        return 1;
    }
    switch (method) {
    case MT_PTR:
    case MT_ALL:
    case MT_ALL_SPLIT:
    case MT_IPTR:
    case MT_IALL: {
        MPI_Offset pos = -1;
        int es = etype_size(fh);
        MT_OK(MPI_File_get_position(fh, &pos));
        MPI_Offset want = off + (MPI_Offset)tsize * count / es;
        if (pos != want) {
            mt_fail(
                "%s %s at %lld: individual pointer at %lld after the access, "
                "expected %lld",
                w ? "write" : "read", m, (long long)off, (long long)pos,
                (long long)want);
            return 1;
        }
    }
    }
    return 0;
}
