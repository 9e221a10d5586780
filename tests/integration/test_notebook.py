"""Python as a notebook user expects it (issue 17): rich reprs and MIME
bundles, IPython's display functions, display_id updates, a trailing `;`,
top-level await and indented snippets, tried through the real binary."""
import unittest

from ptybox_test import Serve, TestCase, run, run_json

REPRS = '''
class Rich:
    def __repr__(self): return "Rich()"
    def _repr_html_(self): return "<b>h</b>"
    def _repr_svg_(self): return "<svg/>"
    def _repr_markdown_(self): return "**m**"
    def _repr_latex_(self): return "$x^2$"
    def _repr_json_(self): return {"a": [1, 2]}
    def _repr_jpeg_(self): return b"\\xff\\xd8\\xff"
    def _repr_pdf_(self): return b"%PDF-1.4"
'''
RICH = {"text/plain": "Rich()", "text/html": "<b>h</b>", "image/svg+xml": "<svg/>",
        "text/markdown": "**m**", "text/latex": "$x^2$", "application/json": '{"a":[1,2]}',
        "image/jpeg": "/9j/", "application/pdf": "JVBERi0xLjQ="}

_ipython = []


def has_ipython():
    """Whether the session's Python has IPython (Debian's python3-ipython)."""
    if not _ipython:
        results, _ = run_json("import IPython")
        _ipython.append(results and results[0]["status"] == "ok")
    return _ipython[0]


