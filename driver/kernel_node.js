// ptybox node kernel: runs JavaScript snippets under the relay (relay.py).
//
// Started by kernel_node.py's start(): exec'd node, fd 3 the request pipe,
// fd 4 the message pipe, fds 1 and 2 the relay's capture pipes, fd 5 the
// run's stdin stream, fd 0 /dev/null.  It speaks the kernel protocol of
// relay.py (X and I lines in; H, R and JSON lines out, ASCII only) and keeps
// one vm context for the session's life.
//
// Why this shape:
// - Snippets are vm.Scripts run in one context: V8 shares the top-level
//   lexical scope of every script of a context, so `let x = 1` in one and
//   `x + 1` in the next work as in node's REPL (and redeclaring a `let` is a
//   SyntaxError there too).  A snippet whose top level awaits is rewritten by
//   the REPL's own rewriter (internal/repl/await, --expose-internals), which
//   hoists its declarations out of the async wrapper and returns the last
//   expression's value.
// - Scripts run with breakOnSigint: the relay's SIGINT stops a busy loop and
//   the context keeps its state.  node starts and joins a watchdog thread for
//   each such run (160 us or more: half a round trip) unless one is already
//   registered, process-wide: a worker thread keeps one registered for the
//   kernel's life (sigintKeeper), so each run costs a few microseconds.  The
//   latest registration gets a signal, so a snippet's run takes it from the
//   keeper; one that comes while idle the keeper takes, and drops.  (So
//   process.on('SIGINT') handlers of user code are never called.)  A snippet waiting on a promise is stopped by
//   the relay's I line.  A loop that runs after an await (in a microtask, out
//   of runInContext) cannot be stopped so: the relay's kill ends the kernel.
// - AsyncLocalStorage stamps every callback with the snippet that scheduled
//   it: what a timer of an earlier snippet writes is sent as that snippet's
//   late output, never as the output of whatever runs now.
/* global BigInt */
(function (require, python) {
  'use strict';
  const fs = require('fs');
  const net = require('net');
  const path = require('path');
  const util = require('util');
  const vm = require('vm');
  const { AsyncLocalStorage } = require('async_hooks');
  const { Readable } = require('stream');
  const { createRequire } = require('module');

  const REQ = 3;
  const MSG = 4;
  const STREAM = 5;
  const DEFAULT_MAX_OUTPUT = 4 << 20; // PROTOCOL_DEFAULT_MAX_OUTPUT
  const REQUEST_CAP = 2 ** 31; // bytes of one request: past it the kernel gives way
  const HEADER_CAP = 256; // bytes of an X or I line before its body
  const PARSE_NOW = 64 << 10; // bytes of a request parsed as it comes (a put's are some 100)
  const SEQ_KEEP = 1024; // snippets whose max_output is kept for their late output
  const EXIT_LOST_PIPE = 119; // PROTOCOL_EXIT_NO_TERMINAL
  const EXIT_NO_RESULT = 117; // PROTOCOL_EXIT_NO_RESULT

  // The REPL's rewriter, loaded at the first snippet that needs it (it brings
  // acorn: tens of milliseconds that a cold start need not pay).  undefined:
  // not tried yet; null: not there (node without --expose-internals), and a
  // top-level await snippet is wrapped whole, its declarations and value in it.
  let processTopLevelAwait;
  function rewriter() {
    if (processTopLevelAwait === undefined) {
      try {
        ({ processTopLevelAwait } = require('internal/repl/await'));
      } catch (e) {
        processTopLevelAwait = null;
      }
    }
    return processTopLevelAwait;
  }

  const als = new AsyncLocalStorage();
  // Promises made so far: a snippet that made none has no rejection to wait
  // for, and its result goes without a turn of the event loop.
  let promises = 0;
  try {
    require('v8').promiseHooks.onInit(() => { promises++; });
  } catch (e) {
    promises = NaN; // (node before 16.14: always wait; NaN never equals itself)
  }
  const realStdoutWrite = process.stdout.write;
  const realStderrWrite = process.stderr.write;
  const fsReadFileSync = fs.readFileSync;
  const stdinDescriptor = Object.getOwnPropertyDescriptor(process, 'stdin');

  // ------------------------------------------------------------ messages

  function wellFormed(s) {
    if (typeof s.toWellFormed === 'function') return s.toWellFormed();
    return s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g,
                     '\ufffd');
  }

  // The relay decodes messages as ASCII: everything else escaped.
  function asciiJSON(obj) {
    return JSON.stringify(obj).replace(/[\u007f-\uffff]/g,
                                       (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
  }

  // One line on the message pipe, written whole (the pipe is blocking; a
  // write cut short by a signal goes on).  Without the pipe the relay is gone.
  function send(line) {
    const buf = Buffer.from(line, 'latin1');
    let done = 0;
    while (done < buf.length) {
      try {
        done += fs.writeSync(MSG, buf, done);
      } catch (e) {
        if (e.code === 'EAGAIN' || e.code === 'EINTR') continue;
        process.reallyExit(EXIT_LOST_PIPE);
      }
    }
  }

  // text cut to limit characters (a UTF-8 byte each at least: the relay's
  // caps are in bytes, and a cut one is marked so).
  function cap(text, limit, state) {
    text = wellFormed(String(text));
    if (text.length <= limit) return text;
    state.cut = true;
    return text.slice(0, limit);
  }

  // ------------------------------------------------------------ snippets

  const context = vm.createContext({});
  (function fill() {
    // The globals node's REPL gives its own context: the main context's, but
    // for what the new one has of its own (its intrinsics).
    for (const name of Object.getOwnPropertyNames(globalThis)) {
      if (name === 'globalThis' || Object.prototype.hasOwnProperty.call(context, name)) continue;
      const d = Object.getOwnPropertyDescriptor(globalThis, name);
      if (d) Object.defineProperty(context, name, d);
    }
    context.global = context;
    context.require = createRequire(path.join(process.cwd(), '<repl>'));
    context.module = { exports: {}, require: context.require };
    context.exports = context.module.exports;
  })();

  const seqs = new Map(); // seq -> max_output, the last SEQ_KEEP snippets
  let running = null; // the snippet now running: {seq, interrupt(), stamp}
  let last = null; // the seq of the last snippet (its late output goes to the pipe)
  const queue = []; // requests waiting: one at a time comes from the relay
  const interrupted = new Set(); // seqs whose I line came before they ran
  let busy = false;

  function maxOutputOf(seq) {
    const m = seqs.get(seq);
    return m === undefined ? DEFAULT_MAX_OUTPUT : m;
  }

  // What a callback of snippet `stamp` writes while another runs (or after
  // a later one): a late message of its own.  Else the capture pipe.
  function route(real, name) {
    return function write(chunk, encoding, cb) {
      const stamp = als.getStore();
      const now = running !== null ? running.seq : last;
      if (stamp === undefined || stamp === now || !seqs.has(stamp)) {
        return real.call(this, chunk, encoding, cb);
      }
      if (typeof encoding === 'function') {
        cb = encoding;
        encoding = undefined;
      }
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      const state = { cut: false };
      send(asciiJSON({ t: 'late', seq: stamp, name, text: cap(text, maxOutputOf(stamp), state) }) +
           '\n');
      if (typeof cb === 'function') process.nextTick(cb);
      return true;
    };
  }
  process.stdout.write = route(realStdoutWrite, 'stdout');
  process.stderr.write = route(realStderrWrite, 'stderr');

  function keyboardInterrupt() {
    const e = new Error('Script execution interrupted.');
    e.name = 'KeyboardInterrupt';
    e.stack = 'KeyboardInterrupt: Script execution interrupted.';
    return e;
  }

  // Stack lines of the snippet's own code: from the first frame of the vm or
  // of this kernel down, every frame is the kernel's (its event loop).
  const KERNEL_FRAME = /^\s+at (.*[( ](node:vm|ptybox-kernel)[:)]|new Script |Script\.run|AsyncLocalStorage\.run )/;
  function userStack(stack) {
    const lines = String(stack).split('\n');
    const i = lines.findIndex((l) => KERNEL_FRAME.test(l));
    return i < 0 ? lines : lines.slice(0, i);
  }

  function errorOf(e, limit) {
    const state = { cut: false };
    let name;
    let value;
    let traceback;
    try {
      if (e instanceof Error || (e !== null && typeof e === 'object' && 'stack' in e &&
                                 typeof e.stack === 'string')) {
        name = String(e.name || 'Error');
        value = String(e.message === undefined ? '' : e.message);
        traceback = userStack(e.stack);
      } else {
        name = 'Uncaught';
        value = util.inspect(e);
        traceback = ['Uncaught ' + value];
      }
    } catch (f) {
      name = 'Error';
      value = '<unprintable>';
      traceback = [];
    }
    return {
      error: { name: cap(name, 1024, state), value: cap(value, limit, state),
               // (each line with its newline, as Python's traceback lines are:
               // a client joins them as they are)
               traceback: traceback.map((l) => cap(l, limit, state) + '\n') },
      cut: state.cut,
    };
  }

  // The snippet's env, cwd and stdin in place; returns what puts them back.
  function enter(req) {
    const saved = [];
    let cwd = null;
    if (req.env && typeof req.env === 'object') {
      for (const k of Object.keys(req.env)) {
        saved.push([k, Object.prototype.hasOwnProperty.call(process.env, k) ? process.env[k] : undefined]);
        process.env[k] = String(req.env[k]);
      }
    }
    let stdin = null;
    if (typeof req.stdin_b64 === 'string') {
      stdin = Buffer.from(req.stdin_b64, 'base64');
      req.stdin_b64 = null;
    } else if (req.stdin_stream === true) {
      stdin = 'stream';
    }
    const leave = () => {
      for (let i = saved.length - 1; i >= 0; i--) {
        const [k, v] = saved[i];
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      if (cwd !== null) {
        try {
          process.chdir(cwd);
        } catch (e) {
          // (the folder is gone: the snippet's own doing)
        }
      }
      if (stdin !== null) {
        Object.defineProperty(process, 'stdin', stdinDescriptor);
        fs.readFileSync = fsReadFileSync;
      }
    };
    if (stdin !== null) overStdin(stdin);
    if (typeof req.cwd === 'string') {
      const here = process.cwd();
      try {
        process.chdir(req.cwd);
      } catch (e) {
        leave();
        throw e; // the snippet's error: as Python's FileNotFoundError
      }
      cwd = here;
    }
    return leave;
  }

  let streamStdin = null; // the run's stdin stream, one for every snippet
  function overStdin(data) {
    let s;
    let fd = null;
    if (data === 'stream') {
      if (streamStdin === null) streamStdin = new net.Socket({ fd: STREAM, readable: true, writable: false });
      s = streamStdin;
      fd = STREAM;
    } else {
      s = Readable.from([data], { objectMode: false });
      s.fd = 0;
    }
    Object.defineProperty(process, 'stdin', { configurable: true, enumerable: true, get: () => s });
    // fs.readFileSync(0) and '/dev/stdin', the usual way to read it all.
    fs.readFileSync = function readFileSync(file, options) {
      if (file === 0 || file === '/dev/stdin') {
        const buf = fd === null ? data : fsReadFileSync(fd);
        const enc = typeof options === 'string' ? options : options && options.encoding;
        return enc ? buf.toString(enc) : Buffer.from(buf);
      }
      return fsReadFileSync.apply(this, arguments);
    };
  }

  function compile(code, filename) {
    try {
      return { script: new vm.Script(code, { filename }), wrapped: false };
    } catch (e) {
      if (!(e instanceof SyntaxError) || !code.includes('await')) throw e;
      let rewritten = null;
      const rewrite = rewriter();
      if (rewrite !== null) {
        try {
          rewritten = rewrite(code);
        } catch (f) {
          rewritten = null;
        }
      }
      if (rewritten === null) {
        if (rewrite !== null) throw e; // not an await at the top: its own error
        rewritten = '(async () => {\n' + code + '\n})()';
      }
      return { script: new vm.Script(rewritten, { filename }), wrapped: true };
    }
  }

  async function execute(seq, req) {
    const limit = typeof req.max_output === 'number' && req.max_output > 0
      ? req.max_output : DEFAULT_MAX_OUTPUT;
    seqs.set(seq, limit);
    if (seqs.size > SEQ_KEEP) seqs.delete(seqs.keys().next().value);
    const id = typeof req.id === 'number' ? req.id : seq;
    const filename = typeof req.filename === 'string' ? req.filename : '<exec-' + id + '>';
    let stop;
    const stopped = new Promise((resolve, reject) => { stop = reject; });
    stopped.catch(() => {});
    const me = { seq, rejection: null, interrupt: () => stop(keyboardInterrupt()) };
    running = me;
    last = seq;
    let value;
    let failure = null;
    let leave = null;
    try {
      if (interrupted.delete(seq)) throw keyboardInterrupt();
      if (typeof req.code !== 'string') throw new TypeError('the request has no code');
      leave = enter(req);
      const { script, wrapped } = compile(req.code, filename);
      const made = promises;
      let out;
      const by = Date.now() + GATE_WAIT_MS;
      while (Atomics.compareExchange(gate, 0, 0, 1) === 2 && Date.now() < by) {
        Atomics.wait(gate, 0, 2, 1); // (the keeper is registering: microseconds)
      }
      try {
        keeperHeld = Atomics.load(gate, 1) === 1;
        out = als.run(seq, () => script.runInContext(context, { breakOnSigint: true }));
      } finally {
        keeperHeld = false;
        Atomics.store(gate, 0, 0);
        Atomics.notify(gate, 0);
      }
      if (wrapped) {
        const box = await Promise.race([out, stopped]);
        value = box !== null && typeof box === 'object' && 'value' in box ? box.value : undefined;
      } else {
        value = out;
      }
      // A rejection of this snippet's, unhandled: node tells it once the
      // microtasks ran, after this turn.
      if (promises !== made) {
        await Promise.race([new Promise((resolve) => setImmediate(resolve)), stopped]);
      }
      if (me.rejection !== null) throw me.rejection.reason;
    } catch (e) {
      failure = { e };
      if (e && e.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED') failure.e = keyboardInterrupt();
    }
    if (leave !== null) leave();
    let line;
    const state = { cut: false };
    if (failure === null && value === undefined) {
      line = 'R' + seq + '\n';
    } else {
      let result = null;
      let error = null;
      if (failure === null) {
        try {
          result = { 'text/plain': cap(util.inspect(value), limit, state) };
          context._ = value;
        } catch (e) {
          failure = { e };
        }
      }
      if (failure !== null) {
        const r = errorOf(failure.e, limit);
        error = r.error;
        state.cut = state.cut || r.cut;
      }
      const msg = { t: 'result', seq, status: error === null ? 'ok' : 'error', result, error };
      if (state.cut) msg.cut = true;
      line = asciiJSON(msg);
      const frameCap = (limit * 4 + (16 << 20)) / 4;
      if (line.length > frameCap) { // each text cut so that escaped it fits
        const part = Math.floor(frameCap / 64);
        if (result !== null) result['text/plain'] = result['text/plain'].slice(0, part);
        if (error !== null) {
          error.value = error.value.slice(0, part);
          error.traceback = error.traceback.slice(0, 64).map((l) => l.slice(0, part));
        }
        msg.cut = true;
        line = asciiJSON(msg);
      }
      line += '\n';
    }
    running = null;
    send(line);
  }

  // A rejection nobody handled, an exception no callback caught: an error of
  // the snippet that scheduled what threw (node runs the handlers in its
  // async context) if it still runs, else that snippet's late stderr.
  function mine() {
    const stamp = als.getStore();
    return running !== null && running.rejection === null &&
           (stamp === undefined || stamp === running.seq);
  }
  process.on('unhandledRejection', (reason) => {
    if (mine()) running.rejection = { reason };
    else lateError('Uncaught (in promise) ', reason);
  });
  process.on('uncaughtException', (e) => {
    if (mine()) running.rejection = { reason: e };
    else lateError('Uncaught ', e);
  });

  function lateError(prefix, e) {
    let text;
    try {
      text = prefix + (e instanceof Error ? userStack(e.stack).join('\n') : util.inspect(e)) + '\n';
    } catch (f) {
      text = prefix + '<unprintable>\n';
    }
    process.stderr.write(text);
  }

  // A SIGINT while a snippet awaits stops it; while idle it is nobody's (the
  // relay's I line says which snippet it meant).  breakOnSigint takes the
  // ones that come while a script runs.
  process.on('SIGINT', () => {
    if (running !== null) running.interrupt();
  });
  // vm's breakOnSigint takes every process.on('SIGINT') listener off for its
  // run and puts it back; as the last one goes, libuv sets SIGINT to its
  // default, and as it comes back, to libuv's handler.  Without the keeper
  // that is what mends the end of a run (node's watchdog, stopping, leaves a
  // handler that kills); with the keeper registered (gate[1]) it is what
  // breaks it: the watchdog, never stopping, never puts its handler back over
  // libuv's, and the next busy loop's ^C killed node (newuser-11).  So while
  // the keeper is registered, vm's one look at the count as the run begins
  // sees none, and the watchdog's handler stays.  (Only that look: the
  // snippet's own counts are true, review1-3.)
  const listenerCount = process.listenerCount;
  let keeperHeld = false;
  process.listenerCount = function (name) {
    if (keeperHeld && name === 'SIGINT') {
      keeperHeld = false;
      return 0;
    }
    return listenerCount.apply(this, arguments);
  };

  // ------------------------------------------------------------ files

  // @include kernel_node_files.js

  // Non-exec requests this kernel does not serve: answered, never left hanging.
  function refuse(seq, req) {
    if (req.op === 'complete') {
      send(asciiJSON({ t: 'reply', seq, matches: [] }) + '\n');
    } else {
      send(asciiJSON({ t: 'reply', seq, status: 'unknown' }) + '\n');
    }
  }
  const FILE_OPS = ['put', 'get', 'files', 'remove'];

  async function drain() {
    if (busy) return;
    busy = true;
    while (queue.length) {
      const { seq, body, parsed, incoming } = queue.shift();
      let req = parsed;
      if (req === undefined) {
        try {
          req = JSON.parse(body.toString('utf8'));
        } catch (e) {
          req = null;
        }
      }
      if (req === null || typeof req !== 'object') req = { code: null };
      try {
        if (FILE_OPS.includes(req.op)) {
          await fileOp(seq, req, incoming);
        } else if (req.op === 'complete' || req.op === 'is_complete') {
          refuse(seq, req);
        } else {
          await execute(seq, req);
        }
      } catch (e) {
        running = null;
        send(asciiJSON({ t: 'result', seq, status: 'error', result: null,
                         error: errorOf(e, DEFAULT_MAX_OUTPUT).error }) + '\n');
      }
    }
    busy = false;
  }

  // ------------------------------------------------------------ requests

  // X<seq> <len>[ <cols>x<rows>]\n then len bytes; I<seq>\n; after a put's
  // X, D<len>\n and len bytes of its data, or A\n.  A body is
  // gathered into one buffer of its length, not concatenated chunk by chunk.
  let head = Buffer.alloc(0);
  let body = null;
  let bodySeq = 0;
  let filled = 0;

  // A request in the queue.  A small one is parsed now: a put's data lines
  // follow its X line, and must find the put waiting for them (putExpect).
  function queued(seq, b) {
    let parsed;
    let incoming = null;
    if (b.length <= PARSE_NOW) {
      try {
        parsed = JSON.parse(b.toString('utf8'));
      } catch (e) {
        parsed = null;
      }
      if (parsed !== null && typeof parsed === 'object' && parsed.op === 'put') {
        incoming = putExpect(seq, parsed);
      }
    }
    queue.push({ seq, body: b, parsed, incoming });
  }

  let data = 0; // bytes of a put's data line still to come
  let dataKept = false; // ... and whether they are the put's (else dropped)
  function onData(chunk) {
    let i = 0;
    while (i < chunk.length) {
      if (data > 0) {
        const n = Math.min(data, chunk.length - i);
        if (dataKept) putBytes(chunk.subarray(i, i + n));
        data -= n;
        i += n;
        continue;
      }
      if (body !== null) {
        const n = Math.min(body.length - filled, chunk.length - i);
        chunk.copy(body, filled, i, i + n);
        filled += n;
        i += n;
        if (filled === body.length) {
          queued(bodySeq, body);
          body = null;
        }
        continue;
      }
      const nl = chunk.indexOf(10, i);
      if (nl < 0) {
        head = Buffer.concat([head, chunk.subarray(i)]);
        if (head.length > HEADER_CAP) process.reallyExit(EXIT_NO_RESULT);
        break;
      }
      const line = Buffer.concat([head, chunk.subarray(i, nl)]).toString('latin1');
      head = Buffer.alloc(0);
      i = nl + 1;
      const d = /^D(\d+)$/.exec(line); // a put's data (kernel_node_files.js)
      if (d !== null) {
        data = Number(d[1]);
        dataKept = putLine(data);
        continue;
      }
      if (line === 'A') { // a put's data cut short: the put dropped
        putAbort();
        continue;
      }
      const m = /^([XI])(\d+)(?: (\d+)(?: (\d+)x(\d+))?)?$/.exec(line);
      if (m === null) continue;
      const seq = Number(m[2]);
      if (m[1] === 'I') {
        if (running !== null && running.seq === seq) running.interrupt();
        else if (queue.some((q) => q.seq === seq) || (body !== null && bodySeq === seq)) interrupted.add(seq);
        continue;
      }
      const len = Number(m[3] || 0);
      if (len > REQUEST_CAP) process.reallyExit(EXIT_NO_RESULT);
      if (m[4] !== undefined) {
        process.env.COLUMNS = m[4];
        process.env.LINES = m[5];
      }
      bodySeq = seq;
      body = Buffer.allocUnsafe(len);
      filled = 0;
      if (len === 0) {
        queued(seq, body);
        body = null;
      }
    }
    // Run only once the whole read is parsed: an I line that came with its
    // X line (the relay's ^C right after the request) is seen before the
    // snippet runs, not after a busy loop that it was meant to stop.
    drain();
  }

  // The worker that keeps node's SIGINT watchdog registered (see the top).
  // Unreferenced: it keeps no exit from happening.  Without workers, every
  // run starts its own watchdog, slower but the same.
  // The keeper must be registered below every run's watchdog, never on top
  // of one (the latest registration takes a signal, and a ^C the keeper took
  // would be lost): gate[0] is 1 while main runs a snippet's script, 2 while
  // the keeper registers, 0 else, each side taking it from 0 (a CAS); the
  // keeper's part lasts microseconds, and main waits at most GATE_WAIT_MS.
  const KEEPER = "const vm = require('vm'); const { workerData: gate } = require('worker_threads');\n" +
    'const nap = new Int32Array(new SharedArrayBuffer(4));\n' +
    'for (;;) {\n' +
    '  while (Atomics.compareExchange(gate, 0, 0, 2) !== 0) Atomics.wait(gate, 0, 1, 50);\n' +
    "  try { vm.runInThisContext('Atomics.store(gate, 1, 1); Atomics.store(gate, 0, 0); Atomics.notify(gate, 0); Atomics.wait(nap, 0, 0)', { breakOnSigint: true }); }\n" +
    "  catch (e) { Atomics.store(gate, 1, 0); if (e.code !== 'ERR_SCRIPT_EXECUTION_INTERRUPTED') throw e; }\n" +
    '}\n';
  const GATE_WAIT_MS = 100;
  // gate[1]: 1 while the keeper is registered (it says so from inside its run).
  const gate = new Int32Array(new SharedArrayBuffer(8));
  function sigintKeeper() {
    try {
      const { Worker } = require('worker_threads');
      // Small, for RLIMIT_AS (--memory): with the session's MALLOC_ARENA_MAX
      // it adds some 13 MB of address space to node's 650.
      const w = new Worker(KEEPER, { eval: true, stdout: false, stderr: false,
                                     workerData: gate,
                                     resourceLimits: { maxOldGenerationSizeMb: 8,
                                                       maxYoungGenerationSizeMb: 1,
                                                       codeRangeSizeMb: 4, stackSizeMb: 1 } });
      w.unref();
      w.on('error', () => {});
    } catch (e) {
      // (no worker threads: each run starts its own watchdog)
    }
  }

  const req = new net.Socket({ fd: REQ, readable: true, writable: false });
  req.on('data', onData);
  req.on('end', () => process.reallyExit(EXIT_LOST_PIPE));
  req.on('error', () => process.reallyExit(EXIT_LOST_PIPE));
  send('H' + process.pid + ' ' + python + '\n'); // (the driver's Python: kernel_node.py)
  setImmediate(sigintKeeper); // (after the hello: off a cold start's way)
});
