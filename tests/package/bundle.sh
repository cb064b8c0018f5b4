#!/usr/bin/env bash
# `./run bundle` (scripts/bundle.sh) on this build tree's doorbell, then the
# bundle run where doorbell's Debian packages are absent: in a private mount
# namespace (unshare -m), /dev/null is bind-mounted over every library file
# the binary loads that is not glibc's (libstdc++, libbpf, libfmt, ...), and
# gnuplot and chromium are not on PATH. The bundle must still list the
# scenarios and run one, writing results.json and report.html, the report
# saying it has tables only. The unbundled binary must fail there (proof
# that the libraries are hidden).
# usage: bundle.sh SOURCE_DIR DOORBELL_BINARY
# Exit 77 (skipped) where a mount namespace cannot be made (not root, or a
# container without CAP_SYS_ADMIN).
set -euo pipefail
src=$1
binary=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
step() { printf 'bundle test: %s\n' "$*"; }

if ! unshare -m true 2>/dev/null; then
  step "unshare -m is not permitted here: skipped"
  exit 77
fi

# Bad input: a message, exit 2, nothing written.
mkdir -p "$work/full" && touch "$work/full/x"
if bash "$src/scripts/bundle.sh" "$binary" "$work/full" 2>"$work/err"; then
  step "bundling into a non-empty folder did not fail"; exit 1
fi
grep -q "not an empty folder" "$work/err" || { cat "$work/err"; exit 1; }
[ ! -e "$work/full.tar.gz" ] || { step "a tarball was left behind"; exit 1; }

bash "$src/scripts/bundle.sh" "$binary" "$work/b" 'ladder/syscall_getpid' 'ladder/atomic_*'
for f in doorbell scale-bench bin/doorbell README.txt; do
  [ -e "$work/b/$f" ] || { step "the bundle lacks $f"; exit 1; }
done
[ -s "$work/b.tar.gz" ] || { step "no tarball"; exit 1; }
tar -tzf "$work/b.tar.gz" | grep -q '^b/bin/doorbell$' || { step "the tarball lacks b/bin/doorbell"; exit 1; }
if ls "$work/b/lib" | grep -Eq '^(libc|libm|libpthread|libdl|librt|ld-linux)'; then
  step "glibc's own libraries were bundled: $(ls "$work/b/lib")"; exit 1
fi

# The library files the binary loads, glibc's excepted: the ones to hide.
hide=()
while read -r soname arrow path _; do
  [ "$arrow" = "=>" ] || continue
  case "$soname" in libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.*) continue ;; esac
  hide+=("$(readlink -f "$path")")
done < <(ldd "$binary")
[ ${#hide[@]} -gt 0 ] || { step "ldd listed no library to hide"; exit 1; }
step "hiding ${#hide[@]} libraries: ${hide[*]}"

# A PATH without gnuplot and chromium.
mkdir "$work/path"
for f in /usr/bin/* /bin/*; do
  case "${f##*/}" in gnuplot* | chromium*) continue ;; esac
  [ -e "$work/path/${f##*/}" ] || ln -s "$f" "$work/path/${f##*/}"
done

cat >"$work/inside.sh" <<INSIDE
set -eu
for f in ${hide[*]}; do mount --bind /dev/null "\$f"; done
if "$binary" --version >/dev/null 2>&1; then
  echo "bundle test: the unbundled binary still starts: the libraries are not hidden"; exit 1
fi
export PATH="$work/path"
! command -v gnuplot >/dev/null || { echo "bundle test: gnuplot still on PATH"; exit 1; }
cd "$work"
./b/doorbell bench --list >list.txt
grep -q 'ladder/syscall_getpid' list.txt
./b/scale-bench --list >scale-list.txt
grep -q 'ladder/syscall_getpid' scale-list.txt
./b/doorbell bench --quick --repeat 1 --no-progress --filter 'ladder/syscall_getpid' \
  --out out >bench.log 2>&1 || { cat bench.log; exit 1; }
INSIDE
unshare -m --propagation private bash "$work/inside.sh"
[ -s "$work/out/results.json" ] || { step "no results.json"; cat "$work/bench.log"; exit 1; }
grep -q '"ladder/syscall_getpid"' "$work/out/results.json" ||
  { step "results.json lacks the scenario"; exit 1; }
grep -q 'syscall_getpid' "$work/bench.log" || { step "no table"; cat "$work/bench.log"; exit 1; }
[ -s "$work/out/report.html" ] || { step "no report.html"; cat "$work/bench.log"; exit 1; }
grep -q 'gnuplot was not found' "$work/out/report.html" ||
  { step "the report does not say it could not draw the plots"; exit 1; }
step "the bundle listed and ran a scenario with $(wc -l <"$work/list.txt") lines of list, libraries hidden, no gnuplot"
