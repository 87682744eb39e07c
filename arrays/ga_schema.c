/*
 * ga_schema.c -- the self-describing records stored with a group (pure C).
 *
 * PATH.schema is text, written by rank 0:
 *
 *   galley-array 1
 *   kind checkpoint
 *   arrays 2
 *   array T rank 2 esize 8 dims 256 256 mem BLOCK,BLOCK@2x2 disk BLOCK,*@4x1
 * chunks 4 slot 131072 array K rank 2 esize 4 dims 256 256 mem BLOCK,BLOCK@2x2
 * disk BLOCK,*@4x1 chunks 4 slot 65536 end step 0 10            <- timestep
 * groups: "step INDEX STEPNUMBER", step 1 20               appended after the
 * step's data is written
 *
 * PATH.copynum (checkpoints) holds two records of GA_COPY_RECORD bytes,
 * record c for copy c: "copynum C seq S step N crc XXXXXXXX\n" NUL-padded,
 * the crc (CRC-32) covering the text before " crc".  A copy about to be
 * overwritten first gets "copynum C pending\n"; the complete record is
 * written only after the copy's data is synced.  The newest complete
 * record (highest seq) names the checkpoint to restart from.
 *
 * Every number is checked against a limit before anything is allocated.
 *
 * Threads: pure functions.
 */
#include "ga_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------- format --- */

int ga_schema_format(const ga_schema *s, char **text, size_t *len)
{
    size_t cap = 256 + (size_t)s->narrays * 512, n = 0;
    char *t = malloc(cap);
    if (!t)
        return ga_fail(-ENOMEM, "out of memory (schema)");
    n += (size_t)snprintf(
        t + n, cap - n, "galley-array %d\nkind %s\narrays %d\n",
        GA_SCHEMA_VERSION, s->kind == GA_TIMESTEP ? "timestep" : "checkpoint",
        s->narrays);
    for (int i = 0; i < s->narrays; i++) {
        const ga_schema_array *a = &s->arrays[i];
        char mem[256], disk[256];
        ga_layout_format(&a->mem, mem, sizeof(mem));
        ga_layout_format(&a->disk, disk, sizeof(disk));
        n += (size_t)snprintf(t + n, cap - n, "array %s rank %d esize %d dims",
                              a->name, a->shape.rank, a->shape.esize);
        for (int d = 0; d < a->shape.rank; d++)
            n +=
                (size_t)snprintf(t + n, cap - n, " %" PRId64, a->shape.dims[d]);
        n += (size_t)snprintf(t + n, cap - n,
                              " mem %s disk %s chunks %d slot %" PRId64 "\n",
                              mem, disk, a->chunks, a->slot);
    }
    n += (size_t)snprintf(t + n, cap - n, "end\n");
    *text = t;
    *len = n;
    return 0;
}

int ga_schema_step_line(int index, int64_t step, char *buf, size_t len)
{
    int n = snprintf(buf, len, "step %d %" PRId64 "\n", index, step);
    return n < 0 || (size_t)n >= len ? -ERANGE : n;
}

/* ----------------------------------------------------------- parse --- */

void ga_schema_clear(ga_schema *s)
{
    if (!s)
        return;
    free(s->arrays);
    free(s->steps);
    memset(s, 0, sizeof(*s));
}

const ga_schema_array *ga_schema_find(const ga_schema *s, const char *name)
{
    for (int i = 0; i < s->narrays; i++)
        if (!strcmp(s->arrays[i].name, name))
            return &s->arrays[i];
    return NULL;
}

/* Next whitespace-separated token of a line (NUL-terminated in place). */
static char *tok(char **p)
{
    char *s = *p;
    while (*s == ' ')
        s++;
    if (!*s)
        return NULL;
    char *e = s;
    while (*e && *e != ' ')
        e++;
    if (*e)
        *e++ = 0;
    *p = e;
    return s;
}

static bool num(char **p, int64_t lo, int64_t hi, int64_t *v)
{
    char *t = tok(p), *end;
    if (!t)
        return false;
    long long x = strtoll(t, &end, 10);
    if (*end || end == t || x < lo || x > hi)
        return false;
    *v = x;
    return true;
}

static bool key(char **p, const char *k)
{
    char *t = tok(p);
    return t && !strcmp(t, k);
}

