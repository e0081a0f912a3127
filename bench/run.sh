#!/usr/bin/env bash
# tokengate benchmark: wrk on 127.0.0.1 against tokengate and against an nginx reverse
# proxy (the baseline), both in front of the same nginx upstream, alternating rounds.
# A benchmark, not a test: it reports figures and the issue's targets, and exits 0 unless
# something failed to run.
#
# usage: bench/run.sh [SCENARIO...]        (default: every scenario defined at the bottom)
# env:   ROUNDS=5 DURATION=10 (s per wrk run) WARMUP=3 (s) CONNECTIONS=64 THREADS=2
#        WORKERS=$(nproc) (nginx proxy worker_processes = tokengate workers)
#        TOKENGATE_BIN=path (skip the build)  OUT=/tmp/tokengate-bench.json
#        PORT_BASE=18180 (uses PORT_BASE..PORT_BASE+3 on 127.0.0.1)  KEEP_WORK=1 (keep temp dir)
#        TOKENGATE_ENV="K=V ..." (environment for tokengate only, e.g. to try a libevent or
#        allocator setting)  PERF_OUT=FILE (perf record -g tokengate's first round into FILE)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-3}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
WORKERS=${WORKERS:-$(nproc)}
OUT=${OUT:-/tmp/tokengate-bench.json}
PORT_BASE=${PORT_BASE:-18180}
PORT_TOKENGATE=$PORT_BASE
PORT_UPSTREAM=$((PORT_BASE + 1))
PORT_NGINX=$((PORT_BASE + 2))
PORT_ADMIN=$((PORT_BASE + 3))

log() { echo "== $*" >&2; }
die() { echo "bench: $*" >&2; exit 1; }

