"""quickstart's own set-up logic on a machine that has nothing yet.

A copy of ./quickstart runs `build` on a PATH of stand-ins for the system
tools it asks: `dpkg-query` reports nothing installed, `update-alternatives`
knows no `mpi` group (it exits 2, as Debian's does), there is no `mpicc`,
`apt-get` records what it is asked, and `autoreconf` (the first build step
after the packages) fails.  quickstart must get through the package logic
to the install step, and a failing step must be named, never a silent exit.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# real programs quickstart needs before its first build step
REAL = ("bash", "env", "sed", "grep", "cat", "dirname", "mkdir", "rm", "tee",
        "id", "sort", "head", "tr", "sleep", "basename")


def stub(bindir, name, body):
    p = bindir / name
    p.write_text("#!/bin/bash\n" + body + "\n")
    p.chmod(0o755)


@pytest.fixture
def fresh(tmp_path):
    """(run, calls): run(apt_install_status) runs `quickstart build` in a
    copy on the stand-in PATH; calls() lists the stand-ins' invocations."""
    root = tmp_path / "project"
    root.mkdir()
    shutil.copy(REPO / "quickstart", root / "quickstart")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in REAL:
        real = shutil.which(name)
        assert real, name
        (bindir / name).symlink_to(real)
    (bindir / "python3").symlink_to(sys.executable)
    log = tmp_path / "calls"
    rec = 'echo "$(basename "$0") $*" >>%s' % log
    stub(bindir, "dpkg-query", rec + "\nexit 1")
    stub(bindir, "update-alternatives", rec + """
echo "update-alternatives: error: no alternatives for ${2:-?}" >&2
exit 2""")
    stub(bindir, "sudo", rec + '\nexec "$@"')
    stub(bindir, "autoreconf", rec + "\necho 'autoreconf: stand-in fails' >&2\nexit 3")

    def run(apt_install_status):
        stub(bindir, "apt-get", rec + """
case "$*" in *install*) exit %d ;; esac
exit 0""" % apt_install_status)
        env = {"PATH": str(bindir), "HOME": str(tmp_path),
               "GALLEY_CACHE": str(tmp_path / "cache")}
        return subprocess.run([str(bindir / "bash"), str(root / "quickstart"),
                               "build"], env=env, capture_output=True,
                              text=True, timeout=120)

    def calls():
        return log.read_text().splitlines() if log.exists() else []

    return run, calls


def describe(cp):
    return "exit %s\n--- stdout\n%s\n--- stderr\n%s" % (cp.returncode,
                                                       cp.stdout, cp.stderr)


def test_no_mpi_yet_proceeds_to_install(fresh):
    """No `mpi` alternatives group, no mpicc, nothing installed: the
    alternatives query's exit 2 is not fatal; apt-get installs MPICH and the
    rest; the next step (autoreconf) failing is reported by name."""
    run, calls = fresh
    cp = run(0)
    assert cp.returncode != 0, describe(cp)
    seen = calls()
    assert any(c.startswith("update-alternatives --query mpi") for c in seen), seen
    installs = [c for c in seen if c.startswith("apt-get") and " install " in c]
    assert len(installs) == 1, seen
    for pkg in ("libmpich-dev", "libopenmpi-dev", "libfuse3-dev",
                "python3-matplotlib"):
        assert pkg in installs[0].split(), installs[0]
    # got past the packages, into the build, and said where it stopped
    assert any(c.startswith("autoreconf") for c in seen), seen
    assert 'FAILED in step "autoreconf"' in cp.stderr, describe(cp)
    assert "command: autoreconf -fi" in cp.stderr, describe(cp)
    assert "quickstart-build.log" in cp.stderr, describe(cp)


def test_failed_install_names_the_step(fresh):
    """apt-get install failing ends the run with the step and command."""
    run, calls = fresh
    cp = run(100)
    assert cp.returncode == 100, describe(cp)
    assert 'FAILED in step "packages: installing' in cp.stderr, describe(cp)
    assert "(exit status 100)" in cp.stderr, describe(cp)
    assert "apt-get install" in cp.stderr, describe(cp)
    assert not any(c.startswith("autoreconf") for c in calls())
