"""The shell completions (completions/), loaded in each shell the way it loads
them, and asked what they offer: subcommands, options and the live session
names of a server (none, quietly, when no server runs, and none started)."""
import os
import pty
import re
import select
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

from ptybox_test import PTYBOX

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
COMPLETIONS = os.path.join(TOP, "completions")
BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"
SUBCOMMANDS = {"run", "repl", "serve", "mcp", "new", "exec", "result", "ls", "interrupt", "cancel",
               "restart", "kill", "kill-server", "capture", "watch", "attach", "cp", "server",
               "dial-stdio"}
HUMAN = {"--record", "--record-max", "--output-dir", "--no-inline-images"}


class Shells:
    """A private runtime folder (so a private server), and `ptybox` on PATH."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ptybox-compl-")
        self.runtime = os.path.join(self.tmp, "run")
        os.mkdir(self.runtime, 0o700)
        bindir = os.path.join(self.tmp, "bin")
        os.mkdir(bindir)
        os.symlink(os.path.realpath(PTYBOX), os.path.join(bindir, "ptybox"))
        self.env = dict(os.environ, PATH=bindir + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
                        XDG_RUNTIME_DIR=self.runtime, HOME=self.tmp, NO_COLOR="1")
        self.env.pop("ZDOTDIR", None)

    def tearDown(self):
        if os.path.exists(os.path.join(self.runtime, "ptybox", "default")):
            subprocess.run(["ptybox", "kill-server"], env=self.env, capture_output=True,
                           timeout=30)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start_sessions(self, *names):
        for name in names:
            p = subprocess.run(["ptybox", "new", name, "--via", "none"], env=self.env,
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)

    def assertNoServer(self):
        self.assertFalse(os.path.exists(os.path.join(self.runtime, "ptybox", "default")),
                         "completion started a server")

    # Each shell's class says how it completes a line.
    def complete(self, line):
        raise NotImplementedError

    def test_subcommands(self):
        self.assertEqual(set(self.complete("ptybox ")) & SUBCOMMANDS, SUBCOMMANDS)
        self.assertEqual(set(self.complete("ptybox ex")), {"exec"})
        self.assertIn("attach", self.complete("ptybox at"))
        self.assertIn("repl", self.complete("ptybox re"))

    def test_options(self):
        self.assertTrue(HUMAN <= set(self.complete("ptybox run --")),
                        self.complete("ptybox run --"))
        self.assertTrue(HUMAN <= set(self.complete("ptybox repl --")))
        got = set(self.complete("ptybox run --"))
        for opt in ("--json", "--raw", "--via", "--timeout", "--memory", "--net", "--python"):
            self.assertIn(opt, got)
        self.assertIn("--record", self.complete("ptybox new work --"))
        self.assertIn("--record", self.complete("ptybox attach work --"))
        self.assertIn("--no-inline-images", self.complete("ptybox run --no-"))
        self.assertIn("--stdio", self.complete("ptybox serve --"))
        self.assertIn("--no-wait", self.complete("ptybox exec work --"))
        self.assertIn("--foreground", self.complete("ptybox server --"))
        self.assertIn("--json", self.complete("ptybox ls --"))

    def test_the_options_offered_are_those_the_help_lists(self):
        # repl offered run's --tty, which it refuses; attach lacked --output-dir
        for cmd, line in (("run", "ptybox run --"), ("repl", "ptybox repl --"),
                          ("attach", "ptybox attach work --"), ("new", "ptybox new work --"),
                          ("mcp", "ptybox mcp --")):
            helped = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", subprocess.run(
                [PTYBOX, cmd, "--help"], capture_output=True, text=True).stdout))
            offered = {w.split("=")[0] for w in self.complete(line) if w.startswith("--")}
            with self.subTest(command=cmd):
                self.assertEqual(offered - helped - {"--help"}, set())
                self.assertEqual(helped - offered - {"--help"}, set())

    def test_values(self):
        self.assertTrue({"local", "none"} <= set(self.complete("ptybox run --via ")))
        open(os.path.join(self.tmp, "talk.cast"), "w").close()
        open(os.path.join(self.tmp, "notes.txt"), "w").close()
        # (zsh's matches are the names, the folder being a prefix of theirs)
        for line in ("ptybox run --record ", "ptybox new work --record "):
            cast = [os.path.basename(w) for w in self.complete(line + self.tmp + "/")]
            self.assertIn("talk.cast", cast)
        # (run takes a FILE too, which fish offers beside the option's value)
        self.assertNotIn("notes.txt", cast)

    def test_no_server_no_names(self):
        for verb in ("exec", "result", "kill", "attach", "capture", "watch"):
            self.assertEqual(self.complete("ptybox %s " % verb), [], verb)
        self.assertNoServer()

    def test_live_session_names(self):
        self.start_sessions("alpha", "albatross", "beta gamma")
        for verb in ("exec", "result", "interrupt", "restart", "kill", "capture", "watch",
                     "attach"):
            with self.subTest(verb=verb):
                self.assertEqual(set(self.complete("ptybox %s al" % verb)),
                                 {"alpha", "albatross"})
        self.assertEqual(self.complete("ptybox attach be"), [self.spaced("beta gamma")])
        # After the session: exec's FILE, and no names again.
        open(os.path.join(self.tmp, "job.py"), "w").close()
        self.assertEqual(self.complete("ptybox kill alpha al"), [])
        after = self.complete("ptybox exec alpha ")
        self.assertIn("job.py", after)
        self.assertNotIn("albatross", after)
        # Another server (-L) has no sessions: none offered, none started.
        self.assertEqual(self.complete("ptybox -L other kill al"), [])
        self.assertFalse(os.path.exists(os.path.join(self.runtime, "ptybox", "other")))

    def test_cp_offers_sessions_and_files(self):
        self.start_sessions("alpha", "albatross")
        open(os.path.join(self.tmp, "albums.csv"), "w").close()
        got = set(self.complete("ptybox cp al"))
        self.assertTrue({"alpha:", "albatross:"} <= got, got)
        self.assertIn("albums.csv", {os.path.basename(w) for w in got})
        self.assertEqual(self.complete("ptybox cp alpha:/tm"), [])
        self.assertTrue({"-L", "-S", "-H"} <= set(self.complete("ptybox cp -")))
        self.assertIn("--put", self.complete("ptybox run --p"))

    def test_a_server_that_does_not_answer_gives_no_names(self):
        # A socket that takes the connection and never says a word.
        folder = os.path.join(self.runtime, "ptybox")
        os.mkdir(folder, 0o700)
        mute = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            mute.bind(os.path.join(folder, "default"))
            mute.listen(16)
            t0 = time.monotonic()
            self.assertEqual(self.complete("ptybox kill "), [])
            self.assertLess(time.monotonic() - t0, 30)
        finally:
            mute.close()
            os.unlink(os.path.join(folder, "default"))

    def spaced(self, name):
        return name


class TestBash(Shells, unittest.TestCase):
    bash_completion = False

    def complete(self, line):
        """Drives _ptybox as bash does on a tab at the end of LINE: COMP_WORDS
        split on blanks, COMP_CWORD the last; prints COMPREPLY, one a line."""
        script = []
        if self.bash_completion:
            script.append(". %s" % BASH_COMPLETION)
        script += [
            ". %s" % shlex.quote(os.path.join(COMPLETIONS, "ptybox.bash")),
            'complete -p ptybox | grep -q -- "-F _ptybox" || { echo "not registered"; exit 3; }',
            "COMP_LINE=%s; COMP_POINT=${#COMP_LINE}" % shlex.quote(line),
            'read -ra COMP_WORDS <<<"$COMP_LINE"',
            "[[ $COMP_LINE == *' ' ]] && COMP_WORDS+=('')",
            "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))",
            '_ptybox ptybox "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"',
            'for w in "${COMPREPLY[@]}"; do printf "%s\\n" "$w"; done',
        ]
        p = subprocess.run(["bash", "--norc", "--noprofile", "-c", "\n".join(script)],
                           env=self.env, capture_output=True, text=True, timeout=60,
                           cwd=self.tmp)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stderr, "")
        return [w.rstrip(" ") for w in p.stdout.splitlines()]

    def spaced(self, name):
        return name.replace(" ", "\\ ")

    def test_syntax(self):
        p = subprocess.run(["bash", "-n", os.path.join(COMPLETIONS, "ptybox.bash")],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual((p.returncode, p.stderr), (0, ""))


@unittest.skipUnless(os.path.exists(BASH_COMPLETION), "bash-completion is not installed")
class TestBashWithBashCompletion(TestBash):
    """The same through bash-completion's _init_completion, as a login shell has it."""
    bash_completion = True


