"""libgalley-posix.so under `galley exec`: unmodified programs (coreutils,
python, a C program using every interposed call) on galley: names, against
real galleyd servers; missing names, a dead server, and programs that never
name a galley: file.

Environment: GALLEY_BUILD (build tree, default <repo>/_build).
"""

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

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


# ------------------------------------------- `galley exec -m DIR`: directories
def _mapped(cluster, tmp_path, uniq, script, *args, shell="sh"):
    """shell -c script under `galley exec -m D=/uniq` ($1 = D, then
    args)."""
    d = tmp_path / "mapped"
    d.mkdir(exist_ok=True)
    cp = galley_exec(cluster, shell, "-c", script, shell, d, *args,
                     mounts=["%s=/%s" % (d, uniq)])
    return d, cp


def test_mapped_mkdir_is_galleys(cluster, uniq, tmp_path):
    """mkdir under a mapped directory makes a Galley directory: stat (in
    another process too), opendir, a second mkdir (EEXIST, as io500's
    "stat, create if missing" expects), rmdir (ENOTEMPTY while a file is
    in it, then gone) agree, and nothing is made on the local disk."""
    d, cp = _mapped(cluster, tmp_path, uniq,
                    'mkdir "$1/x" && stat -c "%F" "$1/x" && '
                    'sh -c \'stat -c "%F %s" "$1/x"; ls -a "$1/x"\' sh "$1" && '
                    'python3 -c "import os, sys\n'
                    'try: os.mkdir(sys.argv[1])\n'
                    'except FileExistsError: print(\'EEXIST\')" "$1/x"')
    assert cp.returncode == 0 and cp.stdout.split("\n") == [
        "directory", "directory 0", ".", "..", "EEXIST", ""], describe(cp)
    assert list(d.iterdir()) == [], list(d.iterdir())
    # seen by a later process, and by the C API's listing
    _, cp = _mapped(cluster, tmp_path, uniq,
                    'echo data > "$1/x/f" && ls "$1" "$1/x" && '
                    'rmdir "$1/x"; echo "rmdir: $?"; rmdir "$1/x/f"; '
                    'echo "rmdir file: $?"; mkdir "$1/no/y"; '
                    'echo "mkdir: $?"; rm "$1/x/f" && ls -a "$1/x" && '
                    'rmdir "$1/x" && ls -a "$1"; stat "$1/x"; echo "stat: $?"')
    assert cp.stdout.split("\n") == [
        "%s:" % d, "x", "", "%s/x:" % d, "f", "rmdir: 1", "rmdir file: 1",
        "mkdir: 1", ".", "..", ".", "..", "stat: 1", ""], describe(cp)
    assert "Directory not empty" in cp.stderr and "Not a directory" in \
        cp.stderr and "No such file or directory" in cp.stderr, describe(cp)
    assert cluster.galley("ls", "/" + uniq).stdout.split() == [], describe(cp)
    assert list(d.iterdir()) == [], list(d.iterdir())


def test_mapped_paths_normalised(cluster, uniq, tmp_path):
    """"//", "." and ".." in a mapped path are read as the kernel reads
    them (pfind builds "D//a/f"); ".." out of the mapped directory leaves
    Galley."""
    (tmp_path / "outside").write_text("local\n")
    _, cp = _mapped(cluster, tmp_path, uniq,
                    'mkdir "$1/a" && echo hi > "$1/a/f" && '
                    'cat "$1//a/f" "$1/a//f" "$1/./a/../a/f" "$1/a/f/" 2>&1; '
                    'stat -c "%s %F" "$1//a" "$1//a//f" && '
                    'cat "$1/../outside" && find "$1//a" -name f')
    d = tmp_path / "mapped"
    assert cp.stdout.split("\n") == [
        "hi", "hi", "hi", "cat: %s/a/f/: Not a directory" % d,
        "0 directory", "3 regular file", "local", "%s//a/f" % d, ""], \
        describe(cp)


