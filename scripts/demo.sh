#!/usr/bin/env bash
# First run of mirror, offline, on a fresh Debian machine with the Swift toolchain:
#
#   scripts/demo.sh
#
# 1. installs what is missing (apt-get: sqlite3, libsqlite3-dev, python3),
# 2. builds mirror (swift build --product mirror: a debug build, which scripts/test.sh
#    then reuses; output in .build/demo-build.log, and a progress line of what it compiles),
# 3. starts the bundled sample API (scripts/sample-api.py) on a free loopback port,
# 4. runs .build/debug/mirror run jobs/sample.yaml (SAMPLE_PORT set to that port),
# 5. shows stored records: mirror export, and sqlite3 with json_extract; takes a snapshot
#    and reads the change feed,
# 6. publishes a generation to a folder and pulls it into a device's copy, as a kiosk would,
# 7. stops the sample API and asks `mirror serve` for its pages, answered from that copy.
# Exits with mirror run's status. Records land in ./cache; run it again to see an
# incremental run (nothing new, nothing changed).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
source scripts/lib/progress.sh
MIRROR=.build/debug/mirror

if [ -t 1 ]; then B=$'\033[1m' N=$'\033[0m'; else B="" N=""; fi
step() { printf '\n%s==> %s%s\n' "$B" "$*" "$N"; }
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }

