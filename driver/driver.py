"""ptybox driver: the program on the far side of the terminal.

The ptybox client starts, in a fresh PTY, a bootstrap that says it runs and
with which bytecode magic, then reads this program as base64 lines and exec()s
it in its __main__ globals: compiled at build time (marshal, zlib) when the
magic is the one it was compiled under, else this source:

    python3 -I -S -c 'import binascii as b,marshal as m,_frozen_importlib_external
                   as f;h=f.MAGIC_NUMBER.hex();print("PTYBOX/1","BOOT",h);
                   k=input();s=b.a2b_base64("".join(iter(input,"")));
                   exec(m.loads(__import__("zlib").decompress(s))if k==h else s)'

From then on this program owns everything on its side of the terminal:

* the terminal: a private close-on-exec duplicate at a high fd, kept in raw
  mode (ISIG and NOFLSH stay on, so ^C interrupts without flushing frames);
* the wire protocol (ptybox-protocol(7)): base64url JSON request lines in,
  frames <<<ptybox:NONCE:json:ptybox>>> out;
* the user's interpreter state: a fresh __main__ module kept across snippets,
  each snippet run like a notebook cell;
* output capture at the file-descriptor level: fds 1 and 2 are pipes that a
  pump thread turns into stream frames (batches of up to 256 KiB while the
  snippet runs), bounded (head + tail) and drained before each result, so
  output of one snippet never lands in the next.  sys.stdout and sys.stderr
  are block-buffered over them, as Python's own stdout is on a pipe; the pump
  flushes them at most 50 ms after a write, and every snippet ends with a
  full flush.

Why it is shaped so: user code runs in this very process and may do anything
to it - close fds, change the terminal mode, replace sys.stdout, ignore
SIGINT, start threads and processes that outlive it, print fake frames.  So
driver state lives in objects the user's namespace does not name, every
resource the protocol needs is a private duplicate, checked (and fds 0-2,
the SIGINT handler and sys.std* put back) after each result (the terminal
before it), SIGINT raises only while user code runs, and nothing the
user prints reaches the terminal except inside a frame whose JSON payload
cannot contain a marker.  The driver's threads block signals, which go to the
main thread, where their handlers run anyway.

Interrupts: the client sends ^C and, in the same write, an "interrupt" request
naming the snippet it meant.  ^Cs that land while no snippet runs are
counted; an interrupt request for a snippet that ended without seeing a
SIGINT takes one off, and a snippet that starts while the count is above zero
starts interrupted if the client's interrupt request for it follows its exec
request (see interrupt() and _interrupt_follows(): else user code sent the
SIGINT).  So the client never waits for the driver to say a snippet started,
and a ^C meant for a snippet that ended does not interrupt the next one.

The round trip of a small snippet is on the hot path, so the main thread does
it alone, without waiting for other threads: it reads requests itself (while
a snippet runs the client sends nothing but ^C and its interrupt request),
switches capture periods (under the capture's io_lock, which the pump holds
while it reads and sends), sends small frames from pre-formatted bytes,
compiles a repeated snippet once, and does its checks after the result,
while the client handles it: few and cheap, for a client that sends its
next request at once (a benchmark, a script of snippets) still waits for
them, and the kernel worker that carries the result may wait for this CPU.
Then it polls for the next request for a moment (busy_poll, yielding the CPU at
each turn) before it blocks: waking up is the dearest step of a round trip.
Standard library only; runs on Python 3.8 and later.
"""

# Only what starts fast: the interpreter runs with -S and these imports are on
# the way to the first result (re, enum, json, base64, linecache are not).
import _ast, _signal, _thread, binascii, builtins, codecs, errno, fcntl, io
import os, select, sys, termios, threading, time, types
from _collections import deque

# The driver's own builtins: a snapshot that user code cannot reach.  Every
# function defined below looks names up in it (a function takes its builtins
# from its globals when it is made), so `del builtins.type` in a snippet
# breaks that snippet's world, not the driver's.
__builtins__ = dict(builtins.__dict__)

PROTOCOL = 1
DEFAULT_MAX_OUTPUT = 4 << 20      # per stream and snippet: PROTOCOL_DEFAULT_MAX_OUTPUT
BATCH = 256 << 10                 # bytes per stream frame while output is forwarded live
BIG_READ = 1 << 20                # read size once output is only counted (tail, drain)
PIPE_SIZE = 1 << 20
TTY_READ = 64 << 10
TEXT_BUFFER = 64 << 10            # sys.stdout/err: text kept before a write into the pipe
FLUSH_DELAY = 0.05                # ... and at most this long (seconds) after a write
SITE_WAIT = 0.05                  # idle this long after ready: import site (-S)
SITE_TRIES = 3                    # ... tries, if something cuts it short
SOURCE_BUDGET = 32 << 20          # bytes of snippet source kept in linecache ...
SOURCE_COUNT = 1 << 14            # ... and snippets (a dict of them grows slow)
MAX_FIGURES = 1000                # pyplot figures shown after a snippet, at most
CODE_CACHE = 256                  # compiled snippets kept, keyed by their source ...
CODE_CACHE_SOURCE = 16 << 10      # ... if it is at most this long
INTERRUPT_WAIT = 200 * 10 ** 6   # ns: for the interrupt request after a ^C (_interrupt_follows)
BUSY_POLL = 100                   # us: after a result, poll this long for the next request
THOROUGH_EVERY = 10 ** 7          # ns: the thorough check at least this often (see _check)
END = b":ptybox>>>"
EXIT_NO_TERMINAL = 119            # our terminal is gone for good: PROTOCOL_EXIT_NO_TERMINAL
EXIT_NO_FDS = 118                 # no fd can be opened (RLIMIT_NOFILE): PROTOCOL_EXIT_NO_FDS
EXIT_NO_RESULT = 117              # a result cannot be sent, try as we may: PROTOCOL_EXIT_NO_RESULT
STAMP = "_ptybox_snippet"         # Thread attribute: id of the snippet that started it
NO_STDIN = "input() is not available in a ptybox session: there is no stdin"
F_DUPFD_CLOEXEC = getattr(fcntl, "F_DUPFD_CLOEXEC", 1030)
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
_PIPE = object()                  # route: "write into the capture pipe"
_UNSTAMPED = object()             # a thread not started through threading.Thread
_DRIVER_GLOBALS = globals()       # frames running with these are driver frames


def _snapshot(module):
    """module's namespace as it is now, in a module of the driver's own: a
    snippet that replaces os.read or fcntl.ioctl changes its world, not the
    driver's (which would hang, or fail every snippet from then on)."""
    copy = types.ModuleType(module.__name__)
    copy.__dict__.update(module.__dict__)
    return copy


os, fcntl, termios, select, _signal, time, codecs, binascii, threading = map(
    _snapshot, (os, fcntl, termios, select, _signal, time, codecs, binascii, threading))
_CodeType = types.CodeType
_get_ident = threading.get_ident
_THREADS = threading._active          # ident -> Thread, without making one up
_text_flush = io.TextIOWrapper.flush
_perf_ns = time.perf_counter_ns
_dup2 = os.dup2
_sched_yield = os.sched_yield
_gettrace, _settrace = sys.gettrace, sys.settrace
_getprofile, _setprofile = sys.getprofile, sys.setprofile
_map = map
_SYS = sys.__dict__                   # (user code may delete sys.stdout, sys.modules ...)
_MODULES = sys.modules                # the interpreter's own, whatever sys.modules names
_BUILTINS = builtins.__dict__
_SIGINT, _SIGINT_ONLY = _signal.SIGINT, (_signal.SIGINT,)
try:                                  # the json package's own C accelerators, without
    import _json                      # importing json (and re) at start-up

    class _JSONContext:
        strict, object_hook, object_pairs_hook = True, None, None
        parse_float, parse_int, parse_constant = float, int, float

    def _not_json(obj):
        raise TypeError("%s is not JSON serializable" % type(obj).__name__)

    _encode = _json.make_encoder(None, _not_json, _json.encode_basestring_ascii, None,
                                 ":", ",", False, False, True)
    _scan = _json.make_scanner(_JSONContext())

    def _dumps(obj):
        return "".join(_encode(obj, 0))

    def _loads(text):
        try:
            obj, end = _scan(text, 0)
        except StopIteration as e:
            raise ValueError("not JSON (at character %d)" % e.value) from None
        except SystemError:                  # _json raises JSONDecodeError only once
            import json                      # json.decoder is imported: let it say why
            return json.loads(text)
        if end != len(text) and text[end:].strip():
            raise ValueError("extra data after the JSON value")
        return obj
except (ImportError, AttributeError):
    import json
    _dumps = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode
    _loads = json.JSONDecoder().decode
_URLSAFE = bytes.maketrans(b"-_", b"+/")
_CONTROL = bytes(0 if i < 0x20 and i not in b"\t\n\r" else i for i in range(256))


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


_CUT = {}                         # ident: True, _cap_text cut something in that thread


def _cap_text(text, limit):
    """text cut to at most limit UTF-8 bytes (0: no limit), saying so (and in
    _CUT, for the thread: its snippet's result says truncated)."""
    data = text.encode("utf-8", "backslashreplace")
    if not limit or len(data) <= limit:
        return text
    _CUT[_get_ident()] = True
    cut = _char_start(data, limit)
    return data[:cut].decode("utf-8", "replace") + "...[%d bytes truncated]" % (len(data) - cut)


