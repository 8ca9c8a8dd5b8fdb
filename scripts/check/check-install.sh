#!/usr/bin/env bash
# Checks a prefix that scripts/install.sh filled, as a server without the Swift toolchain
# would use it:
#
#   scripts/check/check-install.sh PREFIX
#
# PREFIX/bin/mirror must run with an empty environment and print its version and the job-file
# schema, and need no Swift runtime library (a server without the toolchain has none) nor any
# library ldd cannot find; the man page and the bash, zsh and fish completions must be there
# and not empty. scripts/test.sh runs it on the debug build's objects linked that way
# (scripts/install.sh --debug), then, with MIRROR_INSTALL_CHECK=release as .ci/run sets it,
# on the optimised build users install.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: scripts/check/check-install.sh PREFIX" >&2; exit 2; }
prefix=$1
install_failed() { echo "install check: $*" >&2; exit 1; }

[ -x "$prefix/bin/mirror" ] || install_failed "$prefix/bin/mirror is missing"
version=$(env -i "$prefix/bin/mirror" --version) || install_failed "'env -i $prefix/bin/mirror --version' failed"
[ -n "$version" ] || install_failed "'mirror --version' printed nothing"
# A command that goes through Foundation's JSON encoder, beyond the version string.
schema=$(env -i "$prefix/bin/mirror" schema) || install_failed "'env -i $prefix/bin/mirror schema' failed"
python3 -c 'import json, sys; assert json.load(sys.stdin)["title"] == "mirror job file"' <<<"$schema" \
    || install_failed "'mirror schema' did not print the job-file schema"
needs=$(ldd "$prefix/bin/mirror") || install_failed "ldd $prefix/bin/mirror failed"
if grep -q 'libswift\|not found' <<<"$needs"; then
    grep 'libswift\|not found' <<<"$needs" >&2
    install_failed "the installed mirror needs the Swift runtime (or a library that is missing): it would not run without the toolchain"
fi
for file in share/man/man1/mirror.1 share/bash-completion/completions/mirror share/zsh/site-functions/_mirror \
            share/fish/vendor_completions.d/mirror.fish; do
    [ -s "$prefix/$file" ] || install_failed "$file was not installed"
done
echo "install check: mirror $version runs from $prefix with an empty environment and no Swift runtime library"
