"""Packages and escapes: the session's package folder on sys.path, and the
lines a notebook user types that are not Python: `!command` (a shell
command) and `%pip install ...` (and `!pip install ...`), as IPython has them.

The folder is PTYBOX_PACKAGES (ptybox --packages: a mounted one outlives
the session) or /tmp/.ptybox-packages (the sandbox's /tmp: the session's
own, kept across kernel restarts).  It sits on sys.path from the start,
before the interpreter's site-packages (and after the standard library, so
that a package cannot shadow it).  pip installs there with --target, from
PTYBOX_WHEELS (--wheels: --no-index --find-links) or the network (--net,
or a default route), or tells at once that it has neither.

The escapes are rewritten before the snippet is compiled, line for line (a
traceback keeps the user's line numbers and shows the user's text): a
logical line that starts with ! or % (after its indentation; never inside a
string, a bracket or a continued line) becomes a call of the builtin
__ptybox_magic__, which the kernel puts back before each snippet, like
display().  Everything else is left exactly as it was.

Not a module: a part of the Kernel class (a mixin), joined into kernel.py
where it says "# @include kernel_packages.py"; it uses kernel.py's globals.
"""
# ---- kernel_packages.py: joined into kernel.py at build time (driver_join.py, "# @include")

PACKAGES_DEFAULT = "/tmp/.ptybox-packages"
MAGIC_NAME = "__ptybox_magic__"   # the builtin that escaped lines call
NO_SOURCE = "pip install needs the network (--net) or a wheel folder (--wheels DIR)"


def _all_local(args):
    """Whether every requirement of a pip install is a file or folder here
    (./pkg.whl, ./src): then pip needs no index, nor the network."""
    reqs = [a for a in args if not a.startswith("-")]
    return bool(reqs) and len(reqs) == len(args) and all(
        os.path.exists(os.path.expanduser(a)) for a in reqs)
PIP_NET_FLAGS = ("--retries", "1", "--timeout", "10")   # one retry, not pip's 5 (8 s)
RTF_UP, RTF_REJECT = 0x1, 0x200
# python3 -I -c PIP_WITH_FOLDER FOLDER ARGS: pip ARGS with FOLDER on sys.path
# where the kernel puts it, before the first site-packages.
PIP_WITH_FOLDER = (
    "import runpy, sys\n"
    "p = sys.argv.pop(1)\n"
    "at = [k for k, d in enumerate(sys.path) if d.endswith(('site-packages', 'dist-packages'))]\n"
    "sys.path.insert(at[0] if at else len(sys.path), p)\n"
    "runpy.run_module('pip', run_name='__main__', alter_sys=True)\n")


class UsageError(Exception):
    """A line the kernel cannot run as asked: an unknown %magic, pip with no
    way to packages.  (Named as IPython names it, without a module.)"""


UsageError.__module__ = "builtins"


def _default_route():
    """Whether the sandbox has a route out: a default route (IPv4 or IPv6)
    that is up, not a reject route, on an interface other than lo.  The
    sandbox without --net has only lo (with an unreachable ::/0 on it)."""
    try:
        with open("/proc/net/route") as f:
            for row in f.read().splitlines()[1:]:
                col = row.split()
                if (len(col) >= 8 and col[0] != "lo" and col[1] == "00000000"
                        and col[7] == "00000000" and int(col[3], 16) & RTF_UP):
                    return True
    except (OSError, ValueError):
        pass
    try:
        with open("/proc/net/ipv6_route") as f:
            for row in f.read().splitlines():
                col = row.split()
                if (len(col) >= 10 and col[9] != "lo" and col[1] == "00"
                        and int(col[0], 16) == 0 and int(col[8], 16) & RTF_UP
                        and not int(col[8], 16) & RTF_REJECT):
                    return True
    except (OSError, ValueError):
        pass
    return False


def _lines(code):
    """code's lines, each with its end, split where Python's tokenizer splits
    them: at \\r\\n, \\r and \\n only (str.splitlines also splits at \\v, \\f,
    \\x1c-\\x1e, \\x85, \\u2028 and \\u2029, which may sit in a string or a
    comment)."""
    parts = code.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    if "\r" not in code:
        return out
    split = []
    for line in out:
        segs = line.split("\r")
        split.extend(seg + "\r" for seg in segs[:-1])
        if segs[-1] == "\n" and len(segs) > 1:
            split[-1] += "\n"
        elif segs[-1]:
            split.append(segs[-1])
    return split


