"""ptybox relay: the process that owns the terminal, and runs no user code.

The client boots this program over the terminal (ptybox-protocol(7), BOOT),
and from then on it is all the client talks to.  It owns:

* the terminal: a private close-on-exec duplicate, kept in raw mode without
  echo and without ISIG (a ^C byte is data; interrupts are requests), and
  fds 0-2 pointed at /dev/null, so nothing reaches the terminal unframed;
* the session nonce and every frame <<<ptybox:NONCE:json:ptybox>>>;
* the kernel: the process that runs the snippets (kernel.py).  It is forked
  from a template that this program forked before it ever read the nonce, so
  no kernel's memory holds it; it runs in its own session (no controlling
  terminal: /dev/tty cannot be opened) with no fd of the terminal, and this
  process is made non-dumpable before the first snippet runs, so a kernel
  cannot read its memory or its fds through /proc either.

Relay and kernel talk over pipes in a small internal protocol (below).
Whatever the kernel sends is parsed, bounded and re-encoded here before it
becomes a frame: it can say what it likes about its own snippet, and nothing
about anything else.  The kernel's fds 1 and 2 are capture pipes read here
(after a tty request, one pseudo-terminal of its own, read at its master):
their bytes become stream frames (head forwarded live, tail kept, bounded by
max_output), and they are drained before each result, display and death, so
output never lands in another snippet.

When the kernel dies (a crash, os._exit, the kill of a snippet that ignored
^C, a restart request), the template reports it, a died frame says how, and
a fresh kernel is forked at once: the transport stays up, so over ssh no new
connection is made.  When the template dies, the kernel lives on (and runs
what comes) until it dies or must go; only then does this program exit.

Kernel protocol (relay -> kernel, on the request pipe):
    X<seq> <len>\\n<the client's request JSON, len bytes>   run a snippet
    X<seq> <len> <cols>x<rows>\\n...                         the same, and the client's
                                                            terminal size (COLUMNS, LINES)
    I<seq>\\n                                                interrupt it
Kernel -> relay (message pipe), one line each:
    H<pid> <python version>                 the kernel is up
    R<seq>                                  result: ok, no value
    T                                       (--tty) read my terminal, then type a
                                            byte on it: the text before a display
    {"t":"result","seq":..,"status":"ok"|"error","result":..,"error":..,"cut":bool}
    {"t":"display","seq":..,"late":bool,"data":{MIME: str},"display_id":str,"update":bool,
     "at_end":bool}
    {"t":"late","seq":..,"name":"stdout"|"stderr","text":str}
The kernel's fd 0 in a snippet run with "stdin_stream" is the read end of a
pipe (the fifth fd) it holds for its life; the stdin requests' bytes are
written to its other end here, and an ack frame follows each once it is all
in the pipe: the client sends the next only then (flow control).
Template <-> relay (a socketpair): "S" with five fds (SCM_RIGHTS) -> fork a
kernel on them; "P<pid>" the kernel forked; "X<pid> <wait status>" a kernel
exited.

Standard library only; Python 3.8 and later.
"""

import _signal, binascii, builtins, codecs, fcntl, os, select, sys, termios, time
import _socket
from _collections import deque
try:
    import zlib as _zlib              # (a Python without it sends text as it is)
except ImportError:
    _zlib = None

