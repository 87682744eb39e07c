"""Owners, directory modes and special files on `galley mount`, as a
multi-user file system keeps them: `--all-users` serves every user; a
new file, directory, FIFO, device node or symbolic link is its creator's;
chown and a directory's chmod are kept on the servers (a remount and the
preload see them); the kernel refuses what the modes and owners do not
allow; a FIFO made on the mount is a pipe between processes; rename keeps
owner and type.

Needs root (a mount that other users reach, and processes of other uids);
skipped when the build has no galley-fuse or the machine has no /dev/fuse.
"""

import errno
import os
import pickle
import stat
import time

import pytest

from conftest import Mount, fuse_ok, galley_exec, gt, mounted, oserr

ALL = ("--all-users",)

describe = gt.describe

pytestmark = [
    pytest.mark.skipif(not fuse_ok(), reason="no galley-fuse or /dev/fuse"),
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root"),
]


def as_user(uid, gid, fn, where):
    """fn() in a child process of uid and gid (no other groups), in
    directory `where` (entered by descriptor: the test's own directories
    are root's alone); its return, or the errno it raised as ("errno", N)."""
    fd = os.open(where, os.O_RDONLY | os.O_DIRECTORY)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.fchdir(fd)  # (as root: a mount's own user may enter)
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            try:
                out = fn()
            except OSError as e:
                out = ("errno", e.errno)
            os.write(w, pickle.dumps(out))
        finally:
            os._exit(0)
    os.close(w)
    os.close(fd)
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return pickle.loads(data)



@pytest.fixture
def amnt(cluster, tmp_path):
    """A mount that serves every user of the host."""
    m = Mount(cluster, tmp_path / "mnt", ALL)
    yield m
    if mounted(m.dir):
        m.umount()


def owner(p):
    s = os.lstat(p)
    return s.st_uid, s.st_gid


def test_new_names_are_their_creators_and_chown_is_kept(cluster, tmp_path, uniq):
    def make():
        with open("f", "w") as f:
            f.write("mine\n")
        os.mkdir("sub", 0o750)
        os.mkfifo("fifo", 0o600)
        os.symlink("f", "link")
        return [owner(n) for n in ("f", "sub", "fifo", "link")]

    m = Mount(cluster, tmp_path / "m1", ALL)
    try:
        d = m.dir / uniq
        d.mkdir(parents=True)
        os.chmod(d, 0o777)
        assert as_user(65534, 65533, make, d) == [(65534, 65533)] * 4
        os.chown(d / "f", 123, 456)
        os.chown(d / "sub", 321, -1)
        os.lchown(d / "link", 7, 8)
        os.chmod(d / "sub", 0o711)
    finally:
        m.umount()
    # on the servers: a new mount and the preload see the same
    m = Mount(cluster, tmp_path / "m2", ALL)
    try:
        d = m.dir / uniq
        assert owner(d / "f") == (123, 456)
        assert owner(d / "sub") == (321, 65533)
        assert stat.S_IMODE(os.stat(d / "sub").st_mode) == 0o711
        assert stat.S_ISDIR(os.stat(d / "sub").st_mode)
        assert owner(d / "link") == (7, 8) and owner(d / "fifo") == (65534, 65533)
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o777
        cp = galley_exec(cluster, "stat", "-c", "%n %u %g %F %a",
                         *("galley:/%s/%s" % (uniq, n) for n in ("f", "sub", "fifo")))
        assert cp.returncode == 0, describe(cp)
        assert [line.split()[1:] for line in cp.stdout.splitlines()] == [
            ["123", "456", "regular", "file", "644"],
            ["321", "65533", "directory", "711"],
            ["65534", "65533", "fifo", "600"]], describe(cp)
    finally:
        m.umount()


def test_the_kernel_enforces_modes_and_owners(cluster, amnt, uniq):
    d = amnt.dir / uniq
    d.mkdir(parents=True)
    os.chmod(d, 0o755)  # root's: others may look, not write
    (d / "open").mkdir(mode=0o777)
    os.chmod(d / "open", 0o777)
    (d / "closed").mkdir()
    os.chmod(d / "closed", 0o700)
    (d / "closed" / "x").write_text("secret")
    (d / "ro").write_text("read only\n")  # 0644 less the umask, root's
    os.chmod(d / "ro", 0o644)
    (d / "group").write_text("group\n")
    os.chown(d / "group", 0, 4242)
    os.chmod(d / "group", 0o660)

    def other():
        return [oserr(os.open, "new", os.O_CREAT | os.O_WRONLY, 0o644),
                oserr(os.listdir, "closed"),
                oserr(os.stat, "closed/x"),
                oserr(os.open, "ro", os.O_WRONLY),
                open("ro").read(),
                oserr(os.open, "group", os.O_RDONLY),
                oserr(os.chmod, "ro", 0o666),
                oserr(os.chown, "open", 65534, 65534),
                oserr(os.mkdir, "open/mine"),
                oserr(os.unlink, "ro")]

    assert as_user(65534, 65534, other, d) == [
        errno.EACCES, errno.EACCES, errno.EACCES, errno.EACCES, "read only\n",
        errno.EACCES, errno.EPERM, errno.EPERM, 0, errno.EACCES]

    def in_group():
        with open("group") as f:
            return f.read()

    assert as_user(65534, 4242, in_group, d) == "group\n"
    assert owner(d / "open" / "mine") == (65534, 65534)
    # the owner of a directory may chmod it; it is kept
    assert as_user(65534, 65534, lambda: os.chmod("open/mine", 0o700), d) is None
    assert stat.S_IMODE(os.stat(d / "open" / "mine").st_mode) == 0o700


