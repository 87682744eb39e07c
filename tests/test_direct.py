"""The direct transport (libgalley/transport_direct.c, servers/direct.c): a
client on the server's host, running as the server's user, gets the fork
files' descriptors and moves data itself.  What must hold, with real
servers and real processes (driven through libgalley by ctypes):

- the coherence invariant: the server's cache never serves, nor writes
  back, bytes older than a direct write -- a direct writer and a TCP
  writer interleave strided records on one fork, byte-checked through
  both paths;
- another user's client is refused (and falls back); a TCP connection
  never gets a descriptor;
- descriptors are close-on-exec;
- a fork deleted or truncated under a direct client behaves as a file two
  local processes share;
- a direct writer killed with -9 loses no acknowledged byte;
- the server's IO_STATS counts the bytes direct clients moved;
- threads of one client opening, moving and closing one file at once
  (releasing the grants each other use) lose no byte and never crash."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import (LineReader, assert_helper_ok, base_env, describe,
                      galley_path, libgalley_so, run)
from gproto_const import OP
import struct

from test_protocol import Conn, find_record, s16, u64
from test_transport import LocalConn, start_galleyd_as, transports

GFS_EDIRECT = -1022
T_TCP, T_CMA, T_DIRECT = 1, 3, 4


def u8(v):
    return struct.pack("<B", v)

# A small driver of libgalley: one command per stdin line, one answer line
# each (so a test can interleave several processes step by step).  Its
# file is written once per test, under another name and renamed: written
# again in place for each Worker, a worker started just before could read
# it cut where the rewrite's truncation found it (at 0, 4096 or 8192
# bytes here): exit 0 at once, or, cut at 8192, keep running without the
# later commands ("close", "quit") and never answer them.
WORKER = r"""
import ctypes, hashlib, os, subprocess, sys
g = ctypes.CDLL(sys.argv[1])
g.gfs_fork_size.restype = ctypes.c_int64
g.gfs_read.restype = g.gfs_write.restype = g.gfs_listio.restype = ctypes.c_int64
g.gfs_read.argtypes = g.gfs_write.argtypes = [
    ctypes.c_int, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64]
g.gfs_truncate_fork.argtypes = [ctypes.c_int, ctypes.c_int64]

class E(ctypes.Structure):
    _fields_ = [("f", ctypes.c_int64), ("m", ctypes.c_int64),
                ("s", ctypes.c_int64)]

def pattern(n):
    return bytes((i * 7 + 1) & 255 for i in range(n))

