"""What the engine must survive: hostile, broken and enormous snippets.
Each test asserts what the user sees, and that the session is still usable."""
import json
import os
import select
import tempfile
import time
import unittest

from ptybox_test import VIA, Serve, TestCase, run, run_json

# A pipe that nobody reads, put over every terminal fd (the driver's own among them).
PIPE_OVER_TERMINAL = ("import os, stat\n"
                      "r, w = os.pipe()\n"
                      "for fd in range(3, 1 << 16):\n"
                      "    try:\n"
                      "        if stat.S_ISCHR(os.fstat(fd).st_mode) and os.isatty(fd):\n"
                      "            os.dup2(w, fd)\n"
                      "    except OSError:\n"
                      "        pass\n")


class ForgeryTest(TestCase):
    def test_printed_markers_and_fake_frames_are_just_output(self):
        fake = ('<<<ptybox:00000000000000000000000000000000:{"type":"result","id":2,'
                '"status":"ok","result":{"text/plain":"forged"}}:ptybox>>>')
        results, p = run_json(
            "print(%r)" % fake,
            "import os; _ = os.write(1, %r.encode()); _ = os.write(1, b':ptybox>>>\\n<<<ptybox:')" % fake,
            "print('<<<ptybox:' + ':ptybox>>>' * 3)",
            "'real'")
        self.assertEqual(len(results), 4, p.stdout)
        self.assertEqual([r["id"] for r in results], [1, 2, 3, 4])
        self.assertEqual(results[0]["stdout"], fake + "\n")
        self.assertTrue(results[1]["stdout"].startswith(fake))
        self.assertIsNone(results[1]["result"])
        self.assertEqual(results[3]["result"], {"text/plain": "'real'"})
        for r in results:
            self.assertEqual(r["status"], "ok")

    def test_nonce_is_not_in_argv_or_environment(self):
        results, _ = run_json(
            "import os, sys\n"
            "seen = ' '.join(sys.argv) + ' '.join(os.environ.values())\n"
            "for pid in os.listdir('/proc'):\n"
            "    if pid.isdigit():\n"
            "        try: seen += open('/proc/%s/cmdline' % pid, 'rb').read().decode('utf-8','replace')\n"
            "        except OSError: pass\n"
            "import re\n"
            "re.findall(r'\\b[0-9a-f]{32}\\b', seen)")
        self.assertEqual(results[0]["result"], {"text/plain": "[]"})


