"""What user code may break in the kernel's own process, put back after each
result: fds 0-2, the SIGINT handler and its mask, sys.std* and the names
each snippet finds (_check, _install); the streams over the capture pipes,
made and remade (also across a fork of user code); and the points where
output must be flushed before it leaves (os.fork, os._exit, subprocess,
exec).

Not a module: a part of the Kernel class (a mixin), joined into kernel.py
where it says "# @include kernel_guard.py"; it uses kernel.py's globals.
"""
# ---- kernel_guard.py: joined into kernel.py at build time (driver_join.py, "# @include")

class _Guard:
    # -- checked and re-installed after every result, before the next snippet
    def _check(self, thorough=True):
        """Put fds 0-2, the SIGINT handler, its mask and sys.std* back.  Runs
        after the result, but a client that sends its next request at once
        still waits for it, so a quick check is four system calls, the three
        dup2 and the signal mask.  The thorough one (after snippets of 1 ms
        or more, or THOROUGH_EVERY since the last) also checks by fstat that
        our own fds are still ours: one that user code closed or replaced
        cannot be made again (the relay holds the other ends), so the kernel
        gives way to a fresh one."""
        self.checked = False
        self._install(thorough)
        fd0, fd1, fd2 = self.std_sources
        try:
            _dup2(fd0, 0)
            _dup2(fd1, 1)
            _dup2(fd2, 2)
        except OSError:                      # one of ours is closed
            thorough = True
        if thorough:
            self.thorough_at = _perf_ns()
            if (tuple(_map(_identity, self.std_sources)) != self.std_idents
                    or not self.chan.healthy()):
                os._exit(EXIT_LOST_PIPE)     # the relay starts a fresh kernel
        if _signal.getsignal(_SIGINT) is not self.on_sigint:
            _signal.signal(_SIGINT, self.on_sigint)
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, _SIGINT_ONLY)
        self.checked = True

    def _install(self, thorough=True):
        """sys.std*, __main__, input() and display(), as each snippet finds them.
        Quick: our streams are replaced only if flagged gone, and the rest is
        compared before it is assigned (assignments to modules are slow)."""
        try:                                 # (none yet; detached: ValueError)
            out, err = self.std_streams
            fresh = (thorough or out.closed or err.closed or out._ptybox_buf.gone
                     or err._ptybox_buf.gone)
        except (AttributeError, ValueError):
            fresh = True
        if fresh:
            out, err = self._stream("stdout", 1), self._stream("stderr", 2)
            self.std_streams = (out, err)
            self.bufs = (out._ptybox_buf, err._ptybox_buf)
        if self.stdin.closed:
            self.stdin = self._no_stdin()
        stdin, display, module = self.stdin, self.display, self.module
        if not fresh:
            try:                             # (subscripts: no calls; KeyError if deleted)
                d, b = _SYS, _BUILTINS
                fresh = (d["stdout"] is not out or d["stderr"] is not err
                         or d["stdin"] is not stdin or d["__stdout__"] is not out
                         or d["__stderr__"] is not err or d["__stdin__"] is not stdin
                         or d["modules"] is not _MODULES or b["input"] is not _PYTHON_INPUT
                         or b["display"] is not display or _MODULES["__main__"] is not module
                         or b[MAGIC_NAME] is not self.magic)
            except KeyError:
                fresh = True
        if fresh:
            sys.stdout = sys.__stdout__ = out
            sys.stderr = sys.__stderr__ = err
            if out.closed or err.closed:
                # What these replaced went as they did, and may have closed
                # ours on its way (a TextIOWrapper over sys.stdout.buffer):
                # fresh ones, then.
                out, err = self._stream("stdout", 1), self._stream("stderr", 2)
                self.std_streams = (out, err)
                self.bufs = (out._ptybox_buf, err._ptybox_buf)
                sys.stdout = sys.__stdout__ = out
                sys.stderr = sys.__stderr__ = err
            sys.stdin = sys.__stdin__ = stdin
            sys.modules = _MODULES
            _MODULES["__main__"] = module
            builtins.input = _PYTHON_INPUT
            builtins.display = display
            _BUILTINS[MAGIC_NAME] = self.magic

    def _stream(self, name, fd):
        """Our sys.stdout or sys.stderr: the one we have, or a new one."""
        s = self.streams.get(name)
        if not _usable(s):
            s = self.streams[name] = self._make_stream(fd, name)
        return s

    def _before_fork(self):
        """fork() in user code: flush first, or the child would write the
        parent's buffered text a second time."""
        for s in list(self.streams.values()):
            try:
                s.flush()
            except BaseException:
                pass

    def _after_fork(self):
        """In a child forked by user code: locks held by vanished threads are new,
        and sys.stdout/err write through (a pool worker's print() would wait
        for its exit, or be lost to an os._exit)."""
        self.chan.lock = _RLock()
        self.chan.writing, self.chan.deferred = False, []
        self.late_lock = _RLock()
        self.forked = True
        for s in self.streams.values():
            s._ptybox_buf.lock = _RLock()
            s._ptybox_buf.eager = 2

    def _make_stream(self, fd, name):
        buf = _TextBuffer("backslashreplace")
        # stdout line-buffered as on a terminal, but lines that follow each
        # other within COALESCE go out together (a print loop is not a
        # write each); stderr line-buffered.
        buf.eager = 1 if fd == 2 else 3
        sink = _FdSink(fd, "<%s>" % name, buf)
        s = _OutStream(sink, encoding="utf-8", errors="backslashreplace")
        s._ptybox_buf, s._ptybox_sink = buf, sink
        s.write = _writer(s, self, name)
        return s

    def _flush_c_stdio(self):
        """What C code printed through the C library's stdout (a pipe: block
        buffered) belongs to this snippet.  Only once ctypes is imported:
        the usual way to call C from a snippet, and what we call it with."""
        try:
            if self.c_fflush is None:
                import ctypes
                self.c_fflush = ctypes.CDLL(None).fflush
                self.c_fflush.argtypes = (ctypes.c_void_p,)
            self.c_fflush(None)
        except Exception:
            pass

    def _flush_user_stdio(self):
        """Flush sys.stdout/err that user code put in place of ours."""
        for name in ("stdout", "stderr"):
            current = getattr(sys, name, None)
            if current is not None and current is not self.streams.get(name):
                self._call_user(lambda: current.flush())

    def _flush_stdio(self):
        """Flush our sys.stdout/err; a stream whose fd failed is replaced, never
        retried.  The first failure is returned (buffered text fails here, as
        Python's own stdout on a pipe fails at exit)."""
        failure = None
        for name, s in tuple(self.streams.items()):
            if not s._ptybox_buf.dirty:      # nothing buffered (closed: replaced later)
                continue
            try:
                s.flush()
            except BaseException as e:
                s._ptybox_sink.dead = s._ptybox_buf.gone = True
                del self.streams[name]
                failure = failure or e
        return failure

    def _await_flushes(self, bufs):
        """Text another thread took to flush (the watchdog's idle flush, a
        thread's line end) is not dirty any more, yet maybe not in the pipe:
        that thread holds the buffer's lock until it is.  So the lock is
        taken once before the result goes (up to FLUSH_WAIT: a writer stuck
        on a full pipe must not hold the result for good), or the text would
        come after the result, as late output or the next snippet's."""
        for buf in bufs:
            if buf.lock.acquire(True, FLUSH_WAIT):
                buf.lock.release()

    def _flush_quietly(self, s):
        """s's buffered text out now, unless another thread is at it (False:
        try again soon); never raises, whatever user code did to s."""
        try:
            buf, sink = s._ptybox_buf, s._ptybox_sink
        except BaseException:                # (none, or taken apart by user code:
            return True                      # the next result puts it back)
        if not buf.dirty:
            return True
        if not buf.lock.acquire(False):
            return False
        try:
            sink.flush_text()
        except BaseException:
            pass
        finally:
            buf.lock.release()
        return True

    def flush_idle(self):
        """(The watchdog thread) what sys.stdout/err buffered, out now; False
        if a stream was busy (being written or flushed: try again soon)."""
        done = True
        for s in tuple(self.streams.values()):
            done = self._flush_quietly(s) and done
        return done

    def _flush_held(self, name):
        """Before our other stream writes: this one's buffered text first.  If
        another thread is at it (the watchdog's idle flush, say), its write
        goes first: waited for, up to SETTLE_WAIT (two threads that wait for
        each other's stream give up then: no deadlock)."""
        s = self.streams.get(name)
        if _get_ident() != _WATCHDOG[0]:     # (which never waits: its flush is the
            try:                             # older text, the one to go first)
                lock = s._ptybox_buf.lock
                if lock.acquire(True, SETTLE_WAIT / 1e9):
                    lock.release()
            except BaseException:            # (none, or taken apart by user code)
                pass
        self._flush_quietly(s)

    def _flush_all(self):
        for s in tuple(self.streams.values()):
            try:
                if s._ptybox_buf.dirty:
                    s.flush()
            except BaseException:            # (taken apart by user code: put back later)
                pass

    def _patch_flush_points(self):
        """sys.stdout is block-buffered (for speed): what it holds goes out
        before anything else of this process can write to fds 1 and 2 (a
        child process, os.system, os.write), so that the output keeps the
        order a terminal would show."""
        driver = self
        osmod = _MODULES["os"]

        def flushing(real, fds=None):
            if fds is None:
                def hook(*args, **kwargs):
                    driver._flush_all()
                    return real(*args, **kwargs)
            else:
                def hook(fd, *args, **kwargs):
                    if fd in fds:
                        driver._flush_all()
                        if _LAST[0] != fd:
                            _settle(fd)      # (what the other stream wrote, read first)
                    return real(fd, *args, **kwargs)
            hook.__wrapped__, hook.__doc__, hook.__name__ = real, real.__doc__, real.__name__
            return hook

        posix = _MODULES.get("posix")
        for name, fds in (("write", (1, 2)), ("writev", (1, 2)), ("system", None),
                          ("posix_spawn", None), ("posix_spawnp", None), ("execv", None),
                          ("execve", None)):
            for module in (osmod, posix):
                real = getattr(module, name, None) if module is not None else None
                if real is not None:
                    setattr(module, name, flushing(real, fds))
        try:
            import _posixsubprocess
            _posixsubprocess.fork_exec = flushing(_posixsubprocess.fork_exec)
        except (ImportError, AttributeError):
            pass

    def _patch_exit(self):
        """os._exit() in user code: what sys.stdout/err hold goes into the pipes
        first (which the relay drains when it sees us die): a program's last
        words are what its user needs most."""
        module, driver = _MODULES["os"], self
        real_exit = module._exit

        def _exit(status):
            for s in tuple(driver.streams.values()):
                try:
                    s.flush()
                except BaseException:
                    pass
            real_exit(status)

        _exit.__wrapped__, _exit.__doc__ = real_exit, real_exit.__doc__
        module._exit = _exit
