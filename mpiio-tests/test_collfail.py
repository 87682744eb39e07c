"""A collective call that fails on one rank fails on every rank.

4 ranks loop over one collective call (src/collfail.c), each rank's blocks
on its own server (striping_unit = block, galley_servers=0,1,2,3), and a
server is killed (SIGKILL) or stopped (SIGSTOP, past GALLEY_TIMEOUT) while
they run.  For every collective call and every galley_cb value:

- every rank returns an error: the rank(s) that met the fault their own,
  the others MPI_ERR_IO naming the collective failure and that rank;
- within 1 s of the kill (GALLEY_TIMEOUT + 1 s of the stop; twice the
  timeout for `sync`, whose loop makes two blocking calls in a row);
- every rank saw the same number of acknowledged calls (they agree);
- MPI_File_close completes on every rank, nothing hangs (hang bound);
- after the server is back (restarted, or continued), every acknowledged
  block reads back (`galley get`).

The stop runs take the same-host socket path (GALLEY_TRANSPORT=local) where
the default would be direct access, which does not need the server to move
data.
"""

import os
import re
import signal
import struct
import subprocess
import time

import pytest

from mpiio_support import StallMeter, communicate_or_kill, fault_when_ready

BLOCK = 65536
NPROCS = 4
PAT_XOR = 0x5bd1e995deadbeef
STOP_TIMEOUT = 3          # GALLEY_TIMEOUT of the SIGSTOP runs
HANG_BOUND = 240

CALLS = ["write_at_all", "write_all", "write_at_all_split", "write_all_split",
         "read_at_all", "read_all", "read_all_split",
         "write_ordered", "write_ordered_split", "read_ordered",
         "set_size", "sync"]
WRITES = {"write_at_all", "write_all", "write_at_all_split", "write_all_split",
          "write_ordered", "write_ordered_split", "sync"}
CBS = ["auto", "server", "two_phase"]

RESULT = re.compile(r"^RESULT rank=(\d+) acked=(\d+) class=(\S+) t_err=([\d.]+) "
                    r"close=(\S+) t_close=([\d.]+) msg=(.*)$", re.M)
COLL_MSG = re.compile(r"collective I/O call failed on rank (\d+)")


