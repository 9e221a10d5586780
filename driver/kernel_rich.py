"""Rich output: display messages after the text written before them, and
pyplot figures (the bundles: kernel_display.py).

Not a module: a part of the Kernel class (a mixin), joined into kernel.py
where it says "# @include kernel_rich.py"; it uses kernel.py's globals.
"""
# ---- kernel_rich.py: joined into kernel.py at build time (driver_join.py, "# @include")


class _RichOutput:
    """Rich output of snippets."""

    # -- rich output
    def display_data(self, data, display_id=None, update=False, at_end=False):
        """One display message, after the text written before it; of the
        display display_id (a str, or None), an update of it or not; at_end:
        a figure shown as the snippet ends (a terminal shows it after the
        value, as Jupyter shows a cell's figures below its Out)."""
        where = self._route()
        sid = self.running if where is _PIPE else where
        msg = {"t": "display", "seq": sid, "late": where is not _PIPE, "data": data}
        if display_id is not None:
            msg["display_id"] = display_id
            if update:
                msg["update"] = True
        if at_end:
            msg["at_end"] = True
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
                                   "text/plain": repr(fig)}, at_end=True)
            _, exc = self._call_user(show)
            self._call_user(plt.close, num)
            if isinstance(exc, KeyboardInterrupt):
                break
