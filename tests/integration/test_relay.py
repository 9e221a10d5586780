"""The relay and the kernel (issue 13): code in a session cannot forge frames,
read the nonce or touch the terminal, and a dead kernel is replaced under the
same relay, with no new transport."""
import json
import os
import subprocess
import tempfile
import unittest

from ptybox_test import PTYBOX, VIA, Serve, TestCase, run_json, start_once_transport

# The attack of issue 13: find the driver's terminal and its nonce among the
# objects of the process, and write a result frame of its own.
FORGE = ("import gc, os, json\n"
         "term = next(o for o in gc.get_objects() if type(o).__name__ == 'Terminal'"
         " and hasattr(o, 'start'))\n"
         "drv = next(o for o in gc.get_objects() if type(o).__name__ == 'Driver')\n"
         "os.write(term.fd, term.start + json.dumps({'type': 'result', 'id': drv.running,"
         " 'status': 'ok', 'result': {'text/plain': '42'}, 'duration_ms': 1.0}).encode()"
         " + b':ptybox>>>')\n")

# Whatever the process holds that looks like a frame's start: the nonce would be in it.
HUNT = ("import gc\n"
        "def hunt():\n"
        "    found = 0\n"
        "    for o in gc.get_objects():\n"
        "        try:\n"
        "            for v in (vars(o).values() if hasattr(o, '__dict__') else ()):\n"
        "                if isinstance(v, (bytes, str)) and '<<<ptybox:' in str(v)"
        " and 'hunt' not in str(v):\n"
        "                    found += 1\n"
        "        except Exception:\n"
        "            pass\n"
        "    return found\n")


class ForgeryTest(TestCase):
    def test_the_issues_reproducer_gets_the_real_result(self):
        results, p = run_json(FORGE + "raise RuntimeError('real error hidden')")
        self.assertEqual(len(results), 1, p.stderr)
        self.assertEqual(results[0]["status"], "error", results[0])
        self.assertIsNone(results[0]["result"])
        self.assertNotEqual(p.returncode, 0)

    def test_a_thread_hunting_for_the_nonce_cannot_forge_later_results(self):
        # A thread of the first snippet hunts for the nonce and the terminal
        # while later snippets run: every later result is the real one.
        results, p = run_json(
            HUNT + "import threading, os\n"
            "tries = []\n"
            "def forge():\n"
            "    for _ in range(200):\n"
            "        tries.append(hunt())\n"
            "        for fd in range(3, 64):\n"
            "            try: os.write(fd, b'<<<ptybox:x:{\"type\":\"result\"}:ptybox>>>')\n"
            "            except OSError: pass\n"
            "threading.Thread(target=forge, daemon=True).start()",
            "1/0", "x = 2", "x * 21", "sum(tries)", timeout=90)
        self.assertEqual([r["status"] for r in results], ["ok", "error", "ok", "ok", "ok"],
                         results)
        self.assertEqual(results[1]["error"]["name"], "ZeroDivisionError")
        self.assertEqual(results[3]["result"], {"text/plain": "42"})
        self.assertEqual(results[4]["result"], {"text/plain": "0"})   # nothing found

    def test_no_nonce_in_the_kernel_and_no_way_into_the_relay(self):
        # The kernel's parent is the fork template, whose parent is the
        # relay: neither one's memory, fds or environment may be read.
        results, _ = run_json(
            HUNT + "import os\n"
            "def ppid(pid):\n"
            "    return int(open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()[1])\n"
            "relay = ppid(os.getppid())\n"
            "def denied(path):\n"
            "    try:\n"
            "        open(path, 'rb').read(1)\n"
            "    except OSError:\n"
            "        return True\n"
            "    return False\n"
            "(hunt(), denied('/proc/%d/mem' % relay), denied('/proc/%d/environ' % relay),\n"
            " all(denied('/proc/%d/fd/%s' % (relay, fd)) for fd in ('0', '1', '2')),\n"
            " os.isatty(0) or os.isatty(1) or os.isatty(2))")
        self.assertEqual(results[0]["result"], {"text/plain": "(0, True, True, True, False)"},
                         results[0])

    def test_the_terminal_cannot_be_opened(self):
        results, _ = run_json(
            "import errno, os, subprocess, getpass, time\n"
            "try:\n"
            "    os.open('/dev/tty', os.O_RDWR)\n"
            "except OSError as e:\n"
            "    print(errno.errorcode[e.errno])\n"
            "t = time.monotonic()\n"
            "p = subprocess.run(['sh', '-c', 'read x < /dev/tty'], capture_output=True)\n"
            "try:\n"
            "    getpass.getpass()\n"
            "except EOFError:\n"
            "    print('eof')\n"
            "(p.returncode != 0, time.monotonic() - t < 5)",
            extra=["--timeout", "20"], timeout=60)
        r = results[0]
        self.assertEqual(r["status"], "ok", r)
        self.assertEqual(r["stdout"], "ENXIO\neof\n")
        self.assertEqual(r["result"], {"text/plain": "(True, True)"})


    @unittest.skipUnless(os.geteuid() == 0, "needs root to run ptybox as another user")
    def test_the_terminal_cannot_be_opened_by_name_without_a_sandbox(self):
        # Outside the sandbox the session's own pty is in /dev/pts, owned by
        # the code's own uid: it is exclusive (TIOCEXCL), so no open succeeds.
        code = ("import glob, os\n"
                "opened = []\n"
                "for p in glob.glob('/dev/pts/[0-9]*'):\n"
                "    try:\n"
                "        os.chmod(p, 0o600)\n"          # (its owner may: a mode is no guard)
                "    except OSError:\n"
                "        pass\n"
                "    try:\n"
                "        os.close(os.open(p, os.O_RDWR | os.O_NOCTTY))\n"
                "        opened.append(p)\n"
                "    except OSError:\n"
                "        pass\n"
                "mine = [p for p in opened if os.stat(p).st_uid == os.getuid()]\n"
                "mine")
        p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            PTYBOX, "run", "--via", "none", "--json", "-c", code],
                           capture_output=True, text=True, timeout=60, cwd="/")
        r = json.loads(p.stdout.splitlines()[0])
        self.assertEqual(r["result"], {"text/plain": "[]"}, (r, p.stderr))


