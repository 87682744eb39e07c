/*
 * galley_stage.h -- what the files of galley-stage-worker share: the plan
 * (read by galley_stage.c), the commands on Galley's metadata
 * (galley_stage_meta.c: list, cat, prepare, rm) and the exit codes.
 * galley_stage.c describes the program and the plan's format.
 */
#ifndef GALLEY_STAGE_H
#define GALLEY_STAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "galley.h"

#define PLAN_MAX_LINE 8192
#define TASK_MAX (1 << 30) /* bytes of one task: the planner's chunk */

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_STOPPED = 3 };

typedef struct sfile {
    int64_t size, unit;
    int nsub, csum;
    char kind[16];
    char fork[GFS_FORK_NAME_MAX + 1];
    char *src, *dst;
    bool failed;
} sfile;

typedef struct stask {
    int rank, file;
    int64_t off, len;
    bool verify;
    uint32_t crc;
} stask;

typedef struct plan {
    bool in;      /* local -> Galley */
    int per_node; /* workers a node (srun), 0: not given */
    char **nodes; /* the node of each group of per_node ranks */
    int nnodes, nfiles, ntasks;
    sfile *files;
    stask *tasks;
} plan;

extern const char *prog; /* "galley-stage-worker", for messages */

/* Read the plan at path into p (every file and task); 0, or -1 after
 * printing why. */
int plan_read(const char *path, plan *p);

/* The commands of galley_stage_meta.c; each returns an exit code. */
int cmd_list(const char *prefix);
int cmd_cat(const char *name);
int cmd_prepare(const char *path);
int cmd_times(const char *path);
int cmd_rm(int n, char **names);

#endif
