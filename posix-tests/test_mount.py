"""`galley mount DIR` (galley-fuse, libfuse3) against real servers: ordinary
tools on DIR move the same bytes as the CLI and the preload library; plain
files show as subfile<i>/<fork> directories; a killed daemon leaves
ENOTCONN and `galley umount` cleans it up; a dead server gives EIO.

Skipped when the build has no galley-fuse (configure without libfuse3) or
the machine has no /dev/fuse.
"""

import errno
import os
import signal
import stat
import subprocess
import time

import pytest

from conftest import Mount, daemon_pid, fuse_ok, galley_exec, gt, mounted, oserr

describe = gt.describe


def test_bytes_through_the_mount(cluster, mnt, uniq, tmp_path):
    d = mnt.dir / uniq
    with pytest.raises(FileNotFoundError):
        (d / "x").write_bytes(b"no parent")
    d.mkdir(parents=True)
    data = os.urandom(5 * 1024 * 1024 + 777)
    (d / "a.bin").write_bytes(data)
    got = tmp_path / "got"
    cluster.galley("get", "/%s/a.bin" % uniq, got, check=True)
    assert got.read_bytes() == data
    assert (d / "a.bin").stat().st_size == len(data)

    src = tmp_path / "src"
    src.write_bytes(data[::-1])
    cluster.galley("put", src, "/%s/sub/b.bin" % uniq, check=True)
    assert (d / "sub" / "b.bin").read_bytes() == data[::-1]
    assert sorted(os.listdir(d)) == ["a.bin", "sub"]
    assert (d / "sub").is_dir() and (d / "a.bin").is_file()

    # partial overwrite, truncate, fsync, append
    with open(d / "a.bin", "r+b") as f:
        f.seek(1000)
        f.write(b"Z" * 10)
        f.flush()
        os.fsync(f.fileno())
    want = data[:1000] + b"Z" * 10 + data[1010:]
    os.truncate(d / "a.bin", 4000000)
    want = want[:4000000]
    with open(d / "a.bin", "ab") as f:
        f.write(b"end")
    want += b"end"
    cluster.galley("get", "/%s/a.bin" % uniq, got, check=True)
    assert got.read_bytes() == want
    # the preload library sees the same bytes through galley: names
    cp = galley_exec(cluster, "cmp", "galley:/%s/a.bin" % uniq, got)
    assert cp.returncode == 0, describe(cp)

    # rename a file and a directory; unlink; mkdir/rmdir
    os.rename(d / "a.bin", d / "c.bin")
    assert (d / "c.bin").read_bytes() == want and not (d / "a.bin").exists()
    os.rename(d / "sub", d / "moved")
    assert (d / "moved" / "b.bin").read_bytes() == data[::-1]
    names = cluster.galley("ls", "/" + uniq, check=True).stdout.split()
    assert names == ["/%s/" % uniq, "/%s/c.bin" % uniq,
                     "/%s/moved/b.bin" % uniq], names  # d's marker first
    os.mkdir(d / "empty")
    assert (d / "empty").is_dir() and "empty" in os.listdir(d)
    with pytest.raises(OSError) as e:
        os.rmdir(d / "moved")
    assert e.value.errno == errno.ENOTEMPTY
    os.unlink(d / "moved" / "b.bin")
    assert os.listdir(d / "moved") == []
    os.rmdir(d / "moved")
    os.rmdir(d / "empty")
    os.unlink(d / "c.bin")
    with pytest.raises(FileNotFoundError):
        os.stat(d / "c.bin")
    # d itself, made with mkdir, stays: its marker
    assert cluster.galley("ls", "/" + uniq, check=True).stdout == \
        "/%s/\n" % uniq


def test_file_times_through_the_mount(mnt, uniq):
    """A file's modification time on the mount is its data's: written
    now, it shows now; written again later, it moves on."""
    d = mnt.dir / uniq
    d.mkdir(parents=True)
    t0 = time.time()
    (d / "t").write_bytes(b"first")
    m1 = (d / "t").stat().st_mtime
    assert t0 - 1 <= m1 <= time.time() + 1, (t0, m1)
    time.sleep(0.3)
    with open(d / "t", "ab") as f:
        f.write(b"again")
    m2 = (d / "t").stat().st_mtime
    assert m2 - m1 >= 0.2, (m1, m2)


