#!/usr/bin/env bash
# Benchmark `mirror serve`: the API's own URLs replayed from the mirror against the same
# pages as static files, its read API against Datasette on the same table, and its
# downloaded files against the same files served by nginx.
#
#   scripts/bench/bench-serve.sh
#   BENCH_PAGES=100 BENCH_SERVE_FILES=50 BENCH_SERVE_SECONDS=3 scripts/bench/bench-serve.sh   # a quick try
#
# Fills one output folder, once and not measured: the bench workload (1,000 pages x 100
# records, ~85 KB a page, 95,005 unique ids; scripts/bench/gen_workload.py) served by
# nginx on a free loopback port and walked by `mirror run` into table t_item, and 200
# files (scripts/bench/gen_files.py, 90-110 KB each) named by 2 pages of records
# ({"id": N, "file": {"url": "http://127.0.0.1:PORT/files/N.jpg"}}, written once the port
# is known) and downloaded by a second job (`downloads: [file.url]`, table t_file).
# Then serves that folder with `mirror serve --port 0` (under GNU time, for its peak RSS)
# and measures each target with wrk on loopback (-t2, -c16, --latency, 10 s after a 2 s
# warm-up; scripts/bench/serve_wrk.lua asks for path i mod n of the target's list of n
# paths, so every request goes to the next page, slice or file in turn):
#   - replayed pages: `mirror serve` answering the API's own URLs, /pages/<p>.json, every
#     page in turn, against the same page files served by nginx (2 workers, sendfile,
#     keep-alive) from the folder mirror walked;
#   - 100-record slices of t_item, about a page's worth: mirror's read API,
#     /_mirror/tables/t_item?limit=100&offset=K (K = 0, 100, ...), against Datasette
#     (installed with pip into a venv in the temp folder; `datasette serve -i`: immutable,
#     the file opened read-only with no locking or change checks, as suits a table nothing
#     writes meanwhile) answering /t_item/t_item.json?_shape=array&_size=100&_nocount=1
#     &_next=%2C<id>: its keyset pagination, which on t_item's primary key (account, id)
#     takes the last row's account and id; the same number of slices, in key order;
#   - downloaded files: `mirror serve` /_mirror/files/<path> (every file in turn) against
#     nginx serving the output folder's files/ at the same paths (an alias).
# The report ends with the targets, met or MISSED: replayed pages and files each at least 0.6 x
# nginx's requests/s, and mirror serve's peak RSS at most 64 MB.
# Figures per target: requests/s, MB/s (1 MB = 10^6 bytes, whole responses with headers,
# as wrk counts them), the mean response size and the latency p50 and p99. Peak RSS:
# mirror serve's and Datasette's (GNU time's maximum RSS, each stopped with SIGTERM at the
# end), nginx's (the peak resident size, VmHWM, of its master and workers, summed).
# wrk and the servers share the machine's cores, as any loopback benchmark does.
#
# Checks, before measuring: mirror stored every unique id and downloaded every file; a
# replayed page is the same JSON value as nginx's (pages 1, the middle one and the last);
# a slice of each read API holds 100 records, the ones sqlite3 finds for it (the first and
# the middle slice); every file mirror serve and nginx send has the SHA-256 _mirror_files
# holds for it. While measuring: wrk must see no socket error (connect, read, write,
# timeout: 10 s) and no response other than 2xx or 3xx, warm-up included. After measuring,
# still exact after a change: page 1 asked twice is the same bytes and ETag (304 for it);
# a record of it changed with a sqlite3 UPDATE, then removed with a DELETE, is in the next
# answer as t_item holds it (left out once deleted), with a new ETag each time, the rest of
# the page as it was. mirror serve must exit 0 on SIGTERM. Any miss prints
# `bench-serve: FAILED: ...` and exits 1.
#
# Environment: MIRROR=path (binary to measure; implies no build), BENCH_SKIP_BUILD=1 (use
# the existing .build/release/mirror; else it is built first, as common.sh says),
# BENCH_PAGES (default 1000), BENCH_SERVE_FILES (default 200, 100 a page),
# BENCH_SERVE_SECONDS (each measurement, default 10), BENCH_SERVE_CONNECTIONS (wrk -c,
# default 16), DATASETTE=path (a datasette executable to use instead of installing one),
# BENCH_KEEP=1 (keep the temp folder), BENCH_SERVE_FLOOR=1 (also measure
# scripts/bench/serve-floor, built here: Hummingbird 2 alone, with no code of mirror's,
# twice: answering each page and file from a buffer read into memory before it listens,
# and from a file kept open, sent with sendfile after a corked head, as mirror serve sends
# kept pages and files -- the least a server on Hummingbird costs a request on this
# machine, each way; and a third time with NIO alone, answering on the event loop with
# sendfile, the floor of a server built without Hummingbird's task per connection; its
# pages and files checked as mirror serve's are, and the report adds each floor against
# nginx and mirror serve against the sendfile floor).
# Needs: python3 (with venv, and PyPI reachable unless DATASETTE is given), nginx, wrk,
# curl, sqlite3, GNU time, sha256sum; the Debian packages that are missing are installed
# with apt-get.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$ROOT"
PAGES=${BENCH_PAGES:-1000}
FILES=${BENCH_SERVE_FILES:-200}
SECONDS_EACH=${BENCH_SERVE_SECONDS:-10}
CONNECTIONS=${BENCH_SERVE_CONNECTIONS:-16}
THREADS=2        # wrk -t
WARMUP=2         # seconds of wrk before each measurement, not counted
WRK_TIMEOUT=10s  # a response later than this is a socket error (timeout)
SLICE=100        # records a read API slice holds, a page's worth
unique_ids() { echo $(( $1 > 0 ? 100 + ($1 - 1) * 95 : 0 )); }
UNIQUE=$(unique_ids "$PAGES")

