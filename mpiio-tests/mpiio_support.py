"""Support code for the MPI-IO tests (conftest.py has the fixtures): where
our MPICH, libgalley and ROMIO's tests are, how programs are compiled and
how MPI runs are started and judged.

Where things are found (environment variables override):
  GALLEY_BUILD         build tree (default <repo>/_build): galleyd, galley,
                       and where the test programs are compiled to
                       (<build>/mpiio-tests/)
  GALLEY_PREFIX        Galley install prefix whose lib/ has libgalley.so.0
                       (default <repo>/_prefix, else the build tree's .libs)
  GALLEY_MPICH_PREFIX  MPICH install prefix (default: what
                       `mpich/build-mpich.sh --print-prefix` prints)
  GALLEY_ROMIO_TESTDIR ROMIO's test sources (default: src/mpi/romio/test of
                       the MPICH build tree beside that prefix)
  GALLEY_REQUIRE_MPI   when set, a missing MPICH fails the tests instead of
                       skipping them (quickstart test sets it)

Every MPI run has a hang bound; on timeout the run's own process group
(mpiexec and its ranks) is killed and the test fails.
"""

import importlib.util
import os
import re
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SRC = HERE / "src"

# The cluster machinery of the main test suite (tests/conftest.py), loaded
# under its own module name so both conftest files can coexist.
_spec = importlib.util.spec_from_file_location("galley_tests_conftest",
                                               REPO / "tests" / "conftest.py")
gt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gt)

BUILD = gt.BUILD
Cluster = gt.Cluster
StallMeter = gt.StallMeter
fault_when_ready = gt.fault_when_ready


def require_or_skip(msg):
    if os.environ.get("GALLEY_REQUIRE_MPI"):
        pytest.fail(msg + " (GALLEY_REQUIRE_MPI is set)", pytrace=False)
    pytest.skip(msg)


def _print_prefix(what):
    """build-mpich.sh --print-prefix / --print-key, or None."""
    try:
        cp = subprocess.run(["bash", str(REPO / "mpich" / "build-mpich.sh"), what],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = cp.stdout.strip()
    return out if cp.returncode == 0 and out else None


def galley_libdir():
    """Directory holding libgalley.so.0, or None."""
    cands = []
    if os.environ.get("GALLEY_PREFIX"):
        cands.append(Path(os.environ["GALLEY_PREFIX"]) / "lib")
    cands += [REPO / "_prefix" / "lib", BUILD / "libgalley" / ".libs", BUILD / ".libs"]
    for d in cands:
        if (d / "libgalley.so.0").exists():
            return d
    return None


def communicate_or_kill(p, timeout):
    """(stdout, stderr, hung) of a Popen started with start_new_session:
    a process that outlives `timeout` is killed with its whole process group
    (mpiexec and its ranks)."""
    try:
        out, err = p.communicate(timeout=timeout)
        return out, err, False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
        return out, err, True


class Mpi:
    """Our MPICH and the environment every MPI program runs in."""

    def __init__(self, prefix, libdir):
        self.prefix = Path(prefix)
        self.mpicc = self.prefix / "bin" / "mpicc"
        self.mpiexec = self.prefix / "bin" / "mpiexec"
        self.libdir = Path(libdir)
        ld = "%s:%s" % (self.libdir, self.prefix / "lib")
        if os.environ.get("LD_LIBRARY_PATH"):
            ld += ":" + os.environ["LD_LIBRARY_PATH"]
        self.ld_library_path = ld

    def env(self, cluster_file=None, extra=None):
        """Environment of a run: never a cluster of the user's by accident;
        a generous Galley timeout (the test machines are loaded)."""
        env = gt.base_env()
        env["LD_LIBRARY_PATH"] = self.ld_library_path
        env["GALLEY_TIMEOUT"] = "60"
        if cluster_file:
            env["GALLEY_CLUSTER"] = str(cluster_file)
        if extra:
            env.update(extra)
        return env

    def run(self, n, argv, env, timeout, cwd=None):
        """mpiexec -n N argv...; returns CompletedProcess.  A run that
        outlives `timeout` is killed (its whole process group) and fails."""
        cmd = [str(self.mpiexec), "-n", str(n)] + [str(a) for a in argv]
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
                             start_new_session=True)
        out, err, hung = communicate_or_kill(p, timeout)
        if hung:
            pytest.fail("hung for %ss and was killed: %s\nstdout:\n%s\nstderr:\n%s"
                        % (timeout, " ".join(cmd), out[-6000:], err[-6000:]),
                        pytrace=False)
        return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def describe(cp):
    return "command: %s\nexit %s\nstdout:\n%s\nstderr:\n%s" % (
        " ".join(cp.args), cp.returncode, cp.stdout[-8000:], cp.stderr[-8000:])


NO_ERRORS = re.compile(r"^\s*No Errors\s*$", re.M)


def no_errors(cp):
    """The ROMIO convention: exit 0 and a " No Errors" line (on stdout or,
    as big_extents prints it, stderr: runtests merges them)."""
    return cp.returncode == 0 and bool(NO_ERRORS.search(cp.stdout + "\n" + cp.stderr))


