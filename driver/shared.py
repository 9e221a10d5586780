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


_STDIN_KEY = b'"stdin_b64":"'
_B64_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="


def _loads_request(buf, start, end):
    """The JSON object in buf[start:end] (bytes or bytearray), but a long
    stdin_b64 member (base64: it needs no escapes) is cut out before the parse
    and given as a memoryview of buf: 16 MiB of stdin is never a str, nor
    copied (a parse would hold it twice more, and a small --memory does not
    fit that).  Anything else, or a text that only looks so, is parsed whole."""
    if end - start < 1 << 16:                # (the usual: as it always was)
        return _loads(buf[start:end].decode("utf-8"))
    k = buf.find(_STDIN_KEY, start, end)
    v = k + len(_STDIN_KEY)
    e = buf.find(b'"', v, end) if k >= 0 else -1
    if e >= 0 and buf.find(b"\\", v, e) < 0 and buf.find(_STDIN_KEY, e, end) < 0:
        view = memoryview(buf)
        req = _loads(str(bytes(view[start:v]) + bytes(view[e:end]), "utf-8"))
        if type(req) is dict and req.get("stdin_b64") == "":
            req["stdin_b64"] = view[v:e]
            return req
    return _loads(str(memoryview(buf)[start:end], "utf-8"))


def _base64_valid(data):
    """Whether data (str or bytes-like) is padded base64, checked a piece at a time."""
    if len(data) % 4:
        return False
    if type(data) is str:
        return not data.strip(_B64_BYTES.decode("ascii"))
    for i in range(0, len(data), 1 << 20):
        if bytes(data[i:i + (1 << 20)]).translate(None, _B64_BYTES):
            return False
    return True


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


def _prctl(option, arg):
    """prctl(option, arg): True if it took.  Python has no prctl; _ctypes
    without the ctypes package is the cheapest way to it."""
    try:
        import _ctypes

        class c_int(_ctypes._SimpleCData):
            _type_ = "i"

        class CFunc(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL
            _restype_ = c_int

        return CFunc(_ctypes.dlsym(_ctypes.dlopen(None), "prctl"))(option, arg, 0, 0, 0) == 0
    except Exception:
        return False
# ---- end of shared.py
