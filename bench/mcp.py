"""run_code through `ptybox mcp` beside the same snippet through `serve --stdio`,
as a program sees each: one request written, its reply read, N times.

Usage: python3 bench/mcp.py [PTYBOX] [--via none|local] [-n N] [--code CODE]

The round trip of CODE (default "x = 1") through each, after a warm-up, in
microseconds: p50, p99 and the ratio of the p50s. What mcp adds is its
JSON-RPC (parse, map, build the content) and one more loop turn. Every
wait has a deadline (a select timeout).
"""
import json
import os
import select
import statistics
import subprocess
import sys
import time


class Lines:
    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.buf = b""

    def send(self, obj):
        self.p.stdin.write(json.dumps(obj).encode() + b"\n")
        self.p.stdin.flush()

    def recv(self, timeout=60):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.p.stdout], [], [], left)[0]:
                raise TimeoutError("no reply within %s s" % timeout)
            chunk = os.read(self.p.stdout.fileno(), 1 << 16)
            if not chunk:
                raise EOFError("the process ended")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def close(self):
        self.p.stdin.close()
        self.p.wait(60)


def timed(n, once):
    once()  # (the session's start and first snippet are not what is measured)
    once()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        once()
        out.append((time.perf_counter() - t) * 1e6)
    out.sort()
    return statistics.median(out), out[min(len(out) - 1, int(len(out) * 0.99))]


def main():
    args = sys.argv[1:]
    ptybox, via, n, code = "build/ptybox", "local", 500, "x = 1"
    while args:
        a = args.pop(0)
        if a == "--via":
            via = args.pop(0)
        elif a == "-n":
            n = int(args.pop(0))
        elif a == "--code":
            code = args.pop(0)
        else:
            ptybox = a

    serve = Lines([ptybox, "serve", "--stdio", "--via", via])

    def serve_once():
        serve.send({"id": 1, "op": "exec", "code": code})
        r = serve.recv()
        assert r.get("status") == "ok", r

    s50, s99 = timed(n, serve_once)
    serve.close()

    mcp = Lines([ptybox, "mcp", "--via", via])
    mcp.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18"}})
    mcp.recv()

    def mcp_once():
        mcp.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": {"name": "run_code", "arguments": {"code": code}}})
        r = mcp.recv()
        assert r["result"]["isError"] is False, r

    m50, m99 = timed(n, mcp_once)
    mcp.close()
    print("%r x %d, --via %s" % (code, n, via))
    print("serve --stdio  p50 %7.0f us  p99 %7.0f us" % (s50, s99))
    print("mcp            p50 %7.0f us  p99 %7.0f us  (%.2fx serve's p50)" % (m50, m99, m50 / s50))


if __name__ == "__main__":
    main()
