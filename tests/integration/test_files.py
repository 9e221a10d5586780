"""put, get, files and remove through `ptybox serve --stdio`, as a program
speaks to it: what the issue's "What it must survive" list asks (issue 16)."""
import base64
import hashlib
import os
import shutil
import tempfile
import time
import unittest

from ptybox_test import VIA, Serve, TestCase

ALL_BYTES = bytes(range(256)) + b"  \t\t \r\n~.=\x03\x10\x11\x13" + bytes(range(255, -1, -1)) + b" "

# What the tests have the session's code do, in each language (the class's
# lang): the file ops are the kernel's, and each kernel serves them.
CODE = {
    "python": {
        "cwd": "import os; os.getcwd()",
        "sha256": "import hashlib; hashlib.sha256(open(%r, 'rb').read()).hexdigest()",
        "chdir": "import os; os.makedirs(%r, exist_ok=True); os.chdir(%r)",
        "read": "open(%r).read()",
        "symlink": "import os; os.symlink(%r, %r)",
        "mkdir": "import os; os.mkdir(%r)",
        "mkfifo": "import os; os.mkfifo(%r)",
        "set": "x = 42",
        "get": "x",
        "rm": "import subprocess; subprocess.run(['rm', '-rf', %r])",
        "sleep": "import time; time.sleep(30)",
        "sum": "1 + 1",
        "grow": "import threading, itertools\n"
                "f = open('grow', 'wb', buffering=0); f.write(b'x' * (8 << 20))\n"
                "def more():\n"
                "    for _ in itertools.count(): f.write(b'y' * 65536)\n"
                "threading.Thread(target=more, daemon=True).start()",
        "grow_end": "f.close()",
        "many": "import os\n"
                "d = 'deep/' + '/'.join('d%d' % i + 'x' * 245 for i in range(15))\n"
                "os.makedirs(d)\n"
                "for i in range(10000):\n"
                "    open(d + '/' + str(i).zfill(6) + 'y' * 200, 'w').close()\n"
                "x = 42",
    },
    "node": {
        "cwd": "process.cwd()",
        "sha256": "require('crypto').createHash('sha256')"
                  ".update(require('fs').readFileSync(%r)).digest('hex')",
        "chdir": "require('fs').mkdirSync(%r, {recursive: true}); process.chdir(%r)",
        "read": "require('fs').readFileSync(%r, 'utf8')",
        "symlink": "require('fs').symlinkSync(%r, %r)",
        "mkdir": "require('fs').mkdirSync(%r)",
        "mkfifo": "require('child_process').execFileSync('mkfifo', [%r]); undefined",
        "set": "globalThis.x = 42",
        "get": "x",
        "rm": "require('child_process').execFileSync('rm', ['-rf', %r]); undefined",
        "sleep": "await new Promise(r => setTimeout(r, 30000))",
        "sum": "1 + 1",
        # (a worker thread writes on, as Python's thread does; small, for the
        # sandbox's RLIMIT_AS; some 64 MB/s, not GB/s: a busy machine's get
        # would find the file past the get's cap)
        "grow": "require('fs').writeFileSync('grow', 'x'.repeat(8 << 20));\n"
                "globalThis.w = new (require('worker_threads').Worker)("
                "\"const fs = require('fs'); const fd = fs.openSync('grow', 'a');"
                " const b = Buffer.alloc(65536, 121); const nap = new Int32Array(new SharedArrayBuffer(4));"
                " for (;;) { fs.writeSync(fd, b); Atomics.wait(nap, 0, 0, 1); }\","
                " {eval: true, resourceLimits: {maxOldGenerationSizeMb: 8, codeRangeSizeMb: 4}});\n"
                "while (require('fs').statSync('grow').size <= 8 << 20)"  # (it writes)
                " await new Promise(r => setTimeout(r, 5))",
        "grow_end": "w.terminate(); undefined",
        "many": "const fs = require('fs');\n"
                "let d = 'deep/' + Array.from({length: 15}, (_, i) => 'd' + i + 'x'.repeat(245))"
                ".join('/');\n"
                "fs.mkdirSync(d, {recursive: true});\n"
                "for (let i = 0; i < 10000; i++)"
                " fs.closeSync(fs.openSync(d + '/' + String(i).padStart(6, '0') + 'y'.repeat(200), 'w'));\n"
                "globalThis.x = 42",
    },
}


