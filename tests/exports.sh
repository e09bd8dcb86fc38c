#!/bin/sh
# The shared library exports only gcoll_* symbols, carries the soname libgcoll.so.1 and needs no
# CUDA library.
set -u
LIB=${LIBDIR:-lib}/libgcoll.so
bad=$(nm -D --defined-only "$LIB" | awk '{print $3}' | grep -v '^gcoll_' | grep -v '^_' )
soname=$(objdump -p "$LIB" | awk '/SONAME/ {print $2}')
[ -z "$bad" ] || { echo "exported symbols without the gcoll_ prefix:"; echo "$bad"; exit 1; }
[ "$soname" = libgcoll.so.1 ] || { echo "soname is '$soname', want libgcoll.so.1"; exit 1; }
# CUDA is loaded with dlopen when present: never a link-time dependency
cuda=$(objdump -p "$LIB" | awk '/NEEDED/ {print $2}' | grep -i cud)
[ -z "$cuda" ] || { echo "libgcoll.so needs $cuda at link time"; exit 1; }
echo "exports: $(nm -D --defined-only "$LIB" | grep -c ' gcoll_') gcoll_* symbols, soname $soname"
