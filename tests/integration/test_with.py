"""Several interpreters in one sandbox: `ptybox new B --with A` starts B in
A's sandbox (its files, processes and limits), as E2B's contexts share one;
killing A kills B, killing B leaves A. Driven through the verbs, as a user
does, and through the socket, as a program does."""
import json
import os
import shutil
import sys
import tempfile
import time
import unittest

from ptybox_test import VIA, TestCase
from test_server import Client, Server

PROCS = ("import os\n"
         "print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))")


def procs(out):
    return set(json.loads(out.strip().splitlines()[-1]))


@unittest.skipIf(VIA != "local", "--with shares the embedded sandbox")
class TestWith(TestCase):
    def setUp(self):
        self.srv = Server()
        r = self.srv("new", "a")
        self.assertEqual(r.returncode, 0, r.stderr)

    def tearDown(self):
        self.srv.close()

    def exec(self, name, code):
        r = self.srv("exec", name, "-c", code)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_files_and_processes_are_shared(self):
        self.exec("a", "open('/tmp/from-a.txt', 'w').write('written by a')")
        r = self.srv("new", "b", "--with", "a")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.exec("b", "print(open('/tmp/from-a.txt').read())"),
                         "written by a\n")
        self.exec("b", "open('/tmp/from-b.txt', 'w').write('and by b')")
        self.assertEqual(self.exec("a", "print(open('/tmp/from-b.txt').read())"),
                         "and by b\n")
        # One pid namespace: each sees the other's processes, the same set.
        seen_by_a, seen_by_b = procs(self.exec("a", PROCS)), procs(self.exec("b", PROCS))
        self.assertIn(1, seen_by_a)
        self.assertGreater(len(seen_by_a & seen_by_b), 4, (seen_by_a, seen_by_b))
        # Its own state all the same: a variable of a is not b's.
        self.exec("a", "only_a = 1")
        r = self.srv("exec", "b", "-c", "only_a")
        self.assertEqual(r.returncode, 1)
        self.assertIn("NameError", r.stdout + r.stderr)
        ls = self.srv("ls")
        line = [l for l in ls.stdout.splitlines() if l.startswith("b ")][0]
        self.assertIn("with:a", line)
        sessions = {s["name"]: s for s in map(json.loads, self.srv("ls", "--json").stdout.split("\n")[:-1])}
        self.assertEqual(sessions["b"]["with"], "a")
        self.assertIsNone(sessions["a"]["with"])

    def test_a_sharer_of_a_sharer_shares_the_first(self):
        self.assertEqual(self.srv("new", "b", "--with", "a").returncode, 0)
        r = self.srv("new", "c", "--with", "b")
        self.assertEqual(r.returncode, 0, r.stderr)
        sessions = {s["name"]: s for s in map(json.loads, self.srv("ls", "--json").stdout.split("\n")[:-1])}
        self.assertEqual(sessions["c"]["with"], "a")

    def test_killing_a_kills_b(self):
        self.assertEqual(self.srv("new", "b", "--with", "a").returncode, 0)
        self.exec("b", "x = 1")
        r = self.srv("kill", "a")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.srv("ls").stdout, "")
        r = self.srv("exec", "b", "-c", "x")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no session 'b'", r.stderr)

    def test_killing_b_leaves_a(self):
        self.assertEqual(self.srv("new", "b", "--with", "a").returncode, 0)
        # b's kernel, its template and its relay, as the sandbox numbers them
        mine = self.exec("b", "import os\n"
                              "t = int(open('/proc/%d/stat' % os.getppid()).read()"
                              ".rsplit(')', 1)[1].split()[1])\n"
                              "print(os.getpid(), os.getppid(), t)")
        b_pids = set(map(int, mine.split()))
        self.assertTrue(b_pids <= procs(self.exec("a", PROCS)))
        self.exec("a", "y = 2")
        self.assertEqual(self.srv("kill", "b").returncode, 0)
        self.assertEqual(self.exec("a", "print(y)"), "2\n")
        deadline = time.monotonic() + 10
        while b_pids & procs(self.exec("a", PROCS)) and time.monotonic() < deadline:
            pass
        self.assertFalse(b_pids & procs(self.exec("a", PROCS)))

    def test_b_restarts_in_the_same_sandbox(self):
        self.exec("a", "open('/tmp/mark', 'w').write('still here')")
        self.assertEqual(self.srv("new", "b", "--with", "a").returncode, 0)
        self.exec("b", "z = 3")
        r = self.srv("exec", "b", "-c", "import os; os._exit(3)")
        self.assertIn("restarted", r.stdout + r.stderr)
        self.assertEqual(self.exec("b", "print(open('/tmp/mark').read())"), "still here\n")
        r = self.srv("exec", "b", "-c", "z")
        self.assertIn("NameError", r.stdout + r.stderr)

    def test_b_follows_a_new_sandbox(self):
        self.assertEqual(self.srv("new", "b", "--with", "a").returncode, 0)
        # a's relay (pid 2 of its sandbox) dies: a gets a whole new sandbox,
        # b's interpreter dies with the old one and starts in the new one.
        self.srv("exec", "a", "-c", "import os; os.kill(2, 9)")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            r = self.srv("exec", "a", "-c", "open('/tmp/new-sandbox', 'w').write('x')")
            if r.returncode == 0:
                break
        self.assertEqual(r.returncode, 0, r.stderr)
        while time.monotonic() < deadline:
            r = self.srv("exec", "b", "-c", "print(open('/tmp/new-sandbox').read())")
            if r.returncode == 0 or "dead" in r.stderr:
                break
        self.assertEqual((r.returncode, r.stdout), (0, "x\n"), r.stderr)

    def test_what_shapes_a_sandbox_is_refused_beside_with(self):
        for extra in (["--mount", "/etc:/mnt/etc"], ["--net"], ["--cpus", "2"],
                      ["--tmp-size", "1G"], ["--pool", "2"]):
            r = self.srv("new", "x", "--with", "a", *extra)
            self.assertEqual(r.returncode, 2, (extra, r.stderr))
            self.assertIn("--%s does not apply" % extra[0][2:], r.stderr)
        r = self.srv("new", "x", "--with", "a", "--pool", "0")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.srv("new", "y", "--with", "a", "--with", "x")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--with given twice", r.stderr)

    @unittest.skipIf(os.geteuid() != 0, "the memory cgroup needs root")
    def test_an_oom_is_told_to_the_session_it_killed(self):
        # m has no RLIMIT_AS of its own: the shared memory cgroup (a's 1 GiB) stops it
        self.assertEqual(self.srv("new", "m", "--with", "a", "--memory", "0").returncode, 0)
        r = self.srv("exec", "m", "-c", "x = []\nfor i in range(30): x.append(bytearray(100 << 20))")
        self.assertIn("out of memory", r.stderr)
        r = self.srv("exec", "a", "-c", "import os; os.kill(os.getpid(), 9)")
        self.assertIn("killed by signal 9", r.stderr)
        self.assertNotIn("out of memory", r.stderr)
        # (m idle again, whatever the OOM killer took: its kernel or its relay)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            ls = {s["name"]: s for s in map(json.loads, self.srv("ls", "--json").stdout.split("\n")[:-1])}
            if ls["m"]["state"] == "idle":
                break
        self.assertIsInstance(ls["m"]["memory"], (int, float), ls["m"])

    def test_bad_uses_say_why(self):
        cases = [
            (("new", "b", "--with", "nosuch"), "--with nosuch: no such session"),
            (("new", "b", "--with", "a", "--via", "exec:cat"), "--via does not apply"),
            # (the refusal alone: no warning first of a --via none that never runs)
            (("new", "b", "--with", "a", "--via", "none"), "--via does not apply"),
            (("new", "b", "--with", "bare"), "--with bare: that session runs --via none: "
             "it has no embedded sandbox to share (--with needs a --via local one)"),
            (("new", "b", "--with", "bare", "--via", "none"), "no embedded sandbox to share"),
            (("exec", "a", "--with", "a", "-c", "1"), "'--with' is for new"),
            (("new", "b", "--with", "a", "--pool", "2"), "--pool does not apply"),
        ]
        r = self.srv("new", "bare", "--via", "none")
        self.assertEqual(r.returncode, 0, r.stderr)
        for args, said in cases:
            r = self.srv(*args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(said, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_the_socket_takes_with_in_options(self):
        c = Client(self.srv.sock)
        c.send({"id": 1, "op": "new", "session": "b", "options": {"with": "a"}})
        self.assertTrue(c.recv()["ok"])
        c.send({"id": 2, "op": "new", "session": "c", "options": {"with": 7}})
        reply = c.recv()
        self.assertFalse(reply.get("ok"), reply)
        self.assertIn("must be the name of a session", reply["error"])
        c.send({"id": 3, "op": "exec", "session": "b", "code": "import os; os.getpid() != 1"})
        m = c.reply(3)
        self.assertEqual((m["status"], m["result"]["text/plain"]), ("ok", "True"), m)
        c.close()


@unittest.skipIf(VIA != "local", "--with shares the embedded sandbox")
class TestWithAsAUser(TestCase):
    """Without root (no CAP_SYS_PTRACE over the sandbox's non-dumpable init),
    B enters A's namespaces through the ones A's outer child keeps."""

    def setUp(self):
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "security"))
        import sandbox_test
        self.user = sandbox_test.runner("user")
        if self.user.root:
            self.skipTest("no user other than root here")
        self.dir = tempfile.mkdtemp(prefix="ptybox-with-user-")
        os.chmod(self.dir, 0o700)
        os.chown(self.dir, self.user.uid, self.user.gid)
        self.env = {"XDG_RUNTIME_DIR": self.dir}

    def tearDown(self):
        self.user.run("kill-server", env=self.env)
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_b_shares_a_sandbox_as_a_user(self):
        u, env = self.user, self.env
        self.assertEqual(u.run("new", "a", env=env).returncode, 0)
        u.run("exec", "a", "-c", "open('/tmp/from-a', 'w').write('a')", env=env)
        r = u.run("new", "b", "--with", "a", env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = u.run("exec", "b", "-c", "print(open('/tmp/from-a').read())", env=env)
        self.assertEqual((r.returncode, r.stdout), (0, "a\n"), r.stderr)
        self.assertEqual(u.run("kill", "a", env=env).returncode, 0)
        self.assertEqual(u.run("ls", env=env).stdout, "")


if __name__ == "__main__":
    unittest.main()
