"""The kernel's end of its pipes to the relay: requests read (X, I and the
file ops' lines), messages written whole, a watchdog that ends the kernel
when the relay is gone, and what arrives while a snippet runs kept for after
it.

Not a module: joined into kernel.py where it says "# @include
kernel_channel.py"; it uses kernel.py's globals.
"""
# ---- kernel_channel.py: joined into kernel.py at build time (driver_join.py, "# @include")

class Channel:
    """The kernel's pipes to the relay: request lines in, message lines out."""

    def __init__(self):
        # /dev/null until attach() puts the pipes on these very numbers.
        self.req = _private(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
        self.msg = _private(os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC))
        self.idents = (_identity(self.req), _identity(self.msg))
        self.lock = _RLock()        # one message per write, whole
        self.writing = False                 # a message is being written (lock held)
        self.deferred = []                   # messages a signal handler wrote meanwhile
        self.parts = deque()                 # read, not taken yet: 1-tuples of bytes
        self.size = None                     # b"COLSxROWS" from the relay, not applied yet

    def attach(self, req, msg):
        """The pipes to the relay, in place of the placeholders (req and msg
        are closed)."""
        for fd, place in ((req, self.req), (msg, self.msg)):
            os.dup2(fd, place, inheritable=False)
            os.close(fd)
        self.idents = (_identity(self.req), _identity(self.msg))

    def healthy(self):
        return (_identity(self.req), _identity(self.msg)) == self.idents

    def watch(self, flush):
        """A thread that ends the kernel and its process group as soon as the
        relay is gone (its end of the request pipe closes), also while a
        snippet runs: a kernel must never outlive its relay.  It also calls
        flush() FLUSH_DELAY after wake() (text buffered in sys.stdout), again
        soon if flush() says it could not (a stream was busy)."""
        r, w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self.wake_r, self.wake_w = _private(r), _private(w)

        def watchdog():
            _WATCHDOG[0] = _get_ident()
            _signal.pthread_sigmask(_signal.SIG_BLOCK, _signal.valid_signals())
            poll = select.poll()
            poll.register(self.req, 0)      # (POLLHUP and POLLNVAL come anyway)
            poll.register(self.wake_r, select.POLLIN)
            deadline = None
            while True:
                timeout = None if deadline is None else max(0, deadline - _perf_ns()) / 1e6
                try:
                    events = poll.poll(timeout)
                except OSError as e:
                    if e.errno != errno.EINVAL:
                        break
                    # RLIMIT_NOFILE below the fds polled: only the flushing
                    # goes on (a read at the relay's end still ends us).
                    time.sleep(FLUSH_DELAY / 1e9)
                    flush()
                    continue
                if any(fd == self.req or ev & select.POLLNVAL for fd, ev in events):
                    break                    # the relay is gone, or our fds are
                if events:
                    try:
                        while os.read(self.wake_r, 512):
                            pass
                    except OSError:
                        pass
                    if deadline is None:
                        deadline = _perf_ns() + FLUSH_DELAY
                if deadline is not None and _perf_ns() >= deadline:
                    deadline = None if flush() else _perf_ns() + FLUSH_DELAY // 10
            try:
                os.killpg(0, _signal.SIGKILL)
            finally:
                os._exit(EXIT_LOST_PIPE)
        _thread.start_new_thread(watchdog, ())

    def wake(self):
        try:
            os.write(self.wake_w, b"\0")
        except OSError:
            pass                             # full: woken already

    def _read(self):
        """More request bytes, into self.parts within one C call (deque.extend
        of a 1-tuple: a user's signal handler may raise around it, never in
        the middle).  End of file: the relay is gone, and so are we.  It
        blocks, never polls busily: the relay does (for the client's busy_poll)
        while we run, and on two cores a second process spinning between
        snippets takes the core that the client and the relay need then
        (round trips ~10% slower, measured)."""
        while True:
            try:
                self.parts.extend(zip(_map(os.read, (self.req,), (TTY_READ,))))
                break
            except InterruptedError:
                continue
            except OSError as e:
                if type(e) is not OSError and type(e) is not BlockingIOError:
                    raise                    # a signal handler's, not the read's
                if e.errno == errno.EAGAIN:  # someone set O_NONBLOCK
                    select.select([self.req], [], [], 1.0)
                    continue
                os._exit(EXIT_LOST_PIPE)
        if not self.parts[-1][0]:
            os._exit(0)

    def peek_request(self):
        """(seq, the request's JSON bytes, the parts after it), or (None, None,
        the parts after an interrupt line).  Nothing is taken: the caller puts
        chan.parts = rest once it owes the request a result, so a request is
        neither lost nor run twice whatever a signal handler raises."""
        while True:
            parts = self.parts
            first = parts[0][0] if parts else b""
            i = first.find(b"\n")
            if i < 0 and len(parts) > 1:     # (a header split across reads)
                self.parts = deque(((b"".join(p[0] for p in parts),),))
                continue
            if i >= 0:
                head = first[:i]
                if head[:1] != b"X":         # "I" lines, or not the relay's: passed over
                    rest = deque(parts)
                    rest[0] = (first[i + 1:],)
                    if head[:1] == b"I":
                        return None, None, rest
                    self.parts = rest
                    continue
                fields = head[1:].split()
                seq, n = int(fields[0]), int(fields[1])
                if len(fields) > 2:          # the terminal's size, when it changed
                    self.size = fields[2]
                if sum(len(p[0]) for p in parts) - i - 1 >= n:
                    if len(parts) > 1:       # (joined once, the parts let go: one copy)
                        first = b"".join(p[0] for p in parts)
                        self.parts = parts = deque(((first,),))
                    # (the request as where it is: a long one is not copied)
                    return seq, (first, i + 1, i + 1 + n), deque(((first[i + 1 + n:],),))
            self._read()

    def interrupt_follows(self, seq):
        """Whether the relay's interrupt line for seq is already here (read
        now, without waiting: the relay writes it before its SIGINT)."""
        try:
            while _readable(self.req, 0):
                self.parts.extend(zip(_map(os.read, (self.req,), (TTY_READ,))))
                if not self.parts[-1][0]:
                    break
        except OSError:
            pass
        return self.interrupt_queued(seq)

    def interrupt_queued(self, seq):
        parts = self.parts
        if not parts or len(parts) == 1 and not parts[0][0]:
            return False
        return (b"\nI%d\n" % seq) in b"\n" + b"".join(p[0] for p in parts)

    def send(self, obj):
        self.write(_dumps(obj).encode("ascii") + b"\n")

    def write(self, data):
        """One message, whole: one written by a signal handler of this thread
        in the middle of another waits for it; what those set off in turn is
        dropped (a printing gc callback would feed itself for ever)."""
        with self.lock:
            if self.writing or self.deferred is None:
                if self.deferred is not None:
                    self.deferred.append(data)
                return
            self.writing = True
            try:
                self._write(data)
            finally:
                self.writing = False
            if self.deferred:
                deferred, self.deferred = self.deferred, None
                try:
                    for d in deferred:
                        self._write(d)
                finally:
                    self.deferred = []

    def _write(self, data):
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.msg, view):]
            except InterruptedError:
                pass
            except BlockingIOError:
                select.select([], [self.msg], [], 1.0)
            except OSError as e:
                if type(e) is not OSError:
                    raise                    # a signal handler's
                os._exit(EXIT_LOST_PIPE)     # the relay or our pipe is gone



# ---------------------------------------------------------------- stdio objects
