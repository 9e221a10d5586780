"""Rich output: display(), the reprs of a value (_repr_png_ and the rest) and
pyplot figures, as display messages after the text written before them.

Not a module: a part of the Kernel class (a mixin), joined into kernel.py
where it says "# @include kernel_rich.py"; it uses kernel.py's globals.
"""
# ---- kernel_rich.py: joined into kernel.py at build time (driver_join.py, "# @include")


class _RichOutput:
    """Rich output of snippets."""

    # -- rich output
    def _display_builtin(self):
        driver = self

        def display(*objs):
            """Show each object as rich output: text/plain, and image/png,
            image/jpeg, image/svg+xml and text/html from its _repr_*_ methods."""
            for obj in objs:
                driver.display_data(driver._mime(obj, driver.max_output))
        return display

    def display_data(self, data):
        """One display message, after the text written before it."""
        where = self._route()
        sid = self.running if where is _PIPE else where
        msg = {"t": "display", "seq": sid, "late": where is not _PIPE, "data": data}
        if where is _PIPE:
            for s in self.streams.values():
                s.flush()
        line = _dumps(msg).encode("ascii")
        cap = _frame_cap(self.max_output) // 2
        if len(line) > cap:
            msg["data"] = _fit_bundle(data, cap // 64, "display")
            line = _dumps(msg).encode("ascii")
        if _CUT and _CUT.pop(_get_ident(), False) and where is _PIPE:
            self.display_cut = True          # the running snippet's result says truncated
        if where is _PIPE:
            _settle(None)                    # the relay has read the text before it
            if _TTY[0]:
                self._tty_sync()
        if _get_ident() != self.main_ident or not self.armed:
            self.chan.write(line + b"\n")
            _LAST[0] = self.chan.msg
            return
        self.armed = False                   # a ^C must not cut a message in two
        try:
            self.chan.write(line + b"\n")
            _LAST[0] = self.chan.msg         # the text after it waits for the relay
        finally:
            self.armed = True
        if self.sigint_deferred:
            self.sigint_deferred = False
            raise KeyboardInterrupt

    def _tty_sync(self):
        """On a terminal, FIONREAD (_settle) cannot tell whether the relay read
        our text: ask it (T), and wait (up to SETTLE_WAIT) for the byte it
        types on our terminal once it has read everything before."""
        try:
            while select.select([1], [], [], 0)[0] and os.read(1, 256):
                pass                         # (an old answer, too late then)
            self.chan.write(b"T\n")
            if select.select([1], [], [], SETTLE_WAIT / 1e9)[0]:
                os.read(1, 256)
        except (OSError, ValueError):
            pass

    def _mime(self, obj, limit):
        """obj's MIME bundle, as IPython's display formatter makes it: repr()
        as text/plain, and each _repr_*_ of _REPRS that returns its type (or
        IPython's (data, metadata) pair). One that is missing or returns None
        is left out; one that raises an Exception (not a ^C: that stops the
        snippet) or returns another type is left out with a line on stderr;
        one over limit (encoded) is left out with a note, a cut image being
        no image. This is user code: the caller runs it interruptible."""
        data = {"text/plain": _cap_text(repr(obj), limit)}
        if isinstance(obj, type):
            return data                      # (a class's _repr_png_ is unbound)
        try:                                 # an object that makes up any attribute
            if getattr(obj, "_ipython_canary_method_should_not_exist_", None) is not None:
                return data
        except Exception:
            return data
        for mime, name, kind in _REPRS:
            try:
                method = getattr(obj, name, None)
                value = method() if callable(method) else None
            except Exception as e:
                try:                         # (its str() is user code too)
                    why = "%s: %s" % (type(e).__name__, e)
                except Exception:
                    why = type(e).__name__
                self._note("%s() of %s raised %s" % (name, type(obj).__name__, why))
                continue
            if type(value) is tuple and len(value) == 2:
                value = value[0]
            if value is None:
                continue
            if kind is str and isinstance(value, (bytes, bytearray)):
                try:
                    value = bytes(value).decode("utf-8")
                except UnicodeDecodeError:
                    pass
            if kind is bytes and isinstance(value, (bytes, bytearray, memoryview)):
                size = (memoryview(value).nbytes + 2) // 3 * 4
                value = (binascii.b2a_base64(value, newline=False).decode("ascii")
                         if not limit or size <= limit else None)
            elif kind is not str or type(value) is not str:
                self._note("%s() of %s returned %s, not %s" % (
                    name, type(obj).__name__, type(value).__name__, kind.__name__))
                continue
            else:
                size = len(value)
            if limit and size > limit:
                _CUT[_get_ident()] = True
                data["text/plain"] += ("\n[ptybox: %s dropped: %d bytes, over --max-output]"
                                       % (mime, size))
                continue
            data[mime] = value
        return data

    def _note(self, text):
        """A line of ptybox's on the snippet's stderr (a rich output that
        failed), in order with what the snippet wrote there."""
        try:
            err = self.std_streams[1]
            err.write("ptybox: %s\n" % _cap_text(text, 4096))
        except Exception:
            pass

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
