"""helpers/t_fsx.c, an fsx-style exerciser: thousands of random operations
on one file (write/pwrite/writev/pwritev/pwritev2, read/readv/pread/preadv/
preadv2, lseek, ftruncate up and down, fallocate, copy_file_range,
sendfile, splice, fsync, reopen), each result checked against an in-memory
model of the file.

It runs on a local file first (the baseline: the checker itself must agree
with the kernel), then under `galley exec` on a Galley file, several seeds
and file sizes (64 KiB stripes over the cluster's servers).  Besides its
own checks, the file as `galley get` reads it afterwards must equal the
model t_fsx writes out (-o).

Environment: GALLEY_BUILD (build tree, default <repo>/_build).
"""

import pytest

from conftest import galley_exec, gt, helper

describe = gt.describe

# (seed, operations, largest file size): sizes from within one stripe to
# several stripes on every server.
CASES = [
    (1, 10000, 256 * 1024),
    (2, 10000, 256 * 1024),
    (3, 10000, 256 * 1024),
    (4, 20000, 8 * 1024),
    (5, 5000, 1024 * 1024),
]


def ids(case):
    return "seed%d-%dops-%dk" % (case[0], case[1], case[2] // 1024)


def fsx_args(case, tmp, model, target):
    seed, ops, maxlen = case
    return [helper("t_fsx"), "-S", seed, "-N", ops, "-l", maxlen, "-T", tmp,
            "-o", model, target]


@pytest.mark.parametrize("case", CASES[:3], ids=ids)
def test_fsx_local(tmp_path, case):
    """The baseline: a local file, no preload."""
    f, model = tmp_path / "f", tmp_path / "model"
    cp = gt.run([str(a) for a in fsx_args(case, tmp_path, model, f)],
                timeout=30)
    assert cp.returncode == 0, describe(cp)
    assert "operations" in cp.stdout, describe(cp)
    assert f.read_bytes() == model.read_bytes()


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_fsx_galley(cluster, uniq, tmp_path, case):
    """A Galley file under `galley exec` (a mapped directory); the temporary
    files of the copy calls stay local."""
    d, local = tmp_path / "g", tmp_path / "local"
    d.mkdir()
    local.mkdir()
    model = local / "model"
    cp = galley_exec(cluster, *fsx_args(case, local, model, d / "f"),
                     mounts=["%s=/%s" % (d, uniq)], timeout=30)
    assert cp.returncode == 0, describe(cp)
    assert "operations" in cp.stdout, describe(cp)
    # the file is on the cluster, not in the mapped local directory
    assert list(d.iterdir()) == []
    got = tmp_path / "got"
    cluster.galley("get", "/%s/f" % uniq, got, check=True)
    assert got.read_bytes() == model.read_bytes()
