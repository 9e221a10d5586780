"""ptybox kernel: runs the snippets, under the relay (relay.py).

Forked by the relay's template into its own session: no controlling
terminal, no fd of the terminal, and no nonce ever in its memory.  It reads
requests from its request pipe, runs them in one persistent __main__ like
notebook cells, and sends results, displays and thread-written late output
as JSON lines on its message pipe; fds 1 and 2 are capture pipes that the
relay reads and frames.  Nothing it sends is trusted by the relay, which
parses, bounds and re-encodes it: user code here can lie about its own
snippets, as in any stateful interpreter, and about nothing else.

Why it is still guarded: user code runs in this very process and may do
anything to it - close fds, replace sys.stdout, ignore SIGINT, start
threads and processes that outlive it.  So kernel state lives in objects the
user's namespace does not name, the modules it needs are private copies, fds
0-2, the SIGINT handler and sys.std* are put back after each result, and
SIGINT raises only while user code runs.  When it cannot go on (its pipes
to the relay gone, no result can be sent) it exits, and the relay forks a
fresh kernel in a few milliseconds.

sys.stdout and sys.stderr are line-buffered, as Python's own are on a
terminal, so output keeps the order a terminal would show: print() before a
subprocess's output, and across stdout and stderr (a write to one waits,
briefly, until the relay has taken what the other holds).

Interrupts: the relay writes "I<seq>" on the request pipe, then sends SIGINT
to the kernel's process group.  While a snippet runs any SIGINT raises
KeyboardInterrupt (the relay tells its own from the code's); one that came
while idle interrupts the next snippet only if the relay's "I" line for it
follows its request.
Standard library only; runs on Python 3.8 and later.
"""

# Only what starts fast: the interpreter runs with -S and these imports are on
# the way to the first result (re, enum, json, base64, linecache are not).
import _ast, _signal, _thread, binascii, builtins, codecs, errno, fcntl, io
import os, select, sys, termios, time, types
from _collections import deque

# The driver's own builtins: a snapshot that user code cannot reach.  Every
# function defined below looks names up in it (a function takes its builtins
# from its globals when it is made), so `del builtins.type` in a snippet
# breaks that snippet's world, not the driver's.
__builtins__ = dict(builtins.__dict__)

TTY_READ = 64 << 10               # request bytes per read
TEXT_BUFFER = 64 << 10            # sys.stdout/err: text kept before a write into the pipe
SETTLE_WAIT = 20 * 10 ** 6        # ns: a write to one stream waits this long for the other
COALESCE = 10 ** 6                # ns: lines within this of the last flush wait for more ...
FLUSH_DELAY = 5 * 10 ** 6         # ... at most this long (the watchdog flushes them)
FLUSH_WAIT = 2.0                  # s: a snippet's end waits this long for a flush under way
SITE_WAIT = 0.05                  # idle this long after ready: import site (-S)
SITE_TRIES = 3                    # ... tries, if something cuts it short
SOURCE_BUDGET = 32 << 20          # bytes of snippet source kept in linecache ...
SOURCE_COUNT = 1 << 14            # ... and snippets (a dict of them grows slow)
MAX_FIGURES = 1000                # pyplot figures shown after a snippet, at most
QUERY_CODE = 1 << 20              # is_complete, complete: longer code is not parsed ("unknown")
QUERY_MATCHES = 200               # complete: matches sent, at most
QUERY_NAMES = 100000              # ... and names looked at (a dir() of millions stops there)
QUERY_BUDGET = 500 * 10 ** 6      # ns a completion spends at most (the relay interrupts at 1 s)
CODE_CACHE = 256                  # compiled snippets kept, keyed by their source ...
CODE_CACHE_SOURCE = 16 << 10      # ... if it is at most this long
THOROUGH_EVERY = 10 ** 7          # ns: the thorough check at least this often (see _check)
EXIT_LOST_PIPE = 119              # our pipe to the relay is gone: PROTOCOL_EXIT_NO_TERMINAL
EXIT_NO_FDS = 118                 # no fd can be opened (RLIMIT_NOFILE): PROTOCOL_EXIT_NO_FDS
EXIT_NO_RESULT = 117              # a result cannot be sent, try as we may: PROTOCOL_EXIT_NO_RESULT
STAMP = "_ptybox_snippet"         # Thread attribute: id of the snippet that started it
_PIPE = object()                  # route: "write into the capture pipe"
_UNSTAMPED = object()             # a thread not started through threading.Thread
_DRIVER_GLOBALS = globals()       # frames running with these are driver frames


