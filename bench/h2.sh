#!/usr/bin/env bash
# HTTP/2 benchmark: h2load (Debian's nghttp2-client) against tokengate and against nginx,
# alternating rounds, same upstream, on 127.0.0.1 only. Three loads:
#   h2-tls      h2 over TLS to an HTTP/1.1 upstream: nginx `listen ssl http2` + keep-alive
#               proxy_pass; tokengate's TLS listener, auth none.          target ≥ 1.0×
#   h2-bearer   the same, to a bearer route on tokengate (ES256 token, memoized per
#               connection), against the same nginx baseline.             target ≥ 0.95×
#   grpc-unary  gRPC-shaped unary POSTs over h2c to an h2c upstream: nginx grpc_pass;
#               tokengate's h2c listener with `protocol: h2c`.            target ≥ 1.0×
# Each: H2_CONNS connections, H2_STREAMS streams in flight each (h2load -c -m), one h2load
# thread. Reports req/s, the ratio, CPU µs per request (from /proc, both proxies), p99
# latency (h2load --log-file) and peak RSS. Run by `bench/run.sh h2` or directly.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-8}
WARMUP=${WARMUP:-2}
WORKERS=${WORKERS:-$(nproc)}
PORT_BASE=${PORT_BASE:-18280}
H2_CONNS=${H2_CONNS:-64}
H2_STREAMS=${H2_STREAMS:-10}
OUT=${OUT:-/tmp/tokengate-bench-h2.json}
LOADS=${LOADS:-h2-tls h2-bearer grpc-unary}
PORT_TOKENGATE=$PORT_BASE PORT_ADMIN=$((PORT_BASE + 1)) PORT_UPSTREAM=$((PORT_BASE + 2))
PORT_H2C=$((PORT_BASE + 3)) PORT_NGINX_TLS=$((PORT_BASE + 4)) PORT_NGINX_GRPC=$((PORT_BASE + 5))

log() { echo "== $*" >&2; }
die() { echo "bench/h2: $*" >&2; exit 1; }
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[[ -x $NGINX ]] || die "needs nginx (apt-get install nginx-light)"
command -v h2load >/dev/null || die "needs h2load (apt-get install nghttp2-client)"
command -v nghttpd >/dev/null || die "needs nghttpd (apt-get install nghttp2-server)"
if [[ -z "${TOKENGATE_BIN:-}" ]]; then
  # The binary the image ships, as bench/run.sh builds it (the Swift runtime linked in).
  log "building tokengate (release, --static-swift-stdlib, as in the image)"
  scripts/build-release.sh >&2
  TOKENGATE_BIN="$PWD/.build-release/release/tokengate"
fi

WORK=$(mktemp -d /tmp/tokengate-bench-h2.XXXXXX)
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
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
cpu_ticks_tree() { local t=0 p; for p in $1 $(pgrep -P "$1"); do t=$((t + $(cpu_ticks "$p"))); done; echo "$t"; }
vmhwm_tree() { local t=0 p; for p in $1 $(pgrep -P "$1"); do t=$((t + $(awk '/VmHWM/ { print $2 }' "/proc/$p/status"))); done; echo "$t"; }
CLK_TCK=$(getconf CLK_TCK)

# Material: a certificate for both TLS listeners, an ES256 issuer key and a token.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$WORK/key.pem" -out "$WORK/cert.pem" \
  -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
"$TOKENGATE_BIN" keys generate --alg ES256 --kid bench-issuer --out "$WORK/issuer.jwk" >"$WORK/jwks.json"
TOKEN=$("$TOKENGATE_BIN" jwt sign --key "$WORK/issuer.jwk" --typ at+jwt --exp-in 86400 \
  --claims '{"iss":"https://bench.local","aud":"bench-api","sub":"bench-user","client_id":"bench","scope":"bench"}')
# One gRPC message (5-byte prefix + 100 bytes), as a unary call sends it.
python3 -c 'import sys; m = b"x" * 100; sys.stdout.buffer.write(b"\0" + len(m).to_bytes(4, "big") + m)' >"$WORK/grpc.bin"

user_line=""; [[ $(id -u) -ne 0 ]] || user_line="user root;"
mkdir -p "$WORK/upstream" "$WORK/nginx"
render bench/h2/upstream.conf.in "$WORK/upstream/nginx.conf" DIR="$WORK/upstream" PORT="$PORT_UPSTREAM" \
  USER_LINE="$user_line"
