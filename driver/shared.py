"""What the relay and the kernel share: fast JSON, UTF-8 cuts, the frame cap.

Not a module: driver_join.py puts this text into relay.py and kernel.py where
each says "# @shared", after their imports (it uses fcntl) and, in the
kernel, after its private builtins are in place (its functions take their
builtins from there).
"""
# ---- shared.py: joined into relay.py and kernel.py at build time (driver_join.py)
DEFAULT_MAX_OUTPUT = 4 << 20      # per stream and snippet: PROTOCOL_DEFAULT_MAX_OUTPUT
F_DUPFD_CLOEXEC = getattr(fcntl, "F_DUPFD_CLOEXEC", 1030)
# The json package's own C accelerators, without importing json (and re) at start-up.
try:
    import _json

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
        except SystemError:
            import json
            return json.loads(text)
        if end != len(text) and text[end:].strip():
            raise ValueError("extra data after the JSON value")
        return obj
except (ImportError, AttributeError):
    import json
    _dumps = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode
    _loads = json.JSONDecoder().decode


def _char_start(data, i):
    """An index j in [i-3, i] that does not split a UTF-8 character (i if none)."""
    for j in range(i, max(i - 3, 0) - 1, -1):
        if data[j] & 0xC0 != 0x80:
            return j
    return i


def _frame_cap(max_output):
    """The longest payload the client takes (PROTOCOL_MAX_PAYLOAD): it drops
    a longer frame unread, so a result over it would never arrive."""
    return max_output * 4 + (16 << 20)
# ---- end of shared.py
