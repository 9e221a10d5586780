"""Recordings (--record FILE.cast): what `run` and a server's session showed,
as asciicast v2 files that every line of parses as JSON and that Debian's
`asciinema cat` plays back."""
import fcntl
import json
import os
import re
import resource
import select
import shutil
import signal
import subprocess
import tempfile
import termios
import time
import unittest

from ptybox_test import PTYBOX, VIA, TestCase, run
from test_server import Server


def read_cast(path):
    """(header, events) of the file: every line must be JSON, the file UTF-8."""
    with open(path, "rb") as f:
        data = f.read()
    text = data.decode("utf-8")  # (strict: an invalid byte fails the test)
    lines = text.split("\n")
    assert lines[-1] == "", "the file ends in a newline"
    parsed = [json.loads(line) for line in lines[:-1]]
    return parsed[0], parsed[1:]


def asciinema_cat(path, timeout=30):
    """What `asciinema cat FILE` prints. It reads /dev/tty, so it runs with a
    PTY for its controlling terminal."""
    master, slave = os.openpty()

    def ctty():
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    try:
        p = subprocess.run(["asciinema", "cat", path], stdin=slave, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, start_new_session=True, preexec_fn=ctty,
                           timeout=timeout)
    finally:
        os.close(slave)
        os.close(master)
    assert p.returncode == 0, p.stderr
    return p.stdout.decode("utf-8", "replace")


def asciinema_play(path, timeout=60):
    """What `asciinema play -i 0.05 FILE` writes to its terminal (a PTY, read
    as it writes so that it never waits on a full one)."""
    master, slave = os.openpty()

    def ctty():
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    p = subprocess.Popen(["asciinema", "play", "-i", "0.05", path], stdin=slave, stdout=slave,
                         stderr=subprocess.PIPE, start_new_session=True, preexec_fn=ctty)
    os.close(slave)
    got, deadline = b"", time.monotonic() + timeout
    try:
        while True:  # to EIO on the master: the player and its terminal are gone
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("asciinema play did not end: %r" % got[-200:])
            if select.select([master], [], [], left)[0]:
                try:
                    chunk = os.read(master, 1 << 16)
                except OSError:
                    break
                if not chunk:
                    break
                got += chunk
        assert p.wait(max(0.1, deadline - time.monotonic())) == 0, p.stderr.read()
    finally:
        os.close(master)
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stderr.close()
    return got.decode("utf-8", "replace")


class CastChecks:
    def check_cast(self, path, executions):
        """The file's header and events as a player needs them; returns the
        text of its output events and its markers."""
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)
        header, events = read_cast(path)
        self.assertEqual(header["version"], 2)
        self.assertIsInstance(header["width"], int)
        self.assertIsInstance(header["height"], int)
        self.assertLess(abs(header["timestamp"] - time.time()), 600)
        self.assertIn("TERM", header["env"])
        last = 0
        for e in events:
            self.assertEqual(len(e), 3)
            self.assertIn(e[1], ("o", "m", "r"))
            self.assertIsInstance(e[2], str)
            self.assertGreaterEqual(e[0], last)
            last = e[0]
        markers = [e[2] for e in events if e[1] == "m"]
        self.assertEqual(len(markers), executions, markers)
        for i, m in enumerate(markers):
            self.assertTrue(m.startswith("exec %d: " % (i + 1)), m)
        return "".join(e[2] for e in events if e[1] == "o"), markers


