"""Shared mmap on a `galley mount --cache` and its coherence rule
(docs/posix.md): bytes stored through a shared map are on the servers
after msync (and after close), other clients' writes show after a reopen,
and a granted fcntl lock drops the cached pages of an open file.  A
mount without --cache (direct I/O) refuses mmap with ENODEV.

Skipped when the build has no galley-fuse or the machine has no /dev/fuse.
"""

import errno
import fcntl
import mmap
import os

import pytest

from conftest import Mount, fuse_ok, galley_exec, gt, mounted

describe = gt.describe

pytestmark = pytest.mark.skipif(not fuse_ok(),
                                reason="no galley-fuse or /dev/fuse")

UNIT = 64 * 1024
SIZE = 3 * UNIT + 123  # several stripes, a partial page at the end


@pytest.fixture
def mnt(cluster, tmp_path):
    m = Mount(cluster, tmp_path / "mnt", args=("--cache",))
    yield m
    if mounted(m.dir):
        m.umount()


def galley_bytes(cluster, name, tmp_path):
    got = tmp_path / "got"
    cluster.galley("get", name, got, check=True)
    return got.read_bytes()


def test_shared_mmap_write_msync_read_back(cluster, mnt, uniq, tmp_path):
    name = "/%s/m.bin" % uniq
    (mnt.dir / uniq).mkdir(parents=True)
    path = mnt.dir / uniq / "m.bin"
    data = bytearray(os.urandom(SIZE))
    path.write_bytes(bytes(data))
    fd = os.open(path, os.O_RDWR)
    try:
        m = mmap.mmap(fd, SIZE, mmap.MAP_SHARED,
                      mmap.PROT_READ | mmap.PROT_WRITE)
        assert m[:] == bytes(data)
        # across a stripe boundary, inside a page, the last partial page
        for off, n in ((UNIT - 100, 300), (5000, 10), (SIZE - 50, 50)):
            patch = os.urandom(n)
            m[off:off + n] = patch
            data[off:off + n] = patch
        m.flush()  # msync(MS_SYNC)
        # on the servers now: another client reads the new bytes
        assert galley_bytes(cluster, name, tmp_path) == bytes(data)
        assert os.pread(fd, SIZE, 0) == bytes(data)
        # a store right before munmap and close: close writes it
        m[7] = (data[7] + 1) % 256
        data[7] = m[7]
        m.close()
    finally:
        os.close(fd)
    assert path.read_bytes() == bytes(data)
    assert galley_bytes(cluster, name, tmp_path) == bytes(data)
    cp = galley_exec(cluster, "cmp", "galley:" + name, tmp_path / "got")
    assert cp.returncode == 0, describe(cp)


def test_other_clients_write_seen_by_new_map(cluster, mnt, uniq, tmp_path):
    name = "/%s/o.bin" % uniq
    (mnt.dir / uniq).mkdir(parents=True)
    path = mnt.dir / uniq / "o.bin"
    first = os.urandom(SIZE)
    path.write_bytes(first)
    with open(path, "rb") as f:  # the pages are cached now
        m = mmap.mmap(f.fileno(), SIZE, mmap.MAP_SHARED, mmap.PROT_READ)
        assert m[:] == first
        m.close()
    # another client rewrites the file, longer
    second = os.urandom(SIZE + 5000)
    src = tmp_path / "src"
    src.write_bytes(second)
    cluster.galley("put", "-f", src, name, check=True)
    with open(path, "rb") as f:  # reopen: the new bytes and size
        assert os.fstat(f.fileno()).st_size == len(second)
        m = mmap.mmap(f.fileno(), len(second), mmap.MAP_SHARED,
                      mmap.PROT_READ)
        assert m[:] == second
        m.close()


def test_lock_drops_cached_pages(cluster, mnt, uniq, tmp_path):
    name = "/%s/l.bin" % uniq
    (mnt.dir / uniq).mkdir(parents=True)
    path = mnt.dir / uniq / "l.bin"
    first = os.urandom(2 * UNIT)
    path.write_bytes(first)
    with open(path, "r+b") as f:
        assert os.pread(f.fileno(), len(first), 0) == first  # cached
        # another client writes in place (the preload, straight to Galley)
        patch = tmp_path / "patch"
        patch.write_bytes(b"P" * 1000)
        cp = galley_exec(cluster, "dd", "if=%s" % patch,
                         "of=galley:" + name, "bs=1000", "seek=3",
                         "conv=notrunc", "status=none")
        assert cp.returncode == 0, describe(cp)
        want = first[:3000] + b"P" * 1000 + first[4000:]
        fcntl.lockf(f, fcntl.LOCK_SH)
        assert os.pread(f.fileno(), len(want), 0) == want
        m = mmap.mmap(f.fileno(), len(want), mmap.MAP_SHARED, mmap.PROT_READ)
        assert m[:] == want
        m.close()
        fcntl.lockf(f, fcntl.LOCK_UN)


def test_default_mount_refuses_mmap(cluster, uniq, tmp_path):
    m = Mount(cluster, tmp_path / "plain")
    try:
        (m.dir / uniq).mkdir(parents=True)
        path = m.dir / uniq / "d.bin"
        path.write_bytes(b"x" * 8192)
        with open(path, "r+b") as f:
            with pytest.raises(OSError) as e:
                mmap.mmap(f.fileno(), 8192, mmap.MAP_SHARED)
            assert e.value.errno == errno.ENODEV
            assert f.read() == b"x" * 8192
    finally:
        m.umount()
