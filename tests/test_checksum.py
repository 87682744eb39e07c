"""End-to-end checksums (gfs_set_checksum, `galley create|put -C`;
servers/csum.c states the rules): a flipped bit on a server's disk or on
the wire is never returned as data.

Real servers throughout; bytes are flipped in the servers' data files
behind their backs, and on the wire by the test-only fault switches
GALLEY_TEST_FLIP_WIRE (client: its checksummed writes; server: its
checksummed read replies) and GALLEY_TEST_CRASH_AFTER_CRC (galleyd exits
between a write's checksums and its data).  Those exist only in the test
builds (common/gfault.h): the server's in galleyd-test (a cluster made
with test_hooks=True), the client's in the test build of libgalley that
tests/helpers/t_checksum links; the installed galleyd, libgalley and
galley ignore them (test_product_builds_ignore_fault_switches)."""

import os
import re
import struct
import subprocess
import time
from pathlib import Path

import pytest

from conftest import assert_helper_ok, describe, helper_path
from gproto_const import OP
from test_protocol import Conn, extent, find_record, s16, u32, u64
from test_transport import LocalConn

CHUNK = 32768
UNIT = 65536
GFS_EDIRECT = -1022
GFS_ECHECKSUM_WIRE = -1041
ENODATA = 61


def crc32c(data, crc=0):
    """CRC32C, bit by bit: the reference the server's replies are held to."""
    crc ^= 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def t_fill(n, seed):
    """tests/helpers/thelp.h's t_fill(buf, n, seed): splitmix64 words,
    little-endian."""
    m = (1 << 64) - 1
    st = (seed * 7919 + 1) & m
    out = bytearray()
    while len(out) < n:
        st = (st + 0x9E3779B97F4A7C15) & m
        z = st
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
        out += (z ^ (z >> 31)).to_bytes(8, "little")
    return bytes(out[:n])


def data_files(c, i):
    """Server i's fork data files (sub/HID/IDX.dat), largest first."""
    sub = Path(c.dir) / ("server%d" % i) / "sub"
    return sorted(sub.glob("*/*.dat"), key=lambda p: -p.stat().st_size)


def flip(path, at, bit=0x04):
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ bit]))


# The server path, whatever GALLEY_TRANSPORT says: for what only the
# server does (its cache, the wire's CRCs, its own crash point).
SERVER_PATH = {"GALLEY_TRANSPORT": "tcp"}
# The same-host direct path (the client moves the data itself).
DIRECT = {"GALLEY_TRANSPORT": "direct"}


def put_checksummed(c, tmp_path, name, size=5 * UNIT + 1234, env=None):
    src = tmp_path / ("src-" + name.replace("/", "_"))
    src.write_bytes(os.urandom(size))
    cp = c.galley("put", "-C", "-n", c.n, src, name, env=env)
    assert cp.returncode == 0, describe(cp)
    return src


def get(c, tmp_path, name, env=None):
    out = tmp_path / "out"
    if out.exists():
        out.unlink()
    cp = c.galley("get", name, out, env=env)
    return cp, out


# ------------------------------------------------------------ API, model --

@pytest.mark.parametrize("transport", ["auto", "tcp"])
def test_every_write_shape_reads_back_and_scrubs_clean(cluster, uniq,
                                                       transport):
    """Partial chunks, single bytes, holes, overlapping list I/O, truncates
    cutting a chunk: each read back whole against a model; every fork
    scrubs clean; bad algorithm names are refused."""
    cp = cluster.helper("t_checksum", "model", uniq,
                        env={"GALLEY_TRANSPORT": transport})
    assert_helper_ok(cp)


