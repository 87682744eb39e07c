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
import time

import pytest

from conftest import Mount, daemon_pid, fuse_ok, galley_exec, gt, mounted

describe = gt.describe


@pytest.fixture
def mnt(cluster, tmp_path):
    m = Mount(cluster, tmp_path / "mnt")
    yield m
    if mounted(m.dir):
        m.umount()


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
    assert names == ["/%s/c.bin" % uniq, "/%s/moved/b.bin" % uniq], names
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
    assert cluster.galley("ls", "/" + uniq, check=True).stdout == ""


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
