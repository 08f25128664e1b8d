#!/usr/bin/env bash
# What `make test` needs besides PostgreSQL and Redis (scripts/test.sh brings those, without root): Chromium, which
# the browser tests (marked `browser`) drive through Playwright, which never downloads a browser of its own. It is
# looked for where tests/browser.py looks, in this order:
#
#   1. CHROMIUM, a path to a Chromium or Chrome program;
#   2. chromium, chromium-browser, google-chrome-stable or google-chrome on PATH;
#   3. var/chromium/bin/chromium, Debian's package unpacked under var/chromium by an earlier run.
#
# When none runs: as root, Debian's chromium package is installed (apt-get); as another user, Debian's packages of
# Chromium and of those libraries it needs that the system lacks are fetched with `apt-get download` (no root
# needed while apt's package lists exist) and unpacked under var/chromium with `dpkg-deb -x`. When that cannot be
# done either, one line says what is missing and how to get it, the browser tests are skipped, and this script
# still succeeds: nothing here is ever an error for lack of root. Idempotent: nothing is fetched once one runs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD/var/chromium
wrapper=$root/bin/chromium

runs() { [ -n "$1" ] && [ -x "$1" ] && timeout 60 "$1" --headless --no-sandbox --version >/dev/null 2>&1; }

found() {  # the first Chromium of the search order that runs, printed; none: status 1
  local candidate
  for candidate in "${CHROMIUM:-}" $(command -v chromium chromium-browser google-chrome-stable google-chrome \
                                     2>/dev/null || true) "$wrapper"; do
    if runs "$candidate"; then echo "$candidate"; return 0; fi
  done
  return 1
}

skipped() {  # the one line that says the browser tests are skipped, why, and how to get Chromium
  echo "services: Chromium not found ($1): the browser tests are skipped. To run them, install Debian's" \
       "chromium package (apt-get install chromium, as root), or set CHROMIUM=/path/to/chromium"
  exit 0
}

if [ -n "${CHROMIUM:-}" ] && ! runs "$CHROMIUM"; then
  skipped "CHROMIUM=$CHROMIUM does not run"
fi
if chromium=$(found); then
  echo "services: Chromium $chromium"
  exit 0
fi

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "services: installing Debian's chromium package"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } || skipped "apt-get install chromium failed"
  chromium=$(found) || skipped "Debian's chromium was installed but does not run"
  echo "services: Chromium $chromium"
  exit 0
fi

command -v apt-get >/dev/null && command -v apt-cache >/dev/null && command -v dpkg-deb >/dev/null \
  || skipped "not on PATH, and no apt-get and dpkg-deb to fetch Debian's package without root"
ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1 \
  || skipped "not on PATH, and apt has no package lists to fetch it from (apt-get update needs root)"

mkdir -p var
exec 9>var/chromium.lock
flock 9  # two runs of the suite in this checkout fetch it once
if ! runs "$wrapper"; then
  # Chromium's own packages always (their files live beside the program), and those apt would install with it
  # on this system (its simulation needs no root): the libraries it lacks, however deep.
  packages=(chromium chromium-common)
  for package in $(apt-get -s -qq install --no-install-recommends chromium 2>/dev/null \
                     | sed -n 's/^Inst \([^ ]*\) .*/\1/p'); do
    case " ${packages[*]} " in *" $package "*) ;; *) packages+=("$package") ;; esac
  done
  echo "services: fetching Debian's ${packages[*]} into var/chromium (no root, no system package)"
  rm -rf "$root" && mkdir -p "$root/debs" "$root/tree" "$root/bin"
  (cd "$root/debs" && apt-get download -qq "${packages[@]}" >/dev/null 2>&1) \
    || skipped "apt-get download of Debian's chromium failed"
  for deb in "$root"/debs/*.deb; do
    dpkg-deb -x "$deb" "$root/tree" || skipped "dpkg-deb could not unpack $(basename "$deb")"
  done
  rm -rf "$root/debs"
  libraries=$(find "$root/tree" -name 'lib*.so*' -printf '%h\n' | sort -u | paste -sd:)
  {
    echo '#!/bin/sh'
    [ -n "$libraries" ] && echo "export LD_LIBRARY_PATH=\"$libraries\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\""
    echo "exec \"$root/tree/usr/lib/chromium/chromium\" \"\$@\""
  } > "$wrapper"
  chmod 755 "$wrapper"
  runs "$wrapper" || skipped "Debian's chromium unpacked in var/chromium does not run"
fi
echo "services: Chromium $wrapper"
