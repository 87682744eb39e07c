/*
 * ga_hints.c -- the names of a group's files and the MPI_Info hints they
 * are opened with.
 *
 * On "galley:" names a data file gets the striping of its disk layout
 * (striping_factor = chunks, striping_unit = one slot, so chunk q lies on
 * subfile q), the collective-buffering choices explained in ga_data_info,
 * and the paper's fork names (data, data0_<copy>, schema, copynum).  The
 * caller's hints always win.  Other names get the caller's hints only.
 *
 * Threads: the caller's; see galley_array.h.
 */
#include "ga_internal.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

bool ga_is_galley(const char *path)
{
    return !strncmp(path, "galley:", 7);
}

char *ga_data_name(const ga_group *g, const ga_member *m, int copy)
{
    char suffix[GA_NAME_MAX + 8];
    if (g->kind == GA_TIMESTEP)
        snprintf(suffix, sizeof(suffix), ".%s", m->a->name);
    else
        snprintf(suffix, sizeof(suffix), ".%s.%d", m->a->name, copy);
    return ga_join(g->path, suffix, NULL);
}

MPI_Info ga_data_info(const ga_group *g, const ga_member *m, int copy)
{
    MPI_Info info = MPI_INFO_NULL;
    if (g->info != MPI_INFO_NULL)
        MPI_Info_dup(g->info, &info);
    else
        MPI_Info_create(&info);
    if (!ga_is_galley(g->path))
        return info;
    char v[64];
    int flag;
    MPI_Info_get(info, "striping_factor", sizeof(v) - 1, v, &flag);
    if (!flag) {
        snprintf(v, sizeof(v), "%d", ga_layout_units(&m->disk));
        MPI_Info_set(info, "striping_factor", v);
    }
    MPI_Info_get(info, "striping_unit", sizeof(v) - 1, v, &flag);
    if (!flag && m->slot <= INT_MAX) {
        snprintf(v, sizeof(v), "%" PRId64, m->slot);
        MPI_Info_set(info, "striping_unit", v);
    }
    /* How the collective calls move data.  By default each process sends
     * its pieces straight to the servers as one list request (what
     * Panda-on-Galley did with strided calls; the servers sort and merge):
     * romio_cb_write/read=disable.  Measured on one host, 64 MB
     * (BLOCK,BLOCK) over 4 servers: ~180 MB/s this way, ~35 MB/s through
     * the driver's aggregating collective (README, "Benchmark").  A caller
     * who enables collective buffering gets one aggregator per chunk, i.e.
     * per server (Panda's server-directed I/O); ROMIO's default is one per
     * host, which on one machine funnels everything through one process. */
    static const char *const cbkeys[2] = {"romio_cb_write", "romio_cb_read"};
    for (int i = 0; i < 2; i++) {
        MPI_Info_get(info, cbkeys[i], sizeof(v) - 1, v, &flag);
        if (!flag)
            MPI_Info_set(info, cbkeys[i], "disable");
    }
    int f1, f2;
    MPI_Info_get(info, "cb_nodes", sizeof(v) - 1, v, &f1);
    MPI_Info_get(info, "cb_config_list", sizeof(v) - 1, v, &f2);
    if (!f1 && !f2) {
        int n = ga_layout_units(&m->disk);
        snprintf(v, sizeof(v), "%d", n < g->nprocs ? n : g->nprocs);
        MPI_Info_set(info, "cb_nodes", v);
        MPI_Info_set(info, "cb_config_list", "*:*");
    }
    MPI_Info_get(info, "galley_fork", sizeof(v) - 1, v, &flag);
    if (!flag) {
        if (g->kind == GA_TIMESTEP)
            snprintf(v, sizeof(v), "data");
        else
            snprintf(v, sizeof(v), "data0_%d", copy);
        MPI_Info_set(info, "galley_fork", v);
    }
    return info;
}

MPI_Info ga_record_info(const ga_group *g, const char *fork)
{
    MPI_Info sinfo;
    MPI_Info_create(&sinfo);
    if (!ga_is_galley(g->path))
        return sinfo;
    /* a locality layout asked for the data (local, or a template) holds
     * for the records too (local, on every server, so rank 0's own host
     * has one): rank 0 writes them, so they stay on rank 0's host */
    char lay[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    if (g->info != MPI_INFO_NULL)
        MPI_Info_get(g->info, "galley_layout", MPI_MAX_INFO_VAL, lay, &flag);
    if (flag &&
        (strcmp(lay, "local") == 0 || strncmp(lay, "template:", 9) == 0))
        MPI_Info_set(sinfo, "galley_layout", "local");
    else
        MPI_Info_set(sinfo, "striping_factor", "1");
    MPI_Info_set(sinfo, "galley_fork", fork);
    /* what the caller asked to keep the data safe keeps the records that
     * find it safe too: with copies of the data on a lost server's peers
     * but the schema on that server alone, the group would be lost */
    static const char *const keep[] = {"galley_replicas", "galley_checksum"};
    for (size_t i = 0; g->info != MPI_INFO_NULL && i < 2; i++) {
        char v[MPI_MAX_INFO_VAL + 1];
        MPI_Info_get(g->info, keep[i], MPI_MAX_INFO_VAL, v, &flag);
        if (flag)
            MPI_Info_set(sinfo, keep[i], v);
    }
    return sinfo;
}
