#!/usr/bin/env bash
# WebSocket benchmark: echo round trips through tokengate and through nginx (proxy_pass
# with the Upgrade headers) to the same C echo server (bench/websocket/ws_echo.c), driven
# by a C load client (bench/websocket/ws_load.c), alternating rounds, on 127.0.0.1 only.
# Two loads: 1 KB messages (messages/s; WS_CONNS connections, one message in flight each)
# and 64 KB messages (bytes/s; WS_BIG_CONNS connections, WS_WINDOW in flight each).
# Target: tokengate ≥ 0.9 × nginx on both. Run by `bench/run.sh websocket`.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-10}
WORKERS=${WORKERS:-$(nproc)}
PORT_BASE=${PORT_BASE:-18180}
WS_CONNS=${WS_CONNS:-64}
WS_BIG_CONNS=${WS_BIG_CONNS:-16}
WS_WINDOW=${WS_WINDOW:-4}
OUT=${OUT:-/tmp/tokengate-bench-websocket.json}
PORT_TOKENGATE=$PORT_BASE PORT_ECHO=$((PORT_BASE + 1)) PORT_NGINX=$((PORT_BASE + 2)) PORT_ADMIN=$((PORT_BASE + 3))

log() { echo "== $*" >&2; }
die() { echo "bench/websocket: $*" >&2; exit 1; }
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[[ -x $NGINX ]] || die "needs nginx (apt-get install nginx-light)"
command -v cc >/dev/null || die "needs a C compiler (apt-get install gcc) and libssl-dev"
if [[ -z "${TOKENGATE_BIN:-}" ]]; then
  log "building tokengate (release)"
  swift build -c release --product tokengate >&2
  TOKENGATE_BIN="$(swift build -c release --show-bin-path)/tokengate"
fi

