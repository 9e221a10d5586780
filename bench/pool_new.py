#!/usr/bin/python3
# bench/pool_new.py PTYBOX [VIA]: `new` to ready at the socket with a warm pool (--pool 2),
# as a program speaking the protocol sees it. The pool refills between news (0.15 s apart).

import json, os, socket, subprocess, sys, tempfile, time
exe = sys.argv[1]
d = tempfile.mkdtemp(prefix="pn-"); os.chmod(d, 0o700)
env = dict(os.environ, XDG_RUNTIME_DIR=d)
sock = os.path.join(d, "ptybox", "default")
subprocess.run([exe, "server"], env=env, check=True)
s = socket.socket(socket.AF_UNIX); s.connect(sock); f = s.makefile("rb")
def call(o):
    s.sendall((json.dumps(o) + "\n").encode())
    while True:
        m = json.loads(f.readline())
        if m.get("id") == o["id"] and "event" not in m:
            return m
call({"id": 0, "op": "hello", "protocol": 1})
opts = {"via": sys.argv[2] if len(sys.argv) > 2 else "local", "pool": 2}
cold, warm = [], []
for i in range(30):
    t = time.perf_counter()
    r = call({"id": i + 1, "op": "new", "session": "p%d" % i, "options": opts})
    dt = (time.perf_counter() - t) * 1e3
    assert r.get("ok"), r
    (cold if i == 0 else warm).append(dt)
    # let the pool refill, as a user between news would (awaited: ls until ready)
    time.sleep(0.15)
warm.sort()
print("first new (pool being made): %.1f ms; warm p50 %.2f ms, p90 %.2f ms, max %.2f ms" % (
    cold[0], warm[len(warm) // 2], warm[int(len(warm) * 0.9)], warm[-1]))
call({"id": 999, "op": "kill-server"})
