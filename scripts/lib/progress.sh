# Sourced, not run: the progress display of the scripts that build mirror (demo.sh, test.sh,
# install.sh). A first build compiles mirror and its dependencies for minutes; with the
# output in a log alone the terminal would look stuck, and with the whole output on it the
# script's own lines would drown.
#
#   build_with_progress LOG COMMAND...
#
# runs COMMAND with its whole output (stdout and stderr) in LOG, and shows on stderr what
# it is doing from swift build's "[N/M] Compiling Target file.swift" lines: on a terminal one
# line rewritten in place, cleared at the end; otherwise (a CI log, a pipe) a line each time
# another tenth of the steps is done, so that a log does not get thousands of them.
# Returns COMMAND's exit status; the caller shows the log's tail when it is not 0.

# The callers run with `set -euo pipefail`; the status below relies on pipefail.
build_with_progress() { # LOG COMMAND...
    local log=$1
    shift
    local width=0
    if [ -t 2 ]; then
        width=$(tput cols 2>/dev/null || echo 80)
        [ "$width" -gt 20 ] 2>/dev/null || width=80
    fi
    local status=0
    # pipefail: the pipeline fails with the rightmost failing command, so a failed build
    # fails it even though tee and awk succeed; `|| status=$?` keeps `set -e` from ending
    # the caller before it can show the log. awk reads to the end of its input, so tee (and
    # the build behind it) never meets a closed pipe.
    "$@" 2>&1 | tee "$log" | awk -v width="$width" '
        # "[166/1155] Compiling SwiftProtobuf Message.swift", "[1150/1155] Linking mirror"
        match($0, /^\[[0-9]+\/[0-9]+\] /) {
            split(substr($0, 2, RLENGTH - 3), n, "/")
            done = n[1] + 0; total = n[2] + 0
            if (total == 0) next
            percent = int(100 * done / total)
            what = substr($0, RLENGTH + 1)
            if (width > 0) {
                line = sprintf("  %3d%% %d/%d %s", percent, done, total, what)
                printf "\r%s\033[K", substr(line, 1, width - 1)
                shown = 1
            } else if (what !~ /^Compiling plugin / && done >= due) {
                # SwiftPM raises M as it plans more steps (from about 1000 to 3000 in a first
                # test build), so the percentage can fall back: a line each time another
                # tenth of the steps known so far is done, not at each new tenth of M.
                due = done + total / 10
                printf "  %3d%% %d/%d %s\n", percent, done, total, what
            }
            fflush()
        }
        END { if (shown) { printf "\r\033[K"; fflush() } }
    ' >&2 || status=$?
    return "$status"
}
