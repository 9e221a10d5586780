"""A request with a member twice is refused, whoever reads it (review2-1..3): cJSON keeps
both, and where one reader takes the first and another the last, a check and what it
checks disagree ("net": false, "net": true passed serve --http's limits; a second "op" made
a restart a new; a second "id" left a call waiting for ever). Each test failed on 39d16d4."""
import json
import socket

from ptybox_test import TestCase
from test_http import HttpServer


def raw(s, method, path, body, timeout=60):
    """A request whose body is sent as it is written (JSON with duplicate members, which
    json.dumps cannot write)."""
    c = s.conn(timeout)
    c.request(method, path, body=body.encode(), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    try:
        return r.status, json.loads(data)
    except ValueError:
        return r.status, data


def net_probe(port):
    """Code that says whether the session reaches the host's loopback (this server)."""
    return ("import socket\ntry:\n    socket.create_connection(('127.0.0.1', %d), 3).close()\n"
            "    r = 'host network'\nexcept OSError:\n    r = 'no network'\nr" % port)


class HttpDuplicateMembersTest(TestCase):
    """cJSON keeps every member of an object, duplicates too. http_limits.c looks at the
    first one ("net", "memory", ...); srv_options_parse applies them all, so the last one
    wins. call_start deletes the body's first "op" and "id" only, and the server takes the
    first it finds."""

    def exec_code(self, s, name, code):
        status, _, data = s.request("POST", "/v1/sessions/%s/execute" % name,
                                    {"code": code, "stream": False})
        return status, json.loads(data)

    def test_a_second_net_member_cannot_get_the_host_network(self):
        # review2-1: serve --http without --allow-net refuses {"net": true}, but
        # {"net": false, "net": true} passed the check and the server applied both.
        s = HttpServer("--pool", "1")
        try:
            # (the probe tells: a session without "net" does not reach the server)
            self.assertEqual(s.request("POST", "/v1/sessions", {"name": "ctl"})[0], 201)
            self.assertEqual(self.exec_code(s, "ctl", net_probe(s.port))[1].get("result"),
                             {"text/plain": "'no network'"})
            status, r = raw(s, "POST", "/v1/sessions",
                            '{"name": "dn", "options": {"net": false, "net": true}}')
            if status == 201:
                _, r2 = self.exec_code(s, "dn", net_probe(s.port))
                self.assertEqual(r2.get("result"), {"text/plain": "'no network'"},
                                 "the session reached the host network without --allow-net")
            self.assertEqual(status, 400, r)
            self.assertIn("twice", r.get("message", ""), r)
        finally:
            s.close()

    def test_a_second_limit_member_cannot_raise_the_operators_limit(self):
        # review2-1: --memory 512M is the most; {"memory": "256M", "memory": "0"} ran with
        # no memory limit at all.
        s = HttpServer("--pool", "1", "--memory", "512M")
        try:
            status, r = raw(s, "POST", "/v1/sessions",
                            '{"name": "dm", "options": {"memory": "256M", "memory": "0"}}')
            if status == 201:
                _, r2 = self.exec_code(s, "dm", "import resource\n"
                                       "resource.getrlimit(resource.RLIMIT_AS)[0]")
                limit = int(r2["result"]["text/plain"])
                self.assertTrue(0 < limit <= 512 << 20,
                                "RLIMIT_AS is %d past serve's --memory 512M" % limit)
            self.assertEqual(status, 400, r)
            self.assertIn("twice", r.get("message", ""), r)
        finally:
            s.close()

    def test_a_second_op_member_cannot_turn_a_restart_into_a_new(self):
        # review2-2: POST /v1/sessions/NAME/restart with {"op": "x", "op": "new", ...}:
        # the first "op" is deleted, the server takes "new", and the session is made with
        # options that no limit check saw ("net" without --allow-net).
        s = HttpServer("--pool", "1")
        try:
            status, r = raw(s, "POST", "/v1/sessions/smug/restart",
                            '{"op": "x", "op": "new", "options": {"net": true}}')
            _, _, ls = s.request("GET", "/v1/sessions")
            made = "smug" in [x["name"] for x in json.loads(ls)["sessions"]]
            if made:
                _, r2 = self.exec_code(s, "smug", net_probe(s.port))
                self.assertEqual(r2.get("result"), {"text/plain": "'no network'"},
                                 "the session reached the host network without --allow-net")
            self.assertFalse(made, "a restart request made a session: %s %s" % (status, r))
        finally:
            s.close()

    def test_a_second_id_member_still_gets_its_answer_and_gives_back_its_place(self):
        # review2-3: {"id": 0, "id": "z"}: the server answers under "z", the call waits
        # for id 1 for ever and keeps one of the 512 places, even once its client is gone.
        s = HttpServer("--pool", "1")
        try:
            try:
                status, r = raw(s, "POST", "/v1/sessions/nobody/interrupt",
                                '{"id": 0, "id": "z"}', timeout=15)
            except socket.timeout:
                self.fail("no answer in 15 s: the call waits for ever")
            self.assertEqual(status, 400, r)
            self.assertIn('"id" twice', r.get("message", ""), r)
        finally:
            s.close()




class SocketDuplicateMembersTest(TestCase):
    def test_a_request_with_a_member_twice_is_refused(self):
        from test_server import Client, Server
        srv = Server()
        try:
            self.assertEqual(srv("new", "d1").returncode, 0)
            c = Client(srv.sock)
            c.s.sendall(b'{"id": 7, "op": "ls", "op": "kill-server"}\n')
            m = c.reply(7)
            self.assertEqual(m.get("code"), "malformed", m)
            self.assertIn('"op" is there twice', m["error"])
            c.s.sendall(b'{"id": 8, "op": "ping"}\n')
            self.assertTrue(c.reply(8).get("ok"))    # (the server is still there)
            c.close()
        finally:
            srv.close()