def _payload(obj):
    """obj as a frame payload: printable ASCII JSON without < or >."""
    payload = _dumps(obj).encode("ascii")
    payload = payload.replace(b"<", b"\\u003c").replace(b">", b"\\u003e")
    if b"\\u0000" in payload:
        # The client's JSON strings end at NUL: send U+FFFD, as for other
        # bytes that cannot be shown (an escaped backslash is left alone).
        import re
        payload = re.sub(rb"(?<!\\)((?:\\\\)*)\\u0000", rb"\1\\ufffd", payload)
    return payload.replace(b"\x7f", b"\\u007f")


def _frame_cap(max_output):
    """The longest payload the client takes (PROTOCOL_MAX_PAYLOAD): it drops
    a longer frame unread, so a result over it would never arrive."""
    return max_output * 4 + (16 << 20)


def _fit_bundle(data, limit, what):
    """A MIME bundle cut down to its text/plain (at most limit bytes)."""
    dropped = ", ".join(k for k in data if k != "text/plain")
    text = _cap_text(data.get("text/plain", ""), limit)
    if dropped:
        _CUT[_get_ident()] = True
        text += "\n[ptybox: %s dropped: the %s was too large to send]" % (dropped, what)
    return {"text/plain": text}


def _fit_error(error, limit):
    """An error cut down: name and value, and the traceback's last lines
    (where it ends matters most), each part at most limit bytes."""
    lines, left = [], limit
    for line in reversed(error.get("traceback", ())):
        line = _cap_text(line, left)
        lines.append(line)
        left -= len(line.encode("utf-8", "backslashreplace"))
        if left <= 0:
            break
    lines.reverse()
    return {"name": _cap_text(error.get("name", ""), limit),
            "value": _cap_text(error.get("value", ""), limit), "traceback": lines}


def _json_ascii(data):
    """ASCII data as the inside of a JSON string for a payload (see _payload),
    or None if it holds control characters other than tab, CR and LF.
    Several times faster than json.dumps for output that is mostly text."""
    if data.translate(_CONTROL).find(b"\0") >= 0:
        return None
    return (data.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n")
            .replace(b"\r", b"\\r").replace(b"\t", b"\\t").replace(b"<", b"\\u003c")
            .replace(b">", b"\\u003e").replace(b"\x7f", b"\\u007f"))


def _strip_driver_frames(exc):
    """exc's traceback without the frames of the driver (its SIGINT handler)."""
    kept, tb = [], exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_globals is not _DRIVER_GLOBALS:
            kept.append(tb)
        tb = tb.tb_next
    for a, b in zip(kept, kept[1:] + [None]):
        a.tb_next = b
    exc.__traceback__ = kept[0] if kept else None


def _stamped_call(stamp, fn, /, *args, **kwargs):
    """fn(*args, **kwargs) in a pool thread, under the stamp of its snippet."""
    thread = threading.current_thread()
    old = getattr(thread, STAMP, _UNSTAMPED)
    try:
        setattr(thread, STAMP, stamp)
    except Exception:
        return fn(*args, **kwargs)
    try:
        return fn(*args, **kwargs)
    finally:
        if old is _UNSTAMPED:
            delattr(thread, STAMP)
        else:
            setattr(thread, STAMP, old)


def _no_signals():
    """In a thread of the driver: signals go to the main thread instead (their
    handlers run there anyway).  A signal would end a blocked read of the
    terminal early, and that read may hold the last reference to it while
    user code has closed our fd: the client would then see the terminal close."""
    _signal.pthread_sigmask(_signal.SIG_BLOCK, _signal.valid_signals())


def _renamed(code, filename):
    """code (and the code objects it holds) as if compiled from filename."""
    consts = code.co_consts
    for c in consts:
        if type(c) is _CodeType:
            consts = tuple(_renamed(c, filename) if type(c) is _CodeType else c
                           for c in consts)
            return code.replace(co_filename=filename, co_consts=consts)
    return code.replace(co_filename=filename)


# ---------------------------------------------------------------- terminal

class Terminal:
    """The private terminal fd: raw mode, request lines in, frames out."""

    def __init__(self):
        self.fd = _private(0, keep=True)
        self.ident = _identity(self.fd)
        self.lock = threading.RLock()        # one frame per write, whole (owner: _late_write)
        self.writing = False                 # a frame is being written (lock held)
        self.deferred = []                   # frames a signal handler wrote meanwhile
        self.recover_lock = threading.Lock()
        self.start = None                    # b"<<<ptybox:NONCE:" once known
        # What was read and not taken: (buffer, position in it, start of a
        # line that spans reads (a tuple), the chunk that the buffer is).
        # One attribute, replaced whole: see read_line.
        self.rs = (b"", 0, (), None)
        self.taken = self.rs                 # rs once read_line's line is taken
        self.chunks = deque()                # what the last read returned
        self.raw = None                      # the attributes set_raw() last set
        self.mode = bytearray(256)           # what TCGETS gives (ensure)
        self.raw_mode = None                 # ... in the mode set_raw() set
        self.spin_until = 0                  # _perf_ns(): read_line polls until then
        self.spin_fd, self.spin_poll = None, None
        self.set_raw()

    def recover(self, bad_fd=None):
        """Reopen the terminal after user code closed or replaced our fd."""
        with self.recover_lock:
            if bad_fd is not None and bad_fd != self.fd:
                return                       # another thread did it already
            try:
                fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
            except OSError:
                os._exit(EXIT_NO_TERMINAL)   # the client restarts us
            self.fd = _private(fd)
            self.ident = _identity(self.fd)
        self.set_raw()

    def check(self):
        if _identity(self.fd) != self.ident:
            self.recover(self.fd)

    def ensure(self, thorough=False):
        """Before a result: our fd is still a terminal in our mode, or made so.
        One TCGETS: a closed fd or one that is no longer a terminal fails
        it, a changed mode differs; only another terminal put in our fd's
        place in the very same mode passes, unless thorough (an fstat).
        Into a kept buffer, compared as bytes: tcgetattr() builds some forty
        objects, on the way to every result."""
        mode = self.mode
        try:
            fcntl.ioctl(self.fd, termios.TCGETS, mode)
        except OSError:
            mode = None
        if mode != self.raw_mode or thorough:
            self.check()
            self.set_raw()

    def set_raw(self):
        """(Re-)assert raw mode; ^C still raises SIGINT and flushes nothing.
        Frames written in a mode user code set are safe short of OLCUC: no
        CR, LF or tab is ever raw in a frame."""
        fd = self.fd
        try:
            old = termios.tcgetattr(fd)
        except termios.error:
            return
        if old == self.raw:
            self._note_mode()
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
                return
        self.raw = new
        self._note_mode()

    def _note_mode(self):
        """Our mode as ensure() will read it: the struct of TCGETS, whatever
        its size on this machine, at the start of a zeroed buffer."""
        buf = bytearray(len(self.mode))
        try:
            fcntl.ioctl(self.fd, termios.TCGETS, buf)
        except OSError:
            buf = None
        self.raw_mode = buf

    def read_line(self):
        """The next line, stripped, or None at end of file; it stays the next
        one until the caller takes it: `term.rs = term.taken`.  (The mode is
        re-asserted after each snippet, the only time it can have changed.)
        A user's signal handler may run, and raise, between any two steps
        here: so what os.read returns lands in self.chunks within one C call
        (deque.extend), the read state is one attribute replaced whole, a
        chunk already in it is recognised by identity (a fresh 1-tuple from
        zip: os.read may return the same cached object for equal bytes),
        and a line read but not taken when an exception comes is read again."""
        while True:
            buf, pos, parts, chunk = self.rs
            i = buf.find(b"\n", pos)
            if i >= 0:
                line = buf[pos:i]
                if parts:
                    line = b"".join(parts) + line
                self.taken = (buf, i + 1, (), chunk)
                return line.replace(b"\r", b"").strip()
            chunks = self.chunks
            if chunks and chunks[0] is chunk:
                chunks.popleft()             # (in rs already; the look-ahead may have read on)
            if not chunks:
                if self.spin_until and _perf_ns() < self.spin_until:
                    self._spin()
                try:
                    chunks.extend(zip(_map(os.read, (self.fd,), (TTY_READ,))))
                except OSError as e:
                    if type(e) is not OSError and type(e) is not BlockingIOError:
                        raise                # a signal handler's, not the read's
                    chunks.append((self._retry(os.read, TTY_READ),))
            chunk = chunks[0]
            if not chunk[0]:
                return None
            self.rs = (chunk[0], 0, parts + (buf[pos:],) if pos < len(buf) else parts, chunk)

    def _spin(self):
        """Poll for the next request until spin_until (busy_poll after a result)
        before blocking for it.  A client that sends it soon (a script, an
        agent, a benchmark) then finds this thread running: a blocked one
        costs a wake-up, and in a VM whose idle CPUs halt that is an exit
        and an interrupt to the hypervisor, tens of microseconds.  Each
        turn yields the CPU: a client on this very CPU runs at once."""
        if self.spin_fd != self.fd:
            self.spin_poll, self.spin_fd = select.poll(), self.fd
            self.spin_poll.register(self.fd, select.POLLIN)
        poll, until = self.spin_poll.poll, self.spin_until
        self.spin_until = 0
        try:
            while not poll(0) and _perf_ns() < until:
                _sched_yield()
        except OSError:                      # (EINVAL under RLIMIT_NOFILE 0): just read
            pass

    def pending_lines(self, wait_ns):
        """The complete lines read and not taken yet, after reading what comes
        within wait_ns (one read: a request line is written whole); None at
        end of file.  What it reads lands in chunks in one C call, queued for
        read_line, and rs is left alone: a handler raising at any point loses
        nothing, and read_line takes every line in order."""
        chunks = self.chunks
        if wait_ns > 0 and _readable(self.fd, wait_ns / 1e9):
            try:                             # (queued behind what rs holds: read_line)
                chunks.extend(zip(_map(os.read, (self.fd,), (TTY_READ,))))
            except OSError:
                return None
            if not chunks[-1][0]:
                return None                  # (end of file: read_line's to say)
        buf, pos, parts, chunk = self.rs
        later = b"".join(c[0] for c in chunks if c is not chunk)
        return (b"".join(parts) + buf[pos:] + later).split(b"\n")[:-1]

    def unread(self):
        """Whether input is here that read_line has not returned yet."""
        buf, pos, _, chunk = self.rs
        chunks = self.chunks
        return pos < len(buf) or len(chunks) > 1 or bool(chunks) and chunks[0] is not chunk

    def write(self, *parts):
        """Write the parts as one unit: one writev, finished on a partial write.
        Checks the fd first: the pump sends while user code runs, and a pipe
        that user code put in our fd's place would block it for good."""
        with self.lock:
            self._frame(parts, sum(map(len, parts)), True)

    def _frame(self, parts, size, check):
        """(lock held) One frame, whole: one written by a signal handler of
        this thread in the middle of another waits for it (_write_deferred)."""
        if self.writing or self.deferred is None:
            if self.deferred is not None:
                self.deferred.append(parts)
            return
        self.writing = True
        try:
            if check:
                self.check()
            self._writev(parts, size)
        finally:
            self.writing = False
        if self.deferred:
            self._write_deferred()

    def _write_deferred(self):
        """Frames that a signal handler of this thread wrote while one was
        being written (display() in a SIGALRM handler, say): after it, whole.
        What they set off in turn is dropped (a printing gc callback would
        feed itself for ever)."""
        deferred, self.deferred = self.deferred, None
        try:
            for parts in deferred:
                self._writev(parts, sum(map(len, parts)))
        finally:
            self.deferred = []

    def _writev(self, parts, size):
        try:
            n = os.writev(self.fd, parts)
        except OSError as e:
            if type(e) is not OSError and type(e) is not BlockingIOError:
                raise                        # a signal handler's, not the write's
            n = self._retry(os.writev, parts)
        if n < size:
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
                if type(e) is not OSError:
                    raise                    # a signal handler's
                if e.errno != errno.EBADF:
                    os._exit(0 if e.errno == errno.EIO else EXIT_NO_TERMINAL)
                self.recover(fd)

    def send(self, obj):
        """One frame.  The payload is printable ASCII without < or >."""
        self.write(self.start, _payload(obj), END)

    def send_payload(self, payload):
        """One frame of a payload made of parts that _payload() returned."""
        start = self.start
        with self.lock:
            self._frame((start, payload, END), len(start) + len(payload) + len(END), False)


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
        self.wident = _identity(self.wfd)
        os.set_blocking(self.rfd, False)
        self.decoder = _decoder()
        self.tail = deque()
        self.frame = (-1, b"", b"")          # (period, payload head, payload tail): _feed
        # The budget of period number `period` (Capture._budget): head_left,
        # bytes still forwarded live (None: all); tail_cap, the size of the
        # tail ring kept after the head (0: drop and pause instead).
        self.period, self.head_left, self.tail_cap = -1, None, None
        self.reset()

    def reset(self):
        """Pristine for a new period (the budget is set apart)."""
        if self.decoder.buffer:
            self.decoder.reset()
        if self.tail:
            self.tail.clear()
        self.tail_len = self.dropped = 0
        self.paused = False


