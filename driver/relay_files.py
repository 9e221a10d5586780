"""The relay's side of the file ops (put, get, files, remove): their requests
checked, a put's data lines decoded and streamed to the kernel, a get's data
framed as binary frames, and the kernel's replies checked and re-encoded
into file frames (ptybox-protocol(7), REQUESTS and FRAMES).

Not a module: a part of the Relay class (a mixin), joined into relay.py
where it says "# @include relay_files.py"; it uses relay.py's globals.

A put's data comes as lines "!" + bytes with =XX escapes (binascii.a2b_qp
decodes them at C speed) right after its request.  A put that runs now
streams each decoded line to the kernel as "D<len>\\n" + bytes; one queued
behind a snippet keeps its data here.  Either way, while more than
PUT_HOLD bytes wait for the kernel the terminal is not read (the client's
writes wait in the PTY): memory stays bounded.  A file op is never
interrupted: interrupts name a snippet.

A get's binary frames are written to the terminal by a thread of their own
(tty_writer), from a queue of at most TTY_QUEUE bytes: the loop goes on
reading the kernel's next data while the terminal drains the last, so the
kernel, this process and the terminal all move at once (a blocking write of
each frame stopped the reads of the kernel's pipe, and the terminal waited
for those).  While the queue holds anything, every frame goes behind it
(write), in order; once it is empty, writes are direct again.
"""
# ---- relay_files.py: joined into relay.py at build time (driver_join.py, "# @include")

FILE_OPS = ("put", "get", "files", "remove")
PUT_HOLD = 4 << 20                # bytes of put data waiting for the kernel: past it, the
                                  # terminal is not read
DATA_LINE = 1 << 20               # decoded bytes of one data line, at most
FILE_DATA = 1 << 20               # bytes of a kernel's data message (a get's), at most
TTY_QUEUE = 2 << 20               # bytes of frames queued for the terminal's writer thread:
                                  # past it, the loop waits (the kernel's pipe is not read)
FILE_PATH = 4096                  # bytes of a path, at most
FILE_ENTRIES = 100000             # entries of a listing, at most
FILE_FRAME = 12 << 20             # bytes of a listing's frame: past it, entries are cut
FILE_SIZE = 1 << 62               # sizes and offsets, at most
FILE_VALUES = 8 * FILE_ENTRIES    # JSON values of a file op's reply, at most
FILE_TYPES = ("file", "dir", "link", "fifo", "socket", "char", "block", "unknown")
_ERRNO = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def _file_int(v, low=0, high=FILE_SIZE):
    return type(v) is int and low <= v <= high


def _file_token(v):
    """An upload's token: 1 to 64 hex digits."""
    return type(v) is str and 0 < len(v) <= 64 and not v.strip("0123456789abcdef")


def _file_str(v, cap=FILE_PATH):
    return type(v) is str and len(v) <= cap and len(v.encode("utf-8", "surrogatepass")) <= cap


class _Put:
    """A put's state here: its data as it comes, until the kernel has it."""
    __slots__ = ("rid", "size", "got", "chunks", "held", "sent", "dead", "cut")

    def __init__(self, rid, size):
        self.rid, self.size, self.got = rid, size, 0
        self.chunks, self.held = deque(), 0   # decoded, not yet for the kernel
        self.sent = False                    # its X header went to the kernel
        self.dead = False                    # its data is only swallowed
        self.cut = False                     # its data was cut short


