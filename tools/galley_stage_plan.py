"""galley_stage_plan -- the planner of galley-stage (tools/galley-stage):
which files move where with which layout, the checkpoint rule, the chunks
and the worker each goes to, the plan file galley-stage-worker reads
(format in tools/galley_stage.c), and the CRC32C arithmetic that makes a
file's CRC from its chunks'.  Pure Python; the Galley side is asked
through the object `g` (galley-stage's Galley: list, cat).
"""

import math
import os
import re
import shlex
import socket
import sys
import zlib

PROG = "galley-stage"
RECORD = 128  # bytes of a copynum record (arrays/ga_schema.c)


class Failure(Exception):
    pass


def say(msg):
    print("%s: %s" % (PROG, msg), file=sys.stderr, flush=True)


# ---------------------------------------------------------------- crc ---
# CRC32C of a whole file from its chunks' CRCs in order (zlib's
# crc32_combine over the Castagnoli polynomial).  The operator for a
# length is built once: chunks mostly share one length.

def _times(mat, vec):
    s, i = 0, 0
    while vec:
        if vec & 1:
            s ^= mat[i]
        vec >>= 1
        i += 1
    return s


def _square(mat):
    return [_times(mat, mat[n]) for n in range(32)]


_ops = {}


def _shift_op(length):
    """The matrix that advances a CRC over `length` zero bytes."""
    if length in _ops:
        return _ops[length]
    ident = [1 << n for n in range(32)]
    op = ident
    power = [0x82F63B78] + [1 << n for n in range(31)]  # one zero bit
    power = _square(_square(_square(power)))  # one zero byte
    n = length
    while n:
        if n & 1:
            op = [_times(power, v) for v in op]
        n >>= 1
        if n:
            power = _square(power)
    _ops[length] = op
    return op


def crc_combine(crc1, crc2, len2):
    if len2 == 0:
        return crc1
    return _times(_shift_op(len2), crc1) ^ crc2


# ---------------------------------------------------------- planning ---

def galley_name(s):
    name = s[len("galley:"):] if s.startswith("galley:") else s
    if not name.startswith("/"):
        raise Failure("'%s' is not a Galley name (galley:/NAME)" % s)
    return name


def entry(src, dst, size, lay):
    e = {"src": src, "dst": dst, "size": size}
    e.update(lay)
    return e


def plan_in_pair(src, dst, args):
    """[(local path, galley name, size, mtime in ns)] for one stage-in
    pair."""
    name = galley_name(dst)
    if not os.path.lexists(src):
        raise Failure("source '%s' does not exist" % src)
    out = []
    if os.path.isdir(src):
        base = name.rstrip("/")
        for root, dirs, files in os.walk(src):
            for d in dirs:
                if os.path.islink(os.path.join(root, d)):
                    raise Failure("cannot stage in '%s': a symbolic link to "
                                  "a directory (not followed; name its "
                                  "target)" % os.path.join(root, d))
            dirs.sort()
            for f in sorted(files):
                p = os.path.join(root, f)
                out.append((p, base + "/" + os.path.relpath(p, src)))
    else:
        out.append((src, name + os.path.basename(src)
                    if name.endswith("/") else name))
    res = []
    for p, n in out:
        try:
            st = os.stat(p)
            if not os.path.isfile(p):
                raise Failure("cannot stage in '%s': not a regular file" % p)
            os.close(os.open(p, os.O_RDONLY))
        except OSError as e:
            raise Failure("cannot read '%s': %s" % (p, e.strerror))
        res.append((p, n, st.st_size, st.st_mtime_ns))
    return res


def plan_out_pair(g, src, dst):
    """[(galley name, local path, info)] for one stage-out pair."""
    name = galley_name(src)
    listing = g.list(name)
    if name in listing and not name.endswith("/"):
        d = os.path.join(dst, os.path.basename(name)) \
            if dst.endswith("/") or os.path.isdir(dst) else dst
        pairs = [(name, d)]
    else:
        base = name.rstrip("/") + "/"
        pairs = [(n, os.path.join(dst, n[len(base):]))
                 for n in sorted(listing) if n.startswith(base)]
        if not pairs and name + ".schema" in listing:  # an array group
            pairs = [(n, os.path.join(dst, os.path.basename(n)))
                     for n in sorted(listing) if n.startswith(name + ".")]
    if not pairs:
        raise Failure("no Galley file, directory or array group "
                      "'galley:%s'" % name)
    res = []
    for n, d in pairs:
        info = listing[n]
        if "error" in info:
            raise Failure("cannot stage out 'galley:%s': %s"
                          % (n, info["error"]))
        res.append((n, d, info))
    return res


def read_manifest(path):
    pairs = []
    try:
        with open(path) as f:
            for no, line in enumerate(f, 1):
                words = shlex.split(line, comments=True)
                if not words:
                    continue
                if len(words) != 2:
                    raise Failure("%s:%d: expected 'SOURCE DESTINATION'"
                                  % (path, no))
                pairs.append(tuple(words))
    except OSError as e:
        raise Failure("cannot read manifest '%s': %s" % (path, e.strerror))
    if not pairs:
        raise Failure("manifest '%s' names no files" % path)
    return pairs


