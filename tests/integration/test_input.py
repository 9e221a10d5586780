"""A snippet's own input (issue 16): the env, cwd and stdin members of exec
on the server protocol, `ptybox exec --env/--cwd` and a piped standard input,
and `ptybox run`'s standard input as its first snippet's."""
import base64
import hashlib
import os
import resource
import select
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from ptybox_test import PTYBOX, VIA, Serve, TestCase, run  # noqa: E402
from test_server import Server  # noqa: E402


class InputTest(TestCase):
    """Over serve --stdio, in the sandbox users get; NoneInputTest: --via none."""
    via = VIA

    @classmethod
    def setUpClass(cls):
        cls.s = Serve(via=cls.via)
        cls.n = 0

    @classmethod
    def tearDownClass(cls):
        cls.s.close()

    def exec(self, code, **kw):
        type(self).n += 1
        return self.s.exec(code, self.n, **kw)

    def out(self, code, **kw):
        r = self.exec(code, **kw)
        self.assertOk(r)
        return r["stdout"]

    def test_env_is_for_one_snippet_and_its_subprocesses(self):
        code = ("import os, subprocess; print(os.environ['PTYBOX_T1']); "
                "print(subprocess.run(['sh', '-c', 'echo $PTYBOX_T1'], "
                "capture_output=True, text=True).stdout, end='')")
        self.assertEqual(self.out(code, env={"PTYBOX_T1": "one two"}), "one two\none two\n")
        self.assertEqual(self.out("import os; print(os.environ.get('PTYBOX_T1'))"), "None\n")
        self.assertEqual(self.out("import os; print(os.getenv('PTYBOX_T1'))"), "None\n")

    def test_env_overrides_then_restores_also_when_it_raised(self):
        self.out("import os; os.environ['PTYBOX_T2'] = 'old'")
        r = self.exec("import os; print(os.environ['PTYBOX_T2']); raise ValueError('no')",
                      env={"PTYBOX_T2": "new", "PTYBOX_T3": ""})
        self.assertEqual((r["status"], r["stdout"], r["error"]["name"]),
                         ("error", "new\n", "ValueError"))
        self.assertEqual(self.out("print(os.environ['PTYBOX_T2'], 'PTYBOX_T3' in os.environ)"),
                         "old False\n")

    def test_env_is_restored_after_an_interrupted_snippet(self):
        r = self.exec("import time; time.sleep(30)", env={"PTYBOX_T4": "x"}, timeout=0.5)
        self.assertEqual(r["status"], "timeout", r)
        self.assertEqual(self.out("import os; print(os.environ.get('PTYBOX_T4'))"), "None\n")

    def test_cwd_is_for_one_snippet(self):
        self.out("import os; os.chdir('/tmp'); os.makedirs('in_sub', exist_ok=True)")
        self.assertEqual(self.out("import os; print(os.getcwd())", cwd="in_sub"),
                         "/tmp/in_sub\n")
        self.assertEqual(self.out("print(os.getcwd())"), "/tmp\n")
        # a snippet that goes elsewhere itself is brought back too
        self.out("os.chdir('/')", cwd="in_sub")
        self.assertEqual(self.out("print(os.getcwd())"), "/tmp\n")

    def test_a_missing_cwd_is_the_snippets_error(self):
        r = self.exec("print('ran')", cwd="no/such/folder")
        self.assertEqual((r["status"], r["stdout"], r["error"]["name"]),
                         ("error", "", "FileNotFoundError"), r)
        self.assertIn("no/such/folder", r["error"]["value"])
        self.assertEqual(self.out("print('alive')"), "alive\n")

    def test_stdin_through_every_way_of_reading_it(self):
        self.assertEqual(self.out("import sys; print(repr(sys.stdin.read()))", stdin="a\nb\n"),
                         "'a\\nb\\n'\n")
        self.assertEqual(self.out("print(input('? '), input())", stdin="x\ny\n"), "? x y\n")
        self.assertEqual(self.out("import os; print(os.read(0, 100))", stdin="raw"),
                         "b'raw'\n")
        self.assertEqual(self.out("import sys; print(sys.stdin.buffer.read())", stdin="é"),
                         "b'\\xc3\\xa9'\n")
        self.assertEqual(self.out("import subprocess; print(subprocess.run(['cat'], "
                                  "capture_output=True).stdout)", stdin="to cat"),
                         "b'to cat'\n")

    def test_a_megabyte_of_stdin(self):
        data = "0123456789abcdef" * (1 << 16)
        self.assertEqual(self.out("import sys, hashlib; d = sys.stdin.read(); "
                                  "print(len(d), hashlib.sha1(d.encode()).hexdigest())",
                                  stdin=data),
                         "%d %s\n" % (len(data), __import__("hashlib").sha1(
                             data.encode()).hexdigest()))

    def test_without_stdin_reading_is_end_of_file_at_once(self):
        self.assertEqual(self.out("import sys; print(repr(sys.stdin.read()))",
                                  timeout=10), "''\n")
        self.assertEqual(self.out("import os; print(os.read(0, 10))", timeout=10), "b''\n")
        r = self.exec("input('name? ')", timeout=10)
        self.assertEqual((r["status"], r["error"]["name"], r["error"]["value"]),
                         ("error", "EOFError", "EOF when reading a line"), r)
        # a later snippet does not see an earlier one's stdin
        self.out("1", stdin="only once")
        self.assertEqual(self.out("import sys; print(repr(sys.stdin.read()))"), "''\n")

    def test_a_thread_of_an_earlier_snippet_keeps_its_own_stdin(self):
        self.out("import sys, threading; kept = sys.stdin; go = threading.Event(); got = []\n"
                 "t = threading.Thread(target=lambda: (go.wait(), got.append(kept.read())))\n"
                 "t.start()", stdin="mine")
        self.assertEqual(self.out("go.set(); t.join(10); print(got, repr(sys.stdin.read()))",
                                  stdin="yours"),
                         "['mine'] 'yours'\n")

    def test_bad_members_are_usage_errors(self):
        for bad in ({"env": ["A=1"]}, {"env": {"A=B": "1"}}, {"env": {"": "1"}},
                    {"env": {"A": 1}}, {"stdin": 5}, {"cwd": ""}, {"cwd": 3}):
            r = self.exec("print(1)", **bad)
            self.assertEqual(r.get("code"), "usage", (bad, r))
        self.assertEqual(self.out("print('alive')"), "alive\n")


