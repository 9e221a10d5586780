"""Pictures: rich output in JSON modes, saved files and printed paths in
human `run`, and inline images on a terminal that says it shows them."""
import base64
import fcntl
import json
import os
import re
import select
import signal
import struct
import subprocess
import tempfile
import termios
import threading
import time
import tty
import unittest
import zlib

from ptybox_test import PTYBOX, VIA, TestCase, run, run_json

PLOT = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "plt.figure(figsize=(3, 2), dpi=50)\nplt.plot([1, 3, 2])\nprint('drawn')\n")

# A snippet that defines Png(w, h): an object whose _repr_png_ is a real PNG
# of w x h pixels, made with zlib (no library needed in the sandbox).
PNG_CLASS = r'''
import os, struct, zlib
def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
class Png:
    def __init__(self, w, h, noise=False):
        self.w, self.h, self.noise = w, h, noise
    def _repr_png_(self):
        raw = b"".join(b"\0" + (os.urandom(3 * self.w) if self.noise else b"\x80\x20\xff" * self.w)
                       for _ in range(self.h))
        return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0))
                + _chunk(b"IDAT", zlib.compress(raw)) + _chunk(b"IEND", b""))
    def __repr__(self):
        return "Png(%d, %d)" % (self.w, self.h)
'''


def png_size(data):
    """(width, height) from a PNG's IHDR, checking the signature first."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise AssertionError("not a PNG: %r" % data[:16])
    return struct.unpack(">II", data[16:24])


def run_in(folder, *args, env=None, timeout=120):
    """`ptybox run ARGS` with folder as its current folder (where pictures go
    by default); stdout and stderr are pipes."""
    argv = [PTYBOX, "run", "--via", VIA, *args]
    return subprocess.run(argv, cwd=folder, capture_output=True, text=True, errors="replace",
                          timeout=timeout, env=env)


class PicturesInRun(TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.out = os.path.join(self.dir, "out")
        os.mkdir(self.out)

    def tearDown(self):
        self.tmp.cleanup()

    def files(self, folder=None):
        return sorted(os.listdir(folder or self.out))

    def test_matplotlib_plot_is_saved_and_its_path_printed_then_never_overwritten(self):
        p = run_in(self.dir, "--output-dir", self.out, "-c", PLOT)
        self.assertEqual(p.returncode, 0, p.stderr)
        first = os.path.join(self.out, "ptybox-1.png")
        self.assertEqual(p.stdout, "drawn\n%s\n" % first)  # (the path, not the figure's repr)
        self.assertEqual(self.files(), ["ptybox-1.png"])
        with open(first, "rb") as f:
            data = f.read()
        w, h = png_size(data)
        self.assertTrue(50 <= w <= 150 and 40 <= h <= 100, (w, h))  # 3x2 in at 50 dpi, cropped
        # the same snippet in JSON: the display's PNG is the same picture
        results, pj = run_json(PLOT)
        self.assertEqual(pj.returncode, 0, pj.stderr)
        (r,) = results
        self.assertEqual(len(r["display"]), 1, r)
        entry = r["display"][0]
        self.assertTrue(entry["text/plain"].startswith("<Figure size 150x100"), entry)
        self.assertEqual(png_size(base64.b64decode(entry["image/png"], validate=True)), (w, h))
        # a second run: ptybox-2.png, the first untouched
        p = run_in(self.dir, "--output-dir", self.out, "-c", PLOT)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "drawn\n%s\n" % os.path.join(self.out, "ptybox-2.png"))
        self.assertEqual(self.files(), ["ptybox-1.png", "ptybox-2.png"])
        with open(first, "rb") as f:
            self.assertEqual(f.read(), data)

    def test_a_figure_open_at_the_end_comes_after_the_value(self):
        # As Jupyter shows a cell's figures below its Out; a display() of
        # the code's own stays where it came.
        code = PLOT + PNG_CLASS + "display(Png(2, 2))\n'the value'"
        path = lambda n: os.path.join(self.out, "ptybox-%d.png" % n)
        p = run_in(self.dir, "--output-dir", self.out, "-c", code)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "drawn\n%s\n'the value'\n%s\n" % (path(1), path(2)))
        # The repl (through the server's display events) shows it so too.
        p = subprocess.run([PTYBOX, "repl", "--via", VIA, "--output-dir", self.out],
                           input="import matplotlib\nmatplotlib.use('Agg')\n"
                           "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2]); 'the value'\n",
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "'the value'\n%s\n" % path(3))

    def test_default_folder_is_the_current_one_and_existing_files_are_skipped(self):
        with open(os.path.join(self.dir, "ptybox-1.png"), "w") as f:
            f.write("mine")
        p = run_in(self.dir, "-c", PNG_CLASS + "Png(3, 2)")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "ptybox-2.png\n")
        with open(os.path.join(self.dir, "ptybox-1.png")) as f:
            self.assertEqual(f.read(), "mine")
        with open(os.path.join(self.dir, "ptybox-2.png"), "rb") as f:
            self.assertEqual(png_size(f.read()), (3, 2))

    def test_pictures_come_in_order_with_the_text(self):
        code = PNG_CLASS + ("print('a')\ndisplay(Png(4, 5))\nprint('b')\n"
                            "display(Png(6, 7), 'not a picture')\nPng(8, 9)")
        p = run_in(self.dir, "--output-dir", self.out, "-c", code)
        self.assertEqual(p.returncode, 0, p.stderr)
        path = lambda n: os.path.join(self.out, "ptybox-%d.png" % n)
        self.assertEqual(p.stdout, "a\n%s\nb\n%s\n'not a picture'\n%s\n" % (path(1), path(2), path(3)))
        for n, size in ((1, (4, 5)), (2, (6, 7)), (3, (8, 9))):
            with open(path(n), "rb") as f:
                self.assertEqual(png_size(f.read()), size)

    def test_svg_html_and_png_reprs(self):
        code = ("class Svg:\n    def _repr_svg_(self): return '<svg xmlns=\"http://www.w3.org/2000/svg\"/>'\n"
                "class Html:\n    def _repr_html_(self): return '<b>bold</b>'\n"
                "    def __repr__(self): return 'Html()'\n")
        p = run_in(self.dir, "--output-dir", self.out, "-c", code,
                   "-c", "Svg()", "-c", "Html()", "-c", PNG_CLASS + "display(Png(2, 2))")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.splitlines(), [os.path.join(self.out, "ptybox-1.svg"), "Html()",
                                                 os.path.join(self.out, "ptybox-2.png")])
        with open(os.path.join(self.out, "ptybox-1.svg")) as f:
            self.assertEqual(f.read(), '<svg xmlns="http://www.w3.org/2000/svg"/>')
        self.assertEqual(self.files(), ["ptybox-1.svg", "ptybox-2.png"])  # html is no picture
        results, pj = run_json(code, "Svg()", "Html()", "display(Html())",
                               PNG_CLASS + "display(Png(2, 3)); Png(1, 1)")
        self.assertEqual(pj.returncode, 0, pj.stderr)
        self.assertEqual(results[1]["result"]["image/svg+xml"],
                         '<svg xmlns="http://www.w3.org/2000/svg"/>')
        self.assertEqual(results[2]["result"], {"text/plain": "Html()", "text/html": "<b>bold</b>"})
        self.assertEqual(results[3]["display"], [{"text/plain": "Html()", "text/html": "<b>bold</b>"}])
        shown = results[4]["display"][0]
        self.assertEqual(png_size(base64.b64decode(shown["image/png"], validate=True)), (2, 3))
        self.assertEqual(png_size(base64.b64decode(results[4]["result"]["image/png"])), (1, 1))

    def test_a_repr_that_raises_or_returns_the_wrong_type_breaks_nothing(self):
        code = ("class Bad:\n    def _repr_png_(self): raise ValueError('no png')\n"
                "    def _repr_svg_(self): return 42\n"
                "    def __repr__(self): return 'Bad()'\n"
                "class Str:\n    def _repr_png_(self): return 'a str'\n"
                "    def __repr__(self): return 'Str()'\n"
                "class Lies:\n    def __getattr__(self, name): return lambda: b'x'\n"
                "    def __repr__(self): return 'Lies()'\n")
        p = run_in(self.dir, "--output-dir", self.out, "-c", code, "-c", "display(Bad()); Str()",
                   "-c", "Lies()", "-c", "print('still here')")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "Bad()\nStr()\nLies()\nstill here\n")
        self.assertIn("_repr_png_() of Bad raised ValueError: no png", p.stderr)
        self.assertIn("_repr_svg_() of Bad returned int, not str", p.stderr)
        self.assertIn("_repr_png_() of Str returned str, not bytes", p.stderr)
        self.assertEqual(self.files(), [])
        results, pj = run_json(code, "Bad()", "Str()", "Lies()")
        self.assertEqual([r["status"] for r in results], ["ok"] * 4)
        self.assertEqual(results[1]["result"], {"text/plain": "Bad()"})
        self.assertEqual(results[2]["result"], {"text/plain": "Str()"})
        self.assertEqual(results[3]["result"], {"text/plain": "Lies()"})

    def test_a_picture_over_the_output_cap_is_dropped_not_cut(self):
        code = ("import os\nclass Big:\n    def _repr_png_(self): return b'\\x89PNG' + os.urandom(8000)\n"
                "Big()")
        results, pj = run_json(code, extra=("--max-output", "2K"))
        (r,) = results
        self.assertEqual(r["status"], "ok", r)
        self.assertNotIn("image/png", r["result"])
        self.assertIn("image/png dropped", r["result"]["text/plain"])
        self.assertTrue(r["truncated"])

    def test_a_picture_that_cannot_be_saved_is_a_warning_not_a_failure(self):
        p = run_in(self.dir, "--output-dir", "/proc", "-c", PNG_CLASS + "display(Png(2, 2))",
                   "-c", "print('next')")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "Png(2, 2)\nnext\n")  # its text instead
        warnings = [l for l in p.stderr.splitlines() if "warning" in l]
        self.assertEqual(len(warnings), 1, p.stderr)
        self.assertRegex(warnings[0], r"^ptybox: warning: image/png not saved in /proc: ")

    def test_bad_output_dir_is_a_usage_error(self):
        for bad, why in (("/proc/no/such/folder", "No such file or directory"),
                         ("/etc/hostname", "Not a directory"), ("", "expected a folder")):
            p = run_in(self.dir, "--output-dir", bad, "-c", "1")
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertEqual(p.stdout, "")
            self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
            self.assertIn(why, p.stderr)
        # A missing one is made, parents and all (as ptybox(1)'s plots/ example needs).
        made = os.path.join(self.dir, "plots", "today")
        p = run_in(self.dir, "--output-dir", made, "-c", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.isdir(made))
        p = run("serve", "--stdio", "--no-inline-images", input="")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("only for run, repl and attach", p.stderr)

    def test_help_lists_the_options(self):
        p = run("run", "--help")
        self.assertIn("--output-dir DIR", p.stdout)
        self.assertIn("--no-inline-images", p.stdout)


# What a terminal that speaks kitty's graphics protocol answers to the probe,
# and what any terminal answers to DA1.
KITTY_OK = b"\033_Gi=31;OK\033\\"
DA1 = b"\033[?62;22c"


def run_on_terminal(args, answer=None, env_extra=None, during_probe=None, raw=True, timeout=120):
    """Runs `ptybox run ARGS` on a PTY of our own that is its controlling
    terminal (stdin, stdout and stderr), answering the probe with answer
    (None: never). during_probe(pid, master) runs once the query came, instead
    of answering. raw: the terminal in raw mode (the bytes read are the bytes
    written), else as a shell leaves it (^C is SIGINT). Returns (exit status, bytes the terminal got, its termios
    before, after)."""
    master, slave = os.openpty()
    if raw:
        tty.setraw(slave)
    before = termios.tcgetattr(slave)
    env = {k: v for k, v in os.environ.items()
           if k not in ("TMUX", "STY", "TERM_PROGRAM", "LC_TERMINAL")}
    env["TERM"] = "xterm-256color"
    env.update(env_extra or {})

    def own_terminal():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    p = subprocess.Popen([PTYBOX, "run", "--via", VIA, *args], stdin=slave, stdout=slave,
                         stderr=slave, env=env, preexec_fn=own_terminal)
    got, asked, deadline = b"", False, time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("ptybox did not end within %s s: %r" % (timeout, got))
            if select.select([master], [], [], min(left, 0.5))[0]:
                try:
                    chunk = os.read(master, 1 << 16)
                except OSError:
                    chunk = b""
                got += chunk
                if not asked and b"\033_Gi=31," in got and got.endswith(b"\033[c"):
                    asked = True
                    if during_probe:
                        during_probe(p.pid, master)
                    elif answer is not None:
                        os.write(master, answer)
            if p.poll() is not None:
                # what it wrote last, then the end (the slave is ours too: no EIO)
                while select.select([master], [], [], 0.2)[0]:
                    chunk = os.read(master, 1 << 16)
                    if not chunk:
                        break
                    got += chunk
                break
        return p.wait(), got, before, termios.tcgetattr(slave)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)
        os.close(slave)


def kitty_images(got):
    """The PNGs sent with kitty's protocol, each put together from its chunks;
    checks each command's form on the way."""
    images, current = [], None
    for keys, data in re.findall(rb"\033_G([^;\033]*);([^\033]*)\033\\", got):
        keys = dict(kv.split(b"=", 1) for kv in keys.split(b","))
        if current is None:
            assert keys.get(b"a") == b"T" and keys.get(b"f") == b"100", keys
            current = b""
        else:
            assert set(keys) == {b"m"}, keys
        assert len(data) <= 4096, len(data)
        current += data
        if keys.get(b"m", b"0") == b"0":
            images.append(base64.b64decode(current, validate=True))
            current = None
    assert current is None, "a kitty image without its m=0 command"
    return images


