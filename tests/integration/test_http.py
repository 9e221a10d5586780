"""`ptybox serve --http`: Piston's API, spoken to as Piston's clients speak it."""
import http.client
import json
import os
import platform
import resource
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

from ptybox_test import PTYBOX, TestCase

HERE = os.path.dirname(os.path.abspath(__file__))
# The request timeout of h2o (HTTP_REQ_TIMEOUT_MS).
REQ_TIMEOUT = 10

# From Piston's README (engineer-man/piston, "Execute Endpoint"), unchanged.
README_EXECUTE = {
    "language": "js",
    "version": "15.10.0",
    "files": [
        {
            "name": "my_cool_code.js",
            "content": "console.log(process.argv)"
        }
    ],
    "stdin": "",
    "args": ["1", "2", "3"],
    "compile_timeout": 10000,
    "run_timeout": 3000,
    "compile_cpu_time": 10000,
    "run_cpu_time": 3000,
    "compile_memory_limit": -1,
    "run_memory_limit": -1
}
# Its reply's run, for the members a client reads.
README_RUN_KEYS = {"stdout", "stderr", "output", "code", "signal", "message", "status",
                   "cpu_time", "wall_time", "memory"}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def system_python_version():
    out = subprocess.run(["python3", "-c", "import platform; print(platform.python_version())"],
                         capture_output=True, text=True, timeout=30)
    return out.stdout.strip()


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class HttpServer:
    """`ptybox serve --http 127.0.0.1:PORT ARGS`, ready once it says it serves."""

    def __init__(self, *args, addr=None, env=None):
        self.port = free_port()
        self.addr = addr or "127.0.0.1:%d" % self.port
        self.p = subprocess.Popen([PTYBOX, "serve", "--http", self.addr] + list(args),
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, env=env)
        line = self.p.stderr.readline()  # (it says so once it listens, or why not)
        if "serving" not in line:
            self.p.wait(timeout=30)
            raise AssertionError("serve --http did not start: %r" % line)

    def conn(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=60):
        c = self.conn(timeout)
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data

    def execute(self, req, headers=None):
        status, _, data = self.request("POST", "/api/v2/execute", req,
                                       {"Content-Type": "application/json", **(headers or {})})
        return status, json.loads(data)

    def close(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.p.stderr.close()
        return self.p.returncode


def py(code, **more):
    return {"language": "python", "version": "*", "files": [{"name": "main.py", "content": code}],
            **more}


class HttpTest(TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = HttpServer("--pool", "2")

    @classmethod
    def tearDownClass(cls):
        cls.s.close()

    def test_runtimes_name_the_systems_python(self):
        status, headers, data = self.s.request("GET", "/api/v2/runtimes")
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "application/json")
        runtimes = json.loads(data)
        self.assertEqual(runtimes, [{"language": "python", "version": system_python_version(),
                                     "aliases": ["py", "python3"]}])

    def test_readme_execute_example_is_a_readme_400(self):
        # Its js runtime is not ours: the reply is the README's 400, worded as Piston does.
        status, r = self.s.execute(README_EXECUTE)
        self.assertEqual(status, 400)
        self.assertEqual(r, {"message": "js-15.10.0 runtime is unknown"})

    def test_readme_example_in_python(self):
        req = dict(README_EXECUTE, language="python", version=system_python_version(),
                   files=[{"name": "my_cool_code.py",
                           "content": "import sys\nprint(sys.argv)"}])
        status, r = self.s.execute(req)
        self.assertEqual(status, 200, r)
        self.assertEqual(r["language"], "python")
        self.assertEqual(r["version"], system_python_version())
        self.assertNotIn("compile", r)
        self.assertEqual(set(r["run"]), README_RUN_KEYS)
        self.assertEqual(r["run"]["stdout"], "['my_cool_code.py', '1', '2', '3']\n")
        self.assertEqual(r["run"]["output"], r["run"]["stdout"])
        self.assertEqual((r["run"]["code"], r["run"]["signal"], r["run"]["status"],
                          r["run"]["message"]), (0, None, None, None))

    def test_files_beside_stdin_and_output_in_order(self):
        code = ("import sys, helper\nprint(input(), helper.X)\nsys.stdout.flush()\n"
                "sys.stderr.write('err\\n'); sys.stderr.flush()\nprint(open('data.bin','rb').read())\n")
        status, r = self.s.execute({
            "language": "py", "version": "3", "stdin": "hello\n",
            "files": [{"name": "main.py", "content": code},
                      {"name": "helper.py", "content": "X = 42"},
                      {"name": "data.bin", "content": "AAEC/w==", "encoding": "base64"}]})
        self.assertEqual(status, 200, r)
        self.assertEqual(r["run"]["stdout"], "hello 42\nb'\\x00\\x01\\x02\\xff'\n")
        self.assertEqual(r["run"]["stderr"], "err\n")
        self.assertEqual(r["run"]["output"], "hello 42\nerr\nb'\\x00\\x01\\x02\\xff'\n")
        status, r = self.s.execute({"language": "python3", "version": "3.x",
                                    "files": [{"content": "7072696e742832202b203229", "encoding": "hex"}]})
        self.assertEqual((status, r["run"]["stdout"]), (200, "4\n"))

    def test_each_execute_is_a_fresh_sandbox(self):
        status, r = self.s.execute(py("open('/tmp/mark', 'w').write('x')\nprint('ok')"))
        self.assertEqual(r["run"]["stdout"], "ok\n")
        status, r = self.s.execute(py("import os; print(os.path.exists('/tmp/mark'))"))
        self.assertEqual(r["run"]["stdout"], "False\n")

    def test_exit_codes_errors_signals_and_timeouts(self):
        _, r = self.s.execute(py("import sys; sys.exit(3)"))
        self.assertEqual((r["run"]["code"], r["run"]["status"]), (3, "RE"))
        _, r = self.s.execute(py("1/0"))
        self.assertEqual((r["run"]["code"], r["run"]["status"]), (1, "RE"))
        self.assertIn("ZeroDivisionError: division by zero", r["run"]["stderr"])
        self.assertIn("ZeroDivisionError", r["run"]["output"])
        _, r = self.s.execute(py("import os, signal; os.kill(os.getpid(), signal.SIGKILL)"))
        self.assertEqual((r["run"]["code"], r["run"]["signal"], r["run"]["status"]),
                         (None, "SIGKILL", "SG"))
        # (newuser-10: a one-shot execute is not restarted: its message says no restart)
        self.assertIn("killed by signal 9", r["run"]["message"])
        self.assertNotIn("restarted", r["run"]["message"])
        t = time.monotonic()
        _, r = self.s.execute(py("while True: pass", run_timeout=300))
        self.assertEqual(r["run"]["status"], "TO")
        self.assertLess(time.monotonic() - t, 10)

    def test_no_files_is_400_in_pistons_words(self):
        status, r = self.s.execute({"language": "python", "version": "*", "files": []})
        self.assertEqual(status, 400)
        self.assertEqual(r, {"message": "files must include at least one utf8 encoded file"})
        status, r = self.s.execute({"language": "python", "version": "*", "files": {}})
        self.assertEqual((status, r), (400, {"message": "files is required as an array"}))

    def test_memory_limit(self):
        _, r = self.s.execute(py("x = bytearray(400 << 20); print('big')",
                                 run_memory_limit=128 << 20))
        self.assertNotEqual(r["run"]["stdout"], "big\n")
        self.assertNotEqual(r["run"]["code"], 0)
        _, r = self.s.execute(py("x = bytearray(8 << 20); print('small')",
                                 run_memory_limit=256 << 20))
        self.assertEqual(r["run"]["stdout"], "small\n")

    def test_bad_requests_get_their_status(self):
        cases = [
            ("POST", "/api/v2/execute", "{not json", 400),
            ("POST", "/api/v2/execute", {"language": "python", "version": "*"}, 400),
            ("POST", "/api/v2/execute", py("x", run_timeout="soon"), 400),
            ("POST", "/api/v2/execute", {"language": "python", "version": "2.7", "files": [{"content": ""}]}, 400),
            ("POST", "/api/v2/execute", {"language": "python", "version": "*",
                                         "files": [{"content": "!!", "encoding": "base64"}]}, 400),
            ("POST", "/api/v2/execute", {"language": "python", "version": "*",
                                         "files": [{"name": "../x.py", "content": ""}]}, 400),
            ("GET", "/api/v2/execute", None, 405),
            ("DELETE", "/api/v2/runtimes", None, 405),
            ("GET", "/api/v2/nothing", None, 404),
            ("GET", "/", None, 404),
        ]
        for method, path, body, want in cases:
            status, headers, data = self.s.request(method, path, body)
            self.assertEqual(status, want, (method, path, body, data))
            msg = json.loads(data)
            self.assertEqual(list(msg), ["message"])
            self.assertTrue(msg["message"])
            if want == 405:
                self.assertIn(headers["allow"], ("GET", "POST"))
        self.assertEqual(self.s.request("POST", "/api/v2/execute", {"language": "python", "version": "2.7",
                                        "files": [{"content": ""}]})[2],
                         b'{"message":"python-2.7 runtime is unknown"}')

    def test_a_100_mb_body_is_413_and_memory_stays_bounded(self):
        before = rss_kib(self.s.p.pid)
        sock = socket.create_connection(("127.0.0.1", self.s.port), timeout=30)
        size = 100 << 20
        sock.sendall(b"POST /api/v2/execute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % size)
        chunk = b"x" * (1 << 20)
        sent = 0
        try:
            while sent < size:
                sock.sendall(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        reply = b""
        try:
            while True:
                d = sock.recv(65536)
                if not d:
                    break
                reply += d
        except (ConnectionResetError, socket.timeout):
            pass
        sock.close()
        self.assertTrue(reply.startswith(b"HTTP/1.1 413"), reply[:200])
        self.assertLess(rss_kib(self.s.p.pid) - before, 48 << 10)  # (16 MiB is the cap)
        status, _, _ = self.s.request("GET", "/api/v2/runtimes")
        self.assertEqual(status, 200)

    def test_a_1_mib_header_is_400_and_the_server_goes_on(self):
        sock = socket.create_connection(("127.0.0.1", self.s.port), timeout=30)
        try:
            sock.sendall(b"GET /api/v2/runtimes HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 20)
                         + b"\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        reply = sock.recv(200)
        sock.close()
        self.assertTrue(reply.startswith(b"HTTP/1.1 400"), reply)
        self.assertEqual(self.s.request("GET", "/api/v2/runtimes")[0], 200)

    def test_slowloris_is_cut_while_others_are_served(self):
        slow = socket.create_connection(("127.0.0.1", self.s.port), timeout=REQ_TIMEOUT * 3)
        head = b"GET /api/v2/runtimes HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200
        start = time.monotonic()
        cut = None
        served = False
        for i, byte in enumerate(head):
            try:
                slow.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                cut = time.monotonic() - start
                break
            if i == 2:
                _, r = self.s.execute(py("print('meanwhile')"))
                served = r["run"]["stdout"] == "meanwhile\n"
            # (its readability is the cut: the server closed it)
            import select
            readable, _, _ = select.select([slow], [], [], 1.0)
            if readable:
                cut = time.monotonic() - start
                break
            if time.monotonic() - start > REQ_TIMEOUT * 3:
                break
        slow.close()
        self.assertTrue(served)
        self.assertIsNotNone(cut, "a client sending a byte a second was not cut")
        self.assertGreater(cut, REQ_TIMEOUT - 2)  # (cut by the timeout, not at once)
        self.assertLess(cut, REQ_TIMEOUT + 5)

    def test_2000_idle_connections_then_a_request_is_served(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard < 2200:
            self.skipTest("RLIMIT_NOFILE hard limit %d" % hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2200), hard))
        idle = []
        before = rss_kib(self.s.p.pid)
        try:
            for _ in range(2000):
                idle.append(socket.create_connection(("127.0.0.1", self.s.port), timeout=30))
            # (each has been accepted once the server answers one after them)
            _, r = self.s.execute(py("print('through')"))
            self.assertEqual(r["run"]["stdout"], "through\n")
            grown = rss_kib(self.s.p.pid) - before
            self.assertLess(grown, 64 << 10)  # (32 KiB each at most)
        finally:
            for s in idle:
                s.close()
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


class HttpTokenTest(TestCase):
    def test_other_addresses_need_a_token_file(self):
        p = subprocess.run([PTYBOX, "serve", "--http", "0.0.0.0:%d" % free_port()],
                           capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 2)
        self.assertIn("needs --token-file", p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)
        p = subprocess.run([PTYBOX, "serve", "--http", "nowhere"], capture_output=True,
                           text=True, timeout=30, stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 2)
        self.assertIn("expected HOST:PORT", p.stderr)

    def test_every_request_needs_the_token(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "token")
            token = "s3cret-token-0123456789"
            with open(path, "w") as f:
                f.write(token + "\n")
            s = HttpServer("--token-file", path, "--pool", "1")
            try:
                for headers in ({}, {"Authorization": "Bearer wrong"},
                                {"Authorization": "Bearer " + token[:-1]},
                                {"Authorization": token}):
                    status, hdrs, data = s.request("GET", "/api/v2/runtimes", headers=headers)
                    self.assertEqual(status, 401, headers)
                    self.assertEqual(hdrs.get("www-authenticate"), "Bearer")
                    self.assertIn("message", json.loads(data))
                    status, _ = s.execute(py("print(1)"), headers=headers)
                    self.assertEqual(status, 401)
                auth = {"Authorization": "Bearer " + token}
                status, _, _ = s.request("GET", "/api/v2/runtimes", headers=auth)
                self.assertEqual(status, 200)
                status, r = s.execute(py("print(1)"), headers=auth)
                self.assertEqual((status, r["run"]["stdout"]), (200, "1\n"))
            finally:
                s.close()


def read_reply(sock, deadline=10):
    """What the server answers on sock until it closes (or deadline s pass)."""
    sock.settimeout(deadline)
    reply = b""
    try:
        while True:
            d = sock.recv(65536)
            if not d:
                break
            reply += d
    except (ConnectionResetError, socket.timeout):
        pass
    return reply


class HttpGateTest(TestCase):
    """hostile-3: the token and the room for a body are checked on the headers, before any
    byte of the body is held."""

    def test_no_token_is_401_before_the_body_and_memory_stays_flat(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "token")
            with open(path, "w") as f:
                f.write("s3cret-token-0123456789\n")
            s = HttpServer("--token-file", path, "--pool", "1")
            socks = []
            try:
                before = rss_kib(s.p.pid)
                for _ in range(40):
                    sock = socket.create_connection(("127.0.0.1", s.port), timeout=30)
                    sock.sendall(b"POST /api/v2/execute HTTP/1.1\r\nHost: x\r\n"
                                 b"Content-Length: 16000000\r\n\r\n" + b"x" * 65536)
                    socks.append(sock)
                for sock in socks:
                    # (the answer comes with no more of the body sent)
                    reply = read_reply(sock)
                    self.assertTrue(reply.startswith(b"HTTP/1.1 401"), reply[:200])
                    self.assertIn(b"WWW-Authenticate: Bearer", reply)
                    self.assertIn(b"Authorization", reply)
                self.assertLess(rss_kib(s.p.pid) - before, 32 << 10)
                auth = {"Authorization": "Bearer s3cret-token-0123456789"}
                status, r = s.execute(py("print(1)"), headers=auth)
                self.assertEqual((status, r["run"]["stdout"]), (200, "1\n"))
            finally:
                for sock in socks:
                    sock.close()
                s.close()

    def test_bodies_past_the_total_budget_are_503_with_retry_after(self):
        # (ASan's quarantine would hold every freed chunk of a growing body:
        # the memory measured would be ASan's, not the server's)
        s = HttpServer("--pool", "1", env=dict(
            os.environ, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=4"))
        socks = []
        try:
            before = rss_kib(s.p.pid)
            size = 15 << 20  # (64 MiB in all: four fit, the fifth does not)
            for _ in range(4):
                sock = socket.create_connection(("127.0.0.1", s.port), timeout=30)
                sock.sendall(b"POST /api/v2/execute HTTP/1.1\r\nHost: x\r\n"
                             b"Content-Length: %d\r\n\r\n" % size + b"x" * (size - 1))
                socks.append(sock)
            sock = socket.create_connection(("127.0.0.1", s.port), timeout=30)
            socks.append(sock)
            sock.sendall(b"POST /api/v2/execute HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Length: %d\r\n\r\n" % size)
            reply = read_reply(sock)
            self.assertTrue(reply.startswith(b"HTTP/1.1 503"), reply[:200])
            self.assertIn(b"Retry-After: 1", reply)
            self.assertLess(rss_kib(s.p.pid) - before, 96 << 10)
            # a small request still fits; and once the four went, a large one fits again
            self.assertEqual(s.execute(py("print(2)"))[1]["run"]["stdout"], "2\n")
            for sock in socks:
                sock.close()
            socks = []
            big = py("x = '%s'\nprint(len(x))" % ("y" * (12 << 20)), run_timeout=60000)
            deadline = time.monotonic() + 30
            while True:
                status, r = s.execute(big)
                if status != 503 or time.monotonic() > deadline:
                    break
            self.assertEqual((status, r["run"]["stdout"]), (200, "%d\n" % (12 << 20)), r)
        finally:
            for sock in socks:
                sock.close()
            s.close()

    def test_a_connection_carries_one_request(self):
        s = HttpServer("--pool", "1")
        try:
            c = s.conn()
            for _ in range(3):  # (http.client opens the next one itself)
                c.request("GET", "/api/v2/runtimes")
                r = c.getresponse()
                self.assertEqual(r.getheader("Connection"), "close")
                r.read()
                self.assertEqual(r.status, 200)
            c.close()
        finally:
            s.close()


class HttpQueueTest(TestCase):
    def test_past_max_executes_429_with_retry_after(self):
        import threading
        s = HttpServer("--max-executes", "1", "--pool", "1")
        try:
            seen = None
            deadline = time.monotonic() + 30
            # (which of two executes comes first is the server's to say, and a
            # session counts until it is gone: the long one is tried again
            # until it is the one that runs)
            while seen is None and time.monotonic() < deadline:
                long = {}
                t = threading.Thread(target=lambda: long.update(
                    r=s.execute(py("import time; time.sleep(3); print('long')",
                                   run_timeout=20000))))
                t.start()
                while t.is_alive() and time.monotonic() < deadline:
                    status, headers, data = s.request("POST", "/api/v2/execute", py("print(2)"))
                    if status == 429:
                        seen = (headers.get("retry-after"), json.loads(data))
                        break
                    self.assertEqual(status, 200, data)
                t.join(timeout=30)
                if "run" not in long["r"][1]:  # (the long one came second: again)
                    self.assertEqual(long["r"][0], 429)
                    seen = None
            self.assertIsNotNone(seen, "no 429 while an execute ran with --max-executes 1")
            self.assertEqual(seen[0], "1")
            self.assertIn("message", seen[1])
            self.assertEqual(long["r"][1]["run"]["stdout"], "long\n")
            status, r = s.execute(py("print(3)"))  # (served again once it is done)
            self.assertEqual((status, r["run"]["stdout"]), (200, "3\n"))
        finally:
            s.close()


class HttpSessionsTest(TestCase):
    """/v1/sessions: the server's protocol objects over HTTP."""

    @classmethod
    def setUpClass(cls):
        cls.s = HttpServer()

    @classmethod
    def tearDownClass(cls):
        cls.s.close()

    def call(self, method, path, body=None):
        status, headers, data = self.s.request(method, "/v1/sessions" + path, body)
        return status, json.loads(data) if headers.get("content-type") == "application/json" else data

    def test_a_session_keeps_state_and_streams_as_it_runs(self):
        status, r = self.call("POST", "", {"name": "keep", "options": {"timeout": 10}})
        self.assertEqual((status, r), (201, {"ok": True, "session": "keep"}))
        self.addCleanup(self.call, "DELETE", "/keep")
        status, r = self.call("POST", "/keep/execute", {"code": "x = 41", "stream": False})
        self.assertEqual((status, r["status"]), (200, "ok"))
        # Streamed, with no event before the result: still NDJSON, one line.
        status, headers, data = self.s.request("POST", "/v1/sessions/keep/execute", {"code": "y = 1"})
        self.assertEqual((status, headers["content-type"]), (200, "application/x-ndjson"))
        self.assertEqual(json.loads(data.splitlines()[0])["status"], "ok")
        # Each event is sent as it comes: the first a second before the rest.
        c = self.s.conn()
        c.request("POST", "/v1/sessions/keep/execute", body=json.dumps({
            "code": "import time\nprint('first', flush=True)\ntime.sleep(1.5)\nprint('second')\nx + 1"}))
        r = c.getresponse()
        self.assertEqual(r.status, 200)
        self.assertEqual(r.getheader("content-type"), "application/x-ndjson")
        first = json.loads(r.readline())
        at_first = time.monotonic()
        self.assertEqual((first["event"], first["name"], first["text"]), ("stream", "stdout", "first\n"))
        lines = [json.loads(l) for l in r.read().splitlines()]
        self.assertGreater(time.monotonic() - at_first, 1.0)
        c.close()
        self.assertEqual(lines[-1]["status"], "ok")
        self.assertEqual(lines[-1]["result"], {"text/plain": "42"})
        self.assertIn("second\n", [l.get("text") for l in lines[:-1]])

    def test_files_interrupt_restart_ls_and_kill(self):
        self.assertEqual(self.call("POST", "", {"name": "files"})[0], 201)
        data = bytes(range(256)) * 100
        status, r = self.call("PUT", "/files/files/sub%20dir.bin", data)
        self.assertEqual((status, r["size"]), (200, len(data)))
        status, got = self.call("GET", "/files/files/sub%20dir.bin")
        self.assertEqual((status, got), (200, data))
        status, r = self.call("GET", "/files/files/missing")
        self.assertEqual((status, r["code"], r["errno"]), (404, "file", "ENOENT"))
        # interrupt: a loop ends, the state stays
        self.call("POST", "/files/execute", {"code": "y = 5", "stream": False})
        import threading
        out = {}
        t = threading.Thread(target=lambda: out.update(r=self.call(
            "POST", "/files/execute", {"code": "while True: pass", "stream": False})))
        t.start()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            status, r = self.call("POST", "/files/interrupt")
            if r.get("interrupted"):
                break
        t.join(timeout=30)
        self.assertEqual(out["r"][1]["status"], "interrupted")
        self.assertEqual(self.call("POST", "/files/execute", {"code": "y", "stream": False})[1]["result"],
                         {"text/plain": "5"})
        self.assertEqual(self.call("POST", "/files/restart"), (200, {"ok": True}))
        r = self.call("POST", "/files/execute", {"code": "y", "stream": False})[1]
        self.assertEqual(r["error"]["name"], "NameError")
        status, r = self.call("GET", "")
        self.assertIn("files", [x["name"] for x in r["sessions"]])
        self.assertEqual(self.call("DELETE", "/files"), (200, {"ok": True}))
        status, r = self.call("GET", "")
        self.assertNotIn("files", [x["name"] for x in r["sessions"]])

    def test_errors_have_their_status(self):
        self.assertEqual(self.call("POST", "/nobody/execute", {"code": "1"})[0], 404)
        self.assertEqual(self.call("DELETE", "/nobody")[0], 404)
        self.assertEqual(self.call("POST", "", {"options": {}})[0], 400)
        self.assertEqual(self.call("POST", "", {"name": "a/b"})[0], 400)
        self.assertEqual(self.call("POST", "", {"name": "x", "options": {"memroy": "1G"}})[0], 400)
        self.assertEqual(self.call("POST", "", "[1]")[0], 400)
        # An HTTP client is another machine's: no way out of the sandbox.
        for options in ({"via": "none"}, {"via": "exec:sh -c id"}, {"via": "ssh://localhost"},
                        {"python": "/bin/sh"}, {"mount": "/etc:/x"}):
            status, r = self.call("POST", "", {"name": "out", "options": options})
            self.assertEqual((status, r["code"]), (400, "usage"), options)
            self.assertIn("refused through dial-stdio and HTTP", r["error"])
        status, r = self.call("POST", "", {"name": "out", "record": "/tmp/x.cast"})
        self.assertEqual(status, 400)
        self.assertEqual(self.call("POST", "", {"name": "twice"})[0], 201)
        self.addCleanup(self.call, "DELETE", "/twice")
        self.assertEqual(self.call("POST", "", {"name": "twice"})[0], 409)
        self.assertEqual(self.call("POST", "/twice/execute", {"code": "1", "timout": 1})[0], 400)
        self.assertEqual(self.call("GET", "/twice/execute")[0], 405)
        self.assertEqual(self.call("PUT", "/twice")[0], 405)
        self.assertEqual(self.call("POST", "/twice/nothing")[0], 404)
        self.assertEqual(self.call("GET", "/twice/files/%zz")[0], 400)


class HttpLimitsTest(TestCase):
    """newuser-7: an HTTP client counts as another machine: no host network unless the
    operator allows it, and serve's limits are the most and the default it gets."""

    def new(self, s, name, options):
        status, _, data = s.request("POST", "/v1/sessions", {"name": name, "options": options})
        return status, json.loads(data)

    def run_code(self, s, name, code, **more):
        status, _, data = s.request("POST", "/v1/sessions/%s/execute" % name,
                                    {"code": code, "stream": False, **more})
        return status, json.loads(data)

    def test_net_is_refused_without_allow_net(self):
        s = HttpServer("--pool", "1")
        try:
            status, r = self.new(s, "hn", {"net": True})
            self.assertEqual((status, r["code"]), (400, "usage"))
            self.assertIn("--allow-net", r["error"])
            self.assertEqual(s.request("GET", "/v1/sessions")[0], 200)
            self.assertNotIn(b'"hn"', s.request("GET", "/v1/sessions")[2])
        finally:
            s.close()
        s = HttpServer("--pool", "1", "--allow-net")
        try:
            self.assertEqual(self.new(s, "hn", {"net": True})[0], 201)
        finally:
            s.close()

    def test_limits_are_the_most_and_the_default(self):
        s = HttpServer("--pool", "1", "--memory", "512M", "--timeout", "2", "--pids", "64")
        try:
            for opts in ({"memory": "0"}, {"memory": "1G"}, {"memory": 1 << 30}, {"pids": 0},
                         {"pids": 65}, {"timeout": 0}, {"timeout": 3}):
                status, r = self.new(s, "big", opts)
                self.assertEqual((status, r.get("code")), (400, "usage"), opts)
                self.assertIn("only lower", r["error"])
            # not asked: the operator's; asked lower: the request's
            self.assertEqual(self.new(s, "dflt", {})[0], 201)
            self.assertEqual(self.new(s, "low", {"memory": "256M"})[0], 201)
            as_limit = "import resource; resource.getrlimit(resource.RLIMIT_AS)[0]"
            self.assertEqual(self.run_code(s, "dflt", as_limit)[1]["result"]["text/plain"],
                             str(512 << 20))
            self.assertEqual(self.run_code(s, "low", as_limit)[1]["result"]["text/plain"],
                             str(256 << 20))
            # an exec's timeout may only lower serve's
            for t in (0, 2.5):
                status, r = self.run_code(s, "dflt", "1", timeout=t)
                self.assertEqual((status, r.get("code")), (400, "usage"), t)
            start = time.monotonic()
            status, r = self.run_code(s, "dflt", "import time; time.sleep(6)")
            self.assertEqual(r["status"], "timeout")
            self.assertLess(time.monotonic() - start, 5)
            # Piston's execute: run_timeout and run_memory_limit within them too
            status, r = s.execute(py("print(1)", run_timeout=3000))
            self.assertEqual((status, r), (400, {
                "message": "run_timeout cannot exceed the configured limit of 2000"}))
            status, r = s.execute(py("print(1)", run_memory_limit=1 << 30))
            self.assertEqual((status, r), (400, {
                "message": "run_memory_limit cannot exceed the configured limit of %d"
                % (512 << 20)}))
            status, r = s.execute(py("import resource; print(resource.getrlimit("
                                     "resource.RLIMIT_AS)[0])", run_memory_limit=-1))
            self.assertEqual((status, r["run"]["stdout"]), (200, "%d\n" % (512 << 20)))
        finally:
            s.close()

    def test_without_limits_the_defaults_are_the_most(self):
        s = HttpServer("--pool", "1")
        try:
            status, r = self.new(s, "x", {"memory": "0", "cpus": 0, "timeout": 0})
            self.assertEqual((status, r["code"]), (400, "usage"))
            self.assertIn("the default", r["error"])
        finally:
            s.close()

    def test_serve_http_takes_the_limits_and_refuses_the_rest(self):
        for args, want in ((["--net"], "--http takes"), (["--mount", "/tmp:/x"], "--http takes"),
                           (["--memory", "lots"], "--memory lots")):
            p = subprocess.run([PTYBOX, "serve", "--http", "127.0.0.1:%d" % free_port()] + args,
                               capture_output=True, text=True, timeout=30,
                               stdin=subprocess.DEVNULL)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(want, p.stderr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1)
        p = subprocess.run([PTYBOX, "serve", "--stdio", "--allow-net"], capture_output=True,
                           text=True, timeout=30, stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--allow-net goes with --http", p.stderr)
        help_text = subprocess.run([PTYBOX, "serve", "--help"], capture_output=True, text=True,
                                   timeout=30).stdout
        self.assertIn("--allow-net", help_text)


class PistonClientTest(TestCase):
    """The npm package piston-client, unchanged, pointed at ptybox."""

    def test_piston_client(self):
        npm = shutil.which("npm")
        node = shutil.which("node")
        if not npm or not node:
            self.skipTest("npm and node are not installed")
        where = os.path.join(os.path.dirname(os.path.abspath(PTYBOX)), "piston-client")
        os.makedirs(where, exist_ok=True)
        for f in ("package.json", "package-lock.json"):
            shutil.copy(os.path.join(HERE, "..", "piston", f), where)
        if not os.path.exists(os.path.join(where, "node_modules", "piston-client")):
            subprocess.run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=where,
                           check=True, timeout=300, capture_output=True)
        s = HttpServer("--pool", "1")
        try:
            script = """
import piston from "piston-client";
const client = piston({server: "http://127.0.0.1:%d"});
const runtimes = await client.runtimes();
const a = await client.execute("python", "import sys\\nprint(sys.argv[1:], input())", {stdin: "typed"});
const b = await client.execute({language: "python", version: "*", files: [{name: "x.py", content: "raise SystemExit(5)"}], args: []});
console.log(JSON.stringify({runtimes, a, b}));
""" % s.port
            p = subprocess.run([node, "--input-type=module", "-e", script], cwd=where,
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            out = json.loads(p.stdout)
            self.assertEqual(out["runtimes"][0]["language"], "python")
            self.assertEqual(out["a"]["run"]["stdout"], "['1', '2', '3'] typed\n")
            self.assertEqual(out["a"]["version"], system_python_version())
            self.assertEqual((out["b"]["run"]["code"], out["b"]["run"]["status"]), (5, "RE"))
        finally:
            s.close()


if __name__ == "__main__":
    unittest.main()
