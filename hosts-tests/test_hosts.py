"""Servers on separate hosts: three network-namespace hosts, one galleyd
and two MPI ranks each (tools/galley-hosts).

- the checkpointing heat solver with galley_layout=local: every byte is
  written by a server on the writer's own host (the servers' own
  counters), and a restart on another process count ends bit-identical
  to an uninterrupted run; the same job striped does write remotely (so
  the counters can tell);
- mpiio_bench with local beside striped in one run;
- ROMIO's ufs driver through `galley exec` on ranks of three hosts:
  independent strided writes under fcntl locks keep every record;
- one host's server killed, or its link cut: every rank of an MPI job on
  the other hosts gets MPI_ERR_IO within the timeout (src/fault_probe.c);
  afterwards, acknowledged data is intact and jobs run again.
"""

import re
import subprocess
import time

import pytest

from conftest import BUILD, HOSTS_SCRIPT, ms

HEAT = BUILD / "arrays" / "heat"
BENCH = BUILD / "bench" / "mpi" / "mpiio_bench"
# 240 x 240 on a 6 x 1 grid: every rank owns 40 whole rows, and a block of
# 960 bytes (a row of K, half a row of T) never spans two ranks.
HEAT_ARGS = ["-n", 240, "--grid", "6x1", "--ckpt-every", 20, "--ts-every", 10]
LOCAL = ["--hint", "galley_layout=local", "--hint", "striping_unit=960"]
TIMEOUT_S = 5


def heat(tb, n, path, steps, *extra, grid=None, check=True):
    args = ["-n", 240, "--ckpt-every", 20, "--ts-every", 10,
            "--grid", grid or "%dx1" % n, "--path", path, "--steps", steps]
    cp, took = tb.mpiexec(n, 2, [HEAT] + [str(a) for a in args + list(extra)])
    if check:
        assert cp.returncode == 0, ms.describe(cp)
    return cp, took


def delta(after, before):
    return [(a[0] - b[0], a[1] - b[1]) for a, b in zip(after, before)]


def test_heat_local_layout_across_hosts(testbed, tmp_path):
    tb = testbed
    before = tb.iostat()
    heat(tb, 6, "galley:/hosts/loc", 40, *LOCAL)
    d = delta(tb.iostat(), before)
    assert all(remote == 0 for _, remote in d), d     # zero remote bytes
    assert all(local > 0 for local, _ in d), d        # every host wrote

    # every host holds a third of the checkpoint's blocks
    st = tb.galley(2, "stat", "/hosts/loc.ckpt.T.0").stdout
    per = [int(x) for x in re.findall(r"^  server \d+ \(.*\): (\d+) blocks$",
                                      st, re.M)]
    assert per == [160, 160, 160], st

    # the same job with a template (the paper's reuse of a distribution):
    # its files are created with the checkpoint T's placement.  (Every data
    # file gets it, K's too, whose rows are half as long: K's blocks then
    # sit on other hosts than their writers -- a template is only as good
    # as the match between the files.)
    heat(tb, 6, "galley:/hosts/tpl", 20, "--hint",
         "galley_layout=template:/hosts/loc.ckpt.T.0")
    st = tb.galley(0, "stat", "/hosts/tpl.ckpt.T.0").stdout
    assert "layout:    local, unit 960" in st, st
    assert re.findall(r"^  server \d+ \(.*\): (\d+) blocks$", st, re.M) == \
        ["160", "160", "160"], st

    # restart on 4 processes (hosts 0 and 1) from step 40 to 60 ...
    cp, _ = heat(tb, 4, "galley:/hosts/loc", 60, "--restart", *LOCAL,
                 "--dump", tmp_path / "restarted")
    assert "restart found at step 40" in cp.stdout, ms.describe(cp)
    # ... equals an uninterrupted striped run of 60 steps, which does
    # write to other hosts' servers
    before = tb.iostat()
    heat(tb, 6, "galley:/hosts/ref", 60, "--dump", tmp_path / "ref")
    d = delta(tb.iostat(), before)
    assert sum(remote for _, remote in d) > 0, d
    assert (tmp_path / "restarted").read_bytes() == \
        (tmp_path / "ref").read_bytes()

    # `galley get` on a host reads blocks of every host
    out = tb.galley(1, "get", "/hosts/loc.ckpt.T.0", tmp_path / "T0")
    assert (tmp_path / "T0").stat().st_size == 240 * 240 * 8, out


def test_mpiio_bench_local_beside_striped(testbed, tmp_path):
    cp, _ = testbed.mpiexec(6, 2, [BENCH, "-g", "galley:/hosts/bench-local",
                                   "-u", "galley:/hosts/bench-striped",
                                   "-l", "local", "-s", 1 << 20, "-r", 1,
                                   "-p", "segmented"])
    assert cp.returncode == 0, ms.describe(cp)
    assert "galley_layout=local" in cp.stdout
    rows = [l for l in cp.stdout.splitlines() if l.startswith("N-1 segmented")]
    assert len(rows) == 2, cp.stdout
    print(cp.stdout)


REF_SIZE = 777777


