/*
 * ga_crash.c -- crash points for the crash tests (test build only).
 *
 * GALLEY_ARRAY_CRASH=data:N or copynum:N makes rank 0 _exit(99) during the
 * N-th checkpoint of the run: after the first array's data is written
 * (data) or after every array is written and synced, just before the
 * copynum record (copynum).  pause:N makes rank 0 wait there instead,
 * after every array is written and before the first sync: it creates the
 * file GALLEY_ARRAY_PAUSE names and goes on when that file is gone (after
 * 120 s at most), so a test can stop a server exactly in the syncs.  This file
 * is compiled only into libga, the build of the library that the programs in
 * _build/arrays/ (heat, t_arrays, bench_arrays) link, with -DGA_TEST_HOOKS;
 * without that switch ga_internal.h turns both calls into empty inline
 * functions, so the installed libgalley_array has no crash points and ignores
 * the variable.
 *
 * Threads: the caller's; see galley_array.h.
 */
#include "ga_internal.h"
#include "gconfig.h"

#ifndef GA_TEST_HOOKS
#error "ga_crash.c belongs to the test build of the library (-DGA_TEST_HOOKS)"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void ga_crash_init(ga_group *g)
{
    const char *e = g_config_str(G_CFG_ARRAY_CRASH);
    int n = 0;
    if (!e)
        return;
    if (sscanf(e, "data:%d", &n) == 1 && n > 0)
        g->crash_kind = GA_CRASH_DATA;
    else if (sscanf(e, "copynum:%d", &n) == 1 && n > 0)
        g->crash_kind = GA_CRASH_COPYNUM;
    else if (sscanf(e, "pause:%d", &n) == 1 && n > 0)
        g->crash_kind = GA_CRASH_PAUSE;
    g->crash_at = n;
}

void ga_crash_point(const ga_group *g, ga_crash_kind kind)
{
    if (g->crash_kind != (int)kind || g->ncheckpoints + 1 != g->crash_at ||
        g->rank != 0)
        return;
    if (kind == GA_CRASH_PAUSE) {
        const char *f = g_config_str(G_CFG_ARRAY_PAUSE);
        FILE *m = f ? fopen(f, "w") : NULL;
        if (!m)
            return;
        fclose(m);
        for (int i = 0; i < 12000 && access(f, F_OK) == 0; i++)
            usleep(10000);
        return;
    }
    fprintf(stderr,
            "ga: GALLEY_ARRAY_CRASH: rank 0 exits in checkpoint %d (%s)\n",
            g->ncheckpoints + 1,
            kind == GA_CRASH_DATA ? "after data of the first array"
                                  : "before the copynum record");
    fflush(stderr);
    _exit(99);
}
