"""Threads of one program, and processes forked without exec, on one galley
file through `galley exec`: fio's jobs as threads of one process
(--thread) or as its forked children (fio's default), 4 KiB random reads
and writes with verification on a shared file, each at its own offset.
The threads open, move and close the forks of one file at once, sharing
their direct grants (libgalley/transport_direct.c); the children each use
connections and grants of their own (libgalley/lifecycle.c).  Each run
must exit 0 with no verify error, and `galley fsck` must find nothing.
The long version of the threaded job, run after run:
posix-tests/helpers/fio-stress.sh.

Environment: GALLEY_BUILD (build tree, default <repo>/_build).
"""

import re
import shutil

import pytest

from conftest import gt

describe = gt.describe

pytestmark = pytest.mark.skipif(
    shutil.which("fio") is None,
    reason="no fio (apt-get install fio; ./quickstart build installs it)")


def fio_job(cluster, gdir, size, jobs, threads=True):
    args = [gt.galley_path(), "-c", str(cluster.cluster_file), "exec",
            "-m", "/gfio=" + gdir, "--",
            "fio", "--name=x", "--rw=randrw", "--bs=4k", "--size=" + size,
            "--numjobs=%d" % jobs, "--offset_increment=" + size,
            "--pre_read=1", "--filename=/gfio/x", "--ioengine=psync",
            "--invalidate=0", "--verify=crc32c",
            "--do_verify=1", "--fallocate=none", "--verify_state_save=0"]
    if threads:
        args.append("--thread")
    env = dict(cluster.env, GALLEY_TRANSPORT="direct")
    return gt.run(args, env=env, timeout=120)


@pytest.mark.parametrize("threads", [True, False],
                         ids=["threads", "forked"])
def test_fio_jobs_verify_on_one_file(cluster, uniq, threads):
    """Four fio jobs (threads, or processes fio forks without exec), three
    runs, each on a new file: exit 0, every job err= 0 with its reads
    verified, no verify error, fsck clean, and the file as large as the
    jobs wrote."""
    for i in range(3):
        gdir = "/%s/r%d" % (uniq, i)
        cp = fio_job(cluster, gdir, "8M", 4, threads)
        assert cp.returncode == 0, describe(cp)
        out = cp.stdout + cp.stderr
        assert not re.search(r"verify: bad|bad magic|verify failed", out), \
            describe(cp)
        errs = re.findall(r"\(groupid=\d+, jobs=\d+\): err=\s*(\d+)", out)
        assert errs == ["0"] * 4, describe(cp)
        assert re.search(r"READ: bw=.*io=", out) and \
            re.search(r"WRITE: bw=.*io=", out), describe(cp)
        st = cluster.galley("stat", gdir + "/x", check=True)
        assert re.search(r"^size:\s+%d bytes" % (4 * 8 << 20), st.stdout,
                         re.M), st.stdout
        fs = cluster.galley("fsck")
        assert fs.returncode == 0, describe(fs)
        assert re.search(r"^fsck: 0 orphan\(s\), 0 dangling, 0 mismatch",
                         fs.stdout, re.M), describe(fs)
