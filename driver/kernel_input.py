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


_STREAM = object()                           # exec_input's stdin: the run's stream
_B64_PIECE = 1 << 20                         # base64 characters decoded at a time


def _pieces(b64):
    """The bytes of base64 text b64, a piece at a time (no whole copy)."""
    for i in range(0, len(b64), _B64_PIECE):
        yield binascii.a2b_base64(b64[i:i + _B64_PIECE])


def _fsize_limit():
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    except (ImportError, OSError, ValueError):
        return -1
    return -1 if soft == resource.RLIM_INFINITY else soft


def _stdin_file(b64):
    """An fd at offset 0 whose reads give the bytes of base64 text b64, then
    end of file: a memory file, or a pipe fed by a thread where there is no
    memfd or the data is larger than RLIMIT_FSIZE lets a file be (a memfd
    counts against it: --max-file-size)."""
    limit = _fsize_limit()
    fd = None
    if limit < 0 or len(b64) // 4 * 3 <= limit:
        try:
            fd = os.memfd_create("ptybox-stdin", os.MFD_CLOEXEC)
        except (AttributeError, OSError):    # (Python 3.7, or no memfd here)
            fd = None
    if fd is not None:
        try:
            for piece in _pieces(b64):
                view, done = memoryview(piece), 0
                while done < len(piece):
                    done += os.write(fd, view[done:])
            os.lseek(fd, 0, os.SEEK_SET)
        except BaseException:
            os.close(fd)
            raise
        return fd
    r, w = os.pipe2(os.O_CLOEXEC)

    def feed():                              # ends when read whole, or no reader is left
        try:
            for piece in _pieces(b64):
                view, done = memoryview(piece), 0
                while done < len(piece):
                    done += os.write(w, view[done:])
        except OSError:
            pass
        finally:
            os.close(w)
    _start_thread(feed, ())
    return r


class _Input:
    """A snippet's env, cwd and stdin (ptybox-protocol(7), exec)."""

    exec_input = None                        # (env, cwd, stdin: base64, STREAM or None)
    stream_fd = None                         # the run's stdin stream: a pipe's read end
    stream_stdin = None                      # ... and the sys.stdin over it, for every snippet
    env_saved = ()                           # [(key, value before or None)] to put back
    cwd_fd = None                            # the folder to go back to
    null_stdin = None                        # sys.stdin of a snippet without stdin

    def _take_input(self, req):
        """Called with each exec request: what it asks, for _run_with_input."""
        if self.exec_input is not None:      # (left over: an exception cut execute short)
            self._leave_input()
        env, cwd = req.get("env"), req.get("cwd")
        data = req.pop("stdin_b64", None)    # (ours alone: freed once in the file)
        if data is None and req.get("stdin_stream") is True:
            data = _STREAM
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
        if data is _STREAM:
            self._stream_in()
        elif data is not None:
            self.exec_input = (env, cwd, None)   # (decoded in pieces: no copy left held)
            fd = _stdin_file(data)
            data = None
            try:
                _dup2(fd, 0)                 # (inheritable: subprocesses read it too)
            except BaseException:
                os.close(fd)
                raise
            self.stdin = _stdin_over(_private(fd), True)
            _SYS["stdin"] = _SYS["__stdin__"] = self.stdin
        return self._run_code(sid, code)

    def _stream_in(self):
        """The run's stdin stream on fd 0 and sys.stdin: one sys.stdin for
        all the snippets, so that what one read ahead into its buffer and did
        not take is there for the next, as in one python3 process."""
        fd = self.stream_fd
        if fd is None:
            return
        try:
            _dup2(fd, 0)                     # (inheritable: subprocesses read it too)
        except OSError:                      # (user code closed ours: end of file)
            return
        s = self.stream_stdin
        if s is None or s.closed:
            s = self.stream_stdin = _stdin_over(_private(os.dup(fd)), True)
        self.stdin = s
        _SYS["stdin"] = _SYS["__stdin__"] = s

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
