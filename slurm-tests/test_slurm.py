"""A per-job Galley on a real Slurm cluster (conftest.py: slurmctld, three
slurmd with 2 CPUs each, munged; every host a network namespace).

- the README's job script (examples/galley-job.sbatch) from sbatch: the
  servers as an `srun --overlap` step on the job's nodes (no host file),
  the heat solver on all 6 CPUs beside them, its newest checkpoint staged
  out; a second job stages it in and continues; the result equals one
  uninterrupted run made by the same script from salloc; each stop leaves
  every server's metadata log empty (a clean shutdown) and no galleyd;
- stop from another host (the login node) than the one that started it;
- a tree staged in and out by workers on every node (galley-stage as an
  srun step), byte-checked; a stage-out stopped by SIGTERM and resumed;
  the servers started by mpiexec (Hydra's Slurm launcher) this time, with
  per-node advertised names (%h-ib);
- the servers' step cancelled (scancel, SIGKILL): a client gets an error
  within its timeout, not a hang.
"""

import filecmp
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import REPO, ms

JOB = REPO / "examples" / "galley-job.sbatch"


def data_root(work):
    return work / "local"


def wal_sizes(work):
    """{server dir: size of its metadata log} under a job's data root."""
    out = {}
    for wal in sorted(data_root(work).glob("*/server*/wal")):
        out[str(wal.parent.relative_to(work))] = wal.stat().st_size
    return out


def example_job(slurm, work, steps, how="sbatch"):
    work.mkdir(exist_ok=True)
    env = {"GALLEY_JOB_DATA": str(data_root(work)), "GALLEY_JOB_WORK":
           str(work)}
    out = work / ("job-%s-%d.out" % (how, steps))
    if how == "sbatch":
        argv = ["sbatch", "--wait", "--chdir", work, "-o", out, JOB, steps]
    else:
        argv = ["salloc", "-N", 3, "--ntasks-per-node=2", "--chdir", work,
                "bash", "-c", "bash %s %d > %s 2>&1" % (JOB, steps, out)]
    cp = slurm.on("login", argv, timeout=400, env=env)
    text = out.read_text(errors="replace") if out.exists() else "(no output)"
    assert cp.returncode == 0, "%s\njob output:\n%s\n%s" % (
        ms.describe(cp), text, slurm.log_tail())
    return text


def test_job_script_sbatch_twice_equals_salloc_once(slurm):
    w1, w2 = slurm.dir / "w1", slurm.dir / "w2"
    text = example_job(slurm, w1, 40)
    # the servers ran as a step of the job, one per node, found without a
    # host file, and stopped cleanly
    assert re.search(r"started 3 servers through srun \(Slurm step \d+\.\d+\)",
                     text), text
    assert len(re.findall(r"server \d .*node\d .*stopped", text)) == 3, text
    assert "stopped the 3 servers" in text, text
    sizes = wal_sizes(w1)
    assert len(sizes) == 3 and set(sizes.values()) == {0}, sizes
    assert slurm.galleyds() == []
    # only the newest complete checkpoint copy was staged out
    ck = sorted(p.name for p in (w1 / "ckpt").iterdir())
    assert "heat.ckpt.schema" in ck and "heat.ckpt.copynum" in ck, ck
    copies = {n.rsplit(".", 1)[1] for n in ck if re.match(r"heat\.ckpt\.[KT]\.", n)}
    assert len(copies) == 1, ck

    # a second job: a new Galley, the checkpoint staged in, 40 more steps
    text = example_job(slurm, w1, 80)
    assert "restart found at step 40" in text, text
    assert slurm.galleyds() == []

    # one uninterrupted run of 80 steps, from salloc
    text = example_job(slurm, w2, 80, how="salloc")
    assert "restart found" not in text, text
    assert (w1 / "field.80").read_bytes() == (w2 / "field.80").read_bytes()
    assert slurm.galleyds() == []
    slurm.wait_idle()


def states(text):
    """The state column of galley-cluster's server lines."""
    return re.findall(r"^  server \d+ .*  (alive|stopped|dead.*)$", text,
                      re.M)


def alloc_script(slurm, work, body, start_args="--launcher srun"):
    """A batch script on the bed: Galley started as the README says, then
    BODY."""
    work.mkdir(exist_ok=True)
    script = work / "job.sh"
    script.write_text(
        "#!/bin/bash\nset -euo pipefail\n"
        "gdir=%s/galley\n"
        "galley-cluster start %s --dir $gdir --data-root '%s/%%h'\n"
        "export GALLEY_CLUSTER=$gdir/cluster\n%s\n" % (
            work, start_args, data_root(work), body))
    return script


