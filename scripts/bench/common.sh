# What every benchmark of scripts/bench/ shares, sourced once its say and die are defined:
#
#   . "$(dirname "${BASH_SOURCE[0]}")/common.sh"
#   bench_mirror bench-state                           # sets MIRROR
#   build_floor bench download-floor                   # sets FLOOR_BIN
#   start_nginx "$WORK" "$WORK/www" pages/1.json       # sets PORT and NGINX_PID
#
# ROOT is the repository's folder. apt_install NAME PACKAGE... installs missing Debian packages. bench_mirror NAME finds the binary to measure: MIRROR=path
# as given, else .build/release/mirror, built first with `swift build -c release --product
# mirror` (seconds when it is up to date; output shown when it fails) unless
# BENCH_SKIP_BUILD=1. build_floor NAME PACKAGE builds the floor program
# scripts/bench/PACKAGE (`swift build -c release`, its output shown when it fails) and sets
# FLOOR_BIN to its binary. start_nginx WORK ROOT PROBE [DIRECTIVES] runs nginx as the benchmarks
# measure it (2 workers, sendfile, keep-alive) on a free loopback port, its files under
# WORK/nginx, serving the folder ROOT (and DIRECTIVES, such as a `location`, in its server
# block), and waits until PROBE answers; the caller stops it (kill -TERM "$NGINX_PID").

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

apt_install() { # NAME PACKAGE...: installs the Debian packages named, if any
    local name=$1
    shift
    [ $# -gt 0 ] || return 0
    say "$name: installing missing Debian packages: $*"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >/dev/null
    $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

bench_mirror() { # NAME
    if [ -n "${MIRROR:-}" ]; then
        MIRROR=$(cd "$(dirname "$MIRROR")" && pwd)/$(basename "$MIRROR")
    elif [ "${BENCH_SKIP_BUILD:-0}" = 1 ]; then
        MIRROR="$ROOT/.build/release/mirror"
    else
        command -v swift >/dev/null 2>&1 || die "swift is not installed (https://www.swift.org/install/linux/)"
        say "$1: swift build -c release --product mirror ..."
        local buildlog
        buildlog=$(mktemp)
        if ! (cd "$ROOT" && swift build -c release --product mirror) >"$buildlog" 2>&1; then
            tail -40 "$buildlog" >&2
            rm -f "$buildlog"
            die "swift build failed"
        fi
        rm -f "$buildlog"
        MIRROR="$ROOT/.build/release/mirror"
    fi
    [ -x "$MIRROR" ] || die "no mirror binary at $MIRROR"
}

build_floor() { # NAME PACKAGE
    command -v swift >/dev/null 2>&1 || die "swift is not installed (https://www.swift.org/install/linux/)"
    say "$1: swift build -c release --package-path scripts/bench/$2 ..."
    local buildlog
    buildlog=$(mktemp)
    if ! swift build -c release --package-path "$ROOT/scripts/bench/$2" >"$buildlog" 2>&1; then
        tail -40 "$buildlog" >&2
        rm -f "$buildlog"
        die "swift build of $2 failed"
    fi
    rm -f "$buildlog"
    FLOOR_BIN="$ROOT/scripts/bench/$2/.build/release/$2"
}

start_nginx() { # WORK ROOT PROBE [DIRECTIVES]
    local work=$1 root=$2 probe=$3 directives=${4:-} nginx user_line="" port _ try
    nginx=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
    [ -x "$nginx" ] || die "nginx is not installed"
    mkdir -p "$work/nginx/logs" "$work/nginx/tmp"
    # the master runs as whoever runs this; as root, keep the workers root too so they
    # can read the (0700) temp folder
    [ "$(id -u)" -ne 0 ] || user_line="user $(id -un) $(id -gn);"
    # a port found free can be taken before nginx binds it: then try another
    for try in 1 2 3; do
        port=$(free_port)
        cat >"$work/nginx/nginx.conf" <<CONF
$user_line
worker_processes 2;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 65s;
    keepalive_requests 100000;
    types { application/json json; image/jpeg jpg; }
    default_type application/octet-stream;
    client_body_temp_path $work/nginx/tmp/body;
    proxy_temp_path $work/nginx/tmp/proxy;
    fastcgi_temp_path $work/nginx/tmp/fastcgi;
    uwsgi_temp_path $work/nginx/tmp/uwsgi;
    scgi_temp_path $work/nginx/tmp/scgi;
    server {
        listen 127.0.0.1:$port;
        root $root;
        $directives
    }
}
CONF
        "$nginx" -p "$work/nginx" -c "$work/nginx/nginx.conf" -e "$work/nginx/logs/error.log" \
            >/dev/null 2>"$work/nginx/logs/stderr.log" &
        NGINX_PID=$!
        for _ in $(seq 1 50); do
            if curl -fsS -o /dev/null "http://127.0.0.1:$port/$probe" 2>/dev/null; then
                PORT=$port
                return 0
            fi
            kill -0 "$NGINX_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -TERM "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
        NGINX_PID=""
    done
    cat "$work/nginx/logs/"*.log >&2 || true
    die "nginx did not answer http://127.0.0.1:<port>/$probe (3 tries)"
}
