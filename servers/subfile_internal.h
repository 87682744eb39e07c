/*
 * subfile_internal.h -- private to the subfile units of galleyd:
 * subfile.c (the table, reference counts, SUB_LIST for fsck),
 * subfile_disk.c (on-disk headers, removal, start-up recovery),
 * subfile_ops.c (the SUB_* and FORK_* handlers) and counters.c
 * (FETCH_ADD / FETCH_SET).  subfile.c's opening comment explains the two
 * locks, identity and deletion; it holds for all four files.
 */
#ifndef SUBFILE_INTERNAL_H
#define SUBFILE_INTERNAL_H

#include "gsrv_internal.h"
#include "htable.h"

#include <sys/types.h>

#define SUB_MAGIC 0x42555347u /* "GSUB" */
#define CTR_MAGIC 0x52544347u /* "GCTR" */
#define HID_MAGIC 0x44494847u /* "GHID" */
#define SUB_FORMAT 1

typedef struct sub_counter {
    char *key;
    uint64_t value;
} sub_counter;

typedef struct gsrv_sub {
    gsrv_hlink hlink; /* in subtab.tab, keyed by hid */
    uint64_t hid;
    char *filename;
    uint32_t subidx;
    uint32_t
        next_fork; /* next index to hand out; GSRV_MAX_FORK_INDEX+1 = none */
    bool deleted;
    gsrv_fork **forks; /* in the table (live and marked), sorted by index */
    size_t nforks, capforks;
    sub_counter *ctr;
    size_t nctr;
} gsrv_sub;

typedef struct gsrv_subtab {
    pthread_mutex_t meta; /* serialises metadata changes (held over fsync) */
    pthread_mutex_t lock; /* the in-memory table (held briefly) */
    gsrv_htable tab;      /* gsrv_sub by hid */
    uint64_t next_hid;    /* subtab.meta */
    uint64_t hid_limit;   /* subtab.meta: DIR/next_hid; ids below are ours */
} gsrv_subtab;

/* Subfile ids are reserved on disk a block at a time (DIR/next_hid holds
 * the end of the block), so a create does not rewrite the counter: a
 * restart skips what is left of the block, and no id is ever reused. */
#define HID_BLOCK 1024

extern gsrv_subtab subtab;

/* One fork as a header image describes it. */
typedef struct hdr_fork {
    uint32_t idx;
    const char *name;
    bool deleted;
} hdr_fork;

/* paths, relative to the data directory (subfile.c) */
void sub_dir(uint64_t hid, char *out, size_t len);
void sub_file(uint64_t hid, const char *what, char *out, size_t len);
void fork_file(uint64_t hid, uint32_t idx, char *out, size_t len);
/* mkdir DIR/sub/<hid> (made with its first file); 0 if it exists. */
int sub_dir_make(uint64_t hid);
/* openat(path) of a file of subfile hid; with O_CREAT the subfile's
 * directory is made first when missing.  A descriptor or -errno. */
int sub_openat(uint64_t hid, const char *path, int flags, mode_t mode);

/* the table (subfile.c; subtab.lock held unless said otherwise) */
gsrv_sub *sub_find(uint64_t hid);
gsrv_sub *sub_find_live(uint64_t hid);
int tab_init(void);
void tab_insert(gsrv_sub *s);
void tab_remove(gsrv_sub *s);
ssize_t fork_pos(const gsrv_sub *s, uint32_t idx);
gsrv_fork *fork_by_name(const gsrv_sub *s, const char *name);
gsrv_fork *fork_new(uint64_t hid, uint32_t idx, const char *name);
void fork_free(gsrv_fork *f);
void reap(gsrv_fork *list); /* no subtab lock held */
int forks_reserve(gsrv_sub *s, size_t n);
void sub_free(gsrv_sub *s);
void fork_detach(gsrv_sub *s, size_t pos, gsrv_fork **reaplist);

/* header images, removal, recovery (subfile_disk.c; subtab.meta held) */
int image_of(const gsrv_sub *s, hdr_fork **out);
int write_header(const gsrv_sub *s, bool deleted, uint32_t next_fork,
                 const hdr_fork *v, size_t n);
int write_next_hid(uint64_t next);
int sub_destroy(gsrv_sub *s, gsrv_fork **reaplist);
int sub_collect(gsrv_sub *s, gsrv_fork **reaplist);

/* counters on disk (counters.c) */
int load_counters(gsrv_sub *s);

#endif