def test_stop_from_the_login_node(slurm):
    w = slurm.dir / "w3"
    script = alloc_script(slurm, w, "touch %s/up\nsleep 300\n" % w)
    cp = slurm.on("login", ["sbatch", "-N", 3, "-o", w / "out", "--parsable",
                            script], check=True)
    job = cp.stdout.strip().split(";")[0]
    end = time.monotonic() + 120
    while not (w / "up").exists():
        assert time.monotonic() < end, (w / "out").read_text()
        time.sleep(0.2)
    st = slurm.on("node2", ["galley-cluster", "status", "--dir", w / "galley"])
    assert st.returncode == 0 and states(st.stdout) == ["alive"] * 3, \
        ms.describe(st)
    g = slurm.on("node1", ["galley", "-c", w / "galley" / "cluster", "ping"])
    assert g.returncode == 0, ms.describe(g)
    # stop from a host that did not start it (and is not in the job)
    cp = slurm.on("login", ["galley-cluster", "stop", "--dir", w / "galley"])
    assert cp.returncode == 0, ms.describe(cp)
    assert states(cp.stdout) == ["stopped"] * 3, cp.stdout
    assert set(wal_sizes(w).values()) == {0}, wal_sizes(w)
    assert slurm.galleyds() == []
    st = slurm.on("login", ["galley-cluster", "status", "--dir", w / "galley"])
    assert st.returncode == 1 and states(st.stdout) == ["stopped"] * 3, \
        ms.describe(st)
    slurm.on("login", ["scancel", job], check=True)
    slurm.wait_idle()


def make_tree(root):
    """Files of many sizes, nested: what a job's input looks like."""
    sizes = [0, 1, 4095, 4096, 65537, 3 << 20, (96 << 20) + 5]
    for i, n in enumerate(sizes):
        p = root / ("d%d" % (i % 3)) / ("sub%d" % (i % 2)) / ("f%d" % i)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(os.urandom(n))


def same_tree(a, b):
    fa = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    fb = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert fa == fb
    for f in fa:
        assert filecmp.cmp(a / f, b / f, shallow=False), f


def test_stage_in_and_out_over_the_nodes(slurm):
    w = slurm.dir / "w4"
    src = w / "input"
    make_tree(src)
    body = """
galley-stage --chunk 4M in %(w)s/input galley:/in/
galley-stage --chunk 4M out galley:/in/ %(w)s/output/
# a stage-out stopped by SIGTERM once some chunks are journaled, resumed
galley-stage --chunk 256K -j 1 out galley:/in/ %(w)s/output2/ > %(w)s/first.log 2>&1 &
pid=$!
for i in $(seq 600); do
    [ "$(cat %(w)s/output2.galley-stage/run.*.* 2>/dev/null | wc -l)" -ge 4 ] && break
    sleep 0.05
done
kill -TERM $pid
rc=0; wait $pid || rc=$?; echo $rc > %(w)s/first.rc
galley-stage --chunk 256K -j 1 out galley:/in/ %(w)s/output2/ > %(w)s/second.log 2>&1
galley-cluster stop --dir $gdir
""" % {"w": w}
    # the servers through Hydra this time (its proxies an srun step too),
    # each publishing its node's fast-network name
    script = alloc_script(slurm, w, body, "--launcher mpiexec "
                          "--advertise %h-ib")
    cp = slurm.on("login", ["sbatch", "--wait", "-N", 3, "-o", w / "out",
                            script], timeout=400)
    out = (w / "out").read_text(errors="replace")
    assert cp.returncode == 0, "%s\n%s" % (ms.describe(cp), out)
    names = [l.rsplit(":", 1)[0] for l in
             (w / "galley" / "cluster").read_text().split()]
    assert names == ["node0-ib", "node1-ib", "node2-ib"], names
    same_tree(src, w / "output")
    same_tree(src, w / "output2")
    first = (w / "first.rc").read_text().strip()
    second = (w / "second.log").read_text(errors="replace")
    # stopped (exit 3); the rerun took the journaled chunks as done
    assert first == "3", (w / "first.log").read_text()
    m = re.search(r"([\d.]+ \w*B) verified from the journal", second)
    assert m and not m.group(1).startswith("0 "), second
    assert set(wal_sizes(w).values()) == {0}, wal_sizes(w)
    slurm.wait_idle()


def test_servers_step_cancelled_is_an_error_not_a_hang(slurm):
    w = slurm.dir / "w5"
    body = """
galley put /etc/os-release /x
step=$(cat $gdir/server0/step)
scancel $step
sleep 2
set +e
GALLEY_TIMEOUT=5 timeout 60 galley get /x %(w)s/x.back
echo "get-rc=$?"
GALLEY_TIMEOUT=5 timeout 60 mpiexec -n 2 %(heat)s --path galley:/after --steps 4 --ckpt-every 2
echo "mpi-rc=$?"
galley-cluster status --dir $gdir
echo "status-rc=$?"
galley-cluster stop --dir $gdir
echo "stop-rc=$?"
""" % {"w": w, "heat": slurm.env["HEAT"]}
    script = alloc_script(slurm, w, body)
    t0 = time.monotonic()
    cp = slurm.on("login", ["sbatch", "--wait", "-N", 3, "-o", w / "out",
                            script], timeout=300)
    out = (w / "out").read_text(errors="replace")
    assert cp.returncode == 0, "%s\n%s" % (ms.describe(cp), out)
    rc = dict(re.findall(r"^(\w+)-rc=(\d+)$", out, re.M))
    # errors, within the timeout (124 would be `timeout` killing a hang)
    assert rc["get"] not in ("0", "124"), out
    assert rc["mpi"] not in ("0", "124"), out
    assert rc["status"] == "1" and len(re.findall(
        r"^  server \d .*  dead", out, re.M)) >= 3, out
    assert rc["stop"] == "1", out        # says the servers did not stop clean
    assert slurm.galleyds() == []
    assert time.monotonic() - t0 < 200
    slurm.wait_idle()