def _escape(code):
    """(code with its escaped lines made calls, whether its last escaped
    line ends in a backslash that nothing follows).  The same number of
    lines: a command continued by backslashes becomes one call and blank
    lines.  The scan knows strings (triple-quoted ones span lines),
    comments, brackets and backslash continuations: a line that starts
    inside one of those is Python's, whatever its first character."""
    lines = _lines(code)
    out, i, depth, quote, cont, dangling = [], 0, 0, None, False, False
    while i < len(lines):
        line = lines[i]
        i += 1
        s = line.lstrip(" \t")
        if depth == 0 and quote is None and not cont and s[:1] in ("!", "%"):
            indent = line[:len(line) - len(s)]
            kind = "%%" if s.startswith("%%") else s[0]
            body = s[len(kind):].lstrip("!") if kind == "!" else s[len(kind):]
            body = body.rstrip("\r\n")
            blank = 0
            while body.endswith("\\") and i < len(lines):   # (joined as IPython joins them)
                body = body[:-1].rstrip() + " " + lines[i].strip()
                line = lines[i]
                i += 1
                blank += 1
            dangling = body.endswith("\\")
            if dangling:
                body = body[:-1].rstrip()
            end = line[len(line.rstrip("\r\n")):]     # (the last line's, or none: codeop minds)
            call = "%s%s(%r, %r)" % (indent, MAGIC_NAME, kind, body.strip())
            out.append((call + "\n" + "\n" * blank)[:-1] + end if blank else call + end)
            continue
        dangling = False
        depth, quote, cont = _escape_scan(line, depth, quote)
        out.append(line)
    return "".join(out), dangling


def _escape_scan(line, depth, quote):
    """(bracket depth, open string's quote or None, continued?) after line."""
    j, n = 0, len(line)
    while j < n:
        c = line[j]
        if quote is not None:
            if c == "\\":
                j += 2
                continue
            if line.startswith(quote, j):
                j += len(quote)
                quote = None
                continue
            j += 1
            continue
        if c == "#":
            break
        if c in "'\"":
            quote = c * 3 if line.startswith(c * 3, j) else c
            j += len(quote)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        elif c == "\\" and line[j + 1:].strip("\r\n") == "":
            return depth, None, True
        j += 1
    if quote is not None and len(quote) == 1 and not line.rstrip("\r\n").endswith("\\"):
        quote = None                         # (an unclosed '...': compile will say)
    return depth, quote, False


def _escaped(code):
    """code as it is compiled: the escapes rewritten, if it has any (quick
    when it has none, as nearly every snippet)."""
    if "!" not in code and "%" not in code:
        return code
    for line in _lines(code):
        if line.lstrip(" \t")[:1] in ("!", "%"):
            return _escape(code)[0]
    return code


