"""The relay's fork server (the template): forked before the nonce was read,
it forks each kernel (one standby ahead), hands it its pipes, and reports
its pid and its exit; and the fd passing between relay and template.

Not a module: joined into relay.py where it says "# @include
relay_template.py"; it uses relay.py's globals.
"""
# ---- relay_template.py: joined into relay.py at build time (driver_join.py, "# @include")

def _send_fds(sock, msg, fds):
    sock.sendmsg([msg], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS,
                          b"".join(fd.to_bytes(4, sys.byteorder) for fd in fds))])


def _recv_fds(sock, count):
    """(message, fds) from sock: b"" at its end, None if a signal cut it short."""
    try:
        msg, anc, _, _ = sock.recvmsg(16, _socket.CMSG_SPACE(4 * count))
    except InterruptedError:
        return None, []
    except OSError:
        return b"", []
    fds = []
    for level, kind, data in anc:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds += [int.from_bytes(data[i:i + 4], sys.byteorder)
                    for i in range(0, len(data) - len(data) % 4, 4)]
    return msg, fds


def _start_template(kernel_code, lang):
    """The template, forked before the nonce (it knows no secret) and before
    anything else: (its pid, our end of its socket)."""
    for sig in (_signal.SIGINT, _signal.SIGHUP, _signal.SIGTERM, _signal.SIGQUIT):
        _signal.signal(sig, _signal.SIG_IGN if sig == _signal.SIGINT else _signal.SIG_DFL)
    mine, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        try:
            mine.close()
            _template(theirs, kernel_code, lang)   # (fds 0-2, the terminal, go to /dev/null)
        finally:
            os._exit(1)
    theirs.close()
    return pid, mine


