/*
 * rcache.c -- the records this process created or looked up, by name, so
 * that an open or a stat of a file it knows need not wait for the record
 * before asking the subfiles' servers: it sends the lookup and the
 * subfile requests (with the cached header ids) at once, and uses the
 * answers only when the record that comes back is the cached one (same
 * servers, same header ids, same attributes).  Otherwise it throws them
 * away and goes on from the fresh record: the cache saves round trips,
 * never decides anything (striped.c).  A replicated file's record is
 * never kept (gc_rcache_put drops it): which of its copies are in sync is
 * part of it, and only a majority lookup (repl.c) may say.
 *
 * A table of RC_SETS sets of RC_WAYS entries, the set chosen by the
 * name's hash (a new name replaces the set's oldest); an entry holds only
 * the used part of a record.  Cleared at gfs_finalize.
 *
 * Leases.  A record that came with a lease from its metadata server
 * (NS_LEASE, NS_COMMIT_LEASE; servers/nameserver.c) is more than a hint:
 * until the lease runs out it IS the record, and a stat or an open may
 * use it without asking.  The server recalls the lease before anyone
 * else removes the name or changes its attributes, and waits until this
 * process has dropped it or until the lease ran out.  A renewal thread
 * per server where this process holds leases keeps one NS_RENEW waiting
 * there, on a control connection of its own (conn.c): the server answers
 * it at once when it recalls a name, else after GALLEY_MD_RENEW_MS
 * (default 200); each answer renews the leases there and brings the
 * names recalled, and the next renewal, sent at once, acknowledges them.
 * So a recall costs a change about a round trip.  A lease counts from
 * before its request was sent, less a tenth, so it ends here before it
 * ends at the server.  A remove by this process drops its own lease
 * first.  This process's id for the servers is random, and new in a
 * forked child (which starts with no leases).
 *
 * Idle leases.  The leases at a server that no stat or open used for
 * GALLEY_MD_IDLE_MS (default 30000; 0: never) are let go, unless a file
 * of theirs is open here: their entries stay as hints, the renewals to
 * that server stop, and the next open or stat of such a name asks once
 * and is granted a lease again.  So an idle process sends nothing.  A
 * process lets all its leases go at gfs_finalize, and at exit() when it
 * never called it (the preload does not), so that nobody waits for
 * leases of a process that has ended.
 *
 * Open files.  A striped file opened under a lease opens its forks at
 * their first use (striped.c).  Before a recall of its lease is
 * acknowledged, and when its server says it lost this process's leases,
 * the forks still missing are opened (gc_striped_pin), so the subfiles'
 * servers keep what the open file reads until its close.  A leased entry
 * of a name open here is replaced last in its set.
 *
 * Sizes.  A leased entry may carry the file's size (known at create, or
 * from a stat's fan-out), which a stat may answer with no request while
 * (1) the lease holds, (2) no file id of this process has the name open
 * (its own writes go through those: the size is dropped at their
 * close), and (3) the size is less than GALLEY_MD_SIZE_MS old (default
 * 60000, as NFS's acregmax; 0: never answer a size from here).  So a stat sees
 * every change of the record at once, this process's own writes at once, and
 * another process's writes at most GALLEY_MD_SIZE_MS late, or at once after
 * this process opens the file (an open drops the cached size, and the size
 * of an open file is always asked of the servers) -- the bound of NFS's
 * attribute cache, with close-to-open.
 *
 * Threads: any; rc_lock, a leaf lock, around every access; the renewal
 * threads take it between their requests, never across one.  A fork()
 * takes it too (gc_rcache_atfork).
 */
#include "internal.h"
#include "fnv.h"
#include "gclock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define RC_WAYS 4
#define RC_SETS 4096
#define RC_SLOTS (RC_SETS * RC_WAYS)

typedef struct rc_ent {
    char *name;
    uint32_t nsub, attrlen;
    uint32_t *server;
    uint64_t *hid;
    char *attrs;
    int lserver;    /* the server of its lease, or -1: only a hint */
    int64_t until;  /* the lease's own end (ms, g_now_ms) */
    uint64_t epoch; /* its server's start when granted (gmsg.h) */
    int64_t size;   /* its size, or -1 */
    int64_t mtime;  /* its modification time with that size (ns) */
    int64_t size_at;
    bool ahead;   /* its size came by stat-ahead, no stat answered yet */
    uint64_t seq; /* when it was put (rl.seq): the oldest goes first */
} rc_ent;

