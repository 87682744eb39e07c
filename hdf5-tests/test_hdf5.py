"""Real HDF5 on `galley:` files: our own parallel HDF5 programs and HDF5's
own parallel test suite (testpar), each run on `galley:` and, as the baseline
in the same run, on ROMIO's `ufs:` driver over a local directory.

Pieces (all real: galleyd servers on loopback ports, our MPICH whose ROMIO
holds the Galley driver, Debian's HDF5 library, HDF5's own test programs):

  * hdf5-tests/build-hdf5-testpar.sh builds HDF5 1.10.8's testpar programs
    against our MPICH (cached; it also installs libhdf5-mpich-dev and
    hdf5-tools when missing) -- run once per session;
  * hdf5-tests/src/*.c are compiled with Debian's mpicc.mpich against
    Debian's libhdf5 (mpich flavour) and run on our MPICH through
    LD_LIBRARY_PATH (it provides libmpich.so.12);
  * a file written through galley: is copied out with `galley get` and
    compared with h5diff and h5dump against the same file written to ufs:.

testpar runs program by program (testphdf5 sub-test by sub-test) with
HDF5_PARAPREFIX=galley:/<dir> and HDF5_PARAPREFIX=ufs:<local dir>; ufs:
failures are xfail (with the reason), galley: must pass everything that
passes on ufs:.  See hdf5-tests/README.md for what does not apply and why.

Environment: GALLEY_BUILD (build tree, default <repo>/_build),
GALLEY_PREFIX (where lib/libgalley.so.0 is, default <repo>/_prefix),
GALLEY_MPICH_PREFIX (default `mpich/build-mpich.sh --print-prefix`),
GALLEY_HDF5_NPROCS (ranks, default 4), GALLEY_HDF5_TESTPAR=0 (skip the
testpar cases), GALLEY_HDF5_TIMEOUT_SCALE (multiplies the per-run time
bounds), GALLEY_REQUIRE_MPI=1 (fail instead of skip when MPICH is
not built).
"""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CLUSTER_SCRIPT = REPO / "tools" / "galley-cluster"
BUILD_SCRIPT = HERE / "build-hdf5-testpar.sh"
NPROCS = int(os.environ.get("GALLEY_HDF5_NPROCS", "4"))
RUN_TESTPAR = os.environ.get("GALLEY_HDF5_TESTPAR", "1") != "0"

# (prefix, what, verdict, seconds) of every testpar run, printed at the end
# of the session by conftest.py's pytest_terminal_summary.
HDF5_TESTPAR_SUMMARY = []

# Debian's parallel HDF5, MPICH flavour.
H5_INC = "/usr/include/hdf5/mpich"
H5_LIB = "/usr/lib/x86_64-linux-gnu/hdf5/mpich"

PREFIXES = ("galley", "ufs")

# ------------------------------------------------------------- testpar lists
# HDF5 1.10.8 testpar/Makefile.am: TEST_PROG_PARA in `make check` order, then
# the t_pflush1/t_pflush2 pair of testpflush.sh.  The build script's
# bin/PROGRAMS must say the same (test_testpar_program_list).
TESTPAR_PROGRAMS = ["t_mpi", "t_bigio", "testphdf5", "t_cache", "t_cache_image",
                    "t_pread", "t_pshutdown", "t_prestart", "t_init_term",
                    "t_shapesame", "t_filters_parallel", "t_pflush1",
                    "t_pflush2"]

