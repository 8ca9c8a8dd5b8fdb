# Sourced by scripts/test.sh and scripts/check/test-under-load.sh.

# run_tests LOG SHOW: runs `swift test --skip-build` with its output in LOG, and on the
# terminal as well when SHOW is 1. A whole run takes about two minutes; one that has not
# ended in 20 (MIRROR_TEST_TIME_LIMIT, as timeout(1) reads it: a test waiting for something
# that never comes) is stopped, with every process it started, and the tests it was still
# waiting for are named. Returns swift test's exit status: 124 when it was stopped.
run_tests() {
  local log=$1 show=$2 limit=${MIRROR_TEST_TIME_LIMIT:-20m} tests shown="" status=0 saved
  saved=$(trap -p INT TERM)
  # timeout puts the tests in a process group of its own, to stop everything they started;
  # a Ctrl-C at the terminal does not reach that group, so it is passed on.
  timeout --kill-after=30s "$limit" swift test --skip-build >"$log" 2>&1 &
  tests=$!
  trap 'kill -INT "$tests" 2>/dev/null || true' INT
  trap 'kill -TERM "$tests" 2>/dev/null || true' TERM
  if [ "$show" = 1 ]; then
    tail -n +1 -f --pid="$tests" "$log" &
    shown=$!
  fi
  # A signal passed on ends the wait early: the tests are waited for until they have ended.
  until wait "$tests"; status=$?; ! kill -0 "$tests" 2>/dev/null; do :; done
  if [ -n "$shown" ]; then wait "$shown" || true; fi
  trap - INT TERM
  eval "$saved"
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "the test run did not end within $limit and was stopped; the tests that had not ended:" >&2
    python3 "$(dirname "${BASH_SOURCE[0]}")/unfinished-tests.py" "$log" | sed 's/^/  /' >&2
  fi
  return "$status"
}
