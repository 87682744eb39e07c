"""Serial HDF5 tools and HDF5's own parallel tests on galley: files through
libgalley-posix.so (`galley exec`), beside the same runs on ufs:.

Uses hdf5-tests' machinery (loaded as a module, its fixtures reused): our
MPICH, Debian's parallel HDF5 and hdf5-tools, h5par_check, and the cached
testpar build (hdf5-tests/build-hdf5-testpar.sh; nothing new is built).

  * h5dump, h5ls and h5diff run on galley:/... files written by h5par_check
    (run under `galley exec`) and agree with the ufs: copies;
  * bytes written through MPI-IO read the same through the interposer, and
    an HDF5 file copied in through the interposer passes h5par_check's
    parallel read through MPI-IO;
  * the testpar parts that open the test file serially with HDF5's POSIX
    (sec2) driver -- testphdf5 calloc, fltread, cmpdsetr, atomicity, and the
    whole t_pread and t_filters_parallel -- run on galley: under `galley
    exec -m /<dir>` (they strip "galley:" before their serial opens, so the
    stripped directory is mapped back onto the same Galley names) and on
    ufs:.  GALLEY_POSIX_FULL_TESTPHDF5=1 also runs all of testphdf5 on
    galley: under the interposer (about 3 minutes on 2 cores).

Environment: as hdf5-tests (GALLEY_BUILD, GALLEY_PREFIX,
GALLEY_MPICH_PREFIX, GALLEY_REQUIRE_MPI, GALLEY_HDF5_TESTPAR=0 skips the
testpar cases).
"""

import hashlib
import os
import re
import uuid
from pathlib import Path

import pytest

from conftest import REPO, Mount, _load, fuse_ok

h5 = _load("galley_hdf5_tests", REPO / "hdf5-tests" / "test_hdf5.py")

# hdf5-tests' session fixtures, reused as they are.
mpi = h5.mpi
deps = h5.deps
programs = h5.programs
testpar_bin = h5.testpar_bin

NPROCS = h5.NPROCS
POSIX_SUBTESTS = list(h5.POSIX_SUBTESTS)  # calloc fltread cmpdsetr atomicity
POSIX_PROGRAMS = list(h5.POSIX_PROGRAMS)  # t_pread t_filters_parallel


@pytest.fixture(scope="module")
def hcluster(mpi, tmp_path_factory):
    c = h5.Cluster(tmp_path_factory.mktemp("cluster"), mpi["env"])
    cp = c.ctl("start", "-n", "4")
    assert cp.returncode == 0, "galley-cluster start failed:\n%s" % cp
    yield c
    st = c.ctl("status")
    c.ctl("stop")
    assert st.returncode == 0, "a galleyd died during the tests:\n%s" % st


def gexec(mpi, c, args, mounts=(), extra_env=None, cwd=None,
          timeout=h5.DEFAULT_TIMEOUT):
    """Run args under `galley exec` (preloaded) for cluster c."""
    cmd = [h5.find_program("tools/galley", "galley"), "-c", c.file, "exec"]
    for m in mounts:
        cmd += ["-m", m]
    return h5.run(cmd + ["--"] + [str(a) for a in args],
                  env=h5.mpi_env(mpi, c, extra_env), cwd=cwd, timeout=timeout)


def mpirun(mpi, n, args):
    return [mpi["mpiexec"], "-n", str(n)] + [str(a) for a in args]


