#!/usr/bin/env bash
# Mutual-TLS benchmark: wrk with a client certificate (through bench/mtls/client_cert.c,
# preloaded: wrk has no option for one) against tokengate's TLS listener that requires
# client certificates, on an auth: bearer route, 127.0.0.1 only. Three targets, alternating
# rounds, same nginx upstream:
#   bound      a token bound to wrk's certificate (cnf.x5t#S256, RFC 8705 §3)
#   unbound    the same token without cnf                        target: bound ≥ 0.95× unbound
#   nginx      nginx with ssl_verify_client on, proxying (checks no token): a reference
# wrk keeps its connections, so the handshake cost is paid once per connection in all three.
# usage: bench/mtls.sh   env: ROUNDS=5 DURATION=10 WARMUP=3 CONNECTIONS=64 THREADS=2
#        WORKERS=$(nproc) PORT_BASE=18380 TOKENGATE_BIN=path OUT=/tmp/tokengate-bench-mtls.json
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-3}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
WORKERS=${WORKERS:-$(nproc)}
PORT_BASE=${PORT_BASE:-18380}
OUT=${OUT:-/tmp/tokengate-bench-mtls.json}
PORT_TOKENGATE=$PORT_BASE PORT_ADMIN=$((PORT_BASE + 1)) PORT_UPSTREAM=$((PORT_BASE + 2)) PORT_NGINX=$((PORT_BASE + 3))

log() { echo "== $*" >&2; }
die() { echo "bench/mtls: $*" >&2; exit 1; }
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[[ -x $NGINX ]] || die "needs nginx (apt-get install nginx-light)"
command -v wrk >/dev/null || die "needs wrk (apt-get install wrk)"
command -v gcc >/dev/null || die "needs gcc (for the client-certificate shim)"
if [[ -z "${TOKENGATE_BIN:-}" ]]; then
  log "building tokengate (release, --static-swift-stdlib, as in the image)"
  scripts/build-release.sh >&2
  TOKENGATE_BIN="$PWD/.build-release/release/tokengate"
fi

WORK=$(mktemp -d /tmp/tokengate-bench-mtls.XXXXXX)
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
CLK_TCK=$(getconf CLK_TCK)

# Material: a CA, a server certificate for 127.0.0.1, a client certificate, an issuer key
# and two tokens that differ only in cnf.
M=$WORK/pki
mkdir -p "$M"
{
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$M/ca.key" -out "$M/ca.pem" \
    -days 1 -subj "/CN=tokengate bench client CA" &&
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$M/server.key" -out "$M/server.pem" \
    -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 &&
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$M/client.key" -out "$M/client.csr" \
    -subj "/CN=bench-client" &&
  printf 'extendedKeyUsage=clientAuth\nsubjectAltName=URI:spiffe://bench.local/client\n' >"$M/ext.cnf" &&
  openssl x509 -req -in "$M/client.csr" -CA "$M/ca.pem" -CAkey "$M/ca.key" -CAcreateserial -days 1 \
    -extfile "$M/ext.cnf" -out "$M/client.pem"
} >"$M/openssl.log" 2>&1 || { cat "$M/openssl.log" >&2; die "openssl failed"; }
X5T=$(openssl x509 -in "$M/client.pem" -outform DER | openssl dgst -sha256 -binary | basenc --base64url | tr -d '=')
"$TOKENGATE_BIN" keys generate --alg ES256 --kid bench-issuer --out "$WORK/issuer.jwk" >"$WORK/jwks.json"
claims='"iss":"https://bench.local","aud":"bench-api","sub":"bench-user","client_id":"bench","scope":"bench"'
sign() { "$TOKENGATE_BIN" jwt sign --key "$WORK/issuer.jwk" --typ at+jwt --exp-in 86400 --claims "$1"; }
declare -A TOKEN=([bound]=$(sign "{$claims,\"cnf\":{\"x5t#S256\":\"$X5T\"}}") [unbound]=$(sign "{$claims}") [nginx]=$(sign "{$claims}"))
gcc -shared -fPIC -O2 -o "$WORK/client_cert.so" bench/mtls/client_cert.c -ldl -lssl || die "cannot build the shim (libssl-dev?)"

user_line=""; [[ $(id -u) -ne 0 ]] || user_line="user root;"
mkdir -p "$WORK/upstream" "$WORK/nginx"
render bench/h2/upstream.conf.in "$WORK/upstream/nginx.conf" DIR="$WORK/upstream" PORT="$PORT_UPSTREAM" \
  USER_LINE="$user_line"
"$NGINX" -p "$WORK/upstream" -c "$WORK/upstream/nginx.conf" -e "$WORK/upstream/error.log" & PIDS+=($!)
render bench/mtls/nginx.conf.in "$WORK/nginx/nginx.conf" DIR="$WORK/nginx" PORT="$PORT_NGINX" WORKERS="$WORKERS" \
  UPSTREAM_PORT="$PORT_UPSTREAM" CERT="$M/server.pem" KEY="$M/server.key" CA="$M/ca.pem" USER_LINE="$user_line"
