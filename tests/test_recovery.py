"""galleyd's start-up recovery (servers/meta.c gsrv_meta_scan, used by
nameserver.c and subfile_disk.c, and the metadata table, metatab.c): what
a crash or a stranger leaves in a data directory is cleaned up or left
alone as documented, and the files the directory holds are served as
before."""

import struct
import subprocess
from pathlib import Path

from conftest import describe


def fnv1a(b):
    h = 1469598103934665603  # (fnv.h's offset basis)
    for x in b:
        h = ((h ^ x) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def read_table(path):
    """{key: value} of a metadata table file (servers/metatab.c: "GTAB",
    format 1, count, (u16 key, u32 value) pairs, FNV-1a of the rest)."""
    b = path.read_bytes()
    assert struct.unpack_from("<Q", b, len(b) - 8)[0] == fnv1a(b[:-8])
    magic, fmt, n = struct.unpack_from("<IHQ", b, 0)
    assert (magic, fmt) == (0x42415447, 1)
    at, out = 14, {}
    for _ in range(n):
        (kl,) = struct.unpack_from("<H", b, at)
        key = b[at + 2:at + 2 + kl].decode()
        at += 2 + kl
        (vl,) = struct.unpack_from("<I", b, at)
        out[key] = b[at + 4:at + 4 + vl]
        at += 4 + vl
    assert at == len(b) - 8
    return out


def test_restart_cleans_leftovers_and_keeps_files(make_cluster, tmp_path):
    c = make_cluster(n=1)
    src = tmp_path / "in"
    src.write_bytes(bytes(range(256)) * 20)
    for args in (("put", src, "rec/a"), ("fork", "create", "rec/a", 0, "x"),
                 ("put", src, "rec/b")):
        cp = c.galley(*args)
        assert cp.returncode == 0, describe(cp)
    data = Path(c.dir) / "server0"
    subs = sorted(p for p in (data / "sub").iterdir())
    assert [p.name for p in subs] == ["1", "2"]
    sub_a = data / "sub" / "1"
    # the headers and records are values of the table, not files; fork x
    # has no data file until it is first opened
    assert sorted(p.name for p in sub_a.iterdir()) == ["0.dat"]
    assert list((data / "ns").iterdir()) == []
    assert c.stop().returncode == 0
    assert sorted(read_table(data / "meta.tab")) == [
        "ns/1.rec", "ns/2.rec", "sub/1/header", "sub/2/header"]

    # what a crash leaves: temp files, data of a fork whose removal was
    # interrupted, a subfile directory whose create never wrote its header;
    # and files that are not ours
    (data / "ns" / "9.rec.tmp").write_bytes(b"half a record")
    (data / "ns" / "notes").write_text("not ours")
    (sub_a / "header.tmp").write_bytes(b"half a header")
    (sub_a / "77.dat").write_bytes(b"x" * 100)
    (sub_a / "notes.txt").write_text("not ours")
    orphan = data / "sub" / "5"
    orphan.mkdir()
    (orphan / "0.dat").write_bytes(b"y" * 10)
    (orphan / "counters.tmp").write_bytes(b"z")
    (data / "sub" / "junk").mkdir()
    c.start()

    assert not (data / "ns" / "9.rec.tmp").exists()
    assert (data / "ns" / "notes").read_text() == "not ours"
    assert not (sub_a / "header.tmp").exists()
    assert not (sub_a / "77.dat").exists()
    assert (sub_a / "notes.txt").read_text() == "not ours"
    assert not (sub_a / "1.dat").exists()  # an empty fork: made when used
    assert not orphan.exists()
    assert (data / "sub" / "junk").is_dir()
    log = c.log(0)
    for line in ("ns/notes: not a record file, ignored",
                 "sub/1/notes.txt: unknown file left in place",
                 "sub/junk: not a subfile directory, ignored"):
        assert line in log, log

    for name in ("rec/a", "rec/b"):
        cp = c.galley("get", name, tmp_path / "out")
        assert cp.returncode == 0, describe(cp)
        assert (tmp_path / "out").read_bytes() == src.read_bytes()
    cp = c.galley("fork", "ls", "rec/a", 0)
    assert cp.returncode == 0, describe(cp)
    assert [l.split()[:3] for l in cp.stdout.splitlines()[1:]] == [
        ["fork", "data", str(len(src.read_bytes()))],
        ["fork", "x", "0"]], cp.stdout
    # a new subfile takes a hid past every directory seen, also the orphan's
    # (ids are reserved a block at a time: past the block the first
    # start-up reserved, too)
    cp = c.galley("put", src, "rec/c")
    assert cp.returncode == 0, describe(cp)
    new = sorted(int(p.name) for p in (data / "sub").iterdir()
                 if p.name.isdigit() and int(p.name) > 2)
    assert len(new) == 1 and new[0] > 5, new
    assert (data / "sub" / str(new[0]) / "0.dat").exists()


def test_created_unused_costs_no_file(make_cluster):
    """A file created and removed without data makes no file or directory
    in the servers' data directories (the cost create and remove were
    bound by on ext4), and its records and headers are still durable:
    they survive a kill -9."""
    c = make_cluster(n=2)
    names = ["empty/%d" % i for i in range(20)]
    for name in names:
        cp = c.galley("create", name)
        assert cp.returncode == 0, describe(cp)
    for i in range(2):
        data = Path(c.dir) / ("server%d" % i)
        assert list((data / "sub").iterdir()) == []
        assert list((data / "ns").iterdir()) == []
    for i in range(2):
        c.kill(i)
        c.restart(i)
    assert sorted(c.galley("ls").stdout.split()) == sorted(names)
    for name in names[:10]:
        cp = c.galley("rm", name)
        assert cp.returncode == 0, describe(cp)
    assert sorted(c.galley("ls").stdout.split()) == sorted(names[10:])
    cp = c.galley("fsck")
    assert cp.returncode == 0 and "0 orphan(s)" in cp.stdout, describe(cp)


def test_old_layout_is_imported(make_cluster, tmp_path):
    """A data directory from before the metadata table (a record file per
    name in ns/, a header file per subfile) is read at start-up: its
    values go into the table, the files go once the table is saved, and
    every file is served as before."""
    c = make_cluster(n=2)
    src = tmp_path / "in"
    src.write_bytes(bytes(range(256)) * 300)
    for name in ("old/a", "old/b", "old/c"):
        cp = c.galley("put", src, name)
        assert cp.returncode == 0, describe(cp)
    cp = c.galley("fork", "create", "old/a", 0, "x")
    assert cp.returncode == 0, describe(cp)
    assert c.stop().returncode == 0
    want = {}
    for i in range(2):
        data = Path(c.dir) / ("server%d" % i)
        table = read_table(data / "meta.tab")
        want[i] = table
        # the old layout: the same bytes, one file each (a header's
        # subfile directory made for it where it had none)
        for key, value in table.items():
            (data / key).parent.mkdir(exist_ok=True)
            (data / key).write_bytes(value)
        (data / "meta.tab").unlink()
    c.start()
    for i in range(2):
        data = Path(c.dir) / ("server%d" % i)
        assert read_table(data / "meta.tab") == want[i]
        for key in want[i]:
            assert not (data / key).exists(), key
    for name in ("old/a", "old/b", "old/c"):
        cp = c.galley("get", name, tmp_path / "out")
        assert cp.returncode == 0, describe(cp)
        assert (tmp_path / "out").read_bytes() == src.read_bytes()
    cp = c.galley("fork", "ls", "old/a", 0)
    assert cp.returncode == 0 and "x" in cp.stdout.split(), describe(cp)
    cp = c.galley("fsck")
    assert cp.returncode == 0 and "0 orphan(s)" in cp.stdout, describe(cp)


def test_corrupt_table_is_refused_and_kept(make_cluster, tmp_path):
    """A table file that fails its checksum stops galleyd from starting,
    with a message that names it, and is left in place; serving without
    it would serve an empty file system."""
    c = make_cluster(n=1)
    src = tmp_path / "in"
    src.write_bytes(b"x" * 1000)
    cp = c.galley("put", src, "keep/a")
    assert cp.returncode == 0, describe(cp)
    assert c.stop().returncode == 0
    tab = Path(c.dir) / "server0" / "meta.tab"
    b = bytearray(tab.read_bytes())
    b[20] ^= 0x10
    tab.write_bytes(bytes(b))
    cp = c.ctl("start", "-n", "1", "--no-resync", check=False)
    assert cp.returncode != 0, describe(cp)
    log = c.log(0)
    assert "meta.tab: corrupt" in log, log
    assert tab.read_bytes() == bytes(b)
    b[20] ^= 0x10  # restored from a backup
    tab.write_bytes(bytes(b))
    c.start()
    cp = c.galley("get", "keep/a", tmp_path / "out")
    assert cp.returncode == 0, describe(cp)
    assert (tmp_path / "out").read_bytes() == src.read_bytes()