def _snapshot(module):
    """module's namespace as it is now, in a module of the driver's own: a
    snippet that replaces os.read or fcntl.ioctl changes its world, not the
    driver's (which would hang, or fail every snippet from then on)."""
    copy = types.ModuleType(module.__name__)
    copy.__dict__.update(module.__dict__)
    return copy


os, fcntl, termios, select, _signal, time, codecs, binascii = map(
    _snapshot, (os, fcntl, termios, select, _signal, time, codecs, binascii))
_CodeType = types.CodeType
_TracebackType = types.TracebackType
_get_ident = _thread.get_ident
_RLock = _thread.RLock
# threading is not imported at start (it costs some 6 ms of every cold start):
# Kernel._patch_threading runs once it is, whoever imports it.
_text_flush = io.TextIOWrapper.flush
_perf_ns = time.perf_counter_ns
_dup2 = os.dup2
_sched_yield = os.sched_yield
_gettrace, _settrace = sys.gettrace, sys.settrace
_getprofile, _setprofile = sys.getprofile, sys.setprofile
_map = map
_SYS = sys.__dict__                   # (user code may delete sys.stdout, sys.modules ...)
_MODULES = sys.modules                # the interpreter's own, whatever sys.modules names
_BUILTINS = builtins.__dict__
_SIGINT, _SIGINT_ONLY = _signal.SIGINT, (_signal.SIGINT,)
# @shared


# ---------------------------------------------------------------- helpers

def _private(fd):
    """A close-on-exec copy of fd at a high number (away from user fds); fd
    is closed."""
    try:
        limit = os.sysconf("SC_OPEN_MAX")
    except (ValueError, OSError):
        limit = 1024
    try:
        new = fcntl.fcntl(fd, F_DUPFD_CLOEXEC, max(10, min(1000, limit - 24)))
    except OSError:
        new = os.dup(fd)
    os.close(fd)
    return new


def _identity(fd):
    """What fd refers to, or None if it is closed: detects close and dup2-over.
    (An OSError subclass is a user's signal handler's, not fstat's: raised,
    or a kernel whose fds are fine would give way.)"""
    try:
        st = os.fstat(fd)
    except OSError as e:
        if type(e) is not OSError:
            raise
        return None
    return (st.st_dev, st.st_ino, st.st_rdev)



_CUT = {}                         # ident: True, _cap_text cut something in that thread

def _cap_text(text, limit):
    """text cut to at most limit UTF-8 bytes (0: no limit), saying so (and in
    _CUT, for the thread: its snippet's result says truncated)."""
    data = text.encode("utf-8", "backslashreplace")
    if not limit or len(data) <= limit:
        return text
    _CUT[_get_ident()] = True
    cut = _char_start(data, limit)
    return data[:cut].decode("utf-8", "replace") + "...[%d bytes truncated]" % (len(data) - cut)



def _fit_bundle(data, limit, what):
    """A MIME bundle cut down to its text/plain (at most limit bytes)."""
    dropped = ", ".join(k for k in data if k != "text/plain")
    text = _cap_text(data.get("text/plain", ""), limit)
    if dropped:
        _CUT[_get_ident()] = True
        text += "\n[ptybox: %s dropped: the %s was too large to send]" % (dropped, what)
    return {"text/plain": text}


def _fit_error(error, limit):
    """An error cut down: name and value, and the traceback's last lines
    (where it ends matters most), each part at most limit bytes."""
    lines, left = [], limit
    for line in reversed(error.get("traceback", ())):
        line = _cap_text(line, left)
        lines.append(line)
        left -= len(line.encode("utf-8", "backslashreplace"))
        if left <= 0:
            break
    lines.reverse()
    return {"name": _cap_text(error.get("name", ""), limit),
            "value": _cap_text(error.get("value", ""), limit), "traceback": lines}