static int parse_array(char *line, ga_schema_array *a)
{
    char *p = line;
    int64_t v;
    memset(a, 0, sizeof(*a));
    if (!key(&p, "array"))
        return -1;
    char *name = tok(&p);
    if (!name || ga_check_name(name))
        return -1;
    strcpy(a->name, name);
    if (!key(&p, "rank") || !num(&p, 1, GA_MAX_RANK, &v))
        return -1;
    a->shape.rank = (int)v;
    if (!key(&p, "esize") || !num(&p, 1, GA_MAX_ESIZE, &v))
        return -1;
    a->shape.esize = (int)v;
    if (!key(&p, "dims"))
        return -1;
    for (int d = 0; d < a->shape.rank; d++) {
        if (!num(&p, 1, GA_MAX_EXTENT, &a->shape.dims[d]))
            return -1;
    }
    if (ga_check_shape(&a->shape))
        return -1;
    char *m, *k;
    if (!key(&p, "mem") || !(m = tok(&p)) || ga_layout_parse(m, &a->mem))
        return -1;
    if (!key(&p, "disk") || !(k = tok(&p)) || ga_layout_parse(k, &a->disk))
        return -1;
    if (a->mem.rank != a->shape.rank || a->disk.rank != a->shape.rank)
        return -1;
    /* stored layouts are resolved: every grid extent present and >= 1 */
    for (int d = 0; d < a->shape.rank; d++)
        if (a->mem.grid[d] < 1 || a->disk.grid[d] < 1)
            return -1;
    if (ga_layout_resolve(&a->disk, &a->shape, 1, false))
        return -1;
    a->mem.units = ga_layout_units(&a->mem);
    if (!key(&p, "chunks") || !num(&p, 1, GA_MAX_UNITS, &v))
        return -1;
    a->chunks = (int)v;
    if (!key(&p, "slot") || !num(&p, 1, INT64_MAX, &a->slot))
        return -1;
    /* the geometry must be what the layout implies */
    if (a->chunks != a->disk.units ||
        a->slot != ga_slot_bytes(&a->disk, &a->shape))
        return -1;
    return tok(&p) ? -1 : 0;
}

int ga_schema_parse(const char *text, size_t len, ga_schema *out)
{
    ga_schema s;
    memset(&s, 0, sizeof(s));
    memset(out, 0, sizeof(*out));
    if (len > GA_SCHEMA_MAX)
        return ga_fail(GA_ESCHEMA, "schema larger than %d bytes",
                       GA_SCHEMA_MAX);
    char *buf = malloc(len + 1);
    if (!buf)
        return ga_fail(-ENOMEM, "out of memory (schema)");
    memcpy(buf, text, len);
    buf[len] = 0;

    int rc = GA_ESCHEMA, lineno = 0, stepcap = 0;
    bool ended = false;
    char *p = buf;
    int64_t v;
    while (*p) {
        char *nl = memchr(p, '\n', (size_t)(buf + len - p));
        if (!nl)
            break; /* a record cut short: ignored */
        *nl = 0;
        char *line = p, *q = line;
        size_t off = (size_t)(nl + 1 - buf);
        p = nl + 1;
        lineno++;
        if (memchr(line, 0, (size_t)(nl - line)) || strlen(line) > 4096) {
            ga_fail(GA_ESCHEMA, "schema line %d: binary or too long", lineno);
            goto out;
        }
        if (lineno == 1) {
            if (!key(&q, "galley-array") || !num(&q, 1, 1000, &v)) {
                ga_fail(GA_ESCHEMA, "not a galley-array schema");
                goto out;
            }
            if (v != GA_SCHEMA_VERSION) {
                ga_fail(GA_ESCHEMA,
                        "schema version %lld, this library reads %d",
                        (long long)v, GA_SCHEMA_VERSION);
                goto out;
            }
        } else if (lineno == 2) {
            char *k;
            if (!key(&q, "kind") || !(k = tok(&q)))
                goto bad;
            if (!strcmp(k, "timestep"))
                s.kind = GA_TIMESTEP;
            else if (!strcmp(k, "checkpoint"))
                s.kind = GA_CHECKPOINT;
            else
                goto bad;
        } else if (lineno == 3) {
            if (!key(&q, "arrays") || !num(&q, 0, GA_MAX_ARRAYS, &v))
                goto bad;
            s.arrays = calloc((size_t)(v ? v : 1), sizeof(*s.arrays));
            if (!s.arrays) {
                rc = ga_fail(-ENOMEM, "out of memory (schema)");
                goto out;
            }
            s.narrays = (int)v;
        } else if (lineno <= 3 + s.narrays) {
            ga_schema_array *a = &s.arrays[lineno - 4];
            if (parse_array(line, a))
                goto bad;
            if (ga_schema_find(&s, a->name) != a)
                goto bad; /* duplicate name */
        } else if (!ended) {
            if (strcmp(line, "end"))
                goto bad;
            ended = true;
            s.header_len = off;
        } else {
            int64_t idx, step;
            if (!key(&q, "step") || !num(&q, 0, GA_MAX_STEPS - 1, &idx) ||
                !num(&q, INT64_MIN, INT64_MAX, &step) || tok(&q) ||
                idx != s.nsteps)
                goto bad;
            if (s.nsteps == stepcap) {
                int nc = stepcap ? stepcap * 2 : 64;
                int64_t *t = realloc(s.steps, sizeof(*t) * (size_t)nc);
                if (!t) {
                    rc = ga_fail(-ENOMEM, "out of memory (schema)");
                    goto out;
                }
                s.steps = t;
                stepcap = nc;
            }
            s.steps[s.nsteps++] = step;
        }
    }
    if (!ended) {
        ga_fail(GA_ESCHEMA, "schema incomplete (no 'end' record)");
        goto out;
    }
    free(buf);
    *out = s;
    return 0;
bad:
    ga_fail(GA_ESCHEMA, "malformed schema record at line %d", lineno);
out:
    free(buf);
    ga_schema_clear(&s);
    return rc;
}