def test_file_times_are_its_datas(cluster, uniq, tmp_path):
    """A file's modification time is its data's (the newest of its
    subfiles' data files): a file written before a stamp is not
    `find -newer` it, one written after is; an append moves it on; stat
    and fstat of the open file agree."""
    stamp = tmp_path / "stamp"
    d, cp = _mapped(cluster, tmp_path, uniq,
                    'echo a > "$1/old" && sleep 0.3 && : > "$2" && '
                    'sleep 0.3 && echo b > "$1/new" && '
                    'find "$1" -newer "$2" -type f && '
                    'stat -c "%Y" "$1/old" "$2" "$1/new" && '
                    'python3 -c "import os, sys, time\n'
                    'b = os.stat(sys.argv[1]).st_mtime_ns; time.sleep(0.3)\n'
                    'f = open(sys.argv[1], \'a\'); f.write(\'c\'); f.flush()\n'
                    'o = os.fstat(f.fileno()).st_mtime_ns; f.close()\n'
                    'a = os.stat(sys.argv[1]).st_mtime_ns\n'
                    'print(o == a, a - b >= 200000000)" "$1/old"', stamp)
    lines = cp.stdout.split("\n")
    assert cp.returncode == 0 and lines[0] == "%s/new" % d, describe(cp)
    t_old, t_stamp, t_new = (int(x) for x in lines[1:4])
    assert t_old <= t_stamp <= t_new, describe(cp)
    assert abs(t_new - time.time()) < 60, describe(cp)
    assert lines[4:] == ["True True", ""], describe(cp)


def _same_as_local(cluster, tmp_path, uniq, script, *args):
    """sh -c script on a local directory and under `galley exec -m`: both
    print the same and nothing on stderr; the output's lines."""
    local = tmp_path / "local"
    local.mkdir()
    want = subprocess.run(["sh", "-c", script, "sh", local, *args],
                          text=True, capture_output=True, timeout=60)
    _, cp = _mapped(cluster, tmp_path, uniq, script, *args)
    assert cp.returncode == 0 and cp.stdout == want.stdout, \
        (describe(cp), want.stdout)
    assert cp.stderr == want.stderr == "", (describe(cp), want.stderr)
    return want.stdout.split("\n")


_MODES = r"""
umask 022
printf '#!/bin/sh\necho ran\n' > "$1/s"
stat -c %a "$1/s"; test -x "$1/s"; echo "x $?"
chmod 755 "$1/s"; stat -c %a "$1/s"
sh -c 'stat -c %a "$1"; test -x "$1"; echo "x $?"' sh "$1/s"
umask 077
python3 -c "import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o666)
print(oct(os.fstat(fd).st_mode & 0o7777))
os.fchmod(fd, 0o640)
print(oct(os.fstat(fd).st_mode & 0o7777), os.access(sys.argv[1], os.X_OK))
os.close(fd)" "$1/p"
chmod 444 "$1/p"; echo w >> "$1/p"; echo "w $?"; cat "$1/p"
chmod u+s,g+w "$1/p"; stat -c %a "$1/p"; chmod 0 "$1/p"; ls -l "$1/p" | cut -c1-10
mv "$1/s" "$1/s2"; stat -c %a "$1/s2"
"""


def test_modes_are_kept(cluster, uniq, tmp_path):
    """A file's permission bits: a new file's are its open's mode less the
    umask, chmod and fchmod set them, stat and fstat (in another process
    too) show them and access() honours them, as on a local directory in
    the same run (root writes a read-only file there too)."""
    out = _same_as_local(cluster, tmp_path, uniq, _MODES)
    assert out[:6] == ["644", "x 1", "755", "755", "x 0", "0o600"], out