"$NGINX" -p "$WORK/upstream" -c "$WORK/upstream/nginx.conf" -e "$WORK/upstream/error.log" & PIDS+=($!)
# The h2c upstream, a stand-in for a gRPC server: nghttpd (one thread, like the nginx
# upstream's one worker) answering the method's path with 100 bytes and grpc-status 0 as
# a trailer.
mkdir -p "$WORK/htdocs/test.Echo"
printf 'hello from the tokengate bench upstream: a small fixed response body, the same for every request...\n' \
  >"$WORK/htdocs/test.Echo/Unary"
nghttpd --no-tls -d "$WORK/htdocs" --trailer "grpc-status: 0" "$PORT_H2C" >"$WORK/nghttpd.log" 2>&1 & PIDS+=($!)
render bench/h2/proxy.conf.in "$WORK/nginx/nginx.conf" DIR="$WORK/nginx" TLS_PORT="$PORT_NGINX_TLS" \
  GRPC_PORT="$PORT_NGINX_GRPC" UPSTREAM_PORT="$PORT_UPSTREAM" H2C_PORT="$PORT_H2C" WORKERS="$WORKERS" \
  CERT="$WORK/cert.pem" KEY="$WORK/key.pem" USER_LINE="$user_line"
"$NGINX" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log" & NGINX_PID=$!; PIDS+=($NGINX_PID)
wait_port "$PORT_UPSTREAM"; wait_port "$PORT_H2C"; wait_port "$PORT_NGINX_TLS"; wait_port "$PORT_NGINX_GRPC"
log "load average $(cut -d' ' -f1 /proc/loadavg) (other work on the machine skews the figures)"

TG_PID=""
start_tokengate() {
  render "bench/tokengate/$1.yaml" "$WORK/$1.yaml" PORT="$PORT_TOKENGATE" ADMIN_PORT="$PORT_ADMIN" \
    UPSTREAM_PORT="$PORT_UPSTREAM" H2C_PORT="$PORT_H2C" WORKERS="$WORKERS" CERT="$WORK/cert.pem" \
    KEY="$WORK/key.pem" JWKS="$WORK/jwks.json"
  "$TOKENGATE_BIN" serve --config "$WORK/$1.yaml" >"$WORK/tokengate-$1.log" 2>&1 & TG_PID=$!
  wait_port "$PORT_TOKENGATE"
}
stop_tokengate() { kill -TERM "$TG_PID"; wait "$TG_PID" || true; }

# h2load ARGS… URL: writes its report to $OUT_FILE and its per-request log to $LOG_FILE.
run_h2load() {
  local seconds=$1; shift
  h2load -c "$H2_CONNS" -m "$H2_STREAMS" -t 1 -D "$seconds" --log-file="$LOG_FILE" "$@" >"$OUT_FILE" 2>&1 \
    || { cat "$OUT_FILE" >&2; die "h2load failed"; }
  grep -q " 0 failed, 0 errored" "$OUT_FILE" || { cat "$OUT_FILE" >&2; die "h2load saw failed requests"; }
  local non2xx
  non2xx=$(awk '/status codes:/ { gsub(",", ""); print $5 + $7 + $9 }' "$OUT_FILE")
  [[ ${non2xx:-0} == 0 ]] || { cat "$OUT_FILE" >&2; die "non-2xx answers; is the load set up right?"; }
}

