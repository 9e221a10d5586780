"""The file ops: put, get, files and remove, run between snippets with the
code's own rights and the code's own view of the filesystem (ptybox-protocol(7),
FILES).

Not a module: a part of the Kernel class (a mixin), joined into kernel.py
where it says "# @include kernel_files.py"; it uses kernel.py's globals.

Relative paths are relative to the folder the kernel started in (recorded
before any user code ran: a snippet's os.chdir does not move it).  A put
writes a temporary file beside its target (O_EXCL, 0600) and renames it into
place: atomic, and nothing half-written is left whatever fails.  A chunked
upload ("more") keeps its temporary file open here, keyed by a random token
its first reply gives ("upload"), until the put without "more" or with
"abort"; it dies with the kernel, or after FILE_IDLE seconds unused.

Wire (relay -> kernel, after the X header of a put): "D<len>\\n" + len raw
bytes, until the put's size; "A\\n" drops the put (its data was cut short).
Kernel -> relay: "D<seq> <len>\\n" + raw bytes (a get's data, at most
FILE_CHUNK each), then {"t":"file","seq":..,"ok":..}.
"""
# ---- kernel_files.py: joined into kernel.py at build time (driver_join.py, "# @include")

FILE_CHUNK = 1 << 20              # bytes of a get's data message, at most
FILE_LIST_CAP = 10000             # entries of a folder listing ...
FILE_WALK_CAP = 100000            # ... and of a recursive one
FILE_LIST_BYTES = 12 << 20        # bytes of a listing's message, about: past it, "cut" (the
                                  # relay drops one past 24 MiB, at least)
FILE_PATH_MAX = 4096              # bytes of a path
FILE_UPLOADS = 64                 # unfinished uploads kept, at most (the oldest dropped)
FILE_IDLE = 600                   # seconds an unfinished upload is kept unused, at most
_FILE_TYPES = ((0o040000, "dir"), (0o100000, "file"), (0o120000, "link"), (0o010000, "fifo"),
               (0o140000, "socket"), (0o020000, "char"), (0o060000, "block"))


def _file_type(mode):
    kind = mode & 0o170000
    for bits, name in _FILE_TYPES:
        if kind == bits:
            return name
    return "unknown"


class _FileError(Exception):
    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code, self.message = code, message


def _file_oserror(op, path, e):
    code = errno.errorcode.get(e.errno, "EIO") if e.errno else "EIO"
    return _FileError(code, "%s: %s: %s" % (op, path, e.strerror or e))


def _umask():
    old = os.umask(0o22)
    os.umask(old)
    return old


