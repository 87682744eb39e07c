"""The documentation against the code (seconds; part of ./quickstart test).

Fails when
  - a command in a shell block of README.md, bench/README.md or docs/*.md
    names a subcommand its program no longer has, an option its --help no
    longer lists, or a script of the tree that is gone (galley, galleyd,
    galley-cluster, galley-hosts, ./quickstart, tools/fresh-root; the
    programs inside `galley exec ... --` and `galley-hosts exec`, and in
    "$(...)", are checked too);
  - a relative link, or its #anchor, points at nothing;
  - the code reads a GALLEY_* environment variable that the table of
    docs/configuration.md does not list, or the table lists one that
    nothing reads; a variable of common/gconfig.c's table (what the C
    programs read, what `galley config` prints) has no row there, or
    `galley config` prints other names than that table's;
  - docs/cli.md is not what docs/gen-cli makes of the programs' --help, or
    docs/architecture.svg not what dot makes of docs/architecture.dot.

docs/bench-history.md is a record of past runs: its links are checked,
its commands are not.  galley and galleyd are the built ones
($GALLEY_PREFIX/bin, else the clone's _prefix/bin); the tests that need
them skip, saying why, when they are not built.
"""

import functools
import importlib.machinery
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
PAGES = [REPO / "README.md", REPO / "bench" / "README.md"] + sorted(DOCS.glob("*.md"))
HISTORY = DOCS / "bench-history.md"
SHELL_INFO = {"sh", "bash", "shell", "console"}


