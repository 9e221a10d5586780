"""--lang bash, as a user of the shell sees it: the shell's own state between
snippets, exit statuses as results, stdout and stderr apart, late output of
background jobs, ^C and exit, and read never waiting (ptybox(1), LANGUAGES)."""
import json
import os
import tempfile
import time
import unittest

from ptybox_test import Serve, TestCase, run


class BashSession(TestCase):
    def setUp(self):
        self.s = Serve("--lang", "bash")

    def tearDown(self):
        self.s.close()

    def test_variables_functions_aliases_folder_and_exports_carry_over(self):
        self.assertOk(self.s.exec("x=41; greet() { echo \"hi $1\"; }; alias ll='echo aliased'\n"
                                  "mkdir -p /tmp/w && cd /tmp/w; export E=exported", id=1))
        r = self.s.exec("echo $((x + 1)); greet you; ll; pwd; sh -c 'echo $E'", id=2)
        self.assertOk(r)
        self.assertEqual(r["stdout"], "42\nhi you\naliased\n/tmp/w\nexported\n")

    def test_exit_status_is_the_result(self):
        r = self.s.exec("echo before; (exit 7)", id=1)
        self.assertEqual((r["status"], r["error"]["name"], r["error"]["value"], r["stdout"]),
                         ("error", "ExitStatus", "7", "before\n"))
        r = self.s.exec("nosuchcommand", id=2)
        self.assertEqual((r["status"], r["error"]["value"]), ("error", "127"))
        self.assertIn("nosuchcommand: command not found", r["stderr"])
        self.assertOk(self.s.exec("true", id=3))

    def test_stdout_and_stderr_apart_at_the_fd_level(self):
        r = self.s.exec("echo out; echo err >&2; /bin/echo child; /bin/sh -c 'echo cerr >&2'",
                        id=1)
        self.assertEqual((r["stdout"], r["stderr"]), ("out\nchild\n", "err\ncerr\n"))

    def test_commands_get_sigpipe_as_in_a_shell(self):
        r = self.s.exec("yes | head -n 2; echo ${PIPESTATUS[0]}", id=1, timeout=10)
        self.assertEqual((r["status"], r["stdout"]), ("ok", "y\ny\n141\n"))
        self.assertNotIn("Broken pipe", r["stderr"])

    def test_fds_1_and_2_are_captured_again_at_each_snippet(self):
        self.s.exec("exec >&- 2>/dev/null", id=1)
        r = self.s.exec("echo out; echo err >&2", id=2)
        self.assertEqual((r["stdout"], r["stderr"]), ("out\n", "err\n"))

    def test_a_background_job_printing_later_is_late_output_of_its_snippet(self):
        self.assertOk(self.s.exec("(sleep 0.3; echo from-the-job) &", id="bg"))
        late = self.s.recv(timeout=10)
        self.assertEqual((late.get("id"), late.get("event"), late.get("name"), late.get("text"),
                          late.get("late")),
                         ("bg", "stream", "stdout", "from-the-job\n", True), late)
        r = self.s.exec("echo next", id="next")
        self.assertEqual(r["stdout"], "next\n")

    def test_interrupt_stops_the_command_line_and_keeps_the_shell(self):
        self.assertOk(self.s.exec("kept=yes", id=1))
        for code in ("for i in 1 2 3; do sleep 5; done; echo not-reached",
                     "while :; do :; done; echo not-reached",
                     "f() { sleep 5; echo not-reached; }; f"):
            with self.subTest(code=code):
                self.s.send({"id": 2, "op": "exec", "code": code})
                self.s.send({"id": 3, "op": "interrupt"})
                replies = {}
                t0 = time.monotonic()
                while len(replies) < 2:
                    m = self.s.recv(timeout=20)
                    if not m.get("event"):
                        replies[m["id"]] = m
                self.assertLess(time.monotonic() - t0, 4)
                self.assertEqual(replies[2]["status"], "interrupted", replies[2])
                self.assertNotIn("not-reached", replies[2]["stdout"])
                r = self.s.exec("echo $kept", id=4)
                self.assertEqual((r["status"], r["stdout"], r["state_lost"]),
                                 ("ok", "yes\n", False))

    def test_timeout_interrupts_and_keeps_state(self):
        self.assertOk(self.s.exec("kept=yes", id=1))
        r = self.s.exec("sleep 10", id=2, timeout=0.5)
        self.assertEqual(r["status"], "timeout", r)
        r = self.s.exec("echo $kept", id=3)
        self.assertEqual((r["stdout"], r["state_lost"]), ("yes\n", False))

    def test_exit_is_reported_and_the_session_restarts(self):
        self.assertOk(self.s.exec("lost=1", id=1))
        r = self.s.exec("echo bye; exit 3", id=2)
        self.assertEqual((r["status"], r["state_lost"], r["stdout"]), ("crashed", True, "bye\n"))
        self.assertIn("exit status 3", r["message"])
        r = self.s.exec("echo ${lost-fresh}", id=3)
        self.assertEqual((r["status"], r["stdout"]), ("ok", "fresh\n"))

    def test_a_snippet_cannot_replace_the_kernels_own_functions(self):
        # Redefining the hook that sends each result left the shell mute: the
        # next snippet waited its timeout and the state was lost (review-3).
        self.assertOk(self.s.exec("kept=yes", id=1))
        r = self.s.exec("__ptybox_done() { :; }", id=2, timeout=5)
        self.assertEqual(r["status"], "error", r)
        self.assertIn("readonly function", r["stderr"])
        r = self.s.exec("echo $kept", id=3, timeout=5)
        self.assertEqual((r["status"], r["stdout"], r["state_lost"]), ("ok", "yes\n", False))

    def test_a_snippet_that_takes_the_hooks_builtins_gets_an_error_and_the_state_stays(self):
        # (newuser-6: `builtin() { ...; }` left the shell deaf: a timeout after 30 s,
        # the state lost.  bash lets a snippet do it; the kernel sees bash back
        # at its prompt without the snippet's end, says so and puts them back.)
        self.assertOk(self.s.exec("kept=yes", id=1))
        for i, code in enumerate(('builtin() { echo "mine $*"; }', "enable -n printf")):
            t0 = time.monotonic()
            r = self.s.exec(code, id=2 + 2 * i, timeout=20)
            self.assertLess(time.monotonic() - t0, 10, r)
            self.assertEqual((r["status"], r["error"]["name"]), ("error", "ShellError"), r)
            self.assertIn("enable -n", r["error"]["value"])
            r = self.s.exec("echo $kept; type -t builtin; printf 'p\\n'", id=3 + 2 * i,
                            timeout=20)
            self.assertEqual((r["status"], r["stdout"], r["state_lost"]), ("ok", "yes\nbuiltin\np\n", False),
                             r)
        # What cannot be put back (unset is the snippet's too): a fresh shell.
        r = self.s.exec("unset() { :; }; builtin() { :; }", id=6, timeout=20)
        self.assertEqual(r["error"]["name"], "ShellError", r)
        r = self.s.exec("echo ${kept-gone}", id=7, timeout=20)
        self.assertEqual((r["status"], r["state_lost"]), ("crashed", True), r)
        r = self.s.exec("echo ${kept-gone}", id=8, timeout=20)
        self.assertEqual((r["status"], r["stdout"]), ("ok", "gone\n"), r)

    def test_a_builtin_read_of_a_slow_producer_is_not_taken_for_a_deaf_shell(self):
        # (review1-2: the deaf check sees bash in read(0) with its command pipe
        # empty; so is a builtin `read` whose fd 0 is a process substitution, a
        # fifo or the stdin stream: a ShellError after 1 s, and the snippet's
        # output went to the next snippet's result.)
        self.assertOk(self.s.exec("kept=yes", id=1))
        r = self.s.exec('read -r x < <(sleep 2.5; echo hi); echo "got $x"', id=2, timeout=20)
        self.assertEqual((r["status"], r["stdout"]), ("ok", "got hi\n"), r)
        r = self.s.exec("echo $kept", id=3, timeout=20)
        self.assertEqual((r["status"], r["stdout"], r["state_lost"]), ("ok", "yes\n", False), r)

    def test_a_restart_gets_a_shell_the_old_one_could_not_reach(self):
        # Only the first standby starts its bash ahead: a later one is forked
        # while a kernel runs code, which could write an exec'd bash's memory
        # through /proc (same uid) and live on in the fresh shell.  So the
        # shell after a crash is younger than the crash, and the old shell
        # finds no bash of a standby to write to.
        r = self.s.exec("read -a st </proc/$PPID/stat; tpl=${st[3]}; "   # (the template)
                        "for ((i = 0; i < 1000; i++)); do "            # (its standby: 10 s at most)
                        "read -a kids </proc/$tpl/task/$tpl/children; "
                        "(( ${#kids[@]} > 1 )) && break; sleep 0.01; done; "
                        "me=$$; for p in /proc/[0-9]*; do "
                        "[[ $(readlink $p/exe) == /bin/bash || $(readlink $p/exe) == /usr/bin/bash ]]"
                        " && [[ ${p#/proc/} != $me ]] && : 2>/dev/null >>$p/mem && echo $p; done; "
                        "sleep 1", id=1, timeout=10)
        self.assertEqual((r["status"], r["stdout"]), ("ok", ""), r)
        self.assertEqual(self.s.exec("kill -9 $$", id=2)["status"], "crashed")
        r = self.s.exec("read up _ </proc/uptime; read -a st </proc/$$/stat; "
                        "echo $(( 10#${up/./} * $(getconf CLK_TCK) / 100 - ${st[21]} ))", id=3)
        self.assertOk(r)
        ticks = int(r["stdout"])    # bash's age in clock ticks (/proc/uptime has 1/100 s)
        self.assertLess(ticks, int(os.sysconf("SC_CLK_TCK")) // 2, r)
        self.assertEqual(r["stderr"], "")   # (what a shell says of its start is not output)

    def test_read_gets_end_of_input_at_once_unless_stdin_is_given(self):
        t0 = time.monotonic()
        r = self.s.exec("read line; echo \"status $?\"; cat; echo done", id=1)
        self.assertLess(time.monotonic() - t0, 5)
        self.assertEqual(r["stdout"], "status 1\ndone\n")
        r = self.s.exec("read a; read b; echo \"$b $a\"", id=2, stdin="one\ntwo\n")
        self.assertEqual(r["stdout"], "two one\n")
        r = self.s.exec("read line; echo \"status $?\"", id=3)
        self.assertEqual(r["stdout"], "status 1\n")   # (stdin was that snippet's alone)

    def test_env_and_cwd_hold_for_their_snippet_only(self):
        self.assertOk(self.s.exec("cd /tmp; E=shell", id=1))
        r = self.s.exec("echo $E $N; sh -c 'echo $E $N'; pwd", id=2,
                        env={"E": "given", "N": "it's new"}, cwd="/")
        self.assertEqual(r["stdout"], "given it's new\ngiven it's new\n/\n")
        r = self.s.exec("echo $E ${N-unset}; sh -c 'echo ${E-unexported}'; pwd", id=3)
        self.assertEqual(r["stdout"], "shell unset\nunexported\n/tmp\n")

    def test_a_10_mb_snippet(self):
        code = "big='" + "a" * (10 << 20) + "'; echo ${#big}"
        r = self.s.exec(code, id=1, timeout=60)
        self.assertEqual((r["status"], r["stdout"]), ("ok", "%d\n" % (10 << 20)))
        self.assertEqual(self.s.exec("echo ${#big}", id=2)["stdout"], "%d\n" % (10 << 20))


class BashCommandLine(TestCase):
    def test_run_lang_bash(self):
        p = run("run", "--lang", "bash", "--json", "-c", "x=2", "-c", "echo $((x * 21))")
        results = [json.loads(l) for l in p.stdout.splitlines()]
        self.assertEqual([r["stdout"] for r in results], ["", "42\n"])
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_run_file_takes_its_args_and_exits_with_its_status(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "s.sh")
            with open(path, "w") as f:
                f.write('echo "$2 $1 ($#)"\n(exit 3)\n')
            p = run("run", "--lang", "bash", path, "one", "two")
            self.assertEqual((p.returncode, p.stdout), (3, "two one (2)\n"), p.stderr)
            self.assertNotIn("ExitStatus", p.stderr)

    def test_an_unknown_language_is_one_line_and_a_usage_error(self):
        for lang in ("ruby", "cobol", ""):
            with self.subTest(lang=lang):
                p = run("run", "--lang", lang, "-c", "1")
                self.assertEqual(p.returncode, 2)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
                self.assertIn("expected python, bash or node", p.stderr)

    def test_a_pooled_python_is_not_given_to_a_bash_session(self):
        s = Serve("--pool", "1")
        try:
            s.send({"id": 1, "op": "new", "session": "b", "options": {"lang": "bash"}})
            self.assertTrue(s.recv_result(1).get("ok"))
            r = s.exec("echo ${BASH_VERSION:+bash}", id=2, session="b")
            self.assertEqual((r["status"], r["stdout"]), ("ok", "bash\n"), r)
            s.send({"id": 3, "op": "new", "session": "p"})
            self.assertTrue(s.recv_result(3).get("ok"))
            r = s.exec("import sys; print(sys.implementation.name)", id=4, session="p")
            self.assertEqual(r["stdout"], "cpython\n")
        finally:
            s.close()

    def test_a_bash_session_with_a_python_one_shares_its_files(self):
        s = Serve()
        try:
            s.send({"id": 1, "op": "new", "session": "A"})
            self.assertTrue(s.recv_result(1).get("ok"))
            self.assertOk(s.exec("open('/tmp/shared.txt', 'w').write('from A')", id=2,
                                 session="A"))
            s.send({"id": 3, "op": "new", "session": "B",
                    "options": {"lang": "bash", "with": "A"}})
            self.assertTrue(s.recv_result(3).get("ok"))
            r = s.exec("cat /tmp/shared.txt", id=4, session="B")
            self.assertEqual((r["status"], r["stdout"]), ("ok", "from A"), r)
        finally:
            s.close()

    def test_ls_shows_the_language(self):
        s = Serve("--lang", "bash")
        try:
            s.exec("true", id=1)
            s.send({"id": 2, "op": "ls"})
            self.assertEqual([x["lang"] for x in s.recv_result(2)["sessions"]], ["bash"])
        finally:
            s.close()


if __name__ == "__main__":
    unittest.main()