def parse_schema(text):
    """The kind and arrays {name: (chunks, slot)} of a schema, or None."""
    lines = text.split("\n")
    if len(lines) < 4 or not lines[0].startswith("galley-array "):
        return None
    kind = lines[1].split()
    arrays = {}
    for line in lines[3:]:
        t = line.split()
        if not t or t[0] != "array":
            break
        try:
            arrays[t[1]] = (int(t[t.index("chunks") + 1]),
                            int(t[t.index("slot") + 1]))
        except (ValueError, IndexError):
            return None
    return (kind[1] if len(kind) == 2 else "?"), arrays


def newest_copy(data):
    """The copy (0/1) of the newest complete record of a copynum file, and
    that record, or (None, None): as arrays/ga_schema.c decodes them."""
    best = (None, None, -1)
    for c in range(2):
        rec = data[c * RECORD:(c + 1) * RECORD]
        text = rec.split(b"\0", 1)[0].decode("ascii", errors="replace")
        m = re.fullmatch(r"(copynum (\d) seq (\d+) step (-?\d+)) crc "
                         r"([0-9a-f]{8})\n", text)
        if not m or int(m.group(2)) != c or int(m.group(3)) < 1:
            continue
        if int(m.group(5), 16) != zlib.crc32(m.group(1).encode()):
            continue
        if int(m.group(3)) > best[2]:
            best = (c, rec, int(m.group(3)))
    return best[0], best[1]


def record(g, f):
    """The bytes of a small Galley file: as listed, else read."""
    if f.get("data") is not None:
        return f["data"]
    return g.call("cat", f["src"], binary=True)


def checkpoint_rule_out(g, files, args):
    """Leave out every checkpoint copy but the newest complete one; the
    copynum files to write instead of copying: [(entry, bytes)]."""
    names = {f["src"]: f for f in files}
    drop, rewritten = set(), []
    for n in list(names):
        if not n.endswith(".schema") or n[:-7] + ".copynum" not in names:
            continue
        group = n[:-7]
        parsed = parse_schema(record(g, names[n]).decode(errors="replace"))
        if not parsed or parsed[0] != "checkpoint":
            continue
        data = record(g, names[group + ".copynum"])
        copy, rec = newest_copy(data)
        if copy is None:
            say("warning: galley:%s holds no complete checkpoint: "
                "only its schema is staged out" % group)
        keep = bytearray(2 * RECORD)
        if rec:
            keep[copy * RECORD:(copy + 1) * RECORD] = rec
        for a in parsed[1]:
            for c in (0, 1):
                if c != copy:
                    drop.add("%s.%s.%d" % (group, a, c))
        cn = names[group + ".copynum"]
        drop.add(cn["src"])
        rewritten.append((cn, bytes(keep)))
    return [f for f in files if f["src"] not in drop], rewritten


def layouts_in(files, args, nservers):
    """Each stage-in file's layout: an array group's from its schema, the
    options' otherwise."""
    default = {"nsub": args.nsub or nservers, "unit": args.unit or 65536,
               "kind": args.layout or "striped", "csum": int(args.csum),
               "fork": "data", "servers": None}
    by_dst = {f["dst"]: f for f in files}
    for f in files:
        f.update(default)
    for f in files:
        if not f["dst"].endswith(".schema"):
            continue
        group = f["dst"][:-7]
        try:
            with open(f["src"], errors="replace") as fh:
                parsed = parse_schema(fh.read(1 << 20))
        except OSError:
            parsed = None
        if not parsed:
            continue
        kind, arrays = parsed
        f.update(nsub=1, fork="schema", kind="striped")
        if group + ".copynum" in by_dst:
            by_dst[group + ".copynum"].update(nsub=1, fork="copynum",
                                              kind="striped")
        for a, (chunks, slot) in arrays.items():
            names = ["%s.%s" % (group, a)] if kind == "timestep" else \
                ["%s.%s.%d" % (group, a, c) for c in (0, 1)]
            for i, n in enumerate(names):
                if n in by_dst:
                    by_dst[n].update(
                        nsub=min(chunks, nservers), unit=slot, kind="striped",
                        fork="data" if kind == "timestep" else "data0_%d" % i)


PAGE = 4096  # chunk boundaries are multiples of it (see chunks_of)