say() { printf '%s\n' "$*" >&2; }
die() { printf 'bench-serve: FAILED: %s\n' "$*" >&2; exit 1; }

positive() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "$1 must be a positive integer, not '$2'"; }
positive BENCH_PAGES "$PAGES"
positive BENCH_SERVE_FILES "$FILES"
positive BENCH_SERVE_SECONDS "$SECONDS_EACH"
positive BENCH_SERVE_CONNECTIONS "$CONNECTIONS"
[ "$CONNECTIONS" -ge "$THREADS" ] || die "BENCH_SERVE_CONNECTIONS must be at least $THREADS (wrk's threads)"
FILE_PAGES=$(( (FILES + 99) / 100 ))
SLICES=$(( UNIQUE / SLICE ))

# ---- tools -------------------------------------------------------------------------
missing=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v sqlite3 >/dev/null 2>&1 || missing+=(sqlite3)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
[ -x /usr/bin/time ] || missing+=(time)
command -v sha256sum >/dev/null 2>&1 || missing+=(coreutils)
if [ -z "${MIRROR:-}" ] && [ "${BENCH_SKIP_BUILD:-0}" != 1 ]; then
    # GRDB links the system SQLite
    [ -e /usr/include/sqlite3.h ] || missing+=(libsqlite3-dev)
fi
apt_install bench-serve "${missing[@]+"${missing[@]}"}"
NGINX=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)

# ---- build ---------------------------------------------------------------------------
bench_mirror bench-serve
FLOOR=${BENCH_SERVE_FLOOR:-0}
[[ "$FLOOR" =~ ^[01]$ ]] || die "BENCH_SERVE_FLOOR must be 0 or 1, not '$FLOOR'"
if [ "$FLOOR" = 1 ]; then
    build_floor bench-serve serve-floor
fi

