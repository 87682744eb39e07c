"""galley_cluster_common -- what galley-cluster's one-host and launcher
modes share: messages, small files, the cluster's files and key, process
and port probes, how galleyd is found and started."""

import argparse
import json
import shutil
import os
import signal
import socket
import secrets
import subprocess
import sys
import time

PROG = "galley-cluster"
RANK_VARS = ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",
             "MPI_LOCALRANKID_GLOBAL", "GALLEY_RANK")


class Failure(Exception):
    """An error reported as 'galley-cluster: message' with exit status 1."""


def say(msg):
    print(msg, flush=True)


def warn(msg):
    print("%s: %s" % (PROG, msg), file=sys.stderr, flush=True)


# ---------------------------------------------------------------- files ----

def write_atomic(path, text):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_small(path, text):
    """write_atomic, or on a full disk an overwrite in place of the file
    that is already there: a few bytes inside its allocated block need no
    free space (a pid file must be written even when another program has
    filled the disk).  Raises OSError when neither works."""
    try:
        write_atomic(path, text)
        return
    except OSError:
        try:
            os.unlink("%s.tmp.%d" % (path, os.getpid()))
        except OSError:
            pass
        if not os.path.exists(path):
            raise
    fd = os.open(path, os.O_WRONLY)
    try:
        old = os.fstat(fd).st_size
        data = text.rstrip("\n")
        # pad with blanks to at least the old length: no truncation, so
        # no block is freed and none has to be found again
        data = data.ljust(max(old - 1, len(data))) + "\n"
        os.write(fd, data.encode())
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def is_key(txt):
    return bool(txt) and len(txt) == 64 and \
        all(c in "0123456789abcdef" for c in txt)


def write_key(path, text, replace):
    """Write a key file (0600) atomically; without replace, an existing
    file wins (another galley-cluster may have made it meanwhile)."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, (text + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        if replace:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


def user_key():
    """The user's own key, ~/.galley/key (made on first use, 0600 in a
    0700 directory), or None when the home directory cannot hold it."""
    home = os.path.expanduser("~")
    if not home or home == "~":
        return None
    d = os.path.join(home, ".galley")
    path = os.path.join(d, "key")
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        if not is_key(read_text(path)):
            write_key(path, secrets.token_hex(32), False)
        txt = read_text(path)
        return txt if is_key(txt) else None
    except OSError:
        return None


def ensure_key(d):
    """The cluster secret beside the cluster file: DIR/cluster.key, 64 hex
    digits readable by its owner only, made once (a restart keeps it: the
    servers remember it too).  A new one is the file $GALLEY_KEY names,
    else the user's key (~/.galley/key), else random: so the clusters of
    one user share a key, and a cluster file that lists servers of several
    of them (one per host, say) works with the user's key alone.  Returns
    its path."""
    path = os.path.join(d, "cluster.key")
    txt = read_text(path)
    if is_key(txt):
        os.chmod(path, 0o600)
        return path
    env = os.environ.get("GALLEY_KEY")
    txt = read_text(env) if env else None
    if not is_key(txt):
        txt = user_key() or secrets.token_hex(32)
    write_key(path, txt, True)
    return path


def read_text(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def server_dir(d, i):
    return os.path.join(d, "server%d" % i)


def load_meta(d):
    txt = read_text(os.path.join(d, "cluster.json"))
    if not txt:
        return None
    try:
        return json.loads(txt)
    except ValueError:
        raise Failure("%s/cluster.json is corrupt; remove it" % d)


def save_meta(d, meta):
    write_atomic(os.path.join(d, "cluster.json"),
                 json.dumps(meta, indent=1, sort_keys=True) + "\n")


def read_cluster_file(d):
    txt = read_text(os.path.join(d, "cluster"))
    if txt is None:
        return []
    return [l.strip() for l in txt.splitlines()
            if l.strip() and not l.strip().startswith("#")]


def write_cluster_file(d, addrs):
    write_atomic(os.path.join(d, "cluster"), "".join(a + "\n" for a in addrs))


def split_addr(addr):
    host, _, port = addr.rpartition(":")
    return host.strip("[]"), int(port)


# ------------------------------------------------------------ processes ----

def proc_stat(pid):
    """The fields of /proc/PID/stat after the command name (the state is
    [0], the start time [19]); OSError or ValueError if there is none."""
    with open("/proc/%d/stat" % pid) as f:
        stat = f.read()
    return stat[stat.rindex(")") + 2:].split()


def proc_start_time(pid):
    """The start time of pid (clock ticks since boot), which tells it from
    a later process given the same pid; "0" if it has none."""
    try:
        return proc_stat(pid)[19]
    except (OSError, ValueError, IndexError):
        return "0"


def proc_alive(pid, must_contain=None):
    """True if pid runs (not a zombie) and its command line contains
    must_contain (guards against a recycled pid)."""
    if not pid or pid <= 0:
        return False
    try:
        state = proc_stat(pid)[0]
        if state in ("Z", "X"):
            return False
        if must_contain:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            if must_contain not in cmd:
                return False
        return True
    except (OSError, ValueError):
        return False


def read_pid(path):
    txt = read_text(path)
    try:
        return int(txt.split()[0]) if txt else None
    except ValueError:
        return None


def signal_proc(pid, sig):
    """Signal pid's process group when it leads one (galleyd and its
    helpers), else pid alone."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError as e:
        warn("cannot signal pid %d: %s" % (pid, e))


