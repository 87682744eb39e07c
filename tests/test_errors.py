"""Bad arguments and unreachable servers: documented errors, no hangs."""

import ctypes
import os
import socket
import time

import pytest

from conftest import (BUILD, assert_helper_ok, base_env, describe, free_port,
                      galley_path, helper_path, run)
from gproto_const import ERRMSG, GFS_EDIRECT, GFS_ESERVERDOWN, GFS_ETIMEDOUT


@pytest.mark.parametrize("scenario", [
    "names", "exists", "missing", "counts", "io", "ids"])
def test_bad_arguments(cluster, uniq, scenario):
    cp = cluster.helper("t_errors", scenario, uniq)
    assert_helper_ok(cp)


def test_calls_before_init():
    cp = run([helper_path("t_errors"), "notinit"], env=base_env())
    assert_helper_ok(cp)


def test_error_messages():
    cp = run([helper_path("t_errors"), "strerror"], env=base_env())
    assert_helper_ok(cp)


def test_one_message_table():
    """gfs_strerror gives, for every code of the file system's range, the
    message of the one table in galley.h; the array library's range
    (-2001..) is that library's own (ga_strerror, checked by
    arrays/t_layout): the file system's lowest layer knows nothing above
    it, so those codes read as the unknown errno values they are."""
    lib = ctypes.CDLL(str(BUILD / "libgalley" / ".libs" / "libgalley.so"))
    lib.gfs_strerror.restype = ctypes.c_char_p
    lib.gfs_strerror.argtypes = [ctypes.c_int]
    ours = {c: m for c, m in ERRMSG.items() if -2000 < c <= -1000}
    assert len(ours) >= 14 and len(ERRMSG) > len(ours)
    for code, msg in ours.items():
        assert lib.gfs_strerror(code).decode() == msg, code
    for code in set(ERRMSG) - set(ours):
        assert lib.gfs_strerror(code).decode() == os.strerror(-code), code
    assert lib.gfs_strerror(0) == b"success"
    assert lib.gfs_strerror(12345) == b"unknown error"


def test_bad_cluster_files(tmp_path):
    cp = run([helper_path("t_errors"), "clusterfile", tmp_path],
             env=base_env())
    assert_helper_ok(cp)


def write_cluster(path, addrs):
    path.write_text("".join(a + "\n" for a in addrs))
    return path


def test_server_with_nothing_listening(tmp_path):
    """A cluster file naming a port where nothing listens: a quick error,
    not a hang."""
    cf = write_cluster(tmp_path / "cluster", ["127.0.0.1:%d" % free_port()])
    env = base_env({"GALLEY_CLUSTER": str(cf), "GALLEY_TIMEOUT": "3"})
    t0 = time.monotonic()
    cp = run([helper_path("t_failover"), "ping", "0"], env=env, timeout=60)
    elapsed = time.monotonic() - t0
    assert cp.returncode == 0, describe(cp)
    rc = int(cp.stdout.split()[1])
    assert rc == GFS_ESERVERDOWN, cp.stdout
    assert elapsed < 15, "took %.1fs" % elapsed
    t0 = time.monotonic()
    cp = run([galley_path(), "-c", cf, "ls"], env=env, timeout=60)
    assert cp.returncode == 1, describe(cp)
    assert cp.stderr.strip()
    cp = run([galley_path(), "-c", cf, "ping"], env=env, timeout=60)
    assert cp.returncode == 1, describe(cp)
    assert time.monotonic() - t0 < 30


def test_one_dead_address_among_live_servers(cluster, uniq, tmp_path):
    """A cluster file with 4 live servers and a fifth dead address: files on
    live servers keep working, anything needing the dead one fails fast."""
    cf = write_cluster(tmp_path / "cluster",
                       cluster.addrs() + ["127.0.0.1:%d" % free_port()])
    env = {"GALLEY_TIMEOUT": "3"}
    t0 = time.monotonic()
    cp = run([galley_path(), "-c", cf, "ping"], env=base_env(env), timeout=60)
    assert cp.returncode == 1, describe(cp)
    assert "server 4" in cp.stdout or "4" in cp.stderr, describe(cp)
    cp = run([galley_path(), "-c", cf, "create", uniq + "/on4", "-s", "4",
              "-p"], env=base_env(env), timeout=60)
    assert cp.returncode == 1, describe(cp)
    cp = run([galley_path(), "-c", cf, "create", uniq + "/all5", "-n", "5",
              "-p"], env=base_env(env), timeout=60)
    assert cp.returncode == 1, describe(cp)
    assert time.monotonic() - t0 < 60


def test_server_that_never_answers(tmp_path):
    """A listener that accepts connections but never replies: the client
    gives up with GFS_ETIMEDOUT (or SERVERDOWN) after GALLEY_TIMEOUT."""
    with socket.socket() as ls:
        ls.bind(("127.0.0.1", 0))
        ls.listen(16)
        cf = write_cluster(tmp_path / "cluster",
                           ["127.0.0.1:%d" % ls.getsockname()[1]])
        env = base_env({"GALLEY_CLUSTER": str(cf), "GALLEY_TIMEOUT": "2"})
        t0 = time.monotonic()
        cp = run([helper_path("t_failover"), "ping", "0"], env=env,
                 timeout=60)
        elapsed = time.monotonic() - t0
    assert cp.returncode == 0, describe(cp)
    rc = int(cp.stdout.split()[1])
    # forced direct: a listener with no same-host socket is a server on
    # another host as far as the client can tell, and it says so
    forced = os.environ.get("GALLEY_TRANSPORT") == "direct"
    assert rc in (GFS_ETIMEDOUT, GFS_ESERVERDOWN) + \
        ((GFS_EDIRECT,) if forced else ()), cp.stdout
    assert elapsed < 15, "took %.1fs" % elapsed
