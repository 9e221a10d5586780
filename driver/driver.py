"""ptybox driver: the program on the far side of the terminal.

The ptybox client starts, in a fresh PTY, a bootstrap that says it runs, then
reads this source as base64 lines and exec()s it in its __main__ globals:

    python3 -I -c 'import base64;print("PTYBOX/1","BOOT");
                   exec(base64.b64decode("".join(iter(input,""))))'

From then on this program owns everything on its side of the terminal:

* the terminal: a private close-on-exec duplicate at a high fd, kept in raw
  mode (ISIG and NOFLSH stay on, so ^C interrupts without flushing frames);
* the wire protocol (ptybox-protocol(7)): base64url JSON request lines in,
  frames <<<ptybox:NONCE:json:ptybox>>> out;
* the user's interpreter state: a fresh __main__ module kept across snippets,
  each snippet run like a notebook cell;
* output capture at the file-descriptor level: fds 1 and 2 are pipes that a
  pump thread turns into stream frames, bounded (head + tail) and drained
  before each result, so output of one snippet never lands in the next.

Why it is shaped so: user code runs in this very process and may do anything
to it - close fds, change the terminal mode, replace sys.stdout, ignore
SIGINT, start threads and processes that outlive it, print fake frames.  So
driver state lives in objects the user's namespace does not name, every
resource the protocol needs is a private duplicate that is checked and
re-installed before each snippet, SIGINT raises only while user code runs,
and nothing the user prints reaches the terminal except inside a frame whose
JSON payload cannot contain a marker.  Requests are read by their own thread,
so the terminal's input queue is kept empty (a ^C is seen at once) and a
ping is answered even while a snippet runs.
Standard library only; runs on Python 3.8 and later.
"""

import ast, base64, builtins, codecs, collections, errno, fcntl, io, json, linecache
import os, platform, queue, re, select, signal, struct, sys, termios, threading, time
import traceback, types

PROTOCOL = 1
DEFAULT_MAX_OUTPUT = 4 << 20      # per stream and snippet, as the client's default
BATCH = 256 << 10                 # bytes per stream frame while output is forwarded live
BIG_READ = 1 << 20                # read size once output is only counted (tail, drain)
PIPE_SIZE = 1 << 20
TTY_READ = 64 << 10
SOURCE_BUDGET = 32 << 20          # bytes of snippet source kept in linecache
END = b":ptybox>>>"
STAMP = "_ptybox_snippet"         # Thread attribute: id of the snippet that started it
NO_STDIN = "input() is not available in a ptybox session: there is no stdin"
F_DUPFD_CLOEXEC = getattr(fcntl, "F_DUPFD_CLOEXEC", 1030)
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
_PIPE = object()                  # route: "write into the capture pipe"
_UNSTAMPED = object()             # a thread not started through threading.Thread
_DRIVER_GLOBALS = globals()       # frames running with these are driver frames


# ---------------------------------------------------------------- helpers

def _private(fd, keep=False):
    """A close-on-exec copy of fd at a high number (away from user fds)."""
    try:
        limit = os.sysconf("SC_OPEN_MAX")
    except (ValueError, OSError):
        limit = 1024
    try:
        new = fcntl.fcntl(fd, F_DUPFD_CLOEXEC, max(10, min(1000, limit - 24)))
    except OSError:
        new = os.dup(fd)
    if not keep:
        os.close(fd)
    return new


def _identity(fd):
    """What fd refers to, or None if it is closed: detects close and dup2-over."""
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_rdev)


def _char_start(data, i):
    """An index j in [i-3, i] that does not split a UTF-8 character (i if none)."""
    for j in range(i, max(i - 3, 0) - 1, -1):
        if data[j] & 0xC0 != 0x80:
            return j
    return i


def _decoder():
    return codecs.getincrementaldecoder("utf-8")("replace")


def _cap_text(text, limit):
    """text cut to at most limit UTF-8 bytes (0: no limit), saying so."""
    data = text.encode("utf-8", "backslashreplace")
    if not limit or len(data) <= limit:
        return text
    cut = _char_start(data, limit)
    return data[:cut].decode("utf-8", "replace") + "...[%d bytes truncated]" % (len(data) - cut)


