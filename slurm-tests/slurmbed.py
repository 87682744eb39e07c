#!/usr/bin/env python3
"""slurmbed -- a real Slurm cluster on one machine, for the Slurm tests.

usage (root):
  slurmbed.py up --dir DIR [-N NODES] [--cpus C] [--subnet 10.253.0]
  slurmbed.py down --dir DIR
  slurmbed.py exec --dir DIR HOST CMD ...   (HOST: login, node0, node1, ...)

`up` starts Debian's own Slurm daemons: one `munged` (its own key and
socket in DIR/munge), one `slurmctld` on the host "login" and one `slurmd`
per node "node0".."node<N-1>", each declaring C CPUs
(SlurmdParameters=config_overrides lets a node claim more than the machine
has).  Every host is a network namespace with one address on a bridge
(held in a namespace of its own, as tools/galley-hosts does: nothing is
added to the machine's own network), its own host name (UTS namespace)
and its own /etc/hosts (a private mount namespace with DIR/hosts bound
over /etc/hosts) naming every host, plus "<node>-ib" aliases for the
per-node advertise names.  A host is entered with
`nsenter --target HOLDER --net --uts --mount`, where HOLDER is a process
that keeps the host's namespaces alive; `ip netns exec` is not used
because it remounts /sys without /sys/fs/cgroup.

Clients (sbatch, salloc, srun, scancel) run on "login" or on a node, with
SLURM_CONF=DIR/slurm.conf.  Every file of the cluster lives in DIR, a
directory every host sees (the hosts share the machine's file system, as
the nodes of a site share its parallel file system).  State: DIR/bed.json.
"""

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

PROG = "slurmbed"


class Failure(Exception):
    pass


def run(cmd, check=True, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, text=True, **kw)
    if check and p.returncode != 0:
        raise Failure("%s: %s" % (" ".join(cmd),
                                  (p.stderr or p.stdout).strip()))
    return p


def daemon(cmd, log, **kw):
    """Run a daemon that forks itself: its output goes to LOG, so no pipe
    is left open behind it."""
    with open(log, "ab") as f:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=f,
                           stderr=f, **kw)
    if p.returncode != 0:
        raise Failure("%s exited %d:\n%s" % (" ".join(cmd), p.returncode,
                                             tail(log)))


def load(d):
    try:
        with open(os.path.join(d, "bed.json")) as f:
            return json.load(f)
    except FileNotFoundError:
        raise Failure("no Slurm test bed in %s" % d)


def save(meta):
    tmp = os.path.join(meta["dir"], "bed.json.tmp")
    with open(tmp, "w") as f:
        json.dump(meta, f, indent=1)
    os.replace(tmp, os.path.join(meta["dir"], "bed.json"))


def enter(meta, host):
    """The command prefix that runs a program on HOST."""
    h = meta["hosts"][host]
    return ["nsenter", "--target", str(h["holder"]), "--net", "--uts",
            "--mount", "--"]


def host_env(meta, extra=None):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("SLURM_") or k.startswith("SALLOC_") or \
                k.startswith("SBATCH_"):
            del env[k]
    env["SLURM_CONF"] = os.path.join(meta["dir"], "slurm.conf")
    env.update(extra or {})
    return env


# ------------------------------------------------------------- network ----

def net_up(meta):
    sw = meta["switch"]
    run(["ip", "netns", "add", sw])
    run(["ip", "-n", sw, "link", "add", "br0", "type", "bridge"])
    run(["ip", "-n", sw, "link", "set", "br0", "up"])
    for i, name in enumerate(meta["order"]):
        h = meta["hosts"][name]
        ns, port = h["ns"], "p%d" % i
        run(["ip", "netns", "add", ns])
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
        run(["ip", "-n", ns, "link", "add", "eth0", "type", "veth",
             "peer", "name", port, "netns", sw])
        run(["ip", "-n", ns, "addr", "add", h["addr"] + "/24", "dev", "eth0"])
        run(["ip", "-n", ns, "link", "set", "eth0", "up"])
        run(["ip", "-n", sw, "link", "set", port, "master", "br0"])
        run(["ip", "-n", sw, "link", "set", port, "up"])


