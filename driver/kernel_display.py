"""The display system as IPython's makes it: a value's MIME bundle from its
_repr_*_ methods and _repr_mimebundle_ (include and exclude too), display()
and update_display() with display_id handles, and IPython's own display
functions routed here (an IPython.display.display(HTML(..)) with no IPython
shell would print the object's repr).

Not a module: a part of the Kernel class (a mixin), joined into kernel.py
where it says "# @include kernel_display.py"; it uses kernel.py's globals.
"""
# ---- kernel_display.py: joined into kernel.py at build time (driver_join.py, "# @include")

# Rich output methods, as IPython's display formatter calls them, in its
# order: MIME type, method, what it must return (bytes are sent base64, a
# JSON value as its JSON text: the relay takes strings only).
_REPRS = (("image/png", "_repr_png_", bytes), ("image/jpeg", "_repr_jpeg_", bytes),
          ("image/svg+xml", "_repr_svg_", str), ("text/html", "_repr_html_", str),
          ("text/markdown", "_repr_markdown_", str), ("text/latex", "_repr_latex_", str),
          ("application/json", "_repr_json_", list), ("application/pdf", "_repr_pdf_", bytes),
          ("application/javascript", "_repr_javascript_", str))
MAX_DISPLAY_ID = 256              # characters of a display_id: a longer one is a ValueError
MAX_BUNDLE_TYPES = 48             # MIME types from one _repr_mimebundle_: more are dropped
                                  # (with the reprs and text/plain, under the relay's 64)
# The modules of IPython that define or re-export display(): patched as they load.
_IPYTHON_DISPLAY = ("IPython.core.display_functions", "IPython.core.display", "IPython.display")


def _is_figure(obj):
    """Whether obj is a matplotlib Figure (its class or a base's), without
    importing matplotlib."""
    try:
        return any(c.__name__ == "Figure" and c.__module__ == "matplotlib.figure"
                   for c in type(obj).__mro__)
    except Exception:
        return False


class _DisplayHandle:
    """What display(obj, display_id=...) returns, as IPython's DisplayHandle:
    display() and update() of the display of that id."""

    def __init__(self, display_id=None):
        self.display_id = _Display.new_id() if display_id in (None, True) else display_id

    def __repr__(self):
        return "<DisplayHandle display_id=%s>" % self.display_id

    def display(self, obj, **kwargs):
        _DISPLAY[0](obj, display_id=self.display_id, **kwargs)

    def update(self, obj, **kwargs):
        _DISPLAY[0](obj, display_id=self.display_id, update=True, **kwargs)


_DISPLAY = [None]                 # the kernel's display(), for _DisplayHandle


class _IPythonLoader:
    """A module's loader, and then IPython's display functions made ours."""

    def __init__(self, loader, patch):
        self._ptybox_loader, self._ptybox_patch = loader, patch

    def create_module(self, spec):
        return self._ptybox_loader.create_module(spec)

    def exec_module(self, module):
        self._ptybox_loader.exec_module(module)
        self._ptybox_patch(module)

    def __getattr__(self, name):
        return getattr(self._ptybox_loader, name)


class _IPythonFinder:
    """On sys.meta_path: finds the display modules of IPython as the other
    finders do, with a loader that patches them once run."""

    def __init__(self, patch):
        self.patch = patch

    def find_spec(self, name, path=None, target=None):
        if name not in _IPYTHON_DISPLAY:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                if getattr(spec.loader, "exec_module", None) is not None:
                    spec.loader = _IPythonLoader(spec.loader, self.patch)
                return spec
        return None


