"""galley-stage (tools/galley-stage, tools/galley_stage.c): stage-in and
stage-out between a local tree and a real 4-server cluster, run with the
local launcher (the srun launcher builds the same worker command as one
job step).

What is checked: trees and manifests copied both ways byte for byte; the
per-file CRC32C reported equals the file's; an unreadable source, a
destination changed behind the journal and bad names fail naming the
file; a stage-out stopped by SIGTERM resumes copying only what is
missing, a stopped stage-in leaves no partial copy; an array-library checkpoint is staged out as its newest
complete copy only, staged back in, and the heat solver restarted from it
ends bit-identical to an uninterrupted run.  The srun launcher runs on a
real Slurm cluster in slurm-tests/.
"""

import os
import re
import signal
import subprocess
import sys
import stat
import time
import uuid
from pathlib import Path

import pytest

from conftest import REPO, BUILD, base_env, describe, find_program, run

STAGE = REPO / "tools" / "galley-stage"


def crc32c(data):
    """Bitwise CRC32C (small inputs only)."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def stage_env(cluster):
    env = dict(cluster.env)
    env["GALLEY_STAGE_WORKER"] = find_program("tools/galley-stage-worker",
                                              "galley-stage-worker")
    env.pop("SLURM_JOB_ID", None)  # the local launcher, whatever runs us
    return env


def stage(cluster, *args, check=None):
    cp = run([sys.executable, STAGE, "-c", cluster.cluster_file] +
             [str(a) for a in args], env=stage_env(cluster))
    if check is not None:
        assert cp.returncode == check, describe(cp)
    return cp


def ok_lines(cp):
    """{destination: (crc, size)} of the per-file lines."""
    out = {}
    for m in re.finditer(r"^ok  ([0-9a-f]{8})\s+(\d+)  (\S+) -> (\S+)",
                         cp.stdout, re.M):
        out[m.group(4)] = (int(m.group(1), 16), int(m.group(2)))
    return out


def make_tree(root):
    """Empty, small, odd-sized, multi-MiB files in nested directories."""
    files = {
        "empty": b"",
        "small.txt": b"hello, galley\n",
        "a/odd.bin": os.urandom(1_000_003),
        "a/b/three.bin": os.urandom(3 << 20),
        "a/b/c/nine.bin": os.urandom(9 * (1 << 20) + 17),
        "z/last": os.urandom(65536),
    }
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return files


def same_tree(a, b, files):
    for rel, data in files.items():
        assert (b / rel).read_bytes() == data, "%s differs" % rel
    got = sorted(str(p.relative_to(b)) for p in b.rglob("*") if p.is_file())
    assert got == sorted(files), got


def test_tree_in_and_out(cluster, uniq, tmp_path):
    src, back = tmp_path / "src", tmp_path / "back"
    files = make_tree(src)
    (src / "a" / "odd.bin").chmod(0o751)  # permission bits go both ways
    t = 1234567890123456789  # and modification times
    os.utime(src / "a" / "odd.bin", ns=(t, t))
    cp = stage(cluster, "in", "-j", 3, "--chunk", "1M", src,
               "galley:/%s" % uniq, check=0)
    lines = ok_lines(cp)
    assert len(lines) == len(files), cp.stdout
    for rel, data in files.items():
        crc, size = lines["galley:/%s/%s" % (uniq, rel)]
        assert size == len(data)
        if size < 70000:
            assert crc == crc32c(data), rel
    # the stored bytes, read by another client than the stager's
    got = cluster.galley("get", "/%s/a/odd.bin" % uniq, tmp_path / "odd",
                         check=True)
    assert (tmp_path / "odd").read_bytes() == files["a/odd.bin"], got
    cp = stage(cluster, "out", "-j", 2, "--chunk", "256K",
               "galley:/%s" % uniq, back, check=0)
    same_tree(src, back, files)
    out = ok_lines(cp)
    for rel in files:  # the same file CRCs both ways, however chunked
        assert out[str(back / rel)] == lines["galley:/%s/%s" % (uniq, rel)]
    assert not Path(str(back) + ".galley-stage").exists()
    st = cluster.galley("stat", "/%s/a/odd.bin" % uniq, check=True).stdout
    assert re.search(r"^mode:\s+0751$", st, re.M), st
    assert re.search(r"^modified:\s+2009-02-13 23:31:30.123456789 UTC$", st,
                     re.M), st
    assert (back / "a" / "odd.bin").stat().st_mtime_ns == t
    for rel in files:
        assert (back / rel).stat().st_mtime_ns == \
            (src / rel).stat().st_mtime_ns, rel
    m = os.umask(0)
    os.umask(m)
    assert stat.S_IMODE((back / "a" / "odd.bin").stat().st_mode) == \
        0o751 & ~m
    # staged in again over itself: replaced, as cp does (a shorter file)
    (src / "a" / "odd.bin").write_bytes(b"shorter now")
    stage(cluster, "in", src / "a" / "odd.bin",
          "galley:/%s/a/odd.bin" % uniq, check=0)
    cluster.galley("get", "/%s/a/odd.bin" % uniq, tmp_path / "odd2",
                   check=True)
    assert (tmp_path / "odd2").read_bytes() == b"shorter now"


def test_manifest(cluster, uniq, tmp_path):
    src = tmp_path / "src"
    files = make_tree(src)
    man = tmp_path / "in.manifest"
    man.write_text("# stage-in of a file and a directory\n"
                   "%s galley:/%s/one\n\n"
                   "%s  /%s/tree   # the Galley side without galley:\n"
                   % (src / "small.txt", uniq, src / "a", uniq))
    cp = stage(cluster, "in", "--manifest", man, check=0)
    assert len(ok_lines(cp)) == 4, cp.stdout
    out = tmp_path / "out dir"
    man2 = tmp_path / "out.manifest"
    man2.write_text("galley:/%s/one '%s/one'\ngalley:/%s/tree \"%s/t\"\n"
                    % (uniq, out, uniq, out))
    stage(cluster, "out", "--manifest", man2, check=0)
    assert (out / "one").read_bytes() == files["small.txt"]
    for rel in ("odd.bin", "b/three.bin", "b/c/nine.bin"):
        assert (out / "t" / rel).read_bytes() == files["a/" + rel]
    bad = tmp_path / "bad.manifest"
    bad.write_text("only-one-word\n")
    cp = stage(cluster, "in", "--manifest", bad, check=1)
    assert "bad.manifest:1" in cp.stderr


def test_unreadable_source_is_named(cluster, uniq, tmp_path):
    src = tmp_path / "src"
    make_tree(src)
    os.symlink(tmp_path / "nowhere", src / "a" / "dangling")
    cp = stage(cluster, "in", src, "galley:/%s" % uniq, check=1)
    assert "a/dangling" in cp.stderr and "No such file" in cp.stderr, \
        describe(cp)
    os.unlink(src / "a" / "dangling")
    os.mkfifo(src / "a" / "fifo")
    cp = stage(cluster, "in", src, "galley:/%s" % uniq, check=1)
    assert "a/fifo" in cp.stderr and "not a regular file" in cp.stderr
    os.unlink(src / "a" / "fifo")
    if os.geteuid() != 0:  # root reads anything
        (src / "small.txt").chmod(0)
        cp = stage(cluster, "in", src, "galley:/%s" % uniq, check=1)
        assert "small.txt" in cp.stderr


def test_bad_input(cluster, uniq, tmp_path):
    cp = stage(cluster, "out", "galley:/%s/none" % uniq, tmp_path / "x",
               check=1)
    assert "no Galley file" in cp.stderr and "/%s/none" % uniq in cp.stderr
    cp = stage(cluster, "in", tmp_path / "missing", "galley:/%s" % uniq,
               check=1)
    assert "missing" in cp.stderr and "does not exist" in cp.stderr
    cp = stage(cluster, "in", tmp_path, "relative/name", check=1)
    assert "not a Galley name" in cp.stderr
    stage(cluster, "sideways", "a", "b", check=2)
    stage(cluster, "in", "only-one", check=2)
    cp = stage(cluster, "in", "--manifest", tmp_path / "nope", check=1)
    assert "cannot read manifest" in cp.stderr
    # a name Galley refuses (too long): said, and nothing else left made
    src = tmp_path / "src"
    src.mkdir()
    (src / "fine").write_bytes(b"x")
    (src / ("n" * 250)).write_bytes(b"y")
    cp = stage(cluster, "in", src, "galley:/%s/long" % uniq, check=1)
    assert "n" * 250 in cp.stderr, describe(cp)
    assert cluster.galley("ls", "/" + uniq).stdout.strip() == ""
    (tmp_path / "d").mkdir()
    os.symlink(src, tmp_path / "d" / "link")
    cp = stage(cluster, "in", tmp_path / "d", "galley:/%s/d" % uniq, check=1)
    assert "d/link" in cp.stderr and "symbolic link" in cp.stderr
    assert not (tmp_path / "x").exists()


def journal_lines(jdir):
    n = 0
    for p in Path(jdir).glob("run.*.*"):
        n += p.read_bytes().count(b"\n")
    return n


def stop_mid_copy(cluster, name, dest, chunk="256K"):
    """Start a stage-out, SIGTERM it once some chunks are journaled; the
    CompletedProcess-like (returncode, stdout, stderr)."""
    jdir = str(dest) + ".galley-stage"
    proc = subprocess.Popen(
        [sys.executable, str(STAGE), "-c", str(cluster.cluster_file), "out",
         "-j", "2", "--chunk", chunk, "galley:" + name, str(dest)],
        env=stage_env(cluster), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    end = time.monotonic() + 60
    while time.monotonic() < end and proc.poll() is None:
        if os.path.isdir(jdir) and journal_lines(jdir) >= 4:
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.fixture(scope="module")
def big_file(cluster, tmp_path_factory):
    """96 MiB in Galley (default layout), shared by the stop tests."""
    data = os.urandom(96 << 20)
    local = tmp_path_factory.mktemp("stage-big") / "big.src"
    local.write_bytes(data)
    name = "/t/stage-big-%s" % uuid.uuid4().hex[:8]
    cluster.galley("put", local, name, check=True)
    local.unlink()
    return name, data


def test_stage_in_stopped_leaves_no_partial_copy(cluster, uniq, tmp_path):
    """A stage-in does not resume: a SIGTERM stops it (exit 3) and the
    files it had not finished are removed from Galley."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "big").write_bytes(os.urandom(64 << 20))
    work = tmp_path / "work"
    proc = subprocess.Popen(
        [sys.executable, str(STAGE), "-c", str(cluster.cluster_file), "in",
         "-j", "2", "--chunk", "256K", "--work-dir", str(work), str(src),
         "galley:/%s" % uniq], env=stage_env(cluster),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    end = time.monotonic() + 60
    while time.monotonic() < end and proc.poll() is None:
        if work.is_dir() and journal_lines(work) >= 2:
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, "exit %s\n%s%s" % (proc.returncode, out, err)
    assert "removed the 1 partial copy" in err, err
    assert cluster.galley("ls", "/" + uniq).stdout.strip() == ""


def copied_bytes(cp):
    m = re.search(r"(\S+ \S+) copied in", cp.stdout)
    assert m, cp.stdout
    num, unit = m.group(1).split()
    return float(num) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20,
                         "GiB": 1 << 30}[unit]


