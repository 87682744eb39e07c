/*
 * px_inherit.c -- a Galley descriptor's placeholder, and descriptors
 * inherited across exec() (see galley_posix.c).
 *
 * The number a Galley file holds is an O_PATH descriptor, so every data
 * call the kernel sees on it (one this library does not serve) fails with
 * EBADF.  It is the descriptor of a symbolic link, made and at once
 * removed in a directory of this machine (/dev/shm, else $TMPDIR, else
 * /tmp), whose target names the file: "galley-px:FLAGS:NAME" (FLAGS the
 * access mode and O_APPEND, in hex).  The link is gone, but the
 * descriptor still reads its target (readlinkat with an empty path).  So
 * a program a shell starts with a Galley file as its stdout (`cmd > F`,
 * `cmd >> F`, `cmd < F`) finds the file when it starts under the preload
 * (px_adopt_inherited, a constructor) and opens it again at its first
 * use; its std streams are ours at once (px_std_attach).  The offset does
 * not go along: an inherited descriptor starts at 0 to read, and at the
 * file's end to write (O_APPEND kept), so `{ echo a; cmd; } > F` keeps
 * "a"; the shell's own offset does not move by what cmd wrote.  A
 * name too long for a link's target, a directory, or no such directory:
 * an O_PATH descriptor of /dev/null, which a program after exec cannot
 * use (EBADF).
 *
 * Threads: any; px_adopt_inherited runs before main().
 */
#define _GNU_SOURCE
#include "px_internal.h"

#include <sys/syscall.h>

#define PX_CARRIER "galley-px:"
#define PX_LINK ".galley-px."

static pthread_once_t px_dir_once = PTHREAD_ONCE_INIT;
static char px_dir[PATH_MAX]; /* where the links are made; "" none */
static unsigned long px_seq;

static void px_pick_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    const char *cand[] = {"/dev/shm", tmp && *tmp == '/' ? tmp : NULL, "/tmp"};
    for (size_t i = 0; i < sizeof(cand) / sizeof(cand[0]); i++)
        if (cand[i] && strlen(cand[i]) < sizeof(px_dir) - 64 &&
            REAL(access)(cand[i], W_OK | X_OK) == 0) {
            snprintf(px_dir, sizeof(px_dir), "%s", cand[i]);
            return;
        }
}

int px_placeholder(const char *name, int flags)
{
    int cloexec = flags & O_CLOEXEC;
    if (name) {
        pthread_once(&px_dir_once, px_pick_dir);
        char target[GFS_NAME_MAX + 32], link[PATH_MAX + 64];
        int n = snprintf(target, sizeof(target), PX_CARRIER "%x:%s",
                         (unsigned)(flags & (O_ACCMODE | O_APPEND)), name);
        if (*px_dir && n > 0 && n < (int)sizeof(target)) {
            snprintf(link, sizeof(link), "%s/" PX_LINK "%d.%lu", px_dir,
                     (int)getpid(),
                     __atomic_add_fetch(&px_seq, 1, __ATOMIC_RELAXED));
            if (symlink(target, link) == 0) {
                int fd = REAL(open)(link, O_PATH | O_NOFOLLOW | cloexec);
                REAL(unlink)(link);
                if (fd >= 0)
                    return fd;
            }
        }
    }
    return REAL(open)("/dev/null", O_PATH | cloexec);
}

/* fd, if it is a placeholder this process inherited, becomes its file
 * again (opened at its first use, as a put-off open). */
static void px_adopt(int fd)
{
    char target[GFS_NAME_MAX + 32];
    long n = syscall(SYS_readlinkat, fd, "", target, sizeof(target) - 1);
    if (n <= (long)strlen(PX_CARRIER))
        return; /* not a link's descriptor, or not ours */
    target[n] = '\0';
    if (strncmp(target, PX_CARRIER, strlen(PX_CARRIER)) != 0)
        return;
    char *end;
    unsigned long flags = strtoul(target + strlen(PX_CARRIER), &end, 16);
    if (*end != ':' || !end[1] || strlen(end + 1) > GFS_NAME_MAX)
        return;
    px_file *f = calloc(1, sizeof(*f));
    if (!f)
        return; /* (its calls fail with EBADF) */
    f->sid = -1;
    f->flags = (int)flags & (O_ACCMODE | O_APPEND);
    f->off_end = (f->flags & O_ACCMODE) == O_WRONLY;
    snprintf(f->name, sizeof(f->name), "%s", end + 1);
    px_file_init(f);
    px_install(fd, f);
}

int px_off(px_file *f, int64_t *off)
{
    if (__atomic_load_n(&f->off_end, __ATOMIC_ACQUIRE)) {
        int64_t size = gfs_striped_size(px_sid(f));
        if (size < 0)
            return (int)size;
        f->off = size;
        __atomic_store_n(&f->off_end, false, __ATOMIC_RELEASE);
    }
    *off = f->off;
    return 0;
}

/* Before main(): every descriptor this process inherited that names a
 * Galley file is adopted.  Raw system calls: nothing of libc's that this
 * library interposes is needed yet. */
__attribute__((constructor)) static void px_adopt_inherited(void)
{
    int dfd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/fd",
                           O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return;
    int fds[256], nfd = 0;
    char buf[4096];
    long n;
    while (nfd < 256 &&
           (n = syscall(SYS_getdents64, dfd, buf, sizeof(buf))) > 0) {
        for (long off = 0; off < n && nfd < 256;) {
            struct {
                uint64_t ino;
                int64_t off;
                unsigned short reclen;
                unsigned char type;
                char name[];
            } *d = (void *)(buf + off);
            off += d->reclen;
            if (d->name[0] >= '0' && d->name[0] <= '9') {
                int fd = atoi(d->name);
                if (fd != dfd && fd < PX_NFD)
                    fds[nfd++] = fd;
            }
        }
    }
    syscall(SYS_close, dfd);
    for (int i = 0; i < nfd; i++)
        px_adopt(fds[i]);
}
