"""The `galley` command-line tool against a real 4-server cluster."""

import os
import re
import stat
import subprocess

import pytest

from conftest import base_env, describe, galley_path, run


def ok(cp):
    assert cp.returncode == 0, describe(cp)
    return cp


def layout_fork_size(nsub, unit, sub, size):
    full, rest = divmod(size, unit * nsub)
    n = full * unit
    lo = sub * unit
    return n + max(0, min(rest - lo, unit))


def fork_sizes(text):
    """{(subfile, fork): size} from `galley fork ls` or `galley stat`."""
    out, sub = {}, None
    for line in text.splitlines():
        m = re.match(r"subfile (\d+)", line)
        if m:
            sub = int(m.group(1))
            continue
        m = re.match(r"\s+fork (\S+)\s+(\d+) bytes", line)
        if m and sub is not None:
            out[(sub, m.group(1))] = int(m.group(2))
    return out


def stat_servers(text):
    return [int(s) for s in re.findall(r"^subfile \d+: server (\d+)", text,
                                       re.M)]


def test_ping(cluster):
    cp = ok(cluster.galley("ping"))
    assert len(re.findall(r"^server\s+\d+\s+\S+\s+ok", cp.stdout, re.M)) == 4, \
        cp.stdout


def test_forks_of_different_sizes_per_subfile(cluster, uniq, tmp_path):
    name = uniq + "/forks"
    ok(cluster.galley("create", name, "-n", "4", "-p"))
    sizes = [1, 4096 * 3 + 17, 250000, 1 << 20]
    for i, size in enumerate(sizes):
        src = tmp_path / ("in%d" % i)
        src.write_bytes(os.urandom(size))
        ok(cluster.galley("fork", "write", name, i, "notes", src))
    for i, size in enumerate(sizes):
        out = tmp_path / ("out%d" % i)
        ok(cluster.galley("fork", "read", name, i, "notes", out))
        assert out.read_bytes() == (tmp_path / ("in%d" % i)).read_bytes()
    listed = fork_sizes(ok(cluster.galley("fork", "ls", name)).stdout)
    assert listed == {(i, "notes"): s for i, s in enumerate(sizes)}
    one = fork_sizes(ok(cluster.galley("fork", "ls", name, 2)).stdout)
    assert one == {(2, "notes"): sizes[2]}
    st = ok(cluster.galley("stat", name)).stdout
    assert re.search(r"^subfiles:\s+4$", st, re.M), st
    servers = stat_servers(st)
    assert sorted(servers) == [0, 1, 2, 3], st
    assert fork_sizes(st) == listed


def test_fork_create_rm_and_missing_fork(cluster, uniq, tmp_path):
    name = uniq + "/f"
    ok(cluster.galley("create", name, "-n", "2", "-p"))
    ok(cluster.galley("fork", "create", name, 1, "empty"))
    assert fork_sizes(ok(cluster.galley("fork", "ls", name)).stdout) == \
        {(1, "empty"): 0}
    cp = cluster.galley("fork", "create", name, 1, "empty")
    assert cp.returncode == 1 and "exists" in cp.stderr.lower(), describe(cp)
    ok(cluster.galley("fork", "rm", name, 1, "empty"))
    assert fork_sizes(ok(cluster.galley("fork", "ls", name)).stdout) == {}
    cp = cluster.galley("fork", "read", name, 0, "nothere", tmp_path / "x")
    assert cp.returncode == 1, describe(cp)
    assert "nothere" in cp.stderr or "No such" in cp.stderr, cp.stderr
    assert not (tmp_path / "x").exists()
    cp = cluster.galley("fork", "create", name, 5, "x")
    assert cp.returncode != 0, describe(cp)


def test_explicit_servers(cluster, uniq):
    name = uniq + "/placed"
    ok(cluster.galley("create", name, "-n", "2", "-s", "3,1", "-p"))
    st = ok(cluster.galley("stat", name)).stdout
    assert stat_servers(st) == [3, 1], st
    cp = cluster.galley("create", uniq + "/dup", "-n", "2", "-s", "2,2", "-p")
    assert cp.returncode != 0, describe(cp)
    cp = cluster.galley("create", uniq + "/nosuch", "-s", "7", "-p")
    assert cp.returncode != 0, describe(cp)
    cp = cluster.galley("create", uniq + "/toomany", "-n", "5", "-p")
    assert cp.returncode != 0, describe(cp)


@pytest.mark.parametrize("size,nsub,unit", [
    (5 * 1024 * 1024 + 12345, 4, "64K"),
    (0, 4, "64K"),
    (1, 3, "4096"),
    (100000 * 16, 4, "16"),  # 100000 stripe units of 16 B over 4 servers
])
def test_put_get_round_trip(cluster, uniq, tmp_path, size, nsub, unit):
    name = uniq + "/data"
    src = tmp_path / "in"
    src.write_bytes(os.urandom(size))
    ok(cluster.galley("put", src, name, "-n", nsub, "-u", unit))
    out = tmp_path / "out"
    ok(cluster.galley("get", name, out))
    assert out.read_bytes() == src.read_bytes()
    st = ok(cluster.galley("stat", name)).stdout
    assert re.search(r"^size:\s+%d bytes" % size, st, re.M), st
    assert re.search(r"^subfiles:\s+%d$" % nsub, st, re.M), st
    # The bytes sit in the subfiles as the striped layout says.
    u = {"64K": 65536}.get(unit) or int(unit)
    forks = fork_sizes(st)
    assert forks == {(i, "data"): layout_fork_size(nsub, u, i, size)
                     for i in range(nsub)}, st


