#!/usr/bin/env bash
# Benchmark `mirror run` and `mirror export` against a near-limit reference.
#
#   scripts/bench.sh
#
# Generates a fixed workload (1,000 pages x 100 records, ~85 KB a page, 95,005 unique
# ids; scripts/bench/gen_workload.py), serves it with nginx on a free loopback port,
# and measures with /usr/bin/time, in the same run:
#   - mirror run   (release build, fresh --output folder each run)
#   - reference:   one `curl --parallel --parallel-max 8` fetching all pages to disk,
#                  then one `sqlite3` bulk load of all of them in ONE transaction
#                  (json_each) into the table of SPEC section 4
#   - mirror export of all records vs `sqlite3 ... "select record from t_item"`
# One warm-up of each, then BENCH_RUNS measured runs (median reported). It checks that
# every mirror run stored exactly 95,005 records and that the export matches the
# workload record for record, and fails loudly otherwise.
#
# Environment: BENCH_RUNS (default 3), BENCH_PAGES (default 1000; the checks scale),
# BENCH_SKIP_BUILD=1 (use the existing .build/release/mirror), MIRROR=path (binary to
# measure; implies no build), BENCH_KEEP=1 (keep the temp folder), BENCH_CONCURRENCY=N
# (adds `concurrency: N` to the generated job, once mirror supports that key).
# Needs: swift (to build), python3, nginx, curl, sqlite3, GNU time; the Debian
# packages that are missing are installed with apt-get.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
RUNS=${BENCH_RUNS:-3}
PAGES=${BENCH_PAGES:-1000}
PARALLEL=8
WALKED=$((PAGES * 100))
UNIQUE=$(( PAGES > 0 ? 100 + (PAGES - 1) * 95 : 0 ))

say() { printf '%s\n' "$*" >&2; }
die() { printf 'bench: FAILED: %s\n' "$*" >&2; exit 1; }

