# The benchmark workload's static server, sourced by bench-state.sh, bench-columns.sh and
# bench-explode.sh: nginx as scripts/bench.sh runs it (2 workers, sendfile, keep-alive),
# serving a folder on a free loopback port.
#
#   . "$ROOT/scripts/bench/nginx.sh"
#   start_nginx "$WORK" "$WORK/www" pages/1.json     # sets PORT and NGINX_PID
#
# The caller stops it (kill -TERM "$NGINX_PID") and defines die.

start_nginx() { # WORK ROOT PROBE: nginx's files under WORK/nginx, serving ROOT; waits until PROBE answers
    local work=$1 root=$2 probe=$3 nginx user_line=""
    nginx=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
    [ -x "$nginx" ] || die "nginx is not installed"
    PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    mkdir -p "$work/nginx/logs" "$work/nginx/tmp"
    [ "$(id -u)" -ne 0 ] || user_line="user $(id -un) $(id -gn);"
    cat >"$work/nginx/nginx.conf" <<EOF
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
    types { application/json json; }
    default_type application/octet-stream;
    client_body_temp_path $work/nginx/tmp/body;
    proxy_temp_path $work/nginx/tmp/proxy;
    fastcgi_temp_path $work/nginx/tmp/fastcgi;
    uwsgi_temp_path $work/nginx/tmp/uwsgi;
    scgi_temp_path $work/nginx/tmp/scgi;
    server {
        listen 127.0.0.1:$PORT;
        root $root;
    }
}
EOF
    "$nginx" -p "$work/nginx" -c "$work/nginx/nginx.conf" -e "$work/nginx/logs/error.log" >/dev/null 2>&1 &
    NGINX_PID=$!
    local _
    for _ in $(seq 1 50); do
        curl -fsS -o /dev/null "http://127.0.0.1:$PORT/$probe" 2>/dev/null && return 0
        kill -0 "$NGINX_PID" 2>/dev/null || die "nginx did not start"
        sleep 0.1
    done
    die "nginx did not answer http://127.0.0.1:$PORT/$probe"
}