# --- tools ---------------------------------------------------------------------------
install_missing() {
  local missing=() cmd pkg
  for pair in nginx:nginx-light wrk:wrk python3:python3 curl:curl pgrep:procps; do
    cmd=${pair%%:*} pkg=${pair#*:}
    command -v "$cmd" >/dev/null || [[ -x /usr/sbin/$cmd ]] || missing+=("$pkg")
  done
  if (( ${#missing[@]} )); then
    log "installing ${missing[*]}"
    local sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  NGINX=$(command -v nginx || echo /usr/sbin/nginx)
}
install_missing

if [[ -z "${TOKENGATE_BIN:-}" ]]; then
  scripts/setup.sh
  log "building tokengate (release)"
  swift build -c release --product tokengate >&2
  TOKENGATE_BIN="$(swift build -c release --show-bin-path)/tokengate"
fi
[[ -x "$TOKENGATE_BIN" ]] || die "TOKENGATE_BIN=$TOKENGATE_BIN is not an executable"

# --- processes: every one we start is recorded and stopped at exit ---------------------
WORK=$(mktemp -d /tmp/tokengate-bench.XXXXXX)
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [[ -n "${KEEP_WORK:-}" ]]; then log "work directory kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

forget_pid() {
  local keep=() p
  for p in "${PIDS[@]}"; do [[ $p == "$1" ]] || keep+=("$p"); done
  PIDS=("${keep[@]}")
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for p in $PORT_TOKENGATE $PORT_UPSTREAM $PORT_NGINX $PORT_ADMIN; do
  port_free "$p" || die "127.0.0.1:$p is in use; set PORT_BASE to use other ports"
done

# render TEMPLATE DEST KEY=VALUE... : replaces @KEY@ with VALUE.
render() {
  local src=$1 dst=$2 kv script=()
  shift 2
  for kv in "$@"; do script+=(-e "s|@${kv%%=*}@|${kv#*=}|g"); done
  sed "${script[@]}" "$src" >"$dst"
  ! grep -v '^ *#' "$dst" | grep -q '@[A-Z_]*@' || die "$src: unreplaced placeholder in $dst"
}

wait_http() { # URL PID: until URL answers 2xx, or the process died, or 10 s
  local i
  for i in $(seq 100); do
    curl -fs -o /dev/null "$1" && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# start_nginx NAME TEMPLATE PORT : runs nginx in the foreground from $WORK/NAME; sets NGINX_PID.
start_nginx() {
  local name=$1 dir=$WORK/$1 user_line=""
  mkdir -p "$dir"
  [[ $(id -u) -ne 0 ]] || user_line="user root;"  # workers would otherwise drop to nobody
  render "$ROOT/$2" "$dir/nginx.conf" DIR="$dir" PORT="$3" UPSTREAM_PORT="$PORT_UPSTREAM" \
    WORKERS="$WORKERS" USER_LINE="$user_line"
  "$NGINX" -q -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" -t || die "$name: nginx rejected $dir/nginx.conf"
  "$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" &
  NGINX_PID=$!
  PIDS+=("$NGINX_PID")
  wait_http "http://127.0.0.1:$3/" "$NGINX_PID" || { cat "$dir/error.log" >&2; die "$name: nginx did not start"; }
}

# Peak RSS (VmHWM, kB) of a process, or summed over a process and its children.
vmhwm() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }
vmhwm_tree() {
  local total=0 pid
  for pid in "$1" $(pgrep -P "$1"); do total=$((total + $(vmhwm "$pid"))); done
  echo "$total"
}

log "starting the upstream (nginx, 1 worker) on 127.0.0.1:$PORT_UPSTREAM"
start_nginx upstream bench/nginx/upstream.conf.in "$PORT_UPSTREAM"
log "starting the baseline (nginx reverse proxy, $WORKERS workers) on 127.0.0.1:$PORT_NGINX"
start_nginx baseline bench/nginx/proxy.conf.in "$PORT_NGINX"
BASELINE_PID=$NGINX_PID

# run_wrk SECONDS URL OUTFILE [WRK_ARGS...]
run_wrk() {
  local secs=$1 url=$2 out=$3
  shift 3
  wrk -t"$THREADS" -c"$CONNECTIONS" -d"${secs}s" --latency "$@" "$url" >"$out" 2>&1 \
    || { cat "$out" >&2; die "wrk failed against $url"; }
  if grep -q "Non-2xx or 3xx responses" "$out"; then
    cat "$out" >&2; die "$url answered non-2xx responses (see above); is the scenario set up right?"
  fi
}

# Every process here shares the same cores: anything else running skews the figures.
read -r load1 _ </proc/loadavg
if awk -v l="$load1" 'BEGIN { exit !(l > 0.5) }'; then
  log "warning: 1-minute load average is $load1; other work on this machine will skew the figures"
fi

SELECTED=("$@")
RAN=()
: >"$WORK/runs.tsv"
: >"$WORK/rss.tsv"
: >"$WORK/wrkargs.tsv"

# scenario NAME TOKENGATE_CONFIG_TEMPLATE [WRK_ARGS...]
#   Starts a fresh tokengate on the rendered config (placeholders @PORT@ @ADMIN_PORT@
#   @UPSTREAM_PORT@ @WORKERS@), warms up both proxies, then runs wrk against the nginx
#   baseline and tokengate alternately for ROUNDS rounds with the same WRK_ARGS (e.g.
#   `-s bench/lua/bearer.lua` to add headers or set wrk.path), records tokengate's peak
#   RSS and stops it (SIGTERM must exit 0).
scenario() {
  local name=$1 template=$2
  shift 2
  if (( ${#SELECTED[@]} )) && [[ " ${SELECTED[*]} " != *" $name "* ]]; then return 0; fi
  RAN+=("$name")
  local dir=$WORK/scenario-$name
  mkdir -p "$dir"
  render "$ROOT/$template" "$dir/tokengate.yaml" PORT="$PORT_TOKENGATE" ADMIN_PORT="$PORT_ADMIN" \
    UPSTREAM_PORT="$PORT_UPSTREAM" WORKERS="$WORKERS" ${SCENARIO_VARS:-}
  "$TOKENGATE_BIN" check-config "$dir/tokengate.yaml" >&2 || die "scenario $name: invalid tokengate config"
  log "scenario $name: starting tokengate ($WORKERS workers) on 127.0.0.1:$PORT_TOKENGATE"
  # shellcheck disable=SC2086 # TOKENGATE_ENV is a list of K=V words
  env ${TOKENGATE_ENV:-} "$TOKENGATE_BIN" serve --config "$dir/tokengate.yaml" >"$dir/tokengate.log" 2>&1 &
  local tg=$!
  PIDS+=("$tg")
  wait_http "http://127.0.0.1:$PORT_ADMIN/readyz" "$tg" || { cat "$dir/tokengate.log" >&2; die "scenario $name: tokengate not ready"; }

  local nginx_url="http://127.0.0.1:$PORT_NGINX/" tg_url="http://127.0.0.1:$PORT_TOKENGATE/"
  printf '%s\t%s\n' "$name" "$*" >>"$WORK/wrkargs.tsv"
  log "scenario $name: warm-up (${WARMUP}s each)"
  run_wrk "$WARMUP" "$nginx_url" "$dir/warmup-nginx.txt" "$@"
  run_wrk "$WARMUP" "$tg_url" "$dir/warmup-tokengate.txt" "$@"

  local round order target url
  for round in $(seq "$ROUNDS"); do
    # Alternate which proxy goes first, so neither always runs on a warmer/cooler machine.
    if (( round % 2 )); then order="nginx tokengate"; else order="tokengate nginx"; fi
    for target in $order; do
      if [[ $target == nginx ]]; then url=$nginx_url; else url=$tg_url; fi
      log "scenario $name: round $round/$ROUNDS: $target (${DURATION}s)"
      local perf_pid=""
      if [[ -n "${PERF_OUT:-}" && $target == tokengate && $round == 1 ]]; then
        command -v perf >/dev/null || die "PERF_OUT needs perf (apt-get install linux-perf)"
        perf record -q -F 999 -g -p "$tg" -o "$PERF_OUT" -- sleep "$DURATION" >/dev/null 2>&1 &
        perf_pid=$!
      fi
      run_wrk "$DURATION" "$url" "$dir/$target-$round.txt" "$@"
      if [[ -n $perf_pid ]]; then
        wait "$perf_pid" || true
        log "perf profile of tokengate: $PERF_OUT (perf report -i $PERF_OUT --no-children)"
      fi
      printf '%s\t%s\t%s\t%s\n' "$name" "$target" "$round" "$dir/$target-$round.txt" >>"$WORK/runs.tsv"
    done
  done

  printf '%s\t%s\t%s\n' "$name" tokengate "$(vmhwm "$tg")" >>"$WORK/rss.tsv"
  printf '%s\t%s\t%s\n' "$name" nginx "$(vmhwm_tree "$BASELINE_PID")" >>"$WORK/rss.tsv"
  kill -TERM "$tg"
  local rc=0
  wait "$tg" || rc=$?
  forget_pid "$tg"
  (( rc == 0 )) || { tail -20 "$dir/tokengate.log" >&2; die "scenario $name: tokengate exited $rc on SIGTERM"; }
}

# --- scenarios -------------------------------------------------------------------------
# One line each: scenario NAME TOKENGATE_CONFIG_TEMPLATE [WRK_ARGS...]
# (later: dpop / login routes, with wrk Lua scripts under bench/lua/ adding headers)
scenario none bench/tokengate/none.yaml

# bearer_scenario NAME ALG CACHE_ENTRIES: a key of ALG, a token signed with it, the route
# validating it (with the per-worker validation cache, or with it off: 0).
bearer_scenario() {
  if (( ${#SELECTED[@]} )) && [[ " ${SELECTED[*]} " != *" $1 "* ]]; then return 0; fi
  local keys=$WORK/keys-$2
  mkdir -p "$keys"
  [[ -f $keys/key.jwk ]] || "$TOKENGATE_BIN" keys generate --alg "$2" --kid "bench-$2" --out "$keys/key.jwk" >"$keys/jwks.json"
  BENCH_TOKEN=$("$TOKENGATE_BIN" jwt sign --key "$keys/key.jwk" --typ at+jwt --exp-in 86400 \
    --claims '{"iss":"https://bench.local","aud":"bench-api","sub":"bench-user","scope":"bench","email":"b@example.com"}')
  export BENCH_TOKEN
  SCENARIO_VARS="JWKS=$keys/jwks.json CACHE_ENTRIES=$3" scenario "$1" bench/tokengate/bearer.yaml -s "$ROOT/bench/lua/bearer.lua"
}
bearer_scenario bearer-rs256 RS256 10000
bearer_scenario bearer-es256 ES256 10000
bearer_scenario bearer-rs256-nocache RS256 0
bearer_scenario bearer-es256-nocache ES256 0

(( ${#RAN[@]} )) || die "no scenario named ${SELECTED[*]}"

# --- report ----------------------------------------------------------------------------
ROUNDS=$ROUNDS DURATION=$DURATION CONNECTIONS=$CONNECTIONS THREADS=$THREADS WORKERS=$WORKERS \
NGINX_VERSION="$("$NGINX" -v 2>&1 | sed 's/^nginx version: //')" \
WRK_VERSION="$(wrk --version 2>&1 | head -1 | awk '{print $2}')" \
TOKENGATE_VERSION="$("$TOKENGATE_BIN" version 2>&1 | head -1)" \
TOKENGATE_ENV="${TOKENGATE_ENV:-}" \
GIT_REV="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo -dirty)" \
python3 - "$WORK" <<'PY'
import json, os, platform, sys, time
work = sys.argv[1]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "unknown")
wrk_args = dict(l.rstrip("\n").split("\t", 1) for l in open(f"{work}/wrkargs.tsv"))
meta = {
    "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    "rounds": int(os.environ["ROUNDS"]), "duration_s": int(os.environ["DURATION"]),
    "connections": int(os.environ["CONNECTIONS"]), "threads": int(os.environ["THREADS"]),
    "workers": int(os.environ["WORKERS"]), "cpus": os.cpu_count(), "cpu_model": cpu,
    "kernel": platform.release(), "nginx": os.environ["NGINX_VERSION"],
    "wrk": os.environ["WRK_VERSION"], "tokengate": os.environ["TOKENGATE_VERSION"],
    "git": os.environ["GIT_REV"], "tokengate_env": os.environ["TOKENGATE_ENV"],
    "wrk_args": wrk_args,
}
json.dump(meta, open(f"{work}/meta.json", "w"), indent=2)
PY
python3 "$ROOT/bench/report.py" "$WORK" "$OUT"