# ---- temp folder, servers, cleanup -----------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mirror-bench-serve.XXXXXX")
CACHE="$WORK/cache"
NGINX_PID=""
SERVE_PID=""       # /usr/bin/time running mirror serve
SERVE_CHILD=""     # mirror serve
DS_PID=""          # /usr/bin/time running datasette
DS_CHILD=""        # datasette
FLOOR_PID=""       # serve-floor, from memory
SENDFILE_PID=""    # serve-floor --sendfile
NIO_PID=""         # serve-floor --nio --sendfile
stop_pid() { # PID: SIGTERM a process this script started and wait for it
    if [ -n "$1" ] && kill -0 "$1" 2>/dev/null; then
        kill -TERM "$1" 2>/dev/null || true
        wait "$1" 2>/dev/null || true
    fi
}
# stop_timed TIME_PID CHILD_PID: SIGTERM the server GNU time runs (time itself would die
# of it without a word) and wait for time, which then writes the server's peak RSS;
# returns the server's exit status
stop_timed() {
    local tpid=$1 child=$2 rc=0
    [ -n "$tpid" ] || return 0
    if [ -n "$child" ]; then
        kill -TERM "$child" 2>/dev/null || true
    else
        kill -TERM "$tpid" 2>/dev/null || true
    fi
    wait "$tpid" 2>/dev/null || rc=$?
    return "$rc"
}
cleanup() {
    stop_timed "$SERVE_PID" "$SERVE_CHILD" || true
    stop_timed "$DS_PID" "$DS_CHILD" || true
    stop_pid "$FLOOR_PID"
    stop_pid "$SENDFILE_PID"
    stop_pid "$NIO_PID"
    stop_pid "$NGINX_PID"
    if [ "${BENCH_KEEP:-0}" = 1 ]; then
        say "bench-serve: kept $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_timed NAME CMD...: run CMD under GNU time (its peak RSS in KB to $WORK/NAME.rss,
# its output to $WORK/NAME.log), in the background; sets STARTED_PID (time) and
# STARTED_CHILD (CMD)
start_timed() {
    local name=$1
    shift
    /usr/bin/time -f '%M' -o "$WORK/$name.rss" "$@" >"$WORK/$name.log" 2>&1 &
    STARTED_PID=$!
    STARTED_CHILD=""
    for _ in $(seq 1 50); do
        STARTED_CHILD=$(ps -o pid= --ppid "$STARTED_PID" 2>/dev/null | tr -d ' ' | head -1)
        [ -z "$STARTED_CHILD" ] || return 0
        kill -0 "$STARTED_PID" 2>/dev/null || return 0
        sleep 0.05
    done
}
# peak_rss_mb NAME: the peak RSS GNU time wrote for NAME, in MB (n/a if none)
peak_rss_mb() {
    local kb
    kb=$(grep -E '^[0-9]+$' "$WORK/$1.rss" 2>/dev/null | tail -1 || true)
    if [ -n "$kb" ]; then python3 -c "print('%.1f' % ($kb / 1024))"; else echo n/a; fi
}

# ---- workload --------------------------------------------------------------------------
say "bench-serve: generating $PAGES pages and $FILES files in $WORK/www ..."
python3 "$ROOT/scripts/bench/gen_workload.py" --pages "$PAGES" "$WORK/www" >"$WORK/gen.txt" \
    || die "workload generation failed"
BYTES=$(sed -n 's/.* bytes=\([0-9]*\).*/\1/p' "$WORK/gen.txt")
python3 "$ROOT/scripts/bench/gen_files.py" files "$WORK/www" --count "$FILES" >"$WORK/gen-files.txt" \
    || die "file generation failed"
FILE_BYTES=$(sed -n 's/.* bytes=\([0-9]*\).*/\1/p' "$WORK/gen-files.txt")

# ---- nginx: the pages and the source files from www/, the mirror's files at the paths
# mirror serve gives them ----------------------------------------------------------------
start_nginx "$WORK" "$WORK/www" pages/1.json "location /_mirror/files/ { alias $CACHE/files/; }"
NGINX_URL="http://127.0.0.1:$PORT"
curl -fsS "$NGINX_URL/pages/$PAGES.json" | cmp -s - "$WORK/www/pages/$PAGES.json" || die "nginx serves something else"

# ---- fill the output folder (not measured) -----------------------------------------------
python3 "$ROOT/scripts/bench/gen_files.py" pages "$WORK/www/dl" --count "$FILES" --base "$NGINX_URL/files" >/dev/null \
    || die "download pages generation failed"
mkdir -p "$WORK/job"
cat >"$WORK/job/serve.yaml" <<EOF
version: 1
output: ./cache
jobs:
  - name: pages
    url: "$NGINX_URL/pages/{page}.json"
    pages: { from: 1, to: $PAGES }
    records: data.list
    id: id
    table: t_item
    concurrency: 8
  - name: files
    url: "$NGINX_URL/dl/{page}.json"
    pages: { from: 1, to: $FILE_PAGES }
    records: data.list
    id: id
    table: t_file
    concurrency: 4
    downloads: [file.url]
    download_concurrency: 16
    max_file_size: 1MB
EOF
say "bench-serve: mirror run: $PAGES pages into t_item, $FILES files into $CACHE/files ..."
"$MIRROR" run "$WORK/job/serve.yaml" --output "$CACHE" --quiet >"$WORK/mirror-run.stdout" 2>"$WORK/mirror-run.stderr" \
    || { tail -20 "$WORK/mirror-run.stderr" "$WORK/mirror-run.stdout" >&2 || true; die "mirror run failed"; }
DB="$CACHE/t_item.sqlite"
FILE_DB="$CACHE/t_file.sqlite"
[ -f "$DB" ] && [ -f "$FILE_DB" ] || die "mirror run wrote no $DB or $FILE_DB"
n=$(sqlite3 "$DB" 'select count(*) from t_item')
[ "$n" = "$UNIQUE" ] || die "mirror stored $n records in t_item, expected $UNIQUE"
n=$(sqlite3 "$FILE_DB" "select count(*) from _mirror_files where status = 'ok'")
[ "$n" = "$FILES" ] || die "mirror downloaded $n files, expected $FILES"

# ---- the paths each target is asked for, in turn ----------------------------------------
mkdir -p "$WORK/paths"
seq 1 "$PAGES" | sed 's|.*|/pages/&.json|' >"$WORK/paths/pages.txt"
seq 0 $(( SLICES - 1 )) | awk -v n="$SLICE" '{ printf "/_mirror/tables/t_item?limit=%d&offset=%d\n", n, $1 * n }' \
    >"$WORK/paths/slices.txt"
# Datasette: slice j (j >= 1) starts after the last row of slice j - 1 in key order
{
    echo "/t_item/t_item.json?_shape=array&_size=$SLICE&_nocount=1"
    sqlite3 "$DB" "select id from (select id, row_number() over (order by account, id) as n from t_item)
                   where n % $SLICE = 0 and n < $(( SLICES * SLICE )) order by n" \
        | sed "s|.*|/t_item/t_item.json?_shape=array\&_size=$SLICE\&_nocount=1\&_next=%2C&|"
} >"$WORK/paths/datasette.txt"
[ "$(sqlite3 "$DB" "select count(distinct account) from t_item")" = 1 ] \
    || die "t_item holds more than one account; the Datasette slices assume one"
# the files as _mirror_files lists them (path: files/<xx>/<sha256>.<ext>) and their SHA-256
sqlite3 -separator ' ' "$FILE_DB" "select sha256, substr(path, 7) from _mirror_files where status = 'ok' order by path" \
    | awk '{ print $1 "  " $2 }' >"$WORK/files.sha256"
sed 's|^[0-9a-f]*  |/_mirror/files/|' "$WORK/files.sha256" >"$WORK/paths/files.txt"
for f in pages slices datasette files; do
    say "bench-serve:   $f: $(wc -l <"$WORK/paths/$f.txt") paths, e.g. $(head -1 "$WORK/paths/$f.txt")"
done
[ "$(wc -l <"$WORK/paths/datasette.txt")" = "$SLICES" ] || die "$(wc -l <"$WORK/paths/datasette.txt") Datasette slices, expected $SLICES"

# ---- mirror serve ------------------------------------------------------------------------
start_timed serve "$MIRROR" serve --output "$CACHE" --port 0
SERVE_PID=$STARTED_PID
SERVE_CHILD=$STARTED_CHILD
SERVE_PORT=""
for _ in $(seq 1 100); do
    SERVE_PORT=$(sed -n 's|^serving .* on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$WORK/serve.log" | head -1)
    [ -z "$SERVE_PORT" ] || break
    kill -0 "$SERVE_PID" 2>/dev/null || break
    sleep 0.1
done
[ -n "$SERVE_PORT" ] || { tail -20 "$WORK/serve.log" >&2 || true; die "mirror serve did not start"; }
SERVE_URL="http://127.0.0.1:$SERVE_PORT"
say "bench-serve: mirror serve on $SERVE_URL (pid $SERVE_CHILD); nginx on $NGINX_URL (pid $NGINX_PID)"

# ---- serve-floor: the same pages and files, from memory and with sendfile --------------------
# start_floor NAME [--sendfile]: serve-floor on a free port; sets STARTED_PID and STARTED_URL
start_floor() {
    local name=$1 p
    shift
    STARTED_URL=""
    for _ in 1 2 3; do
        p=$(free_port)
        "$FLOOR_BIN" "$p" "$@" "/pages=$WORK/www/pages" "/_mirror/files=$CACHE/files" >"$WORK/$name.log" 2>&1 &
        STARTED_PID=$!
        for _ in $(seq 1 300); do
            if curl -fsS -o /dev/null "http://127.0.0.1:$p/pages/1.json" 2>/dev/null; then STARTED_URL="http://127.0.0.1:$p"; break; fi
            kill -0 "$STARTED_PID" 2>/dev/null || break
            sleep 0.1
        done
        [ -z "$STARTED_URL" ] || return 0
        stop_pid "$STARTED_PID"
    done
    tail -20 "$WORK/$name.log" >&2 || true
    die "$name did not start"
}
if [ "$FLOOR" = 1 ]; then
    start_floor serve-floor
    FLOOR_PID=$STARTED_PID
    FLOOR_URL=$STARTED_URL
    start_floor serve-floor-sendfile --sendfile
    SENDFILE_PID=$STARTED_PID
    SENDFILE_URL=$STARTED_URL
    start_floor serve-floor-nio --nio --sendfile
    NIO_PID=$STARTED_PID
    NIO_URL=$STARTED_URL
    say "bench-serve: serve-floor on $FLOOR_URL (pid $FLOOR_PID), with sendfile on $SENDFILE_URL (pid $SENDFILE_PID), NIO alone on $NIO_URL (pid $NIO_PID)"
fi

# ---- Datasette -----------------------------------------------------------------------------
if [ -n "${DATASETTE:-}" ]; then
    [ -x "$DATASETTE" ] || die "no datasette executable at $DATASETTE"
else
    say "bench-serve: installing Datasette into $WORK/venv (pip) ..."
    if ! python3 -m venv "$WORK/venv" >"$WORK/venv.log" 2>&1; then
        rm -rf "$WORK/venv"
        apt_install bench-serve python3-venv
        python3 -m venv "$WORK/venv" >"$WORK/venv.log" 2>&1 || { cat "$WORK/venv.log" >&2; die "python3 -m venv failed"; }
    fi
    "$WORK/venv/bin/pip" install --quiet --disable-pip-version-check datasette >"$WORK/pip.log" 2>&1 \
        || { tail -20 "$WORK/pip.log" >&2; die "pip install datasette failed"; }
    DATASETTE="$WORK/venv/bin/datasette"
fi
DS_VERSION=$("$DATASETTE" --version 2>/dev/null | sed 's/.*version //')
DS_PORT=""
for _ in 1 2 3; do
    p=$(free_port)
    start_timed datasette "$DATASETTE" serve -i "$DB" --host 127.0.0.1 --port "$p"
    DS_PID=$STARTED_PID
    DS_CHILD=$STARTED_CHILD
    for _ in $(seq 1 150); do
        if curl -fsS -o /dev/null "http://127.0.0.1:$p/-/versions.json" 2>/dev/null; then DS_PORT=$p; break; fi
        kill -0 "$DS_PID" 2>/dev/null || break
        sleep 0.1
    done
    [ -z "$DS_PORT" ] || break
    stop_timed "$DS_PID" "$DS_CHILD" || true
    DS_PID=""
    DS_CHILD=""
done
[ -n "$DS_PORT" ] || { tail -20 "$WORK/datasette.log" >&2 || true; die "datasette did not start"; }
DS_URL="http://127.0.0.1:$DS_PORT"
say "bench-serve: datasette $DS_VERSION on $DS_URL (pid $DS_CHILD), immutable (-i)"

# ---- checks, before measuring ----------------------------------------------------------------
# pages: the replayed page is the same JSON value as nginx's
for p in 1 $(( (PAGES + 1) / 2 )) "$PAGES"; do
    curl -fsS -o "$WORK/replayed.json" "$SERVE_URL/pages/$p.json" || die "mirror serve does not answer /pages/$p.json"
    curl -fsS -o "$WORK/static.json" "$NGINX_URL/pages/$p.json" || die "nginx does not answer /pages/$p.json"
    python3 -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1], "rb")) == json.load(open(sys.argv[2], "rb")) else 1)' \
        "$WORK/replayed.json" "$WORK/static.json" || die "mirror serve's /pages/$p.json is not the JSON value nginx serves"
