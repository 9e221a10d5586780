"""--mount, --workdir and --wheels, as a user sees them: host files in the
local sandbox (read-only unless :rw), the folder the code starts in, a wheel
folder for pip, and one clear line for each mistake."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from ptybox_test import PTYBOX, TestCase, run
from test_server import Client, Server

LOCAL = ("--via", "local")


def code_of(p):
    """The JSON result lines of `run --json`."""
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


class MountTest(TestCase):
    def setUp(self):
        # The sandbox's uid is nobody's on the host (as root) or the caller's:
        # its folders must be open to it.
        self.dir = tempfile.mkdtemp(prefix="ptybox-mount-")
        os.chmod(self.dir, 0o755)
        self.data = os.path.join(self.dir, "data")
        os.mkdir(self.data, 0o755)
        with open(os.path.join(self.data, "a.txt"), "w") as f:
            f.write("hello from the host\n")
        os.chmod(os.path.join(self.data, "a.txt"), 0o644)
        self.out = os.path.join(self.dir, "out")
        os.mkdir(self.out)
        os.chmod(self.out, 0o777)
        self.addCleanup(shutil.rmtree, self.dir, True)

    def py(self, *args, code):
        p = run("run", *LOCAL, *args, "-c", code)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def usage(self, *args, says):
        p = run("run", *args, "-c", "print(1)")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn(says, lines[0])
        self.assertEqual(p.stdout, "")
        return lines[0]

    def test_read_only_mount_is_readable_not_writable(self):
        out = self.py("--mount", self.data + ":/data", code=(
            "import errno\n"
            "print(open('/data/a.txt').read().strip())\n"
            "try:\n"
            "    open('/data/new.txt', 'w')\n"
            "except OSError as e:\n"
            "    print(errno.errorcode[e.errno])\n"))
        self.assertEqual(out, "hello from the host\nEROFS\n")
        self.assertFalse(os.path.exists(os.path.join(self.data, "new.txt")))

    def test_rw_mount_writes_land_on_the_host(self):
        self.py("--mount", self.out + ":/tmp/out:rw",
                code="open('/tmp/out/w.txt', 'w').write('from the sandbox')")
        with open(os.path.join(self.out, "w.txt")) as f:
            self.assertEqual(f.read(), "from the sandbox")

    def test_no_set_id_files_through_a_rw_mount(self):
        # nosuid guards the sandbox; the host would run a set-uid program planted
        # in a :rw folder as the sandbox's owner.
        out = self.py("--mount", self.out + ":/data:rw", code=(
            "import os, shutil\n"
            "shutil.copy('/usr/bin/id', '/data/id')\n"
            "fd = os.open('/data/id', os.O_RDONLY)\n"
            "tries = [lambda: os.chmod('/data/id', 0o4755), lambda: os.chmod('/data/id', 0o2755),\n"
            "         lambda: os.fchmod(fd, 0o6755),\n"
            "         lambda: os.close(os.open('/data/o', os.O_CREAT | os.O_WRONLY, 0o4755)),\n"
            "         lambda: os.mknod('/data/n', 0o102755)]\n"
            "for t in tries:\n"
            "    try:\n"
            "        t()\n"
            "        print('allowed')\n"
            "    except PermissionError:\n"
            "        print('EPERM')\n"
            "os.chmod('/data/id', 0o750)\n"
            "print(oct(os.stat('/data/id').st_mode))\n"))
        self.assertEqual(out, "EPERM\n" * 5 + "0o100750\n")
        self.assertEqual(sorted(os.listdir(self.out)), ["id"])
        self.assertEqual(os.stat(os.path.join(self.out, "id")).st_mode & 0o7777, 0o750)

    def test_relative_host_path(self):
        p = subprocess.run([PTYBOX, "run", *LOCAL, "--mount", "./data:/data", "-c",
                            "print(open('/data/a.txt').read().strip())"],
                           cwd=self.dir, capture_output=True, text=True, timeout=60)
        self.assertEqual((p.returncode, p.stdout), (0, "hello from the host\n"), p.stderr)

    def test_file_mount(self):
        out = self.py("--mount", os.path.join(self.data, "a.txt") + ":/config/a.txt",
                      code="import os; print(os.path.isfile('/config/a.txt'), "
                           "open('/config/a.txt').read().strip())")
        self.assertEqual(out, "True hello from the host\n")

    def test_mount_under_tmp_and_nested(self):
        sub = os.path.join(self.dir, "sub")
        os.mkdir(sub, 0o755)
        out = self.py("--mount", self.data + ":/tmp/data", "--mount", sub + ":/tmp/data2/deep",
                      code="import os; print(open('/tmp/data/a.txt').read().strip(), "
                           "os.path.isdir('/tmp/data2/deep'), os.access('/tmp', os.W_OK))")
        self.assertEqual(out, "hello from the host True True\n")

    def test_symlink_mount_point_is_refused(self):
        # Links an earlier session could have left in a :rw folder: followed, the
        # inner mount would cover a folder the sandbox provides, or be made on the host.
        elsewhere = os.path.join(self.dir, "elsewhere")
        os.mkdir(elsewhere, 0o777)
        os.symlink("../usr/lib/python3/dist-packages", os.path.join(self.out, "rel"))
        os.symlink(elsewhere, os.path.join(self.out, "abs"))
        for inside, link in (("/data/rel", "/data/rel"), ("/data/abs/sub", "/data/abs"),
                             ("/data/abs", "/data/abs")):
            with self.subTest(inside=inside):
                p = run("run", *LOCAL, "--mount", self.out + ":/data:rw",
                        "--mount", self.data + ":" + inside, "-c", "print(1)")
                self.assertEqual(p.returncode, 125, p.stderr)
                self.assertEqual(p.stdout, "")
                lines = p.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, p.stderr)
                self.assertIn("mount point %s: a symbolic link" % link, lines[0])
                self.assertEqual(os.listdir(elsewhere), [])
        # a real folder in the outer mount still takes an inner one
        os.mkdir(os.path.join(self.out, "real"))
        os.chmod(os.path.join(self.out, "real"), 0o777)
        out = self.py("--mount", self.out + ":/data:rw", "--mount", self.data + ":/data/real/in",
                      code="print(open('/data/real/in/a.txt').read().strip())")
        self.assertEqual(out, "hello from the host\n")

    @unittest.skipUnless(os.geteuid() == 0, "needs root to mount below the host folder")
    def test_host_mount_below_stays_read_only(self):
        below = os.path.join(self.data, "below")
        os.mkdir(below, 0o755)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0777", "tmpfs", below]).returncode:
            self.skipTest("cannot mount a tmpfs here")
        self.addCleanup(subprocess.run, ["umount", "-l", below])
        out = self.py("--mount", self.data + ":/data", code=(
            "import errno\n"
            "try:\n"
            "    open('/data/below/x', 'w')\n"
            "except OSError as e:\n"
            "    print(errno.errorcode[e.errno])\n"))
        self.assertEqual(out, "EROFS\n")

    def test_usage_errors(self):
        d = self.data
        cases = [
            (("--mount", "/no/such/folder:/data"), "/no/such/folder: No such file or directory"),
            (("--mount", "/:/data"), "the host's whole file system cannot be mounted"),
            (("--mount", d + ":data"), "must be absolute"),
            (("--mount", d + ":/"), "/ is the sandbox's own"),
            (("--mount", d + ":/tmp"), "/tmp is the sandbox's own"),
            (("--mount", d + ":/a/../b"), "'..' is not allowed"),
            (("--mount", d + ":/data:rx"), "expected :ro or :rw"),
            (("--mount", d), "expected HOST_PATH:SANDBOX_PATH"),
            (("--mount", d + ":/data", "--mount", self.out + ":/data/"), "/data is mounted twice"),
            (("--workdir", "tmp/work"), "expected an absolute path"),
            (("--wheels", "/no/such/wheels"), "--wheels /no/such/wheels: No such file"),
        ]
        for where in ("/usr", "/usr/local/x", "/proc", "/dev", "/dev/x", "/sys", "/etc",
                      "/etc/ssl", "/bin", "/lib", "/lib64", "/sbin", "/run/ptybox"):
            cases.append((("--mount", d + ":" + where), "the sandbox provides"))
        for args, says in cases:
            with self.subTest(args=args):
                line = self.usage(*LOCAL, *args, says=says)
                self.assertTrue(line.startswith("ptybox: run: --"), line)

    def test_too_many_mounts(self):
        args = []
        for i in range(65):
            args += ["--mount", "%s:/m/%d" % (self.data, i)]
        self.usage(*LOCAL, *args, says="more than 64 mounts")

    def test_mount_needs_the_local_sandbox(self):
        self.usage("--via", "none", "--mount", self.data + ":/data",
                   says="--mount needs the local sandbox")
        self.usage("--via", "exec:sh -c 'exec \"$0\" \"$@\"'", "--mount", self.data + ":/data",
                   says="--mount needs the local sandbox")

    def test_workdir(self):
        p = run("run", *LOCAL, "--json", "--mount", self.out + ":/tmp/work:rw",
                "--workdir", "/tmp/work",
                "-c", "import os; print(os.getcwd()); open('here.txt', 'w').write('x')",
                "-c", "import os; os.chdir('/'); os._exit(3)",
                "-c", "import os; print(os.getcwd(), os.environ['PTYBOX_WORKDIR'])")
        results = code_of(p)
        self.assertEqual(results[0]["stdout"], "/tmp/work\n", p.stderr)
        self.assertTrue(results[1]["state_lost"])
        # a fresh interpreter starts in the workdir again
        self.assertEqual(results[2]["stdout"], "/tmp/work /tmp/work\n", p.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.out, "here.txt")))

    def test_default_workdir_is_tmp(self):
        self.assertEqual(self.py(code="import os; print(os.getcwd())"), "/tmp\n")

    def test_missing_workdir_fails_the_start(self):
        for via in ("local", "none", "exec:sh -c 'exec \"$0\" \"$@\"'"):
            with self.subTest(via=via):
                p = run("run", "--via", via, "--workdir", "/no/such/dir", "-c", "print(1)")
                self.assertEqual(p.returncode, 125, p.stderr)
                self.assertIn("workdir /no/such/dir: No such file or directory", p.stderr)
                self.assertEqual(p.stdout, "")

    def test_workdir_elsewhere(self):
        for via in ("none", "exec:sh -c 'exec \"$0\" \"$@\"'"):
            with self.subTest(via=via):
                p = run("run", "--via", via, "--workdir", self.dir, "--json",
                        "-c", "import os; print(os.getcwd())", "-c", "import os; os._exit(1)",
                        "-c", "import os; print(os.getcwd())")
                results = code_of(p)
                self.assertEqual(results[0]["stdout"], self.dir + "\n", p.stderr)
                self.assertEqual(results[2]["stdout"], self.dir + "\n", p.stderr)

    def test_wheels(self):
        wheels = os.path.join(self.dir, "wheels")
        os.mkdir(wheels, 0o755)
        open(os.path.join(wheels, "demo-1.0-py3-none-any.whl"), "w").close()
        out = self.py("--wheels", wheels, code=(
            "import errno, os\n"
            "w = os.environ['PTYBOX_WHEELS']\n"
            "print(w, os.listdir(w), 'PTYBOX_NET' in os.environ)\n"
            "try:\n"
            "    open(w + '/x', 'w')\n"
            "except OSError as e:\n"
            "    print(errno.errorcode[e.errno])\n"))
        self.assertEqual(out, "/run/ptybox/wheels ['demo-1.0-py3-none-any.whl'] False\nEROFS\n")
        # elsewhere it is a path on the far side, passed as it is
        p = run("run", "--via", "exec:sh -c 'exec \"$0\" \"$@\"'", "--wheels", "/far/wheels",
                "-c", "import os; print(os.environ['PTYBOX_WHEELS'])")
        self.assertEqual(p.stdout, "/far/wheels\n", p.stderr)

    def test_net_is_told(self):
        out = self.py("--net", code="import os; print(os.environ.get('PTYBOX_NET'))")
        self.assertEqual(out, "1\n")


class MountServerTest(TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server()
        cls.dir = tempfile.mkdtemp(prefix="ptybox-mount-")
        os.chmod(cls.dir, 0o755)
        with open(os.path.join(cls.dir, "a.txt"), "w") as f:
            f.write("via the server\n")
        os.chmod(os.path.join(cls.dir, "a.txt"), 0o644)

    @classmethod
    def tearDownClass(cls):
        cls.srv.close()
        shutil.rmtree(cls.dir, True)

    def test_new_with_mount(self):
        srv = self.srv
        p = subprocess.run([PTYBOX, "new", "m1", "--via", "local", "--mount", ".:/data",
                            "--workdir", "/data"], cwd=self.dir, capture_output=True,
                           text=True, timeout=60, env=srv.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = srv("exec", "m1", "-c", "import os; print(os.getcwd(), open('a.txt').read().strip())")
        self.assertEqual(p.stdout, "/data via the server\n", p.stderr)
        srv("kill", "m1")

    def test_new_with_relative_wheels(self):
        # (a host folder, made absolute against the client's folder as --mount's)
        srv = self.srv
        p = subprocess.run([PTYBOX, "new", "w1", "--via", "local", "--wheels", "."],
                           cwd=self.dir, capture_output=True, text=True, timeout=60,
                           env=srv.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = srv("exec", "w1", "-c",
                "import os; print(sorted(os.listdir(os.environ['PTYBOX_WHEELS'])))")
        self.assertEqual(p.stdout, "['a.txt']\n", p.stderr)
        srv("kill", "w1")

    def test_pooled_sessions_keep_their_own_mounts(self):
        srv, other = self.srv, tempfile.mkdtemp(prefix="ptybox-mount-")
        self.addCleanup(shutil.rmtree, other, True)
        os.chmod(other, 0o755)
        with open(os.path.join(other, "a.txt"), "w") as f:
            f.write("the other folder\n")
        os.chmod(os.path.join(other, "a.txt"), 0o644)
        code = "import os; print(os.listdir('/data') if os.path.isdir('/data') else None)"
        for name, args, want in (("p1", ["--mount", self.dir + ":/data"], "['a.txt']"),
                                 ("p2", [], "None"),
                                 ("p3", ["--mount", other + ":/data"], "['a.txt']")):
            p = srv("new", name, "--via", "local", "--pool", "1", *args)
            self.assertEqual(p.returncode, 0, p.stderr)
            p = srv("exec", name, "-c", code, "-c", "print(open('/data/a.txt').read().strip() "
                    "if os.path.isdir('/data') else '-')")
            self.assertEqual(p.stdout.splitlines()[0], want, p.stderr)
            srv("kill", name)
        p = srv("new", "p4", "--via", "local", "--pool", "1", "--mount", other + ":/data")
        p = srv("exec", "p4", "-c", "print(open('/data/a.txt').read().strip())")
        self.assertEqual(p.stdout, "the other folder\n", p.stderr)
        srv("kill", "p4")

    def test_new_usage_errors(self):
        srv = self.srv
        p = srv("new", "m2", "--via", "local", "--mount", "/no/such:/data")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--mount /no/such: No such file or directory", p.stderr)
        p = srv("new", "m3", "--via", "none", "--mount", self.dir + ":/data")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--mount needs the local sandbox", p.stderr)

    def test_protocol(self):
        self.srv("ls")  # (starts the server)
        c = Client(self.srv.sock)
        try:
            c.send({"id": 1, "op": "new", "session": "m4",
                    "options": {"mount": ["rel/ative:/data"]}})
            r = c.reply(1)
            self.assertEqual(r.get("code"), "usage", r)
            self.assertIn("must be absolute", r["error"])
            c.send({"id": 2, "op": "new", "session": "m5",
                    "options": {"mount": self.dir + ":/data"}})
            r = c.reply(2)
            self.assertTrue(r.get("ok"), r)
            c.send({"id": 3, "op": "exec", "session": "m5", "wait": True,
                    "code": "print(open('/data/a.txt').read().strip())"})
            r = c.reply(3)
            self.assertIn('"stdout": "via the server\\n"', json.dumps(r), r)
            c.send({"id": 4, "op": "kill", "session": "m5"})
            c.reply(4)
        finally:
            c.close()
        c = Client(self.srv.sock, hello=False)
        try:
            c.send({"id": 0, "op": "hello", "protocol": 1, "via": "dial-stdio"})
            self.assertTrue(c.recv()["ok"])
            c.send({"id": 1, "op": "new", "session": "m6",
                    "options": {"mount": [self.dir + ":/data"]}})
            r = c.reply(1)
            self.assertEqual(r.get("code"), "usage", r)
            self.assertIn("refused through dial-stdio", r["error"])
        finally:
            c.close()


if __name__ == "__main__":
    unittest.main()
