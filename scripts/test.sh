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

# The job-file schema: every job file of the repository and README's job-file examples
# follow what `mirror schema` prints (checked with Python's jsonschema).
if ! python3 -c 'import jsonschema, yaml' 2>/dev/null; then
  echo "installing python3-jsonschema python3-yaml" >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-jsonschema python3-yaml >/dev/null || true
  python3 -c 'import jsonschema, yaml' 2>/dev/null \
    || python3 -m pip install -q jsonschema pyyaml \
    || python3 -m pip install -q --break-system-packages jsonschema pyyaml
fi
schema=$(mktemp "${TMPDIR:-/tmp}/mirror.schema.XXXXXX.json")
trap 'rm -f "$schema"' EXIT
"$(swift build --show-bin-path)/mirror" schema >"$schema"
python3 scripts/check-job-schema.py "$schema" jobs/*.yaml README.md

# The install: scripts/install.sh into a temporary prefix, then the installed binary must
# run with an empty environment and need no Swift runtime library (a server without the
# toolchain has none).
prefix=$(mktemp -d "${TMPDIR:-/tmp}/mirror-prefix.XXXXXX")
trap 'rm -f "$schema"; rm -rf "$prefix"' EXIT
scripts/install.sh "$prefix"
install_failed() { echo "install check: $*" >&2; exit 1; }
version=$(env -i "$prefix/bin/mirror" --version) || install_failed "'env -i $prefix/bin/mirror --version' failed"
[ -n "$version" ] || install_failed "'mirror --version' printed nothing"
if ldd "$prefix/bin/mirror" | grep -q 'libswift\|not found'; then
  ldd "$prefix/bin/mirror" | grep 'libswift\|not found' >&2
  install_failed "the installed mirror needs the Swift runtime (or a library that is missing): it would not run without the toolchain"
fi
for file in share/man/man1/mirror.1 share/bash-completion/completions/mirror share/zsh/site-functions/_mirror \
            share/fish/vendor_completions.d/mirror.fish; do
  [ -s "$prefix/$file" ] || install_failed "$file was not installed"
done
echo "install check: mirror $version runs from $prefix with an empty environment and no Swift runtime library"
