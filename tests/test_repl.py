"""Replicated files (libgalley/repl.c): R copies of every subfile survive
servers killed with SIGKILL, wiped data directories and resync racing
writers and readers.  Real servers; bytes are checked through the client
and the copies compared file by file in the servers' data directories.
"""

import filecmp
import os
import re
import shutil
import time

import pytest

BLOCK = 65536


def copies(c, name):
    """[[(server, state, header), ...] per subfile] from `galley stat`."""
    cp = c.galley("stat", name, check=True)
    subs = []
    for line in cp.stdout.splitlines():
        if line.startswith("subfile "):
            subs.append([])
        m = re.match(r"\s+copy (\d+): server (\d+) \(.*\) (in-sync|stale), "
                     r"header (\d+)", line)
        if m:
            subs[-1].append((int(m.group(2)), m.group(3), int(m.group(4))))
    assert subs and all(subs), cp.stdout
    return subs


def fork_files(c, server, header):
    d = c.dir / ("server%d" % server) / "sub" / str(header)
    return sorted(p for p in d.glob("*.dat"))


def assert_copies_identical(c, name):
    """Stop the cluster (servers flush) and compare every subfile's copies
    byte for byte in the servers' own directories."""
    subs = copies(c, name)
    for sub in subs:
        assert all(s == "in-sync" for _, s, _ in sub), subs
    c.stop()
    for sub in subs:
        first = fork_files(c, sub[0][0], sub[0][2])
        assert first, "no fork files for %s" % (sub[0],)
        for server, _, header in sub[1:]:
            other = fork_files(c, server, header)
            assert [p.name for p in other] == [p.name for p in first]
            for a, b in zip(first, other):
                assert a.stat().st_size == b.stat().st_size, (a, b)
                assert filecmp.cmp(a, b, shallow=False), (a, b)
    c.start()


def helper(c, *args, check=True, **kw):
    cp = c.helper("t_repl", *args, **kw)
    if check:
        assert cp.returncode == 0, cp.stdout + cp.stderr
    return cp


def wipe(c, i):
    """Server i's data directory emptied (its key and log stay)."""
    d = c.dir / ("server%d" % i)
    for p in d.iterdir():
        if p.name in ("key", "log", "pid", "lock"):
            continue
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink()


def test_kill_during_writer_then_resync(fresh_cluster, uniq):
    c = fresh_cluster
    name = uniq + "/ior"
    helper(c, "create", name, 2, 2, BLOCK)
    subs = copies(c, name)
    victim = subs[0][1][0]  # the second copy of subfile 0
    p = c.popen_helper("t_repl", "writer", name, 64, BLOCK, 32)
    assert p.stdout.readline().strip() == "ACK 0"
    line = ""
    while line != "PAUSE":
        line = p.stdout.readline().strip()
        assert line, p.stderr.read()
    c.kill(victim)
    out, err = p.communicate("go\n", timeout=120)
    assert p.returncode == 0, out + err
    assert "ACK 63" in out and "ERR" not in out, out
    # the killed server's copies are stale, the others in sync
    for sub in copies(c, name):
        for server, state, _ in sub:
            assert state == ("stale" if server == victim else "in-sync")
    assert "DEGRADED" in c.galley("stat", name, check=True).stdout
    assert "VERIFIED 64" in helper(c, "verify", name, 64, BLOCK).stdout
    c.restart(victim)
    # fsck and df report the stale copies until resync
    cp = c.galley("fsck")
    assert cp.returncode == 1, cp.stdout + cp.stderr
    assert re.search(r"degraded +'%s' subfile \d+: the copy on server %d"
                     % (re.escape(name), victim), cp.stdout), cp.stdout
    assert " 0 orphan(s), 0 dangling" in cp.stdout, cp.stdout
    cp = c.galley("df", check=True)
    assert "degraded: %s" % name in cp.stdout, cp.stdout
    assert "replicated files: 1, degraded: 1" in cp.stdout, cp.stdout
    cp = c.galley("iostat", check=True)
    assert "degraded: %s (1 of 2 copies in sync)" % name in cp.stdout, \
        cp.stdout
    assert "replicated files: 1, degraded: 1" in cp.stdout, cp.stdout
    out = c.galley("resync", name, check=True).stdout
    assert re.search(r"[1-9]\d* cop", out), out
    cp = c.galley("fsck")
    assert cp.returncode == 0 and "0 stale copies" in cp.stdout, cp.stdout
    assert "degraded: 0" in c.galley("df", check=True).stdout
    assert "VERIFIED 64" in helper(c, "verify", name, 64, BLOCK).stdout
    assert_copies_identical(c, name)
    assert "VERIFIED 64" in helper(c, "verify", name, 64, BLOCK).stdout


