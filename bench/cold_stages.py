#!/usr/bin/env python3
"""The driver's cold start, stage by stage, for builds side by side: what
ptybox's cold start to the first result spends on the far side, without the
sandbox and without the client library.

    python3 bench/cold_stages.py [-n RUNS] BUILD_DIR [BUILD_DIR ...]

Each BUILD_DIR is a build folder of ptybox (any version that writes
driver_code.c, the driver compiled at build time): a pre-split one
(git show d1e6673^) against today's says what the relay and its kernel cost.
For each run and build in turn (alternating, so that drift on a shared
machine hits all alike), a fresh /usr/bin/python3 -I -S on a pseudo-terminal
of its own, echo off, runs the protocol's bootstrap (ptybox-protocol(7),
BOOT), and this script, as the client, times each stage until the result of
`x = 1`:

    boot     the interpreter's start, to the PTYBOX/1 BOOT line
    send     the form line and the driver's base64 lines written
    nonce    to PTYBOX/1 NONCE? (decoding, inflating, loading, the relay's start)
    ready    from the nonce written to the ready frame (the first kernel's start)
    result   from the exec request written to its result frame
    total    from the fork to the result

The compiled driver for Python is taken (ptybox_driver_code_python where the
build has it, else ptybox_driver_code). Prints the median of each stage.
Every wait has a deadline. Not a test and not a figure for users.
"""
import argparse
import binascii
import os
import re
import select
import signal
import statistics
import subprocess
import sys
import termios
import time

PYTHON = "/usr/bin/python3"
BOOT = ('import binascii as b,marshal as m,_frozen_importlib_external as f;'
        'h=f.MAGIC_NUMBER.hex();print("PTYBOX/1","BOOT",h);'
        'k,_,l=input().partition(" ");'
        's=b.a2b_base64("".join(iter(input,"")));'
        'exec(m.loads(__import__("zlib").decompress(s))if k==h else s)')
LINE = 512          # PROTOCOL_BOOT_LINE
DEADLINE = 10.0     # s for one cold start
STAGES = ("boot", "send", "nonce", "ready", "result", "total")


def driver_code(build):
    """(magic, compressed code) of the Python driver a build embeds."""
    with open(os.path.join(build, "driver_code.c")) as f:
        src = f.read()
    magic = re.search(r'ptybox_driver_magic\[\] = "([0-9a-f]*)"', src)
    for name in ("ptybox_driver_code_python", "ptybox_driver_code"):
        m = re.search(r"const unsigned char %s\[\] = \{(.*?)\};" % name, src, re.S)
        if m:
            blob = bytes(int(x, 16) for x in re.findall(r"0x([0-9a-f]{2})", m.group(1)))
            if magic and len(blob) > 1:
                return magic.group(1), blob
    sys.exit("cold_stages.py: %s: no compiled driver in driver_code.c" % build)


def wait_for(fd, buf, pattern, deadline):
    while pattern not in buf:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise RuntimeError("no %r in time; last: %r" % (pattern, buf[-200:]))
        try:
            data = os.read(fd, 65536)
        except OSError:
            data = b""
        if not data:
            raise RuntimeError("the driver ended before %r; last: %r" % (pattern, buf[-200:]))
        buf += data
    return buf


def cold_start(magic, blob):
    b64 = binascii.b2a_base64(blob, newline=False)
    boot = (magic.encode() + b"\n" + b"".join(b64[i:i + LINE] + b"\n"
                                               for i in range(0, len(b64), LINE)) + b"\n")
    t0 = time.monotonic()
    pid, fd = os.forkpty()
    if pid == 0:
        try:
            attrs = termios.tcgetattr(0)
            attrs[3] &= ~termios.ECHO
            termios.tcsetattr(0, termios.TCSANOW, attrs)
            os.execve(PYTHON, [PYTHON, "-I", "-S", "-c", BOOT],
                      {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"})
        finally:
            os._exit(127)
    deadline = t0 + DEADLINE
    try:
        buf = wait_for(fd, b"", b"PTYBOX/1 BOOT", deadline)
        t_boot = time.monotonic()
        view = memoryview(boot)
        while view:
            if not select.select([], [fd], [], max(0, deadline - time.monotonic()))[1]:
                raise RuntimeError("the driver took no more of its boot lines")
            view = view[os.write(fd, view[:4096]):]
        t_sent = time.monotonic()
        buf = wait_for(fd, buf, b"NONCE?", deadline)
        t_nonce = time.monotonic()
        os.write(fd, os.urandom(16).hex().encode() + b"\n")
        buf = wait_for(fd, buf, b'"ready"', deadline)
        buf = wait_for(fd, buf[buf.index(b'"ready"'):], b":ptybox>>>", deadline)
        t_ready = time.monotonic()
        os.write(fd, binascii.b2a_base64(b'{"id":1,"op":"exec","code":"x = 1"}'))
        buf = wait_for(fd, buf, b'"result"', deadline)
        wait_for(fd, buf[buf.index(b'"result"'):], b":ptybox>>>", deadline)
        t_result = time.monotonic()
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    ms = [t_boot - t0, t_sent - t_boot, t_nonce - t_sent, t_ready - t_nonce,
          t_result - t_ready, t_result - t0]
    return [x * 1e3 for x in ms]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", "--runs", type=int, default=20)
    ap.add_argument("builds", nargs="+")
    a = ap.parse_args()
    if a.runs < 1:
        sys.exit("cold_stages.py: --runs: at least 1")
    here = subprocess.run([PYTHON, "-I", "-S", "-c",
                           "import _frozen_importlib_external as f;print(f.MAGIC_NUMBER.hex())"],
                          capture_output=True, text=True, timeout=DEADLINE).stdout.strip()
    drivers = [(b,) + driver_code(b) for b in a.builds]
    for build, magic, _ in drivers:
        if magic != here:
            sys.exit("cold_stages.py: %s was compiled for magic %s, %s has %s"
                     % (build, magic, PYTHON, here))
    runs = {b: [] for b in a.builds}
    for _ in range(a.runs):
        for build, magic, blob in drivers:
            runs[build].append(cold_start(magic, blob))
    width = max(len(b) for b in a.builds)
    print("%-*s  %8s" % (width, "median ms", "KB") + "".join("%8s" % s for s in STAGES))
    for build, _, blob in drivers:
        cols = list(zip(*runs[build]))
        print("%-*s  %8.0f" % (width, build, len(blob) / 1024)
              + "".join("%8.2f" % statistics.median(c) for c in cols))


if __name__ == "__main__":
    main()
