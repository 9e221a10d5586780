"""The client's requests, as the relay reads them off the terminal: lines
gathered (a put's megabytes read on without a poll between reads), base64url
decoded, parsed and checked before anything reaches the kernel; exec and
queries queued in order, stdin written as the kernel takes it, ^C, resize,
restart and the replies to queries, bounded and re-encoded.

Not a module: a part of the Relay class (a mixin), joined into relay.py
where it says "# @include relay_requests.py"; it uses relay.py's globals.
"""
# ---- relay_requests.py: joined into relay.py at build time (driver_join.py, "# @include")

class _Requests:
    # -- requests
    def on_tty(self):
        data = _read(self.tty, TTY_READ)
        if data is None:
            return
        if not data:
            self.exit(0)
        if len(data) >= TTY_PIECE:
            data = self.read_on(data)
        self.input(data)

    def read_on(self, data):
        """data and what follows it on the terminal now, up to TTY_GATHER
        bytes.  A terminal hands over at most its line discipline's buffer (4
        KiB) a read: a put's megabytes are read on without a poll between
        reads, and parsed once, not once each 4 KiB."""
        more = bytearray(data)
        while len(more) < TTY_GATHER:
            try:                             # (the terminal blocks: read only what is there)
                if fcntl.ioctl(self.tty, termios.FIONREAD, b"\0\0\0\0") == b"\0\0\0\0":
                    break
            except OSError:
                break
            piece = _read(self.tty, TTY_READ)
            if not piece:
                if piece is not None:
                    self.exit(0)
                break
            more += piece
        return bytes(more)

    def input(self, data):
        lines, cut = self.tty_lines.feed(data)
        if cut:
            self.reject(None, "a request line longer than %d bytes was dropped" % REQUEST_CAP,
                        True)
        lines = list(lines)
        for k in range(len(lines)):
            line, lines[k] = lines[k], None
            if line[:1] == b"!":             # a put's data: bytes as they are
                self.data_line(line[1:])
                continue
            if self.put_rx is not None:
                self.other_line()
            if b"\x03" in line or b"\r" in line:
                line = line.replace(b"\x03", b"").replace(b"\r", b"")
            if line[:1].isspace() or line[-1:].isspace():
                line = line.strip()          # (only then: a long one is not copied)
            if line:
                # Handed over in a box that request() empties: a long line
                # (16 MiB of stdin) is freed once decoded, not held here.
                box, line = [line], None
                self.request(box)

    def request(self, box):
        line = box.pop()
        try:
            text = _b64url_decode(line)
            line = None
            try:
                req = _loads_request(text, 0, len(text))
            except UnicodeDecodeError:
                rid = None
                try:
                    rid = _loads(text.decode("utf-8", "replace")).get("id")
                except Exception:
                    pass
                return self.reject(rid, "the request is not valid UTF-8")
        except (ValueError, TypeError, binascii.Error, RecursionError) as e:
            return self.reject(None, "malformed request: %s" % e, True)
        if type(req) is not dict:
            return self.reject(None, "a request must be a JSON object", True)
        op, rid = req.get("op"), req.get("id")
        if op == "exec":
            limit = req.get("max_output", DEFAULT_MAX_OUTPUT)
            poll = req.get("busy_poll", BUSY_POLL)
            if type(req.get("code")) is not str:
                return self.reject(rid, "exec needs a string 'code'", True)
            if type(limit) is not int or limit < 0:
                return self.reject(rid, "max_output must be an integer >= 0", True)
            if type(poll) is not int or not 0 <= poll <= 10 ** 6:
                return self.reject(rid, "busy_poll must be an integer from 0 to 10**6", True)
            argv, filename = req.get("argv"), req.get("filename")
            if argv is not None and (type(argv) is not list or len(argv) > ARGV_CAP
                                     or any(type(a) is not str for a in argv)):
                return self.reject(rid, "argv must be a list of at most %d strings" % ARGV_CAP,
                                   True)
            if filename is not None and (type(filename) is not str or not filename
                                         or "\0" in filename):
                return self.reject(rid, "filename must be a non-empty string", True)
            if type(req.get("main", False)) is not bool:
                return self.reject(rid, "main must be true or false", True)
            bad = self.bad_input(req)
            if bad:
                return self.reject(rid, bad, True)
            if self.result_at:
                gap = min(_perf_ns() - self.result_at, 2000 * poll)
                self.gap_ns += (gap - self.gap_ns) >> 2
                self.result_at = 0
            self.queue.append((op, rid, text, limit, poll))
        elif op in ("complete", "is_complete"):
            if type(req.get("code")) is not str:
                return self.reject(rid, "%s needs a string 'code'" % op, True)
            # Never behind a snippet: the prompt asking must not wait for it.
            if (self.running is not None or not self.kernel_up or self.killing is not None
                    or any(q[0] == "exec" for q in self.queue)):
                return self.send(self.busy_reply(op, rid, req))
            self.queue.append((op, rid, text, 0, 0))
        elif op in FILE_OPS:
            self.file_request(op, rid, req)
        elif op == "ping":
            self.queue.append((op, rid, None, 0, 0))
        elif op == "shutdown":
            self.exit(0)
        elif op == "interrupt":
            self.interrupt(rid)
        elif op == "stdin":
            return self.stdin_request(rid, req)
        elif op == "tty":
            if self.seq:
                return self.reject(rid, "tty must come before the first snippet", True)
            if not self.tty_mode:
                self.retty()
        elif op == "resize":
            cols, rows = req.get("cols"), req.get("rows")
            if type(cols) is not int or type(rows) is not int or not (
                    0 < cols < 1 << 16 and 0 < rows < 1 << 16):
                return self.reject(rid, "resize needs integer cols and rows from 1 to 65535",
                                   True)
            self.resize(cols, rows)
        elif op == "restart":
            # The ready that answers it says so: a kernel that died by itself
            # just before (its died and ready may be on their way) is not it.
            self.restart_id = rid
            if self.kernel_up and self.kernel:
                self.kill()
                # Told at once, and a fresh kernel started: with SIGKILL
                # pending it never runs again (its exit, later, is ignored).
                self.died(_signal.SIGKILL)
        else:
            return self.reject(rid, "unknown op %r" % (op,), True)
        self.next()

    def stdin_request(self, rid, req):
        """Bytes for the run's stdin stream, at any time (also while a snippet
        runs): written to the kernel's pipe as it takes them, acked once
        all are in; at most one chunk pending.  (Errors are not "broken": the
        snippets are not at fault.)"""
        data, eof = req.get("data", ""), req.get("eof", False)
        if type(data) is not str or len(data) > (STDIN_CHUNK + 2) // 3 * 4 or type(eof) is not bool:
            return self.reject(rid, "stdin needs a base64 string 'data' of at most %d bytes "
                               "and a boolean 'eof'" % STDIN_CHUNK)
        if self.stdin_buf is not None:
            return self.reject(rid, "a stdin chunk is still pending: wait for its ack")
        if self.stdin_eof:
            return self.reject(rid, "stdin after its end (eof)")
        if not _base64_valid(data):
            return self.reject(rid, "stdin data is not valid base64")
        raw = binascii.a2b_base64(data)
        self.stdin_buf = (rid, memoryview(raw), eof)
        self.stdin_eof = self.stdin_eof or eof
        self.flush_stdin()

    def flush_stdin(self):
        """As much of the pending stdin chunk as the pipe takes; its ack (and
        the pipe's end, at eof) once it is all in."""
        rid, view, eof = self.stdin_buf
        if self.stdin_w is not None:         # (a chunk fits whole: acked at once)
            _grow(self.stdin_w, self.grown)
        while view and self.stdin_w is not None:
            try:
                view = view[os.write(self.stdin_w, view):]
            except (BlockingIOError, InterruptedError):
                break
            except OSError:                  # no reader left (the kernel died): dropped
                view = view[:0]
        if view and self.stdin_w is not None:
            self.stdin_buf = (rid, view, eof)
            self.poller = None               # (POLLOUT on the pipe)
            return
        self.stdin_buf = None
        self.poller = None
        if eof and self.stdin_w is not None:
            os.close(self.stdin_w)
            self.stdin_w = None
        self.send({"type": "stdin", "id": rid})

    @staticmethod
    def bad_input(req):
        """What is wrong with an exec request's env, cwd or stdin_b64, or None."""
        env, cwd, data = req.get("env"), req.get("cwd"), req.get("stdin_b64")
        if env is not None and (type(env) is not dict or len(env) > ENV_CAP or any(
                type(v) is not str or not k or "=" in k or "\0" in k or "\0" in v
                for k, v in env.items())):
            return ("env must be an object of at most %d strings, its names non-empty "
                    "without '=' or NUL, its values without NUL" % ENV_CAP)
        if cwd is not None and (type(cwd) is not str or not cwd or "\0" in cwd):
            return "cwd must be a non-empty string without NUL"
        if data is not None:
            if type(data) not in (str, memoryview) or len(data) > (STDIN_CAP + 2) // 3 * 4:
                return "stdin_b64 must be a base64 string of at most %d bytes" % STDIN_CAP
            if not _base64_valid(data):
                return "stdin_b64 is not valid base64"   # (checked without a decoded copy)
        return None

    @staticmethod
    def busy_reply(op, rid, req):
        if op == "is_complete":
            return {"type": "reply", "id": rid, "status": "unknown", "indent": "", "busy": True}
        cursor = req.get("cursor")
        if type(cursor) is not int or cursor < 0:
            cursor = 0
        return {"type": "reply", "id": rid, "matches": [], "cursor_start": cursor,
                "cursor_end": cursor, "busy": True}

    def reply(self, m):
        """The running query's reply, from the kernel's message m (bounded and
        checked here), or an empty one when m is None (it took too long)."""
        seq, sid, req, t0, poll = self.running
        op = req["op"]
        frame = self.busy_reply(op, None, req)
        del frame["busy"]
        if m is None:
            frame["timeout"] = True
        elif op == "is_complete":
            if m.get("status") in ("complete", "incomplete", "invalid", "unknown"):
                frame["status"] = m["status"]
            indent = m.get("indent")
            if type(indent) is str and len(indent) <= 256 and not indent.strip(" \t"):
                frame["indent"] = indent
        else:
            matches = m.get("matches")
            if type(matches) is list:
                frame["matches"] = [x[:QUERY_MATCH_LEN] for x in matches[:QUERY_MATCHES]
                                    if type(x) is str]
            for k in ("cursor_start", "cursor_end"):
                if type(m.get(k)) is int and 0 <= m[k] <= 1 << 40:
                    frame[k] = m[k]
        if not self.query_told:
            self.query_told = True
            self.write(self.start, _payload(frame).replace(b'"id":null', b'"id":' + sid, 1),
                       END)
        if m is not None:                    # the kernel is free again
            self.running, self.query, self.query_by = None, None, None
            self.next()

    def query_late(self):
        """A query past its time: ^C (user code in __getattr__ may hang), then,
        if even that does not end it, our own empty reply; the kernel stays
        busy with it (what is queued waits, as behind a snippet)."""
        if not self.sigint:
            self.sigint = True
            self.wbuf += b"I%d\n" % self.running[0]
            self.flush_req()
            try:
                os.killpg(self.kernel, _signal.SIGINT)
            except (OSError, TypeError):
                pass
            self.query_by = time.monotonic() + QUERY_WAIT
        else:
            self.query_by = None
            self.reply(None)

    def resize(self, cols, rows):
        """The client's terminal size: the kernel's COLUMNS and LINES, set
        before its next snippet (the X line carries it); with a tty, its
        terminal's size at once, and a SIGWINCH."""
        self.size = b"%dx%d" % (cols, rows)
        self.size_sent = False
        self.size_tty()
        if self.tty_master is not None and self.kernel and self.kernel_up:
            # The kernel's terminal is not its controlling one, so the
            # kernel gets no SIGWINCH from it: sent as a terminal would.
            try:
                os.killpg(self.kernel, _signal.SIGWINCH)
            except OSError:
                pass

    def reject(self, rid, message, broken=False):
        frame = {"type": "error", "id": rid, "message": message}
        if broken:
            frame["broken"] = True
        self.send(frame)

    def interrupt(self, rid):
        """^C for the snippet named rid, if it runs (or is about to): the
        interrupt line first, then SIGINT to the kernel's process group, as a
        terminal sends it to its foreground group."""
        running = self.running
        if (running is not None and running[2].get("id") == rid and not self.sigint
                and self.fileop is None):   # (a file op is never interrupted)
            self.sigint = True
            self.wbuf += b"I%d\n" % running[0]
            self.flush_req()
            try:
                os.killpg(self.kernel, _signal.SIGINT)
            except (OSError, TypeError):
                pass
