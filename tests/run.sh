#!/bin/sh
# Every test: installs the dependencies, builds from scratch with ASan+UBSan,
# runs ctest (unit, fuzz corpus replay, integration, security). The README's
# install build (Release: its optimiser warns of what -O0 cannot see) is built
# too, with -Werror, so it cannot break unseen.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/third_party/install-deps.sh"
build="$top/build-test"
rm -rf "$build"
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DPTYBOX_SANITIZE=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
release="$top/build-test-release"
rm -rf "$release"
cmake -S "$top" -B "$release" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$release" -j"$(nproc)" >/dev/null
cd "$build"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	ctest --output-on-failure --timeout 900 "$@"