def chunks_of(f, chunk):
    """[(offset, length, server or None)]: the file's chunks, each with
    the one server that holds it whole (None: it spans several).  Every
    boundary but the file's end is a multiple of PAGE, so workers on
    several clients of one shared destination (NFS) never write parts of
    one page; chunk is a multiple of PAGE."""
    size, unit, nsub = f["size"], f["unit"], f["nsub"]
    servers = f.get("servers") or None
    out = []
    if size == 0:
        return out
    if f["kind"] == "striped" and nsub == 1:  # one server holds it all
        srv = servers[0] if servers else None
        return [(o, min(chunk, size - o), srv) for o in range(0, size, chunk)]
    if f["kind"] == "striped" and unit * 2 >= chunk and unit % PAGE == 0:
        # large units: chunks inside a unit, each on the unit's server
        for u in range((size + unit - 1) // unit):
            end = min((u + 1) * unit, size)
            srv = servers[u % nsub] if servers else None
            for off in range(u * unit, end, chunk):
                out.append((off, min(chunk, end - off), srv))
        return out
    # whole rows of stripe units (whole units of a local file), page-sized
    row = math.lcm(unit * nsub if f["kind"] == "striped" else unit, PAGE)
    step = max(1, chunk // row) * row
    return [(o, min(step, size - o), None) for o in range(0, size, step)]


def same_host(a, b, cache={}):
    """Whether host names a and b (a Slurm node, a server address) are one
    machine: equal, one a suffixed form of the other (node0-ib), or the
    same address."""
    if a == b or a.split(".")[0] == b.split(".")[0]:
        return True
    if b.startswith(a + "-") or a.startswith(b + "-"):
        return True

    def addr(h):
        if h not in cache:
            try:
                cache[h] = socket.gethostbyname(h)
            except OSError:
                cache[h] = None
        return cache[h]
    return addr(a) is not None and addr(a) == addr(b)


def local_host(h):
    if h in ("localhost", "::1") or h.startswith("127."):
        return True
    return same_host(socket.gethostname(), h)


def assign(files, chunk, ranks_host, server_hosts):
    """Tasks [(rank, file, off, len)] and placement counts.  ranks_host[r]
    is rank r's host (None: this one)."""
    nr = len(ranks_host)
    load = [0] * nr
    beside = {}
    for s, h in enumerate(server_hosts):
        if all(x is None for x in ranks_host):
            beside[s] = list(range(nr)) if local_host(h) else []
        else:
            beside[s] = [r for r in range(nr)
                         if ranks_host[r] and same_host(ranks_host[r], h)]
    items = []
    for i, f in enumerate(files):
        for off, n, srv in chunks_of(f, chunk):
            items.append((i, off, n, srv))
    # the largest first, each to the least loaded worker allowed
    items.sort(key=lambda t: -t[2])
    tasks, placed, spread, away = [], 0, 0, 0
    for i, off, n, srv in items:
        cand = beside.get(srv) if srv is not None else None
        if srv is None:
            spread += 1
        elif cand:
            placed += 1
        else:
            away += 1
        pool = cand or range(nr)
        r = min(pool, key=lambda x: load[x])
        load[r] += n
        tasks.append((r, i, off, n))
    tasks.sort()
    return tasks, {"beside": placed, "spread": spread, "away": away}


def write_plan(path, direction, files, tasks, nodes=None, per_node=0,
               done=None):
    with open(path, "w") as f:
        f.write("galley-stage-plan 1\ndir\t%s\n" % direction)
        for n in nodes or []:
            f.write("node\t%d\t%s\n" % (per_node, n))
        for i, e in enumerate(files):
            for k in ("src", "dst"):
                if "\t" in e[k] or "\n" in e[k]:
                    raise Failure("cannot stage '%s': a tab or newline in "
                                  "the name" % e[k])
            f.write("file\t%d\t%d\t%d\t%d\t%s\t%d\t%s\t%s\t%s\n"
                    % (i, e["size"], e["nsub"], e["unit"], e["kind"],
                       e["csum"], e["fork"], e["src"], e["dst"]))
        for r, i, off, n in tasks:
            crc = (done or {}).get((i, off, n))
            f.write("task\t%d\t%d\t%d\t%d\t%s\t%08x\n"
                    % (r, i, off, n, "verify" if crc is not None else "copy",
                       crc or 0))


def build(args, g, nservers):
    pairs = read_manifest(args.manifest) if args.manifest else \
        [(args.src, args.dst)]
    files, rewritten = [], []
    keys = ("nsub", "unit", "kind", "csum", "fork", "servers", "mode", "mtime",
            "data")
    for s, d in pairs:
        if args.direction == "in":
            for p, n, size, mtime in plan_in_pair(s, d, args):
                files.append(entry(p, n, size, {"mtime": mtime}))
        else:
            for n, p, info in plan_out_pair(g, s, d):
                files.append(entry(n, p, info["size"],
                                   {k: info[k] for k in keys}))
    if args.direction == "in":
        layouts_in(files, args, nservers)
    elif not args.all_copies:
        files, rewritten = checkpoint_rule_out(g, files, args)
    seen = set()
    for f in files + [r[0] for r in rewritten]:
        if f["dst"] in seen:
            raise Failure("two sources for one destination '%s'" % f["dst"])
        seen.add(f["dst"])
    return files, rewritten
