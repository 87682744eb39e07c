"""galley: files from Debian's Open MPI through the Galley OMPIO components
(ompio_galley/), against 4 real galleyd servers:

  * mpiio-tests' programs built with Open MPI's mpicc, every shape, with 1,
    2 and 4 ranks, each on galley: and on a local file in the same test:
    galley: passes, or fails only where the local file fails the same way
    (then the test is an xfail that names OMPIO's own failures);
  * ROMIO's own test programs built with Open MPI's mpicc, on galley: and
    on a local file: every program that passes on the local file passes
    on galley:;
  * cross-reads: written through Open MPI, read byte for byte through our
    MPICH and `galley get`, and the other way round;
  * bad input: missing file, EXCL on an existing file, unreachable servers;
  * Open MPI's own POSIX path (its pwritev) on a directory that
    `galley exec -m` maps to Galley;
  * Debian's parallel HDF5 for Open MPI runs hdf5-tests' h5par_check.
"""

import filecmp
import os
import re
import shlex
import socket
import struct
import sys
from pathlib import Path

import pytest

from mpiio_support import (SRC, Cluster, assert_no_errors, gt, compile_c, describe, no_errors,
                           out_dir, require_or_skip, romio_testdir)

HERE = Path(__file__).resolve().parent
SKIP_KNOWN = ["-skip", "lb_file,neg_lb_mem,sparse_ranks"]   # see mpiio-tests

RUNS = []
for n in (1, 2, 4):
    for prog in ("contig", "views", "sharedfp", "atomicity", "sizes"):
        RUNS.append(("%s-np%d" % (prog, n), prog, n, []))
    for prog in ("noncontig", "nonblock", "coll"):
        RUNS.append(("%s-np%d" % (prog, n), prog, n, SKIP_KNOWN))
for n in (1, 4):
    RUNS.append(("errors-np%d" % n, "errors", n, []))

FAIL_LINE = re.compile(r"^FAIL rank \d+ \[([^\]]*)\]: (.*)$", re.M)


def failures(cp):
    """The failed checks of an mpiio-tests program: {(section, message)}."""
    return set(FAIL_LINE.findall(cp.stdout + "\n" + cp.stderr))


@pytest.mark.parametrize("prog,n,args", [r[1:] for r in RUNS], ids=[r[0] for r in RUNS])
def test_program(ompi, oprogs, cluster, uniq, tmp_path, prog, n, args):
    env = ompi.env(cluster.cluster_file)
    cp = ompi.run(n, [oprogs[prog], "-fname", "galley:%s/%s" % (uniq, prog)] + args, env, 600)
    cluster.check_alive()
    if no_errors(cp):
        return
    local = ompi.run(n, [oprogs[prog], "-fname", str(tmp_path / prog)] + args, env, 600)
    extra = failures(cp) - failures(local)
    assert not extra and failures(cp), \
        "fails on galley: beyond what fails on a local file:\n%s\n--- local file:\n%s" % (
            describe(cp), describe(local))
    pytest.xfail("OMPIO's own: the same checks fail on a local file: %s"
                 % sorted({s for s, _ in failures(local)}))


# ---- ROMIO's test programs --------------------------------------------------

ROMIO = [
    ("simple", 4, "fname"), ("async", 4, "fname"), ("async-multiple", 4, "fname"),
    ("atomicity", 4, "fname"), ("coll_test", 4, "fname"), ("excl", 4, "fname"),
    ("file_info", 4, "fname"), ("i_noncontig", 2, "fname"), ("noncontig", 2, "fname"),
    ("noncontig_coll", 2, "fname"), ("noncontig_coll2", 4, "fname"),
    ("aggregation1", 4, "agg1"), ("aggregation2", 4, "plain"), ("hindexed", 4, "plain"),
    ("misc", 4, "fname"), ("shared_fp", 4, "fname"), ("ordered_fp", 4, "fname"),
    ("split_coll", 4, "fname"), ("psimple", 4, "fname"), ("error", 1, "fname"),
    ("status", 1, "fname"), ("types_with_zeros", 2, "plain"), ("darray_read", 4, "plain"),
    ("creat_excl", 4, "fname"), ("big_extents", 4, "plain"),
]