def test_wiped_server_is_never_read_and_is_rebuilt(fresh_cluster, uniq,
                                                   tmp_path):
    c = fresh_cluster
    name = uniq + "/w"
    data = os.urandom(3 * 1000 * 1000 + 17)
    src = tmp_path / "in"
    src.write_bytes(data)
    c.galley("put", src, name, "-R", "2", "-n", "2", check=True)
    subs = copies(c, name)
    victim = subs[0][1][0]
    c.kill(victim)
    wipe(c, victim)
    c.restart(victim)
    # a new file on the wiped server reuses its header numbers: a trap
    # for a client that would take the copy for the old one
    trap = tmp_path / "trap"
    trap.write_bytes(b"\x5a" * len(data))
    c.galley("put", trap, uniq + "/trap", "-n", "1", "-s", victim,
             check=True)
    for _ in range(2):
        out = tmp_path / "out"
        c.galley("get", name, out, check=True)
        assert out.read_bytes() == data
    cp = c.galley("resync", name, check=True)
    assert re.search(r"[1-9]\d* cop", cp.stdout), cp.stdout
    assert "DEGRADED" not in cp.stdout
    new = copies(c, name)
    assert new[0][1][0] == victim
    assert fork_files(c, victim, new[0][1][2])
    out = tmp_path / "out2"
    c.galley("get", name, out, check=True)
    assert out.read_bytes() == data
    assert_copies_identical(c, name)
    # the rebuilt copy alone serves subfile 0: its other copy's server down
    other = new[0][0][0]
    c.kill(other)
    c.galley("get", name, out, check=True)
    assert out.read_bytes() == data
    c.restart(other)


def test_alternate_kills_lose_no_acknowledged_write(fresh_cluster, uniq):
    c = fresh_cluster
    name = uniq + "/alt"
    helper(c, "create", name, 2, 1, BLOCK)
    (a, _, _), (b, _, _) = copies(c, name)[0]
    n = 8
    helper(c, "write", name, 0, n, BLOCK, 0)
    gen = 0
    for rnd in range(2):
        for down, up in ((a, b), (b, a)):
            c.kill(down)
            gen += 1
            out = helper(c, "write", name, 0, n, BLOCK, gen).stdout
            assert out.strip() == "ACK", out
            assert "VERIFIED" in helper(c, "verify", name, n, BLOCK,
                                        gen).stdout
            st = {s: state for s, state, _ in copies(c, name)[0]}
            assert st == {down: "stale", up: "in-sync"}, st
            if rnd == 1 and down == b:
                # the only copy in sync is down too: no write succeeds, no
                # read returns the stale copy
                c.kill(up)
                c.restart(down)
                out = helper(c, "write", name, 0, n, BLOCK, gen + 100).stdout
                assert out.startswith("ERR"), out
                cp = helper(c, "verify", name, n, BLOCK, gen, check=False)
                assert cp.returncode != 0 and "VERIFIED" not in cp.stdout
                assert "generation %d" % (gen - 1) not in cp.stdout
                c.restart(up)
                assert "VERIFIED" in helper(c, "verify", name, n, BLOCK,
                                            gen).stdout
            else:
                c.restart(down)
            cp = c.galley("resync", name, check=True)
            assert "DEGRADED" not in cp.stdout, cp.stdout
    assert "VERIFIED" in helper(c, "verify", name, n, BLOCK, gen).stdout
    assert_copies_identical(c, name)


def test_record_server_killed_file_still_opens(fresh_cluster, uniq,
                                               tmp_path):
    c = fresh_cluster
    name = uniq + "/rec"
    data = os.urandom(1 << 20)
    (tmp_path / "in").write_bytes(data)
    c.galley("put", tmp_path / "in", name, "-R", "2", "-n", "2", check=True)
    meta = copies(c, name)[0][0][0]  # subfile 0's first copy: the name's
    c.kill(meta)                     # metadata server
    out = tmp_path / "out"
    c.galley("get", name, out, check=True)
    assert out.read_bytes() == data
    # and it is written: the copies there are recorded stale
    subs = copies(c, name)
    assert subs[0][0] == (meta, "in-sync", subs[0][0][2])
    helper(c, "write", name, 0, 4, BLOCK, 3)
    assert copies(c, name)[0][0][1] == "stale"
    assert "VERIFIED 4" in helper(c, "verify", name, 4, BLOCK, 3).stdout
    c.restart(meta)
    c.galley("resync", name, check=True)
    assert "VERIFIED 4" in helper(c, "verify", name, 4, BLOCK, 3).stdout
    assert_copies_identical(c, name)


