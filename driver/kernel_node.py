"""The node kernel's start: standby_node(), which execs node on kernel_node.js.

Not a module: joined into kernel.py where it says "# @include kernel_node.py"
(driver_join.py); _KERNEL_NODE_JS is kernel_node.js's text, put in by
driver_join.py where kernel.py says "# @string _KERNEL_NODE_JS kernel_node.js":
the JavaScript comes over the terminal with the driver, as the Python does,
and never from a file on the host.

The kernel process is the standby itself: start() puts the relay's fds where
kernel_node.js expects them and execs node in place, so the pid the template
reported, its process group (the relay's SIGINT and kill) and its exit (the
died frame, a restart with state_lost) are node's.  The source goes in on an
fd of its own (a memory file, a pipe where there is none), not on the
command line: ps would show it, and argv strings are capped at 128 KiB.
The file ops (kernel_node_files.js, _KERNEL_NODE_FILES_JS) go in where
kernel_node.js says "// @include kernel_node_files.js": one closure.
"""
# ---- kernel_node.py: joined into kernel.py at build time (driver_join.py, "# @include")

NODE_PATHS = ("/usr/bin/node", "/usr/bin/nodejs", "/usr/local/bin/node")
NODE_SOURCE_FD = 6
NODE_FILES_MARK = "  // @include kernel_node_files.js\n"   # (in kernel_node.js: the file ops)
F_SETPIPE_SZ_KERNEL = getattr(fcntl, "F_SETPIPE_SZ", 1031)
# Reads the kernel from its fd, closes it and runs it as one function of
# require; its frames are named ptybox-kernel (kernel_node.js leaves them
# out of a snippet's stack).
# The hello names the driver's Python, as every kernel's does (the ready
# frame's "python": ptybox-protocol(7)), not node's.
NODE_BOOT = ("const f=require('fs');const s=f.readFileSync(%d,'utf8');f.closeSync(%d);"
             "require('vm').runInThisContext(s,{filename:'ptybox-kernel'})(require,%%r)"
             % (NODE_SOURCE_FD, NODE_SOURCE_FD))


def _node_path():
    for p in NODE_PATHS:
        if os.access(p, os.X_OK):
            return p
    return None


def _node_source_fd():
    """An fd at offset 0 that reads kernel_node.js, then end of file."""
    data = _KERNEL_NODE_JS.replace(NODE_FILES_MARK, _KERNEL_NODE_FILES_JS, 1).encode("utf-8")
    try:
        fd = os.memfd_create("ptybox-node-kernel", 0)
    except (AttributeError, OSError):
        fd = None
    if fd is not None:
        view, done = memoryview(data), 0
        while done < len(data):
            done += os.write(fd, view[done:])
        os.lseek(fd, 0, os.SEEK_SET)
        return fd
    # (Linux before 3.17: a pipe made as large as the source, some 20 KiB;
    # one that cannot be is refused rather than left to block the write.)
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, F_SETPIPE_SZ_KERNEL, max(len(data), 4096))
    except OSError:
        pass
    fcntl.fcntl(w, fcntl.F_SETFL, os.O_NONBLOCK)
    try:
        if os.write(w, data) != len(data):
            raise OSError(errno.EFBIG, "the node kernel's source does not fit a pipe")
    finally:
        os.close(w)
    return r



def standby_node():
    """In a kernel forked ahead of need: what node's start needs that the
    fds do not (node itself cannot be started before them: its fds 1 and 2
    must be the capture pipes, and node has no way to take fds later).
    Returns start(req, msg, out, err, stdin), which execs node."""
    _signal.signal(_SIGINT, _signal.SIG_IGN)  # until node's own handler is in (exec keeps it)
    os.setsid()                              # no controlling terminal: /dev/tty fails
    node = _node_path()
    source = _node_source_fd()
    python = "".join(c for c in sys.version.split()[0] if c.isalnum() or c in ".+-")
    argv = ["node", "--expose-internals", "--stack-trace-limit=50", "-e", NODE_BOOT % python]
    env = dict(os.environ)
    env.pop("NODE_OPTIONS", None)            # (the session's own flags are not the kernel's)

    def start(req, msg, out, err, stdin):
        if node is None:                     # no node here: the relay says the kernel died
            os.write(err, b"ptybox: no node here (looked for %s)\n"
                     % " ".join(NODE_PATHS).encode())
            os._exit(127)
        # Out of the way of 0-6 first, then into place.
        fds = [fcntl.fcntl(fd, F_DUPFD_CLOEXEC, 20) for fd in (req, msg, out, err, stdin, source)]
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for target, fd in zip((3, 4, 1, 2, 5, NODE_SOURCE_FD), fds):
            os.dup2(fd, target)              # (dup2's copy is inheritable)
        try:
            limit = os.sysconf("SC_OPEN_MAX")
        except (ValueError, OSError):
            limit = 1024
        os.closerange(NODE_SOURCE_FD + 1, max(limit, 1024))
        os.execve(node, argv, env)
    return start