def test_put_get_keep_modes(cluster, uniq, tmp_path):
    """put keeps a local file's permission bits, stat shows them, get
    gives them to the new local file (less the umask, as cp)."""
    src = tmp_path / "script"
    src.write_text("#!/bin/sh\necho ran\n")
    src.chmod(0o750)
    ok(cluster.galley("put", src, uniq + "/s"))
    st = ok(cluster.galley("stat", uniq + "/s")).stdout
    assert re.search(r"^mode:\s+0750$", st, re.M), st
    ok(cluster.galley("put", "-", uniq + "/d", input=b"x", binary=True))
    st = ok(cluster.galley("stat", uniq + "/d")).stdout
    assert re.search(r"^mode:\s+0644$", st, re.M), st
    out = tmp_path / "out"
    ok(cluster.galley("get", uniq + "/s", out))
    m = os.umask(0)
    os.umask(m)
    assert stat.S_IMODE(out.stat().st_mode) == 0o750 & ~m
    assert subprocess.run([str(out)], capture_output=True, text=True,
                          timeout=30).stdout == "ran\n"


def test_put_from_stdin_get_to_stdout(cluster, uniq):
    data = os.urandom(3 * 65536 + 99)
    ok(cluster.galley("put", "-", uniq + "/s", input=data, binary=True))
    cp = cluster.galley("get", uniq + "/s", "-", binary=True)
    assert cp.returncode == 0, describe(cp)
    assert cp.stdout == data


def test_put_refuses_to_replace_without_f(cluster, uniq, tmp_path):
    name = uniq + "/r"
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"first version" * 1000)
    b.write_bytes(b"second")
    ok(cluster.galley("put", a, name))
    cp = cluster.galley("put", b, name)
    assert cp.returncode == 1 and "exists" in cp.stderr, describe(cp)
    out = tmp_path / "out"
    ok(cluster.galley("get", name, out))
    assert out.read_bytes() == a.read_bytes()
    ok(cluster.galley("put", b, name, "-f"))
    ok(cluster.galley("get", name, out))
    assert out.read_bytes() == b"second"


def test_ls_and_rm(cluster, uniq, tmp_path):
    for leaf in ("b", "a", "c/d"):
        ok(cluster.galley("create", "%s/%s" % (uniq, leaf), "-n", "1", "-p"))
    listed = ok(cluster.galley("ls", uniq + "/")).stdout.split()
    assert listed == ["%s/%s" % (uniq, l) for l in ("a", "b", "c/d")]
    assert uniq + "/a" in ok(cluster.galley("ls")).stdout.split()
    ok(cluster.galley("rm", uniq + "/b"))
    listed = ok(cluster.galley("ls", uniq + "/")).stdout.split()
    assert listed == ["%s/%s" % (uniq, l) for l in ("a", "c/d")]
    cp = cluster.galley("stat", uniq + "/b")
    assert cp.returncode == 1, describe(cp)
    cp = cluster.galley("rm", uniq + "/b")
    assert cp.returncode == 1 and uniq + "/b" in cp.stderr, describe(cp)
    assert ok(cluster.galley("ls", uniq + "/nothing-here")).stdout == ""


def test_get_of_a_missing_file(cluster, uniq, tmp_path):
    out = tmp_path / "never"
    cp = cluster.galley("get", uniq + "/missing", out, timeout=30)
    assert cp.returncode == 1, describe(cp)
    assert uniq + "/missing" in cp.stderr, cp.stderr
    assert "No such file" in cp.stderr, cp.stderr
    assert "Traceback" not in cp.stderr and len(cp.stderr) < 500
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []  # no partial copy either


def test_put_of_a_missing_local_file(cluster, uniq, tmp_path):
    cp = cluster.galley("put", tmp_path / "nope", uniq + "/x")
    assert cp.returncode == 1, describe(cp)
    assert "nope" in cp.stderr
    cp = cluster.galley("stat", uniq + "/x")
    assert cp.returncode == 1


def test_df(cluster):
    cp = ok(cluster.galley("df"))
    rows = [l for l in cp.stdout.splitlines() if re.match(r"^\d+\s", l)]
    assert len(rows) == 4, cp.stdout
    assert "ERROR" not in cp.stdout


def test_usage_errors(cluster):
    for args in (["frobnicate"], ["get"], ["create"], ["fork", "nope"],
                 ["create", "x", "-n", "notanumber"]):
        cp = cluster.galley(*args)
        assert cp.returncode == 2, "%s: %s" % (args, describe(cp))
        assert cp.stderr.strip()