def test_cli_put_get_stat_scrub(cluster, uniq, tmp_path):
    src = put_checksummed(cluster, tmp_path, uniq)
    cp, out = get(cluster, tmp_path, uniq)
    assert cp.returncode == 0, describe(cp)
    assert out.read_bytes() == src.read_bytes()
    cp = cluster.galley("stat", uniq)
    assert "checksum:  crc32c" in cp.stdout, describe(cp)
    cp = cluster.galley("scrub", uniq)
    assert cp.returncode == 0, describe(cp)
    # 5 units + 1234 bytes over 4 subfiles: 2+1+1+1 units, 2 chunks each
    assert "1 checksummed files, 4 forks, 11 chunks checked, 0 failed" in \
        cp.stdout, cp.stdout
    # a file without -C is no business of scrub's
    plain = tmp_path / "plain"
    plain.write_bytes(b"p" * 1000)
    cp = cluster.galley("put", plain, uniq + "-plain")
    assert cp.returncode == 0, describe(cp)
    cp = cluster.galley("scrub", uniq + "-plain")
    assert cp.returncode == 1 and "not a checksummed file" in cp.stderr, \
        describe(cp)
    cp = cluster.galley("create", "-C", "-p", uniq + "-p2")
    assert cp.returncode == 0, describe(cp)


# ------------------------------------------------------------ the disk ---

def test_disk_flip_fails_read_with_checksum_error(make_cluster, tmp_path):
    """R=1: one byte flipped in a server's data file after the server
    restarted (nothing cached): the read fails with GFS_ECHECKSUM and never
    returns the bytes; the server logs the chunk; chunks that are intact
    still read."""
    c = make_cluster(n=2)
    src = put_checksummed(c, tmp_path, "d/f", size=6 * UNIT)
    c.kill(0)
    f = data_files(c, 0)[0]
    flip(f, CHUNK + 100)  # fork byte 32868: chunk 1
    c.restart(0)
    cp, out = get(c, tmp_path, "d/f")
    assert cp.returncode == 1, describe(cp)
    assert "failed its checksum on the I/O server's disk" in cp.stderr, \
        describe(cp)
    assert not out.exists()  # nothing of it reached the output
    assert "chunk 1 (bytes 32768..65535) failed its checksum" in c.log(0), \
        c.log(0)
    # the API's scrub: one fork has the bad chunk
    cp = c.helper("t_checksum", "scrub", "d/f")
    assert cp.returncode == 0, describe(cp)
    assert sorted(cp.stdout.splitlines()) == [
        "chunks 6 bad 0 first -1", "chunks 6 bad 1 first 1"], cp.stdout
    cp = c.galley("scrub")
    assert cp.returncode == 1, describe(cp)
    assert re.search(r"subfile (\d) fork data: 1 of 6 chunks FAILED",
                     cp.stdout), cp.stdout
    sub = int(re.search(r"subfile (\d) fork", cp.stdout).group(1))
    # writing the chunk anew repairs it (a whole-chunk write, no read):
    # fork bytes 32768.. of subfile `sub` are file bytes sub * UNIT + CHUNK..
    good = src.read_bytes()
    at = sub * UNIT + CHUNK
    cp = c.helper("t_checksum", "overwrite", "d/f", at, CHUNK, 5)
    assert cp.stdout.strip() == "ok", describe(cp)
    cp = c.galley("scrub", "d/f")
    assert cp.returncode == 0, describe(cp)
    cp, out = get(c, tmp_path, "d/f")
    assert cp.returncode == 0, describe(cp)
    assert out.read_bytes()[:at] == good[:at]
    assert out.read_bytes()[at + CHUNK:] == good[at + CHUNK:]


def test_partial_write_into_bad_chunk_fails(make_cluster, tmp_path):
    """A write that covers part of a damaged chunk must read the rest: it
    fails with the checksum error instead of blessing the damage."""
    c = make_cluster(n=1)
    put_checksummed(c, tmp_path, "d/g", size=4 * CHUNK)
    c.kill(0)
    flip(data_files(c, 0)[0], 2 * CHUNK + 7)
    c.restart(0)
    cp = c.helper("t_checksum", "overwrite", "d/g", 2 * CHUNK + 1000, 10, 3)
    assert cp.returncode == 1 and "-1040" in cp.stdout, describe(cp)
    cp = c.galley("scrub", "d/g")
    assert cp.returncode == 1 and "1 of 4 chunks FAILED" in cp.stdout, \
        describe(cp)


