"""The same-host transport (proto/gproto.h): a client on the servers' host
talks to them over their abstract Unix sockets and moves data by
cross-memory attach (IO_READV / IO_WRITEV); TCP is the automatic fallback
and GALLEY_TRANSPORT=tcp|local forces one.  Bytes are the same whichever
path wrote or reads them."""

import ctypes
import os
import shutil
import socket
import struct
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (CLUSTER_KEYS, base_env, describe, galley_path,
                      galleyd_path, run)
from gproto_const import GFS_EPROTO
from test_protocol import (OP, Conn, extent, find_record, ping, s16, strided,
                           u32, u64)

OP_CMA = {n: OP[n] for n in ("CMA_PROBE", "IO_READV", "IO_WRITEV")}
EOPNOTSUPP, EFAULT = -95, -14


def transports(cp):
    """The transport word `galley ping` prints for every server."""
    assert cp.returncode == 0, describe(cp)
    words = [l.split()[-1] for l in cp.stdout.splitlines()
             if l.startswith("server ")]
    assert words, describe(cp)
    return words


def mode(t):
    return {"GALLEY_TRANSPORT": t}


def test_auto_is_direct_on_the_servers_host(cluster):
    """Same host, same user: direct (test_direct.py); the messages that
    still go to the server use cross-memory attach."""
    assert transports(cluster.galley("ping", env=mode("auto"))) == \
        ["direct"] * cluster.n
    # unset means auto
    e = dict(cluster.env)
    e.pop("GALLEY_TRANSPORT", None)
    cp = run([galley_path(), "-c", cluster.cluster_file, "ping"], env=e)
    assert transports(cp) == ["direct"] * cluster.n


def test_forced_transports(cluster):
    assert transports(cluster.galley("ping", env=mode("tcp"))) == \
        ["tcp"] * cluster.n
    assert transports(cluster.galley("ping", env=mode("local"))) == \
        ["local+cma"] * cluster.n


def test_bad_transport_value_is_an_error(cluster):
    cp = cluster.galley("ping", env=mode("carrier-pigeon"))
    assert cp.returncode != 0, describe(cp)
    assert "Invalid argument" in cp.stderr, describe(cp)


@pytest.mark.parametrize("unit", [65536, 1000])
def test_same_bytes_whichever_transport(cluster, tmp_path, uniq, unit):
    """Written over one transport, read over every other, byte for byte;
    a stripe unit of 1000 makes every request many pieces."""
    data = os.urandom(5 * 1024 * 1024 + 123)
    src = tmp_path / "src"
    src.write_bytes(data)
    for wmode in ("local", "tcp"):
        name = "%s-%s" % (uniq, wmode)
        cp = cluster.galley("put", src, name, "-u", unit, env=mode(wmode))
        assert cp.returncode == 0, describe(cp)
        for rmode in ("local", "tcp", "auto"):
            out = tmp_path / ("out-%s-%s" % (wmode, rmode))
            cp = cluster.galley("get", name, out, env=mode(rmode))
            assert cp.returncode == 0, describe(cp)
            assert out.read_bytes() == data, (wmode, rmode)
        assert cluster.galley("rm", name).returncode == 0


def test_server_without_local_transport(make_cluster, tmp_path, uniq):
    """--no-local: auto falls back to TCP by itself; local refuses with an
    error, at once (no timeout)."""
    c = make_cluster(n=2, start_args=("--no-local",))
    assert transports(c.galley("ping", env=mode("auto"))) == ["tcp"] * 2
    data = os.urandom(300000)
    (tmp_path / "f").write_bytes(data)
    assert c.galley("put", tmp_path / "f", uniq, env=mode("auto")).returncode == 0
    cp = c.galley("get", uniq, "-", binary=True, env=mode("tcp"))
    assert cp.returncode == 0 and cp.stdout == data
    t0 = time.monotonic()
    cp = c.galley("ping", env=mode("local"))
    assert cp.returncode != 0, describe(cp)
    assert "unreachable" in cp.stdout + cp.stderr, describe(cp)
    assert time.monotonic() - t0 < 5


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare") or
                    not shutil.which("ip"),
                    reason="needs root, unshare and ip for a network "
                           "namespace of the test's own")
