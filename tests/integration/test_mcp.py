"""`ptybox mcp`: the official MCP TypeScript SDK's client over stdio
(tests/mcp/client.mjs, its packages installed with `npm ci` into the build
tree), and JSON-RPC at the byte level from Python: bad JSON, unknown
methods, version negotiation, a huge line, a server shared with `ptybox exec`."""
import base64
import hashlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
import unittest

from ptybox_test import PTYBOX, VIA, TestCase, kill_if_alive

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT_SRC = os.path.join(HERE, "..", "mcp")
# The SDK goes into the build tree, beside the binary, never into the sources.
CLIENT_DIR = os.path.join(os.path.dirname(os.path.abspath(PTYBOX)), "mcp-client")


def install_client():
    """`npm ci` of tests/mcp into the build tree, once per lock file. CI has the
    npm registry; a failure here is the test's failure, never a skip."""
    with open(os.path.join(CLIENT_SRC, "package-lock.json"), "rb") as f:
        lock = f.read()
    stamp = os.path.join(CLIENT_DIR, ".installed")
    os.makedirs(CLIENT_DIR, exist_ok=True)
    for name in ("package.json", "package-lock.json", "client.mjs"):
        shutil.copyfile(os.path.join(CLIENT_SRC, name), os.path.join(CLIENT_DIR, name))
    want = hashlib.sha256(lock).hexdigest()
    if os.path.exists(stamp):
        with open(stamp) as f:
            if f.read() == want:
                return
    p = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                       cwd=CLIENT_DIR, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise AssertionError("npm ci failed:\n" + p.stdout + p.stderr)
    with open(stamp, "w") as f:
        f.write(want)


