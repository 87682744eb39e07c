"""Hardening (galleyd's resources, the cluster secret, full disks): what an
adversarial but realistic user tries against real servers.

- a request's memory is bounded by what it moves: 2^24 zero-size pieces
  cost nothing, too many pieces are refused before anything is allocated;
- frames larger than the server's frame limit are refused; connections that
  stop in the middle of a frame (or never authenticate) are closed after
  --frame-timeout; connections past --max-conns get GFS_ECONNLIMIT;
- the cluster secret: clients without it, or with a wrong one, are refused
  with a clear message; raw requests before AUTH get GFS_EAUTH; a server
  must prove the secret too; data is 0600 in 0700 directories;
- a disk filled by another program: `galley rm` works and frees the space,
  `galley-cluster restart-server` works;
- the live server fuzzed for a bounded time while a legitimate client keeps
  reading back exactly what it wrote.
"""

import os
import random
import re
import shutil
import socket
import stat
import struct
import subprocess
import tempfile
import threading
import time

from pathlib import Path

import pytest

from conftest import (CLUSTER_KEYS, base_env, describe, galley_path,
                      galleyd_path, libgalley_so, run, stop_process)
from gproto_const import GFS_EAUTH, GFS_ECONNLIMIT, GFS_ETOOBIG
from gproto_const import OP as ALL_OPS
from test_protocol import (OP, VERSION, Conn, extent, find_record, frame,
                           s16, strided, u32, u64)

MB = 1 << 20


