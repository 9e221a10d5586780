"""ptybox cp and ptybox run --put/--get (issue 16), as a user runs them.

Two halves: cp against a stand-in server on a socket of our own (FakeServer: it speaks the
server protocol's file ops and hands cp what a hostile session could, such as names with
'..', or a --max-get below cp's chunk), and both commands end to end against a real server
and sandbox."""
import base64
import hashlib
import json
import os
import select
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
import time
import unittest

from ptybox_test import PTYBOX, VIA, run, run_tty
from test_server import Server

MiB = 1 << 20


class FakeServer:
    """A socket that answers hello, then each request with handler(req) (a reply without
    its id). Requests are kept in self.requests; self.pipelined counts requests that came
    while an earlier one was still unanswered (cp keeps two in flight)."""

    def __init__(self, handler, delay=0.0):
        self.dir = tempfile.mkdtemp(prefix="ptybox-fake-")
        os.chmod(self.dir, 0o700)
        self.sock = os.path.join(self.dir, "s")
        self.handler, self.delay = handler, delay
        self.requests, self.pipelined = [], 0
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(self.sock)
        self.srv.listen(4)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        try:
            conn, _ = self.srv.accept()
        except OSError:
            return
        buf, pending = b"", []
        conn.settimeout(30)
        with conn:
            while True:
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    pending.append(json.loads(line))
                if pending and self.delay:
                    # a while for the next request to come before this one is answered
                    if select.select([conn], [], [], self.delay)[0]:
                        chunk = conn.recv(1 << 20)
                        if not chunk:
                            return
                        buf += chunk
                        if b"\n" in buf:
                            self.pipelined += 1
                        continue
                if pending:
                    req = pending.pop(0)
                    self.requests.append(req)
                    reply = ({"ok": True, "protocol": 1} if req["op"] == "hello" else
                             self.handler(req))
                    reply = dict(reply, id=req["id"])
                    conn.sendall(json.dumps(reply).encode() + b"\n")
                    continue
                try:
                    chunk = conn.recv(1 << 20)
                except OSError:
                    return
                if not chunk:
                    return
                buf += chunk

    def close(self):
        self.srv.close()
        self.thread.join(10)
        shutil.rmtree(self.dir, ignore_errors=True)


def fake_files(files, modes=None):
    """A handler over a dict of the session's files: {"/tmp/t/a": b"bytes"} (folders are
    implied by the names; listing names as given in "entries" if there); a get says the
    file's mode from modes, else 0o640."""

    def handler(req):
        path = req["path"]
        if req["op"] == "get":
            if path not in files:
                return {"error": "get: %s: No such file or directory" % path, "code": "file",
                        "errno": "ENOENT"}
            data = files[path]
            off, length = req.get("offset", 0), req.get("length", len(data))
            piece = data[off:off + length]
            return {"ok": True, "path": path, "data": base64.b64encode(piece).decode(),
                    "size": len(data), "offset": off, "length": len(piece),
                    "eof": off + len(piece) >= len(data),
                    "mode": (modes or {}).get(path, 0o640), "mtime": 0}
        return {"error": "%s: not here" % req["op"], "code": "usage"}

    return handler


