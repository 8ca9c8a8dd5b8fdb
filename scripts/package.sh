#!/usr/bin/env bash
# Makes the release archive of mirror for this machine's architecture:
#
#   scripts/package.sh        # dist/mirror-<version>-linux-<arch>.tar.gz
#
# The archive holds one folder, mirror-<version>-linux-<arch>/, laid out as a prefix
# (bin/mirror, share/man/man1/mirror.1, share/… completions; see scripts/install.sh)
# plus README.md, docs/ and NOTICES (the licenses of the packages built into the binary).
# Unpack it into /usr/local with: tar -xzf mirror-….tar.gz -C /usr/local --strip-components 1
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/mirror-package.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT

scripts/install.sh "$STAGE/prefix"
version=$("$STAGE/prefix/bin/mirror" --version)
name="mirror-$version-linux-$(uname -m)"
mv "$STAGE/prefix" "$STAGE/$name"
cp README.md "$STAGE/$name/"
cp -R docs "$STAGE/$name/"
python3 scripts/notices.py .build "$(swift build -c release --show-bin-path)" >"$STAGE/$name/NOTICES"

mkdir -p dist
tar -czf "dist/$name.tar.gz" --owner=0 --group=0 -C "$STAGE" "$name"
echo "package: dist/$name.tar.gz ($(du -h "dist/$name.tar.gz" | cut -f1))"