WORK=$(mktemp -d /tmp/tokengate-bench-ws.XXXXXX)
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [[ -n ${KEEP_WORK:-} ]] || rm -rf "$WORK"
}
trap cleanup EXIT
render() {
  local src=$1 dest=$2 text kv
  text=$(<"$src")
  shift 2
  for kv in "$@"; do text=${text//@${kv%%=*}@/${kv#*=}}; done
  printf '%s\n' "$text" >"$dest"
}
wait_port() { local i; for i in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; die "nothing on port $1"; }

cc -O2 -o "$WORK/ws_echo" bench/websocket/ws_echo.c -lcrypto
cc -O2 -o "$WORK/ws_load" bench/websocket/ws_load.c
# The echo server gets one process per core, like the proxies' workers.
"$WORK/ws_echo" "$PORT_ECHO" "$WORKERS" & PIDS+=($!)
wait_port "$PORT_ECHO"
mkdir -p "$WORK/nginx"
user_line=""; [[ $(id -u) -ne 0 ]] || user_line="user root;"
render bench/nginx/websocket.conf.in "$WORK/nginx/nginx.conf" DIR="$WORK/nginx" PORT="$PORT_NGINX" UPSTREAM_PORT="$PORT_ECHO" \
  WORKERS="$WORKERS" USER_LINE="$user_line"
"$NGINX" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log" & NGINX_PID=$!; PIDS+=($NGINX_PID)
wait_port "$PORT_NGINX"
render bench/tokengate/websocket.yaml "$WORK/tokengate.yaml" PORT="$PORT_TOKENGATE" ADMIN_PORT="$PORT_ADMIN" \
  UPSTREAM_PORT="$PORT_ECHO" WORKERS="$WORKERS"
"$TOKENGATE_BIN" serve --config "$WORK/tokengate.yaml" >"$WORK/tokengate.log" 2>&1 & TG_PID=$!; PIDS+=($TG_PID)
wait_port "$PORT_TOKENGATE"
load=$(cut -d' ' -f1 /proc/loadavg)
log "load average $load (other work on the machine skews the figures)"

# CPU time (user + system, clock ticks) of a process, or of it and its children (nginx's
# workers): per message it is steadier than msg/s on a shared machine.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
cpu_ticks_tree() { local t=0 p; for p in $1 $(pgrep -P "$1"); do t=$((t + $(cpu_ticks "$p"))); done; echo "$t"; }
CLK_TCK=$(getconf CLK_TCK)
declare -A ports=([nginx]=$PORT_NGINX [tokengate]=$PORT_TOKENGATE)
: >"$WORK/runs.tsv"
for kind in small big; do
  if [[ $kind == small ]]; then args=("$WS_CONNS" 1024 1); else args=("$WS_BIG_CONNS" 65536 "$WS_WINDOW"); fi
  for target in nginx tokengate; do "$WORK/ws_load" "${ports[$target]}" /warmup "${args[@]}" 2 >/dev/null; done
  for round in $(seq "$ROUNDS"); do
    order=(nginx tokengate); (( round % 2 )) || order=(tokengate nginx)
    for target in "${order[@]}"; do
      log "websocket $kind: round $round/$ROUNDS: $target (${DURATION}s)"
      if [[ $target == nginx ]]; then ticks=$(cpu_ticks_tree "$NGINX_PID"); else ticks=$(cpu_ticks "$TG_PID"); fi
      result=$("$WORK/ws_load" "${ports[$target]}" /echo "${args[@]}" "$DURATION") || die "$target: the load client failed"
      if [[ $target == nginx ]]; then ticks=$(( $(cpu_ticks_tree "$NGINX_PID") - ticks )); else ticks=$(( $(cpu_ticks "$TG_PID") - ticks )); fi
      printf '%s\t%s\t%s\t%s\t%s\n' "$kind" "$target" "$round" "$result" "$((ticks * 1000000 / CLK_TCK))" >>"$WORK/runs.tsv"
    done
  done
done
tg_rss=$(awk '/^VmHWM:/ {print $2}' "/proc/$TG_PID/status")

python3 - "$WORK/runs.tsv" "$OUT" "$tg_rss" "$load" "$WORKERS" "$ROUNDS" "$DURATION" <<'PY'
import json, statistics, sys
runs, out, rss, load, workers, rounds, duration = sys.argv[1:]
data = {}
for line in open(runs):
    kind, target, rnd, result, cpu_us = line.rstrip("\n").split("\t")
    r = json.loads(result)
    r["cpu_us_per_msg"] = int(cpu_us) / max(r["msgs"], 1)
    data.setdefault(kind, {}).setdefault(target, []).append(r)
report = {"load_average_at_start": float(load), "workers": int(workers), "rounds": int(rounds), "duration_s": int(duration),
          "tokengate_peak_rss_kb": int(rss), "scenarios": {}}
print(f"{'scenario':<22}{'nginx':>16}{'tokengate':>16}{'ratio':>8}  target   CPU us/msg nginx, tokengate (ratio)")
for kind, metric, unit, label in (("small", "msgs_per_s", "msg/s", "1 KB echo"), ("big", "bytes_per_s", "MB/s", "64 KB echo")):
    med = {t: statistics.median(r[metric] for r in data[kind][t]) for t in ("nginx", "tokengate")}
    ratio = med["tokengate"] / med["nginx"]
    scale = 1e6 if unit == "MB/s" else 1
    cpu = {t: statistics.median(r["cpu_us_per_msg"] for r in data[kind][t]) for t in ("nginx", "tokengate")}
    print(f"{label + ' (' + unit + ')':<22}{med['nginx'] / scale:>16.1f}{med['tokengate'] / scale:>16.1f}{ratio:>8.2f}  ≥ 0.90 {'met' if ratio >= 0.9 else 'NOT met'}"
          f"   {cpu['nginx']:.2f}, {cpu['tokengate']:.2f} ({cpu['tokengate'] / cpu['nginx']:.2f})")
    report["scenarios"][kind] = {"metric": metric, "median": med, "ratio": ratio, "cpu_us_per_msg_median": cpu,
                                 "rounds": {t: [r[metric] for r in data[kind][t]] for t in ("nginx", "tokengate")},
                                 "cpu_us_per_msg": {t: [r["cpu_us_per_msg"] for r in data[kind][t]] for t in ("nginx", "tokengate")}}
print(f"tokengate peak RSS: {int(rss) / 1024:.1f} MB")
json.dump(report, open(out, "w"), indent=2)
print(f"results: {out}")
PY
kill -TERM "$TG_PID"; wait "$TG_PID" || die "tokengate did not exit 0 on SIGTERM"