#define RC_OPEN_SLOTS 256

/* A name some file id of this process has open, and how many. */
typedef struct rc_open {
    struct rc_open *next;
    int n;
    char name[];
} rc_open;

static pthread_mutex_t rc_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rc_cv = PTHREAD_COND_INITIALIZER;
static rc_ent rc_tab[RC_SLOTS];
static rc_open *rc_opens[RC_OPEN_SLOTS];

/* The leases (under rc_lock): this process's id, and per server the end of
 * the leases its last renewal covered and how many entries hold one. */
static struct {
    pid_t pid;
    uint64_t client;
    int nserv;
    struct rl_server {
        int64_t until;  /* the end of the leases its last renewal covered */
        uint64_t epoch; /* the server's start its last renewal answered */
        int nheld;      /* entries holding a lease there */
        int64_t used;   /* a lease there last granted or used (ms) */
        int64_t gone;   /* its leases let go (NS_LET_GO) up to then: a
                         * lease asked for no later is only a hint */
        bool running;   /* its renewal thread runs */
        gc_conn *conn;  /* that thread's control connection, connected by
                         * the program's thread that got the first lease
                         * there (control_conn), or NULL */
    } * srv;
    int nrunning;    /* renewal threads running */
    bool stop;       /* no renewal thread starts; those running end */
    bool atexit;     /* exit_let_go is registered */
    uint64_t closes; /* file ids closed so far */
    uint64_t ahead;  /* stats answered from a stat-ahead's entry first */
    uint64_t seq;    /* entries put so far */
} rl;

static void ent_clear(rc_ent *e)
{
    if (e->name && e->lserver >= 0 && e->lserver < rl.nserv)
        rl.srv[e->lserver].nheld--;
    free(e->name);
    free(e->server);
    free(e->hid);
    free(e->attrs);
    memset(e, 0, sizeof(*e));
    e->lserver = -1;
}

/* A forked child: none of its parent's leases is its own (rc_lock). */
static void check_fork(void)
{
    pid_t pid = getpid();
    if (pid == rl.pid)
        return;
    for (size_t i = 0; i < RC_SLOTS; i++)
        if (rc_tab[i].name && rc_tab[i].lserver >= 0) {
            rc_tab[i].lserver = -1;
            rc_tab[i].size = -1;
        }
    for (int i = 0; i < rl.nserv; i++) {
        rl.srv[i].nheld = 0;
        rl.srv[i].running = false; /* the parent's threads are not here */
        if (rl.srv[i].conn) {      /* the parent's: its copy closed, quietly */
            gc_conn_after_fork(rl.srv[i].conn);
            gc_conn_free(rl.srv[i].conn);
            rl.srv[i].conn = NULL;
        }
    }
    rl.nrunning = 0;
    rl.stop = false;
    uint64_t id = 0;
    if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
        id = g_now_ns() ^ ((uint64_t)pid << 32);
    rl.client = id ? id : 1;
    rl.pid = pid;
}

/* fork(): rc_lock is taken around it, so no other thread is inside it
 * then (a renewal thread of the parent holding it at the fork left the
 * child's copy locked for good: the child's first stat waited forever)
 * and the child's copy of the table is whole; check_fork does the rest. */
static void atfork_prepare(void)
{
    pthread_mutex_lock(&rc_lock);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&rc_lock);
}

static void atfork_child(void)
{
    pthread_mutex_unlock(&rc_lock);  /* taken by this thread in prepare */
    pthread_cond_init(&rc_cv, NULL); /* (the parent's waiters are not here) */
}

