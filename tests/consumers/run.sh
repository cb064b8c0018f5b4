#!/usr/bin/env bash
# Installs this build tree into a throwaway prefix, then builds and runs three
# consumers outside the tree, each ringing a Bell across a fork:
#   find_package(doorbell)            tests/consumers/cmake
#   pkg-config --cflags --libs doorbell
#   add_subdirectory / FetchContent   tests/consumers/subdirectory
# usage: run.sh SOURCE_DIR BUILD_DIR CXX CXXFLAGS LDFLAGS
set -euo pipefail
src=$1 build=$2 cxx=$3 cxxflags=$4 ldflags=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
step() { printf 'consumers: %s\n' "$*"; }

cmake --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; exit 1; }
libdir=$(dirname "$(find "$prefix" -name 'libdoorbell.so.*' -type f | head -n 1)")
[ -d "$libdir" ] || { step "no libdoorbell.so.* installed"; exit 1; }
for f in include/doorbell/bell.h bin/doorbell; do
  [ -e "$prefix/$f" ] || { step "not installed: $f"; exit 1; }
done
[ -e "$libdir/libdoorbell.a" ] || { step "no static libdoorbell.a beside the shared one"; exit 1; }
soname=$(objdump -p "$libdir"/libdoorbell.so.*.*.* | awk '/SONAME/ {print $2}')
step "installed: $libdir (SONAME $soname)"
[[ "$soname" =~ ^libdoorbell\.so\.[0-9]+$ ]] || { step "SONAME '$soname' is not versioned"; exit 1; }
# The installed headers stand alone: nothing from src/ or the lab.
if grep -rn '#include "' "$prefix/include/doorbell" | grep -v '"doorbell/'; then
  step "an installed header includes something outside include/doorbell"
  exit 1
fi

common=(-G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_FLAGS="$cxxflags"
  -DCMAKE_EXE_LINKER_FLAGS="$ldflags" -DCMAKE_BUILD_TYPE=Release)

step "find_package(doorbell)"
cmake -S "$src/tests/consumers/cmake" -B "$work/cmake" "${common[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" >"$work/cmake.log" || { cat "$work/cmake.log"; exit 1; }
cmake --build "$work/cmake" >>"$work/cmake.log" || { cat "$work/cmake.log"; exit 1; }
LD_LIBRARY_PATH="$libdir" "$work/cmake/consumer"
# ldd's whole output first: `ldd | grep -q` under pipefail fails when grep
# exits at the first match and ldd then dies of SIGPIPE.
linked=$(LD_LIBRARY_PATH="$libdir" ldd "$work/cmake/consumer")
grep -q "libdoorbell.so" <<<"$linked" ||
  { step "find_package consumer did not link the shared library"; exit 1; }

step "pkg-config --cflags --libs doorbell"
flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --define-prefix --cflags --libs doorbell)
# shellcheck disable=SC2086
"$cxx" -std=c++20 $cxxflags "$src/tests/consumers/main.cpp" -o "$work/pkgconfig-consumer" $flags $ldflags
LD_LIBRARY_PATH="$libdir" "$work/pkgconfig-consumer"

step "add_subdirectory (FetchContent SOURCE_DIR), library only"
cmake -S "$src/tests/consumers/subdirectory" -B "$work/sub" "${common[@]}" \
  -DDOORBELL_SOURCE_DIR="$src" >"$work/sub.log" || { cat "$work/sub.log"; exit 1; }
cmake --build "$work/sub" >>"$work/sub.log" || { cat "$work/sub.log"; exit 1; }
"$work/sub/consumer"
# A library-only configure looked for no third-party package.
if grep -E '^(fmt|nlohmann_json|CLI11|absl|Boost|GTest)_DIR:|^PKG_CONFIG_EXECUTABLE:' "$work/sub/CMakeCache.txt"; then
  step "the library-only build looked for a lab dependency"
  exit 1
fi
step "all three consumers built and ran"