def rec(i, size, gen=0):
    return ((i + (gen << 24)).to_bytes(4, "little") * (size // 4 + 1))[:size]

rc = g.gfs_init(sys.argv[2].encode())
assert rc == 0, rc
kid = -1
def say(*a):
    print(*a, flush=True)
for line in sys.stdin:
    w = line.split()
    cmd, a = w[0], [int(x) if x.lstrip("-").isdigit() else x for x in w[1:]]
    if cmd == "create":
        rc = g.gfs_create_file(a[0].encode(), 1, None)
        fid = g.gfs_open_file(a[0].encode()) if rc == 0 else rc
        rc = g.gfs_create_fork(fid, 0, b"f") if fid >= 0 else fid
        say("ok" if rc == 0 else "err %d" % rc)
    elif cmd == "ccreate":  # a checksummed file (galley create -C)
        rc = g.gfs_create_file(a[0].encode(), 1, None)
        fid = g.gfs_open_file(a[0].encode()) if rc == 0 else rc
        rc = g.gfs_set_checksum(fid, b"crc32c") if fid >= 0 else fid
        rc = g.gfs_create_fork(fid, 0, b"f") if rc == 0 else rc
        say("ok" if rc == 0 else "err %d" % rc)
    elif cmd == "open":
        fid = g.gfs_open_file(a[0].encode())
        kid = g.gfs_open_fork(fid, 0, b"f") if fid >= 0 else fid
        say("ok %d" % kid if kid >= 0 else "err %d" % kid)
    elif cmd == "transport":
        say("ok %d" % g.gfs_server_transport(0))
    elif cmd == "records":  # phase nproc recsize nrec gen: one list write
        ph, npr, rs, nr, gen = a
        idx = [i for i in range(nr) if i % npr == ph]
        ents = (E * len(idx))(*[E(i * rs, k * rs, rs)
                                for k, i in enumerate(idx)])
        buf = b"".join(rec(i, rs, gen) for i in idx)
        n = g.gfs_listio(kid, 1, len(idx), ents, buf)
        say("ok" if n == len(buf) else "err %d" % n)
    elif cmd == "prep":  # phase nproc recsize nrec gen0 gen1: build calls
        ph, npr, rs, nr, g0, g1 = a
        idx = [i for i in range(nr) if i % npr == ph]
        ents = (E * len(idx))(*[E(i * rs, k * rs, rs)
                                for k, i in enumerate(idx)])
        bufs = [b"".join(rec(i, rs, gen) for i in idx)
                for gen in range(g0, g1 + 1)]
        say("ok")
    elif cmd == "go":  # the prepared calls, back to back
        for buf in bufs:
            n = g.gfs_listio(kid, 1, len(idx), ents, buf)
            assert n == len(buf), n
        say("ok")
    elif cmd == "tgo":  # phase0 nthreads nproc recsize nrec gen rounds:
        # the records of phases phase0.. each from its own thread, at once:
        # the first thread writes its records once, while the others
        # rewrite theirs `rounds` times (a lost update of the first
        # thread's records is then never written over)
        import threading, time
        p0, nt, npr, rs, nr, gen, rounds = a
        def phase(j, out):
            ph = p0 + j
            idx = [i for i in range(nr) if i % npr == ph]
            ents = (E * len(idx))(*[E(i * rs, k * rs, rs)
                                    for k, i in enumerate(idx)])
            buf = b"".join(rec(i, rs, gen) for i in idx)
            if j == 0:
                time.sleep(0.002)
            for _ in range(1 if j == 0 else rounds):
                n = g.gfs_listio(kid, 1, len(idx), ents, buf)
                if n != len(buf):
                    out.append(n)
        errs = []
        ts = [threading.Thread(target=phase, args=(j, errs))
              for j in range(nt)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        say("ok" if not errs else "err %s" % errs[:3])
    elif cmd == "sacked":  # phase nproc recsize nrec: records, forever
        # (generations 1..250, then 1 again; recsize a multiple of 4)
        ph, npr, rs, nr = a
        idx = [i for i in range(nr) if i % npr == ph]
        ents = (E * len(idx))(*[E(i * rs, k * rs, rs)
                                for k, i in enumerate(idx)])
        # rec(i, rs, gen) differs by gen only in every 4th byte: patched
        # in place, so nearly all the time is spent in the calls
        buf = bytearray(b"".join(rec(i, rs, 0) for i in idx))
        gen = 1
        while True:
            buf[3::4] = bytes([gen]) * (len(buf) // 4)
            n = g.gfs_listio(kid, 1, len(idx), ents, bytes(buf))
            assert n == len(buf), n
            say("acked %d" % gen)
            gen = gen % 250 + 1
    elif cmd == "verify":  # recsize nrec nproc phase gen...: its records,
        # each 4-byte word of one of these generations
        rs, nr, npr, ph = a[:4]
        buf = ctypes.create_string_buffer(rs * nr)
        n = g.gfs_read(kid, 0, buf, rs * nr)
        data = buf.raw
        bad = []
        for i in range(ph, nr, npr):
            ok = [rec(i, rs, x) for x in a[4:]]
            r = data[i * rs:(i + 1) * rs]
            if not all(any(r[j:j + 4] == o[j:j + 4] for o in ok)
                       for j in range(0, rs, 4)):
                bad.append(i)
        say("ok" if n == rs * nr and not bad else
            "bad n=%d records %s" % (n, bad[:8]))
    elif cmd == "check":  # recsize nrec [gen]: every record as written
        rs, nr, gen = (a + [0])[:3]
        buf = ctypes.create_string_buffer(rs * nr)
        n = g.gfs_read(kid, 0, buf, rs * nr)
        data = buf.raw
        bad = [i for i in range(nr)
               if data[i * rs:(i + 1) * rs] != rec(i, rs, gen)]
        say("ok" if n == rs * nr and not bad else
            "bad n=%d records %s" % (n, bad[:8]))
    elif cmd == "read":  # off len: bytes returned and their digest
        buf = ctypes.create_string_buffer(a[1])
        n = g.gfs_read(kid, a[0], buf, a[1])
        say("ok %d %s" % (n, hashlib.sha1(buf.raw[:max(n, 0)]).hexdigest()))
    elif cmd == "write":  # off len byte
        n = g.gfs_write(kid, a[0], bytes([a[2]]) * a[1], a[1])
        say("ok" if n == a[1] else "err %d" % n)
    elif cmd in ("lw", "lr"):  # f:m:s,... one list call on pattern()
        ents = [E(*map(int, x.split(":"))) for x in a[0].split(",")]
        n = max(e.m + e.s for e in ents)
        buf = ctypes.create_string_buffer(pattern(n) if cmd == "lw" else n)
        got = g.gfs_listio(kid, int(cmd == "lw"), len(ents),
                           (E * len(ents))(*ents), buf)
        say("ok %d %s" % (got, hashlib.sha1(buf.raw[:n]).hexdigest()))
    elif cmd == "size":
        say("ok %d" % g.gfs_fork_size(kid))
    elif cmd == "truncate":
        say("ok %d" % g.gfs_truncate_fork(kid, a[0]))
    elif cmd == "fds":  # our descriptors of fork files (and sidecars)
        n = sum(1 for f in os.listdir("/proc/self/fd")
                if "/sub/" in (os.readlink("/proc/self/fd/" + f)
                               if os.path.exists("/proc/self/fd/" + f)
                               else ""))
        say("ok %d" % n)
    elif cmd == "exec_fds":  # a child's, across exec, nothing closed for it
        out = subprocess.run(["sh", "-c", "ls -l /proc/$$/fd"],
                             close_fds=False, capture_output=True,
                             text=True).stdout
        say("ok %d" % sum(1 for l in out.splitlines() if "/sub/" in l))
    elif cmd == "acked":  # records of rs bytes, forever; each acknowledged
        i = 0
        while True:
            n = g.gfs_write(kid, i * a[0], rec(i, a[0]), a[0])
            assert n == a[0], n
            say("acked %d" % i)
            i += 1
    elif cmd == "sopen":  # name nsub: a striped file (created if new)
        g.gfs_create_striped(a[0].encode(), a[1], None, 0, None)
        sid = g.gfs_striped_open(a[0].encode())
        say("ok %d" % sid if sid >= 0 else "err %d" % sid)
    elif cmd == "sw":  # off len byte: one gfs_striped_write
        g.gfs_striped_write.restype = ctypes.c_int64
        g.gfs_striped_write.argtypes = [ctypes.c_int, ctypes.c_int64,
                                        ctypes.c_void_p, ctypes.c_int64]
        n = g.gfs_striped_write(sid, a[0], bytes([a[2]]) * a[1], a[1])
        say("ok" if n == a[1] else "err %d" % n)
    elif cmd == "srecords":  # phase nproc recsize nrec gen: one list write
        ph, npr, rs, nr, gen = a
        g.gfs_striped_listio.restype = ctypes.c_int64
        idx = [i for i in range(nr) if i % npr == ph]
        ents = (E * len(idx))(*[E(i * rs, k * rs, rs)
                                for k, i in enumerate(idx)])
        buf = b"".join(rec(i, rs, gen) for i in idx)
        n = g.gfs_striped_listio(sid, 1, len(idx), ents, buf)
        say("ok" if n == len(buf) else "err %d" % n)
    elif cmd == "sread":  # off len: bytes returned and their digest
        g.gfs_striped_read.restype = ctypes.c_int64
        g.gfs_striped_read.argtypes = [ctypes.c_int, ctypes.c_int64,
                                       ctypes.c_void_p, ctypes.c_int64]
        buf = ctypes.create_string_buffer(a[1])
        n = g.gfs_striped_read(sid, a[0], buf, a[1])
        say("ok %d %s" % (n, hashlib.sha1(buf.raw[:max(n, 0)]).hexdigest()))
    elif cmd == "sreads":  # off len count: count reads of len bytes in
        # turn from off, each one call: bytes in all and their digest
        g.gfs_striped_read.restype = ctypes.c_int64
        g.gfs_striped_read.argtypes = [ctypes.c_int, ctypes.c_int64,
                                       ctypes.c_void_p, ctypes.c_int64]
        buf = ctypes.create_string_buffer(a[1])
        h, total = hashlib.sha1(), 0
        for i in range(a[2]):
            n = g.gfs_striped_read(sid, a[0] + i * a[1], buf, a[1])
            if n < 0:
                total = n
                break
            h.update(buf.raw[:n])
            total += n
        say("ok %d %s" % (total, h.hexdigest()))
    elif cmd == "sforkread":  # off len: read in a child after fork()
        g.gfs_striped_read.restype = ctypes.c_int64
        g.gfs_striped_read.argtypes = [ctypes.c_int, ctypes.c_int64,
                                       ctypes.c_void_p, ctypes.c_int64]
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            buf = ctypes.create_string_buffer(a[1])
            n = g.gfs_striped_read(sid, a[0], buf, a[1])
            fds = sum(1 for f in os.listdir("/proc/self/fd")
                      if "/sub/" in (os.readlink("/proc/self/fd/" + f)
                                     if os.path.exists("/proc/self/fd/" + f)
                                     else ""))
            os.write(w, ("%d %s %d" % (n, hashlib.sha1(
                buf.raw[:max(n, 0)]).hexdigest(), fds)).encode())
            os._exit(0)
        os.close(w)
        out = os.read(r, 200).decode()
        os.waitpid(pid, 0)
        say("ok " + out)
    elif cmd == "struncate":
        g.gfs_striped_truncate.argtypes = [ctypes.c_int, ctypes.c_int64]
        say("ok %d" % g.gfs_striped_truncate(sid, a[0]))
    elif cmd == "sclose":
        say("ok %d" % g.gfs_striped_close(sid))
    elif cmd == "close":
        say("ok %d" % g.gfs_close_fork(kid))
    elif cmd == "quit":
        say("ok %d" % g.gfs_finalize())
        break
"""


class Worker:
    def __init__(self, cluster_file, transport, tmp_path, env=None):
        script = tmp_path / "worker.py"
        if not script.exists():  # once, and whole: see WORKER
            (tmp_path / "worker.part").write_text(WORKER)
            os.replace(tmp_path / "worker.part", script)
        e = base_env({"GALLEY_CLUSTER": str(cluster_file),
                      "GALLEY_TRANSPORT": transport})
        e.update(env or {})
        self.p = subprocess.Popen(
            [sys.executable, str(script), libgalley_so(), str(cluster_file)],
            env=e, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, bufsize=1)
        self.lines = LineReader(self.p)

    def __call__(self, *cmd, timeout=60):
        try:
            self.p.stdin.write(" ".join(map(str, cmd)) + "\n")
            self.p.stdin.flush()
        except BrokenPipeError:  # it is gone: say why
            raise AssertionError((cmd, "worker exited", self.p.wait(10),
                                  self.err()))
        line = self.lines.next(timeout)
        assert line and line.startswith("ok"), (cmd, line, self.err())
        return line.split()[1:]

    def err(self):
        if self.p.poll() is None:
            return "(running)"
        return self.p.stderr.read()

    def int(self, *cmd):
        return int(self(*cmd)[0])

    def close(self):
        if self.p.poll() is None:
            try:
                self("quit")
            except (AssertionError, BrokenPipeError):
                pass
        self.p.kill()
        self.p.wait(10)


@pytest.fixture
def workers(cluster, tmp_path):
    made = []

    def make(transport, **kw):
        w = Worker(cluster.cluster_file, transport, tmp_path, **kw)
        made.append(w)
        return w
    yield make
    for w in made:
        w.close()


def iostat(cluster):
    cp = cluster.galley("iostat", check=True)
    rows = [l.split() for l in cp.stdout.splitlines()[1:] if l.strip()]
    return {int(r[0]): [int(x) for x in r[2:6]] for r in rows}


# ------------------------------------------------------------ choosing ----

def test_auto_and_forced_direct(cluster):
    """Same host, same user: auto takes direct; local keeps the socket
    with cross-memory attach; tcp stays tcp."""
    assert transports(cluster.galley("ping", env={"GALLEY_TRANSPORT": "auto"})) \
        == ["direct"] * cluster.n
    assert transports(cluster.galley("ping",
                                     env={"GALLEY_TRANSPORT": "direct"})) \
        == ["direct"] * cluster.n
    assert transports(cluster.galley("ping",
                                     env={"GALLEY_TRANSPORT": "local"})) \
        == ["local+cma"] * cluster.n


def test_same_bytes_every_way(cluster, tmp_path, uniq):
    """A file put directly reads back over every transport and the other
    way round (a stripe unit of 1000: pieces of every size)."""
    data = os.urandom(3 * 1024 * 1024 + 17)
    (tmp_path / "src").write_bytes(data)
    for wmode in ("direct", "tcp"):
        name = "%s-%s" % (uniq, wmode)
        cp = cluster.galley("put", tmp_path / "src", name, "-u", 1000,
                            env={"GALLEY_TRANSPORT": wmode})
        assert cp.returncode == 0, describe(cp)
        for rmode in ("direct", "local", "tcp"):
            out = tmp_path / ("o-%s-%s" % (wmode, rmode))
            cp = cluster.galley("get", name, out,
                                env={"GALLEY_TRANSPORT": rmode})
            assert cp.returncode == 0, describe(cp)
            assert out.read_bytes() == data, (wmode, rmode)


# ----------------------------------------------------------- coherence ----

RS, NREC = 1000, 3000  # records of 1000 bytes: 32 KB cache blocks hold both


def test_direct_and_tcp_writers_interleave(cluster, workers, uniq):
    """Even records written directly, odd ones through the server (TCP),
    in the same cache blocks.  The server had the blocks cached before
    the direct writer came, so a stale block, served or written back
    around the TCP writer's records, would show as wrong even records."""
    name = "/%s" % uniq
    d, t = workers("direct"), workers("tcp")
    t("create", name)
    t("open", name)
    d("open", name)
    assert t.int("transport") == T_TCP and d.int("transport") == T_DIRECT
    # zeros everywhere, read through the server: every block cached
    t("write", 0, RS * NREC, 0)
    t("read", 0, RS * NREC)
    # interleaved in time too: rounds of both writers, each one list call,
    # every round new bytes (a stale block holds the last round's), each
    # writer's records checked by the other after every round
    for gen in range(1, 4):
        d("records", 0, 2, RS, NREC, gen)
        t("read", 0, RS * NREC)  # the server's view, cached if it may
        t("records", 1, 2, RS, NREC, gen)
        for w in (t, d):  # through the server and through the file
            assert w("check", RS, NREC, gen) == [], gen
    # and at the same time: both at once, many rounds
    for w, ph in ((d, 0), (t, 1)):
        for gen in range(10, 15):
            w.p.stdin.write("records %d 2 %d %d %d\n" % (ph, RS, NREC, gen))
            if w is t:
                w.p.stdin.write("read 0 %d\n" % (RS * NREC))
        w.p.stdin.flush()
    for w in (d, t):
        for _ in range(5 if w is d else 10):
            line = w.lines.next(60)
            assert line.startswith("ok"), line
    for w in (t, d):
        assert w("check", RS, NREC, 14) == []
    d("close")
    t("close")
    # after the direct writer let go, a fresh server-path reader agrees
    f = workers("local")
    f("open", name)
    assert f("check", RS, NREC, 14) == []


# ----------------------------------------- small pieces, locked mode ----
# Writes of small pieces (16, 200 bytes) are sieved by direct clients
# (read a span, patch the pieces, write it) under OFD locks that every
# writer of the fork then takes, the server included (servers/direct.c:
# locked mode).

def run_rounds(ws, rs, nrec, g0, g1):
    """Every worker i writes its records (phase i of len(ws)) for each
    generation g0..g1, one list call each, back to back, all workers at
    once; every call must succeed."""
    for i, w in enumerate(ws):
        w("prep", i, len(ws), rs, nrec, g0, g1)
    for w in ws:
        w.p.stdin.write("go\n")
        w.p.stdin.flush()
    for w in ws:
        line = w.lines.next(120)
        assert line and line.startswith("ok"), (line, w.err())


def test_small_records_direct_and_tcp_writers_at_once(cluster, workers,
                                                       uniq):
    """Four processes write interleaved records of 16 and of 200 bytes of
    one fork at the same time, two directly (sieved) and two through the
    server (TCP), many rounds; every record of the last round is read
    back through both paths.  Then the same while a direct writer of
    large pieces, which takes no locks, holds the fork: the small-piece
    writers are refused locked mode and go to the server, and the large
    writer's bytes stay too."""
    ws = [workers(m) for m in ("direct", "tcp", "direct", "tcp")]
    for rs, nrec in ((16, 24000), (200, 3000)):
        name = "/%s-%d" % (uniq, rs)
        ws[1]("create", name)
        for w in ws:
            w("open", name)
        assert ws[0].int("transport") == T_DIRECT
        assert ws[1].int("transport") == T_TCP
        run_rounds(ws, rs, nrec, 1, 60)
        for w in ws[:2]:
            assert w("check", rs, nrec, 60) == [], rs
        for w in ws:
            w("close")
    # a direct writer of large pieces holds the fork first
    p = workers("direct")
    name = "/%s-plain" % uniq
    p("create", name)
    p("open", name)
    rs, nrec = 16, 24000
    p("write", rs * nrec, 65536, 5)
    for w in ws:
        w("open", name)
    run_rounds(ws, rs, nrec, 1, 4)
    p("write", rs * nrec + 65536, 65536, 6)
    for w in ws[:2]:
        assert w("check", rs, nrec, 4) == []
    import hashlib
    want = hashlib.sha1(bytes([5]) * 65536 + bytes([6]) * 65536).hexdigest()
    assert ws[1]("read", rs * nrec, 131072) == ["131072", want]


def test_small_records_from_threads_of_one_direct_writer(cluster, workers,
                                                         uniq):
    """Two threads of one process write interleaved 16-byte records of one
    fork at the same time, both sieved through the same descriptor, beside
    a process writing the other records over TCP: the OFD locks that shut
    other processes out of a sieved span do not shut out this process's own
    threads (they share the open file description), so the client must.
    One thread writes its records once while the other rewrites its own:
    a lost update of the first thread's records would stay."""
    d, t = workers("direct"), workers("tcp")
    rs, nrec = 16, 24000
    name = "/%s-thr" % uniq
    d("create", name)
    for w in (d, t):
        w("open", name)
    assert d.int("transport") == T_DIRECT
    for gen in range(1, 9):
        for w, p0 in ((d, 0), (t, 2)):
            w.p.stdin.write("tgo %d 2 4 %d %d %d 10\n" % (p0, rs, nrec, gen))
            w.p.stdin.flush()
        for w in (d, t):
            line = w.lines.next(300)
            assert line and line.startswith("ok"), (line, w.err())
        for w in (d, t):
            assert w("check", rs, nrec, gen) == [], gen


def wopen(c, fkid, sieve):
    """DIRECT_WOPEN: (status, locked or None)."""
    st, p = c.call(OP["DIRECT_WOPEN"], u64(fkid) + u8(sieve))
    return st, (p[16] if st == 0 else None)


def dclose(c, fkid, write):
    st, _ = c.call(OP["DIRECT_CLOSE"], u64(fkid) + u8(write) + u64(0) +
                   u64(0))
    return st


def test_locked_mode_rules(cluster, uniq):
    """The server's rules for locked mode, on raw same-host connections:
    a fork enters it only when no writer that does not lock holds it,
    every writable grant then is locked (the old DIRECT_OPEN to write is
    refused), and it ends with the last writable grant -- also when the
    holder's connection ends."""
    name = uniq + "/lk"
    assert cluster.galley("create", name, "-n", "1", "-p").returncode == 0
    assert cluster.galley("fork", "create", name, 0, "f").returncode == 0
    (server, hid), = find_record(cluster, name)
    a, b, c = (LocalConn(cluster.addr(server)) for _ in range(3))
    fk = None
    for x in (a, b, c):
        st, p = x.call(OP["FORK_OPEN"], u64(hid) + s16("f"))
        assert st == 0, st
        fk = struct.unpack("<Q", p[:8])[0]
    assert wopen(a, fk, 1) == (0, 1)  # into locked mode
    st, _ = b.call(OP["DIRECT_OPEN"], u64(fk) + u8(1))
    assert st == GFS_EDIRECT  # a writer that would not lock
    assert wopen(b, fk, 0) == (0, 1)  # the mode the fork is in
    st, _ = b.call(OP["DIRECT_OPEN"], u64(fk) + u8(0))
    assert st == 0  # reading needs no lock
    assert dclose(a, fk, 1) == 0 and dclose(b, fk, 1) == 0
    st, _ = c.call(OP["DIRECT_OPEN"], u64(fk) + u8(1))
    assert st == 0  # out of locked mode: a plain writer
    assert wopen(a, fk, 1) == (GFS_EDIRECT, None)  # it would not lock
    assert wopen(a, fk, 0) == (0, 0)
    assert dclose(a, fk, 1) == 0
    c.s.close()  # its grant ends with its connection
    for _ in range(100):
        st, locked = wopen(a, fk, 1)
        if st == 0:
            break
        time.sleep(0.1)
    assert (st, locked) == (0, 1)
    assert dclose(a, fk, 1) == 0


def copen(c, fkid, write, part):
    """DIRECT_COPEN: its status."""
    st, _ = c.call(OP["DIRECT_COPEN"], u64(fkid) + u8(write) + u8(part))
    return st


def test_locked_mode_and_checksummed_grants(cluster, uniq):
    """Locked mode and checksummed forks never meet (servers/direct.c,
    rule 7), since a checksummed fork's same-host writers take no
    data-file locks: DIRECT_COPEN is refused while the fork is in locked
    mode; once a DIRECT_COPEN holder has made the fork checksummed,
    DIRECT_WOPEN is refused, sieving or not, also after it let go."""
    name = uniq + "/lkc"
    assert cluster.galley("create", name, "-n", "1", "-p").returncode == 0
    assert cluster.galley("fork", "create", name, 0, "f").returncode == 0
    (server, hid), = find_record(cluster, name)
    a, b = (LocalConn(cluster.addr(server)) for _ in range(2))
    fk = None
    for x in (a, b):
        st, p = x.call(OP["FORK_OPEN"], u64(hid) + s16("f"))
        assert st == 0, st
        fk = struct.unpack("<Q", p[:8])[0]
    assert wopen(a, fk, 1) == (0, 1)  # into locked mode
    for write in (1, 0):
        assert copen(b, fk, write, 0) == GFS_EDIRECT
    assert dclose(a, fk, 1) == 0
    assert copen(b, fk, 1, 0) == 0  # checksummed from now on
    assert copen(b, fk, 1, 1) == 0  # its sidecar
    for sieve in (1, 0):
        assert wopen(a, fk, sieve) == (GFS_EDIRECT, None)
    assert dclose(b, fk, 1) == 0
    assert wopen(a, fk, 1) == (GFS_EDIRECT, None)
    st, _ = a.call(OP["DIRECT_OPEN"], u64(fk) + u8(1))
    assert st == GFS_EDIRECT


def test_checksummed_direct_writer_beside_small_piece_writers(
        cluster, workers, uniq):
    """A checksummed fork: one same-host writer of 64 KiB pieces, which
    holds the file and its CRC sidecar (DIRECT_COPEN), and three writers
    of interleaved 16-byte records, two of them same-host (which would
    sieve a plain fork) and one TCP, all at once.  The small pieces go to
    the server, never sieved (no grant held by their writers), and every
    byte of every writer is there, through both paths, with the CRCs
    scrub finds right."""
    import hashlib
    big = workers("direct")
    ws = [workers(m) for m in ("direct", "tcp", "direct")]
    name = "/%s-c" % uniq
    big("ccreate", name)
    big("open", name)
    for w in ws:
        w("open", name)
    rs, nrec = 16, 24000
    big("write", rs * nrec, 65536, 5)
    assert big.int("fds") == 2  # the file and its sidecar
    run_rounds(ws, rs, nrec, 1, 8)
    big("write", rs * nrec + 65536, 65536, 6)
    for w in ws[::2]:
        assert w.int("transport") == T_DIRECT
        assert w.int("fds") == 0  # the server wrote their pieces
    for w in (big, ws[1]):
        assert w("check", rs, nrec, 8) == []
    want = hashlib.sha1(bytes([5]) * 65536 + bytes([6]) * 65536).hexdigest()
    for w in (big, ws[1]):
        assert w("read", rs * nrec, 131072) == ["131072", want]
    for w in [big] + ws:
        w("close")
    cp = cluster.galley("scrub", name)
    assert cp.returncode == 0 and "0 failed" in cp.stdout, describe(cp)


def pattern(n):
    return bytes((i * 7 + 1) & 255 for i in range(n))


def test_direct_list_io_keeps_list_semantics(cluster, workers, uniq):
    """One direct list call moves many pieces out of order: a write of
    pieces in reverse file order, two of them overlapping (the later one
    wins), and a read of pieces out of order, some past the end (zeros),
    each checked byte for byte through the server (TCP) and directly; a
    list longer than the client's stack arrays too."""
    import hashlib
    name = "/%s" % uniq
    d, t = workers("direct"), workers("tcp")
    t("create", name)
    t("open", name)
    d("open", name)
    assert d.int("transport") == T_DIRECT
    size = 60000
    for npieces in (6, 40):  # below and above SMALL_PIECES (16)
        t("write", 0, size, 9)
        want = bytearray([9]) * size
        ents = [(50000 - i * 1100, i * 600, 600) for i in range(npieces)]
        # overlapping, the later one first in the file: offset order
        # would let the earlier one win
        ents += [(400, 60 * 600, 700), (100, 62 * 600, 600)]
        src = pattern(max(m + s for _, m, s in ents))
        for f, m, s in ents:  # list order: a later piece wins
            want[f:f + s] = src[m:m + s]
        spec = ",".join("%d:%d:%d" % e for e in ents)
        total = sum(s for _, _, s in ents)
        assert d("lw", spec)[0] == str(total)
        digest = hashlib.sha1(bytes(want)).hexdigest()
        assert t("read", 0, size) == [str(size), digest], npieces
        assert d("read", 0, size) == [str(size), digest], npieces
        # a read of pieces out of order, the last ones past the end
        rents = [(size - 300 + i * 500, i * 700, 700)
                 for i in range(npieces // 2)][::-1]
        rents += [(i * 1300, (npieces // 2 + i) * 700, 700)
                  for i in range(npieces // 2)][::-1]
        n = max(m + s for _, m, s in rents)
        buf = bytearray(n)
        for f, m, s in rents:
            chunk = bytes(want[f:f + s])
            buf[m:m + s] = chunk + bytes(s - len(chunk))
        spec = ",".join("%d:%d:%d" % e for e in rents)
        got = d("lr", spec)
        assert got[1] == hashlib.sha1(bytes(buf)).hexdigest(), npieces
        assert int(got[0]) >= 0


def test_tcp_writes_seen_by_direct_reader(cluster, workers, uniq):
    """A direct reader reads the file: every write the server acknowledged
    is there (write-through), also right after it."""
    name = "/%s" % uniq
    d, t = workers("direct"), workers("tcp")
    t("create", name)
    t("open", name)
    d("open", name)
    for k in range(20):
        t("write", k * 4096, 4096, k + 1)
        got = d("read", k * 4096, 4096)
        want = t("read", k * 4096, 4096)
        assert got == want and got[0] == "4096", (k, got, want)


# ------------------------------------------------------------- refusal ----

@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root and setpriv to run a server as "
                           "another user")
def test_other_user_is_refused(tmp_path):
    """A server of another user never hands this client a descriptor: auto
    falls back to the socket; direct fails, saying why."""
    p, cf, d = start_galleyd_as("nobody", tmp_path)
    try:
        env = base_env({"GALLEY_CLUSTER": str(cf)})
        cp = run([galley_path(), "ping"], env=dict(env, GALLEY_TRANSPORT="auto"))
        assert transports(cp) == ["local"], describe(cp)
        cp = run([galley_path(), "ping"],
                 env=dict(env, GALLEY_TRANSPORT="direct"))
        assert cp.returncode != 0, describe(cp)
        assert "direct access refused" in cp.stdout + cp.stderr, describe(cp)
        # the raw request too, on the same-host socket
        addr = ("127.0.0.1", int(cf.read_text().split(":")[1]))
        c = LocalConn(addr)
        st, _ = c.call(OP["DIRECT_OPEN"], u64(0) + u8(0))
        assert st == GFS_EDIRECT
        # and the data still moves, through the server
        data = os.urandom(300000)
        (tmp_path / "f").write_bytes(data)
        e = dict(env, GALLEY_TRANSPORT="auto")
        assert run([galley_path(), "put", tmp_path / "f", "/x"],
                   env=e).returncode == 0
        cp = run([galley_path(), "get", "/x", tmp_path / "g"], env=e)
        assert cp.returncode == 0 and (tmp_path / "g").read_bytes() == data
    finally:
        p.terminate()
        p.wait(10)
        shutil.rmtree(d, ignore_errors=True)


def test_tcp_connection_never_gets_a_descriptor(cluster):
    """DIRECT_OPEN over TCP (even from this host, as this user) is
    refused: only the same-host socket carries the peer's uid."""
    c = Conn(cluster.addr(0))
    st, _ = c.call(OP["DIRECT_OPEN"], u64(0) + u8(1))
    assert st == GFS_EDIRECT
    st, _ = c.call(OP["DIRECT_OPEN"], u64(1 << 16) + u8(1))
    assert st == GFS_EDIRECT


# --------------------------------------------------------- descriptors ----

def test_descriptors_do_not_cross_exec(cluster, workers, uniq):
    name = "/%s" % uniq
    d = workers("direct")
    d("create", name)
    d("open", name)
    d("write", 0, 100000, 7)
    d("read", 0, 100)
    assert d.int("fds") >= 1  # we do hold the fork's file
    assert d.int("exec_fds") == 0  # a child after exec does not
    d("close")
    assert d.int("fds") == 0  # closed with the fork


# ------------------------------------------------------ striped files ----

def test_second_small_striped_write_asks_every_subfile_at_once(
        cluster, workers, uniq):
    """An open's first 4 KiB write, within one subfile, goes through that
    subfile's server and asks for no descriptor (a small file's create,
    write and close ask one server, and no grant is asked for and given
    back); the next write, to another subfile, gets the descriptors of
    every subfile in one round of requests (later calls to them find
    them); a process holding plain writable descriptors of every subfile
    leaves another's 16-byte records to the server path, and every byte
    of both lands as written."""
    name = "/%s" % uniq
    n = cluster.n
    d, s, t = workers("direct"), workers("direct"), workers("tcp")
    d("sopen", name, n)
    assert d.int("fds") == 0
    d("sw", 0, 4096, 7)  # subfile 0 only, through its server
    assert d.int("fds") == 0
    d("sw", 65536 + 8192, 4096, 8)  # subfile 1: and every other one
    assert d.int("fds") == n
    # 16-byte records over the whole stripe set, written by another direct
    # client while d holds writable descriptors that take no locks
    s("sopen", name, n)
    nrec = n * 65536 // 16
    s("srecords", 1, 2, 16, nrec, 5)
    # d writes a 4 KiB block into every subfile after them
    for k in range(1, n):
        d("sw", k * 65536 + 8192, 4096, 7 + k)
    t("sopen", name, n)
    import hashlib
    want = bytearray(rec_bytes(nrec, 16, 2, 1, 5, bytes([7]) * 4096))
    for k in range(1, n):
        o = k * 65536 + 8192
        want[o:o + 4096] = bytes([7 + k]) * 4096
    got = t("sread", 0, len(want))
    assert got == [str(len(want)), hashlib.sha1(bytes(want)).hexdigest()]
    d("sclose")
    assert d.int("fds") == 0
    for w in (d, s, t):
        w("quit")


def rec_bytes(nrec, rs, npr, ph, gen, head=b""):
    """The file holding head (zeros after it) after phase ph of npr wrote
    its records (the worker's rec())."""
    out = bytearray(head + bytes(nrec * rs - len(head)))
    for i in range(ph, nrec, npr):
        r = (i + (gen << 24)).to_bytes(4, "little") * (rs // 4 + 1)
        out[i * rs:(i + 1) * rs] = r[:rs]
    return out


def test_striped_single_range_reads_fresh_and_counted(cluster, workers,
                                                      uniq):
    """Single-range reads of a striped file whose subfiles a direct client
    holds are preads on the fork files (striped.c: fast_read, after the
    first read built the open's reader): they see every write the server
    acknowledged right after it, a range over two subfiles, the file's end
    after a truncate (a short count, not stale bytes), holes as zeros;
    a child after fork() reads the same bytes over connections of its own,
    leaving the parent's descriptors alone; and the bytes they moved reach IO_STATS."""
    import hashlib
    name = "/%s" % uniq
    n, unit = cluster.n, 65536
    d, t = workers("direct"), workers("tcp")
    t("sopen", name, n)
    d("sopen", name, n)
    size = 2 * n * unit
    t("sw", 0, size, 1)
    d("sread", 0, 4096)  # the op path: grants, then the reader
    for k in range(3 * n):  # every subfile, rewritten after each read
        off = (k * unit + 4096 * (k % 5)) % size
        assert d("sread", off, 4096) == t("sread", off, 4096)
        t("sw", off, 4096, 50 + k)
        got = d("sread", off, 4096)
        assert got == ["4096", hashlib.sha1(bytes([50 + k]) * 4096)
                       .hexdigest()], (k, got)
    # across a stripe unit: the end of subfile 0's unit, subfile 1's start
    assert d("sread", unit - 100, 200) == t("sread", unit - 100, 200)
    # the end of the file moves under the reader
    d("sread", size - 4096, 4096)
    assert t.int("struncate", size - 1000) == 0
    assert d("sread", size - 4096, 4096)[0] == "3096"
    assert d("sread", size, 4096)[0] == "0"
    t("sw", size + 10000, 10, 9)  # a hole before it: zeros
    got = d("sread", size - 1000, 11010)
    want = t("sread", size - 1000, 11010)
    assert got == want == ["11010", hashlib.sha1(bytes(11000) + bytes([9]) *
                                                 10).hexdigest()], got
    # a child after fork(): its own connections, the same bytes; our
    # descriptors stay ours
    n_fds = d.int("fds")
    assert n_fds >= n
    child = d("sforkread", 4096, 4096)
    assert child[:2] == t("sread", 4096, 4096), child
    assert d.int("fds") == n_fds
    # counted: 512 reads of 4 KiB after the reader was built
    before = iostat(cluster)
    calls = 512
    got = d("sreads", 0, 4096, calls)
    assert got == t("sreads", 0, 4096, calls)
    d("sclose")
    assert d.int("fds") == 0
    after = iostat(cluster)
    rl = sum(after[s][2] - before[s][2] for s in after)
    # d's reads (and t's, through the server): at least d's all counted
    assert rl >= calls * 4096 * 2, (before, after)


# ----------------------------------------------------- delete, truncate ----

def test_delete_under_a_direct_client(cluster, workers, uniq):
    """Deleted while a direct client has it open: the client keeps reading
    and writing it (as an unlinked file), a new open fails, and the bytes
    go away at the last close."""
    name = "/%s" % uniq
    d = workers("direct")
    d("create", name)
    d("open", name)
    d("write", 0, 65536, 3)
    before = d("read", 0, 65536)
    assert cluster.galley("rm", name).returncode == 0
    assert d("read", 0, 65536) == before
    d("write", 65536, 1000, 4)
    assert d.int("size") == 66536
    assert cluster.galley("stat", name).returncode != 0
    d("close")
    d("quit")


def test_truncate_under_a_direct_client(cluster, workers, uniq):
    """Truncated through the server while a direct client holds it: the
    client sees the new end at once (short read, zeros past it, the size),
    and its later writes grow it again."""
    name = "/%s" % uniq
    d, t = workers("direct"), workers("tcp")
    t("create", name)
    d("open", name)
    t("open", name)
    d("write", 0, 200000, 9)
    assert t.int("size") == 200000  # the server sees the direct writes
    t("truncate", 1000)
    assert d.int("size") == 1000
    n, _ = d("read", 0, 4096)
    assert n == "1000"
    d("write", 5000, 10, 1)
    assert t.int("size") == 5010
    got = t("read", 0, 5010)
    import hashlib
    want = hashlib.sha1(bytes([9]) * 1000 + bytes(4000) + bytes([1]) * 10)
    assert got == ["5010", want.hexdigest()]


# -------------------------------------------------------------- kill -9 ----

def test_killed_direct_writer_loses_no_acknowledged_byte(cluster, workers,
                                                          uniq):
    name = "/%s" % uniq
    d = workers("direct")
    d("create", name)
    d("open", name)
    d.p.stdin.write("acked 4096\n")
    d.p.stdin.flush()
    last = -1
    end = time.monotonic() + 30
    while last < 300 and time.monotonic() < end:
        line = d.lines.next(10)
        assert line.startswith("acked"), (line, d.err())
        last = int(line.split()[1])
    os.kill(d.p.pid, signal.SIGKILL)
    d.p.wait(10)
    t = workers("tcp")
    t("open", name)
    assert t.int("size") >= (last + 1) * 4096
    assert t("check", 4096, last + 1, 0) == []


def test_killed_sieving_writer_blocks_nobody(cluster, workers, uniq):
    """A direct writer of 16-byte records (sieving under OFD locks) killed
    with -9 in the middle of its calls: the other writers of the fork,
    direct and TCP, never wait for it, none of their acknowledged records
    is lost, and each of its records is from the last generation it
    acknowledged or one after."""
    name = "/%s" % uniq
    rs, nrec = 16, 60000
    k, d, t = workers("direct"), workers("direct"), workers("tcp")
    k("create", name)
    for w in (k, d, t):
        w("open", name)
    k.p.stdin.write("sacked 0 3 %d %d\n" % (rs, nrec))
    k.p.stdin.flush()
    last = 0
    for gen in range(1, 4):  # the others write alongside it
        d("records", 1, 3, rs, nrec, gen)
        t("records", 2, 3, rs, nrec, gen)
        line = k.lines.next(60)
        assert line.startswith("acked"), (line, k.err())
        last = int(line.split()[1])
    os.kill(k.p.pid, signal.SIGKILL)
    k.p.wait(10)
    while True:  # what it printed before it died
        line = k.lines.next(5)
        if not line:
            break
        last = int(line.split()[1])
    for gen in range(4, 7):  # nobody waits for the dead writer's locks
        d("records", 1, 3, rs, nrec, gen)
        t("records", 2, 3, rs, nrec, gen)
    for w in (d, t):
        assert w("verify", rs, nrec, 3, 1, 6) == []
        assert w("verify", rs, nrec, 3, 2, 6) == []
        assert w("verify", rs, nrec, 3, 0, last, last % 250 + 1,
                 (last + 1) % 250 + 1) == []


# -------------------------------------------------------------- iostat ----

def test_iostat_counts_direct_bytes(cluster, workers, uniq):
    """The bytes a direct client moved reach IO_STATS when it closes."""
    name = "/%s" % uniq
    d = workers("direct")
    d("create", name)
    before = iostat(cluster)
    d("open", name)
    d("write", 0, 1 << 20, 5)
    d("read", 0, 1 << 20)
    d("close")
    after = iostat(cluster)
    wl = sum(after[s][0] - before[s][0] for s in after)
    rl = sum(after[s][2] - before[s][2] for s in after)
    assert wl >= 1 << 20 and rl >= 1 << 20, (before, after)


def test_threads_open_move_and_close_one_file(cluster, uniq):
    """Six threads of one direct client, each open / a few reads and
    writes of its own region / close of one striped file, over and over
    for a few seconds: a close releases the fork grants the other threads'
    transfers and closes are using at that moment.  Every byte read is
    the thread's own last write, the whole file reads back, the process
    exits 0 (no crash), and the servers counted the bytes moved."""
    before = iostat(cluster)
    cp = cluster.helper("t_dstress", "/%s" % uniq, 6, 4,
                        env={"GALLEY_TRANSPORT": "direct"}, timeout=120)
    assert_helper_ok(cp)
    m = re.search(r"^STRESS threads 6 opens (\d+) writes (\d+) reads (\d+)$",
                  cp.stdout, re.M)
    assert m, describe(cp)
    opens, writes, reads = (int(x) for x in m.groups())
    assert opens >= 60 and writes >= 60 and reads >= 60, describe(cp)
    after = iostat(cluster)
    wl = sum(after[s][0] - before[s][0] for s in after)
    rl = sum(after[s][2] - before[s][2] for s in after)
    assert wl > 0 and rl > 0, (before, after)
