#!/bin/sh
# Prints, one per line, the Debian/Ubuntu packages that own the shared
# libraries the given binaries load (ldd), so that a runtime image installs
# exactly what its build stage linked against, under that release's own
# package names (Ubuntu 24.04's t64 names, Debian 12's plain ones) instead
# of a list kept by hand. Fails, naming the library, when one is missing or
# belongs to no package (CUDA's libraries from a tarball, say): the image
# would not start.
#
#   tools/runtime_packages.sh /out/bin/* > /out/runtime-packages.txt
#   xargs apt-get install -y --no-install-recommends < runtime-packages.txt
#
# POSIX sh: it runs in the images' /bin/sh (dash).
set -eu
[ $# -gt 0 ] || { echo "usage: $0 BINARY..." >&2; exit 2; }
libs=$(mktemp)
owners=$(mktemp)
trap 'rm -f "$libs" "$owners"' EXIT
for binary in "$@"; do
  # ldd's own failure (no such file, not a dynamic executable) stops here:
  # a list without that binary's libraries would be silently short.
  linked=$(ldd "$binary") || { echo "runtime_packages: ldd $binary failed" >&2; exit 1; }
  if echo "$linked" | grep -q "not found"; then
    echo "runtime_packages: $binary: $(echo "$linked" | grep 'not found' | tr -s ' \t' ' ')" >&2
    exit 1
  fi
  # "libfoo.so.1 => /path/libfoo.so.1 (0x...)"; the vdso and the loader
  # line have no "=> /path".
  echo "$linked" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' >> "$libs"
done
for lib in $(sort -u "$libs"); do
  # dpkg records the path the package shipped: try it as found, then with
  # /lib and /usr/lib swapped (merged /usr), then its resolved target.
  owner=""
  for path in "$lib" "$(echo "$lib" | sed 's|^/lib/|/usr/lib/|')" \
              "$(echo "$lib" | sed 's|^/usr/lib/|/lib/|')" "$(readlink -f "$lib")"; do
    # Diversions print "diversion by PKG from: ..." first: skip them.
    owner=$(dpkg -S "$path" 2>/dev/null | grep -v '^diversion by' | head -n 1 | cut -d: -f1)
    [ -n "$owner" ] && break
  done
  if [ -z "$owner" ]; then
    echo "runtime_packages: $lib belongs to no package" >&2
    exit 1
  fi
  echo "$owner" >> "$owners"
done
sort -u "$owners"
