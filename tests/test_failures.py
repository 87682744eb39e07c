"""Killed, stopped and restarted servers: clients get errors within the
timeout, and nothing acknowledged is lost."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import LineReader, assert_helper_ok, describe, libgalley_so
from gproto_const import GFS_ESERVERDOWN, GFS_ETIMEDOUT


@pytest.mark.parametrize("block", [4096, 300000])
def test_kill_9_during_writes(fresh_cluster, uniq, block):
    """kill -9 the server a client is writing to: the client's write fails
    with GFS_ESERVERDOWN or GFS_ETIMEDOUT well within a bound (GALLEY_TIMEOUT
    is 3 s; 15 s is a hang bound, not a speed target); after a restart
    every acknowledged block reads back."""
    c = fresh_cluster
    name = uniq + "/w"
    env = {"GALLEY_TIMEOUT": "3"}
    p = c.popen_helper("t_failover", "writer", name, 2, block, 60, env=env)
    r = LineReader(p)
    last_ack, err = -1, None
    try:
        while last_ack < 30:
            line = r.next(30)
            assert line, "writer stopped: %s %s" % (r.lines[-5:],
                                                    p.stderr.read())
            m = re.match(r"ACK (\d+)", line)
            if m:
                last_ack = int(m.group(1))
            assert not line.startswith(("ERR", "FAIL", "NOERR")), r.lines[-5:]
        c.kill(2)
        t_kill = time.monotonic()
        while True:
            line = r.next(30)
            assert line, "writer gave no error within 30 s of the kill: %s" \
                % r.lines[-5:]
            m = re.match(r"ACK (\d+)", line)
            if m:
                last_ack = int(m.group(1))
            elif line.startswith("ERR"):
                err = line
                break
            else:
                assert not line.startswith(("FAIL", "NOERR")), r.lines[-5:]
        elapsed = time.monotonic() - t_kill
        out = r.rest(60)
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    print("last acknowledged block %d; %s; error %.2f s after the kill"
          % (last_ack, err.strip(), elapsed))
    code = int(err.split()[1])
    assert code in (GFS_ESERVERDOWN, GFS_ETIMEDOUT), err
    assert elapsed < 15, "error came %.1f s after the kill" % elapsed
    assert p.returncode == 0, "".join(r.lines) + p.stderr.read()
    again = re.search(r"^AGAIN (-?\d+)", out, re.M)
    assert again and int(again.group(1)) in (GFS_ESERVERDOWN, GFS_ETIMEDOUT), out

    c.restart(2)
    cp = c.helper("t_failover", "verify", name, last_ack, block)
    assert_helper_ok(cp)
    assert "VERIFIED %d blocks" % (last_ack + 1) in cp.stdout


def test_whole_cluster_stop_and_start_keeps_everything(fresh_cluster, uniq,
                                                       tmp_path):
    c = fresh_cluster
    big = os.urandom(7 * 1024 * 1024 + 3)
    (tmp_path / "big").write_bytes(big)
    assert c.galley("put", tmp_path / "big", uniq + "/big", "-n", "4",
                    "-u", "32K").returncode == 0
    assert c.galley("create", uniq + "/plain", "-n", "3", "-s", "2,0,3",
                    "-p").returncode == 0
    forks = {}
    for sub in range(3):
        data = os.urandom(1000 * (sub + 1) + sub)
        forks[sub] = data
        (tmp_path / ("f%d" % sub)).write_bytes(data)
        cp = c.galley("fork", "write", uniq + "/plain", sub, "k%d" % sub,
                      tmp_path / ("f%d" % sub))
        assert cp.returncode == 0, describe(cp)
    before = c.galley("ls").stdout
    addrs = c.addrs()

    assert c.stop().returncode == 0
    c.start()
    assert c.addrs() == addrs

    assert c.galley("ls").stdout == before
    cp = c.galley("get", uniq + "/big", tmp_path / "big.out")
    assert cp.returncode == 0, describe(cp)
    assert (tmp_path / "big.out").read_bytes() == big
    st = c.galley("stat", uniq + "/plain")
    assert re.findall(r"^subfile \d+: server (\d+)", st.stdout, re.M) == \
        ["2", "0", "3"], st.stdout
    for sub, data in forks.items():
        out = tmp_path / ("o%d" % sub)
        cp = c.galley("fork", "read", uniq + "/plain", sub, "k%d" % sub, out)
        assert cp.returncode == 0, describe(cp)
        assert out.read_bytes() == data


def test_restart_of_one_server(fresh_cluster, uniq, tmp_path):
    """SIGTERM one server, start it again: its subfiles and the records it
    holds are all there."""
    c = fresh_cluster
    data = os.urandom(2 * 1024 * 1024)
    (tmp_path / "in").write_bytes(data)
    names = ["%s/r%d" % (uniq, i) for i in range(8)]  # various metadata servers
    for n in names:
        cp = c.galley("put", tmp_path / "in", n, "-n", "4", "-u", "64K")
        assert cp.returncode == 0, describe(cp)
    for sig_kill in (False, True):
        c.kill(1, signal.SIGKILL if sig_kill else signal.SIGTERM)
        cp = c.galley("get", names[0], tmp_path / "during",
                      env={"GALLEY_TIMEOUT": "3"}, timeout=60)
        assert cp.returncode == 1, describe(cp)
        assert not (tmp_path / "during").exists()
        c.restart(1)
        for n in names:
            out = tmp_path / "out"
            cp = c.galley("get", n, out)
            assert cp.returncode == 0, describe(cp)
            assert out.read_bytes() == data, n
            out.unlink()


def test_create_needing_a_dead_server_releases_everything(fresh_cluster,
                                                          uniq):
    c = fresh_cluster
    c.kill(3)
    cp = c.helper("t_failover", "create-release", uniq, 3,
                  env={"GALLEY_TIMEOUT": "3"}, timeout=150)
    assert_helper_ok(cp)
    for secs in re.findall(r"^CREATE \S+ -?\d+ .* ([\d.]+)$", cp.stdout, re.M):
        assert float(secs) < 15, cp.stdout
    c.restart(3)
    # The names were released: creating them now works.
    for i in range(8):
        cp = c.galley("create", "%s.%d" % (uniq, i), "-n", "4", "-p")
        assert cp.returncode == 0, describe(cp)


def test_ping_of_a_killed_server_is_quick(fresh_cluster):
    c = fresh_cluster
    c.kill(0)
    cp = c.helper("t_failover", "ping", 0, env={"GALLEY_TIMEOUT": "3"},
                  timeout=60)
    fields = cp.stdout.split()
    assert fields[0] == "PING" and int(fields[1]) in (GFS_ESERVERDOWN, GFS_ETIMEDOUT), \
        describe(cp)
    assert float(fields[-1]) < 15
    cp = c.galley("ping", env={"GALLEY_TIMEOUT": "3"}, timeout=60)
    assert cp.returncode == 1, describe(cp)
    assert re.search(r"^server\s+0 .*ERROR", cp.stdout, re.M), cp.stdout
    assert len(re.findall(r"\bok\b", cp.stdout)) == 3, cp.stdout


def test_client_survives_a_server_restart(fresh_cluster, uniq):
    """One long-lived client: a server restarts under it; the old fork id
    gives the data or a clean error, and new opens work again."""
    c = fresh_cluster
    p = c.popen_helper("t_failover", "reconnect", uniq + "/rc", 1,
                       env={"GALLEY_TIMEOUT": "3"})
    r = LineReader(p)
    try:
        line = r.next(60)
        assert line and line.strip() == "READY", (line, p.stderr.read())
        c.kill(1)
        c.restart(1)
        p.stdin.write("go\n")
        p.stdin.close()
        out = r.rest(120)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0 and "FAIL" not in out and "DONE" in out, \
        out + p.stderr.read()


STOPPED_READER = r"""
import ctypes, sys, time
g = ctypes.CDLL(sys.argv[1])
g.gfs_striped_read.restype = ctypes.c_int64
g.gfs_striped_read.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_void_p,
                               ctypes.c_int64]
