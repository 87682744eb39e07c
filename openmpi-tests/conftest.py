"""Fixtures for the Open MPI tests: Debian's Open MPI with the Galley OMPIO
components (ompio_galley/, installed into <prefix>/lib/openmpi), programs
built with its mpicc, our MPICH for the cross-reads, and 4 real galleyd
servers.  The support code is mpiio-tests' (mpiio_support.py)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "mpiio-tests"))

from mpiio_support import (Mpi, build_programs, galley_cluster, galley_libdir,  # noqa: E402
                           our_mpich, out_dir, require_or_skip, unique_name)

OMPI_MPICC = "/usr/bin/mpicc.openmpi"
OMPI_MPIEXEC = "/usr/bin/mpiexec.openmpi"


class OpenMpi(Mpi):
    """Debian's Open MPI, told where our components are; the settings are
    those of `./quickstart env --openmpi` (root, oversubscription, no
    cross-memory copies in the shared-memory transport)."""

    def __init__(self, libdir, components):
        self.prefix = Path("/usr")
        self.mpicc = Path(OMPI_MPICC)
        self.mpiexec = Path(OMPI_MPIEXEC)
        self.libdir = Path(libdir)
        self.ld_library_path = str(self.libdir)
        self.components = components
        # Open MPI's own plug-in directory first (setting the path replaces
        # its default), as ./quickstart env --openmpi does
        own = "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3"
        try:
            out = subprocess.run(["ompi_info", "--path", "pkglibdir", "--parsable"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 text=True, timeout=60).stdout
            own = re.search(r"^path:pkglibdir:(.*)$", out, re.M).group(1) or own
        except (OSError, subprocess.TimeoutExpired, AttributeError):
            pass
        self.component_path = "%s:%s" % (own, components)

    def env(self, cluster_file=None, extra=None):
        env = super().env(cluster_file, extra)
        env.update({
            "OMPI_MCA_mca_base_component_path": self.component_path,
            "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_rmaps_base_oversubscribe": "1",
            "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
        })
        return env


@pytest.fixture(scope="session")
def ompi():
    libdir = galley_libdir()
    if not Path(OMPI_MPICC).exists() or libdir is None:
        require_or_skip("Open MPI (libopenmpi-dev) or libgalley missing: ./quickstart build")
    comps = libdir / "openmpi"
    if not (comps / "mca_fs_galley.so").exists():
        require_or_skip("the Galley OMPIO components are not built (%s/mca_fs_galley.so)"
                        % comps)
    return OpenMpi(libdir, comps)


@pytest.fixture(scope="session")
def mpich():
    return our_mpich()


@pytest.fixture(scope="session")
def oprogs(ompi, tmp_path_factory):
    """mpiio-tests' programs built with Open MPI's mpicc: name -> path."""
    return build_programs(ompi.mpicc, ompi.env(), out_dir(tmp_path_factory, "openmpi-bin"),
                          ["-Wall"])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from galley_cluster(tmp_path_factory)


@pytest.fixture
def uniq(request):
    return unique_name(request, "om")
