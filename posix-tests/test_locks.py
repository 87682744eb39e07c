"""Locks through `galley exec`, and a site's own MPI on Galley through it.

  * t_locks: the same sequence of fcntl / OFD / lockf / flock calls by two
    processes on a local file (libc: the kernel's locks) and on a galley:
    file under the preload (the servers' locks) gives the same transcript,
    line for line -- including the release of a process's locks when it
    closes another descriptor of the file, F_SETLKW waiting for an unlock,
    and the release when the holder is killed.
  * Debian's own MPICH (mpicc.mpich / mpiexec.mpich, not our build: ROMIO's
    ufs driver, data sieving under fcntl locks) under `galley exec -m`:
    ROMIO's own test programs, as runtests runs them, so far as they apply,
    and mpi_records (independent strided writes of interleaved records
    with 2 and 4 ranks), its file then compared byte for byte through
    `galley get`.  Without working locks noncontig finds about 1800 wrong
    bytes and mpi_records with 4 ranks about 50000.

Environment: GALLEY_BUILD; ROMIO's test sources as mpiio-tests finds them
(GALLEY_ROMIO_TESTDIR, else the MPICH build tree); /usr/bin/mpicc.mpich
(libmpich-dev).  Without them the MPI cases are skipped (failed with
GALLEY_REQUIRE_MPI=1).
"""

import difflib
import os
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, _load, galley_exec, gt, helper

describe = gt.describe

# The lines that show the locks are real (a preload that takes no lock
# prints 0 where these say EAGAIN / EACCES, or UNLCK).
MUST = [
    "C setlk W 50 10: EAGAIN",
    "C getlk W 0 0: W start=0 len=100 whence=0 pid=parent",
    "C getlk W 45 10: W start=50 len=50 whence=0 pid=parent",
    "C getlk W 300 10 (before close): W start=305 len=10 whence=0 pid=parent",
    "C getlk W 0 0 (after close): UNLCK",
    "P ofd setlk o2 W 5 10: EAGAIN",
    "C getlk W 0 0 (o1 closed, dup open): W start=0 len=10 whence=0 pid=-1",
    "P flock f2 EX|NB: EAGAIN",
    "C lockf F_TEST 10: EACCES",
    "P setlkw W 0 10: 0 waited>=0.2s: 1",
    "P setlk W 0 1 (held): EAGAIN",
    "P setlk W 0 1 (holder dead): 0",
]


def test_locks_as_libc(cluster, uniq, tmp_path):
    """Same calls, same results: the kernel's locks on a local file and the
    servers' locks on a galley: file (and a local file under the preload,
    which must pass straight to libc)."""
    t = helper("t_locks")
    libc = gt.run([t, tmp_path / "local"], env=gt.base_env(), timeout=120)
    assert libc.returncode == 0, describe(libc)
    for line in MUST:
        assert line in libc.stdout.splitlines(), (line, libc.stdout)
    ours = galley_exec(cluster, t, "galley:/%s/locks" % uniq, timeout=120)
    assert ours.returncode == 0, describe(ours)
    assert ours.stdout.splitlines() == libc.stdout.splitlines(), \
        "\n".join(difflib.unified_diff(
            libc.stdout.splitlines(), ours.stdout.splitlines(), "libc",
            "galley", lineterm=""))
    local = galley_exec(cluster, t, tmp_path / "local2", timeout=120)
    assert local.returncode == 0, describe(local)
    assert local.stdout == libc.stdout


def test_locks_through_mapped_names(cluster, uniq, tmp_path):
    """A path mapped with -m reaches the same server locks (both processes
    of t_locks name the file by its local path), and nothing appears in
    the local directory."""
    d = tmp_path / "mapped"
    d.mkdir()
    cp = galley_exec(cluster, helper("t_locks"), d / "m",
                     mounts=["%s=/%s" % (d, uniq)], timeout=120)
    assert cp.returncode == 0, describe(cp)
    for line in MUST:
        assert line in cp.stdout.splitlines(), (line, cp.stdout)
    assert list(d.iterdir()) == [], "the mapped name reached the local fs"
    cluster.galley("stat", "/%s/m" % uniq, check=True)


