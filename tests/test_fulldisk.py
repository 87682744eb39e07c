"""A full disk: one server's data directory is a small file system (tmpfs,
ext4) filled to the last block by writes, which fail loudly (ENOSPC).
Every file whose writes were acknowledged before then still opens
read-only, reads back whole, stats and closes -- through the C API,
`galley get` and MPI-IO -- since opens, reads, stats and closes need no
free space on any server.  So do files with nothing stored on the full
server (empty ones, and a sparse one whose part there is a hole): the
server has no data file for that part, and reading it makes none.

Needs root (it mounts); the MPI-IO part needs our MPICH and is skipped
without it unless GALLEY_REQUIRE_MPI is set (mpiio-tests/mpiio_support.py).
"""

import importlib.util
import os
import subprocess

import pytest

from conftest import REPO, Cluster, _teardown, assert_helper_ok, describe

MiB = 1 << 20
ENOSPC_TEXT = "No space left on device"


def sh(*args):
    cp = subprocess.run([str(a) for a in args], stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        text=True, timeout=120)
    assert cp.returncode == 0, "%s: %s" % (" ".join(map(str, args)), cp.stdout)


def mount_small(kind, mnt, tmp):
    """Mount a small file system of `kind` on mnt."""
    if kind == "tmpfs":
        sh("mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", mnt)
    else:
        img = tmp / "disk.img"
        sh("truncate", "-s", "64M", img)
        sh("mkfs.ext4", "-q", "-F", img)
        sh("mount", "-o", "loop", img, mnt)
        os.rmdir(mnt / "lost+found")
    os.chmod(mnt, 0o700)