class _Files:
    """put, get, files, remove (the relay checks the types of what it sends)."""

    def file_op(self, seq, req):
        """Runs file op req and sends its reply, whatever happens; a put's
        data is read off the request pipe whatever happens too (or the next
        request would be read from the middle of it)."""
        op = req.get("op")
        reply = None
        self.put_due = req.get("size", 0) if op == "put" else 0
        self.put_run = 0
        try:
            try:
                if self.home is None:
                    self.home = _file_home()
                path = req.get("path")
                if type(path) is not str or not path or "\0" in path or len(
                        path.encode("utf-8", "surrogateescape")) > FILE_PATH_MAX:
                    raise _FileError("EINVAL", "%s: a path must be 1 to %d bytes, without NUL"
                                     % (op, FILE_PATH_MAX))
                path = self._file_path(path)
                if op == "put":
                    reply = self._file_put(seq, path, req)
                elif op == "get":
                    reply = self._file_get(seq, path, req)
                elif op == "files":
                    reply = self._file_list(path, req.get("recursive") is True)
                elif op == "remove":
                    reply = self._file_remove(path, req.get("recursive") is True)
                else:
                    raise _FileError("EINVAL", "unknown file op %r" % (op,))
            finally:
                self._file_drain()
        except _FileError as e:
            reply = {"ok": False, "error": e.message, "errno": e.code}
        except OSError as e:
            reply = {"ok": False, "error": "%s: %s" % (op, e), "errno":
                     errno.errorcode.get(e.errno, "EIO") if e.errno else "EIO"}
        except BaseException as e:           # (a user's signal handler, RecursionError)
            reply = {"ok": False, "error": "%s: %s: %s" % (op, type(e).__name__, e),
                     "errno": "EIO"}
        reply["t"], reply["seq"] = "file", seq
        try:
            self.chan.send(reply)
        except BaseException:
            self.chan.send(reply)            # (once more: a handler fires once)

    def _file_drain(self):
        """What is left of a put's data, read and dropped."""
        while self.put_due:
            try:
                self._file_data(lambda piece: None)
            except _FileError:
                break                        # (the relay broke the wire: nothing to do)
            except BaseException:
                continue                     # (a signal handler's: it fires once)

    def _file_path(self, path):
        """path made absolute from the start folder; "." parts and doubled
        slashes gone, ".." kept (the filesystem resolves it, links and all)."""
        if not path.startswith("/"):
            path = self.home.rstrip("/") + "/" + path
        parts = [p for p in path.split("/") if p and p != "."]
        return "/" + "/".join(parts)

    # -- the request pipe's data lines
    def _file_data(self, sink):
        """The put's data still due (self.put_due bytes), each piece to
        sink(piece); False if the relay dropped the put ("A").  Where it is
        is kept in self (put_due, put_run): it goes on where an exception
        stopped it."""
        chan = self.chan
        while self.put_due > 0:
            if not self.put_run:
                head = self._file_line()
                if head == b"A":
                    self.put_due = 0
                    return False
                try:
                    n = int(head[1:]) if head[:1] == b"D" else 0
                except ValueError:
                    n = 0
                if not 0 < n <= self.put_due:
                    self.put_due = 0
                    raise _FileError("EIO", "put: the relay sent %r" % head[:16])
                self.put_run = n
            n = self.put_run
            if chan.parts and not chan.parts[0][0]:
                chan.parts.popleft()
                continue
            if chan.parts:
                b = chan.parts[0][0]
                if len(b) > n:
                    chan.parts[0] = (b[n:],)
                    b = b[:n]
                else:
                    chan.parts.popleft()
            else:
                b = self._file_read(n)
            self.put_run -= len(b)
            self.put_due -= len(b)
            sink(b)
        return True

    def _file_read(self, n):
        while True:
            try:
                b = os.read(self.chan.req, min(n, FILE_CHUNK))
            except InterruptedError:
                continue
            except BlockingIOError:
                select.select([self.chan.req], [], [], 1.0)
                continue
            except OSError:
                os._exit(EXIT_LOST_PIPE)
            if not b:
                os._exit(0)                  # the relay is gone
            return b

    def _file_line(self):
        chan = self.chan
        head = b""
        while True:
            while chan.parts:
                b = chan.parts.popleft()[0]
                i = b.find(b"\n")
                if i >= 0:
                    if i + 1 < len(b):
                        chan.parts.appendleft((b[i + 1:],))
                    return head + b[:i]
                head += b
                if len(head) > 64:
                    raise _FileError("EIO", "put: a data header of the relay's is too long")
            chan.parts.append((self._file_read(64),))

    # -- put
    def _file_put(self, seq, path, req):
        size, mode = req.get("size", 0), req.get("mode")
        offset, more = req.get("offset") or 0, req.get("more") is True
        token = req.get("upload")
        uploads = self.uploads
        _file_expire(uploads)
        if req.get("abort") is True:         # (unknown: gone already, fine)
            up = uploads.pop(token, None)
            if up is not None:
                _file_drop(up)
            return {"ok": True, "path": path, "size": 0}
        up = None
        failed = []
        fd = None

        def sink(piece):
            if failed:
                return
            try:
                view = memoryview(piece)
                while view:
                    view = view[os.write(fd, view):]
            except OSError as e:
                failed.append(e)

        try:
            if token is not None or offset:
                up = uploads.get(token)
                if up is None or up[3] != path or up[2] != offset:
                    up = None
                    raise _FileError("EINVAL", "put: no upload %s of %s in progress at offset "
                                     "%d" % (token, path, offset) if token is not None else
                                     "put: a put at offset %d needs its \"upload\"" % offset)
                del uploads[token]
            folder, name = path.rsplit("/", 1)
            folder = folder or "/"
            if up is None:
                raw = req.get("path")            # (before "/." and "/" were taken off)
                if (not name or name in (".", "..") or raw.endswith("/") or raw in (".", "..")
                        or raw.endswith(("/.", "/.."))):
                    raise _FileError("EISDIR", "put: %s: Is a directory" % raw)
                try:
                    _file_folders(folder)
                    # (".NAME.ptybox-HEX" within NAME_MAX, 255 bytes: NAME cut
                    # to 160 bytes, not characters)
                    tmp = "%s/.%s.ptybox-%s" % (folder.rstrip("/"), _file_cut(name, 160),
                                                os.urandom(6).hex())
                    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
                                 | os.O_NOFOLLOW, 0o600)
                except OSError as e:
                    raise _file_oserror("put", path, e)
                up = [fd, tmp, 0, path, 0.0]
                token = os.urandom(16).hex()
            fd = up[0]
            if not self._file_data(sink):
                failed.append(OSError(errno.EIO, "its data was cut short on the way"))
            if failed:
                raise _file_oserror("put", path, failed[0])
            up[2] += size
            if more:
                up[4] = time.monotonic()
                uploads[token] = up          # (last: the oldest first)
                while len(uploads) > FILE_UPLOADS:
                    _file_drop(uploads.pop(next(iter(uploads))))
                up = None                    # (kept: not dropped below)
                return {"ok": True, "path": path, "size": offset + size, "more": True,
                        "upload": token}
            try:
                if mode is None:
                    try:
                        st = os.stat(path)
                        mode = st.st_mode & 0o7777 if st.st_mode & 0o170000 == 0o100000 \
                            else None
                    except OSError:
                        pass
                os.fchmod(fd, mode if mode is not None else 0o666 & ~_umask())
                total = up[2]
                os.close(fd)
                up[0] = None
                os.rename(up[1], path)
            except OSError as e:
                raise _file_oserror("put", path, e)
            up = None
            return {"ok": True, "path": path, "size": total}
        finally:
            if up is not None:
                _file_drop(up)

    # -- get
    def _file_get(self, seq, path, req):
        offset, length, cap = req.get("offset") or 0, req.get("length"), req.get("max") or 0
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        except OSError as e:
            raise _file_oserror("get", path, e)
        try:
            st = os.fstat(fd)
            kind = _file_type(st.st_mode)
            if kind != "file":
                raise _FileError("EISDIR" if kind == "dir" else "EINVAL",
                                 "get: %s: not a regular file (a %s)" % (path, {
                                     "dir": "folder", "char": "character device",
                                     "block": "block device"}.get(kind, kind)))
            size = st.st_size
            want = length if length is not None else max(0, size - offset)
            if cap and want > cap:
                raise _FileError("EFBIG", "get: %s is %d bytes, past --max-get %d: ask for a "
                                 "range (offset, length)" % (path, size, cap))
            sent, pos, eof = 0, offset, False
            head = b"D%d " % seq
            while sent < want:
                try:
                    data = os.pread(fd, min(FILE_CHUNK, want - sent), pos)
                except OSError as e:
                    raise _file_oserror("get", path, e)
                if not data:
                    eof = True
                    break
                self.chan.write(head + b"%d\n" % len(data) + data)
                sent += len(data)
                pos += len(data)
            if not eof:
                try:
                    eof = not os.pread(fd, 1, pos)
                except OSError:
                    pass
            return {"ok": True, "path": path, "size": size, "offset": offset,
                    "length": sent, "eof": eof, "mode": st.st_mode & 0o7777,
                    "mtime": st.st_mtime}
        finally:
            os.close(fd)

    # -- files
    def _file_list(self, path, recursive):
        try:
            kind = _file_type(os.stat(path).st_mode)
        except OSError as e:
            raise _file_oserror("files", path, e)
        entries, cut = [], False
        if kind != "dir":
            try:
                st = os.lstat(path)
            except OSError as e:
                raise _file_oserror("files", path, e)
            entries.append(_file_entry(path.rsplit("/", 1)[1] or "/", st))
            return {"ok": True, "path": path, "type": kind, "entries": entries, "cut": False}
        cap = FILE_WALK_CAP if recursive else FILE_LIST_CAP
        room = FILE_LIST_BYTES               # (names as JSON, and 100 bytes for the rest)
        folders = [("", path)]
        while folders and not cut:
            prefix, folder = folders.pop()
            try:
                with os.scandir(folder) as it:
                    for d in it:
                        if len(entries) >= cap:
                            cut = True
                            break
                        try:
                            st = d.stat(follow_symlinks=False)
                        except OSError:
                            continue         # (gone meanwhile)
                        room -= len(_dumps(prefix + d.name)) + 100
                        if room < 0:
                            cut = True
                            break
                        entries.append(_file_entry(prefix + d.name, st))
                        if recursive and st.st_mode & 0o170000 == 0o040000:
                            folders.append((prefix + d.name + "/", d.path))
            except OSError as e:
                if not prefix:
                    raise _file_oserror("files", path, e)
        entries.sort(key=lambda e: e["name"])
        return {"ok": True, "path": path, "type": kind, "entries": entries, "cut": cut}

    # -- remove
    def _file_remove(self, path, recursive):
        try:
            st = os.lstat(path)
            if st.st_mode & 0o170000 != 0o040000:
                os.unlink(path)
            elif recursive:
                import shutil
                failed = []
                shutil.rmtree(path, onerror=lambda f, p, e: failed.append(e[1]))
                if failed:
                    raise failed[0]
            else:
                os.rmdir(path)
        except OSError as e:
            raise _file_oserror("remove", getattr(e, "filename", None) or path, e)
        return {"ok": True, "path": path}


