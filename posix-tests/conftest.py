"""Fixtures for posix-tests: the servers and helpers of tests/conftest.py
(loaded under its own name), and `pexec`, which runs a command under
`galley exec` against a cluster."""

import importlib.util
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


def helper(name):
    return gt.find_program("posix-tests/helpers/" + name, name)


def galley_exec(c, *cmd, timeout=gt.CALL_TIMEOUT, opts=(), mounts=(),
                input=None):
    """Run cmd under `galley exec` for cluster c; returns CompletedProcess."""
    args = [gt.galley_path(), "-c", str(c.cluster_file)] + list(opts) + \
        ["exec"]
    for m in mounts:
        args += ["-m", m]
    return gt.run(args + ["--"] + [str(a) for a in cmd], env=c.env,
                  timeout=timeout, input=input)


@pytest.fixture
def pexec(cluster):
    def run(*cmd, **kw):
        return galley_exec(cluster, *cmd, **kw)
    return run