def test_modes_through_the_mount(mnt, uniq, tmp_path):
    """A file's permission bits on the mount: a new file's are its
    create's, chmod sets them, a script made executable runs from the
    mount, one that is not does not, and `galley exec` sees the same."""
    d = mnt.dir / uniq
    d.mkdir(parents=True)
    s = d / "s"
    s.write_text("#!/bin/sh\necho ran \"$0\"\n")
    assert stat.S_IMODE(s.stat().st_mode) == 0o644 & ~_umask()
    with pytest.raises(PermissionError):
        subprocess.run([str(s)], timeout=30)
    os.chmod(s, 0o750)
    assert stat.S_IMODE(s.stat().st_mode) == 0o750
    out = subprocess.run([str(s)], capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 0 and out.stdout == "ran %s\n" % s, out
    fd = os.open(d / "p", os.O_CREAT | os.O_WRONLY, 0o600)
    os.close(fd)
    assert stat.S_IMODE((d / "p").stat().st_mode) == 0o600 & ~_umask()
    cp = galley_exec(mnt.c, "stat", "-c", "%a", d / "s", d / "p")
    assert cp.stdout.split() == ["750", "600"], describe(cp)


def test_times_through_the_mount(mnt, uniq, tmp_path):
    """A file's modification time on the mount: utime sets it (in ns),
    `galley stat` and `galley exec` see it, a rename keeps it, and a
    write afterwards makes the data's time show."""
    d = mnt.dir / uniq
    d.mkdir(parents=True)
    f = d / "f"
    f.write_bytes(b"x" * 100)
    t = 1234567890123456789
    os.utime(f, ns=(t, t))
    assert f.stat().st_mtime_ns == t
    st = mnt.c.galley("stat", "/%s/f" % uniq)
    assert "modified:  2009-02-13 23:31:30.123456789 UTC" in st.stdout, \
        describe(st)
    os.rename(f, d / "g")
    assert (d / "g").stat().st_mtime_ns == t
    cp = galley_exec(mnt.c, "stat", "-c", "%Y", d / "g")
    assert cp.stdout.split() == ["1234567890"], describe(cp)
    with open(d / "g", "r+b") as h:
        h.write(b"y")
    assert (d / "g").stat().st_mtime_ns > t
    os.utime(d / "g", ns=(5, 6))  # a directory's: accepted, not kept
    os.utime(d, ns=(t, t))


def test_symlinks_through_the_mount(mnt, uniq, tmp_path):
    """Symbolic links on the mount: ln -s makes one (relative or absolute,
    to a Galley file, a directory or a local file), readlink and lstat
    show it, the kernel follows it for reads and writes, mv moves it, rm
    removes the link and not its target, and a dangling one answers
    ENOENT; as on a local directory."""
    out = {}
    for side, d in (("local", tmp_path / "local"), ("mount", mnt.dir / uniq)):
        d.mkdir(parents=True)
        (d / "sub").mkdir()
        (d / "sub" / "f").write_bytes(b"target bytes\n")
        local = tmp_path / ("outside-" + side)
        local.write_text("outside\n")
        os.symlink("sub/f", d / "rel")
        os.symlink(str(d / "sub"), d / "dir")
        os.symlink(str(local), d / "out")
        os.symlink("nowhere", d / "dangling")
        with open(d / "rel", "ab") as f:
            f.write(b"more\n")
        os.rename(d / "rel", d / "moved")
        r = [os.readlink(d / "moved"), os.readlink(d / "dir") == str(d / "sub"),
             stat.S_ISLNK(os.lstat(d / "moved").st_mode),
             os.lstat(d / "moved").st_size, os.stat(d / "moved").st_size,
             (d / "moved").read_bytes(), (d / "dir" / "f").read_bytes(),
             (d / "out").read_text(), os.path.exists(d / "dangling"),
             os.path.lexists(d / "dangling"), sorted(os.listdir(d))]
        with pytest.raises(FileExistsError):
            os.symlink("x", d / "moved")
        os.unlink(d / "moved")
        r += [os.path.exists(d / "sub" / "f"), os.path.lexists(d / "moved")]
        out[side] = r
    assert out["mount"] == out["local"], out
    assert out["local"][5] == b"target bytes\nmore\n", out


def _umask():
    m = os.umask(0)
    os.umask(m)
    return m


def test_plain_file_as_directory(cluster, mnt, uniq, tmp_path):
    name = "/%s/plain" % uniq
    cluster.galley("create", name, "-n", "2", "-p", check=True)
    src = tmp_path / "fork"
    src.write_bytes(b"fork bytes " * 1000)
    cluster.galley("fork", "write", name, "1", "meta", src, check=True)
    p = mnt.dir / uniq / "plain"
    assert p.is_dir()
    assert sorted(os.listdir(p)) == ["subfile0", "subfile1"]
    assert os.listdir(p / "subfile1") == ["meta"]
    assert (p / "subfile1" / "meta").read_bytes() == src.read_bytes()
    assert (p / "subfile1" / "meta").stat().st_size == 11000
    with pytest.raises(PermissionError):
        open(p / "subfile1" / "meta", "r+b")
    cluster.galley("rm", name, check=True)


def test_killed_daemon_enotconn_and_umount(cluster, tmp_path, uniq):
    m = Mount(cluster, tmp_path / "mnt")
    (m.dir / uniq).mkdir(parents=True)
    (m.dir / uniq / "f").write_bytes(b"still here")
    pid = daemon_pid(m.dir)
    assert pid, "galley-fuse not found"
    os.kill(pid, signal.SIGKILL)
    for _ in range(100):
        if not os.path.exists("/proc/%d" % pid):
            break
        time.sleep(0.05)
    with pytest.raises(OSError) as e:
        os.stat(m.dir / uniq / "f")
    assert e.value.errno == errno.ENOTCONN
    # the preload library goes to Galley directly for paths under the mount
    cp = galley_exec(cluster, "cat", m.dir / uniq / "f")
    assert cp.returncode == 0 and cp.stdout == "still here", describe(cp)
    m.umount()
    assert not mounted(m.dir)
    m = Mount(cluster, m.dir)  # mounts again at the same place
    assert (m.dir / uniq / "f").read_bytes() == b"still here"
    m.umount()


def test_dead_server_eio(make_cluster, tmp_path):
    c = make_cluster(n=2)
    m = Mount(c, tmp_path / "mnt", args=())
    try:
        (m.dir / "d").mkdir()
        (m.dir / "d" / "f").write_bytes(os.urandom(1 << 20))
        c.kill(1)
        t0 = time.monotonic()
        with pytest.raises(OSError) as e:
            (m.dir / "d" / "f").read_bytes()
        assert e.value.errno == errno.EIO
        assert time.monotonic() - t0 < 30
    finally:
        m.umount()


def test_bad_cluster_fails_mount(tmp_path):
    d = tmp_path / "mnt"
    d.mkdir()
    cp = gt.run([gt.galley_path(), "-c", tmp_path / "none", "mount", d],
                env=gt.base_env())
    assert cp.returncode != 0 and "cluster" in cp.stderr and \
        not mounted(d), describe(cp)



def test_rename_moves_empty_directories(cluster, mnt, uniq):
    """rename of a directory moves its empty subdirectories, nested ones
    too, with its files; the old name is gone and the parent stays."""
    d = mnt.dir / uniq
    (d / "d1" / "e").mkdir(parents=True)
    (d / "d1" / "g" / "h" / "i").mkdir(parents=True)
    (d / "d1" / "g" / "f.txt").write_bytes(b"in g")
    os.rename(d / "d1", d / "d1r")
    assert (d / "d1r" / "e").is_dir() and os.listdir(d / "d1r" / "e") == []
    assert sorted(os.listdir(d / "d1r")) == ["e", "g"]
    assert sorted(os.listdir(d / "d1r" / "g")) == ["f.txt", "h"]
    assert os.listdir(d / "d1r" / "g" / "h") == ["i"]
    assert (d / "d1r" / "g" / "f.txt").read_bytes() == b"in g"
    assert oserr(os.stat, d / "d1") == errno.ENOENT
    assert oserr(os.stat, d / "d1" / "e") == errno.ENOENT
    assert os.listdir(d) == ["d1r"]
    names = cluster.galley("ls", "/" + uniq, check=True).stdout.split()
    assert names == ["/%s/%s" % (uniq, n) for n in (
        "", "d1r/", "d1r/e/", "d1r/g/", "d1r/g/f.txt", "d1r/g/h/",
        "d1r/g/h/i/")], names  # the markers moved, at every depth
    # a tree of empty directories only, moved under another directory
    (d / "x" / "y" / "z").mkdir(parents=True)
    os.rename(d / "x", d / "d1r" / "e" / "x2")
    assert (d / "d1r" / "e" / "x2" / "y" / "z").is_dir()
    assert sorted(os.listdir(d)) == ["d1r"]
    # the tree comes apart bottom up, and only so
    for p in ("d1r/e/x2/y/z", "d1r/e/x2/y", "d1r/e/x2", "d1r/e",
              "d1r/g/h/i", "d1r/g/h"):
        os.rmdir(d / p)
    os.unlink(d / "d1r" / "g" / "f.txt")
    os.rmdir(d / "d1r" / "g")
    os.rmdir(d / "d1r")
    assert os.listdir(d) == []


def test_directory_holding_empty_directory_is_not_empty(mnt, uniq):
    """rmdir and rename over a directory whose only entry is an empty
    subdirectory fail with ENOTEMPTY and change nothing."""
    d = mnt.dir / uniq
    (d / "p" / "e").mkdir(parents=True)
    (d / "q").mkdir()
    assert oserr(os.rmdir, d / "p") == errno.ENOTEMPTY
    assert oserr(os.rename, d / "q", d / "p") == errno.ENOTEMPTY
    assert sorted(os.listdir(d)) == ["p", "q"] and os.listdir(d / "p") == ["e"]
    (d / "p" / "e" / "deeper").mkdir()
    assert oserr(os.rmdir, d / "p" / "e") == errno.ENOTEMPTY
    assert oserr(os.rename, d / "q", d / "p" / "e") == errno.ENOTEMPTY
    assert oserr(os.rmdir, d / "p") == errno.ENOTEMPTY
    os.rmdir(d / "p" / "e" / "deeper")
    os.rmdir(d / "p" / "e")
    assert os.listdir(d / "p") == []
    os.rename(d / "q", d / "p")  # over an empty directory: allowed
    assert os.listdir(d) == ["p"] and os.listdir(d / "p") == []


def test_name_limits(cluster, mnt, uniq):
    """A component over 255 bytes answers ENAMETOOLONG to every call;
    Galley names are at most 255 bytes in all (the mount path, leading
    '/' included): exactly that works, one more is ENAMETOOLONG too, so
    nothing is created that a later call cannot find."""
    d = mnt.dir / uniq
    d.mkdir(parents=True)
    (d / "f").write_bytes(b"f")
    (d / "sub").mkdir()
    assert os.statvfs(d).f_namemax == 255

    def all_fail(p):
        assert oserr(os.mkdir, p) == errno.ENAMETOOLONG
        assert oserr(os.open, p, os.O_CREAT | os.O_WRONLY) == \
            errno.ENAMETOOLONG
        assert oserr(os.open, p, os.O_RDONLY) == errno.ENAMETOOLONG
        assert oserr(os.stat, p) == errno.ENAMETOOLONG
        assert oserr(os.unlink, p) == errno.ENAMETOOLONG
        assert oserr(os.rmdir, p) == errno.ENAMETOOLONG
        assert oserr(os.rename, d / "f", p) == errno.ENAMETOOLONG
        assert oserr(os.rename, d / "sub", p) == errno.ENAMETOOLONG
        assert oserr(os.rename, p, d / "g") == errno.ENAMETOOLONG

    all_fail(d / ("c" * 256))  # a component over NAME_MAX
    all_fail(mnt.dir / ("c" * 256))
    base = "/%s/" % uniq  # the Galley name of d, plus '/'
    fit = "n" * (255 - len(base))
    all_fail(d / (fit + "x"))  # 256 bytes in all, components shorter
    all_fail(mnt.dir / ("r" * 255))  # "/" + 255: one over
    # exactly 255 bytes in all: a file works
    (d / fit).write_bytes(b"longest")
    assert (d / fit).read_bytes() == b"longest"
    assert (d / fit).stat().st_size == 7 and fit in os.listdir(d)
    names = cluster.galley("ls", "/" + uniq, check=True).stdout.split()
    assert base + fit in names, names
    os.unlink(d / fit)
    # a directory made with mkdir: its marker (name + "/") must fit too
    assert oserr(os.mkdir, d / fit) == errno.ENAMETOOLONG
    assert oserr(os.stat, d / fit) == errno.ENOENT
    os.mkdir(d / fit[:-1])
    assert (d / fit[:-1]).is_dir()
    os.rmdir(d / fit[:-1])
    assert oserr(os.stat, d / fit[:-1]) == errno.ENOENT
    # a directory rename that would make a name too long moves nothing
    short = "s" * (255 - len(base) - 2)
    (d / "t").mkdir()
    (d / "t" / short).write_bytes(b"kept")  # 255 bytes in all
    assert oserr(os.rename, d / "t", d / "tt") == errno.ENAMETOOLONG
    assert (d / "t" / short).read_bytes() == b"kept"
    assert oserr(os.stat, d / "tt") == errno.ENOENT
    (d / "u" / short[:-1]).mkdir(parents=True)  # its marker at the limit
    assert oserr(os.rename, d / "u", d / "uu") == errno.ENAMETOOLONG
    assert (d / "u" / short[:-1]).is_dir() and not (d / "uu").exists()
