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
# cores the first time. --debug installs the debug build instead, for the install check of
# scripts/test.sh: the objects of .build/debug, which the tests run and scripts/demo.sh
# builds, linked once more with the Swift runtime in (scripts/lib/link-static.py), in
# seconds, where a second build would take 6½ minutes with --static-swift-stdlib and 13
# optimised. Nobody should install it: it is not optimised. scripts/test.sh, which has just
# built everything with --build-tests, sets MIRROR_INSTALL_BUILT=1 so that --debug links what
# is there: a `swift build --product mirror` after a build of the tests recompiles some
# packages' modules (SwiftPM plans the two builds differently), about 20 s for nothing.
#
# That link writes a binary of its own and leaves .build/debug as it is. Building with
# --static-swift-stdlib into .build would not: SwiftPM does not recompile a target when only
# that option changes, yet an object compiled against the static Foundation asks the linker
# for its static libraries (CoreFoundation, _FoundationCShims, ...), so objects of both
# kinds would get mixed, and every plain `swift build` after it failed ("cannot find
# -lCoreFoundation") until the objects compiled for the static link were deleted.
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

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/mirror-install.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
started=$SECONDS
if [ "$configuration" = release ]; then
    echo "install: building mirror (release, Swift runtime linked in): about 13 minutes on 2 cores the first time; log: $LOG"
    build=(swift build -c release --product mirror --static-swift-stdlib)
elif [ "${MIRROR_INSTALL_BUILT:-0}" = 1 ]; then
    echo "install: linking the debug build that is there with the Swift runtime (MIRROR_INSTALL_BUILT=1)"
    build=()
else
    echo "install: building mirror (debug; the first time about 4½ minutes on 2 cores, then seconds), then linking it with the Swift runtime; log: $LOG"
    build=(swift build --product mirror)
fi
if [ ${#build[@]} -gt 0 ] && ! build_with_progress "$LOG" "${build[@]}"; then
    tail -n 30 "$LOG" >&2
    echo "install: the build failed; the whole output is in $LOG" >&2
    exit 1
fi
if [ "$configuration" = release ]; then
    cp "$("${build[@]}" --show-bin-path)/mirror" "$STAGE/mirror"
else
    python3 scripts/lib/link-static.py .build mirror "$STAGE/mirror"
fi
echo "install: built in $((SECONDS - started))s"
strip "$STAGE/mirror"

install -d "$PREFIX/bin" "$PREFIX/share/man/man1" "$PREFIX/share/bash-completion/completions" \
    "$PREFIX/share/zsh/site-functions" "$PREFIX/share/fish/vendor_completions.d"
install -m 755 "$STAGE/mirror" "$PREFIX/bin/mirror"
"$STAGE/mirror" --generate-completion-script bash >"$PREFIX/share/bash-completion/completions/mirror"
"$STAGE/mirror" --generate-completion-script zsh >"$PREFIX/share/zsh/site-functions/_mirror"
"$STAGE/mirror" --generate-completion-script fish >"$PREFIX/share/fish/vendor_completions.d/mirror.fish"
scripts/man-page.sh "$STAGE/mirror" >"$PREFIX/share/man/man1/mirror.1"

echo "install: $PREFIX/bin/mirror ($(du -h "$PREFIX/bin/mirror" | cut -f1)), its man page and bash, zsh and fish completions"
