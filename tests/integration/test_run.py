"""`ptybox run`: what a person at a shell and a script see."""
import base64
import json
import os
import select
import signal
import struct
import subprocess
import tempfile
import time
import unittest

from ptybox_test import (PTYBOX, VIA, Serve, TestCase, kill_if_alive, run, run_json, run_tty,
                         start_once_transport)

# A crash that takes the relay along (a kernel's own death is mended under it):
# the transport must start again.
KILL_RELAY = "import os, signal; relay = int(open('/proc/%d/stat' % os.getppid()).read().rsplit(')', 1)[1].split()[1]); os.kill(relay, signal.SIGKILL)"


class DemoTest(TestCase):
    def test_demo_output_state_and_error(self):
        p = run("run", "-c", "print('hello, world!')", "-c", "x = 10", "-c", "y = 5",
                "-c", "result = x + y", "-c", "print(f'The result is: {result}')",
                "-c", "1 / 0")
        self.assertEqual(p.stdout, "hello, world!\nThe result is: 15\n")
        self.assertIn("ZeroDivisionError: division by zero", p.stderr)
        self.assertIn("Traceback", p.stderr)
        self.assertNotIn("\033[31m", p.stderr)  # not a terminal: no colour
        self.assertEqual(p.returncode, 1)

    def test_last_expression_is_printed_like_the_repl(self):
        p = run("run", "-c", "2+3", "-c", "'a' * 3", "-c", "None", "-c", "x = 4")
        self.assertEqual(p.stdout, "5\n'aaa'\n")
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_busy_poll_changes_no_result(self):
        # 0: both sides sleep at once; a long window: they poll through
        # snippets that take longer than it, and through idle time.
        codes = ["x = %d" % i for i in range(20)] + ["import time; time.sleep(0.01); x"]
        for poll in ("0", "1000000"):
            with self.subTest(busy_poll=poll):
                args = ["run", "--busy-poll", poll]
                for c in codes:
                    args += ["-c", c]
                p = run(*args)
                self.assertEqual((p.returncode, p.stdout), (0, "19\n"), p.stderr)


class StartUpTest(TestCase):
    """The interpreter starts with -S and imports site later (see the driver):
    what user code sees must be what a normal start-up gives."""

    def test_site_comes_while_the_interpreter_is_idle(self):
        # Not only at an import that misses: between snippets, unasked.
        s = Serve()
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:  # (each result leaves it idle a while)
                r = s.exec("import sys; 'site' in sys.modules", id=1)
                if r["result"] == {"text/plain": "True"}:
                    break
            self.assertEqual(r["result"], {"text/plain": "True"})
        finally:
            self.assertEqual(s.close(), 0)

    def test_the_first_snippet_finds_what_site_adds(self):
        code = ("try:\n    import ptybox_no_such_module\nexcept ImportError:\n    pass\n"
                "import sys; print(sys.path)")
        results, p = run_json(code, "exit(3)", "help")
        host = subprocess.run(["/usr/bin/python3", "-I", "-c", "import sys; print(sys.path)"],
                              capture_output=True, text=True, check=True).stdout
        self.assertOk(results[0])
        # (and the package folder before the first site-packages: test_packages.py)
        want = [""] + eval(host)
        at = next((i for i, p in enumerate(want) if p.endswith("-packages")), len(want))
        want.insert(at, "/tmp/.ptybox-packages")
        self.assertEqual(results[0]["stdout"], "%r\n" % want)
        self.assertEqual(results[1]["error"]["name"], "SystemExit", results[1])
        self.assertEqual(results[1]["error"]["value"], "3")
        self.assertIn("help(", results[2]["result"]["text/plain"])