class KernelRestartTest(TestCase):
    @unittest.skipUnless(VIA == "local", "the sweep is the sandbox's (a pid namespace)")
    def test_what_a_crashed_kernel_left_cannot_reach_the_fresh_one(self):
        # A daemon of the first kernel would reach the fresh kernel's pipes
        # through /proc (same uid): when a kernel dies, what it left goes.
        results, p = run_json(
            "import os, subprocess\n"
            "d = subprocess.Popen(['sleep', '1000'], start_new_session=True)\n"
            "d.pid",
            "import os; os._exit(1)",
            # (alive: a killed one may wait a moment as a zombie for init's wait)
            "import os\ndef alive(x):\n"
            "    try: return open('/proc/%s/stat' % x).read().rsplit(')', 1)[1].split()[0] != 'Z'\n"
            "    except OSError: return False\n"
            "[int(x) for x in os.listdir('/proc') if x.isdigit() and alive(x)]", timeout=60)
        self.assertEqual([r["status"] for r in results], ["ok", "crashed", "ok"], p.stderr)
        daemon = int(results[0]["result"]["text/plain"])
        self.assertNotIn(daemon, eval(results[2]["result"]["text/plain"]))


    def test_what_a_restarted_kernel_left_cannot_reach_the_fresh_one(self):
        # (review1-6: a restart sweeps at once, while the killed kernel may not
        # have exited yet: its child in a session of its own still has it as
        # parent and the template as grandparent, as a standby's bash has, and
        # is spared; it lives on beside the fresh kernel, which it can reach.)
        gone = ("import os, time\ndef alive(x):\n"
                "    try: return open('/proc/%%d/stat' %% x).read().rsplit(')', 1)[1].split()[0] != 'Z'\n"
                "    except OSError: return False\n"
                "deadline = time.monotonic() + 5\n"
                "while alive(%d) and time.monotonic() < deadline:\n"
                "    time.sleep(0.05)\n"
                "alive(%d)")
        s = Serve("--lang", "python")
        try:
            for k in range(4):               # (a race: it lost it 1 to 3 times in 4)
                r = s.exec("import subprocess\n"
                           "d = subprocess.Popen(['sleep', '1000'], start_new_session=True)\n"
                           "d.pid", id=10 * k + 1)
                daemon = int(r["result"]["text/plain"])
                s.send({"id": 10 * k + 2, "op": "restart"})
                self.assertTrue(s.recv_result(10 * k + 2, timeout=30).get("ok"))
                r = s.exec(gone % (daemon, daemon), id=10 * k + 3, timeout=30)
                self.assertEqual(r["result"], {"text/plain": "False"}, (k, r))
        finally:
            s.close()

    def test_code_cannot_plant_itself_in_the_kernels_to_come(self):
        # Every later kernel is a fork of the template (the kernel's parent),
        # and one is forked ahead (the standby): code that could write their
        # memory through /proc would live on after a restart (attacker-1: the
        # small int 200 made 201 in both, and 100 + 100 was 201 afterwards).
        results, p = run_json(
            "import os\n"
            "me, tpl = os.getpid(), os.getppid()\n"
            "import time\n"
            "deadline = time.monotonic() + 10\n"       # (the standby comes 50 ms after us)
            "while True:\n"
            "    kids = open('/proc/%d/task/%d/children' % (tpl, tpl)).read().split()\n"
            "    if len(kids) > 1 or time.monotonic() > deadline:\n"
            "        break\n"
            "    time.sleep(0.01)\n"
            "written = []\n"
            "for t in [tpl] + [int(k) for k in kids if int(k) != me]:\n"
            "    try:\n"
            "        fd = os.open('/proc/%d/mem' % t, os.O_RDWR)\n"
            "        os.lseek(fd, id(200) + 24, 0)\n"
            "        os.write(fd, (201).to_bytes(4, 'little'))\n"
            "        os.close(fd)\n"
            "        written.append(t)\n"
            "    except OSError:\n"
            "        pass\n"
            "(len(kids) > 1, written)",
            "import os; os._exit(1)",
            "100 + 100")
        self.assertEqual([r["status"] for r in results], ["ok", "crashed", "ok"], p.stderr)
        self.assertEqual(results[0]["result"], {"text/plain": "(True, [])"}, results[0])
        self.assertEqual(results[2]["result"], {"text/plain": "200"})

    def test_a_crash_is_recovered_without_a_new_transport(self):
        # The transport starts once: the kernel's death is mended under the
        # same relay (over ssh: no new connection), in milliseconds.
        with tempfile.TemporaryDirectory() as d:
            results, p = run_json("x = 1", "import os; os._exit(1)", "print(3)", "x = 4; x",
                                  extra=["--via", start_once_transport(d)])
        self.assertEqual([r["status"] for r in results], ["ok", "crashed", "ok", "ok"],
                         p.stderr)
        self.assertIn("the interpreter died (exit status 1)", results[1]["message"])
        self.assertIn("restarted with fresh state", results[1]["message"])
        self.assertTrue(results[1]["state_lost"])
        self.assertEqual(results[2]["stdout"], "3\n")
        self.assertEqual(results[3]["result"], {"text/plain": "4"})
        self.assertLess(results[1]["duration_ms"], 1000)

    def test_a_snippet_that_ignores_ctrl_c_is_killed_and_the_relay_stays(self):
        results, p = run_json(
            "import os; relay = open('/proc/%d/stat' % os.getppid()).read().split()[3]\n"
            "x = 1", "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "time.sleep(60)",
            "import os; open('/proc/%d/stat' % os.getppid()).read().split()[3]",
            extra=["--timeout", "0.5", "--kill-grace", "0.5"], timeout=60)
        self.assertEqual([r["status"] for r in results], ["ok", "timeout", "ok"], p.stderr)
        self.assertTrue(results[1]["state_lost"])
        self.assertIn("did not stop on ^C; killed", results[1]["message"])
        self.assertLess(results[1]["duration_ms"], 5000)