class NotebookTest(TestCase):
    def one(self, code, extra=()):
        results, p = run_json(code, extra=extra)
        self.assertEqual(len(results), 1, p.stderr)
        return results[0]

    def test_every_repr_method_comes_back_in_result_and_display(self):
        r = self.one(REPRS + "display(Rich())\nRich()")
        self.assertOk(r)
        self.assertEqual(r["result"], RICH)
        self.assertEqual(r["display"], [RICH])
        self.assertEqual(r["stderr"], "")

    def test_repr_mimebundle_with_include_exclude_and_its_metadata_pair(self):
        r = self.one('''
class B:
    def __repr__(self): return "B()"
    def _repr_mimebundle_(self, include=None, exclude=None):
        return ({"text/html": "<i>b</i>", "application/vnd.x+json": {"k": [1]},
                 "image/png": b"\\x89PNG"}, {"image/png": {"width": 10}})
    def _repr_latex_(self): return "$b$"
    def _repr_html_(self): return "not this: the bundle's wins"
display(B(), exclude=["text/latex", "image/png"])
display(B(), include=["text/html"])
B()''')
        self.assertOk(r)
        self.assertEqual(r["display"], [
            {"text/plain": "B()", "text/html": "<i>b</i>", "application/vnd.x+json": '{"k":[1]}'},
            {"text/html": "<i>b</i>"}])
        self.assertEqual(r["result"], {"text/plain": "B()", "text/html": "<i>b</i>",
                                       "application/vnd.x+json": '{"k":[1]}',
                                       "image/png": "iVBORw==", "text/latex": "$b$"})

    def test_ipython_display_functions_go_through_our_display(self):
        if not has_ipython():
            self.skipTest("no IPython in the session's Python (python3-ipython)")
        r = self.one('''
import base64
from IPython.display import display, update_display, HTML, Markdown, Image, Latex
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAfbLI3wAAAABJRU5ErkJggg==")
display(HTML("<b>hi</b>"))
display(Markdown("# title"), Latex("$y$"))
display(Image(data=PNG))
h = display(HTML("<i>1</i>"), display_id="d")
update_display(HTML("<i>2</i>"), display_id="d")
HTML("<p>value</p>")''')
        self.assertOk(r)
        self.assertEqual(r["stdout"], "")        # (not "<IPython.core.display.HTML object>")
        d = r["display"]
        self.assertEqual(len(d), 5, d)
        self.assertEqual(d[4]["text/html"], "<i>2</i>")  # (the update, in its place)
        self.assertEqual(d[4]["display_id"], "d")
        self.assertEqual(d[0]["text/html"], "<b>hi</b>")
        self.assertEqual(d[1]["text/markdown"], "# title")
        self.assertEqual(d[2]["text/latex"], "$y$")
        self.assertTrue(d[3]["image/png"].startswith("iVBORw0KGgo"), d[3])
        self.assertIn("text/plain", d[3])
        self.assertEqual(r["result"]["text/html"], "<p>value</p>")

    def test_display_of_a_matplotlib_figure_is_its_png_and_its_text(self):
        r = self.one('''
import matplotlib
matplotlib.use("Agg")
from matplotlib.figure import Figure
fig = Figure()
fig.add_subplot().plot([1, 3, 2])
display(fig)''')
        self.assertOk(r)
        self.assertEqual(len(r["display"]), 1, r)
        self.assertTrue(r["display"][0]["image/png"].startswith("iVBORw0KGgo"))
        self.assertIn("Figure", r["display"][0]["text/plain"])

    def test_display_id_handle_update_and_update_display(self):
        code = ('h = display("first", display_id=True)\n'
                'h.update("second")\n'
                'display("third", display_id=h.display_id, update=True)\n'
                'display("other", display_id="mine")\n'
                'h.display_id')
        r = self.one(code)
        self.assertOk(r)
        # The result shows each display as a notebook does: its latest rendering.
        did = r["result"]["text/plain"].strip("'")
        self.assertEqual(r["display"], [{"text/plain": "'third'", "display_id": did},
                                        {"text/plain": "'other'", "display_id": "mine"}])
        s = Serve("--timeout", "20")
        try:
            s.send({"id": 1, "op": "exec", "stream": True, "code": code})
            events = []
            while True:
                m = s.recv(60)
                if m.get("event") == "display":
                    events.append(m)
                elif not m.get("event") and m.get("id") == 1:
                    break
            self.assertOk(m)
            self.assertEqual([(e["data"]["text/plain"], e.get("update", False))
                              for e in events],
                             [("'first'", False), ("'second'", True), ("'third'", True),
                              ("'other'", False)])
            ids = [e["display_id"] for e in events]
            self.assertEqual(ids[:3], [ids[0]] * 3)
            self.assertEqual(ids[3], "mine")
            self.assertEqual(len(ids[0]), len(did))
        finally:
            self.assertEqual(s.close(), 0)

    def test_an_update_storm_is_one_entry_and_an_earlier_display_says_update(self):
        results, p = run_json('h = display("start", display_id=True)\n'
                              'for i in range(20000): h.update("v%d" % i)',
                              'h.update(5); display(7); h.update(6)',
                              'for i in range(1500): display(i)')
        self.assertEqual([r["status"] for r in results], ["ok"] * 3, p.stderr)
        first, second, many = (r["display"] for r in results)
        self.assertEqual(len(first), 1, first[:3])
        self.assertEqual(first[0]["text/plain"], "'v19999'")
        did = first[0]["display_id"]
        self.assertEqual(second, [{"text/plain": "6", "display_id": did, "update": True},
                                  {"text/plain": "7"}])
        # The list is bounded in count too: the rest is dropped, and said so.
        self.assertEqual(len(many), 1000)
        self.assertEqual(many[-1], {"text/plain": "999"})
        self.assertTrue(results[2]["truncated"])

    def test_display_builtin_without_import_and_a_bad_display_id(self):
        r = self.one('display(1, 2)\ndisplay(3, display_id="\\n")')
        self.assertEqual(r["status"], "error")
        self.assertEqual(r["error"]["name"], "ValueError")
        self.assertIn("display_id", r["error"]["value"])
        self.assertEqual(r["display"], [{"text/plain": "1"}, {"text/plain": "2"}])

    def test_trailing_semicolon_hides_the_value_but_not_in_a_string_or_comment(self):
        results, p = run_json("x = 41\nx + 1;", "x + 1;  # a comment", "x + 1  # a ;",
                              "'a;'", "x = [1, 2];\nx[0] \\\n  ;", "f'{x};'")
        self.assertEqual([r["status"] for r in results], ["ok"] * 6, p.stderr)
        self.assertEqual([r["result"] for r in results],
                         [None, None, {"text/plain": "42"}, {"text/plain": "'a;'"}, None,
                          {"text/plain": "'[1, 2];'"}])

    def test_top_level_await_returns_its_value_on_one_loop_per_session(self):
        results, p = run_json(
            "import asyncio\nasync def f(v):\n    await asyncio.sleep(0.01)\n    return v",
            "await f(41) + 1",
            "loop = asyncio.get_running_loop()\ntask = loop.create_task(f('later'))\n"
            "await asyncio.sleep(0)",
            "(await task, asyncio.get_running_loop() is loop)",
            "asyncio.run(f('own loop'))",
            "await asyncio.sleep(0)\nasyncio.run(f(1))",
            "async with asyncio.Lock():\n    y = 3\ny")
        self.assertEqual([r["status"] for r in results],
                         ["ok", "ok", "ok", "ok", "ok", "error", "ok"], p.stderr)
        self.assertEqual(results[1]["result"], {"text/plain": "42"})
        self.assertEqual(results[3]["result"], {"text/plain": "('later', True)"})
        self.assertEqual(results[4]["result"], {"text/plain": "'own loop'"})
        self.assertEqual(results[5]["error"]["name"], "RuntimeError")
        self.assertIn("running event loop", results[5]["error"]["value"])
        self.assertEqual(results[6]["result"], {"text/plain": "3"})

    def test_tasks_started_without_await_run_on_the_sessions_loop(self):
        # As in Jupyter: no "no running event loop"; the task starts as its
        # snippet ends and goes on in the next one that awaits.
        results, p = run_json(
            "import asyncio\nsteps = []\nasync def f(v):\n    steps.append(v)\n"
            "    await asyncio.sleep(0.01)\n    return v * 2",
            "t = asyncio.create_task(f(1)); u = asyncio.ensure_future(f(2))\nlen(steps)",
            "steps",
            "(await t, await u)", "asyncio.run(f(3))")
        self.assertEqual([r["status"] for r in results], ["ok"] * 5, p.stderr)
        self.assertEqual(results[1]["result"], {"text/plain": "0"})
        self.assertEqual(results[2]["result"], {"text/plain": "[1, 2]"})
        self.assertEqual(results[3]["result"], {"text/plain": "(2, 4)"})
        self.assertEqual(results[4]["result"], {"text/plain": "6"})  # (its own loop, still)

    def test_an_await_traceback_starts_at_the_users_code(self):
        results, p = run_json(
            "import asyncio\nasync def g():\n    await asyncio.sleep(0.01)\n"
            "    raise ValueError('v')",
            "await g()",
            "async def h():\n    await asyncio.sleep(1e9)",
            "await h()", extra=["--timeout", "2"])
        self.assertEqual([r["status"] for r in results], ["ok", "error", "ok", "timeout"],
                         p.stderr)
        tb = "".join(results[1]["error"]["traceback"])
        self.assertNotIn("base_events", tb)
        self.assertIn('File "<exec-2>", line 1', tb.split("\n")[1])
        # Stopped while it waits: where it waited, not the loop's select().
        tb = "".join(results[3]["error"]["traceback"])
        self.assertNotIn("asyncio", tb.replace("asyncio.sleep", ""))
        self.assertNotIn("selectors", tb)
        self.assertIn('File "<exec-4>", line 1', tb)
        self.assertIn('File "<exec-3>", line 2, in h', tb)

    def test_is_complete_knows_top_level_await(self):
        s = Serve("--timeout", "20")
        try:
            self.assertOk(s.exec("1", id=0))
            got = []
            for i, code in enumerate(("async with lock:", "await x", "async for a in b:\n"
                                      "    pass\n\n", "await (")):
                s.send({"id": i + 1, "op": "is_complete", "code": code})
                got.append(s.recv_result(i + 1)["status"])
            self.assertEqual(got, ["incomplete", "complete", "complete", "incomplete"])
        finally:
            self.assertEqual(s.close(), 0)

    def test_an_await_stopped_by_the_timeout_keeps_the_session_and_its_loop(self):
        results, p = run_json(
            "import asyncio\nended = []",
            "try:\n    await asyncio.sleep(60)\nfinally:\n    ended.append('cancelled')",
            "(ended, await asyncio.sleep(0, 5))",
            extra=["--timeout", "1"])
        self.assertEqual([r["status"] for r in results], ["ok", "timeout", "ok"], p.stderr)
        self.assertFalse(results[2]["state_lost"])
        # (the stopped task ran its finally once, and never resumed later)
        self.assertEqual(results[2]["result"], {"text/plain": "(['cancelled'], 5)"})

    def test_a_snippet_indented_as_a_whole_runs(self):
        results, p = run_json("    x = 1\n    if x:\n        y = 2\n\n    x + y",
                              "\n\t\tz = '''\n\t\t  kept'''\n\t\tz",
                              "  a = 1\n b = 2",
                              # (IPython's leading_indent: a line at column 0 is kept)
                              "  y = (1 +\n2)\n  y", "\t  y = 2\n  \ty + 1")
        self.assertOk(results[0])
        self.assertEqual(results[3]["result"], {"text/plain": "3"}, results[3])
        self.assertEqual(results[4]["error"]["name"], "IndentationError")
        self.assertEqual(results[0]["result"], {"text/plain": "3"})
        self.assertEqual(results[1]["result"], {"text/plain": "'\\n  kept'"})
        self.assertEqual(results[2]["error"]["name"], "IndentationError")

    def test_human_mode_shows_text_of_a_bundle_without_picture_and_each_update(self):
        p = run("run", "-c", REPRS.replace("_repr_jpeg_", "_no_jpeg_").replace("_repr_svg_", "_no")
                + "h = display(Rich(), display_id=True)\nh.update('updated')\nRich()")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "Rich()\n'updated'\nRich()\n")
        self.assertNotIn("<b>", p.stdout + p.stderr)

    def test_an_untrusted_bundle_stays_bounded(self):
        r = self.one('''
class Big:
    def __repr__(self): return "Big()"
    def _repr_markdown_(self): return "m" * (50 << 20)
    def _repr_latex_(self): return 42
    def _repr_json_(self): return {1, 2}
    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/html": "h" * (50 << 20), "text/x-ok": "ok"}
display(Big())''', extra=["--max-output", "1M"])
        self.assertOk(r)
        self.assertTrue(r["truncated"])
        d = r["display"][0]
        self.assertEqual(set(d), {"text/plain", "text/x-ok"}, d.keys())
        self.assertIn("text/markdown dropped", d["text/plain"])
        self.assertIn("text/html dropped", d["text/plain"])
        self.assertIn("_repr_latex_() of Big returned int", r["stderr"])
        self.assertIn("_repr_json_() of Big returned set", r["stderr"])

    def test_a_forged_display_id_is_dropped_by_the_relay(self):
        # The session's code writes display messages of its own to the relay:
        # an id that is no printable string of at most 256 characters is refused.
        r = self.one(
            "import gc, json\n"
            "k = [o for o in gc.get_objects() if hasattr(type(o), 'display_data')][0]\n"
            "for did in (5, 'x' * 257, '\\x1b]52;c;bad\\x07', ['l'], 'ok'):\n"
            "    k.chan.write(json.dumps({'t': 'display', 'seq': k.running, 'late': False,\n"
            "        'data': {'text/plain': repr(did)[:20]}, 'display_id': did,\n"
            "        'update': 'yes'}).encode() + b'\\n')\n"
            "display('last', display_id='ok', update=True)")
        self.assertOk(r)
        # ('ok' is kept, then its update replaces it; the others are dropped.)
        self.assertEqual(r["display"], [{"text/plain": "'last'", "display_id": "ok"}])
        s = Serve("--timeout", "20")
        try:
            s.send({"id": 1, "op": "exec", "stream": True, "code":
                    "display(1, display_id='a')\ndisplay(2, display_id='a', update=True)"})
            events = []
            while True:
                m = s.recv(60)
                if m.get("event") == "display":
                    events.append({k: v for k, v in m.items() if k in ("display_id", "update")})
                elif not m.get("event") and m.get("id") == 1:
                    break
            self.assertEqual(events, [{"display_id": "a"}, {"display_id": "a", "update": True}])
        finally:
            self.assertEqual(s.close(), 0)


if __name__ == "__main__":
    unittest.main()
