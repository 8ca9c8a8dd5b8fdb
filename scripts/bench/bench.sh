#!/usr/bin/env bash
# Benchmark `mirror run` and `mirror export` against a near-limit reference, `mirror run`
# against a server that answers every request 20 ms late, and `mirror run` downloading
# the files its records point to, against curl and against the 20 ms server.
#
#   scripts/bench/bench.sh
#   BENCH_PAGES=100 BENCH_LATENCY_PAGES=100 BENCH_FILES=200 BENCH_RUNS=1 scripts/bench/bench.sh   # a quick try
#   scripts/bench/bench.sh --profile    # and where the walk's and the downloads' CPU went
#
# Generates a fixed workload (1,000 pages x 100 records, ~85 KB a page, 95,005 unique
# ids; scripts/bench/gen_workload.py), serves it with nginx on a free loopback port,
# and measures with /usr/bin/time, in the same run:
#   - mirror run   (release build, fresh --output folder each run, job `concurrency: 8`)
#   - reference:   one `curl --parallel --parallel-max 8` fetching all pages to disk,
#                  then one `sqlite3` bulk load of all of them in ONE transaction
#                  (json_each) into the table of SPEC section 4
#   - mirror export of all records vs `sqlite3 ... "select record from t_item"`
#   - mirror snapshot of that output folder vs `sqlite3 .backup` and `VACUUM INTO` of its
#     database (wall time and file size), and the floor of a copy on disk with its digest:
#     .backup, then `sync FILE` and `openssl dgst -sha256 FILE`; and `mirror export
#     --changes-since 0` vs export
# One warm-up of each, then BENCH_RUNS measured runs (median reported). It checks that
# every mirror run stored exactly 95,005 records and that the export matches the
# workload record for record, and fails loudly otherwise.
#
# Latency: the same pages served by scripts/bench/delay_server.py (Python asyncio,
# HTTP/1.1 keep-alive), which delays every response by 20 ms. `mirror run` of all pages
# with `concurrency: 8` (1 warm-up + BENCH_RUNS measured, median) must take at most
# 1.3 x pages x 20 ms / 8 (3.25 s for 1,000 pages); with `concurrency: 1` (one run) it
# is sequential and must take at least pages x 20 ms (20 s). Each run must store every
# unique id, and the server must have seen exactly one request per page with no more
# than the job's concurrency in flight at once. A missed check or target fails the run.
# For scale, `curl --parallel-max 8` fetching the same pages from it (to /dev/null) is
# measured alongside: the floor this fixture and machine allow at 8 in flight.
#
# Downloads: 2,000 files (scripts/bench/gen_files.py: deterministic noise, 90-110 KB
# each, ~200 MB) served by the same nginx, and 20 pages x 100 records (written once the
# port is known), each record naming one file: {"id": N, "file": {"url":
# "http://127.0.0.1:PORT/files/N.jpg"}}. Measured the same way (1 warm-up + BENCH_RUNS,
# median, fresh --output / target folder each run, interleaved):
#   - mirror run   job `downloads: [file.url]`, `download_concurrency: 16`,
#                  `concurrency: 4` (pages), `max_file_size: 1MB`
#   - reference:   one `curl --parallel --parallel-max 16` fetching the 2,000 URLs, each
#                  to its own file (a -K config)
# files/s = files / wall. Targets: mirror's files/s >= 0.8 x curl's, no measured mirror run
# above 2 x the median, and mirror's peak
# RSS <= 64 MB in every measured run. Checks: every mirror run has exactly 2,000 rows,
# all status 'ok' (HTTP 200, image/jpeg), in `_mirror_files`, the files under files/ are
# exactly those, and sha256sum of each equals its `sha256` column and the SHA-256 of the
# served file (gen_files.py's list; scripts/bench/check_downloads.py); every curl run's
# files match that list too. Download latency (unless BENCH_LATENCY=0): the same files
# and a copy of the pages pointing at a second delay_server.py (20 ms on every response,
# pages too), the same job: median wall <= 1.3 x files x 20 ms / 16 (3.25 s for 2,000).
# The server counts requests per folder; each run must make exactly one request per file
# with at most 16 file requests in flight (download_concurrency), one per page with at
# most 4 page requests in flight (the job's concurrency) -- so never more than 20 in all,
# which is reported, since pages and files of one job are fetched side by side -- and
# pass the same file checks. For scale, `curl --parallel-max 16` fetching the files from
# it (to /dev/null, no pages) is measured alongside.
#
# Environment: BENCH_RUNS (default 3), BENCH_PAGES (default 1000; the checks scale),
# BENCH_SKIP_BUILD=1 (use the existing .build/release/mirror), MIRROR=path (binary to
# measure; implies no build), BENCH_KEEP=1 (keep the temp folder), BENCH_CONCURRENCY=N
# (the generated job's `concurrency:` in the nginx benchmark, default 8),
# BENCH_LATENCY=0 (skip both latency benchmarks, pages and downloads), BENCH_WALK=0 (skip
# the page walk, export, snapshot and change feed benchmarks: the downloads and latency
# parts alone; nginx still serves BENCH_PAGES generated pages), BENCH_AUTH=bearer
# (the page walk's job sends a bearer token through `auth`),
# BENCH_LATENCY_PAGES (the page latency benchmark's page count, default 1000; the
# target and the checks scale), BENCH_DOWNLOADS=0 (skip both downloads benchmarks),
# BENCH_FILES (the number of files, default 2000, 100 a page; the targets and the
# checks scale), BENCH_FLOOR=1 (the downloads also measure scripts/bench/download-floor,
# built here: SwiftNIO and swift-crypto alone, one event-loop handler per connection that
# writes each file at its offsets, hashes it and renames it into place, with no HTTP
# client library and no code of mirror's -- the least a Swift download with SHA-256 costs
# on this machine; interleaved with the others, its files and digests checked).
# --profile: after the measured runs, one more `mirror run` of the walk and one of the
# downloads, each under `perf record -e cpu-clock -g` (Debian linux-perf; not timed, not in
# the figures), and the report ends with each profile's top entries by shared object
# (mirror, libswiftCore, libsqlite3, the kernel, ...) and by symbol (self time; Swift
# names demangled), so a change shows where the time went. BENCH_PROFILE_TOP (default
# 25) sets how many symbols are listed.
# Each measured command starts after a `sync`: the writes of the step before it (a run's
# files, their removal) do not land in its time.
# Every missed check or target prints `bench: FAILED: ...` and the script exits 1; a
# missed target (not a failed check) is reported after the report is printed.
# Needs: swift (to build), python3, nginx, curl, sqlite3, GNU time, sha256sum, openssl; the Debian
# packages that are missing are installed with apt-get.
set -euo pipefail