class ExitStatusTest(TestCase):
    def test_all_ok_is_0(self):
        self.assertEqual(run("run", "-c", "pass").returncode, 0)

    def test_a_failed_snippet_is_1_and_later_ones_still_run(self):
        p = run("run", "-c", "raise ValueError('no')", "-c", "print('after')")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stdout, "after\n")
        self.assertIn("ValueError: no", p.stderr)

    def test_usage_errors_are_2_with_one_clear_line(self):
        for args in (["run"], ["run", "--timeout", "abc", "-c", "1"],
                     ["run", "--bogus"], ["run", "a.py", "b.py"],
                     ["run", "--via", "carrier-pigeon", "-c", "1"],
                     ["run", "--memory", "12Q", "-c", "1"], ["frobnicate"],
                     ["run", "/nonexistent/file.py"]):
            p = run(*args, via=False)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertEqual(p.stdout, "")
            self.assertTrue(p.stderr.startswith("ptybox: ") or "Try" in p.stderr, p.stderr)

    def test_bad_option_values_are_named_as_given(self):
        for args, said in (
                (["run", "--net=1", "-c", "1"], "run: option '--net' takes no value"),
                (["serve", "--stdio", "--bogus=1"], "serve: unknown option '--bogus'"),
                (["run", "--pids", "4194303", "-c", "1"],
                 "run: --pids 4194303: expected a number from 0 to 4194302"),
                (["run", "--log", "/nonexistent/dir/x.log", "-c", "1"],
                 "run: --log /nonexistent/dir/x.log: No such file or directory"),
                (["serve", "--stdio", "--log", "/"], "serve: --log /: Is a directory"),
                (["run", "--max-output", "2T", "-c", "1"],
                 "run: --max-output 2T: expected a size from 2 to 1T, e.g. 4M"),
                (["run", "--busy-poll", "-1", "-c", "1"],
                 "run: --busy-poll -1: expected microseconds from 0 to 1000000")):
            with self.subTest(args=args):
                p = run(*args, via=False, input="")
                self.assertEqual((p.returncode, p.stdout), (2, ""), p.stderr)
                self.assertEqual(p.stderr.splitlines()[0], "ptybox: " + said)

    def test_cannot_start_is_125_with_the_reason(self):
        p = run("run", "--via", "none", "--python", "/nonexistent/python3", "-c", "1",
                via=False)
        self.assertEqual(p.returncode, 125)
        self.assertIn("/nonexistent/python3", p.stderr)
        # inside the sandbox, the child's own set-up error comes back
        p = run("run", "--via", "local", "--python", "/nonexistent/python3", "-c", "1",
                via=False)
        self.assertEqual(p.returncode, 125)
        self.assertIn("exec /nonexistent/python3: No such file or directory", p.stderr)

    def test_the_terminal_tail_is_read_to_the_end_before_giving_up(self):
        # An "interpreter" that writes a burst and exits at once: the reason
        # ptybox gives must be its very last line, read after the exit.
        with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
            f.write("#!/bin/sh\nhead -c 3000000 /dev/zero | tr '\\0' 'z' | fold -w 100\n"
                    "echo 'python3: the very last line'\nexit 3\n")
        try:
            os.chmod(f.name, 0o755)
            p = run("run", "--via", "none", "--python", f.name, "-c", "1", via=False)
        finally:
            os.unlink(f.name)
        self.assertEqual(p.returncode, 125)
        self.assertIn("exit status 3", p.stderr)
        self.assertIn("python3: the very last line", p.stderr)
        self.assertEqual(p.stderr.count("\n"), 2, p.stderr)  # the warning and one error line

    @staticmethod
    def _run_file(source):
        """`ptybox run FILE` on a file holding the bytes source: (process, FILE)."""
        with tempfile.NamedTemporaryFile("wb", suffix=".py") as f:
            f.write(source)
            f.flush()
            return run("run", f.name), f.name

    def test_source_files_are_utf8_and_a_bom_is_skipped(self):
        p, _ = self._run_file(b"\xef\xbb\xbfprint('bom')\n")
        self.assertEqual((p.returncode, p.stdout), (0, "bom\n"), p.stderr)
        p, name = self._run_file(b"# -*- coding: latin-1 -*-\nx = '\xe9'\n")
        self.assertEqual((p.returncode, p.stdout), (2, ""), p.stderr)
        self.assertEqual(p.stderr.splitlines()[-1], "ptybox: run: %s: not valid UTF-8 "
                         "(snippets are UTF-8 text, whatever coding line they have)" % name)
        p = run("run", "-c", "1", "-c", b"'\xff'".decode("utf-8", "surrogateescape"))
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stderr.splitlines()[-1], "ptybox: run: -c #2: not valid UTF-8")

    def test_nul_byte_in_source_is_a_clear_error(self):
        p, name = self._run_file(b"x = 1\0\n")
        self.assertEqual((p.returncode, p.stdout), (2, ""), p.stderr)
        self.assertEqual(p.stderr.splitlines()[-1],
                         "ptybox: run: %s: the source contains a NUL byte" % name)


