"""The multiplexer's scale and speed (issue 14), as a user's program sees it.

Usage: /usr/bin/python3 bench/server.py [PTYBOX] [--rounds R] [--iters N] [--parts LIST]
                                        [--many N] [--churn N]
       LIST: rt,tput,cold,many,busy,churn (default all); about 4 minutes with --rounds 5

One Python process drives everything with the same kind of client (select + os.read into
its own buffer, json for ptybox, no threads): `serve --stdio`, a server's socket, and the
floor, a bare exec loop on a raw-mode PTY (length-prefixed frames, exec into one dict,
captured stdout written back in one write; the idea of ../shared/peers' limit peer). Each
figure sits beside a floor measured in the same run, in interleaved rounds; medians over
rounds. Every server it starts lives under its own XDG_RUNTIME_DIR (mode 0700) and is
killed at the end. Prints a markdown table.

Parts: rt: x = 1 round trip. tput: 20 MB of print through each, beside the floor's one
write of 20 MB (the ceiling); its lines repeat, so ptybox's stream frames cross the PTY
deflated (ptybox-protocol(7)) and can pass the ceiling, which output that does not
compress cannot. cold: `serve --stdio --pool 0` spawn to the first result,
and `new` to its reply at a socket (a server has no warm pool yet). many: 256 sandboxed
sessions in one server: time to create them, round trips while all exist, the server's
memory per idle session. busy: 16 client processes, each with its own session and
connection, looping x = 1, against one (and, as a diagnostic, the same with busy-poll 0). churn: 1,000 sessions created and killed, 50 at a
time: the server's fds, children, cgroups, mounts and memory before and after.
"""
import glob
import json
import os
import select
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import tty

PY = "/usr/bin/python3"
BIG_LINES = 20000
BIG_CODE = "for _i in range(%d): print('x' * 1000)" % BIG_LINES
BIG_LEN = 1001 * BIG_LINES  # 20,020,000 bytes

FLOOR_LOOP = r"""
import io, os, struct, sys
def rd(n):
    parts = []
    while n:
        b = os.read(0, min(n, 1 << 20))
        if not b:
            sys.exit(0)
        parts.append(b)
        n -= len(b)
    return b"".join(parts)
def wr(data):
    mv = memoryview(data)
    while mv:
        mv = mv[os.write(1, mv):]
g = {}
real = sys.stdout
while True:
    (n,) = struct.unpack(">I", rd(4))
    buf = io.StringIO()
    sys.stdout = buf
    try:
        exec(rd(n).decode(), g)
    except Exception as e:
        buf.write("error: %s\n" % e)
    finally:
        sys.stdout = real
    out = buf.getvalue().encode()
    wr(struct.pack(">I", len(out)) + out)
"""


def now():
    return time.perf_counter()


def pct(v, p):
    v = sorted(v)
    return v[max(0, min(len(v) - 1, int(round(p / 100.0 * len(v) + 0.5)) - 1))]


def med(v):
    return statistics.median(v)


# ---------------------------------------------------------------- clients