PROTOCOL = 2
BUSY_POLL = 100                   # us, when a request names none: PROTOCOL_DEFAULT_BUSY_POLL
BATCH = 256 << 10                 # bytes of a stream frame
READ = 256 << 10
PIPE_ATOMIC = 4096                # bytes a pipe write takes whole, at most (PIPE_BUF)
HOLD_BELOW = 64 << 10             # a read of less output than this ...
HOLD_NS = 10 ** 6                 # ... lets the next wait this long (ns), for more
TTY_READ = 64 << 10
TTY_PIECE = 2048                  # a read this big: more is likely there (read_on)
TTY_GATHER = 1 << 20              # bytes read on before they are parsed
PIPE_SIZE = 1 << 20
PIPE_DEFAULT = 64 << 10            # a fresh pipe's size (Linux): a read this big emptied a full one
QUEUE_CAP = 4096                  # requests waiting: past it the terminal is not read
REQUEST_CAP = 1 << 32             # bytes of one request line: a longer one is dropped
MESSAGE_PLAIN = 64 << 10          # a kernel message longer than this has its values counted:
MESSAGE_VALUES = 1 << 16          # ... past this many it is dropped (parsing costs 60 B a value)
HELLO_WAIT = 20.0                 # s for a fresh kernel to say it is up
KILL_WAIT = 5.0                   # s for a killed kernel's exit to be reported
FIRST_STANDBY_DELAY = 0.05        # s after the first kernel's start before the next standby ...
STANDBY_DELAY = 0.0               # ... and after any later one's
STANDBY_RETRY = 1.0               # s between tries when no process can be forked
FORK_WAIT = 1.0                   # s a kernel's start keeps trying to fork
DEAD_STARTS = 3                   # kernels in a row that die before hello: give up
TTY_SIZE = b"80x24"                # the kernel's terminal while the client has none
TTY_SETTLE = 0.002                # s the kernel's terminal stays quiet before a result
ARGV_CAP = 4096                   # strings in an exec request's argv
ENV_CAP = 4096                    # variables in an exec request's env
STDIN_CAP = 16 << 20              # bytes of an exec request's stdin
LINE_GATHER = 1 << 20             # bytes of a line from which its pieces are gathered in one
DECODE_PIECE = 1 << 20            # base64 characters of a request decoded at a time
STDIN_CHUNK = 1 << 20             # bytes of one stdin request (the stream): one pending at most
SEQ_KEEP = 1024                   # snippets whose late output is still taken
MAX_DISPLAY_ID = 256              # characters of a display_id: a longer one drops its display
QUERY_WAIT = 1.0                  # s a query (complete, is_complete) runs before its ^C ...
QUERY_MATCHES = 200               # ... matches of a completion passed on, each at most
QUERY_MATCH_LEN = 1024            # ... this many characters
EXIT_NO_KERNEL = 116              # no kernel can be started: PROTOCOL_EXIT_NO_KERNEL
Z_MIN = 64 << 10                  # bytes of stream text from which a frame may be deflated ...
Z_MAX = 1 << 20                   # ... and up to which (PROTOCOL_STREAM_Z_MAX on the client)
Z_SAMPLE = 4096                   # bytes tried first: output that does not shrink is sent as is
END = b":ptybox>>>"
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
_pidfd_open = getattr(os, "pidfd_open", None)   # (Python 3.9 and later)
_perf_ns = time.perf_counter_ns
_URLSAFE = bytes.maketrans(b"-_", b"+/")
_CONTROL = bytes(0 if i < 0x20 and i not in b"\t\n\r" else i for i in range(256))
# @shared


def _no_dump():
    """PR_SET_DUMPABLE 0: a kernel runs as our uid, and must not read our
    memory or our fds through /proc (or ptrace us)."""
    return _prctl(4, 0)                      # PR_SET_DUMPABLE


# ---------------------------------------------------------------- template

# @include relay_template.py

# The template is forked here, before the rest of this program is even
# defined (the relay's own code, a millisecond of a cold start): it needs
# only what is above, and its first kernel's start is the longest way to
# ready.  (_kernel_code comes first in the joined program: driver_join.py.)
_TEMPLATE = None
if __name__ == "__main__" and callable(globals().get("_kernel_code")):
    _TEMPLATE = _start_template(_kernel_code, globals().get("l") or "python")


def _private(fd):
    """A close-on-exec copy of fd at a high number; fd is closed."""
    try:
        new = fcntl.fcntl(fd, F_DUPFD_CLOEXEC, 100)
    except OSError:
        new = os.dup(fd)
    os.close(fd)
    return new


