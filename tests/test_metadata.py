"""The metadata log and group commit (servers/wal.c) under crashes: a
server killed with SIGKILL in the middle of a storm of creates or removes
by 4 processes keeps every change it acknowledged, shows no half-made
file, and leaves nothing `galley fsck --repair` cannot clean; the log
replays what a machine crash would have lost from the files; a clean stop
leaves it empty.  (Speed is the benchmark's business: bench/mdbench.)"""

import os
import re
import shutil
import signal
import subprocess
import threading
import time

import pytest

from conftest import describe, galley_path, helper_path, stop_process

PROCS = 4


class Storm:
    """PROCS t_mdstorm processes, their output collected as it comes."""

    def __init__(self, c, mode, prefix, count):
        env = dict(c.env, GALLEY_TIMEOUT="5")
        self.procs = [subprocess.Popen(
            [helper_path("t_mdstorm"), mode, "%s%d" % (prefix, k), str(count)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True) for k in range(PROCS)]
        self.lines = [[] for _ in self.procs]
        self.threads = [threading.Thread(target=self._read, args=(k,))
                        for k in range(PROCS)]
        for t in self.threads:
            t.start()

    def _read(self, k):
        for line in self.procs[k].stdout:
            self.lines[k].append(line.split())

    def oks(self):
        return [l[1] for ls in self.lines for l in list(ls) if l[0] == "ok"]

    def wait_oks(self, n, timeout=120):
        t0 = time.monotonic()
        while len(self.oks()) < n:
            assert time.monotonic() - t0 < timeout, "storm too slow"
            assert any(p.poll() is None for p in self.procs), self.lines
            time.sleep(0.02)

    def finish(self, timeout=120):
        for p in self.procs:
            p.wait(timeout)
        for t in self.threads:
            t.join(timeout)
        return self.oks()


def check(c, prefix, count, settle_until=None):
    """name -> "have" / "none" for every name of the storm; a half-made
    file (stat and open disagree) fails the helper.  With settle_until (a
    time.monotonic() deadline), a disagreement before it returns None
    instead: a remove still running on the server can land between the
    helper's stat and its open."""
    seen = {}
    for k in range(PROCS):
        cp = c.helper("t_mdstorm", "check", "%s%d" % (prefix, k), count)
        if (cp.returncode != 0 and settle_until is not None
                and time.monotonic() < settle_until):
            return None
        assert cp.returncode == 0, describe(cp)
        for line in cp.stdout.splitlines():
            w = line.split()
            if w[0] in ("have", "none"):
                seen[w[1]] = w[0]
    assert len(seen) == PROCS * count
    return seen


def fsck_repair_clean(c):
    cp = c.galley("fsck", "--repair")
    assert cp.returncode == 0, describe(cp)
    cp = c.galley("fsck")
    assert cp.returncode == 0 and "0 orphan(s)" in cp.stdout, describe(cp)


def listed(c, prefix):
    cp = c.galley("ls", prefix)
    assert cp.returncode == 0, describe(cp)
    return set(cp.stdout.split())


def test_kill_during_create_storm_keeps_every_acknowledged_create(
        fresh_cluster):
    c = fresh_cluster
    count = 400
    storm = Storm(c, "create", "/storm/c", count)
    storm.wait_oks(60)
    c.kill(1)  # every file has a subfile there; a quarter of the records
    oks = storm.finish()
    assert len(oks) >= 60
    c.restart(1)
    seen = check(c, "/storm/c", count)
    lost = [n for n in oks if seen[n] != "have"]
    assert not lost, "acknowledged creates lost: %s" % lost[:10]
    have = {n for n, s in seen.items() if s == "have"}
    assert listed(c, "/storm/") == have
    fsck_repair_clean(c)
    # every surviving file is whole: its layout and every subfile's fork
    for name in sorted(oks)[-3:]:
        cp = c.galley("stat", name)
        assert cp.returncode == 0 and "data" in cp.stdout, describe(cp)


def test_kill_during_remove_storm_keeps_every_acknowledged_remove(
        fresh_cluster):
    c = fresh_cluster
    count = 150
    made = Storm(c, "create", "/rm/f", count)
    assert len(made.finish()) == PROCS * count
    storm = Storm(c, "remove", "/rm/f", count)
    storm.wait_oks(40)
    c.kill(2)
    oks = storm.finish()
    c.restart(2)
    seen = check(c, "/rm/f", count)
    back = [n for n in oks if seen[n] != "none"]
    assert not back, "acknowledged removes undone: %s" % back[:10]
    assert listed(c, "/rm/") == {n for n, s in seen.items() if s == "have"}
    # removes the kill interrupted leave subfiles no record names
    fsck_repair_clean(c)
    # and what survived is whole: it is removed like any file
    for n in sorted(n for n, s in seen.items() if s == "have")[:5]:
        cp = c.galley("rm", n)
        assert cp.returncode == 0, describe(cp)
    fsck_repair_clean(c)


def test_the_log_replays_what_a_machine_crash_loses(make_cluster):
    """The files a change wrote are not fsync'd: the log is what makes them
    durable.  What a machine crash can do to them (records, headers, the
    hid counter and whole subfile directories gone) is done by hand after
    a SIGKILL; the restart replays the log, and every file is back."""
    c = make_cluster(n=1)
    count = 30
    cp = c.helper("t_mdstorm", "create", "/wal/a", count)
    assert cp.returncode == 0, describe(cp)
    cp = c.galley("rm", "/wal/a.7")
    assert cp.returncode == 0, describe(cp)
    c.kill(0)
    data = c.dir / "server0"
    wal = data / "wal"
    assert wal.stat().st_size > 0
    for rec in (data / "ns").iterdir():
        rec.unlink()
    for sub in (data / "sub").iterdir():
        shutil.rmtree(sub)
    (data / "next_hid").unlink()
    with open(wal, "ab") as f:  # the last batch, torn
        f.write(os.urandom(37))
    c.restart(0)
    log = c.log(0)
    assert "wal: replayed" in log and "torn or corrupt record" in log, log
    assert wal.stat().st_size == 0
    cp = c.helper("t_mdstorm", "check", "/wal/a", count)
    assert cp.returncode == 0, describe(cp)
    want = ["none" if i == 7 else "have" for i in range(count)]
    assert [l.split()[0] for l in cp.stdout.splitlines()[:count]] == want
    fsck_repair_clean(c)
    # new subfiles take new hids: nothing replayed is overwritten
    cp = c.helper("t_mdstorm", "create", "/wal/b", 3)
    assert cp.returncode == 0, describe(cp)
    cp = c.helper("t_mdstorm", "check", "/wal/a", count)
    assert cp.returncode == 0 and cp.stdout.count("have") == count - 1


def test_a_clean_stop_leaves_the_log_empty(make_cluster):
    c = make_cluster(n=2)
    cp = c.helper("t_mdstorm", "create", "/stop/a", 20)
    assert cp.returncode == 0, describe(cp)
    assert c.stop().returncode == 0
    for i in range(2):
        assert (c.dir / ("server%d" % i) / "wal").stat().st_size == 0
        assert "group commits" in c.log(i)
    c.start()
    cp = c.helper("t_mdstorm", "check", "/stop/a", 20)
    assert cp.returncode == 0 and cp.stdout.count("have") == 20, describe(cp)


def log_counts(c):
    """{server: (records, commits)} after gfs_sync_metadata of each."""
    cp = c.helper("t_mdstorm", "logsync")
    assert cp.returncode == 0, describe(cp)
    out = {}
    for line in cp.stdout.splitlines():
        w = line.split()
        if w[0] == "server":
            out[int(w[1])] = (int(w[3]), int(w[5]))
    assert sorted(out) == list(range(c.n)), cp.stdout
    return out


@pytest.mark.parametrize("commit", ["written", "synced"])
def test_the_commit_policy(make_cluster, commit):
    """--commit written (the default) answers a metadata change once it is
    in the log, and the committer thread makes it durable right behind;
    synced answers after the fdatasync.  Either way LOG_SYNC returns with
    every change logged so far durable, and a kill -9 loses nothing
    answered."""
    args = () if commit == "written" else ("--commit", "synced")
    c = make_cluster(n=2, start_args=args)
    before = log_counts(c)
    cp = c.helper("t_mdstorm", "create", "/commit/a", 40)
    assert cp.returncode == 0, describe(cp)
    after = log_counts(c)
    for i in range(2):
        records = after[i][0] - before[i][0]
        commits = after[i][1] - before[i][1]
        # each server holds about half the records and every header
        assert records >= 40, (i, before, after)
        assert 1 <= commits <= records, (i, before, after)
    cp = c.helper("t_mdstorm", "create", "/commit/b", 40)
    assert cp.returncode == 0, describe(cp)
    for i in range(2):
        c.kill(i)
    for i in range(2):
        c.restart(i)
    for prefix in ("/commit/a", "/commit/b"):
        cp = c.helper("t_mdstorm", "check", prefix, 40)
        assert cp.returncode == 0 and cp.stdout.count("have") == 40, \
            describe(cp)
    cp = c.helper("t_mdstorm", "create", "/commit/c", 10)
    assert cp.returncode == 0, describe(cp)
    assert c.stop().returncode == 0
    for i in range(2):
        log = c.log(i)
        m = re.findall(r"(\d+) fdatasyncs by the committer", log)
        assert m, log
        # the committer runs only when answers do not wait for it
        assert (int(m[-1]) > 0) == (commit == "written"), log


def test_cached_records_never_hide_another_process(fresh_cluster, tmp_path):
    """An open or stat with a record from this process's cache
    (libgalley/rcache.c) sees a removal, and a file made again under the
    same name, by another process."""
    c = fresh_cluster
    local = tmp_path / "bytes"
    local.write_bytes(os.urandom(3000))
    g = "%s -c %s" % (galley_path(), c.cluster_file)
    cp = c.helper("t_mdstorm", "cache", "/cache/x", "%s rm /cache/x" % g,
                  "%s put %s /cache/x" % (g, local), local)
    assert cp.returncode == 0, describe(cp)


def test_leases_never_hide_another_process(fresh_cluster):
    """A record held under a lease (libgalley/rcache.c) answers stat and
    open without asking; another process's remove and attribute change
    recall it first (and finish), its writes show after an open here,
    and this process's own writes at once."""
    c = fresh_cluster
    cp = c.helper("t_mdstorm", "lease", "/lease/x", helper_path("t_mdstorm"))
    assert cp.returncode == 0, describe(cp)


def _holder(c, name, renew_ms="200"):
    p = subprocess.Popen([helper_path("t_mdstorm"), "hold", name],
                         env=dict(c.env, GALLEY_MD_RENEW_MS=renew_ms),
                         stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline().strip() == "held", p.stderr.read()
    return p


def test_a_recall_of_a_directory_keeps_the_holders_view(fresh_cluster):
    """A remove recalls the holder's other leases in the same directory
    with the one removed (servers/ns_lease.c: recall_dir), so a process
    removing a directory's files waits for one acknowledgement, not one
    per file.  The holder asks again for what it uses after: it still
    finds the files that stay, and not the ones removed."""
    c = fresh_cluster
    p = _holder(c, "/rd/a")
    for i in range(20):
        p.stdin.write("touch /rd/b.%d\n" % i)
        p.stdin.flush()
        assert p.stdout.readline().strip() == "touched"
    for i in range(5):
        cp = c.galley("rm", "/rd/b.%d" % i)
        assert cp.returncode == 0, describe(cp)
    out, err = p.communicate("go\n", timeout=60)
    assert p.returncode == 0 and out.splitlines()[0] == "have 0", (out, err)
    names = listed(c, "/rd/")
    assert "/rd/a" in names and len([n for n in names if "/rd/b." in n]) == 15


def test_a_stopped_holder_is_waited_out_and_then_sees_the_remove(
        fresh_cluster):
    """A holder that renews nothing (stopped) keeps its lease only until
    it runs out: a remove by another process waits that out, and the
    holder, continued, does not find the file."""
    c = fresh_cluster
    p = _holder(c, "/hold/s")
    stop_process(p.pid)
    try:
        cp = c.galley("rm", "/hold/s")
        assert cp.returncode == 0, describe(cp)
    finally:
        os.kill(p.pid, signal.SIGCONT)
    out, err = p.communicate("go\n", timeout=60)
    assert p.returncode == 0 and out.splitlines()[0] == "none", (out, err)
    assert "/hold/s" not in listed(c, "/hold/")
    fsck_repair_clean(c)


def test_a_killed_holder_does_not_block_removes(fresh_cluster):
    c = fresh_cluster
    p = _holder(c, "/hold/k")
    p.kill()
    p.wait(30)
    cp = c.galley("rm", "/hold/k")
    assert cp.returncode == 0, describe(cp)
    assert "/hold/k" not in listed(c, "/hold/")
    fsck_repair_clean(c)


def test_a_recall_reaches_a_live_holder_at_once(fresh_cluster):
    """A holder keeps a renewal waiting at each server (libgalley/
    rcache.c), which a recall answers at once: ten removes of files it
    holds take about ten round trips, not a renewal period each (2.5 s
    here, so about 25 s if the holder heard of them only then)."""
    c = fresh_cluster
    p = _holder(c, "/rc/x.0", renew_ms="2500")
    try:
        for i in range(1, 10):
            p.stdin.write("touch /rc/x.%d\n" % i)
            p.stdin.flush()
            assert p.stdout.readline().strip() == "touched"
        t0 = time.monotonic()
        cp = c.helper("t_mdstorm", "remove", "/rc/x", "10")
        took = time.monotonic() - t0
        assert cp.returncode == 0 and cp.stdout.count("ok ") == 10, describe(cp)
        assert took < 5.0, "10 removes of held files took %.1f s" % took
        out, err = p.communicate("go\n", timeout=60)
        assert p.returncode == 0 and out.splitlines()[0] == "none", (out, err)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_a_holder_that_exits_without_finalize_lets_its_leases_go(make_cluster):
    """A process that ends with exit() and no gfs_finalize (as every
    program under the preload does) lets its leases go on the way out: a
    remove right after does not wait for them to run out (30 s here)."""
    c = make_cluster(n=2, env={"GALLEY_MD_LEASE_MS": "30000"})
    p = _holder(c, "/ex/x")
    out, err = p.communicate("exit\n", timeout=60)
    assert p.returncode == 0, (out, err)
    t0 = time.monotonic()
    cp = c.galley("rm", "/ex/x")
    took = time.monotonic() - t0
    assert cp.returncode == 0, describe(cp)
    assert took < 15.0, "the remove waited %.1f s for an ended holder" % took
    assert "/ex/x" not in listed(c, "/ex/")


def test_a_restarted_server_forgets_no_lease(make_cluster):
    """Leases live in the server's memory: after a kill -9 and restart, a
    remove waits as long as a lease could still be held, and the holder,
    told its leases are gone, sees the remove."""
    c = make_cluster(n=1)
    p = _holder(c, "/hold/r")
    c.kill(0)
    c.restart(0)
    cp = c.galley("rm", "/hold/r")
    assert cp.returncode == 0, describe(cp)
    out, err = p.communicate("go\n", timeout=60)
    assert p.returncode == 0 and out.splitlines()[0] == "none", (out, err)


def test_removers_killed_leave_no_half_removed_file(fresh_cluster):
    """A remove answers after its record is gone and reclaims the subfiles
    behind it (libgalley/files.c): removers killed with SIGKILL mid-storm
    leave every name whole or gone, and at most orphans that `galley fsck
    --repair` removes."""
    c = fresh_cluster
    count = 150
    made = Storm(c, "create", "/rk/f", count)
    assert len(made.finish()) == PROCS * count
    storm = Storm(c, "remove", "/rk/f", count)
    storm.wait_oks(40)
    for p in storm.procs:
        p.kill()
    oks = storm.finish()
    # A remove the server had received when its sender was killed still
    # completes (it may wait for other holders' leases first): let the
    # names settle, i.e. a lookup of every name and the listing agree.
    deadline = time.monotonic() + 60
    while True:
        seen = check(c, "/rk/f", count, settle_until=deadline)
        if seen is not None:
            have = {n for n, s in seen.items() if s == "have"}
            if listed(c, "/rk/") == have or time.monotonic() > deadline:
                break
        time.sleep(0.5)
    back = [n for n in oks if seen[n] != "none"]
    assert not back, "acknowledged removes undone: %s" % back[:10]
    assert listed(c, "/rk/") == have
    fsck_repair_clean(c)
    for n in sorted(n for n, s in seen.items() if s == "have")[:5]:
        cp = c.galley("rm", n)
        assert cp.returncode == 0, describe(cp)
    fsck_repair_clean(c)


def test_a_restarted_server_renews_no_lease_of_before(make_cluster):
    """A lease granted before a server restart is never renewed by it,
    even when the holder has taken new leases there since: the other
    process's remove (after the restart's wait) is seen."""
    c = make_cluster(n=1)
    p = _holder(c, "/hold/old", renew_ms="2000")
    c.kill(0)
    c.restart(0)
    p.stdin.write("touch /hold/new\n")
    p.stdin.flush()
    assert p.stdout.readline().strip() == "touched"
    cp = c.galley("rm", "/hold/old")
    assert cp.returncode == 0, describe(cp)
    out, err = p.communicate("go\n", timeout=60)
    assert p.returncode == 0 and out.splitlines()[0] == "none", (out, err)


def test_forks_opened_at_first_use_keep_what_an_open_file_reads(
        fresh_cluster):
    """An open of a leased record opens no fork (libgalley/striped.c):
    a file opened and closed unread leaves nothing open, a reader after a
    writer sees its size and bytes, and a file open here that another
    process (or this one) removes still reads its bytes until closed;
    afterwards nothing is left for fsck."""
    c = fresh_cluster
    cp = c.helper("t_mdstorm", "lazy", "/lazy/x", helper_path("t_mdstorm"))
    assert cp.returncode == 0, describe(cp)
    assert "/lazy/x" not in listed(c, "/lazy/")
    cp = c.galley("fsck")
    assert cp.returncode == 0 and "0 orphan(s)" in cp.stdout, describe(cp)


def test_batched_subfile_deletes_leave_no_orphan(fresh_cluster):
    """Removes queue their subfiles' deletes, sent as one SUB_DELETE_MANY
    per server (libgalley/files_delete.c): once the removers have finished,
    every subfile is gone without any repair."""
    c = fresh_cluster
    count = 200
    made = Storm(c, "create", "/bd/f", count)
    assert len(made.finish()) == PROCS * count
    gone = Storm(c, "remove", "/bd/f", count)
    assert len(gone.finish()) == PROCS * count
    assert listed(c, "/bd/") == set()
    cp = c.galley("fsck")
    assert cp.returncode == 0 and "0 orphan(s)" in cp.stdout, describe(cp)


def test_a_remover_killed_with_deletes_queued_leaves_what_fsck_repairs(
        fresh_cluster):
    """A remover killed with SIGKILL after its removes returned, before
    its queued subfile deletes were all sent: every name it removed stays
    removed, and `galley fsck --repair` removes the subfiles left."""
    c = fresh_cluster
    count = 300
    made = Storm(c, "create", "/bk/f", count)
    assert len(made.finish()) == PROCS * count
    p = subprocess.Popen([helper_path("t_mdstorm"), "rmhold", "/bk/f0",
                          str(count)], env=c.env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    oks = 0
    for line in p.stdout:
        if line.startswith("ok "):
            oks += 1
        if line.strip() == "removed":
            break
    p.kill()
    p.wait(30)
    assert oks == count
    names = listed(c, "/bk/")
    assert not [n for n in names if n.startswith("/bk/f0.")]
    assert len(names) == (PROCS - 1) * count
    fsck_repair_clean(c)


def test_an_idle_holder_lets_its_leases_go_and_sees_a_remove(fresh_cluster):
    """A process that used none of its leases for GALLEY_MD_IDLE_MS stops
    renewing them (libgalley/rcache.c); its next stat and open ask the
    server again and see another process's remove."""
    c = fresh_cluster
    p = subprocess.Popen([helper_path("t_mdstorm"), "hold", "/idle/x"],
                         env=dict(c.env, GALLEY_MD_RENEW_MS="50",
                                  GALLEY_MD_IDLE_MS="200"),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held", p.stderr.read()
    time.sleep(1.0)
    cp = c.galley("rm", "/idle/x")
    assert cp.returncode == 0, describe(cp)
    out, err = p.communicate("go\n", timeout=60)
    assert p.returncode == 0 and out.splitlines()[0] == "none", (out, err)
    fsck_repair_clean(c)
