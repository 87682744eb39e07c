"""Malformed protocol input on raw sockets (proto/gproto.h): each bad frame
gets an error reply or a closed connection, never a crash or a hang, and
the server keeps serving good clients."""

import errno
import random
import socket
import struct
import time

import pytest

from conftest import authenticate, cluster_key, describe
from gproto_const import (GFS_EAUTH, GFS_EBADID, GFS_EPROTO, GFS_ESTALE,
                          GP_MAGIC, GP_VERSION)
from gproto_const import OP as ALL_OPS

MAGIC = GP_MAGIC
VERSION = GP_VERSION
HDR = struct.Struct("<IHHQiI")  # magic, version, opcode, reqid, status, length
assert HDR.size == 24

# The opcodes these tests send, in this order (test_random_frames draws from
# it with a fixed seed); the numbers come from proto/gproto.h.
OP = {name: ALL_OPS[name] for name in (
    "PING", "STATFS", "CMA_PROBE", "AUTH", "AUTH_PROVE", "NS_RESERVE",
    "NS_COMMIT", "NS_RELEASE", "NS_LOOKUP", "NS_REMOVE", "NS_LIST",
    "NS_SETATTR", "SUB_CREATE", "SUB_DELETE", "FORK_CREATE", "FORK_OPEN",
    "FORK_CLOSE", "FORK_DELETE", "FORK_LIST", "FORK_SIZE", "FORK_TRUNCATE",
    "FORK_SYNC", "FORK_REOPEN", "IO_READ", "IO_WRITE", "IO_READV",
    "IO_WRITEV", "FETCH_ADD", "LOCK", "UNLOCK")}


def frame(op, payload=b"", reqid=1, magic=MAGIC, version=VERSION,
          length=None, status=0):
    return HDR.pack(magic, version, op, reqid, status,
                    len(payload) if length is None else length) + payload