class StdioTest(TestCase):
    def _sh(self, redirect, *args):
        """ptybox ARGS with a shell redirection such as `<&-` (a closed fd)."""
        cmd = " ".join("'%s'" % a.replace("'", "'\\''") for a in (PTYBOX,) + args)
        return subprocess.run(["sh", "-c", "exec %s %s" % (cmd, redirect)], capture_output=True,
                              text=True, timeout=60, stdin=subprocess.DEVNULL)

    def test_closed_standard_fds_are_not_taken_for_ours(self):
        # With fd 0, 1 or 2 closed, the PTY or a pipe would land there; libuv
        # even aborts on it.  They read as /dev/null instead.
        for redirect in ("<&-", ">&-", "2>&-"):
            with self.subTest(redirect=redirect):
                p = self._sh(redirect, "serve", "--stdio", "--via", "none")
                self.assertEqual(p.returncode, 0, p.stderr)
                p = self._sh(redirect, "run", "--via", "none", "-c", "print(1)", "-c", "2")
                self.assertEqual(p.returncode, 0, p.stderr)
                if redirect != ">&-":
                    self.assertEqual(p.stdout, "1\n2\n")

    def test_output_that_cannot_be_written_is_an_error(self):
        for args in (["run", "--via", "none", "-c", "print(1)"],
                     ["run", "--via", "none", "--json", "-c", "1"]):
            p = self._sh(">/dev/full", *args)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("No space left on device", p.stderr)
        p = subprocess.run(["sh", "-c", "echo '{\"id\":1,\"op\":\"ping\"}' | '%s' serve --stdio "
                            "--via none >/dev/full" % PTYBOX], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("standard output: No space left on device", p.stderr)


class InputsTest(TestCase):
    def test_file_runs_after_the_c_snippets(self):
        with tempfile.NamedTemporaryFile("w", suffix=".py") as f:
            f.write("print(x * 2)\n")
            f.flush()
            p = run("run", "-c", "x = 21", f.name)
        self.assertEqual(p.stdout, "42\n")
        self.assertEqual(p.returncode, 0)

    def test_dash_reads_standard_input(self):
        p = run("run", "-c", "y = 'from -c'", "-", input="print(y)\nimport sys\n40 + 2\n")
        self.assertEqual(p.stdout, "from -c\n")   # (as python3 -: no value shown)


class JsonTest(TestCase):
    def test_one_result_object_per_snippet_and_nothing_else(self):
        results, p = run_json("print('out')", "import sys; print('err', file=sys.stderr)",
                              "2+3", "1/0")
        self.assertEqual(len(results), 4, p.stdout)
        for i, r in enumerate(results, 1):
            self.assertEqual(r["id"], i)
            for key in ("status", "stdout", "stderr", "result", "error", "duration_ms",
                        "truncated", "state_lost"):
                self.assertIn(key, r)
        self.assertEqual(results[0]["stdout"], "out\n")
        self.assertEqual(results[1]["stderr"], "err\n")
        self.assertEqual(results[2]["result"], {"text/plain": "5"})
        self.assertIsNone(results[0]["result"])
        self.assertEqual(results[3]["status"], "error")
        self.assertEqual(results[3]["error"]["name"], "ZeroDivisionError")
        self.assertEqual(results[3]["error"]["value"], "division by zero")
        self.assertTrue(any("1/0" in line for line in results[3]["error"]["traceback"]))
        self.assertFalse(any(r["state_lost"] or r["truncated"] for r in results))
        self.assertEqual(p.returncode, 1)

    def test_c1_and_bidi_controls_are_escaped_and_read_back_the_same(self):
        # cJSON writes them as raw UTF-8, which a terminal or an editor showing
        # the line acts on (U+0085 is NEL; U+202E reverses what follows).
        p = run("run", "--json", "-c", 'print("a\\u202eb\\x85c\\u2066\\u200f\\u061c")',
                "-c", 'raise ValueError("\\u202e")', input=b"")
        self.assertEqual(p.returncode, 1, p.stderr)
        for raw in ("\u202e", "\x85", "\u2066", "\u200f", "\u061c"):
            self.assertNotIn(raw.encode(), p.stdout)
        first, second = p.stdout.splitlines()
        self.assertIn(b'"stdout":"a\\u202eb\\u0085c\\u2066\\u200f\\u061c\\n"', first)
        self.assertEqual(json.loads(first)["stdout"], "a\u202eb\x85c\u2066\u200f\u061c\n")
        self.assertEqual(json.loads(second)["error"]["value"], "\u202e")


class NotRunTest(TestCase):
    """Every snippet gets one result line, also those the session could not run."""

    def test_a_restart_that_fails_is_not_called_a_restart(self):
        with tempfile.TemporaryDirectory() as d:
            results, p = run_json("x = 1", KILL_RELAY, "print(3)", "print(4)",
                                  extra=["--via", start_once_transport(d)])
        self.assertEqual([r["id"] for r in results], [1, 2, 3, 4], p.stdout)
        self.assertOk(results[0])
        crashed = results[1]
        self.assertEqual((crashed["status"], crashed["state_lost"]), ("crashed", True))
        self.assertIn("the interpreter died (", crashed["message"])
        self.assertIn("could not be restarted", crashed["message"])
        self.assertIn("once.sh: refusing a second start", crashed["message"])
        self.assertNotIn("restarted with", crashed["message"])
        for r in results[2:]:
            self.assertEqual((r["status"], r["stdout"]), ("crashed", ""), r)
            self.assertRegex(r["message"], r"^not run: the interpreter could not be restarted")
        self.assertEqual(p.returncode, 125)
        self.assertIn("cannot start the session", p.stderr)

    @unittest.skipUnless(VIA == "local", "the limits are the embedded sandbox's")
    def test_a_start_that_dies_under_small_limits_names_them(self):
        # (newuser-3: it said "exit status 116: PTYBOX/1 NONCE?", never the limit)
        for limit in (["--memory", "20M"], ["--pids", "1"]):
            p = run("run", *limit, "-c", "1")
            self.assertEqual(p.returncode, 125, p.stderr)
            self.assertIn("the session's limits may be too small for it to start: %s"
                          % " ".join(limit), p.stderr)
            self.assertNotIn("PTYBOX/1", p.stderr)

    def test_a_session_that_cannot_start_answers_each_snippet(self):
        results, p = run_json("1", "2", extra=["--via", "none", "--python",
                                              "/nonexistent/python3"])
        self.assertEqual([r["id"] for r in results], [1, 2], p.stdout)
        for r in results:
            self.assertEqual((r["status"], r["state_lost"]), ("crashed", False), r)
            self.assertEqual(r["message"], "not run: /nonexistent/python3: not found")
        self.assertEqual(p.returncode, 125)
        # a terminal still gets one line for it all
        p = run("run", "--via", "none", "--python", "/nonexistent/python3", "-c", "1", "-c", "2",
                via=False)
        self.assertEqual((p.returncode, p.stdout), (125, ""))
        self.assertEqual(p.stderr.count("\n"), 2, p.stderr)  # the warning and one error line


class DisplayTest(TestCase):
    """Rich output: display() and pyplot figures, as data (--json) and as a
    terminal shows them (text/plain, like Jupyter's console)."""

    PLOT = ("import matplotlib.pyplot as plt\n"
            "fig = plt.figure(figsize=(4, 3)); plt.plot([1, 2, 3], [4, 1, 9])\n"
            "print('plotted')")

    def png_size(self, b64):
        png = base64.b64decode(b64, validate=True)
        self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
        self.assertEqual(png[12:16], b"IHDR")
        return struct.unpack(">II", png[16:24])

    def test_an_open_figure_is_shown_once_as_a_png(self):
        results, p = run_json(self.PLOT, "plt.get_fignums()", "plt.plot([0, 1]); plt.show()")
        self.assertEqual(p.returncode, 0, p.stderr)
        first, after, shown = results
        self.assertEqual(first["stdout"], "plotted\n")
        self.assertEqual(len(first["display"]), 1, first)
        width, height = self.png_size(first["display"][0]["image/png"])
        self.assertTrue(200 < width < 1000 and 150 < height < 800, (width, height))
        self.assertIn("Figure", first["display"][0]["text/plain"])
        # shown means closed, as in a notebook: nothing left for the next snippet
        self.assertEqual(after["result"], {"text/plain": "[]"})
        self.assertEqual(after["display"], [])
        self.assertEqual(len(shown["display"]), 1, shown)
        self.png_size(shown["display"][0]["image/png"])

    def test_display_sends_each_object_with_its_png(self):
        code = ("class Dot:\n"
                "    def _repr_png_(self): return b'\\x89PNG not really'\n"
                "    def __repr__(self): return 'Dot()'\n"
                "display(Dot(), 'text', 7)")
        results, p = run_json(code)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(results[0]["display"], [
            {"text/plain": "Dot()",
             "image/png": base64.b64encode(b"\x89PNG not really").decode()},
            {"text/plain": "'text'"}, {"text/plain": "7"}])

    def test_a_terminal_gets_the_text_of_each_display(self):
        # (a figure is a picture: saved, its path in its place; test_pictures)
        with tempfile.TemporaryDirectory() as out:
            p = run("run", "--output-dir", out, "-c", self.PLOT,
                    "-c", "display('shown'); print('then'); display(3); 'value'")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout, "plotted\n%s\n'shown'\nthen\n3\n'value'\n"
                             % os.path.join(out, "ptybox-1.png"))


