"""Files coming out of a session onto this machine while the session is hostile: cp
and run --get against a session whose code made the names, changed its kernel (which
answers the file ops) or, through a :rw mount of DST, put links in DST.

Most run against test_cp.py's stand-in server (it hands cp what such a session could);
the run --get ones against a real sandbox. From the attacker review (attacker-2, -3,
-4, -6) and the new user's (newuser-1, -5, -8, -10)."""
import base64
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from ptybox_test import PTYBOX, TestCase, run, run_tty
from test_cp import FakeServer

# OSC 0 (the window's title), OSC 52 (a write to the clipboard), clear the
# screen, and a C1 CSI: none of it may reach a terminal as it is.
HOSTILE = "\x1b]0;PWNED\x07\x1b]52;c;cHduZWQ=\x07\x1b[2J\u009b2J"
RAW = (b"\x1b]", b"\x07", b"\x1b[2J", "\u009b".encode())


def b64(data):
    return base64.b64encode(data).decode()


def listing(path, entries):
    return {"ok": True, "path": path, "type": "dir", "entries": entries, "cut": False}


def one_file(path, size):
    return {"ok": True, "path": path, "type": "file", "cut": False,
            "entries": [{"name": os.path.basename(path), "type": "file", "size": size,
                         "mode": 0o644, "mtime": 0}]}


def got(path, data, size=None, offset=0, eof=True):
    return {"ok": True, "path": path, "data": b64(data),
            "size": len(data) if size is None else size, "offset": offset,
            "length": len(data), "eof": eof, "mode": 0o644, "mtime": 0}


def not_here(req):
    return {"error": "%s: not here" % req["op"], "code": "usage"}


class Here(unittest.TestCase):
    def setUp(self):
        self.here = tempfile.mkdtemp(prefix="ptybox-cph-")
        self.addCleanup(shutil.rmtree, self.here, True)

    def fake(self, handler):
        fake = FakeServer(handler)
        self.addCleanup(fake.close)
        return fake

    def cp(self, handler, *args, timeout=60):
        return subprocess.run([PTYBOX, "cp", "-S", self.fake(handler).sock] + list(args),
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)


class CpNamesReachTheTerminal(Here):
    """cp's lines about the session's files name them: the session made those
    names, and the kernel that serves file requests (which the code can change)
    made the error texts. On a terminal they show escaped, as run's output
    does (attacker-2, newuser-1)."""

    def cp_tty(self, handler, *args):
        return run_tty("cp", "-S", self.fake(handler).sock, *args, timeout=60)

    def assertEscaped(self, text):
        for raw in RAW:
            self.assertNotIn(raw, text)
        self.assertIn(b"\\x1b]0;PWNED", text)
        self.assertIn(b"\\u009b2J", text)

    def test_skipped_names_show_escaped(self):
        entries = [
            {"name": "link" + HOSTILE, "type": "link", "size": 9, "mode": 0o777, "mtime": 0},
            {"name": "fifo" + HOSTILE, "type": "fifo", "size": 0, "mode": 0o644, "mtime": 0},
            {"name": "odd", "type": "fifo" + HOSTILE, "size": 0, "mode": 0o644, "mtime": 0},
        ]

        def handler(req):
            return listing("/tmp/t", entries) if req["op"] == "files" else not_here(req)

        rc, text, _ = self.cp_tty(handler, "s:/tmp/t", os.path.join(self.here, "out"))
        self.assertIn(b"a symbolic link, skipped", text)
        self.assertEscaped(text)
        self.assertEqual(text.count(b"\\x1b]0;PWNED"), 3, text)

    def test_an_error_text_from_the_session_shows_escaped(self):
        def handler(req):
            return {"error": "get: " + HOSTILE, "code": "file", "errno": "EWHAT"}

        rc, text, _ = self.cp_tty(handler, "s:/tmp/x", os.path.join(self.here, "x"))
        self.assertEqual(rc, 1, text)
        self.assertEscaped(text)

    def test_a_server_error_of_another_code_shows_escaped(self):
        def handler(req):
            return {"error": "files: " + HOSTILE, "code": "usage"}

        rc, text, _ = self.cp_tty(handler, "s:/tmp/x", os.path.join(self.here, "x"))
        self.assertNotEqual(rc, 0, text)
        self.assertEscaped(text)

    def test_to_a_pipe_the_names_are_as_they_are(self):
        # (as run's output: only a terminal's is filtered)
        entries = [{"name": "l\x1bx", "type": "link", "size": 9, "mode": 0o777, "mtime": 0}]

        def handler(req):
            return listing("/tmp/t", entries) if req["op"] == "files" else not_here(req)

        p = self.cp(handler, "s:/tmp/t", os.path.join(self.here, "out"))
        self.assertIn(b"s:/tmp/t/l\x1bx: a symbolic link, skipped", p.stderr)