def peak_rss(pid):
    """VmHWM (peak resident set) of a process, in bytes."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM for pid %d" % pid)


def raw_fork(cluster, name):
    """A raw, authenticated connection with fork 'f' of a 1-subfile file
    open: (conn, fkid, server index)."""
    assert cluster.galley("create", name, "-n", "1", "-p").returncode == 0
    assert cluster.galley("fork", "create", name, 0, "f").returncode == 0
    (server, hid), = find_record(cluster, name)
    c = Conn(cluster.addr(server))
    status, p = c.call(OP["FORK_OPEN"], u64(hid) + s16("f"))
    assert status == 0, status
    return c, struct.unpack("<Q", p[:8])[0], server


# ------------------------------------------------------- bounded memory ----

def test_empty_and_tiny_pieces_cost_what_they_move(make_cluster):
    """The 70-byte IO_READ of 2^24 zero-size pieces (and its IO_WRITE twin),
    four connections at once, leave galleyd's peak RSS under 64 MB; 2^24
    one-byte pieces are refused before anything is allocated; 2^20 of them
    (the most the default data limit allows) are served, byte-exact."""
    cl = make_cluster(n=1, start_args=("--cache-mb", "16"))
    c, fkid, server = raw_fork(cl, "mem/f")
    pid = cl.pid(server)
    data = bytes(random.Random(3).getrandbits(8) for _ in range(1 << 16))
    status, _ = c.call(OP["IO_WRITE"], u64(fkid) + u32(1) +
                       extent(0, len(data)) + data)
    assert status == 0
    base = peak_rss(pid)

    empty = u64(fkid) + u32(1) + strided(0, 0, [(1 << 24, 1)])
    assert len(frame(OP["IO_READ"], empty)) < 80
    conns = [c] + [Conn(cl.addr(server)) for _ in range(3)]
    for k in conns:
        k.send(frame(OP["IO_READ"], empty, reqid=11))
        k.send(frame(OP["IO_WRITE"], empty, reqid=12))
    for k in conns:
        for want in (11, 12):
            h, p = k.reply()
            assert h[3] == want and h[4] == 0, h
            assert struct.unpack("<Q", p[:8])[0] == len(data)
    peak = peak_rss(pid)
    assert peak < 64 * MB, "peak RSS %.1f MB" % (peak / MB)
    # nested levels: zero pieces at every level still count nothing
    status, p = c.call(OP["IO_READ"], u64(fkid) + u32(2) +
                       strided(0, 0, [(1 << 12, 1), (1 << 12, 1)]) +
                       extent(5, 3))
    assert status == 0 and p[8:] == data[5:8]

    # one-byte pieces: 2^24 is more than the data limit allows pieces for
    status, _ = c.call(OP["IO_READ"], u64(fkid) + u32(1) +
                       strided(0, 1, [(1 << 24, 2)]))
    assert status == GFS_ETOOBIG
    # 2^20 of them at stride 2 over 2 MB: served, every other byte
    big = os.urandom(2 * MB)
    status, _ = c.call(OP["IO_WRITE"], u64(fkid) + u32(1) + extent(0, 2 * MB)
                       + big)
    assert status == 0
    status, p = c.call(OP["IO_READ"], u64(fkid) + u32(1) +
                       strided(1, 1, [(1 << 20, 2)]))
    assert status == 0 and p[8:] == big[1::2]
    peak = peak_rss(pid)
    print("galleyd peak RSS: %.1f MB before, %.1f MB after" % (base / MB,
                                                               peak / MB))
    assert peak < 64 * MB, "peak RSS %.1f MB" % (peak / MB)
    for k in conns:
        k.close()


def test_frames_bounded_by_the_data_limit(make_cluster):
    """A frame may carry at most twice the data limit plus 64 KiB: a larger
    one is refused (GFS_ETOOBIG) and skipped, and the connection goes on;
    a legitimate client still moves more than the limit in one call."""
    cl = make_cluster(n=1, start_args=("--data-limit", str(1 * MB)))
    c, fkid, _ = raw_fork(cl, "frame/f")
    limit = 2 * MB + 64 * 1024
    c.send(frame(OP["IO_WRITE"], length=limit + 1, reqid=21) +
           b"\0" * (limit + 1))
    h, _ = c.reply()
    assert h[3] == 21 and h[4] == GFS_ETOOBIG
    status, p = c.call(OP["PING"])
    assert status == 0
    c.close()
    # the client splits by the limit and by pieces
    src = cl.dir / "src"
    src.write_bytes(os.urandom(3 * MB + 5))
    assert cl.galley("put", src, "frame/big").returncode == 0
    cp = cl.galley("get", "frame/big", cl.dir / "back")
    assert cp.returncode == 0, describe(cp)
    assert (cl.dir / "back").read_bytes() == src.read_bytes()


def hand_server(tmp_path, *args, key=True):
    """galleyd started by hand (a short --frame-timeout is not a
    galley-cluster option); returns (proc, (host, port), cluster file)."""
    d = tmp_path / "hand"
    d.mkdir(exist_ok=True)
    cf = d / "cluster"
    extra = []
    if key:
        kf = d / "cluster.key"
        kf.write_text(os.urandom(32).hex() + "\n")
        kf.chmod(0o600)
        extra = ["--key", str(kf)]
    with open(d / "log", "ab") as log:
        p = subprocess.Popen([galleyd_path(), "--data", str(d / "data"),
                              "--listen", "127.0.0.1:0", *extra, *args],
                             stdout=subprocess.PIPE, stderr=log, text=True)
    line = p.stdout.readline()
    assert line.startswith("listening "), (line, (d / "log").read_text())
    host, _, port = line.split()[1].rpartition(":")
    addr = (host, int(port))
    cf.write_text("%s:%d\n" % addr)
    if key:
        CLUSTER_KEYS[addr] = bytes.fromhex(kf.read_text().strip())
    return p, addr, cf


def galley(cf, *args):
    return run([galley_path(), "-c", str(cf)] + [str(a) for a in args],
               env=base_env(), timeout=60)


def closed_within(s, seconds):
    """True when the server closes socket s within `seconds`."""
    s.settimeout(seconds)
    try:
        while True:
            b = s.recv(4096)
            if not b:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def test_half_frames_and_silent_clients_are_closed(tmp_path):
    """100 connections that send half a frame and stop are closed after
    --frame-timeout (2 s here), and so are connections that never
    authenticate; authenticated idle connections stay; meanwhile a
    legitimate client is served."""
    p, addr, cf = hand_server(tmp_path, "--frame-timeout", "2")
    try:
        half = []
        for i in range(100):
            c = Conn(addr)  # authenticated, then half a frame
            if i % 2:
                c.send(frame(OP["PING"])[:1 + i % 23])
            else:
                c.send(frame(OP["NS_LOOKUP"], length=1000) + b"x" * 10)
            half.append(c)
        silent = [Conn(addr, auth=False) for _ in range(5)]
        idle = Conn(addr)
        t0 = time.monotonic()
        cp = galley(cf, "ping")
        assert cp.returncode == 0, describe(cp)
        assert all(closed_within(c.s, 10) for c in half + silent)
        took = time.monotonic() - t0
        assert 1.5 < took < 12, took
        # an authenticated client may idle between requests
        status, _ = idle.call(OP["PING"])
        assert status == 0
        for c in half + silent + [idle]:
            c.close()
        assert galley(cf, "ping").returncode == 0
    finally:
        p.terminate()
        p.wait(10)


def test_connection_cap(tmp_path):
    """Past --max-conns a client gets GFS_ECONNLIMIT and a closed
    connection, libgalley a clear message; the server survives and serves
    again once connections go."""
    p, addr, cf = hand_server(tmp_path, "--max-conns", "4")
    try:
        held = [Conn(addr) for _ in range(4)]
        extra = socket.create_connection(addr, timeout=10)
        extra.sendall(frame(OP["PING"], reqid=5))
        hdr = b""
        while len(hdr) < 24:
            b = extra.recv(24 - len(hdr))
            assert b, "closed without an answer"
            hdr += b
        _, _, _, reqid, status, _ = struct.unpack("<IHHQiI", hdr)
        assert status == GFS_ECONNLIMIT
        assert closed_within(extra, 5)
        extra.close()
        cp = galley(cf, "ping")
        assert cp.returncode != 0
        assert "too many connections" in cp.stdout + cp.stderr, describe(cp)
        # a burst far past the cap: refused or closed, never a crash
        burst = [socket.create_connection(addr, timeout=10)
                 for _ in range(60)]
        for s in burst:
            s.close()
        for c in held:
            status, _ = c.call(OP["PING"])
            assert status == 0
            c.close()
        time.sleep(0.5)
        cp = galley(cf, "ping")
        assert cp.returncode == 0, describe(cp)
        assert p.poll() is None
    finally:
        p.terminate()
        p.wait(10)


# ------------------------------------------------------ the cluster secret ----

def test_cluster_secret(fresh_cluster, tmp_path):
    """galley-cluster makes a 0600 key beside the cluster file and every
    galley command finds it; without it, or with a wrong one, a client is
    refused with a clear message; raw requests before AUTH get GFS_EAUTH;
    a wrong proof closes the connection; data is 0600 in 0700
    directories."""
    c = fresh_cluster
    key = c.dir / "cluster.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert len(key.read_text().strip()) == 64
    src = tmp_path / "secret.txt"
    src.write_bytes(b"not for other users\n" * 100)
    assert c.galley("put", src, "s/secret").returncode == 0

    # another user: the same cluster file, but neither its key nor ours
    # (~/.galley/key, which galley-cluster copied into the cluster's)
    other = tmp_path / "other"
    other.mkdir()
    (other / "cluster").write_text(c.cluster_file.read_text())
    stranger = base_env({"HOME": str(other)})
    for args in (("ls",), ("get", "s/secret", "-"), ("rm", "s/secret")):
        cp = run([galley_path(), "-c", str(other / "cluster")] + list(args),
                 env=stranger)
        assert cp.returncode != 0
        assert "cluster secret missing or wrong" in cp.stderr, describe(cp)
    # a wrong key (GALLEY_KEY overrides the file beside the cluster file)
    wrong = tmp_path / "wrong.key"
    wrong.write_text(os.urandom(32).hex() + "\n")
    wrong.chmod(0o600)
    cp = c.galley("ls", env={"GALLEY_KEY": str(wrong)})
    assert cp.returncode != 0 and "cluster secret" in cp.stderr, describe(cp)
    # a key others may read is not used (and said so)
    (other / "cluster.key").write_text(key.read_text())
    (other / "cluster.key").chmod(0o644)
    cp = run([galley_path(), "-c", str(other / "cluster"), "ls"],
             env=stranger)
    assert cp.returncode != 0 and "chmod 600" in cp.stderr, describe(cp)
    (other / "cluster.key").chmod(0o600)
    cp = run([galley_path(), "-c", str(other / "cluster"), "ls"],
             env=stranger)
    assert cp.returncode == 0 and "s/secret" in cp.stdout, describe(cp)
    # another uid, whom the 0600 key does not belong to: told that, not
    # told to chmod a file that is already 0600
    if os.geteuid() == 0 and shutil.which("setpriv"):
        # everything the other user runs sits in a directory it may enter
        # (the clone may be in root's 0700 home): galley and libgalley
        shared = Path(tempfile.mkdtemp(prefix="galley-key-"))
        try:
            shared.chmod(0o755)
            prog = Path(galley_path())
            real = prog.parent / ".libs" / prog.name
            shutil.copy(real if real.exists() else prog, shared / "galley")
            built = prog.parent.parent / "libgalley" / ".libs"
            ld = os.environ.get("LD_LIBRARY_PATH", "")
            libs = subprocess.run(
                ["ldd", str(shared / "galley")], capture_output=True,
                text=True,
                env=base_env({"LD_LIBRARY_PATH": "%s:%s" % (built, ld)})).stdout
            for lib in re.findall(r"(libgalley\S*) => (\S+)", libs):
                shutil.copy(lib[1], shared / lib[0])
            (shared / "cluster").write_text(c.cluster_file.read_text())
            (shared / "cluster.key").write_text(key.read_text())
            (shared / "cluster.key").chmod(0o600)
            cp = run(["setpriv", "--reuid", "65534", "--regid", "65534",
                      "--clear-groups", str(shared / "galley"), "-c",
                      str(shared / "cluster"), "ls"],
                     env=base_env({"HOME": str(shared),
                                   "LD_LIBRARY_PATH": str(shared)}))
        finally:
            shutil.rmtree(shared)
        assert cp.returncode != 0, describe(cp)
        assert "chmod 600" not in cp.stderr, describe(cp)
        assert "belongs to uid 0" in cp.stderr, describe(cp)
        assert "runs as uid 65534" in cp.stderr, describe(cp)

    addr = c.addr(0)
    raw = Conn(addr, auth=False)
    for op, payload in (("PING", b""), ("NS_LIST", s16("")),
                        ("NS_REMOVE", s16("s/secret"))):
        status, _ = raw.call(OP[op], payload)
        assert status == GFS_EAUTH, (op, status)
    # no large frames before AUTH: refused and closed, nothing buffered
    big = Conn(addr, auth=False)
    big.send(frame(OP["IO_WRITE"], length=1 << 20, reqid=9))
    h, _ = big.reply()
    assert h[3] == 9 and h[4] == GFS_EAUTH
    assert big.reply() is None
    big.close()
    status, p = raw.call(OP["AUTH"], u32(32) + os.urandom(32))
    assert status == 0 and len(p) == 36
    status, _ = raw.call(OP["AUTH_PROVE"], u32(32) + b"\0" * 32)
    assert status == GFS_EAUTH
    assert raw.reply() is None, "a wrong proof must close the connection"
    raw.close()
    cp = c.galley("get", "s/secret", tmp_path / "back")
    assert cp.returncode == 0, describe(cp)
    assert (tmp_path / "back").read_bytes() == src.read_bytes()

    # data: directories 0700, files 0600 (what galleyd made)
    for i in range(c.n):
        sd = c.dir / ("server%d" % i)
        assert stat.S_IMODE(sd.stat().st_mode) == 0o700
        for root, dirs, files in os.walk(sd):
            for d in dirs:
                m = stat.S_IMODE(os.stat(os.path.join(root, d)).st_mode)
                assert m == 0o700, (root, d, oct(m))
            for f in files:
                if root == str(sd) and f in ("log", "pid", "port"):
                    continue  # galley-cluster's, in the 0700 directory
                m = stat.S_IMODE(os.stat(os.path.join(root, f)).st_mode)
                assert m == 0o600, (root, f, oct(m))


def test_cluster_file_from_several_clusters(make_cluster, tmp_path):
    """Clusters started one per host (as a multi-host harness does) share
    the user's key: a cluster file made of their lines, with no key beside
    it, works through ~/.galley/key; without that key it is refused."""
    a = make_cluster(n=1, name="hostA")
    b = make_cluster(n=1, name="hostB")
    assert (a.dir / "cluster.key").read_text() == \
        (b.dir / "cluster.key").read_text()
    both = tmp_path / "both"
    both.mkdir()
    cf = both / "cluster"
    cf.write_text(a.cluster_file.read_text() + b.cluster_file.read_text())
    src = tmp_path / "x"
    src.write_bytes(os.urandom(300000))
    cp = galley(cf, "put", src, "multi/x")
    assert cp.returncode == 0, describe(cp)
    cp = galley(cf, "get", "multi/x", tmp_path / "y")
    assert cp.returncode == 0 and (tmp_path / "y").read_bytes() == \
        src.read_bytes()
    cp = run([galley_path(), "-c", str(cf), "ls"],
             env=base_env({"HOME": str(both)}))
    assert cp.returncode != 0 and "cluster secret" in cp.stderr, describe(cp)


def test_server_must_prove_the_secret_too(tmp_path):
    """A client with its cluster's key refuses a server that does not know
    it (one started without --key on a port the cluster used); a server
    restarted by hand on its data directory keeps its key.  A hand-made
    cluster without a key is served to anyone."""
    p, addr, cf = hand_server(tmp_path, key=False)
    try:
        cp = galley(cf, "ping")  # no key beside: open (user key or none)
        assert cp.returncode == 0, describe(cp)
        kf = tmp_path / "hand" / "cluster.key"
        kf.write_text(os.urandom(32).hex() + "\n")
        kf.chmod(0o600)
        cp = galley(cf, "ping")
        assert cp.returncode != 0, describe(cp)
    finally:
        p.terminate()
        p.wait(10)
    # the same data directory with --key, then again without: still keyed
    for extra in (["--key", str(kf)], []):
        q = subprocess.Popen([galleyd_path(), "--data",
                              str(tmp_path / "hand" / "data"), "--listen",
                              "%s:%d" % addr, *extra],
                             stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
        try:
            assert q.stdout.readline().startswith("listening")
            assert galley(cf, "ping").returncode == 0
            cp = run([galley_path(), "-c", str(cf), "ping"],
                     env=base_env({"GALLEY_KEY": "/nonexistent"}))
            assert cp.returncode != 0, describe(cp)
            assert "cluster secret" in cp.stdout + cp.stderr, describe(cp)
        finally:
            q.terminate()
            q.wait(10)


# --------------------------------------------------------------- full disk ----

@pytest.fixture
def small_disk(tmp_path):
    """Server 1 of the cluster in tmp_path/"cl" gets a 32 MB tmpfs of its
    own (root only): a disk another program can fill, while the file
    records stay on server 0's disk (so nothing else frees space first)."""
    d = tmp_path / "cl" / "server1"
    d.mkdir(parents=True)
    cp = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs",
                         str(d)], capture_output=True, text=True)
    if cp.returncode != 0:
        pytest.skip("cannot mount a tmpfs: %s" % cp.stderr.strip())
    yield d
    subprocess.run(["umount", "-l", str(d)], capture_output=True)