class Floor:
    """The raw-PTY exec loop."""

    def __init__(self):
        master, slave = os.openpty()
        tty.setraw(slave)
        self.p = subprocess.Popen([PY, "-c", FLOOR_LOOP], stdin=slave, stdout=slave,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
        os.close(slave)
        self.fd = master

    def _exact(self, n, deadline):
        parts = []
        while n:
            if not select.select([self.fd], [], [], max(0, deadline - time.monotonic()))[0]:
                raise TimeoutError("floor: no reply")
            b = os.read(self.fd, min(n, 1 << 20))
            if not b:
                raise EOFError("floor ended")
            parts.append(b)
            n -= len(b)
        return b"".join(parts)

    def run(self, code, timeout=60):
        data = code.encode()
        mv = memoryview(struct.pack(">I", len(data)) + data)
        while mv:
            mv = mv[os.write(self.fd, mv):]
        deadline = time.monotonic() + timeout
        (n,) = struct.unpack(">I", self._exact(4, deadline))
        return {"stdout": self._exact(n, deadline).decode()}

    def close(self):
        self.p.kill()
        self.p.wait()
        os.close(self.fd)


class Lines:
    """JSON lines on a pair of fds (the same fd for a socket)."""

    def __init__(self, rfd, wfd):
        self.rfd, self.wfd = rfd, wfd
        self.buf = bytearray()
        self.next_id = 0
        self.got = {}

    def send(self, obj):
        mv = memoryview((json.dumps(obj) + "\n").encode())
        while mv:
            mv = mv[os.write(self.wfd, mv):]

    def _line(self, deadline):
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[:i + 1]
                return line
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.rfd], [], [], left)[0]:
                raise TimeoutError("no reply before the deadline")
            b = os.read(self.rfd, 1 << 20)
            if not b:
                raise EOFError("ptybox closed the stream")
            self.buf += b

    def reply(self, rid, timeout=60):
        if rid in self.got:
            return self.got.pop(rid)
        deadline = time.monotonic() + timeout
        while True:
            m = json.loads(self._line(deadline))
            if "event" in m:
                continue
            if m.get("id") == rid:
                return m
            self.got[m.get("id")] = m

    def request(self, obj, timeout=60):
        self.next_id += 1
        obj = dict(obj, id=self.next_id)
        self.send(obj)
        return self.reply(self.next_id, timeout)

    def check(self, obj, timeout=60):
        m = self.request(obj, timeout)
        if not m.get("ok") and m.get("status") != "ok":
            raise RuntimeError("%s -> %s" % (obj.get("op"), json.dumps(m)[:300]))
        return m


class Stdio(Lines):
    def __init__(self, ptybox, *extra):
        self.p = subprocess.Popen([ptybox, "serve", "--stdio", "--via", "local",
                                   "--max-output", "64M", *extra],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, bufsize=0)
        super().__init__(self.p.stdout.fileno(), self.p.stdin.fileno())

    def run(self, code, timeout=60):
        return self.check({"op": "exec", "code": code}, timeout)

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