class RunRecordTest(TestCase, CastChecks):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ptybox-rec-")
        self.cast = os.path.join(self.dir, "run.cast")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_run_records_prompts_output_values_and_tracebacks(self):
        p = run("run", "--record", self.cast, "-c", "print('hello')", "-c", "x = 6",
                "-c", "x * 7", "-c", "import sys; print('to stderr', file=sys.stderr)",
                "-c", "def f():\n    return 1 / 0\nf()")
        self.assertEqual(p.returncode, 1, p.stderr)  # (the last one failed)
        self.assertEqual(p.stdout, "hello\n42\n")
        text, markers = self.check_cast(self.cast, 5)
        self.assertEqual(markers[2], "exec 3: x * 7")
        self.assertEqual(markers[4], "exec 5: def f():")
        self.assertIn(">>> print('hello')\r\nhello\r\n", text)
        self.assertIn(">>> x * 7\r\n42\r\n", text)
        self.assertIn("to stderr\r\n", text)
        self.assertIn(">>> def f():\r\n...     return 1 / 0\r\n... f()\r\n", text)
        # the traceback, red as human run shows it on a terminal
        self.assertIn("\x1b[31mTraceback (most recent call last):\r\n", text)
        self.assertIn("ZeroDivisionError: division by zero\r\n\x1b[0m", text)
        for played in (asciinema_cat(self.cast), asciinema_play(self.cast)):
            for want in (">>> print('hello')", "hello", "42", "to stderr",
                         "ZeroDivisionError: division by zero"):
                self.assertIn(want, played)

    def test_a_picture_is_recorded_as_the_path_the_terminal_showed(self):
        from test_pictures import PLOT, PNG_CLASS, run_in
        p = run_in(self.dir, "--record", self.cast, "-c", PLOT, "-c", PNG_CLASS, "-c", "Png(2, 2)")
        self.assertEqual(p.returncode, 0, p.stderr)
        paths = [l for l in p.stdout.splitlines() if l.startswith("ptybox-")]
        self.assertEqual(len(paths), 2, p.stdout)  # the figure's, the value's
        text, _ = self.check_cast(self.cast, 3)
        for path in paths:
            self.assertIn(path + "\r\n", text)
        self.assertNotIn("<Figure size", text)
        self.assertNotIn("\r\nPng(2, 2)\r\n", text)  # (its echo: ">>> Png(2, 2)")

    def test_no_color_json_and_what_the_sandbox_must_not_do_to_a_player(self):
        env = dict(os.environ, NO_COLOR="1")
        p = run("run", "--json", "--record", self.cast, "-c",
                "import os; os.write(1, b'bad \\xff\\xfe utf8\\n')\n"
                "print('\\033]52;c;aGk=\\007clip \\u202e bidi')", "-c", "1/0", env=env)
        self.assertEqual(p.returncode, 1, p.stderr)
        results = [json.loads(line) for line in p.stdout.splitlines()]  # (stdout: JSON only)
        self.assertEqual(len(results), 2)
        text, _ = self.check_cast(self.cast, 2)  # (valid UTF-8 JSON, whatever was written)
        self.assertIn("bad \ufffd\ufffd utf8\r\n", text)
        self.assertNotIn("\x1b]", text)  # a clipboard write is shown, not done
        self.assertIn("\\x1b]52;c;aGk=\\x07clip \\u202e bidi", text)
        self.assertNotIn("\x1b[31m", text)
        self.assertIn("ZeroDivisionError", text)
        self.assertIn("bad", asciinema_cat(self.cast))

    def test_a_path_that_cannot_be_written_is_a_usage_error(self):
        for path, why in ((os.path.join(self.dir, "no", "such.cast"), "No such file"),
                          (self.dir, "Is a directory")):
            p = run("run", "--record", path, "-c", "print('ran')")
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertEqual(p.stdout, "")  # nothing ran
            self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
            self.assertIn("run: --record %s: %s" % (path, why), p.stderr)
        fifo = os.path.join(self.dir, "fifo")
        os.mkfifo(fifo)
        p = run("run", "--record", fifo, "-c", "print('ran')", timeout=30)
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertIn("not a regular file", p.stderr)
        for bad in (["--record-max", "1K", "-c", "1"], ["--record-max", "lots", "-c", "1"],
                    ["--record", "-c", "1"], ["-c", "1", "--record"]):
            p = run("run", *bad)
            self.assertEqual((p.returncode, p.stdout), (2, ""), p.stderr)
            # one line, and where help is for a missing value
            self.assertEqual(len(p.stderr.splitlines()), 1 if "--record-max" in bad else 2,
                             p.stderr)

    def test_our_own_output_file_is_refused_and_kept(self):
        # `ptybox run --record out.txt ... >> out.txt`: it was truncated, and
        # the recording and the output then wrote over each other.
        out = os.path.join(self.dir, "out.txt")
        with open(out, "w") as f:
            f.write("earlier\n")
        for fd in (1, 2):
            with open(out, "a") as f:
                argv = [PTYBOX, "run", "--via", VIA, "--record", out, "-c", "print('ran')"]
                p = subprocess.run(argv, stdout=f if fd == 1 else subprocess.PIPE,
                                   stderr=f if fd == 2 else subprocess.PIPE, timeout=60)
            self.assertEqual(p.returncode, 2)
            with open(out) as f:
                kept = f.read()
            self.assertTrue(kept.startswith("earlier\n"), kept)
            self.assertNotIn("ran", kept)
            self.assertIn("it is the standard %s" % ("output" if fd == 1 else "error"),
                          kept if fd == 2 else p.stderr.decode())

    def test_a_file_that_is_not_a_recording_is_not_overwritten(self):
        # `--record notes.py -c 1`: a slip that cost the user notes.py
        notes = os.path.join(self.dir, "notes.py")
        with open(notes, "w") as f:
            f.write("x = 1\n")
        p = run("run", "--record", notes, "-c", "print('ran')")
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertIn("exists and is not a recording: remove it first", p.stderr)
        with open(notes) as f:
            self.assertEqual(f.read(), "x = 1\n")
        # an earlier recording, or an empty file, is written over
        for i in range(2):
            p = run("run", "--record", self.cast, "-c", "print('take %d')" % i)
            self.assertEqual(p.returncode, 0, p.stderr)
        with open(self.cast) as f:
            text = f.read()
        self.assertIn("take 1", text)
        self.assertNotIn("take 0", text)

    def test_the_cap_ends_the_recording_and_not_the_run(self):
        p = run("run", "--record", self.cast, "--record-max", "8K", "-c",
                "for i in range(2000): print('line', i)", "-c", "print('after')")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(p.stdout.endswith("line 1999\nafter\n"))
        self.assertEqual(p.stderr.count("\n"), 1, p.stderr)  # one warning
        self.assertIn("warning: recording %s: stopped at its size cap (8192 bytes)" % self.cast,
                      p.stderr)
        self.assertLessEqual(os.path.getsize(self.cast), 8192)
        header, events = read_cast(self.cast)
        self.assertIn("the recording stops here", events[-1][2])
        self.assertIn("the recording stops here", asciinema_cat(self.cast))

    def test_a_write_error_stops_the_recording_and_not_the_run(self):
        def small_files():  # (EFBIG past 4000 bytes, as a full disk would be ENOSPC)
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (4000, resource.RLIM_INFINITY))

        argv = [PTYBOX, "run", "--via", VIA, "--record", self.cast, "-c",
                "for i in range(2000): print(i)", "-c", "print('after')"]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                           preexec_fn=small_files)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(p.stdout.endswith("1999\nafter\n"))
        self.assertEqual(p.stderr, "ptybox: warning: recording %s: stopped: File too large\n"
                         % self.cast)


