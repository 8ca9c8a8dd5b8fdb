#!/usr/bin/env bash
# What reading an exploded list costs a device, on the benchmark workload (1,000 pages x
# 100 records, ~85 KB a page, 95,005 unique ids, each record with 1 to 4 `tags`;
# scripts/bench/gen_workload.py) served by nginx on a free loopback port:
#
#   scripts/bench/bench-explode.sh
#   BENCH_PAGES=120 scripts/bench/bench-explode.sh     # a quick try
#
# One `mirror run` of every page with `explode: { tags: tags }`, then each query below
# read from the table's database (Python's sqlite3 on the system SQLite, as a device's
# reader would), 1 warm-up and BENCH_RUNS measured runs, median reported:
#   - every record holding one tag:  SELECT count(*) FROM t_item__tags WHERE element = 'jazz'
#   - the same, a tag no record has: ... WHERE element = 'x'
#   - every row of the view:         SELECT count(*) FROM t_item__tags
#   - all elements of one record:    ... WHERE account = '' AND parent_id = ? ORDER BY idx
#     (the table's primary key), and ... WHERE parent_id = ? without the account
# and, for scale, the same tag count written on the table with json_each by hand, and
# `mirror run` with and without the list (wall time, fresh folder each). Checks: the view
# has one row per tag of every stored record, the tag count equals the hand-written one,
# and one record's rows are its tags in order.
#
# Environment: BENCH_PAGES (default 1000), BENCH_RUNS (default 5), BENCH_SKIP_BUILD=1 (use
# .build/release/mirror), MIRROR=path (binary to measure), BENCH_KEEP=1 (keep the work folder).
# Needs: swift (to build), python3, nginx, curl.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
PAGES=${BENCH_PAGES:-1000}
RUNS=${BENCH_RUNS:-5}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mirror-bench-explode.XXXXXX")
die() { echo "bench-explode: FAILED: $*" >&2; exit 1; }
say() { echo "$*" >&2; }
PIDS=()
cleanup() {
    for pid in ${PIDS[@]+"${PIDS[@]}"}; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${BENCH_KEEP:-0}" = 1 ]; then say "bench-explode: kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

bench_mirror bench-explode

say "bench-explode: generating $PAGES pages ..."
python3 "$ROOT/scripts/bench/gen_workload.py" --pages "$PAGES" "$WORK/www" >"$WORK/gen.txt" || die "workload generation failed"

start_nginx "$WORK" "$WORK/www" pages/1.json
PIDS+=("$NGINX_PID")
BASE="http://127.0.0.1:$PORT/pages"
curl -fsS -o /dev/null "$BASE/$PAGES.json" || die "nginx did not start"

write_job() { # FILE [EXTRA_LINE]
    {
        echo "version: 1"
        echo "jobs:"
        echo "  - name: bench"
        echo "    url: \"$BASE/{page}.json\""
        echo "    pages: { from: 1, to: $PAGES }"
        echo "    records: data.list"
        echo "    id: id"
        echo "    table: t_item"
        echo "    concurrency: 8"
        [ $# -lt 2 ] || echo "    $2"
    } >"$1"
}
write_job "$WORK/plain.yaml"
write_job "$WORK/explode.yaml" "explode: { tags: tags }"

seconds() { python3 -c "import time; print(f'{time.monotonic():.3f}')"; }
elapsed() { python3 -c "print(f'{$2 - $1:.2f}')"; }
say "bench-explode: mirror run, without and with the list ..."
for kind in plain explode; do
    sync
    start=$(seconds)
    "$MIRROR" run "$WORK/$kind.yaml" --output "$WORK/$kind" --quiet
    eval "run_$kind=\$(elapsed \"\$start\" \"\$(seconds)\")"
done

say "bench-explode: reading the view ..."
python3 - "$WORK/explode/t_item.sqlite" "$RUNS" "$run_plain" "$run_explode" <<'EOF'
import sqlite3
import statistics
import sys
import time

path, runs, run_plain, run_explode = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
records = db.execute("SELECT count(*) FROM t_item").fetchone()[0]
tags = db.execute("SELECT sum(json_array_length(record, '$.tags')) FROM t_item").fetchone()[0]
one = db.execute("SELECT id, json_extract(record, '$.tags') FROM t_item ORDER BY position LIMIT 1 OFFSET 50000 % (SELECT count(*) FROM t_item)").fetchone()


def measure(sql, args=()):
    db.execute(sql, args).fetchall()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        rows = db.execute(sql, args).fetchall()
        times.append(time.perf_counter() - start)
    return statistics.median(times), rows


def fail(what):
    print(f"bench-explode: FAILED: {what}", file=sys.stderr)
    sys.exit(1)


queries = [
    ("tag 'jazz', from the view", "SELECT count(*) FROM t_item__tags WHERE element = 'jazz'", ()),
    ("tag 'x' (none), from the view", "SELECT count(*) FROM t_item__tags WHERE element = 'x'", ()),
    ("every row of the view", "SELECT count(*) FROM t_item__tags", ()),
    ("tag 'jazz', json_each by hand",
     "SELECT count(*) FROM t_item r, json_each(r.record, '$.tags') e WHERE e.value = 'jazz'", ()),
    ("one record's elements, with account", "SELECT idx, element FROM t_item__tags WHERE account = '' AND parent_id = ? ORDER BY idx", (one[0],)),
    ("one record's elements, parent_id alone", "SELECT idx, element FROM t_item__tags WHERE parent_id = ? ORDER BY idx", (one[0],)),
]
results = []
for label, sql, args in queries:
    seconds, rows = measure(sql, args)
    results.append((label, sql, seconds, rows))
if results[2][3][0][0] != tags:
    fail(f"the view has {results[2][3][0][0]} rows, the records {tags} tags")
if results[0][3] != results[3][3]:
    fail(f"the view counts {results[0][3]}, json_each by hand {results[3][3]}")
expected = [[i, t] for i, t in enumerate(__import__("json").loads(one[1]))]
for row in (results[4][3], results[5][3]):
    if [list(r) for r in row] != expected:
        fail(f"record {one[0]}'s rows are {row}, not {expected}")

print(f"workload: {records:,} records, {tags:,} tags; SQLite {sqlite3.sqlite_version}; median of {runs} reads after a warm-up")
print(f"mirror run: {run_plain} s without the list, {run_explode} s with it")
for label, sql, seconds, rows in results:
    print(f"  {seconds * 1000:8.2f} ms  {label}  ({len(rows)} row{'s' if len(rows) != 1 else ''}; {rows[0][0] if label.startswith(('tag', 'every')) else 'ok'})")
plan = db.execute("EXPLAIN QUERY PLAN SELECT idx FROM t_item__tags WHERE account = '' AND parent_id = ?", (one[0],)).fetchall()
print("plan of one record's elements, with account: " + "; ".join(row[3] for row in plan))
EOF