# ---- tools -------------------------------------------------------------------------
apt_install() {
    [ $# -gt 0 ] || return 0
    say "bench: installing missing Debian packages: $*"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >/dev/null
    $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
missing=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v sqlite3 >/dev/null 2>&1 || missing+=(sqlite3)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
[ -x /usr/bin/time ] || missing+=(time)
if [ -z "${MIRROR:-}" ] && [ "${BENCH_SKIP_BUILD:-0}" != 1 ]; then
    # GRDB links the system SQLite
    [ -e /usr/include/sqlite3.h ] || missing+=(libsqlite3-dev)
fi
apt_install "${missing[@]+"${missing[@]}"}"
NGINX=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)

# ---- build ---------------------------------------------------------------------------
if [ -n "${MIRROR:-}" ]; then
    MIRROR=$(cd "$(dirname "$MIRROR")" && pwd)/$(basename "$MIRROR")
elif [ "${BENCH_SKIP_BUILD:-0}" = 1 ]; then
    MIRROR="$ROOT/.build/release/mirror"
else
    command -v swift >/dev/null 2>&1 || die "swift is not installed (https://www.swift.org/install/linux/)"
    say "bench: swift build -c release --product mirror ..."
    buildlog=$(mktemp)
    if ! swift build -c release --product mirror >"$buildlog" 2>&1; then
        tail -40 "$buildlog" >&2
        rm -f "$buildlog"
        die "swift build failed"
    fi
    rm -f "$buildlog"
    MIRROR="$ROOT/.build/release/mirror"
fi
[ -x "$MIRROR" ] || die "no mirror binary at $MIRROR"

# ---- temp folder, cleanup -------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mirror-bench.XXXXXX")
NGINX_PID=""
cleanup() {
    if [ -n "$NGINX_PID" ] && kill -0 "$NGINX_PID" 2>/dev/null; then
        kill -TERM "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
    fi
    if [ "${BENCH_KEEP:-0}" = 1 ]; then
        say "bench: kept $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- workload --------------------------------------------------------------------------
say "bench: generating workload in $WORK/www ..."
python3 "$ROOT/scripts/bench/gen_workload.py" --pages "$PAGES" "$WORK/www" >"$WORK/gen.txt" \
    || die "workload generation failed"
BYTES=$(sed -n 's/.* bytes=\([0-9]*\).*/\1/p' "$WORK/gen.txt")

# ---- nginx -----------------------------------------------------------------------------
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
start_nginx() {
    local port=$1 user_line=""
    mkdir -p "$WORK/nginx/logs" "$WORK/nginx/tmp"
    # the master runs as whoever runs this; as root, keep the workers root too so they
    # can read the (0700) temp folder
    [ "$(id -u)" -ne 0 ] || user_line="user $(id -un) $(id -gn);"
    cat >"$WORK/nginx/nginx.conf" <<EOF
$user_line
worker_processes 2;
daemon off;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/logs/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 65s;
    keepalive_requests 100000;
    types { application/json json; }
    default_type application/octet-stream;
    client_body_temp_path $WORK/nginx/tmp/body;
    proxy_temp_path $WORK/nginx/tmp/proxy;
    fastcgi_temp_path $WORK/nginx/tmp/fastcgi;
    uwsgi_temp_path $WORK/nginx/tmp/uwsgi;
    scgi_temp_path $WORK/nginx/tmp/scgi;
    server {
        listen 127.0.0.1:$port;
        root $WORK/www;
    }
}
EOF
    "$NGINX" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/logs/error.log" \
        >/dev/null 2>"$WORK/nginx/logs/stderr.log" &
    NGINX_PID=$!
    for _ in $(seq 1 50); do
        if ! kill -0 "$NGINX_PID" 2>/dev/null; then
            wait "$NGINX_PID" 2>/dev/null || true
            NGINX_PID=""
            return 1
        fi
        if curl -fsS -o /dev/null "http://127.0.0.1:$port/pages/1.json" 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}
PORT=""
for _ in 1 2 3; do
    p=$(free_port)
    if start_nginx "$p"; then PORT=$p; break; fi
    if [ -n "$NGINX_PID" ]; then kill -TERM "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true; NGINX_PID=""; fi
done
[ -n "$PORT" ] || { cat "$WORK/nginx/logs/"*.log >&2 || true; die "nginx did not start"; }
BASE="http://127.0.0.1:$PORT/pages"
curl -fsS "$BASE/$PAGES.json" | cmp -s - "$WORK/www/pages/$PAGES.json" || die "nginx serves something else"

# ---- inputs for the measured commands -------------------------------------------------
mkdir -p "$WORK/job"
{
    echo "version: 1"
    echo "output: ./cache"
    echo "jobs:"
    echo "  - name: bench"
    echo "    url: \"$BASE/{page}.json\""
    echo "    pages: { from: 1, to: $PAGES }"
    echo "    records: data.list"
    echo "    id: id"
    echo "    table: t_item"
    [ -z "${BENCH_CONCURRENCY:-}" ] || echo "    concurrency: $BENCH_CONCURRENCY"
} >"$WORK/job/bench.yaml"

# curl config: every page to $WORK/fetch/<p>.json
for p in $(seq 1 "$PAGES"); do
    printf 'url = "%s/%d.json"\noutput = "%s/fetch/%d.json"\n' "$BASE" "$p" "$WORK" "$p"
done >"$WORK/curl.cfg"

cat >"$WORK/load.sql" <<EOF
PRAGMA journal_mode=WAL;
CREATE TABLE t_item (
  account    TEXT    NOT NULL DEFAULT '',
  id         TEXT    NOT NULL,
  record     TEXT    NOT NULL,
  position   INTEGER NOT NULL,
  first_seen TEXT    NOT NULL,
  last_seen  TEXT    NOT NULL,
  PRIMARY KEY (account, id)
);
BEGIN;
INSERT OR REPLACE INTO t_item (account, id, record, position, first_seen, last_seen)
WITH RECURSIVE p(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM p WHERE n < $PAGES)
SELECT '', json_extract(j.value, '\$.id'), j.value, (p.n - 1) * 100 + j.key,
       strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), strftime('%Y-%m-%dT%H:%M:%SZ', 'now')
FROM p, json_each(CAST(readfile('$WORK/fetch/' || p.n || '.json') AS TEXT), '\$.data.list') AS j;
COMMIT;
EOF

# ---- measuring -------------------------------------------------------------------------
RESULTS="$WORK/results.tsv"
: >"$RESULTS"
# measure NAME RUN STDOUT_FILE CMD... : runs CMD under /usr/bin/time, appends a result
# line (unless RUN is "warm-up"); fails loudly when CMD fails
measure() {
    local name=$1 run=$2 out=$3
    shift 3
    local tf="$WORK/time.out" errf="$WORK/cmd.err" t0 t1 rc=0
    t0=$(date +%s%N)
    /usr/bin/time -f '%e %U %S %M' -o "$tf" "$@" >"$out" 2>"$errf" || rc=$?
    t1=$(date +%s%N)
    if [ "$rc" -ne 0 ]; then
        say "bench: '$*' exited with status $rc; its stderr (last lines):"
        tail -20 "$errf" >&2 || true
        [ "$out" = /dev/null ] || tail -5 "$out" >&2 || true
        die "$name failed"
    fi
    local u s m
    read -r _ u s m < <(tail -1 "$tf")
    local wall cpu
    wall=$(python3 -c "print('%.3f' % (($t1 - $t0) / 1e9))")
    cpu=$(python3 -c "print('%.2f' % ($u + $s))")
    say "$(printf 'bench:   %-14s %-8s wall %7ss  cpu %7ss  rss %6d MB' "$name" "$run" "$wall" "$cpu" $((m / 1024)))"
    [ "$run" = warm-up ] || printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$run" "$wall" "$cpu" "$m" >>"$RESULTS"
}

