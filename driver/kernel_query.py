"""The queries of a prompt: is_complete (codeop's verdict) and complete (names
and attributes of the live namespace), bounded and interruptible.

Not a module: a part of the Kernel class (a mixin), joined into kernel.py
where it says "# @include kernel_query.py"; it uses kernel.py's globals.
"""
# ---- kernel_query.py: joined into kernel.py at build time (driver_join.py, "# @include")


class _Queries:
    """A prompt's queries."""

    # -- queries: is_complete and complete (ptybox-protocol(7))
    def query(self, seq, req):
        """A reply for query seq, whatever happens: one that fails (user code
        raising or interrupted in __getattr__ or __dir__) is an empty one."""
        op = req.get("op")
        code = req.get("code")
        reply = ({"status": "unknown", "indent": ""} if op == "is_complete"
                 else {"matches": [], "cursor_start": 0, "cursor_end": 0})
        try:
            if type(code) is str and len(code) <= QUERY_CODE:
                if op == "is_complete":
                    reply = self._is_complete(code)
                else:
                    cursor = req.get("cursor")
                    if type(cursor) is not int or not 0 <= cursor <= len(code):
                        cursor = len(code)
                    reply["cursor_start"] = reply["cursor_end"] = cursor
                    self.running = seq       # (a ^C now raises, in user code only)
                    try:
                        reply = self._complete(code, cursor)
                    finally:
                        self.running = None
        except BaseException:
            pass
        reply["t"], reply["seq"] = "reply", seq
        try:
            self.chan.send(reply)
        except BaseException:
            pass

    def _is_complete(self, code):
        """As codeop sees it (Jupyter's is_complete_reply): a block that goes on
        (def f():, an open bracket, a backslash) is incomplete until a blank
        line ends it; several statements pasted at once are one input."""
        codeop = self.codeop
        if codeop is None:
            import codeop, warnings
            self.codeop = codeop.CommandCompiler()
            self.codeop.compiler.flags |= _TOP_AWAIT    # (await is a statement, as snippets run)
            self.warnings = warnings
            codeop = self.codeop
        code, dangling = _escape(_dedented(code))   # (!cmd, %pip: kernel_packages.py)
        if dangling:
            return {"status": "incomplete", "indent": ""}
        lines = code.split("\n")
        last = lines[-1] if lines[-1].strip() or len(lines) < 2 else lines[-2]
        indent = last[:len(last) - len(last.lstrip())]
        if last.rstrip().endswith(":"):
            indent += "    "
        status = "complete"
        with self.warnings.catch_warnings():
            self.warnings.simplefilter("ignore")
            try:
                if codeop(code, "<input>", "single") is None:
                    status = "incomplete"
            except (SyntaxError, OverflowError, ValueError, MemoryError, RecursionError) as e:
                status = "invalid"
                if "multiple statements" in str(e):
                    try:
                        if codeop(code, "<input>", "exec") is None:
                            status = "incomplete"
                        elif lines[-1][:1] in (" ", "\t"):
                            status = "incomplete"    # (in a block: a blank line ends it)
                        else:
                            status = "complete"
                    except (SyntaxError, OverflowError, ValueError, MemoryError,
                            RecursionError):
                        pass
        return {"status": status, "indent": indent if status == "incomplete" else ""}

    def _complete(self, code, cursor):
        """Names of the live namespace, builtins and keywords, or attributes
        of a dotted name (obj.att), as rlcompleter finds them, but without
        evaluating anything but the attribute lookups of that name."""
        t0 = _perf_ns()
        text = code[:cursor]
        start = cursor
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_."):
            start -= 1
        word = text[start:]
        if not word or word[0].isdigit():
            return {"matches": [], "cursor_start": cursor, "cursor_end": cursor}
        names = set()
        if "." in word:
            path, prefix = word.rsplit(".", 1)
            start = cursor - len(prefix)
            parts = path.split(".")
            if not all(p.isidentifier() for p in parts):
                return {"matches": [], "cursor_start": cursor, "cursor_end": cursor}
            value, exc = self._call_user(self._lookup, parts)
            if exc is None:
                found, exc = self._call_user(self._attributes, value, prefix, t0)
                if exc is None:
                    names = found
        else:
            prefix = word
            import keyword
            for source in (keyword.kwlist, self.ns, _BUILTINS):
                for n in source:
                    if type(n) is str and n.startswith(prefix):
                        names.add(n)
                        if len(names) >= QUERY_NAMES:
                            break
        matches = sorted(n for n in names if not (n.startswith("__") and not prefix.startswith("_")))
        return {"matches": matches[:QUERY_MATCHES], "cursor_start": start, "cursor_end": cursor}

    def _lookup(self, parts):
        """The value a dotted name names: user code (properties, __getattr__)."""
        ns = self.ns
        if parts[0] in ns:
            value = ns[parts[0]]
        else:
            value = _BUILTINS[parts[0]]
        for p in parts[1:]:
            value = getattr(value, p)
        return value

    def _attributes(self, value, prefix, t0):
        names = set()
        found = dir(value)
        if type(found) is not list:
            found = list(found)[:QUERY_NAMES]
        for i, n in enumerate(found[:QUERY_NAMES]):
            if type(n) is str and n.startswith(prefix):
                names.add(n)
            if i % 1024 == 0 and _perf_ns() - t0 > QUERY_BUDGET:
                break
        return names