void gc_rcache_atfork(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* Is e's lease live now (rc_lock)? */
static bool leased(const rc_ent *e, int64_t now)
{
    if (e->lserver < 0 || e->lserver >= rl.nserv)
        return false;
    return now < e->until || (e->epoch == rl.srv[e->lserver].epoch &&
                              now < rl.srv[e->lserver].until);
}

static bool is_open(const char *name)
{
    if (!name)
        return false;
    for (rc_open *o = rc_opens[g_fnv1a(name) % RC_OPEN_SLOTS]; o; o = o->next)
        if (strcmp(o->name, name) == 0)
            return true;
    return false;
}

/* An entry's age for replacement: a leased name open here goes last (its
 * lease keeps the data of forks opened at first use: striped.c). */
static uint64_t age_key(const rc_ent *e)
{
    return e->seq + (e->lserver >= 0 && is_open(e->name) ? (1ull << 62) : 0);
}

/* name's entry, or NULL (rc_lock). */
static rc_ent *find(const char *name)
{
    rc_ent *set = &rc_tab[(g_fnv1a(name) % RC_SETS) * RC_WAYS];
    for (int i = 0; i < RC_WAYS; i++)
        if (set[i].name && strcmp(set[i].name, name) == 0)
            return &set[i];
    return NULL;
}

/* name's entry, or (no entry has it) the one a new entry for it would
 * replace: an empty one of its set, else the oldest (rc_lock).  Ages are
 * looked at only when the set is full: a look-up that misses (find) pays
 * no is_open per way. */
static rc_ent *slot(const char *name)
{
    rc_ent *e = find(name);
    if (e)
        return e;
    rc_ent *set = &rc_tab[(g_fnv1a(name) % RC_SETS) * RC_WAYS], *old = set;
    for (int i = 0; i < RC_WAYS; i++)
        if (!set[i].name)
            return &set[i];
    uint64_t oldest = age_key(old);
    for (int i = 1; i < RC_WAYS; i++) {
        uint64_t a = age_key(&set[i]);
        if (a < oldest) {
            old = &set[i];
            oldest = a;
        }
    }
    return old;
}

static void start_renewer(int s);

/* The per-server lease state, made at the first lease (rc_lock). */
static void srv_table(void)
{
    if (rl.srv)
        return;
    rl.nserv = gc_g.nservers;
    rl.srv = calloc((size_t)rl.nserv, sizeof(*rl.srv));
    if (!rl.srv)
        rl.nserv = 0;
}

/* Server s's control connection for its renewal thread, made and
 * connected here, on the program's thread that got a lease there: a
 * socket a background thread made could take a descriptor number the
 * program has just closed to dup2 another onto it (a shell's `echo >
 * F`).  Without it (no memory, a failed connect) the thread renews on
 * the server's own connection, without waiting there. */
static void control_conn(int s)
{
    pthread_mutex_lock(&rc_lock);
    check_fork();
    srv_table();
    bool need = s >= 0 && s < rl.nserv && !rl.srv[s].conn;
    pthread_mutex_unlock(&rc_lock);
    if (!need)
        return;
    gc_conn *c = gc_conn_new_control(gc_server_conn(s));
    gp_PING_rep ping;
    if (c && gc_PING_call(c, &(gp_PING_req){}, &ping, NULL)) {
        gc_conn_free(c);
        return;
    }
    pthread_mutex_lock(&rc_lock);
    if (c && rl.pid == getpid() && s < rl.nserv && !rl.srv[s].conn) {
        rl.srv[s].conn = c;
        c = NULL;
    }
    pthread_mutex_unlock(&rc_lock);
    gc_conn_free(c);
}

/* Keep rec for name; with a lease from `server` (asked for at `sent`,
 * until `until`) when server >= 0 (and then its size, or -1). */
static void put(const char *name, const gp_record *rec, int server,
                int64_t sent, int64_t until, uint64_t epoch, int64_t size)
{
    if (rec->repl.ncopy > 1) {
        /* a replicated file's record is the newest of a majority of its
         * copies (repl.c: gc_repl_lookup), and which of its copies are in
         * sync is part of it: never taken from here */
        gc_rcache_drop(name);
        return;
    }
    rc_ent n = {.lserver = -1, .size = -1};
    n.name = strdup(name);
    n.server = malloc((rec->nsub ? rec->nsub : 1) * sizeof(*n.server));
    n.hid = malloc((rec->nsub ? rec->nsub : 1) * sizeof(*n.hid));
    n.attrs = malloc((size_t)rec->attrlen + 1);
    if (!n.name || !n.server || !n.hid || !n.attrs) {
        free(n.name);
        free(n.server);
        free(n.hid);
        free(n.attrs);
        gc_rcache_drop(name); /* never keep an older one instead */
        return;
    }
    n.nsub = rec->nsub;
    n.attrlen = rec->attrlen;
    memcpy(n.server, rec->server, rec->nsub * sizeof(*n.server));
    memcpy(n.hid, rec->hid, rec->nsub * sizeof(*n.hid));
    memcpy(n.attrs, rec->attrs, (size_t)rec->attrlen + 1);
    pthread_mutex_lock(&rc_lock);
    check_fork();
    if (server >= 0)
        srv_table();
    rc_ent *e = slot(name);
    ent_clear(e);
    *e = n;
    e->seq = ++rl.seq;
    if (server >= 0 && server < rl.nserv && sent > rl.srv[server].gone) {
        e->lserver = server;
        e->until = until;
        e->epoch = epoch;
        e->size = size;
        e->size_at = g_now_ms();
        rl.srv[server].nheld++;
        rl.srv[server].used = e->size_at;
        start_renewer(server);
    }
    pthread_mutex_unlock(&rc_lock);
}

void gc_rcache_put(const char *name, const gp_record *rec)
{
    put(name, rec, -1, 0, 0, 0, -1);
}

void gc_rcache_lease(const char *name, const gp_record *rec, int server,
                     int64_t sent, uint32_t lease_ms, uint64_t epoch,
                     int64_t size)
{
    if (!lease_ms) {
        put(name, rec, -1, 0, 0, 0, -1);
        return;
    }
    control_conn(server);
    put(name, rec, server, sent, sent + (int64_t)lease_ms * 9 / 10, epoch,
        size);
}

uint64_t gc_rcache_client(void)
{
    pthread_mutex_lock(&rc_lock);
    check_fork();
    uint64_t id = rl.client;
    pthread_mutex_unlock(&rc_lock);
    return id;
}

bool gc_rcache_get(const char *name, gp_record *rec)
{
    return gc_rcache_leased(name, rec, NULL, NULL) != RC_NONE;
}

/* A leased entry's size a stat may answer (rc_lock held): known, not
 * open here, and less than GALLEY_MD_SIZE_MS old (rcache.c's header). */
static bool size_servable(const rc_ent *e, int64_t now)
{
    long max = (long)g_config_int(G_CFG_MD_SIZE_MS); /* read once */
    return e->size >= 0 && now - e->size_at < max && !is_open(e->name);
}

int gc_rcache_leased(const char *name, gp_record *rec, int64_t *size,
                     int64_t *mtime)
{
    int hit = RC_NONE;
    if (size)
        *size = -1;
    pthread_mutex_lock(&rc_lock);
    check_fork();
    rc_ent *e = find(name);
    if (e) {
        rec->nsub = e->nsub;
        rec->attrlen = e->attrlen;
        memcpy(rec->server, e->server, e->nsub * sizeof(*e->server));
        memcpy(rec->hid, e->hid, e->nsub * sizeof(*e->hid));
        memcpy(rec->attrs, e->attrs, (size_t)e->attrlen + 1);
        rec->repl.ncopy = 0;
        int64_t now = g_now_ms();
        hit = RC_HINT;
        if (leased(e, now)) {
            hit = RC_LEASED;
            rl.srv[e->lserver].used = now;
            if (size && size_servable(e, now)) {
                *size = e->size;
                if (mtime)
                    *mtime = e->mtime;
                if (e->ahead) {
                    e->ahead = false;
                    rl.ahead++;
                }
            }
        }
    }
    pthread_mutex_unlock(&rc_lock);
    return hit;
}

bool gc_rcache_has_size(const char *name)
{
    pthread_mutex_lock(&rc_lock);
    check_fork();
    rc_ent *e = find(name);
    int64_t now = g_now_ms();
    bool has = e && leased(e, now) && size_servable(e, now);
    pthread_mutex_unlock(&rc_lock);
    return has;
}

uint64_t gc_rcache_closes(void)
{
    pthread_mutex_lock(&rc_lock);
    uint64_t n = rl.closes;
    pthread_mutex_unlock(&rc_lock);
    return n;
}

uint64_t gc_rcache_ahead_used(void)
{
    pthread_mutex_lock(&rc_lock);
    uint64_t n = rl.ahead;
    pthread_mutex_unlock(&rc_lock);
    return n;
}

void gc_rcache_size(const char *name, int64_t size, int64_t mtime, int64_t at,
                    uint64_t closes, bool ahead)
{
    pthread_mutex_lock(&rc_lock);
    rc_ent *e = find(name);
    /* (a file id closed since the size was asked for may have written) */
    if (e && e->lserver >= 0 && !is_open(name) && closes == rl.closes) {
        e->size = size;
        e->mtime = mtime;
        e->size_at = at;
        e->ahead = ahead;
    }
    pthread_mutex_unlock(&rc_lock);
}

void gc_rcache_opened(const char *name, int delta)
{
    pthread_mutex_lock(&rc_lock);
    rc_ent *e = find(name);
    if (e)
        e->size = -1; /* its writes go through the file id */
    if (delta < 0)
        rl.closes++;
    rc_open **p = &rc_opens[g_fnv1a(name) % RC_OPEN_SLOTS];
    while (*p && strcmp((*p)->name, name) != 0)
        p = &(*p)->next;
    if (*p) {
        (*p)->n += delta;
        if ((*p)->n <= 0) {
            rc_open *o = *p;
            *p = o->next;
            free(o);
        }
    } else if (delta > 0) {
        rc_open *o = malloc(sizeof(*o) + strlen(name) + 1);
        if (o) {
            o->n = delta;
            strcpy(o->name, name);
            o->next = rc_opens[g_fnv1a(name) % RC_OPEN_SLOTS];
            rc_opens[g_fnv1a(name) % RC_OPEN_SLOTS] = o;
        }
        /* no memory: the size stays dropped until the next stat asks */
    }
    pthread_mutex_unlock(&rc_lock);
}

void gc_rcache_drop(const char *name)
{
    pthread_mutex_lock(&rc_lock);
    rc_ent *e = find(name);
    if (e)
        ent_clear(e);
    pthread_mutex_unlock(&rc_lock);
}

/* Drop every entry leased from server s (rc_lock). */
static void drop_server(int s)
{
    for (size_t i = 0; i < RC_SLOTS; i++)
        if (rc_tab[i].name && rc_tab[i].lserver == s)
            ent_clear(&rc_tab[i]);
}

/* Names to pin (gc_striped_pin) once rc_lock is released. */
typedef struct rc_pins {
    char **name;
    size_t n, cap;
} rc_pins;

static void pins_add(rc_pins *p, const char *name)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 8;
        char **nn = realloc(p->name, cap * sizeof(*nn));
        if (!nn)
            return;
        p->name = nn;
        p->cap = cap;
    }
    if ((p->name[p->n] = strdup(name)))
        p->n++;
}