done
say "bench-serve:   checked: replayed pages 1, $(( (PAGES + 1) / 2 )) and $PAGES are the JSON values nginx serves"
# slices: 100 records each, the ones sqlite3 finds
check_slice() { # NAME URL SQL: the slice at URL holds the records of the ids SQL selects, in order
    local name=$1 url=$2 sql=$3
    curl -fsS -o "$WORK/slice.json" "$url" || die "$name does not answer $url"
    sqlite3 "$DB" "$sql" >"$WORK/slice.ids"
    python3 - "$WORK/slice.json" "$WORK/slice.ids" "$SLICE" "$name" <<'EOF' || die "$name: the slice at $url is wrong (see above)"
import json, sys
rows = json.load(open(sys.argv[1], "rb"))
want = open(sys.argv[2]).read().split()
size, name = int(sys.argv[3]), sys.argv[4]
if not isinstance(rows, list) or len(rows) != size:
    sys.exit("%s: expected a JSON array of %d records, got %s" % (name, size, len(rows) if isinstance(rows, list) else type(rows).__name__))
got = [str(r.get("id")) for r in rows]
if got != want:
    sys.exit("%s: the slice holds other records than sqlite3 finds (first: %s, expected %s)" % (name, got[:1], want[:1]))
EOF
}
mid=$(( SLICES / 2 ))
check_slice "mirror serve" "$SERVE_URL$(sed -n 1p "$WORK/paths/slices.txt")" \
    "select id from t_item order by account, position limit $SLICE"