def test_no_cluster_file(tmp_path):
    env = base_env({"HOME": str(tmp_path)})
    cp = run([galley_path(), "ping"], env=env, timeout=30)
    assert cp.returncode != 0, describe(cp)
    assert "cluster" in cp.stderr.lower(), cp.stderr
    cp = run([galley_path(), "-c", tmp_path / "missing", "ls"], env=env,
             timeout=30)
    assert cp.returncode != 0, describe(cp)
    assert "missing" in cp.stderr, cp.stderr
    bad = tmp_path / "bad"
    bad.write_text("not a cluster file\n")
    cp = run([galley_path(), "-c", bad, "ls"], env=env, timeout=30)
    assert cp.returncode != 0, describe(cp)
    assert "cluster" in cp.stderr.lower(), cp.stderr


def config_rows(text):
    """{name: [value, default, meaning]} from `galley config`."""
    rows, last = {}, None
    for line in text.splitlines():
        m = re.match(r"^(GALLEY_[A-Z0-9_]+)  +(.*?)  +default: (.*)$", line)
        if m:
            last = m.group(1)
            rows[last] = [m.group(2), m.group(3), ""]
        elif last and line.startswith("    "):
            rows[last][2] = line.strip()
    return rows


def config_env(extra):
    env = {k: v for k, v in base_env().items() if not k.startswith("GALLEY_")}
    env.update(extra)
    return env


def test_config_prints_values_and_defaults(tmp_path):
    """`galley config`: each variable's value here (what a number is taken
    as when it reads otherwise: clamped, out of range, not a name),
    its default and meaning; no cluster needed."""
    env = config_env({
        "GALLEY_CLUSTER": str(tmp_path / "c"),
        "GALLEY_TIMEOUT": "2.5",           # seconds
        "GALLEY_SPIN_US": "999999",        # clamped to 100000
        "GALLEY_NB_THREADS": "65",         # out of 1..64: the default
        "GALLEY_TRANSPORT": "bogus",       # gfs_init refuses it
        "GALLEY_FAST_READ": "0",
        "GALLEY_MD_IDLE_MS": "",           # empty counts: 0, never let go
        "GALLEY_MD_RENEW_MS": "",          # empty does not: the default
        "GALLEY_LOCAL_RANK": "3x",         # not a number: the launcher's
    })
    cp = ok(run([galley_path(), "config"], env=env, timeout=30))
    rows = config_rows(cp.stdout)
    want = {
        "GALLEY_CLUSTER": [str(tmp_path / "c"),
                           "~/.galley/cluster, then /etc/galley/cluster"],
        "GALLEY_TIMEOUT": ["2.5", "30 s"],
        "GALLEY_SPIN_US": ["999999 (= 100000)", "50 us"],
        "GALLEY_NB_THREADS": ["65 (= 4)", "4"],
        "GALLEY_TRANSPORT": ["bogus (= invalid)", "auto"],
        "GALLEY_FAST_READ": ["0 (= off)", "on"],
        "GALLEY_MD_IDLE_MS": ['"" (= 0)', "30000 ms"],
        "GALLEY_MD_RENEW_MS": ["(default)", "200 ms"],
        "GALLEY_LOCAL_RANK": ["3x (= the default)",
                              "MPI_LOCALRANKID, OMPI_COMM_WORLD_LOCAL_RANK, "
                              "SLURM_LOCALID, else 0"],
        "GALLEY_LOCK_RENEW_MS": ["(default)", "1000 ms"],
        "GALLEY_MD_LEASE_MS": ["(default)", "3000 ms"],
        "GALLEY_DIRECT_WRITE_MIN": ["(default)", "512 bytes"],
        "GALLEY_GROUP_POLICY": ["(default)", "nosend"],
        "GALLEY_POSIX_MOUNTS": ["(default)", "(none)"],
    }
    assert {k: rows.get(k, [None, None])[:2] for k in want} == want, cp.stdout
    assert rows["GALLEY_TIMEOUT"][2].endswith("[client]"), cp.stdout
    assert rows["GALLEY_MD_LEASE_MS"][2].endswith("[server]"), cp.stdout
    assert all(r[2] for r in rows.values()), cp.stdout  # every one a meaning
    assert len(rows) == len(set(re.findall(r"^GALLEY_\w+", cp.stdout, re.M)))


def test_config_of_named_variables(tmp_path):
    env = config_env({"GALLEY_POSIX_UNIT": "1048576"})
    cp = ok(run([galley_path(), "config", "GALLEY_POSIX_UNIT", "GALLEY_KEY"],
                env=env, timeout=30))
    rows = config_rows(cp.stdout)
    assert list(rows) == ["GALLEY_KEY", "GALLEY_POSIX_UNIT"], cp.stdout
    assert rows["GALLEY_POSIX_UNIT"][:2] == ["1048576", "0 (64 KiB)"]
    cp = run([galley_path(), "config", "NO_SUCH_VARIABLE"], env=env,
             timeout=30)
    assert cp.returncode == 2 and "NO_SUCH_VARIABLE" in cp.stderr, \
        describe(cp)
    assert not cp.stdout
