"""Helpers for the sandbox's security tests. They drive the real ptybox binary the
way a user does, as root and as an unprivileged user, and every wait has a deadline.

A test class mixes one of the *Checks classes of a test module with a runner:
AsRoot runs ptybox as the caller when that is root (the cgroups apply); AsUser
runs it as an unprivileged user: as root it creates PTYBOX_TEST_USER if missing
and switches to it with setpriv; as anyone else it is the caller itself.
"""
import atexit
import json
import os
import platform
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
import ptybox_test  # noqa: E402  (the shared serve client)
PTYBOX = os.path.abspath(os.environ.get("PTYBOX") or os.path.join(REPO, "build", "ptybox"))
TEST_USER = os.environ.get("PTYBOX_TEST_USER", "ptybox-sectest")
NOBODY = 65534  # the sandbox's uid on the host when ptybox runs as root
IS_ROOT = os.geteuid() == 0


def marker():
    """A string unique to one test, to find its processes in the host's process list."""
    return "ptybox-sectest-" + uuid.uuid4().hex


def sleeper(mark):
    """argv of a host process that sleeps, marked."""
    return [sys.executable, "-c", "import time; time.sleep(1000)", mark]


def host_pids_with(text):
    """Pids of host processes whose argv or environment contains text. A session run
    with `--env MARK=text` is found but for its init: the outer child (ptybox's own
    fork) carries text in argv, the driver and its descendants in environ; init has
    overwritten both (see sandbox_child.c); sandbox_pids_with adds it."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        for what in ("cmdline", "environ"):
            try:
                with open("/proc/%s/%s" % (pid, what), "rb") as f:
                    if text.encode() in f.read():
                        found.append(int(pid))
                        break
            except OSError:
                pass
    return found


def ppid_of(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def sandbox_pids_with(text, client):
    """The host pids of the sandbox of a session that the ptybox process client runs
    with `--env MARK=text`: host_pids_with's but client, and their parents but
    client, which adds the sandbox's init (the driver's parent)."""
    pids = set(host_pids_with(text)) - {client}
    for pid in list(pids):
        try:
            pids.add(ppid_of(pid))
        except OSError:
            pass  # gone meanwhile
    return sorted(pids - {client})


def wait_until(predicate, timeout, interval=0.02):
    """Polls predicate until it is true or timeout seconds passed; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def cgroup_dirs_of(pid):
    """The session cgroups ptybox process pid created: <mount>/ptybox/<pid>-<n>."""
    found = []
    with open("/proc/self/mountinfo") as f:
        mounts = f.read().splitlines()
    for line in mounts:
        fields = line.split(" - ")
        if len(fields) != 2 or not fields[1].startswith(("cgroup ", "cgroup2 ")):
            continue
        base = os.path.join(fields[0].split()[4], "ptybox")
        try:
            found += [os.path.join(base, d) for d in os.listdir(base)
                      if d.startswith("%d-" % pid)]
        except OSError:
            pass
    return found


def cgroup_procs(d):
    """The pids in cgroup folder d; [] once it is gone."""
    try:
        with open(os.path.join(d, "cgroup.procs")) as f:
            return [int(p) for p in f.read().split()]
    except FileNotFoundError:
        return []


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def mount_table():
    """The host's mount table as a set of (mount point, fs type, source)."""
    rows = set()
    with open("/proc/self/mountinfo") as f:
        lines = f.read().splitlines()
    for line in lines:
        left, _, right = line.partition(" - ")
        rows.add((left.split()[4], right.split()[0], right.split()[1]))
    return rows


# x86_64 and arm64 system call numbers for the raw probes.
SYSCALLS = {
    "x86_64": dict(ptrace=101, mount=165, unshare=272, setns=308, bpf=321, keyctl=250,
                   clone=56, clone3=435, io_uring_setup=425, ioctl=16, socket=41,
                   personality=135),
    "aarch64": dict(ptrace=117, mount=40, unshare=97, setns=268, bpf=280, keyctl=219,
                    clone=220, clone3=435, io_uring_setup=425, ioctl=29, socket=198,
                    personality=92),
}.get(platform.machine())