# As in mpiio-tests/test_romio_suite.py (the same for our MPICH).
XFAIL = {
    "file_info":
        "ROMIO's file_info run without -u never learns the default striping factor "
        "(stays 0), sets striping_factor=0 and requires get_info to echo 0; galley: "
        "reports the layout really used (4 subfiles), as MPI asks for.",
}


@pytest.fixture(scope="session")
def oromio(ompi, tmp_path_factory):
    """(ROMIO's test sources, where to build them)."""
    src = romio_testdir()
    if src is None or not (src / "simple.c").exists():
        require_or_skip("ROMIO's test sources not found (%s)" % src)
    return src, out_dir(tmp_path_factory, "openmpi-romio")


def build_romio(ompi, oromio, name):
    """One ROMIO test built with Open MPI's mpicc (mpi1_compat.h gives back
    the MPI-1 names Debian's Open MPI hides; see there)."""
    src, d = oromio
    c = src / (name + ".c")
    if not c.exists():
        pytest.fail("%s.c is missing from %s" % (name, src), pytrace=False)
    return compile_c(ompi.mpicc, [c], d / name, ompi.env(),
                     ["-I" + str(src), "-include", str(HERE / "mpi1_compat.h")])


def _argv(style, fname):
    return {"fname": ["-fname", fname], "plain": [fname], "agg1": ["-h", "-f", fname]}[style]


@pytest.mark.parametrize("name,np,style", ROMIO, ids=[t[0] for t in ROMIO])
def test_romio(ompi, oromio, cluster, uniq, tmp_path, name, np, style):
    """The program on galley: and on a local file: galley: passes wherever
    the local file passes."""
    exe = build_romio(ompi, oromio, name)
    env = ompi.env(cluster.cluster_file)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    cp = ompi.run(np, [exe] + _argv(style, "galley:%s/%s" % (uniq, name)), env,
                  600, cwd=cwd)
    cluster.check_alive()
    if no_errors(cp):
        return
    if name in XFAIL:
        pytest.xfail(XFAIL[name])
    local = ompi.run(np, [exe] + _argv(style, str(tmp_path / name)), env, 600,
                     cwd=cwd)
    assert not no_errors(local), "passes on a local file, fails on galley:\n" + describe(cp)
    pytest.xfail("fails on a local file too (OMPIO's own):\n" + describe(local)[-1500:])


# ---- cross-reads: Open MPI <-> our MPICH <-> galley get ---------------------

@pytest.fixture(scope="session")
def mprogs(mpich, tmp_path_factory):
    """identity.c built with our MPICH's mpicc."""
    d = out_dir(tmp_path_factory, "bin")
    return {"identity": compile_c(mpich.mpicc, [SRC / "identity.c", SRC / "mt.c"],
                                  d / "identity", mpich.env(), ["-Wall", "-Wextra"])}


@pytest.mark.parametrize("writer,reader", [("openmpi", "mpich"), ("mpich", "openmpi")])
def test_cross_read(ompi, mpich, oprogs, mprogs, cluster, uniq, tmp_path, writer, reader):
    """One MPI writes (collective strided and independent writes); `galley
    get` returns exactly those bytes and the other MPI reads them back (a
    strided view, collective, and plain reads)."""
    impl = {"openmpi": (ompi, oprogs["identity"]), "mpich": (mpich, mprogs["identity"])}
    expect, got, name = tmp_path / "expect", tmp_path / "got", "galley:%s/x" % uniq
    w, wprog = impl[writer]
    cp = w.run(4, [wprog, "-fname", name, "-mode", "write", "-size", "1000003",
                   "-expect", expect], w.env(cluster.cluster_file), 600)
    assert_no_errors(cp)
    g = cluster.galley("get", name[len("galley:"):], got)
    assert g.returncode == 0, g.stdout + g.stderr
    assert filecmp.cmp(got, expect, shallow=False), "galley get differs from what was written"
    r, rprog = impl[reader]
    cp = r.run(3, [rprog, "-fname", name, "-mode", "read", "-expect", expect],
               r.env(cluster.cluster_file), 600)
    assert_no_errors(cp)


