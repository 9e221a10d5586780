"""The node kernel started as the relay's template starts a kernel: the
joined driver's kernel code run once, a fork, standby_node()'s start() on
five pipes; then the kernel protocol of relay.py spoken on them."""
import fcntl
import json
import os
import select
import signal
import time

DRIVER = os.environ.get("PTYBOX_DRIVER_PY") or os.path.join(
    os.path.dirname(os.environ.get("PTYBOX", "build/ptybox")), "driver.py")


def kernel_space():
    space = {"__name__": "__driver__"}
    with open(DRIVER) as f:
        exec(compile(f.read().replace('\nif __name__ == "__main__":\n', "\nif False:\n"),
                     DRIVER, "exec"), space)
    kernel = {"__name__": "__ptybox_kernel__"}
    exec(space["_kernel_code"](), kernel)
    return kernel


class NodeKernel:
    def __init__(self, space):
        req_r, self.req = os.pipe()
        self.msg, msg_w = os.pipe()
        self.out, out_w = os.pipe()
        self.err, err_w = os.pipe()
        stdin_r, self.stdin = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            try:
                start = space["standby_node"]()
                start(req_r, msg_w, out_w, err_w, stdin_r)
            finally:
                os._exit(1)
        for fd in (req_r, msg_w, out_w, err_w, stdin_r):
            os.close(fd)
        for fd in (self.msg, self.out, self.err):
            fcntl.fcntl(fd, fcntl.F_SETFL, os.O_NONBLOCK)
        self.seq = 0
        self.lines, self.buf = [], b""
        self.outs = {self.out: b"", self.err: b""}
        self.late = []                       # (seq, name, text) of late messages
        self.status = None
        self.hello = self.message(20)

    def close(self):
        for fd in (self.req, self.msg, self.out, self.err, self.stdin):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.status is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except OSError:
                pass
            os.waitpid(self.pid, 0)

    def _pump(self, timeout):
        fds = [fd for fd in (self.msg, self.out, self.err)]
        ready = select.select(fds, [], [], max(0, timeout))[0]
        for fd in ready:
            try:
                data = os.read(fd, 1 << 20)
            except BlockingIOError:
                continue
            if fd == self.msg:
                if not data:
                    raise EOFError("the kernel closed its message pipe")
                self.buf += data
                *lines, self.buf = self.buf.split(b"\n")
                for line in lines:
                    line.decode("ascii")     # (the relay takes ASCII only)
                    if line.startswith(b"{") and json.loads(line).get("t") == "late":
                        m = json.loads(line)
                        self.late.append((m["seq"], m["name"], m["text"]))
                    else:
                        self.lines.append(line)
            else:
                self.outs[fd] += data

    def message(self, timeout=20):
        deadline = time.monotonic() + timeout
        while not self.lines:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no message from the node kernel in %s s" % timeout)
            self._pump(left)
        return self.lines.pop(0)

    def send(self, code, **members):
        self.seq += 1
        body = json.dumps(dict({"id": self.seq, "code": code}, **members)).encode()
        data = memoryview(b"X%d %d\n" % (self.seq, len(body)) + body)
        while data:
            n = os.write(self.req, data)
            data = data[n:]
        return self.seq

    def wait_out(self, text, timeout=20):
        """Until fd 1 has got text (kept for the result)."""
        deadline = time.monotonic() + timeout
        while text.encode() not in self.outs[self.out]:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("%r not on fd 1 in %s s" % (text, timeout))
            self._pump(left)

    def wait_late(self, seq, timeout=20):
        """The late messages of snippet seq, once one has come."""
        deadline = time.monotonic() + timeout
        while not any(m[0] == seq for m in self.late):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no late output of %d in %s s" % (seq, timeout))
            self._pump(left)
        return [m for m in self.late if m[0] == seq]

    def interrupt(self, seq):
        os.write(self.req, b"I%d\n" % seq)
        os.killpg(self.pid, signal.SIGINT)

    def result(self, seq, timeout=20):
        """{"status", "text" (text/plain or None), "error", "out", "err"}: the
        snippet's result and what its fds 1 and 2 got before it."""
        line = self.message(timeout)
        if line == b"R%d" % seq:
            r = {"status": "ok", "text": None, "error": None}
        else:
            m = json.loads(line)
            assert m["t"] == "result" and m["seq"] == seq, m
            r = {"status": m["status"], "text": (m["result"] or {}).get("text/plain"),
                 "error": m["error"], "cut": m.get("cut", False)}
        self._pump(0)
        r["out"], r["err"] = (self.outs[self.out].decode(), self.outs[self.err].decode())
        self.outs = {self.out: b"", self.err: b""}
        return r

    def run(self, code, timeout=20, **members):
        return self.result(self.send(code, **members), timeout)

    def wait_exit(self, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
                return status
            time.sleep(0.01)
        raise TimeoutError("the node kernel did not exit in %s s" % timeout)