def test_scrub_finds_flip_no_read_touched(make_cluster, tmp_path):
    """The server still has the chunk in its cache (reads would be served
    from there): scrub reads the disk and finds the flip anyway."""
    c = make_cluster(n=2)
    src = put_checksummed(c, tmp_path, "s/f", size=4 * UNIT, env=SERVER_PATH)
    flip(data_files(c, 1)[0], 3 * CHUNK + 5)
    cp = c.galley("scrub")
    assert cp.returncode == 1, describe(cp)
    assert re.search(r"^s/f: subfile [01] fork data: 1 of 4 chunks FAILED "
                     r"their checksum \(first: chunk 3, fork bytes "
                     r"98304\.\.131071\)$", cp.stdout, re.M), cp.stdout
    assert "1 checksummed files, 2 forks, 8 chunks checked, 1 failed" in \
        cp.stdout
    assert "chunk 3 (bytes 98304..131071) failed its checksum" in c.log(1)
    # reads through the server are served from the cache the write filled
    cp, out = get(c, tmp_path, "s/f", env=SERVER_PATH)
    assert cp.returncode == 0 and out.read_bytes() == src.read_bytes()
    # a same-host client reading the file itself checks the disk's bytes
    # (common/csfile.h): the flip fails its read
    cp, out = get(c, tmp_path, "s/f", env={"GALLEY_TRANSPORT": "direct"})
    assert cp.returncode == 1, describe(cp)
    assert "failed its checksum on the I/O server's disk" in cp.stderr
    assert not out.exists()


def test_sidecar_goes_with_the_file(make_cluster, tmp_path):
    c = make_cluster(n=1)
    put_checksummed(c, tmp_path, "r/f", size=3 * CHUNK)
    sub = Path(c.dir) / "server0" / "sub"
    assert list(sub.glob("*/*.crc")), list(sub.rglob("*"))
    cp = c.galley("rm", "r/f")
    assert cp.returncode == 0, describe(cp)
    assert not list(sub.glob("*/*.crc"))
    assert not list(sub.glob("*/*.dat"))


# ------------------------------------------------------------ the wire ---

def test_wire_flip_client_to_server(make_cluster, tmp_path):
    """A bit flipped in a write's data on its way (t_checksum: the test
    build of libgalley): the server refuses it (GFS_ECHECKSUM_WIRE) and
    writes nothing; the client sends it again.  Flipped every time: the
    call fails, and no damaged byte is stored."""
    c = make_cluster(n=2)
    size = 3 * UNIT + 17
    put_checksummed(c, tmp_path, "w/once", size=size)
    cp = c.helper("t_checksum", "overwrite", "w/once", 0, size, 4,
                  env={"GALLEY_TEST_FLIP_WIRE": "1", **SERVER_PATH})
    assert cp.stdout.strip() == "ok", describe(cp)
    assert "write data failed its checksum in transit" in \
        c.log(0) + c.log(1)
    cp, out = get(c, tmp_path, "w/once")
    assert cp.returncode == 0 and out.read_bytes() == t_fill(size, 4), \
        describe(cp)

    cp = c.helper("t_checksum", "overwrite", "w/once", 100, 5000, 5,
                  env={"GALLEY_TEST_FLIP_WIRE": "1000", **SERVER_PATH})
    assert cp.returncode == 1 and "-1041" in cp.stdout, describe(cp)
    cp, out = get(c, tmp_path, "w/once")
    assert cp.returncode == 0 and out.read_bytes() == t_fill(size, 4), \
        describe(cp)
    cp = c.galley("scrub")
    assert cp.returncode == 0, describe(cp)


def test_wire_flip_server_to_client(make_cluster, tmp_path):
    """A bit flipped in a read reply's data (galleyd-test): the client
    finds it before the call returns and reads again; flipped every time,
    the read fails and the output never appears."""
    c = make_cluster(n=1, env={"GALLEY_TEST_FLIP_WIRE": "1"},
                     test_hooks=True)
    src = tmp_path / "src"
    src.write_bytes(os.urandom(2 * UNIT))
    # replies come over the wire (galley is the installed client: the
    # variable does nothing in it)
    cp = c.galley("put", "-C", src, "r/once", env=SERVER_PATH)
    assert cp.returncode == 0, describe(cp)
    cp, out = get(c, tmp_path, "r/once", env=SERVER_PATH)
    assert cp.returncode == 0, describe(cp)
    assert out.read_bytes() == src.read_bytes()

    c.stop()
    c.env["GALLEY_TEST_FLIP_WIRE"] = "1000"
    c.start()
    cp, out = get(c, tmp_path, "r/once", env=SERVER_PATH)
    assert cp.returncode == 1, describe(cp)
    assert "checksum in transit" in cp.stderr, describe(cp)
    assert not out.exists()


