/*
 * hints.c -- hints at create, read back with MPI_File_get_info.
 *
 * On galley: files (name starts with "galley:"):
 *  - striping_factor / striping_unit, galley_servers, galley_fork given at
 *    create are the file's layout, and get_info reports them;
 *  - bad values (not numbers, negative, zero, too large, duplicate or
 *    unknown servers, unknown galley_cb) are ignored: the open succeeds,
 *    the file works, get_info reports the layout really in use;
 *  - opening an existing file with other striping hints reports the
 *    file's own layout;
 *  - galley_replicas (copies of every subfile, 1..3) at create is the
 *    file's R and get_info reports it (1 for a bad value; an existing
 *    file's own R whatever the hint at open);
 *  - every rank reports the same values; set_info after open changes
 *    galley_cb.
 * For each file it prints
 *   LAYOUT file=NAME striping_factor=F striping_unit=U galley_servers=S|-
 *       galley_fork=K galley_replicas=R
 * (one line), which the test harness compares with `galley stat`.  Files
 * are left in place for that (the harness removes them).
 * On other file systems only the "bad hints do not break open" part runs.
 *
 *   hints -fname NAME [-nservers N] [-only TAG | -skip TAG,TAG] [-hint K=V]...
 */
#include "mt.h"

#include <stdlib.h>
#include <string.h>

static int is_galley;
static int nservers;
static int want_replicas = 1; /* galley_replicas the next file reports */

static int get_hint(MPI_Info info, const char *key, char *val)
{
    int flag = 0;
    val[0] = 0;
    MPI_Info_get(info, key, MPI_MAX_INFO_VAL, val, &flag);
    return flag;
}

/* Every rank must report the same value of key. */
static void same_on_all(const char *what, const char *key, const char *val)
{
    char mine[MPI_MAX_INFO_VAL + 1] = "", first[MPI_MAX_INFO_VAL + 1];
    snprintf(mine, sizeof(mine), "%s", val);
    memcpy(first, mine, sizeof(first));
    MPI_Bcast(first, sizeof(first), MPI_CHAR, 0, MPI_COMM_WORLD);
    if (strcmp(first, mine))
        mt_fail("%s: rank 0 reports %s=%s, this rank %s", what, key, first,
                mine);
}

/* Open NAME (created fresh when `create`) with hints "k=v;k=v", check it
 * works, report.  want_factor/want_unit: expected values (0: only check it
 * is a positive number, -1: do not check). */