class TerminalTest(TestCase):
    """What the sandbox writes reaches a terminal with only its colours live:
    a snippet must not write the clipboard (OSC 52), retitle the window (OSC
    0) or move the cursor over lines already shown."""
    HOSTILE = "\x1b]52;c;SGVsbG8=\x07\x1b]0;pwned\x07\x1b[2Aok\x1b[31mred\x1b[0m"
    SHOWN = b"\\x1b]52;c;SGVsbG8=\\x07\\x1b]0;pwned\\x07\\x1b[2Aok\x1b[31mred\x1b[0m"
    # Each place text from the sandbox comes out: stdout, stderr, a value's
    # repr, a traceback and an error value, and output cut between writes.
    EVERYWHERE = ["print(%r)" % HOSTILE,
                  "import sys; _ = sys.stderr.write('err\\x1b]0;e\\x07\\n')",
                  "class R:\n    def __repr__(self): return 'v\\x1b]0;v\\x07\\u202e'\nR()",
                  "raise ValueError('\\x1b]0;t\\x07')",
                  "import sys\nfor c in '\\x1b[2A\\x1b[3': sys.stdout.write(c); sys.stdout.flush()\n"
                  "print('1mx\\r!')"]

    def test_escape_sequences_show_escaped_and_colours_pass(self):
        rc, got, _ = run_tty("run", "-c", "print(%r)" % self.HOSTILE)
        self.assertEqual((rc, got), (0, self.SHOWN + b"\n"))

    def test_every_text_from_the_sandbox_is_filtered(self):
        args = ["run"]
        for c in self.EVERYWHERE:
            args += ["-c", c]
        rc, got, _ = run_tty(*args)
        self.assertEqual(rc, 1, got)
        for raw in (b"\x1b]", b"\x07", b"\x1b[2A", b"\xe2\x80\xae", b"\r\x1b"):
            self.assertNotIn(raw, got)
        self.assertIn(self.SHOWN + b"\n", got)
        self.assertIn(b"err\\x1b]0;e\\x07\n", got)
        self.assertIn(b"v\\x1b]0;v\\x07\\u202e\n", got)
        self.assertIn(b"ValueError: \\x1b]0;t\\x07\n", got)
        self.assertIn(b"\\x1b[2A\x1b[31mx\\x0d!\n", got)

    def test_raw_passes_everything(self):
        rc, got, _ = run_tty("run", "--raw", "-c", "print(%r)" % self.HOSTILE)
        self.assertEqual((rc, got), (0, self.HOSTILE.encode() + b"\n"))

    def test_each_of_stdout_and_stderr_is_filtered_if_it_is_a_terminal(self):
        code = "import sys; print('o\\x1b]0;o\\x07'); _ = sys.stderr.write('e\\x1b]0;e\\x07\\n')"
        rc, got, piped = run_tty("run", "-c", code, stderr_tty=False)
        self.assertEqual((rc, got, piped), (0, b"o\\x1b]0;o\\x07\n", b"e\x1b]0;e\x07\n"))

    def test_what_a_message_quotes_of_the_terminal_is_filtered(self):
        # The reason a start failed quotes the terminal's last line (control
        # bytes there are shown as '?'): a C1 CSI (U+009B) is shown escaped,
        # in --json mode too, where stderr still gets the message.
        with tempfile.TemporaryDirectory() as d:
            script = os.path.join(d, "fail.sh")
            with open(script, "w") as f:
                f.write("#!/bin/sh\nprintf 'no \\302\\2332J python here\\n'\nexit 7\n")
            os.chmod(script, 0o755)
            for extra in ([], ["--json"]):
                rc, got, _ = run_tty("run", "--via", "exec:" + script, *extra, "-c", "1")
                self.assertEqual(rc, 125, got)
                self.assertIn(b"no \\u009b2J python here", got)
                self.assertNotIn(b"\xc2\x9b", got)

    def test_a_pipe_gets_the_bytes_as_they_are(self):
        p = run("run", "-c", "print(%r)" % self.HOSTILE)
        self.assertEqual((p.returncode, p.stdout), (0, self.HOSTILE + "\n"), p.stderr)


def read_line(f, timeout=30):
    """One line from a pipe, within the deadline."""
    deadline, buf = time.monotonic() + timeout, b""
    while not buf.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([f], [], [], left)[0]:
            raise TimeoutError("no line within %s s (got %r)" % (timeout, buf))
        c = os.read(f.fileno(), 1)
        if not c:
            raise EOFError("closed after %r" % buf)
        buf += c
    return buf.decode()


