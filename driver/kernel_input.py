"""A snippet's own input: the env, cwd and stdin members of its exec request.

Not a module: a part of the Kernel class (a mixin), joined into kernel.py
where it says "# @include kernel_input.py"; it uses kernel.py's globals.

env is put into os.environ (so putenv: subprocesses see it) and cwd is
chdir()ed to, both inside the snippet's own user call, so that a missing
folder is the snippet's FileNotFoundError; what they replaced is put back
after it, however it ended (the keys env names as they were, the folder by
an fd of it, so a renamed one still works).  stdin is an unlinked memory
file (memfd; a pipe fed by a thread where there is none) on fd 0, read from
its start; sys.stdin reads the same file through an fd of its own, so a
thread of this snippet that holds it still reads its own bytes later, and
never the next snippet's.  fd 0 is /dev/null again after the snippet.
"""
# ---- kernel_input.py: joined into kernel.py at build time (driver_join.py, "# @include")

_PYTHON_INPUT = builtins.input    # python3's own: EOFError "EOF when reading a line"
_start_thread = _thread.start_new_thread


def _stdin_over(fd, closefd):
    """sys.stdin: text over fd, as python3's own in a UTF-8 locale."""
    return io.TextIOWrapper(io.BufferedReader(io.FileIO(fd, "r", closefd=closefd)),
                            encoding="utf-8", errors="surrogateescape")


def _stdin_file(data):
    """An fd at offset 0 whose reads give data, then end of file."""
    try:
        fd = os.memfd_create("ptybox-stdin", os.MFD_CLOEXEC)
    except (AttributeError, OSError):        # (Python 3.7, or no memfd here)
        fd = None
    if fd is not None:
        try:
            view, done = memoryview(data), 0
            while done < len(data):
                done += os.write(fd, view[done:])
            os.lseek(fd, 0, os.SEEK_SET)
        except BaseException:
            os.close(fd)
            raise
        return fd
    r, w = os.pipe2(os.O_CLOEXEC)

    def feed():                              # ends when read whole, or no reader is left
        try:
            view, done = memoryview(data), 0
            while done < len(data):
                done += os.write(w, view[done:])
        except OSError:
            pass
        finally:
            os.close(w)
    _start_thread(feed, ())
    return r


class _Input:
    """A snippet's env, cwd and stdin (ptybox-protocol(7), exec)."""

    exec_input = None                        # (env, cwd, stdin bytes) of this snippet
    env_saved = ()                           # [(key, value before or None)] to put back
    cwd_fd = None                            # the folder to go back to
    null_stdin = None                        # sys.stdin of a snippet without stdin

    def _take_input(self, req):
        """Called with each exec request: what it asks, for _run_with_input."""
        if self.exec_input is not None:      # (left over: an exception cut execute short)
            self._leave_input()
        env, cwd, data = req.get("env"), req.get("cwd"), req.get("stdin_b64")
        if env is not None or cwd is not None or data is not None:
            self.exec_input = (env, cwd, data)

    def _run_with_input(self, sid, code):
        """_run_code with env, cwd and stdin in place (user code: interruptible)."""
        env, cwd, data = self.exec_input
        self.env_saved = saved = []
        if env:
            environ = os.environ
            for k, v in env.items():
                saved.append((k, environ.get(k)))
                environ[k] = v
        if cwd is not None:
            self.cwd_fd = _private(os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
            os.chdir(cwd)
        if data is not None:
            fd = _stdin_file(binascii.a2b_base64(data))
            try:
                _dup2(fd, 0)                 # (inheritable: subprocesses read it too)
            except BaseException:
                os.close(fd)
                raise
            self.stdin = _stdin_over(_private(fd), True)
            _SYS["stdin"] = _SYS["__stdin__"] = self.stdin
        return self._run_code(sid, code)

    def _leave_input(self):
        """What the snippet's env and cwd replaced, back; its stdin gone from
        fd 0 and sys.stdin (at the _check that follows)."""
        self.exec_input = None
        saved, self.env_saved = self.env_saved, ()
        environ = os.environ
        for k, old in reversed(saved):
            try:
                if old is None:
                    environ.pop(k, None)
                else:
                    environ[k] = old
            except Exception:                # (user code replaced os.environ's parts)
                pass
        fd, self.cwd_fd = self.cwd_fd, None
        if fd is not None:
            try:
                os.fchdir(fd)
            except OSError:
                pass
            os.close(fd)
        if self.stdin is not self.null_stdin:
            self.stdin = self._no_stdin()
        try:
            _dup2(self.std_sources[0], 0)
        except OSError:
            pass

    def _no_stdin(self):
        """sys.stdin without stdin: at end of file at once, over a /dev/null of
        its own (not fd 0, which a later snippet's stdin may be by then, nor
        the kernel's std_sources, which user code closing it would break)."""
        s = self.null_stdin
        if s is None or s.closed:
            fd = _private(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
            s = self.null_stdin = _stdin_over(fd, True)
        return s
