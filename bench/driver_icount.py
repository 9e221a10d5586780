#!/usr/bin/env python3
"""Instructions per round trip of the driver (and of the floor), counted by
callgrind: a figure that repeats to within half a percent, where timings on a
shared machine move by tenths. For work on driver/driver.py:

    python3 bench/driver_icount.py driver/driver.py /tmp/old.py

Each file runs under `valgrind --tool=callgrind` on a terminal of its own,
once for SHORT and once for LONG round trips of `x = 1` (the driver's
protocol, as ptybox_driver_bench speaks it); the difference over LONG - SHORT
is the cost of one round trip, start-up excluded. The driver is measured in a
copy with two timing rules pinned, or valgrind's slowness would decide: the
thorough check never runs after a snippet (THOROUGH_EVERY), and `site` is
imported at start, not at the first idle moment. Needs valgrind.
Not a test and not a figure for users."""
import ast
import base64
import glob
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SHORT, LONG = 200, 1200
PYTHON = "/usr/bin/python3"
NONCE = b"0123456789abcdef0123456789abcdef"
FLOOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "floor.h")
DEADLINE = 600  # seconds for one run under valgrind


def floor_source():
    """floor_py from floor.h: the C string's pieces, unescaped."""
    text = open(FLOOR).read()
    body = text[text.index("floor_py[]"):]
    body = body[:body.index(";\n")]
    pieces = re.findall(r'"((?:[^"\\]|\\.)*)"', body)
    return "".join(pieces).encode().decode("unicode_escape")


# Timing rules pinned, in the driver or in its kernel (the split driver holds
# the kernel's source as a string, _KERNEL): each must match once in all.
PINS = [(r"^BUSY_POLL = .*$", "BUSY_POLL = 0", True),   # (spinning counts as work)
        (r"^THOROUGH_EVERY = .*$", "THOROUGH_EVERY = 10 ** 15"),
        (r"\bmicros >= 1000 or t1", "micros >= 10 ** 9 or t1"),
        (r"(\w+)\.site = _DeferredSite\(\w+\)", r"_DeferredSite(\1).load()"),
        # The relay ends its kernel with SIGTERM, not SIGKILL: callgrind
        # writes a process's counts as it dies, which SIGKILL never lets it.
        (r"os\.killpg\(self\.kernel, _signal\.SIGKILL\)\n            except OSError:\n"
         r"                pass\n            deadline",
         "os.killpg(self.kernel, _signal.SIGTERM)\n            except OSError:\n"
         "                pass\n            deadline", True)]


def pinned_copy(path, where):
    src = open(path).read()
    kernel = re.search(r"^_KERNEL = (.*)$", src, re.M)
    texts = [src, ""]
    if kernel:                               # (the rest of the driver, and the kernel)
        texts = [src[:kernel.start()] + "_KERNEL = None" + src[kernel.end():],
                 ast.literal_eval(kernel.group(1))]
    for pattern, repl, *optional in PINS:
        found = 0
        for i, text in enumerate(texts):
            texts[i], n = re.subn(pattern, repl, text, flags=re.M)
            found += n
        if found != 1 and not (optional and found == 0):
            sys.exit("driver_icount: %s: %d matches for %r" % (path, found, pattern))
    src = texts[0]
    if kernel:
        src = src.replace("_KERNEL = None", "_KERNEL = " + repr(texts[1]), 1)
    out = os.path.join(where, "driver.py")
    open(out, "w").write(src)
    return out


class Terminal:
    def __init__(self, argv):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execv(argv[0], argv)
        self.buf = b""
        self.deadline = time.monotonic() + DEADLINE

    def until(self, marker):
        while marker not in self.buf:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                sys.exit("driver_icount: nothing within %d s" % DEADLINE)
            try:
                chunk = os.read(self.fd, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                sys.exit("driver_icount: the interpreter ended: %r" % self.buf[-300:])
            self.buf += chunk
        self.buf = self.buf[self.buf.index(marker) + len(marker):]

    def send(self, data):
        while data:
            data = data[os.write(self.fd, data):]

    def wait(self):
        """Lets it exit on its own: callgrind writes its counts at exit."""
        while True:
            left = self.deadline - time.monotonic()
            if left <= 0:
                sys.exit("driver_icount: the interpreter did not exit")
            if select.select([self.fd], [], [], left)[0]:
                try:
                    if os.read(self.fd, 1 << 16):
                        continue
                except OSError:
                    pass
            break
        def late(signum, frame):
            os.kill(self.pid, signal.SIGKILL)
            sys.exit("driver_icount: the interpreter did not exit")
        signal.signal(signal.SIGALRM, late)
        signal.alarm(max(1, int(self.deadline - time.monotonic())))
        os.waitpid(self.pid, 0)               # (callgrind writes its file on the way out)
        signal.alarm(0)
        os.close(self.fd)


def request(obj):
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=") + b"\n"


def instructions(kind, path, rounds, out):
    argv = ["/usr/bin/valgrind", "--tool=callgrind", "--callgrind-out-file=" + out + ".%p", PYTHON]
    if kind == "floor":
        t = Terminal(argv + ["-I", "-c", floor_source()])
        t.until(b"\x02OK\n")
        for _ in range(rounds):
            t.send(b"x = 1\n")
            t.until(b"\x02OK\n")
        t.send(b"raise SystemExit\n")
    else:
        t = Terminal(argv + ["-I", "-S", path])
        t.until(b"NONCE?")
        t.send(NONCE + b"\n")
        t.until(b'"type":"ready"')
        for i in range(rounds):
            t.send(request({"id": i, "op": "exec", "code": "x = 1"}))
            t.until(b":ptybox>>>")
        t.send(request({"op": "shutdown"}))
    t.wait()
    total = 0
    for f in glob.glob(out + ".*"):  # (a file for each process: relay, template, kernel)
        report = subprocess.run(["callgrind_annotate", f], capture_output=True, text=True).stdout
        m = re.search(r"^\s*([\d,]+)\s.*PROGRAM TOTALS", report, re.M)
        if not m:
            sys.exit("driver_icount: no totals in %s" % f)
        total += int(m.group(1).replace(",", ""))
        if os.environ.get("ICOUNT_EACH"):     # (each process's count, to stderr)
            print("  %s: %s" % (os.path.basename(f), m.group(1)), file=sys.stderr)
    return total


def per_round_trip(kind, path, where):
    counts = [instructions(kind, path, n, os.path.join(where, "%s.%d.out" % (kind, n)))
              for n in (SHORT, LONG)]
    return (counts[1] - counts[0]) / (LONG - SHORT)


def main():
    if len(sys.argv) < 2 or not shutil.which("valgrind"):
        sys.exit("usage: driver_icount.py DRIVER.py... (needs valgrind)")
    with tempfile.TemporaryDirectory(prefix="ptybox-icount-") as where:
        print("%-40s %9.0f instructions per round trip" %
              ("floor", per_round_trip("floor", None, where)))
        for i, path in enumerate(sys.argv[1:]):
            sub = os.path.join(where, str(i))
            os.mkdir(sub)
            copy = pinned_copy(path, sub)
            print("%-40s %9.0f instructions per round trip" %
                  (path, per_round_trip("driver", copy, sub)), flush=True)


if __name__ == "__main__":
    main()