def _template(ctl, kernel_code, lang):
    """The fork server, in a child forked before the nonce was read: runs the
    kernel's module code once (and site, after the first kernel's start),
    keeps one kernel forked ahead (a standby, started as far as it can be
    without its fds: a restart then costs no fork and little start), hands
    it the fds the relay sends, reports its pid and its exit.  Single-threaded, runs no user
    code and holds nothing secret; when the relay goes, it takes its
    kernels along.  It stays in our process group, so that a client that
    kills the group kills it too (and its kernels with it: kernel.py's
    watchdog)."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    fd = ctl.detach()
    if fd != 3:
        os.dup2(fd, 3)
    try:
        limit = os.sysconf("SC_OPEN_MAX")
    except (ValueError, OSError):
        limit = 1024
    os.closerange(4, max(limit, 1024))       # the terminal's fd among them
    ctl = _socket.socket(fileno=3)
    # Every later kernel is a fork of this process: a kernel (the code's, as
    # our uid) that could write our memory through /proc/PID/mem would plant
    # itself in all of them, and a restart would not give fresh state.  Not
    # dumpable, neither are the standbys forked from here until their start.
    _no_dump()
    wake_r, wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
    kids = set()

    def reap(*_):
        """Exits reported from the signal handler, so that they come also
        while the template is busy for long (importing site, below).  A
        report is one short line: a single send, never split by another
        (the socket's buffer holds thousands, and the relay reads it)."""
        while kids:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if not pid:
                return
            kids.discard(pid)
            ctl.sendall(b"X%d %d\n" % (pid, status))

    _signal.signal(_signal.SIGCHLD, reap)
    _signal.signal(_signal.SIGHUP, _signal.SIG_IGN)
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    _signal.set_wakeup_fd(wake_w)
    space = {"__name__": "__ptybox_kernel__", "__builtins__": builtins}
    exec(kernel_code(), space)
    # One kind of kernel per relay: standby_<lang>() (kernel.py's contract).
    prepare_kernel = space.get("standby_" + lang) if lang.isalpha() else None
    if prepare_kernel is None:
        os._exit(EXIT_NO_KERNEL)            # (the client checks the language first)
    if lang == "python":
        space["prepare"]()

    def fork_standby():
        """A kernel forked ahead, or None if no process can be made now (the
        session's pids limit: a fork bomb of the code's, say).  It starts
        all it can before its fds come (kernel.py's standby_python())."""
        mine, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            pid = os.fork()
        except OSError:
            mine.close()
            theirs.close()
            return None
        if pid == 0:
            try:
                _signal.set_wakeup_fd(-1)
                for sig in (_signal.SIGCHLD, _signal.SIGHUP, _signal.SIGINT):
                    _signal.signal(sig, _signal.SIG_DFL)
                for f in (wake_r, wake_w):
                    os.close(f)
                ctl.close()
                mine.close()
                # (A standby forked while a kernel may run code must not start
                # a process ahead that the code could reach: kernel_bash.py.)
                space["_STANDBY_BESIDE_KERNEL"] = started > 0
                start = prepare_kernel()
                msg, fds = None, []
                while msg is None:
                    msg, fds = _recv_fds(theirs, 5)
                if msg != b"S" or len(fds) != 5:
                    os._exit(0)              # (the template is gone)
                theirs.close()
                # A kernel now: dumpable again (its own code may read its
                # /proc, and bash opens our pipes by /proc/$PPID/fd).
                _prctl(4, 1)                 # PR_SET_DUMPABLE
                start(*fds)                  # req, msg_w, out_w, err_w, stdin_r
            finally:
                os._exit(1)
        theirs.close()
        kids.add(pid)
        return pid, mine

    started = 0                              # kernels handed out
    standby = fork_standby()
    standby_due = None if standby else time.monotonic() + STANDBY_DELAY
    while True:
        timeout = None if standby_due is None else max(0.0, standby_due - time.monotonic())
        try:
            ready = select.select([3, wake_r], [], [], timeout)[0]
        except InterruptedError:
            continue
        if wake_r in ready:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
        reap()                               # (the handler's wake-up, or one it missed)
        if standby is None and standby_due is not None and time.monotonic() >= standby_due:
            if "site" not in sys.modules and lang == "python":
                _site()                      # (once, after the first kernel's start)
            standby = fork_standby()
            standby_due = None if standby else time.monotonic() + STANDBY_RETRY
        if 3 not in ready:
            continue
        msg, fds = _recv_fds(ctl, 5)
        if msg is None:
            continue
        if not msg:                          # the relay is gone: so are its kernels
            for pid in list(kids):
                try:
                    os.killpg(pid, _signal.SIGKILL)
                except OSError:
                    pass
                try:
                    os.kill(pid, _signal.SIGKILL)
                except OSError:
                    pass
            os._exit(0)
        if msg != b"S" or len(fds) != 5:
            for fd in fds:
                os.close(fd)
            continue
        deadline = time.monotonic() + FORK_WAIT
        while True:
            if standby is None:
                standby = fork_standby()
            if standby is not None:
                pid, sock = standby
                try:
                    _send_fds(sock, b"S", fds)
                    break
                except OSError:              # it died: one forked now takes over
                    sock.close()
                    standby = None
                    continue
            if time.monotonic() >= deadline:
                break
            time.sleep(STANDBY_RETRY / 10)   # (no process to be had: a moment for one)
        for fd in fds:
            os.close(fd)
        if standby is None:
            ctl.sendall(b"F\n")             # no kernel: the relay counts it a failed start
            continue
        sock.close()
        ctl.sendall(b"P%d\n" % pid)
        # The next one at once, to be there for a restart soon after this
        # one; but not during the first kernel's start (the session's cold
        # start), which site would slow down as well.
        delay = STANDBY_DELAY if started else FIRST_STANDBY_DELAY
        standby, standby_due = None, time.monotonic() + delay
        started += 1


def _site():
    """site, imported as without -S, in the template: every kernel forked
    from then on has it (the first imports it itself, when idle: kernel.py's
    _DeferredSite).  Under -I it runs only what the interpreter's own
    installation holds (no user site, no environment, no working folder),
    as trusted as the standard library the relay imports from; and no
    snippet, nothing the session wrote."""
    if not sys.flags.isolated:               # (a transport of its own, run without -I)
        return
    try:
        import site
        site.main()
        import linecache                     # (for tracebacks, as the kernel's does)
    except BaseException:
        sys.modules.pop("site", None)        # each kernel tries, as the first does
