#!/usr/bin/env bash
# A relocatable doorbell: the release binary, every shared library it needs
# that is not part of the C library, and launchers, in one folder and its
# tarball, for an x86-64 Linux machine where doorbell's Debian packages are
# not installed (issue 31: measuring on a machine you may not install on).
#
#   scripts/bundle.sh BINARY DIR [SCALE_FILTER...]
#
# Writes DIR/ (refused when DIR exists and is not empty) and DIR.tar.gz:
#   DIR/bin/doorbell     the binary, debug info stripped
#   DIR/lib/             the libraries `ldd BINARY` resolves, except glibc's
#                        own (libc, libm, libpthread, libdl, librt, libresolv,
#                        libutil, libanl, libmvec, ld-linux): those come from
#                        the target machine, which needs glibc >= the build's
#   DIR/doorbell         the launcher: runs bin/doorbell through the target's
#                        own loader with --library-path DIR/lib, so that the
#                        programs doorbell starts (gnuplot, chromium, sh) do
#                        not inherit our libraries (LD_LIBRARY_PATH would leak
#                        into them); falls back to LD_LIBRARY_PATH where the
#                        loader is elsewhere
#   DIR/scale-bench      `./run scale-bench` without ./run: the same filters
#                        (SCALE_FILTER arguments), --suite full --repeat 3,
#                        results in ./results/scale-<UTC time>/ (or --out DIR)
#   DIR/README.txt       how to run it
# Bad input (no binary, DIR not empty): a message and exit 2, nothing written.
set -euo pipefail
say() { printf 'bundle: %s\n' "$*" >&2; }
if [ $# -lt 2 ]; then
  say "usage: scripts/bundle.sh BINARY DIR [SCALE_FILTER...]"
  exit 2
fi
binary=$1
dir=$2
shift 2
if [ ! -x "$binary" ]; then
  say "$binary: not an executable file (build it first: ./run build release)"
  exit 2
fi
if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null || echo x)" ]; then
  say "$dir exists and is not an empty folder: choose another DIR or remove it"
  exit 2
fi
for tool in ldd tar gzip; do
  command -v "$tool" >/dev/null || { say "$tool not found"; exit 2; }
done

# Everything below writes into a temporary folder beside DIR, renamed into
# place at the end: an error leaves nothing behind.
parent=$(dirname "$dir")
name=$(basename "$dir")
mkdir -p "$parent"
work=$(mktemp -d "$parent/.$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/lib"

if command -v strip >/dev/null; then
  strip --strip-debug -o "$work/bin/doorbell" "$binary"
else
  cp "$binary" "$work/bin/doorbell"
fi
chmod 755 "$work/bin/doorbell"

# glibc's own libraries and the loader stay the target's.
is_glibc() {
  case "$1" in
    libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | \
      libutil.so.* | libanl.so.* | libmvec.so.* | libBrokenLocale.so.* | ld-linux*.so.* | \
      linux-vdso.so.*) return 0 ;;
  esac
  return 1
}
libs=()
while read -r soname arrow path _; do
  [ "$arrow" = "=>" ] || continue
  is_glibc "$soname" && continue
  if [ ! -f "$path" ]; then
    say "ldd: $soname is not found on this machine: cannot bundle it"
    exit 1
  fi
  # The real file under the soname the binary asks for.
  cp -L "$path" "$work/lib/$soname"
  libs+=("$soname")
done < <(ldd "$binary")

cat >"$work/doorbell" <<'LAUNCHER'
#!/bin/sh
# doorbell from a bundle (scripts/bundle.sh): the bundled libraries, the
# target's C library. No external command: works with any PATH.
case "$0" in
  */*) here=${0%/*} ;;
  *) here=. ;;
esac
loader=/lib64/ld-linux-x86-64.so.2
if [ -x "$loader" ]; then
  exec "$loader" --library-path "$here/lib" --argv0 "$0" "$here/bin/doorbell" "$@"
fi
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/bin/doorbell" "$@"
LAUNCHER

{
  cat <<'HEAD'
#!/bin/sh
# The scale-bench rows (./run scale-bench) from a bundle, without ./run:
#   DIR/scale-bench [--list] [--out RESULTS_DIR] [more doorbell bench options]
# Refuses (exit 1) on fewer than 8 CPUs unless --list.
case "$0" in
  */*) here=${0%/*} ;;
  *) here=. ;;
esac
HEAD
  printf 'set --'
  for f in "$@"; do printf " --filter '%s'" "${f//\'/\'\\\'\'}"; done
  printf ' "$@"\n'
  cat <<'TAIL'
list=0
out=""
for a in "$@"; do
  case "$a" in
    --list) list=1 ;;
    --out | --out=*) out=given ;;
  esac
done
if [ "$list" = 1 ]; then
  exec "$here/doorbell" bench --suite full "$@"
fi
cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
if [ "$cpus" -lt 8 ]; then
  echo "scale-bench: needs at least 8 CPUs; this machine has $cpus (its rows would measure oversubscription)" >&2
  exit 1
fi
if [ -z "$out" ]; then
  set -- --out "results/scale-$(date -u +%Y%m%d-%H%M%S)" "$@"
fi
echo "scale-bench: $cpus CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
exec "$here/doorbell" bench --suite full --repeat 3 "$@"
TAIL
} >"$work/scale-bench"
chmod 755 "$work" "$work/doorbell" "$work/scale-bench"

cat >"$work/README.txt" <<EOF2
doorbell bundle (scripts/bundle.sh), built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -r).
Needs: x86-64 Linux with glibc >= $(ldd --version 2>/dev/null | head -n 1 | sed 's/.* //').
Bundled libraries: ${libs[*]}

  ./doorbell bench --list                  the scenarios
  ./doorbell bench --quick                 the default suite, results in ./results/...
  ./scale-bench                            the many-core rows (./run scale-bench), >= 8 CPUs
  ./scale-bench --list                     which rows those are

Without gnuplot (or Chromium) the results file and the table still come out; the
HTML report then says it has tables only. Draw the plots later on any machine
with gnuplot: doorbell report RESULTS.json.
EOF2

mv "$work" "$dir" 2>/dev/null || { rmdir "$dir" && mv "$work" "$dir"; }
trap - EXIT
tar -C "$parent" -czf "$dir.tar.gz" "$name"
say "wrote $dir/ ($(du -sh "$dir" | cut -f1)) and $dir.tar.gz: ${#libs[@]} libraries"
