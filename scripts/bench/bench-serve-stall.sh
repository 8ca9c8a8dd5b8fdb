#!/usr/bin/env bash
# Benchmark `mirror serve` against clients that stop reading: its memory while 200 clients
# hold a ~5 MB page unread, its memory once they have left, and how long SIGTERM takes to
# stop it while one such client is connected.
#
#   scripts/bench/bench-serve-stall.sh
#   MIRROR=.build/debug/mirror BENCH_STALLED=50 scripts/bench/bench-serve-stall.sh   # a quick try
#
# Fills one output folder, once and not measured: a page of 5,000 records of ~1 KB each
# (~5 MB) and an empty page, served by python3's http.server on a free loopback port and
# walked by `mirror run` into table t_item. Then serves it with `mirror serve --port 0`
# (its default limits: idle 60 s, header 10 s, send 30 s, stop grace 10 s) and:
#   - stalled clients: BENCH_STALLED (default 200) connections, each with a 4 KB receive
#     buffer (SO_RCVBUF, set before connecting), ask for the page, read its status line and
#     then nothing. Once all have their status line and 3 s have passed, serve's resident
#     size (VmRSS) and its peak so far (VmHWM) are read from /proc; the clients then close
#     their sockets, and after 5 s serve's VmRSS is read again (after the clients left);
#   - stop: one more such client, then SIGTERM; the time until serve has exited, and its
#     exit status. A serve still running BENCH_STOP_LIMIT seconds later (default 120) is
#     killed and reported as such.
# Resting size: serve's VmRSS after one whole read of the page, before any client stalls.
# Target: peak RSS with 200 stalled clients at most 128 MB; SIGTERM within the stop grace
# (10 s) and a second or so.
#
# Environment: MIRROR=path (binary to measure; implies no build), BENCH_SKIP_BUILD=1 (use
# the existing .build/release/mirror; else it is built first, as common.sh says),
# BENCH_STALLED, BENCH_STOP_LIMIT, BENCH_KEEP=1 (keep the temp folder).
# Needs: python3, curl, sqlite3.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$ROOT"
STALLED=${BENCH_STALLED:-200}
STOP_LIMIT=${BENCH_STOP_LIMIT:-120}
RECORDS=5000

say() { printf '%s\n' "$*" >&2; }
die() { printf 'bench-serve-stall: FAILED: %s\n' "$*" >&2; exit 1; }
[[ "$STALLED" =~ ^[1-9][0-9]*$ ]] || die "BENCH_STALLED must be a positive integer, not '$STALLED'"
[[ "$STOP_LIMIT" =~ ^[1-9][0-9]*$ ]] || die "BENCH_STOP_LIMIT must be a positive integer, not '$STOP_LIMIT'"
for tool in python3 curl sqlite3; do command -v "$tool" >/dev/null 2>&1 || die "needs $tool"; done

bench_mirror bench-serve-stall

WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-serve-stall.XXXXXX")
HTTP_PID=""
SERVE_PID=""
cleanup() {
    for pid in $SERVE_PID $HTTP_PID; do kill -KILL "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${BENCH_KEEP:-0}" = 1 ]; then say "bench-serve-stall: kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT


# ---- the page, served and walked once (not measured) ------------------------------------
mkdir -p "$WORK/www/pages"
python3 - "$WORK/www/pages" "$RECORDS" <<'EOF'
import json, sys
folder, count = sys.argv[1], int(sys.argv[2])
with open(folder + "/1.json", "w") as page:
    json.dump({"data": [{"id": n, "text": "%06d" % n + "x" * 1000} for n in range(1, count + 1)]}, page)
with open(folder + "/2.json", "w") as page:
    json.dump({"data": []}, page)
EOF
PAGE_BYTES=$(stat -c %s "$WORK/www/pages/1.json")
HTTP_PORT=$(free_port)
(cd "$WORK/www" && exec python3 -m http.server --bind 127.0.0.1 "$HTTP_PORT") >"$WORK/http.log" 2>&1 &
HTTP_PID=$!
for _ in $(seq 1 100); do
    curl -fsS -o /dev/null "http://127.0.0.1:$HTTP_PORT/pages/2.json" 2>/dev/null && break
    sleep 0.1
done
cat >"$WORK/jobs.yaml" <<EOF
version: 1
output: ./cache
jobs:
  - name: items
    url: "http://127.0.0.1:$HTTP_PORT/pages/{page}.json"
    pages: { from: 1, to: 2 }
    records: data
    id: id
    table: t_item
EOF
"$MIRROR" run "$WORK/jobs.yaml" --output "$WORK/cache" --quiet >"$WORK/run.log" 2>&1 \
    || { tail -20 "$WORK/run.log" >&2; die "mirror run failed"; }
n=$(sqlite3 "$WORK/cache/t_item.sqlite" 'select count(*) from t_item')
[ "$n" = "$RECORDS" ] || die "mirror stored $n records, expected $RECORDS"
kill "$HTTP_PID"
wait "$HTTP_PID" 2>/dev/null || true
HTTP_PID=""

