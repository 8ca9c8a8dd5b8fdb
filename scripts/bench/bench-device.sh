#!/usr/bin/env bash
# Benchmark the device's end: a replica synced from a published prefix served by nginx,
# with `mirror pull` and with the MirrorDevice library, against curl fetching the same
# objects, and its answers to the API's URLs against `mirror serve` on the same replica.
#
#   scripts/bench/bench-device.sh
#   BENCH_BUILD=debug BENCH_PAGES=100 scripts/bench/bench-device.sh   # a quick try of the script, debug builds
#
# Fills one output folder, once and not measured: the bench workload (1,000 pages x 100
# records, ~85 KB a page; scripts/bench/gen_workload.py) served by nginx (2 workers,
# sendfile, keep-alive) on a free loopback port and walked by `mirror run` into t_item
# (a ~108 MB database), then `mirror publish file://WORK/www/pub` (its stored pages
# included), which the same nginx serves at http://127.0.0.1:PORT/pub/. Then BENCH_RUNS
# interleaved runs (default 5), each into fresh folders, of:
#   - reference: curl fetching manifest.json and every object the manifest names, by its
#     path (`curl --parallel --parallel-max 4`, as the sync fetches 4 at a time), then
#     `sha256sum --check` of the objects against the manifest's digests;
#   - `mirror pull http://127.0.0.1:PORT/pub/ --output DIR` (under GNU time: peak RSS);
#   - `replica-bench sync http://127.0.0.1:PORT/pub/ DIR`: Benchmarks/ReplicaBench, the
#     library as an app links it, `Replica.sync(from:)` (under GNU time: peak RSS);
#   - each sync again into its folder, unchanged: one request and its 304.
# Then, on the last replicas: `replica-bench answers` (one `response(for:)` per page URL of
# the walk, after a warm-up pass over all of them) beside `mirror serve --output REPLICA`
# answering the same URLs over loopback (one curl for all of them, keep-alive; time_total
# per URL, after a warm-up pass).
# Targets, each printed with its figure and `met` or `missed`:
#   - a whole sync, pull and library, median <= 1.25 x the reference's median;
#   - an unchanged sync <= 50 ms: the pull's wall time (the process included), the
#     library's sync(from:) (median of the runs);
#   - the library's answers: p50 <= 1 ms, p99 <= 5 ms (mirror serve's printed beside them);
#   - peak RSS (GNU time's maximum RSS, VmHWM) during a sync <= 48 MB, pull and library, in
#     every measured run.
# Checks: every sync fetched every object of the manifest and its replica's database has
# the manifest's SHA-256; every second sync is up to date with nothing fetched; every
# answer of the library and of mirror serve is a 200 with a body. A failed check prints
# `bench-device: FAILED: ...` and exits 1; a missed target is reported after the report,
# and the script exits 1.
#
# Environment: BENCH_BUILD (release, the default: `swift build -c release` of the
# products mirror and replica-bench first, unless BENCH_SKIP_BUILD=1; debug: the existing
# .build/debug binaries, built by nobody, to try the script: their figures are not the
# targets'), MIRROR=path and REPLICA_BENCH=path (binaries to measure), BENCH_PAGES (default
# 1000), BENCH_RUNS (default 5), BENCH_KEEP=1 (keep the temp folder).
# Needs: python3, nginx, curl, sha256sum, GNU time; the Debian packages that are missing
# are installed with apt-get.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$ROOT"
PAGES=${BENCH_PAGES:-1000}
RUNS=${BENCH_RUNS:-5}
BUILD=${BENCH_BUILD:-release}
SYNC_RATIO=1.25      # a whole sync, at most this times the reference
UNCHANGED_MS=50      # an unchanged sync
ANSWER_P50_MS=1
ANSWER_P99_MS=5
RSS_MB=48

say() { printf '%s\n' "$*" >&2; }
die() { printf 'bench-device: FAILED: %s\n' "$*" >&2; exit 1; }

positive() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "$1 must be a positive integer, not '$2'"; }
positive BENCH_PAGES "$PAGES"
positive BENCH_RUNS "$RUNS"
[ "$BUILD" = release ] || [ "$BUILD" = debug ] || die "BENCH_BUILD must be release or debug, not '$BUILD'"