class Client(Lines):
    """One connection to a server's socket."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        super().__init__(self.sock.fileno(), self.sock.fileno())
        self.check({"op": "hello", "protocol": 1})

    def new(self, name, timeout=60):
        return self.check({"op": "new", "session": name,
                           "options": {"via": "local", "max-output": "64M"}}, timeout)

    def close(self):
        self.sock.close()


class Session:
    def __init__(self, client, name):
        self.c, self.name = client, name

    def run(self, code, timeout=60):
        return self.c.check({"op": "exec", "session": self.name, "code": code}, timeout)

    def close(self):
        self.c.check({"op": "kill", "session": self.name})


class Server:
    """A daemon of our own, on a socket in our own runtime folder."""

    def __init__(self, ptybox, runtime):
        self.ptybox, self.dir = ptybox, os.path.join(runtime, "ptybox")
        self.path = os.path.join(self.dir, "default")
        env = dict(os.environ, XDG_RUNTIME_DIR=runtime)
        subprocess.run([ptybox, "server"], env=env, check=True, timeout=30,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.pid = None
        deadline = time.monotonic() + 10
        while self.pid is None and time.monotonic() < deadline:
            try:
                with open(self.path + ".log") as f:
                    for line in f:
                        if "listening on" in line and "(pid " in line:
                            self.pid = int(line.rsplit("(pid ", 1)[1].split(")")[0])
            except FileNotFoundError:
                pass
            time.sleep(0.02)
        if self.pid is None:
            raise RuntimeError("no pid in " + self.path + ".log")

    def client(self):
        return Client(self.path)

    def stop(self):
        try:
            c = self.client()
            c.send({"id": 1, "op": "kill-server"})
            c.reply(1, timeout=30)
            c.close()
        except (OSError, EOFError, TimeoutError, RuntimeError):
            pass
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and os.path.exists("/proc/%d" % self.pid):
            time.sleep(0.05)
        if os.path.exists("/proc/%d" % self.pid):
            os.kill(self.pid, signal.SIGKILL)

    # what the server holds, as /proc shows it
    def status(self, key):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])

    def rollup(self, key):
        with open("/proc/%d/smaps_rollup" % self.pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])

    def mem(self):
        return {"rss": self.status("VmRSS"), "anon": self.rollup("Anonymous"),
                "dirty": self.rollup("Private_Dirty")}

    def fds(self):
        return len(os.listdir("/proc/%d/fd" % self.pid))

    def descendants(self):
        kids = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open("/proc/%s/stat" % d) as f:
                        st = f.read()
                    kids.setdefault(int(st[st.rindex(")") + 2:].split()[1]), []).append(int(d))
                except (OSError, ValueError):
                    pass
        out, todo = [], [self.pid]
        while todo:
            for k in kids.get(todo.pop(), []):
                out.append(k)
                todo.append(k)
        return out

    def cgroups(self):
        return len(glob.glob("/sys/fs/cgroup/*/ptybox/%d-*" % self.pid) +
                   glob.glob("/sys/fs/cgroup/ptybox/%d-*" % self.pid))

    def mounts(self):
        with open("/proc/%d/mountinfo" % self.pid) as f:
            return sum(1 for _ in f)


# ---------------------------------------------------------------- parts

def rt_loop(p, iters, warmup=50):
    for _ in range(warmup):
        p.run("x = 1")
    lat = []
    for _ in range(iters):
        t0 = now()
        p.run("x = 1")
        lat.append(now() - t0)
    return med(lat), pct(lat, 99)


def big(p):
    t0 = now()
    r = p.run(BIG_CODE, timeout=120)
    dt = now() - t0
    got = len(r["stdout"])
    if got != BIG_LEN:
        raise RuntimeError("20 MB: got %d chars, truncated=%s" % (got, r.get("truncated")))
    return BIG_LEN / 1e6 / dt


def part_rt_tput(ptybox, server, rounds, iters, parts, rows):
    floor, stdio = Floor(), Stdio(ptybox)
    c = server.client()
    c.new("rt")
    sock = Session(c, "rt")
    peers = (("floor", floor), ("stdio", stdio), ("socket", sock))
    rt = {k: [] for k, _ in peers}
    tp = {k: [] for k, _ in peers}
    try:
        for r in range(rounds):
            order = peers if r % 2 == 0 else peers[::-1]
            if "rt" in parts:
                for k, p in order:
                    rt[k].append(rt_loop(p, iters))
            if "tput" in parts:
                for k, p in order:
                    tp[k].append(big(p))
    finally:
        floor.close()
        stdio.close()
        sock.close()
        c.close()
    if "rt" in parts:
        f50 = [x[0] for x in rt["floor"]]
        rows.append(("x = 1 round trip, raw-PTY floor", "p50 %.0f us, p99 %.0f us" % (
            med(f50) * 1e6, med([x[1] for x in rt["floor"]]) * 1e6), "1.00x", "(floor)"))
        for k in ("stdio", "socket"):
            ratio = med([a[0] / b for a, b in zip(rt[k], f50)])
            rows.append(("x = 1 round trip, %s" % ("serve --stdio" if k == "stdio" else "socket"),
                         "p50 %.0f us, p99 %.0f us" % (med([x[0] for x in rt[k]]) * 1e6,
                                                       med([x[1] for x in rt[k]]) * 1e6),
                         "%.2fx floor (rounds %s)" % (ratio, " ".join(
                             "%.2f" % (a[0] / b) for a, b in zip(rt[k], f50))),
                         "p50 <= 1.25x: " + ("met" if ratio <= 1.25 else "MISSED")))
    if "tput" in parts:
        rows.append(("20 MB print, floor (one write)", "%.1f MB/s" % med(tp["floor"]), "1.00x",
                     "(ceiling)"))
        for k in ("stdio", "socket"):
            ratio = med([a / b for a, b in zip(tp[k], tp["floor"])])
            rows.append(("20 MB print, %s" % ("serve --stdio" if k == "stdio" else "socket"),
                         "%.1f MB/s" % med(tp[k]),
                         "%.2fx ceiling (rounds %s)" % (ratio, " ".join(
                             "%.2f" % (a / b) for a, b in zip(tp[k], tp["floor"]))),
                         ">= 0.9x: " + ("met" if ratio >= 0.9 else "MISSED")))


def part_cold(ptybox, server, rounds, rows):
    fl, st, sk, skx = [], [], [], []
    c = server.client()
    for r in range(rounds * 2):
        t0 = now()
        f = Floor()
        f.run("pass")
        fl.append(now() - t0)
        f.close()
        t0 = now()
        s = Stdio(ptybox, "--pool", "0")
        s.run("pass")
        st.append(now() - t0)
        s.close()
        t0 = now()
        c.new("cold%d" % r)
        sk.append(now() - t0)
        Session(c, "cold%d" % r).run("pass")
        skx.append(now() - t0)
        Session(c, "cold%d" % r).close()
        time.sleep(0.05)
    c.close()
    rows.append(("cold start, floor (spawn python on a PTY to first reply)",
                 "%.1f ms" % (med(fl) * 1e3), "1.00x", "(floor)"))
    rows.append(("cold start, serve --stdio --pool 0 (spawn to first result)",
                 "%.1f ms" % (med(st) * 1e3),
                 "%.2fx floor" % med([a / b for a, b in zip(st, fl)]), ""))
    rows.append(("`new` to ready at the socket (no pool: not built yet)",
                 "%.1f ms (to first result %.1f ms)" % (med(sk) * 1e3, med(skx) * 1e3),
                 "%.2fx floor" % med([a / b for a, b in zip(sk, fl)]),
                 "<= 2 ms needs --pool: not built"))


def settle(server, secs=1.0):
    time.sleep(secs)
    return server.mem()


def part_many(ptybox, runtime, n, rows):
    srv = Server(ptybox, runtime)
    try:
        c = srv.client()
        # one session first, so that what is made once per server (the loop, the sandbox's
        # plan, libvterm's tables) is in the baseline
        c.new("warm")
        Session(c, "warm").run("x = 1")
        before = settle(srv)
        t0 = now()
        ids = []
        for i in range(n):
            c.next_id += 1
            ids.append(c.next_id)
            c.send({"id": c.next_id, "op": "new", "session": "m%d" % i,
                    "options": {"via": "local"}})
        bad = [m for m in (c.reply(i, timeout=300) for i in ids) if not m.get("ok")]
        t_create = now() - t0
        if bad:
            raise RuntimeError("new: %s" % json.dumps(bad[0])[:300])
        lat = []
        for i in range(n):
            t1 = now()
            r = Session(c, "m%d" % i).run("y = %d * 2; print(y)" % i)
            lat.append(now() - t1)
            assert r["stdout"] == "%d\n" % (i * 2), r
        lat2 = []  # again, now that each has run once
        for i in range(n):
            t1 = now()
            Session(c, "m%d" % i).run("x = 1")
            lat2.append(now() - t1)
        # all at once: every session busy together
        t1 = now()
        ids = []
        for i in range(n):
            c.next_id += 1
            ids.append(c.next_id)
            c.send({"id": c.next_id, "op": "exec", "session": "m%d" % i, "code": "x = 1"})
        for i in ids:
            assert c.reply(i, timeout=300)["status"] == "ok"
        t_all = now() - t1
        held = census(srv)
        after = settle(srv, 2.0)
        c.close()
        per = {k: (after[k] - before[k]) / n for k in after}
        rows.append(("%d sandboxed sessions: create all (pipelined `new`s on one connection)" % n,
                     "%.2f s (%.1f ms each)" % (t_create, t_create * 1e3 / n), "", ""))
        rows.append(("%d sessions: one snippet each, in turn" % n,
                     "median %.2f ms, max %.2f ms" % (med(lat) * 1e3, max(lat) * 1e3), "", ""))
        rows.append(("%d sessions: x = 1 each, in turn, second pass" % n,
                     "median %.2f ms, max %.2f ms" % (med(lat2) * 1e3, max(lat2) * 1e3), "", ""))
        rows.append(("%d sessions: x = 1 in all at once" % n, "%.1f ms for all" % (t_all * 1e3),
                     "", ""))
        rows.append(("%d+1 sessions: the server's fds / descendants / ptybox cgroups" % n,
                     "%d / %d / %d" % (held["fds"], held["procs"], held["cgroups"]), "", ""))
        rows.append(("server memory, 1 session -> %d+1 idle" % n,
                     "RSS %d -> %d KiB, Anonymous %d -> %d, Private_Dirty %d -> %d" % (
                         before["rss"], after["rss"], before["anon"], after["anon"],
                         before["dirty"], after["dirty"]), "", ""))
        rows.append(("server memory per idle session",
                     "RSS %.0f KiB, Anonymous %.0f KiB, Private_Dirty %.0f KiB" % (
                         per["rss"], per["anon"], per["dirty"]), "",
                     "<= 128 KiB: " + ("met" if per["anon"] <= 128 else "MISSED")))
    finally:
        srv.stop()


def busy_child(path, name, start_at, secs, wfd):
    c = Client(path)
    s = Session(c, name)
    s.run("x = 1")
    while time.monotonic() < start_at:
        time.sleep(0.001)
    end = start_at + secs
    k = 0
    while time.monotonic() < end:
        s.run("x = 1")
        k += 1
    os.write(wfd, struct.pack(">I", k))
    c.close()


def busy(server, names, secs):
    r, w = os.pipe()
    start_at = time.monotonic() + 0.5
    pids = []
    for name in names:
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.close(r)
                busy_child(server.path, name, start_at, secs, w)
            except BaseException:
                code = 1
            os._exit(code)
        pids.append(pid)
    os.close(w)
    total = 0
    for _ in names:
        total += struct.unpack(">I", os.read(r, 4))[0]
    os.close(r)
    for pid in pids:
        os.waitpid(pid, 0)
    return total / secs


def part_busy(server, rounds, rows, n=16, secs=3.0):
    """Sessions with the default busy poll, and beside them (a diagnostic) sessions that
    never poll: on two shared cores, polling takes the CPU the others need."""
    c = server.client()
    kinds = (("", {}), (" (diagnostic: busy-poll 0)", {"busy-poll": 0}))
    names = {}
    for tag, opts in kinds:
        names[tag] = ["b%d%s" % (i, "z" if opts else "") for i in range(n)]
        for name in names[tag]:
            c.check({"op": "new", "session": name, "options": dict(opts, via="local")})
    one = {tag: [] for tag, _ in kinds}
    many = {tag: [] for tag, _ in kinds}
    try:
        for _ in range(rounds):
            for tag, _ in kinds:
                one[tag].append(busy(server, names[tag][:1], secs))
                many[tag].append(busy(server, names[tag], secs))
    finally:
        for tag, _ in kinds:
            for name in names[tag]:
                Session(c, name).close()
        c.close()
    for tag, _ in kinds:
        ratio = med([a / b for a, b in zip(many[tag], one[tag])])
        rows.append(("x = 1 throughput, 1 session, 1 connection" + tag, "%.0f /s" % med(one[tag]),
                     "1.00x", ""))
        rows.append(("x = 1 throughput, %d sessions, %d connections%s" % (n, n, tag),
                     "%.0f /s" % med(many[tag]), "%.2fx one (rounds %s)" % (ratio, " ".join(
                         "%.2f" % (a / b) for a, b in zip(many[tag], one[tag]))),
                     (">= 1.5x: " + ("met" if ratio >= 1.5 else "MISSED")) if not tag else ""))


def census(srv):
    return {"fds": srv.fds(), "procs": len(srv.descendants()), "cgroups": srv.cgroups(),
            "mounts": srv.mounts(), **srv.mem()}


def churn_batch(c, base, batch):
    ids = []
    for i in range(batch):
        c.next_id += 1
        ids.append(c.next_id)
        c.send({"id": c.next_id, "op": "new", "session": "c%d" % (base + i),
                "options": {"via": "local"}})
    for i in ids:
        m = c.reply(i, timeout=300)
        if not m.get("ok"):
            raise RuntimeError("new: " + json.dumps(m)[:300])
    ids = []
    for i in range(batch):
        c.next_id += 1
        ids.append(c.next_id)
        c.send({"id": c.next_id, "op": "exec", "session": "c%d" % (base + i), "code": "x = 1"})
    for i in ids:
        assert c.reply(i, timeout=300)["status"] == "ok"
    ids = []
    for i in range(batch):
        c.next_id += 1
        ids.append(c.next_id)
        c.send({"id": c.next_id, "op": "kill", "session": "c%d" % (base + i)})
    for i in ids:
        m = c.reply(i, timeout=300)
        if not m.get("ok"):
            raise RuntimeError("kill: " + json.dumps(m)[:300])


def quiet(srv, deadline_s=20):
    """Waits until the server has no children left (sandboxes die after kill's reply)."""
    deadline = time.monotonic() + deadline_s
    while srv.descendants() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)


