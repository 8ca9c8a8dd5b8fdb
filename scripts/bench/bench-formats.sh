#!/usr/bin/env bash
# What reading a body that is not JSON costs the walk: the same records served as JSON,
# JSON Lines, CSV and XML (scripts/bench/gen_formats.py: BENCH_PAGES pages x 100 flat records
# of 6 fields, about 75 KB a page) by nginx on a free loopback port:
#
#   scripts/bench/bench-formats.sh
#   BENCH_PAGES=100 BENCH_ROUNDS=3 scripts/bench/bench-formats.sh     # a quick try
#
# Each format's job walks `{page}` from 1 to BENCH_PAGES (`concurrency: 8`); `format: json`
# reads `data.list`, ndjson and csv each line or row, xml `feed.entry`. The four runs are
# interleaved, 1 warm-up + BENCH_ROUNDS rounds, a fresh --output folder each run. Prints each
# run, then each format's median wall and CPU time, peak RSS, and its ratio to the JSON job's
# (the reference, measured in the same rounds).
# Checks: every run succeeds and stores BENCH_PAGES * 100 records, and a record reads the
# same in every format: the last page's last record, compared field by field.
#
# Environment: BENCH_ROUNDS (default 5), BENCH_PAGES (default 1000), BENCH_SKIP_BUILD=1 (use
# .build/release/mirror), MIRROR=path (binary to measure; implies no build), BENCH_KEEP=1
# (keep the work folder), BENCH_PROFILE=1 (one more run of each format under `perf record`,
# its top symbols printed).
# Needs: swift (to build), python3, nginx, curl, sqlite3, GNU time.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ROUNDS=${BENCH_ROUNDS:-5}
PAGES=${BENCH_PAGES:-1000}
FORMATS="json ndjson csv xml"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mirror-bench-formats.XXXXXX")
die() { echo "bench-formats: FAILED: $*" >&2; exit 1; }
say() { echo "$*" >&2; }
for name in ROUNDS PAGES; do
    [[ "${!name}" =~ ^[1-9][0-9]*$ ]] || die "BENCH_$name must be a positive integer, not '${!name}'"
done
RECORDS=$((PAGES * 100))
for tool in python3 curl sqlite3; do command -v "$tool" >/dev/null || die "$tool is not installed"; done
[ -x /usr/bin/time ] || die "GNU time (/usr/bin/time) is not installed"

bench_mirror bench-formats

NGINX_PID=""
cleanup() {
    if [ -n "$NGINX_PID" ] && kill -0 "$NGINX_PID" 2>/dev/null; then
        kill -TERM "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
    fi
    if [ "${BENCH_KEEP:-0}" = 1 ]; then say "bench-formats: kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

say "bench-formats: generating $PAGES pages in 4 formats in $WORK/www ..."
python3 "$ROOT/scripts/bench/gen_formats.py" --pages "$PAGES" "$WORK/www" || die "workload generation failed"
start_nginx "$WORK" "$WORK/www" 1.json
curl -fsS "http://127.0.0.1:$PORT/$PAGES.xml" | cmp -s - "$WORK/www/$PAGES.xml" || die "nginx serves something else"

for format in $FORMATS; do
    case $format in
        json) records="records: data.list" ;;
        xml) records="records: feed.entry" ;;
        *) records="" ;;
    esac
    cat >"$WORK/$format.yaml" <<JOB
version: 1
jobs:
  - name: bench
    url: "http://127.0.0.1:$PORT/{page}.$format"
    pages: { from: 1, to: $PAGES }
    format: $format
    $records
    id: id
    table: t_item
    concurrency: 8
JOB
done

