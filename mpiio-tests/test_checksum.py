"""Checksummed files through MPI-IO: the hint galley_checksum=crc32c at
create makes the file checksummed (servers/csum.c); our MPI-IO programs
run unchanged on such files, what they write is what `galley get` copies
out and `galley scrub` finds clean, and a chunk damaged on a server's
disk fails the MPI read (MPI_ERR_IO) instead of returning its bytes.
"""

import filecmp
import os
import re
from pathlib import Path

import pytest

from mpiio_support import Cluster, assert_no_errors, describe

CSUM = ["-hint", "galley_checksum=crc32c"]
SKIP_KNOWN = ["-skip", "lb_file,neg_lb_mem,sparse_ranks"]

# (id, program, ranks, extra arguments)
RUNS = [
    ("contig-np4", "contig", 4, []),
    ("views-np2", "views", 2, []),
    ("noncontig-np4", "noncontig", 4, SKIP_KNOWN),
    ("nonblock-np2", "nonblock", 2, SKIP_KNOWN),
    ("coll-server-np4", "coll", 4, ["-hint", "galley_cb=server"] + SKIP_KNOWN),
    ("coll-two_phase-np4", "coll", 4,
     ["-hint", "galley_cb=two_phase", "-hint", "cb_buffer_size=4096",
      "-hint", "cb_nodes=2"] + SKIP_KNOWN),
    ("sharedfp-np2", "sharedfp", 2, []),
    ("atomicity-np2", "atomicity", 2, []),
]


@pytest.mark.parametrize("prog,n,args", [r[1:] for r in RUNS],
                         ids=[r[0] for r in RUNS])
def test_program_checksummed(mpi, progs, cluster, uniq, prog, n, args):
    cp = mpi.run(n, [progs[prog], "-fname", "galley:%s/%s" % (uniq, prog)] +
                 CSUM + args, mpi.env(cluster.cluster_file), 900)
    assert_no_errors(cp)
    cluster.check_alive()


@pytest.mark.parametrize("layout", [[], ["-hint", "striping_unit=1000",
                                         "-hint", "striping_factor=3"]],
                         ids=["default", "f3u1000"])
def test_identity_write_checksummed(mpi, progs, cluster, uniq, tmp_path,
                                    layout):
    """Collective strided and independent writes of a checksummed file:
    byte-identical to what `galley get` copies out, and scrub is clean."""
    expect = tmp_path / "expect"
    got = tmp_path / "got"
    name = "%s/ident" % uniq
    cp = mpi.run(4, [progs["identity"], "-fname", "galley:" + name,
                     "-mode", "write", "-size", "1000003", "-expect", expect] +
                 CSUM + layout, mpi.env(cluster.cluster_file), 600)
    assert_no_errors(cp)
    st = cluster.galley("stat", name)
    assert "checksum:  crc32c" in st.stdout, describe(st)
    g = cluster.galley("get", name, got)
    assert g.returncode == 0, describe(g)
    assert filecmp.cmp(got, expect, shallow=False)
    s = cluster.galley("scrub", name)
    assert s.returncode == 0 and " 0 failed" in s.stdout, describe(s)
    # and back through MPI-IO (reads check the CRCs on both ends)
    cp = mpi.run(3, [progs["identity"], "-fname", "galley:" + name,
                     "-mode", "read", "-expect", expect],
                 mpi.env(cluster.cluster_file), 600)
    assert_no_errors(cp)


def test_disk_flip_fails_mpi_read(mpi, progs, tmp_path):
    """A byte flipped in a server's data file (server restarted, nothing
    cached): the MPI read fails with MPI_ERR_IO and the checksum message;
    a file without the damage still reads."""
    c = Cluster(tmp_path / "cluster", n=2).start()
    try:
        local = tmp_path / "data"
        local.write_bytes(os.urandom(400000))
        for name in ("/cs/bad", "/cs/good"):
            p = c.galley("put", "-C", local, name, "-n", "2", "-u", "65536")
            assert p.returncode == 0, describe(p)
        c.kill(0)
        dats = sorted((Path(c.dir) / "server0" / "sub").glob("*/*.dat"))
        assert len(dats) == 2
        # the first put's subfile on server 0 holds the lower header id
        bad = min(dats, key=lambda p: int(p.parent.name))
        with open(bad, "r+b") as f:
            f.seek(70000)
            b = f.read(1)
            f.seek(70000)
            f.write(bytes([b[0] ^ 0x80]))
        c.restart(0)
        cp = mpi.run(2, [progs["identity"], "-fname", "galley:/cs/bad",
                         "-mode", "read", "-expect", local],
                     mpi.env(c.cluster_file), 300)
        assert cp.returncode != 0 or "No Errors" not in cp.stdout, describe(cp)
        assert re.search(r"failed its checksum", cp.stdout + cp.stderr), \
            describe(cp)
        assert "failed its checksum" in c.log(0)
        cp = mpi.run(2, [progs["identity"], "-fname", "galley:/cs/good",
                         "-mode", "read", "-expect", local],
                     mpi.env(c.cluster_file), 300)
        assert_no_errors(cp)
    finally:
        c.stop()