def test_a_mount_without_all_users_serves_only_its_user(cluster, mnt, uniq):
    d = mnt.dir / uniq
    d.mkdir(parents=True)
    os.chmod(d, 0o777)
    (d / "f").write_text("x")
    os.chmod(d / "f", 0o666)
    assert as_user(65534, 65534, lambda: [oserr(os.stat, "f"),
                                          oserr(os.listdir, ".")], d) == \
        [errno.EACCES, errno.EACCES]


def test_fifo_and_device_nodes(cluster, mnt, uniq):
    d = mnt.dir / uniq
    d.mkdir(parents=True)
    os.mkfifo(d / "p", 0o640)
    os.mknod(d / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    os.mknod(d / "blk", stat.S_IFBLK | 0o600, os.makedev(7, 9))
    assert stat.S_ISFIFO(os.stat(d / "p").st_mode)
    assert stat.S_IMODE(os.stat(d / "p").st_mode) == 0o640
    s = os.stat(d / "null")
    assert stat.S_ISCHR(s.st_mode) and os.major(s.st_rdev) == 1 and os.minor(s.st_rdev) == 3
    s = os.stat(d / "blk")
    assert stat.S_ISBLK(s.st_mode) and s.st_rdev == os.makedev(7, 9)
    assert sorted(os.listdir(d)) == ["blk", "null", "p"]
    # the FIFO is a pipe: the kernel serves it, no bytes go to Galley
    pid = os.fork()
    if pid == 0:
        try:
            with open(d / "p", "wb") as f:
                f.write(b"through the fifo\n" * 1000)
        finally:
            os._exit(0)
    with open(d / "p", "rb") as f:
        got = f.read()
    os.waitpid(pid, 0)
    assert got == b"through the fifo\n" * 1000
    assert os.stat(d / "p").st_size == 0
    # a device node is kept, not served: the mount is nodev, as FUSE's are
    assert oserr(open, d / "null", "wb") == errno.EACCES
    # the preload shows it and does not open it (no kernel pipe there)
    cp = galley_exec(cluster, "sh", "-c", 'stat -c %F "$1"; cat "$1"; echo "cat $?"',
                     "sh", "galley:/%s/p" % uniq)
    assert cp.stdout == "fifo\ncat 1\n", describe(cp)
    assert "No such device or address" in cp.stderr, describe(cp)
    # rename keeps type, device and owner; unlink removes
    os.chown(d / "null", 11, 12)
    os.rename(d / "null", d / "null2")
    s = os.stat(d / "null2")
    assert stat.S_ISCHR(s.st_mode) and s.st_rdev == os.makedev(1, 3)
    assert (s.st_uid, s.st_gid) == (11, 12)
    assert oserr(os.stat, d / "null") == errno.ENOENT
    for n in ("p", "null2", "blk"):
        os.unlink(d / n)
    assert os.listdir(d) == []
    assert oserr(os.mknod, d / "p", stat.S_IFIFO | 0o600) == 0
    assert oserr(os.mknod, d / "p", stat.S_IFIFO | 0o600) == errno.EEXIST


def test_preload_chown_follows_posix(cluster, uniq):
    """Through the preload: root gives a file and a directory any owner
    (kept: stat shows it), and the change shows to other processes."""
    g = "galley:/%s" % uniq
    cp = galley_exec(cluster, "sh", "-c",
                     'echo a > %s/f && mkdir %s/d && chown 5:6 %s/f && '
                     'chown 7:8 %s/d && chmod 701 %s/d && '
                     'stat -c "%%u %%g %%a" %s/f %s/d' % ((g,) * 7))
    assert cp.returncode == 0, describe(cp)
    assert cp.stdout.split("\n") == ["5 6 644", "7 8 701", ""], describe(cp)
    cp = galley_exec(cluster, "stat", "-c", "%u %g %a %F", g + "/d")
    assert cp.stdout == "7 8 701 directory\n", describe(cp)


def test_times_of_new_names_and_of_changes(cluster, mnt, uniq):
    """A new file, directory or FIFO shows the time it was made (not the
    mount's start); chmod and chown move its change time and not its
    modification time; a write moves both."""
    d = mnt.dir / uniq
    d.mkdir(parents=True)
    time.sleep(1.1)  # past the mount's start, which shows where none is kept
    made = time.time_ns()
    os.close(os.open(d / "f", os.O_CREAT | os.O_WRONLY, 0o644))
    os.mkdir(d / "sub")
    os.mkfifo(d / "p")
    for n in ("f", "sub", "p"):
        s = os.stat(d / n)
        assert made - 2 * 10**9 < s.st_mtime_ns < made + 2 * 10**9, n
        assert s.st_ctime_ns >= s.st_mtime_ns, n
    for n in ("f", "sub", "p"):
        before = os.stat(d / n)
        time.sleep(0.05)
        os.chmod(d / n, 0o600)
        mid = os.stat(d / n)
        assert mid.st_mtime_ns == before.st_mtime_ns, n
        assert mid.st_ctime_ns > before.st_ctime_ns, n
        time.sleep(0.05)
        os.chown(d / n, 5, 6)
        after = os.stat(d / n)
        assert after.st_mtime_ns == before.st_mtime_ns, n
        assert after.st_ctime_ns > mid.st_ctime_ns, n
    time.sleep(0.05)
    before = os.stat(d / "f")
    with open(d / "f", "w") as f:
        f.write("data")
    after = os.stat(d / "f")
    assert after.st_mtime_ns > before.st_mtime_ns
    assert after.st_ctime_ns >= after.st_mtime_ns
    # the preload's fstat of an open file shows the same owner and times
    cp = galley_exec(cluster, "python3", "-c",
                     "import os, sys; s = os.fstat(os.open(sys.argv[1], os.O_RDONLY)); "
                     "print(s.st_uid, s.st_gid, s.st_mtime_ns, s.st_ctime_ns)",
                     "galley:/%s/f" % uniq)
    assert cp.stdout.split() == [str(v) for v in (5, 6, after.st_mtime_ns,
                                                  after.st_ctime_ns)], describe(cp)


def test_link_targets_up_to_path_max(cluster, mnt, uniq):
    """A symbolic link's target may have up to 4095 bytes, as on a local
    file system (one over 1023 is kept as the link's bytes): the mount
    and the preload read it back whole, a rename keeps it, and 4096 bytes
    answer ENAMETOOLONG."""
    d = mnt.dir / uniq
    d.mkdir(parents=True)
    for n in (1023, 1024, 3000, 4095):
        target = ("xxxxxxxxx/" * 410)[:n - 1] + "z"
        os.symlink(target, d / ("l%d" % n))
        assert os.readlink(d / ("l%d" % n)) == target, n
        assert os.lstat(d / ("l%d" % n)).st_size == n, n
    assert oserr(os.symlink, "y" * 4096, d / "l4096") == errno.ENAMETOOLONG
    os.rename(d / "l3000", d / "moved")
    assert os.readlink(d / "moved") == ("xxxxxxxxx/" * 410)[:2999] + "z"
    cp = galley_exec(cluster, "readlink", "galley:/%s/l4095" % uniq)
    assert cp.stdout == ("xxxxxxxxx/" * 410)[:4094] + "z\n", describe(cp)
    assert sorted(os.listdir(d)) == ["l1023", "l1024", "l4095", "moved"]


def test_access_and_directory_times_set_are_kept(cluster, mnt, uniq):
    """utime on a mount keeps a file's and a directory's access and
    modification times (a later mount shows them); through the preload
    too; a write moves the modification time again, not the access
    time set."""
    d = mnt.dir / uniq
    (d / "sub").mkdir(parents=True)
    (d / "f").write_text("x")
    a, m = 1_600_000_000_123_456_789, 1_500_000_000_987_654_321
    for n in ("f", "sub"):
        os.utime(d / n, ns=(a, m))
        s = os.stat(d / n)
        assert (s.st_atime_ns, s.st_mtime_ns) == (a, m), n
        assert s.st_ctime_ns > m, n
    cp = galley_exec(cluster, "sh", "-c",
                     'python3 -c "import os, sys; os.utime(sys.argv[1], '
                     '(1700000000, os.stat(sys.argv[1]).st_mtime))" "$1/sub" && '
                     'stat -c "%X %Y" "$1/sub" "$1/f"',
                     "sh", "galley:/%s" % uniq)
    assert cp.stdout.split("\n") == [
        "1700000000 %d" % (m // 10**9), "%d %d" % (a // 10**9, m // 10**9), ""], \
        describe(cp)
    with open(d / "f", "a") as f:
        f.write("y")
    s = os.stat(d / "f")
    assert s.st_atime_ns == a and s.st_mtime_ns > m
