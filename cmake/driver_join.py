"""Joins the relay and the kernel into the one program the client sends.

Usage: python3 -I driver_join.py source RELAY_PY KERNEL_PY OUTPUT_PY
       python3 -I driver_join.py code RELAY_PY KERNEL_PY OUTPUT_C

Both files get shared.py (beside them) where they say "# @shared", and each
file they name in a line "# @include FILE" (beside them), in its place: the
relay's and the kernel's sources live in several files, one concept each.  A
line "# @string NAME FILE" becomes NAME = FILE's text (a str constant): code
of another language that must travel inside the driver (kernel_node.js).
The program on the wire is the relay (relay.py) with the kernel (kernel.py)
inside it as the constant _KERNEL, which the relay's fork template runs once
and every kernel it forks inherits.  In the source form (for any Python, and
runnable as a script: the tests speak to it directly) _KERNEL is the kernel's
source.  In the code form it is the kernel compiled by the interpreter that
runs this script and marshalled, inside the relay's code, marshalled too and
zlib-compressed: OUTPUT_C gets ptybox_driver_code, ptybox_driver_code_python
(the same without the other languages' kernels, OTHER_LANGUAGES, for a
Python session) and ptybox_driver_magic (this interpreter's bytecode magic),
and the client sends this code instead of the source when the bootstrap
reports the same magic (ptybox-protocol(7), BOOT).  Compressed because every byte goes through a canonical-mode
terminal.  Run with -X no_debug_ranges for the code form (driver.cmake):
the code then has no column tables (carets in tracebacks, Python 3.11 and
later), a quarter of its size, and every cold start sends and loads it.
A syntax error in either file fails the build here.
"""

import importlib.util
import marshal
import os
import sys
import zlib

# Before the relay's code, which forks its template as soon as it has defined
# what the template needs (relay.py's _TEMPLATE).
HEAD = '''

def _kernel_code():
    if type(_KERNEL) is bytes:
        import marshal
        return marshal.loads(_KERNEL)
    return compile(_KERNEL, "<ptybox-kernel>", "exec", dont_inherit=True)

'''

TAIL = '''

if __name__ == "__main__":
    # The kernel's language: the second word of the boot's form line, which
    # the bootstrap left in l (ptybox-protocol(7), BOOT); run as a script,
    # Python's.
    main(_kernel_code, globals().get("l") or "python", _TEMPLATE)
'''


MARK = "# @shared\n"


def with_shared(text, shared, name):
    """text with shared.py's code where it says MARK (once)."""
    if text.count(MARK) != 1:
        sys.exit("driver_join.py: %s must say %r once" % (name, MARK.strip()))
    return text.replace(MARK, shared.split('"""\n', 1)[1])


INCLUDE = "# @include "
STRING = "# @string "


def with_includes(text, folder, name, leave_out=(), found=None):
    """text with each "# @include FILE" line replaced by FILE's code (its
    docstring left out): one file's source in several, joined here.  Files
    named in leave_out are left out (and added to the set found, if given)."""
    out = []
    for line in text.splitlines(keepends=True):
        if line.startswith(STRING) or line.startswith(INCLUDE):
            part = line.split()[-1]
            if part in leave_out:
                if found is not None:
                    found.add(part)
                continue
        if line.startswith(STRING):
            words = line[len(STRING):].split()
            if len(words) != 2 or not words[0].isidentifier() or \
                    os.path.basename(words[1]) != words[1]:
                sys.exit("driver_join.py: %s: %r: NAME and a file beside it" % (name, line))
            with open(os.path.join(folder, words[1]), encoding="utf-8") as f:
                out.append("%s = %r\n" % (words[0], f.read()))
            continue
        if not line.startswith(INCLUDE):
            out.append(line)
            continue
        part = line[len(INCLUDE):].strip()
        if os.path.basename(part) != part:
            sys.exit("driver_join.py: %s: %r: a file beside it" % (name, part))
        with open(os.path.join(folder, part)) as f:
            body = f.read()
        if not body.startswith('"""') or '"""\n' not in body[3:]:
            sys.exit("driver_join.py: %s must open with a docstring" % part)
        out.append(body[3:].split('"""\n', 1)[1])
    return "".join(out)


def joined(relay, kernel_constant):
    return "_KERNEL = %r\n%s\n%s%s" % (kernel_constant, HEAD, relay, TAIL)


def write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


# The kernel's parts that only another language's kernel needs (src/lang.c):
# the compiled driver a Python session gets leaves them out, a fifth less to
# send, inflate and load at each cold start.
OTHER_LANGUAGES = ("kernel_bash.py", "kernel_node.py", "kernel_node.js", "kernel_node_files.js")


def compiled(relay, kernel):
    """The driver's code: the kernel compiled and marshalled inside the
    relay's code, marshalled too, and compressed."""
    kernel_code = compile(kernel, "<ptybox-kernel>", "exec", dont_inherit=True, optimize=0)
    code = compile(joined(relay, marshal.dumps(kernel_code)), "<ptybox-driver>", "exec",
                   dont_inherit=True, optimize=0)
    return zlib.compress(marshal.dumps(code), 9)


def c_bytes(blob):
    return ",\n".join(",".join("0x%02x" % b for b in blob[i:i + 16])
                      for i in range(0, len(blob), 16))


def main():
    form, relay_path, kernel_path, out_path = sys.argv[1:5]
    folder = os.path.dirname(kernel_path)
    with open(os.path.join(os.path.dirname(relay_path), "shared.py")) as f:
        shared = f.read()
    with open(relay_path) as f:
        relay = with_includes(with_shared(f.read(), shared, relay_path),
                              os.path.dirname(relay_path), relay_path)
    with open(kernel_path) as f:
        kernel_text = with_shared(f.read(), shared, kernel_path)
    kernel = with_includes(kernel_text, folder, kernel_path)
    if form == "source":
        compile(kernel, "<ptybox-kernel>", "exec", dont_inherit=True)
        text = joined(relay, kernel)
        compile(text, "<ptybox-driver>", "exec", dont_inherit=True)
        write(out_path, text)
        return
    blob = compiled(relay, kernel)
    found = set()
    python_kernel = with_includes(kernel_text, folder, kernel_path, OTHER_LANGUAGES, found)
    if found != set(OTHER_LANGUAGES):
        sys.exit("driver_join.py: %s includes none of %s" % (
            kernel_path, ", ".join(sorted(set(OTHER_LANGUAGES) - found))))
    python_blob = compiled(relay, python_kernel)
    magic = importlib.util.MAGIC_NUMBER.hex()
    write(out_path,
          "/* Generated from %s and %s by %s (Python %s); do not edit. */\n"
          "#include <stddef.h>\n"
          "extern const unsigned char ptybox_driver_code[];\n"
          "extern const size_t ptybox_driver_code_len;\n"
          "extern const unsigned char ptybox_driver_code_python[];\n"
          "extern const size_t ptybox_driver_code_python_len;\n"
          "extern const char ptybox_driver_magic[];\n"
          "const unsigned char ptybox_driver_code[] = {\n%s};\n"
          "const size_t ptybox_driver_code_len = %d;\n"
          "/* The same with the Python kernel alone (OTHER_LANGUAGES left out). */\n"
          "const unsigned char ptybox_driver_code_python[] = {\n%s};\n"
          "const size_t ptybox_driver_code_python_len = %d;\n"
          "const char ptybox_driver_magic[] = \"%s\";\n"
          % (os.path.basename(relay_path), os.path.basename(kernel_path), sys.executable,
             sys.version.split()[0], c_bytes(blob), len(blob), c_bytes(python_blob),
             len(python_blob), magic))


main()