# ---- 1. what the build and the demo need ------------------------------------------------
missing=()
command -v sqlite3 >/dev/null 2>&1 || missing+=(sqlite3)
[ -e /usr/include/sqlite3.h ] || missing+=(libsqlite3-dev)        # GRDB builds on the system SQLite
command -v python3 >/dev/null 2>&1 || missing+=(python3)           # the sample API
if [ ${#missing[@]} -gt 0 ]; then
    step "Installing ${missing[*]} (apt-get)"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >/dev/null
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v swift >/dev/null 2>&1 \
    || die "the Swift toolchain is not installed: see https://www.swift.org/install/linux/"

# ---- 2. build ----------------------------------------------------------------------------
# A debug build: the demo walks a few pages, so optimisation would only make the first
# build slower; scripts/test.sh builds the same way and reuses all of it.
LOG=.build/demo-build.log
mkdir -p .build
step "Building mirror: swift build --product mirror"
if [ -x "$MIRROR" ]; then
    echo "(already built once: this takes seconds; output in $LOG)"
else
    echo "(the first build compiles mirror and its dependencies from source: about 4½ minutes on 2 cores; output in $LOG)"
fi
started=$SECONDS
# The first build takes minutes: the progress line says what it is compiling and how far
# along it is, while the whole output goes to the log.
if ! build_with_progress "$LOG" swift build --product mirror; then
    tail -n 30 "$LOG" >&2
    die "the build failed; the whole output is in $LOG"
fi
echo "built in $((SECONDS - started))s"

# ---- 3. sample API -----------------------------------------------------------------------
step "Starting the sample API (python3 scripts/sample-api.py)"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mirror-demo.XXXXXX")
API_PID=""
SERVE_PID=""
stop() { # PID
    if [ -n "$1" ] && kill -0 "$1" 2>/dev/null; then
        kill "$1" 2>/dev/null || true
        wait "$1" 2>/dev/null || true
    fi
}
cleanup() {
    stop "$API_PID"
    stop "$SERVE_PID"
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# a fixed port when it is free, so that records (whose cover URLs name the port) stay the
# same from one demo run to the next; else any free port
start_api() { # PORT
    rm -f "$TMP/port"
    python3 scripts/sample-api.py --port "$1" --port-file "$TMP/port" 2>>"$TMP/api.err" &
    API_PID=$!
    for _ in $(seq 1 100); do
        [ -s "$TMP/port" ] && return 0
        if ! kill -0 "$API_PID" 2>/dev/null; then
            wait "$API_PID" 2>/dev/null || true
            API_PID=""
            return 1
        fi
        sleep 0.1
    done
    kill "$API_PID" 2>/dev/null || true
    wait "$API_PID" 2>/dev/null || true
    API_PID=""
    return 1
}
start_api "${SAMPLE_PORT:-8765}" || start_api 0 || { cat "$TMP/api.err" >&2; die "the sample API did not start"; }
SAMPLE_PORT=$(cat "$TMP/port")
export SAMPLE_PORT
# The salt of the news job's hashed author names: a secret, from the environment.
export SAMPLE_SALT=${SAMPLE_SALT:-demo-salt-keep-it-secret}
echo "listening on http://127.0.0.1:$SAMPLE_PORT/  (SAMPLE_PORT=$SAMPLE_PORT)"

# ---- 4. run ------------------------------------------------------------------------------
step "$MIRROR run jobs/sample.yaml"
status=0
"$MIRROR" run jobs/sample.yaml || status=$?

# ---- 5. look at what was stored ------------------------------------------------------------
step "$MIRROR export --table t_event --limit 3"
"$MIRROR" export --table t_event --limit 3 || echo "(export failed with status $?)"

if [ -f cache/t_event.sqlite ]; then
    step "sqlite3 cache/t_event.sqlite  (any SQLite client reads the cache; json_extract reaches into records)"
    query="SELECT id,
       json_extract(record, '\$.title')     AS title,
       json_extract(record, '\$.city')      AS city,
       json_extract(record, '\$.starts_at') AS starts_at,
       json_extract(record, '\$.price')     AS price
  FROM t_event ORDER BY position LIMIT 5;"
    printf '%s\n\n' "$query"
    sqlite3 -header -column cache/t_event.sqlite "$query" || true
    step "Typed columns (the job's columns:): city is indexed, starts a time, price a real"
    query="SELECT id, city, starts, price FROM t_event WHERE city = 'Zürich' ORDER BY starts;"
    printf '%s\n\n' "$query"
    sqlite3 -header -column cache/t_event.sqlite "$query" || true
    sqlite3 cache/t_event.sqlite "EXPLAIN QUERY PLAN $query" | sed -n 's/.*\(SEARCH.*\)/(\1)/p' || true
    step "Events by tag, through the view t_event__tags (explode: { tags: tags })"
    query="SELECT element AS tag, count(*) AS events
  FROM t_event__tags GROUP BY element ORDER BY events DESC, tag LIMIT 5;"
    printf '%s\n\n' "$query"
    sqlite3 -header -column cache/t_event.sqlite "$query" || true
    if [ -f cache/t_news.sqlite ]; then
        step "Personal data hashed before it was stored (the news job's hash:)"
        query="SELECT id, json_extract(record, '\$.author.name') AS author FROM t_news ORDER BY position LIMIT 3;"
        printf '%s\n\n' "$query"
        sqlite3 -header -column cache/t_news.sqlite "$query" | cut -c1-100 || true
    fi
    step "Cover images, resolved offline through _mirror_files"
    query="SELECT e.id, f.path AS cover_file, f.size, substr(f.sha256, 1, 12) AS sha256
  FROM t_event AS e
  JOIN _mirror_files AS f ON f.url = json_extract(e.record, '\$.cover.url') AND f.status = 'ok'
 ORDER BY e.position LIMIT 3;"
    printf '%s\n\n' "$query"
    sqlite3 -header -column cache/t_event.sqlite "$query" || true
    echo
    for t in t_event t_venue t_news t_review t_change; do
        if [ -f "cache/$t.sqlite" ]; then
            printf '%-8s %s records\n' "$t" "$(sqlite3 "cache/$t.sqlite" "SELECT count(*) FROM $t" 2>/dev/null || echo '?')"
        fi
    done

    step "$MIRROR snapshot \$TMP/snapshot --table t_event --with-files  (a consistent copy for devices; removed when the demo ends)"
    if "$MIRROR" snapshot "$TMP/snapshot" --table t_event --with-files; then
        echo "$(find "$TMP/snapshot" -type f | wc -l) files: manifest.json, t_event.sqlite and the covers under files/"
        mark=$(sqlite3 "$TMP/snapshot/t_event.sqlite" "SELECT changes_through FROM _mirror_snapshot WHERE table_name = 't_event'")
        since=$(( mark > 2 ? mark - 2 : 0 ))
        step "$MIRROR export --table t_event --changes-since $since  (the change feed: what a device at seq $since lacks)"
        "$MIRROR" export --table t_event --changes-since "$since" | cut -c1-150 || echo "(export failed with status $?)"
    fi

    step "$MIRROR publish file://\$TMP/pub, then $MIRROR pull file://\$TMP/pub --output \$TMP/device  (a device's copy)"
    served=cache
    if "$MIRROR" publish "file://$TMP/pub" && "$MIRROR" pull "file://$TMP/pub" --output "$TMP/device"; then
        served="$TMP/device"
    fi

    step "$MIRROR serve --output ${served/#$TMP/\$TMP} --port 0  (the sample API is stopped: the pulled copy answers its URLs, offline)"
    stop "$API_PID"
    API_PID=""
    # Made here, not by the redirection of the command in the background, which may come
    # after the first look below: sed on a missing file would end the demo (set -e).
    : >"$TMP/serve.err"
    "$MIRROR" serve --output "$served" --port 0 2>>"$TMP/serve.err" &
    SERVE_PID=$!
    serve_port=""
    for _ in $(seq 1 100); do
        serve_port=$(sed -n 's|.*http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$TMP/serve.err" | head -n 1)
        [ -z "$serve_port" ] || break
        kill -0 "$SERVE_PID" 2>/dev/null || break
        sleep 0.1
    done
    if [ -n "$serve_port" ]; then
        for path in "/v1/events?page=2" "/v1/venues?cursor=dmVudWVzOjI" "/v1/events?page=99"; do
            echo "GET http://127.0.0.1:$serve_port$path"
            python3 - "http://127.0.0.1:$serve_port$path" <<'PY' || true
import sys, urllib.request, urllib.error
try:
    with urllib.request.urlopen(sys.argv[1]) as answer:
        status, body = answer.status, answer.read()
except urllib.error.HTTPError as error:
    status, body = error.code, error.read()
text = body.decode()
print(f"  {status}: {text[:150]}{'…' if len(text) > 150 else ''}")
PY
        done
        echo "(also: http://127.0.0.1:$serve_port/ is a status page, /_mirror/tables the read API)"
    else
        cat "$TMP/serve.err" >&2
        echo "(mirror serve did not start)"
    fi
    stop "$SERVE_PID"
    SERVE_PID=""
fi

echo
if [ "$status" -eq 0 ]; then
    echo "demo: done. Records are in ./cache; try: $MIRROR status --output cache, or $MIRROR export --table t_venue"
else
    echo "demo: mirror run exited with status $status" >&2
fi
exit "$status"
