"""Top-level await: a snippet whose code is a coroutine's (kernel_cell.py)
runs to its end on the session's event loop, as IPython's autoawait runs a
cell: one loop kept for the session, made at first need (asyncio is slow to
import), a fresh one if user code closed it.  As in Jupyter, whose cells run
inside a loop, asyncio.create_task() and ensure_future() in a snippet without
await schedule on that loop (they would say "no running event loop"): such
tasks start as the snippet ends, go on whenever a snippet awaits, and are
kept (asyncio holds tasks weakly) until they end.  A snippet without await
runs no loop, so asyncio.run() in it works; in one with await it fails, as
in IPython ("cannot be called from a running event loop").  Tracebacks start
at the user's code, not in asyncio's machinery; a stopped await shows where
the code waited.

Not a module: a part of the Kernel class (a mixin), joined into kernel.py
where it says "# @include kernel_async.py"; it uses kernel.py's globals.
"""
# ---- kernel_async.py: joined into kernel.py at build time (driver_join.py, "# @include")


CANCEL_WAIT = 0.5                 # s an interrupted snippet's task has to end its handlers
AWAIT_DEPTH = 200                 # frames of a stopped await shown, at most


def _asyncio_dir():
    """The folder of asyncio's own files (with a separator), or None."""
    asyncio = _MODULES.get("asyncio")
    f = getattr(asyncio, "__file__", None)
    return f[:f.rfind(os.sep) + 1] if isinstance(f, str) and os.sep in f else None


def _awaited_traceback(task):
    """A traceback through the frames of task's coroutine where it is
    suspended, outermost first (each awaits the next), without asyncio's."""
    frames, c, aio = [], task.get_coro(), _asyncio_dir()
    while c is not None and len(frames) < AWAIT_DEPTH:
        f = getattr(c, "cr_frame", None) or getattr(c, "gi_frame", None)
        if f is None:
            break
        if not (aio and f.f_code.co_filename.startswith(aio)):
            frames.append(f)
        c = getattr(c, "cr_await", None) or getattr(c, "gi_yieldfrom", None)
    tb = None
    for f in reversed(frames):
        tb = _TracebackType(tb, f, f.f_lasti, f.f_lineno)
    return tb


class _Async:
    """The session's event loop."""

    def _aio_init(self):
        self.aio_loop = None                 # made at first need
        self.aio_tasks = set()               # started outside a loop: kept until done
        self.aio_ident = _get_ident()        # (the thread snippets run in)
        asyncio = _MODULES.get("asyncio")
        if asyncio is not None:
            self._aio_patch(asyncio)
        else:
            sys.meta_path.insert(0, _OnImport("asyncio", self._aio_patch))

    def _aio_session_loop(self):
        import asyncio
        loop = self.aio_loop
        if loop is None or loop.is_closed():
            loop = self.aio_loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)         # get_event_loop() in later snippets: this one
        return loop

    def _aio_patch(self, asyncio):
        """create_task and ensure_future outside a running loop, in the
        snippets' thread: on the session's loop (elsewhere: as they are)."""
        tasks, events, driver = asyncio.tasks, asyncio.events, self
        create, ensure = tasks.create_task, tasks.ensure_future
        if getattr(create, "_ptybox", False):
            return

        def outside():
            return events._get_running_loop() is None and _get_ident() == driver.aio_ident

        def create_task(coro, **kwargs):
            if not outside():
                return create(coro, **kwargs)
            task = driver._aio_session_loop().create_task(coro, **kwargs)
            driver.aio_tasks.add(task)
            task.add_done_callback(driver.aio_tasks.discard)
            return task

        def ensure_future(coro_or_future, *, loop=None):
            if loop is not None or not outside():
                return ensure(coro_or_future, loop=loop)
            future = ensure(coro_or_future, loop=driver._aio_session_loop())
            driver.aio_tasks.add(future)
            future.add_done_callback(driver.aio_tasks.discard)
            return future

        for new, old in ((create_task, create), (ensure_future, ensure)):
            new.__wrapped__, new._ptybox, new.__doc__ = old, True, old.__doc__
        tasks.create_task = asyncio.create_task = create_task
        tasks.ensure_future = asyncio.ensure_future = ensure_future

    def _aio_tick(self):
        """Tasks a snippet without await started run to their first wait, as
        the snippet ends (user code: the caller runs it interruptible)."""
        loop = self.aio_loop
        if (loop is None or not getattr(loop, "_ready", True) or loop.is_closed()
                or loop.is_running()):
            return
        import asyncio
        loop.run_until_complete(asyncio.sleep(0))

    def _await(self, coro):
        """coro run to its end on the session's loop: its value. This is
        user code (the caller runs it interruptible): a ^C raises in the loop,
        and the loop stays for the next snippet."""
        import asyncio
        loop = self._aio_session_loop()
        if loop.is_running():                # (run_forever() in a thread of the user's)
            coro.close()
            raise RuntimeError("the session's event loop is already running")
        task = loop.create_task(coro)
        try:
            return loop.run_until_complete(task)
        except BaseException as e:
            # Stopped (a ^C, a timeout): the snippet's task is cancelled now,
            # not resumed by the next snippet that awaits. Its handlers run
            # for a moment; a second ^C stops them. Its traceback is where
            # the code waited, not the loop's select().
            if not task.done():
                try:
                    e.__traceback__ = _awaited_traceback(task)
                except Exception:
                    pass
                task.cancel()
                try:
                    loop.run_until_complete(asyncio.wait({task}, timeout=CANCEL_WAIT))
                except Exception:
                    pass
            raise