def _read(fd, n):
    """Up to n bytes of fd, None if none are there now; b"" at its end (or an
    error, which ends it as well)."""
    try:
        return os.read(fd, n)
    except (BlockingIOError, InterruptedError):
        return None
    except OSError:
        return b""


class _WriteQueue:
    """Bytes for a pipe, in order: small ones gathered, a large one (an exec
    request with its stdin) queued as it is, not copied, and written from a
    read offset, not moved on every write."""
    BIG = 64 << 10

    def __init__(self):
        self.parts, self.size, self.head = deque(), 0, 0

    def __iadd__(self, data):
        if data:
            parts = self.parts
            if len(data) < self.BIG and parts and type(parts[-1]) is bytearray:
                parts[-1] += data
            else:
                parts.append(memoryview(data) if len(data) >= self.BIG else bytearray(data))
            self.size += len(data)
        return self

    def __bool__(self):
        return self.size > 0

    def __len__(self):
        return self.size

    def write(self, fd):
        """As much as fd takes now (os.write's exceptions pass)."""
        parts = self.parts
        while parts:
            first = parts[0]
            n = os.write(fd, first[self.head:] if self.head else first)
            self.size -= n
            self.head += n
            if self.head < len(first):
                return
            parts.popleft()
            self.head = 0


class _Lines:
    """Bytes in, whole lines out, without copying a long line on every read.
    A line longer than cap is dropped whole (feed says so)."""

    def __init__(self, cap):
        self.parts, self.size, self.skip, self.cap = [], 0, False, cap

    def feed(self, data):
        """The lines that data completes, and whether one was dropped."""
        if not self.parts and not self.skip and data.find(b"\n") == len(data) - 1:
            return (data[:-1],), False       # (one whole line: every round trip)
        lines, cut, start = [], False, 0
        i = data.find(b"\n")
        while i >= 0:
            if self.skip:
                self.skip = False
            elif self.parts:
                self.add(data[start:i])
                line = self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)
                self.parts, self.size = [], 0
                if len(line) > self.cap:     # (a read is far below any cap)
                    cut = True
                else:
                    lines.append(line)
            else:
                lines.append(data[start:i])
            start = i + 1
            i = data.find(b"\n", start)
        if start < len(data) and not self.skip:
            self.add(data[start:] if start else data)
            self.size += len(data) - start
            if self.size > self.cap:
                self.parts, self.size, self.skip, cut = [], 0, True, True
        return lines, cut

    def add(self, piece):
        """A piece of the line: past LINE_GATHER bytes in one bytearray, grown
        in place (a join would hold a long line twice)."""
        parts = self.parts
        if parts and type(parts[0]) is bytearray:
            parts[0] += piece
        else:
            parts.append(piece)
            if self.size > LINE_GATHER:
                self.parts = [bytearray().join(parts)]


