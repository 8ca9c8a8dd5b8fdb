#!/usr/bin/env bash
# What running on many machines costs and buys, on the benchmark workload (1,000 pages x
# 100 records, ~85 KB a page, 95,005 unique ids; scripts/bench/gen_workload.py) served by
# nginx on a free loopback port:
#
#   scripts/bench/bench-state.sh
#   BENCH_PAGES=120 scripts/bench/bench-state.sh       # a quick try
#   BENCH_STATE=s3 scripts/bench/bench-state.sh        # the state in moto's S3 instead of a folder
#
# 1. Shards: the pages split among 12 jobs (one table each), run once by one process and
#    once by three at the same time (--shards 3, JOB_COMPLETION_INDEX 0, 1, 2, three empty
#    folders): wall time of each, and the jobs `mirror plan --shards 3` gives each shard.
#    Checks: the three shards' tables are disjoint and hold the single run's records.
# 2. State: one job walking every page with --state (a folder, or S3 in moto with
#    BENCH_STATE=s3): the bytes pulled and pushed, from the run's state line, by a first
#    run from an empty folder, an unchanged rerun in the same folder, and a rerun from
#    another empty folder. Checks: the last folder holds every record.
#
# Environment: BENCH_PAGES (default 1000), BENCH_SKIP_BUILD=1 (use .build/release/mirror),
# MIRROR=path (binary to measure), BENCH_KEEP=1 (keep the work folder), BENCH_STATE=folder|s3.
# Needs: swift (to build), python3, nginx, curl, sqlite3, GNU time; with BENCH_STATE=s3 the
# venv of scripts/auth-servers/setup.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
PAGES=${BENCH_PAGES:-1000}
STATE=${BENCH_STATE:-folder}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mirror-bench-state.XXXXXX")
die() { echo "bench-state: $*" >&2; exit 1; }
say() { echo "$*" >&2; }
PIDS=()
cleanup() {
    for pid in ${PIDS[@]+"${PIDS[@]}"}; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${BENCH_KEEP:-0}" = 1 ]; then say "bench-state: kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

bench_mirror bench-state

say "bench-state: generating $PAGES pages ..."
python3 "$ROOT/scripts/bench/gen_workload.py" --pages "$PAGES" "$WORK/www" >"$WORK/gen.txt" || die "workload generation failed"
UNIQUE=$(python3 -c "import json,glob; print(len({r['id'] for f in glob.glob('$WORK/www/pages/*.json') for r in json.load(open(f))['data']['list']}))")

start_nginx "$WORK" "$WORK/www" pages/1.json
PIDS+=("$NGINX_PID")
BASE="http://127.0.0.1:$PORT/pages"
curl -fsS -o /dev/null "$BASE/$PAGES.json" || die "nginx did not start"

seconds() { python3 -c "import time; print(f'{time.monotonic():.3f}')"; }
elapsed() { python3 -c "print(f'{$2 - $1:.2f}')"; }

# ---- 1. shards -------------------------------------------------------------------------
JOBS=12
{
    echo "version: 1"
    echo "jobs:"
    for k in $(seq 0 $((JOBS - 1))); do
        from=$((k * PAGES / JOBS + 1)) to=$(((k + 1) * PAGES / JOBS))
        echo "  - name: part$k"
        echo "    url: \"$BASE/{page}.json\""
        echo "    pages: { from: $from, to: $to }"
        echo "    records: data.list"
        echo "    id: id"
        echo "    table: t_part$k"
        echo "    concurrency: 8"
    done
} >"$WORK/shards.yaml"
"$MIRROR" plan "$WORK/shards.yaml" --shards 3 >"$WORK/plan.txt"

say "bench-state: one process, $JOBS jobs ..."
start=$(seconds)
"$MIRROR" run "$WORK/shards.yaml" --output "$WORK/single" --quiet
single=$(elapsed "$start" "$(seconds)")

say "bench-state: three processes, one shard each ..."
start=$(seconds)
shard_pids=()
for i in 0 1 2; do
    JOB_COMPLETION_INDEX=$i "$MIRROR" run "$WORK/shards.yaml" --shards 3 --output "$WORK/shard-$i" --quiet &
    shard_pids+=($!)
done
for pid in "${shard_pids[@]}"; do wait "$pid" || die "a shard failed"; done
sharded=$(elapsed "$start" "$(seconds)")

# Every table once, in exactly one shard, with the single run's records.
for k in $(seq 0 $((JOBS - 1))); do
    holders=$(ls "$WORK"/shard-*/t_part$k.sqlite 2>/dev/null | wc -l)
    [ "$holders" = 1 ] || die "t_part$k is in $holders shards"
    a=$(sqlite3 "$WORK/single/t_part$k.sqlite" "SELECT count(*), total(length(record)) FROM t_part$k")
    b=$(sqlite3 "$WORK"/shard-*/t_part$k.sqlite "SELECT count(*), total(length(record)) FROM t_part$k")
    [ "$a" = "$b" ] || die "t_part$k: $b in its shard, $a in the single run"
done

# ---- 2. state --------------------------------------------------------------------------
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
} >"$WORK/state.yaml"
ENVIRONMENT=()
if [ "$STATE" = s3 ]; then
    PY=$("$ROOT/scripts/auth-servers/setup.sh")
    coproc S3 { exec "$PY" "$ROOT/scripts/auth-servers/s3_server.py" --ignore-stdin; }
    PIDS+=("$S3_PID")
    read -r ready <&"${S3[0]}"
    s3() { python3 -c "import json,sys; print(json.loads(sys.argv[1])['$1'])" "$ready"; }
    ENVIRONMENT=(AWS_ACCESS_KEY_ID="$(s3 access_key)" AWS_SECRET_ACCESS_KEY="$(s3 secret_key)" AWS_ENDPOINT_URL_S3="$(s3 url)")
    "$PY" -c "import boto3,sys; boto3.client('s3', endpoint_url=sys.argv[1], region_name='us-east-1', aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3]).create_bucket(Bucket='bench-state')" \
        "$(s3 url)" "$(s3 access_key)" "$(s3 secret_key)"
    LOCATION=s3://bench-state/state
