"""galleyd's start-up recovery scan (servers/meta.c gsrv_meta_scan, used by
nameserver.c and subfile_disk.c): what a crash or a stranger leaves in a
data directory is cleaned up or left alone as documented, and the files
the directory holds are served as before."""

from pathlib import Path

from conftest import describe


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
    assert sorted(p.name for p in sub_a.iterdir()) == [
        "0.dat", "1.dat", "header"]
    assert c.stop().returncode == 0

    # what a crash leaves: temp files, data of a fork whose removal was
    # interrupted, a subfile directory whose create never wrote its header;
    # and files that are not ours
    (data / "ns" / "9.rec.tmp").write_bytes(b"half a record")
    (data / "ns" / "notes").write_text("not ours")
    (sub_a / "header.tmp").write_bytes(b"half a header")
    (sub_a / "77.dat").write_bytes(b"x" * 100)
    (sub_a / "notes.txt").write_text("not ours")
    (sub_a / "1.dat").unlink()  # fork x: its data file is lost
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
    assert (data / "sub" / str(new[0]) / "header").exists()