# ------------------------------------------------ Debian's MPICH, unmodified

SYS_MPICC = "/usr/bin/mpicc.mpich"
SYS_MPIEXEC = "/usr/bin/mpiexec.mpich"

# ROMIO's runtests list (mpiio-tests/test_romio_suite.py): name, processes,
# argument style.  All of them apply to a POSIX file reached through the
# preload.
ROMIO = [
    ("simple", 4, "fname"), ("async", 4, "fname"),
    ("async-multiple", 4, "fname"), ("atomicity", 4, "fname"),
    ("coll_test", 4, "fname"), ("excl", 4, "fname"),
    ("file_info", 4, "fname"), ("i_noncontig", 2, "fname"),
    ("noncontig", 2, "fname"), ("noncontig_coll", 2, "fname"),
    ("noncontig_coll2", 4, "fname"), ("aggregation1", 4, "agg1"),
    ("aggregation2", 4, "plain"), ("hindexed", 4, "plain"),
    ("misc", 4, "fname"), ("shared_fp", 4, "fname"),
    ("ordered_fp", 4, "fname"), ("split_coll", 4, "fname"),
    ("psimple", 4, "fname"), ("error", 1, "fname"), ("status", 1, "fname"),
    ("types_with_zeros", 2, "plain"), ("darray_read", 4, "plain"),
]


def _require(msg):
    if os.environ.get("GALLEY_REQUIRE_MPI"):
        pytest.fail(msg + " (GALLEY_REQUIRE_MPI is set)", pytrace=False)
    pytest.skip(msg)


def _outdir(sub):
    d = gt.BUILD / "posix-tests" / sub
    d.mkdir(parents=True, exist_ok=True)
    return d


def _compile(sources, out, extra=()):
    out = Path(out)
    if out.exists() and all(out.stat().st_mtime >= Path(s).stat().st_mtime
                            for s in sources):
        return out
    cp = gt.run([SYS_MPICC, "-O1", "-o", out] + list(sources) + list(extra),
                timeout=300)
    if cp.returncode != 0:
        pytest.fail("compiling %s with %s failed:\n%s" % (out.name, SYS_MPICC,
                                                           describe(cp)),
                    pytrace=False)
    return out


@pytest.fixture(scope="module")
def sysmpi():
    if not (os.access(SYS_MPICC, os.X_OK) and os.access(SYS_MPIEXEC,
                                                         os.X_OK)):
        _require("Debian's MPICH (apt-get install libmpich-dev mpich) is "
                 "not installed")
    return SYS_MPICC


@pytest.fixture(scope="module")
def romio_bins(sysmpi):
    ms = _load("mpiio_support", REPO / "mpiio-tests" / "mpiio_support.py")
    src = ms.romio_testdir()
    if src is None or not (src / "noncontig.c").exists():
        _require("ROMIO's test sources not found (%s); they come with the "
                 "MPICH build tree of mpich/build-mpich.sh" % src)
    d = _outdir("romio-sysmpich")
    return {name: _compile([src / (name + ".c")], d / name, ["-I%s" % src])
            for name, _, _ in ROMIO if (src / (name + ".c")).exists()}


def _mpi_under_exec(cluster, localdir, gdir, np, argv, timeout=300):
    """mpiexec.mpich -n np argv... under `galley exec -m localdir=gdir`.
    The local directory exists (ROMIO asks statfs of a new file's
    directory which file system it is) and stays empty."""
    return galley_exec(cluster, SYS_MPIEXEC, "-n", np, *argv,
                       mounts=["%s=%s" % (localdir, gdir)], timeout=timeout)


@pytest.fixture
def mapdir(tmp_path):
    d = tmp_path / "sysmpi"
    d.mkdir()
    yield d
    assert list(d.iterdir()) == [], "files reached the local directory"


