"""libgalley-posix.so under `galley exec`: unmodified programs (coreutils,
python, a C program using every interposed call) on galley: names, against
real galleyd servers; missing names, a dead server, and programs that never
name a galley: file.

Environment: GALLEY_BUILD (build tree, default <repo>/_build).
"""

import hashlib
import os
import re
import time

from conftest import galley_exec, gt, helper

describe = gt.describe


def test_every_call(cluster, uniq, tmp_path):
    """t_posix: open/read/write/pread/pwrite/readv/writev/lseek/stat family/
    access/unlink/rename/truncate/fsync/dup*/fcntl, stdio, missing names
    (errno as libc's), threads, fork."""
    cp = galley_exec(cluster, helper("t_posix"), "galley:/" + uniq, tmp_path)
    gt.assert_helper_ok(cp)


def test_coreutils_bytes(cluster, uniq, tmp_path):
    """cp/cat/dd/mv/rm/stat/ls through the interposer move the same bytes as
    the CLI's put/get (the striped layout the MPI-IO driver uses)."""
    data = os.urandom(3 * 1024 * 1024 + 12345)
    src = tmp_path / "src"
    src.write_bytes(data)
    g = "galley:/%s/a.bin" % uniq
    cp = galley_exec(cluster, "cp", src, g)
    assert cp.returncode == 0, describe(cp)
    out = tmp_path / "got"
    cluster.galley("get", g[7:], out, check=True)
    assert out.read_bytes() == data

    cluster.galley("put", src, "/%s/b.bin" % uniq, check=True)
    cp = galley_exec(cluster, "sha256sum", "galley:/%s/b.bin" % uniq)
    assert cp.returncode == 0 and cp.stdout.split()[0] == \
        hashlib.sha256(data).hexdigest(), describe(cp)

    # directories: opendir/readdir, "." and ".." resolved as in a path
    cp = galley_exec(cluster, "ls", "-a", "galley:/" + uniq,
                     "galley:/%s/../%s/." % (uniq, uniq.split("/")[1]))
    assert cp.returncode == 0 and cp.stdout.split("\n\n")[0].split(
        "\n")[1:] == [".", "..", "a.bin", "b.bin"], describe(cp)
    assert cp.stdout.count("a.bin") == 2, describe(cp)
    cp = galley_exec(cluster, "python3", "-c",
                     "import os, sys; print(sorted(os.listdir(sys.argv[1])))",
                     "galley:/" + uniq.split("/")[0])
    assert cp.returncode == 0 and uniq.split("/")[1] in cp.stdout, \
        describe(cp)
    cp = galley_exec(cluster, "python3", "-c",
                     "import os, sys; os.listdir(sys.argv[1])", g)
    assert cp.returncode != 0 and "NotADirectoryError" in cp.stderr, \
        describe(cp)

    cp = galley_exec(cluster, "stat", "-c", "%s %F", g,
                     "galley:/" + uniq)
    assert cp.returncode == 0 and cp.stdout.splitlines() == [
        "%d regular file" % len(data), "0 directory"], describe(cp)
    cp = galley_exec(cluster, "ls", "-l", g)
    assert cp.returncode == 0 and " %d " % len(data) in cp.stdout, \
        describe(cp)

    # dd: overwrite 1000 bytes in the middle without truncating
    cp = galley_exec(cluster, "dd", "if=/dev/zero", "of=" + g, "bs=1000",
                     "count=1", "seek=2000", "conv=notrunc", "status=none")
    assert cp.returncode == 0, describe(cp)
    cluster.galley("get", g[7:], out, check=True)
    want = data[:2000000] + bytes(1000) + data[2001000:]
    assert out.read_bytes() == want

    cp = galley_exec(cluster, "sh", "-c",
                     'mv "$1" "$2" && cat "$2" > "$3" && rm "$2" && '
                     'ls "$2"; echo "ls: $?"',
                     "sh", g, g + ".moved", tmp_path / "moved")
    assert (tmp_path / "moved").read_bytes() == want, describe(cp)
    assert "ls: 2" in cp.stdout and "No such file or directory" in \
        cp.stderr, describe(cp)
    ls = cluster.galley("ls", "/" + uniq, check=True).stdout.split()
    assert ls == ["/%s/b.bin" % uniq], ls


def test_python_and_append(cluster, uniq):
    """Python's io (open/fstat/lseek/read/write) and a shell's >> append."""
    g = "galley:/%s/py.txt" % uniq
    code = ("import sys\n"
            "p = sys.argv[1]\n"
            "open(p, 'w').write('x' * 100000)\n"
            "with open(p, 'a') as f: f.write('tail')\n"
            "s = open(p).read()\n"
            "assert len(s) == 100004 and s.endswith('xtail'), len(s)\n"
            "import os\n"
            "assert os.path.getsize(p) == 100004\n"
            "assert os.path.isfile(p) and not os.path.exists(p + '.no')\n"
            "print('ok')\n")
    cp = galley_exec(cluster, "python3", "-c", code, g)
    assert cp.returncode == 0 and cp.stdout == "ok\n", describe(cp)
    cp = galley_exec(cluster, "sh", "-c", 'echo more >> "$1"; tail -c 10 "$1"',
                     "sh", g)
    assert cp.returncode == 0 and cp.stdout == "xtailmore\n", describe(cp)


