"""Shared helpers for the integration tests: they drive the real ptybox binary
the way a user or a program does, and every wait has a deadline."""
import fcntl
import json
import os
import select
import signal
import struct
import subprocess
import termios
import threading
import time
import tty
import unittest

PTYBOX = os.environ.get("PTYBOX") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "ptybox")
# Where the tests' sessions run; the sandbox is the default users get.
VIA = os.environ.get("PTYBOX_TEST_VIA", "local")


def run(*args, input=None, timeout=60, via=True, env=None):
    """Runs `ptybox ARGS`; returns CompletedProcess with text stdout/stderr."""
    argv = [PTYBOX] + list(args)
    if via and len(args) and args[0] in ("run", "serve") and not any(
            a.startswith("--via") for a in args):
        argv[2:2] = ["--via", VIA]
    # (no input: /dev/null, not ours, which run would read if it were a pipe)
    return subprocess.run(argv, input=input, capture_output=True, timeout=timeout,
                          stdin=subprocess.DEVNULL if input is None else None, env=env, text=isinstance(input, str) or input is None,
                          errors="replace" if not isinstance(input, bytes) else None)


def run_tty(*args, stderr_tty=True, timeout=60, size=None):
    """Runs `ptybox ARGS` with stdout on a terminal (a PTY in raw mode, so
    that the bytes read are the bytes written), and stderr too unless
    stderr_tty is False (then a pipe); size: the terminal's (cols, rows).
    Returns (exit status, what the terminal got, what the pipe got)."""
    argv = [PTYBOX] + list(args)
    if args and args[0] == "run" and not any(a.startswith("--via") for a in args):
        argv[2:2] = ["--via", VIA]
    master, slave = os.openpty()
    tty.setraw(slave)
    if size:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    try:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave,
                             stderr=slave if stderr_tty else subprocess.PIPE)
    finally:
        os.close(slave)
    got, piped, deadline = b"", b"", time.monotonic() + timeout
    fds = [master] + ([p.stderr] if p.stderr else [])
    try:
        while fds:  # to the end of both: EIO on the master once ptybox is gone
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("ptybox run did not end within %s s: %r" % (timeout, got))
            for f in select.select(fds, [], [], left)[0]:
                try:
                    chunk = os.read(f if f == master else f.fileno(), 1 << 16)
                except OSError:
                    chunk = b""
                if not chunk:
                    fds.remove(f)
                elif f == master:
                    got += chunk
                else:
                    piped += chunk
        return p.wait(max(0.1, deadline - time.monotonic())), got, piped
    finally:
        os.close(master)
        if p.poll() is None:
            p.kill()
            p.wait()
        if p.stderr:
            p.stderr.close()


def run_json(*codes, extra=(), timeout=60):
    """Runs snippets with --json; returns (results, completed process)."""
    args = ["run", "--json", *extra]
    for c in codes:
        args += ["-c", c]
    p = run(*args, timeout=timeout)
    results = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    return results, p


def let_go_and_await(go, done, timeout=10):
    """Lets code that waits to open the FIFO go go on (opened for writing),
    then waits for it to open the FIFO done once it has done its part:
    True if both happened within timeout each."""
    opened = []
    for path, flags in ((go, os.O_WRONLY), (done, os.O_RDONLY)):
        t = threading.Thread(target=lambda: opened.append(os.open(path, flags)), daemon=True)
        t.start()
        t.join(timeout)
        if t.is_alive():
            break
    for fd in opened:
        os.close(fd)
    return len(opened) == 2


def kill_if_alive(pid):
    """Kills process pid if it still exists (an interpreter ptybox left
    behind); returns whether it did."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


def start_once_transport(folder):
    """An exec: transport, written into folder, that starts the interpreter
    once and refuses every later start (exit status 7): restarts fail."""
    script = os.path.join(folder, "once.sh")
    with open(script, "w") as f:
        f.write('#!/bin/sh\n[ -e "$0.started" ] && { echo "once.sh: refusing a second start"; '
                'exit 7; }\n: > "$0.started"\nexec "$@"\n')
    os.chmod(script, 0o755)
    return "exec:" + script


class Serve:
    """A `ptybox serve --stdio` process with line-oriented, deadline-bound I/O."""

    def __init__(self, *extra, via=None, argv=None, cwd=None, stdin=subprocess.PIPE):
        """stdin: a pipe that send() writes to, or an fd the caller writes to."""
        argv = argv or [PTYBOX, "serve", "--stdio", "--via", via or VIA, *extra]
        self.p = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, cwd=cwd)
        self.buf = b""
        self.stderr = ""

    def send(self, obj):
        line = obj if isinstance(obj, (bytes, str)) else json.dumps(obj)
        if isinstance(line, str):
            line = line.encode()
        self.p.stdin.write(line + b"\n")
        self.p.stdin.flush()

    def recv(self, timeout=30):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply from ptybox serve within %s s" % timeout)
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if r:
                chunk = os.read(self.p.stdout.fileno(), 1 << 20)
                if not chunk:
                    raise EOFError("ptybox serve closed its output")
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        self.last_line = line  # (its bytes, for tests of how it is escaped)
        return json.loads(line)

    def recv_result(self, id, timeout=30):
        """Skips stream events; returns the reply (result or error) for id."""
        deadline = time.monotonic() + timeout
        while True:
            msg = self.recv(max(0.01, deadline - time.monotonic()))
            if not msg.get("event") and msg.get("id") == id:
                return msg

    def exec(self, code, id, **kw):
        self.send(dict(id=id, op="exec", code=code, **kw))
        return self.recv_result(id, timeout=kw.get("timeout", 30) + 30)

    def restart(self, id):
        self.send(dict(id=id, op="restart"))
        return self.recv_result(id)

    def close(self, timeout=30):
        """Closes stdin and waits for the exit; returns the exit status. What
        ptybox said on stderr is kept in self.stderr; a sanitizer report fails."""
        if self.p.stdin and not self.p.stdin.closed:
            self.p.stdin.close()
        try:
            rc = self.p.wait(timeout)
        finally:
            if self.p.poll() is None:
                self.p.kill()
                self.p.wait(timeout)
            self.stderr = self.p.stderr.read().decode(errors="replace")
            self.p.stdout.close()
            self.p.stderr.close()
        if "Sanitizer" in self.stderr or "runtime error:" in self.stderr:
            raise AssertionError("ptybox: sanitizer report:\n" + self.stderr)
        return rc


class TestCase(unittest.TestCase):
    maxDiff = None

    def assertOk(self, result):
        self.assertEqual(result["status"], "ok", result)