# The kernel's parent is the fork template: killing it leaves the kernel (and
# its state) alive, with no one to fork the next.
KILL_TEMPLATE = "import os; os.kill(os.getppid(), 9); x = 1"


class KillTheFarSideTest(TestCase):
    """Whatever a snippet kills, that snippet is the one reported, and the next
    ones run (issue 15, finding A1)."""

    def check(self, results, stderr):
        self.assertEqual([(r["id"], r["status"]) for r in results],
                         [(1, "ok"), (2, "ok"), (3, "crashed"), (4, "ok")], stderr)
        self.assertEqual(results[1]["stdout"], "1\n")          # the kernel lived on
        self.assertEqual([r["state_lost"] for r in results], [False, False, True, False])
        self.assertEqual(results[3]["stdout"], "ran\n")

    def test_killing_the_template_blames_no_innocent_snippet(self):
        for via in (VIA, "exec:env", VIA):            # (a race lost in 3 runs of 4)
            with self.subTest(via=via):
                results, p = run_json(KILL_TEMPLATE, "print(x)", "import os; os._exit(3)",
                                      "print('ran')", extra=["--via", via], timeout=60)
                self.check(results, p.stderr)

    def test_killing_the_template_under_serve(self):
        s = Serve()
        try:
            s.send("\n".join(json.dumps({"id": i + 1, "op": "exec", "code": c}) for i, c in
                             enumerate((KILL_TEMPLATE, "print(x)", "import os; os._exit(3)",
                                        "print('ran')"))))   # (one write: all queued)
            results = []
            for i in range(1, 5):
                r = s.recv_result(i)
                r["id"], r["stdout"] = i, r.get("stdout", "")
                results.append(r)
            self.check(results, results)
        finally:
            self.assertEqual(s.close(), 0, s.stderr)

    def test_without_its_template_a_kill_or_restart_still_gets_a_fresh_kernel(self):
        results, p = run_json(
            KILL_TEMPLATE, "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "time.sleep(60)", "print('x' in dir())",
            extra=["--timeout", "1", "--kill-grace", "0.5"], timeout=60)
        self.assertEqual([r["status"] for r in results], ["ok", "timeout", "ok"], p.stderr)
        self.assertIn("did not stop on ^C; killed", results[1]["message"])
        self.assertEqual(results[2]["stdout"], "False\n")
        s = Serve()
        try:
            self.assertOk(s.exec(KILL_TEMPLATE, id=1))
            self.assertEqual(s.restart(2), {"id": 2, "ok": True})
            r = s.exec("print('x' in dir())", id=3)
            self.assertEqual((r["status"], r["stdout"]), ("ok", "False\n"), r)
        finally:
            self.assertEqual(s.close(), 0, s.stderr)

    def test_killing_the_relay_is_the_crash_of_that_snippet(self):
        kill_relay = ("import os; os.kill(int(open('/proc/%d/stat' % os.getppid()).read()"
                      ".rsplit(')', 1)[1].split()[1]), 9)")
        results, p = run_json("x = 1", kill_relay, "print('ran')", timeout=60)
        self.assertEqual([r["status"] for r in results], ["ok", "crashed", "ok"], p.stderr)
        self.assertEqual(results[2]["stdout"], "ran\n")