def test_resync_races_writers_and_readers(fresh_cluster, uniq):
    c = fresh_cluster
    name = uniq + "/race"
    helper(c, "create", name, 2, 2, 16384)
    subs = copies(c, name)
    victim = subs[1][1][0]
    c.kill(victim)
    helper(c, "write", name, 0, 4, 16384, 0)  # its copies go stale
    c.restart(victim)
    p = c.popen_helper("t_repl", "race", name, 24, 16384, 8)
    assert p.stdout.readline().strip() == "READY"
    fixed = 0
    for _ in range(3):
        cp = c.galley("resync", name, check=True)
        m = re.search(r"(\d+) cop", cp.stdout)
        fixed += int(m.group(1))
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, out + err
    assert fixed >= 1
    assert "errors 0" in out, out
    gens = re.search(r"GENS (.*)", out).group(1).split()
    assert "VERIFIED 24" in helper(c, "verify", name, 24, 16384,
                                   *gens).stdout
    assert_copies_identical(c, name)


@pytest.mark.parametrize("transport", ["auto", "tcp"])
def test_checksum_failure_reads_the_next_copy(make_cluster, tmp_path,
                                              transport):
    """A checksummed file of two copies: a byte flipped on the disk of
    every subfile's first copy (its server restarted, nothing cached) is
    never returned: each read fails its checksum there and is answered
    by the copy in sync on the other server (the one failover)."""
    c = make_cluster(n=2, env={"GALLEY_TRANSPORT": transport})
    name = "f/csum-repl"
    data = os.urandom(4 * BLOCK + 777)
    (tmp_path / "in").write_bytes(data)
    c.galley("put", tmp_path / "in", name, "-C", "-R", "2", "-n", "2",
             check=True)
    subs = copies(c, name)
    assert all(len(sub) == 2 for sub in subs), subs
    for i in range(2):
        c.kill(i)
    for sub in subs:
        server, _, header = sub[0]
        files = fork_files(c, server, header)
        assert files, sub
        with open(files[0], "r+b") as f:
            f.seek(100)
            b = f.read(1)
            f.seek(100)
            f.write(bytes([b[0] ^ 0x04]))
    for i in range(2):
        c.restart(i)
    out = tmp_path / "out"
    c.galley("get", name, out, check=True)
    assert out.read_bytes() == data
    for sub in subs:
        assert "failed its checksum" in c.log(sub[0][0]), c.log(sub[0][0])
    cp = c.galley("stat", name, check=True)
    assert "checksum:  crc32c" in cp.stdout, cp.stdout


def test_checksum_attribute_on_every_record_copy(make_cluster, tmp_path):
    """`put -C -R 2`: the checksum attribute is on every copy of the
    record, so with the name's metadata server lost the file is still
    checksummed (read with CRCs, not as a plain file)."""
    c = make_cluster(n=3)
    name = "f/csum-rec"
    data = os.urandom(2 * BLOCK + 5)
    (tmp_path / "in").write_bytes(data)
    c.galley("put", tmp_path / "in", name, "-C", "-R", "2", "-n", "1",
             check=True)
    meta = copies(c, name)[0][0][0]  # the name's metadata server
    c.kill(meta)
    cp = c.galley("stat", name, check=True)
    assert "checksum:  crc32c" in cp.stdout, cp.stdout
    out = tmp_path / "out"
    c.galley("get", name, out, check=True)
    assert out.read_bytes() == data


def flip(c, server, header, off):
    """One bit of the first fork file of (server, header) flipped on disk,
    behind the server's back (it is down: nothing of it is cached)."""
    files = fork_files(c, server, header)
    assert files, (server, header)
    with open(files[0], "r+b") as f:
        f.seek(off)
        b = f.read(1)
        assert b, (files[0], off)
        f.seek(off)
        f.write(bytes([b[0] ^ 0x10]))
    return files[0]


def put_checksummed(c, tmp_path, name, data):
    (tmp_path / "in").write_bytes(data)
    c.galley("put", tmp_path / "in", name, "-C", "-R", "2", "-n", "2",
             check=True)
    subs = copies(c, name)
    assert all(len(sub) == 2 for sub in subs), subs
    return subs


def test_checksum_failure_is_repaired_from_the_other_copy(make_cluster,
                                                          tmp_path):
    """R=2 checksummed: a byte flipped on copy 0's disk (server restarted
    first) is read from copy 1, and the read rewrites copy 0's chunks from
    it: copy 0's file on disk is right again, scrub is clean, and copy 0
    alone serves the file (three servers: the record's majority stays up)."""
    c = make_cluster(n=3)
    name = "f/repair"
    data = os.urandom(5 * BLOCK + 333)
    subs = put_checksummed(c, tmp_path, name, data)
    server, _, header = subs[0][0]
    other = subs[0][1][0]
    c.kill(server)
    bad = flip(c, server, header, 40000)  # chunk 1 of subfile 0's fork
    c.restart(server)
    out = tmp_path / "out"
    c.galley("get", name, out, check=True)
    assert out.read_bytes() == data
    assert "chunk 1 (bytes 32768..65535) failed its checksum" in \
        c.log(server), c.log(server)
    # the copy stays in sync, and its file on disk is whole again
    assert all(st == "in-sync" for sub in copies(c, name)
               for _, st, _ in sub), copies(c, name)
    good = fork_files(c, other, subs[0][1][2])[0]
    assert bad.read_bytes() == good.read_bytes()
    cp = c.galley("scrub", name)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert "chunks checked, 0 failed" in cp.stdout, cp.stdout
    assert_copies_identical(c, name)
    # copy 0 alone: its server's bytes are the right ones
    c.kill(other)
    c.galley("get", name, out, check=True)
    assert out.read_bytes() == data
    c.restart(other)


