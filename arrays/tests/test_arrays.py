"""Tests of the Panda-style array library (arrays/) on real Galley servers
through our MPICH (ROMIO with the galley: driver).

What runs: the layout/schema unit test (no MPI), then MPI programs under
our mpiexec against a 4-server cluster started by tools/galley-cluster:
t_arrays (schema round trip, timestep append and read back with other
process counts and distributions, checkpoint/restart, crash points,
errors), and the heat solver (killed mid-run and mid-checkpoint, restarted
with the same and with other process counts, final field compared bit for
bit with an uninterrupted run).

The programs are brought up to date first in the configured build
(GALLEY_BUILD/arrays, compiled by our mpicc; see arrays/Makefile.am).  The
module is skipped, saying why, only when our MPICH is not built and
GALLEY_REQUIRE_MPI is unset; with GALLEY_REQUIRE_MPI set it fails instead.
"""

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
BUILD = Path(os.environ.get("GALLEY_BUILD", REPO / "_build"))
ABUILD = BUILD / "arrays"
LS = HERE.parent / "galley-array-ls"
PREFIX = Path(os.environ.get("GALLEY_PREFIX", REPO / "_prefix"))

# The project's cluster fixtures (tests/conftest.py), loaded as a module so
# that the servers are started and stopped the same way everywhere.
_spec = importlib.util.spec_from_file_location(
    "galley_test_fixtures", REPO / "tests" / "conftest.py")
gfix = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gfix)

TIMEOUT = 300  # seconds for one MPI program run: a hang is a failure