def test_h5tools_on_galley_names(mpi, hcluster, programs, tmp_path):
    """h5par_check writes galley:/... under `galley exec` and ufs:...; then
    h5dump, h5ls -r and h5diff read the galley: name directly."""
    d = "/h5x-%s" % uuid.uuid4().hex[:10]
    g = "galley:%s/out.h5" % d
    u = tmp_path / "out.h5"
    for name in (g, "ufs:%s" % u):
        h5.assert_passed(gexec(mpi, hcluster, mpirun(
            mpi, NPROCS, [programs["h5par_check"], "write", name])))
    dumps = []
    for name in (g, u):
        cp = gexec(mpi, hcluster, ["h5dump", name], timeout=300)
        assert cp.returncode == 0, str(cp)
        dumps.append(h5.normalised_dump(cp.stdout))
    assert dumps[0] == dumps[1], "h5dump output differs"
    for what in ('DATASET "contig2d"', 'DATASET "chunk3d"', 'ATTRIBUTE "a39"',
                 "H5S_UNLIMITED"):
        assert what in dumps[0], what
    ls = [gexec(mpi, hcluster, ["h5ls", "-r", "-v", n]) for n in (g, u)]
    assert ls[0].returncode == ls[1].returncode == 0, str(ls[0])
    strip = lambda s: re.sub(r"Opened \"[^\"]*\"", "Opened", s)
    assert strip(ls[0].stdout) == strip(ls[1].stdout)
    assert "/grp/chunk3d" in ls[0].stdout
    cp = gexec(mpi, hcluster, ["h5diff", "-c", g, u])
    assert cp.returncode == 0, "h5diff found differences:\n%s" % cp
    cp = gexec(mpi, hcluster, ["h5dump", "-m", "%.1f", "-d", "/grp/chunk3d",
                               "-s", "22,39,36", "-c", "1,1,1", g])
    assert cp.returncode == 0 and "(22,39,36): 223936.5" in cp.stdout, str(cp)


def test_same_bytes_mpiio_and_interposer(mpi, hcluster, programs, tmp_path):
    """A file written through MPI-IO reads the same through the interposer
    (and the CLI); an HDF5 file copied in through the interposer passes a
    parallel read through MPI-IO."""
    d = "/h5s-%s" % uuid.uuid4().hex[:10]
    g = "galley:%s/mpi.h5" % d
    h5.assert_passed(h5.mpiexec(mpi, hcluster, NPROCS,
                                [programs["h5par_check"], "write", g]))
    local = tmp_path / "viacli.h5"
    assert hcluster.galley("get", g[7:], local).returncode == 0
    cp = gexec(mpi, hcluster, ["sha256sum", g])
    assert cp.returncode == 0, str(cp)
    assert cp.stdout.split()[0] == hashlib.sha256(
        local.read_bytes()).hexdigest()

    u = tmp_path / "ufs.h5"
    h5.assert_passed(h5.mpiexec(mpi, hcluster, NPROCS,
                                [programs["h5par_check"], "write",
                                 "ufs:%s" % u]))
    g2 = "galley:%s/copied.h5" % d
    cp = gexec(mpi, hcluster, ["cp", u, g2])
    assert cp.returncode == 0, str(cp)
    for n in (NPROCS, 1):
        h5.assert_passed(h5.mpiexec(mpi, hcluster, n,
                                    [programs["h5par_check"], "read", g2]))
    cp = gexec(mpi, hcluster, ["rm", g, g2])
    assert cp.returncode == 0, str(cp)


# ------------------------------------------------------------- testpar
TESTPAR_CASES = ["testphdf5-posix"] + POSIX_PROGRAMS


def _testpar_ok(case, cp):
    if cp.timed_out or cp.returncode != 0:
        return False
    out = cp.stdout + cp.stderr
    if case.startswith("testphdf5"):
        return "PHDF5 tests finished with no errors" in out and all(
            "(%s)" % t in out for t in POSIX_SUBTESTS)
    if case == "t_filters_parallel":
        return "All Parallel Filters tests passed" in out
    return "finished with no failures" in out


@pytest.mark.parametrize("prefix", ["galley", "ufs"])
@pytest.mark.parametrize("case", TESTPAR_CASES)
def test_testpar_posix_parts(case, prefix, mpi, hcluster, testpar_bin,
                             tmp_path):
    """The testpar parts hdf5-tests cannot run on galley: without POSIX
    access, on galley: through the interposer and on ufs:."""
    prog = "testphdf5" if case.startswith("testphdf5") else case
    args = [testpar_bin / prog]
    if prog == "testphdf5":
        args += [a for t in POSIX_SUBTESTS for a in ("-o", t)]
    work = tmp_path / "work"
    work.mkdir()
    if prefix == "galley":
        d = "/h5tp-%s" % uuid.uuid4().hex[:10]
        cp = gexec(mpi, hcluster, mpirun(mpi, NPROCS, args), mounts=[d],
                   extra_env={"HDF5_PARAPREFIX": "galley:" + d}, cwd=work)
        # nothing reached the local file system under the stripped name
        assert not Path(d).exists()
    else:
        (work / "ufs:").symlink_to("/")
        (tmp_path / "data").mkdir()
        cp = h5.run(mpirun(mpi, NPROCS, args),
                    env=h5.mpi_env(mpi, hcluster, {
                        "HDF5_PARAPREFIX": "ufs:%s" % (tmp_path / "data")}),
                    cwd=work, timeout=h5.DEFAULT_TIMEOUT)
    h5.HDF5_TESTPAR_SUMMARY.append((prefix, case + " (posix)",
                                    "pass" if _testpar_ok(case, cp) else
                                    "FAIL", cp.seconds))
    assert _testpar_ok(case, cp), str(cp)