class _Files:
    """File ops: requests, data lines, the kernel's data and replies."""

    def files_init(self):
        self.put_rx = None                   # the put whose data lines come now
        self.put_bytes = 0                   # data held in queued puts
        self.fileop = None                   # (op, _Put or request) of the running file op
        self.get_sent = 0                    # ... a get's bytes framed so far
        self.get_cap = 0                     # ... and its most
        self.d_left = 0                      # bytes of the kernel's data message still due
        self.d_parts = []                    # ... and those come
        self.d_head = b""                    # a data message's header, split across reads
        self.tty_cond = None                 # the terminal's writer thread: its condition ...
        self.tty_q = deque()                 # ... the frames it has to write, in order
        self.tty_qbytes = 0                  # ... their bytes
        self.tty_busy = False                # ... it has some (or writes the last): queue behind
        self.tty_dead = False                # ... a write failed: the terminal is gone

    def files_tty_full(self):
        """Whether put data waiting for the kernel fills its share."""
        return self.put_bytes + len(self.wbuf) > PUT_HOLD and (
            self.put_bytes > 0 or self.fileop is not None)

    # -- requests
    def file_request(self, op, rid, req):
        """A file op's request, checked; queued in order with snippets."""
        path = req.get("path")
        if op == "put":
            size = req.get("size")
            if not _file_int(size):
                return self.reject(rid, "put needs an integer size from 0 to 2**62", True)
            p = _Put(rid, size)
            if size:
                self.put_rx = p              # (its data lines follow, whatever comes)
            for k, ok in (("mode", lambda v: v is None or _file_int(v, 0, 0o7777)),
                          ("offset", lambda v: v is None or _file_int(v)),
                          ("more", lambda v: v is None or type(v) is bool),
                          ("abort", lambda v: v is None or type(v) is bool),
                          ("upload", lambda v: v is None or _file_token(v))):
                if not ok(req.get(k)):
                    p.dead = True
                    return self.reject(rid, "put: bad %s" % k)
        if not (_file_str(path) and path and "\0" not in path):
            if op == "put":
                p.dead = True
            return self.reject(rid, "%s needs a path of 1 to %d bytes without NUL"
                               % (op, FILE_PATH))
        kreq = {"op": op, "path": path}
        if op == "put":
            for k in ("mode", "offset", "more", "upload", "abort"):
                if req.get(k) is not None:
                    kreq[k] = req[k]
            kreq["size"] = size
            item = p
        elif op == "get":
            for k in ("offset", "length", "max"):
                if not (req.get(k) is None or _file_int(req[k])):
                    return self.reject(rid, "get: bad %s" % k)
                if req.get(k) is not None:
                    kreq[k] = req[k]
            item = None
        else:
            if req.get("recursive") not in (None, True, False):
                return self.reject(rid, "%s: recursive must be true or false" % op)
            kreq["recursive"] = req.get("recursive") is True
            item = None
        text = _dumps(kreq).encode("ascii")
        self.queue.append((op, rid, text, item, 0))

    def data_line(self, enc):
        """A put's data line ("!" and escaped bytes), decoded."""
        p = self.put_rx
        if p is None:
            return self.reject(None, "a data line with no put receiving it was dropped")
        data = binascii.a2b_qp(enc)
        if len(data) > min(DATA_LINE, p.size - p.got):
            data = data[:p.size - p.got]
            self.put_cut(p)
        p.got += len(data)
        if p.got >= p.size:
            self.put_rx = None
        if p.dead or not data:
            return
        if p.sent:
            if self.fileop is not None and self.fileop[1] is p:
                self.wbuf += b"D%d\n" % len(data)
                self.wbuf += data
                self.flush_req()
            return
        p.chunks.append(data)
        p.held += len(data)
        self.put_bytes += len(data)

    def put_cut(self, p):
        """p's data did not come as its request said: the kernel drops it
        ("A"), with an error, and what else comes for it is swallowed."""
        if self.put_rx is p:
            self.put_rx = None
        if p.cut or p.dead:
            return
        p.cut = True
        if p.sent and self.fileop is not None and self.fileop[1] is p:
            self.wbuf += b"A\n"
            self.flush_req()
        p.dead = True

    def other_line(self):
        """A request line while a put's data was due: that put is cut short."""
        if self.put_rx is not None:
            self.put_cut(self.put_rx)

    def file_start(self, op, rid, text, item):
        """The queued file op starts (the kernel is idle)."""
        self.seq += 1
        sid = b"%d" % rid if type(rid) is int else _payload(rid)
        self.running = (self.seq, sid, {"op": op}, _perf_ns(), 0)
        self.sigint, self.query, self.cut = False, None, False
        self.fileop = (op, item)
        self.wbuf += b"X%d %d\n" % (self.seq, len(text))
        self.wbuf += text
        if op == "get":
            req = _loads(text.decode("ascii"))
            self.get_sent = 0
            caps = [c for c in (req.get("length"), req.get("max")) if c]
            self.get_cap = min(caps) if caps else FILE_SIZE
        if item is not None:                 # a put: what came of its data
            item.sent = True
            while item.chunks:
                data = item.chunks.popleft()
                self.wbuf += b"D%d\n" % len(data)
                self.wbuf += data
            self.put_bytes -= item.held
            item.held = 0
            if item.cut:
                self.wbuf += b"A\n"
        self.flush_req()

    def files_died(self):
        """The kernel is gone: its file op with it (the died frame tells the
        client); the rest of a put's data lines are swallowed."""
        if self.fileop is not None and self.fileop[1] is not None:
            self.fileop[1].dead = True
        self.fileop = None
        self.d_left, self.d_parts, self.d_head = 0, [], b""

    # -- the kernel's data messages: "D<seq> <len>\n" + raw bytes
    def msg_split(self, data):
        """The parts of data that are message lines (for _Lines), after
        taking out data messages; None when there is none (the usual case)."""
        if not (self.d_left or self.d_head or b"\nD" in data
                or (data[:1] == b"D" and not self.msg_lines.parts)):
            return None
        lines = []
        if self.d_head:
            data, self.d_head = self.d_head + data, b""
        while data:
            if self.d_left:
                take = data[:self.d_left]
                self.d_parts.append(take)
                self.d_left -= len(take)
                data = data[len(take):]
                if not self.d_left:
                    self.file_data(b"".join(self.d_parts))
                    self.d_parts = []
                continue
            at = 0 if data[:1] == b"D" and not self.msg_lines.parts and not lines else (
                data.find(b"\nD") + 1 or -1)
            if at < 0:
                lines.append(data)
                break
            if at:
                lines.append(data[:at])      # (whole lines: _Lines holds no part after)
                for line in self.msg_lines.feed(b"".join(lines))[0]:
                    self.message(line)
                lines = []
            data = data[at:]
            i = data.find(b"\n")
            if i < 0:
                if len(data) > 64:
                    return self.file_broken("a data message's header is too long")
                self.d_head = data
                break
            try:
                seq, n = map(int, data[1:i].split())
            except ValueError:
                return self.file_broken("a data message's header is not one")
            running = self.running
            if (not 0 < n <= FILE_DATA or running is None or seq != running[0]
                    or self.fileop is None or self.fileop[0] != "get"
                    or self.get_sent + n > self.get_cap):
                return self.file_broken("a data message it had no call to send")
            self.d_left = n
            data = data[i + 1:]
        return lines

    def file_broken(self, why):
        """The kernel broke the protocol: it goes (the client hears died)."""
        self.d_left, self.d_parts, self.d_head = 0, [], b""
        self.kill()
        return []

    def file_data(self, data):
        """One chunk of a get: a binary frame, deflated when that halves it."""
        self.get_sent += len(data)
        if (_zlib is not None and len(data) >= Z_MIN
                and len(_zlib.compress(data[:Z_SAMPLE], 1)) * 2 <= Z_SAMPLE):
            z = _zlib.compress(data, 1)
            if len(z) * 2 <= len(data):
                return self.tty_queue(b"".join((self.start, b"#z%d:" % len(z), z, END)))
        self.tty_queue(b"".join((self.start, b"#%d:" % len(data), data, END)))

    # -- the terminal's writer thread
    def tty_queue(self, frame):
        """frame for the terminal, behind those queued: written by the thread.
        Past TTY_QUEUE bytes queued, this waits for the terminal."""
        cond = self.tty_cond
        if cond is None:
            import threading
            cond = self.tty_cond = threading.Condition()
            threading.Thread(target=self.tty_writer, daemon=True).start()
        with cond:
            while self.tty_qbytes > TTY_QUEUE and not self.tty_dead:
                cond.wait(1.0)
            dead = self.tty_dead
            if not dead:
                self.tty_q.append(frame)
                self.tty_qbytes += len(frame)
                self.tty_busy = True
                cond.notify_all()
        if dead:
            self.exit(0)                     # the terminal is gone: so are we

    def tty_flush(self, wait):
        """Waits (up to wait seconds) until the queued frames are written."""
        deadline = time.monotonic() + wait
        cond = self.tty_cond
        with cond:
            while self.tty_busy and time.monotonic() < deadline:
                cond.wait(max(0.0, deadline - time.monotonic()))

    def tty_writer(self):
        """The thread: writes the queued frames, blocking, one by one."""
        cond, q = self.tty_cond, self.tty_q
        while True:
            with cond:
                while not q:
                    self.tty_busy = False
                    cond.notify_all()
                    cond.wait()
                frame = q[0]                 # (still counted, and busy, until written)
            view = memoryview(frame)
            try:
                while view:
                    try:
                        view = view[os.write(self.tty, view):]
                    except BlockingIOError:
                        select.select([], [self.tty], [], 1.0)
            except Exception:                # (an OSError: a hang-up; anything else
                with cond:                   # ends us too, never a full queue for ever;
                                             # the loop hears it, and writes exit)
                    self.tty_dead = True
                    q.clear()
                    self.tty_qbytes, self.tty_busy = 0, False
                    cond.notify_all()
                return
            view.release()
            with cond:
                q.popleft()
                self.tty_qbytes -= len(frame)
                cond.notify_all()

    # -- the kernel's reply
    def file_lost(self, why):
        """The running file op's reply came but could not be used (too long,
        not JSON): the client hears an error now, not silence until the
        timeout (the kernel is idle again: it sent its reply).  Not while a
        put's data is still due: the kernel replies after it (what was
        dropped was something else, a thread's)."""
        p = self.fileop[1] if self.fileop is not None else None
        if p is not None and not p.dead and p.got < p.size:
            return
        if self.fileop is not None and self.running is not None:
            self.file_reply({"ok": False, "errno": "EIO", "error": "%s: the kernel's reply %s"
                             % (self.fileop[0], why)})

    def file_reply(self, m):
        """The running file op's reply, checked and re-encoded as its frame."""
        seq, sid, req, t0, poll = self.running
        op = self.fileop[0]
        self.running, self.fileop = None, None
        frame = {"type": "file", "id": None}
        if m.get("ok") is not True:
            error, code = m.get("error"), m.get("errno")
            frame["ok"] = False
            frame["error"] = _cut(error, 4096)[0] if type(error) is str else "%s failed" % op
            frame["errno"] = (code if type(code) is str and 0 < len(code) <= 16
                              and not code.encode().translate(None, bytes(_ERRNO)) else "EIO")
        else:
            frame["ok"] = True
            path = m.get("path")
            frame["path"] = path if _file_str(path, 4 * FILE_PATH) else ""
            if op == "put":
                frame["size"] = m["size"] if _file_int(m.get("size")) else 0
                if m.get("more") is True:
                    frame["more"] = True
                if _file_token(m.get("upload")):
                    frame["upload"] = m["upload"]
            elif op == "get":
                for k in ("size", "offset", "mode"):
                    frame[k] = m[k] if _file_int(m.get(k)) else 0
                frame["length"] = self.get_sent
                frame["eof"] = m.get("eof") is True
                mt = m.get("mtime")
                frame["mtime"] = mt if type(mt) in (int, float) and -1e15 < mt < 1e15 else 0
            elif op == "files":
                # (the path's own type: "kind" here, as the frame's type is
                # "type"; the client's session names it "type" again)
                kind = m.get("type")
                frame["kind"] = kind if kind in FILE_TYPES else "unknown"
                entries, cut = m.get("entries"), m.get("cut") is True
                out, total = [], 0
                if type(entries) is list:
                    for e in entries[:FILE_ENTRIES]:
                        if type(e) is not dict:
                            continue
                        name, t, mt = e.get("name"), e.get("type"), e.get("mtime")
                        if not _file_str(name, 4 * FILE_PATH) or t not in FILE_TYPES:
                            continue
                        total += len(name) * 2 + 80
                        if total > FILE_FRAME:
                            cut = True
                            break
                        out.append({"name": name, "type": t,
                                    "size": e["size"] if _file_int(e.get("size")) else 0,
                                    "mode": e["mode"] if _file_int(e.get("mode"), 0, 0o7777)
                                    else 0,
                                    "mtime": mt if type(mt) in (int, float)
                                    and -1e15 < mt < 1e15 else 0})
                    cut = cut or len(entries) > FILE_ENTRIES
                frame["entries"], frame["cut"] = out, cut
        self.write(self.start, _payload(frame).replace(b'"id":null', b'"id":' + sid, 1), END)
        self.next()
