"""The kernel's life, as the relay sees it: a fresh one on fresh pipes
(spawn), its kill, what it left swept away, its death reported (died), and
the template's reports; when the template is gone, the orphaned kernel's.

Not a module: a part of the Relay class (a mixin), joined into relay.py
where it says "# @include relay_kernel.py"; it uses relay.py's globals.
"""
# ---- relay_kernel.py: joined into relay.py at build time (driver_join.py, "# @include")

class _Life:
    # -- the kernel's life
    def spawn(self):
        """A fresh kernel on fresh pipes (a leftover process of the old one
        holding its pipes writes into nothing)."""
        for fd in (self.req, self.msg) + tuple(o.fd for o in self.outs):
            if fd is not None:
                os.close(fd)
        self.tty_master = None
        if self.tty_spare is not None:
            os.close(self.tty_spare)
            self.tty_spare = None
        self.grown = set()                   # (fresh pipes, maybe at old numbers)
        req_r, req_w = _pipe()
        msg_r, msg_w = _pipe()
        if self.stdin_w is not None:
            os.close(self.stdin_w)           # (what the old kernel did not read is gone)
            self.stdin_w = None
        in_r, in_w = _pipe()
        out_r, out_w = _pipe() if not self.tty_mode else self.openpty()
        err_r, err_w = _pipe()
        if self.tty_mode:
            # One terminal for fds 1 and 2, as a terminal is: the stderr pipe
            # has no writer but us, and says nothing.
            self.tty_spare, err_w = err_w, out_w
        try:
            _send_fds(self.ctl, b"S", (req_r, msg_w, out_w, err_w, in_r))
        except OSError:
            self.exit(EXIT_NO_KERNEL)        # the template is gone
        for fd in {req_r, msg_w, out_w, err_w, in_r}:
            os.close(fd)
        if self.stdin_eof and self.stdin_buf is None:
            os.close(in_w)                   # (the stream ended before: end of file at once)
        else:
            os.set_blocking(in_w, False)
            self.stdin_w = in_w
        self.req, self.msg = req_w, msg_r
        os.set_blocking(req_w, False)
        os.set_blocking(msg_r, False)
        self.outs = (_Out("stdout", out_r), _Out("stderr", err_r))
        self.out_poll = select.poll()
        for o in self.outs:
            self.out_poll.register(o.fd, select.POLLIN)
        for o in self.outs:
            o.period(self.last, True, self.max_output)
        self.wbuf = _WriteQueue()
        self.msg_lines = _Lines(_frame_cap(self.max_output))
        self.kernel, self.kernel_up, self.hello_early = None, False, None
        self.hello_by = time.monotonic() + HELLO_WAIT
        self.size_sent = False               # (a fresh kernel: its environment is fresh)
        self.poller = None

    def openpty(self):
        """--tty: a terminal of the kernel's own (master, slave), never ours:
        the kernel gets the slave as fds 1 and 2 (not as its controlling
        terminal: /dev/tty still cannot be opened), we read the master as a
        capture pipe.  Output as written (no CR added), no echo; reads end at once."""
        master, slave = os.openpty()
        try:
            attrs = termios.tcgetattr(slave)
            attrs[1] &= ~termios.OPOST
            attrs[3] &= ~(termios.ECHO | termios.ICANON | termios.ISIG | termios.IEXTEN)
            # A read of it (no one writes to the master) ends at once with
            # nothing, as a read of the terminal must: never a hang.
            attrs[6][termios.VMIN], attrs[6][termios.VTIME] = 0, 0
            termios.tcsetattr(slave, termios.TCSANOW, attrs)
        except termios.error:
            pass
        master = self.tty_master = _private(master)
        self.size_tty()
        return master, _private(slave)

    def size_tty(self):
        """The kernel's terminal takes the client's size; without one 80x24,
        as a terminal without a size is taken to be (not 0x0)."""
        if self.tty_master is None:
            return
        cols, rows = map(int, (self.size or TTY_SIZE).split(b"x"))
        try:
            fcntl.ioctl(self.tty_master, termios.TIOCSWINSZ,
                        rows.to_bytes(2, sys.byteorder) + cols.to_bytes(2, sys.byteorder)
                        + bytes(4))
        except OSError:
            pass

    def retty(self):
        """The tty request: the kernel, which has run no snippet, replaced by
        one on a terminal of its own, quietly (neither died nor ready is
        sent: to the client it is the same kernel)."""
        self.tty_mode = True
        if not self.kernel_up or self.kernel is None:
            self.retty_due = True            # (done at its hello)
            return
        _kill_group(self.kernel)
        self.quiet_hello = True              # its exit is not told: no pid matches it
        self.spawn()

    def kill(self):
        """SIGKILL to the kernel and its process group; its exit comes from
        the template (died())."""
        if self.orphan:
            self.orphan_died()
        if self.kernel and self.killing is None:
            _kill_group(self.kernel)
            self.killing = time.monotonic() + KILL_WAIT
        elif not self.kernel and self.hello_by is not None:
            self.kill_pending = True         # (no pid yet: as soon as there is one)

    def sweep(self, dead=None):
        """When a kernel is gone, in a pid namespace of our own (we are its pid
        2): every process it left behind goes too, daemons included, so a
        fresh kernel starts with only what a fresh session has (a leftover
        could otherwise reach its pipes through /proc, as the same uid).  Elsewhere the
        processes around us are not ours to kill."""
        if os.getpid() != 2:
            return
        spare = {1, 2, self.template}
        for _ in range(10):                  # (they may fork as we go)
            found = False
            try:
                pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
            except OSError:
                return
            parents = {pid: _parent(pid) for pid in pids}
            for pid in pids:
                parent = parents[pid]
                # (the standby, and what it started: bash's kernel starts bash
                # ahead; not what the dead kernel started, which a restart's kill
                # may not have reached yet as its parent: review1-6)
                if pid not in spare and parent != self.template and (
                        parent is None or parent in spare or parent == dead
                        or (parents[parent] if parent in parents else _parent(parent))
                        != self.template):
                    try:
                        os.kill(pid, _signal.SIGKILL)
                        found = True
                    except OSError:
                        pass
            if not found:
                return

    def died(self, status):
        """The kernel is gone: what it wrote is sent, the snippet it ran ends
        with a died frame (the client tells its result), a fresh one starts."""
        self.drain()
        if self.tty_master is not None:
            self.drain_tty()                 # (what it wrote last is not there yet)
        self.finish()
        was_up, dead = self.kernel_up, self.kernel
        self.kernel, self.kernel_up, self.killing = None, False, None
        self.files_died()
        if self.query and not self.query_told:
            self.query_told = True           # (the client's session answers it: died)
        self.running, self.query, self.query_by = None, None, None
        if self.start is not None:
            self.send({"type": "died", "status": status})
        self.dead_starts = 0 if was_up else self.dead_starts + 1
        if self.dead_starts >= DEAD_STARTS:
            self.exit(EXIT_NO_KERNEL)
        self.sweep(dead)                     # what it left cannot reach the fresh one
        self.spawn()

    def on_ctl(self):
        data = _read(self.ctl.fileno(), 4096)
        if data is None:
            return
        if not data:
            return self.orphaned()           # the template died (user code killed it)
        if self.outs_quiet and (self.ctl_buf or data.find(b"\n") != len(data) - 1):
            self.outs_quiet = False          # (as in on_msg: one line alone, or drain)
        self.ctl_buf += data
        while b"\n" in self.ctl_buf:
            line, self.ctl_buf = self.ctl_buf.split(b"\n", 1)
            try:
                if line[:1] == b"P":
                    pid = int(line[1:])
                    if not 1 < pid < 1 << 22:
                        raise ValueError("not a pid")
                    self.kernel = pid
                    if self.kill_pending:    # a kill was asked for before the pid came
                        self.kill_pending = False
                        self.kill()
                        continue
                    if self.hello_early is not None:
                        self.hello(self.hello_early)
                elif line[:1] == b"F":       # the template could not fork a kernel
                    self.died(0)
                elif line[:1] == b"X":
                    pid, status = map(int, line[1:].split())
                    if pid == self.kernel:
                        self.died(status)
            except ValueError:
                pass
        if len(self.ctl_buf) > 4096:
            self.ctl_buf = b""

    def orphaned(self):
        """The template is gone: no kernel can be forked any more, but the
        one we have lives on (it is the template's orphan now), and so does
        its state.  It runs what comes until it dies or must go; then we exit
        (EXIT_NO_KERNEL) and the client replaces us.  Exiting at once would
        blame the snippet after the one that killed the template: its result
        may be on its way, the next snippet sent on it."""
        self.orphan = True
        self.poller = None                   # (the socket is not polled any more)
        if not self.kernel:
            self.exit(EXIT_NO_KERNEL)        # (none to go on with)
        try:                                 # (not our child: no X will tell its exit)
            self.kernel_fd = _pidfd_open(self.kernel)
        except (OSError, TypeError):
            self.kernel_fd = None

    def orphan_died(self):
        """The orphaned kernel is gone (or must go): its output is sent, then
        we exit, once it is dead (up to KILL_WAIT)."""
        try:
            os.killpg(self.kernel, _signal.SIGKILL)
        except (OSError, TypeError):
            pass
        if self.kernel_fd is not None:
            select.select([self.kernel_fd], [], [], KILL_WAIT)
        self.drain()
        if self.tty_master is not None:
            self.drain_tty()
        self.finish()
        self.kernel = None
        self.exit(EXIT_NO_KERNEL)
