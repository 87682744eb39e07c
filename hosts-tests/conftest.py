"""Fixtures for the multi-host tests: a test bed of hosts made of Linux
network namespaces on this machine (tools/galley-hosts), with real galleyd
servers in each and MPI jobs spread over them by MPICH's hydra.

Needs root (network namespaces) and our MPICH.  Without the right to make
namespaces every test is skipped, saying why; a missing MPICH fails them
when GALLEY_REQUIRE_MPI is set (quickstart test), as in mpiio-tests/.
The test bed is taken down at the end of the module, failures included.
"""

import importlib.util
import os
import subprocess
import time
import uuid
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
HOSTS_SCRIPT = REPO / "tools" / "galley-hosts"


def namespaces_refused():
    """None when this process may create network namespaces, else why."""
    if os.geteuid() != 0:
        return "network namespaces need root (running as uid %d)" % os.geteuid()
    probe = "galley-probe-%d" % os.getpid()
    try:
        cp = subprocess.run(["ip", "netns", "add", probe],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    except OSError as e:
        return "cannot run `ip` (Debian package iproute2): %s" % e
    if cp.returncode != 0:
        return "cannot create a network namespace: %s" % cp.stdout.strip()
    subprocess.run(["ip", "netns", "del", probe])
    return None


def bed_transport():
    """GALLEY_TRANSPORT for the test bed's programs.  A forced same-host
    transport (direct, local) reaches only the servers of the client's own
    host and refuses the others by design (GFS_EDIRECT, or no server: see
    gfs_server_transport in include/galley.h), and every job here uses
    servers on other hosts.  So under those the test bed runs with auto:
    direct to its own host's servers where granted, TCP to the others'.
    tcp is kept: it reaches every host."""
    t = os.environ.get("GALLEY_TRANSPORT", "auto") or "auto"
    return "auto" if t in ("direct", "local") else t


class TestBed:
    """H hosts with their servers (see galley-hosts: server number = host x
    servers per host + index on the host)."""

    def __init__(self, d, mpi, hosts=3):
        self.dir = Path(d)
        self.mpi = mpi
        self.hosts = hosts
        self.cluster_file = self.dir / "cluster"
        self.env = mpi.env(self.cluster_file, {
            "GALLEYD": ms.gt.galleyd_path(),
            "PATH": "%s:%s" % (mpi.prefix / "bin", os.environ.get("PATH", "")),
            "GALLEY_TRANSPORT": bed_transport(),
        })

    def ctl(self, *args, check=True, timeout=120, env=None):
        e = dict(self.env)
        if env:
            e.update(env)
        cp = gt.run(["python3", str(HOSTS_SCRIPT), args[0], "--dir",
                     str(self.dir)] + [str(a) for a in args[1:]],
                    env=e, timeout=timeout)
        if check and cp.returncode != 0:
            pytest.fail("galley-hosts %s failed:\n%s" % (
                " ".join(map(str, args)), gt.describe(cp)), pytrace=False)
        return cp

    def galley(self, host, *args, check=True):
        return self.ctl("exec", host, gt.galley_path(), *args, check=check)

    def iostat(self):
        """[(written_local, written_remote)] per server."""
        out = self.galley(0, "iostat").stdout.splitlines()[1:]
        return [(int(l.split()[2]), int(l.split()[3])) for l in out]

    def mpiexec(self, n, ppn, argv, timeout=180, env=None):
        """An MPI job over the hosts, ppn ranks per host; returns
        (CompletedProcess, seconds)."""
        e = dict(self.env)
        if env:
            e.update(env)
        cmd = ["python3", str(HOSTS_SCRIPT), "mpiexec", "--dir", str(self.dir),
               "--ppn", str(ppn), "-n", str(n)] + [str(a) for a in argv]
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=e, start_new_session=True)
        out, err, hung = ms.communicate_or_kill(p, timeout)
        took = time.monotonic() - t0
        cp = subprocess.CompletedProcess(cmd, p.returncode, out, err)
        if hung:
            pytest.fail("MPI job hung for %ss:\n%s" % (timeout, ms.describe(cp)),
                        pytrace=False)
        return cp, took


def make_testbed(tmp_path_factory, hosts, per_host):
    why = namespaces_refused()
    if why:
        pytest.skip(why)
    prefix, libdir = ms.find_mpich()
    mpi = ms.Mpi(prefix, libdir)
    for prog in ("arrays/heat", "bench/mpi/mpiio_bench"):
        if not (BUILD / prog).exists():
            ms.require_or_skip("%s is not built (./quickstart build)" % prog)
    tb = TestBed(tmp_path_factory.mktemp("hosts"), mpi, hosts)
    try:
        tb.ctl("up", "-H", hosts, "-s", per_host, "--prefix",
               "gt%s" % uuid.uuid4().hex[:6])
        yield tb
    finally:
        tb.ctl("down", check=False)


@pytest.fixture(scope="module")
def testbed(tmp_path_factory):
    """3 hosts, one server each."""
    yield from make_testbed(tmp_path_factory, 3, 1)


@pytest.fixture(scope="module")
def testbed2x2(tmp_path_factory):
    """2 hosts, two servers each (servers 0, 1 on host 0; 2, 3 on host 1)."""
    yield from make_testbed(tmp_path_factory, 2, 2)


@pytest.fixture(scope="module")
def probe(testbed, tmp_path_factory):
    """hosts-tests/src/fault_probe.c built with our mpicc."""
    d = tmp_path_factory.mktemp("bin")
    return ms.compile_c(testbed.mpi.mpicc, [HERE / "src" / "fault_probe.c"],
                        d / "fault_probe", testbed.mpi.env(), ["-Wall"])
