"""The ssh transport against a real sshd on loopback: the same session as in
the sandbox, with the terminal at the far end of `ssh -tt`."""
import getpass
import json
import os
import select
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

from ptybox_test import PTYBOX, TestCase, run

SSHD = "/usr/sbin/sshd"


class LoopbackSshd:
    """sshd on 127.0.0.1 with throwaway keys, and an `ssh` on PATH that uses them
    (ptybox runs plain `ssh`; the wrapper adds `-F` with our client config)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ptybox-sshd-")
        self.proc = None
        d = self.dir
        for key in ("host", "client"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                            os.path.join(d, key)], check=True, timeout=30)
        shutil.copy(os.path.join(d, "client.pub"), os.path.join(d, "authorized_keys"))
        with socket.socket() as s:               # a free port, for sshd to take
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        try:                                     # the same port on ::1, where there is one
            with socket.socket(socket.AF_INET6) as s:
                s.bind(("::1", self.port))
            self.ipv6 = True
        except OSError:
            self.ipv6 = False
        with open(os.path.join(d, "sshd_config"), "w") as f:
            f.write("Port %d\nListenAddress 127.0.0.1\nHostKey %s/host\n"
                    "AuthorizedKeysFile %s/authorized_keys\nPasswordAuthentication no\n"
                    "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                    "PermitRootLogin prohibit-password\nPidFile %s/sshd.pid\n"
                    % (self.port, d, d, d))
            if self.ipv6:
                f.write("ListenAddress [::1]:%d\n" % self.port)
        with open(os.path.join(d, "ssh_config"), "w") as f:
            # An alias whose port and user only the config knows, as in a
            # user's ~/.ssh/config: `--via ssh://ptybox-alias` must keep them.
            f.write("Host ptybox-alias\n  HostName 127.0.0.1\n  Port %d\n  User %s\n"
                    % (self.port, getpass.getuser()))
            f.write("Host *\n  IdentityFile %s/client\n  UserKnownHostsFile /dev/null\n"
                    "  StrictHostKeyChecking no\n  LogLevel ERROR\n" % d)
        os.mkdir(os.path.join(d, "bin"))
        wrapper = os.path.join(d, "bin", "ssh")
        with open(wrapper, "w") as f:
            f.write('#!/bin/sh\nexec %s -F %s/ssh_config "$@"\n' % (shutil.which("ssh"), d))
        os.chmod(wrapper, 0o755)
        if os.geteuid() == 0:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # privilege separation
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", os.path.join(d, "sshd_config")],
                                     stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._await_listening(deadline=time.monotonic() + 20)
        self.env = dict(os.environ, PATH=os.path.join(d, "bin") + ":" + os.environ["PATH"])
        self.via = "ssh://%s@127.0.0.1:%d" % (getpass.getuser(), self.port)

    def _await_listening(self, deadline):
        said = b""
        while b"Server listening" not in said:
            left = deadline - time.monotonic()
            r = select.select([self.proc.stderr], [], [], max(0, left))[0] if left > 0 else []
            chunk = os.read(self.proc.stderr.fileno(), 4096) if r else b""
            if not chunk:
                self.close()
                raise RuntimeError("sshd did not start: %s" % said.decode(errors="replace"))
            said += chunk

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc:
            self.proc.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class SshTransportTest(TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sshd = LoopbackSshd()

    @classmethod
    def tearDownClass(cls):
        cls.sshd.close()

    def ptybox(self, *args, timeout=60):
        return run(*args, via=False, env=self.sshd.env, timeout=timeout)

    def json_lines(self, p):
        return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]

    def test_a_session_runs_at_the_far_end_and_keeps_its_state(self):
        p = self.ptybox("run", "--json", "--via", self.sshd.via,
                        "-c", "print('hello, world!')", "-c", "x = 10", "-c", "y = 5",
                        "-c", "import os; os.write(1, b'fd %d\\n' % os.getppid()); x + y",
                        "-c", "1 / 0")
        self.assertEqual(p.returncode, 1, p.stderr)
        r = self.json_lines(p)
        self.assertEqual([x["status"] for x in r], ["ok", "ok", "ok", "ok", "error"])
        self.assertEqual(r[0]["stdout"], "hello, world!\n")
        self.assertEqual(r[3]["result"], {"text/plain": "15"})
        self.assertRegex(r[3]["stdout"], r"^fd \d+\n$")
        self.assertEqual(r[4]["error"]["name"], "ZeroDivisionError")
        self.assertFalse(any(x["state_lost"] for x in r))

    def test_env_reaches_the_code_quoted_as_given(self):
        value = "it's \"quoted\" $HOME \\ `id` ; exit 3"
        p = self.ptybox("run", "--via", self.sshd.via, "--env", "GREETING=" + value,
                        "--env", "EMPTY=", "-c",
                        "import os; print(repr((os.environ['GREETING'], os.environ['EMPTY'])))")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, repr((value, "")) + "\n")

    def test_a_timeout_interrupts_over_ssh_and_keeps_the_state(self):
        t0 = time.monotonic()
        p = self.ptybox("run", "--json", "--timeout", "1", "--via", self.sshd.via,
                        "-c", "x = 7", "-c", "while True: pass", "-c", "x * 6")
        self.assertEqual(p.returncode, 1, p.stderr)
        r = self.json_lines(p)
        self.assertEqual([x["status"] for x in r], ["ok", "timeout", "ok"])
        self.assertEqual(r[1]["error"]["name"], "KeyboardInterrupt")
        self.assertFalse(r[1]["state_lost"])
        self.assertEqual(r[2]["result"], {"text/plain": "42"})
        self.assertLess(time.monotonic() - t0, 20)

    def test_port_and_user_are_left_to_the_ssh_config_when_the_url_has_none(self):
        p = self.ptybox("run", "--via", "ssh://ptybox-alias", "-c", "print(6 * 7)")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "42\n")

    def test_an_ipv6_address_in_brackets(self):
        if not self.sshd.ipv6:
            self.skipTest("no ::1 here")
        for via in ("ssh://%s@[::1]:%d" % (getpass.getuser(), self.sshd.port),
                    "ssh://[::1]:%d" % self.sshd.port):
            p = self.ptybox("run", "--via", via, "-c", "1 + 1")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout, "2\n")

    def test_urls_that_are_not_ssh_urls_are_refused_before_anything_runs(self):
        for via in ("ssh://", "ssh://host:", "ssh://host:0", "ssh://host:65536",
                    "ssh://host:22x", "ssh://::1", "ssh://[::1", "ssh://[::1]x",
                    "ssh://[]:22", "ssh://@host", "ssh://-oProxyCommand=x"):
            p = self.ptybox("run", "--via", via, "-c", "1")
            self.assertEqual(p.returncode, 2, (via, p.stderr))
            self.assertIn("expected local, none, ssh://", p.stderr, via)


if __name__ == "__main__":
    unittest.main()


class RemoteServerTest(TestCase):
    """-H ssh://: the verbs against the server at the far end, through
    `ssh host ptybox dial-stdio` (here the far end is this machine, with a
    server of the test's own name)."""

    @classmethod
    def setUpClass(cls):
        cls.sshd = LoopbackSshd()
        cls.label = "test-remote-%d" % os.getpid()
        cls.env = dict(cls.sshd.env, PTYBOX_REMOTE=os.path.abspath(PTYBOX))
        cls.host = cls.sshd.via  # ssh://user@127.0.0.1:port

    @classmethod
    def tearDownClass(cls):
        cls.ptybox("-H", cls.host, "-L", cls.label, "kill-server")
        cls.sshd.close()

    @classmethod
    def ptybox(cls, *args, timeout=60):
        return run(*args, via=False, env=cls.env, timeout=timeout)

    def test_sessions_live_in_the_far_servers_sandbox(self):
        p = self.ptybox("-H", self.host, "-L", self.label, "new", "far")
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.ptybox("exec", "far", "-H", self.host, "-L", self.label, "-c", "x = 20")
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.ptybox("exec", "far", "-H", self.host, "-L", self.label, "-c",
                        "import os; print(os.getpid()); x + 1")
        self.assertEqual(p.returncode, 0, p.stderr)
        pid, value = p.stdout.split()
        self.assertLess(int(pid), 10)  # in the far end's sandbox (its own pid namespace)
        self.assertEqual(value, "21")
        # the same server, seen from the far end itself
        p = self.ptybox("ls", "-L", self.label, "--json")
        self.assertIn("far", [json.loads(l)["name"] for l in p.stdout.splitlines()])
        p = self.ptybox("-H", self.host, "-L", self.label, "kill", "far")
        self.assertEqual(p.returncode, 0, p.stderr)

    @unittest.skipUnless(shutil.which("tmux"), "tmux is not installed")
    def test_attach_through_ssh_shows_the_far_session_and_runs_in_it(self):
        from test_repl import Terminal
        self.assertEqual(self.ptybox("-H", self.host, "-L", self.label, "new", "att").returncode,
                         0)
        self.ptybox("exec", "att", "-H", self.host, "-L", self.label, "-c",
                    "z = 3; print('far side', z)")
        folder = tempfile.mkdtemp(prefix="ptybox-ssh-attach-")
        env = dict(self.env, XDG_STATE_HOME=folder, TERM="xterm-256color")
        t = Terminal([PTYBOX, "-H", self.host, "-L", self.label, "attach", "att"], env, folder)
        try:
            t.wait("far side 3")
            t.wait(">>>", count=2)
            t.tmux("send-keys", "-t", "0", "-l", "z * 2")
            t.tmux("send-keys", "-t", "0", "Enter")
            t.wait("\n6\n")
            t.tmux("send-keys", "-t", "0", "C-d")
            self.assertEqual(t.exit_status(), 0)
        finally:
            t.close()
            shutil.rmtree(folder, ignore_errors=True)
        p = self.ptybox("-H", self.host, "-L", self.label, "ls")
        self.assertIn("att", p.stdout)
        self.ptybox("-H", self.host, "-L", self.label, "kill", "att")

    def test_transports_that_run_commands_are_refused_through_dial_stdio(self):
        for via in ("exec:sh", self.host):
            p = self.ptybox("-H", self.host, "-L", self.label, "new", "t", "--via", via)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("refused through dial-stdio", p.stderr)
        p = self.ptybox("-H", self.host, "-L", self.label, "new", "t", "--python", "/bin/sh")
        self.assertEqual(p.returncode, 2, p.stderr)

    def test_when_ssh_itself_fails_its_own_error_gets_no_hint(self):
        with socket.socket() as s:  # a port nobody listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        p = run("-H", "ssh://127.0.0.1:%d" % port, "ls", via=False, env=self.env, timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("ssh could not connect", p.stderr)
        self.assertNotIn("is ptybox installed there", p.stderr)

    def test_a_host_without_ptybox_says_so(self):
        env = dict(self.env, PTYBOX_REMOTE="/nonexistent/ptybox")
        p = run("-H", self.host, "ls", via=False, env=env, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn("is ptybox installed there", p.stderr)
