#!/usr/bin/env bash
# capacity.sh - vidload's own capacity: many concurrent sessions against nginx
# serving a materialized SD library from the page cache on loopback, with the
# default links (3.5/10 Mbit/s, 50 ms).  Reports vidload's and nginx's CPU.
#   vidload/bench/capacity.sh [RATE [DURATION [WORKDIR]]]     (defaults 60 100 /tmp/vidload-capacity)
# Needs `make` first; uses port 18410.  Results: WORKDIR/result.json.
set -euo pipefail
RATE=${1:-60}
DURATION=${2:-100}
WORK=${3:-/tmp/vidload-capacity}
PORT=18410
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$TOP/build/bin

mkdir -p "$WORK"
chmod 755 "$WORK"
if [ ! -f "$WORK/lib.lcvl" ]; then
	"$BIN/libception" mklib sd --count 100 --seed 1 -o "$WORK/lib.lcvl"
	"$BIN/vidload" --materialize "$WORK/www" --library "$WORK/lib.lcvl"
	chmod -R a+rX "$WORK/www"
fi
find "$WORK/www" -type f -exec cat {} + >/dev/null   # into the page cache

cat >"$WORK/nginx.conf" <<CONF
worker_processes 1;
worker_rlimit_nofile 20000;
daemon off;
pid $WORK/nginx.pid;
error_log $WORK/error.log;
events { worker_connections 16000; }
http {
  access_log off;
  sendfile on;
  keepalive_timeout 75s;
  server { listen 127.0.0.1:$PORT backlog=4096; root $WORK/www; }
}
CONF
nginx -c "$WORK/nginx.conf" &
NGINX=$!
trap 'kill $NGINX 2>/dev/null; wait $NGINX 2>/dev/null' EXIT
sleep 1
worker=$(pgrep -P $NGINX | head -1)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
t0=$(ticks "$worker")

echo "capacity: vidload --rate $RATE --duration $DURATION against nginx (1 worker, page cache)"
"$BIN/vidload" --url "http://127.0.0.1:$PORT/" --library "$WORK/lib.lcvl" --rate "$RATE" \
	--duration "$DURATION" --seed 1 --progress 10 --json "$WORK/result.json"
t1=$(ticks "$worker")
awk -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" -v d="$DURATION" \
	'BEGIN { printf "capacity: nginx worker CPU %.1f%% of one core\n", 100 * t / hz / d }'
