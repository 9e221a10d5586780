#!/bin/sh
# Piston executes per second through `ptybox serve --http`, with wrk on loopback
# (issue 18): each a fresh sandbox from the warm pool, running print(1).
#
# Usage: bench/http.sh [PTYBOX] [-c CONNECTIONS] [-d DURATION] [-p POOL]
#        (defaults: build/ptybox, 16 connections, 10s, pool 16; a Release build
#        is the one worth quoting). Bounded in time: wrk runs -d, the server is
#        stopped after. Prints requests/s, p50, p99 and the non-2xx count, for
#        the stateless execute, a stateful x = 1 and GET /api/v2/runtimes.
set -eu
ptybox=${PTYBOX:-build/ptybox}
case ${1:-} in -*|"") ;; *) ptybox=$1; shift ;; esac
conns=16 dur=10s pool=16
while [ $# -gt 0 ]; do
	case $1 in
	-c) conns=$2; shift 2 ;;
	-d) dur=$2; shift 2 ;;
	-p) pool=$2; shift 2 ;;
	*) echo "usage: bench/http.sh [PTYBOX] [-c N] [-d DURATION] [-p POOL]" >&2; exit 2 ;;
	esac
done
command -v wrk >/dev/null || { echo "bench/http.sh: needs wrk (apt-get install wrk)" >&2; exit 2; }
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$dir/execute.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"language":"python","version":"*","files":[{"content":"print(1)"}]}'
LUA
"$ptybox" serve --http "127.0.0.1:$port" --pool "$pool" 2>"$dir/serve.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
# Ready once it answers (its pool fills meanwhile: a warm-up run follows).
i=0
until curl -sf "http://127.0.0.1:$port/api/v2/runtimes" >/dev/null; do
	i=$((i + 1)); [ $i -lt 100 ] || { cat "$dir/serve.log" >&2; exit 1; }
	sleep 0.1
done
curl -sf -X POST -d '{"language":"python","version":"*","files":[{"content":"print(1)"}]}' \
	"http://127.0.0.1:$port/api/v2/execute"; echo
wrk -t2 -c"$conns" -d2s -s "$dir/execute.lua" "http://127.0.0.1:$port/api/v2/execute" >/dev/null
wrk -t2 -c"$conns" -d"$dur" --latency -s "$dir/execute.lua" \
	"http://127.0.0.1:$port/api/v2/execute" | tee "$dir/wrk.out"
echo "--- stateless Piston execute (fresh sandbox each), $conns connections, pool $pool:"
awk '/Requests\/sec/ {print "requests/s: " $2} / 50%/ {print "p50: " $2} / 99%/ {print "p99: " $2}
     /Non-2xx/ {print "non-2xx: " $NF}' "$dir/wrk.out"
# A stateful execute of x = 1 in one session (/v1), one connection: beside the
# socket's round trip (bench/server.py, rt).
curl -sf -X POST -d '{"name":"bench"}' "http://127.0.0.1:$port/v1/sessions" >/dev/null
cat >"$dir/stateful.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"code":"x = 1","stream":false}'
LUA
wrk -t1 -c1 -d"$dur" --latency -s "$dir/stateful.lua" \
	"http://127.0.0.1:$port/v1/sessions/bench/execute" >"$dir/wrk3.out"
echo "--- stateful x = 1 (/v1/sessions/bench/execute), 1 connection:"
awk '/Requests\/sec/ {print "requests/s: " $2} / 50%/ {print "p50: " $2} / 99%/ {print "p99: " $2}
     /Non-2xx/ {print "non-2xx: " $NF}' "$dir/wrk3.out"
# The HTTP layer alone (h2o and the routing, no sandbox): what it leaves to the sandboxes.
wrk -t2 -c"$conns" -d"$dur" --latency "http://127.0.0.1:$port/api/v2/runtimes" >"$dir/wrk2.out"
echo "--- GET /api/v2/runtimes (HTTP alone), $conns connections:"
awk '/Requests\/sec/ {print "requests/s: " $2} / 99%/ {print "p99: " $2}' "$dir/wrk2.out"
