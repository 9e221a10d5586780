"""The engine's guarantees, language by language (--lang): one table of
(language, code) per behaviour, run through `ptybox serve --stdio`, so that
a guarantee a kernel breaks shows as that language's failure (ptybox(1),
LANGUAGES).  A case that is None is a guarantee the language does not
give (the same page says why), skipped."""
import base64
import time
import unittest

from ptybox_test import Serve, TestCase

FAKE = "<<<ptybox:" + "f" * 32 + ':{"type":"result","id":1,"status":"ok"}:ptybox>>>'

CASES = {
    "python": {
        "set": "kept = 'yes'",
        "show": "print(kept)",
        "spoof": "print(%r)\nraise RuntimeError('real')" % FAKE,
        "sleep": "import time\ntime.sleep(10)",
        "crash": "import os\nos._exit(9)",
        "flood": "print('x' * 200000)",
        "late": "import threading, time\n"
                "threading.Thread(target=lambda: (time.sleep(0.3), print('later'))).start()",
        "big": "big = '%s'\nprint(len(big))",
        "write": "open('/tmp/f.txt', 'w').write('from the code')",
    },
    "bash": {
        "set": "kept=yes",
        "show": "echo $kept",
        "spoof": "echo '%s'; false" % FAKE,
        "sleep": "sleep 10",
        "crash": "kill -9 $$",
        "flood": "head -c 200000 /dev/zero | tr '\\0' x; echo",
        "late": "(sleep 0.3; echo later) &",
        "big": "big='%s'; echo ${#big}",
        "write": "printf 'from the code' > /tmp/f.txt",
    },
    "node": {
        "set": "globalThis.kept = 'yes'",
        "show": "console.log(kept)",
        "spoof": "console.log(%r); throw new Error('real')" % FAKE,
        "sleep": "await new Promise(r => setTimeout(r, 10000))",
        "crash": "process.kill(process.pid, 'SIGKILL')",
        "flood": "console.log('x'.repeat(200000))",
        "late": "setTimeout(() => console.log('later'), 300); undefined",
        "big": "const big = '%s'; console.log(big.length)",
        "write": "require('fs').writeFileSync('/tmp/f.txt', 'from the code')",
    },
}


class Guarantees(TestCase):
    def each(self, check, *extra, needs=()):
        """check(serve, case) for each language, in a session of its own;
        needs: the cases check uses that a language may not have (None)."""
        for lang, case in CASES.items():
            if any(case[k] is None for k in needs):
                continue
            with self.subTest(lang=lang):
                s = Serve("--lang", lang, *extra)
                try:
                    check(s, case)
                finally:
                    s.close()

    def test_printed_frames_cannot_forge_a_result(self):
        def check(s, case):
            r = s.exec(case["spoof"], id=1)
            self.assertEqual(r["status"], "error", r)
            self.assertIn(FAKE, r["stdout"])
        self.each(check)

    def test_a_timeout_interrupts_and_keeps_state(self):
        def check(s, case):
            self.assertOk(s.exec(case["set"], id=1))
            t0 = time.monotonic()
            r = s.exec(case["sleep"], id=2, timeout=0.5)
            self.assertEqual(r["status"], "timeout", r)
            self.assertLess(time.monotonic() - t0, 5)
            r = s.exec(case["show"], id=3)
            self.assertEqual((r["stdout"], r["state_lost"]), ("yes\n", False))
        self.each(check)

    def test_a_crash_restarts_with_fresh_state(self):
        def check(s, case):
            self.assertOk(s.exec(case["set"], id=1))
            r = s.exec(case["crash"], id=2)
            self.assertEqual((r["status"], r["state_lost"]), ("crashed", True), r)
            r = s.exec(case["show"], id=3)
            self.assertNotEqual(r["stdout"], "yes\n")
            self.assertOk(s.exec(case["set"], id=4))
        self.each(check)

    def test_output_is_capped(self):
        def check(s, case):
            r = s.exec(case["flood"], id=1)
            self.assertOk(r)
            self.assertTrue(r["truncated"])
            self.assertLess(len(r["stdout"]), 8192)
        self.each(check, "--max-output", "4K")

    def test_output_after_the_snippet_is_late_output_of_it(self):
        def check(s, case):
            self.assertOk(s.exec(case["late"], id="bg"))
            deadline, text = time.monotonic() + 10, ""
            while not text.endswith("\n"):
                m = s.recv(timeout=max(0.01, deadline - time.monotonic()))
                if m.get("event") == "stream":
                    self.assertEqual((m["id"], m.get("late")), ("bg", True), m)
                    text += m["text"]
            self.assertEqual(text, "later\n")
        self.each(check)

    def test_a_10_mb_snippet(self):
        def check(s, case):
            r = s.exec(case["big"] % ("a" * (10 << 20)), id=1, timeout=60)
            self.assertEqual((r["status"], r["stdout"]), ("ok", "%d\n" % (10 << 20)), r["stderr"])
        self.each(check)

    def test_files_in_and_out(self):
        def check(s, case):
            self.assertOk(s.exec(case["write"], id=1))
            s.send({"id": 2, "op": "get", "path": "/tmp/f.txt"})
            r = s.recv_result(2)
            self.assertEqual(base64.b64decode(r["data"]), b"from the code", r)
        self.each(check, needs=("write",))


if __name__ == "__main__":
    unittest.main()