class CpOutIsBounded(Here):
    """A get's size comes from the session's kernel, which the code can change:
    one that says the file keeps growing (eof false, a bigger size each time)
    must not write without end into the host's DST (attacker-3), nor one whose
    replies bring nothing and never end (newuser-5)."""

    LIMIT = 512 << 20

    def test_a_file_that_never_ends_is_not_copied_forever(self):
        piece = b64(bytes(1 << 20))

        def handler(req):
            if req["op"] == "files":
                return {"ok": True, "path": req["path"], "type": "file", "size": 16 << 20,
                        "mode": 0o644, "mtime": 0}
            if req["op"] != "get":
                return not_here(req)
            off = req.get("offset", 0)
            return {"ok": True, "path": req["path"], "data": piece, "size": off + (16 << 20),
                    "offset": off, "length": 1 << 20, "eof": False, "mode": 0o644, "mtime": 0}

        fake = self.fake(handler)
        dst = os.path.join(self.here, "results.csv")
        p = subprocess.Popen([PTYBOX, "cp", "-S", fake.sock, "s:/tmp/results.csv", dst],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        deadline, size = time.monotonic() + 60, 0
        try:
            while p.poll() is None and time.monotonic() < deadline:
                size = os.path.getsize(dst) if os.path.exists(dst) else 0
                if size > self.LIMIT:
                    break
                time.sleep(0.05)  # (polling the size of a file: nothing to await)
        finally:
            if p.poll() is None:
                p.kill()
            p.wait(10)
            p.stderr.close()
        self.assertLessEqual(size, self.LIMIT, "cp wrote past %d MiB" % (self.LIMIT >> 20))
        self.assertNotEqual(p.returncode, -9, "cp did not end within 60 s")

    def test_a_file_that_grew_is_cut_at_the_listed_size(self):
        def handler(req):
            if req["op"] == "files":
                return one_file("/tmp/log", 5)
            if req["op"] != "get":
                return not_here(req)
            off = req.get("offset", 0)
            data = (b"hello, and more since" * 10)[off:off + 64]
            return got(req["path"], data, size=1 << 40, offset=off, eof=False)

        dst = os.path.join(self.here, "log")
        p = self.cp(handler, "s:/tmp/log", dst)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stderr.decode(), "ptybox: cp: %s: grew while copied: cut at 5 bytes\n"
                         % dst)
        with open(dst, "rb") as f:
            self.assertEqual(f.read(), b"hello")

    def test_a_folder_file_past_its_listed_size_is_cut(self):
        entries = [{"name": "a", "type": "file", "size": 3, "mode": 0o644, "mtime": 0},
                   {"name": "b", "type": "file", "size": 2, "mode": 0o644, "mtime": 0}]

        def handler(req):
            if req["op"] == "files":
                return listing("/tmp/d", entries)
            data = {"/tmp/d/a": b"AAAAAAAAAA", "/tmp/d/b": b"BB"}[req["path"]]
            return got(req["path"], data)

        p = self.cp(handler, "s:/tmp/d", os.path.join(self.here, "d"))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(b"d/a: grew while copied: cut at 3 bytes", p.stderr)
        with open(os.path.join(self.here, "d", "a"), "rb") as f:
            self.assertEqual(f.read(), b"AAA")
        with open(os.path.join(self.here, "d", "b"), "rb") as f:
            self.assertEqual(f.read(), b"BB")

    def test_a_reply_with_no_bytes_and_no_end_is_an_error_at_once(self):
        def handler(req):
            if req["op"] == "files":
                return one_file("/tmp/ed/a", 1)
            off = req.get("offset", 0)
            return {"ok": True, "path": req["path"], "size": 1 << 50, "offset": off,
                    "length": 0, "eof": False, "mode": 0o644, "mtime": 0}

        t0 = time.monotonic()
        p = self.cp(handler, "s:/tmp/ed/a", os.path.join(self.here, "out.txt"), timeout=30)
        self.assertLess(time.monotonic() - t0, 10)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stderr.decode(),
                         "ptybox: cp: s:/tmp/ed/a: the session's reply to a get of 1 bytes at "
                         "offset 0 brought none and no end of file: it was not progress\n")

    def test_a_listing_past_max_size_copies_nothing(self):
        entries = [{"name": "sub", "type": "dir", "size": 0, "mode": 0o755, "mtime": 0}]
        entries += [{"name": "sub/f%d" % i, "type": "file", "size": 6 << 30, "mode": 0o644,
                     "mtime": 0} for i in range(3)]

        def handler(req):
            return listing("/tmp/d", entries) if req["op"] == "files" else not_here(req)

        fake = self.fake(handler)
        p = subprocess.run([PTYBOX, "cp", "-S", fake.sock, "s:/tmp/d", os.path.join(self.here, "d")],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(b"s:/tmp/d: 19327352832 bytes, more than cp's --max-size (17179869184 "
                      b"bytes): nothing copied", p.stderr)
        self.assertFalse([r for r in fake.requests if r["op"] == "get"])
        self.assertEqual(os.listdir(self.here), [])

    def test_max_size_can_be_raised_or_lowered(self):
        def handler(req):
            if req["op"] == "files":
                return one_file("/tmp/x", 5)
            return got(req["path"], b"12345")

        p = self.cp(handler, "--max-size", "4", "s:/tmp/x", os.path.join(self.here, "x"))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(b"more than cp's --max-size (4 bytes)", p.stderr)
        p = self.cp(handler, "--max-size", "1K", "s:/tmp/x", os.path.join(self.here, "x"))
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.cp(handler, "--max-size", "lots", "s:/tmp/x", os.path.join(self.here, "x"))
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stderr, b"ptybox: cp: --max-size lots: expected a size, e.g. 16G\n")


