"""Fixtures for the Galley integration tests: real galleyd servers on free
loopback ports, started and stopped through tools/galley-cluster.

Programs are taken from the build tree (GALLEY_BUILD, default <repo>/_build:
servers/galleyd, tools/galley, tests/helpers/t_*), else from PATH.

Fixtures
  cluster        4 servers shared by the tests of one module (use `uniq`
                 names); tests must not kill its servers
  fresh_cluster  4 servers of the test's own, free to kill and restart
  make_cluster   factory: make_cluster(n=..., env=...) for other shapes
  uniq           a name prefix unique to the test

A Cluster runs the CLI (c.galley(...)), the C helpers (c.helper(...)),
and galley-cluster (c.ctl(...)); c.kill(i), c.restart(i), c.stop(),
c.start() act on its servers.
"""

import hashlib
import hmac
import os
import queue
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

try:
    from gproto_const import OP
except ImportError:  # other suites load this file by path, without tests/
    import importlib.util
    _spec = importlib.util.spec_from_file_location(
        "gproto_const", Path(__file__).resolve().parent / "gproto_const.py")
    _gc = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_gc)
    OP = _gc.OP

REPO = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("GALLEY_BUILD", REPO / "_build"))
CLUSTER_SCRIPT = REPO / "tools" / "galley-cluster"

# Bound on any single subprocess: a hang is a failure, not a wait.
CALL_TIMEOUT = 180


def find_program(rel, name):
    """Build-tree program `rel` (e.g. servers/galleyd), else `name` on PATH."""
    p = BUILD / rel
    if p.is_file() and os.access(p, os.X_OK):
        return str(p)
    w = shutil.which(name)
    if w:
        return w
    pytest.fail("%s not found: build first (./quickstart build) or set "
                "GALLEY_BUILD to the build directory" % rel, pytrace=False)


def galleyd_path(test_hooks=False):
    """galleyd; test_hooks: galleyd-test, the same server with the
    test-only fault points (common/gfault.h: GALLEY_TEST_FLIP_WIRE,
    GALLEY_TEST_CRASH_AFTER_CRC), built and never installed."""
    if test_hooks:
        return find_program("servers/galleyd-test", "galleyd-test")
    return find_program("servers/galleyd", "galleyd")


def galley_path():
    return find_program("tools/galley", "galley")


def helper_path(name):
    return find_program("tests/helpers/" + name, name)


def libgalley_so():
    """The build tree's libgalley.so, for scripts that call it through
    ctypes."""
    p = BUILD / "libgalley" / ".libs" / "libgalley.so"
    if not p.exists():
        pytest.skip("no libgalley.so in the build tree")
    return str(p)


def free_port():
    """A loopback port with nothing listening on it (right now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def base_env(extra=None):
    env = dict(os.environ)
    # Never touch a cluster of the user's by accident.
    for k in ("GALLEY_CLUSTER", "GALLEYD"):
        env.pop(k, None)
    env.setdefault("GALLEY_TIMEOUT", "10")
    if extra:
        env.update(extra)
    return env


def run(args, env=None, timeout=CALL_TIMEOUT, input=None, check=False,
        binary=False):
    """subprocess.run with captured output and a hang bound."""
    try:
        cp = subprocess.run(
            [str(a) for a in args], env=env, input=input,
            stdin=subprocess.DEVNULL if input is None else None,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            timeout=timeout, text=not binary)
    except subprocess.TimeoutExpired as e:
        pytest.fail("command hung for %ss: %s\nstdout: %s\nstderr: %s" % (
            timeout, " ".join(map(str, args)), e.stdout, e.stderr),
            pytrace=False)
    if check and cp.returncode != 0:
        pytest.fail("command failed (exit %d): %s\nstdout:\n%s\nstderr:\n%s"
                    % (cp.returncode, " ".join(map(str, args)),
                       cp.stdout, cp.stderr), pytrace=False)
    return cp


def describe(cp):
    return "exit %s\nstdout:\n%s\nstderr:\n%s" % (cp.returncode, cp.stdout,
                                                  cp.stderr)


def assert_helper_ok(cp):
    """A C helper passed: exit 0, a PASS line, no FAIL line."""
    assert cp.returncode == 0 and "FAIL" not in cp.stdout and \
        re.search(r"^PASS \d+ checks$", cp.stdout, re.M), describe(cp)


# The cluster secret of every server a Cluster started, by (host, port):
# raw-protocol tests authenticate with it (authenticate below), as
# libgalley does with the key beside the cluster file.
CLUSTER_KEYS = {}


def cluster_key(addr):
    """The key (bytes) of the server at (host, port), or None."""
    return CLUSTER_KEYS.get((addr[0], int(addr[1])))


def authenticate(call, key):
    """The AUTH exchange of proto/gauth.h over call(opcode, payload) ->
    (status, payload); checks the server's proof too."""
    blob = lambda b: struct.pack("<I", len(b)) + b
    cn = os.urandom(32)
    status, p = call(OP["AUTH"], blob(cn))
    assert status == 0 and len(p) == 36, (status, p)
    sn = p[4:]
    mac = hmac.new(key, b"galley-client" + cn + sn, hashlib.sha256).digest()
    status, p = call(OP["AUTH_PROVE"], blob(mac))
    assert status == 0 and len(p) == 36, (status, p)
    assert p[4:] == hmac.new(key, b"galley-server" + sn + cn,
                             hashlib.sha256).digest(), "server's proof"