def test_stop_and_resume(cluster, big_file, tmp_path):
    name, data = big_file
    dest = tmp_path / "big.out"
    cp = stop_mid_copy(cluster, name, dest)
    assert cp.returncode == 3, describe(cp)
    assert "run the same command again" in cp.stderr
    first = copied_bytes(cp)
    assert 0 < first < len(data), cp.stdout
    jdir = Path(str(dest) + ".galley-stage")
    assert jdir.is_dir()
    cp = stage(cluster, "out", "-j", 2, "--chunk", "256K", "galley:" + name,
               dest, check=0)
    again = copied_bytes(cp)
    assert again < len(data) and abs(first + again - len(data)) < 1 << 20, \
        cp.stdout
    assert re.search(r"[1-9][\d.]* \S+ verified from the journal", cp.stdout)
    assert dest.read_bytes() == data
    assert not jdir.exists()


def test_changed_destination_is_caught_on_resume(cluster, big_file,
                                                 tmp_path):
    name, data = big_file
    dest = tmp_path / "big.out"
    cp = stop_mid_copy(cluster, name, dest)
    assert cp.returncode == 3, describe(cp)
    # a chunk the journal holds as copied: damage it behind its back
    jdir = Path(str(dest) + ".galley-stage")
    line = next(l for p in sorted(jdir.glob("run.0.*"))
                for l in p.read_text().splitlines() if l.startswith("copied"))
    off = int(line.split("\t")[2])
    with open(dest, "r+b") as f:
        f.seek(off + 100)
        f.write(bytes([data[off + 100] ^ 0xFF]))
    cp = stage(cluster, "out", "-j", 2, "--chunk", "256K", "galley:" + name,
               dest, check=1)
    assert "FAILED galley:%s" % name in cp.stderr
    assert "CRC32C mismatch at offset %d" % off in cp.stderr, describe(cp)
    # the journal kept: the next run copies that chunk again
    cp = stage(cluster, "out", "-j", 2, "--chunk", "256K", "galley:" + name,
               dest, check=0)
    assert 0 < copied_bytes(cp) <= 256 << 10, cp.stdout
    assert dest.read_bytes() == data