class CpOutStaysInsideDst(Here):
    """A session with a --mount HOST:PATH:rw can make links in HOST. cp out into
    HOST (results copied back into the project folder that was mounted) must not
    follow a link the session put there on the way to a file it writes: the
    name sub/authorized_keys, with sub a link to another folder of the host,
    wrote that folder's authorized_keys, as root (attacker-4)."""

    KEY = b"ssh-ed25519 AAAA attacker\n"

    def setUp(self):
        super().setUp()
        self.share, self.victim = os.path.join(self.here, "share"), os.path.join(self.here, "victim")
        os.makedirs(os.path.join(self.share, "d2"))
        os.makedirs(self.victim)

    def handler(self, entries):
        def handler(req):
            if req["op"] == "files":
                return listing("/tmp/d2", entries)
            if req["op"] == "get":
                return got(req["path"], self.KEY)
            return not_here(req)
        return handler

    def test_a_planted_link_on_the_way_is_not_followed(self):
        # What the session's code did through the :rw mount of share.
        os.symlink(self.victim, os.path.join(self.share, "d2", "sub"))
        entries = [
            {"name": "sub", "type": "dir", "size": 0, "mode": 0o755, "mtime": 0},
            {"name": "sub/deeper", "type": "dir", "size": 0, "mode": 0o755, "mtime": 0},
            {"name": "sub/authorized_keys", "type": "file", "size": len(self.KEY),
             "mode": 0o644, "mtime": 0},
            {"name": "sub/deeper/x", "type": "file", "size": len(self.KEY), "mode": 0o644,
             "mtime": 0},
            {"name": "ok", "type": "file", "size": len(self.KEY), "mode": 0o644, "mtime": 0},
        ]
        p = self.cp(self.handler(entries), "s:/tmp/d2", self.share)
        self.assertEqual(os.listdir(self.victim), [], p.stderr.decode())
        self.assertEqual(p.returncode, 1, p.stderr.decode())
        # one line for the folder, nothing for what was under it
        self.assertEqual(p.stderr.decode(), "ptybox: cp: %s/d2/sub: a symbolic link is there: "
                         "not followed\n" % self.share)
        with open(os.path.join(self.share, "d2", "ok"), "rb") as f:
            self.assertEqual(f.read(), self.KEY)

    def test_a_link_at_the_top_folder_is_not_followed(self):
        os.rmdir(os.path.join(self.share, "d2"))
        os.symlink(self.victim, os.path.join(self.share, "d2"))
        entries = [{"name": "authorized_keys", "type": "file", "size": len(self.KEY),
                    "mode": 0o644, "mtime": 0}]
        p = self.cp(self.handler(entries), "s:/tmp/d2", self.share)
        self.assertEqual(os.listdir(self.victim), [], p.stderr.decode())
        self.assertEqual(p.returncode, 1, p.stderr.decode())
        self.assertIn("d2: a symbolic link is there: not followed", p.stderr.decode())

    def test_a_link_at_a_file_name_is_not_followed(self):
        target = os.path.join(self.victim, "target")
        with open(target, "w") as f:
            f.write("the host's own\n")
        os.symlink(target, os.path.join(self.share, "d2", "f"))
        entries = [{"name": "f", "type": "file", "size": len(self.KEY), "mode": 0o644,
                    "mtime": 0}]
        p = self.cp(self.handler(entries), "s:/tmp/d2", self.share)
        self.assertEqual(p.returncode, 1, p.stderr.decode())
        self.assertEqual(p.stderr.decode(), "ptybox: cp: %s/d2/f: a symbolic link is there: "
                         "not followed\n" % self.share)
        with open(target) as f:
            self.assertEqual(f.read(), "the host's own\n")

    def test_a_fifo_at_a_file_name_does_not_hold_cp(self):
        os.mkfifo(os.path.join(self.share, "d2", "f"))
        entries = [{"name": "f", "type": "file", "size": len(self.KEY), "mode": 0o644,
                    "mtime": 0}]
        p = self.cp(self.handler(entries), "s:/tmp/d2", self.share, timeout=30)
        self.assertEqual(p.returncode, 1, p.stderr.decode())
        self.assertIn("d2/f: not a regular file is there: not written", p.stderr.decode())

    def test_a_folder_mode_is_not_set_through_a_link(self):
        # The folder is made, then (before its mode is set, at the end) swapped for a
        # link: the mode must not land on the link's target.
        os.chmod(self.victim, 0o700)
        entries = [{"name": "sub", "type": "dir", "size": 0, "mode": 0o777, "mtime": 0},
                   {"name": "sub/f", "type": "file", "size": len(self.KEY), "mode": 0o644,
                    "mtime": 0}]
        sub = os.path.join(self.share, "d2", "sub")

        def handler(req):
            if req["op"] == "files":
                return listing("/tmp/d2", entries)
            if req["op"] == "get":
                os.rename(sub, sub + ".real")
                os.symlink(self.victim, sub)
                return got(req["path"], self.KEY)
            return not_here(req)

        p = self.cp(handler, "s:/tmp/d2", self.share)
        self.assertEqual(p.returncode, 1, p.stderr.decode())
        self.assertEqual(os.stat(self.victim).st_mode & 0o777, 0o700)
        self.assertEqual(os.listdir(self.victim), [])

    def test_the_folder_cp_made_swapped_for_a_link_while_files_come(self):
        # attacker-7: cp makes share/d, the session renames it and puts a link to a
        # folder of the host there: neither a file nor a mode lands in that folder.
        os.rmdir(os.path.join(self.share, "d2"))
        os.makedirs(os.path.join(self.victim, "etc"))
        os.chmod(os.path.join(self.victim, "etc"), 0o755)
        entries = [{"name": "etc", "type": "dir", "size": 0, "mode": 0o777, "mtime": 0},
                   {"name": "etc/a", "type": "file", "size": len(self.KEY), "mode": 0o644,
                    "mtime": 0},
                   {"name": "etc/b", "type": "file", "size": len(self.KEY), "mode": 0o644,
                    "mtime": 0}]
        made = os.path.join(self.share, "d2")
        swapped = []

        def handler(req):
            if req["op"] == "files":
                return listing("/tmp/d2", entries)
            if req["op"] == "get":
                if not swapped:
                    os.rename(made, made + "_real")
                    os.symlink(self.victim, made)
                    swapped.append(made)
                return got(req["path"], self.KEY)
            return not_here(req)

        p = self.cp(handler, "s:/tmp/d2", self.share)
        self.assertTrue(swapped)
        self.assertEqual(p.returncode, 1, p.stderr.decode())
        self.assertEqual(os.stat(os.path.join(self.victim, "etc")).st_mode & 0o7777, 0o755)
        self.assertEqual(os.listdir(os.path.join(self.victim, "etc")), [])
        self.assertIn("d2: a symbolic link is there: not followed", p.stderr.decode())

    def test_a_single_file_onto_a_link_says_so(self):
        # newuser-8: the user's own link is not followed either, and that is said.
        target = os.path.join(self.victim, "target")
        link = os.path.join(self.here, "lnk.txt")
        os.symlink(target, link)

        def handler(req):
            if req["op"] == "files":
                return one_file("/tmp/lnk.txt", 3)
            return got(req["path"], b"abc")

        p = self.cp(handler, "s:/tmp/lnk.txt", link)
        self.assertEqual(p.returncode, 1, p.stderr.decode())
        self.assertEqual(p.stderr.decode(),
                         "ptybox: cp: %s: a symbolic link is there: not followed\n" % link)
        self.assertFalse(os.path.exists(target))