def test_galley_put_read(ompi, oprogs, cluster, uniq, tmp_path):
    """A file put with `galley put` (3 subfiles, 3000-byte unit) reads back
    through Open MPI."""
    local = tmp_path / "data"
    local.write_bytes(os.urandom(777777))
    p = cluster.galley("put", local, "%s/put" % uniq, "-n", "3", "-u", "3000")
    assert p.returncode == 0, p.stdout + p.stderr
    cp = ompi.run(3, [oprogs["identity"], "-fname", "galley:%s/put" % uniq, "-mode", "read",
                      "-expect", local], ompi.env(cluster.cluster_file), 600)
    assert_no_errors(cp)


@pytest.mark.parametrize("nprocs,hints,factor,unit,fork,servers,replicas", [
    (3, [], 4, 65536, "data", None, 1),
    (3, ["striping_factor=3", "striping_unit=4096", "galley_fork=alt"], 3, 4096, "alt",
     None, 1),
    (3, ["galley_servers=3,1", "striping_unit=1000"], 2, 1000, "data", [3, 1], 1),
    (3, ["striping_factor=abc", "striping_unit=-5", "galley_replicas=7"], 4, 65536, "data",
     None, 1),
    (3, ["striping_factor=2", "galley_replicas=2"], 2, 65536, "data", None, 2),
    (1, [], 1, 65536, "data", None, 1),
    (1, ["striping_factor=3"], 3, 65536, "data", None, 1),
    (1, ["galley_replicas=2"], 4, 65536, "data", None, 2),
], ids=["default", "3x4096-alt", "servers31", "bad-values", "replicas2", "one-default",
        "one-factor3", "one-replicas2"])
def test_layout_hints(ompi, cluster, uniq, tmp_path, nprocs, hints, factor, unit, fork,
                      servers, replicas):
    """The hints choose a new file's layout (values that do not parse are
    ignored); MPI_File_get_info reports the layout in force on every rank,
    also after a reopen with other hints, and `galley stat` agrees.  A
    file that one process creates (file per process) gets one subfile
    unless a hint says otherwise, as under the ROMIO driver (one choice in
    galley_mpi_common.h); a replicated one keeps every server."""
    exe = compile_c(ompi.mpicc, [HERE / "src" / "layout_info.c"], tmp_path / "layout_info",
                    ompi.env(), ["-Wall", "-Wextra"])
    name = "%s/h" % uniq
    cp = ompi.run(nprocs, [exe, "galley:" + name] + hints, ompi.env(cluster.cluster_file),
                  300)
    assert cp.returncode == 0, describe(cp)
    want = "INFO striping_factor=%d striping_unit=%d galley_fork=%s galley_replicas=%d" % (
        factor, unit, fork, replicas)
    assert cp.stdout.split("\n")[:2] == [want, want], describe(cp)
    st = cluster.galley("stat", name)
    assert st.returncode == 0, st.stdout + st.stderr
    assert re.search(r"^subfiles:\s+%d$" % factor, st.stdout, re.M), st.stdout
    assert "unit %d, fork %s" % (unit, fork) in st.stdout, st.stdout
    assert "size:      100000 bytes" in st.stdout, st.stdout
    if replicas > 1:
        assert "copies:    %d per subfile" % replicas in st.stdout, st.stdout
    else:
        assert "copies:" not in st.stdout, st.stdout
    if servers:
        got = [int(x) for x in re.findall(r"^subfile \d+: server (\d+)", st.stdout, re.M)]
        assert got == servers, st.stdout


# ---- bad input ---------------------------------------------------------------

