#!/usr/bin/env bash
# Renders mirror's man page (roff, on stdout) from the help texts of a built binary, so the
# page always says what that binary does:
#
#   scripts/man-page.sh .build/release/mirror > mirror.1 && man ./mirror.1
set -euo pipefail
MIRROR=${1:?usage: scripts/man-page.sh PATH-TO-MIRROR}

# Help text as roff, kept as printed (no filling): backslashes escaped, and a line that
# starts with . or ' is not taken as a request.
verbatim() {
    printf '.nf\n'
    sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
    printf '.fi\n'
}

version=$("$MIRROR" --version)
printf '.TH MIRROR 1 "" "mirror %s" "User Commands"\n' "$version"
printf '.SH NAME\nmirror \\- mirror paged JSON APIs into per-table SQLite files for offline use\n'
printf '.SH SYNOPSIS\n.B mirror\n.I command\n[\\fIoptions\\fR]\n'
printf '.SH DESCRIPTION\n'
"$MIRROR" --help | verbatim
printf '.SH COMMANDS\n'
# The commands, as the root help lists them under SUBCOMMANDS.
commands=$("$MIRROR" --help | awk '/^SUBCOMMANDS:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
for command in $commands; do
    printf '.SS mirror %s\n' "$command"
    "$MIRROR" help "$command" | verbatim
done
printf '.SH JOB FILES\n'
printf 'The job-file format (every key, its type, its default) is described in docs/job-files.md,\n'
printf 'shipped beside the binary in the release archive.\n'
printf '.B mirror schema\n'
printf 'prints it as a JSON Schema that editors use to complete and check job files.\n'
printf '.SH SEE ALSO\n.BR sqlite3 (1),\n.BR cron (8)\n'
