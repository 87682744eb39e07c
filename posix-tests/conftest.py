"""Fixtures for posix-tests: the servers and helpers of tests/conftest.py
(loaded under its own name), galley_exec() (a command under `galley exec`
for a cluster) and Mount (`galley mount` / `galley umount`)."""

import importlib.util
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def _load(name, path):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


gt = _load("galley_tests_conftest", REPO / "tests" / "conftest.py")

# tests/conftest.py's fixtures, for this folder too.
cluster = gt.cluster
make_cluster = gt.make_cluster
uniq = gt.uniq
describe = gt.describe


def helper(name):
    return gt.find_program("posix-tests/helpers/" + name, name)


def oserr(fn, *args):
    """The errno fn(*args) fails with (0 if it works)."""
    try:
        fn(*args)
    except OSError as e:
        return e.errno
    return 0


def galley_exec(c, *cmd, timeout=gt.CALL_TIMEOUT, opts=(), mounts=(),
                input=None):
    """Run cmd under `galley exec` for cluster c; returns CompletedProcess."""
    args = [gt.galley_path(), "-c", str(c.cluster_file)] + list(opts) + \
        ["exec"]
    for m in mounts:
        args += ["-m", m]
    return gt.run(args + ["--"] + [str(a) for a in cmd], env=c.env,
                  timeout=timeout, input=input)


def local_and_mapped(cluster, uniq, tmp_path, run):
    """run(directory, mounts) on a local directory (mounts None) and on one
    mapped to /uniq under `galley exec -m`: (local's, mapped's) results.
    The mapped directory must stay empty: the files were Galley's."""
    local, mapped = tmp_path / "local", tmp_path / "mapped"
    local.mkdir()
    mapped.mkdir()
    want = run(local, None)
    got = run(mapped, ["%s=/%s" % (mapped, uniq)])
    assert list(mapped.iterdir()) == []
    return want, got


# ------------------------------------------------------------- mounts
def fuse_ok():
    try:
        daemon = gt.find_program("fuse/galley-fuse", "galley-fuse")
    except BaseException:
        return False
    return daemon and os.path.exists("/dev/fuse")


def mounted(d):
    with open("/proc/self/mounts") as f:
        return any(l.split()[1] == str(d) for l in f)


def daemon_pid(d):
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            args = (p / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if args and args[0].endswith(b"galley-fuse") and \
                str(d).encode() in args:
            return int(p.name)
    return None


class Mount:
    def __init__(self, c, d, args=()):
        self.c, self.dir = c, Path(d)
        self.dir.mkdir(exist_ok=True)
        cp = c.galley("mount", *args, self.dir)
        assert cp.returncode == 0 and mounted(self.dir), describe(cp)

    def umount(self):
        cp = gt.run([gt.galley_path(), "umount", self.dir], env=self.c.env)
        assert cp.returncode == 0 and not mounted(self.dir), describe(cp)




def pytest_terminal_summary(terminalreporter):
    """The testpar runs of test_posix_hdf5.py, with their times."""
    rows = []
    for mod in list(sys.modules.values()):
        if getattr(mod, "__name__", "") == "galley_hdf5_tests":
            rows += getattr(mod, "HDF5_TESTPAR_SUMMARY", None) or []
    if rows:
        tr = terminalreporter
        tr.section("HDF5 testpar runs with the preload (%d)" % len(rows))
        for prefix, what, verdict, seconds in rows:
            tr.write_line("%-7s %-34s %8.1f s  %s" % (prefix, what, seconds,
                                                      verdict))


@pytest.fixture
def mnt(cluster, tmp_path):
    """A `galley mount` of the module's cluster (unmounted after)."""
    m = Mount(cluster, tmp_path / "mnt")
    yield m
    if mounted(m.dir):
        m.umount()