class CpAgainstAStandIn(unittest.TestCase):
    """What cp does with what a server sends, whatever the session made of it."""

    def cp(self, fake, *args, tty=False):
        if tty:
            return run_tty("cp", "-S", fake.sock, *args, timeout=60)
        return subprocess.run([PTYBOX, "cp", "-S", fake.sock, *args], capture_output=True,
                              timeout=60)

    def setUp(self):
        self.here = tempfile.mkdtemp(prefix="ptybox-cp-")
        self.addCleanup(shutil.rmtree, self.here, True)

    def test_names_from_the_session_stay_inside_dst(self):
        entries = [
            {"name": "../evil", "type": "file", "size": 3, "mode": 0o644, "mtime": 0},
            {"name": "/tmp/abs-evil", "type": "file", "size": 3, "mode": 0o644, "mtime": 0},
            {"name": "good.txt", "type": "file", "size": 3, "mode": 0o640, "mtime": 0},
            {"name": "ln", "type": "link", "size": 9, "mode": 0o777, "mtime": 0},
            {"name": "pipe", "type": "fifo", "size": 0, "mode": 0o644, "mtime": 0},
            {"name": "sub", "type": "dir", "size": 0, "mode": 0o750, "mtime": 0},
            {"name": "sub/../../evil2", "type": "file", "size": 3, "mode": 0o644, "mtime": 0},
            {"name": "sub/x", "type": "file", "size": 0, "mode": 0o600, "mtime": 0},
        ]
        files = {"/tmp/t/good.txt": b"ok\n", "/tmp/t/sub/x": b"",
                 "/tmp/t/../evil": b"no\n", "/tmp/abs-evil": b"no\n"}
        base = fake_files(files, {"/tmp/t/sub/x": 0o600})

        def handler(req):
            if req["op"] == "files":
                self.assertTrue(req.get("recursive"))
                return {"ok": True, "path": "/tmp/t", "type": "dir", "entries": entries,
                        "cut": False}
            return base(req)

        fake = FakeServer(handler)
        self.addCleanup(fake.close)
        dst = os.path.join(self.here, "deep", "out")
        os.makedirs(os.path.dirname(dst))
        p = self.cp(fake, "s:/tmp/t", dst)
        err = p.stderr.decode()
        self.assertEqual(p.returncode, 1, err)
        self.assertIn("refused: a '..' component", err)
        self.assertIn("refused: an absolute path", err)
        self.assertIn("s:/tmp/t/ln: a symbolic link, skipped", err)
        self.assertIn("s:/tmp/t/pipe: fifo, skipped", err)
        self.assertEqual(sorted(os.listdir(os.path.join(self.here, "deep"))), ["out"])
        self.assertFalse(os.path.exists("/tmp/abs-evil"))
        self.assertEqual(sorted(os.listdir(dst)), ["good.txt", "sub"])
        with open(os.path.join(dst, "good.txt"), "rb") as f:
            self.assertEqual(f.read(), b"ok\n")
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(dst, "good.txt")).st_mode), 0o640)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(dst, "sub")).st_mode), 0o750)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(dst, "sub", "x")).st_mode), 0o600)
        gets = [r["path"] for r in fake.requests if r["op"] == "get"]
        self.assertEqual(sorted(gets), ["/tmp/t/good.txt", "/tmp/t/sub/x"])

    def big_file_handler(self, data, max_get=None):
        base = fake_files({"/tmp/big": data}, {"/tmp/big": 0o600})

        def handler(req):
            if req["op"] == "files":
                return {"ok": True, "path": "/tmp/big", "type": "file",
                        "entries": [{"name": "big", "type": "file", "size": len(data),
                                     "mode": 0o600, "mtime": 0}], "cut": False}
            if max_get and req.get("length", len(data)) > max_get:
                return {"error": "get: /tmp/big is %d bytes, past --max-get %d: ask for a "
                                 "range (offset, length)" % (len(data), max_get),
                        "code": "file", "errno": "EFBIG"}
            return base(req)

        return handler

    def test_a_big_file_comes_in_ranges_two_at_a_time(self):
        data = os.urandom(20 * MiB + 5)
        fake = FakeServer(self.big_file_handler(data), delay=0.5)
        self.addCleanup(fake.close)
        out = os.path.join(self.here, "big")
        p = self.cp(fake, "s:/tmp/big", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, b"")  # no terminal: no progress bar
        with open(out, "rb") as f:
            self.assertEqual(hashlib.sha256(f.read()).hexdigest(),
                             hashlib.sha256(data).hexdigest())
        gets = [r for r in fake.requests if r["op"] == "get"]
        self.assertEqual([g.get("offset", 0) for g in gets], [0, 8 * MiB, 16 * MiB])
        self.assertTrue(all(g["length"] == 8 * MiB for g in gets))
        self.assertGreaterEqual(fake.pipelined, 1)
        self.assertEqual(stat.S_IMODE(os.stat(out).st_mode), 0o600)

    def test_a_max_get_below_the_chunk_is_worked_around(self):
        data = os.urandom(3 * MiB + 1)
        fake = FakeServer(self.big_file_handler(data, max_get=MiB))
        self.addCleanup(fake.close)
        p = self.cp(fake, "s:/tmp/big", "-")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, data)

    def test_the_progress_bar_on_a_terminal(self):
        data = os.urandom(12 * MiB)
        fake = FakeServer(self.big_file_handler(data), delay=0.3)
        self.addCleanup(fake.close)
        out = os.path.join(self.here, "big")
        status, got, _ = self.cp(fake, "s:/tmp/big", out, tty=True)
        self.assertEqual(status, 0, got)
        self.assertIn(b"\r", got)
        self.assertIn(b"MB/s", got)
        self.assertIn(b"/ 12.6 MB", got)
        self.assertTrue(got.endswith(b"\r\x1b[K"), got[-80:])  # cleared at the end
        self.assertLessEqual(got.count(b"\r"), 40)

    def test_a_big_upload_goes_in_chunks_with_more_and_offset(self):
        data = os.urandom(17 * MiB)
        src = os.path.join(self.here, "up.bin")
        with open(src, "wb") as f:
            f.write(data)
        os.chmod(src, 0o751)
        got = {}

        def handler(req):
            if req["op"] == "files":
                return {"error": "files: %s: No such file or directory" % req["path"],
                        "code": "file", "errno": "ENOENT"}
            got.setdefault("parts", []).append(
                (req.get("offset", 0), base64.b64decode(req["data"]), req.get("more", False),
                 req.get("mode")))
            got.setdefault("uploads", []).append(req.get("upload"))
            reply = {"ok": True, "path": "/tmp/" + req["path"], "size": 0}
            return dict(reply, more=True, upload="beef") if req.get("more") else reply

        fake = FakeServer(handler, delay=0.3)
        self.addCleanup(fake.close)
        p = self.cp(fake, src, "s:new name.bin")
        self.assertEqual(p.returncode, 0, p.stderr)
        puts = [r for r in fake.requests if r["op"] == "put"]
        self.assertEqual({r["path"] for r in puts}, {"new name.bin"})
        parts = got["parts"]
        self.assertEqual([o for o, _, _, _ in parts], [0, 8 * MiB, 16 * MiB])
        self.assertEqual([m for _, _, m, _ in parts], [True, True, False])
        self.assertEqual({mode for *_, mode in parts}, {0o751})
        # (the first chunk's reply names the upload; the others name it back)
        self.assertEqual(got["uploads"], [None, "beef", "beef"])
        self.assertEqual(b"".join(d for _, d, _, _ in parts), data)
        self.assertGreaterEqual(fake.pipelined, 1)

    def test_a_far_side_error_names_the_path(self):
        fake = FakeServer(fake_files({}))
        self.addCleanup(fake.close)

        def handler(req):
            return {"error": "files: /tmp/nope: No such file or directory", "code": "file",
                    "errno": "ENOENT"}

        fake.handler = handler
        p = self.cp(fake, "s:/tmp/nope", self.here)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr.decode(),
                         "ptybox: cp: s:/tmp/nope: No such file or directory\n")


