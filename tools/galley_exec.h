/*
 * galley_exec.h -- `galley exec [--] CMD [ARGS...]`: run CMD with
 * libgalley-posix.so preloaded so its POSIX and stdio calls reach galley:
 * names.  Kept apart from galley.c's commands: it never starts the client.
 */
#ifndef GALLEY_EXEC_H
#define GALLEY_EXEC_H

/* Exec CMD (argv[0..argc-1] after any -m options, argv[argc] == NULL)
 * with the preload set, each -m appended to GALLEY_POSIX_MOUNTS and,
 * when given, GALLEY_CLUSTER=cluster and GALLEY_TIMEOUT=timeout_s.  Returns
 * only on failure: 2 bad usage, 127 CMD or the library not found. */
int galley_exec(const char *cluster, int timeout_s, int argc, char **argv);

#endif
