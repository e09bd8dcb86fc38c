#!/bin/sh
# Installs the Debian packages gcoll builds and tests with, only those that are missing.
# Idempotent and quiet: prints nothing when everything is present. Called by make before a build.
set -eu

PKGS="libopenmpi-dev openmpi-bin libfabric-dev libfabric-bin libhwloc-dev hwloc check pkg-config gnuplot-nox python3 clang libclang-rt-14-dev"

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
    echo "gcoll: missing Debian packages:$missing" >&2
    echo "gcoll: run as root:  apt-get install -y$missing" >&2
    exit 1
fi

echo "gcoll: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# A fresh machine has no package lists yet; refresh them once if the install cannot find a package.
if ! apt-get install -y -qq --no-install-recommends $missing >/tmp/gcoll-install-deps.log 2>&1; then
    apt-get update -qq >>/tmp/gcoll-install-deps.log 2>&1
    apt-get install -y -qq --no-install-recommends $missing >>/tmp/gcoll-install-deps.log 2>&1 || {
        echo "gcoll: apt-get install failed; see /tmp/gcoll-install-deps.log" >&2
        tail -5 /tmp/gcoll-install-deps.log >&2
        exit 1
    }
fi