# testphdf5's sub-tests (testphdf5.c, AddTest order; page_buffer is compiled
# out in 1.10.8).  cchunk5..10 and rrobjflushconf need 3 ranks, fiodc and
# atomicity 2.  test_testphdf5_subtest_list checks this against the program.
TESTPHDF5_SUBTESTS = [
    "mpiodup", "split", "props", "idsetw", "idsetr", "cdsetw",
    "cdsetr", "eidsetw", "eidsetr", "ecdsetw", "ecdsetr", "eidsetw2",
    "selnone", "calloc", "fltread", "cmpdsetr", "zerodsetr", "ndsetw",
    "ngrpw", "ngrpr", "compact", "cngrpw-ingrpr", "bigdset", "fill",
    "cchunk1", "cchunk2", "cchunk3", "cchunk4", "cchunk5", "cchunk6",
    "cchunk7", "cchunk8", "cchunk9", "cchunk10", "ccontw", "ccontr",
    "cschunkw", "cschunkr", "ccchunkw", "ccchunkr", "null", "I/Omodeconf",
    "rrobjflushconf", "alnbg1", "tldsc", "lccio", "actualio", "nocolcause",
    "edpl", "fiodc", "atomicity", "denseattr", "noselcollmdread",
    "MC_coll_MD_read", "LC_coll_MD_read"]

# Sub-tests that open the test file serially with HDF5's default (POSIX,
# sec2) driver by the very name given to MPI-IO: on galley: that name is not
# a POSIX path, so they are excluded there with -x (they run on ufs:, where
# the work directory's `ufs:` symlink makes the name a POSIX path too).
POSIX_SUBTESTS = {
    "calloc": "creates the file serially (H5Fcreate with the sec2 driver), "
              "then extends it in parallel",
    "fltread": "writes the filtered dataset serially (sec2 driver), then "
               "reads it in parallel",
    "cmpdsetr": "writes the compressed dataset serially (sec2 driver), then "
                "reads it in parallel",
    "atomicity": "rank 0 reopens the file serially (sec2 driver) to check "
                 "that H5Fset_mpi_atomicity fails on a non-MPI file",
}

# testpar programs that write into their file with POSIX calls by the name
# given to MPI-IO, so cannot apply to a non-POSIX store.
POSIX_PROGRAMS = {
    "t_pread": "rank 0 of each group writes a text header into the HDF5 "
               "user block with open()/write() on the file name",
    "t_filters_parallel": "its 15 read tests and its serial/parallel pair "
                          "have rank 0 create or read the file serially "
                          "with HDF5's POSIX (sec2) driver by the name "
                          "given to MPI-IO; the tests that use the file "
                          "only through MPI-IO run as "
                          "t_filters_parallel_mpiio",
}

# Programs the build script makes from a testpar source with the tests that
# do serial POSIX I/O cut from its test table (nothing else changed): the
# part of a POSIX_PROGRAMS program that applies to galley:.  Run on both.
MPIIO_PARTS = {"t_filters_parallel_mpiio": "t_filters_parallel"}

# What test_testpar runs, in order: testpar's programs (testphdf5 has its
# own test) each followed by its MPI-IO part, if any.
RUN_PROGRAMS = []
for _p in TESTPAR_PROGRAMS:
    if _p != "testphdf5":
        RUN_PROGRAMS.append(_p)
    RUN_PROGRAMS += [v for v, whole in MPIIO_PARTS.items() if whole == _p]

# testpar programs that do not take HDF5_PARAPREFIX: on galley: they are
# pointed at the galley driver with ROMIO_FSTYPE_FORCE=galley: when their
# files are used only through MPI-IO; otherwise they run on local files in
# both columns (noted, they do not exercise galley:).
FORCE_FSTYPE = {"t_bigio"}
LOCAL_ONLY = {
    "t_init_term": "creates its one file serially after MPI_Finalize: local "
                   "file only",
}

# testpar programs that cannot run under this MPICH whatever the file
# system, so are reported as skipped in both columns without running.
NOT_RUN = {
    "t_cache_image": "rank 0 fork()s and execv()s \"t_cache_image\" (a "
                     "relative path) as a serial MPI program to create its "
                     "test files; run by hand from its own directory with a "
                     "wrapper by that name that clears the parent's PMI_* "
                     "variables (so the child initialises as a singleton), "
                     "the files are created and its 4 load tests pass, but "
                     "'smoke check 1' did not finish in 20 minutes (4 ranks "
                     "on 2 cores, every rank in MPI_Allreduce).  It names "
                     "its files without HDF5_PARAPREFIX and creates them "
                     "serially, so it would not use galley: anyway",
}

