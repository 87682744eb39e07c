"""An fsstress-like check of `galley mount`'s name space: a seeded random
mix of mkdir, rmdir, rename (files and directories, over files, over empty
and non-empty directories, into their own subtree), create (with bytes),
unlink and stat on a few short names three levels deep, run on the mount
and on a local directory with the same seed.  Every call must end the same
way on both (the same result or the same errno), and both trees must end
alike: the same directories, files and bytes.

Skipped when the build has no galley-fuse or the machine has no /dev/fuse.
"""

import errno
import os
import random
import stat

import pytest

from conftest import fuse_ok

NAMES = ("a", "b", "c")
DEPTH = 3
OPS = 300

pytestmark = pytest.mark.skipif(not fuse_ok(), reason="no galley-fuse or /dev/fuse")


def rand_path(rng):
    return "/".join(rng.choice(NAMES) for _ in range(rng.randint(1, DEPTH)))


def plan(seed):
    """The operations of one run: (op, path, other)."""
    rng = random.Random(seed)
    ops = []
    for _ in range(OPS):
        op = rng.choice(("mkdir",) * 3 + ("create",) * 2 + ("rmdir",) * 3 +
                        ("unlink",) * 2 + ("rename",) * 3 + ("stat",))
        other = rand_path(rng) if op == "rename" else \
            bytes(rng.randrange(256) for _ in range(rng.randrange(40)))
        ops.append((op, rand_path(rng), other))
    return ops


def apply(root, op, path, other):
    """Run one operation under root: ('ok', what it returned) or
    ('err', errno name)."""
    p = os.path.join(root, path)
    try:
        if op == "mkdir":
            os.mkdir(p)
        elif op == "rmdir":
            os.rmdir(p)
        elif op == "unlink":
            os.unlink(p)
        elif op == "rename":
            os.rename(p, os.path.join(root, other))
        elif op == "create":
            with open(p, "wb") as f:
                f.write(other)
        else:
            st = os.stat(p)
            kind = "dir" if stat.S_ISDIR(st.st_mode) else "file"
            return ("ok", kind, 0 if kind == "dir" else st.st_size)
    except OSError as e:
        return ("err", errno.errorcode.get(e.errno, str(e.errno)))
    return ("ok",)


def tree(root):
    """Every directory (as 'd') and file (its bytes) under root."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for n in dirnames:
            out[os.path.normpath(os.path.join(rel, n))] = "d"
        for n in filenames:
            with open(os.path.join(dirpath, n), "rb") as f:
                out[os.path.normpath(os.path.join(rel, n))] = f.read()
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_mount_matches_local_fs(mnt, uniq, tmp_path, seed):
    local = tmp_path / "local"
    local.mkdir()
    onmount = mnt.dir / uniq
    onmount.mkdir(parents=True)
    ops = plan(seed)
    seen = {}
    for i, (op, path, other) in enumerate(ops):
        want = apply(str(local), op, path, other)
        got = apply(str(onmount), op, path, other)
        seen[want[:2]] = seen.get(want[:2], 0) + 1
        assert got == want, "op %d: %s %s %r: local %r, mount %r" % (
            i, op, path, other if op == "rename" else len(other), want, got)
    assert tree(onmount) == tree(local)
    # the mix reached the interesting answers, not only ENOENT
    for res in (("ok",), ("err", "ENOTEMPTY"), ("err", "EEXIST"),
                ("err", "ENOENT"), ("err", "ENOTDIR")):
        assert seen.get(res, 0) > 0, (res, seen)
