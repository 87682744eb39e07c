/*
 * t_layout.c -- unit tests of the pure parts of the array library: layout
 * text, grid choice, HPF ownership arithmetic, run intersection, disk
 * offsets, schema and copynum records.  No MPI.  Prints "PASS n checks".
 */
#include "ga_internal.h"
#include "galley.h"
#include "gerror.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int checks, failures;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        checks++;                                                              \
        if (!(cond)) {                                                         \
            failures++;                                                        \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);             \
            printf(__VA_ARGS__);                                               \
            printf("\n");                                                      \
        }                                                                      \
    } while (0)

static void test_parse(void)
{
    static const struct {
        const char *in, *out;
    } ok[] = {
        {"(BLOCK,*)", "BLOCK,*"},
        {"block, cyclic(4)", "BLOCK,CYCLIC(4)"},
        {"BLOCK,BLOCK@2x2", "BLOCK,BLOCK@2x2"},
        {"CYCLIC,*@3", "CYCLIC(1),*@3"},
        {"*", "*"},
        {"( * , BLOCK )@1x4", "*,BLOCK@1x4"},
        {"BLOCK@5", "BLOCK@5"},
        {"BLOCK,BLOCK,BLOCK@0x2x0", "BLOCK,BLOCK,BLOCK@0x2x0"},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        ga_layout l;
        char buf[128];
        int rc = ga_layout_parse(ok[i].in, &l);
        CHECK(rc == 0, "parse '%s': %s", ok[i].in, ga_errmsg());
        if (rc)
            continue;
        ga_layout_format(&l, buf, sizeof(buf));
        CHECK(!strcmp(buf, ok[i].out), "'%s' -> '%s', want '%s'", ok[i].in, buf,
              ok[i].out);
        ga_layout l2;
        CHECK(ga_layout_parse(buf, &l2) == 0 && !memcmp(&l, &l2, sizeof(l)),
              "round trip of '%s'", buf);
    }
    static const char *bad[] = {"",           "BLOK",
                                "BLOCK,",     "CYCLIC(0)",
                                "CYCLIC(x)",  "(BLOCK",
                                "BLOCK@2x2",  "BLOCK,*@2x2x2",
                                "BLOCK junk", "*,*,*,*,*,*,*,*,*"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ga_layout l;
        CHECK(ga_layout_parse(bad[i], &l) == -EINVAL, "'%s' accepted", bad[i]);
    }
}

static ga_shape shape2(int64_t a, int64_t b, int esize)
{
    ga_shape s = {2, {a, b}, esize};
    return s;
}

static void test_resolve(void)
{
    ga_layout l;
    ga_shape s = shape2(100, 100, 8);
    ga_layout_parse("BLOCK,BLOCK", &l);
    CHECK(ga_layout_resolve(&l, &s, 4, true) == 0 && l.grid[0] == 2 &&
              l.grid[1] == 2 && l.units == 4,
          "4 -> %dx%d", l.grid[0], l.grid[1]);
    ga_layout_parse("BLOCK,BLOCK", &l);
    CHECK(ga_layout_resolve(&l, &s, 12, true) == 0 && l.grid[0] == 4 &&
              l.grid[1] == 3,
          "12 -> %dx%d", l.grid[0], l.grid[1]);
    ga_layout_parse("BLOCK,*", &l);
    CHECK(ga_layout_resolve(&l, &s, 3, true) == 0 && l.grid[0] == 3 &&
              l.grid[1] == 1,
          "3 -> %dx%d", l.grid[0], l.grid[1]);
    ga_layout_parse("*,*", &l);
    CHECK(ga_layout_resolve(&l, &s, 4, true) == 0 && l.units == 1, "all *");
    ga_layout_parse("BLOCK,*@4", &l);
    CHECK(ga_layout_resolve(&l, &s, 1, false) == 0 && l.grid[0] == 4 &&
              l.units == 4,
          "disk @4");
    ga_layout_parse("BLOCK,*", &l);
    CHECK(ga_layout_resolve(&l, &s, 1, false) == 0 && l.units == 1,
          "disk default is one chunk");
    ga_layout_parse("BLOCK,BLOCK@2x3", &l);
    CHECK(ga_layout_resolve(&l, &s, 4, true) == GA_ELAYOUT, "6 procs on 4");
    ga_layout_parse("BLOCK,BLOCK@2x1", &l);
    CHECK(ga_layout_resolve(&l, &s, 3, true) == 0 && l.units == 2,
          "grid smaller than communicator is fine");
    ga_layout_parse("BLOCK", &l);
    CHECK(ga_layout_resolve(&l, &s, 4, true) == GA_ELAYOUT, "rank mismatch");
}

