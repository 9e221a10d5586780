"""ptybox repl and ptybox attach, driven through a real terminal: tmux, with
send-keys and capture-pane; every wait is for what the screen shows, with a
deadline."""
import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
import unittest
import uuid

from ptybox_test import PTYBOX, VIA, TestCase, run

TMUX = shutil.which("tmux")


def processes_with(marker):
    """Pids of the processes whose environment holds marker (the
    interpreters of a session started with --env MARK=marker)."""
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % p, "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(p))
        except OSError:
            pass
    return found


class Terminal:
    """A tmux server of our own with one window of 100x30 running argv under
    a shell that ignores ^C and ^\\ (ptybox takes both for itself: they
    reach the whole foreground process group) and writes argv's exit status
    to a file once it ended."""

    def __init__(self, argv, env, folder, bare=False):
        self.sock = "ptybox-test-" + uuid.uuid4().hex[:12]
        self.env = dict(env)
        self.status_file = os.path.join(folder, "status-" + self.sock)
        conf = os.path.join(folder, "tmux.conf")
        with open(conf, "w") as f:
            f.write("set -g remain-on-exit on\nset -g status off\n")
        self.conf = conf
        cmd = " ".join("'%s'" % a.replace("'", "'\\''") for a in argv)
        shell = "trap '' INT QUIT; %s; echo $? > '%s'; exec sleep 600" % (cmd, self.status_file)
        # (bare: argv itself leads the terminal's session, as a program
        # started by a terminal emulator does; no exit status then)
        self.tmux("new-session", "-d", "-x", "100", "-y", "30",
                  *(argv if bare else ["sh", "-c", shell]))

    def tmux(self, *args):
        return subprocess.run([TMUX, "-L", self.sock, "-f", self.conf, *args],
                              capture_output=True, text=True, timeout=30, env=self.env)

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "0", *keys)

    def type(self, text):
        self.tmux("send-keys", "-t", "0", "-l", text)

    def screen(self, escapes=False):
        return self.tmux("capture-pane", "-p", "-t", "0", *(["-e"] if escapes else [])).stdout

    def wait(self, what, timeout=30, escapes=False, count=1):
        """The screen once it shows what (count times), or a failure that
        shows the screen."""
        deadline = time.monotonic() + timeout
        while True:
            s = self.screen(escapes)
            if s.count(what) >= count:
                return s
            if time.monotonic() > deadline:
                raise AssertionError("the screen never showed %r:\n%s" % (what, s))
            time.sleep(0.05)

    def exit_status(self, timeout=30):
        """The program's exit status, once it ended."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                with open(self.status_file) as f:
                    text = f.read()
                if text.endswith("\n"):
                    return int(text)
            except FileNotFoundError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("still running:\n" + self.screen())
            time.sleep(0.05)

    def close(self):
        self.tmux("kill-server")


@unittest.skipUnless(TMUX, "tmux is not installed")
class ReplTest(TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ptybox-repl-")
        self.state = os.path.join(self.dir, "state")
        self.env = dict(os.environ, XDG_STATE_HOME=self.state, TERM="xterm-256color")
        self.env.pop("NO_COLOR", None)
        self.terms = []

    def tearDown(self):
        for t in self.terms:
            t.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def repl(self, *extra, env=None):
        t = Terminal([PTYBOX, "repl", "--via", VIA, *extra], env or self.env, self.dir)
        self.terms.append(t)
        t.wait(">>>")
        return t

    def test_editing_multiline_history_and_completion(self):
        t = self.repl()
        t.type("ac")
        t.keys("Left")
        t.type("b")
        t.keys("Home")
        t.type("print('")
        t.keys("End")
        t.type("')")
        t.keys("Enter")
        t.wait("\nabc\n")
        # multi-line: a continuation prompt, the indent given, a blank line ends it
        t.type("def f():")
        t.keys("Enter")
        t.wait("...")
        t.type("return 41")
        t.keys("Enter")
        t.wait("...     return 41")
        t.keys("Enter")
        t.type("f() + 1")
        t.keys("Enter")
        t.wait("\n42\n")
        # history: Up brings the last line back
        t.keys("Up")
        t.wait(">>> f() + 1", count=2)
        t.keys("C-u")
        # completion from the live session: a name, then an attribute
        t.type("class K: pass")
        t.keys("Enter", "Enter")
        t.type("some_long_name = K(); some_long_name.alpha_beta = 7")
        t.keys("Enter")
        t.wait(">>>", count=6)
        t.type("some_lo")
        t.keys("Tab")
        t.wait(">>> some_long_name\n")
        t.type(".alp")
        t.keys("Tab")
        t.wait(">>> some_long_name.alpha_beta\n")
        t.keys("Enter")
        t.wait("\n7\n")
        # several matches: listed under the prompt
        t.type("some_long_name.alpha_beta2 = 1")
        t.keys("Enter")
        t.type("some_long_name.al")
        t.keys("Tab")  # as far as both agree, then the list
        t.wait(">>> some_long_name.alpha_beta\n")
        t.keys("Tab")
        t.wait("alpha_beta  ")
        s = t.wait("alpha_beta2")
        self.assertIn(">>> some_long_name.alpha_beta", s.rsplit("alpha_beta2", 1)[1])

    def test_non_ascii_typed_is_kept_whatever_the_locale_says(self):
        # libedit drops multibyte keys outside a UTF-8 LC_CTYPE: "héllo"
        # typed became "hllo", with LANG=C.UTF-8 too, before setlocale
        for lang in ("C.UTF-8", None):
            env = dict(self.env)
            for k in ("LANG", "LC_ALL", "LC_CTYPE"):
                env.pop(k, None)
            if lang:
                env["LANG"] = lang
            t = self.repl(env=env)
            t.type('s = "h\u00e9llo \u2713 \u65e5\u672c"')
            t.keys("Enter")
            t.type("len(s), s.encode()")
            t.keys("Enter")
            t.wait("(10, b'h\\xc3\\xa9llo \\xe2\\x9c\\x93 \\xe6\\x97\\xa5\\xe6\\x9c\\xac')")
            t.keys("C-d")
            self.assertEqual(t.exit_status(), 0)
    def test_a_pasted_block_keeps_its_own_indentation(self):
        # A paste brings its indentation: the continuation prompt's own on
        # top put each line deeper than the one before (IndentationError).
        t = self.repl()
        t.type("def f():\n    x = 1\n    if x:\n        y = 2\n    return y + 40\n\n")
        t.wait(">>>", count=2)
        t.type("f()")
        t.keys("Enter")
        s = t.wait("\n42\n")
        self.assertNotIn("IndentationError", s)
        # typed line by line, the indentation is still given
        t.type("def g():")
        t.keys("Enter")
        t.wait("... ")
        t.type("return 7")
        t.keys("Enter", "Enter")
        t.wait(">>>", count=4)
        t.type("g()")
        t.keys("Enter")
        t.wait("\n7\n")

    def test_an_indented_paste_runs_as_one_block(self):
        # The repl turns bracketed paste on: tmux's paste-buffer -p brackets
        # a paste only for a program that asked. Line by line, the block
        # indented as a whole failed at its second line.
        t = self.repl()
        t.tmux("set-buffer", "    z = 2\n    if z:\n        print(z * 21)\n")
        t.tmux("paste-buffer", "-p", "-t", "0")
        s = t.wait("\n42\n")
        self.assertNotIn("Error", s)
        self.assertIn(">>>     z = 2\n...     if z:\n...         print(z * 21)\n", s)
        t.wait(">>>", count=2)
        # The escapes themselves, as a terminal sends them unasked, never
        # reach the code; a paste's last line without its newline is left to edit.
        t.type("\x1b[200~w = 'bp'\nw +\x1b[201~")
        t.wait(">>> w = 'bp'\n... w +")
        t.type(" '!'")
        t.keys("Enter")
        s = t.wait("'bp!'")
        self.assertNotIn("0~", s)
        self.assertNotIn("1~", s)
        # A paste within a line is typed into it.
        t.type("print(\x1b[200~'in'\x1b[201~)")
        t.keys("Enter")
        t.wait("\nin\n")
        t.keys("C-d")
        self.assertEqual(t.exit_status(), 0)

    def test_ctrl_c_interrupts_the_code_and_keeps_the_state(self):
        t = self.repl()
        t.type("kept = 'still here'")
        t.keys("Enter")
        t.type("while True: pass")
        t.keys("Enter", "Enter")
        t.wait("...")
        time.sleep(0.3)  # (let it spin: a ^C must stop running code, not a start)
        t.keys("C-c")
        t.wait("KeyboardInterrupt")
        t.type("kept")
        t.keys("Enter")
        t.wait("'still here'")
        # ^C at the prompt: the line goes, a fresh prompt comes
        t.type("this is not run")
        t.keys("C-c")
        t.type("1 + 1")
        t.keys("Enter")
        s = t.wait("\n2\n")
        self.assertNotIn("SyntaxError", s)

    def test_stderr_and_tracebacks_are_red_on_a_terminal_unless_no_color(self):
        for no_color in (False, True):
            env = dict(self.env, **({"NO_COLOR": "1"} if no_color else {}))
            t = self.repl(env=env)
            t.type("import sys; print('on stderr', file=sys.stderr)")
            t.keys("Enter")
            t.type("1/0")
            t.keys("Enter")
            s = t.wait("ZeroDivisionError", escapes=True)
            t.wait("on stderr")
            red = "\x1b[31m"
            if no_color:
                self.assertNotIn(red, s)
            else:
                self.assertIn(red + "on stderr", s)
                self.assertIn(red + "Traceback", s)

    def test_ctrl_d_leaves_the_sandbox_gone_and_history_kept_0600(self):
        mark = "PTYBOX_TEST_MARK=" + uuid.uuid4().hex
        t = self.repl("--env", mark)
        t.type("remembered = 12345")
        t.keys("Enter")
        t.wait(">>>", count=2)
        self.assertTrue(processes_with(mark), "the session's interpreter is not running")
        t.keys("C-d")
        self.assertEqual(t.exit_status(), 0)
        deadline = time.monotonic() + 10
        while processes_with(mark) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(processes_with(mark), [], "the sandbox outlived the repl")
        path = os.path.join(self.state, "ptybox", "history")
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        # a second run recalls the first one's line
        t2 = self.repl()
        t2.keys("Up")
        t2.wait(">>> remembered = 12345")

    def wait_gone(self, mark, why):
        deadline = time.monotonic() + 15
        while processes_with(mark) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(processes_with(mark), [], why)

    def test_closing_the_terminal_while_code_runs_ends_the_sandbox(self):
        # The terminal goes (a closed window, a dropped ssh): the repl's
        # next write fails and it exits; its serve must not go on running
        # the code (--timeout 0: until the end of time).
        mark = "PTYBOX_TEST_MARK=" + uuid.uuid4().hex
        t = Terminal([PTYBOX, "repl", "--via", VIA, "--timeout", "0", "--env", mark], self.env,
                     self.dir, bare=True)
        self.terms.append(t)
        t.wait(">>>")
        t.type("import time; print('sleeping'); time.sleep(1000)")
        t.keys("Enter")
        t.wait("sleeping")
        self.assertTrue(processes_with(mark), "the session's interpreter is not running")
        t.close()
        self.wait_gone(mark, "the sandbox outlived the closed terminal")

    def test_a_killed_repl_leaves_no_sandbox_behind(self):
        mark = "PTYBOX_TEST_MARK=" + uuid.uuid4().hex
        p = subprocess.Popen([PTYBOX, "repl", "--via", VIA, "--timeout", "0", "--env", mark],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, env=self.env)
        try:
            p.stdin.write(b"import time; print('sleeping', flush=True); time.sleep(1000)\n"
                          b"x = 1\n")  # (a script's block ends at the next one)
            p.stdin.flush()
            self.assertEqual(p.stdout.readline(), b"sleeping\n")
            self.assertTrue(processes_with(mark), "the session's interpreter is not running")
            p.kill()
            p.wait(timeout=30)
        finally:
            p.stdin.close()
            p.stdout.close()
        self.wait_gone(mark, "the sandbox outlived its killed repl")

    def test_ctrl_z_and_fg_give_the_prompt_and_its_line_back(self):
        # In a shell with job control: ^Z stops the repl with the shell's
        # terminal mode back; fg gives our mode back (no echo by the
        # terminal) and the half-typed line drawn again, ready to edit.
        env = dict(self.env, PS1="shell$ ")
        t = Terminal(["bash", "--norc", "--noprofile", "-i"], env, self.dir, bare=True)
        self.terms.append(t)
        t.wait("shell$")
        t.type("cd '%s'; stty -g > before; %s repl --via %s; stty -g > after"
               % (self.dir, PTYBOX, VIA))
        t.keys("Enter")
        t.wait(">>>")
        t.type("x = 42")
        t.keys("Enter")
        t.wait(">>>", count=2)
        t.type("x +")
        t.wait(">>> x +")  # (drawn before the ^Z: else the stop can come first)
        t.keys("C-z")
        t.wait("Stopped")
        t.type("stty -g > stopped; fg")
        t.keys("Enter")
        t.wait(">>> x +", count=2)
        t.type(" 1")
        t.keys("Enter")
        s = t.wait("\n43\n")
        self.assertNotIn("x + 1\nx + 1", s)  # (not echoed by a cooked terminal too)
        t.keys("C-d")
        t.wait("shell$", count=3)
        with open(os.path.join(self.dir, "before")) as f:
            before = f.read()
        for name in ("stopped", "after"):
            with open(os.path.join(self.dir, name)) as f:
                self.assertEqual(f.read(), before, "the terminal's mode %s" % name)

    def test_a_history_that_is_a_symlink_or_a_fifo_is_left_alone(self):
        # A dotfiles manager's symlink: the load refuses to follow it, so the
        # save must not replace what it points to with this session's lines.
        folder = os.path.join(self.state, "ptybox")
        os.makedirs(folder)
        kept = os.path.join(self.dir, "kept-history")
        with open(kept, "w") as f:
            f.write("old_line_1\nold_line_2\n")
        os.symlink(kept, os.path.join(folder, "history"))
        t = self.repl()
        t.type("new_line = 1")
        t.keys("Enter")
        t.wait(">>>", count=2)
        t.keys("C-d")
        self.assertEqual(t.exit_status(), 0)
        t.wait("history not saved")
        with open(kept) as f:
            self.assertEqual(f.read(), "old_line_1\nold_line_2\n")
        # a FIFO there: the repl starts (an open that waits for a writer hung it)
        os.unlink(os.path.join(folder, "history"))
        os.mkfifo(os.path.join(folder, "history"))
        t = self.repl()
        t.type("6 * 7")
        t.keys("Enter")
        t.wait("\n42\n")
        t.keys("C-d")
        self.assertEqual(t.exit_status(), 0)

    def test_the_start_inside_tmux_leaves_the_pane_title_alone(self):
        # The probe for inline images: tmux takes an APC (kitty's query) as
        # a title; the pane was titled "Gi=31,s=1,v=1,a=q,t=d,f=24;AAAA".
        t = self.repl()
        t.type("1 + 1")
        t.keys("Enter")
        t.wait("\n2\n")
        title = t.tmux("display-message", "-p", "-t", "0", "#{pane_title}").stdout
        self.assertNotIn("Gi=", title)

    def test_an_execution_that_kills_its_interpreter_is_said_once(self):
        # the "died" event and the execution's result both said it
        p = subprocess.run([PTYBOX, "repl", "--via", VIA],
                           input="import os\nos._exit(1)\nprint('after')\n",
                           capture_output=True, text=True, timeout=60, env=self.env)
        self.assertEqual(p.stdout, "after\n")
        self.assertEqual(p.stderr.count("the interpreter died"), 1, p.stderr)
        self.assertIn("execution 2: the interpreter died (exit status 1)", p.stderr)

    def test_a_script_on_standard_input_runs_in_blocks_without_prompts(self):
        script = ("x = 20\n"
                  "def f():\n"
                  "    return x * 2\n"
                  "print(f() + 2)\n"
                  "for i in range(2):\n"
                  "    print('loop', i)\n"
                  "else:\n"
                  "    print('done')\n"
                  "\n"
                  "x + 1\n")
        p = subprocess.run([PTYBOX, "repl", "--via", VIA], input=script, capture_output=True,
                           text=True, timeout=60, env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "42\nloop 0\nloop 1\ndone\n21\n")
        self.assertNotIn(">>>", p.stdout + p.stderr)
        # a failing block: its traceback, the rest still runs, exit status 1
        p = subprocess.run([PTYBOX, "repl", "--via", VIA], input="1/0\nprint('after')\n",
                           capture_output=True, text=True, timeout=60, env=self.env)
        self.assertEqual(p.returncode, 1)
        self.assertIn("ZeroDivisionError", p.stderr)
        self.assertEqual(p.stdout, "after\n")

    def test_a_slow_start_spins_on_a_terminal_and_says_nothing_when_piped(self):
        if VIA != "local":
            self.skipTest("the slow transport wraps the local interpreter")
        slow = os.path.join(self.dir, "slow.sh")
        with open(slow, "w") as f:
            f.write('#!/bin/sh\nsleep 1.5\nexec "$@"\n')
        os.chmod(slow, 0o755)
        t = Terminal([PTYBOX, "repl", "--via", "exec:" + slow], self.env, self.dir)
        self.terms.append(t)
        t.wait("starting session 'default'...")
        s = t.wait(">>>")
        self.assertNotIn("starting session", s)  # (gone once it is up)
        p = subprocess.run([PTYBOX, "repl", "--via", "exec:" + slow], input="print('up')\n",
                           capture_output=True, text=True, timeout=60, env=self.env)
        self.assertEqual((p.returncode, p.stdout), (0, "up\n"), p.stderr)
        self.assertNotIn("starting", p.stderr)

    def test_the_code_sees_the_window_size_and_follows_it(self):
        t = self.repl()
        t.type("import os; print('size', os.environ['COLUMNS'], os.environ['LINES'])")
        t.keys("Enter")
        t.wait("size 100 30")
        t.tmux("resize-window", "-t", "0", "-x", "120", "-y", "40")
        t.keys("Up", "Enter")
        t.wait("size 120 40")

    def test_pictures_are_saved_and_their_paths_printed(self):
        png = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9"
               "awAAAABJRU5ErkJggg==")
        out = os.path.join(self.dir, "pictures")
        os.mkdir(out)
        script = ("import base64\n"
                  "class P:\n"
                  "    def _repr_png_(self):\n"
                  "        return base64.b64decode(%r)\n"
                  "P()\n"
                  "display(P())\n" % png)
        cast = os.path.join(self.dir, "pictures.cast")
        p = subprocess.run([PTYBOX, "repl", "--via", VIA, "--output-dir", out, "--record", cast],
                           input=script, capture_output=True, text=True, timeout=60,
                           env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        paths = [os.path.join(out, "ptybox-1.png"), os.path.join(out, "ptybox-2.png")]
        self.assertEqual(p.stdout.split(), paths)
        for path in paths:
            with open(path, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        # the recording shows what the terminal got: the paths, not the reprs
        with open(cast) as f:
            shown = "".join(e[2] for e in map(json.loads, f.read().splitlines()[1:])
                            if e[1] == "o")
        for path in paths:
            self.assertIn(path, shown)
        self.assertNotIn("P object", shown)

    def test_bad_usage_is_one_line_and_status_2(self):
        for args in (["repl", "stray"], ["repl", "--memory", "lots"], ["attach"],
                     ["attach", "a", "b"]):
            p = run(*args, via=False, timeout=30)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertTrue(p.stderr.startswith("ptybox: "), p.stderr)
        p = run("repl", "--help", via=False)
        self.assertEqual(p.returncode, 0)
        self.assertIn("Ctrl-D", p.stdout)
        p = run("attach", "--help", via=False)
        self.assertEqual(p.returncode, 0)
        self.assertIn("detach", p.stdout)

    def test_a_session_that_cannot_start_is_said_once_and_status_125(self):
        p = run("repl", "--workdir", "/no/such/folder", timeout=60)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertEqual(p.stderr.count("could not be started"), 1, p.stderr)
        self.assertTrue(p.stderr.startswith("ptybox: repl: "), p.stderr)
        self.assertIn("/no/such/folder", p.stderr)


@unittest.skipUnless(TMUX, "tmux is not installed")
class AttachTest(TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ptybox-attach-")
        rt = os.path.join(self.dir, "run")
        os.mkdir(rt, 0o700)
        self.env = dict(os.environ, XDG_RUNTIME_DIR=rt, TERM="xterm-256color",
                        XDG_STATE_HOME=os.path.join(self.dir, "state"))
        self.terms = []
        self.name = "s" + uuid.uuid4().hex[:8]
        self.verb("new", self.name, "--via", VIA)

    def tearDown(self):
        for t in self.terms:
            t.close()
        self.verb("kill-server")
        shutil.rmtree(self.dir, ignore_errors=True)

    def verb(self, *args):
        p = subprocess.run([PTYBOX, *args], capture_output=True, text=True, timeout=60,
                           env=self.env)
        if args[0] != "kill-server":
            self.assertEqual(p.returncode, 0, (args, p.stderr))
        return p

    def attach(self):
        t = Terminal([PTYBOX, "attach", self.name], self.env, self.dir)
        self.terms.append(t)
        t.wait(">>>")
        return t

    def test_attach_shows_the_screen_then_live_output_of_other_clients(self):
        self.verb("exec", self.name, "-c", "x = 6; print('before', x)")
        t = self.attach()
        t.wait("before 6")
        self.verb("exec", self.name, "-c", "print('from another client', x * 7)")
        t.wait("from another client 42")
        t.wait(">>> print('from another client', x * 7)")
        # its own code runs in the same session
        t.type("x + 1")
        t.keys("Enter")
        t.wait("\n7\n")

    def test_detach_leaves_it_running_and_a_reattach_sees_what_ran(self):
        t = self.attach()
        t.type("y = 'set while attached'")
        t.keys("Enter")
        t.wait(">>>", count=2)
        t.keys("C-\\")
        self.assertEqual(t.exit_status(), 0)
        self.verb("exec", self.name, "-c", "print('ran meanwhile')")
        ls = self.verb("ls").stdout
        self.assertIn(self.name, ls)
        t2 = self.attach()
        t2.wait("ran meanwhile")
        t2.type("y")
        t2.keys("Enter")
        t2.wait("'set while attached'")
        t2.keys("C-d")
        self.assertEqual(t2.exit_status(), 0)
        self.assertIn(self.name, self.verb("ls").stdout)

    def test_two_attached_clients_both_see_every_execution(self):
        a, b = self.attach(), self.attach()
        a.type("print('typed in a')")
        a.keys("Enter")
        b.wait("typed in a")
        b.type("print('typed in b')")
        b.keys("Enter")
        a.wait("typed in b")
        self.verb("exec", self.name, "-c", "print('from exec')")
        a.wait("from exec")
        b.wait("from exec")

    @unittest.skipUnless(shutil.which("asciinema"), "asciinema is not installed")
    def test_a_recording_of_an_attached_prompt_has_every_execution(self):
        from test_record import asciinema_cat, read_cast
        cast = os.path.join(self.dir, "attach.cast")
        self.verb("exec", self.name, "-c", "print('on the screen before')")
        t = Terminal([PTYBOX, "attach", self.name, "--record", cast], self.env, self.dir)
        self.terms.append(t)
        t.wait(">>>")
        t.type("print('typed', 6 * 7)")
        t.keys("Enter")
        t.wait("typed 42")
        self.verb("exec", self.name, "-c", "print('from exec')")
        t.wait("from exec")
        t.keys("C-d")
        self.assertEqual(t.exit_status(), 0)
        header, events = read_cast(cast)
        self.assertEqual((header["version"], header["width"], header["height"]), (2, 100, 30))
        markers = [e[2] for e in events if e[1] == "m"]
        self.assertEqual(markers, ["exec 2: print('typed', 6 * 7)", "exec 3: print('from exec')"])
        shown = asciinema_cat(cast)
        for text in ("on the screen before", ">>> print('typed', 6 * 7)", "typed 42",
                     "from exec"):
            self.assertIn(text, shown)

    def test_a_server_that_goes_while_at_the_prompt_is_said_on_a_line_of_its_own(self):
        t = self.attach()
        rt = self.env["XDG_RUNTIME_DIR"]
        servers = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if b"server" in argv[1:2] and any(rt.encode() in a for a in argv):
                servers.append(int(pid))
        self.assertTrue(servers, "no server found")
        for pid in servers:  # (gone at once, as a crash would take it)
            os.kill(pid, 9)
        s = t.wait("the server closed the connection")
        self.assertEqual(t.exit_status(), 1)
        self.assertIn("\nptybox: attach: ", s)  # (not after the ">>> ")

    def test_attach_to_no_such_session_is_an_error(self):
        p = subprocess.run([PTYBOX, "attach", "nosuch"], capture_output=True, text=True,
                           timeout=30, env=self.env, stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no session 'nosuch'", p.stderr)


if __name__ == "__main__":
    unittest.main()