class CpUsage(unittest.TestCase):
    def test_usage_errors(self):
        for args, said in [
            (["a", "b"], "one of SRC and DST must be NAME:PATH"),
            (["s:a", "t:b"], "one of SRC and DST must be NAME:PATH"),
            (["-", "-"], "one of SRC and DST must be NAME:PATH"),
            (["s:a"], "expected SRC and DST"),
            (["s:a", "b", "c"], "unexpected argument 'c'"),
            (["a\tb:x", "b"], "./a\tb:x"),
            (["--bogus", "s:a", "b"], "--bogus"),
        ]:
            p = run("cp", *args)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn(said, p.stderr, args)

    def test_put_and_get_are_run_only(self):
        for opt in ("--put", "--get"):
            p = run("new", "x", opt, "f")
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(opt, p.stderr)

    def test_a_host_path_that_is_not_there(self):
        srv = Server()
        self.addCleanup(srv.close)
        self.assertEqual(srv("new", "s").returncode, 0)
        p = srv("cp", "/nonexistent/x", "s:/tmp/x")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, "ptybox: cp: /nonexistent/x: No such file or directory\n")

    def test_no_server(self):
        d = tempfile.mkdtemp(prefix="ptybox-none-")
        self.addCleanup(shutil.rmtree, d, True)
        p = run("cp", "-S", os.path.join(d, "s"), "s:/tmp/x", d)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no server running", p.stderr)
        self.assertEqual(len(p.stderr.splitlines()), 1)


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class CpEndToEnd(unittest.TestCase):
    """cp against a real server and sandbox."""

    @classmethod
    def setUpClass(cls):
        cls.srv = Server()
        p = cls.srv("new", "s")
        if p.returncode != 0:
            cls.srv.close()
            raise unittest.SkipTest("no session: " + p.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.srv.close()

    def setUp(self):
        self.here = tempfile.mkdtemp(prefix="ptybox-cp-")
        self.addCleanup(shutil.rmtree, self.here, True)

    def py(self, code):
        p = self.srv("exec", "s", "-c", code)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def cp(self, *args, input=None):
        return subprocess.run([PTYBOX, "cp", *args], capture_output=True, env=self.srv.env,
                              input=input, timeout=120)

    def test_an_unfinished_upload_is_dropped_when_its_client_goes(self):
        p = subprocess.Popen([PTYBOX, "dial-stdio"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env=self.srv.env)
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        req = {"id": 1, "op": "put", "session": "s", "path": "/tmp/half", "more": True,
               "data": base64.b64encode(os.urandom(MiB)).decode()}
        p.stdin.write(json.dumps(req).encode() + b"\n")
        p.stdin.flush()
        self.assertTrue(select.select([p.stdout], [], [], 30)[0], "no reply")
        reply = json.loads(p.stdout.readline())
        self.assertRegex(reply.get("upload", ""), "^[0-9a-f]+$", reply)
        look = "import os; print([n for n in os.listdir('/tmp') if n.startswith('.half.')])"
        self.assertNotEqual(self.py(look).strip(), "[]")
        p.kill()
        p.wait()
        deadline = time.monotonic() + 20
        while self.py(look).strip() != "[]":
            self.assertLess(time.monotonic(), deadline, "the temporary file stayed")
            time.sleep(0.1)

    def test_a_link_comes_out_with_its_files_mode(self):
        self.py("import os\nopen('/tmp/real', 'w').write('hello\\n'); "
                "os.chmod('/tmp/real', 0o640)\n"
                "os.path.lexists('/tmp/lnk') or os.symlink('/tmp/real', '/tmp/lnk')")
        p = self.cp("s:/tmp/lnk", os.path.join(self.here, "out"))
        self.assertEqual((p.returncode, p.stderr), (0, b""))
        st = os.stat(os.path.join(self.here, "out"))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o640)
        with open(os.path.join(self.here, "out")) as f:
            self.assertEqual(f.read(), "hello\n")

    def test_a_name_that_is_not_utf8_is_skipped_and_the_rest_copied(self):
        self.py("import os\nos.makedirs('/tmp/u8', exist_ok=True)\n"
                "open(b'/tmp/u8/a\\xff', 'w').write('x')\n"
                "open('/tmp/u8/b', 'w').write('y')\nopen('/tmp/u8/c', 'w').write('z')")
        out = os.path.join(self.here, "out")
        p = self.cp("s:/tmp/u8", out)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stderr.decode(), "ptybox: cp: s:/tmp/u8/a\ufffd: the name is not "
                         "UTF-8 (U+FFFD stands for its bytes), skipped\n")
        self.assertEqual(sorted(os.listdir(out)), ["b", "c"])

    def test_a_file_in_and_out(self):
        src = os.path.join(self.here, "data.csv")
        with open(src, "w") as f:
            f.write("a,b\n1,2\n")
        os.chmod(src, 0o640)
        p = self.cp(src, "s:/tmp/")
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, b"", b""))
        self.assertIn("a,b", self.py("print(open('/tmp/data.csv').read())"))
        self.assertIn("0o640", self.py("import os; print(oct(os.stat('/tmp/data.csv').st_mode & 0o777))"))
        # to a new name, relative to the session's working folder
        p = self.cp(src, "s:renamed.csv")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("True", self.py("import os; print(os.path.exists('renamed.csv'))"))
        # out: into an existing folder, and to a new name
        p = self.cp("s:/tmp/data.csv", self.here + "/sub/") 
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(self.here, "sub", "data.csv")) as f:
            self.assertEqual(f.read(), "a,b\n1,2\n")
        p = self.cp("s:renamed.csv", os.path.join(self.here, "back.csv"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.here, "back.csv")).st_mode),
                         0o640)

    def test_a_folder_tree_both_ways(self):
        tree = os.path.join(self.here, "tree")
        os.makedirs(os.path.join(tree, "sub", "deeper"))
        os.makedirs(os.path.join(tree, "empty"))
        with open(os.path.join(tree, "top.txt"), "w") as f:
            f.write("top\n")
        open(os.path.join(tree, "sub", "zero"), "w").close()
        with open(os.path.join(tree, "sub", "deeper", "run.sh"), "w") as f:
            f.write("#!/bin/sh\necho hi\n")
        os.chmod(os.path.join(tree, "sub", "deeper", "run.sh"), 0o755)
        with open(os.path.join(tree, "a name with spaces"), "w") as f:
            f.write("spaced\n")
        os.symlink("/etc/passwd", os.path.join(tree, "link"))
        p = self.cp(tree, "s:/tmp/up")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"link: a symbolic link, skipped", p.stderr)
        out = self.py("import os\nfor d, ds, fs in sorted(os.walk('/tmp/up')):\n"
                      "    for n in sorted(ds + fs): p = os.path.join(d, n); "
                      "print(p, oct(os.lstat(p).st_mode & 0o777), os.path.islink(p))")
        self.assertIn("/tmp/up/sub/deeper/run.sh 0o755 False", out)
        self.assertIn("/tmp/up/empty", out)
        self.assertIn("/tmp/up/a name with spaces", out)
        self.assertNotIn("/tmp/up/link", out)
        self.assertNotIn(".ptybox-keep", out)
        # and back out, into an existing folder
        back = os.path.join(self.here, "back")
        os.mkdir(back)
        p = self.cp("s:/tmp/up", back)
        self.assertEqual(p.returncode, 0, p.stderr)
        got = os.path.join(back, "up")
        self.assertEqual(sorted(os.listdir(got)), ["a name with spaces", "empty", "sub", "top.txt"])
        self.assertEqual(os.path.getsize(os.path.join(got, "sub", "zero")), 0)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(got, "sub", "deeper", "run.sh")).st_mode),
                         0o755)
        with open(os.path.join(got, "top.txt")) as f:
            self.assertEqual(f.read(), "top\n")

    def test_links_and_odd_names_made_by_the_code(self):
        self.py("import os\nos.makedirs('/tmp/odd', exist_ok=True)\n"
                "open('/tmp/odd/a\\nb', 'w').write('nl')\n"
                "os.symlink('/etc/passwd', '/tmp/odd/pw')\nos.mkfifo('/tmp/odd/fifo')")
        p = self.cp("s:/tmp/odd", os.path.join(self.here, "odd"))
        self.assertEqual(p.returncode, 0, p.stderr)
        err = p.stderr.decode()
        self.assertIn("s:/tmp/odd/pw: a symbolic link, skipped", err)
        self.assertIn("s:/tmp/odd/fifo: fifo, skipped", err)
        self.assertEqual(os.listdir(os.path.join(self.here, "odd")), ["a\nb"])

    def test_stdin_and_stdout(self):
        data = bytes(range(256)) * 1000
        p = self.cp("-", "s:/tmp/from-stdin", input=data)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.cp("s:/tmp/from-stdin", "-")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, data)

    def test_twenty_megabytes_both_ways(self):
        src = os.path.join(self.here, "big.bin")
        with open(src, "wb") as f:
            f.write(os.urandom(20 * MiB))
        t = time.monotonic()
        p = self.cp(src, "s:/tmp/big.bin")
        self.assertEqual(p.returncode, 0, p.stderr)
        up = time.monotonic() - t
        digest = self.py("import hashlib; print(hashlib.sha256(open('/tmp/big.bin', 'rb')"
                         ".read()).hexdigest())").strip()
        self.assertEqual(digest, sha(src))
        t = time.monotonic()
        p = self.cp("s:/tmp/big.bin", os.path.join(self.here, "back.bin"))
        self.assertEqual(p.returncode, 0, p.stderr)
        down = time.monotonic() - t
        self.assertEqual(sha(os.path.join(self.here, "back.bin")), sha(src))
        print("\n20 MiB: cp in %.1f MB/s, out %.1f MB/s" % (20 * MiB / 1e6 / up,
                                                           20 * MiB / 1e6 / down))

    def test_errors_say_the_path(self):
        p = self.cp("s:/tmp/no-such-file", self.here)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr.decode(),
                         "ptybox: cp: s:/tmp/no-such-file: No such file or directory\n")
        p = self.cp("nosuch:/tmp/x", self.here)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        self.assertIn(b"nosuch", p.stderr)
        p = self.cp("s:/tmp", "-")
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"a folder cannot go to standard output", p.stderr)


