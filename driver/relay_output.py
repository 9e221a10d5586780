"""The kernel's output, as the relay reads it: its capture pipes (or its
terminal, --tty) drained before each result, display and death, stream
frames with the head forwarded live and the tail kept (max_output), late
output stamped with the snippet that made it.

Not a module: _Out and a part of the Relay class (a mixin), joined into
relay.py where it says "# @include relay_output.py"; it uses relay.py's
globals.
"""
# ---- relay_output.py: joined into relay.py at build time (driver_join.py, "# @include")

class _Out:
    """One capture pipe of the running kernel: its bytes become stream frames,
    the current period's head forwarded live and its tail kept."""

    def __init__(self, name, fd):
        self.name, self.fd = name, fd
        self.ename = name.encode()
        os.set_blocking(fd, False)
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.paused = False
        self.fed = True                      # something came in this period
        self.tail, self.tail_len, self.dropped = deque(), 0, 0
        self.period(b"null", True, DEFAULT_MAX_OUTPUT)

    def period(self, sid, late, max_output):
        """A new period: snippet sid's (head + tail) or its late one (head
        only); whether the pipe was paused.  Cheap when nothing came in the
        last one: twice a round trip."""
        paused, self.paused = self.paused, False
        if self.fed:
            if self.decoder.buffer:
                self.decoder.reset()
            self.tail, self.tail_len, self.dropped = deque(), 0, 0
            self.fed = False
        self.late, self.sid, self.prefix = late, sid, None   # (prefix: made when needed)
        # (the client reads deflated text only for an id of digits below 2^53)
        self.zsid = sid.isdigit() and len(sid) <= 15
        if not max_output:
            self.head_left = self.tail_cap = None
        elif late:
            self.head_left, self.tail_cap = max_output, 0
        else:
            self.head_left, self.tail_cap = max_output // 2, max_output - max_output // 2
        return paused



class _Output:
    # -- the kernel's output
    def drain(self):
        """Everything the capture pipes hold now (FIONREAD bounds it): one
        poll tells which hold anything, on the way to every result (none
        when the loop's own poll just saw them empty: outs_quiet)."""
        if self.outs_quiet:
            return
        try:
            ready = self.out_poll.poll(0)
        except OSError:
            ready = [(o.fd, 0) for o in self.outs]
        if not ready:
            return
        ready = {fd for fd, _ in ready}
        for o in self.outs:
            if o.paused or o.fd not in ready:
                continue
            try:
                n = int.from_bytes(fcntl.ioctl(o.fd, termios.FIONREAD, b"\0\0\0\0"),
                                   sys.byteorder)
            except OSError:
                n = READ
            while n > 0:
                try:
                    data = os.read(o.fd, min(n, READ))
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    data = b""
                if not data:
                    break
                n -= len(data)
                self.feed(o, data)
                if o.paused:
                    break

    def drain_tty(self):
        """A terminal hands the master what the slave got a moment later (the
        kernel's flip buffer work), not at once as a pipe does: what the
        kernel wrote before its result may not be readable yet.  So its
        reads go on until the master stays quiet for TTY_SETTLE."""
        o = self.outs[0]
        for _ in range(64):                  # (bounded: a writer that goes on is late output)
            if o.paused or not select.select([o.fd], [], [], TTY_SETTLE)[0]:
                return
            data = _read(o.fd, READ)
            if not data:
                return
            self.feed(o, data)

    def discard(self):
        """What a paused pipe (late output over its budget) holds: counted as
        dropped, not carried into the next snippet."""
        for o in self.outs:
            if not o.paused:
                continue
            try:
                n = int.from_bytes(fcntl.ioctl(o.fd, termios.FIONREAD, b"\0\0\0\0"),
                                   sys.byteorder)
            except OSError:
                n = 0
            while n > 0:
                try:
                    data = os.read(o.fd, min(n, READ))
                except OSError:
                    break
                if not data:
                    break
                n -= len(data)
                o.dropped += len(data)

    def on_out(self, o):
        data = _read(o.fd, READ)
        if data is None:
            return
        if len(data) >= PIPE_DEFAULT:        # (it was full: much output)
            _grow(o.fd, self.grown)
        if not data:                         # every writer gone: nothing comes any more
            o.paused = True
            self.poller = None
            return
        self.feed(o, data)
        if len(data) < HOLD_BELOW and self.running is not None:
            self.hold_until = _perf_ns() + HOLD_NS

    def feed(self, o, data):
        """Forward data within the head budget; ring or count the rest."""
        o.fed = True
        if o.head_left is None or len(data) <= o.head_left:
            if o.head_left is not None:
                o.head_left -= len(data)
            if not o.decoder.buffer and data.isascii():
                if len(data) >= Z_MIN and o.zsid:
                    z = _deflate(data.replace(b"\0", b"\xef\xbf\xbd") if b"\0" in data
                                 else data)
                    if z is not None:
                        self.write(self.start, b'{"type":"stream","id":%s,"name":"%s","z":"' % (
                            o.sid, o.ename), z, b'","late":true}' if o.late else b'"}', END)
                        return
                text = _json_ascii(data)
                if text is not None:
                    if o.prefix is None:
                        o.prefix = b'{"type":"stream","id":%s,"name":"%s","text":"' % (
                            o.sid, o.ename)
                    self.write(self.start, o.prefix, text,
                               b'","late":true}' if o.late else b'"}', END)
                    return
            self.emit(o, o.decoder.decode(data))
            return
        if o.head_left:
            cut = _char_start(data, o.head_left)
            self.emit(o, o.decoder.decode(data[:cut], True))
            data, o.head_left = data[cut:], 0
        if not o.tail_cap:                   # late output over budget: left in the pipe
            o.dropped += len(data)
            o.paused = True
            self.poller = None
            return
        o.tail.append(data)
        o.tail_len += len(data)
        while o.tail_len - len(o.tail[0]) >= o.tail_cap:
            n = len(o.tail.popleft())
            o.tail_len -= n
            o.dropped += n

    def emit(self, o, text, dropped=None):
        if not text and dropped is None:
            return
        if dropped is None and len(text) >= Z_MIN // 4 and o.zsid:
            try:
                z = _deflate(text.replace("\0", "\ufffd").encode("utf-8"))
            except UnicodeEncodeError:
                z = None
            if z is not None:
                self.write(self.start, b'{"type":"stream","id":%s,"name":"%s","z":"' % (
                    o.sid, o.ename), z, b'","late":true}' if o.late else b'"}', END)
                return
        frame = {"type": "stream", "id": None, "name": o.name, "text": text}
        if o.late:
            frame["late"] = True
        if dropped is not None:
            frame["dropped"] = dropped
        payload = _payload(frame).replace(b'"id":null', b'"id":' + o.sid, 1)
        self.write(self.start, payload, END)

    def finish(self):
        """End of a period: flush the decoders, send the tail with the drop count."""
        for o in self.outs:
            if not o.fed:
                continue
            text = o.decoder.decode(b"", True)
            if text:
                self.emit(o, text)
            if o.tail:
                data = b"".join(o.tail)
                excess = len(data) - o.tail_cap
                if excess > 0:
                    data = data[excess:]
                    o.dropped += excess
                if o.dropped:
                    k = 0
                    while k < min(3, len(data)) and data[k] & 0xC0 == 0x80:
                        k += 1
                    data, o.dropped = data[k:], o.dropped + k
                self.emit(o, data.decode("utf-8", "replace"), o.dropped or None)
                o.tail, o.tail_len, o.dropped = deque(), 0, 0
            elif o.dropped:
                self.emit(o, "", o.dropped)
                o.dropped = 0