class StallMeter:
    """When this process could not run: a thread that sleeps TICK seconds
    at a time and notes each wake-up more than SLACK late, with the wall
    clock time it woke.  A bound on how soon the product reacts to a
    fault bounds the product's time, not time in which a loaded or paused
    machine ran nothing at all (a virtual machine's host can stop it for
    seconds); a test adds the stalls within its interval to such a bound,
    and says so when it fails."""

    TICK = 0.01
    SLACK = 0.05

    def __enter__(self):
        self.events = []  # (wall clock time woken, seconds late)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        last = time.monotonic()
        while not self._stop.wait(self.TICK):
            now = time.monotonic()
            late = now - last - self.TICK
            if late > self.SLACK:
                self.events.append((time.time(), late))
            last = now

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def stalled(self, t0, t1):
        """Seconds of stalls that ended between wall clock times t0 and t1
        (a stall ending after t0 counts only from t0)."""
        return sum(min(late, t - t0) for t, late in self.events if t0 < t <= t1)


def fault_when_ready(cluster, proc, ready, fault, victim, timeout):
    """The fault loops' fault (mpiio-tests/test_collfail.py, the arrays'
    fault loop): once file `ready` exists while proc runs (waited for at
    most timeout s), server victim is killed (fault "kill") or stopped
    (any other: Cluster.pause).  Returns the wall clock time of the fault,
    or None when proc ended or never got ready."""
    end = time.monotonic() + timeout
    while not ready.exists() and proc.poll() is None and time.monotonic() < end:
        time.sleep(0.005)
    if not ready.exists() or proc.poll() is not None:
        return None
    if fault == "kill":
        cluster.expect_dead.add(victim)
        os.kill(cluster.pid(victim), signal.SIGKILL)
    else:
        cluster.pause(victim)
    return time.time()


def stop_process(pid, timeout=10.0):
    """SIGSTOP pid and return once every one of its threads is stopped.
    A stop is not synchronous: the kernel hands it to one thread, which
    stops the others, and until it has run another thread may still
    answer a request that arrives (seen on a loaded machine)."""
    os.kill(pid, signal.SIGSTOP)
    tasks = Path("/proc/%d/task" % pid)
    deadline = time.monotonic() + timeout
    while True:
        states = []
        for t in tasks.iterdir():
            try:
                st = (t / "stat").read_text()
            except OSError:
                continue  # a thread that exited
            states.append(st[st.rindex(")") + 2])
        if all(s in "TtZX" for s in states):
            return
        assert time.monotonic() < deadline, (pid, states)
        time.sleep(0.001)