# Ranks per program when not NPROCS: t_cache's cost grows with every rank
# (one rank plays a metadata server to all the others) and 3 is its minimum.
RANKS = {"t_cache": 3}

# Pairs: the second program reads what the first left behind.
FOLLOWS = {"t_prestart": "t_pshutdown", "t_pflush2": "t_pflush1"}

# Bounds (seconds) on one mpiexec; a hang is a failure.  A loaded machine
# may scale them with GALLEY_HDF5_TIMEOUT_SCALE.
_SCALE = float(os.environ.get("GALLEY_HDF5_TIMEOUT_SCALE", "1"))
TIMEOUTS = {k: v * _SCALE for k, v in
            {"testphdf5": 1200, "t_cache": 1200, "t_shapesame": 1200}.items()}
DEFAULT_TIMEOUT = 600 * _SCALE
CALL_TIMEOUT = 180


# ------------------------------------------------------------- helpers
def describe(cp):
    return "exit %s\nstdout:\n%s\nstderr:\n%s" % (
        cp.returncode, tail(cp.stdout), tail(cp.stderr))


def tail(text, n=6000):
    text = text or ""
    return text if len(text) <= n else "[...]\n" + text[-n:]


class Result:
    """Outcome of one command: returncode (None on timeout), output, time."""

    def __init__(self, args, returncode, stdout, stderr, seconds):
        self.args = args
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.seconds = seconds

    @property
    def timed_out(self):
        return self.returncode is None

    def __str__(self):
        return "%s\n%s (%.1f s)\nstdout:\n%s\nstderr:\n%s" % (
            " ".join(map(str, self.args)),
            "TIMED OUT" if self.timed_out else "exit %d" % self.returncode,
            self.seconds, tail(self.stdout), tail(self.stderr))


def run(args, env=None, cwd=None, timeout=CALL_TIMEOUT):
    """Run a command in its own process group; on timeout the whole group
    (mpiexec and its ranks) is killed and returncode is None."""
    t0 = time.monotonic()
    p = subprocess.Popen([str(a) for a in args], env=env, cwd=cwd,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         errors="replace", start_new_session=True)
    out, err, hung = ms.communicate_or_kill(p, timeout)
    return Result(args, None if hung else p.returncode, out, err,
                  time.monotonic() - t0)


# Where our MPICH and libgalley are, and the build-tree programs: the MPI-IO
# suite's support module (which loads tests/conftest.py), under its own name.
_spec = importlib.util.spec_from_file_location(
    "galley_mpiio_support", REPO / "mpiio-tests" / "mpiio_support.py")
ms = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ms)
find_program = ms.gt.find_program


