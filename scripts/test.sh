#!/usr/bin/env bash
# Installs what a fresh machine lacks, builds, runs the whole test suite, then checks the
# job-file schema, the deployment manifests, the dashboard and alert rules, and the install
# (of the debug build, linked with the Swift runtime; .ci/run checks the optimised one).
# Build output goes to .build/*.log (its tail is shown when a build fails; a progress line
# shows what is being compiled); the tests' own output is shown as it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/progress.sh
source scripts/lib/tests.sh
missing=()
# chromium: the status page of `mirror serve` is checked in a real headless browser;
# openssl makes the keys the JWT tests sign with; nginx serves a published prefix for a
# replica's sync, as a device's web server would.
for package in libsqlite3-dev sqlite3 chromium openssl nginx; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}" >&2
  apt-get update -qq >/dev/null \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
mkdir -p .build

# The real servers the authentication and S3 tests talk to (django-oauth-toolkit, PyJWT,
# botocore's SigV4 signer, moto's S3) run on 127.0.0.1 from a venv of their own. It takes
# about 40 s to make the first time, so it is made while the build runs.
VENV_LOG=.build/auth-venv.log
scripts/auth-servers/setup.sh >.build/auth-venv.path 2>"$VENV_LOG" &
venv=$!

# The debug build: the same one scripts/demo.sh makes, so after the demo only the test
# targets and the packages only they use (Hummingbird, ServiceLifecycle) are left to build.
LOG=.build/test-build.log
if [ -x .build/debug/mirror ]; then
  echo "test: building mirror and its tests (debug; output in $LOG)"
else
  echo "test: building mirror and its tests (debug): about 7½ minutes on 2 cores the first time, 2 after scripts/demo.sh; output in $LOG"
fi
started=$SECONDS
if ! build_with_progress "$LOG" swift build --build-tests; then
  tail -n 30 "$LOG" >&2
  echo "test: the build failed; the whole output is in $LOG" >&2
  wait "$venv" || true
  exit 1
fi
echo "test: built in $((SECONDS - started))s"
if ! wait "$venv"; then
  cat "$VENV_LOG" >&2
  echo "test: the venv of the test servers could not be made (scripts/auth-servers/setup.sh)" >&2
  exit 1
fi
MIRROR_TEST_PYTHON=$(cat .build/auth-venv.path)
export MIRROR_TEST_PYTHON
status=0
run_tests .build/test-run.log 1 || status=$?
if [ "$status" -ne 0 ]; then
  echo "test: swift test exited $status; the whole output is in .build/test-run.log" >&2
  exit "$status"
fi
summary=$(grep -E 'Test run with [0-9]+ tests' .build/test-run.log | tail -n 1)
# With MIRROR_TEST_PYTHON set they must have run, not been skipped.
for suite in "auth against real servers" "token store under kill -9" "S3 against a real server" \
             "remote state in S3 against a real server" "state kept in S3 against a real server (--state s3://)" \
             "publishing to S3 against a real server" "the mirror binary: publish"; do
  if ! grep -q "Suite \"$suite\" passed" .build/test-run.log; then
    echo "test: the suite \"$suite\" did not pass" >&2
    exit 1
  fi
done

# The job-file schema: every job file of the repository and the job-file examples of
# README.md and docs/ follow what `mirror schema` prints (checked with Python's jsonschema).
if ! python3 -c 'import jsonschema, yaml' 2>/dev/null; then
  echo "installing python3-jsonschema python3-yaml" >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-jsonschema python3-yaml >/dev/null || true
  python3 -c 'import jsonschema, yaml' 2>/dev/null \
    || python3 -m pip install -q jsonschema pyyaml \
    || python3 -m pip install -q --break-system-packages jsonschema pyyaml
fi
# Package.swift declares, for each target, exactly the targets and products it imports.
python3 scripts/check/check-package.py

schema=$(mktemp "${TMPDIR:-/tmp}/mirror.schema.XXXXXX.json")
trap 'rm -f "$schema"' EXIT
.build/debug/mirror schema >"$schema"
python3 scripts/check/check-job-schema.py "$schema" jobs/*.yaml README.md docs/*.md

# The deployment, offline: deploy/kubernetes's manifests against the Kubernetes API's models
# (the venv above has the client), the shard count and the policies the design depends on,
# the ConfigMap's job files against the same schema, deploy/mirror-shard's exit statuses
# and signals with a stand-in for mirror, then every index of the CronJob run for real with
# the binary built above, against moto's S3 and the sample API: each must exit 0.
"$MIRROR_TEST_PYTHON" scripts/check/check-deploy.py --job-schema "$schema"

# The observability files: deploy/observability's alert rules and their unit tests, the sample
# Prometheus config and every expression of the Grafana dashboard, with promtool (Debian's
# prometheus package: when promtool is missing, the package is downloaded, not installed, and
# promtool alone unpacked into .build/tools, 48 MB, in seconds), and every mirror metric they
# name against the tables of docs/deploying.md "Watching mirror".
python3 scripts/check/check-observability.py

# The install: scripts/install.sh --debug, the objects of the debug build above linked again
# with the Swift runtime in (seconds), into a temporary prefix; the installed binary must run
# with an empty environment and need no Swift runtime library (a server without the toolchain
# has none). With MIRROR_INSTALL_CHECK=release (as .ci/run sets it) the optimised build users
# install, about 13 minutes, is installed and checked the same way after it.
case "${MIRROR_INSTALL_CHECK:-debug}" in
  debug) builds=(debug) ;;
  release) builds=(debug release) ;;
  *) echo "test: MIRROR_INSTALL_CHECK must be debug or release, not '$MIRROR_INSTALL_CHECK'" >&2; exit 2 ;;
esac
prefix=$(mktemp -d "${TMPDIR:-/tmp}/mirror-prefix.XXXXXX")
trap 'rm -f "$schema"; rm -rf "$prefix"' EXIT
for build in "${builds[@]}"; do
  rm -rf "${prefix:?}"/*
  if [ "$build" = debug ]; then MIRROR_INSTALL_BUILT=1 scripts/install.sh --debug "$prefix"; else scripts/install.sh "$prefix"; fi
  scripts/check/check-install.sh "$prefix"
done

# Last, the test runner's own closing line, so that it ends the output.
echo "test: the tests, the job-file schema, the deployment and observability checks and the install check passed"
echo "$summary"