/* Pin what the lease recalls or losses left (no lock held): a lazily
 * opened file keeps its data once its forks are open. */
static void pins_run(rc_pins *p)
{
    for (size_t i = 0; i < p->n; i++) {
        gc_striped_pin(p->name[i]);
        free(p->name[i]);
    }
    free(p->name);
}

/* The open names whose lease is at server s (rc_lock). */
static void pins_of_server(rc_pins *p, int s)
{
    for (size_t b = 0; b < RC_OPEN_SLOTS; b++)
        for (rc_open *o = rc_opens[b]; o; o = o->next) {
            rc_ent *e = find(o->name);
            if (e && e->lserver == s)
                pins_add(p, o->name);
        }
}

/* One renewal at server s on conn, held there up to wait_ms while
 * nothing is recalled: 0, or an error (the leases there then run out by
 * themselves).  The names recalled are dropped (the files of theirs open
 * here get their forks first: pins_run) and acknowledged by the next one
 * (*owe: names were recalled). */
static int renew(int s, gc_conn *conn, uint64_t client, uint64_t *acked,
                 uint32_t wait_ms, bool *owe)
{
    rc_pins pins = {0};
    int64_t sent = g_now_ms();
    gc_tail t;
    gp_NS_RENEW_rep m;
    int rc = gc_NS_RENEW_call(conn,
                              &(gp_NS_RENEW_req){.client = client,
                                                 .acked = *acked,
                                                 .wait_ms = wait_ms},
                              &m, &t);
    if (rc)
        return rc;
    pthread_mutex_lock(&rc_lock);
    if (rl.pid != getpid() || rl.client != client) {
        pthread_mutex_unlock(&rc_lock);
        gc_tail_end(&t);
        return 0;
    }
    if (!m.known) {
        pins_of_server(&pins, s);
        drop_server(s); /* it lost them (restarted): none holds */
    }
    for (uint32_t i = 0; i < m.n && !t.r.err; i++) {
        gp_NAME_item it;
        if (gp_NAME_item_decode(&t.r, &it))
            break;
        if (is_open(it.name))
            pins_add(&pins, it.name);
        rc_ent *e = find(it.name);
        if (e && e->lserver == s)
            ent_clear(e);
    }
    rc = gc_tail_end(&t);
    if (rc) {
        /* not every recalled name was read: none of them is trusted */
        drop_server(s);
    } else {
        if (m.n) {
            *acked = m.seq;
            *owe = true;
        }
        rl.srv[s].until = sent + (int64_t)m.lease_ms * 9 / 10;
        rl.srv[s].epoch = m.epoch; /* extends the leases of this start only */
    }
    pthread_mutex_unlock(&rc_lock);
    pins_run(&pins);
    return rc;
}

