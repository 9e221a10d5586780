"""Transports other than the embedded sandbox: the same client over any terminal."""
import shutil
import unittest

from ptybox_test import TestCase, run, run_json

# A terminal that echoes everything, as a remote one may: the boot still works
# and echoed requests are never taken for results.
ECHOING = "exec:sh -c 'stty echo; exec \"$0\" \"$@\"'"


class ExecTransportTest(TestCase):
    def test_a_terminal_that_echoes_works_the_same(self):
        results, p = run_json("print('<<<ptybox:' + 'x' * 40)", "x = 6", "x * 7",
                              extra=["--via", ECHOING])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(results[0]["stdout"], "<<<ptybox:" + "x" * 40 + "\n")
        self.assertEqual(results[2]["result"], {"text/plain": "42"})

    def test_env_reaches_the_code_through_the_command(self):
        # env -i: like `docker exec`, the command does not pass ours along
        value = "a 'b' \"c\" $HOME \\"
        p = run("run", "--via", "exec:env -i sh -c 'exec \"$0\" \"$@\"'",
                "--env", "V=" + value, "-c", "import os; print(os.environ['V'])", via=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, value + "\n")

    def test_a_command_that_fails_says_why(self):
        for word in ("no such pod", "nope"):
            p = run("run", "--via", "exec:sh -c 'echo %s >&2; exit 4'" % word, "-c", "1",
                    via=False)
            self.assertEqual(p.returncode, 125)
            self.assertIn("exit status 4", p.stderr)
            self.assertIn(word, p.stderr)

    @unittest.skipUnless(shutil.which("ssh"), "no ssh client")
    def test_unreachable_ssh_host_gives_ssh_own_message(self):
        p = run("run", "--via", "ssh://127.0.0.1:1", "-c", "1", via=False)
        self.assertEqual(p.returncode, 125)
        self.assertIn("Connection refused", p.stderr)


if __name__ == "__main__":
    unittest.main()