# ------------------------------------------------- array checkpoints ---

def mpich():
    try:
        cp = subprocess.run([str(REPO / "mpich" / "build-mpich.sh"),
                             "--print-prefix"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, timeout=60)
        p = Path(cp.stdout.strip())
    except (OSError, subprocess.TimeoutExpired):
        return None
    heat = BUILD / "arrays" / "heat"
    if cp.returncode == 0 and (p / "bin" / "mpiexec").is_file() and \
            heat.is_file():
        return p
    return None


HEAT = ["-n", "64", "--steps", "30", "--ckpt-every", "10", "--ts-every", "10"]


def heat(cluster, mp, n, path, *extra, env=None):
    e = dict(cluster.env)
    prefix = Path(os.environ.get("GALLEY_PREFIX", REPO / "_prefix"))
    e["LD_LIBRARY_PATH"] = "%s:%s:%s" % (prefix / "lib", mp / "lib",
                                         e.get("LD_LIBRARY_PATH", ""))
    e.pop("GALLEY_ARRAY_CRASH", None)
    e.update(env or {})
    return run([mp / "bin" / "mpiexec", "-n", n, BUILD / "arrays" / "heat",
                "--path", path] + HEAT + list(extra), env=e, timeout=300)


def test_checkpoint_newest_copy_out_and_restart(cluster, uniq, tmp_path):
    mp = mpich()
    if mp is None:
        if os.environ.get("GALLEY_REQUIRE_MPI"):
            pytest.fail("GALLEY_REQUIRE_MPI is set but our MPICH or "
                        "arrays/heat is not built")
        pytest.skip("our MPICH and arrays/heat are not built")
    ref = heat(cluster, mp, 2, "galley:/%s/ref" % uniq, "--dump",
               tmp_path / "ref.raw")
    assert ref.returncode == 0, describe(ref)
    # a crash inside the 3rd checkpoint (the last, step 30): copy 0 is torn (data
    # written, record "pending"), copy 1 (step 20) the newest complete
    job = "/%s/job" % uniq
    cp = heat(cluster, mp, 2, "galley:" + job,
              env={"GALLEY_ARRAY_CRASH": "copynum:3"})
    assert cp.returncode != 0 and "checkpoint written at step 20" in cp.stdout
    out = tmp_path / "staged"
    man = tmp_path / "m"
    man.write_text("galley:%s.ckpt %s/\ngalley:%s.ts %s/\n"
                   % (job, out, job, out))
    cp = stage(cluster, "out", "--manifest", man, check=0)
    names = sorted(p.name for p in out.iterdir())
    assert names == ["job.ckpt.K.1", "job.ckpt.T.1", "job.ckpt.copynum",
                     "job.ckpt.schema", "job.ts.T", "job.ts.schema"], names
    rec = (out / "job.ckpt.copynum").read_bytes()
    assert rec[:128] == bytes(128) and rec[128:].startswith(b"copynum 1 seq")
    # gone from Galley, staged back in, restarted on 3 processes (the
    # schema's layout kept: heat's 4 disk chunks, one slot a subfile)
    for line in cluster.galley("ls", job, check=True).stdout.split():
        cluster.galley("rm", line, check=True)
    assert cluster.galley("ls", job).stdout.strip() == ""
    stage(cluster, "in", out, "galley:/%s" % uniq, check=0)
    st = cluster.galley("stat", job + ".ckpt.T.1", check=True).stdout
    assert "unit 8192, fork data0_1" in st and "subfiles:  4" in st, st
    cp = heat(cluster, mp, 3, "galley:" + job, "--restart", "--dump",
              tmp_path / "restart.raw")
    assert cp.returncode == 0, describe(cp)
    assert "restart found at step 20 (copy 1)" in cp.stdout, cp.stdout
    assert (tmp_path / "restart.raw").read_bytes() == \
        (tmp_path / "ref.raw").read_bytes()