def start_holder(meta, name):
    """A process in the host's network namespace with its own UTS and
    mount namespaces: host name set, DIR/hosts over /etc/hosts."""
    h = meta["hosts"][name]
    script = ("hostname %s && mount --bind %s /etc/hosts && "
              "exec sleep infinity" % (name, os.path.join(meta["dir"],
                                                           "hosts")))
    p = subprocess.Popen(
        ["nsenter", "--net=/run/netns/" + h["ns"], "--",
         "unshare", "--uts", "--mount", "--propagation", "private",
         "sh", "-c", script],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True)
    # the holder is ready once it runs sleep in its namespaces
    end = time.monotonic() + 10
    while time.monotonic() < end:
        try:
            with open("/proc/%d/comm" % p.pid) as f:
                if f.read().strip() == "sleep":
                    h["holder"] = p.pid
                    return
        except FileNotFoundError:
            break
        if p.poll() is not None:
            break
        time.sleep(0.02)
    raise Failure("could not make the namespaces of host %s" % name)


# --------------------------------------------------------------- slurm ----

def write_conf(meta, cpus):
    d = meta["dir"]
    nodes = [n for n in meta["order"] if n != "login"]
    lines = [
        "# made by slurmbed: a test cluster, every file under this directory",
        "ClusterName=galleybed",
        "SlurmctldHost=login(%s)" % meta["hosts"]["login"]["addr"],
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        "AuthInfo=socket=%s" % meta["munge_socket"],
        "StateSaveLocation=%s" % os.path.join(d, "login", "state"),
        "SlurmctldPidFile=%s" % os.path.join(d, "login", "slurmctld.pid"),
        "SlurmctldLogFile=%s" % os.path.join(d, "login", "slurmctld.log"),
        "SlurmdSpoolDir=%s" % os.path.join(d, "%n", "spool"),
        "SlurmdPidFile=%s" % os.path.join(d, "%n", "slurmd.pid"),
        "SlurmdLogFile=%s" % os.path.join(d, "%n", "slurmd.log"),
        "SlurmdParameters=config_overrides",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "SchedulerType=sched/builtin",
        "SelectType=select/cons_tres",
        # cores and memory are both consumable, as at most sites: a step
        # asking for the job's whole memory has to fit beside the others
        "SelectTypeParameters=CR_Core_Memory",
        "DefMemPerCPU=400",
        "MpiDefault=none",
        "ReturnToService=2",
        "SlurmctldPort=%d" % meta["ctld_port"],
        "SlurmdPort=%d" % meta["slurmd_port"],
        "SlurmctldTimeout=30",
        "SlurmdTimeout=30",
        "InactiveLimit=0",
        "KillWait=5",
        "MinJobAge=60",
        "MessageTimeout=10",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
    ]
    for n in nodes:
        lines.append("NodeName=%s NodeAddr=%s CPUs=%d RealMemory=1000 "
                     "State=UNKNOWN" % (n, meta["hosts"][n]["addr"], cpus))
    lines.append("PartitionName=bed Nodes=%s Default=YES MaxTime=INFINITE "
                 "State=UP" % ",".join(nodes))
    with open(os.path.join(d, "slurm.conf"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(d, "cgroup.conf"), "w") as f:
        f.write("# no cgroup plugin is configured in this test cluster\n")


def start_munge(meta):
    md = os.path.join(meta["dir"], "munge")
    os.makedirs(md, mode=0o700, exist_ok=True)
    key = os.path.join(md, "munge.key")
    if not os.path.exists(key):
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
    daemon(["munged", "--force", "--socket=" + meta["munge_socket"],
         "--key-file=" + key, "--log-file=" + os.path.join(md, "munged.log"),
         "--pid-file=" + os.path.join(md, "munged.pid"),
         "--seed-file=" + os.path.join(md, "munged.seed")],
           os.path.join(md, "munged.out"))
    # munged forks and writes its pid file; clients need the socket
    end = time.monotonic() + 10
    while not os.path.exists(meta["munge_socket"]):
        if time.monotonic() > end:
            raise Failure("munged did not create %s" % meta["munge_socket"])
        time.sleep(0.05)


def start_daemons(meta):
    d = meta["dir"]
    conf = os.path.join(d, "slurm.conf")
    env = host_env(meta)
    os.makedirs(os.path.join(d, "login", "state"), exist_ok=True)
    daemon(enter(meta, "login") + ["slurmctld", "-f", conf],
           os.path.join(d, "login", "slurmctld.out"), env=env)
    for n in meta["order"]:
        if n == "login":
            continue
        os.makedirs(os.path.join(d, n, "spool"), exist_ok=True)
        daemon(enter(meta, n) + ["slurmd", "-f", conf, "-N", n],
               os.path.join(d, n, "slurmd.out"), env=env)
    # up when every node is idle
    end = time.monotonic() + 60
    want = len(meta["order"]) - 1
    last = ""
    while time.monotonic() < end:
        p = run(enter(meta, "login") + ["sinfo", "-h", "-N", "-o", "%N %t"],
                check=False, env=env)
        last = p.stdout.strip() + p.stderr.strip()
        idle = [l for l in p.stdout.splitlines() if l.split()[-1:] == ["idle"]]
        if len(idle) == want:
            return
        time.sleep(0.3)
    raise Failure("the Slurm nodes did not become idle in 60 s: %s\n%s" % (
        last, tail(os.path.join(d, "login", "slurmctld.log"))))


def tail(path, n=20):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return "(no %s)" % path


# ------------------------------------------------------------ commands ----

def cmd_up(a):
    d = os.path.abspath(a.dir)
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o755)
    if os.path.exists(os.path.join(d, "bed.json")):
        raise Failure("%s already has a test bed" % d)
    tag = "gs" + hashlib.sha1(d.encode()).hexdigest()[:6]
    order = ["login"] + ["node%d" % i for i in range(a.nodes)]
    meta = {"dir": d, "switch": tag + "-sw", "order": order,
            "ctld_port": 6817, "slurmd_port": 6818,
            "munge_socket": os.path.join(d, "munge", "munge.socket"),
            "hosts": {n: {"ns": "%s-%s" % (tag, n),
                          "addr": "%s.%d" % (a.subnet, i + 1)}
                      for i, n in enumerate(order)}}
    with open(os.path.join(d, "hosts"), "w") as f:
        f.write("127.0.0.1 localhost\n")
        for n in order:
            f.write("%s %s %s-ib\n" % (meta["hosts"][n]["addr"], n, n))
    save(meta)
    try:
        net_up(meta)
        for n in order:
            start_holder(meta, n)
        save(meta)
        write_conf(meta, a.cpus)
        start_munge(meta)
        start_daemons(meta)
    except BaseException:
        try:
            cmd_down(a)
        except Failure:
            pass
        raise
    print("Slurm test bed in %s: login + %d nodes (%d CPUs each); "
          "SLURM_CONF=%s" % (d, a.nodes, a.cpus,
                             os.path.join(d, "slurm.conf")))
    return 0


