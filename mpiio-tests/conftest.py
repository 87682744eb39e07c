"""Fixtures for the MPI-IO tests: our MPICH (whose ROMIO has the galley:
driver), MPI programs built with its mpicc, and real galleyd servers.
Locations and environment variables: see mpiio_support.py.
"""

import re
import uuid

import pytest

from mpiio_support import (PROGRAMS, SRC, Cluster, Mpi, compile_c, find_mpich, gt,
                           out_dir)


@pytest.fixture(scope="session")
def mpi():
    prefix, libdir = find_mpich()
    return Mpi(prefix, libdir)


@pytest.fixture(scope="session")
def progs(mpi, tmp_path_factory):
    """Our test programs built with our mpicc: name -> path."""
    d = out_dir(tmp_path_factory, "bin")
    env = mpi.env()
    built = {}
    for name, extra in PROGRAMS.items():
        srcs = [SRC / (name + ".c"), SRC / "mt.c"] + [SRC / e for e in extra]
        deps_newest = max(p.stat().st_mtime for p in [SRC / "mt.h", SRC / "cases.h"])
        out = d / name
        if out.exists() and out.stat().st_mtime < deps_newest:
            out.unlink()
        built[name] = compile_c(mpi.mpicc, srcs, out, env, ["-Wall", "-Wextra"])
    return built


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """4 real galleyd servers for the module (started through
    tools/galley-cluster, stopped at the end)."""
    c = Cluster(tmp_path_factory.mktemp("cluster"), n=4).start()
    yield c
    c.check_alive()
    gt._teardown(c)


@pytest.fixture
def uniq(request):
    """A galley name prefix no other test uses: /mt/<test>-<random>."""
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)[:60]
    return "/mt/%s-%s" % (base, uuid.uuid4().hex[:8])
