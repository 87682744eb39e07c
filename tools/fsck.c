/*
 * fsck.c -- `galley fsck [--repair]`: the consistency check of gfs_fsck
 * (libgalley/fsck.c), printed one finding a line:
 *
 *   orphan     server 1 sub 17  of 'run/a' subfile 1
 *   dangling   server 2 sub 9   of 'run/b' subfile 2: no such header
 *   mismatch   server 0 sub 4   named by 'run/c' subfile 0
 *   unreachable server 3: I/O server unreachable or connection lost
 *   degraded   'run/d' subfile 0: the copy on server 2 (sub 5) is stale
 *   repaired   server 1 sub 17  (removed)
 *
 * then a summary.  Exit status 0 when nothing is wrong (or everything
 * found was repaired), 1 otherwise, 2 on bad usage.
 *
 * Threads: single-threaded.
 */
#include "galley.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct tally {
    int found[8];
} tally;

static void show(const gfs_fsck_item *it, void *arg)
{
    tally *t = arg;
    if (it->kind >= 0 && it->kind < 8)
        t->found[it->kind]++;
    switch (it->kind) {
    case GFS_FSCK_ORPHAN:
        printf("orphan      server %d sub %llu of '%s' subfile %u: no record "
               "names it\n",
               it->server, (unsigned long long)it->hid, it->name, it->subfile);
        break;
    case GFS_FSCK_DANGLING:
        printf("dangling    '%s' subfile %u: server %d has no sub %llu\n",
               it->name, it->subfile, it->server, (unsigned long long)it->hid);
        break;
    case GFS_FSCK_MISMATCH:
        printf("mismatch    server %d sub %llu is not '%s' subfile %u\n",
               it->server, (unsigned long long)it->hid, it->name, it->subfile);
        break;
    case GFS_FSCK_UNREACHABLE:
        printf("unreachable server %d: %s\n", it->server,
               gfs_strerror(it->status));
        break;
    case GFS_FSCK_REPAIRED:
        printf("repaired    server %d sub %llu of '%s': removed\n", it->server,
               (unsigned long long)it->hid, it->name);
        break;
    case GFS_FSCK_DEGRADED:
        printf("degraded    '%s' subfile %u: the copy on server %d (sub %llu) "
               "is stale\n",
               it->name, it->subfile, it->server, (unsigned long long)it->hid);
        break;
    case GFS_FSCK_NOT_REPAIRED:
        printf("not repaired server %d sub %llu of '%s': %s\n", it->server,
               (unsigned long long)it->hid, it->name, gfs_strerror(it->status));
        break;
    }
}

int galley_fsck(int argc, char **argv, const char *cluster, int timeout_s)
{
    bool repair = false;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--repair") == 0) {
            repair = true;
        } else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) {
            cluster = argv[++i];
        } else {
            fprintf(stderr,
                    "galley: fsck: unknown argument '%s' "
                    "(usage: galley fsck [--repair])\n",
                    argv[i]);
            return 2;
        }
    }
    int rc = gfs_init(cluster);
    if (rc < 0) {
        fprintf(stderr, "galley: cannot start the galley client: %s\n",
                gfs_strerror(rc));
        return 1;
    }
    if (timeout_s)
        gfs_set_timeout_ms(timeout_s * 1000);
    tally t;
    memset(&t, 0, sizeof(t));
    rc = gfs_fsck(repair, show, &t);
    gfs_finalize();
    if (rc < 0) {
        fprintf(stderr, "galley: fsck: %s\n", gfs_strerror(rc));
        return 1;
    }
    int left = rc - t.found[GFS_FSCK_REPAIRED];
    printf("fsck: %d orphan(s), %d dangling, %d mismatch(es), %d server(s) "
           "unreachable, %d stale cop%s; %d repaired\n",
           t.found[GFS_FSCK_ORPHAN], t.found[GFS_FSCK_DANGLING],
           t.found[GFS_FSCK_MISMATCH], t.found[GFS_FSCK_UNREACHABLE],
           t.found[GFS_FSCK_DEGRADED],
           t.found[GFS_FSCK_DEGRADED] == 1 ? "y" : "ies",
           t.found[GFS_FSCK_REPAIRED]);
    if (!repair && t.found[GFS_FSCK_ORPHAN])
        printf("fsck: 'galley fsck --repair' removes the orphans\n");
    if (t.found[GFS_FSCK_DEGRADED])
        printf("fsck: 'galley resync' brings the stale copies back\n");
    return left > 0 ? 1 : 0;
}
