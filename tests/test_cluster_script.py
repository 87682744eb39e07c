"""tools/galley-cluster: start, status, stop, restart, launcher mode."""

import os
import re
import signal
import socket
import sys
from pathlib import Path

from conftest import (CLUSTER_SCRIPT, Cluster, base_env, describe,
                      galleyd_path, run)


def script(*args, env=None, timeout=120):
    e = base_env(env)
    return run([sys.executable, str(CLUSTER_SCRIPT)] + [str(a) for a in args],
               env=e, timeout=timeout)


def test_start_writes_cluster_file_and_servers_answer(fresh_cluster):
    c = fresh_cluster
    addrs = c.addrs()
    assert len(addrs) == 4
    for i, a in enumerate(addrs):
        host, _, port = a.rpartition(":")
        assert host == "127.0.0.1" and 0 < int(port) < 65536
        assert (c.dir / ("server%d" % i)).is_dir()
        assert c.alive(i)
        with socket.create_connection((host, int(port)), timeout=5):
            pass
    assert len(set(addrs)) == 4
    cp = c.galley("ping")
    assert cp.returncode == 0, describe(cp)
    st = c.status()
    assert st.returncode == 0, describe(st)
    assert len(re.findall(r"^  server \d .* alive$", st.stdout, re.M)) == 4


def test_start_again_is_a_no_op(fresh_cluster):
    c = fresh_cluster
    pids = [c.pid(i) for i in range(4)]
    addrs = c.addrs()
    cp = c.ctl("start", "-n", "4")
    assert cp.returncode == 0
    assert "already running" in cp.stdout
    assert [c.pid(i) for i in range(4)] == pids
    assert c.addrs() == addrs


def test_status_reports_a_dead_server(fresh_cluster):
    c = fresh_cluster
    c.kill(2)
    st = c.status()
    assert st.returncode == 1, describe(st)
    lines = [l for l in st.stdout.splitlines() if "server 2" in l]
    assert lines and "dead" in lines[0], st.stdout
    assert len(re.findall(r"^  server \d .* alive$", st.stdout, re.M)) == 3


def test_start_after_partial_death_starts_only_the_dead(fresh_cluster):
    c = fresh_cluster
    pids = [c.pid(i) for i in range(4)]
    addrs = c.addrs()
    c.kill(1)
    c.start()
    assert c.addrs() == addrs  # same port again
    assert [c.pid(i) for i in (0, 2, 3)] == [pids[i] for i in (0, 2, 3)]
    assert c.pid(1) != pids[1] and c.alive(1)


def test_stop_then_start_reuses_ports_and_data(fresh_cluster, tmp_path):
    c = fresh_cluster
    data = os.urandom(300000)
    src = tmp_path / "in"
    src.write_bytes(data)
    cp = c.galley("put", src, "keep/me", "-n", "4", "-u", "4096")
    assert cp.returncode == 0, describe(cp)
    addrs = c.addrs()
    cp = c.stop()
    assert cp.returncode == 0, describe(cp)
    assert not any(c.alive(i) for i in range(4))
    assert c.status().returncode == 1
    c.start()
    assert c.addrs() == addrs
    out = tmp_path / "out"
    cp = c.galley("get", "keep/me", out)
    assert cp.returncode == 0, describe(cp)
    assert out.read_bytes() == data


def test_start_takes_a_new_port_when_the_old_one_is_taken(fresh_cluster):
    c = fresh_cluster
    addrs = c.addrs()
    c.stop()
    host, port = c.addr(3)
    squatter = socket.socket()
    try:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind((host, port))
        squatter.listen(1)
        c.start()
        new = c.addrs()
        assert new[:3] == addrs[:3]
        assert new[3] != addrs[3]
        cp = c.galley("ping")
        assert cp.returncode == 0, describe(cp)
    finally:
        squatter.close()


def test_restart_server_uses_the_same_address(fresh_cluster):
    c = fresh_cluster
    addrs = c.addrs()
    c.kill(0, signal.SIGTERM)
    c.restart(0)
    assert c.addrs() == addrs
    cp = c.galley("ping")
    assert cp.returncode == 0, describe(cp)


