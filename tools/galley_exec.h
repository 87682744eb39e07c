/*
 * galley_exec.h -- `galley exec [--] CMD [ARGS...]`: run CMD with
 * libgalley-posix.so preloaded so its POSIX and stdio calls reach galley:
 * names.  Kept apart from galley.c's commands: it never starts the client.
 */
#ifndef GALLEY_EXEC_H
#define GALLEY_EXEC_H

/* Exec CMD (argv[0..argc-1], argv[argc] == NULL) with the preload set and,
 * when given, GALLEY_CLUSTER=cluster and GALLEY_TIMEOUT=timeout_s.  Returns
 * only on failure: 2 bad usage, 127 CMD or the library not found. */
int galley_exec(const char *cluster, int timeout_s, int argc, char **argv);

#endif