@unittest.skipUnless(shutil.which("fish"), "fish is not installed")
class TestFish(Shells, unittest.TestCase):
    def complete(self, line):
        cmd = "set -p fish_complete_path %s; complete -C %s" % (
            shlex.quote(COMPLETIONS), shlex.quote(line))
        p = subprocess.run(["fish", "--no-config", "-c", cmd], env=self.env,
                           capture_output=True, text=True, timeout=60, cwd=self.tmp)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        return [w.split("\t")[0] for w in p.stdout.splitlines()]

    def test_syntax(self):
        p = subprocess.run(["fish", "-n", os.path.join(COMPLETIONS, "ptybox.fish")],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual((p.returncode, p.stderr), (0, ""))


ZSHRC = r"""
fpath=(%(dir)s $fpath)
autoload -Uz compinit && compinit -u -D
zstyle ':completion:*' list-prompt ''
zstyle ':completion:*' menu no
PS1='' PS2='' RPS1=''
unsetopt beep
# Every match the completion adds, one a line, to $PTYBOX_OUT: compadd with -O
# fills an array and adds nothing; the real compadd then runs as asked.
compadd() {
	if (( ${@[(I)-[OAD]*]} )); then builtin compadd "$@"; return; fi
	local -a __hits
	builtin compadd -O __hits "$@"
	(( $#__hits )) && print -rl -- $__hits >>$PTYBOX_OUT
	builtin compadd "$@"
}
"""


@unittest.skipUnless(shutil.which("zsh"), "zsh is not installed")
class TestZsh(Shells, unittest.TestCase):
    def complete(self, line):
        """Types LINE and a tab into an interactive zsh on a PTY, with compinit
        and the folder in $fpath; a marker command after it says when the
        completion is over (zsh reads its input in order)."""
        zdot = os.path.join(self.tmp, "zdot")
        os.makedirs(zdot, exist_ok=True)
        with open(os.path.join(zdot, ".zshrc"), "w") as f:
            f.write(ZSHRC % {"dir": shlex.quote(COMPLETIONS)})
        out = os.path.join(self.tmp, "zsh.out")
        open(out, "w").close()
        env = dict(self.env, ZDOTDIR=zdot, PTYBOX_OUT=out, TERM="dumb")
        pid, fd = pty.fork()
        if pid == 0:
            os.chdir(self.tmp)
            os.execve(shutil.which("zsh"), ["zsh", "-i"], env)
        try:
            # First a marker when the line editor is up (a tab typed ahead of
            # it is not a completion); \x15 (kill line) then drops what the
            # completion left on the line before the second marker.
            # (zsh turns on bracketed paste as its line editor starts)
            self.zsh_until(fd, b"print -r -- PTYBOX''-READY\n",
                           rb"PTYBOX-READY\r?\n.*\x1b\[\?2004h")
            self.zsh_until(fd, line.encode() + b"\t\x15print -r -- PTYBOX''-DONE\n",
                           rb"PTYBOX-DONE")
            os.write(fd, b"exit\n")
        finally:
            os.close(fd)
            _, status = os.waitpid(pid, 0)
        with open(out) as f:
            return list(dict.fromkeys(f.read().splitlines()))

    def zsh_until(self, fd, send, marker, timeout=60):
        os.write(fd, send)
        got, deadline = b"", time.monotonic() + timeout
        while not re.search(marker, got, re.S):
            left = deadline - time.monotonic()
            self.assertGreater(left, 0, "zsh did not finish: %r" % got)
            if select.select([fd], [], [], left)[0]:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    chunk = b""
                self.assertTrue(chunk, "zsh ended: %r" % got)
                got += chunk

    def test_syntax(self):
        p = subprocess.run(["zsh", "-n", os.path.join(COMPLETIONS, "_ptybox")],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual((p.returncode, p.stderr), (0, ""))


if __name__ == "__main__":
    unittest.main()