# ------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def mpi():
    """Paths and environment for running MPI programs on our MPICH."""
    prefix, libdir = ms.find_mpich()
    prefix = Path(prefix)
    env = dict(os.environ)
    for k in ("GALLEY_CLUSTER", "HDF5_PARAPREFIX", "HDF5_PREFIX",
              "ROMIO_FSTYPE_FORCE", "HDF5_DRIVER", "HDF5_NOCLEANUP"):
        env.pop(k, None)
    env["LD_LIBRARY_PATH"] = "%s:%s%s" % (
        libdir, prefix / "lib",
        ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env.setdefault("GALLEY_TIMEOUT", "60")
    return {"prefix": prefix, "mpiexec": str(prefix / "bin" / "mpiexec"),
            "libdir": libdir, "env": env}


@pytest.fixture(scope="session")
def deps(mpi):
    """Debian's parallel HDF5 (mpich flavour) and hdf5-tools, installed by
    the build script when missing."""
    cp = run([BUILD_SCRIPT, "--deps-only"], env=mpi["env"], timeout=1800)
    assert cp.returncode == 0, "build-hdf5-testpar.sh --deps-only " \
        "failed:\n%s" % cp


@pytest.fixture(scope="session")
def testpar_bin(mpi, deps):
    """Build (or find cached) HDF5's testpar programs."""
    if not RUN_TESTPAR:
        pytest.skip("GALLEY_HDF5_TESTPAR=0")
    args = [BUILD_SCRIPT, "--mpich-prefix", mpi["prefix"]]
    if mpi["libdir"].name == "lib":
        args += ["--galley-prefix", mpi["libdir"].parent]
    cp = run(args, env=mpi["env"], timeout=3600)
    assert cp.returncode == 0, "build-hdf5-testpar.sh failed:\n%s" % cp
    top = subprocess.run([str(BUILD_SCRIPT), "--print-prefix"],
                         stdout=subprocess.PIPE, text=True,
                         check=True).stdout.strip()
    return Path(top) / "bin"


@pytest.fixture(scope="session")
def programs(mpi, deps, tmp_path_factory):
    """Our programs (hdf5-tests/src/*.c), built with Debian's mpicc.mpich
    against Debian's libhdf5 (mpich flavour)."""
    cc = shutil.which("mpicc.mpich") or shutil.which("h5pcc.mpich")
    assert cc, "mpicc.mpich not found (apt-get install libhdf5-mpich-dev)"
    out = tmp_path_factory.mktemp("bin")
    built = {}
    for src in sorted((HERE / "src").glob("*.c")):
        exe = out / src.stem
        cp = run([cc, "-Wall", "-Wextra", "-O2", "-I" + H5_INC, str(src),
                  "-o", str(exe), "-L" + H5_LIB, "-lhdf5"])
        assert cp.returncode == 0, "compiling %s failed:\n%s" % (src.name, cp)
        built[src.stem] = exe
    return built


class Cluster:
    """4 galleyd servers started and stopped with tools/galley-cluster."""

    def __init__(self, dir, env):
        self.dir = Path(dir)
        self.file = self.dir / "cluster"
        self.env = dict(env)
        self.env["GALLEYD"] = find_program("servers/galleyd", "galleyd")

    def ctl(self, *args):
        return run([sys.executable, CLUSTER_SCRIPT, args[0], "--dir",
                    self.dir] + list(args[1:]), env=self.env)

    def galley(self, *args, timeout=CALL_TIMEOUT):
        return run([find_program("tools/galley", "galley"), "-c", self.file]
                   + list(args), env=self.env, timeout=timeout)


@pytest.fixture(scope="module")
def cluster(mpi, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("cluster"), mpi["env"])
    cp = c.ctl("start", "-n", "4")
    assert cp.returncode == 0, "galley-cluster start failed:\n%s" % cp
    yield c
    st = c.ctl("status")
    cp = c.ctl("stop")
    assert st.returncode == 0, "a galleyd died during the tests:\n%s\n%s" % (
        st, "\n".join("--- server %d log:\n%s" % (
            i, tail((c.dir / ("server%d" % i) / "log").read_text(
                errors="replace"), 3000))
            for i in range(4) if (c.dir / ("server%d" % i) / "log").exists()))
    assert cp.returncode == 0, "galley-cluster stop failed:\n%s" % cp


def mpi_env(mpi, cluster, extra=None):
    env = dict(mpi["env"])
    env["GALLEY_CLUSTER"] = str(cluster.file)
    if extra:
        env.update(extra)
    return env


def mpiexec(mpi, cluster, n, args, extra_env=None, cwd=None,
            timeout=DEFAULT_TIMEOUT, opts=()):
    return run([mpi["mpiexec"]] + list(opts) + ["-n", str(n)]
               + [str(a) for a in args],
               env=mpi_env(mpi, cluster, extra_env), cwd=cwd,
               timeout=timeout)


def file_name(prefix, tmp_path, base):
    """A file name for MPI-IO: galley:/<unique>/<base> or ufs:<tmp>/<base>."""
    if prefix == "galley":
        return "galley:/h5t-%s/%s" % (uuid.uuid4().hex[:10], base)
    return "ufs:%s" % (tmp_path / base)


def assert_passed(cp):
    assert cp.returncode == 0 and re.search(r"^PASS \d+ checks$", cp.stdout,
                                            re.M), str(cp)


# ------------------------------------------------------------- our programs
@pytest.mark.parametrize("prefix", PREFIXES)
def test_h5par_check_rw(prefix, mpi, cluster, programs, tmp_path):
    """Write everything, close, reopen and read back in one run."""
    name = file_name(prefix, tmp_path, "rw.h5")
    cp = mpiexec(mpi, cluster, NPROCS, [programs["h5par_check"], "rw", name])
    assert_passed(cp)


@pytest.mark.parametrize("hints", [[], ["galley_cb=server"], ["galley_cb=two_phase"]],
                         ids=["auto", "server", "two_phase"])
def test_h5par_check_server_killed(mpi, programs, tmp_path, hints):
    """A server of the file is killed once /contig2d is written (h5par_check
    -k): the collective H5Dwrite after it fails on every rank (the driver
    agrees on errors) and returns: no hang.  (The program then aborts:
    HDF5 1.10.8 itself cannot close a file after a failed write, its ranks
    entering different collective calls; see h5par_check.c.)"""
    c = Cluster(tmp_path / "cl", mpi["env"])
    cp = c.ctl("start", "-n", "4")
    assert cp.returncode == 0, "galley-cluster start failed:\n%s" % cp
    try:
        kill = "%s %s kill-server --dir %s 1 >/dev/null 2>&1" % (
            sys.executable, CLUSTER_SCRIPT, c.dir)
        report = tmp_path / "fault.txt"
        args = [programs["h5par_check"], "write", "galley:/h5fault/x.h5", "-k", kill,
                "-r", str(report)]
        for h in hints:
            args += ["-i", h]
        cp = mpiexec(mpi, c, NPROCS, args, extra_env={"GALLEY_TIMEOUT": "10"}, timeout=300)
        assert cp.returncode is not None, "hung and was killed: %s" % cp
        # The report file, not stdout: what is printed just before MPI_Abort
        # may never reach mpiexec (see fault() in h5par_check.c).
        text = report.read_text() if report.exists() else ""
        got = dict(re.findall(r"^FAULT rank (\d+): collective H5Dwrite returned (-?\d+)$",
                              text, re.M))
        assert sorted(got) == [str(r) for r in range(NPROCS)], \
            "not every rank's collective H5Dwrite returned: %r\n%s" % (text, cp)
        assert all(int(v) < 0 for v in got.values()), \
            "H5Dwrite succeeded on some rank: %s\n%s" % (got, cp)
    finally:
        c.ctl("stop")


@pytest.mark.parametrize("prefix,hints", [
    ("galley", []),
    ("galley", ["striping_factor=3", "striping_unit=4096"]),
    ("galley", ["galley_cb=two_phase"]),
    ("galley", ["romio_cb_write=disable", "romio_cb_read=disable"]),
    ("galley", ["galley_checksum=crc32c"]),
    ("galley", ["galley_replicas=2"]),
    ("galley", ["galley_replicas=2", "galley_checksum=crc32c"]),
    ("ufs", []),
], ids=["galley", "galley-3x4K", "galley-two_phase", "galley-no_cb",
        "galley-crc32c", "galley-r2", "galley-r2-crc32c", "ufs"])
def test_h5par_check_reopen(prefix, hints, mpi, cluster, programs, tmp_path):
    """Write with NPROCS ranks, read back in a new job with one rank less
    (other decompositions), then with one rank."""
    name = file_name(prefix, tmp_path, "reopen.h5")
    hint_args = [a for h in hints for a in ("-i", h)]
    cp = mpiexec(mpi, cluster, NPROCS,
                 [programs["h5par_check"], "write", name] + hint_args)
    assert_passed(cp)
    for n in (max(1, NPROCS - 1), 1):
        cp = mpiexec(mpi, cluster, n,
                     [programs["h5par_check"], "read", name] + hint_args)
        assert_passed(cp)
    if "galley_replicas=2" in hints:  # two copies, both in sync
        st = cluster.galley("stat", name[len("galley:"):])
        assert "copies:    2 per subfile" in st.stdout, st.stdout + st.stderr
        assert "DEGRADED" not in st.stdout, st.stdout
    if "galley_checksum=crc32c" in hints:  # the file really is checksummed
        gname = name[len("galley:"):]
        st = cluster.galley("stat", gname)
        assert "checksum:  crc32c" in st.stdout, st.stdout + st.stderr
        sc = cluster.galley("scrub", gname)
        assert sc.returncode == 0 and " 0 failed" in sc.stdout, sc.stdout


def normalised_dump(text):
    """h5dump output without the file name on its first line."""
    return re.sub(r'^HDF5 "[^"]*" \{', 'HDF5 "FILE" {', text, count=1)


def test_h5dump_h5diff_galley_vs_ufs(mpi, cluster, programs, tmp_path):
    """The same program writes a file through galley: and one through ufs:;
    the galley file copied out with `galley get` is a valid HDF5 file whose
    h5dump is identical and which h5diff finds equal to the ufs one."""
    gname = file_name("galley", tmp_path, "cmp.h5")
    uname = file_name("ufs", tmp_path, "cmp_ufs.h5")
    for name in (gname, uname):
        assert_passed(mpiexec(mpi, cluster, NPROCS,
                              [programs["h5par_check"], "write", name]))
    local = tmp_path / "from_galley.h5"
    cp = cluster.galley("get", gname[len("galley:"):], local)
    assert cp.returncode == 0, str(cp)
    ufs_local = Path(uname[len("ufs:"):])
    assert local.stat().st_size > 0

    cp = run(["h5diff", local, ufs_local])
    assert cp.returncode == 0, "h5diff reports differences:\n%s" % cp
    dumps = []
    for f in (local, ufs_local):
        cp = run(["h5dump", f], timeout=300)
        assert cp.returncode == 0, "h5dump failed:\n%s" % cp
        dumps.append(normalised_dump(cp.stdout))
    assert dumps[0] == dumps[1], "h5dump output differs"
    # the dump shows what was written, not an empty shell
    for what in ('DATASET "contig2d"', 'DATASET "chunk3d"', 'DATASET "ext"',
                 'ATTRIBUTE "a39"', 'GROUP "empty"', "H5S_UNLIMITED"):
        assert what in dumps[0], what
    # a serial HDF5 program (h5dump's library, sec2 driver) also reads the
    # galley copy's data: the last element of the chunked 3-D dataset
    cp = run(["h5dump", "-m", "%.1f", "-d", "/grp/chunk3d", "-s", "22,39,36",
              "-c", "1,1,1", local])
    assert cp.returncode == 0 and "(22,39,36): 223936.5" in cp.stdout, str(cp)


# ------------------------------------------------------------- testpar
class TestparRunner:
    """Runs HDF5's testpar programs under one prefix, each once per session,
    and keeps the results (testphdf5 per sub-test)."""

    __test__ = False  # a helper, not a pytest test class

    def __init__(self, prefix, mpi, cluster, bindir, workdir):
        self.prefix = prefix
        self.mpi = mpi
        self.cluster = cluster
        self.bin = bindir
        self.work = Path(workdir)
        self.work.mkdir(parents=True, exist_ok=True)
        if prefix == "galley":
            self.paraprefix = "galley:/h5tp-%s" % uuid.uuid4().hex[:10]
        else:
            data = self.work / "data"
            data.mkdir(exist_ok=True)
            self.paraprefix = "ufs:%s" % data
            # "ufs:/abs/path" is also a relative POSIX path under the work
            # directory: make it resolve to /abs/path, so that the programs'
            # serial (POSIX) opens of the same name find the same file, as
            # they would on a POSIX parallel file system without a prefix.
            link = self.work / "ufs:"
            if not link.is_symlink():
                link.symlink_to("/")
        self.results = {}
        self.subtests = None
        self.runs = []

    def save_log(self, name, cp):
        """Keep a run's whole output in the work directory."""
        (self.work / (name + ".log")).write_text(str(cp.args) + "\n" + (
            "TIMED OUT" if cp.timed_out else "exit %d" % cp.returncode)
            + " after %.1f s\n--- stdout:\n%s\n--- stderr:\n%s\n" % (
            cp.seconds, cp.stdout, cp.stderr))

    def env(self, program):
        extra = {"HDF5_PARAPREFIX": self.paraprefix}
        if program in FORCE_FSTYPE:
            extra["ROMIO_FSTYPE_FORCE"] = self.prefix + ":"
        return extra

    def run_program(self, program, args=()):
        if program in self.results:
            return self.results[program]
        if program in FOLLOWS:
            self.run_program(FOLLOWS[program])
        cp = mpiexec(self.mpi, self.cluster, RANKS.get(program, NPROCS),
                     [self.bin / program] + list(args),
                     extra_env=self.env(program), cwd=self.work,
                     timeout=TIMEOUTS.get(program, DEFAULT_TIMEOUT))
        self.results[program] = cp
        self.save_log(program, cp)
        HDF5_TESTPAR_SUMMARY.append((self.prefix, program, "ok" if program_ok(
            program, cp) else "FAILED", cp.seconds))
        return cp

    def excluded(self):
        return sorted(POSIX_SUBTESTS) if self.prefix == "galley" else []

    def run_testphdf5(self):
        """Every sub-test, in order, in as few runs as possible: testphdf5
        aborts at the first failed check, so after a failure (or a hang) the
        run resumes with the next sub-test (-o for each remaining one).
        Returns {name: (status, Result)} with status pass/fail/skip/excluded.
        """
        if self.subtests is not None:
            return self.subtests
        res = {}
        for x in self.excluded():
            res[x] = ("excluded", None)
        remaining = [t for t in TESTPHDF5_SUBTESTS if t not in res]
        total = 0.0
        while remaining:
            args = ["-s"]
            if remaining != [t for t in TESTPHDF5_SUBTESTS if t not in res] \
                    or self.excluded():
                for t in remaining:
                    args += ["-o", t]
            cp = mpiexec(self.mpi, self.cluster, NPROCS,
                         [self.bin / "testphdf5"] + args,
                         extra_env=self.env("testphdf5"), cwd=self.work,
                         timeout=TIMEOUTS["testphdf5"])
            total += cp.seconds
            self.save_log("testphdf5.%d" % len(self.runs), cp)
            self.runs.append(cp)
            # The failing sub-test is the last one started before the first
            # error report (every rank prints its "Testing" line before it
            # can fail in that sub-test); without one (abort, hang), the
            # last one started.
            out = cp.stdout or ""
            err_at = out.find("*** Parallel ERROR ***")
            started = re.findall(r"^Testing  -- .* \(([^()]+)\) *$",
                                 out if err_at < 0 else out[:err_at], re.M)
            started = [t for t in started if t in remaining]
            ok = cp.returncode == 0 and \
                "PHDF5 tests finished with no errors" in cp.stdout
            if ok:
                for t in remaining:
                    res[t] = ("pass", cp) if t in started else ("skip", cp)
                break
            if not started:
                for t in remaining:
                    res[t] = ("fail", cp)
                break
            last = started[-1]
            done = remaining[:remaining.index(last)]
            for t in done:
                res[t] = ("pass" if t in started else "skip", cp)
            if cp.returncode == 0:
                # ran to the end but counted errors: not attributable
                for t in remaining[remaining.index(last):]:
                    res[t] = ("fail", cp)
                break
            res[last] = ("fail", cp)
            remaining = remaining[remaining.index(last) + 1:]
        self.subtests = res
        n = {k: sum(1 for v in res.values() if v[0] == k)
             for k in ("pass", "fail", "skip", "excluded")}
        HDF5_TESTPAR_SUMMARY.append((
            self.prefix, "testphdf5", "%(pass)d passed, %(fail)d failed, "
            "%(skip)d not run, %(excluded)d excluded" % n, total))
        return res


@pytest.fixture(scope="module")
def testpar(mpi, cluster, testpar_bin, tmp_path_factory):
    if not RUN_TESTPAR:
        pytest.skip("GALLEY_HDF5_TESTPAR=0")
    base = tmp_path_factory.mktemp("testpar")
    return {p: TestparRunner(p, mpi, cluster, testpar_bin, base / p)
            for p in PREFIXES}


def test_testpar_program_list(testpar_bin):
    listed = (testpar_bin / "PROGRAMS").read_text().split()
    assert listed == TESTPAR_PROGRAMS
    for p in MPIIO_PARTS:
        assert os.access(testpar_bin / p, os.X_OK), p


def test_testphdf5_subtest_list(testpar):
    """testphdf5 lists (with -o of a name it does not have: every sub-test
    is then reported as skipped) exactly the sub-tests we report on.
    Every rank prints the list; rank 0's is read from its own file, since
    hydra may interleave the ranks' output in the middle of a line."""
    tp = testpar["ufs"]
    pattern = tp.work / "subtest-list.%r"
    cp = mpiexec(tp.mpi, tp.cluster, NPROCS,
                 [tp.bin / "testphdf5", "-o", "NO-SUCH-TEST"],
                 extra_env=tp.env("testphdf5"), cwd=tp.work,
                 opts=["-outfile-pattern", pattern])
    assert cp.returncode == 0, str(cp)
    out = (tp.work / "subtest-list.0").read_text()
    names = re.findall(r"^Skipping -- .* \(([^()]+)\) *$", out, re.M)
    assert names == TESTPHDF5_SUBTESTS, out


def outcome(prefix, ok, detail, reason_if_ufs="fails on ufs: as well"):
    """Assert on galley:, xfail on ufs:."""
    if ok:
        return
    if prefix == "ufs":
        pytest.xfail("ufs: baseline: %s\n%s" % (reason_if_ufs, detail))
    pytest.fail(detail, pytrace=False)


def program_ok(program, cp):
    """HDF5's verdict: exit 0 and no failure marker.  t_pflush1 always exits
    with a failure code (it stops without closing its files, on purpose);
    testpflush.sh judges it by its output."""
    out = cp.stdout or ""
    if cp.timed_out or "*** Parallel ERROR ***" in out or "*FAILED*" in out:
        return False
    if program == "t_pflush1":
        return "PASSED" in out and "*** ERROR ***" not in out
    return cp.returncode == 0


@pytest.mark.parametrize("program", RUN_PROGRAMS)
@pytest.mark.parametrize("prefix", PREFIXES)
def test_testpar(prefix, program, testpar):
    tp = testpar[prefix]
    if program in NOT_RUN:
        pytest.skip("not run on galley: or ufs:: %s" % NOT_RUN[program])
    if prefix == "galley" and program in POSIX_PROGRAMS:
        base = testpar["ufs"].run_program(program)
        pytest.skip("not applicable to galley: (non-POSIX store): %s; it %s "
                    "on ufs:" % (POSIX_PROGRAMS[program],
                                 "passes" if program_ok(program, base)
                                 else "fails"))
    cp = tp.run_program(program)
    if prefix == "galley" and not program_ok(program, cp):
        base = testpar["ufs"].run_program(program)
        if not program_ok(program, base):
            pytest.xfail("fails on ufs: as well, so does not apply")
    note = ""
    if program in LOCAL_ONLY:
        note = " [%s]" % LOCAL_ONLY[program]
    outcome(prefix, program_ok(program, cp), "%s on %s:%s\n%s" % (
        program, prefix, note, cp))


@pytest.mark.parametrize("subtest", TESTPHDF5_SUBTESTS)
@pytest.mark.parametrize("prefix", PREFIXES)
def test_testphdf5(prefix, subtest, testpar):
    res = testpar[prefix].run_testphdf5()
    status, cp = res[subtest]
    if status == "excluded":
        pytest.skip("excluded with -x on galley: (non-POSIX store): %s"
                    % POSIX_SUBTESTS[subtest])
    if status == "skip":
        pytest.skip("testphdf5 did not run it with %d ranks" % NPROCS)
    if status == "fail" and prefix == "galley":
        base = testpar["ufs"].run_testphdf5().get(subtest, ("?", None))[0]
        if base == "fail":
            pytest.xfail("fails on ufs: as well, so does not apply")
    outcome(prefix, status == "pass", "testphdf5 sub-test %s on %s: failed"
            "\n%s" % (subtest, prefix, cp))