def write_reference(tb, tmp_path, name):
    src = tmp_path / "ref.bin"
    src.write_bytes(bytes((i * 13 + i // 777) & 0xFF for i in range(REF_SIZE)))
    tb.galley(0, "put", src, name, "-u", "4K")  # on all three servers
    return src


def judge_probe(cp, calls):
    """Every rank reported MPI_ERR_IO from one of `calls` within the
    timeout (plus a little); returns the slowest report."""
    seen = re.findall(r"^rank (\d): (\w+) failed after ([\d.]+) s: "
                      r"class (\d+) \(MPI_ERR_IO=(\d+)\)", cp.stdout, re.M)
    assert sorted(int(r[0]) for r in seen) == [0, 1, 2, 3], ms.describe(cp)
    for rank, call, secs, cls, io in seen:
        assert call in calls and cls == io, ms.describe(cp)
        assert float(secs) <= TIMEOUT_S + 3, ms.describe(cp)
    return max(float(r[2]) for r in seen)


def probe_job(tb, probe, name, break_it, tmp_path):
    """Ranks on hosts 0 and 1 open `name` (1/3 of it on server 2), then
    break_it() runs, then they read it all."""
    sync = tmp_path / "sync"
    sync.mkdir()
    cmd = ["python3", str(HOSTS_SCRIPT), "mpiexec", "--dir", str(tb.dir),
           "--ppn", "2", "-n", "4", str(probe), "galley:" + name,
           str(REF_SIZE), str(sync)]
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True,
                         env=dict(tb.env, GALLEY_TIMEOUT=str(TIMEOUT_S)))
    try:
        end = time.monotonic() + 60
        while len(list(sync.glob("opened.*"))) < 4:
            assert p.poll() is None and time.monotonic() < end, \
                "the job did not open %s: %s" % (name, p.communicate())
            time.sleep(0.05)
        break_it()
    finally:
        (sync / "go").touch()
    out, err, hung = ms.communicate_or_kill(p, 120)
    cp = subprocess.CompletedProcess(cmd, p.returncode, out, err)
    assert not hung and cp.returncode == 0, ms.describe(cp)
    return cp


def test_server_killed(testbed, probe, tmp_path):
    tb = testbed
    src = write_reference(tb, tmp_path, "/hosts/kill-ref")
    try:
        # killed while the job has the file open: the reads fail
        cp = probe_job(tb, probe, "/hosts/kill-ref",
                       lambda: tb.ctl("kill-server", 2), tmp_path)
        took = judge_probe(cp, ("read",))
        print("server killed mid-job: MPI_ERR_IO after at most %.2f s\n%s"
              % (took, cp.stdout))
        # a job started now fails at open
        cp, _ = tb.mpiexec(4, 2, [probe, "galley:/hosts/kill-ref", REF_SIZE],
                           env={"GALLEY_TIMEOUT": str(TIMEOUT_S)}, timeout=120)
        judge_probe(cp, ("open",))
    finally:
        tb.ctl("restart-server", 2)
    tb.galley(1, "get", "/hosts/kill-ref", tmp_path / "back")
    assert (tmp_path / "back").read_bytes() == src.read_bytes()
    heat(tb, 4, "galley:/hosts/kill-job", 20, grid="4x1")


def test_host_cut_off(testbed, probe, tmp_path):
    tb = testbed
    src = write_reference(tb, tmp_path, "/hosts/link-ref")
    try:
        cp = probe_job(tb, probe, "/hosts/link-ref",
                       lambda: tb.ctl("link", 2, "down"), tmp_path)
        took = judge_probe(cp, ("read",))
        print("link down mid-job: MPI_ERR_IO after at most %.2f s\n%s"
              % (took, cp.stdout))
        assert took >= TIMEOUT_S - 1  # a silent host is only a timeout
    finally:
        tb.ctl("link", 2, "up")
    tb.galley(0, "get", "/hosts/link-ref", tmp_path / "back")
    assert (tmp_path / "back").read_bytes() == src.read_bytes()
    heat(tb, 4, "galley:/hosts/link-job", 20, grid="4x1")


def test_preload_locks_across_hosts(testbed, tmp_path):
    """ROMIO's ufs driver on every rank through `galley exec` (ranks on
    three hosts, each with its own connections to every server): its
    independent strided writes are read-modify-writes under fcntl locks,
    which only the servers' POSIX locks can make exclusive across hosts.
    Every record of every rank arrives (posix-tests/helpers/mpi_records.c,
    checked through `galley get`)."""
    tb = testbed
    prog = ms.compile_c(tb.mpi.mpicc,
                        [ms.REPO / "posix-tests" / "helpers" / "mpi_records.c"],
                        tmp_path / "mpi_records", tb.mpi.env(), ["-Wall"])
    mapped = tmp_path / "mapped"   # ROMIO statfs's the directory
    mapped.mkdir()
    rounds, rec, n = 8, 16, 6
    cp, _ = tb.mpiexec(n, 2, [ms.gt.galley_path(), "-c", tb.cluster_file,
                              "exec", "-m", "%s=/plk" % mapped, "--", prog,
                              mapped / "rec", rec, rounds])
    assert cp.returncode == 0 and "No Errors" in cp.stdout, ms.describe(cp)
    assert list(mapped.iterdir()) == []
    out = tmp_path / "got"
    tb.galley(0, "get", "/plk/rec", out)
    nrec = 64 * rounds * n
    assert out.read_bytes() == bytes(((k * 7 + i) & 0xff)
                                     for k in range(nrec) for i in range(rec))
