"""The driver alone, spoken to in its own protocol (ptybox-protocol(7)) over a
PTY: what the ptybox client never sends but the protocol allows, such as
several requests in one write."""
import base64
import json
import os
import pty
import select
import signal
import tempfile
import time
import unittest
import zlib

from ptybox_test import let_go_and_await

DRIVER = os.environ.get("PTYBOX_DRIVER_PY") or os.path.join(
    os.path.dirname(os.environ.get("PTYBOX", "build/ptybox")), "driver.py")
NONCE = b"0123456789abcdef"


def _line(request):
    return base64.urlsafe_b64encode(json.dumps(request).encode()).rstrip(b"=") + b"\n"


class Driver:
    def __init__(self, early=()):
        """early: requests sent in the nonce's own write, before ready."""
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execv("/usr/bin/python3", ["python3", "-I", "-S", DRIVER])
        self.buf = b""
        self.start = b"<<<ptybox:" + NONCE + b":"
        while b"NONCE?" not in self.buf:
            self._read(10)
        os.write(self.fd, NONCE + b"\n" + b"".join(map(_line, early)))
        assert self.frame()["type"] == "ready"

    def _read(self, timeout):
        if not select.select([self.fd], [], [], timeout)[0]:
            raise TimeoutError("the driver said nothing within %s s" % timeout)
        self.buf += os.read(self.fd, 1 << 20)

    def frame(self, timeout=20):
        deadline = time.monotonic() + timeout
        while True:
            i = self.buf.find(self.start)
            k = i + len(self.start)
            if i >= 0 and self.buf[k:k + 1] == b"#":      # a binary frame: #[z]LEN:bytes
                colon = self.buf.find(b":", k)
                if colon >= 0:
                    z = self.buf[k + 1:k + 2] == b"z"
                    n = int(self.buf[k + 1 + z:colon])
                    end = colon + 1 + n
                    if len(self.buf) >= end + 10:
                        assert self.buf[end:end + 10] == b":ptybox>>>"
                        data, self.buf = self.buf[colon + 1:end], self.buf[end + 10:]
                        return {"type": "binary", "data": zlib.decompress(data) if z else data,
                                "z": z}
                self._read(max(0.01, deadline - time.monotonic()))
                continue
            j = self.buf.find(b":ptybox>>>", i) if i >= 0 else -1
            if j >= 0:
                payload, self.buf = self.buf[i + len(self.start):j], self.buf[j + 10:]
                return json.loads(payload)
            self._read(max(0.01, deadline - time.monotonic()))

    def replies(self, n):
        out = []
        while len(out) < n:
            f = self.frame()
            if f["type"] in ("result", "pong", "error"):
                out.append(f)
        return out

    def send(self, *requests):
        data = b"".join(base64.urlsafe_b64encode(json.dumps(r).encode()).rstrip(b"=") + b"\n"
                        for r in requests)
        view = memoryview(data)
        while view:                          # (the driver writes back meanwhile)
            w = select.select([self.fd], [self.fd], [], 10)
            if w[0]:
                self.buf += os.read(self.fd, 1 << 20)
            if w[1]:
                view = view[os.write(self.fd, view[:4096]):]

    def close(self):
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.fd)