def pids_in(ns):
    p = run(["ip", "netns", "pids", ns], check=False)
    return [int(x) for x in p.stdout.split()] if p.returncode == 0 else []


def cmd_down(a):
    d = os.path.abspath(a.dir)
    meta = load(d)
    # every process of every host: daemons, steps, jobs, holders
    for _ in range(2):
        for n in meta["order"]:
            for pid in pids_in(meta["hosts"][n]["ns"]):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        time.sleep(0.1)
    pidf = os.path.join(d, "munge", "munged.pid")
    try:
        with open(pidf) as f:
            os.kill(int(f.read().strip()), signal.SIGTERM)
    except (OSError, ValueError):
        pass
    for n in meta["order"]:
        run(["ip", "netns", "del", meta["hosts"][n]["ns"]], check=False)
    run(["ip", "netns", "del", meta["switch"]], check=False)
    os.unlink(os.path.join(d, "bed.json"))
    return 0


def cmd_exec(a):
    meta = load(os.path.abspath(a.dir))
    if a.host not in meta["hosts"]:
        raise Failure("no host %s (hosts: %s)" % (a.host,
                                                  " ".join(meta["order"])))
    env = host_env(meta)
    argv = enter(meta, a.host) + a.argv
    os.execvpe(argv[0], argv, env)


def main(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up")
    up.add_argument("--dir", required=True)
    up.add_argument("-N", "--nodes", type=int, default=3)
    up.add_argument("--cpus", type=int, default=2)
    up.add_argument("--subnet", default="10.253.0")
    dn = sub.add_parser("down")
    dn.add_argument("--dir", required=True)
    ex = sub.add_parser("exec")
    ex.add_argument("--dir", required=True)
    ex.add_argument("host")
    ex.add_argument("argv", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    if os.geteuid():
        raise Failure("namespaces and Slurm daemons need root")
    return {"up": cmd_up, "down": cmd_down, "exec": cmd_exec}[a.command](a)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Failure as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        sys.exit(1)