class CpNodeSession(unittest.TestCase):
    """cp to and from a node session: its kernel serves the file ops (kernel_node_files.js)."""

    @classmethod
    def setUpClass(cls):
        cls.srv = Server()
        p = cls.srv("new", "n", "--lang", "node")
        if p.returncode != 0:
            cls.srv.close()
            raise unittest.SkipTest("no node session: " + p.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.srv.close()

    def setUp(self):
        self.here = tempfile.mkdtemp(prefix="ptybox-cp-node-")
        self.addCleanup(shutil.rmtree, self.here, True)

    def js(self, code):
        p = self.srv("exec", "n", "-c", code)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def cp(self, *args, input=None):
        return subprocess.run([PTYBOX, "cp", *args], capture_output=True, env=self.srv.env,
                              input=input, timeout=120)

    def test_a_file_in_and_out_with_its_mode(self):
        src = os.path.join(self.here, "data.csv")
        with open(src, "w") as f:
            f.write("a,b\n1,2\n")
        os.chmod(src, 0o640)
        p = self.cp(src, "n:rel/")
        self.assertEqual((p.returncode, p.stderr), (0, b""))
        out = self.js("const fs = require('fs'); const st = fs.statSync('rel/data.csv');"
                      "console.log(fs.readFileSync('rel/data.csv', 'utf8') + (st.mode & 0o777).toString(8))")
        self.assertEqual(out, "a,b\n1,2\n640\n")
        p = self.cp("n:rel/data.csv", os.path.join(self.here, "back.csv"))
        self.assertEqual((p.returncode, p.stderr), (0, b""))
        with open(os.path.join(self.here, "back.csv")) as f:
            self.assertEqual(f.read(), "a,b\n1,2\n")
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.here, "back.csv")).st_mode), 0o640)
        p = self.cp("n:/tmp/no-such-file", self.here)
        self.assertEqual((p.returncode, p.stderr.decode()),
                         (1, "ptybox: cp: n:/tmp/no-such-file: No such file or directory\n"))

    def test_a_folder_tree_both_ways_and_a_name_that_is_not_utf8(self):
        tree = os.path.join(self.here, "tree")
        os.makedirs(os.path.join(tree, "sub", "empty"))
        with open(os.path.join(tree, "sub", "run.sh"), "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(os.path.join(tree, "sub", "run.sh"), 0o755)
        data = os.urandom(3 * MiB + 5)
        with open(os.path.join(tree, "big.bin"), "wb") as f:
            f.write(data)
        p = self.cp(tree, "n:/tmp/ntree")
        self.assertEqual((p.returncode, p.stderr), (0, b""))
        self.js("require('fs').writeFileSync(Buffer.from('/tmp/ntree/a\\xff', 'latin1'), 'x')")
        out = os.path.join(self.here, "out")
        p = self.cp("n:/tmp/ntree", out)
        self.assertEqual((p.returncode, p.stderr.decode()), (1, "ptybox: cp: n:/tmp/ntree/a\ufffd: "
                         "the name is not UTF-8 (U+FFFD stands for its bytes), skipped\n"))
        self.assertEqual(sorted(os.listdir(out)), ["big.bin", "sub"])
        self.assertEqual(sorted(os.listdir(os.path.join(out, "sub"))), ["empty", "run.sh"])
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(out, "sub", "run.sh")).st_mode), 0o755)
        self.assertEqual(sha(os.path.join(out, "big.bin")), hashlib.sha256(data).hexdigest())

    def test_stdin_and_stdout(self):
        data = bytes(range(256)) * 1000
        p = self.cp("-", "n:/tmp/from-stdin", input=data)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.cp("n:/tmp/from-stdin", "-")
        self.assertEqual((p.returncode, p.stdout == data), (0, True), p.stderr)