class Capture:
    """Pipes on fds 1 and 2 and the pump thread that turns them into frames.

    Time is cut into periods: a snippet (output forwarded as that snippet's,
    head + tail) or an idle period after it (output sent as "late", at most
    max_output bytes per stream, then the pipe is left alone until the next
    snippet).  Whoever reads the pipes and sends what they held does it under
    io_lock: the pump, and the main thread when it drains them and switches
    periods (begin, end), so no byte crosses from one period to another.
    The pump also flushes sys.stdout/err (streams) FLUSH_DELAY after they
    were first written to, straight into the capture, not into the pipe."""

    def __init__(self, term):
        self.term = term
        self.pipes = [_Pipe("stdout"), _Pipe("stderr")]
        self.by_fd = {p.rfd: p for p in self.pipes}
        self.drain_poll = select.poll()
        for p in self.pipes:
            self.drain_poll.register(p.rfd, select.POLLIN)
        r, w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self.wake_r, self.wake_w = _private(r), _private(w)
        self.fds = [(fd, _identity(fd)) for p in self.pipes for fd in (p.rfd, p.wfd)]
        self.fds += [(fd, _identity(fd)) for fd in (self.wake_r, self.wake_w)]
        # The drain's poll also watches our other fds, for nothing: an event on
        # one is a closed fd or a pipe whose other end is gone.
        for fd in (self.pipes[0].wfd, self.pipes[1].wfd, self.wake_r, self.wake_w):
            self.drain_poll.register(fd, 0)
        self.io_lock = threading.Lock()
        self.streams = ()                    # (sys.stdout, sys.stderr) of the driver
        self.bufs = ()                       # ... and their _TextBuffers
        self.broken = self.stopping = False
        self.sid, self.late, self.periods = None, True, 0
        self.max_output = DEFAULT_MAX_OUTPUT # of this period
        self.fed = False                     # _feed() ran in this period
        self.touched = True                  # _feed() ran since the pipes' last reset
        self._period(None, True, DEFAULT_MAX_OUTPUT)
        self.thread = threading.Thread(target=self._run, name="ptybox-pump", daemon=True)
        self.thread.start()

    # -- any thread (the main thread mostly)
    def begin(self, sid, max_output):
        """Snippet sid starts: what the pipes hold is late output of the idle
        period.  False if the capture is broken."""
        with self.io_lock:
            if self.broken:                  # (also set when the pump thread ends)
                return False
            out, err = self.bufs
            if out.dirty or err.dirty:
                self._flush_streams()        # text a thread added after the last flush
            # The last end() left the pipes empty (and saw any fd of ours
            # closed): unless the pump has fed something since, all they can
            # hold is a write racing with this request, which is the new
            # snippet's either way.  A system call less on every request.
            if self.touched:
                try:
                    events = self.drain_poll.poll(0)
                except OSError:
                    events = self._poll_by_hand()
                if events:
                    self._drain(events)
                    if self.broken:
                        return False
            if self.fed:
                self._finish()
            self._period(sid, False, max_output)
        return True

    def end(self, sid, max_output, result):
        """Snippet sid ended (its stdio flushed): drain, send its tail, go idle,
        then send its result (under io_lock: no late frame of sid before it)."""
        with self.io_lock:
            # Even when broken (an fd of ours closed, the pump gone): the
            # pipes still hold the snippet's output, and _drain passes over
            # what is closed.
            try:
                events = self.drain_poll.poll(0)
            except OSError:
                events = self._poll_by_hand()
            if events:
                self._drain(events)
            if self.fed:
                self._finish()
            self._period(sid, True, max_output)
            self.term.send_payload(result)

    def sync(self):
        """Send what the pipes hold now (before a display frame)."""
        with self.io_lock:
            self._drain()

    def healthy(self):
        return (not self.broken and self.thread.is_alive()
                and all(_identity(fd) == ident for fd, ident in self.fds))

    def close(self):
        self.stopping = True
        if _identity(self.wake_w) == self.fds[-1][1]:
            self._wake()                     # (not into an fd that took its number)
        self.thread.join(1.0)
        for fd, ident in self.fds:
            if _identity(fd) == ident:
                os.close(fd)

    def _wake(self):
        try:
            os.write(self.wake_w, b"\0")
        except OSError:
            pass                             # full (already woken) or gone (pump sees POLLNVAL)

    # -- io_lock held
    def _period(self, sid, late, max_output):
        self.sid, self.late, self.max_output = sid, late, max_output
        self.periods += 1
        if not self.touched:                 # pristine pipes: _budget() when first fed
            return
        self.touched = False
        paused = False
        for p in self.pipes:
            paused = paused or p.paused
            p.reset()
            self._budget(p)
        if paused:
            self._wake()                     # the pump polls that pipe again

    def _budget(self, p):
        """p's budget for this period (head forwarded live, tail ring after it)."""
        max_output = self.max_output
        p.period = self.periods
        if not max_output:
            p.head_left = p.tail_cap = None
        elif self.late:
            p.head_left, p.tail_cap = max_output, 0
        else:
            p.head_left, p.tail_cap = max_output // 2, max_output - max_output // 2

    def _drain(self, events=None):
        """Read what the pipes hold now (events: what drain_poll just said)."""
        if events is None:
            try:
                events = self.drain_poll.poll(0)
            except OSError:
                events = self._poll_by_hand()
        for fd, ev in events:
            p = self.by_fd.get(fd)
            if p is None or ev & select.POLLNVAL:
                self.broken = True           # user code closed one of our fds
            else:
                self._drain_pipe(p)

    def _poll_by_hand(self):
        """What drain_poll.poll(0) would say, when poll() fails: it does with
        EINVAL under an RLIMIT_NOFILE below the number of fds it is given.
        Both pipes may hold something (_drain_pipe asks FIONREAD)."""
        return ([(p.rfd, select.POLLIN) for p in self.pipes]
                + [(fd, select.POLLNVAL) for fd, ident in self.fds if _identity(fd) != ident])

    def _drain_pipe(self, p):
        """Read what p holds now (FIONREAD bounds it: a writer that never
        stops cannot keep us here)."""
        fd = p.rfd
        try:
            n = int.from_bytes(fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"), sys.byteorder)
        except OSError:
            n = 64 << 20
        while n > 0:
            try:
                data = os.read(fd, min(n, BIG_READ))
            except BlockingIOError:
                break
            except OSError:
                self.broken = True
                break
            if not data:                     # every write end closed (or replaced)
                self.broken = True
                break
            n -= len(data)
            self._feed(p, data)

    def _feed(self, p, data):
        """Forward data within the head budget; ring or count the rest."""
        self.fed = self.touched = True
        if p.period != self.periods:
            self._budget(p)
        if p.head_left is None or len(data) <= p.head_left:
            if p.head_left is not None:
                p.head_left -= len(data)
            if not p.decoder.buffer and data.isascii():
                text = _json_ascii(data)     # most output: no decoding, no json.dumps
                if text is not None:
                    if p.frame[0] != self.periods:
                        p.frame = (self.periods,) + self._frame_parts(p)
                    self.term.write(self.term.start, p.frame[1], text, p.frame[2], END)
                    return
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
        if not self.fed:                     # (callers on the hot path test it first)
            return
        self.fed = False
        for p in self.pipes:
            text = p.decoder.decode(b"", True)
            if text:
                self._emit(p, text)
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

    def _frame_parts(self, p):
        """The payload of a stream frame of p around the JSON string's inside."""
        head = b'{"type":"stream","id":%s,"name":"%s","text":"' % (_payload(self.sid),
                                                                  p.name.encode())
        return head, b'","late":true}' if self.late else b'"}'

    def _emit(self, p, text, dropped=None):
        if not text and dropped is None:
            return
        frame = {"type": "stream", "id": self.sid, "name": p.name, "text": text}
        if self.late:
            frame["late"] = True
        if dropped is not None:
            frame["dropped"] = dropped
        self.term.send(frame)

    # -- pump side
    def _run(self):
        try:
            _no_signals()
            self._loop()
        except BaseException:
            self.broken = True
        finally:
            self.broken = self.broken or not self.stopping

    def _loop(self):
        # The terminal is not polled here, not even for nothing: a thread on
        # its wait queues is woken by every request and frame.
        watched, poller, deadline = None, None, None
        while not self.stopping:
            want = tuple(p for p in self.pipes if not p.paused)
            if want != watched:
                poller, watched = select.poll(), want
                poller.register(self.wake_r, select.POLLIN)
                for p in want:
                    poller.register(p.rfd, select.POLLIN)
            if deadline is None and any(s._ptybox_buf.dirty for s in self.streams):
                deadline = time.monotonic() + FLUSH_DELAY
            if deadline is not None:
                timeout = max(0.0, deadline - time.monotonic()) * 1000.0
            else:                            # paused pipes: look again now and then
                timeout = None if len(want) == len(self.pipes) else 1000.0
            try:
                events = poller.poll(timeout)
            except OSError:                  # EINVAL: see _poll_by_hand; select() works
                fds = [self.wake_r] + [p.rfd for p in want]
                try:
                    ready = select.select(fds, [], [], None if timeout is None
                                          else timeout / 1000.0)[0]
                    events = [(fd, select.POLLIN) for fd in ready]
                except (OSError, ValueError):
                    events = [(self.wake_r, select.POLLNVAL)]
            if any(ev & select.POLLNVAL for _, ev in events):
                self.broken = True           # user code closed one of our fds
                return
            ready = {fd for fd, _ in events}
            if self.wake_r in ready:
                try:
                    while os.read(self.wake_r, 4096):
                        pass
                    self.broken = True       # end of file: user code closed wake_w
                    return                   # (else every poll would say so at once)
                except BlockingIOError:
                    pass
            with self.io_lock:
                for p in want:
                    if p.rfd in ready and not p.paused:
                        self._read_batch(p)
                if deadline is not None and time.monotonic() >= deadline:
                    busy = not self._flush_streams()
                    deadline = time.monotonic() + FLUSH_DELAY / 10 if busy else None

    def _read_batch(self, p):
        if p.period != self.periods:
            self._budget(p)
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

    def _flush_streams(self):
        """Send the text buffered in the driver's sys.stdout/err straight into
        the capture, after what its pipe holds (the pump must never write
        into a pipe it drains).  False if one was busy: being flushed."""
        done = True
        for p, s in zip(self.pipes, self.streams):
            buf = s._ptybox_buf
            if not buf.dirty:
                continue
            if not buf.lock.acquire(False):
                done = False
                continue
            try:
                if _identity(s._ptybox_sink.fd) != p.wident:
                    buf.dirty = False        # fd 1 is elsewhere now: the writer flushes
                    continue
                self._drain_pipe(p)          # whole: flushes write it under buf.lock
                data = buf.take()
                if data:
                    self._feed(p, data)
            finally:
                buf.lock.release()
        return done


# ---------------------------------------------------------------- stdio objects

class _TextBuffer:
    """What sys.stdout or sys.stderr was given and did not write yet: str
    chunks.  Writers only append (atomic under the GIL: no lock on print()'s
    path); whoever empties it holds lock until the bytes are in the pipe (or
    in the capture), so the order is kept.  dirty: something may be in it;
    eager: 1 to flush at each line end (line_buffering), 2 at each write;
    gone: its stream was closed, or dropped when its fd failed."""
    __slots__ = ("chunks", "size", "dirty", "closed", "gone", "lock", "errors", "eager")

    def __init__(self, errors):
        self.chunks, self.size, self.dirty, self.closed = [], 0, False, False
        self.gone = False
        self.lock = threading.RLock()        # re-entrant: a signal handler may print
        self.errors, self.eager = errors, 0

    def take(self):
        """The bytes buffered (lock held); empty afterwards."""
        self.dirty = False                   # first: a write after this sets it again
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
        view, done = memoryview(b), 0
        while done < len(view):
            try:
                done += os.write(self.fd, view[done:])
            except BlockingIOError:          # user code set O_NONBLOCK: wait, lose nothing
                select.select([], [self.fd], [], 1.0)
        return done


class _OutStream(io.TextIOWrapper):
    """sys.stdout / sys.stderr: block-buffered UTF-8 over fd 1 or 2, except that
    text from a thread of an earlier snippet (or written while no snippet
    runs) goes out at once as late output of that snippet.  The text goes
    into a _TextBuffer, not into the C text layer (whose buffer threads that
    write at once can corrupt); the first write after a flush wakes the
    pump, which flushes FLUSH_DELAY later.  write() is a closure in the
    instance (made by _writer): print()'s path, without attribute lookups."""

    def write(self, s):
        return self.__dict__["write"](s)

    def flush(self):
        buf = self._ptybox_buf
        if buf.closed:
            raise ValueError("I/O operation on closed file.")
        with buf.lock:
            self._ptybox_sink.flush_text()
        _text_flush(self)                    # anything written around write()

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
        buf.chunks.append(s)
        buf.size += len(s)
        if buf.size >= TEXT_BUFFER or buf.eager and (buf.eager == 2 or "\n" in s or "\r" in s):
            stream.flush()
        elif not buf.dirty:
            buf.dirty = True
            driver.capture._wake()
        return len(s)
    return write


def _usable(stream):
    """False if stream is None, closed, detached, dropped or missing our parts."""
    try:
        return not (stream.closed or stream._ptybox_buf.gone or stream._ptybox_sink.dead)
    except (AttributeError, ValueError):     # (None, or parts deleted; detached)
        return False


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
        self.main_ident = threading.get_ident()
        self.running = None                  # id of the snippet running now
        self.max_output = DEFAULT_MAX_OUTPUT
        self.last_id = None                  # id that idle output belongs to
        self.result_pending = False
        self.checked = False                 # _check() ran since the last snippet
        self.thorough_at = 0                 # _perf_ns() of the last thorough one
        self.on_sigint = self._on_sigint     # one bound method: compared by identity
        self.armed = False                   # SIGINT raises KeyboardInterrupt
        self.sigint_seen = self.sigint_deferred = False
        self.sigint_raised = False           # ... and reached user code as KeyboardInterrupt
        self.sigint_idle = 0                 # ^Cs that came while idle, not yet explained
        self.forked = False                  # set in a child that user code forked
        self.tracers = None                  # user code's (tracer, profiler), paused
        self.display_cut = False             # a display of the running snippet was cut
        self.busy_poll = BUSY_POLL * 1000    # ns: of the running snippet's request
        self.pending = None                  # the request whose result is owed (result_pending)
        self.hits, self.hits_since = 0, 0    # serve() hit again and again: _hit
        self.stray_exc = None                # what cut it short (_stray)
        self.pool_patched = False            # ThreadPoolExecutor.submit stamps its work
        self.thread_pool_patched = False     # ... and multiprocessing's ThreadPool
        self.raw_stamps = {}                 # ident -> stamp of _thread's threads
        self.c_fflush = None                 # the C library's fflush, once ctypes is in
        self.site = None                     # a _DeferredSite until site is imported
        self.snippets = 0
        self.late_lock = threading.RLock()   # (its owner is known: _late_write)
        self.late_left, self.late_dropped = {}, {}
        self.late_used, self.late_max = True, None   # late_left needs a reset
        self.sources, self.source_bytes = deque(), 0
        self.unregistered = {}               # linecache entries, once it is imported
        self.code_cache = {}                 # source -> (body, last expression, nested code?, lines)
        self.module = types.ModuleType("__main__")
        self.module.__dict__["__builtins__"] = builtins
        self.ns = self.module.__dict__
        self.devnull = self._open_devnull()
        self.std_sources = ()                # what fds 0-2 are dup2()ed from: _check
        self.capture = Capture(term)
        self.stdin, self.streams = _NoStdin(), {}
        self.display = self._display_builtin()
        os.environ["MPLBACKEND"] = "Agg"
        if "" not in sys.path:
            sys.path.insert(0, "")           # like a REPL: import what you just wrote
        self._patch_thread_start()
        self._patch_exit()
        os.register_at_fork(before=self._before_fork, after_in_child=self._after_fork)
        self._reset_late(DEFAULT_MAX_OUTPUT)
        self._check()

    # -- checked and re-installed after every result, before the next snippet
    def _check(self, thorough=True):
        """Reopen or rebuild what user code closed or replaced, put fds 0-2, the
        SIGINT handler, its mask and sys.std* back.  Runs after the result, but
        a client that sends its next request at once still waits for it, so a
        quick check is four system calls, the three dup2 and the signal mask:
        a closed fd of ours fails a dup2, stops the pump (a POLLNVAL) or shows
        in the drain poll of Capture.end.  Whether one was replaced takes an
        fstat each, some 40 us in all: the thorough check runs after snippets of
        1 ms or more (anything that starts a process), after any snippet
        that ends THOROUGH_EVERY or more after the last thorough check (so
        after every one but in a fast series), and whenever the quick one
        fails or was cut short.  A
        faster snippet that dup2()s over our fds on purpose only confuses its
        own output for a while.  (The terminal's fd and mode are checked
        before every result: execute().)"""
        self.checked = False
        capture = self.capture
        # sys.std* first: a stream of the user's that _install drops may close
        # fd 0, 1 or 2 as it goes (os.fdopen(1, "w")), and the dup2s reopen it.
        if not thorough and not capture.broken:
            self._install(False)
            fd0, fd1, fd2 = self.std_sources
            try:
                _dup2(fd0, 0)
                _dup2(fd1, 1)
                _dup2(fd2, 2)
            except OSError:                  # one of ours is closed
                thorough = True
        else:
            thorough = True
        if thorough:
            self.thorough_at = _perf_ns()
            self.term.check()
            self.term.set_raw()              # (also before every result: execute())
            if not capture.healthy():
                capture.close()
                capture = self.capture = Capture(self.term)
            if _identity(self.devnull[0]) != self.devnull[1]:
                self.devnull = self._open_devnull()
            self.std_sources = (self.devnull[0], capture.pipes[0].wfd, capture.pipes[1].wfd)
            self._install(True)
            for fd, source in enumerate(self.std_sources):
                os.dup2(source, fd)
        if _signal.getsignal(_SIGINT) is not self.on_sigint:
            _signal.signal(_SIGINT, self.on_sigint)
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, _SIGINT_ONLY)
        self.checked = True

    def _install(self, thorough=True):
        """sys.std*, __main__, input() and display(), as each snippet finds them.
        Quick: our streams are replaced only if flagged gone, and the rest is
        compared before it is assigned (assignments to modules are slow)."""
        capture = self.capture
        try:                                 # (a new capture has none; detached: ValueError)
            out, err = capture.streams
            fresh = (thorough or out.closed or err.closed or out._ptybox_buf.gone
                     or err._ptybox_buf.gone)
        except (AttributeError, ValueError):
            fresh = True
        if fresh:
            out, err = self._stream("stdout", 1), self._stream("stderr", 2)
            capture.streams = (out, err)
            capture.bufs = self.bufs = (out._ptybox_buf, err._ptybox_buf)
        if self.stdin.closed:
            self.stdin = _NoStdin()
        stdin, display, module = self.stdin, self.display, self.module
        if not fresh:
            try:                             # (subscripts: no calls; KeyError if deleted)
                d, b = _SYS, _BUILTINS
                fresh = (d["stdout"] is not out or d["stderr"] is not err
                         or d["stdin"] is not stdin or d["__stdout__"] is not out
                         or d["__stderr__"] is not err or d["__stdin__"] is not stdin
                         or d["modules"] is not _MODULES or b["input"] is not _no_input
                         or b["display"] is not display or _MODULES["__main__"] is not module)
            except KeyError:
                fresh = True
        if fresh:
            sys.stdout = sys.__stdout__ = out
            sys.stderr = sys.__stderr__ = err
            sys.stdin = sys.__stdin__ = stdin
            sys.modules = _MODULES
            _MODULES["__main__"] = module
            builtins.input = _no_input
            builtins.display = display

    def _stream(self, name, fd):
        """Our sys.stdout or sys.stderr: the one we have, or a new one."""
        s = self.streams.get(name)
        if not _usable(s):
            s = self.streams[name] = self._make_stream(fd, name)
        return s

    def _before_fork(self):
        """fork() in user code: flush first, or the child would write the
        parent's buffered text a second time."""
        for s in list(self.streams.values()):
            try:
                s.flush()
            except BaseException:
                pass

    def _after_fork(self):
        """In a child forked by user code: locks held by vanished threads are new,
        and sys.stdout/err write through, for no pump flushes them here (a
        pool worker's print() would wait for its exit, or be lost to an
        os._exit, where the parent's snippet is long over)."""
        self.term.lock, self.term.recover_lock = threading.RLock(), threading.Lock()
        self.term.writing, self.term.deferred = False, []
        self.capture.io_lock, self.late_lock = threading.Lock(), threading.RLock()
        self.forked = True
        for s in self.streams.values():
            s._ptybox_buf.lock = threading.RLock()
            s._ptybox_buf.eager = 2

    @staticmethod
    def _open_devnull():
        fd = _private(os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC))
        return fd, _identity(fd)

    def _make_stream(self, fd, name):
        buf = _TextBuffer("backslashreplace")
        sink = _FdSink(fd, "<%s>" % name, buf)
        s = _OutStream(sink, encoding="utf-8", errors="backslashreplace")
        s._ptybox_buf, s._ptybox_sink = buf, sink
        s.write = _writer(s, self, name)
        return s

    def _flush_c_stdio(self):
        """What C code printed through the C library's stdout (a pipe: block
        buffered) belongs to this snippet.  Only once ctypes is imported:
        the usual way to call C from a snippet, and what we call it with."""
        try:
            if self.c_fflush is None:
                import ctypes
                self.c_fflush = ctypes.CDLL(None).fflush
                self.c_fflush.argtypes = (ctypes.c_void_p,)
            self.c_fflush(None)
        except Exception:
            pass

    def _flush_user_stdio(self):
        """Flush sys.stdout/err that user code put in place of ours."""
        for name in ("stdout", "stderr"):
            current = getattr(sys, name, None)
            if current is not None and current is not self.streams.get(name):
                self._call_user(lambda: current.flush())

    def _flush_stdio(self):
        """Flush our sys.stdout/err; a stream whose fd failed is replaced, never
        retried.  The first failure is returned (buffered text fails here, as
        Python's own stdout on a pipe fails at exit)."""
        failure = None
        for name, s in tuple(self.streams.items()):
            if not s._ptybox_buf.dirty:      # nothing buffered (closed: replaced later)
                continue
            try:
                s.flush()
            except BaseException as e:
                s._ptybox_sink.dead = s._ptybox_buf.gone = True
                del self.streams[name]
                failure = failure or e
        return failure

    def _patch_exit(self):
        """os._exit() in user code: what the process wrote before goes out
        first (the pump may not have read it, and the pipes die with the
        process), with what sys.stdout/err hold: a program's last words are
        what its user needs most.  Not in a forked child: its output goes
        into the pipes, which outlive it."""
        module, driver = _MODULES["os"], self
        real_exit = module._exit

        def _exit(status):
            if not driver.forked:
                driver._last_words()
            real_exit(status)

        _exit.__wrapped__, _exit.__doc__ = real_exit, real_exit.__doc__
        module._exit = _exit

    def _last_words(self):
        try:
            for s in tuple(self.streams.values()):
                try:
                    s.flush()
                except BaseException:
                    pass
            capture = self.capture
            if capture.io_lock.acquire(timeout=1.0):   # (held if a handler of ours called it)
                try:
                    capture._drain()
                    capture._finish()
                    for p in capture.pipes:  # sent: not again if _exit fails (bad argument)
                        p.reset()
                finally:
                    capture.io_lock.release()
        except BaseException:
            pass

    # -- threads and output routing
    def _stamp(self):
        """The snippet that the calling thread works for (None: no snippet)."""
        ident = _get_ident()
        if ident == self.main_ident:
            return self.running
        return self._thread_stamp(ident, self.running)

    def _thread_stamp(self, ident, default):
        """The stamp of thread ident, or default.  (Not current_thread(),
        which would leave a _DummyThread behind for a _thread thread.)"""
        thread = _THREADS.get(ident)
        if thread is None:
            return self.raw_stamps.get(ident, default)
        return getattr(thread, STAMP, default)

    def _patch_thread_start(self):
        """Threads carry the snippet that started them (STAMP): what they write
        once it is over is its late output, not the running snippet's.  So
        does pool work, whose thread an earlier snippet may have started."""
        original, driver = threading.Thread.start, self

        def start(thread, *args, **kwargs):
            """Stamp the thread with the snippet that starts it, then start it."""
            try:
                setattr(thread, STAMP, driver._stamp())
            except Exception:
                pass
            if not driver.pool_patched and "concurrent.futures.thread" in _MODULES:
                driver._patch_pool_submit()
            if not driver.thread_pool_patched and "multiprocessing.pool" in _MODULES:
                driver._patch_thread_pool()
            return original(thread, *args, **kwargs)

        start.__wrapped__ = original
        threading.Thread.start = start
        raw_start = _thread.start_new_thread

        def start_new_thread(function, args, kwargs=None):
            """The same stamp for a thread started without threading."""
            if not callable(function):
                raise TypeError("first arg must be callable")
            stamp = driver._stamp()

            def run(*a, **k):
                ident = _get_ident()
                driver.raw_stamps[ident] = stamp
                try:
                    return function(*a, **k)
                finally:
                    driver.raw_stamps.pop(ident, None)
            return raw_start(run, args) if kwargs is None else raw_start(run, args, kwargs)

        start_new_thread.__wrapped__ = raw_start
        _thread.start_new_thread = _thread.start_new = start_new_thread

    def _patch_pool_submit(self):
        """ThreadPoolExecutor (and asyncio's run_in_executor, to_thread): work
        runs under the stamp of the snippet that submitted it, whichever
        snippet started the worker.  Patched when its first worker starts:
        that first work item was submitted by the worker's own snippet."""
        self.pool_patched = True
        try:
            cls = _MODULES["concurrent.futures.thread"].ThreadPoolExecutor
            original = cls.submit
        except Exception:
            return
        driver = self

        def submit(self, fn, /, *args, **kwargs):
            return original(self, _stamped_call, driver._stamp(), fn, *args, **kwargs)

        submit.__wrapped__ = original
        submit.__doc__ = original.__doc__
        cls.submit = submit

    def _patch_thread_pool(self):
        """multiprocessing.pool.ThreadPool (multiprocessing.dummy.Pool): the
        same for its work and for the callbacks its result thread runs (the
        methods that every other one goes through).  Only the thread pool:
        a process pool pickles what it is given."""
        self.thread_pool_patched = True
        try:
            cls = _MODULES["multiprocessing.pool"].ThreadPool
            apply_async, map_async = cls.apply_async, cls._map_async
            imap, imap_unordered = cls.imap, cls.imap_unordered
            from _functools import partial
        except Exception:
            return
        driver = self

        def stamped(stamp, fn):
            return None if fn is None else partial(_stamped_call, stamp, fn)

        def patched_apply_async(self, func, args=(), kwds={}, callback=None,
                                error_callback=None):
            stamp = driver._stamp()
            return apply_async(self, stamped(stamp, func), args, kwds, stamped(stamp, callback),
                               stamped(stamp, error_callback))

        def patched_map_async(self, func, iterable, mapper, chunksize=None, callback=None,
                              error_callback=None):
            stamp = driver._stamp()
            return map_async(self, stamped(stamp, func), iterable, mapper, chunksize,
                             stamped(stamp, callback), stamped(stamp, error_callback))

        def patched_imap(self, func, iterable, chunksize=1):
            return imap(self, stamped(driver._stamp(), func), iterable, chunksize)

        def patched_imap_unordered(self, func, iterable, chunksize=1):
            return imap_unordered(self, stamped(driver._stamp(), func), iterable, chunksize)

        for name, fn, original in (("apply_async", patched_apply_async, apply_async),
                                   ("_map_async", patched_map_async, map_async),
                                   ("imap", patched_imap, imap),
                                   ("imap_unordered", patched_imap_unordered, imap_unordered)):
            fn.__wrapped__, fn.__doc__ = original, original.__doc__
            setattr(cls, name, fn)

    def _route(self):
        """_PIPE for writes of the running snippet, else the id to report late."""
        running, ident = self.running, _get_ident()
        if ident == self.main_ident:
            return _PIPE if running is not None else self.last_id
        stamp = self._thread_stamp(ident, _UNSTAMPED)
        if running is not None and (stamp is _UNSTAMPED or stamp == running):
            return _PIPE
        return self.last_id if stamp is _UNSTAMPED or stamp is None else stamp

    def _late_write(self, sid, name, text):
        if self.late_lock._is_owned():
            # A signal handler or a thread's tracer printing from inside a
            # late write of this thread (one inside a frame's write waits
            # for it: Terminal.write).
            return
        data = text.encode("utf-8", "backslashreplace")
        with self.late_lock:
            self.late_used = True
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
        if not self.late_used and max_output == self.late_max:
            return                           # (set under late_lock before any change)
        with self.late_lock:
            self.late_used, self.late_max = False, max_output
            dropped = self.late_dropped
            if dropped:
                self.late_dropped = {}
            left = max_output or None
            if self.late_left.get("stdout", 0) != left or self.late_left.get("stderr", 0) != left:
                self.late_left = {"stdout": left, "stderr": left}
        if not dropped:
            return
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
            self.capture.sync()
        payload = _payload(frame)
        cap = _frame_cap(self.max_output)
        if len(payload) > cap:
            frame["data"] = _fit_bundle(data, cap // 64, "display")
            payload = _payload(frame)
        if _CUT and _CUT.pop(_get_ident(), False) and where is _PIPE:
            self.display_cut = True          # the running snippet's result says truncated
        term = self.term
        if threading.get_ident() != self.main_ident or not self.armed:
            term.write(term.start, payload, END)
            return
        self.armed = False                   # a ^C must not cut a frame in two
        try:
            term.write(term.start, payload, END)
        finally:
            self.armed = True
        if self.sigint_deferred:
            self.sigint_deferred = False
            self.sigint_raised = True
            raise KeyboardInterrupt

    @staticmethod
    def _mime(obj, limit):
        data = {"text/plain": _cap_text(repr(obj), limit)}
        png = getattr(obj, "_repr_png_", None)
        png = png() if callable(png) else None
        if isinstance(png, (bytes, bytearray)):
            data["image/png"] = binascii.b2a_base64(png, newline=False).decode("ascii")
        return data

    def _show_figures(self):
        """Like Jupyter's inline backend: every open pyplot figure, then close it."""
        plt = _MODULES.get("matplotlib.pyplot")
        if plt is None or not hasattr(plt, "get_fignums"):
            return
        def fignums():                       # (a list, but any iterable, bounded)
            nums = []
            for num in plt.get_fignums() or ():
                nums.append(num)
                if len(nums) >= MAX_FIGURES:
                    break
            return nums

        nums, exc = self._call_user(fignums)
        for num in nums or ():
            def show():
                fig = plt.figure(num)
                buf = io.BytesIO()
                fig.savefig(buf, format="png", bbox_inches="tight")
                png = binascii.b2a_base64(buf.getvalue(), newline=False).decode("ascii")
                self.display_data({"image/png": png,
                                   "text/plain": repr(fig)})
            _, exc = self._call_user(show)
            self._call_user(plt.close, num)
            if isinstance(exc, KeyboardInterrupt):
                break

    # -- SIGINT
    def _on_sigint(self, signum, frame):
        if self.running is None:             # between snippets: see interrupt()
            self.sigint_idle += 1
            return
        self.sigint_seen = True
        if self.armed:
            self.sigint_raised = True
            raise KeyboardInterrupt
        self.sigint_deferred = True          # raised as user code resumes

    def _call_user(self, fn, *args):
        """fn(*args) with SIGINT armed: (value, None) or (None, exception)."""
        value = exc = None
        try:
            try:
                self.armed = True
                if self.tracers is not None:
                    self._resume_tracing()
                if self.sigint_deferred:
                    self.sigint_deferred = False
                    self.sigint_raised = True
                    raise KeyboardInterrupt
                value = fn(*args)
            finally:
                self.armed = False
                # A tracer or profiler that user code set (sys.settrace) is
                # off while driver code runs, and back on for the next user
                # code: one that prints would print from inside the driver's
                # writes, under their locks.  (Inline: no frame to trace.)
                if _gettrace() is not None or _getprofile() is not None:
                    self.tracers = (_gettrace(), _getprofile())
                    _settrace(None)
                    _setprofile(None)
        except BaseException as e:           # everything, SystemExit and ^C included
            exc = e
        if self.forked:                      # a fork() of user code got here: end it
            self._exit_forked_child(exc)
        return value, exc

    def _resume_tracing(self):
        """The user's tracer and profiler back on, for user code (_call_user)."""
        tracer, profiler = self.tracers
        self.tracers = None
        _settrace(tracer)
        _setprofile(profiler)

    def _exit_forked_child(self, exc):
        code = 0
        if isinstance(exc, SystemExit):
            code = exc.code if isinstance(exc.code, int) else (exc.code is not None)
        elif exc is not None:
            import traceback
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
        hit = self.code_cache.get(code)
        lines = code.splitlines(True) if hit is None else hit[3]
        # Tracebacks (and inspect) show snippet lines.  Until something imports
        # linecache (slow to import), sources wait in unregistered; old ones go
        # past a budget after the result (_trim_sources).
        linecache = _MODULES.get("linecache")
        entry = (len(code), None, lines, filename)
        if linecache is None or self.unregistered:
            self.unregistered[filename] = entry
            self._flush_sources()
        else:
            try:
                linecache.cache[filename] = entry
            except Exception:                # user code replaced linecache or its cache
                self.unregistered[filename] = entry
        self.sources.append((filename, len(code)))
        self.source_bytes += len(code)
        if hit is None:
            body, last = self._compile(code, filename, lines)
        else:
            body, last, nested, _ = hit
            if nested:
                body = _renamed(body, filename)
                last = None if last is None else _renamed(last, filename)
            else:
                body = body.replace(co_filename=filename)
                if last is not None:
                    last = last.replace(co_filename=filename)
        exec(body, self.ns)
        return None if last is None else eval(last, self.ns)

    def _compile(self, code, filename, lines):
        """Parse once; compile the body, and the last statement apart when it is
        an expression.  Kept for a repeated snippet unless compiling it wrote
        to stderr (a SyntaxWarning is shown each time, as before)."""
        err = self.streams.get("stderr")
        quiet = err is not None and not err._ptybox_buf.dirty
        try:
            tree = compile(code, filename, "exec", _ast.PyCF_ONLY_AST, dont_inherit=True)
            last = None
            if tree.body and isinstance(tree.body[-1], _ast.Expr):
                last = _ast.Expression(tree.body.pop().value)
            body = compile(tree, filename, "exec", dont_inherit=True)
            if last is not None:
                last = compile(last, filename, "eval", dont_inherit=True)
        except Exception as e:               # SyntaxError & co: no driver frames to show
            e.__traceback__ = None
            raise
        if quiet and not err._ptybox_buf.dirty and len(code) <= CODE_CACHE_SOURCE:
            if len(self.code_cache) >= CODE_CACHE:
                self.code_cache.clear()
            nested = any(type(c) is _CodeType for k in (body, last) if k is not None
                         for c in k.co_consts)
            self.code_cache[code] = (body, last, nested, lines)
        return body, last

    def _trim_sources(self):
        """The oldest go, down to 7/8 of both budgets (not one per snippet)."""
        while ((self.source_bytes > SOURCE_BUDGET // 8 * 7
                or len(self.sources) > SOURCE_COUNT // 8 * 7) and len(self.sources) > 1):
            old, n = self.sources.popleft()
            self.source_bytes -= n
            linecache = _MODULES.get("linecache")
            if self.unregistered.pop(old, None) is None and linecache is not None:
                try:
                    linecache.cache.pop(old, None)
                except Exception:
                    pass

    def _flush_sources(self):
        linecache = _MODULES.get("linecache")
        if linecache is None or not self.unregistered:
            return
        try:
            linecache.cache.update(self.unregistered)
        except Exception:                    # not linecache's as it was: kept for when it is
            return
        self.unregistered = {}

    def _error(self, exc):
        """name, value and traceback of exc (each part cut to max_output bytes)."""
        import traceback
        self._flush_sources()
        cls = type(exc)
        module = getattr(cls, "__module__", None)
        name = cls.__qualname__
        if module not in ("builtins", "__main__", None):
            name = "%s.%s" % (module, name)
        seen, chained = set(), exc           # drop the driver's own frames, also
        while chained is not None and id(chained) not in seen:   # from the ^C
            seen.add(id(chained))            # that the code caught, say
            _strip_driver_frames(chained)
            chained = chained.__cause__ or chained.__context__
        tb = exc.__traceback__
        sys.last_type, sys.last_value, sys.last_traceback = cls, exc, tb
        sys.last_exc = exc                   # Python 3.12+: what pdb.pm() looks at
        try:
            value = str(exc.code) if isinstance(exc, SystemExit) else str(exc)
        except Exception:
            value = "<unprintable %s object>" % cls.__name__
        try:
            lines = traceback.format_exception(cls, exc, tb)
        except Exception:                    # (a file name with a lone surrogate, say)
            lines = ["%s: %s\n" % (name, value) if value else "%s\n" % name]
        return {"name": name, "value": _cap_text(value, self.max_output),
                "traceback": [_cap_text(line, self.max_output) for line in lines]}

    def execute(self, sid, code, max_output):
        # The hot path: a snippet that prints little, raises nothing and leaves
        # the process as it found it costs a few attribute tests beyond running
        # it.  What may be slow runs only when a test says it is needed, and
        # the checks of what user code may have broken run after the result
        # (but for the terminal's fd and mode, which are checked before it).
        self.result_pending = True
        if not self.checked:
            self._check()                    # the last one was cut short
        self.checked = False                 # user code runs: check after the result
        if self.late_used or max_output != self.late_max:
            self._reset_late(max_output)
        self.sigint_seen = self.sigint_deferred = self.sigint_raised = False
        self.running = self.last_id = sid
        if self.sigint_idle:                 # the ^C for this snippet came first?
            self.sigint_idle = 0
            if self._interrupt_follows(sid):
                self.sigint_seen = self.sigint_deferred = True
        self.max_output = max_output
        if _CUT:
            _CUT.clear()
        self.display_cut = False
        capture = self.capture
        if not capture.begin(sid, max_output):
            self.running = None
            self._check()                    # pump gone or an fd closed: rebuilt, again
            self.running = sid
            capture = self.capture
            capture.begin(sid, max_output)

        bufs = self.bufs
        t0 = _perf_ns()
        value, exc = self._call_user(self._run_code, sid, code)
        if exc is None and (bufs[0].dirty or bufs[1].dirty):
            exc = self._flush_stdio()        # a write that fails fails the snippet
        t1 = _perf_ns()
        micros = (t1 - t0) // 1000
        if _signal.getsignal(_SIGINT) is not self.on_sigint:
            _signal.signal(_SIGINT, self.on_sigint)  # user code replaced it
        out, err = capture.streams
        if (exc is None and value is None and _SYS.get("stdout") is out
                and _SYS.get("stderr") is err and "matplotlib.pyplot" not in _MODULES
                and "ctypes" not in _MODULES and not self.sigint_raised
                and not self.display_cut):
            status, result = "ok", None      # (and no more user code to run)
        else:
            status, result, error = self._conclude(value, exc, max_output)
        # From here on, threads of this snippet write late output.  Text that
        # one of them buffered just before and the flush below misses goes
        # out as late output too (the pump's timer, or begin() at the latest).
        self.running = None
        if bufs[0].dirty or bufs[1].dirty:
            self._flush_stdio()
        if self.late_used:
            self._reset_late(max_output)
        # User code may have closed or replaced our terminal fd, or changed
        # its mode: put right before the result goes, or it could go into a
        # pipe that nobody reads, and the client's next request could arrive
        # in the user's mode or be read from another terminal (which only the
        # thorough check tells, see _check).
        thorough = micros >= 1000 or t1 - self.thorough_at >= THOROUGH_EVERY
        self.term.ensure(thorough)
        cut = self.display_cut or bool(_CUT) and _CUT.pop(self.main_ident, False)
        if status == "ok" and result is None and not cut:
            # result and error left out when null: the client parses less
            payload = (b'{"type":"result","id":%s,"status":"ok","duration_ms":%d.%03d}'
                       % (b"%d" % sid if type(sid) is int else _payload(sid),
                          micros // 1000, micros % 1000))
        else:
            frame = {"type": "result", "id": sid, "status": status, "result": result,
                     "error": error, "duration_ms": micros / 1000}
            if self.sigint_raised and status != "interrupted":
                frame["sigint"] = True       # a ^C reached the code, which caught it
            payload = _payload(frame)
            cap = _frame_cap(max_output)
            if len(payload) > cap:
                # Each text part cut to cap / 64 UTF-8 bytes: escaped (six
                # bytes a byte at most) all of them stay under half the cap.
                part = cap // 64
                if result is not None:
                    frame["result"] = _fit_bundle(result, part, "result")
                if error is not None:
                    frame["error"] = _fit_error(error, part)
                payload = _payload(frame)
            if cut or _CUT.pop(self.main_ident, False):
                frame["truncated"] = True
                payload = _payload(frame)
        capture.end(sid, max_output, payload)
        if self.busy_poll:                   # (from the end of the code: a call less)
            self.term.spin_until = t1 + self.busy_poll
        self.result_pending = False
        self.snippets += 1
        if self.source_bytes > SOURCE_BUDGET or len(self.sources) > SOURCE_COUNT:
            self._trim_sources()
        self._check(thorough)

    def _conclude(self, value, exc, max_output):
        """(status, result, error) of a snippet that returned a value, raised,
        replaced sys.stdout/err or uses pyplot: the user code that this
        still runs (repr, traceback, flushes, figures) is interruptible."""
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
        out, err = self.capture.streams
        if _SYS.get("stdout") is not out or _SYS.get("stderr") is not err:
            self._flush_user_stdio()
        if "ctypes" in _MODULES:
            self._flush_c_stdio()
        if "matplotlib.pyplot" in _MODULES:
            self._show_figures()
            self._flush_user_stdio()
        return status, result, error

    # -- requests
    def interrupt(self, rid):
        """The interrupt request that followed a ^C: it names the snippet the
        client meant.  Requests are read only between snippets, so that one
        has ended (or never ran).  If its run saw a SIGINT, that was this ^C;
        if not, the ^C came while idle and is explained now.  Any other idle
        ^C is for the snippet read next (whose request follows this one), even
        one that came before this request was read."""
        if rid == self.last_id and self.sigint_seen:
            return
        if self.sigint_idle:
            self.sigint_idle -= 1

    def _interrupt_follows(self, sid):
        """Whether a ^C that came while idle was the client's, for snippet sid:
        the client writes its ^C and an interrupt request naming the snippet
        at once, and that request follows sid's in the input.  Else it came
        from user code (a leftover thread's os.kill or _thread.interrupt_main)
        and must not stop sid, which has not even started."""
        deadline, wait = _perf_ns() + INTERRUPT_WAIT, 0
        while True:
            lines = self.term.pending_lines(wait)
            if lines is None:
                return True                  # (cannot tell: as before)
            for line in lines:
                try:
                    req, _ = self._parse(line.replace(b"\r", b"").strip())
                except Exception:
                    continue
                if req is not None and req["op"] == "interrupt" and req.get("id") == sid:
                    return True
            wait = deadline - _perf_ns()
            if wait <= 0:
                return False

    def _request(self, line, why):
        """After _parse failed with why: the request on the line, or None when
        it was rejected (and told so).  A line that fails as no client sends
        it is tried once more before it counts as broken: a user's signal
        handler may have raised in the middle (a periodic timer, say), which
        fails the same line only once.  (An exception in _parse: RecursionError
        on absurd JSON, say.)"""
        req = None
        if why[2]:
            try:
                req, why = self._parse(line)
            except Exception as e:
                req, why = None, (None, "malformed request: %r" % (e,), True)
        if why is not None:
            self._reject(*why)
        return req

    def _parse(self, line):
        """(request, None), or (None, (id, message, broken)) for a bad line."""
        try:
            data = binascii.a2b_base64(line.translate(_URLSAFE) + b"=" * (-len(line) % 4))
            req = _loads(data.decode("utf-8"))
        except UnicodeDecodeError:           # say so under the request's id
            rid = None
            try:
                rid = _loads(data.decode("utf-8", "replace")).get("id")
            except Exception:
                pass
            return None, (rid, "the request is not valid UTF-8", False)
        except (ValueError, TypeError) as e:
            return None, (None, "malformed request: %s" % e, True)
        if type(req) is not dict:
            return None, (None, "a request must be a JSON object", True)
        op = req.get("op")
        if op == "exec":                     # (exact types: JSON makes no subclasses)
            if "max_output" not in req:
                req["max_output"] = DEFAULT_MAX_OUTPUT
            limit = req["max_output"]
            if type(req.get("code")) is not str:
                return None, (req.get("id"), "exec needs a string 'code'", True)
            if type(limit) is not int or limit < 0:
                return None, (req.get("id"), "max_output must be an integer >= 0", True)
            poll = req.get("busy_poll", BUSY_POLL)
            if type(poll) is not int or not 0 <= poll <= 10 ** 6:
                return None, (req.get("id"), "busy_poll must be an integer from 0 to 10**6", True)
        elif op not in ("interrupt", "ping", "shutdown"):
            return None, (req.get("id"), "unknown op %r" % (op,), True)
        return req, None

    def _reject(self, rid, message, broken=False):
        """An error frame for a request; broken: no client of ours sends such a
        line, so it was damaged on the way (the terminal's mode, say) or we
        are: the client starts a fresh interpreter."""
        frame = {"type": "error", "id": rid, "message": message}
        if broken:
            frame["broken"] = True
        self.term.send(frame)
        return None

    def serve(self):
        """Main loop: read requests and run them in order, whatever user code does.
        Hit again and again while recovering (user code raising in every call
        the driver makes, say: a sys.monitoring callback), it gives way to a
        fresh interpreter rather than spin, or leave a result never sent."""
        while True:
            try:
                self._serve()
            except BaseException:            # hit again while recovering: go on
                try:
                    self._hit()
                except BaseException:
                    pass

    def _hit(self):
        now = _perf_ns()
        if now - self.hits_since > 10 ** 9:
            self.hits, self.hits_since = 0, now
        self.hits += 1
        if self.hits >= 100:
            os._exit(EXIT_NO_RESULT)

    def _serve(self):
        term = self.term
        owed = 0
        while True:
            req = None
            try:
                if self.result_pending:
                    # An exception cut short even _stray (a tracer that user
                    # code put on its frame, say): the result is owed still.
                    owed += 1
                    if owed > 100:
                        os._exit(EXIT_NO_RESULT)
                    self._stray(self.pending, self.stray_exc)
                    continue
                owed = 0
                if (self.site is not None and not term.unread()
                        and not _readable(term.fd, 0 if self.snippets else SITE_WAIT)):
                    self.site.load()         # idle: the rest of a normal start-up
                line = term.read_line()
                if line is None:
                    os._exit(0)              # the terminal is gone: so are we
                if line:                     # (_request's first try, inline)
                    try:
                        req, why = self._parse(line)
                    except Exception as e:
                        req, why = None, (None, "malformed request: %r" % (e,), True)
                    if why is not None:
                        req = self._request(line, why)
                else:
                    req = None
                if req is None:
                    term.rs = term.taken
                    continue
                op = req["op"]
                if op == "exec":
                    # Taken, and from here on an exception (a user's signal
                    # handler) ends in a result: _stray sends it.  Until here
                    # one makes the line read again (read_line).
                    self.pending, self.stray_exc = req, None
                    self.result_pending = True  # (3.10+: no handler runs
                    term.rs = term.taken        # between these two)
                    self.busy_poll = req.get("busy_poll", BUSY_POLL) * 1000
                    self.execute(req.get("id"), req["code"], req["max_output"])
                    continue
                if op == "interrupt":
                    self.interrupt(req.get("id"))
                elif op == "ping":
                    term.send({"type": "pong", "id": req.get("id")})
                else:
                    os._exit(0)              # shutdown
                term.rs = term.taken
            except BaseException as exc:     # e.g. a user's signal handler firing in our code
                self.stray_exc = exc
                self._stray(req, exc)

    def _stray(self, req, exc):
        """An exception escaped into driver code: the snippet still gets a result
        (retried, in case the same handler fires again; after a few tries
        without the traceback, which takes longest to make)."""
        self.armed, self.running = False, None
        if exc is None:                      # (lost on the way: see _serve)
            exc = RuntimeError("an exception in the driver's own code cut the snippet short")
        if isinstance(exc, OSError) and req is not None and self.result_pending:
            try:                             # RLIMIT_NOFILE below 3: no fd works,
                broken = os.sysconf("SC_OPEN_MAX") < 3   # not even select()
            except (OSError, ValueError):
                broken = False
            if broken:
                os._exit(EXIT_NO_FDS)        # a fresh interpreter must take over
        payload = None
        for attempt in range(100):
            try:
                if req is None or not self.result_pending:
                    return
                if payload is None:
                    error = {"name": type(exc).__name__, "value": "", "traceback": []}
                    if attempt < 5:
                        import traceback
                        error["value"] = str(exc)
                        error["traceback"] = traceback.format_exception(
                            type(exc), exc, exc.__traceback__)
                    limit = _frame_cap(req.get("max_output") or 0) // 64
                    payload = _payload({"type": "result", "id": req.get("id"),
                                        "status": "error", "result": None,
                                        "duration_ms": 0.0, "error": _fit_error(error, limit)})
                self.term.check()
                if not self.capture.healthy():
                    self.capture.broken = True   # end() only sends the result then
                self.capture.end(req.get("id"), req.get("max_output"), payload)
                self.result_pending = False
                self.stray_exc = None
            except BaseException:
                pass
        if self.result_pending:
            # Every try failed (user code broke what it needs, or raises in
            # all code that runs): rather than leave the client waiting for
            # the timeout, give way to a fresh interpreter.
            os._exit(EXIT_NO_RESULT)


# ---------------------------------------------------------------- boot

def _readable(fd, timeout):
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    except (OSError, ValueError):
        return True


class _DeferredSite:
    """The interpreter starts with -S: importing site (the site-packages
    directories, .pth files, sitecustomize) takes as long again as the
    interpreter's own start-up.  So it comes when the driver is idle (no
    request SITE_WAIT after ready, or none waiting after a result) or at the
    first import that the standard library cannot satisfy, whichever is
    first; exit(), quit() and help() are there from the start."""

    def __init__(self, driver):
        import _sitebuiltins
        self.driver = driver
        builtins.exit = _sitebuiltins.Quitter("exit", "Ctrl-D (i.e. EOF)")
        builtins.quit = _sitebuiltins.Quitter("quit", "Ctrl-D (i.e. EOF)")
        builtins.help = _sitebuiltins._Helper()
        self.tries = 0
        sys.meta_path.append(self)

    def find_spec(self, name, path=None, target=None):
        if path is not None:
            return None                      # a submodule: its package was found
        self.load()
        return _MODULES["_frozen_importlib_external"].PathFinder.find_spec(name, None, target)

    def load(self):
        self.driver.site = None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        path = sys.path[:]
        try:
            import site
            sys.path[:] = [p for p in path if p != ""]
            site.main()                      # (which would make "" the absolute cwd)
            if "" in path:
                sys.path.insert(0, "")
            import linecache                 # for tracebacks, as site would have it
            self.driver._flush_sources()
        except BaseException:
            # Cut short, by a user's signal handler say: again, later, a few
            # times (a sitecustomize that always fails must not cost every
            # idle moment).  site.main() run twice adds nothing twice.
            if "" in path and "" not in sys.path:
                sys.path.insert(0, "")
            self.tries += 1
            if self.tries < SITE_TRIES:
                self.driver.site = self
                sys.meta_path.append(self)


def main():
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)  # until the driver is armed
    term = Terminal()
    term.write(b"\r\nPTYBOX/1 NONCE?\r\n")
    line = term.read_line()
    if line is None:
        os._exit(0)
    term.rs = term.taken
    nonce = line
    if not 0 < len(nonce) <= 64 or nonce.translate(None, b"0123456789abcdefABCDEF"):
        term.write(b"\r\nPTYBOX/1 BAD NONCE\r\n")
        os._exit(2)
    term.start = b"<<<ptybox:" + nonce + b":"
    driver = Driver(term)
    if sys.flags.no_site and "site" not in _MODULES:
        driver.site = _DeferredSite(driver)
    term.send({"type": "ready", "protocol": PROTOCOL, "pid": os.getpid(),
               "python": sys.version.split()[0]})
    while True:                              # (serve() returns only when hit in its
        try:                                 # own except clause: a handler firing there)
            driver.serve()
        except BaseException:
            pass


if __name__ == "__main__":
    main()