def mpich_prefix():
    try:
        out = subprocess.run([str(REPO / "mpich" / "build-mpich.sh"),
                              "--print-prefix"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    p = out.stdout.strip()
    if out.returncode == 0 and p and (Path(p) / "bin" / "mpiexec").is_file() \
            and (Path(p) / "bin" / "mpicc").is_file():
        return Path(p)
    return None


MPICH = mpich_prefix()
if MPICH is None:
    if os.environ.get("GALLEY_REQUIRE_MPI"):
        raise RuntimeError(
            "GALLEY_REQUIRE_MPI is set but our MPICH is not built "
            "(mpich/build-mpich.sh --print-prefix has no bin/mpiexec): "
            "run ./quickstart build")
    pytest.skip("our MPICH (with the galley: ROMIO driver) is not built: run "
                "./quickstart build (set GALLEY_REQUIRE_MPI=1 to fail instead)",
                allow_module_level=True)


def mpi_env(cluster=None, extra=None):
    env = gfix.base_env(extra)
    ld = [str(PREFIX / "lib"), str(MPICH / "lib")]
    if env.get("LD_LIBRARY_PATH"):
        ld.append(env["LD_LIBRARY_PATH"])
    env["LD_LIBRARY_PATH"] = ":".join(ld)
    env["PATH"] = str(MPICH / "bin") + ":" + env.get("PATH", "")
    env.pop("GALLEY_ARRAY_CRASH", None)
    if cluster is not None:
        env["GALLEY_CLUSTER"] = str(cluster.cluster_file)
    if extra:
        env.update(extra)
    return env


@pytest.fixture(scope="module")
def built():
    """Bring the configured build of arrays/ up to date (quick when it is):
    the MPI programs in GALLEY_BUILD/arrays, built with our mpicc, and the
    unit test t_layout of the top-level build."""
    for cmd in (["make", "-s", "-C", str(BUILD), "arrays/t_layout"],
                ["make", "-s", "-C", str(ABUILD)]):
        cp = subprocess.run(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=600)
        assert cp.returncode == 0, "%s failed:\n%s" % (" ".join(cmd),
                                                        cp.stdout)
    missing = [p for p in ("heat", "t_arrays", "t_layout")
               if not (ABUILD / p).is_file()]
    assert not missing, (
        "%s not built in %s: configure found no mpicc of our MPICH "
        "(./quickstart build configures it)" % (", ".join(missing), ABUILD))
    return ABUILD


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = gfix.Cluster(tmp_path_factory.mktemp("arrays-cluster"), n=4).start()
    yield c
    c.check_alive()
    gfix._teardown(c)


@pytest.fixture
def name():
    """A unique galley: name prefix for one test."""
    return "/arrays-test/%s" % uuid.uuid4().hex[:10]


def mpirun(n, prog, *args, cluster=None, env=None, check=True,
           timeout=TIMEOUT):
    cmd = [str(MPICH / "bin" / "mpiexec"), "-n", str(n), str(prog)] + \
        [str(a) for a in args]
    cp = gfix.run(cmd, env=mpi_env(cluster, env), timeout=timeout)
    if check:
        assert cp.returncode == 0, gfix.describe(cp)
    return cp


def t_arrays(built, n, scenario, cluster=None, env=None, check=True, **kw):
    args = [scenario] + ["%s=%s" % (k, v) for k, v in kw.items()]
    cp = mpirun(n, built / "t_arrays", *args, cluster=cluster, env=env,
                check=False)
    if check:
        assert cp.returncode == 0 and re.search(r"^PASS \d+ checks$",
                                                cp.stdout, re.M), \
            gfix.describe(cp)
    return cp


def array_ls(cluster, *groups, check=True):
    cmd = [sys.executable, str(LS), "--json", "-v",
           "--galley", gfix.galley_path()]
    if cluster is not None:
        cmd += ["-c", str(cluster.cluster_file)]
    cp = gfix.run(cmd + list(groups), env=mpi_env(cluster))
    if check:
        assert cp.returncode == 0, gfix.describe(cp)
        return [json.loads(l) for l in cp.stdout.splitlines()]
    return cp


# ----------------------------------------------------------- unit ------

def test_layout_unit(built):
    cp = gfix.run([str(built / "t_layout")])
    assert cp.returncode == 0 and re.search(r"^PASS \d+ checks$", cp.stdout,
                                            re.M), gfix.describe(cp)


# ------------------------------------------------------- t_arrays ------

def test_schema_round_trip(built, cluster, name):
    """What the library writes is what galley-array-ls reads back, and the
    disk layout became the file's striping."""
    path = "galley:" + name + "/ts"
    t_arrays(built, 4, "write-ts", cluster, path=path, mem="BLOCK,BLOCK",
             disk="BLOCK,*@4", dims="64x48", esize=8, steps=3, ghost=1)
    (g,) = array_ls(cluster, path)
    assert g["kind"] == "timestep" and g["steps"] == [0, 10, 20]
    assert g["problems"] == []
    a, b = g["arrays"]
    assert (a["name"], a["rank"], a["dims"], a["esize"]) == ("A", 2, [64, 48], 8)
    assert a["mem"] == "BLOCK,BLOCK@2x2" and a["disk"] == "BLOCK,*@4x1"
    assert a["chunks"] == 4 and a["slot"] == 16 * 48 * 8
    assert (b["name"], b["dims"], b["esize"], b["disk"]) == \
        ("B", [1000], 4, "BLOCK@3")
    # (BLOCK,*) over 4 chunks = 4 subfiles with a one-chunk stripe unit:
    # every subfile holds one chunk of each of the 3 timesteps
    st = cluster.galley("stat", name + "/ts.A", check=True).stdout
    assert "subfiles:  4" in st and "unit %d, fork data" % a["slot"] in st, st
    forks = re.findall(r"fork data\s+(\d+) bytes", st)
    assert forks == [str(3 * a["slot"])] * 4, st
    sch = cluster.galley("stat", name + "/ts.schema", check=True).stdout
    assert "subfiles:  1" in sch and "fork schema" in sch, sch
    # the text form
    cp = gfix.run([sys.executable, str(LS), "--galley", gfix.galley_path(),
                   "-c", str(cluster.cluster_file), path])
    assert cp.returncode == 0, gfix.describe(cp)
    assert "timestep group, 2 arrays" in cp.stdout
    assert re.search(r"A\s+8\s+64x48\s+BLOCK,BLOCK@2x2\s+BLOCK,\*@4x1\s+4",
                     cp.stdout), cp.stdout
    # and a missing group is a clear error
    cp = array_ls(cluster, "galley:" + name + "/nothing", check=False)
    assert cp.returncode == 1 and "no array group" in cp.stderr, \
        gfix.describe(cp)


@pytest.mark.parametrize("wn,wmem,disk,rn,rmem,dims,esize", [
    # Panda's case: (BLOCK,BLOCK) in memory, (BLOCK,*) on 4 disks; read
    # back by 3 processes with a cyclic distribution and wider ghosts
    (4, "BLOCK,BLOCK", "BLOCK,*@4", 3, "CYCLIC(3),BLOCK", "64x48", 8),
    # cyclic on disk, odd element size, fewer readers
    (2, "CYCLIC(2),*", "CYCLIC(3),BLOCK@2x2", 4, "BLOCK,*", "33x17", 3),
    # (*,*) memory (rank 0 holds it all) to (*,BLOCK) readers
    (4, "*,*", "*,BLOCK@3", 2, "*,BLOCK", "40x30", 12),
    # 3-D
    (3, "BLOCK,*,CYCLIC", "*,BLOCK,CYCLIC(2)@1x2x2", 4, "BLOCK,BLOCK,*",
     "7x9x11", 5),
], ids=["block-block", "cyclic-disk", "star-star", "3d"])
def test_timestep_append_and_read_back(built, cluster, name, wn, wmem, disk,
                                       rn, rmem, dims, esize):
    path = "galley:" + name + "/ts"
    t_arrays(built, wn, "write-ts", cluster, path=path, mem=wmem, disk=disk,
             dims=dims, esize=esize, steps=3, ghost=1)
    # another process count and distribution reads every step, appends
    # one, reads it, rewinds it away and reopens
    t_arrays(built, rn, "read-ts", cluster, path=path, mem=rmem, dims=dims,
             esize=esize, steps=3, ghost=2)
    (g,) = array_ls(cluster, path)
    assert g["steps"] == [0, 10, 20] and g["problems"] == []


def test_timestep_on_ufs(built, tmp_path):
    """The library is plain MPI-IO: the same on a local directory."""
    path = "ufs:%s/ts" % tmp_path
    t_arrays(built, 4, "write-ts", path=path, mem="BLOCK,BLOCK",
             disk="BLOCK,*@4", dims="64x48", esize=8, steps=2)
    t_arrays(built, 3, "read-ts", path=path, mem="*,CYCLIC(4)",
             dims="64x48", esize=8, steps=2)
    (g,) = array_ls(None, path)
    assert g["steps"] == [0, 10] and g["problems"] == []


@pytest.mark.parametrize("rn,rmem", [
    (4, "BLOCK,BLOCK"),        # same processes, same distribution
    (3, "CYCLIC(2),*"),        # another count and distribution
    (1, "*,*"),                # one process
], ids=["same", "3-cyclic", "1-star"])
def test_checkpoint_restart(built, cluster, name, rn, rmem):
    path = "galley:" + name + "/ck"
    cp = t_arrays(built, 4, "write-ckpt", cluster, path=path,
                  mem="BLOCK,BLOCK", disk="BLOCK,*@4", dims="64x48", esize=8,
                  count=3)
    assert re.findall(r"checkpoint (\d+) copy (\d)", cp.stdout) == \
        [("100", "0"), ("200", "1"), ("300", "0")]
    (g,) = array_ls(cluster, path)
    assert g["newest"] == 0 and g["problems"] == []
    assert [(c["state"], c.get("step")) for c in g["copies"]] == \
        [("complete", 300), ("complete", 200)]
    cp = t_arrays(built, rn, "restart", cluster, path=path, mem=rmem,
                  disk="BLOCK,*@4", dims="64x48", esize=8, expect=300,
                  ghost=1)
    assert "restart step 300 copy 0" in cp.stdout


@pytest.mark.parametrize("point,expect_step,state", [
    ("copynum", 100, "being written (incomplete)"),
    ("data", 100, "being written (incomplete)"),
])
def test_crash_inside_checkpoint(built, cluster, name, point, expect_step,
                                 state):
    """Rank 0 dies inside the 2nd checkpoint (after the data and its sync,
    before the copynum record; or after the first array's data): the 1st
    checkpoint stays the newest and restarts read it."""
    path = "galley:" + name + "/ck"
    cp = t_arrays(built, 4, "write-ckpt", cluster, check=False,
                  env={"GALLEY_ARRAY_CRASH": "%s:2" % point}, path=path,
                  mem="BLOCK,BLOCK", disk="BLOCK,*@4", dims="64x48", esize=8,
                  count=3)
    assert cp.returncode != 0 and "GALLEY_ARRAY_CRASH" in cp.stderr, \
        gfix.describe(cp)
    assert "checkpoint 200" not in cp.stdout
    (g,) = array_ls(cluster, path)
    assert g["newest"] == 0 and g["copies"][1]["state"] == state
    for rn, rmem in ((4, "BLOCK,BLOCK"), (2, "*,BLOCK")):
        t_arrays(built, rn, "restart", cluster, path=path, mem=rmem,
                 dims="64x48", esize=8, expect=expect_step)
    # a later run continues the checkpoint: copy 1 is overwritten, copy 0
    # (the good one) is not touched until copy 1 is complete
    t_arrays(built, 2, "write-ckpt", cluster, path=path, mem="BLOCK,*",
             disk="*,*", dims="64x48", esize=8, count=1, append=1, first=7)
    (g,) = array_ls(cluster, path)
    assert g["newest"] == 1 and g["copies"][1]["step"] == 700
    t_arrays(built, 3, "restart", cluster, path=path, mem="BLOCK,BLOCK@3x1",
             dims="64x48", esize=8, expect=700)


def test_errors(built, cluster, name):
    cp = t_arrays(built, 3, "errors", cluster, path="galley:" + name + "/e")
    assert "holds a timestep group, not a checkpoint group" in cp.stdout
    assert "malformed schema record" in cp.stdout


def test_export(built, cluster, name, tmp_path):
    t_arrays(built, 4, "export", cluster, path="galley:" + name + "/x",
             mem="BLOCK,CYCLIC", dims="30x20", esize=4)
    t_arrays(built, 3, "export", path="ufs:%s/x" % tmp_path,
             mem="CYCLIC(4),BLOCK", dims="30x20", esize=4)


# ----------------------------------------------------------- heat ------

HEAT = dict(n=96, steps=60, ckpt=10, ts=10)


def heat_args(path, dump=None, restart=False, grid=None, delay=0):
    a = ["--path", path, "-n", HEAT["n"], "--steps", HEAT["steps"],
         "--ckpt-every", HEAT["ckpt"], "--ts-every", HEAT["ts"]]
    if restart:
        a.append("--restart")
    if grid:
        a += ["--grid", grid]
    if dump:
        a += ["--dump", dump]
    if delay:
        a += ["--delay", delay]
    return [str(x) for x in a]


def final_checksum(out):
    m = re.search(r"^final checksum ([0-9a-f]{16}) after (\d+) steps",
                  out, re.M)
    assert m, out
    return m.group(1)


@pytest.fixture(scope="module")
def reference(built, cluster, tmp_path_factory):
    """An uninterrupted run on galley (4 processes): checksum and field."""
    d = tmp_path_factory.mktemp("heat-ref")
    name = "/arrays-test/heat-ref-%s" % uuid.uuid4().hex[:8]
    cp = mpirun(4, built / "heat", *heat_args("galley:" + name,
                                              dump=d / "ref.raw"),
                cluster=cluster)
    assert "checkpoint written at step 60 (copy 1)" in cp.stdout, cp.stdout
    # the field does not depend on the decomposition: 1 process, no I/O
    cp1 = mpirun(1, built / "heat", "--path", "ufs:%s/one" % d, "-n",
                 HEAT["n"], "--steps", HEAT["steps"], "--ckpt-every", 0,
                 "--ts-every", 0, "--dump", d / "one.raw")
    assert final_checksum(cp1.stdout) == final_checksum(cp.stdout)
    raw = (d / "ref.raw").read_bytes()
    assert raw == (d / "one.raw").read_bytes()
    assert len(raw) == HEAT["n"] ** 2 * 8
    return final_checksum(cp.stdout), raw


def alive_pids(tag):
    """Processes (ours) whose command line contains tag."""
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ")
            stat = (p / "stat").read_text()
        except OSError:
            continue
        if tag.encode() in cmd and stat[stat.rindex(")") + 2] not in "ZX":
            out.append(int(p.name))
    return out


def run_and_kill(built, cluster, path, after_line, n=4):
    """Start heat (slowed down) in its own process group, wait for a line,
    then SIGKILL the mpiexec process group and wait until every rank of it
    is gone."""
    cmd = [str(MPICH / "bin" / "mpiexec"), "-n", str(n),
           str(built / "heat")] + heat_args(path, delay=150)
    proc = subprocess.Popen(cmd, env=mpi_env(cluster), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    reader = gfix.LineReader(proc)
    seen = []
    try:
        end = time.monotonic() + TIMEOUT
        while time.monotonic() < end:
            line = reader.next(timeout=max(0.1, end - time.monotonic()))
            if line is None:
                break
            seen.append(line)
            if after_line in line:
                break
        assert any(after_line in l for l in seen), \
            "heat ended before '%s':\n%s%s" % (after_line, "".join(seen),
                                                proc.stderr.read())
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
    # hydra's proxy and the ranks run in sessions of their own: they go
    # when mpiexec's connections close; wait for that (then make sure)
    tag = path
    end = time.monotonic() + 30
    while alive_pids(tag) and time.monotonic() < end:
        time.sleep(0.2)
    left = alive_pids(tag)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, "ranks outlived the killed mpiexec: %s" % left
    return "".join(seen)


def restart_and_compare(built, cluster, path, tmp_path, reference, n, grid,
                        expect_step):
    dump = tmp_path / ("restart-%d.raw" % n)
    cp = mpirun(n, built / "heat", *heat_args(path, dump=dump, restart=True,
                                              grid=grid), cluster=cluster)
    m = re.search(r"^restart found at step (\d+)", cp.stdout, re.M)
    assert m, cp.stdout
    if expect_step is not None:
        assert int(m.group(1)) == expect_step, cp.stdout
    assert final_checksum(cp.stdout) == reference[0], cp.stdout
    assert dump.read_bytes() == reference[1], "final field differs"
    return int(m.group(1))


@pytest.mark.parametrize("n,grid", [(4, None), (3, "3x1"), (2, "1x2")],
                         ids=["same-4", "3x1", "1x2"])
def test_heat_killed_mid_run(built, cluster, reference, tmp_path, n, grid):
    """SIGKILL the whole job after its 2nd checkpoint, restart with n
    processes: the final field is bit-identical to the uninterrupted run,
    and the timesteps written after the checkpoint were rewound and
    rewritten."""
    path = "galley:/arrays-test/heat-kill-%s" % uuid.uuid4().hex[:8]
    out = run_and_kill(built, cluster, path, "checkpoint written at step 20")
    assert "final checksum" not in out
    (g,) = array_ls(cluster, path + ".ckpt")
    assert g["copies"][g["newest"]]["step"] >= 20
    step = restart_and_compare(built, cluster, path, tmp_path, reference, n,
                               grid, None)
    assert step >= 20
    (ts,) = array_ls(cluster, path + ".ts")
    assert ts["steps"] == list(range(10, 61, 10)) and ts["problems"] == []


@pytest.mark.parametrize("n,grid", [(4, None), (2, "2x1")],
                         ids=["same-4", "2x1"])
def test_heat_crash_mid_checkpoint(built, cluster, reference, tmp_path, n,
                                   grid):
    """Rank 0 _exits inside the 3rd checkpoint (step 30) after the copy's
    data is written and synced, before its copynum record: the job dies,
    the checkpoint of step 20 is the newest complete one, and a restart
    from it ends bit-identical to the uninterrupted run."""
    path = "galley:/arrays-test/heat-crash-%s" % uuid.uuid4().hex[:8]
    cp = mpirun(4, built / "heat", *heat_args(path), cluster=cluster,
                env={"GALLEY_ARRAY_CRASH": "copynum:3"}, check=False)
    assert cp.returncode != 0, gfix.describe(cp)
    assert "checkpoint written at step 20" in cp.stdout
    assert "checkpoint written at step 30" not in cp.stdout
    assert "before the copynum record" in cp.stderr, gfix.describe(cp)
    (g,) = array_ls(cluster, path + ".ckpt")
    assert g["newest"] == 1 and g["copies"][1]["step"] == 20
    assert g["copies"][0]["state"] == "being written (incomplete)"
    restart_and_compare(built, cluster, path, tmp_path, reference, n, grid, 20)


def test_heat_on_ufs(built, reference, tmp_path):
    """The same job on a local directory, killed by a crash point and
    restarted, ends with the same field."""
    path = "ufs:%s/heat" % tmp_path
    cp = mpirun(2, built / "heat", *heat_args(path),
                env={"GALLEY_ARRAY_CRASH": "data:4"}, check=False)
    assert cp.returncode != 0 and "checkpoint written at step 30" in cp.stdout
    restart_and_compare(built, None, path, tmp_path, reference, 4, None, 30)


@pytest.mark.parametrize("hints", [
    ["galley_checksum=crc32c"],
    ["galley_replicas=2"],
    ["galley_replicas=2", "galley_checksum=crc32c"],
], ids=["crc32c", "r2", "r2-crc32c"])
def test_heat_checksummed(built, cluster, reference, tmp_path, hints):
    """The heat job on checksummed files (hint galley_checksum=crc32c, so
    every byte moves and is stored with CRC32C), on files of two copies
    (galley_replicas=2), and both: a crash inside the 4th checkpoint, a
    restart on 3 processes, and the final field bit-identical to the
    reference; its files are checksummed and scrub clean, or of two
    copies, both in sync."""
    name = "/arrays-test/heat-csum-%s" % uuid.uuid4().hex[:8]
    path = "galley:" + name
    hint = [a for h in hints for a in ("--hint", h)]
    csum = "galley_checksum=crc32c" in hints
    repl = "galley_replicas=2" in hints
    cp = mpirun(4, built / "heat", *(heat_args(path) + hint), cluster=cluster,
                env={"GALLEY_ARRAY_CRASH": "data:4"}, check=False)
    assert cp.returncode != 0 and "checkpoint written at step 30" in cp.stdout
    dump = tmp_path / "csum.raw"
    cp = mpirun(3, built / "heat",
                *(heat_args(path, dump=dump, restart=True) + hint),
                cluster=cluster)
    assert re.search(r"^restart found at step 30", cp.stdout, re.M), cp.stdout
    assert final_checksum(cp.stdout) == reference[0], cp.stdout
    assert dump.read_bytes() == reference[1], "final field differs"
    ls = cluster.galley("ls", name)
    names = ls.stdout.split()
    assert ls.returncode == 0 and names, gfix.describe(ls)
    stats = {n: cluster.galley("stat", n).stdout for n in names}
    summed = [n for n in names if "checksum:  crc32c" in stats[n]]
    copied = [n for n in names if "copies:    2 per subfile" in stats[n]]
    # the timesteps' and the checkpoint's files
    assert len(summed) >= 2 if csum else not summed, stats
    assert len(copied) >= 2 if repl else not copied, stats
    for n in copied:
        assert "DEGRADED" not in stats[n] and " stale," not in stats[n], \
            stats[n]
    for n in summed:
        sc = cluster.galley("scrub", n)
        assert sc.returncode == 0 and " 0 failed" in sc.stdout, \
            gfix.describe(sc)


def test_heat_r2_server_killed(built, reference, tmp_path):
    """The heat job on files of two copies (galley_replicas=2) on a cluster
    of its own: a server killed -9 after the 2nd checkpoint, the job runs
    on to its end with the field bit-identical; a restart from its last
    checkpoint with that server still down is bit-identical too; restarted
    (the launcher resyncs by itself), no file stays degraded."""
    c = gfix.Cluster(tmp_path / "c", n=4).start()
    try:
        name = "/arrays-test/heat-r2-%s" % uuid.uuid4().hex[:8]
        path = "galley:" + name
        hint = ["--hint", "galley_replicas=2"]
        dump = tmp_path / "run.raw"
        cmd = [str(MPICH / "bin" / "mpiexec"), "-n", "4",
               str(built / "heat")] + heat_args(path, dump=dump,
                                                delay=150) + hint
        proc = subprocess.Popen(cmd, env=mpi_env(c), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        reader = gfix.LineReader(proc)
        seen = []
        end = time.monotonic() + TIMEOUT
        while time.monotonic() < end:
            line = reader.next(timeout=max(0.1, end - time.monotonic()))
            if line is None:
                break
            seen.append(line)
            if "checkpoint written at step 20" in line:
                break
        assert any("checkpoint written at step 20" in l for l in seen), \
            "".join(seen)
        victim = 2
        c.kill(victim)
        while time.monotonic() < end:
            line = reader.next(timeout=max(0.1, end - time.monotonic()))
            if line is None:
                break
            seen.append(line)
        rc = proc.wait(timeout=60)
        out = "".join(seen)
        assert rc == 0, out + proc.stderr.read()
        assert final_checksum(out) == reference[0], out
        assert dump.read_bytes() == reference[1], "final field differs"
        # some copy went stale with the server (else nothing was shown)
        fs = c.galley("fsck")
        assert fs.returncode == 1 and "degraded" in fs.stdout, fs.stdout
        # restart from the newest checkpoint, the server still down
        dump2 = tmp_path / "restart.raw"
        cp = mpirun(3, built / "heat",
                    *(heat_args(path, dump=dump2, restart=True) + hint),
                    cluster=c)
        assert re.search(r"^restart found at step 60", cp.stdout, re.M), \
            cp.stdout
        assert final_checksum(cp.stdout) == reference[0], cp.stdout
        assert dump2.read_bytes() == reference[1], "restart field differs"
        c.restart(victim, resync=True)
        end = time.monotonic() + TIMEOUT
        while c.galley("fsck").returncode != 0:
            assert time.monotonic() < end, c.galley("fsck").stdout
            time.sleep(0.5)
    finally:
        gfix._teardown(c)


def test_heat_restart_without_checkpoint(built, cluster, reference, tmp_path):
    path = "galley:/arrays-test/heat-none-%s" % uuid.uuid4().hex[:8]
    dump = tmp_path / "none.raw"
    cp = mpirun(3, built / "heat", *heat_args(path, dump=dump, restart=True),
                cluster=cluster)
    assert "no checkpoint found: starting at step 0" in cp.stdout
    assert final_checksum(cp.stdout) == reference[0]


# ------------------------------------------------- the installed library --
def test_installed_library_via_pkg_config(cluster, name, tmp_path):
    """A user's program (installed_ckpt.c) compiled against the INSTALLED
    libgalley_array with nothing but `pkg-config galley_array` and our
    mpicc, then run: checkpoint on 2 processes, restart another way."""
    pc_env = dict(os.environ)
    pc_env["PKG_CONFIG_PATH"] = str(PREFIX / "lib" / "pkgconfig")
    pc = subprocess.run(["pkg-config", "--cflags", "--libs", "galley_array"],
                        env=pc_env, stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True, timeout=60)
    assert pc.returncode == 0, "pkg-config galley_array: " + pc.stdout
    flags = pc.stdout.split()
    assert "-I%s" % (PREFIX / "include") in flags, flags
    assert "-L%s" % (PREFIX / "lib") in flags, flags
    assert "-lgalley_array" in flags, flags
    exe = tmp_path / "installed_ckpt"
    cc = [str(MPICH / "bin" / "mpicc"), str(HERE / "installed_ckpt.c"),
          "-o", str(exe)] + flags + ["-Wl,-rpath-link,%s" % (PREFIX / "lib")]
    cp = gfix.run(cc, env=mpi_env())
    assert cp.returncode == 0, gfix.describe(cp)
    # It uses the shared library of the prefix, not a copy of the objects.
    dyn = gfix.run(["readelf", "-d", str(exe)])
    assert "[libgalley_array.so.0]" in dyn.stdout, dyn.stdout
    cp = mpirun(2, exe, "galley:%s/installed" % name, cluster=cluster)
    assert "installed_ckpt: ok 1920 elements" in cp.stdout, gfix.describe(cp)


def test_installed_library_has_no_crash_points(built, cluster, name,
                                               tmp_path):
    """The crash points (GALLEY_ARRAY_CRASH) are compiled only into the
    test build of the library (libga, -DGA_TEST_HOOKS) that heat and
    t_arrays link: the installed libgalley_array does not contain them, and
    a user's job run with the variable set checkpoints and restarts as
    usual (the test build would exit inside that checkpoint)."""
    assert b"GALLEY_ARRAY_CRASH" in (built / "heat").read_bytes()
    lib = PREFIX / "lib" / "libgalley_array.so.0"
    assert b"GALLEY_ARRAY_CRASH" not in lib.read_bytes(), lib
    pc_env = dict(os.environ)
    pc_env["PKG_CONFIG_PATH"] = str(PREFIX / "lib" / "pkgconfig")
    pc = subprocess.run(["pkg-config", "--cflags", "--libs", "galley_array"],
                        env=pc_env, stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True, timeout=60)
    assert pc.returncode == 0, "pkg-config galley_array: " + pc.stdout
    exe = tmp_path / "installed_ckpt"
    cc = [str(MPICH / "bin" / "mpicc"), str(HERE / "installed_ckpt.c"),
          "-o", str(exe)] + pc.stdout.split() + \
        ["-Wl,-rpath-link,%s" % (PREFIX / "lib")]
    cp = gfix.run(cc, env=mpi_env())
    assert cp.returncode == 0, gfix.describe(cp)
    for point in ("data:1", "copynum:1"):
        cp = mpirun(2, exe, "galley:%s/nocrash-%s" % (name, point[0]),
                    cluster=cluster, env={"GALLEY_ARRAY_CRASH": point})
        assert "installed_ckpt: ok 1920 elements" in cp.stdout, \
            gfix.describe(cp)
        assert "GALLEY_ARRAY_CRASH" not in cp.stderr, gfix.describe(cp)


# ------------------------------------------- a server fails mid-run ------

FAULT_RESULT = re.compile(r"^RESULT rank=(\d+) ok=(\d+) rc=(-?\d+) t_err=([\d.]+) "
                          r"free=(-?\d+)$", re.M)
STOP_TIMEOUT = 3  # GALLEY_TIMEOUT of the SIGSTOP runs


@pytest.mark.parametrize("fault", ["kill", "stop"])
@pytest.mark.parametrize("kind", ["ckpt", "ts"])
def test_server_fails_under_checkpoints(built, cluster, name, tmp_path, kind, fault):
    """4 ranks write checkpoints (or timesteps) in a loop; server 1 is
    killed (or stopped past GALLEY_TIMEOUT) meanwhile.  Every rank's call
    fails, within 1 s of the kill (GALLEY_TIMEOUT + 1 s of the stop), at
    the same call; nobody hangs; the failed call's record is not written
    (a timestep's may be, when its own write was the call that failed):
    once the server is back, the newest complete checkpoint (the timestep
    count) is the last acknowledged one, and it reads back."""
    path = "galley:" + name + "/f"
    ready = tmp_path / "ready"
    gt = STOP_TIMEOUT if fault == "stop" else 60
    cmd = [str(MPICH / "bin" / "mpiexec"), "-n", "4", str(built / "t_arrays"),
           "fault-loop", "path=" + path, "kind=" + kind, "ready=%s" % ready,
           "out=%s" % (tmp_path / "result")]
    extra = {"GALLEY_TIMEOUT": str(gt)}
    if fault == "stop" and os.environ.get("GALLEY_TRANSPORT", "auto") in (
            "", "auto", "direct"):
        # same-host direct access moves data without the server: a stopped
        # server fails no data call; the stop runs are about the server path
        extra["GALLEY_TRANSPORT"] = "local"
    proc = subprocess.Popen(cmd, env=mpi_env(cluster, extra),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    victim = 1
    pid = cluster.pid(victim)
    t_fault = None
    hung = False
    with gfix.StallMeter() as meter:  # the stalls after the fault: below
        try:
            t_fault = gfix.fault_when_ready(cluster, proc, ready, fault, victim,
                                            TIMEOUT)
            try:
                out, err = proc.communicate(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                hung = True
                os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate()
        finally:
            if fault == "stop":
                os.kill(pid, signal.SIGCONT)
            elif t_fault is not None:
                end = time.monotonic() + 30
                while cluster.alive(victim) and time.monotonic() < end:
                    time.sleep(0.05)
                cluster.restart(victim)
    what = "exit %s\nstdout:\n%s\nstderr:\n%s" % (proc.returncode, out[-5000:], err[-5000:])
    assert not hung, "hung for %ss: %s" % (TIMEOUT, what)
    assert t_fault is not None, "the loop never got going: " + what
    # each rank's RESULT line from its own file (mpiexec may interleave
    # the ranks' stdout)
    lines = "".join(p.read_text() for p in sorted(tmp_path.glob("result.*")))
    res = {int(m.group(1)): m for m in FAULT_RESULT.finditer(lines)}
    assert sorted(res) == [0, 1, 2, 3], "not every rank finished: " + what
    assert all(int(m.group(3)) < 0 for m in res.values()), "a rank saw no error: " + what
    oks = {int(m.group(2)) for m in res.values()}
    assert len(oks) == 1, "ranks disagree on the calls that succeeded: " + what
    ok = oks.pop()
    t_last = max(float(m.group(4)) for m in res.values())
    late = t_last - t_fault
    # the bound is the product's: time in which the machine ran nothing
    # at all (tests/conftest.py StallMeter) is added to it
    bound = 1.0 if fault == "kill" else STOP_TIMEOUT + 1.0
    stalled = meter.stalled(t_fault, t_last)
    assert late <= bound + stalled, \
        "last error %.2f s after the fault (bound %s s, plus %.2f s in which " \
        "the machine ran nothing): %s" % (late, bound, stalled, what)
    if kind == "ckpt":
        # The failed call's copy is not the newest complete one, unless the
        # call that failed was the sync of its own record (rank 0's, after
        # the record's write): as for a timestep's record below, a change
        # that was not acknowledged may survive.  Either way the newest
        # complete checkpoint reads back.
        (g,) = array_ls(cluster, path)
        newest = g["copies"][g["newest"]]
        record = "write copynum record" in lines
        steps = (100 * ok, 100 * (ok + 1)) if record else (100 * ok,)
        assert newest["state"] == "complete" and newest["step"] in steps, (g, lines)
        other = g["copies"][1 - g["newest"]]
        assert other.get("step") != 100 * (ok + 1) or other["state"] != "complete", g
        t_arrays(built, 3, "restart", cluster, path=path, mem="BLOCK,BLOCK@3x1",
                 dims="64x48", esize=8, expect=newest["step"])
    else:
        # The failed call's step is not counted, unless the call that failed
        # was its record's own write (rank 0's, after every rank's data): a
        # change that was not acknowledged may survive (docs/durability.md),
        # as when the stopped server goes on and writes it.  Either way what
        # is counted reads back whole.
        (ts,) = array_ls(cluster, path)
        steps = len(ts["steps"])
        record = "append step record" in lines
        assert steps == ok or (record and steps == ok + 1), (ts, lines, what)
        t_arrays(built, 4, "read-ts", cluster, path=path, mem="BLOCK,BLOCK",
                 dims="64x48", esize=8, steps=steps)
    print("%s %s: %d calls acknowledged, last error %.3f s after" % (kind, fault, ok, late))


def test_server_stopped_in_the_syncs_is_waited_for_once(built, cluster, name,
                                                        tmp_path):
    """A checkpoint of two arrays syncs one after the other.  A server
    holding subfiles of both, stopped (SIGSTOP) just before the first sync
    of the 3rd checkpoint (the test build's pause point), fails it on
    every rank within GALLEY_TIMEOUT + 1 s of the stop: once the first
    array's sync failed the second is not tried (it would reconnect to the
    stopped server and wait out the timeout a second time).  Continued,
    the server serves the 2nd checkpoint as the newest complete one."""
    path = "galley:" + name + "/f"
    pause = tmp_path / "pause"
    cmd = [str(MPICH / "bin" / "mpiexec"), "-n", "4", str(built / "t_arrays"),
           "fault-loop", "path=" + path, "kind=ckpt",
           "out=%s" % (tmp_path / "result")]
    extra = {"GALLEY_TIMEOUT": str(STOP_TIMEOUT),
             "GALLEY_ARRAY_CRASH": "pause:3", "GALLEY_ARRAY_PAUSE": str(pause)}
    proc = subprocess.Popen(cmd, env=mpi_env(cluster, extra),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    pid = t_fault = None
    try:
        end = time.monotonic() + TIMEOUT
        while not pause.exists() and proc.poll() is None and time.monotonic() < end:
            time.sleep(0.005)
        if pause.exists():
            # the 3rd checkpoint writes copy 0; A is on every server, so a
            # server of B's copy 0 holds subfiles of both arrays
            st = cluster.galley("stat", name + "/f.B.0", check=True).stdout
            victim = int(re.search(r"^subfile 0: server (\d+)", st, re.M).group(1))
            pid = cluster.pause(victim)
            t_fault = time.time()
            pause.unlink()
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if pid is not None:
            os.kill(pid, signal.SIGCONT)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    what = "exit %s\nstdout:\n%s\nstderr:\n%s" % (proc.returncode, out[-5000:], err[-5000:])
    assert t_fault is not None, "the job never paused: " + what
    lines = "".join(p.read_text() for p in sorted(tmp_path.glob("result.*")))
    res = {int(m.group(1)): m for m in FAULT_RESULT.finditer(lines)}
    assert sorted(res) == [0, 1, 2, 3], "not every rank finished: " + what
    assert {int(m.group(2)) for m in res.values()} == {2}, what
    assert all(int(m.group(3)) < 0 for m in res.values()), what
    # each rank failed in the first sync, read from the ranks' own files
    assert len(re.findall(r"^ERROR rank=\d+ sync of checkpoint ", lines, re.M)) == 4, \
        lines + what
    late = max(float(m.group(4)) for m in res.values()) - t_fault
    assert STOP_TIMEOUT - 0.1 <= late <= STOP_TIMEOUT + 1.0, \
        "last error %.2f s after the stop: %s" % (late, what)
    (g,) = array_ls(cluster, path)
    newest = g["copies"][g["newest"]]
    assert newest["state"] == "complete" and newest["step"] == 200, g