PROFILE=0
for arg in "$@"; do
    case "$arg" in
        --profile) PROFILE=1 ;;
        *) printf 'bench: unknown argument %s (the only one is --profile)\n' "$arg" >&2; exit 2 ;;
    esac
done
PROFILE_TOP=${BENCH_PROFILE_TOP:-25}

. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$ROOT"
RUNS=${BENCH_RUNS:-3}
PAGES=${BENCH_PAGES:-1000}
PARALLEL=8
CONCURRENCY=${BENCH_CONCURRENCY:-8}
WALKED=$((PAGES * 100))
unique_ids() { echo $(( $1 > 0 ? 100 + ($1 - 1) * 95 : 0 )); }
UNIQUE=$(unique_ids "$PAGES")
LATENCY=${BENCH_LATENCY:-1}
WALK=${BENCH_WALK:-1}
LAT_PAGES=${BENCH_LATENCY_PAGES:-1000}
LAT_DELAY_MS=20
LAT_CONCURRENCY=8
DOWNLOADS=${BENCH_DOWNLOADS:-1}
AUTH=${BENCH_AUTH:-none}
FILES=${BENCH_FILES:-2000}
DL_CONCURRENCY=16      # the job's download_concurrency and curl's --parallel-max
DL_PAGE_CONCURRENCY=4  # the downloads job's concurrency (page requests)
DL_MAX_RSS_MB=64       # target: mirror's peak RSS downloading, every measured run
DL_MIN_RATIO=0.8       # target: mirror's files/s >= this x curl's
DL_MAX_SPREAD=2        # target: no measured mirror run above this x the median

say() { printf '%s\n' "$*" >&2; }
die() { printf 'bench: FAILED: %s\n' "$*" >&2; exit 1; }

positive() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "$1 must be a positive integer, not '$2'"; }
positive BENCH_RUNS "$RUNS"
positive BENCH_PAGES "$PAGES"
positive BENCH_CONCURRENCY "$CONCURRENCY"
positive BENCH_PROFILE_TOP "$PROFILE_TOP"
[[ "$LATENCY" =~ ^[01]$ ]] || die "BENCH_LATENCY must be 0 or 1, not '$LATENCY'"
[[ "$WALK" =~ ^[01]$ ]] || die "BENCH_WALK must be 0 or 1, not '$WALK'"
[ "$LATENCY" = 0 ] || positive BENCH_LATENCY_PAGES "$LAT_PAGES"
LAT_UNIQUE=$(unique_ids "$LAT_PAGES")
[[ "$AUTH" =~ ^(none|bearer)$ ]] || die "BENCH_AUTH must be none or bearer, not '$AUTH'"
[[ "$DOWNLOADS" =~ ^[01]$ ]] || die "BENCH_DOWNLOADS must be 0 or 1, not '$DOWNLOADS'"
[ "$DOWNLOADS" = 0 ] || positive BENCH_FILES "$FILES"
DL_PAGES=$(( (FILES + 99) / 100 ))

# ---- tools -------------------------------------------------------------------------
missing=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v sqlite3 >/dev/null 2>&1 || missing+=(sqlite3)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
[ -x /usr/bin/time ] || missing+=(time)
[ "$PROFILE" = 0 ] || command -v perf >/dev/null 2>&1 || missing+=(linux-perf)
command -v sha256sum >/dev/null 2>&1 || missing+=(coreutils)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
if [ -z "${MIRROR:-}" ] && [ "${BENCH_SKIP_BUILD:-0}" != 1 ]; then
    # GRDB links the system SQLite
    [ -e /usr/include/sqlite3.h ] || missing+=(libsqlite3-dev)
fi
apt_install bench "${missing[@]+"${missing[@]}"}"
NGINX=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)

# ---- build ---------------------------------------------------------------------------
bench_mirror bench
FLOOR=${BENCH_FLOOR:-0}
[[ "$FLOOR" =~ ^[01]$ ]] || die "BENCH_FLOOR must be 0 or 1, not '$FLOOR'"
if [ "$FLOOR" = 1 ] && [ "$DOWNLOADS" = 1 ]; then
    build_floor bench download-floor
fi