# ---------------------------------------------------------------- terminal

class Terminal:
    """The private terminal fd: raw mode, request lines in, frames out."""

    def __init__(self):
        self.fd = _private(0, keep=True)
        self.ident = _identity(self.fd)
        self.lock = threading.Lock()         # one frame per write, whole
        self.recover_lock = threading.Lock()
        self.start = None                    # b"<<<ptybox:NONCE:" once known
        self.buf, self.pos = b"", 0
        self.set_raw()

    def recover(self, bad_fd=None):
        """Reopen the terminal after user code closed or replaced our fd."""
        with self.recover_lock:
            if bad_fd is not None and bad_fd != self.fd:
                return                       # another thread did it already
            try:
                fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
            except OSError:
                os._exit(3)                  # no terminal: the client restarts us
            self.fd = _private(fd)
            self.ident = _identity(self.fd)
        self.set_raw()

    def check(self):
        if _identity(self.fd) != self.ident:
            self.recover(self.fd)

    def set_raw(self):
        """(Re-)assert raw mode; ^C still raises SIGINT and flushes nothing."""
        fd = self.fd
        try:
            old = termios.tcgetattr(fd)
        except termios.error:
            return
        iflag, oflag, cflag, lflag, ispeed, ospeed, cc = old
        t = termios
        iflag &= ~(t.IGNBRK | t.BRKINT | t.PARMRK | t.ISTRIP | t.INLCR | t.IGNCR
                   | t.ICRNL | t.IXON | t.IXOFF)
        oflag &= ~t.OPOST
        lflag = (lflag & ~(t.ECHO | t.ECHONL | t.ICANON | t.IEXTEN)) | t.ISIG | t.NOFLSH
        cflag = (cflag & ~(t.CSIZE | t.PARENB)) | t.CS8
        cc = list(cc)
        cc[t.VMIN], cc[t.VTIME] = 1, 0
        cc[t.VINTR], cc[t.VQUIT], cc[t.VSUSP] = b"\x03", b"\x00", b"\x00"
        new = [iflag, oflag, cflag, lflag, ispeed, ospeed, cc]
        if new != old:
            try:
                termios.tcsetattr(fd, termios.TCSANOW, new)
            except termios.error:
                pass

    def read_line(self):
        """The next line without CR/LF, or None at end of file."""
        self.set_raw()
        chunks = []
        while True:
            i = self.buf.find(b"\n", self.pos)
            if i >= 0:
                chunks.append(self.buf[self.pos:i])
                self.pos = i + 1
                line = chunks[0] if len(chunks) == 1 else b"".join(chunks)
                return line.replace(b"\r", b"")
            if self.pos < len(self.buf):
                chunks.append(self.buf[self.pos:])
            self.buf, self.pos = self._retry(os.read, TTY_READ), 0
            if not self.buf:
                return None

    def write(self, *parts):
        """Write the parts as one unit: one writev, finished on a partial write."""
        with self.lock:
            n = self._retry(os.writev, parts)
            if n < sum(map(len, parts)):
                view = memoryview(b"".join(parts))[n:]
                while view:
                    view = view[self._retry(os.write, view):]

    def _retry(self, call, arg):
        """call(fd, arg) through EINTR, EAGAIN (someone set O_NONBLOCK) and a
        closed terminal fd.  A terminal that hung up ends the driver."""
        while True:
            fd = self.fd
            try:
                return call(fd, arg)
            except BlockingIOError:
                wait = ([fd], []) if call is os.read else ([], [fd])
                select.select(wait[0], wait[1], [], 1.0)
            except OSError as e:
                if e.errno != errno.EBADF:
                    os._exit(0 if e.errno == errno.EIO else 3)
                self.recover(fd)

    def send(self, obj):
        """One frame.  The payload is printable ASCII without < or >."""
        payload = json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode("ascii")
        payload = payload.replace(b"<", b"\\u003c").replace(b">", b"\\u003e")
        if b"\\u0000" in payload:
            # The client's JSON strings end at NUL: send U+FFFD, as for other
            # bytes that cannot be shown (an escaped backslash is left alone).
            payload = _NUL_ESCAPE.sub(rb"\1\\ufffd", payload)
        self.write(self.start, payload.replace(b"\x7f", b"\\u007f"), END)


