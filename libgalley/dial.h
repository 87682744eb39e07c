/*
 * dial.h -- private to libgalley: opening a connection's socket (dial.c),
 * used by conn.c.
 */
#ifndef GALLEY_DIAL_H
#define GALLEY_DIAL_H

#include <stdbool.h>
#include <sys/socket.h>

/* The same-host socket of the server at host:port, if it has one here: its
 * name is made of the numeric address, as the server prints it (or
 * "*:PORT" for a server listening on a wildcard address).  0 with *fdp
 * set, or GFS_ESERVERDOWN (*fdp untouched). */
int gc_dial_local(const char *host, const char *port, int *fdp);

/* A TCP connection to host:port (TCP_NODELAY), each address tried with a
 * timeout_ms connect timeout.  0 with *fdp set, GFS_ETIMEDOUT or
 * GFS_ESERVERDOWN (*fdp untouched). */
int gc_dial_tcp(const char *host, const char *port, int timeout_ms, int *fdp);

/* fd moved to a number of at least GC_FD_HIGH (close-on-exec), or fd
 * itself if none is free there: the library's own descriptors stay out of
 * the low numbers a program or a shell names itself (`exec 3> F` takes
 * whatever holds 3; tests and tools dup2 onto 100 or 200, bash reads
 * its script from 255), and a forked child closing them (lifecycle.c)
 * closes nothing the program uses. */
#define GC_FD_HIGH 400
int gc_fd_high(int fd);

/* Do two socket addresses (AF_INET or AF_INET6) name one IP address? */
bool gc_same_ip(const struct sockaddr_storage *a,
                const struct sockaddr_storage *b);

#endif
