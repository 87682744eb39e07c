/*
 * galley_mount.h -- `galley mount [-n NSUB] [-u UNIT] [-f] DIR` (runs the
 * galley-fuse daemon) and `galley umount DIR`.
 */
#ifndef GALLEY_MOUNT_H
#define GALLEY_MOUNT_H

/* argv[0..argc-1]: the words after "mount"/"umount".  mount returns only on
 * failure (it execs the daemon, which returns once DIR is mounted); both
 * return an exit status: 0, 1 failed, 2 bad usage.  timeout_s > 0 sets the
 * daemon's GALLEY_TIMEOUT. */
int galley_mount(const char *cluster, int timeout_s, int argc, char **argv);
int galley_umount(int argc, char **argv);

#endif