def code(lang, what, *args):
    text = CODE[lang][what]
    return text % args if args else text


class Files:
    """A session of serve --stdio and its file ops."""

    def __init__(self, *extra, via=None, cwd=None, lang="python"):
        self.s = Serve("--lang", lang, *extra, via=via, cwd=cwd)
        self.n, self.lang = 0, lang

    def ask(self, op, timeout=60, **members):
        self.n += 1
        self.s.send(dict(id=self.n, op=op, **members))
        return self.s.recv_result(self.n, timeout=timeout)

    def put(self, path, data, **members):
        return self.ask("put", path=path, data=base64.b64encode(data).decode(), **members)

    def get(self, path, **members):
        r = self.ask("get", path=path, **members)
        if "data" in r:
            r["bytes"] = base64.b64decode(r.pop("data"))
        return r

    def exec(self, what, *args, timeout=30):
        """The code CODE names what (args put in), in the session's language."""
        self.n += 1
        return self.s.exec(code(self.lang, what, *args), id=self.n, timeout=timeout)

    def close(self):
        self.s.close()


class FileOpsTest(TestCase):
    via = None                              # the tests' transport (PTYBOX_TEST_VIA)
    lang = "python"                         # the session's language (its kernel's file ops)

    def setUp(self):
        self.cwd = tempfile.mkdtemp()
        # (without a sandbox, /tmp is the host's: a folder of the test's own)
        extra = ("--workdir", self.cwd) if self.via == "none" else ()
        self.f = Files(*extra, via=self.via, cwd=self.cwd, lang=self.lang)
        # The start folder: /tmp in the sandbox, the server's cwd without one.
        self.home = self.f.exec("cwd")["result"]["text/plain"][1:-1]

    def tearDown(self):
        self.f.close()
        shutil.rmtree(self.cwd, ignore_errors=True)

    def test_every_byte_value_and_sizes_round_trip(self):
        for n in (0, 1, (1 << 20) - 1, 1 << 20, (1 << 20) + 1):
            data = os.urandom(n)
            r = self.f.put("d/f%d" % n, data)
            self.assertEqual((r["ok"], r["size"], r["path"]), (True, n, "%s/d/f%d" % (self.home, n)),
                             r)
            g = self.f.get("d/f%d" % n)
            self.assertEqual((g["ok"], g["length"], g["eof"], g["bytes"] == data), (True, n, True, True))
        self.assertTrue(self.f.put("all", ALL_BYTES)["ok"])
        self.assertEqual(self.f.get("all")["bytes"], ALL_BYTES)
        r = self.f.exec("sha256", "all")
        self.assertEqual(r["result"]["text/plain"][1:-1], hashlib.sha256(ALL_BYTES).hexdigest())

    def test_a_text_file_comes_back_whole(self):
        csv = b"".join(b"%d,%d,name %d\n" % (i, i * 7, i) for i in range(300000))
        self.assertTrue(self.f.put("t.csv", csv)["ok"])
        g = self.f.get("t.csv")
        self.assertEqual((g["length"], g["bytes"] == csv), (len(csv), True))

    def test_relative_paths_are_from_the_start_folder_and_dotdot_resolves(self):
        self.f.exec("chdir", "sub", "sub")
        r = self.f.put("a/../b.txt", b"b")
        self.assertEqual(r["path"], self.home + "/a/../b.txt")
        self.assertEqual(self.f.get(self.home + "/b.txt")["bytes"], b"b")
        self.assertEqual(self.f.get("b.txt")["bytes"], b"b")
        self.assertEqual(self.f.exec("read", "../b.txt")["result"]["text/plain"], "'b'")

    def test_files_and_remove(self):
        for p in ("w/b.txt", "w/a/x", "w/a/y/z"):
            self.assertTrue(self.f.put(p, b"12")["ok"])
        self.f.exec("symlink", "/", "w/l")
        r = self.f.ask("files", path="w")
        self.assertEqual((r["ok"], r["type"], r["cut"]), (True, "dir", False), r)
        self.assertEqual([(e["name"], e["type"], e["size"]) for e in r["entries"]][1:],
                         [("b.txt", "file", 2), ("l", "link", 1)])
        self.assertEqual(r["entries"][1]["mode"], 0o644)
        self.assertIsInstance(r["entries"][1]["mtime"], float)
        r = self.f.ask("files", path="w", recursive=True)
        self.assertEqual([e["name"] for e in r["entries"]],
                         ["a", "a/x", "a/y", "a/y/z", "b.txt", "l"])
        r = self.f.ask("files", path="w/b.txt")
        self.assertEqual((r["type"], [e["name"] for e in r["entries"]]), ("file", ["b.txt"]))
        self.assertEqual(self.f.ask("files")["path"], self.home)     # (path: "." by default)
        r = self.f.ask("remove", path="w/a")
        self.assertEqual((r.get("code"), r.get("errno")), ("file", "ENOTEMPTY"), r)
        self.assertTrue(self.f.ask("remove", path="w/a", recursive=True)["ok"])
        self.assertTrue(self.f.ask("remove", path="w/l")["ok"])      # the link, not /
        self.assertEqual([e["name"] for e in self.f.ask("files", path="w")["entries"]], ["b.txt"])
        r = self.f.ask("remove", path="w/none")
        self.assertEqual(r["errno"], "ENOENT")
        self.assertIn("remove: %s/w/none: No such file or directory" % self.home, r["error"])

    def test_chunked_upload_and_a_wrong_offset(self):
        r = self.f.put("up", b"abc", more=True)
        self.assertEqual((r["ok"], r["size"], r.get("more")), (True, 3, True), r)
        token = r["upload"]
        self.assertRegex(token, "^[0-9a-f]{32}$")
        self.assertEqual(self.f.get("up")["errno"], "ENOENT")        # not in place yet
        r = self.f.put("up", b"x", offset=5, upload=token)
        self.assertEqual((r["code"], r["errno"]), ("file", "EINVAL"), r)
        self.assertIn("no upload %s of %s/up in progress at offset 5" % (token, self.home),
                      r["error"])
        r = self.f.put("up", b"x", offset=3)                         # (no token)
        self.assertEqual((r["code"], r["errno"]), ("file", "EINVAL"), r)
        self.assertIn('needs its "upload"', r["error"])
        r = self.f.put("up", b"def", offset=3, more=True, upload=token)
        self.assertEqual((r["ok"], r["upload"]), (True, token), r)
        r = self.f.put("up", b"g", offset=6, mode=0o600, upload=token)
        self.assertEqual((r["ok"], r["size"]), (True, 7))
        g = self.f.get("up")
        self.assertEqual((g["bytes"], g["mode"]), (b"abcdefg", 0o600))
        names = [e["name"] for e in self.f.ask("files")["entries"]]
        self.assertFalse([n for n in names if ".ptybox-" in n and n != ".ptybox-packages"],
                         names)
        # A put at offset 0 is one of its own; an abort drops an upload.
        token = self.f.put("up2", b"old", more=True)["upload"]
        self.assertTrue(self.f.put("up2", b"new")["ok"])
        self.assertEqual(self.f.get("up2")["bytes"], b"new")
        r = self.f.ask("put", path="up2", upload=token, abort=True)
        self.assertTrue(r["ok"], r)
        r = self.f.put("up2", b"more", offset=3, upload=token)
        self.assertEqual(r["errno"], "EINVAL", r)
        names = [e["name"] for e in self.f.ask("files")["entries"]]
        self.assertFalse([n for n in names if ".ptybox-" in n and n != ".ptybox-packages"],
                         names)

    def test_two_uploads_to_one_path_do_not_mix(self):
        a = self.f.put("both", b"AAA", more=True)["upload"]
        b = self.f.put("both", b"BBBB", more=True)["upload"]
        self.assertNotEqual(a, b)
        self.assertTrue(self.f.put("both", b"bb", offset=4, upload=b)["ok"])
        self.assertEqual(self.f.get("both")["bytes"], b"BBBBbb")
        self.assertTrue(self.f.put("both", b"aa", offset=3, upload=a)["ok"])
        self.assertEqual(self.f.get("both")["bytes"], b"AAAaa")
        r = self.f.ask("put", path="both", upload="xyz", data="")
        self.assertEqual(r.get("code"), "usage", r)

    def test_a_put_of_a_2000_folder_path_fails_or_works_and_the_session_goes_on(self):
        self.f.exec("set")
        deep = "%s/" % self.home + "a/" * ((4000 - len(self.home)) // 2) + "b"
        r = self.f.put(deep, b"hello")
        self.assertIn(r.get("ok", r.get("errno")), (True, "ENAMETOOLONG"), r)
        r = self.f.exec("get", timeout=10)
        self.assertEqual((r["status"], r["result"]["text/plain"]), ("ok", "42"), r)
        self.assertTrue(self.f.put("after", b"data")["ok"])
        self.assertEqual(self.f.get("after")["bytes"], b"data")
        # (rmtree recurses too deep for it: rm)
        self.f.exec("rm", self.home + "/a")

    def test_a_255_byte_name_of_any_script_goes_in(self):
        for name in ("\u00e9" * 127 + "x", "\u4e2d" * 85, "\U0001f600" * 63 + "abc"):
            self.assertEqual(len(name.encode()), 255)
            r = self.f.put(name, b"data")
            self.assertTrue(r.get("ok"), r)
            self.assertEqual(self.f.get(name)["bytes"], b"data")
            self.assertTrue(self.f.ask("remove", path=name)["ok"])

    def test_a_put_to_a_folders_name_is_eisdir(self):
        self.assertTrue(self.f.put("f", b"x")["ok"])
        self.f.exec("mkdir", "adir")
        for path in ("newdir/", "f/.", "f/", "adir", "adir/", ".", "/tmp/x/.."):
            r = self.f.put(path, b"y")
            self.assertEqual((r.get("code"), r.get("errno")), ("file", "EISDIR"), (path, r))
        names = sorted(e["name"] for e in self.f.ask("files")["entries"])
        self.assertNotIn("newdir", names)
        self.assertEqual(self.f.get("f")["bytes"], b"x")
        self.assertEqual(self.f.ask("files", path="adir")["type"], "dir")

    def test_a_put_under_a_file_is_enotdir(self):
        self.assertTrue(self.f.put("pf", b"x")["ok"])
        r = self.f.put("pf/c", b"y")
        self.assertEqual((r.get("code"), r.get("errno")), ("file", "ENOTDIR"), r)
        self.assertIn("Not a directory", r["error"])

    def test_get_of_special_files_ends_at_once(self):
        self.f.exec("mkfifo", "fifo")
        self.f.exec("mkdir", "folder")
        t0 = time.monotonic()
        for path, what in (("fifo", "a fifo"), ("folder", "a folder"),
                           ("/dev/zero", "a character device")):
            r = self.f.get(path, timeout=10)
            self.assertEqual(r["code"], "file", r)
            self.assertIn("not a regular file (%s)" % what, r["error"])
        self.assertLess(time.monotonic() - t0, 10)

    def test_get_of_a_growing_file(self):
        self.assertEqual(self.f.exec("grow")["status"], "ok")
        g = self.f.get("grow")
        self.assertTrue(g["ok"], g)
        self.assertEqual(len(g["bytes"]), g["length"])
        self.assertEqual(g["length"], g["size"])          # what it was at open, no more
        self.assertTrue(g["bytes"].startswith(b"x" * (8 << 20)))
        self.assertFalse(g["eof"])
        self.f.exec("grow_end")

    def test_max_get_and_ranges(self):
        extra = ("--workdir", self.cwd) if self.via == "none" else ()
        f = Files("--max-get", "1K", *extra, via=self.via, cwd=self.cwd, lang=self.lang)
        try:
            self.assertTrue(f.put("big", b"0123456789" * 200)["ok"])
            r = f.get("big")
            self.assertEqual((r["code"], r["errno"]), ("file", "EFBIG"), r)
            self.assertIn("is 2000 bytes, past --max-get 1024: ask for a range (offset, length)",
                          r["error"])
            r = f.get("big", offset=1995, length=100)
            self.assertEqual((r["bytes"], r["offset"], r["length"], r["eof"], r["size"]),
                             (b"56789", 1995, 5, True, 2000))
            r = f.get("big", offset=10, length=3)
            self.assertEqual((r["bytes"], r["eof"]), (b"012", False))
            self.assertEqual(f.get("big", length=2000)["errno"], "EFBIG")
        finally:
            f.close()

    def test_a_put_waits_for_the_running_snippet_and_its_interrupt_does_not_cut_it(self):
        self.f.s.send({"id": "run", "op": "exec", "code": code(self.lang, "sleep")})
        data = os.urandom(3 << 20)
        self.f.s.send({"id": "put", "op": "put", "path": "late.bin",
                       "data": base64.b64encode(data).decode()})
        self.f.s.send({"id": "int", "op": "interrupt"})
        got = {}
        while len(got) < 3:
            m = self.f.s.recv(60)
            got[m["id"]] = m
        self.assertEqual(got["run"]["status"], "interrupted")
        self.assertEqual((got["put"]["ok"], got["put"]["size"]), (True, len(data)), got["put"])
        self.assertEqual(self.f.get("late.bin")["bytes"], data)

    def test_gets_and_snippets_sent_at_once_answer_in_order_and_whole(self):
        # A get's frames go to the terminal from a queue of the relay's, the
        # next file op is sent before the last one's answer is made: what
        # follows a get (a snippet's output and result, the next get) comes
        # after it, and every byte of each.
        data = os.urandom(5 << 20)
        self.assertTrue(self.f.put("five.bin", data, timeout=60)["ok"])
        first = self.f.n + 1
        reqs = [dict(op="get", path="five.bin"),
                dict(op="exec", code=code(self.lang, "sum")),
                dict(op="get", path="five.bin", offset=1 << 20, length=3 << 20),
                dict(op="get", path="five.bin"),
                dict(op="exec", code=code(self.lang, "set"))]
        for k, r in enumerate(reqs):
            self.f.s.send(dict(id=first + k, **r))
        self.f.n += len(reqs)
        order, replies = [], {}
        deadline = time.monotonic() + 120
        while len(replies) < len(reqs):
            msg = self.f.s.recv(max(0.01, deadline - time.monotonic()))
            if msg.get("event") or msg.get("id") not in range(first, first + len(reqs)):
                continue
            order.append(msg["id"])
            replies[msg["id"]] = msg
        self.assertEqual(order, list(range(first, first + len(reqs))))
        self.assertEqual(base64.b64decode(replies[first]["data"]), data)
        self.assertEqual(replies[first + 1]["result"]["text/plain"], "2")
        self.assertEqual(base64.b64decode(replies[first + 2]["data"]), data[1 << 20:4 << 20])
        self.assertEqual(base64.b64decode(replies[first + 3]["data"]), data)
        self.assertEqual(replies[first + 4].get("status"), "ok", replies[first + 4])

    def test_usage_errors_for_bad_members(self):
        for op, members, says in (
                ("put", {"path": "x"}, "put needs \"data\""),
                ("put", {"path": "x", "data": "!!"}, "not base64"),
                ("put", {"path": "x", "data": "", "mode": 99999}, "\"mode\""),
                ("put", {"path": "", "data": ""}, "\"path\""),
                ("get", {"path": "x", "offset": -1}, "\"offset\""),
                ("get", {"path": "x", "length": "3"}, "\"length\""),
                ("get", {"path": "x", "lenght": 3}, "unknown member 'lenght'"),
                ("files", {"recursive": 1}, "\"recursive\""),
                ("remove", {}, "remove needs \"path\""),
                ("get", {"path": "a\u0000b"}, "NUL")):
            r = self.f.ask(op, **members)
            self.assertEqual(r.get("code"), "usage", (op, members, r))
            self.assertIn(says, r["error"])
        self.assertEqual(self.f.exec("sum")["result"], {"text/plain": "2"})


class BigPutLineTest(TestCase):
    """A put line from 64 KiB on has its "data" cut out before the rest is
    parsed, and decoded straight into the terminal's lines (server.c,
    server_files.c): it must say and do what the whole line parsed says."""

    def setUp(self):
        self.f = Files()

    def tearDown(self):
        self.f.close()

    def line(self, id, b64, before=b'', after=b''):
        return (b'{"id":"%s",%s"op":"put","path":"big.bin","data":"' % (id.encode(), before)
                + b64 + b'"' + after + b'}')

    def test_a_big_put_line_lands_whole_whatever_its_members_order(self):
        data = os.urandom(3 << 20) + ALL_BYTES
        b64 = base64.b64encode(data)
        # The data after the other members and before them, and unpadded.
        for i, (before, after, enc) in enumerate(((b'"mode":384,', b'', b64),
                                                  (b'', b',"mode":384', b64),
                                                  (b'', b',"more":false ', b64.rstrip(b"=")))):
            self.f.s.send(self.line("p%d" % i, enc, before, after))
            r = self.f.s.recv_result("p%d" % i, timeout=60)
            self.assertEqual((r.get("ok"), r.get("size")), (True, len(data)), r)
            self.assertEqual(self.f.get("big.bin")["bytes"], data)
        # A member the put does not take is named, as for any line.
        self.f.s.send(self.line("u", b64, b'"x":{"data":"no"},'))
        r = self.f.s.recv_result("u", timeout=60)
        self.assertIn("unknown member 'x'", r["error"])

    def test_escaped_slashes_go_the_parsers_way_and_land(self):
        data = os.urandom(200 << 10)
        self.f.s.send(self.line("s", base64.b64encode(data).replace(b"/", b"\\/")))
        r = self.f.s.recv_result("s", timeout=60)
        self.assertEqual((r.get("ok"), r.get("size")), (True, len(data)), r)
        self.assertEqual(self.f.get("big.bin")["bytes"], data)

    def test_bad_base64_in_a_big_line_is_a_usage_error_and_nothing_lands(self):
        b64 = bytearray(base64.b64encode(os.urandom(300 << 10)))
        for id, bad, says in (("b", b"!!!!", "not base64"), ("p", b"QQ==", "not base64")):
            enc = bytearray(b64)
            enc[200 << 10:(200 << 10) + 4] = bad
            self.f.s.send(self.line(id, bytes(enc)))
            r = self.f.s.recv_result(id, timeout=60)
            self.assertEqual(r.get("code"), "usage", r)
            self.assertIn(says, r["error"])
        enc = bytearray(b64)
        enc[100 << 10] = 0xff                    # (not UTF-8: the line is malformed)
        self.f.s.send(self.line("m", bytes(enc)))
        r = self.f.s.recv(60)
        self.assertEqual(r.get("code"), "malformed", r)
        self.assertEqual(self.f.get("big.bin").get("errno"), "ENOENT")
        # A big line with "data" that is not a put is read as it came.
        self.f.s.send(b'{"id":"e","op":"exec","code":"1+1","data":"' + bytes(b64) + b'"}')
        r = self.f.s.recv_result("e", timeout=60)
        self.assertIn("unknown member 'data'", r["error"])
        self.assertEqual(self.f.exec("sum")["result"], {"text/plain": "2"})


class FileOpsWithoutSandboxTest(FileOpsTest):
    via = "none"


class NodeFileOpsTest(FileOpsTest):
    lang = "node"


class NodeFileOpsWithoutSandboxTest(FileOpsTest):
    via, lang = "none", "node"


@unittest.skipIf(VIA != "local", "the local sandbox's own limits")
class SandboxedFileOpsTest(TestCase):
    lang = "python"

    def test_a_put_larger_than_tmp_is_enospc_and_leaves_nothing(self):
        f = Files("--tmp-size", "8M", via="local", lang=self.lang)
        try:
            r = f.put("huge.bin", os.urandom(12 << 20))
            self.assertEqual((r["code"], r["errno"]), ("file", "ENOSPC"), r)
            self.assertIn("No space left on device", r["error"])
            names = [e["name"] for e in f.ask("files", path="/tmp")["entries"]]
            self.assertFalse([n for n in names if ("ptybox-" in n and n != ".ptybox-packages")
                          or n == "huge.bin"], names)
            self.assertTrue(f.put("small", b"ok")["ok"])           # the session goes on
            self.assertEqual(f.exec("read", "/tmp/small")["result"], {"text/plain": "'ok'"})
        finally:
            f.close()

    def test_links_and_proc_self_root_see_what_the_code_sees(self):
        host = tempfile.mkdtemp()
        try:
            with open(os.path.join(host, "secret"), "w") as fh:
                fh.write("host")
            f = Files(via="local", lang=self.lang)
            try:
                f.exec("symlink", host, "/tmp/out")
                r = f.get("/tmp/out/secret")
                self.assertEqual(r["errno"], "ENOENT", r)          # nothing of the host
                self.assertEqual(f.get("/proc/self/root%s/secret" % host)["errno"], "ENOENT")
                self.assertTrue(f.put("/tmp/mine", b"m")["ok"])
                self.assertEqual(f.get("/proc/self/root/tmp/mine")["bytes"], b"m")
                r = f.put("/proc/self/root/usr/evil", b"x")        # read-only for the code too
                self.assertIn(r["errno"], ("EROFS", "EACCES", "EPERM"), r)
                r = f.put("/tmp/out/new", b"x")
                self.assertEqual(r["code"], "file", r)
                self.assertEqual(os.listdir(host), ["secret"])
                r = f.get("/etc/shadow")
                self.assertIn(r.get("errno"), ("EACCES", "ENOENT"), r)
            finally:
                f.close()
        finally:
            shutil.rmtree(host, ignore_errors=True)

    def test_100_mb_round_trip_in_chunks(self):
        f = Files(via="local", lang=self.lang)
        try:
            data = os.urandom(100 * 10 ** 6)
            chunk = 16 << 20
            for at in range(0, len(data), chunk):
                last = at + chunk >= len(data)
                r = f.put("big.bin", data[at:at + chunk], offset=at, more=not last,
                          timeout=120, **({"upload": r["upload"]} if at else {}))
                self.assertTrue(r["ok"], r)
            self.assertEqual(r["size"], len(data))
            got = []
            for at in range(0, len(data), chunk):
                r = f.get("big.bin", offset=at, length=chunk, timeout=120)
                got.append(r["bytes"])
            self.assertTrue(r["eof"])
            self.assertEqual(hashlib.sha256(b"".join(got)).hexdigest(),
                             hashlib.sha256(data).hexdigest())
        finally:
            f.close()

    def test_a_listing_past_the_relays_line_cap_is_cut_and_keeps_state(self):
        # 10,000 entries of ~4 KB names: 40 MB of JSON, past the relay's
        # 32 MiB cap for a line (by default), far under the 100,000-entry cap.
        f = Files(via="local", lang=self.lang)
        self.addCleanup(f.close)
        r = f.exec("many", timeout=120)
        self.assertEqual(r["status"], "ok", r)
        t0 = time.monotonic()
        r = f.ask("files", path="deep", recursive=True, timeout=60)
        self.assertEqual((r["ok"], r["cut"]), (True, True), {k: r[k] for k in r if k != "entries"})
        self.assertLess(time.monotonic() - t0, 20)
        self.assertTrue(1000 < len(r["entries"]) < 10016, len(r["entries"]))
        r = f.exec("get")
        self.assertEqual((r["status"], r["result"]["text/plain"]), ("ok", "42"), r)

    def test_a_transfer_longer_than_the_timeout_keeps_the_state(self):
        # (the timeout bounds a snippet; a put has 1 s more a MiB, a get's
        # every chunk restarts it)
        f = Files("--timeout", "1", via="local", lang=self.lang)
        self.addCleanup(f.close)
        f.exec("set")
        data = os.urandom(60 << 20)
        t0 = time.monotonic()
        r = f.put("big.bin", data, timeout=120)
        took = time.monotonic() - t0
        self.assertTrue(r["ok"], r)
        t0 = time.monotonic()
        g = f.get("big.bin", timeout=120)
        took = max(took, time.monotonic() - t0)
        self.assertTrue(g["ok"], {k: g[k] for k in g if k != "bytes"})
        self.assertEqual(hashlib.sha256(g["bytes"]).digest(), hashlib.sha256(data).digest())
        r = f.exec("get")
        self.assertEqual((r["status"], r["result"]["text/plain"], r.get("state_lost")),
                         ("ok", "42", False), r)
        print("(60 MB put/get: %.1f s at most, --timeout 1)" % took)


@unittest.skipIf(VIA != "local", "the local sandbox's own limits")
class NodeSandboxedFileOpsTest(SandboxedFileOpsTest):
    lang = "node"


if __name__ == "__main__":
    unittest.main()
