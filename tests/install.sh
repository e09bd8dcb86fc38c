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
if [ -e lib/gcoll_c10d.so ]; then
    # the torch backend installed beside libgcoll is the one gcoll.torch loads, and it serves
    [ -e "$dest/lib/gcoll_c10d.so" ] || { echo "missing after install: lib/gcoll_c10d.so"; exit 1; }
    got=$(RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=0 PYTHONPATH=bindings/python \
        GCOLL_LIBRARY="$dest/lib/libgcoll.so.1" /usr/bin/python3 -c '
import torch, torch.distributed as dist, gcoll.torch
dist.init_process_group("gcoll")
x = torch.ones(3)
dist.all_reduce(x)
print(gcoll.torch._module.__file__, x.sum().item())' 2>&1 | tail -n 1)
    [ "$got" = "$dest/lib/gcoll_c10d.so 3.0" ] || { echo "the installed torch backend: $got"; exit 1; }
fi
cat > "$dest/t.c" <<'C'
#include <gcoll.h>
#include <stdio.h>
int main(void) { printf("gcoll %s\n", gcoll_version()); return GCOLL_VERSION == 200 ? 0 : 1; }
C
# shellcheck disable=SC2046 # pkg-config prints several flags: split on purpose
PKG_CONFIG_PATH="$dest/lib/pkgconfig" mpicc "$dest/t.c" -o "$dest/t" \
    $(PKG_CONFIG_PATH="$dest/lib/pkgconfig" pkg-config --cflags --libs gcoll) -Wl,-rpath,"$dest/lib"
"$dest/t"
