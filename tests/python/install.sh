#!/bin/sh
# The README's install of the Python package, exactly, into a temporary venv: it must need no
# package index, and the installed package must find libgcoll in each place of its search order
# (GCOLL_LIBRARY, the path recorded at install, beside the package, the loader's path) and run a
# collective on 2 ranks from outside the source tree.
set -eu
top=$(pwd)
lib=$top/${LIBDIR:-lib}/libgcoll.so.1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset PYTHONPATH GCOLL_LIBRARY

/usr/bin/python3 -m venv --system-site-packages "$tmp/venv"
"$tmp/venv/bin/pip" install -q --no-build-isolation --no-index bindings/python
py=$tmp/venv/bin/python
pkg=$("$py" -c 'import os, gcoll; print(os.path.dirname(gcoll.__file__))')
case $pkg in "$tmp"/*) ;; *) echo "gcoll imported from $pkg, not the venv" >&2; exit 1 ;; esac
cd "$tmp"

# the recorded path, and a collective on 2 ranks
cat > "$tmp/check.py" <<'PY'
import sys, numpy as np, gcoll
gcoll.init()
c = gcoll.comm_world()
got = c.allreduce(np.full(5, c.rank + 1, dtype=np.int32))
ok = gcoll.library_path == sys.argv[1] and list(got) == [c.size * (c.size + 1) // 2] * 5
print("rank %d: %s from %s" % (c.rank, "ok" if ok else "WRONG %s" % got, gcoll.library_path))
gcoll.finalize()
sys.exit(0 if ok else 1)
PY
mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 "$py" "$tmp/check.py" "$lib"

where() { "$py" -c 'import gcoll; print(gcoll.library_path)'; }
# GCOLL_LIBRARY first; a wrong one is an ImportError that names it
[ "$(GCOLL_LIBRARY=$lib where)" = "$lib" ]
if GCOLL_LIBRARY=$tmp/nothing.so where > "$tmp/err" 2>&1 || ! grep -q "nothing.so" "$tmp/err"; then
    echo "a wrong GCOLL_LIBRARY was not reported:" >&2; cat "$tmp/err" >&2; exit 1
fi
# without a recorded path: a copy beside the package, then the loader's path
echo "LIBRARY = None" > "$pkg/_install.py"
cp "$lib" "$pkg/libgcoll.so.1"
[ "$(where)" = "$pkg/libgcoll.so.1" ]
rm "$pkg/libgcoll.so.1"
[ "$(LD_LIBRARY_PATH=$(dirname "$lib") where)" = "libgcoll.so.1" ]
echo "pip install --no-build-isolation --no-index bindings/python: installed; found by GCOLL_LIBRARY, record, package dir, loader"
