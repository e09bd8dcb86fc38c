#!/bin/bash
# Prepares what a lent GPU machine (the device tool) needs to run gcoll's GPU checks: Debian 12's
# Open MPI as a relocatable bundle in .dev/ompi (that machine has none), and the built tests and
# benchmark in .dev/bin. Run after `make`; then carry .dev and lib (scripts/device/gpu_check.sh).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
B=$REPO/.dev/ompi
SYS_LIB=/usr/lib/x86_64-linux-gnu/openmpi/lib
SYS_PKGLIB=$SYS_LIB/openmpi3
PMIX_SYS=/usr/lib/x86_64-linux-gnu/pmix2
rm -rf "$B"
mkdir -p "$B"/{bin,lib/openmpi3,share/openmpi,etc,pmix/lib/pmix,pmix/share}

# --- binaries (mpirun/mpiexec/orterun are the same executable) ---
for b in orterun orted ompi_info; do cp -L /usr/bin/$b "$B/bin/$b"; done
ln -s orterun "$B/bin/mpirun"; ln -s orterun "$B/bin/mpiexec"

# --- MCA components: keep all except those needing UCX / verbs / psm / libfabric ---
for f in "$SYS_PKGLIB"/*.so; do
  n=$(basename "$f")
  case $n in
    *_ucx.so|mca_btl_openib.so|mca_btl_ofi.so|mca_mtl_ofi.so|mca_mtl_psm.so|mca_mtl_psm2.so) continue;;
  esac
  cp -L "$f" "$B/lib/openmpi3/$n"
done
# PMIx (external, PMIx's own plugins + help files)
cp -L "$PMIX_SYS"/lib/pmix/*.so "$B/pmix/lib/pmix/"
cp -rL "$PMIX_SYS"/share/* "$B/pmix/share/"

# --- Open MPI libs (all of them; libmpi_java too small to matter? skip java) ---
for f in "$SYS_LIB"/*.so; do
  n=$(basename "$f"); case $n in libmpi_java.so) continue;; esac
  real=$(readlink -f "$f"); soname=$(objdump -p "$real" | awk '/SONAME/{print $2}')
  cp -L "$real" "$B/lib/$soname"; [ "$n" != "$soname" ] && ln -sf "$soname" "$B/lib/$n"
done

# --- dependency closure ---
is_excluded() {
  case $1 in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libresolv.so*|libutil.so*|libanl.so*|libnsl.so*|libmvec.so*) return 0;;
    libcuda.so*|libcudart.so*|libnccl.so*|libnvidia*) return 0;;
    libgcoll*) return 0;;   # comes from <repo>/lib
  esac; return 1; }
targets=("$B"/bin/orterun "$B"/bin/orted "$B"/bin/ompi_info "$B"/lib/*.so* "$B"/lib/openmpi3/*.so "$B"/pmix/lib/pmix/*.so
         "$REPO"/build/default/bin/* "$REPO"/lib/libgcoll*.so)
declare -A seen
changed=1
while [ $changed = 1 ]; do
  changed=0
  for t in "${targets[@]}" "$B"/lib/*.so*; do
    [ -f "$t" ] || continue
    while read -r name path; do
      [ -n "$path" ] || continue
      is_excluded "$name" && continue
      [ -n "${seen[$name]:-}" ] && continue
      seen[$name]=1
      if [ "$path" = "not" ]; then echo "WARN: $t: $name not found" >&2; continue; fi
      [ -e "$B/lib/$name" ] || { cp -L "$path" "$B/lib/$name"; changed=1; }
    done < <(ldd "$t" 2>/dev/null | awk '/=>/{print $1, ($3=="not"?"not":$3)}')
  done
done
# libstdc++/libgcc_s: Ubuntu 24.04 ships newer ones; don't shadow them (kept as fallback only)
mkdir -p "$B/lib/fallback"
for n in libstdc++.so.6 libgcc_s.so.1; do [ -e "$B/lib/$n" ] && mv "$B/lib/$n" "$B/lib/fallback/"; done
# --- data / config ---
cp -rL /usr/share/openmpi/. "$B/share/openmpi/"
cp -L /etc/openmpi/openmpi-mca-params.conf /etc/openmpi/openmpi-default-hostfile "$B/etc/"

# --- strip ---
find "$B" -type f \( -name '*.so*' -o -path "$B/bin/*" \) -exec strip --strip-unneeded {} + 2>/dev/null || true
cp "$REPO/scripts/device/ompi-env.sh" "$B/env.sh"
mkdir -p "$REPO/.dev/bin"
cp "$REPO"/build/default/bin/{test_cuda,gcoll_bench,gcoll-info} "$REPO/.dev/bin/"
du -sh "$REPO/.dev"