class NoneInputTest(InputTest):
    via = "none"


class DriverWireTest(TestCase):
    """The driver's own exec members: env, cwd, stdin_b64 (ptybox-protocol(7))."""

    def test_members_and_their_refusals(self):
        from test_driver import Driver
        d = Driver()
        try:
            d.send({"id": 1, "op": "exec", "code": "import os, sys; (os.environ['X'], "
                    "os.getcwd(), sys.stdin.buffer.read())", "env": {"X": "x"}, "cwd": "/",
                    "stdin_b64": base64.b64encode(b"\x00\xff").decode()})
            r = d.replies(1)[0]
            self.assertEqual((r["status"], r["result"]),
                             ("ok", {"text/plain": "('x', '/', b'\\x00\\xff')"}), r)
            for bad, said in (({"env": {"A=B": "1"}}, "env must be"),
                              ({"env": {"A": 1}}, "env must be"),
                              ({"env": ["A=1"]}, "env must be"),
                              ({"cwd": ""}, "cwd must be"),
                              ({"stdin_b64": 7}, "stdin_b64 must be"),
                              ({"stdin_b64": "abc"}, "not valid base64")):
                d.send(dict(id=2, op="exec", code="1", **bad))
                f = d.replies(1)[0]
                self.assertEqual((f["type"], f.get("broken")), ("error", True), (bad, f))
                self.assertIn(said, f["message"])
            d.send({"id": 3, "op": "exec", "code": "import sys; sys.stdin.read()"})
            r = d.replies(1)[0]
            self.assertEqual((r["status"], r["result"]), ("ok", {"text/plain": "''"}), r)
        finally:
            d.close()