def fill(path):
    """Fill the file system of `path` as another program would (again:
    appending to its file); returns the file."""
    f = path / "filler"
    chunk = b"\xff" * MB
    with open(f, "ab", buffering=0) as out:
        try:
            while True:
                out.write(chunk)
        except OSError:
            pass
        try:
            while True:
                out.write(b"\xff" * 4096)
        except OSError:
            pass
    return f


def free_bytes(path):
    sv = os.statvfs(path)
    return sv.f_bavail * sv.f_frsize


def names_on(cluster, server, prefix, n):
    """n file names whose records live on `server` (FNV-1a of the name)."""
    out, i = [], 0
    while len(out) < n:
        name = "%s%d" % (prefix, i)
        h = 0xcbf29ce484222325
        for b in name.encode():
            h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
        if h % cluster.n == server:
            out.append(name)
        i += 1
    return out


def test_full_disk_rm_and_restart(small_disk, make_cluster, tmp_path):
    """Another program fills a server's disk: `galley rm` still works and
    frees the file's space there; `restart-server` starts that server
    again (tracked: status and stop find it)."""
    c = make_cluster(n=2, name="cl")
    src = tmp_path / "big"
    src.write_bytes(os.urandom(8 * MB))
    a, b, third = names_on(c, 0, "full/", 3)
    for name in (a, b):
        cp = c.galley("put", src, name)
        assert cp.returncode == 0, describe(cp)
        assert [s for s, _ in find_record(c, name)] == [0, 1]
    fill(small_disk)
    cp = c.galley("put", src, third)
    assert cp.returncode != 0  # no room: an error, not a hang
    fill(small_disk)  # what that put released, the other program takes
    free0 = free_bytes(small_disk)
    assert free0 < 4096

    cp = c.galley("rm", a)
    assert cp.returncode == 0, describe(cp)
    assert free_bytes(small_disk) >= free0 + 3 * MB
    cp = c.galley("ls")
    assert a not in cp.stdout.split() and b in cp.stdout.split(), cp.stdout

    # full again, and kept full: the other program takes every page the
    # moment it is released (a job that keeps writing)
    fill(small_disk)
    stop = threading.Event()

    def hog():
        with open(small_disk / "filler", "ab", buffering=0) as out:
            while not stop.is_set():
                try:
                    out.write(b"\xff" * 4096)
                except OSError:
                    time.sleep(0.0005)

    t = threading.Thread(target=hog)
    t.start()
    try:
        c.kill(1)
        c.restart(1)
    finally:
        stop.set()
        t.join()
    st = c.status()
    assert st.returncode == 0, describe(st)
    cp = c.galley("get", b, tmp_path / "b")
    assert cp.returncode == 0, describe(cp)
    assert (tmp_path / "b").read_bytes() == src.read_bytes()
    cp = c.galley("rm", b)
    assert cp.returncode == 0, describe(cp)
    (small_disk / "filler").unlink()
    assert c.stop().returncode == 0
    assert not any(c.alive(i) for i in range(c.n))