check_slice "mirror serve" "$SERVE_URL$(sed -n "$(( mid + 1 ))p" "$WORK/paths/slices.txt")" \
    "select id from t_item order by account, position limit $SLICE offset $(( mid * SLICE ))"
check_slice datasette "$DS_URL$(sed -n 1p "$WORK/paths/datasette.txt")" \
    "select id from t_item order by account, id limit $SLICE"
check_slice datasette "$DS_URL$(sed -n "$(( mid + 1 ))p" "$WORK/paths/datasette.txt")" \
    "select id from t_item order by account, id limit $SLICE offset $(( mid * SLICE ))"
say "bench-serve:   checked: slices 1 and $(( mid + 1 )) of mirror serve and of Datasette hold the $SLICE records sqlite3 finds"
# files: every file, from both servers, has the SHA-256 _mirror_files holds
check_files() { # NAME BASE_URL
    local name=$1 base=$2 out="$WORK/got-$1"
    rm -rf "$out"
    mkdir -p "$out"
    sed "s|.*|url = \"$base&\"\noutput = \"$out&\"|" "$WORK/paths/files.txt" >"$WORK/curl-$name.cfg"
    curl --parallel --parallel-max 8 --create-dirs --fail --no-progress-meter -K "$WORK/curl-$name.cfg" \
        || die "$name does not serve every file"
    (cd "$out/_mirror/files" && sha256sum --check --quiet --strict "$WORK/files.sha256" >&2) \
        || die "$name serves other bytes than the downloaded files"
    rm -rf "$out"
}
check_files mirror-serve "$SERVE_URL"
check_files nginx "$NGINX_URL"
say "bench-serve:   checked: all $FILES files from mirror serve and from nginx match their SHA-256 in _mirror_files"
if [ "$FLOOR" = 1 ]; then
    for floor in "serve-floor $FLOOR_URL" "serve-floor-sendfile $SENDFILE_URL" "serve-floor-nio $NIO_URL"; do
        read -r name url <<<"$floor"
        for p in 1 $(( (PAGES + 1) / 2 )) "$PAGES"; do
            curl -fsS "$url/pages/$p.json" | cmp -s - "$WORK/www/pages/$p.json" || die "$name's /pages/$p.json is not nginx's file"
        done
        check_files "$name" "$url"
    done
    say "bench-serve:   checked: serve-floor, from memory, with sendfile and NIO alone, sends pages 1, $(( (PAGES + 1) / 2 )) and $PAGES as nginx does, and every file with its SHA-256"
