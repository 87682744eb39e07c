/*
 * sfio.c -- the SFIO interface over striped files (see galley_sfio.h).
 *
 * mread/mwrite walk the stripe fragments one request at a time, the
 * unoptimised path of the paper; everything else goes through
 * gc_striped_listio (fragments sorted and merged per server, one transfer
 * per server).  Like every layer inside libgalley it calls the internal
 * gc_* entry points, never the public gfs_* API.  Error statistics are per
 * server and kind; a failure of an optimised call counts against the servers
 * that do not answer.
 *
 * Threads: any.  err_lock guards the statistics.
 */
#include "galley_sfio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "layout.h"

struct MFILE {
    int sid;
    gfs_layout lay;
    int servers[GFS_MAX_SUBFILES];
};

static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long err_stats[GFS_MAX_SERVERS][MERR_NKINDS];
static __thread int last_error;

static void count_error(int server, int kind, int rc)
{
    last_error = rc;
    /* argument errors never reached a server: nothing to count there */
    if (server < 0 || server >= GFS_MAX_SERVERS || rc == -EINVAL ||
        rc == GFS_EBADID)
        return;
    pthread_mutex_lock(&err_lock);
    err_stats[server][kind]++;
    pthread_mutex_unlock(&err_lock);
}

/*
 * An optimised call spans every server of the file and reports one error:
 * it is counted against the servers that do not answer now, or, if all
 * answer (a disk error, say), against all of them.
 */
static void count_file_error(const MFILE *f, int kind, int rc)
{
    if (!f || rc == -EINVAL || rc == GFS_EBADID) {
        last_error = rc;
        return;
    }
    int counted = 0;
    for (int i = 0; i < f->lay.nsubfiles; i++)
        if (gc_ping(f->servers[i]) != 0) {
            count_error(f->servers[i], kind, rc);
            counted++;
        }
    for (int i = 0; i < f->lay.nsubfiles && !counted; i++)
        count_error(f->servers[i], kind, rc);
}

int mlasterror(void)
{
    return last_error;
}

void merror(unsigned long *ioerr)
{
    int n = gc_num_servers();
    pthread_mutex_lock(&err_lock);
    for (int s = 0; s < n && ioerr; s++)
        for (int k = 0; k < MERR_NKINDS; k++)
            ioerr[s * MERR_NKINDS + k] = err_stats[s][k];
    memset(err_stats, 0, sizeof(err_stats));
    pthread_mutex_unlock(&err_lock);
}

/* ------------------------------------------------------------ files ---- */

int mcreate(const char *name)
{
    int n = gc_num_servers();
    int rc = n < 0 ? n
                   : gc_create_striped(name, n, NULL, 0, NULL, 1,
                                       GFS_DEFAULT_MODE, NULL);
    if (rc)
        count_error(n > 0 ? gc_meta_server(name) : -1, MERR_CREAT, rc);
    return rc;
}

MFILE *mopen(const char *name, int stripe_unit)
{
    int n = gc_num_servers();
    int rc = n;
    MFILE *f = NULL;
    if (n < 0)
        goto out_err;
    rc = gc_create_striped(name, n, NULL, stripe_unit, NULL, 1,
                           GFS_DEFAULT_MODE, NULL);
    if (rc && rc != -EEXIST)
        goto out_err;
    f = calloc(1, sizeof(*f));
    if (!f) {
        rc = -ENOMEM;
        goto out_err;
    }
    f->sid = gc_striped_open(name);
    if (f->sid < 0) {
        rc = f->sid;
        goto out_free;
    }
    gc_striped_layout(f->sid, &f->lay);
    int fid = gc_file_open(name);
    gc_file *file = malloc(sizeof(*file)); /* a record: large */
    rc = fid < 0 ? fid : !file ? -ENOMEM : gc_file_get(fid, file);
    if (fid >= 0)
        gc_file_close(fid);
    for (uint32_t i = 0; !rc && i < file->rec.nsub; i++)
        f->servers[i] = (int)file->rec.server[i];
    free(file);
    if (rc)
        goto out_close;
    return f;

out_close:
    gc_striped_close(f->sid);
out_free:
    free(f);
out_err:
    count_error(n > 0 ? gc_meta_server(name) : -1, MERR_OPEN, rc);
    return NULL;
}

int mclose(MFILE *f)
{
    if (!f)
        return -EINVAL;
    int rc = gc_striped_close(f->sid);
    if (rc)
        count_file_error(f, MERR_CLOSE, rc);
    free(f);
    return rc;
}

