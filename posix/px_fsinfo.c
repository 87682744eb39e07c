/*
 * px_fsinfo.c -- see px_fsinfo.h.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "galley.h"
#include "px_fsinfo.h"

void px_cluster_statvfs(struct statvfs *sv)
{
    memset(sv, 0, sizeof(*sv));
    uint64_t total = 0, avail = 0, files = 0;
    for (int i = 0; i < gfs_num_servers(); i++) {
        gfs_server_stat st;
        if (gfs_stat_server(i, &st) == 0) {
            total += st.bytes_total;
            avail += st.bytes_free;
            files += st.nrecords;
        }
    }
    sv->f_bsize = sv->f_frsize = 4096;
    sv->f_blocks = total / 4096;
    sv->f_bfree = sv->f_bavail = avail / 4096;
    sv->f_files = files;
    sv->f_fsid = PX_FS_MAGIC;
    sv->f_namemax = GFS_NAME_MAX;
}

int px_plock_getlk(int sid, gfs_plock *lk, struct flock *fl)
{
    int rc = gfs_striped_plock_test(sid, lk, 0);
    if (rc)
        return rc;
    if (lk->type == GFS_PLOCK_UNLOCK) {
        fl->l_type = F_UNLCK;
        return 0;
    }
    fl->l_type = lk->type == GFS_PLOCK_EXCL ? F_WRLCK : F_RDLCK;
    fl->l_whence = SEEK_SET;
    fl->l_start = lk->start;
    fl->l_len = lk->len;
    fl->l_pid = lk->pid;
    return 0;
}

/* Is the process in group gid (its own or a supplementary one)? */
static bool in_group(gid_t gid)
{
    if (gid == getegid())
        return true;
    gid_t groups[256];
    int n = getgroups(256, groups);
    for (int i = 0; i < n; i++)
        if (groups[i] == gid)
            return true;
    return false;
}

int px_mode_permits(unsigned mode, int64_t uid, int64_t gid, int amode)
{
    if (geteuid() == 0) /* (CAP_DAC_OVERRIDE) */
        return !(amode & X_OK) || S_ISDIR(mode) || (mode & 0111) ? 0 : -EACCES;
    unsigned need = ((amode & R_OK) ? S_IROTH : 0) |
                    ((amode & W_OK) ? S_IWOTH : 0) |
                    ((amode & X_OK) ? S_IXOTH : 0);
    int shift = uid < 0 || (uid_t)uid == geteuid() ? 6
                : gid >= 0 && in_group((gid_t)gid) ? 3
                                                   : 0;
    return ((mode >> shift) & need) == need ? 0 : -EACCES;
}
