"""Fixtures for the MPI-IO tests: our MPICH (whose ROMIO has the galley:
driver), MPI programs built with its mpicc, and real galleyd servers.
Locations and environment variables: see mpiio_support.py (which also
holds what these fixtures share with openmpi-tests/conftest.py).
"""

import pytest

from mpiio_support import build_programs, galley_cluster, our_mpich, out_dir, unique_name


@pytest.fixture(scope="session")
def mpi():
    return our_mpich()


@pytest.fixture(scope="session")
def progs(mpi, tmp_path_factory):
    """Our test programs built with our mpicc: name -> path."""
    return build_programs(mpi.mpicc, mpi.env(), out_dir(tmp_path_factory, "bin"),
                          ["-Wall", "-Wextra"])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """4 real galleyd servers for the module (started through
    tools/galley-cluster, stopped at the end)."""
    yield from galley_cluster(tmp_path_factory)


@pytest.fixture
def uniq(request):
    """A galley name prefix no other test uses: /mt/<test>-<random>."""
    return unique_name(request, "mt")