def test_product_builds_ignore_fault_switches(make_cluster, tmp_path):
    """The fault switches are compiled only into the test builds
    (common/gfault.h): the installed galleyd and galley, with every one of
    them set, write and read checksummed files over the wire and on the
    direct path without a checksum error or a crash, where galleyd-test
    with GALLEY_TEST_FLIP_WIRE set fails the same read."""
    faults = {"GALLEY_TEST_FLIP_WIRE": "1000",
              "GALLEY_TEST_CRASH_AFTER_CRC": "1",
              "GALLEY_TEST_CLIENT_CRASH_AFTER_CRC": "1"}
    c = make_cluster(n=2, env=faults, name="product")
    for i, env in enumerate((SERVER_PATH, DIRECT)):
        name = "p/f%d" % i
        src = put_checksummed(c, tmp_path, name, size=3 * UNIT + 17,
                              env=env)
        cp, out = get(c, tmp_path, name, env=env)
        assert cp.returncode == 0, describe(cp)
        assert out.read_bytes() == src.read_bytes()
    cp = c.galley("scrub")
    assert cp.returncode == 0, describe(cp)
    logs = c.log(0) + c.log(1)
    assert "in transit" not in logs, logs
    assert "exiting between the checksums and the data" not in logs, logs
    c.check_alive()

    t = make_cluster(n=1, env={"GALLEY_TEST_FLIP_WIRE": "1000"},
                     name="test", test_hooks=True)
    put_checksummed(t, tmp_path, "p/f", size=UNIT, env=SERVER_PATH)
    cp, out = get(t, tmp_path, "p/f", env=SERVER_PATH)
    assert cp.returncode == 1, describe(cp)
    assert "checksum in transit" in cp.stderr, describe(cp)


# ------------------------------------------------------------ a crash ----

def test_crash_between_checksum_and_data(make_cluster, tmp_path):
    """galleyd dies after a write's checksums are stored and before its
    data is (galleyd-test): after a restart the file reads back as it was
    (the write was never acknowledged), without a false checksum error;
    the same write then succeeds and survives another restart."""
    c = make_cluster(n=1, test_hooks=True)
    src = put_checksummed(c, tmp_path, "k/f", size=4 * CHUNK + 100)
    before = src.read_bytes()
    c.stop()
    c.env["GALLEY_TEST_CRASH_AFTER_CRC"] = "1"
    c.start()
    # partial chunks at both ends, one whole chunk between
    cp = c.helper("t_checksum", "overwrite", "k/f", CHUNK - 10, CHUNK + 20, 9,
                  env=SERVER_PATH)
    assert cp.returncode == 1, describe(cp)
    assert "exiting between the checksums and the data" in c.log(0)
    c.expect_dead.add(0)
    del c.env["GALLEY_TEST_CRASH_AFTER_CRC"]
    c.restart(0)
    cp, out = get(c, tmp_path, "k/f")
    assert cp.returncode == 0, describe(cp)
    assert out.read_bytes() == before
    cp = c.galley("scrub")
    assert cp.returncode == 0, describe(cp)

    cp = c.helper("t_checksum", "overwrite", "k/f", CHUNK - 10, CHUNK + 20, 9,
                  env=SERVER_PATH)
    assert cp.stdout.strip() == "ok", describe(cp)
    c.stop()
    c.start()
    cp, out = get(c, tmp_path, "k/f")
    assert cp.returncode == 0, describe(cp)
    got = out.read_bytes()
    assert got[:CHUNK - 10] == before[:CHUNK - 10]
    assert got[2 * CHUNK + 10:] == before[2 * CHUNK + 10:]
    assert got[CHUNK - 10:2 * CHUNK + 10] != before[CHUNK - 10:2 * CHUNK + 10]
    cp = c.galley("scrub")
    assert cp.returncode == 0, describe(cp)


# ------------------------------------------------------------ the wire, raw

