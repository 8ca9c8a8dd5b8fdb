#!/usr/bin/env bash
# Builds mirror with the Swift runtime linked in, so that it runs on a machine without the
# Swift toolchain, and installs it:
#
#   scripts/install.sh [PREFIX]            # default /usr/local
#   scripts/install.sh --debug PREFIX      # the debug build, for scripts/test.sh's install check
#
#   PREFIX/bin/mirror                                   stripped; needs libc, libstdc++, libz, libsqlite3
#   PREFIX/share/man/man1/mirror.1                      rendered from the help texts
#   PREFIX/share/bash-completion/completions/mirror
#   PREFIX/share/zsh/site-functions/_mirror
#   PREFIX/share/fish/vendor_completions.d/mirror.fish
#
# By default it builds optimised (-c release), what users install: about 13 minutes on 2
# cores the first time. --debug builds the debug configuration instead, for the install check
# of scripts/test.sh: about 6½ minutes on 2 cores the first time, then seconds to a minute,
# where a second, optimised build would take 13. Nobody should install it: it is not
# optimised.
#
# The debug build has a folder of its own, .build/static, rather than relinking the objects
# of .build/debug, which the tests run: SwiftPM does not recompile a target when only
# --static-swift-stdlib changes, yet an object compiled against the static Foundation asks
# the linker for its static libraries (CoreFoundation, _FoundationCShims, ...), so objects of
# both kinds get mixed. Linked in place, .build/debug/mirror was replaced, and every plain
# `swift build` after it failed ("cannot find -lCoreFoundation") until the objects compiled
# for the static link were deleted.
#
# Build output goes to .build/install.log; its tail is shown if the build fails, and while it
# runs a progress line shows what it compiles (scripts/lib/progress.sh).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
configuration=release
if [ "${1:-}" = --debug ]; then
    configuration=debug
    shift
    [ $# -eq 1 ] || { echo "usage: scripts/install.sh --debug PREFIX (a debug build is not for /usr/local)" >&2; exit 2; }
fi
PREFIX=${1:-/usr/local}
cd "$ROOT"
source scripts/lib/progress.sh
mkdir -p .build
LOG=.build/install.log

[ -e /usr/include/sqlite3.h ] || {
    echo "install: libsqlite3-dev is missing: apt-get install libsqlite3-dev" >&2
    exit 1
}

if [ "$configuration" = release ]; then
    echo "install: building mirror (release, Swift runtime linked in): about 13 minutes on 2 cores the first time; log: $LOG"
else
    echo "install: building mirror (debug, Swift runtime linked in, in .build/static): about 6½ minutes on 2 cores the first time; log: $LOG"
fi
build=(swift build -c "$configuration" --product mirror --static-swift-stdlib)
# The debug build's own folder: see above.
[ "$configuration" = release ] || build+=(--scratch-path .build/static)
started=$SECONDS
if ! build_with_progress "$LOG" "${build[@]}"; then
    tail -n 30 "$LOG" >&2
    echo "install: the build failed; the whole output is in $LOG" >&2
    exit 1
fi
echo "install: built in $((SECONDS - started))s"
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
