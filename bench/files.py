"""put and get of a big file (issue 16) beside the floor, a raw PTY, measured in the same run.

Usage: /usr/bin/python3 bench/files.py [PTYBOX] [--mb N] [--rounds R] [--via WHERE]

ptybox: `ptybox serve --stdio` (the local sandbox by default), driven by this process as a
program would: JSON lines, 8 MiB chunks, two in flight (a put's chunks with "more" and
"offset"; a get's as ranges), base64 both ways, each line made when its turn comes, as cp
makes its own (not all of a put's lines before the first is sent). The floor, in the same
process: `cat FILE` through a raw PTY (pty.fork, tty.setraw in the child, the master read in
256 KiB reads), and the other way `head -c N > FILE` on a raw PTY written in 256 KiB writes.
N MB of random bytes (default 100), then a CSV file of the same size, which deflates (a get's
binary frames cross the PTY as zlib streams when that halves them). Medians over rounds.
Prints a markdown table.
"""
import base64
import json
import os
import pty
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import tty

CHUNK = 8 << 20
READ = 256 << 10


def floor_get(path):
    """Seconds for `cat path` through a raw PTY, and the bytes read."""
    pid, fd = pty.fork()
    if pid == 0:
        tty.setraw(0)
        os.execvp("cat", ["cat", path])
    t0, n = time.perf_counter(), 0
    while True:
        try:
            b = os.read(fd, READ)
        except OSError:
            break
        if not b:
            break
        n += len(b)
    dt = time.perf_counter() - t0
    os.waitpid(pid, 0)
    os.close(fd)
    return dt, n


def floor_put(data, path):
    """Seconds for len(data) bytes written into a raw PTY, read by head -c N > path."""
    pid, fd = pty.fork()
    if pid == 0:
        tty.setraw(0)
        os.execvp("sh", ["sh", "-c", 'stty raw -echo; exec head -c %d > "$0"' % len(data),
                         path])
    time.sleep(0.2)                          # (its stty, before any byte)
    t0 = time.perf_counter()
    view = memoryview(data)
    while view:
        r, w, _ = select.select([fd], [fd], [], 10)
        if r:
            try:
                os.read(fd, READ)
            except OSError:
                pass
        if w:
            view = view[os.write(fd, view[:READ]):]
    os.waitpid(pid, 0)
    dt = time.perf_counter() - t0
    os.close(fd)
    return dt