class Cluster:
    """A set of galleyd servers in `dir`, run through galley-cluster;
    test_hooks=True: galleyd-test servers (galleyd_path)."""

    def __init__(self, dir, n=4, env=None, start_args=(), test_hooks=False):
        self.dir = Path(dir)
        self.n = n
        self.test_hooks = test_hooks
        self.cluster_file = self.dir / "cluster"
        self.env = base_env(env)
        self.env["GALLEY_CLUSTER"] = str(self.cluster_file)
        self.start_args = list(start_args)
        self.expect_dead = set()

    # -- servers ----------------------------------------------------------
    def ctl(self, *args, check=True, timeout=CALL_TIMEOUT):
        """Run galley-cluster with --dir and this cluster's galleyd."""
        cmd = [sys.executable, str(CLUSTER_SCRIPT), args[0],
               "--dir", str(self.dir)] + list(args[1:])
        env = dict(self.env)
        env["GALLEYD"] = galleyd_path(self.test_hooks)
        return run(cmd, env=env, check=check, timeout=timeout)

    def start(self, resync=False):
        """Start (or start again) every server; resync=True: with the
        launcher's background resync of a restart (galley-cluster)."""
        self.ctl("start", "-n", str(self.n), *self.start_args,
                 *(() if resync else ("--no-resync",)))
        self.expect_dead.clear()
        key = bytes.fromhex((self.dir / "cluster.key").read_text().strip())
        for i in range(self.n):
            CLUSTER_KEYS[self.addr(i)] = key
        return self

    def stop(self):
        cp = self.ctl("stop", check=False)
        self.expect_dead = set(range(self.n))
        return cp

    def status(self):
        return self.ctl("status", check=False)

    def addrs(self):
        return [l.strip() for l in self.cluster_file.read_text().splitlines()
                if l.strip()]

    def addr(self, i):
        host, _, port = self.addrs()[i].rpartition(":")
        return host, int(port)

    def pid(self, i):
        try:
            return int((self.dir / ("server%d" % i) / "pid").read_text())
        except (OSError, ValueError):
            return None

    def pause(self, i):
        """SIGSTOP server i and wait until every thread of it has stopped;
        returns its pid (SIGCONT it to go on)."""
        pid = self.pid(i)
        stop_process(pid)
        return pid

    def alive(self, i):
        pid = self.pid(i)
        if not pid:
            return False
        try:
            state = Path("/proc/%d/stat" % pid).read_text()
            return state[state.rindex(")") + 2] not in "ZX"
        except (OSError, ValueError):
            return False

    def kill(self, i, sig=signal.SIGKILL):
        """Signal server i (SIGKILL by default) and wait until it is gone."""
        self.expect_dead.add(i)
        self.ctl("kill-server", str(i), "--signal", sig.name)
        assert not self.alive(i)

    def restart(self, i, resync=False):
        """Start server i again on its previous address; resync=True: and
        let the launcher resync stale copies in the background (tests
        that look at stale copies after a restart leave it off)."""
        self.ctl("restart-server", str(i),
                 *(() if resync else ("--no-resync",)))
        self.expect_dead.discard(i)
        assert self.alive(i)

    def log(self, i):
        try:
            return (self.dir / ("server%d" % i) / "log").read_text(
                errors="replace")
        except OSError:
            return ""

    def check_alive(self):
        """Fail if a server died that the test did not kill."""
        dead = [i for i in range(self.n)
                if i not in self.expect_dead and not self.alive(i)]
        if dead:
            pytest.fail("server(s) %s died unexpectedly:\n%s" % (
                dead, "\n".join("--- server %d log:\n%s" % (
                    i, self.log(i)[-3000:]) for i in dead)), pytrace=False)

    # -- clients ----------------------------------------------------------
    def galley(self, *args, check=False, timeout=CALL_TIMEOUT, input=None,
               binary=False, env=None):
        """Run the CLI against this cluster."""
        e = dict(self.env)
        if env:
            e.update(env)
        return run([galley_path(), "-c", str(self.cluster_file)] +
                   [str(a) for a in args], env=e, check=check,
                   timeout=timeout, input=input, binary=binary)

    def helper(self, name, *args, check=False, timeout=CALL_TIMEOUT,
               env=None, input=None):
        """Run a C helper (tests/helpers/NAME) against this cluster."""
        e = dict(self.env)
        if env:
            e.update(env)
        return run([helper_path(name)] + [str(a) for a in args], env=e,
                   check=check, timeout=timeout, input=input)

    def popen_helper(self, name, *args, env=None):
        e = dict(self.env)
        if env:
            e.update(env)
        return subprocess.Popen([helper_path(name)] + [str(a) for a in args],
                                env=e, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, bufsize=1)


class LineReader:
    """Lines of a running process's stdout with a timeout per line (a
    thread reads, so buffered lines are never missed)."""

    def __init__(self, proc):
        self.proc = proc
        self.lines = []
        self._q = queue.Queue()
        self._t = threading.Thread(target=self._pump, daemon=True)
        self._t.start()

    def _pump(self):
        for line in self.proc.stdout:
            self._q.put(line)
        self._q.put(None)

    def next(self, timeout):
        """The next line, None at end of output, or "" after timeout."""
        try:
            line = self._q.get(timeout=timeout)
        except queue.Empty:
            return ""
        if line is not None:
            self.lines.append(line)
        return line

    def rest(self, timeout=60):
        """Everything until end of output (waits for the process)."""
        out = []
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            line = self.next(max(0.1, end - time.monotonic()))
            if line is None:
                break
            out.append(line)
        return "".join(out)


def _teardown(c):
    cp = c.stop()
    # Belt and braces: no galleyd of ours may outlive the test.
    for i in range(c.n):
        pid = c.pid(i)
        if pid and c.alive(i):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    if cp.returncode != 0:
        pytest.fail("galley-cluster stop failed:\n" + describe(cp),
                    pytrace=False)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("cluster"), n=4).start()
    yield c
    c.check_alive()
    _teardown(c)


@pytest.fixture
def fresh_cluster(tmp_path):
    c = Cluster(tmp_path / "cluster", n=4).start()
    yield c
    _teardown(c)


@pytest.fixture
def make_cluster(tmp_path):
    made = []

    def make(n=4, env=None, start_args=(), name=None, test_hooks=False):
        c = Cluster(tmp_path / (name or "cluster%d" % len(made)), n=n,
                    env=env, start_args=start_args, test_hooks=test_hooks)
        made.append(c)
        return c.start()

    yield make
    for c in made:
        _teardown(c)


@pytest.fixture
def uniq(request):
    """A file-name prefix no other test uses."""
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)[:60]
    return "t/%s-%s" % (base, uuid.uuid4().hex[:8])


@pytest.fixture
def wait_for():
    """wait_for(predicate, timeout, what): poll until true or fail."""
    def wait(pred, timeout=20, what="condition"):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            v = pred()
            if v:
                return v
            time.sleep(0.05)
        pytest.fail("timed out after %ss waiting for %s" % (timeout, what),
                    pytrace=False)
    return wait