def _b64url_decode(line):
    """base64url line (padding optional), decoded a piece at a time: no whole
    translated copy of a long one (an exec request with 16 MiB of stdin), and
    a long one (a bytearray, from _Lines) decoded in place."""
    if len(line) <= DECODE_PIECE:
        return binascii.a2b_base64(line.translate(_URLSAFE) + b"=" * (-len(line) % 4))
    out = line if type(line) is bytearray else bytearray(len(line) // 4 * 3 + 3)
    at, n = 0, len(line)
    with memoryview(line) as view, memoryview(out) as dest:
        for i in range(0, n, DECODE_PIECE):
            piece = view[i:i + DECODE_PIECE].tobytes().translate(_URLSAFE)
            if i + DECODE_PIECE >= n:
                piece += b"=" * (-len(piece) % 4)
            piece = binascii.a2b_base64(piece)
            dest[at:at + len(piece)] = piece  # (at <= i: what is still to read is not hit)
            at += len(piece)
    del out[at:]
    return out                               # (a bytearray: bytes() would copy it)


def _values(line):
    """How many JSON values line holds, about: separators and openings
    outside strings (strings are cut out first)."""
    import re
    bare = re.sub(rb'"(?:[^"\\]|\\.)*"', b'""', line)
    return bare.count(b",") + bare.count(b"[") + bare.count(b"{")


def _parent(pid):
    """pid's parent, from /proc (three system calls: a file object costs nine)."""
    try:
        fd = os.open("/proc/%d/stat" % pid, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return int(os.read(fd, 4096).rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None
    finally:
        os.close(fd)


def _kill_group(pid):
    """SIGKILL to a kernel's process group, or to the kernel alone when it
    has none yet (killed between its fork and its setsid)."""
    try:
        os.killpg(pid, _signal.SIGKILL)
    except OSError:
        try:
            os.kill(pid, _signal.SIGKILL)
        except OSError:
            pass


def _pipe():
    """A pipe of the default size.  Grown to PIPE_SIZE only once it fills
    (_grow): pipe buffers count against the user's pipe-user-pages-soft (64
    MiB in all, by default), past which every pipe that user makes, also
    outside ptybox, has one page; five of 1 MiB a session reached it at the
    twelfth session."""
    return os.pipe2(os.O_CLOEXEC)


def _grow(fd, grown):
    """fd's pipe to PIPE_SIZE, once (grown: the fds tried)."""
    if fd in grown:
        return
    grown.add(fd)
    try:
        fcntl.fcntl(fd, F_SETPIPE_SZ, PIPE_SIZE)
    except OSError:
        pass


def _payload(obj):
    """obj as a frame payload: printable ASCII JSON without < or >."""
    payload = _dumps(obj).encode("ascii")
    payload = payload.replace(b"<", b"\\u003c").replace(b">", b"\\u003e")
    if b"\\u0000" in payload:
        import re
        payload = re.sub(rb"(?<!\\)((?:\\\\)*)\\u0000", rb"\1\\ufffd", payload)
    return payload.replace(b"\x7f", b"\\u007f")


def _deflate(data):
    """UTF-8 text data (no NUL) as base64 of a zlib stream, when that is at
    most half its size; else None.  Big frames of text that repeats (logs,
    tables, progress) cross the terminal at a fraction of their size: the
    terminal, not the CPU, is what limits output."""
    if _zlib is None or not Z_MIN <= len(data) <= Z_MAX:
        return None
    if len(_zlib.compress(data[:Z_SAMPLE], 1)) * 2 > Z_SAMPLE:
        return None                   # (random bytes cost 10 ms per 256 KiB to learn that)
    z = _zlib.compress(data, 1)
    if len(z) * 8 > len(data) * 3:    # (base64 makes 4 of 3: at most half)
        return None
    return binascii.b2a_base64(z, newline=False)


def _json_ascii(data):
    """ASCII data as the inside of a JSON string for a payload, or None if it
    holds control characters other than tab, CR and LF."""
    if data.translate(_CONTROL).find(b"\0") >= 0:
        return None
    return (data.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n")
            .replace(b"\r", b"\\r").replace(b"\t", b"\\t").replace(b"<", b"\\u003c")
            .replace(b">", b"\\u003e").replace(b"\x7f", b"\\u007f"))




def _cut(text, limit):
    """text in at most limit UTF-8 bytes, saying so; (text, cut?)."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text, False
    cut = _char_start(data, limit)
    return (data[:cut].decode("utf-8", "replace")
            + "...[%d bytes truncated]" % (len(data) - cut)), True


def _bundle(data, limit):
    """A kernel's MIME bundle, checked: {str: str} within limit bytes in all,
    or None.  Each part over its share is cut."""
    if type(data) is not dict or not data or len(data) > 64:
        return None, False
    total = 0
    for k, v in data.items():
        if type(k) is not str or type(v) is not str or len(k) > 256:
            return None, False
        total += len(v)
    # Within the limit in all, nothing is cut: a cut image is no image.
    if total * 4 <= limit or sum(len(v.encode("utf-8", "surrogatepass"))
                                 for v in data.values()) <= limit:
        return dict(data), False
    share, cut = max(limit // len(data), 64), False
    out = {}
    for k, v in data.items():
        out[k], c = _cut(v, share) if len(v) > share // 6 else (v, False)
        cut = cut or c
    return out, cut


def _error(err, limit):
    """A kernel's error, checked: name and value strings, a traceback of
    strings; cut to limit bytes in all (the traceback's last lines kept)."""
    if type(err) is not dict:
        return None, False
    name, value, tb = err.get("name"), err.get("value"), err.get("traceback", [])
    if type(name) is not str or type(value) is not str or type(tb) is not list:
        return None, False
    share = max(limit // 4, 64)
    name, c1 = _cut(name, 4096)
    value, c2 = _cut(value, share)
    lines, left, c3 = [], share * 2, False
    for line in reversed(tb):
        if type(line) is not str:
            return None, False
        line, c = _cut(line, max(left, 64))
        c3 = c3 or c
        lines.append(line)
        left -= len(line)
        if left <= 0:
            c3 = c3 or len(lines) < len(tb)
            break
    lines.reverse()
    out = {"name": name, "value": value, "traceback": lines}
    status = err.get("exit")                 # (run FILE's sys.exit(N): N)
    if type(status) is int and 0 <= status <= 255:
        out["exit"] = status
    return out, c1 or c2 or c3



# ---------------------------------------------------------------- output

# @include relay_output.py
# @include relay_kernel.py
# @include relay_messages.py
# @include relay_files.py
# @include relay_requests.py


class Relay(_Requests, _Files, _Life, _Output, _Messages):
    def __init__(self, tty, template, ctl):
        self.tty = tty
        self.lang = "python"                 # (main: the language the client asked for)
        self.template, self.ctl = template, ctl
        self.ctl_buf = b""
        self.start = None                    # b"<<<ptybox:NONCE:"
        self.tty_lines = _Lines(REQUEST_CAP)
        self.queue = deque()                 # requests waiting, in order
        self.kernel = None                   # pid of the kernel, once forked
        self.kernel_up = False               # it said hello
        self.hello_early = None              # a hello that came before its pid
        self.restart_id = None               # a restart's id, for the ready that answers it
        self.kill_pending = False            # a kill asked for before the kernel's pid came
        self.pending_input = b""             # requests read with the nonce
        self.killing = None                  # deadline while a killed kernel's exit is due
        self.hello_by = None                 # deadline for the hello
        self.dead_starts = 0
        self.req = self.msg = None           # the kernel's pipes (our ends)
        self.outs = ()
        # The last poll watched the capture pipes and saw them empty: what the
        # kernel wrote before the events it returned is all read (drain()).
        self.outs_quiet = False
        self.wbuf = _WriteQueue()            # bytes for the request pipe
        self.grown = set()                   # our pipe ends grown to PIPE_SIZE (_grow)
        self.stdin_w = None                  # the kernel's stdin stream (our end)
        self.stdin_buf = None                # the stdin chunk being written: (id, view, eof)
        self.stdin_eof = False               # the stream's end was asked for
        self.msg_lines = _Lines(_frame_cap(DEFAULT_MAX_OUTPUT))
        self.seq = 0
        self.running = None                  # (seq, id payload, request, t0, busy_poll) now
        self.sigint = False                  # ... and whether we interrupted it
        self.cut = False                     # ... and whether we cut a message of it
        self.ids = {}                        # seq -> id payload, for late output
        self.last = b"null"                  # id payload that idle output belongs to
        self.max_output = DEFAULT_MAX_OUTPUT
        self.spin_until = 0
        # What spinning would wait for, lately (ns, a moving average of samples
        # capped at twice the poll): a snippet's run, and the gap from a result
        # to the next request.  A relay spins only for what tends to come within
        # its poll: spinning for what comes later takes a CPU for nothing.
        self.run_ns = self.gap_ns = 0
        self.result_at = 0
        self.hold_until = 0                  # _perf_ns(): the capture pipes wait until then
        self.dumpable = True
        self.poller = None
        self.query = None                    # the running request is this query op ...
        self.query_by = None                 # ... whose ^C (then our own reply) is due then
        self.query_told = False              # ... and whether we replied for it already
        self.size = None                     # b"COLSxROWS": the client's terminal, if it has one
        self.size_sent = False               # ... told to this kernel
        self.tty_mode = False                # the tty request: kernels get a terminal
        self.tty_master = None               # ... the running one's (its master)
        self.tty_spare = None                # ... and the stderr pipe's writer, unused
        self.retty_due = False               # the tty request came before the hello
        self.quiet_hello = False             # the hello of a kernel the tty request made
        self.tty_synced = False              # a T answered in this read of messages
        self.orphan = False                  # the template is gone (orphaned())
        self.kernel_fd = None                # ... and then a pidfd of the kernel, if any
        self.files_init()                    # (put, get, files, remove: relay_files.py)

    # -- the terminal
    def write(self, *parts):
        if self.tty_busy:                    # (behind a get's frames: tty_queue, relay_files.py)
            return self.tty_queue(b"".join(parts))
        data = b"".join(parts)
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.tty, view):]
            except InterruptedError:
                pass
            except BlockingIOError:
                select.select([], [self.tty], [], 1.0)
            except OSError:
                self.exit(0)                 # the terminal is gone: so are we

    def send(self, obj):
        self.write(self.start, _payload(obj), END)

    def exit(self, status):
        """Ends the relay, its kernel first: killed, and its exit awaited (up
        to KILL_WAIT), so that the client that waits for us knows it gone.
        Frames still queued for the terminal go first (within KILL_WAIT)."""
        if self.tty_busy:
            self.tty_flush(KILL_WAIT)
        if self.kernel:
            try:
                os.killpg(self.kernel, _signal.SIGKILL)
            except OSError:
                pass
            deadline = time.monotonic() + KILL_WAIT
            buf = self.ctl_buf
            while b"X%d " % self.kernel not in buf and time.monotonic() < deadline:
                try:
                    if not select.select([self.ctl], [], [], deadline - time.monotonic())[0]:
                        break
                    data = self.ctl.recv(4096)
                except InterruptedError:
                    continue
                except OSError:
                    break
                if not data:
                    break
                buf = buf[-64:] + data
        os._exit(status)

    def next(self):
        """Start what is queued while the kernel is idle."""
        while self.queue and self.running is None and self.kernel_up and self.killing is None:
            op, rid, text, limit, poll = self.queue.popleft()
            if op == "ping":
                self.send({"type": "pong", "id": rid})
                continue
            if op == "shutdown":
                self.exit(0)
            if op in FILE_OPS:
                self.file_start(op, rid, text, limit)
                continue
            if op != "exec":                 # a query: no output period of its own
                self.seq += 1
                sid = b"%d" % rid if type(rid) is int else _payload(rid)
                self.running = (self.seq, sid, _loads(text.decode("utf-8")), _perf_ns(), 0)
                self.sigint, self.query, self.query_told = False, op, False
                self.query_by = time.monotonic() + QUERY_WAIT
                self.wbuf += b"X%d %d\n" % (self.seq, len(text))
                self.wbuf += text
                self.flush_req()
                continue
            if self.dumpable:                # before any user code runs
                self.dumpable = not _no_dump()
            self.seq += 1
            seq = self.seq
            req = {"id": rid}
            sid = b"%d" % rid if type(rid) is int else _payload(rid)
            self.running = (seq, sid, req, _perf_ns(), poll)
            self.sigint = self.cut = False
            self.max_output = limit
            self.drain()                     # (what came before it is not its output)
            if self.outs[0].paused or self.outs[1].paused:
                self.discard()
            if self.size is not None and not self.size_sent:
                self.wbuf += b"X%d %d %s\n" % (seq, len(text), self.size)
                self.size_sent = True
            else:
                self.wbuf += b"X%d %d\n" % (seq, len(text))
            self.wbuf += text
            self.flush_req()
            # The rest while it runs: no pipe is read before this returns.
            self.ids[seq] = sid
            if len(self.ids) > SEQ_KEEP:
                del self.ids[seq - SEQ_KEEP]
            self.finish()
            for o in self.outs:
                if o.period(sid, False, limit):
                    self.poller = None
            if poll and self.run_ns < poll * 1000:
                self.spin_until = _perf_ns() + poll * 1000

    def flush_req(self):
        while self.wbuf:
            try:
                self.wbuf.write(self.req)
            except (BlockingIOError, InterruptedError):
                _grow(self.req, self.grown)  # (full: a big request)
                return
            except OSError:
                self.wbuf = _WriteQueue()    # the kernel is gone: its death is told
                return

    # -- the loop
    def serve(self):
        if self.pending_input:
            self.input(self.pending_input)
        while True:
            poller = self.poller
            if poller is None:
                poller = self.poller = select.poll()
                self.poller_held = held = select.poll()   # (without the capture pipes)
                fds = {self.tty: self.on_tty}
                if not self.orphan:
                    fds[self.ctl.fileno()] = self.on_ctl
                elif self.kernel_fd is not None:
                    fds[self.kernel_fd] = self.orphan_died
                if self.msg is not None:
                    fds[self.msg] = self.on_msg
                for fd in fds:
                    held.register(fd, select.POLLIN)
                for o in self.outs:
                    if not o.paused:
                        fds[o.fd] = (lambda o=o: self.on_out(o))
                self.out_fds = {o.fd for o in self.outs}
                self.handlers = fds
                for fd in fds:
                    poller.register(fd, select.POLLIN)
                self.tty_paused = len(self.queue) >= QUEUE_CAP or self.files_tty_full()
                if self.tty_paused:          # (read again once the queue shrinks)
                    poller.unregister(self.tty)
                    held.unregister(self.tty)
                self.watch_req = bool(self.wbuf)
                if self.watch_req and self.req is not None:
                    poller.register(self.req, select.POLLOUT)
                    held.register(self.req, select.POLLOUT)
                if self.stdin_buf is not None and self.stdin_w is not None:
                    poller.register(self.stdin_w, select.POLLOUT)
                    held.register(self.stdin_w, select.POLLOUT)
            if (bool(self.wbuf) != self.watch_req
                    or (len(self.queue) >= QUEUE_CAP or self.files_tty_full())
                    != self.tty_paused):
                self.poller = None
                continue
            timeout = None
            if self.spin_until:
                timeout = 0
            if self.hold_until:
                # Output comes in small writes (a line each): let it gather
                # for a moment, a frame for many, rather than one for each.
                left = self.hold_until - _perf_ns()
                if left > 0:
                    poller, timeout = self.poller_held, left / 1e6
                else:
                    self.hold_until = 0
            deadline = self.killing or self.hello_by or self.query_by
            if deadline is not None and timeout is None:
                timeout = max(0, deadline - time.monotonic()) * 1000 + 1
            try:
                events = poller.poll(timeout)
            except InterruptedError:
                continue
            self.outs_quiet = False
            if not events:
                if poller is self.poller_held:
                    continue
                if self.spin_until:
                    if _perf_ns() < self.spin_until:
                        os.sched_yield()
                        continue
                    self.spin_until = 0
                now = time.monotonic()
                if self.killing is not None and now >= self.killing:
                    self.exit(EXIT_NO_KERNEL)    # a kernel that does not die
                if self.hello_by is not None and now >= self.hello_by:
                    self.hello_by = None
                    self.kill()
                if self.query_by is not None and now >= self.query_by and self.query:
                    self.query_late()
                continue
            self.spin_until = 0
            handlers = self.handlers
            if poller is self.poller:
                # A poll evaluates every fd after the event that woke it, so
                # pipes it saw empty hold nothing written before that event:
                # the drain before a result or a request has nothing to ask.
                # (For the events of this batch only: reset at the next poll.)
                out_fds = self.out_fds
                for fd, ev in events:
                    if fd in out_fds:
                        break
                else:
                    self.outs_quiet = True
            for fd, ev in events:
                if fd == self.req:
                    self.flush_req()
                    continue
                if fd == self.stdin_w and self.stdin_buf is not None:
                    self.flush_stdin()
                    continue
                handler = handlers.get(fd)
                if handler is not None and poller in (self.poller, self.poller_held):
                    handler()
                elif handler is not None and fd in (self.tty, self.ctl.fileno()):
                    handler()


def _take_terminal():
    """Our terminal: a private fd in raw mode without echo or signals;
    fds 0-2 on /dev/null; and exclusive (TIOCEXCL): no one else may open it
    by name, not even a process of our uid outside a sandbox."""
    tty = _private(os.dup(0))
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    try:
        iflag, oflag, cflag, lflag, ispeed, ospeed, cc = termios.tcgetattr(tty)
        t = termios
        iflag &= ~(t.IGNBRK | t.BRKINT | t.PARMRK | t.ISTRIP | t.INLCR | t.IGNCR
                   | t.ICRNL | t.IXON | t.IXOFF)
        oflag &= ~t.OPOST
        lflag &= ~(t.ECHO | t.ECHONL | t.ICANON | t.IEXTEN | t.ISIG)
        cflag = (cflag & ~(t.CSIZE | t.PARENB)) | t.CS8
        cc = list(cc)
        cc[t.VMIN], cc[t.VTIME] = 1, 0
        termios.tcsetattr(tty, termios.TCSANOW, [iflag, oflag, cflag, lflag, ispeed, ospeed, cc])
    except termios.error:
        pass
    try:                                     # (a chmod would be undone by its owner)
        fcntl.ioctl(tty, termios.TIOCEXCL)
    except OSError:
        pass
    return tty


def main(kernel_code, lang="python", template=None):
    """kernel_code(): the kernel module's code, whose standby_<lang>() starts
    a kernel of that language in a child of the template (kernel.py);
    template: (pid, socket) of one _start_template() forked already."""
    pid, mine = template or _start_template(kernel_code, lang)
    tty = _take_terminal()
    relay = Relay(tty, pid, mine)
    relay.lang = lang
    relay.spawn()                            # the kernel starts while we ask for the nonce
    relay.write(b"\r\nPTYBOX/1 NONCE?\r\n")
    # While the client answers and the first kernel starts: no kernel may read
    # our memory once the nonce is in it.
    relay.dumpable = not _no_dump()
    line = b""
    while b"\n" not in line:
        try:
            data = os.read(tty, 256)
        except InterruptedError:
            continue
        except OSError:
            data = b""
        if not data or len(line) > 256:
            relay.exit(0)
        line += data
    nonce, rest = line.split(b"\n", 1)
    relay.pending_input = rest
    nonce = nonce.replace(b"\r", b"").strip()
    if not 0 < len(nonce) <= 64 or nonce.translate(None, b"0123456789abcdefABCDEF"):
        relay.write(b"\r\nPTYBOX/1 BAD NONCE\r\n")
        relay.exit(2)
    relay.start = b"<<<ptybox:" + nonce + b":"
    relay.serve()