# ---- temp folder, cleanup -------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mirror-bench.XXXXXX")
NGINX_PID=""
LAT_PID=""
DL_LAT_PID=""
stop_pid() { # PID: SIGTERM a server this script started and wait for it
    if [ -n "$1" ] && kill -0 "$1" 2>/dev/null; then
        kill -TERM "$1" 2>/dev/null || true
        wait "$1" 2>/dev/null || true
    fi
}
# start_delay_server ROOT NAME: delay_server.py serving ROOT, LAT_DELAY_MS late, its port
# in $WORK/NAME.port and its log in $WORK/NAME-server.log; sets STARTED_PID
start_delay_server() {
    local root=$1 name=$2
    rm -f "$WORK/$name.port"
    python3 "$ROOT/scripts/bench/delay_server.py" "$root" --delay "$(awk -v ms="$LAT_DELAY_MS" 'BEGIN { print ms / 1000 }')" \
        --port-file "$WORK/$name.port" >"$WORK/$name-server.log" 2>&1 &
    STARTED_PID=$!
    for _ in $(seq 1 100); do
        [ ! -s "$WORK/$name.port" ] || break
        kill -0 "$STARTED_PID" 2>/dev/null || break
        sleep 0.1
    done
    [ -s "$WORK/$name.port" ] || { cat "$WORK/$name-server.log" >&2 || true; die "the delay server ($name) did not start"; }
}
cleanup() {
    stop_pid "$NGINX_PID"
    stop_pid "$LAT_PID"
    stop_pid "$DL_LAT_PID"
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
if [ "$DOWNLOADS" = 1 ]; then
    # $WORK/www/files/<n>.jpg and their SHA-256 list $WORK/www/files.sha256
    say "bench: generating $FILES files in $WORK/www/files ..."
    python3 "$ROOT/scripts/bench/gen_files.py" files "$WORK/www" --count "$FILES" >"$WORK/gen-files.txt" \
        || die "file generation failed"
    FILE_BYTES=$(sed -n 's/.* bytes=\([0-9]*\).*/\1/p' "$WORK/gen-files.txt")
    SUMS="$WORK/www/files.sha256"
fi

# ---- nginx -----------------------------------------------------------------------------
start_nginx "$WORK" "$WORK/www" pages/1.json
BASE="http://127.0.0.1:$PORT/pages"
curl -fsS "$BASE/$PAGES.json" | cmp -s - "$WORK/www/pages/$PAGES.json" || die "nginx serves something else"

# ---- inputs for the measured commands -------------------------------------------------
mkdir -p "$WORK/job"
write_job() { # FILE BASE_URL PAGES CONCURRENCY [TABLE [EXTRA_LINE...]]
    local file=$1 base=$2 pages=$3 conc=$4 table=${5:-t_item}
    shift 4
    [ $# -eq 0 ] || shift
    {
        echo "version: 1"
        echo "output: ./cache"
        echo "jobs:"
        echo "  - name: bench"
        echo "    url: \"$base/{page}.json\""
        echo "    pages: { from: 1, to: $pages }"
        echo "    records: data.list"
        echo "    id: id"
        echo "    table: $table"
        echo "    concurrency: $conc"
        local extra
        for extra in "$@"; do echo "    $extra"; done
    } >"$file"
}
DL_JOB_KEYS=("downloads: [file.url]" "download_concurrency: $DL_CONCURRENCY" "max_file_size: 1MB")
# BENCH_AUTH=bearer: the page walk sends a bearer token from the environment (`auth`).
WALK_KEYS=()
if [ "$AUTH" = bearer ]; then
    WALK_KEYS=('auth: { type: bearer, token: "${BENCH_TOKEN}" }')
    export BENCH_TOKEN=bench-token-4Hq7Zx
fi
write_job "$WORK/job/bench.yaml" "$BASE" "$PAGES" "$CONCURRENCY" t_item ${WALK_KEYS[@]+"${WALK_KEYS[@]}"}

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
    # What the step before wrote (the last run's files, their removal) is on disk before
    # the clock starts, so that its writeback lands in no one's time.
    sync
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

# profile NAME CMD... : one more run of CMD under perf (not timed, not a result); its top
# shared objects and symbols by self time go to $WORK/profile-NAME.txt for the report
profile() {
    local name=$1
    shift
    local data="$WORK/perf-$name.data" err="$WORK/perf-$name.err"
    sync
    perf record -q -e cpu-clock -F 997 -g -o "$data" -- "$@" >/dev/null 2>"$err" \
        || die "perf record of $name failed: $(tail -3 "$err")"
    local demangle=cat
    if command -v swift >/dev/null 2>&1 && swift demangle --simplified '$sSi' >/dev/null 2>&1; then
        demangle="swift demangle --simplified --compact"
    fi
    {
        echo "profile: $name (one run, perf record -e cpu-clock -g; self time)"
        echo "  by shared object:"
        perf report -i "$data" --stdio --no-children -g none --sort dso --percent-limit 0.5 2>/dev/null \
            | awk '/^ +[0-9.]+%/ { printf "    %7s  %s\n", $1, $2 }'
        echo "  by symbol (top $PROFILE_TOP):"
        perf report -i "$data" --stdio --no-children -g none --sort dso,sym 2>/dev/null \
            | awk -v n="$PROFILE_TOP" '/^ +[0-9.]+%/ && ++shown <= n {
                  printf "    %7s  %-22s %s\n", $1, $2, substr($0, match($0, / \[[.kgu]\] /) + 1) }' \
            | $demangle | cut -c1-160
    } >"$WORK/profile-$name.txt"
    rm -f "$data"
    say "bench:   profiled $name"
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

export_ok=1
SNAPSHOT_SIZES=""
say "bench: workload: $(cat "$WORK/gen.txt")"
say "bench: nginx on 127.0.0.1:$PORT (pid $NGINX_PID); mirror: $MIRROR"
if [ "$WALK" = 1 ]; then
    say "bench: 1 warm-up + $RUNS measured runs each, interleaved"
    for run in warm-up $(seq 1 "$RUNS"); do
        run_reference "$run"
        run_mirror "$run"
        if [ "$run" != "$RUNS" ]; then rm -rf "$WORK/mirror-out-$run"; fi
    done
    LAST="$WORK/mirror-out-$RUNS"
    # At more than 1,000 pages, the walk of the first 1,000 too: its peak RSS is what the
    # larger walk's is held to (at 10x the work, memory should not grow).
    if [ "$PAGES" -gt 1000 ]; then
        write_job "$WORK/job/bench-1k.yaml" "$BASE" 1000 "$CONCURRENCY" t_item ${WALK_KEYS[@]+"${WALK_KEYS[@]}"}
        for run in warm-up $(seq 1 "$RUNS"); do
            rm -rf "$WORK/mirror-out-1k"
            measure mirror-run-1k "$run" "$WORK/mirror-run.stdout" \
                "$MIRROR" run "$WORK/job/bench-1k.yaml" --output "$WORK/mirror-out-1k" --quiet
        done
        rm -rf "$WORK/mirror-out-1k"
    fi
    if [ "$PROFILE" = 1 ]; then
        rm -rf "$WORK/mirror-out-profile"
        profile walk "$MIRROR" run "$WORK/job/bench.yaml" --output "$WORK/mirror-out-profile" --quiet
        rm -rf "$WORK/mirror-out-profile"
    fi
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

    # ---- snapshot and the change feed, on the same table ---------------------------------------
    # mirror snapshot of the output folder against sqlite3's online backup and VACUUM INTO of
    # the table's database (each to a new file every run), and export --changes-since 0 (every
    # record, as a change) against the plain export above.
    size_of() { stat -c %s "$1"; }
    for run in warm-up $(seq 1 "$RUNS"); do
        rm -rf "$WORK/snap" "$WORK/backup.sqlite" "$WORK/backup-synced.sqlite" "$WORK/vacuum.sqlite"
        measure mirror-snapshot "$run" /dev/null "$MIRROR" snapshot "$WORK/snap" --output "$LAST"
        measure ref-backup "$run" /dev/null sqlite3 "$DB" ".backup '$WORK/backup.sqlite'"
        # The floor of a snapshot, which is on disk when mirror snapshot returns and whose
        # manifest holds the SHA-256 of each database: the same backup, then flushed
        # (coreutils' sync FILE: fsync) and hashed (openssl, SHA-NI where the CPU has it).
        measure ref-backup-sync "$run" /dev/null sh -c \
            'sqlite3 "$1" ".backup '"'"'$2'"'"'" && sync "$2" && openssl dgst -sha256 "$2"' \
            sh "$DB" "$WORK/backup-synced.sqlite"
        measure ref-vacuum "$run" /dev/null sqlite3 "$DB" "VACUUM INTO '$WORK/vacuum.sqlite'"
        measure mirror-changes "$run" "$WORK/changes.ndjson" \
            "$MIRROR" export --table t_item --output "$LAST" --changes-since 0
    done
    n=$(count_rows "$WORK/snap/t_item.sqlite")
    [ "$n" = "$UNIQUE" ] || die "the snapshot holds $n records, expected $UNIQUE"
    [ "$(sqlite3 "$WORK/snap/t_item.sqlite" 'pragma integrity_check')" = ok ] || die "the snapshot fails integrity_check"
    lines=$(wc -l <"$WORK/changes.ndjson")
    [ "$lines" -eq "$UNIQUE" ] || die "export --changes-since 0 printed $lines lines, expected $UNIQUE"
    SNAPSHOT_SIZES="$(size_of "$WORK/snap/t_item.sqlite"),$(size_of "$WORK/backup.sqlite"),$(size_of "$WORK/vacuum.sqlite"),$(size_of "$DB")"
fi

# ---- downloads: files the records point to, from nginx -----------------------------------
# check_files NAME OUTPUT_DIR BASE_URL: the file checks of check_downloads.py on one mirror
# run's output folder (the downloads job's table is t_file, in t_file.sqlite)
check_files() {
    local name=$1 out=$2 base=$3 line
    [ -f "$out/t_file.sqlite" ] || die "$name: mirror wrote no $out/t_file.sqlite"
    line=$(python3 "$ROOT/scripts/bench/check_downloads.py" "$out" "$out/t_file.sqlite" "$SUMS" \
        --count "$FILES" --base "$base" --table t_file --content-type image/jpeg) \
        || die "$name: the downloaded files are wrong (see above)"
    say "bench:     $line"
    DL_CHECK=$line
}
if [ "$DOWNLOADS" = 1 ]; then
    DL_BASE="http://127.0.0.1:$PORT/files"
    python3 "$ROOT/scripts/bench/gen_files.py" pages "$WORK/www/dl" --count "$FILES" --base "$DL_BASE" \
        --curl-config "$WORK/curl-files.cfg" --curl-out "$WORK/curl-files" >/dev/null \
        || die "download pages generation failed"
    write_job "$WORK/job/downloads.yaml" "http://127.0.0.1:$PORT/dl" "$DL_PAGES" "$DL_PAGE_CONCURRENCY" \
        t_file "${DL_JOB_KEYS[@]}"
    curl -fsS "$DL_BASE/$FILES.jpg" | cmp -s - "$WORK/www/files/$FILES.jpg" || die "nginx serves another file"

    run_curl_files() { # RUN
        rm -rf "$WORK/curl-files"
        mkdir -p "$WORK/curl-files"
        measure dl-curl "$1" /dev/null \
            curl --parallel --parallel-max "$DL_CONCURRENCY" --fail --silent --show-error -K "$WORK/curl-files.cfg"
        (cd "$WORK/curl-files" && sha256sum --check --quiet --strict "$SUMS" >&2) \
            || die "curl's files differ from the served ones"
        rm -rf "$WORK/curl-files"
    }
    run_mirror_files() { # RUN
        local out="$WORK/dl-out"
        rm -rf "$out"
        measure dl-mirror "$1" "$WORK/dl-mirror.stdout" \
            "$MIRROR" run "$WORK/job/downloads.yaml" --output "$out" --quiet
        check_files dl-mirror "$out" "$DL_BASE"
        rm -rf "$out"
    }
    run_floor_files() { # RUN
        local out="$WORK/floor-files"
        rm -rf "$out"
        mkdir -p "$out"
        measure dl-floor "$1" "$WORK/floor.sums" \
            "$FLOOR_BIN" 127.0.0.1 "$PORT" /files "$FILES" "$DL_CONCURRENCY" "$out"
        (cd "$out" && sha256sum --check --quiet --strict "$SUMS" >&2) \
            || die "download-floor's files differ from the served ones"
        cmp -s <(sort "$WORK/floor.sums") <(sort "$SUMS") || die "download-floor's digests differ from the served files'"
        rm -rf "$out"
    }
    say "bench: downloads: $FILES files ($(python3 -c "print('%.1f MB' % ($FILE_BYTES / 1e6))")) named by $DL_PAGES pages, from nginx; download_concurrency $DL_CONCURRENCY"
    say "bench: 1 warm-up + $RUNS measured runs each, interleaved"
    for run in warm-up $(seq 1 "$RUNS"); do
        run_curl_files "$run"
        run_mirror_files "$run"
        [ "$FLOOR" = 0 ] || run_floor_files "$run"
    done
    if [ "$PROFILE" = 1 ]; then
        rm -rf "$WORK/dl-out"
        profile downloads "$MIRROR" run "$WORK/job/downloads.yaml" --output "$WORK/dl-out" --quiet
        check_files dl-mirror "$WORK/dl-out" "$DL_BASE"
        rm -rf "$WORK/dl-out"
    fi
fi

# ---- latency: every response 20 ms late --------------------------------------------------
LAT_STATS="$WORK/latency-stats.tsv"
: >"$LAT_STATS"
lat_stats() { # QUERY: the delay server's counters as "requests max_in_flight connections"
    curl -fsS "$LAT_BASE/_stats$1" \
        | python3 -c 'import json, sys; s = json.load(sys.stdin); print(s["requests"], s["max_in_flight"], s["connections"])'
}
# lat_measure NAME RUN CONCURRENCY STDOUT_FILE CMD... : measure CMD against the delay
# server; fails loudly unless the server saw one request per page, at most CONCURRENCY
# in flight at once
lat_measure() {
    local name=$1 run=$2 conc=$3 out=$4
    shift 4
    lat_stats '?reset=1' >/dev/null || die "the delay server does not answer"
    measure "$name" "$run" "$out" "$@"
    local requests in_flight connections
    read -r requests in_flight connections < <(lat_stats '') || die "the delay server does not answer"
    say "bench:     server: $requests requests, at most $in_flight in flight, $connections connections"
    [ "$requests" = "$LAT_PAGES" ] || die "$name: the server saw $requests requests, expected one per page ($LAT_PAGES)"
    [ "$in_flight" -le "$conc" ] || die "$name: $in_flight requests in flight at once, more than $conc"
    [ "$run" = warm-up ] || printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$run" "$requests" "$in_flight" "$connections" >>"$LAT_STATS"
}
run_latency() { # RUN CONCURRENCY
    local run=$1 conc=$2 out="$WORK/latency-out"
    rm -rf "$out"
    lat_measure "latency-c$conc" "$run" "$conc" "$WORK/latency-c$conc.stdout" \
        "$MIRROR" run "$WORK/job/latency-c$conc.yaml" --output "$out" --quiet
    [ -f "$out/t_item.sqlite" ] || die "mirror wrote no $out/t_item.sqlite"
    local n
    n=$(count_rows "$out/t_item.sqlite")
    say "bench:     select count(*) from t_item -> $n"
    [ "$n" = "$LAT_UNIQUE" ] || die "latency-c$conc: mirror stored $n records, expected $LAT_UNIQUE"
    rm -rf "$out"
}

if [ "$LATENCY" = 1 ]; then
    if [ "$LAT_PAGES" = "$PAGES" ]; then
        LAT_WWW="$WORK/www"
    else
        LAT_WWW="$WORK/www-latency"
        say "bench: generating the latency workload ($LAT_PAGES pages) in $LAT_WWW ..."
        python3 "$ROOT/scripts/bench/gen_workload.py" --pages "$LAT_PAGES" "$LAT_WWW" >"$WORK/gen-latency.txt" \
            || die "latency workload generation failed"
    fi
    start_delay_server "$LAT_WWW" latency
    LAT_PID=$STARTED_PID
    LAT_PORT=$(cat "$WORK/latency.port")
    LAT_BASE="http://127.0.0.1:$LAT_PORT"
    curl -fsS "$LAT_BASE/pages/$LAT_PAGES.json" | cmp -s - "$LAT_WWW/pages/$LAT_PAGES.json" \
        || die "the delay server serves something else"
    write_job "$WORK/job/latency-c$LAT_CONCURRENCY.yaml" "$LAT_BASE/pages" "$LAT_PAGES" "$LAT_CONCURRENCY"
    write_job "$WORK/job/latency-c1.yaml" "$LAT_BASE/pages" "$LAT_PAGES" 1
    # reference: what the fixture allows with the same number of requests in flight
    for p in $(seq 1 "$LAT_PAGES"); do
        printf 'url = "%s/pages/%d.json"\noutput = "/dev/null"\n' "$LAT_BASE" "$p"
    done >"$WORK/curl-latency.cfg"

    LAT_TARGET=$(python3 -c "print('%.3f' % (1.3 * $LAT_PAGES * $LAT_DELAY_MS / 1000 / $LAT_CONCURRENCY))")
    LAT_FLOOR=$(python3 -c "print('%.3f' % ($LAT_PAGES * $LAT_DELAY_MS / 1000))")
    say "bench: latency: delay server on $LAT_BASE (pid $LAT_PID), ${LAT_DELAY_MS} ms per response, $LAT_PAGES pages"
    say "bench: concurrency $LAT_CONCURRENCY: 1 warm-up + $RUNS measured runs (target <= ${LAT_TARGET}s); concurrency 1: one run (>= ${LAT_FLOOR}s)"
    for run in warm-up $(seq 1 "$RUNS"); do
        lat_measure latency-ref "$run" "$LAT_CONCURRENCY" /dev/null \
            curl --parallel --parallel-max "$LAT_CONCURRENCY" --fail --silent --show-error -K "$WORK/curl-latency.cfg"
        run_latency "$run" "$LAT_CONCURRENCY"
    done
    run_latency 1 1
    wall1=$(awk -F'\t' '$1 == "latency-c1" { print $3 }' "$RESULTS")
    python3 -c "import sys; sys.exit(0 if $wall1 >= $LAT_FLOOR else 1)" \
        || die "mirror run with concurrency: 1 took ${wall1}s against a ${LAT_DELAY_MS} ms server, less than $LAT_PAGES x ${LAT_DELAY_MS} ms = ${LAT_FLOOR}s: its requests overlapped or the server did not delay"
    stop_pid "$LAT_PID"
    LAT_PID=""
fi

# ---- downloads, latency: the same files from a server that answers 20 ms late -----------
DL_LAT_STATS="$WORK/download-latency-stats.tsv"
: >"$DL_LAT_STATS"
if [ "$DOWNLOADS" = 1 ] && [ "$LATENCY" = 1 ]; then
    start_delay_server "$WORK/www" dl-latency
    DL_LAT_PID=$STARTED_PID
    DL_LAT_SERVER="http://127.0.0.1:$(cat "$WORK/dl-latency.port")"
    DL_LAT_BASE="$DL_LAT_SERVER/files"
    # its own copy of the pages, naming the files on this server: folder /dl-lat
    python3 "$ROOT/scripts/bench/gen_files.py" pages "$WORK/www/dl-lat" --count "$FILES" --base "$DL_LAT_BASE" >/dev/null \
        || die "download pages generation failed"
    write_job "$WORK/job/downloads-latency.yaml" "$DL_LAT_SERVER/dl-lat" "$DL_PAGES" "$DL_PAGE_CONCURRENCY" \
        t_file "${DL_JOB_KEYS[@]}"
    for n in $(seq 1 "$FILES"); do
        printf 'url = "%s/%d.jpg"\noutput = "/dev/null"\n' "$DL_LAT_BASE" "$n"
    done >"$WORK/curl-files-latency.cfg"
    # the fixture: binary bodies intact, a content type, keep-alive (the second transfer
    # of one curl reuses the first one's connection)
    fixture=$(curl -fsS -o "$WORK/probe-1.jpg" -w '%{content_type} %{num_connects}\n' "$DL_LAT_BASE/1.jpg" \
                   -o "$WORK/probe-2.jpg" -w '%{content_type} %{num_connects}\n' "$DL_LAT_BASE/$FILES.jpg") \
        || die "the delay server (downloads) does not answer"
    cmp -s "$WORK/probe-1.jpg" "$WORK/www/files/1.jpg" && cmp -s "$WORK/probe-2.jpg" "$WORK/www/files/$FILES.jpg" \
        || die "the delay server serves other bytes than the files"
    [ "$fixture" = $'image/jpeg 1\nimage/jpeg 0' ] \
        || die "the delay server answered '$(echo $fixture)' (content type, new connections), expected image/jpeg and a reused connection"
    rm -f "$WORK/probe-1.jpg" "$WORK/probe-2.jpg"

    # dl_stats QUERY: "requests max_in_flight connections file_requests file_max_in_flight
    # page_requests page_max_in_flight" since the last reset
    dl_stats() {
        curl -fsS "$DL_LAT_SERVER/_stats$1" | python3 -c '
import json, sys
s = json.load(sys.stdin)
f = s["folders"].get("/files", {"requests": 0, "max_in_flight": 0})
p = s["folders"].get("/dl-lat", {"requests": 0, "max_in_flight": 0})
print(s["requests"], s["max_in_flight"], s["connections"], f["requests"], f["max_in_flight"],
      p["requests"], p["max_in_flight"])'
    }
    # dl_lat_measure NAME RUN PAGE_REQUESTS STDOUT_FILE CMD...: measure CMD against the
    # delay server; fails loudly unless it asked for every file once with at most
    # DL_CONCURRENCY file requests in flight, and for every page once (PAGE_REQUESTS: 0
    # for curl, which fetches files only) with at most DL_PAGE_CONCURRENCY in flight.
    # Pages and files of one job are fetched side by side, so up to DL_CONCURRENCY +
    # DL_PAGE_CONCURRENCY requests may be in flight in all: that is implied, and reported.
    dl_lat_measure() {
        local name=$1 run=$2 pages=$3 out=$4
        shift 4
        dl_stats '?reset=1' >/dev/null || die "the delay server (downloads) does not answer"
        measure "$name" "$run" "$out" "$@"
        local req maxf conns freq fmax preq pmax
        read -r req maxf conns freq fmax preq pmax < <(dl_stats '') || die "the delay server (downloads) does not answer"
        say "bench:     server: $freq file requests (at most $fmax in flight), $preq page requests (at most $pmax), $req in all (at most $maxf), $conns connections"
        [ "$freq" = "$FILES" ] || die "$name: the server saw $freq file requests, expected one per file ($FILES)"
        [ "$fmax" -le "$DL_CONCURRENCY" ] || die "$name: $fmax file requests in flight at once, more than $DL_CONCURRENCY"
        [ "$preq" = "$pages" ] || die "$name: the server saw $preq page requests, expected $pages"
        [ "$pmax" -le "$DL_PAGE_CONCURRENCY" ] || die "$name: $pmax page requests in flight at once, more than $DL_PAGE_CONCURRENCY"
        [ "$req" = $((freq + preq)) ] || die "$name: the server saw $req requests, $((req - freq - preq)) neither a page nor a file"
        [ "$run" = warm-up ] || printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
            "$name" "$run" "$req" "$maxf" "$conns" "$freq" "$fmax" "$preq" "$pmax" >>"$DL_LAT_STATS"
    }
    run_dl_latency() { # RUN
        local out="$WORK/dl-latency-out"
        rm -rf "$out"
        dl_lat_measure dl-latency "$1" "$DL_PAGES" "$WORK/dl-latency.stdout" \
            "$MIRROR" run "$WORK/job/downloads-latency.yaml" --output "$out" --quiet
        check_files dl-latency "$out" "$DL_LAT_BASE"
        rm -rf "$out"
    }

    DL_LAT_TARGET=$(python3 -c "print('%.3f' % (1.3 * $FILES * $LAT_DELAY_MS / 1000 / $DL_CONCURRENCY))")
    say "bench: download latency: delay server on $DL_LAT_SERVER (pid $DL_LAT_PID), ${LAT_DELAY_MS} ms per response, $FILES files, $DL_PAGES pages"
    say "bench: 1 warm-up + $RUNS measured runs each (target <= ${DL_LAT_TARGET}s)"
    for run in warm-up $(seq 1 "$RUNS"); do
        dl_lat_measure dl-latency-ref "$run" 0 /dev/null \
            curl --parallel --parallel-max "$DL_CONCURRENCY" --fail --silent --show-error -K "$WORK/curl-files-latency.cfg"
        run_dl_latency "$run"
    done
    stop_pid "$DL_LAT_PID"
    DL_LAT_PID=""
fi

# ---- report ------------------------------------------------------------------------------
echo
echo "mirror bench — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "mirror: $MIRROR ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ', modified'))"
echo "workload: $PAGES pages x 100 records, $(python3 -c "print('%.1f MB, %.1f KB/page' % ($BYTES/1e6, $BYTES/1e3/$PAGES))"), $WALKED records walked, $UNIQUE unique ids"
echo "server: nginx $("$NGINX" -v 2>&1 | sed 's|.*/||'), 127.0.0.1:$PORT, 2 workers, keepalive; mirror job concurrency: $CONCURRENCY"
echo "runs: 1 warm-up + $RUNS measured each"
echo
latency_args=()
if [ "$LATENCY" = 1 ]; then
    latency_args=(--latency "$LAT_STATS" --latency-pages "$LAT_PAGES" --delay-ms "$LAT_DELAY_MS"
                  --concurrency "$LAT_CONCURRENCY")
