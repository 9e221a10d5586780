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


class Driver:
    def __init__(self):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execv("/usr/bin/python3", ["python3", "-I", "-S", DRIVER])
        self.buf = b""
        self.start = b"<<<ptybox:" + NONCE + b":"
        while b"NONCE?" not in self.buf:
            self._read(10)
        os.write(self.fd, NONCE + b"\n")
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
