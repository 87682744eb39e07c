"""Stat-ahead through `galley exec` (libgalley/statahead.c): a process
that stats a directory's files one after another has the others' records
and sizes fetched together; what its stats answer must be what they
answered without it.  The same script on a local directory and on a
mapped one prints the same lines.

What it checks: sizes (empty files, one stripe, several stripes) and
modes of every file after a stat-ahead; a file in a subdirectory and a
symbolic link beside them; after another process removes a file, changes
a mode, makes a file and grows one, this process's stat sees the remove,
the mode and the new file at once, and the grown size once it opens the
file (close-to-open, as a stat without stat-ahead).

Environment: GALLEY_BUILD (build tree, default <repo>/_build).
"""

import subprocess
import sys

from conftest import galley_exec, gt, local_and_mapped

describe = gt.describe

CHANGE = r'''
import os, sys
d = sys.argv[1]
os.unlink(os.path.join(d, "f3"))
os.chmod(os.path.join(d, "f4"), 0o640)
with open(os.path.join(d, "f48"), "wb") as f:
    f.write(b"z" * 123)
with open(os.path.join(d, "f9"), "ab") as f:
    f.write(b"z" * 1000)
'''

READ = r'''
import os, stat, subprocess, sys
d = sys.argv[1]
def show(tag, skip=None):
    out = []
    for i in range(49):
        if i == skip:  # (its size may be the one seen before, as NFS's)
            continue
        p = os.path.join(d, "f%d" % i)
        try:
            st = os.stat(p)
            out.append("%d:%d:%o" % (i, st.st_size, stat.S_IMODE(st.st_mode)))
        except FileNotFoundError:
            out.append("%d:-" % i)
    print(tag, " ".join(out))
show("first")
print("sub", os.stat(os.path.join(d, "sub", "g")).st_size,
      "ln", os.lstat(os.path.join(d, "ln")).st_size,
      os.stat(os.path.join(d, "ln")).st_size)
subprocess.run([sys.executable, "-c", sys.argv[2], d], check=True)
show("after", 9)
with open(os.path.join(d, "f9"), "rb") as f:
    print("opened f9", os.fstat(f.fileno()).st_size)
print("f9 after open", os.stat(os.path.join(d, "f9")).st_size)
'''

SCRIPT = r'''
import os, subprocess, sys
d = sys.argv[1]
sizes = [0, 1, 4095, 65536, 65537, 300000]
for i in range(48):
    with open(os.path.join(d, "f%d" % i), "wb") as f:
        f.write(b"x" * sizes[i % len(sizes)])
    if i % 5 == 0:
        os.chmod(os.path.join(d, "f%d" % i), 0o600)
os.mkdir(os.path.join(d, "sub"))
with open(os.path.join(d, "sub", "g"), "wb") as f:
    f.write(b"y" * 77)
os.symlink("f1", os.path.join(d, "ln"))
# a new process: none of these are in its cache yet
subprocess.run([sys.executable, "-c", sys.argv[2], d, sys.argv[3]],
               check=True)
'''


def _run(cluster, d, mounts):
    if mounts:
        cp = galley_exec(cluster, sys.executable, "-c", SCRIPT, str(d), READ,
                         CHANGE, mounts=mounts)
    else:
        cp = subprocess.run([sys.executable, "-c", SCRIPT, str(d), READ, CHANGE],
                            text=True, capture_output=True, timeout=60)
    assert cp.returncode == 0 and cp.stderr == "", describe(cp)
    return cp.stdout.splitlines()


def test_stat_ahead_answers_as_stat(cluster, uniq, tmp_path):
    want, got = local_and_mapped(cluster, uniq, tmp_path,
                                 lambda d, m: _run(cluster, d, m))
    assert got == want, (got, want)
    assert "3:65536:644" in want[0] and "48:-" in want[0], want
    assert "3:-" in want[2] and "4:65537:640" in want[2], want
    assert "48:123:644" in want[2], want
    assert want[1] == "sub 77 ln 2 1", want
    assert want[3:] == ["opened f9 66536", "f9 after open 66536"], want
