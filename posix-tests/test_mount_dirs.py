"""Directories are one model for `galley mount` and `galley exec`: a
directory made with mkdir on either is kept on the servers by its marker
"DIR/", so it survives unmount, the other path sees it and removes it,
rmdir answers ENOTEMPTY across the two, and a rename on the mount moves a
tree of empty directories made through the preload.

Skipped when the build has no galley-fuse or the machine has no /dev/fuse.
"""

import errno
import os

import pytest

from conftest import Mount, fuse_ok, galley_exec, gt, oserr

describe = gt.describe

pytestmark = pytest.mark.skipif(not fuse_ok(), reason="no galley-fuse or /dev/fuse")



def ls(cluster, uniq):
    out = cluster.galley("ls", "/" + uniq, check=True).stdout.split()
    return [n[len(uniq) + 2:] for n in out]  # relative to /uniq/


def sh(cluster, script):
    """script under `galley exec`; its stdout, stderr and status."""
    cp = galley_exec(cluster, "sh", "-c", script)
    return cp


def test_mount_mkdir_survives_remount(cluster, tmp_path, uniq):
    m = Mount(cluster, tmp_path / "m1")
    d = m.dir / uniq
    (d / "a" / "b").mkdir(parents=True)
    (d / "c").mkdir()
    m.umount()
    assert ls(cluster, uniq) == ["", "a/", "a/b/", "c/"]
    m = Mount(cluster, tmp_path / "m2")
    try:
        d = m.dir / uniq
        assert sorted(os.listdir(d)) == ["a", "c"]
        assert (d / "a" / "b").is_dir() and os.listdir(d / "a" / "b") == []
        assert oserr(os.rmdir, d / "a") == errno.ENOTEMPTY
        assert oserr(os.mkdir, d / "a" / "b") == errno.EEXIST
        os.rmdir(d / "a" / "b")
        os.rmdir(d / "a")
        assert os.listdir(d) == ["c"]
    finally:
        m.umount()
    assert ls(cluster, uniq) == ["", "c/"]


def test_preload_dir_on_mount_and_back(cluster, mnt, uniq):
    g = "galley:/" + uniq
    cp = sh(cluster, 'mkdir %s && mkdir %s/p && mkdir %s/p/q' % (g, g, g))
    assert cp.returncode == 0, describe(cp)
    d = mnt.dir / uniq
    assert os.listdir(d) == ["p"] and os.listdir(d / "p") == ["q"]
    assert (d / "p" / "q").is_dir() and os.listdir(d / "p" / "q") == []
    os.rmdir(d / "p" / "q")
    assert os.listdir(d / "p") == [] and (d / "p").is_dir()
    os.rmdir(d / "p")
    assert oserr(os.stat, d / "p") == errno.ENOENT
    assert ls(cluster, uniq) == [""]
    # and the other way: made on the mount, seen and removed by the preload
    (d / "m" / "n").mkdir(parents=True)
    cp = sh(cluster, 'stat -c %%F %s/m/n; ls -a %s/m/n; ls %s/m; '
               'rmdir %s/m/n && rmdir %s/m && echo gone' % ((g,) * 5))
    assert cp.stdout.split("\n") == ["directory", ".", "..", "n", "gone", ""], \
        describe(cp)
    assert oserr(os.stat, d / "m") == errno.ENOENT
    assert os.listdir(d) == [] and ls(cluster, uniq) == [""]


def test_rmdir_enotempty_across(cluster, mnt, uniq):
    g = "galley:/" + uniq
    d = mnt.dir / uniq
    cp = sh(cluster, 'mkdir %s %s/x %s/x/y' % (g, g, g))
    assert cp.returncode == 0, describe(cp)
    assert oserr(os.rmdir, d / "x") == errno.ENOTEMPTY  # y's marker
    (d / "z" / "w").mkdir(parents=True)
    (d / "f").mkdir()
    (d / "f" / "data").write_bytes(b"data")
    cp = sh(cluster, 'rmdir %s/z; echo "z: $?"; rmdir %s/f; echo "f: $?"'
            % (g, g))
    assert cp.stdout.split("\n") == ["z: 1", "f: 1", ""], describe(cp)
    assert cp.stderr.count("Directory not empty") == 2, describe(cp)
    # a file made through the preload in a directory made on the mount
    cp = sh(cluster, 'echo hi > %s/z/w/file' % g)
    assert cp.returncode == 0, describe(cp)
    assert oserr(os.rmdir, d / "z" / "w") == errno.ENOTEMPTY
    assert (d / "z" / "w" / "file").read_bytes() == b"hi\n"
    assert sorted(os.listdir(d)) == ["f", "x", "z"]
    assert ls(cluster, uniq) == ["", "f/", "f/data", "x/", "x/y/", "z/",
                                 "z/w/", "z/w/file"]


def test_mount_renames_preload_tree(cluster, mnt, uniq):
    g = "galley:/" + uniq
    cp = sh(cluster, 'mkdir %s %s/t %s/t/e %s/t/g %s/t/g/h %s/t/g/h/i && '
            'echo f > %s/t/g/f' % ((g,) * 7))
    assert cp.returncode == 0, describe(cp)
    d = mnt.dir / uniq
    os.rename(d / "t", d / "t2")
    assert os.listdir(d) == ["t2"] and oserr(os.stat, d / "t") == errno.ENOENT
    assert sorted(os.listdir(d / "t2")) == ["e", "g"]
    assert sorted(os.listdir(d / "t2" / "g")) == ["f", "h"]
    assert os.listdir(d / "t2" / "g" / "h") == ["i"]
    assert (d / "t2" / "g" / "f").read_bytes() == b"f\n"
    assert ls(cluster, uniq) == ["", "t2/", "t2/e/", "t2/g/", "t2/g/f",
                                 "t2/g/h/", "t2/g/h/i/"]
    # the preload sees the moved tree and takes it apart bottom up
    cp = sh(cluster, 'rmdir %s/t2/g; echo "g: $?"; rm %s/t2/g/f && '
            'rmdir %s/t2/g/h/i %s/t2/g/h %s/t2/g %s/t2/e %s/t2 && ls -a %s'
            % ((g,) * 8))
    assert cp.stdout.split("\n") == ["g: 1", ".", "..", ""], describe(cp)
    assert os.listdir(d) == [] and ls(cluster, uniq) == [""]