def expected_block(b):
    off = b * BLOCK
    return struct.pack("<%dQ" % (BLOCK // 8),
                       *[(off + 8 * i) ^ PAT_XOR for i in range(BLOCK // 8)])


def run_with_fault(mpi, progs, cluster, tmp_path, name, call, cb, fault, victim):
    """Run collfail with a fault on server `victim` once the loop runs;
    returns (results by rank, fault time, the StallMeter of the run, the
    run's CompletedProcess, its description)."""
    ready = tmp_path / "ready"
    gt = STOP_TIMEOUT if fault == "stop" else 60
    extra = {"GALLEY_TIMEOUT": str(gt)}
    if fault == "stop" and os.environ.get("GALLEY_TRANSPORT", "auto") in (
            "", "auto", "direct"):
        # Same-host direct access moves data without the server: a stopped
        # (not dead) server fails no data call, as a stopped NFS server
        # would not fail LOCALIO.  The stop runs are about the server path.
        extra["GALLEY_TRANSPORT"] = "local"
    env = mpi.env(cluster.cluster_file, extra)
    cmd = [str(mpi.mpiexec), "-n", str(NPROCS), str(progs["collfail"]),
           "-fname", "galley:" + name, "-call", call, "-ready", str(ready),
           "-result", str(tmp_path / "result"),
           "-block", str(BLOCK), "-warm", "8", "-hint", "galley_cb=" + cb,
           "-hint", "striping_factor=%d" % NPROCS, "-hint", "striping_unit=%d" % BLOCK,
           "-hint", "galley_servers=0,1,2,3"]
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
    pid = cluster.pid(victim)
    t_fault = None
    with StallMeter() as meter:  # the stalls after the fault: check_agreement
        try:
            t_fault = fault_when_ready(cluster, p, ready, fault, victim, 120)
            out, err, hung = communicate_or_kill(p, HANG_BOUND)
        finally:
            if fault == "stop":
                os.kill(pid, signal.SIGCONT)
            else:
                deadline = time.monotonic() + 30
                while cluster.alive(victim) and time.monotonic() < deadline:
                    time.sleep(0.05)
                if t_fault is not None:
                    cluster.restart(victim)
    cp = subprocess.CompletedProcess(cmd, p.returncode, out, err)
    what = "%s\nexit %s\nstdout:\n%s\nstderr:\n%s" % (" ".join(cmd), p.returncode,
                                                     out[-6000:], err[-6000:])
    assert not hung, "hung for %ss and was killed: %s" % (HANG_BOUND, what)
    assert t_fault is not None, "the loop never got going: " + what
    # each rank's RESULT line from its own file (mpiexec may interleave
    # the ranks' stdout)
    lines = "".join(p.read_text() for p in sorted(tmp_path.glob("result.*")))
    res = {int(m.group(1)): m for m in RESULT.finditer(lines)}
    assert sorted(res) == list(range(NPROCS)), \
        "not every rank finished (closed the file and reported): " + what
    return res, t_fault, meter, cp, what


def check_agreement(res, t_fault, bound, what, meter=None):
    """Every rank failed, soon enough, at the same call, and closed; the
    ranks that only learned of the failure name a rank that met it.
    Soon enough: within `bound` of the fault, plus the time the machine
    ran nothing at all meanwhile (meter: a StallMeter, tests/conftest.py)."""
    real = set()
    for r, m in res.items():
        assert m.group(3) != "none", "rank %d returned no error: %s" % (r, what)
        assert m.group(5) == "MPI_SUCCESS", "rank %d: close failed: %s" % (r, what)
        if not COLL_MSG.search(m.group(7)):
            real.add(r)
    assert real, "no rank reports the error itself: " + what
    for r, m in res.items():
        if r not in real:
            assert m.group(3) == "MPI_ERR_IO", what
            named = int(COLL_MSG.search(m.group(7)).group(1))
            assert named in real, "rank %d names rank %d, which did not fail: %s" \
                % (r, named, what)
    t_last = max(float(m.group(4)) for m in res.values())
    late = t_last - t_fault
    stalled = meter.stalled(t_fault, t_last) if meter else 0.0
    assert late <= bound + stalled, \
        "the last rank's error came %.2f s after the fault (bound %s s, plus %.2f s " \
        "in which the machine ran nothing): %s" % (late, bound, stalled, what)
    acked = {int(m.group(2)) for m in res.values()}
    assert len(acked) == 1, "ranks disagree on the calls that succeeded %s: %s" \
        % (sorted(acked), what)
    return acked.pop(), late


def check_acked(cluster, tmp_path, name, call, acked, what):
    """After the server is back: every acknowledged block reads back."""
    got = tmp_path / "got"
    g = cluster.galley("get", name, got)
    assert g.returncode == 0, g.stdout + g.stderr
    data = got.read_bytes()
    if call == "set_size":
        assert len(data) >= acked * NPROCS * BLOCK, what
        return
    for b in range(acked * NPROCS):
        assert data[b * BLOCK:(b + 1) * BLOCK] == expected_block(b), \
            "acknowledged block %d (of %d) does not read back: %s" % (b, acked * NPROCS, what)


def one(mpi, progs, cluster, uniq, tmp_path, call, cb, fault, victim=1):
    name = "%s/f" % uniq
    res, t_fault, meter, cp, what = run_with_fault(mpi, progs, cluster, tmp_path, name,
                                                   call, cb, fault, victim)
    bound = 1.0 if fault == "kill" else STOP_TIMEOUT + 1.0
    if fault == "stop" and call == "sync":
        # each iteration is write_at (independent) + sync, and rank 1 waits
        # out the timeout in both: its write_at, then the sync it must
        # still enter (the others' syncs wait for it in the agreement)
        bound += STOP_TIMEOUT
    acked, late = check_agreement(res, t_fault, bound, what, meter)
    assert "FAIL" not in cp.stdout, what
    if call in WRITES or call == "set_size":
        check_acked(cluster, tmp_path, name, call, acked, what)
    print("%s cb=%s %s server %d: %d calls acknowledged, last error %.3f s after" %
          (call, cb, fault, victim, acked, late))


@pytest.mark.parametrize("cb", CBS)
@pytest.mark.parametrize("call", CALLS)
def test_kill_server(mpi, progs, cluster, uniq, tmp_path, call, cb):
    one(mpi, progs, cluster, uniq, tmp_path, call, cb, "kill")


@pytest.mark.parametrize("cb", CBS)
@pytest.mark.parametrize("call", CALLS)
def test_stop_server(mpi, progs, cluster, uniq, tmp_path, call, cb):
    one(mpi, progs, cluster, uniq, tmp_path, call, cb, "stop")


@pytest.mark.parametrize("cb", CBS)
@pytest.mark.parametrize("call", ["write_ordered", "read_ordered", "write_ordered_split"])
def test_kill_shared_pointer_server(mpi, progs, cluster, uniq, tmp_path, call, cb):
    """The shared file pointer lives on the file's first server: its loss
    fails the ordered call's pointer update, the ranks still pass the
    order on and take part, and every rank returns an error."""
    one(mpi, progs, cluster, uniq, tmp_path, call, cb, "kill", victim=0)
