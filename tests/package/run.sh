#!/usr/bin/env bash
# Packages this build tree as a .deb (cpack), checks its control fields,
# unpacks it into a throwaway root (dpkg-deb -x) and runs the CLI from there:
# --version and a quick bench of two scenarios.
# usage: run.sh BUILD_DIR
set -euo pipefail
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
step() { printf 'package: %s\n' "$*"; }

(cd "$build" && cpack -G DEB -B "$work/out" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; exit 1; }
deb=$(find "$work/out" -maxdepth 1 -name 'doorbell_*.deb' | head -n 1)
[ -n "$deb" ] || { step "cpack made no doorbell_*.deb"; ls "$work/out"; exit 1; }
step "built $(basename "$deb")"
[[ "$(basename "$deb")" =~ ^doorbell_[0-9]+\.[0-9]+\.[0-9]+_[a-z0-9]+\.deb$ ]] ||
  { step "the file name is not doorbell_<version>_<arch>.deb"; exit 1; }
depends=$(dpkg-deb -f "$deb" Depends)
step "Depends: $depends"
for lib in libc6 libstdc++6 libtracefs1 libbpf1; do
  grep -q "$lib" <<<"$depends" || { step "Depends lacks $lib"; exit 1; }
done
dpkg-deb -c "$deb" >"$work/contents"
for f in ./usr/bin/doorbell ./usr/include/doorbell/bell.h doorbell.pc doorbellConfig.cmake \
  'libdoorbell.so.0' 'libdoorbell.a' ./usr/share/doc/doorbell/README.md; do
  grep -q -- "$f" "$work/contents" || { step "the package lacks $f"; exit 1; }
done
# Every dependency resolves on this system (the same check apt makes).
if dpkg --dry-run -i "$deb" >"$work/dry.log" 2>&1; then
  step "dpkg --dry-run -i: dependencies satisfied"
else
  cat "$work/dry.log"
  step "dpkg would not install it"
  exit 1
fi
dpkg-deb -x "$deb" "$work/root"
"$work/root/usr/bin/doorbell" --version
"$work/root/usr/bin/doorbell" bench --quick --repeat 1 --no-progress \
  --filter 'ladder/atomic_store_load_seq_cst' --filter 'ladder/syscall_getpid' \
  --json "$work/r.json" >"$work/bench.log" 2>&1 || { cat "$work/bench.log"; exit 1; }
grep -q '"schema": *"doorbell-results"' "$work/r.json" || { step "no results file"; exit 1; }
step "the unpacked CLI ran a quick bench"
# The BPF programs travel inside the binary (a libbpf skeleton): nothing
# beside it is needed. Loading them needs root.
if [ "$(id -u)" -eq 0 ]; then
  "$work/root/usr/bin/doorbell" trace --backend bpf --duration 0.2 --interval 0.1 --json \
    >"$work/trace.jsonl" 2>"$work/trace.log" || { cat "$work/trace.log"; exit 1; }
  grep -q '"backend":"bpf"' "$work/trace.jsonl" || { step "the unpacked CLI did not trace with bpf"; exit 1; }
  step "the unpacked CLI traced with its embedded BPF programs"
fi