/* --------------------------------------------------------- copynum --- */

uint32_t ga_crc32(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < len; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return c ^ 0xffffffffu;
}

void ga_copy_encode(const ga_copy_rec *r, char *rec)
{
    char body[80]; /* at most 56 bytes: two int64 and the words */
    int n =
        snprintf(body, sizeof(body), "copynum %d seq %" PRId64 " step %" PRId64,
                 r->copy, r->seq, r->step);
    memset(rec, 0, GA_COPY_RECORD);
    snprintf(rec, GA_COPY_RECORD, "%s crc %08x\n", body,
             ga_crc32(body, (size_t)n));
}

void ga_copy_encode_pending(int copy, char *rec)
{
    memset(rec, 0, GA_COPY_RECORD);
    snprintf(rec, GA_COPY_RECORD, "copynum %d pending\n", copy);
}

int ga_copy_decode(const char *rec, ga_copy_rec *out)
{
    char buf[GA_COPY_RECORD + 1];
    memcpy(buf, rec, GA_COPY_RECORD);
    buf[GA_COPY_RECORD] = 0;
    char *crc = strstr(buf, " crc ");
    if (!crc)
        return GA_ESCHEMA;
    size_t body = (size_t)(crc - buf);
    unsigned int want;
    char nl = 0;
    if (sscanf(crc, " crc %8x%c", &want, &nl) != 2 || nl != '\n' ||
        want != ga_crc32(buf, body))
        return GA_ESCHEMA;
    buf[body] = 0;
    int copy, used = 0;
    long long seq, step;
    if (sscanf(buf, "copynum %d seq %lld step %lld%n", &copy, &seq, &step,
               &used) != 3 ||
        (size_t)used != body || (copy != 0 && copy != 1) || seq < 1)
        return GA_ESCHEMA;
    out->copy = copy;
    out->seq = seq;
    out->step = step;
    return 0;
}

int ga_copy_newest(const char *file, size_t len, ga_copy_rec *out)
{
    int best = -1;
    for (int c = 0; c < 2; c++) {
        ga_copy_rec r;
        if ((size_t)(c + 1) * GA_COPY_RECORD > len)
            break;
        if (ga_copy_decode(file + c * GA_COPY_RECORD, &r) || r.copy != c)
            continue;
        if (best < 0 || r.seq > out->seq) {
            *out = r;
            best = c;
        }
    }
    return best;
}