/* Count/owner/global agree with each other for every index. */
static void test_dims(void)
{
    ga_dist ds[] = {{GA_STAR, 0},
                    {GA_BLOCK, 0},
                    {GA_CYCLIC, 1},
                    {GA_CYCLIC, 3},
                    {GA_CYCLIC, 7}};
    int64_t ns[] = {1, 5, 9, 10, 16, 33};
    for (size_t i = 0; i < sizeof(ds) / sizeof(ds[0]); i++)
        for (size_t j = 0; j < sizeof(ns) / sizeof(ns[0]); j++)
            for (int P = 1; P <= 5; P++) {
                if (ds[i].kind == GA_STAR && P > 1)
                    continue;
                int64_t n = ns[j], seen[5] = {0}, total = 0;
                int bad = 0;
                for (int64_t g = 0; g < n; g++) {
                    int64_t loc;
                    int c = ga_dim_owner(&ds[i], n, P, g, &loc);
                    if (c < 0 || c >= P || loc != seen[c] ||
                        ga_dim_global(&ds[i], n, P, c, loc) != g)
                        bad++;
                    else
                        seen[c]++;
                }
                for (int c = 0; c < P; c++) {
                    if (ga_dim_count(&ds[i], n, P, c) != seen[c])
                        bad++;
                    total += seen[c];
                    /* coordinate 0 holds the most (slot size relies on it) */
                    if (seen[c] > seen[0])
                        bad++;
                }
                CHECK(!bad && total == n, "kind %d k %lld n %lld P %d",
                      ds[i].kind, (long long)ds[i].k, (long long)n, P);
            }
}

/* Runs equal the brute-force intersection, with the right local indices. */
static void test_runs(void)
{
    ga_dist ds[] = {{GA_STAR, 0},
                    {GA_BLOCK, 0},
                    {GA_CYCLIC, 1},
                    {GA_CYCLIC, 2},
                    {GA_CYCLIC, 5}};
    int64_t n = 23;
    int nd = (int)(sizeof(ds) / sizeof(ds[0]));
    for (int a = 0; a < nd; a++)
        for (int b = 0; b < nd; b++)
            for (int Pa = 1; Pa <= 4; Pa++)
                for (int Pb = 1; Pb <= 3; Pb++) {
                    if ((ds[a].kind == GA_STAR && Pa > 1) ||
                        (ds[b].kind == GA_STAR && Pb > 1))
                        continue;
                    for (int ca = 0; ca < Pa; ca++)
                        for (int cb = 0; cb < Pb; cb++) {
                            ga_run *r;
                            int64_t nr;
                            int bad = ga_dim_runs(&ds[a], Pa, ca, &ds[b], Pb,
                                                  cb, n, &r, &nr) != 0;
                            int64_t k = 0, g = 0;
                            char own[64] = {0};
                            for (int64_t x = 0; x < n; x++) {
                                int64_t l1, l2;
                                own[x] =
                                    ga_dim_owner(&ds[a], n, Pa, x, &l1) == ca &&
                                    ga_dim_owner(&ds[b], n, Pb, x, &l2) == cb;
                            }
                            for (int64_t i = 0; i < nr && !bad; i++) {
                                if (r[i].g < g || r[i].len < 1)
                                    bad++;
                                for (int64_t x = g; x < r[i].g; x++)
                                    bad += own[x];
                                for (int64_t x = 0; x < r[i].len; x++) {
                                    int64_t l1, l2;
                                    ga_dim_owner(&ds[a], n, Pa, r[i].g + x,
                                                 &l1);
                                    ga_dim_owner(&ds[b], n, Pb, r[i].g + x,
                                                 &l2);
                                    bad += !own[r[i].g + x] ||
                                           l1 != r[i].la + x ||
                                           l2 != r[i].lb + x;
                                }
                                g = r[i].g + r[i].len;
                                k += r[i].len;
                            }
                            for (int64_t x = g; x < n; x++)
                                bad += own[x];
                            free(r);
                            CHECK(!bad, "runs %d/%d P %d/%d c %d/%d", a, b, Pa,
                                  Pb, ca, cb);
                        }
                }
}

/* Disk offsets: every element lands in its chunk's slot, all distinct,
 * and in row-major order inside the chunk. */