count_rows() { sqlite3 "$1" 'select count(*) from t_item'; }

run_mirror() { # RUN
    local out="$WORK/mirror-out-$1"
    rm -rf "$out"
    measure mirror-run "$1" "$WORK/mirror-run.stdout" \
        "$MIRROR" run "$WORK/job/bench.yaml" --output "$out" --quiet
    [ -f "$out/t_item.sqlite" ] || die "mirror wrote no $out/t_item.sqlite"
    local n
    n=$(count_rows "$out/t_item.sqlite")
    say "bench:     select count(*) from t_item -> $n"
    [ "$n" = "$UNIQUE" ] || die "mirror stored $n records, expected $UNIQUE"
}

run_reference() { # RUN
    rm -rf "$WORK/fetch" "$WORK/ref.sqlite" "$WORK/ref.sqlite-wal" "$WORK/ref.sqlite-shm"
    mkdir -p "$WORK/fetch"
    measure ref-fetch "$1" /dev/null \
        curl --parallel --parallel-max "$PARALLEL" --fail --silent --show-error -K "$WORK/curl.cfg"
    measure ref-load "$1" /dev/null sqlite3 "$WORK/ref.sqlite" ".read $WORK/load.sql"
    local n
    n=$(count_rows "$WORK/ref.sqlite")
    [ "$n" = "$UNIQUE" ] || die "reference stored $n records, expected $UNIQUE"
}

say "bench: workload: $(cat "$WORK/gen.txt")"
say "bench: nginx on 127.0.0.1:$PORT (pid $NGINX_PID); mirror: $MIRROR"
say "bench: 1 warm-up + $RUNS measured runs each, interleaved"
for run in warm-up $(seq 1 "$RUNS"); do
    run_reference "$run"
    run_mirror "$run"
    if [ "$run" != "$RUNS" ]; then rm -rf "$WORK/mirror-out-$run"; fi
done
LAST="$WORK/mirror-out-$RUNS"
rm -rf "$WORK/fetch"
DB="$LAST/t_item.sqlite"
sqlite3 "$DB" "select count(*) from t_item where id <> json_extract(record, '\$.id')" | grep -qx 0 \
    || die "some stored id differs from its record's id"

for run in warm-up $(seq 1 "$RUNS"); do
    measure mirror-export "$run" "$WORK/export.ndjson" \
        "$MIRROR" export --table t_item --output "$LAST"
    measure ref-export "$run" "$WORK/ref-export.ndjson" \
        sqlite3 "$DB" "select record from t_item order by account, position"
done
lines=$(wc -l <"$WORK/export.ndjson")
[ "$lines" -eq "$UNIQUE" ] || die "mirror export printed $lines lines, expected $UNIQUE"
export_ok=1
check=$(python3 "$ROOT/scripts/bench/check_export.py" "$WORK/www/expected.ndjson" "$WORK/export.ndjson") \
    || export_ok=0

# ---- report ------------------------------------------------------------------------------
echo
echo "mirror bench — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "mirror: $MIRROR ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ', modified'))"
echo "workload: $PAGES pages x 100 records, $(python3 -c "print('%.1f MB, %.1f KB/page' % ($BYTES/1e6, $BYTES/1e3/$PAGES))"), $WALKED records walked, $UNIQUE unique ids"
echo "server: nginx $("$NGINX" -v 2>&1 | sed 's|.*/||'), 127.0.0.1:$PORT, 2 workers, keepalive; mirror job concurrency: ${BENCH_CONCURRENCY:-default}"
echo "runs: 1 warm-up + $RUNS measured each"
echo
python3 "$ROOT/scripts/bench/report.py" "$RESULTS" "$WALKED" "$UNIQUE" "$BYTES"
echo
echo "checks: every mirror run stored select count(*) from t_item = $(count_rows "$DB") (expected $UNIQUE)"
echo "        $check"
echo "mirror's summary (last run):"
sed 's/^/  | /' "$WORK/mirror-run.stdout"
[ -z "$(tail -c1 "$WORK/mirror-run.stdout")" ] || echo
[ "$export_ok" = 1 ] || die "mirror export does not match the workload (see above)"
