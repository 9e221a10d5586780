"""Sessions end completely: nothing started inside outlives its session, nothing
inside reaches the host's processes, and hundreds of sessions leave no process,
cgroup, mount or file descriptor behind."""
import os
import subprocess
import time

from sandbox_test import (SandboxTestCase, cgroup_dirs_of, cgroup_procs, fd_count,
                          host_pids_with, marker, mount_table, sandbox_pids_with, sleeper,
                          wait_until)

# A daemon: own session, double fork, no terminal, argv carrying a marker the host
# can look for; the snippet returns once the daemon is up.
DAEMON = r'''
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for fd in (0, 1, 2):
            os.close(fd)
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(1000)", %r])
    os._exit(0)
os.wait()
def up():
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and %r.encode() in open("/proc/%%s/cmdline" %% p, "rb").read():
                return True
        except OSError:
            pass
deadline = time.monotonic() + 30
while not up() and time.monotonic() < deadline:
    time.sleep(0.01)
up()'''


def read_file(path):
    with open(path) as f:
        return f.read()


class LifecycleChecks:
    def daemon(self, mark):
        return DAEMON % (mark, mark)

    def test_daemon_is_gone_after_the_session_ends(self):
        # ptybox run: when the last snippet is done, so is the daemon
        mark = marker()
        results, p = self.r.run_json(self.daemon(mark))
        self.assertEqual(results[0]["result"], {"text/plain": "True"}, p.stderr)
        self.assertEqual(wait_until(lambda: not host_pids_with(mark), 5), True,
                         "daemon %s outlived `ptybox run`" % mark)

        # ptybox serve: it is there while the session lives, gone on restart and on exit
        s = self.r.serve()
        try:
            first, second = marker(), marker()
            self.assertEqual(s.exec(self.daemon(first), id=1)["result"], {"text/plain": "True"})
            self.assertTrue(host_pids_with(first))
            self.assertTrue(s.restart("r")["ok"])
            self.assertEqual(s.exec("1", id=2)["result"], {"text/plain": "1"})
            self.assertEqual(wait_until(lambda: not host_pids_with(first), 5), True,
                             "daemon outlived its session's restart")
            self.assertEqual(s.exec(self.daemon(second), id=3)["result"],
                             {"text/plain": "True"})
        finally:
            rc, err = s.close()
        self.assertEqual(rc, 0, err)
        self.assertEqual(wait_until(lambda: not host_pids_with(second), 5), True,
                         "daemon outlived `ptybox serve`")

    def test_kill_all_from_inside_leaves_the_host_untouched(self):
        # A host process with the sandbox's own host uid: only the pid namespace
        # stands between it and kill(-1).
        mark = marker()
        victim = self.r.host_process(sleeper(mark))
        self.addCleanup(victim.wait, 30)
        self.addCleanup(victim.kill)
        self.assertTrue(wait_until(lambda: host_pids_with(mark), 10))
        results, p = self.r.run_json(
            "keep = 'kept'",
            # from the kernel: kill(-1) spares the caller and the namespace's init, but
            # the relay (pid 2) runs as the same uid: it dies too, and the whole
            # session restarts in a new sandbox with fresh state
            "import os, signal, subprocess\n"
            "child = subprocess.Popen(['sleep', '1000'])\n"
            "os.kill(-1, signal.SIGKILL)\n"
            "child.wait(timeout=30)",
            "keep",
            # from a child of the kernel: the same, once more
            "import os, signal, time\n"
            "if os.fork() == 0:\n"
            "    os.kill(-1, signal.SIGKILL)\n"
            "    os._exit(0)\n"
            "time.sleep(30)",
            "print('alive'); globals().get('keep')", timeout=120)
        self.assertEqual(len(results), 5, p.stderr)
        self.assertOk(results[0])
        for crash in (results[1], results[3]):
            self.assertEqual(crash["status"], "crashed", crash)
            self.assertTrue(crash["state_lost"], crash)
            self.assertTrue(crash["message"], crash)
        # the state went with the relay: `keep` is gone
        self.assertEqual(results[2]["status"], "error", results[2])
        self.assertEqual(results[2]["error"]["name"], "NameError", results[2])
        self.assertOk(results[4])
        self.assertEqual(results[4]["stdout"], "alive\n")
        self.assertIsNone(results[4]["result"])  # fresh state
        self.assertIsNone(victim.poll(), "a host process died")

    def test_many_sessions_leave_nothing_behind(self):
        mounts = mount_table()
        mark = marker()
        s = self.r.serve("--env", "SECTEST_MARK=" + mark)
        # a kernel's identity: its pid and its start time (a restart replaces only the
        # kernel, under the same relay and sandbox; pids are reused once freed)
        who = ("import os; (os.getpid(), "
               "open('/proc/self/stat').read().rsplit(')', 1)[1].split()[19])")
        kernels = set()
        try:
            kernels.add(s.exec(who, id=0)["result"]["text/plain"])
            fds, procs = fd_count(s.p.pid), len(host_pids_with(mark))
            cgroups = len(cgroup_dirs_of(s.p.pid))
            self.assertEqual(bool(cgroups), self.r.root)
            started = time.monotonic()
            for i in range(1, 201):
                self.assertTrue(s.restart("r%d" % i)["ok"])
                reply = s.exec(who, id=i)
                self.assertOk(reply)
                self.assertTrue(reply["state_lost"], reply)
                kernels.add(reply["result"]["text/plain"])
            elapsed = time.monotonic() - started
            # one live session now, as when they were counted: nothing piled up
            # (but for the kernel forked ahead, the standby: it may be there at
            # either count or not yet, and the last restart's kernel may still
            # be on its way out)
            self.assertEqual(fd_count(s.p.pid), fds)
            self.assertTrue(wait_until(lambda: len(host_pids_with(mark)) <= procs + 1, 5),
                            (len(host_pids_with(mark)), procs))
            self.assertEqual(len(cgroup_dirs_of(s.p.pid)), cgroups)
        finally:
            rc, err = s.close()
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(kernels), 201)  # every restart was a new kernel
        self.assertEqual(wait_until(lambda: not host_pids_with(mark), 5), True)
        self.assertEqual(cgroup_dirs_of(s.p.pid), [])
        self.assertEqual(mount_table() - mounts, set())
        self.assertLess(elapsed, 60)

    def test_every_process_and_thread_of_the_sandbox_is_in_its_cgroups(self):
        # The outer child joins through v1's `tasks` (one thread); what it forks must
        # follow: init, the driver, the driver's threads, the snippet's children.
        self.skip_unless_root("the session's cgroups")
        mark = marker()
        s = self.r.serve("--env", "SECTEST_MARK=" + mark)
        try:
            for i in range(2):  # the first sandbox, and one from a restart
                self.assertOk(s.exec(
                    "import subprocess, sys, threading, time\n"
                    "t = threading.Thread(target=time.sleep, args=(1000,), daemon=True)\n"
                    "t.start()\n"
                    # Popen returns before the kernel has set up the child's
                    # environment (/proc/PID/environ): wait until it runs.
                    "child = subprocess.Popen([sys.executable, '-c', 'import time; "
                    "print(1, flush=True); time.sleep(1000)'], stdout=subprocess.PIPE)\n"
                    "child.stdout.readline()\n"
                    "'up'", id=2 * i + 1))
                dirs = cgroup_dirs_of(s.p.pid)
                self.assertTrue(dirs)
                # "<mount>/ptybox/<pid>-<n>" is "/ptybox/<pid>-<n>" in /proc/*/cgroup
                want = set("/" + os.path.relpath(d, os.path.dirname(os.path.dirname(d)))
                           for d in dirs)
                self.assertEqual(len(want), 1, dirs)
                path = want.pop()
                pids = sandbox_pids_with(mark, s.p.pid)
                self.assertGreaterEqual(len(pids), 4, pids)  # outer child, init, driver, child
                threads = 0
                for pid in pids:
                    for tid in os.listdir("/proc/%d/task" % pid):
                        with open("/proc/%d/task/%s/cgroup" % (pid, tid)) as f:
                            lines = f.read().splitlines()
                        inside = [ln for ln in lines if ln.split(":", 2)[2] == path]
                        self.assertEqual(len(inside), len(dirs),
                                         "pid %d thread %s: %s" % (pid, tid, lines))
                        threads += 1
                self.assertGreater(threads, len(pids))  # the driver's threads were checked
                self.assertTrue(s.restart("r%d" % i)["ok"])
        finally:
            rc, err = s.close()
        self.assertEqual(rc, 0, err)

    def _kill_ptybox_with(self, child):
        """Starts serve, runs child (argv) detached inside and SIGKILLs ptybox once the
        child has said a line; returns (mark, the dead ptybox's cgroups)."""
        mark = marker()
        s = self.r.serve("--env", "SECTEST_MARK=" + mark)
        self.assertOk(s.exec("import subprocess\n"
                             "c = subprocess.Popen(%r, start_new_session=True,\n"
                             "                     stdout=subprocess.PIPE)\n"
                             "c.stdout.readline()\n"
                             "'up'" % (child,), id=1))
        cgroups = cgroup_dirs_of(s.p.pid)
        self.assertEqual(bool(cgroups), self.r.root)
        self.assertTrue(host_pids_with(mark))
        s.p.kill()  # SIGKILL: no clean-up code of ptybox runs
        s.p.wait(10)
        s.p.stdin.close(); s.p.stdout.close(); s.p.stderr.close()
        return mark, cgroups

    def test_a_killed_ptybox_takes_its_sandbox_along_and_its_cgroups_are_swept(self):
        mark, cgroups = self._kill_ptybox_with(["sh", "-c", "echo up; exec sleep 1000"])
        # die-with-parent takes the whole sandbox down, detached processes included:
        # out of sight first (a dying process shows no argv or environment), out of
        # its cgroups a little later (on its way out it may still wait for an RCU
        # grace period, releasing the sandbox's mount namespace, say)
        self.assertEqual(wait_until(lambda: not host_pids_with(mark), 5), True)
        self.assertEqual(wait_until(lambda: not any(cgroup_procs(d) for d in cgroups), 5),
                         True, cgroups)
        # the next ptybox removes the cgroups the dead one left
        self.assertOk(self.r.run_json("1")[0][0])
        self.assertEqual([d for d in cgroups if os.path.exists(d)], [])

    def test_the_sweep_awaits_a_killed_ptyboxs_sandbox_that_is_still_dying(self):
        # The next ptybox may start while the dead one's sandbox is still on its way
        # out: a process tearing down 600 MB takes some 80 ms (measured) after it
        # stopped showing in /proc, more than a ptybox takes to start, less than the
        # sweep's 500 ms. The sweep must wait for it (it used to rmdir once: EBUSY).
        self.skip_unless_root("the session's cgroups")
        mark, cgroups = self._kill_ptybox_with(
            ["python3", "-c", "b = b'x' * (600 << 20); print('up', flush=True); "
             "import time; time.sleep(1000)"])
        self.assertEqual(wait_until(lambda: not host_pids_with(mark), 5), True)
        self.assertOk(self.r.run_json("1")[0][0])
        self.assertEqual([d for d in cgroups if os.path.exists(d)], [])

    def test_the_sweep_kills_and_awaits_what_a_dead_ptybox_left_frozen(self):
        # A ptybox SIGKILLed in the middle of sandbox_cgroup_kill leaves its session
        # frozen in cgroups with a dead owner, and a frozen v1 task holds on to its
        # SIGKILL: the sweep must thaw, kill and wait for it before rmdir succeeds.
        self.skip_unless_root("the session's cgroups")
        s = self.r.serve()
        try:
            self.assertOk(s.exec("1", id=1))
            bases = sorted(set(os.path.dirname(d) for d in cgroup_dirs_of(s.p.pid)))
        finally:
            rc, err = s.close()
        self.assertEqual(rc, 0, err)
        self.assertTrue(bases)
        gone = subprocess.Popen(["true"])
        gone.wait(10)  # the dead owner: its pid is free
        dirs = [os.path.join(b, "%d-0" % gone.pid) for b in bases]
        victim = subprocess.Popen(sleeper(marker()), stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(self._remove_cgroups, dirs, victim)
        frozen = None
        for d in dirs:
            os.mkdir(d)
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(str(victim.pid))
            for state, value, events, done in (("freezer.state", "FROZEN", "freezer.state",
                                                "FROZEN"),
                                               ("cgroup.freeze", "1", "cgroup.events",
                                                "frozen 1")):
                if not frozen and os.path.exists(os.path.join(d, state)):
                    with open(os.path.join(d, state), "w") as f:
                        f.write(value)
                    frozen = (os.path.join(d, events), done)
        self.assertTrue(frozen, dirs)
        self.assertTrue(wait_until(lambda: frozen[1] in read_file(frozen[0]), 5), frozen)

        self.assertOk(self.r.run_json("1")[0][0])
        self.assertEqual(wait_until(lambda: victim.poll() is not None, 5), True,
                         "the frozen process outlived the sweep")
        self.assertEqual(victim.returncode, -9)
        self.assertEqual([d for d in dirs if os.path.exists(d)], [])

    @staticmethod
    def _remove_cgroups(dirs, victim):
        for d in dirs:
            for state, value in (("freezer.state", "THAWED"), ("cgroup.freeze", "0")):
                try:
                    with open(os.path.join(d, state), "w") as f:
                        f.write(value)
                except OSError:
                    pass
        victim.kill()
        victim.wait(10)
        for d in dirs:
            wait_until(lambda: not os.path.exists(d) or not cgroup_procs(d), 5)
            try:
                os.rmdir(d)
            except FileNotFoundError:
                pass


class AsRoot(LifecycleChecks, SandboxTestCase):
    RUNNER = "root"


class AsUser(LifecycleChecks, SandboxTestCase):
    RUNNER = "user"


if __name__ == "__main__":
    import unittest
    unittest.main()