@unittest.skipUnless(os.path.exists("/usr/sbin/sshd") and shutil.which("ssh"), "no sshd")
class CpOverSsh(unittest.TestCase):
    """-H ssh://: cp against the server at the far end (here: this machine, through a
    loopback sshd, with a server of the test's own name)."""

    def test_in_and_out_through_ssh(self):
        from test_ssh import LoopbackSshd
        sshd = LoopbackSshd()
        self.addCleanup(sshd.close)
        label = "test-cp-%d" % os.getpid()
        env = dict(sshd.env, PTYBOX_REMOTE=os.path.abspath(PTYBOX))
        far = ["-H", sshd.via, "-L", label]

        def ptybox(*args, input=None):
            return subprocess.run([PTYBOX, *args], capture_output=True, env=env, input=input,
                                  timeout=120)

        self.addCleanup(ptybox, *far, "kill-server")
        p = ptybox(*far, "new", "far", "--via", VIA)
        self.assertEqual(p.returncode, 0, p.stderr)
        data = os.urandom(9 * MiB + 7)
        p = ptybox(*far, "cp", "-", "far:/tmp/over-ssh.bin", input=data)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = ptybox(*far, "cp", "far:/tmp/over-ssh.bin", "-")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(hashlib.sha256(p.stdout).hexdigest(), hashlib.sha256(data).hexdigest())