def _exit_status(code):
    """The status python3 exits with for SystemExit(code): None is 0, an int
    its low byte (one past a C long is -1: 255, as CPython makes it), anything
    else 1 (its text goes to stderr)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xff if -(1 << 63) <= code < 1 << 63 else 255
    return 1


def _strip_driver_frames(exc):
    """exc's traceback without the frames of the driver (its SIGINT handler)
    and those of asyncio before the first of the user's (the loop that ran
    an awaiting snippet: kernel_async.py)."""
    kept, tb, aio = [], exc.__traceback__, _asyncio_dir()
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_globals is not _DRIVER_GLOBALS and not (
                not kept and aio and frame.f_code.co_filename.startswith(aio)):
            kept.append(tb)
        tb = tb.tb_next
    for a, b in zip(kept, kept[1:] + [None]):
        a.tb_next = b
    exc.__traceback__ = kept[0] if kept else None


def _stamped_call(stamp, fn, /, *args, **kwargs):
    """fn(*args, **kwargs) in a pool thread, under the stamp of its snippet."""
    thread = _MODULES["threading"].current_thread()
    old = getattr(thread, STAMP, _UNSTAMPED)
    try:
        setattr(thread, STAMP, stamp)
    except Exception:
        return fn(*args, **kwargs)
    try:
        return fn(*args, **kwargs)
    finally:
        if old is _UNSTAMPED:
            delattr(thread, STAMP)
        else:
            setattr(thread, STAMP, old)


def _renamed(code, filename):
    """code (and the code objects it holds) as if compiled from filename."""
    consts = code.co_consts
    for c in consts:
        if type(c) is _CodeType:
            consts = tuple(_renamed(c, filename) if type(c) is _CodeType else c
                           for c in consts)
            return code.replace(co_filename=filename, co_consts=consts)
    return code.replace(co_filename=filename)




# ---------------------------------------------------------------- channel

# @include kernel_channel.py
# @include kernel_streams.py

# @include kernel_threads.py
# @include kernel_cell.py
# @include kernel_rich.py
# @include kernel_display.py
# @include kernel_async.py
# @include kernel_query.py
# @include kernel_packages.py
# @include kernel_input.py
# @include kernel_files.py
# @include kernel_guard.py


class Kernel(_Guard, _ThreadRouting, _RichOutput, _Display, _Async, _Queries, _Packages, _Input,
             _Files):
    """The user's namespace and the execution of snippets."""

    def __init__(self, chan):
        self.chan = chan
        self.main_ident = _get_ident()
        self.running = None                  # seq of the snippet running now
        self.exec_name = None                # its id, as the caller named it
        self.exec_file = None                # its file name (run FILE), or None
        self.exec_main = False               # run as python3 FILE runs it
        self.max_output = DEFAULT_MAX_OUTPUT
        self.last_id = None                  # seq that idle output belongs to
        self.result_pending = False
        self.checked = False                 # _check() ran since the last snippet
        self.thorough_at = 0                 # _perf_ns() of the last thorough one
        self.on_sigint = self._on_sigint     # one bound method: compared by identity
        self.armed = False                   # SIGINT raises KeyboardInterrupt
        self.sigint_deferred = False         # ... as user code resumes
        self.ki_raised = False               # ... and did, in this snippet
        self.sigint_idle = False             # a SIGINT came while idle
        self.forked = False                  # set in a child that user code forked
        self.tracers = None                  # user code's (tracer, profiler), paused
        self.display_cut = False             # a display of the running snippet was cut
        self.pending = None                  # (seq, max_output) whose result is owed
        self.hits, self.hits_since = 0, 0    # serve() hit again and again: _hit
        self.stray_exc = None                # what cut it short (_stray)
        self.pool_patched = False            # ThreadPoolExecutor.submit stamps its work
        self.thread_pool_patched = False     # ... and multiprocessing's ThreadPool
        self.raw_stamps = {}                 # ident -> stamp of _thread's threads
        self.c_fflush = None                 # the C library's fflush, once ctypes is in
        self.site = None                     # a _DeferredSite until site is imported
        self.snippets = 0
        self.home = None                     # the start folder: file ops' relative paths
        self.uploads = {}                    # token -> [fd, temp file, size, path, when]
        self.codeop = self.warnings = None  # imported for the first is_complete
        self.late_lock = _RLock()   # (its owner is known: _late_write)
        self.sources, self.source_bytes = deque(), 0
        self.unregistered = {}               # linecache entries, once it is imported
        self.code_cache = {}                 # source -> (body, last expression, nested code?, lines)
        self.module = types.ModuleType("__main__")
        self.module.__dict__["__builtins__"] = builtins
        self.ns = self.module.__dict__
        # What fds 0-2 are dup2()ed from after each snippet: /dev/null and
        # private copies of the capture pipes (the relay owns the other ends),
        # /dev/null too until attach().
        self.std_sources = tuple(_private(os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC))
                                 for _ in range(3))
        self.std_idents = tuple(_identity(fd) for fd in self.std_sources)
        self.bufs = ()
        self.streams = {}
        self.stdin = self._no_stdin()
        self._display_init()                 # display(), and IPython's routed to it
        self._aio_init()                     # the event loop of top-level await
        os.environ["MPLBACKEND"] = "Agg"
        if "" not in sys.path:
            sys.path.insert(0, "")           # like a REPL: import what you just wrote
        self._packages_init()                # (the package folder, !cmd and %pip)
        self._patch_thread_start()
        self._patch_exit()
        self._patch_flush_points()
        _BEFORE_WRITE[1] = lambda: self._flush_held("stderr")
        _BEFORE_WRITE[2] = lambda: self._flush_held("stdout")
        os.register_at_fork(before=self._before_fork, after_in_child=self._after_fork)
        self._check(False)

    def warm(self):
        """(In a standby) a snippet run as the first one would be, its result
        written to /dev/null, then forgotten: the pages on that path are
        copied from the template's now rather than on the way to the first
        result (a page fault costs microseconds, and they are hundreds)."""
        self.execute(0, "None", DEFAULT_MAX_OUTPUT)
        self.snippets, self.last_id, self.code_cache = 0, None, {}
        self.sources.clear()
        self.source_bytes = 0
        self.unregistered.pop("<snippet-0>", None)
        linecache = _MODULES.get("linecache")
        if linecache is not None:
            linecache.cache.pop("<snippet-0>", None)

    def attach(self, out, err):
        """The capture pipes as fds 1 and 2 from now on (out and err are
        closed); its channel attached already."""
        for fd, place in ((out, self.std_sources[1]), (err, self.std_sources[2])):
            os.dup2(fd, place, inheritable=False)
            os.close(fd)
        self.std_idents = tuple(_identity(fd) for fd in self.std_sources)
        self._check()

    # -- SIGINT
    def _on_sigint(self, signum, frame):
        if self.running is None:             # between snippets: see execute()
            self.sigint_idle = True
            return
        if self.armed:
            self.ki_raised = True
            raise KeyboardInterrupt
        self.sigint_deferred = True          # raised as user code resumes

    def _call_user(self, fn, *args):
        """fn(*args) with SIGINT armed: (value, None) or (None, exception)."""
        value = exc = None
        try:
            try:
                self.armed = True
                if self.tracers is not None:
                    self._resume_tracing()
                if self.sigint_deferred:
                    self.sigint_deferred = False
                    self.ki_raised = True
                    raise KeyboardInterrupt
                value = fn(*args)
            finally:
                self.armed = False
                # A tracer or profiler that user code set (sys.settrace) is
                # off while driver code runs, and back on for the next user
                # code: one that prints would print from inside the driver's
                # writes, under their locks.  (Inline: no frame to trace.)
                if _gettrace() is not None or _getprofile() is not None:
                    self.tracers = (_gettrace(), _getprofile())
                    _settrace(None)
                    _setprofile(None)
        except BaseException as e:           # everything, SystemExit and ^C included
            exc = e
        if self.forked:                      # a fork() of user code got here: end it
            self._exit_forked_child(exc)
        return value, exc

    def _resume_tracing(self):
        """The user's tracer and profiler back on, for user code (_call_user)."""
        tracer, profiler = self.tracers
        self.tracers = None
        _settrace(tracer)
        _setprofile(profiler)

    def _exit_forked_child(self, exc):
        code = 0
        if isinstance(exc, SystemExit):
            code = _exit_status(exc.code)    # (os._exit takes no int past a C int)
        elif exc is not None:
            import traceback
            traceback.print_exception(type(exc), exc, exc.__traceback__)
            code = 1
        try:
            for s in [sys.stdout, sys.stderr] + list(self.streams.values()):
                try:
                    s.flush()
                except BaseException:
                    pass
        finally:
            os._exit(code)

    # -- one snippet
    def _run_code(self, sid, code):
        """Run code like a notebook cell: the last expression's value is returned."""
        filename = self.exec_file or "<exec-%s>" % self.exec_name
        if self.exec_file is None:
            code = _dedented(code)           # (an indented cell runs, as in IPython)
        hit = self.code_cache.get(code)
        if hit is None:
            # Each line with its newline, the last too: a traceback's carets
            # are placed on the line as linecache holds it.  Split as compile
            # splits (_lines, kernel_packages.py).
            lines = _lines(code)
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n"
        else:
            lines = hit[3]
        # Tracebacks (and inspect) show snippet lines.  Until something imports
        # linecache (slow to import), sources wait in unregistered; old ones go
        # past a budget after the result (_trim_sources).
        linecache = _MODULES.get("linecache")
        entry = (len(code), None, lines, filename)
        if linecache is None or self.unregistered:
            self.unregistered[filename] = entry
            self._flush_sources()
        else:
            try:
                linecache.cache[filename] = entry
            except Exception:                # user code replaced linecache or its cache
                self.unregistered[filename] = entry
        self.sources.append((filename, len(code)))
        self.source_bytes += len(code)
        if hit is None:
            body, last = self._compile(code, filename, lines)
        else:
            body, last, nested, _ = hit
            if nested:
                body = _renamed(body, filename)
                last = last if last is None or last is _AWAIT_LAST else _renamed(last, filename)
            else:
                body = body.replace(co_filename=filename)
                if last is not None and last is not _AWAIT_LAST:
                    last = last.replace(co_filename=filename)
        if body.co_flags & _CO_COROUTINE:    # (top-level await)
            self._await(eval(body, self.ns))
        else:
            exec(body, self.ns)
        if last is None:
            value = None
        elif last is _AWAIT_LAST:
            return self.ns.pop(_AWAIT_VALUE, None)
        else:
            value = eval(last, self.ns)
        if self.aio_loop is not None:
            self._aio_tick()                 # (tasks it started: kernel_async.py)
        return value

    def _compile(self, code, filename, lines):
        """Parse once; compile the body, and the last statement apart when it is
        an expression.  Kept for a repeated snippet unless compiling it wrote
        to stderr (a SyntaxWarning is shown each time, as before)."""
        err = self.streams.get("stderr")
        quiet = err is not None and not err._ptybox_buf.dirty
        try:
            source = _escaped(code)          # (!cmd and %pip: kernel_packages.py)
            tree = compile(source, filename, "exec", _ast.PyCF_ONLY_AST, dont_inherit=True)
            flags = 0 if self.exec_file else _TOP_AWAIT   # (python3 FILE has no top-level await)
            last = None
            if tree.body and isinstance(tree.body[-1], _ast.Expr) and not (
                    ";" in source and _quiet(lines if source is code else _lines(source),
                                             tree.body[-1])):
                last = _ast.Expression(tree.body.pop().value)
            body = compile(tree, filename, "exec", flags, dont_inherit=True)
            if last is not None:
                expr = last.body
                last = compile(last, filename, "eval", flags, dont_inherit=True)
                if (body.co_flags | last.co_flags) & _CO_COROUTINE:
                    # One coroutine, its value through a global (as one awaits
                    # it, asyncio.run() in it is refused, as in IPython).
                    tree.body.append(_assign_value(expr))
                    body = compile(tree, filename, "exec", flags, dont_inherit=True)
                    last = _AWAIT_LAST
        except Exception as e:               # SyntaxError & co: no driver frames to show
            e.__traceback__ = None
            raise
        if quiet and not err._ptybox_buf.dirty and len(code) <= CODE_CACHE_SOURCE:
            if len(self.code_cache) >= CODE_CACHE:
                self.code_cache.clear()
            nested = any(type(c) is _CodeType for k in (body, last) if type(k) is _CodeType
                         for c in k.co_consts)
            self.code_cache[code] = (body, last, nested, lines)
        return body, last

    def _trim_sources(self):
        """The oldest go, down to 7/8 of both budgets (not one per snippet)."""
        while ((self.source_bytes > SOURCE_BUDGET // 8 * 7
                or len(self.sources) > SOURCE_COUNT // 8 * 7) and len(self.sources) > 1):
            old, n = self.sources.popleft()
            self.source_bytes -= n
            linecache = _MODULES.get("linecache")
            if self.unregistered.pop(old, None) is None and linecache is not None:
                try:
                    linecache.cache.pop(old, None)
                except Exception:
                    pass

    def _flush_sources(self):
        linecache = _MODULES.get("linecache")
        if linecache is None or not self.unregistered:
            return
        try:
            linecache.cache.update(self.unregistered)
        except Exception:                    # not linecache's as it was: kept for when it is
            return
        self.unregistered = {}

    def _error(self, exc):
        """name, value and traceback of exc (each part cut to max_output bytes)."""
        import traceback
        self._flush_sources()
        cls = type(exc)
        module = getattr(cls, "__module__", None)
        name = cls.__qualname__
        if module not in ("builtins", "__main__", None):
            name = "%s.%s" % (module, name)
        seen, chained = set(), exc           # drop the driver's own frames, also
        while chained is not None and id(chained) not in seen:   # from the ^C
            seen.add(id(chained))            # that the code caught, say
            _strip_driver_frames(chained)
            chained = chained.__cause__ or chained.__context__
        tb = exc.__traceback__
        sys.last_type, sys.last_value, sys.last_traceback = cls, exc, tb
        sys.last_exc = exc                   # Python 3.12+: what pdb.pm() looks at
        try:
            value = str(exc.code) if isinstance(exc, SystemExit) else str(exc)
        except Exception:
            value = "<unprintable %s object>" % cls.__name__
        try:
            lines = traceback.format_exception(cls, exc, tb)
        except Exception:                    # (a file name with a lone surrogate, say)
            lines = ["%s: %s\n" % (name, value) if value else "%s\n" % name]
        error = {"name": name, "value": _cap_text(value, self.max_output),
                 "traceback": [_cap_text(line, self.max_output) for line in lines]}
        if self.exec_main and isinstance(exc, SystemExit):
            code = exc.code                  # python3 FILE's exit status for it
            if isinstance(code, int):        # (True: "1"; past 4300 digits str() raises)
                error["value"] = str(int(code)) if -(1 << 63) <= code < 1 << 63 else "-1"
            error["exit"] = _exit_status(code)
        return error

    def execute(self, sid, code, max_output):
        # The hot path: a snippet that prints little, raises nothing and leaves
        # the process as it found it costs a few attribute tests beyond running
        # it.  What may be slow runs only when a test says it is needed, and
        # the checks of what user code may have broken run after the result.
        self.result_pending = True
        if not self.checked:
            self._check()                    # the last one was cut short
        self.checked = False                 # user code runs: check after the result
        threading = _MODULES.get("threading")
        if threading is not None:
            try:
                if not threading.Thread.start._ptybox:
                    self._patch_threading(threading)
            except Exception:                # (not ours, or not threading as we know it)
                try:
                    self._patch_threading(threading)
                except Exception:
                    pass
        self.sigint_deferred = False
        self.ki_raised = False               # a ^C reached the code (the result says "ki")
        self.running = self.last_id = sid
        if self.sigint_idle:                 # the relay's ^C for this snippet came first?
            self.sigint_idle = False
            if self.chan.interrupt_follows(sid):
                self.sigint_deferred = True
        elif self.chan.interrupt_queued(sid):
            self.sigint_deferred = True      # (its line came with the request)
        self.max_output = max_output
        if _CUT:
            _CUT.clear()
        self.display_cut = False

        bufs = self.bufs
        t0 = _perf_ns()
        value, exc = self._call_user(self._run_code if self.exec_input is None
                                     else self._run_with_input, sid, code)
        if self.exec_main:
            # python3 FILE waits for its threads however FILE ended (a raise,
            # sys.exit(N)), but for a ^C: ours is a timeout or an interrupt.
            if not isinstance(exc, KeyboardInterrupt):
                exc = self._call_user(self._join_threads)[1] or exc
            if isinstance(exc, SystemExit) and (exc.code is None or exc.code is False
                                                 or type(exc.code) is int and exc.code == 0):
                exc = None                   # sys.exit(), sys.exit(0): a normal end
        if self.exec_input is not None:
            self._leave_input()              # (after FILE's threads: they ran with it)
        if exc is None and (bufs[0].dirty or bufs[1].dirty):
            exc = self._flush_stdio()        # a write that fails fails the snippet
        t1 = _perf_ns()
        micros = (t1 - t0) // 1000
        if _signal.getsignal(_SIGINT) is not self.on_sigint:
            _signal.signal(_SIGINT, self.on_sigint)  # user code replaced it
        out, err = self.std_streams
        if (exc is None and value is None and _SYS.get("stdout") is out
                and _SYS.get("stderr") is err and "matplotlib.pyplot" not in _MODULES
                and "ctypes" not in _MODULES and not self.display_cut):
            status, result, error = "ok", None, None  # (and no more user code to run)
        else:
            status, result, error = self._conclude(value, exc, max_output)
        # From here on, threads of this snippet write late output.
        self.running = None
        if bufs[0].dirty or bufs[1].dirty:
            self._flush_stdio()
        self._await_flushes(bufs)
        cut = self.display_cut or bool(_CUT) and _CUT.pop(self.main_ident, False)
        if status == "ok" and result is None and not cut and not self.ki_raised:
            line = b"R%d\n" % sid
        else:
            msg = {"t": "result", "seq": sid, "status": status, "result": result,
                   "error": error}
            if self.ki_raised:
                msg["ki"] = True
            line = _dumps(msg).encode("ascii")
            cap = _frame_cap(max_output) // 4
            if len(line) > cap:
                # Each text part cut to cap / 64 UTF-8 bytes: escaped (six
                # bytes a byte at most) all of them stay under the cap.
                part = cap // 64
                if result is not None:
                    msg["result"] = _fit_bundle(result, part, "result")
                if error is not None:
                    msg["error"] = _fit_error(error, part)
            if cut or _CUT.pop(self.main_ident, False):
                msg["cut"] = True
            line = _dumps(msg).encode("ascii") + b"\n"
        self.chan.write(line)
        self.result_pending = False
        self.snippets += 1
        if self.source_bytes > SOURCE_BUDGET or len(self.sources) > SOURCE_COUNT:
            self._trim_sources()
        self._check(micros >= 1000 or t1 - self.thorough_at >= THOROUGH_EVERY)

    def _as_file(self, req):
        """What `run FILE ARGS` asks (the relay checked the types): sys.argv
        and __file__ set (and left so for later snippets, as python3 -i FILE
        leaves them), the file name in tracebacks; and the terminal's size,
        which the relay sends when it changed, in COLUMNS and LINES."""
        filename, argv = req.get("filename"), req.get("argv")
        self.exec_file, self.exec_main = filename, req.get("main") is True
        if argv is not None:
            _SYS["argv"] = list(argv)
        if filename is not None:
            self.ns["__file__"] = filename
        size, self.chan.size = self.chan.size, None
        if size is not None:
            try:
                cols, rows = size.split(b"x")
                os.environ["COLUMNS"], os.environ["LINES"] = str(int(cols)), str(int(rows))
            except (ValueError, OSError):
                pass

    def _join_threads(self):
        """As the interpreter does at exit (threading._shutdown): its exit
        hooks (concurrent.futures lets its idle workers go, and the executors
        that had some are shut down), then every non-daemon thread joined.
        New executors work after it: only the interpreter is not exiting."""
        threading = _MODULES.get("threading")
        if threading is None:
            return
        for hook in list(getattr(threading, "_threading_atexits", ())):
            hook()
        futures = _MODULES.get("concurrent.futures.thread")
        if futures is not None and getattr(futures, "_shutdown", False):
            futures._shutdown = False
        me = threading.current_thread()
        while True:
            waiting = [t for t in threading.enumerate()
                       if t is not me and not t.daemon and t.is_alive()]
            if not waiting:
                return
            for t in waiting:
                t.join()

    def _conclude(self, value, exc, max_output):
        """(status, result, error) of a snippet that returned a value, raised,
        replaced sys.stdout/err or uses pyplot: the user code that this
        still runs (repr, traceback, flushes, figures) is interruptible, and
        a ^C that stops it there is the snippet's KeyboardInterrupt."""
        result = None
        if exc is None and value is not None:
            self.ns["_"] = value
            result, exc = self._call_user(self._mime, value, max_output)
        if exc is None:
            status, error = "ok", None
        else:
            status = "error"
            error, failed = self._call_user(self._error, exc)
            if failed is not None:
                name = type(exc).__name__
                if isinstance(failed, KeyboardInterrupt):
                    name = "KeyboardInterrupt"   # stopped while its message was made
                error = {"name": name, "value": "<unprintable>", "traceback": []}
        out, err = self.std_streams
        if _SYS.get("stdout") is not out or _SYS.get("stderr") is not err:
            self._flush_user_stdio()
        if "ctypes" in _MODULES:
            self._flush_c_stdio()
        if "matplotlib.pyplot" in _MODULES:
            self._show_figures()
            self._flush_user_stdio()
        return status, result, error

    # -- requests
    def serve(self):
        """Main loop: read requests and run them in order, whatever user code does.
        Hit again and again while recovering (user code raising in every call
        the kernel makes, say: a sys.monitoring callback), it gives way to a
        fresh kernel rather than spin, or leave a result never sent."""
        while True:
            try:
                self._serve()
            except BaseException:            # hit again while recovering: go on
                try:
                    self._hit()
                except BaseException:
                    pass

    def _hit(self):
        now = _perf_ns()
        if now - self.hits_since > 10 ** 9:
            self.hits, self.hits_since = 0, now
        self.hits += 1
        if self.hits >= 100:
            os._exit(EXIT_NO_RESULT)

    def _serve(self):
        chan = self.chan
        owed = 0
        while True:
            try:
                if self.result_pending:
                    # An exception cut short even _stray (a tracer that user
                    # code put on its frame, say): the result is owed still.
                    owed += 1
                    if owed > 100:
                        os._exit(EXIT_NO_RESULT)
                    self._stray(self.pending, self.stray_exc)
                    continue
                owed = 0
                if (self.site is not None and not any(p[0] for p in chan.parts)
                        and not _readable(chan.req, 0 if self.snippets else SITE_WAIT)):
                    self.site.load()         # idle: the rest of a normal start-up
                seq, body, rest = chan.peek_request()
                if seq is None:
                    chan.parts = rest        # an interrupt line for a snippet that is over
                    continue
                req = _loads_request(*body)   # (stdin_b64: a view of the bytes read)
                body = None
                if self.home is None:        # (before any user code: its chdir moves not it)
                    self.home = _file_home()
                if req.get("op") in ("put", "get", "files", "remove"):
                    chan.parts = rest        # (a file op owes a reply, not a result)
                    self.file_op(seq, req)
                    continue
                if req.get("op") in ("complete", "is_complete"):
                    chan.parts = rest        # (a query owes a reply, not a result)
                    self.query(seq, req)
                    continue
                # Taken, and from here on an exception (a user's signal
                # handler) ends in a result: _stray sends it.  Until here one
                # makes the request read again.
                self.pending = (seq, req.get("max_output", DEFAULT_MAX_OUTPUT))
                self.stray_exc = None
                self.result_pending = True   # (3.10+: no handler runs
                chan.parts = rest            # between these two)
                # Tracebacks name the caller's id, not the relay's count
                # (they differ after a cancel, and after a restart).
                rid = req.get("id")
                self.exec_name = rid if type(rid) is int else seq
                self._as_file(req)
                self._take_input(req)
                self.execute(seq, req["code"], self.pending[1])
            except BaseException as exc:     # e.g. a user's signal handler firing in our code
                self.stray_exc = exc
                if not self.result_pending:  # (a request it cannot even take, again
                    self._hit()              # and again: a fresh kernel takes over)
                self._stray(self.pending, exc)

    def _stray(self, pending, exc):
        """An exception escaped into kernel code: the snippet still gets a result
        (retried, in case the same handler fires again; after a few tries
        without the traceback, which takes longest to make)."""
        self.armed, self.running = False, None
        if exc is None:                      # (lost on the way: see _serve)
            exc = RuntimeError("an exception in the kernel's own code cut the snippet short")
        if isinstance(exc, OSError) and pending is not None and self.result_pending:
            try:                             # RLIMIT_NOFILE below 3: no fd works,
                broken = os.sysconf("SC_OPEN_MAX") < 3   # not even select()
            except (OSError, ValueError):
                broken = False
            if broken:
                os._exit(EXIT_NO_FDS)        # a fresh kernel must take over
        line = None
        for attempt in range(100):
            try:
                if pending is None or not self.result_pending:
                    return
                if line is None:
                    error = {"name": type(exc).__name__, "value": "", "traceback": []}
                    if attempt < 5:
                        import traceback
                        error["value"] = str(exc)
                        error["traceback"] = traceback.format_exception(
                            type(exc), exc, exc.__traceback__)
                    limit = _frame_cap(pending[1] or 0) // 64
                    line = _dumps({"t": "result", "seq": pending[0], "status": "error",
                                   "result": None,
                                   "error": _fit_error(error, limit)}).encode("ascii") + b"\n"
                self.chan.write(line)
                self.result_pending = False
                self.stray_exc = None
            except BaseException:
                pass
        if self.result_pending:
            # Every try failed (user code broke what it needs, or raises in
            # all code that runs): rather than leave the relay waiting for
            # the timeout, give way to a fresh kernel.
            os._exit(EXIT_NO_RESULT)


# ---------------------------------------------------------------- boot

# @include kernel_site.py

def prepare():
    """In the fork template, once: what every kernel would otherwise pay for
    at its start (first uses that load or cache something), paid before the
    fork."""
    import _sitebuiltins                     # (for _DeferredSite)
    _sitebuiltins.Quitter
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        _OutStream(_FdSink(devnull, "<warm>", _TextBuffer("backslashreplace")),
                   encoding="utf-8", errors="backslashreplace")
    finally:
        os.close(devnull)


def standby_python():
    """The Python kernel.  A kernel kind is a function standby_<lang>() (the
    relay's template calls the one of its --lang; lang.c lists them).
    In a kernel forked ahead of need (a standby), before its pipes come:
    all of a kernel's start that does not need them, so that a restart
    waits for little more than the fds.  Returns start(req, msg, out, err, stdin),
    which puts the pipes in place and serves.  Until then fds 0-2 are
    /dev/null, and no user code has run in this process."""
    _signal.signal(_SIGINT, _signal.SIG_IGN)  # until the kernel is armed
    os.setsid()                              # no controlling terminal: /dev/tty fails
    chan = Channel()
    kernel = Kernel(chan)
    if sys.flags.no_site and "site" not in _MODULES:
        kernel.site = _DeferredSite(kernel)  # (the template has it, but not at first)
    kernel.warm()

    def start(req, msg, out, err, stdin):
        _TTY[0] = os.isatty(out)             # (--tty: a terminal of its own)
        chan.attach(req, msg)
        kernel.attach(out, err)
        kernel.stream_fd = _private(stdin)   # the run's stdin stream (kernel_input.py)
        chan.watch(kernel.flush_idle)
        chan.write(b"H%d %s\n" % (os.getpid(), sys.version.split()[0].encode("ascii", "replace")))
        while True:                          # (serve() returns only when hit in its
            try:                             # own except clause: a handler firing there)
                kernel.serve()
            except BaseException:
                pass
    return start


# @include kernel_bash.py

# The node kernel (kernel_node.js, started by kernel_node.py's standby_node()).
# @string _KERNEL_NODE_JS kernel_node.js
# @string _KERNEL_NODE_FILES_JS kernel_node_files.js
# @include kernel_node.py