assert g.gfs_init(sys.argv[2].encode()) == 0
sid = g.gfs_striped_open(sys.argv[3].encode())
assert sid >= 0, sid
n = int(sys.argv[4])
buf = ctypes.create_string_buffer(n)


def read(what):
    t = time.monotonic()
    rc = g.gfs_striped_read(sid, 0, buf, n)
    print("%s %d %.3f" % (what, rc, time.monotonic() - t), flush=True)


read("warm")
sys.stdin.readline()  # a server is stopped now
read("first")
read("second")
sys.stdin.readline()  # and continued
time.sleep(1.5)
read("again")
sys.stdout.buffer.write(buf.raw)
"""


def test_a_stopped_server_is_waited_out_once(fresh_cluster, uniq, tmp_path):
    """A server stopped (SIGSTOP) under a reader: the read that needs it
    fails after GALLEY_TIMEOUT; the next one, at once, fails at once
    (ETIMEDOUT) instead of waiting out the stopped server a second time
    (it still accepts connections); once it is continued, the same
    process reads the file again."""
    c = fresh_cluster
    data = os.urandom(1 << 20)
    src = tmp_path / "data"
    src.write_bytes(data)
    name = uniq + "/s"
    cp = c.galley("put", "-n", "4", "-u", "65536", src, name)
    assert cp.returncode == 0, describe(cp)
    script = tmp_path / "reader.py"
    script.write_text(STOPPED_READER)
    # the server path: same-host direct access reads without the server
    env = dict(c.env, GALLEY_TIMEOUT="2", GALLEY_TRANSPORT="local")
    p = subprocess.Popen([sys.executable, str(script), libgalley_so(),
                          str(c.cluster_file), name, str(len(data))],
                         env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pid = c.pid(2)
    stopped = False
    try:
        warm = p.stdout.readline().split()
        assert warm[:2] == [b"warm", str(len(data)).encode()], (
            warm, p.stderr.read())
        c.pause(2)
        stopped = True
        p.stdin.write(b"go\n")
        p.stdin.flush()
        first = p.stdout.readline().split()
        second = p.stdout.readline().split()
        os.kill(pid, signal.SIGCONT)
        stopped = False
        p.stdin.write(b"go\n")
        p.stdin.flush()
        out, err = p.communicate(timeout=60)
    finally:
        if stopped:
            os.kill(pid, signal.SIGCONT)
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    assert first[:2] == [b"first", str(GFS_ETIMEDOUT).encode()], first
    assert 1.5 < float(first[2]) < 10, first
    assert second[:2] == [b"second", str(GFS_ETIMEDOUT).encode()], second
    assert float(second[2]) < 0.5, second
    again, rest = out.split(b"\n", 1)
    assert again.split()[:2] == [b"again", str(len(data)).encode()], again
    assert rest == data
