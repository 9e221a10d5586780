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
# The npm clients of the tests (piston-client): Debian's node and npm, unless
# some other npm is installed already (nodesource's, which Debian's would clash with).
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "ptybox: missing packages:$missing; run this as root (sudo $0)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