def test_no_atexit_needed(cluster, uniq):
    """A program that leaves with _exit (no atexit handlers, no stdio
    flush) loses nothing it wrote with write()."""
    g = "galley:/%s/exit" % uniq
    code = ("import os, sys\n"
            "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)\n"
            "os.write(fd, b'written before _exit')\n"
            "os._exit(0)\n")
    cp = galley_exec(cluster, "python3", "-c", code, g)
    assert cp.returncode == 0, describe(cp)
    cp = cluster.galley("get", g[7:], "-")
    assert cp.stdout == "written before _exit", describe(cp)


def test_missing_name_as_libc(cluster, tmp_path):
    """Tools report a missing galley: name exactly as a missing local one."""
    for tool in (["cat"], ["ls"], ["stat", "-c", "%s"], ["rm"],
                 ["head", "-c", "1"]):
        g = galley_exec(cluster, *tool, "galley:/no/such/file")
        l = galley_exec(cluster, *tool, "/no/such/file")
        assert g.returncode == l.returncode != 0, (describe(g), describe(l))
        # coreutils quotes a name with ':' in it
        assert g.stderr.replace("galley:", "").replace("'", "") == \
            l.stderr.replace("'", ""), (g.stderr, l.stderr)


def test_dead_server_eio(make_cluster, tmp_path):
    """A killed server: reads fail with EIO within the client timeout (-t),
    never a hang; the file's other names are not touched."""
    c = make_cluster(n=2)
    src = tmp_path / "src"
    src.write_bytes(os.urandom(1 << 20))
    cp = galley_exec(c, "cp", src, "galley:/dead/f")
    assert cp.returncode == 0, describe(cp)
    c.kill(1)
    t0 = time.monotonic()
    cp = galley_exec(c, "cat", "galley:/dead/f", opts=["-t", "2"], timeout=60)
    took = time.monotonic() - t0
    assert cp.returncode != 0 and "Input/output error" in cp.stderr, \
        describe(cp)
    assert took < 20, "took %.1f s" % took
    # A process whose server died still runs: python sees OSError(EIO).
    code = ("import errno, sys\n"
            "try:\n"
            "    open(sys.argv[1], 'rb').read()\n"
            "except OSError as e:\n"
            "    print(errno.errorcode[e.errno])\n")
    cp = galley_exec(c, "python3", "-c", code, "galley:/dead/f",
                     opts=["-t", "2"], timeout=60)
    assert cp.stdout == "EIO\n", describe(cp)


def test_no_cluster_is_eio_with_message(tmp_path):
    """No cluster file: a galley: open fails (EIO) with one clear line; local
    files still work in the same program."""
    env = gt.base_env({"GALLEY_CLUSTER": str(tmp_path / "none")})
    cp = gt.run([gt.galley_path(), "exec", "--", "sh", "-c",
                 'cat galley:/x; echo hi > "$1"; cat "$1"', "sh",
                 tmp_path / "f"], env=env)
    assert "libgalley-posix: cannot start the galley client" in cp.stderr
    assert "'galley:/x': Input/output error" in cp.stderr
    assert cp.stdout == "hi\n", describe(cp)


def _normal(text, tmp):
    return text.replace(str(tmp), "TMP")


def test_ordinary_tools_unchanged(cluster, tmp_path):
    """Programs that never name a galley: file behave exactly as without
    the preload (same exit status, stdout and stderr)."""
    work = tmp_path / "w"
    work.mkdir()
    (work / "in.txt").write_text("b\na\nc\n" * 1000)
    cmds = [
        ["ls", "-la", "/etc"],
        ["sort", "-u", str(work / "in.txt")],
        ["sha256sum", "/etc/services", "/etc/passwd"],
        ["sh", "-c", "tar -cf - -C /etc services passwd | wc -c"],
        ["sh", "-c", "cd '%s' && cp in.txt x && mv x y && dd if=y of=z "
                     "bs=7 skip=3 status=none && cat z | md5sum && "
                     "rm y z && ls" % work],
        ["python3", "-c", "import os, json; print(json.dumps(sorted("
                          "os.listdir('/etc'))))"],
        ["find", "/etc", "-maxdepth", "1", "-name", "*.conf"],
        ["grep", "-c", "tcp", "/etc/services"],
        ["cat", "/no/such/file"],
        ["stat", "-c", "%s %F %a", "/etc/services", "/etc"],
    ]
    for cmd in cmds:
        plain = gt.run(cmd, env=cluster.env)
        pre = galley_exec(cluster, *cmd)
        assert (plain.returncode, plain.stdout, plain.stderr) == \
            (pre.returncode, pre.stdout, pre.stderr), (cmd, describe(plain),
                                                       describe(pre))
