"""The kernel's messages (relay.py's kernel protocol, kernel -> relay): read
from its message pipe, bounded, parsed and re-encoded into frames: its
hello, results (the relay's own id, status and timing on them), displays
and late output.

Not a module: a part of the Relay class (a mixin), joined into relay.py
where it says "# @include relay_messages.py"; it uses relay.py's globals.
"""
# ---- relay_messages.py: joined into relay.py at build time (driver_join.py, "# @include")

class _Messages:
    # -- the kernel's messages
    def on_msg(self):
        data = _read(self.msg, READ)
        if data is None:
            return
        if len(data) >= PIPE_DEFAULT:        # (it was full: a get's data, a big result)
            _grow(self.msg, self.grown)
        if not data:                         # it cannot talk to us any more: it goes
            os.close(self.msg)
            self.msg = None
            self.poller = None
            self.kill()
            return
        if self.outs_quiet and (len(data) > PIPE_ATOMIC or data.find(b"\n") != len(data) - 1
                                or self.msg_lines.parts or self.d_left or self.d_head):
            # Only a whole line of one atomic write, read alone, was in the pipe
            # when the loop's poll saw the capture pipes empty: more may have
            # come after, and the output written before it with it.
            self.outs_quiet = False
        self.msg_lines.cap = _frame_cap(self.max_output)
        if self.fileop is not None:          # (a listing may be long)
            self.msg_lines.cap = max(self.msg_lines.cap, 2 * FILE_FRAME)
        parts = self.msg_split(data)         # (a get's data messages taken out)
        if parts is not None:
            data = b"".join(parts)
        lines, cut = self.msg_lines.feed(data) if data else ((), False)
        self.cut = self.cut or cut           # (an oversize message: dropped)
        self.tty_synced = False
        for line in lines:
            self.message(line)
        if cut and self.fileop is not None:  # (its reply, most likely: answered)
            self.file_lost("was past %d bytes (dropped)" % self.msg_lines.cap)

    def message(self, line):
        kind = line[:1]
        running = self.running
        if kind == b"R":
            if (running is not None and line == b"R%d" % running[0] and not self.query
                    and self.fileop is None):
                self.result(b'"status":"ok"', None)
            return
        if kind == b"T":                     # (--tty: before a display) "have you read
            # my terminal?": yes, once it is quiet.  One a read of messages (ours
            # waits for the answer before the next): a flood of them would keep
            # us here, deaf to the client, 2 ms each.
            if self.tty_master is not None and not self.tty_synced:
                self.tty_synced = True
                self.drain()
                self.drain_tty()
                try:
                    os.write(self.tty_master, b"\0")
                except OSError:
                    pass
            return
        if kind == b"H":
            if self.kernel_up:
                return
            if self.kernel is None:          # (before the template said its pid)
                self.hello_early = line[1:]
            else:
                self.hello(line[1:])
            return
        if len(line) > MESSAGE_PLAIN and _values(line) > (
                FILE_VALUES if self.fileop is not None else MESSAGE_VALUES):
            self.cut = True                  # (no kernel of ours sends such a thing)
            if self.fileop is not None:
                self.file_lost("held too many JSON values (dropped)")
            return
        try:
            m = _loads(line.decode("ascii"))
        except (ValueError, UnicodeDecodeError, RecursionError):
            m = None
        if type(m) is not dict:
            if self.fileop is not None:
                self.file_lost("was not a JSON object (dropped)")
            return
        t, seq = m.get("t"), m.get("seq")
        limit = _frame_cap(self.max_output) // 2
        if t == "file" and running is not None and seq == running[0] and self.fileop:
            self.file_reply(m)
        elif t == "reply" and running is not None and seq == running[0] and self.query:
            self.reply(m)
        elif (t == "result" and running is not None and seq == running[0] and not self.query
              and self.fileop is None):
            self.result(None, m)
        elif t == "display" and type(seq) is int:
            sid = self.ids.get(seq)
            if sid is None:
                return
            data, cut = _bundle(m.get("data"), limit)
            if data is None:
                return
            late = running is None or seq != running[0] or m.get("late") is True
            if not late:                     # (the kernel waited for us to read its text)
                self.cut = self.cut or cut
            frame = {"type": "display", "id": None, "data": data}
            if late:
                frame["late"] = True
            elif m.get("at_end") is True:    # (a figure shown as the snippet ended)
                frame["at_end"] = True
            did = m.get("display_id")        # (display(obj, display_id=..): update_display)
            if did is not None:
                if (type(did) is not str or not 0 < len(did) <= MAX_DISPLAY_ID
                        or not did.isascii() or not did.isprintable()):
                    return
                frame["display_id"] = did
                if m.get("update") is True:
                    frame["update"] = True
            self.write(self.start, _payload(frame).replace(b'"id":null', b'"id":' + sid, 1),
                       END)
        elif t == "late" and type(seq) is int and m.get("name") in ("stdout", "stderr"):
            sid, text = self.ids.get(seq), m.get("text")
            if sid is None or type(text) is not str:
                return
            text, _ = _cut(text, max(self.max_output, 1) if self.max_output else 1 << 30)
            frame = {"type": "stream", "id": None, "name": m["name"], "text": text,
                     "late": True}
            self.write(self.start, _payload(frame).replace(b'"id":null', b'"id":' + sid, 1),
                       END)

    def hello(self, rest):
        parts = rest.split(b" ", 1)
        try:
            pid = int(parts[0])
            python = parts[1].decode("ascii")[:32] if len(parts) > 1 else "?"
        except (ValueError, UnicodeDecodeError):
            return
        self.kernel_up, self.hello_by, self.hello_early = True, None, None
        if self.retty_due:                   # (the client awaits a ready: the
            self.retty_due = False           # replacement's hello sends it)
            self.retty()
            self.quiet_hello = False
            return
        if self.quiet_hello:
            self.quiet_hello = False
            self.next()
            return
        frame = {"type": "ready", "protocol": PROTOCOL, "pid": pid, "python": python,
                 "guarded": not self.dumpable}
        if self.restart_id is not None:
            frame["restart"], self.restart_id = self.restart_id, None
        self.send(frame)
        self.next()

    def result(self, fast, m):
        """The running snippet's result: after every byte it wrote, its status
        as we know it (a KeyboardInterrupt after our ^C is an interrupt; a
        snippet that went on after it says so), its duration as we saw it."""
        seq, sid, req, t0, poll = self.running
        micros = (_perf_ns() - t0) // 1000
        self.drain()
        if self.tty_master is not None:
            self.drain_tty()
        self.finish()
        cut = self.cut
        if fast is not None and not self.sigint and not cut:
            payload = (b'{"type":"result","id":%s,"status":"ok","duration_ms":%d.%03d}'
                       % (sid, micros // 1000, micros % 1000))
        else:
            limit = _frame_cap(self.max_output) // 4
            status, result, error = "ok", None, None
            if m is not None:
                status = m.get("status")
                if status not in ("ok", "error"):
                    status = "error"
                result, c1 = _bundle(m.get("result"), limit) if m.get("result") else (None, False)
                error, c2 = _error(m.get("error"), limit) if m.get("error") else (None, False)
                cut = cut or c1 or c2 or m.get("cut") is True
                if status == "error" and error is None:
                    error = {"name": "Error", "value": "the kernel sent no error", "traceback": []}
            frame = {"type": "result", "id": None, "status": status, "result": result,
                     "error": error, "duration_ms": micros / 1000}
            if self.sigint:
                # (bash's kernel says "Interrupted": kernel_bash.py)
                if status == "error" and error["name"] in ("KeyboardInterrupt", "Interrupted"):
                    frame["status"] = "interrupted"
                elif (m is not None and m.get("ki") is True) or self.lang != "python":
                    # The code caught our ^C and went on. (Python's kernel
                    # says when one reached it: a ^C that came as it ended,
                    # or between its own steps, did not.)
                    frame["sigint"] = True
            if cut:
                frame["truncated"] = True
            payload = _payload(frame).replace(b'"id":null', b'"id":' + sid, 1)
        self.running = None
        self.last = sid
        self.write(self.start, payload, END)
        for o in self.outs:                  # (after the frame: off its way)
            if o.period(sid, True, self.max_output):
                self.poller = None
        end = _perf_ns()
        self.run_ns += (min(end - t0, 2000 * poll) - self.run_ns) >> 2
        self.result_at = end
        if poll and self.gap_ns < poll * 1000:
            self.spin_until = end + poll * 1000
        self.next()
