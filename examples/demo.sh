#!/bin/sh
# The demo: builds ptybox from scratch and runs a few snippets in one sandboxed
# session: output, state kept between snippets, and an error on stderr.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/third_party/install-deps.sh"
cmake -S "$top" -B "$top/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$top/build" -j"$(nproc)" >/dev/null
set +e
"$top/build/ptybox" run \
	-c "print('hello, world!')" \
	-c 'x = 10' -c 'y = 5' -c 'result = x + y' \
	-c "print(f'The result is: {result}')" \
	-c '1 / 0'
rc=$?
# The last snippet fails on purpose: exit status 1 is the expected outcome.
[ "$rc" = 1 ] && exit 0
exit "$rc"
