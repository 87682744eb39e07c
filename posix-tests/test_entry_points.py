"""Every descriptor call glibc exports that can move data, called on a
Galley descriptor under `galley exec`: either the right bytes or a clear
error, never a success that moved nothing.

The calls come from glibc's own symbol table (`nm -D`), not from a list
kept here: every public symbol one of whose words (split at `_`, a `64` or
`v2` suffix dropped) is a data verb below.  helpers/t_entry.c probes each
(a file with a known pattern, the call, the file read back); a symbol it
has no probe for fails this test, so a new glibc call is decided on, not
missed.  The calls a Galley file refuses are named here with their errno;
every other probed call must be served.

Environment: GALLEY_BUILD (build tree, default <repo>/_build).
"""

import re
import subprocess

from conftest import galley_exec, gt, helper

describe = gt.describe

# Words of a symbol's name that say it may move data through a descriptor.
VERBS = {
    "read", "readv", "pread", "preadv", "write", "writev", "pwrite",
    "pwritev", "send", "sendfile", "sendto", "sendmsg", "sendmmsg", "recv",
    "recvfrom", "recvmsg", "recvmmsg", "splice", "vmsplice", "tee", "copy",
    "fallocate", "truncate", "ftruncate", "sync", "fsync", "fdatasync",
    "syncfs", "fadvise", "readahead", "mmap", "madvise", "msync", "aio",
    "lio",
}

# What a Galley descriptor refuses, and with what: pipe-only and socket
# calls.  The O_PATH placeholder underneath refuses whatever the kernel
# sees (EBADF).  (mmap is served: posix/px_mmap.c.)
REFUSED = {
    "tee": "EINVAL", "vmsplice": "EBADF",
    "eventfd_read": "EBADF", "eventfd_write": "EBADF",
    "recv": "EBADF", "__recv_chk": "EBADF", "recvfrom": "EBADF",
    "__recvfrom_chk": "EBADF", "recvmsg": "EBADF", "recvmmsg": "EBADF",
    "send": "EBADF", "__send": "EBADF", "sendto": "EBADF", "sendmsg": "EBADF",
    "sendmmsg": "EBADF",
}

# Calls this issue exists for: they must be among the symbols found and
# served (a guard against an empty or wrong symbol table).
MUST_SERVE = {
    "pwritev", "preadv", "pwritev2", "preadv2", "pwritev64", "preadv64",
    "pwritev64v2", "preadv64v2", "fallocate", "posix_fallocate",
    "copy_file_range", "sendfile", "splice", "ftruncate64", "fdatasync",
    "sync_file_range", "readahead", "posix_fadvise", "lio_listio",
}


def libc_path():
    out = subprocess.run(["gcc", "-print-file-name=libc.so.6"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def data_calls():
    """glibc's public symbols whose name holds a data verb."""
    out = subprocess.run(
        ["nm", "-D", "--defined-only", "--with-symbol-versions",
         libc_path()], capture_output=True, text=True, check=True).stdout
    names = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) != 3 or f[1] not in "TWi" or "GLIBC_PRIVATE" in f[2]:
            continue
        name = f[2].split("@")[0]
        if name.startswith("_IO_"):  # libio's internals: FILE streams
            continue
        words = [re.sub(r"(64)?(v2)?$", "", w)
                 for w in name.strip("_").split("_")]
        if any(w in VERBS for w in words):
            names.add(name)
    return sorted(names)


def test_every_data_call(cluster, uniq, tmp_path):
    names = data_calls()
    assert MUST_SERVE <= set(names), sorted(MUST_SERVE - set(names))
    d = tmp_path / "g"
    d.mkdir()
    cp = galley_exec(cluster, helper("t_entry"), d, *names,
                     mounts=["%s=/%s" % (d, uniq)], timeout=120)
    got = {}
    for line in cp.stdout.splitlines():
        name, _, what = line.partition(" ")
        got[name] = what
    assert sorted(got) == names, describe(cp)
    unknown = [n for n in names if got[n] == "unknown"]
    assert not unknown, "glibc calls with no probe in t_entry.c: %s" % unknown
    wrong = ["%s: %s" % (n, got[n]) for n in names
             if got[n].startswith("WRONG")]
    assert not wrong, "\n".join(wrong) + "\n" + describe(cp)
    for n in names:
        if got[n] == "other":
            continue
        want = "refused " + REFUSED[n] if n in REFUSED else "served"
        assert got[n] == want, "%s: %s, expected %s" % (n, got[n], want)
    assert cp.returncode == 0, describe(cp)
    # every probe ran on the Galley file: nothing was left in the directory
    # the preload maps, and a probe's file is gone from the cluster too
    assert list(d.iterdir()) == []
    ls = cluster.galley("ls", "/" + uniq)
    assert "e-" not in ls.stdout, describe(ls)


# System calls made through syscall() past their libc wrappers (fsx calls
# copy_file_range that way), and ioctl requests (posix/px_sys.c).
RAW = {
    "SYS_pwritev": "served", "SYS_pwritev2": "served", "SYS_preadv2": "served",
    "SYS_pread64": "served", "SYS_copy_file_range": "served",
    "SYS_fallocate": "served", "SYS_ftruncate": "served", "SYS_fsync": "served",
    "SYS_close": "served", "ioctl_FIONBIO": "served",
    "ioctl_FICLONERANGE": "refused EOPNOTSUPP", "ioctl_FIONREAD": "refused ENOTTY",
}


def test_raw_system_calls_and_ioctl(cluster, uniq, tmp_path):
    d = tmp_path / "g"
    d.mkdir()
    cp = galley_exec(cluster, helper("t_entry"), d, *sorted(RAW),
                     mounts=["%s=/%s" % (d, uniq)], timeout=120)
    got = dict(l.partition(" ")[::2] for l in cp.stdout.splitlines())
    assert got == RAW, describe(cp)
    assert cp.returncode == 0 and list(d.iterdir()) == [], describe(cp)
