"""`ptybox serve --stdio`: JSON lines for programs."""
import json
import os
import signal
import tempfile
import time
import unittest

from ptybox_test import (VIA, Serve, TestCase, kill_if_alive, let_go_and_await,
                         start_once_transport)

# A crash that takes the relay along (a kernel's own death is mended under it):
# the transport must start again.
KILL_RELAY = "import os, signal; relay = int(open('/proc/%d/stat' % os.getppid()).read().rsplit(')', 1)[1].split()[1]); os.kill(relay, signal.SIGKILL)"


def cpu_seconds(pid):
    """User and system time a process used so far, all its threads."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class ServeTest(TestCase):
    def setUp(self):
        self.s = Serve("--timeout", "10")

    def tearDown(self):
        if self.s.p.poll() is None:
            self.s.close()

    def test_exec_keeps_state_and_echoes_ids(self):
        r = self.s.exec("x = 1", id=1)
        self.assertOk(r)
        self.assertEqual(r["id"], 1)
        r = self.s.exec("x + 41", id="two")
        self.assertEqual(r["id"], "two")
        self.assertEqual(r["result"], {"text/plain": "42"})
        self.assertEqual(self.s.close(), 0)

    def test_c1_and_bidi_controls_are_escaped_in_every_line(self):
        # Replies, stream events and the caller's own id, escaped the same way.
        self.s.send({"id": "\u202e", "op": "exec", "stream": True,
                     "code": 'print("a\\u202eb\\x85c", flush=True); "\\u2067"'})
        lines, deadline = [], time.monotonic() + 30
        while not (lines and b'"status"' in lines[-1]):
            self.s.recv(max(0.01, deadline - time.monotonic()))
            lines.append(self.s.last_line)
        self.assertEqual(self.s.close(), 0)
        raw = b"\n".join(lines)
        for ch in ("\u202e", "\x85", "\u2067"):
            self.assertNotIn(ch.encode(), raw)
        stream, result = json.loads(lines[0]), json.loads(lines[-1])
        self.assertIn(b'"text":"a\\u202eb\\u0085c\\n"', lines[0])
        self.assertEqual((stream["id"], stream["text"]), ("\u202e", "a\u202eb\x85c\n"))
        self.assertEqual((result["id"], result["result"]), ("\u202e", {"text/plain": "'\\u2067'"}))

    def test_numeric_ids_come_back_as_exactly_the_number_sent(self):
        # (cJSON prints 15 digits: 9007199254740991 came back as 9.00719925474099e+15,
        # and 5000000000000001 as 5e+15, the id of another request)
        for raw in (b"9007199254740991", b"5000000000000001", b"5000000000000000",
                    b"0.30000000000000004", b"1.0000000000000002", b"-12", b"0.1"):
            self.s.send(b'{"id":%s,"op":"exec","code":"1"}' % raw)
            r = self.s.recv()
            self.assertEqual((r["id"], r["status"]), (json.loads(raw), "ok"), raw)
        self.s.send(b'{"id":[5000000000000001,{"n":0.30000000000000004}],"op":"ping"}')
        self.assertEqual(self.s.recv(), {"id": [5000000000000001, {"n": 0.30000000000000004}],
                                         "ok": True})
        self.s.send(b'{"id":9007199254740991,"op":"fly"}')
        self.assertEqual(self.s.recv()["id"], 9007199254740991)

    def test_ping_and_malformed_lines_do_not_disturb_the_session(self):
        self.s.exec("keep = 'me'", id=1)
        self.s.send("this is not json")
        self.assertIn("error", self.s.recv())
        self.s.send("[1,2,3]")
        self.assertIn("error", self.s.recv())
        self.s.send({"id": 5, "op": "fly"})
        reply = self.s.recv()
        self.assertEqual(reply["id"], 5)
        self.assertIn("unknown op", reply["error"])
        self.s.send({"id": 6, "op": "exec"})
        self.assertIn("code", self.s.recv()["error"])
        self.s.send({"id": 7, "op": "ping"})
        self.assertEqual(self.s.recv(), {"id": 7, "ok": True})
        self.assertEqual(self.s.exec("keep", id=8)["result"], {"text/plain": "'me'"})

    def test_replies_are_json_in_utf8_whatever_the_request(self):
        self.s.exec("keep = 'me'", id=1)
        self.s.send(b'{"id":2,"op":"ping"} trailing garbage')
        self.assertIn("malformed", self.s.recv()["error"])
        self.s.send(b'{"id":"\xff\xfe","op":"ping"}')
        self.assertIn("UTF-8", self.s.recv()["error"])
        self.s.send({"id": 3, "op": "a" + "\u00e9" * 40})  # cut at 64 bytes: not mid-character
        reply = self.s.recv()  # (recv decodes strictly)
        self.assertEqual(reply["id"], 3)
        self.assertIn("unknown op \"a" + "\u00e9" * 31 + "\"", reply["error"])
        self.s.send(b'{"id":4,"op":"ping"} \t')
        self.assertEqual(self.s.recv(), {"id": 4, "ok": True})
        self.assertEqual(self.s.exec("keep", id=5)["result"], {"text/plain": "'me'"})
        self.assertEqual(self.s.close(), 0)

    def test_code_with_a_nul_character_is_refused_not_cut(self):
        # (cJSON ends its strings at a NUL: the code after it would vanish.)
        self.s.exec("keep = 'me'", id=1)
        self.s.send(r'{"id":2,"op":"exec","code":"print(1)\u0000print(2)"}')
        reply = self.s.recv()
        self.assertEqual(reply["id"], 2)
        self.assertIn("NUL", reply["error"])
        self.s.send(r'{"id":3,"op":"exec\u0000x","code":"1"}')
        self.assertIn("NUL", self.s.recv()["error"])
        self.s.send(b'{"id":6,"op":"exec","code":"print(1)\x00print(2)"}')  # raw
        self.assertIn("NUL", self.s.recv()["error"])
        # cJSON reads a \u without four hex digits as \u0000: refused the same
        self.s.send(r'{"id":7,"op":"exec","code":"print(1)\uZZZZprint(2)"}')
        self.assertIn("NUL", self.s.recv()["error"])
        # An id cut at its NUL would come back as another id: refused, id-less.
        for req in (r'{"id":"a\u0000b","op":"ping"}', r'{"id":["a\u0000c"],"op":"exec","code":"1"}',
                    r'{"id":"a\u0000d","op":"exec","code":"\ud800"}'):  # (and a surrogate)
            self.s.send(req)
            reply = self.s.recv()
            self.assertNotIn("id", reply)
            self.assertIn("id contains a NUL", reply["error"])
        r = self.s.exec(r"print('a\\u0000b'.encode()); keep", id=4)  # an escaped backslash
        self.assertEqual((r["stdout"], r["result"]), ("b'a\\\\u0000b'\n", {"text/plain": "'me'"}))
        self.assertEqual(self.s.close(), 0)

    def test_a_lone_surrogate_is_refused_under_the_request_id(self):
        # What json.dumps writes for a str with a lone surrogate: cJSON takes
        # none of the line, but the reply still names the request.
        self.s.exec("keep = 'me'", id=1)
        self.s.send('{"id":2,"op":"exec","code":%s}' % json.dumps("print('\ud800')"))
        reply = self.s.recv()
        self.assertEqual(reply["id"], 2, reply)
        self.assertIn("surrogate", reply["error"])
        self.s.send(r'{"id":3,"op":"exec","code":"print(\"\ud83d\ude00\")"}')  # a pair
        self.assertEqual(self.s.recv_result(3)["stdout"], "\U0001F600\n")
        self.s.send(r'{"id":4,"op":"exec","code":"\ud800"')  # and not JSON
        self.assertEqual(self.s.recv(), {"error": "malformed request: expected one JSON "
                                                  "object per line", "code": "malformed"})
        self.assertEqual(self.s.exec("keep", id=5)["result"], {"text/plain": "'me'"})
        self.assertEqual(self.s.close(), 0)

    def test_streaming_sends_output_while_the_code_runs(self):
        self.s.send({"id": 1, "op": "exec", "stream": True,
                     "code": "import time\nfor i in range(3):\n    print(i, flush=True)\n"
                             "    time.sleep(0.2)\n"})
        events, t0 = [], time.monotonic()
        while True:
            m = self.s.recv()
            if m.get("event") == "stream":
                events.append((time.monotonic() - t0, m))
                continue
            break
        self.assertEqual(m["status"], "ok")
        self.assertEqual("".join(e["text"] for _, e in events), "0\n1\n2\n")
        self.assertTrue(all(e["id"] == 1 and e["name"] == "stdout" for _, e in events))
        # the first chunk came well before the end
        self.assertLess(events[0][0], 0.35)
        self.assertEqual(m["stdout"], "0\n1\n2\n")

    def test_big_output_arrives_whole_as_written_streamed_and_in_the_result(self):
        # Big chunks that repeat cross the terminal deflated (ptybox-protocol(7),
        # stream frames): what the user gets is the text, byte for byte, either way.
        outputs = (
            ("('ab\\0c\\x1b[1m' + 'x' * 1000 + '\\n') * 3000", "stdout"),
            ("('h\\u00e9llo w\\u00f6rld \\u20ac \\U0001f600\\n') * 40000", "stdout"),
            ("''.join(hashlib.sha256(b'%d' % i).hexdigest() + '\\n' for i in range(30000))",
             "stdout"),
            ("'err line\\n' * 60000", "stderr"),
        )
        for i, (expr, name) in enumerate(outputs):
            want = eval(expr, {"hashlib": __import__("hashlib")}).replace("\0", "\ufffd")
            stream = "sys.stdout" if name == "stdout" else "sys.stderr"
            self.s.send({"id": i, "op": "exec", "stream": True,
                         "code": "import hashlib, sys; %s.write(%s)" % (stream, expr)})
            texts = []
            while True:
                m = self.s.recv(timeout=60)
                if m.get("event") != "stream":
                    break
                self.assertEqual(m["name"], name)
                texts.append(m["text"])
            self.assertOk(m)
            self.assertEqual(len(m[name]), len(want), expr)
            self.assertTrue(m[name] == want, expr)
            self.assertTrue("".join(texts) == want, expr)

    def test_streamed_output_over_max_output_shows_the_cut_like_the_result(self):
        s = Serve("--max-output", "100")
        try:
            s.send({"id": 1, "op": "exec", "stream": True,
                    "code": "for i in range(50):\n    print('line', i, flush=True)"})
            text = ""
            while True:
                m = s.recv()
                if m.get("event") != "stream":
                    break
                text += m["text"]
            self.assertEqual((m["status"], m["truncated"]), ("ok", True), m)
            self.assertIn("\n[ptybox: %d bytes of output dropped]\n" % m["dropped_bytes"],
                          m["stdout"])
            self.assertEqual(text, m["stdout"])
        finally:
            self.assertEqual(s.close(), 0, s.stderr)

    def test_rich_output_comes_as_events_in_order_with_the_text(self):
        self.s.send({"id": "s", "op": "exec", "stream": True,
                     "code": "print('one', flush=True); display(2); print('three')"})
        got = []
        while True:
            m = self.s.recv()
            if not m.get("event"):
                break
            # A stream's text may come in any number of pieces: join the
            # pieces that follow each other, the order is what counts.
            if (got and m["event"] == "stream" and got[-1]["event"] == "stream"
                    and got[-1]["name"] == m["name"]):
                got[-1] = dict(got[-1], text=got[-1]["text"] + m["text"])
                continue
            got.append(m)
        self.assertEqual(got, [  # ("exec": the server's id of the execution)
            {"id": "s", "event": "stream", "exec": 1, "name": "stdout", "text": "one\n"},
            {"id": "s", "event": "display", "exec": 1, "data": {"text/plain": "2"}},
            {"id": "s", "event": "stream", "exec": 1, "name": "stdout", "text": "three\n"}])
        self.assertEqual(m["display"], [{"text/plain": "2"}])
        # without "stream", only in the result
        self.s.send({"id": "q", "op": "exec", "code": "display(4)"})
        self.assertEqual(self.s.recv()["display"], [{"text/plain": "4"}])

    def test_a_thread_displaying_after_its_snippet_is_late_and_not_the_next_ones(self):
        self.s.exec("import threading; ev = threading.Event()\n"
                    "t = threading.Thread(target=lambda: (ev.wait(), display('bg')))\n"
                    "t.start()", id="started")
        self.s.send({"id": "next", "op": "exec", "code": "ev.set(); t.join(); 'mine'"})
        late = self.s.recv()
        self.assertEqual(late, {"id": "started", "event": "display", "exec": 1,
                                "data": {"text/plain": "'bg'"}, "late": True})
        r = self.s.recv()
        self.assertEqual((r["id"], r["display"], r["result"]),
                         ("next", [], {"text/plain": "'mine'"}))

    def test_interrupt_stops_the_snippet_and_keeps_state(self):
        self.s.exec("state = 'kept'", id=1)
        # Sent together: the ^C may reach the driver while it still reads
        # the request; the snippet must start interrupted, not run on.
        self.s.send({"id": 2, "op": "exec", "code": "while True: pass"})
        self.s.send({"id": 3, "op": "interrupt"})
        replies = {}
        while len(replies) < 2:
            m = self.s.recv()
            replies[m["id"]] = m
        self.assertEqual(replies[3], {"id": 3, "ok": True, "interrupted": True})
        self.assertEqual(replies[2]["status"], "interrupted")
        self.assertFalse(replies[2]["state_lost"])
        self.assertEqual(self.s.exec("state", id=4)["result"], {"text/plain": "'kept'"})

    def test_interrupts_at_any_moment_hit_only_their_own_snippet(self):
        # Each spinning snippet is interrupted at once, whenever the ^C lands;
        # timeouts that race the end of a snippet never spill into the next.
        self.s.exec("n = 0", id=0)
        for i in range(10):
            self.s.send({"id": 1000 + i, "op": "exec", "code": "while True: pass"})
            self.s.send({"id": 2000 + i, "op": "interrupt"})
            r = self.s.recv_result(1000 + i, timeout=10)
            self.assertEqual(r["status"], "interrupted", r)
            self.assertFalse(r["state_lost"], r)
        for i in range(30):
            r = self.s.exec("import time; time.sleep(0.02)", id=3000 + i, timeout=0.02)
            self.assertIn(r["status"], ("ok", "timeout"), r)
            self.assertFalse(r["state_lost"], r)
            self.assertOk(self.s.exec("n += 1", id=4000 + i))
        self.assertEqual(self.s.exec("n", id=5000)["result"], {"text/plain": "30"})

    def test_interrupt_while_the_interpreter_starts_stops_the_waiting_snippet(self):
        # Sent in one write with the first exec (and, later, right behind a
        # restart): the snippet has not started; it must not run on after.
        for first in ([], [{"id": "r", "op": "restart"}]):
            reqs = first + [{"id": "a", "op": "exec", "code": "import time; time.sleep(60)"},
                            {"id": "i", "op": "interrupt"},
                            {"id": "b", "op": "exec", "code": "'next'"}]
            self.s.send("\n".join(json.dumps(r) for r in reqs))
            r = self.s.recv_result("a", timeout=20)
            self.assertEqual(r["status"], "interrupted", r)
            self.assertEqual(self.s.recv_result("b", timeout=20)["result"],
                             {"text/plain": "'next'"})
        self.assertEqual(self.s.close(), 0)

    def test_a_sigint_from_user_code_between_snippets_stops_nothing(self):
        # A thread of an earlier snippet signals the interpreter while it is
        # idle (os.kill, _thread.interrupt_main: a home-made timeout): that
        # is no ^C of the client's, and the next snippet must run.
        # (--via none: the FIFOs are in this machine's /tmp)
        self.s.close()
        self.s = Serve("--timeout", "10", via="none")
        with tempfile.TemporaryDirectory() as tmp:
            go, done = os.path.join(tmp, "go"), os.path.join(tmp, "done")
            os.mkfifo(go)
            os.mkfifo(done)
            for how in ("os.kill(os.getpid(), signal.SIGINT)", "_thread.interrupt_main()"):
                with self.subTest(how=how):
                    self.assertOk(self.s.exec(
                        "import _thread, os, signal, threading\n"
                        "def later():\n"
                        "    open(%r).close()\n"
                        "    %s\n"
                        "    open(%r, 'w').close()\n"
                        "threading.Thread(target=later).start()" % (go, how, done), id="a"))
                    self.assertTrue(let_go_and_await(go, done), "the thread did not go on")
                    r = self.s.exec("print('ran'); 6 * 7", id="b")
                    self.assertEqual((r["status"], r["stdout"], r["result"]),
                                     ("ok", "ran\n", {"text/plain": "42"}), r)

    def test_interrupt_with_nothing_running_is_an_error_reply(self):
        self.s.send({"id": 1, "op": "interrupt"})
        self.assertIn("error", self.s.recv())

    def test_restart_gives_fresh_state(self):
        self.s.exec("gone = 1", id=1)
        self.s.send({"id": 2, "op": "restart"})
        self.assertEqual(self.s.recv(), {"id": 2, "ok": True})
        r = self.s.exec("'gone' in globals()", id=3)
        self.assertEqual(r["result"], {"text/plain": "False"})
        self.assertTrue(r["state_lost"])

    def test_restart_is_ordered_with_the_snippets_around_it(self):
        self.s.send({"id": 1, "op": "exec", "code": "import time; time.sleep(0.3); x = 1"})
        self.s.send({"id": 2, "op": "restart"})
        self.s.send({"id": 3, "op": "exec", "code": "globals().get('x', 'fresh')"})
        replies = {}
        while len(replies) < 3:
            m = self.s.recv()
            replies[m["id"]] = m
        self.assertOk(replies[1])
        self.assertFalse(replies[1]["state_lost"])
        self.assertEqual(replies[2], {"id": 2, "ok": True})
        self.assertEqual(replies[3]["result"], {"text/plain": "'fresh'"})
        self.assertTrue(replies[3]["state_lost"])

    def test_eof_finishes_queued_work_then_exits_0(self):
        for i in range(5):
            self.s.send({"id": i, "op": "exec", "code": "print(%d)" % i})
        self.s.p.stdin.close()
        got = [self.s.recv_result(i)["stdout"] for i in range(5)]
        self.assertEqual(got, ["%d\n" % i for i in range(5)])
        self.assertEqual(self.s.p.wait(30), 0)

    def test_an_execs_env_counts_in_the_queued_bytes(self):
        # Behind a running snippet, requests wait with all they carry: 256 MiB of
        # environment is refused as 256 MiB of code would be.
        self.s.send({"id": 0, "op": "exec", "code": "import time; time.sleep(60)",
                     "timeout": 0, "wait": False})
        self.assertTrue(self.s.recv_result(0).get("ok"))
        big = "x" * (60 << 20)
        replies = []
        for i in range(1, 6):
            self.s.send({"id": i, "op": "exec", "code": "pass", "wait": False,
                         "env": {"BIG": big}, "cwd": "/tmp"})
            replies.append(self.s.recv_result(i))
        self.s.p.kill()  # (not 300 MiB through the terminal)
        self.s.close()
        self.assertEqual([r.get("ok") for r in replies[:4]], [True] * 4, replies)
        self.assertEqual(replies[4].get("code"), "busy", replies[4])
        self.assertIn("too much code queued", replies[4]["error"])

    def test_an_unknown_member_is_a_usage_error_naming_it(self):
        # (they passed in silence: "timout":0.5 ran for the default 10 s)
        for req, op, name in (
                ({"id": 1, "op": "exec", "code": "import time; time.sleep(3)", "timout": 0.5},
                 "exec", "timout"),
                ({"id": 2, "op": "exec", "code": "1", "streem": True}, "exec", "streem"),
                ({"id": 3, "op": "new", "session": "t", "via": "none"}, "new", "via"),
                ({"id": 4, "op": "is_complete", "code": "x", "cursor": 1}, "is_complete",
                 "cursor"),
                ({"id": 5, "op": "ping", "session": "default"}, "ping", "session"),
                ({"id": 6, "op": "resize", "cols": 80, "rows": 24, "colour": True}, "resize",
                 "colour")):
            self.s.send(req)
            r = self.s.recv(timeout=15)
            self.assertEqual((r["id"], r["code"]), (req["id"], "usage"), r)
            self.assertTrue(r["error"].startswith("%s: unknown member '%s' (" % (op, name)), r)
        # nothing of them ran or was made: the next reply is the next request's
        self.s.send({"id": 7, "op": "ls"})
        self.assertEqual([x["name"] for x in self.s.recv(timeout=15)["sessions"]], ["default"])
        r = self.s.exec("1", id=8, timeout=5, stream=False, wait=True)
        self.assertEqual((r["status"], r["exec"]), ("ok", 1))
        self.assertEqual(self.s.close(), 0)

    def test_eof_right_after_queries_answers_them_then_exits_0(self):
        # (they were answered "shutting down": nothing but executions held serve)
        self.assertOk(self.s.exec("import os", id=1))
        self.s.send({"id": 8, "op": "is_complete", "code": "def f():"})
        self.s.send({"id": 9, "op": "complete", "code": "os.pa", "cursor": 5})
        self.s.p.stdin.close()
        replies = {}
        for _ in range(2):
            r = self.s.recv(timeout=15)
            replies[r["id"]] = r
        self.assertEqual((replies[8].get("ok"), replies[8].get("status")), (True, "incomplete"),
                         replies[8])
        self.assertTrue(replies[9].get("ok"), replies[9])  # (busy, or os.path: never killed)
        self.assertEqual(self.s.p.wait(30), 0)

    def test_eof_right_after_a_kill_answers_it_then_exits_0(self):
        self.s.send({"id": 1, "op": "new", "session": "two"})
        self.assertEqual(self.s.recv_result(1, timeout=30), {"id": 1, "ok": True,
                                                             "session": "two"})
        self.s.send({"id": 4, "op": "kill", "session": "two"})
        self.s.p.stdin.close()
        self.assertEqual(self.s.recv_result(4, timeout=30), {"id": 4, "ok": True})
        self.assertEqual(self.s.p.wait(30), 0)

    def test_eof_right_after_new_and_kill_answers_both_in_order_of_completion(self):
        self.s.send({"id": 1, "op": "new", "session": "two"})
        self.s.send({"id": 4, "op": "kill", "session": "two"})
        self.s.p.stdin.close()
        self.assertEqual(self.s.recv(timeout=30)["id"], 1)  # (killed before it started)
        self.assertEqual(self.s.recv(timeout=30), {"id": 4, "ok": True})
        self.assertEqual(self.s.p.wait(30), 0)

    def test_eof_while_the_interpreter_starts_exits_0(self):
        # The interpreter may not lead its process group yet when it is
        # killed: it must die all the same, not leave serve waiting for it.
        self.s.close()
        for via in ("none", VIA):
            for _ in range(3):
                s = Serve(via=via)
                self.assertEqual(s.close(timeout=20), 0, (via, s.stderr))

    def test_a_session_that_cannot_start_exits_125_with_stdin_still_open(self):
        self.s.close()
        s = Serve("--python", "/nonexistent/python3")
        try:
            self.assertIn("could not be started", s.recv(timeout=20)["error"])
            self.assertEqual(s.p.wait(20), 125)  # (stdin is still open)
        finally:
            self.assertEqual(s.close(), 125)

    def test_snippets_queued_when_the_restart_fails_get_results_not_run(self):
        self.s.close()
        with tempfile.TemporaryDirectory() as d:
            s = Serve(via=start_once_transport(d))
            try:
                s.send("\n".join(json.dumps(r) for r in (  # (one write: both queued)
                    {"id": "a", "op": "exec", "code": KILL_RELAY},
                    {"id": "b", "op": "exec", "code": "'never'"})))
                r = s.recv_result("a")
                self.assertEqual(r["status"], "crashed")
                self.assertIn("could not be restarted", r["message"])
                self.assertNotIn("restarted with", r["message"])
                self.assertIn("could not be started", s.recv()["error"])
                r = s.recv_result("b")
                self.assertEqual(r["status"], "crashed")
                self.assertRegex(r["message"], "^not run: ")
                self.assertEqual(s.p.wait(20), 125)
            finally:
                self.assertEqual(s.close(), 125)

    def test_eof_after_a_restart_still_exits_0(self):
        self.s.send({"id": 1, "op": "exec", "code": "x = 1"})
        self.s.send({"id": 2, "op": "restart"})
        self.s.p.stdin.close()
        self.assertOk(self.s.recv_result(1))
        self.assertEqual(self.s.p.wait(30), 0)

    def test_per_request_timeout(self):
        r = self.s.exec("import time; time.sleep(5)", id=1, timeout=0.5)
        self.assertEqual(r["status"], "timeout")
        self.assertLess(r["duration_ms"], 4000)

    def test_a_timeout_past_a_year_is_refused_like_the_option(self):
        # (1e300 s in milliseconds does not fit a timer: it was undefined behaviour)
        for t in (1e300, 31536000.5, -1, "5"):
            self.s.send({"id": "t", "op": "exec", "code": "1", "timeout": t})
            reply = self.s.recv()
            self.assertEqual(reply["id"], "t", reply)
            self.assertIn("from 0 to 31536000 (a year)", reply.get("error", ""), reply)
        self.s.send({"id": 2, "op": "exec", "code": "'kept going'", "timeout": 31536000})
        self.assertEqual(self.s.recv_result(2)["result"], {"text/plain": "'kept going'"})
        self.assertEqual(self.s.close(), 0)



class StdinTest(TestCase):
    def test_a_non_blocking_stdin_is_waited_on_not_spun_on(self):
        # A parent may hand over its pipe with O_NONBLOCK set (the flag is the
        # pipe's, shared with the parent): reads then say EAGAIN, and serve
        # must wait until there is input, not read again at once.
        r, w = os.pipe()
        os.set_blocking(r, False)
        try:
            s = Serve(stdin=r)
        finally:
            os.close(r)
        try:
            def request(obj):
                os.write(w, json.dumps(obj).encode() + b"\n")
            request({"id": 1, "op": "exec", "code": "1 + 1"})
            self.assertEqual(s.recv_result(1)["result"], {"text/plain": "2"})
            before = cpu_seconds(s.p.pid)
            # serve has nothing to read for the two seconds this runs
            request({"id": 2, "op": "exec", "code": "import time; time.sleep(2)"})
            self.assertOk(s.recv_result(2))
            self.assertLess(cpu_seconds(s.p.pid) - before, 0.5)
        finally:
            os.close(w)
        self.assertEqual(s.close(), 0)


class SignalTest(TestCase):
    def test_a_signal_kills_the_interpreter_answers_what_is_queued_and_exits(self):
        # With --via none nothing else kills the interpreter: it spun on, orphaned.
        spin = ("import os, signal\nsignal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
                "print(os.getpid(), flush=True)\nwhile True: pass")
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            with self.subTest(sig=sig):
                s = Serve(via="none")
                pid = None
                try:
                    s.send({"id": "spin", "op": "exec", "code": spin, "stream": True})
                    pid = int(s.recv()["text"])
                    s.p.send_signal(sig)
                    self.assertEqual(s.p.wait(30), 128 + sig)
                    reply = s.recv()
                    self.assertEqual(reply["id"], "spin")
                    self.assertIn("stopped by signal %d" % sig, reply["error"])
                finally:
                    s.close()
                    left_behind = pid and kill_if_alive(pid)
                self.assertFalse(left_behind, "the interpreter outlived ptybox serve")


class PoolTest(TestCase):
    def test_restarts_take_interpreters_started_ahead(self):
        s = Serve("--pool", "2")
        try:
            for i in range(6):
                self.assertOk(s.exec("n = %d" % i, id="set%d" % i))
                s.send({"id": "r%d" % i, "op": "restart"})
                self.assertEqual(s.recv(), {"id": "r%d" % i, "ok": True})
                r = s.exec("globals().get('n', 'fresh')", id="get%d" % i)
                self.assertEqual(r["result"], {"text/plain": "'fresh'"})
                self.assertTrue(r["state_lost"])
        finally:
            self.assertEqual(s.close(), 0)

    def test_bad_pool_size_is_a_usage_error(self):
        from ptybox_test import run
        p = run("serve", "--stdio", "--pool", "65", via=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--pool", p.stderr)


if __name__ == "__main__":
    unittest.main()


class QueryTest(TestCase):
    """is_complete and complete: what a prompt asks the live session."""

    @classmethod
    def setUpClass(cls):
        cls.s = Serve("--timeout", "10")
        cls.n = 0

    @classmethod
    def tearDownClass(cls):
        cls.s.close()

    def ask(self, **req):
        QueryTest.n += 1
        req["id"] = "q%d" % self.n
        self.s.send(req)
        r = self.s.recv_result(req["id"], timeout=15)
        self.assertTrue(r.get("ok"), r)
        return r

    def is_complete(self, code):
        r = self.ask(op="is_complete", code=code)
        return r["status"], r["indent"]

    def test_is_complete_decides_as_codeop_does(self):
        self.assertOk(self.s.exec("pass", id="warm"))
        self.assertEqual(self.is_complete("x = 1"), ("complete", ""))
        self.assertEqual(self.is_complete("def f():"), ("incomplete", "    "))
        self.assertEqual(self.is_complete("def f():\n    if x:"), ("incomplete", "        "))
        self.assertEqual(self.is_complete("def f():\n    return 1"), ("incomplete", "    "))
        self.assertEqual(self.is_complete("def f():\n    return 1\n"), ("complete", ""))
        self.assertEqual(self.is_complete("x = (1,"), ("incomplete", ""))
        self.assertEqual(self.is_complete("s = '''abc"), ("incomplete", ""))
        self.assertEqual(self.is_complete("x = 1\ny = 2"), ("complete", ""))
        self.assertEqual(self.is_complete("1 +")[0], "invalid")
        self.assertEqual(self.is_complete("a b")[0], "invalid")
        # nothing ran: x is not defined
        self.assertEqual(self.s.exec("'x' in dir()", id="nx")["result"],
                         {"text/plain": "False"})
        # deep nesting or a huge input cannot take anything down
        self.assertIn(self.is_complete("(" * 100000)[0], ("invalid", "incomplete"))
        self.assertEqual(self.is_complete("x = 1\n" * 300000)[0], "unknown")
        self.assertOk(self.s.exec("pass", id="alive"))

    def test_complete_names_and_attributes_of_the_live_namespace(self):
        self.assertOk(self.s.exec("class K:\n  pass\nk = K(); k.alpha_beta = 1; k.alpha_gamma = 2\n"
                                  "my_variable_xyz = 42", id="setup"))
        r = self.ask(op="complete", code="my_var", cursor=6)
        self.assertEqual((r["matches"], r["cursor_start"], r["cursor_end"]),
                         (["my_variable_xyz"], 0, 6))
        r = self.ask(op="complete", code="print(k.alp)", cursor=11)
        self.assertEqual((r["matches"], r["cursor_start"], r["cursor_end"]),
                         (["alpha_beta", "alpha_gamma"], 8, 11))
        self.assertIn("print", self.ask(op="complete", code="pri")["matches"])
        self.assertIn("while", self.ask(op="complete", code="whi")["matches"])
        # the cursor counts characters, not bytes
        r = self.ask(op="complete", code="é = my_v", cursor=8)
        self.assertEqual((r["matches"], r["cursor_start"]), (["my_variable_xyz"], 4))
        self.assertEqual(self.ask(op="complete", code="nosuch.x")["matches"], [])

    def test_a_completion_that_raises_or_hangs_is_empty_and_the_state_stays(self):
        self.assertOk(self.s.exec(
            "class Raises:\n  def __dir__(self): raise ValueError('no')\n"
            "class Hangs:\n  def __dir__(self):\n    while True: pass\n"
            "class Stubborn:\n  def __getattr__(self, name):\n    while True:\n"
            "      try:\n        while True: pass\n      except KeyboardInterrupt: pass\n"
            "r, h, st = Raises(), Hangs(), Stubborn(); kept = 'yes'", id="objs"))
        self.assertEqual(self.ask(op="complete", code="r.x")["matches"], [])
        t0 = time.monotonic()
        self.assertEqual(self.ask(op="complete", code="h.x")["matches"], [])
        self.assertLess(time.monotonic() - t0, 5)
        r = self.ask(op="complete", code="st.a.b")
        self.assertEqual(r["matches"], [])
        self.assertLess(time.monotonic() - t0, 10)
        # the stubborn one still holds the interpreter: a snippet ends the
        # way a snippet that ignores ^C does, and the session lives on
        self.s.send({"id": "after", "op": "exec", "code": "kept", "timeout": 1})
        r = self.s.recv_result("after", timeout=30)
        self.assertIn(r["status"], ("ok", "timeout", "crashed"), r)
        self.assertOk(self.s.exec("1", id="alive"))

    def test_asked_while_a_snippet_runs_the_answer_is_busy_at_once(self):
        self.s.send({"id": "long", "op": "exec", "code": "import time; time.sleep(10)"})
        time.sleep(0.3)  # (let it start: a query queued behind it is the case too)
        t0 = time.monotonic()
        r = self.ask(op="complete", code="pri")
        self.assertEqual((r["matches"], r.get("busy")), ([], True))
        r = self.ask(op="is_complete", code="def f():")
        self.assertEqual((r["status"], r.get("busy")), ("unknown", True))
        self.assertLess(time.monotonic() - t0, 5)  # (not behind the snippet's 10 s)
        self.s.send({"id": "stop", "op": "interrupt"})
        self.assertEqual(self.s.recv_result("long", timeout=30)["status"], "interrupted")

    def test_bad_queries_get_one_line_errors(self):
        self.s.send({"id": "b1", "op": "complete"})
        self.assertEqual(self.s.recv_result("b1")["code"], "usage")
        self.s.send({"id": "b2", "op": "complete", "code": "x", "cursor": 9})
        self.assertEqual(self.s.recv_result("b2")["code"], "usage")
        self.s.send({"id": "b3", "op": "is_complete", "code": 5})
        self.assertEqual(self.s.recv_result("b3")["code"], "usage")
        self.s.send({"id": "b4", "op": "complete", "code": "x", "session": "nosuch"})
        self.assertEqual(self.s.recv_result("b4")["code"], "no_session")