fi
downloads_args=()
if [ "$DOWNLOADS" = 1 ]; then
    downloads_args=(--downloads "$FILES" --download-bytes "$FILE_BYTES" --download-pages "$DL_PAGES"
                    --download-concurrency "$DL_CONCURRENCY" --download-page-concurrency "$DL_PAGE_CONCURRENCY"
                    --download-min-ratio "$DL_MIN_RATIO" --download-max-rss-mb "$DL_MAX_RSS_MB"
                    --delay-ms "$LAT_DELAY_MS")
    [ "$LATENCY" = 0 ] || downloads_args+=(--download-latency "$DL_LAT_STATS")
fi
walk_args=()
[ "$WALK" = 0 ] || walk_args=(--snapshot-sizes "$SNAPSHOT_SIZES")
python3 "$ROOT/scripts/bench/report.py" "$RESULTS" "$WALKED" "$UNIQUE" "$BYTES" "${walk_args[@]+"${walk_args[@]}"}" \
    "${latency_args[@]+"${latency_args[@]}"}" "${downloads_args[@]+"${downloads_args[@]}"}"
echo
if [ "$WALK" = 1 ]; then
    echo "checks: every mirror run stored select count(*) from t_item = $(count_rows "$DB") (expected $UNIQUE)"
    echo "        $check"