@pytest.mark.parametrize("name,np,style", ROMIO, ids=[t[0] for t in ROMIO])
def test_romio_debian_mpich(cluster, romio_bins, mapdir, uniq, name, np,
                            style):
    """ROMIO's test on Galley through `galley exec`, with Debian's MPICH
    (ufs driver: data sieving and atomic mode under fcntl locks, the
    shared file pointer in a locked hidden file, MPI_File_iwrite through
    POSIX AIO)."""
    if name not in romio_bins:
        pytest.fail("%s.c is missing from ROMIO's tests" % name,
                    pytrace=False)
    f = str(mapdir / name)
    argv = {"fname": ["-fname", f], "plain": [f],
            "agg1": ["-h", "-f", f]}[style]
    cp = _mpi_under_exec(cluster, mapdir, "/" + uniq, np,
                         [romio_bins[name]] + argv)
    ok = cp.returncode == 0 and any(l.strip() == "No Errors"
                                    for l in (cp.stdout + cp.stderr).split("\n"))
    assert ok, describe(cp)


@pytest.fixture(scope="module")
def records(sysmpi):
    return _compile([REPO / "posix-tests" / "helpers" / "mpi_records.c"],
                    _outdir("sysmpich") / "mpi_records")


def _expected_records(nrec, rec):
    return bytes(((k * 7 + i) & 0xff) for k in range(nrec) for i in range(rec))


@pytest.mark.parametrize("np", [2, 4])
@pytest.mark.parametrize("rec", [16, 100])
def test_strided_independent_writes(cluster, records, mapdir, uniq, np, rec,
                                    tmp_path):
    """Interleaved records by independent MPI_File_write through a vector
    view (ROMIO: read-modify-write of windows under F_SETLKW): the file
    holds every rank's records, checked by the program and again byte for
    byte through `galley get`."""
    rounds = 8
    cp = _mpi_under_exec(cluster, mapdir, "/" + uniq, np,
                         [records, mapdir / "rec", rec, rounds])
    assert cp.returncode == 0 and "No Errors" in cp.stdout, describe(cp)
    out = tmp_path / "got"
    cluster.galley("get", "/%s/rec" % uniq, out, check=True)
    want = _expected_records(64 * rounds * np, rec)
    got = out.read_bytes()
    assert len(got) == len(want)
    bad = sum(1 for a, b in zip(got, want) if a != b)
    assert bad == 0, "%d wrong bytes" % bad


# ------------------------------------------------------- through mounts

# Where a mount cannot answer as the kernel does for a local file (libfuse
# and the kernel's FUSE client, not Galley): the kernel does not tell a
# FUSE daemon that a lock is an OFD lock, so F_GETLK through a mount names
# the pid that took it instead of -1 ...
FUSE_OFD_PID = ("P getlk o2 (process):", "C getlk W 0 0:",
                "C getlk W 0 0 (o2 closed):",
                "C getlk W 0 0 (o1 closed, dup open):")
# ... and libfuse's high-level API keeps its own table of the locks it
# granted, which it consults for F_GETLK before asking us and which
# forgets an OFD lock only when that owner unlocks: after the last close of
# the file it still reports the lock there (F_SETLK is granted: the
# servers released it).  Seen only when both processes use one mount.
FUSE_SAME_MOUNT = ("C getlk W 0 0 (all closed):",)


def _as_on_fuse(libc_lines, same_mount):
    out = []
    for l in libc_lines:
        if same_mount and l.startswith(FUSE_SAME_MOUNT):
            continue
        if l.startswith(FUSE_OFD_PID):
            l = l.replace("pid=-1", "pid=parent")
        out.append(l)
    return out


@pytest.fixture
def mounts(cluster, tmp_path):
    from conftest import Mount, fuse_ok, mounted
    if not fuse_ok():
        pytest.skip("no galley-fuse in the build or no /dev/fuse")
    made = []

    def make(name):
        m = Mount(cluster, tmp_path / name)
        made.append(m)
        return m

    yield make
    for m in made:
        if mounted(m.dir):
            m.umount()


@pytest.mark.parametrize("two", [False, True], ids=["one-mount",
                                                     "two-mounts"])
