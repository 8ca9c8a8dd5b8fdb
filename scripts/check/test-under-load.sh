#!/usr/bin/env bash
# Runs the whole test suite, the suites against real servers in Python included (the venv
# of scripts/auth-servers/setup.sh, as scripts/test.sh makes it), while `stress-ng --cpu 4`
# keeps the machine busy, as a shared CI machine is: a test that holds only on an idle
# machine fails here. Optional argument: how
# many runs (default 1); it stops at the first that fails. Prints each run's test count,
# failures and wall time. The build comes first, without the load; its output goes to
# .build/test-build.log, each run's to .build/test-load-<run>.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/tests.sh
runs=${1:-1}
if ! [[ "$runs" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/check/test-under-load.sh [RUNS]   (RUNS: how many times, 1 or more; default 1)" >&2
  exit 2
fi
if ! command -v stress-ng >/dev/null 2>&1; then
  echo "installing stress-ng" >&2
  apt-get update -qq >/dev/null \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends stress-ng >/dev/null
fi
mkdir -p .build

LOG=.build/test-build.log
echo "test-under-load: building mirror and its tests (debug; output in $LOG)"
started=$SECONDS
if ! swift build --build-tests >"$LOG" 2>&1; then
  tail -n 30 "$LOG" >&2
  echo "test-under-load: the build failed; the whole output is in $LOG" >&2
  exit 1
fi
echo "test-under-load: built in $((SECONDS - started))s"
# The suites that talk to real servers in Python (auth, S3, metrics) run only with
# MIRROR_TEST_PYTHON set, as scripts/test.sh sets it: without it they are skipped.
MIRROR_TEST_PYTHON=${MIRROR_TEST_PYTHON:-$(scripts/auth-servers/setup.sh)}
export MIRROR_TEST_PYTHON

# stress-ng leads a process group of its own (it and its workers), stopped whole on exit (it
# then warns that it ended early: its output is dropped). Its own limit only matters if this
# script is killed outright.
stress=""
stop_stress() {
  if [ -n "$stress" ]; then
    kill -TERM -- "-$stress" 2>/dev/null || true
    wait "$stress" 2>/dev/null || true
    stress=""
  fi
}
trap stop_stress EXIT
trap 'stop_stress; exit 130' INT
trap 'stop_stress; exit 143' TERM
setsid stress-ng --cpu 4 --timeout "$((runs * 3600))s" --quiet >/dev/null 2>&1 &
stress=$!
echo "test-under-load: stress-ng --cpu 4 running (pid $stress)"

for run in $(seq 1 "$runs"); do
  out=.build/test-load-$run.log
  started=$SECONDS
  status=0
  run_tests "$out" 0 || status=$?
  seconds=$((SECONDS - started))
  summary=$(grep -E 'Test run with [0-9]+ tests?' "$out" | tail -n 1 || true)
  tests=$(sed -nE 's/.*Test run with ([0-9]+) tests?.*/\1/p' <<<"$summary")
  failures=$(grep -E '^✘ Test "' "$out" | grep -c ' failed after ' || true)
  echo "run $run of $runs: ${tests:-?} tests, $failures failures, ${seconds}s wall (output in $out)"
  if [ "$status" -ne 0 ]; then
    grep -E '^✘ ' "$out" | head -n 40 >&2 || true
    echo "test-under-load: run $run failed (swift test exited $status); the whole output is in $out" >&2
    exit 1
  fi
done
echo "test-under-load: $runs of $runs runs passed under load"
