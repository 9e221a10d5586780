#!/bin/sh
# Every test: installs the dependencies, builds from scratch with ASan+UBSan,
# runs ctest (unit, fuzz corpus replay, integration, security).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/third_party/install-deps.sh"
build="$top/build-test"
rm -rf "$build"
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DPTYBOX_SANITIZE=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
cd "$build"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	ctest --output-on-failure --timeout 900 "$@"