def test_unreachable_servers(ompi, oprogs, tmp_path):
    """Servers that are not there: open/delete fail with MPI_ERR_IO within
    the Galley timeout, nothing hangs."""
    socks = [socket.socket() for _ in range(4)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    cf = tmp_path / "cluster"
    cf.write_text("".join("127.0.0.1:%d\n" % p for p in ports))
    cp = ompi.run(2, [oprogs["errors"], "-fname", "galley:/nowhere/x", "-unreachable"],
                  ompi.env(cf, {"GALLEY_TIMEOUT": "3"}), 300)
    assert_no_errors(cp)


def test_servers_die_while_open(ompi, tmp_path):
    """The servers of an open file stop: a non-blocking write fails with
    MPI_ERR_IO, blocking reads and writes return with a short count, close
    returns; nothing hangs (src/dead_servers.c)."""
    exe = compile_c(ompi.mpicc, [HERE / "src" / "dead_servers.c"], tmp_path / "dead_servers",
                    ompi.env(), ["-Wall", "-Wextra"])
    c = Cluster(tmp_path / "cl", n=4).start()
    try:
        stop = "%s %s stop --dir %s >/dev/null 2>&1" % (
            shlex.quote(sys.executable), shlex.quote(str(gt.CLUSTER_SCRIPT)),
            shlex.quote(str(c.dir)))
        cp = ompi.run(4, [exe, "galley:/dead/x", stop],
                      ompi.env(c.cluster_file, {"GALLEY_TIMEOUT": "3"}), 300)
        assert_no_errors(cp)
    finally:
        c.expect_dead = set(range(c.n))
        gt._teardown(c)


def test_lost_write_is_sticky(ompi, tmp_path):
    """A blocking write to a killed server, whose error OMPIO drops, is kept
    on the handle: once the server is back, rank 1's next non-blocking
    write and MPI_File_sync on every rank return an error; rank 1's close
    (whose result Open MPI drops) says so on stderr (src/sticky.c)."""
    exe = compile_c(ompi.mpicc, [HERE / "src" / "sticky.c"], tmp_path / "sticky",
                    ompi.env(), ["-Wall", "-Wextra"])
    c = Cluster(tmp_path / "cl", n=4).start()
    try:
        ctl = "%s %s %%s --dir %s %%s >/dev/null 2>&1" % (
            shlex.quote(sys.executable), shlex.quote(str(gt.CLUSTER_SCRIPT)),
            shlex.quote(str(c.dir)))
        env = ompi.env(c.cluster_file, {"GALLEY_TIMEOUT": "3",
                                        "GALLEYD": gt.galleyd_path()})
        cp = ompi.run(4, [exe, "galley:/sticky/x", ctl % ("kill-server", "1"),
                          ctl % ("restart-server", "1")], env, 300)
        assert_no_errors(cp)
        assert len(re.findall(r"fs_galley: galley:/sticky/x closed after a lost transfer",
                              cp.stderr)) == 1, describe(cp)
        c.check_alive()
    finally:
        gt._teardown(c)


# ---- Open MPI's own POSIX path under `galley exec` -------------------------------

def test_posix_path_under_galley_exec(ompi, cluster, uniq, tmp_path):
    """Unmodified Open MPI on a local path mapped by `galley exec -m`: OMPIO's
    own POSIX path (ufs fs, posix fbtl) writes a memory-noncontiguous
    buffer with one pwritev per rank, which the preload carries to Galley:
    every rank reads back every int (src/vector_write.c), `galley get`
    copies out exactly those bytes, and nothing is left in the local
    directory."""
    exe = compile_c(ompi.mpicc, [HERE / "src" / "vector_write.c"], tmp_path / "vector_write",
                    ompi.env(), ["-Wall", "-Wextra"])
    d = tmp_path / "pw"
    d.mkdir()
    cmd = [gt.galley_path(), "-c", str(cluster.cluster_file), "exec", "-m",
           "%s=%s" % (d, uniq), "--", str(ompi.mpiexec), "-n", "2", str(exe), str(d / "f")]
    cp = gt.run(cmd, env=ompi.env(cluster.cluster_file), timeout=300)
    assert_no_errors(cp)
    got = tmp_path / "got"
    g = cluster.galley("get", uniq + "/f", got)
    want = b"".join(struct.pack("<512i", *(r * 1000000 + i for i in range(512)))
                    for r in range(2))
    assert g.returncode == 0 and got.read_bytes() == want, g.stderr
    assert list(d.iterdir()) == []


# ---- HDF5 (Debian's libhdf5-openmpi-dev) ----------------------------------------

H5_INC = "/usr/include/hdf5/openmpi"
H5_LIB = "/usr/lib/x86_64-linux-gnu/hdf5/openmpi"


@pytest.fixture(scope="session")
def h5par_check(ompi, tmp_path_factory):
    """hdf5-tests' h5par_check built with Open MPI's mpicc against Debian's
    HDF5 for Open MPI."""
    if not Path(H5_INC, "hdf5.h").exists():
        require_or_skip("libhdf5-openmpi-dev is not installed")
    return compile_c(ompi.mpicc, [HERE.parent / "hdf5-tests" / "src" / "h5par_check.c"],
                     out_dir(tmp_path_factory, "openmpi-bin") / "h5par_check", ompi.env(),
                     ["-I" + H5_INC, "-L" + H5_LIB, "-lhdf5", "-Wl,-rpath," + H5_LIB])


def assert_h5_passed(cp):
    assert cp.returncode == 0 and re.search(r"^PASS \d+ checks$", cp.stdout, re.M), \
        describe(cp)


@pytest.mark.parametrize("where", ["galley", "local"])
def test_h5par_check_rw(ompi, h5par_check, cluster, uniq, tmp_path, where):
    """Every dataset shape of h5par_check (collective and independent,
    contiguous, strided, chunked, compressed) written, closed, reopened and
    verified by 4 ranks in one run."""
    name = "galley:%s/rw.h5" % uniq if where == "galley" else str(tmp_path / "rw.h5")
    assert_h5_passed(ompi.run(4, [h5par_check, "rw", name], ompi.env(cluster.cluster_file),
                              600))


def test_h5par_check_reopen(ompi, h5par_check, cluster, uniq):
    """Written by 4 ranks on a 3-subfile file with a 4 KB stripe unit, read
    back by a new job of 3 ranks (another decomposition)."""
    name = "galley:%s/re.h5" % uniq
    hints = ["-i", "striping_factor=3", "-i", "striping_unit=4096"]
    env = ompi.env(cluster.cluster_file)
    assert_h5_passed(ompi.run(4, [h5par_check, "write", name] + hints, env, 600))
    assert_h5_passed(ompi.run(3, [h5par_check, "read", name] + hints, env, 600))
    st = cluster.galley("stat", name[len("galley:"):])
    assert re.search(r"^subfiles:\s+3$", st.stdout, re.M), st.stdout


# ---- checksummed files ---------------------------------------------------------

def test_checksummed_files(ompi, oprogs, h5par_check, cluster, uniq, tmp_path):
    """galley_checksum=crc32c through Open MPI: h5par_check writes with 4
    ranks and reads back with 3, identity's collective and independent
    writes are what `galley get` copies out; both files are checksummed
    and scrub clean."""
    env = ompi.env(cluster.cluster_file)
    h5 = "%s/cs.h5" % uniq
    hints = ["-i", "galley_checksum=crc32c"]
    assert_h5_passed(ompi.run(4, [h5par_check, "write", "galley:" + h5] + hints, env, 600))
    assert_h5_passed(ompi.run(3, [h5par_check, "read", "galley:" + h5] + hints, env, 600))
    ident = "%s/ident" % uniq
    expect, got = tmp_path / "expect", tmp_path / "got"
    cp = ompi.run(4, [oprogs["identity"], "-fname", "galley:" + ident, "-mode", "write",
                      "-size", "1000003", "-expect", expect,
                      "-hint", "galley_checksum=crc32c"], env, 600)
    assert_no_errors(cp)
    g = cluster.galley("get", ident, got)
    assert g.returncode == 0 and got.read_bytes() == expect.read_bytes(), g.stderr
    for name in (h5, ident):
        st = cluster.galley("stat", name)
        assert "checksum:  crc32c" in st.stdout, st.stdout + st.stderr
        sc = cluster.galley("scrub", name)
        assert sc.returncode == 0 and " 0 failed" in sc.stdout, sc.stdout + sc.stderr