"$NGINX" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log" & NGINX_PID=$!; PIDS+=($NGINX_PID)
render bench/mtls/tokengate.yaml.in "$WORK/tokengate.yaml" PORT="$PORT_TOKENGATE" ADMIN_PORT="$PORT_ADMIN" \
  UPSTREAM_PORT="$PORT_UPSTREAM" WORKERS="$WORKERS" CERT="$M/server.pem" KEY="$M/server.key" CA="$M/ca.pem" \
  JWKS="$WORK/jwks.json"
"$TOKENGATE_BIN" serve --config "$WORK/tokengate.yaml" >"$WORK/tokengate.log" 2>&1 & TG_PID=$!; PIDS+=($TG_PID)
wait_port "$PORT_UPSTREAM"; wait_port "$PORT_NGINX"; wait_port "$PORT_TOKENGATE"
log "load average $(cut -d' ' -f1 /proc/loadavg) (other work on the machine skews the figures)"

declare -A URL=([bound]="https://127.0.0.1:$PORT_TOKENGATE/" [unbound]="https://127.0.0.1:$PORT_TOKENGATE/"
  [nginx]="https://127.0.0.1:$PORT_NGINX/")
# Each target answers 200 with the certificate, and tokengate refuses the bound token without it.
for t in bound unbound nginx; do
  code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$M/server.pem" --cert "$M/client.pem" --key "$M/client.key" \
    -H "Authorization: Bearer ${TOKEN[$t]}" "${URL[$t]}")
  [[ $code == 200 ]] || { tail -5 "$WORK/tokengate.log" >&2; die "$t answered $code with the client certificate"; }
done
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$M/server.pem" --cert "$M/server.pem" --key "$M/server.key" \
  -H "Authorization: Bearer ${TOKEN[bound]}" "${URL[bound]}" || true)
[[ $code != 200 ]] || die "tokengate admitted the bound token with another certificate"

run_wrk() {
  local seconds=$1 t=$2 out=$3
  echo "wrk.headers[\"Authorization\"] = \"Bearer ${TOKEN[$t]}\"" >"$WORK/$t.lua"
  LD_PRELOAD="$WORK/client_cert.so" TG_BENCH_CLIENT_CERT="$M/client.pem" TG_BENCH_CLIENT_KEY="$M/client.key" \
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"${seconds}s" -s "$WORK/$t.lua" "${URL[$t]}" >"$out" 2>&1 \
    || { cat "$out" >&2; die "wrk failed"; }
  ! grep -q "Non-2xx\|Socket errors" "$out" || { cat "$out" >&2; die "$t: errors or non-2xx answers"; }
}

: >"$WORK/runs.tsv"
log "warm-up"
for t in bound unbound nginx; do run_wrk "$WARMUP" "$t" "$WORK/warm.txt"; done
targets=(bound unbound nginx)
for round in $(seq "$ROUNDS"); do
  for i in 0 1 2; do
    t=${targets[(i + round - 1) % 3]}
    pid=$TG_PID; [[ $t != nginx ]] || pid=$NGINX_PID
    ticks=$(cpu_ticks_tree "$pid")
    run_wrk "$DURATION" "$t" "$WORK/$t-$round.txt"
    printf '%s\t%s\t%s\t%s\t%s\n' "$t" "$round" "$WORK/$t-$round.txt" "$(( $(cpu_ticks_tree "$pid") - ticks ))" "$CLK_TCK" >>"$WORK/runs.tsv"
    log "round $round: $t $(awk '/Requests\/sec/ { print $2 }' "$WORK/$t-$round.txt") req/s"
  done
done

python3 - "$WORK" "$OUT" <<'PY'
import json, re, statistics, sys
work, out = sys.argv[1], sys.argv[2]
rows = {}
for line in open(f"{work}/runs.tsv"):
    t, rnd, path, ticks, tck = line.rstrip("\n").split("\t")
    text = open(path).read()
    rps = float(re.search(r"Requests/sec:\s+([0-9.]+)", text).group(1))
    done = int(re.search(r"(\d+) requests in", text).group(1))
    r = rows.setdefault(t, {"rps": [], "cpu_us": []})
    r["rps"].append(rps)
    r["cpu_us"].append(int(ticks) / int(tck) * 1e6 / max(done, 1))
med = {t: {k: statistics.median(v) for k, v in r.items()} for t, r in rows.items()}
report = {"median": med, "rounds": rows,
          "bound_over_unbound": med["bound"]["rps"] / med["unbound"]["rps"], "target": 0.95,
          "bound_over_nginx": med["bound"]["rps"] / med["nginx"]["rps"]}
for t in ("bound", "unbound", "nginx"):
    print(f"{t:8} {med[t]['rps']:9.0f} req/s  {med[t]['cpu_us']:6.1f} CPU µs/req")
print(f"bound / unbound: {report['bound_over_unbound']:.3f}× (target ≥ 0.95×); "
      f"bound / nginx (no token check): {report['bound_over_nginx']:.2f}×")
json.dump(report, open(out, "w"), indent=1)
print(f"(medians of the rounds; the whole record in {out})")
PY