fi

# ---- measure ---------------------------------------------------------------------------------
RESULTS="$WORK/results.tsv"
: >"$RESULTS"
# wrk_run NAME LOG URL PATHS SECONDS: one wrk run; fails on a socket error or a non-2xx/3xx
# response; sets WRK_RESULT to its result line
wrk_run() {
    local name=$1 log=$2 url=$3 paths=$4 secs=$5
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"${secs}s" --timeout "$WRK_TIMEOUT" --latency \
        -s "$ROOT/scripts/bench/serve_wrk.lua" "$url" -- "$paths" "$THREADS" >"$log" 2>&1 \
        || { cat "$log" >&2; die "$name: wrk failed"; }
    WRK_RESULT=$(grep '^wrk-result ' "$log" | tail -1)
    [ -n "$WRK_RESULT" ] || { cat "$log" >&2; die "$name: wrk printed no result"; }
    local key
    for key in connect read write timeout status; do
        local v
        v=$(sed -n "s/.* $key=\([0-9]*\).*/\1/p" <<<"$WRK_RESULT")
        [ "$v" = 0 ] || {
            cat "$log" >&2
            if [ "$key" = status ]; then die "$name: $v responses other than 2xx or 3xx"; fi
            die "$name: $v socket errors ($key)"
        }
    done
}
measure() { # NAME LABEL URL PATHS
    local name=$1 label=$2 url=$3 paths=$4
    say "bench-serve: $label: ${WARMUP}s warm-up, ${SECONDS_EACH}s measured ..."
    wrk_run "$name (warm-up)" "$WORK/wrk-$name-warmup.txt" "$url" "$paths" "$WARMUP"
    wrk_run "$name" "$WORK/wrk-$name.txt" "$url" "$paths" "$SECONDS_EACH"
    local r b d p50 p99
    r=$(sed -n 's/.* requests=\([0-9]*\).*/\1/p' <<<"$WRK_RESULT")
    b=$(sed -n 's/.* bytes=\([0-9]*\).*/\1/p' <<<"$WRK_RESULT")
    d=$(sed -n 's/.* duration_us=\([0-9]*\).*/\1/p' <<<"$WRK_RESULT")
    p50=$(sed -n 's/.* p50_us=\([0-9]*\).*/\1/p' <<<"$WRK_RESULT")
    p99=$(sed -n 's/.* p99_us=\([0-9]*\).*/\1/p' <<<"$WRK_RESULT")
    [ "${r:-0}" -gt 0 ] || die "$name: wrk saw no response in ${SECONDS_EACH}s"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$r" "$b" "$d" "$p50" "$p99" >>"$RESULTS"
    say "bench-serve:   $(python3 -c "print('%d requests, %.0f req/s, %.1f MB/s, p50 %.2f ms, p99 %.2f ms' % ($r, $r / ($d / 1e6), $b / 1e6 / ($d / 1e6), $p50 / 1e3, $p99 / 1e3))")"
}
measure replay-mirror "replayed pages (mirror serve)" "$SERVE_URL" "$WORK/paths/pages.txt"
measure pages-nginx "static pages (nginx)" "$NGINX_URL" "$WORK/paths/pages.txt"
[ "$FLOOR" = 0 ] || measure pages-floor "pages (serve-floor, memory)" "$FLOOR_URL" "$WORK/paths/pages.txt"
[ "$FLOOR" = 0 ] || measure pages-sendfile "pages (serve-floor, sendfile)" "$SENDFILE_URL" "$WORK/paths/pages.txt"
[ "$FLOOR" = 0 ] || measure pages-nio "pages (NIO alone, sendfile)" "$NIO_URL" "$WORK/paths/pages.txt"
measure slices-datasette "100-record slices (datasette)" "$DS_URL" "$WORK/paths/datasette.txt"
measure slices-mirror "100-record slices (mirror serve)" "$SERVE_URL" "$WORK/paths/slices.txt"
measure files-mirror "files (mirror serve)" "$SERVE_URL" "$WORK/paths/files.txt"
measure files-nginx "files (nginx)" "$NGINX_URL" "$WORK/paths/files.txt"
[ "$FLOOR" = 0 ] || measure files-floor "files (serve-floor, memory)" "$FLOOR_URL" "$WORK/paths/files.txt"
[ "$FLOOR" = 0 ] || measure files-sendfile "files (serve-floor, sendfile)" "$SENDFILE_URL" "$WORK/paths/files.txt"
[ "$FLOOR" = 0 ] || measure files-nio "files (NIO alone, sendfile)" "$NIO_URL" "$WORK/paths/files.txt"