def test_full_disk_rm_of_a_record_on_it(small_disk, make_cluster, tmp_path):
    """The disk that is full holds the file's record as well as its data:
    `galley rm` still works (the metadata log keeps room for its next
    records, servers/wal.c), frees the space, and the removal survives a
    kill -9 and restart of that server."""
    c = make_cluster(n=2, name="cl")
    src = tmp_path / "big"
    src.write_bytes(os.urandom(4 * MB))
    a, b = names_on(c, 1, "fullrec/", 2)
    for name in (a, b):
        cp = c.galley("put", src, name)
        assert cp.returncode == 0, describe(cp)
        assert sorted(s for s, _ in find_record(c, name)) == [0, 1]
    # many files without data: their removes log more than the log's
    # last page holds (~100 B each on server 1)
    count = 300
    cp = c.helper("t_mdstorm", "create", "/fullrec/m", count)
    assert cp.returncode == 0, describe(cp)
    fill(small_disk)
    free0 = free_bytes(small_disk)
    assert free0 < 4096
    cp = c.helper("t_mdstorm", "remove", "/fullrec/m", count)
    assert cp.returncode == 0 and cp.stdout.count("ok ") == count, \
        describe(cp)
    cp = c.galley("rm", a)
    assert cp.returncode == 0, describe(cp)
    cp = c.galley("ls")
    assert a not in cp.stdout.split() and b in cp.stdout.split(), cp.stdout
    assert not any(n.startswith("/fullrec/m") or n.startswith("fullrec/m")
                   for n in cp.stdout.split()), cp.stdout
    c.kill(1)
    c.restart(1)
    cp = c.galley("ls")
    assert a not in cp.stdout.split() and b in cp.stdout.split(), cp.stdout
    assert free_bytes(small_disk) >= free0 + MB
    cp = c.galley("get", b, tmp_path / "b")
    assert cp.returncode == 0, describe(cp)
    assert (tmp_path / "b").read_bytes() == src.read_bytes()
    (small_disk / "filler").unlink()
    assert c.stop().returncode == 0


