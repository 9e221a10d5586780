"""The seccomp filter, as the code meets it: each denied system call fails with
its own errno (the ones the filter's table promises), ordinary calls work, and
a foreign ABI is fatal."""
import platform

from sandbox_test import SNIPPET_SYSCALL, SYSCALLS, SandboxTestCase

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET, SIGCHLD = 0x20000, 0x10000000, 0x40000000, 17


class SeccompChecks:
    def setUp(self):
        if SYSCALLS is None:
            self.skipTest("system call numbers known for x86_64 and aarch64 only, not %s"
                          % platform.machine())

    def syscalls(self, calls):
        """Runs {label: python expression} after SNIPPET_SYSCALL; returns {label: result}."""
        code = SNIPPET_SYSCALL + "NR = %r\nprint(json.dumps({%s}))" % (SYSCALLS, ", ".join(
            "%r: %s" % (k, v) for k, v in calls.items()))
        return self.probe(code)

    def test_denied_system_calls_fail_with_their_errno(self):
        got = self.syscalls({
            # in a child: were it allowed, PTRACE_TRACEME would make init our tracer
            "ptrace": "in_child(NR['ptrace'], 0)",
            # a missing target: without the filter the kernel would say ENOENT
            "mount": "sc(NR['mount'], 0, ctypes.addressof(ctypes.create_string_buffer("
                     "b'/nonexistent')), ctypes.addressof(ctypes.create_string_buffer("
                     "b'tmpfs')))",
            "unshare user": "in_child(NR['unshare'], %d)" % CLONE_NEWUSER,
            "unshare mount": "in_child(NR['unshare'], %d)" % CLONE_NEWNS,
            "setns": "sc(NR['setns'], 0, 0)",
            "clone newuser": "in_child(NR['clone'], %d)" % (CLONE_NEWUSER | SIGCHLD),
            "clone newnet": "in_child(NR['clone'], %d)" % (CLONE_NEWNET | SIGCHLD),
            # only the low 32 bits are flags: high garbage must not slip past the filter
            "clone newnet high bits": "in_child(NR['clone'], %d)"
                                      % ((1 << 40) | CLONE_NEWNET | SIGCHLD),
            "clone3": "sc(NR['clone3'], 0, 0)",
            "bpf": "sc(NR['bpf'], 5, 0, 0)",
            "keyctl": "sc(NR['keyctl'], 0, 0xfffffffd)",
            "io_uring_setup": "sc(NR['io_uring_setup'], 1, 0)",
            "personality ADDR_NO_RANDOMIZE": "sc(NR['personality'], 0x0040000)",
        })
        self.assertEqual(got, {
            "ptrace": "EPERM", "mount": "EPERM", "unshare user": "EPERM",
            "unshare mount": "EPERM", "setns": "EPERM", "clone newuser": "EPERM",
            "clone newnet": "EPERM", "clone newnet high bits": "EPERM", "clone3": "ENOSYS",
            "bpf": "EPERM", "keyctl": "ENOSYS", "io_uring_setup": "ENOSYS",
            "personality ADDR_NO_RANDOMIZE": "EPERM"})

    def test_terminal_injection_is_denied(self):
        # The kernel runs in its own session, with no controlling terminal and no
        # terminal fd: fd 0 is /dev/null, fds 1 and 2 are capture pipes.
        code = (
            "import errno, json, os\n"
            "try:\n"
            "    os.close(os.open('/dev/tty', os.O_RDWR)); tty = 'ok'\n"
            "except OSError as e:\n"
            "    tty = errno.errorcode[e.errno]\n"
            "fds = [int(fd) for fd in os.listdir('/proc/self/fd')]\n"
            "print(json.dumps(dict(tty=tty, ttys=[fd for fd in fds if os.isatty(fd)],\n"
            "                      stdin=os.readlink('/proc/self/fd/0'))))")
        self.assertEqual(self.probe(code), {"tty": "ENXIO", "ttys": [], "stdin": "/dev/null"})
        got = self.syscalls({
            "TIOCSTI": "sc(NR['ioctl'], 0, 0x5412, ctypes.addressof("
                       "ctypes.create_string_buffer(b'x')))",
            # the kernel reads the request as 32 bits; so must the filter
            "TIOCSTI high bits": "sc(NR['ioctl'], 0, (1 << 32) | 0x5412, "
                                 "ctypes.addressof(ctypes.create_string_buffer(b'x')))",
            # other ioctls reach the kernel, which finds no terminal
            "TIOCGWINSZ": "sc(NR['ioctl'], 0, 0x5413, ctypes.addressof("
                          "ctypes.create_string_buffer(8)))",
        })
        self.assertIn(got.pop("TIOCSTI"), ("ENOTTY", "EPERM"))
        self.assertIn(got.pop("TIOCSTI high bits"), ("ENOTTY", "EPERM"))
        self.assertEqual(got, {"TIOCGWINSZ": "ENOTTY"})

    def test_vsock_is_denied(self):
        got = self.syscalls({
            "AF_VSOCK": "sc(NR['socket'], 40, 1, 0)",
            "AF_VSOCK high bits": "sc(NR['socket'], (1 << 32) | 40, 1, 0)",
            "AF_INET": "sc(NR['socket'], 2, 1, 0)",
        })
        self.assertEqual(got, {"AF_VSOCK": "EAFNOSUPPORT", "AF_VSOCK high bits": "EAFNOSUPPORT",
                               "AF_INET": "ok"})
        code = (
            "import errno, json, socket\n"
            "try:\n"
            "    socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM); r = 'ok'\n"
            "except OSError as e:\n"
            "    r = errno.errorcode[e.errno]\n"
            "print(json.dumps(r))")
        self.assertEqual(self.probe(code), "EAFNOSUPPORT")

    def test_ordinary_calls_work(self):
        code = r'''
import json, os, socket, subprocess, threading
pid = os.fork()
if pid == 0:
    os._exit(7)
t = threading.Thread(target=lambda: None); t.start(); t.join()
a, b = socket.socketpair(); a.send(b"x")
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
c = socket.create_connection(s.getsockname(), timeout=5); conn, _ = s.accept()
print(json.dumps([os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), b.recv(1).decode(),
                  subprocess.run(["/bin/sh", "-c", "id -u"], capture_output=True,
                                 text=True, timeout=30).stdout.strip()]))'''
        self.assertEqual(self.probe(code), [7, "x", "1000"])
        got = self.syscalls({"personality query": "sc(NR['personality'], 0xffffffff)",
                             "personality 0": "sc(NR['personality'], 0)"})
        self.assertEqual(got, {"personality query": "ok", "personality 0": "ok"})

    def test_foreign_abi_kills_the_process(self):
        if platform.machine() != "x86_64":
            self.skipTest("i386 and x32 are x86_64's foreign ABIs")
        # getpid through the i386 entry point, from 64-bit code: filters that only
        # know x86_64 numbers are bypassed this way, so the filter must kill.
        code = r'''
import ctypes, json, mmap, os
pid = os.fork()
if pid == 0:
    m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    m.write(b"\xb8\x14\x00\x00\x00\xcd\x80\xc3")  # mov eax, 20; int 0x80; ret
    ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))()
    os._exit(0)
_, st = os.waitpid(pid, 0)
print(json.dumps(os.WTERMSIG(st) if os.WIFSIGNALED(st) else "exit %d" % os.WEXITSTATUS(st)))'''
        self.assertEqual(self.probe(code), 31)  # SIGSYS
        # x32: the same architecture, numbers with bit 30 set (here getpid)
        code = r'''
import ctypes, json, os
pid = os.fork()
if pid == 0:
    ctypes.CDLL(None).syscall(0x40000000 | 39)
    os._exit(0)
_, st = os.waitpid(pid, 0)
print(json.dumps(os.WTERMSIG(st) if os.WIFSIGNALED(st) else "exit %d" % os.WEXITSTATUS(st)))'''
        self.assertEqual(self.probe(code), 31)


class AsRoot(SeccompChecks, SandboxTestCase):
    RUNNER = "root"


class AsUser(SeccompChecks, SandboxTestCase):
    RUNNER = "user"


if __name__ == "__main__":
    import unittest
    unittest.main()
