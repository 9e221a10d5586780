"""Top-level await: a snippet whose code is a coroutine's (kernel_cell.py)
runs to its end on the session's event loop, as IPython's autoawait runs a
cell: one loop kept for the session (tasks a snippet started go on in the
next one that awaits), made at the first such snippet (asyncio is slow to
import), a fresh one if user code closed it.  A snippet without await runs
no loop, so asyncio.run() in it works; in one with await it fails, as in
IPython ("cannot be called from a running event loop").

Not a module: a part of the Kernel class (a mixin), joined into kernel.py
where it says "# @include kernel_async.py"; it uses kernel.py's globals.
"""
# ---- kernel_async.py: joined into kernel.py at build time (driver_join.py, "# @include")


CANCEL_WAIT = 0.5                 # s an interrupted snippet's task has to end its handlers


class _Async:
    """The session's event loop."""

    def _await(self, coro):
        """coro run to its end on the session's loop: its value. This is
        user code (the caller runs it interruptible): a ^C raises in the loop,
        and the loop stays for the next snippet."""
        import asyncio
        loop = self.aio_loop
        if loop is None or loop.is_closed():
            loop = self.aio_loop = asyncio.new_event_loop()
        if loop.is_running():                # (run_forever() in a thread of the user's)
            coro.close()
            raise RuntimeError("the session's event loop is already running")
        asyncio.set_event_loop(loop)         # get_event_loop() in later snippets: this one
        task = loop.create_task(coro)
        try:
            return loop.run_until_complete(task)
        except BaseException:
            # Stopped (a ^C, a timeout): the snippet's task is cancelled now,
            # not resumed by the next snippet that awaits. Its handlers run
            # for a moment; a second ^C stops them.
            if not task.done():
                task.cancel()
                try:
                    loop.run_until_complete(asyncio.wait({task}, timeout=CANCEL_WAIT))
                except Exception:
                    pass
            raise