def test_stop_escalates_to_sigkill(fresh_cluster):
    """A server that ignores SIGTERM (stopped with SIGSTOP) still goes."""
    c = fresh_cluster
    c.pause(1)
    cp = c.ctl("stop", "--timeout", "1", check=False)
    assert cp.returncode == 0, describe(cp)
    assert "SIGKILL" in cp.stderr
    assert not any(c.alive(i) for i in range(4))


def test_start_failure_is_reported_and_cleaned_up(tmp_path):
    bad = tmp_path / "fake-galleyd"
    bad.write_text("#!/bin/sh\necho 'cannot start: broken on purpose' >&2\n"
                   "exit 3\n")
    bad.chmod(0o755)
    cp = script("start", "-n", "2", "--dir", tmp_path / "c", "--galleyd", bad)
    assert cp.returncode == 1, describe(cp)
    assert "broken on purpose" in cp.stderr
    assert not (tmp_path / "c" / "cluster").exists()


def processes_mentioning(text):
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ")
                state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if text.encode() in cmd and state != "Z":
                found.append((d.name, cmd.decode(errors="replace")))
    return found


def test_start_timeout_kills_what_it_started(tmp_path):
    hang = tmp_path / "hanging-galleyd"
    hang.write_text("#!/bin/sh\nwhile :; do sleep 1; done\n")
    hang.chmod(0o755)
    d = tmp_path / "c"
    cp = script("start", "-n", "2", "--dir", d, "--galleyd", hang,
                "--timeout", "2")
    assert cp.returncode == 1, describe(cp)
    assert "timed out" in cp.stderr
    assert processes_mentioning(str(d)) == []


def test_status_of_an_empty_dir(tmp_path):
    cp = script("status", "--dir", tmp_path)
    assert cp.returncode == 1
    assert "no cluster" in cp.stdout


def test_usage_errors(tmp_path):
    cp = script("start", "--dir", tmp_path / "x")
    assert cp.returncode == 1 and "-n" in cp.stderr
    cp = script("frobnicate")
    assert cp.returncode == 2


def test_launcher_mode_runs_ranks_locally(tmp_path):
    """--launcher local exercises the per-rank path used under mpiexec and
    srun (rank from the environment, address published by each rank)."""
    d = tmp_path / "lc"
    env = {"GALLEYD": galleyd_path()}
    cp = script("start", "-n", "3", "--dir", d, "--launcher", "local",
                "--data-root", tmp_path / "local-data", "--bind", "127.0.0.1",
                "--advertise", "127.0.0.1", env=env)
    try:
        assert cp.returncode == 0, describe(cp)
        addrs = [l for l in (d / "cluster").read_text().splitlines() if l]
        assert len(addrs) == 3
        for i in range(3):
            assert (tmp_path / "local-data" / ("server%d" % i)).is_dir()
        c = Cluster(d, n=3)
        st = script("status", "--dir", d)
        assert st.returncode == 0, describe(st)
        cp2 = c.galley("ping")
        assert cp2.returncode == 0, describe(cp2)
        cp2 = c.galley("create", "lf", "-n", "3")
        assert cp2.returncode == 0, describe(cp2)
    finally:
        stop = script("stop", "--dir", d)
    assert stop.returncode == 0, describe(stop)
    st = script("status", "--dir", d)
    assert st.returncode == 1
    assert processes_mentioning(str(d)) == []


def test_launcher_mode_binds_the_published_address(tmp_path):
    """Without --bind, a launched server listens on the address its
    published name resolves to, not on every interface."""
    d = tmp_path / "lb"
    env = {"GALLEYD": galleyd_path()}
    cp = script("start", "-n", "2", "--dir", d, "--launcher", "local",
                "--data-root", tmp_path / "lb-data", "--advertise", "127.0.0.1",
                env=env)
    try:
        assert cp.returncode == 0, describe(cp)
        for i in range(2):
            bound = list((d / ("server%d" % i)).glob("port.*"))
            assert len(bound) == 1, bound
            assert bound[0].read_text().startswith("127.0.0.1:"), bound[0].read_text()
        c = Cluster(d, n=2)
        cp2 = c.galley("ping")
        assert cp2.returncode == 0, describe(cp2)
    finally:
        stop = script("stop", "--dir", d)
    assert stop.returncode == 0, describe(stop)