else
    echo "checks: (the page walk was not measured: BENCH_WALK=0)"
fi
latency_ok=1
if [ "$LATENCY" = 1 ]; then
    echo "        latency: every run stored $LAT_UNIQUE records; the server saw one request per page ($LAT_PAGES),"
    echo "        never more in flight than the job's concurrency; concurrency 1 took >= ${LAT_FLOOR}s"
    # the median run as report.py picks it (the lower one of an even count)
    wall8=$(awk -F'\t' -v name="latency-c$LAT_CONCURRENCY" '$1 == name { print $3 }' "$RESULTS" \
        | sort -g | sed -n "$(( (RUNS - 1) / 2 + 1 ))p")
    python3 -c "import sys; sys.exit(0 if $wall8 <= $LAT_TARGET else 1)" || latency_ok=0
fi
# median_wall NAME: the median measured run's wall time, as report.py picks it
median_wall() {
    awk -F'\t' -v name="$1" '$1 == name { print $3 }' "$RESULTS" | sort -g | sed -n "$(( (RUNS - 1) / 2 + 1 ))p"
}
failures=()
if [ "$DOWNLOADS" = 1 ]; then
    echo "        downloads: $DL_CHECK"
    echo "        (every mirror run, from nginx$([ "$LATENCY" = 0 ] || echo ' and from the delay server')); every curl run's files match the served ones"
    if [ "$LATENCY" = 1 ]; then
        echo "        download latency: the server saw one request per file ($FILES), at most $DL_CONCURRENCY of them in flight,"
        echo "        and one per page ($DL_PAGES), at most $DL_PAGE_CONCURRENCY of them in flight, in every run"
    fi
    dl_mirror=$(median_wall dl-mirror)
    dl_curl=$(median_wall dl-curl)
    python3 -c "import sys; sys.exit(0 if $FILES / $dl_mirror >= $DL_MIN_RATIO * $FILES / $dl_curl else 1)" \
        || failures+=("$(python3 -c "print('mirror run downloaded %.0f files/s (median), below %s x curl\'s %.0f files/s = %.0f files/s (%.2fx curl)' % ($FILES / $dl_mirror, '$DL_MIN_RATIO', $FILES / $dl_curl, $DL_MIN_RATIO * $FILES / $dl_curl, $dl_curl / $dl_mirror))")")
    dl_slowest=$(awk -F'\t' '$1 == "dl-mirror" { print $3 }' "$RESULTS" | sort -g | tail -1)
    python3 -c "import sys; sys.exit(0 if $dl_slowest <= $DL_MAX_SPREAD * $dl_mirror else 1)" \
        || failures+=("a mirror run downloading $FILES files took ${dl_slowest}s, above $DL_MAX_SPREAD x the median ${dl_mirror}s")
    dl_rss=$(awk -F'\t' '$1 == "dl-mirror" && $5 > m { m = $5 } END { print m + 0 }' "$RESULTS")
    [ "$dl_rss" -le $((DL_MAX_RSS_MB * 1024)) ] \
        || failures+=("mirror run downloading $FILES files peaked at $(python3 -c "print('%.1f' % ($dl_rss / 1024))") MB resident (largest of the measured runs), above the $DL_MAX_RSS_MB MB target")
    if [ "$LATENCY" = 1 ]; then
        dl_lat=$(median_wall dl-latency)
        python3 -c "import sys; sys.exit(0 if $dl_lat <= $DL_LAT_TARGET else 1)" \
            || failures+=("mirror run downloading $FILES files with download_concurrency: $DL_CONCURRENCY took ${dl_lat}s (median) against a ${LAT_DELAY_MS} ms server, above the ${DL_LAT_TARGET}s target ($(python3 -c "print('%.2f' % ($dl_lat / $DL_LAT_TARGET))") of it)")
    fi
