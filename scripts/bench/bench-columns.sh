#!/usr/bin/env bash
# What a job's generated columns (`columns:`) cost the walk, and what they buy a device, on
# the benchmark workload (1,000 pages x 100 records, ~85 KB a page, 95,005 unique ids;
# scripts/bench/gen_workload.py) served by nginx on a free loopback port:
#
#   scripts/bench/bench-columns.sh
#   BENCH_PAGES=100 BENCH_ROUNDS=3 scripts/bench/bench-columns.sh     # a quick try
#
# 1. The walk: `mirror run` of the plain job (scripts/bench/bench.sh's, `concurrency: 8`) and of
#    the same job with five columns (city text and date time, both indexed; price and
#    cover.width integer; title text) and one exploded list (tags), interleaved, 1 warm-up
#    + BENCH_ROUNDS rounds, a fresh --output folder each run. Prints each run, then the median wall and CPU time of each
#    job and their ratio. The target: the columns' walk takes at most 1.3 x the plain one's
#    CPU time (CPU, not wall: the wall moves more from one sitting to the next).
#    With BENCH_STORED=1 the five columns are `stored: true`.
#    The floor, measured in each round after the plain run: sqlite3 adding the five columns
#    (`ALTER TABLE ... ADD COLUMN`, the definitions _mirror_columns holds) and building the
#    two indexes on a copy of the plain run's database, which is what SQLite must do after
#    any walk that fills the table; the plain walk's CPU plus that step's is the floor the
#    columns' walk is printed against.
# 2. The column warnings: a run counts the records it writes whose values its typed columns
#    make NULL as it reads each page; the query it makes instead for a column added to stored
#    records (GeneratedColumns.mismatches), run by sqlite3 on the columns' last output, must
#    give the counts of that run's report (a first walk writes every record). Prints the
#    query's time (median of BENCH_QUERIES): what the walk no longer spends.
# 3. A device's query: the records of one city, by the indexed column
#    (`WHERE city = 'Oslo'`) and by `json_extract(record, '$.city') = 'Oslo'` on the plain
#    job's output; median of BENCH_QUERIES runs of each, the same count from both.
# Checks: every run stores 95,005 records (or the BENCH_PAGES equivalent) and succeeds.
#
# Environment: BENCH_ROUNDS (default 5), BENCH_PAGES (default 1000), BENCH_QUERIES (default
# 9), BENCH_STORED=1, BENCH_SKIP_BUILD=1 (use .build/release/mirror), MIRROR=path (binary to
# measure; implies no build), BENCH_KEEP=1 (keep the work folder), BENCH_PROFILE=1 (one more
# run of each job under `perf record`, its top symbols printed).
# Needs: swift (to build), python3, nginx, curl, sqlite3, GNU time.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ROUNDS=${BENCH_ROUNDS:-5}
PAGES=${BENCH_PAGES:-1000}
QUERIES=${BENCH_QUERIES:-9}
STORED=${BENCH_STORED:-0}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mirror-bench-columns.XXXXXX")
die() { echo "bench-columns: FAILED: $*" >&2; exit 1; }
say() { echo "$*" >&2; }
UNIQUE=$(( PAGES > 0 ? 100 + (PAGES - 1) * 95 : 0 ))
for name in ROUNDS PAGES QUERIES; do
    [[ "${!name}" =~ ^[1-9][0-9]*$ ]] || die "BENCH_$name must be a positive integer, not '${!name}'"
done
[[ "$STORED" =~ ^[01]$ ]] || die "BENCH_STORED must be 0 or 1, not '$STORED'"
for tool in python3 curl sqlite3; do command -v "$tool" >/dev/null || die "$tool is not installed"; done
[ -x /usr/bin/time ] || die "GNU time (/usr/bin/time) is not installed"

bench_mirror bench-columns

