#!/usr/bin/env bash
# Builds mirror with the Swift runtime linked in, so that it runs on a machine without the
# Swift toolchain, and installs it:
#
#   scripts/install.sh [PREFIX]      # default /usr/local
#
#   PREFIX/bin/mirror                                   stripped; needs libc, libstdc++, libz, libsqlite3
#   PREFIX/share/man/man1/mirror.1                      rendered from the help texts
#   PREFIX/share/bash-completion/completions/mirror
#   PREFIX/share/zsh/site-functions/_mirror
#   PREFIX/share/fish/vendor_completions.d/mirror.fish
#
# Build output goes to .build/install.log; its tail is shown if the build fails.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PREFIX=${1:-/usr/local}
cd "$ROOT"
mkdir -p .build
LOG=.build/install.log

[ -e /usr/include/sqlite3.h ] || {
    echo "install: libsqlite3-dev is missing: apt-get install libsqlite3-dev" >&2
    exit 1
}

echo "install: building mirror (release, Swift runtime linked in): about 13 minutes on 2 cores the first time; log: $LOG"
build=(swift build -c release --product mirror --static-swift-stdlib)
if ! "${build[@]}" >"$LOG" 2>&1; then
    tail -n 30 "$LOG" >&2
    echo "install: the build failed; the whole output is in $LOG" >&2
    exit 1
fi
BINARY="$("${build[@]}" --show-bin-path)/mirror"

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/mirror-install.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
cp "$BINARY" "$STAGE/mirror"
strip "$STAGE/mirror"

install -d "$PREFIX/bin" "$PREFIX/share/man/man1" "$PREFIX/share/bash-completion/completions" \
    "$PREFIX/share/zsh/site-functions" "$PREFIX/share/fish/vendor_completions.d"
install -m 755 "$STAGE/mirror" "$PREFIX/bin/mirror"
"$STAGE/mirror" --generate-completion-script bash >"$PREFIX/share/bash-completion/completions/mirror"
"$STAGE/mirror" --generate-completion-script zsh >"$PREFIX/share/zsh/site-functions/_mirror"
"$STAGE/mirror" --generate-completion-script fish >"$PREFIX/share/fish/vendor_completions.d/mirror.fish"
scripts/man-page.sh "$STAGE/mirror" >"$PREFIX/share/man/man1/mirror.1"

echo "install: $PREFIX/bin/mirror ($(du -h "$PREFIX/bin/mirror" | cut -f1)), its man page and bash, zsh and fish completions"