def umount(mnt):
    cp = subprocess.run(["umount", str(mnt)], stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if cp.returncode != 0:  # still busy: detach it, never leave it behind
        subprocess.run(["umount", "-l", str(mnt)], stdin=subprocess.DEVNULL)


class Full:
    """A cluster whose server 1 has a full disk, and the files it holds."""

    def __init__(self, c, mnt, kind, tmp):
        self.c, self.mnt, self.kind, self.tmp = c, mnt, kind, tmp
        self.files = {}  # galley name -> local copy of its bytes
        self.failures = []  # the writes that found the disk full
        self.n = 0

    def put(self, size, *layout):
        """galley put of `size` new random bytes; True when acknowledged."""
        name = "/fd/%s/f%03d" % (self.kind, self.n)
        local = self.tmp / ("f%03d" % self.n)
        self.n += 1
        local.write_bytes(os.urandom(size))
        cp = self.c.galley("put", local, name, *layout)
        if cp.returncode == 0:
            self.files[name] = local
            return True
        self.failures.append(cp)
        return False

    def create(self, *layout):
        """galley create of a new empty file: its name and local copy."""
        name = "/fd/%s/f%03d" % (self.kind, self.n)
        local = self.tmp / ("f%03d" % self.n)
        self.n += 1
        cp = self.c.galley("create", name, *layout)
        assert cp.returncode == 0, describe(cp)
        local.write_bytes(b"")
        self.files[name] = local
        return name, local

    def sparse(self, units):
        """A file over servers 0-3 in 64 KiB stripe units, `units` long,
        whose units on server 1 are holes (never written)."""
        name, local = self.create("-n", "4", "-s", "0,1,2,3", "-u", "64K")
        # over TCP: a same-host writer takes a writable descriptor of
        # every fork of the file, which makes server 1's data file too
        assert_helper_ok(self.c.helper("t_fulldisk", "sparse", name, 1,
                                       units, local,
                                       env={"GALLEY_TRANSPORT": "tcp"}))

    def fill(self, size):
        """Files of `size` bytes on server 1 alone until one fails."""
        for _ in range(200):
            if not self.put(size, "-n", "1", "-s", "1"):
                return
        pytest.fail("the disk never filled")


@pytest.fixture(scope="module", params=["tmpfs", "ext4"])
def full(request, tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    kind = request.param
    tmp = tmp_path_factory.mktemp("fulldisk-" + kind)
    mnt = tmp / "cluster" / "server1"  # server 1's data directory
    mnt.mkdir(parents=True)
    c = None
    mounted = False
    try:
        mount_small(kind, mnt, tmp)
        mounted = True
        c = Cluster(tmp / "cluster", n=4).start()
        f = Full(c, mnt, kind, tmp)
        # files striped over every server, files on server 1 alone, and
        # files whose MPI shared file pointer is not 0 (an MPI open of
        # them resets it: a change of a value, on the full disk)
        for i in range(3):
            assert f.put(MiB + 12345 * i)
            assert f.put(200000 + i, "-n", "1", "-s", "1")
        for name in list(f.files)[:2]:
            assert_helper_ok(c.helper("t_fulldisk", "setctr", name,
                                      "mpi.shared_fp", 7))
        # nothing stored on server 1: empty files (put, and one created on
        # server 1 alone and never written: no data file there) and a
        # sparse file whose stripe units there are holes (nor any file)
        assert f.put(0)
        f.create("-n", "1", "-s", "1")
        f.sparse(8)
        # then fill server 1's disk: large writes, then ever smaller ones
        for size in (2 * MiB, 64 * 1024, 4096, 100):
            f.fill(size)
        yield f
    finally:
        if c:
            _teardown(c)
        if mounted:
            umount(mnt)


def test_writes_fail_loudly(full):
    """Each write that found the disk full failed with ENOSPC, and left the
    disk full."""
    assert len(full.failures) == 4
    for cp in full.failures:
        assert cp.returncode != 0 and ENOSPC_TEXT in cp.stderr, describe(cp)
    st = os.statvfs(full.mnt)
    assert st.f_bavail * st.f_frsize < MiB
    cp = full.c.galley("put", "-", "/fd/%s/more" % full.kind, "-n", "1",
                       "-s", "1", input="x" * 100000)
    assert cp.returncode != 0 and ENOSPC_TEXT in cp.stderr, describe(cp)


@pytest.mark.parametrize("transport", ["auto", "direct", "tcp"])
def test_c_api(full, transport):
    """Also with same-host descriptors forced: one of a fork that has no
    data file on the full server is refused, and the server reads it."""
    args = []
    for name, local in full.files.items():
        args += [name, local]
    assert_helper_ok(full.c.helper("t_fulldisk", "read", *args,
                                   env={"GALLEY_TRANSPORT": transport}))
    full.c.check_alive()


def test_galley_get_and_stat(full):
    out = full.tmp / "out"
    for name, local in full.files.items():
        cp = full.c.galley("get", name, out)
        assert cp.returncode == 0, describe(cp)
        assert out.read_bytes() == local.read_bytes(), name
        cp = full.c.galley("stat", name)
        assert cp.returncode == 0, describe(cp)
        assert "size:      %d bytes" % local.stat().st_size in cp.stdout
    full.c.check_alive()


def _mpiio_support():
    spec = importlib.util.spec_from_file_location(
        "mpiio_support", REPO / "mpiio-tests" / "mpiio_support.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def test_mpiio(full, tmp_path_factory):
    ms = _mpiio_support()
    mpi = ms.our_mpich()
    prog = ms.compile_c(
        mpi.mpicc, [ms.SRC / "readback.c", ms.SRC / "mt.c"],
        ms.out_dir(tmp_path_factory, "bin") / "readback", mpi.env(),
        ["-Wall", "-Wextra"])
    lst = full.tmp / "list"
    lst.write_text("".join("galley:%s %s\n" % (n, l)
                           for n, l in full.files.items()))
    cp = mpi.run(4, [prog, "-fname", "galley:/fd/unused", "-list", lst],
                 mpi.env(full.c.cluster_file), 120)
    ms.assert_no_errors(cp)
    assert "read back %d files" % len(full.files) in cp.stdout
    full.c.check_alive()