class CpInOntoAFile(Here):
    """newuser-10: a folder copied onto a file of the session is one clear line, as
    cp(1) says it, not the put's 'Not a directory' for a path inside it."""

    def test_a_folder_onto_an_existing_file(self):
        src = os.path.join(self.here, "sub")
        os.makedirs(src)
        with open(os.path.join(src, "b.txt"), "w") as f:
            f.write("b")

        def handler(req):
            if req["op"] == "files":
                return one_file("/tmp/some/file.txt", 4)
            return not_here(req)

        fake = self.fake(handler)
        p = subprocess.run([PTYBOX, "cp", "-S", fake.sock, src, "s:/tmp/some/file.txt"],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stderr, b"ptybox: cp: s:/tmp/some/file.txt: exists and is not a "
                         b"folder: a folder cannot replace it\n")
        self.assertFalse([r for r in fake.requests if r["op"] == "put"])


class CpInReadsOnlyTheWalkedFolder(Here):
    """Going in, cp walks the folder without following links, then opens each file
    later. A session with a :rw mount of that folder can swap one of its folders
    for a link in between: the file opened then was the link's, any file of the
    host cp may read (attacker-5). Now each file is opened as it was walked, and
    must be the file walked."""

    def test_a_folder_swapped_for_a_link_after_the_walk_is_not_followed(self):
        proj, victim = os.path.join(self.here, "proj"), os.path.join(self.here, "victim")
        os.makedirs(victim)
        secret = b"SECRET of the host\n"
        for name in ("a", "z"):
            os.makedirs(os.path.join(proj, name))
            with open(os.path.join(proj, name, "id_rsa"), "wb") as f:
                f.truncate(24 << 20)  # (three chunks: the next file is opened after)
        with open(os.path.join(victim, "id_rsa"), "wb") as f:
            f.write(secret)
        got, swapped = [], []

        def handler(req):
            if req["op"] == "files":
                return {"error": "files: %s: No such file or directory" % req["path"],
                        "code": "file", "errno": "ENOENT"}
            if req["op"] != "put":
                return not_here(req)
            data = base64.b64decode(req.get("data", ""))
            if req.get("offset", 0) == 0:
                got.append(data[:len(secret)])
            if not swapped:
                # What the session's daemon does through the mount, once the copy
                # has begun: the folder not yet copied becomes a link.
                other = "z" if req["path"].endswith("/a/id_rsa") else "a"
                os.rename(os.path.join(proj, other), os.path.join(proj, other + "_real"))
                os.symlink(victim, os.path.join(proj, other))
                swapped.append(other)
            reply = {"ok": True, "path": req["path"], "size": len(data)}
            if req.get("more"):
                reply["upload"] = req["path"]
            return reply

        p = self.cp(handler, proj, "s:/tmp/in")
        self.assertTrue(swapped, p.stderr.decode())
        self.assertNotIn(secret, got, "the host's file went into the session: %r %s" % (got, p.stderr))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(b"proj/%s: a symbolic link is there: not followed" % swapped[0].encode(),
                      p.stderr)

    def test_a_file_swapped_after_the_walk_is_not_read(self):
        proj = os.path.join(self.here, "proj")
        os.makedirs(proj)
        for name in ("a", "b"):
            with open(os.path.join(proj, name), "wb") as f:
                f.truncate(24 << 20)
        other = os.path.join(self.here, "other")
        with open(other, "wb") as f:
            f.write(b"another file")
        swapped = []

        def handler(req):
            if req["op"] == "files":
                return {"error": "files: %s: No such file or directory" % req["path"],
                        "code": "file", "errno": "ENOENT"}
            if not swapped:
                first = os.path.basename(req["path"])
                later = os.path.join(proj, "b" if first == "a" else "a")
                os.rename(other, later)  # (a hard link would do as well)
                swapped.append(later)
            reply = {"ok": True, "path": req["path"], "size": 0}
            if req.get("more"):
                reply["upload"] = req["path"]
            return reply

        p = self.cp(handler, proj, "s:/tmp/in")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(b"%s: changed while copied (not the file walked): not read\n"
                      % swapped[0].encode(), p.stderr)