def _load_gen_cli():
    loader = importlib.machinery.SourceFileLoader("gen_cli", str(DOCS / "gen-cli"))
    spec = importlib.util.spec_from_loader("gen_cli", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


gen_cli = _load_gen_cli()
_uncached_help = gen_cli.run_help


@functools.lru_cache(maxsize=None)
def _cached_help(argv):
    return _uncached_help(list(argv))


# Each program's help is run once per session, for every test and gen-cli.
gen_cli.run_help = lambda argv: _cached_help(tuple(argv))
BINDIR = gen_cli.default_bindir()


def rel(p):
    return str(Path(p).relative_to(REPO))


# ------------------------------------------------------------ markdown --

def fenced_blocks(text):
    """[(info, first line number, lines)] of the ``` blocks of a page."""
    blocks, cur, info, start = [], None, "", 0
    for n, line in enumerate(text.splitlines(), 1):
        m = re.match(r"^\s*```\s*([\w+-]*)", line)
        if m and cur is None:
            cur, info, start = [], m.group(1).lower(), n + 1
        elif m and cur is not None:
            blocks.append((info, start, cur))
            cur = None
        elif cur is not None:
            cur.append(line)
    return blocks


def slug(heading):
    """GitHub's anchor for a heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def links(path):
    text = Path(path).read_text()
    # inline code spans hide link syntax; fenced blocks are not prose
    body = []
    inblock = False
    for n, line in enumerate(text.splitlines(), 1):
        if re.match(r"^\s*```", line):
            inblock = not inblock
            continue
        if inblock:
            continue
        line = re.sub(r"`[^`]*`", "", line)
        for m in re.finditer(r"\]\(([^)\s]+)\)", line):
            body.append((n, m.group(1)))
    return body


@functools.lru_cache(maxsize=None)
def page_anchors(path):
    seen, out, inblock = {}, set(), False
    for line in Path(path).read_text().splitlines():
        if re.match(r"^\s*```", line):
            inblock = not inblock
            continue
        if inblock:
            continue
        m = re.match(r"^(#{1,6})\s+(.*)$", line)
        if not m:
            continue
        s = slug(m.group(2).replace("`", ""))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else "%s-%d" % (s, n))
    return out


def test_links():
    bad = []
    for page in PAGES:
        for n, target in links(page):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, mailto:
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            where = "%s:%d: %s" % (rel(page), n, target)
            if not dest.exists():
                bad.append(where + " (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in page_anchors(dest):
                bad.append(where + " (no such heading in %s)" % rel(dest))
    assert not bad, "broken links:\n  " + "\n  ".join(bad)


# ------------------------------------------------------------ commands --

def helptext(argv):
    try:
        return gen_cli.run_help(argv)
    except (OSError, RuntimeError, subprocess.SubprocessError) as e:
        raise AssertionError("%s: no help: %s" % (" ".join(argv), e))


def need_built(name):
    p = Path(BINDIR) / name
    if not os.access(p, os.X_OK):
        pytest.skip("%s is not built (%s); ./quickstart build" % (name, p))
    return str(p)


def options_in(text):
    return set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", text))


class Checker:
    """Checks one simple command; collects problems."""

    def __init__(self):
        self.problems = []
        self.seen = set()

    def bad(self, where, msg):
        self.problems.append("%s: %s" % (where, msg))

    # -- galley: one help text, a usage block per command
    @functools.cached_property
    def galley_help(self):
        return helptext([need_built("galley"), "help"])

    @functools.cached_property
    def galley_commands(self):
        cmds = {}
        text = self.galley_help.split("\nOptions")[0]
        cur = None
        for line in text.splitlines():
            m = re.match(r"^  ([a-z]+)(?: ([a-z]+))?\b", line)
            if m:
                name = m.group(1)
                if name == "fork" and m.group(2):
                    name = "fork " + m.group(2)
                cur = cmds.setdefault(name, [])
            if cur is not None:
                cur.append(line)
        return {k: "\n".join(v) for k, v in cmds.items()}

    @functools.cached_property
    def galley_globals(self):
        first = self.galley_help.splitlines()[0]  # usage: galley [-c ..] [-t ..]
        return options_in(first.split("COMMAND")[0])

    def galley(self, where, args):
        glob = self.galley_globals
        i = 0
        while i < len(args) and args[i] in glob:
            i += 2
        if i >= len(args):
            return
        cmd = args[i]
        if cmd == "fork" and i + 1 < len(args):
            cmd = "fork " + args[i + 1]
            i += 1
        if cmd not in self.galley_commands:
            self.bad(where, "`galley %s`: no such command in `galley help`" % cmd)
            return
        allowed = options_in(self.galley_commands[cmd]) | glob
        rest = args[i + 1:]
        for j, a in enumerate(rest):
            if cmd == "exec" and (a == "--" or not a.startswith("-")):
                prev = rest[j - 1] if j else ""
                if a == "--":
                    self.command(where, rest[j + 1:])
                    return
                if prev not in ("-m", "-c", "-t"):
                    self.command(where, rest[j:])
                    return
                continue
            if a.startswith("-") and a != "-" and a not in allowed:
                self.bad(where, "`galley %s %s`: not in `galley help`" % (cmd, a))

    # -- galleyd, quickstart, fresh-root: options in the help text
    def plain(self, where, name, argv, args, subs=None):
        text = helptext(argv)
        allowed = options_in(text)
        if subs is not None:
            known = set(re.findall(r"\./quickstart (\w+)", text))
            words = [a for a in args if not a.startswith("-")]
            if words and words[0] not in known:
                self.bad(where, "`%s %s`: no such command in its usage" % (name, words[0]))
        for j, a in enumerate(args):
            if a == "--":
                if name == "tools/fresh-root":
                    self.command(where, args[j + 1:])
                return
            if a.startswith("-") and a != "-" and a not in allowed:
                self.bad(where, "`%s %s`: not in its help" % (name, a))

    # -- galley-cluster, galley-hosts: argparse with subcommands
    def argparse_tool(self, where, name, args):
        base = gen_cli.programs(BINDIR)[name]
        subs = gen_cli.argparse_subcommands(helptext(base + ["--help"]))
        if not args or args[0].startswith("-"):
            return
        sub = args[0]
        if sub not in subs:
            self.bad(where, "`%s %s`: no such command (%s)" % (name, sub, ", ".join(subs)))
            return
        text = helptext(base + [sub, "--help"])
        allowed = options_in(text)
        takes = set(re.findall(r"(--?[\w-]+) [A-Z_]+", text.split("\n\n")[0]))
        rest = args[1:]
        j = positional = 0
        while j < len(rest):
            a = rest[j]
            if name == "galley-hosts" and sub == "mpiexec" and not a.startswith("--"):
                return  # the rest is mpiexec's
            if a.startswith("-"):
                if a not in allowed:
                    self.bad(where, "`%s %s %s`: not in its --help" % (name, sub, a))
                j += 2 if a in takes else 1
                continue
            positional += 1
            if name == "galley-hosts" and sub == "exec" and positional == 2:
                self.command(where, rest[j:])
                return
            j += 1

    # -- one simple command
    def command(self, where, words):
        words = list(words)
        while words and re.match(r"^[A-Za-z_]\w*=", words[0]):
            words.pop(0)
        while words and words[0] in ("env", "sudo", "time", "exec", "eval", "setsid"):
            words.pop(0)
        if not words:
            return
        for w in words:  # "$(...)" inside an argument
            for inner in re.findall(r"\$\(([^()]*)\)", w):
                for cmd in split_commands(inner):
                    self.command(where, cmd)
        prog, args = words[0], words[1:]
        key = (where, tuple(words))
        if key in self.seen:
            return
        self.seen.add(key)
        progs = gen_cli.programs(BINDIR)
        if prog in ("galley", "_prefix/bin/galley"):
            self.galley(where, args)
        elif prog == "galleyd":
            self.plain(where, "galleyd", [need_built("galleyd"), "--help"], args)
        elif prog in ("galley-cluster", "tools/galley-cluster"):
            self.argparse_tool(where, "galley-cluster", args)
        elif prog in ("galley-hosts", "tools/galley-hosts"):
            self.argparse_tool(where, "galley-hosts", args)
        elif prog in ("./quickstart", "quickstart"):
            self.plain(where, "quickstart", progs["quickstart"], args, subs=True)
        elif prog == "tools/fresh-root":
            self.plain(where, "tools/fresh-root", progs["tools/fresh-root"] + ["--help"], args)
        elif "/" in prog and not prog.startswith(("/", "$", "~", "./", "../")):
            self.path(where, prog)

    def path(self, where, prog):
        top = prog.split("/")[0]
        if top in ("_build", "_prefix"):
            base = Path(os.environ.get("GALLEY_BUILD", REPO / "_build")) if top == "_build" \
                else Path(BINDIR).parent
            if base.is_dir() and not (base / prog.split("/", 1)[1]).exists():
                self.bad(where, "`%s`: not in the build" % prog)
        elif (REPO / top).is_dir() and not (REPO / prog).exists():
            self.bad(where, "`%s`: no such file in the tree" % prog)


def split_commands(line):
    """The simple commands of one shell line, as word lists."""
    lex = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
    lex.whitespace_split = True
    lex.commenters = "#"
    try:
        toks = list(lex)
    except ValueError:  # an unbalanced quote: words as the line shows them
        toks = line.split("#")[0].split()
    cmds, cur = [], []
    for t in toks:
        if t and set(t) <= set(";&|()<>"):
            if cur:
                cmds.append(cur)
            cur = []
            if "<" in t or ">" in t:
                cur = None  # a redirection's target is not a command
            continue
        if cur is None:
            cur = []  # after "> FILE": the command continues; drop FILE
            continue
        cur.append(t)
    if cur:
        cmds.append(cur)
    return cmds


def shell_lines(lines):
    """The logical lines of a shell block: continuations joined, prompts
    and here-document bodies dropped."""
    out, buf, heredoc = [], "", None
    for line in lines:
        if heredoc:
            if line.strip() == heredoc:
                heredoc = None
            continue
        if line.startswith("$ "):
            line = line[2:]
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        buf += line
        m = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", buf)
        if m:
            heredoc = m.group(1)
            buf = buf[:m.start()]
        out.append(buf)
        buf = ""
    if buf:
        out.append(buf)
    return out


def test_commands():
    chk = Checker()
    for page in PAGES:
        if page == HISTORY:
            continue
        for info, start, lines in fenced_blocks(page.read_text()):
            if info not in SHELL_INFO:
                continue
            for line in shell_lines(lines):
                for words in split_commands(line):
                    chk.command("%s (block at line %d)" % (rel(page), start), words)
    assert not chk.problems, "documented commands that no longer work:\n  " + \
        "\n  ".join(chk.problems)


# ------------------------------------------------------- environment --

def tree_files():
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                             cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, check=True).stdout.split()
        files = [REPO / f for f in out]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout
        skip = {"_build", "_prefix", "_run", ".git", "autom4te.cache"}
        files = []
        for d, dirs, names in os.walk(REPO):
            dirs[:] = [x for x in dirs if x not in skip]
            files += [Path(d) / n for n in names]
    return [f for f in files if f.is_file() and DOCS not in f.parents]


def first_line(path):
    try:
        with open(path, "rb") as f:
            return f.readline(200).decode("utf-8", "replace")
    except OSError:
        return ""


@functools.lru_cache(maxsize=None)
def variables_read():
    """GALLEY_* names the code reads: string literals in C and Python,
    ${NAME:-...} defaults in shell scripts."""
    found = {}
    for f in tree_files():
        head = first_line(f)
        if f.suffix in (".c", ".h"):
            pat = r'"(GALLEY_[A-Z0-9_]+)"'
        elif f.suffix == ".py" or re.match(r"#!.*python", head):
            pat = r"""["'](GALLEY_[A-Z0-9_]+)["']"""
        elif re.match(r"#!.*\b(ba)?sh\b", head):
            pat = r"\$\{(GALLEY_[A-Z0-9_]+):?[-=]"
        else:
            continue
        try:
            text = f.read_text(errors="replace")
        except OSError:
            continue
        for name in re.findall(pat, text):
            found.setdefault(name, rel(f))
    return found


def documented_variables():
    text = (DOCS / "configuration.md").read_text()
    return set(re.findall(r"^\| `(GALLEY_[A-Z0-9_]+)` \|", text, re.M))


def test_env_variables_documented():
    read, table = variables_read(), documented_variables()
    missing = sorted("%s (read in %s)" % (v, read[v]) for v in set(read) - table)
    assert not missing, "GALLEY_* variables missing from docs/configuration.md:\n  " + \
        "\n  ".join(missing)


def gconfig_variables():
    """The names of common/gconfig.c's table: its rows' name arguments
    (STR(G_CFG_X, "GALLEY_X", ...) and the like)."""
    text = (REPO / "common" / "gconfig.c").read_text()
    body = text[text.index("table[G_CFG_COUNT] = {"):]
    row = r'^\s+(?:INT|DBL|BOOL|STR|ENUM)\(\s*G_CFG_\w+,\s*"(GALLEY_[A-Z0-9_]+)"'
    return re.findall(row, body, re.M)


def test_gconfig_table_documented():
    names = gconfig_variables()
    assert len(names) >= 20, "common/gconfig.c: its table was not found"
    missing = sorted(set(names) - documented_variables())
    assert not missing, "variables of common/gconfig.c missing from " \
        "docs/configuration.md:\n  " + "\n  ".join(missing)


def test_galley_config_prints_the_table():
    galley = need_built("galley")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GALLEY_")}
    p = subprocess.run([galley, "config"], stdout=subprocess.PIPE, env=env,
                       text=True, timeout=60, check=True)
    printed = re.findall(r"^(GALLEY_[A-Z0-9_]+)  +\(default\)  ", p.stdout, re.M)
    assert printed == gconfig_variables(), p.stdout


def test_env_table_not_stale():
    stale = sorted(documented_variables() - set(variables_read()))
    assert not stale, "docs/configuration.md lists variables nothing reads: " + ", ".join(stale)


# ------------------------------------------------------ generated pages --

def test_cli_page_current():
    need_built("galley")
    need_built("galleyd")
    want = gen_cli.page(BINDIR)
    have = (DOCS / "cli.md").read_text()
    assert have == want, "docs/cli.md is out of date: run docs/gen-cli >docs/cli.md"


def test_architecture_svg_current():
    if not shutil.which("dot"):
        pytest.skip("graphviz (dot) is not installed")
    p = subprocess.run(["dot", "-Tsvg", str(DOCS / "architecture.dot")],
                       stdout=subprocess.PIPE, check=True)
    assert p.stdout == (DOCS / "architecture.svg").read_bytes(), \
        "docs/architecture.svg is out of date: dot -Tsvg docs/architecture.dot -o docs/architecture.svg"