class Mcp:
    """`ptybox mcp ARGS` with JSON-RPC lines on its stdin and stdout; every
    read has a deadline."""

    def __init__(self, *args, env=None):
        self.p = subprocess.Popen([PTYBOX, "mcp", *args], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.buf = b""

    def send(self, obj):
        data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        self.p.stdin.write(data + b"\n")
        self.p.stdin.flush()

    def recv(self, timeout=60):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.p.stdout], [], [], left)[0]:
                raise TimeoutError("no line from ptybox mcp within %s s" % timeout)
            chunk = os.read(self.p.stdout.fileno(), 1 << 20)
            if not chunk:
                raise EOFError("ptybox mcp closed its output: %r" % self.p.stderr.read())
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def call(self, id, method, params=None):
        msg = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.recv()

    def tool(self, id, name, **args):
        return self.call(id, "tools/call", {"name": name, "arguments": args})["result"]

    def initialize(self, version="2025-06-18"):
        r = self.call(0, "initialize", {"protocolVersion": version, "capabilities": {},
                                        "clientInfo": {"name": "t", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r

    def close(self, timeout=60):
        """End of input: mcp ends, its sessions with it. Its exit status."""
        self.p.stdin.close()
        try:
            return self.p.wait(timeout)
        finally:
            kill_if_alive(self.p.pid)
            self.p.stdout.close()
            self.p.stderr.close()


def text_of(result):
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")


class WithTheSdk(TestCase):
    @classmethod
    def setUpClass(cls):
        install_client()

    def test_the_official_client_runs_the_demo_keeps_state_gets_a_picture_and_interrupts(self):
        p = subprocess.run(["node", os.path.join(CLIENT_DIR, "client.mjs"), PTYBOX,
                            "--via", VIA], capture_output=True, text=True, timeout=300,
                           cwd=CLIENT_DIR)
        self.assertTrue(p.stdout.strip(), p.stderr)
        out = json.loads(p.stdout.strip().splitlines()[-1])
        self.assertNotIn("failed", out, out.get("failed"))
        self.assertEqual(p.returncode, 0, p.stderr)
        # The SDK asks for its newest revision; ptybox answers the one it speaks.
        self.assertEqual(out["protocolVersion"], "2025-06-18")
        self.assertEqual(out["serverVersion"]["name"], "ptybox")
        self.assertEqual([t["name"] for t in out["tools"]],
                         ["run_code", "new_session", "list_sessions", "interrupt", "restart",
                          "kill_session", "put_file", "get_file"])
        self.assertEqual(out["tools"][0]["required"], ["code"])
        # The seed demo, snippet by snippet, in one session.
        self.assertEqual(out["demo"][0], {"text": "hello, world!\n", "isError": False})
        self.assertEqual(out["demo"][1:4], [{"text": "(no output)", "isError": False}] * 3)
        self.assertEqual(out["demo"][4], {"text": "The result is: 15\n", "isError": False})
        self.assertTrue(out["demo"][5]["isError"])
        self.assertIn("ZeroDivisionError: division by zero", out["demo"][5]["text"])
        self.assertIn('File "<exec-6>", line 1', out["demo"][5]["text"])
        # State kept; another session has its own.
        self.assertEqual(out["state"], "[value]\n65\n")
        # (and for a program: the SDK checked it against the tool's outputSchema)
        self.assertEqual(out["stateStructured"]["status"], "ok")
        self.assertEqual(out["stateStructured"]["exec"], 7)
        self.assertEqual(out["stateStructured"]["session"], "default")
        self.assertEqual(out["newSession"], "session 'other' is ready")
        self.assertTrue(out["otherSession"]["isError"])
        self.assertIn("NameError: name 'x' is not defined", out["otherSession"]["text"])
        self.assertEqual(out["sessions"], ["default", "other"])
        self.assertEqual(out["sessionsStructured"], ["default", "other"])
        # The plot: its text, then the picture as an MCP image.
        self.assertEqual(out["plot"][0], {"type": "text", "text": "drawn\n"})
        images = [c for c in out["plot"] if c["type"] == "image"]
        self.assertEqual(len(images), 1, out["plot"])
        self.assertEqual(images[0]["mimeType"], "image/png")
        png = base64.b64decode(images[0]["data"], validate=True)
        self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
        self.assertEqual(out["language"], {
            "text": "language 'javascript' is not available: this ptybox runs python",
            "isError": True})
        # Files in and out.
        self.assertEqual(out["put"], "wrote 7 bytes to /tmp/data/hello.txt")
        self.assertEqual(out["get"], "héllo\n")
        self.assertEqual(out["readBack"], "[value]\n'héllo\\n'\n")
        # Cancelling the request interrupted the loop: the next call came at
        # once, not after the 30 s timeout, with the state kept.
        self.assertIsNotNone(out["cancel"]["error"])
        self.assertEqual(out["afterCancel"]["text"], "[value]\n10\n")
        self.assertLess(out["afterCancel"]["ms"], 10000, out["afterCancel"])
        # The interrupt tool: KeyboardInterrupt, the state kept.
        self.assertEqual(out["interruptTool"], "interrupted what ran in 'default'")
        self.assertTrue(out["interrupted"]["isError"])
        self.assertIn("spinning\n", out["interrupted"]["text"])
        self.assertIn("KeyboardInterrupt", out["interrupted"]["text"])
        self.assertEqual(out["afterInterrupt"], "[value]\n11\n")
        # A restart loses it.
        self.assertIn("restarted", out["restart"])
        self.assertIn("NameError", out["afterRestart"]["text"])
        self.assertNotIn("was restarted", out["afterRestart"]["text"])  # (its reply said so)
        self.assertEqual(out["kill"], "session 'other' ended")


class JsonRpc(TestCase):
    def setUp(self):
        self.m = Mcp("--via", VIA)

    def tearDown(self):
        if self.m.p.poll() is None:
            self.m.close()

    def test_version_negotiation(self):
        r = self.m.initialize("2025-03-26")
        self.assertEqual(r["result"]["protocolVersion"], "2025-03-26")
        r = self.m.initialize("1999-01-01")
        self.assertEqual(r["result"]["protocolVersion"], "2025-06-18")
        self.assertEqual(r["result"]["capabilities"], {"tools": {"listChanged": False}})

    def test_bad_json_unknown_method_invalid_request_and_ping(self):
        self.m.initialize()
        self.m.send(b'{"jsonrpc":"2.0","id":1,"method":')
        self.assertEqual(self.m.recv(), {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32700, "message": "parse error: not JSON"}})
        self.assertEqual(self.m.call(2, "prompts/list"), {"jsonrpc": "2.0", "id": 2, "error": {
            "code": -32601, "message": "method not found: 'prompts/list'"}})
        self.m.send({"jsonrpc": "1.0", "id": 3, "method": "ping"})
        self.assertEqual(self.m.recv()["error"]["code"], -32600)
        # a notification of any name gets nothing back: the ping's reply is next
        self.m.send({"jsonrpc": "2.0", "method": "notifications/nobody"})
        self.assertEqual(self.m.call("p", "ping"), {"jsonrpc": "2.0", "id": "p", "result": {}})
        self.assertEqual(self.m.close(), 0)

    def test_a_line_past_64_mib_is_one_error_and_mcp_goes_on(self):
        self.m.initialize()
        big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (65 << 20) + b'"}}'
        self.m.send(big)
        r = self.m.recv(timeout=120)
        self.assertEqual(r["id"], None)
        self.assertEqual(r["error"]["code"], -32600)
        self.assertIn("64 MiB", r["error"]["message"])
        self.assertEqual(self.m.call(2, "ping")["result"], {})

    def test_tool_errors_are_results_and_bad_arguments_are_protocol_errors(self):
        self.m.initialize()
        r = self.m.tool(1, "run_code", code="raise ValueError('no')")
        self.assertTrue(r["isError"])
        self.assertIn("ValueError: no", text_of(r))
        r = self.m.call(2, "tools/call", {"name": "run_code", "arguments": {"cod": "1"}})
        self.assertEqual(r["error"]["code"], -32602)
        r = self.m.tool(3, "interrupt", session="nosuch")
        self.assertTrue(r["isError"])
        self.assertIn("nosuch", text_of(r))
        r = self.m.tool(4, "run_code", code="import time; time.sleep(5)", timeout=0.5)
        self.assertTrue(r["isError"])
        self.assertIn("[status: timeout", text_of(r))


class OwnSessions(TestCase):
    """Without -L, -S or -H the sessions are mcp's own: they end with it,
    at the end of its input or at SIGTERM, and nothing of them is left."""

    def check_all_gone(self, stop):
        from test_server import await_exit, descendants
        m = Mcp("--via", VIA)
        m.initialize()
        self.assertEqual(m.tool(1, "new_session", session="two")["isError"], False)
        for i, session in enumerate(("default", "two")):
            r = m.tool(2 + i, "run_code", code="import subprocess; subprocess.Popen(['sleep', "
                       "'300']); 'ok'", session=session)
            self.assertFalse(r["isError"], r)
        below = descendants(m.p.pid)
        self.assertGreaterEqual(len(below), 4, below)  # (two sandboxes, each a sleep in it)
        self.assertEqual(stop(m), 0 if stop is Mcp.close else 143)
        self.assertTrue(await_exit(below, timeout=20), [p for p in below
                                                         if os.path.exists("/proc/%d" % p)])

    def test_at_the_end_of_input(self):
        self.check_all_gone(Mcp.close)

    def test_at_sigterm(self):
        def term(m):
            m.p.terminate()
            m.p.wait(60)  # (before the end of its input, which would end it too)
            return m.close()
        self.check_all_gone(term)


class SharedServer(TestCase):
    """With -S an agent and a person share a session: what the agent set,
    `ptybox exec` sees."""

    def test_an_agent_and_ptybox_exec_share_one_session(self):
        folder = tempfile.mkdtemp(prefix="ptybox-mcp-")
        os.chmod(folder, 0o700)
        sock = os.path.join(folder, "s")
        env = dict(os.environ, XDG_RUNTIME_DIR=folder)
        try:
            m = Mcp("-S", sock, "--via", VIA, env=env)  # (starts the server)
            m.initialize()
            r = m.tool(1, "run_code", code="shared = 6 * 7")
            self.assertFalse(r["isError"], r)
            p = subprocess.run([PTYBOX, "-S", sock, "exec", "default", "-c", "print(shared)"],
                               capture_output=True, text=True, timeout=60, env=env)
            self.assertEqual((p.returncode, p.stdout), (0, "42\n"), p.stderr)
            # a restart the agent did not ask for: its next run is told
            p = subprocess.run([PTYBOX, "-S", sock, "restart", "default"],
                               capture_output=True, text=True, timeout=60, env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            r = m.tool(2, "run_code", code="'shared' in globals()")
            self.assertEqual(text_of(r), "[value]\nFalse\n"
                             "[the interpreter was restarted: every variable is lost]\n")
            self.assertEqual(m.close(), 0)
            # the session outlives this mcp: it is the server's
            p = subprocess.run([PTYBOX, "-S", sock, "ls"], capture_output=True, text=True,
                               timeout=60, env=env)
            self.assertIn("default", p.stdout)
        finally:
            subprocess.run([PTYBOX, "-S", sock, "kill-server"], capture_output=True,
                           timeout=60, env=env)
            shutil.rmtree(folder, ignore_errors=True)


class OverSsh(TestCase):
    """-H ssh://: the sessions of the server at the far end, through
    `ssh host ptybox dial-stdio` (the far end is this machine, a real sshd
    on loopback, with a server of the test's own name)."""

    def test_an_agent_runs_code_in_the_far_servers_session(self):
        from test_ssh import LoopbackSshd
        sshd = LoopbackSshd()
        label = "test-mcp-%d" % os.getpid()
        env = dict(sshd.env, PTYBOX_REMOTE=os.path.abspath(PTYBOX))
        try:
            p = subprocess.run([PTYBOX, "-H", sshd.via, "-L", label, "new", "far"],
                               capture_output=True, text=True, timeout=120, env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            m = Mcp("-H", sshd.via, "-L", label, env=env)
            m.initialize()
            r = m.tool(1, "run_code", code="import os; far = 5; os.getpid()", session="far")
            self.assertFalse(r["isError"], r)
            self.assertLess(int(text_of(r).split()[-1]), 10)  # (the far sandbox's pid namespace)
            self.assertEqual(m.close(), 0)
            p = subprocess.run([PTYBOX, "-H", sshd.via, "-L", label, "exec", "far", "-c",
                                "far + 1"], capture_output=True, text=True, timeout=120, env=env)
            self.assertEqual((p.returncode, p.stdout), (0, "6\n"), p.stderr)
        finally:
            subprocess.run([PTYBOX, "-H", sshd.via, "-L", label, "kill-server"],
                           capture_output=True, timeout=60, env=env)
            sshd.close()


class ForAnAgent(TestCase):
    """What the model reads: text capped far below --max-output, pictures only
    when they are pictures, markdown for a bare repr; and no call silently cut
    or answered under another id (review findings mcpnb-1, 3, 4, 7, newuser-1)."""

    def setUp(self):
        self.m = Mcp("--via", VIA)
        self.m.initialize()

    def tearDown(self):
        if self.m.p.poll() is None:
            self.m.close()

    def test_a_nul_is_refused_and_nothing_runs_or_is_written(self):
        m = self.m
        m.send(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"put_file",'
               b'"arguments":{"path":"a.txt","content":"abc\\u0000def"}}}')
        r = m.recv()
        self.assertEqual(r["id"], 1)
        self.assertEqual(r["error"]["code"], -32602)
        self.assertIn("base64", r["error"]["message"])
        m.send(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_code",'
               b'"arguments":{"code":"open(\'ran\', \'w\')\\u0000"}}}')
        self.assertEqual(m.recv()["error"]["code"], -32602)
        r = m.tool(3, "run_code", code="import os; os.path.exists('a.txt'), os.path.exists('ran')")
        self.assertIn("(False, False)", text_of(r))

    def test_ids_as_sent_and_utf8_lines(self):
        m = self.m
        m.send(b'{"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"}')
        self.assertEqual(m.recv()["id"], 12345678901234567890)
        m.send(('{"jsonrpc":"2.0","id":2,"method":"x%s"}' % ("\u00e9" * 600)).encode())
        r = m.recv()  # (json.loads of the bytes: strict UTF-8)
        self.assertEqual(r["error"]["code"], -32601)

    def test_display_updates_are_the_latest_rendering_once(self):
        r = self.m.tool(1, "run_code", code=(
            "h = display('0%', display_id=True)\n"
            "for p in ('30%', '60%', '100%'): h.update(p)\n"
            "print('done')"))
        items = [c.get("text", "") for c in r["content"]]
        shown = [t for t in items if "%" in t]
        self.assertEqual(len(shown), 1, items)
        self.assertIn("100%", shown[0])
        self.assertNotIn("60%", "".join(items))

    def test_big_output_is_capped_head_and_tail(self):
        r = self.m.tool(1, "run_code", code="print('h' * 1000 + 'x' * 10_000_000 + 't' * 1000)")
        t = text_of(r)
        self.assertLess(len(t), 70_000)
        self.assertTrue(t.startswith("h" * 1000), t[:50])
        self.assertRegex(t, r"\n\[\.\.\. \d+ bytes cut \.\.\.\]\n")
        self.assertIn("t" * 1000, t)
        r = self.m.tool(2, "run_code", code="print('y' * 5000)", max_output=1000)
        self.assertIn("[... 4001 bytes cut ...]", text_of(r))

    def test_a_picture_that_is_not_one_is_said_so_and_markdown_wins_over_a_bare_repr(self):
        r = self.m.tool(1, "run_code", code=(
            "class A:\n  def _repr_mimebundle_(self, **k): return {'image/png': 'not base64 !!'}\n"
            "A()"))
        self.assertEqual([c for c in r["content"] if c["type"] == "image"], [])
        self.assertIn("not image/png data", text_of(r))
        r = self.m.tool(2, "run_code", code=(
            "class C:\n  def _repr_markdown_(self): return '**bold**'\nC()"))
        self.assertIn("[value]\n**bold**", text_of(r))
        self.assertNotIn("object at 0x", text_of(r))

    def test_a_restart_asked_for_is_said_by_its_reply_and_not_again_by_the_next_run(self):
        m = self.m
        self.assertFalse(m.tool(1, "run_code", code="x = 1")["isError"])
        self.assertIn("variables gone", text_of(m.tool(2, "restart")))
        r = m.tool(3, "run_code", code="'x' in globals()")
        self.assertEqual(text_of(r), "[value]\nFalse\n")
        # sent at once, the run after the restart (the server keeps their order)
        m.tool(4, "run_code", code="x = 1")
        m.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "restart", "arguments": {}}})
        m.send({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                "params": {"name": "run_code", "arguments": {"code": "'x' in globals()"}}})
        got = {r["id"]: r["result"] for r in (m.recv(), m.recv())}
        self.assertIn("variables gone", text_of(got[5]))
        self.assertEqual(text_of(got[6]), "[value]\nFalse\n")
        # a restart of a session that is not there tells no later run anything
        self.assertTrue(m.tool(7, "restart", session="nosuch")["isError"])

    def test_hints_lists_and_put_errors(self):
        r = self.m.tool(1, "interrupt")
        self.assertIn("run_code makes it", text_of(r))
        self.assertNotIn("new_session", text_of(r))
        self.m.tool(2, "new_session", session="two")
        self.m.tool(3, "run_code", code="1")
        lines = text_of(self.m.tool(4, "list_sessions")).splitlines()
        self.assertEqual(sorted(json.loads(l)["name"] for l in lines), ["default", "two"])
        r = self.m.call(5, "tools/call", {"name": "put_file", "arguments": {
            "path": "a", "content": "@@", "encoding": "base64"}})
        self.assertIn("'content' is not base64", r["error"]["message"])


class MaxText(TestCase):
    def test_max_text_sets_the_cap(self):
        m = Mcp("--via", VIA, "--max-text", "2K")
        try:
            m.initialize()
            t = text_of(m.tool(1, "run_code", code="print('z' * 100_000)"))
            self.assertIn("[... %d bytes cut ...]" % (100_001 - 2048), t)
        finally:
            m.close()


class TimeoutIsTheOperators(TestCase):
    """newuser-4: `ptybox mcp --timeout N` is the most a run_code call may ask for."""

    def test_a_larger_timeout_is_cut_to_the_command_lines_and_said(self):
        m = Mcp("--via", VIA, "--timeout", "1")
        try:
            m.initialize()
            tools = m.call(1, "tools/list")["result"]["tools"]
            desc = tools[0]["inputSchema"]["properties"]["timeout"]["description"]
            self.assertIn("default and most: 1", desc)
            self.assertNotIn("30", desc)
            start = time.monotonic()
            r = m.tool(2, "run_code", code="import time; time.sleep(4); print('slept')",
                       timeout=100)
            self.assertLess(time.monotonic() - start, 3.5)
            self.assertTrue(r["isError"])
            self.assertEqual(r["structuredContent"]["status"], "timeout")
            t = text_of(r)
            self.assertFalse(t.startswith("slept"), t)  # (the traceback quotes the code)
            self.assertEqual(t.count("[timeout: 1 s is the most here (ptybox mcp --timeout)"),
                             1, t)
            # a lower one is the call's own, and not remarked on
            r = m.tool(3, "run_code", code="import time; time.sleep(2)", timeout=0.3)
            self.assertEqual(r["structuredContent"]["status"], "timeout")
            self.assertNotIn("[timeout:", text_of(r))
            r = m.tool(4, "run_code", code="print('ok')", timeout=5)
            self.assertEqual(text_of(r), "ok\n[timeout: 1 s is the most here (ptybox mcp "
                                         "--timeout); the run had 1 s]\n")
        finally:
            m.close()

    def test_without_timeout_the_schema_says_the_sessions_default(self):
        m = Mcp("--via", VIA)
        try:
            m.initialize()
            tools = m.call(1, "tools/list")["result"]["tools"]
            desc = tools[0]["inputSchema"]["properties"]["timeout"]["description"]
            self.assertIn("default and most: 30", desc)
        finally:
            m.close()


class Cli(TestCase):
    def test_help_and_bad_options(self):
        p = subprocess.run([PTYBOX, "mcp", "--help"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0)
        self.assertIn("mcpServers", p.stdout)
        self.assertIn("--memory", p.stdout)
        p = subprocess.run([PTYBOX, "mcp", "--bogus"], capture_output=True, text=True,
                           timeout=30, stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr.count("\n"), 2, p.stderr)  # (the line, then where help is)
        p = subprocess.run([PTYBOX, "mcp", "--mount", "rel:/data"], capture_output=True,
                           text=True, timeout=30, stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 2)
        self.assertIn("absolute", p.stderr)
        p = subprocess.run([PTYBOX, "mcp", "--max-text", "10"], capture_output=True,
                           text=True, timeout=30, stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr, "ptybox: mcp: --max-text 10: expected a size from 256 to 64M\n")


if __name__ == "__main__":
    unittest.main()
