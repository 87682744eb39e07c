"""galley_cluster_launch -- galley-cluster's launcher mode: servers
started over several hosts by srun (a job step of a Slurm allocation),
mpiexec, or the local stand-in."""

import math
import os
import signal
import socket
import subprocess
import sys
import time

from galley_cluster_common import *  # noqa: F401,F403


# ------------------------------------------------------------- hosts ----

def in_slurm():
    """The id of the Slurm allocation this runs in, or None."""
    return os.environ.get("SLURM_JOB_ID") or None


def slurm_hostnames(expr):
    """A Slurm host list ("node[0-2],gpu1") as names, by scontrol."""
    try:
        p = subprocess.run(["scontrol", "show", "hostnames", expr],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Failure("cannot expand the Slurm host list %s: %s" % (expr, e))
    if p.returncode != 0 or not p.stdout.split():
        raise Failure("cannot expand the Slurm host list %s: %s" % (
            expr, p.stderr.strip() or "empty"))
    return p.stdout.split()


def read_hostfile(path):
    """Hosts of a host file, one slot per line entry: "host" or Hydra's
    "host:count" (count slots); blank lines and # comments skipped."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise Failure("cannot read host file %s: %s" % (path, e))
    hosts = []
    for ln, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, count = line.partition(":")
        if not name or (count and not count.isdigit()) or count == "0":
            raise Failure("%s:%d: expected HOST or HOST:COUNT, got %r"
                          % (path, ln, line))
        hosts += [name] * (int(count) if count else 1)
    if not hosts:
        raise Failure("host file %s names no host" % path)
    return hosts


def plan_hosts(a, n):
    """The host of every server, server i on hosts[i] (None: --launcher
    local, every server here).  Inside a Slurm allocation with no host
    file: --per-node servers (default 1) on each node of --nodes (default
    every node of the job), in node order."""
    if a.launcher == "local" and not a.hostfile:
        if n is None:
            raise Failure("--launcher local needs -n N")
        return None, n
    if a.hostfile:
        slots = read_hostfile(a.hostfile)
        if a.per_node:
            slots = [h for h in dict.fromkeys(slots)
                     for _ in range(a.per_node)]
    elif in_slurm():
        nodes = slurm_hostnames(a.nodes or
                                os.environ.get("SLURM_JOB_NODELIST", ""))
        k = a.per_node or (math.ceil(n / len(nodes)) if n else 1)
        slots = [h for h in nodes for _ in range(k)]
    else:
        raise Failure("--launcher %s outside a Slurm allocation needs "
                      "--hostfile HOSTS" % a.launcher)
    if n is None:
        n = len(slots)
    # more servers than slots: round robin over them, as Hydra does
    return [slots[i % len(slots)] for i in range(n)], n


def expand(pattern, host):
    """A per-host value: %h is the host's short name, %% a percent sign,
    $VAR / ${VAR} the host's environment."""
    out = pattern.replace("%%", "\0").replace("%h", host.split(".")[0])
    return os.path.expandvars(out.replace("\0", "%"))


def advertise_map(path):
    """--advertise-file: "HOST NAME" per line, the name a server on HOST
    publishes (a fast-network name)."""
    m = {}
    try:
        with open(path) as f:
            for line in f:
                w = line.split("#", 1)[0].split()
                if len(w) == 2:
                    m[w[0]] = w[1]
                elif w:
                    raise Failure("%s: expected HOST NAME, got %r"
                                  % (path, line.strip()))
    except OSError as e:
        raise Failure("cannot read %s: %s" % (path, e))
    return m


# ------------------------------------------------------------ launch ----

def launch_cmd(a, d, new, n):
    """The launcher's command line and environment."""
    env = dict(os.environ)
    extra = a.launcher_args.split() if a.launcher_args else []
    hosts = new["hosts"]
    if a.launcher == "srun":
        # task i on hosts[i]; --overlap: the servers' step shares the
        # allocation's CPUs with the job's own steps instead of holding
        # them; one CPU and the memory a galleyd uses (its block cache and
        # about 128 MiB) per server, rather than the job's whole memory,
        # which a step asks by default where memory is a consumable;
        # --overcommit: N servers whatever CPUs the job holds
        hf = os.path.join(d, "srun.hosts")
        write_atomic(hf, "".join(h + "\n" for h in hosts))
        env["SLURM_HOSTFILE"] = hf
        cmd = ["srun", "--overlap", "--overcommit",
               "--distribution=arbitrary",
               "--nodes=%d" % len(set(hosts)), "--ntasks=%d" % n,
               "--cpus-per-task=1", "--mem-per-cpu=%dM" % (
                   a.step_mem or (a.cache_mb or 64) + 128),
               "--kill-on-bad-exit=0", "--job-name=galley-servers",
               "--nodelist=" + ",".join(dict.fromkeys(hosts))]
    elif a.launcher == "mpiexec":
        groups = []
        for h in hosts:
            if groups and groups[-1][0] == h:
                groups[-1][1] += 1
            else:
                groups.append([h, 1])
        hf = os.path.join(d, "mpiexec.hosts")
        write_atomic(hf, "".join("%s:%d\n" % (h, c) for h, c in groups))
        cmd = ["mpiexec", "-f", hf, "-n", str(n)]
        if in_slurm():
            # Hydra starts its proxies with srun: the same --overlap
            env["HYDRA_LAUNCHER_EXTRA_ARGS"] = (
                env.get("HYDRA_LAUNCHER_EXTRA_ARGS", "") + " --overlap").strip()
    else:
        cmd = []
    return cmd + extra, env


def start(a, d, n, meta, status_lines):
    if meta:
        lines, dead = status_lines(d, meta)
        if dead < meta["n"]:
            if dead == 0:
                say("cluster in %s is already running:" % d)
                for l in lines:
                    say("  " + l)
                return 0
            raise Failure("some servers of %s are alive, some dead; run "
                          "`%s stop --dir %s` first" % (d, PROG, d))
    hosts, n = plan_hosts(a, n)
    if n < 1 or n > 256:
        raise Failure("-n must be 1..256")
    if meta and meta["n"] != n:
        raise Failure("%s holds data of a %d-server cluster; use another "
                      "--dir for %d servers" % (d, meta["n"], n))
    root = a.data_root or d
    if "$" not in root and "%" not in root:
        root = os.path.abspath(root)
    new = {
        "n": n,
        "host": None,
        "launcher": a.launcher,
        "hostfile": os.path.abspath(a.hostfile) if a.hostfile else None,
        "hosts": hosts or ["localhost"] * n,
        "cache_mb": a.cache_mb,
        "data_limit": a.data_limit,
        "no_local": a.no_local,
        "commit": a.commit,
        "galleyd": pick_galleyd(a.galleyd, meta),
        # expanded by each rank on its host (%h, $TMPDIR)
        "data_root": root,
        # None: each rank binds the address its published name resolves
        # to (see cmd_rank), never every interface unless told so
        "bind": a.bind,
        "advertise": a.advertise,
        "advertise_map": advertise_map(a.advertise_file)
        if a.advertise_file else None,
        "job": in_slurm(),
        "key": ensure_key(d),
    }
    for i in range(n):
        sd = server_dir(d, i)
        os.makedirs(sd, exist_ok=True)
        for f in ("port", "pid", "host", "step", "exit"):
            try:
                os.unlink(os.path.join(sd, f))
            except FileNotFoundError:
                pass
    save_meta(d, new)
    me = os.path.realpath(sys.argv[0])
    rank_cmd = [sys.executable, me, "_rank", "--dir", d]
    cmd, env = launch_cmd(a, d, new, n)
    log = os.path.join(d, "launcher.log")
    with open(log, "ab") as lf:
        if cmd:
            proc = subprocess.Popen(cmd + rank_cmd, stdin=subprocess.DEVNULL,
                                    stdout=lf, stderr=lf, env=env,
                                    start_new_session=True, close_fds=True)
        else:
            # "local": a stand-in launcher running every rank here.
            script = ("pids=(); for r in $(seq 0 $((%d-1))); do "
                      "GALLEY_RANK=$r \"$@\" & pids+=($!); done; "
                      "trap 'kill -TERM ${pids[@]} 2>/dev/null' TERM INT; "
                      "wait; wait" % n)
            proc = subprocess.Popen(["bash", "-c", script, "launcher"] +
                                    rank_cmd, stdin=subprocess.DEVNULL,
                                    stdout=lf, stderr=lf,
                                    start_new_session=True, close_fds=True)
    write_atomic(os.path.join(d, "launcher.pid"), "%d %s %s\n" % (
        proc.pid, socket.gethostname(), proc_start_time(proc.pid)))
    end = time.monotonic() + a.timeout
    addrs = [None] * n
    while None in addrs:
        for i in range(n):
            if addrs[i] is None:
                addr = read_text(os.path.join(server_dir(d, i), "port"))
                if addr and tcp_ok(addr, 0.5):
                    addrs[i] = addr
        if None not in addrs:
            break
        if proc.poll() is not None or time.monotonic() > end:
            step = read_step(d, n)
            if step:
                subprocess.run(["scancel", step], stderr=subprocess.DEVNULL)
            signal_proc(proc.pid, signal.SIGTERM)
            wait_dead([proc.pid], 5)
            signal_proc(proc.pid, signal.SIGKILL)
            missing = [str(i) for i in range(n) if addrs[i] is None]
            raise Failure("launcher %s did not bring up server(s) %s (%s); "
                          "launcher log %s:\n%s%s" % (
                              cmd[0] if cmd else "local", ",".join(missing),
                              "it exited" if proc.poll() is not None
                              else "timed out after %gs" % a.timeout, log,
                              log_tail(log),
                              "".join("\n  server %s log:\n%s" % (
                                  m, log_tail(os.path.join(
                                      server_dir(d, int(m)), "log")))
                                      for m in missing)))
        time.sleep(0.1)
    write_cluster_file(d, addrs)
    lines, _ = status_lines(d, new)
    step = read_step(d, n)
    say("started %d servers through %s%s; cluster file %s" % (
        n, a.launcher, " (Slurm step %s)" % step if step else "",
        os.path.join(d, "cluster")))
    for l in lines:
        say("  " + l)
    return 0


def read_step(d, n):
    """JOBID.STEPID of the servers' Slurm step, as its ranks recorded it."""
    for i in range(n):
        step = read_text(os.path.join(server_dir(d, i), "step"))
        if step:
            return step
    return None


def step_running(step):
    """Whether Slurm still runs step JOB.STEP (unknown: assume it does)."""
    try:
        p = subprocess.run(["squeue", "-h", "-s", "-o", "%i",
                            "-j", step.split(".")[0]],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return True
    return p.returncode != 0 or step in p.stdout.split()


# ------------------------------------------------------------ status ----

def status_line(d, meta, i, addr):
    """(text, up) for server i of a launched cluster: up when its address
    answers; else how it ended, when its rank recorded that."""
    sd = server_dir(d, i)
    host = read_text(os.path.join(sd, "host")) or "?"
    pid = read_pid(os.path.join(sd, "pid"))
    up = addr != "-" and tcp_ok(addr)
    if up:
        state = "alive"
    else:
        code = read_text(os.path.join(sd, "exit"))
        state = ("stopped" if code == "0" else
                 "dead (exit %s)" % code if code else "dead")
    return "server %d  %-21s  %-12s  %s" % (
        i, addr, "pid %s@%s" % (pid if pid else "-", host), state), up


# -------------------------------------------------------------- stop ----

def stop(a, d, meta):
    """Stop a launched cluster from any host: a Slurm step by scancel
    --signal=TERM (every rank forwards it to its galleyd, which shuts down
    cleanly), otherwise the launcher on the host that started it.  Waits
    for every server to go, reports those that did not."""
    n = meta["n"]
    addrs = read_cluster_file(d)
    step = read_step(d, n)
    sent = False
    lp_txt = (read_text(os.path.join(d, "launcher.pid")) or "").split()
    if step and meta["launcher"] == "srun":
        p = subprocess.run(["scancel", "--signal=TERM", step],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        if p.returncode != 0:
            warn("scancel --signal=TERM %s: %s" % (step, p.stdout.strip()))
        else:
            sent = True
            say("sent SIGTERM to the servers' Slurm step %s" % step)
    if not sent and lp_txt:
        pid, host = int(lp_txt[0]), lp_txt[1] if len(lp_txt) > 1 else None
        st = lp_txt[2] if len(lp_txt) > 2 else None
        if host and host != socket.gethostname():
            if any(tcp_ok(x) for x in addrs):
                raise Failure("%s was started by a launcher on %s; run "
                              "`%s stop --dir %s` there" % (d, host, PROG, d))
        elif proc_alive(pid) and (st is None or
                                  proc_start_time(pid) == st):
            signal_proc(pid, signal.SIGTERM)
            sent = True
            say("sent SIGTERM to the launcher (pid %d)" % pid)
    # ranks whose galleyd runs on this host and still answers
    for i in range(n):
        sd = server_dir(d, i)
        if read_text(os.path.join(sd, "host")) == socket.gethostname():
            pid = read_pid(os.path.join(sd, "pid"))
            if i < len(addrs) and tcp_ok(addrs[i]) and \
                    proc_alive(pid, "galleyd"):
                signal_proc(pid, signal.SIGTERM)
    end = time.monotonic() + a.timeout
    left = [i for i in range(n) if i < len(addrs) and tcp_ok(addrs[i])]
    while left and time.monotonic() < end:
        time.sleep(0.1)
        left = [i for i in left if tcp_ok(addrs[i], 0.5)]
    # each rank records its galleyd's exit status once it has gone (a rank
    # killed with its step records none: the step's end says so)
    def unrecorded():
        return [i for i in range(n) if not read_text(
            os.path.join(server_dir(d, i), "exit"))]
    while unrecorded() and time.monotonic() < end:
        if step and not step_running(step):
            break
        time.sleep(0.2)
    # the launcher itself ends once its ranks have
    if lp_txt and lp_txt[1:2] == [socket.gethostname()]:
        wait_dead([int(lp_txt[0])], max(1, end - time.monotonic()))
    bad = []
    for i in range(n):
        line, up = status_line(d, meta, i, addrs[i] if i < len(addrs)
                               else "-")
        say("  " + line)
        if not line.endswith("  stopped"):
            bad.append(i)
    if step and any(i in bad for i in left):
        warn("servers %s did not stop in %gs; cancelling step %s"
             % (",".join(map(str, left)), a.timeout, step))
        subprocess.run(["scancel", step], stderr=subprocess.DEVNULL)
    if bad:
        raise Failure("server(s) %s did not stop cleanly" %
                      ",".join(map(str, bad)))
    say("stopped the %d servers of %s" % (n, d))
    return 0


# -------------------------------------------------------------- rank ----

def cmd_rank(a):
    """Run by the launcher once per rank: start galleyd for this rank,
    publish its address, wait for it, record how it ended."""
    d = os.path.abspath(a.dir)
    meta = load_meta(d)
    rank = None
    for v in RANK_VARS:
        if os.environ.get(v, "").isdigit():
            rank = int(os.environ[v])
            break
    if rank is None:
        raise Failure("no rank in the environment (%s)" % ", ".join(RANK_VARS))
    if not meta or rank >= meta["n"]:
        raise Failure("rank %d has no place in %s" % (rank, d))
    me = socket.gethostname()
    sd = server_dir(d, rank)
    data = os.path.join(expand(meta["data_root"], me), "server%d" % rank)
    os.makedirs(sd, exist_ok=True)
    os.makedirs(data, exist_ok=True)
    if os.environ.get("SLURM_JOB_ID") and os.environ.get("SLURM_STEP_ID"):
        write_atomic(os.path.join(sd, "step"), "%s.%s\n" % (
            os.environ["SLURM_JOB_ID"], os.environ["SLURM_STEP_ID"]))
    amap = meta.get("advertise_map") or {}
    host = (amap.get(me) or amap.get(me.split(".")[0]) or
            (expand(meta["advertise"], me) if meta.get("advertise")
             else me))
    bind = (expand(meta["bind"], me) if meta.get("bind")
            else advertised_address(host))
    # galleyd writes the bound address (possibly 0.0.0.0) to a private
    # file; the published one names this host.
    bound = os.path.join(sd, "port.%s" % me)
    try:
        os.unlink(bound)
    except FileNotFoundError:
        pass
    with open(os.path.join(sd, "log"), "ab") as log:
        proc = subprocess.Popen(
            galleyd_args(meta, data, "%s:0" % bind, bound),
            stdin=subprocess.DEVNULL, stdout=log, stderr=log)

    def forward(sig, _frame):
        if proc.poll() is None:
            proc.send_signal(sig)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP,
                signal.SIGCONT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, forward)
    end = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < end:
        txt = read_text(bound)
        if txt:
            port = split_addr(txt)[1]
            write_atomic(os.path.join(sd, "host"), me + "\n")
            write_atomic(os.path.join(sd, "pid"), "%d\n" % proc.pid)
            write_atomic(os.path.join(sd, "port"), "%s:%d\n" % (host, port))
            break
        time.sleep(0.05)
    while True:
        try:
            rc = proc.wait()
            break
        except InterruptedError:
            continue
    write_atomic(os.path.join(sd, "exit"), "%d\n" % (
        rc if rc >= 0 else 128 - rc))
    return rc
