"""The bash kernel (--lang bash): the system's /bin/bash, its state the shell's own.

Not a module: joined into kernel.py where it says "# @include kernel_bash.py";
it uses kernel.py's globals (Channel, _Files, _pieces, _prctl).

The kernel process (already in its own session, no terminal) runs one bash
as its child, interactive (-i) without a terminal: an interactive shell is
what a user at a prompt has, and the one kind of bash whose ^C aborts the
whole command line (a loop, a function, a pipeline) and goes back to its
prompt with every variable, function, alias, exported variable and the
working folder as they were.  A non-interactive bash either dies of the ^C
or, with a trap, goes on with the next command of the snippet.

bash is started in the standby (before the session needs it), on fd 0 (our
command pipe) and fd 1 (its status pipe to us); at start() it opens the
capture pipes and the relay's message pipe by name (/proc/$PPID/fd/N) at
three high fds, the second of them also its fd 2.  Every fd of ours is
close-on-exec: bash has none of them, so nothing it starts inherits them.

How a snippet reaches it, and its result back:
* a short command line on bash's fd 0 (which bash reads in reads of 1 KiB)
  carries the snippet as a $'...' word, up to 64 KiB; a bigger one goes into
  a memory file (memfd) of ours that mapfile reads whole by name: 10 MB of
  code is never in argv nor in the pipe.  It is evaluated at the top level
  with fd 0 on /dev/null, on the request's stdin (a second memory file) or
  on the run's stdin stream, each opened by name: `read` gets end of input
  at once unless the request brought some;
* the eval's fds 1 and 2 come from the capture pipes' copies, which it
  closes (with the message pipe's), and bash keeps its own 0-2 in saved
  copies that are close-on-exec: what the snippet starts has fds 0-2 only,
  and an `exec >file` lasts its snippet;
* B<seq> as the line begins and, from PROMPT_COMMAND (which an interactive
  bash runs before each prompt, also after a ^C cut a line short), E<seq>
  <status> go to bash's fd 1, unredirected; the same PROMPT_COMMAND sends
  the result to the relay itself (R<seq>, or an error result): we are not
  on its way back, and read the status lines only for a ^C (the readonly
  PROMPT_COMMAND and PS0-2 stay ours);
* fds 1 and 2 are the relay's capture pipes, so output is captured at the fd
  level and apart, in the order written; what background jobs print after
  their snippet's status is late output (the relay stamps it).
^C: the relay writes I<seq> and sends SIGINT to our process group; we send
it on to bash's group, bash's and its foreground commands' (no job control:
they share it), once bash began the line (interrupt()); background jobs
ignore it, as in a shell without job control.  `exit` ends bash: we exit with
its status, and the relay's died path restarts the session (state_lost).
"""
# ---- kernel_bash.py: joined into kernel.py at build time (driver_join.py, "# @include")

BASH_PATH = "/bin/bash"
BASH_NAME_OK = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
BASH_SIGINT_AGAIN = 0.2           # s: a ^C bash lost is sent again after this
BASH_WAIT = 0.05                  # s between looks for bash's exit without a pidfd (Python 3.8)
BASH_DEAF_CHECK = 1.0             # s a snippet runs before we look whether bash went deaf
# read(2)'s number, to tell bash waiting for its next command line (syscall 0
# of /proc/PID/syscall); elsewhere the look is not made.
_BASH_READ_NR = {"x86_64": 0, "aarch64": 63, "i686": 3, "i386": 3, "armv7l": 3,
                 "riscv64": 63, "ppc64le": 3, "s390x": 3}.get(os.uname().machine)
# What a snippet may have taken from under the kernel's hooks, put back: a
# function named builtin (the hooks call \builtin), builtins disabled with
# enable -n.  (Each word may itself be a function of the snippet's: then it
# fails, and the shell is replaced.)
BASH_REPAIR = ("\\unset -f builtin 2>/dev/null; \\builtin enable printf local cd declare "
               "mapfile unset eval set readonly export 2>/dev/null; __ptybox_seq=%d\n")
BASH_INLINE = 64 << 10            # bytes of (quoted) code sent on the command line; more: memfd
# Bytes that $'...' must spell as escapes: control characters, DEL, \ and '.
_BASH_ESCAPES = [b"\\x%02x" % i if i < 0x20 or i == 0x7f else bytes((i,)) for i in range(256)]
for _i, _e in ((0x5c, b"\\\\"), (0x27, b"\\'"), (0x0a, b"\\n"), (0x09, b"\\t"), (0x0d, b"\\r")):
    _BASH_ESCAPES[_i] = _e