# ------------------------------------------------------------ live fuzzing ----

def test_fuzz_live_server_while_a_client_works(make_cluster, tmp_path):
    """For a bounded time (GALLEY_FUZZ_SECONDS, default 8) several threads
    throw random and mutated frames at a live server, authenticated and
    not; meanwhile a legitimate client writes and reads back files through
    the `galley` command, byte-exact.  The server survives and serves."""
    c = make_cluster(n=2)
    seconds = float(os.environ.get("GALLEY_FUZZ_SECONDS", "8"))
    name = "fuzz/target"
    conn, fkid, server = raw_fork(c, name)
    conn.close()
    addr = c.addr(server)
    stop = time.monotonic() + seconds
    errors = []
    counts = [0, 0]

    valid = [
        frame(OP["PING"]),
        frame(OP["NS_LOOKUP"], s16(name)),
        frame(OP["IO_READ"], u64(fkid) + u32(1) + extent(0, 100)),
        frame(OP["IO_READ"], u64(fkid) + u32(1) + strided(0, 3, [(50, 7)])),
        frame(OP["IO_WRITE"], u64(fkid) + u32(1) + extent(4096, 4) + b"fuzz"),
        frame(OP["FORK_LIST"], u64(fkid >> 16)),
        frame(OP["STATFS"]),
    ]

    def fuzzer(seed):
        rnd = random.Random(seed)
        while time.monotonic() < stop:
            try:
                k = Conn(addr, timeout=3, auth=rnd.random() < 0.8)
            except OSError as e:
                errors.append("connect: %s" % e)
                return
            try:
                for _ in range(rnd.randrange(1, 40)):
                    f = bytearray(rnd.choice(valid))
                    how = rnd.randrange(5)
                    if how == 0:  # flip bytes, but never a handle (it
                        # could become the legitimate client's)
                        for _ in range(rnd.randrange(1, 6)):
                            i = rnd.choice([rnd.randrange(24)] + (
                                [rnd.randrange(32, len(f))]
                                if len(f) > 32 else []))
                            f[i] = rnd.getrandbits(8)
                    elif how == 1 and len(f) > 24:  # mutate the payload
                        i = rnd.randrange(24, len(f))
                        f[i:] = bytes(rnd.getrandbits(8)
                                      for _ in range(rnd.randrange(0, 64)))
                        f[20:24] = struct.pack("<I", len(f) - 24)
                    elif how == 2:  # random opcode, random payload
                        pl = bytes(rnd.getrandbits(8)
                                   for _ in range(rnd.randrange(0, 200)))
                        f = bytearray(frame(rnd.randrange(0, 70), pl))
                    elif how == 3:  # truncated
                        f = f[:rnd.randrange(1, len(f) + 1)]
                    k.send(bytes(f))
                    counts[0] += 1
                    if how == 3:
                        break
                    try:
                        r = k.reply()
                    except socket.timeout:
                        r = None
                    if r is None:
                        break
                    counts[1] += 1
            except OSError:
                pass
            finally:
                k.close()

    threads = [threading.Thread(target=fuzzer, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    rounds = 0
    rnd = random.Random(99)
    try:
        while time.monotonic() < stop or rounds == 0:
            data = os.urandom(rnd.randrange(1, 300000))
            src = tmp_path / "in"
            src.write_bytes(data)
            cp = c.galley("put", src, "fuzz/legit", "-f", timeout=60)
            assert cp.returncode == 0, describe(cp)
            cp = c.galley("get", "fuzz/legit", tmp_path / "out", timeout=60)
            assert cp.returncode == 0, describe(cp)
            assert (tmp_path / "out").read_bytes() == data
            rounds += 1
    finally:
        for t in threads:
            t.join(30)
    print("fuzz frames sent %d, answered %d; legitimate rounds %d" %
          (counts[0], counts[1], rounds))
    assert not errors, errors[:5]
    assert counts[0] > 100 and rounds >= 1
    for i in range(c.n):
        assert c.alive(i), c.log(i)[-3000:]
    assert c.galley("ping").returncode == 0


# ---------------------------------------------------- shared-pointer counters ----

FETCH_SET = ALL_OPS["FETCH_SET"]
ERANGE = -34


def test_counters_stay_in_range_and_reset_atomically(cluster):
    """FETCH_ADD never takes a counter below 0 or past INT64_MAX (-ERANGE,
    nothing changed; the key keeps working); FETCH_SET replaces a value in
    one request; threads mixing resets and adds never see an error."""
    name = "ctr/f%d" % os.getpid()
    assert cluster.galley("create", name, "-n", "1").returncode == 0
    (server, hid), = find_record(cluster, name)
    c = Conn(cluster.addr(server))

    def add(key, d):
        status, p = c.call(OP["FETCH_ADD"], u64(hid) + s16(key) +
                           struct.pack("<q", d))
        return status if status else struct.unpack("<Q", p)[0]

    def fset(key, v):
        status, p = c.call(FETCH_SET, u64(hid) + s16(key) + u64(v))
        return status if status else struct.unpack("<Q", p)[0]

    assert add("k", -5) == ERANGE  # a fresh key is 0: stays 0
    assert add("k", 3) == 0
    assert add("k", -4) == ERANGE
    assert add("k", -3) == 3
    assert add("k", 0) == 0
    assert fset("k", 7) == 0
    assert add("k", (1 << 63) - 1) == ERANGE
    assert fset("k", 1 << 63) == ERANGE
    assert fset("k", (1 << 63) - 1) == 7
    assert add("k", 1) == ERANGE
    assert fset("fresh", 5) == 0 and add("fresh", 0) == 5
    c.close()

    errors = []

    def worker(seed):
        k = Conn(cluster.addr(server))
        rnd = random.Random(seed)
        try:
            for _ in range(150):
                if rnd.random() < 0.3:
                    st, p = k.call(FETCH_SET, u64(hid) + s16("fp") + u64(0))
                else:
                    st, p = k.call(OP["FETCH_ADD"], u64(hid) + s16("fp") +
                                   u64(rnd.randrange(1, 100)))
                if st or struct.unpack("<Q", p)[0] >= 1 << 63:
                    errors.append((st, p))
        finally:
            k.close()

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors, errors[:5]


# ------------------------------------------------------------- lock leases ----

LOCKER = r"""
import ctypes, sys, time
g = ctypes.CDLL(sys.argv[1])
assert g.gfs_init(sys.argv[2].encode()) == 0
sid = g.gfs_striped_open(sys.argv[3].encode())
assert sid >= 0, sid
print("locking", flush=True)
rc = g.gfs_striped_lock(sid, ctypes.c_int64(0), ctypes.c_int64(100), 1)
print("locked %d" % rc, flush=True)
time.sleep(float(sys.argv[4]))  # computing, or stopped by SIGSTOP
rc = g.gfs_striped_unlock(sid, ctypes.c_int64(0), ctypes.c_int64(100))
print("unlocked %d" % rc, flush=True)
g.gfs_finalize()
"""


def test_lock_leases(tmp_path):
    """A lock whose holder is stopped (SIGSTOP) expires after --lock-lease
    (3 s here) and a waiter gets it; a holder that keeps running but sends
    nothing of its own for three leases keeps its lock (libgalley renews
    it), and the waiter gets it only at the holder's unlock."""
    p, addr, cf = hand_server(tmp_path, "--lock-lease", "3")
    so = libgalley_so()
    try:
        cp = galley(cf, "create", "lk/f", "-n", "1", "-u", "4096")
        assert cp.returncode == 0, describe(cp)
        script = tmp_path / "locker.py"
        script.write_text(LOCKER)
        env = base_env({"GALLEY_TIMEOUT": "30"})

        def locker(hold):
            q = subprocess.Popen([os.sys.executable, str(script), so, str(cf),
                                  "lk/f", str(hold)], env=env, text=True,
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
            line = q.stdout.readline()
            assert line == "locking\n", (line, q.stderr.read())
            return q

        def wait_locked(q, timeout):
            """Seconds until q printed "locked 0", or None after timeout."""
            t0 = time.monotonic()
            got = []
            t = threading.Thread(target=lambda: got.append(q.stdout.readline()))
            t.daemon = True
            t.start()
            t.join(timeout)
            if not got:
                return None
            assert got[0] == "locked 0\n", (got, q.stderr.read())
            return time.monotonic() - t0

        def finish(q):
            """q's remaining stdout and its stderr once it exits: read
            through q.stdout, whose buffer may already hold lines past the
            one readline returned (communicate with a timeout reads the
            pipe itself and would miss them)."""
            q.wait(timeout=20)
            return q.stdout.read(), q.stderr.read()

        # a running holder: 9 s (three leases) with the lock, never stolen
        holder = locker(9)
        assert wait_locked(holder, 10) is not None
        waiter = locker(0)
        took = wait_locked(waiter, 20)
        out = finish(holder)[0]
        assert "unlocked 0" in out, out  # it still held it at the end
        assert took is not None and took > 7, took
        finish(waiter)

        # a stopped holder: its lock expires after the lease
        holder = locker(60)
        assert wait_locked(holder, 10) is not None
        stop_process(holder.pid)
        try:
            waiter = locker(0)
            took = wait_locked(waiter, 20)
            assert took is not None and 2 < took < 12, took
            out, err = finish(waiter)
            assert "unlocked 0" in out, (waiter.returncode, out, err)
        finally:
            holder.kill()
            holder.wait()
        log = (tmp_path / "hand" / "log").read_text()
        assert "lock lease expired" in log, log[-2000:]
    finally:
        p.terminate()
        p.wait(10)


# -------------------------------------------------------------------- fsck ----

def test_fsck_finds_and_repairs_the_orphans_of_an_interrupted_rm(
        fresh_cluster, tmp_path):
    """A server is killed in the middle of `galley rm` (stopped while the
    rm's subfile delete waits on it, then SIGKILLed): the record is gone
    (the rm succeeds: a file of one copy's subfiles are reclaimed after
    its record, libgalley/files_delete.c) but that server keeps the file's
    subfile.  `galley fsck` reports exactly that orphan,
    `--repair` removes it (its directory leaves the server's disk), other
    files are untouched, and fsck is clean afterwards."""
    c = fresh_cluster
    src = tmp_path / "data"
    src.write_bytes(os.urandom(1 * MB))
    for name in ("keep/a", "doomed/b"):
        cp = c.galley("put", src, name)
        assert cp.returncode == 0, describe(cp)
    cp = c.galley("fsck")
    assert cp.returncode == 0 and "0 orphan(s)" in cp.stdout, describe(cp)

    subs = find_record(c, "doomed/b")
    victim, hid = [(s, h) for s, h in subs if s != 0][-1]
    pid = c.pause(victim)  # the rm will wait on it
    rm = subprocess.Popen([galley_path(), "-c", str(c.cluster_file), "rm",
                           "doomed/b"], env=dict(c.env, GALLEY_TIMEOUT="20"),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    time.sleep(1.0)
    c.kill(victim)  # SIGKILL mid-rm
    t0 = time.monotonic()
    out, err = rm.communicate(timeout=60)
    print("rm after the kill: %.1f s" % (time.monotonic() - t0))
    assert rm.returncode == 0, (out, err)
    t0 = time.monotonic()
    c.restart(victim)
    print("restart: %.1f s" % (time.monotonic() - t0))
    assert "doomed/b" not in c.galley("ls").stdout.split()
    subdir = c.dir / ("server%d" % victim) / "sub" / str(hid)
    assert subdir.is_dir()

    cp = c.galley("fsck")
    assert cp.returncode == 1, describe(cp)
    orphans = [l for l in cp.stdout.splitlines() if l.startswith("orphan")]
    assert orphans == ["orphan      server %d sub %d of 'doomed/b' subfile "
                       "%d: no record names it" % (
                           victim, hid, [s for s, _ in subs].index(victim))
                       ], cp.stdout
    cp = c.galley("fsck", "--repair")
    assert cp.returncode == 0, describe(cp)
    assert "repaired    server %d sub %d" % (victim, hid) in cp.stdout
    assert not subdir.exists()
    cp = c.galley("fsck")
    assert cp.returncode == 0 and "0 orphan(s)" in cp.stdout, describe(cp)
    cp = c.galley("get", "keep/a", tmp_path / "back")
    assert cp.returncode == 0
    assert (tmp_path / "back").read_bytes() == src.read_bytes()