def test_raw_messages(cluster, uniq, tmp_path):
    """The wire as gmsg.h states it: IO_CREAD's reply carries the CRC32C of
    its data; an IO_CWRITE whose CRC does not match writes nothing and
    answers GFS_ECHECKSUM_WIRE; a plain IO_WRITE to a checksummed fork
    (a client that does not know) still keeps its checksums; DIRECT_OPEN of
    a checksummed fork is refused; SCRUB of a fork without checksums
    answers -ENODATA."""
    assert crc32c(b"123456789") == 0xE3069283
    name = uniq + "/raw"
    src = tmp_path / "src"
    src.write_bytes(bytes(range(256)) * 400)  # 102400 bytes: 4 chunks
    cp = cluster.galley("put", "-C", "-n", 1, src, name)
    assert cp.returncode == 0, describe(cp)
    (server, hid), = find_record(cluster, name)
    c = LocalConn(cluster.addr(server))
    status, p = c.call(OP["FORK_OPEN"], u64(hid) + s16("data"))
    assert status == 0, status
    fkid = struct.unpack("<Q", p[:8])[0]

    status, p = c.call(OP["IO_CREAD"], u64(fkid) + u32(1) + extent(1000, 5000))
    assert status == 0, status
    size, crc = struct.unpack("<QI", p[:12])
    assert size == 102400 and p[12:] == src.read_bytes()[1000:6000]
    assert crc == crc32c(p[12:])

    new = b"N" * 3000
    status, _ = c.call(OP["IO_CWRITE"], u64(fkid) + u32(crc32c(new) ^ 1) +
                       u32(1) + extent(2000, 3000) + new)
    assert status == GFS_ECHECKSUM_WIRE, status
    status, p = c.call(OP["IO_CREAD"], u64(fkid) + u32(1) + extent(2000, 3000))
    assert status == 0 and p[12:] == src.read_bytes()[2000:5000]
    status, _ = c.call(OP["IO_CWRITE"], u64(fkid) + u32(crc32c(new)) +
                       u32(1) + extent(2000, 3000) + new)
    assert status == 0, status
    # a plain write into two chunks: the server keeps their checksums
    status, _ = c.call(OP["IO_WRITE"], u64(fkid) + u32(1) +
                       extent(CHUNK - 5, 10) + b"0123456789")
    assert status == 0, status
    want = bytearray(src.read_bytes())
    want[2000:5000] = new
    want[CHUNK - 5:CHUNK + 5] = b"0123456789"
    status, p = c.call(OP["IO_CREAD"], u64(fkid) + u32(1) +
                       extent(0, len(want)))
    assert status == 0 and p[12:] == bytes(want)
    assert struct.unpack("<I", p[8:12])[0] == crc32c(bytes(want))
    status, p = c.call(OP["SCRUB"], u64(fkid))
    assert status == 0 and struct.unpack("<QQQ", p) == (
        4, 0, 0xFFFFFFFFFFFFFFFF), (status, p)

    for write in (0, 1):
        status, _ = c.call(OP["DIRECT_OPEN"], u64(fkid) + bytes([write]))
        assert status == GFS_EDIRECT, status

    # a file without checksums: nothing stored to scrub
    cp = cluster.galley("put", "-n", 1, src, name + "-plain")
    assert cp.returncode == 0, describe(cp)
    (server, hid), = find_record(cluster, name + "-plain")
    t = Conn(cluster.addr(server))
    status, p = t.call(OP["FORK_OPEN"], u64(hid) + s16("data"))
    assert status == 0, status
    status, _ = t.call(OP["SCRUB"], u64(struct.unpack("<Q", p[:8])[0]))
    assert status == -ENODATA, status
    c.close()
    t.close()


# ------------------------------------------------ the same-host direct path