class Runner:
    """How ptybox is started: argv prefix (nothing, or a setpriv to another user)."""

    def __init__(self, name, prefix, binary, uid, gid):
        self.name = name
        self.prefix = prefix
        self.binary = binary
        self.uid = uid  # the host uid ptybox runs as
        self.gid = gid
        self.root = uid == 0
        # The host uid the sandbox's uid 1000 maps to.
        self.sandbox_uid = NOBODY if self.root else uid
        self.sandbox_gid = NOBODY if self.root else gid

    def argv(self, *args):
        return self.prefix + [self.binary] + list(args)

    def run(self, *args, env=None, timeout=60, input=None, wrap=()):
        """Runs `[WRAP...] ptybox ARGS` in the repository folder; returns the
        CompletedProcess."""
        full_env = dict(os.environ)
        full_env.update(env or {})
        p = subprocess.run(list(wrap) + self.argv(*args), input=input, capture_output=True,
                           timeout=timeout, env=full_env, cwd=REPO, text=True,
                           errors="replace")
        # an ASan/UBSan build reports on stderr; any report fails the test
        if "Sanitizer" in p.stderr or "runtime error:" in p.stderr:
            raise AssertionError("ptybox: sanitizer report:\n" + p.stderr)
        return p

    def run_json(self, *codes, extra=(), env=None, timeout=60, wrap=()):
        """Runs snippets with --json; returns (results, completed process)."""
        args = ["run", "--json", *extra]
        for code in codes:
            args += ["-c", code]
        p = self.run(*args, env=env, timeout=timeout, wrap=wrap)
        results = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
        return results, p

    def serve(self, *extra):
        return Serve(self.argv("serve", "--stdio", *extra))

    def host_process(self, argv):
        """Starts a host process with the sandbox's host uid (its natural victim)."""
        prefix = ["setpriv", "--reuid=%d" % self.sandbox_uid, "--regid=%d" % self.sandbox_gid,
                  "--clear-groups", "--"] if IS_ROOT else []
        return subprocess.Popen(prefix + argv, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Serve(ptybox_test.Serve):
    """serve --stdio as a runner starts it; close() also returns what it said."""

    def __init__(self, argv):
        super().__init__(argv=argv, cwd=REPO)

    def exec(self, code, id, timeout=30):
        self.send(dict(id=id, op="exec", code=code))
        return self.recv_result(id, timeout=timeout + 30)

    def close(self, timeout=30):
        """Closes stdin and waits for the exit; returns (exit status, stderr)."""
        rc = super().close(timeout)
        return rc, self.stderr


_runners = {}


def _ensure_user():
    """The unprivileged user's (uid, gid); created when missing. Needs root."""
    try:
        pw = pwd.getpwnam(TEST_USER)
    except KeyError:
        r = subprocess.run(["useradd", "--system", "--no-create-home", "--user-group",
                            "--shell", "/usr/sbin/nologin", TEST_USER],
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 0 and "already exists" not in r.stderr:
            raise unittest.SkipTest("useradd %s failed: %s" % (TEST_USER, r.stderr.strip()))
        pw = pwd.getpwnam(TEST_USER)
    return pw.pw_uid, pw.pw_gid


def _binary_for(prefix):
    """PTYBOX if the user can run it where it is; else a 0755 copy in a 0755 folder."""
    if subprocess.run(prefix + ["test", "-x", PTYBOX], timeout=30).returncode == 0:
        return PTYBOX
    d = tempfile.mkdtemp(prefix="ptybox-sectest-")
    atexit.register(shutil.rmtree, d, True)
    os.chmod(d, 0o755)
    copy = os.path.join(d, "ptybox")
    shutil.copy2(PTYBOX, copy)
    os.chmod(copy, 0o755)
    return copy


def runner(kind):
    """The Runner for "root" or "user"; raises SkipTest when it cannot exist here."""
    if kind in _runners:
        return _runners[kind]
    if not os.access(PTYBOX, os.X_OK):
        raise unittest.SkipTest("no ptybox binary at %s (set PTYBOX)" % PTYBOX)
    if kind == "root":
        if not IS_ROOT:
            raise unittest.SkipTest("runs ptybox as root: run the suite as root")
        r = Runner("root", [], PTYBOX, 0, 0)
    elif IS_ROOT:
        if not shutil.which("setpriv"):
            raise unittest.SkipTest("setpriv (util-linux) is needed to switch users")
        uid, gid = _ensure_user()
        prefix = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % gid, "--clear-groups",
                  "--inh-caps=-all", "--"]
        r = Runner("user", prefix, _binary_for(prefix), uid, gid)
    else:
        r = Runner("user", [], PTYBOX, os.geteuid(), os.getegid())
    _runners[kind] = r
    return r


class SandboxTestCase(unittest.TestCase):
    """Base for the concrete classes: set RUNNER to "root" or "user"."""
    maxDiff = None
    RUNNER = None

    @classmethod
    def setUpClass(cls):
        cls.r = runner(cls.RUNNER)

    def skip_unless_root(self, why):
        if not self.r.root:
            self.skipTest("needs ptybox as root: " + why)

    def assertOk(self, result):
        self.assertEqual(result["status"], "ok", result)

    def probe(self, code, extra=(), env=None, timeout=60, wrap=()):
        """Runs one snippet that prints a JSON value last; returns that value."""
        results, p = self.r.run_json(code, extra=extra, env=env, timeout=timeout, wrap=wrap)
        self.assertEqual(len(results), 1, "stdout: %r\nstderr: %r" % (p.stdout, p.stderr))
        self.assertOk(results[0])
        return json.loads(results[0]["stdout"].strip().splitlines()[-1])


# Python run inside the sandbox by several tests: raw system calls through ctypes.
SNIPPET_SYSCALL = r'''
import ctypes, errno, json, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.syscall.argtypes = [ctypes.c_long] + [ctypes.c_ulong] * 5

def name(e):
    return "ok" if e == 0 else errno.errorcode.get(e, str(e))

def sc(nr, *args):
    """the raw system call's errno name, or "ok" """
    args = list(args) + [0] * (5 - len(args))
    ctypes.set_errno(0)
    r = libc.syscall(nr, *args)
    return name(ctypes.get_errno()) if r == -1 else "ok"

def in_child(nr, *args):
    """the same, in a forked child, so that a call that succeeds changes nothing here"""
    pid = os.fork()
    if pid == 0:
        args = list(args) + [0] * (5 - len(args))
        ctypes.set_errno(0)
        r = libc.syscall(nr, *args)
        # clone's child (r == 0) and the caller both leave right away
        os._exit(ctypes.get_errno() if r == -1 else 0)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return "signal %d" % os.WTERMSIG(status)
    return name(os.WEXITSTATUS(status))
'''
