#!/usr/bin/env bash
# Slow clients against tokengate and nginx, each in front of the same app that serves CAP
# requests at a time (bench/slow/app.py), with the same timeouts, on 127.0.0.1 only.
# slowhttptest (Debian) opens CONNS connections at RATE/s for LENGTH s, as a slow reader
# (-X: tiny receive window, a few bytes read every few seconds) and as a slow body (-B: a
# POST whose body comes 10 bytes every 10 s); a prober (bench/slow/probe.py) asks for a page
# every 100 ms meanwhile. Prints per proxy and attack the prober's success, its longest
# outage, and the proxy's peak RSS per attack connection. Target: success within 5 points
# of nginx's, longest outage ≤ 2 s.
#
#   TOKENGATE_BIN=.build-release/release/tokengate bench/slow.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CONNS=${CONNS:-3000}
RATE=${RATE:-300}
LENGTH=${LENGTH:-30}
CAP=${CAP:-128}
SIZE=${SIZE:-262144}
WORKERS=${WORKERS:-$(nproc)}
PORT_BASE=${PORT_BASE:-18280}
APP=$PORT_BASE PORT_TG=$((PORT_BASE + 1)) PORT_NGINX=$((PORT_BASE + 2)) ADMIN=$((PORT_BASE + 3))
BIN=${TOKENGATE_BIN:-.build-release/release/tokengate}
command -v slowhttptest >/dev/null || { echo "needs slowhttptest (apt-get install slowhttptest)" >&2; exit 2; }
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
WORK=$(mktemp -d /tmp/tokengate-bench-slow.XXXXXX)
mkdir -p "$WORK/body" "$WORK/proxy"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    [[ -f $WORK/nginx.pid ]] && kill "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
    wait 2>/dev/null || true
}
trap cleanup EXIT
ulimit -n 65536 2>/dev/null || true

python3 bench/slow/app.py "$APP" "$CAP" "$SIZE" &
PIDS+=($!)
sub() { sed -e "s|@WORK@|$WORK|g" -e "s|@APP@|$APP|g" -e "s|@WORKERS@|$WORKERS|g" -e "s|@ADMIN@|$ADMIN|g" -e "s|@PORT@|$1|g" "$2"; }
sub "$PORT_NGINX" bench/slow/nginx.conf.in >"$WORK/nginx.conf"
sub "$PORT_TG" bench/slow/tokengate.yaml.in >"$WORK/tokengate.yaml"
"$NGINX" -c "$WORK/nginx.conf"
"$BIN" serve --config "$WORK/tokengate.yaml" >"$WORK/tokengate.log" 2>&1 &
PIDS+=($!)
TG_PID=$!
sleep 1

peak_rss() {  # the peak RSS (KB) of a set of processes, sampled every 100 ms until $1 exists
    local stop=$1; shift
    local peak=0
    while [[ ! -e $stop ]]; do
        local sum=0
        for pid in "$@"; do sum=$((sum + $(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0))); done
        ((sum > peak)) && peak=$sum
        sleep 0.1
    done
    echo "$peak"
}

run() {  # proxy port pids attack
    local name=$1 port=$2 attack=$3; shift 3
    local flags
    case $attack in
    slow-read) flags=(-X -w 512 -y 1024 -n 5 -z 32 -k 3 -u "http://127.0.0.1:$port/") ;;
    slow-body) flags=(-B -i 10 -s 8192 -x 10 -t POST -u "http://127.0.0.1:$port/") ;;
    esac
    local base
    base=$(for pid in "$@"; do awk '/VmRSS/ {print $2}' "/proc/$pid/status"; done | awk '{s += $1} END {print s + 0}')
    rm -f "$WORK/stop"
    peak_rss "$WORK/stop" "$@" >"$WORK/peak" &
    local sampler=$!
    slowhttptest -c "$CONNS" -r "$RATE" -l "$LENGTH" -p 3 "${flags[@]}" >"$WORK/$name-$attack.slow" 2>&1 &
    local attacker=$!
    sleep 2
    local probe
    probe=$(python3 bench/slow/probe.py "http://127.0.0.1:$port/" $((LENGTH - 4)))
    wait "$attacker" || true
    touch "$WORK/stop"
    wait "$sampler"
    local peak
    peak=$(cat "$WORK/peak")
    echo "{\"proxy\": \"$name\", \"attack\": \"$attack\", \"probe\": $probe, \"peak_rss_kb\": $peak, \"base_rss_kb\": $base, \"per_connection_kb\": $(((peak - base) / CONNS))}"
    sleep 5
}

for attack in slow-read slow-body; do
    run tokengate "$PORT_TG" "$attack" "$TG_PID"
    # shellcheck disable=SC2086
    run nginx "$PORT_NGINX" "$attack" $(pgrep -P "$(cat "$WORK/nginx.pid")")
done
