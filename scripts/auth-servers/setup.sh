#!/bin/sh
# Makes the venv the auth test servers run in and prints its python's path (only that, on
# stdout; everything else goes to stderr):
#
#     PY=$(scripts/auth-servers/setup.sh) && "$PY" scripts/auth-servers/oauth_server.py
#
# The venv is ${MIRROR_TEST_VENV:-<repository>/.build/auth-venv}. It is made once and
# brought up to date by pip only when requirements.txt's pins change (a stamp in the venv
# holds their hash), so a run that finds it ready takes a few tens of milliseconds.
# Concurrent runs wait on a lock (flock). Where `python3 -m venv` cannot work (Debian
# without python3-venv) it installs python3-venv with apt-get, which needs root. PYTHON
# picks the interpreter (python3, which must be 3.11 or later).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=${MIRROR_TEST_VENV:-$root/.build/auth-venv}
case $venv in /*) ;; *) venv=$(pwd)/$venv ;; esac
python=${PYTHON:-python3}
requirements=$here/requirements.txt
want=$(grep -v '^[[:space:]]*#' "$requirements" | sha256sum | cut -d' ' -f1)

ready() {
    [ -f "$venv/.mirror-requirements" ] &&
        [ "$(cat "$venv/.mirror-requirements")" = "$want" ] &&
        "$venv/bin/python" -c '' 2>/dev/null
}

if ready; then
    echo "$venv/bin/python"
    exit 0
fi

mkdir -p "$(dirname "$venv")"
if command -v flock >/dev/null 2>&1; then
    exec 9>"$venv.lock"
    flock 9
    if ready; then  # made by a concurrent run while this one waited
        echo "$venv/bin/python"
        exit 0
    fi
fi

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "setup.sh: the pinned requirements need Python 3.11 or later; $python is older" >&2
    exit 1
fi
if ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        echo "setup.sh: installing python3-venv with apt-get" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q >&2
        apt-get install -y -q python3-venv >&2
    else
        echo "setup.sh: $python cannot make a venv (on Debian: apt-get install python3-venv)" >&2
        exit 1
    fi
fi

if [ -e "$venv" ] && [ ! -f "$venv/pyvenv.cfg" ]; then
    echo "setup.sh: $venv exists and is not a venv; not touching it" >&2
    exit 1
fi
if [ -e "$venv" ] && "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
    echo "setup.sh: updating $venv to requirements.txt" >&2
else
    rm -rf "$venv"
    echo "setup.sh: making $venv" >&2
    "$python" -m venv "$venv" >&2
fi
"$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q \
    -r "$requirements" >&2
echo "$want" >"$venv/.mirror-requirements"
echo "$venv/bin/python"