fi
if [ "$WALK" = 1 ]; then
    echo "mirror's summary (last run):"
    sed 's/^/  | /' "$WORK/mirror-run.stdout"
    [ -z "$(tail -c1 "$WORK/mirror-run.stdout")" ] || echo
fi
if [ "$LATENCY" = 1 ]; then
    for c in "$LAT_CONCURRENCY" 1; do
        echo "mirror's summary (latency, concurrency $c, last run):"
        sed 's/^/  | /' "$WORK/latency-c$c.stdout"
        [ -z "$(tail -c1 "$WORK/latency-c$c.stdout")" ] || echo
    done
fi
if [ "$DOWNLOADS" = 1 ]; then
    for f in dl-mirror dl-latency; do
        [ -f "$WORK/$f.stdout" ] || continue
        echo "mirror's summary (downloads$([ "$f" = dl-mirror ] && echo ', nginx' || echo ', latency'), last run):"
        sed 's/^/  | /' "$WORK/$f.stdout"
        [ -z "$(tail -c1 "$WORK/$f.stdout")" ] || echo
    done
fi
if [ "$PROFILE" = 1 ]; then
    for f in walk downloads; do
        [ -f "$WORK/profile-$f.txt" ] && cat "$WORK/profile-$f.txt"
    done
fi
[ "$export_ok" = 1 ] || failures+=("mirror export does not match the workload (see above)")
[ "$latency_ok" = 1 ] \
    || failures+=("mirror run with concurrency: $LAT_CONCURRENCY took ${wall8}s (median) against a ${LAT_DELAY_MS} ms server, above the ${LAT_TARGET}s target")
if [ ${#failures[@]} -gt 0 ]; then
    for f in "${failures[@]}"; do printf 'bench: FAILED: %s\n' "$f" >&2; done
    exit 1
fi