class RunPutGet(unittest.TestCase):
    def setUp(self):
        self.here = tempfile.mkdtemp(prefix="ptybox-run-")
        self.addCleanup(shutil.rmtree, self.here, True)

    def test_put_then_get_into_the_output_dir(self):
        src = os.path.join(self.here, "data.csv")
        with open(src, "w") as f:
            f.write("1,2\n3,4\n")
        out = os.path.join(self.here, "results", "new")
        p = run("run", "--put", src, "--put", src + ":in/copy.csv", "--get", "sum.txt",
                "--get", "/tmp/in/copy.csv", "--output-dir", out, "-c",
                "s = sum(int(x) for l in open('data.csv') for x in l.split(','))\n"
                "open('sum.txt', 'w').write(str(s))\nprint(s)")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "10\n")
        with open(os.path.join(out, "sum.txt")) as f:
            self.assertEqual(f.read(), "10")
        with open(os.path.join(out, "copy.csv")) as f:
            self.assertEqual(f.read(), "1,2\n3,4\n")

    def test_a_get_reply_for_another_range_is_refused(self):
        # The session's code answers the get itself, claiming a 1 TiB offset.
        p = run("run", "--output-dir", self.here, "--get", "/tmp/x", "-c",
                "import gc\n"
                "open('/tmp/x', 'w').write('real\\n')\n"
                "k = [o for o in gc.get_objects() if hasattr(type(o), '_file_get')][0]\n"
                "def fake(seq, path, req):\n"
                "    k.chan.write(b'D%d 5\\nforge' % seq)\n"
                "    return {'ok': True, 'path': path, 'size': 5, 'offset': 1 << 40,\n"
                "            'length': 5, 'eof': True, 'mode': 0o644, 'mtime': 0}\n"
                "k._file_get = fake\n")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("run: --get /tmp/x: the session's reply is for another range than "
                      "asked (offset 0, ", p.stderr)
        self.assertEqual(os.listdir(self.here), [])

    def test_big_files_in_chunks_and_past_max_get(self):
        src = os.path.join(self.here, "big.bin")
        with open(src, "wb") as f:
            f.write(os.urandom(20 * MiB + 3))
        out = os.path.join(self.here, "out")
        p = run("run", "--max-get", "1M", "--put", src + ":in/b.bin", "--get", "in/b.bin",
                "--output-dir", out, "-c",
                "import hashlib; print(hashlib.sha256(open('in/b.bin', 'rb').read()).hexdigest())",
                timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), sha(src))
        self.assertEqual(sha(os.path.join(out, "b.bin")), sha(src))

    def test_standard_input_still_reaches_the_first_snippet(self):
        src = os.path.join(self.here, "f")
        with open(src, "w") as f:
            f.write("put\n")
        p = run("run", "--put", src, "-c",
                "import sys; print(sys.stdin.read().strip(), open('f').read().strip())",
                input="piped\n")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "piped put\n")

    def test_get_after_an_error_snippet(self):
        p = subprocess.run([PTYBOX, "run", "--via", VIA, "--get", "chart.txt", "-c",
                            "open('chart.txt', 'w').write('drawn')\n1/0"],
                           capture_output=True, text=True, cwd=self.here, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn("ZeroDivisionError", p.stderr)
        with open(os.path.join(self.here, "chart.txt")) as f:
            self.assertEqual(f.read(), "drawn")

    def test_a_get_that_fails_makes_the_run_fail(self):
        p = run("run", "--get", "/tmp/never-made", "--output-dir", self.here, "-c", "1")
        self.assertEqual(p.returncode, 1)
        self.assertIn("/tmp/never-made: No such file or directory", p.stderr)

    def test_json_gets_go_to_files(self):
        p = run("run", "--json", "--get", "x.txt", "--output-dir", self.here, "-c",
                "open('x.txt', 'w').write('x')")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout.splitlines()[0])["status"], "ok")
        with open(os.path.join(self.here, "x.txt")) as f:
            self.assertEqual(f.read(), "x")

    def test_a_missing_put_file_is_a_usage_error(self):
        p = run("run", "--put", "/nonexistent/data.csv", "-c", "1")
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr,
                         "ptybox: run: --put /nonexistent/data.csv: No such file or directory\n")

    def test_a_put_of_a_fifo_is_a_usage_error_at_once(self):
        fifo = os.path.join(self.here, "fifo")
        os.mkfifo(fifo)
        p = run("run", "--put", fifo, "-c", "1", timeout=20)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr, "ptybox: run: --put %s: not a regular file (a FIFO)\n" % fifo)

    def test_a_put_that_fails_far_away_stops_the_run(self):
        src = os.path.join(self.here, "f")
        open(src, "w").close()
        p = run("run", "--put", src + ":/proc/nope/f", "-c", "print('ran')")
        self.assertEqual(p.returncode, 1)
        self.assertNotIn("ran", p.stdout)
        self.assertIn("--put", p.stderr)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)


if __name__ == "__main__":
    unittest.main()