_TIMES = r"""
export TZ=UTC
cd "$1"
echo one > a
touch -d "2020-01-02 03:04:05.123456789" a; stat -c "%y %s" a
touch -m -d @1000000000 a; stat -c %Y a
touch -a -d @5 a; stat -c %Y a
cp -p a b; stat -c %Y b
mv b c; stat -c %Y c
python3 -c "import os
os.utime('c', ns=(5, 7000000001)); print(os.stat('c').st_mtime_ns)
fd = os.open('c', os.O_RDONLY); os.utime(fd, ns=(5, 8000000002))
print(os.fstat(fd).st_mtime_ns); os.close(fd)"
sh -c 'stat -c %Y "$1"' sh c
echo two >> c; test "$(stat -c %Y c)" -gt 1000000000; echo "written $?"
touch d; test "$(stat -c %Y d)" -gt 1000000000; echo "now $?"
touch -d @42 missing-dir/x 2>/dev/null; echo "missing $?"
"""


def test_times_are_kept(cluster, uniq, tmp_path):
    """A file's modification time: touch -d, touch -m, utimensat with ns
    and futimens set it, touch -a leaves it, cp -p and mv keep it, another
    process sees it, and a write afterwards makes the data's time show; as
    on a local directory in the same run."""
    out = _same_as_local(cluster, tmp_path, uniq, _TIMES)
    assert out[:9] == [
        "2020-01-02 03:04:05.123456789 +0000 4", "1000000000", "1000000000",
        "1000000000", "1000000000", "7000000001", "8000000002", "8",
        "written 0"], out


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root and setpriv to run as another user")
def test_modes_are_honoured(cluster, uniq, tmp_path):
    """For a user without root's override, the owner bits decide: writing
    a read-only file, reading a mode-0 one and access() for them fail
    with EACCES, and work again once chmod allows them."""
    # the cluster file and key as that user's, where it can reach them
    d = Path(tempfile.mkdtemp(prefix="galley-nobody-"))
    for f in (cluster.cluster_file,
              Path(str(cluster.cluster_file) + ".key")):
        shutil.copy(f, d / f.name)
    for p in (d, *d.iterdir()):
        os.chown(p, 65534, 65534)
    name = "galley:/%s/f" % uniq
    cp = gt.run(["setpriv", "--reuid", "65534", "--regid", "65534",
                 "--clear-groups", gt.galley_path(), "-c",
                 d / cluster.cluster_file.name, "exec", "--", "sh", "-c",
                 'cd /; echo a > "$1"; chmod 444 "$1"; echo b >> "$1"; '
                 'echo "w $?"; test -w "$1"; echo "tw $?"; chmod 0 "$1"; '
                 'cat "$1"; echo "r $?"; chmod 600 "$1"; echo c >> "$1"; '
                 'cat "$1"', "sh", name], env=cluster.env)
    assert cp.stdout.split("\n") == ["w 2", "tw 1", "r 1", "a", "c", ""], \
        describe(cp)
    assert cp.stderr.count("Permission denied") == 2, describe(cp)
    shutil.rmtree(d)


_LINKS = r"""
mkdir "$1/sub"; echo target > "$1/sub/f"
ln -s sub/f "$1/rel"; ln -s "$1/sub" "$1/dir"; ln -s "$2" "$1/out"
ln -s nowhere "$1/dangling"; ln -s loop "$1/loop"
readlink "$1/rel"; cat "$1/rel"; echo more >> "$1/rel"; cat "$1/sub/f"
stat -c "%F %s" "$1/rel"; stat -L -c "%F %s" "$1/rel"; ls "$1/dir/"
cat "$1/out"; test -e "$1/dangling"; echo "e $?"; test -L "$1/dangling"
echo "L $?"; cat "$1/loop" 2>/dev/null; echo "loop $?"
ln -s x "$1/rel" 2>/dev/null; echo "ln $?"; chmod 600 "$1/rel"
stat -L -c %a "$1/rel"; mv "$1/rel" "$1/moved"; readlink "$1/moved"
cat "$1/moved"; rm "$1/moved" "$1/loop"; test -e "$1/sub/f"; echo "t $?"
ls "$1"
"""