RESULTS="$WORK/results.tsv"
: >"$RESULTS"
run() { # FORMAT ROUND
    local name=$1 round=$2 out="$WORK/out-$1"
    rm -rf "$out"
    sync
    local t0 t1
    t0=$(date +%s%N)
    /usr/bin/time -f '%U %S %M' -o "$WORK/time.out" "$MIRROR" run "$WORK/$name.yaml" --output "$out" --quiet \
        >"$WORK/$name.stdout" 2>"$WORK/$name.stderr" || { tail -5 "$WORK/$name.stderr" >&2; die "mirror run of $name failed"; }
    t1=$(date +%s%N)
    local u s m wall cpu n
    read -r u s m <"$WORK/time.out"
    wall=$(python3 -c "print('%.3f' % (($t1 - $t0) / 1e9))")
    cpu=$(python3 -c "print('%.2f' % ($u + $s))")
    n=$(sqlite3 "$out/t_item.sqlite" 'SELECT count(*) FROM t_item')
    [ "$n" = "$RECORDS" ] || die "$name stored $n records, expected $RECORDS"
    say "$(printf 'bench-formats:   %-7s %-8s wall %7ss  cpu %6ss  rss %4d MB' "$name" "$round" "$wall" "$cpu" $((m / 1024)))"
    [ "$round" = warm-up ] || printf '%s\t%s\t%s\t%s\n' "$name" "$wall" "$cpu" $((m / 1024)) >>"$RESULTS"
}
say "bench-formats: $PAGES pages, $RECORDS records; 1 warm-up + $ROUNDS rounds, the 4 formats interleaved"
for round in warm-up $(seq 1 "$ROUNDS"); do
    for format in $FORMATS; do run "$format" "$round"; done
done

# The last record as each format stored it: the same six fields and values (XML and CSV
# store every value as text, JSON and JSON Lines as the generator wrote them: all strings).
last=$((RECORDS - 1))
for format in $FORMATS; do
    sqlite3 "$WORK/out-$format/t_item.sqlite" \
        "SELECT json_extract(record, '\$.id'), json_extract(record, '\$.title'), json_extract(record, '\$.city'),
                json_extract(record, '\$.date'), json_extract(record, '\$.price'), json_extract(record, '\$.body')
         FROM t_item ORDER BY position DESC LIMIT 1" >"$WORK/last-$format.txt"
done
for format in ndjson csv xml; do
    cmp -s "$WORK/last-json.txt" "$WORK/last-$format.txt" || die "the last record of $format differs from JSON's: $(cat "$WORK/last-$format.txt" | cut -c1-200)"
done

median() { # FORMAT FIELD (2 wall, 3 cpu, 4 rss): the lower middle of an even count
    awk -F'\t' -v name="$1" -v f="$2" '$1 == name { print $f }' "$RESULTS" | sort -g | sed -n "$(( (ROUNDS - 1) / 2 + 1 ))p"
}
json_wall=$(median json 2)
json_cpu=$(median json 3)

echo
echo "mirror bench-formats — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "mirror: $MIRROR ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ', modified'))"
echo "workload: $PAGES pages x 100 records ($(du -sh --apparent-size "$WORK/www/1.json" | cut -f1) a JSON page); 1 warm-up + $ROUNDS rounds each, interleaved; medians"
echo
printf '%-8s %9s %9s %8s %11s %10s\n' "format" "wall" "cpu" "rss" "wall/json" "cpu/json"
for format in $FORMATS; do
    wall=$(median "$format" 2)
    cpu=$(median "$format" 3)
    printf '%-8s %8.3fs %8.2fs %5d MB %10.2fx %9.2fx\n' "$format" "$wall" "$cpu" "$(median "$format" 4)" \
        "$(python3 -c "print($wall / $json_wall)")" "$(python3 -c "print($cpu / $json_cpu)")"
done

if [ "${BENCH_PROFILE:-0}" = 1 ]; then
    command -v perf >/dev/null || die "perf is not installed"
    for format in $FORMATS; do
        rm -rf "$WORK/out-$format"
        perf record -q -e cpu-clock -F 997 -g -o "$WORK/perf-$format.data" -- \
            "$MIRROR" run "$WORK/$format.yaml" --output "$WORK/out-$format" --quiet >/dev/null 2>"$WORK/perf-$format.err" \
            || die "perf record of $format failed"
        echo
        echo "profile: $format (self time, top 20 symbols)"
        perf report -i "$WORK/perf-$format.data" --stdio --no-children -g none --sort dso,sym 2>/dev/null \
            | awk '/^ +[0-9.]+%/ && ++n <= 20 { print "  " $0 }' | cut -c1-150
    done
fi
