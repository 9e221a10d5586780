// ptybox mcp driven by the official MCP TypeScript SDK's client, over stdio,
// as an agent drives it. Prints one JSON object of what it saw, for
// tests/integration/test_mcp.py to check: nothing is judged here.
//
// Usage: node client.mjs PTYBOX [ARGS FOR ptybox mcp...]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [ptybox, ...extra] = process.argv.slice(2);
if (!ptybox) {
  console.error("usage: node client.mjs PTYBOX [ARGS...]");
  process.exit(2);
}

const stderr = [];
const transport = new StdioClientTransport({
  command: ptybox,
  args: ["mcp", ...extra],
  stderr: "pipe",
});
transport.stderr?.on("data", (b) => stderr.push(b.toString()));
const client = new Client({ name: "ptybox-test", version: "1.0.0" });
const out = {};
// (the SDK tells a transport the version initialize settled on, if it asks)
transport.setProtocolVersion = (v) => { out.protocolVersion = v; };

// Every wait has a deadline: a hung server fails the test, never hangs it.
const deadline = setTimeout(() => {
  out.timedOut = true;
  out.stderr = stderr.join("");
  console.log(JSON.stringify(out));
  process.exit(1);
}, 240_000);

const text = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("");
const call = (name, args, opts) =>
  client.callTool({ name, arguments: args }, undefined, { timeout: 120_000, ...opts });

async function main() {
  await client.connect(transport);
  out.serverVersion = client.getServerVersion();

  const tools = await client.listTools();
  out.tools = tools.tools.map((t) => ({ name: t.name, type: t.inputSchema.type,
    required: t.inputSchema.required ?? [] }));

  // The seed demo (examples/demo.sh), one snippet per call in one session.
  const demo = ["print('hello, world!')", "x = 10", "y = 5", "result = x + y",
    "print(f'The result is: {result}')", "1 / 0"];
  out.demo = [];
  for (const code of demo) {
    const r = await call("run_code", { code });
    out.demo.push({ text: text(r), isError: r.isError ?? false });
  }

  // State across calls, and a named session apart from the default one.
  const state = await call("run_code", { code: "x * y + result" });
  out.state = text(state);
  out.stateStructured = state.structuredContent;
  out.newSession = text(await call("new_session", { session: "other" }));
  const other = await call("run_code", { code: "x", session: "other" });
  out.otherSession = { text: text(other), isError: other.isError ?? false };
  const ls = await call("list_sessions", {});
  out.sessions = JSON.parse(text(ls)).map((s) => s.name).sort();
  out.sessionsStructured = ls.structuredContent.sessions.map((s) => s.name).sort();

  // A plot comes back as an image.
  const plot = await call("run_code", {
    code: "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n" +
      "plt.figure(figsize=(3, 2), dpi=50)\nplt.plot([1, 3, 2])\nprint('drawn')\n",
  });
  out.plot = plot.content.map((c) => c.type === "image"
    ? { type: "image", mimeType: c.mimeType, data: c.data } : { type: c.type, text: c.text });

  // Another language: a tool error, not a protocol error.
  const lang = await call("run_code", { code: "console.log(1)", language: "javascript" });
  out.language = { text: text(lang), isError: lang.isError ?? false };

  // Files in and out.
  out.put = text(await call("put_file", { path: "data/hello.txt", content: "héllo\n" }));
  out.get = text(await call("get_file", { path: "data/hello.txt" }));
  out.readBack = text(await call("run_code", { code: "open('data/hello.txt').read()" }));

  // A loop stopped by cancelling its request (notifications/cancelled): the
  // session lives on with its state.
  const ac = new AbortController();
  const t0 = Date.now();
  let cancelled = null;
  try {
    await call("run_code", { code: "import time\nprint('looping', flush=True)\nwhile True: time.sleep(0.01)" },
      { signal: ac.signal, onprogress: (p) => { if (/looping/.test(p.message ?? "")) ac.abort("enough"); } });
  } catch (e) {
    cancelled = String(e?.message ?? e);
  }
  out.cancel = { error: cancelled, ms: Date.now() - t0 };
  const after = await call("run_code", { code: "x" });
  out.afterCancel = { text: text(after), isError: after.isError ?? false, ms: Date.now() - t0 };

  // A loop stopped by the interrupt tool, once it says it runs.
  let started;
  const running = new Promise((res) => (started = res));
  const loop = call("run_code", { code: "print('spinning', flush=True)\nwhile True: pass" },
    { onprogress: (p) => { if (/spinning/.test(p.message ?? "")) started(); } });
  await running;
  out.interruptTool = text(await call("interrupt", {}));
  const stopped = await loop;
  out.interrupted = { text: text(stopped), isError: stopped.isError ?? false };
  out.afterInterrupt = text(await call("run_code", { code: "x + 1" }));

  // A restart loses the state.
  out.restart = text(await call("restart", {}));
  const gone = await call("run_code", { code: "x" });
  out.afterRestart = { text: text(gone), isError: gone.isError ?? false };
  out.kill = text(await call("kill_session", { session: "other" }));

  await client.close();
  clearTimeout(deadline);
  out.stderr = stderr.join("");
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  out.failed = String(e?.stack ?? e);
  out.stderr = stderr.join("");
  console.log(JSON.stringify(out));
  process.exit(1);
});
