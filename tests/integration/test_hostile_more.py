"""More hostile and broken clients against the long-lived server (report-hostile.md
hostile-6, -10; report-newuser.md newuser-12, -13): what one client sends must not stall the
server's loop, grow its memory without bound, or make it write what is not UTF-8. Each test
has a server of its own and leaves nothing running. (hostile-1..5, 7..9: test_hostile.py
and test_server_bounds.py.)"""
import json
import re
import select
import subprocess
import time
import unittest

from ptybox_test import TestCase
from test_server import PTYBOX, Client, Server

MIB = 1 << 20


class SocketServerTest(TestCase):
    def setUp(self):
        self.srv = Server()
        p = self.srv("new", "victim")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.pid = self.srv.daemon_pid()

    def tearDown(self):
        self.srv.close()

    def test_a_result_cut_in_a_character_is_still_utf8(self):
        # hostile-10: 1,300,000 CJK characters (3.9 MB) just pass max_output:
        # the result's stdout, cut to head and tail, held a lone 0xbd (the
        # end of a cut U+FFFD) right after "[... output dropped]": not UTF-8,
        # so not JSON (RFC 8259) for a strict client. (run --json too.)
        c = Client(self.srv.sock)
        c.s.settimeout(120)
        c.send({"id": 1, "op": "exec", "session": "victim",
                "code": "print('\\u4e00' * 1300000)"})
        parts = [c.buf]
        while b"\n" not in parts[-1]:
            chunk = c.s.recv(1 << 20)
            self.assertTrue(chunk, "the server closed the connection")
            parts.append(chunk)
        line = b"".join(parts).split(b"\n", 1)[0]
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as e:
            self.fail("the reply is not UTF-8 at byte %d: %r" % (e.start, line[e.start - 24:e.start + 8]))
        self.assertTrue(json.loads(line)["truncated"])
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


if __name__ == "__main__":
    unittest.main()
