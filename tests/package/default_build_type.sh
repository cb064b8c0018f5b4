#!/usr/bin/env bash
# The README's library build (no CMAKE_BUILD_TYPE, no preset) must configure
# an optimised build: CMAKE_BUILD_TYPE defaults to Release for the top-level
# project. Configure only (no compile), in a throwaway directory.
# usage: default_build_type.sh SOURCE_DIR
set -euo pipefail
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake -S "$src" -B "$work/b" -DDOORBELL_BUILD_LAB=OFF -DDOORBELL_BUILD_TESTS=OFF \
  >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$work/b/CMakeCache.txt")
if [ "$type" != Release ]; then
  echo "default build type: CMAKE_BUILD_TYPE is '$type', want 'Release' (an unoptimised library)"
  exit 1
fi
# An explicit choice is kept.
cmake -S "$src" -B "$work/d" -DDOORBELL_BUILD_LAB=OFF -DDOORBELL_BUILD_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=Debug >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$work/d/CMakeCache.txt")
[ "$type" = Debug ] || { echo "explicit CMAKE_BUILD_TYPE=Debug became '$type'"; exit 1; }
echo "default build type: Release; an explicit Debug kept"