int mchsize(MFILE *f, long size)
{
    if (!f)
        return -EINVAL;
    int rc = gc_striped_truncate(f->sid, size);
    if (rc)
        count_file_error(f, MERR_FTRUNCATE, rc);
    return rc;
}

int mdelete(const char *name)
{
    int rc = gc_file_delete(name);
    if (rc)
        count_error(gc_num_servers() > 0 ? gc_meta_server(name) : -1,
                    MERR_UNLINK, rc);
    return rc;
}

/* --------------------------------------------------- unoptimised path -- */

/* One request per stripe fragment, in logical order. */
static long fragment_rw(MFILE *f, int op, long offset, char *buf, unsigned size)
{
    if (!f || offset < 0 || (size && !buf))
        return -EINVAL;
    unsigned ns = (unsigned)f->lay.nsubfiles;
    uint64_t unit = (uint64_t)f->lay.unit;
    uint64_t x = (uint64_t)offset, left = size;
    bool short_read = false;
    while (left > 0) {
        uint64_t ufoff, len;
        int sub = (int)gp_locate(unit, ns, x, &ufoff, &len);
        if (len > left)
            len = left;
        int64_t foff = (int64_t)ufoff;
        int kid = gc_striped_kid(f->sid, sub);
        int64_t k = gc_fork_rw(kid, op, foff, buf, (int64_t)len);
        if (k < 0) {
            count_error(f->servers[sub],
                        op == GFS_READ ? MERR_READ : MERR_WRITE, (int)k);
            return (long)k;
        }
        if ((uint64_t)k < len)
            short_read = true;
        x += len;
        buf += len;
        left -= len;
    }
    if (!short_read)
        return (long)size;
    int64_t eof = gc_striped_size(f->sid);
    if (eof < 0)
        return (long)eof;
    if (eof <= offset)
        return 0;
    return eof - offset < (int64_t)size ? (long)(eof - offset) : (long)size;
}

long mread(MFILE *f, long offset, char *buffer, unsigned size)
{
    return fragment_rw(f, GFS_READ, offset, buffer, size);
}

long mwrite(MFILE *f, long offset, const char *buffer, unsigned size)
{
    return fragment_rw(f, GFS_WRITE, offset, (char *)buffer, size);
}

/* ----------------------------------------------------- optimised path -- */

long mreadc(MFILE *f, long offset, char *buffer, unsigned size)
{
    if (!f)
        return -EINVAL;
    gfs_list_entry e = {offset, 0, size};
    int64_t k = gc_striped_listio(f->sid, GFS_READ, 1, &e, buffer);
    if (k < 0)
        count_file_error(f, MERR_READ, (int)k);
    return (long)k;
}

long mwritec(MFILE *f, long offset, const char *buffer, unsigned size)
{
    if (!f)
        return -EINVAL;
    gfs_list_entry e = {offset, 0, size};
    int64_t k = gc_striped_listio(f->sid, GFS_WRITE, 1, &e, (char *)buffer);
    if (k < 0)
        count_file_error(f, MERR_WRITE, (int)k);
    return (long)k;
}

/* Blocks at separate buffers: memory offsets relative to the lowest. */
static long blocks_rw(MFILE *f, int op, unsigned n, const long offsets[],
                      char *const buffers[], const unsigned sizes[])
{
    if (!f || (n && (!offsets || !buffers || !sizes)))
        return -EINVAL;
    gfs_list_entry *e = malloc(sizeof(*e) * (n ? n : 1));
    if (!e)
        return -ENOMEM;
    char *base = NULL;
    for (unsigned i = 0; i < n; i++)
        if (buffers[i] && (!base || buffers[i] < base))
            base = buffers[i];
    for (unsigned i = 0; i < n; i++)
        e[i] = (gfs_list_entry){offsets[i], buffers[i] ? buffers[i] - base : 0,
                                sizes[i]};
    int64_t k = gc_striped_listio(f->sid, op, n, e, base);
    free(e);
    if (k < 0)
        count_file_error(f, op == GFS_READ ? MERR_READ : MERR_WRITE, (int)k);
    return (long)k;
}

long mreadb(MFILE *f, unsigned n, const long offsets[], char *buffers[],
            const unsigned sizes[])
{
    return blocks_rw(f, GFS_READ, n, offsets, buffers, sizes);
}

long mwriteb(MFILE *f, unsigned n, const long offsets[], char *const buffers[],
             const unsigned sizes[])
{
    return blocks_rw(f, GFS_WRITE, n, offsets, buffers, sizes);
}