_BASH_RARE = bytes(0 if (i < 0x20 and i not in b"\t\n\r") or i == 0x7f else 1 for i in range(256))
del _i, _e


def _bash_quote(s):
    """s as one bash word, single-quoted."""
    return "'" + s.replace("'", "'\\''") + "'"


def _bash_ansi(data):
    """bytes data (no NUL) as one bash word, $'...': on one line, so that the
    whole snippet is in the command line that bash reads and parses at once."""
    data = (data.replace(b"\\", b"\\\\").replace(b"'", b"\\'").replace(b"\n", b"\\n")
            .replace(b"\t", b"\\t").replace(b"\r", b"\\r"))
    if data.translate(_BASH_RARE).find(b"\0") >= 0:   # (escapes done above stay as they are)
        data = b"".join([_BASH_ESCAPES[c] if c != 0x5c and c != 0x27 else bytes((c,))
                         for c in data])
    return b"$'" + data + b"'"


def _bash_fds():
    """Where bash keeps its copies of the capture pipes (its fds 1 and 2 of
    each snippet, again at each one, as the Python kernel re-installs them)
    and of the relay's message pipe (results): high, out of a script's way
    (exec 3>...), below RLIMIT_NOFILE."""
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        soft = 1024
    top = min(soft if soft > 0 else 1024, 256)
    return top - 4, top - 3, top - 2


def _die_with_parent():
    """PR_SET_PDEATHSIG SIGKILL, in the forked child: bash, in a process group
    of its own, goes when we go (a kill of our group does not reach it).
    (Without it, its command pipe's end ends it.)"""
    _prctl(1, 9)                             # PR_SET_PDEATHSIG, SIGKILL


def _place_fds(pairs):
    """In the forked child, before exec: each (src, target) of pairs has src
    at target, whatever overlaps; every other fd closed."""
    targets = {t for _, t in pairs}
    moved = []
    for src, _ in pairs:
        n = os.dup(src)
        while n in targets:                  # (kept open until the closerange)
            n = os.dup(src)
        moved.append(n)
    for n, (_, t) in zip(moved, pairs):
        os.dup2(n, t)
    last = 3
    for t in sorted(targets | {0, 1, 2}):
        if t >= last:
            os.closerange(last, t)
            last = t + 1
    os.closerange(last, 1 << 16)