class DriverStreamTest(TestCase):
    """The driver's stdin stream: stdin_stream, the stdin op and its ack."""

    def frames_until(self, d, kinds):
        got = {}
        while set(kinds) - set(got):
            f = d.frame()
            if f["type"] in kinds:
                self.assertNotIn(f["type"], got, f)
                got[f["type"]] = f
        return got

    def test_stream_acks_flow_control_eof_and_a_fresh_kernel(self):
        from test_driver import Driver
        d = Driver()
        try:
            # A snippet waiting for a line gets it as the chunk comes.
            d.send({"id": 1, "op": "exec", "stdin_stream": True, "code": "input()"})
            d.send({"id": "w1", "op": "stdin", "data": base64.b64encode(b"hi\nrest").decode(),
                    "eof": False})
            got = self.frames_until(d, ("stdin", "result"))
            self.assertEqual(got["stdin"]["id"], "w1")
            self.assertEqual(got["result"]["result"], {"text/plain": "'hi'"}, got)
            d.send({"id": "w1b", "op": "stdin", "data": "@@@@", "eof": False})
            f = d.replies(1)[0]
            self.assertEqual((f["type"], f.get("broken")), ("error", None), f)
            self.assertIn("not valid base64", f["message"])
            # One chunk pending at most: the pipe (1 MiB) full, a second waits
            # unacked, a third is an error that breaks nothing.
            mib = base64.b64encode(b"x" * (1 << 20)).decode()
            d.send({"id": "w2", "op": "stdin", "data": mib, "eof": False})
            self.assertEqual(self.frames_until(d, ("stdin",))["stdin"]["id"], "w2")
            d.send({"id": "w3", "op": "stdin", "data": mib, "eof": False})
            d.send({"id": "w4", "op": "stdin", "data": "", "eof": True})
            f = d.replies(1)[0]
            self.assertEqual((f["type"], f["id"], f.get("broken")), ("error", "w4", None), f)
            self.assertIn("still pending", f["message"])
            d.send({"id": 2, "op": "exec", "stdin_stream": True,
                    "code": "import sys; len(sys.stdin.read(4 + (2 << 20)))"})
            got = self.frames_until(d, ("stdin", "result"))
            self.assertEqual(got["stdin"]["id"], "w3")
            self.assertEqual(got["result"]["result"], {"text/plain": str(4 + (2 << 20))}, got)
            d.send({"id": "w5", "op": "stdin", "data": "", "eof": True})
            self.assertEqual(self.frames_until(d, ("stdin",))["stdin"]["id"], "w5")
            d.send({"id": "w6", "op": "stdin", "data": "bGF0ZQ==", "eof": False})
            f = d.replies(1)[0]
            self.assertEqual((f["type"], f.get("broken")), ("error", None), f)
            self.assertIn("after its end", f["message"])
            # A snippet without stdin_stream reads end of file, as one after eof does;
            # so does a fresh kernel's.
            d.send({"id": 3, "op": "exec", "code": "import sys; sys.stdin.read()"},
                   {"id": 4, "op": "exec", "stdin_stream": True,
                    "code": "import sys; (sys.stdin.read(), sys.stdin.readline())"})
            r = d.replies(2)
            d.send({"id": 5, "op": "restart"})
            self.assertEqual(self.frames_until(d, ("ready",))["ready"]["restart"], 5)
            d.send({"id": 6, "op": "exec", "stdin_stream": True, "code": "import os; os.read(0, 10)"})
            r += d.replies(1)
            self.assertEqual([x["result"] for x in r],
                             [{"text/plain": "''"}, {"text/plain": "('', '')"},
                              {"text/plain": "b''"}], r)
        finally:
            d.close()