def s16(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<H", len(b)) + b


def u32(v):
    return struct.pack("<I", v)


def u64(v):
    return struct.pack("<Q", v)


def extent(off, length):
    return struct.pack("<BQQ", 0, off, length)


def strided(off, size, levels):
    out = struct.pack("<BQQB", 1, off, size, len(levels))
    for count, stride in levels:
        out += struct.pack("<QQ", count, stride)
    return out


class Conn:
    """A raw client connection."""

    def __init__(self, addr, timeout=10, auth=True):
        self.s = socket.create_connection(addr, timeout=timeout)
        self.buf = b""
        if auth:
            self.authenticate(addr)

    def authenticate(self, addr):
        """Prove the cluster secret (if the server has one we know)."""
        key = cluster_key(addr)
        if key:
            authenticate(lambda op, p: self.call(op, p, reqid=3), key)

    def close(self):
        self.s.close()

    def send(self, data):
        self.s.sendall(data)

    def _fill(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                return False
            self.buf += chunk
        return True

    def reply(self):
        """(hdr tuple, payload) or None if the server closed; raises
        socket.timeout if it neither answers nor closes."""
        try:
            if not self._fill(HDR.size):
                return None
            h = HDR.unpack(self.buf[:HDR.size])
            if not self._fill(HDR.size + h[5]):
                return None
        except ConnectionResetError:
            return None
        payload = self.buf[HDR.size:HDR.size + h[5]]
        self.buf = self.buf[HDR.size + h[5]:]
        return h, payload

    def call(self, op, payload=b"", reqid=7):
        self.send(frame(op, payload, reqid=reqid))
        r = self.reply()
        assert r is not None, "server closed the connection on a good request"
        h, p = r
        assert h[0] == MAGIC and h[2] == op and h[3] == reqid, h
        return h[4], p


def ping(addr, timeout=10):
    """A good client: PING must answer with status 0 and our version."""
    c = Conn(addr, timeout)
    try:
        status, p = c.call(OP["PING"])
        assert status == 0
        version, limit, pid = struct.unpack("<HQQ", p[:18])
        assert version == VERSION and limit > 0
        return pid
    finally:
        c.close()


def outcome(addr, data, half_close, timeout=10):
    """Send raw bytes; return ("closed", frames) or ("replied", frames).
    Every reply must be a well-formed error frame."""
    c = Conn(addr, timeout)
    frames = []
    try:
        c.send(data)
        if half_close:
            try:
                c.s.shutdown(socket.SHUT_WR)
            except OSError:  # the server closed first: fine
                pass
        while True:
            try:
                r = c.reply()
            except socket.timeout:
                if frames:
                    return "replied", frames
                raise AssertionError(
                    "server neither answered nor closed within %ss" % timeout)
            if r is None:
                return "closed", frames
            h, _ = r
            assert h[0] == MAGIC and h[1] == VERSION, h
            assert h[4] < 0, "bad input answered with status %d" % h[4]
            frames.append(h)
            if not half_close:
                return "replied", frames
    except (BrokenPipeError, ConnectionResetError):
        return "closed", frames
    finally:
        c.close()


@pytest.fixture(scope="module")
def server(cluster):
    """Address and pid of server 0 of the module's cluster."""
    addr = cluster.addr(0)
    pid = ping(addr)
    assert pid == cluster.pid(0)
    return cluster, addr, pid


def still_serving(cluster, addr, pid):
    assert cluster.alive(0), cluster.log(0)[-3000:]
    assert ping(addr) == pid
    cp = cluster.galley("ping")
    assert cp.returncode == 0, describe(cp)


BAD_FRAMES = {
    # name: (bytes, half_close)
    "bad magic": (frame(OP["PING"], magic=0xDEADBEEF), False),
    "zero magic": (b"\0" * 24, False),
    "http request": (b"GET / HTTP/1.0\r\nHost: x\r\n\r\n", True),
    "wrong version": (frame(OP["PING"], version=99), False),
    "version 0": (frame(OP["PING"], version=0), False),
    "truncated header": (frame(OP["PING"])[:10], True),
    "one byte": (b"G", True),
    "length over limit": (frame(OP["PING"], length=0xFFFFFFFF), False),
    "length just over ceiling": (frame(OP["IO_WRITE"],
                                       length=(256 << 20) + 1), False),
    "truncated payload": (frame(OP["NS_LOOKUP"], length=100) + b"\x05\x00ab",
                          True),
    "unknown opcode": (frame(999), False),
    "opcode 0": (frame(0), False),
    "string longer than payload": (frame(OP["NS_LOOKUP"], b"\xff\xff" + b"a"),
                                   False),
    "name too long": (frame(OP["NS_LOOKUP"], s16("n" * 5000)), False),
    "name with NUL": (frame(OP["NS_RESERVE"], s16(b"a\0b")), False),
    "empty payload for lookup": (frame(OP["NS_LOOKUP"]), False),
    "trailing garbage": (frame(OP["NS_LOOKUP"], s16("x") + b"junk"), False),
    "record with huge nsub": (frame(OP["NS_COMMIT"], s16("r") +
                                    u32(0xFFFFFFFF)), False),
    "record with zero nsub": (frame(OP["NS_COMMIT"], s16("r") + u32(0) +
                                    u32(0)), False),
    "attr blob over limit": (frame(OP["NS_SETATTR"], s16("r") +
                                   u32(1 << 30)), False),
    "io on unknown fork": (frame(OP["IO_READ"], u64(12345) + u32(1) +
                                 extent(0, 10)), False),
    "io with huge segment count": (frame(OP["IO_READ"], u64(1) +
                                         u32(0xFFFFFFFF)), False),
}


@pytest.mark.parametrize("case", sorted(BAD_FRAMES))
def test_bad_frame(server, case):
    cluster, addr, pid = server
    data, half = BAD_FRAMES[case]
    result, frames = outcome(addr, data, half)
    print(case, result, frames)
    still_serving(cluster, addr, pid)


def test_status_field_in_a_request(server):
    """A request carrying a reply's status: answered or refused, but the
    server survives."""
    cluster, addr, pid = server
    c = Conn(addr)
    try:
        c.send(frame(OP["PING"], status=-5))
        try:
            c.reply()
        except socket.timeout:
            pytest.fail("no reply and no close within 10 s")
    finally:
        c.close()
    still_serving(cluster, addr, pid)


def test_stalled_client_does_not_block_others(server):
    """A client that sends half a header and then nothing: other clients
    are served meanwhile."""
    cluster, addr, pid = server
    stalled = [Conn(addr) for _ in range(5)]
    try:
        for i, c in enumerate(stalled):
            c.send(frame(OP["PING"])[:5 + i])
        t0 = time.monotonic()
        assert ping(addr, timeout=10) == pid
        assert time.monotonic() - t0 < 10
        big = Conn(addr)
        big.send(frame(OP["IO_WRITE"], length=1 << 20) + b"x" * 1000)
        stalled.append(big)
        assert ping(addr, timeout=10) == pid
    finally:
        for c in stalled:
            c.close()
    still_serving(cluster, addr, pid)


def test_many_abrupt_connections(server):
    cluster, addr, pid = server
    rnd = random.Random(1)
    for i in range(200):
        s = socket.create_connection(addr, timeout=5)
        if i % 3 == 0:
            s.sendall(frame(OP["PING"])[:rnd.randrange(1, 24)])
        elif i % 3 == 1:
            s.sendall(frame(OP["PING"]))  # and leave before the reply
        # RST instead of FIN for some
        if i % 2:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                         struct.pack("ii", 1, 0))
        s.close()
    still_serving(cluster, addr, pid)


def test_pipelined_requests_get_matching_replies(server):
    cluster, addr, pid = server
    c = Conn(addr)
    try:
        c.send(b"".join(frame(OP["PING"], reqid=1000 + i) for i in range(50)))
        seen = set()
        for _ in range(50):
            r = c.reply()
            assert r is not None
            h, _ = r
            assert h[2] == OP["PING"] and h[4] == 0
            seen.add(h[3])
        assert seen == set(range(1000, 1050))
    finally:
        c.close()


def find_record(cluster, name):
    """NS_LOOKUP on every server; the one that knows `name` answers 0."""
    for i in range(cluster.n):
        c = Conn(cluster.addr(i))
        try:
            status, p = c.call(OP["NS_LOOKUP"], s16(name))
        finally:
            c.close()
        if status == 0:
            nsub = struct.unpack("<I", p[:4])[0]
            subs = [struct.unpack("<IQ", p[4 + 12 * k:16 + 12 * k])
                    for k in range(nsub)]
            return subs
    pytest.fail("no server has a record for %s" % name)


@pytest.fixture
def open_fork(cluster, uniq):
    """A raw connection with fork 'f' of subfile 0 open: (conn, fkid,
    server address, reopen function)."""
    name = uniq + "/raw"
    cp = cluster.galley("create", name, "-n", "2", "-p")
    assert cp.returncode == 0, describe(cp)
    cp = cluster.galley("fork", "create", name, 0, "f")
    assert cp.returncode == 0, describe(cp)
    (server, hid), _ = find_record(cluster, name)
    addr = cluster.addr(server)
    state = {}

    def reopen():
        if "c" in state:
            state["c"].close()
        c = Conn(addr)
        status, p = c.call(OP["FORK_OPEN"], u64(hid) + s16("f"))
        assert status == 0, status
        fkid, size = struct.unpack("<QQ", p)
        state["c"] = c
        return c, fkid

    state["name"] = name

    c, fkid = reopen()
    yield state, fkid, addr, reopen, server
    state["c"].close()


BAD_IO = {
    "segment kind 7": lambda k: (OP["IO_READ"], u64(k) + u32(1) +
                                 struct.pack("<BQQ", 7, 0, 10)),
    "strided with 0 levels": lambda k: (OP["IO_READ"], u64(k) + u32(1) +
                                        strided(0, 1, [])),
    "strided with 9 levels": lambda k: (OP["IO_READ"], u64(k) + u32(1) +
                                        strided(0, 1, [(2, 10)] * 9)),
    "strided count overflow": lambda k: (OP["IO_READ"], u64(k) + u32(1) +
                                         strided(0, 1, [(1 << 40, 1),
                                                        (1 << 40, 1)])),
    "too many pieces": lambda k: (OP["IO_READ"], u64(k) + u32(1) +
                                  strided(0, 1, [((1 << 24) + 1, 2)])),
    "offset beyond limit": lambda k: (OP["IO_READ"], u64(k) + u32(1) +
                                      extent(1 << 63, 10)),
    "offset+length overflow": lambda k: (OP["IO_READ"], u64(k) + u32(1) +
                                         extent((1 << 62) - 5, 10)),
    "read larger than data limit": lambda k: (OP["IO_READ"], u64(k) + u32(1) +
                                              extent(0, 1 << 40)),
    "segment count larger than payload": lambda k: (
        OP["IO_READ"], u64(k) + u32(1000) + extent(0, 10)),
    "segment count over limit": lambda k: (OP["IO_WRITE"], u64(k) +
                                           u32((1 << 22) + 1)),
    "write data shorter than segments": lambda k: (
        OP["IO_WRITE"], u64(k) + u32(1) + extent(0, 1000) + b"x" * 10),
    "write data longer than segments": lambda k: (
        OP["IO_WRITE"], u64(k) + u32(1) + extent(0, 10) + b"x" * 1000),
    "write larger than data limit": lambda k: (
        OP["IO_WRITE"], u64(k) + u32(1) + extent(0, 1 << 40)),
    "truncated segment": lambda k: (OP["IO_READ"], u64(k) + u32(1) +
                                    extent(0, 10)[:7]),
    "truncate to 2^63": lambda k: (OP["FORK_TRUNCATE"], u64(k) + u64(1 << 63)),
}


def test_names_that_are_no_names(cluster, open_fork):
    """A file or fork name that is empty or holds a newline is refused
    with -EINVAL by every request that carries one (the one name rule,
    checked as the request is decoded), the same rule libgalley applies;
    nothing is created, and the good name still works."""
    state, fkid, addr, reopen, server = open_fork
    (_, hid), _ = find_record(cluster, state["name"])
    c = state["c"]
    for bad in ("", "f\ng", "\n"):
        for op, payload in (
                ("FORK_CREATE", u64(hid) + s16(bad)),
                ("FORK_OPEN", u64(hid) + s16(bad)),
                ("FORK_DELETE", u64(hid) + s16(bad)),
                ("SUB_CREATE", s16(bad) + u32(0))):
            status, _ = c.call(OP[op], payload)
            assert status == -errno.EINVAL, (op, bad, status)
        for i in range(cluster.n):
            n = Conn(cluster.addr(i))
            try:
                for op in ("NS_RESERVE", "NS_LOOKUP", "NS_RELEASE",
                           "NS_REMOVE"):
                    status, _ = n.call(OP[op], s16("/x" + bad if bad else ""))
                    assert status == -errno.EINVAL, (op, bad, status)
            finally:
                n.close()
    # nothing was made: the subfile still has only its fork f
    cp = cluster.galley("fork", "ls", state["name"], 0)
    assert cp.returncode == 0, describe(cp)
    forks = [line.split()[1] for line in cp.stdout.splitlines()
             if line.strip().startswith("fork ")]
    assert forks == ["f"], cp.stdout
    status, p = c.call(OP["FORK_OPEN"], u64(hid) + s16("f"))
    assert status == 0, status
    assert cluster.alive(server)


def test_garbage_io_requests(cluster, open_fork):
    """Bad data requests on an open fork: error replies (or a closed
    connection); the fork is unchanged and good requests still work."""
    state, fkid, addr, reopen, server = open_fork
    pid = cluster.pid(server)
    results = {}
    for name in sorted(BAD_IO):
        op, payload = BAD_IO[name](fkid)
        c = state["c"]
        c.send(frame(op, payload, reqid=55))
        try:
            r = c.reply()
        except socket.timeout:
            pytest.fail("%s: no reply and no close within 10 s" % name)
        if r is None:
            results[name] = "closed"
            c, fkid = reopen()
        else:
            h, _ = r
            assert h[3] == 55 and h[4] < 0, "%s answered %s" % (name, h)
            results[name] = h[4]
        assert cluster.alive(server), "%s killed the server:\n%s" % (
            name, cluster.log(server)[-3000:])
    print(results)
    c = state["c"]
    status, p = c.call(OP["FORK_SIZE"], u64(fkid))
    assert status == 0 and struct.unpack("<QQ", p)[0] == 0, (status, p)
    # A good write and read over the raw protocol.
    status, p = c.call(OP["IO_WRITE"], u64(fkid) + u32(2) + extent(0, 5) +
                       extent(100, 3) + b"helloabc")
    assert status == 0 and struct.unpack("<Q", p[:8])[0] == 103, (status, p)
    status, p = c.call(OP["IO_READ"], u64(fkid) + u32(2) + extent(100, 3) +
                       extent(0, 5))
    assert status == 0, status
    assert p[8:] == b"abchello", p
    status, p = c.call(OP["IO_READ"], u64(fkid) + u32(1) +
                       strided(0, 1, [(3, 2)]))
    assert status == 0 and p[8:] == b"hlo", p
    assert ping(addr) == pid


def test_random_frames(make_cluster):
    """A few hundred random frames with a valid header: every one answered
    or the connection closed; the server survives and still serves."""
    c = make_cluster(n=1)
    addr = c.addr(0)
    pid = ping(addr)
    rnd = random.Random(20240601)
    ops = list(OP.values()) + [3, 99, 65535]
    conn = Conn(addr, timeout=5)
    answered = closed = 0
    try:
        for i in range(400):
            op = rnd.choice(ops)
            n = rnd.choice([0, 1, 2, 4, 8, 12, 20, 40, 100, 300])
            payload = bytes(rnd.getrandbits(8) for _ in range(n))
            if op in (OP["LOCK"], OP["UNLOCK"], OP["FORK_SYNC"]):
                continue  # may legitimately wait on other holders
            conn.send(frame(op, payload, reqid=i))
            try:
                r = conn.reply()
            except socket.timeout:
                r = None
            if r is None:
                closed += 1
                conn.close()
                conn = Conn(addr, timeout=5)
            else:
                answered += 1
                assert r[0][3] == i
            assert c.alive(0), "frame %d (op %d, %r) killed the server:\n%s" % (
                i, op, payload, c.log(0)[-3000:])
    finally:
        conn.close()
    print("answered %d, closed %d" % (answered, closed))
    assert ping(addr) == pid
    cp = c.galley("ping")
    assert cp.returncode == 0, describe(cp)


# Large writes are handled while they arrive (servers/handler.c, gsrv_rx_*;
# servers/io.c rule 4): from GSRV_RX_STREAM_MIN payload bytes an IO_WRITE's
# data goes from the socket into the cache blocks window by window, or for
# pieces of 64 KiB or more on average from the socket into the file
# (splice); large read pieces leave from the file (sendfile).  Each case is
# a list of (offset, length) pieces in list order; the data is sent in
# slow chunks so that the server really sees the frame arrive in parts.
STREAM_MIN = 256 << 10
STREAMED = {
    "one 1 MiB extent (spliced)": [(4096, 1 << 20)],
    "sixteen 64 KiB pieces with gaps (spliced)": [
        (k * 100000 + 7, 65536) for k in range(16)],
    "128 pieces of 4 KiB (into the blocks)": [
        (k * 12288 + 5, 4096) for k in range(128)],
    "pieces in descending order (whole frame first)": [
        ((7 - k) * 200000, 65536) for k in range(8)],
    "overlapping pieces, the later wins (whole frame first)": [
        (0, 200000), (100000, 200000), (50000, 10)],
}


OPENED = 1 << 63  # gmsg.h GP_FKID_OPENED
OPENED_KEPT = 16  # gmsg.h GP_OPENED_KEPT


def test_io_names_the_fork_its_connections_open_opened(cluster, open_fork):
    """An IO request may name its fork by the FORK_OPEN before it on the
    same connection (fkid GP_FKID_OPENED | that request's id), sent
    without waiting: both are answered, in order, and the bytes land in
    that fork.  The open's own error answers an IO naming a failed open;
    an open the server no longer remembers (more than GP_OPENED_KEPT opens
    later), or never saw, answers GFS_ESTALE and moves nothing."""
    state, fkid, addr, reopen, server = open_fork
    (_, hid), _ = find_record(cluster, state["name"])
    c = Conn(addr)
    try:
        c.send(frame(OP["FORK_OPEN"], u64(hid) + s16("f"), reqid=41) +
               frame(OP["IO_WRITE"], u64(OPENED | 41) + u32(1) +
                     extent(0, 11) + b"opened+sent", reqid=42))
        h, p = c.reply()
        assert (h[3], h[4]) == (41, 0), h
        assert struct.unpack("<QQ", p)[0] == fkid
        h, p = c.reply()
        assert (h[3], h[4]) == (42, 0), h
        assert struct.unpack("<Q", p[:8])[0] == 11
        # the fork's own handle reads what the reference wrote
        status, p = c.call(OP["IO_READ"], u64(fkid) + u32(1) + extent(0, 11))
        assert status == 0 and p[8:] == b"opened+sent", (status, p)
        status, p = c.call(OP["IO_READ"], u64(OPENED | 41) + u32(1) +
                           extent(0, 6))
        assert status == 0 and p[8:] == b"opened", (status, p)
        # a failed open: an IO naming it gets the open's error
        c.send(frame(OP["FORK_OPEN"], u64(hid) + s16("nope"), reqid=43) +
               frame(OP["IO_READ"], u64(OPENED | 43) + u32(1) + extent(0, 4),
                     reqid=44))
        h, _ = c.reply()
        assert h[3] == 43 and h[4] < 0, h
        open_err = h[4]
        h, _ = c.reply()
        assert (h[3], h[4]) == (44, open_err), h
        # forgotten after GP_OPENED_KEPT more opens; never seen
        for r in range(OPENED_KEPT):
            status, _ = c.call(OP["FORK_OPEN"], u64(hid) + s16("f"),
                               reqid=100 + r)
            assert status == 0, status
        for ref in (41, 99):
            status, _ = c.call(OP["IO_WRITE"], u64(OPENED | ref) + u32(1) +
                               extent(0, 3) + b"bad")
            assert status == GFS_ESTALE, (ref, status)
        status, p = c.call(OP["IO_READ"], u64(OPENED | (100 + OPENED_KEPT - 1))
                           + u32(1) + extent(0, 11))
        assert status == 0 and p[8:] == b"opened+sent", (status, p)
    finally:
        c.close()
    # another connection's opens are not this one's
    c = Conn(addr)
    try:
        status, _ = c.call(OP["IO_READ"], u64(OPENED | 41) + u32(1) +
                           extent(0, 4))
        assert status == GFS_ESTALE, status
    finally:
        c.close()


def send_slowly(c, data, parts=8, pause=0.02):
    step = -(-len(data) // parts)
    for i in range(0, len(data), step):
        c.send(data[i:i + step])
        time.sleep(pause)


@pytest.mark.parametrize("case", sorted(STREAMED))
def test_large_write_handled_while_it_arrives(cluster, open_fork, case):
    """Bytes read back as a model says, through the cache (small reads) and
    from the file (one large read); blocks cached before the write never
    serve the bytes it replaced."""
    state, fkid, addr, reopen, server = open_fork
    c = state["c"]
    rng = random.Random(case)
    pieces = STREAMED[case]
    end = max(o + n for o, n in pieces)
    model = bytearray(rng.randbytes(end + 5000))
    # old bytes everywhere, and blocks of them in the cache
    status, p = c.call(OP["IO_WRITE"], u64(fkid) + u32(1) +
                       extent(0, len(model)) + bytes(model))
    assert status == 0, status
    probes = [(o + n // 2, 16) for o, n in pieces] + [(0, 64), (end - 8, 64)]
    status, p = c.call(OP["IO_READ"], u64(fkid) + u32(len(probes)) +
                       b"".join(extent(o, n) for o, n in probes))
    assert status == 0, status
    data = b""
    for o, n in pieces:
        d = rng.randbytes(n)
        model[o:o + n] = d
        data += d
    payload = (u64(fkid) + u32(len(pieces)) +
               b"".join(extent(o, n) for o, n in pieces) + data)
    assert len(payload) >= STREAM_MIN
    send_slowly(c, frame(OP["IO_WRITE"], payload, reqid=9))
    h, p = c.reply()
    assert h[3] == 9 and h[4] == 0, h
    assert struct.unpack("<Q", p[:8])[0] == len(model)
    status, p = c.call(OP["IO_READ"], u64(fkid) + u32(len(probes)) +
                       b"".join(extent(o, n) for o, n in probes))
    assert status == 0, status
    assert p[8:] == b"".join(bytes(model[o:o + n]) for o, n in probes)
    # one large read past the end: the file's bytes, then zeros
    status, p = c.call(OP["IO_READ"], u64(fkid) + u32(1) +
                       extent(0, len(model) + 70000))
    assert status == 0, status
    assert p[8:] == bytes(model) + bytes(70000)
    assert cluster.alive(server)


def test_large_write_cut_off_in_its_data(cluster, open_fork):
    """A client gone halfway through a large write's data: the server
    closes that connection, acknowledges nothing, leaves the fork's size
    as it was and serves the next client."""
    state, fkid, addr, reopen, server = open_fork
    c = state["c"]
    status, p = c.call(OP["IO_WRITE"], u64(fkid) + u32(1) + extent(0, 1000) +
                       b"a" * 1000)
    assert status == 0, status
    for pieces in ([(0, 1 << 20)], [(k * 8192, 4096) for k in range(128)]):
        payload = (u64(fkid) + u32(len(pieces)) +
                   b"".join(extent(o, n) for o, n in pieces) +
                   b"b" * sum(n for _, n in pieces))
        c.send(frame(OP["IO_WRITE"], payload)[:len(payload) // 2])
        time.sleep(0.2)
        c.close()
        c, fkid = reopen()
        deadline = time.monotonic() + 10
        while True:  # the cut-off write holds the fork until it is undone
            status, p = c.call(OP["IO_READ"], u64(fkid) + u32(1) +
                               extent(0, 1 << 20))
            assert status == 0, status
            if struct.unpack("<Q", p[:8])[0] == 1000 or \
                    time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert struct.unpack("<Q", p[:8])[0] == 1000
        assert cluster.alive(server)
        # the file was cut back too: growing the fork shows zeros, not the
        # bytes of the write that was never acknowledged
        status, p = c.call(OP["IO_WRITE"], u64(fkid) + u32(1) +
                           extent(1 << 21, 1) + b"z")
        assert status == 0, status
        status, p = c.call(OP["IO_READ"], u64(fkid) + u32(1) +
                           extent(1000, (1 << 21) - 1000))
        assert status == 0, status
        assert p[8:] == bytes((1 << 21) - 1000)
        status, p = c.call(OP["FORK_TRUNCATE"], u64(fkid) + u64(1000))
        assert status == 0, status
    status, p = c.call(OP["IO_WRITE"], u64(fkid) + u32(1) + extent(0, 3) +
                       b"xyz")
    assert status == 0, status
    assert ping(addr) == cluster.pid(server)