@pytest.mark.skipif(os.environ.get("GALLEY_POSIX_FULL_TESTPHDF5") != "1",
                    reason="GALLEY_POSIX_FULL_TESTPHDF5=1 runs it")
def test_testphdf5_all_on_galley(mpi, hcluster, testpar_bin, tmp_path):
    """All 55 testphdf5 sub-tests in one run on galley: under the
    interposer (nothing excluded)."""
    d = "/h5tp-%s" % uuid.uuid4().hex[:10]
    cp = gexec(mpi, hcluster, mpirun(mpi, NPROCS, [testpar_bin / "testphdf5"]),
               mounts=[d], extra_env={"HDF5_PARAPREFIX": "galley:" + d},
               cwd=tmp_path, timeout=h5.TIMEOUTS["testphdf5"])
    out = cp.stdout + cp.stderr
    assert cp.returncode == 0 and \
        "PHDF5 tests finished with no errors" in out, str(cp)
    ran = set(re.findall(r"^Testing\s+--.*\((\S+)\)\s*$", out, re.M))
    assert ran == set(h5.TESTPHDF5_SUBTESTS), sorted(
        set(h5.TESTPHDF5_SUBTESTS) ^ ran)
    h5.HDF5_TESTPAR_SUMMARY.append(("galley", "testphdf5 all (posix)",
                                    "pass", cp.seconds))


@pytest.mark.skipif(not fuse_ok(), reason="no galley-fuse or /dev/fuse")
def test_h5tools_through_mount(mpi, hcluster, programs, tmp_path):
    """h5par_check writes through a galley mount (ROMIO's ufs: driver on
    the mount's path); h5dump/h5ls/h5diff read it through the mount and
    as a galley: name under `galley exec`, and agree with a local copy;
    our MPI-IO driver reads the same file back."""
    m = Mount(hcluster, tmp_path / "mnt")
    try:
        d = "h5m-%s" % uuid.uuid4().hex[:10]
        (m.dir / d).mkdir()
        path = m.dir / d / "m.h5"
        local = tmp_path / "local.h5"
        for name in ("ufs:%s" % path, "ufs:%s" % local):
            h5.assert_passed(h5.mpiexec(mpi, hcluster, NPROCS,
                                        [programs["h5par_check"], "write",
                                         name]))
        g = "galley:/%s/m.h5" % d
        h5.assert_passed(h5.mpiexec(mpi, hcluster, NPROCS,
                                    [programs["h5par_check"], "read", g]))
        dumps = []
        for cmd in (["h5dump", path], ["h5dump", local]):
            cp = h5.run(cmd, env=h5.mpi_env(mpi, hcluster), timeout=300)
            assert cp.returncode == 0, str(cp)
            dumps.append(h5.normalised_dump(cp.stdout))
        cp = gexec(mpi, hcluster, ["h5dump", g], timeout=300)
        assert cp.returncode == 0, str(cp)
        dumps.append(h5.normalised_dump(cp.stdout))
        assert dumps[0] == dumps[1] == dumps[2]
        assert 'DATASET "contig2d"' in dumps[0]
        cp = h5.run(["h5diff", "-c", path, local],
                    env=h5.mpi_env(mpi, hcluster))
        assert cp.returncode == 0, str(cp)
        cp = gexec(mpi, hcluster, ["h5diff", "-c", g, local])
        assert cp.returncode == 0, str(cp)
        ls = [h5.run(["h5ls", "-r", p], env=h5.mpi_env(mpi, hcluster))
              for p in (path, local)]
        assert ls[0].stdout == ls[1].stdout and ls[0].returncode == 0, \
            str(ls[0])
        os.unlink(path)
        os.rmdir(m.dir / d)
    finally:
        cp = h5.run([h5.find_program("tools/galley", "galley"), "umount",
                     m.dir], env=h5.mpi_env(mpi, hcluster))
        assert cp.returncode == 0, str(cp)