class _BashKernel(_Files):
    def __init__(self, chan):
        self.chan = chan
        self.home = None                     # file ops' start folder (kernel_files.py)
        self.uploads = {}
        self.put_due = self.put_run = 0
        self.bash = None
        self.status_buf = b""
        self.size = None
        self.seq = None                      # the snippet bash was given last
        self.ended = None                    # ... the last one bash said it ended (E)
        self.repaired = None                 # ... the last one we repaired the hooks for,
        self.repair_told = True              # ... and whether its end (E) came after it
        self.out_keep, self.err_keep, self.msg_keep = _bash_fds()
        # Ours, close-on-exec: bash never has them; it opens what it needs
        # by name (/proc/$PPID/fd/N) for the one command that needs it.
        self.code_file = os.memfd_create("ptybox-code", os.MFD_CLOEXEC)
        self.stdin_file = os.memfd_create("ptybox-stdin", os.MFD_CLOEXEC)
        # Not empty once we sent the running snippet SIGINT: bash's 130 is
        # then "Interrupted", not an ExitStatus (bash looks only on a 130).
        self.int_file = os.memfd_create("ptybox-sigint", os.MFD_CLOEXEC)
        self.int_set = False
        self.stream = None                   # the stdin stream's read end (after start)

    def spawn(self, out=None, err=None):
        """bash on fd 0 (our command pipe) and fd 1 (its status pipe to us),
        and, with out and err, the capture pipes at out_keep and err_keep
        and fd 2, and the relay's message pipe at msg_keep; without them (a
        standby: they come later, attach()) fd 2 on /dev/null and no copy.
        Its start-up line is sent, not awaited (wait_status(0))."""
        cmd_r, self.cmd = os.pipe2(os.O_CLOEXEC)
        self.status, status_w = os.pipe2(os.O_CLOEXEC)
        devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        pairs = [(cmd_r, 0), (status_w, 1)]
        if out is None:
            pairs.append((devnull, 2))
        else:
            pairs += [(err, 2), (out, self.out_keep), (err, self.err_keep),
                      (self.chan.msg, self.msg_keep)]
        pid = os.fork()
        if pid == 0:
            try:
                # (ignored would stay ignored: Python ignores SIGPIPE and
                # SIGXFSZ, and `yes | head` needs its SIGPIPE)
                for sig in (_SIGINT, _signal.SIGPIPE, getattr(_signal, "SIGXFSZ", None)):
                    if sig is not None:
                        _signal.signal(sig, _signal.SIG_DFL)
                os.setpgid(0, 0)
                _die_with_parent()
                # (stderr on /dev/null or the capture: what bash says of its
                # missing job control is no snippet's; it says it on
                # /dev/null when it is a standby's, at its start)
                _place_fds(pairs)
                os.execv(BASH_PATH, [BASH_PATH, "--noprofile", "--norc", "--noediting", "-i"])
            finally:
                os._exit(127)
        self.bash = pid
        try:
            os.setpgid(pid, pid)             # (as the child does: whoever is first)
        except OSError:
            pass
        for fd in (cmd_r, status_w, devnull):
            os.close(fd)
        try:
            self.pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self.pidfd = None
        self.attached = out is not None
        self.status_buf = b""
        os.set_blocking(self.status, False)  # (read when there is something: serve())
        # Status lines (B<seq> as a command line begins, E<seq> <status> as
        # it ends) go to bash's own fd 1: no redirection, one write each;
        # we read them when we need them (a ^C: interrupt()).  The result
        # goes from bash to the relay, in the kernel protocol's words, not
        # through us: R<seq>, or an error result.
        self.command(
            "PS1= PS2= PS0= PS4='+ '; readonly PS1 PS2 PS0; "
            "set +m +H +o history; unset HISTFILE; shopt -s expand_aliases; "
            "__ptybox_seq= __ptybox_pwd=; __ptybox_old=(); "
            # A request's env: exported for its snippet, then as it was.
            "__ptybox_setenv() { if [[ -v $1 ]]; then "
            "__ptybox_old+=(\"$1\" 1 \"${!1}\" \"${!1@a}\"); "
            "else __ptybox_old+=(\"$1\" 0 '' ''); fi; \\builtin export \"$1=$2\"; }; "
            "__ptybox_restore() { \\builtin local __ptybox_i __ptybox_n; "
            "for ((__ptybox_i=${#__ptybox_old[@]}-4; __ptybox_i>=0; __ptybox_i-=4)); do "
            "__ptybox_n=${__ptybox_old[__ptybox_i]}; "
            "if [[ ${__ptybox_old[__ptybox_i+1]} == 1 ]]; then "
            "\\builtin printf -v \"$__ptybox_n\" %s \"${__ptybox_old[__ptybox_i+2]}\"; "
            "[[ ${__ptybox_old[__ptybox_i+3]} == *x* ]] || "
            "\\builtin declare -g +x \"$__ptybox_n\"; "
            "else \\builtin unset -v \"$__ptybox_n\"; fi; done; __ptybox_old=(); }; "
            "__ptybox_done() { \\builtin local s=$?; "
            "if [[ -n $__ptybox_pwd ]]; then \\builtin cd -- \"$__ptybox_pwd\"; fi; "
            "if (( ${#__ptybox_old[@]} )); then __ptybox_restore; fi; "
            "if [[ -n $__ptybox_seq ]]; then \\builtin printf 'E%s %s\\n' \"$__ptybox_seq\" $s; "
            "if [[ $__ptybox_seq == 0 ]]; then :; elif (( s == 0 )); then \\builtin printf 'R%s\\n' \"$__ptybox_seq\" >&MSG; "
            "else __ptybox_fail $s; fi; fi; "
            "__ptybox_seq= __ptybox_pwd= __ptybox_f=; \\builtin unset -v __ptybox_c; }; "
            # (run FILE: FILE's status is ptybox's, as `bash FILE` exits with it)
            "__ptybox_fail() { \\builtin local n=ExitStatus v=$1 x=; "
            "if (( $1 == 130 )) && [[ -s /proc/$PPID/fd/INT ]]; then n=Interrupted v=; "
            "elif [[ -n $__ptybox_f ]]; then x=,\\\"exit\\\":$1; fi; "
            "\\builtin printf '{\"t\":\"result\",\"seq\":%s,\"status\":\"error\",\"result\":null,"
            "\"error\":{\"name\":\"%s\",\"value\":\"%s\",\"traceback\":[]%s}}\\n' "
            "\"$__ptybox_seq\" $n \"$v\" \"$x\" >&MSG; }; "
            "__ptybox_b() { __ptybox_seq=$1; \\builtin printf 'B%s\\n' $1; }; "
            # (a big snippet: from our memory file, by name)
            "__ptybox_m() { \\builtin mapfile -d '' __ptybox_c </proc/$PPID/fd/CODE; }; "
            # (ours stay ours: a snippet that redefines one gets an error, not
            # a shell that never answers again)
            "readonly -f __ptybox_setenv __ptybox_restore __ptybox_done __ptybox_fail "
            "__ptybox_b __ptybox_m; "
            "PROMPT_COMMAND=__ptybox_done; readonly PROMPT_COMMAND; __ptybox_seq=0"
            .replace("CODE", "%d" % self.code_file).replace("MSG", "%d" % self.msg_keep)
            .replace("INT", "%d" % self.int_file))

    def attach(self, out, err, stream):
        """The capture pipes to a bash started without them (a standby's):
        it opens ours by name, they are its copies and its fd 2 from then
        on; (and ours closed, as if bash had had them from its start).
        False if it could not (then a bash started with them takes over)."""
        self.stream = stream
        ok = self.bash is not None and self.wait_status(0) == 0
        if ok:
            # (exec itself: `builtin exec` would undo its redirections after it)
            # (fd 2 last: exec keeps a copy of the old one while it runs, at
            # the first free fd from 254 on, which a later target would undo)
            self.command("__ptybox_seq=0; exec %d>/proc/$PPID/fd/%d "
                         "%d>/proc/$PPID/fd/%d %d>/proc/$PPID/fd/%d 2>&%d"
                         % (self.out_keep, out, self.err_keep, err, self.msg_keep,
                            self.chan.msg, self.err_keep))
            ok = self.wait_status(0) == 0
        if not ok:
            self.kill_bash()
            self.spawn(out, err)
        for fd in (out, err):
            os.close(fd)
        self.attached = True
        return ok or self.wait_status(0) is not None

    def kill_bash(self):
        if self.bash is None:
            return
        try:
            os.killpg(self.bash, _signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(self.bash, 0)
        except ChildProcessError:
            pass
        for fd in (self.cmd, self.status, self.pidfd):
            if fd is not None:
                os.close(fd)
        self.bash = None

    def command(self, line):
        """line (str, or bytes that end in a newline) to bash's command pipe."""
        data = line if type(line) is not str else (
            line.encode("utf-8", "surrogateescape") + b"\n")
        while data:
            try:
                data = data[os.write(self.cmd, data):]
            except InterruptedError:
                pass
            except OSError:
                return                       # (bash is gone: its exit says so)

    def wait_status(self, seq):
        """bash's status for our own command line of seq (its start-up ones:
        a snippet's goes to the relay), or None when bash died."""
        while True:
            while b"\n" in self.status_buf:
                line, self.status_buf = self.status_buf.split(b"\n", 1)
                fields = line[1:].split()
                if line[:1] == b"E" and len(fields) == 2 and fields[0] == b"%d" % seq \
                        and fields[1].isdigit():
                    return int(fields[1])
            fds = [self.status] + ([self.pidfd] if self.pidfd is not None else [])
            try:
                ready = select.select(fds, [], [], None if self.pidfd is not None else BASH_WAIT)[0]
            except InterruptedError:
                continue
            n = len(self.status_buf)
            self.drain_status()
            if len(self.status_buf) > n:
                continue
            if self.status in ready or self.pidfd in ready or (
                    self.pidfd is None and self.bash_gone()):
                return None                  # (its status pipe's end, or its exit)

    def died(self):
        """bash exited (`exit` in a snippet, or killed): so do we, with its
        status, and the relay restarts the session."""
        try:
            _, status = os.waitpid(self.bash, 0)
        except ChildProcessError:
            status = 0
        if os.WIFSIGNALED(status):
            os.kill(os.getpid(), os.WTERMSIG(status))
        os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)

    def execute(self, seq, req):
        """One snippet: its code into the code file, its command line to bash,
        its status back as the result."""
        code = req.get("code")
        if type(code) is not str:
            code = ""
        data = code.encode("utf-8", "surrogateescape")
        code = None
        nul = data.find(b"\0")                # (a shell's string ends there)
        if nul >= 0:
            data = data[:nul]
        # A snippet of up to BASH_INLINE bytes is a word of its command line
        # (bash reads the line in reads of 1 KiB); a bigger one goes through
        # the code file, read whole by mapfile.
        word = _bash_ansi(data) if len(data) <= BASH_INLINE else None
        if word is not None and len(word) > BASH_INLINE:
            word = None
        if word is None:
            os.ftruncate(self.code_file, 0)
            view, at = memoryview(data), 0
            while at < len(data):
                at += os.pwrite(self.code_file, view[at:at + (1 << 20)], at)
            view = None
        data = None
        # B<seq> once bash has read and parsed the whole line: from then on a
        # ^C aborts it cleanly (one during the read would cut the line).
        parts = ["\\__ptybox_b %d;" % seq]
        if "filename" in req:
            parts.append("__ptybox_f=1;")
        if self.chan.size is not None and self.chan.size != self.size:
            self.size = self.chan.size       # (b"COLSxROWS": the client's terminal)
            cols, _, rows = self.size.decode("ascii", "replace").partition("x")
            if cols.isdigit() and rows.isdigit():
                parts.append("export COLUMNS=%s LINES=%s;" % (cols, rows))
        argv = req.get("argv")
        if type(argv) is list and all(type(a) is str for a in argv):
            parts.append("\\builtin set -- %s;" % " ".join(_bash_quote(a) for a in argv[1:]))
        env = req.get("env")
        if type(env) is dict:
            for k, v in env.items():
                if type(v) is not str or not k or not set(k) <= BASH_NAME_OK or k[0].isdigit():
                    return self.error(seq, "ValueError",
                                      "env: %r is not a shell variable's name" % (k,))
                parts.append("__ptybox_setenv %s %s;" % (k, _bash_quote(v)))
        cwd = req.get("cwd")
        if type(cwd) is str:
            parts.append("__ptybox_pwd=$PWD; \\builtin cd -- %s &&" % _bash_quote(cwd))
        if word is None:
            parts.append("\\__ptybox_m &&")
        stdin = req.get("stdin_b64")
        if stdin is not None:
            try:
                os.ftruncate(self.stdin_file, 0)
                at = 0
                for piece in _pieces(stdin):     # (kernel_input.py: decoded a piece at a time)
                    while piece:
                        n = os.pwrite(self.stdin_file, piece, at)
                        at, piece = at + n, piece[n:]
            except (OSError, ValueError, binascii.Error) as e:
                return self.error(seq, "OSError", "stdin: %s" % e)
            redirect = "</proc/$PPID/fd/%d" % self.stdin_file
        elif req.get("stdin_stream") is True and self.stream is not None:
            redirect = "</proc/$PPID/fd/%d" % self.stream
        else:
            redirect = "</dev/null"
        # Our fds are not bash's (it opens them by name when it needs them):
        # its own for the eval are saved close-on-exec (the command pipe, the
        # status pipe) and put back after it, and so are fds 1 and 2, from
        # the capture pipes' copies, closed for the eval: an `exec >&-` of
        # the snippet lasts the snippet, and what it starts has fds 0-2 only.
        parts.append("\\builtin eval %s %s >&%d 2>&%d %d>&- %d>&- %d>&-\n" % (
            "\"${__ptybox_c[0]-}\"" if word is None else "W", redirect, self.out_keep,
            self.err_keep, self.out_keep, self.err_keep, self.msg_keep))
        line = " ".join(parts).encode("utf-8", "surrogateescape")
        if word is not None:
            at = line.rindex(b" W ")
            line = b"".join((line[:at + 1], word, line[at + 2:]))
        word = None
        self.drain_status()
        if not self.repair_told and (b"\n" + self.status_buf).find(
                b"\nE%d " % self.repaired) >= 0:
            self.repair_told = True          # (the hooks ran again after the repair)
        self.status_buf = b""                # (what it says of snippets before: over)
        self.drain_status()
        if self.int_set:
            os.ftruncate(self.int_file, 0)
            self.int_set = False
        self.seq = seq
        self.command(line)
        # Its result goes from bash to the relay: we are not on its way.

    def drain_status(self):
        """What bash said on its status pipe, into status_buf (it must never
        fill up)."""
        while True:
            try:
                data = os.read(self.status, 1 << 16)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            if not data:
                return
            self.status_buf += data
            if len(self.status_buf) > 1 << 16:
                self.status_buf = self.status_buf[-4096:]

    def interrupt(self, seq):
        """The relay's ^C for seq: SIGINT to bash's group once bash began it
        (B<seq>: one during the read of its line would cut it), again every
        BASH_SIGINT_AGAIN while it runs on, as a user presses ^C again (bash
        loses a SIGINT that comes as it forks a command, and a snippet may
        trap it), until it ends (E<seq>); the relay kills it after
        --kill-grace.  Its result comes from bash."""
        began = False
        again = None
        while True:
            self.drain_status()
            for line in self.status_buf.split(b"\n"):
                if line == b"B%d" % seq:
                    began = True
                elif line[:1] == b"E" and line[1:].split(b" ")[0] == b"%d" % seq:
                    return
            now = time.monotonic()
            if began and (again is None or now >= again):
                if not self.int_set:
                    os.pwrite(self.int_file, b"1", 0)
                    self.int_set = True
                again = now + BASH_SIGINT_AGAIN
                try:
                    os.killpg(self.bash, _SIGINT)
                except OSError:
                    pass
            fds = [self.status] + ([self.pidfd] if self.pidfd is not None else [])
            timeout = BASH_WAIT if self.pidfd is None else None
            if again is not None:
                timeout = max(0.0, min(timeout or BASH_SIGINT_AGAIN, again - time.monotonic()))
            try:
                ready = select.select(fds, [], [], timeout)[0]
            except InterruptedError:
                continue
            if self.pidfd in ready or (self.pidfd is None and self.bash_gone()):
                self.died()

    def bash_gone(self):
        try:
            return os.waitpid(self.bash, os.WNOHANG)[0] != 0
        except ChildProcessError:
            return True

    def error(self, seq, name, value, exit=None):
        error = {"name": name, "value": value, "traceback": []}
        if exit is not None:
            error["exit"] = exit
        self.chan.send({"t": "result", "seq": seq, "status": "error", "result": None,
                        "error": error})

    def wait_request(self):
        """Until the relay wrote to us, or bash is gone (then so are we).
        While a snippet runs, a look each BASH_DEAF_CHECK whether bash went
        deaf (deaf())."""
        chan = self.chan
        if any(b"\n" in p[0] for p in chan.parts):
            return
        fds = [chan.req] + ([self.pidfd] if self.pidfd is not None else [])
        while True:
            timeout = None if self.pidfd is not None else BASH_WAIT
            watch = self.seq is not None and self.seq != self.ended and _BASH_READ_NR is not None
            if watch:
                timeout = BASH_DEAF_CHECK
            try:
                ready = select.select(fds, [], [], timeout)[0]
            except InterruptedError:
                continue
            if self.pidfd in ready or (self.pidfd is None and not ready and self.bash_gone()):
                self.died()
            if ready:
                return
            if watch:
                self.deaf()

    def waiting_for_a_line(self):
        """Whether bash sits in a read of its command pipe with nothing in it:
        at its prompt, the snippet over.  Its fd 0 must be that pipe: during a
        snippet it is what the snippet made it (`read x < <(slow)` reads fd 0
        as long as the producer is slow, review1-2)."""
        try:
            with open("/proc/%d/syscall" % self.bash, "rb") as f:
                fields = f.read().split()
            if not (len(fields) > 1 and fields[0] == b"%d" % _BASH_READ_NR
                    and int(fields[1], 16) == 0):
                return False
            ours, theirs = os.fstat(self.cmd), os.stat("/proc/%d/fd/0" % self.bash)
            empty = fcntl.ioctl(self.cmd, termios.FIONREAD, b"\0\0\0\0") == b"\0\0\0\0"
        except (OSError, TypeError, ValueError):
            return False
        return empty and (ours.st_dev, ours.st_ino) == (theirs.st_dev, theirs.st_ino)

    def deaf(self):
        """bash went back to its prompt without the end of the snippet's line
        (E) and its result: the snippet took what the hooks stand on (a
        function named builtin, or enable -n printf: bash lets it).  The
        snippet's result says so, the hooks' builtins are put back (its state
        stays), and if they still do not run, the shell is replaced."""
        seq = self.seq
        if not self.waiting_for_a_line():
            return
        self.drain_status()                  # (its E came before its read: looked at after)
        if (b"\n" + self.status_buf).find(b"\nE%d " % seq) >= 0:
            self.ended = seq
            self.repair_told = self.repair_told or seq == self.repaired
            return
        if not self.repair_told:             # (put back, and still deaf)
            self.kill_bash()
            os._exit(EXIT_NO_RESULT)
        self.repaired, self.repair_told = seq, False
        self.error(seq, "ShellError",
                   "the snippet took what the kernel's hooks stand on (a function named "
                   "builtin, or a builtin disabled with enable -n), so its status was lost; "
                   "the function was removed and the builtins enabled again")
        self.command(BASH_REPAIR % seq)     # (the hooks then say its end: E)

    def serve(self):
        chan = self.chan
        while True:
            self.wait_request()
            seq, body, rest = chan.peek_request()
            if seq is None:                  # an interrupt line: ours, or one that is over
                if self.seq is not None and chan.interrupt_queued(self.seq):
                    chan.parts = rest
                    self.interrupt(self.seq)
                chan.parts = rest
                continue
            chan.parts = rest
            try:
                req = _loads_request(*body)
            except ValueError:
                req = {}
            body = None
            if self.home is None:
                self.home = _file_home()
            op = req.get("op") if type(req) is dict else None
            if op in ("put", "get", "files", "remove"):
                self.file_op(seq, req)
            elif op == "is_complete":        # (each line is a command: the shell's own way)
                chan.send({"t": "reply", "seq": seq, "status": "complete", "indent": ""})
            elif op == "complete":
                n = len(req.get("code") or "")
                chan.send({"t": "reply", "seq": seq, "matches": [], "cursor_start": n,
                           "cursor_end": n})
            else:
                try:
                    self.execute(seq, req if type(req) is dict else {})
                except OSError as e:         # (our files or pipes: no result else)
                    self.error(seq, "OSError", "the bash kernel: %s" % e)