# Ignores SIGHUP (the terminal's hang-up), says its pid, and spins.
SPIN = ("import os, signal\nsignal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
        "print(os.getpid(), flush=True)\nwhile True: pass")


class SignalTest(TestCase):
    """Killed by a signal, ptybox kills its interpreter first: with --via
    none nothing else would, and it spun on, orphaned."""

    def test_sigterm_and_sighup_kill_the_interpreter_and_exit_128_plus_signo(self):
        for sig in (signal.SIGTERM, signal.SIGHUP):
            with self.subTest(sig=sig):
                p = subprocess.Popen([PTYBOX, "run", "--via", "none", "-c", SPIN],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
                pid = rc = None
                try:
                    pid = int(read_line(p.stdout))
                    p.send_signal(sig)
                    rc = p.wait(30)
                finally:
                    if p.poll() is None:
                        p.kill()
                    p.communicate(timeout=30)
                    left_behind = pid and kill_if_alive(pid)
                self.assertEqual(rc, 128 + sig)
                self.assertFalse(left_behind, "the interpreter outlived ptybox")


def script(folder, text, name="prog.py"):
    """A file of Python in folder; returns its path."""
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text)
    return path


class LateOutputTest(TestCase):
    # The thread waits for the second snippet to let it go: what it prints
    # then is late output of snippet 1, printed while snippet 2 runs.
    START = ("import sys, threading\ngo = threading.Event()\n"
             "def later():\n    go.wait()\n    print('tick 1')\n"
             "    print('tock 2', file=sys.stderr)\n    print('partial', end='')\n"
             "t = threading.Thread(target=later, daemon=True)\nt.start()")

    def test_json_late_output_goes_to_stderr_marked_and_stdout_stays_json(self):
        results, p = run_json(self.START, "go.set(); t.join()")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([r["id"] for r in results], [1, 2])  # (every line parsed as JSON)
        self.assertEqual([r["stdout"] + r["stderr"] for r in results], ["", ""])
        lines = p.stderr.splitlines()
        self.assertIn("ptybox: late output of snippet 1 (stdout): tick 1", lines)
        self.assertIn("ptybox: late output of snippet 1 (stderr): tock 2", lines)
        # a line without its newline is told at the end, not lost
        self.assertIn("ptybox: late output of snippet 1 (stdout): partial", lines)

    def test_json_late_display_is_said_on_stderr(self):
        results, p = run_json(
            "import threading\ngo = threading.Event()\n"
            "class D:\n    def _repr_html_(self): return '<b>x</b>'\n"
            "    def __repr__(self): return 'D()'\n"
            "t = threading.Thread(target=lambda: (go.wait(), display(D())), daemon=True)\n"
            "t.start()", "go.set(); t.join()")
        self.assertEqual([r["display"] for r in results], [[], []])
        self.assertIn("ptybox: late display of snippet 1: D()", p.stderr.splitlines())

    def test_human_run_still_shows_late_output_in_place(self):
        p = run("run", "-c", self.START, "-c", "go.set(); t.join()")
        self.assertEqual(p.stdout, "tick 1\npartial")
        self.assertEqual(p.stderr, "tock 2\n")