class _Packages:
    """The package folder, pip, and the shell escape."""

    def _packages_init(self):
        """The folder on sys.path (made now if it is the default: under a
        /tmp shared with others, --via none, a folder someone else made is
        not ours to import from), and the builtin that escaped lines call.
        (The environment stays the allow-list's: no PTYBOX_PACKAGES added.)"""
        self.magic = self._magic
        given = os.environ.get("PTYBOX_PACKAGES")
        path = os.path.abspath(given or PACKAGES_DEFAULT)
        self.packages, self.packages_bad = path, None
        if not given:
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                pass
            except OSError as e:
                self.packages_bad = "%s: %s" % (path, e.strerror)
            if self.packages_bad is None:
                try:
                    st = os.lstat(path)
                    if (not (st.st_mode & 0o170000 == 0o040000) or st.st_uid != os.getuid()
                            or st.st_mode & 0o022):
                        self.packages_bad = "%s: not a folder of ours alone" % path
                except OSError as e:
                    self.packages_bad = "%s: %s" % (path, e.strerror)
        if self.packages_bad is None:
            self._packages_place()
        _BUILTINS[MAGIC_NAME] = self.magic

    def _packages_place(self):
        """The folder before the first site-packages on sys.path (or last);
        again after site has added them (the first kernel imports site
        late: -S)."""
        path = self.packages
        if self.packages_bad is not None:
            return
        try:
            while path in sys.path:
                sys.path.remove(path)
            at = len(sys.path)
            for k, p in enumerate(sys.path):
                if type(p) is str and p.endswith(("site-packages", "dist-packages")):
                    at = k
                    break
            sys.path.insert(at, path)
        except Exception:                    # (user code made sys.path something else)
            pass

    def _magic(self, kind, line):
        """One escaped line, run: what __ptybox_magic__(kind, line) does."""
        if kind == "!":
            word = line.split(None, 1)
            if word and word[0] in ("pip", "pip3"):
                return self._pip(line[len(word[0]):])
            return self._shell(line)
        name = line.split(None, 1)[0] if line.strip() else ""
        if kind == "%" and name == "pip":
            return self._pip(line.strip()[3:])
        raise UsageError("%s%s is not a ptybox magic" % (kind, name))

    def _shell(self, command):
        """/bin/sh -c command, its output the snippet's (fds 1 and 2), its
        status in _exit_code (128+N for a signal N): a failure does not
        raise, as in IPython."""
        import subprocess
        if not command.strip():
            raise UsageError("! needs a command, e.g. !ls")
        proc = subprocess.Popen(["/bin/sh", "-c", command])
        return self._wait(proc)

    def _wait(self, proc):
        try:
            code = proc.wait()
        except BaseException as e:           # ^C: the command had it too (our group)
            try:
                proc.wait(timeout=1)
            except BaseException:
                proc.kill()
                proc.wait()
            if isinstance(e, KeyboardInterrupt):
                raise KeyboardInterrupt from None    # (no subprocess frames to show)
            raise
        self.ns["_exit_code"] = code if code >= 0 else 128 - code
        return None

    def _pip(self, args):
        """python3 -m pip ARGS; for install, into the package folder, from
        the wheel folder or the network, and an error at once with neither.
        Its output streams as the snippet's; _exit_code is its status."""
        import shlex, subprocess
        try:
            argv = shlex.split(args)
        except ValueError as e:
            raise UsageError("pip %s: %s" % (args.strip(), e)) from None
        import importlib.util
        if importlib.util.find_spec("pip") is None:
            raise UsageError("pip is not installed here (Debian: apt install python3-pip)")
        extra = []
        if argv and argv[0] == "install":
            if self.packages_bad is not None:
                raise UsageError("pip install: the package folder %s" % self.packages_bad)
            wheels = os.environ.get("PTYBOX_WHEELS")
            net = os.environ.get("PTYBOX_NET")
            if wheels:
                if not os.path.isdir(wheels):
                    raise UsageError("pip install: the wheel folder %s is not there" % wheels)
                extra = ["--no-index", "--find-links", wheels]
            elif net == "1" or (net != "0" and _default_route()):
                extra = list(PIP_NET_FLAGS)
            elif "--no-index" in argv or _all_local(argv[1:]):
                extra = ["--no-index"]       # (./x.whl, a folder: pip needs no source)
            else:
                raise UsageError(NO_SOURCE)
            try:
                os.makedirs(self.packages, exist_ok=True)
            except OSError as e:
                raise UsageError("pip install: %s: %s" % (self.packages, e.strerror)) from None
            # --upgrade: what is resolved replaces what the folder holds
            # (--target resolves afresh anyway, and would keep the old one).
            extra = ["--target", self.packages, "--upgrade"] + extra
        elif argv and argv[0] in ("list", "freeze"):
            extra = ["--path", self.packages]
        env = dict(os.environ)
        env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1",
                   PIP_ROOT_USER_ACTION="ignore", PIP_NO_CACHE_DIR="1",
                   PIP_BREAK_SYSTEM_PACKAGES="1", PIP_NO_WARN_SCRIPT_LOCATION="1")
        cmd = [sys.executable, "-I", "-m", "pip"] + argv[:1] + extra + argv[1:]
        if argv and argv[0] in ("show", "uninstall") and self.packages_bad is None:
            # These take no --path: pip sees the folder where the kernel has it
            # on sys.path (-I ignores PYTHONPATH).
            cmd = [sys.executable, "-I", "-c", PIP_WITH_FOLDER, self.packages] + argv
        proc = subprocess.Popen(cmd, env=env)
        try:
            return self._wait(proc)
        finally:
            if argv and argv[0] in ("install", "uninstall"):
                self._packages_fresh()

    def _packages_fresh(self):
        """What pip just wrote, importable by the next import: the finders'
        caches dropped (one for a folder that was not there is None)."""
        import importlib
        sys.path_importer_cache.pop(self.packages, None)
        importlib.invalidate_caches()
        self._packages_place()