# ---- tools -------------------------------------------------------------------------
missing=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
[ -x /usr/bin/time ] || missing+=(time)
command -v sha256sum >/dev/null 2>&1 || missing+=(coreutils)
if [ "$BUILD" = release ] && [ -z "${MIRROR:-}" ] && [ "${BENCH_SKIP_BUILD:-0}" != 1 ]; then
    # GRDB links the system SQLite; URLSession, libcurl
    [ -e /usr/include/sqlite3.h ] || missing+=(libsqlite3-dev)
    [ -e /usr/include/x86_64-linux-gnu/curl/curl.h ] || [ -e /usr/include/curl/curl.h ] || missing+=(libcurl4-openssl-dev)
fi
apt_install bench-device "${missing[@]+"${missing[@]}"}"

# ---- binaries ------------------------------------------------------------------------
if [ "$BUILD" = debug ]; then
    MIRROR=${MIRROR:-$ROOT/.build/debug/mirror}
    REPLICA_BENCH=${REPLICA_BENCH:-$ROOT/.build/debug/replica-bench}
    [ -x "$MIRROR" ] || die "no mirror binary at $MIRROR (swift build --product mirror)"
    [ -x "$REPLICA_BENCH" ] || die "no replica-bench binary at $REPLICA_BENCH (swift build --product replica-bench)"
else
    bench_mirror bench-device
    if [ -z "${REPLICA_BENCH:-}" ]; then
        REPLICA_BENCH="$ROOT/.build/release/replica-bench"
        if [ "${BENCH_SKIP_BUILD:-0}" != 1 ]; then
            say "bench-device: swift build -c release --product replica-bench ..."
            buildlog=$(mktemp)
            (cd "$ROOT" && swift build -c release --product replica-bench) >"$buildlog" 2>&1 \
                || { tail -40 "$buildlog" >&2; rm -f "$buildlog"; die "swift build failed"; }
            rm -f "$buildlog"
        fi
    fi
    [ -x "$REPLICA_BENCH" ] || die "no replica-bench binary at $REPLICA_BENCH"
fi