class RunStdinTest(TestCase):
    def test_a_piped_stdin_is_the_first_snippets(self):
        p = run("run", "-c", "import sys; print(sys.stdin.read())",
                "-c", "print(repr(sys.stdin.read()))", input="1,2\n")
        self.assertEqual((p.returncode, p.stdout), (0, "1,2\n\n''\n"), p.stderr)

    def test_run_file_reads_it_too(self):
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "input_cat.py")
        with open(path, "w") as f:
            f.write("import sys\nfor line in sys.stdin:\n    print(line.upper(), end='')\n")
        try:
            with open(path) as f:
                p = subprocess.run([PTYBOX, "run", "--via", VIA, path], stdin=f,
                                   capture_output=True, text=True, timeout=60)
        finally:
            os.unlink(path)
        self.assertEqual((p.returncode, p.stdout), (0, "IMPORT SYS\nFOR LINE IN SYS.STDIN:\n"
                                                    "    PRINT(LINE.UPPER(), END='')\n"),
                         p.stderr)

    def test_code_from_stdin_leaves_the_snippet_none(self):
        p = run("run", "-", input="import sys; print(repr(sys.stdin.read()))\n")
        self.assertEqual((p.returncode, p.stdout), (0, "''\n"), p.stderr)

    def test_dev_null_and_no_stdin_are_end_of_file(self):
        p = subprocess.run([PTYBOX, "run", "--via", VIA, "-c", "input()"],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn("EOFError: EOF when reading a line", p.stderr)

    def popen(self, *args):
        return subprocess.Popen([PTYBOX, "run", "--via", VIA] + list(args),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)

    def read_line(self, f, deadline=30):
        """One line of f, or fail after deadline seconds."""
        end = time.monotonic() + deadline
        buf = b""
        while not buf.endswith(b"\n"):
            left = end - time.monotonic()
            self.assertGreater(left, 0, "no line within %s s (got %r)" % (deadline, buf))
            if select.select([f], [], [], left)[0]:
                b = os.read(f.fileno(), 1)
                self.assertTrue(b, "end of output (got %r)" % buf)
                buf += b
        return buf

    def test_an_open_pipe_never_written_does_not_hold_up_a_run(self):
        # As (sleep 30) | ptybox run -c 'print(1)': python3 -c 'print(1)' ends at once.
        p = self.popen("-c", "print(1)")
        try:
            t0 = time.monotonic()
            self.assertEqual(p.wait(timeout=30), 0)
            self.assertLess(time.monotonic() - t0, 15)
            self.assertEqual(p.stdout.read(), b"1\n")
        finally:
            p.kill()
            p.wait()
            for f in (p.stdin, p.stdout, p.stderr):
                f.close()

    def test_a_line_reaches_a_reading_snippet_as_it_is_written(self):
        p = self.popen("-c", "import sys\nfor line in sys.stdin:\n    print('got', line.strip(), "
                       "flush=True)", "-c", "print('after', repr(sys.stdin.read()))")
        try:
            for word in (b"one", b"two"):
                p.stdin.write(word + b"\n")
                p.stdin.flush()         # (the pipe stays open)
                self.assertEqual(self.read_line(p.stdout), b"got " + word + b"\n")
            p.stdin.close()
            self.assertEqual(p.wait(timeout=30), 0, p.stderr.read())
            self.assertEqual(p.stdout.read(), b"after ''\n")
        finally:
            p.kill()
            p.wait()
            for f in (p.stdin, p.stdout, p.stderr):
                f.close()

    def test_snippets_share_one_stream_in_order(self):
        p = run("run", "-c", "print(input())", "-c", "import os; print(os.read(0, 0))",
                "-c", "print(input(), input())", "-c", "import sys; print(repr(sys.stdin.read()))",
                "-c", "print(repr(sys.stdin.read()), repr(sys.stdin.readline()))",
                "-c", "input()", input="a\nb\nc\nrest\n")
        self.assertEqual(p.stdout, "a\nb''\nb c\n'rest\\n'\n'' ''\n", p.stderr)
        self.assertEqual(p.returncode, 1)
        self.assertIn("EOFError: EOF when reading a line", p.stderr)

    def test_run_c_then_file_the_file_reads_what_is_left(self):
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "input_rest.py")
        with open(path, "w") as f:
            f.write("import sys\nprint('file:', sys.stdin.read().split())\n")
        try:
            p = run("run", "-c", "print('first:', input())", path, input="1\n2\n3\n")
        finally:
            os.unlink(path)
        self.assertEqual((p.returncode, p.stdout), (0, "first: 1\nfile: ['2', '3']\n"),
                         p.stderr)

    def test_50_mb_streamed_with_bounded_memory(self):
        data = os.urandom(50 << 20)
        p = run("run", "-c", "import sys, hashlib; "
                "print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())",
                input=data, timeout=120)
        self.assertEqual((p.returncode, p.stdout.decode()),
                         (0, hashlib.sha256(data).hexdigest() + "\n"), p.stderr)
        # Memory bounded on every side (ptybox, the relay, the kernel): a chunk
        # at a time, when the code reads it a piece at a time too. Measured in
        # a process of its own, whose children are this run alone.
        code = ("import sys, hashlib\nh = hashlib.sha256()\n"
                "for b in iter(lambda: sys.stdin.buffer.read(1 << 16), b''):\n    h.update(b)\n"
                "print(h.hexdigest())")
        probe = ("import resource, subprocess, sys\n"
                 "p = subprocess.run(sys.argv[1:], stdin=sys.stdin, capture_output=True)\n"
                 "print(p.returncode, p.stdout.decode().strip(), "
                 "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
        # (ASan's quarantine would hold every freed chunk: 256 MiB of them)
        env = dict(os.environ, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "")
                   + ":quarantine_size_mb=4")

        def peak_for(data):
            q = subprocess.run([sys.executable, "-c", probe, PTYBOX, "run", "--via", VIA,
                                "-c", code], input=data, capture_output=True, timeout=120,
                               env=env)
            rc, digest, peak = q.stdout.decode().split()
            self.assertEqual((rc, digest), ("0", hashlib.sha256(data).hexdigest()), q.stderr)
            return int(peak)
        # Beside the same run with 1 KiB of input: what 50 MB add (a build with
        # ASan has a bigger floor of its own).
        base, peak = peak_for(data[:1024]), peak_for(data)
        self.assertLess(peak - base, 24 << 10,
                        "a process of the run peaked at %d KiB, %d with 1 KiB" % (peak, base))

    def test_a_regular_file_is_streamed_too(self):
        with tempfile.TemporaryFile() as f:
            f.write(b"x" * (3 << 20) + b"\nend\n")
            f.seek(0)
            p = subprocess.run([PTYBOX, "run", "--via", VIA, "-c", "print(len(input()))",
                                "-c", "print(input())"], stdin=f, capture_output=True,
                               text=True, timeout=60)
        self.assertEqual((p.returncode, p.stdout), (0, "%d\nend\n" % (3 << 20)), p.stderr)

    def test_stdin_over_max_file_size_is_read_whole(self):
        # F8: the stream is a pipe, never a file that RLIMIT_FSIZE counts.
        p = run("run", "--max-file-size", "1M", "-c", "import sys; print(len(sys.stdin.read()))",
                input="a" * 3000000)
        self.assertEqual((p.returncode, p.stdout), (0, "3000000\n"), p.stderr)