class Serve:
    def __init__(self, ptybox, via):
        self.p = subprocess.Popen([ptybox, "serve", "--stdio", "--via", via, "--tmp-size", "768M",
                                   "--memory", "3G", "--max-get", "16M", "--timeout", "300"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.out = self.p.stdout.fileno()
        self.inp = self.p.stdin.fileno()
        os.set_blocking(self.inp, False)
        self.buf = b""
        self.n = 0

    def lines(self, timeout=300):
        while b"\n" not in self.buf:
            if not select.select([self.out], [], [], timeout)[0]:
                raise TimeoutError("no reply")
            b = os.read(self.out, 1 << 22)
            if not b:
                raise EOFError("serve ended")
            self.buf += b
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def pipeline(self, requests):
        """Sends the requests (bytes lines, from an iterable: each made when
        its turn comes, as cp encodes a chunk when it sends it), at most two
        unanswered; returns the replies."""
        replies, pending, out = [], iter(requests), memoryview(b"")
        outstanding, more = 0, True
        while more or out or outstanding:
            if not out and more and outstanding < 2:
                line = next(pending, None)
                more = line is not None
                if more:
                    out = memoryview(line)
                    outstanding += 1
            r, w, _ = select.select([self.out], [self.inp] if out else [], [], 300)
            if not r and not w:
                raise TimeoutError("stuck")
            if w:
                try:
                    out = out[os.write(self.inp, out[:1 << 20]):]
                except BlockingIOError:
                    pass
            if r:
                b = os.read(self.out, 1 << 22)
                if not b:
                    raise EOFError("serve ended")
                self.buf += b
                while b"\n" in self.buf:
                    line, self.buf = self.buf.split(b"\n", 1)
                    replies.append(json.loads(line))
                    outstanding -= 1
        return replies

    def ask(self, obj):
        return self.pipeline([json.dumps(obj).encode() + b"\n"])[0]

    def put(self, path, data):
        """The first chunk alone (its reply names the upload), then the rest
        with that token, two in flight, as cp does."""
        def line(at, token):
            more = at + CHUNK < len(data)
            self.n += 1
            return (b'{"id":%d,"op":"put","path":"%s","offset":%d,"more":%s,%s"data":"'
                    % (self.n, path.encode(), at, b"true" if more else b"false",
                       b'"upload":"%s",' % token.encode() if token else b"")
                    + base64.b64encode(data[at:at + CHUNK]) + b'"}\n')
        first = line(0, None)
        t0 = time.perf_counter()
        replies = self.pipeline([first])
        token = replies[0].get("upload")
        if len(data) > CHUNK:
            assert token, replies[0]
            replies += self.pipeline(line(at, token) for at in range(CHUNK, len(data), CHUNK))
        dt = time.perf_counter() - t0
        assert all(r.get("ok") for r in replies), [r for r in replies if not r.get("ok")][:1]
        return dt

    def get(self, path, size):
        reqs = []
        for at in range(0, size, CHUNK):
            self.n += 1
            reqs.append(b'{"id":%d,"op":"get","path":"%s","offset":%d,"length":%d}\n'
                        % (self.n, path.encode(), at, CHUNK))
        t0 = time.perf_counter()
        replies = self.pipeline(reqs)
        data = b"".join(base64.b64decode(r["data"]) for r in replies)
        dt = time.perf_counter() - t0
        return dt, data

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def main():
    args = sys.argv[1:]
    ptybox = "build/ptybox"
    mb, rounds, via = 100, 3, "local"
    while args:
        a = args.pop(0)
        if a == "--mb":
            mb = int(args.pop(0))
        elif a == "--rounds":
            rounds = int(args.pop(0))
        elif a == "--via":
            via = args.pop(0)
        else:
            ptybox = a
    size = mb * 10 ** 6
    kinds = {"random": os.urandom(size)}
    csv = bytearray()
    i = 0
    while len(csv) < size:
        csv += b"%d,%d,%.3f,name %d,%s\n" % (i, i * 7919 % 10007, i / 7, i % 97,
                                             b"ok" if i % 3 else b"retry")
        i += 1
    kinds["csv"] = bytes(csv[:size])
    folder = tempfile.mkdtemp()
    s = Serve(ptybox, via)
    rows = []
    try:
        s.ask({"id": 0, "op": "exec", "code": "1"})
        for kind, data in kinds.items():
            path = os.path.join(folder, kind)
            with open(path, "wb") as f:
                f.write(data)
            fg, fp, pg, pp = [], [], [], []
            for _ in range(rounds):
                dt, n = floor_get(path)
                assert n == size, n
                fg.append(dt)
                fp.append(floor_put(data, path + ".in"))
                os.unlink(path + ".in")
                pp.append(s.put(kind, data))
                dt, got = s.get(kind, size)
                assert got == data, (len(got), size)
                pg.append(dt)
            mbs = lambda ts: size / statistics.median(ts) / 1e6
            rows.append((kind, "get", mbs(pg), mbs(fg)))
            rows.append((kind, "put", mbs(pp), mbs(fp)))
            s.ask({"id": 0, "op": "remove", "path": kind})
            os.unlink(path)
    finally:
        s.close()
        shutil.rmtree(folder, ignore_errors=True)
    print("%d MB, %d rounds, --via %s, medians; floor: a raw PTY (cat FILE / head -c N > FILE)\n"
          % (mb, rounds, via))
    print("| file | op | ptybox MB/s | floor MB/s | x floor |")
    print("|---|---|---|---|---|")
    for kind, op, p, f in rows:
        print("| %s | %s | %.1f | %.1f | %.2f |" % (kind, op, p, f, p / f))


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()