class SizeTest(TestCase):
    def test_large_snippets(self):
        for size in (4 * 1024, 1 << 20, 10 << 20):
            code = "s = '" + "a" * (size - 20) + "'\nlen(s)"
            with self.subTest(size=size), tempfile.NamedTemporaryFile("w", suffix=".py") as f:
                f.write(code)
                f.flush()
                p = run("run", "--json", "-c", "s = None", f.name, timeout=120)
                results = [json.loads(line) for line in p.stdout.splitlines()][1:]
                self.assertEqual(results[0]["result"], {"text/plain": str(size - 20)}, p.stderr)

    def test_large_snippets_over_serve_keep_the_session_in_step(self):
        s = Serve()
        try:
            for i, size in enumerate((4 * 1024, 1 << 20, 10 << 20)):
                r = s.exec("s = '" + "é" * (size // 2) + "'\nlen(s)", id=i, timeout=60)
                self.assertEqual(r["result"], {"text/plain": str(size // 2)})
                self.assertEqual(s.exec("s[-1] + str(len(s))", id="n%d" % i)["result"],
                                 {"text/plain": repr("é" + str(size // 2))})
        finally:
            self.assertEqual(s.close(), 0)

    def test_results_too_large_for_a_frame_are_cut_not_lost(self):
        # 3 MiB of control characters is 18 MiB of JSON, twice (value and
        # traceback): over what the client takes in one frame.  The result
        # must still come, at once, cut, with the state kept.
        results, p = run_json(
            "x = 'kept'",
            "raise ValueError('\\x01' * (3 << 20))",
            "class P:\n"
            "    def _repr_png_(self): return b'\\x89PNG' + bytes(30 << 20)\n"
            "    def __repr__(self): return 'P()'\n"
            "display(P())\n"
            "P()",
            "x", extra=["--timeout", "20"], timeout=120)
        self.assertEqual([r["status"] for r in results], ["ok", "error", "ok", "ok"], p.stderr)
        err = results[1]["error"]
        self.assertEqual(err["name"], "ValueError")
        self.assertTrue(err["value"].startswith("\x01" * 1000))
        self.assertIn("bytes truncated]", err["value"])
        self.assertTrue(err["traceback"][-1].startswith("ValueError: \x01"))
        # (a picture over --max-output is left out before it is sent)
        note = "P()\n[ptybox: image/png dropped: %d bytes, over --max-output]" % (
            ((30 << 20) + 4 + 2) // 3 * 4)
        self.assertEqual(results[2]["display"], [{"text/plain": note}])
        self.assertEqual(results[2]["result"], {"text/plain": note})
        self.assertEqual(results[3]["result"], {"text/plain": "'kept'"})
        self.assertFalse(any(r["state_lost"] for r in results))
        self.assertEqual([r["truncated"] for r in results], [False, True, True, False])

    def test_a_value_cut_to_max_output_says_truncated(self):
        results, p = run_json("'x' * 10_000", "display('y' * 5000)", "'z' * 100",
                              extra=["--max-output", "1K"])
        self.assertEqual([r["status"] for r in results], ["ok"] * 3, p.stderr)
        self.assertTrue(results[0]["result"]["text/plain"].endswith("...[8978 bytes truncated]"))
        self.assertTrue(results[1]["display"][0]["text/plain"].endswith("bytes truncated]"))
        self.assertEqual([r["truncated"] for r in results], [True, True, False])
        self.assertEqual([r["dropped_bytes"] for r in results], [0, 0, 0])
        # A thread of an earlier snippet that displays something cut: not
        # the running snippet's.
        results, p = run_json("import threading\n"
                              "go, done = threading.Event(), threading.Event()\n"
                              "def later():\n"
                              "    go.wait(30); display('y' * 5000); done.set()\n"
                              "threading.Thread(target=later).start()",
                              "go.set(); done.wait(30)", extra=["--max-output", "1K"])
        self.assertEqual([(r["status"], r["truncated"]) for r in results],
                         [("ok", False), ("ok", False)], p.stderr)

    def test_flood_is_truncated_head_and_tail_and_session_lives(self):
        t0 = time.monotonic()
        results, p = run_json(
            "import sys\nfor i in range(1024):\n    sys.stdout.write(('%07d' % i) * 131072)\n"
            "print('THE END')",
            "'still here'", extra=["--max-output", "1M"], timeout=300)
        r = results[0]
        self.assertEqual(r["status"], "ok")
        self.assertTrue(r["truncated"])
        self.assertGreater(r["dropped_bytes"], 850 << 20)
        self.assertTrue(r["stdout"].startswith("0000000" * 100))
        self.assertTrue(r["stdout"].endswith("THE END\n"))
        self.assertIn("bytes of output dropped", r["stdout"])
        self.assertLess(len(r["stdout"]), 1200 * 1024)
        self.assertEqual(results[1]["result"], {"text/plain": "'still here'"})
        print("1 GB flood: %.1f s" % (time.monotonic() - t0))


class CaptureTest(TestCase):
    def test_fd_level_output_is_captured(self):
        results, _ = run_json(
            "import os; os.write(1, b'raw\\n')",
            "os.system('echo hi; echo err >&2')",
            "import subprocess; subprocess.run(['echo', 'sub']).returncode",
            "import ctypes; ctypes.CDLL(None).puts(b'from C'); ctypes.CDLL(None).fflush(None)")
        self.assertEqual(results[0]["stdout"], "raw\n")
        self.assertEqual(results[1]["stdout"], "hi\n")
        self.assertEqual(results[1]["stderr"], "err\n")
        self.assertEqual(results[2]["stdout"], "sub\n")
        self.assertIn("from C", results[3]["stdout"])

    def test_c_stdio_output_is_its_snippets_unflushed(self):
        # printf into a pipe is block-buffered in the C library: the driver
        # flushes it before the result, not whenever a later snippet fills it.
        results, _ = run_json(
            "import ctypes; libc = ctypes.CDLL(None); libc.printf(b'from C\\n')",
            "print('s2')")
        self.assertEqual(results[0]["stdout"], "from C\n")
        self.assertEqual(results[1]["stdout"], "s2\n")

    def test_forked_children_print_into_their_snippet(self):
        # No pump runs in a forked child: its sys.stdout writes through.
        results, _ = run_json(
            "import multiprocessing as mp\n"
            "def f(x): print('worker', x)\n"
            "p = mp.get_context('fork').Pool(1)\n"
            "p.apply(f, (1,))",
            "import os\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    print('child'); os._exit(0)\n"
            "os.waitpid(pid, 0); print('parent')",
            "p.close(); p.join(); print('joined')")
        self.assertEqual([r["stdout"] for r in results],
                         ["worker 1\n", "child\nparent\n", "joined\n"], results)

    def test_unicode_round_trips_and_invalid_utf8_is_replaced(self):
        text = "emoji 😀👍🏽, CJK 漢字かな한국어, combining e\u0301 a\u0308\u0301, rtl שלום"
        results, _ = run_json(
            "print(%r)" % text,
            "import os; os.write(1, b'bad \\xff\\xfe \\xc3( end\\n')",
            "import os; os.write(1, bytes(range(256)))",
            "%r" % text)
        self.assertEqual(results[0]["stdout"], text + "\n")
        self.assertEqual(results[1]["stdout"], "bad \ufffd\ufffd \ufffd( end\n")
        self.assertEqual(results[2]["status"], "ok")
        self.assertIn("\ufffd", results[2]["stdout"])
        self.assertEqual(results[3]["result"], {"text/plain": repr(text)})


    # The driver's private fds (numbered from 1000): the write end of the pipe
    # behind fd 1, and the write end of the pump's wake-up pipe.
    FIND_OURS = (
        "import os, fcntl, stat\n"
        "def ours(match):\n"
        "    for f in sorted(int(x) for x in os.listdir('/proc/self/fd')):\n"
        "        if f < 10: continue\n"
        "        try: st = os.fstat(f)\n"
        "        except OSError: continue\n"
        "        w = fcntl.fcntl(f, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY\n"
        "        if w and stat.S_ISFIFO(st.st_mode) and match(st.st_ino): return f\n"
        "pipes = {os.fstat(1).st_ino, os.fstat(2).st_ino}\n")

    def test_output_survives_the_code_closing_our_end_of_its_pipe(self):
        # The kernel's copy of its stdout pipe, closed: what the snippet
        # writes still arrives (the relay holds the other end), and the next
        # snippet has its output, on this kernel or on a fresh one.
        s = Serve("--max-output", "1000")
        try:
            r = s.exec(self.FIND_OURS + "os.close(ours(lambda ino: ino == os.fstat(1).st_ino))\n"
                       "_ = os.write(1, b'h' * 600 + b't' * 1400)", id="b")
            if r["status"] == "ok":
                self.assertEqual(r["stdout"], "h" * 500 + "\n[ptybox: 1000 bytes of output "
                                 "dropped]\n" + "t" * 500)
                self.assertEqual(r["dropped_bytes"], 1000)
            else:
                self.assertEqual((r["status"], r["state_lost"]), ("crashed", True), r)
            r = s.exec("print('next'); display(2)", id="c")
            if r["status"] == "crashed":     # (it reached the kernel as that gave way)
                r = s.exec("print('next'); display(2)", id="d")
            self.assertEqual((r["stdout"], r["display"]), ("next\n", [{"text/plain": "2"}]))
        finally:
            self.assertEqual(s.close(), 0)

    def test_a_closed_message_pipe_gives_a_fresh_kernel_at_once(self):
        # The kernel's other write-only pipe is the one to its relay: closed,
        # the result cannot go, and the kernel gives way to a fresh one at
        # once (no thread left spinning, no wait for the timeout).
        s = Serve("--timeout", "0")
        try:
            t0 = time.monotonic()
            r = s.exec(self.FIND_OURS + "os.close(ours(lambda ino: ino not in pipes))\n1",
                       id="a")
            self.assertEqual((r["status"], r["state_lost"]), ("crashed", True), r)
            self.assertIn("the interpreter died", r["message"])
            self.assertLess(time.monotonic() - t0, 10)
            r = s.exec("import os; _ = os.write(1, b'raw\\n'); print('text')", id="b")
            self.assertEqual(r["stdout"], "raw\ntext\n")
        finally:
            self.assertEqual(s.close(), 0)


class ExitAndInputTest(TestCase):
    def test_sys_exit_is_an_error_and_state_lives(self):
        results, _ = run_json("x = 7", "import sys; sys.exit(3)", "x")
        self.assertEqual(results[1]["status"], "error")
        self.assertEqual(results[1]["error"]["name"], "SystemExit")
        self.assertEqual(results[1]["error"]["value"], "3")
        self.assertFalse(results[1]["state_lost"])
        self.assertEqual(results[2]["result"], {"text/plain": "7"})

    def test_input_fails_at_once_and_does_not_eat_the_next_request(self):
        t0 = time.monotonic()
        results, _ = run_json("input('name? ')", "import sys; sys.stdin.read()", "'next'",
                              timeout=30)
        self.assertLess(time.monotonic() - t0, 10)
        # as python3 < /dev/null has them: input() raises, read() is end of file
        self.assertEqual((results[0]["status"], results[0]["error"]["name"],
                          results[0]["error"]["value"]),
                         ("error", "EOFError", "EOF when reading a line"))
        self.assertEqual((results[1]["status"], results[1]["result"]),
                         ("ok", {"text/plain": "''"}))
        self.assertEqual(results[2]["result"], {"text/plain": "'next'"})

    def test_an_exception_whose_traceback_cannot_be_formatted_keeps_its_value(self):
        # (traceback itself fails on a file name with a lone surrogate)
        results, _ = run_json("exec(compile('1/0', 'f\\ud800.py', 'exec'))", "'alive'")
        e = results[0]["error"]
        self.assertEqual((e["name"], e["value"]), ("ZeroDivisionError", "division by zero"))
        self.assertEqual(e["traceback"], ["ZeroDivisionError: division by zero\n"])
        self.assertEqual(results[1]["result"], {"text/plain": "'alive'"})

    def test_keyboard_interrupt_raised_by_code(self):
        results, _ = run_json("raise KeyboardInterrupt", "'alive'")
        self.assertEqual(results[0]["error"]["name"], "KeyboardInterrupt")
        self.assertFalse(results[0]["state_lost"])
        self.assertEqual(results[1]["result"], {"text/plain": "'alive'"})


class TimeoutTest(TestCase):
    def test_busy_loop_times_out_and_state_is_kept(self):
        t0 = time.monotonic()
        results, _ = run_json("x = 'kept'", "while True: pass", "x",
                              extra=["--timeout", "1"])
        self.assertEqual(results[1]["status"], "timeout")
        self.assertFalse(results[1]["state_lost"])
        self.assertEqual(results[2]["result"], {"text/plain": "'kept'"})
        self.assertLess(time.monotonic() - t0, 8)

    def test_code_that_catches_the_timeouts_interrupt_still_times_out(self):
        # The ^C stopped its work: status timeout, with what the code made of
        # it, and no frame of the driver in a traceback chained to the ^C.
        results, _ = run_json(
            "x = 'kept'",
            "import time\n"
            "try:\n"
            "    time.sleep(30)\n"
            "except KeyboardInterrupt:\n"
            "    print('caught')\n"
            "'partial'",
            "try:\n"
            "    time.sleep(30)\n"
            "except KeyboardInterrupt:\n"
            "    1 / 0",
            "x", extra=["--timeout", "1"])
        r = results[1]
        self.assertEqual((r["status"], r["stdout"], r["result"], r["state_lost"]),
                         ("timeout", "caught\n", {"text/plain": "'partial'"}, False), r)
        self.assertIn("caught the ^C", r["message"])
        r = results[2]
        self.assertEqual((r["status"], r["error"]["name"]), ("error", "ZeroDivisionError"), r)
        self.assertIn("KeyboardInterrupt\n", r["error"]["traceback"])
        self.assertNotIn("ptybox-driver", "".join(r["error"]["traceback"]))
        self.assertIn("timed out", r["message"])
        self.assertEqual(results[3]["result"], {"text/plain": "'kept'"})

    def test_code_that_ignores_sigint_is_killed_and_restarted(self):
        t0 = time.monotonic()
        results, _ = run_json(
            "x = 1",
            "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass",
            "'x' in globals()", extra=["--timeout", "1", "--kill-grace", "1"])
        self.assertEqual(results[1]["status"], "timeout")
        self.assertTrue(results[1]["state_lost"])
        self.assertEqual(results[2]["status"], "ok")
        self.assertEqual(results[2]["result"], {"text/plain": "False"})
        self.assertLess(time.monotonic() - t0, 10)

    def test_stopped_process_is_killed_and_restarted(self):
        results, _ = run_json("import os, signal; os.kill(os.getpid(), signal.SIGSTOP)", "1+1",
                              extra=["--timeout", "1", "--kill-grace", "1"])
        self.assertEqual(results[0]["status"], "timeout")
        self.assertTrue(results[0]["state_lost"])
        self.assertEqual(results[1]["result"], {"text/plain": "2"})


class CrashTest(TestCase):
    def assertCrashedAndRestarted(self, code):
        results, p = run_json("x = 1", code, "'x' in globals()")
        self.assertEqual(len(results), 3, p.stderr)
        self.assertEqual(results[1]["status"], "crashed", results[1])
        self.assertTrue(results[1]["state_lost"])
        self.assertTrue(results[1]["message"])
        self.assertEqual(results[2]["status"], "ok")
        self.assertEqual(results[2]["result"], {"text/plain": "False"})
        return results[1]

    def test_os_exit(self):
        r = self.assertCrashedAndRestarted("import os; os._exit(7)")
        self.assertIn("exit status 7", r["message"])
        r = self.assertCrashedAndRestarted("import os; os._exit(3)")   # (not the driver's own)
        self.assertIn("the interpreter died (exit status 3)", r["message"])

    def test_what_was_written_before_os_exit_is_in_the_result(self):
        # The pipes that hold it die with the process: the pump may not
        # have read them yet (half the time it had not).
        code = "import os, sys; _ = os.write(1, b'last words\\n'); print('buffered'); os._exit(5)"
        results, p = run_json(*[code] * 5)
        self.assertEqual(len(results), 5, p.stderr)
        for r in results:
            self.assertEqual((r["status"], r["stdout"]), ("crashed", "last words\nbuffered\n"), r)
            self.assertIn("exit status 5", r["message"])

    def test_an_os_exit_that_fails_sends_nothing_twice(self):
        code = ("import os, sys\n"
                "for i in range(20): print('line%02d' % i)\n"
                "try:\n"
                "    os._exit('bad')\n"
                "except TypeError:\n"
                "    pass\n"
                "for i in range(20, 23): print('after%02d' % i)")
        plain = code.replace("os._exit('bad')", "pass")
        results, p = run_json(code, plain, extra=["--max-output", "100"])
        self.assertEqual([r["status"] for r in results], ["ok", "ok"], p.stderr)
        self.assertEqual(results[0]["dropped_bytes"], results[1]["dropped_bytes"])
        self.assertTrue(results[0]["stdout"].endswith("after22\n"), results[0]["stdout"])
        self.assertEqual(results[0]["stdout"].count("after21"), 1)

    def test_segfault(self):
        r = self.assertCrashedAndRestarted("import ctypes; ctypes.string_at(0)")
        self.assertIn("signal 11", r["message"])

    def test_closing_std_fds_does_not_lose_the_session(self):
        results, _ = run_json("x = 1", "import os; os.close(0); os.close(1); os.close(2)",
                              "print('back'); x")
        self.assertEqual(results[2]["stdout"], "back\n")
        # either the driver survived (state kept) or it restarted and said so
        self.assertTrue(results[2]["result"] == {"text/plain": "1"} or results[1]["state_lost"])

    def test_closing_any_one_private_fd_keeps_state_and_capture(self):
        # The driver's pipes and /dev/null, one at a time, each by a snippet
        # too short for the thorough check: the next one still has its output.
        codes = ["x = 1\nimport os\n"
                 "fds = sorted(int(f) for f in os.listdir('/proc/self/fd') if int(f) >= 3)\n"
                 "fds = [fd for fd in fds if fd >= 100 and not os.isatty(fd)]\n"
                 "len(fds)"]
        for k in range(9):
            codes += ["os.close(fds[%d])" % k,
                      "fds = sorted(int(f) for f in os.listdir('/proc/self/fd') if int(f) >= 3)\n"
                      "fds = [fd for fd in fds if fd >= 100 and not os.isatty(fd)]\n"
                      "print('back'); _ = os.write(1, b'fd1\\n'); x + %d" % k]
        codes.append("print('still here')")
        results, p = run_json(*codes, timeout=120)
        self.assertEqual(len(results), 20, p.stderr)
        self.assertEqual((results[-1]["status"], results[-1]["stdout"]), ("ok", "still here\n"))
        self.assertEqual(results[0]["result"], {"text/plain": "9"})
        # The kernel's fds: its pipes to the relay, its copies of the capture
        # pipes and /dev/null, its watchdog's wake-up pipe, sys.stdin's own
        # /dev/null and the stdin stream's pipe (kernel_input.py; closing those
        # costs nothing). One gone, the kernel gives way to a fresh one (its
        # relay holds the other ends); the output of the next snippet is
        # whole, in the order written, and the loss of state is said.
        for k in range(9):
            breaker, r = results[1 + 2 * k], results[2 + 2 * k]
            if "crashed" in (breaker["status"], r["status"]) or breaker["state_lost"] \
                    or r["state_lost"]:
                break                        # a fresh kernel: the fds named are gone
            self.assertEqual((r["status"], r["stdout"]), ("ok", "back\nfd1\n"), (k, breaker))

    def test_closing_every_fd_gives_a_fresh_kernel_and_the_session_goes_on(self):
        results, p = run_json("x = 1", "import os; os.closerange(0, 1 << 16)",
                              "print('back'); x", timeout=90)
        self.assertEqual(len(results), 3, p.stderr)
        self.assertEqual(results[2]["stdout"], "back\n")
        # The kernel's pipes go with them: a fresh kernel, said so.
        self.assertTrue(results[1]["state_lost"] or results[2]["state_lost"], results)

    def test_a_kernel_whose_pipes_closed_is_replaced_at_once(self):
        # Closing every fd closes the kernel's pipes to its relay while it runs
        # on, unreachable: its watchdog ends it at once, the relay says so and
        # starts a fresh one, rather than a wait for the timeout.
        p = run("run", "--via", "none", "--json", "--timeout", "0", "-c", "x = 1",
                "-c", "import os, time\nos.closerange(3, 1 << 16)\ntime.sleep(30)",
                "-c", "x", via=False, timeout=60)
        results = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
        self.assertEqual([r["status"] for r in results], ["ok", "crashed", "error"], p.stderr)
        self.assertIn("the interpreter died", results[1]["message"])
        self.assertTrue(results[1]["state_lost"])
        self.assertLess(results[1]["duration_ms"], 5000)
        self.assertEqual(results[2]["error"]["name"], "NameError")

    def test_requests_sent_while_an_idle_interpreter_dies_keep_their_ids(self):
        # The interpreter dies between snippets (a thread's os._exit) while a
        # process it started holds its pipes. Requests sent in that window were answered inside
        # serve's exec, before it had recorded their ids: replies went out
        # under wrong ids, and every later one too.
        with tempfile.TemporaryDirectory() as tmp:
            fifo = os.path.join(tmp, "go")
            os.mkfifo(fifo)
            s = Serve(via="none")
            try:
                r = s.exec("import os, subprocess, threading\n"
                           "held = subprocess.Popen(['sleep', '3'], start_new_session=True)\n"
                           "def die():\n"
                           "    open(%r).close()\n"
                           "    os._exit(0)\n"
                           "threading.Thread(target=die).start()\n"
                           "os.getpid()" % fifo, id="A")
                self.assertOk(r)
                pidfd = os.pidfd_open(int(r["result"]["text/plain"]))
                try:
                    os.close(os.open(fifo, os.O_WRONLY))   # the thread goes on: os._exit
                    self.assertTrue(select.select([pidfd], [], [], 10)[0], "it did not die")
                finally:
                    os.close(pidfd)
                for id in "BCD":
                    s.send({"id": id, "op": "exec", "code": "x = %r; x" % id})
                replies = [s.recv() for _ in "BCD"]
                self.assertEqual([m.get("id") for m in replies], list("BCD"), replies)
                # B ran on the fresh interpreter, or (if it came before ptybox
                # had seen the exit) went to the dead one and says so.
                b = replies[0]
                if b["status"] == "crashed":
                    self.assertIn("the interpreter died", b["message"])
                else:
                    self.assertEqual((b["status"], b["result"]), ("ok", {"text/plain": "'B'"}))
                for m, id in zip(replies[1:], "CD"):
                    self.assertEqual((m["status"], m["result"]),
                                     ("ok", {"text/plain": repr(id)}), m)
                self.assertEqual([m["state_lost"] for m in replies], [True, False, False])
                self.assertEqual(s.exec("x", id="E")["result"], {"text/plain": "'D'"})
            finally:
                self.assertEqual(s.close(), 0, s.stderr)

    def test_replacing_the_terminal_fd_does_not_lose_the_result(self):
        # dup2 of a pipe that nobody reads over the driver's terminal fd: the
        # driver sees it before the result, which would not fit in the pipe,
        # and reopens the terminal (in the sandbox, whose init holds it;
        # elsewhere the terminal closed).
        results, p = run_json(
            "x = 1",
            PIPE_OVER_TERMINAL + "'x' * 200000",                    # more than the pipe holds
            "x + 1", timeout=90)
        self.assertEqual(len(results), 3, p.stderr)
        if VIA == "local":
            self.assertEqual([r["status"] for r in results], ["ok", "ok", "ok"], p.stderr)
            self.assertEqual(len(results[1]["result"]["text/plain"]), 200002)
            self.assertEqual(results[2]["result"], {"text/plain": "2"})
        else:                                # nothing else held the terminal: a crash, at once
            self.assertEqual(results[1]["status"], "crashed", results[1])
            self.assertTrue(results[1]["state_lost"])
            self.assertIn("terminal closed", results[1]["message"])
            self.assertLess(results[1]["duration_ms"], 5000)
            self.assertEqual(results[2]["error"]["name"], "NameError")

    def test_output_sent_while_a_pipe_sits_on_the_terminal_fd(self):
        # The pump forwards output while the snippet runs: into the pipe, had
        # it not checked the fd first, until the pipe was full and it blocked.
        results, p = run_json(
            "x = 1",
            PIPE_OVER_TERMINAL + "import time\n"
            "for i in range(40):\n"
            "    _ = os.write(1, b'x' * 8192)\n"
            "    time.sleep(0.002)",
            "x + 1", extra=("--timeout", "20"), timeout=90)
        self.assertEqual(len(results), 3, p.stderr)
        if VIA == "local":
            self.assertEqual([r["status"] for r in results], ["ok", "ok", "ok"], p.stderr)
            self.assertEqual(len(results[1]["stdout"]), 40 * 8192)
            self.assertEqual(results[2]["result"], {"text/plain": "2"})
        else:                                # the terminal closed: a crash, at once
            self.assertEqual(results[1]["status"], "crashed", results[1])
            self.assertLess(results[1]["duration_ms"], 5000)

    def test_the_code_cannot_reach_the_terminal(self):
        # The code has no terminal to change: no controlling terminal, no fd
        # of it. Requests longer than a canonical line still arrive whole.
        codes = ["import os, sys\n"
                 "try:\n"
                 "    os.open('/dev/tty', os.O_RDWR)\n"
                 "except OSError as e:\n"
                 "    print(e.errno)\n"
                 "[fd for fd in map(int, os.listdir('/proc/self/fd')) if os.isatty(fd)]"]
        for i in range(20):
            codes += ["s = '" + "y" * 6000 + "'\nlen(s) + %d" % i]
        results, p = run_json(*codes, timeout=60)
        self.assertEqual([r["status"] for r in results], ["ok"] * 21, p.stdout)
        self.assertEqual((results[0]["stdout"], results[0]["result"]),
                         ("6\n", {"text/plain": "[]"}))   # ENXIO
        for i in range(20):
            self.assertEqual(results[1 + i]["result"], {"text/plain": str(6000 + i)})

    def test_what_a_fast_snippet_breaks_is_put_back_for_the_next(self):
        # Each breaker is far under 1 ms and follows another at once (so the
        # quick check follows it, not the thorough one: that one runs after
        # the first snippet, and 10 ms after the last), and the next snippet
        # must find stdio, fds 0-2, input(), display() and __main__ as a
        # fresh session has them.
        breakers = [
            "import io, sys; sys.stdout = io.StringIO()",
            "import sys; sys.stdout.close()",
            "import sys; sys.stderr.detach()",
            "import sys; sys.stdout.buffer.close()",
            "import io, sys; io.TextIOWrapper.detach(sys.stdout)",
            "import io, sys; io.RawIOBase.close(sys.stderr.buffer)",
            "import io, sys; sys.stdout = io.TextIOWrapper(sys.stdout.buffer, encoding='utf-8')",
            "import sys; del sys.stdout._ptybox_buf",
            "import sys; del sys.stdout",
            "import sys; del sys.modules",
            "import sys; sys.stdin.close()",
            "import sys; sys.__stdout__ = sys.__stderr__ = None",
            "import sys; sys.stdin = None",
            "import os; os.dup2(os.open(os.devnull, os.O_WRONLY), 1)",
            "import os; os.close(2)",
            "import builtins; builtins.input = builtins.display = len",
            "import sys; sys.modules['__main__'] = sys",
        ]
        check = ("import sys, os, builtins\n"
                 "print('out'); print('err', file=sys.stderr); _ = os.write(1, b'fd1\\n')\n"
                 "try:\n"
                 "    input()\n"
                 "except EOFError:\n"
                 "    pass\n"
                 "(sys.__stdout__ is sys.stdout, sys.stdin is sys.__stdin__,\n"
                 " callable(display), builtins.input is not len,\n"
                 " sys.modules['__main__'].__dict__ is globals(), sys.stdin.closed)")
        codes = ["pass"]
        for b in breakers:
            codes += [b, check]
        results, p = run_json(*codes, timeout=90)
        self.assertEqual(len(results), 1 + 2 * len(breakers), p.stderr)
        for i, b in enumerate(breakers):
            r = results[2 * i + 2]
            self.assertEqual((r["status"], r["stdout"], r["stderr"], r["state_lost"]),
                             ("ok", "out\nfd1\n", "err\n", False), (b, results[2 * i + 1], r))
            self.assertEqual(r["result"], {"text/plain": "(True, True, True, True, True, False)"},
                             b)

    def test_sigint_blocked_or_ignored_by_a_snippet_interrupts_the_next(self):
        # The SIGINT handler and mask are put back before the next snippet:
        # its timeout interrupts it (state kept), no kill needed.
        for breaker in ("import signal; signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])",
                        "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN)",
                        "import signal; signal.signal(signal.SIGINT, lambda *a: None)"):
            with self.subTest(breaker=breaker):
                results, _ = run_json("x = 'kept'", breaker, "while True: pass", "x",
                                      extra=["--timeout", "1", "--kill-grace", "5"])
                self.assertEqual(results[1]["status"], "ok")
                self.assertEqual((results[2]["status"], results[2]["state_lost"]),
                                 ("timeout", False))
                self.assertEqual(results[3]["result"], {"text/plain": "'kept'"})

    def test_child_processes_start_with_default_signals(self):
        results, _ = run_json(
            "import subprocess\n"
            "print(subprocess.run(['grep', '-E', '^Sig(Blk|Ign)', '/proc/self/status'],"
            " capture_output=True, text=True).stdout)")
        out = results[0]["stdout"]
        self.assertIn("SigBlk:\t0000000000000000", out)
        self.assertIn("SigIgn:\t0000000000000000", out)


class DriverDamageTest(TestCase):
    def test_builtins_deleted_by_a_snippet_leave_the_driver_working(self):
        results, _ = run_json(
            "x = 5",
            "import builtins\n"
            "for n in ('type', 'any', 'len', 'isinstance', 'str', 'repr', 'min', 'sorted'):\n"
            "    delattr(builtins, n)",
            "print(x)",
            "x + 1")
        self.assertEqual([r["status"] for r in results], ["ok"] * 4, results)
        self.assertEqual(results[2]["stdout"], "5\n")
        self.assertEqual(results[3]["result"], {"text/plain": "6"})
        self.assertFalse(any(r["state_lost"] for r in results))

    def test_a_signal_handler_raising_between_snippets_loses_no_request(self):
        # A timer whose handler raises fires in the driver's own code too,
        # between reading a request and running it: each request still runs
        # once and gets its result, and nothing is taken for a broken driver
        # or a lost terminal (TimeoutError is an OSError).
        n = 100
        for exc in ("ValueError", "TimeoutError"):
            with self.subTest(exc=exc):
                results, p = run_json(
                    "import signal\n"
                    "L = []\n"
                    "def boom(*a): raise %s('tick')\n"
                    "signal.signal(signal.SIGALRM, boom)\n"
                    "signal.setitimer(signal.ITIMER_REAL, 0.003, 0.003)" % exc,
                    *["L.append(%d)" % i for i in range(n)],
                    "while True:\n"
                    "    try:\n"
                    "        signal.setitimer(signal.ITIMER_REAL, 0, 0)\n"
                    "        break\n"
                    "    except %s:\n"
                    "        pass" % exc,
                    "sorted(L) == [i for i in range(%d) if i in L] and len(L) == len(set(L))"
                    % n, extra=["--timeout", "10"], timeout=300)
                self.assertEqual(len(results), n + 3, p.stderr)
                for r in results:
                    self.assertIn((r["status"], (r["error"] or {}).get("name")),
                                  {("ok", None), ("error", exc)}, r)
                    self.assertFalse(r["state_lost"], r)
                self.assertEqual(results[-1]["result"], {"text/plain": "True"})

    def test_a_driver_that_cannot_read_requests_is_replaced(self):
        # The kernel parses requests with its own JSON decoder, which a
        # snippet can still reach through the frame that runs it: broken
        # there, it cannot take a request, and a fresh kernel must take over
        # rather than every later snippet failing.
        results, _ = run_json(
            "x = 1",
            "import sys; sys._getframe(1).f_globals['_loads'] = None",
            "x",
            "'fresh' if 'x' not in globals() else 'old'")
        self.assertEqual(len(results), 4, results)
        r = results[2]
        self.assertEqual((r["status"], r["state_lost"]), ("crashed", True), r)
        self.assertIn("restarted with fresh state", r["message"])
        self.assertEqual((results[3]["status"], results[3]["result"]),
                         ("ok", {"text/plain": "'fresh'"}), results[3])

    def test_a_result_cut_short_even_in_the_drivers_recovery_is_still_sent(self):
        # An exception raised inside _stray itself (here by a tracer that the
        # code puts on its frame) left the result owed for good: the client
        # waited for the timeout, forever with --timeout 0.
        results, p = run_json(
            "keep = 42",
            "import sys\n"
            "class E(Exception):\n"
            "    def __str__(self):\n"
            "        f = sys._getframe()\n"
            "        while f is not None and f.f_code.co_name != '_stray':\n"
            "            f = f.f_back\n"
            "        def lt(frame, ev, arg):\n"
            "            if ev == 'line':\n"
            "                raise RuntimeError('escape')\n"
            "            return lt\n"
            "        f.f_trace = lt\n"
            "        sys.settrace(lambda *a: None)\n"
            "        raise ValueError\n"
            "class P:\n"
            "    def __getattr__(self, name):\n"
            "        del sys.modules['matplotlib.pyplot']\n"
            "        raise E()\n"
            "sys.modules['matplotlib.pyplot'] = P()",
            "keep", extra=["--timeout", "0"], timeout=60)
        self.assertEqual([r["status"] for r in results], ["ok", "error", "ok"], p.stderr)
        self.assertEqual(results[2]["result"], {"text/plain": "42"})
        self.assertFalse(any(r["state_lost"] for r in results))

    def test_a_driver_that_cannot_send_results_is_replaced_at_once(self):
        # User code that breaks what every result needs (here reaching into
        # the driver's globals; a sys.monitoring callback that raises in
        # every call does as much): a fresh interpreter at once, not a wait
        # for the timeout (forever with --timeout 0).
        t0 = time.monotonic()
        results, p = run_json(
            "x = 1",
            "import sys\n"
            "g = sys._getframe(1).f_globals\n"
            "def boom(*a): raise RuntimeError('no payload')\n"
            "g['_dumps'] = g['_fit_error'] = boom",
            "x", "'x' in globals()", extra=["--timeout", "0"], timeout=60)
        self.assertEqual([r["status"] for r in results], ["ok", "ok", "crashed", "ok"], p.stderr)
        self.assertIn("could not make or send the snippet's result", results[2]["message"])
        self.assertTrue(results[2]["state_lost"])
        self.assertEqual(results[3]["result"], {"text/plain": "False"})
        self.assertLess(time.monotonic() - t0, 20)

    def test_replacing_what_the_driver_calls_breaks_only_the_snippets_world(self):
        # The driver's os, fcntl, _signal ... are its own: a snippet that
        # replaces a function in the modules it shares with them (or
        # linecache) neither hangs the session nor fails every later snippet.
        for patch in ("import os; os.read = None", "import os; os.writev = None",
                      "import os; os.fstat = None", "import os; os.dup2 = None",
                      "import fcntl; fcntl.ioctl = None",
                      "import termios; termios.tcgetattr = None",
                      "import _signal; _signal.getsignal = None",
                      "import _signal; _signal.pthread_sigmask = None",
                      "import select; select.poll = None",
                      "import sys; sys.modules['linecache'] = 5"):
            with self.subTest(patch=patch):
                results, p = run_json("x = 1", patch, "print('after'); x", "x + 1",
                                      extra=["--timeout", "10"], timeout=60)
                self.assertEqual(len(results), 4, p.stderr)
                self.assertEqual([r["status"] for r in results], ["ok"] * 4, results)
                self.assertEqual(results[2]["stdout"], "after\n")
                self.assertEqual(results[3]["result"], {"text/plain": "2"})
                self.assertFalse(any(r["state_lost"] for r in results))

    def test_tracers_and_gc_callbacks_that_print_keep_the_session_in_step(self):
        # Their calls in the driver's own frames would print from inside
        # its writes, under their locks: the session hung for good.
        for setup in ("import sys\n"
                      "def t(f, e, a):\n"
                      "    if e == 'call': print('T', f.f_code.co_name)\n"
                      "sys.settrace(t)",
                      "import sys\n"
                      "def t(f, e, a): print('P', e)\n"
                      "sys.setprofile(t)",
                      "import gc\n"
                      "gc.set_threshold(1)\n"
                      "def cb(phase, info): print('gc', phase)\n"
                      "gc.callbacks.append(cb)"):
            with self.subTest(setup=setup.splitlines()[-1]):
                results, p = run_json("x = 1", setup, "def f(): return x\nprint('after'); f()",
                                      "import sys, gc; sys.settrace(None); sys.setprofile(None); "
                                      "gc.callbacks.clear(); x + 1",
                                      extra=["--timeout", "10"], timeout=60)
                self.assertEqual(len(results), 4, p.stderr)
                self.assertEqual([r["status"] for r in results], ["ok"] * 4, results)
                # (print's two writes, the tracer's lines between them)
                self.assertIn("after", results[2]["stdout"])
                self.assertEqual(results[2]["result"], {"text/plain": "1"})
                self.assertEqual(results[3]["result"], {"text/plain": "2"})
                if "settrace" in setup:      # the user's own frames are traced
                    self.assertIn("T f\n", results[2]["stdout"])

    def test_a_line_buffered_stdout_over_fd_1_leaves_fd_1_to_the_next_snippet(self):
        # The classic idiom: the driver puts its sys.stdout back, and the
        # user's file object, dropped, closes fd 1 as it goes.
        results, _ = run_json("import os, sys\n"
                              "sys.stdout = os.fdopen(sys.stdout.fileno(), 'w', 1)\n"
                              "print('line-buffered')",
                              "print('after')", "import os; _ = os.write(1, b'raw\\n')")
        self.assertEqual([r["status"] for r in results], ["ok"] * 3, results)
        self.assertEqual([r["stdout"] for r in results],
                         ["line-buffered\n", "after\n", "raw\n"])

    def test_a_file_limit_below_the_drivers_fds_still_gets_every_result(self):
        # poll() fails (EINVAL) when given more fds than RLIMIT_NOFILE: the
        # result never came.
        results, p = run_json("x = 1",
                              "import resource; resource.setrlimit(resource.RLIMIT_NOFILE, (3, 3))",
                              "print('after'); x", "import os; _ = os.write(1, b'raw'); x + 1",
                              extra=["--timeout", "10"], timeout=60)
        self.assertEqual(len(results), 4, p.stderr)
        self.assertEqual([r["status"] for r in results], ["ok"] * 4, results)
        self.assertEqual(results[2]["stdout"], "after\n")
        self.assertEqual((results[3]["stdout"], results[3]["result"]), ("raw", {"text/plain": "2"}))
        # Below 3 not even select() works: the kernel opens no fd on its
        # way to a result, and goes on with its state.
        results, p = run_json("x = 1",
                              "import resource; resource.setrlimit(resource.RLIMIT_NOFILE, (0, 0))",
                              "print('after'); x", "'x' in globals()",
                              extra=["--timeout", "10"], timeout=60)
        self.assertEqual([r["status"] for r in results], ["ok", "ok", "ok", "ok"], p.stderr)
        self.assertEqual(results[2]["stdout"], "after\n")
        self.assertEqual(results[3]["result"], {"text/plain": "True"})
        self.assertFalse(any(r["state_lost"] for r in results))

    def test_display_in_a_signal_handler_never_splits_a_frame(self):
        # A result frame too big for the terminal's buffer goes out in
        # pieces, and a handler that fires in between and displays must not
        # write its frame into the middle of it (the result was lost).
        results, p = run_json(
            "import signal\n"
            "n = 0\n"
            "def h(s, f):\n"
            "    global n; n += 1; display('D')\n"
            "signal.signal(signal.SIGALRM, h)\n"
            "signal.setitimer(signal.ITIMER_REAL, 0.002, 0.002)",
            *["len('x' * 3000000)", "'x' * 3000000"] * 3,
            "import signal; signal.setitimer(signal.ITIMER_REAL, 0, 0); n > 0",
            extra=["--timeout", "20"], timeout=120)
        self.assertEqual(len(results), 8, p.stderr)
        # Every result comes, whole. (A handler that fires faster than it
        # returns may nest in itself until RecursionError, as it would in
        # plain Python when its output blocks: that snippet's own error.)
        for r in results:
            self.assertIn((r["status"], (r["error"] or {}).get("name")),
                          {("ok", None), ("error", "RecursionError")}, r["message"])
        self.assertFalse(any(r["state_lost"] for r in results))
        big = [r for r in results[2:7:2] if r["status"] == "ok"]
        for r in big:
            self.assertEqual(r["result"], {"text/plain": repr("x" * 3000000)})
        # (Before, a handler's frame went into the result's, or waited on
        # the lock that the result's write held: none came.)
        self.assertGreaterEqual(len(big), 2, [r["status"] for r in results])
        self.assertEqual(results[-1]["result"], {"text/plain": "True"})

    def test_a_process_forked_by_a_leftover_thread_prints_as_late_output(self):
        s = Serve(via="none")
        try:
            self.assertOk(s.exec(
                "import os, threading\n"
                "go, done = threading.Event(), threading.Event()\n"
                "def later():\n"
                "    go.wait(30)\n"
                "    pid = os.fork()\n"
                "    if pid == 0:\n"
                "        try:\n"
                "            print('child says hi', flush=True)\n"
                "        except BaseException as e:\n"
                "            os.write(2, ('child print failed: %r' % (e,)).encode())\n"
                "        os._exit(0)\n"
                "    os.waitpid(pid, 0)\n"
                "    done.set()\n"
                "threading.Thread(target=later).start()", id=1))
            s.send({"id": 2, "op": "exec", "code": "go.set(); done.wait(30)"})
            late = ""
            while True:
                m = s.recv()
                if m.get("event") != "stream":
                    break
                self.assertEqual((m["id"], m.get("late")), (1, True), m)
                late += m["text"]
            self.assertEqual((m["id"], m["status"], m["result"]), (2, "ok", {"text/plain": "True"}))
            self.assertEqual(late, "child says hi\n")
        finally:
            self.assertEqual(s.close(), 0, s.stderr)

    def test_a_fake_pyplot_with_endless_figures_does_not_hang_the_driver(self):
        results, p = run_json(
            "import sys, types\n"
            "m = types.ModuleType('matplotlib.pyplot')\n"
            "m.get_fignums = lambda: iter(int, 1)\n"
            "m.figure = m.close = lambda n: None\n"
            "sys.modules['matplotlib.pyplot'] = m",
            "print('after')", extra=["--timeout", "10"], timeout=60)
        self.assertEqual([r["status"] for r in results], ["ok", "ok"], p.stderr)
        self.assertEqual(results[1]["stdout"], "after\n")


class LateOutputTest(TestCase):
    def test_late_output_held_back_over_its_budget_is_not_the_next_snippets(self):
        # Past max_output of late output the driver stops reading the pipe;
        # what waits there when the next request comes is dropped as late,
        # not taken for the new snippet's output.
        s = Serve("--max-output", "1000")
        try:
            s.exec("import os, threading, time\n"
                   "def bg():\n"                      # (its sleeps pace the scenario)
                   "    time.sleep(0.2)\n"               # after its snippet's result:
                   "    os.write(1, b'z' * 2000)\n"      # over the budget, reading stops
                   "    time.sleep(0.3)\n"
                   "    os.write(1, b'z' * 3000)\n"      # so this stays in the pipe
                   "    os.write(2, b'done\\n')\n"
                   "threading.Thread(target=bg).start()", id="bg")
            while True:  # stderr's late output says the stdout bytes are there
                m = s.recv(timeout=20)
                if m.get("name") == "stderr" and m.get("late"):
                    self.assertEqual(m["text"], "done\n")
                    break
            r = s.exec("print('mine')", id="next")
            self.assertEqual(r["stdout"], "mine\n")
            self.assertFalse(r["truncated"])
        finally:
            self.assertEqual(s.close(), 0)

    def test_each_snippets_text_is_its_own_while_a_thread_floods_late_output(self):
        # A thread's late messages keep the relay's message pipe busy: a read
        # of it that also brings a snippet's end must still take that
        # snippet's text first (review-1: 13-47 of 300 came back empty,
        # their text told as late output).
        n = 300
        results, _ = run_json(
            "import threading, time\n"
            "def w():\n"
            "    while True:\n"
            "        print('late'); time.sleep(0.0002)\n"
            "threading.Thread(target=w, daemon=True).start()",
            *["print('A%d')" % i for i in range(1, n + 1)],
            extra=("--via", "none"), timeout=120)
        wrong = [(r["id"], r["stdout"]) for r in results[1:]
                 if r["stdout"] != "A%d\n" % (r["id"] - 1)]
        self.assertEqual(len(results), n + 1)
        self.assertEqual(wrong, [])

    def test_pool_work_prints_into_the_snippet_that_submits_it(self):
        # The worker thread was started by the first snippet; what it runs for
        # a later one is that one's output, not late output of the first.
        results, _ = run_json(
            "from concurrent.futures import ThreadPoolExecutor\n"
            "ex = ThreadPoolExecutor(1)\n"
            "ex.submit(print, 's1').result()",
            "ex.submit(print, 's2').result()",
            "import asyncio; asyncio.run(asyncio.to_thread(print, 's3'))",
            "ex.submit(lambda: 1 / 0).exception()")
        self.assertEqual([r["stdout"] for r in results[:3]], ["s1\n", "s2\n", "s3\n"], results)
        self.assertEqual(results[3]["result"],
                         {"text/plain": "ZeroDivisionError('division by zero')"})

    def test_lone_surrogates_in_results_show_as_replacement_characters(self):
        # A str may hold one (a file name decoded with surrogateescape); JSON
        # can carry it but the client's parser cannot: the result must still
        # come, not time out and lose the state.
        results, _ = run_json(
            "keep = 'me'",
            "raise ValueError('bad name: ' + b'x\\xe9'.decode('utf-8', 'surrogateescape'))",
            "class R:\n    def __repr__(self): return 'r\\ud800'\nR()",
            "display(R()); print('p\\udfff', end='')",
            "keep", extra=("--timeout", "5"))
        self.assertEqual([r["status"] for r in results], ["ok", "error", "ok", "ok", "ok"],
                         results)
        self.assertEqual(results[1]["error"]["value"], "bad name: x\ufffd")
        self.assertEqual(results[2]["result"], {"text/plain": "r\ufffd"})
        self.assertEqual(results[3]["display"], [{"text/plain": "r\ufffd"}])
        self.assertEqual(results[3]["stdout"], "p\\udfff")  # (stdout escapes it)
        self.assertEqual(results[4]["result"], {"text/plain": "'me'"})
        self.assertFalse(any(r["state_lost"] for r in results))

    def test_thread_pool_work_prints_into_the_snippet_that_submits_it(self):
        # multiprocessing's ThreadPool: its workers and result thread were
        # started by the first snippet; its work and callbacks for a later
        # one are that one's output.
        results, _ = run_json(
            "from multiprocessing.pool import ThreadPool\n"
            "pool = ThreadPool(1)\n"
            "pool.map(print, ['a'])",
            "pool.map(print, ['b1', 'b2']); None",
            "pool.apply_async(print, ('c',), callback=lambda _: print('cb')).get()",
            "list(pool.imap(print, ['d'])); list(pool.imap_unordered(print, ['e'])); None",
            "from multiprocessing.dummy import Pool\n"
            "with Pool(1) as p2: p2.starmap(print, [('f',)])",
            "pool.apply_async(lambda: 1 / 0, error_callback=print).wait(20)")
        self.assertEqual([r["stdout"] for r in results],
                         ["a\n", "b1\nb2\n", "c\ncb\n", "d\ne\n", "f\n",
                          "division by zero\n"], results)

    def test_text_another_thread_is_flushing_at_the_snippets_end_is_its_output(self):
        # The race behind a flaky thread-pool test: the watchdog's flush had
        # taken the last line (the buffer no longer dirty) but not yet written
        # it when the snippet ended; the result went first and the line came
        # after it, late. Here a thread does what the watchdog does, its
        # write held back a while (the sleep paces it: nothing to wait for).
        results, _ = run_json(
            "import sys, threading, time\n"
            "out = sys.stdout\n"
            "buf, sink, taken = out._ptybox_buf, out._ptybox_sink, threading.Event()\n"
            "def flush():\n"
            "    with buf.lock:\n"
            "        buf.chunks.append('b2\\n'); buf.dirty = True\n"  # (a line held back)
            "        data = buf.take()\n"
            "        taken.set()\n"
            "        time.sleep(0.3)\n"
            "        sink.write_all(data)\n"
            "print('b1')\n"
            "threading.Thread(target=flush).start()\n"
            "taken.wait(20); None",
            "print('next')")
        self.assertEqual([r["stdout"] for r in results], ["b1\nb2\n", "next\n"], results)

    def test_a_raw_thread_printing_during_a_later_snippet_is_not_its_output(self):
        # Started with _thread, not threading: stamped all the same.
        results, _ = run_json(
            "import _thread, threading, sys\n"
            "go, done = threading.Event(), threading.Event()\n"
            "def bg():\n"
            "    go.wait(20); print('late'); done.set()\n"
            "_thread.start_new_thread(bg, ())",
            "go.set(); done.wait(20); print('mine')")
        self.assertEqual(results[1]["stdout"], "mine\n", results)

    def test_raw_threads_leave_no_thread_objects_behind(self):
        # Their stamps are kept by ident: no _DummyThread per thread, which
        # threading.active_count() would count for good.
        results, _ = run_json(
            "import _thread, threading, sys\n"
            "done = threading.Semaphore(0)\n"
            "def f(): sys.stdout.write('t\\n'); done.release()\n"  # (print writes twice)
            "for _ in range(20): _thread.start_new_thread(f, ())\n"
            "for _ in range(20): done.acquire(timeout=20)",
            "import time\n"
            "deadline = time.monotonic() + 20\n"  # (the threads end just after release)
            "while threading.active_count() > 2 and time.monotonic() < deadline:\n"
            "    time.sleep(0.01)\n"
            "threading.active_count() <= 2")  # main and the driver's pump
        self.assertEqual(results[0]["stdout"], "t\n" * 20)
        self.assertEqual(results[1]["result"], {"text/plain": "True"}, results)

    def test_background_thread_output_is_not_mixed_into_the_next_result(self):
        s = Serve()
        try:
            r = s.exec("import threading, time\n"
                       "def bg():\n"
                       "    for i in range(5):\n"
                       "        time.sleep(0.1); print('late', i, flush=True)\n"
                       "threading.Thread(target=bg).start()\n"
                       "'started'", id="bg")
            self.assertEqual(r["result"], {"text/plain": "'started'"})
            time.sleep(0.25)
            r2 = s.exec("import time; time.sleep(0.4); print('mine')", id="fg")
            self.assertEqual(r2["stdout"], "mine\n")
            self.assertEqual(s.exec("1+1", id="after")["result"], {"text/plain": "2"})
        finally:
            self.assertEqual(s.close(), 0)


if __name__ == "__main__":
    unittest.main()
