#!/usr/bin/env bash
# The memory of large pages: `mirror run` walks 4 pages of about 60 MB, each a records
# array of 3.9 million tiny records ({"id":N}, 16 bytes each), then an empty page, with
# `concurrency: 4`, and must peak at most 512 MB resident (GNU time's maximum RSS).
#
#   scripts/bench/bench-memory.sh
#
# The pages are generated into a temporary folder and served by Python's http.server on
# a free loopback port (with Content-Length, as most APIs send it). The run must store
# exactly 15,600,000 records. Prints the wall time, CPU time and peak RSS; exits 1 on a
# missed check or target. Needs about 2.5 GB of free disk (the pages and the database).
#
# Environment: BENCH_SKIP_BUILD=1 (use the existing .build/release/mirror), MIRROR=path
# (binary to measure; implies no build), BENCH_KEEP=1 (keep the temp folder),
# BENCH_MAX_RSS_MB (the target, default 512).
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$ROOT"
PAGES=4
PER_PAGE=3900000
MAX_RSS_MB=${BENCH_MAX_RSS_MB:-512}

say() { printf '%s\n' "$*" >&2; }
die() { printf 'bench-memory: FAILED: %s\n' "$*" >&2; exit 1; }

[ -x /usr/bin/time ] || { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null; }
command -v sqlite3 >/dev/null 2>&1 || { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sqlite3 >/dev/null; }

bench_mirror bench-memory

WORK=$(mktemp -d "${TMPDIR:-/tmp}/mirror-bench-memory.XXXXXX")
SERVER=""
cleanup() {
    [ -z "$SERVER" ] || kill "$SERVER" 2>/dev/null || true
    [ "${BENCH_KEEP:-0}" = 1 ] && say "bench-memory: kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

say "bench-memory: writing $PAGES pages of $PER_PAGE records ..."
mkdir -p "$WORK/site"
python3 - "$WORK/site" "$PAGES" "$PER_PAGE" <<'EOF'
import sys
site, pages, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for page in range(pages):
    base = (page + 1) * 10_000_000
    with open(f"{site}/p{page}.json", "w") as out:
        out.write('{"data":[' + ",".join('{"id":%d}' % (base + i) for i in range(per)) + "]}")
with open(f"{site}/p{pages}.json", "w") as out:
    out.write('{"data":[]}')
EOF
page_mb=$(( $(stat -c %s "$WORK/site/p0.json") / 1048576 ))

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd "$WORK/site" && exec python3 -m http.server "$PORT" --bind 127.0.0.1 >/dev/null 2>&1) &
SERVER=$!
for _ in $(seq 100); do
    curl -fsS -o /dev/null "http://127.0.0.1:$PORT/p$PAGES.json" 2>/dev/null && break
    sleep 0.1
done

cat >"$WORK/job.yaml" <<EOF
version: 1
output: out
not_secret: [PORT]
jobs:
  - name: big
    url: "http://127.0.0.1:\${PORT}/p{page}.json"
    pages: { from: 0 }
    records: data
    id: id
    table: t_big
    concurrency: 4
    max_page_size: 64MB
    timeout: 5m
EOF

say "bench-memory: mirror run ($PAGES pages of $page_mb MB, concurrency 4) ..."
PORT=$PORT /usr/bin/time -f '%e %U %S %M' -o "$WORK/time" "$MIRROR" run --quiet "$WORK/job.yaml" >"$WORK/summary" \
    || die "mirror run failed: $(cat "$WORK/summary")"
read -r wall user system rss_kb <"$WORK/time"
stored=$(sqlite3 "$WORK/out/t_big.sqlite" 'SELECT count(*) FROM t_big')
[ "$stored" = $((PAGES * PER_PAGE)) ] || die "stored $stored records, not $((PAGES * PER_PAGE))"
cpu=$(python3 -c "print('%.2f' % ($user + $system))")
rss_mb=$((rss_kb / 1024))
printf 'bench-memory: %d pages of %d MB (%d records each), concurrency 4: wall %ss, cpu %ss, peak RSS %d MB (target <= %d MB)\n' \
    "$PAGES" "$page_mb" "$PER_PAGE" "$wall" "$cpu" "$rss_mb" "$MAX_RSS_MB"
[ "$rss_mb" -le "$MAX_RSS_MB" ] || die "peak RSS $rss_mb MB is above the $MAX_RSS_MB MB target"
