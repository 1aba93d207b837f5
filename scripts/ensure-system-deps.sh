#!/usr/bin/env bash
# Installs the system packages the test suite drives for real: Debian's Chromium (the
# browser tests) and PostgreSQL's server binaries (the PostgreSQL backend tests).
# Nothing is downloaded outside the distribution's package manager.
set -euo pipefail

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
[ ${#missing[@]} -eq 0 ] && exit 0

echo "Installing system packages: ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  apt_get=(apt-get)
elif command -v sudo >/dev/null 2>&1; then
  apt_get=(sudo apt-get)
else
  echo "Need root (or sudo) to install: ${missing[*]}. Install them, then rerun." >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${apt_get[@]}" update -qq
"${apt_get[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
