#!/bin/sh
# Installs the Debian packages gcoll builds and tests with, only those that are missing.
# Idempotent and quiet: prints nothing when everything is present. Called by make before a build.
set -eu

PKGS="libopenmpi-dev openmpi-bin libfabric-dev libfabric-bin libhwloc-dev hwloc check pkg-config gnuplot-nox python3"
# The fuzzing harnesses (make fuzz): clang with its libFuzzer runtime.
PKGS="$PKGS clang libclang-rt-14-dev"
# The Python binding's install (venv, setuptools, wheel) and tests (numpy).
PKGS="$PKGS python3-venv python3-setuptools python3-wheel python3-numpy"
# The MPI interposer's mpi4py test.
PKGS="$PKGS python3-mpi4py"
# The linters (scripts/lint.sh): cppcheck, shellcheck, clang-format 14 (the .clang-format targets it).
PKGS="$PKGS cppcheck shellcheck clang-format"
# Wanted but not required: the PyTorch tests and example skip, saying so, where it cannot be had
# (g++ builds the torch.distributed backend against libtorch-dev's headers).
OPTIONAL="g++ python3-torch libtorch-dev pybind11-dev python3-dev"

missing=""
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in $PKGS; do
    installed "$p" || missing="$missing $p"
done
# An optional package is asked for only where the archive has it (python3-torch is not built for
# every architecture), and its failure is a note, not an error.
install_optional() {
    for p in $OPTIONAL; do
        installed "$p" && continue
        # no package lists yet (a fresh machine whose required packages were all there): fetch them once
        apt-cache show "$p" >/dev/null 2>&1 || { [ "$(id -u)" = 0 ] && apt-get update -qq >>/tmp/gcoll-install-deps.log 2>&1; }
        apt-cache show "$p" >/dev/null 2>&1 || continue
        if [ "$(id -u)" != 0 ]; then
            echo "gcoll: optional Debian package $p is missing (its tests skip); as root: apt-get install -y $p" >&2
            continue
        fi
        echo "gcoll: installing $p (optional)" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 "$p" \
            >>/tmp/gcoll-install-deps.log 2>&1 ||
            echo "gcoll: could not install $p (its tests skip); see /tmp/gcoll-install-deps.log" >&2
    done
}
if [ -z "$missing" ]; then
    install_optional
    exit 0
fi

if [ "$(id -u)" != 0 ]; then
    echo "gcoll: missing Debian packages:$missing" >&2
    echo "gcoll: run as root:  apt-get install -y$missing" >&2
    exit 1
fi

echo "gcoll: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# A fresh machine has no package lists yet; refresh them once if the install cannot find a package.
# Another apt (a second build at the same moment) may hold the lock: wait for it.
# shellcheck disable=SC2086 # $missing is a list of package names: split on purpose
if ! apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 $missing >/tmp/gcoll-install-deps.log 2>&1; then
    apt-get update -qq >>/tmp/gcoll-install-deps.log 2>&1
    apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 $missing >>/tmp/gcoll-install-deps.log 2>&1 || {
        echo "gcoll: apt-get install failed; see /tmp/gcoll-install-deps.log" >&2
        tail -5 /tmp/gcoll-install-deps.log >&2
        exit 1
    }
fi
install_optional
