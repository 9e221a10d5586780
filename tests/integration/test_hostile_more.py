"""More hostile and broken clients against the long-lived server (report-hostile.md
hostile-6, -10; report-newuser.md newuser-12, -13): what one client sends must not stall the
server's loop, grow its memory without bound, or make it write what is not UTF-8. Each test
has a server of its own and leaves nothing running. (hostile-1..5, 7..9: test_hostile.py
and test_server_bounds.py.)"""
import json
import os
import socket
import subprocess
import threading
import unittest

from ptybox_test import TestCase
from test_http import rss_kib
from test_server import PTYBOX, VIA, Client, Server, exec_while_pinging

MIB = 1 << 20


class SocketServerTest(TestCase):
    def setUp(self):
        self.srv = Server()
        p = self.srv("new", "victim")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.pid = self.srv.daemon_pid()

    def tearDown(self):
        self.srv.close()

    def test_queued_code_and_put_data_are_bounded_in_bytes(self):
        # hostile-6: what waits behind a busy snippet (the code of execs, the data of puts)
        # is held by the server; past 256 MiB of each a session refuses more with busy, so
        # the server's memory stays bounded whatever one client queues.
        c = Client(self.srv.sock)
        c.s.settimeout(120)
        c.send({"id": "s", "op": "exec", "session": "victim",
                "code": "import time; time.sleep(120)", "wait": False})
        self.assertTrue(c.reply("s")["ok"])
        code = "#" + "A" * (45 * MIB)
        answers = []
        for i in range(7):  # (45 MiB each: the sixth passes 256 MiB)
            c.send({"id": i, "op": "exec", "session": "victim", "code": code, "wait": False})
            answers.append(c.reply(i))
        self.assertTrue(all(a.get("ok") for a in answers[:5]), answers[:5])
        for a in answers[5:]:
            self.assertEqual((a.get("code"), a.get("error")),
                             ("busy", "too much code queued in session 'victim' (more than 256 MiB)"))
        data = "QUJD" * (15 * MIB)  # (45 MiB of bytes each)
        answers = []
        for i in range(7):
            c.send({"id": "p%d" % i, "op": "put", "session": "victim", "path": "f%d" % i,
                    "data": data})
        c.send({"id": "ping", "op": "ping"})
        while True:
            m = c.recv()
            if m.get("id") == "ping":
                break
            answers.append(m)
        refused = [a for a in answers if a.get("code") == "busy"]
        self.assertEqual(len(refused), 2, [str(a)[:100] for a in answers])
        self.assertIn("256 MiB of put data", refused[0]["error"])
        self.assertLess(rss_kib(self.pid), 800 * 1024,  # (454 MiB: 2 x 256 and a line)
                        "the server holds %d MiB" % (rss_kib(self.pid) >> 10))
        c.send({"id": "i", "op": "interrupt", "session": "victim"})
        c.close()
        p = self.srv("kill", "victim", timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_rendering_is_bounded_by_rows_scrolled_not_only_lines(self):
        # hostile-9, after its fix (5,000 newlines or 1 MiB): 200,000 "scroll up 50"
        # sequences are 1 MB and no newline, and scrolled 10 million rows: the server's loop
        # stalled 1.4 s (Release) for every client. They come as they came now.
        m, worst = exec_while_pinging(self.srv.sock, "victim",
                                      "print('\\x1b[50S' * 200000, end='')")
        self.assertEqual((m["status"], m["rendered"]), ("ok", False))
        self.assertEqual(m["stdout"], "\x1b[50S" * 200000)
        self.assertLess(worst, 0.5, "a ping waited %.1f s for the render" % worst)
        # (within the bounds it is rendered: 4,999 rows of wrapped and scrolled lines)
        c = Client(self.srv.sock)
        c.s.settimeout(120)
        c.send({"id": 2, "op": "exec", "session": "victim", "render": True,
                "code": "print('x' * 80 * 2000 + '\\x1b[50S' * 50, end='')"})
        m = c.reply(2)
        self.assertEqual((m["status"], m["rendered"]), ("ok", True))
        c.close()

    def test_exec_json_of_a_result_cut_in_a_character_is_utf8(self):
        # hostile-10, through `ptybox exec --json`
        p = subprocess.run([PTYBOX, "exec", "victim", "--json", "-c",
                            "print('\\u4e00' * 1300000)"],
                           capture_output=True, timeout=120, env=self.srv.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        try:
            out = p.stdout.decode("utf-8")
        except UnicodeDecodeError as e:
            self.fail("exec --json wrote what is not UTF-8 at byte %d: %r"
                      % (e.start, p.stdout[e.start - 24:e.start + 8]))
        self.assertTrue(json.loads(out)["truncated"])


class RunJsonTest(TestCase):
    def test_run_json_of_a_result_cut_in_a_character_is_utf8(self):
        # hostile-10, through `ptybox run --json` (no server: the same result code)
        p = subprocess.run([PTYBOX, "run", "--via", VIA, "--json", "-c",
                            "print('\\u4e00' * 1300000)"], capture_output=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        try:
            out = p.stdout.decode("utf-8")
        except UnicodeDecodeError as e:
            self.fail("run --json wrote what is not UTF-8 at byte %d: %r"
                      % (e.start, p.stdout[e.start - 24:e.start + 8]))
        self.assertTrue(json.loads(out)["truncated"])


class LiveRecordingTest(TestCase):
    def test_a_file_that_a_session_records_is_refused_untouched(self):
        # newuser-12: `new rb --record F` with F that session ra records truncated it; the
        # two then wrote one file (rb's header, NULs, ra's events), ra's first ones gone.
        srv = Server()
        self.addCleanup(srv.close)
        cast = os.path.join(srv.dir, "rec.cast")
        p = srv("new", "ra", "--record", cast)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(srv("exec", "ra", "-c", "print('ra line 1')").returncode, 0)
        with open(cast, "rb") as f:
            before = f.read()
        self.assertIn(b"ra line 1", before)
        p = srv("new", "rb", "--record", cast)
        self.assertNotEqual(p.returncode, 0)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        self.assertIn("another recording writes it", p.stderr)
        p = subprocess.run([PTYBOX, "run", "--via", VIA, "--record", cast, "-c", "1"],
                           capture_output=True, text=True, timeout=60, env=srv.env)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("another recording writes it", p.stderr)
        with open(cast, "rb") as f:
            self.assertEqual(f.read(), before)
        self.assertEqual(srv("exec", "ra", "-c", "print('ra after')").returncode, 0)
        self.assertEqual(srv("kill", "ra").returncode, 0)
        with open(cast, "rb") as f:
            after = f.read()
        self.assertTrue(after.startswith(before), after[:200])
        self.assertIn(b"ra after", after)
        self.assertNotIn(b"\0", after)
        # (once ra is gone, the file is free again)
        p = srv("new", "rc", "--record", cast)
        self.assertEqual(p.returncode, 0, p.stderr)


class IdlessErrorTest(TestCase):
    """A server that answers every request but hello with an error without an id, as the
    server answers a line past its 96 MiB cap (newuser-13: exec waited for ever)."""

    def setUp(self):
        self.srv = Server()  # (its runtime folder; no server is started in it)
        os.makedirs(os.path.dirname(self.srv.sock), mode=0o700, exist_ok=True)
        self.ls = socket.socket(socket.AF_UNIX)
        self.ls.bind(self.srv.sock)
        self.ls.listen(8)
        self.ls.settimeout(0.2)
        self.stop = False
        self.t = threading.Thread(target=self.serve, daemon=True)
        self.t.start()

    def serve(self):
        while not self.stop:
            try:
                s, _ = self.ls.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            s.settimeout(30)
            buf = b""
            try:
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    buf += chunk
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        req = json.loads(line)
                        if req.get("op") == "hello":
                            out = {"id": req["id"], "ok": True, "protocol": 1, "server": "fake"}
                        else:
                            out = {"error": "request line longer than 96 MiB: skipped",
                                   "code": "malformed"}
                        s.sendall(json.dumps(out).encode() + b"\n")
            except OSError:
                pass
            finally:
                s.close()

    def tearDown(self):
        self.stop = True
        self.t.join(5)
        self.ls.close()
        os.unlink(self.srv.sock)
        self.srv.close()

    def verb(self, *args):
        try:
            return self.srv(*args, timeout=20)
        except subprocess.TimeoutExpired:
            self.fail("ptybox %s still waits after 20 s" % " ".join(args))

    def test_an_error_without_an_id_ends_execs_wait(self):
        p = self.verb("exec", "s", "-c", "x = 1")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("96 MiB: skipped", p.stderr)

    def test_an_error_without_an_id_ends_a_simple_verbs_wait(self):
        for args in (("result", "s"), ("interrupt", "s")):
            p = self.verb(*args)
            self.assertNotEqual(p.returncode, 0, p.stderr)
            self.assertIn("96 MiB: skipped", p.stderr)


if __name__ == "__main__":
    unittest.main()