def _file_entry(name, st):
    return {"name": name, "type": _file_type(st.st_mode), "size": st.st_size,
            "mode": st.st_mode & 0o7777, "mtime": st.st_mtime}


def _file_expire(uploads):
    """Uploads idle for FILE_IDLE seconds dropped (their client went away)."""
    now = time.monotonic()
    for token in [t for t, up in uploads.items() if now - up[4] > FILE_IDLE]:
        _file_drop(uploads.pop(token))


def _file_drop(up):
    """An unfinished upload: its temporary file closed and removed."""
    if up[0] is not None:
        try:
            os.close(up[0])
        except OSError:
            pass
    try:
        os.unlink(up[1])
    except OSError:
        pass


def _file_cut(name, n):
    """name cut to at most n bytes (as the filesystem sees it), on a UTF-8
    character's boundary."""
    b = name.encode("utf-8", "surrogateescape")
    if len(b) <= n:
        return name
    b = b[:n]
    j = len(b) - 1                       # the last character's start
    while j > 0 and b[j] & 0xC0 == 0x80 and len(b) - j < 4:
        j -= 1
    lead = b[j]
    if lead >= 0xC0 and j + (2 if lead < 0xE0 else 3 if lead < 0xF0 else 4) > len(b):
        b = b[:j]                        # (it is incomplete)
    return b.decode("utf-8", "surrogateescape")


def _file_folders(folder):
    """The folders of an absolute path made, one by one (os.makedirs recurses:
    a 4096-byte path of 2,000 folders is past the recursion limit).  A part
    that is a file is left to the open after: ENOTDIR."""
    at = ""
    for part in folder.split("/")[1:]:
        at += "/" + part
        try:
            os.mkdir(at, 0o777)
        except FileExistsError:
            pass
        except OSError:
            if not os.path.isdir(at):        # (EACCES, EROFS of a folder there: fine)
                raise


def _file_home():
    try:
        return os.getcwd()
    except OSError:
        return "/"