class TerminalRequestsTest(unittest.TestCase):
    """tty, resize and the members of a file's exec request."""

    def exec(self, d, id, code, **members):
        d.send(dict(id=id, op="exec", code=code, **members))
        return d.replies(1)[0]

    def test_tty_before_the_kernel_is_up_still_gives_one_ready(self):
        # (the ready is awaited in Driver(): the replacement's is sent)
        d = Driver(early=[{"op": "tty"}, {"op": "resize", "cols": 77, "rows": 22}])
        try:
            r = self.exec(d, 1, "import os; (os.isatty(1), os.isatty(2), "
                                "tuple(os.get_terminal_size(1)), os.environ['COLUMNS'])")
            self.assertEqual(r["result"]["text/plain"], "(True, True, (77, 22), '77')")
            d.send({"op": "tty"})            # after a snippet: refused
            f = d.frame()
            self.assertEqual((f["type"], f.get("broken")), ("error", True))
            self.assertIn("before the first snippet", f["message"])
        finally:
            d.close()

    def test_tty_after_ready_is_quiet_and_output_comes_in_order(self):
        d = Driver()
        try:
            d.send({"op": "tty"})
            d.send({"id": 1, "op": "exec",
                    "code": "import sys\nfor i in range(3):\n    print('o', i)\n"
                            "    print('e', i, file=sys.stderr)"})
            text, frames = "", []
            while True:
                f = d.frame()
                frames.append(f["type"])
                if f["type"] == "stream":
                    self.assertEqual(f["name"], "stdout")
                    text += f["text"]
                if f["type"] == "result":
                    break
            self.assertNotIn("ready", frames)
            self.assertNotIn("died", frames)
            self.assertEqual(text, "o 0\ne 0\no 1\ne 1\no 2\ne 2\n")
        finally:
            d.close()

    def test_a_resize_while_a_tty_snippet_runs_sends_sigwinch(self):
        d = Driver()
        try:
            d.send({"op": "tty"})
            d.send({"id": 1, "op": "exec",
                    "code": "import os, signal, threading\ngot = threading.Event()\n"
                            "signal.signal(signal.SIGWINCH, lambda *a: got.set())\n"
                            "print('waiting', flush=True)\n"
                            "(got.wait(10), tuple(os.get_terminal_size(1)))"})
            f = d.frame()
            self.assertEqual((f["type"], f.get("text")), ("stream", "waiting\n"), f)
            d.send({"op": "resize", "cols": 101, "rows": 33})
            while f["type"] != "result":
                f = d.frame()
            self.assertEqual(f["result"]["text/plain"], "(True, (101, 33))")
        finally:
            d.close()

    def test_a_flood_of_tty_syncs_does_not_make_the_relay_deaf(self):
        # T ("have you read my terminal?") costs the relay a 2 ms wait: a
        # snippet that writes thousands into its message pipe must not keep
        # the relay from its client (it was 40 s for 20000).
        d = Driver()
        try:
            d.send({"op": "tty"})
            code = ("import os, fcntl\nfor fd in map(int, os.listdir('/proc/self/fd')):\n"
                    "    try:\n"
                    "        if (fd > 2 and os.readlink('/proc/self/fd/%d' % fd)"
                    ".startswith('pipe:')\n"
                    "                and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE"
                    " == os.O_WRONLY):\n"
                    "            os.write(fd, b'T\\n' * 20000)\n"
                    "    except OSError:\n        pass\n")
            d.send({"id": 1, "op": "exec", "code": code}, {"id": 2, "op": "ping"})
            t0 = time.monotonic()
            self.assertEqual([f["type"] for f in d.replies(2)], ["result", "pong"])
            self.assertLess(time.monotonic() - t0, 10)
        finally:
            d.close()

    def test_file_members_are_checked(self):
        d = Driver()
        try:
            for bad in ({"argv": "x"}, {"argv": [1]}, {"filename": ""}, {"filename": 3},
                        {"main": 1}):
                with self.subTest(bad=bad):
                    d.send(dict(id=9, op="exec", code="1", **bad))
                    f = d.replies(1)[0]
                    self.assertEqual((f["type"], f["id"], f.get("broken")), ("error", 9, True))
            for bad in ({"cols": 0, "rows": 1}, {"cols": 1}, {"cols": 1.5, "rows": 2}):
                d.send(dict(op="resize", **bad))
                self.assertEqual(d.replies(1)[0]["type"], "error")
            r = self.exec(d, 2, "import sys; sys.exit(300)", main=True, filename="f.py",
                          argv=["f.py"])
            self.assertEqual((r["status"], r["error"]["name"], r["error"]["exit"]),
                             ("error", "SystemExit", 300 & 0xff))
            r = self.exec(d, 3, "raise SystemExit('why')", main=True)
            self.assertEqual((r["error"]["value"], r["error"]["exit"]), ("why", 1))
            r = self.exec(d, 4, "import sys; sys.exit(3)")   # (not main: no exit member)
            self.assertNotIn("exit", r["error"])
        finally:
            d.close()


class PipelineTest(unittest.TestCase):
    def test_requests_in_one_write_after_a_sigint_from_user_code_all_run_in_order(self):
        # A SIGINT that the session's own code sends while idle makes the
        # driver look ahead for an interrupt request: what it reads there,
        # complete lines and the rest of a long one, must all still run.
        d = Driver()
        try:
            with tempfile.TemporaryDirectory() as tmp:
                go, done = os.path.join(tmp, "go"), os.path.join(tmp, "done")
                os.mkfifo(go)
                os.mkfifo(done)
                d.send({"id": 0, "op": "exec", "code":
                        "import os, signal, threading\n"
                        "def later():\n"
                        "    open(%r).close()\n"
                        "    os.kill(os.getpid(), signal.SIGINT)\n"
                        "    open(%r, 'w').close()\n"
                        "threading.Thread(target=later).start()" % (go, done)})
                self.assertEqual(d.replies(1)[0]["status"], "ok")
                self.assertTrue(let_go_and_await(go, done), "the thread did not go on")
            big = "s = '%s'\nlen(s)" % ("y" * 200000)   # longer than one read
            d.send({"id": 1, "op": "exec", "code": "1"}, {"id": 2, "op": "ping"},
                   {"id": 3, "op": "exec", "code": big}, {"id": 4, "op": "ping"},
                   {"id": 5, "op": "exec", "code": "2 + 3"})
            replies = d.replies(5)
            self.assertEqual([(r["type"], r["id"]) for r in replies],
                             [("result", 1), ("pong", 2), ("result", 3), ("pong", 4),
                              ("result", 5)], replies)
            self.assertEqual([r.get("result") for r in replies[::2]],
                             [{"text/plain": "1"}, {"text/plain": "200000"}, {"text/plain": "5"}])
        finally:
            d.close()


