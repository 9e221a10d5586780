"""What the code in the sandbox can see of the host: environment, files, network,
identity, processes. Each test asserts what a user would check from inside."""
import json
import os
import shutil
import socket
import uuid

from sandbox_test import IS_ROOT, PTYBOX, REPO, SandboxTestCase, marker


class IsolationChecks:
    def test_host_environment_is_invisible_and_the_allow_list_exact(self):
        secret = "s3cret-" + uuid.uuid4().hex
        code = (
            "import json, os\n"
            "env = dict(os.environ)\n"
            "raw = open('/proc/self/environ', 'rb').read().decode()\n"
            "print(json.dumps([env, %r in raw]))" % secret)
        env, in_raw = self.probe(code, env={"PTYBOX_TEST_SECRET": secret})
        self.assertNotIn("PTYBOX_TEST_SECRET", env)
        self.assertFalse(in_raw)
        self.assertNotIn(secret, "".join(env.values()))
        self.assertEqual(sorted(env), ["HOME", "LANG", "MALLOC_ARENA_MAX", "MPLBACKEND",
                                       "PATH", "PTYBOX_WORKDIR", "TERM"])
        self.assertEqual(env["HOME"], "/tmp")
        self.assertEqual(env["PTYBOX_WORKDIR"], "/tmp")  # (ptybox's own: --workdir)
        self.assertEqual(env["PATH"], "/usr/local/bin:/usr/bin:/bin")

        # --env adds exactly what the user asked for, and nothing of the host's.
        env, _ = self.probe(code, extra=["--env", "FOO=bar baz"],
                            env={"PTYBOX_TEST_SECRET": secret, "FOO": "host"})
        self.assertEqual(env["FOO"], "bar baz")
        self.assertEqual(sorted(env), ["FOO", "HOME", "LANG", "MALLOC_ARENA_MAX",
                                       "MPLBACKEND", "PATH", "PTYBOX_WORKDIR", "TERM"])

    def test_host_files_are_invisible(self):
        hidden = ["/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh", "/root", "/home",
                  "/var", "/sys", "/run", "/mnt", "/opt", "/srv", "/boot", REPO,
                  os.path.dirname(PTYBOX), os.path.dirname(self.r.binary)]
        code = (
            "import json, os, pwd\n"
            "print(json.dumps(dict(exists={p: os.path.exists(p) for p in %r},\n"
            "                      cwd=os.getcwd(), root=sorted(os.listdir('/')),\n"
            "                      users=sorted(p.pw_name for p in pwd.getpwall()))))" % hidden)
        seen = self.probe(code)
        self.assertEqual([p for p, there in seen["exists"].items() if there], [])
        self.assertEqual(seen["cwd"], "/tmp")
        self.assertEqual(set(seen["root"]) - {"bin", "dev", "etc", "lib", "lib32", "lib64",
                                              "libx32", "proc", "sbin", "tmp", "usr"}, set())
        self.assertEqual(seen["users"], ["nobody", "root", "sandbox"])

    def test_system_folders_are_read_only(self):
        code = r'''
import errno, json, os
def err(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
print(json.dumps({
    "/usr/x": err(lambda: open("/usr/x", "w")),
    "mkdir /usr/lib/x": err(lambda: os.mkdir("/usr/lib/x")),
    "/bin/x": err(lambda: open("/bin/x", "w")),
    "/x": err(lambda: open("/x", "w")),
    "/etc/passwd": err(lambda: open("/etc/passwd", "a")),
    "/tmp/x": err(lambda: open("/tmp/x", "w").close()),
}))'''
        self.assertEqual(self.probe(code), {
            "/usr/x": "EROFS", "mkdir /usr/lib/x": "EROFS", "/bin/x": "EROFS",
            "/x": "EROFS", "/etc/passwd": "EROFS", "/tmp/x": "ok"})

    def test_mounts_below_a_read_only_folder_are_read_only(self):
        # A host whose /usr has a writable mount below it (/usr/local on its own file
        # system): made in a private mount namespace, so the host is untouched.
        if not IS_ROOT:
            self.skipTest("needs root to mount below /usr in a private mount namespace")
        if not shutil.which("unshare") or not os.path.isdir("/usr/local"):
            self.skipTest("needs unshare(1) and a /usr/local folder")
        wrap = ["unshare", "--mount", "--propagation", "private", "sh", "-ec",
                "mount -t tmpfs -o mode=1777 ptybox-sectest /usr/local\n"
                "mkdir /usr/local/below\n"
                "mount -t tmpfs -o mode=1777 ptybox-sectest /usr/local/below\n"
                'exec "$@"', "sh"]
        code = r'''
import errno, json
def err(path):
    try:
        open(path, "w").close()
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
mounts = [l.split()[4] for l in open("/proc/self/mountinfo")]
print(json.dumps([[m for m in mounts if m.startswith("/usr/local")],
                  err("/usr/local/x"), err("/usr/local/below/x")]))'''
        got = self.probe(code, wrap=wrap)
        self.assertEqual(got, [["/usr/local", "/usr/local/below"], "EROFS", "EROFS"])

    def _listeners(self):
        tcp = socket.socket()
        tcp.bind(("127.0.0.1", 0))
        tcp.listen(4)
        tcp.setblocking(False)
        abstract = socket.socket(socket.AF_UNIX)
        name = "\0ptybox-sectest-" + uuid.uuid4().hex
        abstract.bind(name)
        abstract.listen(4)
        abstract.setblocking(False)
        self.addCleanup(tcp.close)
        self.addCleanup(abstract.close)
        return tcp, abstract, name

    CONNECT = r'''
import errno, json, os, socket
def err(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
def tcp():
    s = socket.socket(); s.settimeout(5); s.connect(("127.0.0.1", %d))
def unix():
    s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(%r)
print(json.dumps([err(tcp), err(unix), [n for _, n in socket.if_nameindex()]]))'''

    def test_host_loopback_services_are_unreachable(self):
        tcp, abstract, name = self._listeners()
        got = self.probe(self.CONNECT % (tcp.getsockname()[1], name))
        self.assertEqual(got, ["ECONNREFUSED", "ECONNREFUSED", ["lo"]])
        for s in (tcp, abstract):
            with self.assertRaises(BlockingIOError):
                s.accept()

    def test_host_loopback_service_is_reachable_with_net(self):
        tcp, abstract, name = self._listeners()
        got = self.probe(self.CONNECT % (tcp.getsockname()[1], name), extra=["--net"])
        self.assertEqual(got[:2], ["ok", "ok"])

    def test_identity_capabilities_and_filter(self):
        code = r'''
import json, os, socket
st = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines())
print(json.dumps(dict(
    ids=[os.getuid(), os.geteuid(), os.getgid(), os.getegid()], groups=os.getgroups(),
    caps={k: st[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")},
    nnp=st["NoNewPrivs"].strip(), seccomp=st["Seccomp"].strip(),
    hostname=socket.gethostname(), uname=os.uname().nodename,
    uid_map=open("/proc/self/uid_map").read().split(),
    gid_map=open("/proc/self/gid_map").read().split(),
    setgroups=open("/proc/self/setgroups").read().strip())))'''
        got = self.probe(code)
        self.assertEqual(got["ids"], [1000, 1000, 1000, 1000])
        self.assertNotIn(0, got["groups"])
        self.assertEqual(set(got["caps"].values()), {"0000000000000000"}, got["caps"])
        self.assertEqual(got["nnp"], "1")
        self.assertEqual(got["seccomp"], "2")
        self.assertEqual(got["hostname"], "ptybox")
        self.assertEqual(got["uname"], "ptybox")
        self.assertEqual(got["uid_map"], ["1000", str(self.r.sandbox_uid), "1"])
        self.assertEqual(got["gid_map"][0::2], ["1000", "1"])
        self.assertEqual(got["setgroups"], "deny")

    def test_pid_namespace(self):
        code = r'''
import json, os
def err(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return type(e).__name__
def status(pid):
    with open("/proc/%d/status" % pid) as f:
        return dict(l.split(":\t", 1) for l in f.read().splitlines() if ":\t" in l)
init = status(1)
print(json.dumps(dict(pid=os.getpid(), ppid=os.getppid(),
    pids=sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    standby=[int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()
             and status(int(p)).get("PPid") == "3"],
    init_name=init["Name"], init_ppid=init["PPid"],
    init_mem=err(lambda: open("/proc/1/mem", "rb")),
    init_root=err(lambda: os.listdir("/proc/1/root/")))))'''
        got = self.probe(code)
        # a private pid namespace: pid 1 = init, 2 = relay, 3 = template, then the
        # kernel that runs the snippet, a child of the template
        self.assertGreater(got["pid"], 2)
        self.assertLessEqual(got["pid"], 10)
        self.assertEqual(got["ppid"], 3)
        # pid 1 is the sandbox's init (ptybox's fork), whose parent is outside the
        # namespace (PPid 0)
        self.assertEqual(got["init_name"], "ptybox-init")
        self.assertEqual(got["init_ppid"], "0")
        # only the sandbox's own processes: no host pid is visible (but for a
        # kernel that the template may have forked ahead: the standby)
        self.assertEqual(got["pids"], sorted([1, 2, 3, got["pid"]] + got["standby"]))
        self.assertLessEqual(len(got["standby"]), 1)
        # init runs unfiltered code's parent: it must not be reachable through /proc
        self.assertEqual(got["init_mem"], "PermissionError")
        self.assertEqual(got["init_root"], "PermissionError")

    def test_init_shows_nothing_of_the_host_argv_or_environment(self):
        # init is a fork of ptybox that never execs: /proc/1/cmdline (readable by
        # anyone) would show ptybox's argv, and through it the setproctitle-style
        # read-on its environment; comm would show a library user's program name.
        token, snippet, log = marker(), marker(), marker()
        code = r'''
import json, os
def read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("latin-1")
    except OSError as e:
        return type(e).__name__
areas = {}
for p in os.listdir("/proc"):
    if p.isdigit() or p == "self":
        for what in ("cmdline", "environ", "comm", "status", "stat"):
            areas["%s/%s" % (p, what)] = read("/proc/%s/%s" % (p, what))
for what in ("maps", "mem", "auxv"):
    areas["1/" + what] = read("/proc/1/" + what)
print(json.dumps(areas))'''
        results, p = self.r.run_json(
            "1", code, "%r" % snippet,
            extra=["--env", "API_TOKEN=" + token, "--log", "/tmp/" + log],
            env={"PTYBOX_TEST_SECRET": token})
        self.addCleanup(lambda: os.path.exists("/tmp/" + log) and os.unlink("/tmp/" + log))
        self.assertEqual(len(results), 3, p.stderr)
        self.assertOk(results[1])
        areas = json.loads(results[1]["stdout"])
        self.assertIn("2/cmdline", areas)
        # the code's own environment has the --env (that is what it is for), and
        # nothing else of ptybox's argv or the host's environment is anywhere
        for path, text in areas.items():
            for mark in (snippet, log, "--env", "--log", "PTYBOX_TEST_SECRET"):
                self.assertNotIn(mark, text, path)
            # (the session's environment: the relay's, the template's and the kernel's)
            if not path.endswith("/environ") or path == "1/environ":
                self.assertNotIn(token, text, path)
        self.assertIn("API_TOKEN=" + token, areas["self/environ"])
        self.assertEqual(areas["2/environ"], "PermissionError")   # the relay is closed
        self.assertEqual(areas["1/comm"], "ptybox-init\n")
        self.assertIn("Name:\tptybox-init\n", areas["1/status"])
        self.assertIn("(ptybox-init)", areas["1/stat"])
        # exactly: a trail of NULs would tell the length of ptybox's argv
        self.assertEqual(areas["1/cmdline"], "ptybox-init\0")
        for what in ("environ", "maps", "mem", "auxv"):
            self.assertEqual(areas["1/" + what], "PermissionError", what)

    def test_setuid_binary_gives_no_privilege(self):
        binary = next((b for b in ("/usr/bin/su", "/usr/bin/passwd", "/usr/bin/mount",
                                   "/usr/bin/newgrp") if os.path.exists(b)
                       and os.stat(b).st_mode & 0o4000 and os.stat(b).st_uid == 0), None)
        if not binary:
            self.skipTest("no setuid-root binary in /usr/bin on this host")
        # The loader prints the auxiliary vector unless the exec was privileged
        # (AT_SECURE): a setuid exec that worked would show nothing, or euid 0.
        code = (
            "import json, os, subprocess\n"
            "st = os.stat(%r)\n"
            "r = subprocess.run([%r, '--version'], env=dict(os.environ, LD_SHOW_AUXV='1'),\n"
            "                   capture_output=True, text=True, timeout=30)\n"
            "aux = dict(l.split(':', 1) for l in r.stdout.splitlines() if l.startswith('AT_'))\n"
            "print(json.dumps([bool(st.st_mode & 0o4000), {k: v.strip() for k, v in aux.items()\n"
            "                  if k in ('AT_UID', 'AT_EUID', 'AT_SECURE')}]))" % (binary, binary))
        setuid_bit, aux = self.probe(code)
        self.assertTrue(setuid_bit)  # the bit is there; it just does nothing
        self.assertEqual(aux, {"AT_UID": "1000", "AT_EUID": "1000", "AT_SECURE": "0"})


class AsRoot(IsolationChecks, SandboxTestCase):
    RUNNER = "root"


class AsUser(IsolationChecks, SandboxTestCase):
    RUNNER = "user"


if __name__ == "__main__":
    import unittest
    unittest.main()