# ---- still exact after a change --------------------------------------------------------------
# Page 1, sent thousands of times above, is what serve keeps: one of its records is changed,
# then deleted, through sqlite3 (the change feed's triggers see both, as they see a run's),
# and each next answer must hold the table as it is now, with another ETag; the rest of the
# page stays byte for byte what it was.
PAGE1="$SERVE_URL/pages/1.json"
fetch_page1() { # OUT: page 1 into OUT; prints its ETag
    curl -fsS -D "$1.headers" -o "$1" "$PAGE1" || die "mirror serve does not answer /pages/1.json"
    sed -n 's/^[Ee][Tt][Aa][Gg]: *\(.*\)\r$/\1/p' "$1.headers"
}
check_page1() { # WAS NOW WANT: page 1 in NOW is page 1 in WAS with record CHANGED_ID as sqlite3 holds it now
    local want
    want=$(sqlite3 "$DB" "select record from t_item where account = '' and id = '$CHANGED_ID'")
    python3 - "$1" "$2" "$CHANGED_ID" "$want" <<'PY' || die "after the $3, /pages/1.json does not hold record $CHANGED_ID as t_item does (see above)"
import json, sys
was, now = (json.load(open(p, "rb")) for p in sys.argv[1:3])
key, want = sys.argv[3], sys.argv[4]
expected = []
for record in was["data"]["list"]:
    if str(record.get("id")) != key:
        expected.append(record)
    elif want:
        expected.append(json.loads(want))
if now["data"]["list"] != expected or {k: v for k, v in now.items() if k != "data"} != {k: v for k, v in was.items() if k != "data"}:
    sys.exit("the replayed page is not the page before with record %s %s" % (key, "as stored now" if want else "left out"))
PY
}
CHANGED_ID=$(sqlite3 "$DB" "select json_extract(ids, '\$[50]') from _mirror_pages where url = '$NGINX_URL/pages/1.json'")
[ -n "$CHANGED_ID" ] || die "_mirror_pages holds no page 1 with 51 ids"
etag_kept=$(fetch_page1 "$WORK/page1-kept.json")
etag_again=$(fetch_page1 "$WORK/page1-again.json")
[ -n "$etag_kept" ] && [ "$etag_kept" = "$etag_again" ] || die "page 1 asked twice has ETags '$etag_kept' and '$etag_again'"
cmp -s "$WORK/page1-kept.json" "$WORK/page1-again.json" || die "page 1 asked twice is not the same bytes"
code=$(curl -sS -o /dev/null -w '%{http_code}' -H "If-None-Match: $etag_kept" "$PAGE1")
[ "$code" = 304 ] || die "page 1 with If-None-Match: its ETag got $code, not 304"
sqlite3 "$DB" ".timeout 10000" "update t_item set record = json_set(record, '\$.bench_changed', '$(date +%s%N)')
                                where account = '' and id = '$CHANGED_ID'" || die "sqlite3 could not update record $CHANGED_ID"
etag_updated=$(fetch_page1 "$WORK/page1-updated.json")
check_page1 "$WORK/page1-kept.json" "$WORK/page1-updated.json" UPDATE
[ -n "$etag_updated" ] && [ "$etag_updated" != "$etag_kept" ] || die "after the UPDATE page 1 kept its ETag $etag_kept"
code=$(curl -sS -o /dev/null -w '%{http_code}' -H "If-None-Match: $etag_kept" "$PAGE1")
[ "$code" = 200 ] || die "after the UPDATE, page 1 with If-None-Match: its old ETag got $code, not 200"
sqlite3 "$DB" ".timeout 10000" "delete from t_item where account = '' and id = '$CHANGED_ID'" \
    || die "sqlite3 could not delete record $CHANGED_ID"
etag_deleted=$(fetch_page1 "$WORK/page1-deleted.json")
check_page1 "$WORK/page1-kept.json" "$WORK/page1-deleted.json" DELETE
[ -n "$etag_deleted" ] && [ "$etag_deleted" != "$etag_updated" ] && [ "$etag_deleted" != "$etag_kept" ] \
    || die "after the DELETE page 1's ETag is $etag_deleted, as before"
say "bench-serve:   checked: page 1 after sqlite3 UPDATEs record $CHANGED_ID holds it as stored, after a DELETE leaves it out; new ETags"

# ---- peak RSS, servers stopped ----------------------------------------------------------------
# nginx: the peak resident size of its master and workers, summed (a worker's pages shared
# with the master count twice)
nginx_kb=0
for pid in "$NGINX_PID" $(ps -o pid= --ppid "$NGINX_PID" 2>/dev/null); do
    kb=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status" 2>/dev/null || true)
    nginx_kb=$(( nginx_kb + ${kb:-0} ))
done
NGINX_PROCS=$(( 1 + $(ps -o pid= --ppid "$NGINX_PID" 2>/dev/null | wc -l) ))
NGINX_RSS=$([ "$nginx_kb" -gt 0 ] && python3 -c "print('%.1f' % ($nginx_kb / 1024))" || echo n/a)
rc=0
stop_timed "$SERVE_PID" "$SERVE_CHILD" || rc=$?
SERVE_PID=""
SERVE_CHILD=""
[ "$rc" = 0 ] || { tail -20 "$WORK/serve.log" >&2 || true; die "mirror serve exited with status $rc on SIGTERM, not 0"; }
SERVE_RSS=$(peak_rss_mb serve)
stop_timed "$DS_PID" "$DS_CHILD" || true
DS_PID=""
DS_CHILD=""
DS_RSS=$(peak_rss_mb datasette)
stop_pid "$NGINX_PID"
NGINX_PID=""
stop_pid "$FLOOR_PID"
FLOOR_PID=""
stop_pid "$SENDFILE_PID"
SENDFILE_PID=""
stop_pid "$NIO_PID"
NIO_PID=""