class ExecVerbTest(TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server()
        p = cls.srv("new", "in")
        assert p.returncode == 0, p.stderr

    @classmethod
    def tearDownClass(cls):
        cls.srv.close()

    def test_exec_cwd_env_and_stdin(self):
        self.srv("exec", "in", "-c", "import os; os.chdir('/tmp'); os.makedirs('x', "
                 "exist_ok=True)", input="")
        p = self.srv("exec", "in", "-i", "--cwd", "x", "--env", "PTYBOX_E=1", "--env", "PTYBOX_E=2",
                     "-c", "import os, sys; print(os.getcwd(), os.environ['PTYBOX_E'], "
                     "sys.stdin.read())", input="piped")
        self.assertEqual((p.returncode, p.stdout), (0, "/tmp/x 2 piped\n"), p.stderr)
        p = self.srv("exec", "in", "-c", "print(os.getcwd(), os.environ.get('PTYBOX_E'))",
                     input="")
        self.assertEqual((p.returncode, p.stdout), (0, "/tmp None\n"), p.stderr)

    def test_exec_reads_stdin_only_with_i(self):
        code = "import sys; print(repr(sys.stdin.read()))"
        p = self.srv("exec", "in", "-c", code, input="not read")
        self.assertEqual((p.returncode, p.stdout), (0, "''\n"), p.stderr)
        p = self.srv("exec", "in", "--stdin", "-c", code, input="read")
        self.assertEqual((p.returncode, p.stdout), (0, "'read'\n"), p.stderr)
        # An open pipe that is never written does not hold exec up (docker exec's way).
        q = self.srv.popen("exec", "in", "-c", "print(2)", stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            self.assertEqual(q.wait(timeout=30), 0)
            self.assertEqual(q.stdout.read(), b"2\n")
        finally:
            q.kill()
            q.wait()
            for f in (q.stdin, q.stdout, q.stderr):
                f.close()
        p = self.srv("exec", "in", "-i", "-", input="print(1)")
        self.assertEqual(p.returncode, 2)
        self.assertIn("-i and - both take standard input", p.stderr)

    def test_exec_16_mib_of_stdin_under_128m(self):
        # F3: the documented cap fits a small session; its state lives on.
        p = self.srv("new", "small", "--memory", "128M", "--max-file-size", "1M")
        self.assertEqual(p.returncode, 0, p.stderr)
        try:
            p = self.srv("exec", "small", "-i", "-c", "x = 5", "-c",
                         "import sys; print(len(sys.stdin.read()))",
                         input="a" * (16 << 20), timeout=120)
            self.assertEqual((p.returncode, p.stdout), (0, "0\n"), p.stderr)
            # F8: over --max-file-size (a pipe then, not a memory file)
            p = self.srv("exec", "small", "-i", "-c",
                         "import sys; print(len(sys.stdin.buffer.read()), x)",
                         input="b" * (16 << 20), timeout=120)
            self.assertEqual((p.returncode, p.stdout), (0, "%d 5\n" % (16 << 20)), p.stderr)
        finally:
            self.srv("kill", "small")

    def test_exec_bad_options(self):
        for args, said in ((["--env", "NOEQUALS"], "expected NAME=VALUE"),
                           (["--env", "=1"], "expected NAME=VALUE"),
                           (["--cwd", ""], "--cwd needs a folder")):
            p = self.srv("exec", "in", *args, "-c", "1", input="")
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(said, p.stderr)
        p = self.srv("result", "in", "--cwd", "x")
        self.assertEqual(p.returncode, 2)
        self.assertIn("is for exec", p.stderr)


if __name__ == "__main__":
    unittest.main()