class RunGetStaysInsideTheOutputDir(TestCase):
    """run --get writes PATH's copy into --output-dir under its own name. With the
    output folder mounted :rw (results written where the project is), the code
    can put a link at that name first: the copy went where the link points, over
    a file of the host (attacker-6). A link of the user's own there is not
    followed either, and that is said (newuser-8)."""

    def setUp(self):
        self.here = tempfile.mkdtemp(prefix="ptybox-cph-")
        self.addCleanup(shutil.rmtree, self.here, True)

    def test_a_link_the_code_put_at_the_name_is_not_followed(self):
        share, victim = os.path.join(self.here, "share"), os.path.join(self.here, "victim")
        os.makedirs(share)
        os.makedirs(victim)
        os.chmod(self.here, 0o755)
        os.chmod(share, 0o777)  # (the sandbox's user writes there)
        target = os.path.join(victim, "target")
        with open(target, "w") as f:
            f.write("the host's own\n")
        code = ("import os\n"
                "open('/tmp/r.txt', 'w').write('from the session\\n')\n"
                "os.symlink(%r, '/mnt/share/r.txt')\n" % target)
        p = run("run", "--mount", share + ":/mnt/share:rw", "--output-dir", share,
                "--get", "/tmp/r.txt", "-c", code)
        with open(target) as f:
            self.assertEqual(f.read(), "the host's own\n", p.stderr)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("ptybox: run: --get /tmp/r.txt: %s/r.txt: a symbolic link is there: "
                      "not followed\n" % share, p.stderr)

    def test_a_link_of_the_users_own_is_not_followed(self):
        target = os.path.join(self.here, "target.txt")
        os.symlink(target, os.path.join(self.here, "lnk.txt"))
        p = run("run", "--output-dir", self.here, "--get", "lnk.txt", "-c",
                "open('lnk.txt', 'w').write('via link')")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertFalse(os.path.exists(target))
        self.assertIn("lnk.txt: a symbolic link is there: not followed\n", p.stderr)

    def test_a_get_that_never_brings_bytes_ends_at_once(self):
        # newuser-5: the kernel's get says a huge size, brings nothing, never says eof.
        t0 = time.monotonic()
        p = run("run", "--output-dir", self.here, "--get", "/tmp/a", "-c",
                "open('/tmp/a', 'w').write('A')\n"
                "k = [o for o in __import__('gc').get_objects()\n"
                "     if hasattr(type(o), '_file_get')][0]\n"
                "def evil(seq, path, req):\n"
                "    return {'ok': True, 'path': path, 'size': 10**9,\n"
                "            'offset': req.get('offset') or 0, 'length': 0, 'eof': False,\n"
                "            'mode': 420, 'mtime': 0}\n"
                "k._file_get = evil\n", timeout=60)
        self.assertLess(time.monotonic() - t0, 30)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("ptybox: run: --get /tmp/a: the session's reply to a get of ", p.stderr)
        self.assertIn(" brought none and no end of file: it was not progress\n", p.stderr)
        self.assertEqual(os.listdir(self.here), [])

    def test_a_get_past_its_first_size_is_cut(self):
        # The first reply says 4 bytes; the next (asked for the rest of the range)
        # would bring more: what is written stops at 4, and that is said.
        p = run("run", "--output-dir", self.here, "--get", "/tmp/g", "-c",
                "open('/tmp/g', 'w').write('ABCDEFGH')\n"
                "k = [o for o in __import__('gc').get_objects()\n"
                "     if hasattr(type(o), '_file_get')][0]\n"
                "orig = k._file_get\n"
                "def lying(seq, path, req):\n"
                "    r = orig(seq, path, req)\n"
                "    r.update(size=4, eof=False)\n"
                "    return r\n"
                "k._file_get = lying\n", timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("ptybox: run: --get /tmp/g: grew while copied: cut at 4 bytes\n", p.stderr)
        with open(os.path.join(self.here, "g"), "rb") as f:
            self.assertEqual(f.read(), b"ABCD")


if __name__ == "__main__":
    unittest.main()