_NUL_ESCAPE = re.compile(rb"(?<!\\)((?:\\\\)*)\\u0000")


# ---------------------------------------------------------------- capture

class _Pipe:
    """One captured stream: its pipe, decoder and the current period's budget."""

    def __init__(self, name):
        self.name = name
        r, w = os.pipe2(os.O_CLOEXEC)
        try:
            fcntl.fcntl(w, F_SETPIPE_SZ, PIPE_SIZE)
        except OSError:
            pass
        self.rfd, self.wfd = _private(r), _private(w)
        os.set_blocking(self.rfd, False)
        self.reset(None, None)

    def reset(self, head, tail_cap):
        """head: bytes still forwarded live (None: all); tail_cap: size of the
        tail ring kept after the head (0: drop and pause instead)."""
        self.decoder = _decoder()
        self.head_left, self.tail_cap = head, tail_cap
        self.tail, self.tail_len = collections.deque(), 0
        self.dropped, self.paused = 0, False


class Capture:
    """Pipes on fds 1 and 2 and the pump thread that turns them into frames.

    Time is cut into periods: a snippet (output forwarded as that snippet's,
    head + tail) or an idle period after it (output sent as "late", at most
    max_output bytes per stream, then the pipe is left alone until the next
    snippet).  The main thread switches periods through requests that the
    pump serves after draining what the pipes hold, so no byte crosses."""

    def __init__(self, term):
        self.term = term
        self.pipes = [_Pipe("stdout"), _Pipe("stderr")]
        r, w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self.wake_r, self.wake_w = _private(r), _private(w)
        self.fds = [(fd, _identity(fd)) for p in self.pipes for fd in (p.rfd, p.wfd)]
        self.fds += [(fd, _identity(fd)) for fd in (self.wake_r, self.wake_w)]
        self.lock = threading.Lock()
        self.requests = []
        self.broken = self.stopping = False
        self._period(None, True, DEFAULT_MAX_OUTPUT)
        self.thread = threading.Thread(target=self._run, name="ptybox-pump", daemon=True)
        self.thread.start()

    # -- main-thread side
    def request(self, kind, *args):
        """Ask the pump to drain and then do kind; wait for it. False if broken."""
        req = [kind, args, threading.Event(), False]
        with self.lock:
            self.requests.append(req)
        self._wake()
        while not req[2].wait(1.0):
            if not self.thread.is_alive():
                return False
        return req[3]

    def healthy(self):
        return (not self.broken and self.thread.is_alive()
                and all(_identity(fd) == ident for fd, ident in self.fds))

    def close(self):
        self.stopping = True
        self._wake()
        self.thread.join(1.0)
        for fd, ident in self.fds:
            if _identity(fd) == ident:
                os.close(fd)

    def _wake(self):
        try:
            os.write(self.wake_w, b"\0")
        except OSError:
            pass                             # full (already woken) or gone (pump sees POLLNVAL)

    # -- pump side
    def _period(self, sid, late, max_output):
        self.sid, self.late = sid, late
        for p in self.pipes:
            if not max_output:
                p.reset(None, None)
            elif late:
                p.reset(max_output, 0)
            else:
                p.reset(max_output // 2, max_output - max_output // 2)

    def _run(self):
        try:
            self._loop()
        except BaseException:
            self.broken = True
        finally:
            self.broken = self.broken or not self.stopping
            with self.lock:
                reqs, self.requests = self.requests, []
            for req in reqs:
                req[2].set()

    def _loop(self):
        watched, poller = None, None
        while not self.stopping:
            want = tuple(p for p in self.pipes if not p.paused)
            if want != watched:
                poller, watched = select.poll(), want
                poller.register(self.wake_r, select.POLLIN)
                for p in want:
                    poller.register(p.rfd, select.POLLIN)
            events = poller.poll()
            if any(ev & select.POLLNVAL for _, ev in events):
                self.broken = True           # user code closed one of our fds
                return
            ready = {fd for fd, _ in events}
            if self.wake_r in ready:
                try:
                    while os.read(self.wake_r, 4096):
                        pass
                except BlockingIOError:
                    pass
            for p in want:
                if p.rfd in ready:
                    self._read_batch(p)
            self._serve()

    def _read_batch(self, p):
        limit = BATCH if p.head_left is None or p.head_left > 0 else BIG_READ
        chunks, total = [], 0
        while total < limit:
            try:
                data = os.read(p.rfd, limit - total)
            except BlockingIOError:
                break
            if not data:                     # every write end closed: rebuild
                self.broken = self.stopping = True
                break
            chunks.append(data)
            total += len(data)
        if chunks:
            self._feed(p, chunks[0] if len(chunks) == 1 else b"".join(chunks))

    def _drain(self):
        """Read what the pipes hold now (FIONREAD bounds it: a writer that
        never stops cannot keep us here)."""
        for p in self.pipes:
            try:
                n = struct.unpack("i", fcntl.ioctl(p.rfd, termios.FIONREAD, b"\0\0\0\0"))[0]
            except OSError:
                n = 64 << 20
            while n > 0:
                try:
                    data = os.read(p.rfd, min(n, BIG_READ))
                except BlockingIOError:
                    break
                if not data:
                    break
                n -= len(data)
                self._feed(p, data)

    def _serve(self):
        with self.lock:
            reqs, self.requests = self.requests, []
        for req in reqs:
            kind, args = req[0], req[1]
            if kind == "stop":
                self.stopping = True
            else:
                self._drain()
                if kind in ("begin", "end"):
                    self._finish()
                    self._period(args[0], kind == "end", args[1])
                if kind == "begin":          # sent here, no stream frame of it can precede it
                    self.term.send({"type": "start", "id": args[0]})
            req[3] = True
            req[2].set()

    def _feed(self, p, data):
        """Forward data within the head budget; ring or count the rest."""
        if p.head_left is None or len(data) <= p.head_left:
            if p.head_left is not None:
                p.head_left -= len(data)
            self._emit(p, p.decoder.decode(data))
            return
        if p.head_left:                      # the head ends inside data
            cut = _char_start(data, p.head_left)
            self._emit(p, p.decoder.decode(data[:cut], True))
            data, p.head_left = data[cut:], 0
        if not p.tail_cap:                   # idle: late output over budget
            p.dropped += len(data)
            p.paused = True
            return
        p.tail.append(data)
        p.tail_len += len(data)
        while p.tail_len - len(p.tail[0]) >= p.tail_cap:
            n = len(p.tail.popleft())
            p.tail_len -= n
            p.dropped += n

    def _finish(self):
        """End of a period: flush decoders, send the tail with the drop count."""
        for p in self.pipes:
            self._emit(p, p.decoder.decode(b"", True))
            if p.tail:
                data = b"".join(p.tail)
                excess = len(data) - p.tail_cap
                if excess > 0:
                    data = data[excess:]
                    p.dropped += excess
                if p.dropped:                # start the tail on a character
                    k = 0
                    while k < min(3, len(data)) and data[k] & 0xC0 == 0x80:
                        k += 1
                    data, p.dropped = data[k:], p.dropped + k
                self._emit(p, data.decode("utf-8", "replace"), p.dropped or None)
            elif p.dropped:
                self._emit(p, "", p.dropped)

    def _emit(self, p, text, dropped=None):
        if not text and dropped is None:
            return
        frame = {"type": "stream", "id": self.sid, "name": p.name, "text": text}
        if self.late:
            frame["late"] = True
        if dropped is not None:
            frame["dropped"] = dropped
        self.term.send(frame)


# ---------------------------------------------------------------- stdio objects

class _FdSink(io.RawIOBase):
    """Raw writer on fd 1 or 2.  Once dead (its fd failed) it swallows its
    buffer, so leftovers can never surface in a later snippet."""

    def __init__(self, fd, name):
        self.fd, self.name, self.dead = fd, name, False

    def writable(self):
        return True

    def fileno(self):
        return self.fd

    def write(self, b):
        return len(b) if self.dead else os.write(self.fd, b)


class _OutStream(io.TextIOWrapper):
    """sys.stdout / sys.stderr: line-buffered UTF-8 over fd 1 or 2, except that
    text from a thread of an earlier snippet (or written while no snippet
    runs) goes out at once as late output of that snippet."""

    def write(self, s):
        where = self._ptybox_route()
        if where is _PIPE:
            return super().write(s)
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        self._ptybox_late(where, self._ptybox_name, s)
        return len(s)


def _no_input(*args):
    raise EOFError(NO_STDIN)


class _NoStdin(io.TextIOBase):
    """sys.stdin: every read fails at once (fd 0 itself is /dev/null)."""
    encoding = "utf-8"
    read = readline = readlines = _no_input
    buffer = property(lambda self: self)

    def readable(self):
        return True

    def fileno(self):
        return 0


# ---------------------------------------------------------------- the driver

class Driver:
    """The user's namespace and the execution of snippets."""

    def __init__(self, term):
        self.term = term
        self.pid = os.getpid()
        self.main_ident = threading.get_ident()
        self.running = None                  # id of the snippet running now
        self.max_output = DEFAULT_MAX_OUTPUT
        self.last_id = None                  # id that idle output belongs to
        self.result_pending = False
        self.armed = False                   # SIGINT raises KeyboardInterrupt
        self.sigint_seen = self.sigint_deferred = False
        self.late_lock = threading.Lock()
        self.late_left, self.late_dropped = {}, {}
        self.sources, self.source_bytes = collections.deque(), 0
        self.requests = queue.Queue(maxsize=4)
        self.module = types.ModuleType("__main__")
        self.module.__dict__["__builtins__"] = builtins
        self.ns = self.module.__dict__
        self.devnull = self._open_devnull()
        self.capture = Capture(term)
        self.stdin, self.streams = _NoStdin(), {}
        self.display = self._display_builtin()
        os.environ["MPLBACKEND"] = "Agg"
        if "" not in sys.path:
            sys.path.insert(0, "")           # like a REPL: import what you just wrote
        self._patch_thread_start()
        os.register_at_fork(after_in_child=self._after_fork)
        self._reset_late(DEFAULT_MAX_OUTPUT)
        self.prepare()

    # -- re-installed before every snippet
    def prepare(self):
        self.term.check()
        if not self.capture.healthy():
            self.capture.close()
            self.capture = Capture(self.term)
        if _identity(self.devnull[0]) != self.devnull[1]:
            self.devnull = self._open_devnull()
        os.dup2(self.devnull[0], 0)
        os.dup2(self.capture.pipes[0].wfd, 1)
        os.dup2(self.capture.pipes[1].wfd, 2)
        for fd, name in ((1, "stdout"), (2, "stderr")):
            s = self.streams.get(name)
            if s is None or s.closed:
                s = self.streams[name] = self._make_stream(fd, name)
            setattr(sys, name, s)
            setattr(sys, "__%s__" % name, s)
        if self.stdin.closed:
            self.stdin = _NoStdin()
        sys.stdin = sys.__stdin__ = self.stdin
        sys.modules["__main__"] = self.module
        builtins.input = _no_input
        builtins.display = self.display
        signal.signal(signal.SIGINT, self._on_sigint)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})

    def _after_fork(self):
        """In a child forked by user code: locks held by vanished threads are new."""
        self.term.lock, self.term.recover_lock = threading.Lock(), threading.Lock()
        self.capture.lock, self.late_lock = threading.Lock(), threading.Lock()

    @staticmethod
    def _open_devnull():
        fd = _private(os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC))
        return fd, _identity(fd)

    def _make_stream(self, fd, name):
        sink = _FdSink(fd, "<%s>" % name)
        s = _OutStream(io.BufferedWriter(sink, 1 << 16), encoding="utf-8",
                       errors="backslashreplace", line_buffering=True)
        s._ptybox_route, s._ptybox_late = self._route, self._late_write
        s._ptybox_name, s._ptybox_sink = name, sink
        return s

    def _flush_stdio(self):
        """Flush sys.stdout/err; a stream whose fd failed is replaced, never retried."""
        for name in ("stdout", "stderr"):
            current = getattr(sys, name, None)
            if current is not None and current is not self.streams.get(name):
                self._call_user(lambda: current.flush())
            s = self.streams.get(name)
            try:
                if s is not None:
                    s.flush()
            except BaseException:
                s._ptybox_sink.dead = True
                del self.streams[name]

    # -- threads and output routing
    def _patch_thread_start(self):
        original, driver = threading.Thread.start, self

        def start(thread, *args, **kwargs):
            """Stamp the thread with the snippet that starts it, then start it."""
            if threading.get_ident() == driver.main_ident:
                stamp = driver.running
            else:
                stamp = getattr(threading.current_thread(), STAMP, driver.running)
            try:
                setattr(thread, STAMP, stamp)
            except Exception:
                pass
            return original(thread, *args, **kwargs)

        start.__wrapped__ = original
        threading.Thread.start = start

    def _route(self):
        """_PIPE for writes of the running snippet, else the id to report late."""
        running = self.running
        if threading.get_ident() == self.main_ident:
            return _PIPE if running is not None else self.last_id
        stamp = getattr(threading.current_thread(), STAMP, _UNSTAMPED)
        if running is not None and (stamp is _UNSTAMPED or stamp == running):
            return _PIPE
        return self.last_id if stamp is _UNSTAMPED or stamp is None else stamp

    def _late_write(self, sid, name, text):
        data = text.encode("utf-8", "backslashreplace")
        with self.late_lock:
            left = self.late_left.get(name)
            if left is not None and len(data) > left:
                cut = _char_start(data, left)
                old = self.late_dropped.get(name, (sid, 0))[1]
                self.late_dropped[name] = (sid, old + len(data) - cut)
                data = data[:cut]
            if left is not None:
                self.late_left[name] = left - len(data)
        if data:
            self.term.send({"type": "stream", "id": sid, "name": name,
                            "text": data.decode("utf-8", "replace"), "late": True})

    def _reset_late(self, max_output):
        """New period for thread-written late output; report what was dropped."""
        with self.late_lock:
            dropped, self.late_dropped = self.late_dropped, {}
            self.late_left = {"stdout": max_output or None, "stderr": max_output or None}
        for name, (sid, n) in sorted(dropped.items()):
            self.term.send({"type": "stream", "id": sid, "name": name, "text": "",
                            "late": True, "dropped": n})

    # -- rich output
    def _display_builtin(self):
        driver = self

        def display(*objs):
            """Show each object as rich output (image/png via _repr_png_, text/plain)."""
            for obj in objs:
                driver.display_data(driver._mime(obj, driver.max_output))
        return display

    def display_data(self, data):
        """One display frame, after the text written before it."""
        where = self._route()
        sid = self.running if where is _PIPE else where
        frame = {"type": "display", "id": sid, "data": data}
        if where is not _PIPE:
            frame["late"] = True
        else:
            for s in self.streams.values():
                s.flush()
            self.capture.request("sync")
        if threading.get_ident() != self.main_ident or not self.armed:
            self.term.send(frame)
            return
        self.armed = False                   # a ^C must not cut a frame in two
        try:
            self.term.send(frame)
        finally:
            self.armed = True
        if self.sigint_deferred:
            self.sigint_deferred = False
            raise KeyboardInterrupt

    @staticmethod
    def _mime(obj, limit):
        data = {"text/plain": _cap_text(repr(obj), limit)}
        png = getattr(obj, "_repr_png_", None)
        png = png() if callable(png) else None
        if isinstance(png, (bytes, bytearray)):
            data["image/png"] = base64.b64encode(png).decode("ascii")
        return data

    def _show_figures(self):
        """Like Jupyter's inline backend: every open pyplot figure, then close it."""
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None or not hasattr(plt, "get_fignums"):
            return
        nums, exc = self._call_user(plt.get_fignums)
        for num in nums or ():
            def show():
                fig = plt.figure(num)
                buf = io.BytesIO()
                fig.savefig(buf, format="png", bbox_inches="tight")
                self.display_data({"image/png": base64.b64encode(buf.getvalue()).decode("ascii"),
                                   "text/plain": repr(fig)})
            _, exc = self._call_user(show)
            self._call_user(plt.close, num)
            if isinstance(exc, KeyboardInterrupt):
                break

    # -- SIGINT
    def _on_sigint(self, signum, frame):
        if self.running is None:
            return                           # between snippets: ignored
        self.sigint_seen = True
        if self.armed:
            raise KeyboardInterrupt
        self.sigint_deferred = True          # raised as user code resumes

    def _call_user(self, fn, *args):
        """fn(*args) with SIGINT armed: (value, None) or (None, exception)."""
        value = exc = None
        try:
            try:
                self.armed = True
                if self.sigint_deferred:
                    self.sigint_deferred = False
                    raise KeyboardInterrupt
                value = fn(*args)
            finally:
                self.armed = False
        except BaseException as e:           # everything, SystemExit and ^C included
            exc = e
        if os.getpid() != self.pid:          # a fork() of user code got here: end it
            self._exit_forked_child(exc)
        return value, exc

    def _exit_forked_child(self, exc):
        code = 0
        if isinstance(exc, SystemExit):
            code = exc.code if isinstance(exc.code, int) else (exc.code is not None)
        elif exc is not None:
            traceback.print_exception(type(exc), exc, exc.__traceback__)
            code = 1
        try:
            for s in [sys.stdout, sys.stderr] + list(self.streams.values()):
                try:
                    s.flush()
                except BaseException:
                    pass
        finally:
            os._exit(code)

    # -- one snippet
    def _run_code(self, sid, code):
        """Run code like a notebook cell: the last expression's value is returned."""
        filename = "<snippet-%s>" % sid
        self._register_source(filename, code)
        try:
            tree = ast.parse(code, filename, "exec")
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            body = compile(tree, filename, "exec", dont_inherit=True)
            if last is not None:
                last = compile(last, filename, "eval", dont_inherit=True)
        except Exception as e:               # SyntaxError & co: no driver frames to show
            e.__traceback__ = None
            raise
        exec(body, self.ns)
        return None if last is None else eval(last, self.ns)

    def _register_source(self, filename, code):
        """Tracebacks show snippet lines; old sources go past a budget."""
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        self.sources.append((filename, len(code)))
        self.source_bytes += len(code)
        while self.source_bytes > SOURCE_BUDGET and len(self.sources) > 1:
            old, n = self.sources.popleft()
            self.source_bytes -= n
            linecache.cache.pop(old, None)

    def _error(self, exc):
        """name, value and traceback of exc (each part cut to max_output bytes)."""
        cls = type(exc)
        module = getattr(cls, "__module__", None)
        name = cls.__qualname__
        if module not in ("builtins", "__main__", None):
            name = "%s.%s" % (module, name)
        kept, tb = [], exc.__traceback__     # drop the driver's own frames
        while tb is not None:
            if tb.tb_frame.f_globals is not _DRIVER_GLOBALS:
                kept.append(tb)
            tb = tb.tb_next
        for a, b in zip(kept, kept[1:] + [None]):
            a.tb_next = b
        tb = exc.__traceback__ = kept[0] if kept else None
        sys.last_type, sys.last_value, sys.last_traceback = cls, exc, tb
        sys.last_exc = exc                   # Python 3.12+: what pdb.pm() looks at
        try:
            value = str(exc.code) if isinstance(exc, SystemExit) else str(exc)
        except Exception:
            value = "<unprintable %s object>" % cls.__name__
        lines = traceback.format_exception(cls, exc, tb)
        return {"name": name, "value": _cap_text(value, self.max_output),
                "traceback": [_cap_text(line, self.max_output) for line in lines]}

    def execute(self, sid, code, max_output):
        self.result_pending = True
        self.prepare()
        self._reset_late(max_output)
        self.sigint_seen = self.sigint_deferred = False
        self.running = self.last_id = sid
        self.max_output = max_output
        if not self.capture.request("begin", sid, max_output):    # sends "start"
            self.running = None
            self.prepare()                   # the pump died: rebuilt, try once more
            self.running = sid
            if not self.capture.request("begin", sid, max_output):
                self.term.send({"type": "start", "id": sid})

        t0 = time.perf_counter()
        value, exc = self._call_user(self._run_code, sid, code)
        duration = (time.perf_counter() - t0) * 1000.0
        signal.signal(signal.SIGINT, self._on_sigint)   # user code may have replaced it

        result = None
        if exc is None and value is not None:
            self.ns["_"] = value
            result, exc = self._call_user(self._mime, value, max_output)
        if exc is None:
            status, error = "ok", None
        else:
            interrupted = isinstance(exc, KeyboardInterrupt) and self.sigint_seen
            status = "interrupted" if interrupted else "error"
            error, failed = self._call_user(self._error, exc)
            if failed is not None:
                error = {"name": type(exc).__name__, "value": "<unprintable>", "traceback": []}
        self._flush_stdio()
        self._show_figures()
        self._flush_stdio()
        self.capture.request("end", sid, max_output)
        self.running = None
        self._reset_late(max_output)
        self.term.check()                    # user code may have closed or replaced it
        self.term.set_raw()                  # ... or changed its mode
        self.term.send({"type": "result", "id": sid, "status": status, "result": result,
                        "error": error, "duration_ms": round(duration, 3)})
        self.result_pending = False

    # -- requests
    def reader(self):
        """Thread: read request lines, answer ping at once, queue the rest."""
        while True:
            line = self.term.read_line()
            if line is None:
                os._exit(0)                  # the terminal is gone: so are we
            line = line.strip()
            if not line:
                continue
            try:
                req = self._parse(line)
            except Exception as e:           # e.g. RecursionError on absurd JSON
                req = self._reject(None, "malformed request: %r" % (e,))
            if req is None:
                continue
            if req["op"] == "ping":
                self.term.send({"type": "pong", "id": req.get("id")})
            else:
                self.requests.put(req)

    def _parse(self, line):
        try:
            req = json.loads(base64.urlsafe_b64decode(line + b"=" * (-len(line) % 4)))
        except (ValueError, TypeError) as e:
            return self._reject(None, "malformed request: %s" % e)
        if not isinstance(req, dict):
            return self._reject(None, "a request must be a JSON object")
        op, rid = req.get("op"), req.get("id")
        if op not in ("exec", "ping", "shutdown"):
            return self._reject(rid, "unknown op %r" % (op,))
        if op == "exec":
            limit = req.setdefault("max_output", DEFAULT_MAX_OUTPUT)
            if not isinstance(req.get("code"), str):
                return self._reject(rid, "exec needs a string 'code'")
            if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
                return self._reject(rid, "max_output must be an integer >= 0")
        return req

    def _reject(self, rid, message):
        self.term.send({"type": "error", "id": rid, "message": message})
        return None

    def serve(self):
        """Main loop: run queued requests in order, whatever user code does."""
        while True:
            try:
                self._serve()
            except BaseException:            # hit again while recovering: go on
                pass

    def _serve(self):
        while True:
            req = None
            try:
                req = self.requests.get()
                if req["op"] == "shutdown":
                    os._exit(0)
                self.execute(req.get("id"), req["code"], req["max_output"])
            except BaseException as exc:     # e.g. a user's signal handler firing in our code
                self._stray(req, exc)

    def _stray(self, req, exc):
        """An exception escaped into driver code: the snippet still gets a result
        (retried, in case the same handler fires again)."""
        self.armed, self.running = False, None
        for _ in range(100):
            try:
                if req is None or not self.result_pending:
                    return
                self.term.check()
                if self.capture.healthy():
                    self.capture.request("end", req.get("id"), req.get("max_output"))
                self.term.send({"type": "result", "id": req.get("id"), "status": "error",
                                "result": None, "duration_ms": 0.0,
                                "error": {"name": type(exc).__name__, "value": str(exc),
                                          "traceback": traceback.format_exception(
                                              type(exc), exc, exc.__traceback__)}})
                self.result_pending = False
            except BaseException:
                pass


# ---------------------------------------------------------------- boot

def main():
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # until the driver is armed
    term = Terminal()
    term.write(b"\r\nPTYBOX/1 NONCE?\r\n")
    line = term.read_line()
    if line is None:
        os._exit(0)
    nonce = line.strip()
    if not re.match(rb"\A[0-9A-Fa-f]{1,64}\Z", nonce):
        term.write(b"\r\nPTYBOX/1 BAD NONCE\r\n")
        os._exit(2)
    term.start = b"<<<ptybox:" + nonce + b":"
    driver = Driver(term)
    term.send({"type": "ready", "protocol": PROTOCOL, "pid": os.getpid(),
               "python": platform.python_version()})
    threading.Thread(target=driver.reader, name="ptybox-requests", daemon=True).start()
    driver.serve()


if __name__ == "__main__":
    main()