def test_direct_write_checked_and_flip_found(make_cluster, tmp_path):
    """A same-host client writes a checksummed file itself (common/csfile.h):
    the CRCs it stores are the ones the server checks (scrub clean, reads
    through the server right); a byte flipped on disk then fails direct
    and server reads alike, the server logging the chunk; a partial write
    into the bad chunk fails rather than blessing it; a whole-chunk write
    repairs it."""
    c = make_cluster(n=1)
    src = put_checksummed(c, tmp_path, "dd/f", size=6 * CHUNK + 4321,
                          env=DIRECT)
    good = src.read_bytes()
    cp = c.galley("scrub", "dd/f")
    assert cp.returncode == 0 and "0 failed" in cp.stdout, describe(cp)
    for env in (DIRECT, SERVER_PATH):
        cp, out = get(c, tmp_path, "dd/f", env=env)
        assert cp.returncode == 0 and out.read_bytes() == good, describe(cp)
    # a direct overwrite across chunks, partial at both ends
    cp = c.helper("t_checksum", "overwrite", "dd/f", CHUNK + 7, 2 * CHUNK,
                  11, "second", env=DIRECT)
    assert cp.stdout.strip() == "ok", describe(cp)
    cp = c.galley("scrub", "dd/f")
    assert cp.returncode == 0, describe(cp)

    c.kill(0)
    flip(data_files(c, 0)[0], 4 * CHUNK + 99)
    c.restart(0)
    for env in (DIRECT, SERVER_PATH):
        cp, out = get(c, tmp_path, "dd/f", env=env)
        assert cp.returncode == 1, describe(cp)
        assert "failed its checksum on the I/O server's disk" in cp.stderr
        assert not out.exists()
    assert "chunk 4 (bytes 131072..163839) failed its checksum" in c.log(0)
    cp = c.helper("t_checksum", "overwrite", "dd/f", 4 * CHUNK + 10, 100, 3,
                  "second", env=DIRECT)
    assert cp.returncode == 1 and "-1040" in cp.stdout, describe(cp)
    cp = c.helper("t_checksum", "overwrite", "dd/f", 4 * CHUNK, CHUNK, 5,
                  "second", env=DIRECT)
    assert cp.stdout.strip() == "ok", describe(cp)
    cp = c.galley("scrub", "dd/f")
    assert cp.returncode == 0, describe(cp)
    cp, out = get(c, tmp_path, "dd/f", env=DIRECT)
    assert cp.returncode == 0, describe(cp)
    got = out.read_bytes()
    assert got[:CHUNK + 7] == good[:CHUNK + 7]
    assert got[5 * CHUNK:] == good[5 * CHUNK:]


def test_direct_crash_between_checksum_and_data(make_cluster, tmp_path):
    """A same-host writer dies after its CRCs are stored and before its
    data (the client's test-only crash point; that it fires at all shows
    the write took the direct path): the file reads back as it was, with
    no false error, in the server too; the same write then succeeds."""
    c = make_cluster(n=1)
    src = put_checksummed(c, tmp_path, "dk/f", size=4 * CHUNK + 100)
    before = src.read_bytes()
    crash = {"GALLEY_TEST_CLIENT_CRASH_AFTER_CRC": "1", **DIRECT}
    cp = c.helper("t_checksum", "overwrite", "dk/f", CHUNK - 10, CHUNK + 20,
                  9, "second", env=crash)
    assert cp.returncode == 99, describe(cp)
    for env in (DIRECT, SERVER_PATH):
        cp, out = get(c, tmp_path, "dk/f", env=env)
        assert cp.returncode == 0 and out.read_bytes() == before, describe(cp)
    cp = c.galley("scrub", "dk/f")
    assert cp.returncode == 0, describe(cp)
    c.stop()
    c.start()
    cp = c.helper("t_checksum", "overwrite", "dk/f", CHUNK - 10, CHUNK + 20,
                  9, "second", env=DIRECT)
    assert cp.stdout.strip() == "ok", describe(cp)
    cp, out = get(c, tmp_path, "dk/f", env=SERVER_PATH)
    assert cp.returncode == 0, describe(cp)
    got = out.read_bytes()
    assert got[:CHUNK - 10] == before[:CHUNK - 10]
    assert got[2 * CHUNK + 10:] == before[2 * CHUNK + 10:]
    assert got[CHUNK - 10:2 * CHUNK + 10] != before[CHUNK - 10:2 * CHUNK + 10]
    assert "failed its checksum" not in c.log(0)