def test_symlinks(cluster, uniq, tmp_path):
    """Symbolic links through `galley exec`: ln -s makes one (relative, to
    a Galley directory, to a local file, dangling, to itself), readlink
    and lstat show it, open, stat, chmod and opendir follow it (ELOOP for
    a loop), mv moves it, rm removes the link, not its target; as on a
    local directory in the same run."""
    outside = tmp_path / "outside"
    outside.write_text("outside\n")
    out = _same_as_local(cluster, tmp_path, uniq, _LINKS, outside)
    assert out[:6] == ["sub/f", "target", "target", "more",
                       "symbolic link 5", "regular file 12"], out


def test_shell_redirections_of_builtins(cluster, uniq, tmp_path):
    """bash's builtins write through glibc's own stdout and stderr, which
    reach descriptors 1 and 2 by calls the preload cannot see: while a
    Galley file is there (`echo > F`, `2> F`, `>&3` of `exec 3> F`) the
    stream is swapped for the preload's, and back after, so the shell's
    own output goes on where it went."""
    _, cp = _mapped(cluster, tmp_path, uniq,
                    'echo one > "$1/a"; printf "two\\n" >> "$1/a"; '
                    'echo err 2> "$1/b" >&2; exec 3> "$1/c"; '
                    'echo three >&3; exec 3>&-; echo back; '
                    'read -r l < "$1/a"; echo "read $l"; '
                    'cat "$1/a" "$1/b" "$1/c"', shell="bash")
    assert cp.returncode == 0 and cp.stdout.split("\n") == [
        "back", "read one", "one", "two", "err", "three", ""], describe(cp)
    assert cp.stderr == "", describe(cp)


def test_shell_redirections_of_commands(cluster, uniq, tmp_path):
    """A command a shell starts with a Galley file as a descriptor
    (`cmd > F`, `cmd >> F`, `cmd < F`, `>&3` of `exec 3> F`) finds it
    after exec (px_inherit.c) and writes or reads it, its stdio streams
    too (sort, wc); writes of the shell and its commands to one
    descriptor follow each other, as through a shared offset."""
    d, cp = _mapped(cluster, tmp_path, uniq,
                    'seq 3 -1 1 > "$1/a"; sort < "$1/a" > "$1/b"; '
                    'echo 4 >> "$1/b"; wc -l < "$1/b"; '
                    '{ echo h; seq 2 3; echo t; } > "$1/c"; '
                    'exec 3> "$1/e"; seq 1 2 >&3; echo x >&3; '
                    'python3 -c "print(\'py\')" >&3; exec 3>&-; '
                    'cat "$1/b" "$1/c" "$1/e"', shell="bash")
    assert cp.returncode == 0 and cp.stdout.split("\n") == [
        "4", "1", "2", "3", "4", "h", "2", "3", "t", "1", "2", "x", "py",
        ""], describe(cp)
    assert cp.stderr == "", describe(cp)
    assert list(d.iterdir()) == [], list(d.iterdir())


def test_mapped_realpath_statvfs(cluster, uniq, tmp_path):
    """realpath of a mapped path is the path read as the kernel reads it
    once the name exists (pfind and io500 resolve their directories so;
    glibc's own walks the local disk, where the names are not), readlink
    answers EINVAL for an existing name (not a link), and statvfs/statfs
    report the cluster (its name limit, io500's statvfs of its data
    directory)."""
    _, cp = _mapped(cluster, tmp_path, uniq,
                    'mkdir "$1/a" && echo hi > "$1/a/f" && '
                    'python3 -c "import os, sys, errno\n'
                    'd = sys.argv[1]\n'
                    'print(os.path.realpath(d + \'//a/./f\', strict=True) == d + \'/a/f\')\n'
                    'try: os.path.realpath(d + \'/a/nope\', strict=True)\n'
                    'except FileNotFoundError: print(\'ENOENT\')\n'
                    'try: os.readlink(d + \'/a/f\')\n'
                    'except OSError as e: print(errno.errorcode[e.errno])\n'
                    'v = os.statvfs(d + \'/a\')\n'
                    'print(v.f_namemax, v.f_blocks > 0)\n'
                    'try: os.statvfs(d + \'/nope\')\n'
                    'except FileNotFoundError: print(\'ENOENT\')" "$1" && '
                    'realpath "$1//a/../a/f" && stat -f -c %l "$1/a/f"')
    d = tmp_path / "mapped"
    assert cp.returncode == 0 and cp.stdout.split("\n") == [
        "True", "ENOENT", "EINVAL", "255 True", "ENOENT", "%s/a/f" % d, "255", ""], \
        describe(cp)