class NewRecordTest(TestCase, CastChecks):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server()

    @classmethod
    def tearDownClass(cls):
        cls.srv.close()

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ptybox-rec-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def verb(self, *args):
        argv = [PTYBOX] + list(args)
        if args[0] == "new":
            argv[2:2] = ["--via", VIA]
        return subprocess.run(argv, capture_output=True, text=True, timeout=60,
                              env=self.srv.env, cwd=self.dir)

    def test_new_records_the_session_until_it_ends(self):
        p = self.verb("new", "rec", "--record", "rec.cast")  # (relative: the client's folder)
        self.assertEqual(p.returncode, 0, p.stderr)
        cast = os.path.join(self.dir, "rec.cast")
        p = self.verb("exec", "rec", "-c", "print('first')", "-c", "n = 20", "-c", "n + 1")
        self.assertEqual((p.returncode, p.stdout), (0, "first\n21\n"), p.stderr)
        p = self.verb("exec", "rec", "-c", "{}['missing']")
        self.assertEqual(p.returncode, 1)
        p = self.verb("exec", "rec", "-c", "print('last')")
        self.assertEqual(p.returncode, 0, p.stderr)
        from test_server import Client
        c = Client(self.srv.sock)  # (a user's window changed: the recording says so)
        c.send({"id": 1, "op": "resize", "session": "rec", "cols": 120, "rows": 40})
        self.assertTrue(c.reply(1)["ok"])
        c.close()
        screen = self.verb("capture", "rec").stdout
        self.assertEqual(self.verb("kill", "rec").returncode, 0)
        header, events = read_cast(cast)
        self.assertEqual([e[2] for e in events if e[1] == "r"], ["120x40"])
        self.assertEqual((header["width"], header["height"]), (80, 24))
        self.assertEqual(header["title"], "ptybox session rec")
        text, markers = self.check_cast(cast, 5)
        self.assertEqual(markers[0], "exec 1: print('first')")
        self.assertIn(">>> print('first')\r\nfirst\r\n", text)
        self.assertIn(">>> n + 1\r\n21\r\n", text)
        self.assertIn("KeyError: 'missing'", text)
        self.assertIn("Traceback (most recent call last):", text)
        self.assertTrue(text.endswith(">>> print('last')\r\nlast\r\n"), text[-80:])
        played = asciinema_cat(cast)
        for want in ("first", "21", "KeyError: 'missing'", "last"):
            self.assertIn(want, played)
        # the screen and the recording are fed the same: each line of one is in the other
        plain = re.sub(r"\x1b\[[0-9;]*m", "", text).replace("\r\n", "\n")
        for line in screen.splitlines():
            self.assertIn(line + "\n", plain)
        self.assertIn(">>> {}['missing']", screen)

    def test_dial_stdio_may_not_write_files(self):
        p = subprocess.run([PTYBOX, "dial-stdio"], env=self.srv.env, capture_output=True,
                           text=True, timeout=60, input=json.dumps(
                               {"id": 1, "op": "new", "session": "far",
                                "record": os.path.join(self.dir, "far.cast")}) + "\n")
        m = json.loads(p.stdout)
        self.assertEqual(m["code"], "usage", m)
        self.assertIn("refused through dial-stdio", m["error"])
        self.assertFalse(os.path.exists(os.path.join(self.dir, "far.cast")))

    def test_a_long_execution_reaches_the_file_while_it_runs(self):
        cast = os.path.join(self.dir, "long.cast")
        self.assertEqual(self.verb("new", "long", "--record", cast).returncode, 0)
        p = self.verb("exec", "long", "--no-wait", "-c",
                      "print('early', flush=True)\nimport time\ntime.sleep(60)")
        self.assertEqual(p.returncode, 0, p.stderr)
        deadline, seen = time.monotonic() + 20, ""
        while "early" not in seen and time.monotonic() < deadline:
            time.sleep(0.1)  # (a file has nothing to wait on: polled, within a deadline)
            with open(cast, errors="replace") as f:
                seen = f.read()
        self.assertIn("early", seen)  # (the server flushes each second, not only at the end)
        self.assertEqual(self.verb("kill", "long").returncode, 0)
        text, markers = self.check_cast(cast, 1)
        self.assertIn("early\r\n", text)

    def test_a_path_the_server_cannot_open_creates_no_session(self):
        p = self.verb("new", "norec", "--record", "/nonexistent/dir/x.cast")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stderr, "ptybox: new: --record /nonexistent/dir/x.cast: "
                         "No such file or directory\n")
        self.assertNotIn("norec", self.verb("ls").stdout)
        # the name is free: it can be made again
        self.assertEqual(self.verb("new", "norec").returncode, 0)
        self.assertEqual(self.verb("kill", "norec").returncode, 0)
        p = self.verb("new", "norec2", "--record-max", "8K")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--record-max needs --record FILE", p.stderr)
        p = self.verb("exec", "x", "--record", "a.cast", "-c", "1")
        self.assertEqual(p.returncode, 2)
        self.assertIn("option '--record' is for new", p.stderr)

    def test_the_request_checks_its_record_members(self):
        from test_server import Client
        c = Client(self.srv.sock)
        for i, req in enumerate(({"record": "relative.cast"}, {"record": 7},
                                 {"record": "/tmp/x.cast", "record_max": 10},
                                 {"record": "/tmp/x.cast", "record_max": "lots"})):
            c.send(dict(req, id=i, op="new", session="bad%d" % i))
            r = c.reply(i)
            self.assertEqual(r.get("code"), "usage", r)
        c.close()


if __name__ == "__main__":
    unittest.main()
