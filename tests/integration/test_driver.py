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
