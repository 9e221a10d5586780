"""Packages and escapes: the session's package folder, `%pip install` from a
wheel folder (a wheel made here by hand: no network), the one-line error
with neither network nor wheels, `!command` and `_exit_code`, other
%magics, and the lines that must be left alone."""
import base64
import hashlib
import io
import time
import unittest
import zipfile

from ptybox_test import Serve, TestCase, run, run_json

WHEELS = "/tmp/wheels"  # (in the sandbox: written there by a snippet)


def wheel(name="thepkg", version="1.0", code="VALUE = 42\n"):
    """(file name, bytes) of a minimal pure-Python wheel: the package,
    METADATA, WHEEL and RECORD (each file's sha256 and size)."""
    info = "%s-%s.dist-info" % (name, version)
    files = {
        "%s/__init__.py" % name: code.encode(),
        info + "/METADATA": ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
                             % (name, version)).encode(),
        info + "/WHEEL": b"Wheel-Version: 1.0\nGenerator: test_packages\n"
                         b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        record.append("%s,sha256=%s,%d" % (path, digest.decode(), len(data)))
    record.append(info + "/RECORD,,")
    files[info + "/RECORD"] = ("\n".join(record) + "\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
    return "%s-%s-py3-none-any.whl" % (name, version), buf.getvalue()


def put_wheel(folder=WHEELS, **kw):
    """A snippet that writes the wheel into folder, in the sandbox (until
    --wheels mounts one, the tests bring it in so)."""
    name, data = wheel(**kw)
    return ("import os, base64\nos.makedirs(%r, exist_ok=True)\n"
            "open(os.path.join(%r, %r), 'wb').write(base64.b64decode(%r))\nNone"
            % (folder, folder, name, base64.b64encode(data).decode()))


class PipTest(TestCase):
    def test_pip_install_from_a_wheel_folder_then_import(self):
        results, p = run_json(
            put_wheel(), "%pip install thepkg",
            "import thepkg; print(thepkg.VALUE, thepkg.__file__, _exit_code)",
            extra=("--env", "PTYBOX_WHEELS=" + WHEELS))
        self.assertEqual([r["status"] for r in results], ["ok"] * 3, p.stderr)
        self.assertIn("Successfully installed thepkg-1.0", results[1]["stdout"])
        self.assertEqual(results[2]["stdout"],
                         "42 /tmp/.ptybox-packages/thepkg/__init__.py 0\n")

    def test_pip_show_and_uninstall_see_the_package_folder(self):
        results, p = run_json(
            put_wheel(), "%pip install -q thepkg", "%pip show thepkg", "%pip uninstall -y thepkg",
            "print(_exit_code)", "%pip show thepkg", "print(_exit_code)",
            "import thepkg", "%pip show pip", "print(_exit_code)",
            extra=("--env", "PTYBOX_WHEELS=" + WHEELS))
        self.assertIn("Name: thepkg", results[2]["stdout"], results[2])
        self.assertIn("Location: /tmp/.ptybox-packages", results[2]["stdout"])
        self.assertIn("Successfully uninstalled thepkg-1.0", results[3]["stdout"], results[3])
        self.assertEqual(results[4]["stdout"], "0\n")
        self.assertIn("not found: thepkg", results[5]["stderr"])
        self.assertEqual(results[6]["stdout"], "1\n")
        self.assertEqual(results[7]["error"]["name"], "ModuleNotFoundError", results[7])
        self.assertIn("Name: pip", results[8]["stdout"], results[8])   # (the system's still)
        self.assertEqual(results[9]["stdout"], "0\n")

    def test_bang_pip_in_a_block_and_an_upgrade(self):
        # !pip as %pip, also indented; a newer wheel replaces the old one.
        results, p = run_json(
            put_wheel(), put_wheel(version="2.0", code="VALUE = 2\n"),
            "for v in ['1.0']:\n    !pip install -q thepkg==1.0\n",
            "import thepkg; thepkg.VALUE",
            "!pip install -q thepkg==2.0",
            "import importlib; importlib.reload(thepkg).VALUE",
            extra=("--env", "PTYBOX_WHEELS=" + WHEELS))
        self.assertEqual([r["status"] for r in results], ["ok"] * 6, p.stderr)
        self.assertEqual(results[3]["result"]["text/plain"], "42")
        self.assertEqual(results[5]["result"]["text/plain"], "2")

    def test_a_wheel_file_in_the_session_installs_without_network_or_wheels(self):
        name, _ = wheel()
        results, p = run_json(put_wheel("/tmp/w"), "%%pip install /tmp/w/%s" % name,
                              "import thepkg; thepkg.VALUE")
        self.assertEqual([r["status"] for r in results], ["ok"] * 3, results)
        self.assertEqual(results[2]["result"]["text/plain"], "42")

    def test_pip_install_with_neither_network_nor_wheels_fails_at_once(self):
        t0 = time.monotonic()
        results, p = run_json("%pip install requests", "!pip install requests", "1")
        took = time.monotonic() - t0
        for r in results[:2]:
            self.assertEqual(r["status"], "error", r)
            self.assertEqual(r["error"]["name"], "UsageError")
            self.assertEqual(r["error"]["value"], "pip install needs the network (--net) "
                             "or a wheel folder (--wheels DIR)")
        self.assertEqual(results[2]["status"], "ok")
        self.assertLess(took, 2.0 + 1.5)  # (the session's own start, on a busy machine)
        self.assertLess(results[0]["duration_ms"], 2000)

    def test_with_the_network_pip_retries_once(self):
        # PTYBOX_NET=1 in a sandbox without one: the index cannot be reached,
        # and pip gives up after one retry instead of five (8 s).
        results, p = run_json("%pip install nosuchpkg", "_exit_code",
                              extra=("--env", "PTYBOX_NET=1"))
        self.assertEqual(results[0]["status"], "ok", results[0])
        self.assertIn("Retry(total=0", results[0]["stderr"])
        self.assertLess(results[0]["duration_ms"], 5000)
        self.assertEqual(results[1]["result"]["text/plain"], "1")

    def test_a_wheel_folder_that_is_not_there(self):
        results, p = run_json("%pip install thepkg", extra=("--env", "PTYBOX_WHEELS=/nowhere"))
        self.assertEqual(results[0]["error"]["value"],
                         "pip install: the wheel folder /nowhere is not there")

    def test_a_failing_pip_does_not_raise(self):
        results, p = run_json("%pip install nosuchpkg", "_exit_code",
                              extra=("--env", "PTYBOX_WHEELS=/tmp"))
        self.assertEqual(results[0]["status"], "ok", results[0])
        self.assertIn("No matching distribution", results[0]["stderr"])
        self.assertEqual(results[1]["result"]["text/plain"], "1")

    def test_the_folder_survives_a_kernel_restart_not_a_new_session(self):
        extra = ("--env", "PTYBOX_WHEELS=" + WHEELS)
        results, p = run_json(put_wheel(), "%pip install -q thepkg",
                              "import os; os._exit(3)",  # (the relay starts a fresh kernel)
                              "import thepkg; thepkg.VALUE", extra=extra)
        self.assertEqual(results[2]["status"], "crashed", results[2])
        self.assertEqual(results[3]["status"], "ok", results[3])
        self.assertEqual(results[3]["result"]["text/plain"], "42")
        results, p = run_json("import thepkg", extra=extra)
        self.assertEqual(results[0]["error"]["name"], "ModuleNotFoundError")

    def test_the_folder_survives_a_restart_request(self):
        s = Serve("--env", "PTYBOX_WHEELS=" + WHEELS)
        try:
            self.assertOk(s.exec(put_wheel(), id=1))
            self.assertOk(s.exec("%pip install -q thepkg", id=2))
            self.assertTrue(s.restart(3).get("ok"))
            r = s.exec("import thepkg; thepkg.VALUE", id=4)
            self.assertOk(r)
            self.assertEqual(r["result"]["text/plain"], "42")
        finally:
            s.close()

    def test_packages_folder_honoured(self):
        # --packages and PTYBOX_PACKAGES: the folder on sys.path, pip's target.
        code = ["import sys; print([p for p in sys.path if 'mine' in p or 'ptybox' in p])",
                put_wheel(), "%pip install -q thepkg", "import thepkg; print(thepkg.__file__)"]
        for extra in (("--packages", "/tmp/mine"), ("--env", "PTYBOX_PACKAGES=/tmp/mine")):
            results, p = run_json(*code, extra=extra + ("--env", "PTYBOX_WHEELS=" + WHEELS))
            self.assertEqual([r["status"] for r in results], ["ok"] * 4, p.stderr)
            self.assertEqual(results[0]["stdout"], "['/tmp/mine']\n")
            self.assertEqual(results[3]["stdout"], "/tmp/mine/thepkg/__init__.py\n")

    def test_the_folder_is_on_sys_path_before_site_packages(self):
        results, p = run_json(
            "import sys, os; p = sys.path.index('/tmp/.ptybox-packages')\n"
            "s = [i for i, d in enumerate(sys.path) if d.endswith('-packages') and i != p]\n"
            "(os.path.isdir(sys.path[p]), sys.path.index('/usr/lib/python3.11') < p, "
            "not s or p < min(s))")
        self.assertEqual(results[0]["result"]["text/plain"], "(True, True, True)", results)

    def test_packages_needs_a_path(self):
        p = run("run", "--packages", "", "-c", "1")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--packages", p.stderr)


class EscapeTest(TestCase):
    def test_bang_runs_a_shell_command(self):
        results, p = run_json("!echo hi", "x = 1\nif x:\n    !echo $((1 + 1)) \\\n      more\n")
        self.assertEqual(results[0]["stdout"], "hi\n")
        self.assertEqual(results[1]["stdout"], "2 more\n")

    def test_a_failing_command_sets_exit_code_and_does_not_raise(self):
        results, p = run_json("!exit 3", "_exit_code", "!echo err >&2; true", "_exit_code")
        self.assertEqual(results[0]["status"], "ok", results[0])
        self.assertEqual(results[1]["result"]["text/plain"], "3")
        self.assertEqual(results[2]["stderr"], "err\n")
        self.assertEqual(results[3]["result"]["text/plain"], "0")

    def test_python_with_bang_and_percent_is_untouched(self):
        code = ('x = 5 % 3\nprint("!x", x != 1, "%d" % x)\ny = (1\n% 1)\n'
                's = """\n!not a command\n%nor this\n"""\nprint(repr(s), y)\n'
                "z = 1 + \\\n  2 % 2\nz")
        results, p = run_json(code)
        self.assertEqual(results[0]["status"], "ok", results[0])
        self.assertEqual(results[0]["stdout"],
                         "!x True 2\n'\\n!not a command\\n%nor this\\n' 0\n")
        self.assertEqual(results[0]["result"]["text/plain"], "1")

    def test_only_line_ends_end_lines(self):
        # \v \f \x1c-\x1e \x85 \u2028 \u2029 end a line for str.splitlines, not
        # for Python: text after one, in a string or a comment, is no escape.
        for sep in ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"):
            with self.subTest(sep=repr(sep)):
                results, p = run_json("s = 'a%s!echo no'\nprint(repr(s))  # %s%%pip list\n"
                                      "1/0" % (sep, sep))
                self.assertEqual(results[0]["stdout"], repr("a%s!echo no" % sep) + "\n",
                                 results[0])
                tb = "".join(results[0]["error"]["traceback"])
                self.assertIn("line 3", tb)
                self.assertIn("1/0", tb)       # (the traceback shows the right line)
        results, p = run_json("!echo a\r\nx = 1\r!echo b\rx")
        self.assertEqual((results[0]["stdout"], results[0]["result"]),
                         ("a\nb\n", {"text/plain": "1"}))

    def test_other_magics_are_a_usage_error(self):
        results, p = run_json("x = 1\n%foo bar", "%%bash\necho", "x")
        self.assertEqual(results[0]["error"]["name"], "UsageError")
        self.assertEqual(results[0]["error"]["value"], "%foo is not a ptybox magic")
        self.assertIn("line 2", "".join(results[0]["error"]["traceback"]))
        self.assertIn("%foo bar", "".join(results[0]["error"]["traceback"]))
        self.assertEqual(results[1]["error"]["value"], "%%bash is not a ptybox magic")
        self.assertEqual(results[2]["result"]["text/plain"], "1")

    def test_tracebacks_keep_the_users_line_numbers(self):
        results, p = run_json("!echo a \\\n  b\n!true\n1/0")
        self.assertEqual(results[0]["stdout"], "a b\n")
        tb = "".join(results[0]["error"]["traceback"])
        self.assertIn("line 4", tb)
        self.assertIn("1/0", tb)

    def test_no_names_leak_into_the_namespace(self):
        results, p = run_json("!true", "sorted(k for k in globals() if not k.startswith('__'))")
        self.assertEqual(results[1]["result"]["text/plain"], "['_exit_code']")

    def test_is_complete_takes_escaped_lines(self):
        s = Serve("--timeout", "10")
        try:
            self.assertOk(s.exec("pass", id="warm"))
            want = {"!ls": "complete", "%pip install x": "complete", "!ls \\": "incomplete",
                    "for i in x:\n    !echo hi": "incomplete", "x = 5 % 3": "complete",
                    "x = (1\n% 2": "incomplete"}
            for n, (code, status) in enumerate(sorted(want.items())):
                s.send({"id": n, "op": "is_complete", "code": code})
                r = s.recv_result(n, timeout=15)
                self.assertEqual((code, r["status"]), (code, status), r)
        finally:
            s.close()


if __name__ == "__main__":
    unittest.main()