def part_churn(ptybox, runtime, total, batch, rows):
    srv = Server(ptybox, runtime)
    try:
        c = srv.client()
        churn_batch(c, 0, batch)  # the warm-up batch: made-once state in the baseline
        quiet(srv)
        before = census(srv)
        t0 = now()
        for b in range(total // batch):
            churn_batch(c, batch * (b + 1), batch)
        dt = now() - t0
        quiet(srv)
        after = census(srv)
        c.close()
        time.sleep(0.3)
        after_close = census(srv)
        leak = [k for k in ("fds", "procs", "cgroups", "mounts") if after[k] != before[k]]
        rows.append(("%d sessions created, used, killed (%d at a time)" % (total, batch),
                     "%.1f s (%.1f ms per session)" % (dt, dt * 1e3 / total), "", ""))
        rows.append(("after churn: fds / children / cgroups / mounts",
                     "%d/%d/%d/%d -> %d/%d/%d/%d" % (
                         before["fds"], before["procs"], before["cgroups"], before["mounts"],
                         after["fds"], after["procs"], after["cgroups"], after["mounts"]), "",
                     "no leak: " + ("met" if not leak else "MISSED (" + ", ".join(leak) + ")")))
        grow = after["anon"] - before["anon"]
        rows.append(("after churn: server memory",
                     "RSS %d -> %d KiB, Anonymous %d -> %d KiB (%+d KiB, %.2f KiB/session); "
                     "client gone: RSS %d" % (before["rss"], after["rss"], before["anon"],
                                               after["anon"], grow, grow / total,
                                               after_close["rss"]), "",
                     "no growth: " + ("met" if grow <= 256 else "MISSED (see note)")))
    finally:
        srv.stop()


# ---------------------------------------------------------------- driver

def main():
    args = sys.argv[1:]
    ptybox, rounds, iters = "build-rel/ptybox", 5, 500
    parts = set("rt,tput,cold,many,busy,churn".split(","))
    many_n, churn_n = 256, 1000
    while args:
        a = args.pop(0)
        if a == "--rounds":
            rounds = int(args.pop(0))
        elif a == "--iters":
            iters = int(args.pop(0))
        elif a == "--parts":
            parts = set(args.pop(0).split(","))
        elif a == "--many":
            many_n = int(args.pop(0))
        elif a == "--churn":
            churn_n = int(args.pop(0))
        else:
            ptybox = a
    ptybox = os.path.abspath(ptybox)
    runtime = tempfile.mkdtemp(prefix="ptybox-bench-")
    os.chmod(runtime, 0o700)
    os.environ["XDG_RUNTIME_DIR"] = runtime
    rows = []
    servers = []
    try:
        if parts & {"rt", "tput", "cold", "busy"}:
            main_rt = os.path.join(runtime, "main")
            os.mkdir(main_rt, 0o700)
            srv = Server(ptybox, main_rt)
            servers.append(srv)
            if parts & {"rt", "tput"}:
                part_rt_tput(ptybox, srv, rounds, iters, parts, rows)
            if "cold" in parts:
                part_cold(ptybox, srv, rounds, rows)
            if "busy" in parts:
                part_busy(srv, rounds, rows)
        if "many" in parts:
            d = os.path.join(runtime, "many")
            os.mkdir(d, 0o700)
            part_many(ptybox, d, many_n, rows)
        if "churn" in parts:
            d = os.path.join(runtime, "churn")
            os.mkdir(d, 0o700)
            part_churn(ptybox, d, churn_n, 50, rows)
    finally:
        for s in servers:
            s.stop()
        shutil.rmtree(runtime, ignore_errors=True)
    print("ptybox %s; %s; %d rounds x %d iterations; %s" % (
        ptybox, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), rounds, iters,
        os.uname().release))
    print()
    print("| what | figure | against the floor | target |")
    print("|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
