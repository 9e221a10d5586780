"""The multiplexer: named sessions in a server that outlive their clients,
driven the way a user does (the verbs) and a program does (the socket's
JSON lines). Each test class has a server of its own, in a runtime folder
of its own, and leaves nothing running."""
import json
import os
import pwd
import re
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

from ptybox_test import PTYBOX, VIA, TestCase, kill_if_alive, run


def await_exit(pids, timeout=10):
    """Whether every process of pids is gone within timeout (a pidfd each:
    readable once its process has exited)."""
    deadline = time.monotonic() + timeout
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return False
        finally:
            os.close(fd)
    return True


def descendants(pid):
    """Every process below pid, by the parent links of /proc."""
    parent = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open("/proc/%s/stat" % p) as f:
                    parent[int(p)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                pass
    out, todo = [], [pid]
    while todo:
        kids = [p for p, pp in parent.items() if pp == todo[-1]]
        todo.pop()
        out += kids
        todo += kids
    return out


def pids_of(exe_marker):
    """Processes whose command line contains exe_marker."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                if exe_marker.encode() in f.read():
                    out.append(int(p))
        except OSError:
            pass
    return out


class Server:
    """A runtime folder with a server's socket in it; verbs run against it."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ptybox-srv-")
        os.chmod(self.dir, 0o700)
        self.env = dict(os.environ, XDG_RUNTIME_DIR=self.dir)
        self.sock = os.path.join(self.dir, "ptybox", "default")

    def __call__(self, *args, input=None, timeout=60):
        argv = [PTYBOX] + list(args)
        if args and args[0] == "new" and not any(a.startswith("--via") for a in args):
            argv[2:2] = ["--via", VIA]
        return subprocess.run(argv, input=input, capture_output=True, text=True,
                              timeout=timeout, env=self.env, errors="replace")

    def popen(self, *args, **kw):
        return subprocess.Popen([PTYBOX] + list(args), env=self.env, **kw)

    def daemon_pid(self):
        with open(self.sock + ".log") as f:
            for line in reversed(f.read().splitlines()):
                if "listening on" in line:
                    return int(line.rsplit("pid ", 1)[1].rstrip(")"))
        return None

    def close(self):
        pid = self.daemon_pid() if os.path.exists(self.sock + ".log") else None
        if os.path.exists(self.sock):
            self("kill-server", timeout=30)
        if pid and not await_exit([pid]):
            kill_if_alive(pid)
        # The daemon's stderr is its log: what a sanitizer found is there.
        said = ""
        if os.path.exists(self.sock + ".log"):
            with open(self.sock + ".log", errors="replace") as f:
                said = f.read()
        shutil.rmtree(self.dir, ignore_errors=True)
        for bad in ("AddressSanitizer", "LeakSanitizer", "runtime error:"):
            assert bad not in said, said


class Client:
    """A program on the socket: JSON lines, every read with a deadline."""

    def __init__(self, path, hello=True):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.s.settimeout(30)
        self.buf = b""
        if hello:
            self.send({"id": 0, "op": "hello", "protocol": 1})
            assert self.recv()["ok"]

    def send(self, obj):
        self.s.sendall((json.dumps(obj) if not isinstance(obj, (bytes, str)) else obj).encode()
                       if not isinstance(obj, bytes) else obj)
        if not isinstance(obj, bytes) and not (isinstance(obj, str) and obj.endswith("\n")):
            self.s.sendall(b"\n")

    def recv(self):
        # (chunks in a list, each searched once: a result of 80 MB must not
        # cost a quadratic copy)
        parts = [self.buf]
        while b"\n" not in parts[-1]:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise EOFError("the server closed the connection")
            parts.append(chunk)
        head, self.buf = parts[-1].split(b"\n", 1)
        parts[-1] = head
        return json.loads(b"".join(parts))

    def reply(self, id):
        """The reply to request id (events skipped)."""
        while True:
            m = self.recv()
            if m.get("id") == id and "event" not in m:
                return m

    def close(self):
        self.s.close()


def exec_while_pinging(sock, session, code, **members):
    """(reply, worst ping in s): code run in session with render (by default),
    while another connection pings the server until the reply comes; every
    wait within 120 s. How long the server's loop stalls for one client's
    request is what another client sees."""
    c, pinger = Client(sock), Client(sock)
    c.s.settimeout(120)
    pinger.s.settimeout(120)  # (a stall is reported as one, not as a timeout)
    c.send(dict({"id": 1, "op": "exec", "session": session, "code": code, "render": True},
                **members))
    worst, i = 0.0, 0
    deadline = time.monotonic() + 120
    while True:
        if time.monotonic() > deadline:
            raise AssertionError("no result in 120 s")
        if b"\n" in c.buf or select.select([c.s], [], [], 0)[0]:
            m = c.recv()  # (once it starts coming, the whole line)
            if m.get("id") == 1 and "event" not in m:
                break
            continue
        i += 1
        t = time.monotonic()
        pinger.send({"id": i, "op": "ping"})
        pinger.reply(i)
        worst = max(worst, time.monotonic() - t)
    c.close()
    pinger.close()
    return m, worst


class VerbsTest(TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server()
        p = cls.srv("new", "main")
        assert p.returncode == 0, p.stderr

    @classmethod
    def tearDownClass(cls):
        cls.srv.close()

    def test_a_session_keeps_its_state_between_clients(self):
        p = self.srv("exec", "main", "-c", "kept = 41")
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "", ""))
        p = self.srv("exec", "main", "-c", "kept + 1")
        self.assertEqual((p.returncode, p.stdout), (0, "42\n"))

    def test_exec_has_runs_output_and_exit_statuses(self):
        code = ["print('out')", "import sys; print('err', file=sys.stderr)", "1/0", "'v'"]
        args = [a for c in code for a in ("-c", c)]
        mine = self.srv("exec", "main", *args)
        ran = subprocess.run([PTYBOX, "run", "--via", VIA] + args, capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(mine.returncode, 1)
        self.assertEqual(mine.returncode, ran.returncode)
        self.assertEqual(mine.stdout, ran.stdout)
        self.assertIn("ZeroDivisionError: division by zero", mine.stderr)
        self.assertIn("err\n", mine.stderr)

    def test_json_output_names_each_execution_by_the_servers_id(self):
        p = self.srv("exec", "main", "--json", "-c", "1", "-c", "2")
        lines = [json.loads(l) for l in p.stdout.splitlines()]
        self.assertEqual([l["result"]["text/plain"] for l in lines], ["1", "2"])
        self.assertEqual(lines[1]["id"], lines[0]["id"] + 1)
        self.assertEqual([l["exec"] for l in lines], [l["id"] for l in lines])
        r = self.srv("result", "main", str(lines[0]["id"]), "--json")
        self.assertEqual(json.loads(r.stdout)["result"], {"text/plain": "1"})
        ls = json.loads(self.srv("ls", "--json").stdout.splitlines()[0])
        self.assertGreaterEqual(ls["executions"], 2)

    def test_a_traceback_names_the_execution(self):
        p = self.srv("exec", "main", "--json", "-c", "1/0")
        r = json.loads(p.stdout)
        self.assertIn('File "<exec-%d>"' % r["id"], "".join(r["error"]["traceback"]))

    def test_a_traceback_names_the_execution_after_a_cancel_and_a_restart(self):
        self.srv("exec", "main", "--no-wait", "-c", "import time; time.sleep(0.5)")
        n = int(self.srv("exec", "main", "--no-wait", "-c", "'never'").stdout)
        self.assertEqual(self.srv("cancel", "main", str(n)).returncode, 0)
        for _ in range(2):
            p = self.srv("exec", "main", "--json", "-c", "1/0")
            r = json.loads(p.stdout)
            self.assertIn('File "<exec-%d>"' % r["id"], "".join(r["error"]["traceback"]))
            self.assertEqual(self.srv("restart", "main").returncode, 0)

    def test_no_wait_returns_the_id_and_the_result_outlives_its_client(self):
        p = self.srv("exec", "main", "--no-wait", "-c", "import time; time.sleep(0.3); 'late'")
        self.assertEqual(p.returncode, 0)
        n = int(p.stdout)
        r = self.srv("result", "main", str(n))
        self.assertEqual((r.returncode, r.stdout), (0, "'late'\n"))
        # a client killed while it waits: the code runs on, its result is kept
        c = self.srv.popen("exec", "main", "--json", "-c",
                           "import time; time.sleep(0.5); print('done'); 7",
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while self.state_of("main") != "busy":  # (each ls is a round trip: no sleep)
            self.assertLess(time.monotonic(), deadline)
        c.kill()
        c.wait()
        r = self.srv("result", "main", "--json")
        got = json.loads(r.stdout)
        self.assertEqual((got["stdout"], got["result"]), ("done\n", {"text/plain": "7"}))

    def test_exec_runs_a_file_as_run_does(self):
        with tempfile.TemporaryDirectory() as d:
            prog = os.path.join(d, "prog.py")
            with open(prog, "w") as f:
                f.write("import sys\nprint(sys.argv, __file__ == sys.argv[0], __name__)\n"
                        "if sys.argv[1:] == ['boom']:\n    1/0\n"
                        "if sys.argv[1:2] == ['exit']:\n    sys.exit(sys.argv[2])\n"
                        "if sys.argv[1:2] == ['code']:\n    sys.exit(int(sys.argv[2]))\n")
            p = self.srv("exec", "main", prog, "x", "-y", "--", "--json")
            self.assertEqual((p.returncode, p.stdout, p.stderr),
                             (0, "[%r, 'x', '-y', '--json'] True __main__\n" % prog, ""))
            p = self.srv("exec", "main", prog, "boom")
            self.assertEqual(p.returncode, 1)
            self.assertIn('File "%s", line 4, in <module>' % prog, p.stderr)
            p = self.srv("exec", "main", "-c", "'before'", prog, "code", "0")
            self.assertEqual((p.returncode, p.stderr), (0, ""))
            p = self.srv("exec", "main", prog, "code", "3")  # as python3 FILE: no traceback
            self.assertEqual((p.returncode, p.stderr), (3, ""))
            p = self.srv("exec", "main", prog, "exit", "why")
            self.assertEqual((p.returncode, p.stderr), (1, "why\n"))
            p = self.srv("exec", "main", "--json", prog, "code", "3")
            self.assertEqual(p.returncode, 3)
            self.assertEqual(json.loads(p.stdout)["error"]["exit"], 3)
            p = self.srv("exec", "main", prog, "x", "--json")
            self.assertEqual(p.returncode, 2)
            self.assertEqual(p.stderr.splitlines()[0],
                             "ptybox: exec: options go before FILE (got '--json' after '%s'; "
                             "-- before it passes it to FILE)" % prog)
        p = self.srv("exec", "main", "-", "a1", input="import sys\nprint(__file__, sys.argv)\n")
        self.assertEqual((p.returncode, p.stdout), (0, "<stdin> ['-', 'a1']\n"), p.stderr)
        p = self.srv("result", "main", "1", "2")
        self.assertEqual((p.returncode, p.stderr.splitlines()[0]),
                         (2, "ptybox: result: unexpected argument '2'"))

    def test_result_no_wait_of_an_execution_not_ended_exits_4(self):
        n = int(self.srv("exec", "main", "--no-wait", "-c", "import time; time.sleep(60)").stdout)
        m = int(self.srv("exec", "main", "--no-wait", "-c", "'after'").stdout)
        try:
            r = self.srv("result", "main", str(n), "--no-wait")
            self.assertEqual((r.returncode, r.stdout), (4, "running\n"), r.stderr)
            r = self.srv("result", "main", str(m), "--no-wait")
            self.assertEqual((r.returncode, r.stdout), (4, "queued\n"), r.stderr)
        finally:
            self.srv("cancel", "main", str(m))
            self.srv("interrupt", "main", str(n))
        r = self.srv("result", "main", str(n))  # (waits for it: ended, not ok)
        self.assertEqual(r.returncode, 1, r.stderr)
        r = self.srv("result", "main", str(n), "--no-wait")
        self.assertEqual(r.returncode, 1, r.stderr)

    def test_a_client_that_falls_behind_loses_no_line(self):
        # stopped while the output piles up in its socket: one read then
        # holds hundreds of lines, every one of them kept (the result too)
        c = self.srv.popen("exec", "main", "-c",
                           "import time\nfor i in range(3000):\n"
                           "    print(i); time.sleep(0.0005)\nprint('END')",
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(0.3)
        c.send_signal(signal.SIGSTOP)
        time.sleep(2)
        c.send_signal(signal.SIGCONT)
        try:
            out, err = c.communicate(timeout=30)
        finally:
            kill_if_alive(c.pid)
        self.assertEqual(c.returncode, 0, err)
        self.assertEqual(out.decode().splitlines(), [str(i) for i in range(3000)] + ["END"])

    def test_a_result_bigger_than_the_history_is_still_kept_until_the_next(self):
        p = self.srv("new", "big", "--max-output", "32M")
        self.assertEqual(p.returncode, 0, p.stderr)
        try:
            p = self.srv("exec", "big", "-c", "print('x' * 20_000_000)")
            self.assertEqual((p.returncode, len(p.stdout)), (0, 20_000_001), p.stderr)
            r = self.srv("result", "big")
            self.assertEqual((r.returncode, len(r.stdout)), (0, 20_000_001), r.stderr)
            self.srv("exec", "big", "-c", "1")
            r = self.srv("result", "big", "1")
            self.assertEqual(r.returncode, 1)
            self.assertIn("no longer kept", r.stderr)
        finally:
            self.srv("kill", "big")

    def test_names_are_checked_and_unique(self):
        p = self.srv("new", "main")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, "ptybox: new: session 'main' exists\n")
        for bad in ["", "a/b", "..", ".", "x\x01y", "x" * 65, "-dash", "a\u202eb"]:
            p = self.srv("new", "--", bad) if bad.startswith("-") else self.srv("new", bad)
            self.assertEqual(p.returncode, 1, (bad, p.stderr))
            self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
            self.assertIn("invalid session name", p.stderr)

    def test_a_warm_pool_gives_sessions_their_own_interpreters(self):
        for name in ("w1", "w2", "w3"):
            p = self.srv("new", name, "--pool", "2")
            self.assertEqual(p.returncode, 0, p.stderr)
        try:
            self.srv("exec", "w1", "-c", "mine = 1")
            p = self.srv("exec", "w2", "-c", "'mine' in globals()")
            self.assertEqual(p.stdout, "False\n")
            p = self.srv("new", "w4", "--pool", "65")
            self.assertEqual(p.returncode, 2)
            self.assertIn("--pool", p.stderr)
        finally:
            for name in ("w1", "w2", "w3"):
                self.srv("kill", name)

    def test_a_session_that_cannot_start_is_125_with_the_reason(self):
        p = self.srv("new", "broken", "--python", "/nonexistent/python3")
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn("could not be started", p.stderr)
        self.assertNotIn("broken", self.srv("ls").stdout)

    def test_ls_tells_state_and_counts(self):
        self.srv("new", "lsme")
        try:
            self.srv("exec", "lsme", "-c", "1/0")
            p = self.srv("ls", "--json")
            rows = {r["name"]: r for r in map(json.loads, p.stdout.splitlines())}
            row = rows["lsme"]
            self.assertEqual((row["state"], row["executions"], row["last_status"], row["via"]),
                             ("idle", 1, "error", VIA))
            human = self.srv("ls").stdout.splitlines()
            self.assertTrue(human[0].startswith("NAME"))
            self.assertTrue(any(l.split()[0] == "lsme" for l in human[1:]))
        finally:
            self.srv("kill", "lsme")
        self.assertNotIn("lsme", self.srv("ls").stdout)

    def test_ls_columns_line_up_under_names_of_any_width(self):
        # (newuser-9: padding counted bytes, so é and 日本語 pulled their rows left)
        names = ["plain", "\u00e9", "\u65e5\u672c\u8a9e"]
        for n in names:
            self.srv("new", n)
        try:
            human = self.srv("ls").stdout.splitlines()
            head = human[0].index("STATE")
            for line in human[1:]:
                name = line.split()[0]
                if name in names:
                    width = sum(2 if ord(c) >= 0x1100 else 1 for c in name)  # (CJK: 2)
                    rest = line[len(name):]
                    self.assertEqual(width + len(rest) - len(rest.lstrip(" ")), head, line)
        finally:
            for n in names:
                self.srv("kill", n)

    def state_of(self, name):
        rows = map(json.loads, self.srv("ls", "--json").stdout.splitlines())
        return {r["name"]: r["state"] for r in rows}.get(name)

    def test_interrupt_restart_and_errors(self):
        self.srv("new", "ir")
        try:
            self.srv("exec", "ir", "-c", "state = 1")
            c = self.srv.popen("exec", "ir", "--json", "-c", "while True: pass",
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 20
            while self.state_of("ir") != "busy":  # (each ls is a round trip: no sleep)
                self.assertLess(time.monotonic(), deadline)
            p = self.srv("interrupt", "ir")
            self.assertEqual(p.returncode, 0, p.stderr)
            out, _ = c.communicate(timeout=30)
            self.assertEqual(json.loads(out)["status"], "interrupted")
            self.assertEqual(self.srv("exec", "ir", "-c", "state").stdout, "1\n")
            self.assertEqual(self.srv("restart", "ir").returncode, 0)
            p = self.srv("exec", "ir", "--json", "-c", "'state' in globals()")
            r = json.loads(p.stdout)
            self.assertEqual((r["result"], r["state_lost"]), ({"text/plain": "False"}, True))
            p = self.srv("interrupt", "ir")
            self.assertEqual((p.returncode, p.stderr), (1, "ptybox: interrupt: nothing is running\n"))
            p = self.srv("exec", "nosuch", "-c", "1")
            self.assertEqual((p.returncode, p.stderr), (1, "ptybox: exec: no session 'nosuch'\n"))
        finally:
            self.srv("kill", "ir")


class OverTheLineCap(TestCase):
    def test_exec_of_a_file_past_the_servers_line_cap_says_so_and_exits(self):
        # (newuser-13: the server skipped the line with an id-less error, and exec waited
        # for its reply forever, printing nothing)
        srv = Server()
        self.addCleanup(srv.close)
        self.assertEqual(srv("new", "s").returncode, 0)
        folder = tempfile.mkdtemp(prefix="ptybox-big-")
        self.addCleanup(shutil.rmtree, folder, True)
        big = os.path.join(folder, "big.py")
        with open(big, "w") as f:
            f.write("a" * (97 << 20) + "\n")
        try:
            p = srv("exec", "s", big, timeout=60)
        except subprocess.TimeoutExpired:
            self.fail("exec of a 97 MiB file still waiting after 60 s")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("MiB", p.stderr)
        self.assertEqual(srv("exec", "s", "-c", "print('still here')").stdout, "still here\n")


class UsageTest(TestCase):
    """What the server's verbs say before they connect (no server is needed)."""

    def opts(self, *args):
        return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", run(*args, via=False).stdout))

    def test_each_help_lists_what_its_command_takes(self):
        pictures = {"--output-dir", "--no-inline-images"}
        new, serve = self.opts("new", "--help"), self.opts("serve", "--help")
        self.assertFalse(pictures & new, new)
        self.assertFalse(pictures & serve, serve)
        self.assertIn("--memory", new)
        self.assertIn("--log", serve)
        self.assertLessEqual(pictures | {"--log"}, self.opts("run", "--help"))
        self.assertNotIn("--log FILE", run("new", "--help", via=False).stdout)
        for opt, val in (("--output-dir", "."), ("--no-inline-images", None), ("--log", "x")):
            p = run("new", "n", opt, *([val] if val else []), via=False)
            self.assertEqual(p.returncode, 2, opt)  # (new refuses them: its help does not list them)

    def test_an_execution_id_is_digits(self):
        # (newuser-10: "-5" was an unknown option, and 99999999999999999999 wrapped
        # to the server's "exec" member error)
        for args in (("result", "a", "-5"), ("result", "a", "99999999999999999999"),
                     ("result", "a", "+3"), ("interrupt", "a", "-3"), ("cancel", "a", "0")):
            p = run(*args, via=False)
            self.assertEqual((p.returncode, p.stderr),
                             (2, "ptybox: %s: '%s': expected an execution's id (1, 2, ...)\n"
                              % (args[0], args[2])), args)

    def test_a_negative_execution_id_of_more_than_one_digit_is_said_so(self):
        # (review1-4: "-5" got the id's line, "-55" and "-123" an unknown option
        # '-5' / '-1': getopt is inside the word then, and argv[optind - 1] is
        # the word before it)
        for args in (("result", "a", "-55"), ("interrupt", "a", "-123"), ("cancel", "a", "-10")):
            p = run(*args, via=False)
            self.assertEqual((p.returncode, p.stderr),
                             (2, "ptybox: %s: '%s': expected an execution's id (1, 2, ...)\n"
                              % (args[0], args[2])), args)

    def test_a_refused_option_points_where_it_is_taken(self):
        for opt, val, where in (("--output-dir", "plots", "run, repl and attach"),
                                ("--no-inline-images", None, "run, repl and attach"),
                                ("--log", "x", "run, repl and serve"),
                                ("--memory", "1G", "new")):
            p = run("exec", "a", opt, *([val] if val else []), "-c", "1", via=False)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertEqual(p.stderr, "ptybox: exec: option '%s' is for %s\n" % (opt, where))
        for args, said in ((("kill", "a", "--json"), "kill: option '--json' is for exec, result and ls"),
                           (("ls", "--raw"), "ls: option '--raw' is for exec and result"),
                           (("capture", "a", "--no-wait"), "capture: option '--no-wait' is for exec and result"),
                           (("result", "a", "--stop-on-error"), "result: option '--stop-on-error' is for exec")):
            p = run(*args, via=False)
            self.assertEqual((p.returncode, p.stderr), (2, "ptybox: %s\n" % said))
        with tempfile.TemporaryDirectory() as d:  # and there it is taken
            p = run("run", "--output-dir", d, "--no-inline-images", "-c", "1")
            self.assertEqual((p.returncode, p.stdout), (0, "1\n"), p.stderr)
        p = run("new", "n", "-c", "1", via=False)
        self.assertEqual(p.stderr.splitlines()[0], "ptybox: new: unknown option '-c'")

    def test_a_name_cannot_start_with_a_dash(self):
        for verb in ("new", "exec", "kill"):
            p = run(verb, "-bad", via=False)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("a session's name cannot start with '-'", p.stderr.splitlines()[0])


class ScreenTest(TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server()

    @classmethod
    def tearDownClass(cls):
        cls.srv.close()

    def setUp(self):  # a screen of each test's own
        self.assertEqual(self.srv("new", "scr").returncode, 0)

    def tearDown(self):
        self.srv("kill", "scr")

    def test_capture_shows_the_session_as_a_terminal_would(self):
        bar = ("import sys\nfor i in range(1000): sys.stdout.write('\\r%d%%' % (i // 10))\n"
               "print()")
        self.assertEqual(self.srv("exec", "scr", "-c", bar, "-c", "x = 6", "-c", "x * 7",
                                  "-c", "print('\\033[31mred\\033[0m')").returncode, 0)
        p = self.srv("capture", "scr")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(lines[:4], [">>> import sys",
                                     "... for i in range(1000): sys.stdout.write('\\r%d%%' % (i // 10))",
                                     "... print()", "99%"])
        self.assertEqual(lines[4:], [">>> x = 6", ">>> x * 7", "42",
                                     ">>> print('\\033[31mred\\033[0m')", "red"])
        self.assertNotIn("\x1b", p.stdout)
        e = self.srv("capture", "scr", "-e").stdout
        self.assertIn("\x1b[0;31mred\x1b[0m", e)

    def test_scrollback_and_no_answers_to_queries(self):
        self.srv("exec", "scr", "-c", "for i in range(100): print('line', i)")
        visible = self.srv("capture", "scr").stdout.splitlines()
        self.assertEqual(len(visible), 23)  # (24 rows; the cursor's empty one trimmed)
        self.assertEqual(visible[-1], "line 99")
        back = self.srv("capture", "scr", "-S", "-50").stdout.splitlines()
        self.assertEqual(back[-1], "line 99")
        self.assertEqual(back[0], "line %d" % (99 - 22 - 50))
        # a terminal query (where is the cursor?) is never answered
        p = self.srv("exec", "scr", "--json", "-c",
                     "import os, select; print('\\033[6n\\033[c', end='', flush=True)\n"
                     "select.select([0], [], [], 0.2)[0] and os.read(0, 100)")
        r = json.loads(p.stdout)
        self.assertIn(r["result"], (None, {"text/plain": "b''"}))
        # and what a snippet sets (title, clipboard) never comes out
        self.srv("exec", "scr", "-c", "print('\\033]0;title\\007\\033]52;c;eA==\\007ok')")
        cap = self.srv("capture", "scr", "-e").stdout
        self.assertNotIn("\x1b]", cap)
        self.assertTrue(cap.rstrip().endswith("ok"))

    def test_render_gives_the_output_as_a_screen_shows_it(self):
        c = Client(self.srv.sock)
        code = "import sys\nfor i in range(5000): sys.stdout.write('\\r%d' % i)\nprint()"
        c.send({"id": 1, "op": "exec", "session": "scr", "code": code, "render": True})
        r = c.reply(1)
        self.assertEqual((r["stdout"], r["rendered"]), ("4999\n", True))
        c.send({"id": 2, "op": "exec", "session": "scr", "code": code})
        self.assertGreater(len(c.reply(2)["stdout"]), 20000)  # the bytes, without render
        c.close()

    def test_a_threads_print_is_one_event(self):
        c = Client(self.srv.sock)
        c.send({"id": "w", "op": "watch", "session": "scr"})
        c.reply("w")
        c.send({"id": 1, "op": "exec", "session": "scr", "code":
                "import threading, time\n"
                "t = threading.Thread(target=lambda: [print('bg', i) or time.sleep(0.05) "
                "for i in range(3)])\nt.start(); t.join()"})
        streams = []
        while True:
            m = c.recv()
            if m.get("event") == "stream":
                streams.append(m["text"])
            if m.get("id") == 1 and "event" not in m:
                break
        self.assertEqual(streams, ["bg 0\n", "bg 1\n", "bg 2\n"])
        c.close()


class ProtocolTest(TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server()
        assert cls.srv("new", "a").returncode == 0
        assert cls.srv("new", "b").returncode == 0

    @classmethod
    def tearDownClass(cls):
        cls.srv.close()

    def test_exec_takes_a_filename_and_argv(self):
        c = Client(self.srv.sock)
        try:
            c.send({"id": 1, "op": "exec", "session": "a", "filename": "/x/prog.py",
                    "argv": ["/x/prog.py", "1"], "code": "import sys\n(__file__, sys.argv)"})
            m = c.reply(1)
            self.assertEqual(m["result"]["text/plain"], "('/x/prog.py', ['/x/prog.py', '1'])", m)
            for bad in ({"filename": ""}, {"filename": 1}, {"argv": ["a"]},
                        {"filename": "f", "argv": "a"}, {"filename": "f", "argv": [1]},
                        {"filename": "f", "argv": ["a"] * 4097}):
                c.send(dict({"id": 2, "op": "exec", "session": "a", "code": "1"}, **bad))
                m = c.reply(2)
                self.assertEqual(m.get("code"), "usage", (bad, m))
        finally:
            c.close()

    def test_hello_first_and_the_protocol_version(self):
        c = Client(self.srv.sock, hello=False)
        c.send({"id": 1, "op": "ls"})
        self.assertIn("say hello first", c.recv()["error"])
        c.send({"id": 2, "op": "hello", "protocol": 99})
        m = c.recv()
        self.assertEqual((m["id"], m["code"]), (2, "protocol"))
        self.assertIn("speaks protocol 99", m["error"])
        c.send({"id": 3, "op": "hello", "protocol": 1})
        self.assertTrue(c.recv()["ok"])
        c.close()

    def test_two_clients_in_one_session_queue_in_order(self):
        c1, c2 = Client(self.srv.sock), Client(self.srv.sock)
        c1.send({"id": "x", "op": "exec", "session": "a", "ack": True,
                 "code": "import time; time.sleep(0.2); seq = ['c1']"})
        self.assertEqual(c1.recv()["event"], "accepted")  # (queued first, for sure)
        c2.send({"id": "x", "op": "exec", "session": "a", "code": "seq.append('c2'); seq"})
        r1, r2 = c1.reply("x"), c2.reply("x")
        self.assertEqual((r1["status"], r2["result"]), ("ok", {"text/plain": "['c1', 'c2']"}))
        self.assertEqual(r2["exec"], r1["exec"] + 1)
        c1.close()
        c2.close()

    def test_watch_sees_what_others_run_and_the_state_changes(self):
        w = Client(self.srv.sock)
        w.send({"id": "w", "op": "watch", "session": "b"})
        self.assertEqual(w.reply("w")["state"], "idle")
        c = Client(self.srv.sock)
        c.send({"id": 1, "op": "exec", "session": "b", "code": "print('hi'); 5"})
        c.reply(1)
        got = [w.recv() for _ in range(3)]
        self.assertEqual([g["event"] for g in got], ["exec", "stream", "result"])
        self.assertEqual(got[0]["code"], "print('hi'); 5")
        self.assertEqual((got[1]["text"], got[2]["result"]), ("hi\n", {"text/plain": "5"}))
        self.assertTrue(all(g["id"] == "w" and g["session"] == "b" for g in got))
        c.send({"id": 2, "op": "restart", "session": "b"})
        c.reply(2)
        events = []
        while not events or events[-1]["event"] != "restarted":
            events.append(w.recv())
        self.assertEqual([e["event"] for e in events], ["died", "restarted"])
        c.close()
        w.close()

    def test_cancel_stop_on_error_and_interrupts_for_ended_executions(self):
        c = Client(self.srv.sock)
        c.send({"id": 1, "op": "exec", "session": "a", "code": "import time; time.sleep(0.3)",
                "ack": True})
        first = c.recv()["exec"]
        c.send({"id": 2, "op": "exec", "session": "a", "code": "'never'", "wait": False})
        second = c.reply(2)["exec"]
        c.send({"id": 3, "op": "cancel", "session": "a", "exec": second})
        self.assertTrue(c.reply(3)["ok"])
        c.send({"id": 4, "op": "cancel", "session": "a", "exec": first})
        self.assertEqual(c.reply(4)["code"], "busy")
        self.assertEqual(c.reply(1)["status"], "ok")
        c.send({"id": 5, "op": "result", "session": "a", "exec": second})
        self.assertEqual(c.reply(5)["status"], "cancelled")
        c.send({"id": 6, "op": "interrupt", "session": "a", "exec": first})
        self.assertEqual(c.reply(6), {"id": 6, "ok": True, "interrupted": False, "state": "done"})
        # stop_on_error: the failing one takes the queue behind it along
        c.send({"id": 7, "op": "exec", "session": "a", "code": "1/0", "stop_on_error": True})
        c.send({"id": 8, "op": "exec", "session": "a", "code": "'after'"})
        self.assertEqual(c.reply(7)["status"], "error")
        self.assertEqual(c.reply(8)["status"], "cancelled")
        c.close()

    def test_a_half_closed_client_gets_what_it_is_owed(self):
        c = Client(self.srv.sock)
        c.send({"id": 1, "op": "exec", "session": "a",
                "code": "import time; time.sleep(0.2); 'owed'"})
        c.s.shutdown(socket.SHUT_WR)  # (its input ends; it still reads)
        self.assertEqual(c.reply(1)["result"], {"text/plain": "'owed'"})
        with self.assertRaises(EOFError):  # then the server closes
            c.recv()
        c.close()

    def clients_of(self, name, want, timeout=10):
        """ls's clients of session name, once it is want (or at the deadline)."""
        deadline = time.monotonic() + timeout
        while True:
            rows = map(json.loads, self.srv("ls", "--json").stdout.splitlines())
            got = {r["name"]: r["clients"] for r in rows}.get(name)
            if got == want or time.monotonic() > deadline:
                return got
            time.sleep(0.05)  # (ls is polled: the server's count has no event)

    def test_a_client_that_ends_its_input_stops_watching_at_once(self):
        # (attach's ^D: the watch stayed until the session ended, and ls said 1)
        w = Client(self.srv.sock)
        w.send({"id": 2, "op": "watch", "session": "b"})
        self.assertEqual(w.reply(2)["state"], "idle")
        self.assertEqual(self.clients_of("b", 1), 1)
        w.close()
        self.assertEqual(self.clients_of("b", 0), 0)
        # its input ended, what it asked for before still comes, and no event
        w = Client(self.srv.sock)
        w.send({"id": 2, "op": "watch", "session": "b"})
        self.assertEqual(w.reply(2)["state"], "idle")
        w.send({"id": 3, "op": "exec", "session": "b",
                "code": "import time; time.sleep(0.3); 'owed'"})
        w.s.shutdown(socket.SHUT_WR)
        self.assertEqual(self.clients_of("b", 0), 0)
        got = []
        with self.assertRaises(EOFError):  # then the server closes
            while True:
                got.append(w.recv())
        self.assertEqual([(g["id"], g.get("event"), g.get("result")) for g in got],
                         [(2, "exec", None), (3, None, {"text/plain": "'owed'"})])
        w.close()

    def test_garbage_never_harms_the_server(self):
        c = Client(self.srv.sock)
        for bad in [b"not json\n", b"\xff\xfe\n", b"[1,2]\n", b'{"op":"exec"\n',
                    b'{"id":1,"op":"nope"}\n', b'{"id":2,"op":"exec","session":7}\n']:
            c.send(bad)
            self.assertIn("error", c.recv())
        # a 100 MB line is skipped, not held
        big = b'{"id":3,"op":"exec","session":"a","code":"' + b"x" * (100 << 20) + b'"}\n'
        c.send(big)
        self.assertIn("longer than", c.recv()["error"])
        # half a request, then gone
        h = Client(self.srv.sock)
        h.send(b'{"id":1,"op":"exe')
        h.close()
        c.send({"id": 4, "op": "exec", "session": "a", "code": "'fine'"})
        self.assertEqual(c.reply(4)["result"], {"text/plain": "'fine'"})
        c.close()

    def test_a_nul_in_a_name_is_refused_not_cut(self):
        # cJSON ends a string at \u0000: "a\u0000x" would be "a"
        c = Client(self.srv.sock)
        c.send(r'{"id":1,"op":"kill","session":"a\u0000x"}')
        m = c.reply(1)
        self.assertEqual(m["code"], "usage", m)
        self.assertIn("NUL", m["error"])
        c.send(r'{"id":2,"op":"new","session":"a\u0000x"}')
        self.assertEqual(c.reply(2)["code"], "usage")
        c.send({"id": 3, "op": "ls"})
        self.assertIn("a", [s["name"] for s in c.reply(3)["sessions"]])
        c.close()

    def test_a_client_that_does_not_read_is_dropped_and_others_go_on(self):
        assert self.srv("new", "flood", "--max-output", "1G").returncode == 0
        try:
            slow = Client(self.srv.sock)
            slow.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            slow.send({"id": "w", "op": "watch", "session": "flood"})
            c = Client(self.srv.sock)
            c.send({"id": 1, "op": "exec", "session": "flood", "timeout": 120,
                    "code": "s = 'y' * 65536\nfor i in range(1280): print(s)"})
            t0 = time.monotonic()
            c.send({"id": 2, "op": "exec", "session": "a", "code": "'alive'"})
            self.assertEqual(c.reply(2)["result"], {"text/plain": "'alive'"})
            self.assertLess(time.monotonic() - t0, 10)  # (while the flood goes on)
            c.s.settimeout(600)  # 80 MB: slow on a loaded machine, but it comes
            self.assertEqual(c.reply(1)["status"], "ok")
            # the watcher got some, then was dropped: its end of the socket closes
            slow.s.settimeout(10)
            with self.assertRaises(EOFError):
                while True:
                    slow.recv()
            with open(self.srv.sock + ".log") as f:
                self.assertIn("dropped: not reading", f.read())
        finally:
            self.srv("kill", "flood")

    def test_one_session_crashing_or_out_of_memory_leaves_the_others(self):
        c = Client(self.srv.sock)
        c.send({"id": 1, "op": "exec", "session": "b", "code": "other = 'kept'"})
        c.reply(1)
        c.send({"id": 2, "op": "new", "session": "doomed", "options": {"memory": "64M"}})
        self.assertTrue(c.reply(2)["ok"])
        c.send({"id": 3, "op": "exec", "session": "doomed", "code": "import os; os._exit(3)"})
        self.assertEqual(c.reply(3)["status"], "crashed")
        c.send({"id": 4, "op": "exec", "session": "doomed", "code": "x = bytearray(1 << 30)"})
        self.assertIn(c.reply(4)["status"], ("crashed", "error"))
        c.send({"id": 5, "op": "exec", "session": "b", "code": "other"})
        self.assertEqual(c.reply(5)["result"], {"text/plain": "'kept'"})
        c.send({"id": 6, "op": "kill", "session": "doomed"})
        self.assertTrue(c.reply(6)["ok"])
        c.close()

    def test_options_are_checked_like_the_command_lines(self):
        c = Client(self.srv.sock)
        c.send({"id": 1, "op": "new", "session": "o", "options": {"memory": "lots"}})
        m = c.reply(1)
        self.assertEqual(m["code"], "usage")
        self.assertIn("--memory lots: expected a size", m["error"])
        c.send({"id": 2, "op": "new", "session": "o", "options": {"bogus": 1}})
        self.assertIn("unknown option", c.reply(2)["error"])
        c.send({"id": 3, "op": "new", "session": "o", "options": {"log": "/tmp/x"}})
        self.assertEqual(c.reply(3)["code"], "usage")
        c.close()

    def test_dial_stdio_refuses_running_without_a_sandbox(self):
        p = subprocess.run([PTYBOX, "dial-stdio"], env=self.srv.env, capture_output=True,
                           text=True, timeout=60, input=json.dumps(
                               {"id": 1, "op": "new", "session": "bare",
                                "options": {"via": "none"}}) + "\n")
        m = json.loads(p.stdout)
        self.assertEqual(m["code"], "usage", m)
        self.assertIn("--via none is refused through dial-stdio", m["error"])

    def test_dial_stdio_relays_the_answers_after_its_input_ends(self):
        # (as `printf REQUESTS | ssh host ptybox dial-stdio` sends them)
        p = subprocess.run([PTYBOX, "dial-stdio"], env=self.srv.env, capture_output=True,
                           text=True, timeout=60,
                           input='{"id":1,"op":"ping"}\n{"id":2,"op":"ls"}\n')
        replies = [json.loads(l) for l in p.stdout.splitlines()]
        self.assertEqual([m["id"] for m in replies], [1, 2], p.stderr)
        self.assertEqual(p.returncode, 0)


class LifecycleTest(TestCase):
    def setUp(self):
        self.srv = Server()

    def tearDown(self):
        self.srv.close()

    def test_racing_news_start_one_server_and_say_nothing_of_the_race(self):
        ps = [self.srv.popen("new", "r%d" % i, "--via", VIA, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for i in range(6)]
        outs = [p.communicate(timeout=60) + (p.returncode,) for p in ps]
        self.assertEqual([(o[2], o[1]) for o in outs], [(0, "")] * 6)
        ls = self.srv("ls", "--json").stdout.splitlines()
        self.assertEqual(len(ls), 6)

    def test_servers_starting_as_one_ends_never_make_two(self):
        # Its lock file goes at its end: a server that opened it before and
        # locked it after holds a file nobody sees, and must try again. (The
        # window is narrow, so this is a guard, not proof: some rounds have a
        # starter that outlives the old server, and never two.)
        def daemons():
            return [p for p in pids_of(self.srv.sock) if p != os.getpid()
                    and "listening on %s (pid %d)" % (self.srv.sock, p) in log()]

        def log():
            with open(self.srv.sock + ".log") as f:
                return f.read()
        os.makedirs(os.path.dirname(self.srv.sock), mode=0o700, exist_ok=True)
        for _ in range(10):  # (-S: each server's command line names its socket)
            p = self.srv("server", "-S", self.srv.sock)
            self.assertEqual(p.returncode, 0, p.stderr)
            old = self.srv.daemon_pid()
            ps = [self.srv.popen("server", "-S", self.srv.sock, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL) for _ in range(4)]
            self.assertEqual(self.srv("kill-server", "-S", self.srv.sock).returncode, 0)
            for p in ps:
                p.wait(timeout=30)
            self.assertTrue(await_exit([old]))
            alive = daemons()
            self.assertLessEqual(len(alive), 1, alive)
            if alive:  # (one that started after the old one's end)
                self.assertEqual(self.srv("ls", "-S", self.srv.sock).returncode, 0)
                self.assertEqual(self.srv("kill-server", "-S", self.srv.sock).returncode, 0)
                self.assertTrue(await_exit(alive))
            self.assertFalse(os.path.exists(self.srv.sock + ".lock"))

    def test_ls_of_a_server_without_sessions_says_so_and_its_json_is_empty(self):
        self.assertEqual(self.srv("server").returncode, 0)
        said = "ptybox: ls: no sessions (server at %s)\n" % self.srv.sock
        for made in (False, True):  # (a server that never had one, and one whose went)
            if made:
                self.assertEqual(self.srv("new", "gone").returncode, 0)
                self.assertEqual(self.srv("kill", "gone").returncode, 0)
            p = self.srv("ls")
            self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "", said))
            p = self.srv("ls", "--json")  # (JSON lines: no session, no line)
            self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "", ""))

    def test_a_server_that_accepts_and_never_answers_does_not_hang_its_clients(self):
        # (a socket in the server's place, listening, that reads nothing)
        os.makedirs(os.path.dirname(self.srv.sock), mode=0o700, exist_ok=True)
        mute = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(mute.close)
        mute.bind(self.srv.sock)
        mute.listen(8)
        for verb in (["ls"], ["capture", "x"], ["kill", "x"]):
            p = self.srv(*verb, timeout=30)
            self.assertEqual(p.returncode, 1, verb)
            self.assertEqual(p.stderr, "ptybox: %s: %s: the server did not answer\n"
                             % (verb[0], self.srv.sock), verb)
        os.unlink(self.srv.sock)

    def test_new_right_after_kill_server_waits_for_the_old_one_to_end(self):
        self.assertEqual(self.srv("new", "old").returncode, 0)
        # a watcher that reads nothing keeps the old server flushing a while
        c = Client(self.srv.sock)
        c.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        c.send({"id": 1, "op": "watch", "session": "old"})
        self.assertEqual(self.srv("exec", "old", "-c", "print('x' * 3000000)").returncode, 0)
        self.assertEqual(self.srv("kill-server").returncode, 0)
        p = self.srv("new", "fresh")
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        c.close()

    def test_kill_server_ends_every_session_and_removes_the_socket(self):
        self.assertEqual(self.srv("new", "one").returncode, 0)
        self.assertEqual(self.srv("new", "two").returncode, 0)
        pid = self.srv.daemon_pid()
        kids = descendants(pid)
        p = self.srv("kill-server")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(await_exit([pid] + kids))
        self.assertFalse(os.path.exists(self.srv.sock))
        # its lock goes with it; its log stays, saying why it ended
        self.assertEqual(sorted(os.listdir(os.path.dirname(self.srv.sock))), ["default.log"])
        with open(self.srv.sock + ".log") as f:
            self.assertIn("shutting down: kill-server", f.read())
        p = self.srv("ls")
        self.assertEqual(p.returncode, 1)
        self.assertIn("no server running", p.stderr)

    def test_sigterm_ends_it_cleanly_and_sigkill_leaves_nothing_running(self):
        self.assertEqual(self.srv("new", "s").returncode, 0)
        pid = self.srv.daemon_pid()
        os.kill(pid, signal.SIGTERM)
        self.assertTrue(await_exit([pid]))
        self.assertFalse(os.path.exists(self.srv.sock))
        self.assertFalse(os.path.exists(self.srv.sock + ".lock"))
        # again, killed hard: the sandbox goes with it, the stale socket is no bar
        self.assertEqual(self.srv("new", "s").returncode, 0)
        self.srv("exec", "s", "-c", "import os; open('/tmp/mark', 'w').write(str(os.getpid()))")
        pid = self.srv.daemon_pid()
        inside = descendants(pid)
        self.assertTrue(inside)
        os.kill(pid, signal.SIGKILL)
        self.assertTrue(await_exit([pid] + inside), "left running")
        self.assertTrue(os.path.exists(self.srv.sock))  # (stale)
        self.assertEqual(self.srv("new", "again").returncode, 0)
        self.assertEqual(self.srv("exec", "again", "-c", "'up'").stdout, "'up'\n")

    def test_the_folder_must_be_the_users_alone(self):
        os.makedirs(os.path.join(self.srv.dir, "ptybox"), mode=0o700)
        os.chmod(os.path.join(self.srv.dir, "ptybox"), 0o755)
        p = self.srv("new", "x")
        self.assertEqual(p.returncode, 1)
        self.assertIn("lets others in", p.stderr)
        os.rmdir(os.path.join(self.srv.dir, "ptybox"))
        other = tempfile.mkdtemp(prefix="ptybox-elsewhere-")
        os.symlink(other, os.path.join(self.srv.dir, "ptybox"))
        p = self.srv("new", "x")
        self.assertEqual(p.returncode, 1)
        self.assertIn("not a directory", p.stderr)
        os.unlink(os.path.join(self.srv.dir, "ptybox"))
        shutil.rmtree(other)

    @unittest.skipUnless(os.getuid() == 0, "needs root to be another user")
    def test_another_user_is_refused(self):
        self.assertEqual(self.srv("new", "x").returncode, 0)
        nobody = pwd.getpwnam("nobody")
        # let them reach the socket at all: the folder's mode is the first wall
        os.chmod(self.srv.dir, 0o755)
        os.chmod(os.path.dirname(self.srv.sock), 0o755)
        os.chmod(self.srv.sock, 0o777)
        code = ("import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n"
                "s.settimeout(10)\n"
                "try:\n s.sendall(b'{\"id\":1,\"op\":\"hello\",\"protocol\":1}\\n')\n"
                " print(repr(s.recv(100)))\n"
                "except OSError as e: print(type(e).__name__)")
        p = subprocess.run(["/usr/bin/python3", "-c", code, self.srv.sock], capture_output=True,
                           text=True, timeout=30,
                           preexec_fn=lambda: (os.setgid(nobody.pw_gid), os.setuid(nobody.pw_uid)))
        self.assertIn(p.stdout.strip(), ("b''", "BrokenPipeError", "ConnectionResetError"),
                      p.stderr)
        with open(self.srv.sock + ".log") as f:
            self.assertIn("refused a client of uid %d" % nobody.pw_uid, f.read())
        os.chmod(os.path.dirname(self.srv.sock), 0o700)

    def test_a_server_of_its_own_socket(self):
        path = os.path.join(self.srv.dir, "elsewhere.sock")
        p = self.srv("-S", path, "new", "mine")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.exists(path))
        self.srv("-S", path, "exec", "mine", "-c", "for i in range(40): print(i)")
        # before the verb, -S is the socket; capture's own -S is where it starts
        p = self.srv("-S", path, "capture", "mine", "-S", "-5")
        self.assertEqual(p.stdout.splitlines()[0], "12", p.stderr)
        self.assertIn("no server running", self.srv("ls").stderr)  # (not the default one)
        self.assertEqual(self.srv("-S", path, "kill-server").returncode, 0)
        self.assertFalse(os.path.exists(path))

    def test_serve_stdio_holds_many_sessions(self):
        p = subprocess.run([PTYBOX, "serve", "--stdio", "--via", VIA], text=True,
                           capture_output=True, timeout=60, input="\n".join(json.dumps(r) for r in [
                               {"id": 1, "op": "exec", "code": "x = 'default'"},
                               {"id": 2, "op": "new", "session": "two",
                                "options": {"via": VIA}},
                               {"id": 3, "op": "exec", "session": "two", "code": "'two'"},
                               {"id": 4, "op": "exec", "code": "x"},
                           ]) + "\n")
        replies = {m["id"]: m for m in map(json.loads, p.stdout.splitlines())}
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(replies[2], {"id": 2, "ok": True, "session": "two"})
        self.assertEqual(replies[3]["result"], {"text/plain": "'two'"})
        self.assertEqual(replies[4]["result"], {"text/plain": "'default'"})

    def test_serve_stdio_on_a_full_output_ends_with_one_line(self):
        # a write that fails (ENOSPC) drops the client while a reply is being
        # sent: the session and serve end cleanly, with one line
        with open("/dev/full", "w") as full:
            p = subprocess.run([PTYBOX, "serve", "--stdio", "--via", VIA], text=True,
                               stdout=full, stderr=subprocess.PIPE, timeout=60,
                               input='{"id":1,"op":"ping"}\n{"id":2,"op":"exec","code":"1"}\n')
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, "ptybox: serve: standard output: No space left on device\n")


if __name__ == "__main__":
    unittest.main()
