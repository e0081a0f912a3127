#!/usr/bin/env bash
# tokengate benchmark: wrk on 127.0.0.1 against tokengate and against an nginx reverse
# proxy (the baseline), both in front of the same nginx upstream, alternating rounds.
# A benchmark, not a test: it reports figures and the targets, and exits 0 unless
# something failed to run.
#
# usage: bench/run.sh [SCENARIO...]        (default: every scenario defined at the bottom
#                                          but floor-* and routes-*; `routes`: routes-1/1000/10000)
# env:   ROUNDS=5 DURATION=10 (s per wrk run) WARMUP=3 (s) CONNECTIONS=64 THREADS=2
#        WORKERS=$(nproc) (nginx proxy worker_processes = tokengate workers)
#        TOKENGATE_BIN=path (skip the build)  OUT=/tmp/tokengate-bench.json
#        PORT_BASE=18180 (uses PORT_BASE..PORT_BASE+12 on 127.0.0.1)  KEEP_WORK=1 (keep temp dir)
#        MOD_AUTH_OPENIDC=1 (0: no Apache mod_auth_openidc peer in the RS256 bearer scenarios)
#        TOKENGATE_ENV="K=V ..." (environment for tokengate only, e.g. to try a libevent or
#        allocator setting)  PERF_OUT=FILE (perf record -g tokengate's first round into FILE)
#        FLOOR_BIN=path (the floor-* scenarios' binary, built with
#        bench/experiments/verify-floor.patch; default TOKENGATE_BIN)
#        PACED=N (req/s): a fixed offered rate instead of wrk's fastest, N requests a second
#        over all connections (lua/paced.lua); the report then compares each scenario's CPU
#        per request with `none`'s at that rate (run `none` too) and with the cost of its
#        signature check (`openssl speed`, same sitting). For the crypto-bound routes.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
# The WebSocket scenario has its own harness (a C echo server and load client, not wrk).
if [[ " $* " == *" websocket "* ]]; then exec "$ROOT/bench/websocket.sh"; fi
# So have the HTTP/2 loads (h2load; bench/h2.sh).
if [[ " $* " == *" h2 "* ]]; then exec "$ROOT/bench/h2.sh"; fi

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-3}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
export WRK_THREADS=$THREADS  # for bench/lua/dpop.lua, which splits its proofs between threads
WORKERS=${WORKERS:-$(nproc)}
OUT=${OUT:-/tmp/tokengate-bench.json}
PORT_BASE=${PORT_BASE:-18180}
PORT_TOKENGATE=$PORT_BASE
PORT_UPSTREAM=$((PORT_BASE + 1))
PORT_NGINX=$((PORT_BASE + 2))
PORT_ADMIN=$((PORT_BASE + 3))
PORT_PEER=$((PORT_BASE + 4))   # Apache httpd + mod_auth_openidc (the bearer scenarios' peer)
PORT_JWKS=$((PORT_BASE + 5))   # nginx serving the JWKS over TLS, for that peer
MOD_AUTH_OPENIDC=${MOD_AUTH_OPENIDC:-1}

log() { echo "== $*" >&2; }
die() { echo "bench: $*" >&2; exit 1; }