/* Does a name open here hold its lease at server s (rc_lock)? */
static bool open_at(int s)
{
    for (size_t b = 0; b < RC_OPEN_SLOTS; b++)
        for (rc_open *o = rc_opens[b]; o; o = o->next) {
            rc_ent *e = find(o->name);
            if (e && e->lserver == s)
                return true;
        }
    return false;
}

/* Leases at server s that nobody used for GALLEY_MD_IDLE_MS are let go:
 * their entries stay as hints (an open or stat then asks once more, and
 * is granted a lease again), so an idle process sends no renewals, and
 * the server is told (NS_LET_GO), so nobody waits for them.  A lease
 * asked for before that message was sent may have been granted before
 * the server handled it: kept only as a hint (rl.srv[s].gone).  Called
 * and returns with rc_lock held; releases it meanwhile. */
static void let_go(int s, uint64_t client)
{
    for (size_t i = 0; i < RC_SLOTS; i++)
        if (rc_tab[i].name && rc_tab[i].lserver == s) {
            rc_tab[i].lserver = -1;
            rc_tab[i].size = -1;
        }
    rl.srv[s].nheld = 0;
    rl.srv[s].gone = INT64_MAX; /* until it is sent */
    pthread_mutex_unlock(&rc_lock);
    gc_pending p;
    gc_NS_LET_GO_send(gc_server_conn(s), &(gp_NS_LET_GO_req){.client = client},
                      &p);
    pthread_mutex_lock(&rc_lock);
    rl.srv[s].gone = g_now_ms(); /* (requests go in order) */
    pthread_mutex_unlock(&rc_lock);
    /* an error (an older server: -ENOSYS): they run out there instead */
    gc_NS_LET_GO_recv(&p, NULL, NULL);
    pthread_mutex_lock(&rc_lock);
}

