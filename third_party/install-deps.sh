#!/bin/sh
# Installs what ptybox needs to build and test (Debian 12), as root. Idempotent:
# apt-get runs only when a package is missing.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
pkgs=$(grep -v '^#' "$here/packages.txt" | tr '\n' ' ')
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# The tests' npm clients (tests/mcp for MCP, tests/piston's piston-client) run on node,
# their packages come through npm: Debian's nodejs and npm only when there is no npm, so a
# nodejs from elsewhere (nodesource's, which brings its own npm and conflicts with Debian's)
# is left alone.
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "ptybox: missing packages:$missing; run this as root (sudo $0)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