def test_wildcard_server_is_local_for_its_own_addresses(tmp_path):
    """A server listening on 0.0.0.0 (the multi-host launcher's default)
    is same-host for clients naming any of its host's addresses.  Run in a
    network namespace of the test's own, so the wildcard is its loopback
    only."""
    script = tmp_path / "run.sh"
    script.write_text("""
set -e
ip link set lo up
"$GALLEYD" --data "$DIR/data" --listen 0.0.0.0:0 --port-file "$DIR/port" \\
    >"$DIR/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for i in $(seq 200); do [ -s "$DIR/port" ] && break; sleep 0.05; done
port=$(sed 's/.*://' "$DIR/port")
echo "127.0.0.1:$port" >"$DIR/c-ip"
echo "localhost:$port" >"$DIR/c-name"
"$GALLEY" -c "$DIR/c-ip" ping
"$GALLEY" -c "$DIR/c-name" ping
GALLEY_TRANSPORT=tcp "$GALLEY" -c "$DIR/c-ip" ping
""")
    env = base_env({"GALLEYD": galleyd_path(), "GALLEY": galley_path(),
                    "DIR": str(tmp_path), "GALLEY_TRANSPORT": "auto"})
    cp = run(["unshare", "-n", "bash", script], env=env, timeout=60)
    assert cp.returncode == 0, describe(cp)
    assert (tmp_path / "port").read_text().startswith("0.0.0.0:")
    assert transports(cp) == ["direct", "direct", "tcp"], describe(cp)


def start_galleyd_as(user, tmp_path):
    """One galleyd run as `user` (setpriv), for a client of another user;
    its directory outside pytest's (which only root may enter)."""
    import pwd
    import tempfile
    pw = pwd.getpwnam(user)
    d = Path(tempfile.mkdtemp(prefix="galley-other-user-"))
    os.chmod(d, 0o755)
    shutil.chown(d, pw.pw_uid, pw.pw_gid)
    port_file = d / "port"
    log = open(tmp_path / "log", "wb")
    p = subprocess.Popen(
        ["setpriv", "--reuid", str(pw.pw_uid), "--regid", str(pw.pw_gid),
         "--clear-groups",
         galleyd_path(), "--data", str(d / "data"), "--listen", "127.0.0.1:0",
         "--port-file", str(port_file)],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log,
        start_new_session=True)
    end = time.monotonic() + 20
    while not (port_file.exists() and port_file.read_text().strip()):
        if p.poll() is not None or time.monotonic() > end:
            p.kill()
            pytest.fail("galleyd as %s did not start: %s" % (
                user, (tmp_path / "log").read_text()))
        time.sleep(0.05)
    cf = tmp_path / "cluster"
    cf.write_text(port_file.read_text())
    # no secret: forget the key of an earlier server of this session that
    # had the same port (else raw connections would try to authenticate)
    port = int(port_file.read_text().strip().rsplit(":", 1)[1])
    CLUSTER_KEYS.pop(("127.0.0.1", port), None)
    return p, cf, d


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root and setpriv to run a server as "
                           "another user")
def test_cross_memory_attach_refused_falls_back_to_the_socket(tmp_path):
    """A server that may not touch the client's memory (another user,
    ptrace rules): the client still uses the Unix socket, data inline."""
    p, cf, d = start_galleyd_as("nobody", tmp_path)
    try:
        env = base_env({"GALLEY_CLUSTER": str(cf), "GALLEY_TRANSPORT": "auto"})
        cp = run([galley_path(), "ping"], env=env)
        assert transports(cp) == ["local"], describe(cp)
        data = os.urandom(2 * 1024 * 1024 + 7)
        (tmp_path / "f").write_bytes(data)
        cp = run([galley_path(), "put", tmp_path / "f", "/x"], env=env)
        assert cp.returncode == 0, describe(cp)
        cp = run([galley_path(), "get", "/x", tmp_path / "g"], env=env)
        assert cp.returncode == 0, describe(cp)
        assert (tmp_path / "g").read_bytes() == data
    finally:
        p.terminate()
        p.wait(10)
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------- the raw protocol ----

class LocalConn(Conn):
    """A raw connection over a server's abstract Unix socket."""

    def __init__(self, addr, timeout=10):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect("\0galleyd@%s:%d" % addr)
        self.buf = b""
        self.authenticate(addr)


def mem(*bufs):
    """A `mem` list naming ctypes buffers of this process (extents)."""
    out = u32(len(bufs))
    for b in bufs:
        out += extent(ctypes.addressof(b), ctypes.sizeof(b))
    return out