def assert_no_errors(cp):
    assert no_errors(cp), describe(cp)


def out_dir(tmp_path_factory, sub):
    """<build>/mpiio-tests/<sub> when the build tree is there, else a
    temporary directory."""
    d = BUILD / "mpiio-tests" / sub
    try:
        d.mkdir(parents=True, exist_ok=True)
        probe = d / (".probe-%d" % os.getpid())
        probe.write_text("")
        probe.unlink()
        return d
    except OSError:
        return tmp_path_factory.mktemp("mpiio-" + sub)


def compile_c(cc, sources, out, env, extra=()):
    """Compile sources into out unless out is newer than all of them and
    than the compiler's stamp; pytest.fail with the compiler's output."""
    out = Path(out)
    stamp = out.with_suffix(".cc")
    ident = "%s %s" % (cc, " ".join(extra))
    try:
        fresh = out.exists() and stamp.read_text() == ident and all(
            out.stat().st_mtime >= Path(s).stat().st_mtime for s in sources)
    except OSError:
        fresh = False
    if fresh:
        return out
    # Built under a name of its own and renamed into place: a suite running
    # beside this one (./quickstart test runs suites side by side) that
    # builds the same program never runs a half-written file.
    tmp = out.with_name(".%s.%d" % (out.name, os.getpid()))
    cmd = [str(cc), "-O1", "-g", "-o", str(tmp)] + [str(s) for s in sources] + list(extra)
    cp = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True, env=env, timeout=300)
    if cp.returncode != 0:
        tmp.unlink(missing_ok=True)
        pytest.fail("compiling %s failed:\n%s\n%s" % (out.name, " ".join(cmd), cp.stdout),
                    pytrace=False)
    os.replace(tmp, out)
    stamp_tmp = stamp.with_name(".%s.%d" % (stamp.name, os.getpid()))
    stamp_tmp.write_text(ident)
    os.replace(stamp_tmp, stamp)
    return out


# Our programs: name -> extra sources besides mt.c.
PROGRAMS = {
    "contig": [], "noncontig": ["cases.c"], "views": [], "coll": ["cases.c"],
    "nonblock": ["cases.c"], "sharedfp": [], "atomicity": [], "sizes": [], "hints": [],
    "errors": [], "identity": [], "abi": [], "finalize": [],
    "sharedfp_open": [], "collfail": [], "sieve": [],
}




def find_mpich():
    """(MPICH prefix, libgalley dir) or pytest skip/fail with the reason."""
    prefix = os.environ.get("GALLEY_MPICH_PREFIX") or _print_prefix("--print-prefix")
    if not prefix or not (Path(prefix) / "bin" / "mpicc").exists():
        require_or_skip("MPICH with the galley: driver is not built (expected %s/bin/mpicc; "
                         "run ./quickstart build or mpich/build-mpich.sh)" % prefix)
    libdir = galley_libdir()
    if libdir is None:
        require_or_skip("libgalley.so.0 not found (looked in $GALLEY_PREFIX/lib, _prefix/lib "
                         "and the build tree): run ./quickstart build")
    return prefix, libdir


def romio_testdir():
    """ROMIO's test sources in the MPICH build tree, or None."""
    if os.environ.get("GALLEY_ROMIO_TESTDIR"):
        return Path(os.environ["GALLEY_ROMIO_TESTDIR"])
    key = _print_prefix("--print-key")
    if not key:
        return None
    cache = Path(os.environ.get("GALLEY_CACHE") or Path.home() / ".cache" / "galley")
    return cache / "build" / ("mpich-" + key) / "src" / "mpi" / "romio" / "test"


# ------------------------------------ what both suites' fixtures share
# (mpiio-tests/conftest.py with our MPICH, openmpi-tests/conftest.py with
# Debian's Open MPI)

def our_mpich():
    """Our MPICH (with the galley: driver) as an Mpi, or skip/fail."""
    prefix, libdir = find_mpich()
    return Mpi(prefix, libdir)


def build_programs(mpicc, env, d, flags):
    """PROGRAMS built with mpicc into directory d: name -> path.  A program
    older than mt.h or cases.h (not among its sources) is rebuilt."""
    built = {}
    for name, extra in PROGRAMS.items():
        srcs = [SRC / (name + ".c"), SRC / "mt.c"] + [SRC / e for e in extra]
        deps_newest = max(p.stat().st_mtime for p in [SRC / "mt.h", SRC / "cases.h"])
        out = d / name
        if out.exists() and out.stat().st_mtime < deps_newest:
            out.unlink()
        built[name] = compile_c(mpicc, srcs, out, env, flags)
    return built


def galley_cluster(tmp_path_factory):
    """The body of a module's `cluster` fixture (use with `yield from`): 4
    real galleyd servers started through tools/galley-cluster, checked
    alive and stopped at the end."""
    c = Cluster(tmp_path_factory.mktemp("cluster"), n=4).start()
    yield c
    c.check_alive()
    gt._teardown(c)


def unique_name(request, top):
    """A galley name prefix no other test uses: /<top>/<test>-<random>."""
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)[:60]
    return "/%s/%s-%s" % (top, base, uuid.uuid4().hex[:8])