/* -only TAG runs just that sub-test, -skip TAG,TAG leaves those out. */
static int wanted(const char *tag)
{
    const char *only = mt_opt("only", NULL), *skip = mt_opt("skip", NULL);
    if (only)
        return !strcmp(only, tag);
    if (skip) {
        size_t n = strlen(tag);
        for (const char *p = skip; (p = strstr(p, tag)); p += n)
            if ((p == skip || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
                return 0;
    }
    return 1;
}

static void one(const char *tag, const char *hints, int create, int want_factor,
                int want_unit, const char *want_servers)
{
    char name[MT_NAME_MAX], t[256];
    if (!wanted(tag))
        return;
    MPI_File fh;
    MPI_Info info;
    MPI_Status st;
    snprintf(t, sizeof(t), "%s [%s]", tag, hints);
    mt_begin(t);
    mt_name(name, tag);
    MPI_Info_create(&info);
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", hints);
    for (char *kv = strtok(buf, ";"); kv; kv = strtok(NULL, ";")) {
        char *eq = strchr(kv, '=');
        if (eq) {
            *eq = 0;
            MPI_Info_set(info, kv, eq + 1);
        }
    }
    int err;
    if (create) {
        mt_remove(MPI_COMM_WORLD, name);
        MPI_Info all = mt_info_with(info);
        err = MPI_File_open(MPI_COMM_WORLD, name,
                            MPI_MODE_CREATE | MPI_MODE_RDWR, all, &fh);
        MPI_Info_free(&all);
    } else {
        err = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDWR, info, &fh);
    }
    MPI_Info_free(&info);
    if (MT_OK(err))
        return;

    /* the file works */
    int x = 1000 + mt_rank, y = -1;
    MT_OK(MPI_File_write_at(fh, 4 * mt_rank, &x, 1, MPI_INT, &st));
    mt_sync_barrier(fh, MPI_COMM_WORLD);
    MT_OK(MPI_File_read_at(fh, 4 * mt_rank, &y, 1, MPI_INT, &st));
    if (y != x)
        mt_fail("write/read of one int returned %d, expected %d", y, x);

    MPI_Info used;
    if (MT_OK(MPI_File_get_info(fh, &used))) {
        MPI_File_close(&fh);
        return;
    }
    char f[MPI_MAX_INFO_VAL + 1], u[MPI_MAX_INFO_VAL + 1],
        s[MPI_MAX_INFO_VAL + 1], k[MPI_MAX_INFO_VAL + 1],
        cb[MPI_MAX_INFO_VAL + 1], r[MPI_MAX_INFO_VAL + 1];
    int hf = get_hint(used, "striping_factor", f);
    int hu = get_hint(used, "striping_unit", u);
    int hs = get_hint(used, "galley_servers", s);
    int hk = get_hint(used, "galley_fork", k);
    int hcb = get_hint(used, "galley_cb", cb);
    int hr = get_hint(used, "galley_replicas", r);
    if (is_galley) {
        if (!hf || !hu || !hk || !hcb)
            mt_fail("get_info lacks "
                    "striping_factor/striping_unit/galley_fork/galley_cb "
                    "(%d%d%d%d)",
                    hf, hu, hk, hcb);
        if (want_factor > 0 && atoi(f) != want_factor)
            mt_fail("striping_factor reported %s, expected %d", f, want_factor);
        if (want_factor == 0 && (atoi(f) < 1 || atoi(f) > nservers))
            mt_fail("striping_factor reported '%s', expected 1..%d", f,
                    nservers);
        if (want_unit > 0 && atoi(u) != want_unit)
            mt_fail("striping_unit reported %s, expected %d", u, want_unit);
        if (want_unit == 0 && atoi(u) < 1)
            mt_fail("striping_unit reported '%s', expected a positive number",
                    u);
        if (want_servers && (!hs || strcmp(s, want_servers)))
            mt_fail("galley_servers reported '%s', expected '%s'",
                    hs ? s : "(none)", want_servers);
        if (!hr || atoi(r) != want_replicas)
            mt_fail("galley_replicas reported '%s', expected %d",
                    hr ? r : "(none)", want_replicas);
        same_on_all(t, "galley_replicas", r);
        if (strcmp(cb, "auto") && strcmp(cb, "server") &&
            strcmp(cb, "two_phase"))
            mt_fail("galley_cb reported '%s'", cb);
        same_on_all(t, "striping_factor", f);
        same_on_all(t, "striping_unit", u);
        same_on_all(t, "galley_fork", k);
        same_on_all(t, "galley_servers", hs ? s : "-");
        if (mt_rank == 0) {
            printf("LAYOUT file=%s striping_factor=%s striping_unit=%s "
                   "galley_servers=%s "
                   "galley_fork=%s galley_replicas=%s\n",
                   name, f, u, hs ? s : "-", k, r);
            fflush(stdout);
        }
    }
    MPI_Info_free(&used);
    MT_OK(MPI_File_close(&fh));
}

/* The default layout of a new file with no striping hint: one subfile
 * when one process creates it (opened on MPI_COMM_SELF: file per
 * process), every server when a communicator of more creates it; a
 * striping_factor hint wins in both. */
static void default_factor(void)
{
    char name[MT_NAME_MAX], tag[32], f[MPI_MAX_INFO_VAL + 1];
    if (!is_galley || !wanted("default"))
        return;
    mt_begin("default striping_factor: 1 on MPI_COMM_SELF, every server on "
             "more ranks");
    struct {
        MPI_Comm comm;
        const char *factor; /* hint, or NULL */
        int want;
    } c[] = {{MPI_COMM_SELF, NULL, 1},
             {MPI_COMM_SELF, "3", 3},
             {MPI_COMM_WORLD, NULL, mt_nprocs > 1 ? nservers : 1}};
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        MPI_File fh;
        MPI_Info info, used;
        int self = c[i].comm == MPI_COMM_SELF;
        snprintf(tag, sizeof(tag), "default%zu.%d", i, self ? mt_rank : 0);
        mt_name(name, tag);
        MPI_Info_create(&info);
        if (c[i].factor)
            MPI_Info_set(info, "striping_factor", (char *)c[i].factor);
        if (mt_fresh(c[i].comm, name, MPI_MODE_RDWR, info, &fh)) {
            MPI_Info_free(&info);
            return;
        }
        MPI_Info_free(&info);
        int x = 7 + mt_rank, y = -1;
        MPI_Status st;
        MT_OK(MPI_File_write_at(fh, 4 * (self ? 0 : mt_rank), &x, 1, MPI_INT,
                                &st));
        MT_OK(MPI_File_read_at(fh, 4 * (self ? 0 : mt_rank), &y, 1, MPI_INT,
                               &st));
        if (y != x)
            mt_fail("%s: read back %d, expected %d", tag, y, x);
        MT_OK(MPI_File_get_info(fh, &used));
        if (!get_hint(used, "striping_factor", f) || atoi(f) != c[i].want)
            mt_fail("%s (%s, striping_factor hint %s): striping_factor "
                    "reported '%s', expected %d",
                    tag, self ? "MPI_COMM_SELF" : "MPI_COMM_WORLD",
                    c[i].factor ? c[i].factor : "none", f, c[i].want);
        MPI_Info_free(&used);
        MT_OK(MPI_File_close(&fh));
        mt_remove(c[i].comm, name);
    }
}