static void test_offsets(void)
{
    static const char *disks[] = {"*,*",           "BLOCK,*@4",
                                  "*,BLOCK@3",     "BLOCK,BLOCK@2x2",
                                  "CYCLIC(2),*@3", "CYCLIC,CYCLIC@2x2"};
    ga_shape s = shape2(7, 10, 3);
    for (size_t i = 0; i < sizeof(disks) / sizeof(disks[0]); i++) {
        ga_layout l;
        ga_layout_parse(disks[i], &l);
        CHECK(ga_layout_resolve(&l, &s, 1, false) == 0, "%s", disks[i]);
        int64_t slot = ga_slot_bytes(&l, &s);
        int64_t span = slot * l.units;
        char *used = calloc((size_t)span, 1);
        int bad = 0;
        int64_t sum = 0;
        for (int q = 0; q < l.units; q++)
            sum += ga_unit_count(&l, &s, q, NULL);
        for (int64_t x = 0; x < 7; x++)
            for (int64_t y = 0; y < 10; y++) {
                int64_t gi[2] = {x, y};
                int64_t off = ga_disk_offset(&l, &s, slot, gi);
                if (off < 0 || off + 3 > span || off % 3) {
                    bad++;
                    continue;
                }
                for (int b = 0; b < 3; b++)
                    bad += used[off + b]++;
            }
        free(used);
        CHECK(!bad && sum == 70, "offsets of %s (slot %lld)", disks[i],
              (long long)slot);
    }
    ga_layout l;
    ga_layout_parse("BLOCK,*@4", &l);
    ga_shape s2 = shape2(10, 6, 8);
    ga_layout_resolve(&l, &s2, 1, false);
    CHECK(ga_slot_bytes(&l, &s2) == 3 * 6 * 8, "BLOCK slot");
    int64_t gi[2] = {9, 5};
    CHECK(ga_disk_offset(&l, &s2, 144, gi) == 3 * 144 + (0 * 6 + 5) * 8,
          "last element in chunk 3");
}

static void test_schema(void)
{
    ga_schema s;
    memset(&s, 0, sizeof(s));
    s.kind = GA_TIMESTEP;
    s.narrays = 2;
    s.arrays = calloc(2, sizeof(*s.arrays));
    ga_schema_array *a = &s.arrays[0];
    strcpy(a->name, "T");
    a->shape = shape2(64, 32, 8);
    ga_layout_parse("BLOCK,BLOCK@2x2", &a->mem);
    ga_layout_parse("BLOCK,*@4", &a->disk);
    ga_layout_resolve(&a->mem, &a->shape, 4, true);
    ga_layout_resolve(&a->disk, &a->shape, 1, false);
    a->chunks = 4;
    a->slot = ga_slot_bytes(&a->disk, &a->shape);
    ga_schema_array *b = &s.arrays[1];
    strcpy(b->name, "grid.z-1");
    b->shape.rank = 3;
    b->shape.dims[0] = 5;
    b->shape.dims[1] = 6;
    b->shape.dims[2] = 7;
    b->shape.esize = 12;
    ga_layout_parse("CYCLIC(2),*,*", &b->mem);
    ga_layout_parse("*,*,*", &b->disk);
    ga_layout_resolve(&b->mem, &b->shape, 3, true);
    ga_layout_resolve(&b->disk, &b->shape, 1, false);
    b->chunks = 1;
    b->slot = 5 * 6 * 7 * 12;

    char *text;
    size_t len;
    CHECK(ga_schema_format(&s, &text, &len) == 0, "format");
    char full[4096];
    int n = snprintf(full, sizeof(full), "%s", text);
    char line[64];
    n += ga_schema_step_line(0, 10, line, sizeof(line));
    strcat(full, line);
    n += ga_schema_step_line(1, 20, line, sizeof(line));
    strcat(full, line);
    ga_schema p;
    CHECK(ga_schema_parse(full, (size_t)n, &p) == 0, "parse: %s", ga_errmsg());
    CHECK(p.kind == GA_TIMESTEP && p.narrays == 2 && p.nsteps == 2 &&
              p.steps[1] == 20 && p.header_len == len,
          "fields");
    const ga_schema_array *x = ga_schema_find(&p, "grid.z-1");
    CHECK(x && x->shape.rank == 3 && x->shape.dims[2] == 7 &&
              x->shape.esize == 12 && x->mem.grid[0] == 3 && x->slot == b->slot,
          "array 2");
    x = ga_schema_find(&p, "T");
    CHECK(x && x->disk.grid[0] == 4 && x->chunks == 4 && x->slot == a->slot,
          "array 1");
    ga_schema_clear(&p);

    /* a step record cut by a crash is ignored */
    CHECK(ga_schema_parse(full, (size_t)n - 3, &p) == 0 && p.nsteps == 1,
          "torn step line");
    ga_schema_clear(&p);
    /* a cut header is an error */
    CHECK(ga_schema_parse(full, len - 2, &p) == GA_ESCHEMA, "torn header");
    /* corruptions */
    char bad[4096];
    strcpy(bad, full);
    *strstr(bad, "slot") = 'S';
    CHECK(ga_schema_parse(bad, strlen(bad), &p) == GA_ESCHEMA, "bad key");
    strcpy(bad, full);
    memcpy(strstr(bad, "chunks 4"), "chunks 5", 8);
    CHECK(ga_schema_parse(bad, strlen(bad), &p) == GA_ESCHEMA, "wrong chunks");
    strcpy(bad, full);
    memcpy(strstr(bad, "step 1"), "step 7", 6);
    CHECK(ga_schema_parse(bad, strlen(bad), &p) == GA_ESCHEMA,
          "step index gap");
    strcpy(bad, full);
    memcpy(strstr(bad, "arrays 2"), "arrays 9", 8);
    CHECK(ga_schema_parse(bad, strlen(bad), &p) == GA_ESCHEMA, "array count");
    CHECK(ga_schema_parse("galley-array 2\n", 15, &p) == GA_ESCHEMA, "version");
    CHECK(ga_schema_parse("garbage\n", 8, &p) == GA_ESCHEMA, "garbage");
    strcpy(bad, full);
    memcpy(strstr(bad, "dims 64"), "dims -4", 7);
    CHECK(ga_schema_parse(bad, strlen(bad), &p) == GA_ESCHEMA,
          "negative extent");
    free(text);
    ga_schema_clear(&s);
}