class RunFileTest(TestCase):
    """`ptybox run FILE ARGS` behaves as `python3 FILE ARGS` does."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def file(self, text):
        return script(self.dir.name, text)

    def test_argv_and_file_are_the_files(self):
        path = self.file("import sys\nprint(sys.argv)\nprint(__file__)\n")
        p = run("run", path, "a", "--verbose", "-x")
        self.assertEqual((p.returncode, p.stdout),
                         (0, "%r\n%s\n" % ([path, "a", "--verbose", "-x"], path)), p.stderr)

    def test_piped_input_is_one_stream_the_file_reads_what_the_c_snippets_left(self):
        path = self.file("import sys\nprint(sys.stdin.read().upper())\n")
        p = run("run", "-c", "import sys; print(repr(sys.stdin.readline()))", path,
                input="abc\ndef\n")
        self.assertEqual((p.returncode, p.stdout), (0, "'abc\\n'\nDEF\n\n"), p.stderr)

    def test_standard_input_is_dash_and_stdin(self):
        p = run("run", "-", "q", input="import sys\nprint(sys.argv, __file__)\n")
        self.assertEqual(p.stdout, "['-', 'q'] <stdin>\n")

    def test_c_snippets_keep_their_own_argv_and_no_file(self):
        path = self.file("print(sys.argv[1:], __file__ == %r)\n" % "")
        p = run("run", "-c", "import sys; print(sys.argv)", "-c", "print('__file__' in dir())",
                "-c", "40 + 2", path, "arg")
        self.assertEqual(p.stdout, "['-c']\nFalse\n42\n['arg'] False\n")

    def test_tracebacks_name_the_file_and_its_last_value_is_not_shown(self):
        # As python3 FILE: no value printed (--json still has it in "result").
        p = run("run", self.file("40 + 2\n"))
        self.assertEqual((p.returncode, p.stdout), (0, ""), p.stderr)
        results, p = run_json(extra=[self.file("40 + 2\n")])
        self.assertEqual(results[0]["result"]["text/plain"], "42")
        path = self.file("x = 1\n1 / 0\n")
        p = run("run", path)
        self.assertEqual(p.returncode, 1)
        self.assertIn('File "%s", line 2, in <module>' % path, p.stderr)
        self.assertIn("ZeroDivisionError", p.stderr)

    def test_non_daemon_threads_are_waited_for(self):
        path = self.file("import threading, time\n"
                         "def work():\n    time.sleep(0.3)\n    print('thread done')\n"
                         "threading.Thread(target=work).start()\nprint('main done')\n")
        p = run("run", path)
        self.assertEqual((p.returncode, p.stdout), (0, "main done\nthread done\n"), p.stderr)
        results, p = run_json(extra=[path])
        self.assertEqual(results[0]["stdout"], "main done\nthread done\n")

    def test_non_daemon_threads_are_waited_for_also_when_file_raised_or_exited(self):
        for end, status in (("raise ValueError(sys.argv[1:])", 1), ("sys.exit(4)", 4)):
            with self.subTest(end=end):
                path = self.file("import sys, threading, time\n"
                                 "def work():\n    time.sleep(0.3)\n    print('thread done')\n"
                                 "threading.Thread(target=work).start()\n%s\n" % end)
                p = run("run", path, "a", "b")
                self.assertEqual((p.returncode, p.stdout), (status, "thread done\n"), p.stderr)
                results, p = run_json(extra=[path, "a", "b"])
                self.assertEqual((results[0]["status"], results[0]["stdout"]),
                                 ("error", "thread done\n"), results)
        p = run("run", self.file("raise ValueError(1)\n"), "a", "b")
        self.assertIn("ValueError: 1", p.stderr)

    def test_an_executor_left_open_does_not_hang_the_end(self):
        path = self.file("from concurrent.futures import ThreadPoolExecutor\n"
                         "ex = ThreadPoolExecutor(2)\nf = ex.submit(print, 'pooled')\n")
        p = run("run", "--timeout", "20", path)
        self.assertEqual((p.returncode, p.stdout), (0, "pooled\n"), p.stderr)

    def test_a_thread_that_never_ends_is_cut_by_the_timeout(self):
        path = self.file("import threading\nthreading.Thread(target=threading.Event().wait)"
                         ".start()\nprint('started')\n")
        p = run("run", "--timeout", "1", path)
        self.assertEqual((p.returncode, p.stdout), (1, "started\n"))
        self.assertIn("timeout", p.stderr)

    def test_sys_exit_0_and_none_are_ok(self):
        for code in ("sys.exit()", "sys.exit(0)", "sys.exit(None)", "raise SystemExit"):
            with self.subTest(code=code):
                p = run("run", self.file("import sys\nprint('before')\n%s\nprint('after')\n"
                                         % code))
                self.assertEqual((p.returncode, p.stdout), (0, "before\n"), p.stderr)
                self.assertNotIn("Traceback", p.stderr)
                results, p = run_json(extra=[self.file("import sys\n%s\n" % code)])
                self.assertEqual((results[0]["status"], p.returncode), ("ok", 0))

    def test_sys_exit_n_is_the_exit_status_without_a_traceback(self):
        p = run("run", self.file("import sys\nsys.exit(3)\n"))
        self.assertEqual((p.returncode, p.stdout), (3, ""))
        self.assertNotIn("Traceback", p.stderr)
        results, p = run_json(extra=[self.file("import sys\nsys.exit(3)\n")])
        self.assertEqual(p.returncode, 3)
        self.assertEqual((results[0]["status"], results[0]["error"]["name"],
                          results[0]["error"]["exit"]), ("error", "SystemExit", 3))
        p = run("run", self.file("import sys\nsys.exit('no input given')\n"))
        self.assertEqual((p.returncode, p.stderr), (1, "no input given\n"))
        for code, status in (("300", 44), ("-1", 255), ("True", 1)):
            p = run("run", self.file("import sys\nsys.exit(%s)\n" % code))
            self.assertEqual((p.returncode, p.stdout, p.stderr), (status, "", ""), code)
        # a -c snippet that failed first: "some snippet failed"
        p = run("run", "-c", "1 / 0", self.file("import sys\nsys.exit(3)\n"))
        self.assertEqual(p.returncode, 1)
        # a -c snippet's SystemExit is an error as it was
        p = run("run", "-c", "import sys; sys.exit(0)")
        self.assertEqual(p.returncode, 1)
        self.assertIn("SystemExit", p.stderr)

    def test_sys_exit_past_a_c_long_is_255_as_python3_says(self):
        for code in ("2**64", "-2**64", "10**5000"):
            p = run("run", self.file("import sys\nsys.exit(%s)\n" % code))
            self.assertEqual((p.returncode, p.stdout, p.stderr), (255, "", ""), code)

    def test_a_forked_child_that_exits_with_a_huge_status_ends_as_a_child(self):
        # os._exit takes no int past a C int: the child must still end, not
        # go on as a second kernel that answers for the snippet.
        path = self.file("import os, sys\npid = os.fork()\nif pid == 0:\n"
                         "    sys.exit(2**70)\n"
                         "print('child status', os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n")
        p = run("run", path)
        self.assertEqual((p.returncode, p.stdout), (0, "child status 255\n"), p.stderr)
        self.assertNotIn("OverflowError", p.stderr)

    def test_options_after_file_go_before_it(self):
        path = self.file("import sys\nprint(sys.argv[1:])\n")
        for opt in ("--json", "--timeout=3", "-c", "--via"):
            with self.subTest(opt=opt):
                p = run("run", path, "x", opt, "1")
                self.assertEqual((p.returncode, p.stdout), (2, ""))
                self.assertTrue(p.stderr.startswith("ptybox: run: options go before FILE"),
                                p.stderr)
                self.assertIn("Try 'ptybox run --help'.", p.stderr)
        p = run("run", path, "--", "--json", "-c")
        self.assertEqual((p.returncode, p.stdout), (0, "['--json', '-c']\n"), p.stderr)
        p = run("run", "--timeout", "30", "--", path, "y")
        self.assertEqual((p.returncode, p.stdout), (0, "['y']\n"), p.stderr)


class TerminalSizeTest(TestCase):
    SHOW = ("import os, shutil\nprint(os.environ.get('COLUMNS'), os.environ.get('LINES'),"
            " tuple(shutil.get_terminal_size()))")

    def test_the_code_sees_the_size_of_the_users_terminal(self):
        rc, got, _ = run_tty("run", "-c", self.SHOW, size=(101, 33))
        self.assertEqual((rc, got), (0, b"101 33 (101, 33)\n"))

    def test_without_a_terminal_nothing_is_set(self):
        p = run("run", "-c", self.SHOW)
        self.assertEqual(p.stdout, "None None (80, 24)\n")

    def test_resize_changes_them_for_the_next_snippet_and_after_a_restart(self):
        s = Serve()
        try:
            self.assertOk(s.exec("import os; os.environ.get('COLUMNS')", id=1))
            s.send({"id": 2, "op": "resize", "cols": 132, "rows": 50})
            self.assertEqual(s.recv(), {"id": 2, "ok": True})
            r = s.exec("import os; (os.environ['COLUMNS'], os.environ['LINES'])", id=3)
            self.assertEqual(r["result"]["text/plain"], "('132', '50')")
            s.restart(4)
            r = s.exec("import os; os.environ['COLUMNS']", id=5)
            self.assertEqual(r["result"]["text/plain"], "'132'")
            for bad in ({"cols": 0, "rows": 5}, {"cols": 80}, {"cols": 80.5, "rows": 5},
                        {"cols": "80", "rows": 5}, {"cols": 65536, "rows": 5}):
                s.send(dict(bad, id=6, op="resize"))
                reply = s.recv()
                self.assertEqual((reply["id"], reply["code"]), (6, "usage"), reply)
        finally:
            s.close()


class TtyTest(TestCase):
    """--tty: the code's stdout and stderr are a terminal of its own."""

    def test_the_code_writes_to_a_terminal(self):
        rc, got, _ = run_tty("run", "--tty", "-c",
                             "import os, sys; print(os.isatty(1), os.isatty(2),"
                             " sys.stdout.isatty(), os.get_terminal_size(1))",
                             size=(90, 30))
        self.assertEqual((rc, got),
                         (0, b"True True True os.terminal_size(columns=90, lines=30)\n"))

    def test_a_progress_bar_redraws_its_line(self):
        # (without --tty a CR alone shows as \x0d: see TerminalTest)
        rc, got, _ = run_tty("run", "--tty", "-c",
                             "import sys\nfor i in range(3): sys.stdout.write('\\r%d%%' % (i * 50));"
                             " sys.stdout.flush()\nprint()")
        self.assertEqual((rc, got), (0, b"\r0%\r50%\r100%\n"))

    def test_colours_pass_and_hostile_sequences_are_still_filtered(self):
        rc, got, _ = run_tty("run", "--tty", "-c", "print(%r)" % TerminalTest.HOSTILE)
        self.assertEqual((rc, got), (0, TerminalTest.SHOWN + b"\n"))

    def test_stdout_and_stderr_are_one_terminal_in_order(self):
        code = ("import sys\nfor i in range(30):\n    print('o%d' % i)\n"
                "    print('e%d' % i, file=sys.stderr)\n")
        rc, got, piped = run_tty("run", "--tty", "-c", code, stderr_tty=False)
        want = "".join("o%d\ne%d\n" % (i, i) for i in range(30)).encode()
        self.assertEqual((rc, got, piped), (0, want, b""))

    def test_order_holds_when_the_idle_flush_meets_the_other_stream(self):
        # A print every 5 ms: sys.stdout's text waits for the watchdog's idle
        # flush, which flushed stderr's newer text first ("e21o21"), with a
        # terminal of the kernel's own and with pipes alike.
        code = ("import sys, time\nfor i in range(300):\n    print('o%d' % i)\n"
                "    time.sleep(0.0049)\n    print('e%d' % i, file=sys.stderr)\n")
        want = "".join("o%d\ne%d\n" % (i, i) for i in range(300)).encode()
        for args in (["--tty"], []):
            rc, got, _ = run_tty("run", *args, "-c", code, timeout=120)
            self.assertEqual(rc, 0)
            if got != want:
                at = next(i for i in range(len(want)) if got[i:i + 1] != want[i:i + 1])
                self.fail("%s: %r where %r was due" % (args, got[at - 20:at + 20],
                                                       want[at - 20:at + 20]))

    def test_no_controlling_terminal_and_a_fresh_kernel_keeps_it(self):
        rc, got, _ = run_tty("run", "--tty", "-c",
                             "try:\n    open('/dev/tty')\nexcept OSError as e:\n"
                             "    print(e.errno)",
                             "-c", "import os; os._exit(1)", "-c", "import os; print(os.isatty(1))")
        self.assertEqual(rc, 1)  # (the os._exit snippet crashed)
        self.assertTrue(got.startswith(b"6\n"), got)  # ENXIO
        self.assertTrue(got.endswith(b"True\n"), got)

    def test_what_a_dying_kernel_wrote_last_is_shown(self):
        # A terminal hands its bytes over a moment after they were written:
        # the kernel's death must not come before them.
        code = ("import os, sys\nfor i in range(2000):\n    sys.stdout.write('line %d\\n' % i)\n"
                "sys.stdout.flush()\nos._exit(3)")
        for attempt in range(10):
            rc, got, _ = run_tty("run", "--tty", "--max-output", "10M", "-c", code)
            self.assertEqual(rc, 1)
            self.assertIn(b"line 1999\n", got, (attempt, got[-200:]))

    def test_a_picture_comes_after_the_text_written_before_it(self):
        # FIONREAD cannot tell the kernel that the relay read its terminal:
        # the relay says so (T), or the picture's path came amid the text.
        code = ("class P:\n    def _repr_png_(self): return b'\\x89PNG\\r\\n\\x1a\\n'\n"
                "for i in range(300): print('line', i)\ndisplay(P())\nprint('after')\n")
        with tempfile.TemporaryDirectory() as d:
            for attempt in range(5):
                rc, got, _ = run_tty("run", "--tty", "--output-dir", d, "-c", code)
                want = b"line 299\n%s/ptybox-%d.png\nafter\n" % (d.encode(), attempt + 1)
                self.assertEqual(rc, 0)
                self.assertTrue(got.endswith(want), (attempt, got[-120:]))

    def test_reading_the_terminal_ends_at_once(self):
        rc, got, _ = run_tty("run", "--tty", "--timeout", "5", "-c",
                             "import os; print(repr(os.read(1, 5)), repr(open(2).read()))")
        self.assertEqual((rc, got), (0, b"b'' ''\n"))

    def test_without_a_users_terminal_the_codes_terminal_is_80x24(self):
        code = "import os, shutil; print(tuple(os.get_terminal_size()), os.isatty(1))"
        p = run("run", "--tty", "-c", code)           # (stdout and stderr: pipes)
        self.assertEqual((p.returncode, p.stdout), (0, "(80, 24) True\n"), p.stderr)
        rc, got, _ = run_tty("run", "--tty", "-c", code, size=(100, 30))
        self.assertEqual((rc, got), (0, b"(100, 30) True\n"))

    def test_tty_is_refused_with_json(self):
        p = run("run", "--tty", "--json", "-c", "1")
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertIn("--tty is for human output", p.stderr)