def wait_dead(pids, timeout, marker=None):
    """Wait until none of pids is alive; returns the ones still alive."""
    end = time.monotonic() + timeout
    left = [p for p in pids if proc_alive(p, marker)]
    while left and time.monotonic() < end:
        time.sleep(0.05)
        left = [p for p in left if proc_alive(p, marker)]
    return left


def tcp_ok(addr, timeout=1.0):
    try:
        host, port = split_addr(addr)
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def port_free(host, port):
    if not port:
        return False
    try:
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(fam, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
        return True
    except OSError:
        return False


def log_tail(path, lines=15):
    txt = read_text(path)
    if not txt:
        return "    (log empty)"
    return "\n".join("    " + l for l in txt.splitlines()[-lines:])


def find_galleyd(explicit):
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise Failure("galleyd '%s' is not executable" % explicit)
        return os.path.abspath(explicit)
    env = os.environ.get("GALLEYD")
    if env:
        return find_galleyd(env)
    here = os.path.dirname(os.path.realpath(__file__))
    for rel in (".", "../bin", "../servers", "../_build/servers"):
        cand = os.path.normpath(os.path.join(here, rel, "galleyd"))
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    for p in os.environ.get("PATH", "").split(os.pathsep):
        cand = os.path.join(p or ".", "galleyd")
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return os.path.abspath(cand)
    raise Failure("cannot find galleyd (use --galleyd PATH or set GALLEYD)")


def find_galley_cli(galleyd):
    here = os.path.dirname(galleyd)
    for rel in (".", "../tools", "../bin"):
        cand = os.path.normpath(os.path.join(here, rel, "galley"))
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    env = os.environ.get("GALLEY_CLI")
    if env and os.access(env, os.X_OK):
        return env
    return shutil.which("galley")


def start_resync(d, meta):
    """`galley resync` of every file, in the background (see the top)."""
    cli = find_galley_cli(meta["galleyd"])
    if not cli:
        warn("cannot find the galley tool: run `galley resync` by hand")
        return
    env = dict(os.environ)
    env["GALLEY_CLUSTER"] = os.path.join(d, "cluster")
    env.pop("GALLEY_KEY", None)  # the cluster's own key, beside its file
    with open(os.path.join(d, "resync.log"), "ab") as log:
        log.write(("--- %s resync after a restart\n" %
                   time.strftime("%Y-%m-%d %H:%M:%S")).encode())
        log.flush()
        proc = subprocess.Popen([cli, "resync"], env=env,
                                stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT,
                                start_new_session=True)
    write_small(os.path.join(d, "resync.pid"), "%d\n" % proc.pid)
    say("resync of stale copies started in the background (pid %d, log %s)"
        % (proc.pid, os.path.join(d, "resync.log")))


def pick_galleyd(explicit, meta):
    """--galleyd or $GALLEYD first, then the one this DIR used before,
    then the search of find_galleyd."""
    if explicit or os.environ.get("GALLEYD"):
        return find_galleyd(explicit)
    if meta and meta.get("galleyd") and os.access(meta["galleyd"], os.X_OK):
        return meta["galleyd"]
    return find_galleyd(None)


def advertised_address(host):
    """The IPv4 address clients will reach `host` at: what a rank binds
    when --bind is not given, so a server listens only where it is
    published (a name resolving to loopback stays on loopback)."""
    try:
        infos = socket.getaddrinfo(host, None, socket.AF_INET,
                                   socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise Failure("cannot resolve %s to choose a listen address (%s); "
                      "give --bind or --advertise" % (host, e))
    return infos[0][4][0]


def galleyd_args(meta, data, listen, port_file):
    args = [meta["galleyd"], "--data", data, "--listen", listen]
    if port_file:
        args += ["--port-file", port_file]
    if meta.get("key"):
        args += ["--key", meta["key"]]
    if meta.get("cache_mb") is not None:
        args += ["--cache-mb", str(meta["cache_mb"])]
    if meta.get("data_limit") is not None:
        args += ["--data-limit", str(meta["data_limit"])]
    if meta.get("no_local"):
        args += ["--no-local"]
    if meta.get("commit"):
        args += ["--commit", meta["commit"]]
    return args