# ---- serve ------------------------------------------------------------------------------------
start_serve() {
    : >"$WORK/serve.log"
    "$MIRROR" serve --output "$WORK/cache" --port 0 2>"$WORK/serve.log" &
    SERVE_PID=$!
    SERVE_PORT=""
    for _ in $(seq 1 300); do
        SERVE_PORT=$(sed -n 's|^serving .* on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$WORK/serve.log" | head -1)
        [ -z "$SERVE_PORT" ] || break
        kill -0 "$SERVE_PID" 2>/dev/null || break
        sleep 0.1
    done
    [ -n "$SERVE_PORT" ] || { cat "$WORK/serve.log" >&2; die "mirror serve did not start"; }
}
kb() { sed -n "s/^$2:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$1/status"; }
mb() { python3 -c "print('%.1f' % ($1 / 1024))"; }

# stalled.py PORT COUNT READY: COUNT clients that read the status line of the page and
# then nothing; touches READY once all have it, and closes them all when stdin ends
cat >"$WORK/stalled.py" <<'EOF'
import socket, sys
port, count, ready = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
clients = []
for _ in range(count):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /pages/1.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    clients.append(s)
for s in clients:
    status = b""
    while not status.endswith(b"\r\n"):
        part = s.recv(1)
        if not part:
            sys.exit("a client's connection ended before its status line")
        status += part
    if status != b"HTTP/1.1 200 OK\r\n":
        sys.exit("a client got %r" % status)
open(ready, "w").close()
sys.stdin.read()
for s in clients:
    s.close()
EOF
# stalled START|STOP: the stalled clients, started in the background (their stdin a fifo)
stalled_start() { # COUNT
    rm -f "$WORK/ready" "$WORK/hold"
    mkfifo "$WORK/hold"
    python3 "$WORK/stalled.py" "$SERVE_PORT" "$1" "$WORK/ready" <"$WORK/hold" &
    STALLED_PID=$!
    exec 7>"$WORK/hold"
    for _ in $(seq 1 600); do
        [ -e "$WORK/ready" ] && return 0
        kill -0 "$STALLED_PID" 2>/dev/null || break
        sleep 0.1
    done
    die "the stalled clients did not all get their status line"
}
stalled_stop() {
    exec 7>&-
    wait "$STALLED_PID" || die "the stalled clients failed"
}

say "bench-serve-stall: page of $RECORDS records, $(mb $(( PAGE_BYTES / 1024 ))) MB; mirror: $MIRROR"
start_serve
curl -fsS -o "$WORK/whole.json" "http://127.0.0.1:$SERVE_PORT/pages/1.json" || die "serve does not answer the page"
python3 -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1])) == json.load(open(sys.argv[2])) else 1)' \
    "$WORK/whole.json" "$WORK/www/pages/1.json" || die "serve's page is not the page served"
sleep 1
RESTING=$(kb "$SERVE_PID" VmRSS)
say "bench-serve-stall: $STALLED stalled clients ..."
stalled_start "$STALLED"
sleep 3
STALLED_RSS=$(kb "$SERVE_PID" VmRSS)
PEAK=$(kb "$SERVE_PID" VmHWM)
stalled_stop
sleep 5
AFTER=$(kb "$SERVE_PID" VmRSS)
CPU_TICKS=$(awk '{ print $14 + $15 }' "/proc/$SERVE_PID/stat")

say "bench-serve-stall: SIGTERM with one stalled client ..."
stalled_start 1
START=$(date +%s.%N)
kill -TERM "$SERVE_PID"
STATUS=""
while kill -0 "$SERVE_PID" 2>/dev/null; do
    if python3 -c "import sys, time; sys.exit(0 if time.time() - $START > $STOP_LIMIT else 1)"; then
        kill -KILL "$SERVE_PID"
        STATUS="killed: still running ${STOP_LIMIT} s after SIGTERM"
        break
    fi
    sleep 0.05
done
END=$(date +%s.%N)
rc=0
wait "$SERVE_PID" || rc=$?
SERVE_PID=""
[ -n "$STATUS" ] || STATUS="exit $rc"
stalled_stop

echo
echo "mirror serve with stalled clients — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores"
echo "mirror: $MIRROR ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ', modified'))"
echo "page: $RECORDS records, $(mb $(( PAGE_BYTES / 1024 ))) MB; clients: SO_RCVBUF 4096, status line read, then nothing"
echo
echo "resting RSS (after one whole read):      $(mb "$RESTING") MB"
echo "RSS with $STALLED stalled clients:           $(mb "$STALLED_RSS") MB"
echo "peak RSS (VmHWM) with $STALLED stalled clients: $(mb "$PEAK") MB"
echo "RSS 5 s after they left:                 $(mb "$AFTER") MB"
echo "CPU time of serve until then:            $(python3 -c "print('%.2f s' % ($CPU_TICKS / $(getconf CLK_TCK)))")"
echo "SIGTERM with one stalled client:         $(python3 -c "print('%.2f s' % ($END - $START))") ($STATUS)"