class WarningTest(TestCase):
    def test_limits_that_cannot_be_enforced_are_said_once_each(self):
        p = run("run", "--via", "none", "--memory", "512M", "--pids", "9", "--net",
                "--memory", "1G", "-c", "print(1)")
        self.assertEqual((p.returncode, p.stdout), (0, "1\n"), p.stderr)
        warnings = [l for l in p.stderr.splitlines() if "not enforced" in l or "changes nothing" in l]
        self.assertEqual(warnings, [
            "ptybox: warning: --memory is not enforced with --via none: only the embedded "
            "sandbox (--via local) sets limits",
            "ptybox: warning: --pids is not enforced with --via none: only the embedded "
            "sandbox (--via local) sets limits",
            "ptybox: warning: --net changes nothing with --via none: the code has the network "
            "of the host it runs on"])

    def test_defaults_and_the_sandbox_say_nothing(self):
        for args in (["--via", "none"], ["--via", "local", "--memory", "512M"]):
            with self.subTest(args=args):
                p = run("run", *args, "-c", "1")
                self.assertNotIn("not enforced", p.stderr)

    def test_exec_transports_are_warned_too(self):
        p = run("run", "--via", "exec:env", "--cpus", "0.5", "--tmp-size", "64M", "-c", "1",
                via=False)
        self.assertIn("ptybox: warning: --cpus is not enforced with --via exec:", p.stderr)
        self.assertIn("ptybox: warning: --tmp-size is not enforced with --via exec:", p.stderr)


