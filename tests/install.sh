#!/bin/sh
# make install into a scratch prefix; a program then builds with pkg-config alone and runs.
set -eu
dest=$(mktemp -d) other=$(mktemp -d)
trap 'rm -rf "$dest" "$other"' EXIT
# an install elsewhere first: the pkg-config file must name each install's own prefix
make -s install PREFIX="$other" >/dev/null
make -s install PREFIX="$dest" >/dev/null
grep -qx "prefix=$dest" "$dest/lib/pkgconfig/gcoll.pc" || { echo "gcoll.pc names another prefix"; exit 1; }
for f in include/gcoll.h include/gcoll_mpi.h lib/libgcoll.so lib/libgcoll.so.1 lib/libgcoll.a lib/pkgconfig/gcoll.pc; do
    [ -e "$dest/$f" ] || { echo "missing after install: $f"; exit 1; }
done
[ ! -e lib/libgcoll_cuda.so ] || [ -e "$dest/lib/libgcoll_cuda.so" ] || { echo "missing after install: lib/libgcoll_cuda.so"; exit 1; }
cat > "$dest/t.c" <<'C'
#include <gcoll.h>
#include <stdio.h>
int main(void) { printf("gcoll %s\n", gcoll_version()); return GCOLL_VERSION == 200 ? 0 : 1; }
C
# shellcheck disable=SC2046 # pkg-config prints several flags: split on purpose
PKG_CONFIG_PATH="$dest/lib/pkgconfig" mpicc "$dest/t.c" -o "$dest/t" \
    $(PKG_CONFIG_PATH="$dest/lib/pkgconfig" pkg-config --cflags --libs gcoll) -Wl,-rpath,"$dest/lib"
"$dest/t"
