"""Fixtures for the Slurm tests: a real Slurm cluster made by the test
(slurmbed.py: Debian's slurmctld, three slurmd and munged, each host a
network namespace with its own name) and per-job Galleys started in it by
`galley-cluster start --launcher srun`, as a site's users would.

Needs root (namespaces, the daemons) and Debian's slurm-wlm and munge
(./quickstart installs them).  Without root every test is skipped, saying
why; missing Slurm programs or our MPICH fail them when GALLEY_REQUIRE_MPI
is set (quickstart test).  The cluster is taken down at the end of the
module, failures included.
"""

import importlib.util
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

_spec = importlib.util.spec_from_file_location(
    "galley_mpiio_support", REPO / "mpiio-tests" / "mpiio_support.py")
ms = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ms)
gt = ms.gt
BUILD = ms.BUILD
BED = HERE / "slurmbed.py"
PREFIX_BIN = REPO / "_prefix" / "bin"


def refused():
    """None when a Slurm test bed can be made here, else why not."""
    if os.geteuid() != 0:
        return "a Slurm test cluster needs root (running as uid %d)" % \
            os.geteuid()
    missing = [p for p in ("slurmctld", "slurmd", "munged", "srun", "nsenter",
                           "unshare", "ip") if not shutil.which(p)]
    if missing:
        ms.require_or_skip("missing %s (Debian packages slurm-wlm, munge, "
                           "util-linux, iproute2: ./quickstart installs "
                           "them)" % ", ".join(missing))
    if not (PREFIX_BIN / "galley-cluster").exists():
        ms.require_or_skip("Galley is not installed in _prefix "
                           "(./quickstart build)")
    return None


class Bed:
    """The Slurm cluster: hosts "login", "node0".."node2"; every file in
    self.dir, which every host sees."""

    def __init__(self, d, mpi):
        self.dir = Path(d)
        self.mpi = mpi
        self.env = mpi.env(None, {
            "PATH": "%s:%s:%s" % (PREFIX_BIN, mpi.prefix / "bin",
                                  os.environ.get("PATH", "")),
            "GALLEYD": str(PREFIX_BIN / "galleyd"),
            "HEAT": str(BUILD / "arrays" / "heat"),
            "SLURM_CONF": str(self.dir / "slurm.conf"),
        })
        for k in ("GALLEY_TRANSPORT", "GALLEY_CLUSTER"):
            self.env.pop(k, None)

    def bed(self, *args, timeout=120, check=True):
        cp = gt.run(["python3", str(BED), args[0], "--dir", str(self.dir)] +
                    [str(a) for a in args[1:]], env=self.env, timeout=timeout)
        if check and cp.returncode != 0:
            pytest.fail("slurmbed %s failed:\n%s" % (
                " ".join(map(str, args)), gt.describe(cp)), pytrace=False)
        return cp

    def on(self, host, argv, timeout=180, env=None, check=False, cwd=None):
        """Run argv on a host of the cluster; a run that outlives timeout
        is killed and fails the test (nothing may hang)."""
        e = dict(self.env)
        if env:
            e.update(env)
        cmd = ["python3", str(BED), "exec", "--dir", str(self.dir), host] + \
            [str(a) for a in argv]
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=e, cwd=cwd,
                             start_new_session=True)
        out, err, hung = ms.communicate_or_kill(p, timeout)
        cp = subprocess.CompletedProcess(cmd, p.returncode, out, err)
        if hung:
            pytest.fail("hung for %ss and was killed:\n%s" % (
                timeout, ms.describe(cp)), pytrace=False)
        if check and cp.returncode != 0:
            pytest.fail(ms.describe(cp), pytrace=False)
        return cp

    def log_tail(self):
        out = []
        for h in ("login/slurmctld.log", "node0/slurmd.log"):
            p = self.dir / h
            if p.exists():
                out.append("== %s\n%s" % (h, "".join(
                    p.read_text(errors="replace").splitlines(True)[-15:])))
        return "\n".join(out)

    def galleyds(self):
        """Pids of galleyd processes started from this bed's jobs."""
        p = subprocess.run(["pgrep", "-f", "galleyd --data %s" % self.dir],
                           stdout=subprocess.PIPE, text=True)
        return p.stdout.split()

    def wait_idle(self, timeout=60):
        """Every job of the bed ended (squeue empty)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            cp = self.on("login", ["squeue", "-h"], timeout=30)
            if cp.returncode == 0 and not cp.stdout.strip():
                return
            time.sleep(0.3)
        pytest.fail("jobs still in the queue after %ds:\n%s" % (
            timeout, cp.stdout), pytrace=False)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    why = refused()
    if why:
        pytest.skip(why)
    prefix, libdir = ms.find_mpich()
    mpi = ms.Mpi(prefix, libdir)
    if not (BUILD / "arrays" / "heat").exists():
        ms.require_or_skip("arrays/heat is not built (./quickstart build)")
    # a short path: munge's and slurmd's socket names must fit sun_path
    d = Path("/tmp") / ("galley-slurm-%d" % os.getpid())
    shutil.rmtree(d, ignore_errors=True)
    b = Bed(d, mpi)
    try:
        b.bed("up", "-N", 3, "--cpus", 2)
        yield b
    finally:
        b.bed("down", check=False)
        shutil.rmtree(d, ignore_errors=True)