# --- tools ---------------------------------------------------------------------------
install_missing() {
  local missing=() cmd pkg
  # strace: system calls per proxied request, for both proxies (SYSCALLS=0 skips it).
  local pairs=(nginx:nginx-light wrk:wrk python3:python3 curl:curl pgrep:procps strace:strace)
  # The mod_auth_openidc peer: Apache httpd (mpm_event, mod_proxy_http) and Debian's module;
  # openssl makes the throwaway CA for the TLS JWKS endpoint it insists on.
  (( MOD_AUTH_OPENIDC )) && pairs+=(apache2:apache2 openssl:openssl
    /usr/lib/apache2/modules/mod_auth_openidc.so:libapache2-mod-auth-openidc)
  for pair in "${pairs[@]}"; do
    cmd=${pair%%:*} pkg=${pair#*:}
    if [[ $cmd == /* ]]; then [[ -e $cmd ]] || missing+=("$pkg"); continue; fi
    command -v "$cmd" >/dev/null || [[ -x /usr/sbin/$cmd ]] || missing+=("$pkg")
  done
  if (( ${#missing[@]} )); then
    log "installing ${missing[*]}"
    local sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
    $sudo apt-get update -qq
    # (Debian would start apache2 as a system service where policy-rc.d allows it; this
    # harness runs its own Apache in the foreground and never uses that service.)
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  NGINX=$(command -v nginx || echo /usr/sbin/nginx)
  APACHE=$(command -v apache2 || echo /usr/sbin/apache2)
}
install_missing

if [[ -z "${TOKENGATE_BIN:-}" ]]; then
  scripts/setup.sh
  # The binary the container image ships (scripts/image.sh builds it the same way, into the
  # same scratch path): the Swift runtime linked in, so its calls skip the PLT and its
  # libraries keep no pages of their own resident (about 1-2% of CPU and 5 MB of RSS against
  # the shared-library build; TOKENGATE_BIN=.build/release/tokengate measures that one).
  log "building tokengate (release, --static-swift-stdlib, as in the image)"
  scripts/build-release.sh >&2
  TOKENGATE_BIN="$PWD/.build-release/release/tokengate"
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
for p in $PORT_TOKENGATE $PORT_UPSTREAM $PORT_NGINX $PORT_ADMIN $PORT_PEER $PORT_JWKS; do
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

wait_http() { # URL PID [CURL_ARGS...]: until URL answers 2xx, or the process died, or 10 s
  local i
  for i in $(seq 500); do
    curl -fs -o /dev/null "${@:3}" "$1" && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.02
  done
  return 1
}

# start_nginx NAME TEMPLATE PORT [READY_URL [CURL_ARGS...]] : runs nginx in the foreground
# from $WORK/NAME; sets NGINX_PID.
start_nginx() {
  local name=$1 dir=$WORK/$1 template=$2 user_line=""
  [[ $template == /* ]] || template=$ROOT/$template
  mkdir -p "$dir"
  [[ $(id -u) -ne 0 ]] || user_line="user root;"  # workers would otherwise drop to nobody
  render "$template" "$dir/nginx.conf" DIR="$dir" PORT="$3" UPSTREAM_PORT="$PORT_UPSTREAM" \
    WORKERS="$WORKERS" USER_LINE="$user_line" TOKENGATE_PORT="$PORT_TOKENGATE" LOG_OPTIONS="${NGINX_LOG_OPTIONS:-}"
  "$NGINX" -q -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" -t || die "$name: nginx rejected $dir/nginx.conf"
  "$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" &
  NGINX_PID=$!
  PIDS+=("$NGINX_PID")
  wait_http "${4:-http://127.0.0.1:$3/}" "$NGINX_PID" "${@:5}" || { cat "$dir/error.log" >&2; die "$name: nginx did not start"; }
}

# Peak RSS (VmHWM, kB) of a process, or summed over a process and its children.
vmhwm() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }
vmhwm_tree() {
  local total=0 pid
  for pid in "$1" $(pgrep -P "$1"); do total=$((total + $(vmhwm "$pid"))); done
  echo "$total"
}

# http_status URL [CURL_ARGS...]: the status code of one GET (000: no answer).
http_status() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "${@:2}" "$1" || true; }

# expect_status WHAT WANT URL [CURL_ARGS...]: dies loudly unless URL answers WANT.
expect_status() {
  local got
  got=$(http_status "$3" "${@:4}")
  [[ $got == "$2" ]] || die "$1: expected HTTP $2, got $got from $3"
  log "  ok: $1 -> $got"
}

# check_bearer NAME URL KEYS_DIR SCOPE_STATUS: before measuring a bearer route, make sure
# NAME really validates the token: no token, a token with a broken signature, a validly
# signed token with the wrong issuer or audience must get 401, one without the required
# scope SCOPE_STATUS (tokengate: 403 insufficient_scope, RFC 6750; mod_auth_openidc: 401),
# and the scenario's BENCH_TOKEN 200.
check_bearer() {
  local name=$1 url=$2 keys=$3 scope_status=$4 tok sig bad claim
  log "$name: checking that it validates the token before measuring"
  tok=$BENCH_TOKEN sig=${BENCH_TOKEN##*.}
  if [[ ${sig:0:8} == AAAAAAAA ]]; then bad=BBBBBBBB; else bad=AAAAAAAA; fi
  expect_status "$name: no token" 401 "$url"
  expect_status "$name: broken signature" 401 "$url" -H "Authorization: Bearer ${tok%.*}.$bad${sig:8}"
  for claim in '"iss":"https://evil.example","aud":"bench-api","scope":"bench"' \
               '"iss":"https://bench.local","aud":"other-api","scope":"bench"' \
               '"iss":"https://bench.local","aud":"bench-api","scope":"other"'; do
    tok=$("$TOKENGATE_BIN" jwt sign --key "$keys/key.jwk" --typ at+jwt --exp-in 600 \
      --claims "{$claim,\"sub\":\"bench-user\",\"client_id\":\"bench\"}")
    local want=401
    [[ $claim == *'"scope":"other"'* ]] && want=$scope_status
    expect_status "$name: token with {$claim}" "$want" "$url" -H "Authorization: Bearer $tok"
  done
  expect_status "$name: the scenario's token" 200 "$url" -H "Authorization: Bearer $BENCH_TOKEN"
}

# start_mod_auth_openidc KEYS_DIR: once per run, the mod_auth_openidc peer: nginx serving
# KEYS_DIR/jwks.json over TLS (cert for 127.0.0.1 from a throwaway CA made here), and
# Apache httpd (mpm_event) + mod_auth_openidc in the foreground, trusting that CA,
# proxying to the upstream. Sets PEER_PID.
PEER_PID=""
start_mod_auth_openidc() {
  [[ -z $PEER_PID ]] || return 0
  local keys=$1 tls=$WORK/jwks-tls dir=$WORK/mod_auth_openidc user_line="" group_line="" i
  mkdir -p "$tls" "$dir/run"
  log "mod_auth_openidc peer: throwaway CA and a certificate for 127.0.0.1 in $tls"
  {
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tls/ca.key" -out "$tls/ca.pem" -days 2 \
      -subj "/CN=tokengate bench throwaway CA" &&
    openssl req -newkey rsa:2048 -nodes -keyout "$tls/server.key" -out "$tls/server.csr" \
      -subj "/CN=127.0.0.1" &&
    printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$tls/ext.cnf" &&
    openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial \
      -days 2 -extfile "$tls/ext.cnf" -out "$tls/server.pem"
  } >"$tls/openssl.log" 2>&1 || { cat "$tls/openssl.log" >&2; die "mod_auth_openidc peer: openssl failed"; }
  cp "$keys/jwks.json" "$tls/jwks.json"
  log "mod_auth_openidc peer: starting the JWKS server (nginx, TLS) on 127.0.0.1:$PORT_JWKS"
  start_nginx jwks-tls bench/nginx/jwks-tls.conf.in "$PORT_JWKS" \
    "https://127.0.0.1:$PORT_JWKS/jwks.json" --cacert "$tls/ca.pem"

  cp "$tls/ca.pem" "$dir/ca.pem"
  if [[ $(id -u) -eq 0 ]]; then
    # Apache will not serve as root: its children run as www-data, and read ca.pem (and
    # open the mutex files in run/) when they fetch the keys.
    user_line="User www-data" group_line="Group www-data"
    chmod 711 "$WORK"; chmod 755 "$dir"; chmod 644 "$dir/ca.pem"; chown www-data: "$dir/run"
  fi
  render "$ROOT/bench/apache/httpd.conf.in" "$dir/httpd.conf" DIR="$dir" PORT="$PORT_PEER" \
    UPSTREAM_PORT="$PORT_UPSTREAM" JWKS_PORT="$PORT_JWKS" USER_LINE="$user_line" GROUP_LINE="$group_line"
  "$APACHE" -d "$dir" -f "$dir/httpd.conf" -t >"$dir/configtest.log" 2>&1 \
    || { cat "$dir/configtest.log" >&2; die "mod_auth_openidc peer: apache2 rejected $dir/httpd.conf"; }
  log "mod_auth_openidc peer: starting Apache httpd (mpm_event, 2 x 128 threads) on 127.0.0.1:$PORT_PEER"
  "$APACHE" -d "$dir" -f "$dir/httpd.conf" -DFOREGROUND >"$dir/stdout.log" 2>&1 &
  PEER_PID=$!
  PIDS+=("$PEER_PID")
  for i in $(seq 100); do  # up when it answers at all (401: no token)
    [[ $(http_status "http://127.0.0.1:$PORT_PEER/") == 000 ]] || return 0
    kill -0 "$PEER_PID" 2>/dev/null || break
    sleep 0.1
  done
  cat "$dir/stdout.log" "$dir/error.log" >&2 2>/dev/null || true
  die "mod_auth_openidc peer: Apache did not start"
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
  if [[ -n ${PACED:-} ]]; then
    # A fixed offered rate: the scenario's script (if any) wrapped by lua/paced.lua.
    local args=() inner=""
    while (( $# )); do
      if [[ $1 == -s ]]; then inner=$2; shift 2; else args+=("$1"); shift; fi
    done
    [[ -z $inner || $inner == /* ]] || inner=$ROOT/$inner
    set -- "${args[@]}" -s "$ROOT/bench/lua/paced.lua"
    export PACED_INNER=$inner
    PACED_INTERVAL_MS=$(awk -v c="$CONNECTIONS" -v r="$PACED" 'BEGIN { printf "%.4f", c * 1000 / r }')
    export PACED_INTERVAL_MS
  fi
  wrk -t"$THREADS" -c"$CONNECTIONS" -d"${secs}s" --latency "$@" "$url" >"$out" 2>&1 \
    || { cat "$out" >&2; die "wrk failed against $url"; }
  if [[ -z ${ALLOW_NON_2XX:-} || $url != *":$PORT_TOKENGATE/"* ]] && grep -q "Non-2xx or 3xx responses" "$out"; then
    cat "$out" >&2; die "$url answered non-2xx responses (see above); is the scenario set up right?"
  fi
}

# Every process here shares the same cores: anything else running skews the figures.
read -r load1 _ </proc/loadavg
if awk -v l="$load1" 'BEGIN { exit !(l > 0.5) }'; then
  log "warning: 1-minute load average is $load1; other work on this machine will skew the figures"
fi

SELECTED=("$@")
[[ " $* " != *" routes "* ]] || SELECTED+=(routes-1 routes-1000 routes-10000)
RAN=()
: >"$WORK/runs.tsv"
: >"$WORK/rss.tsv"
: >"$WORK/wrkargs.tsv"
: >"$WORK/kinds.tsv"
: >"$WORK/cpu.tsv"
: >"$WORK/cpu-nginx.tsv"
: >"$WORK/syscalls.tsv"
: >"$WORK/store.tsv"
: >"$WORK/callback.tsv"
: >"$WORK/ready.tsv"
: >"$WORK/reload.tsv"

# cpu_ticks PID: user + system CPU time of a process so far, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# cpu_ticks_tree PID: the same, summed over a process and its children (nginx's workers).
cpu_ticks_tree() {
  local total=0 pid
  for pid in "$1" $(pgrep -P "$1"); do total=$((total + $(cpu_ticks "$pid"))); done
  echo "$total"
}
# user_ticks PID / user_ticks_tree PID: the user-space part alone, so the report can tell the
# proxy's own code from the kernel's TCP and scheduling work it causes.
user_ticks() { awk '{ print $14 }' "/proc/$1/stat"; }
user_ticks_tree() {
  local total=0 pid
  for pid in "$1" $(pgrep -P "$1"); do total=$((total + $(user_ticks "$pid"))); done
  echo "$total"
}

# syscalls_per_request NAME TARGET URL PIDS [WRK_ARGS...]: strace -c -f on the target's
# processes (every thread) while wrk sends keep-alive requests for 3 s; records the
# system calls counted and the requests wrk completed (their ratio in report.py).
SYSCALLS=${SYSCALLS:-1}
syscalls_per_request() {
  local name=$1 target=$2 url=$3 pids=$4 dir=$WORK/scenario-$1 args=() pid
  shift 4
  for pid in $pids; do args+=(-p "$pid"); done
  strace -c -f -q -o "$dir/strace-$target.txt" "${args[@]}" &
  local strace_pid=$!
  sleep 0.5
  wrk -t1 -c8 -d3s "$@" "$url" >"$dir/strace-wrk-$target.txt" 2>&1 || true
  kill -INT "$strace_pid"; wait "$strace_pid" || true
  local calls requests
  calls=$(awk '$NF == "total" { print $4 }' "$dir/strace-$target.txt")
  requests=$(awk '/requests in/ { print $1 }' "$dir/strace-wrk-$target.txt")
  printf '%s\t%s\t%s\t%s\n' "$name" "$target" "${calls:-0}" "${requests:-0}" >>"$WORK/syscalls.tsv"
}
CLK_TCK=$(getconf CLK_TCK)

# start_tokengate NAME DIR: a fresh tokengate on DIR/tokengate.yaml (after RESET_STORE, a
# command that empties the scenario's shared store, if set); sets TG_PID, and TG_READY_MS
# (start to /readyz answering, polled every 20 ms).
start_tokengate() {
  local name=$1 dir=$2 t0
  [[ -z ${RESET_STORE:-} ]] || eval "$RESET_STORE" >/dev/null || die "scenario $name: RESET_STORE failed"
  # TG_STDOUT_PIPE=1: standard output is a pipe that nobody reads (a FIFO held open by a
  # process that never reads it); standard error still goes to the log.
  if [[ -n ${TG_STDOUT_PIPE:-} ]]; then
    [[ -p $dir/stdout.fifo ]] || mkfifo "$dir/stdout.fifo"
    sleep 100000 <"$dir/stdout.fifo" &
    PIDS+=("$!")
    # shellcheck disable=SC2086 # TOKENGATE_ENV is a list of K=V words
    env ${TOKENGATE_ENV:-} "$TOKENGATE_BIN" serve --config "$dir/tokengate.yaml" >"$dir/stdout.fifo" 2>>"$dir/tokengate.log" &
  else
    # shellcheck disable=SC2086 # TOKENGATE_ENV is a list of K=V words
    env ${TOKENGATE_ENV:-} "$TOKENGATE_BIN" serve --config "$dir/tokengate.yaml" >>"$dir/tokengate.log" 2>&1 &
  fi
  TG_PID=$!
  t0=$EPOCHREALTIME
  PIDS+=("$TG_PID")
  wait_http "http://127.0.0.1:$PORT_ADMIN/readyz" "$TG_PID" || { cat "$dir/tokengate.log" >&2; die "scenario $name: tokengate not ready"; }
  TG_READY_MS=$(( (${EPOCHREALTIME/[.,]/} - ${t0/[.,]/}) / 1000 ))
}

# stop_tokengate NAME DIR: SIGTERM must exit 0; records peak RSS (the largest over restarts).
TG_RSS=0
stop_tokengate() {
  local name=$1 dir=$2 rc=0 kb
  kb=$(vmhwm "$TG_PID"); (( kb > TG_RSS )) && TG_RSS=$kb
  kill -TERM "$TG_PID"
  wait "$TG_PID" || rc=$?
  forget_pid "$TG_PID"
  (( rc == 0 )) || { tail -20 "$dir/tokengate.log" >&2; die "scenario $name: tokengate exited $rc on SIGTERM"; }
}

# scenario NAME TOKENGATE_CONFIG_TEMPLATE [WRK_ARGS...]
#   Starts a fresh tokengate on the rendered config (placeholders @PORT@ @ADMIN_PORT@
#   @UPSTREAM_PORT@ @WORKERS@, and SCENARIO_VARS), warms up both proxies, then runs wrk
#   against the nginx baseline and tokengate alternately for ROUNDS rounds with the same
#   WRK_ARGS (e.g. `-s bench/lua/bearer.lua` to add headers or set wrk.path), records
#   tokengate's peak RSS and CPU time per request, and stops it (SIGTERM must exit 0).
#   RESTART_EACH_RUN=1: a fresh tokengate (and RESET_STORE) before every run against it —
#   for DPoP, whose pre-made proofs may each be used once per replay cache.
scenario() {
  local name=$1 template=$2
  shift 2
  if (( ${#SELECTED[@]} )) && [[ " ${SELECTED[*]} " != *" $name "* ]]; then return 0; fi
  RAN+=("$name")
  local dir=$WORK/scenario-$name
  mkdir -p "$dir"
  [[ $template == /* ]] || template=$ROOT/$template
  render "$template" "$dir/tokengate.yaml" PORT="$PORT_TOKENGATE" ADMIN_PORT="$PORT_ADMIN" \
    UPSTREAM_PORT="$PORT_UPSTREAM" WORKERS="$WORKERS" ${SCENARIO_VARS:-}
  "$TOKENGATE_BIN" check-config "$dir/tokengate.yaml" >&2 || die "scenario $name: invalid tokengate config"
  log "scenario $name: starting tokengate ($WORKERS workers) on 127.0.0.1:$PORT_TOKENGATE"
  TG_RSS=0
  start_tokengate "$name" "$dir"
  printf '%s\t%s\n' "$name" "$TG_READY_MS" >>"$WORK/ready.tsv"

  # Targets: the nginx baseline, tokengate, and the scenario's peer if it has one
  # (PEER_NAME at PEER_URL, e.g. mod_auth_openidc for the RS256 bearer scenarios).
  # A scenario may bring its own nginx baseline (BASELINE_URL, run by SCENARIO_BASELINE_PID).
  local baseline_pid=${SCENARIO_BASELINE_PID:-$BASELINE_PID}
  local -A urls=([nginx]="${BASELINE_URL:-http://127.0.0.1:$PORT_NGINX/}" [tokengate]="http://127.0.0.1:$PORT_TOKENGATE/")
  local targets=(nginx tokengate)
  if [[ -n ${PEER_NAME:-} ]]; then urls[$PEER_NAME]=$PEER_URL; targets+=("$PEER_NAME"); fi
  [[ -z ${CHECK_BEARER_KEYS:-} ]] \
    || check_bearer "tokengate ($name)" "${urls[tokengate]}" "$CHECK_BEARER_KEYS" 403
  [[ -z ${CHECK_SCENARIO:-} ]] || $CHECK_SCENARIO "tokengate ($name)" "${urls[tokengate]}"
  printf '%s\t%s\n' "$name" "$*" >>"$WORK/wrkargs.tsv"
  printf '%s\t%s\t%s\n' "$name" "${SCENARIO_AUTH:-none}" "${SCENARIO_CACHE:-}" >>"$WORK/kinds.tsv"
  log "scenario $name: warm-up (${WARMUP}s each)"
  local target
  for target in "${targets[@]}"; do
    if [[ $target == tokengate && -n ${RESTART_EACH_RUN:-} ]]; then stop_tokengate "$name" "$dir"; start_tokengate "$name" "$dir"; fi
    run_wrk "$WARMUP" "${urls[$target]}" "$dir/warmup-$target.txt" "$@"
  done

  local round order i n=${#targets[@]} url ticks uticks
  for round in $(seq "$ROUNDS"); do
    # Rotate which proxy goes first, so none always runs on a warmer/cooler machine
    # (with two targets: nginx first in odd rounds, tokengate first in even ones).
    order=()
    for i in $(seq 0 $((n - 1))); do order+=("${targets[(i + round - 1) % n]}"); done
    for target in "${order[@]}"; do
      url=${urls[$target]}
      if [[ $target == tokengate && -n ${RESTART_EACH_RUN:-} ]]; then stop_tokengate "$name" "$dir"; start_tokengate "$name" "$dir"; fi
      log "scenario $name: round $round/$ROUNDS: $target (${DURATION}s)"
      local perf_pid=""
      if [[ -n "${PERF_OUT:-}" && $target == tokengate && $round == 1 ]]; then
        command -v perf >/dev/null || die "PERF_OUT needs perf (apt-get install linux-perf)"
        perf record -q -F 999 -g -p "$TG_PID" -o "$PERF_OUT" -- sleep "$DURATION" >/dev/null 2>&1 &
        perf_pid=$!
      fi
      [[ $target != tokengate ]] || { ticks=$(cpu_ticks "$TG_PID"); uticks=$(user_ticks "$TG_PID"); }
      # A peer in front of tokengate (decision mode): tokengate's own CPU during its run too.
      [[ $target != "${PEER_NAME:-}" || -z ${PEER_TOKENGATE_CPU:-} ]] || ticks=$(cpu_ticks "$TG_PID")
      [[ $target != nginx ]] || { ticks=$(cpu_ticks_tree "$baseline_pid"); uticks=$(user_ticks_tree "$baseline_pid"); }
      [[ $target != tokengate || -z ${STORE_COUNTER:-} ]] || STORE_CALLS=$($STORE_COUNTER)
      [[ $target != tokengate || -z ${STORE_COUNTER:-} || -z $REDIS_PID ]] || STORE_TICKS=$(cpu_ticks "$REDIS_PID")
      run_wrk "$DURATION" "$url" "$dir/$target-$round.txt" "$@"
      if [[ $target == tokengate ]]; then
        # CPU seconds tokengate spent in this run, and (with a shared store) the store
        # commands it sent: per request, in report.py.
        printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$round" "$(( $(cpu_ticks "$TG_PID") - ticks ))" "$CLK_TCK" \
          "$(( $(user_ticks "$TG_PID") - uticks ))" >>"$WORK/cpu.tsv"
        # With Redis, also redis-server's own CPU in the run: it shares the machine's cores.
        if [[ -n ${STORE_COUNTER:-} ]]; then
          local store_ticks=0
          [[ -z $REDIS_PID ]] || store_ticks=$(( $(cpu_ticks "$REDIS_PID") - STORE_TICKS ))
          printf '%s\t%s\t%s\t%s\n' "$name" "$round" "$(( $($STORE_COUNTER) - STORE_CALLS ))" "$store_ticks" >>"$WORK/store.tsv"
        fi
      fi
      if [[ $target == "${PEER_NAME:-}" && -n ${PEER_TOKENGATE_CPU:-} ]]; then
        printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$target" "$round" "$(( $(cpu_ticks "$TG_PID") - ticks ))" "$CLK_TCK" >>"$WORK/cpu-decision.tsv"
      fi
      if [[ $target == nginx ]]; then
        printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$round" "$(( $(cpu_ticks_tree "$baseline_pid") - ticks ))" "$CLK_TCK" \
          "$(( $(user_ticks_tree "$baseline_pid") - uticks ))" >>"$WORK/cpu-nginx.tsv"
      fi
      if [[ -n $perf_pid ]]; then
        wait "$perf_pid" || true
        log "perf profile of tokengate: $PERF_OUT (perf report -i $PERF_OUT --no-children)"
      fi
      printf '%s\t%s\t%s\t%s\n' "$name" "$target" "$round" "$dir/$target-$round.txt" >>"$WORK/runs.tsv"
    done
  done

  if (( SYSCALLS )) && command -v strace >/dev/null; then
    log "scenario $name: system calls per request (strace -c -f, 3 s of keep-alive requests each)"
    [[ -z ${RESTART_EACH_RUN:-} ]] || { stop_tokengate "$name" "$dir"; start_tokengate "$name" "$dir"; }
    syscalls_per_request "$name" tokengate "${urls[tokengate]}" "$TG_PID" "$@"
    syscalls_per_request "$name" nginx "${urls[nginx]}" "$(pgrep -P "$baseline_pid" | tr '\n' ' ')" "$@"
  fi
  [[ -z ${AFTER_SCENARIO:-} ]] || $AFTER_SCENARIO "$name"
  stop_tokengate "$name" "$dir"
  printf '%s\t%s\t%s\n' "$name" tokengate "$TG_RSS" >>"$WORK/rss.tsv"
  printf '%s\t%s\t%s\n' "$name" nginx "$(vmhwm_tree "$baseline_pid")" >>"$WORK/rss.tsv"
  [[ -z ${PEER_NAME:-} ]] \
    || printf '%s\t%s\t%s\n' "$name" "$PEER_NAME" "$(vmhwm_tree "$PEER_PID")" >>"$WORK/rss.tsv"
}

# --- scenarios -------------------------------------------------------------------------
# One line each: scenario NAME TOKENGATE_CONFIG_TEMPLATE [WRK_ARGS...]
# (later: login routes, with wrk Lua scripts under bench/lua/ adding headers)
scenario none bench/tokengate/none.yaml

# Small and large POSTs on the same route: a 1 KB JSON body (head and body in one write to
# the upstream) and a 16 KB one (nginx's default client_body_buffer_size on 64-bit, so its
# baseline keeps it in memory too). bench/lua/post.lua reads POST_BYTES.
post_scenario() {
  if (( ${#SELECTED[@]} )) && [[ " ${SELECTED[*]} " != *" $1 "* ]]; then return 0; fi
  export POST_BYTES=$2
  SCENARIO_AUTH=$1 scenario "$1" bench/tokengate/none.yaml -s "$ROOT/bench/lua/post.lua"
}
post_scenario post-1k 1024
post_scenario post-16k 16384

# Access logs on, for both proxies, to a file: nginx's combined format (its own baseline,
# bench/nginx/proxy-log.conf.in, with LOG_OPTIONS), tokengate's JSON lines; buffered as
# nginx's `buffer=64k flush=1s` and tokengate's `buffer: 64KB, flush: 1s`, then not at all.
PORT_NGINX_LOG=$((PORT_BASE + 12))
log_scenario() {
  if (( ${#SELECTED[@]} )) && [[ " ${SELECTED[*]} " != *" $1 "* ]]; then return 0; fi
  port_free "$PORT_NGINX_LOG" || die "127.0.0.1:$PORT_NGINX_LOG is in use; set PORT_BASE"
  log "$1: a baseline nginx logging to a file ($2)"
  NGINX_LOG_OPTIONS=$2 start_nginx "baseline-$1" bench/nginx/proxy-log.conf.in "$PORT_NGINX_LOG"
  local pid=$NGINX_PID
  SCENARIO_VARS="LOG_PATH=$WORK/scenario-$1/access.log LOG_BUFFER=$3" SCENARIO_AUTH=$1 \
    BASELINE_URL="http://127.0.0.1:$PORT_NGINX_LOG/" SCENARIO_BASELINE_PID=$pid \
    scenario "$1" bench/tokengate/access-log.yaml
  log "$1: access log lines written: nginx $(wc -l <"$WORK/baseline-$1/access.log"), tokengate $(wc -l <"$WORK/scenario-$1/access.log")"
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; forget_pid "$pid"
  rm -f "$WORK/baseline-$1/access.log" "$WORK/scenario-$1/access.log"
}
log_scenario log-file-buffered "buffer=64k flush=1s" 64KB
log_scenario log-file "" 0
# The access log on standard output, a pipe that nobody reads: against `none` (log off).
TG_STDOUT_PIPE=1 SCENARIO_AUTH=log-pipe scenario log-pipe bench/tokengate/log-pipe.yaml
# OpenTelemetry tracing, every request sampled and none: against `none` (tracing off). The
# spans go to the bench upstream (nginx answers the POSTs 200); the exporter's counters are
# printed once the rounds are over, so a ratio bought by dropping spans shows.
trace_counters() { curl -fsS "http://127.0.0.1:$PORT_ADMIN/metrics" | grep '^tokengate_trace' >&2 || true; }
SCENARIO_VARS="SAMPLE_RATIO=1" SCENARIO_AUTH=trace-all AFTER_SCENARIO=trace_counters \
  scenario trace-all bench/tokengate/trace.yaml
SCENARIO_VARS="SAMPLE_RATIO=0" SCENARIO_AUTH=trace-zero scenario trace-zero bench/tokengate/trace.yaml

# bearer_scenario NAME ALG CACHE_ENTRIES: a key of ALG, a token signed with it, the route
# validating it (with the per-worker validation cache, or with it off: 0).
# bearer_material ALG: a key of ALG in $WORK/keys-ALG (made once per run) and BENCH_TOKEN,
# a token signed with it, exported to wrk's bearer.lua.
bearer_material() {
  local keys=$WORK/keys-$1
  mkdir -p "$keys"
  [[ -f $keys/key.jwk ]] || "$TOKENGATE_BIN" keys generate --alg "$1" --kid "bench-$1" --out "$keys/key.jwk" >"$keys/jwks.json"
  BENCH_TOKEN=$("$TOKENGATE_BIN" jwt sign --key "$keys/key.jwk" --typ at+jwt --exp-in 86400 \
    --claims '{"iss":"https://bench.local","aud":"bench-api","sub":"bench-user","client_id":"bench","scope":"bench","email":"b@example.com"}')
  export BENCH_TOKEN
}
bearer_scenario() {
  if (( ${#SELECTED[@]} )) && [[ " ${SELECTED[*]} " != *" $1 "* ]]; then return 0; fi
  local keys=$WORK/keys-$2
  bearer_material "$2"
  local peer_name="" peer_url=""
  if [[ $2 == RS256 ]] && (( MOD_AUTH_OPENIDC )); then
    # The mod_auth_openidc peer, for RS256 (started once, on this key's JWKS; same key for both
    # RS256 scenarios since the key is made once per run).
    start_mod_auth_openidc "$keys"
    peer_name=mod_auth_openidc peer_url="http://127.0.0.1:$PORT_PEER/"
    check_bearer "mod_auth_openidc ($1)" "$peer_url" "$keys" 401
  fi
  SCENARIO_VARS="JWKS=$keys/jwks.json CACHE_ENTRIES=$3" SCENARIO_AUTH=bearer SCENARIO_CACHE=$3 \
    CHECK_BEARER_KEYS=$keys PEER_NAME=$peer_name PEER_URL=$peer_url \
    scenario "$1" bench/tokengate/bearer.yaml -s "$ROOT/bench/lua/bearer.lua"
}
bearer_scenario bearer-rs256 RS256 10000
bearer_scenario bearer-es256 ES256 10000
bearer_scenario bearer-rs256-nocache RS256 0
bearer_scenario bearer-es256-nocache ES256 0

# as-self: bearer-es256's route taking the gateway's own authorization server's tokens
# (bench/tokengate/as-self.yaml: issuers: [self] and a resource, the AS's ES256 key). Against
# bearer-es256 (same run), what a self-issued token costs: the same check, the keys the AS's.
as_self_scenario() {
  if (( ${#SELECTED[@]} )) && [[ " ${SELECTED[*]} " != *" as-self "* ]]; then return 0; fi
  local keys=$WORK/keys-as
  mkdir -p "$keys"
  [[ -f $keys/as.jwk ]] || "$TOKENGATE_BIN" keys generate --alg ES256 --kid as-1 --out "$keys/as.jwk" >/dev/null
  BENCH_TOKEN=$("$TOKENGATE_BIN" jwt sign --key "$keys/as.jwk" --typ at+jwt --exp-in 86400 \
    --claims '{"iss":"https://bench.local","aud":"https://bench.local/mcp","sub":"bench-user","client_id":"https://client.example/c.json","idp_iss":"https://idp.example","scope":"bench"}')
  export BENCH_TOKEN
  SCENARIO_VARS="AS_KEY=$keys/as.jwk" SCENARIO_AUTH=bearer SCENARIO_CACHE=10000 \
    scenario as-self bench/tokengate/as-self.yaml -s "$ROOT/bench/lua/bearer.lua"
}
as_self_scenario

# api_key_scenario NAME KEYS: an auth: api_key route (bench/tokengate/api-key.yaml) whose set
# holds KEYS entries: the key wrk sends (bench/lua/api-key.lua), made by `tokengate api-keys
# create`, and KEYS-1 others with random digests (bench/api_keys/make.py). Against `none`
# (same run), the ratio is what checking a key costs; api-key-10k against api-key, what the
# set's size costs, which should be nothing: a key is hashed once and looked up once.
check_api_key() {
  local name=$1 url=$2 typo
  log "$name: checking that it checks the key before measuring"
  # The last character changed: the check digits fail (malformed, before any lookup).
  if [[ ${BENCH_API_KEY: -1} == a ]]; then typo=${BENCH_API_KEY%?}b; else typo=${BENCH_API_KEY%?}a; fi
  expect_status "$name: no key" 401 "$url"
  expect_status "$name: a key of another set" 401 "$url" -H "X-API-Key: $API_KEY_OTHER"
  expect_status "$name: the key with a typo" 401 "$url" -H "X-API-Key: $typo"
  expect_status "$name: the scenario's key" 200 "$url" -H "X-API-Key: $BENCH_API_KEY"
}
api_key_scenario() {
  if (( ${#SELECTED[@]} )) && [[ " ${SELECTED[*]} " != *" $1 "* ]]; then return 0; fi
  local dir=$WORK/keys-api-$2
  if [[ ! -f $dir/key ]]; then
    log "$1: a key set of $2 (tokengate api-keys create, and $(( $2 - 1 )) fillers)"
    python3 "$ROOT/bench/api_keys/make.py" "$TOKENGATE_BIN" "$dir" "$2" || die "$1: no key set"
  fi
  BENCH_API_KEY=$(cat "$dir/key") API_KEY_OTHER=$(cat "$dir/other-key")
  export BENCH_API_KEY
  SCENARIO_VARS="KEY_FILE=$dir/keys.yaml" SCENARIO_AUTH=$1 CHECK_SCENARIO=check_api_key \
    scenario "$1" bench/tokengate/api-key.yaml -s "$ROOT/bench/lua/api-key.lua"
}
api_key_scenario api-key 1
api_key_scenario api-key-10k 10000

# ssf_scenario NAME REVOCATIONS: bearer-es256's route, key and token with a Shared Signals
# transmitter (bench/tokengate/bearer-ssf.yaml): the test suite's stub, run by
# bench/ssf/transmitter.py until the scenario ends. Before measuring (check_ssf) it pushes
# REVOCATIONS session-revoked events, for user-0 .. user-N-1 and never the token's bench-user;
# they stand through every round (tokengate is not restarted, and keeps them in memory).
# Against bearer-es256 (same run), the ratio is what the revocation check costs with that
# many standing.
check_ssf() {
  local name=$1 url=$2 n=$SSF_REVOCATIONS answer got="" i tok
  log "$name: $n session-revoked events for other subjects (the transmitter, 8 threads), then checks"
  answer=$(curl -sS --max-time 600 -X POST "http://127.0.0.1:$SSF_CONTROL_PORT/revoke?count=$n") || true
  [[ $answer == *"\"statuses\": {\"202\": $n}"* ]] || die "$name: not every push was applied (202): ${answer:-no answer}"
  log "  ok: the transmitter: $answer"
  for i in $(seq 50); do
    got=$(curl -fsS "http://127.0.0.1:$PORT_ADMIN/metrics" | awk '$1 == "tokengate_ssf_revocations" { printf "%d", $2 }')
    [[ $got != "$n" ]] || break
    sleep 0.1
  done
  [[ $got == "$n" ]] || die "$name: tokengate_ssf_revocations is ${got:-absent}, not $n"
  log "  ok: tokengate_ssf_revocations $got"
  # A revoked subject's token from before the events; every worker takes them within a second,
  # and each request's new connection may land on any worker.
  tok=$("$TOKENGATE_BIN" jwt sign --key "$SSF_KEYS/key.jwk" --typ at+jwt --exp-in 86400 \
    --claims "{\"iss\":\"https://bench.local\",\"aud\":\"bench-api\",\"sub\":\"user-1\",\"client_id\":\"bench\",\"scope\":\"bench\",\"iat\":$(( $(date +%s) - 60 ))}")
  sleep 1
  for i in 1 2 3 4; do
    expect_status "$name: user-1's token, issued before the event ($i)" 401 "$url" -H "Authorization: Bearer $tok"
  done
  expect_status "$name: the scenario's token (bench-user)" 200 "$url" -H "Authorization: Bearer $BENCH_TOKEN"
}
# After the rounds: the revocations still stand, and none of the rounds' requests was refused.
ssf_counters() {
  curl -fsS "http://127.0.0.1:$PORT_ADMIN/metrics" | grep -E '^tokengate_ssf_(revocations|revoked_requests_total)' >&2 || true
}
ssf_scenario() {
  if (( ${#SELECTED[@]} )) && [[ " ${SELECTED[*]} " != *" $1 "* ]]; then return 0; fi
  local dir=$WORK/ssf keys=$WORK/keys-ES256 pid port control i pins
  if ! python3 -c "import joserfc, requests" 2>/dev/null; then
    mapfile -t pins < <(grep -E '^(requests|joserfc)==' "$ROOT/IntegrationTests/requirements.txt")
    python3 -m pip install -q --disable-pip-version-check "${pins[@]}" >&2
  fi
  bearer_material ES256
  mkdir -p "$dir"
  rm -f "$dir/ready"
  python3 "$ROOT/bench/ssf/transmitter.py" "$dir/token" "$dir/ready" https://bench.local >"$dir/transmitter.log" 2>&1 &
  pid=$!
  PIDS+=("$pid")
  for i in $(seq 100); do
    [[ -s $dir/ready ]] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  [[ -s $dir/ready ]] || { cat "$dir/transmitter.log" >&2; die "$1: the Shared Signals transmitter did not start"; }
  read -r port control <"$dir/ready"
  log "$1: the Shared Signals transmitter on 127.0.0.1:$port (control 127.0.0.1:$control)"
  SCENARIO_VARS="JWKS=$keys/jwks.json CACHE_ENTRIES=10000 SSF_PORT=$port SSF_TOKEN_FILE=$dir/token" \
    SCENARIO_AUTH=bearer-ssf SCENARIO_CACHE=10000 CHECK_BEARER_KEYS=$keys \
    SSF_KEYS=$keys SSF_REVOCATIONS=$2 SSF_CONTROL_PORT=$control CHECK_SCENARIO=check_ssf AFTER_SCENARIO=ssf_counters \
    scenario "$1" bench/tokengate/bearer-ssf.yaml -s "$ROOT/bench/lua/bearer.lua"
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; forget_pid "$pid"
}
ssf_scenario bearer-ssf 10000

# MCP: a tools/call (bench/lua/mcp.lua) on the same bearer route with and without its mcp:
# rules; the ratio of the two, same run, is what judging each call costs.
# mcp_scenario NAME MCP_OFF [LUA]: the mcp route with its rules commented out (MCP_OFF=#) or
# on, driven by bench/lua/LUA (default mcp.lua: a 2025 tools/call).
mcp_scenario() {
  if (( ${#SELECTED[@]} )) && [[ " ${SELECTED[*]} " != *" $1 "* ]]; then return 0; fi
  bearer_material ES256
  SCENARIO_VARS="JWKS=$WORK/keys-ES256/jwks.json MCP_OFF=$2" SCENARIO_AUTH=$1 \
    scenario "$1" bench/tokengate/mcp.yaml -s "$ROOT/bench/lua/${3:-mcp.lua}"
}
mcp_scenario mcp-bearer "#"
mcp_scenario mcp-tools ""
mcp_scenario mcp-bearer-2026 "#" mcp2026.lua
mcp_scenario mcp-2026 "" mcp2026.lua

# check_dpop NAME URL: before measuring a dpop route, make sure it really checks proofs:
# no proof, a proof for another URL, an unbound token, and a replayed proof get 401; a
# fresh proof 200. (Uses its own proofs, not the scenario's file.)
check_dpop() {
  local name=$1 url=$2 keys=$DPOP_KEYS p
  log "$name: checking that it verifies DPoP proofs before measuring"
  expect_status "$name: no proof" 401 "$url" -H "Authorization: DPoP $BENCH_TOKEN"
  p=$("$TOKENGATE_BIN" dpop proof --key "$keys/dpop.jwk" --url "${url}other" --token "$BENCH_TOKEN")
  expect_status "$name: proof for another URL" 401 "$url" -H "Authorization: DPoP $BENCH_TOKEN" -H "DPoP: $p"
  p=$("$TOKENGATE_BIN" dpop proof --key "$keys/dpop.jwk" --url "$url" --token "$UNBOUND_TOKEN")
  expect_status "$name: token not bound to the key" 401 "$url" -H "Authorization: DPoP $UNBOUND_TOKEN" -H "DPoP: $p"
  p=$("$TOKENGATE_BIN" dpop proof --key "$keys/dpop.jwk" --url "$url" --token "$BENCH_TOKEN")
  expect_status "$name: fresh proof" 200 "$url" -H "Authorization: DPoP $BENCH_TOKEN" -H "DPoP: $p"
  expect_status "$name: the same proof again" 401 "$url" -H "Authorization: DPoP $BENCH_TOKEN" -H "DPoP: $p"
}

# Redis for the dpop-redis scenario: a real redis-server on loopback, no persistence.
PORT_REDIS=$((PORT_BASE + 6))
REDIS_PID=""
start_redis() {
  [[ -z $REDIS_PID ]] || return 0
  command -v redis-server >/dev/null || die "the dpop-redis scenario needs redis-server (apt-get install redis-server)"
  port_free "$PORT_REDIS" || die "127.0.0.1:$PORT_REDIS is in use; set PORT_BASE"
  redis-server --port "$PORT_REDIS" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK" >"$WORK/redis.log" 2>&1 &
  REDIS_PID=$!
  PIDS+=("$REDIS_PID")
  local i
  for i in $(seq 100); do [[ $(redis-cli -p "$PORT_REDIS" PING 2>/dev/null) == PONG ]] && return 0; sleep 0.1; done
  die "redis-server did not start"
}
# Every command Redis processed (INFO stats), the gateway's health PING every 2 s included.
redis_commands() { redis-cli -p "$PORT_REDIS" INFO stats | sed -n 's/^total_commands_processed:\([0-9]*\).*/\1/p' | tr -d '\r' | grep . || echo 0; }

# dpop_scenario NAME STORE: an auth: dpop route; an ES256 client key, an access token bound
# to it (cnf.jkt), and DPOP_PROOFS unique proofs for tokengate's URL made up front (each
# request must carry a fresh one: one ES256 check per request that no cache can save).
# tokengate restarts (and the store is emptied) before each run, so every run can use the
# same proofs once.
DPOP_PROOFS=${DPOP_PROOFS:-$(( DURATION * 45000 ))}
# dpop_material: the keys, bound token and proofs of the DPoP scenarios (made once per run),
# exported to wrk's dpop.lua as BENCH_TOKEN and DPOP_PROOFS_FILE.
dpop_material() {
  local keys=$WORK/keys-dpop
  DPOP_KEYS=$keys
  mkdir -p "$keys"
  if [[ ! -f $keys/proofs.txt ]]; then
    "$TOKENGATE_BIN" keys generate --alg ES256 --kid bench-issuer --out "$keys/issuer.jwk" >"$keys/jwks.json"
    "$TOKENGATE_BIN" keys generate --alg ES256 --out "$keys/dpop.jwk" >/dev/null
    local jkt
    jkt=$("$TOKENGATE_BIN" keys thumbprint --key "$keys/dpop.jwk")
    "$TOKENGATE_BIN" jwt sign --key "$keys/issuer.jwk" --typ at+jwt --exp-in 86400 \
      --claims "{\"iss\":\"https://bench.local\",\"aud\":\"bench-api\",\"sub\":\"bench-user\",\"client_id\":\"bench\",\"scope\":\"bench\",\"cnf\":{\"jkt\":\"$jkt\"}}" >"$keys/token"
    "$TOKENGATE_BIN" jwt sign --key "$keys/issuer.jwk" --typ at+jwt --exp-in 86400 \
      --claims '{"iss":"https://bench.local","aud":"bench-api","sub":"bench-user","client_id":"bench","scope":"bench"}' >"$keys/unbound-token"
    log "dpop: making $DPOP_PROOFS proofs for http://127.0.0.1:$PORT_TOKENGATE/ (tokengate dpop proof --count)"
    "$TOKENGATE_BIN" dpop proof --key "$keys/dpop.jwk" --url "http://127.0.0.1:$PORT_TOKENGATE/" \
      --token "$(cat "$keys/token")" --count "$DPOP_PROOFS" >"$keys/proofs.txt"
  fi
  BENCH_TOKEN=$(cat "$keys/token") UNBOUND_TOKEN=$(cat "$keys/unbound-token")
  export BENCH_TOKEN DPOP_PROOFS_FILE=$keys/proofs.txt
}
dpop_scenario() {
  if (( ${#SELECTED[@]} )) && [[ " ${SELECTED[*]} " != *" $1 "* ]]; then return 0; fi
  local keys=$WORK/keys-dpop store=memory reset="" counter=""
  dpop_material
  if [[ $2 == redis ]]; then
    start_redis
    store="redis://127.0.0.1:$PORT_REDIS/0" reset="redis-cli -p $PORT_REDIS FLUSHALL" counter=redis_commands
  fi
  SCENARIO_VARS="JWKS=$keys/jwks.json STORE=$store REPLAY_ENTRIES=$(( DPOP_PROOFS * 2 ))" SCENARIO_AUTH=dpop-$2 \
    RESTART_EACH_RUN=1 RESET_STORE=$reset STORE_COUNTER=$counter CHECK_SCENARIO=check_dpop \
    scenario "$1" bench/tokengate/dpop.yaml -s "$ROOT/bench/lua/dpop.lua"
}
dpop_scenario dpop-es256 memory
dpop_scenario dpop-es256-redis redis

# ratelimit_scenario NAME STORE RATE BURST: the bearer-es256 route with a rate limit per
# `sub` (bench/tokengate/ratelimit.yaml), in the memory store or Redis. Under the limit
# (a rate no run reaches), beside bearer-es256 in the same run, the ratio is what counting
# costs; over it (1/d, burst 1: after the first request every answer is a 429, which wrk
# counts as non-2xx), how fast a flood is refused.
ratelimit_scenario() {
  if (( ${#SELECTED[@]} )) && [[ " ${SELECTED[*]} " != *" $1 "* ]]; then return 0; fi
  local store=memory counter=""
  bearer_material ES256
  if [[ $2 == redis ]]; then
    start_redis
    store="redis://127.0.0.1:$PORT_REDIS/0" counter=redis_commands
  fi
  local allow=""
  [[ $3 != 1/d ]] || allow=1
  SCENARIO_VARS="JWKS=$WORK/keys-ES256/jwks.json STORE=$store RATE=$3 BURST=$4" SCENARIO_AUTH=ratelimit-$2 \
    STORE_COUNTER=$counter ALLOW_NON_2XX=$allow scenario "$1" bench/tokengate/ratelimit.yaml -s "$ROOT/bench/lua/bearer.lua"
}
ratelimit_scenario ratelimit-memory memory 1000000/s 1000000
ratelimit_scenario ratelimit-redis redis 1000000/s 1000000

# ratelimit-redis-callers: the same Redis limit, with CALLERS tokens of their own `sub` taken
# in turn (bench/lua/bearer-callers.lua). One caller's requests of a loop turn share a store
# call; here a turn's requests are nearly all different callers, so each is a call of its
# own (written together): the cost of a store call per request.
CALLERS=${CALLERS:-200}
ratelimit_callers_scenario() {
  if (( ${#SELECTED[@]} )) && [[ " ${SELECTED[*]} " != *" $1 "* ]]; then return 0; fi
  bearer_material ES256
  local keys=$WORK/keys-ES256 i
  if [[ ! -f $keys/tokens.txt ]]; then
    log "$1: making $CALLERS tokens, one per caller"
    for ((i = 0; i < CALLERS; i++)); do
      "$TOKENGATE_BIN" jwt sign --key "$keys/key.jwk" --typ at+jwt --exp-in 86400 \
        --claims "{\"iss\":\"https://bench.local\",\"aud\":\"bench-api\",\"sub\":\"caller-$i\",\"client_id\":\"bench\",\"scope\":\"bench\"}"
    done >"$keys/tokens.txt"
  fi
  export BENCH_TOKENS_FILE=$keys/tokens.txt
  start_redis
  SCENARIO_VARS="JWKS=$keys/jwks.json STORE=redis://127.0.0.1:$PORT_REDIS/0 RATE=1000000/s BURST=1000000" \
    SCENARIO_AUTH=ratelimit-redis STORE_COUNTER=redis_commands \
    scenario "$1" bench/tokengate/ratelimit.yaml -s "$ROOT/bench/lua/bearer-callers.lua"
}
ratelimit_callers_scenario ratelimit-redis-callers

# authorize_scenario NAME MAX_ENTRIES: the bearer-es256 route asking an AuthZEN PDP (the
# upstream nginx answers {"decision":true}), its decisions cached (authorize-cached: the
# ratio against bearer-es256 is what a kept decision costs) or not (authorize-uncached: a
# PDP round trip per request).
authorize_scenario() {
  if (( ${#SELECTED[@]} )) && [[ " ${SELECTED[*]} " != *" $1 "* ]]; then return 0; fi
  bearer_material ES256
  SCENARIO_VARS="JWKS=$WORK/keys-ES256/jwks.json MAX_ENTRIES=$2" SCENARIO_AUTH=$1 \
    scenario "$1" bench/tokengate/authorize.yaml -s "$ROOT/bench/lua/bearer.lua"
}
authorize_scenario authorize-cached 100000
authorize_scenario authorize-uncached 0
ratelimit_scenario ratelimit-flood memory 1/d 1

# signature_scenario NAME: the `none` route verifying one Ed25519 request signature per
# request (bench/tokengate/signature.yaml). Beside `none` in the same run, the ratio is what
# the check costs; its floor is `none` plus one `openssl speed ed25519` verification per
# request (bench/README.md, "Signatures").
# signature_material: the client key's JWK Set and one signature made up front (sign.py),
# exported for signature.lua.
signature_material() {
  local dir=$WORK/keys-signature
  [[ -f $dir/headers ]] || python3 "$ROOT/bench/signatures/sign.py" "$dir"
  SIGNATURE_INPUT=$(sed -n 1p "$dir/headers") SIGNATURE=$(sed -n 2p "$dir/headers")
  export SIGNATURE_INPUT SIGNATURE
}
signature_scenario() {
  if (( ${#SELECTED[@]} )) && [[ " ${SELECTED[*]} " != *" $1 "* ]]; then return 0; fi
  signature_material
  SCENARIO_VARS="JWKS=$WORK/keys-signature/jwks.json" SCENARIO_AUTH=$1 \
    scenario "$1" bench/tokengate/signature.yaml -s "$ROOT/bench/lua/signature.lua"
}
signature_scenario signature-ed25519

# signature-response: the `none` route signing every answer with Ed25519 (sign_response);
# beside `none`, the difference is what one signed answer costs.
signature_response_scenario() {
  if (( ${#SELECTED[@]} )) && [[ " ${SELECTED[*]} " != *" $1 "* ]]; then return 0; fi
  local key=$WORK/keys-signature/gateway-ed25519.pem
  mkdir -p "$WORK/keys-signature"
  [[ -f $key ]] || openssl genpkey -algorithm ed25519 -out "$key" 2>/dev/null
  SCENARIO_VARS="SIGNING_KEY=$key" SCENARIO_AUTH=$1 scenario "$1" bench/tokengate/signature-response.yaml
}
signature_response_scenario signature-response

# floor_scenario NAME KIND: run only when named. The `none` route, sent the requests of
# bearer-rs256-nocache (KIND rs256: bearer.lua), dpop-es256 (es256: dpop.lua) or
# signature-ed25519 (ed25519: signature.lua), so nginx's baseline is the one those scenarios
# have. Run by FLOOR_BIN (default TOKENGATE_BIN), a tokengate built from
# bench/experiments/verify-floor.patch, with TG_FLOOR set for this scenario only: it does one
# bare OpenSSL verification per request (a pre-made signature, a copied context) and none of
# the route's other work: the ratio that no implementation of those routes can pass on this
# machine (bench/README.md, "How far one verification lets a route go", "Signatures").
floor_scenario() {
  [[ " ${SELECTED[*]} " == *" $1 "* ]] || return 0
  local mode=ec lua=dpop.lua
  case $2 in
    rs256) bearer_material RS256; mode=rsa lua=bearer.lua ;;
    es256) dpop_material ;;
    ed25519) signature_material; mode=ed25519 lua=signature.lua ;;
  esac
  TOKENGATE_BIN=${FLOOR_BIN:-$TOKENGATE_BIN} TOKENGATE_ENV="${TOKENGATE_ENV:-} TG_FLOOR=$mode" SCENARIO_AUTH=floor \
    scenario "$1" bench/tokengate/none.yaml -s "$ROOT/bench/lua/$lua"
}
floor_scenario floor-rs256 rs256
floor_scenario floor-es256 es256
floor_scenario floor-ed25519 ed25519

# login_scenario NAME: an auth: login route. The test suite's authorization server (idpyoidc,
# automatic login; its Python packages from IntegrationTests/requirements.txt) runs on
# PORT_BASE+7; one scripted login through tokengate gets a session cookie (check_login), which
# every request then carries (bench/lua/login.lua).
PORT_AS=$((PORT_BASE + 7))
AS_PID=""
start_login_as() {
  [[ -z $AS_PID ]] || return 0
  python3 -c "import idpyoidc" 2>/dev/null || python3 -m pip install -q --disable-pip-version-check -r "$ROOT/IntegrationTests/requirements.txt" >&2
  port_free "$PORT_AS" || die "127.0.0.1:$PORT_AS is in use; set PORT_BASE"
  python3 "$ROOT/bench/login/as.py" "$PORT_AS" "$1" "http://127.0.0.1:$PORT_TOKENGATE/oauth2/callback" \
    "$WORK/as-subject.txt" >"$WORK/as.log" 2>&1 &
  AS_PID=$!
  PIDS+=("$AS_PID")
  wait_http "http://127.0.0.1:$PORT_AS/.well-known/openid-configuration" "$AS_PID" || { cat "$WORK/as.log" >&2; die "the login AS did not start"; }
  # Ready once it has written the exchange scenarios' subject token (after it serves).
  local i
  for i in $(seq 100); do grep -q '^ready' "$WORK/as.log" && break; sleep 0.1; done
  grep -q '^ready' "$WORK/as.log" || { cat "$WORK/as.log" >&2; die "the login AS wrote no subject token"; }
}
check_login() {
  local name=$1 url=$2
  log "$name: one login through tokengate for the session cookie, and checks"
  expect_status "$name: no session, an API call" 401 "$url" -H "Accept: application/json"
  expect_status "$name: no session, a page" 302 "$url" -H "Accept: text/html"
  local i
  for i in $(seq 10); do  # ten logins: the gateway's own time per callback, from its metrics
    BENCH_COOKIE=$(python3 "$ROOT/bench/login/cookie.py" "$url") || die "$name: login failed"
  done
  export BENCH_COOKIE
  curl -s "http://127.0.0.1:$PORT_ADMIN/metrics" | awk -v n="$name" '
    /^tokengate_login_callback_own_seconds_sum/ {s=$2} /^tokengate_login_callback_own_seconds_count/ {c=$2}
    END { if (c > 0) printf "%s\t%d\t%.1f\n", n, c, s / c * 1e6 }' >>"$WORK/callback.tsv"
  expect_status "$name: the session" 200 "$url" -H "Cookie: tokengate_session=$BENCH_COOKIE"
  expect_status "$name: a tampered session" 401 "$url" -H "Accept: application/json" -H "Cookie: tokengate_session=x$BENCH_COOKIE"
}
login_scenario() {
  if (( ${#SELECTED[@]} )) && [[ " ${SELECTED[*]} " != *" $1 "* ]]; then return 0; fi
  local keys=$WORK/keys-login store=memory counter="" auth=login
  mkdir -p "$keys"
  [[ -f $keys/client.jwk ]] || "$TOKENGATE_BIN" keys generate --alg ES256 --kid bench-web --out "$keys/client.jwk" >"$keys/client.jwks"
  start_login_as "$keys/client.jwks"
  if [[ ${2:-memory} == redis ]]; then
    start_redis
    store="redis://127.0.0.1:$PORT_REDIS/0" counter=redis_commands auth=login-redis
  fi
  # assertion: the route also signs an identity assertion, key made here.
  local template=bench/tokengate/login.yaml
  if [[ ${3:-} == assertion ]]; then
    template=bench/tokengate/login-assertion.yaml auth=login-assertion
    [[ -f $keys/assert.jwk ]] || "$TOKENGATE_BIN" keys generate --alg ES256 --kid bench-assert --out "$keys/assert.jwk" >/dev/null
  fi
  SCENARIO_VARS="AS_PORT=$PORT_AS CLIENT_KEY=$keys/client.jwk STORE=$store ASSERTION_KEY=$keys/assert.jwk" SCENARIO_AUTH=$auth \
    CHECK_SCENARIO=check_login STORE_COUNTER=$counter scenario "$1" "$template" -s "$ROOT/bench/lua/login.lua"
}
login_scenario login
login_scenario login-assertion memory assertion
login_scenario login-redis redis

# exchange_scenario NAME OFF: a bearer route with token_exchange (RFC 8693) against the same
# route forwarding the caller's token instead (OFF=#), on a token of the login AS: the
# upstream gets a token of the same size either way. The exchanged token is cached, so the
# AS is asked about once per worker and per token lifetime. The ratio of the two, same run,
# is what a cached exchange costs.
check_exchange() {
  local name=$1 url=$2
  log "$name: checking that it refuses requests without a token, and passes the AS's token"
  expect_status "$name: no token" 401 "$url"
  expect_status "$name: a broken token" 401 "$url" -H "Authorization: Bearer ${BENCH_TOKEN}x"
  expect_status "$name: the AS's token" 200 "$url" -H "Authorization: Bearer $BENCH_TOKEN"
}
exchange_scenario() {
  if (( ${#SELECTED[@]} )) && [[ " ${SELECTED[*]} " != *" $1 "* ]]; then return 0; fi
  local keys=$WORK/keys-login
  mkdir -p "$keys"
  [[ -f $keys/client.jwk ]] || "$TOKENGATE_BIN" keys generate --alg ES256 --kid bench-web --out "$keys/client.jwk" >"$keys/client.jwks"
  start_login_as "$keys/client.jwks"
  BENCH_TOKEN=$(cat "$WORK/as-subject.txt")
  export BENCH_TOKEN
  local forward_off="#"
  [[ -z $2 ]] || forward_off=""
  SCENARIO_VARS="AS_PORT=$PORT_AS EXCHANGE_OFF=$2 FORWARD_OFF=$forward_off" SCENARIO_AUTH=$1 CHECK_SCENARIO=check_exchange \
    scenario "$1" bench/tokengate/exchange.yaml -s "$ROOT/bench/lua/bearer.lua"
}
exchange_scenario exchange-off "#"
exchange_scenario exchange-cached ""

# decision_scenario NAME ALG: decision mode. The bearer-* token and route with
# `decision:` on; three targets on the same token: the nginx baseline proxy, tokengate
# proxying (direct requests), and nginx auth_request (PORT_BASE+8) asking tokengate's
# /_tokengate/auth and proxying itself. tokengate's CPU is measured in both of its roles, so the
# report compares its cost per decision with its cost per proxied request.
PORT_AUTH_FRONT=$((PORT_BASE + 8))
AUTH_FRONT_PID=""
decision_scenario() {
  if (( ${#SELECTED[@]} )) && [[ " ${SELECTED[*]} " != *" $1 "* ]]; then return 0; fi
  local keys=$WORK/keys-$2
  mkdir -p "$keys"
  [[ -f $keys/key.jwk ]] || "$TOKENGATE_BIN" keys generate --alg "$2" --kid "bench-$2" --out "$keys/key.jwk" >"$keys/jwks.json"
  BENCH_TOKEN=$("$TOKENGATE_BIN" jwt sign --key "$keys/key.jwk" --typ at+jwt --exp-in 86400 \
    --claims '{"iss":"https://bench.local","aud":"bench-api","sub":"bench-user","client_id":"bench","scope":"bench","email":"b@example.com"}')
  export BENCH_TOKEN
  if [[ -z $AUTH_FRONT_PID ]]; then
    port_free "$PORT_AUTH_FRONT" || die "127.0.0.1:$PORT_AUTH_FRONT is in use; set PORT_BASE"
    # Ready before tokengate is (it starts in `scenario`): its own /_ready, no verdict.
    start_nginx auth-front bench/nginx/auth-request.conf.in "$PORT_AUTH_FRONT" "http://127.0.0.1:$PORT_AUTH_FRONT/_ready"
    AUTH_FRONT_PID=$NGINX_PID
  fi
  SCENARIO_VARS="JWKS=$keys/jwks.json CACHE_ENTRIES=10000" SCENARIO_AUTH=decision-bearer SCENARIO_CACHE=10000 \
    CHECK_BEARER_KEYS=$keys PEER_NAME=nginx-auth_request PEER_URL="http://127.0.0.1:$PORT_AUTH_FRONT/" PEER_TOKENGATE_CPU=1 \
    PEER_PID=$AUTH_FRONT_PID \
    CHECK_SCENARIO=check_decision scenario "$1" bench/tokengate/decision.yaml -s "$ROOT/bench/lua/bearer.lua"
}
# check_decision NAME URL: through the auth_request front, no token 401, a bad one 401, the
# scenario's token 200 — before measuring.
check_decision() {
  local front="http://127.0.0.1:$PORT_AUTH_FRONT/"
  log "$1: checking that nginx auth_request asks tokengate before measuring"
  expect_status "nginx auth_request: no token" 401 "$front"
  expect_status "nginx auth_request: a broken token" 401 "$front" -H "Authorization: Bearer x${BENCH_TOKEN}"
  expect_status "nginx auth_request: the scenario's token" 200 "$front" -H "Authorization: Bearer $BENCH_TOKEN"
}
decision_scenario decision-es256 ES256

# https_upstream_scenario: the same auth: none route, to an https upstream (nginx with a
# certificate for bench-upstream.test from a throwaway CA made here), against an nginx
# baseline proxying to that upstream over TLS with keep-alive (proxy_ssl_*). Both verify
# the chain and the name and send it as SNI; both pools keep connections for the run.
PORT_TLS_UPSTREAM=$((PORT_BASE + 9))
PORT_NGINX_TLS=$((PORT_BASE + 10))
https_upstream_scenario() {
  if (( ${#SELECTED[@]} )) && [[ " ${SELECTED[*]} " != *" $1 "* ]]; then return 0; fi
  local tls=$WORK/upstream-tls p
  for p in $PORT_TLS_UPSTREAM $PORT_NGINX_TLS; do
    port_free "$p" || die "127.0.0.1:$p is in use; set PORT_BASE to use other ports"
  done
  mkdir -p "$tls"
  log "$1: throwaway CA and a certificate for bench-upstream.test in $tls"
  {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tls/ca.key" -out "$tls/ca.pem" \
      -days 2 -subj "/CN=tokengate bench upstream CA" &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tls/server.key" -out "$tls/server.csr" \
      -subj "/CN=bench-upstream.test" &&
    printf 'subjectAltName=DNS:bench-upstream.test\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$tls/ext.cnf" &&
    openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial \
      -days 2 -extfile "$tls/ext.cnf" -out "$tls/server.pem"
  } >"$tls/openssl.log" 2>&1 || { cat "$tls/openssl.log" >&2; die "$1: openssl failed"; }
  local user_line=""
  [[ $(id -u) -ne 0 ]] || user_line="user root;"
  for p in upstream-tls proxy-tls; do
    mkdir -p "$WORK/$p"
    render "$ROOT/bench/nginx/$p.conf.in" "$WORK/$p/nginx.conf" DIR="$WORK/$p" TLS_DIR="$tls" WORKERS="$WORKERS" \
      USER_LINE="$user_line" TLS_UPSTREAM_PORT="$PORT_TLS_UPSTREAM" \
      PORT="$([[ $p == upstream-tls ]] && echo "$PORT_TLS_UPSTREAM" || echo "$PORT_NGINX_TLS")"
    "$NGINX" -q -p "$WORK/$p" -c "$WORK/$p/nginx.conf" -e "$WORK/$p/error.log" -t || die "$p: nginx rejected its config"
    "$NGINX" -p "$WORK/$p" -c "$WORK/$p/nginx.conf" -e "$WORK/$p/error.log" &
    PIDS+=("$!")
    [[ $p == upstream-tls ]] || TLS_BASELINE_PID=$!
  done
  wait_http "https://127.0.0.1:$PORT_TLS_UPSTREAM/" "${PIDS[-2]}" -k || die "$1: the TLS upstream did not start"
  wait_http "http://127.0.0.1:$PORT_NGINX_TLS/" "$TLS_BASELINE_PID" || { cat "$WORK/proxy-tls/error.log" >&2; die "$1: the nginx TLS baseline did not start"; }
  SCENARIO_VARS="TLS_UPSTREAM_PORT=$PORT_TLS_UPSTREAM TLS_DIR=$tls" SCENARIO_AUTH=https-upstream \
    BASELINE_URL="http://127.0.0.1:$PORT_NGINX_TLS/" SCENARIO_BASELINE_PID=$TLS_BASELINE_PID \
    scenario "$1" bench/tokengate/https-upstream.yaml
}
https_upstream_scenario https-upstream

# routes_scenario NAME N: routing at scale, run only when named (`routes`: all three). The
# `none` route as the catch-all (path_prefix /), LAST after N-1 public prefix routes
# /svcNNNNN/api/ to the same upstream; an nginx baseline of its own (PORT_BASE+11) with the
# same N locations. wrk sends `/`, which only the catch-all matches. Then, on a fresh
# tokengate, the time a reload of that config takes: SIGHUP to its "config reloaded" line.
PORT_NGINX_ROUTES=$((PORT_BASE + 11))
routes_scenario() {
  [[ " ${SELECTED[*]} " == *" $1 "* ]] || return 0
  local dir=$WORK/routes-$2 t0 i
  port_free "$PORT_NGINX_ROUTES" || die "127.0.0.1:$PORT_NGINX_ROUTES is in use; set PORT_BASE"
  mkdir -p "$dir"
  { sed '/^routes:/q' bench/tokengate/none.yaml
    awk -v n="$2" 'BEGIN { for (i = 1; i < n; i++)
      printf "  - { name: svc%05d, match: { path_prefix: /svc%05d/api/ }, upstream: app, auth: none }\n", i, i }'
    sed '1,/^routes:/d' bench/tokengate/none.yaml
  } >"$dir/tokengate.yaml.in"
  awk -v n="$2" '/^ *location \/ \{/ { for (i = 1; i < n; i++)
      printf "        location /svc%05d/api/ { proxy_pass http://app; }\n", i } 1' \
    bench/nginx/proxy.conf.in >"$dir/nginx.conf.in"
  start_nginx "$1-baseline" "$dir/nginx.conf.in" "$PORT_NGINX_ROUTES"
  local baseline_pid=$NGINX_PID
  SCENARIO_AUTH=routes BASELINE_URL="http://127.0.0.1:$PORT_NGINX_ROUTES/" SCENARIO_BASELINE_PID=$baseline_pid \
    scenario "$1" "$dir/tokengate.yaml.in"
  kill -TERM "$baseline_pid"; wait "$baseline_pid" || true; forget_pid "$baseline_pid"

  dir=$WORK/scenario-$1
  start_tokengate "$1" "$dir"
  i=$(grep -c '"config reloaded"' "$dir/tokengate.log" || true)
  t0=$EPOCHREALTIME
  kill -HUP "$TG_PID"
  until (( $(grep -c '"config reloaded"' "$dir/tokengate.log" || true) > i )); do
    (( ${EPOCHREALTIME/[.,]/} - ${t0/[.,]/} < 30000000 )) || die "scenario $1: no \"config reloaded\" within 30 s of SIGHUP"
    sleep 0.01
  done
  printf '%s\t%s\n' "$1" "$(( (${EPOCHREALTIME/[.,]/} - ${t0/[.,]/}) / 1000 ))" >>"$WORK/reload.tsv"
  stop_tokengate "$1" "$dir"
}
routes_scenario routes-1 1
routes_scenario routes-1000 1000
routes_scenario routes-10000 10000

(( ${#RAN[@]} )) || die "no scenario named ${SELECTED[*]}"

# --- report ----------------------------------------------------------------------------
if [[ -n ${PACED:-} ]]; then
  # What each crypto-bound route's one signature check costs by itself (OpenSSL 3's -mr
  # lines: +F2 RSA, +F4 ECDSA, +F6 EdDSA, with signs and verifies a second).
  log "signature checks' own cost (openssl speed, one core, 3 s each)"
  openssl speed -seconds 3 -mr rsa2048 ecdsap256 ed25519 2>/dev/null | awk -F: '
    $1 == "+F2" && $3 == 2048 { printf "rs256\t%.3f\n", 1e6 / $5 }
    $1 == "+F4" && $3 == 256 { printf "es256\t%.3f\n", 1e6 / $5 }
    $1 == "+F6" && $4 == "Ed25519" { printf "ed25519\t%.3f\n", 1e6 / $6 }' >"$WORK/verify.tsv"
  [[ -s $WORK/verify.tsv ]] || die "openssl speed gave no figures"
fi
ROUNDS=$ROUNDS DURATION=$DURATION CONNECTIONS=$CONNECTIONS THREADS=$THREADS WORKERS=$WORKERS \
NGINX_VERSION="$("$NGINX" -v 2>&1 | sed 's/^nginx version: //')" \
WRK_VERSION="$(wrk --version 2>&1 | head -1 | awk '{print $2}')" \
TOKENGATE_VERSION="$("$TOKENGATE_BIN" version 2>&1 | head -1)" \
TOKENGATE_ENV="${TOKENGATE_ENV:-}" PACED="${PACED:-}" \
APACHE_VERSION="$( [[ -z $PEER_PID ]] || "$APACHE" -v 2>&1 | sed -n 's/^Server version: //p')" \
MOD_AUTH_OPENIDC_VERSION="$( [[ -z $PEER_PID ]] || dpkg-query -W -f='${Version}' libapache2-mod-auth-openidc 2>/dev/null)" \
GIT_REV="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo -dirty)" \
python3 - "$WORK" <<'PY'
import json, os, platform, sys, time
work = sys.argv[1]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "unknown")
wrk_args = dict(l.rstrip("\n").split("\t", 1) for l in open(f"{work}/wrkargs.tsv"))
kinds = {}
for l in open(f"{work}/kinds.tsv"):
    name, auth, cache = l.rstrip("\n").split("\t")
    kinds[name] = {"auth": auth, "cache_entries": int(cache) if cache else None}
meta = {
    "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    "rounds": int(os.environ["ROUNDS"]), "duration_s": int(os.environ["DURATION"]),
    "connections": int(os.environ["CONNECTIONS"]), "threads": int(os.environ["THREADS"]),
    "workers": int(os.environ["WORKERS"]), "cpus": os.cpu_count(), "cpu_model": cpu,
    "kernel": platform.release(), "nginx": os.environ["NGINX_VERSION"],
    "wrk": os.environ["WRK_VERSION"], "tokengate": os.environ["TOKENGATE_VERSION"],
    "git": os.environ["GIT_REV"], "tokengate_env": os.environ["TOKENGATE_ENV"],
    "paced": int(os.environ["PACED"]) if os.environ["PACED"] else None,
    "wrk_args": wrk_args, "scenario_kinds": kinds,
    "apache": os.environ["APACHE_VERSION"] or None,
    "mod_auth_openidc": os.environ["MOD_AUTH_OPENIDC_VERSION"] or None,
}
json.dump(meta, open(f"{work}/meta.json", "w"), indent=2)
PY
python3 "$ROOT/bench/report.py" "$WORK" "$OUT"
[[ ! -s $WORK/cpu-decision.tsv ]] || python3 "$ROOT/bench/decision_report.py" "$WORK" "$OUT"