def standby_bash():
    """The bash kernel (standby_python's contract).  In the standby, before
    its pipes come, bash is started and has run its start-up line: a
    session's first snippet does not wait for bash to start.  Its fds 1 and
    2 must be the capture pipes from the snippets' first byte: start() hands
    them to it (attach())."""
    _signal.signal(_SIGINT, _signal.SIG_IGN)
    os.setsid()
    chan = Channel()
    kernel = _BashKernel(chan)
    kernel.bash = None
    # Only the first standby starts bash ahead.  A later one is forked while a
    # kernel runs the session's code, as our uid: an exec'd bash is dumpable,
    # and the code could write its memory through /proc/PID/mem and so live on
    # in the fresh shell of a restart.  (start() starts it when it is not there.)
    if not globals().get("_STANDBY_BESIDE_KERNEL"):
        try:
            kernel.spawn()
        except OSError:                      # (no process now: start() tries again)
            kernel.bash = None

    def start(req, msg, out, err, stdin):
        chan.attach(req, msg)
        # Our own SIGINT (the relay's ^C reaches the group) does nothing here;
        # a handler, not SIG_IGN, so that a bash started now does not inherit it
        # ignored (the standby's was reset to the default before its exec).
        _signal.signal(_SIGINT, lambda *_: None)
        if kernel.bash is None:              # (not started ahead: now, as a standby's
            try:                             # would be, so that what bash says of its
                kernel.spawn()               # start goes to /dev/null, not the capture)
            except OSError:
                kernel.bash = None
        if not kernel.attach(out, err, stdin):
            kernel.died()
        chan.watch(lambda: True)             # (after the fork: bash forks single-threaded)
        chan.write(b"H%d %s\n" % (os.getpid(), sys.version.split()[0].encode("ascii", "replace")))
        while True:
            try:
                kernel.serve()
            except (KeyboardInterrupt, InterruptedError):
                pass
    return start