def test_mapped_cp_find_rm(cluster, uniq, tmp_path):
    """cp -r of a local tree into a mapped directory makes its directories
    in Galley; find (openat/fstatat/fdopendir relative to directory
    descriptors) finds what it finds in the local tree; rm -r removes a
    Galley directory and everything under it."""
    src = tmp_path / "src"
    (src / "sub" / "deep").mkdir(parents=True)
    (src / "empty").mkdir()
    files = {"a.txt": b"a" * 10, "sub/b.txt": os.urandom(70000),
             "sub/deep/c.dat": b"c"}
    for n, b in files.items():
        (src / n).write_bytes(b)
    local = {}
    for expr in (["-name", "*.txt"], ["-type", "d"], ["-type", "f"], []):
        cp = gt.run(["find", src] + expr)
        local[tuple(expr)] = sorted(cp.stdout.replace(str(src), "T").split())
    d, cp = _mapped(cluster, tmp_path, uniq,
                    'cp -r "$2" "$1/" && for e in "-name *.txt" "-type d" '
                    '"-type f" ""; do find "$1/src" $e; echo ===; done', src)
    assert cp.returncode == 0, describe(cp)
    parts = cp.stdout.split("===\n")
    for expr, out in zip((["-name", "*.txt"], ["-type", "d"], ["-type", "f"],
                          []), parts):
        got = sorted(out.replace(str(d / "src"), "T").split())
        assert got == local[tuple(expr)], (expr, got, describe(cp))
    for n, b in files.items():
        assert cluster.galley("get", "/%s/src/%s" % (uniq, n), "-",
                              binary=True).stdout == b
    assert list(d.iterdir()) == [], list(d.iterdir())
    _, cp = _mapped(cluster, tmp_path, uniq,
                    'rm -r "$1/src/sub" && find "$1/src" | sort')
    assert cp.returncode == 0 and cp.stdout.replace(str(d), "D").split() == [
        "D/src", "D/src/a.txt", "D/src/empty"], describe(cp)
    names = cluster.galley("ls", "/" + uniq).stdout.split()
    assert not any("/sub" in n for n in names), names


def test_mapped_mv_dir_and_attributes(cluster, uniq, tmp_path):
    """mv of a Galley directory (rename answers EXDEV: mv copies the tree
    and removes the old one) and cp -a work without a complaint; chmod,
    chown, touch and setting an xattr on a Galley name are accepted
    (Galley keeps none of them) and a missing name still answers
    ENOENT."""
    d, cp = _mapped(cluster, tmp_path, uniq,
                    'mkdir "$1/m" "$1/m/e" && echo q > "$1/m/f" && '
                    'mv "$1/m" "$1/n" && cp -a "$1/n" "$1/o" && '
                    'touch "$1/o/f" && chmod 600 "$1/o/f" && '
                    'chown "$(id -u)" "$1/o" && find "$1" | sort && '
                    'cat "$1/o/f"; chmod 600 "$1/none"; echo "chmod: $?"; '
                    'python3 -c "import os, sys\n'
                    'try: os.rename(sys.argv[1], sys.argv[2])\n'
                    'except OSError as e: print(e.strerror)" "$1/o" "$1/p"')
    assert cp.stdout.replace(str(d), "D").split("\n") == [
        "D", "D/n", "D/n/e", "D/n/f", "D/o", "D/o/e", "D/o/f", "q",
        "chmod: 1", "Invalid cross-device link", ""], describe(cp)
    assert cp.stderr.replace(str(d), "D") == \
        "chmod: cannot access 'D/none': No such file or directory\n", \
        describe(cp)