: >"$WORK/runs.tsv"
for load in $LOADS; do
  case $load in
    h2-tls) config=h2-tls; urls=([0]="https://127.0.0.1:$PORT_NGINX_TLS/" [1]="https://127.0.0.1:$PORT_TOKENGATE/"); args=() ;;
    h2-bearer) config=h2-tls; urls=([0]="https://127.0.0.1:$PORT_NGINX_TLS/bearer/" [1]="https://127.0.0.1:$PORT_TOKENGATE/bearer/")
      args=(-H "authorization: Bearer $TOKEN") ;;
    grpc-unary) config=grpc; urls=([0]="http://127.0.0.1:$PORT_NGINX_GRPC/test.Echo/Unary" [1]="http://127.0.0.1:$PORT_TOKENGATE/test.Echo/Unary")
      args=(-d "$WORK/grpc.bin" -H "content-type: application/grpc" -H "te: trailers") ;;
    *) die "unknown load $load (h2-tls, h2-bearer, grpc-unary)" ;;
  esac
  start_tokengate "$config"
  declare -A url=([nginx]=${urls[0]} [tokengate]=${urls[1]})
  log "$load: warm-up"
  for target in nginx tokengate; do OUT_FILE=$WORK/warm.txt LOG_FILE=/dev/null run_h2load "$WARMUP" "${args[@]}" "${url[$target]}"; done
  for round in $(seq "$ROUNDS"); do
    order=(nginx tokengate); (( round % 2 )) || order=(tokengate nginx)
    for target in "${order[@]}"; do
      pid=$TG_PID; [[ $target == tokengate ]] || pid=$NGINX_PID
      ticks=$(cpu_ticks_tree "$pid")
      OUT_FILE=$WORK/$load-$target-$round.txt LOG_FILE=$WORK/$load-$target-$round.log \
        run_h2load "$DURATION" "${args[@]}" "${url[$target]}"
      used=$(( $(cpu_ticks_tree "$pid") - ticks ))
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$load" "$target" "$round" "$WORK/$load-$target-$round" "$used" "$CLK_TCK" >>"$WORK/runs.tsv"
      log "$load round $round: $target $(grep -o '[0-9.]* req/s' "$WORK/$load-$target-$round.txt" | head -1)"
    done
  done
  printf '%s\t%s\t%s\n' "$load" tokengate "$(vmhwm_tree "$TG_PID")" >>"$WORK/rss.tsv"
  printf '%s\t%s\t%s\n' "$load" nginx "$(vmhwm_tree "$NGINX_PID")" >>"$WORK/rss.tsv"
  stop_tokengate
  unset url
done

python3 - "$WORK" "$OUT" <<'PY'
import json, re, statistics, sys
work, out = sys.argv[1], sys.argv[2]
rows = {}
for line in open(f"{work}/runs.tsv"):
    load, target, rnd, base, ticks, tck = line.split("\t")
    text = open(base + ".txt").read()
    rps = float(re.search(r"([0-9.]+) req/s", text).group(1))
    done = int(re.search(r"requests: \d+ total, \d+ started, (\d+) done", text).group(1))
    lat = sorted(int(l.split("\t")[2]) for l in open(base + ".log") if l.strip())
    p99 = lat[int(len(lat) * 0.99) - 1] / 1000 if lat else 0
    r = rows.setdefault(load, {}).setdefault(target, {"rps": [], "cpu_us": [], "p99_ms": []})
    r["rps"].append(rps)
    r["cpu_us"].append(int(ticks) / int(tck) * 1e6 / max(done, 1))
    r["p99_ms"].append(p99)
rss = {}
for line in open(f"{work}/rss.tsv"):
    load, target, kb = line.split()
    rss.setdefault(load, {})[target] = int(kb) / 1024
targets = {"h2-tls": 1.0, "h2-bearer": 0.95, "grpc-unary": 1.0}
report = {}
print(f"{'load':12} {'nginx req/s':>12} {'tokengate':>10} {'ratio':>6} {'target':>6}  {'CPU µs/req nginx':>16} {'tokengate':>9}  {'p99 ms':>13}  {'peak RSS MB':>15}")
for load, r in rows.items():
    med = {t: {k: statistics.median(v) for k, v in r[t].items()} for t in r}
    ratio = med["tokengate"]["rps"] / med["nginx"]["rps"]
    report[load] = {"median": med, "ratio": ratio, "target": targets[load], "rounds": r, "peak_rss_mb": rss[load]}
    print(f"{load:12} {med['nginx']['rps']:12.0f} {med['tokengate']['rps']:10.0f} {ratio:6.2f} {targets[load]:6.2f}  "
          f"{med['nginx']['cpu_us']:16.1f} {med['tokengate']['cpu_us']:9.1f}  "
          f"{med['nginx']['p99_ms']:6.2f}/{med['tokengate']['p99_ms']:6.2f}  "
          f"{rss[load]['nginx']:7.1f}/{rss[load]['tokengate']:7.1f}")
json.dump(report, open(out, "w"), indent=1)
print(f"(medians of the rounds; the whole record in {out})")
PY