NGINX_PID=""
cleanup() {
    if [ -n "$NGINX_PID" ] && kill -0 "$NGINX_PID" 2>/dev/null; then
        kill -TERM "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
    fi
    if [ "${BENCH_KEEP:-0}" = 1 ]; then say "bench-columns: kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

say "bench-columns: generating $PAGES pages in $WORK/www ..."
python3 "$ROOT/scripts/bench/gen_workload.py" --pages "$PAGES" "$WORK/www" >/dev/null || die "workload generation failed"

start_nginx "$WORK" "$WORK/www" pages/1.json
curl -fsS "http://127.0.0.1:$PORT/pages/$PAGES.json" | cmp -s - "$WORK/www/pages/$PAGES.json" || die "nginx serves something else"

stored_key=""
[ "$STORED" = 0 ] || stored_key=", stored: true"
job() { # FILE [COLUMN LINES...]
    local file=$1
    shift
    {
        echo "version: 1"
        echo "jobs:"
        echo "  - name: bench"
        echo "    url: \"http://127.0.0.1:$PORT/pages/{page}.json\""
        echo "    pages: { from: 1, to: $PAGES }"
        echo "    records: data.list"
        echo "    id: id"
        echo "    table: t_item"
        echo "    concurrency: 8"
        local line
        for line in "$@"; do echo "    $line"; done
    } >"$file"
}
job "$WORK/plain.yaml"
job "$WORK/columns.yaml" "columns:" \
    "  city: { path: city, type: text, index: true$stored_key }" \
    "  date: { path: date, type: time, index: true$stored_key }" \
    "  price: { path: price, type: integer$stored_key }" \
    "  width: { path: cover.width, type: integer$stored_key }" \
    "  title: { path: title, type: text$stored_key }" \
    "explode: { tags: tags }"

RESULTS="$WORK/results.tsv"
: >"$RESULTS"
run() { # NAME ROUND
    local name=$1 round=$2 out="$WORK/out-$1"
    rm -rf "$out"
    sync
    local t0 t1
    t0=$(date +%s%N)
    /usr/bin/time -f '%U %S %M' -o "$WORK/time.out" "$MIRROR" run "$WORK/$name.yaml" --output "$out" --quiet \
        --report "$WORK/$name.report.json" >"$WORK/$name.stdout" 2>"$WORK/$name.stderr" || { tail -5 "$WORK/$name.stderr" >&2; die "mirror run of $name failed"; }
    t1=$(date +%s%N)
    local u s m wall cpu n
    read -r u s m <"$WORK/time.out"
    wall=$(python3 -c "print('%.3f' % (($t1 - $t0) / 1e9))")
    cpu=$(python3 -c "print('%.2f' % ($u + $s))")
    n=$(sqlite3 "$out/t_item.sqlite" 'SELECT count(*) FROM t_item')
    [ "$n" = "$UNIQUE" ] || die "$name stored $n records, expected $UNIQUE"
    say "$(printf 'bench-columns:   %-8s %-8s wall %7ss  cpu %6ss  rss %4d MB' "$name" "$round" "$wall" "$cpu" $((m / 1024)))"
    [ "$round" = warm-up ] || printf '%s\t%s\t%s\n' "$name" "$wall" "$cpu" >>"$RESULTS"
    PLAIN_CPU=$cpu
}
# floor ROUND: sqlite3 adds the columns and builds their indexes on a copy of the plain
# run's database; its CPU time plus the plain run's is the round's floor.
FLOOR_SQL="$WORK/floor.sql"
floor() {
    local round=$1 copy="$WORK/floor-copy"
    rm -rf "$copy"
    cp -a "$WORK/out-plain" "$copy"
    sync
    /usr/bin/time -f '%U %S' -o "$WORK/floor-time.out" sqlite3 "$copy/t_item.sqlite" <"$FLOOR_SQL" >/dev/null \
        || die "sqlite3 could not add the columns to the plain run's database"
    local u s cpu
    read -r u s <"$WORK/floor-time.out"
    cpu=$(python3 -c "print('%.2f' % ($u + $s))")
    say "$(printf 'bench-columns:   %-8s %-8s sqlite3 cpu %6ss, plain walk + it %6ss' floor "$round" "$cpu" \
        "$(python3 -c "print('%.2f' % ($PLAIN_CPU + $cpu))")")"
    [ "$round" = warm-up ] || printf '%s\t%s\t%s\n' floor 0 "$(python3 -c "print($PLAIN_CPU + $cpu)")" >>"$RESULTS"
}
say "bench-columns: $PAGES pages, $UNIQUE records; 1 warm-up + $ROUNDS rounds, plain and columns interleaved$([ "$STORED" = 0 ] || echo ', columns stored')"
for round in warm-up $(seq 1 "$ROUNDS"); do
    run plain "$round"
    if [ "$round" = warm-up ]; then
        run columns "$round"
        # The statements the floor runs: the columns' definitions and indexes as mirror made them.
        {
            sqlite3 "$WORK/out-columns/t_item.sqlite" \
                "SELECT 'ALTER TABLE t_item ADD COLUMN ' || definition || ';' FROM _mirror_columns WHERE table_name = 't_item' ORDER BY name"
            sqlite3 "$WORK/out-columns/t_item.sqlite" \
                "SELECT sql || ';' FROM sqlite_master WHERE type = 'index' AND tbl_name = 't_item' AND name LIKE 't\\_item.%' ESCAPE '\\'"
        } >"$FLOOR_SQL"
        [ "$(grep -c '^CREATE INDEX' "$FLOOR_SQL")" = 2 ] || die "the columns' run made no two indexes: $(cat "$FLOOR_SQL")"
        floor "$round"
    else
        floor "$round"
        run columns "$round"
    fi
done

# median NAME FIELD (2 wall, 3 cpu): the lower middle of an even count
median() {
    awk -F'\t' -v name="$1" -v f="$2" '$1 == name { print $f }' "$RESULTS" | sort -g | sed -n "$(( (ROUNDS - 1) / 2 + 1 ))p"
}
# timed SQL: the median seconds of QUERIES runs of SQL on DB (sqlite3's .timer, real time), and its answer
timed() { # DB SQL
    local db=$1 sql=$2 i
    for i in $(seq 1 "$QUERIES"); do
        echo "$sql;" | sqlite3 -cmd ".timer on" "$db" 2>&1 | sed -n 's/^Run Time: real \([0-9.]*\).*/\1/p'
    done | sort -g | sed -n "$(( (QUERIES - 1) / 2 + 1 ))p"
}

plain_wall=$(median plain 2)
plain_cpu=$(median plain 3)
columns_wall=$(median columns 2)
columns_cpu=$(median columns 3)
floor_cpu=$(median floor 3)
COLUMNS_DB="$WORK/out-columns/t_item.sqlite"
PLAIN_DB="$WORK/out-plain/t_item.sqlite"

# The count of values of another type over every record: the query mirror makes for a column added to stored records.
warnings_sql="SELECT sum(CASE WHEN \"city\" IS NULL THEN json_type(record, '\$.city') <> 'null' END), \
sum(CASE WHEN \"date\" IS NULL THEN json_type(record, '\$.date') <> 'null' END), \
sum(CASE WHEN \"price\" IS NULL THEN json_type(record, '\$.price') <> 'null' END), \
sum(CASE WHEN \"width\" IS NULL THEN json_type(record, '\$.cover.width') <> 'null' END), \
sum(CASE WHEN \"title\" IS NULL THEN json_type(record, '\$.title') <> 'null' END) \
FROM \"t_item\" WHERE account = ''"
warnings_time=$(timed "$COLUMNS_DB" "$warnings_sql")
warnings_counts=$(sqlite3 "$COLUMNS_DB" "$warnings_sql" | awk -F'|' '{ for (i = 1; i <= NF; i++) printf "%s%s", ($i == "" ? 0 : $i), (i < NF ? " " : "\n") }')
reported=$(python3 -c '
import json, sys
warnings = {w["column"]: w["records"] for w in json.load(open(sys.argv[1]))["jobs"][0].get("column_warnings") or []}
print(" ".join(str(warnings.get(c, 0)) for c in ["city", "date", "price", "width", "title"]))' "$WORK/columns.report.json")
[ "$reported" = "$warnings_counts" ] || die "the run counted $reported values of another type (city date price width title), the query $warnings_counts"
by_column="SELECT count(*) FROM t_item WHERE city = 'Oslo'"
by_json="SELECT count(*) FROM t_item WHERE json_extract(record, '\$.city') = 'Oslo'"
column_count=$(sqlite3 "$COLUMNS_DB" "$by_column")
json_count=$(sqlite3 "$PLAIN_DB" "$by_json")
[ "$column_count" = "$json_count" ] || die "the column found $column_count records of Oslo, json_extract $json_count"
plan=$(sqlite3 "$COLUMNS_DB" "EXPLAIN QUERY PLAN $by_column" | sed -n 's/^.*--//p' | tr '\n' ' ' | sed 's/ $//')
column_time=$(timed "$COLUMNS_DB" "$by_column")
json_time=$(timed "$PLAIN_DB" "$by_json")

echo
echo "mirror bench-columns — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "mirror: $MIRROR ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ', modified')), sqlite3 $(sqlite3 --version | cut -d' ' -f1)"
echo "workload: $PAGES pages x 100 records, $UNIQUE unique; 1 warm-up + $ROUNDS rounds each, interleaved; medians"
echo
printf '%-40s %9s %9s\n' "" "wall" "cpu"
printf '%-40s %8.3fs %8.2fs\n' "plain job" "$plain_wall" "$plain_cpu"
printf '%-40s %8.3fs %8.2fs\n' "5 columns$([ "$STORED" = 0 ] || echo ', stored') (2 indexed), 1 explode" "$columns_wall" "$columns_cpu"
printf '%-40s %8.2fx %8.2fx\n' "ratio" "$(python3 -c "print($columns_wall / $plain_wall)")" "$(python3 -c "print($columns_cpu / $plain_cpu)")"
printf '%-40s %9s %8.2fs\n' "floor: plain + sqlite3 columns, indexes" "" "$floor_cpu"
printf '%-40s %9s %8.2fx\n' "columns against the floor" "" "$(python3 -c "print($columns_cpu / $floor_cpu)")"
cpu_ratio=$(python3 -c "print('%.2f' % ($columns_cpu / $plain_cpu))")
floor_ratio=$(python3 -c "print('%.2f' % ($floor_cpu / $plain_cpu))")
echo "  target: columns' walk CPU <= 1.3x the plain walk's -> ${cpu_ratio}x, $(python3 -c "print('met' if $cpu_ratio <= 1.3 else 'MISSED')") (the floor alone: ${floor_ratio}x)"
echo
echo "column warnings: the run's report, city, date, price, width, title: $reported (the same from the count query)"
echo "                 the count query over $UNIQUE records, which the walk does not make: ${warnings_time}s (median of $QUERIES)"
echo "device query, the records of Oslo ($column_count):"
echo "  by the indexed column:    ${column_time}s  ($plan)"
echo "  by json_extract (plain):  ${json_time}s"

if [ "${BENCH_PROFILE:-0}" = 1 ]; then
    command -v perf >/dev/null || die "perf is not installed"
    for name in plain columns; do
        rm -rf "$WORK/out-$name"
        perf record -q -e cpu-clock -F 997 -g -o "$WORK/perf-$name.data" -- \
            "$MIRROR" run "$WORK/$name.yaml" --output "$WORK/out-$name" --quiet >/dev/null 2>"$WORK/perf-$name.err" \
            || die "perf record of $name failed"
        echo
        echo "profile: $name (self time, top 25 symbols)"
        perf report -i "$WORK/perf-$name.data" --stdio --no-children -g none --sort dso,sym 2>/dev/null \
            | awk '/^ +[0-9.]+%/ && ++n <= 25 { print "  " $0 }' | cut -c1-150
    done
fi