static void test_copynum(void)
{
    char file[2 * GA_COPY_RECORD];
    ga_copy_rec r0 = {0, 3, 30}, r1 = {1, 4, 40}, got;
    CHECK(ga_crc32("123456789", 9) == 0xcbf43926u, "crc32 check value");
    memset(file, 0, sizeof(file));
    CHECK(ga_copy_newest(file, sizeof(file), &got) == -1, "empty");
    CHECK(ga_copy_newest(file, 0, &got) == -1, "zero length");
    ga_copy_encode(&r0, file);
    CHECK(ga_copy_newest(file, GA_COPY_RECORD, &got) == 0 && got.step == 30,
          "only copy 0 (short file)");
    ga_copy_encode(&r1, file + GA_COPY_RECORD);
    CHECK(ga_copy_newest(file, sizeof(file), &got) == 1 && got.seq == 4 &&
              got.step == 40,
          "newest is copy 1");
    ga_copy_encode_pending(1, file + GA_COPY_RECORD);
    CHECK(ga_copy_newest(file, sizeof(file), &got) == 0 && got.step == 30,
          "pending copy 1 is skipped");
    ga_copy_encode(&r1, file + GA_COPY_RECORD);
    file[GA_COPY_RECORD + 20] ^= 1; /* torn/corrupt record */
    CHECK(ga_copy_newest(file, sizeof(file), &got) == 0,
          "corrupt record skipped");
    /* a record in the wrong slot is not trusted */
    ga_copy_encode(&r0, file + GA_COPY_RECORD);
    memset(file, 0, GA_COPY_RECORD);
    CHECK(ga_copy_newest(file, sizeof(file), &got) == -1,
          "record in wrong slot");
}

/* ga_strerror: the array library's own range from its table, every other
 * code (the file system's, errno values) as the file system says it. */
typedef struct {
    int code;
    const char *msg;
} code_msg;
#define X_PAIR(name, value, msg) {value, msg},
static const code_msg ga[] = {GA_ERROR_TABLE(X_PAIR)};
static const code_msg gfs[] = {GFS_ERROR_TABLE(X_PAIR)};
#undef X_PAIR

static void test_messages(void)
{
    for (size_t i = 0; i < sizeof(ga) / sizeof(ga[0]); i++)
        CHECK(strcmp(ga_strerror(ga[i].code), ga[i].msg) == 0, "%d: %s",
              ga[i].code, ga_strerror(ga[i].code));
    for (size_t i = 0; i < sizeof(gfs) / sizeof(gfs[0]); i++)
        CHECK(strcmp(ga_strerror(gfs[i].code), gfs[i].msg) == 0 &&
                  strcmp(gp_strerror(gfs[i].code), gfs[i].msg) == 0,
              "%d: %s", gfs[i].code, ga_strerror(gfs[i].code));
    CHECK(strcmp(ga_strerror(-ENOENT), strerror(ENOENT)) == 0, "errno");
    CHECK(strcmp(ga_strerror(0), "success") == 0, "success");
    CHECK(strcmp(ga_strerror(12345), "unknown error") == 0, "unknown");
}

int main(void)
{
    test_messages();
    test_parse();
    test_resolve();
    test_dims();
    test_runs();
    test_offsets();
    test_schema();
    test_copynum();
    if (failures) {
        printf("FAIL %d of %d checks\n", failures, checks);
        return 1;
    }
    printf("PASS %d checks\n", checks);
    return 0;
}
