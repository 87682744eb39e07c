"""The Galley file model (files, subfiles, forks) through libgalley."""

import re

import pytest

from conftest import LineReader, assert_helper_ok, describe


@pytest.mark.parametrize("scenario", [
    "all", "deferred", "delete-open", "attrs", "truncate", "list", "statfs"])
def test_scenario(cluster, uniq, scenario):
    cp = cluster.helper("t_filemodel", scenario, uniq)
    assert_helper_ok(cp)


def test_subfile_counts_and_placement(cluster, uniq):
    cp = cluster.helper("t_filemodel", "subfiles", uniq)
    assert_helper_ok(cp)
    placed = re.findall(r"^file (\d+) servers ([\d ]+)$", cp.stdout, re.M)
    assert [int(k) for k, _ in placed] == [1, 2, 3, 4]
    for k, servers in placed:
        s = [int(x) for x in servers.split()]
        assert len(s) == int(k) and len(set(s)) == int(k)
        assert all(0 <= x < 4 for x in s)


def test_explicit_servers_are_kept_in_order(cluster, uniq):
    cp = cluster.helper("t_filemodel", "servers", uniq)
    assert_helper_ok(cp)
    placed = re.findall(r"^file (\d) servers ([\d ]+)$", cp.stdout, re.M)
    assert [s.split() for _, s in placed] == [
        ["3", "1"], ["2"], ["3", "2", "1", "0"], ["1", "3", "0"]]


def test_fork_listing_per_subfile(cluster, uniq):
    cp = cluster.helper("t_filemodel", "forks", uniq)
    assert_helper_ok(cp)
    forks = set(re.findall(r"^sub (\d) fork (\S+) size (\d+)$", cp.stdout,
                           re.M))
    assert forks == {("0", "data", "1000"), ("1", "data", "8001"),
                     ("1", "extra", "10"), ("2", "data", "27002"),
                     ("2", "empty", "0"), ("3", "other", "64003")}


def test_deferred_delete_by_another_client(cluster, uniq, tmp_path):
    """Client A holds a fork open; client B (the CLI) deletes it.  A still
    reads every byte; new opens fail; after A's close the fork is gone."""
    name = uniq + "/held"
    p = cluster.popen_helper("t_filemodel", "deferred-wait", name)
    r = LineReader(p)
    try:
        line = r.next(60)
        assert line and line.strip() == "READY", (line, p.stderr.read())
        rm = cluster.galley("fork", "rm", name, 0, "d")
        assert rm.returncode == 0, describe(rm)
        # Another client cannot open it any more.
        cp = cluster.galley("fork", "read", name, 0, "d", tmp_path / "x")
        assert cp.returncode == 1, describe(cp)
        p.stdin.write("go\n")
        p.stdin.close()
        out = r.rest(120)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0 and "FAIL" not in out, out + p.stderr.read()
    assert "READ done" in out and "REOPEN -2" in out and "CLOSED 0" in out, out
    ls = cluster.galley("fork", "ls", name, 0)
    assert ls.returncode == 0, describe(ls)
    assert not re.search(r"^\s+fork d\s", ls.stdout, re.M), ls.stdout