/* The renewal thread of server s: renewals held at the server (renew)
 * one after the other while leases are held there, on a control
 * connection of its own. */
static void *renewer(void *arg)
{
    int s = (int)(intptr_t)arg;
    long ms = (long)g_config_int(G_CFG_MD_RENEW_MS);
    long idle = (long)g_config_int(G_CFG_MD_IDLE_MS);
    long cap = gc_timeout_ms() / 2; /* a held renewal never times out */
    uint32_t wait = (uint32_t)(ms < cap ? ms : cap);
    uint64_t acked = 0;
    bool owe = false; /* recalls to acknowledge, even with no lease left */
    pthread_mutex_lock(&rc_lock);
    uint64_t client = rl.client;
    while (!rl.stop && (rl.srv[s].nheld || owe)) {
        if (idle && g_now_ms() - rl.srv[s].used >= idle && !open_at(s)) {
            let_go(s, client);
            break;
        }
        /* (the last leases recalled: acknowledged without waiting; an
         * error loses the acknowledgement: the leases then run out) */
        gc_conn *conn = rl.srv[s].conn;
        uint32_t w = rl.srv[s].nheld && conn ? wait : 0;
        owe = false;
        pthread_mutex_unlock(&rc_lock);
        int rc =
            renew(s, conn ? conn : gc_server_conn(s), client, &acked, w, &owe);
        pthread_mutex_lock(&rc_lock);
        if (rc && conn && rl.srv[s].conn == conn) {
            /* (reconnecting here would make a socket in the background:
             * the server's own connection until the next lease there) */
            rl.srv[s].conn = NULL;
            pthread_mutex_unlock(&rc_lock);
            gc_conn_free(conn);
            pthread_mutex_lock(&rc_lock);
        }
        if (!rl.stop && (rc || (!conn && !owe))) {
            /* the server down, a time-out, or no control connection: a
             * period on */
            struct timespec ts = g_deadline_ms(ms);
            pthread_cond_timedwait(&rc_cv, &rc_lock, &ts);
        }
    }
    rl.srv[s].running = false; /* the next lease there starts another */
    rl.nrunning--;
    pthread_cond_broadcast(&rc_cv);
    pthread_mutex_unlock(&rc_lock);
    return NULL;
}