class ReportTest(TestCase):
    def test_a_snippet_that_catches_the_timeouts_ctrl_c_is_a_timeout(self):
        results, _ = run_json("import time\ntry:\n    time.sleep(3)\n"
                              "except KeyboardInterrupt:\n    print('caught')",
                              extra=["--timeout", "1"], timeout=60)
        r = results[0]
        self.assertEqual((r["status"], r["stdout"], r["state_lost"]),
                         ("timeout", "caught\n", False), r)
        self.assertIn("timed out", r["message"])

    def test_a_ctrl_c_that_never_reached_the_code_is_not_said_caught(self):
        # (a timeout so short that its ^C comes as the snippet ends, or after:
        # the kernel defers it between its own steps, and the code never saw it)
        for _ in range(5):
            results, _ = run_json("1", extra=["--timeout", "0.001"], timeout=60)
            r = results[0]
            self.assertNotIn("caught", r["message"] or "", r)
            self.assertIn(r["status"], ("ok", "timeout"), r)

    def test_output_keeps_the_order_a_terminal_shows(self):
        results, _ = run_json(
            "import subprocess, os, sys, warnings\n"
            "print('step 1')\n"
            "subprocess.run(['echo', 'from child'])\n"
            "os.system('echo from system')\n"
            "print('step 2')\n"
            "warnings.warn('careful')\n"
            "print('after', file=sys.stderr)\n"
            "print('last')", extra=["--timeout", "20"])
        r = results[0]
        self.assertEqual(r["stdout"], "step 1\nfrom child\nfrom system\nstep 2\nlast\n")
        self.assertTrue(r["stderr"].endswith("careful\n  warnings.warn('careful')\nafter\n")
                        or r["stderr"].endswith("careful\nafter\n"), r["stderr"])

    def test_a_line_printed_before_a_crash_or_a_long_c_call_is_not_lost(self):
        # sys.stdout is line-buffered as on a terminal (lines close together
        # are written together): a line before the code hangs in C, holding
        # the GIL, or crashes, is out already.
        results, _ = run_json("print('started'); sum(range(10 ** 12))",
                              extra=["--timeout", "1", "--kill-grace", "0.5"], timeout=60)
        self.assertEqual((results[0]["status"], results[0]["stdout"]), ("timeout", "started\n"))
        results, _ = run_json("import ctypes; print('last words'); ctypes.string_at(0)",
                              timeout=60)
        self.assertEqual((results[0]["status"], results[0]["stdout"]),
                         ("crashed", "last words\n"), results[0])

    def test_stream_events_keep_the_order_across_stdout_and_stderr(self):
        s = Serve()
        try:
            for code, want in (
                    ("import os; print('c'); os.write(2, b'd\\n'); print('e')",
                     [("stdout", "c\n"), ("stderr", "d\n"), ("stdout", "e\n")]),
                    ("import sys, os; sys.stderr.write('d\\n'); os.write(1, b'e\\n')",
                     [("stderr", "d\n"), ("stdout", "e\n")]),
                    ("import warnings; print('a'); warnings.warn('w'); print('b')",
                     [("stdout", "a\n"), ("stderr", None), ("stdout", "b\n")])):
                s.send({"id": code, "op": "exec", "code": code, "stream": True})
                events = []
                while True:
                    m = s.recv()
                    if m.get("event") != "stream":
                        break
                    if events and events[-1][0] == m["name"]:
                        events[-1] = (m["name"], events[-1][1] + m["text"])
                    else:
                        events.append((m["name"], m["text"]))
                self.assertEqual(m["status"], "ok", m)
                self.assertEqual([(n, t if w is not None else None)
                                  for (n, t), (_, w) in zip(events, want)], want, code)
                self.assertEqual(len(events), len(want), events)
        finally:
            self.assertEqual(s.close(), 0)

    def test_the_carets_of_the_last_line_stand_under_the_operator(self):
        results, _ = run_json("x = 1 / 0")
        tb = "".join(results[0]["error"]["traceback"])
        self.assertIn("    x = 1 / 0\n        ~~^~~\n", tb)

    def test_a_timeout_inside_repr_is_timed_as_it_ran(self):
        results, _ = run_json("class R:\n    def __repr__(self):\n        while True: pass\nR()",
                              extra=["--timeout", "1"], timeout=60)
        r = results[0]
        self.assertEqual(r["status"], "timeout", r)
        self.assertGreater(r["duration_ms"], 900)


if __name__ == "__main__":
    import unittest
    unittest.main()