# ---- temp folder, servers, cleanup -----------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mirror-bench-device.XXXXXX")
CACHE="$WORK/cache"
NGINX_PID=""
SERVE_PID=""
cleanup() {
    local pid
    for pid in "$SERVE_PID" "$NGINX_PID"; do
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
    if [ "${BENCH_KEEP:-0}" = 1 ]; then
        say "bench-device: kept $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# timed NAME CMD...: runs CMD under GNU time, its output to $WORK/NAME.out and .err; sets
# TIMED_S (wall seconds) and TIMED_KB (peak RSS)
timed() {
    local name=$1 t0 t1
    shift
    t0=$(date +%s%N)
    /usr/bin/time -f '%M' -o "$WORK/$name.rss" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" \
        || { tail -20 "$WORK/$name.err" >&2 || true; die "$name failed: $*"; }
    t1=$(date +%s%N)
    TIMED_S=$(python3 -c "print('%.4f' % (($t1 - $t0) / 1e9))")
    TIMED_KB=$(grep -E '^[0-9]+$' "$WORK/$name.rss" | tail -1)
}
median() { python3 -c 'import statistics, sys; print("%.4f" % statistics.median(float(v) for v in sys.argv[1:]))' "$@"; }
largest() { python3 -c 'import sys; print(max(int(v) for v in sys.argv[1:]))' "$@"; }

# ---- workload, walked and published (not measured) ----------------------------------------
say "bench-device: generating $PAGES pages in $WORK/www ..."
python3 "$ROOT/scripts/bench/gen_workload.py" --pages "$PAGES" "$WORK/www" >"$WORK/gen.txt" \
    || die "workload generation failed"
start_nginx "$WORK" "$WORK/www" pages/1.json
NGINX_URL="http://127.0.0.1:$PORT"
mkdir -p "$WORK/job"
cat >"$WORK/job/device.yaml" <<EOF
version: 1
jobs:
  - name: pages
    url: "$NGINX_URL/pages/{page}.json"
    pages: { from: 1, to: $PAGES }
    records: data.list
    id: id
    table: t_item
    concurrency: 8
EOF
say "bench-device: mirror run: $PAGES pages into t_item ..."
"$MIRROR" run "$WORK/job/device.yaml" --output "$CACHE" --quiet >"$WORK/run.out" 2>"$WORK/run.err" \
    || { tail -20 "$WORK/run.err" >&2 || true; die "mirror run failed"; }
"$MIRROR" publish "file://$WORK/www/pub" --output "$CACHE" >"$WORK/publish.out" 2>"$WORK/publish.err" \
    || { tail -20 "$WORK/publish.err" >&2 || true; die "mirror publish failed"; }
SOURCE="$NGINX_URL/pub/"
# the manifest's objects: OBJECTS (path per line), objects.sha256 (for sha256sum --check), the database's digest
python3 - "$WORK/www/pub/manifest.json" "$WORK" <<'EOF' || die "the published manifest names no objects"
import json, sys
manifest = json.load(open(sys.argv[1]))
objects = [o for entry in manifest["entries"] for o in entry["objects"]]
if not objects:
    sys.exit(1)
work = sys.argv[2]
with open(work + "/objects.txt", "w") as paths, open(work + "/objects.sha256", "w") as sums:
    for o in objects:
        paths.write(o["path"] + "\n")
        sums.write("%s  %s\n" % (o["sha256"], o["path"]))
database = [o for o in objects if o["path"].endswith("/t_item.sqlite")]
open(work + "/database.sha256", "w").write(database[0]["sha256"] + "\n" if database else "")
print(len(objects), sum(o["bytes"] for o in objects), file=open(work + "/objects.count", "w"))
EOF
read -r OBJECTS OBJECT_BYTES <"$WORK/objects.count"
DB_SHA=$(cat "$WORK/database.sha256")
[ -n "$DB_SHA" ] || die "the published manifest names no t_item.sqlite"
{
    printf 'url = "%smanifest.json"\noutput = "%%DIR%%/manifest.json"\n' "$SOURCE"
    sed "s|.*|url = \"$SOURCE&\"\noutput = \"%DIR%/&\"|" "$WORK/objects.txt"
} >"$WORK/curl.cfg.in"
say "bench-device: published $OBJECTS objects ($(python3 -c "print('%.1f MB' % ($OBJECT_BYTES / 1e6))")) at $SOURCE"

# check_replica NAME DIR OUTPUT: the sync printed OUTPUT fetched every object, and DIR's database is the manifest's
check_replica() {
    local name=$1 dir=$2 said=$3 sha
    sha=$(sha256sum "$dir/current/t_item.sqlite" | cut -c1-64)
    [ "$sha" = "$DB_SHA" ] || die "$name: the replica's t_item.sqlite has SHA-256 $sha, the manifest says $DB_SHA"
    grep -qE "(^| )$OBJECTS objects fetched|fetched=$OBJECTS " <<<"$said" || die "$name did not fetch all $OBJECTS objects: $said"
}

# ---- measured runs, interleaved -------------------------------------------------------------
REF_S=()
PULL_S=()
LIB_S=()
PULL_AGAIN_S=()
LIB_AGAIN_S=()
PULL_KB=()
LIB_KB=()
for run in $(seq 0 "$RUNS"); do
    label="run $run of $RUNS"
    [ "$run" -gt 0 ] || label="warm-up"
    say "bench-device: $label: curl + sha256sum, mirror pull, replica-bench sync ..."
    rm -rf "$WORK/ref" "$WORK/pulled" "$WORK/synced"
    mkdir -p "$WORK/ref"
    sed "s|%DIR%|$WORK/ref|" "$WORK/curl.cfg.in" >"$WORK/curl.cfg"
    timed reference bash -c 'curl --parallel --parallel-max 4 --create-dirs --fail --no-progress-meter -K "$1" \
        && cd "$2" && sha256sum --check --quiet --strict "$3"' _ "$WORK/curl.cfg" "$WORK/ref" "$WORK/objects.sha256"
    ref_s=$TIMED_S
    timed pull "$MIRROR" pull "$SOURCE" --output "$WORK/pulled"
    pull_s=$TIMED_S pull_kb=$TIMED_KB
    check_replica "mirror pull" "$WORK/pulled" "$(cat "$WORK/pull.out")"
    timed library "$REPLICA_BENCH" sync "$SOURCE" "$WORK/synced"
    lib_s=$TIMED_S lib_kb=$TIMED_KB
    check_replica "replica-bench sync" "$WORK/synced" "$(cat "$WORK/library.out")"
    timed pull-again "$MIRROR" pull "$SOURCE" --output "$WORK/pulled"
    pull_again_s=$TIMED_S
    grep -q ", up to date, " "$WORK/pull-again.out" || die "a second mirror pull was not up to date: $(cat "$WORK/pull-again.out")"
    timed library-again "$REPLICA_BENCH" sync "$SOURCE" "$WORK/synced"
    grep -q "fetched=0 kept=$OBJECTS changed=no" "$WORK/library-again.out" \
        || die "a second replica-bench sync was not up to date: $(cat "$WORK/library-again.out")"
    lib_again_s=$(sed -n 's/^seconds=\([0-9.]*\) .*/\1/p' "$WORK/library-again.out")
    say "bench-device:   curl ${ref_s}s; pull ${pull_s}s ($(( pull_kb / 1024 )) MB), again ${pull_again_s}s;" \
        "library ${lib_s}s ($(( lib_kb / 1024 )) MB), again ${lib_again_s}s"
    [ "$run" -gt 0 ] || continue
    REF_S+=("$ref_s")
    PULL_S+=("$pull_s")
    LIB_S+=("$lib_s")
    PULL_AGAIN_S+=("$pull_again_s")
    LIB_AGAIN_S+=("$lib_again_s")
    PULL_KB+=("$pull_kb")
    LIB_KB+=("$lib_kb")
done

# ---- answers: the library, and mirror serve on the same replica ------------------------------
seq 1 "$PAGES" | sed "s|.*|$NGINX_URL/pages/&.json|" >"$WORK/urls.txt"
say "bench-device: replica-bench answers: $PAGES page URLs ..."
"$REPLICA_BENCH" answers "$WORK/synced" "$WORK/urls.txt" >"$WORK/answers.out" 2>"$WORK/answers.err" \
    || { cat "$WORK/answers.err" >&2; die "replica-bench answers failed"; }
LIB_ANSWERS=$(cat "$WORK/answers.out")
"$MIRROR" serve --output "$WORK/pulled" --port 0 >"$WORK/serve.log" 2>&1 &
SERVE_PID=$!
SERVE_PORT=""
for _ in $(seq 1 100); do
    SERVE_PORT=$(sed -n 's|^serving .* on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$WORK/serve.log" | head -1)
    [ -z "$SERVE_PORT" ] || break
    kill -0 "$SERVE_PID" 2>/dev/null || break
    sleep 0.1
done
[ -n "$SERVE_PORT" ] || { tail -20 "$WORK/serve.log" >&2 || true; die "mirror serve did not start"; }
sed "s|.*|url = \"http://127.0.0.1:$SERVE_PORT/pages/&.json\"\noutput = \"/dev/null\"|" <(seq 1 "$PAGES") >"$WORK/serve-curl.cfg"
say "bench-device: mirror serve --output REPLICA on 127.0.0.1:$SERVE_PORT: the same $PAGES URLs over loopback ..."
for pass in warm measured; do
    curl --no-progress-meter -K "$WORK/serve-curl.cfg" -w '%{http_code} %{size_download} %{time_total}\n' \
        >"$WORK/serve-$pass.txt" || die "curl could not ask mirror serve"
done
SERVE_ANSWERS=$(python3 - "$WORK/serve-measured.txt" "$PAGES" <<'EOF'
import sys
lines = [line.split() for line in open(sys.argv[1])]
bad = [l for l in lines if l[0] != "200" or l[1] == "0"]
if len(lines) != int(sys.argv[2]) or bad:
    sys.exit("mirror serve answered %d of %s URLs, %d not a 200 with a body" % (len(lines), sys.argv[2], len(bad)))
took = sorted(float(l[2]) * 1000 for l in lines)
pick = lambda p: took[max(0, -(-len(took) * p // 100) - 1)]  # nearest rank
print("answers=%d p50_ms=%.3f p99_ms=%.3f max_ms=%.3f" % (len(took), pick(50), pick(99), took[-1]))
EOF
) || die "mirror serve's answers (see above)"
kill -TERM "$SERVE_PID" 2>/dev/null || true
wait "$SERVE_PID" 2>/dev/null || true
SERVE_PID=""

# ---- report ------------------------------------------------------------------------------------
REF=$(median "${REF_S[@]}")
field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<" $2"; }
MISSED="$WORK/missed.txt"
: >"$MISSED"
# row FIGURE VALUE UNIT TARGET LIMIT: one line of the report, `met` when VALUE <= LIMIT
row() {
    local figure=$1 value=$2 unit=$3 target=$4 limit=$5 verdict=met
    python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) else 1)" "$value" "$limit" || {
        verdict=missed
        echo "$figure: $value $unit; the target is $target" >>"$MISSED"
    }
    printf '%-44s %10s %-4s  %-34s %s\n' "$figure" "$value" "$unit" "$target" "$verdict"
}
ms() { python3 -c "print('%.1f' % (float('$1') * 1000))"; }
mb() { python3 -c "print('%.1f' % ($1 / 1024))"; }
LIMIT=$(python3 -c "print('%.4f' % ($SYNC_RATIO * $REF))")
echo
echo "mirror device bench — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "mirror: $MIRROR, replica-bench: $REPLICA_BENCH ($BUILD; $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ', modified'))"
[ "$BUILD" = release ] || echo "debug builds: these figures are not the targets'"
echo "workload: $PAGES pages x 100 records, published as $OBJECTS objects ($(python3 -c "print('%.1f MB' % ($OBJECT_BYTES / 1e6))")), served by nginx $(nginx -v 2>&1 | sed 's|.*/||') on loopback"
echo "runs: $RUNS measured after a warm-up, interleaved, fresh folders each; medians"
echo
printf '%-44s %10s %-4s  %-34s %s\n' figure value unit target result
printf '%-44s %10s %-4s  %-34s\n' "sync, reference: curl + sha256sum" "$REF" s "(the reference)"
row "sync, mirror pull" "$(median "${PULL_S[@]}")" s "<= $SYNC_RATIO x reference = $LIMIT s" "$LIMIT"
row "sync, library (replica-bench sync)" "$(median "${LIB_S[@]}")" s "<= $SYNC_RATIO x reference = $LIMIT s" "$LIMIT"
row "unchanged sync (304), mirror pull" "$(ms "$(median "${PULL_AGAIN_S[@]}")")" ms "<= $UNCHANGED_MS ms" "$UNCHANGED_MS"
row "unchanged sync (304), library" "$(ms "$(median "${LIB_AGAIN_S[@]}")")" ms "<= $UNCHANGED_MS ms" "$UNCHANGED_MS"
row "answers, library response(for:) p50" "$(field p50_ms "$LIB_ANSWERS")" ms "<= $ANSWER_P50_MS ms" "$ANSWER_P50_MS"
row "answers, library response(for:) p99" "$(field p99_ms "$LIB_ANSWERS")" ms "<= $ANSWER_P99_MS ms" "$ANSWER_P99_MS"
printf '%-44s %10s %-4s  %-34s\n' "answers, library max" "$(field max_ms "$LIB_ANSWERS")" ms "(beside)"
printf '%-44s %10s %-4s  %-34s\n' "answers, mirror serve over loopback p50" "$(field p50_ms "$SERVE_ANSWERS")" ms "(beside)"
printf '%-44s %10s %-4s  %-34s\n' "answers, mirror serve over loopback p99" "$(field p99_ms "$SERVE_ANSWERS")" ms "(beside)"
printf '%-44s %10s %-4s  %-34s\n' "answers, mirror serve over loopback max" "$(field max_ms "$SERVE_ANSWERS")" ms "(beside)"
row "peak RSS during a sync, mirror pull (max)" "$(mb "$(largest "${PULL_KB[@]}")")" MB "<= $RSS_MB MB" "$RSS_MB"
row "peak RSS during a sync, library (max)" "$(mb "$(largest "${LIB_KB[@]}")")" MB "<= $RSS_MB MB" "$RSS_MB"
echo
echo "checks: every sync fetched all $OBJECTS objects and its t_item.sqlite has the manifest's SHA-256; every"
echo "        second sync was up to date, nothing fetched; all $PAGES answers of the library and of mirror serve"
echo "        were a 200 with a body"
if [ -s "$MISSED" ]; then
    sed 's/^/bench-device: target missed: /' "$MISSED" >&2
    exit 1
fi