/* Let every lease of this process go (gfs_finalize, exit): the servers
 * are told, so nobody waits for them, and answer the renewals held there
 * at once, so the renewal threads end (rc_lock held; released meanwhile). */
static void let_go_all(void)
{
    rl.stop = true;
    pthread_cond_broadcast(&rc_cv);
    uint64_t client = rl.client;
    for (int s = 0; s < rl.nserv; s++)
        if (rl.srv[s].nheld || rl.srv[s].running)
            let_go(s, client);
}

/* At exit() of a process that holds leases and did not call
 * gfs_finalize (the preload never does): let them go, so that a remove
 * by another process does not wait for them to run out. */
static void exit_let_go(void)
{
    pthread_mutex_lock(&rc_lock);
    if (rl.pid == getpid() && rl.srv && !rl.stop)
        let_go_all();
    pthread_mutex_unlock(&rc_lock);
}

/* Start server s's renewal thread unless it runs (rc_lock held). */
static void start_renewer(int s)
{
    if (rl.srv[s].running || rl.stop)
        return;
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &at, renewer, (void *)(intptr_t)s) == 0) {
        rl.srv[s].running = true;
        rl.nrunning++;
        if (!rl.atexit)
            rl.atexit = atexit(exit_let_go) == 0;
    }
    pthread_attr_destroy(&at);
}

void gc_rcache_clear(void)
{
    pthread_mutex_lock(&rc_lock);
    if (rl.pid == getpid() && rl.srv) {
        let_go_all(); /* (the renewal threads, before the connections go) */
        while (rl.nrunning)
            pthread_cond_wait(&rc_cv, &rc_lock);
    }
    rl.stop = false;
    rl.nrunning = 0;
    for (int s = 0; s < rl.nserv && rl.pid == getpid(); s++)
        gc_conn_free(rl.srv[s].conn); /* (their threads have ended) */
    for (size_t i = 0; i < RC_SLOTS; i++)
        ent_clear(&rc_tab[i]);
    for (size_t i = 0; i < RC_OPEN_SLOTS; i++)
        while (rc_opens[i]) {
            rc_open *o = rc_opens[i];
            rc_opens[i] = o->next;
            free(o);
        }
    free(rl.srv);
    rl.srv = NULL;
    rl.nserv = 0;
    pthread_mutex_unlock(&rc_lock);
}

bool gc_record_same(const gp_record *a, const gp_record *b)
{
    /* (a replicated record is never cached: never the same) */
    return a->repl.ncopy <= 1 && b->repl.ncopy <= 1 && a->nsub == b->nsub &&
           a->attrlen == b->attrlen &&
           memcmp(a->server, b->server, a->nsub * sizeof(*a->server)) == 0 &&
           memcmp(a->hid, b->hid, a->nsub * sizeof(*a->hid)) == 0 &&
           memcmp(a->attrs, b->attrs, a->attrlen) == 0;
}