def test_raw_cross_memory_requests(cluster, uniq):
    """IO_WRITEV pulls the data from this very process's memory, IO_READV
    puts it back; bad memory lists get error replies; TCP refuses them;
    the server keeps serving."""
    name = uniq + "/raw"
    assert cluster.galley("create", name, "-n", "1", "-p").returncode == 0
    assert cluster.galley("fork", "create", name, 0, "f").returncode == 0
    (server, hid), = find_record(cluster, name)
    addr = cluster.addr(server)
    pid = cluster.pid(server)
    c = LocalConn(addr)
    t = Conn(addr)
    try:
        status, p = c.call(OP["FORK_OPEN"], u64(hid) + s16("f"))
        assert status == 0, status
        fkid = struct.unpack("<Q", p[:8])[0]
        status, _ = t.call(OP["FORK_OPEN"], u64(hid) + s16("f"))
        assert status == 0

        a = ctypes.create_string_buffer(b"hello, ", 7)
        b = ctypes.create_string_buffer(b"world", 5)
        # two pieces of the fork, data from two places of our memory
        status, p = c.call(OP_CMA["IO_WRITEV"], u64(fkid) + u32(2) +
                           extent(0, 7) + extent(100, 5) + mem(a, b))
        assert status == 0 and struct.unpack("<Q", p)[0] == 105, (status, p)
        status, p = t.call(OP["IO_READ"], u64(fkid) + u32(2) +
                           extent(100, 5) + extent(0, 7))
        assert status == 0 and p[8:] == b"worldhello, ", (status, p)

        out = ctypes.create_string_buffer(12)
        status, p = c.call(OP_CMA["IO_READV"], u64(fkid) + u32(2) +
                           extent(0, 7) + extent(100, 5) + mem(out))
        assert status == 0 and len(p) == 8, (status, p)
        assert out.raw == b"hello, world"
        # memory with gaps travels as one strided segment: every other
        # pair of bytes of `g` holds the fork's first 8 ("hello, " and the
        # zero of the hole after it)
        g = ctypes.create_string_buffer(b"." * 16, 16)
        status, p = c.call(OP_CMA["IO_READV"], u64(fkid) + u32(1) +
                           extent(0, 8) + u32(1) +
                           strided(ctypes.addressof(g), 2, [(4, 4)]))
        assert status == 0 and g.raw == b"he..ll..o,.. \0..", (status, g.raw)

        bad = {
            "lengths short of the data": (OP_CMA["IO_WRITEV"], u64(fkid) +
                                          u32(1) + extent(0, 7) + mem(b)),
            "count past the payload": (OP_CMA["IO_READV"], u64(fkid) + u32(1) +
                                       extent(0, 5) + u32(1000)),
            "address nobody mapped": (OP_CMA["IO_READV"], u64(fkid) + u32(1) +
                                      extent(0, 5) + u32(1) + extent(8, 5)),
            "write from unmapped memory": (OP_CMA["IO_WRITEV"], u64(fkid) +
                                           u32(1) + extent(0, 5) + u32(1) +
                                           extent(8, 5)),
            "memory past the address space": (
                OP_CMA["IO_READV"], u64(fkid) + u32(1) + extent(0, 4) + u32(1) +
                strided((1 << 64) - 8, 2, [(2, 1 << 62)])),
        }
        got = {}
        for what, (op, payload) in sorted(bad.items()):
            status, _ = c.call(op, payload)
            got[what] = status
        assert got == {"lengths short of the data": GFS_EPROTO,
                       "count past the payload": GFS_EPROTO,
                       "address nobody mapped": EFAULT,
                       "write from unmapped memory": EFAULT,
                       "memory past the address space": GFS_EPROTO}, got
        # the failed write changed nothing
        status, p = t.call(OP["IO_READ"], u64(fkid) + u32(1) + extent(0, 7))
        assert p[8:] == b"hello, ", p

        # over TCP the server cannot know whose memory it would be
        for op in ("IO_READV", "IO_WRITEV"):
            status, _ = t.call(OP_CMA[op], u64(fkid) + u32(1) + extent(0, 5) +
                               mem(a))
            assert status == EOPNOTSUPP, (op, status)
        status, _ = t.call(OP_CMA["CMA_PROBE"], u64(0) + u64(0))
        assert status == EOPNOTSUPP
        # the probe copies 8 bytes of ours
        src = ctypes.create_string_buffer(b"probe!!!", 8)
        dst = ctypes.create_string_buffer(8)
        status, _ = c.call(OP_CMA["CMA_PROBE"], u64(ctypes.addressof(src)) +
                           u64(ctypes.addressof(dst)))
        assert status == 0 and dst.raw == b"probe!!!", (status, dst.raw)
    finally:
        c.close()
        t.close()
    assert ping(addr) == pid