def test_scrub_repairs_from_another_copy(make_cluster, tmp_path):
    """`galley scrub` on an R=2 checksummed file checks every copy and
    rewrites each failing chunk from the other copy, naming the file,
    copy and chunk; a chunk bad on both copies is reported, not repaired,
    and scrub exits 1."""
    c = make_cluster(n=2)
    name = "f/scrub"
    data = os.urandom(6 * BLOCK + 99)
    subs = put_checksummed(c, tmp_path, name, data)
    (s0, _, h0), (s1, _, h1) = subs[0]
    for i in range(2):
        c.kill(i)
    f0 = flip(c, s0, h0, 5)           # chunk 0 of copy 0
    flip(c, s0, h0, 3 * 32768 + 7)    # chunk 3 of copy 0
    f1 = flip(c, s1, h1, 2 * 32768)   # chunk 2 of copy 1
    for i in range(2):
        c.restart(i)
    cp = c.galley("scrub")
    assert cp.returncode == 0, cp.stdout + cp.stderr
    for copy, server, chunk in ((0, s0, 0), (0, s0, 3), (1, s1, 2)):
        assert re.search(r"^%s: subfile 0 fork data copy %d \(server %d\): "
                         r"chunk %d \(fork bytes %d\.\.%d\) FAILED its "
                         r"checksum: repaired from another copy$" % (
                             re.escape(name), copy, server, chunk,
                             chunk * 32768, chunk * 32768 + 32767),
                         cp.stdout, re.M), cp.stdout
    assert "3 failed, 3 repaired from another copy" in cp.stdout, cp.stdout
    assert f0.read_bytes() == f1.read_bytes()
    cp = c.galley("scrub")
    assert cp.returncode == 0 and " 0 failed, 0 repaired" in cp.stdout, \
        cp.stdout
    assert_copies_identical(c, name)
    out = tmp_path / "out"
    c.galley("get", name, out, check=True)
    assert out.read_bytes() == data
    # the same chunk bad on both copies: nothing good to repair from
    for i in range(2):
        c.kill(i)
    flip(c, s0, h0, 32768 + 1)
    flip(c, s1, h1, 32768 + 2)
    for i in range(2):
        c.restart(i)
    cp = c.galley("scrub", name)
    assert cp.returncode == 1, cp.stdout + cp.stderr
    assert "chunk 1 (fork bytes 32768..65535) FAILED its checksum: NOT " \
        "repaired" in cp.stdout, cp.stdout
    cp = c.galley("get", name, tmp_path / "out2")
    assert cp.returncode != 0
    assert "checksum" in cp.stderr, cp.stderr


def test_resync_starts_by_itself_after_a_restart(fresh_cluster, uniq):
    """A server holding copies killed -9 while the file is written: its
    copies go stale; restarted by the launcher, they are brought back in
    sync without a manual resync (polled through fsck); then the other
    copies' server is killed and every byte reads back from the
    resynced ones."""
    c = fresh_cluster
    name = uniq + "/auto"
    helper(c, "create", name, 2, 1, BLOCK)
    helper(c, "write", name, 0, 16, BLOCK, 1)
    subs = copies(c, name)
    victim = subs[0][1][0]
    c.kill(victim)
    helper(c, "write", name, 0, 16, BLOCK, 2)
    assert any(st == "stale" for sub in copies(c, name)
               for _, st, _ in sub)
    c.restart(victim, resync=True)
    deadline = time.monotonic() + 120
    while True:
        cp = c.galley("fsck")
        if cp.returncode == 0:
            break
        assert time.monotonic() < deadline, (
            cp.stdout + (c.dir / "resync.log").read_text(errors="replace"))
        time.sleep(0.2)
    assert "0 stale copies" in cp.stdout, cp.stdout
    for sub in copies(c, name):
        assert all(st == "in-sync" for _, st, _ in sub), sub
    # the other copy goes away (one server: the record's majority stays)
    others = {srv for srv, _, _ in copies(c, name)[0] if srv != victim}
    assert len(others) == 1
    for o in others:
        c.kill(o)
    assert "VERIFIED 16" in helper(c, "verify", name, 16, BLOCK, 2).stdout
    for o in others:
        c.restart(o)
