"""A snippet's own input (issue 16): the env, cwd and stdin members of exec
on the server protocol, `ptybox exec --env/--cwd` and a piped standard input,
and `ptybox run`'s standard input as its first snippet's."""
import base64
import os
import subprocess
import sys
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

    def test_more_than_16_mib_is_a_usage_error(self):
        p = run("run", "-c", "print('ran')", input=b"x" * ((16 << 20) + 1))
        self.assertEqual((p.returncode, p.stdout), (2, b""))
        self.assertIn(b"standard input: larger than 16 MiB", p.stderr)


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
        p = self.srv("exec", "in", "--cwd", "x", "--env", "PTYBOX_E=1", "--env", "PTYBOX_E=2",
                     "-c", "import os, sys; print(os.getcwd(), os.environ['PTYBOX_E'], "
                     "sys.stdin.read())", input="piped")
        self.assertEqual((p.returncode, p.stdout), (0, "/tmp/x 2 piped\n"), p.stderr)
        p = self.srv("exec", "in", "-c", "print(os.getcwd(), os.environ.get('PTYBOX_E'))",
                     input="")
        self.assertEqual((p.returncode, p.stdout), (0, "/tmp None\n"), p.stderr)

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
