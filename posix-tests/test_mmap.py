"""mmap of a Galley file through `galley exec` (posix/px_mmap.c): the same
script on a local directory and on a mapped one prints the same lines.

What it checks: a map shows the file's bytes; stores through a shared
map reach the file at msync and at munmap, also after the descriptor was closed, and at exit; only the bytes
stored through the map are written, so another process's write elsewhere
in the same page survives; a private map is never written back; a map at
an offset; a shared map that grows (mremap) reads the file's new part;
mapping a read-only file shared and writable, or a write-only file at all,
fails with EACCES.

Environment: GALLEY_BUILD (build tree, default <repo>/_build).
"""

import subprocess
import sys

from conftest import galley_exec, gt, local_and_mapped

describe = gt.describe

SCRIPT = r'''
import mmap, os, subprocess, sys
d = sys.argv[1]
P = mmap.PAGESIZE
def rd(p):
    with open(p, "rb") as f:
        return f.read()
p = os.path.join(d, "a")
with open(p, "wb") as f:
    f.write(bytes(range(256)) * 40)              # 10240 bytes
fd = os.open(p, os.O_RDWR)
m = mmap.mmap(fd, 0)                             # shared, read and write
print("map", len(m), m[:4].hex(), m[10236:10240].hex())
m[100:105] = b"hello"
m.flush()                                        # msync(MS_SYNC)
print("after msync", os.pread(fd, 5, 100))
# another process writes bytes 0-9 of the same page; this one stores
# at 200: both survive
subprocess.run([sys.executable, "-c", "import os, sys\n"
                "fd = os.open(sys.argv[1], os.O_WRONLY)\n"
                "os.pwrite(fd, b'X' * 10, 0)", p], check=True)
m[200:203] = b"abc"
os.close(fd)                                     # the map stays usable
m[10230:10240] = b"0123456789"
m.close()                                        # munmap writes back
b = rd(p)
print("after munmap", len(b), b[:10], b[100:105], b[200:203], b[10230:])
# a private map is a copy
fd = os.open(p, os.O_RDONLY)
m = mmap.mmap(fd, 0, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_WRITE)
m[:5] = b"PRIVA"
m.close()
os.close(fd)
print("private", rd(p)[:5])
# a map at an offset, to the end of the file
fd = os.open(p, os.O_RDWR)
m = mmap.mmap(fd, 0, offset=2 * P)
print("offset", len(m), m[:4].hex(), m[-2:].hex())
m[0:3] = b"OFF"
m.close()
print("offset written", rd(p)[2 * P:2 * P + 3])
# grow: the file's new part shows in the grown map
m = mmap.mmap(fd, P)
os.pwrite(fd, b"tail", 12000)
m.resize(12004)                                  # ftruncate + mremap
print("grown", len(m), m[12000:12004], os.fstat(fd).st_size)
m[12000:12004] = b"TAIL"
del m
print("grown written", rd(p)[12000:])
# access modes
for flags, prot in ((os.O_RDONLY, mmap.PROT_READ | mmap.PROT_WRITE),
                    (os.O_WRONLY, mmap.PROT_READ)):
    f2 = os.open(p, flags)
    try:
        mmap.mmap(f2, P, mmap.MAP_SHARED, prot)
        print("mapped?")
    except OSError as e:
        print("refused", e.errno == 13)
    os.close(f2)
# stores still mapped at exit reach the file
m = mmap.mmap(fd, P)
m[300:304] = b"EXIT"
'''

CHECK = r'''
import sys
with open(sys.argv[1], "rb") as f:
    b = f.read()
print("at exit", b[300:304], len(b))
'''


def _run(cluster, d, mounts):
    lines = []
    for script in (SCRIPT, CHECK):
        arg = str(d) if script is SCRIPT else str(d / "a")
        if mounts:
            cp = galley_exec(cluster, sys.executable, "-c", script, arg,
                             mounts=mounts)
        else:
            cp = subprocess.run([sys.executable, "-c", script, arg], text=True,
                                capture_output=True, timeout=60)
        assert cp.returncode == 0 and cp.stderr == "", describe(cp)
        lines += cp.stdout.splitlines()
    return lines


def test_mmap_through_the_preload(cluster, uniq, tmp_path):
    want, got = local_and_mapped(cluster, uniq, tmp_path,
                                 lambda d, m: _run(cluster, d, m))
    assert got == want, (got, want)
    assert want[1] == "after msync b'hello'", want
    assert want[-1] == "at exit b'EXIT' 12004", want
    st = cluster.galley("stat", "/%s/a" % uniq)
    assert st.returncode == 0 and "12004" in st.stdout, describe(st)