static void runtime_info(void)
{
    char name[MT_NAME_MAX], v[MPI_MAX_INFO_VAL + 1];
    MPI_File fh;
    MPI_Info set, used;
    if (!wanted("runtime"))
        return;
    mt_begin("set_info after open; ROMIO's generic hints");
    mt_name(name, "runtime");
    MPI_Info_create(&set);
    MPI_Info_set(set, "cb_buffer_size", "65536");
    MPI_Info_set(set, "romio_cb_write", "disable");
    MPI_Info_set(set, "cb_nodes", "abc"); /* bad: ignored */
    if (mt_fresh(MPI_COMM_WORLD, name, MPI_MODE_RDWR, set, &fh)) {
        MPI_Info_free(&set);
        return;
    }
    MPI_Info_free(&set);
    MT_OK(MPI_File_get_info(fh, &used));
    if (!get_hint(used, "cb_buffer_size", v) || strcmp(v, "65536"))
        mt_fail("cb_buffer_size reported '%s', expected 65536", v);
    if (!get_hint(used, "romio_cb_write", v) || strcmp(v, "disable"))
        mt_fail("romio_cb_write reported '%s', expected disable", v);
    if (!get_hint(used, "cb_nodes", v) || atoi(v) < 1)
        mt_fail("cb_nodes reported '%s' after a bad value, expected a positive "
                "number",
                v);
    MPI_Info_free(&used);
    if (is_galley) {
        MPI_Info_create(&set);
        MPI_Info_set(set, "galley_cb", "two_phase");
        MT_OK(MPI_File_set_info(fh, set));
        MPI_Info_free(&set);
        MT_OK(MPI_File_get_info(fh, &used));
        if (!get_hint(used, "galley_cb", v) || strcmp(v, "two_phase"))
            mt_fail("galley_cb after set_info(two_phase) reported '%s'", v);
        MPI_Info_free(&used);
        /* and it still works */
        int x[4] = {1, 2, 3, mt_rank}, y[4];
        MPI_Status st;
        MT_OK(MPI_File_write_at_all(fh, 16 * mt_rank, x, 4, MPI_INT, &st));
        MT_OK(MPI_File_read_at_all(fh, 16 * mt_rank, y, 4, MPI_INT, &st));
        if (memcmp(x, y, 16))
            mt_fail("collective write/read after set_info(galley_cb=two_phase) "
                    "differ");
    }
    MT_OK(MPI_File_close(&fh));
    mt_remove(MPI_COMM_WORLD, name);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    is_galley = !strncmp(mt_fname, "galley:", 7);
    nservers = atoi(mt_opt("nservers", "4"));
    char s[64];

    /* good hints */
    one("f3u8192", "striping_factor=3;striping_unit=8192", 1, 3, 8192, NULL);
    one("f1u100", "striping_factor=1;striping_unit=100", 1, 1, 100, NULL);
    if (nservers >= 3) {
        one("srv02", "galley_servers=0,2;striping_unit=1000", 1, 2, 1000,
            "0,2");
        snprintf(s, sizeof(s), "galley_servers=%d,0,1", nservers - 1);
        char want[32];
        snprintf(want, sizeof(want), "%d,0,1", nservers - 1);
        one("srvlast01", s, 1, 3, 0, want);
    }
    one("fork", "galley_fork=alt;striping_factor=2", 1, 2, 0, NULL);
    /* reopen an existing file with other striping hints: its own layout */
    one("f3u8192", "striping_factor=1;striping_unit=77", 0, 3, 8192, NULL);

    /* replicated files */
    if (nservers >= 3) {
        want_replicas = 2;
        one("repl2", "galley_replicas=2;striping_factor=2", 1, 2, 0, NULL);
        /* reopened with another R: the file's own */
        one("repl2", "galley_replicas=3", 0, 2, 0, NULL);
        want_replicas = 3;
        one("repl3", "galley_replicas=3;striping_unit=4096", 1, 0, 4096, NULL);
        want_replicas = 1;
        one("repl1", "galley_replicas=1", 1, 0, 0, NULL);
        one("bad-repl-9", "galley_replicas=9", 1, 0, 0, NULL);
        one("bad-repl-abc", "galley_replicas=2x", 1, 0, 0, NULL);
    }

    /* bad hints: ignored */
    one("bad-factor-abc", "striping_factor=abc", 1, 0, 0, NULL);
    one("bad-factor-neg", "striping_factor=-3", 1, 0, 0, NULL);
    one("bad-factor-zero", "striping_factor=0", 1, 0, 0, NULL);
    one("bad-factor-huge", "striping_factor=100000", 1, 0, 0, NULL);
    snprintf(s, sizeof(s), "striping_factor=%d", nservers + 5);
    one("bad-factor-over", s, 1, 0, 0, NULL);
    one("bad-unit-neg", "striping_unit=-5", 1, 0, 0, NULL);
    one("bad-unit-xyz", "striping_unit=xyz", 1, 0, 0, NULL);
    one("bad-unit-zero", "striping_unit=0", 1, 0, 0, NULL);
    one("bad-servers-dup", "galley_servers=0,0", 1, 0, 0, NULL);
    one("bad-servers-x", "galley_servers=x,1", 1, 0, 0, NULL);
    one("bad-servers-empty", "galley_servers=", 1, 0, 0, NULL);
    one("bad-servers-neg", "galley_servers=0,-1", 1, 0, 0, NULL);
    one("bad-servers-trail", "galley_servers=1,", 1, 0, 0, NULL);
    snprintf(s, sizeof(s), "galley_servers=0,%d", nservers + 3);
    one("bad-servers-unknown", s, 1, 0, 0, NULL);
    one("bad-cb", "galley_cb=bogus", 1, 0, 0, NULL);
    one("bad-fork-long",
        "galley_fork="
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaa",
        1, 0, 0, NULL);

    default_factor();
    runtime_info();
    return mt_finish();
}
