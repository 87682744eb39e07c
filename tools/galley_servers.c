/*
 * galley_servers.c -- the `galley` tool's commands on servers: ping,
 * iostat and df.
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "galley_cli.h"

int cmd_ping(opts *o)
{
    int n = gfs_num_servers();
    if (n < 0)
        return fail(n, "cannot count servers", NULL);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        double t0 = now_s();
        int rc = gfs_ping(i);
        double ms = (now_s() - t0) * 1e3;
        if (rc == 0) {
            int t = gfs_server_transport(i);
            const char *tn = t == GFS_TRANSPORT_DIRECT      ? "direct"
                             : t == GFS_TRANSPORT_LOCAL_CMA ? "local+cma"
                             : t == GFS_TRANSPORT_LOCAL     ? "local"
                             : t == GFS_TRANSPORT_TCP       ? "tcp"
                                                            : "?";
            printf("server %-3d %-24s ok     %.3f ms  %s\n", i, addr_of(i), ms,
                   tn);
        } else {
            printf("server %-3d %-24s ERROR  %s\n", i, addr_of(i),
                   gfs_strerror(rc));
            bad++;
        }
    }
    fflush(stdout);
    if (bad) {
        fprintf(stderr, "%s: %d of %d servers did not answer\n", prog, bad, n);
        return EXIT_FAIL;
    }
    return EXIT_OK;
}

/* Replicated files, and those with a stale copy (`galley df`, `iostat`). */
typedef struct repl_tally {
    int replicated, degraded;
    gfs_copies cp;
} repl_tally;

static int tally_file(const char *name, void *arg)
{
    repl_tally *t = arg;
    if (gfs_copies_of(name, &t->cp) == 0 && t->cp.replicas > 1) {
        t->replicated++;
        if (t->cp.insync_min < t->cp.replicas) {
            t->degraded++;
            printf("degraded: %s (%d of %d copies in sync)\n", name,
                   t->cp.insync_min, t->cp.replicas);
        }
    }
    return 0;
}

/* The degraded files, one line each, and the tally. */
static void print_degraded(void)
{
    repl_tally *rt = calloc(1, sizeof(*rt));
    if (rt && gfs_list_files("", tally_file, rt) == 0 && rt->replicated)
        printf("replicated files: %d, degraded: %d%s\n", rt->replicated,
               rt->degraded, rt->degraded ? " (galley resync)" : "");
    free(rt);
}

int cmd_iostat(opts *o)
{
    (void)o;
    int n = gfs_num_servers();
    if (n < 0)
        return fail(n, "cannot count servers", NULL);
    int bad = 0;
    printf("%-6s %-22s %16s %16s %16s %16s\n", "SERVER", "ADDRESS",
           "WRITTEN_LOCAL", "WRITTEN_REMOTE", "READ_LOCAL", "READ_REMOTE");
    for (int i = 0; i < n; i++) {
        gfs_server_io st;
        int rc = gfs_server_io_stats(i, &st);
        if (rc < 0) {
            printf("%-6d %-22s ERROR: %s\n", i, addr_of(i), gfs_strerror(rc));
            bad++;
            continue;
        }
        printf("%-6d %-22s %16" PRIu64 " %16" PRIu64 " %16" PRIu64 " %16" PRIu64
               "\n",
               i, addr_of(i), st.written_local, st.written_remote,
               st.read_local, st.read_remote);
    }
    print_degraded();
    fflush(stdout);
    return bad ? EXIT_FAIL : EXIT_OK;
}

int cmd_df(opts *o)
{
    int n = gfs_num_servers();
    if (n < 0)
        return fail(n, "cannot count servers", NULL);
    int bad = 0;
    printf("%-6s %-22s %8s %8s %8s %5s %8s %8s %8s %10s %10s %6s\n", "SERVER",
           "ADDRESS", "USED", "FREE", "TOTAL", "USE%", "RECORDS", "SUBFILES",
           "FORKS", "HITS", "MISSES", "HIT%");
    for (int i = 0; i < n; i++) {
        gfs_server_stat st;
        int rc = gfs_stat_server(i, &st);
        if (rc < 0) {
            printf("%-6d %-22s ERROR: %s\n", i, addr_of(i), gfs_strerror(rc));
            bad++;
            continue;
        }
        char u[32], f[32], t[32], pct[16], hit[16];
        human(st.bytes_used, u, sizeof(u));
        human(st.bytes_free, f, sizeof(f));
        human(st.bytes_total, t, sizeof(t));
        if (st.bytes_total)
            snprintf(pct, sizeof(pct), "%.0f%%",
                     100.0 * (double)(st.bytes_total - st.bytes_free) /
                         (double)st.bytes_total);
        else
            snprintf(pct, sizeof(pct), "-");
        uint64_t acc = st.cache_hits + st.cache_misses;
        if (acc)
            snprintf(hit, sizeof(hit), "%.1f", 100.0 * st.cache_hits / acc);
        else
            snprintf(hit, sizeof(hit), "-");
        printf("%-6d %-22s %8s %8s %8s %5s %8" PRIu64 " %8" PRIu64 " %8" PRIu64
               " %10" PRIu64 " %10" PRIu64 " %6s\n",
               i, addr_of(i), u, f, t, pct, st.nrecords, st.nsubfiles,
               st.nforks, st.cache_hits, st.cache_misses, hit);
    }
    print_degraded();
    fflush(stdout);
    if (bad) {
        fprintf(stderr, "%s: %d of %d servers did not answer\n", prog, bad, n);
        return EXIT_FAIL;
    }
    return EXIT_OK;
}