# ---- report ------------------------------------------------------------------------------------
echo
echo "mirror serve bench — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "mirror: $MIRROR ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ', modified'))"
echo "workload: $PAGES pages x 100 records, $(python3 -c "print('%.1f MB, %.1f KB/page' % ($BYTES/1e6, $BYTES/1e3/$PAGES))"), $UNIQUE records in t_item ($SLICES slices of $SLICE);"
echo "          $FILES files, $(python3 -c "print('%.1f MB' % ($FILE_BYTES/1e6))")"
echo "servers: nginx $("$NGINX" -v 2>&1 | sed 's|.*/||') (2 workers, sendfile, keep-alive), datasette $DS_VERSION (-i, immutable), mirror serve"
echo "load: wrk $(wrk --version 2>&1 | head -1 | awk '{ print $2 }') -t$THREADS -c$CONNECTIONS, ${SECONDS_EACH}s after a ${WARMUP}s warm-up, each request the next path of the target's list"
echo
python3 - "$RESULTS" <<'EOF'
import sys
print("%-34s %9s %8s %8s %8s %8s" % ("target", "req/s", "MB/s", "KB/resp", "p50 ms", "p99 ms"))
for line in open(sys.argv[1]):
    label, r, b, d, p50, p99 = line.rstrip("\n").split("\t")
    r, b, secs = int(r), int(b), int(d) / 1e6
    print("%-34s %9.0f %8.1f %8.1f %8.2f %8.2f" % (label, r / secs, b / 1e6 / secs, b / 1e3 / r, int(p50) / 1e3, int(p99) / 1e3))
EOF
echo
echo "mirror serve peak RSS: $SERVE_RSS MB"
echo "datasette peak RSS: $DS_RSS MB"
echo "nginx peak RSS: $NGINX_RSS MB (master and $(( NGINX_PROCS - 1 )) workers, summed)"
echo
# The targets, met or MISSED: mirror serve's replayed pages and files each at least
# SERVE_MIN_RATIO x nginx's requests/s, and its peak RSS at most SERVE_MAX_RSS_MB.
python3 - "$RESULTS" "$SERVE_RSS" <<'EOF'
import sys
SERVE_MIN_RATIO, SERVE_MAX_RSS_MB = 0.6, 64
rate = {}
for line in open(sys.argv[1]):
    label, r, _, d, _, _ = line.rstrip("\n").split("\t")
    rate[label] = int(r) / (int(d) / 1e6)
for what, mine, theirs in [("replayed pages", "replayed pages (mirror serve)", "static pages (nginx)"),
                           ("files", "files (mirror serve)", "files (nginx)")]:
    if mine in rate and theirs in rate:
        got = rate[mine] / rate[theirs]
        print("target: %s, mirror serve / nginx requests/s >= %gx -> %.2fx, %s"
              % (what, SERVE_MIN_RATIO, got, "met" if got >= SERVE_MIN_RATIO else "MISSED"))
        kind = {"replayed pages": "pages", "files": "files"}[what]
        memory, sendfile = "%s (serve-floor, memory)" % kind, "%s (serve-floor, sendfile)" % kind
        if memory in rate and sendfile in rate:
            print("        floor: Hummingbird alone / nginx %.2fx from memory, %.2fx with sendfile; mirror serve / the sendfile floor %.2fx"
                  % (rate[memory] / rate[theirs], rate[sendfile] / rate[theirs], rate[mine] / rate[sendfile]))
        alone = "%s (NIO alone, sendfile)" % kind
        if alone in rate:
            print("        another design's floor: NIO alone, answering on the event loop / nginx %.2fx" % (rate[alone] / rate[theirs]))
try:
    rss = float(sys.argv[2])
    print("target: mirror serve peak RSS <= %d MB -> %.1f MB, %s" % (SERVE_MAX_RSS_MB, rss, "met" if rss <= SERVE_MAX_RSS_MB else "MISSED"))
except ValueError:
    print("target: mirror serve peak RSS <= %d MB -> n/a" % SERVE_MAX_RSS_MB)
EOF
echo
echo "checks: t_item holds $UNIQUE records and $FILES files were downloaded; replayed pages are the JSON values"
echo "        nginx serves; slices of both read APIs hold the records sqlite3 finds; every file from both servers"
echo "        matches its SHA-256; no socket error and no response other than 2xx or 3xx in any wrk run;"
echo "        page 1, kept by serve, held record $CHANGED_ID as sqlite3 UPDATEd it, then left it out once DELETEd,"
echo "        each time with a new ETag, the rest of the page unchanged; mirror serve exited 0 on SIGTERM"
