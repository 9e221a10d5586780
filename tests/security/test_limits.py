"""Resource limits, as hostile code meets them: every bomb ends in the error a
program can handle (MemoryError, EAGAIN, ENOSPC, EFBIG, EMFILE) or in a reported
crash, and the session goes on."""
from ast import literal_eval

from sandbox_test import SandboxTestCase, host_pids_with, marker, wait_until

class LimitsChecks:
    def value(self, result):
        """The snippet's value (a literal) once it ended ok."""
        self.assertOk(result)
        return literal_eval(result["result"]["text/plain"])

    def assertSessionGoesOn(self, result, state="'kept'"):
        """result is the reply to `keep` after the bomb: ok, state intact."""
        self.assertOk(result)
        self.assertFalse(result["state_lost"], result)
        self.assertEqual(result["result"], {"text/plain": state}, result)

    def test_memory_bomb_raises_memory_error_and_keeps_state(self):
        results, p = self.r.run_json(
            "keep = 'kept'",
            "x = []\nwhile True:\n    x.append(b'\\1' * (16 << 20))",
            "del x\nkeep", extra=["--memory", "256M"], timeout=120)
        self.assertEqual(len(results), 3, p.stderr)
        self.assertEqual(results[1]["status"], "error", results[1])
        self.assertEqual(results[1]["error"]["name"], "MemoryError")
        self.assertFalse(results[1]["state_lost"])
        self.assertSessionGoesOn(results[2])

    def test_subprocess_memory_bomb_is_contained(self):
        # Three children that each grow without end: together they exceed the memory
        # cgroup (as root), each alone exceeds RLIMIT_AS. Either way they die, not us.
        bomb = (
            "import subprocess, sys\n"
            "code = 'x = []\\nwhile True: x.append(b\"\\\\1\" * (16 << 20))'\n"
            "ps = [subprocess.Popen([sys.executable, '-c', code], stderr=subprocess.DEVNULL)\n"
            "      for _ in range(3)]\n"
            "sorted(set(p.wait(timeout=60) for p in ps))")
        results, p = self.r.run_json("keep = 'kept'", bomb, "keep",
                                     extra=["--memory", "256M"], timeout=120)
        self.assertEqual(len(results), 3, p.stderr)
        self.assertOk(results[1])
        # 1: MemoryError (RLIMIT_AS); -9: killed by the memory cgroup's OOM killer
        codes = self.value(results[1])
        self.assertTrue(set(codes) <= {1, -9}, codes)
        self.assertSessionGoesOn(results[2])

    def test_fork_bomb_is_contained(self):
        # The bomb leaves its snippet behind (own session, no terminal) and keeps
        # forking; the snippet proves that fork fails with EAGAIN meanwhile.
        bomb = r'''
import errno, os, time
if os.fork() == 0:
    os.setsid()
    for fd in (0, 1, 2):
        os.close(fd)
    while True:
        try:
            os.fork()
        except OSError:
            time.sleep(0.01)
deadline, seen = time.monotonic() + 30, None
while seen is None and time.monotonic() < deadline:
    try:
        pid = os.fork()
        if pid == 0:
            time.sleep(30)
            os._exit(0)
    except OSError as e:
        seen = errno.errorcode[e.errno]
seen'''
        mark = marker()
        results, p = self.r.run_json("keep = 'kept'", bomb, "keep", timeout=120,
                                     extra=["--pids", "64", "--env", "SECTEST_MARK=" + mark])
        self.assertEqual(len(results), 3, p.stderr)
        self.assertEqual(results[1]["result"], {"text/plain": "'EAGAIN'"}, results[1])
        self.assertSessionGoesOn(results[2])
        # and when the session is over, nothing of the bomb is left on the host
        self.assertEqual(wait_until(lambda: not host_pids_with(mark), 10), True)

    def test_thread_bomb_is_contained(self):
        bomb = r'''
import threading
stop, threads, why = threading.Event(), [], None
try:
    while len(threads) < 100000:
        t = threading.Thread(target=stop.wait, daemon=True)
        t.start()
        threads.append(t)
except RuntimeError as e:
    why = str(e)
stop.set()
for t in threads:
    t.join()
(why, len(threads))'''
        results, p = self.r.run_json("keep = 'kept'", bomb, "keep",
                                     extra=["--pids", "64"], timeout=120)
        self.assertEqual(len(results), 3, p.stderr)
        self.assertOk(results[1])
        why, n = self.value(results[1])
        self.assertEqual(why, "can't start new thread")
        self.assertLess(n, 64)
        self.assertSessionGoesOn(results[2])

    # Writes 1 MiB chunks until an error, or until 64 MiB: past every limit the tests
    # set, so that a broken limit fails the test quickly and harmlessly.
    FILL = r'''
import errno, os
def fill(path, chunk=1 << 20, cap=64 << 20):
    n = 0
    try:
        with open(path, "wb") as f:
            while n < cap:
                f.write(b"\0" * chunk)
                f.flush()
                n += chunk
    except OSError as e:
        return errno.errorcode[e.errno], n, os.path.getsize(path)
    return "no error", n, os.path.getsize(path)
'''

    def test_tmp_fill_ends_in_enospc(self):
        many = r'''
n, why = 0, "no error"
try:
    while n < 20000:  # 16M of /tmp has 2048 inodes
        open("/tmp/i%d" % n, "w").close()
        n += 1
except OSError as e:
    why = errno.errorcode[e.errno]
for i in range(n):
    os.unlink("/tmp/i%d" % i)
(why, n)'''
        results, p = self.r.run_json(
            "keep = 'kept'", self.FILL + "fill('/tmp/fill')",
            "os.unlink('/tmp/fill')\n" + many, "keep",
            extra=["--tmp-size", "16M", "--max-file-size", "0"], timeout=120)
        self.assertEqual(len(results), 4, p.stderr)
        why, _, size = self.value(results[1])
        self.assertEqual(why, "ENOSPC")
        self.assertLessEqual(size, 16 << 20)
        why, n = self.value(results[2])
        self.assertEqual(why, "ENOSPC")  # inodes run out too, long before memory would
        self.assertLess(n, 4096)
        self.assertSessionGoesOn(results[3])

    def test_huge_file_ends_in_efbig(self):
        results, p = self.r.run_json(
            "keep = 'kept'", self.FILL + "fill('/tmp/huge')", "keep",
            extra=["--max-file-size", "4M"], timeout=120)
        self.assertEqual(len(results), 3, p.stderr)
        self.assertOk(results[1])  # SIGXFSZ did not kill it
        self.assertEqual(self.value(results[1]), ("EFBIG", 4 << 20, 4 << 20))
        self.assertSessionGoesOn(results[2])

    def test_fd_exhaustion_ends_in_emfile_and_the_driver_works_on(self):
        results, p = self.r.run_json(
            "keep = 'kept'",
            "import errno\nfiles = []\n"
            "try:\n"
            "    while len(files) < 100000:\n"
            "        files.append(open('/dev/null'))\n"
            "except OSError as e:\n"
            "    why = errno.errorcode[e.errno]\n"
            "(why, len(files))",
            # every fd is still taken: the driver must still run code and report
            "print('still here with', len(files))\nkeep",
            "for f in files:\n    f.close()\nkeep",
            extra=["--nofile", "64"], timeout=120)
        self.assertEqual(len(results), 4, p.stderr)
        why, n = self.value(results[1])
        self.assertEqual(why, "EMFILE")
        self.assertLess(n, 64)
        self.assertSessionGoesOn(results[2])
        self.assertEqual(results[2]["stdout"], "still here with %d\n" % n)
        self.assertSessionGoesOn(results[3])

    def test_memory_cgroup_oom_is_reported(self):
        self.skip_unless_root("the memory cgroup")
        # /tmp's pages count against the cgroup but not against RLIMIT_AS: fill it,
        # then allocate what fits under RLIMIT_AS but not in the cgroup.
        results, p = self.r.run_json(
            "keep = 'kept'",
            self.FILL + "print(fill('/tmp/fill', cap=1 << 30)[0], flush=True)\n"
            "y = b'\\1' * (150 << 20)\nprint('not killed')",
            "globals().get('keep')", extra=["--memory", "256M"], timeout=120)
        self.assertEqual(len(results), 3, p.stderr)
        self.assertEqual(results[1]["status"], "crashed", results[1])
        self.assertTrue(results[1]["state_lost"])
        self.assertIn("out of memory", results[1]["message"])
        self.assertOk(results[2])
        self.assertIsNone(results[2]["result"])  # fresh state

    def test_cgroup_warning(self):
        s = self.r.serve()
        try:
            for i in range(3):
                self.assertOk(s.exec("1", id=i))
                self.assertTrue(s.restart("r%d" % i)["ok"])
        finally:
            rc, err = s.close()
        self.assertEqual(rc, 0, err)
        warning = "ptybox: not root: running without cgroup limits"
        # once per process, not once per session
        self.assertEqual(err.count(warning), 0 if self.r.root else 1, err)

    def test_via_none_warns(self):
        p = self.r.run("run", "--via", "none", "-c", "print('hello')")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("warning: --via none: the code runs WITHOUT a sandbox", p.stderr)


class AsRoot(LimitsChecks, SandboxTestCase):
    RUNNER = "root"


class AsUser(LimitsChecks, SandboxTestCase):
    RUNNER = "user"


if __name__ == "__main__":
    import unittest
    unittest.main()
