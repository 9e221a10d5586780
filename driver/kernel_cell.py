"""A snippet's source as IPython takes a cell's: indented as a whole, it is
dedented (IPython's leading_indent); a `;` after its last expression hides the
value; top-level await is allowed (the loop: kernel_async.py).

Not a module: functions joined into kernel.py where it says
"# @include kernel_cell.py"; they use kernel.py's globals.
"""
# ---- kernel_cell.py: joined into kernel.py at build time (driver_join.py, "# @include")

# compile() flag: await, async for and async with at the top level make a
# coroutine's code (CO_COROUTINE), which eval() turns into a coroutine.
_TOP_AWAIT = getattr(_ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0x2000)
_CO_COROUTINE = 0x80


def _dedented(code):
    """code with its first non-blank line's indent taken off every line that
    starts with it (lines of blanks only become empty), as IPython's
    leading_indent: a continuation line at column 0 is left as it is; code
    itself when its first line is not indented (quick: nearly every snippet
    starts with a letter)."""
    first = code[:1]
    if first != " " and first != "\t" and first != "\n" and first != "\r":
        return code
    parts = code.split("\n")
    margin = ""
    for line in parts:
        body = line.lstrip(" \t")
        if body and body != "\r":
            margin = line[:len(line) - len(body)]
            break
    if not margin:
        return code
    n = len(margin)
    return "\n".join(line[n:] if line.startswith(margin) and line.strip(" \t\r") else
                     line if line.strip(" \t\r") else line[len(line.rstrip("\r")):]
                     for line in parts)


def _quiet(lines, node):
    """Whether a `;` follows node (the last statement) in the source (its
    lines, as compile splits them), as IPython hides a cell's value: read
    from the end of node as the parser placed it, so a `;` in a string or a
    comment is none."""
    if not lines or node.end_lineno is None or node.end_lineno > len(lines):
        return False
    line = lines[node.end_lineno - 1].encode("utf-8", "surrogatepass")
    tail = line[node.end_col_offset:].decode("utf-8", "replace")
    i, rest = 0, node.end_lineno
    while True:
        while i < len(tail) and tail[i] in " \t\f\r\n":
            i += 1
        if tail.startswith("\\", i):         # a line continued: the next one
            i += 1
            continue
        if i < len(tail) or rest >= len(lines):
            return tail.startswith(";", i)
        tail, i, rest = lines[rest], 0, rest + 1


_AWAIT_VALUE = "_ptybox_await_value"   # global: the value of an awaiting snippet, on its way
_AWAIT_LAST = "await"              # _compile's last: the value is in _AWAIT_VALUE


def _assign_value(expr):
    """`_AWAIT_VALUE = expr` at expr's place: the statement that ends an
    awaiting snippet, whose code is one coroutine's, value and all."""
    where = {k: getattr(expr, k, None) for k in ("lineno", "col_offset", "end_lineno",
                                                 "end_col_offset")}
    name = _ast.Name(id=_AWAIT_VALUE, ctx=_ast.Store(), **where)
    return _ast.Assign(targets=[name], value=expr, type_comment=None, **where)
