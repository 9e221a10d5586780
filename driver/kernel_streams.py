"""The snippets' sys.stdout and sys.stderr: text streams over the capture pipes
(fds 1 and 2), buffered in the kernel and flushed at each snippet's end, on
a newline at a terminal, or by the watchdog; bytes written as they were.

Not a module: joined into kernel.py where it says "# @include
kernel_streams.py"; it uses kernel.py's globals.
"""
# ---- kernel_streams.py: joined into kernel.py at build time (driver_join.py, "# @include")

class _TextBuffer:
    """What sys.stdout or sys.stderr was given and did not write yet: str
    chunks.  Writers only append (atomic under the GIL: no lock on print()'s
    path); whoever empties it holds lock until the bytes are in the pipe (or
    in the capture), so the order is kept.  dirty: something may be in it;
    eager: 1 to flush at each line end (line_buffering), 2 at each write,
    3 at a line end unless the last flush was less than COALESCE ago (then
    the watchdog flushes, FLUSH_DELAY later at most);
    gone: its stream was closed, or dropped when its fd failed."""
    __slots__ = ("chunks", "size", "dirty", "closed", "gone", "lock", "errors", "eager",
                 "flushed")

    def __init__(self, errors):
        self.chunks, self.size, self.dirty, self.closed = [], 0, False, False
        self.gone = False
        self.lock = _RLock()        # re-entrant: a signal handler may print
        self.errors, self.eager = errors, 1
        self.flushed = 0                     # _perf_ns() of the last take()

    def take(self):
        """The bytes buffered (lock held); empty afterwards."""
        self.dirty = False                   # first: a write after this sets it again
        self.flushed = _perf_ns()
        chunks, self.chunks = self.chunks, []
        self.size = 0
        return "".join(chunks).encode("utf-8", self.errors) if chunks else b""


class _FdSink(io.RawIOBase):
    """Raw writer on fd 1 or 2, under sys.stdout/err (sys.stdout.buffer).  Once
    dead (its fd failed) it swallows what it is given, so leftovers can never
    surface in a later snippet."""

    def __init__(self, fd, name, buf):
        self.fd, self.name, self.dead, self.buf = fd, name, False, buf
        self.closing = False                 # its _OutStream closes it

    def writable(self):
        return True

    def fileno(self):
        return self.fd

    def isatty(self):
        return not self.dead and os.isatty(self.fd)   # (with --tty: a terminal)

    def close(self):
        """Only its own stream closes it: a wrapper the user made around
        sys.stdout.buffer closes it when collected, and sys.stdout would go
        with it (anyone else only flushes)."""
        if self.closing:
            io.RawIOBase.close(self)
        else:
            self.flush_text()

    def write(self, b):
        """Bytes, after the text written before them."""
        with self.buf.lock:
            self.flush_text()
            return self.write_all(b)

    def flush_text(self):
        data = self.buf.take()
        if data:
            self.write_all(data)

    def write_all(self, b):
        if self.dead:
            return len(b)
        before = _BEFORE_WRITE.get(self.fd)
        if before is not None:
            before()                         # what the other stream holds goes first
        if _LAST[0] != self.fd:
            _settle(self.fd)
        view, done = memoryview(b), 0
        while done < len(view):
            try:
                done += os.write(self.fd, view[done:])
            except BlockingIOError:          # user code set O_NONBLOCK: wait, lose nothing
                select.select([], [self.fd], [], 1.0)
        return done


_LAST = [None]                    # the fd that our streams wrote to last
_TTY = [False]                    # fds 1 and 2 are a terminal of ours (--tty)
_WATCHDOG = [None]                # the thread ident of Channel.watch's watchdog
_BEFORE_WRITE = {}                # fd -> what to flush before our stream writes to it


