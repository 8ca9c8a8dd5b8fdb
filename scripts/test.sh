#!/usr/bin/env bash
# Installs what a fresh machine lacks, builds, and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
for package in libsqlite3-dev sqlite3; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}" >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
swift build --build-tests
swift test --skip-build
