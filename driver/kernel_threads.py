"""Threads and where their output goes: each thread stamped with the snippet
that started it, so that what it prints later is late output of that snippet.

Not a module: a part of the Kernel class (a mixin), joined into kernel.py
where it says "# @include kernel_threads.py"; it uses kernel.py's globals.
"""
# ---- kernel_threads.py: joined into kernel.py at build time (driver_join.py, "# @include")


class _ThreadRouting:
    """Which snippet a thread works for, and its late output."""

    # -- threads and output routing
    def _stamp(self):
        """The snippet that the calling thread works for (None: no snippet)."""
        ident = _get_ident()
        if ident == self.main_ident:
            return self.running
        return self._thread_stamp(ident, self.running)

    def _thread_stamp(self, ident, default):
        """The stamp of thread ident, or default.  (Not current_thread(),
        which would leave a _DummyThread behind for a _thread thread.)"""
        threading = _MODULES.get("threading")
        thread = None if threading is None else threading._active.get(ident)
        if thread is None:
            return self.raw_stamps.get(ident, default)
        return getattr(thread, STAMP, default)

    def _patch_thread_start(self):
        """Threads carry the snippet that started them (STAMP): what they write
        once it is over is its late output, not the running snippet's.  So
        does pool work, whose thread an earlier snippet may have started.
        threading.Thread.start is patched once threading is imported (an
        import hook, and a look before each snippet in case it was missed)."""
        threading = _MODULES.get("threading")
        if threading is not None:
            self._patch_threading(threading)
        else:
            sys.meta_path.insert(0, _OnImport("threading", self._patch_threading))
        self._patch_raw_threads()

    def _patch_threading(self, threading):
        """(Again whenever threading.Thread.start is not ours: a reload of
        threading makes a new Thread class.)"""
        original, driver = threading.Thread.start, self
        if getattr(original, "_ptybox", False):
            return

        def start(thread, *args, **kwargs):
            """Stamp the thread with the snippet that starts it, then start it."""
            try:
                setattr(thread, STAMP, driver._stamp())
            except Exception:
                pass
            if not driver.pool_patched and "concurrent.futures.thread" in _MODULES:
                driver._patch_pool_submit()
            if not driver.thread_pool_patched and "multiprocessing.pool" in _MODULES:
                driver._patch_thread_pool()
            return original(thread, *args, **kwargs)

        start.__wrapped__, start._ptybox = original, True
        threading.Thread.start = start

    def _patch_raw_threads(self):
        raw_start, driver = _thread.start_new_thread, self

        def start_new_thread(function, args, kwargs=None):
            """The same stamp for a thread started without threading."""
            if not callable(function):
                raise TypeError("first arg must be callable")
            stamp = driver._stamp()

            def run(*a, **k):
                ident = _get_ident()
                driver.raw_stamps[ident] = stamp
                try:
                    return function(*a, **k)
                finally:
                    driver.raw_stamps.pop(ident, None)
            return raw_start(run, args) if kwargs is None else raw_start(run, args, kwargs)

        start_new_thread.__wrapped__ = raw_start
        _thread.start_new_thread = _thread.start_new = start_new_thread

    def _patch_pool_submit(self):
        """ThreadPoolExecutor (and asyncio's run_in_executor, to_thread): work
        runs under the stamp of the snippet that submitted it, whichever
        snippet started the worker.  Patched when its first worker starts:
        that first work item was submitted by the worker's own snippet."""
        self.pool_patched = True
        try:
            cls = _MODULES["concurrent.futures.thread"].ThreadPoolExecutor
            original = cls.submit
        except Exception:
            return
        driver = self

        def submit(self, fn, /, *args, **kwargs):
            return original(self, _stamped_call, driver._stamp(), fn, *args, **kwargs)

        submit.__wrapped__ = original
        submit.__doc__ = original.__doc__
        cls.submit = submit

    def _patch_thread_pool(self):
        """multiprocessing.pool.ThreadPool (multiprocessing.dummy.Pool): the
        same for its work and for the callbacks its result thread runs (the
        methods that every other one goes through).  Only the thread pool:
        a process pool pickles what it is given."""
        self.thread_pool_patched = True
        try:
            cls = _MODULES["multiprocessing.pool"].ThreadPool
            apply_async, map_async = cls.apply_async, cls._map_async
            imap, imap_unordered = cls.imap, cls.imap_unordered
            from _functools import partial
        except Exception:
            return
        driver = self

        def stamped(stamp, fn):
            return None if fn is None else partial(_stamped_call, stamp, fn)

        def patched_apply_async(self, func, args=(), kwds={}, callback=None,
                                error_callback=None):
            stamp = driver._stamp()
            return apply_async(self, stamped(stamp, func), args, kwds, stamped(stamp, callback),
                               stamped(stamp, error_callback))

        def patched_map_async(self, func, iterable, mapper, chunksize=None, callback=None,
                              error_callback=None):
            stamp = driver._stamp()
            return map_async(self, stamped(stamp, func), iterable, mapper, chunksize,
                             stamped(stamp, callback), stamped(stamp, error_callback))

        def patched_imap(self, func, iterable, chunksize=1):
            return imap(self, stamped(driver._stamp(), func), iterable, chunksize)

        def patched_imap_unordered(self, func, iterable, chunksize=1):
            return imap_unordered(self, stamped(driver._stamp(), func), iterable, chunksize)

        for name, fn, original in (("apply_async", patched_apply_async, apply_async),
                                   ("_map_async", patched_map_async, map_async),
                                   ("imap", patched_imap, imap),
                                   ("imap_unordered", patched_imap_unordered, imap_unordered)):
            fn.__wrapped__, fn.__doc__ = original, original.__doc__
            setattr(cls, name, fn)

    def _route(self):
        """_PIPE for writes of the running snippet, else the id to report late."""
        running, ident = self.running, _get_ident()
        if ident == self.main_ident:
            return _PIPE if running is not None else self.last_id
        stamp = self._thread_stamp(ident, _UNSTAMPED)
        if running is not None and (stamp is _UNSTAMPED or stamp == running):
            return _PIPE
        return self.last_id if stamp is _UNSTAMPED or stamp is None else stamp

    def _late_write(self, sid, name, text):
        """Text a thread of snippet sid wrote after it ended: a message of its
        own (the relay bounds what it forwards of a period's late output)."""
        if self.late_lock._is_owned():
            return                           # a handler printing inside a late write
        with self.late_lock:
            self.chan.send({"t": "late", "seq": sid, "name": name,
                            "text": _cap_text(text, self.max_output)})
