"""Kernel restart to the next result, as a program sees it through serve --stdio.

Usage: python3 bench/restart.py [PTYBOX] [--via none|local] [-n N]

For each of N rounds: a `restart` request and an `exec` of "1" in one write,
timed from the write to the result of the exec; then a snippet that crashes
(os._exit) and an exec of "1" after it in one write, timed from the write to
the result of the exec. Medians and the spread, in milliseconds. No pool (--pool 0):
what a fresh start costs. Every wait has a deadline (a select timeout).
"""
import json
import select
import statistics
import subprocess
import sys
import time


def main():
    args = sys.argv[1:]
    ptybox, via, n = "build/ptybox", "local", 50
    while args:
        a = args.pop(0)
        if a == "--via":
            via = args.pop(0)
        elif a == "-n":
            n = int(args.pop(0))
        else:
            ptybox = a
    p = subprocess.Popen([ptybox, "serve", "--stdio", "--via", via, "--pool", "0"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    buf = b""

    def reply(want, timeout=30):
        nonlocal buf
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                m = json.loads(line)
                if m.get("id") == want and ("status" in m or "error" in m):
                    return m
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([p.stdout], [], [], left)[0]:
                sys.exit("restart.py: no reply for %r within %s s" % (want, timeout))
            data = p.stdout.read1(1 << 16)
            if not data:
                sys.exit("restart.py: ptybox ended")
            buf += data

    def send(*reqs):
        p.stdin.write(b"".join(json.dumps(r).encode() + b"\n" for r in reqs))
        p.stdin.flush()

    send({"id": "warm", "op": "exec", "code": "1"})
    reply("warm", 60)
    restart, crash = [], []
    for i in range(n):
        t0 = time.perf_counter()
        send({"id": "r%d" % i, "op": "restart"}, {"id": "a%d" % i, "op": "exec", "code": "1"})
        r = reply("a%d" % i)
        restart.append((time.perf_counter() - t0) * 1e3)
        assert r["status"] == "ok" and r["state_lost"], r
        t0 = time.perf_counter()
        send({"id": "c%d" % i, "op": "exec", "code": "import os; os._exit(1)"},
             {"id": "b%d" % i, "op": "exec", "code": "1"})
        r = reply("c%d" % i)
        assert r["status"] == "crashed", r
        reply("b%d" % i)
        crash.append((time.perf_counter() - t0) * 1e3)
    p.stdin.close()
    p.wait(30)
    for name, xs in (("restart to the next result", restart),
                     ("a crash to the next result", crash)):
        xs.sort()
        print("%-32s p50 %6.2f ms   p10 %6.2f   p90 %6.2f   (via %s, N=%d)"
              % (name, statistics.median(xs), xs[len(xs) // 10], xs[len(xs) * 9 // 10], via, n))


main()
