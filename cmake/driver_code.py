"""Precompiles the driver for the interpreter that runs this script.

Usage: python3 -I driver_code.py DRIVER_PY OUTPUT_C

Writes OUTPUT_C with ptybox_driver_code (the driver's code object, marshalled
and zlib-compressed) and ptybox_driver_magic (this interpreter's bytecode
magic number in hex).  The client sends this code instead of the source when
the bootstrap reports the same magic (ptybox-protocol(7), BOOT): that skips
compiling the source on every start.  Compressed because every byte goes
through a canonical-mode terminal, which costs more than zlib takes to
inflate it.  A syntax error in the driver fails the build here.
"""

import importlib.util
import marshal
import os
import sys
import zlib


def main():
    src_path, out_path = sys.argv[1], sys.argv[2]
    with open(src_path, "rb") as f:
        source = f.read()
    code = compile(source, "<ptybox-driver>", "exec", dont_inherit=True, optimize=0)
    blob = zlib.compress(marshal.dumps(code), 9)
    magic = importlib.util.MAGIC_NUMBER.hex()
    rows = ",\n".join(",".join("0x%02x" % b for b in blob[i:i + 16])
                      for i in range(0, len(blob), 16))
    text = ("/* Generated from %s by %s (Python %s); do not edit. */\n"
            "#include <stddef.h>\n"
            "extern const unsigned char ptybox_driver_code[];\n"
            "extern const size_t ptybox_driver_code_len;\n"
            "extern const char ptybox_driver_magic[];\n"
            "const unsigned char ptybox_driver_code[] = {\n%s};\n"
            "const size_t ptybox_driver_code_len = %d;\n"
            "const char ptybox_driver_magic[] = \"%s\";\n"
            % (os.path.basename(src_path), sys.executable, sys.version.split()[0], rows,
               len(blob), magic))
    tmp = out_path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, out_path)


main()