@unittest.skipUnless(hasattr(termios, "TIOCSCTTY"), "needs TIOCSCTTY")
class InlineImages(TestCase):
    CODE = PNG_CLASS + "print('a')\ndisplay(Png(5, 4))\nprint('b')"

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def saved(self, n=1):
        with open(os.path.join(self.dir, "ptybox-%d.png" % n), "rb") as f:
            return f.read()

    def test_kitty_gets_the_picture_inline_in_chunks(self):
        code = self.CODE + "\ndisplay(Png(80, 80, noise=True))"  # several chunks
        rc, got, before, after = run_on_terminal(["--output-dir", self.dir, "-c", code],
                                                 answer=KITTY_OK + DA1)
        self.assertEqual(rc, 0, got)
        self.assertEqual(before, after)
        self.assertEqual(got.count(b"\033_Gi=31,"), 1)  # asked once
        images = kitty_images(got[got.index(b"\033[c"):])
        self.assertEqual(images, [self.saved(1), self.saved(2)])
        self.assertGreater(got.count(b"\033_Gm=1;"), 1)
        # in order: text, picture, its path, text
        text = re.sub(rb"(\033_G[^\033]*\033\\)+", b"<img>", got[got.index(b"\033[c") + 3:])
        p1, p2 = (os.path.join(self.dir, "ptybox-%d.png" % n).encode() for n in (1, 2))
        self.assertTrue(text.endswith(b"a\n<img>\n%s\nb\n<img>\n%s\n" % (p1, p2)), text)

    def test_inside_tmux_or_screen_only_da1_is_asked(self):
        # tmux takes an APC (kitty's query) as the pane's title: every run in
        # a pane renamed it "Gi=31,s=1,v=1,a=q,..."
        for extra in ({"TMUX": "/tmp/tmux-0/default,1,0"}, {"STY": "1.pts-0.host"},
                      {"TERM": "tmux-256color"}, {"TERM": "screen"}):
            rc, got, before, after = run_on_terminal(
                ["--output-dir", self.dir, "-c", self.CODE], answer=DA1, env_extra=extra)
            self.assertEqual((rc, before), (0, after), extra)
            self.assertNotIn(b"\033_G", got, extra)
            self.assertEqual(got.count(b"\033[c"), 1, extra)

    def test_a_terminal_that_answers_only_da1_gets_no_image_bytes(self):
        rc, got, before, after = run_on_terminal(["--output-dir", self.dir, "-c", self.CODE],
                                                 answer=DA1)
        self.assertEqual(rc, 0, got)
        self.assertEqual(before, after)
        self.assertIn(b"\033_Gi=31,", got)  # it was asked
        self.assertEqual(kitty_images(got[got.index(b"\033[c"):]), [])
        self.assertNotIn(b"\033]1337", got)
        self.assertIn(os.path.join(self.dir, "ptybox-1.png").encode(), got)
        png_size(self.saved())

    def test_a_sixel_terminal_gets_sixel(self):
        code = self.CODE + "\nclass Junk:\n    def _repr_png_(self): return b'\\x89PNG\\r\\n\\x1a\\nJUNK' * 9\nJunk()"
        rc, got, before, after = run_on_terminal(["--output-dir", self.dir, "-c", code],
                                                 answer=b"\033[?62;4;22c")
        self.assertEqual(rc, 0, got)
        self.assertEqual(before, after)
        after_probe = got[got.index(b"\033[c") + 3:]
        self.assertNotIn(b"\033_G", after_probe)
        sixels = re.findall(rb"\033P[0-9;]*q([^\033]*)\033\\", after_probe)
        self.assertEqual(len(sixels), 1, got)  # the junk is saved, not shown
        self.assertTrue(sixels[0].startswith(b'"1;1;5;4'), sixels)  # raster: 5 x 4 pixels
        p1, p2 = (os.path.join(self.dir, "ptybox-%d.png" % n).encode() for n in (1, 2))
        self.assertTrue(re.fullmatch(rb"a\n\033P[^\033]*\033\\\n%s\nb\n%s\n" % (re.escape(p1), re.escape(p2)),
                                     after_probe),
                        after_probe)

    def test_a_png_bomb_is_saved_and_not_decoded_for_sixel(self):
        # A PNG of a few hundred KiB whose canvas is 8192 x 4097 pixels: the
        # sixel child would take seconds for each, and the terminal gets an
        # image larger than any window. It is saved; the small one is shown.
        code = (PNG_CLASS + "display(Png(8192, 4097))\nprint('a')\ndisplay(Png(5, 4))")
        rc, got, before, after = run_on_terminal(["--output-dir", self.dir, "-c", code],
                                                 answer=b"\033[?62;4;22c")
        self.assertEqual(rc, 0, got[-2000:])
        self.assertEqual(before, after)
        sixels = re.findall(rb"\033P[0-9;]*q([^\033]*)\033\\", got[got.index(b"\033[c") + 3:])
        self.assertEqual(len(sixels), 1, [x[:40] for x in sixels])
        self.assertTrue(sixels[0].startswith(b'"1;1;5;4'), sixels[0][:40])
        self.assertEqual(png_size(self.saved(1)), (8192, 4097))

    def test_no_inline_images_asks_nothing_and_sends_no_image(self):
        rc, got, before, after = run_on_terminal(
            ["--no-inline-images", "--output-dir", self.dir, "-c", self.CODE],
            answer=KITTY_OK + DA1)
        self.assertEqual(rc, 0, got)
        self.assertNotIn(b"\033_G", got)
        self.assertIn(os.path.join(self.dir, "ptybox-1.png").encode(), got)

    def test_a_terminal_that_never_answers_gets_no_image(self):
        rc, got, before, after = run_on_terminal(["--output-dir", self.dir, "-c", self.CODE])
        self.assertEqual(rc, 0, got)
        self.assertEqual(before, after)
        self.assertNotIn(b"\033_Ga=", got)
        self.assertIn(os.path.join(self.dir, "ptybox-1.png").encode(), got)

    def test_dumb_and_linux_terminals_are_not_asked(self):
        for term in ("dumb", "linux"):
            rc, got, before, after = run_on_terminal(
                ["--output-dir", self.dir, "-c", self.CODE], answer=KITTY_OK + DA1,
                env_extra={"TERM": term})
            self.assertEqual(rc, 0, got)
            self.assertNotIn(b"\033_G", got)
            self.assertNotIn(b"\033[c", got)

    def test_iterm2_is_known_by_its_environment(self):
        rc, got, before, after = run_on_terminal(["--output-dir", self.dir, "-c", self.CODE],
                                                 env_extra={"LC_TERMINAL": "iTerm2"})
        self.assertEqual(rc, 0, got)
        self.assertNotIn(b"\033_G", got)  # nothing asked
        m = re.search(rb"\033\]1337;File=inline=1;size=(\d+);preserveAspectRatio=1:([^\a]*)\a", got)
        self.assertIsNotNone(m, got)
        data = base64.b64decode(m.group(2), validate=True)
        self.assertEqual(data, self.saved())
        self.assertEqual(int(m.group(1)), len(data))

    def test_stdout_on_another_terminal_is_not_asked(self):
        # The answer would come on that terminal's input, which nothing of
        # ours reads: its shell would get it as if typed.
        m_in, s_in = os.openpty()
        m_out, s_out = os.openpty()
        env = dict(os.environ, TERM="xterm-256color")
        for k in ("TMUX", "STY", "TERM_PROGRAM", "LC_TERMINAL"):
            env.pop(k, None)

        def own_terminal():
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        try:
            p = subprocess.Popen([PTYBOX, "run", "--via", VIA, "--output-dir", self.dir, "-c",
                                  self.CODE], stdin=s_in, stdout=s_out, stderr=s_out, env=env,
                                 preexec_fn=own_terminal)
            got, deadline = b"", time.monotonic() + 60
            while p.poll() is None and time.monotonic() < deadline:
                if select.select([m_out], [], [], 0.2)[0]:
                    got += os.read(m_out, 1 << 16)
            while select.select([m_out], [], [], 0.2)[0]:
                got += os.read(m_out, 1 << 16)
            self.assertEqual(p.wait(timeout=10), 0, got)
            self.assertNotIn(b"\033[c", got)
            self.assertIn(os.path.join(self.dir, "ptybox-1.png").encode(), got)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            for fd in (m_in, s_in, m_out, s_out):
                os.close(fd)

    def test_a_terminal_that_answers_late_leaves_nothing_behind(self):
        # Over ssh the answer takes a round trip: one 300 ms late came after
        # the probe gave up, was echoed amid the output ("^[[?62;22c") and
        # left for the shell (or the repl's line editor) to read as typed.
        def late(pid, master):
            threading.Timer(0.3, lambda: os.write(master, DA1)).start()
        rc, got, before, after = run_on_terminal(
            ["--output-dir", self.dir, "-c", "import time; time.sleep(1); print('done')"],
            during_probe=late, raw=False, timeout=60)
        self.assertEqual((rc, before), (0, after))
        self.assertNotIn(b"62;22c", got)

    def test_signals_during_the_probe_leave_the_terminal_as_it_was(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            def stop(pid, master):
                if sig == signal.SIGINT:
                    os.write(master, b"\x03")  # the ^C key, as a person types it
                else:
                    os.kill(pid, sig)
            rc, got, before, after = run_on_terminal(
                ["--output-dir", self.dir, "-c", "import time; time.sleep(30)"],
                during_probe=stop, raw=False, timeout=60)
            self.assertEqual(before, after, sig)
            self.assertEqual(rc, 128 + sig if sig == signal.SIGTERM else 130, (sig, got))


if __name__ == "__main__":
    unittest.main()
