/*
 * transport_direct.h -- private to the direct transport (transport_direct.c,
 * transport_direct_grants.c): the grant table and grant channels, which
 * the data path and the readers use.  transport_direct.c states the rules.
 */
#ifndef GALLEY_TRANSPORT_DIRECT_H
#define GALLEY_TRANSPORT_DIRECT_H

#include "transport.h"

/* What a transfer needs of a grant. */
enum { G_READ, G_WRITE, G_SIEVE };

typedef struct dgrant {
    int server;
    uint64_t fkid;
    int rfd, wfd; /* read-only / writable descriptor, or -1 */
    bool locked;  /* wfd is in locked mode: every write locks */
    int cfd;      /* a checksummed fork's CRC sidecar (DIRECT_COPEN), or -1 */
    bool cs;      /* granted by DIRECT_COPEN: its CRCs are ours to keep */
    /* held around each transfer that takes locks of an open file
     * description: a checksummed grant's chunk locks on its sidecar
     * (csfile.h), a locked-mode grant's OFD locks on the file that shut
     * other processes out of a sieved span.  This process's threads share
     * those descriptions, so the locks never shut them out of each other. */
    pthread_mutex_t xlock;
    uint64_t base;  /* the fork's byte 0 in the file (never changes) */
    int inuse;      /* requests moving data through it now */
    bool gone;      /* forgotten while in use: on D.gone, dropped by its
                     * last grant_put */
    uint64_t wrote; /* bytes moved, reported at release */
    uint64_t read;
    struct dgrant *next;
} dgrant;

typedef struct dchan {
    int fd; /* -1: not connected */
    uint64_t reqid;
    uint64_t checked_ns; /* when we last saw it up */
} dchan;

/* How often a request looks whether its grant channel is still up (a poll
 * per request would add a system call to every small transfer). */
#define GC_DIRECT_CHECK_NS 1000000ull

struct dreader; /* readers (transport_direct.c) */

typedef struct dstate {
    pthread_mutex_t lock;
    pthread_cond_t idle; /* a grant's inuse dropped to 0 */
    dgrant *grants;
    dgrant *gone; /* forgotten, still in use (forget_server_locked) */
    dchan *chan;  /* by server */
    int nchan;
    /* raised (atomically, under lock) whenever a server's grants are
     * forgotten: a reader built before holds descriptors the server no
     * longer counts as granted, and stops reading through them */
    uint64_t epoch;
    struct dreader *readers; /* every live reader (a child closes
                              * its copies of their descriptors) */
} dstate;

extern dstate gc_dg;

/* transport_direct_grants.c: the channels and grants ("_locked": with
 * gc_dg.lock held), release and shutdown (transport.h: the ops), and the
 * fork handlers, registered once (before the first grant is asked for). */
void gc_dg_chan_check_locked(int server, uint64_t now);
dchan *gc_dg_chan_get_locked(gc_conn *c, int *rc);
dgrant *gc_dg_grant_find_locked(int server, uint64_t fkid);
int gc_dg_grant_have_locked(const dgrant *g, int need, bool cs);
uint64_t gc_dg_grant_ask(dchan *ch, uint64_t fkid, int need, bool cs, int part);
int gc_dg_grant_take_locked(dchan *ch, uint64_t id, int server, uint64_t fkid,
                            int need, bool cs, dgrant **gp);
int gc_dg_grant_get(gc_conn *c, uint64_t fkid, int need, bool cs, dgrant **gp,
                    int *fdp);
void gc_dg_grant_put(dgrant *g, bool write, uint64_t bytes);
void gc_dg_release(int server, uint64_t fkid);
void gc_dg_shutdown(void);
void gc_dg_atfork_once(void);
/* transport_direct.c: a child after fork() closes its readers' copies of
 * the descriptors (gc_dg.lock held, or the only thread). */
void gc_dg_readers_forget_all(void);

#endif /* GALLEY_TRANSPORT_DIRECT_H */