class OptionValueTest(TestCase):
    def test_an_option_in_place_of_a_value_is_a_missing_value(self):
        for args, said in (
                (["run", "--via", "--json", "-c", "1"],
                 "run: --via needs a value (got the option '--json')"),
                (["run", "--timeout", "--json"],
                 "run: --timeout needs a value (got the option '--json')"),
                (["run", "--python", "-c", "1"],
                 "run: --python needs a value (got the option '-c')"),
                (["serve", "--via", "--stdio"],
                 "serve: --via needs a value (got the option '--stdio')"),
                (["serve", "--stdio", "--pool", "--via"],
                 "serve: --pool needs a value (got the option '--via')"),
                (["new", "s", "--memory", "--net"],
                 "new: --memory needs a value (got the option '--net')")):
            with self.subTest(args=args):
                p = run(*args, via=False, input="")
                self.assertEqual((p.returncode, p.stdout), (2, ""), p.stderr)
                self.assertEqual(p.stderr.splitlines(),
                                 ["ptybox: " + said, "Try 'ptybox %s --help'." % args[0]])

    def test_code_may_start_with_a_dash(self):
        p = run("run", "-c", "-1")
        self.assertEqual((p.returncode, p.stdout), (0, "-1\n"), p.stderr)

    def test_serve_without_stdio_says_where_help_is(self):
        p = run("serve", via=False)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr.splitlines(),
                         ["ptybox: serve: say --stdio or --http [ADDR]",
                          "Try 'ptybox serve --help'."])
        self.assertIn("Exit status:", run("serve", "--help", via=False).stdout)


class HelpTest(TestCase):
    def test_version_and_help_exit_0(self):
        for args in (["--version"], ["--help"], ["run", "--help"], ["serve", "--help"]):
            p = run(*args, via=False)
            self.assertEqual(p.returncode, 0, args)
            self.assertTrue(p.stdout.strip(), args)
        self.assertRegex(run("--version", via=False).stdout, r"^ptybox \d+\.\d+\.\d+\n$")
        self.assertIn("--timeout", run("run", "--help", via=False).stdout)
        self.assertIn("-j, --json", run("run", "--help", via=False).stdout)
        self.assertIn("--tty", run("run", "--help", via=False).stdout)


if __name__ == "__main__":
    unittest.main()