else
    LOCATION=file://$WORK/store
fi
state_run() { # FOLDER: prints the run's state line, and the wall seconds after it
    local start line
    start=$(seconds)
    line=$(env ${ENVIRONMENT[@]+"${ENVIRONMENT[@]}"} "$MIRROR" run "$WORK/state.yaml" --output "$WORK/$1" --state "$LOCATION" \
        2>>"$WORK/state.log" | grep '^state ') || die "the run in $1 failed"
    echo "$line; $(elapsed "$start" "$(seconds)") s"
}
say "bench-state: --state $LOCATION ..."
first=$(state_run state-one)
unchanged=$(state_run state-one)
empty=$(state_run state-two)
records=$(sqlite3 "$WORK/state-two/t_item.sqlite" "SELECT count(*) FROM t_item")
[ "$records" = "$UNIQUE" ] || die "the folder pulled into holds $records records, not $UNIQUE"
database=$(stat -c %s "$WORK/state-two/t_item.sqlite")

echo "workload: $PAGES pages, $UNIQUE unique ids, nginx on 127.0.0.1:$PORT; mirror: $MIRROR"
echo
echo "shards: $JOBS jobs of $((PAGES / JOBS)) pages or so, one table each; mirror plan --shards 3:"
sed 's/^/  /' "$WORK/plan.txt"
echo "  one process (--parallel 4):           ${single} s"
echo "  three processes at once (--shards 3): ${sharded} s  (every table in one shard, records equal)"
echo
echo "state ($LOCATION), one job of $PAGES pages; the database is $database bytes:"
echo "  first run, empty folder:      $first"
echo "  unchanged rerun, same folder: $unchanged"
echo "  rerun, another empty folder:  $empty"