def _settle(fd):
    """Before our first write to fd (1, 2, or None for a display message)
    after one somewhere else: wait (up to SETTLE_WAIT) until the relay has
    read what the other places hold, so that it sees stdout, stderr and
    displays in the order they were written."""
    last, _LAST[0] = _LAST[0], fd
    others = [o for o in (1, 2, last) if o is not None and o != fd]
    deadline, spins = _perf_ns() + SETTLE_WAIT, 0
    buf = bytearray(4)
    for other in others:
        while True:
            try:
                fcntl.ioctl(other, termios.FIONREAD, buf)
            except OSError:
                break
            if not int.from_bytes(buf, sys.byteorder) or _perf_ns() >= deadline:
                break
            spins += 1
            if spins < 100:
                _sched_yield()
            else:
                time.sleep(0.0002)


class _OutStream(io.TextIOWrapper):
    """sys.stdout / sys.stderr: line-buffered UTF-8 over fd 1 or 2, except that
    text from a thread of an earlier snippet goes out at once as late output
    of that snippet.  The text goes into a _TextBuffer, not into the C text
    layer (whose buffer threads that write at once can corrupt).  write() is
    a closure in the instance (made by _writer): print()'s path, without
    attribute lookups."""

    def write(self, s):
        return self.__dict__["write"](s)

    def flush(self):
        buf = self._ptybox_buf
        if buf.closed:
            raise ValueError("I/O operation on closed file.")
        tracers = None
        if _gettrace() is not None or _getprofile() is not None:
            # A user's tracer or profiler that prints would print from inside
            # this flush, for ever: off while it runs.
            tracers = (_gettrace(), _getprofile())
            _settrace(None)
            _setprofile(None)
        try:
            with buf.lock:
                self._ptybox_sink.flush_text()
            _text_flush(self)                # anything written around write()
        finally:
            if tracers is not None:
                _settrace(tracers[0])
                _setprofile(tracers[1])

    def close(self):
        self._ptybox_sink.closing = True
        try:
            io.TextIOWrapper.close(self)     # flush() first
        finally:
            self._ptybox_buf.closed = self._ptybox_buf.gone = True

    def reconfigure(self, **kwargs):
        io.TextIOWrapper.reconfigure(self, **kwargs)
        buf = self._ptybox_buf
        buf.errors = self.errors
        buf.eager = 2 if self.write_through else 1 if self.line_buffering else 0


def _writer(stream, driver, name):
    """The write() method of an _OutStream, as a closure."""
    main, buf = driver.main_ident, stream._ptybox_buf
    other = "stderr" if name == "stdout" else "stdout"
    streams = driver.streams

    def write(s):
        if driver.running is None or _get_ident() != main:
            where = driver._route()
            if where is not _PIPE:
                if not isinstance(s, str):
                    raise TypeError("write() argument must be str, not %s" % type(s).__name__)
                driver._late_write(where, name, s)
                return len(s)
        if type(s) is not str:
            if not isinstance(s, str):
                raise TypeError("write() argument must be str, not %s" % type(s).__name__)
            s = str(s)
        if buf.closed:
            raise ValueError("I/O operation on closed file.")
        o = streams.get(other)               # what the other stream holds is older:
        if o is not None and o._ptybox_buf.dirty:   # out first, or a flush of the two
            driver._flush_held(other)        # (the watchdog's) could put it after
        buf.chunks.append(s)
        buf.size += len(s)
        if buf.size >= TEXT_BUFFER or buf.eager and (buf.eager == 2 or "\n" in s or "\r" in s) \
                and (buf.eager != 3 or _perf_ns() - buf.flushed >= COALESCE) \
                and _getprofile() is None and _gettrace() is None:
            stream.flush()                   # (under a user's tracer: at the end, as before)
        elif not buf.dirty:
            buf.dirty = True
            driver.chan.wake()               # out in FLUSH_DELAY at the latest
        return len(s)
    return write


def _usable(stream):
    """False if stream is None, closed, detached, dropped or missing our parts."""
    try:
        return not (stream.closed or stream._ptybox_buf.gone or stream._ptybox_sink.dead)
    except (AttributeError, ValueError):     # (None, or parts deleted; detached)
        return False


# ---------------------------------------------------------------- the driver
