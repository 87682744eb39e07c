/*
 * gsrv_meta.h -- private to galleyd (servers/): metadata: files
 * (meta.c), the metadata table (metatab.c), the log (wal.c) and the
 * NameServer (nameserver.c).
 * Included by gsrv_internal.h (after its constants and globals), never
 * on its own.
 */
#ifndef GSRV_META_H
#define GSRV_META_H

/* ------------------------------------------------------------------------
 * Metadata files (meta.c) -- all paths are relative to gsrv_g.dfd.
 * ------------------------------------------------------------------------ */

/* Replace `rel` atomically with buf[0..len): write rel.tmp, (fsync), rename,
 * (fsync the parent directory).  durable=false skips both fsyncs (the result
 * still survives a kill -9 of galleyd, not a machine crash). */
int gsrv_meta_write(const char *rel, const void *buf, size_t len, bool durable);
/* Read a whole metadata file of at most max bytes; *buf is malloc'd (free
 * it).  -ENOENT, -EFBIG, -EIO, ... */
int gsrv_meta_read(const char *rel, uint8_t **buf, size_t *len, size_t max);
/* fsync a directory (relative path, "." for the data directory). */
int gsrv_meta_sync_dir(const char *rel);
/* Unlink; 0 if it did not exist. */
int gsrv_meta_unlink(const char *rel);
/* True for names ending in ".tmp" (leftovers of an interrupted write). */
bool gsrv_meta_is_tmp(const char *name);
/* Parse a decimal u64 that makes up the whole of s[0..n) (n == 0: all of s);
 * false if s is not such a number. */
bool gsrv_parse_u64(const char *s, size_t n, uint64_t *out);

/*
 * The start-up recovery scan of one metadata directory (the NameServer's
 * ns/, the subfiles' sub/ and each sub/HID/).  For every entry of sc->dir
 * whose name does not start with '.': a temp file (gsrv_meta_is_tmp) is
 * unlinked when sc->remove_tmp; a name "<n><suffix>" (n in canonical
 * decimal, gsrv_parse_u64) goes to sc->numbered; any other name to
 * sc->other.  Callbacks get the directory's descriptor for unlinkat and
 * return 0 to go on; anything else stops the scan and is returned.
 * Returns 0, a callback's stop value, or -errno when the directory cannot
 * be opened.  Main thread, at start-up.
 */
typedef struct gsrv_scan gsrv_scan;
struct gsrv_scan {
    const char *dir;    /* relative to the data directory */
    const char *suffix; /* of numbered names; "" for bare numbers */
    bool remove_tmp;
    int (*numbered)(gsrv_scan *sc, int dfd, const char *name, uint64_t n);
    int (*other)(gsrv_scan *sc, int dfd, const char *name);
    void *arg; /* the caller's */
};
int gsrv_meta_scan(gsrv_scan *sc);
/* mkdir / rmdir of a metadata directory (logged like the files). */
int gsrv_meta_mkdir(const char *rel);
int gsrv_meta_rmdir(const char *rel);
/* fsync a directory now, whatever the log holds (FORK_SYNC: a data
 * file's entry). */
int gsrv_dir_fsync(const char *rel);
/* Replace rel durably (fsync'd file and directory), never logged: the
 * metadata table's own file (metatab.c). */
int gsrv_meta_replace(const char *rel, const void *buf, size_t len);

/* ---------------------------------------------------------- metatab.c -- */

/* The metadata table (metatab.c states the scheme): NameServer records
 * and subfile headers as values named by the path they had as files.
 * put/del are logged like the files of meta.c (the handler waits). */
int gsrv_tab_load(void); /* DIR/meta.tab, before the log is replayed */
int gsrv_tab_put(const char *key, const void *val, size_t len);
void gsrv_tab_del(const char *key);
/* A copy of key's value (*val malloc'd): 0, -ENOENT or -ENOMEM. */
int gsrv_tab_get(const char *key, uint8_t **val, size_t *len);
bool gsrv_tab_has(const char *key);
/* fn(key, arg) for every key that starts with prefix, in key order, over
 * a copy of the keys (fn may change the table); stops at fn's first
 * non-zero return, which is returned. */
int gsrv_tab_each(const char *prefix, int (*fn)(const char *key, void *arg),
                  void *arg);
/* Start-up: the value of metadata file `path` (a data directory written
 * before the table), under the key `path`; the file is unlinked once a
 * table that holds it is saved. */
int gsrv_tab_import(const char *path);
/* Write DIR/meta.tab (durable); then unlink the files imported. */
int gsrv_tab_save(void);
bool gsrv_tab_dirty(void); /* changed since the last save, while not logging */
uint64_t gsrv_tab_bytes(void);
void gsrv_tab_fini(void);

/* ------------------------------------------------------------- wal.c -- */

/* The metadata log (group commit; wal.c states the scheme).  meta.c logs
 * every durable change; the handler waits before it replies. */
enum {
    GSRV_WAL_PUT = 1,
    GSRV_WAL_DEL,
    GSRV_WAL_MKDIR,
    GSRV_WAL_RMDIR,
    GSRV_WAL_TPUT, /* a metadata table value (metatab.c) */
    GSRV_WAL_TDEL
};
/* Replay DIR/wal into the data directory and empty it (before the
 * start-up scans); then log from gsrv_wal_start on. */
int gsrv_wal_replay(void);
int gsrv_wal_start(void);
/* Make everything logged durable, empty the log, stop logging. */
void gsrv_wal_close(void);
bool gsrv_wal_on(void);
/* Append a change already made in the file system (owner's lock held). */
void gsrv_wal_log(int op, const char *path, const void *data, size_t len);
/* Wait until every change this thread logged may be answered: written to
 * the log (kill -9 safe), or with --commit synced durable: 0 or an error. */
int gsrv_wal_wait(void);
/* Make every change logged so far durable (LOG_SYNC, FORK_SYNC): 0 or an
 * error; *records and *commits (may be NULL): the log's counts after it. */
int gsrv_wal_sync(uint64_t *records, uint64_t *commits);

/* ------------------------------------------------------------------------
 * NameServer (nameserver.c)
 * ------------------------------------------------------------------------ */
int gsrv_ns_init(void); /* load DIR/ns */
/* DIR/dsid: this data directory's id, made on first use (repl.c). */
int gsrv_repl_init(void);
void gsrv_ns_fini(void);
void gsrv_ns_drop_conn(uint64_t conn_id); /* release its reservations */
uint64_t gsrv_ns_count(void);

#endif /* GSRV_META_H */