AT_CALLS = r'''
import errno, os, stat, sys
root = sys.argv[1]
out = []
def rec(what, f, *a, **k):
    try:
        r = f(*a, **k)
        if isinstance(r, os.stat_result):  # (a directory's size differs)
            r = (stat.S_IFMT(r.st_mode),
                 0 if stat.S_ISDIR(r.st_mode) else r.st_size)
        out.append("%s: %r" % (what, sorted(r) if isinstance(r, list) else r))
        return r
    except OSError as e:
        out.append("%s: %s" % (what, errno.errorcode[e.errno]))
os.mkdir(root + "/t")
d = os.open(root + "/t", os.O_RDONLY | os.O_DIRECTORY)
rec("fstat", lambda: stat.S_ISDIR(os.fstat(d).st_mode))
rec("mkdirat", os.mkdir, "sub", dir_fd=d)
rec("mkdirat again", os.mkdir, "sub", dir_fd=d)
fd = os.open("sub//f", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=d)
rec("write", os.write, fd, b"12345")
os.close(fd)
rec("openat excl", os.open, "sub/f", os.O_WRONLY | os.O_CREAT | os.O_EXCL,
    dir_fd=d)
s = os.open("sub", os.O_RDONLY | os.O_DIRECTORY, dir_fd=d)
rec("fstatat", os.stat, "f", dir_fd=s)
rec("fstatat dotdot", os.stat, "../sub/./f", dir_fd=s)
rec("fstatat missing", os.stat, "nope", dir_fd=s)
rec("fstatat dir", os.stat, "..", dir_fd=s)
rec("faccessat", os.access, "f", os.R_OK, dir_fd=s)
rec("listdir fd", os.listdir, d)
rec("listdir sub", os.listdir, s)
rec("scandir", lambda: sorted((e.name, e.is_dir()) for e in os.scandir(d)))
rec("renameat", os.rename, "f", "g", src_dir_fd=s, dst_dir_fd=s)
rec("openat read", lambda: os.read(os.open("g", os.O_RDONLY, dir_fd=s), 9))
rec("read dir fd", os.read, s, 4)
rec("openat file as dir", os.open, "g", os.O_RDONLY | os.O_DIRECTORY,
    dir_fd=s)
rec("unlinkat dir", os.rmdir, "sub", dir_fd=d)
rec("unlinkat", os.unlink, "g", dir_fd=s)
rec("unlinkat dir as file", os.unlink, "sub", dir_fd=d)
rec("unlinkat dir now", os.rmdir, "sub", dir_fd=d)
rec("listdir after", os.listdir, d)
os.close(s)
os.close(d)
os.rmdir(root + "/t")
print("\n".join(out))
'''


def test_at_calls_on_directory_descriptors(cluster, uniq, tmp_path):
    """openat/fstatat/faccessat/mkdirat/unlinkat/renameat relative to a
    Galley directory descriptor, fstat and read of it, and listing it
    (fdopendir of a dup) give what they give on a local directory."""
    local = tmp_path / "local"
    local.mkdir()
    want = gt.run(["python3", "-c", AT_CALLS, local])
    assert want.returncode == 0, describe(want)
    d, got = _mapped(cluster, tmp_path, uniq, 'python3 -c "$2" "$1"',
                     AT_CALLS)
    assert got.returncode == 0, describe(got)
    assert got.stdout == want.stdout, (want.stdout, got.stdout)
    assert list(d.iterdir()) == [], list(d.iterdir())