def test_direct_writer_dies_inside_a_chunk(make_cluster, tmp_path):
    """A same-host writer dies halfway through its data (the client's
    test-only crash point 2), leaving chunk 1 half new and half old, as a
    plain file would be: galleyd, seeing the writer gone, takes that
    chunk's CRC from the disk and logs it; every read then succeeds with
    the bytes on disk, and the untouched chunks are still checked."""
    c = make_cluster(n=1)
    src = put_checksummed(c, tmp_path, "dt/f", size=4 * CHUNK)
    before = src.read_bytes()
    crash = {"GALLEY_TEST_CLIENT_CRASH_AFTER_CRC": "2", **DIRECT}
    cp = c.helper("t_checksum", "overwrite", "dt/f", CHUNK - 10, CHUNK + 20,
                  9, "second", env=crash)
    assert cp.returncode == 99, describe(cp)
    mid = 3 * CHUNK // 2  # the write's run is chunks 0..2: half of it
    for env in (DIRECT, SERVER_PATH):
        cp, out = get(c, tmp_path, "dt/f", env=env)
        assert cp.returncode == 0, describe(cp)
        got = out.read_bytes()
        assert got[:CHUNK - 10] == before[:CHUNK - 10]
        assert got[mid:] == before[mid:]
        assert got[CHUNK - 10:mid] != before[CHUNK - 10:mid]
    assert re.search(r"chunk 1 was being written when its same-host writer "
                     r"died", c.log(0)), c.log(0)
    cp = c.galley("scrub", "dt/f")
    assert cp.returncode == 0, describe(cp)
    # a flip in a chunk nobody was writing is still found
    c.kill(0)
    flip(data_files(c, 0)[0], 3 * CHUNK + 1)
    c.restart(0)
    cp = c.galley("scrub", "dt/f")
    assert cp.returncode == 1 and "1 of 4 chunks FAILED" in cp.stdout, \
        describe(cp)


def test_concurrent_direct_and_server_writers(make_cluster, tmp_path):
    """Four writers of one checksummed fork at once, two writing it
    themselves and two through the server, their 4 KiB pieces interleaved
    so that every 32 KiB chunk has pieces of all four (each write is a
    partial chunk: read, checked, CRC'd anew): every byte is the last
    round's, whichever path reads it, and the CRCs are all right."""
    c = make_cluster(n=1)
    n, piece, count, rounds = 4, 4096, 64, 40
    put_checksummed(c, tmp_path, "cw/f", size=n * piece * count)
    procs = []
    for k in range(n):
        env = dict(c.env)
        env.update(DIRECT if k % 2 == 0 else SERVER_PATH)
        procs.append(subprocess.Popen(
            [helper_path("t_checksum"), "pieces", "cw/f", str(k), str(n),
             str(piece), str(count), str(rounds)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True))
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and out.strip() == "ok", (out, err)
    for env in (DIRECT, SERVER_PATH):
        cp = c.helper("t_checksum", "checkpieces", "cw/f", n, piece, count,
                      rounds, env=env)
        assert cp.stdout.strip() == "ok", describe(cp)
    cp = c.galley("scrub", "cw/f")
    assert cp.returncode == 0, describe(cp)
    assert "failed its checksum" not in c.log(0)


def test_direct_writer_killed(make_cluster, tmp_path):
    """kill -9 of a same-host writer in the middle of rewriting a
    checksummed file over and over: no false error afterwards, and every
    chunk holds one write's bytes or the other's (a chunk it was inside
    may hold some of each, as a plain file would; galleyd then takes its
    CRC from the disk and says so).  Never a byte neither write had."""
    c = make_cluster(n=1)
    size = 4 << 20
    put_checksummed(c, tmp_path, "kw/f", size=size)
    env = dict(c.env)
    env.update(DIRECT)
    for attempt in range(3):
        p = subprocess.Popen(
            [helper_path("t_checksum"), "loop", "kw/f", str(size)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        for _ in range(2 + attempt):  # into a write, at different points
            line = p.stdout.readline()
            assert line.startswith("round"), (line, p.stderr.read())
        time.sleep(0.01 * attempt)
        p.kill()
        p.wait()
        p.stdout.close()
        p.stderr.close()
        for e in (DIRECT, SERVER_PATH):
            cp = c.helper("t_checksum", "chunks", "kw/f", size, env=e)
            assert cp.returncode == 0, describe(cp)
            letters = cp.stdout.split()[0]
            assert len(letters) == size // CHUNK
            assert set(letters) <= set("ABM"), letters
        cp = c.galley("scrub", "kw/f")
        assert cp.returncode == 0, describe(cp)
