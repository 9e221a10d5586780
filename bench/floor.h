/*
 * floor.h - the floor that ptybox_bench and ptybox_driver_bench measure
 * against: the least a PTY-driven Python exec loop can cost. Run as
 * `python3 -I -c floor_py` on a terminal: raw mode, then for each request
 * line, exec it and write SENTINEL (no capture, no framing).
 */
#ifndef PTYBOX_BENCH_FLOOR_H
#define PTYBOX_BENCH_FLOOR_H

#define SENTINEL     "\x02OK\n" /* what floor_py writes when ready and after each line */
#define SENTINEL_LEN (sizeof(SENTINEL) - 1)

static const char floor_py[] = "import os, sys, tty\n"
			       "tty.setraw(0)\n"
			       "g = {'__name__': '__main__'}\n"
			       "rest = b''\n"
			       "os.write(1, b'\\x02OK\\n')\n"
			       "while True:\n"
			       "    parts = []\n"
			       "    i = rest.find(b'\\n')\n"
			       "    while i < 0:\n"
			       "        parts.append(rest)\n"
			       "        rest = os.read(0, 1 << 16)\n"
			       "        if not rest:\n"
			       "            raise SystemExit\n"
			       "        i = rest.find(b'\\n')\n"
			       "    parts.append(rest[:i])\n"
			       "    rest = rest[i + 1:]\n"
			       "    exec(b''.join(parts), g)\n"
			       "    sys.stdout.flush()\n"
			       "    os.write(1, b'\\x02OK\\n')\n";

/* bash's floor, run as `bash --norc --noprofile -c floor_bash`: the same
 * loop in bash's own words (raw mode, read a line, eval it, SENTINEL). */
static const char floor_bash[] = "stty raw -echo\n"
				 "printf '\\2OK\\n'\n"
				 "while IFS= read -r l; do eval \"$l\"; printf '\\2OK\\n'; done\n";

/* node's floor, run as `node -e floor_node`: a bare REPL loop in node's
 * words (raw mode, read a line, evaluate it in the one context, SENTINEL
 * written blocking). stty, not setRawMode(): libuv's raw mode keeps ONLCR,
 * and SENTINEL would come as \x02OK\r\n. */
static const char floor_node[] =
	"const fs = require('fs'), vm = require('vm');\n"
	"require('child_process').execSync('stty raw -echo', {stdio: 'inherit'});\n"
	"fs.writeSync(1, '\\x02OK\\n');\n"
	"let rest = '';\n"
	"process.stdin.on('data', (d) => {\n"
	"  rest += d;\n"
	"  for (let i; (i = rest.indexOf('\\n')) >= 0;) {\n"
	"    vm.runInThisContext(rest.slice(0, i));\n"
	"    rest = rest.slice(i + 1);\n"
	"    fs.writeSync(1, '\\x02OK\\n');\n"
	"  }\n"
	"});\n";

#endif
