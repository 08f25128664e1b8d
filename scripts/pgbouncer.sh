#!/usr/bin/env bash
# PgBouncer for the suite's connection-pooling test (tests/core/test_pgbouncer.py), with no system package
# installed: a pgbouncer on PATH is used as it is; otherwise Debian's package, and those of its libraries the
# system lacks (c-ares on a plain Debian 12), are fetched with `apt-get download` (no root needed while apt's
# package lists exist; as root they are refreshed when missing) and unpacked under var/pgbouncer with
# `dpkg-deb -x`. Either way var/pgbouncer/bin/pgbouncer runs it (with the unpacked libraries on the loader's
# path) and is printed last. Idempotent: nothing is fetched once it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD/var/pgbouncer
wrapper=$root/bin/pgbouncer

runs() { [ -x "$wrapper" ] && "$wrapper" --version >/dev/null 2>&1; }

mkdir -p var
exec 9>var/pgbouncer.lock
flock 9  # two runs of the suite in this checkout fetch it once

write_wrapper() {  # $1: the program, $2: extra library directories (may be empty)
  mkdir -p "$root/bin"
  {
    echo '#!/bin/sh'
    [ -n "$2" ] && echo "export LD_LIBRARY_PATH=\"$2\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\""
    echo "exec \"$1\" \"\$@\""
  } > "$wrapper"
  chmod 755 "$wrapper"
}

if ! runs; then
  if command -v pgbouncer >/dev/null 2>&1; then
    write_wrapper "$(command -v pgbouncer)" ""
  else
    command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || {
      echo "pgbouncer: not on PATH, and no apt-get/dpkg-deb to fetch Debian's package: install PgBouncer" >&2
      exit 1
    }
    if ! ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1; then
      if [ "$(id -u)" = 0 ]; then apt-get update -qq; else
        echo "pgbouncer: apt has no package lists (apt-get update needs root): install PgBouncer or run" \
             "apt-get update once" >&2
        exit 1
      fi
    fi
    # The package and the libraries it depends on that dpkg does not list as installed.
    packages=(pgbouncer)
    for dependency in $(apt-cache depends pgbouncer | sed -n 's/^ *Depends: \(lib[^ ]*\)$/\1/p'); do
      dpkg-query -W -f='${Status}' "$dependency" 2>/dev/null | grep -q "install ok installed" \
        || packages+=("$dependency")
    done
    echo "pgbouncer: fetching ${packages[*]} into var/pgbouncer (no system package is installed)" >&2
    rm -rf "$root" && mkdir -p "$root/debs" "$root/tree"
    (cd "$root/debs" && apt-get download -qq "${packages[@]}" 2>/dev/null)
    for deb in "$root"/debs/*.deb; do dpkg-deb -x "$deb" "$root/tree"; done
    libraries=$(find "$root/tree" -name 'lib*.so*' -printf '%h\n' | sort -u | paste -sd:)
    write_wrapper "$root/tree/usr/sbin/pgbouncer" "$libraries"
  fi
  if ! runs; then
    echo "pgbouncer: $wrapper does not run; libraries it cannot load:" >&2
    LD_LIBRARY_PATH=$(sed -n 's/^export LD_LIBRARY_PATH="\([^$]*\).*/\1/p' "$wrapper") \
      ldd "$(sed -n 's/^exec "\([^"]*\)".*/\1/p' "$wrapper")" | grep "not found" >&2 || true
    exit 1
  fi
fi
echo "$wrapper"