class _Display:
    """display(), update_display() and the MIME bundle of a value."""

    @staticmethod
    def new_id():
        return binascii.hexlify(os.urandom(16)).decode("ascii")

    def _display_init(self):
        self.display = self._display_builtin()
        _DISPLAY[0] = self.display
        self.ipython_finder = _IPythonFinder(self._patch_ipython)
        sys.meta_path.insert(0, self.ipython_finder)

    def _patch_ipython(self, module):
        """IPython's display functions in module, as ours (they print a repr
        without an IPython shell)."""
        display = self.display
        def update_display(obj, *, display_id, **kwargs):
            kwargs["update"] = True
            display(obj, display_id=display_id, **kwargs)

        def publish_display_data(data, metadata=None, source=None, *, transient=None,
                                 **kwargs):
            display_id = (transient or {}).get("display_id")
            display(data, raw=True, display_id=display_id, update=kwargs.get("update", False))

        for name, fn in (("display", display), ("update_display", update_display),
                         ("publish_display_data", publish_display_data)):
            if name in module.__dict__:
                setattr(module, name, fn)

    def _display_builtin(self):
        driver = self

        def display(*objs, include=None, exclude=None, metadata=None, transient=None,
                    display_id=None, raw=False, clear=False, update=False, **kwargs):
            """Show each object as rich output, as IPython's display() does: its
            MIME bundle (text/plain, and what its _repr_*_ methods or its
            _repr_mimebundle_ give), or with raw=True, objs are bundles.
            display_id=True (or a str) returns a handle whose update() sends a
            new rendering of that display; update=True is such an update."""
            if display_id is None and isinstance(transient, dict):
                display_id = transient.get("display_id")
            if display_id is True:
                display_id = driver.new_id()
            if display_id is not None and (
                    type(display_id) is not str or not 0 < len(display_id) <= MAX_DISPLAY_ID
                    or not display_id.isascii() or not display_id.isprintable()):
                raise ValueError("display_id: printable ASCII of 1 to %d characters, or True"
                                 % MAX_DISPLAY_ID)
            if update and display_id is None:
                raise TypeError("update=True needs a display_id")
            for obj in objs:
                if raw:
                    data = driver._raw_bundle(obj, driver.max_output)
                else:
                    data = driver._mime(obj, driver.max_output, include, exclude)
                if data:
                    driver.display_data(data, display_id, bool(update))
            if display_id is not None and not update:
                return _DisplayHandle(display_id)
        return display

    def _mime(self, obj, limit, include=None, exclude=None):
        """obj's MIME bundle, as IPython's display formatter makes it: what
        _repr_mimebundle_(include, exclude) gives, then each _repr_*_ of
        _REPRS for the types it did not (IPython's (data, metadata) pair
        too: the metadata is dropped), then text/plain (repr()), and a
        matplotlib figure's PNG. One that is missing or returns None is left
        out; one that raises an Exception (not a ^C: that stops the snippet)
        or returns another type is left out with a line on stderr; one over
        limit (encoded) is left out with a note, a cut image being no image.
        This is user code: the caller runs it interruptible."""
        include = set(include) if include else None
        exclude = set(exclude) if exclude else ()
        def wanted(mime):
            return (include is None or mime in include) and mime not in exclude

        data = {}
        notes = []
        if not isinstance(obj, type) and not self._makes_up(obj):
            method = getattr(obj, "_repr_mimebundle_", None)
            if callable(method):
                value = self._repr_call(obj, "_repr_mimebundle_", method,
                                        include=include and sorted(include),
                                        exclude=sorted(exclude) or None)
                if type(value) is tuple and len(value) == 2:
                    value = value[0]
                if isinstance(value, dict):
                    for mime, v in value.items():
                        if len(data) >= MAX_BUNDLE_TYPES:
                            break
                        if type(mime) is str and wanted(mime):
                            self._add(data, notes, obj, mime, "_repr_mimebundle_", v, None,
                                      limit)
                elif value is not None:
                    self._note("_repr_mimebundle_() of %s returned %s, not dict"
                               % (type(obj).__name__, type(value).__name__))
            for mime, name, kind in _REPRS:
                if mime in data or not wanted(mime):
                    continue
                method = getattr(obj, name, None)
                if callable(method):
                    value = self._repr_call(obj, name, method)
                    if type(value) is tuple and len(value) == 2:
                        value = value[0]
                    if value is not None:
                        self._add(data, notes, obj, mime, name, value, kind, limit)
            if "image/png" not in data and wanted("image/png") and _is_figure(obj):
                self._add(data, notes, obj, "image/png", "savefig", self._figure_png(obj),
                          bytes, limit)
        if "text/plain" not in data and wanted("text/plain"):
            data["text/plain"] = _cap_text(repr(obj), limit)
        if notes:
            text = data.get("text/plain", "")
            data["text/plain"] = text + "".join(notes)
        # text/plain first, as IPython orders a bundle (and renderers look)
        return dict(sorted(data.items(), key=lambda kv: kv[0] != "text/plain"))

    def _makes_up(self, obj):
        """An object that makes up any attribute has no reprs of ours."""
        try:
            return getattr(obj, "_ipython_canary_method_should_not_exist_", None) is not None
        except Exception:
            return True

    def _repr_call(self, obj, name, method, **kwargs):
        """method(**kwargs), or None with a line on stderr if it raised."""
        try:
            return method(**kwargs)
        except Exception as e:
            try:                             # (its str() is user code too)
                why = "%s: %s" % (type(e).__name__, e)
            except Exception:
                why = type(e).__name__
            self._note("%s() of %s raised %s" % (name, type(obj).__name__, why))
            return None

    def _figure_png(self, fig):
        buf = io.BytesIO()
        try:
            fig.savefig(buf, format="png", bbox_inches="tight")
        except Exception as e:
            self._note("savefig() of %s raised %s" % (type(fig).__name__, type(e).__name__))
            return None
        return buf.getvalue()

    def _raw_bundle(self, obj, limit):
        """display(raw=True)'s bundle: a dict of MIME type to content."""
        if not isinstance(obj, dict):
            raise TypeError("display(raw=True) takes MIME bundles (dict), not %s"
                            % type(obj).__name__)
        data, notes = {}, []
        for mime, v in obj.items():
            if len(data) >= MAX_BUNDLE_TYPES:
                break
            if type(mime) is str:
                self._add(data, notes, obj, mime, "display", v, None, limit)
        if notes:
            data["text/plain"] = data.get("text/plain", "") + "".join(notes)
        return data

    def _add(self, data, notes, obj, mime, name, value, kind, limit):
        """value (of obj's method name) into data as mime's string, if it is of
        kind (None: whatever mime takes), or a line on stderr; over limit, a
        note (in notes) in its place."""
        if value is None:
            return
        binary = not (mime.startswith("text/") or mime == "image/svg+xml"
                      or mime.endswith("json") or mime == "application/javascript")
        text = None
        if isinstance(value, (bytes, bytearray, memoryview)) and kind is not list:
            if binary:
                size = (memoryview(value).nbytes + 2) // 3 * 4
                if limit and size > limit:
                    _CUT[_get_ident()] = True
                    notes.append("\n[ptybox: %s dropped: %d bytes, over --max-output]"
                                 % (mime, size))
                    return
                text = binascii.b2a_base64(value, newline=False).decode("ascii")
            else:
                try:
                    text = bytes(value).decode("utf-8")
                except UnicodeDecodeError:
                    pass
        elif type(value) is str and kind is not bytes:
            text = value                     # (in a bundle, an image's: base64 already)
        elif isinstance(value, (dict, list)) and (kind is list or kind is None
                                                  and mime.endswith("json")):
            try:
                text = _dumps(value)
            except (TypeError, ValueError, RecursionError) as e:
                self._note("%s() of %s returned JSON that cannot be sent: %s"
                           % (name, type(obj).__name__, type(e).__name__))
                return
        if text is None:
            if kind is None:
                self._note("%s() of %s returned %s for %s, not str or bytes" % (
                    name, type(obj).__name__, type(value).__name__, mime))
            else:
                self._note("%s() of %s returned %s, not %s" % (
                    name, type(obj).__name__, type(value).__name__,
                    "dict or list" if kind is list else kind.__name__))
            return
        if limit and len(text) > limit:
            _CUT[_get_ident()] = True
            notes.append("\n[ptybox: %s dropped: %d bytes, over --max-output]"
                         % (mime, len(text)))
            return
        data[mime] = text