def test_locks_through_mounts(cluster, mounts, uniq, tmp_path, two):
    """t_locks on a mount (both processes through one daemon) and across
    two mounts of the cluster (two daemons: two hosts' worth of
    connections): the transcript of libc on a local file, but for the
    FUSE differences above."""
    t = helper("t_locks")
    libc = gt.run([t, tmp_path / "local"], env=gt.base_env(), timeout=120)
    assert libc.returncode == 0, describe(libc)
    a = mounts("a")
    (a.dir / uniq).mkdir(parents=True)
    paths = [a.dir / uniq / "l"]
    if two:
        paths.append(mounts("b").dir / uniq / "l")
    cp = gt.run([t] + paths, env=gt.base_env(), timeout=120)
    assert cp.returncode == 0, describe(cp)
    got = cp.stdout.splitlines()
    if not two:
        got = [l for l in got if not l.startswith(FUSE_SAME_MOUNT)]
    want = _as_on_fuse(libc.stdout.splitlines(), not two)
    assert got == want, "\n".join(difflib.unified_diff(want, got, "libc",
                                                       "mount",
                                                       lineterm=""))


@pytest.mark.parametrize("rec", [16, 100])
def test_records_through_two_mounts(cluster, records, mounts, uniq, rec,
                                    tmp_path):
    """Debian's MPICH, ranks 0-1 writing through one mount and ranks 2-3
    through another (kernel-local locks would not exclude each other):
    every record arrives, checked through `galley get`."""
    a, b = mounts("a"), mounts("b")
    (a.dir / uniq).mkdir(parents=True)
    # an empty directory made on one mount is that daemon's alone: a file
    # in it makes it the servers' (and the other mount's)
    (a.dir / uniq / "rec").write_bytes(b"")
    rounds = 8
    argv = [SYS_MPIEXEC, "-n", "2", records, a.dir / uniq / "rec", rec,
            rounds, ":", "-n", "2", records, b.dir / uniq / "rec", rec,
            rounds]
    cp = gt.run(argv, env=gt.base_env(), timeout=300)
    assert cp.returncode == 0 and "No Errors" in cp.stdout, describe(cp)
    out = tmp_path / "got"
    cluster.galley("get", "/%s/rec" % uniq, out, check=True)
    assert out.read_bytes() == _expected_records(64 * rounds * 4, rec)


# -------------------------------- Open MPI through its ROMIO component

OMPI_MPICC = "/usr/bin/mpicc.openmpi"
OMPI_MPIRUN = "/usr/bin/mpirun.openmpi"
OMPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1",
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_rmaps_base_oversubscribe": "1",
            "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


@pytest.mark.parametrize("np", [2, 4])
def test_records_open_mpi_romio(cluster, mapdir, uniq, np, tmp_path):
    """Debian's Open MPI with its ROMIO component (--mca io romio321: the
    same ufs driver, data sieving under fcntl locks) under `galley exec`:
    interleaved records by independent strided writes, byte-checked."""
    if not (os.access(OMPI_MPICC, os.X_OK) and os.access(OMPI_MPIRUN,
                                                         os.X_OK)):
        _require("Debian's Open MPI (libopenmpi-dev) is not installed")
    prog = _outdir("openmpi") / "mpi_records"
    src = REPO / "posix-tests" / "helpers" / "mpi_records.c"
    if not (prog.exists() and prog.stat().st_mtime >= src.stat().st_mtime):
        cp = gt.run([OMPI_MPICC, "-O1", "-o", prog, src], timeout=300)
        assert cp.returncode == 0, describe(cp)
    rounds, rec = 8, 16
    args = [gt.galley_path(), "-c", str(cluster.cluster_file), "exec", "-m",
            "%s=/%s" % (mapdir, uniq), "--", OMPI_MPIRUN, "--mca", "io",
            "romio321", "-n", str(np), prog, mapdir / "rec", rec, rounds]
    env = dict(cluster.env)
    env.update(OMPI_ENV)
    cp = gt.run(args, env=env, timeout=300)
    assert cp.returncode == 0 and "No Errors" in cp.stdout, describe(cp)
    out = tmp_path / "got"
    cluster.galley("get", "/%s/rec" % uniq, out, check=True)
    assert out.read_bytes() == _expected_records(64 * rounds * np, rec)