if __name__ == "__main__":
    unittest.main()


_ESCAPED = frozenset(b"\x00\x03\x0a\x0d\x10\x11\x13=~")


def _data_lines(data, chunk=1 << 20):
    """A put's data lines: "!" + bytes, the terminal's special ones as =XX."""
    out = []
    for i in range(0, len(data), chunk):
        out.append(b"!" + b"".join(b"=%02X" % c if c in _ESCAPED else bytes([c])
                                   for c in data[i:i + chunk]) + b"\n")
    return b"".join(out)


class FileOpsWireTest(unittest.TestCase):
    """put, get, files and remove on the driver's own wire: data lines in,
    binary frames and file frames out."""

    def setUp(self):
        self.d = Driver()
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        self.d.close()
        import shutil
        shutil.rmtree(self.dir, ignore_errors=True)

    def put(self, id, path, data, **members):
        self.d.send(dict(id=id, op="put", path=path, size=len(data), **members))
        self.write(_data_lines(data))
        return self.file_frame()

    def write(self, data):
        view = memoryview(data)
        while view:
            w = select.select([self.d.fd], [self.d.fd], [], 10)
            if w[0]:
                self.d.buf += os.read(self.d.fd, 1 << 20)
            if w[1]:
                view = view[os.write(self.d.fd, view[:65536]):]

    def file_frame(self, binary=None):
        while True:
            f = self.d.frame()
            if f["type"] == "binary" and binary is not None:
                binary.append(f["data"])
                continue
            if f["type"] in ("file", "error"):
                return f

    def get(self, id, path, **members):
        self.d.send(dict(id=id, op="get", path=path, **members))
        chunks = []
        f = self.file_frame(chunks)
        return f, b"".join(chunks)

    def test_every_byte_value_round_trips(self):
        data = bytes(range(256)) * 5 + b"  \t \t" + b"=\n~." + bytes(range(256))[::-1] + b" "
        path = os.path.join(self.dir, "a", "b", "bytes.bin")
        f = self.put(1, path, data)
        self.assertEqual((f["ok"], f["path"], f["size"], f["id"]), (True, path, len(data), 1), f)
        with open(path, "rb") as fh:
            self.assertEqual(fh.read(), data)
        f, got = self.get(2, path)
        self.assertEqual(got, data)
        self.assertEqual((f["ok"], f["length"], f["size"], f["eof"]), (True, len(data),
                                                                       len(data), True), f)
        self.assertEqual(os.listdir(os.path.dirname(path)), ["bytes.bin"])

    def test_sizes_and_a_deflated_get(self):
        for n in (0, 1, (1 << 20) - 1, 1 << 20, (1 << 20) + 1):
            data = os.urandom(n)
            path = os.path.join(self.dir, "f%d" % n)
            self.assertTrue(self.put(n, path, data)["ok"])
            f, got = self.get(n, path)
            self.assertEqual((got == data, f["length"]), (True, n))
        text = b"".join(b"%d,%d,row %d\n" % (i, i * i, i) for i in range(200000))
        path = os.path.join(self.dir, "t.csv")
        self.assertTrue(self.put(9, path, text)["ok"])
        self.d.send({"id": 10, "op": "get", "path": path})
        zs = []
        while True:
            f = self.d.frame()
            if f["type"] == "binary":
                zs.append(f)
            else:
                break
        self.assertTrue(all(x["z"] for x in zs))
        self.assertEqual(b"".join(x["data"] for x in zs), text)

    def test_relative_paths_are_from_the_start_folder_not_the_codes_cwd(self):
        self.d.send({"id": 1, "op": "exec", "code": "import os; os.chdir(%r)" % self.dir})
        self.d.replies(1)
        f = self.put(2, "rel.txt", b"x")
        self.assertTrue(f["ok"], f)
        self.assertNotEqual(os.path.dirname(f["path"]), self.dir)
        self.assertEqual(self.d.send({"id": 3, "op": "remove", "path": "rel.txt"}), None)
        self.assertTrue(self.file_frame()["ok"])

    def test_chunked_upload_and_a_wrong_offset(self):
        path = os.path.join(self.dir, "big")
        f = self.put(1, path, b"abc", more=True)
        self.assertEqual((f["ok"], f["size"], f.get("more")), (True, 3, True), f)
        self.assertFalse(os.path.exists(path))
        token = f["upload"]
        f = self.put(2, path, b"zz", offset=7, upload=token)
        self.assertEqual((f["ok"], f["errno"]), (False, "EINVAL"), f)
        self.assertIn("no upload %s of %s in progress at offset 7" % (token, path), f["error"])
        f = self.put(3, path, b"def", offset=3, more=True, upload=token)
        self.assertEqual(f["size"], 6, f)
        f = self.put(4, path, b"g", offset=6, mode=0o640, upload=token)
        self.assertEqual((f["ok"], f["size"]), (True, 7), f)
        with open(path, "rb") as fh:
            self.assertEqual(fh.read(), b"abcdefg")
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o640)
        self.assertEqual(os.listdir(self.dir), ["big"])

    def test_get_refusals_ranges_and_special_files(self):
        path = os.path.join(self.dir, "r")
        self.put(1, path, b"0123456789")
        f, got = self.get(2, path, offset=3, length=4)
        self.assertEqual((got, f["offset"], f["length"], f["eof"]), (b"3456", 3, 4, False))
        f, got = self.get(3, path, offset=8, length=100)
        self.assertEqual((got, f["eof"]), (b"89", True))
        f, got = self.get(4, path, max=5)
        self.assertEqual((f["ok"], f["errno"]), (False, "EFBIG"), f)
        self.assertIn("past --max-get 5: ask for a range", f["error"])
        os.mkfifo(os.path.join(self.dir, "fifo"))
        for name, what in ((os.path.join(self.dir, "fifo"), "a fifo"), (self.dir, "a folder"),
                           ("/dev/zero", "a character device")):
            f, got = self.get(5, name)
            self.assertEqual((f["ok"], got), (False, b""), f)
            self.assertIn("not a regular file (%s)" % what, f["error"])
        f, _ = self.get(6, os.path.join(self.dir, "none"))
        self.assertEqual(f["errno"], "ENOENT")

    def test_files_and_remove(self):
        for p in ("b.txt", "a/x", "a/y/z"):
            self.put(1, os.path.join(self.dir, p), b"12")
        os.symlink("/", os.path.join(self.dir, "l"))
        self.d.send({"id": 2, "op": "files", "path": self.dir})
        f = self.file_frame()
        self.assertEqual((f["ok"], f["kind"], f["cut"]), (True, "dir", False), f)
        self.assertEqual([(e["name"], e["type"]) for e in f["entries"]],
                         [("a", "dir"), ("b.txt", "file"), ("l", "link")])
        self.d.send({"id": 3, "op": "files", "path": self.dir, "recursive": True})
        names = [e["name"] for e in self.file_frame()["entries"]]
        self.assertEqual(names, ["a", "a/x", "a/y", "a/y/z", "b.txt", "l"])
        self.d.send({"id": 4, "op": "remove", "path": os.path.join(self.dir, "a")})
        self.assertEqual(self.file_frame()["errno"], "ENOTEMPTY")
        self.d.send({"id": 5, "op": "remove", "path": os.path.join(self.dir, "a"),
                     "recursive": True})
        self.assertTrue(self.file_frame()["ok"])
        self.d.send({"id": 6, "op": "remove", "path": os.path.join(self.dir, "l")})
        self.assertTrue(self.file_frame()["ok"])
        self.assertEqual(os.listdir(self.dir), ["b.txt"])
        self.assertTrue(os.path.isdir("/"))

    def test_a_put_behind_a_snippet_waits_and_its_interrupt_does_not_cut_it(self):
        path = os.path.join(self.dir, "late")
        self.d.send({"id": 1, "op": "exec", "code": "import time\nprint('go', flush=True)\n"
                                                    "time.sleep(30)"})
        f = self.d.frame()
        self.assertEqual(f["type"], "stream")
        self.d.send({"id": 2, "op": "put", "path": path, "size": 3})
        self.write(_data_lines(b"abc"))
        self.d.send({"op": "interrupt", "id": 1})
        r = self.d.frame()
        self.assertEqual((r["type"], r["status"]), ("result", "interrupted"), r)
        f = self.file_frame()
        self.assertEqual((f["id"], f["ok"]), (2, True), f)
        with open(path, "rb") as fh:
            self.assertEqual(fh.read(), b"abc")

    def test_stray_data_lines_and_bad_members(self):
        self.write(b"!stray\n")
        f = self.d.frame()
        self.assertEqual(f["type"], "error")
        self.assertIn("no put receiving it", f["message"])
        self.d.send({"id": 2, "op": "put", "path": "", "size": 2})
        self.write(_data_lines(b"xy"))       # (swallowed: no stray error for them)
        self.assertEqual(self.d.frame()["type"], "error")
        self.d.send({"id": 3, "op": "ping"})
        self.assertEqual(self.d.frame()["type"], "pong")
